"""The client-side Range and RoundRobin assignors against Kafka's own unit-test expectations.

Expected values come from apache/kafka's
`clients/src/test/java/org/apache/kafka/clients/consumer/RangeAssignorTest.java`,
`RoundRobinAssignorTest.java` and `internals/AbstractPartitionAssignorTest.java`
(each test names the Kafka test it reproduces), or are derived by hand in a comment.
The fixtures below rebuild the inputs of those tests' helpers (`partitionInfos`,
`verifyRackAssignment`, `subscription`) in Python.
"""

from __future__ import annotations

import enum
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcheck.model import Broker, PartitionInfo, Subscription, TopicPartition
from kcheck.reference.assignors.client import (
    MemberInfo,
    RangeAssignor,
    RoundRobinAssignor,
    build_partitions_per_topic,
    sorted_members,
)
from rack_checks import check_rack_assignment

ALL_RACKS = ("a", "b", "c", "d", "e", "f")


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


# --- fixtures mirroring AbstractPartitionAssignorTest's helpers --------------------------------


def partition_infos_on(topic: str, n: int, rf: int, broker_racks: list[str | None], next_node: int):
    """Partition i has replicas on brokers (i + j + next_node) % #brokers, j < rf; broker b's rack is racks[b]."""
    nodes = [Broker(i, rack) for i, rack in enumerate(broker_racks)]
    out = []
    for i in range(n):
        replicas = tuple(nodes[(i + j + next_node) % len(nodes)] for j in range(rf))
        out.append(PartitionInfo(topic, i, replicas[0], replicas))
    return out


def partition_infos(topic: str, n: int, rf: int, num_broker_racks: int, next_node: int = 0):
    """The public `partitionInfos`: rf brokers without racks, or num_broker_racks * rf brokers on racks a, b, ..."""
    num_brokers = rf if num_broker_racks <= 0 else num_broker_racks * rf
    racks = [None if num_broker_racks <= 0 else ALL_RACKS[i % num_broker_racks] for i in range(num_brokers)]
    return partition_infos_on(topic, n, rf, racks, next_node)


def racks(n: int) -> list[str]:
    return [ALL_RACKS[i % len(ALL_RACKS)] for i in range(n)]


def null_racks(n: int) -> list[None]:
    return [None] * n


def verify_rack_assignment(assignor, topics, rf, broker_racks, consumer_racks, consumer_topics, expected,
                           num_mismatched):
    """`verifyRackAssignment`: consumers consumer0.., topics' brokers numbered on from one topic to the next.

    `topics` is Kafka's `mkMap` (a LinkedHashMap), so the running node index follows its order;
    the resulting partitionsPerTopic HashMap is filled in that order too.
    """
    consumers = [f"consumer{i}" for i in range(len(consumer_racks))]
    partitions_per_topic, next_node = {}, 0
    for topic, n in topics.items():
        partitions_per_topic[topic] = partition_infos_on(topic, n, rf, broker_racks, next_node)
        next_node += n
    subscriptions = {
        c: Subscription(consumer_topics[i], None, (), -1, consumer_racks[i]) for i, c in enumerate(consumers)
    }
    assignment = assignor.assign_partitions(partitions_per_topic, subscriptions)
    check_rack_assignment(assignment, partitions_per_topic, consumers, consumer_racks, expected, num_mismatched)


class RackConfig(enum.Enum):
    NO_BROKER_RACK = 1
    NO_CONSUMER_RACK = 2
    BROKER_AND_CONSUMER_RACK = 3


class RangeFixture:
    """RangeAssignorTest's per-test state: `initializeRacks` and the `subscription`/`partitionInfos` helpers."""

    def __init__(self, rack_config: RackConfig, max_consumers: int = 3) -> None:
        self.replication_factor = max_consumers
        self.num_broker_racks = max_consumers if rack_config != RackConfig.NO_BROKER_RACK else 0
        self.has_consumer_rack = rack_config != RackConfig.NO_CONSUMER_RACK
        # initializeRacks turns on the test-only flag: rack-aware code runs even when all racks have all partitions.
        self.assignor = RangeAssignor(prefer_rack_aware_logic=True)

    def partitions(self, topic: str, n: int):
        return partition_infos(topic, n, self.replication_factor, self.num_broker_racks, 0)

    def two_topics(self, n1: int, n2: int):
        return {"topic1": self.partitions("topic1", n1), "topic2": self.partitions("topic2", n2)}

    def subscription(self, topics, consumer_index: int, instance: str | None = None) -> Subscription:
        num_racks = self.num_broker_racks if self.num_broker_racks > 0 else len(ALL_RACKS)
        rack = ALL_RACKS[consumer_index % num_racks] if self.has_consumer_rack else None
        return Subscription(tuple(topics), None, (), -1, rack, instance)


ALL_CONFIGS = list(RackConfig)


def as_sets(assignment):
    return {m: set(parts) for m, parts in assignment.items()}


