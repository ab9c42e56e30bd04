"""Assignment invariants: hand-worked examples with their numbers, Kafka's documented examples, and properties.

Kafka's examples come from the `StickyAssignor` javadoc (apache/kafka
`clients/src/main/java/org/apache/kafka/clients/consumer/StickyAssignor.java`, examples 1 and 2) and
the quota arithmetic of `AbstractStickyAssignor.constrainedAssign` as seed 001 explains it (7
partitions over 3 consumers: minQuota 2, maxQuota 3, 7 % 3 = 1 member with 3).
"""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcheck.invariants import REGISTRY, AssignmentSubject, Severity, check_assignment
from kcheck.invariants.assignment import (
    check_two_rounds,
    movement,
    optimal_counts,
    rack_placement,
    renamed,
)
from kcheck.invariants.rebalance import MAX_FOLLOW_UPS
from kcheck.model import Broker, PartitionInfo, Subscription, TopicPartition
from kcheck.reference.assignors.client import build_partitions_per_topic
from kcheck.reference.assignors.registry import ASSIGNORS
from kcheck.reference.assignors.sticky import serialize_topic_partition_assignment


def tp(s: str) -> TopicPartition:
    topic, p = s.rsplit("-", 1)
    return TopicPartition(topic, int(p))


def tps(*names: str) -> list[TopicPartition]:
    return [tp(n) for n in names]


def ppt(sizes: dict[str, int], racks: dict[str, str] | None = None) -> dict[str, list[PartitionInfo]]:
    """Partitions of each topic; `racks` maps "t-0" to the rack of its only replica."""
    racks = racks or {}
    return {t: [PartitionInfo(t, i, None, (Broker(i, racks.get(f"{t}-{i}")),)) for i in range(n)]
            for t, n in sizes.items()}


def subject(sizes, subs, assignment, owned=None, cooperative=False, racks=None, member_racks=None, gens=None):
    owned, member_racks, gens = owned or {}, member_racks or {}, gens or {}
    subscriptions = {m: Subscription(tuple(ts), None, tuple(tps(*owned.get(m, ()))), gens.get(m), member_racks.get(m))
                     for m, ts in subs.items()}
    return AssignmentSubject(ppt(sizes, racks), subscriptions, {m: tps(*ps) for m, ps in assignment.items()},
                             cooperative)


def by_id(report, inv):
    return [v for v in report.violations if v.invariant == inv]


# --- hand-worked examples ------------------------------------------------------------------------------


def test_every_assignment_invariant_is_registered_with_its_severity():
    expected = {
        "assignment.complete": Severity.HARD, "assignment.valid": Severity.HARD,
        "assignment.balanced": Severity.SOFT, "assignment.optimally-balanced": Severity.SOFT,
        "assignment.sticky": Severity.SOFT, "assignment.cooperative-safety": Severity.HARD,
        "assignment.rack-quality": Severity.SOFT,
    }
    found = {i.id: i.severity for i in REGISTRY.values() if i.applies_to == "assignment"}
    assert found == expected
    assert all(REGISTRY[i].title and REGISTRY[i].source for i in expected)


def test_seed_001_seven_partitions_over_three_consumers():
    # minQuota = 7 // 3 = 2, maxQuota = ceil(7/3) = 3, 7 % 3 = 1 member above minQuota: counts 3, 2, 2.
    subs = {c: ["t"] for c in ("c1", "c2", "c3")}
    out = ASSIGNORS["sticky"].factory().assign_partitions(ppt({"t": 7}), {c: Subscription(("t",)) for c in subs})
    assert sorted((len(v) for v in out.values()), reverse=True) == [3, 2, 2]
    s = AssignmentSubject(ppt({"t": 7}), {c: Subscription(("t",)) for c in subs}, out)
    assert check_assignment(s).violations == ()
    # 4, 2, 1 is off by one partition: max - min - 1 = 4 - 1 - 1 = 2 over the allowed spread of 1.
    bad = subject({"t": 7}, subs, {"c1": ["t-0", "t-1", "t-2", "t-3"], "c2": ["t-4", "t-5"], "c3": ["t-6"]})
    (v,) = by_id(check_assignment(bad), "assignment.balanced")
    assert (v.where, v.detail["count"], v.detail["min_member"], v.detail["excess"]) == ("member c1", 4, "c3", 2)
    # The optimum is 3, 2, 2: sorted, 4 > 3 at rank 0; excess = (4-3) + 0 + 0 = 1.
    (o,) = by_id(check_assignment(bad), "assignment.optimally-balanced")
    assert (o.where, o.detail["counts"], o.detail["best_counts"], o.detail["excess"]) == \
        ("member c1", [4, 2, 1], [3, 2, 2], 1)


