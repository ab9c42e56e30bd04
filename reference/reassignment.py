"""Partition reassignment as pure step functions over a small frozen controller state.

ZooKeeper controller (`core/src/main/scala/kafka/controller/KafkaController.scala`:
`onPartitionReassignment`, `updateCurrentReassignment`, `moveReassignedPartitionLeaderIfRequired`,
`stopRemovedReplicasOfReassignedPartition`, `maybeBuildReassignment`; `ControllerContext.scala`:
`ReplicaAssignment`; `ReplicaStateMachine.scala`: `doRemoveReplicasFromIsr`). Notation as in
Kafka: RS current replica set, ORS original, TRS target, AR adding, RR removing. Every
sub-step (U1-U3, A1-A2, B1-B8, one B4 per removed replica) is one `RunStep` event, so a
controller failover can be put between any two ZooKeeper writes; `ZkControllerState.zk` is what
ZooKeeper holds (the assignment znode with RS/AR/RR, the partition state znode with leader,
epochs and ISR), the rest is controller memory that a failover loses.

KRaft controller (`metadata/.../controller/PartitionReassignmentReplicas.java`,
`PartitionReassignmentRevert.java`, `ReplicationControlManager.java`:
`changePartitionReassignment`, `cancelPartitionReassignment`, `alterPartition`,
`generateLeaderAndIsrUpdates`): every change is one `PartitionChangeRecord` built by
`PartitionChangeBuilder` (see `election.py`); the registration is the persisted state.

Broker side: a leader grows its ISR as a Scala immutable `Set[Int]`
(`core/.../cluster/Partition.scala`) and sends it as a list, so the ISR order a controller
stores follows Scala's Set: insertion order up to four members, then the hash-trie order
(`scala_set_add`). That reproduces the ISR `5,1,6,2,3,4` of the seed's controller log.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import NoReturn

from kcheck.model import NO_LEADER
from kcheck.reference.election import (
    KRAFT_DEFAULT,
    Election,
    KRaftVersion,
    LeaderAndIsr,
    PartitionChangeBuilder,
    PartitionChangeRecord,
    PartitionRegistration,
    leader_for_offline,
    leader_for_reassign,
    maybe_complete_reassignment,
)
from kcheck.reference.errors import IllegalArgumentException, KafkaError


class InvalidReplicaAssignmentException(KafkaError):
    """org.apache.kafka.common.errors.InvalidReplicaAssignmentException (INVALID_REPLICA_ASSIGNMENT)."""


class NoReassignmentInProgressException(KafkaError):
    """org.apache.kafka.common.errors.NoReassignmentInProgressException (NO_REASSIGNMENT_IN_PROGRESS)."""


class StepNotEnabled(Exception):
    """An event the model's guard refuses in this state (e.g. a step with nothing pending)."""


# ---------------------------------------------------------------------------------------------
# Scala collection behaviour the controller's outputs depend on


def _s32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def scala_improve(h: int) -> int:
    """`scala.collection.Hashing.improve`, the hash Scala 2.13's immutable HashMap/HashSet index by."""
    h = _s32(h)
    h = _s32(h + ~(h << 9))
    h = _s32(h ^ ((h & 0xFFFFFFFF) >> 14))
    h = _s32(h + (h << 4))
    return _s32(h ^ ((h & 0xFFFFFFFF) >> 10))


def scala_hash_order(keys: Iterable[int], shift: int = 0) -> tuple[int, ...]:
    """Iteration order of a Scala 2.13 immutable HashMap/HashSet (CHAMP trie) of distinct Int keys.

    A node lists its own entries by their 5-bit hash fragment, then its sub-nodes in fragment
    order; the trie is canonical, so the order depends only on the keys.
    """
    groups: dict[int, list[int]] = {}
    for k in keys:
        groups.setdefault(((scala_improve(k) & 0xFFFFFFFF) >> shift) & 31, []).append(k)
    ordered = sorted(groups.items())
    out = [g[0] for _, g in ordered if len(g) == 1]
    for _, g in ordered:
        if len(g) > 1:
            out.extend(scala_hash_order(g, shift + 5))
    return tuple(out)


def scala_set_of(items: Sequence[int]) -> tuple[int, ...]:
    """`Seq.toSet` on distinct Ints: Set1..Set4 keep insertion order, larger sets are hash tries."""
    return tuple(items) if len(items) <= 4 else scala_hash_order(items)


def scala_set_add(items: Sequence[int], item: int) -> tuple[int, ...]:
    """`set + item` for a Scala immutable Set shown in its iteration order."""
    if item in items:
        return tuple(items)
    return scala_set_of((*items, item))


def _diff(a: Sequence[int], b: Collection[int]) -> tuple[int, ...]:
    """Scala `Seq.diff` on duplicate-free lists: a's order, b's members removed."""
    gone = set(b)
    return tuple(x for x in a if x not in gone)


def _distinct(a: Iterable[int]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(a))


# ---------------------------------------------------------------------------------------------
# ZooKeeper controller: values


