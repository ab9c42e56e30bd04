"""Leader election: Kafka's own test vectors (ZK and KRaft), the reference notes' rules, and Hypothesis properties.

ZK vectors: core/src/test/scala/unit/kafka/controller/PartitionLeaderElectionAlgorithmsTest.scala.
KRaft vectors: metadata/src/test/java/org/apache/kafka/controller/PartitionChangeBuilderTest.java
(FOO, BAR, BAZ, OFFLINE and the ELR cases), expected records copied as values.
"""

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcheck.model import NO_LEADER
from kcheck.reference.election import (
    KRAFT_3_5,
    KRAFT_DEFAULT,
    KRAFT_ELR,
    KRAFT_ELR_FIXED,
    NO_LEADER_CHANGE,
    Election,
    KRaftVersion,
    LeaderAndIsr,
    LeaderRecoveryState,
    PartitionChangeBuilder,
    PartitionChangeRecord,
    PartitionRegistration,
    controlled_shutdown_partition_leader_election,
    elect_kraft,
    initial_leader_and_isr,
    leader_for_controlled_shutdown,
    leader_for_offline,
    leader_for_preferred_replica,
    leader_for_reassign,
    offline_partition_leader_election,
    preferred_replica_partition_leader_election,
    reassign_partition_leader_election,
)
from kcheck.reference.reassignment import PartitionReassignmentReplicas, PartitionReassignmentRevert

RECOVERING = LeaderRecoveryState.RECOVERING

# ---------------------------------------------------------------------------------------------
# ZooKeeper controller: PartitionLeaderElectionAlgorithmsTest


@pytest.mark.parametrize("assignment,isr,live,unclean,expected", [
    ((2, 4), (2, 4), {4}, False, 4),  # testOfflinePartitionLeaderElection
    ((2, 4), (2,), {4}, False, None),  # ...LastIsrOfflineUncleanLeaderElectionDisabled
    ((2, 4), (2,), {4}, True, 4),  # ...LastIsrOfflineUncleanLeaderElectionEnabled
])
def test_zk_offline_election_kafka_vectors(assignment, isr, live, unclean, expected):
    assert offline_partition_leader_election(assignment, isr, live, unclean) == expected


@pytest.mark.parametrize("reassignment,isr,live,expected", [
    ((2, 4), (2, 4), {4}, 4),  # testReassignPartitionLeaderElection
    ((2, 4), (2,), set(), None),  # ...WithNoLiveIsr
    ((2, 4), (), {2}, None),  # ...WithEmptyIsr
])
def test_zk_reassign_election_kafka_vectors(reassignment, isr, live, expected):
    assert reassign_partition_leader_election(reassignment, isr, live) == expected


@pytest.mark.parametrize("assignment,isr,live,expected", [
    ((2, 4), (2, 4), {2, 4}, 2),  # testPreferredReplicaPartitionLeaderElection
    ((2, 4), (2,), set(), None),  # ...PreferredReplicaInIsrNotLive
    ((2, 4), (4,), {2, 4}, None),  # ...PreferredReplicaNotInIsrLive
    ((2, 4), (), set(), None),  # ...PreferredReplicaNotInIsrNotLive
])
def test_zk_preferred_election_kafka_vectors(assignment, isr, live, expected):
    assert preferred_replica_partition_leader_election(assignment, isr, live) == expected


@pytest.mark.parametrize("assignment,isr,live,shutting_down,expected", [
    ((2, 4), (2, 4), {2, 4}, {2}, 4),  # testControlledShutdownPartitionLeaderElection
    ((2, 4), (2,), {2, 4}, {2}, None),  # ...LastIsrShuttingDown
    ((2, 4), (2, 4), {2, 4}, {2, 4}, None),  # ...AllIsrSimultaneouslyShutdown
])
def test_zk_controlled_shutdown_kafka_vectors(assignment, isr, live, shutting_down, expected):
    assert controlled_shutdown_partition_leader_election(assignment, isr, live, shutting_down) == expected


# The ISR each ZK strategy leaves (reference notes 5.1, Election.scala)


def test_zk_offline_clean_keeps_the_live_isr_members():
    before = LeaderAndIsr(1, 7, (1, 2, 3))
    r = leader_for_offline((1, 2, 3), before, live={2, 3})
    assert r.leader_and_isr == LeaderAndIsr(2, 8, (2, 3)) and not r.unclean
    assert r.live_replicas == (2, 3)