def test_complete_names_duplicates_and_missing_partitions():
    s = subject({"t": 3, "u": 1}, {"c1": ["t"], "c2": ["t"]}, {"c1": ["t-0", "t-1"], "c2": ["t-1"]})
    found = {v.where: v.detail for v in by_id(check_assignment(s), "assignment.complete")}
    # t-1 twice (excess 1), t-2 nowhere (excess -1); u has no subscriber, so u-0 is not required.
    assert found["partition t-1"]["members"] == ["c1", "c2"] and found["partition t-1"]["excess"] == 1
    assert found["partition t-2"]["count"] == 0 and found["partition t-2"]["excess"] == -1
    assert set(found) == {"partition t-1", "partition t-2"}


def test_cooperative_round_may_withhold_only_what_is_being_revoked():
    # c1 owned t-0..t-3; c2 joined. Round 1 keeps t-0, t-1 on c1 and withholds t-2, t-3 (c1 revokes them).
    subs = {"c1": ["t"], "c2": ["t"]}
    owned = {"c1": ["t-0", "t-1", "t-2", "t-3"]}
    r1 = subject({"t": 4}, subs, {"c1": ["t-0", "t-1"], "c2": []}, owned, cooperative=True)
    report = check_assignment(r1)
    assert report.violations == () and "assignment.balanced" in report.skipped
    # The same output in an eager round leaves t-2, t-3 unassigned: two violations.
    assert len(by_id(check_assignment(subject({"t": 4}, subs, {"c1": ["t-0", "t-1"], "c2": []}, owned)),
                     "assignment.complete")) == 2
    # Withholding t-3, which nobody owns, is not allowed even cooperatively.
    r1b = subject({"t": 4}, subs, {"c1": ["t-0", "t-1"], "c2": ["t-2"]}, {"c1": ["t-0", "t-1", "t-2"]}, True)
    assert [v.where for v in by_id(check_assignment(r1b), "assignment.complete")] == ["partition t-3"]
    # ... and giving t-2 to c2 in the round c1 revokes it breaks cooperative safety.
    (v,) = by_id(check_assignment(r1b), "assignment.cooperative-safety")
    assert (v.where, v.detail["new_owner"], v.detail["previous_owners"]) == ("partition t-2", "c2", ["c1"])
    # Round 2: c1 owns what round 1 gave it, c2 takes t-2, t-3: nothing owned twice across the hand-over.
    r2 = subject({"t": 4}, subs, {"c1": ["t-0", "t-1"], "c2": ["t-2", "t-3"]}, {"c1": ["t-0", "t-1"]}, True)
    assert check_assignment(r2).violations == () and check_two_rounds(r1, r2) == []
    # A c1 that kept t-2 after round 1 would share it with c2: the hand-over names it.
    r2_bad = subject({"t": 4}, subs, {"c1": ["t-0", "t-1"], "c2": ["t-2", "t-3"]}, {"c1": ["t-0", "t-1", "t-2"]}, True)
    (h,) = check_two_rounds(r1, r2_bad)
    assert h.where == "partition t-2" and h.detail["round2_owners"] == ["c1"] and h.detail["round1_assigned"] == []
    # Round 1 gave t-0 to c1; a round-2 subscription of c2 owning t-0 means two owners.
    r2_two = subject({"t": 4}, subs, {"c1": ["t-1"], "c2": ["t-0"]}, {"c1": ["t-1"], "c2": ["t-0"]}, True)
    (h2,) = check_two_rounds(r1, r2_two)
    assert h2.detail["round1_assigned"] == ["c1"] and h2.detail["round2_owners"] == ["c2"]
    assert check_assignment(r1, {"assignment.cooperative-safety"}).skipped == {}
    assert "assignment.cooperative-safety" in check_assignment(subject({"t": 1}, subs, {"c1": ["t-0"]})).skipped


