"""Protocol rules: every decision point of the replication model, as a named, replaceable function.

`Protocol.current()` is today's Kafka: the rules of Kafka 4.4.0 (`DEFAULT_RELEASE`) for a new KRaft cluster
(KIP-101/279 epoch-based truncation, KIP-320 leader-epoch fencing, KIP-497 maximal ISR, KIP-903 broker epochs in
AlterPartition, KIP-966 eligible leader replicas with the strict min-ISR high-watermark rule, controller writes
fenced by epoch), and `Protocol.current(VERSION)` a named release's (3.9.0 on; `release_rules` holds the rules
that differ between releases, ELR included; `--protocol current --kafka-version VERSION` is the same). A
historical rule or a proposed change is the same protocol with some rules replaced:

    from dataclasses import replace
    from kcheck.model.replication.protocol import Protocol, truncate_to_high_watermark
    mine = replace(Protocol.current(), name="mine", truncation=truncate_to_high_watermark)

Reassignment has three rules (`model/replication/reassignment.py`): when a move completes (today's
rule since KAFKA-15665; the one before it and KAFKA-19975's are there to swap in), what a cancel
writes, and which ELR a completion or cancel keeps.

`VARIANTS` holds the named historical protocols of kcheck's bug catalogue (rows
1, 2, 3, 4, 6, 8, 9, 13, 14, 15), each with the cluster settings its row needs and the invariants it breaks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kcheck.model.replication.reassignment import (
    Completion,
    ElrFilter,
    Revert,
    complete_when_adding_in_sync,
    complete_when_adding_unless_shrinking,
    complete_when_targets_in_sync,
    elr_as_computed,
    elr_within_replicas,
    revert_clean,
    revert_unclean,
)
from kcheck.model.replication.state import (
    NO_LEADER,
    AlterPartition,
    FetchResponse,
    LeaderAndIsr,
    Message,
    Registry,
    Replica,
    StopReplica,
    epoch_cache,
)
from kcheck.model.rule_set import RuleSet

UNDEFINED = -1

# ---- the leader-epoch lookup (OffsetsForLeaderEpoch) ----------------------------------------


def lookup_cache(r: Replica) -> tuple[tuple[int, int], ...]:
    """The epoch cache a replica answers from: a leader also holds its own epoch's start offset,
    assigned when it became leader (Kafka: `maybeAssignEpochStartOffset`), before it wrote anything."""
    cache = epoch_cache(r.log)
    if r.is_leader and (not cache or r.leader_epoch > cache[-1][0]):
        cache = cache + ((r.leader_epoch, r.epoch_start),)
    return cache


def end_offset_for_epoch(cache: tuple[tuple[int, int], ...], leo: int, epoch: int) -> tuple[int | None, int]:
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


def fence_stale_fetch_state(image: Registry | None, follower: int, broker_epoch: int) -> bool:
    """KIP-903 (Kafka 3.5) on the leader: a fetch whose broker epoch is older than the follower's live registration
    in the leader's KRaft image is refused (NOT_LEADER_OR_FOLLOWER) before it updates the follower's state: a request
    of a dead incarnation cannot overwrite what its successor fetched (`Replica.updateFetchStateOrThrow`). The image
    is None in ZooKeeper mode, which has no such check."""
    if image is None or follower in image.fenced:
        return True
    return broker_epoch == -1 or image.broker_epochs[follower - 1] <= broker_epoch


def record_every_fetch(image: Registry | None, follower: int, broker_epoch: int) -> bool:
    """Before KIP-903 (Kafka 3.4 and older): every fetch that passes the epoch checks updates the follower's state,
    even one its sender's previous incarnation sent (KAFKA-14139)."""
    return True


def validate_leader_epoch(leader: Replica, current_epoch: int) -> str:
    """KIP-320: the fetcher's current leader epoch must equal the leader's (`Partition.checkCurrentLeaderEpoch`;
    a request without one, -1, is not checked), and is checked before leadership (`Partition.getLocalLog`: a
    follower of another epoch answers FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH, of the same epoch
    NOT_LEADER_OR_FOLLOWER; compared with Kafka's Partition in tests/test_kafka_partition.py)."""
    if current_epoch >= 0 and current_epoch < leader.leader_epoch:
        return "FENCED_LEADER_EPOCH"
    if current_epoch > leader.leader_epoch:
        return "UNKNOWN_LEADER_EPOCH"
    return "" if leader.is_leader else "NOT_LEADER_OR_FOLLOWER"


def no_leader_epoch(leader: Replica, current_epoch: int) -> str:
    """Before KIP-320 a fetch carried no leader epoch: any broker that believes it leads serves it."""
    return "" if leader.is_leader else "NOT_LEADER_OR_FOLLOWER"


def send_own_leader_epoch(follower: Replica) -> int:
    """KIP-320: a follower's fetch carries the leader epoch it believes current (`AbstractFetcherThread`
    builds each partition's `FetchRequest.PartitionData` with its fetch state's `currentLeaderEpoch`)."""
    return follower.leader_epoch


def no_epoch_in_fetch(follower: Replica) -> int:
    """Before KIP-320: fetches carry no leader epoch (-1)."""
    return -1


def response_matches_fetch_state(follower: Replica, response: FetchResponse) -> bool:
    """`AbstractFetcherThread.processFetchRequest`: the follower applies a response only while its fetch
    state is the one it fetched with: the same leader, leader epoch and fetch offset, and no truncation
    pending. Anything else is ignored (and the model drops it)."""
    return (follower.alive and follower.known and follower.leader == response.frm
            and follower.leader_epoch == response.follower_epoch and follower.leo == response.offset
            and not follower.needs_truncation)


def response_matches_offset(follower: Replica, response: FetchResponse) -> bool:
    """Before KIP-320 the fetcher compared only the fetch offset (and that it still fetched from that leader),
    not the leader epoch the request was sent in."""
    return (follower.alive and follower.known and follower.leader == response.frm
            and follower.leo == response.offset and not follower.needs_truncation)


# ---- the leader's own state ---------------------------------------------------------------------


def keep_followers_when_reelected(before: Replica, leader_epoch: int, follower: int, isr: frozenset[int]) -> bool:
    """`Partition.makeLeader` (Kafka 3.9.0 through 4.4.0): on a new leader epoch every follower's state is reset by
    `Replica.resetReplicaState`, which keeps its log end offset and broker epoch when the broker already led
    (isNewLeader false) and forgets them when it did not. Asked per follower still assigned (one that left the
    replica set is dropped first, `Partition.updateAssignmentAndIsr`), with the new ISR."""
    return before.is_leader


def forget_followers_every_epoch(before: Replica, leader_epoch: int, follower: int, isr: frozenset[int]) -> bool:
    """Stricter than Kafka (the model's rule before it followed Kafka 4.4's broker code): a leader starts every leader
    epoch with no view of its followers, so each must fetch again in the new epoch before it counts for the high
    watermark or the ISR."""
    return False


