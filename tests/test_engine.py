"""The model-checking engine (`kcheck.model.search`) over the one model interface: fingerprinted BFS, symmetry,
caps, traces by re-execution, Hypothesis search; and the replication model behind the interface, checked
against today's engine (`yardstick.exhaust`): the same distinct states, the same verdicts."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

import pytest

from kcheck.check import SMALL_EXHAUSTIVE_BOUNDS
from kcheck.invariants.replication import check_replication
from kcheck.invariants.replication_model_adapter import (
    ReplicationModel,
    decode_state,
    encode_state,
    rename_action,
    rename_state,
)
from kcheck.invariants.replication_searches.runs import Trace, replay
from kcheck.invariants.replication_searches.yardstick import exhaust as today_exhaust
from kcheck.model.interface import Model, StateInvariant
from kcheck.model.replication import VARIANTS, Config, Protocol
from kcheck.model.replication.actions import Action, apply
from kcheck.model.search import FingerprintSet, exhaust, random_search

# ---- toy models --------------------------------------------------------------------------------


@dataclass
class Jugs:
    """The 3- and 5-litre jugs; the invariant "b never holds `bad` litres" (4 is reachable in 6 steps)."""

    bad: int = 4
    name: str = "jugs"

    def initial_states(self) -> list[tuple[int, int]]:
        return [(0, 0)]

    def actions(self, s: tuple[int, int]) -> list[str]:
        return ["fill a", "fill b", "empty a", "empty b", "pour a b", "pour b a"]

    def step(self, s: tuple[int, int], a: str) -> tuple[int, int] | None:
        x, y = s
        out = {"fill a": (3, y), "fill b": (x, 5), "empty a": (0, y), "empty b": (x, 0),
               "pour a b": (x - min(x, 5 - y), y + min(x, 5 - y)),
               "pour b a": (x + min(y, 3 - x), y - min(y, 3 - x))}[a]
        return None if out == s else out

    def invariants(self) -> list[StateInvariant[tuple[int, int]]]:
        return [StateInvariant("jugs.b", "b never holds the bad amount",
                               lambda s: f"b holds {s[1]}" if s[1] == self.bad else None)]

    def encode(self, s: tuple[int, int]) -> bytes:
        return bytes(s)

    def decode(self, data: bytes) -> tuple[int, int]:
        return (data[0], data[1])

    def symmetries(self) -> tuple[()]:
        return ()

    def describe(self, a: str) -> str:
        return a


@dataclass
class Counters:
    """Two counters 0..top, each bumped or reset; swapping them is a symmetry. No decode: the frontier holds
    objects. Invariant: the sum never reaches `bad`."""

    top: int = 3
    bad: int = 99
    swap: bool = True
    name: str = "counters"

    def initial_states(self) -> list[tuple[int, int]]:
        return [(0, 0)]

    def actions(self, s: tuple[int, int]) -> list[tuple[str, int]]:
        return [("inc", 0), ("inc", 1), ("reset", 0), ("reset", 1)]

    def step(self, s: tuple[int, int], a: tuple[str, int]) -> tuple[int, int] | None:
        kind, i = a
        v = list(s)
        if kind == "inc":
            if v[i] == self.top:
                return None
            v[i] += 1
        else:
            v[i] = 0
        return (v[0], v[1])

    def invariants(self) -> list[StateInvariant[tuple[int, int]]]:
        return [StateInvariant("counters.sum", "sum below bad",
                               lambda s: "sum reached" if s[0] + s[1] >= self.bad else None)]

    def encode(self, s: tuple[int, int]) -> bytes:
        return bytes(s)

    def symmetries(self) -> list:
        return [lambda s: (s[1], s[0])] if self.swap else []

    def describe(self, a: tuple[str, int]) -> str:
        return f"{a[0]} {a[1]}"


@dataclass
class Grid:
    """A walk on an n x n grid: n*n states, for memory per state."""

    n: int = 100
    name: str = "grid"

    def initial_states(self) -> list[tuple[int, int]]:
        return [(0, 0)]

    def actions(self, s: tuple[int, int]) -> list[int]:
        return [0, 1]

    def step(self, s: tuple[int, int], a: int) -> tuple[int, int] | None:
        x, y = (s[0] + 1, s[1]) if a == 0 else (s[0], s[1] + 1)
        return (x, y) if x < self.n and y < self.n else None

    def invariants(self) -> list[StateInvariant[tuple[int, int]]]:
        return []

    def encode(self, s: tuple[int, int]) -> bytes:
        return s[0].to_bytes(4, "little") + s[1].to_bytes(4, "little")

    def decode(self, data: bytes) -> tuple[int, int]:
        return int.from_bytes(data[:4], "little"), int.from_bytes(data[4:], "little")

    def symmetries(self) -> tuple[()]:
        return ()

    def describe(self, a: int) -> str:
        return "right" if a == 0 else "up"


def reachable(model: Model, depth: int | None = None) -> dict:
    """Plain BFS over whole states (no fingerprints), for expected counts: state -> depth."""
    init = list(model.initial_states())
    seen = {s: 0 for s in init}
    queue = deque(init)
    while queue:
        s = queue.popleft()
        if depth is not None and seen[s] >= depth:
            continue
        for a in model.actions(s):
            t = model.step(s, a)
            if t is not None and t not in seen:
                seen[t] = seen[s] + 1
                queue.append(t)
    return seen


# ---- the engine on toys ------------------------------------------------------------------------


def test_exhaust_finds_a_shortest_counterexample_and_rebuilds_it_by_re_execution():
    r = exhaust(Jugs())
    assert not r.complete and r.stopped_because == "violation"
    cx = r.counterexample
    assert cx is not None and cx.invariant == "jugs.b" and cx.message == "b holds 4"
    assert len(cx.steps) - 1 == 6  # the known shortest solution
    assert cx.steps[0] == ("", (0, 0)) and cx.steps[-1][1][1] == 4
    m, s = Jugs(), (0, 0)
    for text, state in cx.steps[1:]:  # every step is a step of the model
        s = m.step(s, text)
        assert s == state


def test_exhaust_is_complete_on_a_clean_model_and_counts_every_reachable_state():
    r = exhaust(Jugs(bad=6))
    assert r.complete and r.stopped_because is None and r.counterexample is None
    assert r.states == len(reachable(Jugs(bad=6)))
    assert r.depth == max(reachable(Jugs(bad=6)).values())


def test_caps_stop_the_search_and_say_what_it_covered():
    r = exhaust(Jugs(bad=6), max_states=5)
    assert (r.complete, r.stopped_because, r.states) == (False, "max-states", 5)
    within = reachable(Jugs(bad=6), depth=2)
    r = exhaust(Jugs(bad=6), max_depth=2)
    assert (r.complete, r.stopped_because, r.states) == (False, "max-depth", len(within))
    full = exhaust(Jugs(bad=6))
    r = exhaust(Jugs(bad=6), max_depth=full.depth)  # the deepest level has nothing new: complete
    assert r.complete and r.states == full.states
    r = exhaust(Grid(300), max_seconds=0.0)
    assert (r.complete, r.stopped_because) == (False, "max-seconds")


def test_symmetry_keeps_one_state_per_orbit_and_still_finds_violations():
    plain = exhaust(Counters(), symmetry=False)
    reduced = exhaust(Counters())
    assert plain.complete and reduced.complete
    assert plain.states == 16 and reduced.states == 10  # ordered vs unordered pairs of 0..3
    r = exhaust(Counters(bad=5))
    assert r.counterexample is not None and sum(r.counterexample.steps[-1][1]) == 5
    assert len(r.counterexample.steps) - 1 == 5  # as short as without symmetry
    assert len(exhaust(Counters(bad=5), symmetry=False).counterexample.steps) - 1 == 5


def test_a_stored_state_costs_well_under_200_bytes():
    r = exhaust(Grid(224))
    assert r.complete and r.states == 224 * 224
    assert r.bytes_per_state is not None and r.bytes_per_state < 40


def test_fingerprint_set_is_a_set():
    rng = random.Random(7)
    values = [rng.getrandbits(64) or 1 for _ in range(30_000)]
    values += values[:5_000]  # duplicates
    fs, ref = FingerprintSet(16), set()
    for v in values:
        assert fs.add(v) == (v not in ref)
        ref.add(v)
    assert len(fs) == len(ref)
    assert all(v in fs for v in ref)
    assert sum((rng.getrandbits(64) or 1) in fs for _ in range(1_000)) == 0


def test_random_search_finds_a_violation_shrinks_it_and_respects_weights():
    r = random_search(Counters(bad=4), seed=1, programs=100, max_steps=20)
    assert r.stopped_because == "violation" and not r.complete
    assert r.counterexample is not None and len(r.counterexample.steps) - 1 == 4  # shrunk to the minimum
    assert sum(r.counterexample.steps[-1][1]) == 4
    again = random_search(Counters(bad=4), seed=1, programs=100, max_steps=20)
    assert [t for t, _ in again.counterexample.steps] == [t for t, _ in r.counterexample.steps]
    off = random_search(Counters(bad=4), seed=1, programs=50, max_steps=20, weights={"inc": 0})
    assert off.counterexample is None and off.states == 1  # no inc: the counters never leave (0, 0)
    clean = random_search(Counters(), seed=2, programs=30, max_steps=20)
    assert clean.counterexample is None and clean.stopped_because == "programs" and clean.programs >= 30


# ---- the replication model behind the interface ------------------------------------------------

# Two spare brokers (no replica): on the metadata log they are bystanders (`Config.bystanders`), applying each batch
# as it is published; the renaming below is also checked in ZooKeeper mode (SPARE_ZK).
SPARE = dict(brokers=3, replication_factor=1, min_isr=1, records=1, max_leader_epoch=2, crashes=1, lossy_crashes=0,
             fences=1, elections=0, isr_shrinks=0, failovers=0, reads=0, duplicates=False)
SPARE_ZK = {**SPARE, "metadata": "zookeeper"}


@pytest.mark.parametrize("bounds", [SMALL_EXHAUSTIVE_BOUNDS, SPARE], ids=["small", "spare-brokers"])
def test_replication_exhaust_visits_exactly_todays_states(bounds):
    cfg = Config(**bounds)
    today = today_exhaust(Protocol.current(), cfg)
    new = exhaust(ReplicationModel(Protocol.current(), cfg), symmetry=False)
    assert today.complete and new.complete
    assert new.states == today.states and new.transitions == today.transitions
    assert new.bytes_per_state < 200


def test_replication_symmetry_merges_only_spare_brokers_and_keeps_the_verdict():
    cfg = Config(**SPARE)
    m = ReplicationModel(Protocol.current(), cfg)
    assert m.symmetry_off is None and len(m.symmetries()) == 1  # brokers 2 and 3 hold no replica
    plain, reduced = exhaust(m, symmetry=False), exhaust(m)
    assert plain.complete and reduced.complete and reduced.states < plain.states
    full = ReplicationModel(Protocol.current(), Config(**SMALL_EXHAUSTIVE_BOUNDS))
    assert full.symmetries() == [] and full.symmetry_off  # every broker holds a replica: none interchangeable
    moved = Config(**{**SPARE, "reassignments": 1})
    assert ReplicationModel(Protocol.current(), moved).symmetry_off.startswith("reassignment")


def _reachable_states(m: ReplicationModel, limit: int) -> list:
    return list(reachable(m, depth=9).keys())[:limit]


@pytest.mark.parametrize("name", ["current", "current-zookeeper", *VARIANTS])
def test_renaming_spare_brokers_commutes_with_every_step(name):
    """The proof obligation of the symmetry, checked: apply(p(s), p(a)) == p(apply(s, a)) and the same
    invariant verdicts, on the first reachable states of a small configuration with two spare brokers (on the
    metadata log, where the images in the log name brokers, and in ZooKeeper mode)."""
    protocol = Protocol.current() if name.startswith("current") else VARIANTS[name].protocol
    cfg = Config(**(SPARE_ZK if name == "current-zookeeper" else SPARE))
    m = ReplicationModel(protocol, cfg)
    p = (0, 1, 3, 2)
    states = _reachable_states(m, 300)
    for s in states:
        ps = rename_state(s, p)
        assert check_replication(s, cfg).ok == check_replication(ps, cfg).ok
        for a in m.actions(s):
            t, pt = apply(s, protocol, cfg, a), apply(ps, protocol, cfg, rename_action(a, p))
            assert (t is None) == (pt is None), a
            if t is not None:
                assert rename_state(t, p) == pt, a


def test_encoding_is_canonical_and_decodes():
    m = ReplicationModel(Protocol.current(), Config(**{**SMALL_EXHAUSTIVE_BOUNDS, "duplicates": True}))
    states = list(reachable(m, depth=12))
    encoded = [encode_state(s) for s in states]
    assert len(set(encoded)) == len(states)  # different states, different bytes
    for s, e in zip(states, encoded, strict=True):
        back = decode_state(e)
        assert back == s and encode_state(back) == e  # equal states, equal bytes
    # equal states built apart (a fresh decode shares no object with the original) encode alike
    assert all(encode_state(decode_state(bytes(e))) == e for e in encoded[:50])


FAST_ROWS = ["truncate-to-hw", "hw-over-committed-isr", "unclean-election", "last-replica-standing",
             "zombie-controller"]
SLOW_ROWS = ["truncate-to-hw-lossy", "one-shot-epoch-lookup"]


def _row(name: str) -> None:
    v = VARIANTS[name]
    cfg = Config(**v.settings)
    today = today_exhaust(v.protocol, cfg, max_states=150_000, only=set(v.violates))
    new = exhaust(ReplicationModel(v.protocol, cfg, only=set(v.violates)), max_states=150_000)
    assert today.trace is not None and new.counterexample is not None
    assert new.counterexample.invariant == today.trace.violations[0].invariant
    assert len(new.counterexample.steps) - 1 == len(today.trace.steps) <= v.minimal_steps
    assert new.states == today.states
    # the counterexample is a run of the model that today's replay accepts and ends in the violation
    m = ReplicationModel(v.protocol, cfg)
    steps: list[Action] = []
    s = m.initial_states()[0]
    for text, state in new.counterexample.steps[1:]:
        a = next(a for a in m.actions(s) if a.label() == text and m.step(s, a) == state)
        steps.append(a)
        s = state
    last = replay(Trace(name, cfg, tuple(steps)), v.protocol, set(v.violates))[-1]
    assert last.number == len(steps) and last.violations


@pytest.mark.parametrize("name", FAST_ROWS)
def test_new_exhaust_finds_what_todays_finds_for_each_row(name):
    _row(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW_ROWS)
def test_new_exhaust_finds_what_todays_finds_for_the_deeper_rows(name):
    _row(name)


def test_random_search_finds_a_row_through_the_interface():
    v = VARIANTS["one-shot-epoch-lookup"]
    m = ReplicationModel(v.protocol, Config(**v.settings), only=set(v.violates))
    r = random_search(m, seed=0, programs=300, max_steps=50)  # found after about 20 programs
    assert r.counterexample is not None and r.counterexample.invariant in v.violates
    assert len(r.counterexample.steps) - 1 <= 2 * v.minimal_steps


@pytest.mark.slow
def test_random_search_finds_five_rows_in_300_programs():
    """Swarm, going on with every kind when the program's kinds are stuck (seed 0, 300 programs each)."""
    found = []
    for name, v in VARIANTS.items():
        m = ReplicationModel(v.protocol, Config(**v.settings), only=set(v.violates))
        if random_search(m, seed=0, programs=300, max_steps=50).counterexample is not None:
            found.append(name)
    assert len(found) >= 5, found


