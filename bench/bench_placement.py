"""Placement throughput on this machine: placers, invariant checks, and the `kcheck check` main job.

Run: .venv/bin/python bench/bench_placement.py   (prints figures; asserts nothing)
"""

from __future__ import annotations

import random
import resource
import time

from kcheck.check import run_check
from kcheck.inputs.formats import parse_describe
from kcheck.invariants import PlacementSubject, check_placement
from kcheck.model import Cluster, ReplicaAssignment
from kcheck.reference.java import JavaRandom
from kcheck.reference.placers import BUILTIN_PLACERS


def timed(repeat: int, fn, *args) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn(*args)
    return (time.perf_counter() - start) / repeat


def _describe_text(topics: int, brokers: int) -> tuple[str, Cluster]:
    """A KRaft-era describe output with random RF-3 replica sets, as a large real cluster would print."""
    rnd = random.Random(1)
    lines = []
    for t in range(topics):
        n = rnd.choice([3, 6, 12, 24])
        lines.append(f"Topic: topic-{t}\tTopicId: AAAAAAAAAAAAAAAAAAAAAA\tPartitionCount: {n}\tReplicationFactor: 3"
                     "\tConfigs: min.insync.replicas=2")
        for p in range(n):
            replicas = rnd.sample(range(brokers), 3)
            reps = ",".join(map(str, replicas))
            lines.append(f"\tTopic: topic-{t}\tPartition: {p}\tLeader: {replicas[0]}\tReplicas: {reps}\tIsr: {reps}"
                         "\tElr: \tLastKnownElr: ")
    return "\n".join(lines) + "\n", Cluster.of(range(brokers), {b: f"rack{b % 3}" for b in range(brokers)})


def main() -> None:
    print(f"{'case':58} {'per call':>12} {'partitions/s':>14}")
    for n, racks, parts, rf in [(6, 0, 100, 3), (6, 3, 100, 3), (30, 5, 1_000, 3), (100, 10, 10_000, 3)]:
        rack_map = {b: f"r{b % racks}" for b in range(n)} if racks else None
        cluster = Cluster.of(range(n), rack_map)
        brokers = list(cluster.brokers)
        for name, info in BUILTIN_PLACERS.items():
            start = 0 if info.has_start_index else -1
            repeat = max(1, 20_000 // parts)
            t = timed(repeat, lambda place, *a: place(*a, JavaRandom(1)), info.place, brokers, parts, rf, start, -1)
            print(f"{name:10} {n:3} brokers {racks:2} racks {parts:6} partitions RF {rf}   "
                  f"{t * 1e3:9.2f} ms {parts / t:14,.0f}")
        placement = BUILTIN_PLACERS["adminutils"].place(brokers, parts, rf, 0, -1, None)
        subject = PlacementSubject(cluster, ReplicaAssignment.from_placement("t", placement), replication_factor=rf)
        t = timed(max(1, 5_000 // parts), check_placement, subject)
        print(f"{'invariants':10} {n:3} brokers {racks:2} racks {parts:6} partitions RF {rf}   "
              f"{t * 1e3:9.2f} ms {parts / t:14,.0f}")
    describe, cluster = _describe_text(2_000, 30)
    start = time.perf_counter()
    assignment = parse_describe(describe, "bench")
    parsed = time.perf_counter() - start
    report = check_placement(PlacementSubject(cluster, assignment))
    print(f"verify: kafka-topics --describe of {len(assignment):,} partitions (2,000 topics, 30 brokers, 3 racks): "
          f"parse {parsed:.2f} s, invariants {time.perf_counter() - start - parsed:.2f} s, "
          f"{len(report.violations):,} violations")
    start = time.perf_counter()
    result = run_check()
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"kcheck check: {result.cases:,} placements on {result.clusters} clusters in {wall:.2f} s "
          f"({result.cases / wall:,.0f} placements/s, every invariant checked on each); "
          f"peak RSS of this process {peak:.0f} MiB")

if __name__ == "__main__":
    main()
