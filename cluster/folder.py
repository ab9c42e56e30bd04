"""Which folder is a kcheck cluster's, which processes are its nodes, and which files kcheck may delete there.

kcheck acts on a cluster only by identity, never by a path or a PID read from a file:

- When kcheck creates a cluster folder it writes `kcheck-cluster.marker` first: the folder's own real path and a
  random id. A folder is the cluster's only if its marker names the folder's real path. A copy (`cp -a`) or a
  move (`mv`) of the folder carries a marker naming another path, and a symbolic link to it is not the folder
  itself: `kcheck cluster down|status`, `chaos --dir`, `replay --on-cluster --dir` and the watchdog refuse them in
  one line (exit 2), so they never stop or delete the cluster the copy came from, nor the copy.
- Every node kcheck starts carries the id on its command line (`-Dkcheck.cluster.id=<id>`) and ends with its
  properties file inside that folder. A PID from the state file is signalled only if its command line holds both
  (`started_for`): a PID recycled by another process, a node of another cluster (a copy's state file names the
  original's PIDs), or a process named in a hand-edited state file is never touched.
- `remove_ours` deletes only what kcheck created: the marker, the state file, and each node's folder with the
  files kcheck and Kafka write there (properties, logs, data). Anything else (a user's own file in the folder or
  in a node's folder, a symbolic link put in place of a data folder) is left, and said; the folder goes only
  once it is empty.

The state file and the marker are read as small regular files (a FIFO, a device, a symbolic link, a file over
`STATE_LIMIT`, JSON nested too deep or of the wrong shape are refused in one line), every field checked for its
type and range before any of it is used; node folders are named from checked integers only.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcheck.inputs.formats import InputError, control_problem, shown

STATE_FILE = "kcheck-cluster.json"
MARKER_FILE = "kcheck-cluster.marker"
MARKER_KIND = "kcheck cluster folder"
ID_OPTION = "-Dkcheck.cluster.id="  # on every node's command line: whose node it is
STATE_LIMIT = 1 << 20  # bytes: a state file is under 2 KiB for 64 brokers; a larger one is not kcheck's
MARKER_LIMIT = 64 << 10
MAX_BROKERS = 64
CONTROLLER_ID = 1000  # the first controller; a quorum of N controllers is nodes 1000..1000+N-1
MAX_CONTROLLERS = 5
# 3: a `network` (nodes in namespaces, kcheck.cluster.netns) and each node's `host`; 2: `controllers`, a list;
# version 1 (no `state_version`) had one `controller`
STATE_VERSION = 3
HOLDER = "network-holder"  # the last argument of the process that holds an outliving cluster's network (no file)
PID_MAX = 1 << 22  # Linux's largest pid_max
_ID_RE = re.compile(r"[0-9a-f]{32}")
_KAFKA_UUID_RE = re.compile(r"[A-Za-z0-9_-]{22}")
# What a node's folder holds: what kcheck writes (properties, the format tool's log, the node's log, the JVM class
# archive broker 1 records) and Kafka's data folder; the JVM's own crash files (hs_err_pid*.log) too.
NODE_FILES = ("server.properties", "server.log", "format.log", "classes.jsa")
NODE_FOLDERS = ("data",)
_JVM_FILES = re.compile(r"(?:hs_err|replay)_pid[0-9]+\.log")
_NODE_FOLDER = re.compile(r"controller(?:-100[1-4])?|broker-[1-9][0-9]?")


class FolderError(InputError):
    """A cluster folder kcheck must not act on, or cannot: one line naming --dir (the CLI exits 2)."""

    def __init__(self, message: str) -> None:
        super().__init__("--dir", message)


@dataclass(frozen=True)
class Opened:
    """A cluster folder whose marker names it: its real path, its id and its checked state."""

    path: Path
    id: str
    state: dict[str, Any]


def default_directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kcheck" / "cluster"


def _lstat(path: Path) -> os.stat_result | None:
    """lstat, with the OS's refusals as one line (None: nothing there)."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise FolderError(f"{shown(str(path))}: a part of the path is a file, not a folder") from None
    except OSError as e:
        raise FolderError(f"{shown(str(path))}: {_why(e)}") from None
    except ValueError:  # a NUL character: no file can have that name
        raise FolderError(f"{shown(str(path))}: not a path (it holds a NUL character)") from None


