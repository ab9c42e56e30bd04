"""The sticky assignors against Kafka's own unit tests, plus properties.

Expected values are copied from apache/kafka's tests (named on each test):
`clients/src/test/java/org/apache/kafka/clients/consumer/internals/AbstractStickyAssignorTest.java`
(run for both assignors, and for every `RackConfig` where Kafka parameterises),
`.../consumer/StickyAssignorTest.java` and `.../consumer/CooperativeStickyAssignorTest.java`.
`KafkaFixture` reproduces those classes' fixtures (`partitionInfos`, `subscription`,
`buildSubscriptionV0/V1/V2Above`, `initializeRacks`, `verifyValidityAndBalance`), including the
cooperative `verifyValidityAndBalance`, which re-runs the assignor until nothing is revoked and so
changes the assignment the test asserts on afterwards.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcheck.model.group import PartitionInfo, Subscription
from kcheck.model.vocabulary import Broker, TopicPartition
from kcheck.reference.assignors.sticky import (
    DEFAULT_GENERATION,
    AbstractStickyAssignor,
    CooperativeStickyAssignor,
    MemberData,
    NullPointerException,
    StickyAssignor,
    deserialize_topic_partition_assignment,
    serialize_topic_partition_assignment,
    serialize_topic_partition_assignment_v0,
    use_rack_aware_assignment,
)
from kcheck.reference.java import JavaHashMap
from rack_checks import check_rack_assignment

ALL_RACKS = ("a", "b", "c", "d", "e", "f")  # AbstractPartitionAssignorTest.ALL_RACKS
NO_BROKER_RACK, NO_CONSUMER_RACK, BROKER_AND_CONSUMER_RACK = "NO_BROKER_RACK", "NO_CONSUMER_RACK", "BOTH"
RACK_CONFIGS = (NO_BROKER_RACK, NO_CONSUMER_RACK, BROKER_AND_CONSUMER_RACK)
KINDS = ("sticky", "cooperative")

topic, topic1, topic2, topic3 = "topic", "topic1", "topic2", "topic3"
consumer_id, consumer1, consumer2, consumer3, consumer4 = "consumer", "consumer1", "consumer2", "consumer3", "consumer4"
GENERATION_ID = 1


def tp(t: str, p: int) -> TopicPartition:
    return TopicPartition(t, p)


def kafka_partition_infos(
    t: str, n: int, rf: int, broker_racks: list[str | None], next_node_index: int
) -> list[PartitionInfo]:
    """AbstractPartitionAssignorTest.partitionInfos: replica j of partition i is node (i + j + next) % #nodes."""
    nodes = [Broker(i, rack) for i, rack in enumerate(broker_racks)]
    return [
        PartitionInfo(t, i, None, tuple(nodes[(i + j + next_node_index) % len(nodes)] for j in range(rf)))
        for i in range(n)
    ]


def kafka_partition_infos_for_racks(t: str, n: int, replication_factor: int, num_broker_racks: int, nxt: int):
    num_brokers = replication_factor if num_broker_racks <= 0 else num_broker_racks * replication_factor
    racks = [None if num_broker_racks <= 0 else ALL_RACKS[i % num_broker_racks] for i in range(num_brokers)]
    return kafka_partition_infos(t, n, replication_factor, racks, nxt)


def sub(topics, user_data=None, owned=(), generation=DEFAULT_GENERATION, rack=None) -> Subscription:
    """`new Subscription(topics, userData, ownedPartitions, generationId, rackId)`; generation < 0 -> empty."""
    return Subscription(tuple(topics), user_data, tuple(owned), None if generation < 0 else generation, rack)


class KafkaFixture:
    """AbstractStickyAssignorTest and its two subclasses' fixtures (a fresh one per test, like JUnit)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.assignor: AbstractStickyAssignor = StickyAssignor() if kind == "sticky" else CooperativeStickyAssignor()
        self.subscriptions: JavaHashMap[str, Subscription] = JavaHashMap()  # `new HashMap<>()`
        self.num_broker_racks = 0
        self.has_consumer_rack = False
        self.replication_factor = 2
        self.next_partition_index = 0

    def initialize_racks(self, rack_config: str) -> None:
        self.replication_factor = 3
        self.num_broker_racks = 0 if rack_config == NO_BROKER_RACK else 3
        self.has_consumer_rack = rack_config != NO_CONSUMER_RACK
        self.assignor.prefer_rack_aware_logic = True

    def partition_infos(self, t: str, n: int) -> list[PartitionInfo]:
        nxt = self.next_partition_index
        self.next_partition_index += 1
        return kafka_partition_infos_for_racks(t, n, self.replication_factor, self.num_broker_racks, nxt)

    def consumer_rack_id(self, consumer_index: int) -> str | None:
        num_racks = self.num_broker_racks if self.num_broker_racks > 0 else len(ALL_RACKS)
        if not self.has_consumer_rack:
            return None
        if consumer_index < 0:
            raise IndexError("Java: ArrayIndexOutOfBoundsException")
        return ALL_RACKS[consumer_index % num_racks]

    def subscription(self, topics, consumer_index: int) -> Subscription:
        return sub(topics, None, (), DEFAULT_GENERATION, self.consumer_rack_id(consumer_index))

    def v0(self, topics, partitions, generation: int, consumer_index: int) -> Subscription | None:
        if self.kind == "cooperative":
            return None  # the cooperative assignor supports ConsumerProtocolSubscription V1+ only
        data = serialize_topic_partition_assignment(partitions, generation)
        return sub(topics, data, (), DEFAULT_GENERATION, self.consumer_rack_id(consumer_index))

    def v1(self, topics, partitions, generation: int, consumer_index: int) -> Subscription:
        if self.kind == "sticky":
            return sub(topics, serialize_topic_partition_assignment(partitions, generation), partitions)
        self.assignor.on_assignment(partitions, generation)
        return sub(topics, self.assignor.subscription_user_data(topics), partitions)

    def v2(self, topics, partitions, generation: int, consumer_index: int) -> Subscription:
        if self.kind == "sticky":
            data = serialize_topic_partition_assignment(partitions, generation)
            return sub(topics, data, partitions, generation, None)
        data = self.assignor.subscription_user_data(topics)
        return sub(topics, data, partitions, generation, self.consumer_rack_id(consumer_index))

    def assign(self, ppt) -> dict[str, list[TopicPartition]]:
        return self.assignor.assign_partitions(ppt, self.subscriptions)

    def verify_validity_and_balance(self, subscriptions, assignments, ppt) -> None:
        if self.kind == "cooperative":  # CooperativeStickyAssignorTest.verifyValidityAndBalance
            rebalances = 0
            while verify_cooperative_validity(subscriptions, assignments):
                for consumer, assigned in list(assignments.items()):
                    old = subscriptions[consumer]
                    rack_index = ALL_RACKS.index(old.rack_id) if old.rack_id is not None else -1
                    subscriptions.put(consumer, self.v2(old.topics, assigned, GENERATION_ID, rack_index))
                new = self.assignor.assign_partitions(ppt, subscriptions)
                assignments.clear()
                assignments.update(new)
                rebalances += 1
                assert rebalances <= 4
        verify_validity_and_balance(subscriptions, assignments)


def verify_cooperative_validity(subscriptions, assignments) -> bool:
    """No partition is assigned to a new owner in the round it is revoked; returns whether any was revoked."""
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for consumer, assigned in assignments.items():
        owned = subscriptions[consumer].owned_partitions
        revoked |= set(owned) - set(assigned)
        added |= set(assigned) - set(owned)
    assert not (added & revoked), f"assigned to a new owner while being revoked: {added & revoked}"
    return bool(revoked)


def verify_validity_and_balance(subscriptions, assignments) -> None:
    """AbstractStickyAssignorTest.verifyValidityAndBalance."""
    assert len(subscriptions) == len(assignments)
    consumers = sorted(assignments)
    for i, c in enumerate(consumers):
        parts = assignments[c]
        for p in parts:
            assert p.topic in subscriptions[c].topics
        for other in consumers[i + 1 :]:
            other_parts = assignments[other]
            assert not set(parts) & set(other_parts)
            if abs(len(parts) - len(other_parts)) <= 1:
                continue
            assert not {p.topic for p in parts} & {p.topic for p in other_parts}, "could balance better"


def is_fully_balanced(assignment) -> bool:
    sizes = [len(v) for v in assignment.values()]
    return max(sizes) - min(sizes) <= 1


def parts(*tps: TopicPartition) -> list[TopicPartition]:
    return list(tps)


both_kinds = pytest.mark.parametrize("kind", KINDS)
every_rack_config = pytest.mark.parametrize("rack_config", RACK_CONFIGS)


# --- AbstractStickyAssignorTest ---------------------------------------------------------------------------


@both_kinds
@pytest.mark.parametrize("has_consumer_rack", [False, True])
def test_one_consumer_no_topic(kind, has_consumer_rack):
    """testOneConsumerNoTopic."""
    f = KafkaFixture(kind)
    f.initialize_racks(BROKER_AND_CONSUMER_RACK if has_consumer_rack else NO_CONSUMER_RACK)
    ppt: dict[str, list[PartitionInfo]] = {}
    f.subscriptions.put(consumer_id, f.subscription([], 0))
    assignment = f.assign(ppt)
    assert set(assignment) == {consumer_id} and assignment[consumer_id] == []
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)


@both_kinds
@pytest.mark.parametrize("has_consumer_rack", [False, True])
def test_one_consumer_nonexistent_topic(kind, has_consumer_rack):
    """testOneConsumerNonexistentTopic."""
    f = KafkaFixture(kind)
    f.initialize_racks(BROKER_AND_CONSUMER_RACK if has_consumer_rack else NO_CONSUMER_RACK)
    ppt = {topic: []}
    f.subscriptions.put(consumer_id, f.subscription([topic], 0))
    assignment = f.assign(ppt)
    assert assignment == {consumer_id: []}
    assert f.assignor.partitions_transferring_ownership == {}


@both_kinds
@every_rack_config
def test_one_consumer_one_topic(kind, rack_config):
    """testOneConsumerOneTopic."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, 3)}
    f.subscriptions.put(consumer_id, f.subscription([topic], 0))
    assignment = f.assign(ppt)
    assert assignment[consumer_id] == parts(tp(topic, 0), tp(topic, 1), tp(topic, 2))
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)