def refuse_acks_all_below_min_isr(leader: Replica, acks: str, min_isr: int) -> bool:
    """`Partition.appendRecordsToLeader`: an acks=all write to a leader whose ISR is below
    min.insync.replicas is refused (NotEnoughReplicasException) before anything is appended."""
    return acks != "all" or len(leader.isr) >= min_isr


def accept_every_write(leader: Replica, acks: str, min_isr: int) -> bool:
    """Before min.insync.replicas (KAFKA-1555, Kafka 0.8.2): a leader appends every write."""
    return True


def ack_with_min_isr(leader: Replica, min_isr: int) -> bool:
    """`Partition.checkEnoughReplicasReachOffset`: an acks=all write below the high watermark is acknowledged
    only while the ISR has min.insync.replicas members (else NOT_ENOUGH_REPLICAS_AFTER_APPEND)."""
    return len(leader.isr) >= min_isr


def ack_at_high_watermark(leader: Replica, min_isr: int) -> bool:
    """Before KAFKA-1555: an acks=all write is acknowledged once the high watermark passes it, whatever
    the ISR's size."""
    return True


def read_below_high_watermark(leader: Replica) -> int:
    """Consumers read below the leader's high watermark (`FetchIsolation.HIGH_WATERMARK`: `UnifiedLog.read`
    is bounded by it for a consumer's fetch)."""
    return leader.hw


def read_to_log_end(leader: Replica) -> int:
    """Consumers read what the leader has appended (`FetchIsolation.LOG_END`, a follower's bound)."""
    return leader.leo


# ---- what clients are told (ListOffsets, the fetch response) -------------------------------------


def offset_not_available_while_hw_lags(leader: Replica) -> int | None:
    """KIP-207 (KAFKA-2334, Kafka 2.2.0 to 4.4.0; `Partition.fetchOffsetForTimestamp`): a client's ListOffsets LATEST is
    answered with the high watermark (read_uncommitted's last fetchable offset), but while that lags behind the
    offset where the leader's epoch started (`leaderEpochStartOffsetOpt`, its log end when it became leader) the
    answer is OFFSET_NOT_AVAILABLE (None), a retriable error: a new leader learns the high watermark only from
    its followers' next fetches, and answering its stale one would take the offset back."""
    return None if leader.epoch_start > leader.hw else leader.hw


def latest_is_high_watermark(leader: Replica) -> int | None:
    """Before KIP-207 (Kafka 2.1 and older): LATEST is the leader's high watermark, even one lagging behind the
    start of its epoch after an election (KAFKA-2334: the offset a client sees goes back)."""
    return leader.hw


def leader_high_watermark(leader: Replica) -> int | None:
    """Kafka (through 4.4.0 at least): a consumer's fetch response carries the leader's high watermark as it is
    when the read starts (`Partition.readRecords`: `initialHighWatermark`), with no check against the start of
    its epoch, and the consumer takes it as it comes (`FetchCollector` -> `SubscriptionState.tryUpdatingHighWatermark`
    overwrites the stored value). So after an election the high watermark a consumer sees may go back: Kafka makes
    KIP-207's promise for ListOffsets only."""
    return leader.hw


def withhold_lagging_high_watermark(leader: Replica) -> int | None:
    """A proposal (not Kafka's): KIP-207's condition applied to the fetch response, whose high watermark is left
    out (-1, which the consumer ignores: `FetchCollector` updates it only when it is >= 0) while the leader's lags
    behind the start of its epoch. None = no high watermark reported."""
    return None if leader.epoch_start > leader.hw else leader.hw


# ---- what a broker applies from the controller --------------------------------------------------


def partition_epoch_not_older(r: Replica, m: LeaderAndIsr | StopReplica) -> bool:
    """KRaft: `ReplicaManager.applyDelta` hands every partition a metadata batch changed to `Partition.makeLeader` or
    `makeFollower`, which skip only a state whose partition epoch is older than the one the replica holds
    (KAFKA-13790). A state with the same partition epoch applies: the AlterPartition answer can teach the epoch
    before the record that committed it arrives, and that late record then replaces whatever the leader proposed
    meanwhile with the committed state it carries (the proposal's request, still held by the AlterPartitionManager,
    can commit all the same). After a restart (nothing known) any state; never one from a controller epoch the broker
    has seen superseded.

    ZooKeeper mode (a request, carrying the recipient's broker epoch: KIP-380; a metadata record carries none, -1):
    a newer (leader epoch, partition epoch). Kafka's `becomeLeaderOrFollower` asks a newer leader epoch; the model's
    ZooKeeper controller also sends, as LeaderAndIsr with the same leader epoch, the ISR changes Kafka announces with
    UpdateMetadata (not modelled), so a newer partition epoch applies there too."""
    if not r.alive or m.controller_epoch < r.controller_epoch:
        return False
    if not r.known:
        return True
    if m.broker_epoch >= 0:
        return (m.leader_epoch, m.partition_epoch) > (r.leader_epoch, r.partition_epoch)
    return m.partition_epoch >= r.partition_epoch


def skip_known_partition_epoch(r: Replica, m: LeaderAndIsr | StopReplica) -> bool:
    """A proposed fix (not Kafka's code; kcheck's default until it measured its figures again with Kafka's rule): a
    broker applies a state with a newer (leader epoch, partition epoch) than its own, after a restart any, never one
    from a superseded controller epoch. It differs from `partition_epoch_not_older` only on a KRaft metadata record
    whose partition epoch the AlterPartition answer already taught the leader: skipped here, applied by Kafka, where
    it can end an ISR change proposed after the answer and so lose acknowledged records (docs/findings.md, "A late
    record"). In `Partition.makeLeader` it would read: keep a pending ISR state when the record's partition epoch is
    the current one."""
    if not r.alive or m.controller_epoch < r.controller_epoch:
        return False
    return not r.known or (m.leader_epoch, m.partition_epoch) > (r.leader_epoch, r.partition_epoch)


def newer_leader_epoch_only(r: Replica, m: LeaderAndIsr | StopReplica) -> bool:
    """ZooKeeper-era `ReplicaManager.becomeLeaderOrFollower`: a LeaderAndIsr is applied only with a newer
    leader epoch; one with the same leader epoch and a new ISR is ignored."""
    if not r.alive or m.controller_epoch < r.controller_epoch:
        return False
    return not r.known or m.leader_epoch > r.leader_epoch


# ---- control requests and the recipient's incarnation (ZooKeeper mode; KIP-380) ----------------------------


def refuse_stale_broker_epoch(r: Replica, m: LeaderAndIsr | StopReplica) -> bool:
    """KIP-380 (Kafka 2.2 to 3.9, the last release with ZooKeeper mode): a LeaderAndIsr, StopReplica or UpdateMetadata
    carries the recipient's broker epoch as the controller registered it (`ControllerChannelManager`'s
    `liveBrokerIdAndEpochs(broker)`), and the broker refuses the whole request with STALE_BROKER_EPOCH when it is
    below its own (`KafkaApis.handleLeaderAndIsrRequest` -> `ZkBrokerEpochManager.isBrokerEpochStale`): a request
    queued for an earlier incarnation of the broker is not applied by the one that replaced it. A request without a
    broker epoch (-1) is not checked. True: the broker may apply it (the epoch checks come next)."""
    return m.broker_epoch == -1 or m.broker_epoch >= r.broker_epoch


