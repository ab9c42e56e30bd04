"""Large differential run: request/response headers and ApiVersions negotiation, our reference against Kafka.

    python bench/bench_kafka_protocol_headers.py [--release 4.4.0 ...] [--inputs 1000000] [--batch 5000] [--seed 1]

For each release and rule (`headers`: the HDR_* words, `negotiation`: the APIVER_* words of
reference/kafka_protocol_headers.py) it sends `--inputs` random request lines to Kafka's classes and compares each
answer with our reference's, then prints: inputs, differences (with the smallest one), seconds. No timing is
asserted anywhere.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from kcheck.reference import kafka_protocol_headers as kh
from kcheck.reference.kafka_bridge import KafkaBridge
from kcheck.runtime.exit_codes import Exit


def run(bridge: KafkaBridge, rule: str, total: int, batch: int, seed: int) -> int:
    release = bridge.version
    rng = random.Random(f"{seed}/{release}/{rule}")
    diffs, done, smallest = 0, 0, None
    start = time.perf_counter()
    while done < total:
        lines = [kh.random_request(rng, release, rule) for _ in range(min(batch, total - done))]
        for line, theirs in zip(lines, kh.kafka_answers(bridge, lines), strict=True):
            ours = kh.reference_answer(release, line)
            if ours != theirs:
                diffs += 1
                if smallest is None or len(line) < len(smallest[0]):
                    smallest = (line, theirs, ours)
        done += len(lines)
    seconds = time.perf_counter() - start
    print(f"{release} {rule}: {done} inputs, {diffs} differences, {seconds:.1f} s")
    if smallest:
        print(f"  smallest difference: {smallest[0]}\n  kafka: {smallest[1]}\n  ours:  {smallest[2]}")
    return Exit.FAILED if diffs else Exit.OK


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--release", action="append", help="Kafka release (repeatable; default 4.4.0)")
    p.add_argument("--rule", action="append", choices=kh.RULES, help="rule (repeatable; default both)")
    p.add_argument("--inputs", type=int, default=1_000_000)
    p.add_argument("--batch", type=int, default=5000)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    if a.inputs <= 0 or a.batch <= 0:
        print("--inputs and --batch must be positive", file=sys.stderr)
        return Exit.BAD_INPUT
    status = int(Exit.OK)
    for release in a.release or ["4.4.0"]:
        with KafkaBridge(release) as bridge:
            for rule in a.rule or kh.RULES:
                status = max(status, run(bridge, rule, a.inputs, a.batch, a.seed))
    return status


if __name__ == "__main__":
    sys.exit(main())
