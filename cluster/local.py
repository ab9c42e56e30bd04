"""A real KRaft cluster on loopback: one controller (or a quorum of 3 or 5) and N brokers, each its own OS process,
from Kafka's Maven jars.

`kcheck cluster up|down|status` and `LocalCluster` (the pytest fixture `kafka_cluster` in tests/conftest.py)
run Kafka's own server, `kafka.Kafka` from `core/src/main/scala/kafka/Kafka.scala`, with the jars
`kcheck.reference.kafka_jars.resolve_server` fetches from Maven Central; the storage of every node is
formatted first with Kafka's `kafka.tools.StorageTool` (`core/src/main/scala/kafka/tools/StorageTool.scala`,
what `kafka-storage.sh format` runs) under a random cluster id. Nothing is installed by hand but a JDK 17+.

Layout: the controller is node 1000 (`process.roles=controller`, a static one-voter quorum,
`controller.quorum.voters`, which every KRaft release from 3.3 to 4.x reads), or with `controllers=3` (or 5) the
controllers are nodes 1000, 1001, ... and the static quorum lists every one of them as a voter (KIP-595's Raft: any
majority elects a leader, the active controller); the brokers are nodes 1..N
(`process.roles=broker`), `broker.rack` from `--racks` round-robin. Every listener is on 127.0.0.1 at a port
picked free; with `network=True` (`--network`) every node runs inside its own network namespace
(kcheck.cluster.netns, made before the nodes and removed after them) and listens on that namespace's address at
Kafka's usual ports, so `kcheck chaos` can cut links between nodes while clients still reach each one.
Kafka's own defaults hold except what a 2-core machine needs: small heaps, fewer threads, the
internal topics' replication capped at the broker count and 3 partitions each instead of 50 (a first
consumer group is ready in a second). The cluster's folder (default `~/.cache/kcheck/cluster`, or `--dir`)
holds one subfolder per node (properties, data, `server.log`) and `kcheck-cluster.json`, the state file with
every node's PID and port; `down` signals only PIDs whose command line names that folder's properties file,
so a recycled PID is never hit.

Readiness is Kafka's own view: a DescribeCluster (kafka-python's admin client) that lists every broker,
which KRaft does only for registered, unfenced brokers. A node that exits while starting is reported with the
line of its log that says why (the exception after the first ERROR line), and nothing is left running.

Lifetime: a `LocalCluster` never outlives the process that started it, however that process ends (an exception,
Ctrl-C, a test timeout, SIGKILL, a pytest-xdist worker's death). Its nodes run in their own session (a Ctrl-C meant
for kcheck does not reach them), so each cluster has a watchdog: a small process, also in its own session, told
every node's PID; when the owner is gone it SIGKILLs those PIDs (each only if its command line still names the
node's properties file) and removes the folder. `stop()` dismisses it; at interpreter exit `stop()` runs on every
cluster still up. `kcheck cluster up` starts a cluster that outlives the command (`outlive=True`), unless
KCHECK_CLUSTER_OWNER_PID names a process it must not outlive (tests/conftest.py sets it to the pytest process's
PID, so `up` run by a test dies with the test run too); every cluster also dies with that process.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import hashlib
import ipaddress
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kcheck.cluster.controller_gate import ControllerGate
from kcheck.cluster.folder import (
    CONTROLLER_ID,
    HOLDER,
    ID_OPTION,
    MAX_BROKERS,
    MAX_CONTROLLERS,
    STATE_FILE,
    STATE_VERSION,
    FolderError,
    check_new,
    claim,
    default_directory,
    find_node,
    matches,
    node_folder,
    open_existing,
    remove_ours,
    started_for,
    state_controllers,
)
from kcheck.cluster.netns import NetnsError, Network, ignore_sigterm
from kcheck.cluster.netns import unavailable as netns_unavailable
from kcheck.inputs.formats import InputError, control_problem
from kcheck.runtime import interrupts

DEFAULT_VERSION = "4.4.0"
HOST = "127.0.0.1"
MAX_START_TIMEOUT = 3_600.0  # seconds `cluster up --timeout` may wait (a cold start here takes 10-25 s)
# The JVM of every node: a small heap; the serial collector and C1 only, which start a JVM fastest on 2 cores;
# no hsperfdata files left in /tmp.
JVM_OPTIONS = ("-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
               "-Djava.awt.headless=true", "-Dorg.slf4j.simpleLogger.showDateTime=true",
               "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS")
# A message after a Java exception's class name: the line of a log that says why a node stopped.
_EXCEPTION_RE = re.compile(r"^(?:Caused by: )?(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error)(?:: (.*))?$")


class ClusterError(InputError):
    """The cluster cannot start, or a command on it cannot run: str() is one line (the CLI exits 2)."""

    def __init__(self, message: str) -> None:
        super().__init__("cluster", message)


@dataclass
class Node:
    node_id: int
    role: str  # "controller" or "broker"
    port: int
    rack: str | None = None
    pid: int | None = None
    sasl_port: int | None = None  # a second listener, SASL_PLAINTEXT with PLAIN, when the cluster has users
    host: str = HOST  # its address: 127.0.0.1, or its own namespace's with a network (kcheck.cluster.netns)


@dataclass
class _State:
    version: str
    cluster_id: str
    directory: str  # the folder's real path, for people; kcheck acts on the folder its marker names (cluster_folder)
    controllers: list[Node]
    brokers: list[Node] = field(default_factory=list)
    id: str = ""  # the folder marker's id, on every node's command line
    network: dict[str, Any] | None = None  # with network=True: tag, owner, subnet and holder PID

    @property
    def nodes(self) -> tuple[Node, ...]:
        return (*self.controllers, *self.brokers)


_HANDED: set[int] = set()  # ports this process gave out: never twice


def _ephemeral_start() -> int:
    """The first port of the kernel's range for outgoing connections (Linux: ip_local_port_range; else IANA's)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 49152


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now, drawn below the kernel's range for outgoing connections:
    a port the OS picks comes from that range, where any client's connection (a broker's own, another cluster's) may
    take it before the node binds it (CI saw "Address already in use")."""
    top = _ephemeral_start()
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(10_000, top) if top > 11_000 else 0
        if port in _HANDED:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((HOST, port))
            except OSError:
                continue
            got = int(s.getsockname()[1])
        _HANDED.add(got)
        return got
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def random_cluster_id() -> str:
    """A Kafka Uuid string (16 random bytes, URL-safe base64 without padding) that does not start with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def parse_racks(text: str | None) -> tuple[str, ...]:
    """`--racks a,b,c`: rack names, handed to the brokers round-robin."""
    if text is None:
        return ()
    racks = tuple(r.strip() for r in text.split(","))
    for r in racks:
        if not r:
            raise InputError("--racks", f"empty rack name in {text!r} (leave --racks out for brokers without racks)")
        if any(c.isspace() for c in r) or (problem := control_problem(r)) is not None:
            raise InputError("--racks", f"rack {r!r} {problem if control_problem(r) else 'contains whitespace'}")
        if len(r) > 255:
            raise InputError("--racks", f"rack name of {len(r):,} characters (at most 255)")
    return racks