# ---- several processes, spilling, stop, successors (C1) ----------------------------------------


def _figures(r) -> tuple:
    return r.complete, r.stopped_because, r.states, r.transitions, r.depth, r.frontier_peak


@pytest.mark.parametrize("model, kw", [
    (Jugs(bad=6), {}),
    (Counters(), {}),  # no decode: the states travel between the processes as pickles
    (Counters(), {"symmetry": False}),
    (Grid(60), {}),
    (ReplicationModel(Protocol.current(), Config(**SPARE)), {}),  # with broker symmetry
    (ReplicationModel(Protocol.current(), Config(**SPARE)), {"symmetry": False}),
], ids=["jugs", "counters", "counters-plain", "grid", "replication-spare", "replication-spare-plain"])
def test_workers_store_the_same_states_and_transitions_as_one_process(model, kw):
    one = exhaust(model, **kw)
    assert one.complete
    for workers in (2, 3):
        many = exhaust(model, workers=workers, **kw)
        assert many.workers == workers
        assert _figures(many) == _figures(one)
    if isinstance(model, Grid):  # large enough for the tables' initial size not to dominate
        assert many.bytes_per_state is not None and many.bytes_per_state < 40


def test_progress_reports_during_a_level_do_not_change_the_counts(monkeypatch):
    """A progress report writes the live transition count into the result; the count at the end is still the
    exact one (it was the live one plus the last levels again whenever a report fell inside a level: the CLI's
    --workers runs counted more transitions than one process, on a busy machine only)."""
    from kcheck.model import parallel

    monkeypatch.setattr(parallel, "PROGRESS_SECONDS", 0.0)  # every poll reports
    for model in (Counters(), Jugs(bad=99)):  # their last levels have transitions (the grid's last state has none)
        one = exhaust(model)
        reports: list[int] = []
        many = exhaust(model, workers=2, progress=lambda r, out=reports: out.append(r.transitions))
        assert reports and _figures(many) == _figures(one)


