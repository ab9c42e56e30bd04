"""Real Kafka beside our reference: its placement code, run in one long-lived JVM.

`KafkaBridge(version)` resolves the release's jars (`kafka_jars`), compiles kcheck's harness
(`kafka_harness`) against them into the cache (keyed by release and harness source hash), starts
one JVM and talks to it over stdin/stdout, a line per request. Single calls cost a round trip;
the `map_*` methods send a whole batch and read the answers back, so throughput is Kafka's.

    with KafkaBridge("4.0.2") as kafka:
        kafka.assign_replicas_to_brokers(brokers, 6, 3, fixed_start_index=0)   # AdminUtils (<= 4.0)
        kafka.striped_place(brokers, PlacementSpec("t", 0, 6, 3), seed=42)     # StripedReplicaPlacer

A Kafka exception comes back as `JavaException(class_name, message)`: raised by the single
calls, returned in place of a result by the `map_*` methods. `shared_bridge(version)` gives one
bridge per release per Python process, closed at exit.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from kcheck.model import Broker
from kcheck.reference import kafka_harness
from kcheck.reference.kafka_jars import KafkaBridgeError, ResolvedRelease, default_version, require_tool, resolve
from kcheck.reference.striped import PlacementSpec

__all__ = [
    "AssignRequest",
    "JavaException",
    "KafkaBridge",
    "KafkaBridgeError",
    "StripedRequest",
    "shared_bridge",
]


class JavaException(Exception):
    """An exception Kafka's code threw: its Java class name and message."""

    def __init__(self, class_name: str, message: str) -> None:
        super().__init__(f"{class_name}: {message}")
        self.class_name = class_name
        self.message = message

    @property
    def simple_name(self) -> str:
        return self.class_name.rsplit(".", 1)[-1]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JavaException) and (self.class_name, self.message) == (
            other.class_name, other.message)

    def __hash__(self) -> int:
        return hash((self.class_name, self.message))


@dataclass(frozen=True)
class AssignRequest:
    """One AdminUtils.assignReplicasToBrokers call. `seed` re-seeds AdminUtils' static Random first."""

    brokers: tuple[Broker, ...]
    n_partitions: int
    replication_factor: int
    fixed_start_index: int = -1
    start_partition_id: int = -1
    seed: int | None = None


@dataclass(frozen=True)
class StripedRequest:
    """Successive StripedReplicaPlacer.place calls sharing one `new Random(seed)`, on one cluster."""

    brokers: tuple[Broker, ...]
    specs: tuple[PlacementSpec, ...]
    seed: int


@functools.lru_cache(maxsize=4096)
def _rack(rack: str | None) -> str:
    if rack is None:
        return "-"
    if rack == "":
        return "_"
    b = rack.encode("utf-16-be", "surrogatepass")
    return ".".join(f"{int.from_bytes(b[i:i + 2], 'big'):x}" for i in range(0, len(b), 2))


