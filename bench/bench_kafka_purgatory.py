"""The acks=all wait: each release's real DelayedProduce vs our reference, step by step, one pass.

Run: .venv/bin/python bench/bench_kafka_purgatory.py [-n STEPS] [--batch B] [--seed S] [RELEASE ...]
Each input is one step of an operation (`kafka_purgatory.random_case`): its creation, a tryComplete with the
validator's answers of the moment, or the deadline (run); its result, the partitions asked, every partition's state and
the callback's map are compared (request DPROD on the broker-side bridge: the Scala kafka.server.DelayedProduce with a
Mockito ReplicaManager up to 4.2, the Java org.apache.kafka.server.purgatory.DelayedProduce from 4.3). Releases run
side by side, one JVM each. Prints, per release: steps and operations compared, differences (the smallest in full)
and the seconds the run took; Kafka's rate per JVM CPU second and ours per CPU second. Asserts nothing.
Default: 1,000,000 steps on each of 4.4.0, 4.1.2, 4.0.2 and 3.9.1.
"""

from __future__ import annotations

import argparse
import random
import time

from kafka_fanout import Clock, Fanout, Tally, rate
from kcheck.reference.kafka_purgatory import encode_case, parse_answers, random_case, reference_answers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=1_000_000, help="steps per release")
    ap.add_argument("--batch", type=int, default=2000, help="operations per round trip")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("releases", nargs="*", default=["4.4.0", "4.1.2", "4.0.2", "3.9.1"])
    args = ap.parse_args()
    rng = random.Random(args.seed)
    clock = Clock()
    tallies = {v: Tally() for v in args.releases}
    steps = dict.fromkeys(args.releases, 0)
    t0 = time.perf_counter()
    with Fanout(args.releases, server=True) as fan:
        fan.require("DPROD", "DelayedProduce")
        warm = [encode_case(random_case(rng)) for _ in range(2000)]
        for f in fan.submit({v: [("warm", warm)] for v in args.releases}, timed=False).values():
            f.result()
        while min(steps.values()) < args.n:
            with clock("draw"):
                cases = [random_case(rng) for _ in range(args.batch)]  # the same operations for every release
                lines = [encode_case(c) for c in cases]
            todo = [v for v in args.releases if steps[v] < args.n]
            futures = fan.submit({v: [("dp", lines)] for v in todo})
            with clock("reference"):
                ours = [reference_answers(c) for c in cases]
            for v, fut in futures.items():
                tally = tallies[v]
                for c, mine, line in zip(cases, ours, fut.result()["dp"], strict=True):
                    tally.inputs += 1
                    steps[v] += len(mine)
                    real = parse_answers(line)
                    differing = sum(a != b for a, b in zip(mine, real, strict=True)) + abs(len(mine) - len(real))
                    if differing:
                        tally.difference(len(mine), encode_case(c), mine, real)
                        tally.differences += differing - 1  # Tally counts one per call: count steps
        cpu = {v: fan.cpu.get((v, "dp"), 0.0) for v in args.releases}
    seconds = time.perf_counter() - t0
    drawn = max(steps.values())
    print(f"DelayedProduce: seed {args.seed}, {seconds:.0f} s for all releases")
    print(f"our reference: {rate(drawn, clock.seconds.get('reference', 0.0))} steps/CPU-s "
          f"(drawing: {rate(drawn, clock.seconds.get('draw', 0.0))} steps/CPU-s)")
    for v in args.releases:
        t = tallies[v]
        print(f"  {v}: steps compared {steps[v]:,} (in {t.inputs:,} operations), differences {t.differences}, "
              f"Kafka {rate(steps[v], cpu[v])} steps/JVM-CPU-s")
        if t.smallest is not None:
            _, s, mine, real = t.smallest
            print(f"    smallest: {s}\n    ours:  {mine}\n    Kafka: {real}")


if __name__ == "__main__":
    main()
