"""Placement invariants: hand-worked examples with their numbers, and Hypothesis properties."""

import math
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from kcheck.invariants import REGISTRY, BalanceSettings, PlacementSubject, Severity, balance_limits, check_placement
from kcheck.invariants.placement import topic_balance_limits
from kcheck.model import Cluster, PartitionReplicas, ReplicaAssignment
from kcheck.reference.placement import assign_replicas_to_brokers


def subject(placement, racks=None, n=None, topic="t", fenced=(), **kw):
    n = n if n is not None else 1 + max(b for r in placement.values() for b in r)
    cluster = Cluster.of(range(n), racks, fenced)
    return PlacementSubject(cluster, ReplicaAssignment.from_placement(topic, placement), **kw)


def by_id(report, inv):
    return [v for v in report.violations if v.invariant == inv]


def test_cruise_control_limits():
    # avg 10/3, threshold 1.10: p = 0.1 * 0.9 = 0.09 -> upper ceil(3.633) = 4, lower floor(3.033) = 3.
    assert balance_limits(10 / 3, 1.10, 0.9) == (3, 4)
    # threshold 1.0 leaves no slack: exactly floor/ceil of the average.
    assert balance_limits(2.5, 1.0, 0.9) == (2, 3)
    # TopicReplicaDistributionGoal, threshold 3.0 (p = 1.8): avg 5 -> upper ceil(14.0) = 14, inside
    # [ceil(avg)+2, ceil(avg)+40]; lower floor(5 * max(0, -0.8)) = 0. avg 0.5 -> upper ceil(1.4) = 2,
    # raised to the minimum gap ceil(0.5)+2 = 3.
    assert topic_balance_limits(5.0, BalanceSettings()) == (0, 14)
    assert topic_balance_limits(0.5, BalanceSettings()) == (0, 3)
    # avg 50: upper ceil(140) capped at ceil(avg)+40 = 90; lower 0 raised to floor(avg)-40 = 10.
    assert topic_balance_limits(50.0, BalanceSettings()) == (10, 90)


def test_distinct_brokers_names_partition_and_broker():
    r = check_placement(subject({0: [0, 1], 1: [2, 2]}, n=3))
    (v,) = by_id(r, "placement.distinct-brokers")
    assert v.severity is Severity.HARD and v.where == "partition t-1" and v.detail["duplicated"] == [2]


def test_replication_factor_against_declared_and_lowest_partition():
    r = check_placement(subject({0: [0, 1, 2], 1: [1, 2], 2: [2, 0, 1, 3]}, n=4))
    found = {v.where: v.detail["excess"] for v in by_id(r, "placement.replication-factor")}
    assert found == {"partition t-1": -1, "partition t-2": 1}
    declared = PlacementSubject(Cluster.of(range(2)), ReplicaAssignment(
        (PartitionReplicas("t", 0, (0, 1)),), {"t": 3}))
    messages = [v.message for v in check_placement(declared).violations]
    assert "topic t has replication factor 3 but the cluster has only 2 broker(s)" in messages
    assert "partition t-0 has 2 replica(s), topic t has replication factor 3" in messages


def test_leader_and_replica_spread_numbers():
    # 6 partitions RF 2 on 3 brokers, all led by broker 0: leaders avg 2 -> limits 1..3 (floor(1.82), ceil(2.18)).
    r = check_placement(subject({p: [0, 1 + p % 2] for p in range(6)}, n=3))
    leaders = {v.detail["broker"]: (v.detail["count"], v.detail["excess"]) for v in by_id(r, "placement.leader-spread")}
    assert leaders == {0: (6, 3), 1: (0, -1), 2: (0, -1)}
    # replicas: 12 over 3 = avg 4 -> limits 3..5; broker 0 holds 6 (1 over), 1 and 2 hold 3 (inside).
    replicas = {v.detail["broker"]: v.detail["excess"] for v in by_id(r, "placement.replica-spread")}
    assert replicas == {0: 1}
    assert all(v.severity is Severity.SOFT for v in r.violations if v.invariant.endswith("spread"))


def test_rack_diversity_and_distribution():
    racks = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c"}
    # p0 spans a only (needs 2 racks), p1 spans a,b: fine, p2: RF 4 > 3 racks, a=2 b=2 c=0 spans 2 of
    # 3 racks, and c has a free broker -> not as even as possible; p3: a=2,b=1,c=1 is the even split.
    r = check_placement(subject({0: [0, 1], 1: [0, 2], 2: [0, 1, 2, 3], 3: [0, 1, 2, 4]}, racks))
    div = {v.where: (v.detail["racks_spanned"], v.detail["racks_needed"]) for v in by_id(r, "placement.rack-diversity")}
    assert div == {"partition t-0": (1, 2), "partition t-2": (2, 3)}
    (dist,) = by_id(r, "placement.rack-distribution")
    assert dist.where == "partition t-2" and dist.detail["replicas_per_rack"] == {"a": 2, "b": 2, "c": 0}


