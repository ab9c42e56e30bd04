"""What the step-by-step differential benches share (DelayedProduce, the client metadata cache): random scripts, the
same ones for every release, each step's answer compared with our reference's.

`main(doc, title, unit, module, word, what, server)` parses the command line (-n, --batch, --seed, releases), runs
the fan-out and prints, per release: steps compared (in how many scripts), differences (the smallest script in
full), Kafka's rate per JVM CPU second; and our reference's rate per CPU second. `module` is the differential's
module: `random_case(rng)`, `encode_case`, `parse_answers`, `reference_answers` (one answer per compared step).
With `per_release`, scripts are drawn for each release and both sides get its profile (`random_case(rng, profile)`,
`reference_answers(case, profile)`): the producer state, whose next admissible step depends on the release's verdicts.
"""

from __future__ import annotations

import argparse
import random
import time
from types import ModuleType
from typing import Any

from kafka_fanout import Clock, Fanout, Tally, rate
from kcheck.reference.releases import profile


def _compare(tally: Tally, module: ModuleType, case: object, mine: list[str], line: str) -> int:
    real = module.parse_answers(line)
    differing = sum(a != b for a, b in zip(mine, real, strict=False)) + abs(len(mine) - len(real))
    tally.inputs += 1
    if differing:
        tally.difference(len(mine), module.encode_case(case), mine, real)
        tally.differences += differing - 1  # Tally counts one per call: count steps
    return len(mine)


def _draw(module: ModuleType, rng: random.Random, n: int, releases: list[str], profiles: dict[str, Any] | None
          ) -> dict[str, list[Any]]:
    """The scripts of one round per release: the same ones for every release unless drawn per release profile."""
    if profiles is None:
        cases = [module.random_case(rng) for _ in range(n)]
        return dict.fromkeys(releases, cases)
    return {v: [module.random_case(rng, profiles[v]) for _ in range(n)] for v in releases}


def _answers(module: ModuleType, cases: dict[str, list[Any]], profiles: dict[str, Any] | None
             ) -> dict[str, list[list[str]]]:
    """Our reference's answers: once for scripts every release shares, per release where each has its own."""
    if profiles is None:
        shared = [module.reference_answers(c) for c in next(iter(cases.values()))]
        return dict.fromkeys(cases, shared)
    return {v: [module.reference_answers(c, profiles[v]) for c in cs] for v, cs in cases.items()}


def main(doc: str, title: str, unit: str, module: ModuleType, word: str, what: str, server: bool = False,
         batch: int = 1000, per_release: bool = False, releases: tuple[str, ...] = ("4.4.0", "4.1.2", "4.0.2", "3.9.1")
         ) -> None:
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("-n", type=int, default=1_000_000, help=f"{unit} per release")
    ap.add_argument("--batch", type=int, default=batch, help="scripts per round trip")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("releases", nargs="*", default=list(releases))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    clock = Clock()
    tallies = {v: Tally() for v in args.releases}
    steps = dict.fromkeys(args.releases, 0)
    t0 = time.perf_counter()
    profiles = {v: profile(v) for v in args.releases} if per_release else None
    with Fanout(args.releases, server=server) as fan:
        fan.require(word, what)
        warm = {v: [("warm", [module.encode_case(c) for c in cs])]
                for v, cs in _draw(module, rng, batch, args.releases, profiles).items()}
        for f in fan.submit(warm, timed=False).values():
            f.result()
        while min(steps.values()) < args.n:
            running = [v for v in args.releases if steps[v] < args.n]
            with clock("draw"):
                cases = _draw(module, rng, args.batch, running, profiles)
                lines = {v: [module.encode_case(c) for c in cs] for v, cs in cases.items()}
            futures = fan.submit({v: [("run", ls)] for v, ls in lines.items()})
            with clock("reference"):
                ours = _answers(module, cases, profiles)
            for v, fut in futures.items():
                for c, mine, line in zip(cases[v], ours[v], fut.result()["run"], strict=True):
                    steps[v] += _compare(tallies[v], module, c, mine, line)
        cpu = {v: fan.cpu.get((v, "run"), 0.0) for v in args.releases}
    seconds = time.perf_counter() - t0
    drawn = sum(steps.values()) if per_release else max(steps.values())  # what our reference answered
    print(f"{title}: seed {args.seed}, {seconds:.0f} s for all releases")
    print(f"our reference: {rate(drawn, clock.seconds.get('reference', 0.0))} {unit}/CPU-s "
          f"(drawing: {rate(drawn, clock.seconds.get('draw', 0.0))} {unit}/CPU-s)")
    for v in args.releases:
        t = tallies[v]
        print(f"  {v}: {unit} compared {steps[v]:,} (in {t.inputs:,} scripts), differences {t.differences}, "
              f"Kafka {rate(steps[v], cpu[v])} {unit}/JVM-CPU-s")
        if t.smallest is not None:
            _, s, mine, real = t.smallest
            print(f"    smallest: {s}\n    ours:  {mine}\n    Kafka: {real}")
