"""The transactions model's state: producer instances of one transactional id, its coordinator, two data partitions.

- `Producer`: one instance of the transactional producer (Java's `TransactionManager`): the producer id and epoch
  its InitProducerId gave, where it is in its transaction, the partitions it added (TV1's AddPartitionsToTxn), wrote
  and still waits on, and its next sequence per partition. Two instances share the transactional id: the second's
  InitProducerId fences the first.
- `Meta`: the coordinator's `TransactionMetadata` of the transactional id, frozen (the fields
  `kcheck.reference.txn_metadata.TxnMetadata` has), with the coordinator epoch and the last record written to
  `__transaction_state`, which a failover reloads (`TransactionStateManager.loadTransactionsForTxnTopicPartition`).
- `Part`: one data partition's leader log with its producer state and transaction index, frozen (the fields of
  `kcheck.reference.transaction_index.TxnLog`). The partition is a single leader whose high watermark is its log
  end: replication is abstracted away (the request model composes with it); what is checked here is what the
  producer state, the coordinator and the markers decide.
- `Msg`: a message in flight: a produce request, a WriteTxnMarkers entry, a leader's verification and its answer, the
  client's InitProducerId, EndTxn and (TV1) AddPartitionsToTxn and their answers. The messages are a bag
  (`State.bag`, sorted): any one may be delivered next (delay is any order), and a bounded number of requests may be
  copied (a duplicate) or delivered with the answer lost (a retry).
- `History`: what happened, read only by the invariants: which transactions the coordinator committed or aborted,
  which instances were fenced, the transaction of every data batch in each log, flags raised in a step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# TransactionState's ids, as `__transaction_state` records hold them (TransactionState.java / .scala)
EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, DEAD, PREPARE_EPOCH_FENCE = range(8)
STATE_NAMES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
               "PrepareEpochFence")
NO_PRODUCER_ID = -1
NO_EPOCH = -1
PRODUCER_ID = 1000  # the producer id the coordinator's ProducerIdManager hands the transactional id
TIMEOUT_MS = 60_000  # transaction.timeout.ms (the timeout itself is a budgeted action, not a clock)

Tag = tuple[int, int]  # (producer instance, its transaction number from 1): what a write or a marker belongs to


@dataclass(frozen=True)
class Config:
    """The search's bounds."""

    instances: int = 1  # producer instances sharing the transactional id (the second fences the first)
    txns: int = 2  # transactions each instance may begin
    partitions: int = 2  # data partitions (a transaction writes at most once to each)
    duplicates: int = 1  # messages copied, or delivered with the answer lost (then retried)
    client_timeouts: int = 1  # produce requests a client stops waiting for (request.timeout.ms), left in flight
    txn_timeouts: int = 0  # transactions the coordinator aborts as timed out (abortTimedOutTransactions)
    failovers: int = 0  # coordinator failovers (a new coordinator epoch reloads the transaction log)
    append_failures: int = 0  # __transaction_state appends that fail (the pending state cleared, the request refused)

    def __post_init__(self) -> None:
        for name, low, high in (("instances", 1, 2), ("txns", 1, 3), ("partitions", 1, 2), ("duplicates", 0, 3),
                                ("client_timeouts", 0, 3), ("txn_timeouts", 0, 2), ("failovers", 0, 2),
                                ("append_failures", 0, 2)):
            v = getattr(self, name)
            if not low <= v <= high:
                raise ValueError(f"{name} must be between {low} and {high}, not {v}")


@dataclass(frozen=True)
class Meta:
    """TransactionMetadata's fields (kcheck.reference.txn_metadata.TxnMetadata's constructor order)."""

    producer_id: int = PRODUCER_ID
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    epoch: int = NO_EPOCH
    last_epoch: int = NO_EPOCH
    timeout_ms: int = TIMEOUT_MS
    state: int = EMPTY
    partitions: frozenset[int] = frozenset()
    start: int = -1
    update: int = 0
    tv: int = 0
    has_failed_epoch_fence: bool = False


@dataclass(frozen=True)
class Coordinator:
    meta: Meta = field(default_factory=Meta)
    epoch: int = 0  # the coordinator epoch (the __transaction_state partition's leader epoch)
    record: Meta | None = None  # the last record written for the transactional id
    # the transit being appended to __transaction_state (TxnTransitMetadata as a record; its state is the metadata's
    # pending state) and what the coordinator does once the append is answered (`TransactionsSystem._appended`)
    transit: Meta | None = None
    then: tuple[Any, ...] | None = None
    owner: Tag | None = None  # ghost: the client transaction the metadata's current transaction is (for labels)


