"""Partition reassignment: the seed's six rows and controller log (003), Kafka's comments and test vectors,
the reference notes (6.1, 6.2, 7.12), and properties of the step functions (failover at any step).
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcheck.invariants.reassignment import PartitionMove
from kcheck.model import NO_LEADER, PartitionReplicas
from kcheck.reference.election import KRaftVersion, PartitionRegistration
from kcheck.reference.reassignment import (
    BrokerDown,
    BrokerUp,
    ControllerFailover,
    FollowerCaughtUp,
    InvalidReplicaAssignmentException,
    IsrChange,
    NoReassignmentInProgressException,
    PartitionReassignmentReplicas,
    PartitionReassignmentRevert,
    Reassign,
    ReplicaState,
    RunStep,
    StepNotEnabled,
    ZkReplicaAssignment,
    guard,
    kraft_initial_state,
    kraft_next_step,
    kraft_reassignment_steps,
    next_step,
    scala_hash_order,
    scala_set_add,
    zk_initial_state,
    zk_next_step,
    zk_reassignment_steps,
)
from kcheck.reference.releases import profile


def zk_view(state):
    a, lai = state.zk.assignment, state.zk.leader_and_isr
    return a.replicas, a.adding_replicas, a.removing_replicas, lai.leader, lai.isr


# ---------------------------------------------------------------------------------------------
# The seed (003): ORS = {1, 2, 3}, TRS = {4, 5, 6}


SEED_TABLE = [  # RS, AR, RR, leader, ISR (a set), phase: typed from the seed's table
    ((1, 2, 3), (), (), 1, {1, 2, 3}, "initial state"),
    ((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3), 1, {1, 2, 3}, "step A2"),
    ((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3), 1, {1, 2, 3, 4, 5, 6}, "phase B"),
    ((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3), 4, {1, 2, 3, 4, 5, 6}, "step B3"),
    ((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3), 4, {4, 5, 6}, "step B4"),
    ((4, 5, 6), (), (), 4, {4, 5, 6}, "step B6"),
]


def test_zk_reassignment_reproduces_the_seed_table():
    rows = [r for r in zk_reassignment_steps([1, 2, 3], [4, 5, 6]) if r.seed_row]
    got = [(*zk_view(r.state)[:4], set(zk_view(r.state)[4]), r.seed_row) for r in rows]
    assert got == SEED_TABLE


def test_zk_reassignment_reproduces_the_seed_controller_log():
    """The seed's log: A1 'Updated leader epoch ... to 6, zkVersion=8'; B3 'leader=4, leaderEpoch=7,
    isr=List(5, 1, 6, 2, 3, 4), zkVersion=12'; B4 removes 1, 2, 3 in that order at epochs 8, 9, 10."""
    rows = zk_reassignment_steps([1, 2, 3], [4, 5, 6], leader_epoch=5, partition_epoch=7)
    by = {}
    for r in rows:
        by.setdefault(r.label, []).append(r.state.zk.leader_and_isr)
    (a1,) = by["A1"]
    assert (a1.leader, a1.leader_epoch, a1.partition_epoch, a1.isr) == (1, 6, 8, (1, 2, 3))
    (b3,) = by["B3"]
    assert (b3.leader, b3.leader_epoch, b3.partition_epoch, b3.isr) == (4, 7, 12, (5, 1, 6, 2, 3, 4))
    assert [(x.leader_epoch, x.partition_epoch, x.isr) for x in by["B4"]] == [
        (8, 13, (5, 6, 2, 3, 4)), (9, 14, (5, 6, 3, 4)), (10, 15, (5, 6, 4))]
    final = rows[-1].state
    assert zk_view(final) == ((4, 5, 6), (), (), 4, (5, 6, 4)) and not final.being_reassigned and final.idle


