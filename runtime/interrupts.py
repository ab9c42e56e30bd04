"""Ctrl-C and SIGTERM: every command ends within a second or two, with one line on stderr and exit 130.

Python turns SIGINT into KeyboardInterrupt only when the main thread runs Python code again; code blocked in C
(Z3's solver, a socket read from Spark's JVM) would keep the process for minutes. So while a command runs, the
signals' wakeup file descriptor wakes a watcher thread at once, which runs the cancel hooks the command
registered (Z3's interrupt, muting and killing Spark's JVM) and, if the command has still not ended GRACE seconds
later, ends the process itself: the partial files it registered are removed, the child processes it registered
killed, the one line printed, exit 130. A plug-in or library that swallows KeyboardInterrupt cannot keep the
process either: `main()` answers 130 whenever a signal came, whatever exception the interrupt became.

The commands that drive a real cluster undo what they did before that line: under `shielded()` (the signals ignored,
the watcher's grace extended up to SHIELD_S) they stop the nodes they started and resume or start again what they
paused or stopped of a cluster they were given (`--dir`); those nodes are `spare`d (the clean-up never kills them),
and what was undone is added to the line (`note`). kafka-python turns an interrupt inside its waits into a time-out
of its own; `check()`, called between the steps of a wait loop, raises it again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from kcheck.runtime.exit_codes import Exit

# Set on an interrupt while a Spark job runs: spark_check.job then forwards nothing more of the dying JVM's output.
SPARK_QUIET = threading.Event()

INTERRUPTED = int(Exit.INTERRUPTED)  # the shell's 128 + SIGINT, for SIGTERM too: one code a CI script can test
GRACE = 1.5  # seconds the command has to unwind by itself after the cancel hooks ran
SHIELD_S = 10.0  # at most this long, a clean-up under shielded() delays the end (it kills and resumes: < 1 s here)
DEFER_S = 60.0  # at most this long, a command under deferred() takes to stop where it can save (a checkpoint)


class _State:
    signum: int | None = None  # the signal that came, while a command runs
    cancels: list[Callable[[], None]] = []
    children: set[int] = set()  # process ids to SIGKILL when the process ends itself
    partial: set[str] = set()  # files being written, removed when the process ends itself
    active = False  # a command runs under handling()
    quiet = False  # a child of --isolate-plugins: its parent prints the line
    deferred = False  # the signal came while the main thread ran a finalizer: to be delivered again
    spared: set[int] = set()  # processes kcheck started that must outlive it (nodes of a cluster given with --dir)
    notes: list[str] = []  # what the command undid, for the line
    shielded = 0  # a clean-up runs (shielded()): the signals are ignored and the watcher waits for it
    deferring = 0.0  # under deferred(): how long the watcher waits for the command to stop by itself
    received = 0  # signals recorded under deferred()


_state = _State()
# Folders kcheck made for a child's temporary files (Spark's JVM): a child killed by the clean-up cannot remove what
# it put there, and the process then ends without its exit handlers. For the process, not per command: a Spark
# session outlives the command that started it. Each with the process that made it: a forked child
# (--isolate-plugins) inherits the parent's and must leave them.
_scratch: dict[str, int] = {}


def interrupted() -> int | None:
    """The signal number that interrupted the running command, or None."""
    return _state.signum


def line() -> str:
    name = "SIGTERM" if _state.signum == signal.SIGTERM else "SIGINT"
    return f"kcheck: interrupted ({name}): stopped, no output written" + "".join(f"; {n}" for n in _state.notes)


def note(text: str) -> None:
    """Something the interrupted command undid, said in its line (a broker resumed, a cluster it started stopped)."""
    _state.notes.append(text)


def spare(pid: int) -> None:
    """A process kcheck started that must outlive an interrupt: a node it started again in a cluster the user gave
    (`--dir`), which is the user's. The clean-up never kills it."""
    _state.spared.add(pid)


def by_interrupt(e: BaseException) -> bool:
    """True if `e` is the interrupt, or what it became on its way up (a library's time-out, a cut-short request)."""
    return isinstance(e, (Interrupted, KeyboardInterrupt)) or _state.signum is not None


