"""Whole-partition health of a cluster as `kafka-topics --describe` shows it, checked as invariants.

What Kafka itself holds true of every partition, and what its tools and controllers flag:

* the leader is a replica and in the ISR; the ISR is within the replicas (KRaft's
  `ReplicationControlManager` refuses an AlterPartition whose ISR fails `Replicas.validateIsr` or leaves
  the leader out; `PartitionChangeBuilder.isValidNewLeader` elects only ISR members, or ELR members when
  the ISR is empty, and moves an elected ELR member into the ISR);
* KIP-966's ELR and last known ELR are within the replicas, the ELR disjoint from the ISR and the last
  known ELR disjoint from both (`PartitionChangeBuilder.maybePopulateTargetElr`);
* `kafka-topics --describe`'s four health filters, each with `TopicCommand`'s own definition
  (`PartitionDescription` in `core/src/main/scala/kafka/admin/TopicCommand.scala` up to 3.6,
  `tools/src/main/java/org/apache/kafka/tools/TopicCommand.java` from 3.7): `--under-replicated-partitions`
  (`isUnderReplicated`: ISR smaller than `getReplicationFactor`, which leaves out the adding replicas of a
  reassignment in flight), `--under-min-isr-partitions` (`isUnderMinIsr`: no leader, or ISR below the topic's
  min.insync.replicas), `--at-min-isr-partitions` (`isAtMinIsrPartitions`: ISR size equal to it) and
  `--unavailable-partitions` (`hasUnavailablePartitions`: no leader, or a leader that is not a live broker);
* a leader that is not the preferred replica, by the controller's own rule (`reference/leader_balance.py`):
  KRaft's `maybeBalancePartitionLeaders` takes every such partition (the percentage is ignored), ZooKeeper's
  `checkAndTriggerAutoLeaderRebalance` only a broker's partitions once its share of them led elsewhere is above
  `leader.imbalance.per.broker.percentage`;
* a reassignment in flight (`Adding Replicas` / `Removing Replicas`) that cannot complete or runs unsafely:
  `PartitionReassignmentReplicas.maybeCompleteReassignment` completes it only once the ISR without the
  removing replicas is non-empty and holds the release's required replicas (`reference/releases.py`,
  `reassignment_completion`; KAFKA-15665, KAFKA-19975);
* what no tool states (`survivability`): how many broker failures, and with racks how many rack failures, each
  partition survives today with acks=all (|ISR| - min.insync.replicas, never below 0), and whether a topic
  stays writable and readable with a clean leader when any one rack is lost (`health.zone-loss`).

Registered with `applies_to="partition-health"`; `check_partition_health` runs them. Partitions whose live
state is unknown (a reassignment JSON: no leader, no ISR) are not judged; an invariant with nothing to judge
is reported in `Report.skipped` with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from kcheck.invariants.registry import ALIASES, Report, Severity, Violation, check_all, register
from kcheck.model import NO_LEADER, PartitionReplicas, ReplicaAssignment, TopicPartition
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
    leader_text: Mapping[TopicPartition, str] = field(default_factory=dict)  # 'none' or '-1', as the input wrote it
    racks: Mapping[int, str] | None = None  # broker -> rack, when every broker has one (--brokers-file)
    live_brokers: frozenset[int] | None = None  # known with --bootstrap-server; a describe does not say

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
    def survival(self) -> list[PartitionSurvival]:
        """`survivability`, computed once (health.zone-loss and verify's table both read it)."""
        all_racks = tuple(sorted(set(self.racks.values()))) if self.racks else ()
        return [_partition_survival(p, self.min_isr_of(p.topic)[0], self.racks, all_racks) for p in self.with_isr]

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


def isr_text(isr: tuple[int, ...] | None) -> str:
    """An ISR as a list and a size, so a one-member ISR of broker 2 never reads as 'ISR 2'."""
    members = isr or ()
    return f"ISR [{','.join(map(str, members))}] ({len(members)} member{'' if len(members) == 1 else 's'})"


def counted_replication_factor(p: PartitionReplicas) -> int:
    """TopicCommand.getReplicationFactor (2.6+): while a reassignment is in flight (one of its adding or removing
    replicas still a replica), the replicas without the adding ones; else every replica. A describe shows the
    reassignment from 2.6 (Adding/Removing Replicas); before that every replica counts, as in 2.2-2.4."""
    if (set(p.adding) | set(p.removing)) & set(p.replicas):
        return len(p.replicas) - len(p.adding)
    return len(p.replicas)


def _leader_shown(s: HealthSubject, p: PartitionReplicas) -> str:
    return f"Leader: {s.leader_text.get(p.tp, 'none')}"


# TopicCommand's four health filters, by the finding that lists the same partitions.
HEALTH_FILTERS = {"health.under-replicated": "--under-replicated-partitions",
                  "health.under-min-isr": "--under-min-isr-partitions",
                  "health.at-min-isr": "--at-min-isr-partitions",
                  "health.unavailable": "--unavailable-partitions"}
ALIASES["health.offline-partition"] = "health.unavailable"  # its id before the filters were modelled


@_register("health.under-replicated", "every replica is in the ISR (kafka-topics --under-replicated-partitions)",
           Severity.SOFT, "TopicCommand PartitionDescription.isUnderReplicated: ISR smaller than "
           "getReplicationFactor (replicas without the adding ones of a reassignment in flight, 2.6+)", _no_isr)
def _under_replicated(s: HealthSubject) -> list[Violation]:
    out = []
    for p in s.with_isr:
        rf = counted_replication_factor(p)
        isr = p.isr or ()
        if len(isr) < rf:
            behind = [b for b in p.replicas if b not in isr and b not in p.adding]
            counted = (f"replication factor {rf}" if rf == len(p.replicas) else
                       f"replication factor {rf} (Replicas without the Adding Replicas {_ids(p.adding)}, as "
                       "TopicCommand counts a reassignment in flight)")
            out.append(_v("health.under-replicated", Severity.SOFT, p,
                          f"{isr_text(isr)} is below its {counted}: replica(s) {_ids(behind)} out of sync",
                          isr=list(isr), replication_factor=rf, out_of_sync=behind))
    return out


@_register("health.under-min-isr", "the ISR has at least min.insync.replicas members "
           "(kafka-topics --under-min-isr-partitions)", Severity.HARD,
           "TopicCommand --under-min-isr-partitions (PartitionDescription.isUnderMinIsr: no leader, or ISR below "
           "the topic's min.insync.replicas); acks=all producers get NOT_ENOUGH_REPLICAS below it", _no_isr)
def _under_min_isr(s: HealthSubject) -> list[Violation]:
    def judge(p: PartitionReplicas, isr: tuple[int, ...], need: int) -> tuple[str, str] | None:
        if len(isr) < need:
            return f"{isr_text(isr)} is below", "acks=all writes fail"
        if p.leader == NO_LEADER:  # isUnderMinIsr counts a partition without a leader whatever its ISR
            return f"no leader ({_leader_shown(s, p)}), so Kafka counts it under", "acks=all writes fail"
        return None

    return _against_min_isr(s, "health.under-min-isr", Severity.HARD, judge)


def _against_min_isr(s: HealthSubject, invariant: str, severity: Severity,
                     judge: Callable[[PartitionReplicas, tuple[int, ...], int], tuple[str, str] | None]
                     ) -> list[Violation]:
    """A finding per partition `judge` picks, given its ISR and its topic's min.insync.replicas: (what, then)."""
    out = []
    for p in s.with_isr:
        isr = p.isr or ()
        need, source = s.min_isr_of(p.topic)
        if (said := judge(p, isr, need)) is not None:
            out.append(_v(invariant, severity, p, f"{said[0]} min.insync.replicas={need} ({source}): {said[1]}",
                          isr=list(isr), min_insync_replicas=need, min_insync_replicas_from=source))
    return out


@_register("health.at-min-isr", "the ISR has more members than min.insync.replicas "
           "(kafka-topics --at-min-isr-partitions)", Severity.SOFT,
           "TopicCommand --at-min-isr-partitions (PartitionDescription.isAtMinIsrPartitions: ISR size equal to the "
           "topic's min.insync.replicas)", _no_isr)
def _at_min_isr(s: HealthSubject) -> list[Violation]:
    def judge(p: PartitionReplicas, isr: tuple[int, ...], need: int) -> tuple[str, str] | None:
        if len(isr) != need:
            return None
        return f"{isr_text(isr)} is at", ("no leader now" if p.leader == NO_LEADER else
                                          "one more replica out of sync and acks=all writes fail")

    return _against_min_isr(s, "health.at-min-isr", Severity.SOFT, judge)


@_register("health.unavailable", "the partition has a leader on a live broker (kafka-topics "
           "--unavailable-partitions)", Severity.HARD,
           "TopicCommand --unavailable-partitions (PartitionDescription.hasUnavailablePartitions: no leader, or a "
           "leader that is not a live broker); the controller's OfflinePartitionsCount", _no_state)
def _unavailable(s: HealthSubject) -> list[Violation]:
    out = []
    for p in s.live:
        if p.leader != NO_LEADER:
            if s.live_brokers is not None and p.leader not in s.live_brokers:
                out.append(_v("health.unavailable", Severity.HARD, p, f"leader {p.leader} is not a live broker "
                              f"(live: {_ids(sorted(s.live_brokers))}): no reads or writes until the controller "
                              "elects another", leader=p.leader))
            continue
        if p.isr:
            why = f"no leader until an ISR replica ({_ids(p.isr)}) comes back"
        elif p.elr:
            why = f"the ISR is empty; an ELR replica ({_ids(p.elr)}) can be elected when it comes back (KIP-966)"
        else:
            why = "the ISR is empty: no leader unless an unclean election (unclean.leader.election.enable) " \
                  "picks a replica that may have lost data"
        out.append(_v("health.unavailable", Severity.HARD, p, f"no leader ({_leader_shown(s, p)}): {why}",
                      isr=None if p.isr is None else list(p.isr), leader_shown=s.leader_text.get(p.tp, "none")))
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
            continue  # health.unavailable: nothing replicates until a leader is elected
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


# ---------------------------------------------------------------------------------------------------------------
# What no tool states: the failures each partition survives today with acks=all


@dataclass(frozen=True)
class PartitionSurvival:
    """How many failures a partition survives now and stays writable with acks=all: a leader and at least
    min.insync.replicas in-sync replicas left (a producer gets NOT_ENOUGH_REPLICAS below that)."""

    partition: PartitionReplicas
    min_isr: int
    writable: bool  # now: a leader, and |ISR| >= min.insync.replicas
    readable: bool  # now: a leader
    broker_failures: int  # |ISR| - min.insync.replicas, never below 0 (0 when not writable now)
    rack_failures: int | None  # the most racks whose loss, whichever they are, it survives (None without racks)
    after_rack_loss: Mapping[str, tuple[bool, bool]] | None  # rack -> (writable, readable) once it is lost

    def as_dict(self) -> dict[str, Any]:
        p = self.partition
        out: dict[str, Any] = {"partition": str(p.tp), "isr": len(p.isr or ()), "min_insync_replicas": self.min_isr,
                               "writable": self.writable, "readable": self.readable,
                               "broker_failures": self.broker_failures,
                               "rack_failures": self.rack_failures}
        if self.after_rack_loss is not None:  # the racks whose loss alone would stop writes, or reads
            out["unwritable_if_lost"] = [r for r, (w, _) in sorted(self.after_rack_loss.items()) if not w]
            out["unreadable_if_lost"] = [r for r, (_, rd) in sorted(self.after_rack_loss.items()) if not rd]
        return out


def _partition_survival(p: PartitionReplicas, need: int, racks: Mapping[int, str] | None,
                        all_racks: tuple[str, ...]) -> PartitionSurvival:
    isr = p.isr or ()
    readable = p.leader != NO_LEADER
    writable = readable and len(isr) >= need
    brokers = max(0, len(isr) - need) if writable else 0
    if racks is None:
        return PartitionSurvival(p, need, writable, readable, brokers, None, None)
    per_rack: dict[str | None, int] = {}
    for b in isr:
        rack = racks.get(b)
        per_rack[rack] = per_rack.get(rack, 0) + 1
    # The worst k racks to lose are the k holding the most ISR members.
    worst = sorted(per_rack.values(), reverse=True)
    lost, survived = 0, 0
    for n in worst if writable else ():
        lost += n
        if len(isr) - lost < need:
            break
        survived += 1
    after = {r: (readable and len(isr) - per_rack.get(r, 0) >= need,
                 readable and len(isr) - per_rack.get(r, 0) >= 1) for r in all_racks}
    return PartitionSurvival(p, need, writable, readable, brokers, survived, after)


def survivability(s: HealthSubject) -> list[PartitionSurvival]:
    """Every partition with an ISR: the broker failures (and, with racks, the rack failures) it survives today."""
    return s.survival


def _no_racks(s: HealthSubject) -> str | None:
    if (why := _no_isr(s)) is not None:
        return why
    if not s.racks:
        return "no racks: give --brokers-file with racks (or read the cluster with --bootstrap-server)"
    racks = sorted(set(s.racks.values()))
    if len(racks) < 2:
        return f"every broker is in one rack ({racks[0]}): nothing survives its loss"
    return None


def _shown_parts(tps: list[str]) -> str:
    return ", ".join(tps[:5]) + (f" and {len(tps) - 5} more" if len(tps) > 5 else "")


def _writable_by_design(p: PartitionReplicas, need: int, racks: Mapping[int, str], rack: str) -> bool:
    """Would the partition stay writable once `rack` is lost if every replica it will have were in sync?"""
    return sum(1 for b in p.target_replicas if racks.get(b) != rack) >= need


@_register("health.zone-loss", "the topic stays writable (acks=all) and readable (a clean leader) when any one "
           "rack is lost", Severity.SOFT, "kcheck's own: min.insync.replicas against the ISR members left in the "
           "other racks (a producer with acks=all gets NOT_ENOUGH_REPLICAS below it; only an ISR member is a "
           "clean leader)", _no_racks)
def _zone_loss(s: HealthSubject) -> list[Violation]:
    assert s.racks is not None
    by_topic: dict[str, list[PartitionSurvival]] = {}
    for ps in survivability(s):
        by_topic.setdefault(ps.partition.topic, []).append(ps)
    out = []
    for topic, parts in sorted(by_topic.items()):
        racks = sorted(parts[0].after_rack_loss or {})
        # What a rack's loss takes from partitions that have it now (those down already are other findings').
        # Readable needs one ISR member left, writable min.insync.replicas >= 1: the unreadable are unwritable too.
        unwritable = {r: [ps for ps in parts if ps.writable and not (ps.after_rack_loss or {})[r][0]] for r in racks}
        unreadable = {r: [ps for ps in parts if ps.readable and not (ps.after_rack_loss or {})[r][1]] for r in racks}
        if not any(unwritable.values()) and not any(unreadable.values()):
            continue
        worst = max(racks, key=lambda r: (len(unwritable[r]) + len(unreadable[r]), len(unreadable[r])))
        lost = [str(ps.partition.tp) for ps in unwritable[worst]]
        dark = [str(ps.partition.tp) for ps in unreadable[worst]]
        chosen = {id(x) for x in (*unwritable[worst], *unreadable[worst])}
        hit = [ps for ps in parts if id(ps) in chosen]
        by_design = [str(ps.partition.tp) for ps in hit
                     if not _writable_by_design(ps.partition, ps.min_isr, s.racks, worst)]
        what = []
        if lost:
            what.append(f"{len(lost)} of its {len(parts)} partitions ({_shown_parts(lost)}) with fewer in-sync "
                        "replicas than min.insync.replicas: acks=all writes would fail")
        if dark:
            what.append(f"{len(dark)} ({_shown_parts(dark)}) with no in-sync replica: no clean leader, no reads")
        text = f"losing rack {worst} leaves " + "; ".join(what)
        text += (f"; {len(by_design)} would fail even with every replica in sync (the placement)" if by_design
                 else "; with every replica in sync it would survive (today's ISR is short)")
        out.append(Violation("health.zone-loss", Severity.SOFT, f"topic {topic}", f"topic {topic}: {text}",
                             {"topic": topic, "rack": worst, "unwritable": lost, "unreadable": dark,
                              "by_placement": by_design,
                              "unwritable_per_rack": {r: len(v) for r, v in unwritable.items()},
                              "unreadable_per_rack": {r: len(v) for r, v in unreadable.items()}}))
    return out


def check_partition_health(assignment: ReplicaAssignment, min_isr: Mapping[str, int], default_min_isr: int | None,
                           controller: str = "kraft", kafka_version: str = DEFAULT_VERSION,
                           leader_imbalance_per_broker_percentage: int = DEFAULT_IMBALANCE_PERCENTAGE, *,
                           leader_text: Mapping[TopicPartition, str] | None = None,
                           racks: Mapping[int, str] | None = None,
                           live_brokers: frozenset[int] | None = None) -> Report:
    """Every `health.*` invariant on a cluster's partitions (see the module docstring)."""
    return check_all(health_subject(assignment, min_isr, default_min_isr, controller, kafka_version,
                                    leader_imbalance_per_broker_percentage, leader_text=leader_text, racks=racks,
                                    live_brokers=live_brokers), "partition-health")


def health_subject(assignment: ReplicaAssignment, min_isr: Mapping[str, int], default_min_isr: int | None,
                   controller: str = "kraft", kafka_version: str = DEFAULT_VERSION,
                   leader_imbalance_per_broker_percentage: int = DEFAULT_IMBALANCE_PERCENTAGE, *,
                   leader_text: Mapping[TopicPartition, str] | None = None, racks: Mapping[int, str] | None = None,
                   live_brokers: frozenset[int] | None = None) -> HealthSubject:
    if controller not in CONTROLLERS:
        raise ValueError(f"controller must be one of {CONTROLLERS}, not {controller!r}")
    return HealthSubject(assignment, min_isr, default_min_isr, controller, kafka_version,
                         leader_imbalance_per_broker_percentage, leader_text or {}, racks, live_brokers)
