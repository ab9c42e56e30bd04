"""The idempotent producer's state on a partition leader, bit-exact: Kafka's duplicate, epoch and sequence checks.

Mirrors kafka-storage's `org.apache.kafka.storage.internals.log` (storage/src/main/java/org/apache/kafka/storage/
internals/log/ in apache/kafka), the same files in 3.9.1 and every 4.x release (read at 3.9.1, 4.0.2, 4.1.2, 4.2.0
and 4.3.1, whose bytecode 4.4.0's matches; compared through the bridge on 3.9.1, 4.0.2, 4.1.2, 4.2.2 and 4.4.0).
The differences are `ReleaseProfile` fields: `producer_verification_epoch_bump` (4.0),
`producer_tv2_first_sequence_zero` (4.1, KAFKA-18202), `producer_marker_epoch_by_transaction_version` (4.2,
KIP-1228) and `producer_marker_retry_at_max_epoch` (4.3, KAFKA-20090). The files:

- `ProducerStateEntry.java`: one producer's entry, the last `NUM_BATCHES_TO_RETAIN` (5) batches' metadata
  (`BatchMetadata.java`), `findDuplicateBatch` (same epoch, exactly the same first and last sequence);
- `ProducerAppendInfo.java`: `checkProducerEpoch`, `checkSequence` (a new epoch starts at 0, else the next
  sequence modulo 2^31, any sequence while the entry has no epoch), `appendDataBatch`, `appendEndTxnMarker`;
- `ProducerStateManager.java`: the entries by producer id, `removeExpiredProducers` (`producer.id.expiration.ms`
  since the entry's last timestamp, never while a transaction is open), snapshots (each entry with its last batch
  only), `truncateAndReload`, `onLogStartOffsetIncremented`, `maybeCreateVerificationStateEntry`
  (`VerificationStateEntry.java`);
- what `UnifiedLog` (`UnifiedLog.java` in kafka-storage from 4.1; `core/src/main/scala/kafka/log/UnifiedLog.scala`
  before, whose static helpers `updateProducers` and `rebuildProducerState` moved to kafka-storage in 4.0) does
  with them: the duplicate check before any other (a duplicate is answered with the cached batch's first and last
  offsets and timestamp, and nothing is written), the verification entry dropped after a transactional batch,
  snapshots on a roll, snapshots dropped with deleted segments, the log start moving forward, and truncation,
  which reloads the latest snapshot not above the new end and replays the log from there.

`PartitionLog` is one partition on a single-replica leader (its high watermark is its log end) with a clock; each
method is one step (`Op`) and returns the step's verdict (`Verdict`). What is not here: the record-level checks
before producer state (`LogValidator`), transaction verification's guards (`transaction.partition.verification.
enable` is off: the verification entries are made directly, as `maybeStartTransactionVerification` would), the
last stable offset and the transaction index, restarts (`LogLoader`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kcheck.reference.releases import ReleaseProfile, profile

INT_MAX = 2**31 - 1
SHORT_MAX = 2**15 - 1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
NUM_BATCHES_TO_RETAIN = 5
TV_UNKNOWN = -1

CLIENT, COORDINATOR, REPLICATION = "CLIENT", "COORDINATOR", "REPLICATION"

__all__ = [
    "NUM_BATCHES_TO_RETAIN",
    "BatchMetadata",
    "LogBatch",
    "PartitionLog",
    "ProducerAppendInfo",
    "ProducerStateEntry",
    "ProducerStateError",
    "ProducerStateManager",
    "Verdict",
    "VerificationStateEntry",
    "decrement_sequence",
    "increment_sequence",
]


class ProducerStateError(Exception):
    """What Kafka throws, by its Java simple name (`OutOfOrderSequenceException`, ...)."""

    def __init__(self, java_name: str, message: str = "") -> None:
        super().__init__(f"{java_name}: {message}" if message else java_name)
        self.java_name = java_name


def increment_sequence(sequence: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence: sequences wrap from Integer.MAX_VALUE to 0."""
    if sequence > INT_MAX - increment:
        return increment - (INT_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """DefaultRecordBatch.decrementSequence."""
    if sequence < decrement:
        return INT_MAX - (decrement - sequence) + 1
    return sequence - decrement


@dataclass(frozen=True)
class BatchMetadata:
    """One cached batch: its last sequence and offset, offset span and max timestamp (BatchMetadata.java)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass
class ProducerStateEntry:
    """ProducerStateEntry.java: mutable, as Kafka's is (the manager's entry is updated in place)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: int | None = None
    batches: deque[BatchMetadata] = field(default_factory=deque)

    def is_empty(self) -> bool:
        return not self.batches

    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def copy_without_batches(self, producer_id: int) -> ProducerStateEntry:
        """withProducerIdAndBatchMetadata(id, empty) / withProducerId(id)."""
        return ProducerStateEntry(producer_id, self.producer_epoch, self.coordinator_epoch, self.last_timestamp,
                                  self.current_txn_first_offset)

    def maybe_update_producer_epoch(self, epoch: int) -> None:
        if self.producer_epoch != epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch_metadata(self, batch: BatchMetadata) -> None:
        if len(self.batches) == NUM_BATCHES_TO_RETAIN:
            self.batches.popleft()
        self.batches.append(batch)

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        self.maybe_update_producer_epoch(epoch)
        self.add_batch_metadata(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def update(self, epoch: int, coordinator_epoch: int, last_timestamp: int,
               batches: tuple[BatchMetadata, ...] = (), txn_first_offset: int | None = None) -> None:
        """Both `update` overloads: the marker's (no batches, no open transaction) and the merge of a next entry."""
        self.maybe_update_producer_epoch(epoch)
        for b in batches:
            self.add_batch_metadata(b)
        self.coordinator_epoch = coordinator_epoch
        self.current_txn_first_offset = txn_first_offset
        self.last_timestamp = last_timestamp

    def merge(self, nxt: ProducerStateEntry) -> None:
        self.update(nxt.producer_epoch, nxt.coordinator_epoch, nxt.last_timestamp, tuple(nxt.batches),
                    nxt.current_txn_first_offset)

    def find_duplicate_batch(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        return next((b for b in self.batches if b.first_seq == first_seq and b.last_seq == last_seq), None)


@dataclass
class VerificationStateEntry:
    """VerificationStateEntry.java (its guard is left out: verification is off)."""

    timestamp: int
    lowest_sequence: int
    epoch: int
    supports_epoch_bump: bool

    def maybe_update_lowest_sequence_and_epoch(self, sequence: int, epoch: int) -> None:
        if epoch == self.epoch and sequence < self.lowest_sequence:
            self.lowest_sequence = sequence
        if epoch > self.epoch:
            self.epoch = epoch
            self.lowest_sequence = sequence


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT_MAX)


class ProducerAppendInfo:
    """ProducerAppendInfo.java: validates one producer's batches of one append against its entry before the append."""

    def __init__(self, producer_id: int, current: ProducerStateEntry, origin: str,
                 verification: VerificationStateEntry | None, release: ReleaseProfile) -> None:
        self.producer_id = producer_id
        self.current = current
        self.origin = origin
        self.verification = verification
        self.release = release
        self.updated = current.copy_without_batches(producer_id)
        self.started_transactions: list[int] = []  # first offsets

    def _check_producer_epoch(self, epoch: int, transaction_version: int) -> None:
        current = self.updated.producer_epoch
        strict = self.release.producer_marker_epoch_by_transaction_version and transaction_version >= 2
        if not (epoch <= current if strict else epoch < current):
            return
        if strict and epoch == current and (  # KAFKA-19999: a retried marker of a transaction already ended
                self.updated.current_txn_first_offset is None
                or (self.release.producer_marker_retry_at_max_epoch and epoch == SHORT_MAX)):
            return
        if self.origin != REPLICATION:  # a follower only logs it
            raise ProducerStateError("InvalidProducerEpochException")

    def _check_sequence(self, epoch: int, first_seq: int) -> None:
        v = self.verification
        if (self.release.producer_tv2_first_sequence_zero and v is not None and v.supports_epoch_bump
                and first_seq != 0 and self.current.is_empty()):
            raise ProducerStateError("OutOfOrderSequenceException", "TV2 producer without state: sequence 0 only")
        if v is not None and first_seq > v.lowest_sequence:
            raise ProducerStateError("OutOfOrderSequenceException", "above the verification's lowest sequence")
        if epoch != self.updated.producer_epoch:
            if first_seq != 0 and self.updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise ProducerStateError("OutOfOrderSequenceException", "a new epoch starts at sequence 0")
            return
        if not self.updated.is_empty():
            last = self.updated.last_seq()
        elif epoch == self.current.producer_epoch:
            last = self.current.last_seq()
        else:
            last = NO_SEQUENCE
        if not (self.current.producer_epoch == NO_PRODUCER_EPOCH or _in_sequence(last, first_seq)):
            raise ProducerStateError("OutOfOrderSequenceException", f"{first_seq} does not follow {last}")

    def append_data_batch(self, epoch: int, first_seq: int, last_seq: int, last_timestamp: int,
                          first_offset: int, last_offset: int, transactional: bool) -> None:
        self._check_producer_epoch(epoch, TV_UNKNOWN)
        if self.origin == CLIENT:
            self._check_sequence(epoch, first_seq)
        self.updated.add_batch(epoch, last_seq, last_offset, last_offset - first_offset, last_timestamp)
        if self.updated.current_txn_first_offset is not None and not transactional:
            raise ProducerStateError("InvalidTxnStateException", "a non-transactional write in a transaction")
        if self.updated.current_txn_first_offset is None and transactional:
            self.updated.current_txn_first_offset = first_offset
            self.started_transactions.append(first_offset)

    def append_end_txn_marker(self, epoch: int, coordinator_epoch: int, offset: int, timestamp: int,
                              transaction_version: int) -> tuple[int, int] | None:
        """The completed transaction (first offset, marker offset), if one was open."""
        if self.release.producer_marker_epoch_by_transaction_version:
            if transaction_version == TV_UNKNOWN and self.origin != REPLICATION:
                raise ProducerStateError("IllegalArgumentException", "transactionVersion must be explicitly specified")
            transaction_version = max(transaction_version, 0)
        self._check_producer_epoch(epoch, transaction_version)
        if self.updated.coordinator_epoch > coordinator_epoch and self.origin != REPLICATION:
            raise ProducerStateError("TransactionCoordinatorFencedException")
        first = self.updated.current_txn_first_offset
        self.updated.update(epoch, coordinator_epoch, timestamp)
        return None if first is None else (first, offset)


@dataclass(frozen=True)
class _SnapshotEntry:
    producer_id: int
    epoch: int
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    txn_first_offset: int


class ProducerStateManager:
    """ProducerStateManager.java, its snapshot files as a map from offset to the entries written."""

    def __init__(self, expiration_ms: int, clock: list[int], release: ReleaseProfile) -> None:
        self.expiration_ms = expiration_ms
        self.clock = clock  # [now]: shared with the log, as Kafka's Time is
        self.release = release
        self.producers: dict[int, ProducerStateEntry] = {}
        self.verification: dict[int, VerificationStateEntry] = {}
        self.ongoing: dict[int, int] = {}  # first offset -> producer id
        self.unreplicated: dict[int, int] = {}  # first offset -> last offset
        self.snapshots: dict[int, tuple[_SnapshotEntry, ...]] = {}
        self.last_map_offset = 0
        self.last_snap_offset = 0

    # -- entries
    def prepare_update(self, producer_id: int, origin: str) -> ProducerAppendInfo:
        current = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        return ProducerAppendInfo(producer_id, current, origin, self.verification.get(producer_id), self.release)

    def update(self, info: ProducerAppendInfo) -> None:
        current = self.producers.get(info.producer_id)
        if current is not None:
            current.merge(info.updated)
        else:
            self.producers[info.producer_id] = info.updated
        for first in info.started_transactions:
            self.ongoing[first] = info.producer_id

    def complete_txn(self, first_offset: int, last_offset: int) -> None:
        if self.ongoing.pop(first_offset, None) is None:
            raise ProducerStateError("IllegalArgumentException", "completing a transaction that was not started")
        self.unreplicated[first_offset] = last_offset

    def remove_unreplicated(self, offset: int) -> None:
        self.unreplicated = {k: v for k, v in self.unreplicated.items() if not v < offset}

    def is_empty(self) -> bool:
        return not self.producers and not self.unreplicated

    def _expired(self, now: int, txn_first_offset: int | None, last_timestamp: int) -> bool:
        return txn_first_offset is None and now - last_timestamp >= self.expiration_ms

    def remove_expired_producers(self, now: int) -> None:
        self.producers = {k: e for k, e in self.producers.items()
                          if not self._expired(now, e.current_txn_first_offset, e.last_timestamp)}
        self.verification = {k: v for k, v in self.verification.items() if not now - v.timestamp >= self.expiration_ms}

    def maybe_create_verification_state_entry(self, producer_id: int, sequence: int, epoch: int,
                                              supports_epoch_bump: bool) -> VerificationStateEntry:
        entry = self.verification.get(producer_id)
        if entry is None:
            entry = self.verification[producer_id] = VerificationStateEntry(
                self.clock[0], sequence, epoch, supports_epoch_bump and self.release.producer_verification_epoch_bump)
        entry.maybe_update_lowest_sequence_and_epoch(sequence, epoch)
        return entry

    # -- snapshots
    def take_snapshot(self) -> None:
        if self.last_map_offset > self.last_snap_offset:
            self.snapshots[self.last_map_offset] = tuple(
                _SnapshotEntry(pid, e.producer_epoch, e.last_seq(),
                               e.batches[-1].last_offset if e.batches else -1,
                               e.batches[-1].offset_delta if e.batches else 0, e.last_timestamp,
                               e.coordinator_epoch,
                               -1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
                for pid, e in self.producers.items())
            self.last_snap_offset = self.last_map_offset

    def latest_snapshot_offset(self) -> int | None:
        return max(self.snapshots, default=None)

    def oldest_snapshot_offset(self) -> int | None:
        return min(self.snapshots, default=None)

    def _load_from_snapshot(self, log_start: int, now: int) -> None:
        latest = self.latest_snapshot_offset()
        if latest is None:
            self.last_snap_offset = self.last_map_offset = log_start
            return
        for s in self.snapshots[latest]:
            txn = None if s.txn_first_offset < 0 else s.txn_first_offset
            if self._expired(now, txn, s.timestamp):
                continue
            entry = ProducerStateEntry(s.producer_id, s.epoch, s.coordinator_epoch, s.timestamp, txn)
            if s.last_offset >= 0:
                entry.batches.append(BatchMetadata(s.last_seq, s.last_offset, s.offset_delta, s.timestamp))
            self.producers[s.producer_id] = entry
            if txn is not None:
                self.ongoing[txn] = s.producer_id
        self.last_snap_offset = self.last_map_offset = latest

    def truncate_and_reload(self, log_start: int, log_end: int, now: int) -> None:
        for offset in [o for o in self.snapshots if o > log_end or o <= log_start]:
            del self.snapshots[offset]
        if log_end != self.last_map_offset:
            self.producers = {}
            self.ongoing = {}
            self.unreplicated = {}
            self._load_from_snapshot(log_start, now)
        else:
            self.on_log_start_offset_incremented(log_start)

    def on_log_start_offset_incremented(self, log_start: int) -> None:
        self.remove_unreplicated(log_start)
        self.last_map_offset = max(self.last_map_offset, log_start)
        latest = self.latest_snapshot_offset()
        self.last_snap_offset = log_start if latest is None else latest


@dataclass(frozen=True)
class LogBatch:
    """A batch in the log: offsets, producer fields, and for a control batch the marker's coordinator epoch."""

    base_offset: int
    last_offset: int
    producer_id: int
    epoch: int
    base_seq: int
    transactional: bool
    timestamp: int
    marker: int | None = None  # the coordinator epoch of an end-transaction marker

    @property
    def last_seq(self) -> int:
        if self.base_seq == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_seq, self.last_offset - self.base_offset)


Verdict = tuple[str | int, ...]  # ('D', first, last, timestamp), ('A', first), ('E', java name), ('V', lowest, epoch)


class PartitionLog:
    """One partition's leader log with its producer state: the steps a differential drives (see the module)."""

    def __init__(self, expiration_ms: int, now: int, release: ReleaseProfile | None = None) -> None:
        self.release = release or profile()
        self.clock = [now]
        self.psm = ProducerStateManager(expiration_ms, self.clock, self.release)
        self.segments: list[tuple[int, list[LogBatch]]] = [(0, [])]  # base offset, batches
        self.log_start = 0
        self.log_end = 0

    # -- client and coordinator appends (UnifiedLog.append -> analyzeAndValidateProducerState)
    def append_data(self, producer_id: int, epoch: int, base_seq: int, count: int, transactional: bool,
                    timestamp: int) -> Verdict:
        first = self.log_end
        batch = LogBatch(first, first + count - 1, producer_id, epoch, base_seq, transactional, timestamp)
        if producer_id == NO_PRODUCER_ID:
            self._write(batch, None, None)
            return ("A", first)
        entry = self.psm.producers.get(producer_id)
        dup = entry.find_duplicate_batch(epoch, base_seq, batch.last_seq) if entry else None
        if dup is not None:
            return ("D", dup.first_offset, dup.last_offset, dup.timestamp)
        info = self.psm.prepare_update(producer_id, CLIENT)
        try:
            info.append_data_batch(epoch, base_seq, batch.last_seq, timestamp, first, batch.last_offset,
                                   transactional)
        except ProducerStateError as e:
            return ("E", e.java_name)
        self._after_transactional(batch)
        self._write(batch, info, None)
        return ("A", first)

    def append_marker(self, producer_id: int, epoch: int, coordinator_epoch: int, transaction_version: int,
                      timestamp: int) -> Verdict:
        offset = self.log_end
        batch = LogBatch(offset, offset, producer_id, epoch, NO_SEQUENCE, True, timestamp, coordinator_epoch)
        info = self.psm.prepare_update(producer_id, COORDINATOR)
        try:
            completed = info.append_end_txn_marker(epoch, coordinator_epoch, offset, timestamp, transaction_version)
        except ProducerStateError as e:
            return ("E", e.java_name)
        self._after_transactional(batch)
        self._write(batch, info, completed)
        return ("A", offset)

    def _after_transactional(self, batch: LogBatch) -> None:
        """UnifiedLog.updateProducers: a transactional batch ends the producer's verification, but a TV2 marker of
        the entry's own epoch (the next transaction already verified)."""
        if not batch.transactional:
            return
        v = self.psm.verification.get(batch.producer_id)
        keep = v is not None and v.supports_epoch_bump and batch.marker is not None and batch.epoch == v.epoch
        if not keep:
            self.psm.verification.pop(batch.producer_id, None)

    def _write(self, batch: LogBatch, info: ProducerAppendInfo | None, completed: tuple[int, int] | None) -> None:
        self.segments[-1][1].append(batch)
        self.log_end = batch.last_offset + 1
        if info is not None:
            self.psm.update(info)
        if completed is not None:
            self.psm.complete_txn(*completed)
        self.psm.last_map_offset = self.log_end
        self.psm.remove_unreplicated(self.log_end)  # the high watermark follows the log end

    # -- the rest of a partition's life
    def verify(self, producer_id: int, sequence: int, epoch: int, supports_epoch_bump: bool) -> Verdict:
        v = self.psm.maybe_create_verification_state_entry(producer_id, sequence, epoch, supports_epoch_bump)
        return ("V", v.lowest_sequence, v.epoch)

    def set_clock(self, now: int) -> None:
        self.clock[0] = now

    def expire(self) -> None:
        """The periodic check (producer.id.expiration.check.interval.ms) running now."""
        self.psm.remove_expired_producers(self.clock[0])

    def roll(self) -> None:
        """UnifiedLog.roll: a new segment at the log end, a snapshot at its base (a non-empty active segment only)."""
        self.segments.append((self.log_end, []))
        self.psm.last_map_offset = self.log_end
        self.psm.take_snapshot()

    def delete_segments(self, count: int) -> None:
        """UnifiedLog.deleteSegments of the `count` oldest segments (fewer than all): the log start moves to the
        next segment's base, then their snapshots go."""
        deleted, self.segments = self.segments[:count], self.segments[count:]
        self.increment_log_start(self.segments[0][0])
        for base, _ in deleted:
            self.psm.snapshots.pop(base, None)

    def increment_log_start(self, offset: int) -> None:
        """UnifiedLog.maybeIncrementLogStartOffset (DeleteRecords; the high watermark is the log end)."""
        if offset > self.log_start:
            self.log_start = offset
            self.psm.on_log_start_offset_incremented(offset)

    def truncate(self, target: int) -> None:
        """UnifiedLog.truncateTo a batch boundary at or above the first segment's base and below the log end."""
        kept = [(b, batches) for b, batches in self.segments if b <= target]
        for base, _ in self.segments[len(kept):]:
            self.psm.snapshots.pop(base, None)
        last_base, last_batches = kept[-1]
        kept[-1] = (last_base, [b for b in last_batches if b.base_offset < target])
        self.segments = kept
        self.log_end = target
        self.log_start = min(target, self.log_start)
        self.rebuild_producer_state(target)

    def rebuild_producer_state(self, last_offset: int) -> None:
        """UnifiedLog.rebuildProducerState (not from a clean shutdown)."""
        psm = self.psm
        to_snapshot = {b for b, _ in self.segments[-2:]} | {last_offset}
        empty_before = psm.is_empty() and psm.last_map_offset >= last_offset
        psm.truncate_and_reload(self.log_start, last_offset, self.clock[0])
        if last_offset > psm.last_map_offset and not empty_before:
            start_from = psm.last_map_offset
            floor = max((b for b, _ in self.segments if b <= start_from), default=None)
            for base, batches in self.segments:
                if base >= last_offset or (floor is not None and base < floor):
                    continue
                start = max(base, psm.last_map_offset, self.log_start)
                psm.last_map_offset = start
                if base in to_snapshot:
                    psm.take_snapshot()
                self._replay([b for b in batches if b.last_offset >= start and b.base_offset < last_offset])
        psm.last_map_offset = last_offset
        psm.take_snapshot()

    def _replay(self, batches: list[LogBatch]) -> None:
        """UnifiedLog.loadProducersFromRecords: one append info per producer for the whole read, as a follower."""
        infos: dict[int, ProducerAppendInfo] = {}
        completed: list[tuple[int, int]] = []
        for b in batches:
            if b.producer_id == NO_PRODUCER_ID:
                continue
            info = infos.get(b.producer_id)
            if info is None:
                info = infos[b.producer_id] = self.psm.prepare_update(b.producer_id, REPLICATION)
            if b.marker is not None:
                done = info.append_end_txn_marker(b.epoch, b.marker, b.base_offset, b.timestamp, TV_UNKNOWN)
                if done is not None:
                    completed.append(done)
            else:
                info.append_data_batch(b.epoch, b.base_seq, b.last_seq, b.timestamp, b.base_offset, b.last_offset,
                                       b.transactional)
            self._after_transactional(b)
        for info in infos.values():
            self.psm.update(info)
        for first, last in completed:
            self.psm.complete_txn(first, last)
