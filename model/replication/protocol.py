"""Protocol rules: every decision point of the replication model, as a named, replaceable function.

`Protocol.current()` is today's Kafka (KRaft, Kafka 4.1 defaults for a new cluster: KIP-101/279
epoch-based truncation, KIP-320 leader-epoch fencing, KIP-497 maximal ISR, KIP-903 broker epochs in
AlterPartition, KIP-966 eligible leader replicas with the strict min-ISR high-watermark rule,
controller writes fenced by epoch). A
historical rule or a proposed change is the same protocol with some rules replaced:

    from dataclasses import replace
    from kcheck.model.replication.protocol import Protocol, truncate_to_high_watermark
    mine = replace(Protocol.current(), name="mine", truncation=truncate_to_high_watermark)

Reassignment has three rules (`model/replication/reassignment.py`): when a move completes (today's
rule since KAFKA-15665; the one before it and KAFKA-19975's are there to swap in), what a cancel
writes, and which ELR a completion or cancel keeps.

`VARIANTS` holds the named historical protocols of kcheck's bug catalogue (rows
1, 2, 3, 4, 6, 8, 9, 13), each with the cluster settings its row needs and the invariants it breaks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kcheck.model.replication.reassignment import (
    Completion,
    ElrFilter,
    Revert,
    complete_when_adding_unless_shrinking,
    complete_when_targets_in_sync,
    elr_as_computed,
    revert_clean,
)
from kcheck.model.replication.state import NO_LEADER, Registry, Replica, epoch_cache

UNDEFINED = -1

# ---- the leader-epoch lookup (OffsetsForLeaderEpoch) ----------------------------------------


def lookup_cache(r: Replica) -> tuple[tuple[int, int], ...]:
    """The epoch cache a replica answers from: a leader also holds its own epoch's start offset,
    assigned when it became leader (Kafka: `maybeAssignEpochStartOffset`), before it wrote anything."""
    cache = epoch_cache(r.log)
    if r.is_leader and (not cache or r.leader_epoch > cache[-1][0]):
        cache = cache + ((r.leader_epoch, r.epoch_start),)
    return cache


def end_offset_for_epoch(cache: tuple[tuple[int, int], ...], leo: int, epoch: int) -> tuple[int, int]:
    """KIP-279's answer: (the largest epoch <= `epoch` the log has, the offset where it ends).

    Mirrors `LeaderEpochFileCache.endOffsetFor`: the latest epoch ends at the log end; an epoch the
    log lacks is answered with the largest smaller one; below the first epoch, the requested epoch
    itself with the first epoch's start offset; above the latest, undefined.
    """
    if not cache:
        return UNDEFINED, UNDEFINED
    if cache[-1][0] == epoch:
        return epoch, leo
    higher = [(e, s) for e, s in cache if e > epoch]
    if not higher:
        return UNDEFINED, UNDEFINED
    floor = [(e, s) for e, s in cache if e <= epoch]
    return (floor[-1][0] if floor else epoch), higher[0][1]


def first_offset_after_epoch(cache: tuple[tuple[int, int], ...], leo: int, epoch: int) -> tuple[int | None, int]:
    """KIP-101's one-shot answer: the end offset of `epoch` if it is the latest, else the start offset
    of the first larger epoch, with no epoch attached (so the follower cannot tell it lacks `epoch`)."""
    if cache and cache[-1][0] == epoch:
        return None, leo
    higher = [s for e, s in cache if e > epoch]
    return None, (higher[0] if higher else UNDEFINED)


# ---- truncation on becoming follower --------------------------------------------------------


def truncate_to_high_watermark(follower: Replica, leader: Replica | None, p: Protocol) -> int | None:
    """Pre-0.11 Kafka: truncate to the follower's own (checkpointed) high watermark (KAFKA-1211)."""
    return follower.hw


