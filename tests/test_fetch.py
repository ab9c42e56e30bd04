"""reference/fetch.py on Kafka's own unit tests' values: LeaderEpochFileCacheTest (core/src/test/scala/unit/kafka/
server/epoch, 1eb7644349), and the rules of Partition.fetchRecords, ReplicaManager.readFromLog and
DelayedFetch.tryComplete on the cases their Scala code distinguishes (the jars drive the classes themselves in
test_kafka_fetch.py; the Scala parts are checked on brokers in test_fetch_cluster.py)."""

from __future__ import annotations

from kcheck.reference import fetch as rf
from kcheck.reference.log_segment import Batch, Record
from kcheck.reference.releases import profile


def _cache(*entries: tuple[int, int]) -> rf.EpochCache:
    c = rf.EpochCache()
    for e, o in entries:
        c.assign(e, o)
    return c


def test_leader_epoch_file_cache_tests_values() -> None:
    # shouldReturnFirstEpochIfRequestedEpochLessThanFirstEpoch
    assert _cache((5, 11), (6, 12), (7, 13)).end_offset_for(4, 0) == (4, 11)
    # shouldTruncateIfMatchingEpochButEarlierStartingOffset
    c = _cache((5, 11), (6, 12), (7, 13), (7, 12))
    assert c.end_offset_for(5, 0) == (5, 12) and c.end_offset_for(6, 0) == (5, 12)
    # shouldGetFirstOffsetOfSubsequentEpochWhenOffsetRequestedForPreviousEpoch
    assert _cache((1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16)).end_offset_for(2, 17) == (2, 15)
    # shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested
    c = _cache((0, 10), (2, 13), (4, 17))
    assert [c.end_offset_for(e, 0) for e in (1, 2, 3)] == [(0, 13), (2, 17), (2, 17)]
    # shouldNotOverwriteLogEndOffsetForALeaderEpochOnceItHasBeenAssigned,
    # shouldEnforceMonotonicallyIncreasingStartOffsets
    assert _cache((2, 9), (2, 10)).entries == [(2, 9)]
    assert _cache((2, 9), (3, 9)).entries == [(3, 9)]
    # shouldReturnInvalidOffsetIfEpochIsRequestedWhichIsNotCurrentlyTracked, shouldReturnUnsupportedIfNoEpochRecorded
    assert _cache((2, 100)).end_offset_for(3, 100) == (-1, -1)
    assert rf.EpochCache().end_offset_for(0, 0) == (-1, -1)
    # shouldEnforceMonotonicallyIncreasingEpochs
    c = _cache((1, 5), (2, 6), (1, 7))
    assert c.entries == [(1, 7)] and c.end_offset_for(1, 8) == (1, 8) and c.end_offset_for(2, 8) == (-1, -1)
    # shouldDropEntriesOnEpochBoundaryWhenRemovingLatestEntries, shouldPreserveResetOffsetOnClearEarliestIfOneExists
    c = _cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_end(8)
    assert c.entries == [(2, 6)]
    c = _cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_start(8)
    assert c.entries == [(3, 8), (4, 11)]


def _log(hw: int = 6, log_start: int = 0) -> rf.PartitionLog:
    big = Batch(0, (Record(0, 0, -1, 3000),))
    small = [Batch(i, (Record(0, 0, -1, 50),)) for i in range(1, 6)]
    return rf.PartitionLog.build(4096, log_start, hw, [(0, (big, *small))], profile("4.4.0"))


def test_partition_checks_in_kafkas_order() -> None:
    log, cache, consumer = _log(), _cache((3, 0), (5, 2)), rf.fetch_params(12, -1, False, False)
    state = rf.LeaderState(5)

    def error(f: rf.PartitionFetch, **kw: object) -> rf.PartitionRead:
        return rf.fetch_partition(log, cache, kw.get("state", state), kw.get("params", consumer),  # type: ignore
                                  kw.get("replica", -1), f, f.max_bytes, True)  # type: ignore[arg-type]

    assert error(rf.PartitionFetch(0, 100, 4)).error == rf.FENCED_LEADER_EPOCH
    assert error(rf.PartitionFetch(0, 100, 6)).error == rf.UNKNOWN_LEADER_EPOCH
    assert error(rf.PartitionFetch(0, 100, 5), state=rf.LeaderState(5, False)).error == rf.NOT_LEADER_OR_FOLLOWER
    follower = rf.fetch_params(12, 9, False, False)
    assert error(rf.PartitionFetch(0, 100, 5), params=follower, replica=9).error == rf.UNKNOWN_LEADER_EPOCH
    assert error(rf.PartitionFetch(0, 100), params=follower, replica=9).error == rf.NOT_LEADER_OR_FOLLOWER
    assert error(rf.PartitionFetch(7, 100, 5)).error == rf.OFFSET_OUT_OF_RANGE  # past the log end (6)
    assert error(rf.PartitionFetch(6, 100, 5)).data.size == 0  # at the end: empty, no error
    # epoch 3 ended at offset 2: fetching from 4 after it diverges; the log start wins over it
    assert error(rf.PartitionFetch(4, 100, 5, 3)).diverging_epoch == (3, 2)
    assert error(rf.PartitionFetch(4, 100, 5, 9)).error == rf.OFFSET_OUT_OF_RANGE  # an epoch past every one
    moved = _log(log_start=5)
    assert rf.fetch_partition(moved, cache, state, consumer, -1, rf.PartitionFetch(4, 100, 5, 3), 100,
                              True).error == rf.OFFSET_OUT_OF_RANGE


