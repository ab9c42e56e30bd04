"""Kafka's client-side sticky assignors, bit-exact.

Mirrors, in apache/kafka at 1eb7644349 (2024-10):
`clients/src/main/java/org/apache/kafka/clients/consumer/internals/AbstractStickyAssignor.java`
(`assignPartitions`, `allSubscriptionsEqual`, `RackInfo`, `ConstrainedAssignmentBuilder`,
`GeneralAssignmentBuilder`, `PartitionMovements`), `.../consumer/StickyAssignor.java` (user data V0/V1),
`.../consumer/CooperativeStickyAssignor.java` (cooperative adjustment) and the parts of
`.../consumer/internals/AbstractPartitionAssignor.java` they use (`useRackAwareAssignment`,
`partitionInfosWithoutRacks`). That version has KAFKA-15106 (isBalanced), KAFKA-16277 (kept partitions
sorted by partition, then topic) and KAFKA-15170 (rack-mismatched owned partitions count as revoked;
the rack-aware round robin counts the members it fills to maxQuota). Kafka's own classes of 3.9.1,
4.0.2, 4.1.2 and 4.4.0 give the same answers, exceptions and user-data bytes, bit for bit
(tests/test_kafka_client_assignors.py); exceptions carry Java's messages (the JVM's, for an NPE).

Inputs are Python dicts standing for the caller's Java HashMaps, filled in dict order; every place
where Java's iteration order decides an output goes through `reference.java`. A `JavaHashMap` may be
passed as `subscriptions` when the caller's map has another capacity or history (Kafka's
`verifyRackAssignment` builds `new HashMap<>(3)`, a 4-bucket table). Order does not matter for
`partitions_per_topic`: Kafka only sorts its topics or looks them up. Java's `String.compareTo`
compares UTF-16 code units, so every string sort uses `_jstr`.

Not modelled: Kafka reads user data from a ByteBuffer's current position and rewinds it only in the
general builder, so a Subscription object reused for a second call after a constrained one would
look empty to it. Here user data is always read from its start, as a freshly received one is.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar, NamedTuple

from kcheck.model.group import PartitionInfo, Subscription
from kcheck.model.vocabulary import TopicPartition
from kcheck.reference.assignors.client import build_partitions_per_topic, partition_infos_without_racks
from kcheck.reference.errors import KafkaError
from kcheck.reference.java import JavaHashMap, spread, string_compare_key, string_hash_code

DEFAULT_GENERATION = -1
EAGER = "EAGER"
COOPERATIVE = "COOPERATIVE"


class IllegalStateException(KafkaError):
    """`java.lang.IllegalStateException` as the constrained builder throws it (a Kafka bug if ever seen)."""


class NullPointerException(KafkaError):
    """Where Kafka's code dereferences null: a stale previous owner set aside as 'fixed' (see `_size`).

    The message is the JVM's (JDK 14+ helpful NPE text for that bytecode, checked against Kafka's jars
    through the bridge); `member` says whose assignment was missing.
    """

    def __init__(self, message: str, member: str | None = None) -> None:
        super().__init__(message)
        self.member = member


# What the JVM says when `currentAssignment.get(c).size()` finds no list (also inside the TreeSet's comparator)
NO_ASSIGNMENT_NPE = ('Cannot invoke "java.util.List.size()" because the return value of '
                      '"java.util.Map.get(Object)" is null')


class NoSuchElementException(KafkaError):
    """`java.util.NoSuchElementException` (no message) from `TreeSet.first()`/`last()` on an empty set."""


class SchemaException(KafkaError):
    """`org.apache.kafka.common.protocol.types.SchemaException` from user-data (de)serialisation."""


_jstr = lru_cache(maxsize=1 << 16)(string_compare_key)  # String.compareTo order, cached: sorting is hot


def _remove_first(items: list, item: object) -> None:
    """`List.remove(Object)`: drop the first equal element, if any."""
    try:
        items.remove(item)
    except ValueError:
        pass


def _generation_id(sub: Subscription) -> int | None:
    """`Subscription.generationId()`: Java's constructor maps a negative generation to `Optional.empty()`."""
    g = sub.generation_id
    return None if g is None or g < 0 else g


# What assign_partitions takes: any mapping, or the JavaHashMap the cooperative assignor has built already
Subscriptions = Mapping[str, Subscription] | JavaHashMap[str, Subscription]


def _as_java_map(subscriptions: Subscriptions) -> JavaHashMap[str, Subscription]:
    if isinstance(subscriptions, JavaHashMap):
        return subscriptions
    m: JavaHashMap[str, Subscription] = JavaHashMap()
    for k, v in subscriptions.items():
        m.put(k, v)
    return m


def _copied_hash_map(keys_in_order: Iterable[str], values: Mapping[str, list]) -> JavaHashMap[str, list]:
    """`new HashMap<>(m)` (Java 17): table sized for (float) n / 0.75f + 1, entries put in m's order."""
    keys = list(keys_in_order)
    n = len(keys)
    m: JavaHashMap[str, list] = JavaHashMap(int(struct.unpack("f", struct.pack("f", n / 0.75))[0] + 1.0) if n else None)
    for k in keys:
        m.put(k, values[k])
    return m