@both_kinds
@every_rack_config
def test_only_assigns_partitions_from_subscribed_topics(kind, rack_config):
    """testOnlyAssignsPartitionsFromSubscribedTopics."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, 2)}
    owned = [tp(topic, 0), tp(topic, 1), tp("other", 0), tp("other", 1)]
    f.subscriptions.put(consumer_id, f.v2([topic], owned, GENERATION_ID, 0))
    assignment = f.assign(ppt)
    assert assignment[consumer_id] == parts(tp(topic, 0), tp(topic, 1))
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)


@both_kinds
@every_rack_config
def test_one_consumer_multiple_topics(kind, rack_config):
    """testOneConsumerMultipleTopics."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic1: f.partition_infos(topic1, 1), topic2: f.partition_infos(topic2, 2)}
    f.subscriptions.put(consumer_id, f.subscription([topic1, topic2], 0))
    assignment = f.assign(ppt)
    assert assignment[consumer_id] == parts(tp(topic1, 0), tp(topic2, 0), tp(topic2, 1))
    assert f.assignor.partitions_transferring_ownership == {}


@both_kinds
@every_rack_config
def test_two_consumers_one_topic_two_partitions(kind, rack_config):
    """testTwoConsumersOneTopicTwoPartitions."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, 2)}
    f.subscriptions.put(consumer1, f.subscription([topic], 0))
    f.subscriptions.put(consumer2, f.subscription([topic], 1))
    assignment = f.assign(ppt)
    assert assignment[consumer1] == parts(tp(topic, 0))
    assert assignment[consumer2] == parts(tp(topic, 1))
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)


@both_kinds
@every_rack_config
def test_multiple_consumers_mixed_topic_subscriptions(kind, rack_config):
    """testMultipleConsumersMixedTopicSubscriptions (general builder: partitionsTransferringOwnership is null)."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic1: f.partition_infos(topic1, 3), topic2: f.partition_infos(topic2, 2)}
    f.subscriptions.put(consumer1, f.subscription([topic1], 0))
    f.subscriptions.put(consumer2, f.subscription([topic1, topic2], 1))
    f.subscriptions.put(consumer3, f.subscription([topic1], 2))
    assignment = f.assign(ppt)
    assert assignment[consumer1] == parts(tp(topic1, 0), tp(topic1, 2))
    assert assignment[consumer2] == parts(tp(topic2, 0), tp(topic2, 1))
    assert assignment[consumer3] == parts(tp(topic1, 1))
    assert f.assignor.partitions_transferring_ownership is None
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)


@both_kinds
@every_rack_config
def test_two_consumers_two_topics_six_partitions(kind, rack_config):
    """testTwoConsumersTwoTopicsSixPartitions."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic1: f.partition_infos(topic1, 3), topic2: f.partition_infos(topic2, 3)}
    f.subscriptions.put(consumer1, f.subscription([topic1, topic2], 0))
    f.subscriptions.put(consumer2, f.subscription([topic1, topic2], 1))
    assignment = f.assign(ppt)
    assert assignment[consumer1] == parts(tp(topic1, 0), tp(topic1, 2), tp(topic2, 1))
    assert assignment[consumer2] == parts(tp(topic1, 1), tp(topic2, 0), tp(topic2, 2))
    assert f.assignor.partitions_transferring_ownership == {}


@both_kinds
@every_rack_config
def test_consumer_owning_min_quota_expected_max_quota(kind, rack_config):
    """testConsumerOwningMinQuotaExpectedMaxQuota."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic1: f.partition_infos(topic1, 2), topic2: f.partition_infos(topic2, 3)}
    topics = [topic1, topic2]
    f.subscriptions.put(consumer1, f.v2(topics, [tp(topic1, 0), tp(topic2, 1)], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2(topics, [tp(topic1, 1), tp(topic2, 2)], GENERATION_ID, 1))
    assignment = f.assign(ppt)
    assert assignment[consumer1] == parts(tp(topic1, 0), tp(topic2, 1), tp(topic2, 0))
    assert assignment[consumer2] == parts(tp(topic1, 1), tp(topic2, 2))
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)


@both_kinds
@every_rack_config
def test_max_quota_consumer_more_than_num_expected_max_capacity_members(kind, rack_config):
    """testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers: HashMap order decides.

    consumer1 and consumer2 both own maxQuota (2) partitions but only one extra slot exists; Java's
    HashMap iterates consumer3, consumer2, consumer1, so consumer2 keeps two and consumer1 gives up
    topic2-0 (to consumer3, withheld by the cooperative assignor until consumer1 has revoked it).
    """
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic1: f.partition_infos(topic1, 2), topic2: f.partition_infos(topic2, 2)}
    topics = [topic1, topic2]
    f.subscriptions.put(consumer1, f.v2(topics, [tp(topic1, 0), tp(topic2, 0)], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2(topics, [tp(topic1, 1), tp(topic2, 1)], GENERATION_ID, 1))
    f.subscriptions.put(consumer3, f.v2(topics, [], GENERATION_ID, 2))
    assert f.subscriptions.keys() == [consumer3, consumer2, consumer1]
    assignment = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {tp(topic2, 0): consumer3}
    if kind == "cooperative":
        assert assignment[consumer3] == []  # withheld in this round
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)
    assert assignment[consumer1] == parts(tp(topic1, 0))
    assert assignment[consumer2] == parts(tp(topic1, 1), tp(topic2, 1))
    assert assignment[consumer3] == parts(tp(topic2, 0))


@both_kinds
@every_rack_config
def test_all_consumers_are_under_min_quota(kind, rack_config):
    """testAllConsumersAreUnderMinQuota."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic1: f.partition_infos(topic1, 2), topic2: f.partition_infos(topic2, 3)}
    topics = [topic1, topic2]
    f.subscriptions.put(consumer1, f.v2(topics, [tp(topic1, 0)], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2(topics, [tp(topic1, 1)], GENERATION_ID, 1))
    f.subscriptions.put(consumer3, f.v2(topics, [], GENERATION_ID, 2))
    assignment = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)
    assert assignment[consumer1] == parts(tp(topic1, 0), tp(topic2, 1))
    assert assignment[consumer2] == parts(tp(topic1, 1), tp(topic2, 2))
    assert assignment[consumer3] == parts(tp(topic2, 0))


@both_kinds
@every_rack_config
def test_add_remove_consumer_one_topic(kind, rack_config):
    """testAddRemoveConsumerOneTopic."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, 3)}
    f.subscriptions.put(consumer1, f.subscription([topic], 0))
    assignment = f.assign(ppt)
    assert assignment[consumer1] == parts(tp(topic, 0), tp(topic, 1), tp(topic, 2))
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)

    f.subscriptions.put(consumer1, f.v2([topic], assignment[consumer1], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2([topic], [], GENERATION_ID, 1))
    assignment = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {tp(topic, 2): consumer2}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)
    assert assignment[consumer1] == parts(tp(topic, 0), tp(topic, 1))
    assert assignment[consumer2] == parts(tp(topic, 2))

    f.subscriptions.remove(consumer1)
    f.subscriptions.put(consumer2, f.v2([topic], assignment[consumer2], GENERATION_ID, 1))
    assignment = f.assign(ppt)
    assert set(assignment[consumer2]) == {tp(topic, 2), tp(topic, 1), tp(topic, 0)}
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)


