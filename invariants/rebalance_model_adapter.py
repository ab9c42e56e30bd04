"""The consumer-group rebalance model (`kcheck.invariants.rebalance.ConsumerGroup`) on the one engine.

`RebalanceModel(assignor, bounds)` implements `kcheck.model.interface.Model`, so `kcheck.model.search.exhaust`
and `random_search` run on it as on the replication and storage models (`kcheck check` runs the random search on
it for every assignor, the test suite both engines). A state is one group (its topics'
partition counts, members in join order with their subscriptions, racks, owned partitions, generations and
their clients' assignor state, the members whose session timed out with their clients), the previous round's
assignment (the cooperative hand-over check compares against it), the stale-claim findings so far, the first
broken guarantee, and how much of the event and rebalance budgets is spent. Events are a group's (join, leave,
subscribe, add partitions, session time-out, rejoin with or without a new subscription, rebalance), enumerated in
a fixed order within `RebalanceBounds`.

The invariants: a rebalance keeps the assignor's guarantees (`AssignorInfo.guarantees`,
with the cooperative hand-over between consecutive rounds), the assignor does not throw, a cooperative group
settles within `MAX_FOLLOW_UPS` follow-ups, no partition has two owners, and a settled group owns every
subscribed partition when the assignor guarantees completeness. The StickyAssignor's stale-claim findings
(see `kcheck.invariants.rebalance`: Kafka's behaviour outside its guarantees) are invariants too when
`findings=True` (the default), under their finding ids, so the engines report the smallest history of each.

No symmetries: members and topics are not interchangeable here, because Kafka's assignors order both by name
(the range assignor sorts members, the sticky ones break ties by member id, the leader is the first to join),
so a renaming can change the assignment.

Encoding: a canonical tuple of plain values (topics sorted, members in join order, timed-out members by name),
with each client's state as the fields Kafka's client assignors keep between rebalances (`CLIENT_FIELDS`: the
StickyAssignor's remembered assignment and generation, which it sends as user data, the cooperative
assignor's generation, and the leader-side `max_generation` that AbstractStickyAssignor never resets).
`decode` rebuilds the group from it, so the frontier is kept as bytes. An assignor plug-in that keeps other
state between calls needs its fields added to `client_fields`.
"""

from __future__ import annotations

import ast
import copy
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kcheck.invariants.assignment import AssignmentSubject
from kcheck.invariants.rebalance import (
    COOPERATIVE,
    STALE_CLAIM_KINDS,
    AssignorFailed,
    ConsumerGroup,
    Member,
    NotSettled,
    Round,
)
from kcheck.invariants.registry import Report
from kcheck.model.interface import StateInvariant
from kcheck.model.vocabulary import TopicPartition
from kcheck.reference.assignors.registry import AssignorInfo, resolve_assignor

# The fields of Kafka's client assignors that carry over between rebalances (see the module docstring).
CLIENT_FIELDS = ("_member_assignment", "_generation", "max_generation")
EVENTS = ("join", "leave", "subscribe", "add-partitions", "time-out", "rejoin")

GUARANTEES = "rebalance.guarantees"
ASSIGNOR_THROWS = "rebalance.assignor-throws"
SETTLES = "rebalance.settles"
EXCLUSIVE = "rebalance.exclusive-ownership"
OWNS_ALL = "rebalance.settled-owns-everything"

Action = tuple[Any, ...]


