"""One consumer group over time, driven by any assignor: the rebalance model.

Mirrors the client side of a rebalance in apache/kafka 1eb7644349:
`clients/.../consumer/internals/ConsumerCoordinator.java` (`onJoinPrepare`: an eager member revokes
everything, a cooperative one the partitions of topics it no longer subscribes to, a member whose
generation was reset loses everything; `metadata()`: the `Subscription` it sends, with owned
partitions, generation and `client.rack`; `onJoinComplete`: a cooperative member revokes what it was
not given again and rejoins if it revoked anything), `AbstractCoordinator` (generations, the leader)
and the assignors' client hooks (`StickyAssignor` / `CooperativeStickyAssignor` `onAssignment` and
`subscriptionUserData`). The KIP-848 assignors (behind `ServerSideAdapter`) get each member's current
assignment as its owned partitions, as the group coordinator's `TargetAssignmentBuilder` does.

Every member runs its own assignor instance (its client); the leader's instance computes the
assignment, so the state Kafka's assignors keep between calls (`maxGeneration`, the sticky user
data) carries over as it does in a real group. After each rebalance the invariants the assignor
guarantees (`AssignorInfo.guarantees`) must hold; a cooperative assignor is re-run while members
revoke partitions, and every hand-over between consecutive cooperative rounds is checked.

Stale-claim findings. A member whose session timed out rejoins with its client's state: the
StickyAssignor's user data still claims its old partitions at its old generation. When some of them
belong to topics it no longer subscribes to, Kafka's general sticky path (`performReassignments` with
`prevAssignment` in AbstractStickyAssignor) can hand such a partition back to it (an invalid assignment)
or dereference the assignment of a member it set aside as fixed (a NullPointerException at the leader).
Kafka's tests never build such a history and its ConsumerCoordinator rejoins when an assignment does not
match the subscription, so these are `Finding`s (read from Kafka's source and reproduced in this model,
not run on a real cluster), kept in `ConsumerGroup.findings`, not failures: the round's other
violations, and the same violations without such a claim, still fail.

`ConsumerGroup` is the plain model (scripted tests use it directly); `kcheck.invariants.rebalance_model_adapter`
puts it on the one model interface, so the engines of `kcheck.model.search` (random and exhaustive search) run
it; `model_budget` is the test suite's size for the random search, or the deep one when
`KCHECK_REBALANCE_EXAMPLES` (and optionally `KCHECK_REBALANCE_STEPS`) is set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import currently_in_test_context, note

from kcheck.invariants.assignment import AssignmentSubject, check_assignment, check_two_rounds
from kcheck.invariants.registry import Report, Violation
from kcheck.model.group import PartitionInfo, Subscription
from kcheck.model.vocabulary import Broker, TopicPartition
from kcheck.reference.assignors.client import build_partitions_per_topic
from kcheck.reference.assignors.registry import (
    AssignorInfo,
    ServerSideAdapter,
    subscribed_topic_metadata,
)
from kcheck.reference.assignors.sticky import NullPointerException
from kcheck.reference.errors import KafkaError

EAGER, COOPERATIVE, CONSUMER = "eager", "cooperative", "consumer"  # the last: KIP-848's protocol
RACKS = ("r0", "r1", "r2")
N_BROKERS = 6
# Follow-up rebalances allowed while members still revoke: CooperativeStickyAssignorTest's
# verifyValidityAndBalance asserts rebalances <= 4.
MAX_FOLLOW_UPS = 4


def protocol_of(info: AssignorInfo, client: Any) -> str:
    if info.cooperative:
        return COOPERATIVE
    return CONSUMER if isinstance(client, ServerSideAdapter) else EAGER


@dataclass
class Member:
    name: str
    topics: tuple[str, ...]
    rack: str | None
    client: Any  # the member's own assignor instance: its user data and generation live there
    owned: tuple[TopicPartition, ...] = ()
    generation: int = -1  # -1: none yet, or reset after its session timed out


@dataclass(frozen=True)
class Round:
    generation: int
    leader: str
    subject: AssignmentSubject  # owned_partitions: what each member held when the round began
    report: Report  # the assignor's guarantees only
    revoked: Mapping[str, tuple[TopicPartition, ...]]  # cooperative: given up after this round
    handover: tuple[Violation, ...] = ()  # check_two_rounds against the previous cooperative round

    @property
    def broken(self) -> tuple[Violation, ...]:
        """Violations of the assignor's guarantees (soft ones included: `balanced` is guaranteed by some)."""
        return self.report.violations + self.handover


