"""The replication model's state: one partition, its replicas on brokers 1..n, its controller and history.

Everything is immutable and hashable, so the exhaustive explorer can put states in a set and the
Hypothesis explorer can keep every state of a trace. Broker ids are 1..n. The controller's registry
holds the replica set in Kafka's order (the preferred leader first): brokers 1..RF at the start, every
broker by default. A partition reassignment (KRaft's `PartitionReassignmentReplicas`) grows it to the
target plus the replicas being removed, with `adding` and `removing` beside it, and shrinks it to the
target when the reassignment completes; a broker outside the replica set holds no log.

What is modelled, after the published TLA+ models of Kafka replication (hachikuji's kafka-specification,
Vanlightly's kafka-tlaplus):
- a broker's *belief* (leader, leader epoch, ISR from the last LeaderAndIsr / metadata update it
  applied) is kept apart from the controller's registry, so a zombie may act as a leader it no
  longer is;
- every record carries a unique id and the leader epoch it was written in, so "same offset,
  different record" is visible;
- the flushed prefix of each log is what survives a lossy unclean shutdown (power loss);
- in KRaft mode the controller's decisions are a metadata log (`MetadataRecord` batches) each broker applies in
  order at its own pace (Vanlightly's KRaft specs deliver metadata the same way); in ZooKeeper mode they are
  LeaderAndIsr and StopReplica requests;
- messages (Fetch, AlterPartition, their responses, and the ZooKeeper-era requests) sit in an unordered pool and
  may be delivered in any order, duplicated or dropped;
- history variables (acknowledged and committed records, what consumers read, the leaders of each
  epoch) define correctness, not the protocol's own state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NO_LEADER = -1
ACKS = ("all", "1", "0")


def evolve(obj: Any, **changes: Any) -> Any:
    """`dataclasses.replace` for the model's frozen values, without re-running `__init__`.

    The explorers build millions of states; `replace` spends most of a step re-validating fields.
    These classes have no `__post_init__`, so copying the field dict is the same value.
    """
    new = _new(obj.__class__)
    fields_ = obj.__dict__.copy()  # dict.copy and the bound builtins: half the cost of dict(...) and lookups
    fields_.update(changes)
    _setattr(new, "__dict__", fields_)
    return new


_new, _setattr = object.__new__, object.__setattr__


def new_value(cls: type, **fields: Any) -> Any:
    """`cls(**fields)` for one of the model's frozen value classes, without running `__init__` (as `evolve`): every
    field must be given, in declaration order (the dict `__init__` would build). Steps build a message per step;
    the generated `__init__` sets each field through `object.__setattr__`."""
    new: Any = _new(cls)
    _setattr(new, "__dict__", fields)
    return new


@dataclass(frozen=True, order=True)
class Record:
    id: int  # unique over the whole run: record 3 is "x3"
    epoch: int  # the leader epoch it was appended in

    def __str__(self) -> str:
        return f"x{self.id}/{self.epoch}"


def epoch_cache(log: tuple[Record, ...]) -> tuple[tuple[int, int], ...]:
    """Kafka's leader-epoch cache of a log: (epoch, start offset) for every epoch that wrote a record.

    Kafka keeps this as a checkpoint file beside the log; here it is derived from the log, so it can
    never disagree with it (Kafka truncates the cache with the log for the same reason).
    """
    out: list[tuple[int, int]] = []
    for offset, rec in enumerate(log):
        if not out or rec.epoch > out[-1][0]:
            out.append((rec.epoch, offset))
    return tuple(out)


@dataclass(frozen=True)
class Replica:
    """One broker and its replica of the partition."""

    id: int  # the broker id, 1..n
    alive: bool = True  # False between a crash and the restart
    broker_epoch: int = 1  # bumped at every registration (restart)
    clean_shutdown: bool = True  # False after a crash (kill or power loss), until the broker registers again
    log: tuple[Record, ...] = ()  # the records, offset 0 first; each knows the leader epoch it was appended in
    flushed: int = 0  # records [0, flushed) are on disk and survive a lossy crash
    hw: int = 0  # local high watermark (exclusive)
    # What the broker believes, from the newest LeaderAndIsr it applied.
    known: bool = True  # False between a restart and the first state it applies
    leader: int = NO_LEADER  # the leader it believes in (NO_LEADER: none)
    leader_epoch: int = 0  # the leader epoch it believes current
    partition_epoch: int = 0  # the partition epoch of the state it applied
    isr: frozenset[int] = frozenset()  # the ISR it believes committed (a leader's own last committed ISR)
    controller_epoch: int = 0  # newest controller epoch it has seen
    needs_truncation: bool = False  # became follower; must truncate before fetching
    replicas: tuple[int, ...] = ()  # the partition's replica set, as the broker last learned it
    # Leader only: the leader's view of each follower (Kafka's `Replica` state in `Partition.remoteReplicasMap`), from
    # its last fetch; `Protocol.leader_keeps_follower_state` says what a new leader epoch keeps.
    follower_leo: tuple[tuple[int, int], ...] = ()  # (follower, fetch offset), sorted
    follower_broker_epoch: tuple[tuple[int, int], ...] = ()  # (follower, broker epoch sent in its fetch)
    epoch_start: int = 0  # leader's LEO when it became leader of leader_epoch
    pending_isr: frozenset[int] | None = None  # AlterPartition in flight (the "maximal ISR" part)
    # KRaft: the index in `State.metadata` of the last batch this broker applied (its metadata image).
    applied: int = 0
    # AlterPartition as `Partition` and `AlterPartitionManager` keep it (`request_key`: leader epoch, partition epoch,
    # ISR, broker epochs). `sent`: the request of the leader's pending ISR state (PendingExpandIsr/PendingShrinkIsr's
    # sentLeaderAndIsr; set iff `pending_isr` is); new partition state resets it. `in_flight`: the request the
    # broker's AlterPartitionManager holds until an answer to it is handled, new partition state or not; while it
    # holds one, a new proposal fails at once (OPERATION_NOT_ATTEMPTED) and changes nothing.
    sent: tuple[Any, ...] | None = None
    in_flight: tuple[Any, ...] | None = None
    # Leader only: the followers whose fetch it recorded in its current leader epoch (a kept view may be older).
    fetched: frozenset[int] = frozenset()
    # This process asked to shut down (its ControlledShutdown request or heartbeat's wantShutDown); a new process
    # starts without it, whatever the controller still holds for an older one.
    shutdown_asked: bool = False

    @property
    def leo(self) -> int:
        """The log end offset: the offset the next record gets."""
        return len(self.log)

    @property
    def is_leader(self) -> bool:
        """Believes it leads (a zombie leader too)."""
        return self.alive and self.known and self.leader == self.id

    @property
    def last_epoch(self) -> int:
        """The leader epoch of the last record (0 for an empty log)."""
        return self.log[-1].epoch if self.log else 0

    @property
    def hosts(self) -> bool:
        """Holds a replica of the partition, as far as the broker knows."""
        return self.id in self.replicas

    def view_of(self, follower: int) -> int | None:
        """A leader's view of a follower: the offset of its last fetch in this leader epoch (None: no fetch yet)."""
        for f, leo in self.follower_leo:  # sorted by follower, one entry each: no dict needed
            if f == follower:
                return leo
        return None

    def fetched_in_epoch(self, follower: int) -> bool:
        """Whether the leader recorded a fetch of `follower` in its current leader epoch (its view may be older)."""
        return follower in self.fetched

    def with_view(self, follower: int, leo: int, broker_epoch: int) -> Replica:
        """This replica with a follower's fetch recorded (offset and broker epoch, in this leader epoch)."""
        leos = dict(self.follower_leo)
        leos[follower] = leo
        epochs = dict(self.follower_broker_epoch)
        epochs[follower] = broker_epoch
        fetched = self.fetched if follower in self.fetched else self.fetched | {follower}
        return evolve(self, follower_leo=tuple(sorted(leos.items())),
                       follower_broker_epoch=tuple(sorted(epochs.items())), fetched=fetched)

    def keeping_views(self, keep: Any) -> Replica:
        """This replica with only the views of the followers `keep(follower)` is true for."""
        leos = tuple(x for x in self.follower_leo if keep(x[0]))
        epochs = tuple(x for x in self.follower_broker_epoch if keep(x[0]))
        fetched = frozenset(b for b in self.fetched if keep(b))
        if (len(leos), len(epochs), len(fetched)) == (len(self.follower_leo), len(self.follower_broker_epoch),
                                                      len(self.fetched)):
            return self
        return evolve(self, follower_leo=leos, follower_broker_epoch=epochs, fetched=fetched)

    def truncated(self, offset: int) -> Replica:
        """This replica with its log cut at `offset` (high watermark and flushed prefix bounded by it)."""
        offset = max(0, min(offset, self.leo))
        return evolve(self, log=self.log[:offset], flushed=min(self.flushed, offset), hw=min(self.hw, offset))


