"""Whole-partition health of a cluster as `kafka-topics --describe` shows it, checked as invariants.

What Kafka itself holds true of every partition, and what its tools and controllers flag:

* the leader is a replica and in the ISR; the ISR is within the replicas (KRaft's
  `ReplicationControlManager` refuses an AlterPartition whose ISR fails `Replicas.validateIsr` or leaves
  the leader out; `PartitionChangeBuilder.isValidNewLeader` elects only ISR members, or ELR members when
  the ISR is empty, and moves an elected ELR member into the ISR);
* KIP-966's ELR and last known ELR are within the replicas, the ELR disjoint from the ISR and the last
  known ELR disjoint from both (`PartitionChangeBuilder.maybePopulateTargetElr`);
* `Leader: none` is an offline partition (`TopicCommand`'s `--unavailable-partitions`, the controller's
  OfflinePartitionsCount); an ISR below `min.insync.replicas` is `--under-min-isr-partitions`
  (`TopicCommand.PartitionDescription.isUnderMinIsr`: no leader, or ISR size below the topic's value);
* a leader that is not the preferred replica, by the controller's own rule (`reference/leader_balance.py`):
  KRaft's `maybeBalancePartitionLeaders` takes every such partition (the percentage is ignored), ZooKeeper's
  `checkAndTriggerAutoLeaderRebalance` only a broker's partitions once its share of them led elsewhere is above
  `leader.imbalance.per.broker.percentage`;
* a reassignment in flight (`Adding Replicas` / `Removing Replicas`) that cannot complete or runs unsafely:
  `PartitionReassignmentReplicas.maybeCompleteReassignment` completes it only once the ISR without the
  removing replicas is non-empty and holds the release's required replicas (`reference/releases.py`,
  `reassignment_completion`; KAFKA-15665, KAFKA-19975).

Registered with `applies_to="partition-health"`; `check_partition_health` runs them. Partitions whose live
state is unknown (a reassignment JSON: no leader, no ISR) are not judged; an invariant with nothing to judge
is reported in `Report.skipped` with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from kcheck.invariants.registry import Report, Severity, Violation, check_all, register
from kcheck.model import NO_LEADER, PartitionReplicas, ReplicaAssignment
from kcheck.reference.election import maybe_complete_reassignment
from kcheck.reference.leader_balance import kraft_balance_partition_leaders, registration_of, zk_auto_leader_rebalance
from kcheck.reference.releases import DEFAULT_VERSION, profile

CONTROLLERS = ("kraft", "zk")
DEFAULT_MIN_ISR = 1  # the broker default of min.insync.replicas
DEFAULT_IMBALANCE_PERCENTAGE = 10  # leader.imbalance.per.broker.percentage's default (ZooKeeper controller)


@dataclass(frozen=True)
class HealthSubject:
    """A cluster's partitions with their live state, and what the checks need to know about the cluster."""

    assignment: ReplicaAssignment
    min_isr: Mapping[str, int] = field(default_factory=dict)  # per topic, from the describe's Configs
    default_min_isr: int | None = None  # for topics without one (--min-insync-replicas), else the broker default 1
    controller: str = "kraft"
    kafka_version: str = DEFAULT_VERSION
    leader_imbalance_per_broker_percentage: int = DEFAULT_IMBALANCE_PERCENTAGE

    def min_isr_of(self, topic: str) -> tuple[int, str]:
        """(min.insync.replicas, where it comes from) for a topic."""
        if topic in self.min_isr:
            return self.min_isr[topic], "the topic's Configs"
        if self.default_min_isr is not None:
            return self.default_min_isr, "--min-insync-replicas"
        return DEFAULT_MIN_ISR, "the broker default"

    @cached_property
    def live(self) -> tuple[PartitionReplicas, ...]:
        """Partitions whose leader the input states (a describe); a reassignment JSON states none."""
        return tuple(p for p in self.assignment if p.leader is not None)

    @cached_property
    def with_isr(self) -> tuple[PartitionReplicas, ...]:
        return tuple(p for p in self.live if p.isr is not None)

    @cached_property
    def in_flight(self) -> tuple[PartitionReplicas, ...]:
        return tuple(p for p in self.with_isr if p.adding or p.removing)


def _no_state(s: HealthSubject) -> str | None:
    return None if s.live else "no live state (leader, ISR) in the input, e.g. a reassignment JSON"


def _no_isr(s: HealthSubject) -> str | None:
    return _no_state(s) or (None if s.with_isr else "the input has no Isr: column")


