"""Automatic leader rebalance: the ZooKeeper rule (per-broker ratio, strict `>`) and the KRaft rule (any
non-preferred leader, at most 1000 elections a run). Expected values follow the reference notes (5.3, 7.13)
and the seeds (002: leader.imbalance.per.broker.percentage default 10; 004: a preferred replica in the ISR
takes leadership back), worked out by hand below each case.
"""

from hypothesis import given
from hypothesis import strategies as st

from kcheck.model import NO_LEADER, PartitionReplicas, TopicPartition
from kcheck.reference.election import PartitionRegistration
from kcheck.reference.leader_balance import (
    MAX_ELECTIONS_PER_IMBALANCE,
    kraft_balance_partition_leaders,
    registration_of,
    zk_auto_leader_rebalance,
)


def part(p, replicas, leader, isr=None, topic="t"):
    return PartitionReplicas(topic, p, tuple(replicas), leader, tuple(isr if isr is not None else replicas))


def ten_preferred_by_broker_1(not_led, without_info=0):
    """Broker 1 prefers ten partitions; `not_led` are led by broker 2; `without_info` have no leader record."""
    parts = []
    for p in range(10):
        leader = 2 if p < not_led else (None if p < not_led + without_info else 1)
        parts.append(part(p, (1, 2, 3), leader))
    return parts


def test_zk_ratio_equal_to_the_percentage_does_not_trigger():
    # 1 of 10 = 0.1, and 0.1 > 10/100 is false: Kafka's comparison is strict (the seed's "10% or more" is not)
    r = zk_auto_leader_rebalance(ten_preferred_by_broker_1(1), live={1, 2, 3})
    assert r.moves == ()
    (b1,) = [b for b in r.brokers if b.broker == 1]
    assert (b1.partitions, b1.not_led, b1.ratio, b1.triggered) == (10, 1, 0.1, False)


def test_zk_ratio_above_the_percentage_moves_every_not_led_partition():
    r = zk_auto_leader_rebalance(ten_preferred_by_broker_1(2), live={1, 2, 3})
    assert [(m.tp.partition, m.from_leader, m.to_leader) for m in r.moves] == [(0, 2, 1), (1, 2, 1)]
    assert all(r.leaders[TopicPartition("t", p)] == 1 for p in range(10))


def test_zk_denominator_counts_partitions_without_leader_information():
    # 1 not led, 1 without leadership info: 1/10 = 0.1 (not 1/9), so nothing moves
    r = zk_auto_leader_rebalance(ten_preferred_by_broker_1(1, without_info=1), live={1, 2, 3})
    assert r.moves == () and r.brokers[0].ratio == 0.1
    # with the percentage at 5 it does trigger, and only the partition with a known leader moves
    r = zk_auto_leader_rebalance(ten_preferred_by_broker_1(1, without_info=1), live={1, 2, 3},
                                 leader_imbalance_per_broker_percentage=5)
    assert [m.tp.partition for m in r.moves] == [0]


def test_zk_preferred_replica_must_be_live_and_in_the_isr():
    # seed 004: the preferred leader takes over when it is in the ISR
    parts = [part(0, (1, 2), 2, isr=(2,)), part(1, (1, 2), 2), part(2, (1, 2), 2)]
    r = zk_auto_leader_rebalance(parts, live={1, 2})
    assert [m.tp.partition for m in r.moves] == [1, 2]  # partition 0: broker 1 is out of the ISR
    r = zk_auto_leader_rebalance(parts, live={2})
    assert r.moves == ()  # broker 1 is down
    assert r.brokers[0].triggered  # the ratio still says imbalanced


def test_zk_leaderless_partition_counts_as_not_led():
    r = zk_auto_leader_rebalance([part(0, (1, 2), NO_LEADER), part(1, (1, 2), 1)], live={1, 2})
    assert [(m.tp.partition, m.from_leader, m.to_leader) for m in r.moves] == [(0, NO_LEADER, 1)]


def test_zk_preferred_during_a_reassignment_is_the_head_of_the_full_replica_set():
    # RS = TRS + ORS = 4,5,6,1,2,3: broker 4 is "preferred" while the move runs
    in_flight = PartitionReplicas("t", 0, (4, 5, 6, 1, 2, 3), 1, (1, 2, 3, 4), adding=(4, 5, 6), removing=(1, 2, 3))
    r = zk_auto_leader_rebalance([in_flight], live=set(range(1, 7)))
    assert [(m.from_leader, m.to_leader) for m in r.moves] == [(1, 4)]


