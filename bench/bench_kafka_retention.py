"""Retention: the real UnifiedLog of each release vs our Python reference, same scripts, one pass.

Run: .venv/bin/python bench/bench_kafka_retention.py [-n N] [--batch B] [--seed S] [RELEASE ...]
Each input is a script (`random_script` of tests/test_kafka_retention.py: appends, rolls, high watermark moves,
DeleteRecords and at least two retention runs with snapshots, configurations drawn at the retention.bytes and
retention.ms boundaries, every cleanup policy, both timestamp types) run on a fresh UnifiedLog per script
(request RT, kcheck.reference.kafka_retention) and on `reference_script`; every answer is compared. Releases run
side by side, one JVM each (4.1 and later: 4.0's UnifiedLog is Scala in kafka_2.13, not on the bridge classpath).
Prints, per release: scripts and retention runs compared, differences (the smallest in full), Kafka's rate (scripts
per second of its JVM's CPU time and of round-trip wall time) and our reference's rate (per CPU second), measured in
the same run. Asserts nothing. Default: 5,000 scripts on 4.4.0 and 4.1.2.

Each Kafka script creates a log directory, its segment and index files and a producer-state snapshot per roll (on
/dev/shm where there is one), so Kafka's side costs milliseconds a script; ours is pure arithmetic.
"""

from __future__ import annotations

import argparse
import random
import time

from kafka_fanout import Clock, Fanout, Tally, load_tests_module, rate
from kcheck.reference.kafka_retention import RT_WORD, Retain, encode_retention, parse_retention, reference_script


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("releases", nargs="*", default=["4.4.0", "4.1.2"])
    args = ap.parse_args()
    tests = load_tests_module("test_kafka_retention")
    rng = random.Random(args.seed)
    clock = Clock()
    tallies = {v: Tally() for v in args.releases}
    runs = 0
    with Fanout(args.releases) as fan:
        fan.require(RT_WORD, "UnifiedLog retention (Kafka 4.1+)")
        warm = [encode_retention(tests.random_script(rng)) for _ in range(200)]
        for f in fan.submit({v: [("warm", warm)] for v in args.releases}, timed=False).values():
            f.result()
        done = 0
        while done < args.n:
            with clock("draw"):
                scripts = [tests.random_script(rng) for _ in range(min(args.batch, args.n - done))]
                lines = [encode_retention(s) for s in scripts]
            futures = fan.submit({v: [("rt", lines)] for v in args.releases})
            with clock("reference"):
                ours = [reference_script(s) for s in scripts]
            runs += sum(isinstance(op, Retain) for s in scripts for op in s.ops)
            for v, fut in futures.items():
                answers = fut.result()["rt"]
                tally = tallies[v]
                for s, mine, line in zip(scripts, ours, answers, strict=True):
                    tally.inputs += 1
                    real = parse_retention(line)
                    if real != mine:
                        tally.difference(len(s.ops), s, mine, real)
            done += len(scripts)
        cpu = {v: fan.cpu.get((v, "rt"), 0.0) for v in args.releases}
        wall = {v: fan.wall.get((v, "rt"), 0.0) for v in args.releases}
    ref = clock.seconds.get("reference", 0.0)
    print(f"retention: {args.n:,} scripts, {runs:,} retention runs per release (seed {args.seed})")
    print(f"our reference: {rate(args.n, ref)} scripts/CPU-s")
    for v in args.releases:
        t = tallies[v]
        print(f"  {v}: compared {t.compared:,}, differences {t.differences}, Kafka {rate(t.inputs, cpu[v])} "
              f"scripts/JVM-CPU-s, {rate(t.inputs, wall[v])} scripts/wall-s")
        if t.smallest is not None:
            _, s, mine, real = t.smallest
            print(f"    smallest: {s}\n    ours:  {mine}\n    Kafka: {real}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
