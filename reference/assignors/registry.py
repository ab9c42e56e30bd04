"""Assignors by name, all behind the client-side signature, so every engine can run any of them.

Every built-in assignor has Kafka's `ConsumerPartitionAssignor.assign(Cluster, GroupSubscription)` as
`assign(metadata, subscriptions) -> {member: [TopicPartition]}` (`metadata`: topic -> its `PartitionInfo`s)
and `AbstractPartitionAssignor.assignPartitions` as `assign_partitions(partitions_per_topic, subscriptions)`;
the client ones also have the partition-count form `assign(Map<String, Integer>, ...)` as
`assign_partition_counts`. The engines call `assign_partitions`, the one method a user's assignor needs.
The KIP-848 server-side assignors take a `GroupSpec` instead; `ServerSideAdapter` builds one the way
the group coordinator does (members in `HashMap` order of their ids, a member's owned partitions as
its current assignment) and turns the result back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kcheck.model import PartitionInfo, Subscription, TopicPartition
from kcheck.reference import plugins
from kcheck.reference.assignors import server
from kcheck.reference.assignors.client import RangeAssignor, RoundRobinAssignor
from kcheck.reference.assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from kcheck.reference.assignors.uuid import Uuid
from kcheck.reference.placers import load_object


class ClientAssignor(Protocol):
    """What the models call: only assign_partitions (a user's assignor needs nothing else; the names differ:
    Kafka's `name()` method in client.py and server.py, a `name` attribute in sticky.py)."""

    def assign_partitions(
        self, partitions_per_topic: Mapping[str, Sequence[PartitionInfo]], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]: ...


def topic_id_for(topic: str) -> Uuid:
    """A stable stand-in for the random topic id Kafka gives a topic: the name's SHA-256, first 16 bytes.

    Server-side outputs depend on topic ids (HashSet<Uuid> order, signed Uuid order), so
    runs stay reproducible; pass real ids to `ServerSideAdapter(topic_ids=...)` to match a cluster.
    """
    digest = hashlib.sha256(topic.encode()).digest()
    return Uuid.of_unsigned(int.from_bytes(digest[:8], "big"), int.from_bytes(digest[8:16], "big"))


def subscribed_topic_metadata(
    metadata: Mapping[str, Sequence[PartitionInfo]], subscriptions: Mapping[str, Subscription]
) -> dict[str, list[PartitionInfo]]:
    """The topics (sorted by name) some member subscribes to and that have metadata, as a KIP-848 group
    coordinator hands them to its assignor through `SubscribedTopicDescriber`."""
    subscribed = sorted({t for s in subscriptions.values() for t in s.topics})
    return {t: list(metadata[t]) for t in subscribed if t in metadata}


class ServerSideAdapter:
    """A KIP-848 assignor (`server.UniformAssignor`, `server.RangeAssignor`) behind the client signature."""

    def __init__(self, assignor: Any, topic_ids: Mapping[str, Uuid] | None = None) -> None:
        self.assignor = assignor
        self.topic_ids = dict(topic_ids or {})

    def name(self) -> str:
        return self.assignor.name()

    def _id(self, topic: str) -> Uuid:
        topic_id = self.topic_ids.get(topic)
        if topic_id is None:  # not setdefault(topic, topic_id_for(topic)): that hashes the name on every call
            topic_id = self.topic_ids[topic] = topic_id_for(topic)
        return topic_id

    def assign(
        self, metadata: Mapping[str, Sequence[PartitionInfo]], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        """The client signature: the coordinator describes only the topics some member subscribes to."""
        return self.assign_partitions(subscribed_topic_metadata(metadata, subscriptions), subscriptions)

    def assign_partitions(
        self, partitions_per_topic: Mapping[str, Sequence[PartitionInfo]], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        names = {self._id(t): t for t in partitions_per_topic}
        members = {}
        for member_id, sub in subscriptions.items():
            owned: dict[Uuid, list[int]] = {}
            for tp in sub.owned_partitions:
                owned.setdefault(self._id(tp.topic), []).append(tp.partition)
            members[member_id] = server.MemberSubscriptionSpec(
                tuple(self._id(t) for t in sub.topics if t in partitions_per_topic),
                sub.rack_id, sub.group_instance_id,
                # As the coordinator holds a target assignment (Assignment.fromRecord): a HashMap of HashSets.
                server.hash_map_order({t: server.hash_set_order(ps) for t, ps in owned.items()}))
        # The coordinator's TargetAssignmentBuilder collects member specs in a HashMap keyed by member id.
        spec = server.GroupSpec(server.hash_map_order(members))
        racks = {self._id(t): {p.partition: frozenset(b.rack for b in p.replicas if b.rack) for p in parts}
                 for t, parts in partitions_per_topic.items()}
        describer = server.SubscribedTopicDescriber(
            {self._id(t): len(parts) for t, parts in partitions_per_topic.items()}, racks)
        result = self.assignor.assign(spec, describer)
        out: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        for member_id, by_topic in result.items():
            out[member_id] = sorted((TopicPartition(names[t], p) for t, ps in by_topic.items() for p in ps),
                                    key=lambda tp: (tp.topic, tp.partition))
        return out


@dataclass(frozen=True)
class AssignorInfo:
    name: str
    factory: Callable[[], ClientAssignor]  # a fresh instance: Kafka's assignors keep state between calls
    cooperative: bool  # the cooperative protocol: revoke in one rebalance, assign in the next
    # Invariant ids Kafka documents or tests for this assignor; a violation of one is a bug,
    # of any other a finding (as with placers).
    guarantees: frozenset[str]


_BASE = frozenset({"assignment.complete", "assignment.valid"})
ASSIGNORS: dict[str, AssignorInfo] = {
    "range": AssignorInfo("range", RangeAssignor, False, _BASE),
    "roundrobin": AssignorInfo("roundrobin", RoundRobinAssignor, False, _BASE),
    "sticky": AssignorInfo("sticky", StickyAssignor, False, _BASE | {"assignment.balanced"}),
    "cooperative-sticky": AssignorInfo("cooperative-sticky", CooperativeStickyAssignor, True,
                                       _BASE | {"assignment.balanced", "assignment.cooperative-safety"}),
    "uniform": AssignorInfo("uniform", lambda: ServerSideAdapter(server.UniformAssignor()), False,
                            _BASE | {"assignment.balanced"}),
    "server-range": AssignorInfo("server-range", lambda: ServerSideAdapter(server.RangeAssignor()), False, _BASE),
}


def resolve_assignor(name: str) -> AssignorInfo:
    """A built-in assignor by name, `module:object` (a class or factory of an object with assign_partitions), or
    `jvm:<class>`: a Java ConsumerPartitionAssignor or KIP-848 ConsumerGroupPartitionAssignor (`jvm_plugins`)."""
    if name in ASSIGNORS:
        return ASSIGNORS[name]
    if name.startswith("jvm:"):
        from kcheck.reference import jvm_plugins

        jvm = jvm_plugins.resolve_assignor(name)
        if jvm.server_side:
            return AssignorInfo(name, lambda: ServerSideAdapter(jvm.factory()), False, frozenset())
        return AssignorInfo(name, jvm.factory, jvm.cooperative, frozenset())
    if ":" not in name:
        raise ValueError(f"unknown assignor '{name}' (expected one of {', '.join(ASSIGNORS)}, or module:object)")
    obj = load_object(name)
    if isinstance(obj, AssignorInfo):
        return obj
    if not callable(obj):
        raise ValueError(f"'{name}' is not a class or factory of assignors (kcheck expected "
                         f"{plugins.ASSIGNOR_SIGNATURE})")
    plugins.takes(name, obj, 0, plugins.ASSIGNOR_SIGNATURE)
    probe = plugins.call(name, obj)  # the user's constructor: sys.exit or an exception in it is its failure
    if not callable(getattr(probe, "assign_partitions", None)):
        raise ValueError(f"'{name}' does not make objects with assign_partitions(partitions_per_topic, subscriptions)")
    plugins.takes(name, probe.assign_partitions, 2, plugins.ASSIGNOR_SIGNATURE, "assign_partitions")
    cooperative, guarantees = declarations(name, probe)

    def factory() -> ClientAssignor:
        return plugins.guard_exits(name, plugins.call(name, obj), ("assign_partitions",))

    return AssignorInfo(name, factory, cooperative, guarantees)


COOPERATIVE_SAFETY = "assignment.cooperative-safety"
# Every assignment invariant (invariants/assignment.py registers one check under each id): what an assignor may
# declare it guarantees. Named here, below the invariants, so that a declaration is checked without importing them
# (tests/test_layering.py checks that the two agree).
ASSIGNMENT_INVARIANTS = ("assignment.complete", "assignment.valid", "assignment.balanced",
                         "assignment.optimally-balanced", "assignment.sticky", COOPERATIVE_SAFETY,
                         "assignment.rack-quality")


def declarations(name: str, assignor: object) -> tuple[bool, frozenset[str]]:
    """What a user's assignor declares about itself, as attributes of its class (or instance):

    - `cooperative = True`: it speaks KIP-429's cooperative protocol (as a Java assignor whose
      `supportedProtocols()` lists COOPERATIVE): members keep what they own while they rebalance, so it must
      never give a partition to a new owner in the round its owner gives it up (`assignment.cooperative-safety`,
      then one of its guarantees), and the engines run the follow-up rounds;
    - `guarantees = ("assignment.balanced", ...)`: assignment invariants that must hold for it: a violation
      is a failure (exit 1) rather than a finding. `kcheck invariants` lists the ids; the `assignment.` prefix may
      be left out.

    Undeclared: an eager assignor held to the hard invariants only. A malformed declaration is a ValueError (one
    line, exit 2)."""
    cooperative = getattr(assignor, "cooperative", False)
    if not isinstance(cooperative, bool):
        raise ValueError(f"'{name}' declares cooperative = {cooperative!r}; kcheck expected True or False")
    declared = getattr(assignor, "guarantees", ())
    if isinstance(declared, str) or not isinstance(declared, Collection):
        raise ValueError(f"'{name}' declares guarantees = {declared!r}; kcheck expected a tuple of assignment "
                         "invariant ids, e.g. ('assignment.balanced', 'assignment.sticky')")
    known = sorted(ASSIGNMENT_INVARIANTS)
    ids = set()
    for g in declared:
        full = g if isinstance(g, str) and g.startswith("assignment.") else f"assignment.{g}"
        if full not in known:
            raise ValueError(f"'{name}' declares the guarantee {g!r}, which is not an assignment invariant "
                             f"(one of {', '.join(known)})")
        ids.add(full)
    return cooperative, frozenset(ids | ({COOPERATIVE_SAFETY} if cooperative else set()))
