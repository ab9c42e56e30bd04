"""Retention reference (kcheck.reference.log_retention) on the retention tests of Kafka's UnifiedLogTest.

Each test names the UnifiedLogTest method (core/src/test/scala/unit/kafka/log/UnifiedLogTest.scala) whose scenario
and expectations it reproduces, in our words. Kafka's tests roll by segment.bytes; here the same layouts are built
with explicit rolls. The same scenarios run on the real UnifiedLog in tests/test_kafka_retention.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcheck.invariants.log_storage import check_retention
from kcheck.reference.log_retention import (
    LogState,
    OffsetOutOfRange,
    RetentionConfig,
    SegmentSummary,
    append,
    batch_size,
    delete_records,
    empty_log,
    retention_pass,
    roll,
    set_last_modified,
    to_log_view,
    update_high_watermark,
)

NOW = 1_700_000_000_000


def _singletons(n: int, per_segment: int, ts: int = NOW, value: int = 4, key: int | None = None) -> LogState:
    """n single-record batches, a new segment every `per_segment` records (UnifiedLogTest's segment.bytes)."""
    state = empty_log()
    for i in range(n):
        if i and i % per_segment == 0:
            state = roll(state)
        state = append(state, (ts,), value, NOW, key_bytes=key)
    return state


def _bases(state: LogState) -> list[int]:
    return [s.base_offset for s in state.segments]


def test_singleton_batch_size():
    # TestUtils.singletonRecords("test"): one magic v2 batch, 61 header bytes and an 11-byte record.
    assert batch_size((NOW,), 4) == 72
    assert _singletons(15, 5).segments[0].size == 5 * 72


def test_retention_idempotency():
    """testRetentionIdempotency: DeleteRecords to 1 lets time retention go on; a second run deletes nothing."""
    cfg = RetentionConfig(retention_ms=900)
    state = empty_log()
    for ts in (NOW + 100, NOW, NOW + 100):
        state = roll(append(state, (ts,), 1, NOW))
    state = update_high_watermark(state, state.log_end_offset)
    state, moved = delete_records(state, 1)
    assert moved
    first = retention_pass(state, cfg, NOW + 901)
    assert first.count == 2
    assert [d.reason for d in first.deleted] == ["log-start-offset", "retention-ms"]
    assert retention_pass(first.state, cfg, NOW + 901).count == 0


@pytest.mark.parametrize("empty_active", [False, True])
def test_retention_bytes_zero_deletes_everything(empty_active):
    """testRetentionDeletesProducerStateSnapshots: retention.bytes=0 deletes every segment (the active one too when
    it holds data: a new one is rolled first) and the log start offset reaches the log end."""
    state = empty_log()
    for i in range(3):
        state = append(state, (NOW,), 1, NOW)
        if i < 2 or empty_active:
            state = roll(state)
    state = update_high_watermark(state, state.log_end_offset)
    result = retention_pass(state, RetentionConfig(retention_ms=60_000, retention_bytes=0), NOW + 60_001)
    assert result.count == 3
    assert result.rolled is (not empty_active)
    assert _bases(result.state) == [3]
    assert result.state.log_start_offset == 3


def test_no_deletion_without_high_watermark_then_only_below_it():
    """testDeleteOldSegments: nothing goes while the high watermark is 0; with it at 25..30 the log start offset
    stays at or below it and every remaining segment ends at or above it; at the log end one empty segment is left."""
    cfg = RetentionConfig(retention_ms=999)
    state = _singletons(100, 5, ts=NOW - 1000)
    assert retention_pass(state, cfg, NOW).count == 0
    for hw in range(25, 31):
        state = retention_pass(update_high_watermark(state, hw), cfg, NOW).state
        assert state.log_start_offset <= hw
        assert all(s.next_offset - 1 >= hw for s in state.segments)
    state = retention_pass(update_high_watermark(state, state.log_end_offset), cfg, NOW).state
    assert _bases(state) == [100] and state.segments[0].size == 0


def test_log_deletion_after_delete_records():
    """testLogDeletionAfterDeleteRecords: 3 segments of 5; DeleteRecords to 1 keeps them, to 6 drops the first, to
    15 (the log end) leaves one."""
    state = update_high_watermark(_singletons(15, 5), 15)
    cfg = RetentionConfig()
    for lso, segments in ((1, 3), (6, 2), (15, 1)):
        state, _ = delete_records(state, lso)
        state = retention_pass(state, cfg, NOW).state
        assert (len(state.segments), state.log_start_offset) == (segments, lso)


def test_size_based_deletion():
    """shouldDeleteSizeBasedSegments / ...WhenUnderRetentionSize: 15 records in 3 segments, retention.bytes of 10
    records leaves 2 segments, of 15 records leaves 3."""
    one = batch_size((NOW,), 4)
    state = update_high_watermark(_singletons(15, 5), 15)
    assert len(retention_pass(state, RetentionConfig(retention_bytes=10 * one), NOW).state.segments) == 2
    assert len(retention_pass(state, RetentionConfig(retention_bytes=15 * one), NOW).state.segments) == 3


def test_time_based_deletion():
    """shouldDeleteTimeBasedSegmentsReadyToBeDeleted / ...WhenNoneReadyToBeDeleted: records at 10 with
    retention.ms=10000 all go (one empty segment left); records stamped now with a long retention stay."""
    old = update_high_watermark(_singletons(15, 5, ts=10), 15)
    after = retention_pass(old, RetentionConfig(retention_ms=10_000), NOW).state
    assert len(after.segments) == 1 and after.segments[0].size == 0
    fresh = update_high_watermark(_singletons(15, 5, ts=NOW), 15)
    assert len(retention_pass(fresh, RetentionConfig(retention_ms=10_000_000), NOW).state.segments) == 3


def test_policy_without_delete():
    """shouldNotDeleteSegmentsWhenPolicyDoesNotIncludeDelete, shouldDeleteSegmentsReadyToBeDeletedWhenCleanupPolicyIs
    CompactAndDelete and shouldDeleteStartOffsetBreachedSegmentsWhenPolicyDoesNotIncludeDelete."""
    state = update_high_watermark(_singletons(15, 5, ts=10, key=4), 15)
    compact = RetentionConfig(retention_ms=10_000, cleanup_policy=("compact",))
    assert len(retention_pass(state, compact, NOW).state.segments) == 3
    both = RetentionConfig(retention_ms=10_000, cleanup_policy=("compact", "delete"))
    assert len(retention_pass(state, both, NOW).state.segments) == 1
    moved, _ = delete_records(state, 5)
    after = retention_pass(moved, compact, NOW).state
    assert len(after.segments) == 2
    assert after.segments[0].base_offset <= after.log_start_offset
    assert all(s.base_offset > after.log_start_offset for s in after.segments[1:])
    assert len(retention_pass(state, RetentionConfig(retention_ms=10_000, cleanup_policy=()), NOW).state.segments) == 3


def test_high_watermark_gates_deletion():
    """testSegmentDeletionWithHighWatermarkInitialization and testCannotDeleteSegmentsAtOrAboveHighWatermark: with
    everything expired, each high watermark from 0 to 100 deletes exactly the segments ending at or below it."""
    cfg = RetentionConfig(retention_ms=999)
    state = _singletons(100, 7, ts=NOW - 1000)
    assert len(state.segments) > 5 and state.high_watermark == 0
    first = retention_pass(update_high_watermark(state, 25), cfg, NOW).state
    assert len(first.segments) < len(state.segments) and first.log_start_offset <= 25
    for hw in range(101):
        state = update_high_watermark(state, hw)
        assert state.high_watermark == hw
        state = retention_pass(state, cfg, NOW).state
        assert state.log_start_offset <= hw
        assert state.segments[0].base_offset <= hw
        assert all(s.base_offset > hw for s in state.segments[1:])
    assert (state.log_start_offset, len(state.segments), state.segments[0].size) == (100, 1, 0)


def test_cannot_increment_log_start_offset_past_high_watermark():
    """testCannotIncrementLogStartOffsetPastHighWatermark."""
    state = update_high_watermark(_singletons(100, 7), 25)
    with pytest.raises(OffsetOutOfRange):
        delete_records(state, 26)
    assert delete_records(state, 25)[1] is True


def test_deletable_segments_filter():
    """testDeletableSegmentsFilter: 9 one-record segments and an empty active one, all below the high watermark:
    an always-true pass deletes the 9 (never the empty active segment); with a record in the active segment it goes
    too, after a roll."""
    state = empty_log()
    for _ in range(9):
        state = roll(append(state, (NOW,), 1, NOW))
    state = update_high_watermark(state, state.log_end_offset)
    result = retention_pass(state, RetentionConfig(retention_bytes=0), NOW)
    assert result.count == 9 and not result.rolled
    state = update_high_watermark(append(state, (NOW,), 1, NOW), 10)
    result = retention_pass(state, RetentionConfig(retention_bytes=0), NOW)
    assert result.count == 10 and result.rolled and _bases(result.state) == [10]


def test_pass_order_and_future_timestamps():
    """deleteOldSegments: log start offset, then size, then time; every pass runs. A segment with a timestamp after
    now stops the time pass (UnifiedLog logs it as a future timestamp)."""
    state = empty_log()
    for ts in (0, 0, NOW + 5, 0):
        state = roll(append(state, (ts,), 100, NOW))
    state = update_high_watermark(state, state.log_end_offset)
    state, _ = delete_records(state, 1)
    one = batch_size((0,), 100)
    result = retention_pass(state, RetentionConfig(retention_ms=10, retention_bytes=2 * one), NOW)
    assert [(d.segment.base_offset, d.reason) for d in result.deleted] == [(0, "log-start-offset"),
                                                                           (1, "retention-size")]
    # the third segment's timestamp is in the future: the time pass stops there although the fourth is expired
    assert _bases(result.state) == [2, 3, 4]


def test_size_pass_before_time_pass():
    """deleteOldSegments runs the size pass before the time pass: an expired segment behind a young one goes in the
    same run once the size pass removed the young one (time first would have stopped at the young one)."""
    state = empty_log()
    for ts in (950, 800, 990):  # young, expired, young (active)
        state = append(state, (ts,), 10, 1000)
        if ts != 990:
            state = roll(state)
    state = update_high_watermark(state, 2)
    one = batch_size((0,), 10)
    result = retention_pass(state, RetentionConfig(retention_ms=100, retention_bytes=2 * one), 1000)
    assert [(d.segment.base_offset, d.reason) for d in result.deleted] == [(0, "retention-size"), (1, "retention-ms")]
    assert _bases(result.state) == [2] and result.state.log_start_offset == 2


def test_retention_ms_negative_is_unlimited_and_size_at_limit():
    state = update_high_watermark(_singletons(10, 5, ts=0), 10)
    assert retention_pass(state, RetentionConfig(retention_ms=-1), NOW).count == 0
    # size equal to the limit: the excess is 0, no non-empty segment fits in it
    assert retention_pass(state, RetentionConfig(retention_ms=-1, retention_bytes=state.size), NOW).count == 0
    # the oldest segment goes once the excess covers all of it, not a byte less
    first = state.segments[0].size
    assert retention_pass(state, RetentionConfig(retention_ms=-1, retention_bytes=state.size - first + 1), NOW).count \
        == 0
    assert retention_pass(state, RetentionConfig(retention_ms=-1, retention_bytes=state.size - first), NOW).count == 1


def test_segments_without_timestamps_are_judged_by_file_mtime():
    """LogSegment.largestTimestamp falls back to the .log file's modification time when no record has a timestamp
    (shouldNotDeleteSegmentsWhenPolicyDoesNotIncludeDelete sets it with setLastModified)."""
    state = update_high_watermark(_singletons(15, 5, ts=-1), 15)
    assert state.segments[0].largest_timestamp == -1 and state.segments[0].last_modified == NOW
    cfg = RetentionConfig(retention_ms=1000)
    assert retention_pass(set_last_modified(state, NOW - 1000), cfg, NOW).count == 0
    touched = set_last_modified(state, NOW - 1001)
    assert retention_pass(touched, cfg, NOW).count == 3
    # compact only: the file's age does not matter
    assert retention_pass(touched, RetentionConfig(1000, cleanup_policy=("compact",)), NOW).count == 0


def test_config_validation():
    """LogConfig refuses retention.ms below -1 ("Value must be at least -1"); retention.bytes takes any negative."""
    with pytest.raises(ValueError, match="at least -1"):
        RetentionConfig(retention_ms=-2)
    assert RetentionConfig(retention_bytes=-7).retention_bytes == -7
    with pytest.raises(ValueError, match="cleanup.policy"):
        RetentionConfig(cleanup_policy=("deleet",))


def test_high_watermark_bounds():
    state = _singletons(10, 5)
    assert update_high_watermark(state, 99).high_watermark == 10
    state = update_high_watermark(state, 6)
    state, _ = delete_records(state, 6)
    assert update_high_watermark(state, 2).high_watermark == 6


@st.composite
def _logs(draw):
    state = empty_log()
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.booleans()):
            state = roll(state)
        ts = tuple(draw(st.lists(st.integers(0, 3000), min_size=1, max_size=3)))
        state = append(state, ts, draw(st.integers(0, 50)), 0)
    state = update_high_watermark(state, draw(st.integers(0, state.log_end_offset)))
    state, _ = delete_records(state, draw(st.integers(0, state.high_watermark)))
    return state