def test_zk_offline_unclean_isr_is_the_new_leader_alone_and_recovering():
    before = LeaderAndIsr(1, 7, (1,))
    r = leader_for_offline((1, 2, 3), before, live={3, 2}, unclean_leader_election_enabled=True)
    assert r.leader_and_isr == LeaderAndIsr(2, 8, (2,), RECOVERING) and r.unclean
    old_ibp = leader_for_offline((1, 2, 3), before, live={2}, unclean_leader_election_enabled=True,
                                 is_leader_recovery_supported=False)
    assert old_ibp.leader_and_isr == LeaderAndIsr(2, 8, (2,))
    assert leader_for_offline((1, 2, 3), before, live={2}).leader_and_isr is None  # unclean disabled
    assert leader_for_offline((1, 2, 3), None, live={1}).leader_and_isr is None  # no leadership info


def test_zk_reassign_and_preferred_change_only_the_leader():
    before = LeaderAndIsr(1, 3, (3, 1, 2), partition_epoch=9)
    assert leader_for_reassign((4, 2, 3), before, {2, 3, 4}).leader_and_isr == LeaderAndIsr(2, 4, (3, 1, 2),
                                                                                          partition_epoch=9)
    assert leader_for_preferred_replica((3, 1, 2), before, {1, 2, 3}).leader_and_isr == LeaderAndIsr(
        3, 4, (3, 1, 2), partition_epoch=9)
    assert leader_for_preferred_replica((2, 1, 3), before, {1, 3}).leader_and_isr is None  # head dead: no fall-back


def test_zk_controlled_shutdown_isr_drops_every_shutting_down_broker():
    before = LeaderAndIsr(1, 0, (1, 2, 3))
    r = leader_for_controlled_shutdown((1, 2, 3), before, {1, 2, 3}, shutting_down={1, 3})
    assert r.leader_and_isr == LeaderAndIsr(2, 1, (2,))


def test_zk_new_partition_first_live_replica_leads_every_live_one_in_sync():
    assert initial_leader_and_isr((3, 1, 2), {1, 2}) == LeaderAndIsr(1, 0, (1, 2))
    assert initial_leader_and_isr((3, 1, 2), set()) is None


# ---------------------------------------------------------------------------------------------
# KRaft: PartitionChangeBuilderTest

FOO = PartitionRegistration((2, 1, 3), (2, 1, 3), leader=1, leader_epoch=100, partition_epoch=200)
BAR = PartitionRegistration((1, 2, 3, 4), (1, 2, 3), leader=1, leader_epoch=100, partition_epoch=200,
                            removing_replicas=(1,), adding_replicas=(4,))
BAZ = PartitionRegistration((2, 1, 3), (1, 3), leader=3, leader_epoch=100, partition_epoch=200)
OFFLINE = PartitionRegistration((2, 1, 3), (3,), leader=NO_LEADER, leader_epoch=100, partition_epoch=200)
NOT_3 = lambda r: r != 3  # noqa: E731  (Kafka's `r -> r != 3`)
ALL = lambda r: True  # noqa: E731


def foo(version=KRAFT_DEFAULT):
    return PartitionChangeBuilder(FOO, NOT_3, version, min_isr=2)


def bar(version=KRAFT_DEFAULT):
    return PartitionChangeBuilder(BAR, NOT_3, version, min_isr=2)


def baz(version=KRAFT_DEFAULT):
    return PartitionChangeBuilder(BAZ, ALL, version, min_isr=2)


VERSIONS = [KRAFT_DEFAULT, KRAFT_ELR]  # Kafka runs these tests with ELR off and on


@pytest.mark.parametrize("version", VERSIONS)
def test_elect_leader(version):
    def elect(builder):
        r = builder.elect_leader()
        return r.node, r.unclean

    assert elect(foo(version).set_election(Election.PREFERRED)) == (2, False)
    assert elect(foo(version)) == (1, False)
    assert elect(foo(version).set_election(Election.UNCLEAN)) == (1, False)
    assert elect(foo(version).set_target_isr([1, 3])) == (1, False)
    assert elect(foo(version).set_election(Election.UNCLEAN).set_target_isr([1, 3])) == (1, False)
    assert elect(foo(version).set_target_isr([3])) == (NO_LEADER, False)
    assert elect(foo(version).set_election(Election.UNCLEAN).set_target_isr([3])) == (2, True)
    assert elect(foo(version).set_election(Election.UNCLEAN).set_target_isr([4])
                 .set_target_replicas([2, 1, 3, 4])) == (4, False)
    assert elect(baz(version).set_election(Election.PREFERRED)) == (3, False)
    assert elect(baz(version)) == (3, False)
    assert elect(baz(version).set_election(Election.UNCLEAN)) == (3, False)


