"""Replication model benchmark: time to find each variant's bug, throughput with none, exhaustive rates.

    .venv/bin/python bench/bench_replication.py [--seeds 5] [--quick]

Prints, for every historical variant, the seconds Hypothesis needs to find and shrink a violation of
its row's property and the shrunk trace length (medians over seeds; atomic fetches, lengths counted in
split steps), next to the shortest trace the exact search finds and, for the rows beyond it, what the
abstract search finds; then, for Protocol.current(), programs and steps explored per second with no
violation; then exhaustive states per second and the state count at growing bounds, without and with
partition reassignment.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

from kcheck.check import DEEP_MAX_STATES, DEEP_SEARCH
from kcheck.invariants.replication_engine import run_exhaust
from kcheck.invariants.replication_explore import exhaust, explore, split_fetches
from kcheck.model.replication import VARIANTS, Config, Protocol


def variants(seeds: int, examples: int) -> None:
    print(f"{'variant':24} {'row':>3} {'found':>6} {'median s':>9} {'median steps':>13} {'shortest':>9} "
          f"{'states':>11} {'s':>6} {'row steps':>9}")
    for v in VARIANTS.values():
        cfg = Config(**v.settings)
        atomic = replace(cfg, atomic_fetch=True)
        times, lengths, found = [], [], 0
        for s in range(seeds):
            r = explore(v.protocol, atomic, examples=examples, steps=40, seed_value=s, only=set(v.violates))
            if r.trace is not None:
                found += 1
                times.append(r.seconds)
                lengths.append(len(split_fetches(r.trace, v.protocol).steps))
        if v.name in DEEP_SEARCH:  # beyond breadth-first search: the exact search in novelty order, atomic fetches
            ex = run_exhaust(v.protocol, atomic, max_states=DEEP_MAX_STATES, only=set(v.violates), order="novelty")
            shortest = f"{len(split_fetches(ex.trace, v.protocol).steps)}*" if ex.trace else "none*"
        else:
            ex = exhaust(v.protocol, cfg, max_states=400_000, only=set(v.violates))
            shortest = str(len(ex.trace.steps)) if ex.trace else ("none" if ex.complete else "?")
        med_t = f"{statistics.median(times):.1f}" if times else "-"
        med_l = f"{statistics.median(lengths):.0f}" if lengths else "-"
        print(f"{v.name:24} {v.row:>3} {found:>3}/{seeds:<2} {med_t:>9} {med_l:>13} {shortest:>9} "
              f"{ex.states:>11,} {ex.seconds:>6.0f} {v.minimal_steps:>9}", flush=True)
    print("* exact search in novelty order over atomic fetches (not a shortest trace); counted in split steps")


def current_throughput(examples: int, steps: int) -> None:
    cfg = Config()
    t = time.perf_counter()
    r = explore(Protocol.current(), cfg, examples=examples, steps=steps, seed_value=0)
    dt = time.perf_counter() - t
    verdict = "no violation" if r.trace is None else f"VIOLATION: {r.trace.violations[0].message}"
    print(f"\ncurrent protocol, {cfg.brokers} brokers: {r.examples} programs, {r.steps:,} steps in {dt:.1f} s = "
          f"{r.examples / dt:.1f} programs/s, {r.steps / dt:,.0f} steps/s ({verdict})")


def exhaustive(quick: bool) -> None:
    print("\nexhaustive search of Protocol.current() (2 brokers, min.insync.replicas=1)")
    print(f"{'bounds':58} {'states':>10} {'transitions':>12} {'depth':>6} {'s':>7} {'states/s':>9}")
    budgets = dict(crashes=0, lossy_crashes=0, fences=0, elections=0, isr_shrinks=0, failovers=0, reads=0)
    steps = [
        dict(records=1),
        dict(records=2),
        dict(records=2, crashes=1, fences=1),
        dict(records=2, crashes=1, lossy_crashes=1, fences=1, elections=1),
        dict(records=2, crashes=1, lossy_crashes=1, fences=1, elections=1, isr_shrinks=1, failovers=1, reads=1),
    ]
    if quick:
        steps = steps[:3]
    for extra in steps:
        cfg = Config(brokers=2, min_isr=1, max_leader_epoch=3, **{**budgets, **extra})
        r = exhaust(Protocol.current(), cfg, max_states=1_000_000)  # about 5 GB
        label = ", ".join(f"{k}={v}" for k, v in extra.items())
        status = "" if r.complete else " (incomplete)"
        verdict = "" if r.trace is None else "  VIOLATION"
        print(f"{label:58} {r.states:>10,} {r.transitions:>12,} {r.depth:>6} {r.seconds:>7.1f} "
              f"{r.states / r.seconds:>9,.0f}{status}{verdict}", flush=True)


def reassignment(quick: bool) -> None:
    """Exhaustive search with KRaft reassignment on: one replica on broker 1 moved (to 2, or to both) while
    one committed record must survive, with faults added one kind at a time."""
    print("\nexhaustive search of Protocol.current() with reassignments (2 brokers, RF 1, min.insync.replicas=1, "
          "1 record, no duplicates)")
    print(f"{'bounds':58} {'states':>10} {'transitions':>12} {'depth':>6} {'s':>7} {'states/s':>9}")
    base = dict(brokers=2, replication_factor=1, min_isr=1, records=1, max_leader_epoch=3, crashes=0,
                lossy_crashes=0, fences=0, elections=0, isr_shrinks=0, failovers=0, reads=0, duplicates=False)
    steps = [
        dict(reassignments=1),
        dict(reassignments=1, cancels=1),
        dict(reassignments=1, crashes=1),
        dict(reassignments=1, failovers=1, cancels=1),
        dict(reassignments=1, crashes=1, elections=1),
        dict(reassignments=1, crashes=1, failovers=1),
    ]
    if quick:
        steps = steps[:3]
    for extra in steps:
        cfg = Config(**{**base, **extra})
        r = exhaust(Protocol.current(), cfg, max_states=1_000_000)
        label = ", ".join(f"{k}={v}" for k, v in extra.items())
        status = "" if r.complete else " (incomplete)"
        verdict = "" if r.trace is None else "  VIOLATION"
        print(f"{label:58} {r.states:>10,} {r.transitions:>12,} {r.depth:>6} {r.seconds:>7.1f} "
              f"{r.states / r.seconds:>9,.0f}{status}{verdict}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--examples", type=int, default=1500, help="programs per variant and seed before giving up")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    variants(args.seeds, args.examples)
    current_throughput(200 if args.quick else 1000, 60)
    exhaustive(args.quick)
    reassignment(args.quick)


if __name__ == "__main__":
    main()
