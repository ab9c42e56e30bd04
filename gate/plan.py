"""`kcheck plan`: the fewest replica moves (then the fewest preferred-leader changes) that clear every hard
placement violation and meet the balance limits, with brokers leaving or added; proved minimal where the solver can.

The cluster is read as `verify` and `verify-reassignment` read it (a reassignment JSON or `kafka-topics --describe`,
and a brokers file). A *move* is one replica of one partition placed on a broker that did not hold it (what
`kafka-reassign-partitions.sh --execute` copies); a *leader change* is a partition whose first replica (the preferred
leader, what `kafka-leader-election --election-type PREFERRED` elects) differs from today's.

The target must satisfy, over the remaining brokers (the cluster minus `--decommission`, plus added brokers):
every hard placement invariant (`invariants/placement.py`: distinct brokers, each topic's replication factor,
rack diversity and rack distribution, max.replicas.per.broker), no replica on a leaving or unknown broker, the
transient load of `invariants/reassignment.py` (RS = TRS + ORS per broker while every move runs, against
max.replicas.per.broker), no move of a partition whose ISR is below min.insync.replicas now (Kafka would run it,
but acks=all writes are already failing there); and, unless `--no-balance`, the count limits of the soft balance
invariants Cruise Control defines (replica-spread, leader-spread, leader-spread-rack, topic-replica-spread with
`--threshold`). kcheck's own `placement.follower-spread` is reported, not constrained (its limits depend on each
broker's led count: quadratic in the encoding).

The solver is exact in two stages. First a min-cost flow (networkx's network simplex) chooses the replica sets:
partition -> (partition, rack) -> (topic, broker) -> broker -> sink, a move costing more than all kept preferred
leaders together, with the rack rule and every count limit as capacities; then a second flow chooses the preferred
leaders within the leader limits. The first flow is a relaxation of the whole problem (it leaves out the preferred
leaders, the load while the plan runs, and rack-distribution when RF exceeds the racks), so when its answer passes
the whole check its move count is minimal, proved. When it does not pass, or to prove the fewest leader changes,
Z3 searches over one Boolean per (partition, remaining broker) and one per (partition, preferred leader) with
pseudo-Boolean constraints: SAT calls under a cardinality bound, from the lower bound up. A proof is reported as
"minimal (proved)"; a search stopped by its time budget as "best found, not proved minimal: lower bound L". Z3 is
not run above `MAX_CELLS` Booleans (the flows still are).

Every plan is checked before it is printed by `verify-reassignment`'s machinery (`kcheck.gate.reassign.build_subject`,
`invariants.reassignment.check_reassignment`, and `check_placement` of the target): a plan that fails its own check
is a bug (`PlanBug`), never printed.

Kafka's own tool for this, `kafka-reassign-partitions.sh --generate`
(tools/src/main/java/org/apache/kafka/tools/reassign/ReassignPartitionsCommand.java, `generateAssignment`), re-places
every partition of the topics given with `AdminUtils.assignReplicasToBrokers` from a random start; bench/
plan_vs_generate.py counts the moves its proposals imply against this command's on the same clusters.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import networkx as nx
import z3
from rich.markup import escape
from rich.table import Table

from kcheck.gate import policy as gate
from kcheck.inputs import formats
from kcheck.invariants import BalanceSettings, PlacementSubject, Report, Severity, check_placement
from kcheck.invariants.placement import balance_limits, topic_balance_limits
from kcheck.invariants.reassignment import check_reassignment, target_assignment
from kcheck.model import Cluster, PartitionReplicas, ReplicaAssignment
from kcheck.reference.releases import DEFAULT_VERSION
from kcheck.runtime.exit_codes import Exit

# Booleans handed to Z3 (partitions x remaining brokers, twice: replicas and preferred leaders). The flows prove
# 2,000 partitions x 12 brokers (decommission, added brokers, rack repair) in seconds on 2 cores; Z3's SAT calls
# slow down past a few thousand Booleans, and past this many the encoding alone takes minutes.
MAX_CELLS = 100_000
DEFAULT_TIMEOUT = 60.0  # seconds of Z3 per plan

# The soft invariants whose count limits the plan meets (the rest of the soft ones are reported).
BALANCE_INVARIANTS = ("placement.replica-spread", "placement.leader-spread", "placement.leader-spread-rack",
                      "placement.topic-replica-spread")


class Infeasible(Exception):
    """No target meets the constraints; str(e) says which constraint (one line)."""


class PlanBug(AssertionError):
    """A plan that fails its own check: a bug in the solver's encoding, never printed."""


class Incomplete(Exception):
    """The solver stopped (time or size) before finding any plan; str(e) says what it covered."""


# ---------------------------------------------------------------------------------------------
# The problem