def test_scala_set_order_matches_the_seed_log():
    # The broker's ISR is a Scala Set: insertion order up to four members, then the hash trie's order.
    isr = (1, 2, 3)
    for b in (4, 5, 6):
        isr = scala_set_add(isr, b)
    assert isr == (5, 1, 6, 2, 3, 4)
    assert scala_hash_order([1, 2, 3]) == (1, 2, 3)  # the B4 order of RR in the seed log
    assert scala_set_add((1, 2, 3), 2) == (1, 2, 3)


def test_kraft_reassignment_of_the_seed_example():
    rows = kraft_reassignment_steps([1, 2, 3], [4, 5, 6])
    start = rows[1].state.registration
    assert (start.replicas, start.adding_replicas, start.removing_replicas, start.leader_epoch) == (
        (4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3), 0)  # no epoch bump: the new list keeps every old replica
    end = rows[-1].state.registration
    # completion: ISR minus removing, then ONLINE election demotes leader 1 to the first target replica
    assert (end.replicas, end.isr, end.leader, end.leader_epoch, end.adding_replicas, end.removing_replicas) == (
        (4, 5, 6), (5, 6, 4), 4, 1, (), ())
    assert len(rows) == 5  # initial, start, three AlterPartitions (the last one completes)


# ---------------------------------------------------------------------------------------------
# Plans: ZK keeps original order, KRaft sorts (notes 6.2, 7.12; PartitionReassignmentReplicasTest)


def test_zk_and_kraft_order_removing_differently():
    zk = ZkReplicaAssignment((3, 2, 1, 0)).reassign_to([3, 1])
    assert (zk.replicas, zk.adding_replicas, zk.removing_replicas) == ((3, 1, 2, 0), (), (2, 0))
    kraft = PartitionReassignmentReplicas.of((3, 2, 1, 0), (3, 1))
    assert (kraft.replicas, kraft.adding, kraft.removing) == ((3, 1, 0, 2), (), (0, 2))


@pytest.mark.parametrize("current,target,removing,adding,replicas", [
    ((3, 2, 1), (3, 2, 1), (), (), (3, 2, 1)),  # testNoneAddedOrRemoved
    ((3, 2, 1), (3, 6, 2, 1, 5), (), (5, 6), (3, 6, 2, 1, 5)),  # testAdditions
    ((3, 2, 1, 0), (3, 1), (0, 2), (), (3, 1, 0, 2)),  # testRemovals
    ((3, 2, 1, 0), (7, 3, 1, 9), (0, 2), (7, 9), (7, 3, 1, 9, 0, 2)),  # testAdditionsAndRemovals
    ((3, 2, 1, 0), (0, 1, 3, 2), (), (), (0, 1, 3, 2)),  # testRearrangement
])
def test_kraft_plan_vectors(current, target, removing, adding, replicas):
    p = PartitionReassignmentReplicas.of(current, target)
    assert (p.removing, p.adding, p.replicas) == (removing, adding, replicas)


