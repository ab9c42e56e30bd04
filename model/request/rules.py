"""The request model's decisions: each a named function with today's Kafka as the default, and history's alternatives.

`Rules.current()` is Kafka 4.x (the files named are apache/kafka's, read at 1eb7644349 and checked against the 4.4.0
jars where `kcheck.reference.producer_state` is bit-exact). A user swaps one as the other models' rules are swapped:

    from dataclasses import replace
    from kcheck.model.request.rules import Rules, in_sequence_without_wrap
    mine = replace(Rules.current(), name="mine", in_sequence=in_sequence_without_wrap)

`VARIANTS` holds the historical rules, each with its JIRA, the smallest setting that shows it and the invariant it
breaks. The client's Sender / TransactionManager / RecordAccumulator decisions are fixed in `model.py` (each names
the method it mirrors); the rules here are the broker's, the purgatory's, the client's metadata epoch rule and the
replication protocol the partition runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kcheck.model.replication.protocol import Protocol, over_maximal_isr
from kcheck.model.replication.state import Replica
from kcheck.model.request.state import (
    INVALID_EPOCH,
    NONE,
    NOT_ENOUGH_AFTER_APPEND,
    NOT_LEADER,
    OUT_OF_ORDER,
    UNKNOWN_PRODUCER,
    Entry,
)
from kcheck.model.rule_set import RuleSet, Variant, variant

NUM_BATCHES_TO_RETAIN = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN

# ---- sequences --------------------------------------------------------------------------------------------------


def in_sequence_wrapping(last: int, nxt: int, seq_max: int) -> bool:
    """`ProducerAppendInfo.inSequence` (since KAFKA-7692, 2.1.1/2.2.0): the next sequence follows the last, and
    wraps from Integer.MAX_VALUE (`seq_max` here) to 0."""
    return nxt == last + 1 or (nxt == 0 and last == seq_max)


def in_sequence_without_wrap(last: int, nxt: int, seq_max: int) -> bool:
    """Before KAFKA-7692: `nextSeq == lastSeq + 1` only, so the first batch after the wrap is out of order."""
    return nxt == last + 1


def retain_five() -> int:
    """`ProducerStateEntry.NUM_BATCHES_TO_RETAIN` (KAFKA-5494, 1.0.0): the last 5 batches per producer are cached
    for duplicate detection, which is what lets an idempotent producer keep 5 requests in flight."""
    return NUM_BATCHES_TO_RETAIN


def retain_one() -> int:
    """Before KAFKA-5494 (0.11): the broker remembered only the producer's last batch."""
    return 1


def accept_any_without_state(first_seq: int) -> str:
    """`ProducerAppendInfo.checkSequence` since KAFKA-8710 (2.5.0): with no state for the producer id (its epoch is
    NO_PRODUCER_EPOCH) any sequence is accepted; the broker never answers UNKNOWN_PRODUCER_ID."""
    return ""


def unknown_producer_unless_zero(first_seq: int) -> str:
    """Before KAFKA-8710 (2.4 and older): a producer id without state is UNKNOWN_PRODUCER_ID unless it starts at
    sequence 0."""
    return "" if first_seq == 0 else UNKNOWN_PRODUCER


def update_after_append() -> bool:
    """Since KAFKA-6683 (1.0.2/1.1.0): `ProducerAppendInfo` works on a copy and `ProducerStateManager.update` runs
    only after the log append succeeded, so a failed append leaves the state as it was. (False: a failed append
    does not touch the state.)"""
    return False


def update_before_append() -> bool:
    """Before KAFKA-6683: the cached batches were updated before the append, which could still fail."""
    return True


def keep_state_below_log_start() -> bool:
    """Since KAFKA-7190 (2.4.0, #7388): a producer's state outlives the segments that held its batches, until
    producer.id.expiration.ms."""
    return True


def drop_state_with_log() -> bool:
    """Before KAFKA-7190: moving the log start past a producer's last batch removed its state."""
    return False


