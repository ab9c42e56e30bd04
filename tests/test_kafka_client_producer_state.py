"""Differential: `kcheck.reference.client_producer_state` against each release's TransactionManager, step by step.

Each random example draws a batch of scripts (`kafka_client_producer_state.random_case`) and sends them in one bridge
round trip (word TXNCLI of reference/harness/KcheckClientProducerState.java); every step's verdict and the whole
bookkeeping after it are compared. The named cases are TransactionManagerTest's idempotent-producer scenarios, told
as scripts of what the Sender does, with that test's expectations checked on Kafka's own answers.
KCHECK_KAFKA_RELEASES="4.0.2,4.4.0" overrides the releases.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.reference import kafka_client_producer_state as kcs
from kcheck.reference.client_producer_state import SHORT_MAX

pytestmark = pytest.mark.kafka

RELEASES = list(ENV_RELEASES) or ["4.4.0", "4.1.2", "4.0.2", "3.9.1"]
BATCH = settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
PER_EXAMPLE = 250  # scripts of up to 40 steps: about 3,000 steps compared per release


def _differences(version: str, cases: list[kcs.ClientCase]) -> str:
    theirs = kcs.kafka_answers(_kafka(version), cases)
    diffs = [(c, k, r) for c, k in zip(cases, theirs, strict=True) if k != (r := kcs.reference_answers(c, version))]
    if not diffs:
        return ""
    c, k, r = min(diffs, key=lambda d: len(d[0].ops))
    step = next(i for i, (a, b) in enumerate(zip(k, r, strict=True)) if a != b)
    return (f"{len(diffs)}/{len(cases)} differ; smallest:\n{kcs.encode_case(c)}\nstep {step} {c.ops[step]}\n"
            f"kafka: {k[step]}\nours:  {r[step]}")


@pytest.mark.parametrize("version", RELEASES)
@BATCH
@given(seed=st.integers(0, 2**63))
def test_client_steps_as_kafka(version: str, seed: int) -> None:
    rng = random.Random(seed)  # one seed per batch: Hypothesis' own Random is far too slow for thousands of draws
    diffs = _differences(version, [kcs.random_case(rng, version) for _ in range(PER_EXAMPLE)])
    assert not diffs, diffs


def _n(p: int, count: int = 1) -> kcs.Op:
    return ("n", p, count)


def _ok(b: int, offset: int) -> kcs.Op:
    return ("r", b, "NONE", offset, -1, 0)


def _err(b: int, error: str, log_start: int = -1, late: int = 0) -> kcs.Op:
    return ("r", b, error, -1, log_start, late)


def _state(answer: str) -> tuple[str, str, str, dict[int, list[str]]]:
    """An answer's (verdict, producer id:epoch:state, unresolved, per partition its fields)."""
    verdict, head, _rewrite, unresolved, entries = answer.split("/")
    rows = {int(r.split(",")[0]): r.split(",")[1:] for r in entries.split(";") if r != "~"}
    return verdict, ":".join(head.split(":")[:3]), unresolved, rows


# TransactionManagerTest's idempotent scenarios (the test's name, then what it checks, in our words), each as a script
# whose Kafka answers are checked against that test's expectations, then against our reference.

def _unknown_producer_bump() -> kcs.ClientCase:
    """testBumpEpochAndResetSequenceNumbersAfterUnknownProducerId: five single-record batches in flight, the first
    acknowledged, the second answered UNKNOWN_PRODUCER_ID with the log start at the last acked offset: retried, and
    the next Sender loop bumps the epoch and renumbers the four still in flight from 0 in the new epoch."""
    return kcs.ClientCase(5, 1000, 1, (*(_n(0) for _ in range(5)), *(("d", b) for b in range(5)), _ok(0, 500),
                                       _err(1, "UNKNOWN_PRODUCER_ID", 500), ("l",)))