@pytest.mark.parametrize("current,target,isr,all_targets,adding_only,unless_shrinking", [
    ((0, 1, 2), (3, 4, 5), (0, 1, 2, 3, 4), None, None, None),
    ((0, 1, 2), (3, 4, 5), (0, 1, 2, 3, 4, 5), ((3, 4, 5), (3, 4, 5)), ((3, 4, 5), (3, 4, 5)),
     ((3, 4, 5), (3, 4, 5))),
    ((0, 1, 2), (0, 1, 3), (0, 1, 2, 3), ((0, 1, 3), (0, 1, 3)), ((0, 1, 3), (0, 1, 3)), ((0, 1, 3), (0, 1, 3))),
    # an existing target replica (1) out of sync: only the newer rules complete
    ((0, 1, 2), (0, 1, 3), (0, 2, 3), None, ((0, 1, 3), (0, 3)), ((0, 1, 3), (0, 3))),
    ((0, 1, 2), (0, 1, 3), (0, 1, 2), None, None, None),  # the adding replica 3 out of sync
    ((0, 1, 2, 3), (1, 2, 3, 4, 5), (0, 1, 2, 4, 5), None, ((1, 2, 3, 4, 5), (1, 2, 4, 5)),
     ((1, 2, 3, 4, 5), (1, 2, 4, 5))),
    ((0, 1, 2, 3), (1, 2, 3, 4, 5), (0, 1, 2, 3, 5), None, None, None),
    # shrinking from five to four with replica 4 out of sync: KAFKA-19975 still waits
    ((0, 1, 2, 3, 4), (2, 3, 4, 5), (0, 1, 2, 3, 5), None, ((2, 3, 4, 5), (2, 3, 5)), None),
    ((0, 1, 2, 3, 4), (2, 3, 4, 5), (0, 1, 2, 3, 4), None, None, None),
])
def test_kraft_completion_rules_by_version(current, target, isr, all_targets, adding_only, unless_shrinking):
    """PartitionReassignmentReplicasTest across the three rules Kafka has had (see KRaftVersion)."""
    p = PartitionReassignmentReplicas.of(current, target)
    assert p.maybe_complete_reassignment(isr) == all_targets
    assert p.maybe_complete_reassignment(isr, "adding") == adding_only
    assert p.maybe_complete_reassignment(isr, "adding-unless-shrinking") == unless_shrinking
    assert p.original_replicas == tuple(current) or set(p.original_replicas) == set(current)


def test_zk_cancel_cannot_restore_the_original_order():
    # KafkaController's comment: [1, 2, 3] reassigned to [3, 4, 2] is stored as [3, 4, 2, 1]
    a = ZkReplicaAssignment((1, 2, 3)).reassign_to([3, 4, 2])
    assert a.replicas == (3, 4, 2, 1) and a.origin_replicas == (3, 2, 1)
    st = zk_initial_state((1, 2, 3), live={1, 2, 3, 4})
    st = zk_next_step(st, Reassign((3, 4, 2)))
    while st.pending:
        st = zk_next_step(st, RunStep())
    st = zk_next_step(st, Reassign(None))  # cancel
    while st.pending:
        st = zk_next_step(st, RunStep())
    assert zk_view(st)[:3] == ((3, 2, 1), (), ()) and st.zk.leader_and_isr.leader == 1
    assert st.replica_state(4) is ReplicaState.NON_EXISTENT


def test_zk_new_target_over_an_ongoing_one_is_built_from_the_origin():
    ongoing = ZkReplicaAssignment((1, 2, 3)).reassign_to([4, 5, 6])
    again = ongoing.reassign_to([4, 7, 8])
    assert (again.replicas, again.adding_replicas, again.removing_replicas) == ((4, 7, 8, 1, 2, 3), (4, 7, 8),
                                                                               (1, 2, 3))


def test_zk_replacing_a_move_stops_the_dropped_replicas_at_once():
    st = zk_initial_state((4, 5, 6, 1, 2, 3), isr=(1, 2, 3, 4), leader=1, adding=(4, 5, 6), removing=(1, 2, 3),
                          live=range(1, 8))
    st = zk_next_step(st, Reassign((1, 2, 7)))
    names = []
    while st.pending:
        names.append(st.pending[0].name)
        st = zk_next_step(st, RunStep())
    assert names == ["U1", "U2", "U3", "A1", "A2"]
    assert zk_view(st) == ((1, 2, 7, 3), (7,), (3,), 1, (1, 2, 3))  # 4 left the ISR in U3
    assert {b: s for b, s in st.replica_states} == {1: ReplicaState.ONLINE, 2: ReplicaState.ONLINE,
                                                    3: ReplicaState.ONLINE, 7: ReplicaState.NEW}


# ---------------------------------------------------------------------------------------------
# KRaft cancel and revert (notes 6.2)


