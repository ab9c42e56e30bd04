"""Placement throughput on this machine: placers, invariant checks, and the `kcheck check` main job.

Run: .venv/bin/python bench/bench_placement.py   (prints figures; asserts nothing)
"""

from __future__ import annotations

import time
import tracemalloc

from invariants import PlacementSubject, check_placement
from kcheck.check import run_check
from model import Cluster, ReplicaAssignment
from reference.java import JavaRandom
from reference.placers import BUILTIN_PLACERS


def timed(fn, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def main() -> None:
    print(f"{'case':58} {'per call':>12} {'partitions/s':>14}")
    for n, racks, parts, rf in [(6, 0, 100, 3), (6, 3, 100, 3), (30, 5, 1_000, 3), (100, 10, 10_000, 3)]:
        rack_map = {b: f"r{b % racks}" for b in range(n)} if racks else None
        cluster = Cluster.of(range(n), rack_map)
        brokers = list(cluster.brokers)
        for name, info in BUILTIN_PLACERS.items():
            start = 0 if info.has_start_index else -1
            repeat = max(1, 20_000 // parts)
            t = timed(lambda: info.place(brokers, parts, rf, start, -1, JavaRandom(1)), repeat)
            print(f"{name:10} {n:3} brokers {racks:2} racks {parts:6} partitions RF {rf}   "
                  f"{t * 1e3:9.2f} ms {parts / t:14,.0f}")
        placement = BUILTIN_PLACERS["adminutils"].place(brokers, parts, rf, 0, -1, None)
        subject = PlacementSubject(cluster, ReplicaAssignment.from_placement("t", placement), replication_factor=rf)
        t = timed(lambda: check_placement(subject), max(1, 5_000 // parts))
        print(f"{'invariants':10} {n:3} brokers {racks:2} racks {parts:6} partitions RF {rf}   "
              f"{t * 1e3:9.2f} ms {parts / t:14,.0f}")
    tracemalloc.start()
    start = time.perf_counter()
    result = run_check()
    wall = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    print(f"kcheck check: {result.cases:,} placements on {result.clusters} clusters in {wall:.2f} s "
          f"({result.cases / wall:,.0f} placements/s with every invariant, traced under tracemalloc), "
          f"peak traced memory {peak / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
