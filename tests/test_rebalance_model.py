"""The rebalance model: every assignor through random group histories, plus scripted stories and findings.

`test_model_keeps_guarantees` runs the one engine's random search over the model (`RebalanceModel`) for each
assignor at CI size; set `KCHECK_REBALANCE_EXAMPLES=2000` (and optionally `KCHECK_REBALANCE_STEPS`) for a deep run.
The finding tests replay, step by step, histories where Kafka's StickyAssignor hands a member a partition
of a topic it dropped, or throws, because of its stale user data: the model records them as findings
(they are not skipped, and they do not fail it), and the rejoin sweep that `kcheck check` runs finds the
smallest of each, with a `kcheck assign` file that replays it.
"""

from __future__ import annotations

import json

import pytest

from kcheck.check import REJOIN_SPACE, rebalance_model_bounds, run_rebalance_models, run_rejoin_sweep
from kcheck.inputs.group_file import parse_group, run_assignor
from kcheck.invariants.assignment import movement
from kcheck.invariants.rebalance import (
    CI_EXAMPLES,
    CI_STEPS,
    STALE_CLAIM_KINDS,
    STALE_INVALID,
    STALE_NPE,
    AssignorFailed,
    ConsumerGroup,
    ModelFailure,
    model_budget,
)
from kcheck.invariants.rebalance_model_adapter import RebalanceBounds, RebalanceModel
from kcheck.model import TopicPartition
from kcheck.model.search import random_search
from kcheck.reference.assignors.client import RangeAssignor
from kcheck.reference.assignors.registry import ASSIGNORS, AssignorInfo
from kcheck.reference.assignors.sticky import IllegalStateException, StickyAssignor


@pytest.mark.parametrize("name", list(ASSIGNORS))
def test_model_keeps_guarantees(name):
    programs, steps = model_budget()
    run = random_search(RebalanceModel(name, rebalance_model_bounds(steps)), seed=0, programs=programs,
                        max_steps=steps, keep_going=True, lazy=True)
    broken = {inv: cx.message for inv, cx in run.counterexamples.items() if inv not in STALE_CLAIM_KINDS}
    assert broken == {}
    assert run.transitions > programs  # the programs took steps


def test_budget_ci_by_default_deep_by_env(monkeypatch):
    monkeypatch.delenv("KCHECK_REBALANCE_EXAMPLES", raising=False)
    monkeypatch.delenv("KCHECK_REBALANCE_STEPS", raising=False)
    assert model_budget() == (CI_EXAMPLES, CI_STEPS)
    monkeypatch.setenv("KCHECK_REBALANCE_EXAMPLES", "2000")
    assert model_budget() == (2000, 50)
    monkeypatch.setenv("KCHECK_REBALANCE_STEPS", "80")
    assert model_budget() == (2000, 80)


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
    assert r.broken == ()  # a finding, not a broken guarantee: the claim is stale, from generation 1
    (f,) = g.findings
    assert (f.kind, f.member, f.generation) == (STALE_INVALID, "c1", 3)
    assert f.message == ("member c1 is assigned t1-0 but subscribes only to [t2]: its user data from an older "
                         "generation claims [t1-0, t1-1]")
    assert f.story == tuple(g.log)  # the whole history, up to this rebalance
    # The finding's group file replays the rebalance in `kcheck assign`: the same assignment.
    assert f.group_file()["members"]["c1"] == {"topics": ["t2"], "owned": ["t1-0", "t1-1"], "generation": 1}
    replay = run_assignor(ASSIGNORS["sticky"], parse_group(json.dumps(f.group_file()), "finding.json"))
    assert replay.assignment == r.subject.assignment
    # The cooperative assignor is safe in the same story: the rejoining member lost its partitions
    # (onJoinPrepare after a reset generation) and ownership comes from owned_partitions, not user data.
    c = _stale_sticky_member("cooperative-sticky")
    assert all(not r.broken for r in c.rebalance())