def _cmdline(pid: int) -> str | None:
    """The command line of a live process, or None if it is gone (or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            if f.read().rsplit(")", 1)[-1].split()[0] == "Z":
                return None
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        pass
    if not sys.platform.startswith("linux"):  # no /proc: ask ps
        out = subprocess.run(["ps", "-p", str(pid), "-o", "stat=,command="], capture_output=True, text=True)
        line = out.stdout.strip()
        if out.returncode == 0 and line and not line.startswith("Z"):
            return line
    return None


def why_it_stopped(log: Path) -> str:
    """The line of a node's log that says why it stopped: the exception after its first ERROR line, else that line."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "no log written"
    first_error = next((i for i, ln in enumerate(lines) if " ERROR " in ln or " FATAL " in ln
                        or ln.startswith(("ERROR", "Error:"))), None)
    start = 0 if first_error is None else first_error
    for ln in lines[start:]:
        m = _EXCEPTION_RE.match(ln.strip())
        if m and m.group(1):
            return m.group(1).strip()
    if first_error is not None:
        return re.sub(r"^.*? (?:ERROR|FATAL) ", "", lines[first_error]).strip()
    tail = [ln for ln in lines if ln.strip()]
    return tail[-1].strip() if tail else "no log line"


def last_warning(log: Path) -> str:
    """The last WARN or ERROR message of a node's log (without time, thread and logger), or 'none'."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "no log written"
    for ln in reversed(lines):
        m = re.match(r"^\S+ \[[^\]]*\] (?:WARN|ERROR|FATAL) \S+ - (.*)$", ln)
        if m:
            return m.group(1).strip()
    return "none"


OWNER_ENV = "KCHECK_CLUSTER_OWNER_PID"


def _start_time(pid: int) -> str | None:
    """A process's start time (/proc/PID/stat field 22), which tells it from a later process given the same PID;
    None when it is gone or a zombie (or "?" where there is no /proc and it lives)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[-1].split()
        return None if fields[0] == "Z" else fields[19]
    except (OSError, IndexError):
        if sys.platform.startswith("linux"):
            return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return "?"


def _owners(outlive: bool) -> list[str]:
    """The processes (`PID:start time`) a new cluster must not outlive: this one unless `outlive`, and the one
    KCHECK_CLUSTER_OWNER_PID names."""
    pids = [] if outlive else [os.getpid()]
    text = os.environ.get(OWNER_ENV, "").strip()
    if text:
        if not (text.isascii() and text.isdigit()) or len(text) > 10 or int(text) <= 0:
            raise ClusterError(f"{OWNER_ENV}={text!r} is not a process id")
        pids.append(int(text))
    owners = []
    for pid in dict.fromkeys(pids):
        start = _start_time(pid)
        if start is None:
            raise ClusterError(f"{OWNER_ENV}={pid}: no such process")
        owners.append(f"{pid}:{start}")
    return owners


