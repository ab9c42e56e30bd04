"""The consumer-group configuration space (spark_check.groups): sizes, ids, evaluation, fast checks, bounds.

No Spark here: the space is tested directly. Expected sizes come from a closed formula and a brute-force
enumeration written here; expected outcomes on a tiny space are worked out by hand from Kafka's range,
round-robin and cooperative-sticky rules (reference notes, section 4) in the comments of each test.
"""

from __future__ import annotations

import itertools
import json
import pickle
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcheck.inputs.group_file import parse_group, run_assignor
from kcheck.invariants import REGISTRY, AssignmentSubject
from kcheck.invariants.assignment import renamed
from kcheck.model import Broker, PartitionInfo, Subscription, TopicPartition
from kcheck.reference.assignors.registry import ASSIGNORS, resolve_assignor
from kcheck.spark_check import groups
from kcheck.spark_check.batch import merge
from kcheck.spark_check.groups import (
    ASSIGNOR_ERROR,
    DEFAULT_EVENTS,
    EVENTS,
    GROUP_PRESETS,
    GroupBounds,
    GroupSpace,
    RackLayout,
    parse_group_bounds,
)
from kcheck.spark_check.groups_fast import (
    FastChecks,
    evenly_spread,
    racks_matched_where_possible,
    unavoidable_moves,
)

NONE, TWO_RACKS = RackLayout(), RackLayout(2, 1)
# One topic of 1 or 2 partitions, 1 or 2 members (every member subscribes to t1), no racks, the four
# one-step events (rejoins have their own tests): 12 groups.
TINY = GroupBounds(max_members=2, max_topics=1, max_partitions=2, racks=(NONE,),
                   events=("join", "leave", "subscribe", "add-partitions"))


# --- sizes ------------------------------------------------------------------------------------------------


def closed_form(b: GroupBounds) -> int:
    """Sum over topics T, partition counts, layouts and members M of choices^M x events, by arithmetic."""
    total = 0
    for t in range(1, b.max_topics + 1):
        s = {"equal": 1, "nested": t, "any": 2 ** t - 1}[b.subscriptions]
        for layout in b.racks:
            r = 1 if not layout.racks else layout.racks + b.rackless_members
            for m in range(1, b.max_members + 1):
                events = ((s * r if "join" in b.events else 0)
                          + (m if "leave" in b.events and m >= 2 else 0)
                          + (m * (s - 1) if "subscribe" in b.events else 0)
                          + (t * b.max_added if "add-partitions" in b.events else 0)
                          + (m * s if "rejoin" in b.events and m >= 2 else 0)
                          + (m * s * s * r if "rejoin-join" in b.events and m >= 2 else 0))
                total += b.max_partitions ** t * (s * r) ** m * events
    return total


@pytest.mark.parametrize("name", list(GROUP_PRESETS))
def test_preset_sizes_match_the_closed_form(name):
    b = GROUP_PRESETS[name]
    space = GroupSpace(b)
    assert space.group_count == closed_form(b) == b.group_count()
    assert len(space) == closed_form(b) * len(ASSIGNORS)


def test_default_checks_every_assignor_on_a_million_groups():
    assert GroupSpace(GROUP_PRESETS["default"]).group_count >= 1_000_000
    assert 1_000 <= GroupSpace(GROUP_PRESETS["small"]).group_count <= 5_000


def test_tiny_space_counted_by_hand():
    # P=1 or 2 partitions; M=1: join, add-partitions; M=2: join, c1 leaves, c2 leaves, add-partitions.
    # (2 + 4) per partition count, two partition counts: 12 groups.
    assert GroupSpace(TINY, ["range"]).group_count == 12
    assert len(GroupSpace(TINY)) == 12 * 6


@pytest.mark.parametrize("bounds", [
    TINY,
    GroupBounds(max_members=2, max_topics=2, max_partitions=2, racks=(NONE, TWO_RACKS), max_added=2),
    GroupBounds(max_members=3, max_topics=2, max_partitions=1, subscriptions="nested", rackless_members=True,
                racks=(NONE, RackLayout(3, 2)), events=("join", "subscribe")),
    GroupBounds(max_members=2, max_topics=3, max_partitions=1, subscriptions="equal", events=("leave",)),
    GroupBounds(max_members=3, max_topics=2, max_partitions=1, racks=(NONE, TWO_RACKS),
                events=("rejoin", "rejoin-join")),
])
def test_ids_enumerate_exactly_the_brute_force_configurations_in_order(bounds):
    space = GroupSpace(bounds, ["range", "sticky"])
    got = [canonical(space[i]) for i in range(len(space))]
    assert got == brute_force(bounds, ["range", "sticky"])
    assert [space[i].id for i in range(len(space))] == list(range(len(space)))


