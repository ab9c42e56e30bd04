"""Plan safety: what a reassignment plan does to each partition while it runs, checked as invariants.

For every partition the plan moves: the replicas added and removed (in the order the controller
records them), the transient replica set (RS = TRS then ORS while the move runs), whether the
leader has to move, and the smallest ISR the move itself produces, computed from the controller's
rules in `reference/reassignment.py`:

* ZooKeeper controller: a new target is built from the ORIGIN (`reassignTo`); replicas the
  previous RS had and the new one lacks (adding replicas of an in-flight reassignment that the
  new target drops) are taken out of the ISR at once (U3); at completion TRS is in the ISR and
  RR leaves it one by one (B4), so the ISR ends as TRS.
* KRaft controller: the current full replica list is the starting point; nothing leaves the ISR
  before completion, when the ISR becomes ISR minus removing. When a move completes depends on the
  release (`reference/releases.py`, `reassignment_completion`): up to 4.2 when every target replica
  is in the ISR (KAFKA-15665), so the ISR ends as TRS; from 4.3.0 when the adding replicas are
  (KAFKA-19975), every target replica too only when the move removes more than it adds. A move that
  replaces one in flight keeps the old adding list when the new plan adds nothing
  (`changePartitionReassignment` sets only non-empty lists): from 4.3.0 such a move whose adding
  replica is also being removed never completes. `PartitionMove(kafka_version=...)` runs the
  release's `PartitionChangeBuilder` rules, ELR as a new cluster of that release has it (checked
  against Kafka's own builder per release: tests/test_release_gaps.py).

The invariants are registered with `applies_to="reassignment"`; `check_reassignment` runs them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from kcheck.invariants.partition_health import isr_text
from kcheck.invariants.registry import Report, Severity, Violation, check_all, register
from kcheck.model import NO_LEADER, Cluster, PartitionReplicas, ReplicaAssignment, TopicPartition
from kcheck.reference.reassignment import (
    KRaftControllerState,
    PartitionReassignmentReplicas,
    StepNotEnabled,
    ZkControllerState,
    ZkReplicaAssignment,
    kraft_reassignment_steps,
    scala_hash_order,
    zk_reassignment_steps,
)
from kcheck.reference.releases import DEFAULT_VERSION, profile

CONTROLLERS = ("kraft", "zk")


@dataclass(frozen=True)
class PartitionMove:
    """One partition of a plan: where it is (describe values) and where the plan sends it."""

    current: PartitionReplicas  # replicas (RS), leader, ISR, adding/removing when a move is in flight
    target: tuple[int, ...]
    controller: str = "kraft"
    kafka_version: str = DEFAULT_VERSION  # whose KRaft controller rules run the move (zk: 3.9's, the only ones)
    min_isr: int = 1  # the topic's min.insync.replicas: KIP-966's ELR (4.1+) reads it

    @property
    def tp(self) -> TopicPartition:
        return self.current.tp

    @cached_property
    def isr_known(self) -> bool:
        return self.current.isr is not None

    @cached_property
    def isr(self) -> tuple[int, ...]:
        """The current ISR; every current replica when the input does not say (a reassignment JSON)."""
        return self.current.isr if self.current.isr is not None else self.current.replicas

    @cached_property
    def leader(self) -> int:
        """The current leader; the preferred replica when the input does not say."""
        if self.current.leader is None:
            return self.current.replicas[0]
        return self.current.leader

    @cached_property
    def plan(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(transient RS, adding, removing) as the controller records them."""
        cur = self.current
        if self.controller == "zk":
            ongoing = ZkReplicaAssignment(cur.replicas, cur.adding, cur.removing)
            a = ongoing.reassign_to(self.target)
            return a.replicas, a.adding_replicas, a.removing_replicas
        p = PartitionReassignmentReplicas.of(cur.replicas, self.target)
        # changePartitionReassignment only sets non-empty lists: an in-flight move's lists survive otherwise
        return p.replicas, p.adding or cur.adding, p.removing or cur.removing

    @property
    def transient(self) -> tuple[int, ...]:
        return self.plan[0]

    @property
    def adding(self) -> tuple[int, ...]:
        return self.plan[1]

    @property
    def removing(self) -> tuple[int, ...]:
        return self.plan[2]

    @cached_property
    def dropped_at_start(self) -> tuple[int, ...]:
        """ZK only: replicas of the current RS that the new RS lacks; U3 stops them at once."""
        if self.controller != "zk":
            return ()
        keep = set(self.transient)
        return tuple(r for r in self.current.replicas if r not in keep)

    @cached_property
    def isr_after_start(self) -> tuple[int, ...]:
        """The ISR once the move has started (ZK U3 takes the dropped replicas out, never the last member)."""
        isr = list(self.isr)
        for r in scala_hash_order(self.dropped_at_start):
            if r in isr and len(isr) > 1:
                isr.remove(r)
        return tuple(isr)

    @cached_property
    def in_flight(self) -> bool:
        return bool(self.current.adding or self.current.removing)

    @cached_property
    def completion_rule(self) -> str:
        """When the KRaft controller of `kafka_version` completes a move (KRaftVersion.reassignment_completion)."""
        return profile(self.kafka_version).reassignment_completion

    @cached_property
    def catch_up_order(self) -> tuple[int, ...]:
        """The order in which the simulation lets replicas join the ISR: the target's, then the other replicas of
        the transient set (a replica the move removes still fetches, and a stale adding one must be in sync
        before a 4.3+ controller completes the move)."""
        return (*self.target, *(r for r in self.transient if r not in self.target))

    @cached_property
    def simulated(self) -> tuple[tuple[int, ...], int, bool] | None:
        """(final replicas, lowest ISR size, completed) from running the reference controller (the release's rules),
        every replica catching up in `catch_up_order`. Only for moves that replace an in-flight reassignment: there
        the stored lists decide the outcome; a move from rest provably ends on the target
        (tests/test_reassignment.py)."""
        cur = self.current
        if not self.in_flight or self.leader not in self.isr:
            return None
        try:
            if self.controller == "zk":
                rows = zk_reassignment_steps(cur.replicas, self.target, leader=self.leader, isr=self.isr,
                                             adding=cur.adding, removing=cur.removing)
                zk = [r.state.zk for r in rows if isinstance(r.state, ZkControllerState)]
                assert len(zk) == len(rows)
                end = zk[-1].assignment
                return (end.replicas, min(len(z.leader_and_isr.isr) for z in zk),
                        not (end.adding_replicas or end.removing_replicas))
            rows = kraft_reassignment_steps(cur.replicas, self.target, leader=self.leader, isr=self.isr,
                                            adding=cur.adding, removing=cur.removing,
                                            version=profile(self.kafka_version).kraft_version(), min_isr=self.min_isr,
                                            catch_up_order=self.catch_up_order)
            kraft = [r.state.registration for r in rows if isinstance(r.state, KRaftControllerState)]
            assert len(kraft) == len(rows)
            return kraft[-1].replicas, min(len(k.isr) for k in kraft), not kraft[-1].is_reassigning
        except StepNotEnabled:  # the describe's state is not one the controller can be in
            return None

    @cached_property
    def completes(self) -> bool:
        """Whether the move completes once every replica is in sync (a 4.3+ KRaft controller never completes one
        whose adding replica is also being removed)."""
        return True if self.simulated is None else self.simulated[2]

    @cached_property
    def kept_lagging_block(self) -> bool:
        """Whether target replicas kept from the current set hold the move back while out of sync: always up to
        4.2 (and ZK); from 4.3.0 (KAFKA-19975) only when the move adds fewer replicas than it removes."""
        if self.controller == "zk":
            return True
        if not (self.adding or self.removing):
            return False  # a KRaft reorder: nothing is in flight, the new order is written at once
        if self.completion_rule == "all-targets":
            return True
        return len(self.adding) < len(self.removing)

    @cached_property
    def final_replicas(self) -> tuple[int, ...]:
        """The replica list the move ends on (the target, unless a replaced in-flight move's lists get in the way)."""
        return self.target if self.simulated is None else self.simulated[0]

    @cached_property
    def closed_form_lowest_isr(self) -> int:
        """min(ISR after the start, |TRS|): the ISR only grows between the start and completion, and completion
        leaves exactly TRS in it."""
        return min(len(self.isr_after_start), len(self.target))

    @cached_property
    def lowest_isr(self) -> int:
        """The smallest ISR size the move produces when every target replica catches up and nothing fails."""
        return self.closed_form_lowest_isr if self.simulated is None else self.simulated[1]

    @cached_property
    def leader_must_move(self) -> bool:
        return self.leader == NO_LEADER or self.leader not in self.target

    @cached_property
    def predicted_leader(self) -> int:
        """The leader once the move completes: the current one when it stays a target replica, else the first target
        replica (every one is in the ISR at completion; the reassign / ONLINE election prefers it). NO_LEADER for a
        partition without one: nothing replicates until a replica it may elect (in the ISR, or KIP-966's ELR when the
        ISR is empty: PartitionChangeBuilder.isValidNewLeader) comes back, so the move waits and elects nobody;
        only an unclean election (unclean.leader.election.enable) would pick another replica."""
        if self.leader == NO_LEADER:
            return NO_LEADER
        return self.target[0] if self.leader_must_move else self.leader

    @cached_property
    def is_no_op(self) -> bool:
        return self.target == self.current.replicas and not self.current.adding and not self.current.removing


