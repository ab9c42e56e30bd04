"""Consumer-group space throughput: configurations per second of `GroupSpace.evaluate` on one core.

Run: python bench/bench_sweep_groups.py [--space default] [--samples 8] [--batch 6000] [--no-baseline]

Prints (asserts nothing):

* the whole `small` preset, evaluated in one batch;
* `--samples` contiguous batches of `--batch` ids spread evenly over the `--space` preset (so the mix of
  small and large groups is the preset's), all in this one process as one Spark Python worker runs its
  tasks, twice: the first pass meets groups the fast checks' memo has not seen (most of its misses cost a
  min-cost flow), the second finds them memoised, as a task well into its range (up to a million ids)
  mostly does; then per assignor; then with the flow-based soft checks run by the registry itself (no
  `groups_fast`) as the baseline, on a third of the batches;
* the projected wall time of the whole preset on 2 cores: ids / (2 x configs/s), Spark's own overhead
  (startup, scheduling, pickling results) not included.
"""

from __future__ import annotations

import argparse
import time

from kcheck.spark_check import groups
from kcheck.spark_check.batch import merge
from kcheck.spark_check.groups import GroupSpace, parse_group_bounds
from kcheck.spark_check.groups_fast import FastChecks


class _NoFastPath(FastChecks):
    def violated(self, invariant, s):  # type: ignore[no-untyped-def]
        return None  # every check runs as registered, min-cost flows included


def _batches(space: GroupSpace, samples: int, batch: int) -> list[tuple[int, int]]:
    step = len(space) // samples
    return [(i * step, min(len(space), i * step + batch)) for i in range(samples)]


def _rate(space: GroupSpace, ranges: list[tuple[int, int]]) -> tuple[float, float, int]:
    started = time.perf_counter()
    results = [space.evaluate(a, b) for a, b in ranges]
    seconds = time.perf_counter() - started
    ids = sum(b - a for a, b in ranges)
    violated = sum(merge(results).violated.values())
    return ids / seconds, seconds, violated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", default="default")
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--batch", type=int, default=6000)
    parser.add_argument("--no-baseline", action="store_true")
    args = parser.parse_args()

    small = GroupSpace(parse_group_bounds("small"))
    started = time.perf_counter()
    small.evaluate(0, len(small))
    seconds = time.perf_counter() - started
    print(f"small: {small.group_count:,} groups x {len(small.assignors)} assignors = {len(small):,} ids "
          f"in {seconds:.1f} s ({len(small) / seconds:,.0f} configs/s)")

    space = GroupSpace(parse_group_bounds(args.space))
    ranges = _batches(space, args.samples, args.batch)
    ids = sum(b - a for a, b in ranges)
    print(f"{args.space}: {space.group_count:,} groups x {len(space.assignors)} assignors = {len(space):,} ids; "
          f"sampling {len(ranges)} batches of {args.batch} ids ({ids:,} ids) spread over the space")
    flows = groups._FAST.flows
    rate, seconds, violated = _rate(space, ranges)
    misses = groups._FAST.flows - flows
    print(f"  every assignor, first pass: {rate:,.0f} configs/s on one core ({seconds:.1f} s, {violated:,} "
          f"violations, {misses:,} min-cost flows computed for {ids:,} configs)")
    flows = groups._FAST.flows
    warm, seconds, _ = _rate(space, ranges)
    print(f"  every assignor, memo warm:  {warm:,.0f} configs/s on one core ({seconds:.1f} s, "
          f"{groups._FAST.flows - flows:,} flows; memo {len(groups._FAST.memo):,} entries)")
    groups_ranges = [(a // len(space.assignors), b // len(space.assignors)) for a, b in ranges]
    for name in space.assignors:  # the same groups, one assignor at a time (memo warm)
        r, _, _ = _rate(GroupSpace(space.bounds, [name]), groups_ranges)
        print(f"    {name:>20}: {r:,.0f} configs/s")
    if not args.no_baseline:
        third = ranges[:: 3]
        fast = groups._FAST
        groups._FAST = _NoFastPath()
        try:
            base, _, _ = _rate(space, third)
        finally:
            groups._FAST = fast
        again, _, _ = _rate(space, third)
        print(f"  baseline (registry's checks with their flows, a third of the batches): {base:,.0f} configs/s; "
              f"with groups_fast (memo warm) on the same batches: {again:,.0f} configs/s ({again / base:.1f}x)")
    for label, r in (("first-pass", rate), ("memo-warm", warm)):
        seconds = len(space) / (2 * r)
        print(f"  projected wall time of the whole {args.space} preset on 2 cores at the {label} rate: "
              f"{seconds:,.0f} s ({seconds / 3600:.1f} h), Spark overhead not included")


if __name__ == "__main__":
    main()
