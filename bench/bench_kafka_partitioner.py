"""Large differential run: the producer's partitioner, our reference against each release's kafka-clients classes.

    python bench/bench_kafka_partitioner.py [--release 4.4.0 ...] [--inputs 1000000] [--batch 20000] [--seed 1]

Per release and rule (keys: murmur2 and partitionForKey, one input per key; sticky: one BuiltInPartitioner run of
up to 12 operations with injected draws, one input per run) prints the inputs compared, the differences (with the
smallest one) and the seconds taken (Kafka through the pipe, and our reference). No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from kcheck.reference import kafka_partitioner as kp
from kcheck.reference.kafka_bridge import KafkaBridge

KEYS_PER_LINE = 100


def _keys(bridge: KafkaBridge, rng: random.Random, n: int) -> tuple[int, str | None, float, float]:
    requests = [kp.random_key_request(rng, KEYS_PER_LINE) for _ in range(n // KEYS_PER_LINE)]
    t = time.perf_counter()
    theirs = kp.kafka_key_answers(bridge, requests)
    kafka_s = time.perf_counter() - t
    t = time.perf_counter()
    ours = [kp.reference_key_answers(*r) for r in requests]
    ours_s = time.perf_counter() - t
    diffs, smallest = 0, None
    for (num, keys), k_line, r_line in zip(requests, theirs, ours, strict=True):
        for key, k, r in zip(keys, k_line, r_line, strict=True):
            if k != r:
                diffs += 1
                smallest = smallest or f"PKEY {num} {kp.encode_key(key)}\n  kafka: {k}\n  ours:  {r}"
    return diffs, smallest, kafka_s, ours_s


def _sticky(bridge: KafkaBridge, rng: random.Random, n: int, version: str) -> tuple[int, str | None, float, float]:
    cases = [kp.random_sticky_case(rng) for _ in range(n)]
    t = time.perf_counter()
    theirs = kp.kafka_sticky_outcomes(bridge, cases)
    kafka_s = time.perf_counter() - t
    t = time.perf_counter()
    ours = [kp.reference_sticky_outcome(c, version) for c in cases]
    ours_s = time.perf_counter() - t
    diffs, smallest = 0, None
    for c, k, r in zip(cases, theirs, ours, strict=True):
        if k != r:
            diffs += 1
            line = kp.encode_sticky(c)
            if smallest is None or len(line) < len(smallest):
                smallest = f"{line}\n  kafka: {k}\n  ours:  {r}"
    return diffs, smallest, kafka_s, ours_s


def run(release: str, total: int, batch: int, seed: int) -> int:
    rng = random.Random(seed)
    status = 0
    with KafkaBridge(release) as bridge:
        rules: dict[str, Callable[[int], Any]] = {
            "keys": lambda n: _keys(bridge, rng, n),
            "sticky": lambda n: _sticky(bridge, rng, n, release),
        }
        for rule, step in rules.items():
            done = diffs = 0
            smallest = None
            kafka_s = ours_s = 0.0
            t0 = time.perf_counter()
            while done < total:
                n = min(batch, total - done)
                d, s, k, o = step(n)
                diffs, kafka_s, ours_s, done = diffs + d, kafka_s + k, ours_s + o, done + n
                smallest = smallest or s
            print(f"{release} {rule}: {done:,} inputs, {diffs} differences, {time.perf_counter() - t0:.1f} s "
                  f"(kafka {kafka_s:.1f} s incl. the pipe, our reference {ours_s:.1f} s)", flush=True)
            if smallest:
                print("  smallest difference:", smallest)
                status = 1
    return status


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--release", action="append", help="Kafka release (repeatable; default 4.4.0)")
    p.add_argument("--inputs", type=int, default=1_000_000, help="inputs per rule and release")
    p.add_argument("--batch", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    if a.inputs <= 0 or a.batch < KEYS_PER_LINE:
        print(f"--inputs must be positive and --batch at least {KEYS_PER_LINE}", file=sys.stderr)
        return 2
    return max(run(release, a.inputs, a.batch, a.seed) for release in a.release or ["4.4.0"])


if __name__ == "__main__":
    sys.exit(main())