@dataclass(frozen=True)
class Registry:
    """What the controller persisted (ZooKeeper znodes / the KRaft metadata log) for the partition."""

    controller_epoch: int = 1  # the active controller's epoch (ZK: /controller_epoch)
    leader: int = NO_LEADER  # the partition's leader (NO_LEADER: none)
    leader_epoch: int = 0  # bumped when the leader changes (and when the replica set loses a member)
    partition_epoch: int = 0  # ZK: the znode version; KRaft: PartitionRecord's partition epoch
    isr: frozenset[int] = frozenset()  # the committed ISR
    elr: frozenset[int] = frozenset()  # eligible leader replicas (KIP-966), empty unless those rules are on
    written_by: int = 1  # controller epoch stored with the partition state (ZK: LeaderAndIsr znode)
    fenced: frozenset[int] = frozenset()  # broker registrations the controller fenced
    broker_epochs: tuple[int, ...] = ()  # the controller's registration epoch of each broker
    # The assignment (KRaft's PartitionRegistration: replicas, addingReplicas, removingReplicas).
    replicas: tuple[int, ...] = ()  # RS in Kafka's order; during a reassignment the target first, then removing
    adding: tuple[int, ...] = ()  # AR, ascending (KRaft builds it in a TreeSet)
    removing: tuple[int, ...] = ()  # RR, ascending
    # KIP-966's last known leader (KRaft's lastKnownElr, which then has one member): who led when the
    # partition lost its leader; NO_LEADER when none is remembered.
    last_known_leader: int = NO_LEADER
    # Brokers in controlled shutdown (KRaft's `BrokerRegistration.inControlledShutdown`).
    shutting_down: frozenset[int] = frozenset()

    @property
    def reassigning(self) -> bool:
        """`PartitionReassignmentReplicas.isReassignmentInProgress`: adding or removing is non-empty."""
        return bool(self.adding or self.removing)

    @property
    def target(self) -> tuple[int, ...]:
        """TRS: the replica set minus the replicas being removed (KRaft keeps no separate target)."""
        return tuple(b for b in self.replicas if b not in self.removing)

    @property
    def origin(self) -> tuple[int, ...]:
        """ORS as a new controller derives it: the replica set minus the replicas being added (the set a
        cancel reverts to; `PartitionReassignmentRevert`). Kafka does not keep the original order."""
        return tuple(b for b in self.replicas if b not in self.adding)


