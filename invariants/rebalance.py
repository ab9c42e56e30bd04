"""One consumer group over time, as a Hypothesis state machine that any assignor can drive.

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

`ConsumerGroup` is the plain model (scripted tests use it directly); `rebalance_machine` wraps it in a
`RuleBasedStateMachine`; `model_settings` is the CI size, or the deep one when
`KCHECK_REBALANCE_EXAMPLES` (and optionally `KCHECK_REBALANCE_STEPS`) is set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import HealthCheck, currently_in_test_context, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kcheck.invariants.assignment import AssignmentSubject, check_assignment, check_two_rounds
from kcheck.invariants.registry import Report, Violation
from kcheck.model.group import PartitionInfo, Subscription
from kcheck.model.vocabulary import Broker, TopicPartition
from kcheck.reference.assignors.client import build_partitions_per_topic
from kcheck.reference.assignors.registry import AssignorInfo, ServerSideAdapter, resolve_assignor
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


class AssignorFailed(AssertionError):
    """The assignor threw (Kafka would fail the rebalance with the same exception)."""


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

    def rejoin(self, name: str) -> None:
        """The timed-out client rejoins: its generation was reset, so it gives up its partitions as lost
        (`onJoinPrepare`), but its assignor keeps what it remembers (StickyAssignor: the old assignment
        and generation, sent again as user data - what KIP-341's generation marker is for)."""
        m = self.timed_out.pop(name)
        m.owned, m.generation = (), -1
        self.members[name] = m
        self.pending = True
        self._event(f"{name} rejoins with the client state of its timed-out session")

    def stale_claims(self, name: str) -> tuple[TopicPartition, ...]:
        """The partitions a (timed-out) member's user data still claims."""
        m = self.members.get(name) or self.timed_out[name]
        data = getattr(m.client, "subscription_user_data", None)
        if data is None or self.protocol != EAGER:
            return ()
        return m.client.member_data(Subscription(m.topics, data(m.topics))).partitions

    # --- rebalances ---------------------------------------------------------------------------------------

    def rebalance(self) -> list[Round]:
        """One rebalance; cooperative assignors run follow-up rounds while members revoke partitions."""
        self.pending = False
        out = [self._round()]
        while self.protocol == COOPERATIVE and any(out[-1].revoked.values()):
            if len(out) > MAX_FOLLOW_UPS:
                raise AssertionError(f"still revoking after {MAX_FOLLOW_UPS} follow-up rebalances\n" + self.story())
            out.append(self._round())
        return out

    def _round(self) -> Round:
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
            {t: metadata[t] for t in sorted({t for s in sent.values() for t in s.topics}) if t in metadata}
        result: Mapping[str, Sequence[TopicPartition]] = {}
        if leader is not None:
            try:
                result = self.members[leader].client.assign_partitions(ppt, sent)
            except KafkaError as e:
                self._event(f"rebalance: generation {self.generation}, leader {leader} -> "
                            f"{self.info.name} throws {type(e).__name__}")
                raise AssignorFailed(f"{self.info.name} threw {type(e).__name__}: {e}\n" + self.story()) from e
        assignment = {name: [] for name in self.members} | {m: list(tps) for m, tps in result.items()}
        checked = {name: replace(s, owned_partitions=held[name]) for name, s in sent.items()}
        subject = AssignmentSubject(ppt, checked, assignment, protocol == COOPERATIVE)
        report = check_assignment(subject, set(self.info.guarantees))
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
        return r

    def _describe(self, r: Round) -> str:
        given = "; ".join(f"{m} {_tps(tps)}" for m, tps in r.subject.assignment.items()) or "no members"
        text = f"rebalance: generation {r.generation}, leader {r.leader} -> {given}"
        revoked = {m: tps for m, tps in r.revoked.items() if tps}
        if revoked:
            text += "; revoked " + "; ".join(f"{m} {_tps(tps)}" for m, tps in revoked.items())
        return text

    def story(self) -> str:
        return "group events:\n" + "\n".join(f"  {i}. {e}" for i, e in enumerate(self.log, 1))


# --- the state machine ------------------------------------------------------------------------------------


def rebalance_machine(
    assignor_name: str, max_members: int = 4, max_topics: int = 3, max_partitions: int = 6,
    allow_stale_unsubscribed_claims: bool = False,
) -> type[RuleBasedStateMachine]:
    """A state machine of one group driven by `assignor_name` (a built-in name or `module:object`).

    `allow_stale_unsubscribed_claims` lets a timed-out StickyAssignor member rejoin while its stale
    user data claims partitions of a topic it no longer subscribes to. Kafka's general sticky path
    then hands such a partition back to it as its older-generation owner (`performReassignments`
    checks neither the subscription nor that the member was set aside as fixed), breaking
    `assignment.valid` or throwing a NullPointerException; see test_rebalance_model's finding tests.
    Off by default so the model keeps checking everything else.
    """
    info = resolve_assignor(assignor_name)
    names = tuple(f"c{i}" for i in range(1, max_members + 1))
    topic_names = tuple(f"t{i}" for i in range(1, max_topics + 1))
    subscription = st.lists(st.sampled_from(topic_names), min_size=1, max_size=max_topics, unique=True)

    class RebalanceModel(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.group: ConsumerGroup | None = None
            self.failing = False  # teardown must not rebalance on top of a failure

        @initialize(sizes=st.lists(st.integers(1, 4), min_size=max_topics, max_size=max_topics),
                    replication=st.integers(1, 3), broker_racks=st.booleans())
        def create_topics(self, sizes: list[int], replication: int, broker_racks: bool) -> None:
            self.group = ConsumerGroup(info, dict(zip(topic_names, sizes, strict=True)), replication, broker_racks)

        @precondition(lambda self: len(self.group.members) + len(self.group.timed_out) < max_members)
        @rule(topics=subscription, rack=st.sampled_from((None, *RACKS)))
        def join(self, topics: list[str], rack: str | None) -> None:
            """A new consumer joins under the lowest free name (c1, c2, ...), so every join adds a member."""
            member = next(n for n in names if n not in self.group.members and n not in self.group.timed_out)
            self.group.join(member, topics, rack)

        @precondition(lambda self: self.group.members)
        @rule(member=st.sampled_from(names))
        def leave(self, member: str) -> None:
            if member in self.group.members:
                self.group.leave(member)

        @precondition(lambda self: self.group.members)
        @rule(member=st.sampled_from(names), topics=subscription)
        def subscribe(self, member: str, topics: list[str]) -> None:
            if member in self.group.members and not self._stale_unsubscribed(member, topics):
                self.group.subscribe(member, topics)

        def _stale_unsubscribed(self, member: str, topics: Sequence[str]) -> bool:
            """Would `member` reach a rebalance with stale (older-generation) sticky user data claiming
            partitions of topics it does not subscribe to? Kafka's general sticky path hands such a
            partition back to it as its previous owner (`performReassignments` and `prevAssignment` in
            AbstractStickyAssignor check neither the subscription nor that the owner was set aside as
            fixed): a known finding with its own test. Unless allowed, the model avoids the state."""
            if allow_stale_unsubscribed_claims:
                return False
            m = self.group.members.get(member) or self.group.timed_out[member]
            if member in self.group.members and m.generation >= 0:
                return False  # not stale: its user data carries the current generation
            stale = [tp for tp in self.group.stale_claims(member) if tp.topic not in topics]
            if stale:
                _note(f"({member} would reach the rebalance claiming {_tps(stale)} of topics it dropped: skipped)")
            return bool(stale)

        @precondition(lambda self: min(self.group.partitions.values()) < max_partitions)
        @rule(topic=st.sampled_from(topic_names), count=st.integers(1, 2))
        def add_partitions(self, topic: str, count: int) -> None:
            count = min(count, max_partitions - self.group.partitions[topic])
            if count > 0:
                self.group.add_partitions(topic, count)

        @precondition(lambda self: self.group.members)
        @rule(member=st.sampled_from(names))
        def time_out(self, member: str) -> None:
            if member in self.group.members:
                self.group.time_out(member)

        @precondition(lambda self: self.group.timed_out and len(self.group.members) < max_members)
        @rule(member=st.sampled_from(names))
        def rejoin(self, member: str) -> None:
            if member not in self.group.timed_out:
                return
            if self._stale_unsubscribed(member, self.group.timed_out[member].topics):
                return
            self.group.rejoin(member)

        @precondition(lambda self: self.group.members)  # an empty group has nothing to assign
        @rule()
        def rebalance(self) -> None:
            self.failing = True
            for r in self.group.rebalance():
                if r.broken:
                    raise AssertionError(
                        f"{info.name} broke its guarantees in generation {r.generation}:\n"
                        + "\n".join(f"  {v.invariant} at {v.where}: {v.message}" for v in r.broken)
                        + "\n" + self.group.story())
            self.failing = False

        @invariant()
        def ownership_is_exclusive(self) -> None:
            """No partition is owned by two members at once (the consumer group's safety property)."""
            if self.group is None:
                return
            seen: dict[TopicPartition, str] = {}
            for name, m in self.group.members.items():
                for tp in m.owned:
                    if tp in seen:
                        self.failing = True
                        raise AssertionError(f"{tp} is owned by {seen[tp]} and {name}\n" + self.group.story())
                    seen[tp] = name

        @invariant()
        def settled_group_owns_everything(self) -> None:
            """After a rebalance (and its follow-ups) with no event since, every subscribed partition has an owner."""
            g = self.group
            if g is None or g.pending or not g.rounds or not g.members:
                return
            owned = {tp for m in g.members.values() for tp in m.owned}
            subscribed = {t for m in g.members.values() for t in m.topics}
            missing = [TopicPartition(t, i) for t in sorted(subscribed) for i in range(g.partitions[t])
                       if TopicPartition(t, i) not in owned]
            if missing and "assignment.complete" in info.guarantees:
                self.failing = True
                raise AssertionError(f"settled group leaves {_tps(missing)} unowned\n" + g.story())

        def teardown(self) -> None:
            # Swarm testing may switch the rebalance rule off: settle whatever happened last.
            if self.group is not None and self.group.pending and not self.failing:
                self.rebalance()

    RebalanceModel.__name__ = RebalanceModel.__qualname__ = f"Rebalance_{assignor_name.replace('-', '_')}"
    return RebalanceModel


CI_EXAMPLES, CI_STEPS = 200, 30
DEEP_STEPS = 50


def model_settings() -> settings:
    """CI size by default; `KCHECK_REBALANCE_EXAMPLES=2000` (and `KCHECK_REBALANCE_STEPS`) for deep runs."""
    examples = int(os.environ.get("KCHECK_REBALANCE_EXAMPLES") or 0)
    steps = int(os.environ.get("KCHECK_REBALANCE_STEPS") or 0)
    return settings(
        max_examples=examples or CI_EXAMPLES,
        stateful_step_count=steps or (DEEP_STEPS if examples else CI_STEPS),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


__all__ = [
    "AssignorFailed", "ConsumerGroup", "Member", "Round", "model_settings", "protocol_of",
    "rebalance_machine",
]
