"""The log-storage invariants (invariants/log_storage.py): for each, a log that breaks it is caught and one that
does not is left alone."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kcheck.invariants.log_storage import (
    LogRecord,
    LogSegmentView,
    LogView,
    check_compaction,
    check_log,
    check_retention,
    log_end_offset,
)
from kcheck.invariants.registry import invariants_for


def rec(offset: int, key: str | None = "k", value: str | None = "v", ts: int = -1, size: int = 0) -> LogRecord:
    return LogRecord(offset, key, value, ts, size)


def seg(base: int, *recs: LogRecord, **kw: object) -> LogSegmentView:
    return LogSegmentView(base, tuple(recs), **kw)  # type: ignore[arg-type]


def view(*segs: LogSegmentView, start: int | None = None, hw: int | None = None) -> LogView:
    return LogView("t-0", tuple(segs), segs[0].base_offset if start is None and segs else (start or 0), hw)


def ids(v: LogView) -> set[str]:
    return {x.invariant for x in check_log(v).violations}


# A well-formed log: two segments of 10-byte single-record batches, indexes every other batch, HW inside.
GOOD = view(
    seg(0, rec(0, "a", "1", 100, 10), rec(1, "b", "1", 105, 10), rec(2, "a", "2", 110, 10), size_bytes=30,
        offset_index=((0, 0), (2, 20)), time_index=((100, 0), (110, 2)), positions=(0, 10, 20)),
    seg(3, rec(3, "b", None, 120, 10), rec(5, "c", "1", 130, 10), size_bytes=20, offset_index=((5, 10),),
        time_index=((130, 5),), positions=(0, 10)),
    start=0, hw=4)


def test_every_log_invariant_is_registered_and_a_good_log_passes() -> None:
    assert {i.id for i in invariants_for("log")} == {
        "log.offsets-increasing", "log.segment-bounds", "log.start-offset-in-log", "log.high-watermark-in-log",
        "log.offset-index", "log.time-index", "log.sizes"}
    report = check_log(GOOD)
    assert report.ok and not report.violations and not report.skipped
    assert log_end_offset(GOOD) == 6


def _with_segment(i: int, v: LogView = GOOD, **changes: Any) -> LogView:
    segs = list(v.segments)
    segs[i] = replace(segs[i], **changes)
    return replace(v, segments=tuple(segs))


@pytest.mark.parametrize(("broken", "expected"), [
    # a reused offset across segments (second segment's first record is offset 2 again)
    (view(seg(0, rec(0), rec(2)), seg(2, rec(2)), start=0), {"log.offsets-increasing", "log.segment-bounds"}),
    # out of order within a segment (and no more than that)
    (view(seg(0, rec(1), rec(0))), {"log.offsets-increasing"}),
    # a record past the next segment's base
    (view(seg(0, rec(0), rec(3)), seg(3, rec(4))), {"log.segment-bounds"}),
    # a record below its segment's base
    (view(seg(0, rec(0)), seg(5, rec(4))), {"log.segment-bounds"}),
    # base offsets not increasing
    (view(seg(4), seg(4, rec(4))), {"log.segment-bounds"}),
    # a relative offset that does not fit 4 bytes
    (view(seg(0, rec(0), rec(2**31))), {"log.segment-bounds"}),
    # no segment at all
    (LogView("t-0", (), 0), {"log.segment-bounds"}),
    # log start offset below the first segment
    (view(seg(3, rec(3)), start=2), {"log.start-offset-in-log"}),
    # log start offset past the log end
    (view(seg(0, rec(0)), start=2), {"log.start-offset-in-log"}),
    # high watermark above the log end, and below the log start
    (view(seg(0, rec(0)), hw=2), {"log.high-watermark-in-log"}),
    (view(seg(0, rec(0), rec(1)), start=1, hw=0), {"log.high-watermark-in-log"}),
])
def test_structural_breaks_are_caught(broken: LogView, expected: set[str]) -> None:
    assert ids(broken) == expected


def test_log_start_and_high_watermark_at_their_bounds_are_fine() -> None:
    assert not ids(view(seg(0, rec(0), rec(1)), start=2, hw=2))  # everything below the start: start = HW = LEO
    assert not ids(view(seg(0, rec(0)), seg(1), start=1, hw=1))  # an empty active segment
    assert check_log(view(seg(0, rec(0)))).skipped == {"log.high-watermark-in-log": "the high watermark is not known"}


@pytest.mark.parametrize("index", [
    ((2, 20), (0, 0)),  # not increasing
    ((0, 0), (2, 0)),  # position not increasing
    ((0, 0), (3, 20)),  # past the segment's last offset (an index not rebuilt after a truncation)
    ((0, 0), (2, 30)),  # past the segment's bytes
    ((0, 0), (1, 20)),  # lands past its target: offset 1's batch starts at 10
    ((0, 0), (2, 15)),  # not at a batch's start
])
def test_offset_index_breaks_are_caught(index: tuple[tuple[int, int], ...]) -> None:
    assert ids(_with_segment(0, offset_index=index)) == {"log.offset-index"}


def test_offset_index_entry_before_its_target_is_fine() -> None:
    assert not ids(_with_segment(0, offset_index=((1, 0), (2, 10))))  # sparse and early: a longer scan, no harm


def test_index_entries_of_an_empty_last_batch_in_a_sealed_segment_are_fine() -> None:
    # segment 0 ends with an empty batch at offset 2 (its record compacted away, the batch kept: KAFKA-17076)
    sealed = seg(0, rec(0, ts=1), rec(1, ts=2), offset_index=((2, 20),), time_index=((3, 2),))
    assert not ids(view(sealed, seg(3, rec(3)), start=0))
    # but not at or past the next segment's base, and in the active segment not past its last record
    assert ids(view(replace(sealed, offset_index=((3, 20),)), seg(3, rec(3)), start=0)) == {"log.offset-index"}
    assert ids(view(replace(sealed, time_index=((3, 3),)), seg(3, rec(3)), start=0)) == {"log.time-index"}
    assert ids(view(sealed)) == {"log.offset-index", "log.time-index"}


@pytest.mark.parametrize("index", [
    ((110, 2), (100, 0)),  # timestamps not increasing
    ((100, 2), (110, 1)),  # offsets going back
    ((100, 0), (120, 3)),  # past the segment's last offset
    ((105, 2),),  # lands past: record 1 of an earlier batch has timestamp 105 (a lookup for 105 starts at 2)
])
def test_time_index_breaks_are_caught(index: tuple[tuple[int, int], ...]) -> None:
    assert ids(_with_segment(0, time_index=index)) == {"log.time-index"}


def test_time_index_without_positions_allows_a_shared_batch() -> None:
    # One batch of three records (positions unknown): the entry (110, 2) is the batch's last offset; record 1 at
    # timestamp 110 shares it. Only a record older than the entry's offset with a larger timestamp is a break.
    s = seg(0, rec(0, ts=100), rec(1, ts=110), rec(2, ts=105), time_index=((110, 2),))
    assert not ids(view(s))
    assert ids(view(replace(s, time_index=((108, 2),)))) == {"log.time-index"}


def test_time_index_entry_naming_a_cleaned_batchs_last_offset() -> None:
    # A cleaned segment: batch 0..1 kept only offset 0 (offset 1, an older k1, went), batch 2 holds the latest k1; all
    # at timestamp 0. Kafka's time index keeps (0, 1): the batch's last offset, which no record now shows. A lookup
    # of timestamp 0 reads from batch 0..1, so nothing lands past its target (LogSegment.append writes the entry
    # for the batch's last offset; TimeIndex.lookup answers it; the cleaner rewrites batches keeping their bounds).
    cleaned = seg(0, rec(0, "k0", ts=0, size=70), rec(2, "k1", ts=0, size=70), size_bytes=140,
                  time_index=((0, 1),), positions=(0, 70))
    assert "log.time-index" not in ids(view(cleaned))
    # An entry naming the second batch for timestamp 0 skips batch 0..1, which holds timestamp 0: a break.
    assert "log.time-index" in ids(view(replace(cleaned, time_index=((0, 2),))))


@pytest.mark.parametrize("changes", [
    {"size_bytes": 40},  # records add up to 30
    {"positions": (0, 10)},  # two positions for three records
    {"positions": (5, 10, 20), "offset_index": ()},  # first batch not at 0
    {"positions": (0, 20, 10), "offset_index": ()},  # going back
    {"positions": (0, 15, 25), "offset_index": (), "size_bytes": 35},  # the gap 10..15 is unaccounted for
])
def test_size_breaks_are_caught(changes: dict[str, Any]) -> None:
    assert "log.sizes" in ids(_with_segment(0, **changes))


def test_sizes_of_a_multi_record_batch_add_up() -> None:
    # batch of offsets 0-1 at 0 (30 bytes split 15/15), batch of offset 2 at 30 (10 bytes)
    s = seg(0, rec(0, size=15), rec(1, size=15), rec(2, size=10), size_bytes=40, positions=(0, 0, 30))
    assert not ids(view(s))
    assert ids(view(replace(s, size_bytes=41))) == {"log.sizes"}
    # a segment holding only an empty batch the cleaner kept (KAFKA-17076): bytes, no record, nothing to add up
    assert not ids(view(seg(0, rec(0)), seg(1, size_bytes=61), seg(2), start=0))


# ---- compaction -----------------------------------------------------------------------------------------------

BEFORE = view(seg(0, rec(0, "a", "1", 0), rec(1, "b", "1", 0), rec(2, "a", "2", 0), rec(3, "b", None, 10)),
              seg(4, rec(4, "a", "3", 20)), start=0, hw=5)


def cids(after: LogView, **kw: int) -> set[str]:
    return {v.invariant for v in check_compaction(BEFORE, after, **kw)}


def test_a_correct_cleaning_is_clean() -> None:
    cleaned = view(seg(0, rec(2, "a", "2", 0), rec(3, "b", None, 10)), BEFORE.segments[1], start=0, hw=5)
    assert not cids(cleaned)
    assert not cids(BEFORE)  # doing nothing is allowed
    # without a clock any latest tombstone may go
    gone = view(seg(0, rec(2, "a", "2", 0)), BEFORE.segments[1], start=0, hw=5)
    assert not cids(gone)


def _stamped(horizon: int | None) -> LogView:
    """BEFORE with b's tombstone (timestamp 10) carrying `horizon` as its batch's delete horizon."""
    first = BEFORE.segments[0]
    tomb = replace(first.records[3], delete_horizon=horizon)
    return replace(BEFORE, segments=(replace(first, records=first.records[:3] + (tomb,)), BEFORE.segments[1]))


def test_a_tombstone_goes_only_after_the_delete_horizon_an_earlier_pass_stamped() -> None:
    # KIP-534 (LogCleaner's shouldRetainRecord, Kafka 3.1+): the pass that first keeps a tombstone stamps its batch
    # with now + delete.retention.ms; a later pass drops it once its clock reaches that horizon, not before.
    gone = view(seg(0, rec(2, "a", "2", 0)), BEFORE.segments[1], start=0, hw=5)
    assert not check_compaction(_stamped(500), gone, now_ms=500)
    assert not check_compaction(_stamped(500), gone, now_ms=501)
    (early,) = check_compaction(_stamped(500), gone, now_ms=499)
    assert early.invariant == "log.compaction-keeps-latest" and early.detail["delete_horizon"] == 500
    # a tombstone whose batch carries no horizon yet is kept by this pass however old its timestamp (10): the
    # timestamp rule (now - timestamp >= delete.retention.ms) would let it go at 10_000, Kafka does not
    (unstamped,) = check_compaction(_stamped(None), gone, now_ms=10_000)
    assert unstamped.invariant == "log.compaction-keeps-latest" and "no earlier pass" in unstamped.message
    # and a young tombstone whose horizon has passed may go (the horizon, not the timestamp, decides)
    young = replace(BEFORE.segments[0].records[3], timestamp=9_000, delete_horizon=600)
    before = replace(BEFORE, segments=(replace(BEFORE.segments[0], records=BEFORE.segments[0].records[:3] + (young,)),
                                       BEFORE.segments[1]))
    assert not check_compaction(before, gone, now_ms=600)


def test_compaction_breaks_are_caught() -> None:
    active = BEFORE.segments[1]
    # the latest value of a key removed (here b's tombstone's predecessor is fine, a's latest in the active segment)
    assert cids(view(seg(0, rec(2, "a", "2", 0), rec(3, "b", None, 10)), seg(4), start=0, hw=5)) == {
        "log.compaction-keeps-latest", "log.compaction-below-uncleanable"}
    # a record moved to another offset
    assert cids(view(seg(0, rec(1, "a", "2", 0), rec(3, "b", None, 10)), active, start=0, hw=5)) == {
        "log.compaction-only-removes"}
    # an older duplicate above the high watermark removed (HW 2: offset 2 is not yet committed... a's older
    # value at 2 is uncleanable)
    hw2 = replace(BEFORE, high_watermark=2)
    out = {v.invariant for v in check_compaction(hw2, view(seg(0, rec(3, "b", None, 10)), active, start=0, hw=2))}
    assert out == {"log.compaction-below-uncleanable"}


def test_compaction_ignores_records_appended_meanwhile() -> None:
    # a's latest (4) was superseded by an append at 5 during the run: removing 4 would be wrong only in a cleaner
    # that cleans the active segment; records at 5 are not judged
    after = view(seg(0, rec(2, "a", "2", 0), rec(3, "b", None, 10)), seg(4, rec(4, "a", "3", 20),
                                                                       rec(5, "z", "9", 30)), start=0, hw=5)
    assert not cids(after)


# ---- retention ------------------------------------------------------------------------------------------------

OLD = view(seg(0, rec(0), rec(1)), seg(2, rec(2), rec(3)), seg(4, rec(4)), start=0, hw=4)


def rids(after: LogView, before: LogView = OLD) -> set[str]:
    return {v.invariant for v in check_retention(before, after)}


def test_a_correct_retention_run_is_clean() -> None:
    assert not rids(view(*OLD.segments[1:], start=2, hw=4))
    assert not rids(view(OLD.segments[2], start=4, hw=4))
    # everything below a HW at the log end: Kafka rolls first, then deletes the old active segment too
    full = replace(OLD, high_watermark=5)
    assert not rids(view(seg(5), start=5, hw=5), full)
    assert not rids(OLD)


def test_retention_breaks_are_caught() -> None:
    # the active segment deleted with data above the HW
    assert rids(view(seg(5), start=5, hw=5)) == {"log.retention-below-hw"}
    # a segment ending above the HW (HW 3 < next base 4)
    assert rids(view(OLD.segments[2], start=4, hw=3), replace(OLD, high_watermark=3)) == {"log.retention-below-hw"}
    # not a prefix: the middle segment deleted
    assert rids(view(OLD.segments[0], OLD.segments[2], start=0, hw=4)) == {"log.retention-prefix"}
    # a kept segment changed
    assert rids(view(seg(2, rec(3)), OLD.segments[2], start=2, hw=4)) == {"log.retention-prefix"}
    # the active segment deleted without a roll (and, with the HW unknown, nothing else judged)
    single = view(seg(0, rec(0)), start=0)
    assert rids(LogView("t-0", (), 1), single) == {"log.retention-active-segment"}
    assert not rids(view(seg(1), start=1), single)
    # the log start offset going back, or not covering what was deleted
    assert rids(view(*OLD.segments[1:], start=1, hw=4), replace(OLD, log_start_offset=2)) == {
        "log.retention-start-offset"}
    assert rids(view(*OLD.segments[1:], start=0, hw=4)) == {"log.retention-start-offset"}


# ---- the index checks' bisection agrees with a plain scan ------------------------------------------------------


def test_index_checks_by_bisection_match_the_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    # log.offset-index and log.time-index find a target's batch by bisection over the sorted offsets and skip the
    # record scan when prefix maxima show no record breaks the entry; with the sortedness flag forced off they scan
    # every record as before. Both must report the same violations on random logs, broken entries included.
    import random

    from kcheck.invariants import log_storage

    class Unsorted(log_storage._Sorted):
        def __init__(self, seg: LogSegmentView) -> None:
            super().__init__(seg)
            self.ok = False

    rng = random.Random(7)
    views = []
    for _ in range(300):
        n = rng.randint(1, 12)
        offsets = sorted(rng.sample(range(40), n))
        positions, pos = [], 0
        for i in range(n):
            if i and rng.random() < 0.6:
                pos += 10
            positions.append(pos)
        recs = [rec(o, "k", "v", rng.choice([-1, *range(0, 30)]), 0) for o in offsets]
        oi = tuple(sorted({(rng.randint(0, 45), rng.choice(positions) + rng.choice([0, 0, 5])) for _ in range(3)}))
        ti = tuple(sorted({(rng.randint(0, 30), rng.randint(0, 45)) for _ in range(3)}))
        views.append(view(seg(0, *recs, size_bytes=pos + 10, offset_index=oi, time_index=ti,
                              positions=tuple(positions))))

    def verdicts() -> list[list[tuple[str, str]]]:
        return [[(v.invariant, v.message) for v in check_log(x, {"log.offset-index", "log.time-index"}).violations]
                for x in views]

    fast = verdicts()
    monkeypatch.setattr(log_storage, "_Sorted", Unsorted)
    assert verdicts() == fast
    assert sum(map(bool, fast)) > 50  # plenty of broken entries compared, not only clean ones