@settings(max_examples=200, deadline=None)
@given(_logs(), st.integers(-1, 1000), st.integers(-1, 2000), st.sampled_from([("delete",), ("compact",), ()]),
       st.integers(0, 4000))
def test_retention_keeps_the_storage_invariants(state, ms, size, policy, now):
    """Every run satisfies check_retention (a prefix, nothing at or above the high watermark, the log start offset
    never back), and a second run at the same clock deletes nothing."""
    cfg = RetentionConfig(ms, size, policy)
    result = retention_pass(state, cfg, now)
    assert check_retention(to_log_view(state), to_log_view(result.state)) == []
    after = result.state
    assert after.log_end_offset == state.log_end_offset and after.high_watermark == state.high_watermark
    assert after.log_start_offset >= state.log_start_offset
    assert after.segments[0].base_offset <= after.log_start_offset
    assert all(isinstance(s, SegmentSummary) and s.base_offset <= s.next_offset for s in after.segments)
    assert retention_pass(after, cfg, now).count == 0  # a second run at the same clock deletes nothing


@pytest.mark.parametrize("n", [0, 1, 25])
def test_garbage_collecting_segments_does_not_change_the_log_end(n):
    """testThatGarbageCollectingSegmentsDoesntChangeOffset: one record per segment (segment.bytes 100), records 10 ms
    old and retention.ms=0: a run deletes every segment holding data, rolling a new active one, so one segment is
    left and the log end stays; a second run deletes nothing; the next append gets the old log end."""
    state = update_high_watermark(_singletons(n, 1, ts=NOW - 10), n)
    assert state.log_end_offset == n
    first = retention_pass(state, RetentionConfig(retention_ms=0), NOW)
    assert first.count == n and len(first.state.segments) == 1 and first.state.log_end_offset == n
    again = retention_pass(first.state, RetentionConfig(retention_ms=0), NOW)
    assert again.count == 0 and again.state.log_end_offset == n
    after = append(again.state, (NOW,), 5, NOW)
    assert after.segments[-1].base_offset == n and after.log_end_offset == n + 1
