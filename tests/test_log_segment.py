"""Kafka's own expectations for segments and indexes, reproduced on `kcheck.reference.log_segment`.

Each test names the Kafka test method it comes from: storage/src/test/java/org/apache/kafka/storage/internals/log/
{OffsetIndexTest, TimeIndexTest, LogSegmentTest}.java and core/src/test/scala/unit/kafka/log/UnifiedLogTest.scala.
The cases are written in our own words with the values Kafka's tests assert.
"""

from __future__ import annotations

import random

import pytest

from kcheck.invariants.registry import check_all
from kcheck.reference.log_segment import (
    INT_MAX,
    NO_TIMESTAMP,
    Append,
    Batch,
    LogSegment,
    OffsetIndex,
    Record,
    SegmentConfig,
    SegmentedLog,
    StorageError,
    TimeIndex,
    record_size,
    to_log_view,
    varint_size,
)


def _raises(name: str, fn: object, *args: object) -> None:
    assert callable(fn)
    with pytest.raises(StorageError) as e:
        fn(*args)
    assert e.value.java_name == name


# ---------------------------------------------------------------- record format sizes


def test_v2_sizes_match_the_record_format() -> None:
    # DefaultRecord: length varint + attributes + timestamp delta + offset delta + key + value + header count
    assert varint_size(0) == 1 and varint_size(-1) == 1 and varint_size(63) == 1 and varint_size(64) == 2
    assert record_size(0, 0, -1, 4) == 1 + 10  # body: attributes 1, ts 1, offset 1, key 1, value 1 + 4, headers 1
    # a single 4-byte value with no key in a v2 batch: the 61-byte header and that record
    assert Batch(0, (Record(0, 5, -1, 4),)).size == 72
    assert record_size(64, -65, 3, 200) == 2 + (1 + 2 + 2 + 1 + 3 + 2 + 200 + 1)


# ---------------------------------------------------------------- OffsetIndexTest


def _offset_index() -> OffsetIndex:
    return OffsetIndex(45, 30 * 8)  # OffsetIndexTest.setup: 30 entries


def test_offset_index_random_lookup() -> None:
    # OffsetIndexTest.randomLookupTest: empty lookups answer (base, 0); every entry is found; others floor
    idx = _offset_index()
    assert idx.lookup(92) == (45, 0)
    rng = random.Random(5)
    offsets, positions, o, p = [], [], 46, 0
    for _ in range(idx.max_entries):
        o += rng.randint(1, 15)
        p += rng.randint(1, 15)
        offsets.append(o)
        positions.append(p)
    for o, p in zip(offsets, positions, strict=True):
        idx.append(o, p)
    for o, p in zip(offsets, positions, strict=True):
        assert idx.lookup(o) == (o, p)
    for target in range(45, offsets[-1]):
        below = [(o, p) for o, p in zip(offsets, positions, strict=True) if o <= target]
        assert idx.lookup(target) == (below[-1] if below else (45, 0))


def test_offset_index_lookup_extremes() -> None:
    # OffsetIndexTest.lookupExtremeCases
    idx = _offset_index()
    assert idx.lookup(45) == (45, 0)
    for i in range(idx.max_entries):
        idx.append(45 + i + 1, i)
    assert idx.lookup(45) == (45, 0)
    assert idx.lookup(45 + idx.max_entries) == (45 + idx.max_entries, idx.max_entries - 1)


def test_offset_index_entries_and_overflow() -> None:
    # OffsetIndexTest.testEntry and testEntryOverflow
    idx = _offset_index()
    _raises("IllegalArgumentException", idx.entry, 0)
    for i in range(idx.max_entries):
        idx.append(45 + i, i)
    assert [idx.entry(i) for i in range(idx.max_entries)] == [(45 + i, i) for i in range(30)]


def test_offset_index_append_too_many_and_out_of_order() -> None:
    # OffsetIndexTest.appendTooMany and appendOutOfOrder
    idx = _offset_index()
    for i in range(idx.max_entries):
        idx.append(45 + i + 1, i)
    _raises("IllegalArgumentException", idx.append, 45 + idx.max_entries + 1, 1)
    idx = _offset_index()
    idx.append(51, 0)
    _raises("InvalidOffsetException", idx.append, 50, 1)


