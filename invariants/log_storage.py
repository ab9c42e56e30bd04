"""Log-storage invariants: one partition's log as segments, indexes and offsets.

A `LogView` is what kcheck knows of one partition's log: its segments (oldest first, the last one active), each
with its records and, where known, its size, its sparse offset and time indexes and each record's batch position.
It is built from Kafka's own output (`kafka-dump-log.sh`), from the storage reference and from the storage model
(`model/storage`). The registered `log.*` checks (applies_to="log", `check_log(view)`) read only the view; the
transition properties of a cleaner run and a retention run compare two views (`check_compaction`,
`check_retention`).

Sources (Kafka 4.x): `LogSegment.append` writes an offset-index entry (the appended batch's last offset, the batch's
file position) and a time-index entry (the largest timestamp so far, the last offset of the earliest batch holding
it) every index.interval.bytes; `OffsetIndex.append` refuses an offset not above the last, `TimeIndex.maybeAppend`
an offset or timestamp below the last and only adds a strictly larger timestamp; `OffsetIndex.lookup` answers the
largest entry at or below the target, and a read scans forward from its position. `UnifiedLog.append` refuses
offsets out of order (OffsetsOutOfOrderException, UnexpectedAppendOffsetException); `updateHighWatermark` bounds
the high watermark by the log start offset and the log end offset; `maybeIncrementLogStartOffset` refuses a log
start offset above the high watermark; `deletableSegments` deletes from the oldest segment while the next
segment's base offset (the log end offset for the last one) is at or below the high watermark, and
`deleteSegments` rolls a new active segment first when every segment goes. The cleaner (`LogCleaner`,
`LogCleanerManager.cleanableOffsets`) cleans only below the first uncleanable offset (the active segment's base,
the last stable offset, min.compaction.lag.ms), keeps each key's latest record at its offset, and drops a
tombstone only after delete.retention.ms (KIP-534: the delete horizon stamped on its batch by an earlier pass).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from kcheck.invariants.registry import Report, Severity, Violation, check_all, register
from kcheck.model.log_view import INT_MAX, LogRecord, LogSegmentView, LogView, log_end_offset, records


def check_log(view: LogView, only: set[str] | None = None) -> Report:
    return check_all(view, "log", only)


def _where(view: LogView, seg: LogSegmentView | None = None, offset: int | None = None) -> str:
    out = f"partition {view.partition}"
    if seg is not None:
        out += f" segment {seg.base_offset}"
    if offset is not None:
        out += f" offset {offset}"
    return out


def _v(id: str, view: LogView, message: str, seg: LogSegmentView | None = None, offset: int | None = None,
       **detail: object) -> Violation:
    return Violation(id, Severity.HARD, _where(view, seg, offset), message, detail)


# ---- state invariants of one log --------------------------------------------------------------------------------

_SRC_APPEND = "UnifiedLog.append (OffsetsOutOfOrderException, UnexpectedAppendOffsetException)"


@register("log.offsets-increasing", "Offsets strictly increase across the whole log: none is ever reused",
          Severity.HARD, _SRC_APPEND, "log")
def offsets_increasing(view: LogView) -> list[Violation]:
    out: list[Violation] = []
    prev: int | None = None
    for seg in view.segments:
        for r in seg.records:
            if prev is not None and r.offset <= prev:
                what = "repeats" if r.offset == prev else "goes back from"
                out.append(_v("log.offsets-increasing", view, f"offset {r.offset} {what} offset {prev}", seg,
                              r.offset, previous=prev))
            prev = r.offset
    return out


@register("log.segment-bounds",
          "The log has an active segment; base offsets strictly increase; each segment's records lie in "
          "[its base offset, the next segment's base offset) and within 2^31-1 of its base",
          Severity.HARD, "LogSegments (segments keyed by base offset); LogSegment.ensureOffsetInRange", "log")
def segment_bounds(view: LogView) -> list[Violation]:
    id = "log.segment-bounds"
    if not view.segments:
        return [_v(id, view, "no segment: a Kafka log always has an active segment (UnifiedLog.deleteSegments "
                             "rolls one before deleting the last)")]
    out: list[Violation] = []
    for i, seg in enumerate(view.segments):
        nxt = view.segments[i + 1].base_offset if i + 1 < len(view.segments) else None
        if nxt is not None and nxt <= seg.base_offset:
            out.append(_v(id, view, f"next segment's base offset {nxt} is not above this one's", seg, next_base=nxt))
        for r in seg.records:
            if r.offset < seg.base_offset:
                out.append(_v(id, view, f"record below the segment's base offset {seg.base_offset}", seg, r.offset))
            elif nxt is not None and r.offset >= nxt:
                out.append(_v(id, view, f"record at or above the next segment's base offset {nxt}", seg, r.offset))
            elif r.offset - seg.base_offset > INT_MAX:
                out.append(_v(id, view, "relative offset does not fit a 4-byte index entry", seg, r.offset))
    return out


@register("log.start-offset-in-log",
          "The log start offset is at or above the first segment's base offset and at or below the log end offset",
          Severity.HARD, "UnifiedLog.maybeIncrementLogStartOffset, UnifiedLog.deleteSegments", "log")
def start_offset_in_log(view: LogView) -> list[Violation]:
    if not view.segments:
        return []  # log.segment-bounds says it
    first, leo = view.segments[0].base_offset, log_end_offset(view)
    if view.log_start_offset < first:
        return [_v("log.start-offset-in-log", view, f"log start offset {view.log_start_offset} is below the first "
                   f"segment's base offset {first}", log_start_offset=view.log_start_offset, first_base=first)]
    if view.log_start_offset > leo:
        return [_v("log.start-offset-in-log", view, f"log start offset {view.log_start_offset} is past the log end "
                   f"offset {leo}", log_start_offset=view.log_start_offset, log_end_offset=leo)]
    return []


@register("log.high-watermark-in-log", "The log start offset <= the high watermark <= the log end offset",
          Severity.HARD, "UnifiedLog.updateHighWatermark", "log",
          lambda view: None if view.high_watermark is not None else "the high watermark is not known")
def high_watermark_in_log(view: LogView) -> list[Violation]:
    hw, leo = view.high_watermark, log_end_offset(view)
    assert hw is not None
    if hw < view.log_start_offset or hw > leo:
        return [_v("log.high-watermark-in-log", view, f"high watermark {hw} is outside [log start offset "
                   f"{view.log_start_offset}, log end offset {leo}]", high_watermark=hw, log_end_offset=leo)]
    return []


class _Sorted:
    """A segment's record offsets and batch positions as lists, for bisection: an index check then costs
    O(entries x log records) instead of O(entries x records). `ok` is False when the offsets do not strictly
    increase or the positions go back (log.offsets-increasing and log.sizes say so); the checks then scan."""

    def __init__(self, seg: LogSegmentView) -> None:
        self.offsets = [r.offset for r in seg.records]
        self.positions = list(seg.positions) if len(seg.positions) == len(seg.records) else []
        self.ok = (all(a < b for a, b in zip(self.offsets, self.offsets[1:], strict=False))
                   and all(a <= b for a, b in zip(self.positions, self.positions[1:], strict=False)))
        self.position_set = set(self.positions)
        # the largest known timestamp among records [0, i), -1 when none is known
        self.max_ts = [-1]
        for r in seg.records:
            self.max_ts.append(max(self.max_ts[-1], r.timestamp))

    def below(self, offset: int) -> int:
        """How many records lie below `offset` (sorted offsets only)."""
        return bisect_left(self.offsets, offset)


def _batch_position(seg: LogSegmentView, offset: int, sorted_: _Sorted | None = None) -> int | None:
    """The file position of the batch holding the first record at or above `offset` (None: past the data)."""
    if sorted_ is not None and sorted_.ok and sorted_.positions:
        i = sorted_.below(offset)
        return sorted_.positions[i] if i < len(sorted_.positions) else None
    for r, p in zip(seg.records, seg.positions, strict=False):
        if r.offset >= offset:
            return p
    return None


def _entry_batch_position(seg: LogSegmentView, offset: int, sorted_: _Sorted | None = None) -> int | None:
    """The file position of the batch a time-index entry names: the batch of the last record at or below its
    offset (None: no record there). The entry holds its batch's last offset, which after cleaning may be a record
    the cleaner removed while it kept the batch's earlier ones (LogCleaner keeps a batch's base and last offsets
    only in its header)."""
    if sorted_ is not None and sorted_.ok and sorted_.positions:
        i = bisect_right(sorted_.offsets, offset) - 1
        return sorted_.positions[i] if i >= 0 else None
    at = None
    for r, p in zip(seg.records, seg.positions, strict=False):
        if r.offset > offset:
            break
        at = p
    return at


def _last_offset(seg: LogSegmentView) -> int | None:
    return seg.records[-1].offset if seg.records else None


def _index_bound(view: LogView, i: int) -> tuple[int | None, str]:
    """The largest offset an index entry of segment i may name, and how to say it: below the next segment's base
    for a sealed segment (the cleaner may keep an empty last batch there, KAFKA-17076, whose offsets no record
    shows), the last record's offset for the active segment."""
    seg = view.segments[i]
    if i + 1 < len(view.segments):
        nxt = view.segments[i + 1].base_offset
        return nxt - 1, f"the next segment's base offset {nxt}"
    last = _last_offset(seg)
    return last, f"the segment's last offset {last}"


