"""Client assignors: Kafka's classes through the bridge vs our Python reference, same random inputs, one run.

Run:  .venv/bin/python bench/bench_kafka_client_assignors.py [-n N] [--releases 4.4.0,4.1.2] [--assignors range,...]
Default: 2,000 inputs per assignor on 4.4.0 (under a minute). A million per assignor and release:

    nice .venv/bin/python bench/bench_kafka_client_assignors.py -n 1000000 --releases 4.4.0,4.1.2,4.0.2,3.9.1

One pass serves every release: each input is drawn once and shared by the four assignors, our reference
answers it once (every release compared so far, 3.9.1 to 4.4.0, agrees with the one reference), and the
same encoded line goes to one JVM per release at once (a thread per bridge, so the JVMs work while our
Python does); identical answer lines are parsed once. About an hour on a 2-core machine for the line above;
memory stays flat (inputs go in chunks of 2,000). Inputs are drawn like tests/test_kafka_client_assignors.py
draws them (its `random_shape` and `problem`): every size class, heterogeneous and equal subscriptions, racks,
stale and multiple claims, generations, static members.

Prints per assignor: inputs compared, inputs our reference declines (a tree-bin HashMap it does not model),
differences per release, each release's JVM round trip (inputs/s, wall time of its thread, JVMs running side by
side), our reference's rate and the encode and parse rates, all measured in this run on the same inputs; then
the smallest input found for each difference kind. Asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import test_kafka_client_assignors as inputs  # noqa: E402 - the test's input generator and comparison
from kcheck.reference.kafka_bridge import KafkaBridge  # noqa: E402
from kcheck.reference.kafka_client_assignors import CLIENT_ASSIGNOR_CLASSES, encode_request, parse_answer  # noqa: E402

CHUNK = 2000


@dataclass
class Tally:
    compared: int = 0
    declined: int = 0
    diffs: Counter[str] = field(default_factory=Counter)  # per release
    jvm_s: Counter[str] = field(default_factory=Counter)  # per release, wall time of the round trips
    thrown: Counter[str] = field(default_factory=Counter)  # Kafka's exceptions (newest release)
    ours_s: float = 0.0
    encode_s: float = 0.0
    parse_s: float = 0.0


def _timed(bridge: KafkaBridge, lines: list[str]) -> tuple[list[str], float]:
    t = time.perf_counter()
    answers = bridge.roundtrip(lines)
    return answers, time.perf_counter() - t


def run(versions: list[str], names: list[str], n: int, seed: int) -> None:
    found = []
    tallies = {name: Tally() for name in names}
    with ExitStack() as stack, ThreadPoolExecutor(len(versions)) as pool:
        bridges = {v: stack.enter_context(KafkaBridge(v)).start() for v in versions}
        for b in bridges.values():
            print(f"Kafka {b.kafka_version} (JVM start {b.start_seconds:.1f} s)")
        rng = random.Random(f"{seed}/warm-up")
        warm = [inputs.problem(inputs.random_shape(rng)) for _ in range(300)]
        for name in names:  # let the JIT compile before anything is timed
            for b in bridges.values():
                inputs.kafka_answers(b, name, warm)
        rng = random.Random(seed)
        gen_s, done, started = 0.0, 0, time.perf_counter()
        while done < n:
            t = time.perf_counter()
            ps = [inputs.problem(inputs.random_shape(rng)) for _ in range(min(CHUNK, n - done))]
            gen_s += time.perf_counter() - t
            done += len(ps)
            for name in names:
                tally, cls = tallies[name], CLIENT_ASSIGNOR_CLASSES[name]
                t0 = time.perf_counter()
                lines = [encode_request(cls, *p.inputs(name)) for p in ps]
                t1 = time.perf_counter()
                futures = {v: pool.submit(_timed, b, lines) for v, b in bridges.items()}
                mine = [inputs.ours(name, p) for p in ps]
                t2 = time.perf_counter()
                answers = {}
                for v, f in futures.items():
                    answers[v], seconds = f.result()
                    tally.jvm_s[v] += seconds
                t3 = time.perf_counter()
                for i, (p, m) in enumerate(zip(ps, mine, strict=True)):
                    parsed: dict[str, object] = {}
                    for v in versions:
                        line = answers[v][i]
                        if line not in parsed:
                            parsed[line] = inputs.theirs(parse_answer(line))
                        real = parsed[line]
                        if v == versions[0] and isinstance(real, tuple):
                            tally.thrown[real[0]] += 1
                        if m == inputs.NOT_MODELLED:
                            continue
                        if not inputs.same(m, real):
                            tally.diffs[v] += 1
                            kind = (f"{v} {name}", inputs.kind(m), inputs.kind(real))
                            if kind not in {k for k, *_ in found}:
                                small = inputs.minimise(p, inputs.differs(bridges[v], name, v, kind[1:]))
                                found.append((kind, small, inputs.ours(name, small),
                                              inputs.kafka_answers(bridges[v], name, [small])[0]))
                                print(f"  difference: {' '.join(kind)} (input {done - len(ps) + i:,}); smallest input "
                                      "at the end", flush=True)
                    if m == inputs.NOT_MODELLED:
                        tally.declined += 1
                    else:
                        tally.compared += 1
                tally.encode_s += t1 - t0
                tally.ours_s += t2 - t1
                tally.parse_s += time.perf_counter() - t3
            if done % 100_000 < CHUNK:
                elapsed = time.perf_counter() - started
                print(f"  ... {done:,} inputs per assignor in {elapsed:,.0f} s; differences so far "
                      f"{sum(sum(t.diffs.values()) for t in tallies.values())}", flush=True)
    elapsed = time.perf_counter() - started
    print(f"\n{done:,} inputs per assignor and release in {elapsed:,.0f} s wall "
          f"(drawing inputs: {done / gen_s:,.0f}/s, shared by the assignors)")
    head = "".join(f" {'diffs ' + v:>12}" for v in versions) + "".join(f" {'jvm/s ' + v:>12}" for v in versions)
    print(f"  {'assignor':20} {'compared':>9} {'declined':>8}{head} {'ours/s':>8} {'encode/s':>9} {'parse/s':>8}"
          "  Kafka's exceptions (" + versions[0] + ")")
    for name, t in tallies.items():
        cells = "".join(f" {t.diffs[v]:12,}" for v in versions) + "".join(f" {done / t.jvm_s[v]:12,.0f}"
                                                                             for v in versions)
        exceptions = ", ".join(f"{k} {c}" for k, c in t.thrown.most_common()) or "-"
        print(f"  {name:20} {t.compared:9,} {t.declined:8,}{cells} {done / t.ours_s:8,.0f} "
              f"{done / t.encode_s:9,.0f} {done / t.parse_s:8,.0f}  {exceptions}")
    for (where, *_), p, mine, real in found:
        metadata, subs = p.inputs(where.split()[1])
        print(f"\n{where}: smallest input found\n  metadata: {metadata}\n  subscriptions: {subs}\n"
              f"  ours:  {mine}\n  kafka: {real}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="inputs per assignor and release (default 2000)")
    parser.add_argument("--releases", default=inputs.NEWEST, help="comma-separated Kafka releases")
    parser.add_argument("--assignors", default=",".join(inputs.NAMES),
                        help="comma-separated: " + ", ".join(inputs.NAMES))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    names = [a for a in args.assignors.split(",") if a]
    unknown = [a for a in names if a not in inputs.NAMES]
    if unknown:
        parser.error(f"unknown assignor {unknown[0]!r} (expected one of {', '.join(inputs.NAMES)})")
    run([v for v in args.releases.split(",") if v], names, args.n, args.seed)


if __name__ == "__main__":
    main()
