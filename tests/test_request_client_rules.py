"""The request model's client (Sender, RecordAccumulator, TransactionManager decisions in model/request/model.py and
the client rules of rules.py) against the bit-exact reference `kcheck.reference.client_producer_state` (diffed
against the real TransactionManager in tests/test_kafka_client_producer_state.py).

Every transition of every state the model reaches at small bounds (today's rules on one and on two partitions, and
each variant's setting: its brokers answer UNKNOWN_PRODUCER_ID, KAFKA_STORAGE_ERROR, wrapped sequences, ...; its
batches expire in flight, ...) is replayed on a reference producer built from the model's client: a send, a drain, an
answer, a dropped connection (NETWORK_EXCEPTION for every request on it, oldest first), the Sender's loop resolving
sequences or bumping the epoch, an expiry in the queue or in flight must leave the same epoch, bump request (and the
partitions it rewrites), per partition the epoch its sequences belong to, next, last acknowledged and unresolved
sequence and in-flight batches, and per batch its sequence, epoch, attempts, reset flag and outcome; every other step
must leave that bookkeeping alone; and the drain gate must agree.

A variant whose client rules are deliberately not today's Kafka (an older client, a rejected design, kafka-python)
cannot answer as the reference does: its own rules are skipped with the reason, and today's client rules run in its
setting instead.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace

import pytest

from kcheck.model.request.model import RequestSystem, drain
from kcheck.model.request.rules import VARIANTS, Rules
from kcheck.model.request.state import DELIVERY_TIMEOUT, NETWORK_EXCEPTION, NO_SEQUENCE, Config, State
from kcheck.reference.client_producer_state import Batch, ClientProducer, Entry

PID = 0  # the model's one producer id
# The client's decisions in `Rules`: a variant that changes one of them is a client variant.
CLIENT_RULES = ("can_retry", "failed_batch", "sequences_on_bump", "inflight_key", "expired_in_flight",
                "mute_partition")
# Client variants that are deliberately not the Kafka the reference mirrors (3.9.1 to 4.4.0).
NOT_KAFKA = {
    "bump-resets-only-triggering": "Kafka 2.5 to 2.7's bump (before KAFKA-12152), older than the reference",
    "bump-rewrites-every-partition": "a design KAFKA-12152's review rejected, never in Kafka",
    "inflight-by-sequence": "Kafka before KAFKA-13794 (3.3.0), older than the reference",
    "kafka-python": "kafka-python's client, not Kafka's TransactionManager",
}


def _outcome(s: State, batch: int) -> str | None:
    if any(i == batch for i, _ in s.history.acked):
        return "SUCCEEDED"
    return "FAILED" if any(i == batch for i, _ in s.history.failed) else None


def _reference(s: State, cfg: Config) -> ClientProducer:
    """A reference producer in the model client's state (partitions 0 to cfg.partitions - 1)."""
    c = s.client
    p = ClientProducer(cfg.retries, PID, c.epoch)
    for mb in c.batches:
        p.batches.append(Batch(mb.id, mb.partition, 1, PID if mb.seq != NO_SEQUENCE else -1, mb.epoch, mb.seq,
                               mb.attempts, mb.attempts > 0, mb.reset, _outcome(s, mb.id)))
    for tp, part in enumerate(c.parts):
        inflight = {p.batches[i].key: p.batches[i] for i in c.tracked if c.batches[i].partition == tp}
        p.entries[tp] = Entry(PID, part.epoch, part.next_seq, part.last_acked, -1, inflight)
        if part.unresolved >= 0:
            p.unresolved[tp] = part.unresolved
    p.bump_required = bool(c.bump)
    p.to_rewrite = set(c.bump)
    return p


def _reference_view(p: ClientProducer, cfg: Config) -> tuple[object, ...]:
    """`seq_max`: the model wraps sequences there (a bound that lets a search reach Integer.MAX_VALUE's wrap)."""
    def wrap(seq: int) -> int:
        return seq if seq < 0 else seq % (cfg.seq_max + 1)
    parts = []
    for tp in range(cfg.partitions):
        e = p.entries[tp]
        tracked = sorted((b.id, wrap(b.base_seq), b.epoch) for b in e.inflight.values())
        parts.append((e.epoch, wrap(e.next_seq), e.last_acked_seq, wrap(p.unresolved.get(tp, -1)), tracked))
    batches = [(b.partition, wrap(b.base_seq), b.epoch, b.attempts, b.reopened, b.final) for b in p.batches]
    return p.epoch, p.bump_required, sorted(p.to_rewrite), parts, batches


def _model_view(s: State) -> tuple[object, ...]:
    c = s.client
    parts = [(part.epoch, part.next_seq, part.last_acked, part.unresolved,
              sorted((i, c.batches[i].seq, c.batches[i].epoch) for i in c.tracked if c.batches[i].partition == tp))
             for tp, part in enumerate(c.parts)]
    batches = [(b.partition, b.seq, b.epoch, b.attempts, b.reset, _outcome(s, b.id)) for b in c.batches]
    return c.epoch, bool(c.bump), sorted(c.bump), parts, batches


def _dropped(s: State, broker: int) -> list[tuple[int, str, int]]:
    """The batches of the requests in flight on the dropped connection, oldest first (model.py's `_disconnect`)."""
    return [(batch, NETWORK_EXCEPTION, -1) for b, _, batch in s.client.wire if b == broker]