def test_finding_sticky_null_pointer_for_a_fixed_older_generation_owner():
    """The same prevAssignment check dereferences currentAssignment.get(prevOwner), which is null once the
    previous owner is set aside as fixed: Java throws a NullPointerException and the rebalance fails. The
    leader's poll() throws it, so its consumer stops and leaves; the model records the finding and goes on.

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
    assert g.rebalance() == []
    (f,) = g.findings
    assert (f.kind, f.member, f.generation) == (STALE_NPE, "c1", 3)
    assert g.log[-2:] == ["rebalance: generation 3, leader c2 -> sticky throws NullPointerException",
                          "c2's poll() throws; its consumer stops and leaves the group"]
    assert f.story[-1] == "rebalance: generation 3, leader c2 -> sticky throws NullPointerException"
    with pytest.raises(Exception, match="NullPointerException"):  # `kcheck assign` replays the throw
        run_assignor(ASSIGNORS["sticky"], parse_group(json.dumps(f.group_file()), "finding.json"))
    assert list(g.members) == ["c1", "c3"] and g.pending
    (r,) = g.rebalance()  # without the failed leader, c1 leads: no stale claim against a newer owner is left
    assert r.broken == () and not g.findings[1:]


def test_model_records_the_finding_instead_of_skipping_it():
    """The model allows the stale-claim history (a timed-out member rejoins, then drops t1) and records the
    finding as its own invariant, with no guarantee broken; the group's story goes on, and a search that keeps
    going past it still checks every guarantee."""
    model = RebalanceModel("sticky", RebalanceBounds(max_members=3, topics=3, max_partitions=2, events=8,
                                                     rebalances=4, sizes=((2, 1, 1),)))
    (s,) = model.initial_states()
    for a in [("join", ("t1",), None), ("rebalance",), ("time-out", "c1"), ("join", ("t1",), None),
              ("join", ("t1", "t2", "t3"), None), ("rebalance",),
              ("rejoin", "c1", ("t2",)),  # rejoining with a new subscription is an event of its own
              ("rebalance",)]:
        assert a in model.actions(s)
        s = model.step(s, a)
    assert s.group.members["c1"].topics == ("t2",)
    verdicts = {inv.id: inv.holds(s) for inv in model.invariants()}
    assert verdicts.pop(STALE_INVALID) is not None and set(verdicts.values()) == {None}
    assert s.failure is None and ("rebalance",) in model.actions(s)
    run = random_search(model, seed=0, programs=50, max_steps=8, keep_going=True, lazy=True)
    assert set(run.counterexamples) <= set(STALE_CLAIM_KINDS)


class _ForeignPartition(StickyAssignor):
    """Also hands c1 a partition of t3, which nobody claims: not a stale claim, so a broken guarantee."""

    def assign_partitions(self, ppt, subscriptions):
        out = super().assign_partitions(ppt, subscriptions)
        if "c1" in out and "t3" in ppt:
            out["c1"] = [*out["c1"], TopicPartition("t3", 0)]
            for m, tps in out.items():
                if m != "c1":
                    out[m] = [tp for tp in tps if tp != TopicPartition("t3", 0)]
        return out


def test_an_invalid_assignment_without_a_stale_claim_still_breaks_the_guarantee():
    info = AssignorInfo("foreign", _ForeignPartition, False, ASSIGNORS["sticky"].guarantees)
    g = ConsumerGroup(info, {"t1": 2, "t2": 1, "t3": 1})
    g.join("c1", ["t1"])
    g.join("c2", ["t3"])
    (r,) = g.rebalance()
    assert [v.where for v in r.broken if v.invariant == "assignment.valid"] == ["member c1"]
    assert g.findings == []
    # In a stale-claim round, a violation that is not only stale claims stays a failure, as a whole.
    s = _stale_sticky_member("sticky")
    s.info = info
    for m in s.members.values():
        m.client.__class__ = _ForeignPartition
    (r,) = s.rebalance()
    assert s.findings == []
    assert [v.detail["partitions"] for v in r.broken if v.invariant == "assignment.valid"] == [["t1-0", "t3-0"]]


def test_assignor_exceptions_other_than_the_stale_npe_fail_the_rebalance():
    class Throws(StickyAssignor):
        def assign_partitions(self, ppt, subscriptions):
            raise IllegalStateException("No more unfilled consumers to be assigned.")

    g = ConsumerGroup(AssignorInfo("throws", Throws, False, frozenset()), {"t1": 1})
    g.join("c1", ["t1"])
    with pytest.raises(AssignorFailed) as failed:
        g.rebalance()
    assert isinstance(failed.value.__cause__, IllegalStateException)


def test_a_stray_assert_in_the_reference_propagates_out_of_check(monkeypatch):
    """kcheck check catches the model's verdicts (ModelFailure), not any AssertionError: an `assert` failing
    inside the reference is a bug in kcheck, not 'the assignor's rebalance fails'."""
    def broken(self, ppt, subscriptions):
        raise AssertionError("a bug in the reference")

    monkeypatch.setattr(RangeAssignor, "assign_partitions", broken)  # the first assignor the check runs
    with pytest.raises(AssertionError, match="a bug in the reference") as e:
        run_rebalance_models(examples=10, steps=5)
    assert not isinstance(e.value, ModelFailure)