def test_kraft_revert_of_an_isr_made_only_of_adding_replicas_is_unclean():
    part = PartitionRegistration((4, 5, 1, 2), (4, 5), leader=4, removing_replicas=(1, 2), adding_replicas=(4, 5))
    revert = PartitionReassignmentRevert.of(part)
    assert (revert.replicas, revert.isr, revert.unclean) == ((1, 2), (1,), True)
    st = kraft_initial_state((4, 5, 1, 2), isr=(4, 5), leader=4, adding=(4, 5), removing=(1, 2))
    with pytest.raises(InvalidReplicaAssignmentException, match="would require an unclean leader election"):
        kraft_next_step(st, Reassign(None))
    from dataclasses import replace
    st = kraft_next_step(replace(st, unclean_leader_election_enable=True), Reassign(None))
    reg = st.registration
    assert (reg.replicas, reg.isr, reg.leader, reg.adding_replicas, reg.removing_replicas) == ((1, 2), (1,), 1, (), ())


def test_kraft_cancel_without_a_reassignment_and_bad_targets_are_refused():
    st = kraft_initial_state((1, 2, 3), registered=range(1, 6))
    with pytest.raises(NoReassignmentInProgressException):
        kraft_next_step(st, Reassign(None))
    with pytest.raises(InvalidReplicaAssignmentException, match="includes broker 9, but no such broker"):
        kraft_next_step(st, Reassign((1, 9)))
    with pytest.raises(InvalidReplicaAssignmentException, match="includes the broker 2 more than once"):
        kraft_next_step(st, Reassign((2, 4, 2)))
    with pytest.raises(InvalidReplicaAssignmentException, match="empty replica list"):
        kraft_next_step(st, Reassign(()))


def test_kraft_pure_reorder_completes_at_once_with_an_epoch_bump_only_when_a_replica_leaves():
    st = kraft_next_step(kraft_initial_state((1, 2, 3)), Reassign((3, 2, 1)))
    assert st.registration.replicas == (3, 2, 1) and st.registration.leader_epoch == 0
    st = kraft_next_step(kraft_initial_state((1, 2, 3)), Reassign((1, 2)))  # ISR already covers [1, 2]
    reg = st.registration
    assert (reg.replicas, reg.isr, reg.leader, reg.leader_epoch) == ((1, 2), (1, 2), 1, 1)


def test_kraft_new_target_over_an_ongoing_one_starts_from_the_full_replica_list():
    # unlike ZK, old adding replicas the new target drops become removing replicas (and stay in the ISR)
    st = kraft_initial_state((4, 5, 6, 1, 2, 3), isr=(1, 2, 3, 4), leader=1, adding=(4, 5, 6), removing=(1, 2, 3),
                             live=range(1, 8))
    st = kraft_next_step(st, Reassign((1, 2, 7)))
    reg = st.registration
    assert (reg.replicas, reg.adding_replicas, reg.removing_replicas, reg.isr) == (
        (1, 2, 7, 3, 4, 5, 6), (7,), (3, 4, 5, 6), (1, 2, 3, 4))


# ---------------------------------------------------------------------------------------------
# Guards, failures


def test_guards():
    st = zk_initial_state((1, 2, 3), live={1, 2, 3, 4})
    with pytest.raises(StepNotEnabled, match="no step pending"):
        zk_next_step(st, RunStep())
    with pytest.raises(NoReassignmentInProgressException):
        zk_next_step(st, Reassign(None))
    with pytest.raises(InvalidReplicaAssignmentException, match="not alive"):
        zk_next_step(st, Reassign((1, 2, 9)))
    with pytest.raises(InvalidReplicaAssignmentException, match="Duplicate replica ids"):
        zk_next_step(st, Reassign((1, 1)))
    busy = zk_next_step(st, Reassign((1, 2, 4)))
    assert guard(busy, IsrChange((1, 2, 3))) == "the controller is busy with onPartitionReassignment"
    assert guard(busy, ControllerFailover()) is None  # a controller can die at any time
    assert guard(st, FollowerCaughtUp(1)) == "broker 1 is already in the ISR"
    assert guard(st, IsrChange((2, 3))) == "an ISR must contain the leader"