def _no_elr(s: HealthSubject) -> str | None:
    if _no_isr(s):
        return _no_isr(s)
    if any(p.elr is not None or p.last_known_elr is not None for p in s.with_isr):
        return None
    return "no Elr:/LastKnownElr: values in the input (kafka-topics before 3.8, or N/A: ELR not reported)"


def _no_move(s: HealthSubject) -> str | None:
    return _no_isr(s) or (None if s.in_flight else "no reassignment in flight (no Adding/Removing Replicas)")


def _register(id: str, title: str, severity: Severity, source: str,
              not_applicable: Callable[[Any], str | None]) -> Callable[[Callable[[Any], list[Violation]]],
                                                                     Callable[[Any], list[Violation]]]:
    return register(id, title, severity, source, "partition-health", not_applicable)


def _ids(xs: tuple[int, ...] | list[int]) -> str:
    return ",".join(map(str, xs)) or "(empty)"


def _v(id: str, severity: Severity, p: PartitionReplicas, message: str, **detail: Any) -> Violation:
    return Violation(id, severity, f"partition {p.tp}", f"partition {p.tp}: {message}",
                     {"partition": str(p.tp), **detail})


@_register("health.leader-in-replicas", "the leader is one of the partition's replicas", Severity.HARD,
           "PartitionChangeBuilder.isValidNewLeader (KRaft) / PartitionLeaderElectionAlgorithms (ZooKeeper): "
           "leaders are elected from the replicas", _no_state)
def _leader_in_replicas(s: HealthSubject) -> list[Violation]:
    return [_v("health.leader-in-replicas", Severity.HARD, p, f"leader {p.leader} is not a replica "
               f"(Replicas: {_ids(p.replicas)})", leader=p.leader, replicas=list(p.replicas))
            for p in s.live if p.leader != NO_LEADER and p.leader not in p.replicas]


@_register("health.leader-in-isr", "the leader is in the ISR", Severity.HARD,
           "ReplicationControlManager.alterPartition ('The ISR must always include the current leader') / "
           "PartitionChangeBuilder.isValidNewLeader", _no_isr)
def _leader_in_isr(s: HealthSubject) -> list[Violation]:
    return [_v("health.leader-in-isr", Severity.HARD, p, f"leader {p.leader} is not in the ISR ({_ids(p.isr)})",
               leader=p.leader, isr=list(p.isr))
            for p in s.with_isr if p.isr is not None and p.leader != NO_LEADER and p.leader in p.replicas
            and p.leader not in p.isr]


@_register("health.isr-within-replicas", "every ISR member is a replica, listed once", Severity.HARD,
           "Replicas.validateIsr (ReplicationControlManager rejects an AlterPartition with INVALID_REQUEST)", _no_isr)
def _isr_within(s: HealthSubject) -> list[Violation]:
    out = []
    for p in s.with_isr:
        assert p.isr is not None
        stray = [b for b in p.isr if b not in p.replicas]
        twice = sorted({b for b in p.isr if p.isr.count(b) > 1})
        if stray or twice:
            what = (f"ISR member(s) {_ids(stray)} are not replicas (Replicas: {_ids(p.replicas)})" if stray
                    else f"ISR lists broker(s) {_ids(twice)} twice")
            out.append(_v("health.isr-within-replicas", Severity.HARD, p, what, isr=list(p.isr),
                          replicas=list(p.replicas)))
    return out


@_register("health.elr-within-replicas", "ELR and last known ELR members are replicas (KIP-966)", Severity.HARD,
           "KIP-966; PartitionChangeBuilder.maybePopulateTargetElr builds the ELR from former ISR members", _no_elr)
def _elr_within(s: HealthSubject) -> list[Violation]:
    out = []
    for p in s.with_isr:
        for name, xs in (("ELR", p.elr), ("LastKnownElr", p.last_known_elr)):
            stray = [b for b in xs or () if b not in p.replicas]
            if stray:
                out.append(_v("health.elr-within-replicas", Severity.HARD, p,
                              f"{name} member(s) {_ids(stray)} are not replicas (Replicas: {_ids(p.replicas)})",
                              field=name, members=stray))
    return out


@_register("health.elr-disjoint-isr", "the ELR is disjoint from the ISR, the last known ELR from both (KIP-966)",
           Severity.HARD, "KIP-966; PartitionChangeBuilder.maybePopulateTargetElr (ELR = former ISR minus target "
           "ISR; last known ELR minus ISR and ELR)", _no_elr)