def accept_any_broker_epoch(r: Replica, m: LeaderAndIsr | StopReplica) -> bool:
    """Before KIP-380 (Kafka 2.1 and older; KAFKA-7235): control requests carry no broker epoch, so a restarted broker
    applies a request the controller queued for its previous incarnation, which the controller's RequestSendThread
    re-sends on a new connection when the old one dies."""
    return True


# ---- crash and restart --------------------------------------------------------------------------


def connections_die(broker: int, m: Message) -> bool:
    """A crash loses every message in flight to or from the broker, as if the bytes it had sent never arrived, except
    the ZooKeeper controller's requests to it (see `sent_requests_survive`). Stricter than Kafka: it hides a request
    of the dead process that its peer processes after a quick restart (KAFKA-14139, the fetch KIP-903's broker
    epochs exist for)."""
    if isinstance(m, (LeaderAndIsr, StopReplica)):
        return False
    return getattr(m, "to", None) == broker or getattr(m, "frm", None) == broker


def sent_requests_survive(broker: int, m: Message) -> bool:
    """A crash loses what was still to reach the broker; what it had already sent is read and processed by its
    peer (`Selector` hands on every complete receive before it closes a channel the other side closed, and the
    request handlers serve what is queued), though the answer has no connection to go back on (the actions send
    none to an older incarnation). The ZooKeeper controller's requests to it survive too: `ControllerChannelManager`'s
    RequestSendThread retries the request it was sending on a new connection and keeps the broker's queue until the
    controller handles the failure (`removeBroker`, from `processBrokerChange`), so they may reach its next
    incarnation."""
    if isinstance(m, (LeaderAndIsr, StopReplica)):
        return False
    return getattr(m, "to", None) == broker


def catch_up_before_acting(before: Replica, registry: Registry) -> bool:
    """KRaft: a restarted broker replays the metadata log up to the controller's high watermark before it
    acts (`BrokerLifecycleManager`'s initial catch-up, awaited in `BrokerServer.startup`), so it applies
    the partition's current state at once."""
    return True


def await_leader_and_isr(before: Replica, registry: Registry) -> bool:
    """ZooKeeper era: the controller sends a restarted broker a LeaderAndIsr (`KafkaController.onBrokerStartup`)
    that it applies whenever it arrives; until then it knows nothing of the partition."""
    return False


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


def expand_after_fetch(after_fetch: bool) -> bool:
    """Kafka (`Partition.updateFollowerFetchState` -> `maybeExpandIsr`, 3.9.0 through 4.4.0): the leader asks whether a
    follower may join the ISR right after it recorded that follower's fetch, and at no other moment."""
    return after_fetch


def expand_at_any_time(after_fetch: bool) -> bool:
    """The model's rule before it followed Kafka 4.4's broker code (the rows of the bug catalogue are written with it):
    expansion is a step of its own, `expand_isr`, the leader may take at any moment; never in the fetch itself."""
    return not after_fetch


# ---- the high-watermark rule -----------------------------------------------------------------


def _min_leo(leader: Replica, quorum: frozenset[int]) -> int:
    leos = [leader.leo]
    for f in quorum:
        if f != leader.id:
            leos.append(leader.view_of(f) or 0)
    return min(leos)


def over_maximal_isr_strict(leader: Replica, min_isr: int) -> int:
    """Today: the minimum over the maximal ISR (current plus proposed, KIP-497), and no advance while
    the ISR is below min.insync.replicas (KIP-966 part 1; `Partition.maybeIncrementLeaderHW`).

    Where the model abstracts: Kafka also waits for an eligible replica outside the ISR that reached the log end
    within replica.lag.time.max.ms (`shouldWaitForReplicaToJoinIsr`, KAFKA-15021). The model has no clock; as that
    wait only delays an advance Kafka makes once the time has passed, advancing at once keeps every run of Kafka's
    (and adds the ones where the time passed sooner)."""
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
    A broker outside the replica set is never chosen, even if it is still in the ELR. The controller hands the
    election rules a registry whose `fenced` holds every broker its `broker_active` rule rejects (a broker in
    controlled shutdown too), so "unfenced" in these rules means Kafka's `isActive`."""
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


def clean_or_eligible_fenced_last_known(registry: Registry, n: int) -> Choice | None:
    """Kafka 3.9.x and 4.0.x with ELR on (KAFKA-19522, fixed in 4.1.0 by apache/kafka#20200): as
    `clean_or_eligible`, but the last known leader is elected even when it is fenced or shutting down:
    `PartitionChangeBuilder.canElectLastKnownLeader` only logged that the `LeaderAcceptor` refused it."""
    choice = clean_or_eligible(registry, n)
    if choice is not None:
        return choice
    b = registry.last_known_leader
    if not registry.isr and not registry.elr and b != NO_LEADER:
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


def in_isr_and_unfenced(registry: Registry, broker: int) -> bool:
    """Stricter than Kafka (the model's rule before it followed Kafka 4.4's broker code): an unfenced ISR member only,
    never an eligible leader replica of an empty ISR. Asked whether the current leader may stay (a reassignment's
    record, its completion) and whether a preferred or operator's election may move leadership to `broker`."""
    return broker in registry.isr and broker not in registry.fenced


def in_isr_or_elr_unfenced(registry: Registry, broker: int) -> bool:
    """`PartitionChangeBuilder.isValidNewLeader` (KIP-966; Kafka 3.9.0 through 4.4.0): an unfenced ISR member, or,
    when the ISR is empty, an unfenced eligible leader replica (with ELR off the ELR is empty: an ISR member). Asked
    whether the current leader may stay (a reassignment's record, its completion) and whether a preferred or
    operator's election may move leadership to `broker`."""
    in_sync = broker in registry.isr or (not registry.isr and broker in registry.elr)
    return in_sync and broker not in registry.fenced


def bump_on_leader_change_or_removal(before: Registry, after: Registry) -> bool:
    """`PartitionChangeBuilder.build()` in KRaft from metadata version 3.6: the leader epoch goes up when the
    leader changes, or when the replica set loses a member
    (`triggerLeaderEpochBumpForReplicaReassignmentIfNeeded`). `before` is the partition as the writer saw it,
    `after` the leader, ISR and replica set it writes (its epochs not yet set)."""
    return after.leader != before.leader or not set(before.replicas) <= set(after.replicas)