@dataclass(frozen=True)
class PlanProblem:
    """The cluster now and what the plan may use.

    `cluster`: every broker known (leaving ones included, as they are while the plan runs); `leaving`: brokers to
    empty (`--decommission`); replicas on brokers not in `cluster` must move too.
    """

    current: ReplicaAssignment
    cluster: Cluster
    leaving: frozenset[int] = frozenset()
    settings: BalanceSettings = field(default_factory=BalanceSettings)
    balance: bool = True
    min_insync_replicas: Mapping[str, int] = field(default_factory=dict)  # per topic (describe Configs)
    min_isr_override: int | None = None  # --min-insync-replicas: every topic's
    controller: str = "kraft"
    kafka_version: str = DEFAULT_VERSION

    @cached_property
    def remaining(self) -> Cluster:
        """The cluster once the plan has run: the brokers that may hold replicas."""
        return Cluster(tuple(b for b in self.cluster.brokers if b.id not in self.leaving))

    @cached_property
    def brokers(self) -> tuple[int, ...]:
        return self.remaining.broker_ids

    @cached_property
    def racked(self) -> bool:
        return self.remaining.rack_layout == "full"

    @cached_property
    def partitions(self) -> tuple[PartitionReplicas, ...]:
        return self.current.partitions

    @cached_property
    def replication_factor(self) -> dict[str, int]:
        """Each topic's RF as check_placement reads it: declared (describe header), else its first partition's."""
        subject = PlacementSubject(self.remaining, self.current, self.settings)
        return {t: subject.topic_replication_factor(t) for t in self.current.topics}

    def rf(self, p: PartitionReplicas) -> int:
        return self.replication_factor[p.topic]

    def min_isr(self, topic: str) -> int:
        """As verify-reassignment reads it: the option, else the describe's Configs, else 1."""
        if self.min_isr_override is not None:
            return self.min_isr_override
        return self.min_insync_replicas.get(topic, 1)

    @cached_property
    def frozen(self) -> dict[int, str]:
        """Index of each partition the plan must not touch -> why: moving it fails verify-reassignment's safety
        checks whatever the target (its ISR is below min.insync.replicas now, or its RF is)."""
        out = {}
        for i, p in enumerate(self.partitions):
            need = self.min_isr(p.topic)
            if p.isr is not None and len(p.isr) < need:
                out[i] = f"its ISR {list(p.isr)} is below min.insync.replicas={need} now"
            elif self.rf(p) < need:
                out[i] = f"its replication factor {self.rf(p)} is below min.insync.replicas={need}"
        return out


def _extendable_rack_counts(rf: int, sizes: Sequence[int]) -> list[tuple[int, ...]]:
    """Replicas per rack that satisfy rack-diversity and rack-distribution for `rf` replicas on racks of these
    sizes (mirrors invariants/placement.py: every rack used when rf >= racks, else one per rack at most; and no rack
    two above another that still has a free broker)."""
    n = len(sizes)
    need = min(rf, n)
    out = []
    for counts in itertools.product(*(range(min(s, rf) + 1) for s in sizes)):
        if sum(counts) != rf or sum(1 for c in counts if c) < need:
            continue
        if rf > n and any(counts[a] >= counts[b] + 2 and counts[b] < sizes[b]
                          for a in range(n) for b in range(n) if a != b):
            continue
        out.append(counts)
    return out


def local_fewest_moves(problem: PlanProblem, p: PartitionReplicas) -> int | None:
    """The fewest moves that clear this partition's own hard violations, ignoring every other partition; None when
    no target exists (its RF is above the remaining brokers, or its rack rules cannot be met)."""
    rf = problem.rf(p)
    valid = list(dict.fromkeys(b for b in p.replicas if b in set(problem.brokers)))
    if rf > len(problem.brokers):
        return None
    if not problem.racked:
        return rf - min(rf, len(valid))
    rack_of = problem.remaining.rack_map
    racks = problem.remaining.racks
    sizes = [sum(1 for b in problem.brokers if rack_of[b] == r) for r in racks]
    have = Counter(rack_of[b] for b in valid)
    best = None
    for counts in _extendable_rack_counts(rf, sizes):
        kept = sum(min(c, have.get(r, 0)) for c, r in zip(counts, racks, strict=True))
        best = kept if best is None else max(best, kept)
    return None if best is None else rf - best


def lower_bound(problem: PlanProblem) -> int:
    """A count no plan can beat, from counting alone: the sum of every partition's own fewest moves, or (with the
    balance limits) the replicas that must arrive on brokers below their lower limit, or leave brokers above their
    upper limit net of replicas the RFs drop."""
    local = 0
    for i, p in enumerate(problem.partitions):
        if i in problem.frozen:
            continue
        m = local_fewest_moves(problem, p)
        local += m or 0
    bound = local
    if problem.balance:
        lo, up = problem_limits(problem)["replicas"]
        brokers = set(problem.brokers)
        cur = Counter(b for p in problem.partitions for b in dict.fromkeys(p.replicas))
        arrive = sum(max(0, lo - cur.get(b, 0)) for b in problem.brokers)
        elsewhere = sum(n for b, n in cur.items() if b not in brokers)
        dropped = sum(max(0, len(set(p.replicas)) - problem.rf(p)) for p in problem.partitions)
        leave = sum(max(0, cur.get(b, 0) - up) for b in problem.brokers) + elsewhere - dropped
        bound = max(bound, arrive, leave)
    return bound


def problem_limits(problem: PlanProblem) -> dict[str, Any]:
    """The balance limits check_placement will apply to any target (they depend only on sizes): replicas and
    preferred leaders per broker, leaders per rack, each topic's replicas per broker."""
    st = problem.settings
    n = len(problem.brokers)
    total = sum(problem.rf(p) for p in problem.partitions)
    out: dict[str, Any] = {
        "replicas": balance_limits(total / n, st.replica_threshold, st.margin),
        "leaders": balance_limits(len(problem.partitions) / n, st.leader_threshold, st.margin),
        "topic": {t: topic_balance_limits(sum(problem.rf(p) for p in problem.current.of_topic(t)) / n, st)
                  for t in problem.current.topics},
    }
    if problem.racked:
        size = Counter(problem.remaining.rack_map.values())
        out["rack_leaders"] = {r: balance_limits(len(problem.partitions) * size[r] / n, st.leader_threshold,
                                                 st.margin) for r in problem.remaining.racks}
    return out


