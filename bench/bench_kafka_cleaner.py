"""The log cleaner: real Kafka (4.1+) vs our Python reference, same random scenarios, one pass.

Run: .venv/bin/python bench/bench_kafka_cleaner.py [-n N] [--batch B] [--seed S] [RELEASE ...]   (default 4.4.0)

Each scenario (`random_scenario` of reference/kafka_cleaner.py: 1-3 compacted logs, 1-3 rounds of appends with
rolls, lagging high watermarks, tombstones, small offset maps, compaction lags and checkpoints in and out of range)
goes to Kafka's `LogCleanerManager` + `Cleaner` on real `UnifiedLog`s in a temp dir, and to reference/log_cleaner.py.
Prints, per release: scenarios and logs compared, rounds with a pass, differences (the smallest in full), Kafka's
rate (scenarios per second of round-trip wall time; its JVM creates, appends to, cleans and deletes real log
directories, so most of that is file-system work) and our reference's rate (per CPU second), same run. 4.0.x has
the cleaner in Scala (kafka_2.13, not on the bridge classpath) and is refused. Asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from kcheck.reference.kafka_bridge import KafkaBridgeError, shared_bridge
from kcheck.reference.kafka_cleaner import encode_scenario, map_cleaner, random_scenario, reference_cleaner
from kcheck.runtime.exit_codes import Exit


def run(version: str, n: int, batch: int, seed: int) -> None:
    kafka = shared_bridge(version)
    kafka.require("CLN", "the log cleaner (Kafka 4.1+)")
    rng = random.Random(seed)
    kafka_s = ours_s = 0.0
    compared = logs = passes = 0
    diffs = []
    while compared < n:
        scenarios = [random_scenario(random.Random(rng.getrandbits(64))) for _ in range(min(batch, n - compared))]
        t0 = time.perf_counter()
        answers = map_cleaner(kafka, scenarios)
        kafka_s += time.perf_counter() - t0
        t0 = time.process_time()
        ours = [reference_cleaner(s, version) for s in scenarios]
        ours_s += time.process_time() - t0
        for s, theirs, mine in zip(scenarios, answers, ours, strict=True):
            if theirs != mine:
                diffs.append((s, theirs, mine))
            logs += len(s.checkpoints)
            passes += sum(r is not None for r in mine.rounds)
        compared += len(scenarios)
    print(f"{version}: {compared} scenarios ({logs} logs, {passes} cleaner passes), {len(diffs)} differences; "
          f"Kafka {compared / kafka_s:.0f} scenarios/s (wall), ours {compared / ours_s:.0f}/s (CPU)")
    if diffs:
        s, theirs, mine = min(diffs, key=lambda d: len(encode_scenario(d[0])))
        print(f"  smallest: {encode_scenario(s)}\n  kafka: {theirs}\n  ours:  {mine}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("releases", nargs="*", default=["4.4.0"])
    p.add_argument("-n", type=int, default=2000)
    p.add_argument("--batch", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    for v in a.releases:
        if v.startswith(("3.", "4.0.")):
            print(f"{v}: the cleaner is Scala in kafka_2.13 before 4.1 (not on the bridge classpath); skipped")
            continue
        try:
            run(v, a.n, a.batch, a.seed)
        except KafkaBridgeError as e:
            print(f"{v}: {e}", file=sys.stderr)
            return Exit.INCOMPLETE
    return Exit.OK


if __name__ == "__main__":
    sys.exit(main())