@both_kinds
@every_rack_config
def test_add_remove_two_consumers_two_topics(kind, rack_config):
    """testAddRemoveTwoConsumersTwoTopics (as updated by KAFKA-16277: kept partitions sorted by partition)."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    all_topics = [topic1, topic2]
    ppt = {topic1: f.partition_infos(topic1, 3), topic2: f.partition_infos(topic2, 4)}
    f.subscriptions.put(consumer1, f.subscription(all_topics, 0))
    f.subscriptions.put(consumer2, f.subscription(all_topics, 1))
    assignment = f.assign(ppt)
    assert assignment[consumer1] == parts(tp(topic1, 0), tp(topic1, 2), tp(topic2, 1), tp(topic2, 3))
    assert assignment[consumer2] == parts(tp(topic1, 1), tp(topic2, 0), tp(topic2, 2))
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)

    # add 2 consumers
    f.subscriptions.put(consumer1, f.v2(all_topics, assignment[consumer1], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2(all_topics, assignment[consumer2], GENERATION_ID, 1))
    f.subscriptions.put(consumer3, f.v2(all_topics, [], GENERATION_ID, 2))
    f.subscriptions.put(consumer4, f.v2(all_topics, [], GENERATION_ID, 3))
    assignment = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {
        tp(topic1, 2): consumer3,
        tp(topic2, 3): consumer3,
        tp(topic2, 2): consumer4,
    }
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)
    assert assignment[consumer1] == parts(tp(topic1, 0), tp(topic2, 1))
    assert assignment[consumer2] == parts(tp(topic2, 0), tp(topic1, 1))
    assert assignment[consumer3] == parts(tp(topic1, 2), tp(topic2, 3))
    assert assignment[consumer4] == parts(tp(topic2, 2))

    # remove 2 consumers
    f.subscriptions.remove(consumer1)
    f.subscriptions.remove(consumer2)
    f.subscriptions.put(consumer3, f.v2(all_topics, assignment[consumer3], GENERATION_ID, 2))
    f.subscriptions.put(consumer4, f.v2(all_topics, assignment[consumer4], GENERATION_ID, 3))
    assignment = f.assign(ppt)
    assert assignment[consumer3] == parts(tp(topic1, 2), tp(topic2, 3), tp(topic1, 0), tp(topic2, 1))
    assert assignment[consumer4] == parts(tp(topic2, 2), tp(topic1, 1), tp(topic2, 0))
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)


@both_kinds
@every_rack_config
def test_topic_balance_after_reassignment(kind, rack_config):
    """testTopicBalanceAfterReassignment (KAFKA-16277): each member keeps an equal share of each topic."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    all_topics = [topic1, topic2]
    ppt = {topic1: f.partition_infos(topic1, 12), topic2: f.partition_infos(topic2, 12)}

    def per_topic(assignment, expected):
        for tps in assignment.values():
            assert sum(p.topic == topic1 for p in tps) == expected
            assert sum(p.topic == topic2 for p in tps) == expected

    f.subscriptions.put(consumer1, f.subscription(all_topics, 0))
    assignment = f.assign(ppt)
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)
    per_topic(assignment, 12)
    assert f.assignor.partitions_transferring_ownership == {}

    f.subscriptions.put(consumer1, f.v2(all_topics, assignment[consumer1], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2(all_topics, [], GENERATION_ID, 1))
    assignment = f.assign(ppt)
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)
    per_topic(assignment, 6)

    f.subscriptions.put(consumer1, f.v2(all_topics, assignment[consumer1], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2(all_topics, assignment[consumer2], GENERATION_ID, 1))
    f.subscriptions.put(consumer3, f.v2(all_topics, [], GENERATION_ID, 2))
    f.subscriptions.put(consumer4, f.v2(all_topics, [], GENERATION_ID, 3))
    assignment = f.assign(ppt)
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)
    per_topic(assignment, 3)

    f.subscriptions.remove(consumer1)
    f.subscriptions.remove(consumer2)
    f.subscriptions.put(consumer3, f.v2(all_topics, assignment[consumer3], GENERATION_ID, 2))
    f.subscriptions.put(consumer4, f.v2(all_topics, assignment[consumer4], GENERATION_ID, 3))
    assignment = f.assign(ppt)
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)
    per_topic(assignment, 6)
    assert f.assignor.partitions_transferring_ownership == {}


def _canonical(prefix: str, i: int, max_num: int) -> str:
    """getTopicName / getConsumerName: zero-padded to the width of max_num."""
    return prefix + str(i).zfill(len(str(max_num)))


@both_kinds
@every_rack_config
def test_poor_round_robin_assignment_scenario(kind, rack_config):
    """testPoorRoundRobinAssignmentScenario (validity and balance only)."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {}
    for i in range(1, 6):
        ppt[f"topic{i}"] = f.partition_infos(f"topic{i}", (i % 2) + 1)
    all5 = ["topic1", "topic2", "topic3", "topic4", "topic5"]
    odd = ["topic1", "topic3", "topic5"]
    for i, (c, ts) in enumerate([("consumer1", all5), ("consumer2", odd), ("consumer3", odd), ("consumer4", all5)]):
        f.subscriptions.put(c, f.subscription(ts, i))
    assignment = f.assign(ppt)
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)


@both_kinds
@every_rack_config
def test_reassignment_after_one_consumer_leaves(kind, rack_config):
    """testReassignmentAfterOneConsumerLeaves: validity, balance and isSticky()."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {}
    for i in range(1, 20):
        name = _canonical("t", i, 20)
        ppt[name] = f.partition_infos(name, i)
    for i in range(1, 20):
        ts = [_canonical("t", j, 20) for j in range(1, i + 1)]
        f.subscriptions.put(_canonical("c", i, 20), f.subscription(ts, i))
    assignment = f.assign(ppt)
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)
    for i in range(1, 20):
        c = _canonical("c", i, 20)
        f.subscriptions.put(c, f.v2(f.subscriptions[c].topics, assignment[c], GENERATION_ID, i))
    f.subscriptions.remove("c10")
    assignment = f.assign(ppt)
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)
    assert f.assignor.is_sticky()


@both_kinds
@every_rack_config
def test_two_consumers_one_topic_one_partition(kind, rack_config):
    """testTwoConsumersOneTopicOnePartition."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, 1)}
    f.subscriptions.put(consumer1, f.subscription([topic], 0))
    f.subscriptions.put(consumer2, f.subscription([topic], 1))
    assignment = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)
    assert is_fully_balanced(assignment)


@both_kinds
@every_rack_config
def test_add_remove_topic_two_consumers(kind, rack_config):
    """testAddRemoveTopicTwoConsumers: balance and stickiness as topics come and go."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, 3)}
    f.subscriptions.put(consumer1, f.subscription([topic], 0))
    f.subscriptions.put(consumer2, f.subscription([topic], 1))
    a = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, a, ppt)
    c1a1, c2a1 = a[consumer1], a[consumer2]
    assert sorted((len(c1a1), len(c2a1))) == [1, 2]

    ppt[topic2] = f.partition_infos(topic2, 3)
    f.subscriptions.put(consumer1, f.v2([topic, topic2], a[consumer1], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2([topic, topic2], a[consumer2], GENERATION_ID, 1))
    a = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, a, ppt)
    c1a2, c2a2 = a[consumer1], a[consumer2]
    assert len(c1a2) == len(c2a2) == 3
    assert set(c1a1) <= set(c1a2) and set(c2a1) <= set(c2a2)

    del ppt[topic]
    f.subscriptions.put(consumer1, f.v2([topic2], a[consumer1], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2([topic2], a[consumer2], GENERATION_ID, 1))
    a = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, a, ppt)
    assert sorted((len(a[consumer1]), len(a[consumer2]))) == [1, 2]
    assert set(a[consumer1]) <= set(c1a2) and set(a[consumer2]) <= set(c2a2)


@both_kinds
@every_rack_config
def test_reassignment_after_one_consumer_added(kind, rack_config):
    """testReassignmentAfterOneConsumerAdded."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {"topic": f.partition_infos("topic", 20)}
    for i in range(1, 10):
        f.subscriptions.put(_canonical("c", i, 10), f.subscription(["topic"], i))
    a = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, a, ppt)
    f.subscriptions.put(_canonical("c", 10, 10), f.subscription(["topic"], 10))
    a = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, a, ppt)


@both_kinds
@every_rack_config
def test_same_subscriptions(kind, rack_config):
    """testSameSubscriptions."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {}
    for i in range(1, 15):
        ppt[_canonical("t", i, 15)] = f.partition_infos(_canonical("t", i, 15), i)
    all_topics = [_canonical("t", j, 15) for j in range(1, len(ppt) + 1)]
    for i in range(1, 9):
        f.subscriptions.put(_canonical("c", i, 9), f.subscription(all_topics, i))
    a = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, a, ppt)
    for i in range(1, 9):
        c = _canonical("c", i, 9)
        f.subscriptions.put(c, f.v2(f.subscriptions[c].topics, a[c], GENERATION_ID, i))
    f.subscriptions.remove(_canonical("c", 5, 9))
    a = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, a, ppt)


