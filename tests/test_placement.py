"""AdminUtils placement against Kafka's documented examples and unit-test expectations."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcheck.model import Broker, Cluster
from kcheck.reference.errors import (
    AdminOperationException,
    InvalidPartitionsException,
    InvalidReplicationFactorException,
)
from kcheck.reference.java import JavaRandom
from kcheck.reference.placement import assign_replicas_to_brokers, rack_alternated_broker_list, replica_index


def brokers(n, racks=None):
    return list(Cluster.of(range(n), racks).brokers)


def test_rack_unaware_kafka_admin_test_vector():
    # AdminTest.testReplicaAssignment / the AdminUtils javadoc table: 5 brokers, 10 partitions, RF 3, start 0.
    assert assign_replicas_to_brokers(brokers(5), 10, 3, 0) == {
        0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
        5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2],
    }


def test_seed_004_five_brokers_leader_on_4():
    # seeds/004: 5 brokers, RF 3: when partition 0's leader is broker 4, its first follower is
    # broker 0 and its second broker 1; leaders then go round-robin (p1 on 0, p2 on 1, ...).
    result = assign_replicas_to_brokers(brokers(5), 5, 3, fixed_start_index=4)
    assert result[0] == [4, 0, 1]
    assert [result[p][0] for p in range(5)] == [4, 0, 1, 2, 3]


@given(n=st.integers(2, 12), rf=st.integers(1, 12), start=st.integers(0, 30), parts=st.integers(1, 40))
def test_rack_unaware_matches_seed_000_formula(n, rf, start, parts):
    # seeds/000 states the rule: first replica (pid + startIndex) % n; replica j at
    # (first + 1 + (nextReplicaShift + j) % (n-1)) % n, the shift growing at every multiple of n.
    rf = min(rf, n)
    result = assign_replicas_to_brokers(brokers(n), parts, rf, start)
    for pid in range(parts):
        shift = start + pid // n
        first = (pid + start) % n
        expected = [first] + [(first + 1 + (shift + j) % (n - 1)) % n for j in range(rf - 1)]
        assert result[pid] == expected


def test_broker_list_is_used_in_the_order_given():
    # KAFKA-17198: AdminUtils does not sort; the same ids in another order give another layout.
    ordered = assign_replicas_to_brokers([Broker(i) for i in (3, 1, 2)], 3, 2, 0)
    assert ordered == {0: [3, 1], 1: [1, 2], 2: [2, 3]}


def test_rack_alternated_broker_list_kafka_examples():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 5, 4, 2]
    del racks[5]
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 4, 2]


def test_rack_aware_kafka_example_seven_partitions():
    # AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers and the javadoc:
    # partition 6 starts shifting followers (0,4,2 instead of repeating 0,3,1).
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert assign_replicas_to_brokers(brokers(6, racks), 7, 3, 0, 0) == {
        0: [0, 3, 1], 1: [3, 1, 5], 2: [1, 5, 4], 3: [5, 4, 2], 4: [4, 2, 0], 5: [2, 0, 3], 6: [0, 4, 2],
    }


def test_rack_aware_uneven_racks_hand_derived():
    # racks a={0,1,2}, b={3,4}: alternated list [0,3,1,4,2]; start 1 fixes shift 1, so followers
    # walk replicaIndex(1, 1*2, k, 5) = (2 + (2+k) % 4) % 5 -> positions 4, 0, 2 -> brokers 2, 0, 1.
    racks = {0: "a", 1: "a", 2: "a", 3: "b", 4: "b"}
    assert assign_replicas_to_brokers(brokers(5, racks), 1, 4, fixed_start_index=1) == {0: [3, 2, 0, 1]}


def test_adding_partitions_does_not_replay_passed_shifts():
    # Full run: p6 of 5 brokers has shift 1 -> [1,3,4]. Adding from partition 6 with start 0 starts
    # at shift 0 and only bumps it at pid 10, so p6 = [1, (1+1+0)%5, (1+1+1)%5] = [1,2,3].
    assert assign_replicas_to_brokers(brokers(5), 10, 3, 0)[6] == [1, 3, 4]
    added = assign_replicas_to_brokers(brokers(5), 5, 3, fixed_start_index=0, start_partition_id=6)
    assert sorted(added) == [6, 7, 8, 9, 10]
    assert added[6] == [1, 2, 3]
    assert added[10] == [0, 2, 3]  # pid 10 is a multiple of 5: shift 1


def test_random_mode_draws_start_then_shift_from_java_random():
    seed, n = 42, 7
    rnd = JavaRandom(seed)
    start, shift = rnd.next_int(n), rnd.next_int(n)
    result = assign_replicas_to_brokers(brokers(n), 3, 3, random=JavaRandom(seed))
    first = start % n
    assert result[0] == [first, (first + 1 + shift % 6) % 7, (first + 1 + (shift + 1) % 6) % 7]


def test_unseeded_random_mode_still_satisfies_the_contract():
    result = assign_replicas_to_brokers(brokers(6), 12, 3)
    assert sorted(result) == list(range(12))
    assert all(len(set(r)) == 3 for r in result.values())


@pytest.mark.parametrize(
    "n_partitions, rf, racks, exc, message",
    [
        (0, 0, None, InvalidPartitionsException, "Number of partitions must be larger than 0."),
        (3, 0, None, InvalidReplicationFactorException, "Replication factor must be larger than 0."),
        (3, 6, None, InvalidReplicationFactorException, "Replication factor: 6 larger than available brokers: 5."),
        # RF is checked before the rack information.
        (3, 6, {0: "a"}, InvalidReplicationFactorException, "Replication factor: 6 larger than available brokers: 5."),
        (3, 2, {0: "a"}, AdminOperationException,
         "Not all brokers have rack information for replica rack aware assignment."),
    ],
)
def test_errors_in_kafkas_order_with_kafkas_messages(n_partitions, rf, racks, exc, message):
    with pytest.raises(exc) as e:
        assign_replicas_to_brokers(brokers(5, racks), n_partitions, rf, 0)
    assert str(e.value) == message


def test_replica_index_never_returns_the_leader():
    for n in range(2, 9):
        for first in range(n):
            for shift in range(3 * n):
                assert all(replica_index(first, shift, j, n) != first for j in range(n))


@given(
    sizes=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    parts=st.integers(1, 30), rf=st.integers(1, 6), start=st.integers(0, 20),
)
def test_rack_aware_documented_guarantees(sizes, parts, rf, start):
    # Javadoc: RF >= #racks -> every rack has a replica; RF <= #racks -> at most one per rack.
    racks = {}
    for r, size in enumerate(sizes):
        for _ in range(size):
            racks[len(racks)] = f"r{r}"
    n = len(racks)
    rf = min(rf, n)
    for replicas in assign_replicas_to_brokers(brokers(n, racks), parts, rf, start).values():
        used = [racks[b] for b in replicas]
        assert len(set(replicas)) == rf
        assert len(set(used)) == min(rf, len(sizes))


@given(racks_n=st.integers(1, 4), per_rack=st.integers(1, 4), start=st.integers(0, 15))
def test_rack_aware_even_when_racks_equal_and_rf_equals_racks(racks_n, per_rack, start):
    # Javadoc: equal racks and RF == #racks -> even leaders and replicas (partitions a multiple of n).
    n = racks_n * per_rack
    racks = {b: f"r{b % racks_n}" for b in range(n)}
    result = assign_replicas_to_brokers(brokers(n, racks), n * 2, racks_n, start)
    leaders = [r[0] for r in result.values()]
    replicas = [b for r in result.values() for b in r]
    assert all(leaders.count(b) == 2 for b in range(n))
    assert all(replicas.count(b) == 2 * racks_n for b in range(n))


def test_adding_partitions_the_zookeeper_way():
    from kcheck.reference.placement import create_new_partitions_assignment

    # 3 partitions created with start 0 on brokers 0..4 (p0 = [0,1,2]); growing to 5 starts at the first
    # broker with id >= 0 (index 0), numbers from 3 with shift 0: p3 = [3,4,0], p4 = [4,0,1].
    existing = {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4]}
    assert create_new_partitions_assignment("t", existing, brokers(5), 5) == {3: [3, 4, 0], 4: [4, 0, 1]}
    # Brokers 1,2,3,5,7 and partition 0 led by 4: the first id >= 4 is 5, at index 3, which fixes both the
    # start index and the shift. Partition 1: leader at (1 + 3) % 5 = 4 (broker 7); its follower at
    # (4 + 1 + (3 + 0) % 4) % 5 = 3 (broker 5).
    ids = [Broker(i) for i in (1, 2, 3, 5, 7)]
    assert create_new_partitions_assignment("t", {0: [4, 1]}, ids, 2) == {1: [7, 5]}
    with pytest.raises(InvalidPartitionsException) as e:
        create_new_partitions_assignment("t", existing, brokers(5), 3)
    assert str(e.value) == ("The number of partitions for a topic can only be increased. "
                            "Topic t currently has 3 partitions, 3 would not be an increase.")
    with pytest.raises(AdminOperationException, match="partition id 0 is missing"):
        create_new_partitions_assignment("t", {1: [0]}, brokers(5), 3)
