"""Large differential run: log segments and indexes, our reference against Kafka's storage classes.

    python bench/bench_kafka_storage.py [--release 4.4.0] [--cases 100000] [--batch 2000] [--seed 1]

Prints, per release: segment logs and index op lists compared, differences (with the smallest one), and
Kafka's rate against our Python reference's rate measured in the same run. No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from kcheck.reference import kafka_storage as ks
from kcheck.reference.kafka_bridge import KafkaBridge
from kcheck.runtime.exit_codes import Exit


def run(release: str, total: int, batch: int, seed: int) -> int:
    rng = random.Random(seed)
    diffs = 0
    smallest: str | None = None
    kafka_s = ours_s = 0.0
    done = 0
    with KafkaBridge(release) as bridge:
        bridge.require("SEG_LOG", "log segments")
        while done < total:
            n = min(batch, total - done)
            cases = [ks.random_case(rng) for _ in range(n)]
            requests = [ks.random_index_ops(rng, time=bool(i % 2)) for i in range(n)]
            t = time.perf_counter()
            theirs = ks.kafka_outcomes(bridge, cases)
            their_idx = ks.kafka_index_answers(bridge, requests)
            kafka_s += time.perf_counter() - t
            t = time.perf_counter()
            ours = [ks.reference_outcome(c) for c in cases]
            our_idx = [ks.reference_index_answers(*q) for q in requests]
            ours_s += time.perf_counter() - t
            for c, k, r in zip(cases, theirs, ours, strict=True):
                if k != r:
                    diffs += 1
                    line = ks.encode_case(c)
                    if smallest is None or len(line) < len(smallest):
                        smallest = f"{line}\n  kafka: {k}\n  ours:  {r}"
            for q, k2, r2 in zip(requests, their_idx, our_idx, strict=True):
                if k2 != r2:
                    diffs += 1
                    line = ks.encode_index_ops(*q)
                    if smallest is None or len(line) < len(smallest):
                        smallest = f"{line}\n  kafka: {k2}\n  ours:  {r2}"
            done += n
    inputs = 2 * done
    print(f"{release}: {done} segment logs + {done} index op lists compared, {diffs} differences")
    print(f"  kafka {inputs / kafka_s:,.0f} inputs/s (incl. the pipe), our reference {inputs / ours_s:,.0f} inputs/s")
    if smallest:
        print("  smallest difference:", smallest)
    return Exit.FAILED if diffs else Exit.OK


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--release", action="append", help="Kafka release (repeatable; default 4.4.0)")
    p.add_argument("--cases", type=int, default=100_000)
    p.add_argument("--batch", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    if a.cases <= 0 or a.batch <= 0:
        print("--cases and --batch must be positive", file=sys.stderr)
        return Exit.BAD_INPUT
    status = int(Exit.OK)
    for release in a.release or ["4.4.0"]:
        status = max(status, run(release, a.cases, a.batch, a.seed))
    return status


if __name__ == "__main__":
    sys.exit(main())