def _replay(s: State, a: tuple, nxt: State, cfg: Config) -> tuple[ClientProducer, list[str]] | None:
    """The reference's steps for the model's client step `a` (None: a step that must not touch the client)."""
    p, kind, c = _reference(s, cfg), a[0], s.client
    if kind == "send":
        return p, [p.new_batch(len(c.batches) % cfg.partitions, 1)]
    if kind == "drain":
        return p, [p.drain(c.parts[a[1]].queue[0])]
    if kind in ("resolve", "bump"):  # the Sender's loop: maybeResolveSequences, then the bump
        return p, [p.loop()]
    if kind == "expire-batch":
        return p, [p.expire(c.parts[a[1]].queue[0])]
    if kind == "expire-in-flight":
        gone = nxt.history.failed - s.history.failed
        return p, [p.expire(i) for i, e in gone if e == DELIVERY_TIMEOUT]
    if kind == "deliver":
        r = s.conn(a[1]).responses[0]
        return p, [p.respond(r.batch, r.error, r.offset, s.log_start, False)]
    if kind == "drop":
        return p, [p.respond(b, e, o, s.log_start, False) for b, e, o in _dropped(s, a[1])]
    if kind == "rep":  # a broker that crashes drops its connection
        died = [b for b in s.rep.brokers if s.rep.replica(b).alive and not nxt.rep.replica(b).alive]
        return p, [p.respond(b, e, o, s.log_start, False) for d in died for b, e, o in _dropped(s, d)]
    return None


def _drain_open(s: State, partition: int, system: RequestSystem) -> bool:
    """Whether only the TransactionManager can stop the model's drain of `partition` now (leader known and alive,
    room in flight, the partition not muted, no bump pending: the Sender bumps before it drains)."""
    cfg, c = system.cfg, s.client
    if not c.parts[partition].queue or c.leader < 1 or not s.rep.replica(c.leader).alive or c.bump:
        return False
    muted = system.rules.mute_partition(cfg.max_in_flight, cfg.idempotent) and any(
        c.batches[i].partition == partition for _, _, i in c.wire)
    return sum(1 for b, _, _ in c.wire if b == c.leader) < cfg.max_in_flight and not muted


def _check_state(system: RequestSystem, s: State) -> None:
    cfg = system.cfg
    for tp in range(cfg.partitions):
        if _drain_open(s, tp, system):
            verdict = _reference(s, cfg).drain(s.client.parts[tp].queue[0])
            assert (drain(s, tp, system) is None) == (verdict == "B"), (tp, s.client, verdict)
    for _, a, nxt in system.successors(s):
        replayed = _replay(s, a, nxt, cfg)
        if replayed is None:
            assert _model_view(nxt) == _model_view(s), (a, s.client, nxt.client)
        else:
            p, verdicts = replayed
            assert _reference_view(p, cfg) == _model_view(nxt), (a, verdicts, s.client, nxt.client)


def _check(system: RequestSystem, max_states: int) -> int:
    """Breadth-first over the model's states: every transition replayed on the reference. Returns the states."""
    start = system.initial_states()[0]
    seen, todo, checked = {system.encode(start)}, deque([start]), 0
    while todo and len(seen) < max_states:
        s = todo.popleft()
        _check_state(system, s)
        checked += 1
        for _, _, nxt in system.successors(s):
            key = system.encode(nxt)
            if key not in seen:
                seen.add(key)
                todo.append(nxt)
    return checked


def _todays_client(rules: Rules) -> Rules:
    """`rules` with today's client decisions (the broker's, the purgatory's and the replication's kept)."""
    now = Rules.current()
    return replace(rules, name=f"{rules.name}+todays-client", **{n: getattr(now, n) for n in CLIENT_RULES})


def _is_client_variant(rules: Rules) -> bool:
    now = Rules.current()
    return any(getattr(rules, n) is not getattr(now, n) for n in CLIENT_RULES)


SETTINGS = {
    "today-two-in-flight": (Config(batches=2, max_in_flight=2, retries=1, drops=1, elections=1), Rules.current()),
    "today-three-batches-expiry": (Config(batches=3, max_in_flight=2, retries=2, drops=1, elections=0,
                                          delivery_timeouts=1), Rules.current()),
    "today-two-partitions": (Config(partitions=2, batches=3, max_in_flight=2, retries=1, drops=1, elections=0,
                                    inflight_timeouts=1), Rules.current()),
    **{name: (Config(**v.settings), v.rules) for name, v in VARIANTS.items()},
}
for _name, _v in VARIANTS.items():  # a client variant's setting, once per distinct setting, under today's client
    _setting = (Config(**_v.settings), _todays_client(_v.rules))
    if _is_client_variant(_v.rules) and _setting[0] not in {c for n, (c, _) in SETTINGS.items() if n not in NOT_KAFKA}:
        SETTINGS[f"{_name}+todays-client"] = _setting


@pytest.mark.parametrize("name", list(SETTINGS))
def test_the_models_client_answers_as_the_reference(name: str) -> None:
    cfg, rules = SETTINGS[name]
    if name in NOT_KAFKA:
        pytest.skip(f"{name}: {NOT_KAFKA[name]}; today's client runs in its setting")
    assert cfg.idempotent
    assert _check(RequestSystem(cfg, rules), max_states=3_000) > 0


def test_every_client_variant_that_is_not_kafka_is_named() -> None:
    """A new client variant is either checked against the reference or skipped with its reason here."""
    assert {n for n, v in VARIANTS.items() if _is_client_variant(v.rules)} == set(NOT_KAFKA)
