"""Frozen values shared by every part of kcheck.

Names follow Kafka: a broker has an id and an optional rack (`broker.rack`); a
partition's replica list starts with its preferred leader; `NO_LEADER` is the
-1 that Kafka stores when a partition has no leader (`kafka-topics` prints
"none").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise

NO_LEADER = -1
# Kafka's ids, counts, epochs and generations are Java ints; replication factors are Java shorts.
INT32_MAX = 2**31 - 1
INT16_MAX = 2**15 - 1


@dataclass(frozen=True, order=True)
class Broker:
    """A broker as placement sees it: Kafka's `BrokerMetadata` / KRaft's `UsableBroker`."""

    id: int
    rack: str | None = None
    fenced: bool = False  # KRaft only: registered but fenced, never chosen as leader


@dataclass(frozen=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:  # Kafka's own rendering, e.g. "foo-0"
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class Cluster:
    """The brokers, in the order the caller lists them (AdminUtils does not sort them)."""

    brokers: tuple[Broker, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "brokers", tuple(self.brokers))
        seen: set[int] = set()
        for b in self.brokers:
            if b.id in seen:
                raise ValueError(f"broker {b.id} is listed twice")
            seen.add(b.id)

    @classmethod
    def of(
        cls,
        broker_ids: Iterable[int],
        racks: Mapping[int, str] | None = None,
        fenced: Iterable[int] = (),
    ) -> Cluster:
        racks = racks or {}
        fenced_set = set(fenced)
        return cls(tuple(Broker(i, racks.get(i), i in fenced_set) for i in broker_ids))

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(b.id for b in self.brokers)

    def broker(self, broker_id: int) -> Broker:
        for b in self.brokers:
            if b.id == broker_id:
                return b
        raise KeyError(broker_id)

    def rack_of(self, broker_id: int) -> str | None:
        return self.broker(broker_id).rack

    @property
    def rack_map(self) -> dict[int, str]:
        """broker id -> rack, for the brokers that have one."""
        return {b.id: b.rack for b in self.brokers if b.rack is not None}

    @property
    def racks(self) -> tuple[str, ...]:
        """Distinct racks, sorted by name as Kafka sorts them."""
        return tuple(sorted({b.rack for b in self.brokers if b.rack is not None}))

    @property
    def rack_layout(self) -> str:
        """'none' (no broker has a rack), 'full' (all have one) or 'mixed'."""
        with_rack = sum(b.rack is not None for b in self.brokers)
        if with_rack == 0:
            return "none"
        return "full" if with_rack == len(self.brokers) else "mixed"

    def brokers_by_rack(self) -> dict[str, tuple[int, ...]]:
        out: dict[str, list[int]] = {}
        for b in self.brokers:
            if b.rack is not None:
                out.setdefault(b.rack, []).append(b.id)
        return {r: tuple(sorted(ids)) for r, ids in sorted(out.items())}

    def __len__(self) -> int:
        return len(self.brokers)


@dataclass(frozen=True)
class PartitionReplicas:
    """One partition's replica list (first = preferred leader) and, when known, its live state."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int | None = None  # current leader when known; NO_LEADER when it has none
    isr: tuple[int, ...] | None = None
    adding: tuple[int, ...] = ()  # reassignment in progress: replicas being added ...
    removing: tuple[int, ...] = ()  # ... and removed
    log_dirs: tuple[str, ...] | None = None
    # KIP-966 (kafka-topics --describe from 3.8): the eligible leader replicas and the last known ones;
    # None when the source does not say (older releases print nothing, newer ones 'N/A' when ELR is off).
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    offline: tuple[int, ...] | None = None  # replicas on offline brokers or log dirs, when the source says

    def __post_init__(self) -> None:
        for name in ("replicas", "adding", "removing"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in ("isr", "log_dirs", "elr", "last_known_elr", "offline"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def preferred_leader(self) -> int | None:
        return self.replicas[0] if self.replicas else None

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """The replica set once an in-flight reassignment completes (RS minus the removing ones)."""
        if not self.removing:
            return self.replicas
        gone = set(self.removing)
        return tuple(r for r in self.replicas if r not in gone)


@dataclass(frozen=True)
class ReplicaAssignment:
    """Replica lists of one or more topics, kept sorted by (topic, partition).

    `replication_factors` holds a topic's declared replication factor where the
    source states one (the `ReplicationFactor:` of `kafka-topics --describe`).
    """

    partitions: tuple[PartitionReplicas, ...]
    replication_factors: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parts = tuple(sorted(self.partitions, key=lambda p: (p.topic, p.partition)))
        for a, b in pairwise(parts):
            if a.tp == b.tp:
                raise ValueError(f"partition {a.tp} is listed twice")
        object.__setattr__(self, "partitions", parts)
        object.__setattr__(self, "replication_factors", dict(self.replication_factors))

    @classmethod
    def from_placement(cls, topic: str, placement: Mapping[int, Sequence[int]]) -> ReplicaAssignment:
        """Wrap a placer's `partition -> replicas` result for one topic."""
        return cls(tuple(PartitionReplicas(topic, p, tuple(r)) for p, r in placement.items()))

    def __iter__(self) -> Iterator[PartitionReplicas]:
        return iter(self.partitions)

    def __len__(self) -> int:
        return len(self.partitions)

    @cached_property
    def _by_topic(self) -> dict[str, tuple[PartitionReplicas, ...]]:
        by_topic: dict[str, list[PartitionReplicas]] = {}
        for p in self.partitions:  # already sorted, so each topic's partitions come in order
            by_topic.setdefault(p.topic, []).append(p)
        return {t: tuple(ps) for t, ps in by_topic.items()}

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(self._by_topic)

    def of_topic(self, topic: str) -> tuple[PartitionReplicas, ...]:
        return self._by_topic.get(topic, ())

    def broker_ids(self) -> tuple[int, ...]:
        """Every broker id the assignment mentions, sorted."""
        ids: set[int] = set()
        for p in self.partitions:
            ids.update(p.replicas)
            ids.update(p.adding)
        return tuple(sorted(ids))

    def as_mapping(self, topic: str) -> dict[int, list[int]]:
        return {p.partition: list(p.replicas) for p in self.of_topic(topic)}