def truncate_by_epoch_lookup(follower: Replica, leader: Replica | None, p: Protocol) -> int | None:
    """Ask the leader where the follower's last epoch ends and truncate there (KIP-101, KIP-279).

    Returns None when the leader cannot answer now (not leading, or the lookup is fenced).
    Mirrors `AbstractFetcherThread.getOffsetTruncationState`: if the follower lacks the epoch the
    leader answered with, it truncates and asks again with its new latest epoch.
    """
    if leader is None or not leader.is_leader or p.fetch_validation(leader, follower.leader_epoch):
        return None
    if not follower.log:
        return 0
    log, leader_cache = follower.log, lookup_cache(leader)
    while True:
        own_cache = epoch_cache(log)
        epoch, end = p.epoch_lookup(leader_cache, leader.leo, own_cache[-1][0])
        if end == UNDEFINED:
            return min(follower.hw, len(log))  # no answer: fall back to the high watermark
        if epoch is None:  # one-shot answer
            return min(end, len(log))
        own_epoch, own_end = end_offset_for_epoch(own_cache, len(log), epoch)
        point = min(end, own_end if own_end != UNDEFINED else len(log))
        if own_epoch == epoch or point == 0:
            return point
        if point >= len(log):
            return len(log)
        log = log[:point]


def truncate_on_every_epoch_change(before: Replica, leader: int, leader_epoch: int) -> bool:
    """KAFKA-7164: a follower truncates again after every leader-epoch change, even to the same leader."""
    return True


def truncate_on_leader_change(before: Replica, leader: int, leader_epoch: int) -> bool:
    """Before KAFKA-7164: only a new leader made the follower truncate."""
    return not before.known or before.leader != leader


# ---- fetch validation ------------------------------------------------------------------------


def validate_leader_epoch(leader: Replica, current_epoch: int) -> str:
    """KIP-320: the fetcher's current leader epoch must equal the leader's."""
    if not leader.is_leader:
        return "NOT_LEADER_OR_FOLLOWER"
    if current_epoch < leader.leader_epoch:
        return "FENCED_LEADER_EPOCH"
    if current_epoch > leader.leader_epoch:
        return "UNKNOWN_LEADER_EPOCH"
    return ""


def no_leader_epoch(leader: Replica, current_epoch: int) -> str:
    """Before KIP-320 a fetch carried no leader epoch: any broker that believes it leads serves it."""
    return "" if leader.is_leader else "NOT_LEADER_OR_FOLLOWER"


# ---- the ISR join rule -----------------------------------------------------------------------


def caught_up_in_leader_epoch(leader: Replica, follower: int, registry: Registry) -> bool:
    """`Partition.isFollowerInSync` plus KRaft's checks: fetched in this leader epoch up to the high
    watermark and to the start of the leader's epoch (KAFKA-7128), registration unfenced, and the
    broker epoch in its fetch is the registered one."""
    leo = leader.view_of(follower)
    if leo is None or leo < leader.hw or leo < leader.epoch_start or follower in registry.fenced:
        return False
    sent = dict(leader.follower_broker_epoch).get(follower)
    return sent == registry.broker_epochs[follower - 1]


def caught_up_to_high_watermark(leader: Replica, follower: int, registry: Registry) -> bool:
    """The ZooKeeper-era rule: the follower's fetch offset reached the leader's high watermark."""
    leo = leader.view_of(follower)
    return leo is not None and leo >= leader.hw


# ---- the high-watermark rule -----------------------------------------------------------------


def _min_leo(leader: Replica, quorum: frozenset[int]) -> int:
    leos = [leader.leo]
    for f in quorum:
        if f != leader.id:
            leos.append(leader.view_of(f) or 0)
    return min(leos)


def over_maximal_isr_strict(leader: Replica, min_isr: int) -> int:
    """Today: the minimum over the maximal ISR (current plus proposed, KIP-497), and no advance while
    the ISR is below min.insync.replicas (KIP-966 part 1)."""
    if len(leader.isr) < min_isr:
        return leader.hw
    return max(leader.hw, _min_leo(leader, leader.isr | (leader.pending_isr or frozenset())))


