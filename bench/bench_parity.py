"""Parity with Vanlightly's KIP-966 TLA+ specification: the table of its 15 properties and kcheck's counterparts, then
each checked with `Protocol.current("4.4.0")`, exhaustively, at its shipped bounds and at the bounds kcheck completes.

    .venv/bin/python bench/bench_parity.py [--max-seconds 600] [--sections table,safety,liveness,fails]
        [--fix] [--skip INVARIANT[,INVARIANT...]] [--bounds LABEL[,LABEL...]]

safety: `run_exhaust` (breadth first, `--reduce`, every registered replication invariant) at the shipped bounds
mapped by invariants/replication_parity.py (split and atomic fetches) and at the shipped bounds less one fault;
states, transitions, depth (the diameter of a complete run), wall and CPU seconds. liveness: `check_liveness` on
`LivenessModel` (no message loss or duplicates, no reduction, no symmetry) with the 7 parity properties. fails: the
smallest configuration where the search finds each new property violated, by a broken rule. A run that hits
--max-seconds says so (incomplete: it proves nothing for the states it did not reach). `--fix` measures the fix for
the late-record finding instead (`partition_state_applies=skip_known_partition_epoch`, docs/findings.md); `--skip`
leaves invariants out of the safety runs (to measure the others where one is known broken); `--bounds` runs only the
rows whose label contains one of the given words (e.g. `--bounds "no lossy,no fence"`).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

from kcheck.invariants.replication_liveness import LivenessModel, parity_properties
from kcheck.invariants.replication_parity import BOUNDS, ROWS, SHIPPED, broken_rules, shipped_config
from kcheck.invariants.replication_searches.exhaustive import run_exhaust
from kcheck.invariants.replication_searches.runs import replication_ids
from kcheck.model.liveness import check_liveness
from kcheck.model.replication import Protocol
from kcheck.model.replication.protocol import skip_known_partition_epoch

SECTIONS = ("table", "safety", "liveness", "fails")
CURRENT = Protocol.current("4.4.0")
FIX = replace(CURRENT, name="skip-known-partition-epoch", partition_state_applies=skip_known_partition_epoch)

SAFETY_BOUNDS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("shipped, atomic fetch", {"atomic_fetch": True}),
    ("shipped, split fetch", {}),
    ("shipped, no lossy crash, atomic", {"lossy_crashes": 0, "atomic_fetch": True}),
    ("shipped, no fence, atomic", {"fences": 0, "atomic_fetch": True}),
    ("shipped, no lossy crash, split", {"lossy_crashes": 0}),
    ("shipped, no fence, split", {"fences": 0}),
)
LIVENESS_BOUNDS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("2 brokers, RF 2, atomic", {"brokers": 2, "replication_factor": 2, "initial_isr": 0, "atomic_fetch": True}),
    ("shipped, no lossy crash, atomic", {"lossy_crashes": 0, "atomic_fetch": True}),
    ("shipped, no fence, atomic", {"fences": 0, "atomic_fetch": True}),
    ("1 reassignment, 3 brokers, RF 2, atomic", {"replication_factor": 2, "initial_isr": 0, "lossy_crashes": 0,
                                                 "fences": 0, "records": 1, "reassignments": 1,
                                                 "atomic_fetch": True}),
)


def table() -> None:
    print(f"{'specification property':44} {'kind':8} {'kcheck':58} new")
    for row in ROWS:
        print(f"{row.spec:44} {row.kind:8} {', '.join(row.kcheck):58} {'yes' if row.new else ''}")
    print("\nbounds: " + ", ".join(f"{k}={v}" for k, v in SHIPPED.items()))
    for spec, mine, how in BOUNDS:
        print(f"  {spec or '-':24} -> {mine or '-':20} {how}")


def _chosen(rows: tuple[tuple[str, dict[str, Any]], ...], words: list[str]) -> list[tuple[str, dict[str, Any]]]:
    return [row for row in rows if not words or any(w in row[0] for w in words)]


def safety(max_seconds: float, protocol: Protocol, skip: set[str], words: list[str]) -> None:
    only = {i for i in replication_ids() if i not in skip} if skip else None
    print(f"\nsafety, {protocol.name}, every replication invariant{' but ' + ', '.join(sorted(skip)) if skip else ''}"
          f", --reduce, at most {max_seconds:.0f} s each")
    print(f"{'bounds':36} {'states':>11} {'transitions':>12} {'depth':>6} {'wall s':>7} {'CPU s':>7}  verdict")
    for label, over in _chosen(SAFETY_BOUNDS, words):
        cfg = shipped_config(**over)
        cpu = time.process_time()
        r = run_exhaust(protocol, cfg, reduce=True, max_seconds=max_seconds, only=only)
        cpu = time.process_time() - cpu
        if r.trace is not None:
            verdict = f"VIOLATED {r.trace.violations[0].invariant} ({len(r.trace.steps)} steps)"
        else:
            verdict = "all hold (complete)" if r.complete else f"none found, INCOMPLETE ({r.stop_reason})"
        print(f"{label:36} {r.states:>11,} {r.transitions:>12,} {r.depth:>6} {r.seconds:>7.0f} {cpu:>7.0f}  {verdict}",
              flush=True)


def liveness(max_seconds: float, protocol: Protocol, words: list[str]) -> None:
    print(f"\nliveness, {protocol.name}, the parity properties, at most {max_seconds:.0f} s each")
    print(f"{'bounds':40} {'states':>10} {'edges':>10} {'wall s':>7} {'CPU s':>7} {'at bound':>8}  verdict")
    for label, over in _chosen(LIVENESS_BOUNDS, words):
        cfg = shipped_config(**over)
        cpu = time.process_time()
        r = check_liveness(LivenessModel(protocol, cfg), parity_properties(cfg), max_seconds=max_seconds)
        cpu = time.process_time() - cpu
        bad = sorted(k for k, v in r.violations.items() if v is not None)
        verdict = ("VIOLATED " + ", ".join(bad)) if bad else (
            f"{len(r.violations)} hold (complete)" if r.complete else "none violated, INCOMPLETE")
        print(f"{label:40} {r.states:>10,} {r.transitions:>10,} {r.seconds:>7.0f} {cpu:>7.0f} {r.bound_states:>8}  "
              f"{verdict}", flush=True)


def fails(max_seconds: float) -> None:
    print("\neach new property, violated by a broken rule (the search's first counterexample)")
    for prop, protocol, cfg, kind in broken_rules():
        if kind == "safety":
            r = run_exhaust(protocol, cfg, only={prop}, max_seconds=max_seconds)
            steps = len(r.trace.steps) if r.trace else None
            found = r.trace is not None and any(v.invariant == prop for v in r.trace.violations)
            print(f"{prop:42} {protocol.name:24} {'found' if found else 'NOT FOUND':9} {steps} steps, {r.states:,} "
                  f"states", flush=True)
        else:
            props = [p for p in parity_properties(cfg) if p.id == prop]
            lr = check_liveness(LivenessModel(protocol, cfg), props, max_seconds=max_seconds)
            lasso = lr.violations.get(prop)
            where = f"{lasso.kind}, {len(lasso.prefix) - 1}+{len(lasso.cycle)} steps" if lasso else "NOT FOUND"
            print(f"{prop:42} {protocol.name:24} {where}, {lr.states:,} states", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-seconds", type=float, default=600.0)
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--fix", action="store_true", help="the late-record fix instead of Kafka's rule")
    ap.add_argument("--skip", default="", help="invariants the safety runs leave out, comma-separated")
    ap.add_argument("--bounds", default="", help="only the rows whose label contains one of these, comma-separated")
    args = ap.parse_args()
    chosen = args.sections.split(",")
    protocol = FIX if args.fix else CURRENT
    skip = {i for i in args.skip.split(",") if i}
    words = [w for w in args.bounds.split(",") if w]
    unknown = skip - set(replication_ids())
    if unknown:
        ap.error(f"--skip: no replication invariant {', '.join(sorted(unknown))}")
    runs = {"table": table, "safety": lambda: safety(args.max_seconds, protocol, skip, words),
            "liveness": lambda: liveness(args.max_seconds, protocol, words),
            "fails": lambda: fails(args.max_seconds)}
    for name in SECTIONS:  # in this order, whatever order they were asked in
        if name in chosen:
            runs[name]()


if __name__ == "__main__":
    main()
