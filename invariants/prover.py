"""Prove placement invariants with Z3, or find the smallest cluster that breaks them.

For each (algorithm, invariant) pair the prover answers:

* proved, unbounded: for every cluster size, partition count, start index and
  shift, where an encoding linear in the broker count exists (the rack-unaware
  path, one partition at a time: distinct brokers);
* proved, bounded: for every cluster within the stated bounds (brokers, racks,
  partitions, replication factor), every start index and shift, and every rack
  layout: the search below found nothing;
* refuted: the smallest counterexample, by fewest brokers, then racks, then
  partitions (then replication factor), replayed through the concrete
  reference with a `java.util.Random` seed that draws the same start index and
  shift, and confirmed by the scalar invariant;
* unknown: the solver gave up (its reason and the time are kept).

Symbolic search covers AdminUtils' random mode (start index and shift drawn
independently); fixed-start-index mode is the diagonal start = shift of it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import z3

from kcheck.invariants import smt
from kcheck.invariants.placement import BalanceSettings, PlacementSubject
from kcheck.invariants.registry import Violation, check_all
from kcheck.model import Cluster, ReplicaAssignment
from kcheck.model.smt import rack_aware_twin, rack_unaware_remainders, rack_unaware_twin
from kcheck.model.smt.common import SymbolicPlacement
from kcheck.model.smt.striped import striped_twin
from kcheck.reference.java import JavaHashMap, JavaRandom, optional_hash_code
from kcheck.reference.jvm_plugins import replay_name  # a jvm: placer's replay needs its --classpath
from kcheck.reference.placers import BUILTIN_PLACERS, PlacerInfo

ALGORITHMS = ("adminutils", "adminutils-rack-aware", "striped")
RACK_NAMES = "abcdefghij"  # one letter per rack keeps name order = index order, as the twin assumes


@dataclass(frozen=True)
class Bounds:
    max_brokers: int = 6
    max_racks: int = 3
    max_partitions: int = 8
    max_rf: int = 4

    def as_dict(self) -> dict[str, int]:
        return {"brokers": self.max_brokers, "racks": self.max_racks, "partitions": self.max_partitions,
                "rf": self.max_rf}


@dataclass
class Counterexample:
    cluster: Cluster
    partitions: int
    rf: int
    start_index: int
    shift: int
    seed: int | None  # a java.util.Random seed whose two nextInt(n) draws are (start_index, shift)
    placement: dict[int, list[int]]
    violations: list[Violation]
    draws: list[int] | None = None  # every nextInt(bound) result, when found by exhaustive enumeration

    def replay(self, placer: str = "adminutils") -> str:
        c = self.cluster
        cmd = f"kcheck place --placer {replay_name(placer)} --brokers {','.join(map(str, c.broker_ids))}"
        if c.rack_map:
            cmd += " --racks " + ",".join(f"{b}:{r}" for b, r in c.rack_map.items())
        cmd += f" --partitions {self.partitions} --replication-factor {self.rf}"
        if self.start_index >= 0 and self.start_index == self.shift:
            return cmd + f" --start-index {self.start_index}"
        if self.seed is not None:
            return cmd + f" --seed {self.seed}"
        return cmd + f"  # no java.util.Random seed found; draws {self.draws}"


@dataclass
class ProofResult:
    algorithm: str
    invariant: str
    status: str  # proved | refuted | unknown | not applicable
    scope: str  # unbounded | bounded | exhaustive
    seconds: float
    bounds: dict[str, int] = field(default_factory=dict)
    queries: int = 0
    counterexample: Counterexample | None = None
    reason: str = ""

    @property
    def replay_command(self) -> str | None:
        """The `kcheck place` command that reproduces the counterexample (both AdminUtils paths are `adminutils`)."""
        if self.counterexample is None:
            return None
        return self.counterexample.replay("adminutils" if self.algorithm.startswith("adminutils") else self.algorithm)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "algorithm": self.algorithm, "invariant": self.invariant, "status": self.status, "scope": self.scope,
            "seconds": round(self.seconds, 3), "bounds": self.bounds, "queries": self.queries, "reason": self.reason,
        }
        if self.counterexample is not None:
            ce = self.counterexample
            out["counterexample"] = {
                "brokers": list(ce.cluster.broker_ids), "racks": ce.cluster.rack_map, "partitions": ce.partitions,
                "replication_factor": ce.rf, "start_index": ce.start_index, "shift": ce.shift, "seed": ce.seed,
                "placement": {str(p): r for p, r in ce.placement.items()},
                "violations": [v.as_dict() for v in ce.violations],
            }
        return out


def seed_for_draws(n: int, start: int, shift: int, limit: int = 1_000_000) -> int | None:
    """The smallest java.util.Random seed whose first two nextInt(n) draws are (start, shift)."""
    for seed in range(limit):
        rnd = JavaRandom(seed)
        if rnd.next_int(n) == start and rnd.next_int(n) == shift:
            return seed
    return None


def seed_for_placement(placer: PlacerInfo, cluster: Cluster, partitions: int, rf: int, start_index: int,
                       placement: dict[int, list[int]], limit: int = 20_000) -> int | None:
    """The smallest java.util.Random seed under which the placer makes this placement (for replay commands)."""
    brokers = list(cluster.brokers)
    return next((s for s in range(limit)
                 if placer.place(brokers, partitions, rf, start_index, -1, JavaRandom(s)) == placement), None)


def prove_distinct_brokers_unbounded(timeout_ms: int = 60_000) -> ProofResult:
    """Rack-unaware AdminUtils never puts two replicas of a partition on one broker, for every n.

    Over symbolic n >= 1, RF in [1, n], the leader slot f = (pid + start) mod n
    and the shift remainder s = shift mod (n - 1), no two replica slots r1 < r2
    < RF coincide. f and s take every value in range for some start index and
    shift, and nothing else of the partition matters, so this covers every
    partition of every topic (also when adding partitions).
    """
    n, rf, f, s, r1, r2 = z3.Ints("n rf first shift_mod r1 r2")
    p1, dom1 = rack_unaware_remainders(n, f, s, r1)
    p2, _ = rack_unaware_remainders(n, f, s, r2)
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(n >= 1, rf >= 1, rf <= n, 0 <= r1, r1 < r2, r2 < rf, *dom1, p1 == p2)
    started = time.perf_counter()
    answer = solver.check()
    seconds = time.perf_counter() - started
    if answer == z3.unsat:
        return ProofResult("adminutils", "placement.distinct-brokers", "proved", "unbounded", seconds, queries=1,
                           reason="all n >= 1, RF <= n, every partition, start index and shift (linear encoding)")
    if answer == z3.sat:  # would contradict the concrete tests; report it rather than hide it
        return ProofResult("adminutils", "placement.distinct-brokers", "refuted", "unbounded", seconds, queries=1,
                           reason=f"model: {solver.model()}")
    return ProofResult("adminutils", "placement.distinct-brokers", "unknown", "unbounded", seconds, queries=1,
                       reason=solver.reason_unknown())


class ScriptedRandom(JavaRandom):
    """A java.util.Random whose nextInt results are given: replays a model's draws through the concrete placer."""

    def __init__(self, draws: list[int]) -> None:
        self.draws = list(draws)

    def next_int(self, bound: int | None = None) -> int:
        value = self.draws.pop(0)
        if bound is None or not 0 <= value < bound:
            raise ValueError(f"scripted draw {value} does not fit nextInt({bound})")
        return value


