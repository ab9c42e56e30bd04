"""Which partition the Java producer sends a record to: the key hash, and the partitioner for records without a key.

Mirrors these kafka-clients files, the same code in 3.9.1, 4.0.2, 4.1.2 and 4.4.0 unless a `ReleaseProfile`
field says otherwise (checked against each release's classes through the bridge: `kafka_partitioner`):

- `org/apache/kafka/common/utils/Utils.java`: `murmur2` and `toPositive` (from 4.2 murmur2 reads its 4-byte
  words through a little-endian VarHandle instead of shifting bytes: the same values);
- `org/apache/kafka/common/serialization/StringSerializer.java`: a `String` key as `getBytes(UTF-8)`, which writes
  `?` for an unpaired surrogate;
- `org/apache/kafka/clients/producer/KafkaProducer.java`, `partition()`: the key hash over all the topic's
  partitions (`cluster.partitionsForTopic(topic).size()`, whether they have a leader or not) unless
  `partitioner.ignore.keys`; no key, the accumulator's sticky partitioner; `Math.max(1, batch.size)` as its
  sticky batch size;
- `org/apache/kafka/clients/producer/internals/BuiltInPartitioner.java` (KIP-794): `partitionForKey`; the sticky
  partition, switched once `batch.size` bytes went to it (`updatePartitionInfo`, with `enableSwitch`, KAFKA-14156);
  the next partition drawn uniformly among the partitions with a leader, or weighted by the inverse of their queue
  sizes (`updatePartitionLoadStats`, `nextPartition`); in 4.4.0 the rack-aware choice of KIP-1123
  (`partitioner.rack.aware`, `client.rack`: profile field `partitioner_rack_aware`), which an older client ignores;
- `org/apache/kafka/clients/producer/internals/RecordAccumulator.java`, `PartitionerConfig` (4.4.0): a rack-aware
  partitioner needs a non-blank `client.rack`.

Kafka draws the next partition with `Utils.toPositive(ThreadLocalRandom.nextInt())`; here the draws are injected
(`draw`), so a run can be replayed and compared. Arithmetic is Java's: 32-bit wrap-around, `%` keeping the
dividend's sign, `Arrays.binarySearch` on whatever the table holds after an overflow.

Not covered: how `RecordAccumulator.partitionReady` builds the queue sizes (deque sizes of partitions with a
leader, less those whose broker is slower than `partitioner.availability.timeout.ms`), and 3.9's deprecated
`DefaultPartitioner`/`UniformStickyPartitioner` (KIP-480's `StickyPartitionCache`, removed in 4.0 by KAFKA-18262).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kcheck.reference.errors import KafkaError
from kcheck.reference.releases import profile

__all__ = [
    "BuiltInPartitioner",
    "KeyPlacement",
    "PartitionLeader",
    "PartitionerError",
    "murmur2",
    "new_partitioner",
    "partition_for_key",
    "place_keys",
    "place_records",
    "record_partition",
    "serialize_key",
    "to_positive",
    "topic_of",
]

_MASK = 0xFFFFFFFF
_SEED = 0x9747B28C
_M = 0x5BD1E995
_JAVA_WHITESPACE = "".join(map(chr, range(0x21)))  # String.trim() strips every char <= ' '


class PartitionerError(KafkaError):
    """An exception Kafka's partitioner code throws: `java_name` is its simple name."""

    def __init__(self, java_name: str, message: str) -> None:
        super().__init__(f"{java_name}: {message}")
        self.java_name = java_name


def i32(x: int) -> int:
    """x as a Java int (two's complement wrap-around)."""
    x &= _MASK
    return x - (1 << 32) if x & 0x80000000 else x