def analyze_producer_state(rules: Rules, entry: Entry | None, epoch: int, first_seq: int, last_seq: int,
                           seq_max: int) -> tuple[str, Any]:
    """`UnifiedLog.analyzeAndValidateProducerState` for one client batch of an idempotent (non-transactional)
    producer: the duplicate check over the cached batches first (`ProducerStateEntry.findDuplicateBatch`: same epoch,
    the same first and last sequence), then `ProducerAppendInfo.checkProducerEpoch` (an older epoch is
    INVALID_PRODUCER_EPOCH) and `checkSequence` (no state: the rule `without_state`; a new epoch starts at 0; the
    same epoch continues the last cached sequence, by the rule `in_sequence`). Returns ("duplicate", the cached
    (first seq, last seq, first offset, last offset)), ("error", code) or ("append", None)."""
    if entry is None:
        code = rules.without_state(first_seq)
        return ("error", code) if code else ("append", None)
    if epoch == entry.epoch:
        for cached in entry.cached:
            if cached[0] == first_seq and cached[1] == last_seq:
                return "duplicate", cached
    if epoch < entry.epoch:
        return "error", INVALID_EPOCH
    if epoch != entry.epoch:
        return ("error", OUT_OF_ORDER) if first_seq != 0 else ("append", None)
    if not rules.in_sequence(entry.last_seq, first_seq, seq_max):
        return "error", OUT_OF_ORDER
    return "append", None


def add_batch(rules: Rules, entry: Entry | None, epoch: int, first_seq: int, last_seq: int, first_offset: int,
              last_offset: int) -> Entry:
    """`ProducerStateEntry.addBatch`: a new epoch clears the cache (`maybeUpdateProducerEpoch`); the oldest batch
    beyond the rule `retained` goes."""
    cached = entry.cached if entry is not None and entry.epoch == epoch else ()
    cached = (cached + ((first_seq, last_seq, first_offset, last_offset),))[-rules.retained():]
    return Entry(epoch, cached)


# ---- the purgatory ------------------------------------------------------------------------------------------------


def delayed_produce_status(leader: Replica, required: int, min_isr: int, protocol: Protocol) -> str | None:
    """`DelayedProduce.tryComplete` for the one partition: not the leader any more -> NOT_LEADER_OR_FOLLOWER (Case B);
    the high watermark at the required offset -> `Partition.checkEnoughReplicasReachOffset`: NONE when the ISR has
    min.insync.replicas (the replication protocol's `ack_complete`), else NOT_ENOUGH_REPLICAS_AFTER_APPEND; None:
    still pending."""
    if not leader.is_leader:
        return NOT_LEADER
    if leader.hw >= required:
        return NONE if protocol.ack_complete(leader, min_isr) else NOT_ENOUGH_AFTER_APPEND
    return None


def recheck_on_every_event(event: str) -> bool:
    """`ReplicaManager` re-checks the produce purgatory (`tryCompleteDelayedRequests` / `checkAndComplete`) when the
    request is parked ("append": `tryCompleteElseWatch`), when the leader's high watermark moves ("hw":
    `Partition.updateFollowerFetchState` and `maybeShrinkIsr` -> `maybeIncrementLeaderHW`) and when the broker
    stops leading ("leader": `ReplicaManager.applyDelta` -> `completeDelayedFetchOrProduceRequests`)."""
    return True


def no_recheck_on_high_watermark(event: str) -> bool:
    """KAFKA-14334's shape (there for DelayedFetch on a follower, 3.3.2/3.4.0): one event that can complete a waiting
    operation does not re-check it, so it waits for its deadline."""
    return event != "hw"


# ---- the client's metadata ----------------------------------------------------------------------------------------


def newer_or_same_epoch(cached_epoch: int, new_epoch: int) -> bool:
    """`Metadata.updateLatestMetadata` (KIP-320, KAFKA-7738, 2.2.0): a partition's metadata with an older leader epoch
    than the last seen one is ignored; the same or newer is taken."""
    return new_epoch >= cached_epoch


def any_epoch(cached_epoch: int, new_epoch: int) -> bool:
    """Before KIP-320: the client took whatever broker answered, even one that had not heard of the newer leader."""
    return True


# ---- the replication protocol -------------------------------------------------------------------------------------


def todays_replication() -> Protocol:
    """The replication model's `Protocol.current()` (KAFKA-15583's strict rule: no high-watermark advance while the
    ISR is below min.insync.replicas, so an acks=all request under min ISR waits, then times out)."""
    return Protocol.current()


def hw_under_min_isr() -> Protocol:
    """Before KAFKA-15583 (KIP-966 part 1, #14594): the high watermark advanced over the maximal ISR even below
    min.insync.replicas."""
    return replace(Protocol.current(), name="hw-under-min-isr", high_watermark=over_maximal_isr)