@dataclass(frozen=True)
class Producer:
    pid: int = NO_PRODUCER_ID
    epoch: int = NO_EPOCH
    # new (no InitProducerId yet), ready, txn, abortable, ending (its EndTxn unanswered), bump (InitProducerId to bump
    # its epoch due: Java's INITIALIZING after an abort), fenced, failed (a fatal error, INVALID_TXN_STATE)
    phase: str = "new"
    txn: int = 0  # transactions begun; the current one's number while in one
    added: frozenset[int] = frozenset()  # partitions AddPartitionsToTxn added (TV1)
    adding: frozenset[int] = frozenset()  # partitions whose AddPartitionsToTxn is unanswered (TV1)
    bump: bool = False  # the epoch is bumped after this transaction's abort (KIP-360's epochBumpRequired)
    written: frozenset[int] = frozenset()  # partitions written in the current transaction
    waiting: frozenset[int] = frozenset()  # partitions whose produce the client still waits on
    seqs: tuple[int, ...] = (0, 0)  # the next sequence per partition (TxnPartitionEntry)
    init: bool = False  # its InitProducerId is in flight, unanswered (phase new or bump)


@dataclass(frozen=True)
class Msg:
    """A produce request (kind "produce": one transactional batch of one record), one partition's entry of a
    WriteTxnMarkers request (kind "marker": `commit`, the coordinator epoch it was sent under, the transaction
    version), a produce held by its leader while AddPartitionsToTxnManager asks the coordinator (kind "verify":
    the request, `guard` naming the verification entry it made) and the coordinator's answer (kind "verified", with
    `error`), the client's EndTxn (kind "end": `commit`, `tv`; partition -1) and its answer (kind "ended": `error`,
    `epoch` the epoch the answer carries, -1 for none), the TV1 client's AddPartitionsToTxn (kind "add") and its
    answer (kind "added"), and its InitProducerId (kind "init": partition -1, the producer id and epoch it expects,
    -1 for none; tag the instance and the transactions it has begun) and the answer (kind "inited": the producer id
    and epoch given, `error`). `lost`: the request's answer is lost (the sender retries a copy); `leader_lost` (a
    verification only): the coordinator's answer to the leader is lost."""

    kind: str
    partition: int
    producer_id: int
    epoch: int
    tag: Tag
    seq: int = -1
    commit: bool = False
    coordinator_epoch: int = -1
    tv: int = 0
    guard: int = -1
    error: str = ""
    lost: bool = False
    leader_lost: bool = False


@dataclass(frozen=True)
class Entry:
    """ProducerStateEntry: epoch, coordinator epoch, last timestamp, the open transaction's first offset, cached
    batches as (last seq, last offset, offset delta, timestamp)."""

    producer_id: int
    epoch: int
    coordinator_epoch: int
    last_timestamp: int
    txn_first_offset: int | None
    batches: tuple[tuple[int, int, int, int], ...]


@dataclass(frozen=True)
class Batch:
    """A batch in a partition's log (LogBatch's fields); `marker` is the coordinator epoch of a control batch."""

    offset: int
    producer_id: int
    epoch: int
    seq: int
    marker: int | None = None
    commit: bool = False


@dataclass(frozen=True)
class Part:
    """A partition leader's log: its batches, producer entries, verification entries (producer id, timestamp, lowest
    sequence, epoch, supports epoch bump), ongoing transactions (first offset, producer id) and aborted-transaction
    index (producer id, first offset, last offset, last stable offset)."""

    batches: tuple[Batch, ...] = ()
    entries: tuple[Entry, ...] = ()
    verification: tuple[tuple[int, int, int, int, bool], ...] = ()
    ongoing: tuple[tuple[int, int], ...] = ()
    aborted: tuple[tuple[int, int, int, int], ...] = ()

    @property
    def log_end(self) -> int:
        return len(self.batches)


@dataclass(frozen=True)
class History:
    committed: frozenset[Tag] = frozenset()  # transactions the coordinator wrote PrepareCommit for
    aborted: frozenset[Tag] = frozenset()  # transactions the coordinator wrote PrepareAbort for
    fenced: frozenset[int] = frozenset()  # instances a newer epoch fenced (a second instance, a timeout)
    tags: tuple[tuple[Tag | None, ...], ...] = ((), ())  # per partition, per offset: the data batch's transaction
    flags: frozenset[tuple[str, str]] = frozenset()  # (invariant, message) of a wrong step seen as it happened


@dataclass(frozen=True)
class Used:
    duplicates: int = 0
    client_timeouts: int = 0
    txn_timeouts: int = 0
    failovers: int = 0
    append_failures: int = 0


@dataclass(frozen=True)
class State:
    producers: tuple[Producer, ...]
    coordinator: Coordinator
    parts: tuple[Part, ...]
    bag: tuple[Msg, ...] = ()  # sorted: a bag, so the order of sends is not state
    used: Used = field(default_factory=Used)
    history: History = field(default_factory=History)


def initial_state(cfg: Config) -> State:
    seqs = (0,) * cfg.partitions
    return State(tuple(Producer(seqs=seqs) for _ in range(cfg.instances)), Coordinator(),
                 tuple(Part() for _ in range(cfg.partitions)),
                 history=History(tags=((),) * cfg.partitions))
