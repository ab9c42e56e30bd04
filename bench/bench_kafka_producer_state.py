"""Producer state: each release's real ProducerStateManager vs our reference, step by step, one pass.

Run: .venv/bin/python bench/bench_kafka_producer_state.py [-n STEPS] [--batch B] [--seed S] [RELEASE ...]
Each input is one step of a script (`kafka_producer_state.random_case`, drawn per release since what the log admits
next depends on the release's verdicts): a client's batch, a marker, a verification entry, the clock, an expiry
check, a roll, a segment deletion, a log-start move or a truncation; its verdict and the whole producer state after
it are compared (request PSTATE, reference/harness/KcheckProducerState.java). Releases run side by side, one JVM
each. Prints, per release: steps and scripts compared, differences (the smallest script in full) and the seconds
the run took; Kafka's rate per JVM CPU second and ours per CPU second. Asserts nothing.
Default: 1,000,000 steps on each of 4.4.0, 4.1.2, 4.0.2 and 3.9.1.
"""

from __future__ import annotations

import argparse
import random
import time

from kafka_fanout import Clock, Fanout, Tally, rate
from kcheck.reference.kafka_producer_state import encode_case, parse_answers, random_case, reference_answers
from kcheck.reference.releases import profile


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=1_000_000, help="steps per release")
    ap.add_argument("--batch", type=int, default=500, help="scripts per round trip")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("releases", nargs="*", default=["4.4.0", "4.1.2", "4.0.2", "3.9.1"])
    args = ap.parse_args()
    rng = random.Random(args.seed)
    clock = Clock()
    profiles = {v: profile(v) for v in args.releases}
    tallies = {v: Tally() for v in args.releases}
    steps = dict.fromkeys(args.releases, 0)
    t0 = time.perf_counter()
    with Fanout(args.releases) as fan:
        fan.require("PSTATE", "producer state")
        warm = {v: [("warm", [encode_case(random_case(rng, p)) for _ in range(200)])] for v, p in profiles.items()}
        for f in fan.submit(warm, timed=False).values():
            f.result()
        while min(steps.values()) < args.n:
            with clock("draw"):
                cases = {v: [random_case(rng, p) for _ in range(args.batch)] for v, p in profiles.items()
                         if steps[v] < args.n}
            futures = fan.submit({v: [("ps", [encode_case(c) for c in cs])] for v, cs in cases.items()})
            with clock("reference"):
                ours = {v: [reference_answers(c, profiles[v]) for c in cs] for v, cs in cases.items()}
            for v, fut in futures.items():
                tally = tallies[v]
                for c, mine, line in zip(cases[v], ours[v], fut.result()["ps"], strict=True):
                    tally.inputs += 1
                    steps[v] += len(c.ops)
                    real = parse_answers(line)
                    differing = sum(a != b for a, b in zip(mine, real, strict=True))
                    if differing:
                        tally.difference(len(c.ops), encode_case(c), mine, real)
                        tally.differences += differing - 1  # Tally counts one per call: count steps
        cpu = {v: fan.cpu.get((v, "ps"), 0.0) for v in args.releases}
    seconds = time.perf_counter() - t0
    total_steps = sum(steps.values())
    print(f"producer state: seed {args.seed}, {seconds:.0f} s for all releases")
    print(f"our reference: {rate(total_steps, clock.seconds.get('reference', 0.0))} steps/CPU-s "
          f"(drawing: {rate(total_steps, clock.seconds.get('draw', 0.0))} steps/CPU-s)")
    for v in args.releases:
        t = tallies[v]
        print(f"  {v}: steps compared {steps[v]:,} (in {t.inputs:,} scripts), differences {t.differences}, "
              f"Kafka {rate(steps[v], cpu[v])} steps/JVM-CPU-s")
        if t.smallest is not None:
            _, s, mine, real = t.smallest
            print(f"    smallest: {s}\n    ours:  {mine}\n    Kafka: {real}")


if __name__ == "__main__":
    main()