@pytest.mark.parametrize("version", VERSIONS)
def test_no_change(version):
    assert foo(version).build() is None
    assert foo(version).set_election(Election.UNCLEAN).build() is None
    assert bar(version).build() is None
    assert bar(version).set_election(Election.UNCLEAN).build() is None
    assert baz(version).set_election(Election.PREFERRED).build() is None


@pytest.mark.parametrize("version", VERSIONS)
def test_isr_changes(version):
    # testIsrChangeDoesntBumpLeaderEpoch, testIsrChangeAndLeaderChange
    assert foo(version).set_target_isr([2, 1]).build() == PartitionChangeRecord(isr=(2, 1))
    assert foo(version).set_target_isr([2, 3]).build() == PartitionChangeRecord(leader=2, isr=(2, 3))


def test_isr_shrink_bumps_the_leader_epoch_before_metadata_version_3_6():
    # testTriggerLeaderEpochBumpIfNeeded, IBP_3_5_IV2 case (KAFKA-15021)
    assert PartitionChangeBuilder(FOO, NOT_3, KRAFT_3_5, 2).set_target_isr([2, 1]).build() == PartitionChangeRecord(
        leader=1, isr=(2, 1))
    assert foo().set_target_replicas([2, 1, 3, 4]).build() == PartitionChangeRecord(replicas=(2, 1, 3, 4))


@pytest.mark.parametrize("version", VERSIONS)
def test_reassignment_records(version):
    # testReassignmentRearrangesReplicas
    assert foo(version).set_target_replicas([3, 2, 1]).build() == PartitionChangeRecord(replicas=(3, 2, 1))
    # testIsrEnlargementCompletesReassignment
    assert bar(version).set_target_isr([1, 2, 3, 4]).build() == PartitionChangeRecord(
        leader=2, isr=(2, 3, 4), replicas=(2, 3, 4), removing_replicas=(), adding_replicas=())
    # testRevertReassignment
    revert = PartitionReassignmentRevert.of(BAR)
    assert (revert.replicas, revert.isr, revert.unclean) == ((1, 2, 3), (1, 2, 3), False)
    assert (bar(version).set_target_replicas(revert.replicas).set_target_isr(revert.isr).set_target_removing([])
            .set_target_adding([]).build()) == PartitionChangeRecord(leader=1, replicas=(1, 2, 3),
                                                                     removing_replicas=(), adding_replicas=())
    # testRemovingReplicaReassignment
    plan = PartitionReassignmentReplicas.of(FOO.replicas, [1, 2])
    assert (plan.removing, plan.adding, plan.replicas) == ((3,), (), (1, 2, 3))
    assert foo(version).set_target_replicas(plan.replicas).set_target_removing(plan.removing).build() == \
        PartitionChangeRecord(leader=1, isr=(2, 1), replicas=(1, 2))
    # testAddingReplicaReassignment
    plan = PartitionReassignmentReplicas.of(FOO.replicas, [1, 2, 3, 4])
    assert (plan.removing, plan.adding, plan.replicas) == ((), (4,), (1, 2, 3, 4))
    assert foo(version).set_target_replicas(plan.replicas).set_target_adding(plan.adding).build() == \
        PartitionChangeRecord(replicas=(1, 2, 3, 4), adding_replicas=(4,))


@pytest.mark.parametrize("version", VERSIONS)
def test_unclean_leader_election(version):
    expected = PartitionChangeRecord(leader=2, isr=(2,), leader_recovery_state=RECOVERING)
    assert foo(version).set_election(Election.UNCLEAN).set_target_isr([3]).build() == expected
    offline = PartitionChangeBuilder(OFFLINE, lambda r: r == 1, version, 2).set_election(Election.UNCLEAN)
    assert offline.build() == PartitionChangeRecord(leader=1, isr=(1,), leader_recovery_state=RECOVERING)
    assert offline.set_target_isr([2]).build() == PartitionChangeRecord(leader=1, isr=(1,),
                                                                        leader_recovery_state=RECOVERING)