# ---------------------------------------------------------------------------------------------
# The solver


@dataclass(frozen=True)
class Plan:
    problem: PlanProblem
    target: ReplicaAssignment  # every partition, after the plan
    moves: int
    leader_changes: int
    proved: bool  # the move count proved minimal
    leaders_proved: bool  # and, given it, the leader changes
    lower_bound: int  # no plan has fewer moves
    seconds: float
    why_not_proved: str | None = None
    check: Report | None = None  # the plan's own check (reassignment safety + target placement)

    @cached_property
    def proposed(self) -> ReplicaAssignment:
        """The partitions the plan changes, as Kafka's reassignment JSON lists them."""
        before = {p.tp: p.replicas for p in self.problem.partitions}
        return ReplicaAssignment(tuple(p for p in self.target if p.replicas != before[p.tp]))

    def moved_replicas(self) -> list[tuple[str, int, int | None]]:
        """(partition, broker added, broker it replaces or None) for every move."""
        before = {p.tp: p.replicas for p in self.problem.partitions}
        out = []
        for p in self.proposed:
            gone = [b for b in before[p.tp] if b not in p.replicas]
            for b in p.replicas:
                if b not in before[p.tp]:
                    out.append((str(p.tp), b, gone.pop(0) if gone else None))
        return out


def count_moves(current: ReplicaAssignment, target: ReplicaAssignment) -> tuple[int, int]:
    """(replica moves, preferred-leader changes) from `current` to `target` (partitions matched by name)."""
    before = {p.tp: p.replicas for p in current}
    moves = leaders = 0
    for p in target:
        old = before.get(p.tp, ())
        moves += sum(1 for b in set(p.replicas) if b not in old)
        leaders += bool(p.replicas and (not old or old[0] != p.replicas[0]))
    return moves, leaders


class _Encoding:
    """The Z3 model: x[i][j] = partition i has a replica on broker j; lead[i][j] = broker j is its preferred
    leader. Constraint groups carry a tracking literal so an unsatisfiable core names the group."""

    def __init__(self, problem: PlanProblem) -> None:
        self.problem = problem
        self.brokers = problem.brokers
        n = len(self.brokers)
        parts = problem.partitions
        self.x = [[z3.Bool(f"x_{i}_{j}") for j in range(n)] for i in range(len(parts))]
        self.lead = [[z3.Bool(f"l_{i}_{j}") for j in range(n)] for i in range(len(parts))]
        self.groups: dict[str, list[z3.BoolRef]] = {}

    def add(self, group: str, *constraints: z3.BoolRef) -> None:
        self.groups.setdefault(group, []).extend(constraints)

    def build(self) -> None:
        pr = self.problem
        index = {b: j for j, b in enumerate(self.brokers)}
        rack_of = pr.remaining.rack_map
        racks = pr.remaining.racks
        by_rack = {r: [index[b] for b in self.brokers if rack_of[b] == r] for r in racks} if pr.racked else {}
        for i, p in enumerate(pr.partitions):
            xs, ls = self.x[i], self.lead[i]
            rf = pr.rf(p)
            self.add("replication factor", z3.PbEq([(v, 1) for v in xs], rf))
            self.add("replication factor", z3.PbEq([(v, 1) for v in ls], 1),
                     *[z3.Implies(ls[j], xs[j]) for j in range(len(xs))])
            if i in pr.frozen:
                keep = {index[b] for b in p.replicas if b in index}
                self.add("frozen partitions", *[xs[j] if j in keep else z3.Not(xs[j]) for j in range(len(xs))])
                if p.replicas and p.replicas[0] in index:
                    self.add("frozen partitions", ls[index[p.replicas[0]]])
            if by_rack:
                if rf <= len(racks):
                    self.add("rack awareness", *[z3.AtMost(*[xs[j] for j in js], 1) for js in by_rack.values()])
                else:
                    cnt = {r: z3.Sum([z3.If(xs[j], 1, 0) for j in js]) for r, js in by_rack.items()}
                    self.add("rack awareness", *[z3.AtLeast(*[xs[j] for j in js], 1) for js in by_rack.values()])
                    for ra, rb in itertools.permutations(racks, 2):  # rack-distribution
                        self.add("rack awareness", z3.Or(cnt[ra] <= cnt[rb] + 1,
                                                         z3.And(*[xs[j] for j in by_rack[rb]])))
        on = {b: {i for i, p in enumerate(pr.partitions) if b in p.replicas} for b in self.brokers}
        limit = pr.settings.max_replicas_per_broker
        for j, b in enumerate(self.brokers):
            column = [(self.x[i][j], 1) for i in range(len(pr.partitions))]
            self.add("max.replicas.per.broker", z3.PbLe(column, limit))
            arriving = [(self.x[i][j], 1) for i in range(len(pr.partitions)) if i not in on[b]]
            # while the plan runs the broker holds its current replicas and every arriving one
            self.add("max.replicas.per.broker while the plan runs",
                     z3.PbLe(arriving, limit - len(on[b])) if arriving else z3.BoolVal(len(on[b]) <= limit))
        if not pr.balance:
            return
        lim = problem_limits(pr)
        for j in range(len(self.brokers)):
            lo, up = lim["replicas"]
            column = [(self.x[i][j], 1) for i in range(len(pr.partitions))]
            self.add("balance: replicas per broker", z3.PbGe(column, lo), z3.PbLe(column, up))
            lo, up = lim["leaders"]
            led = [(self.lead[i][j], 1) for i in range(len(pr.partitions))]
            self.add("balance: preferred leaders per broker", z3.PbGe(led, lo), z3.PbLe(led, up))
            for t in pr.current.topics:
                lo, up = lim["topic"][t]
                tcol = [(self.x[i][j], 1) for i, p in enumerate(pr.partitions) if p.topic == t]
                self.add("balance: a topic's replicas per broker", z3.PbGe(tcol, lo), z3.PbLe(tcol, up))
        for r, js in by_rack.items():
            lo, up = lim["rack_leaders"][r]
            led = [(self.lead[i][j], 1) for i in range(len(pr.partitions)) for j in js]
            self.add("balance: preferred leaders per rack", z3.PbGe(led, lo), z3.PbLe(led, up))

    def move_terms(self) -> list[z3.BoolRef]:
        """One Boolean per possible move: a replica on a broker the partition does not hold today."""
        out = []
        for i, p in enumerate(self.problem.partitions):
            held = set(p.replicas)
            out += [self.x[i][j] for j, b in enumerate(self.brokers) if b not in held]
        return out

    def leader_terms(self) -> list[z3.BoolRef]:
        """One Boolean per partition that keeps its preferred leader."""
        index = {b: j for j, b in enumerate(self.brokers)}
        return [self.lead[i][index[p.replicas[0]]] for i, p in enumerate(self.problem.partitions)
                if p.replicas and p.replicas[0] in index]

    def target(self, model: z3.ModelRef) -> ReplicaAssignment:
        """The target read from a model: kept replicas keep their places, an arriving one takes a leaving one's
        place, and the preferred leader goes first."""
        out = []
        for i, p in enumerate(self.problem.partitions):
            chosen = [b for j, b in enumerate(self.brokers) if z3.is_true(model.eval(self.x[i][j]))]
            leader = next(b for j, b in enumerate(self.brokers) if z3.is_true(model.eval(self.lead[i][j])))
            out.append(_ordered(p, set(chosen), leader))
        return ReplicaAssignment(tuple(out), self.problem.current.replication_factors)


