"""Network namespaces for fault campaigns (kcheck.cluster.netns): each node reachable at its own address, cuts that
drop packets silently and one way, isolation that spares the caller's link, and nothing left behind however the
owner ends. Skipped where namespaces cannot be made (not root, no iproute2)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from kcheck.cluster import netns

_WHY_NOT = netns.unavailable()  # makes and removes a namespace: asked once
pytestmark = pytest.mark.skipif(_WHY_NOT is not None, reason=str(_WHY_NOT))

SERVER = """import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 9000))
s.listen()
while True:
    c, _ = s.accept()
    c.sendall(b"hi")
    c.close()
"""


def _left(stem: str, host_link: str) -> tuple[list[str], list[str]]:
    """What is left of one network (other tests may make networks of their own meanwhile)."""
    return ([n for n in netns._namespaces() if n.startswith(stem)], [x for x in netns._links() if x == host_link])


def _reach(net: netns.Network, frm: int | None, to: int) -> bool:
    """Whether a TCP connection from node `frm` (None: the caller) to `to`'s server gets its answer within 2 s."""
    if frm is None:
        try:
            with socket.create_connection((net.address(to), 9000), timeout=2) as s:
                return s.recv(2) == b"hi"
        except OSError:
            return False
    code = (f"import socket\ntry:\n s = socket.create_connection(('{net.address(to)}', 9000), timeout=2)\n"
            f" print(s.recv(2).decode())\nexcept OSError:\n print('no')")
    done = subprocess.run(net.command(frm, [sys.executable, "-c", code]), capture_output=True, text=True, timeout=30)
    return done.stdout.strip() == "hi"


def test_nodes_reach_each_other_and_cuts_drop_one_way_until_healed():
    with netns.Network([1, 2, 3]) as net:
        servers = [subprocess.Popen(net.command(n, [sys.executable, "-c", SERVER])) for n in (1, 2)]
        try:
            time.sleep(0.5)
            assert _reach(net, 2, 1) and _reach(net, 3, 1) and _reach(net, None, 1)
            net.cut(2, 1)  # what 2 sends to 1 vanishes: 2 cannot connect, 1 still reaches 2, 3 still reaches 1
            assert not _reach(net, 2, 1) and _reach(net, 3, 1) and _reach(net, None, 1)
            net.heal()
            net.isolate(1)  # 1 cut from the other nodes both ways, not from the caller (clients)
            assert not _reach(net, 2, 1) and not _reach(net, 1, 2) and _reach(net, None, 1) and _reach(net, 3, 2)
            net.heal()
            assert _reach(net, 2, 1) and _reach(net, 1, 2)
        finally:
            for s in servers:
                s.kill()
                s.wait()
    assert _left(net.stem, net.host_link) == ([], [])  # its namespaces and the caller's link are gone