@dataclass(frozen=True)
class ReassignmentSubject:
    """A plan against the cluster it would run on."""

    moves: tuple[PartitionMove, ...]
    cluster: Cluster
    min_insync_replicas: Mapping[str, int] = field(default_factory=dict)  # per topic
    default_min_insync_replicas: int = 1
    max_replicas_per_broker: int = 10_000
    current: ReplicaAssignment | None = None  # every partition known, for the transient load

    def min_isr(self, topic: str) -> int:
        return self.min_insync_replicas.get(topic, self.default_min_insync_replicas)


def _register(id: str, title: str, severity: Severity, source: str) -> Callable[[Callable[[Any], list[Violation]]],
                                                                               Callable[[Any], list[Violation]]]:
    return register(id, title, severity, source, "reassignment")


def _where(m: PartitionMove) -> str:
    return f"partition {m.tp}"


@_register("reassignment.brokers-registered", "every target broker is in the cluster", Severity.HARD,
           "ReplicationControlManager.validateManualPartitionAssignment / KafkaController.validateReplicas")
def _brokers_registered(s: ReassignmentSubject) -> list[Violation]:
    known = set(s.cluster.broker_ids)
    out = []
    for m in s.moves:
        unknown = [b for b in m.target if b not in known]
        if unknown:
            out.append(Violation("reassignment.brokers-registered", Severity.HARD, _where(m),
                                 f"partition {m.tp}: target broker(s) {', '.join(map(str, unknown))} are not in the "
                                 "cluster (Kafka rejects the plan: INVALID_REPLICA_ASSIGNMENT)",
                                 {"partition": str(m.tp), "brokers": unknown}))
    return out