# --- AbstractPartitionAssignorTest ---------------------------------------------------------------


def test_member_info_sorting_without_group_instance_id():  # testMemberInfoSortingWithoutGroupInstanceId
    ms = [MemberInfo("a"), MemberInfo("b"), MemberInfo("c")]
    assert [m.member_id for m in sorted_members(ms)] == ["a", "b", "c"]


def test_member_info_sorting_with_all_group_instance_id():  # testMemberInfoSortingWithAllGroupInstanceId
    ms = [MemberInfo("a", "y"), MemberInfo("b", "z"), MemberInfo("c", "x")]
    assert [m.member_id for m in sorted_members(ms)] == ["c", "a", "b"]


def test_member_info_sorting_some_group_instance_id():  # testMemberInfoSortingSomeGroupInstanceId
    ms = [MemberInfo("a"), MemberInfo("b", "y"), MemberInfo("c", "x")]
    assert [m.member_id for m in sorted_members(ms)] == ["c", "b", "a"]


def test_member_info_sorting_is_java_string_order():
    # String.compareTo compares UTF-16 code units: U+FF21 (one unit 0xFF21) sorts after U+1F600
    # (surrogates 0xD83D 0xDE00), although Python's code-point order puts it first.
    ms = [MemberInfo("\U0001F600"), MemberInfo("\uFF21")]
    assert [m.member_id for m in sorted_members(ms)] == ["\U0001F600", "\uFF21"]


def test_use_rack_aware_assignment():  # testUseRackAwareAssignment
    assignor = RangeAssignor()
    all_racks, two_racks = {"a", "b", "c"}, {"a", "b"}
    on_all = {tp("topic", i): all_racks for i in range(10)}
    on_subset = {tp("topic", i): {"abc"[i % 3]} for i in range(10)}
    use = assignor.use_rack_aware_assignment
    assert not use(set(), set(), on_all)
    assert not use(set(), all_racks, on_all)
    assert not use(all_racks, set(), {})
    assert not use({"d"}, all_racks, on_all)
    assert not use(all_racks, all_racks, on_all)
    assert not use(two_racks, all_racks, on_all)
    assert not use({"a", "d"}, all_racks, on_all)
    assert use(all_racks, all_racks, on_subset)
    assert use(two_racks, all_racks, on_subset)
    assert use({"a", "d"}, all_racks, on_subset)

    assignor.prefer_rack_aware_logic = True
    assert not use(set(), set(), on_all)
    assert not use(set(), all_racks, on_all)
    assert not use(all_racks, set(), {})
    assert not use({"d"}, all_racks, on_all)
    assert use(all_racks, all_racks, on_all)
    assert use(two_racks, all_racks, on_all)
    assert use(all_racks, all_racks, on_subset)
    assert use(two_racks, all_racks, on_subset)


# --- RangeAssignorTest: the parametrised basics ------------------------------------------------


@pytest.mark.parametrize("has_rack", [True, False])
def test_range_one_consumer_no_topic(has_rack):  # testOneConsumerNoTopic
    f = RangeFixture(RackConfig.BROKER_AND_CONSUMER_RACK if has_rack else RackConfig.NO_CONSUMER_RACK)
    assert f.assignor.assign_partitions({}, {"consumer1": f.subscription([], 0)}) == {"consumer1": []}


@pytest.mark.parametrize("has_rack", [True, False])
def test_range_one_consumer_nonexistent_topic(has_rack):  # testOneConsumerNonexistentTopic
    f = RangeFixture(RackConfig.BROKER_AND_CONSUMER_RACK if has_rack else RackConfig.NO_CONSUMER_RACK)
    assert f.assignor.assign_partitions({}, {"consumer1": f.subscription(["topic1"], 0)}) == {"consumer1": []}


@pytest.mark.parametrize("config", ALL_CONFIGS)
def test_range_one_consumer_one_topic(config):  # testOneConsumerOneTopic
    f = RangeFixture(config)
    ppt = {"topic1": f.partitions("topic1", 3)}
    out = f.assignor.assign_partitions(ppt, {"consumer1": f.subscription(["topic1"], 0)})
    assert as_sets(out) == {"consumer1": {tp("topic1", 0), tp("topic1", 1), tp("topic1", 2)}}


@pytest.mark.parametrize("config", ALL_CONFIGS)
def test_range_only_assigns_partitions_from_subscribed_topics(config):  # testOnlyAssignsPartitionsFromSubscribedTopics
    f = RangeFixture(config)
    ppt = {"topic1": f.partitions("topic1", 3), "other": f.partitions("other", 3)}
    out = f.assignor.assign_partitions(ppt, {"consumer1": f.subscription(["topic1"], 0)})
    assert as_sets(out) == {"consumer1": {tp("topic1", 0), tp("topic1", 1), tp("topic1", 2)}}


