"""Runs and CPU seconds until kcheck.machines' state machines first fail on each built-in row (issue 39).

For each row (the replication model's historical rows of `kcheck variants`, and the storage and request models'
variants) and each seed: a machine running the row's rules in its settings, from the model's initial states,
under the `kcheck-rows` profile (`kcheck.machines.ROWS_PROFILE`) with only Hypothesis's generate and target phases
(no shrinking: the time to the first failure is what is measured), seeded with `hypothesis.seed`. Printed per row
and seed: found or not, the runs the machine began until the failure (more than Hypothesis's examples: it also
runs test cases that max_examples does not count), the CPU seconds, the invariant and the run's length; then per
row the seeds that found it and the medians (a seed that did not find it counts as longer than any that did).

    python bench/bench_machines.py [--seeds 3] [--models replication,storage,request] [--rows a,b]
                                   [--examples N] [--steps N] [--unguided] [--choices hypothesis] [--restarts]

--unguided runs the machines with one rule per action kind (Hypothesis choosing uniformly among the rules), as
they are without `guided`; --choices hypothesis draws every guided choice from Hypothesis instead of a seeded
random.Random; --restarts runs them with `restarts` (half the examples from a corpus of the states earlier ones
reached). The machine is shared: CPU seconds (time.process_time) are what is measured.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from hypothesis import Phase, seed
from hypothesis.stateful import run_state_machine_as_test

from kcheck.machines import ROWS_PROFILE, ModelMachine, ModelViolation, row_machines, rows_settings
from kcheck.model.search import _no_local_constants


def one(machine: type[ModelMachine], seed_value: int, overrides: dict[str, Any]) -> dict[str, Any]:
    runs = [0]

    class Counted(machine):  # type: ignore[valid-type,misc]
        def start(self, index: int) -> None:
            runs[0] += 1
            super().start(index)

    Counted.__name__ = machine.__name__
    settings = rows_settings(database=None, phases=[Phase.generate, Phase.target], print_blob=False,
                             **overrides)
    start = time.process_time()
    found = None
    with _no_local_constants():
        try:
            run_state_machine_as_test(seed(seed_value)(Counted), settings=settings)
        except ModelViolation as e:
            found = e
    out: dict[str, Any] = {"found": found is not None, "runs": runs[0],
                           "seconds": time.process_time() - start}
    if found is not None:
        out.update(invariant=found.invariant, length=len(found.steps))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--models", default="replication,storage,request")
    p.add_argument("--rows", default="", help="row names, comma-separated (default: every row of the models)")
    p.add_argument("--examples", type=int, default=None, help="max_examples (default: the profile's)")
    p.add_argument("--steps", type=int, default=None, help="stateful_step_count (default: the profile's)")
    p.add_argument("--unguided", action="store_true")
    p.add_argument("--choices", default="random", choices=("random", "hypothesis"))
    p.add_argument("--restarts", action="store_true")
    a = p.parse_args()
    overrides = {k: v for k, v in (("max_examples", a.examples), ("stateful_step_count", a.steps)) if v}
    wanted = set(filter(None, a.rows.split(",")))
    attrs = {"guided": not a.unguided, "choices": a.choices, "restarts": a.restarts}
    s = rows_settings(**overrides)
    print(f"profile {ROWS_PROFILE}: max_examples={s.max_examples}, stateful_step_count={s.stateful_step_count}, "
          f"{attrs}")
    for model in a.models.split(","):
        for name, machine in row_machines(model).items():
            if wanted and name not in wanted:
                continue
            cls = type(machine.__name__, (machine,), {**attrs, "__module__": __name__})
            results = []
            for s in range(a.seeds):
                r = one(cls, s, overrides)
                results.append(r)
                what = f"{r['invariant']} in {r['length']} steps" if r["found"] else "not found"
                print(f"  {model} {name} seed {s}: {what}, {r['runs']} runs, {r['seconds']:.1f} s",
                      flush=True)
            ok = [r for r in results if r["found"]]
            inf = float("inf")
            med_runs = statistics.median(r["runs"] if r["found"] else inf for r in results)
            med_s = statistics.median(r["seconds"] if r["found"] else inf for r in results)
            print(f"{model} {name}: found in {len(ok)}/{len(results)} seeds, median {med_runs} runs, "
                  f"{med_s:.1f} CPU s", flush=True)


if __name__ == "__main__":
    main()
