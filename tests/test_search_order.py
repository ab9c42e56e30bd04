"""`exhaust`'s orders of expansion (model/search.py `order`, `kcheck exhaust --order`): bfs, dfs and novelty.

Every order stores every state by fingerprint, so a complete run counts the same states and transitions as BFS;
what differs is which stored state is expanded next, hence how soon a deep violation is reached. The slow test
is the issue-14 target "exact search finds row 4": the novelty order over the concrete states of row 4's own
setting (atomic fetches) reaches a violation of the row's property, and the trace, split into three steps per
fetch, breaks it in the split model too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import pytest

from cli_support import one_error_line, run
from kcheck.invariants.replication_model_adapter import ReplicationModel
from kcheck.invariants.replication_searches.exhaustive import run_exhaust
from kcheck.invariants.replication_searches.runs import novelty_key, split_run
from kcheck.model.interface import StateInvariant
from kcheck.model.replication import Config, Protocol
from kcheck.model.replication.protocol import VARIANTS
from kcheck.model.search import ORDERS, exhaust
from kcheck.runtime.exit_codes import Exit


@dataclass
class Grid:
    """Two counters, each raised by one up to n: the violation (both at n, when `bad`) is 2n steps deep."""

    n: int
    bad: bool = True
    name: str = "grid"

    def initial_states(self):
        return [(0, 0)]

    def actions(self, s):
        return ["a", "b"]

    def step(self, s, action):
        a, b = s
        if action == "a":
            return (a + 1, b) if a < self.n else None
        return (a, b + 1) if b < self.n else None

    def invariants(self):
        return [StateInvariant("grid.corner", "not both counters full",
                               lambda s: "both full" if self.bad and s == (self.n, self.n) else None)]

    def encode(self, s):
        return bytes(s)

    def decode(self, data):
        return tuple(data)

    def symmetries(self):
        return []

    def describe(self, action):
        return action

    def novelty(self, s):
        return s[0] // 4  # only how far the first counter got


# Three brokers, one of them outside the replica set (so symmetry merges states), a crash and a fence:
# 526 states, 300 up to renaming; complete in a fraction of a second.
SPARE = Config(brokers=3, replication_factor=1, min_isr=1, records=1, max_leader_epoch=2, crashes=1, lossy_crashes=0,
               fences=1, elections=0, isr_shrinks=0, failovers=0, reads=0, duplicates=False, metadata="zookeeper")


@pytest.mark.parametrize("symmetry", [True, False])
def test_a_complete_run_stores_the_same_states_in_every_order(symmetry):
    model = ReplicationModel(Protocol.current(), SPARE)
    runs = {order: exhaust(model, order=order, novelty=novelty_key, symmetry=symmetry) for order in ORDERS}
    bfs = runs["bfs"]
    assert bfs.complete and bfs.states > 100
    for order, r in runs.items():
        assert r.complete and r.counterexample is None and r.order == order
        assert (r.states, r.transitions) == (bfs.states, bfs.transitions), order
    grid = {order: exhaust(Grid(6, bad=False), order=order) for order in ORDERS}
    assert {(r.states, r.transitions, r.complete) for r in grid.values()} == {(49, 84, True)}
    assert grid["bfs"].depth == 12 and grid["dfs"].depth == 12  # every path to (6, 6) has 12 steps


def test_dfs_goes_deep_first_and_novelty_ranks_by_the_key():
    bfs = exhaust(Grid(20), order="bfs")
    dfs = exhaust(Grid(20), order="dfs")
    nov = exhaust(Grid(20), order="novelty")
    for r in (bfs, dfs, nov):
        assert r.stopped_because == "violation" and r.counterexample.invariant == "grid.corner"
        assert r.counterexample.steps[-1][1] == (20, 20) and len(r.counterexample.steps) == 41
    assert bfs.states == 21 * 21  # the corner is the last state BFS stores
    # a along to 20 (each step also storing the b-successor), then b up the last column: 21 + 20 + 20.
    assert dfs.states == 61
    # Novelty: the first state of each key (a // 4) first, so a climbs to 20 before b moves; then b.
    assert nov.states < 21 * 21 // 2
    assert [a for a, _ in dfs.counterexample.steps[1:21]] == ["a"] * 20


def test_novelty_reaches_a_deep_row_in_far_fewer_states_than_bfs():
    # Row 3 (KIP-279) at its own setting: the breadth-first search stores about 22,000 states before the
    # violation; ranking states by the random search's novelty key reaches one in about 2,200.
    v = VARIANTS["one-shot-epoch-lookup"]
    model = ReplicationModel(v.protocol, Config(**v.settings), only=set(v.violates))
    nov = exhaust(model, order="novelty", novelty=novelty_key, max_states=5_000)
    bfs = exhaust(model, max_states=5_000)
    assert bfs.stopped_because == "max-states" and bfs.counterexample is None
    assert nov.stopped_because == "violation" and nov.counterexample.invariant in v.violates
    # The trace is a run of the model: each step is an action enabled in the state before it, giving the next.
    steps = nov.counterexample.steps
    for (_, s), (text, t) in zip(steps, steps[1:], strict=False):
        assert any(model.describe(a) == text and model.step(s, a) == t for a in model.actions(s)), text
    assert any(inv.holds(steps[-1][1]) for inv in model.invariants())


@pytest.mark.parametrize("name", ["hw-over-committed-isr", "zombie-controller"])
@pytest.mark.parametrize("order", ["dfs", "novelty"])
def test_each_order_finds_a_rows_violation(name, order):
    v = VARIANTS[name]
    e = run_exhaust(v.protocol, Config(**v.settings), only=set(v.violates), max_states=20_000, order=order)
    assert e.trace is not None and {x.invariant for x in e.trace.violations} & set(v.violates)


def test_orders_refuse_what_they_cannot_do():
    grid = Grid(3)
    with pytest.raises(ValueError, match="order must be one of bfs, dfs, novelty"):
        exhaust(grid, order="random")
    with pytest.raises(ValueError, match="workers > 1 needs order bfs"):
        exhaust(grid, order="dfs", workers=2)
    with pytest.raises(ValueError, match="max_depth needs order bfs"):
        exhaust(grid, order="novelty", max_depth=3)
    with pytest.raises(ValueError, match="spill_dir needs order bfs"):
        exhaust(grid, order="dfs", spill_dir="/tmp")
    bare = Grid(3)
    bare.novelty = None  # type: ignore[assignment, method-assign]
    with pytest.raises(ValueError, match="order novelty needs a novelty key"):
        exhaust(bare, order="novelty")


# ---- kcheck exhaust --order ---------------------------------------------------------------------------------

ROW_6 = ["--protocol", "hw-over-committed-isr"]


def test_cli_order_novelty_says_the_trace_need_not_be_shortest(capsys):
    code, out, _ = run(capsys, "exhaust", *ROW_6, "--order", "novelty")
    text = " ".join(out.split())
    assert code == Exit.FAILED
    assert "--order novelty: a run of the model, not necessarily a shortest one" in text
    assert "Shortest counterexample" not in text and "one process, order novelty," in text
    code, out, _ = run(capsys, "exhaust", *ROW_6)  # the default is unchanged
    assert code == Exit.FAILED and "Shortest counterexample (5 steps)" in " ".join(out.split())
    code, out, _ = run(capsys, "exhaust", *ROW_6, "--order", "dfs", "--json")
    rep = json.loads(out)
    assert code == Exit.FAILED and rep["order"] == "dfs" and rep["violation_found"]


def test_cli_order_stopped_by_a_cap_does_not_claim_a_depth_covered(capsys):
    code, out, _ = run(capsys, "exhaust", "--protocol", "current", "--max-states", "200", "--order", "novelty")
    text = " ".join(out.split())
    assert code == Exit.INCOMPLETE
    assert "--order novelty visited states down to depth" in text and "without covering any depth in full" in text
    assert "every state up to depth" not in text


@pytest.mark.parametrize("args, fragments", [
    (["--order", "sideways"], ("--order", "expected one of bfs, dfs, novelty, not 'sideways'")),
    (["--order", "dfs", "--workers", "2"], ("--workers", "--order dfs runs in this one process")),
    (["--order", "novelty", "--master", "local[2]"], ("--master", "--order novelty runs in this one process")),
])
def test_cli_order_bad_input_is_one_line(capsys, args, fragments):
    code, out, err = run(capsys, "exhaust", *ROW_6, *args)
    assert code == Exit.BAD_INPUT and out == ""
    one_error_line(err, *fragments)


# ---- row 4 (slow) -------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_exact_search_finds_row_4_with_atomic_fetches():
    # 192,581 concrete states, 20 CPU seconds, 81 MB (bench/bench_row4_exact.py); BFS at the same bound stores
    # 330,000 states in 100 CPU seconds and is still at depth 7 of the 19-step counterexample.
    v = VARIANTS["no-epoch-in-fetch"]
    cfg = replace(Config(**v.settings), atomic_fetch=True)
    e = run_exhaust(v.protocol, cfg, only=set(v.violates), order="novelty", max_states=1_000_000)
    assert e.trace is not None and not e.abstract and e.states < 1_000_000
    assert {x.invariant for x in e.trace.violations} & set(v.violates)
    split = split_run(e.trace, v.protocol, set(v.violates))  # a run of the split model too
    assert split is not None and len(split.steps) > len(e.trace.steps)
    # Today's protocol at the same bound and order: no violation in as many states.
    now = run_exhaust(Protocol.current(), cfg, only=set(v.violates), order="novelty", max_states=e.states)
    assert now.trace is None and now.states == e.states


@pytest.mark.slow
def test_exact_search_finds_row_4_with_split_fetches():
    # Row 4's own setting, unchanged: 846,155 concrete states, about 130 CPU seconds, 143 MB; a 20-step trace.
    v = VARIANTS["no-epoch-in-fetch"]
    e = run_exhaust(v.protocol, Config(**v.settings), only=set(v.violates), order="novelty", max_states=3_000_000)
    assert e.trace is not None and not e.abstract
    assert {x.invariant for x in e.trace.violations} & set(v.violates)
