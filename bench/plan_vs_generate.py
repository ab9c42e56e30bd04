"""`kcheck plan` against Kafka's own `kafka-reassign-partitions.sh --generate`: replica moves on the same clusters.

Run: .venv/bin/python bench/plan_vs_generate.py [--release 4.4.0] [--draws 5] [--timeout 60]

--generate re-places every partition of the topics it is given on the brokers of --broker-list
(tools/src/main/java/org/apache/kafka/tools/reassign/ReassignPartitionsCommand.java, `calculateAssignment`):
from 4.1.0 with one `StripedReplicaPlacer(new Random())` (KAFKA-18798), each topic a `PlacementSpec(0, partitions,
RF)` placed in turn; up to 4.0 with `AdminUtils.assignReplicasToBrokers` and its random start index. Its Random is
unseeded, so each of `--draws` proposals here is one seeded draw: Kafka's own placer through the bridge (word S,
or A for 4.0.x; reference/harness/KcheckPlacement.java), the stand-in tests/test_plan.py confirms against
ReassignPartitionsCommand itself. The same requests also run through kcheck's Python reference placer, so the
output also counts differences between the two (inputs compared) and gives both rates.

Clusters: several shapes (brokers, racks, topics x partitions, RF), each first placed by Kafka's own placer (as
topics created on it would be), then a case: decommission (one broker, or one per rack), brokers added (one per
rack), or both. For each: the moves and preferred-leader changes of --generate's proposal (mean and fewest over
the draws, and whether the proposal meets kcheck's hard invariants and balance limits) against `kcheck plan`'s
(with the balance limits at --threshold 1.10, or without them when they cannot be met, said in the row), and
whether the plan's count is proved minimal. Asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

from kcheck.gate.plan import BALANCE_INVARIANTS, Incomplete, Infeasible, PlanProblem, count_moves, solve
from kcheck.invariants import BalanceSettings, PlacementSubject, Severity, check_placement
from kcheck.model import Broker, Cluster, PartitionReplicas, ReplicaAssignment
from kcheck.reference.java import JavaRandom
from kcheck.reference.kafka_bridge import AssignRequest, StripedRequest, shared_bridge
from kcheck.reference.placement import assign_replicas_to_brokers
from kcheck.reference.striped import PlacementSpec, StaticCluster, StripedReplicaPlacer


@dataclass(frozen=True)
class Shape:
    brokers: int
    racks: int  # 0: no racks
    topics: int
    partitions: int  # per topic
    rf: int

    def __str__(self) -> str:
        racks = f"{self.racks} racks" if self.racks else "no racks"
        return f"{self.brokers} brokers/{racks}, {self.topics}x{self.partitions} RF{self.rf}"


SHAPES = (Shape(6, 3, 4, 12, 3), Shape(9, 3, 6, 20, 3), Shape(12, 4, 10, 24, 3), Shape(8, 0, 6, 16, 2),
          Shape(15, 3, 12, 30, 3))
CASES = ("decommission 1", "decommission 1 per rack", "add 1 per rack", "decommission 1 + add 1")


def brokers_of(ids: range | list[int], racks: int) -> tuple[Broker, ...]:
    return tuple(Broker(b, f"r{b % racks}" if racks else None) for b in ids)


def generate_requests(brokers: tuple[Broker, ...], sizes: list[tuple[int, int]], seed: int, release: str):
    """--generate's placer calls for one proposal: one StripedRequest (4.1+) or one AssignRequest per topic."""
    if release.startswith(("3.", "4.0.")):
        return [AssignRequest(brokers, n, rf, -1, -1, seed + i) for i, (n, rf) in enumerate(sizes)]
    specs = tuple(PlacementSpec(f"topic-{i}", 0, n, rf) for i, (n, rf) in enumerate(sizes))
    return [StripedRequest(brokers, specs, seed)]


def kafka_proposal(bridge, requests, release: str) -> list[list[list[int]]]:
    """Each topic's replica lists, as Kafka's placer answers."""
    if release.startswith(("3.", "4.0.")):
        return [[m[p] for p in sorted(m)] for m in bridge.map_assign(requests)]
    (answer,) = bridge.map_striped(requests)
    return [[list(r) for r in topic] for topic in answer]


def reference_proposal(requests, release: str) -> list[list[list[int]]]:
    if release.startswith(("3.", "4.0.")):
        out = []
        for r in requests:
            m = assign_replicas_to_brokers(list(r.brokers), r.n_partitions, r.replication_factor, -1, -1,
                                           JavaRandom(r.seed))
            out.append([list(m[p]) for p in sorted(m)])
        return out
    (r,) = requests
    placer, c = StripedReplicaPlacer(JavaRandom(r.seed)), StaticCluster(r.brokers)
    return [[list(x) for x in placer.place(s, c).replicas()] for s in r.specs]