@_register("reassignment.reaches-target", "the controller ends the move on the proposed replicas", Severity.HARD,
           "KafkaController.onPartitionReassignment / ReplicationControlManager.changePartitionReassignment")
def _reaches_target(s: ReassignmentSubject) -> list[Violation]:
    out = []
    for m in s.moves:
        if m.final_replicas != m.target:
            where = (f"replacing the reassignment in flight (adding {list(m.current.adding)}, removing "
                     f"{list(m.current.removing)})")
            if not m.completes:  # a 4.3+ KRaft controller waits for a replica it also removes
                stuck = sorted(set(m.adding) & set(m.removing))
                outcome = (f"never completes: it stays on {list(m.final_replicas)} with adding {list(m.adding)} and "
                           f"removing {list(m.removing)}; Kafka {m.kafka_version}'s controller completes a move only "
                           "once its adding replicas are in the ISR left after the removing ones go, and "
                           f"{', '.join(map(str, stuck))} {'is' if len(stuck) == 1 else 'are'} both (KAFKA-19975)")
            else:
                controller = "zk controller" if m.controller == "zk" else f"KRaft controller, Kafka {m.kafka_version}"
                outcome = f"ends on {list(m.final_replicas)}, not {list(m.target)} ({controller})"
            out.append(Violation("reassignment.reaches-target", Severity.HARD, _where(m),
                                 f"partition {m.tp}: {where} {outcome}",
                                 {"partition": str(m.tp), "final": list(m.final_replicas), "target": list(m.target),
                                  "completes": m.completes}))
    return out


@_register("reassignment.min-isr-now", "the current ISR has at least min.insync.replicas members", Severity.HARD,
           "min.insync.replicas (acks=all producers fail below it)")
def _min_isr_now(s: ReassignmentSubject) -> list[Violation]:
    out = []
    for m in s.moves:
        need = s.min_isr(m.tp.topic)
        if len(m.isr) < need:
            out.append(Violation("reassignment.min-isr-now", Severity.HARD, _where(m),
                                 f"partition {m.tp}: {isr_text(m.isr)}, fewer than "
                                 f"min.insync.replicas={need} before the move starts",
                                 {"partition": str(m.tp), "isr": list(m.isr), "min_insync_replicas": need}))
    return out


@_register("reassignment.min-isr-during-move", "the move never takes the ISR below min.insync.replicas",
           Severity.HARD, "KafkaController.onPartitionReassignment (U3, B4) / PartitionReassignmentReplicas")
