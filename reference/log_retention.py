"""Log retention, bit-exact with Kafka's: which segments one retention run deletes and where the log start offset goes.

Mirrors `storage/src/main/java/org/apache/kafka/storage/internals/log/UnifiedLog.java` (Java from Kafka 4.1; Scala
`core/src/main/scala/kafka/log/UnifiedLog.scala` before): `deleteOldSegments`, `deletableSegments`,
`deleteSegments`, `deleteLogStartOffsetBreachedSegments`, `deleteRetentionSizeBreachedSegments`,
`deleteRetentionMsBreachedSegments`, `updateHighWatermark`, `maybeIncrementLogStartOffset`; and `LocalLog.roll`.

The rules, as Kafka's code has them (checked against the real UnifiedLog of 4.1.2 and 4.4.0 through the bridge,
`reference/kafka_retention.py`):

- One run is three passes in this order: log start offset breach, then retention.bytes, then retention.ms. Every
  pass runs, each on what the previous ones left (a pass that deleted something does not stop the run). With
  cleanup.policy `delete` (alone or with `compact`) all three run; with `compact` alone or an empty policy only the
  log start offset pass (tiered storage, where 4.4 also runs the other two for an empty policy, is not modelled).
  The order matters: the time pass runs on what the size pass left, so a segment whose time is up, behind an older
  segment whose time is not, goes in the same run once the size pass has removed that older one; with time first
  it would stay until the next run (tests/test_log_retention.py::test_size_pass_before_time_pass, confirmed on the
  real log by the same scenario in tests/test_kafka_retention.py).
- A pass deletes a prefix: from the oldest segment while the pass's condition holds, stopping at the first segment
  that fails it. A segment is a candidate only when its end (the next segment's base offset, the log end offset for
  the last one) is at or below the high watermark, so nothing at or above the high watermark goes. The last segment
  is never deleted when empty.
- log start offset pass: a segment goes when the next segment's base offset is at or below the log start offset
  (so never the last segment: the one holding the log start offset stays).
- retention.bytes (-1 or any negative: unlimited): when the log's size is at least the limit, the excess
  `size - limit` is spent from the oldest segment on; a segment goes while its size fits in what is left.
- retention.ms (-1: unlimited; below -1 LogConfig refuses it): a segment goes when `now - largest timestamp >
  retention.ms` (Java long arithmetic); a segment holding a timestamp in the future of `now` stops the pass. A
  segment whose records carry no timestamp (-1) is judged by its .log file's modification time instead: the clock
  of its last write, or whatever a copy or `touch` left there.
- When a pass deletes every segment (the active one too, which needs the high watermark at the log end), a new
  empty active segment is rolled first at the log end offset. The log start offset moves up to the base offset of
  the segment after the last deleted one; it never moves back (DeleteRecords may have put it higher).

`LogState` is a list of segment summaries (base offset, size in bytes, largest timestamp, end) with the high
watermark and log start offset; `to_log_view` turns it into the storage invariants' `LogView`. `append` and `roll`
build a state the way `UnifiedLog.appendAsLeader` (uncompressed magic v2 batches) and `LocalLog.roll` do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from kcheck.model.log_view import LogRecord, LogSegmentView, LogView

__all__ = [
    "CLEANUP_POLICIES",
    "REASONS",
    "Deletion",
    "LogState",
    "OffsetOutOfRange",
    "RetentionConfig",
    "RetentionResult",
    "SegmentSummary",
    "append",
    "batch_size",
    "delete_records",
    "empty_log",
    "retention_pass",
    "roll",
    "set_last_modified",
    "to_log_view",
    "update_high_watermark",
]

# cleanup.policy values (LogConfig): a list of "compact" and "delete", possibly empty (from 4.1).
CLEANUP_POLICIES: tuple[tuple[str, ...], ...] = (("delete",), ("compact",), ("compact", "delete"), ())
# The passes of one run in Kafka's order (the SegmentDeletionReason each logs).
REASONS = ("log-start-offset", "retention-size", "retention-ms")

_LONG = 1 << 64
_RECORD_BATCH_OVERHEAD = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD (magic v2)


def _wrap(x: int) -> int:
    """x as a Java long."""
    x %= _LONG
    return x - _LONG if x >= 1 << 63 else x


class OffsetOutOfRange(Exception):
    """Kafka's OffsetOutOfRangeException: a log start offset above the high watermark."""

    class_name = "OffsetOutOfRangeException"