def as_assignment(topics: list[str], lists: list[list[list[int]]]) -> ReplicaAssignment:
    return ReplicaAssignment(tuple(PartitionReplicas(t, p, tuple(r)) for t, rs in zip(topics, lists, strict=True)
                                   for p, r in enumerate(rs)))


def meets(problem: PlanProblem, target: ReplicaAssignment) -> tuple[bool, bool]:
    """(no hard finding, no balance finding) of a target on the remaining brokers."""
    result = check_placement(PlacementSubject(problem.remaining, target, problem.settings))
    hard = any(v.severity is Severity.HARD for v in result.violations)
    return not hard, not any(v.invariant in BALANCE_INVARIANTS for v in result.violations)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--release", default="4.4.0")
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args()
    bridge = shared_bridge(args.release)
    settings = BalanceSettings()
    kafka_s = ref_s = plan_s = 0.0
    compared = differences = 0
    placer = "AdminUtils" if args.release.startswith(("3.", "4.0.")) else "StripedReplicaPlacer"
    print(f"Kafka {args.release} --generate ({placer}) vs kcheck plan; {args.draws} draws each")
    header = (f"{'cluster':34} {'case':26} {'generate moves mean/min':>23} {'gen leaders':>11} "
              f"{'gen ok hard/bal':>15} {'plan moves':>10} {'plan leaders':>12} {'proved':>7} {'plan s':>7}")
    print(header)
    totals = [0.0, 0, 0]  # generate mean moves, plan moves, cases
    for shape in SHAPES:
        topics = [f"topic-{i}" for i in range(shape.topics)]
        sizes = [(shape.partitions, shape.rf)] * shape.topics
        start = brokers_of(range(shape.brokers), shape.racks)
        initial = as_assignment(topics, kafka_proposal(bridge, generate_requests(start, sizes, 42, args.release),
                                                       args.release))
        k = max(1, shape.racks)
        for case in CASES:
            n = shape.brokers
            leaving = {"decommission 1": {n - 1}, "decommission 1 per rack": set(range(n - k, n)),
                       "add 1 per rack": set(), "decommission 1 + add 1": {0}}[case]
            added = {"add 1 per rack": list(range(n, n + k)), "decommission 1 + add 1": [n]}.get(case, [])
            cluster = Cluster(brokers_of([*range(n), *added], shape.racks))
            remaining = tuple(b for b in cluster.brokers if b.id not in leaving)
            problem = PlanProblem(initial, cluster, frozenset(leaving), settings)
            gen_moves, gen_leaders, gen_ok = [], [], []
            for draw in range(args.draws):
                requests = generate_requests(remaining, sizes, 1000 + draw, args.release)
                t = time.perf_counter()
                theirs = kafka_proposal(bridge, requests, args.release)
                kafka_s += time.perf_counter() - t
                t = time.perf_counter()
                ours = reference_proposal(requests, args.release)
                ref_s += time.perf_counter() - t
                compared += 1
                differences += ours != theirs
                proposal = as_assignment(topics, theirs)
                moves, leaders = count_moves(initial, proposal)
                gen_moves.append(moves)
                gen_leaders.append(leaders)
                gen_ok.append(meets(problem, proposal))
            t = time.perf_counter()
            note = ""
            try:
                plan = solve(problem, args.timeout)
            except Infeasible:
                note = " (no balance)"
                try:
                    plan = solve(PlanProblem(initial, cluster, frozenset(leaving), settings, balance=False),
                                 args.timeout)
                except (Infeasible, Incomplete) as e:
                    print(f"{str(shape):34} {case:26} plan: {e}")
                    continue
            except Incomplete as e:
                print(f"{str(shape):34} {case:26} plan: {e}")
                continue
            plan_s += time.perf_counter() - t
            hard_ok = sum(h for h, _ in gen_ok)
            bal_ok = sum(b for _, b in gen_ok)
            totals[0] += statistics.mean(gen_moves)
            totals[1] += plan.moves
            totals[2] += 1
            print(f"{str(shape):34} {case:26} {statistics.mean(gen_moves):>17.1f}/{min(gen_moves):<5} "
                  f"{statistics.mean(gen_leaders):>11.1f} {f'{hard_ok}/{bal_ok} of {args.draws}':>15} "
                  f"{plan.moves:>10} {plan.leader_changes:>12} {'yes' if plan.proved else 'no':>7} "
                  f"{time.perf_counter() - t:>7.2f}{note}")
    print(f"\nOver {totals[2]} cases: --generate's proposals move {totals[0]:.0f} replicas on average in all, "
          f"kcheck plan {totals[1]} ({totals[1] / totals[0]:.1%} of them).")
    print(f"Placer differential: {compared} --generate proposals compared (Kafka {args.release} vs kcheck's "
          f"reference), {differences} differences.")
    print(f"Rates: Kafka's placer through the bridge {compared / kafka_s:,.0f} proposals/s; the Python reference "
          f"{compared / ref_s:,.0f} proposals/s; kcheck plan {plan_s:.1f} s for {totals[2]} plans.")


if __name__ == "__main__":
    main()
