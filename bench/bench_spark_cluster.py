"""The RF 3 bound's first levels (bench_engine.py's `RF3`) on a Spark standalone cluster started on this machine,
level by level against the one-process engine, with Spark's fixed per-level cost measured and the cost of 10^9
states on a cluster of such machines estimated from it.

The cluster is pyspark's own distribution (`bin/spark-class` inside the pip package): a Master and one Worker
(`--cores`, default 2) on 127.0.0.1, on free ports, with their work, log and local (block manager, shuffle)
folders in one temporary folder this bench creates; at the end both JVMs (and the executor the Worker started,
in their process groups) are stopped by PID and the folder removed. The driver is this process
(`spark_exhaust(..., master="spark://127.0.0.1:PORT")`), its own local folder in the same temporary folder.

Budget: `--max-depth D` (default 6): a warm-up run to level `--warm-up` (default 2: the executor starts its
Python workers, which import kcheck), then levels 0..D stored and checked; the run ends once level D is stored
(no probe past the bound). Printed per level d: new states (also the frontier level d+1 expands), transitions (the
successors of level d-1, which level d's job computes, deduplicates and checks), the wall and the CPU seconds of
every process of the run (driver, its JVM, the daemons, the executor and its Python workers, from /proc), the
Spark job's own figures (its wall, tasks, summed task run time, JVM CPU, deserialisation, shuffle bytes), and the
one-process engine's seconds (`exhaust(max_depth=d)` minus `exhaust(max_depth=d-1)`, each a fresh search, run
after the cluster is stopped). The states and transitions must agree level by level.

The per-level cost: `a` is the median of the levels under 1,000 transitions (Spark's fixed cost a level), `b`
the least-squares slope of wall = a + b * transitions over every level (the intercept is printed too); the same for
CPU seconds. The estimate for 10^9 states then assumes: the levels keep the last measured growth; each machine is
this one (2 cores, one executor) and adds its cores' speed (b / N); the per-level cost does not grow with N; the
visited set is read from and written back to the block manager every level (pickling timed here); the network
carries the shuffle bytes measured per transition at the machines' compute rate (the column prints that rate).
It prints it twice: with the wall figures as measured (at the printed load) and for an unloaded machine (CPU
seconds, b divided by the cores). Memory per machine: the visited set (20 B stored a state plus its table slot at
the lowest load, 0.35), twice during a level, and the widest level's encodings (held as they are, uncompressed);
both may spill to disk (MEMORY_AND_DISK).

    nice -n 10 python bench/bench_spark_cluster.py [--max-depth 6] [--warm-up 2] [--cores 2] [--partitions N]
                                                   [--no-engine]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from array import array
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any

RF3: dict[str, Any] = dict(brokers=3, replication_factor=3, min_isr=2, records=2, crashes=1, fences=1, lossy_crashes=1,
                           elections=1, isr_shrinks=0, failovers=0, reads=0, reassignments=0, cancels=0,
                           duplicates=False)  # bench_engine.py's RF3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


class Standalone:
    """A Spark standalone Master and one Worker on 127.0.0.1, in a temporary folder; a context manager whose
    exit stops both by PID (their process groups: the executors the Worker starts are in its group) and removes
    the folder. `memory` is the Worker's, all of it for its one executor. `url` is the master URL; `pids` the JVMs'
    PIDs."""

    def __init__(self, cores: int = 2, memory: str = "2g", timeout: float = 120.0) -> None:
        self.cores, self.memory, self.timeout = cores, memory, timeout
        self.base = Path(tempfile.mkdtemp(prefix="kcheck-standalone-"))
        self.tmp = self.base / "tmp"  # every JVM's java.io.tmpdir (lz4's native library, Spark's artifacts)
        self.tmp.mkdir()
        self.procs: list[subprocess.Popen[bytes]] = []
        self.url = ""

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_MASTER", "PYSPARK_GATEWAY_PORT")}
        env.update(SPARK_HOME=str(_spark_home()), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(self.base / "logs"),
                   SPARK_WORKER_DIR=str(self.base / "work"), SPARK_LOCAL_DIRS=str(self.base / "local"),
                   SPARK_DAEMON_JAVA_OPTS=f"-Djava.io.tmpdir={self.tmp}")
        return env

    def _start(self, name: str, args: list[str], ready: str) -> None:
        log = self.base / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen([str(_spark_home() / "bin" / "spark-class"), *args], env=self._env(),
                                    cwd=self.base, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        deadline = time.monotonic() + self.timeout
        while ready not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-1500:]
                raise RuntimeError(f"the {name} did not start (exit {proc.poll()}): {tail}")
            time.sleep(0.3)

    def __enter__(self) -> Standalone:
        try:
            port = _free_port()
            self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                                   str(port), "--webui-port", str(_free_port())], "I have been elected leader")
            self.url = f"spark://127.0.0.1:{port}"
            self._start("worker", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--webui-port",
                                   str(_free_port()), "--cores", str(self.cores), "--memory", self.memory,
                                   "--work-dir", str(self.base / "work"), self.url],
                        "Successfully registered with master")
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        """SIGTERM to each process group we started, the Worker first (it ends its executors), then SIGKILL."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=30)
            try:  # anything left in the group (an executor or its Python workers)
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.base, ignore_errors=True)

    def session(self, app_name: str = "kcheck-bench-cluster") -> Any:
        """A driver on this process for the cluster: loopback, its local folder in ours, the UI on a free port
        (its REST API gives the shuffle bytes), one executor taking the Worker's cores and memory (asking more
        than the Worker offers would leave the application waiting for an executor for ever)."""
        from kcheck.spark_check.job import spark_session

        # spark_session moves $JAVA_TOOL_OPTIONS into the driver JVM's options (and out of the environment)
        os.environ["JAVA_TOOL_OPTIONS"] = f"-Djava.io.tmpdir={self.tmp}"
        return spark_session(self.url, progress=False, app_name=app_name, extra={
            "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.local.dir": str(self.base / "driver"), "spark.ui.port": str(_free_port()),
            "spark.executor.memory": self.memory, "spark.cores.max": str(self.cores),
            "spark.executor.extraJavaOptions": f"-Djava.io.tmpdir={self.tmp}"})