def test_zk_leader_moves_to_a_dead_target_fails_and_b4_leaves_the_partition_leaderless():
    st = zk_initial_state((1, 2), live={1, 2, 3})
    st = zk_next_step(st, Reassign((3,)))
    while st.pending:
        st = zk_next_step(st, RunStep())
    st = zk_next_step(st, FollowerCaughtUp(3))  # 3 in the ISR: phase B is scheduled
    st = zk_next_step(st, RunStep())  # B1
    st = zk_next_step(st, RunStep())  # B2
    st = st.__class__(**{**st.__dict__, "live_brokers": frozenset({1, 2})})  # 3 dies before B3 runs
    while st.pending:
        st = zk_next_step(st, RunStep())
    assert zk_view(st) == ((3,), (), (), NO_LEADER, (3,))


def test_zk_broker_failure_moves_leadership_and_shrinks_the_isr():
    st = zk_initial_state((1, 2, 3), leader_epoch=4)
    st = zk_next_step(st, BrokerDown(1))
    lai = st.zk.leader_and_isr
    assert (lai.leader, lai.isr, lai.leader_epoch) == (2, (2, 3), 5)
    st = zk_next_step(st, BrokerDown(3))  # a follower: only the ISR changes (new epoch)
    assert (st.zk.leader_and_isr.leader, st.zk.leader_and_isr.isr) == (2, (2,))
    st = zk_next_step(st, BrokerDown(2))  # last ISR member: it stays in the ISR, the partition has no leader
    assert (st.zk.leader_and_isr.leader, st.zk.leader_and_isr.isr) == (NO_LEADER, (2,))
    st = zk_next_step(st, BrokerUp(1))  # not in the ISR and unclean election is off: still offline
    assert st.zk.leader_and_isr.leader == NO_LEADER
    st = zk_next_step(st, BrokerUp(2))
    assert st.zk.leader_and_isr.leader == 2


def test_kraft_fencing_never_empties_the_isr_without_elr():
    st = kraft_initial_state((1, 2))
    st = kraft_next_step(st, BrokerDown(1))
    assert (st.registration.leader, st.registration.isr) == (2, (2,))
    st = kraft_next_step(st, BrokerDown(2))
    assert (st.registration.leader, st.registration.isr) == (NO_LEADER, (2,))
    st = kraft_next_step(st, BrokerUp(2))
    assert st.registration.leader == 2


def test_failover_between_u1_and_u2_forgets_the_dropped_replicas():
    """Model finding (KafkaController as read): replicas to stop are computed from memory in U2, so a controller
    that dies after U1 never stops the adding replicas the new target dropped; broker 4 stays in the ISR."""
    st = zk_initial_state((4, 5, 6, 1, 2, 3), isr=(1, 2, 3, 4), leader=1, adding=(4, 5, 6), removing=(1, 2, 3),
                          live=range(1, 8))
    st = zk_next_step(st, Reassign((1, 2, 7)))
    st = zk_next_step(st, RunStep())  # U1 written
    st = zk_next_step(st, ControllerFailover())
    while st.pending:
        st = zk_next_step(st, RunStep())
    st = zk_next_step(st, FollowerCaughtUp(7))
    while st.pending:
        st = zk_next_step(st, RunStep())
    assert st.zk.assignment.replicas == (1, 2, 7)
    assert 4 in st.zk.leader_and_isr.isr  # not a replica, still "in sync"


# ---------------------------------------------------------------------------------------------
# Properties

ids = st.integers(0, 7)


@st.composite
def moves(draw):
    original = draw(st.lists(ids, min_size=1, max_size=4, unique=True))
    target = draw(st.lists(ids, min_size=1, max_size=4, unique=True))
    return tuple(original), tuple(target)


def drive_to_end(state, target):
    """Run pending steps; let out-of-sync target replicas catch up, in target order; repeat until idle and done."""
    for _ in range(50):
        while state.pending:
            state = zk_next_step(state, RunStep())
        lagging = [b for b in target if guard(state, FollowerCaughtUp(b)) is None]
        if not lagging:
            return state
        state = zk_next_step(state, FollowerCaughtUp(lagging[0]))
    raise AssertionError("no progress")