def over_maximal_isr(leader: Replica, min_isr: int) -> int:
    """Before KIP-966: the maximal ISR, even when it is below min.insync.replicas."""
    return max(leader.hw, _min_leo(leader, leader.isr | (leader.pending_isr or frozenset())))


def over_committed_isr(leader: Replica, min_isr: int) -> int:
    """The naive asynchronous-ISR design KIP-497 rejected: count only the committed ISR while an
    expansion is in flight."""
    return max(leader.hw, _min_leo(leader, leader.isr))


# ---- leader choice and ISR shrink on the controller -------------------------------------------

Choice = tuple[int, frozenset[int], frozenset[int]]  # (leader, isr, elr)


def _first(registry: Registry, candidates: frozenset[int], n: int) -> int | None:
    """The first unfenced candidate in replica order (`PartitionChangeBuilder.electAnyLeader` walks the
    target replicas; during a reassignment those are the target first, then the replicas being removed).
    A broker outside the replica set is never chosen, even if it is still in the ELR."""
    for b in registry.replicas:  # replica order: the preferred replica first
        if b in candidates and b not in registry.fenced:
            return b
    return None


def clean_or_eligible(registry: Registry, n: int) -> Choice | None:
    """KIP-966: an unfenced ISR member, else an unfenced eligible leader replica (which joins the ISR), else,
    with neither an ISR nor an ELR left, the last known leader if it is unfenced.

    The last one is `PartitionChangeBuilder.canElectLastKnownLeader` ("balanced recovery", on whenever ELR
    is: the controller never turns it off): an unclean election (Kafka marks the partition RECOVERING) that
    needs no unclean.leader.election.enable, and Kafka does not ask whether that broker is still a replica.
    """
    b = _first(registry, registry.isr, n)
    if b is not None:
        return b, registry.isr, registry.elr
    b = _first(registry, registry.elr, n)
    if b is not None:
        return b, frozenset({b}), registry.elr - {b}
    b = registry.last_known_leader
    if not registry.isr and not registry.elr and b != NO_LEADER and b not in registry.fenced:
        return b, frozenset({b}), frozenset()
    return None


def clean_only(registry: Registry, n: int) -> Choice | None:
    """unclean.leader.election.enable=false without ELR: only an unfenced ISR member."""
    b = _first(registry, registry.isr, n)
    return None if b is None else (b, registry.isr, registry.elr)


def unclean_allowed(registry: Registry, n: int) -> Choice | None:
    """unclean.leader.election.enable=true (the 0.8-0.10 default): any unfenced replica when no ISR
    member is left; the ISR restarts as just the new leader."""
    clean = clean_only(registry, n)
    if clean is not None:
        return clean
    b = _first(registry, frozenset(registry.replicas), n)
    return None if b is None else (b, frozenset({b}), frozenset())


def eligible_leader_replicas(registry: Registry, removed: frozenset[int], min_isr: int,
                             unclean: frozenset[int]) -> tuple[frozenset[int], frozenset[int]]:
    """KIP-966 (`PartitionChangeBuilder.maybePopulateTargetElr`): the ISR may empty; replicas leaving an
    ISR that is below min.insync.replicas stay eligible, unless they shut down uncleanly."""
    isr = registry.isr - removed
    if len(isr) >= min_isr:
        return isr, frozenset()
    return isr, ((registry.elr | (registry.isr & removed)) - unclean) - isr


def keep_last_replica(registry: Registry, removed: frozenset[int], min_isr: int,
                      unclean: frozenset[int]) -> tuple[frozenset[int], frozenset[int]]:
    """Before KIP-966: the ISR never shrinks below one member, whatever happened to that member."""
    isr = registry.isr - removed
    return (isr if isr else registry.isr), frozenset()


# ---- the last known leader (KIP-966) ------------------------------------------------------------