@both_kinds
@every_rack_config
def test_new_subscription(kind, rack_config):
    """testNewSubscription (Kafka appends to the member's topic list in place; a new Subscription here)."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {}
    for i in range(1, 5):
        ppt[_canonical("t", i, 5)] = f.partition_infos(_canonical("t", i, 5), 1)
    for i in range(3):
        ts = [_canonical("t", j, 5) for j in range(i, 3 * i - 1)]
        f.subscriptions.put(_canonical("c", i, 3), f.subscription(ts, i))
    a = f.assign(ppt)
    f.verify_validity_and_balance(f.subscriptions, a, ppt)
    old = f.subscriptions["c0"]
    f.subscriptions.put("c0", Subscription((*old.topics, "t1"), old.user_data, old.owned_partitions,
                                           old.generation_id, old.rack_id))
    a = f.assign(ppt)
    f.verify_validity_and_balance(f.subscriptions, a, ppt)
    assert f.assignor.is_sticky()


@both_kinds
@every_rack_config
def test_move_existing_assignments(kind, rack_config):
    """testMoveExistingAssignments (general builder)."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {f"topic{i}": f.partition_infos(f"topic{i}", 1) for i in range(1, 7)}
    f.subscriptions.put(consumer1, f.v2(["topic1", "topic2"], [tp("topic1", 0)], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2(["topic1", "topic2", "topic3", "topic4"],
                                        [tp("topic2", 0), tp("topic3", 0)], GENERATION_ID, 1))
    f.subscriptions.put(consumer3, f.v2(["topic2", "topic3", "topic4", "topic5", "topic6"],
                                        [tp("topic4", 0), tp("topic5", 0), tp("topic6", 0)], GENERATION_ID, 2))
    a = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership is None
    f.verify_validity_and_balance(f.subscriptions, a, ppt)


@both_kinds
@every_rack_config
def test_stickiness(kind, rack_config):
    """testStickiness: after the first member leaves, everyone keeps the partition it had."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic1: f.partition_infos(topic1, 3)}
    for i, c in enumerate((consumer1, consumer2, consumer3, consumer4)):
        f.subscriptions.put(c, f.subscription([topic1], i))
    a = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, a, ppt)
    assert all(len(v) <= 1 for v in a.values())
    before = {c: v[0] for c, v in a.items() if v}
    f.subscriptions.remove(consumer1)
    for i, c in ((1, consumer2), (2, consumer3), (3, consumer4)):
        f.subscriptions.put(c, f.v2([topic1], a[c], GENERATION_ID, i))
    a = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, a, ppt)
    for c, v in a.items():
        assert len(v) == 1
        assert c not in before or before[c] in v


@both_kinds
@every_rack_config
def test_assignment_updated_for_deleted_topic(kind, rack_config):
    """testAssignmentUpdatedForDeletedTopic."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic1: f.partition_infos(topic1, 1), topic3: f.partition_infos(topic3, 100)}
    f.subscriptions.put(consumer_id, f.subscription([topic1, topic2, topic3], 0))
    a = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {}
    assert set(a) == {consumer_id} and len(a[consumer_id]) == 101


@both_kinds
def test_subscription_not_equal_and_assign_same_partition_with_3_generation(kind):
    """testSubscriptionNotEqualAndAssignSamePartitionWith3Generation: topic-2 claimed at three generations."""
    f = KafkaFixture(kind)
    ppt = {topic: f.partition_infos(topic, 6), topic1: f.partition_infos(topic1, 1)}
    for g1, g2, g3 in ((1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)):
        f.subscriptions.put(consumer1, f.v2([topic], [tp(topic, 0), tp(topic, 2)], g1, 0))
        f.subscriptions.put(consumer2, f.v2([topic], [tp(topic, 1), tp(topic, 2), tp(topic, 3)], g2, 1))
        f.subscriptions.put(consumer3, f.v2([topic], [tp(topic, 2), tp(topic, 4), tp(topic, 5)], g3, 2))
        f.subscriptions.put(consumer4, f.v2([topic1], [tp(topic1, 0)], 2, 3))
        a = f.assign(ppt)
        every = [p for v in a.values() for p in v]
        assert len(every) == len(set(every))
        assert all(1 <= len(v) <= 2 for v in a.values())


@both_kinds
@every_rack_config
def test_all_consumers_reach_expected_quota_and_are_considered_filled(kind, rack_config):
    """testAllConsumersReachExpectedQuotaAndAreConsideredFilled."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, 4)}
    f.subscriptions.put(consumer1, f.v2([topic], [tp(topic, 0), tp(topic, 1)], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2([topic], [tp(topic, 2)], GENERATION_ID, 1))
    f.subscriptions.put(consumer3, f.v2([topic], [], GENERATION_ID, 2))
    assignment = f.assign(ppt)
    assert assignment[consumer1] == parts(tp(topic, 0), tp(topic, 1))
    assert assignment[consumer2] == parts(tp(topic, 2))
    assert assignment[consumer3] == parts(tp(topic, 3))
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)


@both_kinds
@every_rack_config
@pytest.mark.parametrize("stale_generation", [9, DEFAULT_GENERATION])
def test_owned_partitions_are_invalidated_for_consumer_with_stale_or_no_generation(kind, rack_config, stale_generation):
    """testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration / ...WithNoGeneration."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, 3), topic2: f.partition_infos(topic2, 3)}
    owned = [tp(topic, 0), tp(topic, 2), tp(topic2, 1)]
    f.subscriptions.put(consumer1, f.v2([topic, topic2], owned, 10, 0))
    f.subscriptions.put(consumer2, f.v2([topic, topic2], owned, stale_generation, 1))
    assignment = f.assign(ppt)
    assert set(assignment[consumer1]) == {tp(topic, 0), tp(topic, 2), tp(topic2, 1)}
    assert set(assignment[consumer2]) == {tp(topic, 1), tp(topic2, 0), tp(topic2, 2)}
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)


@both_kinds
@every_rack_config
def test_partitions_transferring_ownership_include_partition_claimed_by_multiple_consumers(kind, rack_config):
    """testPartitionsTransferringOwnershipIncludeThePartitionClaimedByMultipleConsumersInSameGeneration."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, 3)}
    f.subscriptions.put(consumer1, f.v2([topic], [tp(topic, 0), tp(topic, 1)], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2([topic], [tp(topic, 0), tp(topic, 2)], GENERATION_ID, 1))
    f.subscriptions.put(consumer3, f.v2([topic], [], GENERATION_ID, 2))
    assignment = f.assign(ppt)
    assert f.assignor.partitions_transferring_ownership == {tp(topic, 0): consumer3}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)
    assert assignment[consumer1] == parts(tp(topic, 1))
    assert assignment[consumer2] == parts(tp(topic, 2))
    assert assignment[consumer3] == parts(tp(topic, 0))


@both_kinds
@every_rack_config
def test_ensure_partitions_assigned_to_highest_generation(kind, rack_config):
    """testEnsurePartitionsAssignedToHighestGeneration."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {t: f.partition_infos(t, 3) for t in (topic, topic2, topic3)}
    ts = [topic, topic2, topic3]
    f.subscriptions.put(consumer1, f.v2(ts, [tp(topic, 0), tp(topic2, 0), tp(topic3, 0)], 10, 0))
    f.subscriptions.put(consumer2, f.v2(ts, [tp(topic, 1), tp(topic2, 1), tp(topic3, 1)], 9, 1))
    f.subscriptions.put(consumer3, f.v2(ts, [tp(topic2, 1), tp(topic3, 0), tp(topic3, 2)], 8, 1))
    assignment = f.assign(ppt)
    assert set(assignment[consumer1]) == {tp(topic, 0), tp(topic2, 0), tp(topic3, 0)}
    assert set(assignment[consumer2]) == {tp(topic, 1), tp(topic2, 1), tp(topic3, 1)}
    assert set(assignment[consumer3]) == {tp(topic, 2), tp(topic2, 2), tp(topic3, 2)}
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)


@both_kinds
@every_rack_config
def test_no_reassignment_on_current_members(kind, rack_config):
    """testNoReassignmentOnCurrentMembers."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {t: f.partition_infos(t, 3) for t in (topic, topic1, topic2, topic3)}
    ts = [topic, topic2, topic3, topic1]
    f.subscriptions.put(consumer1, f.v2(ts, [], DEFAULT_GENERATION, 0))
    f.subscriptions.put(consumer2, f.v2(ts, [tp(topic, 0), tp(topic2, 0), tp(topic1, 0)], 9, 1))
    f.subscriptions.put(consumer3, f.v2(ts, [tp(topic3, 2), tp(topic2, 2), tp(topic1, 1)], 8, 2))
    f.subscriptions.put(consumer4, f.v2(ts, [tp(topic3, 1), tp(topic, 1), tp(topic, 2)], 7, 3))
    assignment = f.assign(ppt)
    assert set(assignment[consumer1]) == {tp(topic1, 2), tp(topic2, 1), tp(topic3, 0)}
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)


@both_kinds
@every_rack_config
def test_owned_partitions_are_invalidated_for_consumer_with_multiple_generation(kind, rack_config):
    """testOwnedPartitionsAreInvalidatedForConsumerWithMultipleGeneration."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, 3), topic2: f.partition_infos(topic2, 3)}
    f.subscriptions.put(consumer1, f.v2([topic, topic2], [tp(topic, 0), tp(topic2, 1), tp(topic, 1)], 10, 0))
    f.subscriptions.put(consumer2, f.v2([topic, topic2], [tp(topic, 0), tp(topic2, 1), tp(topic2, 2)], 8, 1))
    assignment = f.assign(ppt)
    assert set(assignment[consumer1]) == {tp(topic, 0), tp(topic2, 1), tp(topic, 1)}
    assert set(assignment[consumer2]) == {tp(topic, 2), tp(topic2, 2), tp(topic2, 0)}
    assert f.assignor.partitions_transferring_ownership == {}
    f.verify_validity_and_balance(f.subscriptions, assignment, ppt)


@both_kinds
def test_member_data(kind):
    """testMemberData: every ConsumerProtocolSubscription version yields the owned partitions and generation."""
    f = KafkaFixture(kind)
    owned = [tp(topic1, 0), tp(topic2, 1)]
    for s in (f.v0([topic], owned, GENERATION_ID, 0), f.v1([topic], owned, GENERATION_ID, 1),
              f.v2([topic], owned, GENERATION_ID, 2)):
        if s is not None:
            md = f.assignor.member_data(s)
            assert list(md.partitions) == owned
            assert md.generation == GENERATION_ID