def _diagnose(problem: PlanProblem) -> str:
    """Why no plan exists: the first constraint that fails on its own, found without the solver where counting
    suffices, else from an unsatisfiable core."""
    n = len(problem.brokers)
    leaving = f" ({_ids(problem.leaving)} leaving)" if problem.leaving else ""
    for t, rf in problem.replication_factor.items():
        if rf > n:
            return f"topic {t} has replication factor {rf} but only {n} broker(s) would remain{leaving}"
    for i, why in problem.frozen.items():
        p = problem.partitions[i]
        if local_fewest_moves(problem, p) != 0:
            return (f"partition {p.tp} must move (its replicas {list(p.replicas)} break a hard rule on the remaining "
                    f"brokers) but moving it is unsafe: {why}")
    for p in problem.partitions:
        if local_fewest_moves(problem, p) is None:
            return f"partition {p.tp}: no replica set of {problem.rf(p)} remaining brokers meets the rack rules"
    total = sum(problem.rf(p) for p in problem.partitions)
    limit = problem.settings.max_replicas_per_broker
    if (over := _over_limit_now(problem)) is not None:
        return over
    if total > n * limit:
        return (f"{total} replicas do not fit on {n} broker(s) at max.replicas.per.broker={limit}")
    if problem.balance and _flow_replicas(dataclasses.replace(problem, balance=False)) is not None:
        return (f"the balance limits at --threshold {problem.settings.replica_threshold:g} cannot be met together "
                "with the rack rules and max.replicas.per.broker on these brokers (raise --threshold, or "
                "--no-balance to clear the hard violations only)")
    if 2 * len(problem.partitions) * len(problem.brokers) > MAX_CELLS:
        return "no target meets the rack rules, max.replicas.per.broker and the partitions that must not move together"
    enc = _Encoding(problem)
    enc.build()
    solver = z3.Solver()
    solver.set("timeout", 30_000)
    tracks = {}
    for name, cs in enc.groups.items():
        lit = z3.Bool(f"group: {name}")
        tracks[str(lit)] = name
        solver.add(*[z3.Implies(lit, c) for c in cs])
    answer = solver.check(*[z3.Bool(f"group: {name}") for name in enc.groups])
    if answer == z3.unsat:
        core = sorted(tracks[str(c)] for c in solver.unsat_core())
        hint = ""
        if any(c.startswith("balance") for c in core):
            hint = f" at --threshold {problem.settings.replica_threshold:g} (raise it, or --no-balance)"
        return "no target meets these constraints together: " + "; ".join(core) + hint
    return "no target meets the constraints (the solver could not say which)"


