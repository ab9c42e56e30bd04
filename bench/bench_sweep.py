"""Sweep throughput on this machine: the vectorised path against a row-at-a-time Python UDF, then the default preset.

Run: .venv/bin/python bench/bench_sweep.py [--range 100000] [--master local[*]] [--placers adminutils]
(prints figures; asserts nothing). Both paths run in one SparkSession over the same id range of the
`default` placement space: the vectorised path as `kcheck sweep` runs it (Arrow batches of id ranges,
NumPy twins), the baseline as a plain `@udf` called once per configuration id (the scalar reference
placer and `check_placement`, with the same metrics). Then the whole `default` preset through
`spark_check.job.sweep` into a temporary store, as `kcheck sweep placement --space default` runs it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections import Counter

from kcheck.spark_check.job import run_ranges, spark_session, sweep
from kcheck.spark_check.placement_space import PLACEMENT_PRESETS, PlacementSpace
from kcheck.spark_check.store import ResultStore


def row_udf_counts(spark, space: PlacementSpace, start: int, stop: int, partitions: int) -> tuple[Counter, float]:
    """The baseline: one Python UDF call per configuration id; violated invariants come back as a bit mask."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    keys = space.invariant_ids()

    def check_one(config_id):  # no type hints: PySpark would read them as a pandas UDF's
        cfg = space[config_id]
        outcome = space.scalar(config_id)
        mask = 0
        for inv in outcome.violations:
            mask |= 1 << keys.index(f"{cfg.placer}/{inv}")
        return mask

    udf = F.udf(check_one, LongType())
    began = time.perf_counter()
    rows = (spark.range(start, stop, numPartitions=partitions).select(udf("id").alias("mask"))
            .groupBy("mask").count().collect())
    seconds = time.perf_counter() - began
    violated: Counter = Counter()
    for row in rows:
        for i, key in enumerate(keys):
            if row["mask"] >> i & 1:
                violated[key] += row["count"]
    return violated, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--range", type=int, default=100_000, help="configurations in the side-by-side range")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--placers", default="adminutils")
    parser.add_argument("--skip-default", action="store_true", help="only the side-by-side comparison")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} (shared with other work)")
    began = time.perf_counter()
    spark = spark_session(args.master, progress=False)
    startup = time.perf_counter() - began
    parallelism = spark.sparkContext.defaultParallelism
    print(f"SparkSession ({args.master}, parallelism {parallelism}): {startup:.1f} s to start")

    space = PlacementSpace(PLACEMENT_PRESETS["default"], args.placers.split(","))
    size = len(space)
    start = size // 2 - args.range // 2  # mid-sized clusters: 10-11 brokers, the bulk of the space
    stop = start + args.range
    first, last = space[start], space[stop - 1]
    print(f"range [{start:,}, {stop:,}) of the default space ({size:,} configurations): "
          f"{first.short()} .. {last.short()}")

    with tempfile.TemporaryDirectory() as tmp:
        warm = ResultStore(os.path.join(tmp, "warm"))
        warm.open(space, resume=False)
        run_ranges(spark, space, warm, [(0, 2 * parallelism)])  # start the Python workers once, for both paths
        store = ResultStore(os.path.join(tmp, "vector"))
        store.open(space, resume=False)
        ranges = [(a, min(stop, a + -(-args.range // parallelism))) for a in
                  range(start, stop, -(-args.range // parallelism))]
        stats = run_ranges(spark, space, store, ranges)
        vector_result = store.load(size).result
        vector_rate = args.range / stats.seconds
        baseline, udf_seconds = row_udf_counts(spark, space, start, stop, 4 * parallelism)
        udf_rate = args.range / udf_seconds
    vector_violated = {k: v for k, v in vector_result.violated.items() if v}
    agree = vector_violated == {k: v for k, v in baseline.items() if v}
    print(f"{'path':44} {'seconds':>8} {'configurations/s':>17}")
    print(f"{'vectorised (mapInArrow, NumPy twins)':44} {stats.seconds:8.2f} {vector_rate:17,.0f}"
          f"   (tasks spent {stats.task_seconds:.2f} s evaluating and storing; the rest is Spark's job overhead)")
    print(f"{'row-at-a-time Python UDF (scalar reference)':44} {udf_seconds:8.2f} {udf_rate:17,.0f}")
    print(f"speed-up {vector_rate / udf_rate:.0f}x; per-invariant violation counts agree: {'yes' if agree else 'NO'}")
    one = time.perf_counter()
    space.evaluate(start, stop)
    in_process = args.range / (time.perf_counter() - one)
    print(f"(one core, no Spark: vectorised evaluate {in_process:,.0f} configurations/s)")
    if args.skip_default:
        spark.stop()
        return

    with tempfile.TemporaryDirectory() as tmp:
        began = time.perf_counter()
        outcome = sweep(space, ResultStore(os.path.join(tmp, "default")), spark=spark)
        wall = time.perf_counter() - began
    job = outcome.job
    print(f"default preset: {size:,} configurations ({PLACEMENT_PRESETS['default'].text()}; {args.placers}) in "
          f"{job.ranges} tasks: job {job.seconds:.1f} s ({size / job.seconds:,.0f} configurations/s), "
          f"{wall:.1f} s with the store's writes and read-back; {wall + startup:.1f} s counting SparkSession "
          f"start-up; verified complete: {outcome.stored.complete}")
    print(f"load average now {os.getloadavg()[0]:.2f}")
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())