def _unescape(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append({"n": "\n", "r": "\r"}.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _encode_assign(r: AssignRequest) -> str:
    seed = "-" if r.seed is None else str(r.seed)
    brokers = " ".join(f"{b.id}/{_rack(b.rack)}" for b in r.brokers)
    return (f"A {r.n_partitions} {r.replication_factor} {r.fixed_start_index} {r.start_partition_id} {seed} "
            f"{brokers}").rstrip()


def _encode_striped(r: StripedRequest) -> str:
    specs = " ".join(f"{s.start_partition} {s.num_partitions} {s.num_replicas}" for s in r.specs)
    brokers = " ".join(f"{b.id}/{_rack(b.rack)}/{int(b.fenced)}" for b in r.brokers)
    return f"S {r.seed} {len(r.specs)} {specs} {brokers}".rstrip()


def _parse_error(line: str) -> JavaException:
    _, class_name, *rest = line.split(" ", 2)
    return JavaException(class_name, _unescape(rest[0]) if rest else "")


# The answers are rewritten into JSON and parsed by the json module's C code: several times faster
# than splitting and int() in Python, which would otherwise set the bridge's throughput.


def _parse_assign(line: str) -> dict[int, list[int]] | JavaException:
    """`OK 0=1,2 1=2,0` -> {0: [1, 2], 1: [2, 0]}."""
    if line.startswith("ERR "):
        return _parse_error(line)
    body = line[3:]
    if not body:
        return {}
    return dict(json.loads("[[" + body.replace("=", ",[").replace(" ", "]],[") + "]]]"))


def _parse_striped(line: str) -> list[list[list[int]]] | JavaException:
    """`OK 1,2 3,4 | 5,6` -> [[[1, 2], [3, 4]], [[5, 6]]] (one list per spec)."""
    if line.startswith("ERR "):
        return _parse_error(line)
    specs = []
    for part in line[2:].split(" |"):
        part = part.strip()
        specs.append("[[" + part.replace(" ", "],[") + "]]" if part else "[]")
    return json.loads("[" + ",".join(specs) + "]")


def compile_harness(release: ResolvedRelease) -> Path:
    """The harness classes for this release, compiled once into the cache."""
    directory = release.directory / f"harness-{kafka_harness.source_hash()}"
    marker = directory / ".complete"
    if marker.is_file():
        return directory
    javac = require_tool("javac")
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="javac-", dir=directory) as work:
        src = Path(work) / f"{kafka_harness.CLASS_NAME}.java"
        src.write_text(kafka_harness.SOURCE, encoding="utf-8")
        classes = Path(work) / "classes"
        proc = subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "-cp", release.classpath, "-d", str(classes),
                               str(src)], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:200])
            raise KafkaBridgeError(f"kafka {release.version}", f"javac could not compile the harness: {first}")
        for f in classes.iterdir():
            f.replace(directory / f.name)
    marker.write_text(kafka_harness.source_hash() + "\n", encoding="utf-8")
    return directory