@dataclass(frozen=True)
class MetadataRecord:
    """One batch of KRaft's metadata log: the records one controller operation appended (`kind` names their
    types, joined by "+") and `image`, the controller's registry once the batch is applied. A broker applies
    batches in log order, so what it believes is always the image of some prefix of the log
    (`MetadataLoader` publishes a new image per committed batch)."""

    kind: str
    image: Registry


@dataclass(frozen=True)
class ZombieController:
    """A controller that lost its epoch but does not know it yet (GC pause, lost ZK session)."""

    epoch: int
    view: Registry  # its last view of the partition, never refreshed


# ---- messages -------------------------------------------------------------------------------

@dataclass(frozen=True, order=True)
class LeaderAndIsr:
    """Controller -> broker: LeaderAndIsr (ZK) or the partition change record (KRaft)."""

    to: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...] = ()  # the replica set the record names (KRaft brokers learn it from the metadata)
    # ZooKeeper mode: the recipient's broker epoch as the controller registered it when it queued the request
    # (KIP-380's `brokerEpoch`, Kafka 2.2 on); -1 = none (a KRaft metadata record, or a request built by hand).
    broker_epoch: int = -1

    kind = "LeaderAndIsr"


@dataclass(frozen=True, order=True)
class StopReplica:
    """Controller -> a broker taken out of the replica set: stop fetching and delete the log.

    ZooKeeper's controller sends StopReplica(delete=true); a KRaft broker does the same when the
    metadata record no longer lists it (`ReplicaManager.applyDelta`: the partition is among the deletes).
    The epochs let the broker ignore it behind a newer LeaderAndIsr that adds the broker back; `broker_epoch` is
    the recipient's as the controller registered it (KIP-380), as on LeaderAndIsr.
    """

    to: int
    controller_epoch: int
    leader_epoch: int
    partition_epoch: int
    broker_epoch: int = -1

    kind = "StopReplica"


