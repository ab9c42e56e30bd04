"""The consumer-group configuration space: every small group, one group event, every assignor.

A configuration is a group as the rebalance model (`invariants/rebalance.py`) runs it, cut to one
event: topics with partition counts and replica racks, an earlier membership (members in join
order, each with a subscription and `client.rack`), one group event (a member joins, leaves or
changes its subscription, a topic gains partitions, or a member's session times out, the group
rebalances without it and it rejoins with its old client state and a subscription of the space, with
`rejoin-join` while a new member joins too) and the assignor. `evaluate` runs, through
the rebalance model's `ConsumerGroup` (so every protocol behaves as there: an eager member revokes
everything before it rejoins, a cooperative one the partitions of topics it dropped, a KIP-848
member keeps its current assignment as owned partitions; sticky members send their user data;
the leader's assignor instance computes), the assignor on the earlier membership from scratch
(round 1), applies the event, and rebalances again with round 1's assignment as each member's
owned partitions (round 2, with a cooperative assignor's follow-up rounds while members revoke; a
rejoin event has two rebalances, the one after the time-out and the one after the rejoin).
Every applicable assignment invariant is checked on every round, and the cooperative hand-over
between consecutive rounds with `check_two_rounds`; a cooperative rebalance's stickiness is also
checked as a whole, from the ownership before it to its settled assignment (`check_settled`).

Ids: the assignor is the fastest-varying dimension, so `len(space)` = group configurations x
assignors and every assignor is checked on every group configuration. Groups come in shapes
(earlier member count, partition counts per topic, rack layout) ordered small to large by members
+ partitions, then members, topics, partition counts, layout; within a shape the membership varies
slowest (members c1, c2, ... as digits over (subscription, rack) choices), then the event.

A config violates an invariant when any of its rounds does. Besides the registry's invariants,
every config checks `assignment.assignor-error` (hard; like the placement space's placer error): the
assignor threw (Kafka's would fail the rebalance at the group leader), a user's assignor returned
something that is not member -> [TopicPartition], or a cooperative group was still revoking after
`MAX_FOLLOW_UPS` follow-up rebalances. The rounds after a failed one are not run or checked.
A rejoin event also records the rebalance model's stale-claim findings (soft, never a failure; see
`invariants/rebalance.py` for why): `assignment.stale-claim`, StickyAssignor hands the rejoining member
a partition of a topic it dropped that its old user data claims, and `assignment.stale-claim-npe`, it
throws a NullPointerException for such a claim; each with the group file that replays the failing
rebalance in `kcheck assign`.

Result keys are `"<assignor>/<invariant id>"` (see `invariant_info`): an invariant that is hard in
the registry or that Kafka guarantees for the assignor (`AssignorInfo.guarantees`) is a failure
when violated; any other violation is a soft finding about Kafka, as in `kcheck check`.

The built-in assignors run as one Kafka release, `GroupSpace(kafka_version=...)` (default the newest):
`reference/releases.py` `ReleaseProfile.assignor` (the KIP-848 uniform assignor's +1 slots moved in 4.0.1,
KAFKA-18688). The release is part of the store's fingerprint (`settings`). Before 4.0.0 the uniform
assignor's heterogeneous builder is not modelled (KAFKA-17710 rewrote it), so such a release leaves
`uniform` out of the default assignors and refuses it by name.
"""

from __future__ import annotations

import copy
import itertools
import operator
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from kcheck.invariants.assignment import AssignmentSubject
from kcheck.invariants.rebalance import (
    STALE_CLAIM_KINDS,
    ConsumerGroup,
    Finding,
    ModelFailure,
    Round,
    protocol_of,
)
from kcheck.invariants.registry import Invariant, Report, Severity, Violation, fails_when_violated, invariants_for
from kcheck.model.group import PartitionInfo
from kcheck.model.vocabulary import Broker, TopicPartition
from kcheck.reference.assignors.registry import ASSIGNORS, AssignorInfo, resolve_assignor
from kcheck.reference.errors import KafkaError
from kcheck.reference.plugins import PluginError, assignment_problem
from kcheck.reference.releases import DEFAULT_VERSION, profile
from kcheck.spark_check.batch import BatchResult, FirstViolation
from kcheck.spark_check.groups_fast import FastChecks

EVENTS = ("join", "leave", "subscribe", "add-partitions", "rejoin", "rejoin-join")
# rejoin-join (a new member joins in the rejoin's rebalance) multiplies the default space by about 3: opt-in.
DEFAULT_EVENTS = EVENTS[:-1]
SUBSCRIPTION_PATTERNS = ("equal", "nested", "any")
MAX_MEMBERS, MAX_TOPICS, MAX_PARTITIONS = 12, 6, 64  # far beyond any sweep; a typo should not look like a hang


# --- bounds -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class RackLayout:
    """Where the replicas are: `racks` racks (0: no racks) of two brokers each, `replication` replicas a partition.

    Broker b is in rack r{b % racks}; replica j of partition i of the x-th topic is on broker
    (i + j + x) % brokers, as the rebalance model lays replicas out, so a partition spans
    min(replication, racks) consecutive racks. Assignors only read the racks (KIP-881); with every
    partition on every rack (replication >= racks) Kafka turns rack-aware assignment off.
    """

    racks: int = 0
    replication: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.racks <= 8:
            raise ValueError(f"rack layout {self.text}: the rack count must be 0 to 8")
        if self.racks and not 1 <= self.replication <= self.brokers:
            raise ValueError(f"rack layout {self.text}: the replication factor must be 1 to {self.brokers} "
                             f"({self.brokers} brokers in {self.racks} racks)")

    @property
    def brokers(self) -> int:
        return 2 * self.racks

    @property
    def rack_names(self) -> tuple[str, ...]:
        return tuple(f"r{i}" for i in range(self.racks))

    @property
    def text(self) -> str:
        return f"{self.racks}/{self.replication}" if self.racks else "none"

    @classmethod
    def parse(cls, text: str) -> RackLayout:
        text = text.strip()
        if text in ("none", "0"):
            return cls()
        racks, sep, rf = text.partition("/")
        try:
            return cls(int(racks), int(rf) if sep else 1)
        except ValueError as e:
            if "rack layout" in str(e):
                raise
            raise ValueError(f"rack layout '{text}' is not 'none' or RACKS/REPLICATION like '3/2'") from None

    def replicas(self, topic_index: int, partition: int) -> tuple[Broker, ...]:
        if not self.racks:
            return ()
        n = self.brokers
        return tuple(Broker(b, f"r{b % self.racks}")
                     for b in ((partition + j + topic_index) % n for j in range(self.replication)))