def test_rack_distribution_accepts_what_rack_sizes_force():
    # a single-broker rack cannot hold 2 of 4 replicas: a=3, b=1 is the best possible.
    r = check_placement(subject({0: [0, 1, 2, 3]}, {0: "a", 1: "a", 2: "a", 3: "b"}))
    assert by_id(r, "placement.rack-distribution") == []


def test_rack_invariants_skip_without_racks_and_say_why():
    r = check_placement(subject({0: [0, 1]}))
    assert r.skipped["placement.rack-diversity"] == "no broker has a rack"


def test_follower_spread_per_leader():
    # broker 0 leads 4 partitions, followers all on broker 1: 4 follower slots over brokers 1,2,3
    # -> avg 4/3, limits floor(1.21)=1 .. ceil(1.45)=2; broker 1 has 4, brokers 2 and 3 have 0.
    r = check_placement(subject({p: [0, 1] for p in range(4)}, n=4))
    (v,) = by_id(r, "placement.follower-spread")
    assert v.detail["followers_per_broker"] == {1: 4, 2: 0, 3: 0} and (v.detail["lower"], v.detail["upper"]) == (1, 2)


def test_max_replicas_per_broker():
    r = check_placement(subject({p: [0] for p in range(5)}, n=1, settings=BalanceSettings(max_replicas_per_broker=3)))
    (v,) = by_id(r, "placement.max-replicas-per-broker")
    assert v.detail == {"broker": 0, "count": 5, "limit": 3, "excess": 2}


def test_leader_unfenced_and_fenced_brokers_leave_balance_averages():
    r = check_placement(subject({0: [1, 0], 1: [0, 1]}, n=2, fenced=[1]))
    (v,) = by_id(r, "placement.leader-unfenced")
    assert v.where == "partition t-0"
    assert {v.detail["broker"] for v in by_id(r, "placement.leader-spread")} <= {0}


def test_reassignment_in_progress_is_checked_on_its_target():
    p = PartitionReplicas("t", 0, (1, 2, 3, 4), adding=(4,), removing=(1,))
    s = PlacementSubject(Cluster.of(range(1, 5)), ReplicaAssignment((p,)), replication_factor=3)
    assert check_placement(s, {"placement.replication-factor"}).violations == ()


def test_every_invariant_is_documented():
    for inv in REGISTRY.values():
        assert inv.title and inv.source and inv.applies_to in {"placement", "assignment", "replication", "reassignment",
                                                                 "partition-health", "log", "log-dirs", "log-dump"}


assignments = st.dictionaries(
    st.integers(0, 15), st.lists(st.integers(0, 7), min_size=1, max_size=5), min_size=1, max_size=16)


@given(assignments)
def test_distinct_brokers_flags_exactly_the_partitions_with_repeats(placement):
    r = check_placement(subject(placement, n=8), {"placement.distinct-brokers"})
    flagged = {v.detail["partition"] for v in r.violations}
    assert flagged == {f"t-{p}" for p, reps in placement.items() if len(set(reps)) < len(reps)}


@given(assignments, st.permutations(range(8)))
def test_broker_relabelling_preserves_violation_counts(placement, perm):
    relabelled = {p: [perm[b] for b in reps] for p, reps in placement.items()}
    a = Counter(v.invariant for v in check_placement(subject(placement, n=8)).violations)
    b = Counter(v.invariant for v in check_placement(subject(relabelled, n=8)).violations)
    assert a == b


@given(assignments, st.floats(1.0, 2.0))
def test_replica_spread_flags_the_brokers_outside_the_limits(placement, threshold):
    s = subject(placement, n=8, settings=BalanceSettings(replica_threshold=threshold))
    counts = Counter(b for reps in placement.values() for b in reps)
    avg = sum(counts.values()) / 8
    p = (threshold - 1) * 0.9
    lo, hi = math.floor(avg * max(0, 1 - p)), math.ceil(avg * (1 + p))
    expected = {b for b in range(8) if not lo <= counts.get(b, 0) <= hi}
    flagged = {v.detail["broker"] for v in check_placement(s, {"placement.replica-spread"}).violations}
    assert flagged == expected


@given(st.integers(1, 9), st.integers(1, 30), st.integers(1, 4), st.integers(0, 20))
def test_adminutils_rack_unaware_keeps_its_guarantees(n, parts, rf, start):
    rf = min(rf, n)
    s = subject(assign_replicas_to_brokers(list(Cluster.of(range(n)).brokers), parts, rf, start),
                n=n, replication_factor=rf)
    hard_or_leader = {"placement.distinct-brokers", "placement.replication-factor", "placement.leader-spread"}
    assert check_placement(s, hard_or_leader).violations == ()