def jmod(a: int, b: int) -> int:
    """Java's `a % b` on ints: the sign of the dividend; `/ by zero` for b == 0."""
    if b == 0:
        raise PartitionerError("ArithmeticException", "/ by zero")
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def murmur2(data: bytes) -> int:
    """Utils.murmur2: the 32-bit murmur2 hash Kafka keys partitions with, as a signed Java int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    end = length & ~3
    for i in range(0, end, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length - end
    if tail:  # the switch falls through from case 3 to case 1
        if tail == 3:
            h ^= data[end + 2] << 16
        if tail >= 2:
            h ^= data[end + 1] << 8
        h ^= data[end]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return i32(h)


def to_positive(number: int) -> int:
    """Utils.toPositive: the sign bit cleared (Integer.MIN_VALUE gives 0), not an absolute value."""
    return number & 0x7FFFFFFF


def serialize_key(key: str | bytes | None) -> bytes | None:
    """The key's bytes as the producer hashes them: bytes as given (ByteArraySerializer), a str as
    StringSerializer writes it (UTF-8; a surrogate without its pair becomes `?`, as String.getBytes does)."""
    if key is None or isinstance(key, bytes):
        return key
    try:
        return key.encode("utf-8")
    except UnicodeEncodeError:
        # Java sees UTF-16 units: a high/low pair written as two code points is still one character there
        units = key.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        return units.encode("utf-8", "replace")


def partition_for_key(serialized_key: bytes, num_partitions: int) -> int:
    """BuiltInPartitioner.partitionForKey: toPositive(murmur2(key)) % numPartitions."""
    return jmod(to_positive(murmur2(serialized_key)), num_partitions)


def record_partition(key: str | bytes | None, num_partitions: int, *, ignore_keys: bool = False) -> int | None:
    """KafkaProducer.partition for a record without an explicit partition and with the default partitioner: the
    key's partition among all `num_partitions`, or None when the sticky partitioner decides (no key, or
    `partitioner.ignore.keys`)."""
    data = serialize_key(key)
    if data is None or ignore_keys:
        return None
    return partition_for_key(data, num_partitions)


# ---------------------------------------------------------------- records without a key


@dataclass(frozen=True)
class PartitionLeader:
    """One partition of the topic's metadata, in the order the metadata lists them: its leader (None when
    unknown: not available) and the leader's rack."""

    partition: int
    leader: int | None = 0
    rack: str | None = None


@dataclass(frozen=True)
class _LoadStats:
    cft: tuple[int, ...]  # the cumulative frequency table, over the whole array (only [0, length) is built)
    ids: tuple[int, ...]
    length: int


def _invert_and_fold(sizes: list[int], max_plus_1: int, length: int) -> None:
    """BuiltInPartitioner.invertAndFoldQueueSizeArray (inline before 4.4): in place, with Java's wrap-around."""
    sizes[0] = i32(max_plus_1 - sizes[0])
    for i in range(1, length):
        sizes[i] = i32(max_plus_1 - sizes[i] + sizes[i - 1])


def _binary_search(a: Sequence[int], to: int, key: int) -> int:
    """java.util.Arrays.binarySearch(a, 0, to, key), on any array (sorted or not)."""
    low, high = 0, to - 1
    while low <= high:
        mid = (low + high) >> 1
        if a[mid] < key:
            low = mid + 1
        elif a[mid] > key:
            high = mid - 1
        else:
            return mid
    return -(low + 1)


def _index(a: Sequence[int], i: int, java_name: str = "ArrayIndexOutOfBoundsException") -> int:
    """a[i] with Java's bounds check (an int[] by default; a List throws IndexOutOfBoundsException)."""
    if not 0 <= i < len(a):
        raise PartitionerError(java_name, f"Index {i} out of bounds for length {len(a)}")
    return a[i]


def java_random_draw(rng: random.Random | None = None) -> Callable[[], int]:
    """Draws as Kafka makes them, Utils.toPositive(nextInt()), from a Python Random (not ThreadLocalRandom)."""
    r = rng or random.Random()
    return lambda: to_positive(r.getrandbits(32))


