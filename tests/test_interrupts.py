"""Ctrl-C and SIGTERM end a long command promptly and cleanly (runtime/interrupts.py), and a plug-in that ends the
process or hangs cannot make a gate pass (kcheck/isolation.py).

The interrupt cases run kcheck as a subprocess and send the signal once the work is under way (after a progress
line, or a moment after the command line was parsed), so that the signal lands in the search, the solver or the
Spark job and not in Python's start-up: one line on stderr, exit 130, within a few seconds, no output file, no
process of the run left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cli_support import RUNNER
from kcheck.cli import main

LINE = "kcheck: interrupted ("


def _session(pid: int) -> list[str]:
    """The live processes of session `pid` (one already ended and not yet reaped by its parent is not running)."""
    out = subprocess.run(["ps", "-eo", "pid=,sid=,stat=,args="], capture_output=True, text=True).stdout
    rows = [line.split(maxsplit=3) for line in out.splitlines()]
    return [" ".join(r) for r in rows if r[1:2] == [str(pid)] and not r[2].startswith("Z")]


def _interrupt(argv: list[str], tmp_path: Path, signum: int = signal.SIGINT, after: float = 1.5,
               wait_for: str | None = None, tmpdir: Path | None = None) -> tuple[int, list[str], float]:
    """Run `kcheck argv` in tmp_path, signal it `after` seconds into the work (or after a stderr line containing
    `wait_for`, or once a file of lz4-java's, which Spark's JVM extracts into its temporary folder, is under
    `tmpdir`, the run's $TMPDIR), and return (exit status, stderr lines, seconds from the signal to the end)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / ".cache"), **({"TMPDIR": str(tmpdir)} if tmpdir else {})}
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, *argv], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline() == "ready\n"
        lines: list[str] = []
        if wait_for is not None:
            while wait_for not in (line := proc.stderr.readline()):
                assert line, f"kcheck {' '.join(argv)} ended before '{wait_for}': {lines[-3:]}"
                lines.append(line)
        deadline = time.monotonic() + 120
        while tmpdir is not None and not any(tmpdir.rglob("liblz4-java*")):
            assert proc.poll() is None and time.monotonic() < deadline, "no JVM file under $TMPDIR"
            time.sleep(0.05)
        time.sleep(after)
        assert proc.poll() is None, "the command ended before the signal: give it more work"
        sent = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        seconds = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    time.sleep(0.3)
    left = _session(proc.pid)
    for line in left:
        os.kill(int(line.split()[0]), signal.SIGKILL)
    assert not left, f"still running after the interrupt: {left}"
    return proc.returncode, [*lines, *err.splitlines()], seconds


def _assert_stopped(code: int, lines: list[str], seconds: float, signum: int = signal.SIGINT) -> None:
    name = "SIGTERM" if signum == signal.SIGTERM else "SIGINT"
    assert code == 130, (code, lines[-5:])
    assert lines and lines[-1] == f"kcheck: interrupted ({name}): stopped, no output written", lines[-5:]
    assert not any(line.startswith(("kcheck: error", "Traceback", "ERROR")) or "py4j" in line.lower()
                   for line in lines), lines
    assert seconds < 5, seconds  # a second or two; 5 leaves room for a loaded CI machine


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_ends_exhaust_and_its_workers(workers: str, tmp_path: Path, monkeypatch: Any) -> None:
    code, lines, seconds = _interrupt(["exhaust", "--brokers", "3", "--records", "2", "--workers", workers,
                                       "--progress", "--out", "t.json"], tmp_path, wait_for="kcheck exhaust:")
    _assert_stopped(code, lines, seconds)
    assert sum(LINE in line for line in lines) == 1
    assert not (tmp_path / "t.json").exists()
    # the next run works: nothing the interrupted one left (a spill, a lock) is in its way
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache"))
    assert main(["exhaust", "--brokers", "3", "--records", "2", "--workers", workers, "--max-states", "200",
                 "--out", "t.json"]) == 4


def test_ctrl_c_interrupts_z3_inside_a_query(tmp_path: Path) -> None:
    """Z3 catches SIGINT itself (its ctrl_c parameter) and cancels only the query it is in: prove went on to the
    next query for minutes. The solver is now interrupted from the watcher thread."""
    code, lines, seconds = _interrupt(["prove", "--max-brokers", "8", "--max-partitions", "20", "--timeout", "600",
                                       "--junit-xml", "r.xml"], tmp_path, after=2.0)
    _assert_stopped(code, lines, seconds)
    assert not (tmp_path / "r.xml").exists()


def test_sigterm_ends_liveness(tmp_path: Path) -> None:
    code, lines, seconds = _interrupt(["liveness", "--brokers", "3", "--records", "2", "--out", "t.json"], tmp_path,
                                      signum=signal.SIGTERM)
    _assert_stopped(code, lines, seconds, signal.SIGTERM)
    assert not (tmp_path / "t.json").exists()