def _over_limit_now(problem: PlanProblem) -> str | None:
    """A broker above max.replicas.per.broker today stays above it while any plan runs (its replicas leave only when
    the moves complete): verify-reassignment's transient check fails every plan."""
    limit = problem.settings.max_replicas_per_broker
    held = Counter(b for p in problem.partitions for b in set(p.replicas))
    over = sorted(b for b, n in held.items() if n > limit)
    if not over:
        return None
    b = over[0]
    return (f"broker {b} holds {held[b]} replicas now, above max.replicas.per.broker={limit}, and keeps them until "
            "the moves off it complete: every plan breaks the limit while it runs "
            "(reassignment.transient-max-replicas-per-broker); raise --max-replicas-per-broker to the current peak")


def _ids(ids: Iterable[int]) -> str:
    return ",".join(map(str, sorted(ids)))


class _Flow:
    """A min-cost flow with edge lower bounds (networkx's network simplex takes none: each lower bound l becomes
    demand moved from the edge's head to its tail)."""

    def __init__(self) -> None:
        self.g = nx.DiGraph()
        self.forced: dict[tuple[Any, Any], int] = {}

    def node(self, n: Any, demand: int = 0) -> None:
        if n not in self.g:
            self.g.add_node(n, demand=0)
        self.g.nodes[n]["demand"] += demand

    def edge(self, u: Any, v: Any, low: int, high: int, cost: int = 0) -> None:
        self.node(u)
        self.node(v)
        self.g.add_edge(u, v, capacity=high - low, weight=cost)
        if low:
            self.forced[(u, v)] = low
            self.g.nodes[u]["demand"] += low
            self.g.nodes[v]["demand"] -= low

    def solve(self) -> dict[Any, dict[Any, int]] | None:
        """The flow on every edge (lower bounds added back), or None when no flow meets the bounds."""
        try:
            _, flow = nx.network_simplex(self.g)
        except (nx.NetworkXUnfeasible, nx.NetworkXUnbounded):
            return None
        for (u, v), low in self.forced.items():
            flow[u][v] += low
        return flow


def _flow_replicas(problem: PlanProblem) -> list[set[int]] | None:
    """Replica sets of the fewest moves under every constraint except the preferred leaders, the transient load and
    (RF above the racks) rack-distribution, as one min-cost flow: partition -> (partition, rack) [at most one per
    rack when RF <= racks; at least one otherwise] -> (topic, broker) [one per broker; cost 1 when the partition does
    not hold it today, less a little for keeping today's preferred leader] -> broker [the topic's balance limits] ->
    sink [the broker's limits]. A relaxation of the
    whole problem: its optimum is a lower bound, and its answer is minimal whenever it passes the rest. None when
    the relaxation itself has no answer (so neither has the problem)."""
    f = _Flow()
    rack_of = problem.remaining.rack_map if problem.racked else {}
    racks = problem.remaining.racks if problem.racked else ("",)
    lim = problem_limits(problem)
    cap = problem.settings.max_replicas_per_broker
    total = 0
    big = len(problem.partitions) + 1
    for i, p in enumerate(problem.partitions):
        rf = problem.rf(p)
        total += rf
        f.node(("p", i), -rf)
        allowed = set(p.replicas) if i in problem.frozen else set(problem.brokers)
        for r in racks:
            members = [b for b in problem.brokers if rack_of.get(b, "") == r and b in allowed]
            if not problem.racked:
                f.edge(("p", i), ("pr", i, r), 0, rf)
            elif rf <= len(racks):
                f.edge(("p", i), ("pr", i, r), 0, 1)
            else:
                f.edge(("p", i), ("pr", i, r), 1, rf)
            for b in members:  # a move costs more than every kept preferred leader together: moves come first
                keeps_leader = bool(p.replicas) and b == p.replicas[0]
                f.edge(("pr", i, r), ("tb", p.topic, b), 0, 1, -1 if keeps_leader else 0 if b in p.replicas else big)
    for t in problem.current.topics:
        lo, up = lim["topic"][t] if problem.balance else (0, cap)
        for b in problem.brokers:
            f.edge(("tb", t, b), ("b", b), lo, up)
    lo, up = lim["replicas"] if problem.balance else (0, cap)
    for b in problem.brokers:
        f.edge(("b", b), "sink", lo, min(up, cap))
    f.node("sink", total)
    flow = f.solve()
    if flow is None:
        return None
    sets: list[set[int]] = [set() for _ in problem.partitions]
    for i in range(len(problem.partitions)):
        for r in racks:
            for (_, _t, b), n in flow.get(("pr", i, r), {}).items():
                if n:
                    sets[i].add(b)
    return sets


def _flow_leaders(problem: PlanProblem, sets: Sequence[set[int]]) -> list[int] | None:
    """For fixed replica sets, the preferred leaders with the fewest changes within the leader balance limits (per
    broker, and per rack), as a min-cost flow; None when these sets admit no leaders within the limits."""
    f = _Flow()
    lim = problem_limits(problem)
    rack_of = problem.remaining.rack_map if problem.racked else {}
    for i, p in enumerate(problem.partitions):
        f.node(("p", i), -1)
        for b in sets[i]:
            f.edge(("p", i), ("b", b), 0, 1, 0 if p.replicas and p.replicas[0] == b else 1)
    n = len(problem.partitions)
    for b in problem.brokers:
        lo, up = lim["leaders"] if problem.balance else (0, n)
        head = ("r", rack_of[b]) if problem.racked and problem.balance else "sink"
        f.edge(("b", b), head, lo, up)
    if problem.racked and problem.balance:
        for r in problem.remaining.racks:
            lo, up = lim["rack_leaders"][r]
            f.edge(("r", r), "sink", lo, up)
    f.node("sink", n)
    flow = f.solve()
    if flow is None:
        return None
    return [next(b for (_, b), k in flow[("p", i)].items() if k) for i in range(n)]