def rack_hash_order(racks: int) -> list[int]:
    """Iteration order of the striped placer's HashMap<Optional<String>, Rack> for racks a, b, ...

    Racks are first seen in broker-id order, which is name order for our layouts.
    """
    order: JavaHashMap[str, int] = JavaHashMap(hash_fn=optional_hash_code)
    for k in range(racks):
        order.put(RACK_NAMES[k], k)
    return order.values()


def _twin(algorithm: str, n: int, partitions: int, rf: int, racks: int) -> SymbolicPlacement:
    if algorithm == "adminutils":
        return rack_unaware_twin(n, partitions, rf)
    if algorithm == "striped":
        return striped_twin(n, partitions, rf, racks, rack_hash_order(racks))
    return rack_aware_twin(n, partitions, rf, racks)


def _shapes(algorithm: str, bounds: Bounds) -> Iterator[tuple[int, int]]:
    """(brokers, racks) in the order that defines 'smallest'."""
    for n in range(1, bounds.max_brokers + 1):
        if algorithm == "adminutils":
            yield n, 0
        else:
            for k in range(1, min(bounds.max_racks, n) + 1):
                yield n, k


def _replay_striped(invariant: str, model: z3.ModelRef, sp: SymbolicPlacement, partitions: int) -> Counterexample:
    """The model's rack sizes and draws, through the concrete striped placer; then a real seed if one is near."""
    value = lambda e: model.eval(e, model_completion=True).as_long()  # noqa: E731
    sizes = [value(sp.params[f"rack_size_{k}"]) for k in range(sp.racks)]
    cluster = Cluster.of(range(sp.n), dict(enumerate(RACK_NAMES[k] for k, s in enumerate(sizes) for _ in range(s))))
    draws = [value(var) for _, var, _, used in sp.draw_order if z3.is_true(model.eval(used, model_completion=True))]
    placer = BUILTIN_PLACERS["striped"]
    placement = placer.place(list(cluster.brokers), partitions, sp.rf, -1, -1, ScriptedRandom(draws))
    seed = seed_for_placement(placer, cluster, partitions, sp.rf, -1, placement)
    subject = PlacementSubject(cluster, ReplicaAssignment.from_placement("topic", placement), replication_factor=sp.rf)
    found = list(check_all(subject, "placement", {invariant}).violations)
    return Counterexample(cluster, partitions, sp.rf, -1, -1, seed, placement, found, draws)


