"""The request model: a producer's batches from `send()` to the broker's answer, over the replication model.

Actions, listed in this order in every state (the engines store a trace as indexes into the list):

- `send`: the application hands the accumulator its next batch (batch i to partition i % partitions);
- `resolve`: the Sender's loop resolves unresolved sequences (`TransactionManager.maybeResolveSequences`): a
  partition with none in flight is resolved, or asks for an epoch bump, which the same loop then makes (`bump`, in
  `Sender.runOnce` with nothing in between);
- `bump`: the Sender's next loop, with no sequence to resolve, bumps the idempotent epoch the TransactionManager
  asked for (`bumpIdempotentEpochAndResetIdIfNeeded`): epoch + 1, and each partition's sequences as
  `rules.sequences_on_bump` says (today: the partitions that asked rewrite their tracked batches from 0,
  `startSequencesAtBeginning`; the others start from 0 once their in-flight batches complete, at `drain`);
- `drain p`: the Sender drains partition p's head batch to the leader its metadata names (`RecordAccumulator.drain`,
  `shouldStopDrainBatchesForPartition`, `maybeUpdateProducerIdAndEpoch`), giving it (epoch, sequence) when
  idempotent, if that connection has fewer than max.in.flight requests in flight and the partition is not muted
  (`rules.mute_partition`; today with max.in.flight 1, `guaranteeMessageOrder`);
- `serve b` / `serve b failing`: broker b reads the head request of its connection if it is not serving one (the
  mute), and answers in `Partition.appendRecordsToLeader`'s order: not the leader -> NOT_LEADER_OR_FOLLOWER;
  acks=all and the ISR below min.insync.replicas -> NOT_ENOUGH_REPLICAS; the producer-state checks
  (`rules.analyze`); the append through the replication model's `produce` (`failing`: the append fails after the
  checks, KAFKA_STORAGE_ERROR, budgeted); acks=1 answers at once, acks=all parks a DelayedProduce (a duplicate too,
  at the original offsets: `ReplicaManager.delayedProduceRequestRequired`);
- `deliver b`: the client reads the head response of connection b and matches it to its oldest request there
  (`NetworkClient`'s in-flight requests; `Sender.completeBatch`, `canRetry`, `TransactionManager.canRetry`,
  `handleCompletedBatch`, `handleFailedBatch`, `RecordAccumulator.reenqueue`);
- `drop b`: the connection to broker b breaks (budgeted): the broker forgets what it had not answered, and every
  request in flight on it fails in the client with NETWORK_EXCEPTION, oldest first (`InFlightRequests.clearAll`),
  whatever the broker appended;
- `refresh b`: the client's metadata is answered by broker b from its own metadata image (a stale broker may
  answer) and taken under `rules.adopt_metadata`;
- `tick`: the clock moves (bounded by `max_clock`) and every DelayedProduce past its deadline answers
  REQUEST_TIMED_OUT (`DelayedOperation.run` -> `forceComplete` without a last check);
- `expire-batch p`: delivery.timeout.ms fails partition p's head batch, never drained (budgeted);
- `expire-in-flight p`: delivery.timeout.ms fails partition p's oldest drained batch that is not done, on the wire
  or waiting for a retry (`Sender.getExpiredInflightBatches`; budgeted), then `rules.expired_in_flight`;
- `delete-records`: DeleteRecords moves the log start to the leader's high watermark (budgeted);
- `expire-producer b`: broker b removes the producer id (producer.id.expiration.ms; budgeted);
- `rep ...`: a step of the replication model: atomic fetches, high-watermark advances, ISR changes, brokers applying
  the metadata log, elections (`move_leader`, budgeted), crashes and restarts. After it, each broker's producer
  state follows its log (a follower adds what it fetched with REPLICATION origin; a truncated or restarted log is
  replayed, `ProducerStateManager.truncateAndReload`), a crashed broker's connection breaks, and the purgatory is
  re-checked where `rules.purgatory_recheck` says.

Abstractions (each chosen because the invariants cannot tell the difference, or said where they can):
- one producer session, one or two partitions with the same replicas, leader and ISR (their batches share one
  replicated log), one record per batch, one batch per request;
- a dead broker cannot be connected to, so the client does not drain to it; it waits for new metadata;
- metadata may be refreshed at any step (metadata.max.age.ms and the refresh after an error are both a `refresh`);
- delivery.timeout.ms is two budgets rather than a clock: a batch never drained, and an idempotent producer's batch
  already drained (the oldest of its partition first);
- the log start offset is one value for the partition (DeleteRecords reaches every replica at once);
- producer-state expiry is a budgeted step rather than a timer; a truncation replays the whole log (an expired
  entry can come back, as a snapshot taken before the expiry would bring it back);
- a new producer epoch never reaches Short.MAX_VALUE (no new producer id; kafka-python's new producer id is taken as
  a new epoch, which the broker treats alike: both start every partition's sequences over).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields, is_dataclass
from typing import Any

from kcheck.model.interface import StateInvariant
from kcheck.model.replication import actions as rep
from kcheck.model.replication.state import Replica
from kcheck.model.replication.state import evolve as replace  # dataclasses.replace without re-running __init__
from kcheck.model.request.rules import CLEAR, KEEP, REWRITE, Rules, Variant, add_batch, request_bump
from kcheck.model.request.state import (
    DELIVERY_TIMEOUT,
    NETWORK_EXCEPTION,
    NO_SEQUENCE,
    NONE,
    NOT_ENOUGH_REPLICAS,
    NOT_LEADER,
    OUT_OF_ORDER,
    REQUEST_TIMED_OUT,
    STORAGE_ERROR,
    UNKNOWN_PRODUCER,
    Batch,
    Client,
    Config,
    Connection,
    Delayed,
    Entry,
    PartitionState,
    Request,
    Response,
    State,
)

Action = tuple[Any, ...]

# The replication model's kinds the request model runs (its messages are never duplicated, fetches are atomic).
REPLICATION_KINDS = ("fetch_round", "truncate", "advance_hw", "expand_isr", "shrink_isr", "handle_alter_partition",
                     "handle_alter_partition_response", "apply_metadata", "crash", "restart", "fence", "unfence",
                     "elect", "move_leader")


def replication_config(cfg: Config) -> rep.Config:
    """The replication model's settings for the request model's partition: every broker a replica, KRaft, atomic
    fetches, no message duplicates, no lossy crash, no fencing of a live broker, no controller failover."""
    return rep.Config(brokers=cfg.brokers, min_isr=cfg.min_isr, acks=(cfg.acks,), records=cfg.appends,
                      max_leader_epoch=cfg.max_leader_epoch, crashes=cfg.crashes, lossy_crashes=0, fences=0,
                      elections=cfg.elections, isr_shrinks=cfg.isr_shrinks, failovers=0, reads=0, duplicates=False,
                      atomic_fetch=True)


def initial_state(cfg: Config) -> State:
    reps = rep.initial_state(replication_config(cfg))
    n, p = cfg.brokers, cfg.partitions
    return State(reps, Client(parts=(PartitionState(),) * p), (Connection(),) * n, ((None,) * p,) * n)


def next_sequence(seq: int, seq_max: int) -> int:
    """`DefaultRecordBatch.incrementSequence(seq, 1)` with Integer.MAX_VALUE as `seq_max` (the client wraps since
    KAFKA-7693)."""
    return 0 if seq == seq_max else seq + 1


def _with(t: tuple[Any, ...], i: int, v: Any) -> tuple[Any, ...]:
    return t[:i] + (v,) + t[i + 1:]


def _flag(s: State, invariant: str, message: str) -> State:
    h = s.history
    return replace(s, history=replace(h, flags=h.flags | {(invariant, message)}))


# ---- the client ---------------------------------------------------------------------------------------------------


def _with_part(c: Client, p: int, **changes: Any) -> Client:
    return replace(c, parts=_with(c.parts, p, replace(c.parts[p], **changes)))


def _of(c: Client, p: int) -> list[Batch]:
    """The batches the TransactionManager tracks as in flight for partition `p`."""
    return [c.batches[i] for i in c.tracked if c.batches[i].partition == p]


def _track(c: Client, b: Batch, rules: Rules) -> Client:
    """`TxnPartitionEntry.addInFlightBatch`: a sorted set under `rules.inflight_key`, so a batch whose key a tracked
    batch of its partition already has is not added."""
    key = rules.inflight_key(b)
    if any(rules.inflight_key(t) == key for t in _of(c, b.partition)):
        return c
    return replace(c, tracked=c.tracked + (b.id,))


def _untrack(c: Client, b: Batch, rules: Rules) -> Client:
    """`TxnPartitionEntry.removeInFlightBatch`: removes the tracked batch of the partition with `b`'s key (under a
    key of the sequence only, possibly another batch)."""
    key = rules.inflight_key(b)
    gone = next((t.id for t in _of(c, b.partition) if rules.inflight_key(t) == key), None)
    return c if gone is None else replace(c, tracked=tuple(i for i in c.tracked if i != gone))


def _reenqueue(c: Client, b: Batch, idempotent: bool) -> Client:
    """`RecordAccumulator.reenqueue`: idempotent -> `insertInSequenceOrder`, else `addFirst`."""
    b = replace(b, attempts=b.attempts + 1)
    batches = _with(c.batches, b.id, b)
    q = list(c.parts[b.partition].queue)
    at = 0
    if idempotent:
        while at < len(q) and batches[q[at]].seq != NO_SEQUENCE and batches[q[at]].seq < b.seq:
            at += 1
    q.insert(at, b.id)
    return _with_part(replace(c, batches=batches), b.partition, queue=tuple(q))


def _fail(s: State, c: Client, b: Batch, error: str, adjust: bool, model: RequestSystem) -> State:
    """`Sender.failBatch` -> `TransactionManager.handleFailedBatch`: the batch leaves the in-flight set and the
    rule `failed_batch` says whether an epoch bump is asked for; the application is told `error`."""
    if model.cfg.idempotent:
        c = model.rules.failed_batch(_untrack(c, b, model.rules), b, error, adjust)
    h = s.history
    return replace(s, client=c, history=replace(h, failed=h.failed | {(b.id, error)}))


def _settled(s: State, batch: int) -> bool:
    h = s.history
    return any(i == batch for i, _ in h.acked) or any(i == batch for i, _ in h.failed)


def _answer(s: State, broker: int, corr: int, batch: int, error: str, offset: int, model: RequestSystem) -> State:
    """The client handles the answer to its request `corr` on `broker` (`Sender.completeBatch`). For a batch that is
    already done (failed by delivery.timeout.ms) a success still reaches `TransactionManager.handleCompletedBatch`
    (the last acknowledged sequence, the in-flight set), an error nothing (`failBatch` calls `handleFailedBatch` only
    when `completeExceptionally` completes the batch)."""
    cfg = model.cfg
    c = s.client
    c = replace(c, wire=tuple(w for w in c.wire if w[:2] != (broker, corr)))
    h = s.history
    if error != NONE:
        h = replace(h, errors=h.errors | {(batch, error)})
    s = replace(s, client=c, history=h)
    b = c.batches[batch]
    done = _settled(s, batch)
    if error == NONE:  # TransactionManager.handleCompletedBatch
        if cfg.idempotent:
            p = c.parts[b.partition]
            c = _with_part(_untrack(c, b, model.rules), b.partition, last_acked=max(p.last_acked, b.seq))
        if done:
            return replace(s, client=c)
        return replace(s, client=c, history=replace(h, acked=h.acked | {(batch, offset)}))
    if done:
        return s
    retry = b.attempts < cfg.retries
    if retry:
        retry, c = model.rules.can_retry(c, b, error, cfg.idempotent)
    if retry:
        return replace(s, client=_reenqueue(c, b, cfg.idempotent))
    return _fail(s, c, b, error, b.attempts < cfg.retries, model)


def _disconnect(s: State, broker: int, model: RequestSystem) -> State:
    """The connection to `broker` is gone: the broker forgets it, and the client fails every request in flight on it
    with NETWORK_EXCEPTION, oldest first."""
    s = replace(s, conns=_with(s.conns, broker - 1, Connection()))
    for b, corr, batch in s.client.wire:
        if b == broker:
            s = _answer(s, broker, corr, batch, NETWORK_EXCEPTION, -1, model)
    return s


def _drain_blocked(c: Client, head: Batch, model: RequestSystem) -> bool:
    """`RecordAccumulator.shouldStopDrainBatchesForPartition` (idempotent) and the partition mute
    (`rules.mute_partition`); an asked-for bump comes first (the Sender's loop bumps before it drains)."""
    cfg, rules = model.cfg, model.rules
    if rules.mute_partition(cfg.max_in_flight, cfg.idempotent) and any(
            c.batches[i].partition == head.partition for _, _, i in c.wire):
        return True
    if not cfg.idempotent:
        return False
    if c.bump:
        return True
    p = c.parts[head.partition]
    tracked = _of(c, head.partition)
    if head.seq == NO_SEQUENCE:
        if tracked and p.epoch != c.epoch:
            return True  # in-flight batches of a stale epoch: no new batch yet
        if p.unresolved >= 0:
            return True  # hasUnresolvedSequence
    if tracked and head.seq != NO_SEQUENCE:  # a retry goes only as the first in flight (firstInFlightSequence)
        return head.seq != min(tracked, key=rules.inflight_key).seq
    return False


def drain(s: State, partition: int, model: RequestSystem) -> State | None:
    cfg = model.cfg
    c = s.client
    q = c.parts[partition].queue
    if not q or c.leader < 1:
        return None
    leader = s.rep.replica(c.leader)
    if not leader.alive or sum(1 for w in c.wire if w[0] == c.leader) >= cfg.max_in_flight:
        return None
    head = c.batches[q[0]]
    if _drain_blocked(c, head, model):
        return None
    head = replace(head, reset=False)  # ProducerBatch.close on every drain: sequenceHasBeenReset() until sent again
    if cfg.idempotent and head.seq == NO_SEQUENCE:
        if c.parts[partition].epoch != c.epoch:  # TransactionManager.maybeUpdateProducerIdAndEpoch
            c = _with_part(c, partition, epoch=c.epoch, next_seq=0, last_acked=-1)
        head = replace(head, seq=c.parts[partition].next_seq, epoch=c.epoch)
        if head.seq != 0 and not any(b.partition == partition and b.epoch == c.epoch for b in c.batches):
            s = _flag(s, "client.new-epoch-starts-at-zero", f"the client gave b{head.id}, the first batch of "
                      f"partition {partition} under producer epoch {c.epoch}, sequence {head.seq}, not 0")
        c = _with_part(c, partition, next_seq=next_sequence(head.seq, cfg.seq_max))
        c = _track(replace(c, batches=_with(c.batches, head.id, head)), head, model.rules)
    req = Request(c.corr, head.id, head.epoch, head.seq)
    c = _with_part(replace(c, batches=_with(c.batches, head.id, head), wire=c.wire + ((c.leader, c.corr, head.id),),
                           corr=c.corr + 1), partition, queue=q[1:])
    conn = s.conn(c.leader)
    return replace(s, client=c, conns=_with(s.conns, c.leader - 1, replace(conn, requests=conn.requests + (req,))))


def _rewrite(c: Client, p: int, epoch: int, rules: Rules, seq_max: int) -> Client:
    """`TxnPartitionEntry.startSequencesAtBeginning`: the partition's tracked batches renumbered from 0 in their
    set's order under the new epoch (`sequenceHasBeenReset`)."""
    seq = 0
    batches = c.batches
    for b in sorted(_of(c, p), key=rules.inflight_key):
        batches = _with(batches, b.id, replace(b, seq=seq, epoch=epoch, reset=True))
        seq = next_sequence(seq, seq_max)
    return _with_part(replace(c, batches=batches), p, epoch=epoch, next_seq=seq, last_acked=-1, unresolved=-1)


def bump(s: State, model: RequestSystem) -> State | None:
    """`TransactionManager.bumpIdempotentProducerEpoch`: epoch + 1, then each partition's sequences as the rule
    `sequences_on_bump` says."""
    c = s.client
    if not c.bump or _to_resolve(c):  # the Sender's loop resolves sequences first: that loop is `resolve`
        return None
    epoch = c.epoch + 1
    for p in range(len(c.parts)):
        mode = model.rules.sequences_on_bump(p in c.bump)
        if mode == REWRITE:
            c = _rewrite(c, p, epoch, model.rules, model.cfg.seq_max)
        elif mode == KEEP:
            c = _with_part(c, p, epoch=epoch)
        elif mode == CLEAR:
            c = _with_part(c, p, epoch=epoch, next_seq=0, last_acked=-1, unresolved=-1)
    return replace(s, client=replace(c, epoch=epoch, bump=frozenset()))


def resolve(s: State, model: RequestSystem) -> State | None:
    """`TransactionManager.maybeResolveSequences`, at the top of the Sender's loop: a partition with an unresolved
    sequence and no batch in flight is resolved if its last acknowledged sequence is the one before its next
    sequence, else it asks for an epoch bump; then the loop bumps if a bump is asked for."""
    c = s.client
    todo = _to_resolve(c)
    if not todo:
        return None
    for p in todo:
        part = c.parts[p]
        if part.next_seq - part.last_acked != 1:
            c = request_bump(c, frozenset({p}))
        c = _with_part(c, p, unresolved=-1)
    s = replace(s, client=c)
    return bump(s, model) or s  # Sender.runOnce bumps right after it resolves, with nothing in between


def _to_resolve(c: Client) -> list[int]:
    """The partitions `maybeResolveSequences` resolves now: an unresolved sequence and no batch in flight."""
    return [p for p, part in enumerate(c.parts) if part.unresolved >= 0 and not _of(c, p)]


def deliver(s: State, broker: int, model: RequestSystem) -> State | None:
    conn = s.conn(broker)
    if not conn.responses:
        return None
    resp = conn.responses[0]
    s = replace(s, conns=_with(s.conns, broker - 1, replace(conn, responses=conn.responses[1:])))
    oldest = next(corr for b, corr, _ in s.client.wire if b == broker)
    if oldest != resp.corr:
        s = _flag(s, "net.response-order", f"broker {broker} answered correlation id {resp.corr} while {oldest} "
                                           "was the oldest request in flight on the connection")
    return _answer(s, broker, resp.corr, resp.batch, resp.error, resp.offset, model)


def refresh(s: State, broker: int, rules: Rules) -> State | None:
    if not s.rep.replica(broker).alive:
        return None
    img = rep.image(s.rep, broker)
    c = s.client
    if (img.leader, img.leader_epoch) == (c.leader, c.leader_epoch):
        return None
    if not rules.adopt_metadata(c.leader_epoch, img.leader_epoch):
        return None
    h = s.history
    return replace(s, client=replace(c, leader=img.leader, leader_epoch=img.leader_epoch),
                   history=replace(h, max_client_epoch=max(h.max_client_epoch, c.leader_epoch)))


def expire_batch(s: State, partition: int, cfg: Config) -> State | None:
    """delivery.timeout.ms for a batch never drained (`RecordAccumulator.expiredBatches`)."""
    c = s.client
    q = c.parts[partition].queue
    if not q or s.used.delivery_timeouts >= cfg.delivery_timeouts:
        return None
    head = c.batches[q[0]]
    if head.seq != NO_SEQUENCE:
        return None  # a batch that was drained: `expire_in_flight`
    s = replace(s, used=replace(s.used, delivery_timeouts=s.used.delivery_timeouts + 1))
    h = s.history
    return replace(s, client=_with_part(c, partition, queue=q[1:]),
                   history=replace(h, failed=h.failed | {(head.id, DELIVERY_TIMEOUT)}))


def expire_in_flight(s: State, partition: int, model: RequestSystem) -> State | None:
    """delivery.timeout.ms for the partition's oldest batch that was drained and is not done, whether its request is
    on the wire (`Sender.getExpiredInflightBatches`) or it waits for a retry in the accumulator: `failBatch` with a
    TimeoutException (no sequence adjustment), then the rule `expired_in_flight` (today: `markSequenceUnresolved`
    if it was retried). Its request, if any, stays on the wire and its answer still reaches the TransactionManager."""
    cfg = model.cfg
    if s.used.inflight_timeouts >= cfg.inflight_timeouts:
        return None
    c = s.client
    on_wire = {i for _, _, i in c.wire}
    queued = c.parts[partition].queue
    live = [b for b in c.batches if b.partition == partition and b.seq != NO_SEQUENCE and not _settled(s, b.id)
            and (b.id in on_wire or b.id in queued)]
    if not live:
        return None
    b = live[0]  # the oldest (created first): delivery.timeout.ms counts from creation
    s = replace(s, used=replace(s.used, inflight_timeouts=s.used.inflight_timeouts + 1))
    if b.id in queued:
        c = _with_part(c, partition, queue=tuple(i for i in queued if i != b.id))
    s = _fail(s, c, b, DELIVERY_TIMEOUT, False, model)
    return replace(s, client=model.rules.expired_in_flight(s.client, b)) if cfg.idempotent else s


# ---- the broker ---------------------------------------------------------------------------------------------------


def _respond(s: State, broker: int, resp: Response) -> State:
    conn = s.conn(broker)
    return replace(s, conns=_with(s.conns, broker - 1,
                                  replace(conn, serving=None, responses=conn.responses + (resp,))))


def _log_batches(s: State, r: Replica, partition: int, start: int = 0) -> list[tuple[int, int, int, int]]:
    """(offset, batch, epoch, seq) of the idempotent producer's batches of `partition` in `r`'s log from `start`."""
    out = []
    for off in range(start, r.leo):
        batch, epoch, seq = s.records[r.log[off].id - 1]
        if seq != NO_SEQUENCE and s.client.batches[batch].partition == partition:
            out.append((off, batch, epoch, seq))
    return out


def _entry(s: State, broker: int, partition: int) -> Entry | None:
    return s.entries[broker - 1][partition]


def _set_entry(s: State, broker: int, partition: int, entry: Entry | None) -> State:
    return replace(s, entries=_with(s.entries, broker - 1, _with(s.entries[broker - 1], partition, entry)))


def _check_sequence_error(s: State, r: Replica, req: Request, error: str, cfg: Config) -> State:
    """Flag a sequence error (OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID) for a batch that was in fact next:
    the broker's log holds the producer's batches of that epoch up to the one before it (or none, and it is 0)."""
    if error not in (OUT_OF_ORDER, UNKNOWN_PRODUCER):
        return s
    mine = _log_batches(s, r, s.client.batches[req.batch].partition)
    same = [seq for _, _, e, seq in mine if e == req.epoch]
    newer = any(e > req.epoch for _, _, e, _ in mine)
    nxt = next_sequence(same[-1], cfg.seq_max) if same else 0
    if req.seq == nxt and not newer:
        return _flag(s, "produce.sequence-error-means-gap",
                     f"broker {r.id} answered {error} to batch b{req.batch} (epoch {req.epoch}, sequence {req.seq}), "
                     "the next sequence after everything its log holds of the producer")
    return s


def _park(s: State, broker: int, req: Request, offset: int, last: int, model: RequestSystem) -> State:
    """acks=all: a DelayedProduce, checked at once (`tryCompleteElseWatch`)."""
    conn = s.conn(broker)
    waiting = Delayed(req, last + 1, offset, s.clock + model.cfg.request_timeout)
    s = replace(s, conns=_with(s.conns, broker - 1, replace(conn, requests=conn.requests[1:], serving=waiting)))
    return try_complete(s, broker, model)


def _reply(s: State, broker: int, req: Request, error: str, offset: int = -1) -> State:
    conn = s.conn(broker)
    s = replace(s, conns=_with(s.conns, broker - 1, replace(conn, requests=conn.requests[1:])))
    return _respond(s, broker, Response(req.corr, req.batch, error, offset))


def _duplicate(s: State, broker: int, req: Request, cached: tuple[int, int, int, int], model: RequestSystem) -> State:
    """A duplicate of a cached batch: nothing is written, the answer carries the cached offsets (acks=all: once the
    high watermark passes them)."""
    first, last = cached[2], cached[3]
    r = s.rep.replica(broker)
    if first >= r.leo or s.batch_of(r.log[first].id) != req.batch:
        s = _flag(s, "produce.dup-ack-offsets", f"broker {broker} answered batch b{req.batch} as a duplicate at "
                  f"offset {first}, which holds no record of it")
    if model.cfg.acks == "1":
        return _reply(s, broker, req, NONE, first)
    return _park(s, broker, req, first, last, model)


def _failed_append(s: State, broker: int, req: Request, model: RequestSystem) -> State:
    """The append fails after the producer-state checks (an I/O error: KafkaStorageException); whether the producer
    state already changed is the rule `state_on_failed_append`."""
    s = replace(s, used=replace(s.used, append_failures=s.used.append_failures + 1))
    if model.cfg.idempotent and model.rules.state_on_failed_append():
        leo = s.rep.replica(broker).leo
        p = s.client.batches[req.batch].partition
        entry = add_batch(model.rules, _entry(s, broker, p), req.epoch, req.seq, req.seq, leo, leo)
        s = _set_entry(s, broker, p, entry)
    return _reply(s, broker, req, STORAGE_ERROR)


def serve(s: State, broker: int, failing: bool, model: RequestSystem) -> State | None:
    cfg, rules, p = model.cfg, model.rules, model.protocol
    conn = s.conn(broker)
    r = s.rep.replica(broker)
    if not conn.requests or conn.serving is not None or not r.alive:
        return None
    if failing and s.used.append_failures >= cfg.append_failures:
        return None
    req = conn.requests[0]
    if not r.is_leader:
        return None if failing else _reply(s, broker, req, NOT_LEADER)
    if not p.produce_accepted(r, cfg.acks, cfg.min_isr):
        return None if failing else _reply(s, broker, req, NOT_ENOUGH_REPLICAS)
    partition = s.client.batches[req.batch].partition
    entry = _entry(s, broker, partition)
    if cfg.idempotent:
        verdict, cached = rules.analyze(rules, entry, req.epoch, req.seq, req.seq, cfg.seq_max)
        if verdict != "append" and failing:
            return None
        if verdict == "duplicate":
            return _duplicate(s, broker, req, cached, model)
        if verdict == "error":
            s = _check_sequence_error(s, r, req, cached, cfg)
            return _reply(s, broker, req, cached)
    if failing:
        return _failed_append(s, broker, req, model)
    appended = rep.produce(s.rep, p, model.rcfg, broker, cfg.acks)
    if appended is None:
        return None
    offset = r.leo
    s = replace(s, rep=appended, records=s.records + ((req.batch, req.epoch, req.seq),))
    if cfg.idempotent:
        s = _set_entry(s, broker, partition, add_batch(rules, entry, req.epoch, req.seq, req.seq, offset, offset))
    if cfg.acks == "1":
        return _reply(s, broker, req, NONE, offset)
    return _park(s, broker, req, offset, offset, model)



def waiting_status(s: State, broker: int, model: RequestSystem) -> str | None:
    """What the broker's DelayedProduce would answer if checked now (None: still pending, or none waiting)."""
    w = s.conn(broker).serving
    r = s.rep.replica(broker)
    if w is None or not r.alive:
        return None
    return model.rules.purgatory_status(r, w.required, model.cfg.min_isr, model.protocol)


def try_complete(s: State, broker: int, model: RequestSystem) -> State:
    w = s.conn(broker).serving
    status = waiting_status(s, broker, model)
    if w is None or status is None:
        return s
    r = s.rep.replica(broker)
    if status == NONE and not (r.is_leader and r.hw >= w.required
                               and model.protocol.ack_complete(r, model.cfg.min_isr)):
        s = _flag(s, "purgatory.none-means-hw", f"broker {broker} answered NONE for batch b{w.request.batch} with "
                  f"high watermark {r.hw} (required {w.required}), ISR {sorted(r.isr)}, leading: {r.is_leader}")
    return _respond(s, broker, Response(w.request.corr, w.request.batch, status, w.offset if status == NONE else -1))


def tick(s: State, model: RequestSystem) -> State | None:
    if s.clock >= model.cfg.max_clock:
        return None
    s = replace(s, clock=s.clock + 1)
    for b in s.rep.brokers:
        w = s.conn(b).serving
        if w is not None and w.deadline <= s.clock:
            s = _respond(s, b, Response(w.request.corr, w.request.batch, REQUEST_TIMED_OUT))
    return s


def delete_records(s: State, model: RequestSystem) -> State | None:
    if s.used.log_start_moves >= model.cfg.log_start_moves:
        return None
    leader = s.rep.registry.leader
    if leader < 1:
        return None
    r = s.rep.replica(leader)
    if not r.is_leader or r.hw <= s.log_start:
        return None
    s = replace(s, log_start=r.hw, used=replace(s.used, log_start_moves=s.used.log_start_moves + 1))
    if model.rules.state_kept_below_log_start():
        return s
    entries = tuple(tuple(None if e is None or not e.cached or e.cached[-1][3] < s.log_start else e for e in mine)
                    for mine in s.entries)
    return replace(s, entries=entries)


def expire_producer(s: State, broker: int, model: RequestSystem) -> State | None:
    """producer.id.expiration.ms on broker b: the producer id's state goes from each of its partitions."""
    mine = s.entries[broker - 1]
    if s.used.expiries >= model.cfg.expiries or all(e is None for e in mine):
        return None
    return replace(s, entries=_with(s.entries, broker - 1, (None,) * len(mine)),
                   used=replace(s.used, expiries=s.used.expiries + 1))


# ---- composing with the replication model -------------------------------------------------------------------------


def _replayed(s: State, r: Replica, partition: int, model: RequestSystem) -> Entry | None:
    """A broker's producer state for `partition` rebuilt from its log (`ProducerStateManager.truncateAndReload` /
    `LogLoader`), from the log start when the rules drop state with the log."""
    start = 0 if model.rules.state_kept_below_log_start() else s.log_start
    entry = None
    for off, _, epoch, seq in _log_batches(s, r, partition, min(start, r.leo)):
        entry = add_batch(model.rules, entry, epoch, seq, seq, off, off)
    return entry


def _follow_logs(before: State, s: State, model: RequestSystem) -> State:
    """After a replication step: each broker's producer state follows its log, a broker that died loses its
    connection, and the purgatory is re-checked on the events the rules name."""
    entries = list(s.entries)
    for b in s.rep.brokers:
        old, new = before.rep.replica(b), s.rep.replica(b)
        if old.log is new.log and old.alive == new.alive:
            continue
        mine = list(entries[b - 1])
        for p in range(len(mine)):
            if new.alive and old.alive and new.log[:old.leo] == old.log:  # a follower appended what it fetched
                for off, _, epoch, seq in _log_batches(s, new, p, old.leo):
                    mine[p] = add_batch(model.rules, mine[p], epoch, seq, seq, off, off)
            elif new.alive:
                mine[p] = _replayed(s, new, p, model)
        entries[b - 1] = tuple(mine)
    s = replace(s, entries=tuple(entries))
    for b in s.rep.brokers:
        if before.rep.replica(b).alive and not s.rep.replica(b).alive:
            s = _disconnect(s, b, model)
    for b in s.rep.brokers:
        old, new = before.rep.replica(b), s.rep.replica(b)
        if s.conn(b).serving is None:
            continue
        events = []
        if new.hw > old.hw:
            events.append("hw")
        if old.is_leader and (not new.is_leader or new.leader_epoch != old.leader_epoch):
            events.append("leader")
        if any(model.rules.purgatory_recheck(e) for e in events):
            s = try_complete(s, b, model)
    return s


# ---- the transition system ----------------------------------------------------------------------------------------


_FIELDS: dict[type, tuple[str, ...]] = {}
_PLAIN = (int, str, bool, type(None))


def _canon(x: Any) -> Any:
    """Plain, ordered values for the encoding: dataclasses as tuples of their fields, sets sorted."""
    t = type(x)
    if t in _PLAIN:
        return x
    if t is tuple:
        return tuple([_canon(v) for v in x])
    if t is frozenset:
        return tuple(sorted((_canon(v) for v in x), key=repr))
    names = _FIELDS.get(t)
    if names is None:
        if not is_dataclass(x):
            return x
        names = _FIELDS[t] = tuple(f.name for f in fields(x))
    return tuple([_canon(getattr(x, n)) for n in names])


_MEMO: dict[int, tuple[Any, str]] = {}


def _part(obj: Any) -> str:
    """repr(_canon(obj)), kept per object while the object lives in the memo: a successor shares most of its parts
    with its parent (the entry holds the object, so its id names it)."""
    got = _MEMO.get(id(obj))
    if got is not None and got[0] is obj:
        return got[1]
    text = repr(_canon(obj))
    if len(_MEMO) >= 200_000:
        _MEMO.clear()
    _MEMO[id(obj)] = (obj, text)
    return text


def encode_request_part(s: State) -> bytes:
    """The encoding of everything but the replication state (which `RequestModel` encodes with the replication
    model's own canonical encoding)."""
    return "|".join((_part(s.client), _part(s.conns), _part(s.entries), _part(s.records), str(s.log_start),
                     str(s.clock), _part(s.used), _part(s.history))).encode()


class RequestSystem:
    """The transition system over `State`; `kcheck.invariants.request_model.RequestModel` adds the invariants."""

    def __init__(self, cfg: Config | None = None, rules: Rules | None = None) -> None:
        self.cfg = cfg or Config()
        self.rules = rules or Rules.current()
        self.protocol = self.rules.replication()
        self.rcfg = replication_config(self.cfg)
        self.name = f"request[{self.rules.name}]"
        self._kinds = [k for k in REPLICATION_KINDS if rep.KINDS[k].possible(self.rcfg)]

    @classmethod
    def for_variant(cls, variant: Variant, **overrides: Any) -> RequestSystem:
        return cls(Config(**{**variant.settings, **overrides}), variant.rules)

    def initial_states(self) -> list[State]:
        return [initial_state(self.cfg)]

    def successors(self, s: State) -> list[tuple[int, Action, State]]:
        out: list[tuple[int, Action, State]] = []
        for a in self._candidates(s):
            nxt = self.step(s, a)
            if nxt is not None:
                out.append((len(out), a, nxt))
        return out

    def actions(self, s: State) -> list[Action]:
        return [a for _, a, _ in self.successors(s)]

    def _candidates(self, s: State) -> list[Action]:
        brokers = list(s.rep.brokers)
        parts = range(self.cfg.partitions)
        out: list[Action] = [("send",), ("resolve",), ("bump",)] + [("drain", p) for p in parts]
        out += [("serve", b, False) for b in brokers] + [("serve", b, True) for b in brokers]
        out += [("deliver", b) for b in brokers] + [("drop", b) for b in brokers]
        out += [("refresh", b) for b in brokers]
        out += [("tick",)] + [("expire-batch", p) for p in parts] + [("expire-in-flight", p) for p in parts]
        out += [("delete-records",)] + [("expire-producer", b) for b in brokers]
        for kind in self._kinds:
            for args in rep.KINDS[kind].candidates(s.rep, self.rcfg):
                out.append(("rep", rep.Action(kind, tuple(args))))
        return out

    def step(self, s: State, a: Action) -> State | None:  # noqa: C901 - one dispatch per action kind
        cfg, kind = self.cfg, a[0]
        if kind == "send":
            c = s.client
            if len(c.batches) >= cfg.batches:
                return None
            b = Batch(len(c.batches), len(c.batches) % cfg.partitions)
            q = c.parts[b.partition].queue + (b.id,)
            return replace(s, client=_with_part(replace(c, batches=c.batches + (b,)), b.partition, queue=q))
        if kind == "resolve":
            return resolve(s, self)
        if kind == "bump":
            return bump(s, self)
        if kind == "drain":
            return drain(s, a[1], self)
        if kind == "serve":
            return serve(s, a[1], a[2], self)
        if kind == "deliver":
            return deliver(s, a[1], self)
        if kind == "drop":
            if s.used.drops >= cfg.drops or not any(w[0] == a[1] for w in s.client.wire):
                return None
            return _disconnect(replace(s, used=replace(s.used, drops=s.used.drops + 1)), a[1], self)
        if kind == "refresh":
            return refresh(s, a[1], self.rules)
        if kind == "tick":
            return tick(s, self)
        if kind == "expire-batch":
            return expire_batch(s, a[1], cfg)
        if kind == "expire-in-flight":
            return expire_in_flight(s, a[1], self)
        if kind == "delete-records":
            return delete_records(s, self)
        if kind == "expire-producer":
            return expire_producer(s, a[1], self)
        if kind == "rep":
            after = rep.apply(s.rep, self.protocol, self.rcfg, a[1])
            return None if after is None else _follow_logs(s, replace(s, rep=after), self)
        raise ValueError(f"unknown action {a!r}")

    def encode(self, s: State) -> bytes:
        return repr(_canon(s)).encode()

    def symmetries(self) -> list[Callable[[State], State]]:
        return []  # broker 1 leads at the start and the client knows it: brokers are not interchangeable

    def describe(self, a: Action) -> str:
        kind = a[0]
        if kind == "rep":
            return "replication: " + a[1].label()
        if kind == "serve":
            return f"serve {a[1]}" + (" (the append fails)" if a[2] else "")
        if kind in ("drain", "expire-batch", "expire-in-flight") and self.cfg.partitions == 1:
            return str(kind)  # one partition: no need to name it
        return " ".join(str(x) for x in a)

    def kind(self, a: Action) -> str:
        return f"rep:{a[1].kind}" if a[0] == "rep" else str(a[0])

    def invariants(self) -> Sequence[StateInvariant[State]]:
        return []