def canonical(c):
    ev = c.event
    joiner = None if ev.joiner is None else (ev.joiner.name, ev.joiner.topics, ev.joiner.rack)
    return (c.partitions, c.layout, tuple((m.name, m.topics, m.rack) for m in c.members),
            (ev.kind, ev.member, ev.topics, ev.rack, ev.topic, ev.count, joiner), c.assignor)


def brute_force(b: GroupBounds, assignors: list[str]) -> list[tuple]:
    """Every configuration, built with nested products, sorted by the documented order: members + partitions,
    members, topics, partition counts, layout; then membership (c1 most significant), event, assignor."""
    out = []
    for t in range(1, b.max_topics + 1):
        topics = tuple(f"t{x + 1}" for x in range(t))
        subsets = [c for k in range(1, t + 1) for c in itertools.combinations(topics, k)]
        subs = {"equal": [topics], "nested": [topics[:k] for k in range(1, t + 1)], "any": subsets}[b.subscriptions]
        for parts in itertools.product(range(1, b.max_partitions + 1), repeat=t):
            for layout in sorted(b.racks):
                racks = [None]
                if layout.racks:
                    racks = ([None] if b.rackless_members else []) + [f"r{i}" for i in range(layout.racks)]
                for m in range(1, b.max_members + 1):
                    key = (m + sum(parts), m, t, parts, layout)
                    for members in itertools.product(itertools.product(subs, racks), repeat=m):
                        named = tuple((f"c{i + 1}", s, r) for i, (s, r) in enumerate(members))
                        events = []
                        if "join" in b.events:
                            events += [("join", f"c{m + 1}", s, r, None, 0, None) for s in subs for r in racks]
                        if "leave" in b.events and m >= 2:
                            events += [("leave", n, (), None, None, 0, None) for n, _, _ in named]
                        if "subscribe" in b.events:
                            events += [("subscribe", n, s, None, None, 0, None) for n, cur, _ in named for s in subs
                                       if s != cur]
                        if "add-partitions" in b.events:
                            events += [("add-partitions", None, (), None, f"t{x + 1}", d, None)
                                       for x in range(t) for d in range(1, b.max_added + 1)]
                        if "rejoin" in b.events and m >= 2:
                            events += [("rejoin", n, s, None, None, 0, None) for n, _, _ in named for s in subs]
                        if "rejoin-join" in b.events and m >= 2:
                            events += [("rejoin-join", n, s, None, None, 0, (f"c{m + 1}", js, jr))
                                       for n, _, _ in named for s in subs for js in subs for jr in racks]
                        for ev in events:
                            for a in assignors:
                                out.append((key, (parts, layout, named, ev, a)))
    out.sort(key=lambda kv: kv[0])  # stable: within a shape, the product order above
    return [cfg for _, cfg in out]


def test_ids_go_from_small_groups_to_large():
    space = GroupSpace(GROUP_PRESETS["small"])
    weights = [(len(c.members) + sum(c.partitions), len(c.members))
               for c in (space[i] for i in range(0, len(space), 7))]
    assert weights == sorted(weights)
    first, last = space[0], space[len(space) - 1]
    assert (len(first.members), first.partitions) == (1, (1,))
    assert (len(last.members), last.partitions) == (2, (2, 2))


def test_out_of_range_ids_and_bad_assignors_are_refused():
    space = GroupSpace(TINY, ["range"])
    for bad in (-1, 12, 10**9):
        with pytest.raises(IndexError, match="outside 0..11"):
            space[bad]
    with pytest.raises(ValueError, match="unknown assignor 'ranged'"):
        GroupSpace(TINY, ["ranged"])
    with pytest.raises(ValueError, match="given twice"):
        GroupSpace(TINY, ["range", "range"])
    with pytest.raises(ValueError, match="cannot import module"):
        GroupSpace(TINY, ["no_such_module_here:X"])


def test_pickles_small_and_evaluates_the_same_after_a_trip():
    space = GroupSpace(GROUP_PRESETS["small"])
    before = space.evaluate(100, 400)  # builds the tables and assignor infos, which must not travel
    data = pickle.dumps(space)
    assert len(data) < 1_000
    again = pickle.loads(data)
    assert len(again) == len(space) and again[357] == space[357]
    after = again.evaluate(100, 400)
    assert (after.checked, after.violated, after.first, after.metrics) == \
        (before.checked, before.violated, before.first, before.metrics)