def _why(e: OSError) -> str:
    if e.errno == errno.ELOOP:
        return "too many levels of symbolic links (a symlink loop)"
    return e.strerror or str(e)


def _real(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path, strict=True))
    except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop on Pythons before 3.13
        raise FolderError(f"{shown(str(path))}: {_why(e) if isinstance(e, OSError) else 'a symlink loop'}") from None


def check_new(text: str | os.PathLike[str] | None) -> Path:
    """The folder a new cluster may be set up in (absolute, not created yet): absent, or an empty folder; not a
    symbolic link; its nearest existing parent a folder kcheck can create in. Nothing is created here."""
    path = Path(os.path.abspath(text)) if text is not None and str(text) != "" else (
        default_directory() if text is None else None)
    if path is None:
        raise FolderError("empty; give a folder")
    st = _lstat(path)
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise FolderError(f"{shown(str(path))} is a symbolic link; give the folder itself")
        if not stat.S_ISDIR(st.st_mode):
            raise FolderError(f"{shown(str(path))} exists and is not a folder")
        if os.path.lexists(path / MARKER_FILE) or os.path.lexists(path / STATE_FILE):
            raise FolderError(f"a cluster is already set up in {shown(str(path))} (`kcheck cluster down --dir "
                              f"{shown(str(path))}` first)")
        try:
            if any(os.scandir(path)):
                raise FolderError(f"{shown(str(path))} exists and is not an empty folder")
        except OSError as e:
            raise FolderError(f"{shown(str(path))}: {_why(e)}") from None
        _check_writable(path)
        return path
    parent = path.parent
    while (pst := _lstat(parent)) is None:
        parent = parent.parent
    if not stat.S_ISDIR(os.stat(parent).st_mode if stat.S_ISLNK(pst.st_mode) else pst.st_mode):
        raise FolderError(f"{shown(str(path))}: {shown(str(parent))} is a file, not a folder")
    _check_writable(_real(parent))
    return path