def _elr_disjoint(s: HealthSubject) -> list[Violation]:
    out = []
    for p in s.with_isr:
        isr = set(p.isr or ())
        both = sorted(isr & set(p.elr or ()))
        if both:
            out.append(_v("health.elr-disjoint-isr", Severity.HARD, p, f"broker(s) {_ids(both)} are in both the ISR "
                          f"({_ids(p.isr or ())}) and the ELR ({_ids(p.elr or ())})", members=both))
        lke = sorted(set(p.last_known_elr or ()) & (isr | set(p.elr or ())))
        if lke:
            out.append(_v("health.elr-disjoint-isr", Severity.HARD, p, f"LastKnownElr member(s) {_ids(lke)} are also "
                          "in the ISR or the ELR", members=lke))
    return out


@_register("health.offline-partition", "the partition has a leader", Severity.HARD,
           "TopicCommand --unavailable-partitions (PartitionDescription.hasLeader); the controller's "
           "OfflinePartitionsCount", _no_state)
def _offline(s: HealthSubject) -> list[Violation]:
    out = []
    for p in s.live:
        if p.leader != NO_LEADER:
            continue
        if p.isr:
            why = f"no leader until an ISR replica ({_ids(p.isr)}) comes back"
        elif p.elr:
            why = f"the ISR is empty; an ELR replica ({_ids(p.elr)}) can be elected when it comes back (KIP-966)"
        else:
            why = "the ISR is empty: no leader unless an unclean election (unclean.leader.election.enable) " \
                  "picks a replica that may have lost data"
        out.append(_v("health.offline-partition", Severity.HARD, p, f"offline (Leader: none): {why}",
                      isr=None if p.isr is None else list(p.isr)))
    return out


@_register("health.under-min-isr", "the ISR has at least min.insync.replicas members", Severity.HARD,
           "TopicCommand --under-min-isr-partitions (PartitionDescription.isUnderMinIsr); acks=all producers get "
           "NOT_ENOUGH_REPLICAS below it", _no_isr)
def _under_min_isr(s: HealthSubject) -> list[Violation]:
    out = []
    for p in s.with_isr:
        assert p.isr is not None
        need, source = s.min_isr_of(p.topic)
        if p.leader == NO_LEADER or len(p.isr) < need:
            # isUnderMinIsr counts a partition without a leader whatever its ISR
            what = (f"ISR {_ids(p.isr)} has {len(p.isr)} member(s), below" if len(p.isr) < need
                    else "no leader, so Kafka counts it under")
            out.append(_v("health.under-min-isr", Severity.HARD, p, f"{what} min.insync.replicas={need} "
                          f"({source}): acks=all writes fail", isr=list(p.isr), min_insync_replicas=need,
                          min_insync_replicas_from=source))
    return out


@_register("health.preferred-leader", "the leader is the preferred replica, by the controller's imbalance rule",
           Severity.SOFT, "KRaft: ReplicationControlManager.maybeBalancePartitionLeaders (every partition not led "
           "by replicas[0]); ZooKeeper: KafkaController.checkAndTriggerAutoLeaderRebalance "
           "(leader.imbalance.per.broker.percentage)", _no_isr)
def _preferred(s: HealthSubject) -> list[Violation]:
    parts = [p for p in s.with_isr if p.leader != NO_LEADER]
    if s.controller == "zk":
        # Every broker counts as live: a describe does not say which brokers are up.
        live = {b for p in parts for b in p.replicas}
        run = zk_auto_leader_rebalance(parts, live, s.leader_imbalance_per_broker_percentage)
        elected = {m.tp for m in run.moves}
        out = []
        for b in run.brokers:
            if not b.triggered:
                continue
            mine = [p for p in parts if p.replicas[0] == b.broker and p.leader != b.broker]
            for p in mine:
                fate = (f"the controller elects {b.broker}" if p.tp in elected
                        else f"the controller cannot elect {b.broker} (not in the ISR)")
                out.append(_v("health.preferred-leader", Severity.SOFT, p,
                              f"led by {p.leader}, not its preferred replica {b.broker}; broker {b.broker} leads "
                              f"{b.partitions - b.not_led} of the {b.partitions} partitions it prefers "
                              f"({b.ratio:.0%} led elsewhere > leader.imbalance.per.broker.percentage="
                              f"{s.leader_imbalance_per_broker_percentage}): {fate}",
                              leader=p.leader, preferred=b.broker, ratio=b.ratio))
        return out
    regs = [(p.tp, registration_of(p)) for p in parts if p.leader != p.replicas[0]]
    # getTopicEffectiveMinIsr: the topic's value, at most its replication factor (partition 0's replica count)
    rf = {p.topic: len(p.replicas) for p in reversed(parts)}
    min_isr = {t: min(s.min_isr_of(t)[0], n) for t, n in rf.items()}
    everyone = {b for p in parts for b in p.replicas}
    run = kraft_balance_partition_leaders(regs, everyone, max_elections=len(regs) + 1,
                                          version=profile(s.kafka_version).kraft_version(), min_isr=min_isr)
    moved = {m.tp: m.to_leader for m in run.moves}
    by_tp = {p.tp: p for p in parts}
    out = []
    for tp, _ in regs:
        p = by_tp[tp]
        fate = (f"the KRaft controller's leader balance elects {moved[tp]}" if tp in moved
                else f"the controller's leader balance cannot elect it ({p.replicas[0]} is not in the ISR)")
        out.append(_v("health.preferred-leader", Severity.SOFT, p, f"led by {p.leader}, not its preferred replica "
                      f"{p.replicas[0]}: {fate}", leader=p.leader, preferred=p.replicas[0]))
    return out