class ModelFailure(AssertionError):
    """The model's own verdict that something Kafka promises broke; engines catch this, never a bare
    AssertionError (an `assert` failing inside the reference is a bug in kcheck and must surface)."""


class AssignorFailed(ModelFailure):
    """The assignor threw (Kafka would fail the rebalance with the same exception)."""


class NotSettled(ModelFailure):
    """A cooperative group still revoking after `MAX_FOLLOW_UPS` follow-up rebalances."""


# The findings' ids (not in the invariant registry: they are never a guarantee) and names.
STALE_INVALID, STALE_NPE = "assignment.stale-claim", "assignment.stale-claim-npe"
STALE_CLAIM_KINDS = {STALE_INVALID: "stale-claim violation", STALE_NPE: "stale-claim NullPointerException"}


@dataclass(frozen=True)
class Finding:
    """A known Kafka behaviour outside its guarantees (see the module docstring), with what replays it."""

    kind: str  # STALE_INVALID or STALE_NPE (STALE_CLAIM_KINDS names them)
    generation: int
    member: str  # the member with the stale claim (STALE_INVALID: the one given a partition it dropped)
    message: str
    story: tuple[str, ...]  # the group's events up to this rebalance
    topics: Mapping[str, int]  # the round's input: partition counts ...
    replicas: Mapping[str, tuple[tuple[str | None, ...], ...]]  # ... each partition's replica racks ...
    members: Mapping[str, Mapping[str, Any]]  # ... and per member (in join order) topics, rack, owned, generation

    @property
    def steps(self) -> int:
        return len(self.story)

    def group_file(self) -> dict[str, Any]:
        """The failing rebalance's input as a `kcheck assign` group file (members in join order, as the
        leader's HashMap receives them; a sticky member's `owned` and `generation` are its user data)."""
        topics: dict[str, Any] = {t: n if t not in self.replicas else
                                  {"partitions": n, "racks": [list(r) for r in self.replicas[t]]}
                                  for t, n in self.topics.items()}
        members = {m: {k: v for k, v in e.items() if v is not None} for m, e in self.members.items()}
        return {"topics": topics, "members": members}


def _note(text: str) -> None:
    """Hypothesis prints notes with a failing example's steps; scripted use has no test context."""
    if currently_in_test_context():
        note(text)


def _tps(tps: Sequence[TopicPartition]) -> str:
    return "[" + ", ".join(str(tp) for tp in tps) + "]"


def _topics(topics: Sequence[str]) -> str:
    return "[" + ", ".join(topics) + "]"