def test_evaluate_of_a_range_equals_the_merge_of_its_halves():
    space = GroupSpace(GROUP_PRESETS["small"])
    whole = space.evaluate(1_200, 3_000)
    parts = merge([space.evaluate(2_111, 3_000), space.evaluate(1_200, 2_111)])
    assert (parts.start, parts.stop) == (whole.start, whole.stop) == (1_200, 3_000)
    assert parts.checked == whole.checked and parts.violated == whole.violated
    assert parts.first == whole.first and parts.metrics == whole.metrics
    # every configuration is counted once for the check every config makes
    assert sum(whole.checked[f"{a}/{ASSIGNOR_ERROR}"] for a in ASSIGNORS) == 1_800


@pytest.mark.parametrize("fraction", [0.0, 0.3, 0.7, 0.99])
def test_one_round_1_serves_every_event_as_a_fresh_group_would(fraction):
    """evaluate runs round 1 once per membership and copies the group (assignor instances included) for each
    event; every event's rounds must equal those of a group built from scratch for that configuration."""
    space = GroupSpace(GROUP_PRESETS["default"])
    group_id = int(space.group_count * fraction)
    first = space[group_id * 6]
    events = [space[i] for i in range(group_id * 6, (group_id + 40) * 6) if space[i].members == first.members
              and space[i].partitions == first.partitions and space[i].layout == first.layout]
    for name in ASSIGNORS:
        configs = [c for c in events if c.assignor == name]
        info = ASSIGNORS[name]
        shared = groups._run_round1(configs[0], info, FastChecks())
        for c in configs:
            after = [r for rounds in groups._round2(c, info, shared, {}, 2) for r in rounds]
            fresh = groups._SweepGroup(info, c.topics, layout=c.layout)
            for m in c.members:
                fresh.join(m.name, m.topics, m.rack)
            fresh_rounds = fresh.rebalance()
            rebalances: list = []
            groups._apply(fresh, c.event, rebalances)
            fresh_rounds += [r for rounds in rebalances for r in rounds]
            assert [r.subject.assignment for r in [*shared.rounds, *after]] == \
                [r.subject.assignment for r in fresh_rounds], (name, c.event.text)


# --- outcomes worked out by hand ----------------------------------------------------------------------------

# TINY's 12 groups in id order (shapes by members + partitions, then members: M1P1, M1P2, M2P1, M2P2; events
# join, leave c1, leave c2, add-partitions). Round 1: the earlier members from scratch; round 2 after the event.
#  0 a: c1, P1, c2 joins          1 b: c1, P1, t1 gains 1      2 g: c1, P2, c2 joins       3 h: c1, P2, +1
#  4 c: c1 c2, P1, c3 joins       5 d: c1 c2, P1, c1 leaves    6 e: ..., c2 leaves         7 f: c1 c2, P1, +1
#  8 i: c1 c2, P2, c3 joins       9 j: c1 c2, P2, c1 leaves   10 k: ..., c2 leaves        11 l: c1 c2, P2, +1


def test_range_on_the_tiny_space():
    """Range gives each member P // C and the first P % C members (sorted by id) one more, in partition order.

    Only l moves a partition it need not: round 1 c1 [t1-0], c2 [t1-1]; with 3 partitions range gives
    c1 [t1-0, t1-1], c2 [t1-2], moving t1-1 though c1 could have kept t1-0 and taken t1-2 (0 moves needed).
    Stickiness does not apply to d: c1 owned the only partition and left, c2 owned nothing.
    Counts are within 1 everywhere (one topic, every member subscribes): balanced in all 12.
    """
    space = GroupSpace(TINY, ["range"])
    r = space.evaluate(0, len(space))
    expected = {"assignment.complete": (12, 0), "assignment.valid": (12, 0), "assignment.balanced": (12, 0),
                "assignment.optimally-balanced": (12, 0), "assignment.sticky": (11, 1), ASSIGNOR_ERROR: (12, 0)}
    for inv in (ASSIGNOR_ERROR, *[i for i in REGISTRY if i.startswith("assignment.")]):
        key = f"range/{inv}"
        assert (r.checked[key], r.violated[key]) == expected.get(inv, (0, 0)), inv
    first = r.first["range/assignment.sticky"]
    assert first.config_id == 11
    assert first.config["event"]["text"] == "t1 gains 1 partition"
    assert first.message == ("round 2: 1 of 2 previously owned partition(s) moved (t1-1); "
                             "0 move(s) suffice for the same per-member counts")
    assert first.detail["assignments"] == [{"c1": ["t1-0"], "c2": ["t1-1"]},
                                           {"c1": ["t1-0", "t1-1"], "c2": ["t1-2"]}]
    # moved partitions: g moves t1-1 to the joining c2 (unavoidable) and l moves t1-1; nothing else moves
    assert r.metrics["range/moved-partitions"] == Counter({0: 10, 1: 2})
    assert set(space.invariant_ids()) >= set(r.checked)


