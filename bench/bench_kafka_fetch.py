"""Fetch bounds: each release's real classes vs reference/fetch.py, one pass per rule.

Run: .venv/bin/python bench/bench_kafka_fetch.py [-n INPUTS] [--batch B] [--seed S] [RELEASE ...]
Rules and what one input is (reference/kafka_fetch.py; reference/harness/KcheckFetch.java):
  EPOCH    one op on a real LeaderEpochFileCache (assign, truncation, endOffsetFor), in scripts of 40
  FPARAMS  one (version, replica id, isolation level, client metadata): FetchIsolation.of and FetchParams' flags
  FREAD    one UnifiedLog.read / LocalLog.read on a real log; a log (real segment files) serves 100 reads, so
           1,000,000 reads build 10,000 logs
Prints per release and rule: inputs compared, differences (the first in full) and seconds. Asserts nothing.
Default: 1,000,000 inputs per rule on each of 4.4.0, 4.1.2, 4.0.2 and 3.9.1.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

from kcheck.reference import kafka_fetch as kf
from kcheck.reference.kafka_bridge import KafkaBridge
from kcheck.reference.releases import profile


def _rule(name: str, bridge: KafkaBridge, n: int, batch: int, per_case: int, draw: Callable[[], object],
          ours: Callable[[object], list[str]], theirs: Callable[[KafkaBridge, Sequence[object]], list[list[str]]],
          show: Callable[[object], str]) -> None:
    inputs = differences = 0
    first = ""
    t0 = time.perf_counter()
    while inputs < n:
        cases = [draw() for _ in range(min(batch, max(1, (n - inputs) // per_case)))]
        for case, real in zip(cases, theirs(bridge, cases), strict=True):
            mine = ours(case)
            inputs += len(real)
            bad = [i for i, (a, b) in enumerate(zip(mine, real, strict=True)) if a != b]
            differences += len(bad) + abs(len(mine) - len(real))
            if bad and not first:
                first = f"{show(case)}\n    at {bad[0]}: ours {mine[bad[0]]}  Kafka {real[bad[0]]}"
    print(f"  {bridge.version} {name}: inputs {inputs:,}, differences {differences}, "
          f"{time.perf_counter() - t0:.0f} s")
    if first:
        print(f"    first: {first}")


def _release(v: str, n: int, batch: int, seed: int) -> None:
    rng = random.Random(seed)
    prof = profile(v)
    with KafkaBridge(v) as bridge:
        _rule("EPOCH", bridge, n, batch, 40, lambda: kf.random_epoch_ops(rng, 40), kf.reference_epoch,
              kf.kafka_epoch, lambda c: kf.encode_epoch(c))  # type: ignore[arg-type]
        _rule("FPARAMS", bridge, n, batch, 50, lambda: kf.random_params(rng, 50),
              lambda c: kf.reference_params(c, prof), kf.kafka_params,  # type: ignore[arg-type]
              lambda c: kf.encode_params(c))  # type: ignore[arg-type]
        _rule("FREAD", bridge, n, batch // 4, 100, lambda: kf.random_read_case(rng, 100),
              lambda c: kf.reference_read(c, prof), kf.kafka_read,  # type: ignore[arg-type]
              lambda c: kf.encode_read(c))  # type: ignore[arg-type]


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
