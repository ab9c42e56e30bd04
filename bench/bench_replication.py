"""Replication model benchmark: each variant's bug found by the exact and the random search, throughput with none,
exhaustive rates.

    .venv/bin/python bench/bench_replication.py [--seeds 5] [--examples N] [--sections variants,throughput,...]

For every historical variant, at its row's settings and checking its row's invariants (as `kcheck explore
--protocol VARIANT` does): the shortest trace the exact search finds (breadth first, split fetches; in novelty
order over atomic fetches for the rows beyond breadth-first search, `kcheck.check.DEEP_SEARCH`), its states and
CPU seconds; then `kcheck explore`'s random search (`random_runs.explore`, the one engine's
`random_search`) with explore's defaults, atomic fetches, one run per seed: the seeds that found a violation
within the programs, and over those the median programs run until found, CPU seconds (shrinking included) and
shrunk trace length (counted in split steps, a fetch being three). Then, for Protocol.current(), programs and
steps explored per second with no violation; then exhaustive states per second and the state count at growing
bounds, without and with partition reassignment (up to a million states, about 5 GB).
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

from kcheck.check import DEEP_MAX_STATES, DEEP_SEARCH
from kcheck.commands.replication import EXPLORE_EXAMPLES, EXPLORE_STEPS
from kcheck.invariants.replication_searches.exhaustive import run_exhaust
from kcheck.invariants.replication_searches.random_runs import explore
from kcheck.invariants.replication_searches.runs import split_fetches
from kcheck.invariants.replication_searches.yardstick import exhaust
from kcheck.model.replication import VARIANTS, Config, Protocol

SECTIONS = ("variants", "throughput", "exhaustive", "reassignment")


def variants(seeds: int, examples: int, names: list[str] | None = None) -> None:
    print(f"random search: up to {examples:,} programs of up to {EXPLORE_STEPS} steps a seed, atomic fetches")
    print(f"{'variant':24} {'row':>3} {'shortest':>9} {'states':>11} {'CPU s':>6} {'found':>6} {'programs':>9} "
          f"{'CPU s':>6} {'steps':>6} {'row steps':>9}")
    for v in VARIANTS.values():
        if names and v.name not in names:
            continue
        cfg = Config(**v.settings)
        atomic = replace(cfg, atomic_fetch=True)  # explore's default fetch model
        cpu, programs, lengths = [], [], []
        for s in range(seeds):
            t = time.process_time()
            r = explore(v.protocol, atomic, examples=examples, steps=EXPLORE_STEPS, seed_value=s,
                        only=set(v.violates))
            if r.trace is not None:
                cpu.append(time.process_time() - t)
                programs.append(r.examples)
                lengths.append(len(split_fetches(r.trace, v.protocol).steps))
        t = time.process_time()
        if v.name in DEEP_SEARCH:  # beyond breadth-first search: the exact search in novelty order, atomic fetches
            ex = run_exhaust(v.protocol, atomic, max_states=DEEP_MAX_STATES, only=set(v.violates), order="novelty")
            shortest = f"{len(split_fetches(ex.trace, v.protocol).steps)}*" if ex.trace else "none*"
        else:
            ex = exhaust(v.protocol, cfg, max_states=400_000, only=set(v.violates))
            shortest = str(len(ex.trace.steps)) if ex.trace else ("none" if ex.complete else "?")
        ex_cpu = time.process_time() - t

        def med(xs: list[float], fmt: str) -> str:
            return format(statistics.median(xs), fmt) if xs else "-"

        print(f"{v.name:24} {v.row:>3} {shortest:>9} {ex.states:>11,} {ex_cpu:>6.0f} {len(cpu):>3}/{seeds:<2} "
              f"{med(programs, ',.0f'):>9} {med(cpu, '.1f'):>6} {med(lengths, '.0f'):>6} {v.minimal_steps:>9}",
              flush=True)
    print("* exact search in novelty order over atomic fetches (not a shortest trace); counted in split steps")


def current_throughput(examples: int, steps: int) -> None:
    cfg = Config(atomic_fetch=True)  # explore's defaults
    t = time.process_time()
    r = explore(Protocol.current(), cfg, examples=examples, steps=steps, seed_value=0)
    dt = time.process_time() - t
    verdict = "no violation" if r.trace is None else f"VIOLATION: {r.trace.violations[0].message}"
    print(f"\ncurrent protocol, {cfg.brokers} brokers, atomic fetches: {r.examples} programs, {r.steps:,} steps, "
          f"{r.distinct_states:,} distinct states in {dt:.1f} CPU s = {r.examples / dt:.1f} programs/s, "
          f"{r.steps / dt:,.0f} steps/s ({verdict})")


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
    ap.add_argument("--examples", type=int, default=EXPLORE_EXAMPLES,
                    help="programs per variant and seed before giving up (default: explore's)")
    ap.add_argument("--sections", default=",".join(SECTIONS), help=f"which to run, of {', '.join(SECTIONS)}")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--variants", default="", help="the variants section's variants, comma-separated (default: all)")
    args = ap.parse_args()
    chosen = args.sections.split(",")
    unknown = [x for x in chosen if x not in SECTIONS]
    if unknown:
        ap.error(f"--sections: unknown {', '.join(unknown)} (expected some of {', '.join(SECTIONS)})")
    if "variants" in chosen:
        variants(args.seeds, args.examples, [n for n in args.variants.split(",") if n] or None)
    if "throughput" in chosen:
        current_throughput(200 if args.quick else EXPLORE_EXAMPLES, EXPLORE_STEPS)
    if "exhaustive" in chosen:
        exhaustive(args.quick)
    if "reassignment" in chosen:
        reassignment(args.quick)


if __name__ == "__main__":
    main()