@register("log.offset-index",
          "Offset-index entries strictly increase in offset and position, lie within the segment's data, and a "
          "lookup never lands past its target (an entry's position is at or before the batch of its offset)",
          Severity.HARD, "LogSegment.append, OffsetIndex.append/lookup/sanityCheck", "log")
def offset_index(view: LogView) -> list[Violation]:
    id, out = "log.offset-index", []
    for i, seg in enumerate(view.segments):
        (bound, bound_text), last, prev = _index_bound(view, i), _last_offset(seg), None
        sorted_ = _Sorted(seg) if seg.offset_index else None
        for off, pos in seg.offset_index:
            if prev is not None and (off <= prev[0] or pos <= prev[1]):
                out.append(_v(id, view, f"entry ({off}, {pos}) does not follow entry {prev}", seg, off))
            prev = (off, pos)
            if off < seg.base_offset or off - seg.base_offset > INT_MAX:
                out.append(_v(id, view, f"entry ({off}, {pos}) is outside the segment's offset range", seg, off))
            elif bound is None or off > bound:
                out.append(_v(id, view, f"entry ({off}, {pos}) points past {bound_text}", seg, off, bound=bound))
            elif seg.size_bytes is not None and pos >= seg.size_bytes:
                out.append(_v(id, view, f"entry ({off}, {pos}) points past the segment's {seg.size_bytes} bytes",
                              seg, off))
            elif len(seg.positions) == len(seg.records) and seg.positions and last is not None and off <= last:
                at = _batch_position(seg, off, sorted_)
                if at is not None and pos > at:
                    out.append(_v(id, view, f"entry ({off}, {pos}) lands past its target: the batch of offset "
                                  f"{off} starts at position {at}", seg, off, target_position=at))
                elif sorted_ is not None and pos not in sorted_.position_set:
                    out.append(_v(id, view, f"entry ({off}, {pos}) is not at a batch's start", seg, off))
    return out


