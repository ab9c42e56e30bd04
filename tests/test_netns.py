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
    """The owner SIGKILLed with the network up: its watchdog deletes every namespace and the caller's link."""
    owner = subprocess.Popen([sys.executable, "-c", "from kcheck.cluster.netns import Network\nimport sys, time\n"
                              "n = Network([1, 2]).create()\nprint(n.stem, n.host_link, flush=True)\n"
                              "time.sleep(600)"],
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert owner.stdout is not None
    stem, host_link = owner.stdout.readline().split()
    assert _left(stem, host_link) != ([], [])
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait()
    deadline = time.monotonic() + 15
    while _left(stem, host_link) != ([], []) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _left(stem, host_link) == ([], [])


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
