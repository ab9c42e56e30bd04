"""The client metadata cache: each release's kafka-clients Metadata vs our reference, call by call, one pass.

Run: .venv/bin/python bench/bench_kafka_client_metadata.py [-n CALLS] [--batch B] [--seed S] [RELEASE ...]
Each input is one call of a script on a fresh Metadata (`kafka_client_metadata.random_case`): a MetadataResponse
(full or partial, version 8 or 12, epochs back and forth or absent, topic ids changing, errors), an out-of-band epoch,
a KIP-951 leader hint, an update request, a failed update or timeToNextUpdate; its result and the cache after it
(updateRequested, topic ids, nodes, and per partition the current leader, its epoch and the last seen epoch) are
compared (request CMETA, reference/harness/KcheckClientMetadata.java). Releases run side by side, one JVM each.
Prints, per release: calls and scripts compared, differences (the smallest in full) and the seconds the run took;
Kafka's rate per JVM CPU second and ours per CPU second. Asserts nothing.
Default: 1,000,000 calls on each of 4.4.0, 4.1.2, 4.0.2 and 3.9.1.
"""

from __future__ import annotations

import argparse
import random
import time

from kafka_fanout import Clock, Fanout, Tally, rate
from kcheck.reference.kafka_client_metadata import encode_case, parse_answers, random_case, reference_answers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=1_000_000, help="calls per release")
    ap.add_argument("--batch", type=int, default=1000, help="scripts per round trip")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("releases", nargs="*", default=["4.4.0", "4.1.2", "4.0.2", "3.9.1"])
    args = ap.parse_args()
    rng = random.Random(args.seed)
    clock = Clock()
    tallies = {v: Tally() for v in args.releases}
    calls = dict.fromkeys(args.releases, 0)
    t0 = time.perf_counter()
    with Fanout(args.releases) as fan:
        fan.require("CMETA", "client metadata")
        warm = [encode_case(random_case(rng)) for _ in range(1000)]
        for f in fan.submit({v: [("warm", warm)] for v in args.releases}, timed=False).values():
            f.result()
        while min(calls.values()) < args.n:
            with clock("draw"):
                cases = [random_case(rng) for _ in range(args.batch)]  # the same scripts for every release
                lines = [encode_case(c) for c in cases]
            todo = [v for v in args.releases if calls[v] < args.n]
            futures = fan.submit({v: [("cm", lines)] for v in todo})
            with clock("reference"):
                ours = [reference_answers(c) for c in cases]
            for v, fut in futures.items():
                tally = tallies[v]
                for c, mine, line in zip(cases, ours, fut.result()["cm"], strict=True):
                    tally.inputs += 1
                    calls[v] += len(c.ops)
                    real = parse_answers(line)
                    differing = sum(a != b for a, b in zip(mine, real, strict=True)) + abs(len(mine) - len(real))
                    if differing:
                        tally.difference(len(c.ops), encode_case(c), mine, real)
                        tally.differences += differing - 1  # Tally counts one per call: count calls
        cpu = {v: fan.cpu.get((v, "cm"), 0.0) for v in args.releases}
    seconds = time.perf_counter() - t0
    drawn = max(calls.values())
    print(f"client metadata: seed {args.seed}, {seconds:.0f} s for all releases")
    print(f"our reference: {rate(drawn, clock.seconds.get('reference', 0.0))} calls/CPU-s "
          f"(drawing: {rate(drawn, clock.seconds.get('draw', 0.0))} calls/CPU-s)")
    for v in args.releases:
        t = tallies[v]
        print(f"  {v}: calls compared {calls[v]:,} (in {t.inputs:,} scripts), differences {t.differences}, "
              f"Kafka {rate(calls[v], cpu[v])} calls/JVM-CPU-s")
        if t.smallest is not None:
            _, s, mine, real = t.smallest
            print(f"    smallest: {s}\n    ours:  {mine}\n    Kafka: {real}")


if __name__ == "__main__":
    main()
