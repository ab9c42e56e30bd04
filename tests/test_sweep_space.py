"""The placement space: sizes, id order, bounds parsing, pickling, users' placers, and a Kafka finding.

Sizes are counted here with a closed formula (compositions of n brokers into k racks:
C(n-1, k-1)), independent of the space's tables; the id order is checked against a
plain nested-loop enumeration.
"""

from __future__ import annotations

import pickle
from math import comb

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcheck.invariants.exhaustive import rack_layouts
from kcheck.reference.placement import assign_replicas_to_brokers
from kcheck.spark_check.placement_space import (
    PLACEMENT_PRESETS,
    PLACER_ERROR,
    PlacementBounds,
    PlacementConfig,
    PlacementSpace,
    parse_placement_bounds,
)


def formula_size(b: PlacementBounds, draws_per_n=lambda n: n * n) -> int:
    total = 0
    for n in range(b.brokers[0], b.brokers[1] + 1):
        layouts = (1 if b.racks[0] == 0 else 0) + sum(comb(n - 1, k - 1) for k in range(max(1, b.racks[0]),
                                                                                          min(b.racks[1], n) + 1))
        rfs = max(0, min(b.rf[1], n) - b.rf[0] + 1)
        total += layouts * (b.partitions[1] - b.partitions[0] + 1) * rfs * draws_per_n(n)
    return total


def test_small_preset_size_by_hand():
    # n=1: 2 layouts (none, one rack) x 6 partitions x RF 1 x 1 draw = 12; n=2: 3 x 6 x 2 x 4 = 144;
    # n=3: 5 x 6 x 3 x 9 = 810; n=4: 8 x 6 x 3 x 16 = 2,304; n=5: 12 x 6 x 3 x 25 = 5,400.
    assert len(PlacementSpace(PLACEMENT_PRESETS["small"])) == 8_670


@pytest.mark.parametrize("preset", ["small", "default", "large"])
def test_preset_sizes_match_the_formula(preset):
    bounds = PLACEMENT_PRESETS[preset]
    assert len(PlacementSpace(bounds)) == formula_size(bounds)
    striped = PlacementSpace(bounds, ["striped"])
    assert len(striped) == formula_size(bounds, lambda n: bounds.seeds)
    assert len(PlacementSpace(bounds, ["adminutils", "striped"])) == len(PlacementSpace(bounds)) + len(striped)


def test_default_preset_holds_ten_million():
    assert len(PlacementSpace(PLACEMENT_PRESETS["default"])) >= 10_000_000


def _nested_loops(bounds: PlacementBounds, placers: list[str]) -> list[tuple]:
    out = []
    for placer in placers:
        for n in range(bounds.brokers[0], bounds.brokers[1] + 1):
            layouts = []
            for layout in rack_layouts(n, bounds.racks[1], labelled=False):
                sizes = None if layout is None else tuple(
                    sum(1 for r in layout.values() if r == name) for name in sorted(set(layout.values())))
                if (0 if sizes is None else len(sizes)) >= bounds.racks[0]:
                    layouts.append(sizes)
            for sizes in layouts:
                for p in range(bounds.partitions[0], bounds.partitions[1] + 1):
                    for rf in range(bounds.rf[0], min(bounds.rf[1], n) + 1):
                        if placer == "striped":
                            out += [(placer, n, sizes, p, rf, -1, -1, s) for s in range(bounds.seeds)]
                        else:
                            out += [(placer, n, sizes, p, rf, a, b, -1) for a in range(n) for b in range(n)]
    return out


@pytest.mark.parametrize("bounds", [
    PlacementBounds(brokers=(1, 4), racks=(0, 3), partitions=(1, 3), rf=(1, 3), seeds=2),
    PlacementBounds(brokers=(2, 5), racks=(2, 2), partitions=(3, 4), rf=(2, 3), seeds=3),
])
def test_ids_follow_the_nested_loop_order(bounds):
    space = PlacementSpace(bounds, ["adminutils", "striped"])
    expected = _nested_loops(bounds, ["adminutils", "striped"])
    got = [(c.placer, c.brokers, c.rack_sizes, c.partitions, c.rf, c.start_index, c.shift, c.seed) for c in space]
    assert got == expected
    assert [space.index(c) for c in space] == list(range(len(space)))


def test_smallest_cluster_first_then_smallest_topic():
    space = PlacementSpace(PLACEMENT_PRESETS["small"])
    clusters = [(c.brokers, 0 if c.rack_sizes is None else len(c.rack_sizes)) for c in space]
    assert clusters == sorted(clusters)  # fewest brokers, then fewest racks
    topics: dict[tuple, list[tuple[int, int]]] = {}
    for c in space:
        topics.setdefault((c.brokers, c.rack_sizes), []).append((c.partitions, c.rf))
    assert all(t == sorted(t) for t in topics.values())  # on one cluster: fewest partitions, then lowest RF


