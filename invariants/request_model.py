"""The request model (`kcheck.model.request`) as a `kcheck.model.interface.Model`, with its properties.

What Kafka promises (hard: a violation fails a check), read in every state over the model's history variables:

- `produce.idem-no-duplicate`: with idempotence, no batch appears twice among the committed records ("the producer
  will ensure that exactly one copy of each message is written in the stream", `enable.idempotence`'s documentation);
- `produce.idem-epoch-no-duplicate`: the broker's own deduplication: no batch committed twice under one producer
  epoch (`ProducerStateEntry.findDuplicateBatch` compares within an epoch);
- `produce.idem-order`: with idempotence, each partition's committed batches are in the order the application sent
  them;
- `produce.ack-is-committed`: an acks=all success is committed at the offset it gave, and the leader's log holds
  it there;
- `produce.dup-ack-offsets`: a duplicate answered from the broker's cache gets the offsets of the original append;
- `produce.sequence-error-means-gap`: OUT_OF_ORDER_SEQUENCE_NUMBER (or UNKNOWN_PRODUCER_ID) only when the broker's
  log really lacks the producer's batch before it ("the broker received an unexpected sequence number ... data may
  have been lost", `OutOfOrderSequenceException`'s documentation, KIP-98);
- `produce.committed-on-min-isr`: a record below a leader's high watermark is on min.insync.replicas replicas
  (KIP-966: the high watermark does not advance while the ISR is below min.insync.replicas);
- `net.response-order`: each response answers the oldest request in flight on its connection (the model's
  connections are FIFO, so this holds by construction unless a step is wrong);
- `purgatory.none-means-hw`: a DelayedProduce answers NONE only on a broker that leads, whose high watermark is at
  its required offset, with min.insync.replicas in the ISR;
- `purgatory.checked-on-every-event`: no DelayedProduce is still waiting in a state where a check would complete
  it (the purgatory is re-checked at every event that can complete it);
- `meta.epoch-monotonic`: the leader epoch in the client's metadata never goes back;
- `client.new-epoch-starts-at-zero`: the first batch the client sends to a partition under a producer epoch carries
  sequence 0 (`ProducerAppendInfo.checkSequence` refuses anything else from a producer it knows: "Invalid sequence
  number for new epoch"; KIP-360's bump resets every partition's sequences);
- `client.inflight-tracked`: with idempotence, every batch that was drained and is neither acknowledged nor failed
  (its request in flight, or waiting for a retry) is in the TransactionManager's in-flight set, which orders its
  retries and says when a partition may reset its sequences (KAFKA-13794: "one batch may be removed by another
  batch with the same sequence number").

What Kafka does not promise (findings, reported with their smallest trace, never failing): `finding.nonidem-
duplicate`, `finding.nonidem-reorder`, `finding.indefinite-error-committed` (KAFKA-13574), `finding.zombie-ack-lost`
(acks=1), `finding.idem-gap` (a batch failed by delivery.timeout.ms and a later one committed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kcheck.invariants.replication_model_adapter import encode_state
from kcheck.model.interface import StateInvariant
from kcheck.model.liveness import LivenessProperty
from kcheck.model.replication.state import NO_LEADER
from kcheck.model.request.model import RequestSystem, encode_request_part, waiting_status
from kcheck.model.request.rules import Rules, Variant
from kcheck.model.request.state import INDEFINITE, Config, State


def committed_batches(s: State) -> list[tuple[int, int]]:
    """(offset, batch) of every record the partition committed (exposed below a leader's high watermark), by offset."""
    return sorted((off, s.batch_of(rid)) for off, rid in s.rep.history.committed)


def idem_no_duplicate(cfg: Config) -> Callable[[State], str | None]:
    def holds(s: State) -> str | None:
        if not cfg.idempotent:
            return None
        return _duplicate(s)
    return holds


def idem_epoch_no_duplicate(cfg: Config) -> Callable[[State], str | None]:
    """The broker's own deduplication: no batch committed twice under the same producer epoch."""
    def holds(s: State) -> str | None:
        if not cfg.idempotent:
            return None
        seen: dict[tuple[int, int], int] = {}
        for off, rid in sorted(s.rep.history.committed):
            batch, epoch, _ = s.records[rid - 1]
            if (batch, epoch) in seen:
                return f"batch b{batch} is committed twice under producer epoch {epoch}, at offsets " \
                       f"{seen[(batch, epoch)]} and {off}"
            seen[(batch, epoch)] = off
        return None
    return holds


def _duplicate(s: State) -> str | None:
    seen: dict[int, int] = {}
    for off, b in committed_batches(s):
        if b in seen:
            return f"batch b{b} is committed twice, at offsets {seen[b]} and {off}"
        seen[b] = off
    return None


def _reordered(s: State) -> str | None:
    """Per partition: a committed batch after one of its partition sent later."""
    last: dict[int, tuple[int, int]] = {}
    for off, b in committed_batches(s):
        p = s.client.batches[b].partition
        before = last.get(p, (-1, -1))
        if b < before[1]:
            return f"batch b{b} is committed at offset {off}, after b{before[1]} (offset {before[0]}), sent later"
        last[p] = (off, b)
    return None


def idem_order(cfg: Config) -> Callable[[State], str | None]:
    def holds(s: State) -> str | None:
        return _reordered(s) if cfg.idempotent else None
    return holds


def ack_is_committed(cfg: Config) -> Callable[[State], str | None]:
    def holds(s: State) -> str | None:
        if cfg.acks != "all":
            return None
        committed = {(off, s.batch_of(rid)) for off, rid in s.rep.history.committed}
        reg = s.rep.registry
        leader = s.rep.replica(reg.leader) if reg.leader != NO_LEADER else None
        for b, off in sorted(s.history.acked):
            if (off, b) not in committed:
                return f"batch b{b} was acknowledged at offset {off}, where it was never committed"
            if leader is not None and leader.alive and leader.hw > off and s.batch_of(leader.log[off].id) != b:
                return f"batch b{b} was acknowledged at offset {off}, which the leader {leader.id} holds another at"
        return None
    return holds


def committed_on_min_isr(cfg: Config) -> Callable[[State], str | None]:
    """KIP-966's promise (the strict rule, 3.7+): a record below a leader's high watermark is on at least
    min.insync.replicas replicas (the request model has no lossy crash and no unclean election to undo it)."""
    def holds(s: State) -> str | None:
        reps = s.rep.replicas
        for r in reps:
            if not r.is_leader:
                continue
            for off in range(min(r.hw, r.leo)):
                copies = sum(1 for q in reps if q.leo > off and q.log[off] == r.log[off])
                if copies < cfg.min_isr:
                    return (f"offset {off} is below leader {r.id}'s high watermark {r.hw} on {copies} replica(s), "
                            f"fewer than min.insync.replicas {cfg.min_isr}")
        return None
    return holds


def _flagged(invariant: str) -> Callable[[State], str | None]:
    def holds(s: State) -> str | None:
        for inv, message in sorted(s.history.flags):
            if inv == invariant:
                return message
        return None
    return holds


def checked_on_every_event(model: RequestSystem) -> Callable[[State], str | None]:
    def holds(s: State) -> str | None:
        for b in s.rep.brokers:
            status = waiting_status(s, b, model)
            if status is not None:
                w = s.conn(b).serving
                assert w is not None
                return (f"broker {b}'s DelayedProduce for batch b{w.request.batch} is still waiting though a check "
                        f"would answer {status} now (required offset {w.required}, high watermark "
                        f"{s.rep.replica(b).hw})")
        return None
    return holds


def epoch_monotonic(s: State) -> str | None:
    c, h = s.client, s.history
    if c.leader_epoch < h.max_client_epoch:
        return f"the client's metadata went back from leader epoch {h.max_client_epoch} to {c.leader_epoch}"
    return None


def inflight_tracked(cfg: Config) -> Callable[[State], str | None]:
    def holds(s: State) -> str | None:
        if not cfg.idempotent:
            return None
        c, h = s.client, s.history
        done = {b for b, _ in h.acked} | {b for b, _ in h.failed}
        pending = {i for _, _, i in c.wire} | {i for part in c.parts for i in part.queue}
        for b in c.batches:
            if b.seq >= 0 and b.id in pending and b.id not in done and b.id not in c.tracked:
                return (f"batch b{b.id} (epoch {b.epoch}, sequence {b.seq}) is not done but the TransactionManager "
                        "no longer tracks it in flight")
        return None
    return holds


# ---- findings -----------------------------------------------------------------------------------------------------


def nonidem(check: Callable[[State], str | None], cfg: Config) -> Callable[[State], str | None]:
    def holds(s: State) -> str | None:
        return None if cfg.idempotent else check(s)
    return holds


def indefinite_error_committed(s: State) -> str | None:
    committed = {b for _, b in committed_batches(s)}
    for b, error in sorted(s.history.failed):
        if error in INDEFINITE and b in committed:
            return f"the application was told {error} for batch b{b}, which is committed"
    return None


def zombie_ack_lost(cfg: Config) -> Callable[[State], str | None]:
    def holds(s: State) -> str | None:
        if cfg.acks != "1":
            return None
        committed = dict(committed_batches(s))
        for b, off in sorted(s.history.acked):
            if off in committed and committed[off] != b:
                return f"batch b{b} was acknowledged (acks=1) at offset {off}, where b{committed[off]} is committed"
        return None
    return holds


def idem_gap(cfg: Config) -> Callable[[State], str | None]:
    def holds(s: State) -> str | None:
        if not cfg.idempotent:
            return None
        committed = {b for _, b in committed_batches(s)}
        part = [b.partition for b in s.client.batches]
        for b, error in sorted(s.history.failed):
            later = [x for x in committed if x > b and part[x] == part[b]]
            if b not in committed and later:
                return f"batch b{b} failed ({error}) and is not in the log, but the later b{min(later)} is committed"
        return None
    return holds


HARD = ("produce.idem-no-duplicate", "produce.idem-epoch-no-duplicate", "produce.idem-order",
        "produce.ack-is-committed", "produce.dup-ack-offsets", "produce.sequence-error-means-gap",
        "produce.committed-on-min-isr", "net.response-order", "purgatory.none-means-hw",
        "purgatory.checked-on-every-event", "meta.epoch-monotonic", "client.new-epoch-starts-at-zero",
        "client.inflight-tracked")
FINDINGS = ("finding.nonidem-duplicate", "finding.nonidem-reorder", "finding.indefinite-error-committed",
            "finding.zombie-ack-lost", "finding.idem-gap")


# The progress a fair run cannot refuse forever (weak fairness per action, `kcheck.model.liveness`): the client's
# sender loop, the broker serving and answering, the metadata refresh, the clock, and the replication model's healing
# steps. Faults (drops, failing appends, elections, ISR shrinks, crashes), the application's sends and the expiries
# are not.
FAIR_KINDS = frozenset({"resolve", "bump", "drain", "deliver", "refresh", "tick", "rep:fetch_round", "rep:truncate",
                        "rep:advance_hw", "rep:expand_isr", "rep:handle_alter_partition",
                        "rep:handle_alter_partition_response", "rep:apply_metadata", "rep:restart", "rep:elect",
                        "rep:unfence"})


def request_answered(s: State) -> bool:
    """The goal of `liveness.request-answered`: no produce request of the client is in flight."""
    return not s.client.wire


LIVENESS = (LivenessProperty("liveness.request-answered", "every produce request is eventually answered",
                             request_answered),)


class RequestModel(RequestSystem):
    """`kcheck.model.interface.Model` over the request model's `State`: the transition system and its properties;
    with `findings`, the findings too (as invariants, so a search reports the smallest trace to each)."""

    def __init__(self, cfg: Config | None = None, rules: Rules | None = None, findings: bool = False) -> None:
        super().__init__(cfg, rules)
        self.findings = findings

    @classmethod
    def for_variant(cls, variant: Variant, **overrides: Any) -> RequestModel:
        return cls(Config(**{**variant.settings, **overrides}), variant.rules)

    def fair(self, a: Any) -> bool:
        return self.kind(a) in FAIR_KINDS or (a[0] == "serve" and not a[2])

    def encode(self, s: State) -> bytes:
        """The replication model's canonical encoding of the partition, then the request layer's."""
        rep = encode_state(s.rep)
        return len(rep).to_bytes(4, "little") + rep + encode_request_part(s)

    def invariants(self) -> Sequence[StateInvariant[State]]:
        cfg = self.cfg
        hard = [
            StateInvariant("produce.idem-no-duplicate", "idempotent: no batch committed twice", idem_no_duplicate(cfg)),
            StateInvariant("produce.idem-epoch-no-duplicate", "idempotent: no batch committed twice under one "
                           "producer epoch", idem_epoch_no_duplicate(cfg)),
            StateInvariant("produce.idem-order", "idempotent: committed in send order", idem_order(cfg)),
            StateInvariant("produce.ack-is-committed", "an acks=all success is committed at its offset",
                           ack_is_committed(cfg)),
            StateInvariant("produce.dup-ack-offsets", "a duplicate gets the original offsets",
                           _flagged("produce.dup-ack-offsets")),
            StateInvariant("produce.sequence-error-means-gap", "a sequence error means a missing batch",
                           _flagged("produce.sequence-error-means-gap")),
            StateInvariant("produce.committed-on-min-isr", "below the high watermark only on min.insync.replicas "
                           "replicas (KIP-966)", committed_on_min_isr(cfg)),
            StateInvariant("net.response-order", "responses answer requests in order per connection",
                           _flagged("net.response-order")),
            StateInvariant("purgatory.none-means-hw", "NONE only at the high watermark with min ISR",
                           _flagged("purgatory.none-means-hw")),
            StateInvariant("purgatory.checked-on-every-event", "no request waits once a check would complete it",
                           checked_on_every_event(self)),
            StateInvariant("meta.epoch-monotonic", "the client's leader epoch never goes back", epoch_monotonic),
            StateInvariant("client.new-epoch-starts-at-zero", "a partition's first batch of a producer epoch has "
                           "sequence 0", _flagged("client.new-epoch-starts-at-zero")),
            StateInvariant("client.inflight-tracked", "idempotent: every drained batch not done is tracked in flight",
                           inflight_tracked(cfg)),
        ]
        if not self.findings:
            return hard
        return hard + [
            StateInvariant("finding.nonidem-duplicate", "not idempotent: a batch committed twice",
                           nonidem(_duplicate, cfg)),
            StateInvariant("finding.nonidem-reorder", "not idempotent: committed out of send order",
                           nonidem(_reordered, cfg)),
            StateInvariant("finding.indefinite-error-committed", "an indefinite error for a committed batch "
                           "(KAFKA-13574)", indefinite_error_committed),
            StateInvariant("finding.zombie-ack-lost", "acks=1: an acknowledged batch lost", zombie_ack_lost(cfg)),
            StateInvariant("finding.idem-gap", "idempotent: a failed batch before a committed one", idem_gap(cfg)),
        ]


def _partition_line(c: Any, p: int) -> str:
    part = c.parts[p]
    return (f" p{p}" + (f"(e{part.epoch})" if part.epoch != c.epoch else "") + f" next {part.next_seq} queue "
            f"{list(part.queue)}" + (f" unresolved {part.unresolved}" if part.unresolved >= 0 else ""))


def state_line(s: State) -> str:
    """One line of what a trace step left: the client (epoch, queue, requests in flight), each broker's log (batch
    id, producer epoch and sequence, leader epoch), high watermark and role, and what each connection holds."""
    c = s.client
    parts = [f"client e{c.epoch}" + "".join(_partition_line(c, p) for p in range(len(c.parts)))
             + f" in flight {[f'{b}#{corr}' for b, corr, _ in c.wire]} metadata {c.leader}/e{c.leader_epoch}"
             + (f" bump {sorted(c.bump)}" if c.bump else "")]
    for r in s.rep.replicas:
        log = " ".join(f"b{s.batch_of(rec.id)}" + (f"({e},{q})" if q >= 0 else "")
                       for rec, (_, e, q) in ((rec, s.records[rec.id - 1]) for rec in r.log)) or "-"
        role = "down" if not r.alive else ("leader" if r.is_leader else "follower") + f" e{r.leader_epoch}"
        conn = s.conn(r.id)
        wire = "".join([f" req{[q.corr for q in conn.requests]}" if conn.requests else "",
                        f" waiting#{conn.serving.request.corr}" if conn.serving else "",
                        f" resp{[f'{x.corr}:{x.error}' for x in conn.responses]}" if conn.responses else ""])
        parts.append(f"{r.id}: [{log}] hw {r.hw} {role}{wire}")
    return "; ".join(parts)
