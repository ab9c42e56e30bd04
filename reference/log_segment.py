"""Log segments and their sparse indexes, bit-exact with Kafka's storage code.

Mirrors, in Kafka's `storage/src/main/java/org/apache/kafka/storage/internals/log/`:
`AbstractIndex.java` (fixed-size mmapped entries, `maxEntries`, the warm-section binary search),
`OffsetIndex.java` (8-byte entries: 4-byte relative offset, 4-byte file position),
`TimeIndex.java` (12-byte entries: 8-byte timestamp, 4-byte relative offset; one slot kept free for the
roll), `LogSegment.java` (append with an index entry every `index.interval.bytes`, `shouldRoll`,
`onBecomeInactiveSegment`, `translateOffset`), and the roll loop of `UnifiedLog.maybeRoll` /
`LocalLog.roll` (a new segment at max(first offset of the append, log end offset)). Batch sizes follow
the v2 record format of `clients/.../record/DefaultRecordBatch.java` and `DefaultRecord.java`
(61-byte batch header, varint-framed records, no compression).

Since 3.x (all releases we check, 3.9.1 to 4.4.0) LogSegment indexes per batch: the offset index entry
names the batch's last offset and the batch's file position, and the segment's rolling timestamp is the
first batch's max timestamp, read back from the file. Errors carry Kafka's exception simple names
(`StorageError.java_name`), so the differential can compare failures too.
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kcheck.model.log_view import LogRecord, LogSegmentView, LogView

INT_MAX = 2**31 - 1
NO_TIMESTAMP = -1
BATCH_HEADER_BYTES = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD (magic 2)
OFFSET_ENTRY = 8
TIME_ENTRY = 12
WARM_BYTES = 8192  # AbstractIndex.warmEntries: the last 8 KiB of an index are searched first


class StorageError(Exception):
    """A failure Kafka's storage code raises: `java_name` is the Java exception's simple name."""

    def __init__(self, java_name: str, message: str) -> None:
        super().__init__(f"{java_name}: {message}")
        self.java_name = java_name


# ---------------------------------------------------------------- v2 record format sizes


def varint_size(n: int) -> int:
    """Bytes of a zig-zag varint (32-bit) as ByteUtils.sizeOfVarint writes it."""
    z = ((n << 1) ^ (n >> 31)) & 0xFFFFFFFF
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size


def varlong_size(n: int) -> int:
    z = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size


@dataclass(frozen=True)
class Record:
    """One record of a batch: its offset delta from the batch base, timestamp, key and value lengths
    (-1 = null)."""

    offset_delta: int
    timestamp: int
    key_len: int = -1
    value_len: int = 0


@functools.lru_cache(maxsize=1 << 16)  # a log's records repeat a few shapes; a 1 GiB log asks a million times
def record_size(offset_delta: int, timestamp_delta: int, key_len: int, value_len: int) -> int:
    """DefaultRecord.sizeInBytes without headers."""
    body = 1 + varlong_size(timestamp_delta) + varint_size(offset_delta)
    body += 1 if key_len < 0 else varint_size(key_len) + key_len
    body += 1 if value_len < 0 else varint_size(value_len) + value_len
    body += varint_size(0)  # header count
    return body + varint_size(body)


@dataclass(frozen=True)
class Batch:
    """A v2 record batch: base offset and its records (offset deltas strictly increasing)."""

    base_offset: int
    records: tuple[Record, ...]

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.records[-1].offset_delta

    @property
    def first_offset(self) -> int:
        return self.base_offset + self.records[0].offset_delta

    @functools.cached_property  # a frozen value: computed once (the log asks for it at each step of an append)
    def max_timestamp(self) -> int:
        """MemoryRecordsBuilder keeps the greatest timestamp, starting from NO_TIMESTAMP."""
        return max([NO_TIMESTAMP, *(r.timestamp for r in self.records)])

    @functools.cached_property
    def size(self) -> int:
        base_ts = self.records[0].timestamp  # the first record's timestamp is the batch's base timestamp
        return BATCH_HEADER_BYTES + sum(
            record_size(r.offset_delta, r.timestamp - base_ts, r.key_len, r.value_len) for r in self.records)


@dataclass(frozen=True)
class Append:
    """One append to the log (a produce request's or a fetch response's records) at clock `now_ms`."""

    now_ms: int
    batches: tuple[Batch, ...]

    @property
    def size(self) -> int:
        return sum(b.size for b in self.batches)


# ---------------------------------------------------------------- indexes


class _Index:
    entry_size = 0

    def __init__(self, base_offset: int, max_index_size: int) -> None:
        if max_index_size < self.entry_size:
            raise StorageError("IllegalArgumentException", f"Invalid max index size: {max_index_size}")
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.length = self.entry_size * (max_index_size // self.entry_size)
        self.max_entries = self.length // self.entry_size
        self._init_storage()

    def _init_storage(self) -> None:
        raise NotImplementedError

    @property
    def count(self) -> int:
        """AbstractIndex.entries(): how many entries the index holds."""
        raise NotImplementedError

    def _entry_at(self, slot: int) -> tuple[int, int]:
        raise NotImplementedError

    def entry(self, n: int) -> tuple[int, int]:
        """The n-th entry; IllegalArgumentException at or past the entry count."""
        if n >= self.count:
            raise StorageError("IllegalArgumentException", f"Attempt to fetch the {n}th entry from an index of "
                               f"size {self.count}")
        return self._entry_at(n)

    def is_full(self) -> bool:
        return self.count >= self.max_entries

    def _relative(self, offset: int) -> int:
        rel = offset - self.base_offset
        if rel < 0 or rel > INT_MAX:
            raise StorageError("IndexOffsetOverflowException", f"Integer overflow for offset: {offset}")
        return rel

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT_MAX

    def resize(self, new_size: int) -> bool:
        rounded = self.entry_size * (new_size // self.entry_size)
        if rounded == self.length:
            return False
        self.length = rounded
        self.max_entries = rounded // self.entry_size
        return True

    def trim_to_valid_size(self) -> None:
        self.resize(self.entry_size * self.count)

    def _slot(self, target: int, by_value: bool, smallest_upper: bool) -> int:
        """AbstractIndex.indexSlotRangeFor: the warm (last 8 KiB) section first, then the rest."""
        n = self.count
        if n == 0:
            return -1
        part = 1 if by_value else 0

        def cmp(slot: int) -> int:
            v = self._entry_at(slot)[part]
            return (v > target) - (v < target)

        first_hot = max(0, n - 1 - WARM_BYTES // self.entry_size)
        if cmp(first_hot) < 0:
            return self._binary(cmp, smallest_upper, first_hot, n - 1)
        if cmp(0) > 0:
            return 0 if smallest_upper else -1
        return self._binary(cmp, smallest_upper, 0, first_hot)

    def _binary(self, cmp: object, smallest_upper: bool, lo: int, hi: int) -> int:
        assert callable(cmp)
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            c = cmp(mid)
            if c > 0:
                hi = mid - 1
            elif c < 0:
                lo = mid
            else:
                return mid
        if not smallest_upper:
            return lo
        return -1 if lo == self.count - 1 else lo + 1


class OffsetIndex(_Index):
    """OffsetIndex.java: entries (offset, position)."""

    entry_size = OFFSET_ENTRY

    def _init_storage(self) -> None:
        self.entries: list[tuple[int, int]] = []

    @property
    def count(self) -> int:
        return len(self.entries)

    def _entry_at(self, slot: int) -> tuple[int, int]:
        return self.entries[slot]

    @property
    def last_offset(self) -> int:
        return self.entries[-1][0] if self.entries else self.base_offset

    def append(self, offset: int, position: int) -> None:
        if self.is_full():
            raise StorageError("IllegalArgumentException",
                               f"Attempt to append to a full index (size = {len(self.entries)}).")
        if self.entries and offset <= self.last_offset:
            raise StorageError("InvalidOffsetException",
                               f"Attempt to append an offset {offset} no larger than the last offset appended "
                               f"({self.last_offset})")
        self._relative(offset)
        self.entries.append((offset, position))

    def lookup(self, target: int) -> tuple[int, int]:
        """The largest entry at or below `target`; (base offset, 0) below the first entry."""
        slot = self._slot(target, by_value=False, smallest_upper=False)
        return (self.base_offset, 0) if slot == -1 else self.entries[slot]

    def fetch_upper_bound_offset(self, position: int, fetch_size: int) -> tuple[int, int] | None:
        """The first entry whose position is above position + fetch_size (None when there is none)."""
        slot = self._slot(position + fetch_size, by_value=True, smallest_upper=True)
        return None if slot == -1 else self.entries[slot]

    def truncate_to(self, offset: int) -> None:
        slot = self._slot(offset, by_value=False, smallest_upper=False)
        keep = 0 if slot < 0 else slot if self.entries[slot][0] == offset else slot + 1
        del self.entries[keep:]


class TimeIndex(_Index):
    """TimeIndex.java: entries (timestamp, offset), timestamps strictly increasing.

    Kept as the bytes of its mmapped file with the buffer's position, because maybeAppend writes the timestamp
    before it converts the offset: an offset that does not fit leaves the position 8 bytes ahead, and Kafka's
    later appends write misaligned entries (and throw IllegalStateException after writing them)."""

    entry_size = TIME_ENTRY

    def _init_storage(self) -> None:
        self._buf = bytearray()
        self._position = 0
        self._count = 0
        self._cache: list[tuple[int, int]] | None = []
        self._last = (NO_TIMESTAMP, self.base_offset)

    def _put(self, data: bytes) -> None:
        if self._position + len(data) > self.length:
            raise StorageError("BufferOverflowException", "time index mmap is full")
        end = self._position + len(data)
        if len(self._buf) < end:
            self._buf.extend(bytes(end - len(self._buf)))
        self._buf[self._position:end] = data
        self._position = end
        self._cache = None

    def _parse(self, n: int) -> tuple[int, int]:
        at = n * TIME_ENTRY
        if at + TIME_ENTRY > self.length:
            raise StorageError("IndexOutOfBoundsException", f"entry {n} is past the index's {self.length} bytes")
        raw = bytes(self._buf[at:at + TIME_ENTRY]).ljust(TIME_ENTRY, b"\0")
        return (int.from_bytes(raw[:8], "big", signed=True),
                self.base_offset + int.from_bytes(raw[8:], "big", signed=True))

    @property
    def count(self) -> int:
        return self._count

    def _entry_at(self, slot: int) -> tuple[int, int]:
        return self._parse(slot)

    @property
    def entries(self) -> list[tuple[int, int]]:
        if self._cache is None:
            self._cache = [self._parse(i) for i in range(self._count)]
        return self._cache

    def is_full(self) -> bool:
        # one slot stays free for the entry onBecomeInactiveSegment writes at roll
        return self._count >= self.max_entries - 1

    def last_entry(self) -> tuple[int, int]:
        return self._last

    def _last_from_file(self) -> tuple[int, int]:
        return self._parse(self._count - 1) if self._count else (NO_TIMESTAMP, self.base_offset)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        if not skip_full_check and self.is_full():
            raise StorageError("IllegalArgumentException",
                               f"Attempt to append to a full time index (size = {self._count}).")
        last_ts, last_off = self._last
        if self._count and offset < last_off:
            raise StorageError("InvalidOffsetException", f"Attempt to append an offset ({offset}) no larger than "
                               f"the last offset appended ({last_off})")
        if self._count and timestamp < last_ts:
            raise StorageError("IllegalStateException", f"Attempt to append a timestamp ({timestamp}) no larger "
                               f"than the last timestamp appended ({last_ts})")
        if timestamp > last_ts:
            self._put(timestamp.to_bytes(8, "big", signed=True))
            rel = self._relative(offset)
            self._put(rel.to_bytes(4, "big", signed=True))
            self._count += 1
            self._last = (timestamp, offset)
            if self._count * TIME_ENTRY != self._position:
                raise StorageError("IllegalStateException",
                                   f"{self._count} entries but file position in index is {self._position}")

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """The largest entry at or below the timestamp; (-1, base offset) below the first entry."""
        slot = self._slot(target_timestamp, by_value=False, smallest_upper=False)
        return (NO_TIMESTAMP, self.base_offset) if slot == -1 else self._parse(slot)

    def truncate_to(self, offset: int) -> None:
        slot = self._slot(offset, by_value=True, smallest_upper=False)
        if slot < 0:
            keep = 0
        elif self._parse(slot)[1] == offset:
            keep = slot
        else:
            keep = slot + 1
        self._count = keep
        self._position = keep * TIME_ENTRY
        self._cache = None
        self._last = self._last_from_file()

    def resize(self, new_size: int) -> bool:
        rounded = TIME_ENTRY * (new_size // TIME_ENTRY)
        if rounded == self.length:
            return False
        self.length = rounded
        self.max_entries = rounded // TIME_ENTRY
        del self._buf[rounded:]
        self._cache = None
        if self._position > rounded:  # the new mapping starts at 0 and refuses the old position
            self._position = 0
            raise StorageError("IllegalArgumentException", f"newPosition > limit: ({self._position} > {rounded})")
        self._last = self._last_from_file()
        return True

    def trim_to_valid_size(self) -> None:
        self.resize(TIME_ENTRY * self._count)


# ---------------------------------------------------------------- segments


@dataclass(frozen=True)
class SegmentConfig:
    """The topic configs a segment reads (LogConfig): segment.bytes, segment.ms, the jitter drawn for the
    segment (0 <= jitter < min(segment.jitter.ms, segment.ms), see `jitter_bound`), index.interval.bytes,
    segment.index.bytes."""

    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    jitter_ms: int = 0
    index_interval_bytes: int = 4096
    max_index_size: int = 10 * 1024 * 1024

    def __post_init__(self) -> None:
        if self.max_index_size < TIME_ENTRY:
            raise ValueError(f"segment.index.bytes {self.max_index_size} is below one time index entry ({TIME_ENTRY})")


def jitter_bound(segment_ms: int, segment_jitter_ms: int) -> int:
    """LogConfig.randomSegmentJitter draws abs(nextInt()) % min(segment.jitter.ms, segment.ms): 0 when the
    jitter is 0, else below this bound."""
    return 0 if segment_jitter_ms == 0 else min(segment_jitter_ms, segment_ms)


@dataclass(frozen=True)
class StoredBatch:
    """A batch in a segment's file, at `position`."""

    batch: Batch
    position: int

    @property
    def base_offset(self) -> int:
        return self.batch.base_offset

    @property
    def last_offset(self) -> int:
        return self.batch.last_offset

    @property
    def max_timestamp(self) -> int:
        return self.batch.max_timestamp

    @property
    def size(self) -> int:
        return self.batch.size


