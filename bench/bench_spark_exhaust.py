"""The Spark-distributed exhaustive search (`kcheck.spark_check.exhaust.spark_exhaust`) on local[1] and local[2]
against the one-process engine (`kcheck.model.search.exhaust`) on the same bounds, in one run.

Prints per engine: distinct states, transitions, whether the search completed, wall seconds of the search (Spark's
start-up is printed apart), CPU seconds of the whole process tree (this process, the driver's JVM and its Python
workers, read from /proc before and after the search, so a worker that exits mid-run is not counted: PySpark keeps
its workers for the context's life here), and states per wall and per CPU second. The counts must agree; the
speed figures are only as good as the machine's load, printed with them.

    python bench/bench_spark_exhaust.py [--bound small|symmetric|storage] [--partitions N] [--masters local[1],local[2]]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from functools import partial
from typing import Any

BOUNDS = ("small", "symmetric", "storage")


def _factory(bound: str) -> Callable[[], Any]:
    if bound == "storage":
        from kcheck.invariants.storage_model import StorageModel
        from kcheck.model.storage import Config as StorageConfig

        return partial(StorageModel, StorageConfig(keys=2, records=3, max_segments=2, max_clock=0, consumer=False,
                                                   retention=True, crashes=1))
    from kcheck.check import SMALL_EXHAUSTIVE_BOUNDS
    from kcheck.invariants.replication_model_adapter import ReplicationModel
    from kcheck.model.replication import Config, Protocol

    settings = dict(SMALL_EXHAUSTIVE_BOUNDS)
    if bound == "symmetric":
        settings.update(brokers=3, replication_factor=1, records=2, crashes=1, max_leader_epoch=2, fences=1)
    return partial(ReplicationModel, Protocol.current(), Config(**settings))


def _tree_cpu() -> float:
    """CPU seconds (user + system) of this process and every live descendant, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(name), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo += children.get(pid, [])
    return total


def _row(name: str, r: Any, wall: float, cpu: float) -> None:
    print(f"{name:<14} {r.states:>9,} {r.transitions:>11,} {str(r.complete):>8} {wall:>8.1f} {cpu:>8.1f} "
          f"{r.states / wall:>9.0f} {r.states / cpu if cpu else 0:>9.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bound", choices=BOUNDS, default="small")
    ap.add_argument("--partitions", type=int, default=None)
    ap.add_argument("--masters", default="local[1],local[2]")
    args = ap.parse_args()
    from kcheck.model.search import exhaust
    from kcheck.spark_check.exhaust import spark_exhaust
    from kcheck.spark_check.job import spark_session

    factory = _factory(args.bound)
    print(f"bound {args.bound}: {factory().name}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'engine':<14} {'states':>9} {'transitions':>11} {'complete':>8} {'wall s':>8} {'CPU s':>8} "
          f"{'states/s':>9} {'st/CPU s':>9}")
    cpu0, t0 = time.process_time(), time.perf_counter()
    one = exhaust(factory())
    _row("one process", one, time.perf_counter() - t0, time.process_time() - cpu0)
    for master in args.masters.split(","):
        began = time.perf_counter()
        spark = spark_session(master, progress=False, app_name="kcheck-bench-exhaust")
        startup = time.perf_counter() - began
        try:
            cpu0, t0 = _tree_cpu(), time.perf_counter()
            got = spark_exhaust(factory, spark=spark, partitions=args.partitions)
            wall, cpu = time.perf_counter() - t0, _tree_cpu() - cpu0
        finally:
            spark.stop()
        _row(master, got, wall, cpu)
        same = (got.states, got.transitions, got.depth) == (one.states, one.transitions, one.depth)
        print(f"{'':<14} Spark start-up {startup:.1f} s; {got.depth + 1} levels, "
              f"{wall / (got.depth + 1):.2f} s per level; counts {'equal' if same else 'DIFFER'}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
