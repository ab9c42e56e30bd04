"""The commands that touch real Kafka processes, jars and cluster folders hold the bad-input promise, delete only
what kcheck created, and stop cleanly on Ctrl-C and SIGTERM.

1. The tables of tests/bad_input_live.py (which the one corpus, tests/test_bad_input_corpus.py, imports): each case
   refused in one line, exit 2, and here also with the jar cache and the data files it names untouched (no
   release directory, no Maven run, no marker or state file changed).
2. Cluster folders by identity (kcheck.cluster.folder): stand-in nodes (sleeping Python processes whose command
   line is a node's) for the rules, and one real one-broker cluster (`cluster`) copied, moved and symlinked.
3. Special files: a FIFO as a state file or marker, a symbolic link loop as --dir, a huge state file.
4. Ctrl-C and SIGTERM at a random moment of `cluster up`, `chaos`, `replay --on-cluster` and `verify
   --bootstrap-server` (subprocesses, `cluster`): one line, exit 130, nothing left running, the next run works.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bad_input_live import LIVE_DATA, LIVE_EXTRA, LIVE_OPTIONS
from kcheck.cli import main
from test_bad_input_corpus import VALID
from test_bad_input_corpus import _assert_refused as assert_refused  # the corpus's one-line check

_CONTROL_RE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _ascii(value: str) -> str:
    shown = value.encode("unicode_escape").decode("ascii")
    return shown if len(shown) <= 24 else f"{shown[:16]}..{len(value)}"


def _cases() -> list[Any]:
    cases = []
    for label, (base, options) in LIVE_OPTIONS.items():
        for option, values in options.items():
            for i, value in enumerate(values):
                cases.append(pytest.param([*base, option, value], option, id=f"{label}{option}[{i}:{_ascii(value)}]"))
    for i, (argv, place) in enumerate(LIVE_EXTRA):
        cases.append(pytest.param(argv, place, id=f"extra[{i}:{_ascii(' '.join(argv))[-40:]}]"))
    return cases


def _snapshot(root: Path) -> dict[str, str]:
    out = {}
    if not root.exists():
        return out
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "<dir>"
    return out


def _workdir(root: Path) -> None:
    """The corpus's valid inputs (tests/test_bad_input_corpus.py's VALID), and an empty folder."""
    for name, text in VALID.items():
        (root / name).write_text(text)
    (root / "subdir").mkdir()


@pytest.mark.parametrize("argv, place", _cases())
def test_refused_before_any_cache_cluster_or_connection(argv: list[str], place: str, tmp_path: Path, capsys: Any,
                                                        monkeypatch: Any) -> None:
    work, cache = tmp_path / "work", tmp_path / "cache"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    monkeypatch.setattr(shutil, "which", _no_maven(shutil.which))
    _workdir(work)
    before, data = _snapshot(work), _snapshot(LIVE_DATA)
    began = time.monotonic()
    code = main(list(argv))
    took = time.monotonic() - began
    out, err = capsys.readouterr()
    assert_refused(code, out, err, place)
    assert _snapshot(work) == before
    assert _snapshot(LIVE_DATA) == data
    assert not (cache / "kcheck").exists() or _snapshot(cache / "kcheck") == {}, _snapshot(cache)
    assert took < 5, f"refused after {took:.1f} s"


def _no_maven(which: Any) -> Any:
    """`mvn` is never looked for: a case that would resolve a release fails loudly instead of downloading."""
    def guarded(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "mvn":
            raise AssertionError("a refused case looked for Maven")
        return which(name, *args, **kwargs)
    return guarded


# ---------------------------------------------------------------------------------------------------------
# 2. cluster folders by identity, with stand-in nodes (no JVM)

from kcheck.cluster.folder import ID_OPTION, STATE_FILE, claim, node_folder  # noqa: E402

SLEEP = "import time; time.sleep(120)"
_STARTED: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def _end_started():
    yield
    for p in _STARTED:
        if p.poll() is None:
            p.kill()
        p.wait()
    _STARTED.clear()


def _sleeper(*args: str) -> subprocess.Popen[bytes]:
    _STARTED.append(subprocess.Popen([sys.executable, "-c", SLEEP, *args], start_new_session=True))
    return _STARTED[-1]


def _node_argv(ident: str, properties: Path) -> list[str]:
    """A stand-in's arguments: those of a node kcheck starts, the cluster's id and, last, its properties file."""
    return [f"{ID_OPTION}{ident}", str(properties)]


def stand_in_cluster(where: Path, brokers: int = 2, extra_pids: tuple[int, ...] = ()) -> tuple[Path, str, list[Any]]:
    """A cluster folder as `kcheck cluster up` leaves it (marker, state file, node folders with properties, log and
    data), its nodes sleeping Python processes with a node's command line. `extra_pids`: more brokers in the state
    file whose PIDs are other processes."""
    real, ident = claim(where)
    procs, nodes = [], []
    for node_id in (1000, *range(1, brokers + 1)):
        folder = real / node_folder(node_id)
        (folder / "data").mkdir(parents=True)
        (folder / "data" / "meta.properties").write_text("node.id=1\n")
        (folder / "server.log").write_text("started\n")
        (folder / "server.properties").write_text(f"node.id={node_id}\n")
        p = _sleeper(*_node_argv(ident, folder / "server.properties"))
        procs.append(p)
        nodes.append({"node_id": node_id, "role": "controller" if node_id == 1000 else "broker", "port": 9000 + node_id,
                      "rack": None, "pid": p.pid, "sasl_port": None})
    for i, pid in enumerate(extra_pids, brokers + 1):
        (real / node_folder(i)).mkdir()
        nodes.append({"node_id": i, "role": "broker", "port": 9000 + i, "rack": None, "pid": pid, "sasl_port": None})
    state = {"version": "4.4.0", "cluster_id": "A" * 22, "directory": str(real), "id": ident,
             "controller": nodes[0], "brokers": nodes[1:]}
    (real / STATE_FILE).write_text(json.dumps(state, indent=2))
    return real, ident, procs


def _alive(procs: list[Any]) -> bool:
    return all(p.poll() is None for p in procs)


def _kcheck(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _refused(capsys: Any, *argv: str) -> str:
    code, out, err = _kcheck(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("kcheck: error: --dir: "), (code, err)
    return err


def test_a_copy_a_move_and_a_symlink_of_a_cluster_folder_are_refused_and_touch_nothing(tmp_path, capsys):
    a, _, procs = stand_in_cluster(tmp_path / "a")
    (a / "notes.txt").write_text("mine\n")
    copy = tmp_path / "b"
    shutil.copytree(a, copy, symlinks=True)  # cp -a
    link = tmp_path / "link"
    link.symlink_to(a)
    before_a, before_copy = _snapshot(a), _snapshot(copy)
    commands = (("cluster", "down"), ("cluster", "status"), ("cluster", "status", "--json"), ("chaos",),
                ("replay", str(tmp_path / "trace.json"), "--on-cluster"))
    (tmp_path / "trace.json").write_text(json.dumps(_trace()))
    for command in commands:
        err = _refused(capsys, *command, "--dir", str(copy))
        assert f"{copy} is a copy of the cluster folder {a}" in err, err
        err = _refused(capsys, *command, "--dir", str(link))
        assert f"{link} is a symbolic link (to {a}), not a cluster folder" in err, err
    assert _alive(procs) and _snapshot(a) == before_a and _snapshot(copy) == before_copy
    moved = tmp_path / "moved"
    a.rename(moved)  # mv
    for command in commands:
        err = _refused(capsys, *command, "--dir", str(moved))
        assert f"{moved} was moved or copied from {a}" in err and f"move it back to {a}" in err, err
    assert _alive(procs) and _snapshot(moved) == before_a
    moved.rename(a)
    code, out, err = _kcheck(capsys, "cluster", "down", "--dir", str(a))
    assert code == 0, err
    assert not any(p.poll() is None for p in procs)
    assert sorted(p.name for p in a.iterdir()) == ["notes.txt"]  # the user's own file, and nothing else of kcheck's
    assert err == f"kcheck cluster: stopped in {err.split('stopped in ')[1].split(' s;')[0]} s; removed kcheck's " \
                  f"files from {a}; left {a / 'notes.txt'} (not created by kcheck)\n"
    assert _snapshot(copy) == before_copy  # the copy: untouched


def test_only_the_processes_started_for_the_folder_are_stopped(tmp_path, capsys):
    """A moved folder's nodes still name the old path: a new cluster set up there is told from them by the id; a PID
    the state file names that is not one of its nodes (another process, a node of another cluster) is never hit."""
    a, _, old = stand_in_cluster(tmp_path / "a")
    a.rename(tmp_path / "moved")
    stranger = _sleeper()  # any process
    impostor = _sleeper(*_node_argv("f" * 32, a / "broker-3" / "server.properties"))  # another cluster's id
    a2, _, new = stand_in_cluster(a, extra_pids=(stranger.pid, impostor.pid))
    code, _, err = _kcheck(capsys, "cluster", "status", "--dir", str(a2))
    assert code == 1  # brokers 3 and 4 are not running: their PIDs are not theirs
    code, _, err = _kcheck(capsys, "cluster", "down", "--dir", str(a2))
    assert code == 0, err
    assert not any(p.poll() is None for p in new)
    assert _alive([*old, stranger, impostor])
    assert not a2.exists()


def _trace() -> dict[str, Any]:
    from test_bad_input_corpus import TRACE

    return TRACE


# ---------------------------------------------------------------------------------------------------------
# 3. special and corrupt files in a cluster folder, symbolic link loops


def _run_kcheck(*argv: str, cwd: Path, timeout: float = 30, own_cache: bool = True,
                ) -> subprocess.CompletedProcess[str]:
    """kcheck in a subprocess: a FIFO read would hang it, and the timeout says so. `own_cache`: an empty cache in
    `cwd` (a refusal never needs the jars; a command that runs does)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cwd)} if own_cache else None
    try:
        return subprocess.run([sys.executable, "-m", "kcheck", *argv], cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"kcheck {' '.join(argv)} hung")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes")
