"""Liveness (`kcheck.model.liveness`): fair cycles and terminal states on the explicit graph, healing at the end of
random programs; the replication model's liveness properties (invariants/replication_liveness.py) and the
liveness row KAFKA-19975 (`LIVENESS_VARIANTS` in model/replication/protocol.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kcheck.invariants.replication_liveness import LivenessModel, fair, properties, reassignment_ends
from kcheck.invariants.replication_model_adapter import ReplicationModel
from kcheck.model.liveness import LivenessProperty, check_liveness, heal_and_check, random_liveness
from kcheck.model.replication import Config, Protocol
from kcheck.model.replication.actions import Action
from kcheck.model.replication.protocol import LIVENESS_VARIANTS

# ---- a hand-built model: expected verdicts by reasoning ------------------------------------------


@dataclass
class Toy:
    """States 0, 1, 2, 3. `spin` swaps 0 and 1; `go` leads from 0 (and from 1 when `go_from_1`) to 2; `break`
    leads from 2 to 3 when `breakable`; `noise` loops on 0. Goal: state 2. Fair: spin and go."""

    go_from_1: bool = True
    breakable: bool = False
    name: str = "toy"

    def initial_states(self) -> list[int]:
        return [0]

    def actions(self, s: int) -> list[str]:
        return ["spin", "go", "break", "noise"]

    def step(self, s: int, a: str) -> int | None:
        if a == "spin" and s in (0, 1):
            return 1 - s
        if a == "go" and (s == 0 or (s == 1 and self.go_from_1)):
            return 2
        if a == "break" and s == 2 and self.breakable:
            return 3
        if a == "noise" and s == 0:
            return 0
        return None

    def invariants(self) -> list:
        return []

    def encode(self, s: int) -> bytes:
        return bytes([s])

    def symmetries(self) -> list:
        return []

    def describe(self, a: str) -> str:
        return a


DONE = LivenessProperty("toy.done", "reaches 2", lambda s: s == 2)


def toy_fair(a: str) -> bool:
    return a in ("spin", "go")


def test_a_cycle_leaving_an_action_enabled_everywhere_is_unfair():
    # {0, 1} is a spin cycle, but `go` is enabled in both states and never taken inside it: weak fairness takes it
    r = check_liveness(Toy(), [DONE], fair=toy_fair)
    assert r.complete and r.states == 3 and r.violations == {"toy.done": None} and r.verdict("toy.done") == "holds"


def test_a_cycle_where_the_escape_is_only_sometimes_enabled_is_fair():
    # `go` is enabled in 0 but not in 1: spinning for ever is weakly fair, so the goal may never be met
    r = check_liveness(Toy(go_from_1=False), [DONE], fair=toy_fair)
    lasso = r.violations["toy.done"]
    assert lasso is not None and lasso.kind == "cycle"
    assert [text for text, _ in lasso.prefix] == [""] and [s for _, s in lasso.prefix] == [0]
    assert [text for text, _ in lasso.cycle] == ["spin", "spin"] and [s for _, s in lasso.cycle] == [1, 0]


def test_faults_are_finite_and_a_terminal_state_fails_unless_it_is_a_goal():
    # `noise` (not fair) loops on 0 for ever only if faults never stop: not a counterexample. `break` (a fault)
    # leads to 3, where no fair action is enabled and the goal does not hold: a terminal counterexample.
    r = check_liveness(Toy(breakable=True), [DONE], fair=toy_fair)
    lasso = r.violations["toy.done"]
    assert lasso is not None and lasso.kind == "terminal" and lasso.cycle == []
    assert [s for _, s in lasso.prefix] == [0, 2, 3] and [t for t, _ in lasso.prefix] == ["", "go", "break"]
    # with every action fair, the `noise` self-loop on 0 is still unfair: `spin` and `go` are enabled there too
    assert check_liveness(Toy(), [DONE], fair=lambda a: True).violations["toy.done"] is None


def test_a_stopped_search_says_it_proves_nothing():
    r = check_liveness(Toy(), [DONE], fair=toy_fair, max_states=2)
    assert not r.complete and r.stopped_because == "max-states" and r.violations["toy.done"] is None
    assert "proves nothing" in r.verdict("toy.done")


def test_healing_settles_into_the_fair_cycle_or_the_goal():
    healed = heal_and_check(Toy(), 0, [DONE], fair=toy_fair)
    assert healed.settled and healed.failed == {} and healed.steps[-1][1] == 2
    stuck = heal_and_check(Toy(go_from_1=False), 0, [DONE], fair=toy_fair)
    assert stuck.settled and set(stuck.failed) == {"toy.done"} and stuck.cycle_start == 0
    broken = heal_and_check(Toy(breakable=True), 3, [DONE], fair=toy_fair)  # nothing fair is enabled in 3
    assert broken.settled and set(broken.failed) == {"toy.done"} and len(broken.steps) == 1


# ---- the replication model ------------------------------------------------------------------------

QUIET = dict(crashes=0, lossy_crashes=0, fences=0, elections=0, isr_shrinks=0, failovers=0, reads=0,
             atomic_fetch=True, max_leader_epoch=8)
CLEAN = {
    "min-isr-2-crash": {"brokers": 2, "min_isr": 2, "records": 1, "crashes": 1},
    "rf-3-min-isr-2-crash": {"brokers": 3, "min_isr": 2, "records": 1, "crashes": 1},
    "crash-and-election": {"brokers": 2, "min_isr": 1, "records": 1, "crashes": 1, "elections": 1},
    "shrink": {"brokers": 2, "min_isr": 1, "records": 1, "isr_shrinks": 1},
    # no crash here: with a crash and restart as well the graph did not finish in 10 CPU minutes
    "reassign": {"brokers": 3, "replication_factor": 2, "min_isr": 1, "records": 1, "reassignments": 1},
}


def test_fairness_of_replication_actions():
    assert fair(Action("fetch_round", (2,))) and fair(Action("elect", ())) and fair(Action("restart", (1,)))
    assert not fair(Action("crash", (1, False))) and not fair(Action("reassign", ((1, 2),)))
    m = Action("handle_fetch", ("message", False))
    assert fair(m) and not fair(Action("handle_fetch", ("message", True)))  # a duplicate delivery is not progress


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "rf-3-min-isr-2-crash" else n
                                  for n in CLEAN])  # the three-broker graph takes ~25 s
def test_each_property_holds_under_todays_protocol(name):
    cfg = Config(**{**QUIET, **CLEAN[name]})
    targets = [(1, 2, 3), (1, 3)] if cfg.reassignments else None
    m = LivenessModel(Protocol.current("4.4.0"), cfg, reassign_targets=targets)
    props = properties(cfg)
    r = check_liveness(m, props)
    assert r.complete and r.bound_states == 0, r
    assert r.violations == {p.id: None for p in props}
    assert r.fair_sccs > 0  # the fetch loops were examined and found unfair or goal-reaching


def test_a_state_the_epoch_bound_stops_is_counted_not_reported():
    """max_leader_epoch=1: after the leader crashes, its restart must re-elect (epoch 2), which the bound refuses,
    so the run stops there. That is the bound's doing: the state counts as a goal state and is reported as a
    bound state; without `at_bound` the same graph gives a terminal counterexample."""
    cfg = Config(**{**QUIET, "brokers": 2, "min_isr": 1, "records": 0, "crashes": 1, "max_leader_epoch": 1})
    m = LivenessModel(Protocol.current("4.4.0"), cfg)
    r = check_liveness(m, properties(cfg))
    assert r.complete and r.bound_states == 1 and all(v is None for v in r.violations.values())

    class Unbounded(LivenessModel):
        at_bound = None

    lasso = check_liveness(Unbounded(Protocol.current("4.4.0"), cfg), properties(cfg)).violations[
        "liveness.leader-elected"]
    assert lasso is not None and lasso.kind == "terminal"
    assert [t for t, _ in lasso.prefix] == ["", "crash broker=1 page cache kept"]


def test_one_lost_message_is_a_lasso_because_the_model_has_no_retransmission():
    """The model's `drop` has no retry (Kafka's AlterPartitionManager resends; KRaft's metadata log loses
    nothing), so with drops on, one lost AlterPartitionResponse and LeaderAndIsr leave the leader's shrink pending
    for ever and the caught-up follower out of the ISR: why `LivenessModel` switches drops off."""
    cfg = Config(**{**QUIET, **CLEAN["shrink"]})
    r = check_liveness(LivenessModel(Protocol.current("4.4.0"), cfg, drops=True), properties(cfg))
    lasso = r.violations["liveness.isr-rejoin"]
    assert r.complete and lasso is not None and lasso.kind == "cycle"
    assert sum(text.startswith("drop ") for text, _ in lasso.prefix) >= 1
    assert all(not text.startswith("drop ") for text, _ in lasso.cycle)  # faults are finite: none in the cycle


def _kafka_19975(protocol: Protocol):
    v = LIVENESS_VARIANTS["blocked-reassignment-completion"]
    cfg = Config(**v.settings)
    model = LivenessModel(protocol, cfg, permanent_crashes=True, reassign_targets=[(1, 2, 3), (1, 3)])
    return v, model, check_liveness(model, [reassignment_ends(permanent_crashes=True)])


def test_the_liveness_check_finds_kafka_19975_as_a_fair_cycle():
    v, model, r = _kafka_19975(LIVENESS_VARIANTS["blocked-reassignment-completion"].protocol)
    lasso = r.violations["liveness.reassignment-ends"]
    assert r.complete and lasso is not None and lasso.kind == "cycle"
    texts = [t for t, _ in lasso.prefix]
    assert any(t.startswith("crash ") for t in texts) and any(t.startswith("reassign to [1,2,3]") for t in texts)
    assert len(lasso.prefix) - 1 <= v.minimal_steps
    end = lasso.prefix[-1][1]
    # a target replica is down and out of the ISR, the adding one is in: only the completion rule holds it back
    dead = [b for b in end.registry.target if not end.replica(b).alive]
    assert dead and not set(dead) & end.registry.isr and set(end.registry.adding) <= end.registry.isr
    # the cycle is a run of the model back to where it started, never completing the move
    assert lasso.cycle and model.encode(lasso.cycle[-1][1]) == model.encode(end)
    assert all(s.registry.reassigning for _, s in lasso.cycle)
    # and no safety invariant breaks on the way: only the liveness check sees it
    invariants = ReplicationModel(v.protocol, model.cfg).invariants()
    assert all(inv.holds(s) is None for _, s in lasso.prefix + lasso.cycle for inv in invariants)


def test_kafka_19975s_fix_completes_every_reassignment():
    _, _, r = _kafka_19975(Protocol.current("4.4.0"))
    assert r.complete and r.violations == {"liveness.reassignment-ends": None}


def test_healing_at_the_end_of_random_programs_finds_kafka_19975_and_not_its_fix():
    v = LIVENESS_VARIANTS["blocked-reassignment-completion"]
    cfg = Config(**v.settings)
    prop = [reassignment_ends(permanent_crashes=True)]
    found = random_liveness(LivenessModel(v.protocol, cfg, permanent_crashes=True, reassign_targets=[(1, 2, 3)]),
                            prop, seed=0, programs=60, max_steps=12)
    assert found.failure is not None
    program, healed = found.failure
    assert any(t.startswith("crash ") for t, _ in program) and "liveness.reassignment-ends" in healed.failed
    fixed = random_liveness(LivenessModel(Protocol.current("4.4.0"), cfg, permanent_crashes=True,
                                          reassign_targets=[(1, 2, 3)]), prop, seed=0, programs=60, max_steps=12)
    assert fixed.failure is None and fixed.programs == 60


def test_a_follower_that_crashed_during_an_isr_expansion_rejoins():
    cfg = Config(**{**QUIET, "brokers": 2, "min_isr": 1, "records": 1, "crashes": 1, "isr_shrinks": 1})
    r = check_liveness(LivenessModel(Protocol.current("4.4.0"), cfg), properties(cfg))
    assert r.complete and r.violations["liveness.isr-rejoin"] is None