@pytest.mark.parametrize("config", ALL_CONFIGS)
def test_range_one_consumer_multiple_topics(config):  # testOneConsumerMultipleTopics
    f = RangeFixture(config)
    out = f.assignor.assign_partitions(f.two_topics(1, 2), {"consumer1": f.subscription(["topic1", "topic2"], 0)})
    assert as_sets(out) == {"consumer1": {tp("topic1", 0), tp("topic2", 0), tp("topic2", 1)}}


@pytest.mark.parametrize("config", ALL_CONFIGS)
def test_range_two_consumers_one_topic_one_partition(config):  # testTwoConsumersOneTopicOnePartition
    f = RangeFixture(config)
    subs = {"consumer1": f.subscription(["topic1"], 0), "consumer2": f.subscription(["topic1"], 1)}
    out = f.assignor.assign_partitions({"topic1": f.partitions("topic1", 1)}, subs)
    assert as_sets(out) == {"consumer1": {tp("topic1", 0)}, "consumer2": set()}


@pytest.mark.parametrize("config", ALL_CONFIGS)
def test_range_two_consumers_one_topic_two_partitions(config):  # testTwoConsumersOneTopicTwoPartitions
    f = RangeFixture(config)
    subs = {"consumer1": f.subscription(["topic1"], 0), "consumer2": f.subscription(["topic1"], 1)}
    out = f.assignor.assign_partitions({"topic1": f.partitions("topic1", 2)}, subs)
    assert as_sets(out) == {"consumer1": {tp("topic1", 0)}, "consumer2": {tp("topic1", 1)}}


@pytest.mark.parametrize("config", ALL_CONFIGS)
def test_range_multiple_consumers_mixed_topics(config):  # testMultipleConsumersMixedTopics
    f = RangeFixture(config)
    subs = {
        "consumer1": f.subscription(["topic1"], 0),
        "consumer2": f.subscription(["topic1", "topic2"], 1),
        "consumer3": f.subscription(["topic1"], 2),
    }
    out = f.assignor.assign_partitions(f.two_topics(3, 2), subs)
    assert as_sets(out) == {
        "consumer1": {tp("topic1", 0)},
        "consumer2": {tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)},
        "consumer3": {tp("topic1", 2)},
    }


@pytest.mark.parametrize("config", ALL_CONFIGS)
def test_range_two_consumers_two_topics_six_partitions(config):  # testTwoConsumersTwoTopicsSixPartitions
    f = RangeFixture(config)
    subs = {"consumer1": f.subscription(["topic1", "topic2"], 0), "consumer2": f.subscription(["topic1", "topic2"], 1)}
    out = f.assignor.assign_partitions(f.two_topics(3, 3), subs)
    assert as_sets(out) == {
        "consumer1": {tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)},
        "consumer2": {tp("topic1", 2), tp("topic2", 2)},
    }


@pytest.mark.parametrize("config", ALL_CONFIGS)
def test_range_two_static_consumers_two_topics_six_partitions(config):  # testTwoStaticConsumersTwoTopicsSixPartitions
    # consumer-a sorts before consumer-b, but instance ids decide: instance1 (consumer-b) comes first.
    f = RangeFixture(config)
    subs = {
        "consumer-b": f.subscription(["topic1", "topic2"], 0, "instance1"),
        "consumer-a": f.subscription(["topic1", "topic2"], 1, "instance2"),
    }
    out = f.assignor.assign_partitions(f.two_topics(3, 3), subs)
    assert as_sets(out) == {
        "consumer-b": {tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)},
        "consumer-a": {tp("topic1", 2), tp("topic2", 2)},
    }


@pytest.mark.parametrize("config", ALL_CONFIGS)
def test_range_one_static_one_dynamic_consumer(config):
    # testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions
    f = RangeFixture(config)
    subs = {
        "consumer-b": f.subscription(["topic1", "topic2"], 0, "instance1"),
        "consumer-a": f.subscription(["topic1", "topic2"], 1),
    }
    out = f.assignor.assign_partitions(f.two_topics(3, 3), subs)
    assert as_sets(out) == {
        "consumer-b": {tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)},
        "consumer-a": {tp("topic1", 2), tp("topic2", 2)},
    }


@pytest.mark.parametrize("config", ALL_CONFIGS)
def test_range_static_member_assignment_persistent(config):  # testStaticMemberRangeAssignmentPersistent
    f = RangeFixture(config, 5)
    ppt = f.two_topics(5, 4)
    subs = {f"consumer{i}": f.subscription(["topic1", "topic2"], i - 1, f"instance{i}") for i in (1, 2, 3)}
    subs["consumer4"] = f.subscription(["topic1", "topic2"], 3)
    expected = {
        "consumer1": [tp("topic1", 0), tp("topic1", 1), tp("topic2", 0)],
        "consumer2": [tp("topic1", 2), tp("topic2", 1)],
        "consumer3": [tp("topic1", 3), tp("topic2", 2)],
        "consumer4": [tp("topic1", 4), tp("topic2", 3)],
    }
    assert f.assignor.assign_partitions(ppt, subs) == expected  # Kafka compares the lists, in order

    # The dynamic member is replaced by consumer5: the static members keep their ranges.
    del subs["consumer4"]
    subs["consumer5"] = f.subscription(["topic1", "topic2"], 4)
    expected["consumer5"] = expected.pop("consumer4")
    assert f.assignor.assign_partitions(ppt, subs) == expected