class Watchdog:
    """A process that kills a cluster's nodes when its owner processes end, however they end.

    It runs `watch()` below in a Python process of its own session (no signal sent to kcheck's terminal or process
    group reaches it), reads the cluster's folder and id and each node's PID from a pipe, and every 0.2 s checks that
    each owner still runs (same PID and start time, not a zombie). When one does not, it SIGKILLs every node started
    for that cluster (`cluster_folder.started_for`: the id and the node's properties file on its command line), waits
    for them to be gone and removes what kcheck created in the folder while its marker still names it with that id
    (a folder moved away, or a new cluster set up in its place, is left alone). The nodes it kills are those it was
    told of and those the state file names (a broker another process restarted through `LocalCluster.attach(...)`
    is there, with its new PID). `done()` dismisses it; it also leaves once the pipe is closed and no node runs (the
    cluster was stopped from elsewhere: `kcheck cluster down`).
    """

    def __init__(self, owners: Sequence[str], directory: Path, ident: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from kcheck.cluster.local import Watchdog; Watchdog.watch()", *owners],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            preexec_fn=ignore_sigterm)
        self._send({"dir": str(directory), "id": ident})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:  # it is gone: nothing more to tell it
            pass

    def node(self, pid: int, properties: Path) -> None:
        """Kill `pid` when an owner ends (if it still runs as the node of `properties`, for this cluster)."""
        self._send({"pid": pid, "mark": str(properties)})

    def done(self) -> None:
        """The cluster is stopped: the watchdog exits and kills nothing."""
        self._send({"done": True})
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)

    @staticmethod
    def watch() -> None:
        """The watchdog process's body: argv holds the owners as `PID:start time`, stdin the JSON messages."""
        owners = [(int(pid), start) for pid, _, start in (a.partition(":") for a in sys.argv[1:])]
        nodes: dict[int, str] = {}
        directory, ident = None, ""
        fd, buffer, closed = sys.stdin.fileno(), b"", False
        while True:
            if closed:
                time.sleep(0.2)
            elif select.select([fd], [], [], 0.2)[0]:
                chunk = os.read(fd, 1 << 16)
                closed = not chunk
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    message = json.loads(line)
                    if message.get("done"):
                        return
                    directory, ident = message.get("dir", directory), message.get("id", ident)
                    if "pid" in message:
                        nodes[message["pid"]] = message["mark"]
            if any(_start_time(pid) != start for pid, start in owners):
                break
            if closed and not _ours(_known(nodes, directory, ident), ident):
                return
        doomed = _ours(_known(nodes, directory, ident), ident)
        for pid in doomed:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(_cmdline(pid) is not None for pid in doomed) and time.monotonic() < deadline:
            time.sleep(0.05)
        if directory is not None and matches(directory, ident):
            remove_ours(Path(directory), ident)


def _ours(nodes: dict[int, str], ident: str) -> list[int]:
    """The PIDs that run now as the node of their properties file, started for the cluster `ident`."""
    return [pid for pid, mark in nodes.items() if started_for(pid, mark, ident)]


def _known(nodes: dict[int, str], directory: str | None, ident: str) -> dict[int, str]:
    """The watchdog's nodes (PID -> the properties file its command line names), with those the cluster's state
    file lists now (another process may have restarted a broker: `restart` saves its new PID there), read only
    while the folder's marker still names it with the cluster's id."""
    out = dict(nodes)
    if directory is None:
        return out
    try:
        listed = open_existing(directory).state
    except (InputError, OSError):  # gone, half-written, moved or not ours: what the pipe said
        return out
    if listed["id"] != ident:
        return out
    for n in (*(state_controllers(listed) or ()), *listed["brokers"]):
        if n.get("pid") is not None:
            out.setdefault(n["pid"], str(Path(directory) / node_folder(n["node_id"]) / "server.properties"))
    return out


# The clusters this process started that are still up: stopped at interpreter exit if nothing stopped them before.
_LIVE: set[LocalCluster] = set()


@atexit.register
def _stop_live_clusters() -> None:
    for cluster in list(_LIVE):
        if cluster._owner_pid == os.getpid():  # not in a forked child
            with contextlib.suppress(Exception):
                cluster.stop(timeout_s=10.0)


