"""Differential: `kcheck.reference.partitioner` against kafka-clients' own partitioner classes, per release.

Each example draws a batch of random inputs (kafka_partitioner's generators: keys at murmur2's edges, keys that
hash to Integer.MIN_VALUE, unpaired surrogates; sticky partitioners through topics with and without leaders and
racks, load stats that overflow, draws of 0 and Integer.MAX_VALUE) and sends it in one bridge round trip (words
PKEY and PSTICKY). About 2,000 keys and 1,000 sticky runs per release; 4.4.0 (rack-aware), 4.0.2 and 3.9.1 by
default (their bridges serve other tests too), 4.1.2 `slow`. KCHECK_KAFKA_RELEASES="4.1.2,4.4.0" overrides.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.reference import kafka_partitioner as kp
from kcheck.reference.partitioner import PartitionLeader

pytestmark = pytest.mark.kafka

RELEASES: list = list(ENV_RELEASES) or ["4.4.0", "4.0.2", "3.9.1", pytest.param("4.1.2", marks=pytest.mark.slow)]
BATCH = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("version", RELEASES)
@BATCH
@given(seed=st.integers(0, 2**63))
def test_keys_hash_as_kafka(version: str, seed: int) -> None:
    rng = random.Random(seed)  # one seed per batch: Hypothesis' own Random is far too slow for thousands of draws
    requests = [kp.random_key_request(rng, keys=50) for _ in range(10)]
    theirs = kp.kafka_key_answers(_kafka(version), requests)
    for (n, keys), answers in zip(requests, theirs, strict=True):
        ours = kp.reference_key_answers(n, keys)
        diffs = [(k, a, b) for k, a, b in zip(keys, answers, ours, strict=True) if a != b]
        assert not diffs, f"numPartitions {n}, {len(diffs)} keys differ, first {diffs[0]} (key, kafka, ours)"


@pytest.mark.parametrize("version", RELEASES)
@BATCH
@given(seed=st.integers(0, 2**63))
def test_sticky_partitioner_chooses_as_kafka(version: str, seed: int) -> None:
    rng = random.Random(seed)
    cases = [kp.random_sticky_case(rng) for _ in range(250)]
    theirs = kp.kafka_sticky_outcomes(_kafka(version), cases)
    diffs = [(c, k, r) for c, k in zip(cases, theirs, strict=True)
             if k != (r := kp.reference_sticky_outcome(c, version))]
    if diffs:
        c, k, r = min(diffs, key=lambda d: len(kp.encode_sticky(d[0])))
        pytest.fail(f"{len(diffs)}/{len(cases)} differ; smallest:\n{kp.encode_sticky(c)}\nkafka: {k}\nours:  {r}")


def test_rack_aware_choice_only_in_4_4() -> None:
    """The same request to 4.4.0 and 4.0.2: rack-aware, client rack 'b', no load stats, draw 0."""
    topic = kp.Topic((PartitionLeader(0, 1, "a"), PartitionLeader(1, 2, "b")))
    case = kp.StickyCase(10, True, "b", (0,), (topic, kp.Append(1)))
    assert kp.kafka_sticky_outcomes(_kafka("4.4.0"), [case]) == [(("ok", 1), 1)]
    assert kp.kafka_sticky_outcomes(_kafka("4.0.2"), [case]) == [(("ok", 0), 1)]
    assert kp.reference_sticky_outcome(case, "4.4.0") == (("ok", 1), 1)
    assert kp.reference_sticky_outcome(case, "4.0.2") == (("ok", 0), 1)
