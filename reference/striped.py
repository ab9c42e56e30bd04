"""KRaft's replica placer, as the controller runs it for CreateTopics and CreatePartitions.

Mirrors `metadata/src/main/java/org/apache/kafka/metadata/placement/StripedReplicaPlacer.java`:
partitions are striped across racks from a random rack offset that advances by
one per partition, round-robin inside each rack; leaders are never fenced;
fenced brokers are used only when a rack has no unfenced broker left in this
partition's epoch; racks and brokers are reshuffled every `numUnfenced`
partitions. Random draws happen in Java's order (the racks' `HashMap` order).

Two Kafka behaviours are available. By default, the one of Kafka 3.x/4.0
(apache/kafka at 2024-10): `PlacementSpec.start_partition` and the topic's
existing partitions are ignored, so added partitions start from a fresh random
offset. With `continue_from_existing=True`, newer trunk's: the rack offset and
each rack's unfenced-broker offset continue after the topic's last partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kcheck.model import Broker
from kcheck.reference.errors import IllegalArgumentException, InvalidReplicationFactorException
from kcheck.reference.java import JavaHashMap, JavaRandom, optional_hash_code, shuffle, string_compare_key


@dataclass(frozen=True)
class PlacementSpec:
    """Kafka's `PlacementSpec`: which partitions of which topic, and how many replicas each."""

    topic: str
    start_partition: int
    num_partitions: int
    num_replicas: int


@dataclass(frozen=True)
class PartitionAssignment:
    replicas: tuple[int, ...]


@dataclass(frozen=True)
class TopicAssignment:
    assignments: tuple[PartitionAssignment, ...]

    def replicas(self) -> list[list[int]]:
        return [list(a.replicas) for a in self.assignments]


class ClusterDescriber(Protocol):
    """Kafka's `ClusterDescriber`: the usable brokers (fenced flag included) and a topic's partitions."""

    def usable_brokers(self) -> Iterator[Broker]: ...

    def replicas_for_topic_name(self, topic: str) -> Sequence[Sequence[int]]: ...


@dataclass(frozen=True)
class StaticCluster:
    """A ClusterDescriber over a fixed broker list (controlled-shutdown brokers already left out)."""

    brokers: tuple[Broker, ...]
    existing: dict[str, tuple[tuple[int, ...], ...]] = field(default_factory=dict)

    def usable_brokers(self) -> Iterator[Broker]:
        return iter(self.brokers)

    def replicas_for_topic_name(self, topic: str) -> Sequence[Sequence[int]]:
        return self.existing.get(topic, ())


class BrokerList:
    """Brokers of one rack and one fencing state, handed out at most once per epoch."""

    def __init__(self) -> None:
        self.brokers: list[int] = []
        self.index = 0
        self.offset = 0
        self.epoch = 0

    def add(self, broker: int) -> BrokerList:
        self.brokers.append(broker)
        return self

    def initialize(self, random: JavaRandom) -> None:
        if self.brokers:
            self.brokers.sort()
            self.offset = random.next_int(len(self.brokers))

    def initialize_after(self, previous_offset: int) -> None:
        if self.brokers:
            self.brokers.sort()
            self.offset = (previous_offset + 1) % len(self.brokers)

    def next(self, epoch: int) -> int:
        if not self.brokers:
            return -1
        # A list rotates by one only when it is first touched in a new epoch.
        if epoch != self.epoch:
            self.epoch = epoch
            self.index = 0
            self.offset = (self.offset + 1) % len(self.brokers)
        if self.index >= len(self.brokers):
            return -1
        broker = self.brokers[(self.index + self.offset) % len(self.brokers)]
        self.index += 1
        return broker


class Rack:
    def __init__(self) -> None:
        self.fenced = BrokerList()
        self.unfenced = BrokerList()

    def next_unfenced(self, epoch: int) -> int:
        return self.unfenced.next(epoch)

    def next(self, epoch: int) -> int:
        result = self.unfenced.next(epoch)
        return result if result >= 0 else self.fenced.next(epoch)


def _rack_sort_key(name: str | None) -> tuple[int, bytes]:
    # The empty Optional first, then String.compareTo (UTF-16 code-unit order).
    return (0, b"") if name is None else (1, string_compare_key(name))


