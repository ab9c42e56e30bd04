"""The transactions model (`kcheck.model.transactions`) bound to Kafka's code, as a `kcheck.model.interface.Model`
with the properties Kafka promises for transactions.

`ReferenceKafka` is the model's `KafkaCode`: the coordinator's transitions are `kcheck.reference.txn_metadata.
TxnMetadata`, each partition is a `kcheck.reference.transaction_index.TxnLog` (producer state, markers, the aborted-
transaction index, the last stable offset), all as the release profile of 4.4.0 has them, with the rule
`marker_epoch` as its `producer_marker_epoch_by_transaction_version`.

The state invariants (hard: Kafka promises them, KIP-98 and KIP-890):

- `txn.no-aborted-read`: a read_committed consumer (the fetch up to the last stable offset with its aborted-
  transaction list, filtered as the consumer's `CompletedFetch` does) returns no record of a transaction the
  coordinator did not commit;
- `txn.committed-whole`: it returns every record of a committed transaction below the last stable offset (a
  committed transaction is seen whole on each partition, not torn by another transaction's abort marker);
- `txn.marker-own`: a marker ends only the transaction it was written for (flagged as the marker is appended);
- `txn.end-own`: an EndTxn ends only the transaction it was sent for: a copy or a late retry of one does not end the
  coordinator's transaction once its instance has moved on (flagged as the coordinator prepares it);
- `txn.no-hanging`: every transaction open on a partition is one the coordinator has open with that partition
  (KIP-664's hanging transaction: open on a partition, ended or unknown at the coordinator);
- `txn.fenced-writes-nothing`: no write of a producer instance is appended after a newer epoch fenced it, but in
  the window Kafka leaves: before the fencing abort's marker reaches the partition (which then aborts the write);
- `txn.markers-outstanding`: while the coordinator is in PrepareCommit or PrepareAbort, each partition still
  waiting for its marker has one in flight under the current coordinator epoch (else only a coordinator failover
  ends the transaction).

Liveness (`LIVENESS`, for `kcheck.model.liveness.check_liveness`, deliveries fair): `txn.ends` (a prepared
transaction eventually completes) and `txn.lso-reaches-end` (unless a transaction is open at the coordinator, every
partition's last stable offset eventually reaches its log end).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from kcheck.model.interface import StateInvariant
from kcheck.model.liveness import LivenessProperty
from kcheck.model.rule_set import Variant
from kcheck.model.transactions.model import PREPARED, TransactionsSystem, tag_text
from kcheck.model.transactions.rules import Rules
from kcheck.model.transactions.state import ONGOING, TIMEOUT_MS, Batch, Config, Entry, Meta, Part, State
from kcheck.reference import txn_metadata as tm
from kcheck.reference.producer_state import BatchMetadata, LogBatch, ProducerStateEntry, VerificationStateEntry
from kcheck.reference.releases import ReleaseProfile, profile
from kcheck.reference.transaction_index import AbortedTxn, TxnLog

RELEASE = "4.4.0"
_NEVER = 10**12  # producer.id.expiration.ms: no expiry in the model


class ReferenceKafka:
    """`kcheck.model.transactions.model.KafkaCode` on the bit-exact references."""

    def __init__(self, release: ReleaseProfile) -> None:
        self.release = release

    def metadata(self, meta: Meta, pending: int | None = None) -> tm.TxnMetadata:
        live = tm.TxnMetadata(self.release, meta.producer_id, meta.prev_producer_id, meta.next_producer_id,
                              meta.epoch, meta.last_epoch, meta.timeout_ms, meta.state, meta.partitions, meta.start,
                              meta.update, meta.tv, meta.has_failed_epoch_fence)
        live.pending = pending
        return live

    def transit(self, record: Meta) -> tm.Transit:
        return tm.Transit(record.producer_id, record.prev_producer_id, record.next_producer_id, record.epoch,
                          record.last_epoch, record.timeout_ms, record.state, set(record.partitions), record.start,
                          record.update, record.tv)

    def frozen_metadata(self, live: tm.TxnMetadata) -> Meta:
        """The metadata's fields (its pending state is the coordinator's transit, kept beside it)."""
        return Meta(live.producer_id, live.prev_producer_id, live.next_producer_id, live.epoch, live.last_epoch,
                    live.timeout_ms, live.state, frozenset(live.partitions), live.start, live.update, live.tv,
                    live.has_failed_epoch_fence)

    def increment_epoch(self, live: tm.TxnMetadata, expected: int | None) -> tm.Transit | None:
        try:
            t = live.prepare_increment_producer_epoch(TIMEOUT_MS, expected, 0)
        except tm.JavaThrow:  # 4.2's ProducerFencedException
            return None
        return t if isinstance(t, tm.Transit) else None  # Left(PRODUCER_FENCED)

    def record(self, t: tm.Transit) -> Meta:
        return Meta(t.producer_id, t.prev_producer_id, t.next_producer_id, t.epoch, t.last_epoch, t.timeout_ms,
                    t.state, frozenset(t.partitions), t.start, t.update, t.tv)

    def partition(self, part: Part) -> TxnLog:
        log = TxnLog(_NEVER, part.log_end, self.release)  # the clock is the log end: a verification entry's
        # timestamp names it (its VerificationGuard): a later entry is made after the append that cleared this one
        log.segments = [(0, [LogBatch(b.offset, b.offset, b.producer_id, b.epoch, b.seq, True, 0, b.marker)
                             for b in part.batches])]
        log.log_end = log.hw = part.log_end
        log.hw_offset_only = False
        psm = log.psm
        psm.producers = {e.producer_id: ProducerStateEntry(e.producer_id, e.epoch, e.coordinator_epoch,
                                                           e.last_timestamp, e.txn_first_offset,
                                                           deque(BatchMetadata(*b) for b in e.batches))
                         for e in part.entries}
        psm.verification = {v[0]: VerificationStateEntry(*v[1:]) for v in part.verification}
        psm.ongoing = dict(part.ongoing)
        psm.last_map_offset = psm.last_snap_offset = part.log_end
        log.indexes = {0: [AbortedTxn(*a) for a in part.aborted]}
        log.first_unstable = min(psm.ongoing, default=None)
        return log

    def frozen_partition(self, live: TxnLog, before: Part, commit: bool) -> Part:
        assert not live.psm.unreplicated and len(live.segments) == 1
        new = tuple(Batch(b.base_offset, b.producer_id, b.epoch, b.base_seq, b.marker, commit and b.marker is not None)
                    for b in live.segments[0][1][before.log_end:])
        entries = tuple(Entry(e.producer_id, e.producer_epoch, e.coordinator_epoch, e.last_timestamp,
                              e.current_txn_first_offset, tuple((b.last_seq, b.last_offset, b.offset_delta,
                                                                 b.timestamp) for b in e.batches))
                        for _, e in sorted(live.psm.producers.items()))
        verification = tuple((pid, v.timestamp, v.lowest_sequence, v.epoch, v.supports_epoch_bump)
                             for pid, v in sorted(live.psm.verification.items()))
        return Part(before.batches + new, entries, verification, tuple(sorted(live.psm.ongoing.items())),
                    tuple((a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset)
                          for a in live.indexes[0]))


def release_for(rules: Rules) -> ReleaseProfile:
    return replace(profile(RELEASE), producer_marker_epoch_by_transaction_version=rules.marker_epoch())


# ---- what a read_committed consumer returns ----------------------------------------------------------------------


def read_committed(kafka: ReferenceKafka, part: Part) -> tuple[int, list[int]]:
    """(the last stable offset, the offsets of the data batches a read_committed consumer returns from offset 0):
    the fetch (`UnifiedLog.read` with TXN_COMMITTED: up to the last stable offset, with the aborted transactions),
    then the consumer's filter (`CompletedFetch.nextFetchedRecord`: a producer joins the aborted set when its
    aborted transaction's first offset is reached, and leaves it at its ABORT marker; control batches are
    skipped)."""
    if not part.batches:
        return 0, []
    log = kafka.partition(part)
    lso = log.last_stable_offset
    pending = sorted((first, pid) for pid, first in (log.read_committed(0) or []))
    aborting: set[int] = set()
    out = []
    for b in part.batches[:lso]:
        while pending and pending[0][0] <= b.offset:
            aborting.add(pending.pop(0)[1])
        if b.marker is not None:
            if not b.commit:
                aborting.discard(b.producer_id)
        elif b.producer_id not in aborting:
            out.append(b.offset)
    return lso, out


def _reads(kafka: ReferenceKafka) -> Callable[[State], list[tuple[int, list[int]]]]:
    memo: dict[int, tuple[Part, tuple[int, list[int]]]] = {}  # per Part object: successors share their parts

    def read(p: Part) -> tuple[int, list[int]]:
        got = memo.get(id(p))
        if got is None or got[0] is not p:
            if len(memo) >= 100_000:
                memo.clear()
            got = memo[id(p)] = (p, read_committed(kafka, p))
        return got[1]

    def reads(s: State) -> list[tuple[int, list[int]]]:
        return [read(p) for p in s.parts]
    return reads


def no_aborted_read(reads: Callable[[State], list[tuple[int, list[int]]]]) -> Callable[[State], str | None]:
    def holds(s: State) -> str | None:
        for n, (_, offsets) in enumerate(reads(s)):
            for off in offsets:
                tag = s.history.tags[n][off]
                if tag not in s.history.committed:
                    return (f"read_committed on partition {n} returns offset {off}, a write of {tag_text(tag)}, "
                            f"which the coordinator {'aborted' if tag in s.history.aborted else 'never committed'}")
        return None
    return holds


def committed_whole(reads: Callable[[State], list[tuple[int, list[int]]]]) -> Callable[[State], str | None]:
    def holds(s: State) -> str | None:
        for n, (lso, offsets) in enumerate(reads(s)):
            tags = s.history.tags[n]
            for off in range(lso):
                if tags[off] in s.history.committed and off not in offsets:
                    return (f"read_committed on partition {n} skips offset {off}, a write of the committed "
                            f"{tag_text(tags[off])} below the last stable offset {lso}")
        return None
    return holds


def flagged(invariant: str) -> Callable[[State], str | None]:
    def holds(s: State) -> str | None:
        return next((msg for inv, msg in sorted(s.history.flags) if inv == invariant), None)
    return holds


def no_hanging(s: State) -> str | None:
    meta = s.coordinator.meta
    for n, part in enumerate(s.parts):
        for first, pid in part.ongoing:
            known = meta.producer_id == pid and n in meta.partitions and meta.state in (ONGOING, *PREPARED)
            if not known:
                return (f"partition {n} has a transaction of producer {pid} open from offset {first}, which the "
                        f"coordinator ({tm.SCALA_NAMES[meta.state]}, partitions {sorted(meta.partitions)}) does not "
                        "have open there")
    return None


def markers_outstanding(s: State) -> str | None:
    c = s.coordinator
    if c.meta.state not in PREPARED:
        return None
    for n in sorted(c.meta.partitions):
        if not any(m.kind == "marker" and m.partition == n and m.coordinator_epoch == c.epoch for m in s.bag):
            return (f"the coordinator is in {tm.SCALA_NAMES[c.meta.state]} waiting for partition {n}'s marker, and "
                    "none is in flight")
    return None


class TransactionsModel(TransactionsSystem):
    """`kcheck.model.interface.Model` over the transactions model's `State`, bound to the references."""

    def __init__(self, cfg: Config | None = None, rules: Rules | None = None) -> None:
        rules = rules or Rules.current()
        self.reference = ReferenceKafka(release_for(rules))
        super().__init__(self.reference, cfg, rules)

    @classmethod
    def of_variant(cls, v: Variant[Rules], **overrides: Any) -> TransactionsModel:
        return cls(Config(**{**dict(v.settings), **overrides}), v.rules)

    def invariants(self) -> Sequence[StateInvariant[State]]:
        reads = _reads(self.reference)
        return [
            StateInvariant("txn.no-aborted-read", "read_committed returns no record of a transaction not committed",
                           no_aborted_read(reads)),
            StateInvariant("txn.committed-whole", "read_committed returns every record of a committed transaction "
                           "below the last stable offset", committed_whole(reads)),
            StateInvariant("txn.marker-own", "a marker ends only the transaction it was written for",
                           flagged("txn.marker-own")),
            StateInvariant("txn.end-own", "an EndTxn ends only the transaction it was sent for",
                           flagged("txn.end-own")),
            StateInvariant("txn.no-hanging", "every transaction open on a partition is open there at the "
                           "coordinator", no_hanging),
            StateInvariant("txn.fenced-writes-nothing", "no write of a fenced producer is appended (but before the "
                           "fencing abort's marker)",
                           flagged("txn.fenced-writes-nothing")),
            StateInvariant("txn.markers-outstanding", "a prepared transaction has a marker in flight for each "
                           "partition it waits on", markers_outstanding),
        ]

    def liveness(self) -> list[LivenessProperty[State]]:
        reads = _reads(self.reference)

        def lso_at_end(s: State) -> bool:
            return s.coordinator.meta.state == ONGOING or all(
                lso == p.log_end for p, (lso, _) in zip(s.parts, reads(s), strict=True))

        return [LivenessProperty("txn.ends", "a prepared transaction eventually completes",
                                 lambda s: s.coordinator.meta.state not in PREPARED),
                LivenessProperty("txn.lso-reaches-end", "with no transaction open at the coordinator, every "
                                 "partition's last stable offset eventually reaches its log end", lso_at_end)]


INVARIANT_IDS = ("txn.no-aborted-read", "txn.committed-whole", "txn.marker-own", "txn.end-own", "txn.no-hanging",
                 "txn.fenced-writes-nothing", "txn.markers-outstanding")