def test_valid_names_member_and_reason():
    s = subject({"t": 2, "u": 1}, {"c1": ["t"], "c2": ["u"]},
                {"c1": ["t-0", "u-0", "t-7"], "c2": [], "ghost": ["t-1"]})
    found = {(v.where, v.detail["reason"]): v.detail["excess"] for v in by_id(check_assignment(s), "assignment.valid")}
    assert found == {("member c1", "no such partition"): 1, ("member c1", "topic not subscribed"): 1,
                     ("member ghost", "not a member"): 1}


# StickyAssignor javadoc, example 2: t0, t1, t2 with 1, 2, 3 partitions; C0 subscribes to t0, C1 to t0, t1,
# C2 to t0, t1, t2.
EX2_SIZES = {"t0": 1, "t1": 2, "t2": 3}
EX2_SUBS = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}


def test_javadoc_example_2_balance():
    subs = {c: Subscription(tuple(ts)) for c, ts in EX2_SUBS.items()}
    rr = ASSIGNORS["roundrobin"].factory().assign_partitions(ppt(EX2_SIZES), subs)
    st_ = ASSIGNORS["sticky"].factory().assign_partitions(ppt(EX2_SIZES), subs)
    # The javadoc's outputs: round robin C0 [t0p0], C1 [t1p0], C2 [t1p1, t2p0, t2p1, t2p2]; sticky C0 [t0p0],
    # C1 [t1p0, t1p1], C2 [t2p0, t2p1, t2p2].
    assert rr == {"C0": tps("t0-0"), "C1": tps("t1-0"), "C2": tps("t1-1", "t2-0", "t2-1", "t2-2")}
    assert {c: set(v) for c, v in st_.items()} == {"C0": {tp("t0-0")}, "C1": set(tps("t1-0", "t1-1")),
                                                    "C2": set(tps("t2-0", "t2-1", "t2-2"))}
    rr_report = check_assignment(AssignmentSubject(ppt(EX2_SIZES), subs, rr))
    # C1 has 1, C2 has 4 (2+ more) and C1 subscribes to t1, which C2 holds t1-1 of: unbalanced, 4 - 1 - 1 = 2.
    (b,) = by_id(rr_report, "assignment.balanced")
    assert b.where == "member C2" and b.detail["could_take"] == {"C1": 1} and b.detail["excess"] == 2
    # Best: C0 can only ever hold t0-0 (or nothing); giving C1 both t1 partitions yields 1, 2, 3 (squares 14)
    # against round robin's 1, 1, 4 (18) or 0, 3, 3 (18). Round robin: 4 > 3 at rank 0, excess 1.
    (o,) = by_id(rr_report, "assignment.optimally-balanced")
    assert (o.detail["counts"], o.detail["best_counts"], o.detail["excess"]) == ([4, 1, 1], [3, 2, 1], 1)
    assert optimal_counts(AssignmentSubject(ppt(EX2_SIZES), subs, st_)) == {"C0": 1, "C1": 2, "C2": 3}
    assert check_assignment(AssignmentSubject(ppt(EX2_SIZES), subs, st_)).violations == ()


