"""Produce admission: each release's real LogValidator vs our reference, per rule, one pass.

Run: .venv/bin/python bench/bench_kafka_produce_admission.py [-n INPUTS] [--batch B] [--seed S] [RELEASE ...]
Each input is one LogValidator call on record bytes our reference builds (`kafka_produce_admission.random_case`,
aimed at one rule: offsets and counts, control batches, sequences, compacted keys, timestamps, LogAppendTime from a
producer, compression, several or no batches, replication origin, valid appends); the whole answer (exception,
message and record errors, or offsets, max timestamp, stamped batches and target compression) is compared (request
LOGVAL, reference/harness/KcheckLogValidator.java). Releases run side by side, one JVM each. Prints, per release
and rule: inputs, differences (the smallest in full), and the seconds the run took. Asserts nothing.
Default: 1,000,000 inputs per rule on each of 4.4.0, 4.1.2, 4.0.2 and 3.9.1 (-n sets the per-rule count).
"""

from __future__ import annotations

import argparse
import random
import time

from kafka_fanout import Clock, Fanout, Tally, rate
from kcheck.reference.kafka_produce_admission import RULES, encode_case, random_case, reference_answer
from kcheck.reference.releases import profile


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=1_000_000, help="inputs per rule and release")
    ap.add_argument("--batch", type=int, default=2000, help="inputs per round trip")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("releases", nargs="*", default=["4.4.0", "4.1.2", "4.0.2", "3.9.1"])
    args = ap.parse_args()
    rng = random.Random(args.seed)
    clock = Clock()
    profiles = {v: profile(v) for v in args.releases}
    tallies = {(v, r): Tally() for v in args.releases for r in RULES}
    t0 = time.perf_counter()
    with Fanout(args.releases) as fan:
        fan.require("LOGVAL", "LogValidator")
        for rule in RULES:
            done = 0
            while done < args.n:
                k = min(args.batch, args.n - done)
                with clock("draw"):
                    cases = {v: [random_case(rng, p, rule) for _ in range(k)] for v, p in profiles.items()}
                futures = fan.submit({v: [("lv", [encode_case(c) for c in cs])] for v, cs in cases.items()})
                with clock("reference"):
                    ours = {v: [reference_answer(c, profiles[v]) for c in cs] for v, cs in cases.items()}
                for v, fut in futures.items():
                    tally = tallies[(v, rule)]
                    for c, mine, real in zip(cases[v], ours[v], fut.result()["lv"], strict=True):
                        tally.inputs += 1
                        if mine != real:
                            tally.difference(len(encode_case(c)), encode_case(c), mine, real)
                done += k
        cpu = {v: fan.cpu.get((v, "lv"), 0.0) for v in args.releases}
    seconds = time.perf_counter() - t0
    total = sum(t.inputs for t in tallies.values())
    print(f"produce admission (LogValidator): seed {args.seed}, {seconds:.0f} s for all releases")
    print(f"our reference: {rate(total, clock.seconds.get('reference', 0.0))} inputs/CPU-s "
          f"(drawing: {rate(total, clock.seconds.get('draw', 0.0))} inputs/CPU-s)")
    for v in args.releases:
        n = sum(tallies[(v, r)].inputs for r in RULES)
        print(f"  {v}: inputs {n:,}, differences {sum(tallies[(v, r)].differences for r in RULES)}, "
              f"Kafka {rate(n, cpu[v])} inputs/JVM-CPU-s")
        for r in RULES:
            t = tallies[(v, r)]
            print(f"    {r}: inputs {t.inputs:,}, differences {t.differences}")
            if t.smallest is not None:
                _, s, mine, real = t.smallest
                print(f"      smallest: {s}\n      ours:  {mine}\n      Kafka: {real}")


if __name__ == "__main__":
    main()
