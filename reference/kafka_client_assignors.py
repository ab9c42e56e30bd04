"""Kafka's client-side (classic protocol) assignors run through the bridge, beside `reference.assignors`.

Runs, from kafka-clients' `org/apache/kafka/clients/consumer/`: `RangeAssignor`, `RoundRobinAssignor`,
`StickyAssignor` and `CooperativeStickyAssignor` (with `internals/AbstractPartitionAssignor.java` and
`internals/AbstractStickyAssignor.java` under them), or any `ConsumerPartitionAssignor` with a public
no-arg constructor on the bridge's classpath (a user's class: the `jvm:` assignors), through
`ConsumerPartitionAssignor.assign(Cluster, GroupSubscription)` on a fresh instance per call. The
reference it is compared with: `reference/assignors/client.py` and `reference/assignors/sticky.py`.

    kafka = shared_bridge("4.4.0")
    kafka_assign(kafka, CLIENT_ASSIGNOR_CLASSES["sticky"], metadata, subscriptions)  # == StickyAssignor().assign

Request word `C` (handler `reference/harness/KcheckClientAssignors.java`, which documents the grammar):
the class name, every `PartitionInfo` of the metadata (topic, partition, leader and replicas with their
racks; ISR and offline replicas empty) for a `Cluster`, and per member, in the subscriptions' dict order
(the order the leader's `HashMap` is filled in): member id, topics, user data bytes (exactly ours, e.g.
`sticky.serialize_topic_partition_assignment`), owned partitions, generation (None is Kafka's
`DEFAULT_GENERATION`, -1: `generationId()` empty), rack id and group instance id. The answer is each
member's partitions in the order of Kafka's `Assignment` list; a Java throw comes back as
`JavaException(class name, message)`: raised by `kafka_assign`, returned in place by `map_kafka_assign`.

Request word `CW` (`wire=True`): the same, but each `Subscription` first goes through
`ConsumerProtocol.serializeSubscription` / `deserializeSubscription` (`consumer/internals/ConsumerProtocol.java`),
as the group leader decodes the JoinGroup metadata: topics sorted, owned partitions sorted by topic and
partition, an empty rack absent, a negative generation -1; then the group instance id is set.
A Configurable assignor is configured with an empty map (as `getAssignorInstances` would, without the
consumer's configs). Exceptions the JVM throws implicitly may come back with message "null" once
HotSpot has compiled their site (OmitStackTraceInFastThrow).

Request word `CU` (`kafka_user_data`): the user data a member's assignor sends in its JoinGroup
(`subscriptionUserData`), after `onAssignment(partitions, generation)` as `ConsumerCoordinator` calls it:
Kafka's own bytes, e.g. StickyAssignor's `serializeTopicPartitionAssignment` of its last assignment.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from kcheck.model import Broker, PartitionInfo, Subscription, TopicPartition
from kcheck.reference.kafka_bridge import JavaException, KafkaBridge, decode_text, encode_text, parse_error

__all__ = ["CLIENT_ASSIGNOR_CLASSES", "USER_DATA_WORD", "WIRE_WORD", "WORD", "encode_request", "kafka_assign",
           "kafka_user_data", "map_kafka_assign", "map_kafka_user_data", "parse_answer"]

WORD = "C"
WIRE_WORD = "CW"
USER_DATA_WORD = "CU"
CLIENT_ASSIGNOR_CLASSES: dict[str, str] = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}

Assignment = dict[str, list[TopicPartition]]
Metadata = Mapping[str, Sequence[PartitionInfo]]
Subscriptions = Mapping[str, Subscription]


def _broker(b: Broker) -> str:
    return f"{b.id}/{encode_text(b.rack)}"


def _tps(tps: Sequence[TopicPartition]) -> str:
    return ",".join(f"{encode_text(tp.topic)}/{tp.partition}" for tp in tps) or "~"


def _member(member_id: str, s: Subscription) -> str:
    topics = ",".join(map(encode_text, s.topics)) or "~"
    data = "-" if s.user_data is None else (s.user_data.hex() or "_")
    generation = -1 if s.generation_id is None else s.generation_id
    return (f"{encode_text(member_id)}:{topics}:{data}:{_tps(s.owned_partitions)}:{generation}:"
            f"{encode_text(s.rack_id)}:{encode_text(s.group_instance_id)}")


def encode_request(assignor_class: str, metadata: Metadata, subscriptions: Subscriptions, wire: bool = False) -> str:
    """One `C` (or `CW`) line. Each PartitionInfo keeps its own topic, as a `Cluster` built from it would."""
    parts = [
        f"{encode_text(p.topic)}:{p.partition}:{'-' if p.leader is None else _broker(p.leader)}:"
        f"{','.join(map(_broker, p.replicas)) or '~'}"
        for infos in metadata.values() for p in infos
    ]
    members = [_member(m, s) for m, s in subscriptions.items()]
    word = WIRE_WORD if wire else WORD
    return " ".join([word, encode_text(assignor_class), str(len(parts)), *parts, str(len(members)), *members])


@functools.lru_cache(maxsize=1 << 16)
def _topic(token: str) -> str:
    topic = decode_text(token)
    assert topic is not None  # KcheckCodec.encodeText of TopicPartition.topic(), never null
    return topic


def _decode_tps(token: str) -> list[TopicPartition]:
    if token == "~":
        return []
    out = []
    for item in token.split(","):
        topic, _, partition = item.rpartition("/")
        out.append(TopicPartition(_topic(topic), int(partition)))
    return out


def parse_answer(line: str) -> Assignment | JavaException:
    """`OK m=t/p,t/p m2=~` -> {m: [...], m2: []}; `ERR ...` -> JavaException."""
    if line.startswith("ERR "):
        return parse_error(line)
    out: Assignment = {}
    for item in line[3:].split():
        member, _, tps = item.partition("=")
        out[decode_text(member)] = _decode_tps(tps)  # type: ignore[index]  # a user's map may hold a null key
    return out


def map_kafka_assign(
    bridge: KafkaBridge,
    assignor_class: str,
    problems: Sequence[tuple[Metadata, Subscriptions]],
    *,
    wire: bool = False,
) -> list[Assignment | JavaException]:
    """Each (metadata, subscriptions) through a fresh `assignor_class` instance, in one round trip
    (`wire`: the subscriptions as the leader decodes them from JoinGroup metadata)."""
    bridge.require(WIRE_WORD if wire else WORD, "client-side assignors (ConsumerPartitionAssignor)")
    answers = bridge.roundtrip([encode_request(assignor_class, md, subs, wire) for md, subs in problems])
    return [parse_answer(a) for a in answers]


def kafka_assign(
    bridge: KafkaBridge,
    assignor_class: str,
    metadata: Metadata,
    subscriptions: Subscriptions,
    *,
    wire: bool = False,
) -> Assignment:
    """Kafka's answer to `AbstractPartitionAssignor.assign(metadata, subscriptions)` of our reference."""
    (out,) = map_kafka_assign(bridge, assignor_class, [(metadata, subscriptions)], wire=wire)
    if isinstance(out, JavaException):
        raise out
    return out


