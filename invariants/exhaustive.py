"""Bounded exhaustive checking of any placer, over every random outcome.

Arbitrary Python cannot be made symbolic, so a placer with the reference's
signature is run on every configuration within the bounds: broker count, rack
layout, partitions, replication factor, fixed start index (when the placer has
one), and every sequence of results its `random.next_int(bound)` calls can
return (`AllDraws` backtracks over them; a placer that asks for unbounded
randomness is reported). Java seeds are not enumerated: every outcome of every
draw is, which covers every seed.

Rack layouts are enumerated by rack sizes (brokers 0.. fill rack a, then b,
...), plus "no racks". Kafka's placers only ever compare broker ids within a
rack, so any layout is this one with brokers renamed, and every placement
invariant is unchanged by renaming brokers. A user's placer may not have that
symmetry; `labelled=True` enumerates every assignment of brokers to racks instead.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from kcheck.invariants.placement import BalanceSettings, PlacementSubject
from kcheck.invariants.prover import RACK_NAMES, Bounds, Counterexample, ProofResult, seed_for_placement
from kcheck.invariants.registry import Violation, check_all
from kcheck.model import Cluster, ReplicaAssignment
from kcheck.reference.java import JavaRandom
from kcheck.reference.placers import BUILTIN_PLACERS, PlacerInfo

T = TypeVar("T")


class UnboundedDraw(Exception):
    """The placer asked for randomness that cannot be enumerated (nextInt() without a bound, nextLong, ...)."""


class AllDraws(JavaRandom):
    """A java.util.Random stand-in that returns a forced prefix of draws, then 0s, recording every bound."""

    def __init__(self, prefix: list[int]) -> None:
        self.prefix = prefix
        self.bounds: list[int] = []
        self.values: list[int] = []

    def next_int(self, bound: int | None = None) -> int:
        if bound is None:
            raise UnboundedDraw("nextInt() without a bound")
        if bound <= 0:
            raise ValueError("bound must be positive")
        i = len(self.values)
        value = self.prefix[i] if i < len(self.prefix) else 0
        self.bounds.append(bound)
        self.values.append(value)
        return value

    def next(self, bits: int) -> int:
        raise UnboundedDraw(f"next({bits})")


def every_draw(run: Callable[[JavaRandom], T]) -> Iterator[tuple[list[int], T]]:
    """Yield (draws, result) of `run(random)` for every sequence of bounded draws, in lexicographic order."""
    prefix: list[int] = []
    while True:
        rnd = AllDraws(prefix)
        result = run(rnd)
        yield list(rnd.values), result
        # odometer over the recorded bounds: bump the last draw that can still grow
        values, bounds = rnd.values, rnd.bounds
        i = len(values) - 1
        while i >= 0 and values[i] + 1 >= bounds[i]:
            i -= 1
        if i < 0:
            return
        prefix = [*values[:i], values[i] + 1]


def rack_layouts(n: int, max_racks: int, labelled: bool) -> Iterator[dict[int, str] | None]:
    """No racks, then layouts with 1..max_racks non-empty racks."""
    yield None
    for k in range(1, min(max_racks, n) + 1):
        if labelled:
            for racks in itertools.product(range(k), repeat=n):
                if len(set(racks)) == k:
                    yield {b: RACK_NAMES[r] for b, r in enumerate(racks)}
        else:
            for cuts in itertools.combinations(range(1, n), k - 1):
                bounds = (0, *cuts, n)
                yield {b: RACK_NAMES[r] for r in range(k) for b in range(bounds[r], bounds[r + 1])}


@dataclass
class Found:
    key: tuple[int, ...]
    cluster: Cluster
    partitions: int
    rf: int
    start_index: int
    draws: list[int]
    placement: dict[int, list[int]]
    violations: list[Violation]


def check_exhaustively(
    placer: PlacerInfo, invariants: list[str], bounds: Bounds, settings: BalanceSettings | None = None,
    labelled: bool = False,
) -> dict[str, ProofResult]:
    """Run the placer on the whole bounded space; the smallest violation of each invariant, or none."""
    settings = settings or BalanceSettings()
    started = time.perf_counter()
    smallest: dict[str, Found] = {}
    applied: set[str] = set()
    runs = 0
    wanted = set(invariants)
    for n in range(1, bounds.max_brokers + 1):
        for racks in rack_layouts(n, bounds.max_racks, labelled):
            cluster = Cluster.of(range(n), racks)
            n_racks = len(cluster.racks)
            for rf in range(1, min(n, bounds.max_rf) + 1):
                starts = range(n) if placer.has_start_index else (-1,)
                prefix_stable = placer.name in BUILTIN_PLACERS
                # Kafka's placers place partition p the same whatever the partition count, so one
                # run of the largest count serves every smaller one; a user's placer gets one run per count.
                counts = [bounds.max_partitions] if prefix_stable else range(1, bounds.max_partitions + 1)
                for start, total in itertools.product(starts, counts):
                    def run(rnd: JavaRandom, start: int = start, rf: int = rf, total: int = total,
                            brokers: tuple = cluster.brokers) -> dict:
                        return placer.place(list(brokers), total, rf, start, -1, rnd)

                    for draws, placement in every_draw(run):
                        runs += 1
                        for p in range(1, total + 1) if prefix_stable else (total,):
                            key = (n, n_racks, p, rf)
                            todo = {i for i in wanted if i not in smallest or key < smallest[i].key}
                            if not todo:
                                break
                            prefix = {q: placement[q] for q in sorted(placement)[:p]}
                            subject = PlacementSubject(cluster, ReplicaAssignment.from_placement("topic", prefix),
                                                       settings, replication_factor=rf)
                            report = check_all(subject, "placement", todo)
                            applied.update(report.checked)
                            by_id: dict[str, list[Violation]] = {}
                            for v in report.violations:
                                by_id.setdefault(v.invariant, []).append(v)
                            for inv, vs in by_id.items():
                                smallest[inv] = Found(key, cluster, p, rf, start, draws, prefix, vs)
    seconds = time.perf_counter() - started
    results = {}
    for inv in invariants:
        found = smallest.get(inv)
        status = "refuted" if found else ("proved" if inv in applied else "not applicable")
        result = ProofResult(placer.name, inv, status, "exhaustive", seconds, bounds.as_dict(), runs,
                             reason="every configuration within the bounds and every random draw")
        if found:
            result.counterexample = _counterexample(placer, found)
        results[inv] = result
    return results


def _counterexample(placer: PlacerInfo, found: Found) -> Counterexample:
    seed = (seed_for_placement(placer, found.cluster, found.partitions, found.rf, found.start_index, found.placement)
            if found.draws else None)
    return Counterexample(found.cluster, found.partitions, found.rf, found.start_index, found.start_index, seed,
                          found.placement, found.violations, draws=found.draws)
