"""The storage model's historical bugs (`kcheck.model.storage.VARIANTS`) against the engines of kcheck.model.search.

For each variant at its smallest setting: `exhaust` (BFS: CPU seconds to the counterexample, states stored, trace
length) and `random_search` over 5 seeds (CPU seconds to the counterexample per seed, programs run, trace length
after shrinking; the median over the seeds that found it); then today's rules at the same setting, exhaustively
(clean or not, and the state count). CPU seconds of this process (time.process_time), one run.

    python bench/bench_storage_model.py [--seeds 5] [--programs 600] [--steps 14] [--max-seconds 120]
"""

from __future__ import annotations

import argparse
import statistics
import time

from kcheck.invariants.storage_model import StorageModel
from kcheck.model.search import exhaust, random_search
from kcheck.model.storage import VARIANTS, Rules
from kcheck.runtime.exit_codes import Exit


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--programs", type=int, default=600)
    ap.add_argument("--steps", type=int, default=14)
    ap.add_argument("--max-seconds", type=float, default=120.0)
    args = ap.parse_args()
    rows = []
    missed = 0
    for name, v in VARIANTS.items():
        t = time.process_time()
        ex = exhaust(StorageModel.for_variant(v), max_seconds=args.max_seconds)
        ex_s = time.process_time() - t
        ex_len = len(ex.counterexample.steps) - 1 if ex.counterexample else None
        found_s, lengths = [], []
        for seed in range(args.seeds):
            t = time.process_time()
            r = random_search(StorageModel.for_variant(v), seed=seed, programs=args.programs, max_steps=args.steps)
            if r.counterexample is not None and r.counterexample.invariant in v.violates:
                found_s.append(time.process_time() - t)
                lengths.append(len(r.counterexample.steps) - 1)
        t = time.process_time()
        today = exhaust(StorageModel.for_variant(v, rules=Rules.current()), max_seconds=args.max_seconds)
        today_s = time.process_time() - t
        if ex.counterexample is None or today.counterexample is not None or not today.complete:
            missed += 1
        rows.append((name, v.jira, ex.counterexample.invariant if ex.counterexample else "-", ex_s, ex.states, ex_len,
                     len(found_s), statistics.median(found_s) if found_s else None,
                     statistics.median(lengths) if lengths else None,
                     "clean" if today.complete and today.counterexample is None else "NOT CLEAN", today.states,
                     today_s))
    head = ("variant", "JIRA", "invariant", "exhaust s", "states", "trace", f"random found/{args.seeds}",
            "median s", "median trace", "today", "today states", "today s")
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    for row in rows:
        print(" | ".join("-" if x is None else f"{x:.2f}" if isinstance(x, float) else str(x) for x in row))
    return Exit.FAILED if missed else Exit.OK


if __name__ == "__main__":
    raise SystemExit(main())