@dataclass(frozen=True, order=True)
class FetchRequest:
    frm: int  # follower
    to: int  # the leader it believes in
    offset: int  # the follower's log end offset
    current_epoch: int  # the follower's believed leader epoch (sent only when the rules say so)
    broker_epoch: int

    kind = "Fetch"


@dataclass(frozen=True, order=True)
class FetchResponse:
    to: int
    frm: int
    offset: int  # the fetch offset it answers
    follower_epoch: int  # the follower's leader epoch when it sent the request
    records: tuple[Record, ...]
    hw: int
    error: str = ""

    kind = "FetchResponse"


@dataclass(frozen=True, order=True)
class AlterPartition:
    """Leader -> controller: AlterIsr / AlterPartition."""

    frm: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    # KIP-903: (member, broker epoch the leader saw in its fetches) for every proposed ISR member
    broker_epochs: tuple[tuple[int, int], ...] = ()

    kind = "AlterPartition"


def request_key(m: AlterPartition) -> tuple[Any, ...]:
    """What tells one AlterPartition from another (Kafka's `LeaderAndIsr.equals` over the sent request: leader, leader
    epoch, partition epoch, ISR with broker epochs; the leader is the sender, so it is left out)."""
    return (m.leader_epoch, m.partition_epoch, m.isr, m.broker_epochs)


@dataclass(frozen=True, order=True)
class AlterPartitionResponse:
    to: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    error: str = ""
    request: tuple[Any, ...] = ()  # `request_key` of the request it answers (the sender's callback holds it)

    kind = "AlterPartitionResponse"


@dataclass(frozen=True, order=True)
class ControlledShutdown:
    """Broker -> controller: stop me cleanly. ZooKeeper mode's ControlledShutdownRequest (v2+ carries the sender's
    broker epoch, KIP-380); KRaft's BrokerHeartbeat with wantShutDown, which always carries it. A request the dead
    process sent may still reach the controller after the broker is back (a retry, or bytes already on the wire)."""

    frm: int
    broker_epoch: int

    kind = "ControlledShutdown"


Message = (LeaderAndIsr | StopReplica | FetchRequest | FetchResponse | AlterPartition | AlterPartitionResponse
           | ControlledShutdown)
MESSAGE_TYPES: dict[str, type[Message]] = {t.kind: t for t in (LeaderAndIsr, StopReplica, FetchRequest, FetchResponse,
                                                      AlterPartition, AlterPartitionResponse, ControlledShutdown)}


def message_key(m: Message) -> tuple[Any, ...]:
    """A total order over messages of different types (the pool is listed in this order)."""
    return (m.kind, m)


def message_as_dict(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"type": m.kind}
    for name in m.__dataclass_fields__:
        value = getattr(m, name)
        if name == "records":
            value = [[r.id, r.epoch] for r in value]
        elif isinstance(value, tuple):
            value = list(value)
        out[name] = value
    return out


def _tuples(value: Any) -> Any:
    return tuple(_tuples(x) for x in value) if isinstance(value, list) else value


def message_from_dict(d: dict[str, Any]) -> Message:
    cls = MESSAGE_TYPES[d["type"]]
    kwargs = {}
    for name in cls.__dataclass_fields__:
        if name not in d and name in ("request", "broker_epoch"):  # a trace written by an older kcheck: the default
            continue
        value = d[name]
        if name == "records":
            value = tuple(Record(int(i), int(e)) for i, e in value)
        else:
            value = _tuples(value)
        kwargs[name] = value
    return cls(**kwargs)


# ---- history --------------------------------------------------------------------------------

