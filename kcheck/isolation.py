"""`--isolate-plugins`: a command run in a child process, so that a plug-in cannot decide the exit status.

A user's module (--invariants, --placer, --assignor, --protocol module:object) runs inside kcheck. Whatever it
raises is already its failure (exit 2, kcheck.reference.plugins), but `os._exit(0)` ends the process with the
status a CI gate reads as a pass, and an endless loop never ends. Isolated, the command runs in a forked child
(in its own process group) that reports its exit status to this process through a pipe when it is done; the
child's plug-in calls are timed through `plugins.watcher` (a shared page: which plug-in runs, since when). Then:

- the child ends without reporting (os._exit, a signal, a crash in C): exit 2, naming the plug-in that was
  running, or every plug-in given when none was;
- a plug-in call runs longer than --plugin-timeout: the child's process group is killed, exit 2 naming it.

The fork costs milliseconds and the watcher a test and two stores per plug-in call, so the gate commands (check,
sweep) isolate by default when a Python plug-in is given; `--no-isolate-plugins` runs it in this process.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import math
import mmap
import os
import signal
import struct
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any

import typer

from kcheck.inputs.formats import InputError
from kcheck.runtime import interrupts

DEFAULT_TIMEOUT = 60.0  # seconds one plug-in call may take (a placer, an assignor, a rule, an invariant check)
MAX_TIMEOUT = 86_400.0
_SPEC = 240  # bytes of the running plug-in's name kept in the shared page
_PAGE = struct.Struct(f"qq{_SPEC}s")  # nesting depth, start (monotonic ns), spec

IsolateOpt = Annotated[bool | None, typer.Option(
    "--isolate-plugins/--no-isolate-plugins",
    help="Run the command in a child process that times each plug-in call (--plugin-timeout): a plug-in that "
         "ends the process (os._exit) or hangs is a failure, exit 2. Default: on for check and sweep (the CI "
         "gates) when a Python plug-in is given, off elsewhere.")]
PluginTimeoutOpt = Annotated[float, typer.Option(
    "--plugin-timeout", metavar="SECONDS",
    help="With --isolate-plugins: the longest one plug-in call may run before the command fails (exit 2).")]


class _Watcher:
    """The child's side: writes which plug-in runs, and since when, into the page shared with the parent."""

    def __init__(self, page: mmap.mmap) -> None:
        self.page = page
        self.depth = 0

    def enter(self, spec: str) -> None:
        self.depth += 1
        if self.depth == 1:
            self.page[:_PAGE.size] = _PAGE.pack(1, time.monotonic_ns(), spec.encode("utf-8", "replace")[:_SPEC])

    def leave(self) -> None:
        self.depth -= 1
        if self.depth == 0:
            self.page[:16] = struct.pack("qq", 0, 0)


def _running(page: mmap.mmap) -> tuple[str, float] | None:
    """The plug-in the child runs now and for how many seconds, or None."""
    depth, started, spec = _PAGE.unpack(page[:_PAGE.size])
    if not depth or not started:
        return None
    return spec.rstrip(b"\0").decode("utf-8", "replace"), (time.monotonic_ns() - started) / 1e9


