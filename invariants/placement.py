"""Placement invariants: what a replica assignment must (hard) or should (soft) satisfy.

Hard properties come from Kafka itself (distinct brokers, the replication
factor, AdminUtils' documented rack guarantee) and from Cruise Control's hard
rack goals; the balance goals follow Cruise Control's distribution goals, with
its limits: p = (threshold - 1) * margin, upper = ceil(avg * (1 + p)),
lower = floor(avg * max(0, 1 - p)). Partitions in the middle of a reassignment
are checked on their target replica set (the replicas minus those being removed).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from kcheck.invariants.registry import Severity, Violation, register
from kcheck.model import Cluster, PartitionReplicas, ReplicaAssignment


@dataclass(frozen=True)
class BalanceSettings:
    """Cruise Control's defaults; `threshold` options set the replica and leader thresholds together."""

    replica_threshold: float = 1.10  # replica.count.balance.threshold
    leader_threshold: float = 1.10  # leader.replica.count.balance.threshold
    follower_threshold: float = 1.10  # ours: followers of one leader over the other brokers
    topic_threshold: float = 3.0  # topic.replica.count.balance.threshold
    topic_min_gap: int = 2  # topic.replica.count.balance.min.gap
    topic_max_gap: int = 40  # topic.replica.count.balance.max.gap
    margin: float = 0.9  # BALANCE_MARGIN
    max_replicas_per_broker: int = 10_000  # max.replicas.per.broker


@dataclass(frozen=True)
class PlacementSubject:
    """An assignment on a cluster, with the settings the soft goals use."""

    cluster: Cluster
    assignment: ReplicaAssignment
    settings: BalanceSettings = field(default_factory=BalanceSettings)
    replication_factor: int | None = None  # the RF a placer was asked for, when known
    leaving: frozenset[int] = frozenset()  # brokers being decommissioned (--decommission): balance ignores them

    def __post_init__(self) -> None:
        if not isinstance(self.leaving, frozenset):  # a set or list given by a caller: keep the subject hashable
            object.__setattr__(self, "leaving", frozenset(self.leaving))

    @cached_property
    def broker_ids(self) -> tuple[int, ...]:
        """Cluster brokers, plus any broker the assignment names that the cluster lacks."""
        known = list(self.cluster.broker_ids)
        extra = sorted(set(self.assignment.broker_ids()) - set(known))
        return tuple(known + extra)

    @cached_property
    def eligible_brokers(self) -> tuple[int, ...]:
        """Brokers that balance goals count: fenced brokers are expected to hold nothing new, leaving brokers
        (--decommission) nothing at all."""
        fenced = {b.id for b in self.cluster.brokers if b.fenced}
        return tuple(b for b in self.broker_ids if b not in fenced and b not in self.leaving) or self.broker_ids

    @cached_property
    def rack_of(self) -> dict[int, str]:
        return self.cluster.rack_map

    @cached_property
    def racks(self) -> tuple[str, ...]:
        """The racks a placement can use: a rack whose brokers are all leaving (--decommission) is not one."""
        staying = {self.rack_of.get(b) for b in self.broker_ids if b not in self.leaving}
        return tuple(r for r in self.cluster.racks if r in staying) if self.leaving else self.cluster.racks

    def replicas(self, p: PartitionReplicas) -> tuple[int, ...]:
        return p.target_replicas

    def topic_replication_factor(self, topic: str) -> int:
        """Declared RF (describe header), else the RF asked for, else the lowest partition's (as --generate)."""
        if topic in self.assignment.replication_factors:
            return self.assignment.replication_factors[topic]
        if self.replication_factor is not None:
            return self.replication_factor
        return len(self.replicas(self.assignment.of_topic(topic)[0]))


def balance_limits(avg: float, threshold: float, margin: float) -> tuple[int, int]:
    """Cruise Control's (lower, upper) count limits around an average."""
    p = (threshold - 1.0) * margin
    return math.floor(avg * max(0.0, 1.0 - p)), math.ceil(avg * (1.0 + p))


def _racks_missing(s: PlacementSubject) -> str | None:
    layout = s.cluster.rack_layout
    if layout == "none":
        return "no broker has a rack"
    if layout == "mixed":
        return "only some brokers have a rack"
    return None


def _balance_violations(
    invariant: str, what: str, counts: Mapping[Any, int], expected: Mapping[Any, float],
    limits: Callable[[float], tuple[int, int]], where: str, detail: Mapping[str, Any] | None = None,
) -> list[Violation]:
    """A soft violation for each key (broker, rack) whose count lies outside the limits around its average."""
    out = []
    for key, avg in expected.items():
        lower, upper = limits(avg)
        n = counts.get(key, 0)
        if n > upper or n < lower:
            over = n - upper if n > upper else n - lower
            side = f"above the upper limit {upper}" if n > upper else f"below the lower limit {lower}"
            label = f"{where} {key}"
            out.append(Violation(
                invariant, Severity.SOFT, label if detail is None else f"{_place(detail)} / {label}",
                f"{label} has {n} {what}{_of(detail)}, {abs(over)} {side} (average {avg:.2f})",
                {**(detail or {}), where: key, "count": n, "lower": lower, "upper": upper,
                 "average": round(avg, 4), "excess": over},
            ))
    return out


