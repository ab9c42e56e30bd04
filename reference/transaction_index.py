"""The last stable offset and the aborted-transaction index a `read_committed` fetch uses, bit-exact.

Mirrors, in kafka-storage's `org.apache.kafka.storage.internals.log` (storage/src/main/java/org/apache/kafka/storage/
internals/log/ in apache/kafka, read at `1eb7644349` between 3.9 and 4.0 and in 4.4.0's bytecode, compared through the
bridge on 3.9.1, 4.0.2, 4.1.2 and 4.4.0):

- `ProducerStateManager.java`: the ongoing transactions by first offset (`firstUndecidedOffset`), the completed ones
  not yet below the high watermark (`unreplicatedTxns`, dropped by `onHighWatermarkUpdated` and
  `onLogStartOffsetIncremented`), `firstUnstableOffset` (the lower of both first offsets) and
  `lastStableOffset(CompletedTxn)` (the first offset of the first ongoing transaction of another producer, else the
  completed transaction's last offset + 1);
- `TransactionIndex.java`, `AbortedTxn.java` (`org.apache.kafka.common.message.AbortedTxn`, generated, from 4.4) and
  `LogSegment.updateTxnIndex`: an ABORT marker appends (producer id, first offset, marker offset, last stable offset
  at completion) to the active segment's index; a COMMIT appends nothing; `truncateTo` cuts the index at the first
  entry whose last offset is at or above the target; `collectAbortedTxns(fetchOffset, upperBound)` keeps entries
  with last offset >= fetchOffset and first offset < upperBound, complete at the first entry whose last stable
  offset is >= upperBound;
- `UnifiedLog` (`core/src/main/scala/kafka/log/UnifiedLog.scala` up to 4.0, `UnifiedLog.java` from 4.1): the entry
  written with `lastStableOffset(completedTxn)` before `completeTxn`; `maybeIncrementFirstUnstableOffset` (the
  producer state's first unstable offset, raised to the log start's position when below it) after an append, a
  high-watermark update and a log-start move, and not after a truncation that leaves the high watermark below the
  new log end (the first unstable offset then keeps its old value); `lastStableOffset` = the first unstable offset
  when below the high watermark, else the high watermark; `updateHighWatermark` bounded by the log start and the
  log end; a log start past the high watermark refused (`OffsetOutOfRangeException`);
- `LocalLog` (`core/src/main/scala/kafka/log/LocalLog.scala` in 3.9, `LocalLog.java` from 4.0): `read` for a
  `read_committed` fetch (bounded by the last stable offset: a fetch at or past it is empty, with an empty list of
  aborted transactions) and `addAbortedTransactions`' walk, segment by segment from the one the fetch read, until a
  search is complete, up to the end of the segment read when no offset-index entry bounds the fetch.

`TxnLog` is `producer_state.PartitionLog` whose high watermark is its own (moved by `update_high_watermark`, as a
leader's is by its followers' fetches). One `ReleaseProfile` field: `fetch_offset_metadata_batch_base` (4.0,
KAFKA-17803), the offset a high watermark or first unstable offset set inside a batch becomes when UnifiedLog looks
up its position (from 4.0 the batch's base offset, which can put them below the log start). What is not here: a
fetch's upper bound from an offset-index entry past the bytes it read (`LogSegment.fetchUpperBoundOffset`, every
`index.interval.bytes`: `read_committed` takes the segment's end, as with no entry), restarts, the log cleaner.
"""

from __future__ import annotations

from dataclasses import dataclass

from kcheck.reference.producer_state import (
    LogBatch,
    PartitionLog,
    ProducerAppendInfo,
    ProducerStateError,
    ProducerStateManager,
)
from kcheck.reference.releases import ReleaseProfile

__all__ = ["AbortedTxn", "TxnLog", "collect_abortable", "first_unstable_offset", "last_stable_offset_at_completion",
           "truncate_index"]


