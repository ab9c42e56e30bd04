"""Client assignors: Kafka's classes through the bridge vs our Python reference, same random inputs, one run.

Run:  .venv/bin/python bench/bench_kafka_client_assignors.py [-n N] [--releases 4.4.0,4.1.2] [--assignors range,...]
Default: 4,000 inputs per assignor on 4.4.0 (about a minute). A million per assignor and release:

    .venv/bin/python bench/bench_kafka_client_assignors.py -n 1000000 --releases 4.4.0,4.1.2,4.0.2,3.9.1

(about 3 hours per release on a 2-core machine, most of it our Python sticky assignors; memory stays flat:
inputs go in chunks of 2,000). Inputs are drawn like tests/test_kafka_client_assignors.py draws them (its
`random_shape` and `problem`): every size class, heterogeneous and equal subscriptions, racks, stale and
multiple claims, generations, static members. Prints per release and assignor: inputs compared, inputs our
reference declines (a tree-bin HashMap it does not model), differences, Kafka's rate through the bridge
(encode, JVM, parse: what `map_kafka_assign` costs), the JVM round trip alone (pre-encoded lines), our
reference's rate, all measured in this run on the same inputs; then the smallest input found for each
difference kind. Asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import test_kafka_client_assignors as inputs  # noqa: E402 - the test's input generator and comparison
from kcheck.reference.kafka_bridge import KafkaBridge  # noqa: E402
from kcheck.reference.kafka_client_assignors import CLIENT_ASSIGNOR_CLASSES, encode_request, parse_answer  # noqa: E402

CHUNK = 2000


def run(version: str, names: list[str], n: int, seed: int) -> list[tuple[str, inputs.Problem, object, object]]:
    found = []
    with KafkaBridge(version) as kafka:
        print(f"Kafka {kafka.kafka_version} (JVM start {kafka.start_seconds:.1f} s)")
        print(f"  {'assignor':20} {'inputs':>9} {'declined':>8} {'diffs':>6} {'kafka/s':>9} {'jvm/s':>9} "
              f"{'ours/s':>9} {'kafka/ours':>10}  Kafka's exceptions")
        for name in names:
            rng = random.Random(f"{seed}/{name}")
            inputs.kafka_answers(kafka, name, [inputs.problem(inputs.random_shape(rng)) for _ in range(300)])  # JIT
            compared = declined = diffs = 0
            kafka_s = jvm_s = ours_s = 0.0
            cls = CLIENT_ASSIGNOR_CLASSES[name]
            thrown: Counter[str] = Counter()
            kinds: set[tuple[str, str]] = set()
            done = 0
            while done < n:
                ps = [inputs.problem(inputs.random_shape(rng)) for _ in range(min(CHUNK, n - done))]
                done += len(ps)
                t0 = time.perf_counter()
                lines = [encode_request(cls, *p.inputs(name)) for p in ps]
                t1 = time.perf_counter()
                answers = kafka.roundtrip(lines)
                t2 = time.perf_counter()
                real = [inputs.theirs(parse_answer(a)) for a in answers]
                t3 = time.perf_counter()
                mine = [inputs.ours(name, p, version) for p in ps]
                ours_s += time.perf_counter() - t3
                kafka_s += t3 - t0
                jvm_s += t2 - t1
                for p, m, r in zip(ps, mine, real, strict=True):
                    if isinstance(r, tuple):
                        thrown[r[0]] += 1
                    if m == inputs.NOT_MODELLED:
                        declined += 1
                        continue
                    compared += 1
                    if not inputs.same(m, r):
                        diffs += 1
                        kind = (inputs.kind(m), inputs.kind(r))
                        if kind not in kinds:
                            kinds.add(kind)
                            small = inputs.minimise(p, inputs.differs(kafka, name, version, kind))
                            found.append((f"{version} {name}", small, inputs.ours(name, small, version),
                                          inputs.kafka_answers(kafka, name, [small])[0]))
            exceptions = ", ".join(f"{k} {v}" for k, v in thrown.most_common()) or "-"
            print(f"  {name:20} {compared:9,} {declined:8,} {diffs:6,} {done / kafka_s:9,.0f} {done / jvm_s:9,.0f} "
                  f"{done / ours_s:9,.0f} {ours_s / kafka_s:9.2f}x  {exceptions}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=4000, help="inputs per assignor and release (default 4000)")
    parser.add_argument("--releases", default=inputs.NEWEST, help="comma-separated Kafka releases")
    parser.add_argument("--assignors", default=",".join(inputs.NAMES),
                        help="comma-separated: " + ", ".join(inputs.NAMES))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    names = [a for a in args.assignors.split(",") if a]
    unknown = [a for a in names if a not in inputs.NAMES]
    if unknown:
        parser.error(f"unknown assignor {unknown[0]!r} (expected one of {', '.join(inputs.NAMES)})")
    found = []
    for version in [v for v in args.releases.split(",") if v]:
        found += run(version, names, args.n, args.seed)
    for where, p, mine, real in found:
        metadata, subs = p.inputs(where.split()[1])
        print(f"\n{where}: smallest input found\n  metadata: {metadata}\n  subscriptions: {subs}\n"
              f"  ours:  {mine}\n  kafka: {real}")


if __name__ == "__main__":
    main()