def remember_last_known_leader(base: Registry, leader: int, leader_written: bool) -> int:
    """`PartitionChangeBuilder.maybeUpdateLastKnownLeader` as Kafka 4.1.2 on has it (apache/kafka#20629): a
    write that takes the leader away remembers who led, unless someone is remembered already; a write that
    names a leader forgets. `leader_written`: the record carries a leader (a new one, or the same one for
    an epoch bump)."""
    if not leader_written:
        return base.last_known_leader
    if leader == NO_LEADER:
        return base.leader if base.last_known_leader == NO_LEADER else base.last_known_leader
    return NO_LEADER


def no_last_known_leader(base: Registry, leader: int, leader_written: bool) -> int:
    """Without ELR nothing is remembered."""
    return NO_LEADER


def added_replicas_current_epoch(registry: Registry, isr: frozenset[int],
                                 broker_epochs: Mapping[int, int]) -> bool:
    """KRaft's AlterPartition check with KIP-903: replicas joining the ISR must be unfenced, and the broker
    epoch the leader saw in their fetches must be the registered one (a restart in between refuses it)."""
    added = isr - registry.isr
    if added & registry.fenced:
        return False
    return all(broker_epochs.get(b) == registry.broker_epochs[b - 1] for b in added)


def added_replicas_unfenced(registry: Registry, isr: frozenset[int], broker_epochs: Mapping[int, int]) -> bool:
    """Before KIP-903: replicas joining the ISR must be registered and unfenced; broker epochs unchecked."""
    return not ((isr - registry.isr) & registry.fenced)


def accept_any_isr(registry: Registry, isr: frozenset[int], broker_epochs: Mapping[int, int]) -> bool:
    """ZooKeeper era: the leader wrote the ISR itself; nobody checked who joined."""
    return True


# ---- registration after a restart -------------------------------------------------------------

def register_fenced(clean_shutdown: bool) -> tuple[bool, bool]:
    """KRaft: a restarted broker registers with a new broker epoch and starts fenced; whether its last
    shutdown was clean is reported (KIP-966 uses it). Returns (fence it, report unclean shutdown)."""
    return True, not clean_shutdown


def rejoin_unnoticed(clean_shutdown: bool) -> tuple[bool, bool]:
    """ZooKeeper era: a broker back before its session expired is never noticed by the controller."""
    return False, False


# ---- controller write fencing ------------------------------------------------------------------

def fenced_by_controller_epoch(registry: Registry, writer_epoch: int) -> bool:
    """KAFKA-6082's fix (and KRaft): a write from an older controller epoch is refused."""
    return writer_epoch >= registry.controller_epoch


def unfenced_controller_writes(registry: Registry, writer_epoch: int) -> bool:
    """Before KAFKA-6082's fix: a controller that lost its ZooKeeper session could still write."""
    return True