@_register("health.reassignment-completes", "a reassignment in flight can complete", Severity.HARD,
           "PartitionReassignmentReplicas.maybeCompleteReassignment (KAFKA-15665; KAFKA-19975 from 4.3.0)", _no_move)
def _move_completes(s: HealthSubject) -> list[Violation]:
    rule = "all-targets" if s.controller == "zk" else profile(s.kafka_version).reassignment_completion
    out = []
    for p in s.in_flight:
        target = p.target_replicas
        down = sorted(set(target) & set(p.offline or ()))
        if down:
            out.append(_v("health.reassignment-completes", Severity.HARD, p,
                          f"the reassignment to {_ids(target)} waits for offline replica(s) {_ids(down)}",
                          offline=down))
            continue
        if p.leader == NO_LEADER:
            continue  # health.offline-partition: nothing replicates until a leader is elected
        # Every replica in sync: if even that does not complete the move, nothing will.
        if maybe_complete_reassignment(p.removing, p.adding, p.replicas, p.replicas, rule) is None:
            stuck = sorted(set(p.adding) & set(p.removing))
            why = (f"broker(s) {_ids(stuck)} are both adding and removing: Kafka {s.kafka_version}'s controller "
                   "waits for adding replicas in the ISR left once the removing ones go (KAFKA-19975)" if stuck
                   else "the replicas left once the removing ones go cannot satisfy the controller")
            out.append(_v("health.reassignment-completes", Severity.HARD, p,
                          f"the reassignment (adding {_ids(p.adding)}, removing {_ids(p.removing)}) never completes: "
                          + why, adding=list(p.adding), removing=list(p.removing), rule=rule))
    return out


@_register("health.reassignment-safe", "a reassignment in flight keeps an in-sync copy it does not remove and "
           "min.insync.replicas", Severity.HARD, "PartitionReassignmentReplicas.maybeCompleteReassignment (the ISR "
           "without the removing replicas must be non-empty); min.insync.replicas", _no_move)
def _move_safe(s: HealthSubject) -> list[Violation]:
    out = []
    for p in s.in_flight:
        isr = p.isr or ()
        if isr and set(isr) <= set(p.removing):
            out.append(_v("health.reassignment-safe", Severity.HARD, p,
                          f"every ISR member ({_ids(isr)}) is a replica the reassignment removes: the only in-sync "
                          "copies are on brokers leaving, and the move cannot complete until a target replica "
                          "catches up", isr=list(isr), removing=list(p.removing)))
            continue
        need, source = s.min_isr_of(p.topic)
        behind = [b for b in p.adding if b not in isr]
        if len(isr) < need and behind:
            out.append(_v("health.reassignment-safe", Severity.HARD, p,
                          f"ISR {_ids(isr)} is below min.insync.replicas={need} ({source}) while adding replica(s) "
                          f"{_ids(behind)} are still catching up: acks=all writes fail until they join the ISR",
                          isr=list(isr), adding_behind=behind, min_insync_replicas=need))
    return out


def check_partition_health(assignment: ReplicaAssignment, min_isr: Mapping[str, int], default_min_isr: int | None,
                           controller: str = "kraft", kafka_version: str = DEFAULT_VERSION,
                           leader_imbalance_per_broker_percentage: int = DEFAULT_IMBALANCE_PERCENTAGE) -> Report:
    """Every `health.*` invariant on a cluster's partitions (see the module docstring)."""
    if controller not in CONTROLLERS:
        raise ValueError(f"controller must be one of {CONTROLLERS}, not {controller!r}")
    return check_all(HealthSubject(assignment, min_isr, default_min_isr, controller, kafka_version,
                                   leader_imbalance_per_broker_percentage), "partition-health")