def map_kafka_user_data(
    bridge: KafkaBridge,
    assignor_class: str,
    states: Sequence[tuple[Sequence[TopicPartition], int | None]],
    topics: Sequence[str] = (),
) -> list[bytes | None | JavaException]:
    """Per (assigned partitions, generation): what a fresh `assignor_class` instance sends as user data after
    `onAssignment` (a generation of None: no `onAssignment`, a fresh client), subscribing to `topics`."""
    bridge.require(USER_DATA_WORD, "client-side assignors' user data (ConsumerPartitionAssignor)")
    topic_token = ",".join(map(encode_text, topics)) or "~"
    lines = [f"{USER_DATA_WORD} {encode_text(assignor_class)} {'-' if g is None else g} {_tps(tps)} {topic_token}"
             for tps, g in states]
    out: list[bytes | None | JavaException] = []
    for line in bridge.roundtrip(lines):
        if line.startswith("ERR "):
            out.append(parse_error(line))
            continue
        token = line[3:]
        out.append(None if token == "-" else b"" if token == "_" else bytes.fromhex(token))
    return out


def kafka_user_data(
    bridge: KafkaBridge,
    assignor_class: str,
    partitions: Sequence[TopicPartition],
    generation: int | None,
    topics: Sequence[str] = (),
) -> bytes | None:
    """Kafka's `subscriptionUserData` after `onAssignment(partitions, generation)` (see map_kafka_user_data)."""
    (out,) = map_kafka_user_data(bridge, assignor_class, [(partitions, generation)], topics)
    if isinstance(out, JavaException):
        raise out
    return out
