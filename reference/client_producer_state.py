"""The idempotent producer's sequence bookkeeping on the client, bit-exact: epoch bumps, retries, unresolved sequences.

Mirrors kafka-clients' `org.apache.kafka.clients.producer.internals` (clients/src/main/java/org/apache/kafka/clients/
producer/internals/ in apache/kafka) for a non-transactional idempotent producer:

- `TransactionManager.java`: the producer id and epoch, `canRetry`, `handleCompletedBatch`, `handleFailedBatch`,
  `markSequenceUnresolved` / `hasUnresolvedSequence(s)` / `maybeResolveSequences`,
  `requestIdempotentEpochBumpForPartition` (`requestEpochBumpForPartition` in 3.9), `bumpIdempotentProducerEpoch`,
  `bumpIdempotentEpochAndResetIdIfNeeded` (a new producer id through InitProducerId once the epoch is
  Short.MAX_VALUE) and `maybeUpdateProducerIdAndEpoch`: the lazy per-partition reset to sequence 0 after a bump, when
  the partition's own in-flight batches of the old epoch have all completed (KAFKA-12152, 2.8.0 / 3.0.0);
- `TxnPartitionMap.java` / `TxnPartitionEntry.java`: per partition the epoch its sequences belong to, the next
  sequence, the last acknowledged sequence and offset, and the in-flight batches in a TreeSet ordered by (producer
  id, epoch, base sequence): two batches with the same three are one entry, and removing a batch removes whichever
  batch has its key (apache/kafka#12096);
- the calls `RecordAccumulator.drainBatchesForOneNode` / `shouldStopDrainBatchesForPartition` and `Sender.runOnce` /
  `completeBatch` / `failBatch` / `canRetry` / `failExpiredBatches` make on them, in their order (`ProducerBatch.java`:
  `sequenceHasBeenReset`, `inRetry`, `attempts`, `hasReachedDeliveryTimeout`, the batch's final state).

The same in 3.9.1, 4.0.2 and 4.1.2 (their kafka-clients sources) and 4.4.0 (whose bytecode for these methods is
4.1.2's up to the classes moved to `utils.internals` / `record.internal`), but for one `ReleaseProfile` field:
`client_invalid_pid_mapping_fatal` (KAFKA-18019, 4.0: INVALID_PRODUCER_ID_MAPPING is a fatal error).

Three facts the bookkeeping shows: `UnknownProducerIdException` extends `OutOfOrderSequenceException`, so
`handleFailedBatch` bumps the epoch for it as for OUT_OF_ORDER_SEQUENCE_NUMBER (its own branch, which forgets the
partition, is never reached by a non-transactional producer); `sequenceHasBeenReset()` holds only from a bump's
renumbering to the batch's next drain (`ProducerBatch.close` clears it); and a bump at epoch Short.MAX_VALUE renumbers
the partition's in-flight batches under no producer id (-1, epoch -1), which they keep when they are retried after
the new id arrives.

`ClientProducer` is one producer (topic "t", partitions 0..2) and the batches it made; each method is one step of a
script (`kafka_client_producer_state` has the grammar) and returns the step's verdict. Not here: transactions,
record-level errors, MESSAGE_TOO_LARGE's split, the accumulator's deque order and back-off (the script says which
batch is drained), metadata, and sequences near Integer.MAX_VALUE (a client starts every partition at 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kcheck.reference.releases import ReleaseProfile, profile

SHORT_MAX = 2**15 - 1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INVALID_OFFSET = -1
NO_LAST_ACKED = -1
PARTITIONS = (0, 1, 2)
HASH_ORDER = (2, 1, 0)  # HashSet/HashMap<TopicPartition> iteration order of t-0..t-2 (buckets 5, 4, 3 of 16)
DELIVERY_TIMEOUT_MS = 120_000  # delivery.timeout.ms; a batch is made at time 0

UNINITIALIZED, INITIALIZING, READY, FATAL_ERROR = "UNINITIALIZED", "INITIALIZING", "READY", "FATAL_ERROR"


@dataclass(frozen=True)
class ErrorKind:
    """What the client's code asks of an `Errors` value's exception: its class, whether it is a RetriableException,
    an OutOfOrderSequenceException (UnknownProducerIdException is one) and fatal to an idempotent producer
    (`TransactionManager.maybeTransitionToErrorState`)."""

    exception: str
    retriable: bool = False
    out_of_order: bool = False
    fatal: bool = False


ERRORS: dict[str, ErrorKind] = {
    "OUT_OF_ORDER_SEQUENCE_NUMBER": ErrorKind("OutOfOrderSequenceException", out_of_order=True),
    "UNKNOWN_PRODUCER_ID": ErrorKind("UnknownProducerIdException", out_of_order=True),
    "DUPLICATE_SEQUENCE_NUMBER": ErrorKind("DuplicateSequenceException"),
    "NOT_LEADER_OR_FOLLOWER": ErrorKind("NotLeaderOrFollowerException", retriable=True),
    "NETWORK_EXCEPTION": ErrorKind("NetworkException", retriable=True),
    "REQUEST_TIMED_OUT": ErrorKind("TimeoutException", retriable=True),
    "NOT_ENOUGH_REPLICAS": ErrorKind("NotEnoughReplicasException", retriable=True),
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": ErrorKind("NotEnoughReplicasAfterAppendException", retriable=True),
    "KAFKA_STORAGE_ERROR": ErrorKind("KafkaStorageException", retriable=True),
    "INVALID_RECORD": ErrorKind("InvalidRecordException"),
    "INVALID_PRODUCER_EPOCH": ErrorKind("InvalidProducerEpochException"),
    "CLUSTER_AUTHORIZATION_FAILED": ErrorKind("ClusterAuthorizationException", fatal=True),
    "PRODUCER_FENCED": ErrorKind("ProducerFencedException", fatal=True),
    "INVALID_PRODUCER_ID_MAPPING": ErrorKind("InvalidPidMappingException"),  # fatal from 4.0 (the profile)
}
EXPIRED = ErrorKind("TimeoutException", retriable=True)  # Sender.failExpiredBatches' own TimeoutException


class JavaThrow(Exception):
    """An exception Kafka's code throws at this point of the step (the step's verdict names it)."""

    def __init__(self, simple_name: str) -> None:
        super().__init__(simple_name)
        self.simple_name = simple_name


@dataclass(eq=False)
class Batch:
    """ProducerBatch: its records builder's producer id, epoch and base sequence, and the Sender's view of it."""

    id: int
    partition: int
    count: int
    pid: int = NO_PRODUCER_ID
    epoch: int = NO_PRODUCER_EPOCH
    base_seq: int = NO_SEQUENCE
    attempts: int = 0
    retry: bool = False  # inRetry(): reenqueued at least once
    reopened: bool = False  # sequenceHasBeenReset(): renumbered by a bump since it was last drained
    final: str | None = None  # FinalState: SUCCEEDED / FAILED

    @property
    def last_seq(self) -> int:
        return self.base_seq + self.count - 1

    @property
    def key(self) -> tuple[int, int, int]:
        """TxnPartitionEntry's comparator: producer id, epoch, base sequence."""
        return self.pid, self.epoch, self.base_seq

    def reset_producer_state(self, pid: int, epoch: int, seq: int) -> None:
        self.reopened = True
        self.pid, self.epoch, self.base_seq = pid, epoch, seq

    def done(self, state: str) -> bool:
        """ProducerBatch.done: the first final state wins; a SUCCEEDED batch may not change again."""
        if self.final is None:
            self.final = state
            return True
        if self.final == "SUCCEEDED":
            raise JavaThrow("IllegalStateException")
        return False