def _place(detail: Mapping[str, Any]) -> str:
    return " ".join(f"{k} {v}" for k, v in detail.items())


def _of(detail: Mapping[str, Any] | None) -> str:
    return "" if detail is None else " of " + _place(detail)


def _cc_limits(threshold: float, margin: float) -> Callable[[float], tuple[int, int]]:
    return lambda avg: balance_limits(avg, threshold, margin)


@register("placement.distinct-brokers", "No broker holds two replicas of one partition", Severity.HARD,
          "AdminUtils / StripedReplicaPlacer; ReplicaAssignment validation", "placement")
def distinct_brokers(s: PlacementSubject) -> list[Violation]:
    out = []
    for p in s.assignment:
        dup = sorted(b for b, n in Counter(s.replicas(p)).items() if n > 1)
        if dup:
            out.append(Violation(
                "placement.distinct-brokers", Severity.HARD, f"partition {p.tp}",
                f"partition {p.tp} has replicas {list(s.replicas(p))}: broker(s) {dup} appear more than once",
                {"partition": str(p.tp), "replicas": list(s.replicas(p)), "duplicated": dup},
            ))
    return out


@register("placement.replication-factor", "Every partition has its topic's replication factor", Severity.HARD,
          "AdminUtils RF checks; kafka-topics 'Partition i has different replication factor'", "placement")
def replication_factor(s: PlacementSubject) -> list[Violation]:
    out = []
    n_brokers = len(s.broker_ids)
    for topic in s.assignment.topics:
        rf = s.topic_replication_factor(topic)
        if rf > n_brokers:
            out.append(Violation(
                "placement.replication-factor", Severity.HARD, f"topic {topic}",
                f"topic {topic} has replication factor {rf} but the cluster has only {n_brokers} broker(s)",
                {"topic": topic, "replication_factor": rf, "brokers": n_brokers},
            ))
        for p in s.assignment.of_topic(topic):
            n = len(s.replicas(p))
            if n != rf:
                out.append(Violation(
                    "placement.replication-factor", Severity.HARD, f"partition {p.tp}",
                    f"partition {p.tp} has {n} replica(s), topic {topic} has replication factor {rf}",
                    {"partition": str(p.tp), "replicas": n, "replication_factor": rf, "excess": n - rf},
                ))
    return out


@register("placement.leader-spread", "Preferred leaders are balanced across brokers", Severity.SOFT,
          "Cruise Control LeaderReplicaDistributionGoal; AdminUtils round-robin leaders", "placement")
def leader_spread(s: PlacementSubject) -> list[Violation]:
    leaders = Counter(s.replicas(p)[0] for p in s.assignment if s.replicas(p))
    avg = sum(leaders.values()) / len(s.eligible_brokers)
    return _balance_violations("placement.leader-spread", "preferred leaders", leaders,
                               {b: avg for b in s.eligible_brokers},
                               _cc_limits(s.settings.leader_threshold, s.settings.margin), "broker")


@register("placement.leader-spread-rack", "Preferred leaders are balanced across racks, by rack size",
          Severity.SOFT, "KAFKA-15354 (striped placer spreads leaders per rack); LeaderReplicaDistributionGoal",
          "placement", _racks_missing)
def leader_spread_rack(s: PlacementSubject) -> list[Violation]:
    leaders = Counter(s.rack_of.get(s.replicas(p)[0]) for p in s.assignment if s.replicas(p))
    total = sum(leaders.values())
    size = Counter(s.rack_of[b] for b in s.eligible_brokers if b in s.rack_of)
    expected = {r: total * size[r] / len(s.eligible_brokers) for r in s.racks if size[r]}
    return _balance_violations("placement.leader-spread-rack", "preferred leaders", leaders, expected,
                               _cc_limits(s.settings.leader_threshold, s.settings.margin), "rack")


@register("placement.replica-spread", "Replicas are balanced across brokers", Severity.SOFT,
          "Cruise Control ReplicaDistributionGoal", "placement")
def replica_spread(s: PlacementSubject) -> list[Violation]:
    eligible = set(s.eligible_brokers)
    counts = Counter(b for p in s.assignment for b in s.replicas(p) if b in eligible)
    avg = sum(counts.values()) / len(eligible)
    return _balance_violations("placement.replica-spread", "replicas", counts, {b: avg for b in s.eligible_brokers},
                               _cc_limits(s.settings.replica_threshold, s.settings.margin), "broker")


