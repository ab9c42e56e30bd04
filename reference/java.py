"""The Java library behaviour Kafka's outputs depend on, reproduced exactly (Java 17).

Kafka's placement and assignment results depend on `String.hashCode`, on the
iteration order of `java.util.HashMap`/`HashSet`, on `java.util.Random` and on
`Collections.shuffle`. Every reference algorithm takes these from this module
and nowhere else, so a difference from the JVM can only live here; the test
suite compares this module with a real JVM.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Hashable, Iterable, Iterator, MutableSequence
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")

_MASK32 = 0xFFFFFFFF
_MASK48 = (1 << 48) - 1
_MASK64 = (1 << 64) - 1


def to_int32(x: int) -> int:
    """Wrap an integer to Java's signed 32-bit `int`."""
    x &= _MASK32
    return x - (1 << 32) if x & 0x80000000 else x


def to_int64(x: int) -> int:
    """Wrap an integer to Java's signed 64-bit `long`."""
    x &= _MASK64
    return x - (1 << 64) if x & (1 << 63) else x


def _f32(x: float) -> float:
    """Round to the nearest IEEE single, as Java's `float` arithmetic does."""
    return struct.unpack("f", struct.pack("f", x))[0]


# --- hash codes -------------------------------------------------------------


@functools.lru_cache(maxsize=1 << 16)  # ids and topic names repeat across a run's many inputs
def string_hash_code(s: str) -> int:
    """`String.hashCode`: h = 31*h + c over UTF-16 code units, wrapping at 32 bits."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK32
    return to_int32(h)


def string_compare_key(s: str) -> bytes:
    """A sort key ordering strings as `String.compareTo` does: by UTF-16 code units, a prefix first.

    Big-endian UTF-16 bytes compare exactly as the code units do; Python's own
    string order (by code point) differs once a string leaves the BMP.
    """
    return s.encode("utf-16-be", "surrogatepass")


def integer_hash_code(i: int) -> int:
    """`Integer.hashCode` is the value; `Long.hashCode` folds the halves (callers pass ints here)."""
    if not -(1 << 31) <= i < (1 << 31):
        raise ValueError(f"{i} is not a Java int")
    return i


def optional_hash_code(value: str | None) -> int:
    """`Optional<String>.hashCode`: the string's hash, 0 when empty."""
    return 0 if value is None else string_hash_code(value)


def topic_partition_hash_code(topic: str, partition: int) -> int:
    """Kafka's `TopicPartition.hashCode`: 31*(31 + partition) + topic.hashCode()."""
    return to_int32(31 * (31 + partition) + string_hash_code(topic))


def java_hash_code(key: Any) -> int:
    """hashCode of the Java object a Python key stands for.

    int -> Integer, str -> String, None -> Optional.empty(), and anything with
    a `java_hash_code()` method (e.g. a TopicPartition stand-in) -> that.
    """
    if isinstance(key, bool):
        return 1231 if key else 1237  # Boolean.hashCode
    if isinstance(key, int):
        return integer_hash_code(key)
    if isinstance(key, str):
        return string_hash_code(key)
    if key is None:
        return 0
    method = getattr(key, "java_hash_code", None)
    if method is not None:
        return method()
    topic, partition = getattr(key, "topic", None), getattr(key, "partition", None)
    if isinstance(topic, str) and isinstance(partition, int):
        return topic_partition_hash_code(topic, partition)
    raise TypeError(f"no Java hashCode known for {type(key).__name__}")


# --- java.util.Random ---------------------------------------------------------


class JavaRandom:
    """`java.util.Random`: the 48-bit LCG with Java's published constants."""

    MULTIPLIER = 0x5DEECE66D
    ADDEND = 0xB

    def __init__(self, seed: int = 0) -> None:
        self.set_seed(seed)

    def set_seed(self, seed: int) -> None:
        self._seed = (seed ^ self.MULTIPLIER) & _MASK48

    def next(self, bits: int) -> int:
        """`Random.next(bits)`: the top `bits` bits of the advanced state, as a Java int."""
        self._seed = (self._seed * self.MULTIPLIER + self.ADDEND) & _MASK48
        return to_int32(self._seed >> (48 - bits))

    def next_int(self, bound: int | None = None) -> int:
        """`nextInt()` (32 random bits) or `nextInt(bound)` with Java's rejection loop."""
        if bound is None:
            return self.next(32)
        if bound <= 0:
            raise ValueError("bound must be positive")  # Java: IllegalArgumentException
        r = self.next(31)
        m = bound - 1
        if bound & m == 0:  # power of two: take the high bits
            return to_int32((bound * r) >> 31)
        u = r
        while True:
            r = u % bound
            if to_int32(u - r + m) >= 0:  # Java rejects when this sum overflows int
                return r
            u = self.next(31)

    def next_long(self) -> int:
        return to_int64((self.next(32) << 32) + self.next(32))

    def next_boolean(self) -> bool:
        return self.next(1) != 0


