"""Partition leader election, as the ZooKeeper controller and the KRaft controller do it.

ZooKeeper controller: `core/src/main/scala/kafka/controller/PartitionStateMachine.scala`
(`object PartitionLeaderElectionAlgorithms`) picks the leader; `Election.scala` builds the
new leader and ISR around it. Four strategies: offline (clean, or unclean when allowed),
reassignment, preferred replica, controlled shutdown. The ISR is an ordered list and the
first match in the assignment wins.

KRaft controller: `metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java`
turns a partition's registration plus target values (ISR, replicas, adding/removing,
election type) into one `PartitionChangeRecord`, electing a leader on the way: PREFERRED
(with its fall-backs), ONLINE, UNCLEAN; eligible leader replicas (KIP-966) and the
last-known-leader recovery where the version has them. `PartitionRegistration.merge`
(`metadata/.../metadata/PartitionRegistration.java`) applies a record.

Behaviour that differs between Kafka versions is a field of `KRaftVersion`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, fields, make_dataclass, replace
from enum import IntEnum, StrEnum
from typing import Any

from kcheck.model import NO_LEADER
from kcheck.reference.errors import IllegalArgumentException
from kcheck.reference.java import JavaHashSet

NO_LEADER_CHANGE = -2  # LeaderConstants.NO_LEADER_CHANGE: a record field that leaves the leader alone


class LeaderRecoveryState(IntEnum):
    """`org.apache.kafka.metadata.LeaderRecoveryState` (KIP-704): RECOVERING after an unclean election."""

    RECOVERED = 0
    RECOVERING = 1


# ---------------------------------------------------------------------------------------------
# ZooKeeper controller


@dataclass(frozen=True)
class LeaderAndIsr:
    """What the ZK controller stores in `/brokers/topics/<t>/partitions/<p>/state` (`kafka.api.LeaderAndIsr`).

    `partition_epoch` is the znode version (the controller's conditional-write token); every
    write of the znode increments it, which the caller does (see `reassignment.py`).
    """

    leader: int
    leader_epoch: int = 0
    isr: tuple[int, ...] = ()
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    partition_epoch: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "isr", tuple(self.isr))

    def new_leader(self, leader: int) -> LeaderAndIsr:
        return self.new_leader_and_isr(leader, self.isr)

    def new_leader_and_isr(self, leader: int, isr: Sequence[int]) -> LeaderAndIsr:
        """A new leader epoch; the recovery state is kept."""
        return replace(self, leader=leader, leader_epoch=self.leader_epoch + 1, isr=tuple(isr))

    def new_recovering_leader_and_isr(self, leader: int, isr: Sequence[int]) -> LeaderAndIsr:
        return replace(self.new_leader_and_isr(leader, isr), leader_recovery_state=LeaderRecoveryState.RECOVERING)

    def new_epoch(self) -> LeaderAndIsr:
        return replace(self, leader_epoch=self.leader_epoch + 1)


def offline_partition_leader_election(
    assignment: Sequence[int], isr: Collection[int], live_replicas: Collection[int],
    unclean_leader_election_enabled: bool,
) -> int | None:
    """First assigned replica that is live and in the ISR; else, if unclean is allowed, the first live one."""
    for r in assignment:
        if r in live_replicas and r in isr:
            return r
    if unclean_leader_election_enabled:
        for r in assignment:
            if r in live_replicas:
                return r
    return None


def reassign_partition_leader_election(
    reassignment: Sequence[int], isr: Collection[int], live_replicas: Collection[int],
) -> int | None:
    """First target replica that is live and in the ISR (never unclean)."""
    for r in reassignment:
        if r in live_replicas and r in isr:
            return r
    return None


def preferred_replica_partition_leader_election(
    assignment: Sequence[int], isr: Collection[int], live_replicas: Collection[int],
) -> int | None:
    """The assignment's head if it is live and in the ISR; no fall-back."""
    if assignment and assignment[0] in live_replicas and assignment[0] in isr:
        return assignment[0]
    return None


def controlled_shutdown_partition_leader_election(
    assignment: Sequence[int], isr: Collection[int], live_replicas: Collection[int],
    shutting_down_brokers: Collection[int],
) -> int | None:
    """First replica live (shutting-down brokers count as live here), in the ISR and not shutting down."""
    for r in assignment:
        if r in live_replicas and r in isr and r not in shutting_down_brokers:
            return r
    return None


@dataclass(frozen=True)
class ZkElectionResult:
    """`kafka.controller.ElectionResult`: the new state, or None when no replica qualifies.

    With None the ZK controller leaves the partition as it was and logs the failed state change.
    `unclean` is set when the winner came from outside the ISR (Kafka marks its unclean-election rate).
    """

    leader_and_isr: LeaderAndIsr | None
    live_replicas: tuple[int, ...]
    unclean: bool = False


def leader_for_offline(
    assignment: Sequence[int], current: LeaderAndIsr | None, live: Collection[int],
    unclean_leader_election_enabled: bool = False, is_leader_recovery_supported: bool = True,
) -> ZkElectionResult:
    """Offline (and new) partitions (`Election.leaderForOffline`).

    The ISR left behind: the live members of the old ISR if the winner was in it, otherwise just
    the winner, marked RECOVERING when the inter-broker protocol supports leader recovery (3.2+).
    """
    live_replicas = tuple(r for r in assignment if r in live)
    if current is None:
        return ZkElectionResult(None, live_replicas)
    leader = offline_partition_leader_election(assignment, current.isr, live_replicas, unclean_leader_election_enabled)
    if leader is None:
        return ZkElectionResult(None, live_replicas)
    if leader in current.isr:
        return ZkElectionResult(current.new_leader_and_isr(leader, [r for r in current.isr if r in live]),
                                live_replicas)
    new = (current.new_recovering_leader_and_isr(leader, [leader]) if is_leader_recovery_supported
           else current.new_leader_and_isr(leader, [leader]))
    return ZkElectionResult(new, live_replicas, unclean=True)


def leader_for_reassign(target_replicas: Sequence[int], current: LeaderAndIsr,
                        live: Collection[int]) -> ZkElectionResult:
    """Reassignment (`Election.leaderForReassign`): only the leader changes; the ISR is kept as it is."""
    live_replicas = tuple(r for r in target_replicas if r in live)
    leader = reassign_partition_leader_election(target_replicas, current.isr, live_replicas)
    return ZkElectionResult(None if leader is None else current.new_leader(leader), tuple(target_replicas))


def leader_for_preferred_replica(assignment: Sequence[int], current: LeaderAndIsr,
                                 live: Collection[int]) -> ZkElectionResult:
    """Preferred replica (`Election.leaderForPreferredReplica`): only the leader changes."""
    live_replicas = tuple(r for r in assignment if r in live)
    leader = preferred_replica_partition_leader_election(assignment, current.isr, live_replicas)
    return ZkElectionResult(None if leader is None else current.new_leader(leader), tuple(assignment))


def leader_for_controlled_shutdown(
    assignment: Sequence[int], current: LeaderAndIsr, live_or_shutting_down: Collection[int],
    shutting_down: Collection[int],
) -> ZkElectionResult:
    """Controlled shutdown (`Election.leaderForControlledShutdown`): the ISR loses every shutting-down broker."""
    live_replicas = tuple(r for r in assignment if r in live_or_shutting_down)
    leader = controlled_shutdown_partition_leader_election(assignment, current.isr, live_replicas, shutting_down)
    if leader is None:
        return ZkElectionResult(None, live_replicas)
    isr = [r for r in current.isr if r not in shutting_down]
    return ZkElectionResult(current.new_leader_and_isr(leader, isr), live_replicas)


def initial_leader_and_isr(assignment: Sequence[int], live: Collection[int]) -> LeaderAndIsr | None:
    """A new partition (`initializeLeaderAndIsrForPartitions`): first live replica leads, every live one is in sync."""
    live_replicas = [r for r in assignment if r in live]
    if not live_replicas:
        return None
    return LeaderAndIsr(live_replicas[0], 0, tuple(live_replicas))


# ---------------------------------------------------------------------------------------------
# KRaft controller


class Election(StrEnum):
    """`PartitionChangeBuilder.Election`."""

    PREFERRED = "PREFERRED"
    ONLINE = "ONLINE"
    UNCLEAN = "UNCLEAN"


@dataclass(frozen=True)
class KRaftVersion:
    """The behaviours of the KRaft partition-change rules that changed between Kafka versions.

    The defaults are the rules of Kafka 3.9.x and 4.0.x (ELR off, as a new cluster of those releases has
    it); `kcheck.reference.releases` gives any known release's (`profile(v).kraft_rules()`, and
    `profile(v).kraft_version()` with ELR as a new cluster has it) and says since which release each field changed.
    """

    leader_recovery_supported: bool = True  # metadata.version >= 3.2-IV0 (KIP-704)
    leader_epoch_bump_on_isr_shrink: bool = False  # metadata.version < 3.6-IV0 (KAFKA-15021)
    zk_migration_enabled: bool = False  # during a ZK migration an ISR shrink also bumps the epoch (KAFKA-15109)
    eligible_leader_replicas: bool = False  # KIP-966 ELR enabled
    use_last_known_leader_in_balanced_recovery: bool = True
    # KAFKA-19522 (fixed by apache/kafka#20200, 2025-07; in Kafka since 4.1.0): before the fix the
    # last-known leader is elected even when it is fenced; the check only logs.
    last_known_leader_must_be_acceptable: bool = False
    # When a reassignment completes (PartitionReassignmentReplicas.maybeCompleteReassignment):
    # "adding": every adding replica in the ISR (before KAFKA-15665, apache/kafka#15359, 2024-02);
    # "all-targets": every target replica in the ISR (the default here);
    # "adding-unless-shrinking": every adding replica, and every target replica too when fewer replicas
    # are added than removed (KAFKA-19975, apache/kafka#21114, 2025-12; in Kafka since 4.3.0).
    reassignment_completion: str = "all-targets"
    # When the last known leader is written (maybeUpdateLastKnownLeader, with ELR and the last known
    # leader in use): "isr-emptied" (up to 4.1.0): when the record empties the ISR, cleared when a leader
    # stays or comes; "leaderless" (apache/kafka#20629, 2025-10; in Kafka since 4.1.1): when the record
    # takes the leader away and none is remembered, cleared when the record names a leader.
    last_known_leader_update: str = "isr-emptied"


KRAFT_DEFAULT = KRaftVersion()
KRAFT_3_5 = KRaftVersion(leader_epoch_bump_on_isr_shrink=True)
KRAFT_ELR = KRaftVersion(eligible_leader_replicas=True)
KRAFT_ELR_FIXED = KRaftVersion(eligible_leader_replicas=True, last_known_leader_must_be_acceptable=True)


@dataclass(frozen=True)
class PartitionRegistration:
    """A partition as the KRaft controller holds it (`org.apache.kafka.metadata.PartitionRegistration`).

    Log directories are not modelled.
    """

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in ("replicas", "isr", "removing_replicas", "adding_replicas", "elr", "last_known_elr"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def preferred_replica(self) -> int:
        return self.replicas[0] if self.replicas else NO_LEADER

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    @property
    def has_preferred_leader(self) -> bool:
        return self.leader == self.preferred_replica

    @property
    def is_reassigning(self) -> bool:
        return bool(self.removing_replicas or self.adding_replicas)

    def merge(self, record: PartitionChangeRecord) -> PartitionRegistration:
        """Apply a change record: a leader field bumps the leader epoch; every record bumps the partition epoch."""
        leader, leader_epoch = self.leader, self.leader_epoch
        if record.leader != NO_LEADER_CHANGE:
            leader, leader_epoch = record.leader, self.leader_epoch + 1

        def pick(new: tuple[int, ...] | None, old: tuple[int, ...]) -> tuple[int, ...]:
            return old if new is None else new

        return PartitionRegistration(
            replicas=pick(record.replicas, self.replicas),
            isr=pick(record.isr, self.isr),
            leader=leader,
            leader_epoch=leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            removing_replicas=pick(record.removing_replicas, self.removing_replicas),
            adding_replicas=pick(record.adding_replicas, self.adding_replicas),
            leader_recovery_state=(self.leader_recovery_state if record.leader_recovery_state is None
                                   else record.leader_recovery_state),
            elr=pick(record.elr, self.elr),
            last_known_elr=pick(record.last_known_elr, self.last_known_elr),
        )


@dataclass(frozen=True)
class PartitionChangeRecord:
    """`PartitionChangeRecord`: None (or NO_LEADER_CHANGE for the leader) means the field does not change."""

    leader: int = NO_LEADER_CHANGE
    isr: tuple[int, ...] | None = None
    replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    leader_recovery_state: LeaderRecoveryState | None = None

    @property
    def is_no_op(self) -> bool:  # changeRecordIsNoOp
        return self == PartitionChangeRecord()


@dataclass(frozen=True)
class ElectionResult:
    """`PartitionChangeBuilder.ElectionResult`: the winner (NO_LEADER if none); `unclean` if not from the ISR."""

    node: int
    unclean: bool


REASSIGNMENT_COMPLETION_RULES = ("adding", "all-targets", "adding-unless-shrinking")


def maybe_complete_reassignment(
    removing: Sequence[int], adding: Sequence[int], replicas: Sequence[int], target_isr: Sequence[int],
    rule: str = "all-targets",
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """`PartitionReassignmentReplicas.maybeCompleteReassignment`: (replicas, ISR) once the targets are in sync.

    With replicas being removed, both lists lose them (order kept) and neither may end empty;
    then `rule` (see `KRaftVersion.reassignment_completion`) decides whether the ISR is enough.
    """
    if not removing and not adding:
        return None
    new_isr, new_replicas = tuple(target_isr), tuple(replicas)
    if removing:
        gone = set(removing)
        new_isr = tuple(r for r in target_isr if r not in gone)
        if not new_isr:
            return None
        new_replicas = tuple(r for r in replicas if r not in gone)
        if not new_replicas:
            return None
    in_sync = set(new_isr)
    if rule not in REASSIGNMENT_COMPLETION_RULES:
        raise ValueError(f"unknown reassignment completion rule {rule!r}")
    if rule == "all-targets":  # the adding list is not consulted (it can be stale, see changePartitionReassignment)
        return (new_replicas, new_isr) if set(new_replicas) <= in_sync else None
    if not set(adding) <= in_sync:
        return None
    if rule == "adding-unless-shrinking" and len(adding) < len(removing) and not set(new_replicas) <= in_sync:
        return None
    return new_replicas, new_isr


def _contains_all(container: Sequence[int], items: Sequence[int]) -> bool:  # Replicas.contains(a, b)
    have = set(container)
    return all(i in have for i in items)


class PartitionChangeBuilder:
    """KRaft's `PartitionChangeBuilder`: target values in, one change record (or None) out.

    The registration is never modified; `build()` may be called more than once. `is_acceptable_leader`
    is the controller's `LeaderAcceptor` (broker unfenced, not shutting down, log dir online):
    a predicate, or the collection of acceptable broker ids. A registration that names a broker twice is
    refused as Kafka's constructor refuses it (IllegalArgumentException); target lists are not checked.
    """

    def __init__(
        self, partition: PartitionRegistration, is_acceptable_leader: Callable[[int], bool] | Collection[int],
        version: KRaftVersion = KRAFT_DEFAULT, min_isr: int = 1,
    ) -> None:
        if len(set(partition.replicas)) != len(partition.replicas):
            # Kafka's constructor maps the registration's replicas to their log directories
            # (DirectoryId.createAssignmentMap) and refuses a repeated broker, in every known release.
            raise IllegalArgumentException("Duplicate broker ID in assignment")
        self.partition = partition
        if callable(is_acceptable_leader):
            self._acceptable = is_acceptable_leader
        else:
            accepted = frozenset(is_acceptable_leader)
            self._acceptable = accepted.__contains__
        self.version = version
        self.min_isr = min_isr
        self.target_isr: tuple[int, ...] = partition.isr
        self.target_replicas: tuple[int, ...] = partition.replicas
        self.target_removing: tuple[int, ...] = partition.removing_replicas
        self.target_adding: tuple[int, ...] = partition.adding_replicas
        self.target_elr: tuple[int, ...] = partition.elr
        self.target_last_known_elr: tuple[int, ...] = partition.last_known_elr
        self.target_leader_recovery_state = partition.leader_recovery_state
        self.unclean_shutdown_replicas: tuple[int, ...] | None = None
        self.election = Election.ONLINE

    # setters, named after Kafka's, chainable
    def set_target_isr(self, isr: Sequence[int]) -> PartitionChangeBuilder:
        self.target_isr = tuple(isr)
        return self

    def set_target_replicas(self, replicas: Sequence[int]) -> PartitionChangeBuilder:
        self.target_replicas = tuple(replicas)
        return self

    def set_target_removing(self, removing: Sequence[int]) -> PartitionChangeBuilder:
        self.target_removing = tuple(removing)
        return self

    def set_target_adding(self, adding: Sequence[int]) -> PartitionChangeBuilder:
        self.target_adding = tuple(adding)
        return self

    def set_election(self, election: Election) -> PartitionChangeBuilder:
        self.election = election
        return self

    def set_target_leader_recovery_state(self, state: LeaderRecoveryState) -> PartitionChangeBuilder:
        self.target_leader_recovery_state = state
        return self

    def set_unclean_shutdown_replicas(self, replicas: Sequence[int]) -> PartitionChangeBuilder:
        self.unclean_shutdown_replicas = tuple(replicas)
        return self

    # election
    def is_acceptable_leader(self, r: int) -> bool:
        return bool(self._acceptable(r))

    def _is_valid_new_leader(self, r: int) -> bool:
        in_sync = r in self.target_isr or (not self.target_isr and r in self.target_elr)
        return in_sync and self.is_acceptable_leader(r)

    def _can_elect_last_known_leader(self) -> bool:
        v = self.version
        if not v.eligible_leader_replicas or not v.use_last_known_leader_in_balanced_recovery:
            return False
        if self.target_elr or self.target_isr:
            return False
        if len(self.partition.last_known_elr) != 1:
            return False
        # Before KAFKA-19522's fix, Kafka tests acceptability here but only logs the answer.
        return not v.last_known_leader_must_be_acceptable or self.is_acceptable_leader(
            self.partition.last_known_elr[0])

    def elect_leader(self) -> ElectionResult:
        """PREFERRED: head, current leader, any later replica; else ONLINE/UNCLEAN: current leader, any replica.

        Then the last-known leader (ELR, balanced recovery), then (UNCLEAN only) the first acceptable
        replica ignoring the ISR; else NO_LEADER.
        """
        if self.election is Election.PREFERRED:
            head = self.target_replicas[0]
            if self._is_valid_new_leader(head):
                return ElectionResult(head, False)
            if self._is_valid_new_leader(self.partition.leader):
                return ElectionResult(self.partition.leader, False)
            for r in self.target_replicas[1:]:
                if self._is_valid_new_leader(r):
                    return ElectionResult(r, False)
            if self._can_elect_last_known_leader():
                return ElectionResult(self.partition.last_known_elr[0], True)
            return ElectionResult(NO_LEADER, False)
        if self._is_valid_new_leader(self.partition.leader):
            return ElectionResult(self.partition.leader, False)
        for r in self.target_replicas:
            if self._is_valid_new_leader(r):
                return ElectionResult(r, False)
        if self._can_elect_last_known_leader():
            return ElectionResult(self.partition.last_known_elr[0], True)
        if self.election is Election.UNCLEAN:
            for r in self.target_replicas:
                if self.is_acceptable_leader(r):
                    return ElectionResult(r, True)
        return ElectionResult(NO_LEADER, False)

    # build
    def build(self) -> PartitionChangeRecord | None:
        """The record that moves the partition to the targets, or None when nothing changes."""
        saved = (self.target_isr, self.target_replicas, self.target_removing, self.target_adding, self.target_elr,
                 self.target_last_known_elr)
        try:
            return self._build()
        finally:  # build() leaves the builder as it was, so it can be called again as Kafka's tests do
            (self.target_isr, self.target_replicas, self.target_removing, self.target_adding, self.target_elr,
             self.target_last_known_elr) = saved

    def _build(self) -> PartitionChangeRecord | None:
        rec = _Record()
        self._complete_reassignment_if_needed()
        self._maybe_populate_target_elr()
        self._try_election(rec)
        self._trigger_leader_epoch_bump_for_replica_reassignment(rec)
        self._maybe_update_record_elr(rec)
        p = self.partition
        if (rec.isr is None and (self.target_isr or self.version.eligible_leader_replicas)
                and self.target_isr != p.isr):
            rec.isr = self.target_isr  # never written empty unless ELR is on
        self._trigger_leader_epoch_bump_for_isr_shrink(rec)
        self._maybe_update_last_known_leader(rec)
        if self.target_replicas and self.target_replicas != p.replicas:
            rec.replicas = self.target_replicas
        if self.target_removing != p.removing_replicas:
            rec.removing_replicas = self.target_removing
        if self.target_adding != p.adding_replicas:
            rec.adding_replicas = self.target_adding
        if self.target_leader_recovery_state != p.leader_recovery_state:
            rec.leader_recovery_state = self.target_leader_recovery_state
        record = rec.freeze()
        return None if record.is_no_op else record

    def _complete_reassignment_if_needed(self) -> None:
        done = maybe_complete_reassignment(self.target_removing, self.target_adding, self.target_replicas,
                                           self.target_isr, self.version.reassignment_completion)
        if done is not None:
            self.target_replicas, self.target_isr = done
            self.target_removing = self.target_adding = ()

    def _maybe_populate_target_elr(self) -> None:
        if not self.version.eligible_leader_replicas:
            return
        if len(self.target_isr) >= self.min_isr:
            self.target_elr = self.target_last_known_elr = ()
            return
        in_isr = set(self.target_isr)
        unclean = set(self.unclean_shutdown_replicas or ())
        candidates = JavaHashSet.copy_of(self.target_elr)  # iteration order is Java's HashSet<Integer>
        for r in self.partition.isr:
            candidates.add(r)
        self.target_elr = tuple(r for r in candidates if r not in in_isr and r not in unclean)
        for r in self.target_last_known_elr:
            candidates.add(r)
        elr = set(self.target_elr)
        self.target_last_known_elr = tuple(r for r in candidates if r not in in_isr and r not in elr)

    def _try_election(self, rec: _Record) -> None:
        result = self.elect_leader()
        if result.node == self.partition.leader:
            return
        if result.node in self.target_elr:
            self.target_isr = (result.node,)
            self.target_elr = tuple(r for r in self.target_elr if r != result.node)
        rec.leader = result.node
        if result.unclean:  # the ISR is forced to the new leader alone: this can lose data
            rec.isr = (result.node,)
            if (self.partition.leader_recovery_state is not LeaderRecoveryState.RECOVERING
                    and self.version.leader_recovery_supported):
                rec.leader_recovery_state = LeaderRecoveryState.RECOVERING

    def _trigger_leader_epoch_bump_for_replica_reassignment(self, rec: _Record) -> None:
        if rec.leader != NO_LEADER_CHANGE:
            return
        if not _contains_all(self.target_replicas, self.partition.replicas):
            rec.leader = self.partition.leader  # a replica leaves: force a new leader epoch

    def _trigger_leader_epoch_bump_for_isr_shrink(self, rec: _Record) -> None:
        v = self.version
        if not (v.leader_epoch_bump_on_isr_shrink or v.zk_migration_enabled):
            return
        if rec.leader != NO_LEADER_CHANGE or rec.isr is None:
            return
        if not _contains_all(rec.isr, self.partition.isr):
            rec.leader = self.partition.leader

    def _maybe_update_record_elr(self, rec: _Record) -> None:
        clean = rec.isr is None
        v = self.version
        if not clean or not v.eligible_leader_replicas:
            self.target_elr = self.target_last_known_elr = ()
        if self.target_elr != self.partition.elr:
            rec.elr = self.target_elr
        p = self.partition
        if (v.use_last_known_leader_in_balanced_recovery and len(p.last_known_elr) == 1
                and (rec.leader == NO_LEADER or (rec.leader == NO_LEADER_CHANGE and p.leader == NO_LEADER))):
            self.target_last_known_elr = p.last_known_elr  # keep the last known leader while leaderless
        if v.use_last_known_leader_in_balanced_recovery:
            return
        if self.target_last_known_elr != p.last_known_elr:
            rec.last_known_elr = self.target_last_known_elr

    def _maybe_update_last_known_leader(self, rec: _Record) -> None:
        v = self.version
        if not v.use_last_known_leader_in_balanced_recovery or not v.eligible_leader_replicas:
            return
        p = self.partition
        if v.last_known_leader_update == "leaderless":
            if rec.leader == NO_LEADER and not p.last_known_elr:
                rec.last_known_elr = (p.leader,)  # first time leaderless: remember who led
            elif rec.leader >= 0 and p.last_known_elr:
                rec.last_known_elr = ()
        elif rec.isr is not None and not rec.isr and (len(p.last_known_elr) != 1 or p.last_known_elr[0] != p.leader):
            rec.last_known_elr = (p.leader,)  # the ISR empties: remember who led
        elif (rec.leader >= 0 or (p.leader != NO_LEADER and rec.leader != NO_LEADER)) and p.last_known_elr:
            rec.last_known_elr = ()


# A PartitionChangeRecord while it is being built: the same fields, mutable (PartitionChangeBuilder
# sets them one rule at a time), frozen into the record at the end. Made from the record's own fields so
# the two cannot drift apart (typed Any: mypy cannot see a class built at run time).
_Record: Any = make_dataclass(
    "_Record", [(f.name, f.type, f.default) for f in fields(PartitionChangeRecord)],
    namespace={"freeze": lambda self: PartitionChangeRecord(**vars(self))},
)


def elect_kraft(
    partition: PartitionRegistration, acceptable: Callable[[int], bool] | Collection[int],
    election: Election = Election.ONLINE, *, target_isr: Sequence[int] | None = None,
    version: KRaftVersion = KRAFT_DEFAULT, min_isr: int = 1,
) -> tuple[PartitionChangeRecord | None, PartitionRegistration]:
    """One KRaft election: the record (None: nothing changes) and the registration after it."""
    builder = PartitionChangeBuilder(partition, acceptable, version, min_isr).set_election(election)
    if target_isr is not None:
        builder.set_target_isr(target_isr)
    record = builder.build()
    return record, (partition if record is None else partition.merge(record))