@dataclass(frozen=True)
class ZkReplicaAssignment:
    """`kafka.controller.ReplicaAssignment`: RS with AR and RR (KIP-455), as in the topic znode."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in ("replicas", "adding_replicas", "removing_replicas"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        """ORS = RS minus AR (the original order is lost when the target reorders old replicas)."""
        return _diff(self.replicas, self.adding_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """TRS = RS minus RR."""
        return _diff(self.replicas, self.removing_replicas)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    def reassign_to(self, target: Sequence[int]) -> ZkReplicaAssignment:
        """`reassignTo`: RS = distinct(TRS ++ ORS); AR and RR in that order. Built from the ORIGIN,
        so a reassignment started over another drops the old target's adding replicas."""
        full = _distinct((*target, *self.origin_replicas))
        return ZkReplicaAssignment(full, _diff(full, self.origin_replicas), _diff(full, target))


class ReplicaState(StrEnum):
    """The ZK controller's replica states (`ReplicaStateMachine.scala`)."""

    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    NON_EXISTENT = "NonExistentReplica"


@dataclass(frozen=True)
class ZkPersisted:
    """What ZooKeeper holds for the partition; a new controller rebuilds its memory from this alone."""

    assignment: ZkReplicaAssignment  # /brokers/topics/<topic>: replicas, adding_replicas, removing_replicas
    leader_and_isr: LeaderAndIsr  # /brokers/topics/<topic>/partitions/<p>/state


@dataclass(frozen=True)
class PendingStep:
    """A sub-step of `onPartitionReassignment` the controller has yet to run."""

    name: str  # U1, U2, U3, A1, A2, B1 ... B8
    assignment: ZkReplicaAssignment  # the assignment onPartitionReassignment works on
    replicas: tuple[int, ...] = ()  # U3: replicas no longer needed; B4: the one replica taken out


@dataclass(frozen=True)
class ZkControllerState:
    """One partition as the ZK controller and ZooKeeper see it. Frozen; events give new values."""

    topic: str
    partition: int
    zk: ZkPersisted
    assignment: ZkReplicaAssignment  # controller memory: partitionFullReplicaAssignment
    leader_and_isr: LeaderAndIsr  # controller memory: partitionLeadershipInfo
    being_reassigned: bool  # controller memory: partitionsBeingReassigned contains the partition
    replica_states: tuple[tuple[int, ReplicaState], ...]  # controller memory, sorted by broker
    live_brokers: frozenset[int]
    pending: tuple[PendingStep, ...] = ()
    controller_epoch: int = 1
    unclean_leader_election_enable: bool = False  # the topic's unclean.leader.election.enable

    @property
    def idle(self) -> bool:
        return not self.pending

    def replica_state(self, broker: int) -> ReplicaState:
        return dict(self.replica_states).get(broker, ReplicaState.NON_EXISTENT)

    def recoverable_original_replicas(self) -> tuple[int, ...]:
        """The ORS a controller elected now would derive from ZooKeeper (RS minus AR)."""
        return self.zk.assignment.origin_replicas


def zk_initial_state(
    replicas: Sequence[int], *, leader: int | None = None, isr: Sequence[int] | None = None,
    live: Collection[int] | None = None, leader_epoch: int = 0, partition_epoch: int = 0,
    topic: str = "topic", partition: int = 0, unclean_leader_election_enable: bool = False,
    adding: Sequence[int] = (), removing: Sequence[int] = (),
) -> ZkControllerState:
    """A partition between events: leader (default the first replica), ISR (default every replica), all live.

    `adding`/`removing` describe a reassignment already in flight (RS = `replicas`), idle between events.
    """
    assignment = ZkReplicaAssignment(tuple(replicas), tuple(adding), tuple(removing))
    lai = LeaderAndIsr(replicas[0] if leader is None else leader, leader_epoch,
                       tuple(replicas if isr is None else isr), partition_epoch=partition_epoch)
    live_set = frozenset(replicas if live is None else live)
    states = tuple((b, ReplicaState.ONLINE if b in live_set else ReplicaState.OFFLINE) for b in sorted(replicas))
    return ZkControllerState(topic, partition, ZkPersisted(assignment, lai), assignment, lai,
                             assignment.is_being_reassigned, states, live_set,
                             unclean_leader_election_enable=unclean_leader_election_enable)


# ---------------------------------------------------------------------------------------------
# ZooKeeper controller: events


@dataclass(frozen=True)
class Reassign:
    """AlterPartitionReassignments for this partition: a target list, or None to cancel."""

    target: tuple[int, ...] | None


@dataclass(frozen=True)
class RunStep:
    """The controller runs the next pending sub-step."""


@dataclass(frozen=True)
class IsrChange:
    """The leader's AlterPartition with a new ISR, written by the controller."""

    isr: tuple[int, ...]


@dataclass(frozen=True)
class FollowerCaughtUp:
    """A follower caught up: the leader adds it to its ISR (a Scala Set) and sends AlterPartition."""

    broker: int


@dataclass(frozen=True)
class ControllerFailover:
    """The controller dies (at any point) and a new one loads everything from ZooKeeper."""


@dataclass(frozen=True)
class BrokerDown:
    broker: int