class BuiltInPartitioner:
    """BuiltInPartitioner for one topic: the sticky partition of records without a key, and how it moves on.

    `draw` returns each random draw Kafka would take (non-negative ints). `rack_aware` is KIP-1123's mode: only
    where the release has it (`ReleaseProfile.partitioner_rack_aware`); an older client ignores the setting.
    """

    def __init__(self, sticky_batch_size: int, *, rack_aware: bool = False, rack: str | None = None,
                 release: str | None = None, draw: Callable[[], int] | None = None) -> None:
        if sticky_batch_size < 1:
            raise PartitionerError("IllegalArgumentException",
                                   f"stickyBatchSize must be >= 1 but got {sticky_batch_size}")
        self.sticky_batch_size = sticky_batch_size
        self.rack_aware = rack_aware and profile(release).partitioner_rack_aware
        self.rack = rack
        self.draw = draw or java_random_draw()
        self.draws_used = 0
        self.total: _LoadStats | None = None
        self.in_rack: _LoadStats | None = None
        self.current: int | None = None  # the sticky partition (StickyPartitionInfo), None before the first
        self.produced_bytes = 0

    # -- updatePartitionLoadStats

    def update_partition_load_stats(self, queue_sizes: Sequence[int] | None, partition_ids: Sequence[int],
                                    racks: Sequence[str | None], length: int) -> None:
        """The queue size of each partition with a leader (`length` of them not excluded for latency): the weights
        of the next draw. None, fewer than 2 partitions, or all equal with none excluded: a uniform draw."""
        if queue_sizes is None or length < 1 or len(queue_sizes) < 2:
            self.total = self.in_rack = None
            return
        sizes = list(queue_sizes)
        max_plus_1 = sizes[0]
        all_equal = True
        for i in range(1, length):
            q = _index(sizes, i)
            all_equal &= q == max_plus_1
            max_plus_1 = max(max_plus_1, q)
        max_plus_1 = i32(max_plus_1 + 1)
        if all_equal and length == len(sizes):
            self.total = self.in_rack = None
            return
        in_rack = self._in_rack_stats(sizes, partition_ids, racks, length) if self.rack_aware else None
        _invert_and_fold(sizes, max_plus_1, length)
        self.total, self.in_rack = _LoadStats(tuple(sizes), tuple(partition_ids), length), in_rack

    def _in_rack_stats(self, sizes: Sequence[int], ids: Sequence[int], racks: Sequence[str | None],
                       length: int) -> _LoadStats:
        """createPartitionLoadStatsForThisRackIfNeeded (4.4.0): the same table over the partitions led in our rack,
        arrays of `length` (zeros past the last one in the rack)."""
        if self.rack is None:
            raise PartitionerError("NullPointerException", "rack is null")
        q, p = [0] * length, [0] * length
        n, max_plus_1 = 0, -1
        for i in range(length):
            if self.rack != _index(racks, i):  # type: ignore[arg-type]  # String.equals(null) is false
                continue
            q[n], p[n] = sizes[i], _index(ids, i)
            max_plus_1 = max(max_plus_1, sizes[i])
            n += 1
        _invert_and_fold(q, i32(max_plus_1 + 1), n)
        return _LoadStats(tuple(q), tuple(p), n)

    # -- nextPartition

    def _next_draw(self) -> int:
        value = self.draw()
        self.draws_used += 1
        return value

    def next_partition(self, topic: Sequence[PartitionLeader]) -> int:
        """nextPartition: a draw among the partitions with a leader (in our rack first, when rack-aware and some
        are), or weighted by the load stats; with no partition available, `draw % all partitions` (an index)."""
        random_draw = self._next_draw()
        if self.total is None:
            available = [p for p in topic if p.leader is not None]
            if not available:
                return jmod(random_draw, len(topic))
            if self.rack_aware:
                ours = [p for p in available if p.rack is not None and p.rack == self.rack]
                available = ours or available
            return _index([p.partition for p in available], jmod(random_draw, len(available)),
                          "IndexOutOfBoundsException")
        stats = self.total
        if self.rack_aware and self.in_rack is not None and self.in_rack.length > 0:
            stats = self.in_rack
        weighted = jmod(random_draw, stats.cft[stats.length - 1])
        index = abs(_binary_search(stats.cft, stats.length, weighted) + 1)
        return _index(stats.ids, index)

    # -- peekCurrentPartitionInfo / updatePartitionInfo

    def peek_current_partition(self, topic: Sequence[PartitionLeader]) -> int:
        """The sticky partition, chosen now if there is none yet."""
        if self.current is None:
            self.current, self.produced_bytes = self.next_partition(topic), 0
        return self.current

    def update_partition_info(self, appended_bytes: int, topic: Sequence[PartitionLeader],
                              enable_switch: bool = True) -> None:
        """Count bytes appended to the sticky partition; switch once batch.size went to it and the batch is ready
        (enable_switch), or once twice batch.size did in any case."""
        self.produced_bytes = i32(self.produced_bytes + appended_bytes)
        produced, size = self.produced_bytes, self.sticky_batch_size
        if produced >= size and enable_switch or produced >= i32(size * 2):
            self.current, self.produced_bytes = self.next_partition(topic), 0

    def append(self, appended_bytes: int, topic: Sequence[PartitionLeader], enable_switch: bool = True) -> int:
        """One record without a key as RecordAccumulator.append places it: the sticky partition it goes to."""
        partition = self.peek_current_partition(topic)
        self.update_partition_info(appended_bytes, topic, enable_switch)
        return partition