def _by_instance(assignment, subs):
    return {s.group_instance_id: set(assignment[m]) for m, s in subs.items() if s.group_instance_id}


@pytest.mark.parametrize("config", ALL_CONFIGS)
def test_range_static_member_assignment_persistent_after_member_id_changes(config):
    # testStaticMemberRangeAssignmentPersistentAfterMemberIdChanges
    f = RangeFixture(config)
    ppt = f.two_topics(5, 5)
    subs = {f"consumer{i}": f.subscription(["topic1", "topic2"], i - 1, f"instance{i}") for i in (1, 2, 3)}
    expected = {
        "instance1": {tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)},
        "instance2": {tp("topic1", 2), tp("topic1", 3), tp("topic2", 2), tp("topic2", 3)},
        "instance3": {tp("topic1", 4), tp("topic2", 4)},
    }
    assert _by_instance(f.assignor.assign_partitions(ppt, subs), subs) == expected
    subs["consumer4"] = subs.pop("consumer3")
    subs["consumer5"] = subs.pop("consumer2")
    assert _by_instance(f.assignor.assign_partitions(ppt, subs), subs) == expected


def test_range_rack_aware_static_member_assignment_persistent_after_member_id_changes():
    # testRackAwareStaticMemberRangeAssignmentPersistentAfterMemberIdChanges: 6 brokers on racks
    # a, b, c, a, b, c; partition i on brokers i and i+1; consumers on racks a, b, c.
    f = RangeFixture(RackConfig.BROKER_AND_CONSUMER_RACK)
    ppt = {t: partition_infos(t, 5, 2, 3, 0) for t in ("topic1", "topic2")}
    subs = {f"consumer{i}": f.subscription(["topic1", "topic2"], i - 1, f"instance{i}") for i in (1, 2, 3)}
    expected = {
        "instance1": {tp("topic1", 0), tp("topic1", 2), tp("topic2", 0), tp("topic2", 2)},
        "instance2": {tp("topic1", 1), tp("topic1", 3), tp("topic2", 1), tp("topic2", 3)},
        "instance3": {tp("topic1", 4), tp("topic2", 4)},
    }
    assert _by_instance(f.assignor.assign_partitions(ppt, subs), subs) == expected
    subs["consumer4"] = subs.pop("consumer3")
    subs["consumer5"] = subs.pop("consumer2")
    assert _by_instance(f.assignor.assign_partitions(ppt, subs), subs) == expected


# --- RangeAssignorTest: rack-aware vectors (KIP-881) -------------------------------------------


def verify_non_rack_aware(topics, consumer_topics, expected):
    """`verifyNonRackAwareAssignment`: the configurations in which rack awareness cannot apply."""
    assignor = RangeAssignor()
    verify_rack_assignment(assignor, topics, 3, null_racks(3), racks(3), consumer_topics, expected, -1)
    verify_rack_assignment(assignor, topics, 3, racks(3), null_racks(3), consumer_topics, expected, -1)
    verify_rack_assignment(assignor, topics, 3, racks(3), racks(3), consumer_topics, expected, 0)
    verify_rack_assignment(assignor, topics, 4, racks(4), racks(3), consumer_topics, expected, 0)
    verify_rack_assignment(assignor, topics, 3, racks(3), ["d", "e", "f"], consumer_topics, expected, -1)
    verify_rack_assignment(assignor, topics, 3, racks(3), [None, "e", "f"], consumer_topics, expected, -1)
    assignor.prefer_rack_aware_logic = True
    verify_rack_assignment(assignor, topics, 3, racks(3), racks(3), consumer_topics, expected, 0)


def test_range_rack_aware_uniform_subscription():  # testRackAwareAssignmentWithUniformSubscription
    topics = {"t1": 6, "t2": 7, "t3": 2}
    consumer_topics = [["t1", "t2", "t3"]] * 3
    verify_non_rack_aware(topics, consumer_topics, [
        "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"])
    a = RangeAssignor()
    verify_rack_assignment(a, topics, 1, racks(3), racks(3), consumer_topics, [
        "t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"], 0)
    verify_rack_assignment(a, topics, 2, racks(3), racks(3), consumer_topics, [
        "t1-0, t1-2, t2-0, t2-2, t2-3, t3-1", "t1-1, t1-3, t2-1, t2-4, t3-0", "t1-4, t1-5, t2-5, t2-6"], 1)
    verify_rack_assignment(a, topics, 3, racks(2), racks(3), consumer_topics, [
        "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"], 4)


