"""Fetch bounds: what a leader answers a Fetch, per partition, and whether it answers at once.

Which Kafka code each part mirrors, and how it is checked:

- `EpochCache`: storage/.../epoch/LeaderEpochFileCache.java (assign, truncateFromStart/End, endOffsetFor).
  Bit-exact against the real class of each release through the bridge (word EPOCH, `kafka_fetch`).
- `fetch_params`: FetchIsolation.of and FetchParams (isFromFollower, isFromConsumer, fetchOnlyLeader,
  hardMaxBytesLimit): kafka-storage's classes in 3.9, kafka-server-common's from 4.0. Bit-exact (word FPARAMS).
- `PartitionLog.read`: UnifiedLog.read (checkLogStartOffset, the isolation bound: log end, high watermark or last
  stable offset), LocalLog.read (the floor segment, the bound's position, the segments after it) and
  LogSegment.read / FileRecords.slice (minOneMessage: the first batch even if bigger than maxBytes). Bit-exact
  against a real LocalLog under the release's real UnifiedLog (3.9: kafka_2.13's Scala classes; 4.1+: kafka-storage;
  4.0: kafka-storage's LocalLog, with UnifiedLog.read's three steps done by the harness as 4.0's UnifiedLog.scala
  does them) on logs built from the same batches (word FREAD).
- `fetch_partition`: Partition.fetchRecords / readRecords / getLocalLog / followerReplicaOrThrow /
  checkCurrentLeaderEpoch (core/src/main/scala/kafka/cluster/Partition.scala; the same logic in the 3.9.1, 4.0.2,
  4.1.2 and 4.3.1 sources jars, 4.4.0 publishes none). Scala in kafka_2.13 and bound to ReplicaManager: a port,
  checked on real brokers (tests/test_fetch_cluster.py, the session cluster's release) and built on the bit-exact
  parts above.
- `read_from_log`: ReplicaManager.readFromLog's byte sharing (core/.../server/ReplicaManager.scala): partitions in
  request order, each read with min(partition max bytes, what the response has left), minOneMessage until the first
  non-empty partition (KIP-74), an incomplete first entry replaced by nothing unless hardMaxBytesLimit (Fetch v<=2,
  which leaves minOneMessage off; in 3.9 and 4.0's code, reachable only in 3.9: 4.0 refuses Fetch v0-3, KIP-896).
  A port, checked on real brokers.
- `respond_now`: ReplicaManager.fetchMessages' answer-at-once test. A port, checked on real brokers. What happens to a
  fetch that waits is `delayed_fetch.py` (DelayedFetch, bit-exact through the bridge).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kcheck.reference.log_segment import Batch, LogSegment, SegmentConfig
from kcheck.reference.releases import ReleaseProfile, profile

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
FUTURE_LOCAL_REPLICA_ID = -3
TOPIC_PARTITION = "t-0"  # the harness's partition, named in OffsetOutOfRangeException's message

LOG_END, HIGH_WATERMARK, TXN_COMMITTED = "LOG_END", "HIGH_WATERMARK", "TXN_COMMITTED"

# Errors (org.apache.kafka.common.protocol.Errors) a fetch can answer per partition.
NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
KAFKA_STORAGE_ERROR = 56
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75


class FetchError(Exception):
    """A Java exception the reference raises where Kafka's code throws it: its simple name and message."""

    def __init__(self, java_name: str, message: str = "") -> None:
        super().__init__(f"{java_name}: {message}")
        self.java_name = java_name
        self.message = message


# ---------------------------------------------------------------- LeaderEpochFileCache


