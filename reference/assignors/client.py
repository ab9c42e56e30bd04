"""Kafka's client-side (classic protocol) Range and RoundRobin assignors, run by the group leader.

Mirrors, in `clients/src/main/java/org/apache/kafka/clients/consumer/`:
`internals/AbstractPartitionAssignor.java` (`MemberInfo` order, `useRackAwareAssignment`,
building `partitionsPerTopic` from metadata), `RangeAssignor.java` (with KIP-881 rack
awareness) and `RoundRobinAssignor.java`, as of apache/kafka 1eb7644349 (2024-10). Kafka's own classes
of 3.9.1, 4.0.2, 4.1.2 and 4.4.0 give the same answers, bit for bit (tests/test_kafka_client_assignors.py).

Inputs are Python dicts that stand for the Java `HashMap`s the caller built, in
insertion order. Wherever Kafka's output depends on a HashMap's iteration order,
this module derives that order with `reference.java.JavaHashMap`; every such
place says so in a comment. Strings are compared as Java does (`String.compareTo`,
UTF-16 code units), never with Python's code-point order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice

from kcheck.model import Broker, PartitionInfo, Subscription, TopicPartition
from kcheck.reference.errors import IllegalArgumentException
from kcheck.reference.java import (
    JavaHashMap,
    JavaHashSet,
    optional_hash_code,
    string_compare_key,
    string_hash_code,
    to_int32,
)

Assignment = dict[str, list[TopicPartition]]




def topic_partition_key(tp: TopicPartition) -> tuple[bytes, int]:
    """Kafka's `Utils.TopicPartitionComparator`: topic (`String.compareTo`), then partition."""
    return string_compare_key(tp.topic), tp.partition