def _ordered(p: PartitionReplicas, chosen: set[int], leader: int) -> PartitionReplicas:
    """A target list: kept replicas keep their places, an arriving one takes a leaving one's place, and the
    preferred leader goes first."""
    arriving = sorted(b for b in chosen if b not in p.replicas)
    replicas: list[int] = []
    for b in p.replicas:
        if b in chosen and b not in replicas:
            replicas.append(b)
        elif arriving and len(replicas) < len(chosen):
            replicas.append(arriving.pop(0))
    replicas += arriving
    replicas.remove(leader)
    return PartitionReplicas(p.topic, p.partition, (leader, *replicas))


def leader_lower_bound(problem: PlanProblem) -> int:
    """Leader changes no plan avoids: partitions whose preferred leader leaves (or is unknown), or (with the balance
    limits) the preferred leaderships that must arrive on brokers below the lower limit or leave brokers above it."""
    remaining = set(problem.brokers)
    lead = Counter(p.replicas[0] for i, p in enumerate(problem.partitions) if p.replicas)
    forced = sum(n for b, n in lead.items() if b not in remaining)
    if not problem.balance:
        return forced
    lo, up = problem_limits(problem)["leaders"]
    arrive = sum(max(0, lo - lead.get(b, 0)) for b in problem.brokers)
    leave = forced + sum(max(0, lead.get(b, 0) - up) for b in problem.brokers)
    return max(forced, arrive, leave)


@dataclass
class _Search:
    """Fewest true terms under the constraints, by SAT calls with a cardinality bound: a `sat` at the lower bound
    proves the optimum; an `unsat` at k raises the bound to k + 1; `unknown` (the call's time ran out) stops.
    Each call is a fresh, non-incremental solver: Z3 then bit-blasts the pseudo-Boolean constraints into its SAT
    core, measured 10-100x faster here than push/pop or assumption literals (its incremental core)."""

    constraints: list[z3.BoolRef]
    terms: list[z3.BoolRef]
    lower: int  # proved: no model has fewer
    deadline: float
    best: z3.ModelRef | None = None
    best_count: int | None = None
    stopped: str | None = None  # why the search stopped before proving

    def _count(self, model: z3.ModelRef) -> int:
        return sum(1 for v in self.terms if z3.is_true(model.eval(v, model_completion=True)))

    def _try(self, bound: int | None, share: float = 1.0) -> z3.CheckSatResult:
        left = self.deadline - time.perf_counter()
        if left <= 0:
            self.stopped = "its time budget ran out"
            return z3.unknown
        solver = z3.Solver()
        solver.set("timeout", max(1, int(left * share * 1000)))
        solver.add(*self.constraints)
        if bound is not None:
            solver.add(z3.PbLe([(v, 1) for v in self.terms], bound) if self.terms else z3.BoolVal(bound >= 0))
        answer = solver.check()
        if answer == z3.sat:
            model = solver.model()
            count = self._count(model)
            if self.best_count is None or count < self.best_count:
                self.best, self.best_count = model, count
        elif answer == z3.unknown:
            self.stopped = solver.reason_unknown()
        return answer

    def run(self) -> bool:
        """Search; False when no model exists at all (the constraints are unsatisfiable)."""
        if self.best_count is not None and self.best_count <= self.lower:
            return True  # the answer in hand already meets the lower bound
        first = self._try(self.lower, share=1 / 3)  # a plan at the counting bound is proved minimal at once
        if first == z3.unsat:
            self.lower += 1
        if first != z3.sat and self.best_count is None:
            self.stopped = None
            if self._try(None) == z3.unsat:
                return False
        while self.best_count is not None and self.lower < self.best_count and self.stopped is None:
            mid = (self.lower + self.best_count - 1) // 2
            answer = self._try(mid)
            if answer == z3.unsat:
                self.lower = mid + 1
        return True


def _plan_problems(problem: PlanProblem, target: ReplicaAssignment) -> list[str]:
    """What keeps a target from being a plan: its own check's hard findings and, with the balance limits on, the
    balance findings it was built to avoid."""
    result = check_plan(problem, target)
    return [f"{v.invariant}: {v.message}" for v in result.violations
            if v.severity is Severity.HARD or (problem.balance and v.invariant in BALANCE_INVARIANTS)]


