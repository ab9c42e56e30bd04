"""The last stable offset and the aborted-transaction index: `kcheck.reference.transaction_index` against Kafka.

Two differentials draw scripts (`kafka_transaction_index.random_case`: overlapping transactions of several
producers, commits and aborts, high-watermark moves, rolls, deletion and log-start moves, truncation, fetches) and
send them in one bridge round trip each. TXNIDX (reference/harness/KcheckProducerState.java, every release): after
every step the producer state's first unstable and undecided offsets, every segment's TransactionIndex and LocalLog's
walk of the aborted transactions up to a bound. TXNLOG (reference/harness/KcheckTxnLog.java, a real UnifiedLog, 4.1
on): the high watermark, UnifiedLog's first unstable and last stable offsets, the indexes and what a read_committed
read returns. KCHECK_KAFKA_RELEASES="4.0.2,4.4.0" overrides the releases.

The other tests take their expected values from Kafka's own tests (TransactionIndexTest, ProducerStateManagerTest,
UnifiedLogTest at apache/kafka 3.9): our reference gives them, and a real UnifiedLog of 4.4.0 gives them too.
"""

from __future__ import annotations

import random
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.reference import kafka_transaction_index as kti
from kcheck.reference import kafka_txn_log as ktl
from kcheck.reference.producer_state import ProducerStateManager
from kcheck.reference.releases import profile
from kcheck.reference.transaction_index import (
    AbortedTxn,
    collect_abortable,
    first_unstable_offset,
    last_stable_offset_at_completion,
    truncate_index,
)

RELEASES = list(ENV_RELEASES) or ["4.4.0", "4.1.2", "4.0.2", "3.9.1"]
BATCH = settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
PER_EXAMPLE = 150  # scripts of up to 40 steps: about 3,000 steps compared per release


def _differential(module: ModuleType, version: str, seed: int, n: int, server: bool = False) -> None:
    rng = random.Random(seed)  # one seed per batch: Hypothesis' own Random is far too slow for thousands of draws
    cases = [module.random_case(rng, version) for _ in range(n)]
    theirs = module.kafka_answers(_kafka(version, server=server), cases)
    diffs = [(c, k, r) for c, k in zip(cases, theirs, strict=True) if k != (r := module.reference_answers(c, version))]
    if diffs:
        c, k, r = min(diffs, key=lambda d: len(d[0].ops))
        step = next(i for i, (a, b) in enumerate(zip(k, r, strict=True)) if a != b)
        pytest.fail(f"{len(diffs)}/{len(cases)} differ; smallest:\n{module.encode_case(c)}\nstep {step} "
                    f"{c.ops[step]}\nkafka: {k[step]}\nours:  {r[step]}")


@pytest.mark.kafka
@pytest.mark.parametrize("version", RELEASES)
@BATCH
@given(seed=st.integers(0, 2**63))
def test_transaction_index_steps_as_kafka(version: str, seed: int) -> None:
    _differential(kti, version, seed, PER_EXAMPLE)