def test_isolation_bound_is_empty_not_an_error() -> None:
    log = _log(hw=3)
    assert log.read(4, 1000, rf.HIGH_WATERMARK, True).size == 0  # a consumer between HW and LEO
    assert log.read(4, 1000, rf.LOG_END, True).size > 0  # a follower reads to the log end
    committed = log.read(1, 1000, rf.TXN_COMMITTED, True)
    assert committed.aborted == 0 and log.read(1, 1000, rf.HIGH_WATERMARK, True).aborted is None


def test_first_batch_even_if_too_big_then_limits_bind() -> None:
    log = _log()
    first = log.read(0, 100, rf.LOG_END, True)
    assert first.size == log.segments[0].batches[0].size and not first.first_entry_incomplete
    cut = log.read(0, 100, rf.LOG_END, False)
    assert cut.size == 100 and cut.first_entry_incomplete

    def read(i: int, f: rf.PartitionFetch, max_bytes: int, min_one: bool) -> rf.PartitionRead:
        return rf.PartitionRead(data=log.read(f.fetch_offset, max_bytes, rf.LOG_END, min_one))

    parts = [rf.PartitionFetch(0, 100), rf.PartitionFetch(0, 100)]
    shared = rf.read_from_log(10_000, parts, read)
    assert [r.data.size for r in shared] == [first.size, 0]  # the second's cut batch is dropped (v3+)
    hard = rf.read_from_log(10_000, parts, read, hard_max_bytes_limit=True)
    assert [r.data.size for r in hard] == [100, 100]  # Fetch v<=2 on 3.9/4.0: no minOneMessage, parts kept


def test_delayed_fetch_cases() -> None:
    at = rf.OffsetMetadata
    f = rf.PartitionFetch(10, 1000)
    wp = rf.WaitingPartition
    assert rf.delayed_fetch_complete([wp(at(10, 0, 500), f, end=at(10, 0, 500))], 1, False) is None
    assert rf.delayed_fetch_complete([wp(at(10, 0, 500), f, end=at(12, 0, 700))], 1, False) == "G"
    assert rf.delayed_fetch_complete([wp(at(10, 0, 500), f, end=at(12, 0, 700))], 201, False) is None
    assert rf.delayed_fetch_complete([wp(at(10, 0, 500), f, end=at(12, 12, 0))], 1, False) == "F"  # older segment
    assert rf.delayed_fetch_complete([wp(at(10, 0, 500), f, end=at(12, 12, 0), throttled=True)], 1, True) is None
    assert rf.delayed_fetch_complete([wp(at(10, 0, 500), f, end=at(8, 0, 300))], 1, False) == "F"  # truncated
    assert rf.delayed_fetch_complete([wp(at(10, 0, 500), f, error=rf.FENCED_LEADER_EPOCH)], 1, False) == "E"
    assert rf.delayed_fetch_complete([wp(at(10, 0, 500), f, error=rf.NOT_LEADER_OR_FOLLOWER)], 1, False) == "A/B"
    diverged = rf.PartitionFetch(10, 1000, 5, 4)
    assert rf.delayed_fetch_complete([wp(at(10, 0, 500), diverged, end=at(10, 0, 500), epoch_end=(4, 8))], 1,
                                     False) == "H"
    assert not rf.respond_now(500, 1, [rf.PartitionRead(data=rf.FetchData(at(10)))])
    assert rf.respond_now(0, 1, [rf.PartitionRead(data=rf.FetchData(at(10)))])
    assert rf.respond_now(500, 1, [rf.PartitionRead(rf.OFFSET_OUT_OF_RANGE)])
    assert rf.respond_now(500, 1, [rf.PartitionRead(data=rf.FetchData(at(10)), diverging_epoch=(4, 8))])