@dataclass(frozen=True)
class GroupBounds:
    """What the space enumerates. Members, topics and partitions count from 1 up to the maxima.
    The defaults are the `default` preset."""

    max_members: int = 4  # in the earlier membership (a join adds one more)
    max_topics: int = 2
    max_partitions: int = 6  # per topic, before partitions are added
    # Subscriptions a member may have: "equal" (every topic), "nested" (t1; t1,t2; ...), "any" (every non-empty set)
    subscriptions: str = "any"
    racks: tuple[RackLayout, ...] = (RackLayout(), RackLayout(2, 1))
    rackless_members: bool = False  # in a racked layout, may a member also have no client.rack?
    events: tuple[str, ...] = DEFAULT_EVENTS
    max_added: int = 1  # a partitions-added event adds 1..max_added partitions to one topic

    def __post_init__(self) -> None:
        for name, lo, hi in (("max_members", 1, MAX_MEMBERS), ("max_topics", 1, MAX_TOPICS),
                             ("max_partitions", 1, MAX_PARTITIONS), ("max_added", 1, MAX_PARTITIONS)):
            value = getattr(self, name)
            if type(value) is not int or not lo <= value <= hi:
                raise ValueError(f"group bounds: {name} must be an integer from {lo} to {hi}, got {value!r}")
        if self.subscriptions not in SUBSCRIPTION_PATTERNS:
            raise ValueError(f"group bounds: subscriptions must be one of {', '.join(SUBSCRIPTION_PATTERNS)}, "
                             f"got {self.subscriptions!r}")
        if not self.racks or len(set(self.racks)) != len(self.racks):
            raise ValueError("group bounds: racks must list distinct rack layouts (none, or RACKS/REPLICATION)")
        object.__setattr__(self, "racks", tuple(sorted(self.racks)))
        unknown = [e for e in self.events if e not in EVENTS]
        if unknown or not self.events or len(set(self.events)) != len(self.events):
            raise ValueError(f"group bounds: events must be distinct names among {', '.join(EVENTS)}, "
                             f"got {', '.join(self.events) or 'none'}")
        object.__setattr__(self, "events", tuple(e for e in EVENTS if e in self.events))  # canonical order

    def as_text(self) -> str:
        """The key=value form `parse_group_bounds` reads back (every key, so it is the bounds' fingerprint)."""
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "racks":
                value = ",".join(layout.text for layout in value)
            elif f.name == "events":
                value = ",".join(value)
            elif isinstance(value, bool):
                value = str(value).lower()
            parts.append(f"{f.name}={value}")
        return ",".join(parts)

    def group_count(self) -> int:
        """Group configurations within the bounds (ids are this times the number of assignors)."""
        return _Tables(self).total


# Sizes (group configurations; ids are these x the assignors, x 6 for the built-in ones) are in the README;
# tests/test_sweep_groups.py derives them independently.
GROUP_PRESETS: dict[str, GroupBounds] = {
    # 2,800 groups: seconds, for tests
    "small": GroupBounds(max_members=2, max_topics=2, max_partitions=2, racks=(RackLayout(), RackLayout(2, 1))),
    # 1,154,334 groups: the main job
    "default": GroupBounds(),
    # 124,836,444 groups: for a cluster
    "large": GroupBounds(max_members=4, max_topics=3, max_partitions=4, racks=(RackLayout(), RackLayout(2, 1))),
}

_INT_KEYS = ("max_members", "max_topics", "max_partitions", "max_added")
_LIST_KEYS = ("racks", "events")


def parse_group_bounds(text: str) -> GroupBounds:
    """`small`, `default`, `large`, or `[preset,]key=value,...`: overrides start from the preset named first,
    else from `default`.

    List values continue over commas: `small,max_members=3,racks=none,3/2,events=join,leave`. Raises
    ValueError with one line naming the part at fault.
    """
    parts = [p.strip() for p in text.split(",")]
    if not any(parts):
        raise ValueError(f"empty group space (expected {', '.join(GROUP_PRESETS)}, or bounds such as max_members=3)")
    base = GROUP_PRESETS["default"]
    if "=" not in parts[0]:
        if parts[0] not in GROUP_PRESETS:
            raise ValueError(f"group space '{parts[0]}' is neither a preset ({', '.join(GROUP_PRESETS)}) "
                             "nor key=value bounds")
        base = GROUP_PRESETS[parts.pop(0)]
    kwargs = {key: _bound_value(key, items) for key, items in _bound_values(parts).items()}
    return GroupBounds(**{f.name: kwargs.get(f.name, getattr(base, f.name)) for f in fields(GroupBounds)})