class EpochCache:
    """LeaderEpochFileCache: epoch -> start offset, both increasing."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, int]] = []  # (epoch, start offset), by epoch

    def assign(self, epoch: int, start: int) -> None:
        if epoch < 0 or start < 0:
            raise FetchError("IllegalArgumentException", f"Received invalid partition leader epoch entry "
                             f"EpochEntry(epoch={epoch}, startOffset={start})")
        latest = self.entries[-1] if self.entries else None
        if latest is not None and not (epoch != latest[0] or start < latest[1]):
            return  # isUpdateNeeded
        while self.entries and (self.entries[-1][0] >= epoch or self.entries[-1][1] >= start):
            self.entries.pop()  # maybeTruncateNonMonotonicEntries
        self.entries.append((epoch, start))

    def truncate_from_start(self, start: int) -> None:
        removed = None
        while self.entries and self.entries[0][1] <= start:
            removed = self.entries.pop(0)
        if removed is not None:
            self.entries.insert(0, (removed[0], start))

    def truncate_from_end(self, end: int) -> None:
        if end >= 0 and self.entries and self.entries[-1][1] >= end:
            while self.entries and self.entries[-1][1] >= end:
                self.entries.pop()

    def end_offset_for(self, requested: int, log_end: int) -> tuple[int, int]:
        """(epoch, end offset) as endOffsetFor answers: the LEO for the latest epoch, the next epoch's start for an
        older one (with the floor epoch, or the requested one when it is below every epoch), undefined above all."""
        if requested == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self.entries and self.entries[-1][0] == requested:
            return requested, log_end
        higher = next((e for e in self.entries if e[0] > requested), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = [e for e in self.entries if e[0] <= requested]
        return (floor[-1][0] if floor else requested), higher[1]


# ---------------------------------------------------------------- FetchParams


@dataclass(frozen=True)
class FetchParamsView:
    isolation: str
    from_follower: bool
    from_consumer: bool
    fetch_only_leader: bool
    hard_max_bytes_limit: bool | None  # None where FetchParams has no request version (4.1+)


def fetch_params(version: int, replica_id: int, read_committed: bool, client_metadata: bool,
                 release: ReleaseProfile | None = None) -> FetchParamsView:
    """FetchIsolation.of(replicaId, isolationLevel) and FetchParams' derived flags."""
    prof = release or profile()
    consumer = replica_id < 0 and replica_id != FUTURE_LOCAL_REPLICA_ID  # FetchRequest.isConsumer
    follower = replica_id >= 0  # FetchRequest.isValidBrokerId
    isolation = LOG_END if not consumer else TXN_COMMITTED if read_committed else HIGH_WATERMARK
    hard = version <= 2 if prof.fetch_params_hard_max_bytes else None
    return FetchParamsView(isolation, follower, consumer, follower or (consumer and not client_metadata), hard)


# ---------------------------------------------------------------- the log and its read


@dataclass(frozen=True)
class OffsetMetadata:
    """LogOffsetMetadata: an offset, and where it is when known (segment base and position; -1 when not)."""

    offset: int
    segment_base: int = -1
    position: int = -1

    @property
    def offset_only(self) -> bool:
        return self.segment_base == -1 and self.position == -1


@dataclass(frozen=True)
class FetchData:
    """FetchDataInfo: where the read started, the bytes it returns, whether the first batch was cut, and the aborted
    transactions (None when the read does not ask for them, else their count)."""

    start: OffsetMetadata
    size: int = 0
    first_entry_incomplete: bool = False
    aborted: int | None = None