def test_roundrobin_keeps_l_sticky():
    # Round-robin deals t1-0, t1-1, t1-2 to c1, c2, c1: c2 keeps t1-1. Only g moves (unavoidably).
    r = GroupSpace(TINY, ["roundrobin"]).evaluate(0, 12)
    assert (r.checked["roundrobin/assignment.sticky"], r.violated["roundrobin/assignment.sticky"]) == (11, 0)
    assert r.metrics["roundrobin/moved-partitions"] == Counter({0: 11, 1: 1})


def test_cooperative_sticky_hands_over_in_a_follow_up_round():
    """KIP-429: in g, c1 owns t1-0 and t1-1 when c2 joins. Round 2 keeps c1 at its quota of 1 and withholds
    t1-1 while c1 revokes it; a follow-up round (3) gives it to c2. No other group moves a partition."""
    space = GroupSpace(TINY, ["cooperative-sticky"])
    r = space.evaluate(0, 12)
    assert r.metrics["cooperative-sticky/follow-up-rebalances"] == Counter({0: 11, 1: 1})
    assert r.metrics["cooperative-sticky/moved-partitions"] == Counter({0: 11, 1: 1})
    safety = "cooperative-sticky/assignment.cooperative-safety"
    assert (r.checked[safety], r.violated[safety]) == (12, 0)
    # round 2 withholds, so balance is judged on round 3: checked in every config, never violated
    assert (r.checked["cooperative-sticky/assignment.balanced"], r.violated["cooperative-sticky/assignment.balanced"]) \
        == (12, 0)


USER_ASSIGNORS = '''
from kcheck.reference.assignors.client import RangeAssignor
from kcheck.reference.assignors.registry import AssignorInfo


class DropsThird(RangeAssignor):
    """Range, except that it forgets every partition 2."""
    def assign_partitions(self, ppt, subs):
        return {m: [tp for tp in tps if tp.partition != 2] for m, tps in super().assign_partitions(ppt, subs).items()}


class ThrowsForTwo:
    def assign_partitions(self, ppt, subs):
        if len(subs) > 1:
            raise ZeroDivisionError("two is too many")
        return {m: [p.tp for ps in ppt.values() for p in ps] for m in subs}


class Stranger:
    def assign_partitions(self, ppt, subs):
        return {"nobody": []}


class AllToFirst:
    def assign_partitions(self, ppt, subs):
        first = next(iter(subs))
        return {m: [p.tp for ps in ppt.values() for p in ps] if m == first else [] for m in subs}


PROMISES_BALANCE = AssignorInfo("promises-balance", AllToFirst, False, frozenset({"assignment.balanced"}))


class CooperativeRange(RangeAssignor):
    """Range, handing a partition to a new owner only once the old one has revoked it (KIP-429's rule)."""
    def assign_partitions(self, ppt, subs):
        owner = {tp: m for m, s in subs.items() for tp in s.owned_partitions}
        return {m: [tp for tp in tps if owner.get(tp, m) == m]
                for m, tps in super().assign_partitions(ppt, subs).items()}


COOPERATIVE_RANGE = AssignorInfo("cooperative-range", CooperativeRange, True, frozenset())
'''


@pytest.fixture
def user_assignors(tmp_path, monkeypatch):
    (tmp_path / "sweep_user_assignors.py").write_text(USER_ASSIGNORS)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_broken_user_assignor_is_caught_with_the_smallest_group(user_assignors):
    # Partition 2 exists only in round 2 of h (group 3) and l (group 11), after t1 grows from 2 to 3.
    # With two assignors, group g is ids 2g (range) and 2g + 1 (the broken one).
    space = GroupSpace(TINY, ["range", "sweep_user_assignors:DropsThird"])
    r = space.evaluate(0, len(space))
    key = "sweep_user_assignors:DropsThird/assignment.complete"
    assert (r.checked[key], r.violated[key]) == (12, 2)
    first = r.first[key]
    assert first.config_id == 7 and first.config["assignor"] == "sweep_user_assignors:DropsThird"
    assert first.where == "partition t1-2"
    assert first.message == "round 2: partition t1-2 is assigned to no member, though c1 subscribes to t1"
    assert space.invariant_info(key).fails and not space.invariant_info(key).guaranteed
    assert r.violated["range/assignment.complete"] == 0