def test_offset_index_fetch_upper_bound() -> None:
    # OffsetIndexTest.testFetchUpperBoundOffset
    idx = _offset_index()
    first, second, third, fourth = (45, 0), (46, 10), (47, 23), (48, 37)
    assert idx.fetch_upper_bound_offset(first[1], 5) is None
    for o, p in (first, second, third, fourth):
        idx.append(o, p)
    assert idx.fetch_upper_bound_offset(first[1], 5) == second
    assert idx.fetch_upper_bound_offset(first[1], 10) == second
    assert idx.fetch_upper_bound_offset(first[1], 23) == third
    assert idx.fetch_upper_bound_offset(first[1], 22) == third
    assert idx.fetch_upper_bound_offset(second[1], 24) == fourth
    assert idx.fetch_upper_bound_offset(fourth[1], 1) is None
    assert idx.fetch_upper_bound_offset(first[1], 200) is None
    assert idx.fetch_upper_bound_offset(second[1], 200) is None


def test_offset_index_truncate() -> None:
    # OffsetIndexTest.truncate: past the end, at the end, at an entry, in the middle
    idx = OffsetIndex(0, 10 * 8)
    for i in range(1, 10):
        idx.append(i, i)
    idx.truncate_to(12)
    assert idx.lookup(10) == (9, 9) and idx.last_offset == 9
    idx.append(10, 10)
    idx.truncate_to(10)
    assert idx.lookup(10) == (9, 9) and idx.last_offset == 9
    idx.append(10, 10)
    idx.truncate_to(9)
    assert idx.lookup(10) == (8, 8) and idx.last_offset == 8
    idx.append(9, 9)
    idx.truncate_to(5)
    assert idx.lookup(10) == (4, 4) and idx.last_offset == 4
    idx.append(5, 5)


def test_offset_index_relative_offset_must_fit() -> None:
    # AbstractIndex.relativeOffset: a 4-byte relative offset (IndexOffsetOverflowException past Integer.MAX_VALUE)
    idx = OffsetIndex(0, 80)
    idx.append(INT_MAX, 0)
    _raises("IndexOffsetOverflowException", OffsetIndex(0, 80).append, INT_MAX + 1, 0)


# ---------------------------------------------------------------- TimeIndexTest


def _time_index(n: int = 29) -> TimeIndex:
    idx = TimeIndex(45, 30 * 12)  # TimeIndexTest: maxEntries 30, baseOffset 45
    for i in range(1, n + 1):
        idx.maybe_append(i * 10, i * 10 + 45)
    return idx


def test_time_index_lookup() -> None:
    # TimeIndexTest.testLookUp
    assert _time_index(0).lookup(100) == (NO_TIMESTAMP, 45)
    idx = _time_index()
    assert idx.lookup(9) == (NO_TIMESTAMP, 45)
    assert idx.lookup(25) == (20, 65)
    assert idx.lookup(30) == (30, 75)


def test_time_index_entries() -> None:
    # TimeIndexTest.testEntry and testEntryOverflow
    _raises("IllegalArgumentException", _time_index(0).entry, 0)
    idx = _time_index()
    assert [idx.entry(i) for i in range(4)] == [(10, 55), (20, 65), (30, 75), (40, 85)]


def test_time_index_truncate() -> None:
    # TimeIndexTest.testTruncate: truncateTo(the first entry's offset) leaves none
    idx = _time_index()
    idx.truncate_to(10 + 45)
    assert idx.count == 0


def test_time_index_append_full_and_skip_full_check() -> None:
    # TimeIndexTest.testAppend and testIsFull: one slot stays for the roll's entry
    assert not _time_index(0).is_full()
    idx = _time_index()
    assert idx.is_full()
    _raises("IllegalArgumentException", idx.maybe_append, 10000, 1000)
    _raises("InvalidOffsetException", idx.maybe_append, 10000, (30 - 2) * 10, True)
    idx.maybe_append(10000, 1000, True)
    assert idx.last_entry() == (10000, 1000)


def test_time_index_last_entry_and_resize() -> None:
    # TimeIndexTest.testLastEntry and testResize
    idx = TimeIndex(45, 30 * 12)
    assert idx.last_entry() == (NO_TIMESTAMP, 45)
    idx.maybe_append(1, 46)
    assert idx.last_entry() == (1, 46)
    idx = TimeIndex(45, 30 * 12)
    assert not idx.resize(30 * 12)
    assert idx.resize(15 * 12)
    assert idx.resize(60 * 12)


def test_time_index_only_grows_in_timestamp() -> None:
    # TimeIndex.maybeAppend: an equal timestamp adds nothing, a smaller one is an error
    idx = TimeIndex(0, 120)
    idx.maybe_append(5, 1)
    idx.maybe_append(5, 2)
    assert idx.count == 1
    _raises("IllegalStateException", idx.maybe_append, 4, 3)