# --- user data ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemberData:
    """`AbstractStickyAssignor.MemberData`: previously owned partitions and generation (None = absent)."""

    partitions: tuple[TopicPartition, ...]
    generation: int | None
    rack_id: str | None = None


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class _Reader:
    """A ByteBuffer read front to back; running short raises as `BufferUnderflowException` would."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int) -> bytes:
        pos = self.pos
        if n > len(self.data) - pos:
            raise SchemaException("buffer underflow")
        self.pos = pos + n
        return self.data[pos : pos + n]

    def _number(self, fmt: struct.Struct) -> int:
        pos = self.pos
        if len(self.data) - pos < fmt.size:
            raise SchemaException("buffer underflow")
        self.pos = pos + fmt.size
        return fmt.unpack_from(self.data, pos)[0]

    def int16(self) -> int:
        return self._number(_INT16)

    def int32(self) -> int:
        return self._number(_INT32)

    def array_size(self) -> int:
        """`ArrayOf.read` (not nullable): negative sizes and sizes beyond the buffer are refused up front."""
        size = self.int32()
        if size < 0:
            raise SchemaException(f"Array size {size} cannot be negative")
        if size > self.remaining():
            raise SchemaException(f"Error reading array of size {size}, only {self.remaining()} bytes available")
        return size

    def string(self) -> str:
        """`Type.STRING`: int16 length, UTF-8 bytes; Java decodes malformed bytes to U+FFFD."""
        n = self.int16()
        if n < 0:
            raise SchemaException(f"String length {n} cannot be negative")
        if n > self.remaining():
            raise SchemaException(f"Error reading string of length {n}, only {self.remaining()} bytes available")
        return self.take(n).decode("utf-8", "replace")

    def int32_array(self, n: int) -> tuple[int, ...]:
        """n int32s at once: the same values, and the same underflow, as n calls of `int32`."""
        pos = self.pos
        if len(self.data) - pos < 4 * n:
            raise SchemaException("buffer underflow")
        self.pos = pos + 4 * n
        return struct.unpack_from(f">{n}i", self.data, pos)


def _write_string(s: str) -> bytes:
    data = s.encode("utf-8", "replace")  # Java's encoder writes '?' for a lone surrogate, as "replace" does
    if len(data) > 0x7FFF:
        raise SchemaException(f"String length {len(data)} is larger than the maximum string length.")
    return struct.pack(">h", len(data)) + data


def _group_partitions_by_topic(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    """`CollectionUtils.groupPartitionsByTopic`: `computeIfAbsent` on a default HashMap, per partition.

    Unlike `put`, `computeIfAbsent` links a new key at the head of its bin (colliding topics come out
    newest first), resizes at the start of a call once the size is past the threshold (not right after
    the insert that passed it), and treeifies a bin one entry earlier; a resize keeps each bin's order.
    Checked against Kafka's StickyAssignor.subscriptionUserData through the bridge.
    """
    table: list[list[str]] = []
    threshold = 0
    hashes: dict[str, int] = {}
    groups: dict[str, list[int]] = {}

    def resized() -> tuple[list[list[str]], int]:
        cap, thr = (2 * len(table), 2 * threshold) if table else (16, 12)
        new: list[list[str]] = [[] for _ in range(cap)]
        for b in table:
            for t in b:
                new[hashes[t] & (cap - 1)].append(t)
        return new, thr

    for tp in partitions:
        if not table or len(groups) > threshold:
            table, threshold = resized()
        parts = groups.get(tp.topic)
        if parts is None:
            h = hashes[tp.topic] = spread(string_hash_code(tp.topic))
            b = table[h & (len(table) - 1)]
            b.insert(0, tp.topic)
            groups[tp.topic] = parts = []
            if len(b) > _TREEIFY_BIN:  # treeifyBin: a small table grows instead
                if len(table) >= 64:
                    raise NotImplementedError("HashMap bin would become a tree bin; its order is not modelled")
                table, threshold = resized()
        parts.append(tp.partition)
    return [(t, groups[t]) for b in table for t in b]


_TREEIFY_BIN = 7  # computeIfAbsent treeifies once a bin held 7 entries before the new one


def _serialize_assignment(partitions: Iterable[TopicPartition]) -> bytes:
    groups = _group_partitions_by_topic(partitions)
    out = [struct.pack(">i", len(groups))]
    for topic, parts in groups:
        out.append(_write_string(topic))
        out.append(struct.pack(">i", len(parts)))
        out.extend(struct.pack(">i", p) for p in parts)
    return b"".join(out)


def serialize_topic_partition_assignment(partitions: Iterable[TopicPartition], generation: int | None) -> bytes:
    """`StickyAssignor.serializeTopicPartitionAssignment`: schema V1 `[(topic, [int32])], generation:int32`.

    The partitions are regrouped by topic through a HashMap, so reading them back gives topics in hash
    order and each topic's partitions in their original order. Java cannot write V1 without a generation
    (the struct's field has no default), hence the SchemaException.
    """
    if generation is None:
        raise SchemaException("Missing value for field 'generation' which has no default value.")
    return _serialize_assignment(partitions) + struct.pack(">i", generation)


def serialize_topic_partition_assignment_v0(partitions: Iterable[TopicPartition]) -> bytes:
    """Schema V0 (no generation), as pre-2.3 clients wrote it (`StickyAssignorTest.buildSubscriptionWithOldSchema`)."""
    return _serialize_assignment(partitions)


def _read_assignment(r: _Reader) -> list[TopicPartition]:
    out: list[TopicPartition] = []
    for _ in range(r.array_size()):
        topic = r.string()
        # Running short midway raises as well; the partial list is dropped with it.
        out.extend([TopicPartition(topic, p) for p in r.int32_array(r.array_size())])
    return out


def deserialize_topic_partition_assignment(data: bytes) -> MemberData:
    """`StickyAssignor.deserializeTopicPartitionAssignment`: try V1, fall back to V0, else `([], -1)`.

    Like Java, trailing bytes are ignored, and V0 data followed by 4+ stray bytes reads as V1.
    """
    try:
        r = _Reader(data)
        partitions = _read_assignment(r)
        return MemberData(tuple(partitions), r.int32())
    except (SchemaException, UnicodeError, struct.error):
        pass
    try:
        return MemberData(tuple(_read_assignment(_Reader(data))), None)
    except (SchemaException, UnicodeError, struct.error):
        return MemberData((), DEFAULT_GENERATION)  # "ignore the consumer's previous assignment"


def encode_cooperative_user_data(generation: int) -> bytes:
    """`CooperativeStickyAssignor.subscriptionUserData`: schema V0 `{generation:int32}`."""
    return struct.pack(">i", generation)


# --- rack information (KIP-881) -------------------------------------------------------------------------


def use_rack_aware_assignment(
    consumer_racks: set[str],
    partition_racks: set[str],
    racks_per_partition: Mapping[TopicPartition, set[str]],
    prefer_rack_aware_logic: bool = False,
) -> bool:
    """`AbstractPartitionAssignor.useRackAwareAssignment`: on when some partition misses some rack."""
    if not consumer_racks or consumer_racks.isdisjoint(partition_racks):
        return False
    if prefer_rack_aware_logic:  # test-only flag in Kafka
        return True
    return not all(r == partition_racks for r in racks_per_partition.values())


class _RackInfo:
    """`AbstractStickyAssignor.RackInfo`."""

    def __init__(
        self, partition_infos: Sequence[PartitionInfo], subs: JavaHashMap[str, Subscription], prefer: bool
    ) -> None:
        consumers_by_rack: dict[str, list[str]] = {}
        for member, sub in subs.items():
            if sub.rack_id:  # Optional.filter(r -> !r.isEmpty())
                consumers_by_rack.setdefault(sub.rack_id, []).append(member)
        partitions_by_rack: dict[str, list[TopicPartition]] = {}
        partition_racks: dict[TopicPartition, set[str]] = {}
        if consumers_by_rack:
            for p in partition_infos:
                tp = TopicPartition(p.topic, p.partition)
                racks: set[str] = set()
                partition_racks[tp] = racks
                for node in p.replicas:
                    if node.rack is not None:
                        partitions_by_rack.setdefault(node.rack, []).append(tp)
                        racks.add(node.rack)
        self.consumer_racks: dict[str, str]
        self.partition_racks: dict[TopicPartition, set[str]]
        if use_rack_aware_assignment(set(consumers_by_rack), set(partitions_by_rack), partition_racks, prefer):
            self.consumer_racks = {c: rack for rack, cs in consumers_by_rack.items() for c in cs}
            self.partition_racks = partition_racks
        else:
            self.consumer_racks = {}
            self.partition_racks = {}
        # Kafka builds this from the *local* partition-rack map, i.e. even when rack awareness is off
        # (any consumer with a rack makes it non-empty, and then unassigned partitions get re-sorted).
        self.num_consumers_by_partition = {
            tp: sum(len(consumers_by_rack.get(r, ())) for r in racks) for tp, racks in partition_racks.items()
        }

    def racks_mismatch(self, consumer: str, tp: TopicPartition) -> bool:
        rack = self.consumer_racks.get(consumer)
        replica_racks = self.partition_racks.get(tp)
        return rack is not None and (replica_racks is None or rack not in replica_racks)

    def sort_partitions_by_rack_consumers(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        if not self.num_consumers_by_partition:
            return partitions
        counts = self.num_consumers_by_partition
        return sorted(partitions, key=lambda tp: counts.get(tp, 0))  # List.sort is stable, as here

    def next_rack_consumer(self, tp: TopicPartition, consumers: list[str], first: int) -> int:
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        n = len(consumers)
        for i in range(n):
            index = (first + i) % n
            if self.consumer_racks.get(consumers[index]) in racks:
                return index
        return -1


# --- the constrained builder (all subscriptions equal) ---------------------------------------------------


class _ConstrainedAssignmentBuilder:
    """`AbstractStickyAssignor.ConstrainedAssignmentBuilder`."""

    def __init__(
        self,
        assignor: AbstractStickyAssignor,
        partitions_per_topic: Mapping[str, Sequence[PartitionInfo]],
        rack_info: _RackInfo,
        consumer_to_owned: JavaHashMap[str, list[TopicPartition]],
        multi_owned: set[TopicPartition],
    ) -> None:
        self.assignor = assignor
        self.ppt = partitions_per_topic
        self.rack = rack_info
        self.current = consumer_to_owned
        self.multi_owned = multi_owned
        self.total = sum(len(v) for v in partitions_per_topic.values())
        n = len(consumer_to_owned)  # zero members: Java divides by zero (ArithmeticException) too
        self.min_quota = self.total // n
        self.max_quota = -(-self.total // n)
        self.expected_over = self.total % n
        self.current_over = 0
        self.maybe_revoked: dict[TopicPartition, str] = {}
        self.under_min: list[str] = []  # unfilledMembersWithUnderMinQuotaPartitions
        self.exactly_min: list[str] = []  # unfilledMembersWithExactlyMinQuotaPartitions (a LinkedList)
        self.assignment: dict[str, list[TopicPartition]] = {c: [] for c in consumer_to_owned.keys()}
        self.assigned: list[TopicPartition] = []

    def build(self) -> dict[str, list[TopicPartition]]:
        self._assign_owned_partitions()
        unassigned = self._get_unassigned_partitions(self.assigned)
        self.under_min.sort(key=_jstr)
        self.exactly_min.sort(key=_jstr)
        unassigned = self.rack.sort_partitions_by_rack_consumers(unassigned)
        unassigned = self._assign_rack_aware_round_robin(unassigned)
        self._assign_round_robin(unassigned)
        self._verify_unfilled_members()
        # Java returns `new HashMap<>(toMap(...))`; reproduce its key order (cosmetic: a Map).
        to_map: JavaHashMap[str, list[TopicPartition]] = JavaHashMap()
        for c in self.current.keys():
            to_map.put(c, self.assignment[c])
        return dict(_copied_hash_map(to_map.keys(), self.assignment).items())

    def _assign_owned_partitions(self) -> None:
        # Iteration order of the consumerToOwnedPartitions HashMap decides who keeps maxQuota when more
        # members own >= maxQuota than there are extra slots (testMaxQuotaConsumerMoreThanNumExpected...).
        for consumer, owned_list in self.current.items():
            owned: list[TopicPartition] = []
            for tp in owned_list:
                if self.rack.racks_mismatch(consumer, tp):
                    self.maybe_revoked[tp] = consumer  # KAFKA-15170: a later hand-over must be withheld
                else:
                    owned.append(tp)
            owned.sort(key=lambda tp: (tp.partition, _jstr(tp.topic)))  # by (partition, topic), not (topic, ...)
            for tp in self.multi_owned:  # HashSet order is irrelevant: each removal is independent
                if tp in owned:
                    owned.remove(tp)
            target = self.assignment[consumer]
            if len(owned) < self.min_quota:
                target.extend(owned)
                self.assigned.extend(owned)
                self.under_min.append(consumer)
            elif len(owned) >= self.max_quota and self.current_over < self.expected_over:
                self.current_over += 1
                if self.current_over == self.expected_over:
                    self.exactly_min.clear()
                target.extend(owned[: self.max_quota])
                self.assigned.extend(owned[: self.max_quota])
                for tp in owned[self.max_quota :]:
                    self.maybe_revoked[tp] = consumer
            else:
                target.extend(owned[: self.min_quota])
                self.assigned.extend(owned[: self.min_quota])
                for tp in owned[self.min_quota :]:
                    self.maybe_revoked[tp] = consumer
                if self.current_over < self.expected_over:
                    self.exactly_min.append(consumer)

    def _get_unassigned_partitions(self, assigned: list[TopicPartition]) -> list[TopicPartition]:
        """Kafka's two-pointer difference; kept literally, since a kept partition that no longer
        exists (a shrunk topic) stalls the pointer and makes every later partition 'unassigned'."""
        topics = sorted(self.ppt, key=_jstr)
        if not assigned:
            return [TopicPartition(p.topic, p.partition) for t in topics for p in self.ppt[t]]
        assigned.sort(key=lambda tp: (_jstr(tp.topic), tp.partition))
        out: list[TopicPartition] = []
        it = iter(assigned)
        nxt = next(it)
        add_directly = False
        for topic in topics:
            for i in range(len(self.ppt[topic])):
                if add_directly or not (nxt.topic == topic and nxt.partition == i):
                    out.append(TopicPartition(topic, i))
                else:
                    try:
                        nxt = next(it)
                    except StopIteration:
                        add_directly = True
        return out

    def _assign_rack_aware_round_robin(self, unassigned: list[TopicPartition]) -> list[TopicPartition]:
        if not self.rack.consumer_racks:
            return unassigned
        remaining: list[TopicPartition] = []
        next_index = 0
        for tp in unassigned:
            consumer: str | None = None
            idx = self.rack.next_rack_consumer(tp, self.under_min, next_index)
            if idx >= 0:
                consumer = self.under_min[idx]
                count = len(self.assignment[consumer]) + 1
                if count >= self.min_quota:
                    self.under_min.remove(consumer)
                    if count < self.max_quota and self.current_over < self.expected_over:
                        self.exactly_min.append(consumer)
                else:
                    idx += 1
                next_index = idx % len(self.under_min) if self.under_min else 0
            elif self.exactly_min:
                first = self.rack.next_rack_consumer(tp, self.exactly_min, 0)
                if first >= 0:
                    consumer = self.exactly_min[first]
                    if len(self.assignment[consumer]) + 1 == self.max_quota:
                        del self.exactly_min[first]
                        self.current_over += 1  # KAFKA-15170
                        if self.current_over == self.expected_over:
                            self.exactly_min.clear()
            if consumer is not None:
                self._assign_new_partition(tp, consumer)
            else:
                remaining.append(tp)
        return remaining

    def _assign_round_robin(self, unassigned: list[TopicPartition]) -> None:
        # A LinkedList iterator over under_min: `pos` is the next index, `last` what next() returned.
        pos, last = 0, -1
        for tp in unassigned:
            if pos < len(self.under_min):
                consumer = self.under_min[pos]
                last, pos = pos, pos + 1
            elif not self.under_min and not self.exactly_min:
                raise IllegalStateException("No more unfilled consumers to be assigned.")
            elif not self.under_min:
                consumer = self.exactly_min.pop(0)  # poll(); the exhausted iterator stays as it is
            else:
                consumer = self.under_min[0]  # restart the iterator
                last, pos = 0, 1
            count = self._assign_new_partition(tp, consumer)
            if count == self.min_quota:
                del self.under_min[last]  # iterator.remove()
                pos -= 1
                self.exactly_min.append(consumer)
            elif count == self.max_quota:
                self.current_over += 1

    def _assign_new_partition(self, tp: TopicPartition, consumer: str) -> int:
        target = self.assignment[consumer]
        target.append(tp)
        if not self.maybe_revoked and not self.multi_owned:  # nothing to hand over (a fresh group): skip two hashes
            return len(target)
        revoked_from = self.maybe_revoked.get(tp)
        if (revoked_from is not None and revoked_from != consumer) or tp in self.multi_owned:
            transferring = self.assignor.partitions_transferring_ownership
            assert transferring is not None  # the constrained path starts it as {}
            transferring[tp] = consumer
        return len(target)

    def _verify_unfilled_members(self) -> None:
        if not self.under_min:
            return
        if self.current_over != self.expected_over:
            raise IllegalStateException(
                "We haven't reached the expected number of members with more than the minQuota partitions, "
                "but no more partitions to be assigned"
            )
        for member in self.under_min:
            if len(self.assignment[member]) != self.min_quota:
                raise IllegalStateException(
                    f"Consumer: [{member}] doesn't reach minQuota partitions, and no more partitions to be assigned"
                )


# --- the general builder (subscriptions differ) ---------------------------------------------------------


class _ConsumerGenerationPair(NamedTuple):
    consumer: str
    generation: int


class _PartitionMovements:
    """`AbstractStickyAssignor.PartitionMovements`: at most one src->dst pair per partition."""

    def __init__(self) -> None:
        # topic -> (src, dst) -> HashSet<TopicPartition>; only the sets' iteration order matters.
        self.by_topic: dict[str, dict[tuple[str, str], JavaHashMap[TopicPartition, bool]]] = {}
        self.movements: dict[TopicPartition, tuple[str, str]] = {}

    def _remove_record(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self.movements.pop(tp)
        per_topic = self.by_topic[tp.topic]
        per_topic[pair].remove(tp)
        if not len(per_topic[pair]):
            del per_topic[pair]
        if not per_topic:
            del self.by_topic[tp.topic]
        return pair

    def _add_record(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self.movements[tp] = pair
        per_topic = self.by_topic.setdefault(tp.topic, {})
        if pair not in per_topic:
            per_topic[pair] = JavaHashMap()  # a fresh `new HashSet<>()` each time the pair reappears
        per_topic[pair].put(tp, True)

    def move_partition(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self.movements:
            src, _dst = self._remove_record(tp)
            if src != new:  # A->B->A collapses to no movement at all
                self._add_record(tp, (src, new))
        else:
            self._add_record(tp, (old, new))

    def get_the_actual_partition_to_be_moved(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        per_topic = self.by_topic.get(tp.topic)
        if per_topic is None:
            return tp
        if tp in self.movements:
            old = self.movements[tp][0]
        reverse = per_topic.get((new, old))
        if reverse is None:
            return tp
        return reverse.keys()[0]  # `iterator().next()` of a HashSet<TopicPartition>: Java's bucket order

    def is_sticky(self) -> bool:
        """`isSticky`: false iff some topic moved partitions both A->B and B->A.

        Kafka's `hasCycles` searches all cycles but only reports those of length 2 (`cycle.size() == 3`),
        and a pair (A,B) whose reverse (B,A) exists is always found directly, so this is equivalent.
        """
        return not any((b, a) in pairs for pairs in self.by_topic.values() for (a, b) in pairs)


class _SortedMembers:
    """The `TreeSet<String>` ordered by (current assignment size, member id) that Kafka keeps.

    As in Kafka, a member is removed before its assignment changes and added back after.
    """

    def __init__(self, current: JavaHashMap[str, list[TopicPartition]]) -> None:
        self.current = current
        self.keys: list[tuple[int, bytes, str]] = []

    def _key(self, c: str) -> tuple[int, bytes, str]:
        return (len(self.current[c]), _jstr(c), c)

    def add(self, c: str) -> None:
        k = self._key(c)
        i = bisect_left(self.keys, k)
        if i == len(self.keys) or self.keys[i] != k:
            self.keys.insert(i, k)

    def remove(self, c: str) -> None:
        k = self._key(c)
        i = bisect_left(self.keys, k)
        if i < len(self.keys) and self.keys[i] == k:
            del self.keys[i]

    def first(self) -> str:
        if not self.keys:  # every member set aside as fixed, with partitions left to look at
            raise NoSuchElementException()
        return self.keys[0][2]

    def last(self) -> str:
        if not self.keys:
            raise NoSuchElementException()
        return self.keys[-1][2]

    def members(self) -> list[str]:
        return [k[2] for k in self.keys]


class _GeneralAssignmentBuilder:
    """`AbstractStickyAssignor.GeneralAssignmentBuilder`."""

    def __init__(
        self,
        assignor: AbstractStickyAssignor,
        partitions_per_topic: Mapping[str, Sequence[PartitionInfo]],
        rack_info: _RackInfo,
        current: JavaHashMap[str, list[TopicPartition]],
        subs: JavaHashMap[str, Subscription],
    ) -> None:
        self.assignor = assignor
        self.ppt = partitions_per_topic
        self.rack = rack_info
        self.current = current
        self.subs = subs
        self.total = sum(len(v) for v in partitions_per_topic.values())
        self.revocation_required = False
        # Lists keep duplicates of a topic a member lists twice, as Java's do; sizes then count them twice.
        self.topic2consumers: dict[str, list[str]] = {t: [] for t in partitions_per_topic}
        self.consumer2topics: JavaHashMap[str, list[str]] = JavaHashMap(len(subs))
        for consumer, sub in subs.items():
            topics: list[str] = []
            self.consumer2topics.put(consumer, topics)
            for t in sub.topics:
                if t in partitions_per_topic:
                    topics.append(t)
                    self.topic2consumers[t].append(consumer)
            if consumer not in current:
                current.put(consumer, [])
        # the same lists as sets, for the `List.contains` checks of the hot loops
        self.topic_sets = {c: frozenset(ts) for c, ts in self.consumer2topics.items()}
        self.partition_consumer: dict[TopicPartition, str] = {}
        for consumer, tps in current.items():
            for tp in tps:
                self.partition_consumer[tp] = consumer
        topics_sorted = sorted(self.topic2consumers, key=lambda t: (len(self.topic2consumers[t]), _jstr(t)))
        self.sorted_all_partitions = [TopicPartition(p.topic, p.partition) for t in topics_sorted for p in self.ppt[t]]
        self.sorted_subs = _SortedMembers(current)

    def _size(self, consumer: str | None) -> int:
        """`currentAssignment.get(c).size()`. Java throws an NPE for a member set aside as fixed, which
        happens when such a member is the prevAssignment owner of a partition that can move."""
        lst = self.current.get(consumer) if consumer is not None else None
        if lst is None:
            raise NullPointerException(NO_ASSIGNMENT_NPE, consumer)
        return len(lst)

    def build(self) -> dict[str, list[TopicPartition]]:
        prev: dict[TopicPartition, _ConsumerGenerationPair] = {}
        self.movements = _PartitionMovements()
        self.assignor._partition_movements = self.movements
        self._prepopulate_current_assignments(prev)
        assigned = self._assign_owned_partitions()
        unassigned = self._get_unassigned_partitions(assigned)
        for c in self.current.keys():
            self.sorted_subs.add(c)
        self._balance(prev, unassigned)
        return dict(self.current.items())

    def _prepopulate_current_assignments(self, prev: dict[TopicPartition, _ConsumerGenerationPair]) -> None:
        """Previous owners from older generations, compared with the *instance's* maxGeneration, which
        remembers every generation this assignor has ever seen. Kafka rewinds each user-data buffer
        first; member_data here always reads from the start."""
        max_generation = self.assignor.max_generation
        for consumer, sub in self.subs.items():
            md = self.assignor.member_data(sub)
            if md.generation is not None and md.generation < max_generation:
                self._update_prev(prev, md.partitions, consumer, md.generation)
            elif md.generation is None and max_generation > DEFAULT_GENERATION:
                self._update_prev(prev, md.partitions, consumer, DEFAULT_GENERATION)

    @staticmethod
    def _update_prev(prev: dict, partitions: Iterable[TopicPartition], consumer: str, generation: int) -> None:
        for tp in partitions:  # the raw memberData list: partitions of deleted topics included
            old = prev.get(tp)
            if old is None or generation > old.generation:  # first claimant wins ties: map order matters
                prev[tp] = _ConsumerGenerationPair(consumer, generation)

    def _assign_owned_partitions(self) -> list[TopicPartition]:
        assigned: list[TopicPartition] = []
        for consumer, tps in self.current.items():
            # `subscription.topics().contains(topic)`: for a topic with metadata (the only ones that get
            # here), the same answer as the member's topic set, which is a set rather than a list.
            topics = self.topic_sets[consumer]
            keep: list[TopicPartition] = []
            for tp in tps:
                if tp.topic not in self.topic2consumers:
                    self.partition_consumer.pop(tp, None)
                elif tp.topic not in topics or self.rack.racks_mismatch(consumer, tp):
                    # partition_consumer keeps its stale entry, as in Kafka (overwritten when reassigned)
                    self.revocation_required = True
                else:
                    keep.append(tp)
                    assigned.append(tp)
            tps[:] = keep
        return assigned

    def _partition_key(self, tp: TopicPartition) -> tuple[int, bytes, int]:
        """`Utils.PartitionComparator`: (#potential consumers of the topic, topic, partition)."""
        return (len(self.topic2consumers[tp.topic]), _jstr(tp.topic), tp.partition)

    def _get_unassigned_partitions(self, assigned: list[TopicPartition]) -> list[TopicPartition]:
        if not assigned:
            return self.sorted_all_partitions  # the same list object, as in Java
        assigned.sort(key=self._partition_key)
        out: list[TopicPartition] = []
        it = iter(assigned)
        nxt = next(it)
        add_directly = False
        for tp in self.sorted_all_partitions:
            if add_directly or nxt != tp:
                out.append(tp)
            else:
                try:
                    nxt = next(it)
                except StopIteration:
                    add_directly = True
        return out

    def _max_assignment_size(self, topics: list[str]) -> int:
        if len(topics) == len(self.ppt):  # a list with duplicates can match by length alone, as in Java
            return self.total
        return sum(len(self.ppt[t]) for t in topics)

    def _is_balanced(self) -> bool:
        """Kafka's `isBalanced`. For each non-full member (TreeSet order) and each of its topics, Kafka scans
        partitions 0..count-1, skipping the member's own, for one whose owner has at least 2 more partitions
        than the member (False), and dereferences the owner's list on the way: a partition nobody in the
        current assignment holds (its holder set aside as fixed, or a number missing from the metadata) throws
        there. The owner is the last member listing the partition. So per topic, the largest owner size before
        the first ownerless partition, and whether there is one, decide, for every member whose own partitions
        are all recorded as its own (their size is its own: never "2 more"); a member sharing a partition with
        a later one (stale claims) is scanned exactly."""
        if self._size(self.sorted_subs.first()) >= self._size(self.sorted_subs.last()) - 1:
            return True
        owner: dict[tuple[str, int], str] = {}  # plain tuples: hashing the dataclass costs a Python call
        for consumer, tps in self.current.items():
            for tp in tps:
                owner[tp.topic, tp.partition] = consumer
        shared = {c for c, tps in self.current.items() for tp in tps if owner[tp.topic, tp.partition] != c}
        scanned: dict[str, tuple[int, bool]] = {}
        for consumer in self.sorted_subs.members():
            count = self._size(consumer)
            topics = self.consumer2topics[consumer]
            if count == self._max_assignment_size(topics):
                continue
            if consumer in shared:
                if self._can_take_from_another(consumer, count, topics, owner):
                    return False
                continue
            for topic in topics:
                seen = scanned.get(topic)
                if seen is None:
                    scanned[topic] = seen = self._largest_owner(topic, owner)
                if count + 1 < seen[0]:
                    return False
                if seen[1]:
                    raise NullPointerException(NO_ASSIGNMENT_NPE)
        return True

    def _can_take_from_another(self, consumer: str, count: int, topics: list[str],
                               owner: dict[tuple[str, int], str]) -> bool:
        """Kafka's scan for a member that shares a partition with another (stale claims), partition by partition:
        whether one of its topics' partitions it does not hold has an owner with at least 2 more partitions than
        its `count`; an ownerless partition before one throws."""
        own = {(tp.topic, tp.partition) for tp in self.current[consumer]}
        for topic in topics:
            for i in range(len(self.ppt[topic])):
                if (topic, i) in own:
                    continue
                lst = self.current.get(owner.get((topic, i)))  # type: ignore[arg-type]
                if lst is None:
                    raise NullPointerException(NO_ASSIGNMENT_NPE)
                if count + 1 < len(lst):
                    return True
        return False

    def _largest_owner(self, topic: str, owner: dict[tuple[str, int], str]) -> tuple[int, bool]:
        """(the largest owner's partition count among `topic`'s partitions before the first ownerless one, whether
        there is an ownerless one)."""
        biggest = 0
        for i in range(len(self.ppt[topic])):
            lst = self.current.get(owner.get((topic, i)))  # type: ignore[arg-type]
            if lst is None:
                return biggest, True
            biggest = max(biggest, len(lst))
        return biggest, False

    @staticmethod
    def _balance_score(assignment: Iterable[list[TopicPartition]]) -> int:
        """Sum of |size_i - size_j| over unordered member pairs."""
        sizes = sorted(len(v) for v in assignment)
        return sum(s * (2 * i - len(sizes) + 1) for i, s in enumerate(sizes))

    def _maybe_assign(self, partitions: list[TopicPartition], rack: _RackInfo | None, remove: bool) -> None:
        kept: list[TopicPartition] = []
        for tp in partitions:
            if not self.topic2consumers[tp.topic]:
                kept.append(tp)
                continue
            done = False
            for *_, consumer in self.sorted_subs.keys:  # breaks right after changing the set
                if tp.topic in self.topic_sets[consumer] and (rack is None or not rack.racks_mismatch(consumer, tp)):
                    self.sorted_subs.remove(consumer)
                    self.current[consumer].append(tp)
                    self.partition_consumer[tp] = consumer
                    self.sorted_subs.add(consumer)
                    done = True
                    break
            if not (done and remove):
                kept.append(tp)
        if remove:
            partitions[:] = kept

    def _can_topic_participate(self, topic: str) -> bool:
        return len(self.topic2consumers[topic]) >= 2

    def _can_consumer_participate(self, consumer: str) -> bool:
        tps = self.current[consumer]
        if len(tps) < self._max_assignment_size(self.consumer2topics[consumer]):
            return True
        return any(self._can_topic_participate(tp.topic) for tp in tps)

    def _balance(self, prev: dict[TopicPartition, _ConsumerGenerationPair], unassigned: list[TopicPartition]) -> None:
        initializing = not self.current[self.sorted_subs.last()]
        to_assign = unassigned
        if self.rack.consumer_racks:  # first with rack matching, then the rest without
            to_assign = list(unassigned)
            self._maybe_assign(to_assign, self.rack, True)
        self._maybe_assign(to_assign, None, False)

        fixed_partitions = {
            TopicPartition(topic, i)
            for topic in self.topic2consumers
            if not self._can_topic_participate(topic)
            for i in range(len(self.ppt[topic]))
        }
        # removeAll in place: `unassigned` may be the very same list as sorted_all_partitions
        self.sorted_all_partitions[:] = [tp for tp in self.sorted_all_partitions if tp not in fixed_partitions]
        unassigned[:] = [tp for tp in unassigned if tp not in fixed_partitions]

        fixed: JavaHashMap[str, list[TopicPartition]] = JavaHashMap()
        for consumer in self.consumer2topics.keys():
            if not self._can_consumer_participate(consumer):
                self.sorted_subs.remove(consumer)
                owned = self.current.remove(consumer)
                assert owned is not None  # __init__ put every member in current
                fixed.put(consumer, owned)

        pre_balance: JavaHashMap[str, list[TopicPartition]] = JavaHashMap()
        for c, tps in self.current.items():
            pre_balance.put(c, list(tps))
        pre_balance_consumers = dict(self.partition_consumer)

        if not self.revocation_required:  # first try moving only the new partitions; result discarded
            self._perform_reassignments(unassigned, prev)
        performed = self._perform_reassignments(self.sorted_all_partitions, prev)

        # `>=`: an equally balanced result is reverted to keep stickiness (skipped while initializing)
        if (
            not initializing
            and performed
            and self._balance_score(self.current.values()) >= self._balance_score(pre_balance.values())
        ):
            for c in self.current.keys():  # HashMap.clear() keeps the table, then putAll
                self.current.remove(c)
            for c, tps in pre_balance.items():
                self.current.put(c, list(tps))
            self.partition_consumer = pre_balance_consumers
            # Kafka's TreeSet is now stale (sizes changed under it); it is not read again.
        for c, tps in fixed.items():
            self.current.put(c, tps)

    def _perform_reassignments(
        self, partitions: list[TopicPartition], prev: dict[TopicPartition, _ConsumerGenerationPair]
    ) -> bool:
        performed = False
        while True:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                consumer = self.partition_consumer.get(tp)
                p = prev.get(tp)
                # Back to an older-generation owner: Kafka checks neither that it still subscribes to the
                # topic (so it can get a partition it dropped) nor that it is not set aside (an NPE).
                if p is not None and self._size(consumer) > self._size(p.consumer) + 1:
                    self._reassign_to(tp, p.consumer)
                    performed = modified = True
                    continue
                consumer_rack = None if consumer is None else self.rack.consumer_racks.get(consumer)
                partition_racks = self.rack.partition_racks.get(tp)
                found = False
                if consumer_rack is not None and partition_racks and consumer_rack in partition_racks:
                    for other in self.topic2consumers[tp.topic]:
                        other_rack = self.rack.consumer_racks.get(other)
                        if other_rack is None or other_rack not in partition_racks:
                            continue
                        if self._size(consumer) > self._size(other) + 1:
                            self._reassign(tp)
                            performed = modified = found = True
                            break
                if not found:
                    for other in self.topic2consumers[tp.topic]:
                        if self._size(consumer) > self._size(other) + 1:
                            self._reassign(tp)
                            performed = modified = True
                            break
            if not modified:
                return performed

    def _reassign(self, tp: TopicPartition) -> None:
        """To the least loaded member (TreeSet order) that subscribes to the topic."""
        for *_, c in self.sorted_subs.keys:
            if tp.topic in self.topic_sets[c]:
                self._reassign_to(tp, c)
                return
        # Kafka: `assert newConsumer != null`; JVMs run clients without -ea, so the null goes on to
        # `reassignPartition`, whose TreeSet comparator dereferences it. (Not met in differential runs:
        # a subscriber set aside as fixed fails `_size` first.)
        raise NullPointerException(NO_ASSIGNMENT_NPE)

    def _reassign_to(self, tp: TopicPartition, new: str) -> None:
        old = self.partition_consumer[tp]
        moved = self.movements.get_the_actual_partition_to_be_moved(tp, old, new)
        self._process_partition_movement(moved, new)

    def _process_partition_movement(self, tp: TopicPartition, new: str) -> None:
        old = self.partition_consumer[tp]
        self.sorted_subs.remove(old)
        self.sorted_subs.remove(new)
        self.movements.move_partition(tp, old, new)
        self.current[old].remove(tp)
        self.current[new].append(tp)
        self.partition_consumer[tp] = new
        self.sorted_subs.add(new)
        self.sorted_subs.add(old)


# --- the assignors ---------------------------------------------------------------------------------------


class AbstractStickyAssignor:
    """`AbstractStickyAssignor`: shared by the eager `StickyAssignor` and the `CooperativeStickyAssignor`.

    State kept between calls, as Kafka's instance keeps it: `max_generation` (never reset, so a reused
    assignor treats members below any generation it has ever seen as previous owners), and
    `partitions_transferring_ownership` of the last call (`{}` after the constrained path, `None` after
    the general one). `prefer_rack_aware_logic` is Kafka's test-only switch.
    """

    name: ClassVar[str]
    supported_protocols: ClassVar[tuple[str, ...]] = (EAGER,)

    def __init__(self) -> None:
        self.max_generation = DEFAULT_GENERATION
        self.partitions_transferring_ownership: dict[TopicPartition, str] | None = {}
        self.prefer_rack_aware_logic = False
        self._partition_movements: _PartitionMovements | None = None

    def member_data(self, subscription: Subscription) -> MemberData:
        raise NotImplementedError

    def assign(
        self, metadata: Mapping[str, Sequence[PartitionInfo]], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        """`AbstractPartitionAssignor.assign(Cluster, GroupSubscription)`, which AbstractStickyAssignor inherits:
        `metadata` maps a topic to what `Cluster.partitionsForTopic` gives."""
        return self.assign_partitions(build_partitions_per_topic(metadata, subscriptions), subscriptions)

    def assign_partition_counts(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        """`assign(Map<String, Integer>, ...)`: partitions without replicas, hence without racks."""
        return self.assign_partitions(partition_infos_without_racks(partitions_per_topic), subscriptions)

    def assign_partitions(
        self,
        partitions_per_topic: Mapping[str, Sequence[PartitionInfo]],
        subscriptions: Subscriptions,
    ) -> dict[str, list[TopicPartition]]:
        """`assignPartitions`: member -> partitions. Lists start with kept partitions."""
        subs = _as_java_map(subscriptions)
        consumer_to_owned: JavaHashMap[str, list[TopicPartition]] = JavaHashMap()
        multi_owned: set[TopicPartition] = set()
        all_partitions = [p for ps in partitions_per_topic.values() for p in ps]
        rack_info = _RackInfo(all_partitions, subs, self.prefer_rack_aware_logic)
        if self._all_subscriptions_equal(set(partitions_per_topic), subs, consumer_to_owned, multi_owned):
            self.partitions_transferring_ownership = {}
            builder = _ConstrainedAssignmentBuilder(
                self, partitions_per_topic, rack_info, consumer_to_owned, multi_owned
            )
            return builder.build()
        self.partitions_transferring_ownership = None  # the cooperative assignor recomputes it
        return _GeneralAssignmentBuilder(self, partitions_per_topic, rack_info, consumer_to_owned, subs).build()

    def _all_subscriptions_equal(
        self,
        all_topics: set[str],
        subs: JavaHashMap[str, Subscription],
        consumer_to_owned: JavaHashMap[str, list[TopicPartition]],
        multi_owned: set[TopicPartition],
    ) -> bool:
        """`allSubscriptionsEqual`; also fills each member's still-valid owned partitions.

        Claims are settled in subscription-map order. The member's own generation comes from its member
        data (user data for StickyAssignor) but the earlier claimant's from its raw `generationId` field.
        Equal generations: nobody keeps the partition.
        """
        equal = True
        subscribed: set[str] = set()
        previous_owner: dict[TopicPartition, str] = {}
        for consumer, sub in subs.items():
            if not subscribed:  # an empty first subscription is skipped: the next one sets the reference
                subscribed.update(sub.topics)
            elif equal and not (len(sub.topics) == len(subscribed) and subscribed.issuperset(sub.topics)):
                equal = False
            md = self.member_data(sub)
            generation = DEFAULT_GENERATION if md.generation is None else md.generation
            self.max_generation = max(self.max_generation, generation)
            owned: list[TopicPartition] = []
            consumer_to_owned.put(consumer, owned)
            for tp in md.partitions:
                if tp.topic not in all_topics:
                    continue
                other = previous_owner.get(tp)
                if other is None:
                    owned.append(tp)
                    previous_owner[tp] = consumer
                    continue
                other_gen = _generation_id(subs[other])
                other_generation = DEFAULT_GENERATION if other_gen is None else other_gen
                if generation == other_generation:
                    multi_owned.add(tp)
                    _remove_first(consumer_to_owned[other], tp)
                    previous_owner[tp] = consumer
                elif generation > other_generation:
                    owned.append(tp)
                    _remove_first(consumer_to_owned[other], tp)
                    previous_owner[tp] = consumer
        return equal

    def is_sticky(self) -> bool:
        """`isSticky()` (Kafka uses it in tests): no 2-cycle of moves within a topic in the last general run."""
        if self._partition_movements is None:
            raise NullPointerException("no general assignment has run yet")
        return self._partition_movements.is_sticky()


class StickyAssignor(AbstractStickyAssignor):
    """`org.apache.kafka.clients.consumer.StickyAssignor` (eager): ownership only from user data.

    A consumer's instance remembers its last assignment and generation (`on_assignment`) and sends
    them as user data (`subscription_user_data`); `Subscription.owned_partitions` is ignored.
    """

    name = "sticky"

    def __init__(self) -> None:
        super().__init__()
        self._member_assignment: list[TopicPartition] | None = None
        self._generation = DEFAULT_GENERATION

    def on_assignment(self, partitions: Sequence[TopicPartition], generation_id: int) -> None:
        self._member_assignment = list(partitions)
        self._generation = generation_id

    def subscription_user_data(self, topics: Iterable[str] = ()) -> bytes | None:
        if self._member_assignment is None:
            return None
        return serialize_topic_partition_assignment(self._member_assignment, self._generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        data = subscription.user_data
        if not data:  # null or nothing remaining
            return MemberData((), None)
        return deserialize_topic_partition_assignment(data)


class CooperativeStickyAssignor(AbstractStickyAssignor):
    """`org.apache.kafka.clients.consumer.CooperativeStickyAssignor`.

    Ownership from `Subscription.owned_partitions`; the generation from `generation_id`, else from the
    user data `{generation:int32}` (absent: none; unreadable: -1). Partitions changing owner are
    withheld from their new owner until the old one has revoked them (a follow-up rebalance).
    """

    name = "cooperative-sticky"
    supported_protocols = (COOPERATIVE, EAGER)

    def __init__(self) -> None:
        super().__init__()
        self._generation = DEFAULT_GENERATION

    def on_assignment(self, partitions: Sequence[TopicPartition] | None, generation_id: int) -> None:
        self._generation = generation_id

    def subscription_user_data(self, topics: Iterable[str] = ()) -> bytes:
        return encode_cooperative_user_data(self._generation)

    def member_data(self, subscription: Subscription) -> MemberData:
        generation = _generation_id(subscription)
        if generation is None and subscription.user_data is not None:
            try:
                generation = _Reader(subscription.user_data).int32()
            except SchemaException:
                generation = DEFAULT_GENERATION
        return MemberData(tuple(subscription.owned_partitions), generation)

    def assign_partitions(
        self,
        partitions_per_topic: Mapping[str, Sequence[PartitionInfo]],
        subscriptions: Subscriptions,
    ) -> dict[str, list[TopicPartition]]:
        subs = _as_java_map(subscriptions)
        assignments = super().assign_partitions(partitions_per_topic, subs)
        transferring = self.partitions_transferring_ownership
        if transferring is None:
            transferring = self._compute_partitions_transferring_ownership(subs, assignments)
        for tp, consumer in transferring.items():
            _remove_first(assignments[consumer], tp)
        return assignments

    @staticmethod
    def _compute_partitions_transferring_ownership(
        subs: JavaHashMap[str, Subscription], assignments: Mapping[str, list[TopicPartition]]
    ) -> dict[TopicPartition, str]:
        """Newly assigned partitions that some member still lists in its raw `owned_partitions`."""
        added: dict[TopicPartition, str] = {}
        revoked: set[TopicPartition] = set()
        for consumer, assigned in assignments.items():
            owned = subs[consumer].owned_partitions
            owned_set, assigned_set = set(owned), set(assigned)
            for tp in assigned:
                if tp not in owned_set:
                    added[tp] = consumer
            revoked.update(tp for tp in owned if tp not in assigned_set)
        return {tp: c for tp, c in added.items() if tp in revoked}
