"""Peak resident memory of documented commands as a user sees it: each command runs as its own child process, as
from a shell, and its figure is the largest maximum RSS of its process tree (`getrusage(RUSAGE_CHILDREN)` once it
is waited for; the children it waited for are counted too), with its CPU seconds and exit status. Every memory
figure the docs and --help give for these commands comes from here.

    python bench/bench_peak_memory.py [NAME ...]    # all rows, or the named ones

Rows (NAME: command):
- liveness-cap: `kcheck liveness --brokers 3 --records 2` (the bound docs/tasks/protocol-change.md and
  `kcheck liveness --help` say runs to the default 2,000,000-state cap)
- row4-novelty: `kcheck exhaust --protocol no-epoch-in-fetch --order novelty` (docs/models/engine.md, "Search order")
- row4-novelty-atomic: the same with --atomic-fetch
- rf3-crash: `kcheck exhaust` at RF 3, min.insync.replicas 2, one record, one crash, atomic fetches (38,422 states):
  the bytes a stored state costs a default run (RSS_BYTES_PER_STATE) is its peak over its states
- assign-million: `kcheck assign GROUP` (range, the default) on a group of one topic of 1,000,000 partitions and
  1,000 members subscribed to it (written to a temporary folder first): docs/conventions.md's "per million" figure
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time

_ZERO = ["--fences", "0", "--lossy-crashes", "0", "--elections", "0", "--isr-shrinks", "0", "--failovers", "0",
         "--reads", "0", "--no-duplicates", "--atomic-fetch"]
ROWS = {
    "liveness-cap": ["liveness", "--brokers", "3", "--records", "2"],
    "row4-novelty": ["exhaust", "--protocol", "no-epoch-in-fetch", "--order", "novelty"],
    "row4-novelty-atomic": ["exhaust", "--protocol", "no-epoch-in-fetch", "--order", "novelty", "--atomic-fetch"],
    "assign-million": ["assign", "{group-million}"],
    "rf3-crash": ["exhaust", "--brokers", "3", "--replication-factor", "3", "--min-isr", "2", "--records", "1",
                  "--crashes", "1", *_ZERO],
}


def measure(argv: list[str]) -> tuple[int, float, float, int]:
    """(exit status, wall seconds, CPU seconds, peak RSS bytes) of `kcheck argv` run as a child process. Each row
    runs in a fresh interpreter of its own (`_one`), so RUSAGE_CHILDREN's maximum is that row's alone."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--one", *argv], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    code, cpu, rss = done.stdout.split()[-3:]
    return int(code), wall, float(cpu), int(rss)


def _one(argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "kcheck", *argv], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(done.returncode, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024)  # ru_maxrss: KiB on Linux


def _group_million(folder: str) -> str:
    path = os.path.join(folder, "group-million.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"topics": {"t": 1_000_000}, "members": {f"c{i:04d}": {"topics": ["t"]} for i in range(1000)}}, f)
    return path


def main(names: list[str]) -> None:
    print(f"peak RSS of the command's process tree, as a user sees it; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    folder = tempfile.TemporaryDirectory(prefix="kcheck-bench-")
    files = {"{group-million}": _group_million(folder.name)}
    for name in names or list(ROWS):
        code, wall, cpu, rss = measure([files.get(a, a) for a in ROWS[name]])
        print(f"{name:20} exit {code}  {wall:7.1f} s wall  {cpu:7.1f} CPU s  peak RSS {rss / 2**20:8,.0f} MiB  "
              f"(kcheck {' '.join(ROWS[name])})", flush=True)
    folder.cleanup()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        _one(sys.argv[2:])
    else:
        main(sys.argv[1:])
