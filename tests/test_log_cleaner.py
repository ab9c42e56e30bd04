"""The log cleaner reference (reference/log_cleaner.py) against Kafka's own cleaner test expectations.

Each test restates, in our own words and on our reference, what a test of Kafka's checks:
core/src/test/scala/unit/kafka/log/LogCleanerTest.scala and LogCleanerManagerTest.scala (named per test). The
byte-level agreement with the real classes is tests/test_kafka_cleaner.py.
"""

from __future__ import annotations

import random

from kcheck.invariants.log_storage import check_compaction
from kcheck.invariants.registry import check_all
from kcheck.reference.kafka_cleaner import random_scenario
from kcheck.reference.log_cleaner import (
    BATCH_OVERHEAD,
    Choice,
    CleanerConfig,
    CleanerLog,
    build_offset_map,
    choose,
    clean_pass,
    record_size,
    run_rounds,
    to_log_view,
)

BIG = 10**9


def _log(cfg: CleanerConfig, keys: list[str], ts: int = 0) -> CleanerLog:
    log = CleanerLog()
    for k in keys:
        log.append([(k, k, ts)], cfg)  # as Kafka's tests' record(key, value): the value repeats the key
    return log


def _offsets(log: CleanerLog) -> list[int]:
    return [r.offset for s in log.segments for b in s.batches for r in b.records]


def _keys(log: CleanerLog) -> list[str]:
    return [r.key for s in log.segments for b in s.batches for r in b.records]


def _pass(log: CleanerLog, cfg: CleanerConfig, first_dirty: int, now: int = 0) -> int:
    """A pass as Kafka's tests run one: LogToClean(log, firstDirty, active segment base)."""
    upper = log.active.base_offset
    return clean_pass(log, Choice(0, first_dirty, upper, 0, 0, False, False), cfg, now).end_offset


def test_partial_segment_clean() -> None:
    # LogCleanerTest.testPartialSegmentClean: room for one key (2 slots x 0.75), so each pass maps one record and
    # cleans only up to it; the cleaner still makes progress pass after pass.
    cfg = CleanerConfig(segment_bytes=1024, map_bytes=2 * 24, load_factor=0.75)
    log = _log(cfg, ["0", "1", "0", "1", "0"])
    log.roll()
    assert _pass(log, cfg, 2) == 3
    assert (_keys(log), _offsets(log)) == (["1", "0", "1", "0"], [1, 2, 3, 4])
    _pass(log, cfg, 3)
    assert (_keys(log), _offsets(log)) == (["0", "1", "0"], [2, 3, 4])
    _pass(log, cfg, 4)
    assert (_keys(log), _offsets(log)) == (["1", "0"], [3, 4])


def test_build_partial_offset_map() -> None:
    # LogCleanerTest.testBuildPartialOffsetMap: 3 slots x 0.75 = room for 2; mapping from offset 2 takes keys 2 and
    # 3 and stops at the third key, so keys 0 (below the start) and 4 (after the map filled) are absent.
    cfg = CleanerConfig(map_bytes=3 * 24, load_factor=0.75)
    log = _log(cfg, ["0", "1", "2", "3", "4"])
    log.roll()
    m, latest, full = build_offset_map(log, 2, 2**31 - 1, cfg.map_capacity)
    assert m == {"2": 2, "3": 3} and full and latest == 3


def test_full_map_still_full_on_a_known_key() -> None:
    # Cleaner.buildOffsetMapForSegment checks the map's size before every put, so a key already mapped does not
    # get in once the map is at its bound: the pass ends at the last offset mapped.
    cfg = CleanerConfig(map_bytes=24, load_factor=1.0)
    log = _log(cfg, ["a", "a", "a"])
    log.roll()
    m, latest, full = build_offset_map(log, 0, 3, cfg.map_capacity)
    assert (m, latest, full) == ({"a": 0}, 0, True)


