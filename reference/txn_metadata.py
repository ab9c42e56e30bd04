"""The transaction coordinator's state of one transactional id: Kafka's TransactionMetadata, bit-exact per release.

Mirrors core's `kafka/coordinator/transaction/TransactionMetadata.scala` (3.9 to 4.1, with TransactionState and, up to
4.0, TxnTransitMetadata in the same file) and, from 4.2, transaction-coordinator's
`org/apache/kafka/coordinator/transaction/TransactionMetadata.java` (TransactionState.java and the
TxnTransitMetadata.java record there from 4.1). A transition is two steps, as in Kafka: a `prepare_*` method checks
the move and returns the transit (the record the coordinator appends to __transaction_state) with the move pending;
`complete_transition_to(transit)` (after the append) checks the transit against the metadata and applies it. The
coordinator's own moves around it are here too: a failed append clears the pending state, a failed fence write marks
`has_failed_epoch_fence`, a written marker removes its partition.

Where releases differ (`releases.ReleaseProfile`):
- `txn_tv2_transitions` (4.0, KIP-890 part 2): the transaction version the client used rides on the transits; with
  TV2 ending a transaction bumps the epoch, an abort may come from Empty or a completed transaction, the completion
  may move to the next producer id, and the completions copy the epochs and ids they bump.
- `txn_transit_whole` (4.1, TxnTransitMetadata as a Java record): every transit carries the current next producer
  id, a completion copies every field of its transit, and the fence's and end-transaction's transits hold the
  metadata's own partition set (a completion then adopts it: a later marker's removal shows in the old transit).
- `txn_enum_names` (4.1): messages name the states as the Java enum does (PREPARE_COMMIT, not PrepareCommit) and
  print a transit as a record.
- `txn_metadata_java` (4.2, KAFKA-18884): a fenced InitProducerId throws ProducerFencedException (before: Left),
  the pending-state refusal names the current state (before: the target), Optional[...] in messages, the fence's
  transit keeps the last epoch (before: -1), and the epoch-bump check wraps epoch + 1 to a short.
- `txn_max_epoch_kept` (4.3, KAFKA-20090): fencing at Short.MAX_VALUE keeps the epoch instead of throwing, and a TV2
  abort at Short.MAX_VALUE keeps it instead of overflowing.

Outcomes are `Transit`s, `Left(error)` (Scala's Either), or `JavaThrow(class, message)`; a message naming a set of
partitions names it sorted, `{t-0,t-1}` (Kafka's own text follows a hash set's order).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass

from kcheck.reference.releases import ReleaseProfile

EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, DEAD, PREPARE_EPOCH_FENCE = range(8)
SCALA_NAMES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
               "PrepareEpochFence")
ENUM_NAMES = ("EMPTY", "ONGOING", "PREPARE_COMMIT", "PREPARE_ABORT", "COMPLETE_COMMIT", "COMPLETE_ABORT", "DEAD",
              "PREPARE_EPOCH_FENCE")
NO_PRODUCER_ID = -1
NO_EPOCH = -1
SHORT_MAX = 32767
TOPIC = "t"

_PREVIOUS = {  # TransactionState.validPreviousStates
    EMPTY: {EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT},
    ONGOING: {ONGOING, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT},
    PREPARE_COMMIT: {ONGOING},
    PREPARE_ABORT: {ONGOING, PREPARE_EPOCH_FENCE},
    COMPLETE_COMMIT: {PREPARE_COMMIT},
    COMPLETE_ABORT: {PREPARE_ABORT},
    DEAD: {EMPTY, COMPLETE_ABORT, COMPLETE_COMMIT},
    PREPARE_EPOCH_FENCE: {ONGOING},
}
_TV2_EMPTY_ABORT = {EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}  # also before PrepareAbort from 4.0 (KIP-890)
_FENCED = "There is a newer producer with the same transactionalId which fences the current one."


class JavaThrow(Exception):
    """What Kafka's code throws: the exception's simple class name and its message."""

    def __init__(self, simple_name: str, message: str) -> None:
        super().__init__(f"{simple_name}: {message}")
        self.simple_name = simple_name
        self.message = message


@dataclass(frozen=True)
class Left:
    """Scala's Left(error): prepareIncrementProducerEpoch's refusal before 4.2."""

    error: str


def short(x: int) -> int:
    """Java's (short) cast."""
    return (x + 0x8000) % 0x10000 - 0x8000