def _bound_values(parts: list[str]) -> dict[str, list[str]]:
    """key=value tokens as key -> its values (a list key's values continue over the commas after it)."""
    known = [f.name for f in fields(GroupBounds)]
    values: dict[str, list[str]] = {}
    key = None
    for token in parts:
        if "=" in token:
            key, _, value = token.partition("=")
            key = key.strip().replace("-", "_")
            if key not in known:
                raise ValueError(f"group space: unknown key '{key}' (expected {', '.join(known)})")
            if key in values:
                raise ValueError(f"group space: '{key}' is given twice")
            values[key] = [value.strip()]
        elif key in _LIST_KEYS and token:
            values[key].append(token)
        else:
            raise ValueError(f"group space: '{token}' is not key=value" + (f" ({key} takes one value)" if key else ""))
    return values


def _bound_value(key: str, items: list[str]) -> Any:
    """The GroupBounds field `key` from its values as written."""
    if key in _INT_KEYS:
        try:
            return int(items[0])
        except ValueError:
            raise ValueError(f"group space: {key} must be an integer, got '{items[0]}'") from None
    if key == "rackless_members":
        if items[0].lower() not in ("true", "false", "yes", "no", "1", "0"):
            raise ValueError(f"group space: rackless_members must be true or false, got '{items[0]}'")
        return items[0].lower() in ("true", "yes", "1")
    if key == "racks":
        return tuple(RackLayout.parse(t) for t in items)
    if key == "events":
        return tuple(items)
    return items[0]


# --- configurations ---------------------------------------------------------------------------------------


def _topics(topics: Sequence[str]) -> str:
    return "[" + ", ".join(topics) + "]"


@dataclass(frozen=True)
class GroupMember:
    name: str
    topics: tuple[str, ...]
    rack: str | None = None


@dataclass(frozen=True)
class GroupEvent:
    kind: str  # one of EVENTS
    member: str | None = None  # join, leave, subscribe, rejoin
    topics: tuple[str, ...] = ()  # join, subscribe, rejoin: the new subscription
    rack: str | None = None  # join
    topic: str | None = None  # add-partitions
    count: int = 0  # add-partitions: how many
    joiner: GroupMember | None = None  # rejoin-join: the member joining in the rejoin's rebalance

    @property
    def text(self) -> str:
        if self.kind == "join":
            return f"{self.member} joins subscribing {_topics(self.topics)}" + (f" in rack {self.rack}"
                                                                                 if self.rack else "")
        if self.kind == "leave":
            return f"{self.member} leaves"
        if self.kind == "subscribe":
            return f"{self.member} subscribes to {_topics(self.topics)}"
        if self.kind in ("rejoin", "rejoin-join"):
            text = (f"{self.member}'s session times out, the group rebalances without it, and it rejoins "
                    f"subscribing to {_topics(self.topics)} with its client's state")
            if self.joiner is not None:
                text += f", as {self.joiner.name} joins subscribing {_topics(self.joiner.topics)}" + (
                    f" in rack {self.joiner.rack}" if self.joiner.rack else "")
            return text
        return f"{self.topic} gains {self.count} partition{'s' if self.count > 1 else ''}"

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind in ("join", "leave", "subscribe", "rejoin", "rejoin-join"):
            out["member"] = self.member
        if self.kind in ("join", "subscribe", "rejoin", "rejoin-join"):
            out["topics"] = list(self.topics)
        if self.joiner is not None:
            out["joiner"] = {"member": self.joiner.name, "topics": list(self.joiner.topics), "rack": self.joiner.rack}
        if self.kind == "join":
            out["rack"] = self.rack
        if self.kind == "add-partitions":
            out |= {"topic": self.topic, "count": self.count}
        return out | {"text": self.text}


@dataclass(frozen=True)
class GroupConfig:
    """One configuration: the earlier membership, one event, and the assignor that runs both rebalances."""

    id: int
    assignor: str
    partitions: tuple[int, ...]  # topic t{x+1} has partitions[x] partitions before the event
    layout: RackLayout
    members: tuple[GroupMember, ...]  # the earlier membership, in join order (c1 is the leader)
    event: GroupEvent

    @property
    def topics(self) -> dict[str, int]:
        return {f"t{x + 1}": n for x, n in enumerate(self.partitions)}

    @property
    def topics_after(self) -> dict[str, int]:
        out = self.topics
        if self.event.kind == "add-partitions":
            assert self.event.topic is not None  # add-partitions names its topic
            out[self.event.topic] += self.event.count
        return out

    def _topics_json(self, counts: Mapping[str, int]) -> dict[str, Any]:
        if not self.layout.racks:
            return dict(counts)
        return {t: {"partitions": n, "racks": [[b.rack for b in self.layout.replicas(x, i)] for i in range(n)]}
                for x, (t, n) in enumerate(counts.items())}

    def describe(self) -> dict[str, Any]:
        """JSON a Kafka engineer can read. `topics` and `members` are a `kcheck assign` group file of round 1."""
        layout = "no racks" if not self.layout.racks else (
            f"{self.layout.brokers} brokers in racks {', '.join(self.layout.rack_names)}, "
            f"replication factor {self.layout.replication}")
        story = [f"topics {', '.join(f'{t} ({n})' for t, n in self.topics.items())}; {layout}"]
        story += [f"{m.name} joins subscribing {_topics(m.topics)}" + (f" in rack {m.rack}" if m.rack else "")
                  for m in self.members]
        story += [f"rebalance (round 1, generation 1): {self.assignor} assigns from scratch", self.event.text,
                  "rebalance (round 2, generation 2): owned partitions from round 1"
                  + (", and follow-up rounds while members revoke" if self._cooperative() else "")]
        ev = self.event
        if ev.kind in ("rejoin", "rejoin-join"):
            story[-2:] = [f"{ev.member}'s session times out", story[-1] + f", without {ev.member}",
                          f"{ev.member} rejoins subscribing to {_topics(ev.topics)} with its client's state "
                          "from round 1 (a sticky member: its round-1 assignment and generation)"]
            if ev.joiner is not None:
                story.append(f"{ev.joiner.name} joins subscribing {_topics(ev.joiner.topics)}"
                             + (f" in rack {ev.joiner.rack}" if ev.joiner.rack else ""))
            story.append("rebalance again")
        out: dict[str, Any] = {
            "id": self.id,
            "assignor": self.assignor,
            "topics": self._topics_json(self.topics),
            "members": {m.name: {"topics": list(m.topics), "rack": m.rack} for m in self.members},
            "racks": self.layout.text,
            "event": self.event.describe(),
            "story": story,
        }
        if self.event.kind == "add-partitions":
            out["topics_after"] = self._topics_json(self.topics_after)
        return out

    def _cooperative(self) -> bool:
        info = ASSIGNORS.get(self.assignor)
        return info is not None and info.cooperative