@register("log.time-index",
          "Time-index entries strictly increase in timestamp and never decrease in offset, lie within the "
          "segment's data, and a lookup never lands past its target (no earlier batch holds a timestamp at or "
          "above the entry's)",
          Severity.HARD, "LogSegment.append, TimeIndex.maybeAppend/sanityCheck", "log")
def time_index(view: LogView) -> list[Violation]:
    id, out = "log.time-index", []
    for i, seg in enumerate(view.segments):
        (bound, bound_text), prev = _index_bound(view, i), None
        batches = len(seg.positions) == len(seg.records) and bool(seg.positions)
        sorted_ = _Sorted(seg) if seg.time_index else None
        for ts, off in seg.time_index:
            if prev is not None and (ts <= prev[0] or off < prev[1]):
                out.append(_v(id, view, f"entry ({ts}, {off}) does not follow entry {prev}", seg, off))
            prev = (ts, off)
            if off < seg.base_offset or off - seg.base_offset > INT_MAX:
                out.append(_v(id, view, f"entry ({ts}, {off}) is outside the segment's offset range", seg, off))
                continue
            if bound is None or off > bound:
                out.append(_v(id, view, f"entry ({ts}, {off}) points past {bound_text}", seg, off, bound=bound))
                continue
            # With batch positions: every record of an earlier batch is older than the entry's timestamp; without
            # them, every record below the entry's offset is at most that old (it may share the entry's batch).
            at = _entry_batch_position(seg, off, sorted_) if batches else None
            if sorted_ is not None and sorted_.ok:
                # records below the entry's offset are a prefix; so are those of earlier batches (positions sorted)
                n = sorted_.below(off)
                n_earlier = min(n, bisect_left(sorted_.positions, at)) if at is not None else 0
                if sorted_.max_ts[n] <= ts and sorted_.max_ts[n_earlier] < ts:
                    continue  # no record breaks it: skip the scan that finds the first one
            for j, r in enumerate(seg.records):
                if r.offset >= off or r.timestamp < 0:
                    continue
                earlier = at is not None and seg.positions[j] < at
                if r.timestamp > ts or (earlier and r.timestamp == ts):
                    out.append(_v(id, view, f"entry ({ts}, {off}) lands past its target: record {r.offset} "
                                  f"has timestamp {r.timestamp}", seg, off, record=r.offset, timestamp=r.timestamp))
                    break
    return out


