"""Time to counterexample of the random search (`kcheck.model.search.random_search` with the replication model's
settings, invariants/replication_searches/random_runs.py) for each built-in row, over several seeds, and today's
protocol clean on every row's configuration for the same budget (no false alarm).

For each row of `VARIANTS` (its historical protocol, its `cfg_for` settings, every replication invariant checked)
and each seed: the CPU seconds until the first violation, the CPU seconds the shrinking took (`minimize_run`),
the shrunk counterexample's length in steps and its invariant. Then per row: how many seeds found it, the
median CPU seconds to find it (a seed that found nothing within --budget counts as longer than the budget) and
the median shrunk length. Then today's protocol on each row's configuration, --clean-seeds seeds of --budget
CPU seconds each: programs and steps run, and any violation (a false alarm: the bench exits 1).

    python bench/bench_random_search.py [--seeds 5] [--budget 60] [--rows a,b] [--split] [--baseline]

--split runs with split fetches (three steps per fetch) instead of atomic ones. --baseline also runs
`random_search` with its defaults (no kind weights, no follow, no corpus: the engine as it was before the
settings) for 300 programs of 50 steps per row and seed, for comparison in the same run.
The machine is shared: CPU seconds (time.process_time) are what is measured, not wall time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from kcheck.runtime.exit_codes import Exit


def _one(name: str, seed: int, budget: float, atomic: bool) -> dict[str, Any]:
    from kcheck.invariants.replication_model_adapter import ReplicationModel
    from kcheck.invariants.replication_rows import cfg_for
    from kcheck.invariants.replication_searches.random_runs import search, search_config
    from kcheck.model.replication.protocol import VARIANTS
    from kcheck.model.search import minimize_run

    v = VARIANTS[name]
    start = time.process_time()
    r = search(v.protocol, cfg_for(name), seed=seed, max_cpu_seconds=budget, atomic=atomic, shrink=False)
    found_at = time.process_time() - start
    out: dict[str, Any] = {"programs": r.programs, "steps": r.transitions, "found": r.counterexample is not None}
    if r.counterexample is None:
        return out
    m = ReplicationModel(v.protocol, search_config(cfg_for(name), atomic))
    raw = r.counterexample.steps
    acts = []
    for (_text, before), (text, after) in zip(raw, raw[1:], strict=False):
        acts.append(next(a for a in m.actions(before) if m.describe(a) == text and m.step(before, a) == after))
    start = time.process_time()
    steps, why = minimize_run(m, raw[0][1], acts)
    out.update(seconds=found_at, shrink_seconds=time.process_time() - start, raw_length=len(raw) - 1,
               length=len(steps) - 1, invariant=why[0], expected=why[0] in v.violates)
    return out


def _baseline(name: str, seed: int) -> dict[str, Any]:
    from kcheck.invariants.replication_model_adapter import ReplicationModel
    from kcheck.invariants.replication_rows import cfg_for
    from kcheck.model.replication.protocol import VARIANTS
    from kcheck.model.search import random_search

    start = time.process_time()
    r = random_search(ReplicationModel(VARIANTS[name].protocol, cfg_for(name)), seed=seed, programs=300,
                      max_steps=50)
    return {"found": r.counterexample is not None, "seconds": time.process_time() - start}


def _clean(name: str, seed: int, budget: float, atomic: bool) -> dict[str, Any]:
    from kcheck.invariants.replication_rows import cfg_for
    from kcheck.invariants.replication_searches.random_runs import search
    from kcheck.model.replication.protocol import Protocol

    r = search(Protocol.current(), cfg_for(name), seed=seed, max_cpu_seconds=budget, atomic=atomic, shrink=False)
    cx = r.counterexample
    return {"programs": r.programs, "steps": r.transitions, "states": r.states,
            "violation": None if cx is None else f"{cx.invariant} after {len(cx.steps) - 1} steps"}


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("inf")


def main(argv: list[str] | None = None) -> int:
    from kcheck.model.replication.protocol import VARIANTS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=float, default=60.0, help="CPU seconds per row and seed (default 60)")
    ap.add_argument("--rows", default="", help="comma-separated variant names (default: every row)")
    ap.add_argument("--clean-seeds", type=int, default=1, help="seeds of today's protocol per row (default 1)")
    ap.add_argument("--split", action="store_true", help="split fetches (default: atomic fetches)")
    ap.add_argument("--baseline", action="store_true", help="also random_search's defaults, 300 programs")
    args = ap.parse_args(argv)
    rows = [r for r in args.rows.split(",") if r] or list(VARIANTS)
    unknown = [r for r in rows if r not in VARIANTS]
    if unknown:
        print(f"unknown row {unknown[0]!r}: one of {', '.join(VARIANTS)}", file=sys.stderr)
        return Exit.BAD_INPUT
    atomic = not args.split
    print(f"random search, {'atomic' if atomic else 'split'} fetches, seeds 0-{args.seeds - 1}, "
          f"budget {args.budget:g} CPU s per run")
    head = (f"{'row':24} {'#':>2} {'found':>5} {'median s':>8} {'max s':>7} {'shrink s':>8} {'len':>4} "
            f"{'script':>6}  invariant")
    print(head)
    print("-" * len(head))
    slow = 0
    for name in rows:
        v = VARIANTS[name]
        runs = [_one(name, seed, args.budget, atomic) for seed in range(args.seeds)]
        hits = [r for r in runs if r["found"]]
        times = [r["seconds"] if r["found"] else float("inf") for r in runs]
        med = _median(times)
        slow += med >= 10.0
        worst = max(times)
        invs = sorted({r["invariant"].split(".", 1)[1] + ("" if r["expected"] else "(*)") for r in hits})
        print(f"{name:24} {v.row:>2} {len(hits)}/{len(runs):<3} "
              f"{(f'{med:.1f}' if med != float('inf') else f'>{args.budget:g}'):>8} "
              f"{(f'{worst:.1f}' if worst != float('inf') else '-'):>7} "
              f"{_median([r['shrink_seconds'] for r in hits]):>8.1f} "
              f"{(int(_median([r['length'] for r in hits])) if hits else '-'):>4} {v.minimal_steps:>6}  "
              f"{', '.join(invs)}", flush=True)
        print("    per seed (CPU s to find / shrunk length): "
              + "  ".join(f"{r['seconds']:.1f}/{r['length']}" if r["found"] else "-" for r in runs), flush=True)
        if args.baseline:
            base = [_baseline(name, seed) for seed in range(args.seeds)]
            print(f"    baseline (defaults, 300 programs): found {sum(b['found'] for b in base)}/{len(base)}, "
                  f"median {_median([b['seconds'] for b in base]):.1f} CPU s per run", flush=True)
    print("(*) an invariant outside the row's listed ones; 'script' is the row's scripted length (split fetches)")
    print(f"rows with a median of 10 CPU s or more: {slow}")
    print()
    print(f"today's protocol on each row's configuration, {args.clean_seeds} seed(s) x {args.budget:g} CPU s:")
    alarms = 0
    for name in rows:
        for seed in range(args.clean_seeds):
            c = _clean(name, seed, args.budget, atomic)
            alarms += c["violation"] is not None
            print(f"  {name:24} seed {seed}: {c['programs']} programs, {c['steps']} steps, {c['states']} distinct "
                  f"states: {c['violation'] or 'clean'}", flush=True)
    print(f"false alarms: {alarms}")
    return Exit.FAILED if alarms else Exit.OK


if __name__ == "__main__":
    sys.exit(main())
