"""Spark-distributed exhaustive search (`kcheck exhaust --master URL`): the BFS of `kcheck.model.search.exhaust`
with the visited set partitioned across executors.

Level-synchronous BFS, one Spark job per level:

- Every fingerprint belongs to one of P partitions (`_partition`: its top 24 bits, mod P; the low bits stay free
  for each partition's open-addressing table). One RDD per level (`merged`) is partitioned that way and holds,
  per partition, the visited fingerprints (a `FingerprintSet`) with every stored state's (fingerprint, parent
  fingerprint, action index) in flat arrays, and that level's new states (fingerprint and encoding, or the state
  itself for a model without `decode`).
- Expansion runs in the executors (`mapPartitions`; the model is built once per partition by `model_factory`):
  each new state's successors are keyed by canonical fingerprint (`keyer`, symmetry as in the one-process
  engine), deduplicated within the partition, and shuffled by fingerprint with the same partitioner as `merged`.
- Deduplication against the visited set is a narrow dependency: Spark unions two RDDs with equal partitioners
  partition by partition (`PartitionerAwareUnionRDD`), so partition i of the shuffled successors meets partition
  i of the visited set in one task and the visited set itself is never shuffled. That task keeps one candidate
  per fingerprint (the smallest (parent fingerprint, action index), so the run does not depend on P or on task
  order), drops the visited ones, checks every invariant on the new ones, and writes the next `merged` partition.
- Lineage is cut every level with `localCheckpoint` (blocks in the executors' block managers, memory then disk),
  the previous level's blocks are dropped once the next is stored, so the job's lineage and the driver's memory
  stay flat however deep the search goes. Chosen over per-partition files in executor-local directories because
  Spark tracks the blocks: if an executor dies, the blocks it held are gone and the next job fails with Spark's
  "checkpoint block not found" error, reported as a failed search (`SparkExhaustError`), never as a wrong count
  (files outside Spark would be read by whichever executor gets the partition next, or silently miss). When the
  SparkContext has a checkpoint directory (`SparkContext.setCheckpointDir`, shared by every node), reliable
  checkpoints are used instead and a lost executor's partitions are read back from there.
- The first level with a violation picks its smallest violating fingerprint; the driver walks parents back (one
  single-partition job per level, `SparkContext.runJob` on the fingerprint's partition) and re-executes the
  action indexes with `replay_path`, so the counterexample is a concrete, shortest run of the model.

A complete run stores exactly the states and counts exactly the transitions `kcheck.model.search.exhaust` does on
the same model (tests/test_spark_exhaust.py). A stopped run's figures cover whole levels: "max-states" when a
level would take the store past `max_states` (that level is not counted), "max-depth" when a state at level
`max_depth` has a successor not stored, "max-seconds" when the running job is cancelled at the deadline (its
level not counted), "violation" with the violating level counted whole.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any

from kcheck.model.interface import Model
from kcheck.model.visited import (
    Counterexample,
    FingerprintSet,
    SearchResult,
    keyer,
    replay_path,
    successor_fn,
    violated,
)

_NO_PARENT = 0  # fingerprints are never 0, so 0 marks an initial state (its action index is the initial index)
_VISITED, _FRONTIER, _STATS = "V", "F", "S"


class SparkExhaustError(RuntimeError):
    """The distributed search could not run (no pyspark or java, a bad master, a failed job): one line, for the
    CLI to print as the error (exit BAD_INPUT for a bad master URL, FAILED otherwise is the caller's choice)."""


def _partition(fp: int) -> int:
    """The partitioner's function (Spark takes it mod P): the top bits, independent of the table's low bits."""
    return fp >> 40


def _model_tools(model: Model[Any, Any], symmetry: bool) -> tuple[Callable[[Any], tuple[int, bytes | None]],
                                                                   Callable[[Any], Any] | None]:
    return keyer(model, list(model.symmetries()) if symmetry else [], lazy=True), getattr(model, "decode", None)


def _successors(model: Model[Any, Any]) -> Callable[[Any], Iterable[tuple[int, Any]]]:
    """state -> (action index, next state) for the actions that apply (the model's `successors` when it has one)."""
    succ = successor_fn(model)
    return lambda s: ((i, t) for i, _, t in succ(s))


def _expand(factory: Callable[[], Model[Any, Any]], symmetry: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """Per partition of `merged`: the successors of its new states, one per canonical fingerprint, as
    (fingerprint, (parent fingerprint, action index, payload)), and (0, transitions) for the count."""

    def run(items: Iterator[Any]) -> Iterator[Any]:
        model = factory()
        key, decode = _model_tools(model, symmetry)
        encode = model.encode
        succ = _successors(model)
        best: dict[int, tuple[int, int, Any]] = {}
        transitions = 0
        for item in items:
            if item[0] != _FRONTIER:
                continue
            for fp, payload in zip(item[1], item[2], strict=True):
                s = decode(payload) if decode is not None else payload
                for ai, t in succ(s):
                    transitions += 1
                    nfp, data = key(t)
                    had = best.get(nfp)
                    if had is None or (fp, ai) < (had[0], had[1]):
                        if decode is not None and data is None:
                            data = encode(t)  # only for the candidates kept (`key` leaves it to us)
                        best[nfp] = (fp, ai, data if decode is not None else t)
        yield 0, transitions
        yield from best.items()

    return run


def _merge(factory: Callable[[], Model[Any, Any]], probe: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """Per partition: the visited set (from the previous `merged`, absent at level 0) meets the shuffled
    candidates; yields the next visited set and store, the new states, and the partition's figures. With `probe`
    (the depth bound is reached) it only counts the new states and stores nothing."""

    def run(items: Iterator[Any]) -> Iterator[Any]:
        seen: FingerprintSet | None = None
        store: tuple[array[int], array[int], array[int]] | None = None
        best: dict[int, tuple[int, int, Any]] = {}
        transitions = 0
        for item in items:
            head = item[0]
            if head == _VISITED:
                seen, store = item[1], item[2]
            elif isinstance(head, str):  # the previous level's frontier and figures
                continue
            elif head == 0:
                transitions += item[1]
            else:
                parent, ai, payload = item[1]
                had = best.get(head)
                if had is None or (parent, ai) < (had[0], had[1]):
                    best[head] = item[1]
        if seen is None:
            seen = FingerprintSet()
        if store is None:
            store = (array("Q"), array("Q"), array("I"))
        new = sorted(fp for fp in best if fp not in seen)
        violation: tuple[int, str, str] | None = None
        if probe:
            yield _STATS, len(new), transitions, None, 0
            return
        model = factory()
        invariants = list(model.invariants())
        decode = getattr(model, "decode", None)
        fps, parents, actions = store
        payloads = []
        for fp in new:
            parent, ai, payload = best[fp]
            seen.add(fp)
            fps.append(fp)
            parents.append(parent)
            actions.append(ai)
            payloads.append(payload)
            if violation is None:  # `new` is sorted: the first violation is the partition's smallest
                found = violated(invariants, decode(payload) if decode is not None else payload)
                if found is not None:
                    violation = (fp, *found)
        nbytes = seen.nbytes + sum(len(a) * a.itemsize for a in store)
        yield _VISITED, seen, store
        yield _FRONTIER, array("Q", new), payloads
        yield _STATS, len(new), transitions, violation, nbytes

    return run


def _lookup(fp: int) -> Callable[[Iterator[Any]], Iterator[tuple[int, int]]]:
    def run(items: Iterator[Any]) -> Iterator[tuple[int, int]]:
        for item in items:
            if item[0] == _VISITED:
                fps, parents, actions = item[2]
                i = fps.index(fp)
                yield parents[i], actions[i]

    return run


def _figures(item: Any) -> bool:
    return bool(item[0] == _STATS)


def _figures_of(rdd: Any) -> list[Any]:
    """Run the level's job: every partition's figures (computing, storing and checkpointing the level)."""
    return list(rdd.filter(_figures).collect())


def _one_line(exc: BaseException) -> str:
    """The useful line of a Spark/Py4J failure: the executor's Python exception or the JVM's message."""
    text = str(exc)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):  # a Python exception raised in an executor ends the worker's traceback
        if ln.split(":", 1)[0].endswith(("Error", "Exception")) and not ln.startswith(("at ", "org.", "java.")):
            return ln[:300]
    for ln in lines:
        if "Exception:" in ln:
            return ln.split("Exception:", 1)[1].strip()[:300] or ln[:300]
    return (lines[0] if lines else type(exc).__name__)[:300]


def _session(master: str | None, py_files: Sequence[str]) -> tuple[Any, bool]:
    """(SparkSession, whether we started it). An active session is reused (and left running) when no master is
    asked for or when it runs on the master asked for."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkExhaustError("pyspark is not installed: pip install 'pyspark>=3.5' for --master") from None
    active = SparkSession.getActiveSession()
    if active is not None and (master is None or active.sparkContext.master == master):
        from kcheck.spark_check.job import ship

        ship(active.sparkContext, py_files)
        return active, False
    if active is not None:
        raise SparkExhaustError(f"a Spark session on {active.sparkContext.master} runs in this process already; "
                                f"cannot start one on {master}")
    if shutil.which("java") is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        raise SparkExhaustError("`java` is not on PATH: a Spark search needs a JDK 17+")
    from kcheck.spark_check.job import spark_session

    try:
        spark = spark_session(master or "local[2]", progress=False, app_name="kcheck-exhaust", py_files=py_files)
    except Exception as exc:  # noqa: BLE001 - a bad master URL or a cluster that does not answer: one line
        raise SparkExhaustError(f"cannot start Spark on {master or 'local[2]'}: {_one_line(exc)}") from None
    return spark, True


def spark_exhaust(model_factory: Callable[[], Model[Any, Any]], master: str | None = None, *,
                  max_states: int | None = None, max_depth: int | None = None, max_seconds: float | None = None,
                  symmetry: bool = True, partitions: int | None = None,
                  progress: Callable[[SearchResult], None] | None = None, py_files: Sequence[str] = (),
                  spark: Any = None) -> SearchResult:
    """Breadth-first search of every state reachable from the model's initial states, on Spark (see the module
    docstring): the same `SearchResult` and stop words as `kcheck.model.search.exhaust`.

    `model_factory` builds the model (on the driver, and once per partition and stage in the executors, to which
    it is pickled with cloudpickle: a `functools.partial(ReplicationModel, protocol, cfg)` or a closure works).
    `master`: a Spark master URL (`spark://host:7077`, `local[4]`, ...); None uses the session already active in
    this process, else starts `local[2]`. A session started here is stopped at the end. `partitions`: how many
    partitions the fingerprints are spread over (default twice the default parallelism). `py_files`: the user's
    plug-in modules or packages, shipped to the executors of a non-local master (`job.ship`). `spark`: a
    SparkSession to use instead (not stopped). `progress` gets the running figures after every level.
    Raises `SparkExhaustError` (one line) when Spark cannot start or a job fails.
    """
    if partitions is not None and partitions < 1:
        raise ValueError(f"partitions must be at least 1, not {partitions}")
    model = model_factory()
    started = False
    if spark is None:
        spark, started = _session(master, py_files)
    start = time.perf_counter()  # the search's time, after Spark's start-up (`max_seconds` counts from here)
    try:
        return _search(spark.sparkContext, model, model_factory, start, max_states, max_depth, max_seconds,
                       symmetry, partitions, progress)
    finally:
        if started:
            spark.stop()


def _search(sc: Any, model: Model[Any, Any], factory: Callable[[], Model[Any, Any]], start: float,
            max_states: int | None, max_depth: int | None, max_seconds: float | None, symmetry: bool,
            partitions: int | None, progress: Callable[[SearchResult], None] | None) -> SearchResult:
    search = _SparkSearch(sc, model, factory, start, max_states, max_depth, max_seconds, symmetry, partitions,
                          progress)
    try:
        return search.levels()
    finally:
        search.close()


class _SparkSearch:
    """One `spark_exhaust` run on a SparkContext: its job group (cancelled at `max_seconds`), the partitioner's
    width, the level RDDs and the result."""

    def __init__(self, sc: Any, model: Model[Any, Any], factory: Callable[[], Model[Any, Any]], start: float,
                 max_states: int | None, max_depth: int | None, max_seconds: float | None, symmetry: bool,
                 partitions: int | None, progress: Callable[[SearchResult], None] | None) -> None:
        self.sc, self.model, self.factory, self.start = sc, model, factory, start
        self.max_states, self.max_depth, self.max_seconds = max_states, max_depth, max_seconds
        self.symmetry, self.progress = symmetry, progress
        self.P = partitions or max(2, 2 * sc.defaultParallelism)
        self.reliable = sc.getCheckpointDir() is not None
        self.result = SearchResult(False, 0, 0, 0, 0.0, None, None, None)
        self.result.workers = sc.defaultParallelism  # the executors' cores (C1's field: processes searching)
        group = f"kcheck-exhaust-{uuid.uuid4().hex[:12]}"
        sc.setJobGroup(group, "kcheck exhaust", interruptOnCancel=True)
        self.timer = None
        if max_seconds is not None:
            self.timer = threading.Timer(max(0.0, max_seconds - (time.perf_counter() - start)), sc.cancelJobGroup,
                                         [group])
            self.timer.daemon = True
            self.timer.start()

    def levels(self) -> SearchResult:
        """The search, one Spark job per level, to its result."""
        merged = self.level_rdd(_first_level(self.sc, self.initial(), self.factory, self.P))
        figures = self.run(partial(_figures_of, merged))
        level = 0
        while True:
            done = self.level_end(figures, level, merged)
            if done is not None:
                return done
            nbytes = sum(f[4] for f in figures)
            if self.progress is not None:
                self.result.seconds = time.perf_counter() - self.start
                self.progress(self.result)
            if self.late():
                return self.finish("max-seconds", nbytes)
            probe = self.max_depth is not None and level >= self.max_depth
            nxt = _next_level(merged, self.factory, self.symmetry, self.P, probe)
            if probe:
                return self.past_bound(nxt, nbytes)
            nxt = self.level_rdd(nxt)
            # The next level is computed and its blocks stored before this level's are dropped.
            figures = self.run(partial(_figures_of, nxt))
            merged.unpersist()
            merged = nxt
            level += 1

    def initial(self) -> list[tuple[int, tuple[int, int, Any]]]:
        """The distinct initial states by fingerprint: (fingerprint, (no parent, initial index, packed state))."""
        key, decode = _model_tools(self.model, self.symmetry)
        initial: dict[int, tuple[int, int, Any]] = {}
        for i, s in enumerate(self.model.initial_states()):
            fp, data = key(s)
            if data is None:
                data = self.model.encode(s)
            initial.setdefault(fp, (_NO_PARENT, i, data if decode is not None else s))
        return sorted(initial.items())

    def level_end(self, figures: list[Any] | None, level: int, merged: Any) -> SearchResult | None:
        """The level just stored counted; the result when it ends the search (the clock, a violation, the state cap,
        nothing new), else None."""
        if figures is None:
            return self.finish("max-seconds")
        result = self.result
        new = sum(f[1] for f in figures)
        result.transitions += sum(f[2] for f in figures)
        nbytes = sum(f[4] for f in figures)
        found = min((f[3] for f in figures if f[3] is not None), default=None)
        if found is not None:
            result.states += new
            result.depth = level
            result.counterexample = _trace(self.sc, self.model, merged, self.P, found)
            return self.finish("violation", nbytes)
        if self.max_states is not None and result.states + new > self.max_states:
            return self.finish("max-states", nbytes)
        if new == 0:
            return self.finish(None, nbytes)
        result.states += new
        result.depth = level
        result.frontier_peak = max(result.frontier_peak, new)
        return None

    def past_bound(self, nxt: Any, nbytes: int) -> SearchResult:
        """At `max_depth`: anything new past the bound? Counted, not stored: the answer decides `complete`."""
        figures = self.run(partial(_figures_of, nxt))
        if figures is None:
            return self.finish("max-seconds", nbytes)
        return self.finish("max-depth" if sum(f[1] for f in figures) else None, nbytes)

    def late(self) -> bool:
        return self.max_seconds is not None and time.perf_counter() - self.start >= self.max_seconds

    def run(self, how: Callable[[], Any]) -> Any:
        """A Spark job's answer; None when it was cancelled at the deadline. Any other failure is one line."""
        try:
            return how()
        except Exception as exc:
            if self.late():
                return None
            raise SparkExhaustError(f"the Spark job failed: {_one_line(exc)}") from None

    def level_rdd(self, rdd: Any) -> Any:
        """A level's RDD kept (memory, then disk) and its lineage cut (a reliable checkpoint when the context has a
        checkpoint directory)."""
        from pyspark import StorageLevel

        rdd.persist(StorageLevel.MEMORY_AND_DISK)
        if self.reliable:
            rdd.checkpoint()
        else:
            rdd.localCheckpoint()
        return rdd

    def finish(self, stopped: str | None, nbytes: int = 0) -> SearchResult:
        result = self.result
        result.complete = stopped is None
        result.stopped_because = stopped
        result.seconds = time.perf_counter() - self.start
        n = result.states
        result.bytes_per_state = nbytes / n if n else None
        result.collision_probability = min(1.0, n * n / 2.0 ** 65)
        return result

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.sc.setLocalProperty("spark.jobGroup.id", None)


def _first_level(sc: Any, initial: list[tuple[int, tuple[int, int, Any]]], factory: Callable[[], Model[Any, Any]],
                 P: int) -> Any:
    """Level 0's `merged`: the initial states, partitioned by fingerprint, stored and checked (no visited set)."""
    return sc.parallelize(initial, 1).partitionBy(P, _partition).mapPartitions(_merge(factory, False),
                                                                               preservesPartitioning=True)


def _next_level(merged: Any, factory: Callable[[], Model[Any, Any]], symmetry: bool, P: int, probe: bool) -> Any:
    """The next level's `merged`: successors shuffled by fingerprint, unioned partition by partition with the
    visited set (equal partitioners: a narrow dependency, the visited set stays where it is), then merged."""
    candidates = merged.mapPartitions(_expand(factory, symmetry)).partitionBy(P, _partition)
    nxt = merged.union(candidates).mapPartitions(_merge(factory, probe), preservesPartitioning=True)
    if nxt.getNumPartitions() != P or nxt.partitioner != merged.partitioner:
        raise SparkExhaustError("the visited set and the successors are not co-partitioned")
    return nxt


def _trace(sc: Any, model: Model[Any, Any], merged: Any, P: int, found: tuple[int, str, str]) -> Counterexample:
    """Walk the violating state's parents back (one single-partition job per level), then re-execute."""
    fp, inv, message = found
    actions: list[int] = []
    while True:
        (parent, ai), = sc.runJob(merged, _lookup(fp), [_partition(fp) % P])
        if parent == _NO_PARENT:
            break
        actions.append(ai)
        fp = parent
    actions.reverse()
    steps = replay_path(model, ai, actions)
    again = violated(list(model.invariants()), steps[-1][1])
    if again is not None:
        inv, message = again
    return Counterexample(inv, message, steps)