@pytest.mark.parametrize("recovery_supported", [True, False])
def test_change_in_leadership_does_not_change_recovery_state(recovery_supported):
    version = KRaftVersion(leader_recovery_supported=recovery_supported)
    reg = PartitionRegistration((1, 2, 3), (1,), leader=1, leader_epoch=100, partition_epoch=200,
                                leader_recovery_state=RECOVERING)
    record = PartitionChangeBuilder(reg, lambda b: False, version, 2).set_target_isr([]).build()
    assert record == PartitionChangeRecord(leader=NO_LEADER)
    reg = reg.merge(record)
    assert (reg.leader, reg.isr, reg.leader_recovery_state) == (NO_LEADER, (1,), RECOVERING)
    record = PartitionChangeBuilder(reg, lambda b: True, version, 2).build()
    assert record.leader_recovery_state is None
    reg = reg.merge(record)
    assert (reg.leader, reg.isr, reg.leader_recovery_state) == (1, (1,), RECOVERING)


@pytest.mark.parametrize("recovery_supported", [True, False])
def test_unclean_sets_leader_recovering_state(recovery_supported):
    version = KRaftVersion(leader_recovery_supported=recovery_supported)
    reg = PartitionRegistration((1, 2, 3), (2, 3), leader=NO_LEADER, leader_epoch=100, partition_epoch=200)
    record = PartitionChangeBuilder(reg, lambda b: b == 1, version, 2).set_election(Election.UNCLEAN).build()
    assert (record.leader, record.isr) == (1, (1,))
    assert record.leader_recovery_state == (RECOVERING if recovery_supported else None)
    after = reg.merge(record)
    assert after.leader_recovery_state == (RECOVERING if recovery_supported else LeaderRecoveryState.RECOVERED)
    assert (after.leader_epoch, after.partition_epoch) == (101, 201)


def test_stopped_leader_is_demoted_after_reassignment_completes_even_if_no_new_eligible_leaders():
    part = PartitionRegistration((2, 3, 0, 1), (0, 1), leader=0, removing_replicas=(0, 1), adding_replicas=(2, 3))
    builder = PartitionChangeBuilder(part, lambda r: False, KRaftVersion(leader_recovery_supported=False), 2)
    assert builder.set_target_isr([0, 1, 2, 3]).build() == PartitionChangeRecord(
        leader=NO_LEADER, isr=(2, 3), replicas=(2, 3), removing_replicas=(), adding_replicas=())


# Eligible leader replicas (KIP-966); Kafka runs these with `setUseLastKnownLeaderInBalancedRecovery(false)`
ELR_NO_LKL = replace(KRAFT_ELR, use_last_known_leader_in_balanced_recovery=False)
NO_ELR_NO_LKL = replace(KRAFT_DEFAULT, use_last_known_leader_in_balanced_recovery=False)


def elr_builder(part, acceptable, version):
    return PartitionChangeBuilder(part, acceptable, version, min_isr=3).set_election(Election.PREFERRED)


@pytest.mark.parametrize("version", [NO_ELR_NO_LKL, ELR_NO_LKL])
def test_elr_isr_shrink_below_min_isr(version):
    part = PartitionRegistration((1, 2, 3, 4), (1, 2, 3, 4), leader=1, leader_epoch=100, partition_epoch=200)
    record = elr_builder(part, NOT_3, version).set_target_isr([1, 2]).build()
    elr = (3, 4) if version.eligible_leader_replicas else None
    assert record == PartitionChangeRecord(isr=(1, 2), elr=elr)
    after = part.merge(record)
    assert (after.elr, after.last_known_elr) == ((3, 4) if elr else (), ())


@pytest.mark.parametrize("version", [NO_ELR_NO_LKL, ELR_NO_LKL])
def test_elr_isr_expand_above_min_isr(version):
    part = PartitionRegistration((1, 2, 3, 4), (1, 2), leader=1, elr=(3,), last_known_elr=(4,))
    record = elr_builder(part, NOT_3, version).set_target_isr([1, 2, 3]).build()
    assert record == PartitionChangeRecord(isr=(1, 2, 3), elr=(), last_known_elr=())