@dataclass
class ConsumerGroup:
    """The group: topics, members (in join order; the first is the leader), generation, event log."""

    info: AssignorInfo
    partitions: dict[str, int]  # topic -> partition count
    replication: int = 1
    broker_racks: bool = False
    members: dict[str, Member] = field(default_factory=dict)
    timed_out: dict[str, Member] = field(default_factory=dict)  # their clients, state intact
    generation: int = 0
    log: list[str] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)  # every round so far
    pending: bool = False  # events since the last rebalance
    findings: list[Finding] = field(default_factory=list)
    protocol: str = field(init=False, default=EAGER)

    def __post_init__(self) -> None:
        self.protocol = protocol_of(self.info, self.info.factory())
        racks = f" on {N_BROKERS} brokers in racks {', '.join(RACKS)}" if self.broker_racks else ""
        self._event(f"topics {', '.join(f'{t} ({n})' for t, n in self.partitions.items())}, "
                    f"replication factor {self.replication}{racks}")

    def _event(self, text: str) -> None:
        self.log.append(text)
        _note(text)

    def broker(self, i: int) -> Broker:
        return Broker(i, RACKS[i % len(RACKS)] if self.broker_racks else None)

    def partition_infos(self) -> dict[str, list[PartitionInfo]]:
        """Replica j of partition i of the k-th topic on broker (i + j + k) % brokers (Kafka's test layout)."""
        out = {}
        for k, (t, n) in enumerate(self.partitions.items()):
            out[t] = [PartitionInfo(t, i, self.broker((i + k) % N_BROKERS),
                                    tuple(self.broker((i + j + k) % N_BROKERS) for j in range(self.replication)))
                      for i in range(n)]
        return out

    # --- events -----------------------------------------------------------------------------------------

    def join(self, name: str, topics: Sequence[str], rack: str | None = None) -> None:
        self.timed_out.pop(name, None)  # a new process: whatever an old one kept is gone
        self.members[name] = Member(name, tuple(topics), rack, self.info.factory())
        self.pending = True
        self._event(f"join {name} subscribing {_topics(topics)}" + (f" in rack {rack}" if rack else ""))

    def leave(self, name: str) -> None:
        del self.members[name]
        self.pending = True
        self._event(f"{name} leaves")

    def subscribe(self, name: str, topics: Sequence[str]) -> None:
        self.members[name].topics = tuple(topics)
        self.pending = True
        self._event(f"{name} subscribes to {_topics(topics)}")

    def add_partitions(self, topic: str, count: int) -> None:
        self.partitions[topic] += count
        self.pending = True
        self._event(f"{topic} grows to {self.partitions[topic]} partitions")

    def time_out(self, name: str) -> None:
        """The coordinator drops the member (session timeout); its client lives on with its state."""
        self.timed_out[name] = self.members.pop(name)
        self.pending = True
        self._event(f"{name}'s session times out (its client keeps its assignor state)")

    def rejoin(self, name: str, topics: Sequence[str] | None = None) -> None:
        """The timed-out client rejoins, subscribing to `topics` if given (the application may call
        `subscribe` meanwhile): its generation was reset, so it gives up its partitions as lost
        (`onJoinPrepare`), but its assignor keeps what it remembers (StickyAssignor: the old assignment
        and generation, sent again as user data - what KIP-341's generation marker is for)."""
        m = self.timed_out.pop(name)
        m.owned, m.generation = (), -1
        if topics is not None:
            m.topics = tuple(topics)
        self.members[name] = m
        self.pending = True
        self._event(f"{name} rejoins with the client state of its timed-out session"
                    + (f", subscribing to {_topics(topics)}" if topics is not None else ""))

    def stale_claims(self, name: str) -> tuple[TopicPartition, ...]:
        """The partitions a (timed-out) member's user data still claims."""
        m = self.members.get(name) or self.timed_out[name]
        data = getattr(m.client, "subscription_user_data", None)
        if data is None or self.protocol != EAGER:
            return ()
        return m.client.member_data(Subscription(m.topics, data(m.topics))).partitions

    def stale_unsubscribed_claims(self) -> dict[str, tuple[TopicPartition, ...]]:
        """Members that rejoined with older-generation user data claiming partitions of topics they no
        longer subscribe to, with those partitions: the precondition of the stale-claim findings."""
        out = {}
        for name, m in self.members.items():
            if m.generation < 0:  # rejoined (or new, whose client claims nothing) and not yet assigned
                dropped = tuple(tp for tp in self.stale_claims(name) if tp.topic not in m.topics)
                if dropped:
                    out[name] = dropped
        return out

    def _finding(self, kind: str, member: str, message: str, sent: Mapping[str, Subscription]) -> None:
        """Record a finding with the round's input, as a `kcheck assign` group file states it."""
        members: dict[str, dict[str, Any]] = {}
        for name, sub in sent.items():
            m = self.members[name]
            entry: dict[str, Any] = {"topics": list(m.topics), "rack": m.rack}
            if sub.user_data is not None and self.protocol == EAGER:
                md = m.client.member_data(sub)
                entry |= {"owned": [str(tp) for tp in md.partitions], "generation": md.generation}
            members[name] = entry
        replicas = {t: tuple(tuple(b.rack for b in p.replicas) for p in ps)
                    for t, ps in self.partition_infos().items()
                    if any(b.rack for p in ps for b in p.replicas)}  # racks only where there are some
        f = Finding(kind, self.generation, member, message, tuple(self.log), dict(self.partitions), replicas,
                    members)
        self.findings.append(f)
        _note(f"finding ({STALE_CLAIM_KINDS[kind]}): {message}")

    # --- rebalances ---------------------------------------------------------------------------------------

    def rebalance(self) -> list[Round]:
        """One rebalance; cooperative assignors run follow-up rounds while members revoke partitions."""
        self.pending = False
        first = self._round()
        out = [first] if first is not None else []
        while out and self.protocol == COOPERATIVE and any(out[-1].revoked.values()):
            if len(out) > MAX_FOLLOW_UPS:
                raise NotSettled(f"still revoking after {MAX_FOLLOW_UPS} follow-up rebalances\n" + self.story())
            nxt = self._round()
            if nxt is None:
                break
            out.append(nxt)
        return out

    def _round(self) -> Round | None:
        """One round; None when the leader's assignor failed with a stale-claim finding (see `_leader_fails`)."""
        protocol = self.protocol
        self.generation += 1
        leader = next(iter(self.members), None)
        sent: dict[str, Subscription] = {}
        held: dict[str, tuple[TopicPartition, ...]] = {}
        for name, m in self.members.items():
            held[name] = m.owned
            if protocol == EAGER:  # onJoinPrepare revokes everything
                m.owned = ()
            elif protocol == COOPERATIVE:  # ... only the partitions of topics no longer subscribed
                m.owned = held[name] = tuple(tp for tp in m.owned if tp.topic in m.topics)
            user_data = getattr(m.client, "subscription_user_data", None)
            sent[name] = Subscription(m.topics, user_data(m.topics) if user_data else None, m.owned,
                                      m.generation if m.generation >= 0 else None, m.rack)
        metadata = self.partition_infos()
        ppt = build_partitions_per_topic(metadata, sent) if protocol != CONSUMER else \
            subscribed_topic_metadata(metadata, sent)
        stale = self.stale_unsubscribed_claims()
        result: Mapping[str, Sequence[TopicPartition]] = {}
        if leader is not None:
            try:
                result = self.members[leader].client.assign_partitions(ppt, sent)
            except KafkaError as e:
                self._event(f"rebalance: generation {self.generation}, leader {leader} -> "
                            f"{self.info.name} throws {type(e).__name__}")
                if isinstance(e, NullPointerException) and stale:
                    who = next(iter(stale))
                    self._finding(STALE_NPE, who, f"{self.info.name} throws NullPointerException at leader "
                                  f"{leader}: {who} rejoined claiming {_tps(stale[who])} of topics it dropped", sent)
                    self._leader_fails(leader)
                    return None
                raise AssignorFailed(f"{self.info.name} threw {type(e).__name__}: {e}\n" + self.story()) from e
        assignment: dict[str, list[TopicPartition]] = (
            {name: [] for name in self.members} | {m: list(tps) for m, tps in result.items()})
        checked = {name: replace(s, owned_partitions=held[name]) for name, s in sent.items()}
        subject = AssignmentSubject(ppt, checked, assignment, protocol == COOPERATIVE)
        report = check_assignment(subject, set(self.info.guarantees))
        found: list[tuple[str, str]] = []
        if stale:
            report, found = self._split_stale_claims(report, stale)
        revoked = {}
        for name, m in self.members.items():
            new = tuple(assignment[name])
            kept = set(new)
            revoked[name] = tuple(tp for tp in m.owned if tp not in kept)
            m.owned, m.generation = new, self.generation
            if hasattr(m.client, "on_assignment"):
                m.client.on_assignment(list(new), self.generation)
        handover: tuple[Violation, ...] = ()
        if protocol == COOPERATIVE and self.rounds:
            handover = tuple(check_two_rounds(self.rounds[-1].subject, subject))
        r = Round(self.generation, leader or "-", subject, report, revoked, handover)
        self.rounds.append(r)
        self._event(self._describe(r))
        for member, message in found:
            self._finding(STALE_INVALID, member, message, sent)
        return r

    @staticmethod
    def _split_stale_claims(report: Report, stale: Mapping[str, tuple[TopicPartition, ...]]
                            ) -> tuple[Report, list[tuple[str, str]]]:
        """Take out of `report` each `assignment.valid` violation that is exactly stale claims handed back,
        and each `assignment.balanced` one that only counting those partitions as the member's would clear
        (Kafka's balance counts them): (the report without them, [(member, message)])."""
        handed: dict[str, int] = {}
        found: list[tuple[str, str]] = []
        rest = []
        for v in report.violations:
            member: str = v.detail.get("member", "")  # "" (no member) claims nothing
            claimed = {str(tp) for tp in stale.get(member, ())}
            if (v.invariant == "assignment.valid" and v.detail.get("reason") == "topic not subscribed"
                    and claimed.issuperset(v.detail["partitions"])):
                handed[member] = len(v.detail["partitions"])
                found.append((member, f"{v.message}: its user data from an older generation claims "
                                      f"{_tps(stale[member])}"))
            else:
                rest.append(v)

        def explained(v: Violation) -> bool:
            if v.invariant != "assignment.balanced":
                return False
            takers = v.detail.get("could_take") or {v.detail.get("min_member"): v.detail.get("min_count")}
            return all(m in handed and n + handed[m] + 1 >= v.detail["count"] for m, n in takers.items())

        return replace(report, violations=tuple(v for v in rest if not explained(v))), found

    def _leader_fails(self, leader: str) -> None:
        """The leader's poll() throws the assignor's exception (AbstractCoordinator.onJoinLeader fails the
        join future, a non-retriable error): the application's consumer stops, so it leaves the group."""
        del self.members[leader]
        self.pending = True
        self._event(f"{leader}'s poll() throws; its consumer stops and leaves the group")

    def _describe(self, r: Round) -> str:
        given = "; ".join(f"{m} {_tps(tps)}" for m, tps in r.subject.assignment.items()) or "no members"
        text = f"rebalance: generation {r.generation}, leader {r.leader} -> {given}"
        revoked = {m: tps for m, tps in r.revoked.items() if tps}
        if revoked:
            text += "; revoked " + "; ".join(f"{m} {_tps(tps)}" for m, tps in revoked.items())
        return text

    def story(self) -> str:
        return "group events:\n" + "\n".join(f"  {i}. {e}" for i, e in enumerate(self.log, 1))


# --- the budget the test suite runs the model at ------------------------------------------------------------


CI_EXAMPLES, CI_STEPS = 200, 30
DEEP_STEPS = 50


def model_budget() -> tuple[int, int]:
    """(programs, steps) for the test suite's random search of every assignor: the CI size by default;
    `KCHECK_REBALANCE_EXAMPLES=2000` (and `KCHECK_REBALANCE_STEPS`) for deep runs."""
    examples = int(os.environ.get("KCHECK_REBALANCE_EXAMPLES") or 0)
    steps = int(os.environ.get("KCHECK_REBALANCE_STEPS") or 0)
    return examples or CI_EXAMPLES, steps or (DEEP_STEPS if examples else CI_STEPS)


__all__ = [
    "STALE_CLAIM_KINDS", "STALE_INVALID", "STALE_NPE", "AssignorFailed", "ConsumerGroup", "Finding",
    "Member", "ModelFailure", "NotSettled", "Round", "model_budget", "protocol_of",
]