class KafkaBridge:
    """One JVM running one Kafka release's placement code for this Python process."""

    def __init__(
        self,
        version: str | None = None,
        java_options: Sequence[str] = ("-XX:+UseSerialGC",),
        timeout: float = 30.0,
    ) -> None:
        self.requested_version = version
        self.timeout = timeout  # seconds the JVM may take for one answer before it is killed
        self.java_options = tuple(java_options)
        self.release: ResolvedRelease | None = None
        self.kafka_version: str | None = None  # as the jars report it (AppInfoParser)
        self.has_admin_utils = False
        self.start_seconds = 0.0  # JVM start until the harness answered READY
        self._proc: subprocess.Popen[str] | None = None
        self._stderr: IO[bytes] | None = None
        self._lock = threading.Lock()

    # --- life cycle -------------------------------------------------------------------------

    @property
    def version(self) -> str:
        return self.release.version if self.release else (self.requested_version or "?")

    def start(self) -> KafkaBridge:
        if self._proc is not None:
            return self
        java = require_tool("java")
        require_tool("javac")
        self.release = resolve(self.requested_version or default_version())
        classes = compile_harness(self.release)
        self._stderr = tempfile.TemporaryFile(mode="w+b")
        t0 = time.perf_counter()
        self._proc = subprocess.Popen(
            [java, *self.java_options, "-cp", os.pathsep.join([str(classes), self.release.classpath]),
             kafka_harness.CLASS_NAME],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, encoding="utf-8",
            bufsize=1 << 16,
        )
        hello = self._proc.stdout.readline()  # type: ignore[union-attr]
        if not hello.startswith("READY "):
            self._fail("did not start")
        self.start_seconds = time.perf_counter() - t0
        _, self.kafka_version, admin = hello.split()
        self.has_admin_utils = admin == "admin=1"
        return self

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.stdin.write("Q\n")  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
            proc.wait(timeout=5)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            try:
                os.kill(proc.pid, signal.SIGKILL)  # this JVM only, by its PID
            except ProcessLookupError:
                pass
            proc.wait()
        finally:
            if proc.stdout:
                proc.stdout.close()
            if self._stderr:
                self._stderr.close()
                self._stderr = None

    def __enter__(self) -> KafkaBridge:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fail(self, what: str) -> None:
        tail = ""
        if self._stderr is not None:
            self._stderr.seek(0)
            lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
            tail = lines[-1] if lines else ""
        self.close()
        raise KafkaBridgeError("jvm", f"the Kafka {self.version} harness {what}" + (f": {tail}" if tail else ""))

    # --- transport ---------------------------------------------------------------------------

    def _roundtrip(self, lines: list[str]) -> list[str]:
        self.start()
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        with self._lock:
            def write() -> None:
                try:
                    proc.stdin.write("\n".join(lines) + "\n")  # type: ignore[union-attr]
                    proc.stdin.flush()  # type: ignore[union-attr]
                except (BrokenPipeError, ValueError):
                    pass

            if not lines:
                return []
            writer = None
            if sum(map(len, lines)) > 16_000:  # a big batch: write while reading, so neither pipe fills up
                writer = threading.Thread(target=write, daemon=True)
                writer.start()
            else:
                write()
            # Kafka's code can loop forever on some inputs: a watchdog ends this JVM (by its PID) when
            # no answer came for `timeout` seconds, and the call raises.
            timed_out, done, last = threading.Event(), threading.Event(), [time.monotonic()]

            def watch() -> None:
                while not done.wait(0.2):
                    if time.monotonic() - last[0] > self.timeout:
                        timed_out.set()
                        try:
                            os.kill(proc.pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                        return

            watchdog = threading.Thread(target=watch, daemon=True)
            watchdog.start()
            answers = []
            try:
                for _ in lines:
                    answer = proc.stdout.readline()
                    if not answer:
                        self._fail(f"gave no answer within {self.timeout:g} s (killed)" if timed_out.is_set()
                                   else "exited")
                    last[0] = time.monotonic()
                    answers.append(answer.rstrip("\n"))
            finally:
                done.set()
            if writer is not None:
                writer.join()
            return answers

    # --- AdminUtils ----------------------------------------------------------------------------

    def map_assign(self, requests: Iterable[AssignRequest]) -> list[dict[int, list[int]] | JavaException]:
        """AdminUtils.assignReplicasToBrokers on each request, in one batch; an exception in place of a result."""
        self.start()
        if not self.has_admin_utils:
            raise KafkaBridgeError("AdminUtils", f"not in Kafka {self.version} (kafka-server-common has it up to 4.0)")
        return [_parse_assign(a) for a in self._roundtrip([_encode_assign(r) for r in requests])]

    def assign_replicas_to_brokers(
        self,
        brokers: Sequence[Broker],
        n_partitions: int,
        replication_factor: int,
        fixed_start_index: int = -1,
        start_partition_id: int = -1,
        seed: int | None = None,
    ) -> dict[int, list[int]]:
        """Kafka's answer to reference.placement.assign_replicas_to_brokers (`seed` for `random=JavaRandom(seed)`)."""
        (out,) = self.map_assign([AssignRequest(tuple(brokers), n_partitions, replication_factor, fixed_start_index,
                                                start_partition_id, seed)])
        if isinstance(out, JavaException):
            raise out
        return out

    # --- StripedReplicaPlacer ---------------------------------------------------------------

    def map_striped(self, requests: Iterable[StripedRequest]) -> list[list[list[list[int]]] | JavaException]:
        """Each request's placements (one replica list per partition, per spec), in one batch."""
        return [_parse_striped(a) for a in self._roundtrip([_encode_striped(r) for r in requests])]

    def striped_place(self, brokers: Sequence[Broker], spec: PlacementSpec, seed: int) -> list[list[int]]:
        """StripedReplicaPlacer(new Random(seed)).place(spec, brokers): a replica list per partition."""
        (out,) = self.map_striped([StripedRequest(tuple(brokers), (spec,), seed)])
        if isinstance(out, JavaException):
            raise out
        return out[0]


_shared: dict[str | None, KafkaBridge] = {}
_shared_lock = threading.Lock()


def shared_bridge(version: str | None = None) -> KafkaBridge:
    """The process's bridge for this release (started on first use, closed at exit)."""
    with _shared_lock:
        bridge = _shared.get(version)
        if bridge is None or bridge._proc is None:
            bridge = KafkaBridge(version).start()
            _shared[version] = bridge
        return bridge


@atexit.register
def _close_shared() -> None:
    for bridge in list(_shared.values()):
        bridge.close()