@dataclass
class LogSegment:
    """LogSegment.java over an in-memory file of batches."""

    base_offset: int
    config: SegmentConfig
    created_ms: int
    batches: list[StoredBatch] = field(default_factory=list)
    size: int = 0
    offset_index: OffsetIndex = field(init=False)
    time_index: TimeIndex = field(init=False)
    rolling_based_timestamp: int | None = None
    max_timestamp_and_offset: tuple[int, int] | None = None  # None = TimestampOffset.UNKNOWN
    bytes_since_last_index_entry: int = 0

    def __post_init__(self) -> None:
        self.offset_index = OffsetIndex(self.base_offset, self.config.max_index_size)
        self.time_index = TimeIndex(self.base_offset, self.config.max_index_size)

    def _max_ts_so_far(self) -> tuple[int, int]:
        if self.max_timestamp_and_offset is None:
            self.max_timestamp_and_offset = self.time_index.last_entry()
        return self.max_timestamp_and_offset

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        if self.rolling_based_timestamp is None and self.batches:
            self.rolling_based_timestamp = self.batches[0].max_timestamp
        ts = NO_TIMESTAMP if self.rolling_based_timestamp is None else self.rolling_based_timestamp
        return message_timestamp - ts if ts >= 0 else now - self.created_ms

    def should_roll(self, *, max_segment_ms: int, max_segment_bytes: int, max_timestamp_in_messages: int,
                    max_offset_in_messages: int, messages_size: int, now: int) -> bool:
        reached_roll_ms = (self.time_waited_for_roll(now, max_timestamp_in_messages)
                           > max_segment_ms - self.config.jitter_ms)
        return (self.size > max_segment_bytes - messages_size
                or (self.size > 0 and reached_roll_ms)
                or self.offset_index.is_full()
                or self.time_index.is_full()
                or not self.offset_index.can_append_offset(max_offset_in_messages))

    def append(self, largest_offset: int, batches: Sequence[Batch]) -> None:
        total = sum(b.size for b in batches)
        if total <= 0:
            return
        position = self.size
        if not self.offset_index.can_append_offset(largest_offset):
            raise StorageError("LogSegmentOffsetOverflowException",
                               f"offset {largest_offset} does not fit segment {self.base_offset}")
        for b in batches:  # the file gets all the bytes before any index entry is written
            self.batches.append(StoredBatch(b, position))
            position += b.size
        self.size += total
        for stored in self.batches[len(self.batches) - len(batches):]:
            if stored.max_timestamp > self._max_ts_so_far()[0]:
                self.max_timestamp_and_offset = (stored.max_timestamp, stored.last_offset)
            if self.bytes_since_last_index_entry > self.config.index_interval_bytes:
                self.offset_index.append(stored.last_offset, stored.position)
                self.time_index.maybe_append(*self._max_ts_so_far())
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += stored.size

    def on_become_inactive(self) -> None:
        self.time_index.maybe_append(*self._max_ts_so_far(), skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    def translate_offset(self, offset: int, kafka_version: str = "4.4.0") -> tuple[int, int, int] | None:
        """(offset, position, size) of the first batch from the index's position whose last offset is at or
        above `offset` (FileRecords.searchForOffsetWithSize), None past the end. The offset is the batch's base
        offset since 4.0; up to 3.9 it was the batch's last offset."""
        from kcheck.reference.releases import version_key

        start = self.offset_index.lookup(offset)[1]
        # Batches are stored in ascending position: skip to the index's position as the file search starts there.
        first = bisect.bisect_left(self.batches, start, key=lambda b: b.position)
        for b in itertools.islice(self.batches, first, None):
            if b.last_offset >= offset:
                found = b.base_offset if version_key(kafka_version) >= (4, 0) else b.last_offset
                return (found, b.position, b.size)
        return None


@dataclass
class SegmentedLog:
    """The roll loop of UnifiedLog.append/maybeRoll and LocalLog.roll over LogSegments (leader epochs,
    producer state and flushing left out: they do not move segment boundaries or index entries)."""

    config: SegmentConfig
    created_ms: int = 0
    segments: list[LogSegment] = field(init=False)
    log_end_offset: int = 0
    failed: tuple[int, str] | None = None  # (append index, Java exception name) of the append that threw

    def __post_init__(self) -> None:
        self.segments = [LogSegment(0, self.config, self.created_ms)]

    @property
    def active(self) -> LogSegment:
        return self.segments[-1]

    def append(self, a: Append) -> None:
        size = a.size
        if size > self.config.segment_bytes:
            raise StorageError("RecordBatchTooLargeException",
                               f"records of {size} bytes exceed segment.bytes {self.config.segment_bytes}")
        first = min(b.first_offset for b in a.batches)
        last = max(b.last_offset for b in a.batches)
        max_ts = max(b.max_timestamp for b in a.batches)
        active = self.active
        if active.should_roll(max_segment_ms=self.config.segment_ms, max_segment_bytes=self.config.segment_bytes,
                              max_timestamp_in_messages=max_ts, max_offset_in_messages=last,
                              messages_size=size, now=a.now_ms):
            new_offset = max(first, self.log_end_offset)
            if new_offset == active.base_offset and active.size == 0:
                self.segments[-1] = LogSegment(new_offset, self.config, a.now_ms)  # KAFKA-6388: replace it
            elif new_offset <= active.base_offset:
                raise StorageError("KafkaException", f"roll to {new_offset} at or below the active segment")
            else:
                active.on_become_inactive()
                self.segments.append(LogSegment(new_offset, self.config, a.now_ms))
        self.active.append(last, a.batches)
        self.log_end_offset = last + 1

    def run(self, appends: Iterable[Append]) -> SegmentedLog:
        """Apply appends in order; the first that throws is recorded in `failed` and stops the log."""
        for i, a in enumerate(appends):
            try:
                self.append(a)
            except StorageError as e:
                self.failed = (i, e.java_name)
                break
        return self

    def segment_for(self, offset: int) -> LogSegment:
        """The segment with the greatest base offset at or below `offset` (the first one below all)."""
        found = self.segments[0]
        for s in self.segments:
            if s.base_offset <= offset:
                found = s
        return found


def to_log_view(log: SegmentedLog, partition: str = "topic-0") -> LogView:
    """The log as M's `LogView` (kcheck.invariants.log_storage): keys and values are 'x' strings of the record's
    lengths (None when null), each record carries its own bytes and its batch's first record also the 61-byte
    batch header, so record sizes add up to the segment's size."""

    views = []
    for seg in log.segments:
        recs: list[LogRecord] = []
        positions: list[int] = []
        for sb in seg.batches:
            b = sb.batch
            base_ts = b.records[0].timestamp
            for i, r in enumerate(b.records):
                size = record_size(r.offset_delta, r.timestamp - base_ts, r.key_len, r.value_len)
                recs.append(LogRecord(offset=b.base_offset + r.offset_delta,
                                      key=None if r.key_len < 0 else "x" * r.key_len,
                                      value=None if r.value_len < 0 else "x" * r.value_len,
                                      timestamp=r.timestamp, size=size + (BATCH_HEADER_BYTES if i == 0 else 0)))
                positions.append(sb.position)
        views.append(LogSegmentView(base_offset=seg.base_offset, records=tuple(recs), size_bytes=seg.size,
                                    offset_index=tuple(seg.offset_index.entries),
                                    time_index=tuple(seg.time_index.entries), positions=tuple(positions)))
    return LogView(partition=partition, segments=tuple(views), log_start_offset=log.segments[0].base_offset)