def _replay(algorithm: str, placer: PlacerInfo, invariant: str, model: z3.ModelRef, sp: SymbolicPlacement,
            partitions: int) -> Counterexample:
    """Rebuild the cluster from the model, run the concrete placer, and check the scalar invariant."""
    if algorithm == "striped":
        return _replay_striped(invariant, model, sp, partitions)
    start = model.eval(sp.params["start"], model_completion=True).as_long()
    shift = model.eval(sp.params["shift"], model_completion=True).as_long()
    racks = None
    if sp.racks:  # brokers 0.. fill rack a, then rack b, ... with the model's rack sizes
        sizes = [model.eval(sp.params[f"rack_size_{k}"], model_completion=True).as_long() for k in range(sp.racks)]
        names = [RACK_NAMES[k] for k, size in enumerate(sizes) for _ in range(size)]
        racks = dict(enumerate(names))
    cluster = Cluster.of(range(sp.n), racks)
    if start == shift:  # fixed-start-index mode reaches it: Kafka's own API, no randomness
        seed, placement = None, placer.place(list(cluster.brokers), partitions, sp.rf, start)
    else:
        seed = seed_for_draws(sp.n, start, shift)
        if seed is None:
            raise RuntimeError(f"no java.util.Random seed draws ({start}, {shift}) from nextInt({sp.n})")
        placement = placer.place(list(cluster.brokers), partitions, sp.rf, -1, -1, JavaRandom(seed))
    subject = PlacementSubject(cluster, ReplicaAssignment.from_placement("topic", placement), replication_factor=sp.rf)
    found = list(check_all(subject, "placement", {invariant}).violations)
    return Counterexample(cluster, partitions, sp.rf, start, shift, seed, placement, found)


def prove_bounded(
    algorithm: str, invariant: str, placer: PlacerInfo, bounds: Bounds,
    settings: BalanceSettings | None = None, timeout_ms: int = 60_000,
) -> ProofResult:
    settings = settings or BalanceSettings()
    form = smt.FORMS[invariant]
    started = time.perf_counter()
    queries, applied = 0, False
    for n, racks in _shapes(algorithm, bounds):
        best: tuple[int, int, z3.ModelRef, SymbolicPlacement] | None = None
        for rf in range(1, min(n, bounds.max_rf) + 1):
            if not smt.applies(invariant, n, rf, racks):
                continue
            applied = True
            limit = best[0] - 1 if best else bounds.max_partitions
            if limit < 1:
                break
            sp = _twin(algorithm, n, limit, rf, racks)
            solver = z3.Solver()
            solver.set("timeout", timeout_ms)
            solver.add(*sp.constraints)
            complete = sp.complete
            if complete is not None:  # an unrolled search loop: trust it only if it always ends in time
                solver.push()
                solver.add(z3.Not(complete))
                answer = solver.check()
                queries += 1
                solver.pop()
                if answer != z3.unsat:
                    return ProofResult(algorithm, invariant, "unknown", "bounded", time.perf_counter() - started,
                                       bounds.as_dict(), queries,
                                       reason=f"the unrolled search may not end in time at brokers={n} "
                                              f"racks={racks} rf={rf} ({answer})")
            # A placement's first P partitions do not depend on the partition count, so one
            # unrolling serves every P: first ask whether any P <= limit breaks the invariant
            # (a proof needs just this query), then find the smallest P that does.
            violated = [form(sp, partitions, settings) for partitions in range(1, limit + 1)]
            for partitions, query in [(0, z3.Or(violated)), *enumerate(violated, 1)]:
                solver.push()
                solver.add(query)
                answer = solver.check()
                queries += 1
                model = solver.model() if answer == z3.sat else None
                solver.pop()
                if answer == z3.unknown:
                    return ProofResult(algorithm, invariant, "unknown", "bounded", time.perf_counter() - started,
                                       bounds.as_dict(), queries,
                                       reason=f"{solver.reason_unknown()} at brokers={n} racks={racks} rf={rf}")
                if partitions == 0 and answer == z3.unsat:
                    break  # nothing within the bounds breaks it for this shape
                if partitions > 0 and model is not None:
                    best = (partitions, rf, model, sp)
                    break
        if best is not None:
            partitions, _, model, sp = best
            ce = _replay(algorithm, placer, invariant, model, sp, partitions)
            status = "refuted" if ce.violations else "unknown"
            reason = "" if ce.violations else "the concrete reference does not confirm the solver's counterexample"
            return ProofResult(algorithm, invariant, status, "bounded", time.perf_counter() - started,
                               bounds.as_dict(), queries, ce, reason)
    status = "proved" if applied else "not applicable"
    return ProofResult(algorithm, invariant, status, "bounded", time.perf_counter() - started, bounds.as_dict(),
                       queries)


def prove(
    algorithm: str, invariant: str, placer: PlacerInfo, bounds: Bounds,
    settings: BalanceSettings | None = None, timeout_ms: int = 60_000,
) -> ProofResult:
    """The strongest answer available for one (algorithm, invariant) pair."""
    if algorithm == "adminutils" and invariant == "placement.distinct-brokers":
        result = prove_distinct_brokers_unbounded(timeout_ms)
        if result.status == "proved":
            return result
    return prove_bounded(algorithm, invariant, placer, bounds, settings, timeout_ms)

