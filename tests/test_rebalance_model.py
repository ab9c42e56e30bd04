"""The rebalance model: every assignor through random group histories, plus scripted stories and findings.

`test_model_keeps_guarantees` runs the state machine for each assignor at CI size; set
`KCHECK_REBALANCE_EXAMPLES=2000` (and optionally `KCHECK_REBALANCE_STEPS`) for a deep run.
The finding tests replay, step by step, the smallest histories the model found where Kafka's
StickyAssignor breaks a guarantee; the model itself steers clear of them (see `rebalance_machine`).
"""

from __future__ import annotations

import pytest
from hypothesis.stateful import run_state_machine_as_test

from kcheck.invariants.assignment import movement
from kcheck.invariants.rebalance import (
    CI_EXAMPLES,
    CI_STEPS,
    AssignorFailed,
    ConsumerGroup,
    model_settings,
    rebalance_machine,
)
from kcheck.model import TopicPartition
from kcheck.reference.assignors.registry import ASSIGNORS
from kcheck.reference.assignors.sticky import NullPointerException


@pytest.mark.parametrize("name", list(ASSIGNORS))
def test_model_keeps_guarantees(name):
    run_state_machine_as_test(rebalance_machine(name), settings=model_settings())


def test_settings_ci_by_default_deep_by_env(monkeypatch):
    monkeypatch.delenv("KCHECK_REBALANCE_EXAMPLES", raising=False)
    monkeypatch.delenv("KCHECK_REBALANCE_STEPS", raising=False)
    s = model_settings()
    assert (s.max_examples, s.stateful_step_count) == (CI_EXAMPLES, CI_STEPS)
    monkeypatch.setenv("KCHECK_REBALANCE_EXAMPLES", "2000")
    assert (model_settings().max_examples, model_settings().stateful_step_count) == (2000, 50)
    monkeypatch.setenv("KCHECK_REBALANCE_STEPS", "80")
    assert model_settings().stateful_step_count == 80


def test_machine_per_assignor_is_named_after_it():
    assert rebalance_machine("cooperative-sticky").__name__ == "Rebalance_cooperative_sticky"


def test_cooperative_join_takes_two_rounds_and_reads_as_a_story():
    # c1 owns t1-0..3; c2 joins. Round 1 (generation 2) keeps c1 at 2 and withholds t1-2, t1-3 while c1
    # revokes them; round 2 (generation 3) hands them to c2.
    g = ConsumerGroup(ASSIGNORS["cooperative-sticky"], {"t1": 4})
    g.join("c1", ["t1"])
    g.rebalance()
    g.join("c2", ["t1"])
    r1, r2 = g.rebalance()
    assert g.log[1:] == [
        "join c1 subscribing [t1]",
        "rebalance: generation 1, leader c1 -> c1 [t1-0, t1-1, t1-2, t1-3]",
        "join c2 subscribing [t1]",
        "rebalance: generation 2, leader c1 -> c1 [t1-0, t1-1]; c2 []; revoked c1 [t1-2, t1-3]",
        "rebalance: generation 3, leader c1 -> c1 [t1-0, t1-1]; c2 [t1-2, t1-3]",
    ]
    assert r1.subject.withheld == (TopicPartition("t1", 2), TopicPartition("t1", 3))
    assert r1.broken == () and r2.broken == () and r2.handover == ()
    # The eager sticky assignor does it in one round: everything is revoked before the join.
    e = ConsumerGroup(ASSIGNORS["sticky"], {"t1": 4})
    e.join("c1", ["t1"])
    e.rebalance()
    e.join("c2", ["t1"])
    (only,) = e.rebalance()
    assert only.broken == () and sorted(map(len, only.subject.assignment.values())) == [2, 2]
    # ... yet the subject still knows what c1 held, so the moves are measurable: 2 moved, 2 unavoidable.
    assert only.subject.subscriptions["c1"].owned_partitions == tuple(TopicPartition("t1", i) for i in range(4))
    assert movement(only.subject)[:3] == (4, 2, 2)