@dataclass(frozen=True)
class BrokerUp:
    broker: int


Event = Reassign | RunStep | IsrChange | FollowerCaughtUp | ControllerFailover | BrokerDown | BrokerUp


def _validate_zk_target(st: ZkControllerState, target: tuple[int, ...]) -> str | None:
    """`KafkaController.validateReplicas`: the ZK controller's checks, in its order, with its messages
    (lists printed Python's way; Kafka prints Scala collections)."""
    if not target:
        return "Empty replica list specified in partition reassignment."
    if len(set(target)) != len(target):
        return f"Duplicate replica ids in partition reassignment replica list: {list(target)}"
    if any(b < 0 for b in target):
        return f"Invalid broker id in replica list: {list(target)}"
    adding = st.assignment.reassign_to(target).adding_replicas
    if not set(adding) <= st.live_brokers:
        return (f"Replica assignment has brokers that are not alive. Replica list: {list(adding)}, "
                f"live broker list: {sorted(st.live_brokers)}")
    return None


def _broker_event_guard(event: Event, replicas: Collection[int], isr: Sequence[int], up: Collection[int],
                        word: str, isr_guard: Callable[[IsrChange], str | None]) -> str | None:
    """The guard both controllers share for FollowerCaughtUp, BrokerDown and BrokerUp; `up` is the set of
    brokers the controller counts (ZK: live, KRaft: active, i.e. unfenced and not shutting down)."""
    if isinstance(event, FollowerCaughtUp):
        if event.broker not in replicas or event.broker not in up:
            return f"broker {event.broker} is not {'an' if word[0] in 'aeiou' else 'a'} {word} replica"
        if event.broker in isr:
            return f"broker {event.broker} is already in the ISR"
        return isr_guard(IsrChange(scala_set_add(scala_set_of(isr), event.broker)))
    if isinstance(event, BrokerDown):
        return None if event.broker in up else f"broker {event.broker} is not {word}"
    if isinstance(event, BrokerUp):
        return None if event.broker not in up else f"broker {event.broker} is already {word}"
    return f"unknown event {event!r}"


def zk_guard(st: ZkControllerState, event: Event) -> str | None:
    """Why `event` cannot happen in `st`, or None when it can."""
    if isinstance(event, ControllerFailover):
        return None  # a controller can die between any two steps
    if isinstance(event, RunStep):
        return None if st.pending else "no step pending"
    if st.pending:  # the controller handles one event at a time: others wait in its queue
        return "the controller is busy with onPartitionReassignment"
    if isinstance(event, Reassign):
        if event.target is None:
            return None if st.assignment.is_being_reassigned else "NO_REASSIGNMENT_IN_PROGRESS"
        return _validate_zk_target(st, tuple(event.target))
    lai = st.leader_and_isr
    if isinstance(event, IsrChange):
        if lai.leader == NO_LEADER or lai.leader not in st.live_brokers:
            return "the partition has no live leader to send AlterPartition"
        if not event.isr or lai.leader not in event.isr:
            return "an ISR must contain the leader"
        joining = set(event.isr) - set(lai.isr)  # members already in the ISR may stay (see U3 after a failover)
        if not joining <= set(st.assignment.replicas) or len(set(event.isr)) != len(event.isr):
            return "the ISR must be distinct members of the replica set"
        if not joining <= st.live_brokers:
            return "an ISR member is not live"
        return None
    return _broker_event_guard(event, st.assignment.replicas, lai.isr, st.live_brokers, "live",
                               lambda change: zk_guard(st, change))


def zk_next_step(st: ZkControllerState, event: Event) -> ZkControllerState:
    """The state after `event`. Raises the Kafka error a request would get, or StepNotEnabled."""
    reason = zk_guard(st, event)
    if reason is not None:
        if isinstance(event, Reassign):
            if reason == "NO_REASSIGNMENT_IN_PROGRESS":
                raise NoReassignmentInProgressException("No reassignment in progress")
            if not reason.startswith("the controller"):
                raise InvalidReplicaAssignmentException(reason)
        raise StepNotEnabled(reason)
    if isinstance(event, ControllerFailover):
        return _failover(st)
    if isinstance(event, RunStep):
        step, rest = st.pending[0], st.pending[1:]
        return _run(replace(st, pending=rest), step)
    if isinstance(event, Reassign):
        target = st.assignment.origin_replicas if event.target is None else tuple(event.target)
        return _start(st, st.assignment.reassign_to(target))  # maybeBuildReassignment
    if isinstance(event, FollowerCaughtUp):
        event = IsrChange(scala_set_add(scala_set_of(st.leader_and_isr.isr), event.broker))
    if isinstance(event, IsrChange):
        st = _write(st, replace(st.leader_and_isr, isr=tuple(event.isr)))
        if st.being_reassigned and _complete(st, st.assignment):  # maybeCompleteReassignment
            return _start(st, st.assignment)
        return st
    if isinstance(event, BrokerDown):
        return _broker_down(st, event.broker)
    if isinstance(event, BrokerUp):
        return _broker_up(st, event.broker)
    raise StepNotEnabled(f"unknown event {event!r}")