@pytest.mark.parametrize("version", [NO_ELR_NO_LKL, ELR_NO_LKL])
def test_elr_isr_add_new_member_not_in_elr(version):
    part = PartitionRegistration((1, 2, 3, 4), (1,), leader=1, elr=(3,), last_known_elr=(2,))
    record = elr_builder(part, NOT_3, version).set_target_isr([1, 4]).build()
    if version.eligible_leader_replicas:
        assert record == PartitionChangeRecord(isr=(1, 4))
    else:
        assert record == PartitionChangeRecord(isr=(1, 4), elr=(), last_known_elr=())


@pytest.mark.parametrize("version", [NO_ELR_NO_LKL, ELR_NO_LKL])
def test_elr_remove_unclean_shutdown_replicas(version):
    part = PartitionRegistration((1, 2, 3, 4), (1,), leader=1, elr=(2, 3))
    record = elr_builder(part, NOT_3, version).set_unclean_shutdown_replicas([3]).build()
    if version.eligible_leader_replicas:
        assert record == PartitionChangeRecord(elr=(2,), last_known_elr=(3,))
    else:
        assert record == PartitionChangeRecord(elr=())


@pytest.mark.parametrize("last_known_leader", [True, False])
def test_elr_can_be_elected(last_known_leader):
    version = replace(KRAFT_ELR, use_last_known_leader_in_balanced_recovery=last_known_leader)
    part = PartitionRegistration((1, 2, 3, 4), (1,), leader=1, elr=(3,), last_known_elr=() if last_known_leader
                                 else (2,))
    record = elr_builder(part, lambda r: r != 1, version).set_target_isr([]).build()
    assert record == PartitionChangeRecord(leader=3, isr=(3,), elr=(1,))
    after = part.merge(record)
    assert (after.isr, after.elr, after.last_known_elr) == ((3,), (1,), () if last_known_leader else (2,))


@pytest.mark.parametrize("last_known_leader", [True, False])
def test_elr_isr_can_shrink_to_zero(last_known_leader):
    version = replace(KRAFT_ELR, use_last_known_leader_in_balanced_recovery=last_known_leader)
    part = PartitionRegistration((1, 2, 3, 4), (1, 2, 3, 4), leader=1, leader_epoch=100, partition_epoch=200)
    record = elr_builder(part, lambda r: False, version).set_target_isr([]).build()
    assert record == PartitionChangeRecord(leader=NO_LEADER, isr=(), elr=(1, 2, 3, 4),
                                           last_known_elr=(1,) if last_known_leader else None)
    after = part.merge(record)
    assert after.elr == (1, 2, 3, 4) and after.isr == ()
    if last_known_leader:
        assert after.last_known_elr == (1,)
        again = elr_builder(after, lambda r: False, version).set_unclean_shutdown_replicas([2]).build()
        assert again is not None and again.last_known_elr is None


def test_elr_elect_last_known_leader():
    part = PartitionRegistration((1, 2, 3, 4), (), leader=NO_LEADER, last_known_elr=(1,), leader_epoch=100,
                                 partition_epoch=200)
    record = elr_builder(part, ALL, KRAFT_ELR).set_target_isr([]).build()
    assert record == PartitionChangeRecord(leader=1, isr=(1,), last_known_elr=(), leader_recovery_state=RECOVERING)
    after = part.merge(record)
    assert (after.elr, after.last_known_elr, after.isr) == ((), (), (1,))


def test_elr_elect_last_known_leader_should_fail():
    part = PartitionRegistration((1, 2, 3, 4), (), leader=NO_LEADER, elr=(3,), last_known_elr=(1,))
    assert elr_builder(part, NOT_3, KRAFT_ELR).set_target_isr([]).build() is None


def test_last_known_leader_fenced_is_elected_until_kafka_19522_is_fixed():
    # KAFKA-19522 (apache/kafka#20200): the acceptability test only logged, so a fenced last-known
    # leader still won; the fix refuses it and leaves the partition leaderless.
    part = PartitionRegistration((1, 2, 3, 4), (), leader=NO_LEADER, last_known_elr=(1,))
    fenced = lambda r: r != 1  # noqa: E731
    before = elr_builder(part, fenced, KRAFT_ELR).set_target_isr([]).build()
    assert (before.leader, before.isr) == (1, (1,))
    assert elr_builder(part, fenced, KRAFT_ELR_FIXED).set_target_isr([]).build() is None


