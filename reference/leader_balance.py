"""Automatic preferred-leader rebalance (`auto.leader.rebalance.enable`), ZooKeeper and KRaft.

ZooKeeper controller (`core/src/main/scala/kafka/controller/KafkaController.scala`,
`checkAndTriggerAutoLeaderRebalance` and `canPreferredReplicaBeLeader`), every
`leader.imbalance.check.interval.seconds`: partitions are grouped by preferred replica (the head
of the full replica list, so TRS's head during a reassignment). For each broker, the ratio of
its partitions whose leader is someone else to all its partitions (partitions without leader
information count in the denominator only) is compared with
`leader.imbalance.per.broker.percentage / 100` by a strict `>`. Above it, every such partition
whose preferred replica is live and in the ISR gets a preferred election.

KRaft controller (`metadata/.../controller/ReplicationControlManager.java`,
`maybeBalancePartitionLeaders`): the percentage is ignored. Every partition whose leader is not
`replicas[0]` (leaderless ones too) is imbalanced; a run builds PREFERRED elections, with their
fall-backs, until it holds `max_elections` (1000) records, and asks to run again at once if it
stopped there.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from kcheck.model import NO_LEADER, PartitionReplicas, TopicPartition
from kcheck.reference.election import (
    KRAFT_DEFAULT,
    Election,
    KRaftVersion,
    PartitionChangeBuilder,
    PartitionRegistration,
    preferred_replica_partition_leader_election,
)

MAX_ELECTIONS_PER_IMBALANCE = 1000  # ReplicationControlManager's default maxElectionsPerImbalance


@dataclass(frozen=True)
class BrokerImbalance:
    """One broker's line in the ZK check: partitions it prefers, how many it does not lead, the ratio."""

    broker: int
    partitions: int
    not_led: int
    ratio: float
    triggered: bool


@dataclass(frozen=True)
class LeaderMove:
    tp: TopicPartition
    from_leader: int  # NO_LEADER when the partition was leaderless
    to_leader: int


@dataclass(frozen=True)
class RebalanceResult:
    """The elections one rebalance run would make and the leaders they leave."""

    moves: tuple[LeaderMove, ...]
    leaders: Mapping[TopicPartition, int]  # every partition's leader after the run
    brokers: tuple[BrokerImbalance, ...] = ()  # ZK only: the per-broker ratios
    reschedule_immediately: bool = False  # KRaft only: the run stopped at the cap


def zk_auto_leader_rebalance(
    partitions: Iterable[PartitionReplicas], live: Collection[int], leader_imbalance_per_broker_percentage: int = 10,
    topics_queued_for_deletion: Collection[str] = (),
) -> RebalanceResult:
    """One `checkAndTriggerAutoLeaderRebalance` run over partitions with their full replica list, leader and ISR.

    A partition whose `leader` is None has no leadership information (it still counts in its
    preferred broker's denominator). `live` are the brokers that are up and not shutting down.
    """
    live_set = frozenset(live)
    by_broker: dict[int, list[PartitionReplicas]] = {}
    for p in partitions:
        if p.topic in topics_queued_for_deletion or not p.replicas:
            continue
        by_broker.setdefault(p.replicas[0], []).append(p)
    threshold = leader_imbalance_per_broker_percentage / 100  # both doubles in Kafka
    brokers: list[BrokerImbalance] = []
    moves: list[LeaderMove] = []
    leaders: dict[TopicPartition, int] = {}
    for broker in sorted(by_broker):  # Kafka walks a Scala map; each partition's election is independent
        parts = by_broker[broker]
        not_led = [p for p in parts if p.leader is not None and p.leader != broker]
        ratio = len(not_led) / len(parts)
        triggered = ratio > threshold
        brokers.append(BrokerImbalance(broker, len(parts), len(not_led), ratio, triggered))
        for p in parts:
            if p.leader is not None:
                leaders[p.tp] = p.leader
        if not triggered:
            continue
        for p in not_led:
            assert p.leader is not None
            if preferred_replica_partition_leader_election(p.replicas, p.isr or (), live_set) is not None:
                moves.append(LeaderMove(p.tp, p.leader, broker))
                leaders[p.tp] = broker
    moves.sort(key=lambda m: (m.tp.topic, m.tp.partition))
    return RebalanceResult(tuple(moves), leaders, tuple(brokers))


def kraft_balance_partition_leaders(
    partitions: Iterable[tuple[TopicPartition, PartitionRegistration]],
    acceptable: Callable[[int], bool] | Collection[int],
    max_elections: int = MAX_ELECTIONS_PER_IMBALANCE, version: KRaftVersion = KRAFT_DEFAULT,
    min_isr: Mapping[str, int] | int = 1,
) -> RebalanceResult:
    """One `maybeBalancePartitionLeaders` run.

    `partitions` come in the order the controller's `imbalancedPartitions` set yields them (a
    TimelineHashSet of topic-id partitions; kcheck takes the caller's order). Only partitions
    whose leader is not their first replica are considered. A record whose leader field is the
    current leader is still counted against the cap, as Kafka counts records, not moves.
    """
    moves: list[LeaderMove] = []
    leaders: dict[TopicPartition, int] = {}
    records = 0
    reschedule = False
    for tp, part in partitions:
        leaders[tp] = part.leader
        if part.has_preferred_leader:
            continue
        if records >= max_elections:
            reschedule = True
            continue  # Kafka stops here; the rest keep their leaders until the next run
        isr_min = min_isr if isinstance(min_isr, int) else min_isr.get(tp.topic, 1)
        record = PartitionChangeBuilder(part, acceptable, version, isr_min).set_election(Election.PREFERRED).build()
        if record is None:
            continue
        records += 1
        after = part.merge(record)
        if after.leader != part.leader:
            moves.append(LeaderMove(tp, part.leader, after.leader))
            leaders[tp] = after.leader
    return RebalanceResult(tuple(moves), leaders, (), reschedule)


def registration_of(p: PartitionReplicas) -> PartitionRegistration:
    """A `PartitionRegistration` from `kafka-topics --describe` values (ISR = replicas when not given)."""
    leader = NO_LEADER if p.leader is None else p.leader
    return PartitionRegistration(p.replicas, p.isr if p.isr is not None else p.replicas, leader,
                                 removing_replicas=p.removing, adding_replicas=p.adding)