def bump_on_isr_shrink_too(before: Registry, after: Registry) -> bool:
    """Metadata versions before 3.6 (`triggerLeaderEpochBumpForIsrShrinkIfNeeded`, KAFKA-15021): an ISR that
    loses a member bumps the leader epoch as well."""
    return bump_on_leader_change_or_removal(before, after) or not before.isr <= after.isr


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
    """`PartitionChangeBuilder.maybeUpdateLastKnownLeader` as Kafka 4.1.1 on has it (apache/kafka#20629): a
    write that takes the leader away remembers who led, unless someone is remembered already; a write that
    names a leader forgets. `leader_written`: the record carries a leader (a new one, or the same one for
    an epoch bump). Also 4.1.0's: its rule (remember when the ISR empties) differs only when a write leaves
    ISR members none of which is acceptable, which the model never reaches (its ISR members are unfenced),
    so both write the same here (checked against 4.1.0's jars: tests/test_release_gaps.py)."""
    if not leader_written:
        return base.last_known_leader
    if leader == NO_LEADER:
        return base.leader if base.last_known_leader == NO_LEADER else base.last_known_leader
    return NO_LEADER


def no_last_known_leader(base: Registry, leader: int, leader_written: bool) -> int:
    """Without ELR nothing is remembered."""
    return NO_LEADER


def isr_members_eligible(registry: Registry, isr: frozenset[int], broker_epochs: Mapping[int, int]) -> bool:
    """KRaft's AlterPartition check (`ReplicationControlManager.ineligibleReplicasForIsr`, answered
    INELIGIBLE_REPLICA): every member of the proposed ISR, the leader and the members already in it included, must
    be neither in controlled shutdown (KIP-841, Kafka 3.3) nor fenced, and the broker epoch the leader saw in its
    fetches (KIP-903, Kafka 3.5) must be the registered one; a member sent without an epoch (-1) skips that test.
    Checked against 4.0.2, 4.1.2 and 4.4.0's controller (tests/test_kafka_kraft_controller.py)."""
    inactive = registry.fenced | registry.shutting_down
    for b in isr:
        if b in inactive:
            return False
        seen = broker_epochs.get(b, -1)
        if seen != -1 and seen != registry.broker_epochs[b - 1]:
            return False
    return True


def added_replicas_current_epoch_shutdown_unchecked(registry: Registry, isr: frozenset[int],
                                                    broker_epochs: Mapping[int, int]) -> bool:
    """A relaxation: KIP-903's checks without KIP-841's test of controlled shutdown, so a broker that is shutting
    down (removed from the ISR when it asked) may be added back while it still fetches (the gap KAFKA-13916 closed
    in KRaft and KAFKA-14140 in ZooKeeper mode, both Kafka 3.3)."""
    added = isr - registry.isr
    if added & registry.fenced:
        return False
    return all(broker_epochs.get(b) == registry.broker_epochs[b - 1] for b in added)


def added_replicas_unfenced(registry: Registry, isr: frozenset[int], broker_epochs: Mapping[int, int]) -> bool:
    """Before KIP-903 (KIP-841, Kafka 3.3 and 3.4): replicas joining the ISR must be registered, unfenced and not in
    controlled shutdown; broker epochs unchecked."""
    return not ((isr - registry.isr) & (registry.fenced | registry.shutting_down))


def accept_any_isr(registry: Registry, isr: frozenset[int], broker_epochs: Mapping[int, int]) -> bool:
    """ZooKeeper era: the leader wrote the ISR itself; nobody checked who joined."""
    return True


def leader_and_partition_epoch(registry: Registry, request: AlterPartition) -> str:
    """`ReplicationControlManager.validateAlterPartitionData`, its epoch checks in Kafka's order: epochs above the
    controller's mean the controller is behind (NOT_CONTROLLER); an older leader epoch is FENCED_LEADER_EPOCH; a
    request from a broker that is not the leader INVALID_REQUEST; an ISR computed from an older partition epoch
    INVALID_UPDATE_VERSION. "" = accepted, for the membership checks next (checked against 4.4.0's controller)."""
    if request.leader_epoch > registry.leader_epoch or request.partition_epoch > registry.partition_epoch:
        return "NOT_CONTROLLER"
    if request.leader_epoch < registry.leader_epoch:
        return "FENCED_LEADER_EPOCH"
    if request.frm != registry.leader:
        return "INVALID_REQUEST"
    if request.partition_epoch < registry.partition_epoch:
        return "INVALID_UPDATE_VERSION"
    return ""


def leader_epoch_only(registry: Registry, request: AlterPartition) -> str:
    """A relaxation: the controller checks the leader and its leader epoch, not the partition epoch, so an ISR
    computed from an older partition state of the same leader epoch is accepted."""
    if request.frm != registry.leader or request.leader_epoch != registry.leader_epoch:
        return "FENCED_LEADER_EPOCH"
    return ""


def roll_back_when_not_applied(error: str) -> bool:
    """`Partition.handleAlterPartitionError`: the leader drops its proposed ISR and returns to the last
    committed one only when the controller says it applied nothing (INELIGIBLE_REPLICA,
    OPERATION_NOT_ATTEMPTED); after any other error the proposal stays pending (so the high watermark
    still counts it) until new metadata arrives, since the request may have been applied."""
    return error in ("INELIGIBLE_REPLICA", "OPERATION_NOT_ATTEMPTED")


def roll_back_on_any_error(error: str) -> bool:
    """A proposed simplification: every error answer returns the leader to its last committed ISR."""
    return True


# ---- registration after a restart -------------------------------------------------------------

def register_fenced(clean_shutdown: bool) -> tuple[bool, bool]:
    """KRaft: a restarted broker registers with a new broker epoch and starts fenced
    (`ClusterControlManager.registerBroker`); whether its last shutdown was clean is reported (KIP-966 uses it).
    Returns (fence it, report unclean shutdown)."""
    return True, not clean_shutdown


def rejoin_unnoticed(clean_shutdown: bool) -> tuple[bool, bool]:
    """ZooKeeper era: a broker back before its session expired is never noticed by the controller."""
    return False, False


# ---- controller write fencing ------------------------------------------------------------------

def fenced_by_controller_epoch(registry: Registry, writer_epoch: int) -> bool:
    """KAFKA-6082's fix (and KRaft, where only the active `QuorumController` appends to the metadata log): a write
    from an older controller epoch is refused."""
    return writer_epoch >= registry.controller_epoch


def unfenced_controller_writes(registry: Registry, writer_epoch: int) -> bool:
    """Before KAFKA-6082's fix: a controller that lost its ZooKeeper session could still write."""
    return True


# ---- the broker lifecycle: who is active, unfencing, controlled shutdown (KRaft) ----------------


def active_unless_fenced_or_shutting_down(registry: Registry, broker: int) -> bool:
    """`ClusterControlManager.isActive` (KIP-841, Kafka 3.3): a broker is active, so the controller may elect it or
    admit it to an ISR, while it is unfenced and not in controlled shutdown. The controller's elections ask it
    (`PartitionChangeBuilder`'s `isAcceptableLeader` via `ReplicationControlManager.LeaderAcceptor`: ISR, ELR and
    last-known-leader candidates alike), and so does a leader choosing whom to propose for the ISR, from its own
    metadata image (`Partition.isReplicaIsrEligible`: not fenced, not shutting down, same broker epoch)."""
    return broker not in registry.fenced and broker not in registry.shutting_down


