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

With a `Checkpointer` (model/checkpoint.py) the driver saves the search at a level boundary once its interval has
passed, and when a cap stops it: the last whole level's visited sets, stores and new states, partition by partition
(one single-partition job each, so the driver holds one partition at a time), as `part-K/` folders of one
generation, with the counters and the number of partitions. `resume` rebuilds that level's RDD with the same
partitioner and goes on; the partitions are the checkpoint's whatever the master (a run does not depend on them or
on the executors), so a search saved on local[N] continues on spark:// and back. A signal kills Spark's JVM at once
(runtime/interrupts.py), so an interrupted search ends without saving and keeps its last checkpoint.

A complete run stores exactly the states and counts exactly the transitions `kcheck.model.search.exhaust` does on
the same model (tests/test_spark_exhaust.py). A stopped run's figures cover whole levels: "max-states" when a
level would take the store past `max_states` (that level is not counted), "max-depth" when a state at level
`max_depth` has a successor not stored, "max-seconds" when the running job is cancelled at the deadline (its
level not counted), "violation" with the violating level counted whole.
"""

from __future__ import annotations

import os
import pickle
import shutil
import threading
import time
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any

from kcheck.model.checkpoint import PARTITION_FILES, Checkpointer, encode_records, read_array, read_records, write_file
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


def _dump(pickled: bool) -> Callable[[Iterator[Any]], Iterator[tuple[bytes, ...]]]:
    """One partition of a stored level as bytes for the driver: its visited table, store and new states' records
    (fingerprint, encoding; the pickled state for a model without `decode`)."""

    def run(items: Iterator[Any]) -> Iterator[tuple[bytes, ...]]:
        parts: dict[str, tuple[bytes, ...]] = {}
        for item in items:
            if item[0] == _VISITED:
                parts[_VISITED] = (item[1].table.tobytes(), *(a.tobytes() for a in item[2]))
            elif item[0] == _FRONTIER:
                payloads = (pickle.dumps(p, protocol=5) for p in item[2]) if pickled else item[2]
                parts[_FRONTIER] = (b"".join(encode_records(zip(item[1], payloads, strict=True))),)
        yield parts[_VISITED] + parts[_FRONTIER]

    return run


def _restore(pickled: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """A saved partition (from the driver) back as the stored level's items (`_merge`'s visited set and store, and
    the level's new states)."""

    def run(items: Iterator[Any]) -> Iterator[Any]:
        for _, (table, fps, parents, actions, frontier) in items:
            store = (_array("Q", fps), _array("Q", parents), _array("I", actions))
            yield _VISITED, FingerprintSet.from_table(_array("Q", table)), store
            new, payloads = array("Q"), []
            for fp, data in frontier:
                new.append(fp)
                payloads.append(pickle.loads(data) if pickled else data)  # noqa: S301 - kcheck's own, verified file
            yield _FRONTIER, new, payloads

    return run


def _array(typecode: str, data: bytes) -> array[int]:
    a = array(typecode)
    a.frombytes(data)
    return a


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


