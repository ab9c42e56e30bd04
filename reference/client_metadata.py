"""The client's metadata cache and its leader-epoch rules: which leader and epoch a client believes per partition.

Mirrors kafka-clients' `org.apache.kafka.clients.Metadata` (clients/src/main/java/org/apache/kafka/clients/
Metadata.java) and the parts of `MetadataSnapshot` (mergeWith) and `MetadataResponse` it reads, in 3.9.1, 4.0.2,
4.1.2 and 4.4.0 (the differential, `kafka_client_metadata.py`, finds them alike):
- `update` / `handleMetadataResponse` / `updateLatestMetadata`: KIP-320's rule that a response carrying an older
  leader epoch than the one last seen does not replace the cached partition (unless the topic id changed), and that
  a response without epochs (before Metadata v9, `MetadataResponse.hasReliableLeaderEpochs`) forgets them;
- `updateLastSeenEpochIfNewer` (an epoch seen in a fetch or a produce answer), `updatePartitionLeadership` (KIP-951's
  leader hints, 3.7+: only a strictly newer epoch, a known node and a cached partition);
- `currentLeader` / `partitionMetadataIfCurrent`, `requestUpdate`, `requestUpdateForNewTopics`, `failedUpdate`,
  `updateRequested`, and `timeToNextUpdate` / `timeToAllowUpdate` with `ExponentialBackoff` when its backoff is
  fixed (`retry.backoff.max.ms` <= `retry.backoff.ms`: no jitter drawn; the differential stays there).
The base class retains every topic (`retainTopic` is true; ProducerMetadata and ConsumerMetadata narrow it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

NONE = 0
INVALID_TOPIC_EXCEPTION = 17
TOPIC_AUTHORIZATION_FAILED = 29
# The Errors whose exception is an InvalidMetadataException (a partition or topic with one requests a full update):
# the same in kafka-clients 3.9.1 to 4.4.0 (Errors.values() probed through each release's jar).
INVALID_METADATA_ERRORS = frozenset({3, 5, 6, 9, 13, 56, 72, 74, 80, 83, 84, 100, 103})
RELIABLE_EPOCHS_SINCE_VERSION = 9  # MetadataResponse.hasReliableLeaderEpochs: version >= 9 (Kafka 2.4+ brokers)
RETRY_BACKOFF_EXP_BASE = 2  # CommonClientConfigs.RETRY_BACKOFF_EXP_BASE

TopicPartition = tuple[str, int]


def _long(x: int) -> int:
    """Java long arithmetic (an expiry of Long.MAX_VALUE overflows where Kafka adds to it)."""
    return (x + 2**63) % 2**64 - 2**63


@dataclass(frozen=True)
class PartitionMetadata:
    """MetadataResponse.PartitionMetadata: what matters here (the replica lists ride along unchanged)."""

    error: int
    leader: int | None
    epoch: int | None


@dataclass(frozen=True)
class ResponsePartition:
    index: int
    error: int = NONE
    leader: int = -1  # -1: none (MetadataResponse maps a negative leader id to an empty Optional)
    epoch: int = -1  # -1: none (RecordBatch.NO_PARTITION_LEADER_EPOCH)


@dataclass(frozen=True)
class ResponseTopic:
    name: str
    topic_id: int = 0  # 0: Uuid.ZERO_UUID
    error: int = NONE
    internal: bool = False
    partitions: tuple[ResponsePartition, ...] = ()


@dataclass(frozen=True)
class MetadataResponse:
    version: int
    nodes: tuple[int, ...]
    topics: tuple[ResponseTopic, ...]

    @property
    def reliable_epochs(self) -> bool:
        return self.version >= RELIABLE_EPOCHS_SINCE_VERSION


class JavaException(Exception):
    """An exception Kafka's Metadata throws here: its simple class name."""

    def __init__(self, simple_name: str) -> None:
        super().__init__(simple_name)
        self.simple_name = simple_name


@dataclass
class Snapshot:
    """MetadataSnapshot: the nodes, the cached partitions and the topic ids."""

    nodes: frozenset[int] = frozenset()
    partitions: dict[TopicPartition, PartitionMetadata] = field(default_factory=dict)
    topic_ids: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(set(self.topic_ids.values())) != len(self.topic_ids):
            # the id -> name map (Collectors.toMap) refuses two topics with one id: the cache stays as it was
            raise JavaException("IllegalStateException")

    def merge_with(self, nodes: frozenset[int], add: dict[TopicPartition, PartitionMetadata],
                   add_topic_ids: dict[str, int], retain: set[str] | None) -> Snapshot:
        """MetadataSnapshot.mergeWith: the added partitions over the retained old ones (retain None: every topic).
        A topic's id is the latest one given with its added partitions (removed if given none), else the old one."""
        def kept(topic: str) -> bool:
            return retain is None or topic in retain

        topic_ids = {t: i for t, i in self.topic_ids.items() if kept(t)}
        partitions = dict(add)
        for tp in add:
            if tp[0] in add_topic_ids:
                topic_ids[tp[0]] = add_topic_ids[tp[0]]
            else:
                topic_ids.pop(tp[0], None)
        for tp, pm in self.partitions.items():
            if kept(tp[0]):
                partitions.setdefault(tp, pm)
        return Snapshot(nodes, partitions, topic_ids)