# ---------------------------------------------------------------- LogSegmentTest


def _batch(base: int, n: int, ts: int = NO_TIMESTAMP, value: int = 5) -> Batch:
    return Batch(base, tuple(Record(i, ts, -1, value) for i in range(n)))


@pytest.mark.parametrize("base, largest", [(0, -(2**31)), (0, 2**31), (1, 0), (100, 10), (2**31, 0), (-(2**31), 0),
                                           (2**31, 2**32)])
def test_append_offset_overflow(base: int, largest: int) -> None:
    # LogSegmentTest.testAppendForLogSegmentOffsetOverflowException (index interval 10)
    seg = LogSegment(base, SegmentConfig(index_interval_bytes=10), 0)
    _raises("LogSegmentOffsetOverflowException", seg.append, largest, [_batch(0, 1)])


def test_reads_on_empty_after_last_before_first_and_in_gap() -> None:
    # LogSegmentTest.testReadOnEmptySegment, testReadAfterLast, testReadBeforeFirstOffset, testReadFromGap
    seg = LogSegment(40, SegmentConfig(index_interval_bytes=10), 0)
    assert seg.translate_offset(40) is None
    first = _batch(50, 2)
    seg.append(51, [first])
    assert seg.translate_offset(52) is None
    assert seg.translate_offset(41) == (50, 0, first.size)
    second = _batch(60, 2)
    seg.append(61, [second])
    assert seg.translate_offset(55) == (60, first.size, second.size)


def test_first_batch_timestamp() -> None:
    # LogSegmentTest.testGetFirstBatchTimestamp: the roll clock runs from the first batch's timestamp
    seg = LogSegment(1, SegmentConfig(), created_ms=0)
    assert seg.time_waited_for_roll(now=500, message_timestamp=9999) == 500  # empty: since creation
    seg.append(1, [Batch(1, (Record(0, 1000, -1, 3),))])
    assert seg.time_waited_for_roll(now=500, message_timestamp=1700) == 700


# ---------------------------------------------------------------- UnifiedLogTest (the roll loop)


def _single(offset: int, now: int, ts: int = NO_TIMESTAMP) -> Append:
    return Append(now, (Batch(offset, (Record(0, ts, -1, 4),)),))


def test_time_based_roll_during_append() -> None:
    # UnifiedLogTest.testTimeBasedLogRollDuringAppend (segment.ms = 3600)
    ms = 3600
    log = SegmentedLog(SegmentConfig(segment_ms=ms), created_ms=0)
    now, off = ms + 1, 0
    log.append(_single(off, now))
    off += 1
    assert len(log.segments) == 1  # an empty segment does not roll
    log.append(_single(off, now))
    off += 1
    assert len(log.segments) == 2  # time has run out since the segment was created
    for n in (3, 4):
        now += ms + 1
        log.append(_single(off, now))
        off += 1
        assert len(log.segments) == n
    ts = now + ms + 1
    log.append(_single(off, now, ts))
    off += 1
    assert len(log.segments) == 4  # the first batch had no timestamp: the wall clock decides
    now += ms + 1
    log.append(_single(off, now, ts))
    off += 1
    assert len(log.segments) == 5
    now += ms + 1
    log.append(_single(off, now, ts))
    off += 1
    assert len(log.segments) == 5  # now the first batch's timestamp decides, not the clock
    log.append(_single(off, now, now))
    assert len(log.segments) == 6  # a record timestamp past the first one's by segment.ms rolls


def test_time_based_roll_with_jitter() -> None:
    # UnifiedLogTest.testTimeBasedLogRollJitter (segment.ms = 3600, segment.jitter.ms = 1200)
    ms, max_jitter, jitter = 3600, 1200, 700  # the drawn jitter is below min(jitter, segment.ms)
    log = SegmentedLog(SegmentConfig(segment_ms=ms, jitter_ms=jitter), created_ms=0)
    now = 0
    log.append(_single(0, now, now))
    now += ms - max_jitter
    log.append(_single(1, now, now))
    assert len(log.segments) == 1
    now += max_jitter - jitter + 1
    log.append(_single(2, now, now))
    assert len(log.segments) == 2


def test_size_based_roll() -> None:
    # UnifiedLogTest.testSizeBasedLogRoll: segment.bytes = 10 * (set size - 1), 11 appends make 2 segments
    size = _single(0, 0, 0).size
    log = SegmentedLog(SegmentConfig(segment_bytes=10 * (size - 1)), created_ms=0)
    for i in range(11):
        log.append(_single(i, 0, 0))
    assert len(log.segments) == 2