def test_workers_on_the_storage_model():
    from kcheck.invariants.storage_model import StorageModel
    from kcheck.model.storage import VARIANTS as STORAGE_VARIANTS
    from kcheck.model.storage.state import Config as StorageConfig

    m = StorageModel(StorageConfig(keys=2, records=2, max_segments=2, max_clock=1, follower=False))
    one, two = exhaust(m), exhaust(m, workers=2)
    assert one.complete and _figures(two) == _figures(one)
    bug = StorageModel.for_variant(STORAGE_VARIANTS["legacy-delete-horizon"])
    one, two = exhaust(bug), exhaust(bug, workers=2)
    assert one.counterexample is not None and two.counterexample is not None
    assert two.counterexample.invariant == one.counterexample.invariant
    assert len(two.counterexample.steps) == len(one.counterexample.steps)  # both shortest


def test_workers_find_a_shortest_counterexample_the_same_every_run():
    one = exhaust(Jugs())
    runs = [exhaust(Jugs(), workers=2) for _ in range(3)]
    for r in runs:
        assert r.stopped_because == "violation" and not r.complete and r.depth == one.depth
        assert len(r.counterexample.steps) == len(one.counterexample.steps) == 7
    assert len({tuple(t for t, _ in r.counterexample.steps) for r in runs}) == 1  # not timing-dependent
    m, s = Jugs(), (0, 0)
    for text, state in runs[0].counterexample.steps[1:]:  # a run of the model, rebuilt by re-execution
        s = m.step(s, text)
        assert s == state
    assert exhaust(Jugs(bad=0), workers=2).counterexample.steps == [("", (0, 0))]  # an initial state violates