def test_range_rack_aware_non_equal_subscription():  # testRackAwareAssignmentWithNonEqualSubscription
    topics = {"t1": 6, "t2": 7, "t3": 2}
    all_topics = ["t1", "t2", "t3"]
    consumer_topics = [all_topics, all_topics, ["t1", "t3"]]
    verify_non_rack_aware(topics, consumer_topics, [
        "t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0", "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1", "t1-4, t1-5"])
    a = RangeAssignor()
    verify_rack_assignment(a, topics, 1, racks(3), racks(3), consumer_topics, [
        "t1-0, t1-3, t2-0, t2-2, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0", "t1-2, t1-5, t3-1"], 2)
    verify_rack_assignment(a, topics, 2, racks(3), racks(3), consumer_topics, [
        "t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1", "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0", "t1-4, t1-5"], 0)
    verify_rack_assignment(a, topics, 3, racks(2), racks(3), consumer_topics, [
        "t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0", "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1", "t1-4, t1-5"], 2)


def test_range_rack_aware_uniform_partitions():  # testRackAwareAssignmentWithUniformPartitions
    topics = {"t1": 5, "t2": 5, "t3": 5}
    consumer_topics = [["t1", "t2", "t3"]] * 3
    plain = ["t1-0, t1-1, t2-0, t2-1, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t2-4, t3-4"]
    verify_non_rack_aware(topics, consumer_topics, plain)
    # Co-partitioning wins over rack alignment.
    a = RangeAssignor()
    verify_rack_assignment(a, topics, 1, racks(3), racks(3), consumer_topics, plain, 10)
    verify_rack_assignment(a, topics, 2, racks(3), racks(3), consumer_topics, plain, 5)
    verify_rack_assignment(a, topics, 3, racks(2), racks(3), consumer_topics, plain, 3)


def test_range_rack_aware_uniform_partitions_non_equal_subscription():
    # testRackAwareAssignmentWithUniformPartitionsNonEqualSubscription
    topics = {"t1": 5, "t2": 5, "t3": 5}
    all_topics = ["t1", "t2", "t3"]
    consumer_topics = [all_topics, all_topics, ["t1", "t3"]]
    verify_non_rack_aware(topics, consumer_topics, [
        "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1", "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3", "t1-4, t3-4"])
    a = RangeAssignor()
    verify_rack_assignment(a, topics, 1, racks(3), racks(3), consumer_topics, [
        "t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t3-4"], 9)
    verify_rack_assignment(a, topics, 2, racks(3), racks(3), consumer_topics, [
        "t1-2, t2-0, t2-1, t2-3, t3-2", "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3", "t1-1, t1-4, t3-1, t3-4"], 0)
    verify_rack_assignment(a, topics, 3, racks(2), racks(3), consumer_topics, [
        "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1", "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3", "t1-4, t3-4"], 2)