def _min_isr_during(s: ReassignmentSubject) -> list[Violation]:
    out = []
    for m in s.moves:
        need = s.min_isr(m.tp.topic)
        if len(m.isr) < need or m.lowest_isr >= need:
            continue  # already below: min-isr-now says so
        when = ("at the start, when the new plan drops in-flight replicas "
                f"{', '.join(map(str, m.dropped_at_start))}" if len(m.isr_after_start) < need
                else f"at completion: the target has only {len(m.target)} replica(s)")
        out.append(Violation("reassignment.min-isr-during-move", Severity.HARD, _where(m),
                             f"partition {m.tp}: the ISR falls to {m.lowest_isr} (min.insync.replicas={need}) {when}",
                             {"partition": str(m.tp), "lowest_isr": m.lowest_isr, "min_insync_replicas": need}))
    return out


@_register("reassignment.min-isr-headroom", "one broker failure during the move keeps min.insync.replicas",
           Severity.SOFT, "min.insync.replicas; moves run for as long as the new replicas take to catch up")
def _headroom(s: ReassignmentSubject) -> list[Violation]:
    out = []
    for m in s.moves:
        need = s.min_isr(m.tp.topic)
        low = min(len(m.isr), m.lowest_isr)
        if low == need and need > 0 and len(m.isr) >= need:
            out.append(Violation("reassignment.min-isr-headroom", Severity.SOFT, _where(m),
                                 f"partition {m.tp}: the ISR is down to {low} = min.insync.replicas during the move; "
                                 "one more failure stops acks=all writes",
                                 {"partition": str(m.tp), "lowest_isr": low, "min_insync_replicas": need}))
    return out


@_register("reassignment.target-in-sync-catch-up", "target replicas already in the replica set are in sync",
           Severity.SOFT, "PartitionReassignmentReplicas.maybeCompleteReassignment (KAFKA-15665; KAFKA-19975 in 4.3.0)")
def _stale_kept(s: ReassignmentSubject) -> list[Violation]:
    out = []
    for m in s.moves:
        if not m.isr_known:
            continue
        lagging = [r for r in m.target if r in m.current.replicas and r not in m.isr]
        if lagging:
            if not m.completes:
                what = "the move never completes anyway (reassignment.reaches-target)"
            elif m.kept_lagging_block:
                what = "the move cannot complete until they catch up"
            elif m.controller == "kraft" and not (m.adding or m.removing):
                what = "the move only reorders the replicas: it completes at once and they stay out of sync"
            else:
                what = (f"Kafka {m.kafka_version} completes the move without them (KAFKA-19975: it adds no fewer "
                        "replicas than it removes), leaving the partition under-replicated until they catch up")
            out.append(Violation("reassignment.target-in-sync-catch-up", Severity.SOFT, _where(m),
                                 f"partition {m.tp}: kept replica(s) {', '.join(map(str, lagging))} are out of sync; "
                                 + what, {"partition": str(m.tp), "lagging": lagging,
                                          "blocks_completion": m.kept_lagging_block}))
    return out


@_register("reassignment.transient-max-replicas-per-broker", "replicas per broker while the plan runs",
           Severity.HARD, "max.replicas.per.broker counted over RS = TRS + ORS while every move is in flight")
def _transient_load(s: ReassignmentSubject) -> list[Violation]:
    moved = {m.tp: m.transient for m in s.moves}
    counts: Counter[int] = Counter()
    for p in (s.current or ReplicaAssignment(tuple(m.current for m in s.moves))):
        counts.update(moved.get(p.tp, p.replicas))
    out = []
    for b, n in sorted(counts.items()):
        if n > s.max_replicas_per_broker:
            out.append(Violation("reassignment.transient-max-replicas-per-broker", Severity.HARD, f"broker {b}",
                                 f"broker {b} holds {n} replicas while the plan runs, above "
                                 f"max.replicas.per.broker={s.max_replicas_per_broker}",
                                 {"broker": b, "count": n, "limit": s.max_replicas_per_broker}))
    return out


def check_reassignment(subject: ReassignmentSubject, only: set[str] | None = None) -> Report:
    """Check a plan against every `reassignment.*` invariant (or the ids in `only`)."""
    return check_all(subject, "reassignment", only)


def target_assignment(subject: ReassignmentSubject) -> ReplicaAssignment:
    """The placement once every move completes: the current assignment with the plan's targets applied."""
    moved = {m.tp: m.target for m in subject.moves}
    base = subject.current or ReplicaAssignment(tuple(m.current for m in subject.moves))
    return ReplicaAssignment(tuple(PartitionReplicas(p.topic, p.partition, moved.get(p.tp, p.target_replicas))
                                   for p in base), base.replication_factors)  # the RF the topic declares
