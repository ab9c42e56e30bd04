"""Real Kafka beside our reference: Kafka's own classes of a chosen release, run in one long-lived JVM.

`KafkaBridge(version)` resolves the release's jars (`kafka_jars`), compiles kcheck's harness
(`kafka_harness`) against them into the cache (keyed by release and harness source hash), starts
one JVM and talks to it over stdin/stdout, a line per request. Single calls cost a round trip;
the `map_*` methods send a whole batch and read the answers back, so throughput is Kafka's.

    with KafkaBridge("4.0.2") as kafka:
        kafka.assign_replicas_to_brokers(brokers, 6, 3, fixed_start_index=0)   # AdminUtils (<= 4.0)
        kafka.striped_place(brokers, PlacementSpec("t", 0, 6, 3), seed=42)     # StripedReplicaPlacer

`KafkaBridge(version, server=True)` is the broker-side bridge: the broker's jar set (`kafka_jars.resolve_server`) and
Mockito, for the handlers whose classes only the broker has (`kafka_harness.BROKER_SIDE`: DelayedProduce).

A Kafka exception comes back as `JavaException(class_name, message)`: raised by the single
calls, returned in place of a result by the `map_*` methods. `shared_bridge(version)` gives one
bridge per release per Python process, closed at exit.

This module is the transport and placement; the other algorithms add their requests in modules of
their own (`kafka_client_assignors`, `kafka_group_assignors`, `kafka_controller`, ...), each a
handler in `reference/harness/` plus encoders here built on `encode_text`, `encode_ints`,
`parse_error` and `KafkaBridge.roundtrip` / `require`.
"""

from __future__ import annotations

import atexit
import fcntl
import functools
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kcheck.model import Broker
from kcheck.reference import kafka_harness
from kcheck.reference.kafka_jars import (
    KafkaBridgeError,
    ResolvedRelease,
    default_version,
    require_tool,
    resolve,
    resolve_server_harness,
)
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
def encode_text(text: str | None) -> str:
    """A string (a rack, a member id, a topic) as one harness token: KcheckCodec.text() reads it back."""
    if text is None:
        return "-"
    if text == "":
        return "_"
    b = text.encode("utf-16-be", "surrogatepass")
    return ".".join(f"{int.from_bytes(b[i:i + 2], 'big'):x}" for i in range(0, len(b), 2))


def decode_text(token: str) -> str | None:
    """The inverse of encode_text (KcheckCodec.encodeText's output)."""
    if token == "-":
        return None
    if token == "_":
        return ""
    units = b"".join(int(u, 16).to_bytes(2, "big") for u in token.split("."))
    return units.decode("utf-16-be", "surrogatepass")


def encode_ints(xs: Iterable[int]) -> str:
    """An int list as one token ('~' when empty): KcheckCodec.ints() reads it back."""
    return ",".join(map(str, xs)) or "~"


def step_differences(cases: Sequence[Any], kafka: Sequence[Sequence[str]], ours: Sequence[Sequence[str]],
                     encode: Callable[[Any], str], unit: str = "step") -> tuple[int, str]:
    """Scripts answered step by step by Kafka and by a reference: (steps that differ, the shortest differing script
    with its first differing step's two answers; '' when none differ). Scripts are compared by length of `ops`."""
    differing, smallest = 0, None
    for case, theirs, mine in zip(cases, kafka, ours, strict=True):
        bad = [i for i, (k, r) in enumerate(zip(theirs, mine, strict=True)) if k != r]
        differing += len(bad)
        if bad and (smallest is None or len(case.ops) < len(smallest[0].ops)):
            smallest = (case, bad[0], theirs[bad[0]], mine[bad[0]])
    if smallest is None:
        return 0, ""
    case, step, k, r = smallest
    return differing, f"{encode(case)} ({unit} {step})\nkafka: {k}\nours:  {r}"


def compare_drawn(draw: Callable[[], Any], steps: int, kafka: Callable[[list[Any]], Sequence[Sequence[str]]],
                  ours: Callable[[Any], Sequence[str]], encode: Callable[[Any], str], unit: str = "step",
                  size: Callable[[Any], int] = lambda case: len(case.ops)) -> tuple[int, int, str]:
    """Cases drawn until they hold about `steps` steps (`size` each), answered step by step by Kafka (`kafka`, all at
    once) and by a reference (`ours`, per case): (steps compared, steps that differ, `step_differences`' smallest)."""
    cases: list[Any] = []
    n = 0
    while n < steps:
        cases.append(draw())
        n += size(cases[-1])
    differing, smallest = step_differences(cases, kafka(cases), [ours(c) for c in cases], encode, unit)
    return n, differing, smallest