@dataclass(frozen=True)
class History:
    """What happened, for the invariants: never read by the protocol itself."""

    acked: frozenset[tuple[int, int]] = frozenset()  # (offset, record id) acknowledged with acks=all
    acked_leader_only: frozenset[tuple[int, int]] = frozenset()  # acks=1: Kafka may lose these
    pending_acks: frozenset[tuple[int, int, int]] = frozenset()  # (leader, offset, record id), acks=all
    committed: frozenset[tuple[int, int]] = frozenset()  # exposed below a leader's high watermark
    true_hw: int = 0  # the highest high watermark any leader exposed
    reads: frozenset[tuple[int, int]] = frozenset()  # (offset, record id) a consumer read
    epoch_leaders: frozenset[tuple[int, int]] = frozenset()  # (leader epoch, leader) the registry held
    max_leader_epoch: int = 0  # highest leader epoch the registry held before this state
    max_written_by: int = 0  # highest controller epoch that wrote the partition state before this state
    max_broker_epochs: tuple[int, ...] = ()  # highest leader epoch each broker believed before this state
    lossy_crashes: int = 0
    # Reassignment, while one is in flight: the replica set before its first request, and the union of the
    # replica sets every request of the chain found (a request on top of an in-flight one starts from the
    # full replica set, KRaft's `changePartitionReassignment`).
    reassign_origin: frozenset[int] = frozenset()
    reassign_seen: frozenset[int] = frozenset()
    # Every completed reassignment: (TRS, the ISR the controller completed it with, then RS, AR, RR written).
    completions: frozenset[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...],
                                 tuple[int, ...]]] = frozenset()
    # What clients saw (only while `Config.list_offsets` > 0 turns the clients' view on): the largest answer to
    # ListOffsets LATEST, the largest high watermark a consumer's fetch response carried, the newest leader epoch
    # the ListOffsets client has seen (its requests carry it, KIP-320), and every answer below an earlier one:
    # (kind "latest" or "fetch_hw", largest seen before, answer now).
    latest_seen: int = 0
    fetch_hw_seen: int = 0
    client_epoch: int = 0
    offset_regressions: frozenset[tuple[str, int, int]] = frozenset()


@dataclass(frozen=True)
class Budget:
    """Faults used so far; healing actions (fetch, unfence, restart, flush, ...) are never counted."""

    crashes: int = 0
    lossy_crashes: int = 0
    fences: int = 0  # fencing a live broker (a missed heartbeat / expired session)
    elections: int = 0  # leader moves a live leader did not ask for (preferred election, zombie controller)
    isr_shrinks: int = 0  # a leader dropping a follower it considers slow
    failovers: int = 0  # controller failovers (the old controller may live on as a zombie)
    reassignments: int = 0  # AlterPartitionReassignments requests (an operator's)
    cancels: int = 0  # AlterPartitionReassignments cancelling the one in flight
    records: int = 0
    reads: int = 0
    list_offsets: int = 0  # ListOffsets requests a client sent (not a fault: a bound on the clients' view)
    shutdowns: int = 0  # controlled shutdowns an operator started
    unclean_elections: int = 0  # an operator's unclean elections (Kafka promises no durability past one)


@dataclass(frozen=True)
class State:
    replicas: tuple[Replica, ...]  # index i holds broker i + 1
    registry: Registry
    zombies: tuple[ZombieController, ...] = ()
    pool: frozenset[Message] = frozenset()
    history: History = field(default_factory=History)
    used: Budget = field(default_factory=Budget)
    # KRaft: the controller's metadata log, from the oldest batch a live broker still stands on (batches every live
    # broker has applied are dropped, and the brokers' `applied` indexes shifted, so equal clusters are equal
    # states). Empty in ZooKeeper mode.
    metadata: tuple[MetadataRecord, ...] = ()

    def replica(self, broker: int) -> Replica:
        return self.replicas[broker - 1]

    @property
    def brokers(self) -> range:
        return range(1, len(self.replicas) + 1)

    def with_replica(self, r: Replica) -> State:
        reps = list(self.replicas)
        reps[r.id - 1] = r
        return evolve(self, replicas=tuple(reps))

    def messages(self) -> list[Message]:
        return sorted(self.pool, key=message_key)
