"""The NumPy twins against the scalar reference: AdminUtils' replica lists, every placement invariant, the metrics,
and whole id ranges of the space (vectorised and hybrid paths against `evaluate_scalar`)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcheck.invariants import BalanceSettings, PlacementSubject, check_placement
from kcheck.invariants.prover import RACK_NAMES, ScriptedRandom
from kcheck.model import Cluster, ReplicaAssignment
from kcheck.reference.placement import assign_replicas_to_brokers, rack_alternated_broker_list
from kcheck.spark_check import vector
from kcheck.spark_check.placement_space import (
    PLACEMENT_PRESETS,
    PlacementConfig,
    PlacementSpace,
    moved_partitions,
    parse_placement_bounds,
    rack_spread,
    skews,
)


@st.composite
def clusters(draw, max_brokers=9):
    """(n, rack sizes or None): brokers 0.. fill rack a, then b, ..."""
    n = draw(st.integers(1, max_brokers))
    if draw(st.booleans()):
        return n, None
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=min(n - 1, 5)))) if n > 1 else []
    bounds = [0, *cuts, n]
    return n, tuple(b - a for a, b in zip(bounds, bounds[1:], strict=False))


def layout_arrays(n, sizes):
    rack_of = np.zeros((1, n), dtype=np.int64)
    if sizes is None:
        return np.arange(n)[None], rack_of, np.zeros((1, 0), dtype=np.int64), {}
    racks = {b: RACK_NAMES[r] for r, size in enumerate(sizes) for b in
             range(sum(sizes[:r]), sum(sizes[:r]) + size)}
    rack_of[0] = [RACK_NAMES.index(racks[b]) for b in range(n)]
    arranged = np.array([rack_alternated_broker_list(racks)])
    return arranged, rack_of, np.array([sizes]), racks


@given(clusters(), st.integers(1, 40), st.data())
def test_adminutils_twin_gives_kafkas_replica_lists(cluster, partitions, data):
    n, sizes = cluster
    rf = data.draw(st.integers(1, n))
    draws = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=1, max_size=4))
    arranged, rack_of, _, racks = layout_arrays(n, sizes)
    got = vector.adminutils_replicas(arranged, rack_of, 0 if sizes is None else len(sizes),
                                     np.array([d[0] for d in draws]), np.array([d[1] for d in draws]), partitions, rf)
    brokers = list(Cluster.of(range(n), racks).brokers)
    for i, (start, shift) in enumerate(draws):
        # Kafka draws the start index first, then the shift: ScriptedRandom replays exactly those two draws
        expected = assign_replicas_to_brokers(brokers, partitions, rf, -1, -1, ScriptedRandom([start, shift]))
        assert got[0, i].tolist() == [expected[p] for p in range(partitions)]


def test_adminutils_twin_on_kafkas_documented_example():
    # AdminUtils' javadoc: 5 brokers, 10 partitions, RF 3, start index 0 (the shift is the start index too).
    arranged, rack_of, _, _ = layout_arrays(5, None)
    got = vector.adminutils_replicas(arranged, rack_of, 0, np.array([0]), np.array([0]), 10, 3)
    assert got[0, 0].tolist() == [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1],
                                  [0, 2, 3], [1, 3, 4], [2, 4, 0], [3, 0, 1], [4, 1, 2]]


def test_rack_aware_twin_on_kafkas_test_vector():
    # AdminRackAwareTest: racks {0:r1,1:r3,2:r3,3:r2,4:r2,5:r1} -> alternated [0,3,1,5,4,2]; start 0, RF 3, 7
    # partitions. Our layout names racks by position, so map Kafka's brokers onto contiguous racks: the
    # alternated list is what the algorithm walks, and it only compares racks for equality.
    racks = {0: "r1", 1: "r3", 2: "r3", 3: "r2", 4: "r2", 5: "r1"}
    arranged = np.array([rack_alternated_broker_list(racks)])
    rack_of = np.array([[{"r1": 0, "r2": 1, "r3": 2}[racks[b]] for b in range(6)]])
    got = vector.adminutils_replicas(arranged, rack_of, 3, np.array([0]), np.array([0]), 7, 3)
    expected = assign_replicas_to_brokers(list(Cluster.of(range(6), racks).brokers), 7, 3, 0)
    assert got[0, 0].tolist() == [expected[p] for p in range(7)]
    assert expected[0] == [0, 3, 1]  # Kafka's test: partition 0 -> 0,3,1


INVARIANTS = ["placement.distinct-brokers", "placement.replication-factor", "placement.leader-spread",
              "placement.leader-spread-rack", "placement.replica-spread", "placement.rack-diversity",
              "placement.rack-distribution", "placement.leader-unfenced", "placement.follower-spread",
              "placement.topic-replica-spread", "placement.max-replicas-per-broker"]


@settings(max_examples=150)
@given(clusters(max_brokers=7), st.integers(1, 9), st.data())
def test_invariant_twins_flag_exactly_what_the_scalar_checks_flag(cluster, partitions, data):
    """Random replica arrays, duplicates and all, checked for every prefix against `check_placement`."""
    n, sizes = cluster
    rf = data.draw(st.integers(1, min(n, 4) if data.draw(st.booleans()) else 4))
    d = data.draw(st.integers(1, 3))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rnd = np.random.default_rng(seed)
    reps = rnd.integers(0, n, size=(1, d, partitions, rf))
    grown = rnd.integers(0, n + 1, size=(1, d, partitions, rf))
    _, rack_of, size_arr, racks = layout_arrays(n, sizes)
    st_ = BalanceSettings(max_replicas_per_broker=data.draw(st.sampled_from([10_000, 3, 5])))
    checks = vector.check_placements(reps, n, rack_of, size_arr, st_, grown)
    cluster_ = Cluster.of(range(n), racks)
    for i in range(d):
        for p in range(1, partitions + 1):
            placement = {q: reps[0, i, q].tolist() for q in range(p)}
            report = check_placement(PlacementSubject(cluster_, ReplicaAssignment.from_placement("t", placement),
                                                      st_, replication_factor=rf))
            flagged = {v.invariant for v in report.violations}
            for inv in INVARIANTS:
                applies, violated = checks.invariants[inv]
                assert applies == (inv in report.checked), inv
                assert (applies and bool(violated[0, i, p - 1])) == (inv in flagged), (inv, i, p, placement)
            leader, replica = skews(cluster_, placement)
            assert checks.metrics["leader-skew"][0, i, p - 1] == leader
            assert checks.metrics["replica-skew"][0, i, p - 1] == replica
            if sizes is not None:
                assert checks.metrics["rack-spread"][0, i, p - 1] == rack_spread(cluster_, placement)
            after = {q: grown[0, i, q].tolist() for q in range(p)}
            assert checks.metrics["moved-partitions"][0, i, p - 1] == moved_partitions(placement, after)


def _norm(result):
    return (dict(result.checked), {k: v for k, v in result.violated.items() if v},
            {k: (f.config_id, f.where, f.message, dict(f.detail), dict(f.config)) for k, f in result.first.items()},
            {k: dict(v) for k, v in result.metrics.items()})


@pytest.mark.parametrize("placers, space_text, ranges, longest", [
    (["adminutils"], "default", 8, 1_500),
    (["striped"], "brokers=1..7,racks=0..3,partitions=1..10,rf=1..4,seeds=3", 6, 1_500),
    (["adminutils", "striped"], "small", 4, 3_000),
])
def test_space_evaluates_like_the_scalar_reference(placers, space_text, ranges, longest):
    """Whole id ranges, cut anywhere: counts, smallest violations with their detail, and metric histograms."""
    space = PlacementSpace(parse_placement_bounds(space_text), placers)
    rnd = random.Random(7)
    for _ in range(ranges):
        start = rnd.randrange(len(space))
        stop = min(len(space), start + rnd.randrange(1, longest))
        assert _norm(space.evaluate(start, stop)) == _norm(space.evaluate_scalar(start, stop)), (start, stop)


def test_smallest_rack_distribution_violation_agrees_with_the_scalar_path():
    """Around Kafka's 3+2 racks, RF 4 finding in the default space: the vectorised path's smallest violation
    is one for the scalar path, and the scalar path finds none just before it."""
    space = PlacementSpace(PLACEMENT_PRESETS["default"])
    i = space.index(PlacementConfig("adminutils", 5, (3, 2), 1, 4, 1, 1))
    first = space.evaluate(i - 2_000, i + 1).first["adminutils/placement.rack-distribution"]
    assert space.evaluate_scalar(first.config_id, first.config_id + 1).violated[
        "adminutils/placement.rack-distribution"] == 1
    assert space.evaluate_scalar(i - 2_000, first.config_id).violated["adminutils/placement.rack-distribution"] == 0
