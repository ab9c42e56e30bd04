"""Partition health against Kafka's own `PartitionChangeBuilder` (request PC), at scale, and `kcheck verify` on a
large describe.

1. In-flight KRaft reassignments with every replica in sync: Kafka's builder completes them or not;
   `health.reassignment-completes` must flag exactly those it does not (release rules: KAFKA-19975 from 4.3.0).
2. A leaderless partition (its ISR members down) when a reassignment starts: Kafka elects nobody;
   `PartitionMove.predicted_leader` must say none.
3. `kcheck verify --json` on a generated describe (every health check runs), wall time.

Run: .venv/bin/python bench/bench_partition_health.py [--inputs 1000000] [--releases 4.4.0,4.1.2] [--partitions 200000]
(prints figures; asserts nothing)
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from kcheck.cli import main as kcheck_main
from kcheck.invariants.partition_health import check_partition_health
from kcheck.invariants.reassignment import PartitionMove
from kcheck.model import NO_LEADER, PartitionReplicas, ReplicaAssignment
from kcheck.reference.election import Election, PartitionRegistration
from kcheck.reference.kafka_bridge import JavaException, shared_bridge
from kcheck.reference.kafka_controller import PartitionChange, run_changes

BATCH = 5_000
BROKERS = range(1, 8)


def in_flight(rng: random.Random, n: int) -> tuple[list[PartitionChange], list[PartitionReplicas]]:
    changes, parts = [], []
    for i in range(n):
        replicas = tuple(rng.sample(BROKERS, rng.randint(2, 5)))
        removing = tuple(sorted(rng.sample(replicas, rng.randint(0, len(replicas) - 1))))
        adding = tuple(sorted(rng.sample(replicas, rng.randint(0 if removing else 1, len(replicas) - 1))))
        leader = rng.choice(replicas)
        isr = tuple(r for r in replicas if r == leader or rng.random() < 0.5)
        reg = PartitionRegistration(replicas, isr, leader, removing_replicas=removing, adding_replicas=adding)
        changes.append(PartitionChange(reg, frozenset(BROKERS), Election.ONLINE, target_isr=replicas))
        parts.append(PartitionReplicas("t", i, replicas, leader, isr, adding, removing))
    return changes, parts


def leaderless(rng: random.Random, n: int) -> tuple[list[PartitionChange], list[PartitionMove]]:
    changes, moves = [], []
    for _ in range(n):
        replicas, target = tuple(rng.sample(BROKERS, 3)), tuple(rng.sample(BROKERS, 3))
        isr = tuple(r for r in replicas if rng.random() < 0.4)
        up = frozenset(b for b in BROKERS if b not in isr)
        removing = tuple(sorted(set(replicas) - set(target)))
        adding = tuple(sorted(set(target) - set(replicas)))
        changes.append(PartitionChange(PartitionRegistration(replicas, isr, NO_LEADER), up, Election.ONLINE,
                                       target_replicas=(*target, *removing), target_removing=removing,
                                       target_adding=adding))
        moves.append(PartitionMove(PartitionReplicas("t", 0, replicas, NO_LEADER, isr), target))
    return changes, moves


def compare(version: str, inputs: int, seed: int) -> None:
    bridge = shared_bridge(version)
    rng = random.Random(seed)
    kafka_s = ours_s = 0.0
    compared = differ = errors = stuck = 0
    first: str | None = None
    for start in range(0, inputs, BATCH):
        changes, parts = in_flight(rng, min(BATCH, inputs - start))
        t = time.perf_counter()
        answers = run_changes(bridge, changes)
        kafka_s += time.perf_counter() - t
        t = time.perf_counter()
        report = check_partition_health(ReplicaAssignment(tuple(parts)), {}, None, kafka_version=version)
        ours_s += time.perf_counter() - t
        flagged = {v.where for v in report.violations if v.invariant == "health.reassignment-completes"}
        for p, a in zip(parts, answers, strict=True):
            if isinstance(a, JavaException):
                errors += 1
                continue
            compared += 1
            theirs = bool(a.after.adding_replicas or a.after.removing_replicas)
            stuck += theirs
            if theirs != (f"partition {p.tp}" in flagged):
                differ += 1
                first = first or f"{p} -> Kafka {a.after}"
    print(f"{version} reassignment completion: {compared:,} compared ({errors:,} refused by Kafka), {stuck:,} never "
          f"complete, {differ:,} differences; Kafka {compared / kafka_s:,.0f}/s, ours (whole health check) "
          f"{compared / ours_s:,.0f}/s" + (f"; first: {first}" if first else ""))
    compared = differ = 0
    kafka_s = ours_s = 0.0
    for start in range(0, inputs, BATCH):
        changes, moves = leaderless(rng, min(BATCH, inputs - start))
        t = time.perf_counter()
        answers = run_changes(bridge, changes)
        kafka_s += time.perf_counter() - t
        t = time.perf_counter()
        predicted = [m.predicted_leader for m in moves]
        ours_s += time.perf_counter() - t
        for m, leader, a in zip(moves, predicted, answers, strict=True):
            if isinstance(a, JavaException):
                continue
            compared += 1
            if a.after.leader != leader:
                differ += 1
                first = first or f"{m.current} -> Kafka leader {a.after.leader}, ours {leader}"
    print(f"{version} leaderless move start: {compared:,} compared, {differ:,} differences; Kafka "
          f"{compared / kafka_s:,.0f}/s, ours {compared / ours_s:,.0f}/s" + (f"; first: {first}" if first else ""))


def bench_verify(partitions: int) -> None:
    rng = random.Random(3)
    lines = [f"Topic: t\tPartitionCount: {partitions}\tReplicationFactor: 3\tConfigs: min.insync.replicas=2"]
    for i in range(partitions):
        replicas = rng.sample(range(60), 3)
        isr = replicas if i % 20 else replicas[1:2]
        leader = replicas[0] if i % 10 else isr[0]
        lines.append(f"\tTopic: t\tPartition: {i}\tLeader: {leader}\tReplicas: {','.join(map(str, replicas))}\t"
                     f"Isr: {','.join(map(str, isr))}\tElr: \tLastKnownElr: ")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "describe.txt"
        path.write_text("\n".join(lines) + "\n")
        t = time.perf_counter()
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):
            code = kcheck_main(["verify", str(path), "--json"])
        s = time.perf_counter() - t
    print(f"kcheck verify --json, {partitions:,}-partition describe: {s:.2f} s ({partitions / s:,.0f} partitions/s), "
          f"exit {code}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", type=int, default=1_000_000)
    ap.add_argument("--releases", default="4.4.0,4.1.2,4.0.2")
    ap.add_argument("--partitions", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=19)
    args = ap.parse_args()
    for version in args.releases.split(","):
        compare(version.strip(), args.inputs, args.seed)
    bench_verify(args.partitions)


if __name__ == "__main__":
    main()
