"""Slow and lossy links between two nodes' namespaces (kcheck.cluster.netns's relay): what they do, measured
(prints figures; asserts nothing). Linux and root only, as `kcheck chaos --network`.

Three nodes; nodes 1 and 2's link shaped both ways. Printed per state (whole, slow, lossy, healed): the fastest of
`--connects` TCP handshakes (a round trip) from 1 to 2, from 1 to 3 and from the caller to 2, and of `--datagrams`
UDP datagrams sent from 1 to an echo server on 2 (5 ms apart), the share echoed back: each crosses the link twice,
so with LOSS_PERCENT dropped each way (1 - 0.2)^2 = 64% is expected.

Run: sudo python bench/bench_network_links.py [--connects 5] [--datagrams 1000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from kcheck.cluster import netns

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
# the tests' TCP server (9000), UDP echo server (9001) and probe (N datagrams to the echo server, how many came back)
from test_netns import ECHO, PROBE, SERVER  # noqa: E402

CONNECT = """import socket, sys, time
best = 9.0
for _ in range(int(sys.argv[2])):
    t = time.monotonic()
    socket.create_connection((sys.argv[1], 9000), timeout=10).close()
    best = min(best, time.monotonic() - t)
print(best)
"""


def _run(net: netns.Network, frm: int | None, code: str, *args: str) -> str:
    argv = [sys.executable, "-c", code, *args]
    return subprocess.run(argv if frm is None else net.command(frm, argv), capture_output=True, text=True,
                          timeout=300).stdout.strip()


def _row(net: netns.Network, state: str, connects: int, datagrams: int) -> None:
    ms = {name: float(_run(net, frm, CONNECT, net.address(to), str(connects))) * 1000
          for name, frm, to in (("1->2", 1, 2), ("1->3", 1, 3), ("caller->2", None, 2))}
    echoed = int(_run(net, 1, PROBE, net.address(2), str(datagrams)))
    print(f"{state:8} handshake ms: " + ", ".join(f"{k} {v:6.1f}" for k, v in ms.items())
          + f"; UDP 1->2->1 echoed {echoed}/{datagrams} ({100 * echoed / datagrams:.0f}%)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connects", type=int, default=5)
    parser.add_argument("--datagrams", type=int, default=1000)
    a = parser.parse_args()
    why = netns.unavailable() or netns.relay_unavailable()
    if why is not None:
        sys.exit(f"bench_network_links: {why}")
    print(f"slow: {netns.DELAY_MS} ms +- {netns.JITTER_MS} ms; lossy: {netns.LOSS_PERCENT}% in bursts "
          f"({netns.BURST_PERCENT}% after a drop)")
    with netns.Network([1, 2, 3]) as net:
        servers = [subprocess.Popen(net.command(n, [sys.executable, "-c", code]))
                   for n in net.nodes for code in (SERVER, ECHO)]
        try:
            time.sleep(0.5)
            _row(net, "whole", a.connects, a.datagrams)
            for how in (netns.SLOW, netns.LOSSY):
                for frm, to in ((1, 2), (2, 1)):
                    net.shape(frm, to, how)
                _row(net, how, a.connects, a.datagrams)
            net.heal()
            _row(net, "healed", a.connects, a.datagrams)
        finally:
            for s in servers:
                s.kill()
                s.wait()


if __name__ == "__main__":
    main()