def test_check_finds_both_stale_claim_findings_with_their_smallest_groups():
    """`kcheck check`'s rejoin sweep: no guarantee breaks; the two findings, smallest group first, and each
    group file replays its rebalance in `kcheck assign`."""
    sweep = run_rejoin_sweep()
    assert sweep.space == REJOIN_SPACE and sweep.groups == 872
    assert sweep.failures == []
    by_kind = {o.invariant: o for o in sweep.findings}
    assert set(by_kind) == {STALE_INVALID, STALE_NPE} and {o.assignor for o in sweep.findings} == {"sticky"}
    invalid, npe = by_kind[STALE_INVALID], by_kind[STALE_NPE]
    # t1 (1), t2 (1); c1 [t1], c2 [t1, t2]. c1 times out: c2 holds both at generation 2. c1 rejoins on [t2] as
    # c3 joins on [t1]; c2 keeps t2-0 and t1-0, c3 has none, so performReassignments hands t1-0 back to c1.
    assert invalid.config["story"][1:] == [
        "c1 joins subscribing [t1]", "c2 joins subscribing [t1, t2]",
        "rebalance (round 1, generation 1): sticky assigns from scratch", "c1's session times out",
        "rebalance (round 2, generation 2): owned partitions from round 1, without c1",
        "c1 rejoins subscribing to [t2] with its client's state from round 1 (a sticky member: its round-1 "
        "assignment and generation)",
        "c3 joins subscribing [t1]", "rebalance again"]
    assert invalid.message == ("round 3: stale-claim violation: member c1 is assigned t1-0 but subscribes only to "
                               "[t2]: its user data from an older generation claims [t1-0]")
    replay = run_assignor(ASSIGNORS["sticky"], parse_group(json.dumps(invalid.replay), "finding.json"))
    assert replay.assignment["c1"] == [TopicPartition("t1", 0)]
    # t1 (1), t2 (2); c1, c2 on [t2]. c1 times out; c1 rejoins on [t1] (it holds all of t1: set aside as fixed)
    # as c3 joins on [t2]; c2 has 2, c3 0, and t2-0's previous owner is c1: currentAssignment.get(c1) is null.
    assert npe.config["topics"] == {"t1": 1, "t2": 2}
    assert npe.config["event"]["text"] == ("c1's session times out, the group rebalances without it, and it "
                                           "rejoins subscribing to [t1] with its client's state, as c3 joins "
                                           "subscribing [t2]")
    assert npe.replay == {"topics": {"t1": 1, "t2": 2}, "members": {
        "c2": {"topics": ["t2"], "owned": ["t2-1", "t2-0"], "generation": 2},
        "c1": {"topics": ["t1"], "owned": ["t2-0"], "generation": 1}, "c3": {"topics": ["t2"]}}}
    with pytest.raises(Exception, match="NullPointerException"):
        run_assignor(ASSIGNORS["sticky"], parse_group(json.dumps(npe.replay), "finding.json"))


def test_main_job_reports_a_model_finding_with_a_replay_file(monkeypatch):
    """Random histories rarely meet a stale claim (the rejoin sweep finds them); the exhaustive search at the
    stale-claim bounds does. Fed through `run_rebalance_models` in place of the random search, its counterexample
    is reported as a finding, not a failure, with the failing rebalance as a `kcheck assign` file that replays it."""
    import kcheck.model.search as search

    tiny = RebalanceBounds(max_members=3, topics=2, max_partitions=2, events=5, rebalances=3,
                           kinds=("join", "time-out", "rejoin"), sizes=((1, 1),))
    monkeypatch.setattr(search, "random_search",
                        lambda model, **kw: search.exhaust(RebalanceModel(model.info, tiny), keep_going=True))
    (outcome,) = run_rebalance_models(assignors=["sticky"])
    assert outcome.failure is None
    (finding,) = outcome.findings
    assert finding.kind == STALE_INVALID and finding.steps == 8 and finding.story[-2].startswith("rejoin c1")
    assert "c1 is assigned t1-0 but subscribes only to [t2]" in finding.message
    replay = run_assignor(ASSIGNORS["sticky"], parse_group(json.dumps(finding.group_file()), "finding.json"))
    assert replay.assignment["c1"] == [TopicPartition("t1", 0)]
