"""KRaft's StripedReplicaPlacer against the vectors of Kafka's StripedReplicaPlacerTest (MockRandom)."""

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcheck.model import Broker
from kcheck.reference.errors import InvalidReplicationFactorException
from kcheck.reference.java import JavaRandom, MockRandom
from kcheck.reference.striped import BrokerList, PlacementSpec, RackList, StaticCluster, StripedReplicaPlacer


def B(i, rack=None, fenced=False):
    return Broker(i, rack, fenced)


def place(placer, n, rf, brokers, start=0, topic="topic", existing=None):
    cluster = StaticCluster(tuple(brokers), {topic: tuple(map(tuple, existing))} if existing else {})
    return placer.place(PlacementSpec(topic, start, n, rf), cluster).replicas()


def test_broker_list_rotates_once_per_epoch():
    bl = BrokerList().add(0).add(1).add(2).add(3)
    assert [bl.next(0) for _ in range(6)] == [0, 1, 2, 3, -1, -1]
    assert [bl.next(1) for _ in range(5)] == [1, 2, 3, 0, -1]
    assert BrokerList().next(1) == -1


def test_avoid_fenced_replica_if_possible_on_single_rack():
    rl = RackList(MockRandom(), [B(3), B(1, fenced=True), B(0), B(4), B(2)])
    assert (rl.num_total_brokers, rl.num_unfenced_brokers, rl.rack_names) == (5, 4, [None])
    for rf in (0, -1):
        with pytest.raises(InvalidReplicationFactorException):
            rl.place(rf)
    assert [rl.place(4) for _ in range(5)] == [[3, 4, 0, 2], [4, 0, 2, 3], [0, 2, 3, 4], [2, 3, 4, 0], [0, 4, 3, 2]]


def test_placement_on_fenced_replica_when_needed():
    rl = RackList(MockRandom(), [B(3), B(1, fenced=True), B(2)])
    assert [rl.place(3) for _ in range(4)] == [[3, 2, 1], [2, 3, 1], [3, 2, 1], [2, 3, 1]]


def test_multi_partition_topic_on_single_unfenced_broker():
    assert place(StripedReplicaPlacer(MockRandom()), 3, 1, [B(0), B(1, fenced=True)]) == [[0], [0], [0]]


def test_rack_list_with_multiple_racks():
    rl = RackList(MockRandom(), [B(11, "1"), B(10, "1"), B(30, "3"), B(31, "3"), B(21, "2"), B(20, "2", True)])
    assert (rl.num_total_brokers, rl.num_unfenced_brokers, rl.rack_names) == (6, 5, ["1", "2", "3"])
    assert [rl.place(4) for _ in range(3)] == [[11, 21, 31, 10], [21, 30, 10, 20], [31, 11, 21, 30]]


def test_rack_list_with_invalid_racks():
    rl = RackList(MockRandom(), [B(11, "1"), B(10, "1"), B(30, "3", True), B(31, "3", True),
                                 B(20, "2", True), B(21, "2", True), B(41, "4"), B(40, "4", True)])
    # Despite Kafka's comment, racks with only fenced brokers are not moved last.
    assert rl.rack_names == ["1", "2", "3", "4"]
    assert [rl.place(4) for _ in range(3)] == [[41, 11, 21, 30], [10, 20, 31, 41], [41, 21, 30, 11]]


def test_successful_placement():
    placer = StripedReplicaPlacer(MockRandom())
    assert place(placer, 5, 3, [B(0), B(3), B(2), B(1)]) == [[2, 3, 0], [3, 0, 1], [0, 1, 2], [1, 2, 3], [1, 0, 2]]


def test_even_distribution_200_partitions():
    result = place(StripedReplicaPlacer(MockRandom()), 200, 2, [B(i) for i in range(4)])
    assert Counter(map(tuple, result)) == {
        (0, 1): 14, (0, 2): 22, (0, 3): 14, (1, 0): 17, (1, 2): 17, (1, 3): 16,
        (2, 0): 13, (2, 1): 17, (2, 3): 20, (3, 0): 20, (3, 1): 19, (3, 2): 11,
    }


def test_empty_rack_sorts_first():
    rl = RackList(JavaRandom(1), [B(1, "b"), B(2), B(3, "a")])
    assert rl.rack_names == [None, "a", "b"]


