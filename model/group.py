"""Consumer-group vocabulary: what a client-side assignor receives, as Kafka's classes carry it.

`PartitionInfo` mirrors `org.apache.kafka.common.PartitionInfo` (replicas as brokers, so
their racks are known); `Subscription` mirrors `ConsumerPartitionAssignor.Subscription`.
An assignor's inputs are Python dicts standing for the Java HashMaps the caller built,
in insertion order; the reference derives Java's iteration order itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from kcheck.model.vocabulary import Broker, TopicPartition


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: Broker | None = None
    replicas: tuple[Broker, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "replicas", tuple(self.replicas))

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class Subscription:
    """One member's subscription as the group leader's assignor sees it."""

    topics: tuple[str, ...]  # in the member's order (Kafka: a List)
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int | None = None  # Optional<Integer>; None when absent
    rack_id: str | None = None  # Optional<String> client.rack
    group_instance_id: str | None = None  # static membership

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", tuple(self.topics))
        object.__setattr__(self, "owned_partitions", tuple(self.owned_partitions))
