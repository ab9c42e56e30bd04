"""What `kcheck exhaust --reduce` (model/replication/reduction.py) does to the states of the RF 3 bound
(brokers 3, replication factor 3, min.insync.replicas 2, KRaft, no duplicates; one crash, one fence, one lossy
crash, one election), measured on its parts: each fault alone and in pairs and triples, one or two records, split
or atomic fetches. Per part, the search without and with the reduction, each in a fresh process with --budget CPU
seconds: states, whether it completed, depth, CPU seconds, and the ratio of states when both completed.

    python bench/bench_reduction.py [--budget 120] [--records 1] [--split] [--parts singles|pairs|all]
    python bench/bench_reduction.py --full [--budget 1800] [--records 2] [--split]   # the whole bound, 2 workers

--full runs the whole bound with the reduction and 2 worker processes for at most --budget wall seconds and prints
progress every 60 s: the largest bound this machine gets through, or how far it got.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
from itertools import combinations
from typing import Any

FAULTS = ("crashes", "fences", "lossy_crashes", "elections")
BASE: dict[str, Any] = dict(brokers=3, replication_factor=3, min_isr=2, crashes=0, fences=0, lossy_crashes=0,
                            elections=0, isr_shrinks=0, failovers=0, reads=0, reassignments=0, cancels=0,
                            duplicates=False)


def _search(bounds: dict[str, Any], reduce: bool, budget: float, workers: int, report: float) -> dict[str, Any]:
    from kcheck.invariants.replication_model_adapter import ReplicationModel
    from kcheck.model.replication import Config, Protocol
    from kcheck.model.search import SearchResult, exhaust

    last = [time.perf_counter()]

    def progress(r: SearchResult) -> None:
        if report and time.perf_counter() - last[0] >= report:
            last[0] = time.perf_counter()
            print(f"  ... {r.states:,} states, depth {r.depth}, {r.seconds:.0f} s", flush=True)

    model = ReplicationModel(Protocol.current(), Config(**bounds), reduce=reduce)
    assert reduce == (model.reduction_off is None), model.reduction_off
    cpu = time.process_time()
    r = exhaust(model, max_seconds=budget, workers=workers, progress=progress if report else None)
    return dict(states=r.states, complete=r.complete, depth=r.depth, cpu=time.process_time() - cpu,
                wall=r.seconds, violation=None if r.counterexample is None else r.counterexample.invariant)


def _put(out: Any, args: tuple[Any, ...]) -> None:
    out.put(_search(*args))


def _fresh(*args: Any) -> dict[str, Any]:
    """One search in a fresh process (not a Pool worker: a daemonic process may not fork the search's workers)."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    p = ctx.Process(target=_put, args=(out, args))
    p.start()
    try:
        return out.get()
    finally:
        p.join()


def parts(which: str) -> list[tuple[str, ...]]:
    sizes = {"singles": (1,), "pairs": (2,), "all": (1, 2, 3)}[which]
    return [c for k in sizes for c in combinations(FAULTS, k)]


def table(budget: float, records: int, split: bool, which: str) -> None:
    print(f"RF 3 bound's parts, records {records}, {'split' if split else 'atomic'} fetches, {budget:.0f} CPU s "
          f"each; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'faults':<36} {'states':>10} {'done':>5} {'depth':>5} {'cpu s':>7} {'reduced':>10} {'done':>5} "
          f"{'depth':>5} {'cpu s':>7} {'ratio':>6}")
    for faults in parts(which):
        bounds = {**BASE, "records": records, "atomic_fetch": not split, **{f: 1 for f in faults}}
        full, red = _fresh(bounds, False, budget, 1, 0.0), _fresh(bounds, True, budget, 1, 0.0)
        ratio = f"{full['states'] / red['states']:.1f}x" if full["complete"] and red["complete"] else "-"
        print(f"{'+'.join(faults):<36} {full['states']:>10,} {str(full['complete'])[0]:>5} {full['depth']:>5} "
              f"{full['cpu']:>7.1f} {red['states']:>10,} {str(red['complete'])[0]:>5} {red['depth']:>5} "
              f"{red['cpu']:>7.1f} {ratio:>6}", flush=True)


def full_bound(budget: float, records: int, split: bool) -> None:
    bounds = {**BASE, "records": records, "atomic_fetch": not split, **{f: 1 for f in FAULTS}}
    print(f"the RF 3 bound with --reduce, records {records}, {'split' if split else 'atomic'} fetches, 2 workers, "
          f"at most {budget:.0f} s; load average {os.getloadavg()[0]:.1f}", flush=True)
    r = _fresh(bounds, True, budget, 2, 60.0)
    verdict = ("complete and clean" if r["complete"] else f"violation of {r['violation']}" if r["violation"]
               else "stopped by the budget")
    print(f"rf3 --reduce: {verdict}: {r['states']:,} states, depth {r['depth']}, {r['wall']:.0f} s wall", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, help="seconds per search (default 120; --full 1800)")
    ap.add_argument("--records", type=int, default=1, help="records produced (default 1)")
    ap.add_argument("--split", action="store_true", help="split fetches (default atomic)")
    ap.add_argument("--parts", choices=["singles", "pairs", "all"], default="singles")
    ap.add_argument("--full", action="store_true", help="the whole bound, reduced, 2 workers")
    args = ap.parse_args()
    if args.full:
        full_bound(args.budget or 1800.0, args.records, args.split)
    else:
        table(args.budget or 120.0, args.records, args.split, args.parts)


if __name__ == "__main__":
    main()
