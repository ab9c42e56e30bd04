"""The disk-backed visited set (model/diskset.py, `kcheck exhaust --visited-memory SIZE`) against the visited set all
in memory, on one bound of about a million states: each search runs as its own child process, as from a shell,
and prints its states, transitions, wall and CPU seconds, states per wall and per CPU second (the fairer
figure on a loaded machine), the bytes a stored state costs
in memory (the visited set's table and index plus the parent/action store: `bytes_per_state`) and on disk (the
sorted fingerprint file), and the peak RSS of its process tree measured as bench/bench_peak_memory.py does
(`getrusage(RUSAGE_CHILDREN)` in a fresh interpreter of its own). The two runs must find the same states and
transitions; the last line is the disk run's speed over the in-memory run's.

    python bench/bench_disk_visited.py [--budget SIZE] [--workers N]   # default --budget 1M, one process
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

# RF 3, min.insync.replicas 2, one record, one crash and one lossy crash, atomic fetches, reduced: about a million
# states (docs/models/engine.md, "Reduction")
BOUND = ["exhaust", "--brokers", "3", "--replication-factor", "3", "--min-isr", "2", "--records", "1", "--crashes",
         "1", "--lossy-crashes", "1", "--fences", "0", "--elections", "0", "--isr-shrinks", "0", "--failovers", "0",
         "--reads", "0", "--reassignments", "0", "--no-duplicates", "--atomic-fetch", "--reduce",
         "--max-memory", "0", "--max-states", "50000000", "--json"]


def measure(argv: list[str]) -> dict[str, object]:
    """`kcheck argv`'s JSON report, wall seconds, and its process tree's CPU seconds and peak RSS bytes, run in a
    fresh interpreter of its own (`_one`) so that RUSAGE_CHILDREN's maximum is that run's alone."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--one", *argv], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    out = json.loads(done.stdout)
    out["wall"] = wall
    return out


def _one(argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "kcheck", *argv], capture_output=True, text=True)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = json.loads(done.stdout)
    print(json.dumps({"report": report, "cpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss * 1024}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", default="1M", help="--visited-memory of the disk run (default 1M)")
    ap.add_argument("--workers", default="1")
    args = ap.parse_args()
    print(f"bound: kcheck {' '.join(BOUND)} --workers {args.workers}; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    rows = {}
    for name, extra in (("memory", []), (f"disk {args.budget}", ["--visited-memory", args.budget])):
        m = measure([*BOUND, "--workers", args.workers, *extra])
        r = m["report"]
        n = r["states"]
        rows[name] = m
        print(f"{name:12} {n:>10,} states {r['transitions']:>11,} transitions  {m['wall']:7.1f} s wall "
              f"{m['cpu']:7.1f} CPU s  {n / m['wall']:8,.0f} states/s  {n / m['cpu']:8,.0f} states/CPU s  "
              f"in memory {r['bytes_per_state']:5.1f} B/state  "
              f"on disk {r['visited_disk_bytes'] / n:4.1f} B/state  peak RSS {m['rss'] / 2**20:6,.0f} MiB  "
              f"complete {r['complete']}", flush=True)
    mem, disk = rows.values()
    same = all(mem["report"][k] == disk["report"][k] for k in ("states", "transitions", "depth", "complete"))
    print(f"same states, transitions, depth: {same}; disk speed / memory speed "
          f"{mem['wall'] / disk['wall']:.2f} (wall), {mem['cpu'] / disk['cpu']:.2f} (CPU); peak RSS "
          f"{(mem['rss'] - disk['rss']) / 2**20:,.0f} MiB less with the disk set")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        _one(sys.argv[2:])
    else:
        main()
