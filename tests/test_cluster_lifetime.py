"""A cluster never outlives the process that started it (kcheck.cluster.local.Watchdog), however that process ends.

The watchdog's tests stand in for Kafka nodes with sleeping Python processes whose command line is a node's: the
cluster's id (`-Dkcheck.cluster.id=...`) and, last, the node's `server.properties` (what the watchdog checks before it
kills a PID), in a folder whose marker kcheck wrote (`cluster_folder.claim`), so they run without java in a second or
two.
The last test starts a real one-broker KRaft cluster in a subprocess, SIGKILLs that subprocess and checks the
controller's and the broker's PIDs are gone within seconds (marked `cluster`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kcheck.cluster.folder import ID_OPTION, claim
from kcheck.cluster.local import OWNER_ENV, STATE_FILE, ClusterError, _cmdline, _owners

# A process that stands in for a node: it sleeps, and its command line is a node's (the id, the properties last).
NODE = "import time; time.sleep(120)"
_STARTED: list[subprocess.Popen] = []  # every process a test starts, ended after it (also when it fails)


@pytest.fixture(autouse=True)
def _end_started():
    yield
    _end(*_STARTED)
    _STARTED.clear()


def _spawn(cmd: list[str], **kwargs) -> subprocess.Popen:
    _STARTED.append(subprocess.Popen(cmd, **kwargs))
    return _STARTED[-1]


def _node(folder: Path, name: str, ident: str | None = None) -> tuple[subprocess.Popen[bytes], Path]:
    properties = folder / name / "server.properties"
    properties.parent.mkdir(parents=True)
    properties.write_text("", encoding="utf-8")
    # A session of its own, as LocalCluster starts a node: the owner's death sends it nothing.
    return _stand_in(properties, ident or _ident(folder), start_new_session=True), properties


def _stand_in(properties: Path, ident: str, **kwargs) -> subprocess.Popen[bytes]:
    return _spawn([sys.executable, "-c", NODE, f"{ID_OPTION}{ident}", str(properties)], **kwargs)


def _ident(folder: Path) -> str:
    return json.loads((folder / "kcheck-cluster.marker").read_text())["id"]


def _owner(folder: Path, script: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], dict]:
    """A Python process that runs `script` (which prints one JSON line) and then sleeps; the line, parsed."""
    code = textwrap.dedent(script) + "\nimport time; time.sleep(120)\n"
    proc = _spawn([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=folder,
                  env={**os.environ, **(env or {})})
    line = proc.stdout.readline()  # type: ignore[union-attr]
    assert line, f"the owner process printed nothing (exit {proc.poll()})"
    return proc, json.loads(line)


def _gone(pids, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(_cmdline(pid) is None for pid in pids):
            return True
        time.sleep(0.05)
    return all(_cmdline(pid) is None for pid in pids)


def _removed(folder: Path, timeout_s: float = 5.0) -> bool:
    """The watchdog removes the folder once the nodes are gone: a moment after them."""
    deadline = time.monotonic() + timeout_s
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not folder.exists()


def _end(*procs) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


# An owner: it arms a watchdog for the cluster folder it runs in (its working directory) and the nodes in $NODES.
ARM = """
    import json, os
    from pathlib import Path
    from kcheck.cluster.local import STATE_FILE, Watchdog, _owners
    folder = Path(os.getcwd())
    (folder / STATE_FILE).write_text("{}")
    ident = json.loads((folder / "kcheck-cluster.marker").read_text())["id"]
    dog = Watchdog(_owners(outlive=OUTLIVE), folder, ident)
    for pid, mark in json.loads(os.environ["NODES"]):
        dog.node(pid, Path(mark))
    DONE
    print(json.dumps({"watchdog": dog.proc.pid}), flush=True)
"""


def _arm(folder: Path, nodes, outlive: bool = False, env: dict[str, str] | None = None, done: bool = False):
    script = ARM.replace("OUTLIVE", str(outlive)).replace("DONE", "dog.done()" if done else "pass")
    return _owner(folder, script, {"NODES": json.dumps([[p.pid, str(m)] for p, m in nodes]), **(env or {})})


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A cluster folder as kcheck creates one: its marker written first."""
    real, _ = claim(tmp_path / "c")
    return real


def test_the_nodes_die_and_the_folder_goes_when_the_owner_is_killed(folder):
    a, b = _node(folder, "broker-1"), _node(folder, "broker-2")
    bystander = _spawn([sys.executable, "-c", NODE, str(folder / "elsewhere.properties")], start_new_session=True)
    # Given with a node's properties file: one whose command line names another file, and one that names this
    # node's file but carries another cluster's id (a copy's node): neither is killed.
    other = _stand_in(b[1], "f" * 32, start_new_session=True)
    owner, info = _arm(folder, [a, b, (bystander, folder / "broker-1" / "server.properties"),
                                (other, b[1])])
    owner.kill()  # SIGKILL: no atexit, no finally
    owner.wait()
    assert _gone([a[0].pid, b[0].pid], 5.0)
    assert _gone([info["watchdog"]], 5.0)  # its work done, it leaves
    assert _removed(folder)
    assert bystander.poll() is None and other.poll() is None


