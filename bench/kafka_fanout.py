"""What the million-input differential benches share: one JVM per release, fed the same lines at once.

`Fanout(versions)` starts a `KafkaBridge` per release and sends a batch to all of them concurrently
(`KafkaBridge.roundtrip` blocks in pipe reads, so one thread per bridge overlaps the JVMs with each
other and with the caller's Python, which meanwhile runs our reference and draws the next batch).
It keeps, per release, the wall time of its round trips and, at the end, its JVM's CPU time, so a
bench can print Kafka's rate beside our reference's CPU rate, both measured in the same run.

`Tally` counts per (algorithm, release): inputs compared, declined (our reference does not model the
input for that release), differences, and keeps the smallest difference found.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcheck.reference.kafka_bridge import KafkaBridge

ROOT = Path(__file__).resolve().parent.parent
# Without -OmitStackTraceInFastThrow, HotSpot throws a hot method's implicit exceptions (an array index
# out of bounds) preallocated, message null, once it has compiled it: the messages would stop matching.
JAVA_OPTIONS = ("-XX:+UseSerialGC", "-XX:-OmitStackTraceInFastThrow")


def load_tests_module(name: str):
    """A tests/ module (the differential tests' generators), importable from a bench run as a script."""
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    return __import__(name)


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux /proc), 0 where unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


class Fanout:
    """One bridge per release; `submit` sends each release its batches concurrently, one thread per release."""

    def __init__(self, versions: Sequence[str], timeout: float = 300.0, server: bool = False) -> None:
        self.versions = list(versions)
        # server: the broker-side bridge (the broker's jars and Mockito), for the words only the broker's classes answer
        self.bridges = {v: KafkaBridge(v, java_options=JAVA_OPTIONS, timeout=timeout, server=server)
                        for v in self.versions}
        self.pool = ThreadPoolExecutor(max_workers=max(1, len(self.versions)))
        self.wall: dict[tuple[str, str], float] = {}  # (release, label) -> seconds in round trips
        self.cpu: dict[tuple[str, str], float] = {}  # (release, label) -> the JVM's CPU seconds meanwhile

    def __enter__(self) -> Fanout:
        for b in self.bridges.values():
            b.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.shutdown(wait=True)
        for b in self.bridges.values():
            b.close()

    def require(self, word: str, what: str) -> None:
        for b in self.bridges.values():
            b.require(word, what)

    def jvm_cpu(self, version: str) -> float:
        proc = self.bridges[version]._proc  # the JVM this bridge started
        return _cpu_seconds(proc.pid) if proc is not None else 0.0

    def _run(self, version: str, batches: list[tuple[str, list[str]]], timed: bool) -> dict[str, list[str]]:
        out = {}
        for label, lines in batches:
            c0, t0 = self.jvm_cpu(version), time.perf_counter()
            out[label] = self.bridges[version].roundtrip(lines)
            if timed:
                key = (version, label)
                self.wall[key] = self.wall.get(key, 0.0) + time.perf_counter() - t0
                self.cpu[key] = self.cpu.get(key, 0.0) + self.jvm_cpu(version) - c0
        return out

    def submit(self, batches: dict[str, list[tuple[str, list[str]]]], timed: bool = True
               ) -> dict[str, Future[dict[str, list[str]]]]:
        """`{release: [(label, lines), ...]}` -> `{release: future of {label: answers}}`; untimed to warm the JIT."""
        return {v: self.pool.submit(self._run, v, bs, timed) for v, bs in batches.items()}


@dataclass
class Tally:
    inputs: int = 0  # sent to Kafka
    declined: int = 0  # our reference does not model this release's code for the input
    differences: int = 0
    smallest: tuple[int, Any, Any, Any] | None = None  # (size, input, ours, kafka)

    @property
    def compared(self) -> int:
        return self.inputs - self.declined

    def difference(self, size: int, problem: Any, mine: Any, real: Any) -> None:
        self.differences += 1
        if self.smallest is None or size < self.smallest[0]:
            self.smallest = (size, problem, mine, real)


@dataclass
class Clock:
    """CPU seconds of this thread per named phase (our reference per profile, generation, ...)."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.thread_time()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.thread_time() - t0


def stop_on_signal() -> threading.Event:
    """SIGTERM or SIGINT ends a long run after its current batch, and the figures so far are printed."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f}" if seconds > 0 else "-"