def test_a_throwing_user_assignor_fails_its_rebalances(user_assignors):
    # Fails whenever a round has two members: rounds 1 of the six M=2 groups... all eight (c..f, i..l), and
    # round 2 of the joins a and g. Where round 1 fails nothing else is checked: complete only in a, b, g, h.
    name = "sweep_user_assignors:ThrowsForTwo"
    r = GroupSpace(TINY, [name]).evaluate(0, 12)
    assert (r.checked[f"{name}/{ASSIGNOR_ERROR}"], r.violated[f"{name}/{ASSIGNOR_ERROR}"]) == (12, 10)
    assert (r.checked[f"{name}/assignment.complete"], r.violated[f"{name}/assignment.complete"]) == (4, 0)
    first = r.first[f"{name}/{ASSIGNOR_ERROR}"]
    assert first.config_id == 0 and first.where == "group"
    assert first.message.startswith(f"round 2: {name} throws ZeroDivisionError: two is too many")
    assert first.detail["exception"] == "UserAssignorError"


def test_user_assignor_output_that_kafka_could_not_send_fails_the_rebalance(user_assignors):
    name = "sweep_user_assignors:Stranger"
    r = GroupSpace(TINY, [name]).evaluate(0, 1)
    assert r.violated[f"{name}/{ASSIGNOR_ERROR}"] == 1
    assert "assigned partitions to 'nobody', which is not a member" in r.first[f"{name}/{ASSIGNOR_ERROR}"].message


def test_a_cooperative_rebalance_is_also_judged_sticky_as_a_whole(user_assignors):
    """In l (c1 [t1-0], c2 [t1-1]; t1 grows to 3), range wants c1 [t1-0, t1-1], c2 [t1-2]. The cooperative rule
    withholds t1-1 in round 2 while c2 revokes it, so round 2 moves nothing it places, and in round 3 nobody
    owns t1-1 any more: no single round shows the move. As a whole, t1-1 moved though c2 could have kept it
    (counts 2 and 1: c1 keeps t1-0 and takes t1-2). In g (c1 owns both, c2 joins) the one move is forced."""
    name = "sweep_user_assignors:COOPERATIVE_RANGE"
    r = GroupSpace(TINY, [name]).evaluate(0, 12)
    key = f"{name}/assignment.sticky"
    assert (r.checked[key], r.violated[key]) == (11, 1)
    first = r.first[key]
    assert first.config_id == 11
    assert first.message == ("rounds 2-3 as a whole: 1 of 2 previously owned partition(s) moved (t1-1); "
                             "0 move(s) suffice for the same per-member counts")
    assert first.detail["assignments"] == [{"c1": ["t1-0"], "c2": ["t1-1"]}, {"c1": ["t1-0"], "c2": ["t1-2"]},
                                           {"c1": ["t1-0", "t1-1"], "c2": ["t1-2"]}]
    assert r.metrics[f"{name}/follow-up-rebalances"] == Counter({0: 10, 1: 2})


def test_user_guarantees_decide_what_fails(user_assignors):
    """AllToFirst gives everything to the first member: with equal subscriptions that is unbalanced whenever a
    round has 2 members and 2+ partitions: round 1 of i, j, k, l; round 2 of g (c2 joins c1's two partitions)
    and f (t1 grows to 2 with two members). Its AssignorInfo promises balance, so those fail the sweep."""
    name = "sweep_user_assignors:PROMISES_BALANCE"
    space = GroupSpace(TINY, [name, "range"])
    assert space.invariant_info(f"{name}/assignment.balanced").fails
    assert not space.invariant_info("range/assignment.balanced").fails  # a finding: range does not promise it
    r = space.evaluate(0, len(space))
    key = f"{name}/assignment.balanced"
    assert (r.checked[key], r.violated[key]) == (12, 6)
    assert r.first[key].config_id == 4  # group g (2), first of the two assignors
    with pytest.raises(KeyError):
        space.invariant_info("sticky/assignment.balanced")


def test_kafka_guarantees_and_severities_per_key():
    space = GroupSpace(TINY)
    info = space.invariant_info("sticky/assignment.balanced")
    assert (info.assignor, info.invariant, info.severity, info.guaranteed, info.fails) == \
        ("sticky", "assignment.balanced", "soft", True, True)
    assert not space.invariant_info("range/assignment.optimally-balanced").fails
    assert space.invariant_info("server-range/assignment.complete").fails
    assert space.invariant_info(f"uniform/{ASSIGNOR_ERROR}").fails
    ids = space.invariant_ids()
    assert len(ids) == len(set(ids)) == 6 * (1 + len([i for i in REGISTRY if i.startswith("assignment.")]))