def solve(problem: PlanProblem, timeout_s: float = DEFAULT_TIMEOUT) -> Plan:
    """The plan with the fewest moves, then the fewest leader changes. Raises Infeasible (no plan within the
    constraints), Incomplete (none found within the budget) or PlanBug (a plan failing its own check).

    First the min-cost flows (`_flow_replicas`, `_flow_leaders`): when their answer passes every check, its move
    count is proved minimal (it is optimal for a relaxation). Otherwise, and to try to prove the leader changes,
    Z3 searches with the flow's optimum as its lower bound."""
    started = time.perf_counter()
    if not problem.brokers:
        raise Infeasible("no broker would remain")
    if any(rf > len(problem.brokers) for rf in problem.replication_factor.values()) or _over_limit_now(problem):
        raise Infeasible(_diagnose(problem))
    size = f"{len(problem.partitions):,} partitions x {len(problem.brokers)} brokers"
    sets = _flow_replicas(problem)
    if sets is None:
        raise Infeasible(_diagnose(problem))
    flow_target = None
    lower = lower_bound(problem)
    leaders = _flow_leaders(problem, sets)
    if leaders is not None:
        flow_target = ReplicaAssignment(tuple(_ordered(p, sets[i], leaders[i])
                                              for i, p in enumerate(problem.partitions)),
                                        problem.current.replication_factors)
        relaxed = count_moves(problem.current, flow_target)[0]
        lower = max(lower, relaxed)  # the relaxation's optimum: no plan has fewer moves
        if _plan_problems(problem, flow_target):
            flow_target = None
    else:
        lower = max(lower, sum(len(sets[i] - set(p.replicas)) for i, p in enumerate(problem.partitions)))
    cells = 2 * len(problem.partitions) * len(problem.brokers)
    small = cells <= MAX_CELLS
    why = None
    if flow_target is not None:
        n_moves, n_leaders = count_moves(problem.current, flow_target)
        target, moves_lower = flow_target, lower
        leader_floor = leader_lower_bound(problem)
        leaders_proved = n_leaders == leader_floor
        if not leaders_proved and small:  # fewer leader changes with the same number of moves, by Z3
            enc = _Encoding(problem)
            enc.build()
            constraints = [c for cs in enc.groups.values() for c in cs]
            constraints.append(z3.PbLe([(v, 1) for v in enc.move_terms()], n_moves) if enc.move_terms()
                               else z3.BoolVal(True))
            changes = [z3.Not(v) for v in enc.leader_terms()]
            forced = len(problem.partitions) - len(changes)
            search = _Search(constraints, changes, max(0, leader_floor - forced), started + timeout_s,
                             best_count=n_leaders - forced)
            search.run()
            leaders_proved = search.best_count == search.lower
            if search.best is not None:
                better = enc.target(search.best)
                if _plan_problems(problem, better):
                    leaders_proved = False  # keep the flow's plan; _checked would call this one a bug
                else:
                    target = better
            n_moves, n_leaders = count_moves(problem.current, target)
    else:
        if not small:
            raise Incomplete(f"the min-cost flow's replica sets break a constraint it leaves out (preferred-leader "
                             f"balance, the load while the plan runs, or rack-distribution), and {size} is "
                             f"{cells:,} solver Booleans, above kcheck's limit of {MAX_CELLS:,} for Z3; no plan "
                             f"computed (lower bound: {lower} move(s))")
        enc = _Encoding(problem)
        enc.build()
        constraints = [c for cs in enc.groups.values() for c in cs]
        moves = _Search(constraints, enc.move_terms(), lower, started + 0.75 * timeout_s)
        if not moves.run():
            raise Infeasible(_diagnose(problem))
        if moves.best is None:
            raise Incomplete(f"the solver found no plan within {timeout_s:g} s ({moves.stopped}) on {size}; lower "
                             f"bound: {moves.lower} move(s)")
        assert moves.best_count is not None
        model = moves.best
        constraints.append(z3.PbLe([(v, 1) for v in moves.terms], moves.best_count) if moves.terms
                           else z3.BoolVal(True))
        changes = [z3.Not(v) for v in enc.leader_terms()]
        forced = len(problem.partitions) - len(changes)  # preferred leaders that leave: a change whatever the plan
        search = _Search(constraints, changes, max(0, leader_lower_bound(problem) - forced), started + timeout_s)
        search.best, search.best_count = model, search._count(model)
        search.run()
        target = enc.target(search.best or model)
        n_moves, n_leaders = count_moves(problem.current, target)
        moves_lower = moves.lower
        leaders_proved = n_moves == moves.lower and search.best_count == search.lower
        if n_moves != moves.lower:
            why = f"the solver stopped ({moves.stopped}) on {size}"
    proved = n_moves == moves_lower
    plan = Plan(problem, target, n_moves, n_leaders, proved, proved and leaders_proved, moves_lower,
                time.perf_counter() - started, why)
    return _checked(plan)


def check_plan(problem: PlanProblem, target: ReplicaAssignment) -> Report:
    """verify-reassignment's check of a plan (the partitions `target` changes) against `problem.current`: each
    move's safety on the cluster as it is while the plan runs, and the target placement on the remaining brokers."""
    from kcheck.gate.reassign import build_subject

    before = {p.tp: p.replicas for p in problem.partitions}
    proposed = ReplicaAssignment(tuple(p for p in target if p.replicas != before[p.tp]))
    subject = build_subject(problem.current, proposed, problem.cluster, "the plan", problem.controller,
                            problem.min_isr_override, dict(problem.min_insync_replicas),
                            problem.settings.max_replicas_per_broker, problem.kafka_version)
    safety = check_reassignment(subject)
    placement = check_placement(PlacementSubject(problem.remaining, target_assignment(subject), problem.settings))
    return Report((*safety.checked, *placement.checked), {**safety.skipped, **placement.skipped},
                  (*safety.violations, *placement.violations))


