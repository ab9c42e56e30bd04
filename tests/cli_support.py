"""What the CLI tests share: run kcheck in-process, hold an error to one line, write a user's module."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable

from kcheck.cli import main


def run(capsys, *args):
    """`kcheck ARGS` in this process: (exit code, stdout, stderr)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str, *fragments: str) -> None:
    assert err.count("\n") == 1 and err.startswith("kcheck: error: "), err
    assert "Traceback" not in err
    for f in fragments:
        assert f in err, (f, err)


def write_module(tmp_path, monkeypatch, body: str) -> str:
    """A fresh module (unique name: modules stay imported between tests) on sys.path; returns its name."""
    name = "plug_" + uuid.uuid4().hex[:10]
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


# `python -c RUNNER ARGS...` runs kcheck's command line and says when it is about to run (the imports done), so a
# test signals it in the command's work, not in Python's start-up
RUNNER = "import sys; from kcheck.cli import main; print('ready', flush=True); sys.exit(main(sys.argv[1:]))"
# The checkpoint tests' searches (one process, workers, Spark): today's protocol over a complete space of about
# 5,000 states, and a historical row whose shortest counterexample is 8 steps deep (about 8,000 states)
_ZERO = ["--fences", "0", "--elections", "0", "--isr-shrinks", "0", "--failovers", "0", "--reads", "0",
         "--no-duplicates", "--atomic-fetch"]
CHECKPOINT_CLEAN = ["exhaust", "--brokers", "2", "--replication-factor", "2", "--min-isr", "1", "--records", "1",
                    "--crashes", "0", "--lossy-crashes", "1", *_ZERO]
CHECKPOINT_FAILS = ["exhaust", "--protocol", "truncate-to-hw-lossy", "--atomic-fetch"]


def sigterm_when_ready(proc: subprocess.Popen[str], ready: Callable[[], bool], why: str, group: bool, what: str,
                       wait_s: float) -> tuple[str, str, float]:
    """Once `ready()` (polled for up to `wait_s`; `why` says what it waits for), SIGTERM the search (its process
    group if `group`, as a service manager stops it), and return its stdout, stderr and the seconds from the signal
    to its end; its group must be gone (`what` names what was still running), and is killed whatever happens."""
    try:
        deadline = time.monotonic() + wait_s
        while not ready():
            assert proc.poll() is None and time.monotonic() < deadline, why
            time.sleep(0.01)
        sent = time.monotonic()
        (os.killpg if group else os.kill)(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        seconds = time.monotonic() - sent
        wait_group_gone(proc.pid, what)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return out, err, seconds


def wait_group_gone(group: int, what: str) -> None:
    """Waits up to 20 s until no process of the process group is left (a killed search's workers or JVM end on their
    own); else kills the group and fails, saying `what` was still running."""
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            os.killpg(group, 0)
            time.sleep(0.05)
    except ProcessLookupError:
        return
    os.killpg(group, signal.SIGKILL)
    raise AssertionError(f"{what} still running 20 s later")