@both_kinds
@every_rack_config
def test_no_exception_thrown_when_only_subscribed_topic_deleted(kind, rack_config):
    """testNoExceptionThrownWhenOnlySubscribedTopicDeleted (through `assign(Map<String, Integer>)`)."""
    f = KafkaFixture(kind)
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, 3)}
    f.subscriptions.put(consumer_id, f.subscription([topic], 0))
    assignment = f.assign(ppt)
    f.subscriptions.put(consumer_id, f.v2([topic], assignment[consumer_id], GENERATION_ID, 0))
    assignment = f.assignor.assign_partition_counts({}, f.subscriptions)
    assert f.assignor.partitions_transferring_ownership == {}
    assert assignment == {consumer_id: []}


# --- rack-aware cases (verifyRackAssignment) --------------------------------------------------------------


def verify_rack_assignment(assignor, num_partitions_per_topic, replication_factor, broker_racks, consumer_racks,
                           consumer_topics, owned, expected, num_mismatched):
    """AbstractPartitionAssignorTest.verifyRackAssignment. `num_partitions_per_topic` is Kafka's `mkMap`, a
    LinkedHashMap, so the replica offsets follow its order; the subscriptions map is `new HashMap<>(n)`."""
    consumers = [f"consumer{i}" for i in range(len(consumer_racks))]
    ppt = {}
    nxt = 0
    for t, n in num_partitions_per_topic.items():
        ppt[t] = kafka_partition_infos(t, n, replication_factor, broker_racks, nxt)
        nxt += n
    subscriptions: JavaHashMap[str, Subscription] = JavaHashMap(len(consumers))
    for i, c in enumerate(consumers):
        owned_i: list[TopicPartition] = []
        if owned is not None and len(owned) > i:
            for p in owned[i].split(", "):
                owned_i.append(TopicPartition(p[: p.rindex("-")], int(p[p.rindex("-") + 1 :])))
        subscriptions.put(c, sub(consumer_topics[i], None, owned_i, DEFAULT_GENERATION, consumer_racks[i]))
    assignment = assignor.assign_partitions(ppt, subscriptions)
    check_rack_assignment(assignment, ppt, consumers, consumer_racks, expected, num_mismatched)


def racks(n: int) -> list[str]:
    return [ALL_RACKS[i % len(ALL_RACKS)] for i in range(n)]


def null_racks(n: int) -> list[None]:
    return [None] * n


RACK_TOPICS = {"t1": 6, "t2": 7, "t3": 2}  # mkMap(mkEntry("t1", 6), mkEntry("t2", 7), mkEntry("t3", 2))


@both_kinds
def test_rack_aware_assignment_with_uniform_subscription(kind):
    """testRackAwareAssignmentWithUniformSubscription."""
    assignor = StickyAssignor() if kind == "sticky" else CooperativeStickyAssignor()
    all_topics = ["t1", "t2", "t3"]
    consumer_topics = [all_topics] * 3
    non_rack_aware = ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"]

    def uniform(rf, broker_racks, consumer_racks, expected, mismatched):  # verifyUniformSubscription
        verify_rack_assignment(assignor, RACK_TOPICS, rf, broker_racks, consumer_racks, consumer_topics, None,
                               expected, mismatched)
        verify_rack_assignment(assignor, RACK_TOPICS, rf, broker_racks, consumer_racks, consumer_topics, expected,
                               expected, mismatched)

    uniform(3, null_racks(3), racks(3), non_rack_aware, -1)
    uniform(3, racks(3), null_racks(3), non_rack_aware, -1)
    assignor.prefer_rack_aware_logic = True
    uniform(3, racks(3), racks(3), non_rack_aware, 0)
    uniform(4, racks(4), racks(3), non_rack_aware, 0)
    assignor.prefer_rack_aware_logic = False
    uniform(3, racks(3), racks(3), non_rack_aware, 0)
    uniform(3, racks(3), ["d", "e", "f"], non_rack_aware, -1)
    uniform(3, racks(3), [None, "e", "f"], non_rack_aware, -1)

    # rack-aligned for lower replication factors, where brokers hold a subset of partitions
    assignment = ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"]
    uniform(1, racks(3), racks(3), assignment, 0)
    uniform(2, racks(3), racks(3), assignment, 0)
    # one consumer on a rack without partitions: misaligned, to keep the balance
    uniform(3, racks(2), racks(3), assignment, 5)
    # owned partitions on the wrong racks are moved; the cooperative assignor first withholds them (KAFKA-15170)
    owned = ["t1-0, t1-1, t1-2, t1-3, t1-4", "t1-5, t2-0, t2-1, t2-2, t2-3", "t2-4, t2-5, t2-6, t3-0, t3-1"]
    if kind == "cooperative":
        intermediate = ["t1-0, t1-3", "t2-1", "t2-5, t3-1"]
        verify_rack_assignment(assignor, RACK_TOPICS, 1, racks(3), racks(3), consumer_topics, owned, intermediate, 0)
    else:
        verify_rack_assignment(assignor, RACK_TOPICS, 1, racks(3), racks(3), consumer_topics, owned, assignment, 0)
    # stickiness is retained when racks match
    assignor.prefer_rack_aware_logic = True
    verify_rack_assignment(assignor, RACK_TOPICS, 3, racks(3), racks(3), consumer_topics, assignment, assignment, 0)


@both_kinds
def test_rack_aware_assignment_with_non_equal_subscription(kind):
    """testRackAwareAssignmentWithNonEqualSubscription (general builder, both assignors' branches)."""
    assignor = StickyAssignor() if kind == "sticky" else CooperativeStickyAssignor()
    all_topics = ["t1", "t2", "t3"]
    consumer_topics = [all_topics, all_topics, ["t1", "t3"]]
    non_rack_aware = ["t1-5, t2-0, t2-2, t2-4, t2-6", "t1-3, t2-1, t2-3, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-4, t3-1"]

    def verify(rf, broker_racks, consumer_racks, owned, expected, mismatched):
        verify_rack_assignment(assignor, RACK_TOPICS, rf, broker_racks, consumer_racks, consumer_topics, owned,
                               expected, mismatched)

    def non_equal(rf, broker_racks, consumer_racks, expected, mismatched):  # verifyNonEqualSubscription
        verify(rf, broker_racks, consumer_racks, None, expected, mismatched)
        verify(rf, broker_racks, consumer_racks, expected, expected, mismatched)

    non_equal(3, null_racks(3), racks(3), non_rack_aware, -1)
    non_equal(3, racks(3), null_racks(3), non_rack_aware, -1)
    assignor.prefer_rack_aware_logic = True
    non_equal(3, racks(3), racks(3), non_rack_aware, 0)
    non_equal(4, racks(4), racks(3), non_rack_aware, 0)
    assignor.prefer_rack_aware_logic = False
    non_equal(3, racks(3), racks(3), non_rack_aware, 0)
    non_equal(3, racks(3), ["d", "e", "f"], non_rack_aware, -1)
    non_equal(3, racks(3), [None, "e", "f"], non_rack_aware, -1)

    assignment = ["t1-3, t2-0, t2-2, t2-3, t2-6", "t1-4, t2-1, t2-4, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-5, t3-1"]
    non_equal(1, racks(3), racks(3), assignment, 4)
    assignment = ["t1-3, t2-0, t2-2, t2-5, t2-6", "t1-0, t2-1, t2-3, t2-4, t3-0", "t1-1, t1-2, t1-4, t1-5, t3-1"]
    non_equal(2, racks(3), racks(3), assignment, 0)
    non_equal(3, racks(2), racks(3), non_rack_aware, 5)

    owned = ["t1-0, t1-1, t1-2, t1-3, t1-4", "t1-5, t2-0, t2-1, t2-2, t2-3", "t2-4, t2-5, t2-6, t3-0, t3-1"]
    if kind == "sticky":
        assignment = ["t1-3, t2-0, t2-2, t2-3, t2-6", "t1-4, t2-1, t2-4, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-5, t3-1"]
        verify(1, racks(3), racks(3), owned, assignment, 4)
    else:  # partitions changing owner are withheld for a round
        intermediate = ["t1-3", "t2-1", "t3-1"]
        verify(1, racks(3), racks(3), owned, intermediate, 0)
        assignment = ["t1-3, t2-0, t2-2, t2-3, t2-6", "t1-4, t2-1, t2-4, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-5, t3-1"]
        verify(1, racks(3), racks(3), intermediate, assignment, 4)

    # same result as without racks when all racks match
    if kind == "sticky":
        assignment = ["t1-5, t2-0, t2-2, t2-4, t2-6", "t1-3, t2-1, t2-3, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-4, t3-1"]
        assignor.prefer_rack_aware_logic = False
        verify(3, racks(3), racks(3), owned, assignment, 0)
        assignor.prefer_rack_aware_logic = True
        verify(3, racks(3), racks(3), owned, assignment, 0)
    else:
        assignment = ["t1-2, t1-3, t1-4, t2-4, t2-5", "t2-0, t2-1, t2-2, t2-3, t2-6", "t1-0, t1-1, t1-5, t3-0, t3-1"]
        intermediate = ["t1-2, t1-3, t1-4", "t2-0, t2-1, t2-2, t2-3", "t3-0, t3-1"]
        assignor.prefer_rack_aware_logic = False
        verify(3, racks(3), racks(3), owned, intermediate, 0)
        verify(3, racks(3), racks(3), intermediate, assignment, 0)
        assignor.prefer_rack_aware_logic = True
        verify(3, racks(3), racks(3), owned, intermediate, 0)
        verify(3, racks(3), racks(3), intermediate, assignment, 0)