@dataclass(frozen=True)
class AbortedTxn:
    """One TransactionIndex entry (AbortedTxn.java)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def first_unstable_offset(psm: ProducerStateManager) -> int | None:
    """ProducerStateManager.firstUnstableOffset: the lowest first offset, ongoing or completed above the HW."""
    return min([*psm.ongoing, *psm.unreplicated], default=None)


def last_stable_offset_at_completion(psm: ProducerStateManager, producer_id: int, last_offset: int) -> int:
    """ProducerStateManager.lastStableOffset(completedTxn): findNextIncompleteTxn walks ongoing by first offset."""
    return next((first for first in sorted(psm.ongoing) if psm.ongoing[first] != producer_id), last_offset + 1)


def collect_abortable(index: list[AbortedTxn], fetch_offset: int, upper: int) -> tuple[list[AbortedTxn], bool]:
    """TransactionIndex.collectAbortedTxns: the entries the range overlaps, and whether the search is complete."""
    found = []
    for txn in index:
        if txn.last_offset >= fetch_offset and txn.first_offset < upper:
            found.append(txn)
        if txn.last_stable_offset >= upper:
            return found, True
    return found, False


def truncate_index(index: list[AbortedTxn], offset: int) -> list[AbortedTxn]:
    """TransactionIndex.truncateTo: cut at the first entry whose last offset is at or above `offset`."""
    cut = next((i for i, t in enumerate(index) if t.last_offset >= offset), len(index))
    return index[:cut]


class TxnLog(PartitionLog):
    """A leader's partition log with its high watermark, first unstable offset and transaction indexes."""

    def __init__(self, expiration_ms: int, now: int, release: ReleaseProfile | None = None) -> None:
        super().__init__(expiration_ms, now, release)
        self.hw = 0
        self.hw_offset_only = True  # highWatermarkMetadata without its position (at first, and set below the end)
        self.first_unstable: int | None = None  # UnifiedLog.firstUnstableOffsetMetadata's offset
        self.indexes: dict[int, list[AbortedTxn]] = {0: []}  # segment base -> its TransactionIndex
        self._aborting = False

    @property
    def last_stable_offset(self) -> int:
        fuo = self.first_unstable
        return fuo if fuo is not None and fuo < self.hw else self.hw

    # -- UnifiedLog's high watermark and first unstable offset
    def update_high_watermark(self, offset: int) -> None:
        """UnifiedLog.updateHighWatermark(offset): at the log end it takes the end's full metadata, below it the offset
        alone."""
        if offset >= self.log_end:
            self._set_high_watermark(self.log_end, False)
        else:
            self._set_high_watermark(max(offset, self.log_start), True)

    def _set_high_watermark(self, offset: int, offset_only: bool) -> None:
        """UnifiedLog.updateHighWatermarkMetadata."""
        self.hw, self.hw_offset_only = offset, offset_only
        self.psm.remove_unreplicated(offset)
        self._maybe_increment_first_unstable()

    def offset_metadata(self, offset: int) -> int:
        """UnifiedLog.maybeConvertToOffsetMetadata's offset: LocalLog.read finds the first batch whose last offset is
        at or past `offset` and names it by its base offset (from 4.0, `fetch_offset_metadata_batch_base`, KAFKA-17803;
        before, by `offset`), the log end past every batch, the offset alone past the log end."""
        if offset > self.log_end:
            return offset
        floor = max(b for b, _ in self.segments if b <= offset)
        found = next((b.base_offset for base, batches in self.segments if base >= floor
                      for b in batches if b.last_offset >= offset), None)
        if found is None:
            return self.log_end
        return found if self.release.fetch_offset_metadata_batch_base else offset

    def _maybe_increment_first_unstable(self) -> None:
        """UnifiedLog.maybeIncrementFirstUnstableOffset: below the log start, the position of the log start (the base
        of its batch). The producer state's first offsets are batch bases, which the conversion of an offset-only one
        (after a reload) keeps."""
        first = first_unstable_offset(self.psm)
        if first is not None and first < self.log_start:
            first = self.offset_metadata(self.log_start)
        self.first_unstable = first

    def _follow_log_end(self) -> None:
        """UnifiedLog.updateHighWatermarkWithLogEndOffset."""
        if self.hw >= self.log_end:
            self._set_high_watermark(self.log_end, False)

    # -- the steps PartitionLog has, with the index and the high watermark
    def append_marker(self, producer_id: int, epoch: int, coordinator_epoch: int, transaction_version: int,
                      timestamp: int, commit: bool = True) -> tuple[str | int, ...]:
        self._aborting = not commit
        return super().append_marker(producer_id, epoch, coordinator_epoch, transaction_version, timestamp)

    def _write(self, batch: LogBatch, info: ProducerAppendInfo | None, completed: tuple[int, int] | None) -> None:
        psm = self.psm
        self.segments[-1][1].append(batch)
        self.log_end = batch.last_offset + 1
        self._follow_log_end()
        if info is not None:
            psm.update(info)
        if completed is not None:
            first, last = completed
            if self._aborting:
                lso = last_stable_offset_at_completion(psm, batch.producer_id, last)
                self.indexes[self.segments[-1][0]].append(AbortedTxn(batch.producer_id, first, last, lso))
            psm.complete_txn(first, last)
        psm.last_map_offset = self.log_end
        self._maybe_increment_first_unstable()

    def roll(self) -> None:
        super().roll()
        self.indexes[self.log_end] = []
        self._follow_log_end()

    def delete_segments(self, count: int) -> None:
        """The log start to the (count+1)th segment's base, then UnifiedLog.deleteOldSegments: every leading segment
        whose next one starts at or below the log start (more than `count` when the log start is already past)."""
        self.increment_log_start(self.segments[count][0])
        count = 0
        while count + 1 < len(self.segments) and self.segments[count + 1][0] <= self.log_start:
            count += 1
        for base, _ in self.segments[:count]:
            del self.indexes[base]
        super().delete_segments(count)

    def increment_log_start(self, offset: int) -> None:
        """UnifiedLog.maybeIncrementLogStartOffset."""
        if offset > self.hw:
            raise ProducerStateError("OffsetOutOfRangeException", "the log start past the high watermark")
        if offset > self.log_start:
            self.log_start = offset
            self.psm.on_log_start_offset_incremented(offset)
            self._maybe_increment_first_unstable()

    def truncate(self, target: int) -> None:
        for base in [b for b in self.indexes if b > target]:
            del self.indexes[base]
        active = max(self.indexes)
        self.indexes[active] = truncate_index(self.indexes[active], target)
        super().truncate(target)
        if self.hw >= self.log_end:
            self.update_high_watermark(self.log_end)

    # -- a read_committed fetch
    def collect_aborted(self, start: int, upper: int) -> list[AbortedTxn]:
        """LocalLog's walk for a fetch at `start`: from floorSegment(start) on, until a search is complete."""
        floor = max((b for b, _ in self.segments if b <= start), default=None)
        if floor is None:
            return []
        found: list[AbortedTxn] = []
        for base, _ in self.segments:
            if base < floor:
                continue
            txns, complete = collect_abortable(self.indexes[base], start, upper)
            found += txns
            if complete:
                break
        return found

    def read_committed(self, start: int) -> list[tuple[int, int]] | None:
        """UnifiedLog.read(start, Integer.MAX_VALUE, TXN_COMMITTED, true)'s aborted transactions (producer id, first
        offset): None when the read finds no batch at or after `start` (no list at all)."""
        if start < self.log_start or start > self.log_end:
            raise ProducerStateError("OffsetOutOfRangeException")
        if self.hw_offset_only:  # fetchHighWatermarkMetadata: the position found, the high watermark moved to it
            self._set_high_watermark(self.offset_metadata(self.hw), False)
        if start >= self.last_stable_offset:
            return []
        floor = max(i for i, (b, _) in enumerate(self.segments) if b <= start)
        for i in range(floor, len(self.segments)):
            if any(b.last_offset >= start for b in self.segments[i][1]):
                upper = self.segments[i + 1][0] if i + 1 < len(self.segments) else self.log_end
                found: list[tuple[int, int]] = []
                for base, _ in self.segments[i:]:
                    txns, complete = collect_abortable(self.indexes[base], start, upper)
                    found += [(t.producer_id, t.first_offset) for t in txns]
                    if complete:
                        break
                return found
        return None