@pytest.mark.spark
@pytest.mark.slow
def test_ctrl_c_ends_a_spark_sweep_quietly(tmp_path: Path) -> None:
    """Spark's JVM is killed and muted: no Py4J traceback and no Spark ERROR line before kcheck's line, and its
    Python workers end with it. What the JVM keeps in its temporary folder (lz4-java's native library, Spark's block
    manager), which a JVM killed so cannot remove, is in a folder kcheck made under $TMPDIR and goes with it."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    code, lines, seconds = _interrupt(["sweep-log", "--axis", "consumer.lag.ms=0..100s/1s"], tmp_path, after=8.0,
                                      tmpdir=scratch)
    _assert_stopped(code, lines, seconds)
    assert not list(scratch.iterdir())


# ---- plug-ins that end the process or never return (kcheck/isolation.py) ---------------------------------------

EXITS = "import os\ndef place(*args, **kwargs):\n    os._exit(0)\n"
HANGS = "def place(*args, **kwargs):\n    while True:\n        pass\n"
INVARIANT_EXITS = ("import os\nfrom kcheck.invariants.registry import Severity, register\n\n"
                   "@register('user.exits', 'exits', Severity.HARD, 'test', 'placement')\n"
                   "def exits(subject):\n    os._exit(0)\n")


def _plugin(tmp_path: Path, monkeypatch: Any, name: str, source: str) -> None:
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("argv", [
    ["check", "--placer", "kc_exits_now:place"],  # a gate: isolated by default
    ["place", "--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2", "--placer",
     "kc_exits_now:place", "--isolate-plugins"],
])
def test_a_plugin_that_ends_the_process_fails_the_gate(argv: list[str], tmp_path: Path, monkeypatch: Any,
                                                       capsys: Any) -> None:
    _plugin(tmp_path, monkeypatch, "kc_exits_now", EXITS)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err == ("kcheck: error: kc_exits_now:place: ended the process before kcheck finished (os._exit, a signal "
                   "or a crash in its code): a plug-in never decides the exit status\n")
    assert out == ""


def test_an_invariant_that_ends_the_process_fails_the_gate(tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    _plugin(tmp_path, monkeypatch, "kc_inv_exits", INVARIANT_EXITS)
    assert main(["check", "--invariants", "kc_inv_exits", "--placer", "striped"]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("kcheck: error: kc_inv_exits: ended the process before kcheck finished") and \
        err.count("\n") == 1


def test_a_plugin_that_hangs_is_stopped_at_its_time_limit(tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    _plugin(tmp_path, monkeypatch, "kc_hangs", HANGS)
    started = time.monotonic()
    assert main(["check", "--placer", "kc_hangs:place", "--plugin-timeout", "1"]) == 2
    _, err = capsys.readouterr()
    assert err == "kcheck: error: kc_hangs:place: a plug-in call ran longer than --plugin-timeout 1 s; stopped\n"
    assert time.monotonic() - started < 30


def test_without_isolation_the_plugin_runs_in_this_process(tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    """--no-isolate-plugins: the in-process path (what a debugger needs); the plug-in's own failures are still one
    line, exit 2."""
    _plugin(tmp_path, monkeypatch, "kc_raises", "def place(*a, **k):\n    raise ValueError('boom')\n")
    assert main(["check", "--placer", "kc_raises:place", "--no-isolate-plugins"]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("kcheck: error: plug-in kc_raises:place: ValueError: boom")


@pytest.mark.spark
@pytest.mark.slow
def test_ctrl_c_in_a_sweep_says_what_its_store_keeps(tmp_path: Path) -> None:
    """An interrupted `sweep` leaves no store it created and stored nothing in (the next run needs no --resume)."""
    code, lines, seconds = _interrupt(["sweep", "placement", "--space", "large", "--master", "local[1]", "--out",
                                       "s"], tmp_path, after=12.0)
    assert code == 130 and seconds < 5, (code, lines[-3:])
    assert lines[-1].startswith("kcheck: interrupted (SIGINT): stopped, no output written; "), lines[-3:]
    assert not (tmp_path / "s").exists() or "--resume continues" in lines[-1], lines[-1]


def test_an_interrupted_sweep_removes_only_an_empty_store_it_created(tmp_path: Path) -> None:
    from kcheck.commands.sweep import _left_behind, build_space
    from kcheck.spark_check.store import ResultStore

    space = build_space("placement", "small", None, None, None)
    for created in (True, False):
        store = ResultStore(str(tmp_path / f"s{created}"))
        store.begin(space, resume=False).release()
        said = _left_behind(store, created)
        assert (tmp_path / f"s{created}").exists() is not created, said
        assert said.endswith("stored nothing in") if created else "the 0 range(s)" in said
    kept = tmp_path / "sTrue"
    store = ResultStore(str(kept))
    store.begin(space, resume=False).release()
    (kept / "violations" / "0-10.parquet").write_bytes(b"")  # a range on disk (its name is all that is read)
    assert store.stored_ranges() == [(0, 10)]
    # kept for --resume, even by the run that created the store
    assert "the 1 range(s) stored so far: --resume continues" in _left_behind(store, True) and kept.exists()