def test_workers_find_a_replication_row_as_short_as_one_process():
    v = VARIANTS["truncate-to-hw"]
    m = ReplicationModel(v.protocol, Config(**v.settings), only=set(v.violates))
    one, two = exhaust(m, max_states=150_000), exhaust(m, workers=2, max_states=150_000)
    assert two.counterexample is not None and two.counterexample.invariant == one.counterexample.invariant
    assert len(two.counterexample.steps) == len(one.counterexample.steps)
    s = m.initial_states()[0]
    for text, state in two.counterexample.steps[1:]:
        assert any(m.describe(a) == text and t == state for _, a, t in m.successors(s))
        s = state


@pytest.mark.parametrize("workers", [1, 2])
def test_caps_and_stop_behave_alike_with_workers(workers):
    r = exhaust(Jugs(bad=6), max_states=5, workers=workers)
    assert (r.complete, r.stopped_because, r.states) == (False, "max-states", 5)
    r = exhaust(Jugs(bad=6), max_depth=2, workers=workers)
    assert (r.complete, r.stopped_because, r.states) == (False, "max-depth", len(reachable(Jugs(bad=6), depth=2)))
    full = exhaust(Jugs(bad=6), workers=workers)
    r = exhaust(Jugs(bad=6), max_depth=full.depth, workers=workers)
    assert r.complete and r.states == full.states
    r = exhaust(Jugs(), max_states=9, workers=workers)  # the violation lies past the cap
    assert r.stopped_because == "max-states" and r.counterexample is None
    r = exhaust(Grid(300), max_seconds=0.0, workers=workers)
    assert (r.complete, r.stopped_because) == (False, "max-seconds") and r.states < 300 * 300
    calls = []

    def stop() -> str | None:
        calls.append(1)
        return "max-memory" if len(calls) >= 2 else None

    r = exhaust(Grid(300), stop=stop, workers=workers)
    assert (r.complete, r.stopped_because) == (False, "max-memory") and r.states < 300 * 300
    assert exhaust(Grid(30), stop=lambda: None, workers=workers).complete


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.slow)])  # workers: ~8 s, slow
def test_the_frontier_spills_to_disk_and_the_counts_stay(workers, tmp_path):
    for model in (Grid(80), Counters(), ReplicationModel(Protocol.current(), Config(**SPARE))):
        plain = exhaust(model, workers=workers)
        spilled = exhaust(model, workers=workers, spill_dir=str(tmp_path), spill_threshold=8)
        assert spilled.spilled_bytes > 0 and plain.spilled_bytes == 0
        assert _figures(spilled) == _figures(plain)
    assert list(tmp_path.iterdir()) == []  # nothing left behind
    r = exhaust(Jugs(), workers=workers, spill_dir=str(tmp_path), spill_threshold=16)
    assert r.counterexample is not None and len(r.counterexample.steps) == 7
    with pytest.raises(ValueError, match="not a directory"):
        exhaust(Jugs(), spill_dir=str(tmp_path / "missing"))