def test_javadoc_example_2_stickiness_after_c0_leaves():
    # Round robin's first assignment, then C0 leaves; the javadoc: round robin preserves 3 assignments
    # (C1 [t0p0, t1p1], C2 [t1p0, t2p0, t2p1, t2p2]), sticky 5 (C1 [t1p0, t1p1, t0p0], C2 [t2p*]).
    subs = {c: EX2_SUBS[c] for c in ("C1", "C2")}
    owned = {"C1": ["t1-0"], "C2": ["t1-1", "t2-0", "t2-1", "t2-2"]}
    rr = subject(EX2_SIZES, subs, {"C1": ["t0-0", "t1-1"], "C2": ["t1-0", "t2-0", "t2-1", "t2-2"]}, owned)
    # 5 previously owned; t1-0 and t1-1 swap owners: 2 moved. With counts C1 = 2, C2 = 4, C1 can keep
    # t1-0 and take t0-0 while C2 keeps its 4: 0 moves needed.
    assert movement(rr)[:3] == (5, 2, 0)
    (v,) = by_id(check_assignment(rr), "assignment.sticky")
    assert (v.detail["moved"], v.detail["bound"], v.detail["excess"]) == (2, 0, 2)
    sticky_owned = {"C1": ["t1-0", "t1-1"], "C2": ["t2-0", "t2-1", "t2-2"]}
    st_ = subject(EX2_SIZES, subs, {"C1": ["t1-0", "t1-1", "t0-0"], "C2": ["t2-0", "t2-1", "t2-2"]}, sticky_owned)
    assert movement(st_)[:3] == (5, 0, 0) and check_assignment(st_).violations == ()


def test_javadoc_example_1_round_robin_moves_two_sticky_none():
    sizes = {t: 2 for t in ("t0", "t1", "t2", "t3")}
    subs = {c: Subscription(tuple(sizes)) for c in ("C0", "C1", "C2")}
    first = ASSIGNORS["roundrobin"].factory().assign_partitions(ppt(sizes), subs)
    # Both assignors: C0 [t0p0, t1p1, t3p0], C1 [t0p1, t2p0, t3p1], C2 [t1p0, t2p1].
    assert first == {"C0": tps("t0-0", "t1-1", "t3-0"), "C1": tps("t0-1", "t2-0", "t3-1"), "C2": tps("t1-0", "t2-1")}
    sticky = ASSIGNORS["sticky"].factory()
    assert sticky.assign_partitions(ppt(sizes), subs) == first
    # C1 leaves. Round robin: C0 [t0p0, t1p0, t2p0, t3p0], C2 [t0p1, t1p1, t2p1, t3p1]: t1-1 and t1-0 trade
    # places (2 moves) where counts 4, 4 let C0 keep its 3 and C2 its 2 (0 moves).
    left = {c: Subscription(tuple(sizes), serialize_topic_partition_assignment(first[c], 1), tuple(first[c]), 1)
            for c in ("C0", "C2")}
    rr = ASSIGNORS["roundrobin"].factory().assign_partitions(ppt(sizes), left)
    assert rr == {"C0": tps("t0-0", "t1-0", "t2-0", "t3-0"), "C2": tps("t0-1", "t1-1", "t2-1", "t3-1")}
    assert movement(AssignmentSubject(ppt(sizes), left, rr))[:3] == (5, 2, 0)
    kept = sticky.assign_partitions(ppt(sizes), left)
    assert movement(AssignmentSubject(ppt(sizes), left, kept))[:3] == (5, 0, 0)


