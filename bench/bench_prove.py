"""Time per proof at growing bounds: which bounds prove in seconds and which in minutes.

Run: .venv/bin/python bench/bench_prove.py [largest broker bound, default 7]   (prints figures; asserts nothing)
"""

from __future__ import annotations

import sys
import time

from kcheck.invariants import smt
from kcheck.invariants.exhaustive import check_exhaustively
from kcheck.invariants.prover import Bounds, prove, prove_distinct_brokers_unbounded
from kcheck.reference.placers import BUILTIN_PLACERS


def main() -> None:
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    start = time.perf_counter()
    r = prove_distinct_brokers_unbounded()
    print(f"adminutils distinct-brokers, every cluster size: {r.status} in {time.perf_counter() - start:.3f} s")
    print(f"{'bounds (brokers/racks/partitions/rf)':38} {'algorithm':22} {'invariant':30} {'result':9} {'seconds':>8}")
    for brokers in range(4, top + 1):
        bounds = Bounds(brokers, 3, brokers + 2, 3)
        label = f"{brokers}/3/{brokers + 2}/3"
        for algorithm in ("adminutils", "adminutils-rack-aware", "striped"):
            for inv in smt.FORMS:
                r = prove(algorithm, inv, BUILTIN_PLACERS["adminutils"], bounds)
                if r.status != "not applicable":
                    print(f"{label:38} {algorithm:22} {inv:30} {r.status:9} {r.seconds:8.2f}", flush=True)
        started = time.perf_counter()
        results = check_exhaustively(BUILTIN_PLACERS["striped"], list(smt.FORMS), bounds)
        runs = next(iter(results.values())).queries
        seconds = time.perf_counter() - started
        print(f"{label:38} {'striped (every draw)':22} {'all six, one pass':30} {runs:>9,} {seconds:8.2f}", flush=True)


if __name__ == "__main__":
    main()