# ---------------------------------------------------------------------------------------------
# ZooKeeper controller: the sub-steps


def _write(st: ZkControllerState, lai: LeaderAndIsr) -> ZkControllerState:
    """A conditional write of the partition state znode: its version (partition epoch) goes up by one."""
    lai = replace(lai, partition_epoch=st.zk.leader_and_isr.partition_epoch + 1)
    return replace(st, zk=replace(st.zk, leader_and_isr=lai), leader_and_isr=lai)


def _set_replica_states(st: ZkControllerState, brokers: Iterable[int], state: ReplicaState | None,
                        valid_from: Collection[ReplicaState] | None = None) -> ZkControllerState:
    states = dict(st.replica_states)
    for b in brokers:
        current = states.get(b, ReplicaState.NON_EXISTENT)
        if valid_from is not None and current not in valid_from:
            continue  # Kafka logs an illegal transition and leaves the replica as it is
        if state is None or state is ReplicaState.NON_EXISTENT:
            states.pop(b, None)
        else:
            states[b] = state
    return replace(st, replica_states=tuple(sorted(states.items())))


def _complete(st: ZkControllerState, assignment: ZkReplicaAssignment) -> bool:
    """`isReassignmentComplete`: not reassigning, or TRS within the ISR read from ZooKeeper."""
    if not assignment.is_being_reassigned:
        return True
    return set(assignment.target_replicas) <= set(st.zk.leader_and_isr.isr)


def _phase(st: ZkControllerState, assignment: ZkReplicaAssignment) -> tuple[PendingStep, ...]:
    if not _complete(st, assignment):
        return tuple(PendingStep(n, assignment) for n in ("A1", "A2"))
    b4 = tuple(PendingStep("B4", assignment, (r,)) for r in scala_hash_order(assignment.removing_replicas))
    return (*(PendingStep(n, assignment) for n in ("B1", "B2", "B3")), *b4,
            *(PendingStep(n, assignment) for n in ("B5", "B6", "B7", "B8")))


def _start(st: ZkControllerState, assignment: ZkReplicaAssignment) -> ZkControllerState:
    """`onPartitionReassignment`: phase U when the assignment changes, then phase A or B."""
    if st.assignment != assignment:
        return replace(st, pending=(PendingStep("U1", assignment), PendingStep("U2", assignment), *st.pending))
    return replace(st, being_reassigned=True, pending=(*_phase(st, assignment), *st.pending))


def _remove_from_isr(st: ZkControllerState, replica: int) -> ZkControllerState:
    """OfflineReplica: take the replica out of the ISR (never below one member); a removed leader leaves -1."""
    lai = st.zk.leader_and_isr
    st = _set_replica_states(st, [replica], ReplicaState.OFFLINE)
    if replica not in lai.isr:
        return st
    leader = NO_LEADER if replica == lai.leader else lai.leader
    isr = lai.isr if len(lai.isr) == 1 else tuple(r for r in lai.isr if r != replica)
    return _write(st, lai.new_leader_and_isr(leader, isr))


def _stop_replicas(st: ZkControllerState, replicas: Sequence[int]) -> ZkControllerState:
    """`stopRemovedReplicasOfReassignedPartition`: Offline (leaves the ISR), then deleted."""
    for r in scala_hash_order(replicas):
        st = _remove_from_isr(st, r)
    return _set_replica_states(st, replicas, ReplicaState.NON_EXISTENT)


def _elect_reassign(st: ZkControllerState, trs: Sequence[int]) -> ZkControllerState:
    result = leader_for_reassign(trs, st.zk.leader_and_isr, st.live_brokers)
    return st if result.leader_and_isr is None else _write(st, result.leader_and_isr)


def _run(st: ZkControllerState, step: PendingStep) -> ZkControllerState:
    run = _ZK_STEPS.get(step.name)
    if run is None:
        raise StepNotEnabled(f"unknown step {step.name}")
    return run(st, step, step.assignment)


def _u1(st: ZkControllerState, step: PendingStep, a: ZkReplicaAssignment) -> ZkControllerState:
    """Write RS, AR, RR to ZooKeeper first, so a new controller can resume."""
    return st if st.assignment == a else replace(st, zk=replace(st.zk, assignment=a))


def _u2(st: ZkControllerState, step: PendingStep, a: ZkReplicaAssignment) -> ZkControllerState:
    """Then memory; replicas the old RS had and the new one lacks must stop (U3)."""
    unneeded = _diff(st.assignment.replicas, a.replicas)
    st = replace(st, assignment=a, being_reassigned=True)
    if unneeded:
        return replace(st, pending=(PendingStep("U3", a, unneeded), *st.pending))
    return replace(st, pending=(*_phase(st, a), *st.pending))


def _u3(st: ZkControllerState, step: PendingStep, a: ZkReplicaAssignment) -> ZkControllerState:
    """The replicas the new RS lacks stop, then the reassignment's phase."""
    st = _stop_replicas(st, step.replicas)
    return replace(st, pending=(*_phase(st, a), *st.pending))