def test_kafka_balance_accepts_a_chain_the_optimum_evens_out():
    # u subscribes to t1, w to t1 and t2, v to t2; 3 partitions each. u 1 (t1-0), w 2 (t1-1, t1-2), v 3 (t2-*):
    # no direct transfer helps (u cannot take t2; neighbours differ by 1), so Kafka calls it balanced, yet
    # w -> u (t1-1) and v -> w (t2-0) reach 2, 2, 2.
    s = subject({"t1": 3, "t2": 3}, {"u": ["t1"], "w": ["t1", "t2"], "v": ["t2"]},
                {"u": ["t1-0"], "w": ["t1-1", "t1-2"], "v": ["t2-0", "t2-1", "t2-2"]})
    r = check_assignment(s)
    assert by_id(r, "assignment.balanced") == []
    (o,) = by_id(r, "assignment.optimally-balanced")
    assert o.where == "member v" and o.detail["best_counts"] == [2, 2, 2] and o.detail["excess"] == 1
    assert (o.detail["sum_of_squares"], o.detail["best_sum_of_squares"]) == (14, 12)
    assert optimal_counts(s) == {"u": 2, "w": 2, "v": 2}


def test_sticky_bound_counts_unavoidable_moves_and_generation_ties():
    subs = {"c1": ["t"], "c2": ["t"]}
    # c1 owned all 4, c2 joined: 2 must move to reach 2, 2; moving t-2, t-3 is optimal, not a violation.
    s = subject({"t": 4}, subs, {"c1": ["t-0", "t-1"], "c2": ["t-2", "t-3"]}, {"c1": ["t-0", "t-1", "t-2", "t-3"]})
    assert movement(s)[:3] == (4, 2, 2) and by_id(check_assignment(s), "assignment.sticky") == []
    # c1 owned t-0, t-1, c2 t-2, t-3, and the assignor swapped t-1 and t-2: 2 moves where 0 suffice.
    s = subject({"t": 4}, subs, {"c1": ["t-0", "t-2"], "c2": ["t-1", "t-3"]},
                {"c1": ["t-0", "t-1"], "c2": ["t-2", "t-3"]})
    (v,) = by_id(check_assignment(s), "assignment.sticky")
    assert v.where == "group" and v.detail["moved_partitions"] == ["t-1", "t-2"] and v.detail["excess"] == 2
    # Both claim t-0 in generation 3: nobody is its previous owner (KAFKA-12984); generation 4 beats 3.
    tie = subject({"t": 1}, subs, {"c1": ["t-0"]}, {"c1": ["t-0"], "c2": ["t-0"]}, gens={"c1": 3, "c2": 3})
    assert tie.previous_owner == {}
    newer = subject({"t": 1}, subs, {"c1": ["t-0"]}, {"c1": ["t-0"], "c2": ["t-0"]}, gens={"c1": 3, "c2": 4})
    assert newer.previous_owner == {tp("t-0"): "c2"}
    # Owned partitions of a topic the owner dropped do not count: it could not keep them.
    dropped = subject({"t": 1, "u": 1}, {"c1": ["u"], "c2": ["t"]}, {"c1": ["u-0"], "c2": ["t-0"]}, {"c1": ["t-0"]})
    assert "assignment.sticky" in check_assignment(dropped).skipped


def test_rack_quality_against_the_best_with_the_same_counts():
    racks = {"t-0": "a", "t-1": "b"}
    subs = {"c1": ["t"], "c2": ["t"]}
    # c1 in rack a, c2 in b: swapping the two partitions puts both in a replica's rack (2 of 2).
    crossed = subject({"t": 2}, subs, {"c1": ["t-1"], "c2": ["t-0"]}, racks=racks, member_racks={"c1": "a", "c2": "b"})
    (v,) = by_id(check_assignment(crossed), "assignment.rack-quality")
    assert (v.detail["matched"], v.detail["best"], v.detail["share"], v.detail["best_share"], v.detail["excess"]) \
        == (0, 2, 0.0, 1.0, 2)
    straight = subject({"t": 2}, subs, {"c1": ["t-0"], "c2": ["t-1"]}, racks=racks, member_racks={"c1": "a", "c2": "b"})
    assert rack_placement(straight) == (2, 2, 2)
    # Counts fixed at 2, 0: c1 (rack a) must hold both, so 1 of 2 is the best.
    lopsided = subject({"t": 2}, subs, {"c1": ["t-0", "t-1"], "c2": []}, racks=racks,
                       member_racks={"c1": "a", "c2": "b"})
    assert rack_placement(lopsided) == (2, 1, 1)
    assert "assignment.rack-quality" in check_assignment(subject({"t": 2}, subs, {"c1": ["t-0", "t-1"]},
                                                                 racks=racks)).skipped
    assert "assignment.rack-quality" in check_assignment(subject({"t": 2}, subs, {"c1": ["t-0", "t-1"]},
                                                                 member_racks={"c1": "a"})).skipped