@dataclass(frozen=True)
class SegmentSummary:
    base_offset: int
    size: int  # bytes of the .log file
    largest_timestamp: int  # LogSegment.maxTimestampSoFar; -1 when it holds no timestamp
    next_offset: int  # the next segment's base offset, or the log end offset for the last segment
    # The .log file's modification time (ms), what retention.ms judges a segment without timestamps by
    # (LogSegment.largestTimestamp); None when unknown. Not part of equality: Kafka's snapshot does not carry it.
    last_modified: int | None = field(default=None, compare=False)

    def retention_timestamp(self) -> int:
        """LogSegment.largestTimestamp: the largest timestamp, or the file's modification time without one."""
        if self.largest_timestamp >= 0:
            return self.largest_timestamp
        if self.last_modified is None:
            raise ValueError(f"segment {self.base_offset} has no timestamp and no known modification time")
        return self.last_modified

    @property
    def record_count(self) -> int:
        return self.next_offset - self.base_offset  # offsets are dense: retention never sees a compacted hole


@dataclass(frozen=True)
class RetentionConfig:
    retention_ms: int = 7 * 24 * 3600 * 1000  # retention.ms; negative: unlimited
    retention_bytes: int = -1  # retention.bytes; negative: unlimited
    cleanup_policy: tuple[str, ...] = ("delete",)

    def __post_init__(self) -> None:
        if self.retention_ms < -1:  # LogConfig: "Value must be at least -1"
            raise ValueError(f"retention.ms must be at least -1, not {self.retention_ms}")
        if any(p not in ("compact", "delete") for p in self.cleanup_policy):
            raise ValueError(f"cleanup.policy is a list of compact and delete, not {','.join(self.cleanup_policy)}")

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy


@dataclass(frozen=True)
class LogState:
    segments: tuple[SegmentSummary, ...]  # oldest first, the last one active; never empty
    log_start_offset: int = 0
    high_watermark: int = 0

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)


@dataclass(frozen=True)
class Deletion:
    segment: SegmentSummary
    reason: str  # one of REASONS


@dataclass(frozen=True)
class RetentionResult:
    state: LogState
    deleted: tuple[Deletion, ...]  # in deletion order
    rolled: bool  # a new active segment was rolled because every segment went

    @property
    def count(self) -> int:
        """What UnifiedLog.deleteOldSegments returns."""
        return len(self.deleted)


def empty_log(base_offset: int = 0) -> LogState:
    return LogState((SegmentSummary(base_offset, 0, -1, base_offset),), base_offset, base_offset)


_Condition = Callable[[SegmentSummary, "SegmentSummary | None"], bool]  # (segment, next segment) -> deletable


def _prefix(state: LogState, deletable: _Condition) -> list[SegmentSummary]:
    """UnifiedLog.deletableSegments: the oldest segments while `deletable(segment, next)` holds and each ends at or
    below the high watermark; an empty last segment never goes."""
    out: list[SegmentSummary] = []
    segs = state.segments
    for i, seg in enumerate(segs):
        nxt = segs[i + 1] if i + 1 < len(segs) else None
        upper = nxt.base_offset if nxt is not None else state.log_end_offset
        # Kafka asks the condition first and then refuses an empty last segment; asking in the other order is the
        # same (no condition changes anything for an empty segment) and spares judging a segment without data.
        if nxt is None and seg.size == 0:
            break
        if not (state.high_watermark >= upper and deletable(seg, nxt)):
            break
        out.append(seg)
    return out


def _delete(state: LogState, deletable: list[SegmentSummary]) -> tuple[LogState, bool]:
    """UnifiedLog.deleteSegments: roll first when every segment goes, then move the log start offset up to the
    next remaining segment and drop the deleted ones."""
    segs = list(state.segments)
    rolled = False
    to_delete = deletable
    if len(segs) == len(deletable):
        before = len(segs)
        segs = list(roll(state).segments)
        rolled = len(segs) > before
        if deletable[-1].base_offset == segs[-1].base_offset:  # an empty active segment recreated: keep the new one
            to_delete = deletable[:-1]
    if not to_delete:
        return replace(state, segments=tuple(segs)), rolled
    gone = {s.base_offset for s in to_delete}
    remaining = tuple(s for s in segs if s.base_offset not in gone)
    lso = max(state.log_start_offset, remaining[0].base_offset)
    return LogState(remaining, lso, state.high_watermark), rolled