@dataclass
class GridBySuccessors(Grid):
    """Only `successors` works (step raises): the engine must use the extension."""

    def step(self, s: tuple[int, int], a: int) -> tuple[int, int] | None:
        raise AssertionError("step called although the model has successors")

    def successors(self, s: tuple[int, int]) -> list[tuple[int, int, tuple[int, int]]]:
        out = []
        for a in (0, 1):
            x, y = (s[0] + 1, s[1]) if a == 0 else (s[0], s[1] + 1)
            if x < self.n and y < self.n:
                out.append((a, a, (x, y)))
        return out


@pytest.mark.parametrize("workers", [1, 2])
def test_the_engine_uses_the_models_successors(workers):
    r = exhaust(GridBySuccessors(40), workers=workers)
    assert _figures(r) == _figures(exhaust(Grid(40)))


@dataclass
class Boom(Grid):
    def step(self, s: tuple[int, int], a: int) -> tuple[int, int] | None:
        if s == (5, 5):
            raise KeyError("boom")
        return super().step(s, a)


def test_a_failing_worker_fails_the_search_and_leaves_no_process():
    import multiprocessing

    with pytest.raises(RuntimeError, match="KeyError: 'boom'"):
        exhaust(Boom(20), workers=2)
    assert multiprocessing.active_children() == []
    with pytest.raises(ValueError, match="workers"):
        exhaust(Jugs(), workers=0)
