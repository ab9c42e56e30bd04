"""The strong random search: `kcheck.model.search.random_search`'s corpus restarts (`novelty`), `follow`,
`kind`, drawn program lengths, CPU budget and `minimize_run`, on toy models; and the replication model's
settings (invariants/replication_searches/random_runs.py) finding built-in rows with a fixed seed while today's
protocol stays clean with the same budget. The all-rows x 5 seeds figures are bench/bench_random_search.py's
(and the slow test)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kcheck.invariants.replication_rows import cfg_for
from kcheck.invariants.replication_searches.random_runs import kind, options, search, weights
from kcheck.invariants.replication_searches.runs import novelty_key
from kcheck.model.interface import StateInvariant
from kcheck.model.replication import VARIANTS, Protocol
from kcheck.model.replication.actions import Action
from kcheck.model.replication.state import FetchRequest
from kcheck.model.search import minimize_run, random_search


@dataclass
class Ladder:
    """A counter climbed one rung at a time, or knocked back to 0 by either of two slips; the invariant says it
    never reaches `top`. A random walk of 60 steps almost never climbs 25 rungs in a row (about 3^-25); a
    search restarting from the highest rung it reached climbs a few rungs per program."""

    top: int = 25
    name: str = "ladder"

    def initial_states(self) -> list[int]:
        return [0]

    def actions(self, s: int) -> list[str]:
        return ["slip", "trip", "climb"]  # Hypothesis's first program draws zeros: the first action, a slip

    def step(self, s: int, a: str) -> int | None:
        return s + 1 if a == "climb" else 0

    def invariants(self) -> list[StateInvariant[int]]:
        return [StateInvariant("ladder.top", "below the top",
                               lambda s: f"reached {s}" if s >= self.top else None)]

    def encode(self, s: int) -> bytes:
        return s.to_bytes(2, "little")

    def symmetries(self) -> list:
        return []

    def describe(self, a: str) -> str:
        return a


@dataclass
class Exchange:
    """A request is sent, answered, then applied; noise, enabled everywhere and drawn as often as the exchange's
    own step, breaks an exchange in progress (and the count). The invariant breaks after `rounds` exchanges in a
    row. Each step of an exchange enables the next one, so `follow` takes them back to back."""

    rounds: int = 6
    name: str = "exchange"

    def initial_states(self) -> list[tuple[int, str]]:
        return [(0, "idle")]

    def actions(self, s: tuple[int, str]) -> list[str]:
        return ["noise", "send", "answer", "apply"]

    def step(self, s: tuple[int, str], a: str) -> tuple[int, str] | None:
        done, phase = s
        if a == "noise":
            return s if phase == "idle" else (0, "idle")
        nxt = {("send", "idle"): "sent", ("answer", "sent"): "answered", ("apply", "answered"): "idle"}.get((a, phase))
        if nxt is None:
            return None
        return (done + 1 if a == "apply" else done), nxt

    def invariants(self) -> list[StateInvariant[tuple[int, str]]]:
        return [StateInvariant("exchange.rounds", "fewer than `rounds` exchanges",
                               lambda s: "done" if s[0] >= self.rounds else None)]

    def encode(self, s: tuple[int, str]) -> bytes:
        return bytes([s[0]]) + s[1].encode()

    def symmetries(self) -> list:
        return []

    def describe(self, a: str) -> str:
        return a


# ---- the engine on toy models --------------------------------------------------------------------------------

def test_novelty_restarts_climb_where_a_random_walk_does_not():
    blind = random_search(Ladder(), seed=0, programs=150, max_steps=40, swarm=False)
    assert blind.counterexample is None  # 25 climbs in a row: never in 150 programs
    guided = random_search(Ladder(), seed=0, programs=150, max_steps=40, novelty=lambda s: s, restart=0.9)
    assert guided.counterexample is not None and guided.stopped_because == "violation"
    assert [t for t, _ in guided.counterexample.steps[1:]] == ["climb"] * 25  # shrunk: no slip left
    assert guided.counterexample.steps[-1][1] == 25


def test_follow_completes_exchanges():
    plain = random_search(Exchange(), seed=0, programs=100, max_steps=30, swarm=False)
    assert plain.counterexample is None
    chained = random_search(Exchange(), seed=0, programs=100, max_steps=30, swarm=False, follow=0.9)
    assert chained.counterexample is not None
    assert [t for t, _ in chained.counterexample.steps[1:]] == ["send", "answer", "apply"] * 6


def test_kind_override_and_weights_switch_kinds_off():
    # every action is one kind "move" but for the slips: with the slips' kind at weight 0 the ladder is a straight
    # climb, found by the first program
    r = random_search(Ladder(), seed=3, programs=5, max_steps=30, kind=lambda a: "move" if a == "climb" else "slip",
                      weights={"slip": 0})
    assert r.counterexample is not None and r.programs == 1
    assert len(r.counterexample.steps) - 1 == 25


def test_program_lengths_are_drawn_and_cpu_budget_stops():
    r = random_search(Ladder(top=10_000), seed=0, programs=100, max_steps=40, min_steps=2, swarm=False)
    assert r.counterexample is None and r.stopped_because == "programs" and r.programs >= 100
    assert r.depth <= 40
    fixed = random_search(Ladder(top=10_000), seed=0, programs=50, max_steps=40, swarm=False,
                          weights={"slip": 0, "trip": 0})
    assert fixed.depth == 40  # without min_steps every program has max_steps steps
    timed = random_search(Ladder(top=10_000), seed=0, programs=10**9, max_steps=40, max_cpu_seconds=0.5)
    assert timed.stopped_because == "max-seconds" and timed.counterexample is None
    with pytest.raises(ValueError, match="min_steps"):
        random_search(Ladder(), min_steps=50, max_steps=40)
    with pytest.raises(ValueError, match="probabilities"):
        random_search(Ladder(), follow=1.5)


def test_minimize_run_keeps_a_run_of_the_model():
    m = Ladder(top=3)
    steps, why = minimize_run(m, 0, ["climb", "slip", "climb", "trip", "climb", "climb", "climb", "climb"])
    assert [t for t, _ in steps] == ["", "climb", "climb", "climb"] and why[0] == "ladder.top"
    assert [s for _, s in steps] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="does not reach a violation"):
        minimize_run(m, 0, ["climb", "slip"])


def test_a_seed_gives_the_same_run():
    kw = dict(seed=5, programs=300, max_steps=60, novelty=lambda s: s, restart=0.9, follow=0.3)
    a, b = random_search(Ladder(), **kw), random_search(Ladder(), **kw)
    assert a.programs == b.programs and a.transitions == b.transitions and a.states == b.states
    assert [t for t, _ in a.counterexample.steps] == [t for t, _ in b.counterexample.steps]


def test_on_step_sees_every_step_of_the_programs_and_none_of_the_shrinking():
    model, calls = Ladder(top=6), []

    def on_step(prev, action, state, enabled):
        calls.append((prev, action, state, [a for _, a, _ in enabled]))

    r = random_search(model, seed=0, programs=400, max_steps=40, novelty=lambda s: s, restart=0.9, on_step=on_step)
    assert r.counterexample is not None and len(r.counterexample.steps) - 1 == 6  # shrunk to the six climbs
    assert len(calls) == r.transitions > 6  # every step taken, none of minimize_run's re-executions
    for prev, action, state, enabled in calls:
        assert state == model.step(prev, action) and enabled == model.actions(prev)
    assert calls[-1][2] == 6  # the step into the violating state is seen too, before the search stops


def test_progress_reports_the_running_figures(monkeypatch):
    import kcheck.model.search as search_module

    monkeypatch.setattr(search_module, "PROGRESS_SECONDS", 0.0)
    seen = []
    r = random_search(Ladder(top=1000), seed=0, programs=20, max_steps=10, progress=seen.append)
    assert [p.programs for p in seen] == list(range(1, 21))  # after every program, here
    assert seen[-1].transitions == r.transitions and seen[-1].states == r.states and not seen[-1].complete


# ---- the replication model's settings ------------------------------------------------------------------------

def test_the_settings_know_no_row():
    # the same options whatever the protocol; duplicated deliveries and drops are network faults, budgets' kinds
    # are rarer than the traffic
    m = FetchRequest(2, 1, 0, 1, 1)
    assert kind(Action("handle_fetch", (m, True))) == "duplicate" and kind(Action("handle_fetch", (m, False))) == \
        "handle_fetch"
    w = weights()
    assert w["crash"] < w["produce"] and w["drop"] < w["crash"] and w["duplicate"] == w["drop"]
    assert options()["novelty"] is novelty_key
    from kcheck.invariants.replication_model_adapter import ReplicationModel

    s = ReplicationModel(Protocol.current(), cfg_for("no-epoch-in-fetch")).initial_states()[0]
    assert novelty_key(s) == novelty_key(s.__class__(**{**s.__dict__, "pool": frozenset({m})}))  # no messages


def test_explore_tally_is_every_condition_asked_in_every_state(monkeypatch):
    """explore asks a config-only condition once, a condition with a boolean twin through the twin, the default
    one never (`TallyPlan`); the tally must be what asking every selected invariant's `not_applicable` in every
    state gives, counted here by brute force on the same programs (the same seed and settings)."""
    from kcheck.invariants.registry import REGISTRY, Invariant, Severity
    from kcheck.invariants.replication import ReplicationSubject
    from kcheck.invariants.replication_model_adapter import ReplicationModel
    from kcheck.invariants.replication_searches.random_runs import MIN_STEPS, explore
    from kcheck.invariants.replication_searches.runs import replication_ids
    from kcheck.model.replication import Config
    from kcheck.model.replication.state import NO_LEADER

    # a user's invariant whose condition reads the state: asked in every state
    leaderless = Invariant("test.tally-leaderless", "never violated", Severity.SOFT, "test", "replication",
                           lambda subject: [],
                           lambda s: "no leader" if s.state.registry.leader == NO_LEADER else None)
    monkeypatch.setitem(REGISTRY, leaderless.id, leaderless)
    # one lossy crash voids durability at min.insync.replicas 1 (state-dependent); nothing reassigns and there is
    # no client view (config-only: off everywhere); the leader is always a replica (config-only: off everywhere)
    cfg = Config(brokers=3, min_isr=1, lossy_crashes=1, crashes=1, atomic_fetch=True)
    examples, steps = 60, 20
    r = explore(Protocol.current(), cfg, examples=examples, steps=steps, seed_value=3)
    assert r.trace is None

    states, off, reasons = 0, {}, {}
    ids = replication_ids(None)

    def ask(s):
        nonlocal states
        states += 1
        for i in ids:
            why = REGISTRY[i].not_applicable(ReplicationSubject(s, cfg))
            if why is not None:
                off[i] = off.get(i, 0) + 1
                reasons.setdefault(i, why)

    model = ReplicationModel(Protocol.current(), cfg, symmetry=False)
    for s in model.initial_states():
        ask(s)
    random_search(model, seed=3, programs=examples, shrink=False, on_step=lambda p, a, s, e: ask(s),
                  **{**options(), "min_steps": min(MIN_STEPS, steps), "max_steps": steps})
    assert (r.tally.states, r.tally.off, r.tally.reasons) == (states, off, reasons)
    # every kind of condition took part: some states off and some on for the state-dependent ones
    assert 0 < off["replication.no-acked-lost"] < states and 0 < off[leaderless.id] < states
    assert off["replication.reassignment-completed"] == off["client.list-offsets-monotonic"] == states
    assert "replication.log-matching" not in off


FOUND_FAST = ["zombie-controller", "hw-over-committed-isr", "truncate-to-hw", "truncate-to-hw-lossy",
              "unclean-election"]
BUDGET = 150  # programs per row: a fixed count, so the test does not depend on the machine's speed


@pytest.mark.parametrize("name", FOUND_FAST)
def test_rows_found_with_a_fixed_seed(name):
    v = VARIANTS[name]
    r = search(v.protocol, cfg_for(name), seed=0, programs=BUDGET)
    assert r.counterexample is not None, name
    assert r.counterexample.invariant.startswith("replication.")  # any hard invariant (row 8: an elected replica
    # lacking a committed record comes before the lost acknowledgement its row lists)
    assert len(r.counterexample.steps) - 1 <= v.minimal_steps  # shrunk, with atomic fetches


@pytest.mark.parametrize("name", ["truncate-to-hw", "zombie-controller"])
def test_todays_protocol_stays_clean_with_the_same_budget(name):
    r = search(Protocol.current(), cfg_for(name), seed=0, programs=BUDGET)
    assert r.counterexample is None and r.programs >= BUDGET


def test_the_row_search_is_deterministic():
    v = VARIANTS["truncate-to-hw"]
    a = search(v.protocol, cfg_for("truncate-to-hw"), seed=0, programs=BUDGET)
    b = search(v.protocol, cfg_for("truncate-to-hw"), seed=0, programs=BUDGET)
    assert a.counterexample is not None
    assert (a.programs, a.transitions) == (b.programs, b.transitions)
    assert [t for t, _ in a.counterexample.steps] == [t for t, _ in b.counterexample.steps]


# Row 15 (stale-control-request) is left out: random programs rarely reach its order (a lossy crash, a restart, the
# stale request delivered before the fresh one); explore's 2,000 programs missed it at seeds 0-2, the exact search
# finds it (tests/test_replication_model.py).
@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in VARIANTS if n != "stale-control-request"])
def test_every_row_found_by_most_seeds(name):
    """Issue 14's figure in a test: seeds 0-4, 60 CPU seconds each; at least 3 of 5 find the row (the median
    is then within the budget; bench/bench_random_search.py prints the times)."""
    v = VARIANTS[name]
    hits = sum(search(v.protocol, cfg_for(name), seed=s, max_cpu_seconds=60, shrink=False).counterexample
               is not None for s in range(5))
    assert hits >= 3, f"{name}: {hits} of 5 seeds"