def _factory() -> Callable[[], Any]:
    from kcheck.invariants.replication_model_adapter import ReplicationModel
    from kcheck.model.replication import Config, Protocol

    return partial(ReplicationModel, Protocol.current(), Config(**RF3))


def _one_process(factory: Callable[[], Any], depth: int) -> list[tuple[int, int, float]]:
    """Per depth d: (states through d, transitions, seconds) of a fresh `exhaust(max_depth=d)`."""
    from kcheck.model.search import exhaust

    out = []
    for d in range(depth + 1):
        t0 = time.perf_counter()
        r = exhaust(factory(), max_depth=d)
        out.append((r.states, r.transitions, time.perf_counter() - t0))
    return out


def _rest(sc: Any, what: str) -> Any:
    with urllib.request.urlopen(f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/{what}", timeout=30) as got:
        return json.load(got)


def _jobs(sc: Any) -> list[dict[str, Any]]:
    """Per Spark job (one a level, in order): its wall seconds, tasks, and its stages' summed task figures
    (executor run, CPU and deserialisation seconds, shuffle bytes written), from the driver's REST API."""
    stages = {s["stageId"]: s for s in _rest(sc, "stages") if s.get("status") == "COMPLETE"}
    out = []
    for job in sorted(_rest(sc, "jobs"), key=lambda j: j["jobId"]):
        ran = [stages[i] for i in job["stageIds"] if i in stages]
        begin, end = (_when(job.get(k)) for k in ("submissionTime", "completionTime"))
        out.append(dict(wall=end - begin if begin and end else 0.0, tasks=sum(s["numTasks"] for s in ran),
                        run=sum(s["executorRunTime"] for s in ran) / 1e3,
                        cpu=sum(s["executorCpuTime"] for s in ran) / 1e9,
                        deser=sum(s["executorDeserializeTime"] for s in ran) / 1e3,
                        shuffle=sum(int(s.get("shuffleWriteBytes", 0)) for s in ran)))
    return out


def _when(stamp: str | None) -> float:
    """Seconds since the epoch of a REST API time ("2026-11-30T05:09:34.350GMT")."""
    if not stamp:
        return 0.0
    from datetime import UTC, datetime

    return datetime.strptime(stamp[:23], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=UTC).timestamp()


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - b * mx, b


def _pickle_seconds_per_state(n: int = 1_000_000) -> float:
    """A partition's visited set and store crossing Python and the JVM once: pickled and unpickled, per state
    (each level reads the visited set from the block manager and writes it back)."""
    import random

    from kcheck.model.visited import FingerprintSet

    rng = random.Random(0)
    seen = FingerprintSet()
    fps = array("Q", (rng.getrandbits(64) | 1 for _ in range(n)))
    for fp in fps:
        seen.add(fp)
    item = ("V", seen, (fps, array("Q", fps), array("I", bytes(4 * n))))
    t0 = time.perf_counter()
    pickle.loads(pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL))
    return (time.perf_counter() - t0) / n


