"""The sweep job: a Spark DataFrame of id ranges, each evaluated and stored by one task.

Each task receives its ranges as Arrow record batches (`mapInArrow`), evaluates
every configuration of a range through the space (`Space.evaluate`, vectorised
where the space can), writes the range to the result store and answers one small
row. The driver only plans ranges and reads the store back: nothing the job
computes lives only in memory, so a sweep killed at any point resumes from the
stored ranges.

The master is `--master` when given; under `spark-submit` the submit flags rule;
otherwise `$SPARK_MASTER` or `local[*]`. On any master but a local one, the user's plug-in modules
(`py_files`: a module's file, or a package's folder, zipped here) are shipped to the executors with
`SparkContext.addPyFile`, as `spark-submit --py-files` would: the executors unpickle the space, which
refers to the user's placer or assignor by module name.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import warnings
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kcheck.runtime import interrupts
from kcheck.runtime.interrupts import SPARK_QUIET
from kcheck.spark_check.batch import Space
from kcheck.spark_check.store import ResultStore, Stored, cell_size, gaps, grid

TASK_SCHEMA = "start long, stop long, configurations long, violations long, seconds double"
RANGE_TARGET = 1_000_000  # configurations per task at most, unless --tasks asks for fewer, larger ones

# Spark's own console log off but for fatal errors: a failure reaches kcheck as the job's exception, which it
# reports in its one line (Spark's ERROR lines would come before it, and a cancelled job prints them by the dozen).
_LOG4J = """\
rootLogger.level = fatal
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.spark.name = org.apache.spark
logger.spark.level = fatal
"""


_log4j_path: str | None = None


def _quiet_log4j() -> str:
    """A log4j2 configuration that keeps Spark's JVM to errors (no INFO/WARN banner on every run).

    Written into a fresh private directory (0700, file 0600) of this process, removed once the JVM has started
    (or at exit): a fixed name in a shared $TMPDIR could be a symlink or a file planted by another user.
    """
    global _log4j_path
    if _log4j_path is None or not os.path.exists(_log4j_path):
        directory = tempfile.mkdtemp(prefix="kcheck-log4j2-")
        atexit.register(shutil.rmtree, directory, True)
        path = os.path.join(directory, "log4j2.properties")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(_LOG4J)
        _log4j_path = path
    return _log4j_path


_jvm_tmp: tuple[str, int] | None = None  # (the folder, the process that made it)


def _jvm_tmpdir() -> str:
    """The driver JVM's java.io.tmpdir (and so Spark's local dir): a private directory of this process, removed at
    exit. kcheck's interrupt handler ends the JVM with SIGKILL, which leaves what the JVM put in its temporary folder
    (lz4-java's extracted native library and its lock file, Spark's block manager folders) behind; in a folder kcheck
    made, they go with it."""
    global _jvm_tmp
    if _jvm_tmp is None or _jvm_tmp[1] != os.getpid() or not os.path.isdir(_jvm_tmp[0]):  # a fork makes its own
        _jvm_tmp = (tempfile.mkdtemp(prefix="kcheck-spark-"), os.getpid())
        atexit.register(shutil.rmtree, _jvm_tmp[0], True)
        interrupts.scratch(_jvm_tmp[0])  # an interrupt ends the process without exit handlers
    return _jvm_tmp[0]


def _drop_log4j() -> None:
    """Remove the configuration once the JVM has read it (at start): a SIGKILLed sweep then leaves nothing."""
    global _log4j_path
    if _log4j_path is not None:
        shutil.rmtree(os.path.dirname(_log4j_path), ignore_errors=True)
        _log4j_path = None


def _java_options_off_stderr(extra_java_options: str) -> str:
    """The driver's JVM options with $JAVA_TOOL_OPTIONS/$_JAVA_OPTIONS moved into them: the JVM announces
    those variables on stderr ("Picked up ..."), which would break a failing sweep's one line of error."""
    moved = [os.environ.pop(name) for name in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS") if os.environ.get(name)]
    return " ".join([*moved, extra_java_options])


# The one line the JVM prints at start when Spark's launcher adds the incubating vector module (Spark 4 on
# Java 17+); no JVM flag silences it, and it would make every sweep's one-line error two lines.
_JVM_NOISE = b"WARNING: Using incubator modules: jdk.incubator.vector"


@contextlib.contextmanager
def _jvm_stderr_filtered(active: bool) -> Iterator[None]:
    """Start the gateway JVM (it inherits fd 2) with its stderr on a pipe that a daemon thread forwards to ours,
    minus `_JVM_NOISE`; everything else the JVM writes, for its whole life, reaches stderr unchanged."""
    if not active:
        yield
        return
    read_end, write_end = os.pipe()
    saved = os.dup(2)
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        os.dup2(saved, 2)  # our own stderr is ours again; only the JVM keeps the pipe
        threading.Thread(target=_forward, args=(read_end, saved), name="kcheck-jvm-stderr", daemon=True).start()


def _forward(read_end: int, out: int) -> None:
    pending: bytes | None = b""  # the JVM's output until its first line is known not to be the noise
    while chunk := os.read(read_end, 65536):
        if SPARK_QUIET.is_set():  # an interrupt: the JVM's last words are not forwarded
            continue
        if pending is not None:
            pending += chunk
            if b"\n" not in pending and len(pending) < len(_JVM_NOISE) + 2:
                continue
            first, sep, rest = pending.partition(b"\n")
            chunk = rest if first.rstrip(b"\r") == _JVM_NOISE else pending
            pending = None
        os.write(out, chunk)
    if pending:
        os.write(out, pending)


def spark_session(master: str | None = None, progress: bool | None = None, app_name: str = "kcheck-sweep",
                  extra: dict[str, str] | None = None, py_files: Sequence[str] = ()) -> Any:
    """A SparkSession for sweeps. Local workers run this Python, whose site-packages hold kcheck.

    `progress` turns Spark's console progress bar on (default: when stderr is a terminal).
    Under spark-submit (the gateway exists already) master and packaging come from the submit flags.
    `py_files` (modules' files or packages' folders) are shipped to the executors of a non-local master.
    """
    from pyspark.sql import SparkSession

    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if not submitted:
        # Local executors are Python processes started by the JVM: this interpreter has kcheck installed.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if progress is None:
        progress = sys.stderr.isatty()
    builder = SparkSession.builder.appName(app_name)
    if master is None and not submitted:
        master = os.environ.get("SPARK_MASTER", "local[*]")
    if master is not None:
        builder = builder.master(master)
    java_options = f"-Dlog4j2.configurationFile=file:{_quiet_log4j()}"
    if not submitted:  # under spark-submit the JVM runs already
        if not any("java.io.tmpdir" in os.environ.get(v, "") for v in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS")):
            java_options += f" -Djava.io.tmpdir={_jvm_tmpdir()}"  # the user's own, when given, is kept
        java_options = _java_options_off_stderr(java_options)
    conf = {
        # local mode: the console progress bar is the UI; skip the web UI's start-up and port
        **({"spark.ui.enabled": "false"} if master is not None and master.startswith("local") else {}),
        "spark.ui.showConsoleProgress": str(bool(progress)).lower(),
        "spark.driver.extraJavaOptions": java_options,
        "spark.python.worker.reuse": "true",  # a worker keeps its state (memos, a Kafka bridge's JVM) across tasks
        # local mode listens on the loopback interface only
        **({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
           if master is not None and master.startswith("local") else {}),
        **(extra or {}),
    }
    for key, value in conf.items():
        builder = builder.config(key, value)
    # SparkContext replaces the main thread's SIGINT handler by its own (cancel every job, raise
    # KeyboardInterrupt); the caller's handler stays: it ends the JVM itself, at once and quietly.
    sigint = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    with warnings.catch_warnings(), _jvm_stderr_filtered(not submitted):
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
        spark = builder.getOrCreate()
    if sigint is not None:
        signal.signal(signal.SIGINT, sigint)
    _drop_log4j()
    spark.sparkContext.setLogLevel("ERROR")
    ship(spark.sparkContext, py_files)
    return spark


def ship(sc: Any, paths: Sequence[str]) -> None:
    """addPyFile each module file, or a zip of each package folder (made in a private temporary directory,
    removed at exit), unless the master is local: local executors run this interpreter with its sys.path."""
    if not paths or str(sc.master).startswith("local"):
        return
    try:  # what spark-submit --py-files (or an earlier sweep of this process) shipped already: Spark refuses a name
        shipped = {os.path.basename(uri) for uri in sc.listFiles}  # twice, and the executors have it
    except Exception:  # noqa: BLE001 - PySpark before 3.4 has no listFiles
        shipped = set()
    directory = None
    for path in paths:
        if os.path.isdir(path):
            if directory is None:
                directory = tempfile.mkdtemp(prefix="kcheck-pyfiles-")
                atexit.register(shutil.rmtree, directory, True)
            path = _zip_package(path, directory)
        if os.path.basename(path) not in shipped:
            sc.addPyFile(path)


def _zip_package(folder: str, directory: str) -> str:
    """`folder` (a package) as `<name>.zip` holding `<name>/...`: the layout zipimport needs for `import name`."""
    name = os.path.basename(os.path.normpath(folder))
    target = os.path.join(directory, f"{name}.zip")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for here, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                if not f.endswith((".pyc", ".pyo")):
                    full = os.path.join(here, f)
                    z.write(full, os.path.join(name, os.path.relpath(full, folder)))
    return target


def plan(size: int, stored: list[tuple[int, int]], tasks: int) -> list[tuple[int, int]]:
    """The ranges still to compute: the gaps between stored ranges, cut into about `tasks` runs of whole grid
    cells. Each task stores one file pair per cell (`_evaluate_ranges`), so the stored ranges do not depend
    on `tasks` and sweeps run with different --tasks never overlap."""
    missing = gaps(stored, size)
    todo = sum(b - a for a, b in missing)
    wanted = max(tasks, -(-todo // RANGE_TARGET))
    out: list[tuple[int, int]] = []
    for a, b in missing:
        cells = grid(a, b, cell_size(size))
        count = min(len(cells), max(1, round(wanted * (b - a) / todo)))  # tasks for this gap, by its share
        cuts = [cells[i * len(cells) // count][0] for i in range(count)] + [b]
        out += zip(cuts, cuts[1:], strict=False)
    return out


def _evaluate_ranges(space: Space, root: str) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function each task runs on its Arrow batches of (start, stop) rows."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        store = ResultStore(root)
        keys = space.invariant_ids()
        cell = cell_size(len(space))
        for batch in batches:
            for start, stop in zip(batch.column("start").to_pylist(), batch.column("stop").to_pylist(), strict=True):
                began = time.perf_counter()
                configurations = violations = 0
                for a, b in grid(start, stop, cell):  # one stored range per grid cell, whatever the task's size
                    result = space.evaluate(a, b)
                    store.write(result, keys)
                    configurations += result.size
                    violations += sum(result.violated.values())
                yield pa.RecordBatch.from_pydict({
                    "start": [start], "stop": [stop], "configurations": [configurations],
                    "violations": [violations], "seconds": [time.perf_counter() - began]})

    return run


@dataclass(frozen=True)
class JobStats:
    ranges: int
    configurations: int
    seconds: float  # wall time of the Spark job
    task_seconds: float  # time spent evaluating, summed over tasks


def run_ranges(spark: Any, space: Space, store: ResultStore, ranges: list[tuple[int, int]]) -> JobStats:
    """Evaluate and store every range, one task each."""
    if not ranges:
        return JobStats(0, 0, 0.0, 0.0)
    began = time.perf_counter()
    rdd = spark.sparkContext.parallelize(ranges, len(ranges))
    frame = spark.createDataFrame(rdd, "start long, stop long")
    with warnings.catch_warnings():  # PySpark 4 warns about pandas 3 on every Arrow UDF; the job uses no pandas
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
        rows = frame.mapInArrow(_evaluate_ranges(space, store.root), TASK_SCHEMA).collect()
    return JobStats(len(rows), sum(r.configurations for r in rows), time.perf_counter() - began,
                    sum(r.seconds for r in rows))


@dataclass(frozen=True)
class SweepOutcome:
    stored: Stored
    job: JobStats
    resumed_ranges: int  # ranges found in the store before this run


def sweep(space: Space, store: ResultStore, resume: bool = False, spark: Any = None, master: str | None = None,
          tasks: int | None = None, progress: bool | None = None, opened: bool = False,
          py_files: Sequence[str] = ()) -> SweepOutcome:
    """Run (or resume) a sweep of `space` into `store`, then read back and verify every stored range.

    Locks and opens the store first (refusing to mix or overwrite results) unless the caller did (`opened`).
    `py_files`: the user's plug-in modules, shipped to the executors of a session started here (`ship`).
    Reads every stored range before computing, so a damaged store is refused before any Spark starts;
    starts a SparkSession only when some range is missing. Stored files are never rewritten.
    """
    held = None if opened else store.begin(space, resume)
    try:
        size = len(space)
        stored = store.load(size)
        before = len(stored.ranges)
        stats = JobStats(0, 0, 0.0, 0.0)
        if stored.missing:
            spark = spark or spark_session(master, progress, py_files=py_files)
            parallelism = spark.sparkContext.defaultParallelism
            todo = plan(size, stored.ranges, tasks or 4 * parallelism)
            stats = run_ranges(spark, space, store, todo)
            stored = store.load(size)
        return SweepOutcome(stored, stats, before)
    finally:
        if held is not None:
            held.release()