def _a1(st: ZkControllerState, step: PendingStep, a: ZkReplicaAssignment) -> ZkControllerState:
    """Bump the leader epoch so every replica learns the new RS."""
    return _write(st, st.zk.leader_and_isr.new_epoch())


def _a2(st: ZkControllerState, step: PendingStep, a: ZkReplicaAssignment) -> ZkControllerState:
    """AR start fetching."""
    return _set_replica_states(st, a.adding_replicas, ReplicaState.NEW, {ReplicaState.NON_EXISTENT})


def _b1(st: ZkControllerState, step: PendingStep, a: ZkReplicaAssignment) -> ZkControllerState:
    """AR online."""
    return _set_replica_states(st, a.adding_replicas, ReplicaState.ONLINE,
                               {ReplicaState.NEW, ReplicaState.ONLINE, ReplicaState.OFFLINE})


def _b2(st: ZkControllerState, step: PendingStep, a: ZkReplicaAssignment) -> ZkControllerState:
    """RS = TRS, in memory only."""
    return replace(st, assignment=ZkReplicaAssignment(a.target_replicas))


def _b3(st: ZkControllerState, step: PendingStep, a: ZkReplicaAssignment) -> ZkControllerState:
    """Move the leader into TRS if needed, else just a new epoch."""
    leader = st.leader_and_isr.leader
    trs = a.target_replicas
    if leader not in trs or leader not in st.live_brokers:
        return _elect_reassign(st, trs)
    return _write(st, st.zk.leader_and_isr.new_epoch())


def _b4(st: ZkControllerState, step: PendingStep, a: ZkReplicaAssignment) -> ZkControllerState:
    """One removed replica goes offline, leaving the ISR."""
    return _remove_from_isr(st, step.replicas[0])


def _b5(st: ZkControllerState, step: PendingStep, a: ZkReplicaAssignment) -> ZkControllerState:
    """StopReplica(delete=true): the removed replicas no longer exist."""
    return _set_replica_states(st, a.removing_replicas, ReplicaState.NON_EXISTENT)


def _b6(st: ZkControllerState, step: PendingStep, a: ZkReplicaAssignment) -> ZkControllerState:
    """Only now may ZooKeeper forget ORS."""
    return replace(st, zk=replace(st.zk, assignment=ZkReplicaAssignment(a.target_replicas)))


def _b7(st: ZkControllerState, step: PendingStep, a: ZkReplicaAssignment) -> ZkControllerState:
    """The partition is no longer being reassigned."""
    return replace(st, being_reassigned=False)


def _b8(st: ZkControllerState, step: PendingStep, a: ZkReplicaAssignment) -> ZkControllerState:
    """UpdateMetadata to every broker; nothing the model keeps."""
    return st


# The steps of Kafka's `onPartitionReassignment` comment, by the name it gives them.
_ZK_STEPS: dict[str, Callable[[ZkControllerState, PendingStep, ZkReplicaAssignment], ZkControllerState]] = {
    "U1": _u1, "U2": _u2, "U3": _u3, "A1": _a1, "A2": _a2, "B1": _b1, "B2": _b2, "B3": _b3, "B4": _b4, "B5": _b5,
    "B6": _b6, "B7": _b7, "B8": _b8}


def _offline_election_if_needed(st: ZkControllerState) -> ZkControllerState:
    """`triggerOnlinePartitionStateChange` for this partition when its leader is gone."""
    lai = st.zk.leader_and_isr
    if lai.leader != NO_LEADER and lai.leader in st.live_brokers:
        return st
    result = leader_for_offline(st.assignment.replicas, lai, st.live_brokers, st.unclean_leader_election_enable)
    return st if result.leader_and_isr is None else _write(st, result.leader_and_isr)


def _broker_down(st: ZkControllerState, broker: int) -> ZkControllerState:
    """`onBrokerFailure`: elect away from a dead leader, then the dead replica leaves the ISR."""
    st = replace(st, live_brokers=st.live_brokers - {broker})
    if broker not in st.assignment.replicas:
        return st
    st = _offline_election_if_needed(st)
    return _remove_from_isr(st, broker)


def _broker_up(st: ZkControllerState, broker: int) -> ZkControllerState:
    """`onBrokerStartup`: its replicas come online, leaderless partitions elect, reassignments resume."""
    st = replace(st, live_brokers=st.live_brokers | {broker})
    if broker not in st.assignment.replicas:
        return st
    st = _set_replica_states(st, [broker], ReplicaState.ONLINE)
    st = _offline_election_if_needed(st)
    if st.being_reassigned and broker in st.assignment.target_replicas:
        return _start(st, st.assignment)
    return st


def _failover(st: ZkControllerState) -> ZkControllerState:
    """`onControllerFailover`: memory from ZooKeeper only, offline partitions elect, reassignments resume."""
    zk = st.zk
    states = tuple((b, ReplicaState.ONLINE if b in st.live_brokers else ReplicaState.OFFLINE)
                   for b in sorted(zk.assignment.replicas))
    st = replace(st, assignment=zk.assignment, leader_and_isr=zk.leader_and_isr,
                 being_reassigned=zk.assignment.is_being_reassigned, replica_states=states, pending=(),
                 controller_epoch=st.controller_epoch + 1)
    st = _offline_election_if_needed(st)
    if st.being_reassigned:
        return _start(st, st.assignment)
    return st