def backoff(initial_ms: int, max_ms: int, attempts: int) -> int:
    """ExponentialBackoff(initial, 2, max, 0.2).backoff(attempts), where it draws no jitter (max <= initial)."""
    initial = min(max_ms, initial_ms)
    exp_max = math.log(max_ms / max(initial, 1)) / math.log(RETRY_BACKOFF_EXP_BASE) if max_ms > initial else 0
    if exp_max != 0:
        raise ValueError("an exponential backoff draws a random jitter: not modelled")
    return initial


@dataclass
class Metadata:
    """org.apache.kafka.clients.Metadata, field for field where they decide something."""

    refresh_backoff_ms: int
    refresh_backoff_max_ms: int
    metadata_expire_ms: int
    last_refresh_ms: int = 0
    last_successful_refresh_ms: int = 0
    attempts: int = 0
    request_version: int = 0
    update_version: int = 0
    need_full_update: bool = False
    need_partial_update: bool = False
    equivalent_response_count: int = 0
    snapshot: Snapshot = field(default_factory=Snapshot)
    last_seen: dict[TopicPartition, int] = field(default_factory=dict)

    # --- requests for an update, and when it may happen

    def update_requested(self) -> bool:
        return self.need_full_update or self.need_partial_update

    def request_update(self, reset_equivalent_response_backoff: bool) -> int:
        self.need_full_update = True
        if reset_equivalent_response_backoff:
            self.equivalent_response_count = 0
        return self.update_version

    def request_update_for_new_topics(self) -> int:
        self.last_refresh_ms = 0  # lets the update go at once
        self.need_partial_update = True
        self.equivalent_response_count = 0
        self.request_version += 1
        return self.update_version

    def failed_update(self, now: int) -> None:
        self.last_refresh_ms = now
        self.attempts += 1
        self.equivalent_response_count = 0

    def _backoff(self, attempts: int) -> int:
        return backoff(self.refresh_backoff_ms, self.refresh_backoff_max_ms, attempts)

    def _time_to_expire(self, now: int) -> int:
        return max(_long(_long(self.last_successful_refresh_ms + self.metadata_expire_ms) - now), 0)

    def time_to_allow_update(self, now: int) -> int:
        """timeToAllowUpdate: the backoff after failed attempts, and after responses that changed nothing (reset by
        the periodic expiry)."""
        for_attempts = max(_long(self.last_refresh_ms + self._backoff(max(self.attempts - 1, 0)) - now), 0)
        if self._time_to_expire(now) == 0:
            self.equivalent_response_count = 0
        extra = self._backoff(self.equivalent_response_count - 1) if self.equivalent_response_count > 0 else 0
        for_equivalent = max(_long(self.last_refresh_ms + extra - now), 0)
        return max(for_attempts, for_equivalent)

    def time_to_next_update(self, now: int) -> int:
        time_to_expire = 0 if self.update_requested() else self._time_to_expire(now)
        return max(time_to_expire, self.time_to_allow_update(now))

    # --- the epochs

    def update_last_seen_epoch_if_newer(self, tp: TopicPartition, epoch: int) -> bool:
        """An epoch seen outside a metadata response raises the last seen one (only if one is known), and a raise
        asks for a full update."""
        if epoch < 0:
            raise JavaException("IllegalArgumentException")
        old = self.last_seen.get(tp)
        updated = old is not None and epoch > old
        if updated:
            self.last_seen[tp] = epoch
        self.need_full_update = self.need_full_update or updated
        return updated

    def partition_metadata_if_current(self, tp: TopicPartition) -> PartitionMetadata | None:
        """The cached partition, unless a different epoch has been seen since (then the client knows it is stale)."""
        pm = self.snapshot.partitions.get(tp)
        epoch = self.last_seen.get(tp)
        if epoch is None or pm is None:
            return pm
        return pm if (-1 if pm.epoch is None else pm.epoch) == epoch else None

    def current_leader(self, tp: TopicPartition) -> tuple[int | None, int | None]:
        """currentLeader: (leader node id if the node is known, epoch)."""
        pm = self.partition_metadata_if_current(tp)
        if pm is None:
            return None, self.last_seen.get(tp)
        leader = pm.leader if pm.leader is not None and pm.leader in self.snapshot.nodes else None
        return leader, pm.epoch

    # --- metadata responses

    def update(self, request_version: int, response: MetadataResponse, partial: bool, now: int) -> None:
        self.need_partial_update = request_version < self.request_version
        self.last_refresh_ms = now
        self.attempts = 0
        self.update_version += 1
        if not partial:
            self.need_full_update = False
            self.last_successful_refresh_ms = now
        self.equivalent_response_count += 1  # reset below where the response changes an epoch
        self.snapshot = self._handle_response(response, partial)

    def _handle_response(self, response: MetadataResponse, partial: bool) -> Snapshot:
        topics: set[str] = set()
        partitions: dict[TopicPartition, PartitionMetadata] = {}
        topic_ids: dict[str, int] = {}
        old_ids = self.snapshot.topic_ids
        for t in response.topics:
            topics.add(t.name)
            topic_id = old_id = None
            if t.topic_id != 0:  # a topic id change is judged only when both ids are known
                topic_id = topic_ids[t.name] = t.topic_id
                old_id = old_ids.get(t.name)
            if t.error != NONE:
                if t.error in INVALID_METADATA_ERRORS:
                    self.request_update(False)
                continue  # INVALID_TOPIC_EXCEPTION and TOPIC_AUTHORIZATION_FAILED are only recorded to be thrown
            for p in t.partitions:
                tp = (t.name, p.index)
                pm = self._update_latest_metadata(tp, p, response.reliable_epochs, topic_id, old_id)
                if pm is not None:
                    partitions[tp] = pm
                if p.error in INVALID_METADATA_ERRORS:
                    self.request_update(False)
        nodes = frozenset(response.nodes)
        if partial:
            retain = {t for t in self.snapshot.topic_ids} | {tp[0] for tp in self.snapshot.partitions}
            return self.snapshot.merge_with(nodes, partitions, topic_ids, retain - topics)
        return Snapshot(nodes, partitions, topic_ids)

    def _update_latest_metadata(self, tp: TopicPartition, p: ResponsePartition, reliable: bool,
                                topic_id: int | None, old_id: int | None) -> PartitionMetadata | None:
        leader = p.leader if p.leader >= 0 else None
        epoch = None if p.epoch == -1 else p.epoch
        if not (reliable and epoch is not None):
            # an old broker (or an error) without a usable epoch: forget the one seen, take the rest
            self.last_seen.pop(tp, None)
            self.equivalent_response_count = 0
            return PartitionMetadata(p.error, leader, None)
        current = self.last_seen.get(tp)
        if current is not None and (topic_id is None or topic_id == old_id) and epoch < current:
            return self.snapshot.partitions.get(tp)  # an older epoch: keep what is cached (KIP-320)
        self.last_seen[tp] = epoch
        if current is None or epoch > current or (topic_id is not None and topic_id != old_id):
            self.equivalent_response_count = 0
        return PartitionMetadata(p.error, leader, epoch)

    # --- KIP-951's leader hints

    def update_partition_leadership(self, hints: dict[TopicPartition, tuple[int, int]],
                                    leader_nodes: list[int]) -> set[TopicPartition]:
        """updatePartitionLeadership: a hint (leader id, epoch; -1 for none) replaces a cached partition's leader when
        both are given, its epoch is newer than the current one, its node is known (from the hint's nodes or the
        cache) and the partition is cached. The hint's nodes join the cache only if some hint applied."""
        if len(set(leader_nodes)) != len(leader_nodes):
            raise JavaException("IllegalStateException")  # Collectors.toMap on a duplicate node id
        nodes = frozenset(leader_nodes) | self.snapshot.nodes
        updates: dict[TopicPartition, PartitionMetadata] = {}
        for tp, (leader, epoch) in hints.items():
            _, current_epoch = self.current_leader(tp)
            if leader == -1 or epoch == -1:
                continue
            if current_epoch is not None and epoch <= current_epoch:
                continue
            existing = self.snapshot.partitions.get(tp)
            if leader not in nodes or existing is None:
                continue
            updates[tp] = replace(existing, leader=leader, epoch=epoch)
            self.last_seen[tp] = epoch
        if not updates:
            return set()
        ids = {tp[0]: self.snapshot.topic_ids[tp[0]] for tp in updates if tp[0] in self.snapshot.topic_ids}
        self.snapshot = self.snapshot.merge_with(nodes, updates, ids, None)
        return set(updates)