def test_clean_segments_retaining_last_empty_batch() -> None:
    # LogCleanerTest.testCleanSegmentsRetainingLastEmptyBatch: when every record of the pass's last batch goes, the
    # batch stays as an empty one so the log keeps its last offset. Here the last batch is a tombstone whose
    # KIP-534 horizon (set by the first pass) has passed by the second.
    cfg = CleanerConfig(delete_retention_ms=100)
    log = CleanerLog()
    log.append([("a", "1", 10)], cfg)
    log.append([("a", None, 20)], cfg)
    log.roll()
    log.high_watermark = log.log_end_offset
    _pass(log, cfg, 0, now=1000)
    (seg, _active) = log.segments
    assert [(b.base_offset, b.delete_horizon, [r.value for r in b.records]) for b in seg.batches] == [(1, 1100, [None])]
    _pass(log, cfg, 0, now=1100)
    (seg, _active) = log.segments
    assert [(b.base_offset, b.last_offset, b.records) for b in seg.batches] == [(1, 1, ())]
    assert seg.size == BATCH_OVERHEAD


def test_emptied_batch_kept_by_release() -> None:
    # Which emptied batch stays changed in 4.4.0 (tests/test_kafka_cleaner.py shows it on both releases): up to 4.3
    # the one ending the pass, since 4.4.0 the one ending at the high watermark. Pass ends at 2, high watermark 3.
    cfg = CleanerConfig(delete_retention_ms=0, map_bytes=2 * 24, load_factor=0.75)
    kept = {}
    for version in ("4.1.2", "4.3.0", "4.4.0"):
        log = CleanerLog()
        for batch in ([("a", "1", 1)], [("b", None, 2)]):
            log.append(batch, cfg)
        log.roll()
        log.append([("c", "1", 3)], cfg)
        log.high_watermark = log.log_end_offset
        upper = log.active.base_offset
        assert clean_pass(log, Choice(0, 0, upper, 0, 0, False, False), cfg, 100, version).end_offset == 1
        clean_pass(log, Choice(0, 1, upper, 0, 0, False, False), cfg, 200, version)
        kept[version] = [(b.base_offset, len(b.records)) for b in log.segments[0].batches]
    assert kept == {"4.1.2": [(0, 1), (1, 0)], "4.3.0": [(0, 1), (1, 0)], "4.4.0": [(0, 1)]}


def test_clean_tombstone_kept_until_horizon() -> None:
    # LogCleanerTest.testCleanTombstone: a tombstone is kept by the pass that first sees it however old its own
    # timestamp is (the horizon counts from that pass, KIP-534), and by later passes before the horizon.
    cfg = CleanerConfig(delete_retention_ms=1000)
    log = CleanerLog()
    log.append([("0", "0", 5000)], cfg)
    log.roll()
    _pass(log, cfg, 0, now=100)
    log.append([("0", None, 0)], cfg)  # a timestamp far older than delete.retention.ms
    log.roll()
    _pass(log, cfg, 1, now=100)
    assert _offsets(log) == [1]
    log.append([("1", "1", 100)], cfg)
    log.roll()
    _pass(log, cfg, 2, now=1099)
    assert _offsets(log)[0] == 1, "the tombstone should be retained"
    log.append([("2", "2", 100)], cfg)
    log.roll()
    _pass(log, cfg, 3, now=1100)  # at the horizon the tombstone goes
    assert _offsets(log) == [2, 3]


def test_log_to_clean_total_bytes() -> None:
    # LogCleanerTest.testLogToClean: with segments of one record each and the first dirty offset at the active
    # segment, the total bytes are the log's size less the active segment's.
    cfg = CleanerConfig(segment_bytes=100)
    log = CleanerLog()
    for _ in range(6):
        log.append([("1", "0" * 25, 0)], cfg)  # 94 bytes: one batch per segment
    assert len(log.segments) == 6
    log.checkpoint = log.active.base_offset
    _, (st,) = choose([log], cfg, 0)
    assert st.total_bytes == sum(s.size for s in log.segments) - log.active.size