def test_a_broker_another_process_restarted_dies_too(folder):
    """`LocalCluster.attach(folder).restart(2)` in another process starts broker 2 anew and saves its PID in the
    state file, without telling the owner's watchdog: the watchdog reads the file when the owner ends."""
    controller, old = _node(folder, "controller"), _node(folder, "broker-2")
    owner, info = _arm(folder, [controller, old])
    _end(old[0])  # the restart stopped the old process ...
    new = _stand_in(old[1], _ident(folder), start_new_session=True)  # ... and started this one
    state = {"version": "4.4.0", "cluster_id": "A" * 22, "directory": str(folder), "id": _ident(folder),
             "controller": {"node_id": 1000, "role": "controller", "port": 1, "pid": controller[0].pid},
             "brokers": [{"node_id": 2, "role": "broker", "port": 2, "pid": new.pid}]}
    (folder / STATE_FILE).write_text(json.dumps(state), encoding="utf-8")
    owner.kill()
    owner.wait()
    assert _gone([controller[0].pid, new.pid], 5.0)
    assert _removed(folder)


def test_a_dismissed_watchdog_kills_nothing(folder):
    a = _node(folder, "broker-1")
    owner, info = _arm(folder, [a], done=True)
    assert _gone([info["watchdog"]], 5.0)
    owner.kill()
    owner.wait()
    time.sleep(0.5)
    assert a[0].poll() is None and folder.joinpath(STATE_FILE).exists()


def test_an_outliving_cluster_dies_with_the_process_the_environment_names(folder):
    """`kcheck cluster up` (outlive=True) under KCHECK_CLUSTER_OWNER_PID: the command ends and the cluster runs on,
    until that process ends."""
    a = _node(folder, "broker-1")
    keeper = _spawn([sys.executable, "-c", NODE])
    owner, info = _arm(folder, [a], outlive=True, env={OWNER_ENV: str(keeper.pid)})
    _end(owner)  # the command is over
    time.sleep(0.6)
    assert a[0].poll() is None and _cmdline(info["watchdog"]) is not None
    _end(keeper)
    assert _gone([a[0].pid, info["watchdog"]], 5.0)
    assert _removed(folder)


def test_the_watchdog_leaves_when_the_cluster_was_stopped_from_elsewhere(folder):
    """`kcheck cluster down` stops an outliving cluster from another process: the watchdog then has nothing to do."""
    a = _node(folder, "broker-1")
    keeper = _spawn([sys.executable, "-c", NODE])
    owner, info = _arm(folder, [a], outlive=True, env={OWNER_ENV: str(keeper.pid)})
    _end(owner, a[0])
    assert _gone([info["watchdog"]], 5.0)
    assert keeper.poll() is None


def test_an_owner_that_is_not_a_process_is_one_line(monkeypatch):
    for text, message in (("x1", "'x1' is not a process id"), ("0", "'0' is not a process id"),
                          ("999999999", "999999999: no such process")):
        monkeypatch.setenv(OWNER_ENV, text)
        with pytest.raises(ClusterError) as e:
            _owners(outlive=True)
        assert str(e.value) == f"cluster: {OWNER_ENV}={message}"


@pytest.mark.cluster
@pytest.mark.kafka
def test_a_cluster_dies_with_the_process_that_started_it(tmp_path):
    """A one-broker KRaft cluster started in a subprocess; the subprocess SIGKILLed (no finally, no atexit runs):
    the controller's and the broker's JVMs are gone within seconds, and the cluster's folder with them."""
    if shutil.which("java") is None:
        pytest.skip("`java` not on PATH: a Kafka cluster needs a JDK 17+")
    folder = tmp_path / "c"
    owner, info = _owner(tmp_path, f"""
        import json
        from kcheck.cluster.local import LocalCluster
        c = LocalCluster(brokers=1, directory={str(folder)!r}).start(timeout_s=90)
        print(json.dumps({{"pids": [c.pid_of(1000), c.pid_of(1)]}}), flush=True)
    """, {OWNER_ENV: ""})
    pids = info["pids"]
    try:
        assert all(_cmdline(pid) and "kafka.Kafka" in _cmdline(pid) for pid in pids)
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        assert _gone(pids, 10.0), [_cmdline(p) for p in pids]
        assert _removed(folder)
    finally:
        for pid in pids:
            if str(folder) in (_cmdline(pid) or ""):
                os.kill(pid, signal.SIGKILL)