@dataclass(frozen=True)
class Protocol:
    name: str
    description: str
    # on becoming follower (and after a restart): where to truncate the log
    truncation: Callable[[Replica, Replica | None, Protocol], int | None]
    # OffsetsForLeaderEpoch: the leader's answer
    epoch_lookup: Callable[[tuple[tuple[int, int], ...], int, int], tuple[int | None, int]]
    # which LeaderAndIsr changes make a follower truncate again
    truncate_on: Callable[[Replica, int, int], bool]
    # the leader's check of a fetch's (and an epoch lookup's) leader epoch; "" = accepted
    fetch_validation: Callable[[Replica, int], str]
    # may the leader propose this follower for the ISR
    isr_join: Callable[[Replica, int, Registry], bool]
    # may the controller accept this ISR from the leader
    alter_partition_validation: Callable[[Registry, frozenset[int], Mapping[int, int]], bool]
    # the leader's high watermark
    high_watermark: Callable[[Replica, int], int]
    # the controller's leader choice when the leader is gone (clean, unclean, ELR)
    leader_choice: Callable[[Registry, int], Choice | None]
    # the controller's ISR (and ELR) after brokers leave it
    isr_removal: Callable[[Registry, frozenset[int], int, frozenset[int]], tuple[frozenset[int], frozenset[int]]]
    # what the controller learns when a broker comes back
    registration: Callable[[bool], tuple[bool, bool]]
    # may a controller of this epoch write the partition state
    controller_write: Callable[[Registry, int], bool]
    # when a reassignment completes: run on every controller write, as KRaft's PartitionChangeBuilder does
    reassignment_completion: Completion = complete_when_targets_in_sync
    # what cancelling a reassignment writes (None: refused)
    reassignment_revert: Revert = revert_clean
    # the ELR a completion or a cancel writes, given the replica set it writes
    reassignment_elr: ElrFilter = elr_as_computed
    # the last known leader a write leaves: (registry before, leader written, does the record carry a leader)
    last_known_leader: Callable[[Registry, int, bool], int] = remember_last_known_leader
    send_leader_epoch: bool = True  # fetches carry the follower's leader epoch (KIP-320)

    @classmethod
    def current(cls, kafka_version: str | None = None) -> Protocol:
        """Today's rules: Kafka 4.1's, or a named 4.x release's (checked against its PartitionChangeBuilder,
        tests/test_kafka_conformance.py). From 4.3.0 a reassignment completes by KAFKA-19975's rule."""
        completion = complete_when_targets_in_sync
        if kafka_version is not None:
            release = tuple(int(x) for x in kafka_version.split(".")[:3])
            if release < (4, 0, 0):
                raise ValueError(f"Protocol.current knows Kafka 4.0.0 and later, not {kafka_version}")
            if release >= (4, 3, 0):
                completion = complete_when_adding_unless_shrinking
        return cls(
            name="current",
            description="today's Kafka: KRaft with KIP-101/279/320/497/966 and epoch-fenced controller writes",
            truncation=truncate_by_epoch_lookup,
            epoch_lookup=end_offset_for_epoch,
            truncate_on=truncate_on_every_epoch_change,
            fetch_validation=validate_leader_epoch,
            isr_join=caught_up_in_leader_epoch,
            alter_partition_validation=added_replicas_current_epoch,
            high_watermark=over_maximal_isr_strict,
            leader_choice=clean_or_eligible,
            isr_removal=eligible_leader_replicas,
            registration=register_fenced,
            controller_write=fenced_by_controller_epoch,
            reassignment_completion=completion,
            reassignment_revert=revert_clean,
            reassignment_elr=elr_as_computed,
            last_known_leader=remember_last_known_leader,
        )

    def rules(self) -> dict[str, str]:
        """Rule name -> the function in use, for reports."""
        skip = {"name", "description", "send_leader_epoch"}
        return {k: getattr(self, k).__name__ for k in self.__dataclass_fields__ if k not in skip}


@dataclass(frozen=True)
class Variant:
    """A historical Kafka protocol from the bug catalogue, with the smallest setting that shows its bug."""

    name: str
    row: int  # the row of kcheck's bug catalogue (`kcheck variants`)
    bug: str
    protocol: Protocol
    settings: Mapping[str, Any]  # Config overrides (brokers, min ISR, budgets)
    violates: tuple[str, ...]  # invariant ids the row's property maps to; any one counts
    minimal_steps: int  # length of the row's minimal event sequence, in this model's steps


def _variant(name: str, row: int, bug: str, violates: tuple[str, ...], minimal_steps: int,
             settings: Mapping[str, Any], **rules: Any) -> Variant:
    base = Protocol.current()
    return Variant(name, row, bug, replace(base, name=name, description=bug, **rules), settings,
                   violates, minimal_steps)


_ZK_RESTART = {"registration": rejoin_unnoticed}