def test_record_and_batch_sizes() -> None:
    # DefaultRecord: length varint, attributes, timestamp and offset deltas (zig-zag varints), key and value with
    # varint lengths (-1 for null), header count. One record "k"/"v" at deltas 0: body 8 bytes, 9 with its length.
    assert record_size(0, 0, "k", "v") == 9
    assert record_size(0, 0, "k", None) == 8
    assert record_size(64, 0, "k", "v") == 10  # zig-zag 128 takes two bytes


def _filthy_logs(cfg: CleanerConfig, sizes: list[int]) -> list[CleanerLog]:
    logs = []
    for n in sizes:
        log = CleanerLog(checkpoint=20)
        for i in range(n):
            log.append([(f"k{i}", "v", 0)], cfg)
            if i % 5 == 4:
                log.roll()
        log.roll()
        log.high_watermark = log.log_end_offset
        logs.append(log)
    return logs


def test_grab_filthiest_returns_dirtiest_ratio() -> None:
    # LogCleanerManagerTest.testGrabFilthiestCompactedLogReturnsLogWithDirtiestRatio: clean up to 20, logs of 20,
    # 25 and 30 records: the one with the most dirty data wins.
    cfg = CleanerConfig(min_cleanable_ratio=0.1)
    chosen, standings = choose(_filthy_logs(cfg, [25, 30, 25]), cfg, 0)
    assert chosen is not None and chosen.index == 1
    assert standings[1].ratio > standings[0].ratio == standings[2].ratio


def test_dirty_offset_reset_if_larger_than_end_offset() -> None:
    # LogCleanerManagerTest.testDirtyOffsetResetIfLargerThanEndOffset
    cfg = CleanerConfig()
    (log,) = _filthy_logs(cfg, [25])
    log.checkpoint = 200
    chosen, _ = choose([log], cfg, 0)
    assert chosen is not None and chosen.first_dirty == 0 and chosen.reset_checkpoint


def test_dirty_offset_reset_if_smaller_than_start_offset() -> None:
    # LogCleanerManagerTest.testDirtyOffsetResetIfSmallerThanStartOffset
    cfg = CleanerConfig()
    (log,) = _filthy_logs(cfg, [25])
    log.log_start_offset, log.checkpoint = 10, 0
    chosen, _ = choose([log], cfg, 0)
    assert chosen is not None and chosen.first_dirty == 10


def test_checkpoint_updated_for_invalid_offset_not_selected() -> None:
    # LogCleanerManagerTest.testCheckpointUpdatedForInvalidOffsetNotSelected: the log whose checkpoint is below its
    # start is not chosen, yet its checkpoint is rewritten to its start.
    cfg = CleanerConfig()
    a, b = _filthy_logs(cfg, [25, 30])
    a.log_start_offset, a.checkpoint, b.checkpoint = 15, 10, 5
    chosen, _ = choose([a, b], cfg, 0)
    assert chosen is not None and chosen.index == 1
    assert a.checkpoint == 15


def test_cleanable_offsets_active_segment() -> None:
    # LogCleanerManagerTest.testCleanableOffsetsActiveSegment: everything from 0 up to the active segment.
    cfg = CleanerConfig(segment_bytes=1024)
    log = _log(cfg, [str(i) for i in range(200)])
    log.high_watermark = log.log_end_offset
    log.checkpoint = 0
    _, (st,) = choose([log], cfg, 0)
    assert (st.first_dirty, st.first_uncleanable) == (0, log.active.base_offset)


