"""How long the live commands take to end after Ctrl-C (or SIGTERM), and that they leave nothing behind.

Each trial runs the command as a user does (`python -m kcheck ...` in a subprocess), waits until it is at its
work (a cluster folder exists, a Kafka node runs, a campaign's topic is announced, a connection is held), then a
random 0..MAX seconds more, sends the signal and measures the seconds until the process exits. Every trial must
exit 130 with one `kcheck: interrupted (...)` line and leave no process naming its folder; a cluster given with --dir
(started here once, and reused) must have no paused broker after it. Prints per command: trials, exit statuses,
min / median / max seconds from the signal to the exit.

    python bench/live_interrupts.py [--trials 5] [--signal INT|TERM] [--only cluster-up,chaos-dir,...] [--verbose]

Commands: cluster-up (`cluster up --brokers 1`), chaos-dir (`chaos --dir` a running cluster, a schedule that
pauses and kills brokers), chaos-own (`chaos` starting its own one-broker cluster), replay-dir (`replay
--on-cluster --dir`), replay-own (`replay --on-cluster` starting its own), verify (`verify --bootstrap-server` at a
server that accepts and never answers).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

# A replication-model trace that kills broker 2 (kill -9) and starts it again: about 15 s on a cluster.
TRACE = {"format": 2, "protocol": "current",
         "config": {"brokers": 2, "replication_factor": 0, "min_isr": 1, "initial_isr": 0, "acks": ["all"],
                    "records": 1, "max_leader_epoch": 3, "crashes": 1, "lossy_crashes": 0, "fences": 0,
                    "elections": 0, "isr_shrinks": 0, "failovers": 0, "reads": 1, "reassignments": 0, "cancels": 0,
                    "duplicates": True, "atomic_fetch": False},
         "steps": [{"action": "produce", "broker": 1, "acks": "all"}, {"action": "fetch", "follower": 2},
                   {"action": "crash", "broker": 2, "lossy": False}, {"action": "restart", "broker": 2}]}


def processes_naming(text: str) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    out.append(int(entry.name))
            except OSError:
                pass
    return out


def trial(argv: list[str], cwd: Path, working: Callable[[str], bool], most: float, sig: int) -> tuple[int, float, str]:
    proc = subprocess.Popen([sys.executable, "-m", "kcheck", *argv], cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(iter(proc.stderr.readline, "")), daemon=True)  # type: ignore
    reader.start()
    deadline = time.monotonic() + 180
    while not working("".join(err)) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(random.uniform(0, most))
    if proc.poll() is not None:
        return proc.returncode, float("nan"), "".join(err)[-300:]
    began = time.monotonic()
    proc.send_signal(sig)
    proc.wait()
    took = time.monotonic() - began
    reader.join(5)
    return proc.returncode, took, "".join(err).rstrip("\n").splitlines()[-1] if err else ""


class Silent:
    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.held.append(self.server.accept()[0])
            except OSError:
                return


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--signal", choices=("INT", "TERM"), default="INT")
    ap.add_argument("--only", default="cluster-up,chaos-dir,chaos-own,replay-dir,replay-own,verify")
    ap.add_argument("--verbose", action="store_true", help="Print every trial's last line.")
    args = ap.parse_args()
    sig = signal.SIGINT if args.signal == "INT" else signal.SIGTERM
    only = args.only.split(",")
    work = Path(tempfile.mkdtemp(prefix="kcheck-interrupts-"))
    (work / "trace.json").write_text(json.dumps(TRACE))
    (work / "s.txt").write_text("0.5 pause 3\n1 kill 2\n")
    silent = Silent()
    shared = None
    seen: set[str] = set()  # the replay topics before a trial
    if {"chaos-dir", "replay-dir"} & set(only):
        from kcheck.cluster.local import LocalCluster

        shared = LocalCluster(brokers=3, directory=work / "shared").start(timeout_s=120)
    runs: dict[str, tuple[list[str], Callable[[str], bool], float]] = {
        "cluster-up": (["cluster", "up", "--brokers", "1", "--dir", "c"], lambda e: (work / "c").exists(), 3.0),
        "chaos-dir": (["chaos", "--dir", str(work / "shared"), "--schedule", "s.txt", "--duration", "60", "--rate",
                       "20"], lambda e: "kcheck chaos: topic" in e, 6.0),
        "chaos-own": (["chaos", "--brokers", "1", "--replication-factor", "1", "--min-insync-replicas", "1",
                       "--duration", "60"], lambda e: "kcheck chaos: starting" in e, 15.0),
        "replay-dir": (["replay", "trace.json", "--on-cluster", "--dir", str(work / "shared")],
                       lambda e: shared is not None and bool(replay_topics(shared.bootstrap) - seen), 8.0),
        "replay-own": (["replay", "trace.json", "--on-cluster", "--dir", "r"], lambda e: (work / "r").exists(), 15.0),
        "verify": (["verify", "--bootstrap-server", f"127.0.0.1:{silent.server.getsockname()[1]}"],
                   lambda e: len(silent.held) > 0, 3.0),
    }
    try:
        for name in only:
            argv, working, most = runs[name]
            results = []
            for _ in range(args.trials):
                seen.clear()
                seen.update(replay_topics(shared.bootstrap) if shared is not None and name == "replay-dir" else ())
                code, took, last = trial(argv, work, working, most, sig)
                left = processes_naming(str(work / "c")) + processes_naming(str(work / "r"))
                results.append((code, took, last, left))
                if shared is not None:  # the next trial starts from a whole cluster, as the test fixture does
                    heal(work / "shared")
            times = [t for _, t, _, _ in results if t == t]
            codes = sorted({c for c, _, _, _ in results})
            print(f"{name}: {len(results)} trials, exit {codes}, seconds from the signal to the exit: "
                  f"min {min(times):.2f} median {statistics.median(times):.2f} max {max(times):.2f}"
                  if times else f"{name}: no trial was interrupted ({results})")
            for code, took, last, left in results:
                if code != 130 or left or args.verbose:
                    print(f"  exit {code} after {took:.2f} s, left {left}: {last}")
    finally:
        if shared is not None:  # another process may have started a broker again: the folder's state has its PID
            from kcheck.cluster.local import LocalCluster

            LocalCluster.attach(work / "shared").stop()
            shared._dismiss_watchdog()


def replay_topics(bootstrap: str) -> set[str]:
    """The cluster's replay topics now: a new one says a replay has begun its work on the cluster."""
    from kcheck.cluster.live import read_cluster

    try:
        return set(re.findall(r"Topic: (kcheck-replay-\w+)\t", read_cluster(bootstrap, timeout_s=5).describe_text))
    except Exception:  # noqa: BLE001 - asked again
        return set()


def heal(folder: Path) -> None:
    """Every broker of the cluster in `folder` running and unfenced again."""
    from kcheck.cluster.local import LocalCluster

    cluster = LocalCluster.attach(folder)
    for row in cluster.status():
        if row["role"] == "broker" and row["state"] == "paused":
            cluster.resume(row["node"])
        elif row["role"] == "broker" and row["state"] == "stopped":
            cluster.restart(row["node"])
    cluster.wait_ready(120)


if __name__ == "__main__":
    main()
