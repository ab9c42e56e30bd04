"""Differential: `kcheck.reference.client_metadata.Metadata` against each release's kafka-clients Metadata.

Each example draws a batch of random call scripts (`kafka_client_metadata.random_case`: responses with epochs going
back and forth or absent, versions 8 and 12, topic ids changing, topic and partition errors, partial updates, KIP-951
hints, out-of-band epochs, failed updates, timeToNextUpdate) and sends them in one round trip (word CMETA of
reference/harness/KcheckClientMetadata.java); every call's result and the cache after it are compared.
KCHECK_KAFKA_RELEASES="4.0.2,4.4.0" overrides the releases.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.reference import client_metadata as cm
from kcheck.reference import kafka_client_metadata as kcm

pytestmark = pytest.mark.kafka

RELEASES = list(ENV_RELEASES) or ["4.4.0", "4.1.2", "4.0.2", "3.9.1"]
BATCH = settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
CALLS = 3000  # per release: scripts of up to 14 calls


@pytest.mark.parametrize("version", RELEASES)
@BATCH
@given(seed=st.integers(0, 2**63))
def test_client_metadata_calls_as_kafka(version: str, seed: int) -> None:
    compared, differing, smallest = kcm.compare_random(_kafka(version), random.Random(seed), CALLS)
    assert compared >= CALLS
    assert differing == 0, f"{differing} of {compared} calls differ; smallest:\n{smallest}"


def test_a_stale_leader_hint_is_ignored_and_a_newer_one_applies() -> None:
    """KIP-951 on the newest release: a hint with the cached epoch changes nothing; a newer one on a node the hint
    brings moves the leader, and the node joins the cache (Kafka's answer, then ours)."""
    partition = cm.ResponsePartition(0, 0, 0, 5)  # led by node 0 at epoch 5
    response = cm.MetadataResponse(12, (0, 1), (cm.ResponseTopic("a", 1, 0, False, (partition,)),))
    case = kcm.ClientMetadataCase(100, 100, 300_000, (
        ("u", 12, 10, False, 0, response),
        ("h", ((("a", 0), 1, 5),), ()),
        ("h", ((("a", 0), 2, 6),), (2,)),
    ))
    (steps,) = kcm.kafka_answers(_kafka(RELEASES[0]), [case])
    assert steps == kcm.reference_answers(case)
    assert steps[1] == "~/0:a=1:0,1:0.5.5:-.-.-:-.-.-:-.-.-:-.-.-:-.-.-"
    assert steps[2] == "a-0/0:a=1:0,1,2:2.6.6:-.-.-:-.-.-:-.-.-:-.-.-:-.-.-"
