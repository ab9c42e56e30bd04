"""The consumer-group rebalance model on the one engine (invariants/rebalance_model_adapter.py, issue 14 part 1).

`kcheck.model.search.exhaust` finds, at small bounds, what the Hypothesis machine (`rebalance_machine`) and the
rejoin sweep of `kcheck check` find: Kafka's StickyAssignor handing a member a partition of a topic it dropped, and
throwing a NullPointerException, when a timed-out member rejoins with user data from an older generation
(tests/test_rebalance_model.py); every other built-in assignor is clean at the same bounds. The deep runs are
`slow`.
"""

from __future__ import annotations

import pytest

from kcheck.invariants.rebalance import STALE_INVALID, STALE_NPE
from kcheck.invariants.rebalance_model_adapter import RebalanceBounds, RebalanceModel
from kcheck.model.search import exhaust, random_search
from kcheck.reference.assignors.registry import ASSIGNORS

REJOIN = ("join", "time-out", "rejoin")  # the events of the stale-claim stories


def _bounds(sizes: tuple[tuple[int, ...], ...], events: int = 5, rebalances: int = 3) -> RebalanceBounds:
    return RebalanceBounds(max_members=3, topics=2, max_partitions=2, events=events, rebalances=rebalances,
                           kinds=REJOIN, sizes=sizes)


def test_exhaust_finds_the_sticky_stale_claim_violation_with_the_sweeps_story() -> None:
    found = exhaust(RebalanceModel("sticky", _bounds(((1, 1),)), only=[STALE_INVALID]), max_seconds=120)
    assert found.stopped_because == "violation" and found.counterexample is not None
    assert found.counterexample.invariant == STALE_INVALID
    # the shortest story, as the rejoin sweep reports it (tests/test_rebalance_model.py): c1 [t1] and c2 [t1, t2];
    # c1 times out; the group rebalances without it; c3 joins on [t1] and c1 rejoins on [t2]: t1-0 goes back to c1
    assert [a for a, _ in found.counterexample.steps[1:]] == [
        "join subscribing [t1]", "join subscribing [t1, t2]", "rebalance", "time-out c1", "rebalance",
        "join subscribing [t1]", "rejoin c1 subscribing to [t2]", "rebalance"]
    last = found.counterexample.steps[-1][1].group
    assert [str(tp) for tp in last.members["c1"].owned] == ["t1-0"] and last.members["c1"].topics == ("t2",)


@pytest.mark.slow
def test_exhaust_finds_the_sticky_null_pointer() -> None:
    found = exhaust(RebalanceModel("sticky", _bounds(((1, 2),)), only=[STALE_NPE]), max_seconds=300)
    assert found.counterexample is not None and found.counterexample.invariant == STALE_NPE
    assert len(found.counterexample.steps) - 1 == 8
    assert found.counterexample.steps[-2][0] == "rejoin c1 subscribing to [t1]"


@pytest.mark.parametrize("name", [n for n in ASSIGNORS if n != "sticky"])
def test_the_other_assignors_are_clean(name: str) -> None:
    result = exhaust(RebalanceModel(name, _bounds(((1, 1), (1, 2)), events=3, rebalances=2)), max_seconds=120)
    assert result.complete and result.counterexample is None, result.counterexample
    assert result.states > 100


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ASSIGNORS))
def test_every_assignor_keeps_its_guarantees_at_the_stale_claim_bounds(name: str) -> None:
    result = exhaust(RebalanceModel(name, _bounds(((1, 1), (1, 2))), findings=False), max_seconds=600)
    assert result.complete and result.counterexample is None, result.counterexample


@pytest.mark.slow
def test_sticky_keeps_its_guarantees_where_it_shows_no_finding() -> None:
    # without the findings as invariants, the same search goes on past them: the guarantees still hold
    result = exhaust(RebalanceModel("sticky", _bounds(((1, 1),), events=4, rebalances=3), findings=False),
                     max_seconds=120)
    assert result.complete and result.counterexample is None, result.counterexample


def test_a_broken_guarantee_is_caught() -> None:
    # an assignor that leaves every partition unassigned breaks assignment.complete at the first rebalance
    from kcheck.reference.assignors.registry import AssignorInfo
    from kcheck.reference.assignors.sticky import StickyAssignor

    class Nothing(StickyAssignor):
        def assign_partitions(self, ppt, subscriptions):  # type: ignore[no-untyped-def]
            return {m: [] for m in subscriptions}

    info = AssignorInfo("nothing", Nothing, False, ASSIGNORS["sticky"].guarantees)
    found = exhaust(RebalanceModel(info, _bounds(((1, 1),), events=1, rebalances=1)), max_seconds=30)
    assert found.counterexample is not None and found.counterexample.invariant == "rebalance.guarantees"
    assert "assignment.complete" in found.counterexample.message


def test_encodings_are_canonical_and_decode_inverts_them() -> None:
    m = RebalanceModel("cooperative-sticky", RebalanceBounds(max_members=2, topics=2, events=3, rebalances=2))
    frontier, checked = list(m.initial_states()), 0
    for _ in range(4):
        nxt = []
        for s in frontier:
            for a in m.actions(s):
                t1, t2 = m.step(s, a), m.step(s, a)
                assert t1 is not None and t2 is not None and m.encode(t1) == m.encode(t2)
                back = m.decode(m.encode(t1))
                assert m.encode(back) == m.encode(t1)
                # the decoded state behaves as the original: same actions, same successors
                assert m.actions(back) == m.actions(t1)
                for b in m.actions(t1):
                    u, v = m.step(t1, b), m.step(back, b)
                    assert u is not None and v is not None and m.encode(u) == m.encode(v)
                    checked += 1
                nxt.append(t1)
        frontier = nxt[::3][:20]
    assert checked > 100


def test_random_search_runs_on_the_model() -> None:
    result = random_search(RebalanceModel("range", _bounds(((1, 2),))), seed=0, programs=30, max_steps=10)
    assert result.counterexample is None and result.programs == 30