def active_unless_fenced(registry: Registry, broker: int) -> bool:
    """A relaxation (the test before KIP-841 added the in-controlled-shutdown state, KAFKA-13916): only fencing
    makes a broker inactive, so a broker in controlled shutdown may be elected again, from the ISR or the ELR, or
    proposed for the ISR until its shutdown completes."""
    return broker not in registry.fenced


def caught_up_to_registration(registry: Registry, image: Registry, broker: int) -> bool:
    """`BrokerHeartbeatManager.calculateNextBrokerState` for a FENCED broker whose heartbeat does not ask to stay
    fenced: it is unfenced once the metadata offset its heartbeat reports has reached the offset of its own
    RegisterBrokerRecord (`QuorumController.processBrokerHeartbeat` passes it in). Here: once the image the broker
    applied holds its current registration (its broker epoch). In ZooKeeper mode the image is the registry."""
    return image.broker_epochs[broker - 1] == registry.broker_epochs[broker - 1]


def unfence_at_once(registry: Registry, image: Registry, broker: int) -> bool:
    """The model's rule before it had a metadata log (and ZooKeeper mode's, where a broker is back once its session
    is): a live fenced broker may be unfenced at any time, whatever it has applied."""
    return True


def leaderless_and_seen(registry: Registry, broker: int, caught_up: bool) -> bool:
    """`BrokerHeartbeatManager.calculateNextBrokerState` for a broker in CONTROLLED_SHUTDOWN: the controller answers
    shouldShutDown once the broker leads no partition (`hasLeaderships`) and every active broker (unfenced, not
    shutting down) has reported a metadata offset at or past the batch that began the shutdown
    (`controlledShutdownOffset <= lowestActiveOffset`), so the new leaders know they lead before the old one stops.
    A broker that was fenced meanwhile is told to stop at once (SHUTDOWN_NOW). `caught_up`: every active broker's
    image holds that batch."""
    return broker in registry.fenced or (registry.leader != broker and caught_up)


def leaderless(registry: Registry, broker: int, caught_up: bool) -> bool:
    """ZooKeeper era (`KafkaController.doControlledShutdown`): the broker stops once the controller's answer lists
    no partition it still leads, without waiting for the other brokers to hear of their new leadership."""
    return broker in registry.fenced or registry.leader != broker


def shut_down_when_asked(registry: Registry, broker: int, caught_up: bool) -> bool:
    """A wrong rule (for tests of the invariants): the broker stops as soon as it asked, whatever it still leads."""
    return True


def current_registration_only(registered_epoch: int, request_epoch: int) -> bool:
    """The controller acts on a request to shut down only from the broker's current registration. KRaft:
    `ClusterControlManager.checkBrokerEpoch` on the heartbeat (an exact match, else STALE_BROKER_EPOCH); ZooKeeper
    mode from Kafka 2.2 (KIP-380): `KafkaController.doControlledShutdown` refuses an epoch older than the one it
    registered. (The epochs of requests the model sends are never newer, so the two tests agree here.)"""
    return request_epoch == registered_epoch


def any_incarnation(registered_epoch: int, request_epoch: int) -> bool:
    """Before KIP-380 (KAFKA-7235; Kafka 2.1 and older): ControlledShutdownRequest carries no broker epoch, so the
    request of a process that bounced meanwhile puts its successor in controlled shutdown: out of the ISR, never
    elected, its follower fetches stopped, until it bounces again."""
    return True


# ---- the releases: which rule each decision point has in each Kafka release kcheck models ---------

# The newest release kcheck models: `Protocol.current()` is its rules (kept equal to reference/releases.py's
# DEFAULT_VERSION, which `--protocol current` follows: tests/test_current_protocol.py).
DEFAULT_RELEASE = "4.4.0"
# The oldest: 3.9.x, the last release with ZooKeeper mode; its KRaft mode has every rule below.
OLDEST_RELEASE = (3, 9, 0)
# Where a release's rules differ, the first release with the newer rule (each checked against the releases' jars:
# tests/test_kafka_conformance.py and tests/test_release_gaps.py compare PartitionChangeBuilder with the model).
ELR_BY_DEFAULT = (4, 1, 0)  # KIP-966 on for a new cluster (eligible.leader.replicas.version 1 by default)
ACCEPTABLE_LAST_KNOWN_LEADER = (4, 1, 0)  # KAFKA-19522: a fenced last known leader is no longer elected
COMPLETION_UNLESS_SHRINKING = (4, 3, 0)  # KAFKA-19975: a reassignment completes once its adding replicas are in sync


