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
fall-backs, in the order the controller's `imbalancedPartitions` set iterates, until it holds
`max_elections` (1000) records, and asks to run again at once whenever it holds that many (even
when nothing was left). `ImbalancedPartitions` is that set (`server-common/.../timeline/
TimelineHashSet.java` over `BaseHashTable.java`, keyed by `TopicIdPartition`, whose hash code
changed in 4.1); `KRaftLeaderBalancer` replays topics and partitions into it as the controller
does and runs the balance with each topic's effective `min.insync.replicas`.
Checked against Kafka's own classes through the bridge: tests/test_kafka_elections.py.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from kcheck.model import NO_LEADER, PartitionReplicas, TopicPartition
from kcheck.reference.assignors.uuid import Uuid
from kcheck.reference.election import (
    KRAFT_DEFAULT,
    Election,
    KRaftVersion,
    PartitionChangeBuilder,
    PartitionChangeRecord,
    PartitionRegistration,
    preferred_replica_partition_leader_election,
)
from kcheck.reference.java import to_int32
from kcheck.reference.releases import profile

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
    reschedule_immediately: bool = False  # KRaft only: the run holds max_elections records
    records: tuple[tuple[TopicPartition, PartitionChangeRecord], ...] = ()  # KRaft only: in Kafka's order


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

    `partitions` come in the order the controller's `imbalancedPartitions` set yields them
    (`ImbalancedPartitions`, or the caller's order). Only partitions whose leader is not their first
    replica are considered. A record whose leader field is the current leader (a reassignment
    completed on the way) still counts against the cap, as Kafka counts records, not moves; the run
    asks to be rescheduled when it holds `max_elections` records, whether or not any were left.
    `min_isr` is each topic's effective minimum ISR (see `effective_min_isr`; it matters with ELR).
    """
    moves: list[LeaderMove] = []
    records: list[tuple[TopicPartition, PartitionChangeRecord]] = []
    leaders: dict[TopicPartition, int] = {}
    for tp, part in partitions:
        leaders[tp] = part.leader
        if part.has_preferred_leader or len(records) >= max_elections:
            continue  # at the cap Kafka stops; the rest keep their leaders until the next run
        isr_min = min_isr if isinstance(min_isr, int) else min_isr.get(tp.topic, 1)
        # A registration with a repeated replica: the builder refuses it, and the whole run fails, as in Kafka.
        record = PartitionChangeBuilder(part, acceptable, version, isr_min).set_election(Election.PREFERRED).build()
        if record is None:
            continue
        records.append((tp, record))
        after = part.merge(record)
        if after.leader != part.leader:
            moves.append(LeaderMove(tp, part.leader, after.leader))
            leaders[tp] = after.leader
    return RebalanceResult(tuple(moves), leaders, (), len(records) >= max_elections, tuple(records))


def effective_min_isr(min_insync_replicas: int, partition_zero_replicas: Sequence[int]) -> int:
    """`ReplicationControlManager.getTopicEffectiveMinIsr`: the topic's `min.insync.replicas`, at most the
    replication factor, which Kafka reads from partition 0."""
    return min(min_insync_replicas, len(partition_zero_replicas))


# --- the order of the controller's imbalanced set ---------------------------------------------

_FIBONACCI = -7046029254386353131  # BaseHashTable.findSlot's multiplier (a Java long)
_MASK64 = (1 << 64) - 1
_MASK32 = (1 << 32) - 1
RECORD_HASH_SINCE = (4, 1, 0)  # TopicIdPartition became a Java record in 4.1: its hashCode changed


def _release(kafka_version: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in kafka_version.split(".")[:3])
    except ValueError:
        raise ValueError(f"not a Kafka release: {kafka_version!r}") from None


def topic_id_partition_hash(topic_id: Uuid, partition: int, kafka_version: str = "4.4.0") -> int:
    """`org.apache.kafka.server.common.TopicIdPartition.hashCode` of a release.

    Up to 4.0 `Objects.hash(topicId, partitionId)` (31 * (31 + h) + p); from 4.1 the class is a record,
    whose generated hashCode on OpenJDK 17 is 31 * h + p.
    """
    h = topic_id.java_hash_code()
    if _release(kafka_version) >= RECORD_HASH_SINCE:
        return to_int32(31 * h + partition)
    return to_int32(31 * (31 + h) + partition)


class ImbalancedPartitions:
    """The iteration order of the controller's `imbalancedPartitions` (a `TimelineHashSet`, no snapshots).

    `BaseHashTable`: a power-of-two array of slots (2 at first, doubled before an add that would
    take the load past 0.75, never shrunk), the slot taken from the top bits of the hash times a
    64-bit Fibonacci constant, colliding entries appended to the slot's array. Iteration walks the
    slots in order and each slot's array from its end.
    """

    def __init__(self, kafka_version: str = "4.4.0") -> None:
        self.kafka_version = kafka_version
        self._record_hash = _release(kafka_version) >= RECORD_HASH_SINCE
        # Each slot's array holds (spread, key): the key's hash times the constant, 64 bits, kept so that
        # neither a lookup nor a resize computes a hash twice.
        self._slots: list[list[tuple[int, tuple[Uuid, int]]]] = [[], []]
        self._size = 0

    def _spread(self, topic_id: Uuid, partition: int) -> int:
        """`topic_id_partition_hash` times the constant, 64 bits, in int arithmetic modulo 2**32 as Java's."""
        x = topic_id.most_significant_bits ^ topic_id.least_significant_bits
        h = (x >> 32) ^ x  # Uuid.hashCode, its low 32 bits
        h = (31 * h + partition if self._record_hash else 31 * (31 + h) + partition) & _MASK32
        if h & 0x80000000:
            h -= 1 << 32
        return (h * _FIBONACCI) & _MASK64

    def add(self, topic_id: Uuid, partition: int) -> bool:
        key = (topic_id, partition)
        spread = self._spread(topic_id, partition)
        slots = self._slots
        for s, k in slots[spread >> (65 - len(slots).bit_length())]:
            if s == spread and k == key:
                return False
        if (self._size + 1) * 0.75 > len(slots):
            self._slots = [[] for _ in range(2 * len(slots))]
            shift = 65 - len(self._slots).bit_length()
            for chain in slots:
                for entry in chain:
                    self._slots[entry[0] >> shift].append(entry)
            slots = self._slots
        slots[spread >> (65 - len(slots).bit_length())].append((spread, key))
        self._size += 1
        return True

    def remove(self, topic_id: Uuid, partition: int) -> bool:
        key = (topic_id, partition)
        spread = self._spread(topic_id, partition)
        chain = self._slots[spread >> (65 - len(self._slots).bit_length())]
        for i, (s, k) in enumerate(chain):
            if s == spread and k == key:
                del chain[i]
                self._size -= 1
                return True
        return False

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[tuple[Uuid, int]]:
        for chain in self._slots:
            for _, key in reversed(chain):
                yield key


@dataclass(frozen=True)
class KRaftTopic:
    """A topic as the balance needs it: name, id and its `min.insync.replicas` (None: the default, 1)."""

    name: str
    topic_id: Uuid
    min_insync_replicas: int | None = None


class KRaftLeaderBalancer:
    """The part of the KRaft controller the leader balance reads: topics, partitions, the imbalanced set.

    `replay` takes a partition's registration as a `PartitionRecord` (or the registration after a
    change record) would leave it; the imbalanced set follows (added when the leader is not the
    first replica, removed otherwise), as `ReplicationControlManager.replay` does.
    """

    def __init__(self, kafka_version: str = "4.4.0") -> None:
        self.kafka_version = kafka_version
        self.topics: dict[Uuid, KRaftTopic] = {}
        self.partitions: dict[tuple[Uuid, int], PartitionRegistration] = {}
        self.imbalanced = ImbalancedPartitions(kafka_version)

    def add_topic(self, topic: KRaftTopic) -> None:
        self.topics[topic.topic_id] = topic

    def replay(self, topic_id: Uuid, partition: int, registration: PartitionRegistration) -> None:
        if topic_id not in self.topics:
            raise ValueError(f"no topic with id {topic_id}")
        self.partitions[(topic_id, partition)] = registration
        if registration.has_preferred_leader:
            self.imbalanced.remove(topic_id, partition)
        else:
            self.imbalanced.add(topic_id, partition)

    def min_isr(self, topic_id: Uuid) -> int:
        zero = self.partitions.get((topic_id, 0))
        if zero is None:  # Kafka throws a NullPointerException here
            raise ValueError(f"topic {self.topics[topic_id].name} has no partition 0")
        configured = self.topics[topic_id].min_insync_replicas
        return effective_min_isr(1 if configured is None else configured, zero.replicas)

    def balance(
        self, acceptable: Callable[[int], bool] | Collection[int], max_elections: int = MAX_ELECTIONS_PER_IMBALANCE,
        version: KRaftVersion | None = None,
    ) -> RebalanceResult:
        """One `maybeBalancePartitionLeaders` run (the state is left as it was: Kafka returns records).

        `version`: the `PartitionChangeBuilder` rules; by default the release's, for a new cluster.
        """
        if version is None:
            version = profile(self.kafka_version).kraft_version()
        order = [(TopicPartition(self.topics[t].name, p), self.partitions[(t, p)]) for t, p in self.imbalanced]
        # Kafka reads partition 0 of each topic it elects in (and throws without one); this asks it of
        # every imbalanced topic.
        min_isr = {self.topics[t].name: self.min_isr(t) for t in {t for t, _ in self.imbalanced}}
        return kraft_balance_partition_leaders(order, acceptable, max_elections, version, min_isr)


def registration_of(p: PartitionReplicas) -> PartitionRegistration:
    """A `PartitionRegistration` from `kafka-topics --describe` values (ISR = replicas when not given)."""
    leader = NO_LEADER if p.leader is None else p.leader
    return PartitionRegistration(p.replicas, p.isr if p.isr is not None else p.replicas, leader,
                                 removing_replicas=p.removing, adding_replicas=p.adding)
