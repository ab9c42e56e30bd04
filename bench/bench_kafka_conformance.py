"""Partition changes per second: Kafka's PartitionChangeBuilder through the bridge vs our reference, one run.

Run: .venv/bin/python bench/bench_kafka_conformance.py [--changes N] [--model-runs R] [VERSION ...]
(prints figures; asserts nothing). Default: 200,000 random registrations and changes
(`kafka_controller.random_change`) per release, on 4.0.2, 4.1.2 and 4.4.0, and 300 random runs of the
replication model (60 steps each, 4.1.2 and later: the model has 4.1.2's last-known-leader rules) whose
controller steps go through Kafka's builder too. Rates exclude resolving and compiling; the JVM is started
before timing.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter

from kcheck.model.replication import Config, Protocol, initial_state
from kcheck.model.replication.actions import KINDS, enabled
from kcheck.reference.kafka_bridge import JavaException, KafkaBridge, parse_error
from kcheck.reference.kafka_controller import (
    Carried,
    PartitionChange,
    carry,
    encode_change,
    model_step_change,
    parse_change,
    random_change,
    reference_change,
    run_changes,
    same_as_model,
)

CHUNK = 20_000  # lines per round trip


def _ours(c: PartitionChange, version: str) -> object:
    try:
        return reference_change(c, version)
    except Exception as e:  # noqa: BLE001 - compared with Kafka's exception
        return type(e).__name__, str(e)


def _theirs(a: object) -> object:
    return (a.simple_name, a.message) if isinstance(a, JavaException) else a


def bench_random(kafka: KafkaBridge, version: str, n: int) -> None:
    rng = random.Random(42)
    t = time.perf_counter()
    changes = [random_change(rng) for _ in range(n)]
    gen = time.perf_counter() - t
    lines = [encode_change(c) for c in changes]
    t = time.perf_counter()
    raw: list[str] = []
    for i in range(0, n, CHUNK):
        raw += kafka.roundtrip(lines[i:i + CHUNK])
    jvm = time.perf_counter() - t
    t = time.perf_counter()
    answers = [parse_change(a) if a.startswith("OK") else parse_error(a) for a in raw]
    parse = time.perf_counter() - t
    t = time.perf_counter()
    ours = [_ours(c, version) for c in changes]
    mine = time.perf_counter() - t
    diffs = [(c, o, a) for c, o, a in zip(changes, ours, answers, strict=True) if o != _theirs(a)]
    errors = sum(isinstance(a, JavaException) for a in answers)
    built = sum(1 for a in answers if not isinstance(a, JavaException) and a.built)
    print(f"{version}  random changes: {n:,} compared ({built:,} built a record, {errors:,} threw), "
          f"{len(diffs):,} differences")
    print(f"{version}    Kafka {n / (jvm + parse):,.0f}/s (JVM round trips {n / jvm:,.0f}/s, parsing "
          f"{n / parse:,.0f}/s), our reference {n / mine:,.0f}/s; generating {n / gen:,.0f}/s")
    if diffs:
        c, o, a = min(diffs, key=lambda d: len(str(d[0])))
        print(f"{version}    smallest difference:\n      input {c}\n      ours  {o}\n      kafka {_theirs(a)}")


def bench_model(kafka: KafkaBridge, version: str, runs: int) -> None:
    p = Protocol.current(version)
    cfg = Config(brokers=3, min_isr=2, records=3, reassignments=3, cancels=1, fences=2, crashes=2, lossy_crashes=2,
                 elections=2, isr_shrinks=2, failovers=1, duplicates=False, atomic_fetch=True)
    rng = random.Random(7)
    kinds = [k for k, spec in KINDS.items() if spec.possible(cfg)]
    steps = []
    t = time.perf_counter()
    for _ in range(runs):
        s, carried = initial_state(cfg), Carried()
        for _ in range(60):
            rng.shuffle(kinds)
            options = next((o for o in (enabled(s, p, cfg, k) for k in kinds) if o), None)
            if not options:
                break
            a, nxt = rng.choice(options)
            step = model_step_change(s, a, nxt, p, cfg, carried)
            if step is not None:
                steps.append(step)
                carried = carry(reference_change(step.change, version))
            s = nxt
    walk = time.perf_counter() - t
    t = time.perf_counter()
    answers = run_changes(kafka, [s.change for s in steps])
    jvm = time.perf_counter() - t
    off = Counter(s.kind for s, a in zip(steps, answers, strict=True)
                  if isinstance(a, JavaException) or not same_as_model(a, s))
    print(f"{version}  model runs: {runs} runs, {walk:.1f} s; {len(steps):,} controller steps "
          f"({dict(Counter(s.kind for s in steps))}) through Kafka in {jvm:.2f} s; "
          f"{sum(off.values())} differ from the model {dict(off) or ''}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("versions", nargs="*", default=["4.0.2", "4.1.2", "4.4.0"])
    ap.add_argument("--changes", type=int, default=200_000)
    ap.add_argument("--model-runs", type=int, default=300)
    args = ap.parse_args(argv)
    for version in args.versions:
        with KafkaBridge(version) as kafka:
            kafka.require("PC", "PartitionChangeBuilder")
            kafka.roundtrip([encode_change(random_change(random.Random(0))) for _ in range(2000)])  # warm the JIT
            bench_random(kafka, version, args.changes)
            if tuple(int(x) for x in version.split(".")[:3]) >= (4, 1, 2) and args.model_runs:
                bench_model(kafka, version, args.model_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
