"""Ctrl-C on every long-running command: the time from SIGINT (or SIGTERM) to the process's end.

Each command starts in its own folder and session; the signal comes at a random moment 1 to 4 s after its
imports are done (9 to 12 s for Spark, inside a job), then the run is judged: exit 130, one line on stderr, no
file left in the folder that was not there before (a sweep's result store stays: --resume continues it), no
process of its session left running (zombies aside, reaped by init).

    python bench/bench_interrupts.py [--runs N] [--signal INT|TERM] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
# kcheck's command line, saying when Python's imports are done (a signal before that is the start-up's)
KCHECK = [sys.executable, "-c", "import sys; from kcheck.cli import main; print('ready', flush=True); "
                                "sys.exit(main(sys.argv[1:]))"]
# name -> (argv, files to put in the folder first); every one runs far longer than the signal's delay
COMMANDS: dict[str, tuple[list[str], dict[str, str]]] = {
    "exhaust": (["exhaust", "--brokers", "3", "--records", "2", "--out", "t.json"], {}),
    "exhaust --workers 2": (["exhaust", "--brokers", "3", "--records", "2", "--workers", "2", "--out", "t.json"], {}),
    "explore": (["explore", "--examples", "1000000", "--out", "t.json"], {}),
    "liveness": (["liveness", "--brokers", "3", "--records", "2", "--out", "t.json"], {}),
    "prove": (["prove", "--max-brokers", "8", "--max-partitions", "20", "--timeout", "600", "--junit-xml", "r.xml"],
              {}),
    "plan": (["plan", "big.txt", "--timeout", "600", "--out", "p.json"], {}),
    "log": (["log", "--summary", "-w", "duration=20m,rate=20"], {}),
    "check": (["check", "--junit-xml", "r.xml", "--html", "r.html"], {}),
    "sweep (Spark)": (["sweep", "placement", "--space", "large", "--out", "sw"], {}),
    "sweep-log (Spark)": (["sweep-log", "--axis", "consumer.lag.ms=0..100s/1s"], {}),
}


def big_describe(partitions: int = 1500, brokers: int = 30) -> str:
    """A describe where every partition sits on brokers 1-3: the plan moves most of them."""
    lines = [f"Topic: t\tTopicId: x\tPartitionCount: {partitions}\tReplicationFactor: 3\tConfigs: "]
    for p in range(partitions):
        lines.append(f"\tTopic: t\tPartition: {p}\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3")
    lines += [f"\tTopic: u{b}\tPartition: 0\tLeader: {b}\tReplicas: {b}\tIsr: {b}" for b in range(4, brokers + 1)]
    return "\n".join(lines) + "\n"


def session_processes(sid: int) -> list[str]:
    """The processes of a session, zombies aside (gone, waiting for their parent or init to reap them)."""
    out = subprocess.run(["ps", "-eo", "pid=,sid=,stat=,args="], capture_output=True, text=True).stdout
    return [line.strip() for line in out.splitlines()
            if line.split()[1:2] == [str(sid)] and not line.split()[2].startswith("Z")]


def one(name: str, signum: int, rng: random.Random) -> dict[str, object]:
    argv, files = COMMANDS[name]
    work = Path(tempfile.mkdtemp(prefix="kcheck-int-"))
    (work / "big.txt").write_text(big_describe())
    for k, v in files.items():
        (work / k).write_text(v)
    before = {p.name for p in work.iterdir()}
    env = {**os.environ, "XDG_CACHE_HOME": str(work / ".cache")}
    proc = subprocess.Popen([*KCHECK, *argv], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    assert proc.stdout is not None
    proc.stdout.readline()  # 'ready': the command starts now
    delay = rng.uniform(1.0, 4.0) + (8.0 if "Spark" in name else 0.0)  # Spark: signal inside a job, not start-up
    time.sleep(delay)
    early = proc.poll()
    sent = time.monotonic()
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=30)
        seconds = time.monotonic() - sent
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        seconds = float("inf")
    time.sleep(0.5)
    left = session_processes(proc.pid)
    for line in left:
        os.kill(int(line.split()[0]), signal.SIGKILL)
    after = {p.name for p in work.iterdir()} - before - {".cache"}
    shutil.rmtree(work, ignore_errors=True)
    lines = err.decode("utf-8", "replace").splitlines()
    return {"command": name, "delay": round(delay, 1), "seconds": round(seconds, 2), "exit": proc.returncode,
            "ended_before_signal": early is not None, "stderr_lines": len(lines), "stderr": "\n".join(lines),
            "files_left": sorted(after), "processes_left": len(left), "left": [x[:150] for x in left]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--signal", choices=("INT", "TERM"), default="INT")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    signum = signal.SIGINT if args.signal == "INT" else signal.SIGTERM
    print("| command | delay s | SIGINT to exit s | exit | stderr lines | files left | processes left |")
    print("|---|---|---|---|---|---|---|")
    for name in args.only or COMMANDS:
        for _ in range(args.runs):
            r = one(name, signum, rng)
            print(f"| {r['command']} | {r['delay']} | {r['seconds']} | {r['exit']} | {r['stderr_lines']} | "
                  f"{', '.join(r['files_left']) or '-'} | {r['processes_left']} |", flush=True)
            if r["left"]:
                print(f"    left: {r['left']}")
            if r["stderr_lines"] != 1 or r["ended_before_signal"]:
                print(f"    stderr: {r['stderr'][:1500]!r}; ended before the signal: {r['ended_before_signal']}")


if __name__ == "__main__":
    main()