def ok_fields(line: str) -> list[str]:
    """The fields of an `OK ...` answer of a step-by-step handler (one per compared step); `ERR` raises."""
    if not line.startswith("OK"):
        raise parse_error(line)
    return line.split()[1:]


def step_answers(bridge: KafkaBridge, word: str, what: str, encode: Callable[[Any], str],
                 cases: Sequence[Any]) -> list[list[str]]:
    """Kafka's answers to `cases`, one `ok_fields` list per case, from the handler of request `word`."""
    bridge.require(word, what)
    return [ok_fields(line) for line in bridge.roundtrip([encode(c) for c in cases])]


def parse_error(line: str) -> JavaException:
    """An `ERR <class> <message>` answer."""
    _, class_name, *rest = line.split(" ", 2)
    return JavaException(class_name, _unescape(rest[0]) if rest else "")


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
    brokers = " ".join(f"{b.id}/{encode_text(b.rack)}" for b in r.brokers)
    return (f"A {r.n_partitions} {r.replication_factor} {r.fixed_start_index} {r.start_partition_id} {seed} "
            f"{brokers}").rstrip()


def _encode_striped(r: StripedRequest) -> str:
    specs = " ".join(f"{s.start_partition} {s.num_partitions} {s.num_replicas}" for s in r.specs)
    brokers = " ".join(f"{b.id}/{encode_text(b.rack)}/{int(b.fenced)}" for b in r.brokers)
    return f"S {r.seed} {len(r.specs)} {specs} {brokers}".rstrip()


# The answers are rewritten into JSON and parsed by the json module's C code: several times faster
# than splitting and int() in Python, which would otherwise set the bridge's throughput.


def _parse_assign(line: str) -> dict[int, list[int]] | JavaException:
    """`OK 0=1,2 1=2,0` -> {0: [1, 2], 1: [2, 0]}."""
    if line.startswith("ERR "):
        return parse_error(line)
    body = line[3:]
    if not body:
        return {}
    return dict(json.loads("[[" + body.replace("=", ",[").replace(" ", "]],[") + "]]]"))


def _parse_striped(line: str) -> list[list[list[int]]] | JavaException:
    """`OK 1,2 3,4 | 5,6` -> [[[1, 2], [3, 4]], [[5, 6]]] (one list per spec)."""
    if line.startswith("ERR "):
        return parse_error(line)
    specs = []
    for part in line[2:].split(" |"):
        part = part.strip()
        specs.append("[[" + part.replace(" ", "],[") + "]]" if part else "[]")
    return json.loads("[" + ",".join(specs) + "]")