def user_plugins(kwargs: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    """The Python plug-ins a command's options name: module:object specs (not jvm:, not built-in names) and
    --invariants modules."""
    found: list[str] = []
    for name in names:
        value = kwargs.get(name)
        values = value if isinstance(value, list | tuple) else [value] if isinstance(value, str) else []
        for v in values:
            for spec in (s.strip() for s in str(v).split(",")):
                if spec and (name == "invariants" or (":" in spec and not spec.startswith("jvm:"))):
                    found.append(spec)
    return found


def isolating(plugin_options: tuple[str, ...],
              gate: bool = False) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """A command that takes user plug-ins in `plugin_options`, with --isolate-plugins and --plugin-timeout."""
    def wrap(fn: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(fn)
        def command(*args: Any, isolate_plugins: bool | None = None, plugin_timeout: float = DEFAULT_TIMEOUT,
                    **kwargs: Any) -> int:
            if not (math.isfinite(plugin_timeout) and 0 < plugin_timeout <= MAX_TIMEOUT):
                raise InputError("--plugin-timeout", f"{plugin_timeout} is outside (0, {MAX_TIMEOUT:,.0f}] seconds")
            specs = user_plugins(kwargs, plugin_options)
            isolate = (gate and bool(specs)) if isolate_plugins is None else isolate_plugins
            if not isolate or os.environ.get("KCHECK_ISOLATED") or not hasattr(os, "fork"):
                return fn(*args, **kwargs)
            return run_isolated(lambda: fn(*args, **kwargs), specs, plugin_timeout)

        sig = inspect.signature(fn, eval_str=True)  # the annotations as objects: Typer reads them from here
        extra = [inspect.Parameter("isolate_plugins", inspect.Parameter.KEYWORD_ONLY, default=None,
                                   annotation=IsolateOpt),
                 inspect.Parameter("plugin_timeout", inspect.Parameter.KEYWORD_ONLY, default=DEFAULT_TIMEOUT,
                                   annotation=PluginTimeoutOpt)]
        command.__signature__ = sig.replace(parameters=[*sig.parameters.values(), *extra])  # type: ignore[attr-defined]
        command.__annotations__ = {**{p.name: p.annotation for p in sig.parameters.values()},
                                   "return": sig.return_annotation, "isolate_plugins": IsolateOpt,
                                   "plugin_timeout": PluginTimeoutOpt}
        del command.__wrapped__  # Typer would read the original's signature through it
        return command
    return wrap


def _child(run: Callable[[], int], page: mmap.mmap, report_fd: int, relay: tuple[int, int] | None) -> None:
    """In the forked child: run the command (errors as one line, as main() prints them), report the status."""
    from kcheck.errors import main_errors
    from kcheck.reference import plugins

    code = 2
    try:
        os.setpgid(0, 0)  # the parent kills the whole group (a JVM or workers the command started) on a timeout
        os.environ["KCHECK_ISOLATED"] = "1"
        if relay is not None:  # the parent's stdout and stderr are Python objects (tests): sent back on pipes
            sys.stdout, sys.stderr = (io.TextIOWrapper(os.fdopen(fd, "wb", buffering=0), write_through=True)
                                      for fd in relay)
        plugins.watcher = _Watcher(page)
        with interrupts.handling(quiet=True):
            code = main_errors(run)
            if interrupts.interrupted() is not None:
                code = interrupts.INTERRUPTED
        # os._exit skips the exit handlers, which would stop a Spark session and remove its JVM's folder: what the
        # command started is ended and its scratch removed here, interrupted or not
        interrupts.cleanup()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os.write(report_fd, struct.pack("i", code))
    finally:
        os._exit(code)


def run_isolated(run: Callable[[], int], specs: list[str], timeout: float) -> int:
    """`run()` in a forked child with each plug-in call timed; its exit status, or InputError (exit 2) naming the
    plug-in that ended the child or ran out of time."""
    page = mmap.mmap(-1, mmap.PAGESIZE)
    report_r, report_w = os.pipe()
    try:
        inherit = sys.stdout.fileno() == 1 and sys.stderr.fileno() == 2
    except (OSError, ValueError, io.UnsupportedOperation):
        inherit = False
    pipes = None if inherit else (os.pipe(), os.pipe())
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    pid = os.fork()
    if pid == 0:
        os.close(report_r)
        if pipes is not None:
            os.close(pipes[0][0])
            os.close(pipes[1][0])
        _child(run, page, report_w, None if pipes is None else (pipes[0][1], pipes[1][1]))
    os.close(report_w)
    relays = {}
    if pipes is not None:
        for (r, w), stream in zip(pipes, (sys.stdout, sys.stderr), strict=True):
            os.close(w)
            relays[r] = stream
    interrupts.child(pid)
    try:
        status, late = _wait(pid, page, report_r, relays, timeout)
    except interrupts.Interrupted:  # the child was sent the signal too: give it its grace to clean up
        _signal_group(pid, signal.SIGINT)
        deadline = time.monotonic() + interrupts.GRACE
        while time.monotonic() < deadline and os.waitpid(pid, os.WNOHANG) == (0, 0):
            time.sleep(0.05)
        _signal_group(pid, signal.SIGKILL)
        raise
    finally:
        for fd in (report_r, *relays):
            os.close(fd)
    if late is not None:
        raise InputError(late[0], f"a plug-in call ran longer than --plugin-timeout {timeout:g} s; stopped")
    if status is not None:
        return status
    running = _running(page)
    name = running[0] if running else ", ".join(specs) or "a plug-in"
    raise InputError(name, "ended the process before kcheck finished (os._exit, a signal or a crash in its code): "
                           "a plug-in never decides the exit status")


def _signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signum)


def _wait(pid: int, page: mmap.mmap, report_r: int, relays: dict[int, Any],
          timeout: float) -> tuple[int | None, tuple[str, float] | None]:
    """Wait for the child: (its reported status or None, the plug-in that ran out of time or None)."""
    import select

    report = b""
    fds = [report_r, *relays]
    while fds:
        ready, _, _ = select.select(fds, [], [], 0.1)
        for fd in ready:
            data = os.read(fd, 65536)
            if not data:
                fds.remove(fd)
            elif fd in relays:
                relays[fd].write(data.decode("utf-8", "replace"))
            else:
                report += data
        running = _running(page)
        if running is not None and running[1] > timeout:
            _signal_group(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None, running
    os.waitpid(pid, 0)
    _signal_group(pid, signal.SIGKILL)  # whatever the child left running in its group
    return (struct.unpack("i", report[:4])[0] if len(report) >= 4 else None), None


__all__ = ["DEFAULT_TIMEOUT", "IsolateOpt", "PluginTimeoutOpt", "isolating", "run_isolated", "user_plugins"]