@settings(max_examples=60)
@given(moves())
def test_zk_failover_at_any_step_recovers_and_finishes(case):
    original, target = case
    rows = zk_reassignment_steps(original, target)
    for i, row in enumerate(rows):
        st = row.state
        a = st.zk.assignment
        if a.is_being_reassigned:  # ZooKeeper alone still knows ORS (as a set: a reorder loses its order)
            assert set(st.recoverable_original_replicas()) == set(original)
        else:
            assert a.replicas in (original, target)
        if i == 0:
            continue
        # a request the controller had not yet written to ZooKeeper (U1) dies with it
        known = a.target_replicas
        end = drive_to_end(zk_next_step(st, ControllerFailover()), known)
        assert zk_view(end)[:3] == (known, (), ())
        assert set(end.zk.leader_and_isr.isr) == set(known) and end.zk.leader_and_isr.leader in known
    assert zk_view(rows[-1].state)[:3] == (target, (), ())


@settings(max_examples=60)
@given(moves())
def test_kraft_reassignment_ends_on_the_target_with_a_target_leader(case):
    original, target = case
    end = kraft_reassignment_steps(original, target)[-1].state.registration
    assert (end.replicas, end.adding_replicas, end.removing_replicas) == (target, (), ())
    assert set(end.isr) == set(target) and end.leader in target
    assert end.leader == (original[0] if original[0] in target else target[0])


@st.composite
def in_flight_moves(draw):
    """A partition at rest or in the middle of a move (idle controller), and a new target."""
    original = draw(st.lists(ids, min_size=1, max_size=4, unique=True))
    leader = original[0]
    if draw(st.booleans()):
        first = draw(st.lists(ids, min_size=1, max_size=4, unique=True))
        a = ZkReplicaAssignment(tuple(original)).reassign_to(first)
        replicas, adding, removing = a.replicas, a.adding_replicas, a.removing_replicas
    else:
        replicas, adding, removing = tuple(original), (), ()
    others = [b for b in replicas if b != leader]
    followers = draw(st.lists(st.sampled_from(others), unique=True)) if others else []
    isr = (leader, *followers)
    target = tuple(draw(st.lists(ids, min_size=1, max_size=4, unique=True)))
    return PartitionReplicas("t", 0, replicas, leader, isr, adding, removing), target


@settings(max_examples=80)
@given(in_flight_moves(), st.sampled_from(["zk", "kraft"]), st.sampled_from(["4.2.2", "4.4.0"]))
def test_plan_safety_lowest_isr_matches_running_the_controller(case, controller, release):
    """invariants.reassignment computes the lowest ISR in closed form; the reference controller, run step by
    step with every target replica catching up, must never go lower and must reach it (a KRaft move under the
    release's completion rule: KAFKA-15665 up to 4.2, KAFKA-19975 from 4.3)."""
    current, target = case
    move = PartitionMove(current, target, controller, release)
    kwargs = dict(leader=current.leader, isr=current.isr, adding=current.adding, removing=current.removing)
    if controller == "zk":
        rows = zk_reassignment_steps(current.replicas, target, **kwargs)
        sizes = [len(r.state.zk.leader_and_isr.isr) for r in rows]
        done = zk_view(rows[-1].state)[:3] == (target, (), ())
        plan = rows[-1].state  # the RS/AR/RR the controller recorded are those the move reports
        first = next(r.state.zk.assignment for r in rows if r.label == "U1") if any(
            r.label == "U1" for r in rows) else None
        if first is not None:
            assert (first.replicas, first.adding_replicas, first.removing_replicas) == move.plan
    else:
        rows = kraft_reassignment_steps(current.replicas, target, **kwargs, catch_up_order=move.catch_up_order,
                                        version=profile(release).kraft_rules())
        sizes = [len(r.state.registration.isr) for r in rows]
        reg = rows[-1].state.registration
        done = (reg.replicas, reg.adding_replicas, reg.removing_replicas) == (target, (), ())
        plan = None
    assert done == (move.final_replicas == target)  # plan safety flags the moves that do not end on the target
    if not done:
        return
    assert min(sizes) == move.closed_form_lowest_isr == move.lowest_isr
    assert plan is None or plan.zk.leader_and_isr.leader in target