def _stale_sticky_member(name: str) -> ConsumerGroup:
    """c1 held t1 in generation 1, timed out, came back with that user data and now subscribes only to t2."""
    g = ConsumerGroup(ASSIGNORS[name], {"t1": 2, "t2": 1, "t3": 1})
    g.join("c1", ["t1"])
    g.rebalance()  # generation 1: c1 [t1-0, t1-1]
    g.time_out("c1")
    g.join("c2", ["t1"])
    g.join("c3", ["t1", "t2", "t3"])
    g.rebalance()  # generation 2: c2 [t1-0, t1-1], c3 [t2-0, t3-0]
    g.rejoin("c1")
    g.subscribe("c1", ["t2"])
    return g


def test_finding_sticky_hands_a_dropped_topic_back_to_an_older_generation_owner():
    """Kafka's general sticky path (AbstractStickyAssignor.performReassignments) moves a partition back to
    its prevAssignment owner - a member whose user data is from an older generation - whenever the current
    owner has 2+ more partitions, without checking that it still subscribes to the topic.

    Generation 3: c1 (user data: t1-0, t1-1 from generation 1) subscribes to [t2]; c2 (generation 2) owns
    t1-0, t1-1; c3 owns t2-0, t3-0. Subscriptions differ, so the general builder runs; c2 keeps both t1
    partitions (newer generation), c1 starts empty. c2 has 2 > 0 + 1, so t1-0 goes back to c1.
    """
    g = _stale_sticky_member("sticky")
    (r,) = g.rebalance()
    assert r.subject.assignment["c1"] == [TopicPartition("t1", 0)]
    valid = [v for v in r.broken if v.invariant == "assignment.valid"]
    assert [(v.where, v.detail["partitions"]) for v in valid] == [("member c1", ["t1-0"])]
    # The cooperative assignor is safe in the same story: the rejoining member lost its partitions
    # (onJoinPrepare after a reset generation) and ownership comes from owned_partitions, not user data.
    c = _stale_sticky_member("cooperative-sticky")
    assert all(not r.broken for r in c.rebalance())


def test_finding_sticky_null_pointer_for_a_fixed_older_generation_owner():
    """The same prevAssignment check dereferences currentAssignment.get(prevOwner), which is null once the
    previous owner is set aside as fixed: Java throws a NullPointerException and the rebalance fails.

    Generation 3: c1 (user data: t1-0..3, t3-0 from generation 1) subscribes to [t3] only and holds t3-0,
    its whole topic, which nobody else subscribes to: c1 is fixed. c2 (generation 2) holds t1-0..3 and c3
    joins empty, so the group is unbalanced; looking at t1-0, Kafka asks for c1's size.
    """
    g = ConsumerGroup(ASSIGNORS["sticky"], {"t1": 4, "t3": 1})
    g.join("c1", ["t1", "t3"])
    g.rebalance()
    g.time_out("c1")
    g.join("c2", ["t1"])
    g.rebalance()
    g.rejoin("c1")
    g.subscribe("c1", ["t3"])
    g.join("c3", ["t1"])
    with pytest.raises(AssignorFailed) as failed:
        g.rebalance()
    assert isinstance(failed.value.__cause__, NullPointerException)
    assert g.log[-1] == "rebalance: generation 3, leader c2 -> sticky throws NullPointerException"


def test_model_steers_clear_of_the_finding_unless_allowed():
    machine = rebalance_machine("sticky")
    state = machine()
    state.create_topics(sizes=[2, 1, 1], replication=1, broker_racks=False)
    state.join(topics=["t1"], rack=None)
    state.rebalance()
    state.time_out(member="c1")
    state.join(topics=["t1"], rack=None)
    state.join(topics=["t1", "t2", "t3"], rack=None)
    state.rebalance()
    state.rejoin(member="c1")
    state.subscribe(member="c1", topics=["t2"])  # skipped: would claim t1 while subscribing to t2 only
    assert state.group.members["c1"].topics == ("t1",)
    state.rebalance()
    state.teardown()

    allowed = rebalance_machine("sticky", allow_stale_unsubscribed_claims=True)()
    allowed.create_topics(sizes=[2, 1, 1], replication=1, broker_racks=False)
    allowed.join(topics=["t1"], rack=None)
    allowed.rebalance()
    allowed.time_out(member="c1")
    allowed.join(topics=["t1"], rack=None)
    allowed.join(topics=["t1", "t2", "t3"], rack=None)
    allowed.rebalance()
    allowed.rejoin(member="c1")
    allowed.subscribe(member="c1", topics=["t2"])
    with pytest.raises(AssertionError, match="assignment.valid at member c1"):
        allowed.rebalance()