def _stop(spark: Any, stop: Callable[[], str | None] | None) -> None:
    """The session we started stopped, unless a signal came: its JVM is gone already (runtime/interrupts.py kills
    it), the process is ending, and Py4J would log its failures to reach it."""
    if stop is None or stop() is None:
        spark.stop()


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
                  spark: Any = None, checkpoint: Checkpointer | None = None, resume: bool = False,
                  stop: Callable[[], str | None] | None = None) -> SearchResult:
    """Breadth-first search of every state reachable from the model's initial states, on Spark (see the module
    docstring): the same `SearchResult` and stop words as `kcheck.model.search.exhaust`.

    `model_factory` builds the model (on the driver, and once per partition and stage in the executors, to which
    it is pickled with cloudpickle: a `functools.partial(ReplicationModel, protocol, cfg)` or a closure works).
    `master`: a Spark master URL (`spark://host:7077`, `local[4]`, ...); None uses the session already active in
    this process, else starts `local[2]`. A session started here is stopped at the end. `partitions`: how many
    partitions the fingerprints are spread over (default twice the default parallelism). `py_files`: the user's
    plug-in modules or packages, shipped to the executors of a non-local master (`job.ship`). `spark`: a
    SparkSession to use instead (not stopped). `progress` gets the running figures after every level.
    `checkpoint`: the search saved to its folder at level boundaries (see the module docstring); `resume` continues
    the folder's checkpoint (verified by the caller, with the checkpoint's partitions). `stop`: polled at each level
    boundary and when a job fails; a word ends the search with that word as its stop reason (not saved).
    Raises `SparkExhaustError` (one line) when Spark cannot start or a job fails.
    """
    if partitions is not None and partitions < 1:
        raise ValueError(f"partitions must be at least 1, not {partitions}")
    if resume and checkpoint is None:
        raise ValueError("resume needs the checkpoint to resume")
    model = model_factory()
    started = False
    if spark is None:
        spark, started = _session(master, py_files)
    start = time.perf_counter()  # the search's time, after Spark's start-up (`max_seconds` counts from here)
    try:
        search = _SparkSearch(spark.sparkContext, model, model_factory, start, max_states, max_depth, max_seconds,
                              symmetry, partitions, progress)
        search.checkpoint, search.stop = checkpoint, stop
        try:
            return search.levels(resume)
        except Exception:
            word = stop() if stop is not None else None
            if word is None:
                raise
            return search.finish(word)  # the JVM killed by the signal failed whatever was talking to it
        finally:
            search.close()
    finally:
        if started:
            _stop(spark, stop)


