"""Row 4 (KIP-320, variant no-epoch-in-fetch) by exact search: `kcheck.model.search.exhaust` in each order on the
row's own setting, one run. Every engine here stores concrete states by fingerprint (no abstraction merges two
states); they differ only in which stored state is expanded next (`order`: bfs, dfs, novelty).

Prints, per order and fetch model (atomic fetches, `Config.atomic_fetch`, and the row's split fetches): whether a
violation of the row's property was reached, distinct states stored, the deepest stored path (for BFS the level
reached), the counterexample's length, CPU seconds, states per CPU second and the peak RSS of the search's own
process (each search runs in a fresh spawned process, so getrusage's peak is its own). BFS and dfs stop at the
CPU budget (they do not reach the violation in it on this machine); the BFS line says which depth it covered.

    python bench/bench_row4_exact.py [--budget 300] [--split] [--orders bfs,dfs,novelty]

--budget: CPU seconds each search may take (the search's `max_seconds` is set to 4x it as a wall-clock guard on
a loaded machine; the CPU figure printed is the search's own). --split adds the split-fetch model (about four
times the states of the atomic one for novelty).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import time
from typing import Any


def _run(order: str, atomic: bool, budget: float) -> dict[str, Any]:
    from dataclasses import replace

    from kcheck.invariants.replication_model_adapter import ReplicationModel
    from kcheck.invariants.replication_searches.runs import novelty_key
    from kcheck.model.replication import Config
    from kcheck.model.replication.protocol import VARIANTS
    from kcheck.model.search import exhaust

    v = VARIANTS["no-epoch-in-fetch"]
    cfg = replace(Config(**v.settings), atomic_fetch=atomic)
    model = ReplicationModel(v.protocol, cfg, only=set(v.violates))
    cpu0 = time.process_time()

    def over_budget() -> str | None:
        return "cpu-budget" if time.process_time() - cpu0 >= budget else None

    r = exhaust(model, order=order, novelty=novelty_key, max_seconds=4 * budget, stop=over_budget)
    cpu = time.process_time() - cpu0
    cx = r.counterexample
    return {"order": order, "fetches": "atomic" if atomic else "split", "found": cx is not None,
            "invariant": cx.invariant if cx else "", "steps": len(cx.steps) - 1 if cx else 0, "states": r.states,
            "depth": r.depth, "stopped": r.stopped_because, "cpu": cpu,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _put(out: Any, order: str, atomic: bool, budget: float) -> None:
    out.put(_run(order, atomic, budget))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, default=300.0, help="CPU seconds per search")
    ap.add_argument("--split", action="store_true", help="also the split-fetch model")
    ap.add_argument("--orders", default="bfs,dfs,novelty")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    print(f"row 4 (no-epoch-in-fetch) at its own setting; budget {args.budget:g} CPU s per search; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'fetches':8} {'order':8} {'found':6} {'states':>10} {'depth':>6} {'steps':>6} {'CPU s':>8} "
          f"{'states/CPU s':>13} {'peak RSS':>9}  stopped")
    for atomic in ([True, False] if args.split else [True]):
        for order in args.orders.split(","):
            out = ctx.Queue()
            p = ctx.Process(target=_put, args=(out, order, atomic, args.budget))
            p.start()
            r = out.get()
            p.join()
            rate = r["states"] / r["cpu"] if r["cpu"] else 0.0
            print(f"{r['fetches']:8} {r['order']:8} {'yes' if r['found'] else 'no':6} {r['states']:>10,} "
                  f"{r['depth']:>6} {r['steps'] or '-':>6} {r['cpu']:>8.1f} {rate:>13,.0f} {r['rss_mb']:>7.0f} MB"
                  f"  {r['stopped']}{' ' + r['invariant'] if r['found'] else ''}", flush=True)


if __name__ == "__main__":
    main()