def test_index_errors():
    space = PlacementSpace(PLACEMENT_PRESETS["small"])
    with pytest.raises(IndexError):
        space[len(space)]
    with pytest.raises(IndexError):
        space[-1]
    with pytest.raises(ValueError, match="not in the space"):
        space.index(PlacementConfig("adminutils", 6, None, 1, 1, 0, 0))


@given(st.integers(0, 10_688_799))
def test_index_round_trips_on_the_default_space(i):
    space = _DEFAULT
    assert space.index(space[i]) == i


_DEFAULT = PlacementSpace(PLACEMENT_PRESETS["default"])


def test_space_pickles_small():
    space = PlacementSpace(PLACEMENT_PRESETS["default"], ["adminutils", "striped"])
    before = len(pickle.dumps(space))
    space.evaluate(0, 1000)  # builds the lookup tables
    assert len(pickle.dumps(space)) == before < 1_000
    again = pickle.loads(pickle.dumps(space))
    assert len(again) == len(space) and again[12345] == space[12345]


@pytest.mark.parametrize("text, expected", [
    ("small", PLACEMENT_PRESETS["small"]),
    ("default", PLACEMENT_PRESETS["default"]),
    ("small,brokers=2..4", PlacementBounds(brokers=(2, 4), racks=(0, 3), partitions=(1, 6), rf=(1, 3), seeds=4)),
    ("brokers=3,rf=2..3,seeds=5", PlacementBounds(brokers=(3, 3), rf=(2, 3), seeds=5)),
    ("large, racks=0..2 ,replication-factor=3", PlacementBounds(brokers=(1, 16), racks=(0, 2), partitions=(1, 48),
                                                               rf=(3, 3), seeds=64)),
])
def test_parse_bounds(text, expected):
    assert parse_placement_bounds(text) == expected


@pytest.mark.parametrize("text, message", [
    ("", "empty space"),
    ("huge", "unknown preset 'huge'"),
    ("brokers=1..x", "'brokers=1..x': expected brokers=N or brokers=LO..HI"),
    ("colour=3", "unknown bound 'colour'"),
    ("brokers=5..2", "brokers=5..2 is not a range"),
    ("racks=0..11", "racks=0..11 is not a range within 0..10"),
    ("seeds=1..3", "seeds is a count"),
    ("brokers=0..3", "brokers=0..3 is not a range within 1..63"),
])
def test_parse_bounds_errors_are_one_line(text, message):
    with pytest.raises(ValueError, match=message) as e:
        parse_placement_bounds(text)
    assert "\n" not in str(e.value)


def test_kafka_rack_distribution_finding_is_found():
    # Racks a = {0,1,2}, b = {3,4}, RF 4, start index 1, shift 1. By hand, following AdminUtils:
    # rack-alternated list [0,3,1,4,2]; leader arranged[1] = 3; shift x racks = 2; k=0: position
    # (1 + 1 + 2 % 4) % 5 = 4 -> broker 2 (rack a, new); k=1: position (1 + 1 + 3) % 5 = 0 -> broker 0
    # (every rack used: accepted); k=2: position (1 + 1 + 0) % 5 = 2 -> broker 1. Replicas [3,2,0,1]:
    # three on rack a, one on b although b has a free broker (Cruise Control's RackAwareDistributionGoal).
    space = PlacementSpace(parse_placement_bounds("brokers=5,racks=2,partitions=1..2,rf=4"))
    cfg = PlacementConfig("adminutils", 5, (3, 2), 1, 4, start_index=1, shift=1)
    assert cfg.place() == {0: [3, 2, 0, 1]}
    i = space.index(cfg)
    result = space.evaluate(i, i + 1)
    assert result.violated["adminutils/placement.rack-distribution"] == 1
    first = result.first["adminutils/placement.rack-distribution"]
    assert first.detail["replicas_per_rack"] == {"a": 3, "b": 1}
    assert first.config["replay"].endswith("--start-index 1")
    whole = space.evaluate(0, len(space))
    assert whole.first["adminutils/placement.rack-distribution"].config_id <= i
    assert whole.checked["adminutils/placement.rack-diversity"] == len(space)  # every config has racks
    assert whole.violated["adminutils/placement.rack-diversity"] == 0  # AdminUtils' documented guarantee


def test_replay_command_reproduces_the_configuration():
    space = PlacementSpace(PLACEMENT_PRESETS["small"])
    from kcheck.options import java_random

    for i in (0, 517, 4321, 8669):
        cfg = space[i]
        replay = cfg.describe()["replay"]
        assert "--seed" in replay or "--start-index" in replay
        brokers = list(cfg.cluster().brokers)
        if "--seed" in replay:
            seed = replay.split("--seed ")[1].split()[0]
            got = assign_replicas_to_brokers(brokers, cfg.partitions, cfg.rf, -1, -1, java_random(seed))
        else:
            got = assign_replicas_to_brokers(brokers, cfg.partitions, cfg.rf, cfg.start_index)
        assert got == cfg.place()