@given(moves())
def test_next_step_dispatches_to_either_controller(case):
    original, target = case
    z = next_step(zk_initial_state(original, live=set(original) | set(target)), Reassign(target))
    k = next_step(kraft_initial_state(original, live=set(original) | set(target)), Reassign(target))
    assert z.pending and k.registration.replicas[: len(target)] == target


def test_kraft_version_completion_rule_in_the_builder():
    # [0, 1, 2] -> [0, 1, 3] with 1 out of sync: only KAFKA-19975's rule completes
    for rule, completes in (("all-targets", False), ("adding-unless-shrinking", True)):
        st = kraft_initial_state((0, 1, 2), isr=(0, 2), leader=0, live=range(4),
                                 version=KRaftVersion(reassignment_completion=rule))
        st = kraft_next_step(st, Reassign((0, 1, 3)))
        st = kraft_next_step(st, FollowerCaughtUp(3))
        assert (st.registration.replicas == (0, 1, 3)) == completes


def test_kraft_keeps_stale_lists_when_the_new_plan_adds_nothing():
    """Model finding (ReplicationControlManager.changePartitionReassignment as read, not run on a cluster): the
    builder is only given `removing`/`adding` when they are non-empty, so an in-flight [0] -> [1] re-targeted to
    [0, 1] keeps removing=[0] and ends on [1]. The ZK controller rebuilds AR/RR from the origin and ends on [0, 1]."""
    state = dict(leader=0, isr=(0,), adding=(1,), removing=(0,))
    kraft_end = kraft_reassignment_steps((1, 0), (0, 1), **state)[-1].state.registration
    assert (kraft_end.replicas, kraft_end.isr, kraft_end.leader) == ((1,), (1,), 1)
    zk_end = zk_reassignment_steps((1, 0), (0, 1), **state)[-1].state
    assert zk_view(zk_end)[:3] == ((0, 1), (), ())
    current = PartitionReplicas("t", 0, (1, 0), 0, (0,), (1,), (0,))
    assert PartitionMove(current, (0, 1), "kraft").final_replicas == (1,)
    assert PartitionMove(current, (0, 1), "zk").final_replicas == (0, 1)


def test_zk_replacing_a_move_whose_leader_is_dropped_leaves_the_partition_leaderless():
    """Model finding (KafkaController as read): 4 joined, became leader (RS's head is preferred during a move),
    then a new plan drops it. U3 takes the leader out of the ISR (leader -1) and nothing elects a new one, so no
    leader is left to add 7 to the ISR. KRaft keeps 4 as a removing replica and leader until completion (the case
    apache/kafka#13521 tests)."""
    state = dict(leader=4, isr=(1, 2, 3, 4), adding=(4, 5, 6), removing=(1, 2, 3))
    zk_end = zk_reassignment_steps((4, 5, 6, 1, 2, 3), (1, 2, 7), **state)[-1].state
    assert zk_view(zk_end) == ((1, 2, 7, 3), (7,), (3,), NO_LEADER, (1, 2, 3)) and zk_end.being_reassigned
    kraft_end = kraft_reassignment_steps((4, 5, 6, 1, 2, 3), (1, 2, 7), **state)[-1].state.registration
    assert (kraft_end.replicas, kraft_end.leader, kraft_end.isr) == ((1, 2, 7), 1, (1, 2, 7))
    current = PartitionReplicas("t", 0, (4, 5, 6, 1, 2, 3), 4, (1, 2, 3, 4), (4, 5, 6), (1, 2, 3))
    assert PartitionMove(current, (1, 2, 7), "zk").final_replicas == (1, 2, 7, 3)  # reaches-target flags it
