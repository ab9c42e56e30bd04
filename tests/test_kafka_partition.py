"""Differential: the replication model's broker steps against each release's own kafka.cluster.Partition.

Random op scripts (`kafka_partition.random_case`) go in one round trip to the broker-side bridge (word PART: a real
Partition with a real UnifiedLog, set up as Kafka's AbstractPartitionTest does) and through the model's own steps
(`model/replication/actions.py` under the release's `Protocol.current`); every op's observation is compared. Then
scripts after Kafka's PartitionTest, whose expectations are asserted on Kafka's answers as well as on the model's
agreeing with them. KCHECK_KAFKA_RELEASES="4.0.2,4.4.0" overrides the releases.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES, assert_broker_side_ops_agree, kafka_bridge
from kcheck.reference import kafka_partition as kp

pytestmark = pytest.mark.kafka

RELEASES = list(ENV_RELEASES) or ["4.4.0", "4.1.2", "4.0.2", "3.9.1"]
BATCH = settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
OPS = 300  # per release: scripts of up to 18 ops
IMAGE = "I1=10,2=10,3=10,4=10:~:~"  # every broker registered with epoch 10, none fenced or shutting down
FIELDS = ("le", "pe", "isr", "maximal", "pending", "hw", "leo", "followers", "sent", "held", "error")


@pytest.mark.parametrize("version", RELEASES)
@BATCH
@given(seed=st.integers(0, 2**63))
def test_partition_ops_as_kafka(version: str, seed: int) -> None:
    assert_broker_side_ops_agree(kp.compare_random, version, seed, OPS)


def _case(min_isr: int, *ops: str) -> kp.PartitionCase:
    return kp.PartitionCase(min_isr, (IMAGE, *ops))


# name -> (script, {op index: {field: value Kafka's PartitionTest expects}})
KAFKA_TEST_CASES = {
    # testFollowerDoesNotJoinISRUntilCaughtUpToOffsetWithinCurrentLeaderEpoch: leader at epoch 8 with 5 records and
    # HW 2, follower then leader again at epoch 10 (its epoch starts at offset 5); follower 2 fetching at 3 (past
    # the HW, before the epoch's start) is not proposed, at 5 it is
    "isr expansion within the leader epoch": (
        _case(1, "L8:1:1,3:1,2,3", "A5:0", "F3:10:0:8", "F3:10:2:8", "W9:2:3:1,2,3", "L10:3:1,3:1,2,3",
              "F2:10:3:10", "F2:10:5:10"),
        {4: {"hw": "2"}, 7: {"sent": "~", "pending": "0"}, 8: {"sent": "10/3/1=10;2=10;3=-1", "pending": "1"}}),
    # testFenceFollowerFetchWithStaleBrokerEpoch (KIP-903): a fetch with an older broker epoch than the registered
    # one is refused and leaves the follower's state as it was
    "stale broker epoch refused": (
        kp.PartitionCase(1, ("I1=10,2=11,3=10,4=10:~:~", "L5:1:1,2:1,2", "A3:1", "F2:11:0:5", "F2:10:3:5")),
        {3: {"followers": "2=0/11", "error": "-"},
         4: {"followers": "2=0/11", "error": "NotLeaderOrFollowerException"}}),
    # testUpdateAssignmentAndIsr: a replica that left the assignment loses its state on the leader
    "removed replica dropped": (
        _case(1, "L1:1:1,2,3:1,2,3", "F2:10:0:1", "F3:10:0:1", "L1:2:1,2:1,2"),
        {3: {"followers": "2=0/10,3=0/10"}, 4: {"followers": "2=0/10"}}),
    # makeLeader's resetReplicaState: re-elected (a new leader epoch, still leading) keeps the follower's offset and
    # broker epoch; leading again after following forgets them
    "follower state kept when re-elected": (
        _case(1, "L1:1:1,2:1,2", "A2:1", "F2:10:1:1", "L2:2:1,2:1,2", "W3:3:2:1,2", "L4:4:1,2:1,2"),
        {4: {"le": "2", "followers": "2=1/10"}, 6: {"le": "4", "followers": "2=-/-"}}),
    # makeLeader skips only an older partition epoch: the record that committed an expansion, arriving after the
    # answer taught the leader its epoch, still applies and replaces the shrink proposed meanwhile
    "record with the answered partition epoch": (
        _case(1, "L1:1:1:1,2", "F2:10:0:1", "R0:1:=", "A1:1", "S", "L1:2:1,2:1,2"),
        {3: {"pe": "2", "isr": "1,2"}, 5: {"pending": "1"}, 6: {"pe": "2", "isr": "1,2", "pending": "0"}}),
    # the same, with the late record the shrink's: it ends a proposed expansion while the expansion's request is
    # still held (and can commit), and an acks=all append then commits over the leader alone (min ISR 1) with the
    # follower the request adds one record behind (docs/models/replication.md, "A late record")
    "late record ends a proposed expansion": (
        _case(1, "L1:1:1,2:1,2", "A1:1", "S", "R0:1:=", "F2:10:1:1", "L1:2:1:1,2", "A1:-1"),
        {3: {"sent": "1/1/1=10", "pending": "1"}, 4: {"pe": "2", "isr": "1", "pending": "0"},
         5: {"maximal": "1,2", "pending": "1", "held": "1"},
         6: {"pe": "2", "isr": "1", "maximal": "1", "pending": "0", "held": "1"},
         7: {"hw": "2", "leo": "2", "followers": "2=1/10"}}),
    # testSingleInFlightAlterIsr: one AlterPartition at a time; new partition state ends the pending one, but the
    # manager holds its request until the answer, so a new proposal is not sent; the stale answer is ignored
    "one AlterPartition in flight": (
        _case(1, "L1:1:1:1,2,3", "F2:10:0:1", "F3:10:0:1", "L2:2:1:1,2,3", "F3:10:0:2", "R0:1:=", "F3:10:0:2"),
        {2: {"sent": "1/1/1=10;2=10", "held": "1"}, 3: {"sent": "~", "maximal": "1,2"},
         4: {"pending": "0", "held": "1"}, 5: {"sent": "~", "held": "1"}, 6: {"isr": "1", "held": "0"},
         7: {"sent": "2/2/1=10;3=10"}}),
    # testIsrNotExpandedIfReplicaIsFencedOrShutdown: a caught-up follower the image has fenced or in controlled
    # shutdown is not proposed; once the image clears it, its next fetch proposes it
    "fenced or shutting-down follower not proposed": (
        kp.PartitionCase(1, ("I1=10,2=10,3=10,4=10:2:3", "L1:1:1:1,2,3", "F2:10:0:1", "F3:10:0:1", IMAGE,
                             "F2:10:0:1")),
        {2: {"sent": "~"}, 3: {"sent": "~"}, 5: {"sent": "1/1/1=10;2=10", "maximal": "1,2"}}),
    # testIsrCanExpandedIfBrokerEpochsMatchWithKraftMetadataCache (KIP-903): a fetch with a broker epoch newer than
    # the image's is recorded but proposes nothing (isBrokerEpochIsrEligible); one with the image's epoch does
    "broker epoch must match the image": (
        kp.PartitionCase(1, ("I1=10,2=11,3=10,4=10:~:~", "L1:1:1:1,2", "F2:12:0:1", "F2:11:0:1")),
        {2: {"followers": "2=0/12", "sent": "~"}, 3: {"sent": "1/1/1=10;2=11"}}),
    # testHighWatermarkAdvanceShouldNotAdvanceWhenUnderMinISR (KIP-966): the HW waits while the committed ISR is
    # below min.insync.replicas, even with the follower caught up and proposed; the committed expansion moves it
    "no HW advance under min ISR": (
        _case(2, "L1:1:1:1,2", "A2:1", "F2:10:2:1", "R0:1:="),
        {3: {"hw": "0", "maximal": "1,2"}, 4: {"isr": "1,2", "hw": "2"}}),
    # Partition.effectiveMinIsr (KIP-966): min.insync.replicas 2 over a replica set of one is capped at one, so an
    # acks=all append is taken and the HW moves; back to two replicas with one in the ISR it is refused again
    # (what 3.9.1 to 4.4.0's Partition answered through the bridge)
    "min ISR capped at the replica count": (
        _case(2, "L1:1:1:1", "A1:-1", "A1:-1", "L1:2:1:1,2", "A1:-1"),
        {2: {"hw": "1", "error": "-"}, 3: {"hw": "2"}, 5: {"error": "NotEnoughReplicasException"}}),
}


@pytest.mark.parametrize("version", RELEASES)
def test_kafka_partition_test_cases(version: str) -> None:
    names = list(KAFKA_TEST_CASES)
    cases = [KAFKA_TEST_CASES[n][0] for n in names]
    answers = kp.kafka_answers(kafka_bridge(version, server=True), cases)
    for name, case, kafka in zip(names, cases, answers, strict=True):
        for i, expected in KAFKA_TEST_CASES[name][1].items():
            got = dict(zip(FIELDS, kafka[i].split(":"), strict=True))
            assert {k: got[k] for k in expected} == expected, (name, i, kafka[i])
        assert kafka == kp.reference_answers(case, version), name
