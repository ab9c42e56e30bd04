"""The request model's state: one producer session writing to one partition, over the replication model.

The partition (its replicas, logs, ISR, high watermarks, the controller and its metadata log, elections, crashes) is
a `kcheck.model.replication.State`, driven only through the replication model's own step functions. On top of it:

- the producer client (`Client`): its producer epoch, the next sequence, the last acknowledged sequence, the
  accumulator's queue, the batches the `TransactionManager` tracks as in flight, the requests on the wire in send
  order, the epoch bump it asked for, and its metadata view of the partition (leader and leader epoch);
- one connection per (client, broker) (`Connection`): the requests the broker has not read, the one it is serving
  (muted, parked in the purgatory as a `DelayedProduce`), and the responses the client has not read;
- each broker's producer-state entry for the one producer id (`Entry`: its epoch and the last cached batches);
- the log start offset, a discrete clock, fault budgets, and history variables (`History`) that only the
  invariants read.

A record of the replication log is one batch of one record: the table `State.records` maps a replication record
id to (batch id, producer epoch, sequence), so the replication model's `Record` stays as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kcheck.model.replication.state import State as RepState

INT_MAX = 2**31 - 1  # Integer.MAX_VALUE: where sequences wrap (DefaultRecordBatch.incrementSequence)
NO_SEQUENCE = -1  # RecordBatch.NO_SEQUENCE
NO_EPOCH = -1  # RecordBatch.NO_PRODUCER_EPOCH
NONE = "NONE"

# The error codes the model's brokers answer, by Kafka's `Errors` names.
NETWORK_EXCEPTION = "NETWORK_EXCEPTION"
NOT_LEADER = "NOT_LEADER_OR_FOLLOWER"
NOT_ENOUGH_REPLICAS = "NOT_ENOUGH_REPLICAS"
NOT_ENOUGH_AFTER_APPEND = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
REQUEST_TIMED_OUT = "REQUEST_TIMED_OUT"
OUT_OF_ORDER = "OUT_OF_ORDER_SEQUENCE_NUMBER"
INVALID_EPOCH = "INVALID_PRODUCER_EPOCH"
UNKNOWN_PRODUCER = "UNKNOWN_PRODUCER_ID"
STORAGE_ERROR = "KAFKA_STORAGE_ERROR"
DELIVERY_TIMEOUT = "DELIVERY_TIMEOUT"  # the client's own TimeoutException (delivery.timeout.ms), never on the wire

# Errors whose exception is a RetriableException (org.apache.kafka.common.errors): the Sender retries them.
RETRIABLE = frozenset({NETWORK_EXCEPTION, NOT_LEADER, NOT_ENOUGH_REPLICAS, NOT_ENOUGH_AFTER_APPEND, REQUEST_TIMED_OUT,
                       STORAGE_ERROR})
# Errors that do not say whether the batch was written (KAFKA-13574): the broker may have appended it.
INDEFINITE = frozenset({NETWORK_EXCEPTION, NOT_LEADER, NOT_ENOUGH_AFTER_APPEND, REQUEST_TIMED_OUT, DELIVERY_TIMEOUT})


@dataclass(frozen=True)
class Config:
    """The producer's settings and the search's bounds (budgets bound faults; healing steps are free)."""

    brokers: int = 2  # every broker holds a replica; broker 1 leads epoch 1
    min_isr: int = 1  # min.insync.replicas
    acks: str = "all"  # "all" (-1) or "1"
    idempotent: bool = True  # enable.idempotence
    max_in_flight: int = 2  # max.in.flight.requests.per.connection
    retries: int = 1  # retries (Kafka's default is Integer.MAX_VALUE; a bound here)
    batches: int = 2  # batches the application sends, one record each
    seq_max: int = INT_MAX  # the largest sequence before the wrap to 0 (reduced so a search reaches the wrap)
    drops: int = 1  # connections dropped
    elections: int = 1  # leader moves (the replication model's move_leader)
    crashes: int = 0  # broker crashes (process crash: the log survives)
    isr_shrinks: int = 0  # followers a leader drops from the ISR
    append_failures: int = 0  # appends that fail after the producer-state checks (an I/O error)
    delivery_timeouts: int = 0  # batches that reach delivery.timeout.ms in the accumulator
    log_start_moves: int = 0  # DeleteRecords to the high watermark
    expiries: int = 0  # producer-state entries removed by producer.id.expiration.ms
    max_clock: int = 0  # clock ticks (0: no clock, so no request times out in the purgatory)
    request_timeout: int = 1  # the produce request's TimeoutMs, in ticks
    max_leader_epoch: int = 3

    def __post_init__(self) -> None:
        if not 1 <= self.brokers <= 3:
            raise ValueError(f"brokers must be between 1 and 3, not {self.brokers}")
        if not 1 <= self.min_isr <= self.brokers:
            raise ValueError(f"min_isr must be between 1 and the broker count {self.brokers}, not {self.min_isr}")
        if self.acks not in ("all", "1"):
            raise ValueError(f"acks must be all or 1, not {self.acks!r}")
        if not 1 <= self.max_in_flight <= 5:
            raise ValueError(f"max_in_flight must be between 1 and 5, not {self.max_in_flight}")
        if not 1 <= self.batches <= 8:
            raise ValueError(f"batches must be between 1 and 8, not {self.batches}")
        if not 5 <= self.seq_max <= INT_MAX:  # a wrapped sequence must not meet one of the 5 cached batches
            raise ValueError(f"seq_max must be between 5 and {INT_MAX}, not {self.seq_max}")
        for name in ("retries", "drops", "elections", "crashes", "isr_shrinks", "append_failures",
                     "delivery_timeouts", "log_start_moves", "expiries", "max_clock"):
            if not 0 <= getattr(self, name) <= 8:
                raise ValueError(f"{name} must be between 0 and 8, not {getattr(self, name)}")
        if not 1 <= self.request_timeout <= 8:
            raise ValueError(f"request_timeout must be between 1 and 8, not {self.request_timeout}")
        if not 1 <= self.max_leader_epoch <= 8:
            raise ValueError(f"max_leader_epoch must be between 1 and 8, not {self.max_leader_epoch}")

    @property
    def appends(self) -> int:
        """The replication model's record budget: every attempt of every batch may append."""
        return self.batches * (self.retries + 1) + self.batches