def test_range_rack_aware_co_partitioning():  # testRackAwareAssignmentWithCoPartitioning
    a = RangeAssignor()
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    consumer_racks = ["a", "b", "b", "a"]
    consumer_topics = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
    plain = ["t1-0, t1-1, t1-2, t2-0, t2-1, t2-2", "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5", "t3-0, t4-0", "t3-1, t4-1"]
    verify_rack_assignment(a, topics, 3, racks(2), consumer_racks, consumer_topics, plain, -1)
    verify_rack_assignment(a, topics, 2, racks(2), consumer_racks, consumer_topics, plain, 0)
    verify_rack_assignment(a, topics, 1, racks(2), consumer_racks, consumer_topics, [
        "t1-0, t1-2, t1-4, t2-0, t2-2, t2-4", "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5", "t3-1, t4-1", "t3-0, t4-0"], 0)

    consumer_topics = [["t1", "t2", "t3", "t4"]] * 4
    plain = ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0", "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1", "t1-4, t2-4", "t1-5, t2-5"]
    verify_rack_assignment(a, topics, 3, racks(2), consumer_racks, consumer_topics, plain, -1)
    verify_rack_assignment(a, topics, 2, racks(2), consumer_racks, consumer_topics, plain, 0)
    verify_rack_assignment(a, topics, 1, racks(2), consumer_racks, consumer_topics, [
        "t1-0, t1-2, t2-0, t2-2, t3-0, t4-0", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1", "t1-5, t2-5", "t1-4, t2-4"], 0)
    verify_rack_assignment(a, topics, 1, racks(3), consumer_racks, consumer_topics, [
        "t1-0, t1-3, t2-0, t2-3, t3-0, t4-0", "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1", "t1-2, t2-2", "t1-5, t2-5"], 6)


def test_range_co_partitioned_same_subscription():  # testCoPartitionedAssignmentWithSameSubscription
    a = RangeAssignor()
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    topic_list = ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"]  # t7..t9 have no metadata
    consumer_topics = [topic_list] * 3
    consumer_racks = ["a", "b", "c"]
    plain = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1",
        "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2",
        "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3",
    ]
    verify_rack_assignment(a, topics, 3, null_racks(3), consumer_racks, consumer_topics, plain, -1)
    a.prefer_rack_aware_logic = True
    verify_rack_assignment(a, topics, 3, racks(3), consumer_racks, consumer_topics, plain, 0)
    verify_rack_assignment(a, topics, 2, racks(3), consumer_racks, consumer_topics, [
        "t1-0, t1-2, t2-0, t2-2, t3-0, t4-0, t5-1, t6-1",
        "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1, t5-2, t6-2",
        "t1-4, t1-5, t2-4, t2-5, t5-0, t5-3, t6-0, t6-3",
    ], 0)


# --- Range: list order (HashMap order of partitionsPerTopic) -----------------------------------


def test_range_list_order_follows_topic_hash_map_order():
    # Derived by hand. "a".hashCode() = 97 and "b".hashCode() = 98; HashMap.hash leaves them
    # unchanged (h >>> 16 = 0), so with 16 buckets "a" sits in bucket 1 and "b" in bucket 2:
    # the HashMap iterates a, b although the caller put b first. Without rack awareness each
    # list is built topic by topic in that order; with it, lists are sorted by (topic, partition).
    ppt = {"b": partition_infos("b", 2, 1, 0), "a": partition_infos("a", 2, 1, 0)}
    subs = {"c1": Subscription(("b", "a"))}
    assert RangeAssignor().assign_partitions(ppt, subs) == {"c1": [tp("a", 0), tp("a", 1), tp("b", 0), tp("b", 1)]}
    # "z".hashCode() = 122 -> bucket 10, "B" = 66 -> bucket 2, "q" = 113 -> bucket 1: order q, B, z.
    ppt = {t: partition_infos(t, 1, 1, 0) for t in ("z", "B", "q")}
    subs = {"c1": Subscription(("z", "B", "q"))}
    assert RangeAssignor().assign_partitions(ppt, subs) == {"c1": [tp("q", 0), tp("B", 0), tp("z", 0)]}


def test_range_rack_aware_lists_are_sorted():
    # Derived by hand: one consumer on rack "a", brokers 0 (rack a) and 1 (rack b), rf 1, so
    # partition i of each topic lives on broker i % 2 and not every partition is on every rack:
    # the rack-aware path runs and the final list is sorted by (topic, partition).
    ppt = {t: partition_infos_on(t, 2, 1, ["a", "b"], 0) for t in ("z", "B", "q")}
    subs = {"c1": Subscription(("z", "B", "q"), rack_id="a")}
    out = RangeAssignor().assign_partitions(ppt, subs)
    assert out == {"c1": [tp("B", 0), tp("B", 1), tp("q", 0), tp("q", 1), tp("z", 0), tp("z", 1)]}


def test_build_partitions_per_topic_drops_unknown_and_empty_topics_and_sorts():
    p = {t: partition_infos(t, 3, 1, 0) for t in ("x", "y")}
    metadata = {"x": list(reversed(p["x"])), "y": p["y"], "e": []}
    subs = {"c1": Subscription(("y", "x", "e", "missing"))}
    out = build_partitions_per_topic(metadata, subs)
    # "x" = 120 -> bucket 8, "y" = 121 -> bucket 9: the HashSet of topics iterates x, y.
    assert list(out) == ["x", "y"]
    assert [pi.partition for pi in out["x"]] == [0, 1, 2]
    assert RangeAssignor().assign(metadata, subs) == {"c1": [tp("x", 0), tp("x", 1), tp("x", 2),
                                                             tp("y", 0), tp("y", 1), tp("y", 2)]}


# --- RoundRobinAssignorTest --------------------------------------------------------------------


def counts(**topics):
    """partitionsPerTopic as RoundRobin sees it: only the partition count matters."""
    return {t: partition_infos(t, n, 1, 0) for t, n in topics.items()}


def sub(*topics, instance=None):
    return Subscription(tuple(topics), group_instance_id=instance)


def test_round_robin_one_consumer_no_topic():  # testOneConsumerNoTopic
    assert RoundRobinAssignor().assign_partitions({}, {"consumer": sub()}) == {"consumer": []}


def test_round_robin_one_consumer_nonexistent_topic():  # testOneConsumerNonexistentTopic
    assert RoundRobinAssignor().assign_partitions({}, {"consumer": sub("topic")}) == {"consumer": []}


def test_round_robin_one_consumer_one_topic():  # testOneConsumerOneTopic
    out = RoundRobinAssignor().assign_partitions(counts(topic=3), {"consumer": sub("topic")})
    assert out == {"consumer": [tp("topic", 0), tp("topic", 1), tp("topic", 2)]}


def test_round_robin_only_subscribed_topics():  # testOnlyAssignsPartitionsFromSubscribedTopics
    out = RoundRobinAssignor().assign_partitions(counts(topic=3, other=3), {"consumer": sub("topic")})
    assert out == {"consumer": [tp("topic", 0), tp("topic", 1), tp("topic", 2)]}


def test_round_robin_one_consumer_multiple_topics():  # testOneConsumerMultipleTopics
    out = RoundRobinAssignor().assign_partitions(counts(topic1=1, topic2=2), {"consumer": sub("topic1", "topic2")})
    assert out == {"consumer": [tp("topic1", 0), tp("topic2", 0), tp("topic2", 1)]}


def test_round_robin_two_consumers_one_topic_one_partition():  # testTwoConsumersOneTopicOnePartition
    subs = {"consumer1": sub("topic"), "consumer2": sub("topic")}
    out = RoundRobinAssignor().assign_partitions(counts(topic=1), subs)
    assert out == {"consumer1": [tp("topic", 0)], "consumer2": []}


def test_round_robin_two_consumers_one_topic_two_partitions():  # testTwoConsumersOneTopicTwoPartitions
    subs = {"consumer1": sub("topic"), "consumer2": sub("topic")}
    out = RoundRobinAssignor().assign_partitions(counts(topic=2), subs)
    assert out == {"consumer1": [tp("topic", 0)], "consumer2": [tp("topic", 1)]}


def test_round_robin_multiple_consumers_mixed_topics():  # testMultipleConsumersMixedTopics
    subs = {"consumer1": sub("topic1"), "consumer2": sub("topic1", "topic2"), "consumer3": sub("topic1")}
    out = RoundRobinAssignor().assign_partitions(counts(topic1=3, topic2=2), subs)
    assert out == {
        "consumer1": [tp("topic1", 0)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "consumer3": [tp("topic1", 2)],
    }


def test_round_robin_two_dynamic_consumers_two_topics_six_partitions():  # testTwoDynamicConsumersTwoTopicsSixPartitions
    subs = {"consumer1": sub("topic1", "topic2"), "consumer2": sub("topic1", "topic2")}
    out = RoundRobinAssignor().assign_partitions(counts(topic1=3, topic2=3), subs)
    # The pointer carries over from topic1 to topic2: topic2-0 goes to consumer2.
    assert out == {
        "consumer1": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


def test_round_robin_two_static_consumers():  # testTwoStaticConsumersTwoTopicsSixPartitions
    subs = {
        "consumer-b": sub("topic1", "topic2", instance="instance1"),
        "consumer-a": sub("topic1", "topic2", instance="instance2"),
    }
    out = RoundRobinAssignor().assign_partitions(counts(topic1=3, topic2=3), subs)
    assert out == {
        "consumer-b": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer-a": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


def test_round_robin_one_static_one_dynamic():  # testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions
    subs = {"consumer-b": sub("topic1", "topic2", instance="instance1"), "consumer-a": sub("topic1", "topic2")}
    out = RoundRobinAssignor().assign_partitions(counts(topic1=3, topic2=3), subs)
    assert out == {
        "consumer-b": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer-a": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


def test_round_robin_static_member_assignment_persistent():  # testStaticMemberAssignmentPersistent
    subs = {f"consumer{i}": sub("topic1", "topic2", instance=f"instance{i}") for i in (1, 2, 3)}
    subs["consumer4"] = sub("topic1", "topic2")
    expected = {
        "consumer1": [tp("topic1", 0), tp("topic2", 1)],
        "consumer2": [tp("topic1", 1), tp("topic2", 2)],
        "consumer3": [tp("topic1", 2)],
        "consumer4": [tp("topic2", 0)],
    }
    ppt = counts(topic1=3, topic2=3)
    assert RoundRobinAssignor().assign_partitions(ppt, subs) == expected
    del subs["consumer4"]
    subs["consumer5"] = sub("topic1", "topic2")
    expected["consumer5"] = expected.pop("consumer4")
    assert RoundRobinAssignor().assign_partitions(ppt, subs) == expected


def test_round_robin_static_member_assignment_persistent_after_member_id_changes():
    # testStaticMemberAssignmentPersistentAfterMemberIdChanges: instance i gets topic1-i and topic2-i.
    def by_instance(member_to_instance):
        subs = {m: sub("topic1", "topic2", instance=i) for m, i in member_to_instance.items()}
        out = RoundRobinAssignor().assign_partitions(counts(topic1=3, topic2=3), subs)
        return {i: out[m] for m, i in member_to_instance.items()}

    expected = {f"instance{i + 1}": [tp("topic1", i), tp("topic2", i)] for i in range(3)}
    assert by_instance({"consumer1": "instance1", "consumer2": "instance2", "consumer3": "instance3"}) == expected
    assert by_instance({"consumer4": "instance1", "consumer5": "instance2", "consumer1": "instance3"}) == expected


def test_round_robin_needs_a_member():
    with pytest.raises(ValueError, match="CircularIterator"):
        RoundRobinAssignor().assign_partitions({}, {})


# --- properties ---------------------------------------------------------------------------------

TOPICS = ("t0", "t1", "t2", "t3")


@st.composite
def groups(draw, equal_subscriptions: bool = False):
    """Topics with 0..7 partitions (some without metadata), 1..6 members, optional racks and instance ids."""
    num_racks = draw(st.integers(0, 3))
    broker_racks = [ALL_RACKS[i % num_racks] if num_racks else None for i in range(draw(st.integers(1, 4)))]
    rf = draw(st.integers(1, len(broker_racks)))
    ppt = {}
    for t in TOPICS:
        if draw(st.booleans()) or t == "t0":
            ppt[t] = partition_infos_on(t, draw(st.integers(0, 7)), rf, broker_racks, draw(st.integers(0, 3)))
    members = draw(st.lists(st.sampled_from([f"m{i}" for i in range(8)]), min_size=1, max_size=6, unique=True))
    shared = draw(st.lists(st.sampled_from(TOPICS), unique=True))
    subs = {}
    for m in members:
        topics = shared if equal_subscriptions else draw(st.lists(st.sampled_from(TOPICS), unique=True))
        rack = draw(st.sampled_from([None, "", "a", "b", "c"]))
        instance = draw(st.sampled_from([None, None, f"i-{m}"]))
        subs[m] = Subscription(tuple(topics), rack_id=rack, group_instance_id=instance)
    return ppt, subs


def check_valid(ppt, subs, out):
    assert set(out) == set(subs)
    owners = Counter(p for parts in out.values() for p in parts)
    subscribed = {t for s in subs.values() for t in s.topics}
    expected = {pi.tp for t, infos in ppt.items() if t in subscribed for pi in infos}
    assert set(owners) == expected and all(c == 1 for c in owners.values())
    for m, parts in out.items():
        assert all(p.topic in subs[m].topics for p in parts)


@given(groups(), st.booleans())
def test_range_property_valid_and_balanced_per_topic(group, prefer):
    ppt, subs = group
    out = RangeAssignor(prefer_rack_aware_logic=prefer).assign_partitions(ppt, subs)
    check_valid(ppt, subs, out)
    for t in ppt:  # range balances each topic among its own subscribers, racks or not
        sizes = [sum(p.topic == t for p in out[m]) for m, s in subs.items() if t in s.topics]
        assert not sizes or max(sizes) - min(sizes) <= 1


@given(groups())
def test_round_robin_property_valid(group):
    ppt, subs = group
    check_valid(ppt, subs, RoundRobinAssignor().assign_partitions(ppt, subs))


@given(groups(equal_subscriptions=True))
def test_round_robin_property_balanced_with_equal_subscriptions(group):
    ppt, subs = group
    out = RoundRobinAssignor().assign_partitions(ppt, subs)
    check_valid(ppt, subs, out)
    sizes = [len(parts) for parts in out.values()]
    assert max(sizes) - min(sizes) <= 1


# --- one calling convention -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "server-range"])
def test_every_assignor_has_kafkas_client_signature(name):
    """`assign(metadata, subscriptions)` is ConsumerPartitionAssignor.assign(Cluster, GroupSubscription) for
    every built-in assignor: metadata (topic -> PartitionInfos, here with an unsubscribed and an empty
    topic) and subscriptions in, member -> [TopicPartition] out, the same as `assign_partitions` on the
    topics Kafka hands over. The client assignors' count form is `assign_partition_counts`."""
    from kcheck.reference.assignors.client import build_partitions_per_topic, partition_infos_without_racks
    from kcheck.reference.assignors.registry import ASSIGNORS, ServerSideAdapter, subscribed_topic_metadata

    metadata = {"a": [PartitionInfo("a", i) for i in range(3)], "b": [PartitionInfo("b", i) for i in range(2)],
                "unsubscribed": [PartitionInfo("unsubscribed", 0)], "empty": []}
    subs = {"c1": Subscription(("a", "b", "empty")), "c2": Subscription(("a",))}
    assignor = ASSIGNORS[name].factory()
    out = assignor.assign(metadata, subs)
    ppt = subscribed_topic_metadata(metadata, subs) if isinstance(assignor, ServerSideAdapter) else \
        build_partitions_per_topic(metadata, subs)
    assert out == ASSIGNORS[name].factory().assign_partitions(ppt, subs)
    assert sorted(tp for tps in out.values() for tp in tps) == \
        [tp(t, i) for t, n in (("a", 3), ("b", 2)) for i in range(n)]
    if not isinstance(assignor, ServerSideAdapter):
        counts = {"a": 3, "b": 2}
        assert ASSIGNORS[name].factory().assign_partition_counts(counts, subs) == \
            ASSIGNORS[name].factory().assign_partitions(partition_infos_without_racks(counts), subs)