# --- the table of shapes ----------------------------------------------------------------------------------


def _subscription_options(topics: Sequence[str], pattern: str) -> tuple[tuple[str, ...], ...]:
    if pattern == "equal":
        return (tuple(topics),)
    if pattern == "nested":
        return tuple(tuple(topics[:k]) for k in range(1, len(topics) + 1))
    return tuple(c for k in range(1, len(topics) + 1) for c in itertools.combinations(topics, k))


# Event templates of a shape, resolved against a membership: ("join", subscription, rack), ("leave", member),
# ("subscribe", member, k) = the k-th subscription other than the member's current one, ("add-partitions",
# topic, count), ("rejoin", member, k) = time out, then rejoin with the k-th subscription (its current one
# included), ("rejoin-join", member, k * choices + j) = the same while a new member joins with the j-th
# (subscription, rack). A shape's size so does not depend on the membership.
_Template = tuple[str, int, int]


@dataclass(frozen=True)
class _Shape:
    """Groups sharing member count, partition counts and rack layout: memberships x events of them."""

    members: int
    partitions: tuple[int, ...]
    layout: RackLayout
    subscriptions: tuple[tuple[str, ...], ...]
    racks: tuple[str | None, ...]
    events: tuple[_Template, ...]

    @property
    def choices(self) -> int:  # per member: (subscription, rack)
        return len(self.subscriptions) * len(self.racks)

    @property
    def size(self) -> int:
        return self.choices ** self.members * len(self.events)

    def membership(self, index: int) -> tuple[GroupMember, ...]:
        """Members c1..cM for a membership index; c1 is its most significant digit."""
        digits = []
        for _ in range(self.members):
            index, d = divmod(index, self.choices)
            digits.append(d)
        out = []
        for i, d in enumerate(reversed(digits)):
            sub, rack = divmod(d, len(self.racks))
            out.append(GroupMember(f"c{i + 1}", self.subscriptions[sub], self.racks[rack]))
        return tuple(out)

    def event(self, template: _Template, members: Sequence[GroupMember]) -> GroupEvent:
        kind, a, b = template
        if kind == "join":
            return GroupEvent(kind, f"c{self.members + 1}", self.subscriptions[a], self.racks[b])
        if kind == "leave":
            return GroupEvent(kind, members[a].name)
        if kind == "subscribe":
            others = [s for s in self.subscriptions if s != members[a].topics]
            return GroupEvent(kind, members[a].name, others[b])
        if kind == "rejoin":
            return GroupEvent(kind, members[a].name, self.subscriptions[b])
        if kind == "rejoin-join":
            k, j = divmod(b, self.choices)
            sub, rack = divmod(j, len(self.racks))
            joiner = GroupMember(f"c{self.members + 1}", self.subscriptions[sub], self.racks[rack])
            return GroupEvent(kind, members[a].name, self.subscriptions[k], joiner=joiner)
        return GroupEvent(kind, topic=f"t{a + 1}", count=b)


def _templates(bounds: GroupBounds, members: int, topics: int, subscriptions: int, racks: int) -> tuple[_Template, ...]:
    out: list[_Template] = []
    if "join" in bounds.events:
        out += [("join", s, r) for s in range(subscriptions) for r in range(racks)]
    if "leave" in bounds.events and members >= 2:  # the last member leaving leaves nothing to assign
        out += [("leave", m, 0) for m in range(members)]
    if "subscribe" in bounds.events:
        out += [("subscribe", m, k) for m in range(members) for k in range(subscriptions - 1)]
    if "add-partitions" in bounds.events:
        out += [("add-partitions", x, d) for x in range(topics) for d in range(1, bounds.max_added + 1)]
    if "rejoin" in bounds.events and members >= 2:  # alone, the member's time-out leaves nothing to assign
        out += [("rejoin", m, k) for m in range(members) for k in range(subscriptions)]
    if "rejoin-join" in bounds.events and members >= 2:
        out += [("rejoin-join", m, k) for m in range(members) for k in range(subscriptions ** 2 * racks)]
    return tuple(out)


class _Tables:
    """Shapes in id order with their first group id. Built lazily on each executor, never pickled."""

    def __init__(self, bounds: GroupBounds) -> None:
        shapes = []
        for t in range(1, bounds.max_topics + 1):
            subs = _subscription_options([f"t{x + 1}" for x in range(t)], bounds.subscriptions)
            for parts in itertools.product(range(1, bounds.max_partitions + 1), repeat=t):
                for layout in bounds.racks:
                    racks: tuple[str | None, ...] = (None,)
                    if layout.racks:
                        racks = ((None,) if bounds.rackless_members else ()) + layout.rack_names
                    for m in range(1, bounds.max_members + 1):
                        events = _templates(bounds, m, t, len(subs), len(racks))
                        shapes.append(_Shape(m, parts, layout, subs, racks, events))
        # Small to large: members + partitions first, so that the first violation found is a small group.
        shapes.sort(key=lambda s: (s.members + sum(s.partitions), s.members, len(s.partitions), s.partitions,
                                   s.layout))
        self.shapes = tuple(s for s in shapes if s.size)
        self.starts: list[int] = []
        total = 0
        for s in self.shapes:
            self.starts.append(total)
            total += s.size
        self.total = total

    def locate(self, group_id: int) -> tuple[_Shape, int, int]:
        """The shape, the membership index within it and the event index of a group id."""
        i = bisect_right(self.starts, group_id) - 1
        shape = self.shapes[i]
        membership, event = divmod(group_id - self.starts[i], len(shape.events))
        return shape, membership, event