@dataclass(frozen=True)
class Batch:
    """A ProducerBatch: its id (the application's send order), the sequence and epoch it was given when first
    drained (rewritten by an epoch bump), how often it was re-enqueued, and `sequenceHasBeenReset`."""

    id: int
    seq: int = NO_SEQUENCE
    epoch: int = NO_EPOCH
    attempts: int = 0
    reset: bool = False


@dataclass(frozen=True)
class Request:
    """A produce request on a connection: its correlation id, the batch, and the (epoch, sequence) it carries (what
    was on the wire when it was sent; an epoch bump rewrites the batch, not the bytes already sent)."""

    corr: int
    batch: int
    epoch: int
    seq: int


@dataclass(frozen=True)
class Response:
    corr: int
    batch: int
    error: str
    offset: int = -1  # the base offset of a success


@dataclass(frozen=True)
class Delayed:
    """A DelayedProduce: the request it answers, its required offset (last offset + 1), the offset it will answer
    with, and its deadline on the clock."""

    request: Request
    required: int
    offset: int
    deadline: int


@dataclass(frozen=True)
class Connection:
    """The client's connection to one broker: requests in FIFO order, the broker's one request in service (the
    channel is muted until its response is sent: `SocketServer`), responses in FIFO order."""

    requests: tuple[Request, ...] = ()
    serving: Delayed | None = None
    responses: tuple[Response, ...] = ()

    @property
    def idle(self) -> bool:
        return not self.requests and self.serving is None and not self.responses


@dataclass(frozen=True)
class Entry:
    """A broker's producer-state entry for the producer id (ProducerStateEntry): its epoch and the cached batches
    (first seq, last seq, first offset, last offset), oldest first."""

    epoch: int
    cached: tuple[tuple[int, int, int, int], ...] = ()

    @property
    def last_seq(self) -> int:
        return self.cached[-1][1] if self.cached else NO_SEQUENCE


@dataclass(frozen=True)
class Client:
    """The producer: Sender, RecordAccumulator, TransactionManager (idempotent, not transactional), Metadata."""

    epoch: int = 0
    next_seq: int = 0
    last_acked: int = -1  # TxnPartitionEntry.lastAckedSequence
    batches: tuple[Batch, ...] = ()  # every batch the application sent, by id
    queue: tuple[int, ...] = ()  # the accumulator's deque for the partition, head first
    tracked: tuple[int, ...] = ()  # TxnPartitionEntry.inflightBatchesBySequence (ids; ordered by sequence on use)
    wire: tuple[tuple[int, int], ...] = ()  # (broker, correlation id) of every request in flight, in send order
    bump: bool = False  # epochBumpRequired (for this partition: partitionsToRewriteSequences)
    leader: int = 1  # the metadata view: the partition's leader ...
    leader_epoch: int = 1  # ... and the leader epoch it came with
    corr: int = 0  # the next correlation id


@dataclass(frozen=True)
class History:
    """What happened, for the invariants only (never read by a step)."""

    acked: frozenset[tuple[int, int]] = frozenset()  # (batch, offset) answered NONE and taken by the client
    failed: frozenset[tuple[int, str]] = frozenset()  # (batch, error) the application was told
    errors: frozenset[tuple[int, str]] = frozenset()  # (batch, error) of every error response the client read
    max_client_epoch: int = 1  # the largest leader epoch the client's metadata held
    flags: frozenset[tuple[str, str]] = frozenset()  # (invariant, message) of a wrong answer seen in a step


@dataclass(frozen=True)
class Used:
    drops: int = 0
    append_failures: int = 0
    delivery_timeouts: int = 0
    log_start_moves: int = 0
    expiries: int = 0


@dataclass(frozen=True)
class State:
    rep: RepState
    client: Client
    conns: tuple[Connection, ...]  # index b - 1: the client's connection to broker b
    entries: tuple[Entry | None, ...]  # index b - 1: broker b's entry for the producer id
    records: tuple[tuple[int, int, int], ...] = ()  # replication record id r -> index r - 1: (batch, epoch, seq)
    log_start: int = 0
    clock: int = 0
    used: Used = field(default_factory=Used)
    history: History = field(default_factory=History)

    def conn(self, broker: int) -> Connection:
        return self.conns[broker - 1]

    def batch_of(self, record_id: int) -> int:
        return self.records[record_id - 1][0]