@pytest.mark.parametrize("which", [STATE_FILE, "kcheck-cluster.marker"])
def test_a_fifo_for_a_state_file_or_marker_is_refused_not_waited_on(tmp_path, which):
    a, _, procs = stand_in_cluster(tmp_path / "a")
    (a / which).unlink()
    os.mkfifo(a / which)
    for command in (("cluster", "down"), ("cluster", "status"), ("chaos",)):
        done = _run_kcheck(*command, "--dir", str(a), cwd=tmp_path)
        assert_refused(done.returncode, done.stdout, done.stderr, "--dir")
        assert "not a regular file" in done.stderr
    assert _alive(procs) and (a / which).exists()


FIFO_CASES = [
    (["chaos", "--schedule", "fifo"], "fifo"),
    (["verify", "--bootstrap-server", "127.0.0.1:1", "--command-config", "fifo"], "fifo"),
    (["place", "--brokers", "0,1", "--partitions", "1", "--replication-factor", "1", "--placer", "jvm:a.B",
      "--classpath", "fifo.jar"], "--classpath"),
    (["cluster", "up", "--dir", "fifo"], "--dir"),
]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes")
@pytest.mark.parametrize(("argv", "place"), FIFO_CASES, ids=[" ".join(a[:2]) for a, _ in FIFO_CASES])
def test_a_fifo_given_as_a_file_is_refused_not_waited_on(tmp_path, argv, place):
    os.mkfifo(tmp_path / "fifo")
    os.mkfifo(tmp_path / "fifo.jar")
    done = _run_kcheck(*argv, cwd=tmp_path)
    assert_refused(done.returncode, done.stdout, done.stderr, place)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "fifo.jar"]