def test_a_killed_owner_leaves_nothing_behind():
    """The owner SIGKILLed with the network up and a link shaped: its watchdog deletes every namespace and the
    caller's link, and the relay ends (its stdin, the owner's pipe, closes)."""
    owner = subprocess.Popen([sys.executable, "-c", "from kcheck.cluster.netns import Network\nimport sys, time\n"
                              "n = Network([1, 2]).create()\nn.shape(1, 2, 'slow')\n"
                              "print(n.stem, n.host_link, n._relay.pid, flush=True)\ntime.sleep(600)"],
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert owner.stdout is not None
    stem, host_link, relay = owner.stdout.readline().split()
    assert _left(stem, host_link) != ([], []) and netns._owner_alive(int(relay))
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait()
    deadline = time.monotonic() + 15
    while (_left(stem, host_link) != ([], []) or netns._owner_alive(int(relay))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _left(stem, host_link) == ([], []) and not netns._owner_alive(int(relay))


def test_a_sigterm_to_owner_and_watchdog_leaves_nothing_behind():
    """`pkill -f` of a path both command lines name SIGTERMs the owner and its watchdog at once: the watchdog
    outlives the signal, then deletes the network once the owner is gone."""
    owner = subprocess.Popen([sys.executable, "-c", "from kcheck.cluster.netns import Network\nimport sys, time\n"
                              "n = Network([1, 2]).create()\nprint(n.stem, n.host_link, n._watchdog.pid, flush=True)\n"
                              "time.sleep(600)"],
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert owner.stdout is not None
    stem, host_link, watchdog = owner.stdout.readline().split()
    os.kill(int(watchdog), signal.SIGTERM)
    time.sleep(0.5)
    assert _left(stem, host_link) != ([], [])  # the watchdog still watches
    os.kill(owner.pid, signal.SIGTERM)
    owner.wait()
    deadline = time.monotonic() + 15
    while _left(stem, host_link) != ([], []) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _left(stem, host_link) == ([], [])


def test_sweep_deletes_only_networks_whose_owner_is_gone(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale, live, foreign = f"kc{dead.pid}xabcdh", f"kc{os.getpid()}xabcdh", "kcheck-not-a-network"
    for name in (stale, live, foreign):
        subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        assert stale in netns.sweep()
        left = netns._namespaces()
        assert stale not in left and live in left and foreign in left
    finally:
        for name in (stale, live, foreign):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_a_network_needs_one_to_250_nodes():
    with pytest.raises(ValueError):
        netns.Network([]).create()


ECHO = """import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 9001))
while True:
    data, peer = s.recvfrom(64)
    s.sendto(data, peer)
"""
# From the namespace it runs in: N datagrams to an echo server, 5 ms apart; prints how many came back.
PROBE = """import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setblocking(False)
back = set()
def drain(seconds):
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            back.add(s.recv(64))
        except BlockingIOError:
            time.sleep(0.001)
for i in range(int(sys.argv[2])):
    s.sendto(str(i).encode(), (sys.argv[1], 9001))
    drain(0.005)
drain(1.0)
print(len(back))
"""


def _connect_seconds(net: netns.Network, frm: int | None, to: int) -> float:
    """The fastest of three TCP connections (the handshake's round trip) from node `frm` (None: the caller) to `to`."""
    code = ("import socket, sys, time\nbest = 9.0\nfor _ in range(3):\n t = time.monotonic()\n"
            f" socket.create_connection(('{net.address(to)}', 9000), timeout=5).close()\n"
            " best = min(best, time.monotonic() - t)\nprint(best)")
    argv = [sys.executable, "-c", code]
    done = subprocess.run(argv if frm is None else net.command(frm, argv), capture_output=True, text=True,
                          timeout=60)
    return float(done.stdout)


def _echoed(net: netns.Network, frm: int, to: int, n: int = 200) -> int:
    done = subprocess.run(net.command(frm, [sys.executable, "-c", PROBE, net.address(to), str(n)]),
                          capture_output=True, text=True, timeout=60)
    return int(done.stdout)


def _servers(net: netns.Network, code: str) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen(net.command(n, [sys.executable, "-c", code])) for n in net.nodes]


def test_a_bridge_keeps_the_middle_linked_to_both_sides_that_no_longer_reach_each_other():
    """Jepsen's bridge around node 1 of four (kcheck.cluster.chaos.bridge_sides: 2 and 4 on one side, 3 on the
    other): every pair across the sides cut both ways, every other pair and the caller still connected; healed,
    every pair again."""
    from kcheck.cluster.chaos import bridge_sides

    with netns.Network([1, 2, 3, 4]) as net:
        servers = _servers(net, SERVER)
        try:
            time.sleep(0.5)
            left, right = bridge_sides(1, (), (1, 2, 3, 4))
            assert (left, right) == ([2, 4], [3])
            for a in left:
                for b in right:
                    net.cut(a, b)
                    net.cut(b, a)
            side = {n: 0 for n in left} | {n: 1 for n in right}
            pairs = [(a, b) for a in net.nodes for b in net.nodes if a != b]
            matrix = {(a, b): _reach(net, a, b) for a, b in pairs}
            assert matrix == {(a, b): not (a in side and b in side and side[a] != side[b]) for a, b in pairs}
            assert all(_reach(net, None, n) for n in net.nodes)
            net.heal()
            assert all(_reach(net, a, b) for a, b in pairs) and not net.cuts
        finally:
            for s in servers:
                s.kill()
                s.wait()
    assert _left(net.stem, net.host_link) == ([], [])


def test_a_slow_link_delays_both_ways_between_two_nodes_only_then_a_lossy_link_drops_some_frames():
    """Nodes 1 and 2's link shaped both ways: slow, a TCP handshake from 1 to 2 (and 2 to 1) takes at least two
    delayed frames (2 x 150 ms), while 1 to 3 and the caller to 2 stay fast; lossy, some of 200 UDP echoes between 1
    and 2 are lost (each crosses the link twice: 64% expected back) and none between 3 and 2. Healed, everything is
    fast and whole again; afterwards the relay and every namespace are gone."""
    with netns.Network([1, 2, 3]) as net:
        servers = _servers(net, SERVER) + _servers(net, ECHO)
        try:
            time.sleep(0.5)
            for a, b in ((1, 2), (2, 1)):
                net.shape(a, b, netns.SLOW)
            relay = net._relay
            assert relay is not None
            assert _connect_seconds(net, 1, 2) >= 0.3 and _connect_seconds(net, 2, 1) >= 0.3
            assert _connect_seconds(net, 1, 3) < 0.1 and _connect_seconds(net, None, 2) < 0.1
            for a, b in ((1, 2), (2, 1)):
                net.shape(a, b, netns.LOSSY)
            assert _connect_seconds(net, 1, 3) < 0.1  # a shape changed, not added
            back = _echoed(net, 1, 2)
            assert 0.3 * 200 < back < 0.9 * 200, back
            assert _echoed(net, 3, 2) == 200
            net.heal()
            assert not net.shaped and _echoed(net, 1, 2) == 200 and _connect_seconds(net, 1, 2) < 0.1
        finally:
            for s in servers:
                s.kill()
                s.wait()
    assert relay.poll() is not None
    assert _left(net.stem, net.host_link) == ([], [])


def test_a_cut_wins_over_a_shape_of_the_same_link_while_both_last():
    with netns.Network([1, 2]) as net:
        servers = _servers(net, SERVER)
        try:
            time.sleep(0.5)
            net.shape(1, 2, netns.SLOW)
            net.cut(1, 2)
            assert not _reach(net, 1, 2)
            net.uncut(1, 2)  # the link is slow again, not whole
            assert _connect_seconds(net, 1, 2) >= 0.15
            with pytest.raises(ValueError):
                net.shape(1, 2, "fast")
        finally:
            for s in servers:
                s.kill()
                s.wait()


def test_a_second_process_shapes_links_of_a_network_it_did_not_make():
    """As `kcheck chaos --dir` on a cluster `kcheck cluster up --network` keeps: the first relay gone with its
    process, another `Network` of the same names starts its own in place of the port left behind."""
    with netns.Network([1, 2, 3]) as net:
        servers = _servers(net, SERVER)
        other = netns.Network(net.nodes, tag=net.tag, owner=net.owner, subnet=net.subnet)
        try:
            time.sleep(0.5)
            net.shape(1, 2, netns.SLOW)
            net._stop_relay()  # its process ended; its port stays in the hub
            other.shape(1, 2, netns.SLOW)
            other.shape(2, 1, netns.SLOW)
            assert _connect_seconds(net, 1, 2) >= 0.3 and _connect_seconds(net, 1, 3) < 0.1
            other.heal()
            assert _connect_seconds(net, 1, 2) < 0.1
        finally:
            other._stop_relay()
            for s in servers:
                s.kill()
                s.wait()
    assert _left(net.stem, net.host_link) == ([], [])
