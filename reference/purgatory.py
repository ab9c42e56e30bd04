"""The acks=all wait in the produce purgatory: when a DelayedProduce answers, with which code, and what re-checks it.

Mirrors, per release:
- `DelayedProduce`: Scala `kafka.server.DelayedProduce` (core/src/main/scala/kafka/server/DelayedProduce.scala,
  kafka_2.13, 3.9 to 4.2) and its Java successor `org.apache.kafka.server.purgatory.DelayedProduce`
  (server/src/main/java/org/apache/kafka/server/purgatory/DelayedProduce.java, kafka-server, 4.3 on, KAFKA-19144);
  the completion flag of `DelayedOperation` (`forceComplete`, `run`). The two classes decide alike in every release
  (the differential, `kafka_purgatory.py`, drives both).
- `partition_status`: what ReplicaManager answers for one pending partition, `getPartitionOrError` then
  `Partition.checkEnoughReplicasReachOffset` (the Scala DelayedProduce calls them itself; from 4.3 ReplicaManager
  hands the same composition to the Java class as its `PartitionStatusValidator`).
- `may_increment_leader_hw`: the gate at the top of `Partition.maybeIncrementLeaderHW` (KAFKA-15583, 3.7.0: no
  high watermark advance while the ISR is below the effective min ISR), the reason an acks=all append whose ISR
  shrank below min ISR after the append times out rather than answering NOT_ENOUGH_REPLICAS_AFTER_APPEND.
- `RECHECK_EVENTS`: the calls that run `checkAndComplete` on the produce purgatory for a partition.

Error codes are Kafka's `Errors` codes (`org.apache.kafka.common.protocol.Errors`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kcheck.reference.releases import ReleaseProfile, profile

NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
KAFKA_STORAGE_ERROR = 56


@dataclass
class PartitionResponse:
    """ProduceResponse.PartitionResponse as the local append left it; DelayedProduce changes only `error`."""

    error: int
    base_offset: int
    log_append_time: int = -1
    log_start_offset: int = -1


@dataclass
class ProducePartitionStatus:
    """ProducePartitionStatus: the offset the followers must reach (the append's last offset + 1) and the answer."""

    required_offset: int
    response: PartitionResponse
    acks_pending: bool = False


def required_offset(last_offset: int) -> int:
    """ReplicaManager.maybeAddDelayedProduce: a partition's required offset is its append's last offset + 1."""
    return last_offset + 1


# A validator answer: (hasEnough, error), what Partition.checkEnoughReplicasReachOffset or getPartitionOrError says.
Answer = tuple[bool, int]


@dataclass
class DelayedProduce:
    """One acks=all produce waiting in the purgatory. `responses` holds each map the response callback got."""

    statuses: list[ProducePartitionStatus]
    completed: bool = False
    responses: list[list[PartitionResponse]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # The constructor: a partition whose local append succeeded waits, its answer preset to REQUEST_TIMED_OUT
        # (what it says if the deadline comes first); a partition whose append failed keeps its error and waits not.
        for s in self.statuses:
            s.acks_pending = s.response.error == NONE
            if s.acks_pending:
                s.response.error = REQUEST_TIMED_OUT

    def try_complete(self, validate: dict[int, Answer]) -> tuple[bool, list[int]]:
        """tryComplete(): each pending partition i is asked `validate[i]`; an error or enough replicas settles it
        with that error. Completes (once) when none is left pending. Returns the result and the partitions asked.
        It checks no completion flag first: called after the deadline, it still settles partitions (the purgatory
        never calls it then; its watchers drop completed operations)."""
        asked = []
        for i, s in enumerate(self.statuses):
            if s.acks_pending:
                asked.append(i)
                has_enough, error = validate[i]
                if error != NONE or has_enough:
                    s.acks_pending = False
                    s.response.error = error
        if any(s.acks_pending for s in self.statuses):
            return False, asked
        return self.force_complete(), asked

    def force_complete(self) -> bool:
        """DelayedOperation.forceComplete: the first call completes and runs onComplete (the response callback with
        every partition's answer as it stands); later calls do nothing and return False."""
        if self.completed:
            return False
        self.completed = True
        self.responses.append([PartitionResponse(**vars(s.response)) for s in self.statuses])
        return True

    def run(self) -> None:
        """DelayedOperation.run, the timer at the deadline: forceComplete, so the still-pending partitions answer
        REQUEST_TIMED_OUT; onExpiration only counts them (ExpiresPerSec)."""
        self.force_complete()


# ---------------------------------------------------------------- the partition's side


@dataclass(frozen=True)
class PartitionState:
    """What the leader knows of one partition when the purgatory asks about it."""

    error: int = NONE  # getPartitionOrError: NONE, or UNKNOWN_TOPIC_OR_PARTITION, KAFKA_STORAGE_ERROR (offline),
    # NOT_LEADER_OR_FOLLOWER (a partition this broker holds no replica of)
    leader: bool = True  # leaderLogIfLocal is defined: this broker leads it
    high_watermark: int = 0
    min_insync_replicas: int = 1  # the topic's min.insync.replicas
    replicas: int = 1  # the assignment's size (remote replicas + 1)
    maximal_isr: int = 1  # partitionState.maximalIsr's size (the ISR with a pending expansion)
    isr: int = 1  # partitionState.isr's size


def effective_min_isr(state: PartitionState) -> int:
    """Partition.effectiveMinIsr (KAFKA-15583, 3.7.0): min.insync.replicas capped at the replica count."""
    return min(state.min_insync_replicas, state.replicas)


def partition_status(state: PartitionState, required: int) -> Answer:
    """ReplicaManager.getPartitionOrError, then Partition.checkEnoughReplicasReachOffset: (hasEnough, error)."""
    if state.error != NONE:
        return False, state.error  # Case A: unknown or offline partition
    if not state.leader:
        return False, NOT_LEADER_OR_FOLLOWER  # Case B
    if state.high_watermark >= required:
        # the ISR may have shrunk below min ISR after the append: the records are in, the answer says so
        return True, NONE if effective_min_isr(state) <= state.maximal_isr else NOT_ENOUGH_REPLICAS_AFTER_APPEND
    return False, NONE


def may_increment_leader_hw(state: PartitionState, release: ReleaseProfile | str | None = None) -> bool:
    """Whether Partition.maybeIncrementLeaderHW may move the high watermark at all: from 3.7.0 (KAFKA-15583) not while
    the leader's ISR is below the effective min ISR (`isUnderMinIsr`), so an acks=all append waiting there answers
    REQUEST_TIMED_OUT at the deadline; before, the high watermark followed the ISR down and the append answered
    NOT_ENOUGH_REPLICAS_AFTER_APPEND."""
    prof = release if isinstance(release, ReleaseProfile) else profile(release)
    if not prof.hw_waits_for_min_isr:
        return True
    return not (state.leader and state.isr < effective_min_isr(state))


# The calls that run checkAndComplete(TopicPartitionOperationKey) on the produce purgatory (ReplicaManager.scala and
# Partition.scala of 3.9 to 4.4): a high watermark (or log start) advance, and the broker ceasing to lead.
RECHECK_EVENTS: dict[str, str] = {
    "leader-append-hw-increased": "ReplicaManager.addCompletePurgatoryAction: LeaderHwChange.INCREASED after an "
                                  "append (not SAME: that wakes only DelayedFetch)",
    "follower-fetch-hw-or-lw-increased": "Partition.updateFollowerFetchState: the follower's fetch moved the high "
                                         "watermark or the low watermark",
    "become-leader-hw-increased": "Partition.makeLeader: the new ISR lets the high watermark move",
    "alter-partition-hw-increased": "Partition.sendAlterPartitionRequest's callback: the committed ISR lets the high "
                                    "watermark move",
    "become-follower": "ReplicaManager.applyLocalFollowersDelta: a new leader epoch here (the waiting produce answers "
                       "NOT_LEADER_OR_FOLLOWER)",
    "stop-partition": "ReplicaManager.stopPartitions: the replica is removed or deleted",
}