@dataclass
class Entry:
    """TxnPartitionEntry."""

    pid: int = NO_PRODUCER_ID
    epoch: int = NO_PRODUCER_EPOCH
    next_seq: int = 0
    last_acked_seq: int = NO_LAST_ACKED
    last_acked_offset: int = INVALID_OFFSET
    inflight: dict[tuple[int, int, int], Batch] = field(default_factory=dict)  # a TreeSet by `Batch.key`

    def add(self, b: Batch) -> None:
        self.inflight.setdefault(b.key, b)  # TreeSet.add keeps the element already there

    def first(self) -> Batch | None:
        return self.inflight[min(self.inflight)] if self.inflight else None

    def start_sequences_at_beginning(self, pid: int, epoch: int) -> None:
        seq, rewritten = 0, dict[tuple[int, int, int], Batch]()
        for key in sorted(self.inflight):
            b = self.inflight[key]
            b.reset_producer_state(pid, epoch, seq)
            seq += b.count
            rewritten.setdefault(b.key, b)
        self.inflight = rewritten
        self.pid, self.epoch, self.next_seq, self.last_acked_seq = pid, epoch, seq, NO_LAST_ACKED


class ClientProducer:
    """An idempotent producer's TransactionManager with the Sender's and the accumulator's calls into it."""

    def __init__(self, retries: int, pid: int, epoch: int, release: ReleaseProfile | str | None = None) -> None:
        self.release = release if isinstance(release, ReleaseProfile) else profile(release)
        self.retries = retries
        self.pid, self.epoch = pid, epoch  # InitProducerId answered at start
        self.state, self.last_error = READY, ""
        self.bump_required = False
        self.to_rewrite: set[int] = set()
        self.unresolved: dict[int, int] = {}
        self.entries: dict[int, Entry] = {}
        self.init_pending = False
        self.batches: list[Batch] = []

    # ---- TxnPartitionMap

    def _get(self, tp: int) -> Entry:
        if tp not in self.entries:
            raise JavaThrow("IllegalStateException")
        return self.entries[tp]

    def _get_or_create(self, tp: int) -> Entry:
        return self.entries.setdefault(tp, Entry())

    # ---- TransactionManager

    @property
    def valid(self) -> bool:
        return self.pid > NO_PRODUCER_ID

    def _transition(self, target: str) -> None:
        allowed = {UNINITIALIZED: (READY,), INITIALIZING: (UNINITIALIZED,), READY: (INITIALIZING,)}
        if target != FATAL_ERROR and self.state not in allowed[target]:
            raise JavaThrow("IllegalStateException")
        if target != FATAL_ERROR:
            self.last_error = ""
        self.state = target

    def _request_bump(self, tp: int) -> None:
        self.bump_required = True
        self.to_rewrite.add(tp)

    def _has_inflight(self, tp: int) -> bool:
        return bool(self._get_or_create(tp).inflight)

    def _stale(self, tp: int) -> bool:
        e = self._get_or_create(tp)
        return (e.pid, e.epoch) != (self.pid, self.epoch)

    def _last_acked_seq(self, tp: int) -> int:
        e = self.entries.get(tp)
        return NO_LAST_ACKED if e is None else e.last_acked_seq

    def _is_next_sequence(self, tp: int, seq: int) -> bool:
        return seq - self._last_acked_seq(tp) == 1

    def _first_inflight_sequence(self, tp: int) -> int:
        if not self._has_inflight(tp):
            return NO_SEQUENCE
        first = self.entries[tp].first()
        return NO_SEQUENCE if first is None else first.base_seq

    def _remove_inflight(self, b: Batch) -> None:
        if self._has_inflight(b.partition):
            self._get(b.partition).inflight.pop(b.key, None)

    def can_retry(self, error: str, log_start: int, b: Batch) -> bool:
        """TransactionManager.canRetry for a non-transactional producer."""
        tp = b.partition
        if error == "UNKNOWN_PRODUCER_ID":
            if log_start == -1 or b.reopened:  # no log start yet, or a batch the bump already renumbered
                return True
            # The log start passed the last acked offset (retention) or not (state lost): for a non-transactional
            # producer both ask for a bump and retry.
            self._request_bump(tp)
            return True
        if error == "OUT_OF_ORDER_SEQUENCE_NUMBER":
            unresolved = tp in self.unresolved
            if not unresolved and (b.reopened or not self._is_next_sequence(tp, b.base_seq)):
                return True
            if not unresolved or b.base_seq == self.unresolved[tp]:
                self._request_bump(tp)
            return True
        return ERRORS[error].retriable

    def handle_completed(self, b: Batch, base_offset: int) -> None:
        """TransactionManager.handleCompletedBatch."""
        tp = b.partition
        e = self.entries.get(tp)
        if e is not None and b.last_seq > e.last_acked_seq:
            e.last_acked_seq = b.last_seq
        if base_offset != INVALID_OFFSET:  # TxnPartitionMap.updateLastAckedOffset
            last = base_offset + b.count - 1
            e = self._get_or_create(tp)
            if last > e.last_acked_offset:
                e.last_acked_offset = last
        self._remove_inflight(b)

    def handle_failed(self, b: Batch, kind: ErrorKind, adjust: bool) -> None:
        """TransactionManager.handleFailedBatch (Sender.failBatch swallows what it throws)."""
        fatal = kind.fatal or (kind.exception == "InvalidPidMappingException"
                               and self.release.client_invalid_pid_mapping_fatal)
        if fatal:  # maybeTransitionToErrorState -> transitionToFatalError
            self.state, self.last_error = FATAL_ERROR, kind.exception
        self._remove_inflight(b)
        if self.state == FATAL_ERROR:
            return
        if kind.out_of_order or adjust:  # OutOfOrderSequenceException (UnknownProducerId too), or an adjusted failure
            self._request_bump(b.partition)

    def mark_unresolved(self, b: Batch) -> None:
        nxt = b.last_seq + 1
        self.unresolved[b.partition] = max(self.unresolved.get(b.partition, nxt), nxt)

    def maybe_resolve_sequences(self) -> None:
        for tp in [p for p in HASH_ORDER if p in self.unresolved]:
            if not self._has_inflight(tp):
                if not self._is_next_sequence(tp, self._get_or_create(tp).next_seq):
                    self._request_bump(tp)  # every in-flight batch expired: a gap is possible
                del self.unresolved[tp]

    def _bump_epoch(self) -> None:
        """bumpIdempotentProducerEpoch: epoch + 1, or a new producer id after Short.MAX_VALUE; the partitions that
        asked have their in-flight batches renumbered from 0 in the new epoch at once."""
        if self.epoch == SHORT_MAX:
            self.pid, self.epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
            self._transition(UNINITIALIZED)
        else:
            self.epoch = (self.epoch + 1 + 2**15) % 2**16 - 2**15
        for tp in [p for p in HASH_ORDER if p in self.to_rewrite]:
            self._get(tp).start_sequences_at_beginning(self.pid, self.epoch)
            self.unresolved.pop(tp, None)
        self.to_rewrite.clear()
        self.bump_required = False

    def maybe_update_producer_id_and_epoch(self, tp: int) -> None:
        """The lazy reset (KAFKA-12152): a partition still on an older epoch starts again at 0 once none of its
        batches is in flight."""
        if self.state == FATAL_ERROR:
            return
        if self._stale(tp) and not self._has_inflight(tp):
            self._get(tp).start_sequences_at_beginning(self.pid, self.epoch)

    # ---- the script's steps

    def new_batch(self, tp: int, count: int) -> str:
        self.batches.append(Batch(len(self.batches), tp, count))
        return "-"

    def _stop_drain(self, b: Batch) -> bool:
        """RecordAccumulator.shouldStopDrainBatchesForPartition."""
        tp = b.partition
        if self.state == FATAL_ERROR or not self.valid:
            return True
        if b.base_seq == NO_SEQUENCE and ((self._has_inflight(tp) and self._stale(tp)) or tp in self.unresolved):
            return True
        first = self._first_inflight_sequence(tp)
        return first != NO_SEQUENCE and b.base_seq != NO_SEQUENCE and b.base_seq != first

    def drain(self, bid: int) -> str:
        """The batch at the head of its partition's queue, drained (RecordAccumulator.drainBatchesForOneNode): a
        first send takes the producer's id and epoch and the partition's next sequence; a retry keeps its own."""
        b = self.batches[bid]
        if self._stop_drain(b):
            return "B"
        if b.base_seq == NO_SEQUENCE:
            tp = b.partition
            self.maybe_update_producer_id_and_epoch(tp)
            b.pid, b.epoch, b.base_seq = self.pid, self.epoch, self._get_or_create(tp).next_seq
            e = self._get(tp)
            e.next_seq = e.next_seq + b.count
            self._get(tp).add(b)
        b.reopened = False  # ProducerBatch.close: sequenceHasBeenReset() holds only until the batch is sent again
        return f"S{b.base_seq}:{b.epoch}"

    def respond(self, bid: int, error: str, base_offset: int, log_start: int, late: bool) -> str:
        """Sender.completeBatch for the answer to the batch's last request; `late`: delivery.timeout.ms has passed."""
        b = self.batches[bid]
        if error != "NONE":
            if not late and b.attempts < self.retries and b.final is None and self.can_retry(error, log_start, b):
                b.attempts += 1  # RecordAccumulator.reenqueue -> ProducerBatch.reenqueued
                b.retry = True
                return "R"
            if error != "DUPLICATE_SEQUENCE_NUMBER":
                adjust = b.attempts < self.retries
                if not b.done("FAILED"):
                    return "f"
                self.handle_failed(b, ERRORS[error], adjust)
                return f"F{int(adjust)}"
        self.handle_completed(b, base_offset)
        return "C" if b.done("SUCCEEDED") else "c"

    def expire(self, bid: int) -> str:
        """Sender.failExpiredBatches for one batch past delivery.timeout.ms (in the queue or in flight)."""
        b = self.batches[bid]
        if b.done("FAILED"):
            self.handle_failed(b, EXPIRED, False)
        if b.retry:
            self.mark_unresolved(b)
            return "XU"
        return "X"

    def loop(self) -> str:
        """The TransactionManager's part of Sender.runOnce: resolve sequences, then (not fatal) bump or ask for an
        id."""
        self.maybe_resolve_sequences()
        if self.state == FATAL_ERROR:
            return "-"
        if self.bump_required:
            self._bump_epoch()
        if self.state != INITIALIZING and not self.valid:
            self._transition(INITIALIZING)
            self.init_pending = True
        return "-"

    def init_producer_id(self, pid: int, epoch: int) -> str:
        """The InitProducerId answer the Sender asked for (not an epoch bump: the sequences stay)."""
        if not self.init_pending:
            return "-"
        self.init_pending = False
        if self.state == FATAL_ERROR:  # nextRequest -> maybeTerminateRequestWithError: the request fails unsent
            return "-"
        self.pid, self.epoch = pid, epoch
        self._transition(READY)
        return "-"

    # ---- what a step shows

    def _batch(self, b: Batch) -> str:
        return f"{b.id}@{b.base_seq}:{b.epoch}:{b.pid}{'r' if b.reopened else ''}"

    def format_state(self) -> str:
        head = f"{self.pid}:{self.epoch}:{self.state}:{self.last_error or '~'}:{int(self.bump_required)}"
        rewrite = ",".join(str(p) for p in sorted(self.to_rewrite)) or "~"
        unresolved = ",".join(f"{p}={s}" for p, s in sorted(self.unresolved.items())) or "~"
        entries = ";".join(
            f"{p},{e.pid},{e.epoch},{e.next_seq},{e.last_acked_seq},{e.last_acked_offset},"
            + ("_".join(self._batch(e.inflight[k]) for k in sorted(e.inflight)) or "~")
            for p, e in sorted(self.entries.items())) or "~"
        return f"{head}/{rewrite}/{unresolved}/{entries}"