@register("log.sizes",
          "Batch positions start at 0 and increase within the segment's size; where every record's size is known "
          "they add up to the segment's size and to the next batch's position",
          Severity.HARD, "LogSegment.append (position = bytes already in the file), FileRecords.sizeInBytes", "log")
def sizes(view: LogView) -> list[Violation]:
    id, out = "log.sizes", []
    for seg in view.segments:
        known = bool(seg.records) and all(r.size > 0 for r in seg.records)
        if seg.positions:
            if len(seg.positions) != len(seg.records):
                out.append(_v(id, view, f"{len(seg.positions)} positions for {len(seg.records)} records", seg))
                continue
            if seg.positions[0] != 0:
                out.append(_v(id, view, f"the first batch is at position {seg.positions[0]}, not 0", seg))
            start, used = 0, 0  # the current batch's position and the bytes of the records seen in it
            for i, (r, p) in enumerate(zip(seg.records, seg.positions, strict=True)):
                if i and p < seg.positions[i - 1]:
                    out.append(_v(id, view, f"position {p} is before the previous batch's {seg.positions[i - 1]}",
                                  seg, r.offset))
                elif i and p != start:
                    if known and p != start + used:
                        out.append(_v(id, view, f"batch at {p} does not follow the previous batch at {start} of "
                                      f"{used} bytes", seg, r.offset, expected=start + used))
                    start, used = p, 0
                used += r.size
                if seg.size_bytes is not None and p >= seg.size_bytes:
                    out.append(_v(id, view, f"position {p} is past the segment's {seg.size_bytes} bytes", seg,
                                  r.offset))
        if known and seg.size_bytes is not None:
            total = sum(r.size for r in seg.records)
            if total != seg.size_bytes:
                out.append(_v(id, view, f"records take {total} bytes, the segment has {seg.size_bytes}", seg,
                              records_bytes=total, size_bytes=seg.size_bytes))
    return out


# ---- transition properties: a cleaner run and a retention run ---------------------------------------------------


def _by_offset(view: LogView) -> dict[int, LogRecord]:
    return {r.offset: r for r in records(view)}


def _same(a: LogRecord, b: LogRecord) -> bool:
    return (a.key, a.value, a.timestamp) == (b.key, b.value, b.timestamp)


