"""The log cleaner, bit-exact with Kafka's (compaction of `cleanup.policy=compact` logs).

Mirrors, in Kafka 4.1+ (`storage/src/main/java/org/apache/kafka/storage/internals/log/`):
`LogCleanerManager.java` (grabFilthiestCompactedLog, cleanableOffsets, calculateCleanableBytes, maxCompactionDelay,
the checkpoint), `LogToClean.java` (the dirty ratio), `Cleaner.java` (doClean, buildOffsetMap, groupSegmentsBySize,
cleanSegments, cleanInto, shouldRetainRecord), `SkimpyOffsetMap.java` (the offset map's capacity) and the record
filter of `clients/.../record/MemoryRecords.java` (filterTo: which batches are rewritten, KIP-534 delete horizon);
up to 4.0 the same logic is Scala in `core/src/main/scala/kafka/log/LogCleaner{,Manager}.scala`.

What a pass does, in Kafka's words of the code:

- **choice**: for each compacted log, the first dirty offset is the cleaner checkpoint (reset to the log start offset,
  and the checkpoint rewritten, when it is below the log start or past the log end); the first uncleanable offset is
  the least of the last stable offset (= the high watermark here), the active segment's base offset and, with
  min.compaction.lag.ms > 0, the first dirty non-active segment whose largest timestamp is newer than
  now - min.compaction.lag.ms; it is then floored to its segment's base offset. Dirty ratio = cleanable bytes /
  (clean + cleanable bytes), whole segments on both sides (a segment the first dirty offset falls inside counts on
  both). A log qualifies when its ratio is above min.cleanable.dirty.ratio, or when max.compaction.lag.ms forces it
  (the first timestamp of a dirty non-active segment older than now - max.compaction.lag.ms) and it has cleanable
  bytes. The highest ratio wins; a tie goes to the first log in the manager's map (Kafka's broker keeps logs in a
  hash map, so which tied log it takes is not modelled beyond "the first": here the lowest index).
- **offset map** (SkimpyOffsetMap): `map_bytes // 24` slots (16-byte MD5 + 8-byte offset) and room for
  `int(slots * load_factor)` keys; when a keyed record of the dirty range finds the map at that size (even a key
  already in it) the map is full: the pass cleans only up to the last offset mapped (the end of the last batch read
  completely), and that is the new checkpoint. MD5 collisions are not modelled (keys are distinct strings).
- **grouping** (groupSegmentsBySize): segments below the pass's end, grouped greedily while the group's bytes stay
  within segment.bytes (and the relative-offset range fits an int); each group becomes one segment with the first
  segment's base offset. The index-size bound of a group is not modelled: non-active indexes here are far below
  segment.index.bytes.
- **retention of a record**: past the map's last offset, kept; else kept when it is its key's latest offset and it
  has a value or its batch has no delete horizon yet or now < that horizon. A batch keeping a tombstone and with no
  horizon yet is rewritten with horizon = now + delete.retention.ms (KIP-534, stored as the batch's base timestamp);
  a batch that lost records is rewritten with its base and last offsets kept; a batch left empty is dropped, except
  one kept as an empty 61-byte batch (so the log keeps its last offset): up to 4.3 the batch ending the pass (next
  offset = the pass's first uncleanable offset); since 4.4.0 the batch whose next offset is the log's high watermark
  (Cleaner.cleanSegments reads `log.highWatermark()`; found by the differential, see `EMPTY_BATCH_AT_HW_SINCE`).
- **checkpoint**: the pass's end offset.

Out of scope (say so rather than guess): transactions and control batches, producer-id batches (idempotent
producers' last batches are kept empty), compressed batches, record headers, message formats below v2, the
LogCleaner thread loop, throttling and the uncleanable-partition bookkeeping, log start offsets above 0.

Sizes are bytes of the v2 record format (DefaultRecordBatch / DefaultRecord), so segment sizes, ratios and grouping
match Kafka's to the byte. `to_log_view` converts a log to `kcheck.model.log_view.LogView`.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field

from kcheck.model.log_view import LogRecord, LogSegmentView, LogView
from kcheck.reference.releases import version_key

__all__ = [
    "BATCH_OVERHEAD",
    "BYTES_PER_ENTRY",
    "DEFAULT_VERSION",
    "EMPTY_BATCH_AT_HW_SINCE",
    "Batch",
    "CleanerConfig",
    "Choice",
    "CleanerLog",
    "Record",
    "Round",
    "Segment",
    "batch_size",
    "build_log",
    "build_offset_map",
    "choose",
    "clean_pass",
    "record_size",
    "run_rounds",
    "snapshot",
    "to_log_view",
]

DEFAULT_VERSION = "4.4.0"
EMPTY_BATCH_AT_HW_SINCE = "4.4.0"  # before: an emptied batch is kept when it ends the pass (4.1.2, 4.2.0, 4.3.0)
BATCH_OVERHEAD = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
BYTES_PER_ENTRY = 24  # SkimpyOffsetMap: MD5 (16) + offset (8)
INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
# An empty segment's largest timestamp is its file's mtime (LogSegment.largestTimestamp): wall-clock time, far
# above the small `now` values used here, so such a segment always counts as too new for min.compaction.lag.ms.
WALL_CLOCK_MS = 1 << 50


@dataclass(frozen=True)
class Record:
    offset: int
    key: str
    value: str | None  # None: a tombstone
    timestamp: int


@dataclass(frozen=True)
class Batch:
    base_offset: int
    last_offset: int
    records: tuple[Record, ...]
    delete_horizon: int | None = None  # KIP-534: set by the first pass that keeps a tombstone of the batch
    max_timestamp: int = -1

    @property
    def base_timestamp(self) -> int:
        if self.delete_horizon is not None:
            return self.delete_horizon
        return self.records[0].timestamp if self.records else -1

    @property
    def size(self) -> int:
        return batch_size(self)


def _varint_size(v: int) -> int:
    z = (v << 1) ^ (v >> 63)  # zig-zag, as ByteUtils.sizeOfVarlong
    z &= (1 << 64) - 1
    n = 1
    while z >= 0x80:
        z >>= 7
        n += 1
    return n


def _bytes_field(s: str | None) -> int:
    if s is None:
        return 1  # varint -1
    n = len(s.encode())
    return _varint_size(n) + n


def record_size(offset_delta: int, timestamp_delta: int, key: str | None, value: str | None) -> int:
    """DefaultRecord.sizeInBytes with no headers: the length varint plus the body."""
    body = 1 + _varint_size(timestamp_delta) + _varint_size(offset_delta) + _bytes_field(key) + _bytes_field(value) + 1
    return _varint_size(body) + body


def batch_size(b: Batch) -> int:
    base_ts = b.base_timestamp
    return BATCH_OVERHEAD + sum(record_size(r.offset - b.base_offset, r.timestamp - base_ts, r.key, r.value)
                                for r in b.records)


@dataclass
class Segment:
    base_offset: int
    batches: list[Batch] = field(default_factory=list)
    max_ts: int = -1  # LogSegment.maxTimestampSoFar: the largest batch max timestamp appended

    @property
    def size(self) -> int:
        return sum(b.size for b in self.batches)

    def first_batch_timestamp(self) -> int:
        """LogSegment.getFirstBatchTimestamp: the first batch's max timestamp read from the file (so a cleaned
        segment answers with its first kept batch's), Long.MAX_VALUE when there is none or it is negative."""
        ts = self.batches[0].max_timestamp if self.batches else -1
        return ts if ts >= 0 else LONG_MAX

    def largest_timestamp(self) -> int:
        return self.max_ts if self.max_ts >= 0 else WALL_CLOCK_MS

    def append(self, batches: Sequence[Batch]) -> None:
        self.batches.extend(batches)
        for b in batches:
            self.max_ts = max(self.max_ts, b.max_timestamp)