@dataclass(frozen=True)
class Rules(RuleSet):
    """One choice per decision point of the request model (see the module docstring)."""

    name: str
    description: str
    in_sequence: Callable[[int, int, int], bool] = in_sequence_wrapping
    retained: Callable[[], int] = retain_five
    without_state: Callable[[int], str] = accept_any_without_state
    state_on_failed_append: Callable[[], bool] = update_after_append
    state_kept_below_log_start: Callable[[], bool] = keep_state_below_log_start
    analyze: Callable[..., tuple[str, Any]] = analyze_producer_state
    purgatory_status: Callable[[Replica, int, int, Protocol], str | None] = delayed_produce_status
    purgatory_recheck: Callable[[str], bool] = recheck_on_every_event
    adopt_metadata: Callable[[int, int], bool] = newer_or_same_epoch
    replication: Callable[[], Protocol] = todays_replication

    @classmethod
    def current(cls) -> Rules:
        return cls("current", "Kafka 4.x")


def _variant(name: str, jira: str, bug: str, violates: tuple[str, ...], settings: Mapping[str, Any],
             **rules: Any) -> Variant[Rules]:
    return variant(Rules.current(), name, jira, bug, violates, settings, **rules)


_IDEM = {"brokers": 2, "min_isr": 1, "acks": "all", "idempotent": True, "elections": 0, "crashes": 0}

VARIANTS: dict[str, Variant[Rules]] = {v.name: v for v in (
    _variant("broker-cache-one-batch", "KAFKA-5494",
             "the broker remembered one batch per producer: with two requests in flight and a dropped connection, "
             "the retry of the first is out of order, the client bumps its epoch and writes both batches again",
             ("produce.idem-no-duplicate",),
             {**_IDEM, "batches": 2, "max_in_flight": 2, "retries": 2, "drops": 1},
             retained=retain_one),
    _variant("state-before-append", "KAFKA-6683",
             "the producer state was updated before the append, which then failed: the retry is taken for a "
             "duplicate and acknowledged at an offset that holds no such batch",
             ("produce.dup-ack-offsets", "produce.ack-is-committed"),
             {**_IDEM, "batches": 1, "max_in_flight": 1, "retries": 1, "drops": 0, "append_failures": 1},
             state_on_failed_append=update_before_append),
    _variant("no-sequence-wrap", "KAFKA-7692",
             "the broker did not wrap sequences at Integer.MAX_VALUE: the batch after the wrap is answered "
             "OUT_OF_ORDER_SEQUENCE_NUMBER although nothing is missing",
             ("produce.sequence-error-means-gap",),
             {**_IDEM, "batches": 7, "max_in_flight": 1, "retries": 0, "drops": 0, "seq_max": 5},
             in_sequence=in_sequence_without_wrap),
    _variant("metadata-without-epoch", "KAFKA-7738 (KIP-320)",
             "the client took metadata from any broker: one that has not applied the election yet sends it back "
             "to the deposed leader",
             ("meta.epoch-monotonic",),
             {**_IDEM, "batches": 1, "max_in_flight": 1, "retries": 0, "drops": 0, "elections": 1},
             adopt_metadata=any_epoch),
    _variant("purgatory-missed-trigger", "KAFKA-14334",
             "the high watermark's advance did not re-check the produce purgatory: a request the partition has "
             "committed waits for its timeout",
             ("purgatory.checked-on-every-event",),
             {**_IDEM, "batches": 1, "max_in_flight": 1, "retries": 0, "drops": 0},
             purgatory_recheck=no_recheck_on_high_watermark),
    _variant("unknown-producer-after-retention", "KAFKA-7190, KAFKA-8710",
             "producer state went with the segments that held it and a producer without state was "
             "UNKNOWN_PRODUCER_ID: an idle producer's next batch after DeleteRecords is refused though nothing is "
             "missing",
             ("produce.sequence-error-means-gap",),
             {**_IDEM, "batches": 2, "max_in_flight": 1, "retries": 0, "drops": 0, "log_start_moves": 1},
             state_kept_below_log_start=drop_state_with_log, without_state=unknown_producer_unless_zero),
    _variant("hw-under-min-isr", "KAFKA-15583 (KIP-966)",
             "the high watermark advanced over an ISR below min.insync.replicas: an acks=all record is exposed to "
             "consumers on the leader alone (and its producer told NOT_ENOUGH_REPLICAS_AFTER_APPEND)",
             ("produce.committed-on-min-isr",),
             {**_IDEM, "min_isr": 2, "batches": 1, "max_in_flight": 1, "retries": 0, "drops": 0, "isr_shrinks": 1},
             replication=hw_under_min_isr),
)}
