"""A fetch waiting in the fetch purgatory: when a DelayedFetch completes, and what it then reads.

Mirrors `kafka.server.DelayedFetch` (core/src/main/scala/kafka/server/DelayedFetch.scala, Scala in kafka_2.13 in
every release from 3.9 to 4.4: tryComplete, onComplete, onExpiration) and the LogOffsetMetadata comparisons it uses
(storage/src/main/java/org/apache/kafka/storage/internals/log/LogOffsetMetadata.java: onOlderSegment, onSameSegment,
positionDiff, messageOffsetOnly, UNKNOWN_OFFSET_METADATA), with DelayedOperation's completion flag (forceComplete,
run). The decision is the same in 3.9.1, 4.0.2, 4.1.2, 4.3.1 (their sources jars) and 4.4.0 (javap -c: only the
ReplicaQuota type moved); the containers differ (a Seq of Scala FetchPartitionStatus up to 4.1, a LinkedHashMap of
the Java record from 4.2: javap) and the harness builds each. KAFKA-16452 (3.8.0, before every release here) made
UNKNOWN_OFFSET_METADATA (-1, -1, -1) (it was (-1, 0, 0)) and an offset-only side never an older or the same segment
(it threw). Bit-exact through the broker-side bridge (word DFETCH,
`kafka_delayed_fetch`), call by call: which collaborators it asks, with which arguments, in which order.

The class has no KIP-392 case of its own: a preferred read replica is answered at once by
ReplicaManager.fetchMessages, before any DelayedFetch exists; a consumer with client metadata only makes the
partition's snapshot not leader-only (fetchOffsetSnapshot(epoch, fetchOnlyFromLeader=false)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from kcheck.reference.fetch import (
    FENCED_LEADER_EPOCH,
    HIGH_WATERMARK,
    KAFKA_STORAGE_ERROR,
    LOG_END,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    TXN_COMMITTED,
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    UNKNOWN_TOPIC_OR_PARTITION,
    OffsetMetadata,
    PartitionFetch,
    fetch_params,
)

UNKNOWN_OFFSET_METADATA = OffsetMetadata(-1, -1, -1)  # LogOffsetMetadata.UNKNOWN_OFFSET_METADATA

# The exceptions tryComplete catches (each completes the fetch at once, Kafka's cases A-E), by Errors code.
CAUGHT = {NOT_LEADER_OR_FOLLOWER: "A/B", UNKNOWN_TOPIC_OR_PARTITION: "C", KAFKA_STORAGE_ERROR: "D",
          FENCED_LEADER_EPOCH: "E"}

# Errors code -> the exception class Errors.exception() throws: what escapes tryComplete when not caught.
EXCEPTION_NAMES = {
    -1: "UnknownServerException", 3: "UnknownTopicOrPartitionException", 5: "LeaderNotAvailableException",
    6: "NotLeaderOrFollowerException", 9: "ReplicaNotAvailableException", 56: "KafkaStorageException",
    74: "FencedLeaderEpochException", 75: "UnknownLeaderEpochException", 78: "OffsetNotAvailableException",
}


def _int32(x: int) -> int:
    """Java int arithmetic: wrap to 32 bits."""
    return (x + 2**31) % 2**32 - 2**31


def on_older_segment(a: OffsetMetadata, b: OffsetMetadata) -> bool:
    """LogOffsetMetadata.onOlderSegment: false when either side knows only its offset (KAFKA-16452)."""
    return not (a.offset_only or b.offset_only) and a.segment_base < b.segment_base


def on_same_segment(a: OffsetMetadata, b: OffsetMetadata) -> bool:
    return not (a.offset_only or b.offset_only) and a.segment_base == b.segment_base


@dataclass(frozen=True)
class FetchWait:
    """FetchParams as DelayedFetch reads them: who fetches, the isolation, min bytes, the wait."""

    replica_id: int
    isolation: str  # LOG_END, HIGH_WATERMARK, TXN_COMMITTED
    min_bytes: int
    max_wait_ms: int = 500
    client_metadata: bool = False  # a consumer that sent its rack (KIP-392)

    @cached_property
    def from_follower(self) -> bool:
        return fetch_params(12, self.replica_id, False, self.client_metadata).from_follower

    @cached_property
    def fetch_only_leader(self) -> bool:
        return fetch_params(12, self.replica_id, False, self.client_metadata).fetch_only_leader


@dataclass(frozen=True)
class Waiting:
    """FetchPartitionStatus: where the first read left the fetch (startOffsetMetadata) and the request's fields."""

    start: OffsetMetadata
    fetch: PartitionFetch
    log_start_offset: int = 0


@dataclass(frozen=True)
class PartitionNow:
    """One partition as the broker answers DelayedFetch's questions at one tryComplete."""

    lookup_error: int = NONE  # getPartitionOrException throws this code's exception (NONE: the partition is here)
    snapshot_error: int = NONE  # fetchOffsetSnapshot(current epoch, fetchOnlyLeader) throws it
    log_end: OffsetMetadata = UNKNOWN_OFFSET_METADATA
    high_watermark: OffsetMetadata = UNKNOWN_OFFSET_METADATA
    last_stable: OffsetMetadata = UNKNOWN_OFFSET_METADATA
    throttled: bool = False  # shouldLeaderThrottle: a follower over the leader's replication quota
    epoch_end: tuple[int, int, int] = (NONE, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)  # lastOffsetForLeaderEpoch:
    # (error code, leader epoch, end offset)

    def end(self, isolation: str) -> OffsetMetadata:
        return {LOG_END: self.log_end, HIGH_WATERMARK: self.high_watermark, TXN_COMMITTED: self.last_stable}[isolation]


