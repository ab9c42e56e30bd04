"""reference/delayed_fetch.py on the expectations of Kafka's DelayedFetchTest (core/src/test/scala/integration/kafka/
server/DelayedFetchTest.scala, 1eb7644349) and on the rules of DelayedFetch.tryComplete and LogOffsetMetadata that
its comments name (the jars drive the class itself in test_kafka_delayed_fetch.py)."""

from __future__ import annotations

from kcheck.reference import delayed_fetch as df
from kcheck.reference import fetch as rf

at = rf.OffsetMetadata
FOLLOWER = df.FetchWait(1, rf.LOG_END, 1)  # DelayedFetchTest's buildFollowerFetchParams: replica 1, min bytes 1
CONSUMER = df.FetchWait(-1, rf.HIGH_WATERMARK, 1)


def _op(params: df.FetchWait, *waiting: df.Waiting) -> df.DelayedFetch:
    return df.DelayedFetch(params, list(waiting))


def _waiting(offset: int, current: int | None = 10, last: int | None = None) -> df.Waiting:
    """DelayedFetchTest's partition: the start known by its offset only, max bytes 1024, log start 0."""
    return df.Waiting(at(offset), rf.PartitionFetch(offset, 1024, current, last))


def _everywhere(end: rf.OffsetMetadata, **kw: object) -> df.PartitionNow:
    return df.PartitionNow(log_end=end, high_watermark=end, last_stable=end, **kw)  # type: ignore[arg-type]


def test_fenced_epoch_completes_at_once() -> None:
    """testFetchWithFencedEpoch: fetchOffsetSnapshot(epoch 10, leader only) throws FencedLeaderEpochException."""
    op = _op(FOLLOWER, _waiting(500))
    out = op.try_complete([df.PartitionNow(snapshot_error=rf.FENCED_LEADER_EPOCH)])
    assert (out.result, out.case, op.completed, len(op.reads)) == (True, "E", True, 1)
    assert out.calls == ("g0", "s0:10:1")


def test_not_leader_or_follower_completes_at_once() -> None:
    """testNotLeaderOrFollower: getPartitionOrException throws NotLeaderOrFollowerException."""
    op = _op(FOLLOWER, _waiting(500))
    out = op.try_complete([df.PartitionNow(lookup_error=rf.NOT_LEADER_OR_FOLLOWER)])
    assert (out.result, out.case, op.completed, out.calls) == (True, "A/B", True, ("g0",))


def test_diverging_epoch_completes() -> None:
    """testDivergingEpoch: last fetched epoch 9 ends at 499 on the leader, below the fetch offset 500."""
    op = _op(FOLLOWER, _waiting(500, 10, 9))
    out = op.try_complete([_everywhere(at(500, 0, 500), epoch_end=(rf.NONE, 9, 499))])
    assert (out.result, out.case, op.completed) == (True, "H:diverging", True)
    assert out.calls == ("g0", "s0:10:1", "e0:10:9:0")  # the epoch asked with fetchOnlyFromLeader = false


def test_message_only_high_watermark() -> None:
    """testDelayedFetchWithMessageOnlyHighWatermark: an end known by its offset only completes a fetch waiting
    past it (0: the leader truncated) but never counts as an older or the same segment (500: it waits)."""
    truncated = _op(FOLLOWER, _waiting(450))
    assert truncated.try_complete([_everywhere(at(0))]).case == "F:truncated" and truncated.completed
    ahead = _op(FOLLOWER, _waiting(450))
    out = ahead.try_complete([_everywhere(at(500))])
    assert (out.result, out.case, out.accumulated, ahead.completed, ahead.reads) == (False, None, 0, False, [])


def test_min_bytes_on_the_same_segment_and_throttling() -> None:
    """Case G counts min(position difference, partition max bytes) over the partitions; a throttled follower's
    partition counts nothing and does not complete on an older segment (KAFKA-6937)."""
    w = df.Waiting(at(10, 0, 500), rf.PartitionFetch(10, 150))
    assert _op(CONSUMER, w).try_complete([_everywhere(at(12, 0, 700))]).case == "G"  # 150 of 200 bytes count
    out = _op(df.FetchWait(-1, rf.HIGH_WATERMARK, 301), w, w).try_complete([_everywhere(at(12, 0, 700))] * 2)
    assert (out.result, out.accumulated) == (False, 300)
    follower = df.FetchWait(2, rf.LOG_END, 1)
    throttled = _everywhere(at(12, 12, 0), throttled=True)
    out = _op(follower, w).try_complete([throttled])
    assert (out.result, out.calls) == (False, ("g0", "s0:-:1", "q0:2"))
    assert _op(CONSUMER, w).try_complete([throttled]).case == "F:older-segment"  # consumers are never throttled


def test_isolation_picks_the_end() -> None:
    w = df.Waiting(at(10, 0, 0), rf.PartitionFetch(10, 1 << 20))
    now = df.PartitionNow(log_end=at(20, 0, 900), high_watermark=at(15, 0, 400), last_stable=at(10, 0, 0))
    assert [_op(df.FetchWait(-1, iso, 1), w).try_complete([now]).accumulated
            for iso in (rf.LOG_END, rf.HIGH_WATERMARK, rf.TXN_COMMITTED)] == [900, 400, 0]


def test_unknown_start_is_skipped_and_equality_is_field_by_field() -> None:
    """UNKNOWN_OFFSET_METADATA (-1, -1, -1) is never asked about; (-1, 0, 0) is not unknown (equals compares all
    three fields): the partition is looked up."""
    unknown = df.Waiting(df.UNKNOWN_OFFSET_METADATA, rf.PartitionFetch(0, 100))
    assert _op(CONSUMER, unknown).try_complete([df.PartitionNow(lookup_error=rf.NOT_LEADER_OR_FOLLOWER)]).calls == ()
    odd = df.Waiting(at(-1, 0, 0), rf.PartitionFetch(0, 100))
    assert _op(CONSUMER, odd).try_complete([df.PartitionNow(lookup_error=rf.NOT_LEADER_OR_FOLLOWER)]).case == "A/B"


def test_uncaught_exception_escapes_and_int_sums_wrap() -> None:
    op = _op(CONSUMER, _waiting(5, None))
    out = op.try_complete([df.PartitionNow(snapshot_error=75)])
    assert (out.result, out.raised, op.completed) == (None, "UnknownLeaderEpochException", False)
    big = df.Waiting(at(10, 0, 0), rf.PartitionFetch(10, 2**31 - 1))
    out = _op(df.FetchWait(-1, rf.HIGH_WATERMARK, 2**31 - 1), big, big).try_complete(
        [_everywhere(at(12, 0, 2**31 - 1))] * 2)
    assert (out.result, out.accumulated) == (False, -2)  # Int overflow in Scala's accumulatedSize


def test_completion_happens_once_and_expiry_marks_the_meter() -> None:
    op = _op(FOLLOWER, _waiting(500))
    op.run()
    op.run()
    assert op.completed and len(op.reads) == 1 and op.expired == {"follower": 1, "consumer": 0}
    again = op.try_complete([df.PartitionNow(lookup_error=rf.NOT_LEADER_OR_FOLLOWER)])
    assert (again.result, again.case, len(op.reads)) == (False, "A/B", 1)  # forceComplete answers false now