def test_describe_is_json_and_replays_round_1_through_kcheck_assign():
    """The description's topics and members are a `kcheck assign` group file: running the assignor on it
    through kcheck.inputs.group_file (a different path from the rebalance model) gives round 1's assignment."""
    space = GroupSpace(GROUP_PRESETS["small"])
    r = space.evaluate(0, len(space) // 3)
    assert r.first, "the small space has findings (range is not sticky, for one)"
    for first in r.first.values():
        doc = json.loads(json.dumps(first.config))
        group = parse_group(json.dumps({"topics": doc["topics"], "members": doc["members"]}), "described")
        run = run_assignor(resolve_assignor(doc["assignor"]), group)
        round1 = {m: [str(tp) for tp in tps] for m, tps in run.assignment.items()}
        assert round1 == first.detail["assignments"][0]
        assert doc["story"][-2] == doc["event"]["text"]


def test_racked_configurations_describe_replica_racks():
    space = GroupSpace(GroupBounds(max_members=1, max_topics=2, max_partitions=2, racks=(RackLayout(3, 2),)),
                       ["range"])
    c = next(space[i] for i in range(len(space)) if space[i].partitions == (2, 1))
    # replica j of partition i of the x-th topic on broker (i + j + x) % 6, broker b in rack r{b % 3}
    assert c.describe()["topics"] == {"t1": {"partitions": 2, "racks": [["r0", "r1"], ["r1", "r2"]]},
                                      "t2": {"partitions": 1, "racks": [["r1", "r2"]]}}


# --- fast decisions against the registry's checks ---------------------------------------------------------

FLOW_CHECKS = ("assignment.optimally-balanced", "assignment.sticky", "assignment.rack-quality")
SHARED = FastChecks()  # memo shared across examples: hits on equal keys from different groups are exercised


@st.composite
def subjects(draw):
    """Small groups with arbitrary (often unbalanced, sometimes invalid) assignments and ownership."""
    sizes = {t: draw(st.integers(1, 3)) for t in ("t1", "t2", "t3")[: draw(st.integers(1, 3))]}
    racked = draw(st.booleans())
    infos = {t: [PartitionInfo(t, i, None, tuple(Broker(b, f"r{b % 2}" if racked else None)
                                                 for b in draw(st.sets(st.integers(0, 2), min_size=1, max_size=2))))
                 for i in range(n)] for t, n in sizes.items()}
    members = [f"c{i}" for i in range(1, draw(st.integers(1, 4)) + 1)]
    pool = [TopicPartition(t, i) for t, n in sizes.items() for i in range(n)]
    subs = {}
    for m in members:
        topics = draw(st.lists(st.sampled_from(list(sizes)), min_size=1, max_size=len(sizes), unique=True))
        owned = draw(st.lists(st.sampled_from(pool), max_size=3, unique=True))
        subs[m] = Subscription(tuple(topics), None, tuple(owned), draw(st.sampled_from((None, 1, 2))),
                               draw(st.sampled_from((None, "r0", "r1"))))
    valid = draw(st.booleans())
    assignment: dict[str, list[TopicPartition]] = {m: [] for m in members}
    for p in pool:
        takers = [m for m in members if p.topic in subs[m].topics] if valid else members
        if takers and draw(st.integers(0, 9)) > 0:
            assignment[draw(st.sampled_from(takers))].append(p)
    return AssignmentSubject(infos, subs, assignment, draw(st.booleans()))


@settings(max_examples=300)
@given(s=subjects(), data=st.data())
def test_fast_decisions_equal_the_registry_checks(s, data):
    for inv in FLOW_CHECKS:
        check = REGISTRY[inv]
        if check.not_applicable(s) is not None:
            continue
        violated = bool(check.check(s))
        assert FastChecks().violated(inv, s) == violated, inv
        assert SHARED.violated(inv, s) == violated, inv
        members = list(s.subscriptions)
        names = dict(zip(members, data.draw(st.permutations(members)), strict=True))
        assert SHARED.violated(inv, renamed(s, names)) == violated, inv


NARROW = FastChecks()


@st.composite
def narrow_subjects(draw):
    """Few shapes (two small topics, two or three members, valid assignments that may leave a partition out),
    so that many subjects share a memo key and a key that misses something the measure reads gets caught."""
    sizes = {"t1": draw(st.integers(1, 3)), "t2": draw(st.integers(1, 2))}
    pool = [TopicPartition(t, i) for t, n in sizes.items() for i in range(n)]
    infos = {t: [PartitionInfo(t, i, None, (Broker(0, draw(st.sampled_from(("r0", "r1")))),)) for i in range(n)]
             for t, n in sizes.items()}
    members = [f"c{i}" for i in range(1, draw(st.integers(2, 3)) + 1)]
    subs = {m: Subscription(draw(st.sampled_from([("t1",), ("t2",), ("t1", "t2")])), None,
                            tuple(draw(st.lists(st.sampled_from(pool), max_size=3, unique=True))),
                            draw(st.sampled_from((1, 2))), draw(st.sampled_from((None, "r0", "r1"))))
            for m in members}
    assignment: dict[str, list[TopicPartition]] = {m: [] for m in members}
    for p in pool:
        takers = [m for m in members if p.topic in subs[m].topics]
        if takers and draw(st.integers(0, 5)) > 0:
            assignment[draw(st.sampled_from(takers))].append(p)
    return AssignmentSubject(infos, subs, assignment)


@pytest.mark.slow  # 1,000 examples (~13 s)
@settings(max_examples=1_000)
@given(s=narrow_subjects())
def test_memo_keys_hold_everything_the_measures_read(s):
    for inv in FLOW_CHECKS:
        if REGISTRY[inv].not_applicable(s) is None:
            assert NARROW.violated(inv, s) == bool(REGISTRY[inv].check(s)), inv


@settings(max_examples=300)
@given(s=subjects())
def test_shortcuts_only_clear_what_the_registry_clears(s):
    for inv, shortcut in (("assignment.optimally-balanced", evenly_spread), ("assignment.sticky", unavoidable_moves),
                          ("assignment.rack-quality", racks_matched_where_possible)):
        if REGISTRY[inv].not_applicable(s) is None and shortcut(s):
            assert REGISTRY[inv].check(s) == [], inv


def test_sticky_memo_tells_apart_groups_with_the_same_counts_but_other_owners():
    """Same topics (t1, t2: 2 partitions each), same (subscription, count) per member, one move each; past the
    count bound of unavoidable_moves both times. In A, c2 owned both t1 partitions and c1 (t1 only) must take
    one: 1 move is the fewest, no violation. In B, c2 owned only t1-1 and could have kept it: 0 moves needed."""
    infos = {t: [PartitionInfo(t, i) for i in range(2)] for t in ("t1", "t2")}
    t1_0, t1_1, t2_0, t2_1 = TopicPartition("t1", 0), TopicPartition("t1", 1), TopicPartition("t2", 0), \
        TopicPartition("t2", 1)
    a = AssignmentSubject(infos, {"c1": Subscription(("t1",), None, (), 1),
                                  "c2": Subscription(("t1", "t2"), None, (t1_0, t1_1, t2_1), 1)},
                          {"c1": [t1_0], "c2": [t1_1, t2_0, t2_1]})
    b = AssignmentSubject(infos, {"c1": Subscription(("t1", "t2"), None, (), 1),
                                  "c2": Subscription(("t1",), None, (t1_1,), 1)},
                          {"c1": [t1_1, t2_0, t2_1], "c2": [t1_0]})
    fast = FastChecks()
    assert not unavoidable_moves(a) and not unavoidable_moves(b)
    assert fast.violated("assignment.sticky", a) is False
    assert fast.violated("assignment.sticky", b) is True


def test_shortcut_is_not_the_whole_decision():
    # c1 holds both t1 partitions, c2 (same subscription) none: counts 2 and 0 are 2 apart, so evenly_spread
    # cannot clear it, and the memoised optimum [1, 1] decides: violated.
    infos = {"t1": [PartitionInfo("t1", i) for i in range(2)]}
    subs = {"c1": Subscription(("t1",)), "c2": Subscription(("t1",))}
    s = AssignmentSubject(infos, subs, {"c1": [TopicPartition("t1", 0), TopicPartition("t1", 1)], "c2": []})
    assert not evenly_spread(s)
    assert FastChecks().violated("assignment.optimally-balanced", s) is True
    assert FastChecks().violated("assignment.complete", s) is None  # no fast form: the registry's check runs


# --- bounds -------------------------------------------------------------------------------------------------


def test_parse_presets_and_overrides():
    assert parse_group_bounds("small") == GROUP_PRESETS["small"]
    b = parse_group_bounds("max_members=3, racks=none,3/2, events=join,leave, rackless_members=true")
    assert (b.max_members, b.racks, b.events, b.rackless_members) == \
        (3, (NONE, RackLayout(3, 2)), ("join", "leave"), True)
    assert b.max_partitions == GROUP_PRESETS["default"].max_partitions  # the rest from default
    assert parse_group_bounds("events=add-partitions,join").events == ("join", "add-partitions")  # Kafka-event order
    assert parse_group_bounds("racks=2").racks == (RackLayout(2, 1),)
    small3 = parse_group_bounds("small, max_members=3")  # overrides on top of the preset named first
    assert (small3.max_members, small3.max_partitions) == (3, GROUP_PRESETS["small"].max_partitions)
    for preset in GROUP_PRESETS.values():
        assert parse_group_bounds(preset.as_text()) == preset
    assert set(DEFAULT_EVENTS) == set(parse_group_bounds("default").events) == set(EVENTS) - {"rejoin-join"}


@pytest.mark.parametrize("text, message", [
    ("huge", "group space 'huge' is neither a preset (small, default, large) nor key=value bounds"),
    ("", "empty group space (expected small, default, large"),
    ("small,large", "group space: 'large' is not key=value"),
    ("max_members=x", "group space: max_members must be an integer, got 'x'"),
    ("max_members=0", "group bounds: max_members must be an integer from 1 to 12, got 0"),
    ("members=3", "group space: unknown key 'members' (expected max_members, max_topics"),
    ("max_topics=2,max_topics=3", "group space: 'max_topics' is given twice"),
    ("max_topics=2,3", "group space: '3' is not key=value (max_topics takes one value)"),
    ("racks=3/7", "rack layout 3/7: the replication factor must be 1 to 6 (6 brokers in 3 racks)"),
    ("racks=two", "rack layout 'two' is not 'none' or RACKS/REPLICATION like '3/2'"),
    ("racks=none,0", "group bounds: racks must list distinct rack layouts"),
    ("events=join,explode", "group bounds: events must be distinct names among join, leave, subscribe, "
                            "add-partitions, rejoin, rejoin-join, got join, explode"),
    ("subscriptions=some", "group bounds: subscriptions must be one of equal, nested, any, got 'some'"),
    ("rackless_members=maybe", "group space: rackless_members must be true or false, got 'maybe'"),
])
def test_bad_bounds_are_one_clear_line(text, message):
    with pytest.raises(ValueError) as e:
        parse_group_bounds(text)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_a_stray_assert_in_the_reference_propagates_out_of_the_sweep(monkeypatch):
    """The sweep records the model's verdicts (ModelFailure: a Kafka exception, a group that does not settle)
    as assignment.assignor-error; an AssertionError from inside the reference is a kcheck bug and surfaces."""
    from kcheck.reference.assignors.client import RangeAssignor

    def broken(self, ppt, subscriptions):
        raise AssertionError("a bug in the reference")

    monkeypatch.setattr(RangeAssignor, "assign_partitions", broken)
    with pytest.raises(AssertionError, match="a bug in the reference"):
        GroupSpace(TINY, ["range"]).evaluate(0, 1)


def test_rejoin_events_report_stale_claims_as_findings():
    """A rejoin: c1 times out, the group rebalances without it, c1 rejoins with its client state (rounds 2
    and 3). Kafka's StickyAssignor hands c1 back a stale claim of a topic it dropped: a soft finding, never
    a failure, with the group file that replays round 3; validity does not count it as violated."""
    space = GroupSpace(parse_group_bounds("max_members=3,max_topics=2,max_partitions=2,racks=none,events=rejoin"),
                       ["sticky"])
    r = space.evaluate(0, len(space))
    key = "sticky/assignment.stale-claim"
    info = space.invariant_info(key)
    assert (info.severity, info.guaranteed, info.fails) == ("soft", False, False)
    assert r.violated[key] > 0 and r.violated["sticky/assignment.valid"] == 0
    assert not [k for k in r.first if space.invariant_info(k).fails]
    first = r.first[key]
    assert first.config["members"] == {"c1": {"topics": ["t1"], "rack": None},
                                       "c2": {"topics": ["t1", "t2"], "rack": None},
                                       "c3": {"topics": ["t1", "t2"], "rack": None}}
    assert first.config["topics"] == {"t1": 1, "t2": 2} and first.config["event"]["topics"] == ["t2"]
    assert first.message.startswith("round 3: stale-claim violation: member c1 is assigned t1-0")
    replay = run_assignor(ASSIGNORS["sticky"], parse_group(json.dumps(first.detail["replay"]), "replay.json"))
    assert replay.assignment["c1"] == [TopicPartition("t1", 0)]
    assert first.detail["assignments"][-1]["c1"] == ["t1-0"]