@dataclass(frozen=True)
class RebalanceBounds:
    """The search's bounds: topics t1..tN, each starting at every size in 1..initial_partitions (one initial
    state per combination) and growing by add-partitions events up to max_partitions; at most max_members
    members plus timed-out clients; `events` non-rebalance events and `rebalances` rebalances in all;
    `kinds` the event kinds allowed (`EVENTS`); consumers join without a rack unless `racks`; `sizes` lists the
    initial partition counts when given; `clusters`, when given, the (replication factor, brokers in racks) pairs
    the initial states range over too (the topics' replicas are what the rack-aware assignors match racks with),
    instead of `replication` alone without broker racks."""

    max_members: int = 3
    topics: int = 2
    initial_partitions: int = 2
    max_partitions: int = 2
    events: int = 5
    rebalances: int = 3
    kinds: tuple[str, ...] = EVENTS
    racks: tuple[str | None, ...] = (None,)
    replication: int = 1
    sizes: tuple[tuple[int, ...], ...] = ()  # the initial partition counts to start from, instead of every one
    clusters: tuple[tuple[int, bool], ...] = ()  # (replication factor, broker racks) pairs to start from

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(EVENTS)
        if unknown:
            raise ValueError(f"unknown event kind(s) {sorted(unknown)}; known: {', '.join(EVENTS)}")
        if not 1 <= self.initial_partitions <= self.max_partitions:
            raise ValueError("need 1 <= initial_partitions <= max_partitions")
        if any(len(s) != self.topics or min(s) < 1 for s in self.sizes):
            raise ValueError(f"each initial size needs {self.topics} partition counts of at least 1")


@dataclass
class GroupState:
    """One state: the group (mutated only on a private copy by `step`) and the search's bookkeeping."""

    group: ConsumerGroup
    events: int = 0
    rebalances: int = 0
    failure: tuple[str, str] | None = None  # (invariant id, message) of the first broken guarantee
    findings: frozenset[str] = field(default_factory=frozenset)  # stale-claim kinds found so far


def _tp(tp: TopicPartition) -> tuple[str, int]:
    return (tp.topic, tp.partition)