def test_cleanable_offsets_for_time() -> None:
    # LogCleanerManagerTest.testCleanableOffsetsForTime: records older than min.compaction.lag.ms in the first four
    # segments, newer after: cleaning stops where the new ones start (the active segment when they were appended).
    lag = 3_600_000
    cfg = CleanerConfig(segment_bytes=1024, min_compaction_lag_ms=lag)
    log = CleanerLog(checkpoint=0)
    while len(log.segments) < 4:
        log.append([(str(log.log_end_offset), "v", 0)], cfg)
    boundary = log.active.base_offset
    while len(log.segments) < 8:
        log.append([(str(log.log_end_offset), "v", lag + 1)], cfg)
    log.high_watermark = log.log_end_offset
    _, (st,) = choose([log], cfg, lag + 1)
    assert (st.first_dirty, st.first_uncleanable) == (0, boundary)


def test_cleanable_offsets_for_short_time() -> None:
    # LogCleanerManagerTest.testCleanableOffsetsForShortTime: all records older than the lag: up to the active one.
    lag = 3_600_000
    cfg = CleanerConfig(segment_bytes=1024, min_compaction_lag_ms=lag)
    log = CleanerLog(checkpoint=0)
    while len(log.segments) < 8:
        log.append([(str(log.log_end_offset), "v", 0)], cfg)
    log.high_watermark = log.log_end_offset
    _, (st,) = choose([log], cfg, lag + 1)
    assert (st.first_dirty, st.first_uncleanable) == (0, log.active.base_offset)


def test_max_compaction_lag_forces_a_log_below_the_ratio() -> None:
    # LogCleanerManager.maxCompactionDelay: a dirty non-active segment whose first batch is older than
    # now - max.compaction.lag.ms makes the log cleanable whatever its dirty ratio.
    cfg = CleanerConfig(min_cleanable_ratio=0.99, max_compaction_lag_ms=100)
    log = CleanerLog(checkpoint=1)
    for k in ("a", "b"):
        log.append([(k, "1", 10)], cfg)
        log.roll()
    log.high_watermark = log.log_end_offset
    chosen, (st,) = choose([log], cfg, 110)
    assert chosen is None and st.ratio == 0.5  # 10 is not older than 110 - 100
    chosen, _ = choose([log], cfg, 111)
    assert chosen is not None and chosen.need_compaction_now


def test_segment_grouping_by_size() -> None:
    # LogCleanerTest.testSegmentGrouping: consecutive segments are cleaned into one while their bytes fit in
    # segment.bytes. Each single-record segment here takes 70 bytes: two fit in 150, three do not.
    cfg = CleanerConfig(segment_bytes=150)
    log = CleanerLog()
    for k in ["a", "b", "c", "d", "e"]:
        log.append([(k, k, 0)], cfg)
        log.roll()
    assert [s.size for s in log.segments] == [70] * 5 + [0]
    res = clean_pass(log, Choice(0, 0, log.active.base_offset, 0, 0, False, False), cfg, 0)
    assert res.groups == ((0, 1), (2, 3), (4,))
    assert [s.base_offset for s in log.segments] == [0, 2, 4, 5]


def test_random_scenarios_keep_log_invariants() -> None:
    # Every pass keeps each key's latest record at its offset, removes only, and leaves the uncleanable part alone
    # (kcheck.invariants.log_storage); the log's state invariants hold after every round.
    for seed in range(150):
        s = random_scenario(random.Random(seed))
        for i in range(1, len(s.rounds) + 1):
            outs, after = run_rounds(s.cfg, s.checkpoints, s.rounds[:i])
            o = outs[-1]
            if o.choice is None:
                continue
            v_before = to_log_view(_state_before_pass(s, i)[o.choice.index])
            v_after = to_log_view(after[o.choice.index])
            assert check_compaction(v_before, v_after) == [], (seed, i)
            assert check_all(v_after, "log").violations == (), (seed, i)


