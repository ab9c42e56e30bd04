"""Today's replication exhaust (`yardstick.exhaust`: State objects + a networkx graph) against the engine
of `kcheck.model.search` (64-bit fingerprints, parent pointers, traces by re-execution) on the same bounds, in one
run. Prints, per bound and engine: distinct states, whether the search completed, CPU seconds, states per CPU
second, peak RSS of the search's own process (each search runs in a fresh process), memory per state (traced by
tracemalloc in a separate run: peak bytes allocated / states), and for the new engine the visited store's own
bytes per state. Then the largest bound of the ladder each engine completes within --budget CPU seconds.

    python bench/bench_engine.py [--budget 60] [--ladder 3] [--symmetry] [--metadata zookeeper] [--repeat 3]
    python bench/bench_engine.py --workers [--ladder 3]     # 1 vs 2 processes: wall and CPU seconds, speed-up
    python bench/bench_engine.py --bound rf3 [--budget 1200] [--spill-dir DIR]

--workers runs the new engine with 1 and with 2 worker processes on each bound of the ladder and prints wall
seconds, CPU seconds (the caller's and its workers', from getrusage), states per wall second, the speed-up
(wall 1 / wall 2) and the CPU overhead of the second process (CPU 2 / CPU 1), and the largest bound each
completes within --budget wall seconds. The machine is shared, so wall figures are only as good as its load:
the load average is printed with them.

--bound rf3 runs the bound of issue 14's target with 2 workers: brokers=3, replication factor 3, min.insync.replicas
2, records 2, one crash, one fence, one lossy crash, one election, no ISR shrink, failover, read or duplicate,
today's protocol, for at most --budget wall seconds; it prints progress every 30 s and the states, transitions,
depth, time, states per second and peak memory (the caller and its workers, RSS summed) at the end.

The machine is shared: CPU seconds (time.process_time) are what is compared, not wall time. On a loaded machine
a process's CPU seconds still grow with the load (caches, hyperthreads), so `--repeat N` runs each engine N times
per bound, alternating, and keeps each engine's fastest run (best of N) for the rate and the ratio. `--metadata`
picks how brokers learn the controller's decisions (`Config.metadata`: kraft, the default, or zookeeper); both
engines run the same Config.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
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


def _run(engine: str, bounds: dict[str, Any], budget: float, symmetry: bool, traced: bool,
         metadata: str | None = None) -> dict[str, Any]:
    from kcheck.invariants.replication_model_adapter import ReplicationModel
    from kcheck.invariants.replication_searches.runs import rss_bytes
    from kcheck.invariants.replication_searches.yardstick import exhaust as today
    from kcheck.model.replication import Config, Protocol
    from kcheck.model.search import exhaust

    mode: dict[str, Any] = {"metadata": metadata} if metadata else {}
    cfg, protocol = Config(**bounds, **mode), Protocol.current()
    base = rss_bytes()
    if traced:
        tracemalloc.start()
    start = time.process_time()
    out: dict[str, Any] = {}
    if engine == "today":
        r = today(protocol, cfg, max_seconds=budget)
        out.update(states=r.states, transitions=r.transitions, complete=r.complete, stop=r.stop_reason)
    else:
        n = exhaust(ReplicationModel(protocol, cfg), max_seconds=budget, symmetry=symmetry)
        out.update(states=n.states, transitions=n.transitions, complete=n.complete, stop=n.stopped_because,
                   store=n.bytes_per_state,
                   frontier=n.frontier_peak)
    out["cpu"] = time.process_time() - start
    if traced:
        out["traced"] = tracemalloc.get_traced_memory()[1] / max(1, out["states"])
        tracemalloc.stop()
    out["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["base"] = base
    return out


RF3: dict[str, Any] = dict(brokers=3, replication_factor=3, min_isr=2, records=2, crashes=1, fences=1, lossy_crashes=1,
                           elections=1, isr_shrinks=0, failovers=0, reads=0, reassignments=0, cancels=0,
                           duplicates=False)


def _tree_rss() -> int:
    """RSS of this process and its descendants (the forked workers), summed (Linux /proc; 0 elsewhere)."""
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/status", encoding="ascii") as f:
                total += next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                    todo += [int(x) for x in f.read().split()]
        except (OSError, StopIteration, ValueError):
            continue
    return total


def _run_workers(bounds: dict[str, Any], workers: int, budget: float, spill_dir: str | None = None,
                 report: float = 0.0) -> dict[str, Any]:
    from kcheck.invariants.replication_model_adapter import ReplicationModel
    from kcheck.model.replication import Config, Protocol
    from kcheck.model.search import SearchResult, exhaust

    peak = [_tree_rss()]
    last = [time.perf_counter()]

    def progress(r: SearchResult) -> None:
        peak[0] = max(peak[0], _tree_rss())
        if report and time.perf_counter() - last[0] >= report:
            last[0] = time.perf_counter()
            print(f"  ... {r.states:,} states, {r.transitions:,} transitions, {r.seconds:.0f} s, "
                  f"{r.states / max(r.seconds, 1e-9):.0f} states/s, {peak[0] / 2**20:.0f} MB", flush=True)

    wall, cpu = time.perf_counter(), time.process_time()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = exhaust(ReplicationModel(Protocol.current(), Config(**bounds)), max_seconds=budget, workers=workers,
                spill_dir=spill_dir, progress=progress)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return dict(states=r.states, transitions=r.transitions, depth=r.depth, complete=r.complete,
                stop=r.stopped_because, wall=time.perf_counter() - wall,
                cpu=time.process_time() - cpu + (after.ru_utime + after.ru_stime) - (kids.ru_utime + kids.ru_stime),
                store=r.bytes_per_state, frontier=r.frontier_peak, spilled=r.spilled_bytes,
                peak=max(peak[0], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024),
                violation=None if r.counterexample is None else r.counterexample.invariant)


def run_workers(bounds: dict[str, Any], workers: int, budget: float, spill_dir: str | None = None,
                report: float = 0.0) -> dict[str, Any]:
    """One search with `workers` processes, from a fresh process (its getrusage figures are its own; not a Pool
    worker, which being daemonic may not fork the search's workers)."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    p = ctx.Process(target=_put, args=(out, _run_workers, (bounds, workers, budget, spill_dir, report)))
    p.start()
    try:
        return out.get()
    finally:
        p.join()


def _put(out: Any, fn: Any, args: tuple[Any, ...]) -> None:
    out.put(fn(*args))


def compare_workers(budget: float, ladder: int) -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'bound':>5} {'workers':>7} {'states':>9} {'done':>5} {'wall s':>7} {'cpu s':>7} {'states/wall s':>13} "
          f"{'store B/st':>10}")
    largest: dict[int, int] = {}
    for i, bounds in enumerate(LADDER[:ladder]):
        rows = {}
        for workers in (1, 2):
            r = rows[workers] = run_workers(bounds, workers, budget)
            if r["complete"]:
                largest[workers] = i
            print(f"{i:>5} {workers:>7} {r['states']:>9} {str(r['complete'])[0]:>5} {r['wall']:>7.1f} "
                  f"{r['cpu']:>7.1f} {r['states'] / max(r['wall'], 1e-9):>13.0f} {r['store'] or 0:>10.1f}",
                  flush=True)
        one, two = rows[1], rows[2]
        if one["complete"] and two["complete"]:
            same = (one["states"], one["transitions"]) == (two["states"], two["transitions"])
            print(f"      states and transitions: {'equal' if same else 'DIFFERENT'} "
                  f"({one['states']}/{one['transitions']} vs {two['states']}/{two['transitions']})")
        print(f"      speed-up (wall 1 / wall 2): {one['wall'] / max(two['wall'], 1e-9):.2f}x; CPU 2 / CPU 1: "
              f"{two['cpu'] / max(one['cpu'], 1e-9):.2f}; load average now {os.getloadavg()[0]:.1f}", flush=True)
    print("largest bound completed within the budget: "
          + ", ".join(f"{w} worker(s) {largest.get(w, 'none')}" for w in (1, 2)))