VARIANTS: dict[str, Variant] = {v.name: v for v in (
    _variant("truncate-to-hw", 1,
             "KIP-101 scenario 1 (KAFKA-1211): a restarted follower truncates to its own high watermark and "
             "is elected before it refetches",
             ("replication.electable-has-committed", "replication.leader-has-acked"), 10,
             {"brokers": 2, "min_isr": 1, "crashes": 2, "lossy_crashes": 0, "fences": 0, "elections": 0,
              "isr_shrinks": 0, "failovers": 0, "records": 1},
             truncation=truncate_to_high_watermark, **_ZK_RESTART),
    _variant("truncate-to-hw-lossy", 2,
             "KIP-101 scenario 2: high-watermark truncation after two hard failures, one losing its page cache",
             ("replication.log-matching",), 20,
             {"brokers": 2, "min_isr": 1, "crashes": 1, "lossy_crashes": 1, "fences": 0, "elections": 0,
              "isr_shrinks": 0, "failovers": 0, "records": 3},
             truncation=truncate_to_high_watermark, **_ZK_RESTART),
    _variant("one-shot-epoch-lookup", 3,
             "KIP-279 (KAFKA-6361): the leader answers an epoch lookup without the epoch, the follower "
             "truncates once, and two quick leader moves leave a divergent offset below the high watermark",
             ("replication.log-matching", "replication.electable-has-committed"), 19,
             {"brokers": 2, "min_isr": 1, "crashes": 0, "lossy_crashes": 0, "fences": 0, "elections": 2,
              "isr_shrinks": 0, "failovers": 0, "records": 4},
             epoch_lookup=first_offset_after_epoch),
    _variant("no-epoch-in-fetch", 4,
             "KIP-320 (KAFKA-6880): fetches carry no leader epoch, so a zombie follower that missed two "
             "epochs fetches from the right broker at the wrong offset and rejoins the ISR",
             ("replication.log-matching", "replication.electable-has-committed"), 27,
             {"brokers": 3, "min_isr": 1, "crashes": 0, "lossy_crashes": 0, "fences": 0, "elections": 2,
              "isr_shrinks": 1, "failovers": 0, "records": 3, "duplicates": False},
             fetch_validation=no_leader_epoch, send_leader_epoch=False),
    _variant("hw-over-committed-isr", 6,
             "KIP-497's rejected design: while an ISR expansion is in flight the leader counts only the "
             "committed ISR, acknowledges a write, and the controller then adds a follower that lacks it",
             ("replication.electable-has-committed",), 6,
             {"brokers": 2, "min_isr": 1, "initial_isr": 1, "crashes": 0, "lossy_crashes": 0, "fences": 0,
              "elections": 0, "isr_shrinks": 0, "failovers": 0, "records": 1},
             high_watermark=over_committed_isr),
    _variant("unclean-election", 8,
             "Jepsen 2013: an ISR of one acknowledges acks=all writes and a replica outside the ISR is "
             "elected when the leader dies (unclean.leader.election.enable=true, no min.insync.replicas)",
             ("replication.leader-has-acked", "replication.no-acked-lost"), 7,
             {"brokers": 2, "min_isr": 1, "crashes": 1, "lossy_crashes": 0, "fences": 0, "elections": 0,
              "isr_shrinks": 1, "failovers": 0, "records": 1},
             leader_choice=unclean_allowed, isr_removal=keep_last_replica, last_known_leader=no_last_known_leader),
    _variant("last-replica-standing", 9,
             "KIP-966: without eligible leader replicas the last ISR member stays electable after it lost "
             "committed records in a lossy shutdown",
             ("replication.electable-has-committed", "replication.leader-has-acked", "replication.no-acked-lost"),
             13,
             {"brokers": 2, "min_isr": 2, "crashes": 0, "lossy_crashes": 1, "fences": 1, "elections": 0,
              "isr_shrinks": 0, "failovers": 0, "records": 2},
             leader_choice=clean_only, isr_removal=keep_last_replica, high_watermark=over_maximal_isr,
             last_known_leader=no_last_known_leader),
    _variant("zombie-controller", 13,
             "KAFKA-6082: a controller that lost its ZooKeeper session keeps writing partition state after a "
             "new controller took over",
             ("replication.epochs-monotonic", "replication.one-leader-per-epoch"), 3,
             {"brokers": 2, "min_isr": 1, "crashes": 0, "lossy_crashes": 0, "fences": 0, "elections": 2,
              "isr_shrinks": 0, "failovers": 1, "records": 0},
             controller_write=unfenced_controller_writes),
)}

