"""Network namespaces for fault campaigns: every node its own network stack and address, every link one kcheck can
cut, and nothing of the machine's own network touched.

A `Network` (Linux, root or CAP_NET_ADMIN + CAP_SYS_ADMIN; `unavailable()` says why not) is made of:
- a hub namespace holding a bridge, the switch every node is plugged into;
- per node a namespace with one interface (`eth0`, its peer a port of the bridge) and one address in a /24 of
  10.213.0.0/16 that no route of the caller's namespace uses;
- one veth pair from the caller's namespace to the bridge, with the subnet's .254, so the process that made the
  network (its clients: producers, consumers, admin) reaches every node. It is the only interface created outside
  the network's own namespaces, and it goes with them.

A node's process is started with `command(node, argv)` (`ip netns exec`, which enters the namespace and execs, so
the PID is the program's own). Faults live in a node's own neighbour table, so they never touch another namespace:
`cut(a, b)` drops what `a` sends to `b` (b's address is pinned to a hardware address nobody has: the frames
vanish, a TCP peer sees no answer, as behind a partition, not a refused connection; established connections too);
both directions is `cut(a, b)` and `cut(b, a)`;
`isolate(a)` cuts `a` from every other node but not from the caller (clients still reach it, as when a leader is cut
from the controller quorum only); `uncut(a, b)` undoes one cut, `heal()` every cut and every shaped link.

Slow and lossy links: `shape(a, b, SLOW or LOSSY)` pins `b`'s address in `a`'s table to a hardware address of the
relay, a process in the hub namespace reading the bridge through a port of its own (a packet socket): it holds each
frame for DELAY_MS +- JITTER_MS (in order per link) or drops it (LOSS_PERCENT, in bursts: BURST_PERCENT), then sends it
on to `b`'s real hardware address. Only the links shaped pass through it: the caller's link and every other pair are
untouched. (The kernel's sch_netem would do the same at the sender's queue, but some kernels, this project's CI among
them, are built without it; the relay needs nothing but packet sockets.) `unshape(a, b)` undoes one; a cut wins over a
shape of the same link while both last.

Clean-up: every name carries the owner's PID and a random tag (`kc<pid>x<tag>...`). `remove()` deletes what this
network made; a watchdog process in its own session (as `LocalCluster`'s) deletes it when the owner ends however it
ends (SIGKILL included); `sweep()` deletes networks whose owner is gone (left by a watchdog killed too). Nothing
without kcheck's prefix and a dead owner is ever deleted.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

PREFIX = "kc"
_NAME = re.compile(rf"^{PREFIX}(\d+)x([0-9a-f]{{4}})(h|n\d+)$")  # kc<owner pid>x<tag>(h | n<node>)
_SUPERNET = ipaddress.ip_network("10.213.0.0/16")
# A cut sends to this hardware address, which no interface has: the bridge floods the frames and nobody takes them,
# so they vanish as behind a partition (a blackhole route would fail the sender's connect at once instead).
_NOWHERE = "02:6b:63:00:00:00"
# Shaped links: what a node sends to one of these hardware addresses goes through the relay (`relay()`).
SLOW, LOSSY = "slow", "lossy"
_RELAY_MAC = {SLOW: "02:6b:63:00:00:01", LOSSY: "02:6b:63:00:00:02"}
# The figures: a slow link holds each frame 200 ms +- 50 ms (uniform; Jepsen's `slow` nemesis defaults to a mean of
# 50 ms); a lossy link drops 20% of frames (Jepsen's `flaky`: netem loss 20%), a drop followed by another with
# probability BURST_PERCENT (bursts of 2 frames on average), the rate staying at LOSS_PERCENT.
DELAY_MS, JITTER_MS = 200, 50
LOSS_PERCENT, BURST_PERCENT = 20, 50


class NetnsError(RuntimeError):
    """A network could not be made or changed (the `ip` command's own message)."""


def _ip(*args: str, namespace: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = ["ip", *(("-n", namespace) if namespace else ()), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise NetnsError(f"{' '.join(cmd)}: {done.stderr.strip() or done.stdout.strip()}")
    return done


def unavailable() -> str | None:
    """Why no network can be made here (None: it can): no `ip` command, not Linux, or not allowed to make a
    namespace (root or CAP_SYS_ADMIN and CAP_NET_ADMIN are needed)."""
    if not sys.platform.startswith("linux"):
        return "network namespaces need Linux"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    probe = f"{PREFIX}{os.getpid()}x{random.getrandbits(16):04x}h"
    done = _ip("netns", "add", probe, check=False)
    if done.returncode != 0:
        return f"cannot make a network namespace: {done.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def relay_unavailable() -> str | None:
    """Why links cannot be shaped here (None: they can): the relay reads the bridge through a packet socket with
    virtio-net headers (Linux 2.6.40+ and CAP_NET_RAW)."""
    import socket

    try:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0) as probe:
            probe.setsockopt(263, 15, 1)  # SOL_PACKET, PACKET_VNET_HDR
    except (OSError, AttributeError) as e:
        return f"the link relay needs a packet socket with virtio-net headers (CAP_NET_RAW): {e}"
    return None


def _namespaces() -> list[str]:
    done = _ip("netns", "list", check=False)
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def _links() -> list[str]:
    done = _ip("-o", "link", "show", check=False)
    return [m.group(1) for m in re.finditer(r"^\d+: ([^:@\s]+)", done.stdout, re.M)]


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 of 10.213.0.0/16 that no address or route of the caller's namespace overlaps, nor another network's."""
    used = _ip("-4", "route", "show", "table", "all", check=False).stdout + _ip("-4", "addr", check=False).stdout
    taken = [ipaddress.IPv4Network(m.group(1), strict=False)
             for m in re.finditer(r"\b(\d+\.\d+\.\d+\.\d+(?:/\d+)?)", used)]
    candidates = list(ipaddress.IPv4Network(_SUPERNET).subnets(new_prefix=24))
    random.shuffle(candidates)
    for net in candidates:
        if not any(net.overlaps(t) for t in taken if t.prefixlen > 0):
            return net
    raise NetnsError("no free /24 left in 10.213.0.0/16")


def _owner_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@dataclass
class Network:
    """Namespaces for `nodes` (any hashable names, e.g. broker ids), each with its address (`address(node)`)."""

    nodes: Sequence[int]
    tag: str = field(default_factory=lambda: f"{random.getrandbits(16):04x}")
    owner: int = field(default_factory=os.getpid)
    subnet: ipaddress.IPv4Network | None = None
    cuts: set[tuple[int, int]] = field(default_factory=set)
    shaped: dict[tuple[int, int], str] = field(default_factory=dict)  # (from, to): SLOW or LOSSY
    _made: list[str] = field(default_factory=list)
    _watchdog: subprocess.Popen[bytes] | None = None
    _relay: subprocess.Popen[bytes] | None = None

    @property
    def stem(self) -> str:
        return f"{PREFIX}{self.owner}x{self.tag}"

    @property
    def hub(self) -> str:
        return f"{self.stem}h"

    @property
    def host_link(self) -> str:
        """The caller's end of the link to the bridge (an interface name is at most 15 characters)."""
        return f"{PREFIX}{self.tag}{self.owner % 100000}"[:15]

    def namespace(self, node: int) -> str:
        return f"{self.stem}n{node}"

    def address(self, node: int) -> str:
        assert self.subnet is not None
        return str(self.subnet.network_address + 1 + list(self.nodes).index(node))

    @property
    def host_address(self) -> str:
        assert self.subnet is not None
        return str(self.subnet.network_address + 254)

    # ---- making and removing ----------------------------------------------------------------------------------

    def __enter__(self) -> Network:
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def create(self) -> Network:
        """Make the hub, every node's namespace and the caller's link, then start the watchdog. On any failure what
        was made is removed before the error is raised."""
        if not 1 <= len(self.nodes) <= 250:
            raise ValueError("a network has 1 to 250 nodes")
        sweep()
        self.subnet = _free_subnet()
        try:
            self._watchdog = _start_watchdog(self.owner, self.stem, self.host_link)
            self._add_namespace(self.hub)
            _ip("link", "add", "br0", "type", "bridge", namespace=self.hub)
            _ip("link", "set", "br0", "up", namespace=self.hub)
            _ip("link", "set", "lo", "up", namespace=self.hub)
            for i, node in enumerate(self.nodes):
                self._plug(self.namespace(node), f"p{i}", self.address(node))
            self._plug_host()
        except BaseException:
            self.remove()
            raise
        return self

    def _add_namespace(self, name: str) -> None:
        _ip("netns", "add", name)
        self._made.append(name)

    def _plug(self, ns: str, port: str, address: str) -> None:
        """A namespace with eth0 at `address`, its peer `port` on the hub's bridge."""
        self._add_namespace(ns)
        _ip("link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", self.hub, namespace=ns)
        _ip("link", "set", port, "master", "br0", "up", namespace=self.hub)
        _ip("addr", "add", f"{address}/24", "dev", "eth0", namespace=ns)
        _ip("link", "set", "eth0", "up", namespace=ns)
        _ip("link", "set", "lo", "up", namespace=ns)

    def _plug_host(self) -> None:
        _ip("link", "add", self.host_link, "type", "veth", "peer", "name", "host", "netns", self.hub)
        _ip("link", "set", "host", "master", "br0", "up", namespace=self.hub)
        _ip("addr", "add", f"{self.host_address}/24", "dev", self.host_link)
        _ip("link", "set", self.host_link, "up")

    def remove(self) -> None:
        """Delete every namespace this network made (their interfaces go with them) and the caller's link, and
        dismiss the watchdog. Safe to call twice."""
        self._stop_relay()  # first: a process inside the hub would keep its namespace alive, unnamed
        _remove(self.stem, self.host_link)
        self._made.clear()
        if self._watchdog is not None:
            with contextlib.suppress(OSError):
                self._watchdog.stdin.write(b"done\n")  # type: ignore[union-attr]
                self._watchdog.stdin.close()  # type: ignore[union-attr]
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._watchdog.wait(timeout=5)
            self._watchdog = None

    # ---- using it ---------------------------------------------------------------------------------------------

    def command(self, node: int, argv: Sequence[str]) -> list[str]:
        """`argv` run inside `node`'s namespace."""
        return ["ip", "netns", "exec", self.namespace(node), *argv]

    def cut(self, frm: int, to: int) -> None:
        """Drop every packet `frm` sends to `to` (one way; cut both ways for a clean partition)."""
        if (frm, to) not in self.cuts:
            self.cuts.add((frm, to))
            self._point(frm, to)

    def isolate(self, node: int) -> None:
        """Cut `node` from every other node, both ways; the caller (clients) still reaches it."""
        for other in self.nodes:
            if other != node:
                self.cut(node, other)
                self.cut(other, node)

    def uncut(self, frm: int, to: int) -> None:
        """Undo `cut(frm, to)` (the link is shaped again if it was, else `frm` asks for `to`'s address again)."""
        self.cuts.discard((frm, to))
        self._point(frm, to)

    def shape(self, frm: int, to: int, how: str) -> None:
        """What `frm` sends to `to` delayed (SLOW) or partly dropped (LOSSY) by the relay (one way: shape both
        ways for a slow or lossy link). The relay starts with the first shaped link."""
        if how not in _RELAY_MAC:
            raise ValueError(f"a link is shaped {' or '.join(_RELAY_MAC)}, not {how!r}")
        if self.shaped.get((frm, to)) != how:
            if self._relay is None:
                self._start_relay()
            self.shaped[(frm, to)] = how
            self._point(frm, to)

    def unshape(self, frm: int, to: int) -> None:
        """Undo `shape(frm, to, ...)`."""
        if self.shaped.pop((frm, to), None) is not None:
            self._point(frm, to)

    def heal(self) -> None:
        """Remove every cut and every shaped link."""
        for frm, to in sorted(self.cuts):
            self.uncut(frm, to)
        for frm, to in sorted(self.shaped):
            self.unshape(frm, to)

    def _point(self, frm: int, to: int) -> None:
        """`frm`'s neighbour entry for `to` as the link's state says: nowhere (cut), the relay (shaped), or none
        (`frm` asks for `to`'s hardware address again: the link is whole)."""
        mac = _NOWHERE if (frm, to) in self.cuts else _RELAY_MAC.get(self.shaped.get((frm, to), ""))
        if mac is None:
            _ip("neigh", "del", self.address(to), "dev", "eth0", namespace=self.namespace(frm), check=False)
        else:
            _ip("neigh", "replace", self.address(to), "lladdr", mac, "dev", "eth0", "nud", "permanent",
                namespace=self.namespace(frm))

    def _start_relay(self) -> None:
        """A port `r0` on the bridge whose peer `r1` (in the hub too) the relay reads; the relay learns every node's
        hardware address and runs until `remove()` or until this process ends (its stdin closes). A port left by an
        earlier process's relay (a cluster `kcheck cluster up --network` keeps between campaigns) is replaced."""
        _ip("link", "del", "r0", namespace=self.hub, check=False)
        _ip("link", "add", "r0", "type", "veth", "peer", "name", "r1", namespace=self.hub)
        _ip("link", "set", "r0", "master", "br0", "up", namespace=self.hub)
        _ip("link", "set", "r1", "up", namespace=self.hub)
        macs = {self.address(n): _mac(self.namespace(n)) for n in self.nodes}
        config = json.dumps({"port": "r1", "macs": macs, "profiles": {
            _RELAY_MAC[SLOW]: [DELAY_MS / 1000, JITTER_MS / 1000, 0.0, 0.0],
            _RELAY_MAC[LOSSY]: [0.0, 0.0, LOSS_PERCENT / 100, BURST_PERCENT / 100]}})
        relay = subprocess.Popen(["ip", "netns", "exec", self.hub, sys.executable, "-c",
                                  "from kcheck.cluster.netns import relay; relay()", config],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert relay.stdout is not None
        if relay.stdout.readline().strip() != b"ready":
            relay.kill()
            relay.wait()
            raise NetnsError(f"the link relay did not start: {relay.stderr.read().decode().strip()}")  # type: ignore
        self._relay = relay

    def _stop_relay(self) -> None:
        if self._relay is not None:
            with contextlib.suppress(OSError):
                self._relay.kill()
            self._relay.wait()
            self._relay = None


def _mac(namespace: str) -> str:
    done = _ip("-j", "link", "show", "eth0", namespace=namespace)
    return str(json.loads(done.stdout)[0]["address"])


def relay() -> None:
    """The relay's body (argv: its JSON config), inside the hub: every frame the bridge hands it for a relay hardware
    address is held or dropped as that address's profile says, then sent on to the destination node's own address
    from the relay's (so the bridge never learns a node's address on the relay's port). Frames keep their
    virtio-net header (PACKET_VNET_HDR): the kernel's segmentation and checksum offloads pass through unchanged.
    Ends when its stdin closes (its maker ended or removed the network)."""
    import heapq
    import select
    import socket

    config = json.loads(sys.argv[1])
    macs = {socket.inet_aton(ip): bytes.fromhex(mac.replace(":", "")) for ip, mac in config["macs"].items()}
    profiles = {bytes.fromhex(mac.replace(":", "")): p for mac, p in config["profiles"].items()}
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))  # ETH_P_ALL
    sock.setsockopt(263, 15, 1)  # SOL_PACKET, PACKET_VNET_HDR
    sock.bind((config["port"], 0))
    sock.setblocking(False)
    print("ready", flush=True)
    rng = random.Random()
    held: list[tuple[float, int, bytes]] = []  # (due, arrival number, frame), by due
    last_due: dict[bytes, float] = {}  # per link (source and destination addresses): frames leave in order
    dropped: dict[bytes, bool] = {}  # per link: whether its last frame was dropped (bursts)
    number, stdin = 0, sys.stdin.fileno()
    while True:
        wait = max(0.0, held[0][0] - time.monotonic()) if held else 1.0
        ready = select.select([sock, stdin], [], [], wait)[0]
        if stdin in ready and not os.read(stdin, 4096):
            return
        while sock in ready:
            try:
                data = sock.recv(1 << 17)
            except BlockingIOError:
                break
            out = _relayed(data, macs, profiles, rng, last_due, dropped)
            if out is not None:
                number += 1
                heapq.heappush(held, (out[0], number, out[1]))
        while held and held[0][0] <= time.monotonic():
            with contextlib.suppress(OSError):
                sock.send(heapq.heappop(held)[2])


def _relayed(data: bytes, macs: dict[bytes, bytes], profiles: dict[bytes, list[float]], rng: random.Random,
             last_due: dict[bytes, float], dropped: dict[bytes, bool]) -> tuple[float, bytes] | None:
    """One frame read by the relay (a 10-byte virtio-net header, then Ethernet): when it leaves and as what, or
    None (not for the relay, not IPv4 to a node, or dropped)."""
    vnet, frame = data[:10], data[10:]
    profile = profiles.get(frame[0:6])
    if profile is None or frame[12:14] != b"\x08\x00" or frame[30:34] not in macs:
        return None
    delay, jitter, loss, burst = profile
    link = frame[26:34]
    if loss:
        # bursts: after a drop the next frame goes with probability `burst`, else with q, so the rate stays `loss`
        p = burst if dropped.get(link) else loss * (1 - burst) / (1 - loss)
        dropped[link] = rng.random() < p
        if dropped[link]:
            return None
    due = max(time.monotonic() + delay + rng.uniform(-jitter, jitter), last_due.get(link, 0.0))
    last_due[link] = due
    return due, vnet + macs[frame[30:34]] + frame[0:6] + frame[12:]


def _remove(stem: str, host_link: str | None) -> None:
    for ns in _namespaces():
        if ns.startswith(stem) and _NAME.match(ns):
            _ip("netns", "del", ns, check=False)
    if host_link and host_link in _links():
        _ip("link", "del", host_link, check=False)


def sweep() -> list[str]:
    """Delete the namespaces of networks whose owner process is gone (their caller's link goes with the hub: a veth
    pair dies with either end). Returns the namespaces deleted."""
    gone = []
    for ns in _namespaces():
        m = _NAME.match(ns)
        if m and not _owner_alive(int(m.group(1))):
            _ip("netns", "del", ns, check=False)
            gone.append(ns)
    return gone


def ignore_sigterm() -> None:
    """A watchdog's signal disposition (the network's and `LocalCluster`'s), set before it execs so no moment of its
    start is exposed: a SIGTERM (`pkill -f` of a path both command lines name) ends the owner, and the watchdog must
    outlive it to clean up after it. SIGKILL leaves the clean-up to `sweep()`."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _start_watchdog(owner: int, stem: str, host_link: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "from kcheck.cluster.netns import watch; watch()",
                             str(owner), stem, host_link], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=ignore_sigterm)


def watch() -> None:
    """The watchdog's body (argv: owner PID, the network's name stem, the caller's link): until `remove()` says
    "done" on stdin, wait for the owner to be gone, then delete the network. Its stdin closing without "done" is the
    owner dying (its end of the pipe closes before it is a zombie), so the owner is then waited for."""
    import select

    owner, stem, host_link = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    fd, said, closed = sys.stdin.fileno(), b"", False
    while _owner_alive(owner):
        if closed:
            time.sleep(0.05)
        elif select.select([fd], [], [], 0.2)[0]:
            chunk = os.read(fd, 1 << 12)
            said, closed = said + chunk, not chunk
            if b"done" in said:
                return
    _remove(stem, host_link)