# --- properties -----------------------------------------------------------------------------------------

TOPICS = ("t1", "t2", "t3")
RACKS = ("r0", "r1", "r2")


@st.composite
def groups(draw, max_members: int = 5, max_partitions: int = 5):
    """Topics (with replica racks or not), members (subscription, rack) and a previous exclusive assignment."""
    sizes = {t: draw(st.integers(1, max_partitions)) for t in TOPICS[: draw(st.integers(1, len(TOPICS)))]}
    with_racks = draw(st.booleans())
    infos = {t: [PartitionInfo(t, i, None, tuple(Broker(b, RACKS[b % 3] if with_racks else None)
                                                 for b in dict.fromkeys(((i + k) % 6, (i + k + 1) % 6))))
                 for i in range(n)] for k, (t, n) in enumerate(sizes.items())}
    members = [f"c{i}" for i in range(1, draw(st.integers(1, max_members)) + 1)]
    subs = {m: draw(st.lists(st.sampled_from(list(sizes)), min_size=1, max_size=len(sizes), unique=True))
            for m in members}
    racks = {m: draw(st.sampled_from((None, *RACKS))) for m in members}
    owner = {TopicPartition(t, i): draw(st.sampled_from((None, *members))) for t, n in sizes.items()
             for i in range(n)}
    previous = {m: [p for p, o in owner.items() if o == m] for m in members}
    return infos, subs, racks, previous


def subscriptions_for(name: str, subs, racks, previous) -> dict[str, Subscription]:
    """What each protocol's members send, all from generation 1 (so no older-generation claims)."""
    out = {}
    for m, topics in subs.items():
        owned = tuple(p for p in previous[m] if p.topic in topics)  # cooperative members drop these first
        if name == "sticky":  # eager: owned partitions revoked, the previous assignment travels as user data
            out[m] = Subscription(tuple(topics), serialize_topic_partition_assignment(previous[m], 1), (), 1, racks[m])
        else:
            out[m] = Subscription(tuple(topics), None, owned, 1, racks[m])
    return out


def run_rounds(name: str, infos, subs: dict[str, Subscription]) -> list[AssignmentSubject]:
    """Run the assignor, then its cooperative follow-ups while members revoke (CooperativeStickyAssignorTest)."""
    infos = build_partitions_per_topic(infos, subs)  # only subscribed topics, as AbstractPartitionAssignor.assign
    info = ASSIGNORS[name]
    assignor = info.factory()
    rounds = []
    while True:
        out = assignor.assign_partitions(infos, subs)
        rounds.append(AssignmentSubject(infos, subs, out, info.cooperative))
        revoked = any(set(s.owned_partitions) - set(out.get(m, [])) for m, s in subs.items())
        if not (info.cooperative and revoked):
            return rounds
        assert len(rounds) <= MAX_FOLLOW_UPS  # CooperativeStickyAssignorTest: rebalances <= 4
        subs = {m: Subscription(s.topics, s.user_data, tuple(out.get(m, [])), 2 + len(rounds), s.rack_id)
                for m, s in subs.items()}


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky", "uniform"])
@given(group=groups())
def test_balancing_assignors_keep_their_guarantees(name, group):
    infos, subs, racks, previous = group
    rounds = run_rounds(name, infos, subscriptions_for(name, subs, racks, previous))
    for r in rounds:
        report = check_assignment(r, set(ASSIGNORS[name].guarantees))
        assert report.violations == (), report.violations
    for r1, r2 in itertools.pairwise(rounds):
        assert check_two_rounds(r1, r2) == []
    assert "assignment.balanced" in check_assignment(rounds[-1]).checked  # the final round is judged