def release_key(kafka_version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a release name; ValueError for one kcheck does not model."""
    try:
        parts = tuple(int(x) for x in kafka_version.split("."))
    except ValueError:
        parts = ()
    if len(parts) != 3:
        raise ValueError(f"'{kafka_version}' is not a Kafka release (expected MAJOR.MINOR.PATCH)")
    key = (parts[0], parts[1], parts[2])
    if key < OLDEST_RELEASE:
        raise ValueError(f"the replication model knows Kafka {'.'.join(map(str, OLDEST_RELEASE))} and later, "
                         f"not {kafka_version}")
    return key


def release_rules(kafka_version: str, elr: bool | None = None) -> dict[str, Any]:
    """The controller rules of a release that differ between the releases kcheck models, for a cluster with
    eligible leader replicas on or off (`elr`; None: as a new cluster of that release has them). With ELR off
    nothing is eligible, the ISR keeps its last member and no last known leader is kept."""
    key = release_key(kafka_version)
    elr_on = key >= ELR_BY_DEFAULT if elr is None else elr
    rules: dict[str, Any] = {
        "reassignment_completion": (complete_when_adding_unless_shrinking if key >= COMPLETION_UNLESS_SHRINKING
                                    else complete_when_targets_in_sync)}
    if elr_on:
        rules.update(leader_choice=(clean_or_eligible if key >= ACCEPTABLE_LAST_KNOWN_LEADER
                                    else clean_or_eligible_fenced_last_known),
                     isr_removal=eligible_leader_replicas, last_known_leader=remember_last_known_leader)
    else:
        rules.update(leader_choice=clean_only, isr_removal=keep_last_replica, last_known_leader=no_last_known_leader)
    return rules


def _rule(doc: str, *alternatives: Callable[..., Any], default: Any = None) -> Any:
    """A `Protocol` field holding a rule: `doc` says what it decides, `alternatives` are the other functions kcheck
    ships for it (`kcheck rules` prints both, with each function's docstring). Without `default` the field is
    required."""
    meta = {"doc": doc, "alternatives": alternatives}
    return field(metadata=meta) if default is None else field(default=default, metadata=meta)


@dataclass(frozen=True, kw_only=True)
class Protocol(RuleSet):
    """A replication protocol: every decision of the model (`model/replication/actions.py`) is one of these
    rules, a plain function from what the deciding party knows to its decision. Replace any with
    `dataclasses.replace`; `kcheck rules` lists them, with the state each may read."""

    name: str
    description: str
    # ---- the follower -------------------------------------------------------------------------------
    truncation: Callable[[Replica, Replica | None, Protocol], int | None] = _rule(
        "Where a follower truncates its log before it fetches from a new leader (and after a restart); None: "
        "it cannot tell yet and waits. Gets the believed leader's replica (None if there is none) and the "
        "protocol, whose fetch_validation and epoch_lookup it may call.", truncate_to_high_watermark)
    epoch_lookup: Callable[[tuple[tuple[int, int], ...], int, int], tuple[int | None, int]] = _rule(
        "The leader's answer to OffsetsForLeaderEpoch: from its epoch cache ((epoch, start offset) pairs, "
        "`lookup_cache`), its log end offset and the epoch asked for, (epoch or None, end offset).",
        first_offset_after_epoch)
    truncate_on: Callable[[Replica, int, int], bool] = _rule(
        "Whether a follower truncates again when it applies a new leader epoch (its replica before, the new "
        "leader, the new leader epoch).", truncate_on_leader_change)
    fetch_leader_epoch: Callable[[Replica], int] = _rule(
        "The leader epoch a follower's fetch carries (-1: none).", no_epoch_in_fetch,
        default=send_own_leader_epoch)
    accept_fetch_response: Callable[[Replica, FetchResponse], bool] = _rule(
        "Whether a follower applies a fetch response (records and high watermark); a response it refuses "
        "is dropped at once.", response_matches_offset, default=response_matches_fetch_state)
    partition_state_applies: Callable[[Replica, LeaderAndIsr | StopReplica], bool] = _rule(
        "Whether a broker applies a LeaderAndIsr or StopReplica (its replica, the message); one it refuses "
        "is dropped at once.", newer_leader_epoch_only, skip_known_partition_epoch,
        default=partition_epoch_not_older)
    control_request_incarnation: Callable[[Replica, LeaderAndIsr | StopReplica], bool] = _rule(
        "ZooKeeper mode: whether a live broker may apply a control request given the broker epoch it carries (its "
        "replica, with its own broker epoch, and the message), asked before partition_state_applies; a request it "
        "refuses is dropped at once.", accept_any_broker_epoch, default=refuse_stale_broker_epoch)
    # ---- the leader ---------------------------------------------------------------------------------
    fetch_validation: Callable[[Replica, int], str] = _rule(
        "The leader's check of the leader epoch a fetch (or an epoch lookup) carries: an error code, or \"\" "
        "to serve it.", no_leader_epoch)
    fetch_state_update: Callable[[Registry | None, int, int], bool] = _rule(
        "Whether the leader records a follower's fetch in its view of that follower (its KRaft image, None in "
        "ZooKeeper mode; the follower; the broker epoch the fetch carries), or refuses it as stale.",
        record_every_fetch, default=fence_stale_fetch_state)
    isr_join: Callable[[Replica, int, Registry], bool] = _rule(
        "Whether the leader may propose this follower for the ISR (the leader's replica, the follower's id, "
        "the controller's registry for fencing and broker epochs).", caught_up_to_high_watermark)
    high_watermark: Callable[[Replica, int], int] = _rule(
        "The leader's high watermark (given min.insync.replicas); the model bounds it by the log end and "
        "never moves it back.", over_maximal_isr, over_committed_isr)
    leader_keeps_follower_state: Callable[[Replica, int, int, frozenset[int]], bool] = _rule(
        "Whether a leader keeps its view of one follower (its fetch offset and broker epoch) when it applies a new "
        "leader epoch (its replica before, the new epoch, the follower, the new ISR); asked for each follower still "
        "assigned: a replica that left the replica set is always forgotten (`Partition.updateAssignmentAndIsr`).",
        forget_followers_every_epoch, default=keep_followers_when_reelected)
    isr_expansion: Callable[[bool], bool] = _rule(
        "Whether the leader considers proposing a follower for the ISR at this moment: right after it recorded that "
        "follower's fetch (True), or at a moment of the model's own (False: the `expand_isr` step).",
        expand_at_any_time, default=expand_after_fetch)
    produce_accepted: Callable[[Replica, str, int], bool] = _rule(
        "Whether the leader appends a producer's write (its replica, the acks, min.insync.replicas).",
        accept_every_write, default=refuse_acks_all_below_min_isr)
    ack_complete: Callable[[Replica, int], bool] = _rule(
        "Whether acks=all writes the high watermark has passed are acknowledged (else the producer gets an "
        "error), given min.insync.replicas.", ack_at_high_watermark, default=ack_with_min_isr)
    consumer_read_limit: Callable[[Replica], int] = _rule(
        "The offset below which a leader serves consumers (bounded by its log end).", read_to_log_end,
        default=read_below_high_watermark)
    alter_partition_rollback: Callable[[str], bool] = _rule(
        "Whether an error answer to AlterPartition returns the leader to its last committed ISR (else its "
        "proposal stays pending until new metadata arrives).", roll_back_on_any_error,
        default=roll_back_when_not_applied)
    # ---- what clients are told -----------------------------------------------------------------------
    list_offsets_latest: Callable[[Replica], int | None] = _rule(
        "What a leader answers a client's ListOffsets LATEST (read_uncommitted) with: an offset, or None for "
        "OFFSET_NOT_AVAILABLE (the client retries).", latest_is_high_watermark,
        default=offset_not_available_while_hw_lags)
    fetch_high_watermark: Callable[[Replica], int | None] = _rule(
        "The high watermark a leader's answer to a consumer's fetch carries (None: none, and the consumer keeps "
        "the one it had).", withhold_lagging_high_watermark, default=leader_high_watermark)
    # ---- the controller -----------------------------------------------------------------------------
    alter_partition_fencing: Callable[[Registry, AlterPartition], str] = _rule(
        "The controller's epoch checks of an AlterPartition: an error code, or \"\" to go on to "
        "alter_partition_validation.", leader_epoch_only, default=leader_and_partition_epoch)
    alter_partition_validation: Callable[[Registry, frozenset[int], Mapping[int, int]], bool] = _rule(
        "Whether the controller accepts the members an AlterPartition adds to the ISR (the registry, the "
        "proposed ISR, the broker epoch the leader saw in each member's fetches).",
        added_replicas_unfenced, added_replicas_current_epoch_shutdown_unchecked, accept_any_isr)
    leader_choice: Callable[[Registry, int], Choice | None] = _rule(
        "The controller's choice of a leader when the partition has none or its leader left: (leader, ISR, "
        "ELR) to write, or None (no candidate). The second argument is the broker count.",
        clean_only, unclean_allowed, clean_or_eligible_fenced_last_known)
    valid_leader: Callable[[Registry, int], bool] = _rule(
        "Whether a broker is a valid leader for the partition state being written: asked for the current "
        "leader when a reassignment's record or completion is written, and for the target of a preferred or "
        "operator's election.", in_isr_and_unfenced, default=in_isr_or_elr_unfenced)
    isr_removal: Callable[[Registry, frozenset[int], int, frozenset[int]],
                          tuple[frozenset[int], frozenset[int]]] = _rule(
        "The ISR and ELR after brokers leave the ISR (the registry, the brokers leaving, min.insync.replicas, "
        "the ones whose last shutdown was unclean).", keep_last_replica)
    leader_epoch_bump: Callable[[Registry, Registry], bool] = _rule(
        "Whether a controller write bumps the leader epoch (the partition as the writer saw it, and with the "
        "leader, ISR and replicas it writes); the partition epoch goes up on every write.",
        bump_on_isr_shrink_too, default=bump_on_leader_change_or_removal)
    controller_write: Callable[[Registry, int], bool] = _rule(
        "Whether a controller of this epoch may write the partition state.", unfenced_controller_writes)
    last_known_leader: Callable[[Registry, int, bool], int] = _rule(
        "The last known leader a write leaves (the registry before, the leader written, whether the record "
        "carries a leader).", no_last_known_leader, default=remember_last_known_leader)
    # ---- reassignment (model/replication/reassignment.py) ---------------------------------------------
    reassignment_completion: Completion = _rule(
        "When a reassignment completes: asked on every controller write while one is in flight, as KRaft's "
        "PartitionChangeBuilder does (replicas, adding, removing, the ISR about to be written) -> the "
        "replicas and ISR once complete, else None.",
        complete_when_adding_in_sync, complete_when_adding_unless_shrinking, default=complete_when_targets_in_sync)
    reassignment_revert: Revert = _rule(
        "What cancelling a reassignment writes: (replicas, ISR), or None to refuse the cancel.", revert_unclean,
        default=revert_clean)
    reassignment_elr: ElrFilter = _rule(
        "The ELR a completion or a cancel writes, given the ELR computed and the replica set it writes.",
        elr_within_replicas, default=elr_as_computed)
    # ---- broker lifecycle ---------------------------------------------------------------------------
    registration: Callable[[bool], tuple[bool, bool]] = _rule(
        "What the controller does when a broker registers again after a restart, given whether its last "
        "shutdown was clean: (fence it, report an unclean shutdown).", rejoin_unnoticed)
    crash_drops: Callable[[int, Message], bool] = _rule(
        "Whether a message in flight is lost when this broker crashes.", connections_die,
        default=sent_requests_survive)
    restart_reads_metadata: Callable[[Replica, Registry], bool] = _rule(
        "Whether a restarted broker applies the controller's current partition state before it acts (else "
        "the controller sends it a LeaderAndIsr or StopReplica, applied whenever it arrives).",
        await_leader_and_isr, default=catch_up_before_acting)
    broker_active: Callable[[Registry, int], bool] = _rule(
        "Whether a broker is active: one the controller may elect or admit to the ISR, and a leader may propose "
        "(the registry, or the leader's metadata image; the broker). The leader_choice, valid_leader and isr_join "
        "rules see every broker it rejects as fenced.", active_unless_fenced,
        default=active_unless_fenced_or_shutting_down)
    unfence_when: Callable[[Registry, Registry, int], bool] = _rule(
        "Whether a live fenced broker's heartbeat gets it unfenced (the controller's registry, the broker's metadata "
        "image, the broker).", unfence_at_once, default=caught_up_to_registration)
    shutdown_granted: Callable[[Registry, int, bool], bool] = _rule(
        "Whether the controller lets a broker in controlled shutdown stop (the registry, the broker, whether every "
        "active broker's metadata image holds the batch that began its shutdown).", leaderless, shut_down_when_asked,
        default=leaderless_and_seen)
    shutdown_request_accepted: Callable[[int, int], bool] = _rule(
        "Whether the controller acts on a broker's request to shut down (the broker epoch it has registered, the "
        "epoch the request carries).", any_incarnation, default=current_registration_only)

    @property
    def send_leader_epoch(self) -> bool:
        """Whether fetches carry a leader epoch: False only with `no_epoch_in_fetch` (for callers written before
        the fetch_leader_epoch rule)."""
        return getattr(self.fetch_leader_epoch, "__wrapped__", self.fetch_leader_epoch) is not no_epoch_in_fetch

    @classmethod
    def current(cls, kafka_version: str | None = None, *, elr: bool | None = None) -> Protocol:
        """A Kafka release's rules (default `DEFAULT_RELEASE`, the newest kcheck models; `--protocol current
        --kafka-version VERSION` is this), with eligible leader replicas as a new cluster of it has them unless
        `elr` says otherwise (`release_rules`). Every other rule is Kafka's code, the same in every release
        from 3.9.0; where the model abstracts, the rule's docstring says so. ValueError for a release the model
        does not know."""
        version = DEFAULT_RELEASE if kafka_version is None else kafka_version
        rules = release_rules(version, elr)
        elr_on = rules["isr_removal"] is eligible_leader_replicas
        completion = "adding-unless-shrinking" if rules["reassignment_completion"] is \
            complete_when_adding_unless_shrinking else "all-targets"
        return cls(
            name="current",
            description=(f"Kafka {version} (KRaft, {'ELR on' if elr_on else 'ELR off'}, reassignment completion "
                         f"{completion}): KIP-101/279/320/497/903/966 and epoch-fenced controller writes"),
            truncation=truncate_by_epoch_lookup,
            epoch_lookup=end_offset_for_epoch,
            truncate_on=truncate_on_every_epoch_change,
            fetch_leader_epoch=send_own_leader_epoch,
            accept_fetch_response=response_matches_fetch_state,
            partition_state_applies=partition_epoch_not_older,
            fetch_validation=validate_leader_epoch,
            isr_join=caught_up_in_leader_epoch,
            high_watermark=over_maximal_isr_strict,
            leader_keeps_follower_state=keep_followers_when_reelected,
            isr_expansion=expand_after_fetch,
            produce_accepted=refuse_acks_all_below_min_isr,
            ack_complete=ack_with_min_isr,
            consumer_read_limit=read_below_high_watermark,
            alter_partition_rollback=roll_back_when_not_applied,
            alter_partition_fencing=leader_and_partition_epoch,
            alter_partition_validation=isr_members_eligible,
            valid_leader=in_isr_or_elr_unfenced,
            leader_epoch_bump=bump_on_leader_change_or_removal,
            controller_write=fenced_by_controller_epoch,
            reassignment_revert=revert_clean,
            reassignment_elr=elr_as_computed,
            registration=register_fenced,
            crash_drops=sent_requests_survive,
            restart_reads_metadata=catch_up_before_acting,
            **rules,
        )


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
# The rows of the ZooKeeper era run in its mode: decisions reach brokers as requests, in any order.
_ZK = {"metadata": "zookeeper"}

VARIANTS: dict[str, Variant] = {v.name: v for v in (
    _variant("truncate-to-hw", 1,
             "KIP-101 scenario 1 (KAFKA-1211): a restarted follower truncates to its own high watermark and "
             "is elected before it refetches",
             ("replication.electable-has-committed", "replication.leader-has-acked"), 10,
             {**_ZK, "brokers": 2, "min_isr": 1, "crashes": 2, "lossy_crashes": 0, "fences": 0, "elections": 0,
              "isr_shrinks": 0, "failovers": 0, "records": 1},
             truncation=truncate_to_high_watermark, **_ZK_RESTART),
    _variant("truncate-to-hw-lossy", 2,
             "KIP-101 scenario 2: high-watermark truncation after two hard failures, one losing its page cache",
             ("replication.log-matching",), 20,
             {**_ZK, "brokers": 2, "min_isr": 1, "crashes": 1, "lossy_crashes": 1, "fences": 0, "elections": 0,
              "isr_shrinks": 0, "failovers": 0, "records": 3},
             truncation=truncate_to_high_watermark, **_ZK_RESTART),
    _variant("one-shot-epoch-lookup", 3,
             "KIP-279 (KAFKA-6361): the leader answers an epoch lookup without the epoch, the follower "
             "truncates once, and two quick leader moves leave a divergent offset below the high watermark",
             ("replication.log-matching", "replication.electable-has-committed"), 19,
             {**_ZK, "brokers": 2, "min_isr": 1, "crashes": 0, "lossy_crashes": 0, "fences": 0, "elections": 2,
              "isr_shrinks": 0, "failovers": 0, "records": 4},
             epoch_lookup=first_offset_after_epoch),
    _variant("no-epoch-in-fetch", 4,
             "KIP-320 (KAFKA-6880): fetches carry no leader epoch, so a zombie follower that missed two "
             "epochs fetches from the right broker at the wrong offset and rejoins the ISR",
             ("replication.log-matching", "replication.electable-has-committed"), 27,
             {**_ZK, "brokers": 3, "min_isr": 1, "crashes": 0, "lossy_crashes": 0, "fences": 0, "elections": 2,
              "isr_shrinks": 1, "failovers": 0, "records": 3, "duplicates": False},
             fetch_validation=no_leader_epoch, fetch_leader_epoch=no_epoch_in_fetch),
    _variant("hw-over-committed-isr", 6,
             "KIP-497's rejected design: while an ISR expansion is in flight the leader counts only the "
             "committed ISR, acknowledges a write, and the controller then adds a follower that lacks it",
             ("replication.electable-has-committed",), 5,
             {**_ZK, "brokers": 2, "min_isr": 1, "initial_isr": 1, "crashes": 0, "lossy_crashes": 0, "fences": 0,
              "elections": 0, "isr_shrinks": 0, "failovers": 0, "records": 1},
             high_watermark=over_committed_isr),
    _variant("unclean-election", 8,
             "Jepsen 2013: an ISR of one acknowledges acks=all writes and a replica outside the ISR is "
             "elected when the leader dies (unclean.leader.election.enable=true, no min.insync.replicas)",
             ("replication.leader-has-acked", "replication.no-acked-lost"), 7,
             {**_ZK, "brokers": 2, "min_isr": 1, "crashes": 1, "lossy_crashes": 0, "fences": 0, "elections": 0,
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
             {**_ZK, "brokers": 2, "min_isr": 1, "crashes": 0, "lossy_crashes": 0, "fences": 0, "elections": 2,
              "isr_shrinks": 0, "failovers": 1, "records": 0},
             controller_write=unfenced_controller_writes),
    _variant("stale-control-request", 15,
             "KAFKA-7235 (fixed by KIP-380 in Kafka 2.2.0): control requests carry no broker epoch, so a broker back "
             "from a power loss applies a LeaderAndIsr the controller queued for its previous incarnation and leads "
             "an epoch the controller already took from it, without the records it lost",
             ("replication.log-matching",), 14,
             {**_ZK, "brokers": 2, "min_isr": 1, "crashes": 0, "lossy_crashes": 1, "fences": 0, "elections": 0,
              "isr_shrinks": 1, "failovers": 0, "records": 2, "reads": 0, "duplicates": False,
              "max_leader_epoch": 2},
             control_request_incarnation=accept_any_broker_epoch, restart_reads_metadata=await_leader_and_isr),
    _variant("stale-controlled-shutdown", 16,
             "KAFKA-7235 (fixed by KIP-380 in Kafka 2.2.0): ControlledShutdownRequest carries no broker epoch, so the "
             "request of a broker that bounced while it was in flight puts the new process in controlled shutdown: "
             "out of the ISR and never elected, though it never asked",
             ("replication.shutdown-asked",), 4,
             {**_ZK, "brokers": 2, "min_isr": 1, "crashes": 1, "lossy_crashes": 0, "fences": 0, "elections": 0,
              "isr_shrinks": 0, "failovers": 0, "records": 0, "reads": 0, "shutdowns": 1},
             shutdown_request_accepted=any_incarnation, **_ZK_RESTART),
    _variant("lagging-hw-list-offsets", 14,
             "KAFKA-2334 (fixed by KIP-207 in Kafka 2.2.0): a new leader answers ListOffsets LATEST with its high "
             "watermark, which lags behind the start of its epoch until its followers fetch again, so the latest "
             "offset a client sees goes back",
             ("client.list-offsets-monotonic",), 11,
             {"brokers": 2, "min_isr": 1, "crashes": 0, "lossy_crashes": 0, "fences": 0, "elections": 1,
              "isr_shrinks": 0, "failovers": 0, "records": 1, "reads": 0, "list_offsets": 2, "metadata": "kraft"},
             list_offsets_latest=latest_is_high_watermark),
)}

# Liveness rows: found by `kcheck.model.liveness` (the properties and the fault model that shows each are in
# invariants/replication_liveness.py), never by a safety invariant, so they are kept apart from VARIANTS (whose
# users replay each row's script and expect an invariant to break).
LIVENESS_VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("blocked-reassignment-completion", 0,
            "KAFKA-19975 (apache/kafka#21114, fixed in 4.3.0): completion waits for every target replica to be in "
            "the ISR, so a replica that stays in the target but is down (neither added nor removed) blocks a "
            "reassignment that would not shrink the ISR for ever; the rule of Kafka 3.8 (KAFKA-15665) to 4.2, and "
            "of Protocol.current()",
            replace(Protocol.current("4.4.0"), name="blocked-reassignment-completion",
                    description="KAFKA-19975: reassignment completion waits for target replicas that are down",
                    reassignment_completion=complete_when_targets_in_sync),
            {"brokers": 3, "replication_factor": 2, "min_isr": 1, "records": 0, "reassignments": 1, "crashes": 1,
             "lossy_crashes": 0, "fences": 0, "elections": 0, "isr_shrinks": 0, "failovers": 0, "reads": 0,
             "atomic_fetch": True, "max_leader_epoch": 8},
            ("liveness.reassignment-ends",), 13),
)}

