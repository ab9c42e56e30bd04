"""The KRaft controller's lifecycle calls at scale: Kafka's own controller classes vs the replication model.

Run: .venv/bin/python bench/bench_kafka_controller.py [N] [RELEASE ...] [--rows current,last-replica-standing]
N random broker lifecycles per release and protocol row (default 3,000), from a fixed seed, in chunks of 2,000
(`kafka_controller.random_lifecycle`: registrations, session expiries, restarts, controlled shutdowns, heartbeats,
AlterPartition requests, elections). Every AlterPartition, session expiry and shutdown heartbeat is also decided
by the model on the state Kafka held before it (`kafka_controller.compare_lifecycle`).

Prints, per release and row: calls compared per kind, differences on calls the model makes (and the smallest),
differences on AlterPartition requests the model never makes (by Kafka's answer vs the model's), Kafka's rate
(scripts and controller calls per second through the bridge: encode, JVM, parse) and the model's rate on the same
calls, measured in the same run. Asserts nothing. Default release 4.4.0, rows current, last-replica-standing and
unclean-election. The first run resolves the jars into ~/.cache/kcheck/kafka; the timings exclude that.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter

from kcheck.model.replication.protocol import VARIANTS, Protocol
from kcheck.reference.kafka_bridge import JavaException, shared_bridge
from kcheck.reference.kafka_controller import (
    Difference,
    compare_lifecycle,
    controller_settings,
    random_lifecycle,
    run_scripts,
)

CHUNK = 2_000


def protocol(row: str) -> Protocol:
    return Protocol.current() if row == "current" else VARIANTS[row].protocol


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=3_000)
    ap.add_argument("releases", nargs="*", default=["4.4.0"])
    ap.add_argument("--rows", default="current,last-replica-standing,unclean-election")
    args = ap.parse_args()
    for version in args.releases:
        bridge = shared_bridge(version)
        for row in args.rows.split(","):
            p = protocol(row)
            settings = controller_settings(p)
            if settings is None:
                print(f"{version} {row}: no Kafka controller setting has this row's rules; skipped")
                continue
            elr, election = settings
            rng = random.Random(20261124)
            kafka_s = ours_s = 0.0
            counts: Counter[str] = Counter()
            modelled: list[Difference] = []
            unmodelled: Counter[tuple[str, str]] = Counter()
            errors = calls = 0
            for start in range(0, args.n, CHUNK):
                lives = [random_lifecycle(rng, elr=elr, unclean=election.name == "UNCLEAN")
                         for _ in range(min(CHUNK, args.n - start))]
                t = time.perf_counter()
                answers = run_scripts(bridge, [life.script for life in lives])
                kafka_s += time.perf_counter() - t
                calls += sum(len(life.script.ops) for life in lives)
                t = time.perf_counter()
                for life, steps in zip(lives, answers, strict=True):
                    if isinstance(steps, JavaException):
                        errors += 1
                        continue
                    c, diffs = compare_lifecycle(life, steps, p)
                    counts.update(c)
                    for d in diffs:
                        if d.in_model:
                            modelled.append(d)
                        else:
                            unmodelled[(str(d.kafka[0]), str(d.ours[0]))] += 1  # type: ignore[index]
                ours_s += time.perf_counter() - t
            compared = sum(counts.values())
            print(f"{version} {row}: {args.n} lifecycles, {calls} controller calls, {errors} harness errors")
            print(f"  compared: {dict(sorted(counts.items()))}")
            print(f"  differences on calls the model makes: {len(modelled)}")
            if modelled:
                print("  smallest:", min(modelled, key=lambda d: len(d.lifecycle.script.ops)).describe())
            print(f"  AlterPartition requests the model never makes, kafka vs model: {dict(unmodelled.most_common())}")
            print(f"  kafka: {args.n / kafka_s:,.0f} lifecycles/s, {calls / kafka_s:,.0f} calls/s; "
                  f"model: {compared / ours_s:,.0f} compared calls/s (incl. building each state)")


if __name__ == "__main__":
    main()