def test_merge_bumps_epochs_as_kafka_does():
    after = FOO.merge(PartitionChangeRecord(isr=(2, 1)))
    assert (after.leader_epoch, after.partition_epoch, after.isr) == (100, 201, (2, 1))
    after = FOO.merge(PartitionChangeRecord(leader=FOO.leader))  # the "force an epoch bump" record
    assert (after.leader, after.leader_epoch) == (1, 101)
    assert PartitionChangeRecord().is_no_op and not PartitionChangeRecord(leader=NO_LEADER).is_no_op
    assert NO_LEADER_CHANGE == -2


# ---------------------------------------------------------------------------------------------
# Properties

brokers = st.integers(0, 7)
replica_lists = st.lists(brokers, min_size=1, max_size=5, unique=True)


@st.composite
def partitions(draw):
    replicas = draw(replica_lists)
    # Kafka's invariants without ELR: the ISR is never empty and a leader is in it
    isr = draw(st.lists(st.sampled_from(replicas), unique=True, min_size=1, max_size=len(replicas)))
    leader = draw(st.sampled_from([NO_LEADER, *isr]))
    acceptable = frozenset(draw(st.lists(brokers, unique=True)))
    return PartitionRegistration(tuple(replicas), tuple(isr), leader), acceptable


@given(partitions(), st.sampled_from([Election.ONLINE, Election.PREFERRED]))
def test_clean_kraft_election_never_picks_outside_the_isr(case, election):
    part, acceptable = case
    r = PartitionChangeBuilder(part, acceptable).set_election(election).elect_leader()
    assert not r.unclean
    assert r.node == NO_LEADER or (r.node in part.isr and r.node in acceptable)
    candidates = [b for b in part.replicas if b in part.isr and b in acceptable]
    assert (r.node == NO_LEADER) == (not candidates)


@given(partitions())
def test_kraft_preferred_order_of_fall_backs(case):
    part, acceptable = case
    r = PartitionChangeBuilder(part, acceptable).set_election(Election.PREFERRED).elect_leader()
    valid = [b for b in (part.replicas[0], part.leader, *part.replicas[1:]) if b in part.isr and b in acceptable]
    assert r.node == (valid[0] if valid else NO_LEADER)


@given(partitions())
def test_kraft_unclean_only_leaves_the_isr_when_nothing_in_it_is_acceptable(case):
    part, acceptable = case
    record, after = elect_kraft(part, acceptable, Election.UNCLEAN)
    clean = [b for b in part.replicas if b in part.isr and b in acceptable]
    if clean or after.leader == NO_LEADER:
        assert after.leader == NO_LEADER or after.leader in part.isr
    else:
        assert after.isr == (after.leader,) and after.leader_recovery_state is RECOVERING
        assert after.leader == next(b for b in part.replicas if b in acceptable)


@given(partitions())
def test_kraft_never_writes_an_empty_isr_without_elr(case):
    part, acceptable = case
    for election in Election:
        for target in ([], [b for b in part.isr if b in acceptable]):
            record = PartitionChangeBuilder(part, acceptable).set_election(election).set_target_isr(target).build()
            assert record is None or record.isr is None or record.isr != ()


@given(partitions())
def test_zk_preferred_is_the_head_or_nothing(case):
    part, live = case
    got = preferred_replica_partition_leader_election(part.replicas, part.isr, live)
    head = part.replicas[0]
    assert got == (head if head in live and head in part.isr else None)


@given(partitions(), st.booleans())
def test_zk_offline_matches_kraft_online_when_the_leader_is_gone(case, unclean):
    """Two implementations, one rule: the first live ISR member in replica order (else, if unclean, any live one)."""
    part, live = case
    live = live - {part.leader}
    zk = offline_partition_leader_election(part.replicas, part.isr, live, unclean)
    kraft = PartitionChangeBuilder(part, live).set_election(Election.UNCLEAN if unclean else Election.ONLINE)
    node = kraft.elect_leader().node
    assert (zk if zk is not None else NO_LEADER) == node


@given(partitions(), st.lists(brokers, unique=True))
def test_zk_controlled_shutdown_never_elects_a_shutting_down_broker(case, shutting_down):
    part, live = case
    lai = LeaderAndIsr(part.replicas[0], 0, part.isr)
    r = leader_for_controlled_shutdown(part.replicas, lai, live | set(shutting_down), set(shutting_down))
    if r.leader_and_isr is not None:
        assert r.leader_and_isr.leader not in shutting_down and r.leader_and_isr.leader in part.isr
        assert not set(r.leader_and_isr.isr) & set(shutting_down)
