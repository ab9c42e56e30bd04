"""KIP-848 server-side assignors: real Kafka through the bridge vs our Python reference, same inputs, one run.

Run: .venv/bin/python bench/bench_kafka_group_assignors.py [-n N] [--batch B] [--seed S] [VERSION ...]
Prints, per release and assignor (uniform, server-range): inputs compared, differences (with the smallest
one found), inputs our reference does not model, and inputs per second for Kafka (bridge.map_*: encode,
JVM, parse), the JVM alone (the same lines pre-encoded) and our reference. Asserts nothing.

The inputs are `random_problem` of tests/test_kafka_group_assignors.py (the differential test's
generator), drawn from --seed, a batch at a time, so memory stays flat; generating them is not timed.
Default: 3,000 inputs per assignor on 4.4.0, 4.1.2 and 4.0.2, about a minute in all (the first run of a
release also resolves its jars and compiles the harness). A million per assignor on the newest release:

    .venv/bin/python bench/bench_kafka_group_assignors.py -n 1000000 4.4.0     # about 2 h on 2 idle cores
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import time
from pathlib import Path

from kcheck.reference.kafka_bridge import KafkaBridge
from kcheck.reference.kafka_group_assignors import GROUP_ASSIGNOR_CLASSES, encode_request, map_kafka_group_assign

_TESTS = Path(__file__).resolve().parent.parent / "tests" / "test_kafka_group_assignors.py"
# Without -OmitStackTraceInFastThrow, HotSpot throws a hot method's implicit exceptions (an array index
# out of bounds) preallocated, message null, once it has compiled it: the messages would stop matching.
JAVA_OPTIONS = ("-XX:+UseSerialGC", "-XX:-OmitStackTraceInFastThrow")


def _load_generator():
    spec = importlib.util.spec_from_file_location("_kcheck_group_assignor_inputs", _TESTS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _size(problem) -> int:
    spec, describer = problem
    return (len(spec.members) + sum(max(n, 0) for n in describer.partitions.values())
            + sum(len(ps) for m in spec.members.values() for ps in m.assignment.values()))


def _problem(gen, rng: random.Random):
    """A random group; drawn again when its member ids would make a Java HashMap bucket a tree (order not modelled)."""
    while True:
        try:
            return gen.random_problem(random.Random(rng.getrandbits(64)))
        except NotImplementedError:
            continue


def run(gen, kafka: KafkaBridge, assignor: str, n: int, batch: int, seed: int) -> dict:
    ref = gen.reference_assignor(assignor, kafka.version)
    cls = GROUP_ASSIGNOR_CLASSES[assignor]
    rng = random.Random(seed)
    stats = {"inputs": 0, "differences": 0, "unmodelled": 0, "kafka": 0.0, "jvm": 0.0, "ours": 0.0, "first": None}
    while stats["inputs"] < n:
        count = min(batch, n - stats["inputs"])
        problems = [_problem(gen, rng) for _ in range(count)]
        t0 = time.perf_counter()
        real = map_kafka_group_assign(kafka, cls, problems)
        t1 = time.perf_counter()
        mine = [gen.ours(ref, spec, describer) for spec, describer in problems]
        t2 = time.perf_counter()
        lines = [encode_request(cls, spec, describer) for spec, describer in problems]
        t3 = time.perf_counter()
        kafka.roundtrip(lines)
        t4 = time.perf_counter()
        stats["kafka"] += t1 - t0
        stats["ours"] += t2 - t1
        stats["jvm"] += t4 - t3
        stats["inputs"] += len(problems)
        for problem, m, k in zip(problems, mine, real, strict=True):
            if gen.unmodelled(m):
                stats["unmodelled"] += 1
            elif m != gen.theirs(k):
                stats["differences"] += 1
                if stats["first"] is None or _size(problem) < _size(stats["first"][0]):
                    stats["first"] = (problem, m, gen.theirs(k))
    return stats


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("versions", nargs="*", default=["4.4.0", "4.1.2", "4.0.2"])
    parser.add_argument("-n", type=int, default=3_000, help="inputs per assignor and release (default 3000)")
    parser.add_argument("--batch", type=int, default=2_000, help="inputs per bridge round trip (default 2000)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.n < 1 or args.batch < 1:
        parser.error("-n and --batch must be positive")
    gen = _load_generator()
    print(f"{args.n} random group specs per assignor and release (seed {args.seed}); inputs/s")
    print("  kafka: map_kafka_group_assign (encode, JVM, parse); jvm: the round trip alone; ours: the Python reference")
    print(f"{'release':8} {'assignor':12} {'inputs':>9} {'diffs':>6} {'unmod.':>6} {'kafka':>8} {'jvm':>8} "
          f"{'ours':>8} {'kafka/ours':>10}")
    firsts = []
    for version in args.versions:
        with KafkaBridge(version, java_options=JAVA_OPTIONS) as kafka:
            for assignor in GROUP_ASSIGNOR_CLASSES:
                s = run(gen, kafka, assignor, args.n, args.batch, args.seed)
                compared = s["inputs"] - s["unmodelled"]
                rates = [s["inputs"] / s[k] for k in ("kafka", "jvm", "ours")]
                print(f"{version:8} {assignor:12} {compared:>9} {s['differences']:>6} {s['unmodelled']:>6} "
                      f"{rates[0]:>8.0f} {rates[1]:>8.0f} {rates[2]:>8.0f} {rates[0] / rates[2]:>10.2f}", flush=True)
                if s["first"] is not None:
                    firsts.append((version, assignor, s["first"]))
    for version, assignor, (problem, mine, real) in firsts:
        print(f"\nsmallest difference, {assignor} on {version}:\n{gen.show(*problem)}")
        print(f"  ours:  {mine}\n  kafka: {real}")


if __name__ == "__main__":
    main(sys.argv[1:])