def compile_harness(release: ResolvedRelease, server: bool = False) -> tuple[Path, list[str], dict[str, str]]:
    """The harness classes for this release, compiled once into the cache.

    Returns the class directory, the handler classes that compiled, and for each one that did not
    (its Kafka classes are not in this release) javac's first error line. `server`: the broker-side bridge's handlers
    (`kafka_harness.BROKER_SIDE`) against the broker's jars, instead of every other one.
    """
    directory = release.directory / f"harness-{kafka_harness.source_hash()}"
    marker = directory / ".complete"
    if marker.is_file():
        return directory, *_read_marker(marker)
    directory.mkdir(parents=True, exist_ok=True)
    # Two processes (pytest's workers, two benches) may ask at once: one compiles, the other waits and reads.
    with open(directory / ".lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file():
            return directory, *_read_marker(marker)
        return _compile_into(directory, marker, release, server)


def _compile_into(directory: Path, marker: Path, release: ResolvedRelease, server: bool,
                  ) -> tuple[Path, list[str], dict[str, str]]:
    javac = require_tool("javac")
    sources = kafka_harness.sources()
    handlers = kafka_harness.handlers(server)  # the broker-side bridge's own handlers, or every other one
    # The dispatcher, the codec and the classes handlers share (no request words): they compile on every release.
    every = {*kafka_harness.handlers(False), *kafka_harness.handlers(True)}
    base = [n for n in sources if n not in every]
    with tempfile.TemporaryDirectory(prefix="javac-", dir=directory) as tmp:
        work = Path(tmp)
        for name, text in sources.items():
            (work / f"{name}.java").write_text(text, encoding="utf-8")
        classes, skipped = _javac_together(javac, release, work, base, handlers)
        if classes is None:
            classes, skipped = _javac_each(javac, release, work, base, handlers)
        for f in classes.iterdir():
            f.replace(directory / f.name)
    compiled = [n for n in handlers if n not in skipped]
    skipped = {n: skipped[n] for n in handlers if n in skipped}
    lines = [f"handler {n}" for n in compiled] + [f"skipped {n} {why}" for n, why in skipped.items()]
    partial = marker.with_name(f".complete-{os.getpid()}")
    partial.write_text("\n".join(lines) + "\n", encoding="utf-8")
    partial.replace(marker)  # whole or absent for a reader that does not take the lock
    return directory, compiled, skipped


_JAVAC_ERROR = re.compile(r"^(?:.*[/\\])?(\w+)\.java:\d+: error: ")


def _javac(javac: str, release: ResolvedRelease, work: Path, names: Sequence[str], classes: Path,
           ) -> subprocess.CompletedProcess[str]:
    classes.mkdir(exist_ok=True)
    cp = os.pathsep.join([str(classes), release.classpath])
    return subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "-cp", cp, "-d", str(classes),
                           *(str(work / f"{n}.java") for n in names)], capture_output=True, text=True, timeout=300)


def _first_error(proc: subprocess.CompletedProcess[str]) -> str:
    return next((ln.strip() for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:200])


def _javac_together(javac: str, release: ResolvedRelease, work: Path, base: Sequence[str], handlers: Sequence[str],
                    ) -> tuple[Path | None, dict[str, str]]:
    """One javac over the base and every handler (a JVM start costs more than the compile): a handler javac names
    in an error is set aside and the rest compiled together again. Each handler set aside is then compiled alone
    against the rest, so it is skipped with the reason its own compile gives. (None, {}) when an error is not a
    handler's (the base's, or javac's own): then `_javac_each` says which."""
    pending, aside = list(handlers), []
    for attempt in range(len(handlers) + 1):
        classes = work / f"classes-{attempt}"
        proc = _javac(javac, release, work, [*base, *pending], classes)
        if proc.returncode == 0:
            break
        named = {m.group(1) for ln in proc.stderr.splitlines() if (m := _JAVAC_ERROR.match(ln))}
        failed = [n for n in pending if n in named]
        if not failed or named - set(failed):
            return None, {}
        aside += failed
        pending = [n for n in pending if n not in named]
    else:
        return None, {}
    skipped = {}
    for name in aside:  # alone, as _javac_each compiles it: the same classes on the path, the same first error
        proc = _javac(javac, release, work, [name], classes)
        if proc.returncode != 0:
            skipped[name] = _first_error(proc).split(": error: ", 1)[-1]
    return classes, skipped


def _javac_each(javac: str, release: ResolvedRelease, work: Path, base: Sequence[str], handlers: Sequence[str],
                ) -> tuple[Path, dict[str, str]]:
    """The base, then one javac per handler: a handler that does not compile is skipped with javac's first error."""
    classes = work / "classes"
    proc = _javac(javac, release, work, base, classes)
    if proc.returncode != 0:
        raise KafkaBridgeError(f"kafka {release.version}", f"javac could not compile the harness: {_first_error(proc)}")
    skipped = {}
    for name in handlers:
        proc = _javac(javac, release, work, [name], classes)
        if proc.returncode != 0:
            skipped[name] = _first_error(proc).split(": error: ", 1)[-1]
    return classes, skipped


def _read_marker(marker: Path) -> tuple[list[str], dict[str, str]]:
    compiled, skipped = [], {}
    for line in marker.read_text(encoding="utf-8").splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "handler":
            compiled.append(rest)
        elif kind == "skipped":
            name, _, why = rest.partition(" ")
            skipped[name] = why
    return compiled, skipped