def test_roll_of_an_empty_active_segment_replaces_it() -> None:
    # UnifiedLogTest.testRollSegmentThatAlreadyExists / KAFKA-6388: a full index on an empty segment re-creates it
    log = SegmentedLog(SegmentConfig(max_index_size=12), created_ms=0)  # one time index slot: always "full"
    log.append(_single(0, 5, 5))
    assert [s.base_offset for s in log.segments] == [0]
    log.append(_single(1, 6, 6))
    assert [s.base_offset for s in log.segments] == [0, 1]


def test_offset_overflow_rolls_at_the_first_offset() -> None:
    # UnifiedLog.maybeRoll: an offset a 4-byte relative offset cannot hold rolls to the append's first offset
    log = SegmentedLog(SegmentConfig(), created_ms=0)
    log.append(_single(0, 0, 0))
    log.append(_single(INT_MAX + 7, 0, 0))
    assert [s.base_offset for s in log.segments] == [0, INT_MAX + 7]


def test_index_entries_every_interval_and_trimmed_on_roll() -> None:
    # LogSegment.append: an entry when more than index.interval.bytes were appended since the last one, naming the
    # batch's last offset and its position; onBecomeInactiveSegment adds the max timestamp and trims the files
    b = _batch(0, 1, ts=10).size
    log = SegmentedLog(SegmentConfig(index_interval_bytes=b, segment_bytes=5 * b, max_index_size=64), created_ms=0)
    for i in range(6):
        log.append(Append(0, (_batch(i, 1, ts=10 + i),)))
    first, active = log.segments
    assert first.offset_index.entries == [(2, 2 * b), (4, 4 * b)]
    assert first.time_index.entries == [(12, 2), (14, 4)]
    assert first.offset_index.length == 16 and first.time_index.length == 24
    assert active.offset_index.length == 64 and active.time_index.length == 60
    assert check_all(to_log_view(log), "log").violations == ()


# ---------------------------------------------------------------- index sanity (OffsetIndexTest, TimeIndexTest)


def _indexed_view(offset_index: tuple[tuple[int, int], ...] = (), time_index: tuple[tuple[int, int], ...] = (),
                  base: int = 20, n: int = 60):
    from kcheck.model.log_view import LogRecord, LogSegmentView, LogView

    recs = tuple(LogRecord(base + i, None, "v", i, 10) for i in range(n))
    seg = LogSegmentView(base, recs, 10 * n, offset_index, time_index, tuple(10 * i for i in range(n)))
    return LogView("t-0", (seg,), base)


def test_offset_index_sanity_with_the_last_offset_at_the_base() -> None:
    # OffsetIndexTest.testSanityLastOffsetEqualToBaseOffset: an index whose only entry is at its base offset is sane
    idx = OffsetIndex(20, 10 * 8)
    idx.append(20, 0)
    assert idx.entries == [(20, 0)]
    assert check_all(_indexed_view(offset_index=tuple(idx.entries)), "log").violations == ()


def test_time_index_entry_size_and_parse() -> None:
    # TimeIndexTest.testEntrySize and testParseEntry: 12-byte entries; an appended (1, base + 1) reads back as it was
    idx = TimeIndex(45, 30 * 12)
    assert idx.entry_size == 12
    idx.maybe_append(1, 46)
    assert idx.entry(0) == (1, 46)


def test_time_index_sanity_check() -> None:
    # TimeIndexTest.testSanityCheck: five entries (10i, base + 10i) are sane; a last entry whose offset is below the
    # base, or whose timestamp is below the first entry's, is not (log.time-index is our sanityCheck)
    idx = TimeIndex(20, 30 * 12)
    for i in range(1, 6):
        idx.maybe_append(i * 10, 20 + i * 10)  # the view's record at offset 20 + k has timestamp k
    sane = tuple(idx.entries)
    assert check_all(_indexed_view(time_index=sane), "log").violations == ()
    bad_offset = sane[:-1] + ((sane[-1][0], 19),)
    assert {v.invariant for v in check_all(_indexed_view(time_index=bad_offset), "log").violations} == {
        "log.time-index"}
    bad_ts = sane[:-1] + ((sane[0][0] - 1, sane[-1][1]),)
    assert {v.invariant for v in check_all(_indexed_view(time_index=bad_ts), "log").violations} == {
        "log.time-index"}