# ---------------------------------------------------------------------------------------------
# KRaft controller


@dataclass(frozen=True)
class PartitionReassignmentReplicas:
    """`PartitionReassignmentReplicas`: removing and adding sorted ascending (TreeSet), RS = target ++ removing."""

    removing: tuple[int, ...]
    adding: tuple[int, ...]
    replicas: tuple[int, ...]

    @classmethod
    def of(cls, current: Sequence[int], target: Sequence[int]) -> PartitionReassignmentReplicas:
        removing = tuple(sorted(set(current) - set(target)))
        adding = tuple(sorted(set(target) - set(current)))
        return cls(removing, adding, (*target, *removing))

    @property
    def original_replicas(self) -> tuple[int, ...]:
        return _diff(self.replicas, self.adding)

    def maybe_complete_reassignment(self, target_isr: Sequence[int], rule: str = "all-targets",
                                    ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        return maybe_complete_reassignment(self.removing, self.adding, self.replicas, target_isr, rule)


@dataclass(frozen=True)
class PartitionReassignmentRevert:
    """`PartitionReassignmentRevert`: RS minus adding, ISR minus adding; an emptied ISR takes the first
    remaining replica, which makes the revert unclean."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    unclean: bool

    @classmethod
    def of(cls, part: PartitionRegistration) -> PartitionReassignmentRevert:
        replicas = _diff(part.replicas, part.adding_replicas)
        isr = _diff(part.isr, part.adding_replicas)
        if isr:
            return cls(replicas, isr, False)
        if not replicas:
            raise InvalidReplicaAssignmentException("Invalid replica assignment: addingReplicas contains all replicas.")
        return cls(replicas, (replicas[0],), True)


@dataclass(frozen=True)
class KRaftControllerState:
    """One partition as the KRaft controller holds it; every change is a committed record, so nothing is lost
    on a controller failover."""

    topic: str
    partition: int
    registration: PartitionRegistration
    registered: frozenset[int]  # brokers with a registration (fenced or not)
    active: frozenset[int]  # unfenced and not shutting down: acceptable leaders
    unclean_leader_election_enable: bool = False
    min_isr: int = 1
    version: KRaftVersion = KRAFT_DEFAULT
    last_record: PartitionChangeRecord | None = None  # the record the last event wrote (None: none)


def kraft_initial_state(
    replicas: Sequence[int], *, leader: int | None = None, isr: Sequence[int] | None = None,
    live: Collection[int] | None = None, leader_epoch: int = 0, partition_epoch: int = 0, topic: str = "topic",
    partition: int = 0, unclean_leader_election_enable: bool = False, min_isr: int = 1,
    version: KRaftVersion = KRAFT_DEFAULT, registered: Collection[int] | None = None,
    adding: Sequence[int] = (), removing: Sequence[int] = (),
) -> KRaftControllerState:
    reg = PartitionRegistration(tuple(replicas), tuple(replicas if isr is None else isr),
                                replicas[0] if leader is None else leader, leader_epoch, partition_epoch,
                                tuple(removing), tuple(adding))
    active = frozenset(replicas if live is None else live)
    known = frozenset(registered) if registered is not None else active | frozenset(replicas)
    return KRaftControllerState(topic, partition, reg, known, active, unclean_leader_election_enable, min_isr,
                                version)


def _validate_kraft_target(st: KRaftControllerState, target: Sequence[int]) -> str | None:
    """`validateManualPartitionAssignment`, which checks the sorted ids."""
    if not target:
        return "The manual partition assignment includes an empty replica list."
    prev = None
    for b in sorted(target):
        if b not in st.registered:
            return f"The manual partition assignment includes broker {b}, but no such broker is registered."
        if b == prev:
            return f"The manual partition assignment includes the broker {prev} more than once."
        prev = b
    return None


def kraft_guard(st: KRaftControllerState, event: Event) -> str | None:
    part = st.registration
    if isinstance(event, ControllerFailover | RunStep):
        return None  # the metadata log is the state: a new controller replays it; no sub-steps exist
    if isinstance(event, Reassign):
        if event.target is None:
            if not part.is_reassigning:
                return "NO_REASSIGNMENT_IN_PROGRESS"
            if PartitionReassignmentRevert.of(part).unclean and not st.unclean_leader_election_enable:
                return (f"Unable to revert partition assignment for {st.topic}:{st.partition} because it would "
                        "require an unclean leader election.")
            return None
        return _validate_kraft_target(st, event.target)
    if isinstance(event, IsrChange):
        isr = event.isr
        if part.leader == NO_LEADER or part.leader not in st.active:
            return "the partition has no active leader to send AlterPartition"
        if part.leader not in isr:
            return "an ISR must contain the leader"
        if not set(isr) <= set(part.replicas) or len(set(isr)) != len(isr):
            return "the ISR must be distinct members of the replica set"
        if not set(isr) <= st.active:
            return "INELIGIBLE_REPLICA: an ISR member is fenced or shutting down"
        return None
    return _broker_event_guard(event, part.replicas, part.isr, st.active, "active",
                               lambda change: kraft_guard(st, change))


def _kraft_builder(st: KRaftControllerState, acceptable: Collection[int] | None = None) -> PartitionChangeBuilder:
    """A builder as `ReplicationControlManager` makes one: its `LeaderAcceptor` and the topic's effective min ISR
    (`getTopicEffectiveMinIsr`: min.insync.replicas capped at the stored replica count)."""
    active = frozenset(st.active if acceptable is None else acceptable)
    stored = frozenset(st.registration.replicas)

    def leader_acceptor(b: int) -> bool:
        # `LeaderAcceptor.test`: an active broker's directory is looked up in the stored registration, which throws
        # for a broker that is not a replica yet (an ELR member a reassignment adds back): the request fails.
        if b not in active:
            return False
        if b not in stored:
            raise IllegalArgumentException(f"Replica {b} is not assigned to this partition.")
        return True

    return PartitionChangeBuilder(st.registration, leader_acceptor, st.version,
                                  min(st.min_isr, len(st.registration.replicas)))


def _apply(st: KRaftControllerState, record: PartitionChangeRecord | None) -> KRaftControllerState:
    reg = st.registration if record is None else st.registration.merge(record)
    return replace(st, registration=reg, last_record=record)


def kraft_next_step(st: KRaftControllerState, event: Event) -> KRaftControllerState:
    """The state after `event`: at most one PartitionChangeRecord, applied to the registration."""
    reason = kraft_guard(st, event)
    if reason is not None:
        _refuse(event, reason)
    if isinstance(event, ControllerFailover | RunStep):
        return replace(st, last_record=None)
    unclean = Election.UNCLEAN if st.unclean_leader_election_enable else Election.ONLINE
    if isinstance(event, Reassign):
        return _kraft_reassign(st, event.target, unclean)
    if isinstance(event, FollowerCaughtUp):
        event = IsrChange(scala_set_add(scala_set_of(st.registration.isr), event.broker))
    if isinstance(event, IsrChange):  # alterPartition
        return _apply(st, _kraft_builder(st).set_election(unclean).set_target_isr(event.isr).build())
    if isinstance(event, BrokerDown):
        return _kraft_fence(st, event.broker, unclean)
    if isinstance(event, BrokerUp):  # unfencing: leaderless partitions may elect the broker
        st = replace(st, active=st.active | {event.broker}, registered=st.registered | {event.broker})
        if st.registration.leader != NO_LEADER:
            return replace(st, last_record=None)
        return _apply(st, _kraft_builder(st).set_election(unclean).build())
    raise StepNotEnabled(f"unknown event {event!r}")


def _refuse(event: Event, reason: str) -> NoReturn:
    """Raises what the controller answers an event its guard refuses: a reassignment request's error, else
    StepNotEnabled."""
    if isinstance(event, Reassign):
        if reason == "NO_REASSIGNMENT_IN_PROGRESS":
            raise NoReassignmentInProgressException("No reassignment is in progress for this partition.")
        raise InvalidReplicaAssignmentException(reason)
    raise StepNotEnabled(reason)


def _kraft_reassign(st: KRaftControllerState, target: Sequence[int] | None, unclean: Election
                    ) -> KRaftControllerState:
    """`changePartitionReassignment` to `target`, or `cancelPartitionReassignment` (target None)."""
    part = st.registration
    if target is None:
        revert = PartitionReassignmentRevert.of(part)
        b = (_kraft_builder(st).set_election(unclean).set_target_isr(revert.isr)
             .set_target_replicas(revert.replicas).set_target_removing(()).set_target_adding(()))
        return _apply(st, b.build())
    plan = PartitionReassignmentReplicas.of(part.replicas, target)
    b = _kraft_builder(st)
    if plan.replicas != part.replicas:
        b.set_target_replicas(plan.replicas)
    if plan.removing:
        b.set_target_removing(plan.removing)
    if plan.adding:
        b.set_target_adding(plan.adding)
    return _apply(st, b.build())


def _kraft_fence(st: KRaftControllerState, broker: int, unclean: Election) -> KRaftControllerState:
    """Fencing: `generateLeaderAndIsrUpdates(brokerToRemove=broker)`, a change only when it is in the ISR."""
    st = replace(st, active=st.active - {broker})
    part = st.registration
    if broker not in part.isr:
        return replace(st, last_record=None)
    b = _kraft_builder(st, st.active - {broker}).set_election(unclean).set_target_isr(
        [r for r in part.isr if r != broker])
    return _apply(st, b.build())


# ---------------------------------------------------------------------------------------------
# Whole reassignments, step by step


@dataclass(frozen=True)
class TraceRow:
    """One event of a reassignment and the state after it."""

    label: str  # the step's name in Kafka's comment (U1, A2, B3, ...) or the event
    event: Event | None
    state: ZkControllerState | KRaftControllerState
    seed_row: str | None = None  # the label of the row Kafka's comment (and the seed) shows for this state


# The rows of Kafka's onPartitionReassignment comment: ZooKeeper's values after these steps.
SEED_LABELS = {"initial": "initial state", "A2": "step A2", "phase B": "phase B", "B3": "step B3",
               "B4": "step B4", "B6": "step B6"}


def zk_reassignment_steps(
    original: Sequence[int], target: Sequence[int], *, leader: int | None = None, isr: Sequence[int] | None = None,
    live: Collection[int] | None = None, leader_epoch: int = 0, partition_epoch: int = 0,
    catch_up_order: Sequence[int] | None = None, topic: str = "topic", partition: int = 0,
    adding: Sequence[int] = (), removing: Sequence[int] = (),
) -> list[TraceRow]:
    """A whole ZK-controller reassignment: submit, run every sub-step, let each adding replica catch up.

    Target replicas out of the ISR catch up in `catch_up_order` (default the target's order); each
    is an AlterPartition from the leader. Rows Kafka's comment shows carry `seed_row`.
    """
    live_set = frozenset(live) if live is not None else frozenset((*original, *target))
    st = zk_initial_state(original, leader=leader, isr=isr, live=live_set, leader_epoch=leader_epoch,
                          partition_epoch=partition_epoch, topic=topic, partition=partition, adding=adding,
                          removing=removing)
    rows = [TraceRow("initial", None, st, SEED_LABELS["initial"])]

    def run_steps(state: ZkControllerState) -> ZkControllerState:
        while state.pending:
            name = state.pending[0].name
            state = zk_next_step(state, RunStep())
            rows.append(TraceRow(name, RunStep(), state))
        return state

    st = zk_next_step(st, Reassign(tuple(target)))
    rows.append(TraceRow("submit", Reassign(tuple(target)), st))
    st = run_steps(st)
    for b in (target if catch_up_order is None else catch_up_order):
        if not st.being_reassigned or zk_guard(st, FollowerCaughtUp(b)) is not None:
            continue  # already in sync, not live, or the move is over
        st = zk_next_step(st, FollowerCaughtUp(b))
        rows.append(TraceRow(f"caught up {b}", FollowerCaughtUp(b), st))
        st = run_steps(st)
    _mark_seed_rows(rows)
    return rows


def _mark_seed_rows(rows: list[TraceRow]) -> None:
    """Label the states Kafka's comment lists: after A2, when phase B is decided, after B3, B4 (all), B6."""
    for i, row in enumerate(rows):
        if row.seed_row:
            continue
        label = None
        if row.label in ("A2", "B3", "B6"):
            label = SEED_LABELS[row.label]
        elif row.label == "B4" and not (i + 1 < len(rows) and rows[i + 1].label == "B4"):
            label = SEED_LABELS["B4"]
        else:
            st = row.state
            nxt = st.pending[0].name if isinstance(st, ZkControllerState) and st.pending else None
            if nxt == "B1":
                label = SEED_LABELS["phase B"]
        if label is not None:
            rows[i] = replace(row, seed_row=label)


def kraft_reassignment_steps(
    original: Sequence[int], target: Sequence[int], *, leader: int | None = None, isr: Sequence[int] | None = None,
    live: Collection[int] | None = None, leader_epoch: int = 0, partition_epoch: int = 0,
    catch_up_order: Sequence[int] | None = None, topic: str = "topic", partition: int = 0,
    version: KRaftVersion = KRAFT_DEFAULT, min_isr: int = 1, adding: Sequence[int] = (),
    removing: Sequence[int] = (),
) -> list[TraceRow]:
    """A whole KRaft reassignment: the start record, then one AlterPartition per adding replica."""
    live_set = frozenset(live) if live is not None else frozenset((*original, *target))
    st = kraft_initial_state(original, leader=leader, isr=isr, live=live_set, leader_epoch=leader_epoch,
                             partition_epoch=partition_epoch, topic=topic, partition=partition, version=version,
                             min_isr=min_isr, adding=adding, removing=removing)
    rows = [TraceRow("initial", None, st)]
    st = kraft_next_step(st, Reassign(tuple(target)))
    rows.append(TraceRow("start", Reassign(tuple(target)), st))
    for b in (target if catch_up_order is None else catch_up_order):
        if not st.registration.is_reassigning or kraft_guard(st, FollowerCaughtUp(b)) is not None:
            continue
        st = kraft_next_step(st, FollowerCaughtUp(b))
        rows.append(TraceRow(f"caught up {b}", FollowerCaughtUp(b), st))
    return rows


def guard(state: ZkControllerState | KRaftControllerState, event: Event) -> str | None:
    """Why `event` cannot happen now (either controller), or None."""
    return zk_guard(state, event) if isinstance(state, ZkControllerState) else kraft_guard(state, event)


def next_step(state: ZkControllerState | KRaftControllerState,
              event: Event) -> ZkControllerState | KRaftControllerState:
    """The state after `event` (either controller): `zk_next_step` or `kraft_next_step`."""
    if isinstance(state, ZkControllerState):
        return zk_next_step(state, event)
    return kraft_next_step(state, event)