class KafkaBridge:
    """One JVM running one Kafka release's code (and the user's Java plug-ins) for this Python process."""

    def __init__(
        self,
        version: str | None = None,
        # Without -OmitStackTraceInFastThrow the JIT replaces a hot implicit NPE or ArithmeticException
        # by a preallocated one whose message is null, and the answer would depend on how warm the JVM is.
        java_options: Sequence[str] = ("-XX:+UseSerialGC", "-XX:-OmitStackTraceInFastThrow"),
        timeout: float = 30.0,
        classpath: Sequence[str] = (),
        server: bool = False,
    ) -> None:
        self.requested_version = version
        # server: compiled and run against the broker's jars and Mockito (`kafka_jars.resolve_server_harness`), for
        # the handlers whose classes only the broker has (kafka.server.DelayedProduce, its Java successor)
        self.server = server
        self.user_classpath = tuple(classpath)  # the user's jars or class folders (Java plug-ins), after Kafka's
        self.timeout = timeout  # seconds the JVM may take for one answer before it is killed
        self.java_options = tuple(java_options)
        self.release: ResolvedRelease | None = None
        self.kafka_version: str | None = None  # as the jars report it (AppInfoParser)
        self.words: frozenset[str] = frozenset()  # the request words this release's harness answers
        self.skipped: dict[str, str] = {}  # handler class -> why it did not compile for this release
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
        version = self.requested_version or default_version()
        self.release = resolve_server_harness(version) if self.server else resolve(version)
        classes, handlers, self.skipped = compile_harness(self.release, self.server)
        self._stderr = tempfile.TemporaryFile(mode="w+b")
        classpath = os.pathsep.join([str(classes), self.release.classpath, *self.user_classpath])
        t0 = time.perf_counter()
        self._proc = subprocess.Popen(
            [java, *self.java_options, "-cp", classpath, kafka_harness.CLASS_NAME,
             *map(kafka_harness.main_class, handlers)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, encoding="utf-8",
            bufsize=1 << 16,
        )
        hello = self._proc.stdout.readline()  # type: ignore[union-attr]
        if not hello.startswith("READY "):
            self._fail("did not start")
        self.start_seconds = time.perf_counter() - t0
        _, self.kafka_version, *words = hello.split()
        self.words = frozenset(words[0].split(",")) if words else frozenset()
        return self

    @property
    def has_admin_utils(self) -> bool:
        return "A" in self.start().words

    def require(self, word: str, what: str) -> None:
        """Raise KafkaBridgeError unless this release's harness answers `word` (`what` names it)."""
        self.start()
        if word not in self.words:
            why = "; ".join(f"{k}: {v}" for k, v in self.skipped.items())
            raise KafkaBridgeError(what, f"not available in Kafka {self.version}" + (f" ({why})" if why else ""))

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

    def roundtrip(self, lines: list[str]) -> list[str]:
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
        if not self.has_admin_utils:
            raise KafkaBridgeError("AdminUtils", f"not in Kafka {self.version} (kafka-server-common has it up to 4.0)")
        return [_parse_assign(a) for a in self.roundtrip([_encode_assign(r) for r in requests])]

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
        return [_parse_striped(a) for a in self.roundtrip([_encode_striped(r) for r in requests])]

    def striped_place(self, brokers: Sequence[Broker], spec: PlacementSpec, seed: int) -> list[list[int]]:
        """StripedReplicaPlacer(new Random(seed)).place(spec, brokers): a replica list per partition."""
        (out,) = self.map_striped([StripedRequest(tuple(brokers), (spec,), seed)])
        if isinstance(out, JavaException):
            raise out
        return out[0]


_shared: dict[tuple[str | None, tuple[str, ...], bool], KafkaBridge] = {}
_shared_lock = threading.Lock()


def shared_bridge(version: str | None = None, classpath: Sequence[str] = (), server: bool = False) -> KafkaBridge:
    """The process's bridge for this release, user classpath and jar set (started on first use, closed at exit)."""
    key = (version, tuple(classpath), server)
    with _shared_lock:
        bridge = _shared.get(key)
        if bridge is None or bridge._proc is None:
            bridge = KafkaBridge(version, classpath=classpath, server=server).start()
            _shared[key] = bridge
        return bridge


@atexit.register
def _close_shared() -> None:
    for bridge in list(_shared.values()):
        bridge.close()