def _check_unknown_producer_bump(answers: list[str]) -> None:
    assert _state(answers[-2])[0] == "R"
    _, head, _, rows = _state(answers[-1])
    assert head == "1000:2:READY"
    assert rows[0][-1] == "1@0:2:1000r_2@1:2:1000r_3@2:2:1000r_4@3:2:1000r"


def _timeout_without_inflight() -> kcs.ClientCase:
    """testBumpEpochAfterTimeoutWithoutPendingInflightRequests: a batch acknowledged, the next one retried and then
    expired: its sequence is unresolved, nothing is in flight, so the Sender loop bumps the epoch (5 -> 6)."""
    return kcs.ClientCase(5, 15, 5, (_n(0), ("d", 0), _ok(0, 500), _n(0), ("d", 1), _err(1, "NETWORK_EXCEPTION"),
                                     ("x", 1), ("l",)))


def _check_timeout_without_inflight(answers: list[str]) -> None:
    assert _state(answers[-2])[:3] == ("XU", "15:5:READY", "0=2")
    _, head, unresolved, rows = _state(answers[-1])
    assert (head, unresolved, rows[0][2]) == ("15:6:READY", "~", "0")


def _last_inflight_succeeds() -> kcs.ClientCase:
    """testNoProducerIdResetAfterLastInFlightBatchSucceeds: of three batches in flight the first (retried) and the
    second expire; the third is acknowledged, which resolves the sequence with no bump (epoch 5, next sequence 3)."""
    return kcs.ClientCase(5, 15, 5, (_n(0), _n(0), _n(0), ("d", 0), ("d", 1), ("d", 2), _err(0, "NETWORK_EXCEPTION"),
                                     ("x", 0), ("x", 1), ("l",), _ok(2, 500), ("l",)))


def _check_last_inflight_succeeds(answers: list[str]) -> None:
    assert _state(answers[-3])[1:3] == ("15:5:READY", "0=1")
    _, head, unresolved, rows = _state(answers[-1])
    assert (head, unresolved, rows[0][2], rows[0][3]) == ("15:5:READY", "~", "3", "2")


def _last_inflight_fails() -> kcs.ClientCase:
    """testEpochBumpAfterLastInflightBatchFails: the first of three expires after a retry, the second is acknowledged,
    the third expires: the epoch is bumped and the partition starts again at sequence 0."""
    return kcs.ClientCase(5, 15, 1, (_n(0), _n(0), _n(0), ("d", 0), ("d", 1), ("d", 2), _err(0, "NETWORK_EXCEPTION"),
                                     ("x", 0), _ok(1, 500), ("l",), ("x", 2), ("l",)))


def _check_last_inflight_fails(answers: list[str]) -> None:
    assert _state(answers[-3])[1:3] == ("15:1:READY", "0=1")
    _, head, unresolved, rows = _state(answers[-1])
    assert (head, unresolved, rows[0][2]) == ("15:2:READY", "~", "0")


def _fatal_stops_bumps() -> kcs.ClientCase:
    """testNoFailedBatchHandlingWhenTxnManagerIsInFatalError: OUT_OF_ORDER_SEQUENCE_NUMBER on the next expected batch
    with no retries left bumps the epoch (5 -> 6); once the producer is in a fatal error (here
    CLUSTER_AUTHORIZATION_FAILED), a failure that would ask for a bump does not, and nothing drains."""
    return kcs.ClientCase(0, 15, 5, (_n(0), ("d", 0), _err(0, "OUT_OF_ORDER_SEQUENCE_NUMBER"), ("l",), _n(1),
                                     ("d", 1), _err(1, "CLUSTER_AUTHORIZATION_FAILED"), _n(0), ("d", 2), ("l",)))


def _check_fatal_stops_bumps(answers: list[str]) -> None:
    assert _state(answers[3])[1] == "15:6:READY"
    assert answers[6].split("/")[1].startswith("15:6:FATAL_ERROR:ClusterAuthorizationException:0")
    assert _state(answers[8])[0] == "B"
    assert _state(answers[9])[1] == "15:6:FATAL_ERROR"


