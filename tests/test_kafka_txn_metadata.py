"""Differential: `kcheck.reference.txn_metadata.TxnMetadata` against each release's real TransactionMetadata.

Each random example draws scripts of ops (`kafka_txn_metadata.random_case`, walked on our reference as the release) and
sends them in one round trip to the broker-side bridge (word TXNMETA of reference/harness/KcheckTxnMetadata.java); every
op's transit, Left or exception (class and message) and the whole metadata after it are compared. The named cases are
TransactionMetadataTest's (1eb7644349), told as scripts, with that test's expectations checked on Kafka's own answers
before ours are compared with them. KCHECK_KAFKA_RELEASES="4.0.2,4.4.0" overrides the releases.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES, assert_broker_side_ops_agree, kafka_bridge
from kcheck.reference import kafka_txn_metadata as ktm
from kcheck.reference import txn_metadata as tm
from kcheck.reference.releases import version_key

pytestmark = pytest.mark.kafka

RELEASES = list(ENV_RELEASES) or ["4.4.0", "4.1.2", "4.0.2", "3.9.1"]
BATCH = settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
OPS = 4000  # per release: scripts of up to 24 ops, about a second per release


@pytest.mark.parametrize("version", RELEASES)
@BATCH
@given(seed=st.integers(0, 2**63))
def test_transaction_metadata_ops_as_kafka(version: str, seed: int) -> None:
    assert_broker_side_ops_agree(ktm.compare_random, version, seed, OPS)


def _case(state: int, epoch: int, ops: tuple[ktm.Op, ...], start: int = -1, parts: tuple[int, ...] = ()) -> ktm.TxnCase:
    """TransactionMetadataTest's metadata: producer id 1000, no previous or next id, no last epoch, 30 s, TV_0."""
    return ktm.TxnCase(1000, -1, -1, epoch, -1, 30000, state, parts, start, 100, 0, False, ops)


def _fields(answer: str) -> tuple[str, list[str]]:
    """An answer's result token and the metadata's fields after it (pid, prev, next, epoch, last, timeout, state,
    pending, parts, start, update, tv, failed fence)."""
    result, state = answer.split("/")
    return result, state.split(",")


def _fence_at_max() -> ktm.TxnCase:
    """testFenceProducerNotAllowedIfItWouldOverflow: fencing at epoch Short.MAX_VALUE throws IllegalStateException."""
    return _case(tm.ONGOING, tm.SHORT_MAX, (("f",),), start=100)


def _check_fence_at_max(answers: list[str]) -> None:
    assert answers[0].startswith("!IllegalStateException:Cannot%20fence%20producer")


def _fence_exhausted() -> ktm.TxnCase:
    """testFenceProducerAfterEpochsExhausted: at epoch Short.MAX_VALUE - 1 the fence bumps to Short.MAX_VALUE with no
    last epoch; with the pending state reset, a TV_0 abort completes under the same producer id."""
    return _case(tm.ONGOING, tm.SHORT_MAX - 1, (("f",), ("u",), ("e", "a", 0, -1, 200, 0), ("k", None, None)),
                 start=100)


def _check_fence_exhausted(answers: list[str]) -> None:
    transit = _fields(answers[0])[0][1:].split(",")
    assert (transit[3], transit[4]) == (str(tm.SHORT_MAX), "-1")
    assert _fields(answers[0])[1][7] == str(tm.PREPARE_EPOCH_FENCE)
    assert _fields(answers[2])[0][1:].split(",")[0] == "1000"
    assert _fields(answers[3])[1][6] == str(tm.PREPARE_ABORT)


def _rotate() -> ktm.TxnCase:
    """testRotateProducerId: at epoch Short.MAX_VALUE - 1, rotating to producer id 9893 (recording the last epoch)
    leaves the old id as the previous one, epoch 0 and the old epoch as the last."""
    return _case(tm.EMPTY, tm.SHORT_MAX - 1, (("r", 9893, 30000, 200, 1), ("k", None, None)))


def _check_rotate(answers: list[str]) -> None:
    _, fields = _fields(answers[-1])
    assert (fields[0], fields[1], fields[3], fields[4]) == ("9893", "1000", "0", str(tm.SHORT_MAX - 1))


def _end_bump() -> ktm.TxnCase:
    """testEpochBumpOnEndTxn: a TV_2 commit bumps the epoch (10 -> 11) and the completion keeps it."""
    return _case(tm.ONGOING, 10, (("e", "c", 2, -1, 199, 0), ("k", None, None), ("c", 200), ("k", None, None)),
                 start=100)


def _check_end_bump(answers: list[str]) -> None:
    for i in (1, 3):
        _, fields = _fields(answers[i])
        assert (fields[0], fields[3], fields[11]) == ("1000", "11", "2")


def _end_overflow() -> ktm.TxnCase:
    """testEpochBumpOnEndTxnOverflow: a TV_2 commit at Short.MAX_VALUE - 1 with the next producer id 9893 bumps to
    Short.MAX_VALUE; the completion moves to producer id 9893 at epoch 0."""
    return _case(tm.ONGOING, tm.SHORT_MAX - 1, (("e", "c", 2, 9893, 199, 0), ("k", None, None), ("c", 200),
                                                ("k", None, None)), start=100)


def _check_end_overflow(answers: list[str]) -> None:
    assert _fields(answers[1])[1][:4:3] == ["1000", str(tm.SHORT_MAX)]
    assert _fields(answers[3])[1][:4:3] == ["9893", "0"]


# name: (script, the test's expectations, the releases they hold in: from, until (excluded) or None)
NAMED = {
    "fence-exhausted": (_fence_exhausted, _check_fence_exhausted, "3.9.1", None),
    "rotate-producer-id": (_rotate, _check_rotate, "3.9.1", None),
    "end-txn-bump": (_end_bump, _check_end_bump, "4.0.0", None),  # TV_2
    "end-txn-overflow": (_end_overflow, _check_end_overflow, "4.0.0", None),
    "fence-at-max-throws": (_fence_at_max, _check_fence_at_max, "3.9.1", "4.3.0"),  # KAFKA-20090
}


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("name", list(NAMED))
def test_named_case(name: str, version: str) -> None:
    make, check, since, until = NAMED[name]
    case = make()
    theirs = ktm.kafka_answers(kafka_bridge(version, server=True), [case])[0]
    key = version_key(version)
    if key >= version_key(since) and (until is None or key < version_key(until)):
        check(theirs)
    assert ktm.reference_answers(case, version) == theirs


def test_max_epoch_fence_release_difference() -> None:
    """KAFKA-20090 (4.3): fencing at Short.MAX_VALUE keeps the epoch instead of throwing."""
    case = _fence_at_max()
    old, new = ktm.reference_answers(case, "4.2.2"), ktm.reference_answers(case, "4.4.0")
    assert old[0].startswith("!IllegalStateException") and new[0].startswith(f"T1000,1000,-1,{tm.SHORT_MAX},")
    assert ktm.kafka_answers(kafka_bridge("4.4.0", server=True), [case])[0] == new
