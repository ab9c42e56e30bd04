"""The replication model's actions: pure functions State -> State | None (None: the guard is false).

Every action is one step a Kafka engineer would recognise: a produce, one half of a fetch, a
high-watermark advance, an AlterPartition round trip, a controller decision, a crash, a restart.
`successors` lists every enabled action of a state with the state it leads to; the Hypothesis and
exhaustive explorers, `replay` and the CLI all step through this one function table (`KINDS`).

Faults spend a budget (`Config`); healing actions (fetching, unfencing a live broker, restarting,
flushing, electing a leader for a leaderless partition) do not, so a run cannot end in an outage
the model forbids to repair.

Every protocol decision goes through a rule of the `Protocol` (`kcheck rules` lists them). What stays
fixed here is what is not a protocol's choice: the faults and their budgets (who may crash, lose its
unflushed suffix, be fenced, be dropped from the ISR: the environment); the network (any order, loss,
duplicates; AlterPartition's one request in flight per connection, which TCP gives, and per partition, which
AlterPartitionManager gives: `Replica.in_flight`); what a fetch is (the
leader records the fetch offset and broker epoch the request carries, answers with its log from that
offset and its high watermark, and refuses an offset past its log end or a fetcher that is not a
replica); the log itself (appends, truncation, the epoch cache derived from the log, the epoch's start
offset being the log end when it starts, a follower's high watermark bounded by its log end); the
controller's bookkeeping (the partition epoch goes up on every write, an ISR must be a subset of the
replicas, a fenced broker leaves the ISR); the reassignment plan (`reassignment.request_targets`,
checked against Kafka's); and the history variables the invariants read.

Simplifications, each chosen because the invariants cannot tell the difference:
- OffsetsForLeaderEpoch is one atomic step against the believed leader's current log (modern
  Kafka folds it into the fetch response as a diverging epoch; the answer is the same).
- In ZooKeeper mode the leader reads fencing and broker epochs from the controller's registry, not from
  its own metadata cache (in KRaft mode it reads its own image, `image`).
- A LeaderAndIsr (or StopReplica) that can no longer be applied (older epochs than its recipient has, or sent to
  an earlier incarnation of it) and a fetch response its follower would ignore are removed from the pool; that is
  a drop, always allowed. One to a dead broker waits (ZooKeeper: the controller's queue for it, cleared by `fence`).
- AlterPartition is an RPC over one connection with one request in flight per broker: a copy of the
  request (a retry) is processed only while its answer has not arrived, and the answer to an earlier
  copy is lost when a later copy is processed. Without this, a duplicated request answered out of order
  let the controller accept an ISR the leader had already rolled back, a race TCP does not allow.

KRaft mode (`Config.metadata`, the default): the controller does not send LeaderAndIsr or StopReplica; every
step that changed the controller's registry ends by appending it to the metadata log as one batch (`publish`, from
`settle`), and each broker applies the batches in order (`apply_metadata`), at its own pace, through the same
epoch checks (`partition_state_applies`). A broker's beliefs are therefore always those of a prefix of the log,
plus the ISR a leader learns from its AlterPartition answer first.

Partition reassignment is KRaft's (`reassign`, `cancel_reassignment`): the operator's request is one
controller write, and completion is not a step of its own: every controller write runs the
protocol's completion rule first, as `PartitionChangeBuilder.build()` does, so the AlterPartition
that brings the last target replica into the ISR also completes the move (and the leader learns
NEW_LEADER_ELECTED if that moved leadership). Brokers taken out of the replica set get a
StopReplica and delete their log; brokers added start as followers with an empty log and join the
ISR through the usual fetches and AlterPartition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from functools import cache, cached_property
from itertools import permutations
from typing import Any, NamedTuple

from kcheck.model.replication.protocol import Protocol, active_unless_fenced_or_shutting_down, unclean_allowed
from kcheck.model.replication.reassignment import request_targets
from kcheck.model.replication.state import (
    ACKS,
    NO_LEADER,
    AlterPartition,
    AlterPartitionResponse,
    ControlledShutdown,
    FetchRequest,
    FetchResponse,
    History,
    LeaderAndIsr,
    Message,
    MetadataRecord,
    Record,
    Registry,
    Replica,
    State,
    StopReplica,
    ZombieController,
    evolve,
    message_as_dict,
    message_from_dict,
    new_value,
    request_key,
)

METADATA_MODES = ("kraft", "zookeeper")


@dataclass(frozen=True)
class Config:
    """Cluster settings and bounds. Budgets bound faults only; healing is unbounded."""

    brokers: int = 3
    replication_factor: int = 0  # replicas at the start, on brokers 1..RF; 0: every broker
    min_isr: int = 2  # min.insync.replicas
    initial_isr: int = 0  # 0: every replica starts in the ISR
    acks: tuple[str, ...] = ("all",)
    records: int = 3  # records produced in all
    max_leader_epoch: int = 4
    crashes: int = 1  # crashes without data loss (process crash; the page cache survives)
    lossy_crashes: int = 1  # unclean shutdowns that lose the unflushed suffix (power loss)
    fences: int = 1  # live brokers fenced (missed heartbeats, an expired ZooKeeper session)
    elections: int = 2  # leader moves nobody asked for (preferred election, zombie controller)
    isr_shrinks: int = 1  # followers a leader drops as too slow
    failovers: int = 1  # controller failovers
    reads: int = 2  # consumer reads
    # ListOffsets requests clients send; above 0 it also turns on the clients' view: what ListOffsets callers and
    # consumers' fetch responses were told is kept as history (0: no client view, every existing bound unchanged).
    list_offsets: int = 0
    reassignments: int = 0  # AlterPartitionReassignments requests (an operator's; each is a new target)
    cancels: int = 0  # requests cancelling the reassignment in flight
    shutdowns: int = 0  # controlled shutdowns an operator starts (the broker asks, the controller moves it away)
    unclean_elections: int = 0  # an operator's unclean elections of a leaderless partition (KIP-460)
    duplicates: bool = True  # messages may be delivered twice
    # One fetch is one step (request, the leader's answer, the follower applying it, nothing in between), as
    # in the TLA+ models: fewer interleavings, so searches reach deeper; every run is still a run of the split
    # model, three steps per fetch.
    atomic_fetch: bool = False
    # How brokers learn the controller's decisions. "kraft" (Kafka 4.x, the only mode it ships): the controller
    # appends batches to a metadata log that every broker applies in order at its own pace, acting on its own
    # possibly stale image. "zookeeper": the controller sends LeaderAndIsr and StopReplica requests, which the
    # network may delay, reorder, duplicate or drop, and a leader reads fencing and broker epochs straight from
    # the controller (the historical rows need this).
    metadata: str = "kraft"

    def __post_init__(self) -> None:
        if not 1 <= self.brokers <= 6:
            raise ValueError(f"brokers must be between 1 and 6, not {self.brokers}")
        if not 0 <= self.replication_factor <= self.brokers:
            raise ValueError(f"replication_factor must be between 0 (every broker) and the broker count "
                             f"{self.brokers}, not {self.replication_factor}")
        if not 1 <= self.min_isr <= self.brokers:
            raise ValueError(f"min_isr must be between 1 and the broker count {self.brokers}, not {self.min_isr}")
        if not 0 <= self.initial_isr <= self.rf:
            raise ValueError(f"initial_isr must be between 0 and the replication factor {self.rf}, "
                             f"not {self.initial_isr}")
        bad = [a for a in self.acks if a not in ACKS]
        if bad or not self.acks:
            raise ValueError(f"acks must be a non-empty subset of {', '.join(ACKS)}, not {', '.join(self.acks)}")
        for f in ("records", "max_leader_epoch", "crashes", "lossy_crashes", "fences", "elections",
                  "isr_shrinks", "failovers", "reads", "reassignments", "cancels", "list_offsets",
                  "shutdowns", "unclean_elections"):
            if getattr(self, f) < 0:
                raise ValueError(f"{f} must not be negative")
        if self.max_leader_epoch < 1:
            raise ValueError("max_leader_epoch must be at least 1")
        if self.metadata not in METADATA_MODES:
            raise ValueError(f"metadata must be one of {', '.join(METADATA_MODES)}, not {self.metadata!r}")

    @property
    def kraft(self) -> bool:
        """Brokers learn decisions from the metadata log (else from ZooKeeper-era control requests)."""
        return self.metadata == "kraft"

    @property
    def client_view(self) -> bool:
        """What clients were told is recorded (the client.* invariants need it): on with a ListOffsets budget."""
        return self.list_offsets > 0

    @property
    def split_fetch(self) -> bool:
        return not self.atomic_fetch

    @cached_property  # asked after every step: computed once per Config (fields only: equality and hashing ignore it)
    def bystanders(self) -> tuple[int, ...]:
        """KRaft: the brokers whose metadata position nothing can observe, so they apply every batch as it is
        published (`_kraft`). A broker past the replication factor holds no replica and, with no reassignment
        budget, never gets one; with no controlled-shutdown budget nobody waits for it to apply a batch
        (`complete_shutdown`). What its image says then reaches no leader, no election and no invariant: keeping
        its lag would only multiply the states (85x at 3 brokers with one replica-less broker)."""
        if not self.kraft or self.reassignments or self.shutdowns:
            return ()
        return tuple(range(self.rf + 1, self.brokers + 1))

    @property
    def rf(self) -> int:
        """The replication factor at the start."""
        return self.replication_factor or self.brokers

    def as_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["acks"] = list(self.acks)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Config:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown setting {unknown[0]!r}")
        d = dict(d)
        if "acks" in d:
            d["acks"] = tuple(str(a) for a in d["acks"])
        return cls(**d)


def initial_state(cfg: Config) -> State:
    """Leader epoch 1, replicas on brokers 1..RF with broker 1 leading, the first `initial_isr` replicas in
    sync, every belief applied; brokers past RF hold no replica."""
    n, rf = cfg.brokers, cfg.rf
    replicas = tuple(range(1, rf + 1))
    isr = frozenset(range(1, (cfg.initial_isr or rf) + 1))
    registry = Registry(controller_epoch=1, leader=1, leader_epoch=1, partition_epoch=1, isr=isr,
                        written_by=1, broker_epochs=(1,) * n, replicas=replicas)
    reps = tuple(
        Replica(id=b, leader=1, leader_epoch=1, partition_epoch=1, isr=isr, controller_epoch=1, replicas=replicas)
        if b <= rf else Replica(id=b, leader_epoch=1, partition_epoch=1, controller_epoch=1)
        for b in range(1, n + 1)
    )
    # KRaft: every broker starts having applied the batch that created the partition and registered the brokers.
    metadata = (MetadataRecord(_INITIAL_KIND, registry),) if cfg.kraft else ()
    return State(replicas=reps, registry=registry,
                 history=History(epoch_leaders=frozenset({(1, 1)}), max_leader_epoch=1, max_written_by=1,
                                 max_broker_epochs=(1,) * n), metadata=metadata)


_INITIAL_KIND = "RegisterBrokerRecord+PartitionRecord"


def image(s: State, broker: int) -> Registry:
    """What `broker` believes of the cluster (fencing, broker epochs, the partition): in KRaft mode the image of the
    last metadata batch it applied; in ZooKeeper mode the controller's registry (the model's simplification there)."""
    if not s.metadata:
        return s.registry
    return s.metadata[s.replica(broker).applied].image


# The registry fields a metadata record carries (everything but the controller epoch: a KRaft controller failover
# is a new Raft leader over the same log, not a record), grouped by the record types that carry them.
_PARTITION_FIELDS = ("leader", "leader_epoch", "partition_epoch", "isr", "elr", "written_by", "replicas", "adding",
                     "removing", "last_known_leader")


def _record_kind(before: Registry, after: Registry) -> str:
    """The KRaft record types one controller operation wrote, from what it changed ("" when nothing)."""
    kinds = []
    if after.broker_epochs != before.broker_epochs:
        kinds.append("RegisterBrokerRecord")
    elif after.fenced != before.fenced or after.shutting_down != before.shutting_down:
        kinds.append("BrokerRegistrationChangeRecord")
    if any(getattr(after, f) != getattr(before, f) for f in _PARTITION_FIELDS):
        kinds.append("PartitionChangeRecord")
    return "+".join(kinds)


def publish(s: State) -> State:
    """KRaft: append the registry as one metadata batch if the step changed it since the last batch (a no-op in
    ZooKeeper mode). `settle` calls it after every step; an action calls it itself only when a broker must stand
    on the new batch within the same step (a restarted broker catching up to its own registration)."""
    if not s.metadata:
        return s
    last = s.metadata[-1].image
    reg = s.registry
    if reg is last:
        return s
    kind = _record_kind(last, reg)
    if not kind:
        return s
    return evolve(s, metadata=s.metadata + (MetadataRecord(kind, reg),))


def _trim_metadata(s: State) -> State:
    """Drop the batches every live broker has applied (the canonical form: equal clusters are equal states)."""
    meta = s.metadata
    live = [r.applied for r in s.replicas if r.alive]
    low = min(live) if live else len(meta) - 1
    if low <= 0:
        return s
    reps = tuple(evolve(r, applied=r.applied - low) if r.alive else r for r in s.replicas)
    return evolve(s, metadata=meta[low:], replicas=reps)


def _spend(s: State, cfg: Config, budget: str) -> State | None:
    used = getattr(s.used, budget)
    if used >= getattr(cfg, budget):
        return None
    return evolve(s, used=evolve(s.used, **{budget: used + 1}))


def _send(s: State, *msgs: Message) -> State:
    return evolve(s, pool=s.pool | frozenset(msgs))


def _consume(s: State, m: Message, keep: bool) -> State:
    return s if keep else evolve(s, pool=s.pool - {m})


# ---- controller writes ----------------------------------------------------------------------

def effective_min_isr(cfg: Config, reg: Registry) -> int:
    """`ReplicationControlManager.getTopicEffectiveMinIsr`, what every `PartitionChangeBuilder` compares the ISR
    with for KIP-966: min.insync.replicas capped at the replica count stored before the change (Kafka reads the
    topic's partition 0; the model has one partition). After a move that lowers the replica count below
    min.insync.replicas, the next change of the partition clears its ELR (seen on 4.4.0 brokers:
    tests/test_elr_reassignment_cluster.py)."""
    return min(cfg.min_isr, len(reg.replicas))


def leader_min_isr(cfg: Config, leader: Replica) -> int:
    """The min.insync.replicas a leader enforces for acks=all writes and its high watermark: `Partition
    .effectiveMinIsr` (KIP-966's, 3.7 on), capped at the replica count the leader was last told. Below that count
    only after a reassignment shrinks the replica set (seen on Kafka's Partition: tests/test_kafka_partition.py)."""
    return min(cfg.min_isr, len(leader.replicas)) if leader.replicas else cfg.min_isr


def write_partition(s: State, p: Protocol, cfg: Config, writer_epoch: int, base: Registry,
                    leader: int, isr: frozenset[int], elr: frozenset[int], *,
                    replicas: tuple[int, ...] | None = None, adding: tuple[int, ...] | None = None,
                    removing: tuple[int, ...] | None = None, unclean: frozenset[int] = frozenset(),
                    target_isr: frozenset[int] | None = None) -> State | None:
    """The controller (or a zombie, from its stale `base`) stores a new leader/ISR and tells the brokers.

    Mirrors `PartitionChangeBuilder.build()`: first the reassignment completes if the protocol's rule
    says the new ISR allows it (the replicas being removed leave the replica set and the ISR, and the
    leader is re-elected if it is no longer a valid one); the leader epoch goes up when the leader
    changes or the replica set loses a member, the partition epoch on every change. The assignment
    (replicas, adding, removing) defaults to what the registry holds: a zombie only rewrites
    leader and ISR. `target_isr` is the ISR before the caller's election (which may have swapped an
    empty ISR for an ELR member): Kafka decides completion on it, before electing. Members of the
    replica set hear a LeaderAndIsr, brokers that left it a StopReplica. Returns None if the write
    is refused or the epoch bound is hit.
    """
    reg = s.registry
    if not p.controller_write(reg, writer_epoch):
        return None
    min_isr = effective_min_isr(cfg, reg)
    replicas = reg.replicas if replicas is None else replicas
    adding = reg.adding if adding is None else adding
    removing = reg.removing if removing is None else removing
    completed = None
    if adding or removing:
        target_isr = isr if target_isr is None else target_isr
        done = p.reassignment_completion(replicas, adding, removing, target_isr)
        if done is not None:
            completed = (tuple(b for b in replicas if b not in removing), tuple(sorted(target_isr)))
            replicas, final = done
            adding = removing = ()
            # KIP-966 over the whole change (`maybePopulateTargetElr`): the registry's ISR members that
            # are not in the final ISR join the ELR when it is below min.insync.replicas.
            left = base.isr - final
            _, elr = p.isr_removal(evolve(base, isr=final | left), left, min_isr, unclean)
            isr, elr = final, p.reassignment_elr(elr - final, replicas)
            completed_reg = evolve(reg, replicas=replicas, isr=isr, elr=elr)
            completed_reg = active_view(completed_reg, p)
            if not p.valid_leader(completed_reg, leader):  # ONLINE election over the new replica set
                choice = p.leader_choice(completed_reg, cfg.brokers)
                leader, isr, elr = (NO_LEADER, isr, elr) if choice is None else choice
            target_isr = final
    # `maybePopulateTargetElr` runs in every change, before the election: an ISR at the effective min ISR clears ELR.
    if len(isr if target_isr is None else target_isr) >= min_isr:
        elr = frozenset()
    before = base if base.replicas == reg.replicas else evolve(base, replicas=reg.replicas)  # the stored assignment
    after = evolve(before, leader=leader, isr=isr, elr=elr, replicas=replicas, adding=adding, removing=removing)
    leader_epoch = base.leader_epoch + (1 if p.leader_epoch_bump(before, after) else 0)
    if leader_epoch > cfg.max_leader_epoch:
        return None
    last_known = p.last_known_leader(base, leader, leader_epoch != base.leader_epoch)
    new = evolve(reg, leader=leader, leader_epoch=leader_epoch, partition_epoch=base.partition_epoch + 1,
                  isr=isr, elr=elr, written_by=writer_epoch, replicas=replicas, adding=adding, removing=removing,
                  last_known_leader=last_known)
    s = evolve(s, registry=new)
    if completed is not None:
        h = s.history
        s = evolve(s, history=evolve(h, completions=h.completions | {(*completed, replicas, adding, removing)}))
    if cfg.kraft:  # brokers learn it from the metadata log (`settle` publishes the batch)
        return s
    # ZooKeeper: each request carries the recipient's broker epoch as the writer registered it (KIP-380)
    epochs = base.broker_epochs or reg.broker_epochs
    msgs: list[Message] = [
        LeaderAndIsr(b, writer_epoch, leader, leader_epoch, new.partition_epoch, tuple(sorted(isr)), replicas,
                     epochs[b - 1])
        for b in replicas if s.replica(b).alive]
    msgs += [StopReplica(b, writer_epoch, leader_epoch, new.partition_epoch, epochs[b - 1])
             for b in reg.replicas if b not in replicas and s.replica(b).alive]
    return _send(s, *msgs)


def _remove_from_isr(s: State, p: Protocol, cfg: Config, gone: frozenset[int], unclean: frozenset[int]
                     ) -> State | None:
    """The controller takes fenced brokers out of the ISR (and ELR) and re-elects if the leader left."""
    reg = s.registry
    isr, elr = p.isr_removal(reg, gone, effective_min_isr(cfg, reg), unclean)
    elr = elr - unclean
    target_isr, leader = isr, reg.leader
    if leader in gone or leader == NO_LEADER:
        choice = p.leader_choice(active_view(evolve(reg, isr=isr, elr=elr), p), cfg.brokers)
        leader, isr, elr = (NO_LEADER, isr, elr) if choice is None else choice
    if (leader, isr, elr) == (reg.leader, reg.isr, reg.elr):
        return s
    return write_partition(s, p, cfg, reg.controller_epoch, reg, leader, isr, elr, unclean=unclean,
                           target_isr=target_isr)


# ---- actions --------------------------------------------------------------------------------
# Each takes (state, protocol, config, *args) and returns the next state or None.

def produce(s: State, p: Protocol, cfg: Config, broker: int, acks: str) -> State | None:
    """A producer appends to a broker that believes it leads (a zombie leader accepts writes too)."""
    r = s.replica(broker)
    if not r.is_leader or acks not in cfg.acks:
        return None
    if not p.produce_accepted(r, acks, leader_min_isr(cfg, r)):
        return None  # e.g. NotEnoughReplicas: the write is refused, nothing is appended
    if s.used.records >= cfg.records:  # `_spend(s, cfg, "records")`, its budget spent in the one new state below
        return None
    used = evolve(s.used, records=s.used.records + 1)
    rec = Record(used.records, r.leader_epoch)
    offset = r.leo
    reps = list(s.replicas)
    reps[r.id - 1] = evolve(r, log=r.log + (rec,))
    h = s.history
    if acks == "all":
        h = evolve(h, pending_acks=h.pending_acks | {(broker, offset, rec.id)})
    elif acks == "1":
        h = evolve(h, acked_leader_only=h.acked_leader_only | {(offset, rec.id)})
    return evolve(s, used=used, replicas=tuple(reps), history=h)


def fetch(s: State, p: Protocol, cfg: Config, follower: int) -> State | None:
    """A follower sends a fetch from its log end to the leader it believes in (one fetch in flight)."""
    r = s.replica(follower)
    if not (r.alive and r.known) or r.leader in (NO_LEADER, follower) or r.needs_truncation:
        return None
    if follower in s.registry.shutting_down and follower not in r.isr:
        # In controlled shutdown a broker stops fetching what it no longer has in sync (`ReplicaManager.
        # applyLocalFollowersDelta`; the ZooKeeper controller sent StopReplica without delete).
        return None
    for m in s.pool:
        # One fetch in flight per incarnation: a dead process's request may still be on its way to the leader.
        if ((isinstance(m, FetchRequest) and m.frm == follower and m.broker_epoch == r.broker_epoch)
                or (isinstance(m, FetchResponse) and m.to == follower)):
            return None
    epoch = p.fetch_leader_epoch(r)
    return _send(s, new_value(FetchRequest, frm=follower, to=r.leader, offset=r.leo, current_epoch=epoch,
                              broker_epoch=r.broker_epoch))


def handle_fetch(s: State, p: Protocol, cfg: Config, m: FetchRequest, keep: bool = False) -> State | None:
    """The leader answers a fetch: its view of the follower's log end moves to the fetch offset."""
    if not isinstance(m, FetchRequest) or m.to not in s.brokers or not s.replica(m.to).alive:
        return None
    leader = s.replica(m.to)
    pool = s.pool if keep else s.pool - {m}  # the request consumed (`_consume`); one new state at the end
    reps = s.replicas
    error = p.fetch_validation(leader, m.current_epoch)
    if not error and m.frm not in leader.replicas:
        # `Partition.followerReplicaOrThrow`: the leader does not know the fetcher as a replica (yet, or any
        # more); with a leader epoch in the request this is UNKNOWN_LEADER_EPOCH, so the fetcher retries.
        error = "UNKNOWN_LEADER_EPOCH" if m.current_epoch >= 0 else "NOT_LEADER_OR_FOLLOWER"
    if not error and m.offset > leader.leo:
        error = "OFFSET_OUT_OF_RANGE"
    if not error and not p.fetch_state_update(image(s, m.to) if cfg.kraft else None, m.frm, m.broker_epoch):
        error = "NOT_LEADER_OR_FOLLOWER"
    if not error:
        leader = leader.with_view(m.frm, m.offset, m.broker_epoch)
        changed = list(reps)
        changed[m.to - 1] = leader
        reps = tuple(changed)
    # Without an epoch in the request, the response is tagged with the follower's epoch when the leader answers.
    follower_epoch = m.current_epoch if m.current_epoch >= 0 else reps[m.frm - 1].leader_epoch
    records = () if error else leader.log[m.offset:]
    response = new_value(FetchResponse, to=m.frm, frm=m.to, offset=m.offset, follower_epoch=follower_epoch,
                         records=records, hw=leader.hw, error=error)
    answered = pool | {response} if _connected(s, m.frm, m.broker_epoch) else pool
    out = evolve(s, pool=answered, replicas=reps)
    if not error and p.isr_expansion(True):  # `updateFollowerFetchState` -> `maybeExpandIsr`, in the same step
        return _expansion(out, p, leader, m.frm) or out
    return out


def handle_fetch_response(s: State, p: Protocol, cfg: Config, m: FetchResponse, keep: bool = False
                          ) -> State | None:
    """The follower appends what it fetched and takes the leader's high watermark (bounded by its log end)."""
    if not isinstance(m, FetchResponse) or not p.accept_fetch_response(s.replica(m.to), m):
        return None
    if m.error:
        return _consume(s, m, keep)
    r = s.replica(m.to)
    log = r.log + m.records
    reps = list(s.replicas)
    reps[r.id - 1] = evolve(r, log=log, hw=min(m.hw, len(log)))
    # `_consume` and `with_replica` in one new state
    return evolve(s, replicas=tuple(reps)) if keep else evolve(s, pool=s.pool - {m}, replicas=tuple(reps))


def fetch_round(s: State, p: Protocol, cfg: Config, follower: int) -> State | None:
    """`Config.atomic_fetch`: fetch, handle_fetch and handle_fetch_response back to back."""
    sent = fetch(s, p, cfg, follower)
    if sent is None:
        return None
    (request,) = sent.pool - s.pool
    if not isinstance(request, FetchRequest):  # fetch() sends exactly one FetchRequest
        return None
    answered = handle_fetch(sent, p, cfg, request)
    if answered is None:  # the believed leader is down: the split model's request would wait in the pool
        return None
    # handle_fetch answers with exactly one FetchResponse (and may propose the follower for the ISR)
    (response,) = [m for m in answered.pool - sent.pool if isinstance(m, FetchResponse)]
    return handle_fetch_response(answered, p, cfg, response)


def truncate(s: State, p: Protocol, cfg: Config, follower: int) -> State | None:
    """A new follower truncates its log where the protocol's truncation rule says, then may fetch."""
    r = s.replica(follower)
    if not (r.alive and r.needs_truncation):
        return None
    leader = s.replica(r.leader) if r.leader != NO_LEADER else None
    point = p.truncation(r, leader, p)
    if point is None:
        return None
    return s.with_replica(evolve(r.truncated(point), needs_truncation=False))


def advance_hw(s: State, p: Protocol, cfg: Config, broker: int) -> State | None:
    """The leader moves its high watermark; acks=all producers below it get their answer."""
    r = s.replica(broker)
    if not r.is_leader:
        return None
    min_isr = leader_min_isr(cfg, r)
    hw = min(p.high_watermark(r, min_isr), r.leo)
    if hw <= r.hw:
        return None
    r = evolve(r, hw=hw)
    reps = list(s.replicas)
    reps[r.id - 1] = r
    h = s.history
    committed = {(o, r.log[o].id) for o in range(hw)}
    # acks=all writes get their answer once the high watermark passes them; the rule says whether it is a success.
    done = {(b, o, i) for (b, o, i) in h.pending_acks if b == broker and o < hw}
    acked = {(o, i) for (_, o, i) in done if r.log[o].id == i} if p.ack_complete(r, min_isr) else set()
    h = evolve(h, committed=h.committed | committed, true_hw=max(h.true_hw, hw),
                pending_acks=h.pending_acks - done, acked=h.acked | acked)
    return evolve(s, replicas=tuple(reps), history=h)  # `with_replica` and the history in one new state


def _expansion(s: State, p: Protocol, r: Replica, follower: int) -> State | None:
    """`Partition.maybeExpandIsr`: a leader in a committed ISR state whose AlterPartitionManager holds no request
    proposes a follower outside the ISR that is still assigned (`canAddReplicaToIsr`) and in sync (the isr_join rule,
    with fencing and broker epochs as the leader's image has them: `isReplicaIsrEligible`, `isFollowerInSync`)."""
    if not r.is_leader or r.pending_isr is not None or r.in_flight is not None or follower in r.isr \
            or follower == r.id or follower not in r.replicas:
        return None
    if not p.isr_join(r, follower, active_view(image(s, r.id), p)):
        return None
    return _propose(s, r, r.isr | {follower})


def expand_isr(s: State, p: Protocol, cfg: Config, leader: int, follower: int) -> State | None:
    """The leader asks the controller to add a caught-up follower (AlterPartition), at a moment of its own: only under
    the `isr_expansion` rule `expand_at_any_time` (Kafka expands right after recording a fetch, `handle_fetch`)."""
    if not p.isr_expansion(False):
        return None
    return _expansion(s, p, s.replica(leader), follower)


def shrink_isr(s: State, p: Protocol, cfg: Config, leader: int, follower: int) -> State | None:
    """The leader asks the controller to drop a follower it finds too slow (a fault: budgeted)."""
    r = s.replica(leader)
    if not r.is_leader or r.pending_isr is not None or r.in_flight is not None or follower not in r.isr \
            or follower == leader:
        return None
    s2 = _spend(s, cfg, "isr_shrinks")
    return None if s2 is None else _propose(s2, r, r.isr - {follower})


def _propose(s: State, r: Replica, isr: frozenset[int]) -> State:
    """`Partition.prepareIsrExpand`/`prepareIsrShrink` then `submitAlterPartition`: the pending state holds the
    request, and the broker's AlterPartitionManager holds it until an answer is handled. The callers propose only
    from a committed state with nothing held (Kafka's submit fails at once otherwise, OPERATION_NOT_ATTEMPTED,
    and the leader returns to the committed state it was in: no change)."""
    seen = dict(r.follower_broker_epoch)
    seen[r.id] = r.broker_epoch
    epochs = tuple((b, seen[b]) for b in sorted(isr) if b in seen)
    m = AlterPartition(r.id, r.leader_epoch, r.partition_epoch, tuple(sorted(isr)), epochs)
    key = request_key(m)
    return _send(s.with_replica(evolve(r, pending_isr=isr, sent=key, in_flight=key)), m)


def _connected(s: State, broker: int, broker_epoch: int | None) -> bool:
    """Whether the process that sent a request (with its broker epoch) still has the connection its answer goes
    back on: a request read before its sender died is processed, but the answer has nowhere to go."""
    r = s.replica(broker)
    return r.alive and (broker_epoch is None or r.broker_epoch == broker_epoch)


def handle_alter_partition(s: State, p: Protocol, cfg: Config, m: AlterPartition, keep: bool = False
                           ) -> State | None:
    """The controller checks the leader's epochs and the new members, then commits or refuses the ISR."""
    if not isinstance(m, AlterPartition):
        return None
    reg = s.registry
    s = _consume(s, m, keep)
    # A broker has one AlterPartition in flight and sends again only after an answer or a failed connection;
    # so an answer to it still travelling belongs to a connection that failed, and never arrives.
    s = evolve(s, pool=s.pool - {q for q in s.pool if isinstance(q, AlterPartitionResponse) and q.to == m.frm})
    isr = frozenset(m.isr)
    error = p.alter_partition_fencing(reg, m)
    if not error and not isr <= set(reg.replicas):
        error = "INVALID_REQUEST"  # `Replicas.validateIsr`: every ISR member must be a replica
    if not error and m.frm not in isr:
        error = "INVALID_REQUEST"  # `ReplicationControlManager.validateAlterPartitionData`: the leader stays in it
    if not error and not p.alter_partition_validation(reg, isr, dict(m.broker_epochs)):
        error = "INELIGIBLE_REPLICA"
    key = request_key(m)
    sender_epoch = dict(m.broker_epochs).get(m.frm)

    def answer(state: State, response: AlterPartitionResponse) -> State:
        return _send(state, response) if _connected(state, m.frm, sender_epoch) else state

    if error:
        return answer(s, AlterPartitionResponse(m.frm, m.leader_epoch, m.partition_epoch, m.isr, error, key))
    # ELR follows the new ISR (KIP-966): members leaving a below-min ISR stay eligible.
    removed = reg.isr - isr
    _, elr = p.isr_removal(evolve(reg, isr=isr | removed), removed, effective_min_isr(cfg, reg), frozenset())
    s2 = write_partition(s, p, cfg, reg.controller_epoch, reg, reg.leader, isr, elr - isr)
    if s2 is None:
        return None
    new = s2.registry
    if new.leader != m.frm:
        # The ISR completed a reassignment that moved leadership: the change is written, and the leader
        # hears NEW_LEADER_ELECTED (`ReplicationControlManager.alterPartition`).
        return answer(s2, AlterPartitionResponse(m.frm, m.leader_epoch, m.partition_epoch, m.isr, "NEW_LEADER_ELECTED",
                                               key))
    return answer(s2, AlterPartitionResponse(m.frm, new.leader_epoch, new.partition_epoch, tuple(sorted(new.isr)), "",
                                           key))


def handle_alter_partition_response(s: State, p: Protocol, cfg: Config, m: AlterPartitionResponse,
                                    keep: bool = False) -> State | None:
    """The broker handles the answer to the AlterPartition its AlterPartitionManager holds, as Kafka 4.x does.

    `AlterPartitionManager.handleAlterPartitionResponse` releases the request (a new one may be submitted), then
    `Partition.submitAlterPartition`'s callback compares the partition's state with the pending state that sent the
    request (by value: the same request, `request_key`): if new partition state replaced it meanwhile, the answer is
    ignored. Otherwise `handleAlterPartitionError`: only INELIGIBLE_REPLICA and OPERATION_NOT_ATTEMPTED (the
    controller says it applied nothing) return to the last committed ISR (the `alter_partition_rollback` rule); any
    other error leaves the proposal pending, so the high watermark still counts it, until new partition state
    arrives (the request may have been applied: NEW_LEADER_ELECTED says it was). `handleAlterPartitionUpdate`: a
    success for another leader epoch, or an older partition epoch than the leader's, is ignored and the state stays
    pending; else the ISR and partition epoch are committed.
    Abstraction: the model has no retry (Kafka resends on unexpected errors and lost connections); a dropped request
    or answer leaves the broker holding it, as a request that never gets an answer would.
    """
    if not isinstance(m, AlterPartitionResponse):
        return None
    r = s.replica(m.to)
    if not r.alive or r.in_flight is None or r.in_flight != m.request:
        return None
    s = _consume(s, m, keep)
    # The request is answered: no copy of it is still in flight. A broker keeps one AlterPartition in flight
    # over one connection and retries only while no answer came, so the controller cannot process the
    # request again after the leader acted on the answer (which a duplicate in this pool otherwise could).
    s = evolve(s, pool=s.pool - {q for q in s.pool if isinstance(q, AlterPartition) and q.frm == m.to
                                 and request_key(q) == m.request})
    r = evolve(r, in_flight=None)
    if not r.is_leader or r.sent != m.request:
        return s.with_replica(r)  # `partitionState != proposedIsrState`: the answer is out of date
    if m.error:
        return s.with_replica(evolve(r, pending_isr=None, sent=None) if p.alter_partition_rollback(m.error) else r)
    if m.leader_epoch != r.leader_epoch or m.partition_epoch < r.partition_epoch:
        return s.with_replica(r)
    return s.with_replica(evolve(r, pending_isr=None, sent=None, isr=frozenset(m.isr),
                                 partition_epoch=m.partition_epoch))


def handle_leader_and_isr(s: State, p: Protocol, cfg: Config, m: LeaderAndIsr, keep: bool = False
                          ) -> State | None:
    """A broker applies a newer leader/ISR: it becomes leader, or follower (and must truncate), or
    just learns the new ISR. Older controller or partition epochs are ignored."""
    if not isinstance(m, LeaderAndIsr) or _control_refused(p, s.replica(m.to), m) is not False:
        return None
    s = _consume(s, m, keep)
    return s.with_replica(_apply_leader_and_isr(s.replica(m.to), p, m.controller_epoch, m.leader,
                                                m.leader_epoch, m.partition_epoch, frozenset(m.isr), m.replicas))


def handle_stop_replica(s: State, p: Protocol, cfg: Config, m: StopReplica, keep: bool = False) -> State | None:
    """A broker taken out of the replica set stops fetching (or leading) and deletes its log."""
    if not isinstance(m, StopReplica) or _control_refused(p, s.replica(m.to), m) is not False:
        return None
    s = _consume(s, m, keep)
    return s.with_replica(_apply_stop(s.replica(m.to), m.controller_epoch, m.leader_epoch, m.partition_epoch))


def _control_refused(p: Protocol, r: Replica, m: LeaderAndIsr | StopReplica) -> bool | None:
    """Whether a live recipient refuses a control request now: sent to an earlier incarnation of it
    (`control_request_incarnation`) or older than its partition state (`partition_state_applies`). None while it is
    down: the request waits (ZooKeeper: in the controller's queue, retried on a new connection)."""
    if not r.alive:
        return None
    return not (p.control_request_incarnation(r, m) and p.partition_state_applies(r, m))


def _apply_stop(r: Replica, controller_epoch: int, leader_epoch: int, partition_epoch: int) -> Replica:
    """StopReplica(delete=true): no log, no role; the epochs stay, so older LeaderAndIsr are ignored."""
    return evolve(r, known=True, controller_epoch=max(r.controller_epoch, controller_epoch), leader=NO_LEADER,
                   leader_epoch=leader_epoch, partition_epoch=partition_epoch, isr=frozenset(), replicas=(),
                   log=(), flushed=0, hw=0, needs_truncation=False, follower_leo=(), follower_broker_epoch=(),
                   fetched=frozenset(), epoch_start=0, pending_isr=None, sent=None)


def _apply_leader_and_isr(r: Replica, p: Protocol, controller_epoch: int, leader: int, leader_epoch: int,
                          partition_epoch: int, isr: frozenset[int], replicas: tuple[int, ...]) -> Replica:
    """`Partition.makeLeader` / `makeFollower` (KRaft: `ReplicaManager.applyDelta`): the new partition state replaces
    any pending ISR state. A leader keeps the views of the followers still assigned (`updateAssignmentAndIsr`) and,
    on a new leader epoch, those the `leader_keeps_follower_state` rule keeps (`Replica.resetReplicaState`); its epoch
    starts at its log end (`maybeAssignEpochStartOffset`). A follower keeps no view."""
    new_epoch = not r.known or leader_epoch != r.leader_epoch
    base = evolve(r, known=True, controller_epoch=max(r.controller_epoch, controller_epoch), leader=leader,
                   leader_epoch=leader_epoch, partition_epoch=partition_epoch, isr=isr, replicas=replicas)
    if leader == r.id:
        base = base.keeping_views(lambda b: b in replicas)
        if new_epoch:
            base = base.keeping_views(lambda b: p.leader_keeps_follower_state(r, leader_epoch, b, isr))
            return evolve(base, epoch_start=r.leo, pending_isr=None, sent=None, needs_truncation=False,
                          fetched=frozenset())
        return evolve(base, pending_isr=None, sent=None)
    truncate_again = new_epoch and p.truncate_on(r, leader, leader_epoch)
    return evolve(base, follower_leo=(), follower_broker_epoch=(), fetched=frozenset(), pending_isr=None, sent=None,
                   needs_truncation=r.needs_truncation or truncate_again or not r.known)


def flush(s: State, p: Protocol, cfg: Config, broker: int) -> State | None:
    """The log is flushed to disk (Kafka's background flush; healing)."""
    r = s.replica(broker)
    if not r.alive or r.flushed == r.leo:
        return None
    return s.with_replica(evolve(r, flushed=r.leo))


def crash(s: State, p: Protocol, cfg: Config, broker: int, lossy: bool) -> State | None:
    """A broker dies. A lossy crash (power loss) also loses the unflushed suffix of its log; its
    checkpointed high watermark cannot exceed what survived. Its connections and requests die with it. Either is an
    unclean shutdown to Kafka: no clean-shutdown file is written (`LogManager`), so the broker registers again with
    previous broker epoch -1 and the controller takes it out of the ELR (KIP-966, `handleBrokerUncleanShutdown`);
    trace validation on 4.4.0 showed a killed last ISR member not elected from the ELR after its restart."""
    r = s.replica(broker)
    if not r.alive:
        return None
    s2 = _spend(s, cfg, "lossy_crashes" if lossy else "crashes")
    if s2 is None:
        return None
    if lossy:
        r = r.truncated(r.flushed)
        s2 = evolve(s2, history=evolve(s2.history, lossy_crashes=s2.history.lossy_crashes + 1))
    r = evolve(r, alive=False, known=False, flushed=r.leo, clean_shutdown=False, needs_truncation=False,
               pending_isr=None, sent=None,
                in_flight=None, follower_leo=(), follower_broker_epoch=(), fetched=frozenset(), applied=0,
                shutdown_asked=False)
    pool = frozenset(m for m in s2.pool if not p.crash_drops(broker, m))
    return evolve(s2.with_replica(r), pool=pool)


def restart(s: State, p: Protocol, cfg: Config, broker: int) -> State | None:
    """A dead broker starts again: it registers (the protocol decides what the controller learns) and
    applies the partition's current state from the controller."""
    r = s.replica(broker)
    if r.alive:
        return None
    fence, unclean = p.registration(r.clean_shutdown)
    r = evolve(r, alive=True, broker_epoch=r.broker_epoch + 1, clean_shutdown=True, hw=min(r.hw, r.leo))
    s = s.with_replica(r)
    reg = s.registry
    epochs = list(reg.broker_epochs)
    epochs[broker - 1] = r.broker_epoch  # the registration is recorded either way; fencing is the rule
    # A new registration is not in controlled shutdown (`RegisterBrokerRecord` has no such flag).
    s = evolve(s, registry=evolve(reg, broker_epochs=tuple(epochs), shutting_down=reg.shutting_down - {broker}))
    if fence:
        reg = s.registry
        s = evolve(s, registry=evolve(reg, fenced=reg.fenced | {broker}))
        gone = frozenset({broker}) if (broker in reg.isr or broker == reg.leader or unclean) else frozenset()
        if gone:
            s2 = _remove_from_isr(s, p, cfg, gone, gone if unclean else frozenset())
            if s2 is None:
                return None
            s = s2
    reg = s.registry
    reads = p.restart_reads_metadata(s.replica(broker), reg)  # asked once: a user's rule may count its calls
    if cfg.kraft:  # the registration (and any ISR change it caused) is one batch; the broker reads the log from it
        s = publish(s)
        end = len(s.metadata) - 1
        if not reads:  # acts before catching up: applies the log from its registration, knowing nothing
            return s.with_replica(evolve(s.replica(broker), applied=end - 1))
        s = s.with_replica(evolve(s.replica(broker), applied=end))
    r = s.replica(broker)
    if not reads:  # the controller tells it, in a message that may come late or never
        # (`KafkaController.onBrokerStartup`, to the new incarnation's broker epoch)
        if broker not in reg.replicas:
            return _send(s, StopReplica(broker, reg.controller_epoch, reg.leader_epoch, reg.partition_epoch,
                                        r.broker_epoch))
        return _send(s, LeaderAndIsr(broker, reg.controller_epoch, reg.leader, reg.leader_epoch, reg.partition_epoch,
                                     tuple(sorted(reg.isr)), reg.replicas, r.broker_epoch))
    if broker not in reg.replicas:  # no longer (or never) a replica: a leftover log is deleted
        return s.with_replica(_apply_stop(r, reg.controller_epoch, reg.leader_epoch, reg.partition_epoch))
    return s.with_replica(_apply_leader_and_isr(r, p, reg.controller_epoch, reg.leader, reg.leader_epoch,
                                                reg.partition_epoch, reg.isr, reg.replicas))


def apply_metadata(s: State, p: Protocol, cfg: Config, broker: int) -> State | None:
    """KRaft: a live broker applies the next batch of the metadata log (healing; brokers apply at their own pace).

    A batch that changed the partition reaches the broker as `ReplicaManager.applyDelta` does: a replica becomes
    leader or follower (or learns a new ISR) through the same epoch checks as a LeaderAndIsr
    (`partition_state_applies`), and a broker the record no longer lists deletes its replica. A batch that only
    changed registrations changes the broker's image of fencing and broker epochs and nothing else.
    """
    r = s.replica(broker)
    if not r.alive or r.applied + 1 >= len(s.metadata):
        return None
    before, rec = s.metadata[r.applied].image, s.metadata[r.applied + 1].image
    r = evolve(r, applied=r.applied + 1)
    if rec.partition_epoch != before.partition_epoch or not r.known:
        if broker in rec.replicas:
            m: LeaderAndIsr | StopReplica = new_value(
                LeaderAndIsr, to=broker, controller_epoch=rec.written_by, leader=rec.leader,
                leader_epoch=rec.leader_epoch, partition_epoch=rec.partition_epoch, isr=tuple(sorted(rec.isr)),
                replicas=rec.replicas, broker_epoch=-1)
            if p.partition_state_applies(r, m):
                r = _apply_leader_and_isr(r, p, rec.written_by, rec.leader, rec.leader_epoch, rec.partition_epoch,
                                          rec.isr, rec.replicas)
        elif r.hosts or r.log or not r.known:  # the partition is among the delta's deletes
            m = StopReplica(broker, rec.written_by, rec.leader_epoch, rec.partition_epoch)
            if p.partition_state_applies(r, m):
                r = _apply_stop(r, rec.written_by, rec.leader_epoch, rec.partition_epoch)
    return s.with_replica(r)


def fence(s: State, p: Protocol, cfg: Config, broker: int) -> State | None:
    """The controller fences a broker and takes it out of the ISR, electing a new leader if it led.
    Fencing a dead broker is the controller noticing a failure (healing); fencing a live one is a
    missed heartbeat or an expired session (a fault: budgeted; the broker lives on as a zombie)."""
    reg = s.registry
    if broker in reg.fenced:
        return None
    if s.replica(broker).alive:
        spent = _spend(s, cfg, "fences")
        if spent is None:
            return None
        s = spent
    s = evolve(s, registry=evolve(reg, fenced=reg.fenced | {broker}))
    if not cfg.kraft:  # ZooKeeper: `processBrokerChange` -> `ControllerChannelManager.removeBroker` clears its queue
        queued = frozenset(m for m in s.pool if isinstance(m, (LeaderAndIsr, StopReplica)) and m.to == broker)
        if queued:
            s = evolve(s, pool=s.pool - queued)
    if broker in reg.isr or broker in reg.elr or broker == reg.leader:
        return _remove_from_isr(s, p, cfg, frozenset({broker}), frozenset())
    return s


def unfence(s: State, p: Protocol, cfg: Config, broker: int) -> State | None:
    """A live fenced broker's heartbeat gets it unfenced once the protocol's `unfence_when` rule says it caught up
    (healing). A broker that asked to shut down is never unfenced: its heartbeat asks to stop (SHUTDOWN_NOW)."""
    reg = s.registry
    if broker not in reg.fenced or not s.replica(broker).alive or broker in reg.shutting_down:
        return None
    if not p.unfence_when(reg, image(s, broker), broker):
        return None
    return evolve(s, registry=evolve(reg, fenced=reg.fenced - {broker}))


def elect(s: State, p: Protocol, cfg: Config) -> State | None:
    """The controller elects a leader for a leaderless partition (healing, as soon as a candidate exists)."""
    reg = s.registry
    if reg.leader != NO_LEADER:
        return None
    choice = p.leader_choice(active_view(reg, p), cfg.brokers)
    if choice is None:
        return None
    return write_partition(s, p, cfg, reg.controller_epoch, reg, *choice, target_isr=reg.isr)


def unclean_election(s: State, p: Protocol, cfg: Config) -> State | None:
    """An operator's unclean election (`kafka-leader-election --election-type unclean`, KIP-460): KRaft's
    `ReplicationControlManager.electLeader` with ElectionType.UNCLEAN answers ELECTION_NOT_NEEDED while the partition
    has a leader, and otherwise runs `PartitionChangeBuilder` with Election.UNCLEAN, whose last resort is the first
    active replica in replica order, leading an ISR of itself alone with the ELR cleared (ELIGIBLE_LEADERS_NOT_AVAILABLE
    when none is active). Where a clean choice exists the controller's own election (`elect`) already makes it, so
    this action is only the unclean one; it spends the budget, and Kafka promises no durability past it (the
    durability invariants are not applicable once one happened). Kafka's RECOVERING leader state (KIP-704) is not
    modelled: the new leader reports the partition recovered through AlterPartition as it takes over, and trace
    validation on 4.4.0 saw the same leader, ISR and logs at every quiet point after an unclean election."""
    reg = s.registry
    if reg.leader != NO_LEADER:
        return None
    view = active_view(reg, p)
    if p.leader_choice(view, cfg.brokers) is not None:
        return None
    choice = unclean_allowed(view, cfg.brokers)
    s2 = None if choice is None else _spend(s, cfg, "unclean_elections")
    if s2 is None or choice is None:
        return None
    return write_partition(s2, p, cfg, reg.controller_epoch, reg, *choice, target_isr=reg.isr)


def move_leader(s: State, p: Protocol, cfg: Config, target: int) -> State | None:
    """The controller moves leadership to another unfenced ISR member (a preferred-replica election or
    an operator's election; budgeted)."""
    reg = s.registry
    if target == reg.leader or reg.leader == NO_LEADER or not p.valid_leader(active_view(reg, p), target):
        return None
    s2 = _spend(s, cfg, "elections")
    if s2 is None:
        return None
    return write_partition(s2, p, cfg, reg.controller_epoch, reg, target, reg.isr, reg.elr)


def failover(s: State, p: Protocol, cfg: Config) -> State | None:
    """A new controller takes over with the next controller epoch; the old one may live on as a zombie
    that still believes the partition looks as it last saw it."""
    s2 = _spend(s, cfg, "failovers")
    if s2 is None:
        return None
    reg = s2.registry
    zombie = ZombieController(reg.controller_epoch, reg)
    return evolve(s2, registry=evolve(reg, controller_epoch=reg.controller_epoch + 1),
                   zombies=s2.zombies + (zombie,))


def zombie_move_leader(s: State, p: Protocol, cfg: Config, zombie: int, target: int) -> State | None:
    """A zombie controller moves leadership from its stale view (KAFKA-6082); budgeted as an election."""
    if zombie >= len(s.zombies):
        return None
    z = s.zombies[zombie]
    view = z.view
    if target == view.leader or target not in view.isr:
        return None
    s2 = _spend(s, cfg, "elections")
    if s2 is None:
        return None
    s3 = write_partition(s2, p, cfg, z.epoch, view, target, view.isr, view.elr)
    if s3 is None:
        return None
    zombies = list(s3.zombies)
    zombies[zombie] = evolve(z, view=s3.registry)
    return evolve(s3, zombies=tuple(zombies))


def consume(s: State, p: Protocol, cfg: Config, broker: int, offset: int) -> State | None:
    """A consumer reads one offset below the high watermark of a broker that believes it leads."""
    r = s.replica(broker)
    if not r.is_leader or offset >= min(p.consumer_read_limit(r), r.leo):
        return None
    read = (offset, r.log[offset].id)
    if read in s.history.reads:
        return None
    s2 = _spend(s, cfg, "reads")
    if s2 is None:
        return None
    h = evolve(s2.history, reads=s2.history.reads | {read})
    if cfg.client_view:  # the high watermark the consumer's fetch response carried (None: none reported)
        hw = p.fetch_high_watermark(r)
        if hw is not None:
            h = _client_saw(h, "fetch_hw", hw)
    return evolve(s2, history=h)


# ---- the clients' view (ListOffsets, the fetch response's high watermark) -----------------------------------

LIST_OFFSETS_SPECS = ("latest", "earliest")


def _client_saw(h: History, kind: str, answer: int) -> History:
    """`h` with a client's answer of `kind` ("latest" or "fetch_hw") recorded: the largest seen, and a regression
    (kind, largest seen before, answer) when it is below that."""
    name = "latest_seen" if kind == "latest" else "fetch_hw_seen"
    top = getattr(h, name)
    if answer > top:
        return evolve(h, **{name: answer})
    if answer < top:
        return evolve(h, offset_regressions=h.offset_regressions | {(kind, top, answer)})
    return h


def list_offsets(s: State, p: Protocol, cfg: Config, broker: int, spec: str) -> State | None:
    """A client's ListOffsets (read_uncommitted) to a broker that believes it leads (a zombie leader too).

    The request carries the newest leader epoch the client has seen (KIP-320), checked as a fetch's is
    (`fetch_validation`; Kafka's `Partition.localLogWithEpochOrThrow`): a client behind the broker's epoch is told
    FENCED_LEADER_EPOCH, refreshes its metadata and asks again with the broker's epoch (one step here); one ahead
    of it is told UNKNOWN_LEADER_EPOCH (no answer: not enabled). LATEST is answered by the protocol's
    `list_offsets_latest` rule; OFFSET_NOT_AVAILABLE (None) is no answer either, the client retries later.
    EARLIEST is the log start offset, which this model never moves (no retention, no DeleteRecords): always 0, so
    it cannot go back; it is accepted here (replay, scripts) and the explorers enumerate LATEST only.
    """
    r = s.replica(broker)
    if spec not in LIST_OFFSETS_SPECS or not r.is_leader:
        return None
    h = s.history
    epoch = max(h.client_epoch, r.leader_epoch)
    if p.fetch_validation(r, epoch):
        return None
    answer = 0 if spec == "earliest" else p.list_offsets_latest(r)
    if answer is None:
        return None
    s2 = _spend(s, cfg, "list_offsets")
    if s2 is None:
        return None
    h = s2.history if epoch == h.client_epoch else evolve(s2.history, client_epoch=epoch)
    return evolve(s2, history=_client_saw(h, "latest", answer) if spec == "latest" else h)


def _online_leader(reg: Registry, p: Protocol, cfg: Config) -> tuple[int, frozenset[int], frozenset[int]]:
    """ONLINE election of `PartitionChangeBuilder`: the current leader while it is a valid one (in the ISR
    and unfenced), else the protocol's choice over the (new) replica set."""
    view = active_view(reg, p)
    if p.valid_leader(view, reg.leader):
        return reg.leader, reg.isr, reg.elr
    choice = p.leader_choice(view, cfg.brokers)
    return (NO_LEADER, reg.isr, reg.elr) if choice is None else choice


def _acceptor_throws(moved: Registry, stored: tuple[int, ...], p: Protocol) -> bool:
    """Whether Kafka's election for a reassignment's first record fails (4.0.2-4.4.0): `electAnyLeader` walks the
    new replica list for the first ISR member, or ELR member when the ISR is empty, that its `LeaderAcceptor`
    accepts; for an active broker the acceptor looks its directory up in the partition as stored
    (`PartitionRegistration.directory`), which throws IllegalArgumentException ("Replica 2 is not assigned to this
    partition") for a broker that is not a replica yet. The whole request then fails (UNKNOWN_SERVER_ERROR) and
    nothing is written. Only an ELR member can be such a broker: the ISR lies within the replica set."""
    view = active_view(moved, p)
    if p.valid_leader(view, moved.leader):
        return False
    for b in moved.replicas:
        if (b in moved.isr or (not moved.isr and b in moved.elr)) and b not in view.fenced:
            return b not in stored
    return False


def reassign(s: State, p: Protocol, cfg: Config, target: tuple[int, ...]) -> State | None:
    """The operator's AlterPartitionReassignments with a target replica list (budgeted).

    KRaft's `changePartitionReassignment`: one record sets RS = target ++ removing, AR and RR (sorted),
    leaving the leader and ISR alone; it completes at once when the ISR already covers the target
    (a reorder, or only removals). A request on top of an in-flight reassignment starts from the full
    replica set. A request that changes nothing writes nothing (not enabled), unless it clears the ELR (the ISR
    reached the effective min ISR, `effective_min_isr`) or the move in flight can complete now: its ISR may have
    become enough in a record whose election (run after the completion check) took an ELR member. A request whose
    election would ask the LeaderAcceptor about a broker not yet a replica fails (`_acceptor_throws`)."""
    target = tuple(target)
    if not target or len(set(target)) != len(target) or not all(1 <= b <= cfg.brokers for b in target):
        return None
    reg = s.registry
    replicas, adding, removing = request_targets(reg, target)
    elr = reg.elr if len(reg.isr) < effective_min_isr(cfg, reg) else frozenset()  # `maybePopulateTargetElr`
    if ((replicas, adding, removing, elr) == (reg.replicas, reg.adding, reg.removing, reg.elr)
            and (not reg.reassigning or p.reassignment_completion(replicas, adding, removing, reg.isr) is None)):
        return None
    s2 = _spend(s, cfg, "reassignments")
    if s2 is None:
        return None
    moved = evolve(reg, replicas=replicas, elr=elr)
    if _acceptor_throws(moved, reg.replicas, p):
        return None
    leader, isr, elr = _online_leader(moved, p, cfg)
    s3 = write_partition(s2, p, cfg, reg.controller_epoch, reg, leader, isr, elr, replicas=replicas, adding=adding,
                         removing=removing, target_isr=reg.isr)
    if s3 is None or not s3.registry.reassigning:
        return s3
    h = s3.history
    first = not reg.reassigning
    origin = frozenset(reg.replicas) if first else h.reassign_origin
    seen = frozenset(reg.replicas) | (frozenset() if first else h.reassign_seen)
    return evolve(s3, history=evolve(h, reassign_origin=origin, reassign_seen=seen))


def cancel_reassignment(s: State, p: Protocol, cfg: Config) -> State | None:
    """The operator cancels the reassignment in flight (budgeted): KRaft's `cancelPartitionReassignment`
    writes the protocol's revert (RS and ISR without the adding replicas) and clears AR and RR."""
    reg = s.registry
    if not reg.reassigning:
        return None  # NoReassignmentInProgressException
    revert = p.reassignment_revert(reg)
    if revert is None:
        return None  # InvalidReplicaAssignmentException: the revert would need an unclean election
    s2 = _spend(s, cfg, "cancels")
    if s2 is None:
        return None
    replicas, target_isr = revert
    left = reg.isr - target_isr
    _, elr = p.isr_removal(evolve(reg, isr=target_isr | left), left, effective_min_isr(cfg, reg), frozenset())
    elr = p.reassignment_elr(elr - target_isr, replicas)
    leader, isr, elr = _online_leader(evolve(reg, replicas=replicas, isr=target_isr, elr=elr), p, cfg)
    return write_partition(s2, p, cfg, reg.controller_epoch, reg, leader, isr, elr, replicas=replicas, adding=(),
                           removing=(), target_isr=target_isr)


def drop(s: State, p: Protocol, cfg: Config, m: Message) -> State | None:
    """The network loses a message."""
    rest = s.pool - {m}
    return evolve(s, pool=rest) if len(rest) < len(s.pool) else None  # m was in the pool (one hash of m)


# ---- the broker lifecycle: who is active, controlled shutdown (KRaft) ------------------------------

def active_view(reg: Registry, p: Protocol) -> Registry:
    """`reg` as the election and ISR-admission rules see it: `fenced` holds every broker the protocol's
    `broker_active` rule rejects (Kafka's `isActive`: fenced or in controlled shutdown). The same registry object
    when that is just the fenced set, so nothing changes while nobody shuts down."""
    rule = p.broker_active
    if rule is active_unless_fenced_or_shutting_down:
        if not reg.shutting_down:
            return reg
        inactive = reg.fenced | reg.shutting_down
    else:
        inactive = frozenset(b for b in range(1, len(reg.broker_epochs) + 1) if not rule(reg, b))
    return reg if inactive == reg.fenced else evolve(reg, fenced=inactive)


def shutdown_seen(s: State, broker: int) -> bool:
    """Whether every active broker (unfenced and not shutting down, as the controller has them) is alive and has
    applied the batch that began `broker`'s controlled shutdown: its image shows `broker`'s current registration
    in controlled shutdown (Kafka compares the offsets the brokers' heartbeats report with that batch's,
    `BrokerHeartbeatManager.lowestActiveOffset`; a dead broker reports nothing until the controller fences it).
    Always true in ZooKeeper mode, where a broker's image is the registry."""
    reg = s.registry
    epoch = reg.broker_epochs[broker - 1]
    for a in s.brokers:
        if a == broker or a in reg.fenced or a in reg.shutting_down:
            continue
        if not s.replica(a).alive:
            return False
        seen = image(s, a)
        if broker not in seen.shutting_down or seen.broker_epochs[broker - 1] != epoch:
            return False
    return True


def _shut_down(s: State, p: Protocol, cfg: Config, broker: int) -> State | None:
    """The controller lets the broker stop and it stops cleanly: its log flushed, its connections closed. KRaft's
    SHUTDOWN_NOW also fences the registration and takes the broker out of every ISR in the same batch
    (`ReplicationControlManager.handleBrokerFenced`); the registration keeps its in-controlled-shutdown flag until
    the broker registers again. In ZooKeeper mode the controller learns of it when the session ends (`fence`)."""
    reg = s.registry
    if cfg.kraft and broker not in reg.fenced:
        s = evolve(s, registry=evolve(reg, fenced=reg.fenced | {broker}))
        if broker in reg.isr or broker in reg.elr or broker == reg.leader:
            s2 = _remove_from_isr(s, p, cfg, frozenset({broker}), frozenset())
            if s2 is None:
                return None
            s = s2
    r = s.replica(broker)
    r = evolve(r, alive=False, known=False, flushed=r.leo, clean_shutdown=True, needs_truncation=False,
               pending_isr=None, sent=None, in_flight=None, follower_leo=(), follower_broker_epoch=(),
               fetched=frozenset(), applied=0, shutdown_asked=False)
    pool = frozenset(m for m in s.pool if not p.crash_drops(broker, m))
    return evolve(s.with_replica(r), pool=pool)


def controlled_shutdown(s: State, p: Protocol, cfg: Config, broker: int) -> State | None:
    """An operator stops a live, unfenced broker cleanly (budgeted `shutdowns`): it asks the controller, with its
    broker epoch (KRaft: the heartbeat's wantShutDown; ZooKeeper mode: ControlledShutdownRequest). The controller
    acts on the request when it arrives (`handle_controlled_shutdown`), which may be after this process is gone. A
    broker whose request was lost asks again (`KafkaServer.controlledShutdown` retries; a heartbeat repeats it),
    spending nothing."""
    r = s.replica(broker)
    reg = s.registry
    if not r.alive or broker in reg.shutting_down or broker in reg.fenced:
        return None
    if r.shutdown_asked:
        if any(isinstance(m, ControlledShutdown) and m.frm == broker and m.broker_epoch == r.broker_epoch
               for m in s.pool):
            return None
    else:
        spent = _spend(s, cfg, "shutdowns")
        if spent is None:
            return None
        s = spent.with_replica(evolve(r, shutdown_asked=True))
    return _send(s, ControlledShutdown(broker, r.broker_epoch))


def handle_controlled_shutdown(s: State, p: Protocol, cfg: Config, m: ControlledShutdown, keep: bool = False
                               ) -> State | None:
    """The controller acts on a request to shut down if the protocol's `shutdown_request_accepted` rule takes its
    broker epoch (else STALE_BROKER_EPOCH, and nothing changes).

    `BrokerHeartbeatManager.calculateNextBrokerState` for an UNFENCED broker that wants to shut down: if it leads
    the partition, CONTROLLED_SHUTDOWN (`ReplicationControlManager.handleBrokerInControlledShutdown`): one batch
    marks the registration in controlled shutdown and takes the broker out of the ISR, electing another leader
    among the active replicas (KIP-966: a broker leaving an ISR below min.insync.replicas joins the ELR); it stops
    later (`complete_shutdown`). If it leads nothing, SHUTDOWN_NOW: it is fenced, taken out of the ISR and stops
    (the model marks it in `shutting_down` as well, which only the invariants read: a fenced broker is inactive
    either way). A fenced broker that asked is told to stop at once. ZooKeeper mode: `KafkaController.
    doControlledShutdown`, the same moves in LeaderAndIsr requests (a broker whose session ended gets
    BROKER_NOT_AVAILABLE and gives up after its retries, stopping all the same). Only the process that asked stops:
    a request of an older incarnation that the rule takes leaves the new process running but in controlled
    shutdown, inactive until it bounces again.
    """
    s = _consume(s, m, keep)
    reg = s.registry
    b = m.frm
    r = s.replica(b)
    asked = r.alive and r.shutdown_asked and r.broker_epoch == m.broker_epoch
    if not p.shutdown_request_accepted(reg.broker_epochs[b - 1], m.broker_epoch) or b in reg.shutting_down:
        return s
    if b in reg.fenced:
        return _shut_down(s, p, cfg, b) if asked else s
    leads = reg.leader == b
    s = evolve(s, registry=evolve(reg, shutting_down=reg.shutting_down | {b}))
    if b in reg.isr or leads:
        s2 = _remove_from_isr(s, p, cfg, frozenset({b}), frozenset())
        if s2 is None:
            return None
        s = s2
    return _shut_down(s, p, cfg, b) if asked and not leads else s


def complete_shutdown(s: State, p: Protocol, cfg: Config, broker: int) -> State | None:
    """A broker in controlled shutdown that asked for it stops once the protocol's `shutdown_granted` rule lets it
    (healing): its heartbeat is answered shouldShutDown."""
    reg = s.registry
    r = s.replica(broker)
    if not r.alive or not r.shutdown_asked or broker not in reg.shutting_down:
        return None
    if not p.shutdown_granted(reg, broker, shutdown_seen(s, broker)):
        return None
    return _shut_down(s, p, cfg, broker)


# ---- the action table -----------------------------------------------------------------------

class Action(NamedTuple):
    kind: str
    args: tuple[Any, ...]

    def as_dict(self) -> dict[str, Any]:
        spec = KINDS[self.kind]
        out: dict[str, Any] = {"action": self.kind}
        for name, value in zip(spec.params, self.args, strict=True):
            out[name] = message_as_dict(value) if name == "message" else value
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Action:
        kind = d.get("action")
        if kind not in KINDS:
            raise ValueError(f"unknown action {kind!r}")
        args = []
        for name in KINDS[kind].params:
            if name not in d:
                raise ValueError(f"action {kind} needs {name!r}")
            value = d[name]
            if name == "message":
                value = message_from_dict(value)
            elif isinstance(value, list):
                value = tuple(value)
            args.append(value)
        return cls(kind, tuple(args))

    def label(self) -> str:
        parts = []
        for name, value in zip(KINDS[self.kind].params, self.args, strict=True):
            if name == "message":
                parts.append(describe_message(value))
            elif name == "keep":
                if value:
                    parts.append("(duplicate)")
            elif name == "lossy":
                parts.append("lossy" if value else "page cache kept")
            elif name == "target" and isinstance(value, tuple):  # a reassignment's target replica list
                parts.append("to [" + ",".join(map(str, value)) + "]")
            else:
                parts.append(f"{name}={value}")
        return " ".join([self.kind] + parts)


def describe_message(m: Message) -> str:
    if isinstance(m, LeaderAndIsr):
        return (f"LeaderAndIsr to {m.to}: leader {m.leader} epoch {m.leader_epoch} "
                f"ISR {{{','.join(map(str, m.isr))}}} replicas [{','.join(map(str, m.replicas))}] "
                f"(controller epoch {m.controller_epoch}{_for_broker_epoch(m)})")
    if isinstance(m, StopReplica):
        return (f"StopReplica to {m.to} (delete): leader epoch {m.leader_epoch} "
                f"(controller epoch {m.controller_epoch}{_for_broker_epoch(m)})")
    if isinstance(m, FetchRequest):
        epoch = "" if m.current_epoch < 0 else f" epoch {m.current_epoch}"
        return f"Fetch {m.frm}->{m.to} offset {m.offset}{epoch}"
    if isinstance(m, FetchResponse):
        what = m.error or (" ".join(map(str, m.records)) or "no records") + f" hw {m.hw}"
        return f"FetchResponse {m.frm}->{m.to} offset {m.offset}: {what}"
    if isinstance(m, AlterPartition):
        return f"AlterPartition from {m.frm}: ISR {{{','.join(map(str, m.isr))}}} (epoch {m.leader_epoch})"
    if isinstance(m, ControlledShutdown):
        return f"ControlledShutdown from {m.frm} (broker epoch {m.broker_epoch})"
    return f"AlterPartitionResponse to {m.to}: " + (m.error or f"ISR {{{','.join(map(str, m.isr))}}}")


def _for_broker_epoch(m: LeaderAndIsr | StopReplica) -> str:
    return "" if m.broker_epoch < 0 else f", for broker epoch {m.broker_epoch}"


@dataclass(frozen=True)
class Kind:
    name: str
    fn: Callable[..., State | None]
    params: tuple[str, ...]
    candidates: Callable[[State, Config], Iterator[tuple[Any, ...]]]
    needs: str | None = None  # a Config budget or switch without which this kind can never happen

    def possible(self, cfg: Config) -> bool:
        """False when the config rules this kind out altogether (never enabled; the explorer leaves its rule out)."""
        return self.needs is None or getattr(cfg, self.needs) > 0


def _each_broker(s: State, cfg: Config) -> Iterator[tuple[Any, ...]]:
    for b in s.brokers:
        yield (b,)


def _messages(kind: type) -> Callable[[State, Config], Iterator[tuple[Any, ...]]]:
    def gen(s: State, cfg: Config) -> Iterator[tuple[Any, ...]]:
        for m in s.messages():
            if isinstance(m, kind):
                yield (m, False)
                if cfg.duplicates:
                    yield (m, True)
    gen.message_type = kind  # type: ignore[attr-defined]  # read by fast enumerators (the model adapter)
    return gen


@cache
def _all_targets(n: int, size: int) -> tuple[tuple[int, ...], ...]:
    """Every ordered target list of distinct brokers 1..n, moves of `size` replicas first (the explorer's
    rule picks among the first options most often), then smaller and larger targets."""
    out = [t for k in range(1, n + 1) for t in permutations(range(1, n + 1), k)]
    return tuple(sorted(out, key=lambda t: (abs(len(t) - size), len(t), t)))


def _targets(s: State, cfg: Config) -> Iterator[tuple[Any, ...]]:
    if s.used.reassignments >= cfg.reassignments:
        return
    for t in _all_targets(cfg.brokers, len(s.registry.target)):
        yield (t,)


def _pairs(s: State, cfg: Config) -> Iterator[tuple[Any, ...]]:
    for a in s.brokers:
        for b in s.brokers:
            if a != b:
                yield (a, b)


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("produce", produce, ("broker", "acks"),
         lambda s, cfg: ((b, a) for b in s.brokers for a in cfg.acks)),
    Kind("fetch", fetch, ("follower",), _each_broker, "split_fetch"),
    Kind("handle_fetch", handle_fetch, ("message", "keep"), _messages(FetchRequest), "split_fetch"),
    Kind("handle_fetch_response", handle_fetch_response, ("message", "keep"), _messages(FetchResponse),
         "split_fetch"),
    Kind("fetch_round", fetch_round, ("follower",), _each_broker, "atomic_fetch"),
    Kind("truncate", truncate, ("follower",), _each_broker),
    Kind("advance_hw", advance_hw, ("broker",), _each_broker),
    Kind("expand_isr", expand_isr, ("leader", "follower"), _pairs),
    Kind("shrink_isr", shrink_isr, ("leader", "follower"), _pairs),
    Kind("handle_alter_partition", handle_alter_partition, ("message", "keep"), _messages(AlterPartition)),
    Kind("handle_alter_partition_response", handle_alter_partition_response, ("message", "keep"),
         _messages(AlterPartitionResponse)),
    Kind("handle_leader_and_isr", handle_leader_and_isr, ("message", "keep"), _messages(LeaderAndIsr)),
    Kind("handle_stop_replica", handle_stop_replica, ("message", "keep"), _messages(StopReplica),
         "reassignments"),
    Kind("apply_metadata", apply_metadata, ("broker",), _each_broker, "kraft"),
    # The flushed prefix matters only to a lossy crash: without one, flushing only multiplies states.
    Kind("flush", flush, ("broker",), _each_broker, "lossy_crashes"),
    Kind("crash", crash, ("broker", "lossy"),
         lambda s, cfg: ((b, lossy) for b in s.brokers for lossy in (False, True))),
    Kind("restart", restart, ("broker",), _each_broker),
    Kind("fence", fence, ("broker",), _each_broker),
    Kind("unfence", unfence, ("broker",), _each_broker),
    Kind("controlled_shutdown", controlled_shutdown, ("broker",), _each_broker, "shutdowns"),
    Kind("handle_controlled_shutdown", handle_controlled_shutdown, ("message", "keep"), _messages(ControlledShutdown),
         "shutdowns"),
    Kind("complete_shutdown", complete_shutdown, ("broker",), _each_broker, "shutdowns"),
    Kind("elect", elect, (), lambda s, cfg: iter([()])),
    Kind("move_leader", move_leader, ("target",), _each_broker),
    Kind("failover", failover, (), lambda s, cfg: iter([()])),
    Kind("zombie_move_leader", zombie_move_leader, ("zombie", "target"),
         lambda s, cfg: ((z, b) for z in range(len(s.zombies)) for b in s.brokers)),
    Kind("reassign", reassign, ("target",), _targets, "reassignments"),
    Kind("cancel_reassignment", cancel_reassignment, (),
         lambda s, cfg: iter([()] if s.registry.reassigning and s.used.cancels < cfg.cancels else []), "cancels"),
    Kind("consume", consume, ("broker", "offset"),
         lambda s, cfg: ((b, o) for b in s.brokers for o in range(s.replica(b).leo))),
    Kind("list_offsets", list_offsets, ("broker", "spec"), lambda s, cfg: ((b, "latest") for b in s.brokers),
         "list_offsets"),
    Kind("drop", drop, ("message",), lambda s, cfg: ((m,) for m in s.messages())),
    Kind("unclean_election", unclean_election, (), lambda s, cfg: iter([()]), "unclean_elections"),
)}


def _prune(s: State, p: Protocol) -> State:
    """Remove messages their recipient would refuse now (see the module docstring): the protocol's
    `partition_state_applies` and `accept_fetch_response` decide."""
    stale: set[Message] = set()
    for m in s.pool:
        if isinstance(m, (LeaderAndIsr, StopReplica)):
            if _control_refused(p, s.replica(m.to), m):
                stale.add(m)
        elif isinstance(m, FetchResponse) and not p.accept_fetch_response(s.replica(m.to), m):
            stale.add(m)
    return evolve(s, pool=s.pool - stale) if stale else s


def _record_history(before: State, after: State) -> State:
    """History variables that need the previous state: epochs seen, and who led each epoch. Values that did not
    change keep their objects (and an unchanged history stays the same object), so a successor shares them with
    its parent and the model adapter's encoding memo finds them."""
    h, reg, was = after.history, after.registry, before.registry
    changes: dict[str, Any] = {}
    old = h.max_broker_epochs
    maxima = tuple(max(m, r.leader_epoch) if (r.alive and r.known) else m
                   for m, r in zip(old, before.replicas, strict=True))
    if maxima != old:
        changes["max_broker_epochs"] = maxima
    if reg.leader != NO_LEADER and (reg.leader_epoch, reg.leader) not in h.epoch_leaders:
        changes["epoch_leaders"] = h.epoch_leaders | {(reg.leader_epoch, reg.leader)}
    if was.leader_epoch > h.max_leader_epoch:
        changes["max_leader_epoch"] = was.leader_epoch
    if was.written_by > h.max_written_by:
        changes["max_written_by"] = was.written_by
    if not reg.reassigning and (h.reassign_origin or h.reassign_seen):  # the reassignment is over
        changes["reassign_origin"] = changes["reassign_seen"] = frozenset()
    return evolve(after, history=evolve(h, **changes)) if changes else after


def apply(s: State, p: Protocol, cfg: Config, action: Action) -> State | None:
    """The state after `action`, or None if its guard is false in `s` (or the config rules its kind out)."""
    if not KINDS[action.kind].possible(cfg):
        return None
    if action.kind == "drop" and (not action.args or action.args[0] not in s.pool):
        return None
    if action.kind != "drop" and KINDS[action.kind].params[:1] == ("message",) and action.args[0] not in s.pool:
        return None
    after = KINDS[action.kind].fn(s, p, cfg, *action.args)
    if after is None:
        return None
    return settle(s, after, p, cfg)


def _kraft(after: State, p: Protocol, cfg: Config) -> State:
    """KRaft's end of a step: the registry change published as one batch, the bystanders (`Config.bystanders`)
    caught up with it, the log trimmed to its canonical form."""
    if not after.metadata:
        return after
    after = publish(after)
    end = len(after.metadata) - 1
    for b in cfg.bystanders:
        while after.replica(b).alive and after.replica(b).applied < end:
            after = apply_metadata(after, p, cfg, b) or after
    return _trim_metadata(after) if end else after


def settle(before: State, after: State, p: Protocol, cfg: Config) -> State:
    """What every step ends with once its kind's function returned `after`: the history variables that need
    the previous state, then the messages nobody would accept pruned, then (KRaft) the metadata batch
    (`apply` = kind function + this)."""
    return _kraft(_prune(_record_history(before, after), p), p, cfg)


def settler(before: State, p: Protocol, cfg: Config) -> Callable[[State], State]:
    """`lambda after: settle(before, after, p, cfg)` for many steps from one state, with what depends only on
    `before` computed once: the maxima `_record_history` takes over `before`'s epochs. No kind function writes
    the history's maxima, so a successor normally still holds `before`'s (checked by identity; anything else
    takes the general path).

    When `before` is itself settled (nothing to prune, publish, catch up or trim: true of every state a step
    produced, and checked once here), a successor repeats only the work its step can have made necessary, found
    by identity against `before`: `_prune` asks the protocol about the messages that are new or whose recipient's
    replica the step replaced (any other message got the same answer in `before`, where it was kept: the rules are
    functions of the replica and the message), and `_kraft` runs only when the registry, the metadata log, a
    bystander or a live replica's metadata position changed (otherwise there is nothing to publish or trim)."""
    checked = _accepted_by_recipient(before, p) if before.pool else {}
    if checked is None or not _settled_log(before, cfg):
        return lambda after: _kraft(_prune(_record_history(before, after), p), p, cfg)
    settling = _Settling(before, p, cfg, checked)

    def one(after: State) -> State:
        h = settling.history(after)
        todo = None if h is None else settling.rechecks(after)
        if h is None or todo is None:
            return settling.general(after)
        kraft, trim, suspects = todo
        stale = _refused(p, after.replicas, after.pool, suspects) if suspects else None
        return _settled_state(after, h, stale, kraft, trim, p, cfg)

    one.dropped = settling.dropped  # type: ignore[attr-defined]  # the model adapter's drops take it (one call a drop)
    return one


def _history_maxima(before: State) -> dict[str, Any]:
    """The history changes every successor of `before` gets (they depend on `before` only): the maxima
    `_record_history` takes over `before`'s epochs, leader epoch and writer."""
    bh, was, breps = before.history, before.registry, before.replicas
    base = bh.max_broker_epochs
    maxima = base
    for m, r in zip(base, breps, strict=True):
        if r.leader_epoch > m and r.alive and r.known:
            maxima = tuple(max(m, r.leader_epoch) if (r.alive and r.known) else m
                           for m, r in zip(base, breps, strict=True))
            break
    fixed: dict[str, Any] = {}
    if maxima is not base:
        fixed["max_broker_epochs"] = maxima
    if was.leader_epoch > bh.max_leader_epoch:
        fixed["max_leader_epoch"] = was.leader_epoch
    if was.written_by > bh.max_written_by:
        fixed["max_written_by"] = was.written_by
    return fixed


class _Settling:
    """What `settler` needs to settle a successor of one settled state `before`, computed once from it."""

    __slots__ = ("before", "p", "cfg", "checked", "fixed", "same", "same_h")

    def __init__(self, before: State, p: Protocol, cfg: Config, checked: dict[int, list[Message]]) -> None:
        self.before, self.p, self.cfg = before, p, cfg
        self.checked = checked  # the messages `_prune` asks about in `before`, by recipient (it kept them all)
        self.fixed = _history_maxima(before)
        # The changes for a successor that kept `before`'s registry and the history fields they read.
        self.same = self.changes_for(before.history, before.registry)
        self.same_h = evolve(before.history, **self.same) if self.same else before.history

    def general(self, after: State) -> State:
        """`settle(before, after, p, cfg)`, for a successor the shortcuts do not cover."""
        return _kraft(_prune(_record_history(self.before, after), self.p), self.p, self.cfg)

    def changes_for(self, h: History, reg: Registry) -> dict[str, Any]:
        """`_record_history`'s changes for a successor with history `h` and registry `reg`."""
        changes = self.fixed.copy()
        if reg.leader != NO_LEADER and (reg.leader_epoch, reg.leader) not in h.epoch_leaders:
            changes["epoch_leaders"] = h.epoch_leaders | {(reg.leader_epoch, reg.leader)}
        if not (reg.adding or reg.removing) and (h.reassign_origin or h.reassign_seen):
            changes["reassign_origin"] = changes["reassign_seen"] = frozenset()
        return changes

    def history(self, after: State) -> History | None:
        """The successor's history as `_record_history` leaves it, or None when its step wrote the history's
        maxima itself (the general path)."""
        bh, was = self.before.history, self.before.registry
        h, reg = after.history, after.registry
        if h is bh:
            if reg is was:
                return self.same_h
        elif (h.max_broker_epochs is not bh.max_broker_epochs or h.max_leader_epoch != bh.max_leader_epoch
                or h.max_written_by != bh.max_written_by):
            return None
        elif (reg is was and h.epoch_leaders is bh.epoch_leaders and h.reassign_origin is bh.reassign_origin
              and h.reassign_seen is bh.reassign_seen):
            return evolve(h, **self.same) if self.same else h
        changes = self.changes_for(h, reg)
        return evolve(h, **changes) if changes else h

    def rechecks(self, after: State) -> tuple[bool, bool, Any] | None:
        """What the step made necessary, found by identity against `before`: (publish and catch up the bystanders
        (`_kraft`), trim only (a live replica's metadata position moved, or a replica died or came back), the
        messages whose verdict may have changed (a list or a frozenset)); None when the replicas changed in
        number (the general path)."""
        before = self.before
        reps, breps = after.replicas, before.replicas
        kraft = after.registry is not before.registry or after.metadata is not before.metadata
        trim = False
        suspects: Any = ()
        if reps is not breps:
            if len(reps) != len(breps):
                return None
            watched, checked = self.cfg.bystanders, self.checked
            for r, q in zip(reps, breps, strict=True):
                if r is not q:
                    if r.alive != q.alive or r.applied != q.applied:
                        trim = True
                        if r.id in watched:
                            kraft = True
                    if r.id in checked:
                        suspects = [*suspects, *checked[r.id]]
        pool, bpool = after.pool, before.pool
        if pool is not bpool:
            new = pool - bpool
            if new:
                suspects = [*suspects, *new] if suspects else new
        return kraft, trim, suspects

    def dropped(self, m: Message) -> State:
        """`one(drop(before, p, cfg, m))` for a message of `before`'s pool, in one new state: the pool less `m`
        and the history of a successor that kept `before`'s history and registry; nothing else changed, so there
        is nothing to prune, publish or trim."""
        before = self.before
        if self.same_h is before.history:
            return evolve(before, pool=before.pool - {m})
        return evolve(before, pool=before.pool - {m}, history=self.same_h)


def _refused(p: Protocol, reps: tuple[Replica, ...], pool: frozenset[Message], suspects: Any) -> set[Message] | None:
    """The messages among `suspects` still in `pool` that their recipient would refuse now (`_prune`'s rules), or
    None."""
    stale = None
    m: Any
    for m in suspects:
        if m in pool:
            t = type(m)
            if t is FetchResponse:
                if not p.accept_fetch_response(reps[m.to - 1], m):
                    stale = {m} if stale is None else stale | {m}
            elif t is LeaderAndIsr or t is StopReplica:
                if _control_refused(p, reps[m.to - 1], m):
                    stale = {m} if stale is None else stale | {m}
    return stale


def _settled_state(after: State, h: History, stale: set[Message] | None, kraft: bool, trim: bool, p: Protocol,
                   cfg: Config) -> State:
    """The successor with its settled history `h`, without the `stale` messages, then published (`_kraft`) or
    trimmed as its step made necessary."""
    if h is not after.history:
        after = evolve(after, history=h, pool=after.pool - stale) if stale else evolve(after, history=h)
    elif stale:
        after = evolve(after, pool=after.pool - stale)
    meta = after.metadata
    if not meta:
        return after
    if kraft:
        return _kraft(after, p, cfg)
    # Nothing to publish (same registry and log as the settled `before`), no bystander moved: `_kraft` would only
    # trim.
    return _trimmed(after) if trim and len(meta) > 1 else after


def _trimmed(s: State) -> State:
    """`_trim_metadata(s)`, the trimmed log and replicas kept per log and replica objects (a function of them; the
    states `settler` sees share them): each entry holds its objects, so their ids name them while it lives."""
    meta, reps = s.metadata, s.replicas
    key = (id(meta), *map(id, reps))
    got = _TRIMMED.get(key)
    if got is None:
        t = _trim_metadata(s)
        if len(_TRIMMED) >= 8_000:
            _TRIMMED.clear()
        got = _TRIMMED[key] = (meta, reps, t.metadata, t.replicas)
    if got[2] is meta:
        return s
    return evolve(s, metadata=got[2], replicas=got[3])


_TRIMMED: dict[tuple[int, ...], tuple[tuple[MetadataRecord, ...], tuple[Replica, ...], tuple[MetadataRecord, ...],
                                      tuple[Replica, ...]]] = {}


def _accepted_by_recipient(s: State, p: Protocol) -> dict[int, list[Message]] | None:
    """The messages `_prune` asks about in `s`, by recipient, when it would remove none of them (else None)."""
    out: dict[int, list[Message]] = {}
    m: Any
    for m in s.pool:
        t = type(m)
        if t is FetchResponse:
            if not p.accept_fetch_response(s.replicas[m.to - 1], m):
                return None
        elif t is LeaderAndIsr or t is StopReplica:
            if _control_refused(p, s.replicas[m.to - 1], m):
                return None
        else:
            continue
        if m.to in out:
            out[m.to].append(m)
        else:
            out[m.to] = [m]
    return out


def _settled_log(s: State, cfg: Config) -> bool:
    """`_kraft(s) is s`: nothing to publish, no bystander behind, nothing to trim (always, in ZooKeeper mode)."""
    meta = s.metadata
    if not meta:
        return True
    last, reg = meta[-1].image, s.registry
    if reg is not last and _record_kind(last, reg):
        return False
    end = len(meta) - 1
    for b in cfg.bystanders:
        r = s.replicas[b - 1]
        if r.alive and r.applied < end:
            return False
    if end:
        live = [r.applied for r in s.replicas if r.alive]
        if not live or min(live) > 0:
            return False
    return True


def enabled(s: State, p: Protocol, cfg: Config, kind: str) -> list[tuple[Action, State]]:
    spec = KINDS[kind]
    out = []
    for args in spec.candidates(s, cfg):
        a = Action(kind, tuple(args))
        nxt = apply(s, p, cfg, a)
        if nxt is not None:
            out.append((a, nxt))
    return out


def successors(s: State, p: Protocol, cfg: Config) -> list[tuple[Action, State]]:
    out: list[tuple[Action, State]] = []
    for kind, spec in KINDS.items():
        if spec.possible(cfg):
            out.extend(enabled(s, p, cfg, kind))
    return out