def check() -> None:
    """Raise Interrupted if a signal came and what ran since swallowed it (kafka-python answers a KeyboardInterrupt in
    its waits with a time-out of its own): wait loops call this between tries. Not during a clean-up."""
    if _state.signum is not None and not _state.shielded and threading.current_thread() is threading.main_thread():
        raise Interrupted(_state.signum)


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Meanwhile SIGINT and SIGTERM are ignored and the watcher waits (up to SHIELD_S): an undo runs to its end."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    _state.shielded += 1
    try:
        yield
    finally:
        _state.shielded -= 1
        for s, handler in before.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def deferred(limit: float = DEFER_S) -> Iterator[None]:
    """Meanwhile a first SIGINT or SIGTERM is only recorded (`interrupted()` answers it): the command polls it,
    stops where it can save its work (a search's checkpoint) and raises Interrupted itself; the watcher waits up to
    `limit` seconds for that. A second signal raises at once (what was saved before stays whole)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _state.received = 0
    before = {s: signal.signal(s, _record) for s in (signal.SIGINT, signal.SIGTERM)}
    _state.deferring = limit
    try:
        yield
    finally:
        _state.deferring = 0.0
        for s, handler in before.items():
            signal.signal(s, handler)


def _record(signum: int, frame: Any) -> None:
    _state.received += 1
    _state.signum = _state.signum or signum
    if _state.received > 1:
        raise Interrupted(signum)


def on_interrupt(cancel: Callable[[], None]) -> Callable[[], None]:
    """Run `cancel` (from another thread) as soon as a signal comes; returns a function that unregisters it."""
    _state.cancels.append(cancel)
    return lambda: _state.cancels.remove(cancel) if cancel in _state.cancels else None


def z3_interruptible() -> None:
    """Z3 solves in C with its own SIGINT handler (param ctrl_c), which cancels the one query and hides the signal
    from Python, so the next query starts: turn it off and interrupt Z3's context from the watcher instead."""
    import z3

    z3.set_param("ctrl_c", False)
    on_interrupt(lambda: z3.main_ctx().interrupt())


def _stop_spark() -> None:
    """A Spark job in flight: its JVM (and so its Python workers, which end with it) killed at once, and nothing
    more of it printed (its errors about the jobs it loses, Py4J's about the connection)."""
    if "pyspark" not in sys.modules:
        return
    import logging

    from pyspark import SparkContext

    SPARK_QUIET.set()
    for name in ("py4j", "py4j.clientserver", "py4j.java_gateway", "pyspark"):
        logging.getLogger(name).disabled = True
    logging.getLogger().disabled = True  # Py4J logs a call that finds the JVM gone on the root logger
    # the driver's accumulator server (a socketserver thread) prints a traceback when the JVM's connection drops;
    # a search that saves its checkpoints lives on for a moment after this and would show it
    server = getattr(getattr(SparkContext, "_active_spark_context", None), "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, address: None
    proc = getattr(getattr(SparkContext, "_gateway", None), "proc", None)
    if proc is not None:
        child(proc.pid)
        with contextlib.suppress(OSError):
            os.kill(proc.pid, signal.SIGKILL)


def scratch(path: str) -> None:
    """A folder kcheck made where a child it started keeps temporary files: removed by the clean-up, after the
    children are killed."""
    _scratch[path] = os.getpid()


def child(pid: int) -> None:
    """A process kcheck started that must not outlive an interrupt."""
    _state.children.add(pid)


@contextlib.contextmanager
def partial_file(path: str) -> Iterator[None]:
    """A file being written: removed if the process ends itself in the middle."""
    _state.partial.add(path)
    try:
        yield
    finally:
        _state.partial.discard(path)


class Interrupted(BaseException):
    """What a signal raises in the main thread: not KeyboardInterrupt, which Click answers with a blank line on
    stderr and which some libraries handle themselves; `except Exception` lets it through."""


def _raise(signum: int, frame: Any) -> None:
    _state.signum = signum
    # Objects the interrupt left half-built (a Z3 AST whose __init__ it cut) fail in their finalizers later;
    # Python would print each as "Exception ignored in ..." before kcheck's one line.
    sys.unraisablehook = lambda unraisable: None
    f = frame
    while f is not None:  # an exception raised in a finalizer is printed ("Exception ignored in ...") and dropped
        if f.f_code.co_name == "__del__":
            _state.deferred = True  # the watcher sends the signal again in a moment
            return
        f = f.f_back
    raise Interrupted(signum)


def reclaim() -> None:
    """Take SIGINT back from a library that set its own handler (PySpark's SparkContext does)."""
    if _state.active and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _raise)
        signal.signal(signal.SIGTERM, _raise)


