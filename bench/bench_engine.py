"""Today's replication exhaust (`replication_explore.exhaust`: State objects + a networkx graph) against the engine
of `kcheck.model.search` (64-bit fingerprints, parent pointers, traces by re-execution) on the same bounds, in one
run. Prints, per bound and engine: distinct states, whether the search completed, CPU seconds, states per CPU
second, peak RSS of the search's own process (each search runs in a fresh process), memory per state (traced by
tracemalloc in a separate run: peak bytes allocated / states), and for the new engine the visited store's own
bytes per state. Then the largest bound of the ladder each engine completes within --budget CPU seconds.

    python bench/bench_engine.py [--budget 60] [--ladder 3] [--symmetry]

The machine is shared: CPU seconds (time.process_time) are what is compared, not wall time.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import time
import tracemalloc
from typing import Any

LADDER: list[dict[str, Any]] = [
    # 2 brokers, one crash, growing records: each step multiplies the states
    dict(brokers=2, min_isr=1, records=1, max_leader_epoch=2, crashes=1, lossy_crashes=0, fences=0, elections=0,
         isr_shrinks=0, failovers=0, reads=0, duplicates=False),
    dict(brokers=2, min_isr=1, records=2, max_leader_epoch=2, crashes=1, lossy_crashes=0, fences=0, elections=0,
         isr_shrinks=0, failovers=0, reads=0, duplicates=False),
    dict(brokers=2, min_isr=1, records=2, max_leader_epoch=3, crashes=1, lossy_crashes=0, fences=1, elections=1,
         isr_shrinks=0, failovers=0, reads=0, duplicates=False),
    dict(brokers=2, min_isr=1, records=3, max_leader_epoch=3, crashes=1, lossy_crashes=1, fences=1, elections=1,
         isr_shrinks=0, failovers=0, reads=1, duplicates=False),
]


def _run(engine: str, bounds: dict[str, Any], budget: float, symmetry: bool, traced: bool) -> dict[str, Any]:
    from kcheck.invariants.replication_explore import exhaust as today
    from kcheck.invariants.replication_explore import rss_bytes
    from kcheck.invariants.replication_model_adapter import ReplicationModel
    from kcheck.model.replication import Config, Protocol
    from kcheck.model.search import exhaust

    cfg, protocol = Config(**bounds), Protocol.current()
    base = rss_bytes()
    if traced:
        tracemalloc.start()
    start = time.process_time()
    out: dict[str, Any] = {}
    if engine == "today":
        r = today(protocol, cfg, max_seconds=budget)
        out.update(states=r.states, complete=r.complete, stop=r.stop_reason)
    else:
        n = exhaust(ReplicationModel(protocol, cfg), max_seconds=budget, symmetry=symmetry)
        out.update(states=n.states, complete=n.complete, stop=n.stopped_because, store=n.bytes_per_state,
                   frontier=n.frontier_peak)
    out["cpu"] = time.process_time() - start
    if traced:
        out["traced"] = tracemalloc.get_traced_memory()[1] / max(1, out["states"])
        tracemalloc.stop()
    out["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["base"] = base
    return out


def run(engine: str, bounds: dict[str, Any], budget: float, symmetry: bool = False,
        traced: bool = False) -> dict[str, Any]:
    """One search in a fresh process (its peak RSS is its own)."""
    with mp.get_context("spawn").Pool(1) as pool:
        return pool.apply(_run, (engine, bounds, budget, symmetry, traced))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=60.0, help="CPU seconds per search (default 60)")
    ap.add_argument("--ladder", type=int, default=len(LADDER), help="how many bounds of the ladder to run")
    ap.add_argument("--symmetry", action="store_true", help="new engine with symmetry (pays only with spare brokers)")
    args = ap.parse_args()
    largest: dict[str, int] = {}
    print(f"{'bound':>5} {'engine':>6} {'states':>9} {'done':>5} {'cpu s':>7} {'states/s':>9} {'peak RSS MB':>11} "
          f"{'store B/st':>10} {'frontier':>8}")
    for i, bounds in enumerate(LADDER[:args.ladder]):
        rows = {}
        for engine in ("today", "new"):
            r = run(engine, bounds, args.budget, args.symmetry)
            rows[engine] = r
            if r["complete"]:
                largest[engine] = i
            store = f"{r['store']:.1f}" if r.get("store") else "-"
            print(f"{i:>5} {engine:>6} {r['states']:>9} {str(r['complete'])[0]:>5} {r['cpu']:>7.1f} "
                  f"{r['states'] / max(r['cpu'], 1e-9):>9.0f} {r['rss'] / 2**20:>11.0f} {store:>10} "
                  f"{r.get('frontier', '-'):>8}", flush=True)
        t, n = rows["today"], rows["new"]
        if t["complete"] and n["complete"]:
            assert t["states"] == n["states"] or args.symmetry, "the engines disagree on the reachable states"
        rate = (n["states"] / n["cpu"]) / (t["states"] / t["cpu"])
        extra = (t["rss"] - t["base"]) / max(1, t["states"]), (n["rss"] - n["base"]) / max(1, n["states"])
        print(f"      new/today states per CPU s: {rate:.2f}x; RSS growth per state: today {extra[0]:.0f} B, "
              f"new {extra[1]:.0f} B", flush=True)
    # memory per state, traced, on the first bound both complete quickly
    traced = {e: run(e, LADDER[1], args.budget, args.symmetry, traced=True) for e in ("today", "new")}
    print(f"traced peak bytes per state on bound 1 ({traced['new']['states']} states): "
          f"today {traced['today']['traced']:.0f} B, new {traced['new']['traced']:.0f} B "
          f"(new's visited store alone: {traced['new']['store']:.1f} B)")
    print("largest bound completed within the budget: "
          + ", ".join(f"{e} {largest.get(e, 'none')}" for e in ("today", "new")))


if __name__ == "__main__":
    main()