def _completed_after_reset() -> kcs.ClientCase:
    """testBatchCompletedAfterProducerReset: at epoch Short.MAX_VALUE another partition's error resets the producer
    id; the first partition keeps its old-epoch sequences while its batches are in flight, and starts again at 0 in
    the new producer id only once they completed (KAFKA-12152's lazy reset, at the next drain)."""
    return kcs.ClientCase(5, 1000, SHORT_MAX, (_n(0), _n(1), _n(0), ("d", 0), ("d", 1), ("d", 2),
                                               _err(1, "OUT_OF_ORDER_SEQUENCE_NUMBER"), ("l",), ("i", 1001, 0),
                                               _ok(0, 500), _ok(2, 501), _n(0), ("d", 3)))


def _check_completed_after_reset(answers: list[str]) -> None:
    _, head, _, rows = _state(answers[9])
    assert head == "1001:0:READY"
    assert rows[0][:4] == ["1000", str(SHORT_MAX), "2", "0"] and rows[0][-1] == f"2@1:{SHORT_MAX}:1000"
    assert _state(answers[-1])[0] == "S0:0"


def _retry_without_producer_id() -> kcs.ClientCase:
    """Not in TransactionManagerTest, found by the differential: the bump at Short.MAX_VALUE renumbers the partition's
    in-flight batch under no producer id, and its retry goes out with producer id -1 and epoch -1 (so the broker
    cannot tell it from a non-idempotent batch) after the new id arrived."""
    return kcs.ClientCase(5, 1000, SHORT_MAX, (_n(0), ("d", 0), _err(0, "OUT_OF_ORDER_SEQUENCE_NUMBER"), ("l",),
                                               ("i", 1001, 0), ("d", 0)))


def _check_retry_without_producer_id(answers: list[str]) -> None:
    assert _state(answers[3])[3][0][-1] == "0@0:-1:-1r"
    assert _state(answers[-1])[0] == "S0:-1"
    assert _state(answers[-1])[3][0][-1] == "0@0:-1:-1"


NAMED = {
    "unknown-producer-id-bumps-and-renumbers": (_unknown_producer_bump, _check_unknown_producer_bump),
    "timeout-without-inflight-bumps": (_timeout_without_inflight, _check_timeout_without_inflight),
    "last-inflight-success-resolves": (_last_inflight_succeeds, _check_last_inflight_succeeds),
    "last-inflight-failure-bumps": (_last_inflight_fails, _check_last_inflight_fails),
    "fatal-error-stops-bumps": (_fatal_stops_bumps, _check_fatal_stops_bumps),
    "completed-after-producer-reset": (_completed_after_reset, _check_completed_after_reset),
    "retry-without-producer-id": (_retry_without_producer_id, _check_retry_without_producer_id),
}


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("name", list(NAMED))
def test_named_case(name: str, version: str) -> None:
    make, check = NAMED[name]
    case = make()
    theirs = kcs.kafka_answers(_kafka(version), [case])[0]
    check(theirs)
    assert kcs.reference_answers(case, version) == theirs


def test_invalid_pid_mapping_release_difference() -> None:
    """KAFKA-18019 (4.0): INVALID_PRODUCER_ID_MAPPING turns the producer fatal; before, the batch failed and its
    partition asked for a bump."""
    case = kcs.ClientCase(5, 7, 0, (_n(0), ("d", 0), _err(0, "INVALID_PRODUCER_ID_MAPPING"), ("l",)))
    old, new = kcs.reference_answers(case, "3.9.1"), kcs.reference_answers(case, "4.0.2")
    assert old != new
    assert kcs.kafka_answers(_kafka("3.9.1"), [case])[0] == old
    assert kcs.kafka_answers(_kafka("4.0.2"), [case])[0] == new
    assert _state(old[-1])[1] == "7:1:READY" and _state(new[-1])[1] == "7:0:FATAL_ERROR"