def rf3(budget: float, spill_dir: str | None) -> None:
    print(f"bound rf3: {RF3} (max_leader_epoch and acks at their defaults), 2 workers, at most {budget:.0f} s; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    r = run_workers(RF3, 2, budget, spill_dir, report=30.0)
    verdict = "complete and clean" if r["complete"] else (
        f"violation of {r['violation']}" if r["violation"] else f"stopped ({r['stop']})")
    print(f"rf3: {verdict}: {r['states']:,} states, {r['transitions']:,} transitions, depth {r['depth']}, "
          f"{r['wall']:.0f} s wall, {r['cpu']:.0f} s CPU, {r['states'] / max(r['wall'], 1e-9):.0f} states/s, "
          f"peak memory {r['peak'] / 2**20:.0f} MB, store {r['store'] or 0:.1f} B/state, frontier peak "
          f"{r['frontier']:,}, spilled {r['spilled']:,} B", flush=True)


def run(engine: str, bounds: dict[str, Any], budget: float, symmetry: bool = False,
        traced: bool = False, metadata: str | None = None) -> dict[str, Any]:
    """One search in a fresh process (its peak RSS is its own)."""
    with mp.get_context("spawn").Pool(1) as pool:
        return pool.apply(_run, (engine, bounds, budget, symmetry, traced, metadata))


def best_of(engines: tuple[str, ...], bounds: dict[str, Any], budget: float, symmetry: bool, metadata: str | None,
            repeat: int) -> dict[str, dict[str, Any]]:
    """Each engine `repeat` times on one bound, alternating: per engine, the run of the highest states per CPU
    second (a loaded machine only ever slows a run down), with every run's rate in "rates"."""
    best: dict[str, dict[str, Any]] = {}
    rates: dict[str, list[float]] = {e: [] for e in engines}
    for _ in range(repeat):
        for engine in engines:
            r = run(engine, bounds, budget, symmetry, metadata=metadata)
            rate = r["states"] / max(r["cpu"], 1e-9)
            rates[engine].append(rate)
            if engine not in best or rate > best[engine]["states"] / max(best[engine]["cpu"], 1e-9):
                best[engine] = r
    for engine in engines:
        best[engine]["rates"] = rates[engine]
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=60.0, help="CPU seconds per search (default 60)")
    ap.add_argument("--ladder", type=int, default=len(LADDER), help="how many bounds of the ladder to run")
    ap.add_argument("--symmetry", action="store_true", help="new engine with symmetry (pays only with spare brokers)")
    ap.add_argument("--workers", action="store_true", help="new engine, 1 vs 2 worker processes")
    ap.add_argument("--bound", choices=["rf3"], help="run one named bound with 2 workers (see above)")
    ap.add_argument("--spill-dir", help="spill the frontier there (--bound)")
    ap.add_argument("--metadata", choices=["kraft", "zookeeper"], help="Config.metadata for both engines (default: "
                    "the Config's, kraft)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per engine and bound, best of them kept (default 1)")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.bound == "rf3":
        rf3(args.budget if args.budget != 60.0 else 1200.0, args.spill_dir)
        return
    if args.workers:
        compare_workers(args.budget, args.ladder)
        return
    largest: dict[str, int] = {}
    print(f"metadata {args.metadata or 'kraft'}; best of {args.repeat} run(s) per engine; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'bound':>5} {'engine':>6} {'states':>9} {'transitions':>11} {'done':>5} {'cpu s':>7} {'states/s':>9} "
          f"{'peak RSS MB':>11} {'store B/st':>10} {'frontier':>8}")
    for i, bounds in enumerate(LADDER[:args.ladder]):
        rows = best_of(("today", "new"), bounds, args.budget, args.symmetry, args.metadata, args.repeat)
        for engine in ("today", "new"):
            r = rows[engine]
            if r["complete"]:
                largest[engine] = i
            store = f"{r['store']:.1f}" if r.get("store") else "-"
            runs = "" if args.repeat == 1 else "  (runs: " + ", ".join(f"{x:.0f}" for x in r["rates"]) + ")"
            print(f"{i:>5} {engine:>6} {r['states']:>9} {r['transitions']:>11} {str(r['complete'])[0]:>5} "
                  f"{r['cpu']:>7.1f} {r['states'] / max(r['cpu'], 1e-9):>9.0f} {r['rss'] / 2**20:>11.0f} {store:>10} "
                  f"{r.get('frontier', '-'):>8}{runs}", flush=True)
        t, n = rows["today"], rows["new"]
        if t["complete"] and n["complete"] and not args.symmetry:
            same = (t["states"], t["transitions"]) == (n["states"], n["transitions"])
            assert same, "the engines disagree on the reachable states or transitions"
        rate = (n["states"] / n["cpu"]) / (t["states"] / t["cpu"])
        extra = (t["rss"] - t["base"]) / max(1, t["states"]), (n["rss"] - n["base"]) / max(1, n["states"])
        print(f"      new/today states per CPU s: {rate:.2f}x; RSS growth per state: today {extra[0]:.0f} B, "
              f"new {extra[1]:.0f} B", flush=True)
    # memory per state, traced, on the first bound both complete quickly
    traced = {e: run(e, LADDER[1], args.budget, args.symmetry, traced=True, metadata=args.metadata)
              for e in ("today", "new")}
    print(f"traced peak bytes per state on bound 1 ({traced['new']['states']} states): "
          f"today {traced['today']['traced']:.0f} B, new {traced['new']['traced']:.0f} B "
          f"(new's visited store alone: {traced['new']['store']:.1f} B)")
    print("largest bound completed within the budget: "
          + ", ".join(f"{e} {largest.get(e, 'none')}" for e in ("today", "new")))


if __name__ == "__main__":
    main()