def _descendants(root: int) -> list[int]:
    """Every live process below `root` (from /proc; empty where there is none): what kcheck started, directly or
    through a child (Spark's JVM and the Python workers it forks, a plug-in's isolated child)."""
    parents: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # after "pid (comm)": state, ppid, ...
        if len(fields) > 1 and fields[0] != b"Z":
            parents.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for kid in parents.get(todo.pop(), []):
            out.append(kid)
            todo.append(kid)
    return out


def cleanup() -> None:
    """Kill the processes this one started (registered, or found below it) and remove the partial files (an
    interrupt's last work)."""
    _state.children.update(_descendants(os.getpid()))
    _state.children -= _state.spared
    for pid in list(_state.children):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 0.5  # reaped, not left as zombies for a moment after kcheck's exit
    for pid in list(_state.children):
        with contextlib.suppress(OSError):
            while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
                time.sleep(0.01)
    for path in list(_state.partial):
        with contextlib.suppress(OSError):
            os.unlink(path)
    for path, maker in list(_scratch.items()):
        if maker == os.getpid():
            shutil.rmtree(path, ignore_errors=True)
            del _scratch[path]


def _watch(read_end: int, done: threading.Event) -> None:
    while True:
        try:
            data = os.read(read_end, 64)
        except OSError:
            return
        if done.is_set() or not data:
            return
        if not any(b in (signal.SIGINT, signal.SIGTERM) for b in data):
            continue
        _state.signum = _state.signum or (signal.SIGTERM if signal.SIGTERM in data else signal.SIGINT)
        for cancel in list(_state.cancels):
            with contextlib.suppress(Exception):
                cancel()
        began = time.monotonic()
        while not done.wait(0.05):
            if _state.deferred:  # the main thread was in a finalizer when the signal came: once more
                _state.deferred = False
                with contextlib.suppress(OSError):
                    os.kill(os.getpid(), _state.signum or signal.SIGINT)
            waited = time.monotonic() - began
            if (waited >= GRACE and not (_state.shielded and waited < SHIELD_S)
                    and not (_state.deferring and waited < _state.deferring and _state.received < 2)):
                break
        if done.is_set():
            return
        cleanup()  # the command did not unwind in time (blocked in C, or a plug-in swallowed the interrupt)
        with contextlib.suppress(OSError):
            if not _state.quiet:
                os.write(2, (line() + "\n").encode())
        os._exit(INTERRUPTED)


@contextlib.contextmanager
def handling(quiet: bool = False) -> Iterator[None]:
    """While a command runs: SIGINT and SIGTERM raise Interrupted, the watcher runs the cancel hooks. `quiet`: the
    process does not print the line itself (a child whose parent does)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _state.quiet = quiet
    _state.signum = None
    _state.cancels, _state.children, _state.partial = [_stop_spark], set(), set()
    _state.spared, _state.notes, _state.shielded = set(), [], 0
    _state.deferring, _state.received = 0.0, 0
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    done = threading.Event()
    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    previous = {s: signal.signal(s, _raise) for s in (signal.SIGINT, signal.SIGTERM)}
    watcher = threading.Thread(target=_watch, args=(read_end, done), name="kcheck-interrupts", daemon=True)
    watcher.start()
    _state.active = True
    unraisable = sys.unraisablehook
    try:
        yield
    finally:
        if _state.signum is None:  # interrupted: the process is ending, its last finalizers stay quiet
            sys.unraisablehook = unraisable
        _state.active = False
        done.set()
        for s, handler in previous.items():
            signal.signal(s, handler)
        signal.set_wakeup_fd(previous_fd)
        with contextlib.suppress(OSError):
            os.write(write_end, b"\0")  # wakes the watcher, which sees `done` and returns
        watcher.join(1.0)
        os.close(write_end)
        os.close(read_end)


def exit_now(code: int) -> None:
    """End the process without Python's exit handlers (Spark's would talk to the JVM just killed, and print its
    errors after kcheck's line); only when children were started."""
    if _state.children:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def progress_stream() -> object | None:
    """stderr when it is a terminal (progress is for people), else None."""
    return sys.stderr if sys.stderr.isatty() else None


__all__ = ["DEFER_S", "GRACE", "INTERRUPTED", "SHIELD_S", "Interrupted", "by_interrupt", "check", "child", "cleanup",
           "deferred", "exit_now", "handling", "interrupted", "line", "note", "on_interrupt", "partial_file",
           "progress_stream", "reclaim", "scratch", "shielded", "spare", "z3_interruptible"]