def _payload_bytes(factory: Callable[[], Any], states: int = 2000) -> float:
    """Mean encoding length of the states a short BFS from the initial states reaches (the frontier's payload)."""
    model = factory()
    seen: dict[bytes, Any] = {}
    todo = list(model.initial_states())
    from kcheck.model.visited import successor_fn

    succ = successor_fn(model)
    while todo and len(seen) < states:
        s = todo.pop(0)
        data = model.encode(s)
        if data in seen:
            continue
        seen[data] = s
        todo += [t for _, _, t in succ(s)]
    return statistics.fmean(len(d) for d in seen)


class _Enough(Exception):
    """Raised by the progress hook once level D is stored: the run ends there (no probe past the bound)."""


_ROLES = (("SparkSubmit", "driver JVM"), ("CoarseGrainedExecutorBackend", "executor JVM"),
          ("deploy.master", "Master"), ("deploy.worker", "Worker"), ("pyspark.daemon", "Python workers"))


def _tree_cpu(roots: list[int]) -> dict[str, float]:
    """CPU seconds (user + system) of the processes under `roots` (this process: the driver and its JVM; the
    Master and the Worker: the executor and its Python workers) by role, from /proc; a process that ended is not
    counted."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(name))
            cpu[int(name)] = (int(fields[11]) + int(fields[12])) / tick
    out: dict[str, float] = {}
    todo = list(roots)
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read().decode(errors="replace")
        except OSError:
            command = ""
        role = next((name for key, name in _ROLES if key in command), "driver (Python)")
        out[role] = out.get(role, 0.0) + cpu.get(pid, 0.0)
        todo += children.get(pid, [])
    return out


def _spark_levels(cluster: Standalone, factory: Callable[[], Any], depth: int, partitions: int | None,
                  warm: int) -> tuple[list[tuple[int, int, float, dict[str, float]]], list[dict[str, Any]], float]:
    """A warm-up run to level `warm` (the executor's Python workers start and import kcheck), then the run to level
    `depth`: per level (states through it, transitions, seconds and CPU seconds at its end), the Spark jobs'
    figures (the measured run's), and the driver's start-up seconds."""
    from kcheck.spark_check.exhaust import spark_exhaust

    t0 = time.perf_counter()
    spark = cluster.session()
    startup = time.perf_counter() - t0
    roots = [os.getpid(), *cluster.pids]
    marks: list[tuple[int, int, float, dict[str, float]]] = []
    cpu0: dict[str, float] = {}

    def level_done(r: Any, last: int, keep: bool) -> None:
        if keep:
            now = _tree_cpu(roots)
            marks.append((r.states, r.transitions, r.seconds, {k: v - cpu0.get(k, 0.0) for k, v in now.items()}))
        print(f"  {'level' if keep else 'warm-up level'} {r.depth}: {r.states:,} states, {r.transitions:,} "
              f"transitions, {r.seconds:.1f} s", flush=True)
        if r.depth >= last:
            raise _Enough

    try:
        first = 0
        for last, keep in ((warm, False), (depth, True)):
            first = len(_rest(spark.sparkContext, "jobs"))
            cpu0.clear()
            cpu0.update(_tree_cpu(roots))
            try:
                got = spark_exhaust(factory, spark=spark, partitions=partitions,
                                    progress=partial(level_done, last=last, keep=keep))
                print(f"  the search ended before level {last}: {got.stopped_because or 'complete'}")
            except _Enough:
                pass
        jobs = _jobs(spark.sparkContext)[first:]
    finally:
        spark.stop()
    return marks, jobs, startup


def _estimate(a: float, b: float, new: list[int], per_state: float, pickle_s: float, bps: float, payload: float,
              shuffle_per_transition: float) -> None:
    """10^9 states on N machines like this one (see the module docstring for the assumptions)."""
    target = 10**9
    r = new[-1] / new[-2]
    levels, total, level = len(new), sum(new), float(new[-1])
    cum_sum = float(sum(sum(new[:i + 1]) for i in range(len(new))))
    while total < target:  # the last level counts only up to the target: the search stops there (max_states)
        level = min(level * r, target - total)
        total += level
        cum_sum += total
        levels += 1
    transitions = per_state * target
    print(f"10^9 states: levels growing x{r:.2f} (the last two measured) reach 10^9 at depth {levels - 1}, whose "
          f"first {level:.2e} states end it; {per_state:.2f} transitions a state expanded -> {transitions:.2e} "
          f"transitions")
    print(f"{'machines':>8} {'levels s':>9} {'compute s':>10} {'visited I/O s':>13} {'total h':>8} "
          f"{'shuffle MB/s':>12} {'visited GB':>10} {'frontier GB':>11}  (each machine)")
    for n in (1, 4, 16, 64, 256):
        fixed = levels * a
        compute = b * transitions / n
        io = pickle_s * cum_sum / n  # the visited set read and written back every level
        hours = (fixed + compute + io) / 3600
        rate = shuffle_per_transition / b / 1e6  # one machine's shuffle output at its compute rate
        visited = 2 * target * bps / n / 1e9  # twice during a level: the level before is dropped after
        frontier = level * payload / n / 1e9
        print(f"{n:>8} {fixed:>9.0f} {compute:>10.0f} {io:>13.0f} {hours:>8.1f} {rate:>12.2f} {visited:>10.1f} "
              f"{frontier:>11.1f}")


def _table(marks: list[tuple[int, int, float, dict[str, float]]], jobs: list[dict[str, Any]],
           one: list[tuple[int, int, float]] | None) -> tuple[list[tuple[int, int, int, float, float]], bool]:
    """Prints the level table; returns (depth, new, transitions, wall, CPU) per level and whether the engines
    agree. `CPU s`: every process of the run (driver, JVMs, Python workers); `run s`, `JVM CPU s`, `deser s`: the
    job's tasks as Spark counts them (run time includes the Python workers' time, JVM CPU does not)."""
    print(f"{'depth':>5} {'new':>9} {'transitions':>11} {'frontier':>9} {'wall s':>7} {'CPU s':>6} {'job s':>6} "
          f"{'tasks':>5} {'run s':>6} {'JVM CPU s':>9} {'deser s':>7} {'shuffle MB':>10} {'engine s':>8}  agree")
    rows, prev, agree = [], (0, 0, 0.0, 0.0), True
    for d, (states, trans, secs, roles) in enumerate(marks):
        cpu = sum(roles.values())
        new, wall, mine, used = states - prev[0], secs - prev[2], trans - prev[1], cpu - prev[3]
        job = jobs[d] if d < len(jobs) else dict(wall=0.0, tasks=0, run=0.0, cpu=0.0, deser=0.0, shuffle=0)
        eng, same = "", ""
        if one is not None:
            e_new = one[d][0] - (one[d - 1][0] if d else 0)
            e_trans = one[d][1] - (one[d - 1][1] if d else 0)
            eng = f"{one[d][2] - (one[d - 1][2] if d else 0):.1f}"
            ok = (e_new, e_trans) == (new, mine)
            agree &= ok
            same = "yes" if ok else f"NO (engine {e_new} new, {e_trans} transitions)"
        rows.append((d, new, mine, wall, used))
        print(f"{d:>5} {new:>9,} {mine:>11,} {new:>9,} {wall:>7.2f} {used:>6.1f} {job['wall']:>6.2f} {job['tasks']:>5} "
              f"{job['run']:>6.1f} {job['cpu']:>9.1f} {job['deser']:>7.2f} {job['shuffle'] / 1e6:>10.1f} {eng:>8}  "
              f"{same}", flush=True)
        prev = (states, trans, secs, cpu)
    return rows, agree


def _costs(rows: list[tuple[int, int, int, float, float]], column: int) -> tuple[float, float, float]:
    """(a, b, the fit's a) of a column (3: wall, 4: CPU): `a` the median of the levels under 1,000 transitions
    (Spark's fixed cost a level), b the least-squares slope over every level of column = a + b * transitions."""
    a_fit, b = _fit([float(r[2]) for r in rows], [r[column] for r in rows])
    small = [r[column] for r in rows if r[2] < 1000]
    return (statistics.median(small) if small else a_fit), b, a_fit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-depth", type=int, default=6)
    ap.add_argument("--warm-up", type=int, default=2, help="levels of the warm-up run (its figures are not kept)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=None)
    ap.add_argument("--no-engine", action="store_true", help="skip the one-process engine (no comparison)")
    args = ap.parse_args()
    factory = _factory()
    print(f"bound RF3: {RF3}; levels 0..{args.max_depth}; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores", flush=True)
    began = time.perf_counter()
    with Standalone(cores=args.cores) as cluster:
        up = time.perf_counter() - began
        print(f"standalone cluster {cluster.url} (Master and Worker PIDs {cluster.pids}, {args.cores} cores) up in "
              f"{up:.1f} s", flush=True)
        marks, jobs, startup = _spark_levels(cluster, factory, args.max_depth, args.partitions, args.warm_up)
    print(f"driver start-up {startup:.1f} s; cluster stopped, folder removed: {not cluster.base.exists()}; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    one = None if args.no_engine else _one_process(factory, len(marks) - 1)
    rows, agree = _table(marks, jobs, one)
    states, transitions, seconds, roles = marks[-1]
    cpu = sum(roles.values())
    print(f"Spark: {states:,} states, {transitions:,} transitions through depth {len(marks) - 1}, {seconds:.1f} s, "
          f"{cpu:.1f} CPU s; levels agree with the one-process engine: {'not run' if one is None else agree}; "
          f"load average {os.getloadavg()[0]:.1f}")
    if one is not None:
        print(f"one-process engine to the same depth: {one[-1][2]:.1f} s ({one[-1][0] / one[-1][2]:.0f} states/s)")
    a, b, a_fit = _costs(rows, 3)
    a_cpu, b_cpu, a_cpu_fit = _costs(rows, 4)
    print(f"per level, wall: a = {a:.2f} s (median of the levels under 1,000 transitions; the fit's intercept "
          f"{a_fit:.2f} s), b = {b * 1e3:.3f} ms a transition (least squares over levels 0..{rows[-1][0]})")
    print(f"per level, CPU: a = {a_cpu:.2f} s (fit {a_cpu_fit:.2f} s), b = {b_cpu * 1e3:.3f} ms a transition")
    small = [d for d, _, x, _, _ in rows if x < 1000]
    if small:  # where the fixed cost goes: the CPU of the small levels by process, a level on average
        last, first = marks[max(small)][3], marks[min(small) - 1][3] if min(small) else {}
        split = {k: (v - first.get(k, 0.0)) / len(small) for k, v in last.items()}
        print("fixed cost by process, CPU s a level (levels under 1,000 transitions): " +
              ", ".join(f"{k} {v:.2f}" for k, v in sorted(split.items(), key=lambda kv: -kv[1])))
    per_state = transitions / max(1, states - rows[-1][1])  # transitions per state expanded
    pickle_s = _pickle_seconds_per_state()
    payload = _payload_bytes(factory)
    shuffled = sum(j["shuffle"] for j in jobs)
    per_transition = shuffled / max(1, transitions)
    bps = 20 + 8 / 0.35  # a stored state's fingerprint, parent, action (8 + 8 + 4 B) and its table slot at the
    # FingerprintSet's lowest load (0.35, just after it doubles)
    print(f"shuffle: {shuffled:,} bytes written, {per_transition:.0f} B a transition; visited set at most "
          f"{bps:.0f} B a state; encoding {payload:.0f} B a state; visited set pickled and unpickled "
          f"{pickle_s * 1e9:.0f} ns a state")
    new = [r[1] for r in rows]
    print("\nas measured here (wall, at this load):")
    _estimate(a, b, new, per_state, pickle_s, bps, payload, per_transition)
    print(f"\nan unloaded machine ({args.cores} cores: a and b from CPU seconds, b divided by the cores):")
    _estimate(a_cpu, b_cpu / args.cores, new, per_state, pickle_s, bps, payload, per_transition)


if __name__ == "__main__":
    main()