def _rack_counts(s: PlacementSubject, replicas: Iterable[int]) -> Counter[str]:
    return Counter(s.rack_of[b] for b in replicas if b in s.rack_of)


@register("placement.rack-diversity", "Each partition spans min(RF, racks) racks", Severity.HARD,
          "AdminUtils rack-aware guarantee (docs/ops.html#basic_ops_racks); Cruise Control RackAwareGoal",
          "placement", _racks_missing)
def rack_diversity(s: PlacementSubject) -> list[Violation]:
    out = []
    for p in s.assignment:
        reps = s.replicas(p)
        per_rack = _rack_counts(s, reps)
        need = min(len(reps), len(s.racks))
        if len(per_rack) < need:
            out.append(Violation(
                "placement.rack-diversity", Severity.HARD, f"partition {p.tp}",
                f"partition {p.tp} spans {len(per_rack)} rack(s), needs {need}: "
                + ", ".join(f"{r}={n}" for r, n in sorted(per_rack.items())),
                {"partition": str(p.tp), "replicas": list(reps), "racks_spanned": len(per_rack),
                 "racks_needed": need, "replicas_per_rack": dict(sorted(per_rack.items())),
                 "excess": len(per_rack) - need},
            ))
    return out


def _rf_exceeds_racks(s: PlacementSubject) -> str | None:
    missing = _racks_missing(s)
    if missing:
        return missing
    if all(len(s.replicas(p)) <= len(s.racks) for p in s.assignment):
        return "no partition has more replicas than there are racks (rack-diversity covers it)"
    return None


@register("placement.rack-distribution",
          "When RF > racks, each rack holds floor(RF/racks) or ceil(RF/racks), as far as its brokers allow",
          Severity.HARD, "Cruise Control RackAwareDistributionGoal", "placement", _rf_exceeds_racks)
def rack_distribution(s: PlacementSubject) -> list[Violation]:
    # Cruise Control wants max - min <= 1 replicas per rack. A rack with fewer brokers
    # than its share cannot reach it, so a partition is flagged only when one replica
    # could move from a fuller rack to an emptier one that still has a free broker:
    # the counts are then not as even as the rack sizes allow.
    out = []
    n_racks = len(s.racks)
    size = Counter(s.rack_of.values())
    for p in s.assignment:
        reps = s.replicas(p)
        if len(reps) <= n_racks:
            continue
        per_rack = {r: _rack_counts(s, reps).get(r, 0) for r in s.racks}
        fullest = max(per_rack.values())
        movable = [r for r, n in per_rack.items() if n <= fullest - 2 and n < size[r]]
        if movable:
            lo, hi = len(reps) // n_racks, -(-len(reps) // n_racks)
            emptiest = min(per_rack[r] for r in movable)
            out.append(Violation(
                "placement.rack-distribution", Severity.HARD, f"partition {p.tp}",
                f"partition {p.tp} with {len(reps)} replicas on {n_racks} racks has "
                + ", ".join(f"{r}={n}" for r, n in per_rack.items())
                + f"; rack(s) {', '.join(movable)} could take a replica (even split: {lo}..{hi} per rack)",
                {"partition": str(p.tp), "replicas": list(reps), "replicas_per_rack": per_rack,
                 "brokers_per_rack": {r: size[r] for r in s.racks}, "min_per_rack": lo, "max_per_rack": hi,
                 "excess": fullest - emptiest - 1},
            ))
    return out


def _no_fenced(s: PlacementSubject) -> str | None:
    return None if any(b.fenced for b in s.cluster.brokers) else "no broker is fenced"


@register("placement.leader-unfenced", "No preferred leader is a fenced broker", Severity.HARD,
          "StripedReplicaPlacer ('the leader is always unfenced'); ReplicationControlManager ISR", "placement",
          _no_fenced)
def leader_unfenced(s: PlacementSubject) -> list[Violation]:
    fenced = {b.id for b in s.cluster.brokers if b.fenced}
    return [
        Violation("placement.leader-unfenced", Severity.HARD, f"partition {p.tp}",
                  f"partition {p.tp} has fenced broker {s.replicas(p)[0]} as its preferred leader",
                  {"partition": str(p.tp), "leader": s.replicas(p)[0], "replicas": list(s.replicas(p))})
        for p in s.assignment if s.replicas(p) and s.replicas(p)[0] in fenced
    ]


def _single_broker(s: PlacementSubject) -> str | None:
    return "a single broker has no followers" if len(s.broker_ids) < 2 else None


@register("placement.follower-spread", "Followers of the partitions a broker leads spread over the other brokers",
          Severity.SOFT, "AdminUtils goal 2 ('their other replicas are spread over the other brokers')",
          "placement", _single_broker)
