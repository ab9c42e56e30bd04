"""The best placement a cluster allows, by Z3 optimisation, to say how far a placer is from it.

Over every assignment of P partitions x RF distinct brokers, Z3 maximises rack
diversity (the fewest racks any partition spans) and, among placements that
keep every partition on min(RF, racks) racks (a hard invariant, so a placer is
not blamed for spread that rack diversity forces), minimises the leader spread
(most minus fewest preferred leaders on a broker) and the replica spread (same
for replicas). Each metric is optimised on its own: the optima need not be
reachable by one placement.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

import z3

from kcheck.model import Cluster
from kcheck.model.smt.common import count


@dataclass(frozen=True)
class Metrics:
    leader_spread: int
    replica_spread: int
    min_racks_spanned: int | None  # None without rack information


def metrics(cluster: Cluster, placement: dict[int, list[int]]) -> Metrics:
    """The same three metrics, measured on a concrete placement."""
    leaders = Counter(r[0] for r in placement.values())
    replicas = Counter(b for r in placement.values() for b in r)
    ids = cluster.broker_ids
    racks = cluster.rack_map
    spanned = min(len({racks[b] for b in r}) for r in placement.values()) if cluster.rack_layout == "full" else None
    return Metrics(max(leaders[b] for b in ids) - min(leaders[b] for b in ids),
                   max(replicas[b] for b in ids) - min(replicas[b] for b in ids), spanned)


def optimal_metrics(cluster: Cluster, partitions: int, rf: int, timeout_ms: int = 60_000) -> tuple[Metrics, float]:
    """(best achievable metrics, seconds). Brokers are positions 0..n-1 of the cluster's broker list.

    Each metric is found by asking Z3 for a placement at every candidate value,
    best first, so the answer is the first satisfiable value and every better
    one was proved impossible. The counts are given their known sums (P leaders,
    P*RF replicas) as redundant facts, which lets Z3 refute spreads that
    counting alone rules out.
    """
    n = len(cluster)
    racks = list(cluster.racks) if cluster.rack_layout == "full" else []
    rack_of = cluster.rack_map  # every broker has a rack when `racks` is not empty
    rack_index = [racks.index(rack_of[b]) for b in cluster.broker_ids] if racks else []
    started = time.perf_counter()

    def racks_spanned(row: list[z3.ArithRef]) -> z3.ArithRef:
        rack = [z3.Sum([z3.If(v == b, rack_index[b], 0) for b in range(n)]) for v in row]
        return count([z3.Or([q == k for q in rack]) for k in range(len(racks))])

    def placement_solver(diverse: bool) -> tuple[z3.Solver, list[list[z3.ArithRef]]]:
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        x = [[z3.Int(f"x_{p}_{r}") for r in range(rf)] for p in range(partitions)]
        for row in x:
            solver.add(*[z3.And(v >= 0, v < n) for v in row], z3.Distinct(*row))
            if diverse:
                solver.add(racks_spanned(row) >= min(rf, len(racks)))
        solver.add(*[x[p][0] <= x[p + 1][0] for p in range(partitions - 1)])  # partitions are interchangeable
        return solver, x

    def first_feasible(values: range, feasible, diverse: bool = bool(racks)) -> int:
        for value in values:
            solver, x = placement_solver(diverse)
            solver.add(feasible(x, value))
            answer = solver.check()
            if answer == z3.sat:
                return value
            if answer == z3.unknown:
                raise RuntimeError(f"solver gave up ({solver.reason_unknown()}) at value {value}")
        raise RuntimeError("no feasible value")

    def spread_at_most(cells_of, total: int):
        def feasible(x, spread):
            # Named counts, so the arithmetic (n counts within `spread` of each other summing
            # to `total`) is visible to Z3 apart from the placement that realises them.
            counts = [z3.Int(f"count_{b}") for b in range(n)]
            lo = z3.Int("lo")
            return z3.And(*[c == count([v == b for v in cells_of(x)]) for b, c in enumerate(counts)],
                          z3.Sum(counts) == total, lo >= 0, *[z3.And(lo <= c, c <= lo + spread) for c in counts])
        return feasible

    leader = first_feasible(range(partitions + 1), spread_at_most(lambda x: [row[0] for row in x], partitions))
    replica = first_feasible(range(partitions * rf + 1),
                             spread_at_most(lambda x: [v for row in x for v in row], partitions * rf))
    spanned = None
    if racks:
        spanned = first_feasible(range(min(rf, len(racks)), 0, -1),
                                 lambda x, least: z3.And([racks_spanned(row) >= least for row in x]), diverse=False)
    return Metrics(leader, replica, spanned), time.perf_counter() - started
