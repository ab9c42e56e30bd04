"""Fetch bounds: each release's real classes vs reference/fetch.py, one pass per rule.

Run: .venv/bin/python bench/bench_kafka_fetch.py [-n INPUTS] [--batch B] [--seed S] [RELEASE ...]
Rules and what one input is (reference/kafka_fetch.py; reference/harness/KcheckFetch.java):
  EPOCH    one op on a real LeaderEpochFileCache (assign, truncation, endOffsetFor), in scripts of 40
  FPARAMS  one (version, replica id, isolation level, client metadata): FetchIsolation.of and FetchParams' flags
  FREAD    one UnifiedLog.read / LocalLog.read on a real log; a log (real segment files) serves 40 reads, so
           1,000,000 reads build 25,000 logs
Prints per release and rule: inputs compared, differences (the first in full) and seconds. Asserts nothing.
Default: 1,000,000 inputs per rule on each of 4.4.0, 4.1.2, 4.0.2 and 3.9.1.
"""

from __future__ import annotations

import argparse
import random
import time

from kcheck.reference import kafka_fetch as kf
from kcheck.reference.kafka_bridge import KafkaBridge


def _release(v: str, n: int, batch: int, seed: int) -> None:
    rng = random.Random(seed)
    with KafkaBridge(v) as bridge:
        for rule, per_case in (("EPOCH", 40), ("FPARAMS", 50), ("FREAD", 40)):
            inputs = differences = 0
            first = ""
            t0 = time.perf_counter()
            while inputs < n:
                got, bad, shown = kf.compare(bridge, v, rule, rng, min(batch * per_case, max(per_case, n - inputs)))
                inputs += got
                differences += bad
                first = first or shown
            print(f"  {v} {rule}: inputs {inputs:,}, differences {differences}, {time.perf_counter() - t0:.0f} s",
                  flush=True)
            if first:
                print(f"    first: {first}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=1_000_000, help="inputs per rule and release")
    ap.add_argument("--batch", type=int, default=200, help="cases per round trip")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("releases", nargs="*", default=["4.4.0", "4.1.2", "4.0.2", "3.9.1"])
    args = ap.parse_args()
    for v in args.releases:
        _release(v, args.n, args.batch, args.seed)

if __name__ == "__main__":
    main()