@dataclass
class PartitionLog:
    """A leader's log: segments of batches (the last one active), log start and high watermark; no transaction is
    open, so the last stable offset is the high watermark."""

    segments: list[LogSegment]
    log_start: int
    high_watermark: int
    release: ReleaseProfile = field(default_factory=profile)

    @classmethod
    def build(cls, index_interval: int, log_start: int, high_watermark: int,
              segments: Sequence[tuple[int, Sequence[Batch]]], release: ReleaseProfile | None = None,
              ) -> PartitionLog:
        config = SegmentConfig(segment_bytes=1 << 30, segment_ms=1 << 40, jitter_ms=0,
                               index_interval_bytes=index_interval, max_index_size=4096)
        built = []
        for base, batches in segments:
            seg = LogSegment(base, config, 0)
            for b in batches:
                seg.append(b.last_offset, [b])
            built.append(seg)
        log = cls(built, log_start, 0, release or profile())
        end = log.log_end
        # UnifiedLog.updateHighWatermark: clamped to [log start, log end]
        log.high_watermark = log_start if high_watermark < log_start else min(high_watermark, end.offset)
        return log

    @property
    def log_end(self) -> OffsetMetadata:
        active = self.segments[-1]
        end = active.batches[-1].last_offset + 1 if active.batches else active.base_offset
        return OffsetMetadata(end, active.base_offset, active.size)

    def _floor(self, offset: int) -> int | None:
        found = None
        for i, s in enumerate(self.segments):
            if s.base_offset <= offset:
                found = i
        return found

    def offset_metadata(self, offset: int) -> OffsetMetadata:
        """maybeConvertToOffsetMetadata: the offset's position, or the offset alone when out of range."""
        try:
            return self._local_read(offset, 1, False, self.log_end, False).start
        except FetchError:
            return OffsetMetadata(offset)

    def high_watermark_metadata(self) -> OffsetMetadata:
        end = self.log_end
        return end if self.high_watermark >= end.offset else self.offset_metadata(self.high_watermark)

    def read(self, offset: int, max_bytes: int, isolation: str, min_one: bool) -> FetchData:
        """UnifiedLog.read: OffsetOutOfRange below the log start, then LocalLog.read up to the isolation's bound."""
        if offset < self.log_start:
            raise FetchError("OffsetOutOfRangeException", f"Received request for offset {offset} for partition "
                             f"{TOPIC_PARTITION}, but we only have log segments starting from offset: "
                             f"{self.log_start}.")
        bound = self.log_end if isolation == LOG_END else self.high_watermark_metadata()
        return self._local_read(offset, max_bytes, min_one, bound, isolation == TXN_COMMITTED)

    def _local_read(self, offset: int, max_bytes: int, min_one: bool, bound: OffsetMetadata, aborted: bool,
                    ) -> FetchData:
        """LocalLog.read."""
        end = self.log_end
        i = self._floor(offset)
        if offset > end.offset or i is None:
            raise FetchError("OffsetOutOfRangeException", f"Received request for offset {offset} for partition "
                             f"{TOPIC_PARTITION}, but we only have log segments upto {end.offset}.")
        none_aborted = 0 if aborted else None
        if offset == bound.offset:
            return FetchData(bound, aborted=none_aborted)
        if offset > bound.offset:
            return FetchData(self._local_read(offset, 1, False, end, False).start, aborted=none_aborted)
        while i < len(self.segments):
            seg = self.segments[i]
            if seg.base_offset < bound.segment_base:
                max_position: int | None = seg.size
            elif seg.base_offset == bound.segment_base and not bound.offset_only:
                max_position = bound.position
            else:
                max_position = None
            data = self._segment_read(seg, offset, max_bytes, max_position, min_one)
            if data is not None:
                return FetchData(data.start, data.size, data.first_entry_incomplete, none_aborted)
            i += 1
        return FetchData(end)

    def _segment_read(self, seg: LogSegment, offset: int, max_bytes: int, max_position: int | None,
                      min_one: bool) -> FetchData | None:
        """LogSegment.read and FileRecords.slice."""
        if max_bytes < 0:
            raise FetchError("IllegalArgumentException", f"Invalid max size {max_bytes}")
        found = seg.translate_offset(offset, self.release.version)
        if found is None:
            return None
        batch_offset, position, size = found
        start = OffsetMetadata(batch_offset if self.release.fetch_offset_metadata_batch_base else offset,
                               seg.base_offset, position)
        adjusted = max(max_bytes, size) if min_one else max_bytes
        if adjusted == 0 or max_position is None:
            return FetchData(start)
        fetch_size = min(max_position - position, adjusted)
        if fetch_size < 0:
            raise FetchError("IllegalArgumentException", f"Invalid size: {fetch_size}")
        return FetchData(start, min(fetch_size, seg.size - position), adjusted < size)


# ---------------------------------------------------------------- Partition.fetchRecords