class MockRandom(JavaRandom):
    """Kafka's test `MockRandom` (server-common): a 64-bit LCG whose state starts at 17.

    Only `next(bits)` differs from `java.util.Random`, so `nextInt(bound)` and
    `Collections.shuffle` behave as Java's code does on top of it. Kafka's own
    placer tests use it, which lets our tests reproduce their exact vectors.
    """

    def __init__(self, state: int = 17) -> None:
        self._state = state & _MASK64

    def set_seed(self, seed: int) -> None:
        """Kafka's MockRandom does not override setSeed, which only touches Random's unused state."""

    def next(self, bits: int) -> int:
        self._state = (self._state * 2862933555777941757 + 3037000493) & _MASK64
        return to_int32(self._state >> (64 - bits))


def shuffle(items: MutableSequence[T], rnd: JavaRandom) -> None:
    """`Collections.shuffle(list, rnd)`: for i = size .. 2, swap(i-1, nextInt(i))."""
    for i in range(len(items), 1, -1):
        j = rnd.next_int(i)
        items[i - 1], items[j] = items[j], items[i - 1]


# --- java.util.HashMap / HashSet iteration order ----------------------------------

_DEFAULT_CAPACITY = 16
_MAX_CAPACITY = 1 << 30
_LOAD_FACTOR = 0.75
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def table_size_for(cap: int) -> int:
    """`HashMap.tableSizeFor`: the smallest power of two >= cap (1 for cap <= 1)."""
    if cap <= 1:
        return 1
    n = 1 << (cap - 1).bit_length()
    return min(n, _MAX_CAPACITY)


def spread(h: int) -> int:
    """`HashMap.hash`: h ^ (h >>> 16), as an unsigned 32-bit value."""
    u = h & _MASK32
    return u ^ (u >> 16)