def test_use_rack_aware_assignment():
    """AbstractPartitionAssignorTest.testUseRackAwareAssignment."""
    all_racks, two_racks = {"a", "b", "c"}, {"a", "b"}
    on_all = {tp("topic", i): all_racks for i in range(10)}
    on_subset = {tp("topic", i): {"abc"[i % 3]} for i in range(10)}
    for prefer in (False, True):
        assert not use_rack_aware_assignment(set(), set(), on_all, prefer)
        assert not use_rack_aware_assignment(set(), all_racks, on_all, prefer)
        assert not use_rack_aware_assignment(all_racks, set(), {}, prefer)
        assert not use_rack_aware_assignment({"d"}, all_racks, on_all, prefer)
        assert use_rack_aware_assignment(all_racks, all_racks, on_all, prefer) == prefer
        assert use_rack_aware_assignment(two_racks, all_racks, on_all, prefer) == prefer
        assert use_rack_aware_assignment(all_racks, all_racks, on_subset, prefer)
        assert use_rack_aware_assignment(two_racks, all_racks, on_subset, prefer)
    assert not use_rack_aware_assignment({"a", "d"}, all_racks, on_all)
    assert use_rack_aware_assignment({"a", "d"}, all_racks, on_subset)


# --- StickyAssignorTest -----------------------------------------------------------------------------------


@every_rack_config
def test_sticky_partition_claimed_by_multiple_consumers_equal_partitions(rack_config):
    """StickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultipleConsumers
    InSameGenerationWithEqualPartitionsPerConsumer."""
    f = KafkaFixture("sticky")
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, 3)}
    f.subscriptions.put(consumer1, f.v2([topic], [tp(topic, 0), tp(topic, 1)], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2([topic], [tp(topic, 0), tp(topic, 2)], GENERATION_ID, 1))
    f.subscriptions.put(consumer3, f.v2([topic], [], GENERATION_ID, 2))
    assignment = f.assign(ppt)
    assert assignment[consumer1] == parts(tp(topic, 1))
    assert assignment[consumer2] == parts(tp(topic, 2))
    assert assignment[consumer3] == parts(tp(topic, 0))


@every_rack_config
def test_sticky_partition_claimed_by_multiple_consumers_unequal_partitions(rack_config):
    """StickyAssignorTest...InSameGenerationWithUnequalPartitionsPerConsumer."""
    f = KafkaFixture("sticky")
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, 4)}
    f.subscriptions.put(consumer1, f.v2([topic], [tp(topic, 0), tp(topic, 1)], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2([topic], [tp(topic, 0), tp(topic, 2)], GENERATION_ID, 1))
    f.subscriptions.put(consumer3, f.v2([topic], [], GENERATION_ID, 2))
    assignment = f.assign(ppt)
    assert assignment[consumer1] == parts(tp(topic, 1), tp(topic, 3))
    assert assignment[consumer2] == parts(tp(topic, 2))
    assert assignment[consumer3] == parts(tp(topic, 0))


RACK_AND_SUBSCRIPTION = [(r, eq) for eq in (True, False) for r in RACK_CONFIGS]


@pytest.mark.parametrize(("rack_config", "all_equal"), RACK_AND_SUBSCRIPTION)
def test_sticky_assignment_with_multiple_generations1(rack_config, all_equal):
    """StickyAssignorTest.testAssignmentWithMultipleGenerations1."""
    f = KafkaFixture("sticky")
    f.initialize_racks(rack_config)
    all_topics = [topic, topic2]
    c2_topics = all_topics if all_equal else [topic]
    ppt = {topic: f.partition_infos(topic, 6), topic2: f.partition_infos(topic2, 6)}
    f.subscriptions.put(consumer1, f.subscription(all_topics, 0))
    f.subscriptions.put(consumer2, f.subscription(c2_topics, 1))
    f.subscriptions.put(consumer3, f.subscription(all_topics, 2))
    a = f.assign(ppt)
    r1p1, r1p2, r1p3 = a[consumer1], a[consumer2], a[consumer3]
    assert len(r1p1) == len(r1p2) == len(r1p3) == 4
    f.verify_validity_and_balance(f.subscriptions, a, ppt)

    f.subscriptions.put(consumer1, f.v2(all_topics, r1p1, GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2(c2_topics, r1p2, GENERATION_ID, 1))
    f.subscriptions.remove(consumer3)
    a = f.assign(ppt)
    r2p1, r2p2 = a[consumer1], a[consumer2]
    assert len(r2p1) == len(r2p2) == 6
    if all_equal:
        assert set(r1p1) <= set(r2p1)
    assert set(r1p2) <= set(r2p2)
    assert set(r2p2) & set(r1p3)
    f.verify_validity_and_balance(f.subscriptions, a, ppt)

    f.subscriptions.remove(consumer1)
    f.subscriptions.put(consumer2, f.v2(c2_topics, r2p2, 2, 1))
    f.subscriptions.put(consumer3, f.v2(all_topics, r1p3, 1, 2))
    a = f.assign(ppt)
    assert len(a[consumer2]) == len(a[consumer3]) == 6
    assert not set(a[consumer2]) & set(a[consumer3])
    f.verify_validity_and_balance(f.subscriptions, a, ppt)


@pytest.mark.parametrize(("rack_config", "all_equal"), RACK_AND_SUBSCRIPTION)
def test_sticky_assignment_with_multiple_generations2(rack_config, all_equal):
    """StickyAssignorTest.testAssignmentWithMultipleGenerations2."""
    f = KafkaFixture("sticky")
    f.initialize_racks(rack_config)
    all_topics = [topic, topic2, topic3]
    c1_topics = all_topics if all_equal else [topic]
    c3_topics = all_topics if all_equal else [topic, topic2]
    ppt = {t: f.partition_infos(t, 4) for t in all_topics}
    f.subscriptions.put(consumer1, f.subscription(c1_topics, 0))
    f.subscriptions.put(consumer2, f.subscription(all_topics, 1))
    f.subscriptions.put(consumer3, f.subscription(c3_topics, 2))
    a = f.assign(ppt)
    r1p1, r1p2, r1p3 = a[consumer1], a[consumer2], a[consumer3]
    assert len(r1p1) == len(r1p2) == len(r1p3) == 4

    f.subscriptions.remove(consumer1)
    f.subscriptions.put(consumer2, f.v2(all_topics, r1p2, 1, 1))
    f.subscriptions.remove(consumer3)
    a = f.assign(ppt)
    r2p2 = a[consumer2]
    assert len(r2p2) == 12 and set(r1p2) <= set(r2p2)

    f.subscriptions.put(consumer1, f.v2(c1_topics, r1p1, 1, 0))
    f.subscriptions.put(consumer2, f.v2(all_topics, r2p2, 2, 1))
    f.subscriptions.put(consumer3, f.v2(c3_topics, r1p3, 1, 2))
    a = f.assign(ppt)
    assert len(a[consumer1]) == len(a[consumer2]) == len(a[consumer3]) == 4
    f.verify_validity_and_balance(f.subscriptions, a, ppt)
    assert f.assignor.max_generation == 2


@pytest.mark.parametrize(("rack_config", "all_equal"), RACK_AND_SUBSCRIPTION)
def test_sticky_assignment_with_conflicting_previous_generations(rack_config, all_equal):
    """StickyAssignorTest.testAssignmentWithConflictingPreviousGenerations."""
    f = KafkaFixture("sticky")
    f.initialize_racks(rack_config)
    ppt = {t: f.partition_infos(t, 4) for t in (topic, topic2, topic3)}
    all_topics = [topic, topic2, topic3]
    c1_topics = all_topics if all_equal else [topic]
    c2_topics = all_topics if all_equal else [topic, topic2]
    f.subscriptions.put(consumer1, f.subscription(c1_topics, 0))
    f.subscriptions.put(consumer2, f.subscription(c2_topics, 1))
    f.subscriptions.put(consumer3, f.subscription(all_topics, 2))
    t0 = [tp(topic, i) for i in range(4)]
    t2 = [tp(topic2, i) for i in range(4)]
    t3 = [tp(topic3, i) for i in range(4)]
    c1p0 = [t0[0], t0[1], t0[2], t2[2], t2[3], t3[0]] if all_equal else t0
    c2p0 = [t0[0], t0[1], t2[0], t2[1], t2[2], t2[3]]
    c3p0 = [t0[2], t0[3], t3[0], t3[1], t3[2], t3[3]]
    f.subscriptions.put(consumer1, f.v2(c1_topics, c1p0, 1, 0))
    f.subscriptions.put(consumer2, f.v2(c2_topics, c2p0, 2, 1))
    f.subscriptions.put(consumer3, f.v2(all_topics, c3p0, 2, 2))
    a = f.assign(ppt)
    assert len(a[consumer1]) == len(a[consumer2]) == len(a[consumer3]) == 4
    assert set(a[consumer2]) <= set(c2p0)
    assert set(a[consumer3]) <= set(c3p0)
    f.verify_validity_and_balance(f.subscriptions, a, ppt)


@every_rack_config
def test_sticky_schema_backward_compatibility(rack_config):
    """StickyAssignorTest.testSchemaBackwardCompatibility: a member sending V0 user data (no generation)."""
    f = KafkaFixture("sticky")
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, 3)}
    for i, c in enumerate((consumer1, consumer2, consumer3)):
        f.subscriptions.put(c, f.subscription([topic], i))
    c1p0, c2p0 = [tp(topic, 0), tp(topic, 2)], [tp(topic, 1)]
    f.subscriptions.put(consumer1, f.v2([topic], c1p0, 1, 0))
    old = serialize_topic_partition_assignment_v0(c2p0)  # buildSubscriptionWithOldSchema
    f.subscriptions.put(consumer2, sub([topic], old, (), DEFAULT_GENERATION, f.consumer_rack_id(1)))
    a = f.assign(ppt)
    assert len(a[consumer1]) == len(a[consumer2]) == len(a[consumer3]) == 1
    assert set(a[consumer1]) <= set(c1p0) and set(a[consumer2]) <= set(c2p0)
    f.verify_validity_and_balance(f.subscriptions, a, ppt)