# --- running a configuration ------------------------------------------------------------------------------


class UserAssignorError(KafkaError):
    """A user's assignor threw, or returned something that is not member -> [TopicPartition]."""


class _Checked:
    """A user's assignor as the group leader runs it (ConsumerCoordinator.onLeaderElected): what it throws, or
    returns that could not be sent back to the members, becomes a `UserAssignorError` (a KafkaError, so the
    rebalance model fails the rebalance as Kafka's leader would)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:  # user data and onAssignment hooks, when the assignor has them
        if name == "inner":  # not set yet (copy, pickle): no recursion through __getattr__
            raise AttributeError(name)
        return getattr(self.inner, name)

    def assign_partitions(self, ppt: Mapping[str, Sequence[PartitionInfo]],
                          subscriptions: Mapping[str, Any]) -> dict[str, list[TopicPartition]]:
        try:
            result = self.inner.assign_partitions(ppt, subscriptions)
        except KafkaError:
            raise
        except Exception as e:  # noqa: BLE001 - anything a user's code throws fails the rebalance
            if isinstance(e, PluginError) and e.exc_type:  # a jvm: class's Java exception: its class and message
                raise UserAssignorError(f"throws {e.exc_type}: {e.message}") from e
            raise UserAssignorError(f"throws {type(e).__name__}: {e}") from e
        problem = assignment_problem(result, subscriptions)
        if problem is not None:
            raise UserAssignorError(problem)
        return {m: list(tps) for m, tps in result.items()}


def _unwrap(client: Any) -> Any:
    return client.inner if isinstance(client, _Checked) else client


@dataclass
class _SweepGroup(ConsumerGroup):
    """The rebalance model's group (ConsumerCoordinator.java and AbstractCoordinator.java as the model mirrors
    them) on a configuration's rack layout, without its story text: a sweep runs millions of groups and
    `GroupConfig.describe()` tells the story of the few it reports."""

    layout: RackLayout = field(default_factory=RackLayout)
    # partition counts -> PartitionInfos; shared by a group's snapshots, which never change a PartitionInfo
    infos: dict[tuple[int, ...], dict[str, list[PartitionInfo]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.protocol = protocol_of(self.info, _unwrap(self.info.factory()))  # a checked user assignor too

    def _event(self, text: str) -> None:
        pass

    def _describe(self, r: Round) -> str:
        return ""

    def partition_infos(self) -> dict[str, list[PartitionInfo]]:
        key = tuple(self.partitions.values())
        infos = self.infos.get(key)
        if infos is None:
            infos = self.infos[key] = {t: [PartitionInfo(t, i, None, self.layout.replicas(x, i)) for i in range(n)]
                                       for x, (t, n) in enumerate(self.partitions.items())}
        return {t: list(ps) for t, ps in infos.items()}  # fresh lists: an assignor may sort them


def _runnable(name: str, kafka_version: str = DEFAULT_VERSION) -> AssignorInfo:
    info = resolve_assignor(name)
    if ASSIGNORS.get(info.name) is info:
        # Kafka's own, as the release runs it: an exception other than Kafka's is a bug in the reference, and surfaces
        return profile(kafka_version).assignor(info)
    factory = info.factory
    return AssignorInfo(info.name, lambda: _Checked(factory()), info.cooperative, info.guarantees)


_INVARIANTS: tuple[Invariant, ...] = tuple(invariants_for("assignment"))
_BY_ID = {inv.id: inv for inv in _INVARIANTS}
_COOPERATIVE_SAFETY, _STICKY = "assignment.cooperative-safety", "assignment.sticky"
# Not in the registry: the rebalance did not produce an assignment to check (see the module docstring).
ASSIGNOR_ERROR = "assignment.assignor-error"


@dataclass(frozen=True)
class Found:
    """A violation in round `round_no`: a failed rebalance's, or the registry check's on `round` (computed
    only for the configuration a batch reports, so the millions of others never build a message)."""

    round_no: int
    invariant: str
    round: Round | None = None
    failure: Violation | None = None
    through: int | None = None  # the last round, for a violation of rounds round_no..through as a whole

    @property
    def label(self) -> str:
        return f"rounds {self.round_no}-{self.through} as a whole" if self.through else f"round {self.round_no}"

    def violation(self) -> Violation:
        if self.failure is not None:
            return self.failure
        assert self.round is not None
        found = _BY_ID[self.invariant].check(self.round.subject)
        if self.invariant == _COOPERATIVE_SAFETY:
            found = [*found, *self.round.handover]
        if not found:
            raise AssertionError(f"groups_fast decided {self.invariant} is violated in {self.label}, "
                                 "but the registry's check finds nothing: a bug in the fast form")
        return found[0]


# invariant id -> its first violation, or None when checked without one; absent: applied in no round
Outcome = dict[str, Found | None]


def check_rounds(rounds: Sequence[Round], first_round: int, outcome: Outcome, fast: FastChecks) -> None:
    """Every applicable assignment invariant on each round (numbered from `first_round`), and under
    cooperative-safety the hand-over from the previous cooperative round (`Round.handover`: check_two_rounds).

    The flow-based soft checks are decided by `groups_fast` (the registry's measures, memoised); the
    others run as registered.
    """
    for n, r in enumerate(rounds, first_round):
        s = r.subject
        # The model already checked the assignor's guarantees on this round: reuse those answers.
        known = set(r.report.checked) | set(r.report.skipped)
        broken = {v.invariant for v in r.report.violations}
        for inv in _INVARIANTS:
            if inv.id in known:
                if inv.id in r.report.skipped:
                    continue
                violated = inv.id in broken
            else:
                if inv.not_applicable(s) is not None:
                    continue
                decided = fast.violated(inv.id, s)
                violated = bool(inv.check(s)) if decided is None else decided
            if inv.id == _COOPERATIVE_SAFETY and r.handover:
                violated = True
            if outcome.get(inv.id) is None:
                outcome[inv.id] = Found(n, inv.id, r) if violated else None


def check_settled(after: Sequence[Round], first_round: int, outcome: Outcome, fast: FastChecks) -> None:
    """A cooperative rebalance as a whole (KIP-429): a partition changing owner is revoked in one round and
    assigned in a follow-up, so the per-round sticky check never sees the move (the first round withholds
    it, and by the next nobody owns it). Stickiness is also checked from the ownership members brought to
    the rebalance to its settled assignment."""
    if len(after) < 2:
        return
    first, last = after[0].subject, after[-1].subject
    settled = AssignmentSubject(last.partitions_per_topic, first.subscriptions, last.assignment)
    inv = _BY_ID[_STICKY]
    if inv.not_applicable(settled) is not None:
        return
    violated = fast.violated(_STICKY, settled)
    if violated is None:
        violated = bool(inv.check(settled))
    if outcome.get(_STICKY) is None:
        whole = Round(after[-1].generation, after[-1].leader, settled, Report((), {}, ()), {})
        outcome[_STICKY] = Found(first_round, _STICKY, whole, through=first_round + len(after) - 1) \
            if violated else None


def _failure(info: AssignorInfo, error: ModelFailure, round_no: int) -> Violation:
    cause = error.__cause__
    if isinstance(cause, KafkaError):
        text = str(cause) if isinstance(cause, UserAssignorError) else f"throws {type(cause).__name__}: {cause}"
        detail: dict[str, Any] = {"exception": type(cause).__name__, "error": str(cause)}
    else:  # ConsumerGroup.rebalance: a cooperative group that does not settle
        text = str(error).splitlines()[0]
        detail = {"exception": None, "error": text}
    return Violation(ASSIGNOR_ERROR, Severity.HARD, "group",
                     f"{info.name} {text}: the rebalance fails and leaves the group's partitions unassigned",
                     detail | {"excess": 1})


def _fail(outcome: Outcome, info: AssignorInfo, error: ModelFailure, round_no: int) -> None:
    if outcome.get(ASSIGNOR_ERROR) is None:
        outcome[ASSIGNOR_ERROR] = Found(round_no, ASSIGNOR_ERROR, failure=_failure(info, error, round_no))


@dataclass
class _Round1:
    group: _SweepGroup | None  # after round 1 (None: the assignor failed)
    rounds: tuple[Round, ...]
    outcome: Outcome


def _run_round1(config: GroupConfig, info: AssignorInfo, fast: FastChecks | None) -> _Round1:
    """The earlier membership, assigned from scratch; checked unless `fast` is None (a re-run for its state)."""
    g = _SweepGroup(info, config.topics, layout=config.layout)
    for m in config.members:
        g.join(m.name, m.topics, m.rack)
    outcome: Outcome = {ASSIGNOR_ERROR: None}
    try:
        rounds = tuple(g.rebalance())
    except ModelFailure as e:  # AssignorFailed, or a cooperative group still revoking (NotSettled)
        _fail(outcome, info, e, 1)
        return _Round1(None, (), outcome)
    if fast is not None:
        check_rounds(rounds, 1, outcome, fast)
    return _Round1(g, rounds, outcome)


def _copy_client(client: Any) -> Any:
    """A built-in assignor instance: its state is a few attributes, containers of immutable values at most."""
    out = copy.copy(client)
    for name, value in vars(client).items():
        if isinstance(value, list | dict | set):
            setattr(out, name, copy.copy(value))
    return out


def _snapshot(g: _SweepGroup) -> _SweepGroup:
    """A copy of the group to apply one event to: members and their assignor instances (the state Kafka's
    assignors keep between calls) copied, the immutable rounds shared. Much cheaper than deepcopy."""
    h = copy.copy(g)
    h.partitions = dict(g.partitions)
    h.members = {}
    for n, m in g.members.items():
        h.members[n] = copy.copy(m)
        h.members[n].client = _copy_client(m.client)
    h.timed_out = {}
    h.log = []
    h.rounds = list(g.rounds)
    h.findings = []
    return h


def _round2(config: GroupConfig, info: AssignorInfo, r1: _Round1, outcome: Outcome,
            first_round: int, builtin: bool | None = None) -> list[list[Round]]:
    """The event and the rebalances after it (two for a rejoin: after the time-out, after the rejoin), each
    with a cooperative assignor's follow-ups; the rounds up to a failure. A rejoin's stale-claim findings
    go to `outcome` under their ids (`STALE_CLAIM_KINDS`). `builtin`: a built-in assignor (its instances
    copy), by default when `info` is the registry's own."""
    if (ASSIGNORS.get(info.name) is info) if builtin is None else builtin:
        assert r1.group is not None
        g = _snapshot(r1.group)
    else:  # a user's assignor instance may not copy: run round 1 again (it was checked once already)
        again = _run_round1(config, info, None)
        if again.group is None:  # it failed this time on the same input
            if outcome.get(ASSIGNOR_ERROR) is None:
                outcome[ASSIGNOR_ERROR] = again.outcome[ASSIGNOR_ERROR]
            return []
        g = again.group
    out: list[list[Round]] = []
    try:
        _apply(g, config.event, out)
    except ModelFailure as e:  # AssignorFailed, or a cooperative group still revoking (NotSettled)
        _fail(outcome, info, e, first_round + sum(map(len, out)))
    for f in g.findings:  # only a rejoin brings stale claims
        if outcome.get(f.kind) is None:
            outcome[f.kind] = Found(first_round + len(out[0]), f.kind, failure=_stale_claim(f))  # after the time-out
    return [rounds for rounds in out if rounds]


def _stale_claim(f: Finding) -> Violation:
    return Violation(f.kind, Severity.SOFT, f"member {f.member}", f"{STALE_CLAIM_KINDS[f.kind]}: {f.message}",
                     {"kind": f.kind, "member": f.member, "generation": f.generation,
                      "replay": f.group_file(), "excess": 1})


def _apply(g: ConsumerGroup, event: GroupEvent, out: list[list[Round]]) -> None:
    """Apply the event and rebalance after it, appending each rebalance's rounds to `out`: one rebalance,
    or two for a rejoin (after the time-out, after the rejoin)."""
    if event.kind not in ("join", "leave", "subscribe", "rejoin", "rejoin-join"):
        assert event.topic is not None  # add-partitions names its topic
        g.add_partitions(event.topic, event.count)
        out.append(g.rebalance())
        return
    member = event.member
    assert member is not None  # every other event names its member
    if event.kind == "join":
        g.join(member, event.topics, event.rack)
    elif event.kind == "leave":
        g.leave(member)
    elif event.kind == "subscribe":
        g.subscribe(member, event.topics)
    else:  # rejoin, rejoin-join
        g.time_out(member)
        out.append(g.rebalance())
        g.rejoin(member, event.topics)
        if event.joiner is not None:
            g.join(event.joiner.name, event.joiner.topics, event.joiner.rack)
    out.append(g.rebalance())


def _assignments(rounds: Sequence[Round]) -> list[dict[str, list[str]]]:
    return [{m: [str(tp) for tp in tps] for m, tps in r.subject.assignment.items()} for r in rounds]


# Per configuration, on the settled rebalance after the event: partitions moved off a previous owner that
# still subscribes; max - min partitions per member; partitions on a member with a rack none of whose
# replicas is in (racked layouts); cooperative follow-up rebalances until nobody revokes.
METRICS = ("moved-partitions", "count-spread", "rack-mismatches", "follow-up-rebalances")


def _metrics(config: GroupConfig, first: AssignmentSubject, last: AssignmentSubject,
             follow_ups: int) -> dict[str, int]:
    """Balance metrics (METRICS) of the settled rebalance after the event."""
    placed = last.placed
    moved = sum(1 for tp, m in first.previous_owner.items() if tp in placed and placed[tp] != m)
    counts = last.counts.values()
    out = {"moved-partitions": moved, "count-spread": max(counts) - min(counts) if counts else 0}
    if config.layout.racks:
        rack = {m: s.rack_id for m, s in last.subscriptions.items() if s.rack_id}
        out["rack-mismatches"] = sum(1 for tp, m in placed.items() if m in rack
                                     and rack[m] not in {b.rack for b in last.infos[tp].replicas})
    if last.cooperative:
        out["follow-up-rebalances"] = follow_ups
    return out


# --- the space ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupInvariant:
    """What a result key `"<assignor>/<invariant>"` stands for."""

    key: str
    assignor: str
    invariant: str
    severity: str  # the registry's: "hard" or "soft"
    guaranteed: bool  # Kafka documents or tests it for this assignor (AssignorInfo.guarantees)
    kafkas_own: bool = False  # one of Kafka's assignors (not a user's)

    @property
    def fails(self) -> bool:
        """Whether a violation fails the sweep: `registry.fails_when_violated`, the rule `kcheck check` uses too;
        otherwise it is a finding about the assignor."""
        return fails_when_violated(self.severity, self.guaranteed, self.kafkas_own)


class GroupSpace:
    """Every group configuration within `bounds`, run by each of `assignors` (default: every built-in one)."""

    name = "assignors"

    def __init__(self, bounds: GroupBounds | None = None, assignors: Sequence[str] | None = None,
                 kafka_version: str | None = None) -> None:
        self.bounds = bounds if bounds is not None else GROUP_PRESETS["default"]
        self.kafka_version = profile(kafka_version).version  # UnknownRelease (a ValueError) for an unknown one
        modelled = profile(self.kafka_version).uniform_heterogeneous_builder != "3.x"
        names = list(assignors) if assignors else [n for n in ASSIGNORS if modelled or n != "uniform"]
        if len(set(names)) != len(names):
            raise ValueError(f"assignor '{next(n for n in names if names.count(n) > 1)}' is given twice")
        if not modelled and "uniform" in names:
            raise ValueError(f"uniform: Kafka {self.kafka_version}'s heterogeneous uniform builder (before 4.0.0, "
                             "KAFKA-17710) is not modelled; sweep uniform as 4.0.0 or later")
        for n in names:
            resolve_assignor(n)  # ValueError with one line for an unknown name or a bad module:object
        self.assignors = tuple(names)

    # Only the bounds, names and release travel to Spark executors; tables and assignors are rebuilt there.
    def __getstate__(self) -> dict[str, Any]:
        from kcheck.reference.jvm_plugins import travel  # jvm:<class> assignors: the classpath goes along

        return {"bounds": self.bounds, "assignors": self.assignors, "kafka_version": self.kafka_version,
                **travel(self.assignors)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "jvm" in state:  # on a Spark worker: its own bridge, with the driver's classpath and release
            from kcheck.reference.jvm_plugins import arrive

            arrive(state)
        self.bounds, self.assignors = state["bounds"], state["assignors"]
        self.kafka_version = state.get("kafka_version", DEFAULT_VERSION)

    @property
    def settings(self) -> dict[str, Any]:  # in the store's manifest and fingerprint: another release is another sweep
        return {"kafka_version": self.kafka_version}

    @cached_property
    def _tables(self) -> _Tables:
        return _Tables(self.bounds)

    @cached_property
    def _infos(self) -> dict[str, AssignorInfo]:
        return {n: _runnable(n, self.kafka_version) for n in self.assignors}

    @cached_property
    def _builtin(self) -> frozenset[str]:
        """The built-in assignors (their instances copy); `_infos` holds them as the release runs them."""
        out = set()
        for n in self.assignors:
            info = resolve_assignor(n)
            if ASSIGNORS.get(info.name) is info:
                out.add(n)
        return frozenset(out)

    @property
    def group_count(self) -> int:
        return self._tables.total

    def __len__(self) -> int:
        return self._tables.total * len(self.assignors)

    def __getitem__(self, config_id: int) -> GroupConfig:
        try:
            config_id = operator.index(config_id)  # numpy integers too
        except TypeError:
            raise IndexError(f"group configuration id {config_id!r} is not an integer") from None
        if not 0 <= config_id < len(self):
            raise IndexError(f"group configuration id {config_id!r} is outside 0..{len(self) - 1}")
        return self._config(config_id)[0]

    def _config(self, config_id: int) -> tuple[GroupConfig, int]:
        """The configuration and its membership's key (the first group id with the same earlier membership)."""
        group_id, a = divmod(config_id, len(self.assignors))
        shape, membership, event = self._tables.locate(group_id)
        members = shape.membership(membership)
        config = GroupConfig(config_id, self.assignors[a], shape.partitions, shape.layout, members,
                             shape.event(shape.events[event], members))
        return config, group_id - event

    def invariant_ids(self) -> list[str]:
        stale = tuple(STALE_CLAIM_KINDS) if {"rejoin", "rejoin-join"} & set(self.bounds.events) else ()
        return [f"{a}/{inv}" for a in self.assignors for inv in (ASSIGNOR_ERROR, *_BY_ID, *stale)]

    def invariant_info(self, key: str) -> GroupInvariant:
        assignor, _, inv = key.rpartition("/")
        if assignor not in self.assignors or (inv not in _BY_ID and inv != ASSIGNOR_ERROR
                                                   and inv not in STALE_CLAIM_KINDS):
            raise KeyError(f"unknown group-space invariant key '{key}'")
        if inv == ASSIGNOR_ERROR:  # a failed rebalance is never acceptable
            return GroupInvariant(key, assignor, inv, str(Severity.HARD), True)
        if inv in STALE_CLAIM_KINDS:  # outside what Kafka promises (see invariants/rebalance.py): always a finding
            return GroupInvariant(key, assignor, inv, str(Severity.SOFT), False)
        return GroupInvariant(key, assignor, inv, str(_BY_ID[inv].severity), inv in self._infos[assignor].guarantees,
                              assignor in ASSIGNORS)

    def metric_names(self) -> list[str]:
        return [f"{a}/{n}" for a in self.assignors for n in METRICS]

    def evaluate(self, start: int, stop: int) -> BatchResult:
        """Run and check every configuration in [start, stop); round 1 runs once per membership and assignor."""
        start, stop = max(0, start), min(stop, len(self))
        result = BatchResult(start, max(start, stop))
        round1: dict[str, _Round1] = {}
        round1_key = -1
        for config_id in range(start, stop):
            config, membership = self._config(config_id)
            if membership != round1_key:  # ids of one membership are consecutive: keep only its round 1
                round1, round1_key = {}, membership
            info = self._infos[config.assignor]
            r1 = round1.get(config.assignor)
            if r1 is None:
                r1 = round1[config.assignor] = _run_round1(config, info, _FAST)
            self._run(config, info, r1, result)
        return result

    def _run(self, config: GroupConfig, info: AssignorInfo, r1: _Round1, result: BatchResult) -> None:
        outcome: Outcome = dict(r1.outcome)
        if config.event.kind in ("rejoin", "rejoin-join"):
            outcome |= dict.fromkeys(STALE_CLAIM_KINDS)  # only where a member rejoins with its old client state
        rounds = list(r1.rounds)
        rebalances = (_round2(config, info, r1, outcome, len(rounds) + 1, config.assignor in self._builtin)
                      if r1.group is not None else [])
        for after in rebalances:
            check_rounds(after, len(rounds) + 1, outcome, _FAST)
            check_settled(after, len(rounds) + 1, outcome, _FAST)
            rounds += after
        if rebalances:  # the metrics of the last rebalance, settled
            after = rebalances[-1]
            for name, value in _metrics(config, after[0].subject, after[-1].subject, len(after) - 1).items():
                result.add_metric(f"{config.assignor}/{name}", value)
        for inv, found in outcome.items():
            key = f"{config.assignor}/{inv}"
            result.checked[key] += 1
            if found is None:
                continue
            if key in result.first:  # ids only grow within a batch: the first one kept is the smallest
                result.violated[key] += 1
                continue
            v = found.violation()
            result.add_violation(key, FirstViolation(
                config.id, config.describe(), v.where, f"{found.label}: {v.message}",
                dict(v.detail) | {"round": found.label, "assignments": _assignments(rounds)}))


_FAST = FastChecks()  # per process: Spark reuses its Python workers, so the memo outlives a batch