def retention_pass(state: LogState, config: RetentionConfig, now: int) -> RetentionResult:
    """One UnifiedLog.deleteOldSegments() at clock `now` (ms)."""
    deleted: list[Deletion] = []
    rolled = False

    def run(reason: str, deletable: _Condition) -> None:
        nonlocal state, rolled
        segs = _prefix(state, deletable)
        if segs:
            state, r = _delete(state, segs)
            rolled = rolled or r
            deleted.extend(Deletion(s, reason) for s in segs)

    run("log-start-offset", lambda seg, nxt: nxt is not None and nxt.base_offset <= state.log_start_offset)
    if not config.delete:
        return RetentionResult(state, tuple(deleted), rolled)
    if config.retention_bytes >= 0 and state.size >= config.retention_bytes:
        left = [state.size - config.retention_bytes]

        def fits(seg: SegmentSummary, nxt: SegmentSummary | None) -> bool:
            if left[0] - seg.size >= 0:
                left[0] -= seg.size
                return True
            return False

        run("retention-size", fits)
    if config.retention_ms >= 0:
        run("retention-ms", lambda seg, nxt: _wrap(now - seg.retention_timestamp()) > config.retention_ms)
    return RetentionResult(state, tuple(deleted), rolled)


def update_high_watermark(state: LogState, offset: int) -> LogState:
    """UnifiedLog.updateHighWatermark: bounded below by the log start offset and above by the log end offset."""
    hw = state.log_start_offset if offset < state.log_start_offset else min(offset, state.log_end_offset)
    return replace(state, high_watermark=hw)


def delete_records(state: LogState, offset: int) -> tuple[LogState, bool]:
    """UnifiedLog.maybeIncrementLogStartOffset (DeleteRecords): refused above the high watermark, a no-op unless it
    moves the log start offset forward. Segments go at the next retention run."""
    if offset > state.high_watermark:
        raise OffsetOutOfRange(f"Cannot increment the log start offset to {offset} above the high watermark "
                               f"{state.high_watermark}")
    if offset <= state.log_start_offset:
        return state, False
    return replace(state, log_start_offset=offset), True


def _varint_size(n: int) -> int:
    """ByteUtils.sizeOfVarlong of a zigzag-encoded long."""
    z = ((n << 1) ^ (n >> 63)) & (_LONG - 1)
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size


def batch_size(timestamps: Sequence[int], value_bytes: int, key_bytes: int | None = None) -> int:
    """Bytes of one uncompressed magic v2 batch (DefaultRecordBatch, DefaultRecord.sizeInBytes), every record with a
    key of `key_bytes` (None: null) and a value of `value_bytes`:
    the batch header, then per record a length, attributes, timestamp and offset deltas, key and value lengths,
    the value and a header count."""
    total = _RECORD_BATCH_OVERHEAD
    base = timestamps[0]
    for i, ts in enumerate(timestamps):
        key = _varint_size(-1) if key_bytes is None else _varint_size(key_bytes) + key_bytes
        body = 1 + _varint_size(ts - base) + _varint_size(i) + key + _varint_size(value_bytes) + value_bytes \
            + _varint_size(0)
        total += _varint_size(body) + body
    return total


def append(state: LogState, timestamps: Sequence[int], value_bytes: int, clock: int,
           log_append_time: bool = False, key_bytes: int | None = None) -> LogState:
    """UnifiedLog.appendAsLeader of one batch (one record per timestamp, -1 for none) into the active segment. With
    LogAppendTime the batch's max timestamp is the clock at the append; the high watermark does not move; the
    segment file's modification time becomes the clock."""
    if not timestamps:
        raise ValueError("a batch holds at least one record")
    active = state.segments[-1]
    largest = clock if log_append_time else max(timestamps)
    grown = SegmentSummary(active.base_offset, active.size + batch_size(timestamps, value_bytes, key_bytes),
                           max(active.largest_timestamp, largest), active.next_offset + len(timestamps), clock)
    return replace(state, segments=(*state.segments[:-1], grown))


def roll(state: LogState) -> LogState:
    """LocalLog.roll: a new empty active segment at the log end offset; an empty active segment is recreated in
    place instead (the log keeps one segment per base offset)."""
    active = state.segments[-1]
    if active.size == 0 and active.base_offset == state.log_end_offset:
        return state
    leo = state.log_end_offset
    return replace(state, segments=(*state.segments, SegmentSummary(leo, 0, -1, leo)))


def set_last_modified(state: LogState, ms: int) -> LogState:
    """LogSegment.setLastModified on every segment (what a `touch` of the log directory does)."""
    return replace(state, segments=tuple(replace(s, last_modified=ms) for s in state.segments))


def to_log_view(state: LogState, partition: str = "t-0") -> LogView:
    """The storage invariants' view of this log: a placeholder record (null key, empty value) per offset."""

    segments = tuple(
        LogSegmentView(s.base_offset, tuple(LogRecord(o, None, "") for o in range(s.base_offset, s.next_offset)),
                       size_bytes=s.size)
        for s in state.segments)
    return LogView(partition, segments, state.log_start_offset, state.high_watermark)