def follower_spread(s: PlacementSubject) -> list[Violation]:
    eligible = set(s.eligible_brokers)
    followers: dict[int, Counter[int]] = {}
    led: Counter[int] = Counter()
    for p in s.assignment:
        reps = s.replicas(p)
        if reps:
            followers.setdefault(reps[0], Counter()).update(b for b in reps[1:] if b in eligible)
            led[reps[0]] += 1
    out = []
    for leader, counts in sorted(followers.items()):
        others = [b for b in s.eligible_brokers if b != leader]
        if not others:
            continue
        avg = sum(counts.values()) / len(others)
        lower, upper = balance_limits(avg, s.settings.follower_threshold, s.settings.margin)
        off = {b: counts.get(b, 0) for b in others if not lower <= counts.get(b, 0) <= upper}
        if off:
            worst = max(off.items(), key=lambda kv: max(kv[1] - upper, lower - kv[1]))
            out.append(Violation(
                "placement.follower-spread", Severity.SOFT, f"broker {leader}",
                f"followers of the {led[leader]} partition(s) broker {leader} leads: "
                + ", ".join(f"broker {b}={n}" for b, n in sorted(off.items()))
                + f" outside {lower}..{upper} (average {avg:.2f})",
                {"broker": leader, "followers_per_broker": {b: counts.get(b, 0) for b in others},
                 "lower": lower, "upper": upper, "average": round(avg, 4),
                 "excess": max(worst[1] - upper, lower - worst[1])},
            ))
    return out


def topic_balance_limits(avg: float, st: BalanceSettings) -> tuple[int, int]:
    """TopicReplicaDistributionGoal: the usual limits, clamped by the min and max gaps around the average."""
    lower, upper = balance_limits(avg, st.topic_threshold, st.margin)
    upper = max(min(upper, math.ceil(avg) + st.topic_max_gap), math.ceil(avg) + st.topic_min_gap)
    lower = max(0, min(max(lower, math.floor(avg) - st.topic_max_gap), math.floor(avg) - st.topic_min_gap))
    return lower, upper


@register("placement.topic-replica-spread", "Each topic's replicas are balanced across brokers", Severity.SOFT,
          "Cruise Control TopicReplicaDistributionGoal", "placement")
def topic_replica_spread(s: PlacementSubject) -> list[Violation]:
    out: list[Violation] = []
    eligible = set(s.eligible_brokers)
    for topic in s.assignment.topics:
        counts = Counter(b for p in s.assignment.of_topic(topic) for b in s.replicas(p) if b in eligible)
        avg = sum(counts.values()) / len(eligible)
        out += _balance_violations("placement.topic-replica-spread", "replicas", counts,
                                   {b: avg for b in s.eligible_brokers},
                                   lambda a: topic_balance_limits(a, s.settings), "broker", {"topic": topic})
    return out


@register("placement.max-replicas-per-broker", "No broker holds more than max.replicas.per.broker replicas",
          Severity.HARD, "Cruise Control ReplicaCapacityGoal (max.replicas.per.broker)", "placement")
def max_replicas_per_broker(s: PlacementSubject) -> list[Violation]:
    limit = s.settings.max_replicas_per_broker
    counts = Counter(b for p in s.assignment for b in s.replicas(p))
    return [
        Violation("placement.max-replicas-per-broker", Severity.HARD, f"broker {b}",
                  f"broker {b} holds {n} replicas, {n - limit} over max.replicas.per.broker={limit}",
                  {"broker": b, "count": n, "limit": limit, "excess": n - limit})
        for b, n in sorted(counts.items()) if n > limit
    ]


LEAVING = "placement.leaving-broker-emptied"


def _none_leaving(s: PlacementSubject) -> str | None:
    return None if s.leaving else "no broker is leaving (--decommission)"


@register("placement.leaving-broker-emptied", "No replica is placed on a broker being decommissioned",
          Severity.HARD, "Kafka docs/ops.html 'Decommissioning brokers' (every replica moved off with "
          "kafka-reassign-partitions before the broker goes); ReplicaPlacer's usable brokers", "placement",
          _none_leaving)
def leaving_broker_emptied(s: PlacementSubject) -> list[Violation]:
    held: dict[int, list[str]] = {}
    for p in s.assignment:
        for b in s.replicas(p):
            if b in s.leaving:
                held.setdefault(b, []).append(str(p.tp))
    out = []
    for b, parts in sorted(held.items()):
        shown = ", ".join(parts[:5]) + (f" and {len(parts) - 5} more" if len(parts) > 5 else "")
        out.append(Violation("placement.leaving-broker-emptied", Severity.HARD, f"broker {b}",
                             f"broker {b} is leaving (--decommission) but still holds {len(parts)} replica(s): {shown}",
                             {"broker": b, "count": len(parts), "partitions": parts}))
    return out