def _state(a: Path) -> dict[str, Any]:
    return json.loads((a / STATE_FILE).read_text())


@pytest.mark.parametrize(("name", "change", "why"), [
    ("huge", lambda a, s: (a / STATE_FILE).write_text(json.dumps(s) + " " * (2 << 20)), "larger than 1,048,576 bytes"),
    ("nested", lambda a, s: (a / STATE_FILE).write_text("[" * 100_000), "nested too deep"),
    ("truncated", lambda a, s: (a / STATE_FILE).write_text(json.dumps(s)[:50]), "not a kcheck cluster state file"),
    ("binary", lambda a, s: (a / STATE_FILE).write_bytes(bytes(range(256))), "not a kcheck cluster state file"),
    ("list", lambda a, s: (a / STATE_FILE).write_text("[]"), "not a JSON object"),
    ("other-id", lambda a, s: _write(a, {**s, "id": "f" * 32}), "its id is not the folder marker's"),
    ("other-folder", lambda a, s: _write(a, {**s, "directory": "/"}), "it names another folder"),
    ("release", lambda a, s: _write(a, {**s, "version": "../../x"}), "its Kafka release is not one kcheck knows"),
    ("pid-str", lambda a, s: _write(a, _broker(s, pid="1")), "pid is not a process id"),
    ("pid-huge", lambda a, s: _write(a, _broker(s, pid=10**40)), "pid is not a process id"),
    ("pid-bool", lambda a, s: _write(a, _broker(s, pid=True)), "pid is not a process id"),
    ("port", lambda a, s: _write(a, _broker(s, port=70000)), "a port is not 1..65535"),
    ("node-id", lambda a, s: _write(a, _broker(s, node_id=2**40)), "wrong role or node id"),
    ("node-id-path", lambda a, s: _write(a, _broker(s, node_id="../../x")), "wrong role or node id"),
    ("rack", lambda a, s: _write(a, _broker(s, rack="r\x1b[31m")), "rack is not a rack name"),
    ("extra-key", lambda a, s: _write(a, _broker(s, directory="/")), "a broker entry is not a node"),
    ("too-many", lambda a, s: _write(a, {**s, "brokers": s["brokers"] * 40}), "brokers is not a list of 1..64"),
    ("twice", lambda a, s: _write(a, {**s, "brokers": s["brokers"][:1] * 2}), "a broker is listed twice"),
    ("symlink", lambda a, s: _symlink_state(a), "a symbolic link"),
])
def test_a_corrupt_state_file_is_refused_in_one_line_and_nothing_is_signalled(tmp_path, capsys, name, change, why):
    a, _, procs = stand_in_cluster(tmp_path / "a")
    change(a, _state(a))
    before = _snapshot(a)
    for command in (("cluster", "down"), ("cluster", "status"), ("chaos",)):
        err = _refused(capsys, *command, "--dir", str(a))
        assert why in err, err
    assert _alive(procs) and _snapshot(a) == before