class _SparkSearch:
    """One `spark_exhaust` run on a SparkContext: its job group (cancelled at `max_seconds`), the partitioner's
    width, the level RDDs and the result."""

    def __init__(self, sc: Any, model: Model[Any, Any], factory: Callable[[], Model[Any, Any]], start: float,
                 max_states: int | None, max_depth: int | None, max_seconds: float | None, symmetry: bool,
                 partitions: int | None, progress: Callable[[SearchResult], None] | None) -> None:
        self.sc, self.model, self.factory, self.start = sc, model, factory, start
        self.max_states, self.max_depth, self.max_seconds = max_states, max_depth, max_seconds
        self.symmetry, self.progress = symmetry, progress
        self.checkpoint: Checkpointer | None = None
        self.stop: Callable[[], str | None] | None = None
        self.counted: dict[str, Any] = {}  # the counters of the last whole level (what a checkpoint saves)
        self.last_saved: dict[str, Any] = {}
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

    def levels(self, resume: bool = False) -> SearchResult:
        """The search, one Spark job per level, to its result (from the checkpoint's level with `resume`)."""
        if resume:
            merged, level, nbytes = self.restored()
        else:
            merged = self.level_rdd(_first_level(self.sc, self.initial(), self.factory, self.P))
            level, figures = 0, self.run(partial(_figures_of, merged))
            done = self.level_end(figures, level, merged)
            if done is not None:
                return done
            nbytes = sum(f[4] for f in figures)
        while True:  # `merged`: level `level`, stored and counted; the search goes on past it
            self.counted = self.counters(level, nbytes)
            if self.progress is not None:
                self.result.seconds = time.perf_counter() - self.start
                self.progress(self.result)
            word = self.stop() if self.stop is not None else None
            if word is not None:  # Spark's JVM is gone with the signal: the last checkpoint stays the one to resume
                return self.finish(word, nbytes)
            if self.late():
                return self.saved(merged, self.finish("max-seconds", nbytes))
            if self.checkpoint is not None and self.checkpoint.due():
                self.save(merged)
            probe = self.max_depth is not None and level >= self.max_depth
            nxt = _next_level(merged, self.factory, self.symmetry, self.P, probe)
            if probe:
                return self.past_bound(nxt, nbytes)
            nxt = self.level_rdd(nxt)
            # The next level is computed and its blocks stored before this level's are dropped (a cap that stops
            # the search there saves this level, the last whole one).
            figures = self.run(partial(_figures_of, nxt))
            done = self.level_end(figures, level + 1, nxt)
            if done is not None:
                return self.saved(merged, done) if done.stopped_because in ("max-states", "max-seconds") else done
            nbytes = sum(f[4] for f in figures)
            merged.unpersist()
            merged = nxt
            level += 1

    def counters(self, level: int, nbytes: int) -> dict[str, Any]:
        r = self.result
        return {"engine": "spark", "partitions": self.P, "level": level, "states": r.states,
                "transitions": r.transitions, "depth": r.depth, "frontier_peak": r.frontier_peak, "nbytes": nbytes,
                "pickled": getattr(self.model, "decode", None) is None}

    def saved(self, merged: Any, result: SearchResult) -> SearchResult:
        """`result`, the last whole level (`merged`) saved first when the search has a checkpoint (unless it was
        just saved)."""
        if self.checkpoint is not None and self.counted and self.counted != self.last_saved:
            self.save(merged)
        return result

    def save(self, merged: Any) -> None:
        """A checkpoint of the stored level `merged`: each partition fetched by a job of its own and written."""
        counters, pickled = dict(self.counted), bool(self.counted["pickled"])
        self.last_saved = counters

        def write(tmp: str) -> dict[str, Any]:
            files: dict[str, Any] = {}
            for k in range(self.P):
                part = self.run(partial(self.sc.runJob, merged, _dump(pickled), [k]))
                if part is None:
                    raise _Abandoned
                os.mkdir(os.path.join(tmp, f"part-{k}"))
                for name, data in zip(PARTITION_FILES, part[0], strict=True):
                    files[f"part-{k}/{name}"] = write_file(os.path.join(tmp, f"part-{k}", name), [data])
            return files

        assert self.checkpoint is not None
        try:
            self.checkpoint.commit(write, counters)
        except _Abandoned:  # a signal or the deadline during the write: the previous checkpoint stays whole
            pass
        except OSError as e:
            raise SparkExhaustError(f"cannot write the checkpoint in {self.checkpoint.folder}: {e}") from None

    def restored(self) -> tuple[Any, int, int]:
        """(the checkpoint's level as `merged`, that level, its bytes); the counters restored."""
        assert self.checkpoint is not None
        manifest, gen = self.checkpoint.generation()
        counters = manifest["counters"]
        self.P, pickled = int(counters["partitions"]), bool(counters["pickled"])
        r = self.result
        r.states, r.transitions, r.depth = counters["states"], counters["transitions"], counters["depth"]
        r.frontier_peak = counters["frontier_peak"]
        saved = []
        for k in range(self.P):
            folder = os.path.join(gen, f"part-{k}")
            arrays = [read_array("B", os.path.join(folder, name)).tobytes() for name in PARTITION_FILES[:4]]
            frontier = list(read_records(os.path.join(folder, PARTITION_FILES[4])))
            saved.append((k << 40, (*arrays, frontier)))  # the key `_partition` sends to partition k
        rdd = self.sc.parallelize(saved, self.P).partitionBy(self.P, _partition)
        merged = self.level_rdd(rdd.mapPartitions(_restore(pickled), preservesPartitioning=True))
        return merged, int(counters["level"]), int(counters["nbytes"])

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
            return self.finish(self.cut())
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
            return self.finish(self.cut(), nbytes)
        return self.finish("max-depth" if sum(f[1] for f in figures) else None, nbytes)

    def late(self) -> bool:
        return self.max_seconds is not None and time.perf_counter() - self.start >= self.max_seconds

    def cut(self) -> str:
        """Why a job was cut short: the caller's stop word (a signal), else the deadline."""
        word = self.stop() if self.stop is not None else None
        return word or "max-seconds"

    def run(self, how: Callable[[], Any]) -> Any:
        """A Spark job's answer; None when it was cancelled at the deadline or stopped by the caller (a signal kills
        Spark's JVM). Any other failure is one line."""
        try:
            return how()
        except Exception as exc:
            if self.late() or (self.stop is not None and self.stop() is not None):
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
        if self.stop is None or self.stop() is None:  # else the JVM is gone with the signal
            self.sc.setLocalProperty("spark.jobGroup.id", None)


class _Abandoned(Exception):
    """A checkpoint's write given up (a job of it cut by a signal or the deadline)."""


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