def new_partitioner(release: str | None = None, *, batch_size: int = 16384, rack_aware: bool = False,
                    client_rack: str = "", draw: Callable[[], int] | None = None) -> BuiltInPartitioner:
    """The partitioner a producer of `release` builds for a topic from its configs (KafkaProducer: the sticky
    batch size is max(1, batch.size); PartitionerConfig in 4.4.0: rack-aware needs a non-blank client.rack)."""
    prof = profile(release)
    if rack_aware and prof.partitioner_rack_aware and not client_rack.strip(_JAVA_WHITESPACE):
        raise PartitionerError("ConfigException", "client.rack must be provided if partitioner.rack.aware is enabled")
    return BuiltInPartitioner(max(1, batch_size), rack_aware=rack_aware, rack=client_rack, release=prof.version,
                              draw=draw)


# ---------------------------------------------------------------- a producer's records, per release


def topic_of(num_partitions: int, leaders: Sequence[int | None] | None = None,
             racks: Sequence[str | None] | None = None) -> tuple[PartitionLeader, ...]:
    """A topic's metadata: partitions 0..n-1, led by `leaders[i]` (default: all led, by broker i) in `racks[i]`."""
    return tuple(PartitionLeader(i, i if leaders is None else leaders[i], None if racks is None else racks[i])
                 for i in range(num_partitions))


def place_records(keys: Iterable[str | bytes | None], topic: Sequence[PartitionLeader], release: str | None = None,
                  *, record_bytes: int = 100, batch_size: int = 16384, ignore_keys: bool = False,
                  rack_aware: bool = False, client_rack: str = "", seed: int = 0) -> list[int]:
    """The partition of each record a producer of `release` sends in turn: the key's hash, or for a record without
    a key (or with partitioner.ignore.keys) the sticky partition, each such record counted as `record_bytes`
    appended to a batch that is ready (switching enabled), with no load stats. The draws come from `seed`, so two
    releases given the same seed draw the same numbers."""
    partitioner = new_partitioner(release, batch_size=batch_size, rack_aware=rack_aware, client_rack=client_rack,
                                  draw=java_random_draw(random.Random(seed)))
    out = []
    for key in keys:
        p = record_partition(key, len(topic), ignore_keys=ignore_keys)
        out.append(partitioner.append(record_bytes, topic) if p is None else p)
    return out


@dataclass(frozen=True)
class KeyPlacement:
    """Where one record goes with each release's client."""

    key: str | bytes | None
    partitions: dict[str, int]

    @property
    def agreed(self) -> bool:
        return len(set(self.partitions.values())) <= 1

    def disagreeing(self) -> list[str]:
        """The releases whose partition differs from the first release's (the releases in the order given)."""
        first = next(iter(self.partitions.values()), None)
        return [v for v, p in self.partitions.items() if p != first]


def place_keys(keys: Sequence[str | bytes | None], topic: Sequence[PartitionLeader], releases: Sequence[str],
               **options: Any) -> list[KeyPlacement]:
    """`place_records` for each release, record by record: keyed records agree in every release 3.9.1 to 4.4.0;
    records without a key differ where a release's partitioner does (KIP-1123's rack-aware choice in 4.4.0)."""
    versions = [profile(v).version for v in releases]
    per_release = {v: place_records(keys, topic, v, **options) for v in versions}
    return [KeyPlacement(k, {v: per_release[v][i] for v in versions}) for i, k in enumerate(keys)]
