"""bench/bench_spark_cluster.py's standalone cluster (a Master and a Worker from pyspark's own distribution on
127.0.0.1): a search runs on it with the one-process engine's counts, and stopping it leaves nothing behind (no
process it started, the executor and its Python workers included; no folder; no port listening)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
from functools import partial
from pathlib import Path

import pytest

from kcheck.invariants.storage_model import StorageModel
from kcheck.model.search import exhaust
from kcheck.model.storage import Config as StorageConfig

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # two daemon JVMs, an executor and a driver: a minute here

pytest.importorskip("pyspark")

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_spark_cluster.py"
TINY = StorageConfig(keys=2, records=2, max_segments=1, max_clock=0, consumer=False, retention=False, crashes=0)


def _bench():
    spec = importlib.util.spec_from_file_location("bench_spark_cluster", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _descendants(roots: list[int]) -> set[int]:
    """The live processes under `roots` (themselves included), from /proc."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(name))
    seen, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if _alive(pid) and pid not in seen:
            seen.add(pid)
            todo += children.get(pid, [])
    return seen


def _started(pid: int) -> int | None:
    """The process's start time (clock ticks after boot) if it runs, else None (a zombie waiting for a parent that
    does not reap it does not run); with the PID, it names the process even if the PID is reused later."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else int(fields[19])


def _alive(pid: int) -> bool:
    return _started(pid) is not None


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_the_cluster_searches_and_stopping_it_leaves_nothing() -> None:
    if shutil.which("java") is None:
        pytest.skip("java is not on PATH")
    from kcheck.spark_check.exhaust import spark_exhaust

    bench = _bench()
    factory = partial(StorageModel, TINY)
    want = exhaust(factory())
    with bench.Standalone(cores=1, memory="1g") as cluster:
        base, port = cluster.base, int(cluster.url.rsplit(":", 1)[1])
        assert base.is_dir() and _listening(port)
        spark = cluster.session("kcheck-test-standalone")
        try:
            got = spark_exhaust(factory, spark=spark, partitions=2)
            # the executor JVM and its Python workers hang under the Worker while the application runs
            started = {(pid, _started(pid)) for pid in _descendants(cluster.pids)}
        finally:
            spark.stop()
        assert (got.states, got.transitions, got.depth, got.complete) == (want.states, want.transitions,
                                                                           want.depth, True)
        assert len(started) > len(cluster.pids), started  # more than the two daemons: the executor ran there
    assert not base.exists()
    assert not [pid for pid, began in started if _started(pid) == began]
    assert not _listening(port)
    assert "JAVA_TOOL_OPTIONS" not in os.environ  # the driver's tmpdir option went into its JVM's options only