def _check_writable(folder: Path) -> None:
    """Create and delete a file there: the only test that holds for root and for /proc or a read-only mount."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".kcheck-probe-", dir=folder)
    except OSError as e:
        raise FolderError(f"cannot create files in {shown(str(folder))}: {_why(e)}") from None
    os.close(fd)
    os.unlink(probe)


def claim(path: Path | None) -> tuple[Path, str]:
    """Create the folder (`path`, checked by check_new; None: a temporary one) and write its marker first:
    (its real path, the new id)."""
    if path is None:
        folder = Path(tempfile.mkdtemp(prefix="kcheck-cluster-"))
    else:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise FolderError(f"cannot create {shown(str(path))}: {_why(e)}") from None
        folder = path
    real = _real(folder)
    ident = uuid.uuid4().hex
    doc = json.dumps({"kind": MARKER_KIND, "path": str(real), "id": ident}) + "\n"
    try:  # O_EXCL: of two `up` in one folder at once, one wins and the other is told
        fd = os.open(real / MARKER_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        raise FolderError(f"a cluster is already set up in {shown(str(real))}") from None
    except OSError as e:
        raise FolderError(f"cannot create files in {shown(str(real))}: {_why(e)}") from None
    with open(fd, "w", encoding="utf-8") as f:
        f.write(doc)
    return real, ident


def read_small(path: Path, limit: int, what: str) -> bytes:
    """A regular file of at most `limit` bytes, opened without following a symbolic link or waiting on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise
    except OSError as e:
        reason = "a symbolic link" if e.errno == errno.ELOOP else _why(e)
        raise FolderError(f"{shown(str(path))}: not a kcheck {what} ({reason})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FolderError(f"{shown(str(path))}: not a kcheck {what} (not a regular file)")
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FolderError(f"{shown(str(path))}: not a kcheck {what} (larger than {limit:,} bytes)")
    return data


def _json(path: Path, limit: int, what: str) -> Any:
    data = read_small(path, limit, what)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        why = "nested too deep" if isinstance(e, RecursionError) else str(e).splitlines()[0][:100]
        raise FolderError(f"{shown(str(path))}: not a kcheck {what} ({why})") from None


def _marker(real: Path) -> tuple[str, str] | None:
    """(path, id) the folder's marker holds; None when it has none."""
    try:
        doc = _json(real / MARKER_FILE, MARKER_LIMIT, "cluster marker")
    except FileNotFoundError:
        return None
    if not (isinstance(doc, dict) and doc.get("kind") == MARKER_KIND and isinstance(doc.get("path"), str)
            and isinstance(doc.get("id"), str) and _ID_RE.fullmatch(doc["id"])):
        raise FolderError(f"{shown(str(real / MARKER_FILE))}: not a kcheck cluster marker")
    return doc["path"], doc["id"]


def identity(text: str | os.PathLike[str] | None) -> tuple[Path, str]:
    """The cluster folder `text` names (default: kcheck's default folder), checked to be the folder its marker
    was written for: (real path, id). A copy, a move, a symbolic link, or a folder without a marker: FolderError."""
    path = Path(os.path.abspath(text)) if text is not None and str(text) != "" else (
        default_directory() if text is None else None)
    if path is None:
        raise FolderError("empty; give a cluster folder")
    st = _lstat(path)
    if st is None:
        raise FolderError(f"no cluster in {shown(str(path))} (no such folder; start one with `kcheck cluster up`)")
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(path)
        raise FolderError(f"{shown(str(path))} is a symbolic link (to {shown(target)}), not a cluster folder: "
                          "give the folder `kcheck cluster up` created")
    if not stat.S_ISDIR(st.st_mode):
        raise FolderError(f"{shown(str(path))} is not a folder")
    real = _real(path)
    marker = _marker(real)
    if marker is None:
        if os.path.lexists(real / STATE_FILE):
            raise FolderError(f"{shown(str(path))} has a cluster state file but no kcheck marker: not a folder kcheck "
                              "set a cluster up in (kcheck acts only on folders it created)")
        raise FolderError(f"no cluster in {shown(str(path))} (not a kcheck cluster folder; start one with "
                          "`kcheck cluster up`)")
    origin, ident = marker
    if origin != str(real):
        raise FolderError(_elsewhere(path, origin, ident))
    return real, ident


def _elsewhere(path: Path, origin: str, ident: str) -> str:
    """Why a folder whose marker names another path is refused: a copy (the original still has the same id) or a
    move."""
    there = None
    with contextlib.suppress(InputError, OSError):
        there = _marker(Path(origin))
    if there == (origin, ident):
        return (f"{shown(str(path))} is a copy of the cluster folder {shown(origin)} (its marker names that folder): "
                "kcheck acts only on the folder it set the cluster up in")
    return (f"{shown(str(path))} was moved or copied from {shown(origin)} (its marker names that folder): kcheck acts "
            f"only on the folder it set the cluster up in; move it back to {shown(origin)} to stop that cluster")


def has_cluster(text: str | os.PathLike[str]) -> bool:
    """True if the folder holds a kcheck marker or state file (then it is opened, and checked, as a cluster's)."""
    path = Path(os.path.abspath(text))
    return os.path.lexists(path / MARKER_FILE) or os.path.lexists(path / STATE_FILE)


def open_existing(text: str | os.PathLike[str] | None) -> Opened:
    """identity() and the state file, every field checked (check_state)."""
    real, ident = identity(text)
    try:
        doc = _json(real / STATE_FILE, STATE_LIMIT, "cluster state file")
    except FileNotFoundError:
        raise FolderError(f"no cluster in {shown(str(real))} (no {STATE_FILE}: it was stopped, or never started)"
                          ) from None
    problem = check_state(doc, real, ident)
    if problem is not None:
        raise FolderError(f"{shown(str(real / STATE_FILE))}: not a kcheck cluster state file ({problem})")
    return Opened(real, ident, doc)


def _int(value: object, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def _node_problem(node: object, role: str, ids: range) -> str | None:
    if not isinstance(node, dict) or set(node) - {"node_id", "role", "port", "rack", "pid", "sasl_port", "host"}:
        return f"a {role} entry is not a node"
    if node.get("role") != role or not _int(node.get("node_id"), ids.start, ids.stop - 1):
        return f"a {role} entry has a wrong role or node id"
    if not _int(node.get("port"), 1, 65535) or not (node.get("sasl_port") is None
                                                     or _int(node.get("sasl_port"), 1, 65535)):
        return f"{role} {node.get('node_id')}: a port is not 1..65535"
    if not (node.get("pid") is None or _int(node.get("pid"), 1, PID_MAX)):
        return f"{role} {node['node_id']}: pid is not a process id"
    if "host" in node and not _ipv4(node["host"]):
        return f"{role} {node['node_id']}: host is not an IPv4 address"
    rack = node.get("rack")
    if rack is not None and (not isinstance(rack, str) or not rack or len(rack) > 255 or control_problem(rack)):
        return f"{role} {node['node_id']}: rack is not a rack name"
    return None


def _ipv4(text: object) -> bool:
    try:
        return isinstance(text, str) and bool(ipaddress.IPv4Address(text))
    except ValueError:
        return False


def _network_problem(network: object) -> str | None:
    """Why a state file's `network` is not one kcheck.cluster.local wrote (None: it is, or there is none)."""
    if network is None:
        return None
    if not isinstance(network, dict) or set(network) != {"tag", "owner", "subnet", "holder"}:
        return "network is not a network"
    if not isinstance(network["tag"], str) or not re.fullmatch(r"[0-9a-f]{4}", network["tag"]):
        return "network: tag is not 4 hexadecimal digits"
    if not _int(network["owner"], 1, PID_MAX) or not (network["holder"] is None
                                                       or _int(network["holder"], 1, PID_MAX)):
        return "network: owner or holder is not a process id"
    try:
        subnet = ipaddress.IPv4Network(network["subnet"])
    except (ValueError, TypeError):
        return "network: subnet is not an IPv4 network"
    if not subnet.subnet_of(ipaddress.IPv4Network("10.213.0.0/16")) or subnet.prefixlen != 24:
        return "network: subnet is not a /24 of 10.213.0.0/16"
    return None


def check_state(doc: object, real: Path, ident: str) -> str | None:
    """Why `doc` is not the state file of the cluster whose folder is `real` with id `ident`; None if it is."""
    from kcheck.reference.kafka_jars import UnknownRelease, check_release

    if not isinstance(doc, dict):
        return "not a JSON object"
    if doc.get("id") != ident:
        return "its id is not the folder marker's"
    if doc.get("directory") != str(real):
        return "it names another folder"
    try:
        check_release(str(doc.get("version")))
    except UnknownRelease:
        return "its Kafka release is not one kcheck knows"
    if not isinstance(doc.get("cluster_id"), str) or not _KAFKA_UUID_RE.fullmatch(doc["cluster_id"]):
        return "cluster_id is not a Kafka cluster id"
    brokers = doc.get("brokers")
    if not isinstance(brokers, list) or not 1 <= len(brokers) <= MAX_BROKERS:
        return f"brokers is not a list of 1..{MAX_BROKERS} nodes"
    controllers = state_controllers(doc)
    if controllers is None:
        return f"controllers is not a list of 1..{MAX_CONTROLLERS} nodes (or, state version 1, one controller)"
    controller_ids = range(CONTROLLER_ID, CONTROLLER_ID + MAX_CONTROLLERS)
    for node, role, ids in (*((c, "controller", controller_ids) for c in controllers),
                            *((b, "broker", range(1, MAX_BROKERS + 1)) for b in brokers)):
        if (problem := _node_problem(node, role, ids)) is not None:
            return problem
    if len({b["node_id"] for b in brokers}) != len(brokers):
        return "a broker is listed twice"
    if [c["node_id"] for c in controllers] != list(range(CONTROLLER_ID, CONTROLLER_ID + len(controllers))):
        return f"the controllers are not nodes {CONTROLLER_ID}.. in order"
    return _network_problem(doc.get("network"))


def state_controllers(doc: dict[str, Any]) -> list[Any] | None:
    """The controller entries of a state file: `controllers` (state version 2), or the one `controller` of a
    version-1 file (written by kcheck before quorums of several controllers); None if neither is there."""
    version = doc.get("state_version", 1)
    if version == 1 and "controllers" not in doc:
        return [doc.get("controller")]
    listed = doc.get("controllers")
    if version not in (2, STATE_VERSION) or not isinstance(listed, list) or not 1 <= len(listed) <= MAX_CONTROLLERS:
        return None
    return listed


def node_folder(node_id: int) -> str:
    """The folder of node `node_id` inside its cluster's folder (from a checked integer only)."""
    if node_id == CONTROLLER_ID:  # the first controller's folder keeps its name from before quorums
        return "controller"
    return f"controller-{int(node_id)}" if node_id > CONTROLLER_ID else f"broker-{int(node_id)}"


def argv(pid: int) -> list[str] | None:
    """The command line of a live process as its arguments, or None if it is gone (or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            if f.read().rsplit(")", 1)[-1].split()[0] == "Z":
                return None
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
        return [a.decode("utf-8", "surrogateescape") for a in raw.split(b"\0")[:-1]] if raw else None
    except (OSError, IndexError):
        pass
    if not sys.platform.startswith("linux"):  # no /proc: ask ps (arguments split at spaces)
        out = subprocess.run(["ps", "-p", str(pid), "-o", "stat=,command="], capture_output=True, text=True)
        line = out.stdout.strip()
        if out.returncode == 0 and line and not line.startswith("Z"):
            return line.split()[1:]
    return None


def started_for(pid: int, properties: Path | str, ident: str) -> bool:
    """True if `pid` runs now as a node kcheck started for this cluster: its command line carries the cluster's id
    and ends with that node's properties file (whole arguments, not substrings)."""
    args = argv(pid)
    return args is not None and bool(ident) and args[-1:] == [str(properties)] and f"{ID_OPTION}{ident}" in args


def find_node(properties: Path | str, ident: str) -> int | None:
    """The PID of a process running as this node (started_for), looked for among all processes: a node whose PID
    was never recorded (kcheck interrupted between starting it and saving its PID) is still found, and never started
    twice. None where there is no /proc."""
    if not ident or not os.path.isdir("/proc"):
        return None
    wanted = [f"{ID_OPTION}{ident}".encode(), str(properties).encode()]
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    raw = f.read()
            except OSError:
                continue
            if all(w in raw for w in wanted) and started_for(int(entry.name), properties, ident):
                return int(entry.name)
    return None


def remove_ours(real: Path, ident: str) -> list[str]:
    """Delete what kcheck created in the cluster folder `real` (only while its marker still names it with `ident`):
    node folders, state file, and the marker last; the folder too if it is then empty. Returns what was left (paths
    relative to the folder), sorted."""
    if not matches(real, ident):
        return ["(nothing: the folder's marker no longer names it)"]
    left: list[str] = []
    try:
        entries = sorted(e.name for e in os.scandir(real))
    except OSError as e:
        return [f"(nothing: {_why(e)})"]
    for name in entries:
        if _NODE_FOLDER.fullmatch(name):
            left += _remove_node(real / name)
        elif name in (STATE_FILE, STATE_FILE + ".tmp"):
            if not _unlink_file(real / name):
                left.append(name)
        elif name != MARKER_FILE:
            left.append(name)
    _unlink_file(real / MARKER_FILE)  # last: until now the folder was still known as the cluster's
    if not left:
        with contextlib.suppress(OSError):
            os.rmdir(real)
    return left


def _unlink_file(path: Path) -> bool:
    """Delete `path` if it is a regular file (never what a symbolic link points to); True if it is gone."""
    with contextlib.suppress(OSError):
        if stat.S_ISREG(os.lstat(path).st_mode):
            os.unlink(path)
    return not os.path.lexists(path)


def _remove_node(folder: Path) -> list[str]:
    st = _lstat_quiet(folder)
    if st is None:
        return []
    if not stat.S_ISDIR(st.st_mode):
        return [folder.name]
    left = []
    for entry in os.scandir(folder):
        kind = _lstat_quiet(Path(entry.path))
        if kind is None:
            continue
        if entry.name in NODE_FILES or _JVM_FILES.fullmatch(entry.name):
            if stat.S_ISREG(kind.st_mode):
                os.unlink(entry.path)
                continue
        elif entry.name in NODE_FOLDERS and stat.S_ISDIR(kind.st_mode):
            shutil.rmtree(entry.path, ignore_errors=True)  # never follows a symbolic link inside
            if not os.path.lexists(entry.path):
                continue
        left.append(f"{folder.name}/{entry.name}")
    if not left:
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    return left


def _lstat_quiet(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def matches(real: str | Path, ident: str) -> bool:
    """True while the folder's marker names it with `ident` (never raises: the watchdog asks it)."""
    try:
        return _marker(Path(real)) == (str(real), ident)
    except (InputError, OSError):
        return False


def describe_left(real: Path, left: Sequence[str]) -> str:
    """'; left X, Y (not created by kcheck)' for a message, or ''."""
    if not left:
        return ""
    shown_names = ", ".join(shown(str(real / n)) if not n.startswith("(") else n for n in left[:5])
    more = f" and {len(left) - 5} more" if len(left) > 5 else ""
    return f"; left {shown_names}{more} (not created by kcheck)"