def judged(plan: Plan) -> gate.Judged:
    """The plan's own check judged as verify-reassignment judges a plan: against the cluster now (its placement,
    leaving brokers out of the balance, and the per-move checks with nothing moved), so each finding the plan leaves
    says whether the plan introduced, changed or only kept it, and what it fixed is listed."""
    from kcheck.gate.reassign import BEFORE_THE_MOVE, build_subject, unmoved_findings

    pr = plan.problem
    after = plan.check or check_plan(pr, plan.target)
    subject = build_subject(pr.current, plan.proposed, pr.cluster, "the plan", pr.controller, pr.min_isr_override,
                            dict(pr.min_insync_replicas), pr.settings.max_replicas_per_broker, pr.kafka_version)
    now = check_placement(PlacementSubject(pr.cluster, pr.current, pr.settings, leaving=pr.leaving),
                          set(after.checked))
    moves = unmoved_findings(subject)
    before = Report((*now.checked, *moves.checked), {}, (*now.violations, *moves.violations))
    return gate.judge(after, before, gate.gate_settings(None, None, None, "hard"), "the cluster now", BEFORE_THE_MOVE)


def _checked(plan: Plan) -> Plan:
    """The plan with its own check attached; PlanBug when it fails a hard invariant, puts a replica on a leaving
    broker, or (with the balance limits on) breaks a balance limit it was built to meet."""
    pr = plan.problem
    result = check_plan(pr, plan.target)
    bad = [v for v in result.violations if v.severity is Severity.HARD
           or (pr.balance and v.invariant in BALANCE_INVARIANTS)]
    remaining = set(pr.brokers)
    stray = [(str(p.tp), b) for p in plan.target for b in p.replicas if b not in remaining]
    if bad or stray:
        what = f"{bad[0].invariant}: {bad[0].message}" if bad else f"partition {stray[0][0]} on broker {stray[0][1]}"
        raise PlanBug(f"kcheck plan produced a plan that fails its own check ({what}); please report it")
    return dataclasses.replace(plan, check=result)


# ---------------------------------------------------------------------------------------------
# kcheck plan






def _summary_table(plan: Plan) -> Table:
    pr = plan.problem
    before_r = Counter(b for p in pr.partitions for b in p.replicas)
    before_l = Counter(p.replicas[0] for p in pr.partitions if p.replicas)
    after_r = Counter(b for p in plan.target for b in p.replicas)
    after_l = Counter(p.replicas[0] for p in plan.target)
    table = Table(title="Brokers before and after the plan", title_justify="left")
    for col in ("broker", "rack", "replicas", "preferred leaders", "note"):
        table.add_column(col, justify="left" if col in ("rack", "note") else "right")
    known = set(pr.cluster.broker_ids)
    ids = [*pr.cluster.broker_ids, *sorted(set(before_r) - known)]
    for b in ids:
        rack = pr.cluster.rack_of(b) if b in known else None
        note = "leaving" if b in pr.leaving else ("not in the cluster" if b not in known else
                                                  "new" if not before_r.get(b) else "")
        table.add_row(str(b), "-" if rack is None else escape(formats.shown(rack)),
                      f"{before_r.get(b, 0)} → {after_r.get(b, 0)}", f"{before_l.get(b, 0)} → {after_l.get(b, 0)}",
                      note)
    return table


def verdict(plan: Plan) -> str:
    """The one line that says what the plan is, and how sure kcheck is of it."""
    moves = f"{plan.moves} replica move(s) and {plan.leader_changes} preferred-leader change(s)"
    if plan.proved:
        leaders = ("fewest leader changes with them: proved" if plan.leaders_proved else
                   "the leader changes are the fewest for these replica sets, not proved fewest over every plan "
                   "with as few moves")
        return f"{moves}: minimal (proved) moves; {leaders}."
    return (f"{moves}: best found, not proved minimal: lower bound {plan.lower_bound} move(s) "
            f"({plan.why_not_proved}).")


def _soft_json(j: gate.Judged) -> list[dict[str, Any]]:
    """The soft findings the plan leaves, each with what the plan did to it."""
    rows: list[tuple[str, Any, str | None]] = [("introduced", v, None) for v in j.introduced]
    rows += [("changed", c.after, c.before.message) for c in j.changed]
    rows += [("unchanged", v, None) for v in j.unchanged]
    return [{"invariant": v.invariant, "where": v.where, "message": v.message, "change": change, "before": before}
            for change, v, before in rows if v.severity is not Severity.HARD]


def plan_json(plan: Plan, source: str, block: str, out: str | None, j: gate.Judged | None = None) -> dict[str, Any]:
    pr = plan.problem
    j = j or judged(plan)
    return {
        "current": source, "current_block": block, "brokers": list(pr.brokers), "decommission": sorted(pr.leaving),
        "balance": pr.balance, "threshold": pr.settings.replica_threshold,
        "moves": plan.moves, "leader_changes": plan.leader_changes, "proved_minimal": plan.proved,
        "leader_changes_proved_minimal": plan.leaders_proved, "lower_bound": plan.lower_bound,
        "why_not_proved": plan.why_not_proved, "seconds": round(plan.seconds, 3),
        "partitions_changed": len(plan.proposed), "out": out,
        "moved_replicas": [{"partition": tp, "to": to, "from": fr} for tp, to, fr in plan.moved_replicas()],
        "reassignment": json.loads(formats.format_reassignment_json(plan.proposed)) if len(plan.proposed) else None,
        "soft_findings": _soft_json(j),
        "fixed_findings": [{"invariant": v.invariant, "where": v.where, "message": v.message} for v in j.fixed],
        "exit_status": int(Exit.OK),
    }