# A user's placer, loaded as test_sweep_space:clumsy_placer: AdminUtils, except that on three
# brokers it puts the leader twice, and on four it refuses to place anything.
def clumsy_placer(brokers, n_partitions, replication_factor, fixed_start_index=-1, start_partition_id=-1,
                  random=None):
    placed = assign_replicas_to_brokers(brokers, n_partitions, replication_factor, fixed_start_index,
                                        start_partition_id, random)
    if len(brokers) == 3:
        return {p: [r[0], *r[:-1]] for p, r in placed.items()}
    if len(brokers) == 4:
        raise RuntimeError("four brokers are not supported")
    return placed


def test_users_placer_runs_on_the_scalar_path():
    bounds = parse_placement_bounds("small,brokers=1..5")
    space = PlacementSpace(bounds, ["test_sweep_space:clumsy_placer"])
    key = "test_sweep_space:clumsy_placer/"
    result = space.evaluate(0, len(space))
    assert result.checked[key + PLACER_ERROR] == len(space)
    # configurations with 4 brokers: 8 layouts x 6 partitions x 3 RFs x 16 draws
    assert result.violated[key + PLACER_ERROR] == 8 * 6 * 3 * 16
    first_error = result.first[key + PLACER_ERROR]
    assert first_error.config["brokers"] == 4 and "four brokers" in first_error.message
    # duplicates on 3 brokers whenever RF >= 2: 5 layouts x 6 partitions x 2 RFs x 9 draws
    assert result.violated[key + "placement.distinct-brokers"] == 5 * 6 * 2 * 9
    first = result.first[key + "placement.distinct-brokers"]
    assert (first.config["brokers"], first.config["partitions"], first.config["replication_factor"]) == (3, 1, 2)
    assert first.config_id == min(i for i in range(len(space)) if space[i].brokers == 3 and space[i].rf == 2)
    info = space.invariant_info(key + "placement.distinct-brokers")
    assert info.fails and not info.guaranteed  # hard in the registry; a user's placer declares no guarantees


def test_space_rejects_bad_placers():
    with pytest.raises(ValueError, match="unknown placer 'nope'"):
        PlacementSpace(PLACEMENT_PRESETS["small"], ["nope"])
    with pytest.raises(ValueError, match="listed twice"):
        PlacementSpace(PLACEMENT_PRESETS["small"], ["adminutils", "adminutils"])


def _refusing_grown(error: Exception):
    """AdminUtils, except on the grown cluster (one broker more), where it raises `error`."""
    def place(brokers, n_partitions, replication_factor, fixed_start_index=-1, start_partition_id=-1, random=None):
        if len(brokers) == 4:
            raise error
        return assign_replicas_to_brokers(brokers, n_partitions, replication_factor, fixed_start_index,
                                          start_partition_id, random)
    return place


def test_only_kafkas_own_exceptions_drop_a_builtin_placers_metric(monkeypatch):
    """The scalar path catches what Kafka's placers raise on purpose (KafkaError); anything else from a
    built-in placer is a bug in the reference and propagates instead of silently dropping a metric."""
    from dataclasses import replace

    from kcheck.invariants import BalanceSettings
    from kcheck.reference.errors import InvalidReplicationFactorException
    from kcheck.spark_check import placement_space

    cfg = PlacementConfig("adminutils", 3, None, 2, 2, start_index=0, shift=0)
    builtin = placement_space.BUILTIN_PLACERS["adminutils"]
    assert "moved-partitions" in placement_space.scalar_outcome(cfg, builtin, BalanceSettings()).metrics
    refuses = replace(builtin, place=_refusing_grown(InvalidReplicationFactorException("refused")))
    monkeypatch.setitem(placement_space.BUILTIN_PLACERS, "adminutils", refuses)
    out = placement_space.scalar_outcome(cfg, refuses, BalanceSettings())
    assert out.error is None and "moved-partitions" not in out.metrics
    buggy = replace(builtin, place=_refusing_grown(AssertionError("a bug in the reference")))
    monkeypatch.setitem(placement_space.BUILTIN_PLACERS, "adminutils", buggy)
    with pytest.raises(AssertionError, match="a bug in the reference"):
        placement_space.scalar_outcome(cfg, buggy, BalanceSettings())
    # A user's placer may raise anything on the grown cluster: its metric is dropped, as before.
    user = replace(builtin, name="user", place=_refusing_grown(RuntimeError("no")))
    assert "moved-partitions" not in placement_space.scalar_outcome(cfg, user, BalanceSettings()).metrics
