"""Figures for `kcheck sweep-log`: one run of a grid of topic configs x workloads (kcheck.spark_check.log_sweep).

Prints the grid size, wall seconds, CPU seconds spent in the simulations, cells/s and simulated records/s, then the
findings: per invariant how many cells break it, and per delete.retention.ms the smallest consumer lag that makes
a tombstone invisible (Kafka promises the tombstones to a consumer lagging at most delete.retention.ms, so each
smallest lag found must be above it).

    python bench/bench_log_sweep.py                  # the default grid on Spark local[2]
    python bench/bench_log_sweep.py --python         # in this process
    python bench/bench_log_sweep.py --master spark://host:7077 --lags 0..60s/2s --retentions 1000,2000,5000,10000
"""

from __future__ import annotations

import argparse
import sys
import time

from kcheck.simulation.storage import CONSUMER_INVARIANT
from kcheck.spark_check.log_sweep import (
    DEFAULT_CONFIG,
    DEFAULT_WORKLOAD,
    LogGrid,
    invariant_rows,
    parse_axis,
    sweep_python,
    sweep_spark,
    thresholds,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", action="store_true", help="run the cells in this process")
    ap.add_argument("--master", default=None, help="Spark master (default local[2])")
    ap.add_argument("--lags", default="0..50s/5s", help="consumer.lag.ms values")
    ap.add_argument("--retentions", default="2000,10000,30000", help="delete.retention.ms values")
    ap.add_argument("--duration", default="3m", help="simulated time per cell")
    args = ap.parse_args(argv)
    axes = (parse_axis(f"delete.retention.ms={args.retentions}"), parse_axis(f"consumer.lag.ms={args.lags}"))
    workload = tuple(p for p in DEFAULT_WORKLOAD if p[0] != "duration") + (("duration", args.duration),)
    grid = LogGrid(DEFAULT_CONFIG, workload, axes)
    grid.validate()
    engine = "python (this process)" if args.python else f"spark {args.master or 'local[2]'}"
    print(f"grid: {len(grid)} cells = delete.retention.ms {len(axes[0][1])} x consumer.lag.ms {len(axes[1][1])}; "
          f"config {dict(DEFAULT_CONFIG)}; workload {dict(workload)}; engine {engine}")
    wall0, cpu0 = time.perf_counter(), time.process_time()
    rows = sweep_python(grid) if args.python else sweep_spark(grid, args.master)
    wall, driver_cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    cells_cpu = sum(r.seconds for r in rows)
    records = sum(r.records for r in rows)
    print(f"wall {wall:.1f} s; CPU in the simulations {cells_cpu:.1f} s (driver process {driver_cpu:.1f} s); "
          f"{len(rows) / wall:.2f} cells/s wall, {len(rows) / cells_cpu:.2f} cells per CPU second; "
          f"{records:,} records simulated, {records / cells_cpu:,.0f} records per CPU second")
    print("\ninvariant                         cells  broken  broken where Kafka promises it")
    for r in invariant_rows(rows):
        print(f"{r.invariant:32s} {r.checked:6d} {r.broken:7d} {r.failing:7d}")
    names, ths = thresholds(grid, rows, "consumer.lag.ms")
    print("\ndelete.retention.ms  smallest consumer.lag.ms that loses a tombstone  (largest lag that kept them all)")
    bad = 0
    for t in ths:
        d = t.others["delete.retention.ms"]
        smallest = t.smallest.get(CONSUMER_INVARIANT)
        kept = [int(r.params["consumer.lag.ms"]) for r in rows if r.params["delete.retention.ms"] == d
                and not r.violated.get(CONSUMER_INVARIANT)
                and (smallest is None or int(r.params["consumer.lag.ms"]) < int(smallest))]
        print(f"{d:>19s}  {smallest or 'none in the grid':>46s}  ({max(kept) if kept else '-'})")
        bad += smallest is not None and int(smallest) <= int(d)
    others = [n for n in names if n != CONSUMER_INVARIANT]
    print(f"\nlog.* invariants broken: {', '.join(others) or 'none'}; smallest lags at or below delete.retention.ms: "
          f"{bad}")
    return 1 if bad or others else 0


if __name__ == "__main__":
    sys.exit(main())