@dataclass(frozen=True)
class CleanerConfig:
    segment_bytes: int = 1 << 30
    segment_ms: int = 604_800_000
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_ratio: float = 0.5
    map_bytes: int = 1 << 20  # log.cleaner.dedupe.buffer.size / log.cleaner.threads
    load_factor: float = 0.9

    @property
    def max_segment_ms(self) -> int:
        """LogConfig.maxSegmentMs: a compacted log rolls by max.compaction.lag.ms too."""
        if self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    @property
    def map_capacity(self) -> int:
        return int((self.map_bytes // BYTES_PER_ENTRY) * self.load_factor)


@dataclass
class CleanerLog:
    segments: list[Segment] = field(default_factory=lambda: [Segment(0)])
    high_watermark: int = 0
    log_start_offset: int = 0
    checkpoint: int | None = None

    @property
    def log_end_offset(self) -> int:
        for seg in reversed(self.segments):
            if seg.batches:
                return seg.batches[-1].last_offset + 1
        return self.segments[-1].base_offset

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    def roll(self) -> None:
        leo = self.log_end_offset
        if self.active.base_offset == leo and not self.active.batches:
            return  # UnifiedLog.roll on an empty active segment at the log end replaces it by an identical one
        self.segments.append(Segment(leo))

    def append(self, records: Sequence[tuple[str, str | None, int]], cfg: CleanerConfig) -> None:
        """One batch appended as leader (offsets assigned from the log end), rolling first when it does not fit."""
        base = self.log_end_offset
        recs = tuple(Record(base + i, k, v, ts) for i, (k, v, ts) in enumerate(records))
        batch = Batch(base, base + len(recs) - 1, recs, None, max(r.timestamp for r in recs))
        # LogSegment.shouldRoll (segment.jitter.ms 0; the indexes never fill at these sizes)
        active = self.active
        waited = batch.max_timestamp - active.first_batch_timestamp()  # timeWaitedForRoll, by record timestamps
        if active.size > cfg.segment_bytes - batch.size or (active.size > 0 and waited > cfg.max_segment_ms):
            self.roll()
        self.active.append([batch])

    def segments_between(self, start: int, end: int) -> list[Segment]:
        """UnifiedLog.logSegments(from, to): from the segment holding `start` up to those starting below `end`."""
        if start == end:
            return []
        if end < start:
            raise ValueError(f"invalid segment range [{start}, {end})")
        floor = [s for s in self.segments if s.base_offset <= start]
        lo = floor[-1].base_offset if floor else start
        return [s for s in self.segments if lo <= s.base_offset < end]

    def non_active_from(self, start: int) -> list[Segment]:
        active = self.active.base_offset
        return [] if start > active else self.segments_between(start, active)


@dataclass(frozen=True)
class Choice:
    """A log's standing at a grab (LogToClean), or why it has none."""

    index: int
    first_dirty: int
    first_uncleanable: int  # segment-aligned, as LogToClean.firstUncleanableOffset
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool
    reset_checkpoint: bool  # cleanableOffsets found the checkpoint out of range and rewrote it

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else float("nan")

    def qualifies(self, cfg: CleanerConfig) -> bool:
        return (self.need_compaction_now and self.cleanable_bytes > 0) or self.ratio > cfg.min_cleanable_ratio

    def why(self, cfg: CleanerConfig) -> str:
        if self.total_bytes == 0:
            return "empty log"
        if self.need_compaction_now and self.cleanable_bytes > 0:
            return "max.compaction.lag.ms passed: must be compacted"
        if self.ratio > cfg.min_cleanable_ratio:
            return f"dirty ratio {self.ratio:.3f} > min.cleanable.dirty.ratio {cfg.min_cleanable_ratio}"
        return f"dirty ratio {self.ratio:.3f} <= min.cleanable.dirty.ratio {cfg.min_cleanable_ratio}"


def _standing(index: int, log: CleanerLog, cfg: CleanerConfig, now: int) -> Choice:
    # LogCleanerManager.cleanableOffsets
    start = log.log_start_offset
    cp = start if log.checkpoint is None else log.checkpoint
    reset = cp < start or cp > log.log_end_offset
    first_dirty = start if reset else cp
    bounds = [log.high_watermark, log.active.base_offset]
    lag = max(cfg.min_compaction_lag_ms, 0)
    if lag > 0:
        for seg in log.non_active_from(first_dirty):
            if seg.largest_timestamp() > now - lag:
                bounds.append(seg.base_offset)
                break
    uncleanable = max(first_dirty, min(bounds))
    # maxCompactionDelay
    stamps = [t for t in (s.first_batch_timestamp() for s in log.non_active_from(first_dirty)) if t > 0]
    earliest = min(stamps, default=LONG_MAX)
    clean_until = now - max(cfg.max_compaction_lag_ms, 0)
    need = earliest < clean_until
    # LogToClean / calculateCleanableBytes
    clean_bytes = sum(s.size for s in log.segments if s.base_offset < first_dirty)
    non_active = log.non_active_from(uncleanable)
    fuo = non_active[0].base_offset if non_active else log.active.base_offset
    cleanable = sum(s.size for s in log.segments_between(min(first_dirty, fuo), fuo))
    return Choice(index, first_dirty, fuo, clean_bytes, cleanable, need, reset)


def choose(logs: Sequence[CleanerLog], cfg: CleanerConfig, now: int) -> tuple[Choice | None, list[Choice]]:
    """LogCleanerManager.grabFilthiestCompactedLog: the log to clean (or None) and every log's standing.

    Side effect as Kafka's: a checkpoint found out of range is rewritten to the first dirty offset."""
    standings = [_standing(i, log, cfg, now) for i, log in enumerate(logs)]
    for st in standings:
        if st.reset_checkpoint:
            logs[st.index].checkpoint = st.first_dirty
    cands = [st for st in standings if st.total_bytes > 0 and st.qualifies(cfg)]
    best: Choice | None = None
    for st in cands:
        if best is None or st.ratio > best.ratio:
            best = st
    return best, standings


def build_offset_map(log: CleanerLog, start: int, end: int, capacity: int) -> tuple[dict[str, int], int, bool]:
    """Cleaner.buildOffsetMap: key -> latest offset in [start, end), the map's latest offset, whether it filled."""
    m: dict[str, int] = {}
    latest = -1
    dirty = log.segments_between(start, end)
    nexts = [s.base_offset for s in dirty[1:]] + [end]
    for seg, nxt in zip(dirty, nexts, strict=True):
        for b in seg.batches:
            for r in b.records:
                if r.offset >= start:
                    if len(m) >= capacity:
                        return m, latest, True
                    m[r.key] = r.offset
                    latest = r.offset
            if b.last_offset >= start:
                latest = b.last_offset
        latest = nxt - 1  # offsets gap: fast-forward to the segment's end
    return m, latest, False


def _group(segments: list[Segment], max_size: int, first_uncleanable: int) -> list[list[Segment]]:
    """Cleaner.groupSegmentsBySize (log bytes and relative-offset range)."""
    groups: list[list[Segment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        size = segments[i].size
        i += 1
        while i < len(segments):
            nxt = segments[i]
            last_off = segments[i + 1].base_offset - 1 if i + 1 < len(segments) else first_uncleanable - 1
            if size + nxt.size > max_size:
                break
            if nxt.size != 0 and last_off - group[-1].base_offset > INT_MAX:
                break
            group.append(nxt)
            size += nxt.size
            i += 1
        groups.append(group)
    return groups


def _filter_batch(b: Batch, m: dict[str, int], latest: int, now: int, retention_ms: int,
                  keep_empty_at: int) -> Batch | None:
    """MemoryRecords.filterTo with the cleaner's RecordFilter, for one plain (non-transactional) batch."""
    keep: list[Record] = []
    for r in b.records:
        if r.offset > latest:
            keep.append(r)
            continue
        latest_for_key = r.offset >= m.get(r.key, -1)
        retain_deletes = b.delete_horizon is None or now < b.delete_horizon
        if latest_for_key and (r.value is not None or retain_deletes):
            keep.append(r)
    if not keep:
        if b.last_offset + 1 == keep_empty_at:  # RETAIN_EMPTY: the log keeps its last offset
            return Batch(b.base_offset, b.last_offset, (), None, b.max_timestamp)
        return None
    need_horizon = any(r.value is None for r in keep) and b.delete_horizon is None
    if len(keep) == len(b.records) and not need_horizon:
        return b
    horizon = now + retention_ms if need_horizon else b.delete_horizon
    return Batch(b.base_offset, b.last_offset, tuple(keep), horizon, max(r.timestamp for r in keep))


@dataclass(frozen=True)
class PassResult:
    end_offset: int  # the new checkpoint
    map_full: bool
    groups: tuple[tuple[int, ...], ...]  # base offsets of the segments cleaned into each new segment


def clean_pass(log: CleanerLog, choice: Choice, cfg: CleanerConfig, now: int,
               kafka_version: str = DEFAULT_VERSION) -> PassResult:
    """Cleaner.doClean on `log` (modified in place) at `now`, then LogCleanerManager.doneCleaning."""
    upper = choice.first_uncleanable
    at_hw = version_key(kafka_version) >= version_key(EMPTY_BATCH_AT_HW_SINCE)
    keep_empty_at = log.high_watermark if at_hw else upper
    m, latest, full = build_offset_map(log, choice.first_dirty, upper, cfg.map_capacity)
    end = latest + 1
    groups = _group(log.segments_between(0, end), cfg.segment_bytes, upper)
    for group in groups:
        cleaned = Segment(group[0].base_offset)
        for src in group:
            out = [fb for fb in (_filter_batch(b, m, latest, now, cfg.delete_retention_ms, keep_empty_at)
                                 for b in src.batches) if fb is not None]
            cleaned.append(out)
        i = log.segments.index(group[0])
        log.segments[i:i + len(group)] = [cleaned]
    log.checkpoint = end
    return PassResult(end, full, tuple(tuple(s.base_offset for s in g) for g in groups))


# ---- scenarios: rounds of appends, a grab and a pass (what the differential sends Kafka) ----

Spec = Sequence[Sequence[Sequence[tuple[str, str | None, int]]]]  # parts (a roll between) of batches of records


@dataclass(frozen=True)
class Round:
    now: int
    appends: tuple[Spec, ...]  # per log
    hws: tuple[int | None, ...]  # per log, None = the log end offset


@dataclass(frozen=True)
class RoundOutcome:
    choice: Choice | None
    end_offset: int | None
    standings: tuple[Choice, ...]


def build_log(log: CleanerLog, spec: Spec, cfg: CleanerConfig) -> None:
    for i, part in enumerate(spec):
        if i > 0:
            log.roll()
        for batch in part:
            log.append(batch, cfg)


def run_rounds(cfg: CleanerConfig, checkpoints: Sequence[int | None], rounds: Sequence[Round],
               kafka_version: str = DEFAULT_VERSION) -> tuple[list[RoundOutcome], list[CleanerLog]]:
    """Every round: append to each log, set its high watermark, grab the filthiest log, clean it."""
    logs = [CleanerLog(checkpoint=cp) for cp in checkpoints]
    outcomes: list[RoundOutcome] = []
    for rnd in rounds:
        for log, spec, hw in zip(logs, rnd.appends, rnd.hws, strict=True):
            build_log(log, spec, cfg)
            leo = log.log_end_offset
            log.high_watermark = leo if hw is None else max(log.log_start_offset, min(hw, leo))
        choice, standings = choose(logs, cfg, rnd.now)
        end = None
        if choice is not None:
            end = clean_pass(logs[choice.index], choice, cfg, rnd.now, kafka_version).end_offset
        outcomes.append(RoundOutcome(choice, end, tuple(standings)))
    return outcomes, logs


def to_log_view(log: CleanerLog, partition: str = "t-0") -> LogView:
    """The log as `kcheck.model.log_view.LogView`: a record's size is its bytes, its batch's 61-byte header
    on the batch's first record; unknown (0) in a segment holding an empty batch, whose header has no record."""

    segs = []
    for s in log.segments:
        known = all(b.records for b in s.batches)
        recs = []
        for b in s.batches:
            for i, r in enumerate(b.records):
                size = record_size(r.offset - b.base_offset, r.timestamp - b.base_timestamp, r.key, r.value)
                recs.append(LogRecord(r.offset, r.key, r.value, r.timestamp,
                                      (size + (BATCH_OVERHEAD if i == 0 else 0)) if known else 0))
        segs.append(LogSegmentView(s.base_offset, tuple(recs), s.size))
    return LogView(partition, tuple(segs), log.log_start_offset, log.high_watermark, compacted=True)


def snapshot(log: CleanerLog) -> CleanerLog:
    return copy.deepcopy(log)