def test_sticky_member_data_honours_user_data():
    """StickyAssignorTest.testMemberDataWithInconsistentData and testMemberDataWillHonorUserData."""
    a = StickyAssignor()
    a.on_assignment([tp(topic, 1)], GENERATION_ID)
    data = a.subscription_user_data([topic])
    md = a.member_data(Subscription((topic,), data, (tp(topic, 0),)))
    assert md == MemberData((tp(topic, 1),), GENERATION_ID)

    owned = (tp(topic1, 0), tp(topic2, 1))
    s = Subscription((topic,), serialize_topic_partition_assignment(owned, GENERATION_ID - 1), (), GENERATION_ID)
    assert StickyAssignor().member_data(s) == MemberData(owned, GENERATION_ID - 1)


@both_kinds
def test_assignor_with_old_version_subscriptions(kind):
    """StickyAssignorTest / CooperativeStickyAssignorTest.testAssignorWithOldVersionSubscriptions."""
    f = KafkaFixture(kind)
    ppt = {topic1: f.partition_infos(topic1, 3)}
    ts = [topic1]
    first = f.v0(ts, [tp(topic1, 0)], GENERATION_ID, 0) or f.v1(ts, [tp(topic1, 0)], GENERATION_ID, 0)
    f.subscriptions.put(consumer1, first)
    f.subscriptions.put(consumer2, f.v1(ts, [tp(topic1, 1)], GENERATION_ID, 1))
    f.subscriptions.put(consumer3, f.v2(ts, [], GENERATION_ID, 2))
    a = f.assign(ppt)
    assert a == {consumer1: [tp(topic1, 0)], consumer2: [tp(topic1, 1)], consumer3: [tp(topic1, 2)]}
    f.verify_validity_and_balance(f.subscriptions, a, ppt)


def test_sticky_user_data_round_trip_regroups_by_topic_hash_order():
    """The V1 schema groups partitions by topic through a HashMap (checklist item 2): 'topic' hashes after
    'topic1' and 'topic2' in a 16-bucket table, so it comes back last, its partitions in their order."""
    owned = [tp(topic, 2), tp(topic1, 0), tp(topic, 0), tp(topic2, 5)]
    md = deserialize_topic_partition_assignment(serialize_topic_partition_assignment(owned, 7))
    assert md == MemberData((tp(topic1, 0), tp(topic2, 5), tp(topic, 2), tp(topic, 0)), 7)
    assert deserialize_topic_partition_assignment(serialize_topic_partition_assignment_v0(owned)).generation is None
    assert deserialize_topic_partition_assignment(b"\x00\x00\x00\x05junk") == MemberData((), DEFAULT_GENERATION)
    assert StickyAssignor().member_data(Subscription((topic,), b"")) == MemberData((), None)


# --- CooperativeStickyAssignorTest ------------------------------------------------------------------------


def test_cooperative_encode_and_decode_generation():
    """CooperativeStickyAssignorTest.testEncodeAndDecodeGeneration and testDecodeGeneration."""
    a = CooperativeStickyAssignor()
    assert a.member_data(Subscription((topic,), a.subscription_user_data([topic]))).generation == DEFAULT_GENERATION
    a.on_assignment(None, 10)
    assert a.member_data(Subscription((topic,), a.subscription_user_data([topic]))).generation == 10
    assert a.member_data(Subscription((topic,))).generation is None
    assert a.member_data(Subscription((topic,), b"\x00")).generation == DEFAULT_GENERATION  # unreadable


@every_rack_config
@pytest.mark.parametrize("num_partitions", [3, 4])
def test_cooperative_partition_claimed_by_multiple_consumers_is_withheld(rack_config, num_partitions):
    """CooperativeStickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultiple
    ConsumersInSameGenerationWith{Equal,Unequal}PartitionsPerConsumer: topic-0 goes to nobody this round."""
    f = KafkaFixture("cooperative")
    f.initialize_racks(rack_config)
    ppt = {topic: f.partition_infos(topic, num_partitions)}
    f.subscriptions.put(consumer1, f.v2([topic], [tp(topic, 0), tp(topic, 1)], GENERATION_ID, 0))
    f.subscriptions.put(consumer2, f.v2([topic], [tp(topic, 0), tp(topic, 2)], GENERATION_ID, 1))
    f.subscriptions.put(consumer3, f.v2([topic], [], GENERATION_ID, 2))
    a = f.assign(ppt)
    assert a[consumer1] == ([tp(topic, 1)] if num_partitions == 3 else [tp(topic, 1), tp(topic, 3)])
    assert a[consumer2] == [tp(topic, 2)]
    assert a[consumer3] == []
    f.verify_validity_and_balance(f.subscriptions, a, ppt)
    assert is_fully_balanced(a)


def test_cooperative_member_data():
    """CooperativeStickyAssignorTest.testMemberDataWithInconsistentData / ...EmptyPartitionsAndEqualGeneration
    / ...EmptyPartitionsAndHigherGeneration."""
    a = CooperativeStickyAssignor()
    a.on_assignment([tp(topic, 1)], GENERATION_ID)
    s = Subscription((topic,), a.subscription_user_data([topic]), (tp(topic, 0),))
    assert a.member_data(s) == MemberData((tp(topic, 0),), GENERATION_ID)
    for user_data_generation in (GENERATION_ID, GENERATION_ID - 1):
        a.on_assignment([tp(topic1, 0), tp(topic2, 1)], user_data_generation)
        s = Subscription((topic,), a.subscription_user_data([topic]), (), GENERATION_ID)
        assert a.member_data(s) == MemberData((), GENERATION_ID)


def test_cooperative_uniform_subscription_transfer_ownership_list_is_right():
    """CooperativeStickyAssignorTest.testUniformSubscriptionTransferOwnershipListIsRight (KAFKA-15170):
    owned partitions on the wrong rack are revoked, so both hand-overs must be withheld."""
    f = KafkaFixture("cooperative")
    f.replication_factor, f.num_broker_racks, f.has_consumer_rack = 1, 2, True
    ppt = {topic1: f.partition_infos(topic1, 4)}
    f.subscriptions.put("c0", f.v2([topic1], [tp(topic1, 0), tp(topic1, 1)], GENERATION_ID, 0))
    f.subscriptions.put("c1", f.v2([topic1], [tp(topic1, 2), tp(topic1, 3)], GENERATION_ID, 1))
    f.assign(ppt)
    assert len(f.assignor.partitions_transferring_ownership) == 2


# --- beyond Kafka's tests: hand-derived cases ----------------------------------------------------------------


def test_seed_seven_partitions_over_three_consumers():
    """Seed 001: 7 partitions over 3 consumers give 3, 2, 2. By hand: minQuota 2, maxQuota 3, one member
    over. Fresh round robin over [c1, c2, c3]: t-0..t-2 to c1..c3; t-3, t-4, t-5 bring each to minQuota
    and move it to the 'exactly minQuota' queue; t-6 goes to that queue's head, c1."""
    subs = {c: Subscription(("t",)) for c in ("c1", "c2", "c3")}
    a = StickyAssignor().assign_partition_counts({"t": 7}, subs)
    assert a == {"c1": [tp("t", 0), tp("t", 3), tp("t", 6)], "c2": [tp("t", 1), tp("t", 4)],
                 "c3": [tp("t", 2), tp("t", 5)]}


def test_max_generation_is_never_reset():
    """Kafka's `maxGeneration()` keeps the largest generation an instance has ever seen."""
    a = CooperativeStickyAssignor()
    a.assign_partition_counts({"t": 2}, {"c1": Subscription(("t",), None, (tp("t", 0),), 5)})
    a.assign_partition_counts({"t": 2}, {"c1": Subscription(("t",), None, (tp("t", 0),), 3)})
    assert a.max_generation == 5


