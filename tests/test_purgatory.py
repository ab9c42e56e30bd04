"""The partition's side of the acks=all wait (`reference.purgatory`), with the values of Kafka's own tests and code.

The DelayedProduce class itself is compared with each release's jars in tests/test_kafka_purgatory.py; the rules
here sit in kafka.cluster.Partition and ReplicaManager, which cannot run without a broker.
"""

from __future__ import annotations

from dataclasses import replace

from kcheck.reference import purgatory as pg
from kcheck.reference.releases import RELEASES, ReleaseProfile, profile


def test_hw_does_not_advance_under_min_isr_as_kafkas_partition_test() -> None:
    """PartitionTest.testHighWatermarkAdvanceShouldNotAdvanceWhenUnderMinISR (KAFKA-15583): min ISR 3, replicas 3,
    ISR 2: no advance, not even once the maximal ISR (with the pending expansion) is 3; it moves once the ISR is 3."""
    under = pg.PartitionState(min_insync_replicas=3, replicas=3, isr=2, maximal_isr=2)
    for version in RELEASES:
        assert not pg.may_increment_leader_hw(under, version)
        assert not pg.may_increment_leader_hw(replace(under, maximal_isr=3), version)
        assert pg.may_increment_leader_hw(replace(under, isr=3, maximal_isr=3), version)


def test_effective_min_isr_is_capped_at_the_replica_count() -> None:
    """KAFKA-15583 also caps min.insync.replicas at the replica count (Partition.effectiveMinIsr): a single replica
    with min ISR 2 is not under min ISR, and its appends succeed once the high watermark passes them."""
    single = pg.PartitionState(min_insync_replicas=2, replicas=1, isr=1, maximal_isr=1, high_watermark=5)
    assert pg.may_increment_leader_hw(single)
    assert pg.partition_status(single, 5) == (True, pg.NONE)


def test_before_kafka_15583_the_hw_followed_the_isr_down() -> None:
    old = ReleaseProfile(**{**profile().as_dict(), "hw_waits_for_min_isr": False})
    assert pg.may_increment_leader_hw(pg.PartitionState(min_insync_replicas=3, replicas=3, isr=1), old)


def test_check_enough_replicas_reach_offset_cases() -> None:
    """Partition.checkEnoughReplicasReachOffset and ReplicaManager.getPartitionOrError, case by case."""
    leader = pg.PartitionState(min_insync_replicas=2, replicas=3, isr=3, maximal_isr=3, high_watermark=10)
    assert pg.partition_status(replace(leader, error=pg.KAFKA_STORAGE_ERROR), 10) == (False, pg.KAFKA_STORAGE_ERROR)
    assert pg.partition_status(replace(leader, leader=False), 10) == (False, pg.NOT_LEADER_OR_FOLLOWER)
    assert pg.partition_status(leader, 10) == (True, pg.NONE)
    assert pg.partition_status(leader, 11) == (False, pg.NONE)  # the high watermark is short: still waiting
    shrunk = replace(leader, isr=1, maximal_isr=1)  # the ISR shrank after the high watermark passed the append
    assert pg.partition_status(shrunk, 10) == (True, pg.NOT_ENOUGH_REPLICAS_AFTER_APPEND)


def test_required_offset_is_the_last_offset_plus_one() -> None:
    assert pg.required_offset(41) == 42