class RackList:
    """All racks of the cluster and the striping state across partitions."""

    def __init__(
        self,
        random: JavaRandom,
        brokers: Iterable[Broker],
        existing: Sequence[Sequence[int]] | None = None,
    ) -> None:
        self.random = random
        # Keyed by Optional<String>: "no rack" (None) is a rack of its own.
        self.racks: JavaHashMap[str | None, Rack] = JavaHashMap(hash_fn=optional_hash_code)
        self.rack_names: list[str | None] = []
        broker_rack: dict[int, str | None] = {}
        total = unfenced = 0
        for b in brokers:
            broker_rack[b.id] = b.rack
            rack = self.racks.get(b.rack)
            if rack is None:
                self.rack_names.append(b.rack)
                rack = Rack()
                self.racks.put(b.rack, rack)
            if b.fenced:
                rack.fenced.add(b.id)
            else:
                unfenced += 1
                rack.unfenced.add(b.id)
            total += 1
        existing = existing or ()
        # Random draws follow the HashMap's iteration order of racks.
        for name, rack in self.racks.items():
            previous = _previous_broker_offset(broker_rack, existing, name, rack.unfenced.brokers)
            rack.fenced.initialize(random)
            if previous is None:
                rack.unfenced.initialize(random)
            else:
                rack.unfenced.initialize_after(previous)
        # Kafka's comment says racks with only fenced brokers go last; the code sorts plainly.
        self.rack_names.sort(key=_rack_sort_key)
        self.num_total_brokers = total
        self.num_unfenced_brokers = unfenced
        self.epoch = 0
        previous_rack = _previous_rack_offset(broker_rack, existing, self.rack_names)
        if previous_rack is not None:
            self.offset = (previous_rack + 1) % len(self.rack_names)
        else:
            self.offset = random.next_int(len(self.rack_names)) if self.rack_names else 0

    def place(self, replication_factor: int) -> list[int]:
        """Replicas of one partition; the first is an unfenced leader."""
        _check_positive(replication_factor)
        _check_enough_brokers(replication_factor, self.num_total_brokers)
        _check_some_unfenced(self.num_unfenced_brokers)
        if self.epoch == self.num_unfenced_brokers and self.num_unfenced_brokers > 1:
            self._shuffle()
            self.epoch = 0  # BrokerLists keep their index and offset: only the epoch restarts
        if self.offset == len(self.rack_names):
            self.offset = 0
        n_racks = len(self.rack_names)
        first_rack = self.offset
        while True:
            leader = self.racks[self.rack_names[first_rack]].next_unfenced(self.epoch)
            if leader >= 0:
                break
            first_rack = (first_rack + 1) % n_racks
        out = [leader]
        # Followers start from the offset rack (not the one after the leader's),
        # skipping the leader's rack exactly once.
        rack_index = self.offset
        for _ in range(1, replication_factor):
            result = -1
            while result < 0:
                if rack_index == first_rack:
                    first_rack = -1
                else:
                    result = self.racks[self.rack_names[rack_index]].next(self.epoch)
                rack_index = (rack_index + 1) % n_racks
            out.append(result)
        self.epoch += 1
        self.offset += 1
        return out

    def _shuffle(self) -> None:
        shuffle(self.rack_names, self.random)
        for rack in self.racks.values():
            shuffle(rack.fenced.brokers, self.random)
            shuffle(rack.unfenced.brokers, self.random)


def _previous_rack_offset(
    broker_rack: dict[int, str | None], existing: Sequence[Sequence[int]], rack_names: list[str | None]
) -> int | None:
    """Index (in sorted rack names) of the rack that led the topic's last partition."""
    if not existing:
        return None
    last_leader = existing[-1][0]
    if last_leader not in broker_rack:
        return None
    rack = broker_rack[last_leader]
    return rack_names.index(rack) if rack in rack_names else None


def _previous_broker_offset(
    broker_rack: dict[int, str | None],
    existing: Sequence[Sequence[int]],
    rack: str | None,
    unfenced_brokers: list[int],
) -> int | None:
    """Index of the rack's most recently used broker, scanning the newest partition first.

    Kafka looks the index up before the list is sorted (insertion order), then
    applies it to the sorted list; kept as is.
    """
    for replicas in reversed(existing):
        for broker in replicas:
            if broker not in broker_rack:
                continue
            if broker_rack[broker] == rack:
                return unfenced_brokers.index(broker) if broker in unfenced_brokers else None
    return None


def _check_positive(replication_factor: int) -> None:
    if replication_factor <= 0:
        raise InvalidReplicationFactorException(
            f"Invalid replication factor {replication_factor}: the replication factor must be positive."
        )


def _check_some_unfenced(num_unfenced: int) -> None:
    if num_unfenced == 0:
        raise InvalidReplicationFactorException("All brokers are currently fenced.")


def _check_enough_brokers(replication_factor: int, num_total: int) -> None:
    if replication_factor > num_total:
        raise InvalidReplicationFactorException(
            f"The target replication factor of {replication_factor} cannot be reached because only "
            f"{num_total} broker(s) are registered."
        )


class StripedReplicaPlacer:
    """Kafka's `StripedReplicaPlacer`; keeps one `java.util.Random` across calls, as the controller does."""

    def __init__(self, random: JavaRandom, continue_from_existing: bool = False) -> None:
        self.random = random
        self.continue_from_existing = continue_from_existing

    def place(self, placement_spec: PlacementSpec, cluster_describer: ClusterDescriber) -> TopicAssignment:
        existing = (
            cluster_describer.replicas_for_topic_name(placement_spec.topic) if self.continue_from_existing else ()
        )
        rack_list = RackList(self.random, cluster_describer.usable_brokers(), existing)
        # The entry point checks in a different order from RackList.place.
        _check_positive(placement_spec.num_replicas)
        _check_some_unfenced(rack_list.num_unfenced_brokers)
        _check_enough_brokers(placement_spec.num_replicas, rack_list.num_total_brokers)
        if placement_spec.num_partitions < 0:  # Kafka sizes its result list up front: new ArrayList<>(n)
            raise IllegalArgumentException(f"Illegal Capacity: {placement_spec.num_partitions}")
        return TopicAssignment(
            tuple(
                PartitionAssignment(tuple(rack_list.place(placement_spec.num_replicas)))
                for _ in range(placement_spec.num_partitions)
            )
        )
