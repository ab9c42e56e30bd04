"""Why the state machines miss two rows: breadth-first levels and plain guided walks on one row's model.

Outside Hypothesis, on the model a row machine of `kcheck.machines.row_machines` runs (replication's row 15
`stale-control-request` and storage's `legacy-delete-horizon` are the rows it does not find reliably):

1. the breadth-first levels from the initial states (distinct states by fingerprint, no symmetry), to the depth of
   the first state that breaks one of the machine's invariants: how deep and how rare the row's violation is;
2. `--walks` guided walks of up to `--steps` steps, each choosing as a guided machine does (a kind by the machine's
   weights, with probability `follow` among the actions the previous state did not list, then an action), started
   from a state drawn uniformly among those of depth at most `--prefix-depth` (0: the initial state) or, with
   `--frontier`, of depth exactly that; with `--fresh`, each step chooses only among the actions leading to states no
   earlier walk took (when there are any: a random walk that avoids visited states, Pelánek et al., "Enhancing
   random walk state space exploration", FMICS 2005). Printed: the walk that first broke an invariant, how many did,
   the distinct states the walks took, CPU seconds.

    python bench/bench_row_walks.py --model storage --row legacy-delete-horizon [--max-depth 14]
                                    [--prefix-depth K] [--frontier] [--fresh] [--walks 2000] [--steps 50] [--seed 1]

A plain walk is independent of the last one; Hypothesis's examples are not (it mutates the examples it has, and a
guided example's run follows from its first draws), which is why these figures are better than a machine's
(docs/tasks/pytest.md). The machine is shared: CPU seconds (time.process_time) are what is measured.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any

from kcheck.machines import ModelMachine, row_machines
from kcheck.model.visited import keyer, successor_fn, violated


def levels(machine: type[ModelMachine], max_depth: int, keep: int) -> list[list[Any]]:
    """The breadth-first levels (states new at each depth), printed, up to `max_depth` or the first violation; the
    states of the first `keep` + 1 levels are returned."""
    model = machine.model
    assert model is not None
    invs, succ, key = machine.machine_invariants(model), successor_fn(model), keyer(model, ())
    level = list(model.initial_states())
    seen = {key(s)[0] for s in level}
    out, total, start = [level], len(level), time.process_time()
    for depth in range(1, max_depth + 1):
        nxt, bad = [], 0
        for s in level:
            for _i, _a, t in succ(s):
                k = key(t)[0]
                if k not in seen:
                    seen.add(k)
                    nxt.append(t)
                    bad += violated(invs, t) is not None
        level, total = nxt, total + len(nxt)
        if depth <= keep:
            out.append(nxt)
        print(f"  depth {depth}: {len(nxt)} new states ({total} in all), {bad} breaking an invariant, "
              f"{time.process_time() - start:.1f} CPU s", flush=True)
        if bad or not nxt:
            break
    return out


def walks(machine: type[ModelMachine], starts: list[Any], a: argparse.Namespace) -> None:
    model = machine.model
    assert model is not None
    invs, succ, key = machine.machine_invariants(model), successor_fn(model), keyer(model, ())
    weight = {k: max(0, round(100 * w)) for k, w in machine.weights.items()}
    rng, visited, hits, first, start = random.Random(a.seed), set(), 0, None, time.process_time()
    for n in range(1, a.walks + 1):
        s, before = rng.choice(starts), None
        for _ in range(a.steps + 1):
            if violated(invs, s) is not None:
                hits, first = hits + 1, first or n
                break
            options = succ(s)
            if a.fresh and (new := [o for o in options if key(o[2])[0] not in visited]):
                options = new
            groups: dict[str, list[Any]] = {}
            for _i, act, t in options:
                g = machine.guide_kind(model, act)
                if weight.get(g, 100):
                    groups.setdefault(g, []).append((act, t))
            if machine.follow and before is not None and rng.random() < machine.follow:
                groups = {g: f for g, o in groups.items() if (f := [x for x in o if x[0] not in before])} or groups
            before = {act for _i, act, _t in succ(s)}
            if not groups:
                break
            kinds = list(groups)
            kind = rng.choices(kinds, [weight.get(k, 100) for k in kinds])[0]
            s = rng.choice(groups[kind])[1]
            visited.add(key(s)[0])
    print(f"walks: first breaking an invariant {first or 'none'}, {hits} of {a.walks} did, {len(visited)} distinct "
          f"states taken, {time.process_time() - start:.1f} CPU s", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="replication", choices=("replication", "storage", "request"))
    p.add_argument("--row", default="stale-control-request")
    p.add_argument("--max-depth", type=int, default=14)
    p.add_argument("--prefix-depth", type=int, default=0)
    p.add_argument("--frontier", action="store_true")
    p.add_argument("--fresh", action="store_true")
    p.add_argument("--walks", type=int, default=2000)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    machines = row_machines(a.model)
    if a.row not in machines:
        print(f"bench_row_walks: --row: {a.row!r} is not a row of {a.model} ({', '.join(machines)})", file=sys.stderr)
        raise SystemExit(2)
    machine = machines[a.row]
    print(f"{a.model} {a.row}: breadth-first levels")
    got = levels(machine, a.max_depth, a.prefix_depth)
    if len(got) <= a.prefix_depth:
        print(f"bench_row_walks: --prefix-depth {a.prefix_depth} is past the levels searched", file=sys.stderr)
        raise SystemExit(2)
    starts = got[a.prefix_depth] if a.frontier else [s for lv in got[:a.prefix_depth + 1] for s in lv]
    print(f"{len(starts)} start states (prefix depth {a.prefix_depth}{', frontier' if a.frontier else ''}), "
          f"{'fresh' if a.fresh else 'plain'} walks, seed {a.seed}")
    walks(machine, starts, a)


if __name__ == "__main__":
    main()