@pytest.mark.kafka
@pytest.mark.parametrize("version", RELEASES)
@BATCH
@given(seed=st.integers(0, 2**63))
def test_unified_log_steps_as_kafka(version: str, seed: int) -> None:
    # a UnifiedLog per script: slower; 4.0's (Scala, kafka_2.13) is on the broker-side bridge only
    _differential(ktl, version, seed, PER_EXAMPLE // 2, server=ktl.broker_side(version))  # about 1,500 steps


@pytest.mark.kafka
def test_offset_metadata_is_kafkas_per_release() -> None:
    """`fetch_offset_metadata_batch_base` (4.0, KAFKA-17803): a high watermark set inside a batch (records 0-2), then a
    read: from 4.0 it moves to the batch's base, 0; in 3.9 it stays at 1. Both as the release's UnifiedLog says."""
    case = kti.TxnIndexCase(86_400_000, 0, (("a", 0, 1, 0, 3, 0, 0), ("a", -1, -1, -1, 3, 0, 0), ("h", 1), ("f", 1)))
    old, new = ktl.reference_answers(case, "3.9.1"), ktl.reference_answers(case, "4.0.2")
    assert (_head(old[3])[0], _head(new[3])[0]) == ("1", "0")
    assert ktl.kafka_answers(_kafka("3.9.1"), [case])[0] == old
    assert ktl.kafka_answers(_kafka("4.0.2", server=True), [case])[0] == new


# ---------------------------------------------------------------- TransactionIndexTest

_COLLECT = [AbortedTxn(0, 0, 10, 11), AbortedTxn(1, 5, 15, 13), AbortedTxn(2, 18, 35, 25), AbortedTxn(3, 32, 50, 40)]


@pytest.mark.parametrize(("fetch", "upper", "count", "first", "complete"), [
    (0, 100, 4, 0, False), (0, 32, 3, 0, True), (0, 35, 4, 0, True), (10, 35, 4, 0, True), (11, 35, 3, 1, True),
    (20, 41, 2, 2, False)])
def test_collect_aborted_txns_as_transaction_index_test(fetch: int, upper: int, count: int, first: int,
                                                        complete: bool) -> None:
    """TransactionIndexTest.testCollectAbortedTransactions: the entries a range overlaps, complete or not."""
    assert collect_abortable(_COLLECT, fetch, upper) == (_COLLECT[first:first + count], complete)


def test_truncate_as_transaction_index_test() -> None:
    """TransactionIndexTest.testTruncate: 51 keeps all four, 50 drops the one ending at 50."""
    index = [AbortedTxn(0, 0, 10, 2), AbortedTxn(1, 5, 15, 16), AbortedTxn(2, 18, 35, 25), AbortedTxn(3, 32, 50, 40)]
    assert truncate_index(index, 51) == index
    assert truncate_index(index, 50) == index[:3]


# ---------------------------------------------------------------- ProducerStateManagerTest


def test_last_stable_offset_completed_txn_as_producer_state_manager_test() -> None:
    """ProducerStateManagerTest.testLastStableOffsetCompletedTxn: three open transactions completed out of order."""
    psm = ProducerStateManager(86_400_000, [0], profile())
    start1, start2, start3 = 992342, 992342 + 25, 992342 + 57
    psm.ongoing.update({start1: 1, start2: 2, start3: 3})  # beginTransaction of producers 1, 2, 3
    last1 = start3 + 15
    assert last_stable_offset_at_completion(psm, 1, last1) == start2
    psm.complete_txn(start1, last1)
    psm.remove_unreplicated(last1 + 1)
    assert first_unstable_offset(psm) == start2
    last3 = last1 + 20
    assert last_stable_offset_at_completion(psm, 3, last3) == start2
    psm.complete_txn(start3, last3)
    psm.remove_unreplicated(last3 + 1)
    assert first_unstable_offset(psm) == start2
    last2 = last3 + 78
    assert last_stable_offset_at_completion(psm, 2, last2) == last2 + 1
    psm.complete_txn(start2, last2)
    psm.remove_unreplicated(last2 + 1)
    assert first_unstable_offset(psm) is None


# ---------------------------------------------------------------- UnifiedLogTest, through Kafka's classes too


def _txn(pid: int, seqs: dict[int, int], count: int) -> kti.Op:
    seq = seqs.get(pid, 0)
    seqs[pid] = seq + count
    return ("a", pid, 0, seq, count, 1, 1000)


def _plain(count: int) -> kti.Op:
    return ("a", -1, -1, -1, count, 0, 1000)


def _marker(pid: int, commit: bool) -> kti.Op:
    return ("m", pid, 0, 0, int(commit), 0, 1000)


def _transaction_index_updated() -> kti.TxnIndexCase:
    """UnifiedLogTest.testTransactionIndexUpdated's appends, then the high watermark at 30, 75 and the log end."""
    s: dict[int, int] = {}
    ops = (_txn(1, s, 5), _plain(3), _txn(2, s, 2), _txn(1, s, 4), _txn(3, s, 3), _plain(2), _txn(1, s, 10),
           _marker(1, False), _txn(2, s, 6), _txn(4, s, 3), _plain(10), _txn(3, s, 9), _marker(3, True), _txn(4, s, 8),
           _txn(2, s, 7), _marker(2, False), _plain(10), _txn(4, s, 4), _marker(4, True),
           ("h", 30), ("h", 75), ("h", 90))
    return kti.TxnIndexCase(86_400_000, 1000, ops)


def _lso_not_below_log_start(deletion: bool) -> kti.TxnIndexCase:
    """UnifiedLogTest.testLastStableOffsetDoesNotExceedLogStartOffset{MidSegment,AfterSegmentDeletion}."""
    s: dict[int, int] = {}
    ops: tuple[kti.Op, ...] = (_txn(1, s, 5), _plain(3), ("r",), _txn(1, s, 5), ("h", 13))
    ops += (("s", 8), ("d", 1)) if deletion else (("s", 5),)
    return kti.TxnIndexCase(86_400_000, 1000, ops)


def _mixed_producers() -> kti.TxnIndexCase:
    """UnifiedLogTest.testLastStableOffsetWithMixedProducerData (pids 137 and 983, epoch 5)."""
    ops = (("a", 137, 5, 0, 3, 1, 1000), _plain(3), ("a", 983, 5, 0, 3, 1, 1000), ("m", 137, 5, 0, 0, 0, 1000),
           ("h", 10), ("m", 983, 5, 0, 1, 0, 1000), ("h", 11))
    return kti.TxnIndexCase(86_400_000, 1000, ops)


def _spanning_segments() -> kti.TxnIndexCase:
    """UnifiedLogTest.testAbortedTransactionSpanningMultipleSegments: three segments of one transaction; a fetch from
    0 (its upper bound the first segment's end) collects it from the last segment's index."""
    ops = (("a", 137, 5, 0, 3, 1, 1000), ("r",), ("a", 137, 5, 3, 3, 1, 1000), ("r",), ("m", 137, 5, 0, 0, 0, 1000),
           ("h", 7), ("f", 0))
    return kti.TxnIndexCase(86_400_000, 1000, ops)


def _head(answer: str) -> tuple[str, str, str, str, str]:
    """hw, firstUnstable, lso, logStart, logEnd of one TXNLOG step's answer."""
    h, f, lso, s, e = answer.split("/")[1].split(":")
    return h, f, lso, s, e


UNIFIED_LOG_TESTS = [
    # the two aborted transactions' entries (first offset, marker offset, LSO at completion), then the first
    # unstable offset at each high watermark: 8, 36, none
    (_transaction_index_updated, lambda a: (a[18].split("/")[2], [_head(x)[1] for x in a[19:]]),
     ("0=1,0,29,8;2,8,74,36", ["8", "36", "~"])),
    (lambda: _lso_not_below_log_start(False), lambda a: (_head(a[4])[1], _head(a[5])[1]), ("0", "5")),
    (lambda: _lso_not_below_log_start(True), lambda a: (_head(a[4])[1], _head(a[6])[1]), ("0", "8")),
    # the first transaction's abort moves the first unstable offset to the second's first offset (6), the commit
    # and the high watermark past it clear it; the LSO is the first unstable offset below the high watermark
    (_mixed_producers, lambda a: [_head(x)[1:3] for x in a[2:]],
     [("0", "0"), ("0", "0"), ("6", "6"), ("6", "6"), ("~", "11")]),
    # the read from 0 returns the aborted transaction (producer 137, first offset 0)
    (_spanning_segments, lambda a: (_head(a[5])[1], a[6].split("/")[0]), ("~", "F137,0")),
]


@pytest.mark.parametrize(("make", "pick", "expected"), UNIFIED_LOG_TESTS,
                         ids=["index-updated", "lso-log-start-mid-segment", "lso-log-start-deletion", "mixed-producers",
                              "spanning-segments"])
def test_reference_as_unified_log_test(make, pick, expected) -> None:  # type: ignore[no-untyped-def]
    assert pick(ktl.reference_answers(make())) == expected


@pytest.mark.kafka
def test_unified_log_tests_through_kafka() -> None:
    cases = [make() for make, _, _ in UNIFIED_LOG_TESTS]
    theirs = ktl.kafka_answers(_kafka("4.4.0"), cases)
    assert [pick(a) for (_, pick, _), a in zip(UNIFIED_LOG_TESTS, theirs, strict=True)] == [
        e for _, _, e in UNIFIED_LOG_TESTS]