@given(group=groups())
def test_the_flow_optimum_is_never_worse_than_any_assignor(group):
    infos, subs, racks, previous = group
    for name in ASSIGNORS:
        s = run_rounds(name, infos, subscriptions_for(name, subs, racks, previous))[0]
        have = sorted(s.counts.values(), reverse=True)
        best = sorted(optimal_counts(s).values(), reverse=True)
        assert sum(best) == sum(have) and best <= have  # decreasingly minimal: lexicographically first
        assert sum(n * n for n in best) <= sum(n * n for n in have)
        assert best[0] <= have[0] and best[-1] >= have[-1]
        mv, rp = movement(s), rack_placement(s)
        assert mv.fewest_moves <= mv.moved and rp.matched <= rp.best <= rp.partitions


@given(group=groups(max_members=3, max_partitions=2))
def test_flow_answers_match_brute_force(group):
    """On tiny groups, enumerate every assignment of the placed partitions to subscribers."""
    infos, subs, racks, previous = group
    s = run_rounds("roundrobin", infos, subscriptions_for("cooperative-sticky", subs, racks, previous))[0]
    placed = sorted(s.placed)
    choices = [[m for m in s.subscriptions if p.topic in s.eligible[m]] for p in placed]
    best_sq, best_keep, best_rack = None, -1, -1
    counts = s.counts
    for combo in itertools.product(*choices):
        c = Counter(combo)
        sq = sum(n * n for n in c.values())
        best_sq = sq if best_sq is None else min(best_sq, sq)
        if all(c.get(m, 0) == counts[m] for m in s.subscriptions):
            best_keep = max(best_keep, sum(s.previous_owner.get(p) == m for p, m in zip(placed, combo, strict=True)))
            best_rack = max(best_rack, sum(s.subscriptions[m].rack_id in {b.rack for b in s.infos[p].replicas
                                                                           if b.rack} for p, m in
                                           zip(placed, combo, strict=True)))
    assert sum(n * n for n in optimal_counts(s).values()) == (best_sq or 0)
    prev = sum(1 for p in placed if p in s.previous_owner)
    assert movement(s).fewest_moves == prev - max(best_keep, 0)
    assert rack_placement(s).best == max(best_rack, 0)


@st.composite
def arbitrary_subjects(draw):
    """Groups with arbitrary (often wrong) assignments, cooperative or not."""
    infos, subs, racks, previous = draw(groups(max_members=4, max_partitions=4))
    names = list(subs)
    pool = [TopicPartition(t, i) for t in infos for i in range(len(infos[t]) + 1)]  # one missing per topic
    assignment = {m: draw(st.lists(st.sampled_from(pool), max_size=5)) for m in names}
    if draw(st.booleans()):
        assignment["ghost"] = draw(st.lists(st.sampled_from(pool), max_size=2))
    subscriptions = {m: Subscription(tuple(subs[m]), None, tuple(previous[m]), draw(st.sampled_from((None, 1, 2))),
                                     racks[m]) for m in names}
    return AssignmentSubject(infos, subscriptions, assignment, draw(st.booleans()))


@given(s=arbitrary_subjects(), data=st.data())
def test_renaming_members_preserves_violation_counts(s, data):
    members = sorted(set(s.subscriptions) | set(s.assignment))
    images = data.draw(st.permutations([f"m{i}" for i in range(len(members))]))
    names = dict(zip(members, images, strict=True))

    def tally(subject: AssignmentSubject) -> Counter[str]:
        return Counter(v.invariant for v in check_assignment(subject).violations)

    assert tally(renamed(s, names)) == tally(s)