def check_compaction(before: LogView, after: LogView, now_ms: int | None = None) -> list[Violation]:
    """What a cleaner run at `now_ms` may do to a log (LogCleaner, LogCleanerManager.cleanableOffsets; KIP-534):

    - `log.compaction-keeps-latest`: every key's latest record is still there at its original offset, unchanged;
      a tombstone may go only once its delete horizon has passed. Since KIP-534 (Kafka 3.1, record format v2) a
      tombstone's age is not its timestamp: the first cleaning pass that keeps it stamps its batch with
      now + delete.retention.ms, and a later pass drops it only when that horizon is at or below its clock
      (LogCleaner's shouldRetainRecord: retained while the batch has no delete horizon or the clock is below it).
      So with `now_ms` a latest tombstone may go only when `before` shows a horizon on it (`LogRecord
      .delete_horizon`) at or below `now_ms`; without `now_ms` any latest tombstone may go;
    - `log.compaction-only-removes`: nothing new, nothing moved or changed: every record after is one before;
    - `log.compaction-below-uncleanable`: nothing in the active segment or at/above the high watermark is removed.
    Records appended between the two views (offsets at or above `before`'s log end) are ignored.
    """
    out: list[Violation] = []
    old, new = _by_offset(before), _by_offset(after)
    leo = log_end_offset(before)
    for off, r in new.items():
        if off < leo and (off not in old or not _same(old[off], r)):
            out.append(_v("log.compaction-only-removes", after, "record is not the one the log held before "
                          "cleaning", offset=off, key=r.key))
    latest: dict[str | None, LogRecord] = {}
    for r in records(before):
        if r.key is not None:
            latest[r.key] = r
    newer = {r.key for r in new.values() if r.offset >= leo}
    for key, r in latest.items():
        if r.offset in new or r.offset < after.log_start_offset or key in newer:
            continue
        expired = r.value is None and (now_ms is None or (r.delete_horizon is not None and r.delete_horizon <= now_ms))
        if not expired:
            if r.value is not None:
                what = "latest record removed"
            elif r.delete_horizon is None:
                what = "tombstone removed though no earlier pass stamped a delete horizon on its batch"
            else:
                what = f"tombstone removed before its delete horizon {r.delete_horizon} (the pass ran at {now_ms})"
            out.append(_v("log.compaction-keeps-latest", after, f"key {key!r}: {what}", offset=r.offset, key=key,
                          delete_horizon=r.delete_horizon))
    active = before.segments[-1].base_offset if before.segments else leo
    bound = min(active, before.high_watermark if before.high_watermark is not None else leo)
    for off, r in old.items():
        if off >= bound and off not in new and off >= after.log_start_offset:
            why = "in the active segment" if off >= active else "at or above the high watermark"
            out.append(_v("log.compaction-below-uncleanable", after, f"record {why} removed", offset=off, key=r.key,
                          uncleanable_from=bound))
    return out


def check_retention(before: LogView, after: LogView) -> list[Violation]:
    """What a retention run may do (UnifiedLog.deletableSegments, deleteSegments, maybeIncrementLogStartOffset):

    - `log.retention-prefix`: it deletes whole segments from the oldest: every segment left keeps its base offset
      and records (records appended since are ignored);
    - `log.retention-active-segment`: the active segment goes only after a roll (a segment at or past the old log
      end takes its place);
    - `log.retention-below-hw` (when the high watermark is known): every deleted segment ends (next base offset, or
      the log end) at or below the high watermark (KAFKA-5634);
    - `log.retention-start-offset`: the log start offset never goes back, and covers what was deleted.
    """
    out: list[Violation] = []
    leo = log_end_offset(before)
    old_bases = [s.base_offset for s in before.segments]
    kept = {s.base_offset: s for s in after.segments if s.base_offset < leo}
    deleted = [b for b in old_bases if b not in kept]
    if deleted and kept and min(kept) < max(deleted):
        out.append(_v("log.retention-prefix", after, f"segment {max(deleted)} deleted while the older segment "
                      f"{min(kept)} stays", deleted=max(deleted), kept=min(kept)))
    for base, seg in kept.items():
        prev = next((s for s in before.segments if s.base_offset == base), None)
        if prev is None:
            out.append(_v("log.retention-prefix", after, "segment below the old log end that was not there before",
                          seg))
        elif seg.records[:len(prev.records)] != prev.records:
            out.append(_v("log.retention-prefix", after, "segment's records changed", seg))
    if old_bases and old_bases[-1] not in kept and not any(s.base_offset >= leo for s in after.segments):
        out.append(_v("log.retention-active-segment", after, f"the active segment {old_bases[-1]} deleted without a "
                      f"new one at the log end {leo}", segment=old_bases[-1]))
    hw = before.high_watermark
    for i, base in enumerate(old_bases):
        upper = old_bases[i + 1] if i + 1 < len(old_bases) else leo
        if base not in kept and hw is not None and upper > hw:
            where = "the active segment" if i == len(old_bases) - 1 else f"segment {base}"
            out.append(_v("log.retention-below-hw", after, f"{where} deleted with data up to {upper} above the high "
                          f"watermark {hw}", segment=base, upper=upper))
    if after.log_start_offset < before.log_start_offset:
        out.append(_v("log.retention-start-offset", after, f"log start offset went back from "
                      f"{before.log_start_offset} to {after.log_start_offset}"))
    elif after.segments and after.log_start_offset < after.segments[0].base_offset:
        out.append(_v("log.retention-start-offset", after, f"log start offset {after.log_start_offset} is below the "
                      f"first kept segment {after.segments[0].base_offset}"))
    return out


__all__ = ["LogRecord", "LogSegmentView", "LogView", "check_compaction", "check_log", "check_retention",
           "log_end_offset"]