def _state_before_pass(s, i: int) -> list[CleanerLog]:
    """The logs of scenario `s` after round i's appends, before its pass."""
    from kcheck.reference.log_cleaner import build_log

    _, logs = run_rounds(s.cfg, s.checkpoints, s.rounds[:i - 1])
    rnd = s.rounds[i - 1]
    for log, spec, hw in zip(logs, rnd.appends, rnd.hws, strict=True):
        build_log(log, spec, s.cfg)
        leo = log.log_end_offset
        log.high_watermark = leo if hw is None else min(hw, leo)
    return logs


# ---- more of LogCleanerTest and LogCleanerManagerTest ------------------------------------------------------------


def _values(log: CleanerLog) -> list[tuple[str, str | None]]:
    return [(r.key, r.value) for s in log.segments for b in s.batches for r in b.records]


def test_clean_segments_removes_only_superseded_keys() -> None:
    # LogCleanerTest.testCleanSegments: key = value = offset until four 1024-byte segments; keys 1, 3, 5, 7, 9
    # have a later offset in the map; cleaning the first three segments removes exactly those keys. Kafka's test
    # plants the later offsets in a fake map; here later records of those keys sit in the fourth segment, which
    # the pass maps and keeps.
    cfg = CleanerConfig(segment_bytes=1024)
    log = CleanerLog()
    while len(log.segments) < 4:
        log.append([(str(log.log_end_offset), str(log.log_end_offset), 0)], cfg)
    first_three = [r.key for s in log.segments[:3] for b in s.batches for r in b.records]
    superseded = {"1", "3", "5", "7", "9"}
    for k in sorted(superseded):
        log.append([(k, "later", 0)], cfg)
    log.roll()
    _pass(log, cfg, 0)
    remaining = [r.key for s in log.segments[:3] for b in s.batches for r in b.records]
    assert remaining == [k for k in first_three if k not in superseded]


def test_cleaning_with_deletes() -> None:
    # LogCleanerTest.testCleaningWithDeletes: keys 0..N with values, then a tombstone for every even key, padded
    # with new keys to a fourth segment; after one pass below the active segment no deleted key has a value left.
    cfg = CleanerConfig(segment_bytes=1024)
    log = CleanerLog()
    while len(log.segments) < 2:
        log.append([(str(log.log_end_offset), str(log.log_end_offset), 0)], cfg)
    leo = log.log_end_offset
    for k in range(0, leo, 2):
        log.append([(str(k), None, 0)], cfg)
    while len(log.segments) < 4:
        log.append([(str(log.log_end_offset), str(log.log_end_offset), 0)], cfg)
    _pass(log, cfg, 0)
    with_value = {k for k, v in _values(log) if v is not None}
    assert not with_value & {str(k) for k in range(0, leo, 2)}
    assert {str(k) for k in range(1, leo, 2)} <= with_value


def test_cleaning_with_uncleanable_section() -> None:
    # LogCleanerTest.testCleaningWithUncleanableSection: 10 keys repeating, value = offset, 7 segments; a pass
    # bounded inside the third segment leaves fewer values in the two cleanable segments and every later segment
    # as it was (the segment holding the first uncleanable offset is not cleaned: LogToClean floors the bound to
    # its segment's base).
    cfg = CleanerConfig(segment_bytes=1024)
    log = CleanerLog()
    while len(log.segments) <= 2:
        log.append([(str(log.log_end_offset % 10), str(log.log_end_offset), 0)], cfg)
    bound = log.segments[2].base_offset
    while len(log.segments) < 6:
        log.append([(str(log.log_end_offset % 10), str(log.log_end_offset), 0)], cfg)

    def distinct() -> list[int]:
        return [len({r.value for b in s.batches for r in b.records}) for s in log.segments]

    before = distinct()
    assert all(n > 10 for n in before[:-1])  # every segment holds duplicates, so cleaning shows
    clean_pass(log, Choice(0, 0, bound, 0, 0, False, False), cfg, 0)
    after = distinct()
    assert all(a < b for a, b in zip(after[:2], before[:2], strict=True))
    assert after[2:] == before[2:]