def test_tie_break_uses_raw_generation_of_the_earlier_claimant():
    """Checklist item 4, derived by hand. StickyAssignor reads a member's generation from its user data, but
    an earlier claimant's from its raw `generationId` (empty here, so -1). Iteration order is consumer2,
    consumer1. consumer2 (user data gen 5) claims t-0 first; consumer1 (user data gen 3) then claims it too:
    3 > -1, so consumer1 takes it although its generation is lower. Equal subscriptions, 2 partitions over
    2 members: consumer1 keeps t-0, consumer2 gets t-1."""
    data5 = serialize_topic_partition_assignment([tp("t", 0)], 5)
    data3 = serialize_topic_partition_assignment([tp("t", 0)], 3)
    subs = {consumer1: Subscription(("t",), data3), consumer2: Subscription(("t",), data5)}
    assert _java_map(subs).keys() == [consumer2, consumer1]
    a = StickyAssignor().assign_partition_counts({"t": 2}, subs)
    assert a == {consumer1: [tp("t", 0)], consumer2: [tp("t", 1)]}


def test_stale_owner_gets_unsubscribed_partition():
    """A Kafka quirk found by the properties, derived by hand. General builder (subscriptions differ):
    m1 (generation 1, user data [t0-2]) now subscribes to t1 only; m0 is at generation 2 with [t1-0].
    m1's t0-2 is dropped as unsubscribed but, m1 being older than maxGeneration, it is remembered in
    prevAssignment. Unassigned t0-0, t0-1, t0-2 go to the least loaded t0 subscribers: m2, m3, then m0
    (size 1 ahead of m2/m3 by id). Not balanced (m0 has 2, m1 and m4 none), so performReassignments runs:
    t0-2's owner m0 has more than prev owner m1's size + 1, so t0-2 goes back to m1 without any
    subscription check. The score improves (10 -> 4), so it stays: m1 gets a partition it did not subscribe to."""
    ppt = {"t0": [PartitionInfo("t0", i) for i in range(3)], "t1": [PartitionInfo("t1", 0)]}
    topics = {"m0": ("t0", "t1"), "m1": ("t1",), "m2": ("t0",), "m3": ("t0",), "m4": ("t1",)}
    data = {"m0": serialize_topic_partition_assignment([tp("t1", 0)], 2),
            "m1": serialize_topic_partition_assignment([tp("t0", 2)], 1)}
    subs = {m: Subscription(topics[m], data.get(m)) for m in topics}
    assert StickyAssignor().assign_partitions(ppt, subs) == {
        "m0": [tp("t1", 0)], "m1": [tp("t0", 2)], "m2": [tp("t0", 0)], "m3": [tp("t0", 1)], "m4": []}


def test_stale_owner_set_aside_as_fixed_throws_like_java():
    """Checklist item 20 made concrete, derived by hand. F (generation 1) owned t1-0 and t2-0 but now
    subscribes to t1 only; A (generation 2) owns all of t2; B is new. General builder. F keeps t1-0, A
    keeps t2-0..3. F holds everything it can get and nothing of a shared topic, so it is set aside as
    'fixed' (removed from currentAssignment). Not balanced (B 0, A 4), so performReassignments looks at
    t2-0, which prevAssignment gives to F (generation 1 < 2): `currentAssignment.get(F).size()` is an NPE."""
    ppt = {"t1": [PartitionInfo("t1", 0)], "t2": [PartitionInfo("t2", i) for i in range(4)]}
    subs = {
        "F": Subscription(("t1",), serialize_topic_partition_assignment([tp("t1", 0), tp("t2", 0)], 1)),
        "A": Subscription(("t2",), serialize_topic_partition_assignment([tp("t2", i) for i in range(4)], 2)),
        "B": Subscription(("t2",)),
    }
    with pytest.raises(NullPointerException):
        StickyAssignor().assign_partitions(ppt, subs)


def _java_map(d):
    m = JavaHashMap()
    for k, v in d.items():
        m.put(k, v)
    return m


# --- properties -------------------------------------------------------------------------------------------

TOPIC_NAMES = ("t0", "t1", "t2", "t3")


@st.composite
def groups(draw, equal: bool):
    n_topics = draw(st.integers(1, 4))
    topics = TOPIC_NAMES[:n_topics]
    counts = {t: draw(st.integers(0, 7)) for t in topics}
    members = [f"m{i}" for i in range(draw(st.integers(1, 5)))]
    with_racks = draw(st.booleans())
    rack_names = ("a", "b", "c")
    subs: dict[str, tuple[str, ...]] = {}
    for m in members:
        if equal:
            subs[m] = topics
        else:
            subs[m] = tuple(t for t in topics if draw(st.booleans())) or (topics[0],)
    ppt = {}
    for t in topics:
        if any(t in s for s in subs.values()):  # AbstractPartitionAssignor keeps subscribed topics only
            ppt[t] = [
                PartitionInfo(t, i, None, tuple(Broker(b, draw(st.sampled_from(rack_names)) if with_racks else None)
                                                for b in range(2)))
                for i in range(counts[t])
            ]
    member_racks = {m: (draw(st.sampled_from(rack_names)) if with_racks and draw(st.booleans()) else None)
                    for m in members}
    # a previous assignment: each partition claimed by one of its topic's subscribers (rarely two), or by nobody
    # (a stale owner that dropped the topic can be handed it back: see test_stale_owner_gets_unsubscribed_partition)
    owned: dict[str, list[TopicPartition]] = {m: [] for m in members}
    for t, infos in ppt.items():
        for p in infos:
            subscribers = [m for m in members if t in subs[m]]
            holder = draw(st.sampled_from([None, *subscribers]))
            if holder is not None:
                owned[holder].append(tp(t, p.partition))
                if draw(st.integers(0, 9)) == 0:  # now and then a second claimant (generation tie-breaks)
                    other = draw(st.sampled_from(subscribers))
                    if other != holder:
                        owned[other].append(tp(t, p.partition))
    generations = {m: draw(st.sampled_from([None, 1, 2])) for m in members}
    return ppt, subs, member_racks, owned, generations


def _all_partitions(ppt):
    return {tp(t, p.partition) for t, infos in ppt.items() for p in infos}


def _check_exactly_once(ppt, subs, assignment):
    seen = [p for tps in assignment.values() for p in tps]
    assert len(seen) == len(set(seen))
    assert set(seen) == _all_partitions(ppt)
    for m, tps in assignment.items():
        assert all(p.topic in subs[m] for p in tps)


@given(groups(equal=False), st.booleans())
def test_property_every_partition_assigned_exactly_once(group, equal_path):
    ppt, subs, member_racks, owned, gens = group
    a = StickyAssignor()
    subscriptions = {
        m: Subscription(subs[m], serialize_topic_partition_assignment(owned[m], gens[m]) if gens[m] else None,
                        (), None, member_racks[m])
        for m in subs
    }
    assignment = a.assign_partitions(ppt, subscriptions)
    assert set(assignment) == set(subs)
    _check_exactly_once(ppt, subs, assignment)


@given(groups(equal=True))
def test_property_equal_subscriptions_are_balanced(group):
    ppt, subs, member_racks, owned, gens = group
    subscriptions = {
        m: Subscription(subs[m], serialize_topic_partition_assignment(owned[m], gens[m] or 0), (), None,
                        member_racks[m])
        for m in subs
    }
    assignment = StickyAssignor().assign_partitions(ppt, subscriptions)
    _check_exactly_once(ppt, subs, assignment)
    assert is_fully_balanced(assignment)


@given(groups(equal=False))
def test_property_stickiness_without_membership_change(group):
    """Round 1 from a random previous assignment; round 2, each member's own StickyAssignor sends what it got
    (user data from `on_assignment`): nobody's partitions change. Rack info is dropped: with racks, round 1
    may hand out a misaligned partition for balance, which round 2 legitimately revokes."""
    ppt, subs, _member_racks, owned, gens = group
    ppt = {t: [PartitionInfo(p.topic, p.partition) for p in infos] for t, infos in ppt.items()}
    leader = StickyAssignor()
    first_subs = {
        m: Subscription(subs[m], serialize_topic_partition_assignment(owned[m], gens[m]) if gens[m] else None)
        for m in subs
    }
    first = leader.assign_partitions(ppt, first_subs)
    clients = {m: StickyAssignor() for m in subs}
    second_subs = {}
    for m, client in clients.items():
        client.on_assignment(first[m], 3)
        second_subs[m] = Subscription(subs[m], client.subscription_user_data(subs[m]))
    second = leader.assign_partitions(ppt, second_subs)
    assert {m: set(v) for m, v in second.items()} == {m: set(v) for m, v in first.items()}


@given(groups(equal=False), st.booleans())
def test_property_cooperative_never_hands_over_a_partition_being_revoked(group, equal):
    """In each round, no partition is both revoked from an owner and added to another; follow-up rounds
    (every member at the next generation, owning what it got) converge to a complete assignment."""
    ppt, subs, member_racks, owned, gens = group
    if equal:
        subs = {m: tuple(ppt) or subs[m] for m in subs}
    assignor = CooperativeStickyAssignor()
    subscriptions = _java_map({m: Subscription(subs[m], None, tuple(owned[m]), gens[m], member_racks[m])
                               for m in subs})
    for generation in range(3, 9):
        assignment = assignor.assign_partitions(ppt, subscriptions)
        if not verify_cooperative_validity(subscriptions, assignment):
            break
        for m in subs:
            subscriptions.put(m, Subscription(subs[m], None, tuple(assignment[m]), generation, member_racks[m]))
    else:
        pytest.fail("still revoking after 6 rounds")
    _check_exactly_once({t: v for t, v in ppt.items() if any(t in s for s in subs.values())}, subs, assignment)