def _write(a: Path, state: dict[str, Any]) -> None:
    (a / STATE_FILE).write_text(json.dumps(state))


def _broker(state: dict[str, Any], **change: Any) -> dict[str, Any]:
    return {**state, "brokers": [{**state["brokers"][0], **change}, *state["brokers"][1:]]}


def _symlink_state(a: Path) -> None:
    real = a.parent / "elsewhere.json"
    (a / STATE_FILE).rename(real)
    (a / STATE_FILE).symlink_to(real)


def test_a_folder_in_a_symlink_loop_or_under_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    (tmp_path / "file").write_text("x")
    for where in ("loop1/c", "file/c", "file/c/d"):
        for command in (("cluster", "up"), ("cluster", "down"), ("cluster", "status"), ("chaos",)):
            err = _refused(capsys, *command, "--dir", str(tmp_path / where))
            assert ("symlink loop" in err) if where.startswith("loop") else ("is a file, not a folder" in err), err
    err = _refused(capsys, "cluster", "down", "--dir", str(tmp_path / "loop1"))
    assert "is a symbolic link" in err
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo")
        err = _refused(capsys, "cluster", "up", "--dir", str(tmp_path / "fifo"))
        assert "exists and is not a folder" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "file", "loop1", "loop2"][:4 if hasattr(
        os, "mkfifo") else 3]


# ---------------------------------------------------------------------------------------------------------
# 4. real clusters: a folder copied, moved and symlinked; Ctrl-C and SIGTERM at a random moment

def _java() -> None:
    if shutil.which("java") is None:
        pytest.skip("`java` not on PATH: a Kafka cluster needs a JDK 17+")