def test_log_to_clean_with_uncleanable_section() -> None:
    # LogCleanerTest.testLogToCleanWithUncleanableSection: six one-record segments; segments 0-1 clean, 2-3
    # cleanable, 4-5 uncleanable: clean bytes, cleanable bytes, total and ratio follow.
    cfg = CleanerConfig(segment_bytes=100)
    log = CleanerLog()
    for _ in range(6):
        log.append([("1", "0" * 25, 0)], cfg)
    segs = log.segments
    log.checkpoint, log.high_watermark = segs[2].base_offset, segs[4].base_offset
    _, (st,) = choose([log], cfg, 0)
    clean, cleanable = sum(s.size for s in segs[:2]), sum(s.size for s in segs[2:4])
    assert (st.clean_bytes, st.cleanable_bytes, st.total_bytes) == (clean, cleanable, clean + cleanable)
    assert st.ratio == cleanable / (clean + cleanable)


def test_build_offset_map() -> None:
    # LogCleanerTest.testBuildOffsetMap: 500 records, key = value = offset; over three segment-aligned ranges the
    # map ends at the range's end, holds one entry per record, each key at its own offset and nothing outside.
    cfg = CleanerConfig(segment_bytes=1024)
    log = _log(cfg, [str(i) for i in range(500)])
    segs = log.segments
    assert len(segs) > 3
    for start, end in ((0, segs[1].base_offset), (segs[1].base_offset, segs[3].base_offset),
                       (segs[3].base_offset, log.log_end_offset)):
        m, latest, full = build_offset_map(log, start, end, BIG)
        assert (latest + 1, len(m), full) == (end, end - start, False)
        assert all(m[str(i)] == i for i in range(start, end))
        assert str(start - 1) not in m and str(end) not in m


def test_cleanable_offsets_for_none() -> None:
    # LogCleanerManagerTest.testCleanableOffsetsForNone: no lag settings, high watermark 50 inside the log: dirty
    # from 0, bounded by the last stable offset (= the high watermark), which LogToClean floors to its segment.
    cfg = CleanerConfig(segment_bytes=1024)
    log = CleanerLog(checkpoint=0)
    while len(log.segments) < 8:
        log.append([(str(log.log_end_offset), str(log.log_end_offset), 0)], cfg)
    log.high_watermark = 50
    _, (st,) = choose([log], cfg, 0)
    holding_50 = max(s.base_offset for s in log.segments if s.base_offset <= 50)
    assert (st.first_dirty, st.first_uncleanable) == (0, holding_50)


def test_cleanable_offsets_need_checkpoint_reset() -> None:
    # LogCleanerManagerTest.testCleanableOffsetsNeedsCheckpointReset: a checkpoint inside [log start, log end] is
    # kept; below the log start, or above the log end, it is reset.
    cfg = CleanerConfig()
    (log,) = _filthy_logs(cfg, [25])
    log.log_start_offset, log.checkpoint = 10, 15
    _, (st,) = choose([log], cfg, 0)
    assert not st.reset_checkpoint and st.first_dirty == 15
    log.log_start_offset = 20
    _, (st,) = choose([log], cfg, 0)
    assert st.reset_checkpoint
    log.checkpoint = log.log_end_offset + 1
    _, (st,) = choose([log], cfg, 0)
    assert st.reset_checkpoint


def test_checkpoint_updated_for_invalid_offset_no_cleaning() -> None:
    # LogCleanerManagerTest.testCheckpointUpdatedForInvalidOffsetNoCleaning: log start 20, checkpoint 15: the log
    # is not chosen and its checkpoint becomes 20.
    cfg = CleanerConfig()
    (log,) = _filthy_logs(cfg, [20])
    log.log_start_offset, log.checkpoint = 20, 15
    chosen, _ = choose([log], cfg, 0)
    assert chosen is None and log.checkpoint == 20