def supports_epoch_bump(tv: int) -> bool:
    return tv >= 2  # TransactionVersion.supportsEpochBump: feature level 2 (TV_2) on


@dataclass
class Transit:
    """TxnTransitMetadata. `partitions` is a set object that may be the metadata's own (4.1 on)."""

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    epoch: int
    last_epoch: int
    timeout_ms: int
    state: int
    partitions: set[int]
    start: int
    update: int
    tv: int


class TxnMetadata:
    """One transactional id's TransactionMetadata, as `release` has it (transactional id "tx", topic "t")."""

    def __init__(self, release: ReleaseProfile, producer_id: int, prev_producer_id: int, next_producer_id: int,
                 epoch: int, last_epoch: int, timeout_ms: int, state: int, partitions: Iterable[int], start: int,
                 update: int, tv: int, has_failed_epoch_fence: bool = False) -> None:
        self.release = release
        self.producer_id = producer_id
        self.prev_producer_id = prev_producer_id
        # 3.9 has neither the next producer id nor the client's transaction version: kept at -1 and 0, never shown
        self.next_producer_id = next_producer_id if release.txn_tv2_transitions else NO_PRODUCER_ID
        self.epoch = epoch
        self.last_epoch = last_epoch
        self.timeout_ms = timeout_ms
        self.state = state
        self.partitions: set[int] = set(partitions)
        self.start = start
        self.update = update
        self.tv = tv if release.txn_tv2_transitions else 0
        self.pending: int | None = None
        self.has_failed_epoch_fence = has_failed_epoch_fence

    # ------------------------------------------------------------------ words

    def name(self, state: int) -> str:
        return (ENUM_NAMES if self.release.txn_enum_names else SCALA_NAMES)[state]

    def _pending_text(self) -> str:
        if self.release.txn_metadata_java:
            return "Optional.empty" if self.pending is None else f"Optional[{self.name(self.pending)}]"
        return "None" if self.pending is None else f"Some({self.name(self.pending)})"

    def transit_text(self, t: Transit) -> str:
        """TxnTransitMetadata.toString, its partitions sorted."""
        r = self.release
        parts = "{" + ",".join(f"{TOPIC}-{p}" for p in sorted(t.partitions)) + "}"
        if not r.txn_tv2_transitions:
            return (f"TxnTransitMetadata(producerId={t.producer_id}, lastProducerId={t.prev_producer_id}, "
                    f"producerEpoch={t.epoch}, lastProducerEpoch={t.last_epoch}, txnTimeoutMs={t.timeout_ms}, "
                    f"txnState={self.name(t.state)}, topicPartitions={parts}, txnStartTimestamp={t.start}, "
                    f"txnLastUpdateTimestamp={t.update})")
        prev, (open_, close) = ("prevProducerId", "[]") if r.txn_enum_names else ("previousProducerId", "()")
        return (f"TxnTransitMetadata{open_}producerId={t.producer_id}, {prev}={t.prev_producer_id}, "
                f"nextProducerId={t.next_producer_id}, producerEpoch={t.epoch}, lastProducerEpoch={t.last_epoch}, "
                f"txnTimeoutMs={t.timeout_ms}, txnState={self.name(t.state)}, topicPartitions={parts}, "
                f"txnStartTimestamp={t.start}, txnLastUpdateTimestamp={t.update}, clientTransactionVersion=TV_{t.tv}"
                f"{close}")

    # ------------------------------------------------------------------ prepare

    def _transit(self, state: int, **changes: object) -> Transit:
        """TransitionData / prepareTransitionTo's defaults: the metadata's fields, a next producer id of -1 before
        4.1 (the current one from 4.1), and the partitions a new set unless a transit shares them (4.1 on)."""
        r = self.release
        values: dict[str, object] = dict(
            producer_id=self.producer_id, prev_producer_id=self.producer_id,
            next_producer_id=self.next_producer_id if r.txn_transit_whole else NO_PRODUCER_ID, epoch=self.epoch,
            last_epoch=self.last_epoch, timeout_ms=self.timeout_ms, state=state, partitions=None, start=self.start,
            update=self.update, tv=self.tv)
        values.update(changes)
        if values["partitions"] is None:
            values["partitions"] = self.partitions if r.txn_transit_whole else set(self.partitions)
        return Transit(**values)  # type: ignore[arg-type]

    def _prepare(self, t: Transit) -> Transit:
        """prepareTransitionTo's checks, in its order; the move is then pending."""
        if self.pending is not None:
            named = self.state if self.release.txn_metadata_java else t.state
            raise JavaThrow("IllegalStateException", f"Preparing transaction state transition to {self.name(named)} "
                                                     f"while it already a pending state {self.name(self.pending)}")
        if t.producer_id < 0:
            raise JavaThrow("IllegalArgumentException", f"Illegal new producer id {t.producer_id}")
        if t.state != DEAD and t.epoch < 0:
            raise JavaThrow("IllegalArgumentException", f"Illegal new producer epoch {t.epoch}")
        previous = _PREVIOUS[t.state]
        if t.state == PREPARE_ABORT and self.release.txn_tv2_transitions:
            previous = previous | _TV2_EMPTY_ABORT
        if self.state not in previous:
            target = self.name(t.state)
            raise JavaThrow("IllegalStateException",
                            f"Preparing transaction state transition to {target} failed since the target state "
                            f"{target} is not a valid previous state of the current state {self.name(self.state)}")
        self.pending = t.state
        return t

    def prepare_fence_producer_epoch(self) -> Transit:
        if self.epoch == SHORT_MAX and not self.release.txn_max_epoch_kept:
            raise JavaThrow("IllegalStateException",
                            "Cannot fence producer with epoch equal to Short.MaxValue since this would overflow")
        keep = self.has_failed_epoch_fence or self.epoch == SHORT_MAX
        # the Java port (4.2) dropped the Scala call's NO_PRODUCER_EPOCH: the last epoch stays
        last = self.last_epoch if self.release.txn_metadata_java else NO_EPOCH
        return self._prepare(self._transit(PREPARE_EPOCH_FENCE, epoch=self.epoch if keep else short(self.epoch + 1),
                                           last_epoch=last))

    def prepare_increment_producer_epoch(self, timeout_ms: int, expected: int | None, now: int) -> Transit | Left:
        if self.epoch >= SHORT_MAX - 1:
            raise JavaThrow("IllegalStateException",
                            f"Cannot allocate any more producer epochs for producerId {self.producer_id}")
        bumped = short(self.epoch + 1)
        if expected is None:
            epochs = (bumped, NO_EPOCH)
        elif self.epoch == NO_EPOCH or expected == self.epoch:
            epochs = (bumped, self.epoch)
        elif expected == self.last_epoch:
            epochs = (self.epoch, self.last_epoch)
        elif self.release.txn_metadata_java:
            raise JavaThrow("ProducerFencedException", _FENCED)
        else:
            return Left("PRODUCER_FENCED")
        return self._prepare(self._transit(EMPTY, epoch=epochs[0], last_epoch=epochs[1], timeout_ms=timeout_ms,
                                           partitions=set(), start=-1, update=now))

    def prepare_producer_id_rotation(self, producer_id: int, timeout_ms: int, now: int, record_last_epoch: bool,
                                     ) -> Transit:
        if self.state in (ONGOING, PREPARE_ABORT, PREPARE_COMMIT):
            raise JavaThrow("IllegalStateException", "Cannot rotate producer ids while a transaction is still pending")
        return self._prepare(self._transit(EMPTY, producer_id=producer_id, epoch=0,
                                           last_epoch=self.epoch if record_last_epoch else NO_EPOCH,
                                           timeout_ms=timeout_ms, partitions=set(), start=-1, update=now))

    def prepare_add_partitions(self, added: Iterable[int], now: int, tv: int) -> Transit:
        start = now if self.state in (EMPTY, COMPLETE_ABORT, COMPLETE_COMMIT) else self.start
        return self._prepare(self._transit(ONGOING, partitions=self.partitions | set(added), start=start, update=now,
                                           tv=tv if self.release.txn_tv2_transitions else 0))

    def prepare_abort_or_commit(self, state: int, tv: int, next_producer_id: int, now: int,
                                no_partition_added: bool) -> Transit:
        r = self.release
        if not r.txn_tv2_transitions:  # 3.9: prepareAbortOrCommit(newState, updateTimestamp)
            return self._prepare(self._transit(state, update=now))
        epoch, last = self.epoch, self.last_epoch
        if supports_epoch_bump(tv):
            kept = r.txn_max_epoch_kept and self.epoch == SHORT_MAX and state == PREPARE_ABORT
            epoch, last = (self.epoch if kept else short(self.epoch + 1)), self.epoch
        return self._prepare(self._transit(state, next_producer_id=next_producer_id, epoch=epoch, last_epoch=last,
                                           start=now if no_partition_added else self.start, update=now, tv=tv))

    def prepare_complete(self, now: int) -> Transit:
        state = COMPLETE_COMMIT if self.state == PREPARE_COMMIT else COMPLETE_ABORT
        self.has_failed_epoch_fence = False  # before the checks: a refused completion clears it too
        pid, epoch = self.producer_id, self.epoch
        if supports_epoch_bump(self.tv) and self.next_producer_id != NO_PRODUCER_ID:
            pid, epoch = self.next_producer_id, 0  # the epoch overflowed: the marker moves to the next id
        return self._prepare(self._transit(state, producer_id=pid, next_producer_id=NO_PRODUCER_ID, epoch=epoch,
                                           partitions=set(), update=now))

    def prepare_dead(self) -> Transit:
        return self._prepare(self._transit(DEAD, partitions=set()))

    # ------------------------------------------------------------------ complete

    def _valid_epoch(self, t: Transit) -> bool:
        """validProducerEpoch: the transit continues this producer (with TV2 an end bumped the epoch, or an overflow
        completion moved to the next producer id)."""
        tv2 = self.release.txn_tv2_transitions and supports_epoch_bump(t.tv)
        if tv2 and t.state in (COMPLETE_COMMIT, COMPLETE_ABORT) and t.epoch == 0:
            return t.last_epoch == self.last_epoch and t.prev_producer_id == self.producer_id
        epoch = t.last_epoch if tv2 and t.state in (PREPARE_COMMIT, PREPARE_ABORT) else t.epoch
        return epoch == self.epoch and t.producer_id == self.producer_id

    def _valid_epoch_bump(self, t: Transit) -> bool:
        bumped = short(self.epoch + 1) if self.release.txn_metadata_java else self.epoch + 1
        return t.epoch == bumped or (t.epoch == 0 and t.producer_id != self.producer_id)

    def _failure(self, t: Transit) -> JavaThrow:
        return JavaThrow("IllegalStateException",
                         f"TransactionalId tx failed transition to state {self.transit_text(t)} due to unexpected "
                         f"metadata")

    def _acceptable(self, to: int, t: Transit) -> bool:
        """completeTransitionTo's check for the pending state `to`."""
        if to == EMPTY:
            return ((self.epoch == t.epoch or self._valid_epoch_bump(t)) and not t.partitions and t.start == -1)
        if to == ONGOING:
            return self._valid_epoch(t) and self.partitions <= t.partitions and self.timeout_ms == t.timeout_ms
        if to in (PREPARE_ABORT, PREPARE_COMMIT):
            empty_abort = (self.release.txn_tv2_transitions and to == PREPARE_ABORT and supports_epoch_bump(t.tv)
                           and self.state in _TV2_EMPTY_ABORT)
            return (self._valid_epoch(t) and self.partitions == t.partitions and self.timeout_ms == t.timeout_ms
                    and (self.start == t.start or empty_abort))
        if to in (COMPLETE_ABORT, COMPLETE_COMMIT):
            return self._valid_epoch(t) and self.timeout_ms == t.timeout_ms and t.start != -1
        if to == DEAD:
            dead = self.name(DEAD)
            raise JavaThrow("IllegalStateException",
                            f"TransactionalId tx is trying to complete a transition to {dead}. This means that the "
                            f"transactionalId was being expired, and the only acceptable completion of this operation "
                            f"is to remove the transaction metadata from the cache, not to persist the {dead} in the "
                            f"log.")
        return False  # PrepareEpochFence: never completed (the coordinator goes on to PrepareAbort)

    def complete_transition_to(self, t: Transit) -> None:
        if self.pending is None:
            raise JavaThrow("IllegalStateException", "TransactionalId tx completing transaction state transition while "
                                                     "it does not have a pending state")
        to = self.pending
        if to != t.state or not self._acceptable(to, t):
            raise self._failure(t)
        if self.release.txn_transit_whole:
            self._apply_whole(t)
        else:
            self._apply_owned(to, t)
        self.update = t.update
        self.pending = None
        self.state = to

    def _apply_whole(self, t: Transit) -> None:
        """4.1 on: every field from the transit, its partition set adopted as it is."""
        self.producer_id, self.prev_producer_id, self.next_producer_id = (t.producer_id, t.prev_producer_id,
                                                                          t.next_producer_id)
        self.epoch, self.last_epoch, self.timeout_ms = t.epoch, t.last_epoch, t.timeout_ms
        self.partitions, self.start, self.tv = t.partitions, t.start, t.tv

    def _apply_owned(self, to: int, t: Transit) -> None:
        """Up to 4.0: the fields the transition owns."""
        tv2 = self.release.txn_tv2_transitions and supports_epoch_bump(t.tv)
        if to == EMPTY:
            self.timeout_ms, self.epoch, self.last_epoch = t.timeout_ms, t.epoch, t.last_epoch
            self.producer_id, self.prev_producer_id = t.producer_id, t.prev_producer_id
        elif to == ONGOING:
            self.start = t.start
            self.partitions |= t.partitions
        elif to in (PREPARE_ABORT, PREPARE_COMMIT) and tv2:
            self.epoch, self.last_epoch, self.next_producer_id, self.start = (t.epoch, t.last_epoch,
                                                                              t.next_producer_id, t.start)
        elif to in (COMPLETE_ABORT, COMPLETE_COMMIT):
            self.start = t.start
            self.partitions.clear()
            if tv2:
                self.epoch, self.last_epoch = t.epoch, t.last_epoch
                self.prev_producer_id, self.producer_id, self.next_producer_id = (t.prev_producer_id, t.producer_id,
                                                                                  t.next_producer_id)
        if self.release.txn_tv2_transitions:
            self.tv = t.tv

    # ------------------------------------------------------------------ the coordinator's moves

    def remove_partition(self, partition: int) -> None:
        """A marker was written to this partition."""
        if self.state not in (PREPARE_COMMIT, PREPARE_ABORT):
            raise JavaThrow("IllegalStateException",
                            f"Transaction metadata's current state is {self.name(self.state)}, and its pending state "
                            f"is {self._pending_text()} while trying to remove partitions whose txn marker has been "
                            f"sent, this is not expected")
        self.partitions.discard(partition)

    def append_failed(self) -> None:
        """TransactionStateManager after a failed append: the move is no longer pending."""
        self.pending = None


def changed(t: Transit, field: str, value: object) -> Transit:
    """A copy of a transit with one field changed (its partitions a new set), as the harness builds one."""
    out = copy.copy(t)
    out.partitions = set(t.partitions)
    setattr(out, field, value)
    return out
