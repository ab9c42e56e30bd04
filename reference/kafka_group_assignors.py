"""Kafka's KIP-848 server-side assignors run through the bridge, beside `reference.assignors.server`.

Runs, from kafka-group-coordinator's `org/apache/kafka/coordinator/group/assignor/`: `UniformAssignor.java`
(with `UniformHomogeneousAssignmentBuilder.java`, `UniformHeterogeneousAssignmentBuilder.java` and
`AssignorHelpers.java`) and `RangeAssignor.java` (with `RangeSet.java`), or any
`org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor` with a public no-arg
constructor on the bridge's classpath (a user's class: the `jvm:` assignors), through
`PartitionAssignor.assign(GroupSpec, SubscribedTopicDescriber)` on a fresh instance per call. The
class names are the same in every release the bridge knows (3.9 to 4.4), and no release's uniform or
range assignor reads a rack (members' or partitions'), though both are sent. The reference it is
compared with: `reference/assignors/server.py` (`UniformAssignor`, `RangeAssignor`).

    kafka = shared_bridge("4.4.0")
    kafka_group_assign(kafka, GROUP_ASSIGNOR_CLASSES["uniform"], spec, describer)  # == UniformAssignor().assign

Request word `G` (handler `reference/harness/KcheckGroupAssignors.java`, which documents the grammar):
the class name, the subscription type, every topic id the request mentions with its partition count
(-1: not in the metadata), its partitions' racks and the partitions `isPartitionAssigned` holds (our
`GroupSpec.inverted_assignment`), then each member in `GroupSpec.members` order (our `memberIds()`):
id, rack, instance id, subscribed topic ids and current assignment, each in our iteration order. The
harness implements Kafka's `GroupSpec` / `MemberSubscription` / `MemberAssignment` /
`SubscribedTopicDescriber` interfaces with insertion-ordered collections, so Kafka iterates exactly as
our reference does: what the coordinator's `HashMap`s would produce is the caller's choice
(`server.hash_map_order`, as `registry.ServerSideAdapter` does). A member's assignment is an
unmodifiable map, as the coordinator's is (Kafka's uniform assignor refuses any other).

Request word `GH` (`coordinator_collections=True`): the same, but the harness puts the members into a
`HashMap` in the order given, as the coordinator's `TargetAssignmentBuilder` does, and each member's
assignment into a `HashMap` of `HashSet`s, as `Assignment.fromRecord` does: Kafka then iterates in
Java's hash order, which our reference must reproduce with `server.hash_map_order` / `hash_set_order`.

The answer is `GroupAssignment.members()`: member id -> topic id -> partitions, our `GroupAssignment`.
A Java throw comes back as `JavaException(class name, message)`: raised by `kafka_group_assign`,
returned in place by `map_kafka_group_assign`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from kcheck.reference.assignors.server import GroupAssignment, GroupSpec, SubscribedTopicDescriber
from kcheck.reference.assignors.uuid import Uuid
from kcheck.reference.kafka_bridge import JavaException, KafkaBridge, decode_text, encode_text, parse_error

__all__ = ["COORDINATOR_WORD", "GROUP_ASSIGNOR_CLASSES", "WORD", "encode_request", "kafka_group_assign",
           "map_kafka_group_assign", "parse_answer"]

WORD = "G"
COORDINATOR_WORD = "GH"
GROUP_ASSIGNOR_CLASSES: dict[str, str] = {
    # The same package and names from 3.7 (KIP-848's first assignors) through 4.4.
    "uniform": "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
    "server-range": "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
}

Problem = tuple[GroupSpec, SubscribedTopicDescriber]


def _ints(xs) -> str:
    return ",".join(map(str, xs)) or "~"


_uuid_text = functools.lru_cache(maxsize=1 << 16)(str)  # Uuid.toString: base64 each time otherwise


def encode_request(
    assignor_class: str, group_spec: GroupSpec, describer: SubscribedTopicDescriber, word: str = WORD
) -> str:
    """One `G` line: the topic table (every topic id mentioned anywhere), then the members in order."""
    index: dict[Uuid, int] = {}
    for t in describer.partitions:
        index.setdefault(t, len(index))
    for t in describer.racks:
        index.setdefault(t, len(index))
    assert group_spec.inverted_assignment is not None
    for t in group_spec.inverted_assignment:
        index.setdefault(t, len(index))
    members = []
    for member_id, spec in group_spec.members.items():
        subscribed = _ints(index.setdefault(t, len(index)) for t in spec.subscribed_topic_ids)
        assignment = ";".join(f"{index.setdefault(t, len(index))}={_ints(ps)}" for t, ps in spec.assignment.items())
        members.append(f"{encode_text(member_id)}/{encode_text(spec.rack_id)}/{encode_text(spec.instance_id)}/"
                       f"{subscribed}/{assignment or '~'}")
    topics = []
    for t in index:
        racks = ";".join(f"{p}={','.join(map(encode_text, sorted(rs)))}"
                         for p, rs in describer.racks.get(t, {}).items() if rs)
        assigned = group_spec.inverted_assignment.get(t)
        assigned_token = _ints(assigned) if assigned else "~"
        topics.append(f"{_uuid_text(t)} {describer.num_partitions(t)} {racks or '~'} {assigned_token}")
    assert group_spec.subscription_type is not None
    return " ".join([word, encode_text(assignor_class), group_spec.subscription_type.value, str(len(index)),
                     *topics, *members])


@functools.lru_cache(maxsize=1 << 16)
def _uuid(token: str) -> Uuid:
    return Uuid.from_string(token)


@functools.lru_cache(maxsize=1 << 16)
def _member(token: str) -> str:
    return decode_text(token)  # type: ignore[return-value]  # a user's map may hold a null key


def parse_answer(line: str) -> GroupAssignment | JavaException:
    """`OK m:t=0,1;t2=~ m2:~` -> {m: {t: {0, 1}, t2: set()}, m2: {}}; `ERR ...` -> JavaException."""
    if line.startswith("ERR "):
        return parse_error(line)
    out: GroupAssignment = {}
    for item in line[3:].split():
        member, _, body = item.partition(":")
        topics: dict[Uuid, frozenset[int]] = {}
        if body != "~":
            for entry in body.split(";"):
                topic, _, ps = entry.partition("=")
                topics[_uuid(topic)] = frozenset() if ps == "~" else frozenset(map(int, ps.split(",")))
        out[_member(member)] = topics
    return out


def map_kafka_group_assign(
    bridge: KafkaBridge, assignor_class: str, problems: Sequence[Problem], *, coordinator_collections: bool = False
) -> list[GroupAssignment | JavaException]:
    """Each (group_spec, describer) through a fresh `assignor_class` instance, in one round trip
    (`coordinator_collections`: members and assignments in the coordinator's HashMaps, request `GH`)."""
    word = COORDINATOR_WORD if coordinator_collections else WORD
    bridge.require(word, "KIP-848 server-side assignors (ConsumerGroupPartitionAssignor)")
    answers = bridge.roundtrip([encode_request(assignor_class, spec, describer, word) for spec, describer in problems])
    return [parse_answer(a) for a in answers]


def kafka_group_assign(
    bridge: KafkaBridge, assignor_class: str, group_spec: GroupSpec, describer: SubscribedTopicDescriber
) -> GroupAssignment:
    """Kafka's answer to `UniformAssignor().assign(group_spec, describer)` (or RangeAssignor's) of our reference."""
    (out,) = map_kafka_group_assign(bridge, assignor_class, [(group_spec, describer)])
    if isinstance(out, JavaException):
        raise out
    return out