class JavaHashMap(Generic[K, V]):
    """A map that iterates exactly as `java.util.HashMap` would after the same calls.

    Java iterates bucket by bucket (bucket = spread(hash) & (capacity-1)); within
    a bucket, entries keep insertion order, and a resize keeps their relative
    order. So the order is fixed by the capacity and the insertion order, and
    this class tracks both, including the capacity rules (lazy table, threshold
    doubling, the resize that a crowded bucket forces below capacity 64).
    A bucket that Java would turn into a red-black tree (9+ colliding entries at
    capacity >= 64) reorders entries in ways not modelled here: that raises
    NotImplementedError rather than return a wrong order.
    """

    def __init__(
        self,
        initial_capacity: int | None = None,
        hash_fn: Callable[[Any], int] = java_hash_code,
    ) -> None:
        if initial_capacity is not None and initial_capacity < 0:
            raise ValueError(f"Illegal initial capacity: {initial_capacity}")
        self._hash_fn = hash_fn
        self._capacity = 0  # no table until the first put, as in Java
        # Java keeps the requested table size in `threshold` until the table exists.
        self._threshold = table_size_for(initial_capacity) if initial_capacity is not None else 0
        self._entries: dict[K, list[Any]] = {}  # key -> [value, spread hash, insertion seq]
        self._seq = 0
        self._bucket_sizes: dict[int, int] = {}
        self._order: list[K] | None = []

    # capacity bookkeeping
    @property
    def capacity(self) -> int:
        return self._capacity

    def _resize(self) -> None:
        old_cap, old_thr = self._capacity, self._threshold
        if old_cap > 0:
            if old_cap >= _MAX_CAPACITY:
                self._threshold = (1 << 31) - 1
                return
            new_cap = old_cap << 1
            new_thr = old_thr << 1 if (new_cap < _MAX_CAPACITY and old_cap >= _DEFAULT_CAPACITY) else 0
        elif old_thr > 0:
            new_cap, new_thr = old_thr, 0
        else:
            new_cap, new_thr = _DEFAULT_CAPACITY, int(_LOAD_FACTOR * _DEFAULT_CAPACITY)
        if new_thr == 0:
            ft = _f32(new_cap * _LOAD_FACTOR)
            new_thr = int(ft) if (new_cap < _MAX_CAPACITY and ft < _MAX_CAPACITY) else (1 << 31) - 1
        self._capacity, self._threshold = new_cap, new_thr
        self._bucket_sizes = {}
        for entry in self._entries.values():
            b = entry[1] & (new_cap - 1)
            self._bucket_sizes[b] = self._bucket_sizes.get(b, 0) + 1
        self._order = None

    def put(self, key: K, value: V) -> V | None:
        """`HashMap.put`: replaces the value in place, or appends to the key's bucket."""
        if key in self._entries:
            entry = self._entries[key]
            old, entry[0] = entry[0], value
            return old
        if self._capacity == 0:
            self._resize()
        h = spread(self._hash_fn(key))
        bucket = h & (self._capacity - 1)
        in_bucket = self._bucket_sizes.get(bucket, 0)
        self._entries[key] = [value, h, self._seq]
        self._seq += 1
        self._bucket_sizes[bucket] = in_bucket + 1
        self._order = None
        if in_bucket >= _TREEIFY_THRESHOLD:  # Java's treeifyBin: resize while small, else tree
            if self._capacity < _MIN_TREEIFY_CAPACITY:
                self._resize()
            else:
                raise NotImplementedError(
                    f"HashMap bucket {bucket} would become a tree bin; its iteration order is not modelled"
                )
        if len(self._entries) > self._threshold:
            self._resize()
        return None

    def put_if_absent(self, key: K, value: V) -> V | None:
        if key in self._entries:
            return self._entries[key][0]
        self.put(key, value)
        return None

    def remove(self, key: K) -> V | None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        b = entry[1] & (self._capacity - 1)
        self._bucket_sizes[b] -= 1
        if self._order is not None:
            self._order.remove(key)
        return entry[0]

    def get(self, key: K, default: V | None = None) -> V | None:
        entry = self._entries.get(key)
        return default if entry is None else entry[0]

    def __getitem__(self, key: K) -> V:
        return self._entries[key][0]

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> list[K]:
        """Keys in Java's iteration order."""
        if self._order is None:
            mask = self._capacity - 1
            self._order = sorted(self._entries, key=lambda k: (self._entries[k][1] & mask, self._entries[k][2]))
        return list(self._order)

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())

    def values(self) -> list[V]:
        return [self._entries[k][0] for k in self.keys()]

    def items(self) -> list[tuple[K, V]]:
        return [(k, self._entries[k][0]) for k in self.keys()]


class JavaHashSet(Generic[K]):
    """`java.util.HashSet`: a JavaHashMap's key set."""

    def __init__(
        self,
        items: Iterable[K] = (),
        initial_capacity: int | None = None,
        hash_fn: Callable[[Any], int] = java_hash_code,
    ) -> None:
        self._map: JavaHashMap[K, bool] = JavaHashMap(initial_capacity, hash_fn)
        for item in items:
            self.add(item)

    @classmethod
    def copy_of(cls, items: Iterable[K], hash_fn: Callable[[Any], int] = java_hash_code) -> JavaHashSet[K]:
        """`new HashSet<>(collection)`: Java 17 sizes it max((int)(n/.75f) + 1, 16) first."""
        items = list(items)
        capacity = max(int(_f32(_f32(float(len(items))) / _LOAD_FACTOR)) + 1, _DEFAULT_CAPACITY)
        return cls(items, capacity, hash_fn)

    def add(self, item: K) -> bool:
        return self._map.put(item, True) is None

    def remove(self, item: K) -> bool:
        return self._map.remove(item) is not None

    def __contains__(self, item: object) -> bool:
        return item in self._map

    def __len__(self) -> int:
        return len(self._map)

    def __iter__(self) -> Iterator[K]:
        return iter(self._map.keys())

    @property
    def capacity(self) -> int:
        return self._map.capacity