def hash_map_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a `new HashMap<>()` into which `keys` were put in this order."""
    m: JavaHashMap[str, None] = JavaHashMap()
    for k in keys:
        m.put(k, None)
    return m.keys()


# --- AbstractPartitionAssignor --------------------------------------------------------------


@dataclass(frozen=True)
class MemberInfo:
    """`AbstractPartitionAssignor.MemberInfo`; equality and hash are by member id only, as in Kafka."""

    member_id: str
    group_instance_id: str | None = None
    rack_id: str | None = None

    def sort_key(self) -> tuple[int, bytes]:
        """`MemberInfo.compareTo`: static members first, by instance id; then the others, by member id.

        Two static members compare by instance id alone (a tie keeps list order: the sorts are stable).
        """
        if self.group_instance_id is not None:
            return 0, string_compare_key(self.group_instance_id)
        return 1, string_compare_key(self.member_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemberInfo) and other.member_id == self.member_id

    def __hash__(self) -> int:
        return hash(self.member_id)


def sorted_members(members: Iterable[MemberInfo]) -> list[MemberInfo]:
    """`Utils.sorted` / `Collections.sort` over MemberInfo: a stable sort by `MemberInfo.compareTo`."""
    return sorted(members, key=MemberInfo.sort_key)


def partition_racks(info: PartitionInfo) -> frozenset[str]:
    """The racks of *all* replicas of a partition (not only the ISR); brokers without a rack are ignored."""
    return frozenset(b.rack for b in info.replicas if b.rack is not None)


class AbstractPartitionAssignor:
    """`internals/AbstractPartitionAssignor.java`: the plumbing shared by Range and RoundRobin."""

    def __init__(self, prefer_rack_aware_logic: bool = False) -> None:
        # Kafka's package-private test flag: use rack-aware logic even when every partition is on every rack.
        self.prefer_rack_aware_logic = prefer_rack_aware_logic

    def name(self) -> str:
        raise NotImplementedError

    def assign_partitions(
        self,
        partitions_per_topic: Mapping[str, Sequence[PartitionInfo]],
        subscriptions: Mapping[str, Subscription],
    ) -> Assignment:
        """`assignPartitions`: by default Kafka reduces each topic to its partition count."""
        return self.assign_partition_counts({t: len(ps) for t, ps in partitions_per_topic.items()}, subscriptions)

    def assign_partition_counts(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> Assignment:
        """`assign(Map<String, Integer>, Map<String, Subscription>)`: abstract in Kafka."""
        raise NotImplementedError

    def assign(
        self,
        metadata: Mapping[str, Sequence[PartitionInfo]],
        subscriptions: Mapping[str, Subscription],
    ) -> Assignment:
        """`assign(Cluster, GroupSubscription)`: `metadata` maps a topic to what `Cluster.partitionsForTopic` gives."""
        return self.assign_partitions(build_partitions_per_topic(metadata, subscriptions), subscriptions)

    def use_rack_aware_assignment(
        self,
        consumer_racks: Iterable[str],
        partition_racks: Iterable[str],
        racks_per_partition: Mapping[TopicPartition, Iterable[str]],
    ) -> bool:
        """`useRackAwareAssignment`: only when consumer and replica racks meet and some partition misses a rack."""
        consumer_racks, partition_racks = set(consumer_racks), set(partition_racks)
        if not consumer_racks or consumer_racks.isdisjoint(partition_racks):
            return False
        if self.prefer_rack_aware_logic:
            return True
        return not all(set(racks) == partition_racks for racks in racks_per_partition.values())


def partition_infos_without_racks(partitions_per_topic: Mapping[str, int]) -> dict[str, list[PartitionInfo]]:
    """`AbstractPartitionAssignor.partitionInfosWithoutRacks`: partitions 0..n-1 on `Node.noNode()`, no racks.

    Kafka collects them with `Collectors.toMap` (a HashMap); the assignors only sort or look up its topics.
    """
    no_node = (Broker(-1),)
    return {t: [PartitionInfo(t, i, None, no_node) for i in range(n)] for t, n in partitions_per_topic.items()}


def build_partitions_per_topic(
    metadata: Mapping[str, Sequence[PartitionInfo]],
    subscriptions: Mapping[str, Subscription],
) -> dict[str, list[PartitionInfo]]:
    """The `partitionsPerTopic` map that `AbstractPartitionAssignor.assign` hands to `assignPartitions`.

    Kafka collects the subscribed topics into a `HashSet` (filled member by member in the
    subscriptions' HashMap order) and puts each topic with metadata into a new `HashMap`
    while iterating that set: the returned dict's insertion order is that HashSet order.
    Topics without metadata, or with no partitions, are dropped; each list is sorted by partition.
    """
    all_topics: JavaHashSet[str] = JavaHashSet()
    for member_id in hash_map_order(subscriptions):
        for topic in subscriptions[member_id].topics:
            all_topics.add(topic)
    out: dict[str, list[PartitionInfo]] = {}
    for topic in all_topics:
        partitions = metadata.get(topic)
        if partitions:
            out[topic] = sorted(partitions, key=lambda p: p.partition)  # stable, like List.sort
    return out


# --- RangeAssignor -----------------------------------------------------------------------------


class _TopicAssignmentState:
    """`RangeAssignor.TopicAssignmentState`: one topic's consumers, quotas and unassigned partitions."""

    def __init__(
        self,
        assignor: AbstractPartitionAssignor,
        topic: str,
        partition_infos: Sequence[PartitionInfo],
        members: Sequence[MemberInfo],
        consumer_racks: Mapping[str, str],
    ) -> None:
        self.topic = topic
        # A LinkedHashMap member -> rack in MemberInfo order; a duplicate keeps its first place and value.
        self.consumers: dict[str, str | None] = {}
        for m in sorted_members(members):
            self.consumers.setdefault(m.member_id, consumer_racks.get(m.member_id))
        # A LinkedHashSet in the order of the partition list.
        self.unassigned: dict[TopicPartition, None] = dict.fromkeys(p.tp for p in partition_infos)
        self.num_assigned = dict.fromkeys(self.consumers, 0)
        n, c = len(partition_infos), len(self.consumers)
        self.num_partitions_per_consumer = n // c if c else 0
        self.remaining_consumers_with_extra_partition = n % c if c else 0

        all_consumer_racks = {consumer_racks[m.member_id] for m in members if m.member_id in consumer_racks}
        all_partition_racks: set[str] = set()
        self.partition_racks: dict[TopicPartition, frozenset[str]] = {}
        if all_consumer_racks:  # partition racks are only looked at when some subscriber has a rack
            for p in partition_infos:
                racks = partition_racks(p)
                self.partition_racks[p.tp] = racks
                all_partition_racks |= racks
        self.needs_rack_aware_assignment = assignor.use_rack_aware_assignment(
            all_consumer_racks, all_partition_racks, self.partition_racks
        )

    def racks_match(self, consumer: str, tp: TopicPartition) -> bool:
        rack = self.consumers[consumer]
        replica_racks = self.partition_racks.get(tp)
        return rack is None or (replica_racks is not None and rack in replica_racks)

    def max_assignable(self, consumer: str) -> int:
        extra = 1 if self.remaining_consumers_with_extra_partition > 0 else 0
        return max(0, self.num_partitions_per_consumer + extra - self.num_assigned[consumer])

    def on_assigned(self, consumer: str, partitions: Sequence[TopicPartition]) -> None:
        self.num_assigned[consumer] += len(partitions)
        # A consumer takes one of the "extra" slots in the step that lifts it past the minimum,
        # whichever pass (rack-matched or plain) that is; max_assignable stops it at minimum + 1.
        if self.num_assigned[consumer] > self.num_partitions_per_consumer:
            self.remaining_consumers_with_extra_partition -= 1
        for tp in partitions:
            self.unassigned.pop(tp, None)


def _consumers_key_hash(key: tuple[tuple[str, str | None], ...]) -> int:
    """hashCode of the `LinkedHashMap<String, Optional<String>>` that Kafka groups topics by."""
    return to_int32(sum(string_hash_code(k) ^ optional_hash_code(v) for k, v in key))


class RangeAssignor(AbstractPartitionAssignor):
    """`clients/.../consumer/RangeAssignor.java`: contiguous ranges per topic; KIP-881 rack matching first."""

    def name(self) -> str:
        return "range"

    def assign_partition_counts(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> Assignment:
        """`RangeAssignor.assign(Map<String, Integer>, ...)`: `assignPartitions` on partitions without racks."""
        return self.assign_partitions(partition_infos_without_racks(partitions_per_topic), subscriptions)

    def assign_partitions(
        self,
        partitions_per_topic: Mapping[str, Sequence[PartitionInfo]],
        subscriptions: Mapping[str, Subscription],
    ) -> Assignment:
        # consumersPerTopic is filled while iterating the subscriptions HashMap; the lists are
        # sorted afterwards (stably), so that order only shows between equal instance ids.
        consumers_per_topic: dict[str, list[MemberInfo]] = {}
        member_order = hash_map_order(subscriptions)
        for member_id in member_order:
            sub = subscriptions[member_id]
            info = MemberInfo(member_id, sub.group_instance_id, sub.rack_id)
            for topic in sub.topics:
                consumers_per_topic.setdefault(topic, []).append(info)
        consumer_racks = {m: s.rack_id for m, s in subscriptions.items() if s.rack_id}  # "" counts as no rack

        # Topics are visited in the HashMap order of partitionsPerTopic. Without rack awareness
        # that order is visible: each member's list is built topic by topic in it.
        states = [
            _TopicAssignmentState(self, topic, partitions_per_topic[topic], consumers_per_topic.get(topic, []),
                                  consumer_racks)
            for topic in hash_map_order(partitions_per_topic)
            if partitions_per_topic[topic]
        ]
        assignment: Assignment = {m: [] for m in member_order}

        use_rack_aware = any(s.needs_rack_aware_assignment for s in states)
        if use_rack_aware:
            self._assign_with_rack_matching(states, assignment)
        for state in states:
            self._assign_ranges(state, lambda _c, _tp: True, assignment)
        if use_rack_aware:
            for partitions in assignment.values():
                partitions.sort(key=topic_partition_key)
        return assignment

    def _assign_ranges(
        self,
        state: _TopicAssignmentState,
        may_assign: Callable[[str, TopicPartition], bool],
        assignment: Assignment,
    ) -> None:
        for consumer in state.consumers:
            if not state.unassigned:
                break
            limit = state.max_assignable(consumer)
            # The first `limit` matches, without testing the rest (may_assign has no side effects).
            assignable = list(islice((tp for tp in state.unassigned if may_assign(consumer, tp)), limit))
            if assignable:
                self._assign(consumer, assignable, state, assignment)

    def _assign_with_rack_matching(self, states: Sequence[_TopicAssignmentState], assignment: Assignment) -> None:
        # Kafka groups the topics with two nested `Collectors.groupingBy` (HashMaps keyed by the
        # consumer->rack map, then by the partition-rack map's size) and visits the groups in
        # those HashMaps' order. The groups touch disjoint topics and every list is sorted at the
        # end, so the order cannot change the result; we follow Java's anyway.
        by_consumers: JavaHashMap[tuple[tuple[str, str | None], ...], list[_TopicAssignmentState]] = JavaHashMap(
            hash_fn=_consumers_key_hash
        )
        for state in states:
            key = tuple(state.consumers.items())
            group = by_consumers.get(key)
            if group is None:
                by_consumers.put(key, group := [])
            group.append(state)
        for key, group in by_consumers.items():
            by_size: JavaHashMap[int, list[_TopicAssignmentState]] = JavaHashMap()
            for state in group:
                bucket = by_size.get(len(state.partition_racks))
                if bucket is None:
                    by_size.put(len(state.partition_racks), bucket := [])
                bucket.append(state)
            for num_partitions, co_partitioned in by_size.items():
                if len(co_partitioned) > 1:
                    consumers = [member for member, _ in key]
                    self._assign_co_partitioned_with_rack_matching(consumers, num_partitions, co_partitioned,
                                                                   assignment)
                elif co_partitioned[0].needs_rack_aware_assignment:
                    state = co_partitioned[0]
                    self._assign_ranges(state, state.racks_match, assignment)

    def _assign_co_partitioned_with_rack_matching(
        self,
        consumers: Sequence[str],
        num_partitions: int,
        states: Sequence[_TopicAssignmentState],
        assignment: Assignment,
    ) -> None:
        """Partition p of every topic in the group goes to the first consumer that matches all of them."""
        remaining = list(consumers)  # a LinkedHashSet
        for p in range(num_partitions):
            match = next(
                (
                    c
                    for c in remaining
                    if all(s.racks_match(c, TopicPartition(s.topic, p)) and s.max_assignable(c) > 0 for s in states)
                ),
                None,
            )
            if match is None:
                continue
            for s in states:
                self._assign(match, [TopicPartition(s.topic, p)], s, assignment)
            if not any(s.max_assignable(match) > 0 for s in states):
                remaining.remove(match)
                if not remaining:
                    break

    @staticmethod
    def _assign(
        consumer: str,
        partitions: Sequence[TopicPartition],
        state: _TopicAssignmentState,
        assignment: Assignment,
    ) -> None:
        assignment[consumer].extend(partitions)
        state.on_assigned(consumer, partitions)


# --- RoundRobinAssignor ------------------------------------------------------------------------


class RoundRobinAssignor(AbstractPartitionAssignor):
    """`clients/.../consumer/RoundRobinAssignor.java`: every partition, in (topic, partition) order, round robin."""

    def name(self) -> str:
        return "roundrobin"

    # RoundRobin only overrides assign(Map<String, Integer>, ...): the inherited assignPartitions reduces
    # each topic to its partition count, and partitions are numbered 0..count-1.
    def assign_partition_counts(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> Assignment:
        """`RoundRobinAssignor.assign(Map<String, Integer>, Map<String, Subscription>)`."""
        member_order = hash_map_order(subscriptions)
        assignment: Assignment = {m: [] for m in member_order}
        # MemberInfos are listed in the subscriptions' HashMap order and sorted stably.
        members = sorted_members(MemberInfo(m, subscriptions[m].group_instance_id) for m in member_order)
        if not members:
            raise IllegalArgumentException("CircularIterator can only be used on non-empty lists")

        topics = sorted({t for s in subscriptions.values() for t in s.topics}, key=string_compare_key)  # a TreeSet
        all_partitions = [
            TopicPartition(topic, p)
            for topic in topics
            if partitions_per_topic.get(topic) is not None
            for p in range(partitions_per_topic[topic])
        ]
        # The circular pointer is never reset: it carries over from one topic to the next.
        i = 0
        for tp in all_partitions:
            while tp.topic not in subscriptions[members[i].member_id].topics:
                i = (i + 1) % len(members)
            assignment[members[i].member_id].append(tp)
            i = (i + 1) % len(members)
        return assignment
