"""Differential: `kcheck.reference.producer_state` against each release's ProducerStateManager, step by step.

Each example draws a batch of random scripts (`kafka_producer_state.random_case`: appends with retries in and past
the five cached batches, gaps, new epochs, wrap-around, markers of every transaction version, verification
entries, expiry, rolls, segment deletion, DeleteRecords, truncation) and sends them in one bridge round trip
(word PSTATE of reference/harness/KcheckProducerState.java); every step's verdict and the whole producer state
after it are compared. KCHECK_KAFKA_RELEASES="4.0.2,4.4.0" overrides the releases.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.reference import kafka_producer_state as kps
from kcheck.reference.producer_state import SHORT_MAX

pytestmark = pytest.mark.kafka

RELEASES = list(ENV_RELEASES) or ["4.4.0", "4.1.2", "4.0.2", "3.9.1"]
BATCH = settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
PER_EXAMPLE = 200  # scripts of up to 30 steps: about 3,000 steps compared per release


@pytest.mark.parametrize("version", RELEASES)
@BATCH
@given(seed=st.integers(0, 2**63))
def test_producer_state_steps_as_kafka(version: str, seed: int) -> None:
    rng = random.Random(seed)  # one seed per batch: Hypothesis' own Random is far too slow for thousands of draws
    cases = [kps.random_case(rng, version) for _ in range(PER_EXAMPLE)]
    theirs = kps.kafka_answers(_kafka(version), cases)
    diffs = [(c, k, r) for c, k in zip(cases, theirs, strict=True) if k != (r := kps.reference_answers(c, version))]
    if diffs:
        c, k, r = min(diffs, key=lambda d: len(d[0].ops))
        step = next(i for i, (a, b) in enumerate(zip(k, r, strict=True)) if a != b)
        pytest.fail(f"{len(diffs)}/{len(cases)} differ; smallest:\n{kps.encode_case(c)}\nstep {step} {c.ops[step]}\n"
                    f"kafka: {k[step]}\nours:  {r[step]}")


def _case(*ops: kps.Op) -> kps.ProducerStateCase:
    return kps.ProducerStateCase(86_400_000, 1000, ops)


# Each release difference of the family: a script whose answer changes at the release that changed it, run on the
# releases either side of it (both in the cache: 3.9.1, 4.0.2, 4.1.2, 4.4.0; 4.2.2 for the last one).
DIFFERENCES = [
    # a TV2 verification entry for a producer without state: sequence 0 only from 4.1 (KAFKA-18202)
    ("producer_tv2_first_sequence_zero", "4.0.2", "4.1.2",
     _case(("v", 7, 3, 0, 1), ("a", 7, 0, 3, 1, 0, 1000))),
    # a TV2 marker of the verified epoch keeps the verification entry from 4.0
    ("producer_verification_epoch_bump", "3.9.1", "4.0.2",
     _case(("v", 7, 5, 2, 1), ("m", 7, 2, 0, 1, 0, 1000))),
    # a TV2 marker at the epoch of an open transaction: refused from 4.2 (KIP-1228)
    ("producer_marker_epoch_by_transaction_version", "4.1.2", "4.4.0",
     _case(("a", 7, 0, 0, 1, 1, 1000), ("m", 7, 0, 0, 1, 2, 1000))),
    # ... but at Short.MAX_VALUE accepted again from 4.3 (KAFKA-20090)
    ("producer_marker_retry_at_max_epoch", "4.2.2", "4.4.0",
     _case(("a", 7, SHORT_MAX, 0, 1, 1, 1000), ("m", 7, SHORT_MAX, 0, 1, 2, 1000))),
]


@pytest.mark.parametrize(("field", "before", "after", "case"), DIFFERENCES, ids=[d[0] for d in DIFFERENCES])
def test_each_release_difference_is_kafkas(field: str, before: str, after: str, case: kps.ProducerStateCase) -> None:
    old, new = kps.reference_answers(case, before), kps.reference_answers(case, after)
    assert old != new, f"{field}: the script does not tell {before} from {after}"
    assert kps.kafka_answers(_kafka(before), [case])[0] == old
    assert kps.kafka_answers(_kafka(after), [case])[0] == new