class RebalanceModel:
    """`kcheck.model.interface.Model` over one consumer group driven by `assignor` (see the module docstring)."""

    def __init__(self, assignor: str | AssignorInfo, bounds: RebalanceBounds | None = None, *, findings: bool = True,
                 only: Iterable[str] | None = None, client_fields: Sequence[str] = CLIENT_FIELDS) -> None:
        self.info = assignor if isinstance(assignor, AssignorInfo) else resolve_assignor(assignor)
        self.bounds = bounds or RebalanceBounds()
        self.findings = findings
        self.only = None if only is None else set(only)
        self.client_fields = tuple(client_fields)
        self.name = f"rebalance[{self.info.name}]"
        b = self.bounds
        self.topic_names = tuple(f"t{i}" for i in range(1, b.topics + 1))
        self.member_names = tuple(f"c{i}" for i in range(1, b.max_members + 1))
        self.subscriptions = tuple(combo for n in range(1, b.topics + 1)
                                   for combo in itertools.combinations(self.topic_names, n))

    # ---- the transition system -------------------------------------------------------------------------------

    def _new_group(self, sizes: Sequence[int], cluster: tuple[int, bool] | None = None) -> ConsumerGroup:
        replication, racks = cluster or (self.bounds.replication, False)
        return ConsumerGroup(self.info, dict(zip(self.topic_names, sizes, strict=True)), replication, racks)

    def initial_states(self) -> list[GroupState]:
        b = self.bounds
        sizes = b.sizes or tuple(itertools.product(range(1, b.initial_partitions + 1), repeat=b.topics))
        return [GroupState(self._new_group(s, c)) for c in b.clusters or (None,) for s in sizes]

    def actions(self, s: GroupState) -> list[Action]:
        g, b = s.group, self.bounds
        out: list[Action] = []
        if s.events < b.events:
            present = sorted(g.members)
            if "join" in b.kinds and len(g.members) + len(g.timed_out) < b.max_members:
                out += [("join", topics, rack) for topics in self.subscriptions for rack in b.racks]
            if "leave" in b.kinds:
                out += [("leave", m) for m in present]
            if "subscribe" in b.kinds:
                out += [("subscribe", m, topics) for m in present for topics in self.subscriptions
                        if topics != g.members[m].topics]
            if "add-partitions" in b.kinds:
                out += [("add-partitions", t) for t in self.topic_names if g.partitions[t] < b.max_partitions]
            if "time-out" in b.kinds:
                out += [("time-out", m) for m in present]
            if "rejoin" in b.kinds and len(g.members) < b.max_members:
                out += [("rejoin", m, topics) for m in sorted(g.timed_out) for topics in (None, *self.subscriptions)]
        if s.rebalances < b.rebalances and g.members:
            out.append(("rebalance",))
        return out

    def step(self, s: GroupState, a: Action) -> GroupState | None:
        if s.failure is not None:
            return None  # a broken guarantee ends the group's story
        g = copy.copy(s.group)
        g.log, g.rounds, g.findings = [], g.rounds[-1:], []  # a trace's story is rebuilt by replay
        g = copy.deepcopy(g)
        t = replace(s, group=g)
        kind = a[0]
        if kind == "rebalance":
            t.rebalances += 1
            t.failure = self._rebalance(g)
            t.findings = s.findings | {f.kind for f in g.findings}
            return t
        t.events += 1
        if kind == "join":
            name = next(n for n in self.member_names if n not in g.members and n not in g.timed_out)
            g.join(name, a[1], a[2])
        elif kind == "leave":
            g.leave(a[1])
        elif kind == "subscribe":
            g.subscribe(a[1], a[2])
        elif kind == "add-partitions":
            g.add_partitions(a[1], 1)
        elif kind == "time-out":
            g.time_out(a[1])
        elif kind == "rejoin":
            g.rejoin(a[1], a[2])
        else:
            raise ValueError(f"unknown rebalance-model action {a!r}")
        return t

    def _rebalance(self, g: ConsumerGroup) -> tuple[str, str] | None:
        try:
            rounds = g.rebalance()
        except AssignorFailed as e:
            return ASSIGNOR_THROWS, str(e).splitlines()[0]
        except NotSettled as e:
            return SETTLES, str(e).splitlines()[0]
        for r in rounds:
            if r.broken:
                v = r.broken[0]
                return GUARANTEES, (f"{self.info.name} broke {v.invariant} in generation {r.generation} at "
                                    f"{v.where}: {v.message}")
        return None

    # ---- invariants ----------------------------------------------------------------------------------------

    def invariants(self) -> Sequence[StateInvariant[GroupState]]:
        def failed(id: str) -> Callable[[GroupState], str | None]:
            return lambda s: s.failure[1] if s.failure is not None and s.failure[0] == id else None

        def found(kind: str) -> Callable[[GroupState], str | None]:
            return lambda s: f"{STALE_CLAIM_KINDS[kind]} (Kafka's StickyAssignor with user data from an older " \
                             f"generation)" if kind in s.findings else None

        out = [
            StateInvariant(GUARANTEES, "every rebalance keeps the assignor's guarantees", failed(GUARANTEES)),
            StateInvariant(ASSIGNOR_THROWS, "the assignor does not throw", failed(ASSIGNOR_THROWS)),
            StateInvariant(SETTLES, "a cooperative group settles within the follow-up rebalances", failed(SETTLES)),
            StateInvariant(EXCLUSIVE, "no partition is owned by two members at once", _exclusive),
            StateInvariant(OWNS_ALL, "a settled group owns every subscribed partition", self._owns_all),
        ]
        if self.findings:
            out += [StateInvariant(kind, f"no {STALE_CLAIM_KINDS[kind]}", found(kind)) for kind in STALE_CLAIM_KINDS]
        return [inv for inv in out if self.only is None or inv.id in self.only]

    def _owns_all(self, s: GroupState) -> str | None:
        g = s.group
        if g.pending or not g.rounds or not g.members or "assignment.complete" not in self.info.guarantees:
            return None
        owned = {tp for m in g.members.values() for tp in m.owned}
        subscribed = sorted({t for m in g.members.values() for t in m.topics})
        missing = [f"{t}-{i}" for t in subscribed for i in range(g.partitions[t]) if TopicPartition(t, i) not in owned]
        return f"settled group leaves [{', '.join(missing)}] unowned" if missing else None

    # ---- encoding ------------------------------------------------------------------------------------------

    def _client(self, client: Any) -> tuple[Any, ...]:
        out = []
        for f in self.client_fields:
            v = getattr(client, f, None)
            if isinstance(v, list):
                v = tuple(_tp(tp) for tp in v)
            out.append(v)
        return tuple(out)

    def _member(self, m: Member) -> tuple[Any, ...]:
        return (m.name, m.topics, m.rack, tuple(_tp(tp) for tp in m.owned), m.generation, self._client(m.client))

    def _plain(self, s: GroupState) -> tuple[Any, ...]:
        g = s.group
        # the cooperative hand-over check reads the previous round's assignment; others only whether there was one
        last: Any = bool(g.rounds)
        if g.rounds and g.protocol == COOPERATIVE:
            last = tuple((m, tuple(_tp(tp) for tp in tps)) for m, tps in g.rounds[-1].subject.assignment.items())
        out = (tuple(sorted(g.partitions.items())), g.generation, g.pending,
               tuple(self._member(m) for m in g.members.values()),
               tuple(self._member(g.timed_out[n]) for n in sorted(g.timed_out)),
               last, s.events, s.rebalances, s.failure, tuple(sorted(s.findings)))
        return (*out, (g.replication, g.broker_racks)) if self.bounds.clusters else out

    def encode(self, s: GroupState) -> bytes:
        return repr(self._plain(s)).encode()

    def decode(self, data: bytes) -> GroupState:
        parts, generation, pending, members, timed_out, last, events, rebalances, failure, found, *cluster = \
            ast.literal_eval(data.decode())
        g = self._new_group([n for _, n in parts], cluster[0] if cluster else None)
        g.log = []
        g.generation, g.pending = generation, pending
        g.members = {m[0]: self._rebuild(m) for m in members}
        g.timed_out = {m[0]: self._rebuild(m) for m in timed_out}
        if last:
            assignment = {m: [TopicPartition(t, p) for t, p in tps] for m, tps in last} if last is not True else {}
            g.rounds = [Round(generation, "-", AssignmentSubject({}, {}, assignment), Report((), {}, ()), {})]
        return GroupState(g, events, rebalances, failure, frozenset(found))

    def _rebuild(self, m: tuple[Any, ...]) -> Member:
        name, topics, rack, owned, generation, state = m
        client = self.info.factory()
        for f, v in zip(self.client_fields, state, strict=True):
            if f == "_member_assignment" and v is not None:
                v = [TopicPartition(t, p) for t, p in v]
            if hasattr(client, f):
                setattr(client, f, v)
        return Member(name, tuple(topics), rack, client, tuple(TopicPartition(t, p) for t, p in owned), generation)

    def symmetries(self) -> Sequence[Callable[[GroupState], GroupState]]:
        return []  # see the module docstring: assignors order members and topics by name

    def describe(self, a: Action) -> str:
        kind = a[0]
        if kind == "join":
            return f"join subscribing [{', '.join(a[1])}]" + (f" in rack {a[2]}" if a[2] else "")
        if kind == "subscribe":
            return f"subscribe {a[1]} to [{', '.join(a[2])}]"
        if kind == "rejoin":
            return f"rejoin {a[1]}" + ("" if a[2] is None else f" subscribing to [{', '.join(a[2])}]")
        return " ".join(str(x) for x in a)

    def kind(self, a: Action) -> str:
        return str(a[0])


def _exclusive(s: GroupState) -> str | None:
    seen: dict[TopicPartition, str] = {}
    for name, m in s.group.members.items():
        for tp in m.owned:
            if tp in seen:
                return f"{tp} is owned by {seen[tp]} and {name}"
            seen[tp] = name
    return None


__all__ = ["CLIENT_FIELDS", "EVENTS", "GroupState", "RebalanceBounds", "RebalanceModel"]