def _processes_naming(folder: Path) -> list[int]:
    """PIDs whose command line names something inside `folder` (a node, a format run)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                args = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(str(folder).encode() in a for a in args):
                out.append(int(entry.name))
    return out


class Background:
    """kcheck as a user runs it, in the background, its stderr read as it comes (the test process's
    KCHECK_CLUSTER_OWNER_PID is inherited: a cluster it left behind would die with the test run). Its temporary
    folders (a cluster it starts without --dir) are made in `cwd`, so that its processes name `cwd`."""

    def __init__(self, *argv: str, cwd: Path) -> None:
        import threading

        self.proc = subprocess.Popen([sys.executable, "-m", "kcheck", *argv], cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "TMPDIR": str(cwd)})
        self.err: list[str] = []
        self.reader = threading.Thread(target=lambda: self.err.extend(iter(self.proc.stderr.readline, "")),
                                       daemon=True)
        self.reader.start()

    @property
    def stderr(self) -> str:
        return "".join(self.err)

    def interrupt(self, working: Any, after_s: float, sig: int = signal.SIGINT) -> tuple[int, float, str, str]:
        """Once `working()` says the command is at its work, `after_s` later, send `sig`: (exit status, seconds
        from the signal to the exit, stdout, stderr)."""
        deadline = time.monotonic() + 120
        while not working() and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            self.proc.wait(timeout=after_s)
            pytest.fail(f"it ended before the signal (exit {self.proc.returncode}): {self.stderr[-500:]}")
        except subprocess.TimeoutExpired:
            pass
        began = time.monotonic()
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"still running 30 s after signal {sig}: {self.stderr[-1000:]}")
        took = time.monotonic() - began
        self.reader.join(5)
        out = self.proc.stdout.read()  # type: ignore[union-attr]
        return self.proc.returncode, took, out, self.stderr


def assert_interrupted(code: int, took: float, out: str, err: str, *fragments: str) -> str:
    """Exit 130 within a few seconds of the signal, nothing on stdout, and the last stderr line the one line saying
    what was undone (lines before it are the command's progress, never a traceback)."""
    assert "Traceback" not in err, err[-3000:]
    assert code == 130, (code, err[-2000:])
    assert out == "", out[-500:]
    last = err.rstrip("\n").splitlines()[-1]
    assert last.startswith("kcheck: interrupted (") and not _CONTROL_RE.search(last), last
    assert all(not line.startswith("kcheck: error") for line in err.splitlines()), err
    for f in fragments:
        assert f in last, (f, last)
    assert took < 5, f"{took:.1f} s from the signal to the exit"
    return last


@pytest.mark.cluster
@pytest.mark.kafka
def test_cluster_up_interrupted_leaves_nothing_and_a_real_folder_is_only_ever_its_own(tmp_path):
    """`cluster up` Ctrl-C'd at a random moment of its start: exit 130 within seconds, no node left, the folder gone;
    the next `up` in that folder works. Then the running cluster's folder is copied (cp -a), symlinked and moved
    (mv): `down`, `status`, `chaos --dir` and `replay --on-cluster --dir` refuse each without touching the cluster
    or the copy; `down` of the folder itself stops it and leaves the user's own file."""
    _java()
    a = tmp_path / "a"
    up = Background("cluster", "up", "--brokers", "1", "--dir", str(a), cwd=tmp_path)
    # within the start: a single-broker cluster can be up in about 3 s once the folder exists
    code, took, out, err = up.interrupt(a.exists, random.uniform(0.0, 1.5))
    assert_interrupted(code, took, out, err, "killed the nodes it had started and removed what it created")
    assert not a.exists() and not _processes_naming(a)

    up = subprocess.run([sys.executable, "-m", "kcheck", "cluster", "up", "--brokers", "1", "--dir", str(a)],
                        cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert up.returncode == 0, up.stderr
    nodes = _processes_naming(a)
    try:
        assert len(nodes) == 2
        copy, link, moved = tmp_path / "copy", tmp_path / "link", tmp_path / "moved"
        subprocess.run(["cp", "-a", str(a), str(copy)], check=False)  # a live folder: files may change meanwhile
        link.symlink_to(a)
        (tmp_path / "trace.json").write_text(json.dumps(_trace()))
        kcheck_files = {n: (a / n).read_bytes() for n in ("kcheck-cluster.marker", STATE_FILE)}
        commands = (("cluster", "down"), ("cluster", "status"), ("chaos", "--duration", "1"),
                    ("replay", "trace.json", "--on-cluster"))
        # The nodes paused meanwhile: a Kafka node whose folder moves stops itself at its next checkpoint write, and
        # a stopped process keeps any SIGTERM sent to it: alive after SIGCONT, no kcheck command signalled it.
        for pid in nodes:
            os.kill(pid, signal.SIGSTOP)
        for folder, why in ((copy, f"is a copy of the cluster folder {a}"), (link, "is a symbolic link")):
            for command in commands:
                done = _run_kcheck(*command, "--dir", str(folder), cwd=tmp_path)
                assert_refused(done.returncode, done.stdout, done.stderr, "--dir")
                assert why in done.stderr, done.stderr
        a.rename(moved)
        for command in commands:
            done = _run_kcheck(*command, "--dir", str(moved), cwd=tmp_path)
            assert_refused(done.returncode, done.stdout, done.stderr, "--dir")
            assert f"was moved or copied from {a}" in done.stderr, done.stderr
        moved.rename(a)
        for pid in nodes:
            os.kill(pid, signal.SIGCONT)
        time.sleep(1.0)
        assert all(_cmdline_alive(pid) for pid in nodes)
        assert {n: (a / n).read_bytes() for n in kcheck_files} == kcheck_files
        copied = _snapshot(copy)
        (a / "notes.txt").write_text("mine\n")
        down = _run_kcheck("cluster", "down", "--dir", str(a), cwd=tmp_path, timeout=90, own_cache=False)
        assert down.returncode == 0, down.stderr
        assert "left" in down.stderr and "notes.txt (not created by kcheck)" in down.stderr
        assert sorted(p.name for p in a.iterdir()) == ["notes.txt"]
        assert not _processes_naming(a) and _snapshot(copy) == copied
    finally:
        for pid in _processes_naming(a):
            os.kill(pid, signal.SIGKILL)


def _cmdline_alive(pid: int) -> bool:
    from kcheck.cluster.folder import argv

    return argv(pid) is not None


class _SilentBroker:
    """A TCP server that accepts connections and never answers: a client's bootstrap waits on it."""

    def __init__(self) -> None:
        import socket
        import threading

        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.port = self.server.getsockname()[1]
        self.held: list[Any] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.server.close()
        for c in self.held:
            c.close()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_verify_bootstrap_server_interrupted_while_it_waits_is_one_line(tmp_path, sig):
    silent = _SilentBroker()
    try:
        proc = Background("verify", "--bootstrap-server", f"127.0.0.1:{silent.port}", cwd=tmp_path)
        code, took, out, err = proc.interrupt(lambda: len(silent.held) > 1, random.uniform(0.0, 3.0), sig)
    finally:
        silent.close()
    assert_interrupted(code, took, out, err, "stopped, no output written")
    assert list(tmp_path.iterdir()) == []


def test_a_closed_port_is_refused_at_once():
    done = _run_kcheck("verify", "--bootstrap-server", "127.0.0.1:1", "--json", cwd=Path("/"), timeout=20)
    assert_refused(done.returncode, done.stdout, done.stderr, "--bootstrap-server")
    assert "Connection refused" in done.stderr


def _replay_topics(cluster: Any) -> set[str] | None:
    """The cluster's replay topics now (a new one: a replay has begun its work on the cluster); None if unread."""
    from kcheck.cluster.live import read_cluster

    try:
        text = read_cluster(cluster.bootstrap, timeout_s=5).describe_text
    except Exception:  # noqa: BLE001 - asked again
        return None
    return set(re.findall(r"Topic: (kcheck-replay-\w+)\t", text))


def _adopt(cluster: Any) -> None:
    """The session cluster's object learns the PIDs another process saved in its state file (a broker it started
    again), so that its own clean-up (conftest's `cluster`) finds them."""
    from kcheck.cluster.local import LocalCluster

    saved = {n.node_id: n.pid for n in (LocalCluster.attach(cluster.directory).state.brokers)}
    for n in cluster.state.brokers:
        if saved.get(n.node_id) != n.pid:
            n.pid = saved[n.node_id]
            cluster._children.pop(n.node_id, None)
    for row in cluster.status():  # the next test finds every broker unfenced
        if row["role"] == "broker" and row["state"] == "paused":
            cluster.resume(row["node"])
        elif row["role"] == "broker" and row["state"] == "stopped":
            cluster.restart(row["node"])
    cluster.wait_ready(90)


@pytest.mark.cluster
@pytest.mark.kafka
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_chaos_interrupted_resumes_what_it_paused_starts_what_it_killed_and_writes_no_json(cluster, tmp_path, sig):
    from kcheck.cluster.local import LocalCluster

    schedule = tmp_path / "s.txt"
    schedule.write_text("0.5 pause 3\n1 kill 2\n")
    out_json = tmp_path / "out.json"
    proc = Background("chaos", "--dir", str(cluster.directory), "--schedule", str(schedule), "--duration", "60",
                      "--json", str(out_json), "--rate", "20", cwd=tmp_path)
    try:
        code, took, out, err = proc.interrupt(lambda: "kcheck chaos: topic" in proc.stderr, random.uniform(0.0, 6.0),
                                              sig)
        time.sleep(0.5)  # a node kcheck's clean-up had killed would be gone by now
        rows = {r["node"]: r["state"] for r in LocalCluster.attach(cluster.directory).status()}
    finally:
        _adopt(cluster)
    last = assert_interrupted(code, took, out, err, "no output written")
    assert not out_json.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["s.txt"]
    assert rows[3] == "running" and rows[1000] == "running", rows  # never left paused
    if "kill 2" in err:  # the kill fired before the signal: the broker was started again, and outlived kcheck
        assert "started broker(s) 2 again" in last and rows[2] == "running", (last, rows)


@pytest.mark.cluster
@pytest.mark.kafka
def test_replay_on_cluster_interrupted_is_one_line_and_the_cluster_runs_on(cluster, tmp_path):
    (tmp_path / "trace.json").write_text(json.dumps(_trace()))
    """A trace that kills broker 2 and starts it again (about 15 s on the cluster): interrupted at a random moment
    of it, the broker runs again."""
    (tmp_path / "crash.json").write_text(json.dumps(CRASH_TRACE))
    before = _replay_topics(cluster) or set()
    proc = Background("replay", "crash.json", "--on-cluster", "--dir", str(cluster.directory), cwd=tmp_path)
    try:
        code, took, out, err = proc.interrupt(lambda: bool((_replay_topics(cluster) or before) - before),
                                              random.uniform(0, 6))
    finally:
        _adopt(cluster)
    assert_interrupted(code, took, out, err, "stopped, no output written; ")
    assert all(r["state"] == "running" for r in cluster.status())


# The corpus's trace, with broker 2 killed (kill -9) and started again
CRASH_TRACE = {"format": 2, "protocol": "current",
               "config": {"brokers": 2, "replication_factor": 0, "min_isr": 1, "initial_isr": 0, "acks": ["all"],
                          "records": 1, "max_leader_epoch": 3, "crashes": 1, "lossy_crashes": 0, "fences": 0,
                          "elections": 0, "isr_shrinks": 0, "failovers": 0, "reads": 1, "reassignments": 0,
                          "cancels": 0, "duplicates": True, "atomic_fetch": False},
               "steps": [{"action": "produce", "broker": 1, "acks": "all"}, {"action": "fetch", "follower": 2},
                         {"action": "crash", "broker": 2, "lossy": False}, {"action": "restart", "broker": 2}]}


@pytest.mark.slow  # a cluster of its own is started, about 15 s each
@pytest.mark.cluster
@pytest.mark.kafka
@pytest.mark.parametrize(("command", "most"), [
    (("cluster", "up", "--brokers", "1", "--dir", "c"), 3.0),
    (("chaos", "--brokers", "1", "--replication-factor", "1", "--min-insync-replicas", "1", "--duration", "60"), 20.0),
    (("replay", "trace.json", "--on-cluster", "--dir", "c"), 4.0)],
    ids=["cluster-up-SIGTERM", "chaos-own-cluster", "replay-own-cluster"])
def test_commands_that_start_a_cluster_stop_it_on_an_interrupt_at_any_moment(tmp_path, command, most):
    """Interrupted at a random moment once its first node runs (a cluster up in 6-25 s here)."""
    _java()
    (tmp_path / "trace.json").write_text(json.dumps(_trace()))
    sig = signal.SIGTERM if command[0] == "cluster" else signal.SIGINT
    proc = Background(*command, cwd=tmp_path)
    code, took, out, err = proc.interrupt(lambda: bool(_processes_naming(tmp_path)), random.uniform(0.0, most), sig)
    assert_interrupted(code, took, out, err)
    assert not _processes_naming(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.json"]