def test_zk_skips_topics_queued_for_deletion():
    parts = [part(0, (1, 2), 2, topic="gone"), part(0, (1, 2), 2, topic="kept")]
    r = zk_auto_leader_rebalance(parts, live={1, 2}, topics_queued_for_deletion={"gone"})
    assert [m.tp.topic for m in r.moves] == ["kept"]


def kraft(parts):
    return [(p.tp, registration_of(p)) for p in parts]


def test_kraft_ignores_the_percentage():
    # one non-preferred leader among ten: ZK leaves it, KRaft moves it
    parts = ten_preferred_by_broker_1(1)
    assert zk_auto_leader_rebalance(parts, live={1, 2, 3}).moves == ()
    r = kraft_balance_partition_leaders(kraft(parts), {1, 2, 3})
    assert [(m.tp.partition, m.from_leader, m.to_leader) for m in r.moves] == [(0, 2, 1)]
    assert not r.reschedule_immediately


def test_kraft_caps_elections_per_run_and_asks_to_run_again():
    parts = [part(p, (1, 2), 2) for p in range(MAX_ELECTIONS_PER_IMBALANCE + 5)]
    r = kraft_balance_partition_leaders(kraft(parts), {1, 2})
    assert len(r.moves) == MAX_ELECTIONS_PER_IMBALANCE and r.reschedule_immediately
    assert [m.tp.partition for m in r.moves] == list(range(MAX_ELECTIONS_PER_IMBALANCE))
    assert r.leaders[TopicPartition("t", MAX_ELECTIONS_PER_IMBALANCE)] == 2  # left for the next run
    exact = kraft_balance_partition_leaders(kraft(parts[:MAX_ELECTIONS_PER_IMBALANCE]), {1, 2})
    # Kafka's ReplicationControlManager reschedules whenever a run holds max_elections records, even with
    # nothing left (tests/test_kafka_elections.py runs the real controller on this)
    assert exact.reschedule_immediately


def test_kraft_preferred_falls_back_and_elects_leaderless_partitions():
    parts = [
        PartitionRegistration((1, 2, 3), (2, 3), 2),  # head out of the ISR: the current leader stays, no record
        PartitionRegistration((1, 2, 3), (1, 2, 3), NO_LEADER),  # leaderless counts as imbalanced: head elected
        PartitionRegistration((1, 2, 3), (2, 3), NO_LEADER),  # leaderless, head out of sync: next valid replica
    ]
    r = kraft_balance_partition_leaders([(TopicPartition("t", i), p) for i, p in enumerate(parts)], {1, 2, 3})
    assert [(m.tp.partition, m.from_leader, m.to_leader) for m in r.moves] == [(1, NO_LEADER, 1), (2, NO_LEADER, 2)]
    assert r.leaders[TopicPartition("t", 0)] == 2


@st.composite
def clusters(draw):
    n = draw(st.integers(2, 5))
    parts = []
    for p in range(draw(st.integers(1, 30))):
        replicas = draw(st.permutations(range(n)).map(lambda x: tuple(x[: min(3, n)])))
        isr = draw(st.lists(st.sampled_from(replicas), unique=True, min_size=1))
        leader = draw(st.sampled_from(isr))
        parts.append(part(p, replicas, leader, isr))
    live = set(draw(st.lists(st.integers(0, n - 1), unique=True))) | {p.leader for p in parts}
    return parts, live


@given(clusters(), st.integers(0, 100))
def test_zk_moves_only_to_live_in_sync_preferred_replicas_of_triggered_brokers(case, percentage):
    parts, live = case
    r = zk_auto_leader_rebalance(parts, live, percentage)
    by_tp = {p.tp: p for p in parts}
    triggered = {b.broker for b in r.brokers if b.triggered}
    for m in r.moves:
        p = by_tp[m.tp]
        assert m.to_leader == p.replicas[0] in live and m.to_leader in p.isr and m.to_leader in triggered
    for b in r.brokers:  # strict comparison against percentage / 100, recomputed independently
        mine = [p for p in parts if p.replicas[0] == b.broker]
        not_led = sum(p.leader != b.broker for p in mine)
        assert b.triggered == (not_led * 100 > percentage * len(mine))


@given(clusters())
def test_kraft_and_zk_at_zero_percent_agree_when_preferred_replicas_are_healthy(case):
    """With percentage 0 every not-led partition of a broker triggers; then both controllers move the same ones,
    except that KRaft also falls back to other in-sync replicas (never for a healthy head)."""
    parts, live = case
    zk = zk_auto_leader_rebalance(parts, live, 0)
    kr = kraft_balance_partition_leaders(kraft(parts), live)
    assert {(m.tp, m.to_leader) for m in zk.moves} == {(m.tp, m.to_leader) for m in kr.moves}