@dataclass(frozen=True)
class PartitionFetch:
    """One partition of a Fetch request."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int | None = None
    last_fetched_epoch: int | None = None


@dataclass(frozen=True)
class LeaderState:
    """What the broker knows of the partition: its leader epoch, whether it leads, its replicas."""

    leader_epoch: int
    is_leader: bool = True
    replicas: frozenset[int] = frozenset()


@dataclass(frozen=True)
class PartitionRead:
    """LogReadResult: an error, or the data (and a diverging epoch when the follower must truncate)."""

    error: int = NONE
    data: FetchData | None = None
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset)


def check_current_leader_epoch(requested: int | None, local: int) -> int:
    """Partition.checkCurrentLeaderEpoch."""
    if requested is None:
        return NONE
    if local > requested:
        return FENCED_LEADER_EPOCH
    if local < requested:
        return UNKNOWN_LEADER_EPOCH
    return NONE


def fetch_partition(log: PartitionLog, epochs: EpochCache, state: LeaderState, params: FetchParamsView,
                    replica_id: int, fetch: PartitionFetch, max_bytes: int, min_one: bool) -> PartitionRead:
    """Partition.fetchRecords (getLocalLog, followerReplicaOrThrow, readRecords) and readFromLog's error mapping:
    the epoch check, the leader-only check, a follower outside the replica set, the last fetched epoch (diverging,
    or out of range below the log start first), then the log's read."""
    error = check_current_leader_epoch(fetch.current_leader_epoch, state.leader_epoch)
    if error == NONE and params.fetch_only_leader and not state.is_leader:
        error = NOT_LEADER_OR_FOLLOWER
    if error == NONE and params.from_follower and replica_id not in state.replicas:
        error = UNKNOWN_LEADER_EPOCH if fetch.current_leader_epoch is not None else NOT_LEADER_OR_FOLLOWER
    if error != NONE:
        return PartitionRead(error)
    try:
        if fetch.last_fetched_epoch is not None:
            epoch, end = epochs.end_offset_for(fetch.last_fetched_epoch, log.log_end.offset)
            if end == UNDEFINED_EPOCH_OFFSET or epoch == UNDEFINED_EPOCH:
                raise FetchError("OffsetOutOfRangeException", "Could not determine the end offset")
            if fetch.fetch_offset < log.log_start:  # even if the epochs diverge
                raise FetchError("OffsetOutOfRangeException", "below the log start")
            if epoch < fetch.last_fetched_epoch or end < fetch.fetch_offset:
                return PartitionRead(data=FetchData(OffsetMetadata(fetch.fetch_offset)), diverging_epoch=(epoch, end))
        return PartitionRead(data=log.read(fetch.fetch_offset, max_bytes, params.isolation, min_one))
    except FetchError as e:
        if e.java_name == "OffsetOutOfRangeException":
            return PartitionRead(OFFSET_OUT_OF_RANGE)
        raise


# ---------------------------------------------------------------- ReplicaManager.readFromLog and fetchMessages


def read_from_log(response_max_bytes: int, partitions: Sequence[PartitionFetch],
                  read: object, hard_max_bytes_limit: bool = False) -> list[PartitionRead]:
    """ReplicaManager.readFromLog: `read(index, fetch, max_bytes, min_one) -> PartitionRead` for each partition in
    request order, with the response's bytes shared out."""
    limit = response_max_bytes
    min_one = not hard_max_bytes_limit
    out = []
    for i, p in enumerate(partitions):
        result: PartitionRead = read(i, p, min(p.max_bytes, limit), min_one)  # type: ignore[operator]
        data = result.data
        if data is not None and data.first_entry_incomplete and not hard_max_bytes_limit:
            data = FetchData(data.start, 0, False, data.aborted)  # checkFetchDataInfo: nothing rather than a part
            result = PartitionRead(result.error, data, result.diverging_epoch)
        size = data.size if data is not None else 0
        if size > 0:
            min_one = False
        limit = max(0, limit - size)
        out.append(result)
    return out


def respond_now(max_wait_ms: int, min_bytes: int, results: Sequence[PartitionRead]) -> bool:
    """ReplicaManager.fetchMessages answers at once (no remote fetch, no preferred read replica here) when the
    request will not wait, asks for no partition, has min bytes already, met an error or a diverging epoch."""
    readable = sum(r.data.size for r in results if r.data is not None)
    return (max_wait_ms <= 0 or not results or readable >= min_bytes
            or any(r.error != NONE for r in results) or any(r.diverging_epoch is not None for r in results))
