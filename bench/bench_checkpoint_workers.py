"""A checkpointed `kcheck exhaust --workers 2` on bench_engine.py's rf3 bound, killed with SIGKILL once and resumed:
the search's speed before the kill and after the resume, what a checkpoint costs on disk per stored state, and how
long one takes to write (each manifest records it).

    python bench/bench_checkpoint_workers.py [--before 300] [--after 120] [--every 60] [--folder DIR]

The first run saves every --every seconds; once --before seconds have passed and it has saved at least once more, it
is killed (the whole process group, SIGKILL) at a random moment of its interval. The second run resumes the folder's
checkpoint for --after seconds (--max-seconds: it saves its cut and ends with exit 4). Speeds are checked states per
second of each run (the states a halted search reports: stored ones less the frontier not yet expanded), read from
the manifests (`counters.checked`, `written_at`); the first run's from its start to its last checkpoint, the
second's from the state it resumed at to the checkpoint it wrote when it stopped. A checkpoint inside a level also
holds that level's candidates found so far (`counters.shares[].candidates`), not yet stored: the size is given per
stored state and per stored state or candidate. The folder is
a new temporary one (removed at the end) unless --folder names one.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

# bench_engine.RF3 as command-line bounds (max_leader_epoch and acks at their defaults)
RF3 = ["--brokers", "3", "--replication-factor", "3", "--min-isr", "2", "--records", "2", "--crashes", "1",
       "--fences", "1", "--lossy-crashes", "1", "--elections", "1", "--isr-shrinks", "0", "--failovers", "0",
       "--reads", "0", "--reassignments", "0", "--cancels", "0", "--no-duplicates"]
MANIFEST = "kcheck-checkpoint.json"


def _manifest(folder: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(folder, MANIFEST), encoding="utf-8") as f:
            return json.load(f)  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


def _start(folder: str, every: float, more: list[str]) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "kcheck", "exhaust", *RF3, "--workers", "2", "--checkpoint", folder,
           "--checkpoint-every", str(every), "--max-memory", "0", "--json", *more]
    return subprocess.Popen(["nice", "-n", "10", *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _size(folder: str, manifest: dict[str, Any]) -> int:
    return sum(int(f["bytes"]) for f in manifest["files"].values())


def _held(manifest: dict[str, Any]) -> int:
    """Stored states plus this level's candidates so far (a candidate found twice counts twice)."""
    return int(manifest["counters"]["states"]) + sum(int(s["candidates"]) for s in manifest["counters"]["shares"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=float, default=300.0, help="seconds before the kill")
    ap.add_argument("--after", type=float, default=120.0, help="seconds of the resumed run")
    ap.add_argument("--every", type=float, default=60.0, help="seconds between two checkpoints")
    ap.add_argument("--folder", help="the checkpoint folder (default: a new temporary one, removed at the end)")
    args = ap.parse_args()
    folder = args.folder or os.path.join(tempfile.mkdtemp(prefix="kcheck-bench-ck-"), "ck")
    print(f"rf3 bound, 2 workers, checkpoint every {args.every:.0f} s; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores", flush=True)
    writes: list[tuple[int, int, float, int]] = []  # generation, checked states, seconds to write, bytes
    began = time.time()
    proc = _start(folder, args.every, [])
    try:
        last = 0
        while True:
            m = _manifest(folder)
            if m is not None and m["generation_number"] != last:
                last = m["generation_number"]
                writes.append((last, m["counters"]["checked"], m["write_seconds"], _size(folder, m)))
                print(f"  checkpoint {last}: {m['counters']['checked']:,} states checked, "
                      f"{m['counters']['states']:,} stored, {_held(m):,} with candidates, level "
                      f"{m['counters']['level']}, {_size(folder, m) / 2**20:.1f} MiB, written in "
                      f"{m['write_seconds']:.2f} s, {m['written_at'] - began:.0f} s after the start", flush=True)
                if time.time() - began >= args.before and len(writes) >= 2:
                    break
            if proc.poll() is not None:
                raise SystemExit(f"the search ended before the kill: {proc.communicate()[1].strip()}")
            time.sleep(0.5)
        time.sleep(random.Random(40).uniform(0, args.every))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        killed_at = time.time()
        m = _manifest(folder)
        assert m is not None
        before = m["counters"]["checked"] / (m["written_at"] - began)
        print(f"killed (SIGKILL) {killed_at - began:.0f} s after the start; its last checkpoint: "
              f"{m['counters']['checked']:,} states checked at {m['written_at'] - began:.0f} s: {before:,.0f} "
              "states/s", flush=True)
        resumed_from, size, stored, held = m["counters"]["checked"], _size(folder, m), m["counters"]["states"], _held(m)
        start = time.time()
        proc = _start(folder, args.every, ["--resume", "--max-seconds", str(args.after)])
        out, err = proc.communicate()
        if proc.returncode not in (0, 1, 4):
            raise SystemExit(f"the resumed run failed (exit {proc.returncode}): {err.strip()}")
        rep = json.loads(out)
        m = _manifest(folder)
        assert m is not None
        after = (m["counters"]["checked"] - resumed_from) / (m["written_at"] - start)
        print(f"resumed: {resumed_from:,} -> {m['counters']['checked']:,} states checked in "
              f"{m['written_at'] - start:.0f} s (process start to its checkpoint): {after:,.0f} states/s; its own "
              f"figure {rep['states']:,} states "
              f"checked in {rep['seconds']:.0f} s; stopped by {rep['stopped_by']}; checkpoint written in "
              f"{m['write_seconds']:.2f} s", flush=True)
        times = [w[2] for w in writes] + [m["write_seconds"]]
        print(f"checkpoint size: {size:,} bytes for {stored:,} stored states: {size / stored:.1f} bytes a stored "
              f"state, {size / held:.1f} a stored state or candidate; the last one {_size(folder, m) / _held(m):.1f}")
        print(f"time to write one checkpoint: mean {sum(times) / len(times):.2f} s, max {max(times):.2f} s over "
              f"{len(times)}; speed after / before: {after / before:.2f}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if args.folder is None:
            shutil.rmtree(os.path.dirname(folder), ignore_errors=True)


if __name__ == "__main__":
    main()
