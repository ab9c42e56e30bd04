"""Differential: `kcheck.reference.purgatory.DelayedProduce` against each release's real DelayedProduce.

Each example draws a batch of random operations (`kafka_purgatory.random_case`: partitions whose append failed or
succeeded, tryComplete calls with every kind of validator answer, expiry, calls after completion) and sends them in
one round trip to the broker-side bridge (word DPROD: the Scala kafka.server.DelayedProduce up to 4.2 with a Mockito
ReplicaManager, the Java org.apache.kafka.server.purgatory.DelayedProduce from 4.3); every step's result, the
partitions asked, every partition's state and the callback's map are compared.
KCHECK_KAFKA_RELEASES="4.0.2,4.4.0" overrides the releases.
"""

from __future__ import annotations

import random
import re
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES, require_jdk
from kcheck.reference import kafka_jars
from kcheck.reference import kafka_purgatory as kp
from kcheck.reference import purgatory as pg
from kcheck.reference.kafka_bridge import KafkaBridge, shared_bridge
from kcheck.reference.releases import profile

pytestmark = pytest.mark.kafka

RELEASES = list(ENV_RELEASES) or ["4.4.0", "4.1.2", "4.0.2", "3.9.1"]
BATCH = settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
STEPS = 3000  # per release: operations of up to 9 steps


def _bridge(version: str) -> KafkaBridge:
    require_jdk()
    return shared_bridge(version, server=True)


@pytest.mark.parametrize("version", RELEASES)
@BATCH
@given(seed=st.integers(0, 2**63))
def test_delayed_produce_steps_as_kafka(version: str, seed: int) -> None:
    compared, differing, smallest = kp.compare_random(_bridge(version), random.Random(seed), STEPS)
    assert compared >= STEPS
    assert differing == 0, f"{differing} of {compared} steps differ; smallest:\n{smallest}"


def test_expiry_answers_timed_out_and_completion_happens_once() -> None:
    """The cases Kafka's own comments name, on the newest release: a partition that never gets enough replicas
    answers REQUEST_TIMED_OUT at the deadline; the callback runs once, whatever comes after."""
    ok, failed = kp.PartitionSpec(0, 10, 12, 0), kp.PartitionSpec(pg.NOT_LEADER_OR_FOLLOWER, -1, 0, -1)
    short, enough = ("R", 0, 0), ("R", 1, 0)
    case = kp.DelayedProduceCase(30_000, (ok, failed), ((short, short), None, (enough, enough), None))
    (steps,) = kp.kafka_answers(_bridge(RELEASES[0]), [case])
    assert steps == kp.reference_answers(case)
    assert steps[0] == "-/~/0:0,1:7,0:6/~"  # the appended partition waits, preset to REQUEST_TIMED_OUT (7)
    assert steps[2] == "-/~/1:1,1:7,0:6/7:10:-1:0,6:-1:-1:-1"  # the deadline: sent as it stands
    assert steps[3].startswith("0/0@12/1:1,0:0")  # a late check still settles the status; nothing is sent
    assert steps[4] == "-/~/1:1,0:0,0:6/~"


_UNDER_MIN_ISR_GATE = re.compile(r"boolean maybeIncrementLeaderHW\([^)]*\);\s*Code:\s*0: aload_0\s*1: invokevirtual "
                                 r"#\d+\s*// Method isUnderMinIsr:\(\)Z\s*4: ifeq")


@pytest.mark.parametrize("version", RELEASES)
def test_hw_gate_on_min_isr_is_in_the_release(version: str) -> None:
    """hw_waits_for_min_isr: maybeIncrementLeaderHW opens with `if (isUnderMinIsr) return false` (KAFKA-15583) in the
    release's kafka.cluster.Partition (javap -c)."""
    require_jdk()
    jars = kafka_jars.resolve_server(version).classpath
    code = subprocess.run(["javap", "-c", "-p", "-cp", jars, "kafka.cluster.Partition"], capture_output=True,
                          text=True, check=True, timeout=120).stdout
    assert bool(_UNDER_MIN_ISR_GATE.search(code)) == profile(version).hw_waits_for_min_isr