@pytest.mark.parametrize(
    "rf, brokers, message",
    [
        (1, [B(11, "1", True), B(10, "1", True)], "All brokers are currently fenced."),
        (3, [B(11, "1"), B(10, "1")],
         "The target replication factor of 3 cannot be reached because only 2 broker(s) are registered."),
        (0, [B(11, "1"), B(10, "1")], "Invalid replication factor 0: the replication factor must be positive."),
        # place() checks fencing before the broker count ...
        (3, [B(0, fenced=True), B(1, fenced=True)], "All brokers are currently fenced."),
    ],
)
def test_placer_errors(rf, brokers, message):
    with pytest.raises(InvalidReplicationFactorException) as e:
        place(StripedReplicaPlacer(MockRandom()), 1, rf, brokers)
    assert str(e.value) == message


def test_rack_list_checks_broker_count_before_fencing():
    # ... while RackList.place checks the broker count first.
    rl = RackList(MockRandom(), [B(0, fenced=True), B(1, fenced=True)])
    with pytest.raises(InvalidReplicationFactorException, match="cannot be reached"):
        rl.place(3)
    with pytest.raises(InvalidReplicationFactorException, match="-1: the replication factor must be positive"):
        rl.place(-1)


def test_start_partition_is_ignored_by_default():
    brokers = [B(i) for i in range(12)]
    first = place(StripedReplicaPlacer(MockRandom()), 2, 3, brokers)
    again = place(StripedReplicaPlacer(MockRandom()), 2, 3, brokers, start=2, existing=first)
    assert again == first


def test_continue_from_existing_rack_unaware():
    # Newer Kafka (StripedReplicaPlacerTest.testPlaceShiftsInitialOffsetsRackUnaware).
    brokers = [B(i) for i in range(12)]
    first = place(StripedReplicaPlacer(MockRandom(), True), 2, 3, brokers)
    assert first == [[7, 8, 9], [8, 9, 10]]
    second = place(StripedReplicaPlacer(MockRandom(), True), 2, 3, brokers, start=2, existing=first)
    assert second == [[9, 10, 11], [10, 11, 0]]
    four = place(StripedReplicaPlacer(MockRandom(), True), 4, 3, brokers, start=2, existing=first + second)
    assert four == [[11, 0, 1], [0, 1, 2], [1, 2, 3], [2, 3, 4]]


def test_continue_from_existing_rack_aware():
    brokers = [B(i, str(1 + i // 4)) for i in range(12)]
    first = place(StripedReplicaPlacer(MockRandom(), True), 2, 3, brokers)
    assert first == [[6, 8, 2], [9, 3, 7]]
    more = place(StripedReplicaPlacer(MockRandom(), True), 2, 3, brokers, start=2, existing=first)
    assert more == [[0, 4, 10], [5, 11, 1]]
    assert {b for r in first + more for b in r} == set(range(12))


def test_continue_from_existing_uses_unused_racks():
    brokers = [B(0, "1"), B(1, "2"), B(2, "3"), B(3, "4")]
    placed = place(StripedReplicaPlacer(MockRandom(), True), 1, 2, brokers)
    assert placed == [[0, 1]]
    for expected in ([1, 2], [2, 3], [3, 0]):
        placed = place(StripedReplicaPlacer(MockRandom(), True), 1, 2, brokers, start=1, existing=placed)
        assert placed == [expected]


@st.composite
def usable_brokers(draw):
    n = draw(st.integers(1, 10))
    racks = draw(st.lists(st.sampled_from([None, "a", "b", "c"]), min_size=n, max_size=n))
    fenced = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if all(fenced):
        fenced[draw(st.integers(0, n - 1))] = False
    ids = draw(st.permutations(range(n)))
    return [B(i, r, f) for i, r, f in zip(ids, racks, fenced, strict=True)]


@given(brokers=usable_brokers(), parts=st.integers(1, 25), rf=st.integers(1, 10), seed=st.integers(0, 2**48))
def test_striped_hard_properties(brokers, parts, rf, seed):
    rf = min(rf, len(brokers))
    fenced = {b.id for b in brokers if b.fenced}
    n_racks = len({b.rack for b in brokers})
    rack = {b.id: b.rack for b in brokers}
    for replicas in place(StripedReplicaPlacer(JavaRandom(seed)), parts, rf, brokers):
        assert len(replicas) == len(set(replicas)) == rf
        assert replicas[0] not in fenced
        if not fenced:
            assert len({rack[b] for b in replicas}) == min(rf, n_racks)
