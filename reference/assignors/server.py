"""Kafka's KIP-848 server-side assignors, run by the group coordinator for consumer groups.

Mirrors, in `group-coordinator/src/main/java/org/apache/kafka/coordinator/group/assignor/`
of Kafka 4.0.0 to 4.4.0: `UniformAssignor.java` with `UniformHomogeneousAssignmentBuilder.java`
and `UniformHeterogeneousAssignmentBuilder.java`, and `RangeAssignor.java` (not sticky). The
inputs mirror `group-coordinator-api`'s `GroupSpec` and `SubscribedTopicDescriber`. No release
of these assignors looks at racks; members and topics carry them anyway. Checked bit for bit
against the releases' jars (`tests/test_kafka_group_assignors.py`); the one difference between
releases, the homogeneous builder's +1 slots before 4.0.1, is `UniformAssignor(kafka_version=...)`.

Java's iteration orders that decide outputs, and where they come from here:
* `GroupSpec.memberIds()` is the key set of the caller's members map: the `members` dict
  is taken in that order (`tree_map_order` / `hash_map_order` give a TreeMap's or HashMap's;
  the coordinator's are HashMaps, checked against real ones by the bridge's `GH` request).
* A member's subscribed topic ids (a `Set<Uuid>`) and its current assignment
  (`Map<Uuid, Set<Integer>>`) are iterated in the order the caller gives them.
* The homogeneous builder copies the first member's topics into a `HashSet<Uuid>`; that
  set's order (`JavaHashSet`, by `Uuid.hashCode`) orders the unassigned partitions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from itertools import repeat

from kcheck.reference.assignors.uuid import Uuid
from kcheck.reference.errors import IllegalArgumentException, KafkaError
from kcheck.reference.java import JavaHashMap, JavaHashSet, string_compare_key

GroupAssignment = dict[str, dict[Uuid, frozenset[int]]]
"""member id -> topic id -> partitions: `GroupAssignment.members()` with each `MemberAssignment.partitions()`."""


class PartitionAssignorException(KafkaError):
    """org.apache.kafka.coordinator.group.api.assignor.PartitionAssignorException"""

    java_class = "org.apache.kafka.coordinator.group.api.assignor.PartitionAssignorException"


class ArrayIndexOutOfBoundsException(KafkaError, IndexError):
    """java.lang.ArrayIndexOutOfBoundsException, as the JVM words it (a partition beyond a topic's count)."""

    java_class = "java.lang.ArrayIndexOutOfBoundsException"

    def __init__(self, index: int, length: int) -> None:
        super().__init__(f"Index {index} out of bounds for length {length}")


NEWEST_RELEASE = "4.4.0"
HETEROGENEOUS_BUILDER_SINCE = (4, 0, 0)
"""The heterogeneous uniform builder modelled here (KAFKA-17710); 3.x had another algorithm."""
EXTRA_SLOT_DEFERRED_SINCE = (4, 0, 1)
"""Since 4.0.1 (KAFKA-18688) the homogeneous uniform builder passes a member's +1 slot on to later members."""


def _release(kafka_version: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in kafka_version.split(".")[:3])
    except ValueError:
        raise ValueError(f"not a Kafka release: {kafka_version!r}") from None


class SubscriptionType(Enum):
    HOMOGENEOUS = "HOMOGENEOUS"
    HETEROGENEOUS = "HETEROGENEOUS"


@dataclass(frozen=True, eq=True)
class MemberSubscriptionSpec:
    """A member as `GroupSpec` shows it (`MemberSubscriptionAndAssignmentImpl`).

    `subscribed_topic_ids` is the subscription `Set<Uuid>` in its iteration order; `assignment`
    is the member's current target assignment, topics and partitions in iteration order
    (e.g. `HashMap`/`HashSet` order for Kafka's `mkAssignment`, see `hash_map_order`).
    """

    subscribed_topic_ids: tuple[Uuid, ...] = ()
    rack_id: str | None = None
    instance_id: str | None = None
    assignment: Mapping[Uuid, tuple[int, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "subscribed_topic_ids", tuple(dict.fromkeys(self.subscribed_topic_ids)))
        object.__setattr__(
            self, "assignment", {t: tuple(dict.fromkeys(ps)) for t, ps in self.assignment.items()}
        )

    __hash__ = None  # type: ignore[assignment]  # holds a dict


@dataclass(frozen=True, eq=False)
class GroupSpec:
    """`GroupSpecImpl`: the members (in `memberIds()` order), the subscription type, the inverted target assignment.

    `subscription_type` defaults to what Kafka's `ModernGroup` computes: HOMOGENEOUS when every
    subscribed topic is subscribed by every member. `inverted_assignment` (topic -> partition ->
    member, used by `isPartitionAssigned`) defaults to the members' own assignments, as Kafka's
    tests build it with `invertedTargetAssignment(members)`; pass `{}` for their `Map.of()`.
    """

    members: Mapping[str, MemberSubscriptionSpec]
    subscription_type: SubscriptionType | None = None
    inverted_assignment: Mapping[Uuid, Mapping[int, str]] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "members", dict(self.members))
        if self.subscription_type is None:
            object.__setattr__(self, "subscription_type", _subscription_type(self.members))
        if self.inverted_assignment is None:
            inverted: dict[Uuid, dict[int, str]] = {}
            for member_id, spec in self.members.items():  # a later owner wins, as with HashMap.put
                for topic_id, partitions in spec.assignment.items():
                    for p in partitions:
                        inverted.setdefault(topic_id, {})[p] = member_id
            object.__setattr__(self, "inverted_assignment", inverted)

    def member_ids(self) -> list[str]:
        return list(self.members)

    def member_subscription(self, member_id: str) -> MemberSubscriptionSpec:
        try:
            return self.members[member_id]
        except KeyError:
            raise IllegalArgumentException(f"Member Id {member_id} not found.") from None

    def member_assignment(self, member_id: str) -> Mapping[Uuid, tuple[int, ...]]:
        spec = self.members.get(member_id)
        return {} if spec is None else spec.assignment

    def is_partition_assigned(self, topic_id: Uuid, partition: int) -> bool:
        return partition in self.assigned_partitions(topic_id)

    def assigned_partitions(self, topic_id: Uuid) -> Mapping[int, str]:
        """The topic's partitions `is_partition_assigned` holds, each with its member."""
        assert self.inverted_assignment is not None
        return self.inverted_assignment.get(topic_id, {})


def _subscription_type(members: Mapping[str, MemberSubscriptionSpec]) -> SubscriptionType:
    counts: dict[Uuid, int] = {}
    for spec in members.values():
        for t in spec.subscribed_topic_ids:
            counts[t] = counts.get(t, 0) + 1
    homogeneous = all(c == len(members) for c in counts.values())
    return SubscriptionType.HOMOGENEOUS if homogeneous else SubscriptionType.HETEROGENEOUS


@dataclass(frozen=True, eq=False)
class SubscribedTopicDescriber:
    """`SubscribedTopicDescriber`: partition count per topic id (-1 when unknown) and racks per partition."""

    partitions: Mapping[Uuid, int]
    racks: Mapping[Uuid, Mapping[int, frozenset[str]]] = field(default_factory=dict)

    def num_partitions(self, topic_id: Uuid) -> int:
        return self.partitions.get(topic_id, -1)

    def racks_for_partition(self, topic_id: Uuid, partition: int) -> frozenset[str]:
        return self.racks.get(topic_id, {}).get(partition, frozenset())


def tree_map_order(members: Mapping[str, MemberSubscriptionSpec]) -> dict[str, MemberSubscriptionSpec]:
    """The members as a `TreeMap<String, ...>` iterates them (`String.compareTo`)."""
    return {m: members[m] for m in sorted(members, key=string_compare_key)}


def hash_map_order(mapping: Mapping) -> dict:
    """`mapping` re-ordered as a `new HashMap<>()` filled in `mapping`'s order iterates (member ids, topic ids)."""
    m: JavaHashMap = JavaHashMap()
    for k, v in mapping.items():
        m.put(k, v)
    return dict(m.items())


def hash_set_order(items: Iterable) -> tuple:
    """`items` in the order of a `new HashSet<>(Arrays.asList(items))` (e.g. Kafka's `mkTopicAssignment`)."""
    return tuple(JavaHashSet.copy_of(items))


def _freeze(assignment: Mapping[str, Mapping[Uuid, Iterable[int]]]) -> GroupAssignment:
    return {m: {t: frozenset(ps) for t, ps in topics.items()} for m, topics in assignment.items()}


# --- UniformAssignor ------------------------------------------------------------------------------


class UniformAssignor:
    """`UniformAssignor.java` ("uniform"): balance first, then stickiness.

    `kafka_version`: the release to mirror (default the newest). Releases before 4.0.1 hand the
    homogeneous builder's +1 slots to the first members (see `EXTRA_SLOT_DEFERRED_SINCE`); their
    heterogeneous builder (3.x) is a different algorithm, not modelled here (NotImplementedError).
    """

    def __init__(self, kafka_version: str = NEWEST_RELEASE) -> None:
        self.kafka_version = kafka_version
        self.defer_extra_slots = _release(kafka_version) >= EXTRA_SLOT_DEFERRED_SINCE

    def name(self) -> str:
        return "uniform"

    def assign(self, group_spec: GroupSpec, describer: SubscribedTopicDescriber) -> GroupAssignment:
        if not group_spec.members:
            return {}
        if group_spec.subscription_type is SubscriptionType.HOMOGENEOUS:
            return UniformHomogeneousAssignmentBuilder(group_spec, describer, self.defer_extra_slots).build()
        if _release(self.kafka_version) < HETEROGENEOUS_BUILDER_SINCE:
            raise NotImplementedError(f"Kafka {self.kafka_version}'s heterogeneous uniform builder (before 4.0) "
                                      "is not modelled")
        return UniformHeterogeneousAssignmentBuilder(group_spec, describer).build()


class UniformHomogeneousAssignmentBuilder:
    """`UniformHomogeneousAssignmentBuilder.java`: every member subscribes to the same topics."""

    def __init__(
        self, group_spec: GroupSpec, describer: SubscribedTopicDescriber, defer_extra_slots: bool = True
    ) -> None:
        self.group_spec = group_spec
        self.describer = describer
        self.defer_extra_slots = defer_extra_slots
        first = group_spec.member_ids()[0]
        # `new HashSet<>(firstMember.subscribedTopicIds())`: from here on the topics come in
        # HashSet<Uuid> order (by Uuid.hashCode), whatever order the members listed them in.
        self.subscribed_topic_ids: JavaHashSet[Uuid] = JavaHashSet.copy_of(
            group_spec.member_subscription(first).subscribed_topic_ids
        )

    def build(self) -> GroupAssignment:
        if len(self.subscribed_topic_ids) == 0:
            return {}  # no member entries at all, unlike the server RangeAssignor
        unassigned, total = self._unassigned_partitions()
        member_ids = self.group_spec.member_ids()
        min_quota, extra = divmod(total, len(member_ids))
        target: dict[str, dict[Uuid, list[int]]] = {}
        unfilled: list[tuple[str, int]] = []
        for index, member_id in enumerate(member_ids):
            # A member in memberIds() order is offered a +1 slot while some are left. Before 4.0.1 it
            # kept it whatever it owned; since, one that cannot fill it from what it already holds
            # passes it on while more members remain than slots, so it lands on a member that
            # holds min + 1 already instead of moving a partition there.
            quota = min_quota
            has_extra = extra > 0
            if has_extra:
                quota += 1
                if not self.defer_extra_slots:
                    extra -= 1
            target[member_id], quota = self._maybe_revoke_partitions(member_id, quota, unassigned)
            if self.defer_extra_slots and has_extra:
                if quota > 0 and len(member_ids) - index > extra:
                    quota -= 1  # passed on
                else:
                    extra -= 1
            if quota > 0:
                unfilled.append((member_id, quota))
        self._assign_remaining_partitions(target, unfilled, unassigned)
        return _freeze(target)

    def _unassigned_partitions(self) -> tuple[list[tuple[Uuid, int]], int]:
        """(the partitions nobody holds in the *target* assignment (isPartitionAssigned), topic by topic in HashSet
        order, each topic's partitions ascending; the subscribed topics' partition count)."""
        unassigned: list[tuple[Uuid, int]] = []
        total = 0
        for topic_id in self.subscribed_topic_ids:
            n = self.describer.num_partitions(topic_id)
            if n == -1:
                raise PartitionAssignorException(
                    f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata."
                )
            taken = self.group_spec.assigned_partitions(topic_id)  # isPartitionAssigned, one topic's look-up hoisted
            if taken:
                unassigned.extend((topic_id, p) for p in range(n) if p not in taken)
            else:
                unassigned.extend(zip(repeat(topic_id), range(n)))  # the same pairs, built in C
            total += n
        return unassigned, total

    def _maybe_revoke_partitions(self, member_id: str, quota: int, unassigned: list[tuple[Uuid, int]]
                                 ) -> tuple[dict[Uuid, list[int]], int]:
        """(what the member keeps of its assignment: its subscribed topics' partitions up to `quota`, the rest
        revoked and queued in `unassigned` after the never-assigned ones; the quota left to fill)."""
        new = {t: list(ps) for t, ps in self.group_spec.member_assignment(member_id).items()}
        for topic_id, partitions in self.group_spec.member_assignment(member_id).items():
            if topic_id not in self.subscribed_topic_ids:
                del new[topic_id]
            elif len(partitions) <= quota:
                quota -= len(partitions)
            else:
                # Keep the first `quota` partitions in the set's iteration order; the rest
                # are revoked and queued after the never-assigned ones.
                for p in partitions:
                    if quota > 0:
                        quota -= 1
                    else:
                        new[topic_id].remove(p)
                        if not new[topic_id]:
                            del new[topic_id]
                        unassigned.append((topic_id, p))
        return new, quota

    @staticmethod
    def _assign_remaining_partitions(target: dict[str, dict[Uuid, list[int]]], unfilled: list[tuple[str, int]],
                                     unassigned: list[tuple[Uuid, int]]) -> None:
        """The unassigned partitions, in order, to the members with room left, each up to its quota."""
        i = 0
        for member_id, remaining in unfilled:
            member = target[member_id]
            last: Uuid | None = None
            bucket: list[int] = []
            for topic_id, p in unassigned[i:i + remaining]:
                if topic_id is not last:  # runs of one topic: one dict look-up per run, not per partition
                    bucket = member.setdefault(topic_id, [])
                    last = topic_id
                bucket.append(p)
            i = min(i + remaining, len(unassigned))
        if i < len(unassigned):
            raise PartitionAssignorException("Partitions were left unassigned")


class _MemberAssignmentBalancer:
    """`UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer`.

    Two ranges over the members sorted by (size, index): the least loaded one grows rightwards
    and the most loaded one leftwards, each a "level" (partition count) at a time. `sizes` is the
    builder's live array, so assignments made between calls are seen, as in Java.
    """

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.sorted_members: list[int] = []
        self.least_end = 0  # [0, least_end) is the least loaded range
        self.least_level = -1
        self.next_least = 0
        self.most_start = 0  # [most_start, most_end) is the most loaded range
        self.most_end = 0
        self.most_level = 1
        self.next_most = -1

    def initialize(self, members: list[int]) -> int:
        if not members:
            raise IllegalArgumentException("Cannot balance an empty subscriber list.")
        self.sorted_members = sorted(members, key=lambda m: (self.sizes[m], m))
        first, last = self.sorted_members[0], self.sorted_members[-1]
        self.least_end = 0
        self.least_level = self.sizes[first] - 1
        self.next_least = 0
        self.most_start = self.most_end = len(self.sorted_members)
        self.most_level = self.sizes[last] + 1
        self.next_most = len(self.sorted_members) - 1
        return self.sizes[last] - self.sizes[first]

    def next_least_loaded_member(self) -> int:
        if self.next_least >= self.least_end:
            # The range is used up: raise its level, take in the members now at that level, restart.
            self.least_level += 1
            while (
                self.least_end < len(self.sorted_members)
                and self.sizes[self.sorted_members[self.least_end]] == self.least_level
            ):
                self.least_end += 1
            self.next_least = 0
        member = self.sorted_members[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded_member(self) -> int:
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # Emptied by exclusions: reset the level so that the range surely grows below.
                self.most_level = self.sizes[self.sorted_members[self.most_start - 1]]
            else:
                self.most_level -= 1
            while self.most_start > 0 and self.sizes[self.sorted_members[self.most_start - 1]] == self.most_level:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = self.sorted_members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded_member(self) -> None:
        """Swap the member last returned by `next_most_loaded_member` out of the most loaded range."""
        i = self.next_most + 1
        self.sorted_members[i], self.sorted_members[self.most_end - 1] = (
            self.sorted_members[self.most_end - 1],
            self.sorted_members[i],
        )
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_level - self.least_level <= 1


class UniformHeterogeneousAssignmentBuilder:
    """`UniformHeterogeneousAssignmentBuilder.java`: members subscribe to different topics."""

    MAX_ITERATION_COUNT = 16

    def __init__(self, group_spec: GroupSpec, describer: SubscribedTopicDescriber) -> None:
        self.group_spec = group_spec
        self.describer = describer
        self.member_ids = group_spec.member_ids()  # member indices follow memberIds() order
        self.subscribed_topic_ids: set[Uuid] = set()  # only ever sorted or looked up: its order is irrelevant
        self.topic_subscribers: dict[Uuid, list[int]] = {}  # ascending member indices
        for index, member_id in enumerate(self.member_ids):
            for topic_id in group_spec.member_subscription(member_id).subscribed_topic_ids:
                if describer.num_partitions(topic_id) == -1:
                    raise PartitionAssignorException(
                        f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata."
                    )
                self.subscribed_topic_ids.add(topic_id)
                self.topic_subscribers.setdefault(topic_id, []).append(index)
        self.sizes = [0] * len(self.member_ids)
        self.target: dict[str, dict[Uuid, set[int]]] = {}
        self.owners: dict[Uuid, list[int]] = {
            t: [-1] * describer.num_partitions(t) for t in self.subscribed_topic_ids
        }

    def _topic_key(self, topic_id: Uuid) -> tuple[float, int, Uuid]:
        """Partitions per subscriber descending (a double division), subscribers ascending, then topic id.

        Uuid orders by signed msb, then signed lsb: Kafka's `Uuid.compareTo`.
        """
        subscribers = len(self.topic_subscribers[topic_id])
        return -(self.describer.num_partitions(topic_id) / subscribers), subscribers, topic_id

    def _sort_topic_ids(self, topic_ids: Iterable[Uuid]) -> list[Uuid]:
        return sorted(topic_ids, key=self._topic_key)

    def build(self) -> GroupAssignment:
        if not self.subscribed_topic_ids:
            return {}
        self._maybe_revoke_partitions()
        unassigned = {
            t: ps
            for t in self.subscribed_topic_ids
            if (ps := [p for p, owner in enumerate(self.owners[t]) if owner == -1])
        }
        self._assign_remaining_partitions(unassigned)
        self._balance()
        return _freeze(self.target)

    def _maybe_revoke_partitions(self) -> None:
        """Drop the topics a member no longer subscribes to; count and own the rest.

        Two members claiming one partition both count it; the later one (in memberIds order) owns it.
        """
        for index, member_id in enumerate(self.member_ids):
            # a set for the lookups (the spec's tuple would be scanned once per owned topic)
            subscribed = frozenset(self.group_spec.member_subscription(member_id).subscribed_topic_ids)
            new: dict[Uuid, set[int]] = {}
            for topic_id, partitions in self.group_spec.member_assignment(member_id).items():
                if topic_id in subscribed:
                    self.sizes[index] += len(partitions)
                    for p in partitions:
                        if not 0 <= p < len(self.owners[topic_id]):
                            raise ArrayIndexOutOfBoundsException(p, len(self.owners[topic_id]))
                        self.owners[topic_id][p] = index
                    new[topic_id] = set(partitions)
            self.target[member_id] = new

    def _assign_remaining_partitions(self, partitions: Mapping[Uuid, list[int]]) -> None:
        balancer = _MemberAssignmentBalancer(self.sizes)
        for topic_id in self._sort_topic_ids(partitions):
            balancer.initialize(self.topic_subscribers[topic_id])
            # _assign_partition for partitions nobody owns, with each member's set of this topic looked up once
            owners = self.owners[topic_id]
            sets: dict[int, set[int]] = {}
            for p in partitions[topic_id]:
                member = balancer.next_least_loaded_member()
                into = sets.get(member)
                if into is None:
                    into = sets[member] = self.target[self.member_ids[member]].setdefault(topic_id, set())
                into.add(p)
                owners[p] = member
                self.sizes[member] += 1

    def _balance(self) -> None:
        topic_ids = [t for t in self.subscribed_topic_ids if len(self.topic_subscribers[t]) >= 2]
        if topic_ids:
            self._balance_topics(topic_ids)

    def _balance_topics(self, topic_ids: Iterable[Uuid]) -> None:
        """Passes over the topics until a full pass moves nothing, at most MAX_ITERATION_COUNT passes."""
        sorted_topic_ids = self._sort_topic_ids(topic_ids)
        last_rebalanced = -1
        balancer = _MemberAssignmentBalancer(self.sizes)
        for _ in range(self.MAX_ITERATION_COUNT):
            for index, topic_id in enumerate(sorted_topic_ids):
                if index == last_rebalanced:
                    return  # back at the last topic that moved something, with no move since
                moved = self._balance_topic(topic_id, balancer)
                if moved > 0 or last_rebalanced == -1:
                    last_rebalanced = index

    def _balance_topic(self, topic_id: Uuid, balancer: _MemberAssignmentBalancer) -> int:
        moved = 0
        owners = self.owners[topic_id]
        if balancer.initialize(self.topic_subscribers[topic_id]) <= 1:
            return moved
        # The topic's partitions grouped by owner (owner index, then partition); each owner's slice.
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}  # exclusive
        for i, p in enumerate(partitions):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1

        while not balancer.is_balanced():
            while True:
                most = balancer.next_most_loaded_member()
                if most == -1:
                    break
                if most not in end or end[most] - start[most] <= 0:
                    balancer.exclude_most_loaded_member()  # nothing of this topic left to give up
                    continue
                break
            if most == -1:
                break
            end[most] -= 1
            partition = partitions[end[most]]  # the member's last partition in the slice
            least = balancer.next_least_loaded_member()
            if balancer.is_balanced():
                break
            self._assign_partition(topic_id, partition, least)
            moved += 1
        return moved

    def _assign_partition(self, topic_id: Uuid, partition: int, member_index: int) -> None:
        old = self.owners[topic_id][partition]
        if old != -1:
            old_assignment = self.target[self.member_ids[old]]
            partitions = old_assignment.get(topic_id)
            if partitions is not None:
                partitions.discard(partition)
                if not partitions:
                    del old_assignment[topic_id]
            self.owners[topic_id][partition] = -1
            self.sizes[old] -= 1
        self.target[self.member_ids[member_index]].setdefault(topic_id, set()).add(partition)
        self.owners[topic_id][partition] = member_index
        self.sizes[member_index] += 1


# --- RangeAssignor (server side) --------------------------------------------------------------------


@dataclass
class _TopicMetadata:
    """`RangeAssignor.TopicMetadata`: quotas computed on first use, `next_range` the next free partition."""

    topic_id: Uuid
    num_partitions: int
    num_members: int
    min_quota: int = -1
    extra_partitions: int = -1
    next_range: int = 0

    def maybe_compute_quota(self) -> None:
        if self.min_quota == -1:
            self.min_quota, self.extra_partitions = divmod(self.num_partitions, self.num_members)


class RangeAssignor:
    """Server-side `RangeAssignor.java` ("range"): contiguous ranges, co-partitioned when possible.

    At this commit it ignores the current assignment; members are ordered static first (by
    instance id), then by member id, so static members keep their ranges across restarts.
    Every member gets an entry, possibly empty.
    """

    def name(self) -> str:
        return "range"

    def assign(self, group_spec: GroupSpec, describer: SubscribedTopicDescriber) -> GroupAssignment:
        if not group_spec.members:
            return {}
        if group_spec.subscription_type is SubscriptionType.HOMOGENEOUS:
            return self._assign_homogeneous_group(group_spec, describer)
        return self._assign_heterogeneous_group(group_spec, describer)

    @staticmethod
    def _sort_member_ids(group_spec: GroupSpec) -> list[str]:
        def key(member_id: str) -> tuple[int, bytes]:
            instance_id = group_spec.member_subscription(member_id).instance_id
            if instance_id is not None:
                return 0, string_compare_key(instance_id)
            return 1, string_compare_key(member_id)

        return sorted(group_spec.member_ids(), key=key)  # List.sort is stable too

    def _assign_homogeneous_group(self, group_spec: GroupSpec, describer: SubscribedTopicDescriber) -> GroupAssignment:
        member_ids = self._sort_member_ids(group_spec)
        # The topics of the first member *after* sorting stand for everybody's.
        topics: list[_TopicMetadata] = []
        for topic_id in group_spec.member_subscription(member_ids[0]).subscribed_topic_ids:
            n = describer.num_partitions(topic_id)
            if n == -1:
                raise PartitionAssignorException("Member is subscribed to a non-existent topic")
            topics.append(_TopicMetadata(topic_id, n, len(member_ids)))
        assignments: dict[str, dict[Uuid, range]] = {}
        for member_id in member_ids:
            assignment: dict[Uuid, range] = {}
            for metadata in topics:
                metadata.maybe_compute_quota()
                self._add_partitions_to_assignment(metadata, assignment)
            assignments[member_id] = assignment
        return _freeze(assignments)

    def _assign_heterogeneous_group(
        self, group_spec: GroupSpec, describer: SubscribedTopicDescriber
    ) -> GroupAssignment:
        member_ids = self._sort_member_ids(group_spec)
        topics: dict[Uuid, _TopicMetadata] = {}
        for member_id in member_ids:
            for topic_id in group_spec.member_subscription(member_id).subscribed_topic_ids:
                metadata = topics.get(topic_id)
                if metadata is None:
                    n = describer.num_partitions(topic_id)
                    if n == -1:
                        raise PartitionAssignorException("Member is subscribed to a non-existent topic")
                    metadata = topics[topic_id] = _TopicMetadata(topic_id, n, 0)
                metadata.num_members += 1
        assignments: dict[str, dict[Uuid, range]] = {}
        for member_id in member_ids:
            assignment: dict[Uuid, range] = {}
            for topic_id in group_spec.member_subscription(member_id).subscribed_topic_ids:
                metadata = topics[topic_id]
                metadata.maybe_compute_quota()
                self._add_partitions_to_assignment(metadata, assignment)
            assignments[member_id] = assignment
        return _freeze(assignments)

    @staticmethod
    def _add_partitions_to_assignment(metadata: _TopicMetadata, assignment: dict[Uuid, range]) -> None:
        """The next `min_quota` partitions, +1 while extra partitions remain; an empty range adds no entry."""
        start = metadata.next_range
        quota = metadata.min_quota
        if metadata.extra_partitions > 0:
            quota += 1
            metadata.extra_partitions -= 1
        end = min(start + quota, metadata.num_partitions)
        metadata.next_range = end
        if start < end:
            assignment[metadata.topic_id] = range(start, end)