@dataclass(frozen=True)
class Outcome:
    """One tryComplete: its result (None when it threw), why it completed (Kafka's case letter) or None, the bytes
    accumulated towards min bytes, the exception that escaped, and the collaborators' calls in order."""

    result: bool | None
    case: str | None
    accumulated: int
    raised: str | None = None
    calls: tuple[str, ...] = ()


class _Done(Exception):  # noqa: N818 -- Scala's non-local `return forceComplete()` out of the loop
    def __init__(self, case: str) -> None:
        super().__init__(case)
        self.case = case


@dataclass
class DelayedFetch:
    """One fetch in the purgatory. `reads` holds each readFromLog onComplete asked for (the partitions, in order);
    `expired` counts onExpiration by fetcher type (the ExpiresPerSec meters)."""

    params: FetchWait
    partitions: list[Waiting]
    completed: bool = False
    reads: list[tuple[Waiting, ...]] = field(default_factory=list)
    expired: dict[str, int] = field(default_factory=lambda: {"follower": 0, "consumer": 0})

    def force_complete(self) -> bool:
        """DelayedOperation.forceComplete: the first call completes and runs onComplete, which reads every partition
        of the request (readFromLog with readFromPurgatory) and answers; later calls do nothing."""
        if self.completed:
            return False
        self.completed = True
        self.reads.append(tuple(self.partitions))
        return True

    def run(self) -> None:
        """DelayedOperation.run at the deadline: forceComplete, and onExpiration marks the follower's or the
        consumer's ExpiresPerSec when that completed it."""
        if self.force_complete():
            self.expired["follower" if self.params.from_follower else "consumer"] += 1

    def try_complete(self, now: Sequence[PartitionNow]) -> Outcome:
        """DelayedFetch.tryComplete, partition by partition in request order (Kafka's cases A-H)."""
        calls: list[str] = []
        accumulated = 0
        for i, (w, p) in enumerate(zip(self.partitions, now, strict=True)):
            try:
                accumulated = self._partition(i, w, p, accumulated, calls)
            except _Done as done:
                return Outcome(self.force_complete(), done.case, accumulated, calls=tuple(calls))
            except _Raised as e:
                return Outcome(None, None, accumulated, EXCEPTION_NAMES.get(e.code, str(e.code)), tuple(calls))
        if accumulated >= self.params.min_bytes:  # Case G
            return Outcome(self.force_complete(), "G", accumulated, calls=tuple(calls))
        return Outcome(False, None, accumulated, calls=tuple(calls))

    def _partition(self, i: int, w: Waiting, p: PartitionNow, accumulated: int, calls: list[str]) -> int:
        """One partition's checks: the bytes accumulated after it, or _Done (complete now) or _Raised."""
        if w.start == UNKNOWN_OFFSET_METADATA:  # equals(): an offset of -1 with a segment is not unknown
            return accumulated
        epoch = "-" if w.fetch.current_leader_epoch is None else str(w.fetch.current_leader_epoch)
        calls.append(f"g{i}")
        _throw(p.lookup_error)
        calls.append(f"s{i}:{epoch}:{int(self.params.fetch_only_leader)}")
        _throw(p.snapshot_error)
        end = p.end(self.params.isolation)
        if w.start.offset > end.offset:
            raise _Done("F:truncated")  # a leader truncated below where the fetch waits
        if w.start.offset < end.offset:
            if on_older_segment(w.start, end):
                if not self._throttled(i, p, calls):
                    raise _Done("F:older-segment")
            elif on_same_segment(w.start, end):
                available = min(_int32(end.position - w.start.position), w.fetch.max_bytes)  # positionDiff, maxBytes
                if not self._throttled(i, p, calls):
                    accumulated = _int32(accumulated + available)
        last = w.fetch.last_fetched_epoch
        if last is not None:
            calls.append(f"e{i}:{epoch}:{last}:0")
            error, leader_epoch, end_offset = p.epoch_end
            if error != NONE or end_offset == UNDEFINED_EPOCH_OFFSET or leader_epoch == UNDEFINED_EPOCH:
                raise _Done("H:no-epoch-end")
            if leader_epoch < last or end_offset < w.fetch.fetch_offset:
                raise _Done("H:diverging")
        return accumulated

    def _throttled(self, i: int, p: PartitionNow, calls: list[str]) -> bool:
        """`isFromFollower && shouldLeaderThrottle(...)`: asked only for a follower."""
        if not self.params.from_follower:
            return False
        calls.append(f"q{i}:{self.params.replica_id}")
        return p.throttled


class _Raised(Exception):  # noqa: N818 -- an exception tryComplete does not catch: it escapes
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _throw(code: int) -> None:
    """A collaborator throwing Errors.forCode(code).exception(): cases A-E complete, any other escapes."""
    if code == NONE:
        return
    if code in CAUGHT:
        raise _Done(CAUGHT[code])
    raise _Raised(code)