class LocalCluster:
    """A KRaft cluster of Kafka `version` on 127.0.0.1: `start()`, `stop()`, and per-broker faults.

    `directory=None` makes a temporary folder, removed by `stop()`; a given directory must be absent or empty
    (kcheck then writes its marker and `kcheck-cluster.json` there, see kcheck.cluster.folder) and what kcheck
    created in it is removed by `stop()` (anything else is left: `left`). `config` adds or overrides properties of
    every broker (e.g. `{"unclean.leader.election.enable": "true"}`). The cluster dies with this process (its
    `Watchdog`) unless `outlive` (`kcheck cluster up`); with KCHECK_CLUSTER_OWNER_PID set, it dies with that process
    too. `gate_broker=N` puts a `kcheck.cluster.controller_gate.ControllerGate` (`gate`) between broker N and the
    controller (one controller only): the test holds back that broker's requests of chosen kinds.
    """

    def __init__(self, version: str = DEFAULT_VERSION, brokers: int = 3, racks: Sequence[str] = (),
                 directory: str | os.PathLike[str] | None = None, config: Mapping[str, str] | None = None,
                 sasl_users: Mapping[str, str] | None = None, outlive: bool = False, controllers: int = 1,
                 network: bool = False, gate_broker: int | None = None) -> None:
        self.version = release_option(version)
        if network:
            network_option()
        if not 1 <= brokers <= MAX_BROKERS:
            raise InputError("--brokers", f"{brokers} is outside 1..{MAX_BROKERS}")
        self.broker_count = brokers
        self.controller_count = controllers_option(controllers)
        self.racks = tuple(racks)
        self.config = dict(config or {})
        self.sasl_users = dict(sasl_users or {})
        self._given_directory = Path(directory) if directory is not None else None
        self._dir: Path | None = None  # the folder's real path, once claimed or attached (its marker names it)
        self._attached = False  # set up by another process or another LocalCluster (attach)
        self._id = ""  # the marker's id
        self.left: list[str] = []  # what stop() found in the folder that kcheck had not created, and left
        self._state: _State | None = None
        self._children: dict[int, subprocess.Popen[bytes]] = {}  # node id -> the process we started
        self._jars: str | None = None
        self.started_in_s = 0.0
        self.outlive = outlive
        self._owner_pid = 0  # the process that started it
        self._watchdog: Watchdog | None = None
        self.with_network = network
        self._holder: subprocess.Popen[bytes] | None = None
        self.network: Network | None = None  # with network=True, once made (or attached)
        if gate_broker is not None and (controllers != 1 or network or outlive or not 1 <= gate_broker <= brokers):
            raise ClusterError(f"a controller gate needs one controller, no network, a cluster that does not outlive "
                               f"this process, and one of its brokers (not {gate_broker})")
        self.gate_broker = gate_broker
        self.gate: ControllerGate | None = None  # with gate_broker, once started

    # -- the attached state ---------------------------------------------------------------------------------

    @classmethod
    def attach(cls, directory: str | os.PathLike[str] | None) -> LocalCluster:
        """The cluster set up in `directory` (by `kcheck cluster up`, maybe another process; None: the default
        folder), only if the folder is the one its marker names (not a copy, a move or a symbolic link of it) and its
        state file is kcheck's (kcheck.cluster.folder); FolderError (one line, --dir) otherwise."""
        opened = open_existing(directory)
        raw = opened.state
        state = _State(raw["version"], raw["cluster_id"], str(opened.path),
                       [Node(**c) for c in state_controllers(raw) or ()], [Node(**b) for b in raw["brokers"]],
                       opened.id)
        cluster = cls(state.version, len(state.brokers), tuple(b.rack for b in state.brokers if b.rack),
                      controllers=len(state.controllers))
        cluster._dir, cluster._id = opened.path, opened.id
        cluster._state, cluster._attached = state, True
        if raw.get("network") is not None:
            state.network = raw["network"]
            cluster.with_network = True
            cluster.network = _network_of(state)
        return cluster

    @property
    def state(self) -> _State:
        if self._state is None:
            raise ClusterError("the cluster is not started")
        return self._state

    @property
    def directory(self) -> Path:
        """The cluster's folder (its real path, as its marker names it): never a path read from the state file."""
        if self._dir is None or self._state is None:
            raise ClusterError("the cluster is not started")
        return self._dir

    @property
    def bootstrap(self) -> str:
        return ",".join(self.address(b.node_id) for b in self.state.brokers)

    def address(self, node_id: int) -> str:
        """`host:port` of a node's (first) listener."""
        node = self.node(node_id)
        return f"{node.host}:{node.port}"

    @property
    def sasl_bootstrap(self) -> str:
        """The brokers' SASL_PLAINTEXT listeners (PLAIN mechanism, the users given as `sasl_users`)."""
        if not all(b.sasl_port for b in self.state.brokers):
            raise ClusterError("the cluster has no SASL listener (start it with sasl_users)")
        return ",".join(f"{b.host}:{b.sasl_port}" for b in self.state.brokers)

    @property
    def brokers(self) -> tuple[int, ...]:
        return tuple(b.node_id for b in self.state.brokers)

    @property
    def controller(self) -> Node:
        """The first controller (node 1000): with one controller, the active one."""
        return self.state.controllers[0]

    @property
    def controllers(self) -> tuple[int, ...]:
        return tuple(c.node_id for c in self.state.controllers)

    @property
    def bootstrap_controllers(self) -> str:
        return ",".join(self.address(c.node_id) for c in self.state.controllers)

    @property
    def cluster_id(self) -> str:
        return self.state.cluster_id

    def node(self, node_id: int) -> Node:
        for n in self.state.nodes:
            if n.node_id == node_id:
                return n
        raise ClusterError(f"no node {node_id} (brokers {', '.join(map(str, self.brokers))}, "
                           f"controller(s) {', '.join(map(str, self.controllers))})")

    def _node_dir(self, node: Node) -> Path:
        return self.directory / node_folder(node.node_id)

    def properties_file(self, node_id: int) -> Path:
        return self._node_dir(self.node(node_id)) / "server.properties"

    def log_file(self, node_id: int) -> Path:
        return self._node_dir(self.node(node_id)) / "server.log"

    def _save(self) -> None:
        state = self.state
        doc = {"state_version": STATE_VERSION, "version": state.version, "cluster_id": state.cluster_id,
               "directory": str(self.directory), "id": self._id,
               "controllers": [asdict(c) for c in state.controllers], "brokers": [asdict(b) for b in state.brokers],
               **({"network": state.network} if state.network is not None else {})}
        tmp = self.directory / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.directory / STATE_FILE)

    # -- processes -----------------------------------------------------------------------------------------

    def pid_of(self, node_id: int) -> int | None:
        """The PID of a node's running process (None when it is not running): the recorded one if it still runs as
        this node, else any process that does (started, its PID never saved: an interrupt came in between)."""
        node = self.node(node_id)
        if node.pid is not None:
            child = self._children.get(node_id)
            if child is not None and child.pid == node.pid and child.poll() is None:
                return node.pid  # ours: right after fork its command line is not java's yet
            if started_for(node.pid, self.properties_file(node_id), self._id):
                return node.pid
        found = find_node(self.properties_file(node_id), self._id)
        if found is not None:
            node.pid = found
        return found

    def is_running(self, node_id: int) -> bool:
        return self.pid_of(node_id) is not None

    def _signal(self, node_id: int, sig: signal.Signals) -> int:
        pid = self.pid_of(node_id)
        if pid is None:
            raise ClusterError(f"node {node_id} is not running")
        os.kill(pid, sig)
        return pid

    def kill(self, broker_id: int) -> None:
        """kill -9: the process dies with no shutdown at all (what it had not flushed stays in the page cache)."""
        self._signal(broker_id, signal.SIGKILL)
        self._reap(broker_id, 10.0)

    def pause(self, broker_id: int) -> None:
        """SIGSTOP: the process stops heartbeating and answering, and keeps its state (the model's zombie)."""
        pid = self._signal(broker_id, signal.SIGSTOP)
        _wait_state(pid, stopped=True)

    def resume(self, broker_id: int) -> None:
        """SIGCONT after pause()."""
        pid = self._signal(broker_id, signal.SIGCONT)
        _wait_state(pid, stopped=False)

    def shutdown(self, broker_id: int, timeout_s: float = 30.0) -> None:
        """A clean stop (SIGTERM: Kafka's controlled shutdown, leadership moved away first); SIGKILL after timeout."""
        pid = self.pid_of(broker_id)
        if pid is None:
            return
        os.kill(pid, signal.SIGCONT)  # a paused process would not act on SIGTERM
        os.kill(pid, signal.SIGTERM)
        if not self._reap(broker_id, timeout_s):
            os.kill(pid, signal.SIGKILL)
            self._reap(broker_id, 10.0)

    def restart(self, broker_id: int, timeout_s: float = 60.0) -> None:
        """Stop the node cleanly if it runs (else it was killed), start it again and wait until a broker is unfenced
        (a controller: until it listens again)."""
        self.shutdown(broker_id)
        self.launch(broker_id)
        if broker_id in self.controllers:
            self.wait_listening(broker_id, timeout_s)
        else:
            self.wait_ready(timeout_s, brokers=(broker_id,))

    def wait_listening(self, node_id: int, timeout_s: float = 60.0) -> None:
        """Wait until the node runs and accepts a connection on its port (a controller has no readiness a client can
        ask for beyond that; the quorum's view is DescribeQuorum's, kcheck.cluster.admin.describe_quorum)."""
        node = self.node(node_id)
        deadline = time.monotonic() + timeout_s
        while True:
            interrupts.check()
            self._check_alive([node])
            with contextlib.suppress(OSError), socket.create_connection((node.host, node.port), timeout=1.0):
                return
            if time.monotonic() >= deadline:
                raise ClusterError(f"controller {node_id} does not listen on {node.host}:{node.port} after "
                                   f"{timeout_s:.0f} s")
            time.sleep(0.2)

    def launch(self, broker_id: int) -> None:
        """Start a stopped node's process and return at once (after an interrupt: the cluster as it was, without
        waiting for a broker to be unfenced)."""
        if self.is_running(broker_id):
            return
        self._launch(self.node(broker_id))
        self._save()

    def _reap(self, node_id: int, timeout_s: float) -> bool:
        """Wait until the node's process is gone; True if it is."""
        child = self._children.get(node_id)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if child is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=0.1)
            if self.pid_of(node_id) is None:
                return True
            time.sleep(0.05)
        return self.pid_of(node_id) is None

    def _java(self) -> str:
        java = shutil.which("java")
        if java is None:
            raise ClusterError("`java` is not on PATH (a Kafka cluster needs a JDK 17+)")
        return java

    def _classpath(self) -> str:
        """The broker's jars (resolved from Maven Central on first use, then from the cache)."""
        if self._jars is None:
            from kcheck.reference.kafka_jars import KafkaBridgeError, resolve_server

            try:
                self._jars = resolve_server(self.version).classpath
            except KafkaBridgeError as e:
                raise ClusterError(str(e)) from None
        return self._jars

    def _class_archive(self) -> Path:
        """Where this release's JVM class-data archive (AppCDS) lives: per JDK, as an archive fits one JDK build."""
        from kcheck.reference.kafka_jars import server_directory

        java = os.path.realpath(self._java())
        key = hashlib.sha1(f"{java}:{os.stat(java).st_mtime_ns}:{self._classpath()}".encode()).hexdigest()[:12]
        return server_directory(self.version) / f"classes-{key}.jsa"

    def _jvm_options(self, node: Node | None = None) -> list[str]:
        """JVM_OPTIONS and the cluster's id (whose node a process is: kcheck.cluster.folder.started_for), plus the
        class-data archive when there is one (a JVM then starts in about half the time); without one, broker 1
        records it when it exits cleanly (`stop()` moves it into the cache)."""
        options = [*JVM_OPTIONS, f"{ID_OPTION}{self._id}"]
        archive = self._class_archive()
        if archive.is_file():
            return [*options, f"-XX:SharedArchiveFile={archive}"]
        if node is not None and node.role == "broker" and node.node_id == 1:
            return [*options, f"-XX:ArchiveClassesAtExit={self._node_dir(node) / 'classes.jsa'}"]
        return options

    def _launch(self, node: Node) -> None:
        where = self._node_dir(node)
        log = open(where / "server.log", "ab")  # noqa: SIM115 - handed to the child, closed below
        try:
            argv = [self._java(), *self._jvm_options(node), "-cp", self._classpath(), "kafka.Kafka",
                    str(where / "server.properties")]
            if self.network is not None:  # `ip netns exec` execs java: the PID and command line are java's
                argv = self.network.command(node.node_id, argv)
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=where,
                start_new_session=True,  # its own process group: a Ctrl-C meant for kcheck does not reach it
            )
        finally:
            log.close()
        node.pid = proc.pid
        self._children[node.node_id] = proc
        if self._attached:  # a node of a cluster kcheck was given: the user's, it outlives an interrupt of kcheck
            interrupts.spare(proc.pid)
        if self._watchdog is not None:
            self._watchdog.node(proc.pid, where / "server.properties")

    # -- configuration -------------------------------------------------------------------------------------

    def _common(self, node: Node | None = None) -> dict[str, str]:
        """The properties every node shares; `node` the gated broker: the controller's address is the gate's."""
        voters = ",".join(f"{c.node_id}@{c.host}:{c.port}" for c in self.state.controllers)
        if self.gate is not None and node is not None and node.node_id == self.gate_broker:
            voters = f"{self.controller.node_id}@{self.gate.host}:{self.gate.port}"
        return {
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
        }

    def _controller_properties(self, node: Node, data: Path) -> dict[str, str]:
        return {
            "process.roles": "controller",
            "node.id": str(node.node_id),
            **self._common(),
            "listeners": f"CONTROLLER://{node.host}:{node.port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
            "log.dirs": str(data),
        }

    def _broker_properties(self, node: Node, data: Path) -> dict[str, str]:
        n = self.broker_count
        props = {
            "process.roles": "broker",
            "node.id": str(node.node_id),
            **self._common(node),
            "listeners": f"PLAINTEXT://{node.host}:{node.port}",
            "advertised.listeners": f"PLAINTEXT://{node.host}:{node.port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(data),
            "num.replica.fetchers": "1",
            "log.cleaner.threads": "1",
            # Internal topics: replicated as far as the brokers allow, 3 partitions instead of 50.
            "offsets.topic.replication.factor": str(min(3, n)),
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": str(min(3, n)),
            "transaction.state.log.min.isr": str(min(2, n)),
            "transaction.state.log.num.partitions": "3",
            "share.coordinator.state.topic.replication.factor": str(min(3, n)),
            "share.coordinator.state.topic.min.isr": str(min(2, n)),
            "group.initial.rebalance.delay.ms": "0",
        }
        if node.rack is not None:
            props["broker.rack"] = node.rack
        if node.sasl_port is not None:  # clients may also log in with SASL/PLAIN as one of the users
            props["listeners"] += f",SASL_PLAINTEXT://{node.host}:{node.sasl_port}"
            props["advertised.listeners"] += f",SASL_PLAINTEXT://{node.host}:{node.sasl_port}"
            props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
            props["sasl.enabled.mechanisms"] = "PLAIN"
            users = " ".join(f'user_{u}="{_jaas_quote(pw)}"' for u, pw in self.sasl_users.items())
            props["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};")
        props.update(self.config)
        return props

    # -- start and stop ------------------------------------------------------------------------------------

    def start(self, timeout_s: float = 60.0) -> LocalCluster:
        """Format every node's storage, start the controller and the brokers, and wait until every broker is
        registered and unfenced. On any failure nothing is left running and what it created is removed; on
        KeyboardInterrupt (Ctrl-C, or SIGTERM under kcheck.runtime.interrupts) the nodes are killed at once."""
        where = check_new(self._given_directory) if self._given_directory is not None else None
        java = self._java()
        self._classpath()  # before the clock: a first resolve downloads the jars
        owners = _owners(self.outlive)
        began = time.monotonic()
        self._dir, self._id = claim(where)
        try:
            self._start(java, owners, began, timeout_s)
        except BaseException as e:
            with interrupts.shielded():
                self.stop(kill=interrupts.by_interrupt(e))
            raise
        self.started_in_s = time.monotonic() - began
        return self

    def _start(self, java: str, owners: list[str], began: float, timeout_s: float) -> None:
        directory = self._dir
        assert directory is not None
        if owners:
            self._watchdog = Watchdog(owners, directory, self._id)
        if not self.outlive:
            self._owner_pid = os.getpid()
            _LIVE.add(self)
        network = self._make_network(directory) if self.with_network else None
        # In its own namespace every node has a network stack of its own: Kafka's usual ports serve.
        def port(usual: int) -> int:
            return usual if network else free_port()

        controllers = [Node(CONTROLLER_ID + i, "controller", port(9093)) for i in range(self.controller_count)]
        brokers = [Node(i + 1, "broker", port(9092), self.racks[i % len(self.racks)] if self.racks else None,
                        sasl_port=port(9094) if self.sasl_users else None)
                   for i in range(self.broker_count)]
        if self.network is not None:
            for node in (*controllers, *brokers):
                node.host = self.network.address(node.node_id)
        self._state = _State(self.version, random_cluster_id(), str(directory), controllers, brokers, self._id,
                             network)
        if self.gate_broker is not None:
            self.gate = ControllerGate((controllers[0].host, controllers[0].port)).start()
        for node in self._state.nodes:
            where = self._node_dir(node)
            where.mkdir()
            props = (self._controller_properties(node, where / "data") if node.role == "controller"
                     else self._broker_properties(node, where / "data"))
            (where / "server.properties").write_text(
                "".join(f"{k}={_property_value(v)}\n" for k, v in props.items()), encoding="utf-8")
        self._save()
        self._format(java, self._state.nodes, began + timeout_s)
        for node in self._state.nodes:
            self._launch(node)
        self._save()
        self.wait_ready(max(1.0, began + timeout_s - time.monotonic()))
        if self._watchdog is not None and (code := self._watchdog.proc.poll()) is not None:
            raise ClusterError(f"the cluster's watchdog exited (code {code}): the cluster would outlive "
                               f"this process")

    def _format(self, java: str, nodes: Sequence[Node], deadline: float) -> None:
        """Kafka's storage tool on every node at once (each is a JVM start: in parallel it costs one)."""
        procs = []
        for node in nodes:
            where = self._node_dir(node)
            cmd = [java, *self._jvm_options(), "-cp", self._classpath(), "kafka.tools.StorageTool", "format",
                   "-t", self.cluster_id, "-c", str(where / "server.properties")]
            out = open(where / "format.log", "wb")  # noqa: SIM115
            procs.append((node, subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                                 stderr=subprocess.STDOUT, cwd=where), out))
        try:
            for node, proc, _ in procs:
                try:
                    code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    raise ClusterError(f"formatting node {node.node_id}'s storage took too long") from None
                if code != 0:
                    why = why_it_stopped(self._node_dir(node) / "format.log")
                    raise ClusterError(f"formatting node {node.node_id}'s storage failed: {why}")
        finally:
            for _, proc, out in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                out.close()

    def _check_alive(self, nodes: Sequence[Node]) -> None:
        for node in nodes:
            if not self.is_running(node.node_id):
                what = f"{node.role} {node.node_id}"
                why = why_it_stopped(self._node_dir(node) / "server.log")
                raise ClusterError(f"{what} exited while starting: {why}")

    def wait_ready(self, timeout_s: float = 60.0, brokers: Sequence[int] | None = None) -> None:
        """Wait until each of `brokers` (default: all) answers on its own port and DescribeCluster lists it
        unfenced. Asking the broker itself matters after a kill -9: the controller keeps listing the dead
        incarnation until its session times out, while a broker answers requests only once it is unfenced."""
        want = [b for b in self.state.brokers if brokers is None or b.node_id in brokers]
        # The controllers must live while the cluster starts; a broker restarted later is waited for on its own (a
        # campaign may have a minority of a quorum's controllers down meanwhile).
        nodes = [*self.state.controllers, *want] if brokers is None else want
        deadline = time.monotonic() + timeout_s
        pending = list(want)
        while pending:
            interrupts.check()
            self._check_alive(nodes)
            if self.unfenced(pending[0].node_id):
                pending.pop(0)
                continue
            if time.monotonic() >= deadline:
                missing = ", ".join(str(b.node_id) for b in pending)
                last = last_warning(self._node_dir(pending[0]) / "server.log")
                raise ClusterError(f"broker(s) {missing} not registered and unfenced after {timeout_s:.0f} s "
                                   f"(broker {pending[0].node_id}'s last warning: {last})")
            time.sleep(0.2)

    def unfenced(self, broker_id: int) -> bool:
        """True if the broker answers on its own port and the cluster it reports lists it unfenced."""
        node = self.node(broker_id)
        if not self.is_running(broker_id):
            return False
        from kafka.admin import KafkaAdminClient
        from kafka.errors import KafkaError

        with _quiet_kafka_logs():
            try:
                admin = KafkaAdminClient(bootstrap_servers=[f"{node.host}:{node.port}"], client_id="kcheck-cluster",
                                         request_timeout_ms=3000, bootstrap_timeout_ms=2000)
            except (KafkaError, OSError):
                return False
            try:
                listed = admin.describe_cluster()["brokers"]
            except (KafkaError, OSError):
                return False
            finally:
                admin.close()
        return any(int(b["broker_id"]) == broker_id and not b.get("is_fenced") for b in listed)

    def stop(self, timeout_s: float = 30.0, remove: bool = True, kill: bool = False) -> float:
        """Stop every process (brokers first, with SIGTERM: a controlled shutdown; SIGKILL after `timeout_s`, or at
        once with `kill`), then remove what kcheck created in the folder (`left`: what it found there and left).
        Returns the seconds it took."""
        began = time.monotonic()
        if self._state is not None:
            clean = self._stop_nodes(timeout_s, kill)
            self._keep_class_archive(clean)
            running = [n.node_id for n in self.state.nodes if self.is_running(n.node_id)]
            if running:
                raise ClusterError(f"node(s) {', '.join(map(str, running))} did not stop")
        self._remove_network()
        if self.gate is not None:  # after the brokers: the gated one's controlled shutdown goes through it
            self.gate.stop()
            self.gate = None
        if remove and self._dir is not None:
            self.left = remove_ours(self._dir, self._id)
        self._dismiss_watchdog()
        self._state = None
        self._children.clear()
        return time.monotonic() - began

    def _make_network(self, directory: Path) -> dict[str, Any]:
        """Every node's namespace (kcheck.cluster.netns), made before any node starts. Its owner, whose end removes
        it (the network's watchdog), is this process; for a cluster that outlives it (`cluster up`), a holder process
        instead, which `stop()` (`cluster down`) ends and the cluster's watchdog kills with the nodes."""
        ids = [CONTROLLER_ID + i for i in range(self.controller_count)] + list(range(1, self.broker_count + 1))
        holder = None
        if self.outlive:
            holder = subprocess.Popen(
                [sys.executable, "-c", "import signal; signal.pause()", f"{ID_OPTION}{self._id}",
                 str(directory / HOLDER)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True)  # holding no pipe of `up`'s caller open
            if self._watchdog is not None:
                self._watchdog.node(holder.pid, directory / HOLDER)
        self._holder = holder
        self.network = Network(ids, owner=holder.pid if holder else os.getpid())
        try:
            self.network.create()
        except NetnsError as e:
            raise ClusterError(f"cannot make the network: {e}") from None
        assert self.network.subnet is not None
        return {"tag": self.network.tag, "owner": self.network.owner, "subnet": str(self.network.subnet),
                "holder": holder.pid if holder else None}

    def _remove_network(self) -> None:
        """After the nodes: every namespace and the caller's link gone, then the holder ended (if it is still the
        holder of this cluster)."""
        if self.network is not None:
            self.network.remove()
            self.network = None
        state = self._state.network if self._state is not None else None
        holder = state.get("holder") if state else None
        if holder is not None and self._dir is not None and started_for(holder, self._dir / HOLDER, self._id):
            with contextlib.suppress(ProcessLookupError):
                os.kill(holder, signal.SIGKILL)
        if self._holder is not None:
            self._holder.wait()
            self._holder = None

    def _stop_nodes(self, timeout_s: float, kill: bool) -> set[int]:
        """Signal each group (brokers, then the controllers); the node ids that exited on SIGTERM (a killed JVM
        writes no class archive)."""
        clean: set[int] = set()
        for group in (self.state.brokers, self.state.controllers):
            pids = {n.node_id: pid for n in group if (pid := self.pid_of(n.node_id)) is not None}
            for pid in pids.values():
                with contextlib.suppress(ProcessLookupError):
                    if kill:
                        os.kill(pid, signal.SIGKILL)
                        continue
                    os.kill(pid, signal.SIGCONT)
                    os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + (0.0 if kill else timeout_s)
            for node_id, pid in pids.items():
                if not kill and self._reap(node_id, max(0.0, deadline - time.monotonic())):
                    clean.add(node_id)
                    continue
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                self._reap(node_id, 10.0)
        return clean

    def _keep_class_archive(self, clean: set[int]) -> None:
        recorded = self.directory / "broker-1" / "classes.jsa"
        if 1 in clean and recorded.is_file() and recorded.stat().st_size > 0:
            archive = self._class_archive()
            partial = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
            try:  # copied beside, then renamed: another cluster never reads half an archive
                shutil.copyfile(recorded, partial)
                os.replace(partial, archive)
            except OSError:
                partial.unlink(missing_ok=True)

    def _dismiss_watchdog(self) -> None:
        if self._watchdog is not None:
            self._watchdog.done()
            self._watchdog = None
        _LIVE.discard(self)

    def status(self) -> list[dict[str, Any]]:
        """One row per node: id, role, port, rack, pid, and whether it runs (or is paused)."""
        rows = []
        for n in self.state.nodes:
            pid = self.pid_of(n.node_id)
            state = "stopped"
            if pid is not None:
                state = "paused" if _is_stopped(pid) else "running"
            rows.append({"node": n.node_id, "role": n.role, "address": f"{n.host}:{n.port}", "rack": n.rack,
                         "pid": pid, "state": state})
        return rows

    def __enter__(self) -> LocalCluster:
        return self.start() if self._state is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _property_value(text: str) -> str:
    """A value as java.util.Properties reads it back: backslashes doubled, line breaks escaped."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def _jaas_quote(text: str) -> str:
    """A JAAS option value inside double quotes: backslash and quote escaped."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _wait_state(pid: int, stopped: bool, timeout_s: float = 5.0) -> None:
    """A signal is delivered asynchronously: wait (briefly) until the process shows the state it asked for."""
    deadline = time.monotonic() + timeout_s
    while _is_stopped(pid) != stopped and time.monotonic() < deadline:
        time.sleep(0.02)


def _is_stopped(pid: int) -> bool:
    """True if the process is stopped (SIGSTOP): 'T' in /proc, or in ps where there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] == "T"
    except OSError:
        if sys.platform.startswith("linux"):
            return False
    out = subprocess.run(["ps", "-p", str(pid), "-o", "stat="], capture_output=True, text=True)
    return out.stdout.strip().startswith("T")


def _quiet_kafka_logs() -> contextlib.AbstractContextManager[None]:
    """kafka-python logs every refused connection at ERROR/WARNING; while polling for readiness those are expected."""
    import logging

    from kcheck.cluster.live import kafka_log_level

    return kafka_log_level(logging.CRITICAL)


# ---------------------------------------------------------------------------------------------------------
# kcheck cluster up | down | status




def release_option(text: str, option: str = "--kafka-version") -> str:
    """A release whose broker kcheck can run (kafka_jars.check_release), else one line naming `option`; checked
    before the release is ever joined into a cache path or handed to Maven."""
    from kcheck.reference.kafka_jars import UnknownRelease, check_release

    try:
        return check_release(text)
    except UnknownRelease as e:
        raise InputError(option, str(e)) from None


def controllers_option(count: int, option: str = "--controllers") -> int:
    """How many controllers: 1 (a one-voter quorum) or an odd number up to MAX_CONTROLLERS. An even quorum tolerates
    no more failures than the odd one below it (a majority of 4 is 3), so kcheck refuses it."""
    if not (1 <= count <= MAX_CONTROLLERS and count % 2 == 1):
        raise InputError(option, f"{count} is not an odd number of controllers from 1 to {MAX_CONTROLLERS} (a "
                                 f"majority of an even quorum is no more fault-tolerant than of the odd one below it)")
    return count


def network_option(option: str = "--network") -> None:
    """Nodes in namespaces need Linux and the rights to make them (kcheck.cluster.netns.unavailable)."""
    why = netns_unavailable()
    if why is not None:
        raise InputError(option, why)


def _network_of(state: _State) -> Network:
    """The network a state file records, to cut links in and to remove (by another process than its maker)."""
    assert state.network is not None
    return Network([n.node_id for n in state.nodes], tag=state.network["tag"], owner=state.network["owner"],
                   subnet=ipaddress.IPv4Network(state.network["subnet"]))


def seconds_option(option: str, value: float, low: float, high: float) -> float:
    """A number of seconds within low..high (NaN and infinity are outside)."""
    if not low <= value <= high:
        raise InputError(option, f"{value:g} is outside {low:g}..{high:,g} seconds")
    return value








__all__ = ["CONTROLLER_ID", "STATE_FILE", "ClusterError", "FolderError", "LocalCluster", "Node", "Watchdog",
           "controllers_option", "default_directory", "free_port", "parse_racks", "release_option", "seconds_option",
           "why_it_stopped"]
