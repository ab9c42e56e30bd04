"""The request model's client (Sender, RecordAccumulator, TransactionManager decisions in model/request/model.py)
against the bit-exact reference `kcheck.reference.client_producer_state` (diffed against the real TransactionManager
in tests/test_kafka_client_producer_state.py).

Every transition of every state the model reaches at small bounds (today's rules and each historical rule's
setting, whose brokers answer UNKNOWN_PRODUCER_ID, KAFKA_STORAGE_ERROR, wrapped sequences, ...) is replayed on a
reference producer built from the model's client: a send, a drain, an answer, a dropped connection (NETWORK_EXCEPTION
for every request on it, oldest first), an epoch bump (the Sender's loop) or an expiry in the queue must leave the
same epoch, bump request, next and last acknowledged sequence, in-flight batches, and per batch its sequence, epoch,
attempts, reset flag and outcome; every other step must leave that bookkeeping alone; and the drain gate must agree.
"""

from __future__ import annotations

from collections import deque

import pytest

from kcheck.model.request.model import RequestSystem, drain
from kcheck.model.request.rules import VARIANTS, Rules
from kcheck.model.request.state import NETWORK_EXCEPTION, NO_SEQUENCE, Config, State
from kcheck.reference.client_producer_state import Batch, ClientProducer, Entry

PID = 0  # the model's one producer id


def _reference(s: State, cfg: Config) -> ClientProducer:
    """A reference producer in the model client's state (one partition, 0)."""
    c = s.client
    p = ClientProducer(cfg.retries, PID, c.epoch)
    acked = {i for i, _ in s.history.acked}
    failed = {i for i, _ in s.history.failed}
    for mb in c.batches:
        final = "SUCCEEDED" if mb.id in acked else "FAILED" if mb.id in failed else None
        p.batches.append(Batch(mb.id, 0, 1, PID if mb.seq != NO_SEQUENCE else -1, mb.epoch, mb.seq, mb.attempts,
                               mb.attempts > 0, mb.reset, final))
    inflight = {p.batches[i].key: p.batches[i] for i in c.tracked}
    p.entries[0] = Entry(PID, c.epoch, c.next_seq, c.last_acked, -1, inflight)
    p.bump_required = c.bump
    p.to_rewrite = {0} if c.bump else set()
    return p


def _reference_view(p: ClientProducer, seq_max: int) -> tuple[object, ...]:
    """`seq_max`: the model wraps sequences there (a bound that lets a search reach Integer.MAX_VALUE's wrap)."""
    def wrap(seq: int) -> int:
        return seq if seq < 0 else seq % (seq_max + 1)
    e = p.entries.get(0, Entry())
    tracked = sorted((b.id, wrap(b.base_seq), b.epoch) for b in e.inflight.values())
    batches = [(wrap(b.base_seq), b.epoch, b.attempts, b.reopened, b.final) for b in p.batches]
    return p.epoch, p.bump_required, wrap(e.next_seq), e.last_acked_seq, tracked, batches


def _model_view(s: State) -> tuple[object, ...]:
    c = s.client
    acked = {i for i, _ in s.history.acked}
    failed = {i for i, _ in s.history.failed}
    tracked = sorted((i, c.batches[i].seq, c.batches[i].epoch) for i in c.tracked)
    batches = [(b.seq, b.epoch, b.attempts, b.reset,
                "SUCCEEDED" if b.id in acked else "FAILED" if b.id in failed else None) for b in c.batches]
    return c.epoch, c.bump, c.next_seq, c.last_acked, tracked, batches


def _dropped(s: State, broker: int) -> list[tuple[int, str, int]]:
    """The batches of the requests in flight on the dropped connection, oldest first (model.py's `_disconnect`)."""
    conn = s.conn(broker)
    batch = {r.corr: r.batch for r in conn.requests}
    if conn.serving is not None:
        batch[conn.serving.request.corr] = conn.serving.request.batch
    batch.update({r.corr: r.batch for r in conn.responses})
    return [(batch[corr], NETWORK_EXCEPTION, -1) for b, corr in s.client.wire if b == broker]


def _replay(s: State, a: tuple, cfg: Config) -> tuple[ClientProducer, list[str]] | None:
    """The reference's steps for the model's client step `a` (None: a step that must not touch the client)."""
    p, kind = _reference(s, cfg), a[0]
    if kind == "send":
        return p, [p.new_batch(0, 1)]
    if kind == "drain":
        return p, [p.drain(s.client.queue[0])]
    if kind == "bump":
        return p, [p.loop()]
    if kind == "expire-batch":
        return p, [p.expire(s.client.queue[0])]
    if kind == "deliver":
        r = s.conn(a[1]).responses[0]
        return p, [p.respond(r.batch, r.error, r.offset, s.log_start, False)]
    if kind == "drop":
        return p, [p.respond(b, e, o, s.log_start, False) for b, e, o in _dropped(s, a[1])]
    return None


def _drain_open(s: State, cfg: Config) -> bool:
    """Whether only the TransactionManager can stop the model's drain now (leader known and alive, room in flight,
    no mute, no bump pending: the Sender bumps before it drains)."""
    c = s.client
    if not c.queue or c.leader < 1 or not s.rep.replica(c.leader).alive or c.bump:
        return False
    on_leader = sum(1 for b, _ in c.wire if b == c.leader)
    return on_leader < cfg.max_in_flight and not (cfg.max_in_flight == 1 and c.wire)


def _check(system: RequestSystem, max_states: int) -> int:
    """Breadth-first over the model's states: every transition replayed on the reference. Returns transitions."""
    cfg = system.cfg
    start = system.initial_states()[0]
    seen, todo, compared = {system.encode(start)}, deque([start]), 0
    while todo and len(seen) < max_states:
        s = todo.popleft()
        if cfg.idempotent and _drain_open(s, cfg):
            verdict = _reference(s, cfg).drain(s.client.queue[0])
            assert (drain(s, cfg) is None) == (verdict == "B"), (s.client, verdict)
        for _, a, nxt in system.successors(s):
            if cfg.idempotent:
                replayed = _replay(s, a, cfg)
                if replayed is None:
                    assert _model_view(nxt) == _model_view(s), (a, s.client, nxt.client)
                else:
                    p, verdicts = replayed
                    assert _reference_view(p, cfg.seq_max) == _model_view(nxt), (a, verdicts, s.client, nxt.client)
                compared += 1
            key = system.encode(nxt)
            if key not in seen:
                seen.add(key)
                todo.append(nxt)
    return compared


SETTINGS = {
    "today-two-in-flight": (Config(batches=2, max_in_flight=2, retries=1, drops=1, elections=1), Rules.current()),
    "today-three-batches-expiry": (Config(batches=3, max_in_flight=2, retries=2, drops=1, elections=0,
                                          delivery_timeouts=1), Rules.current()),
    **{name: (Config(**v.settings), v.rules) for name, v in VARIANTS.items()},
}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_the_models_client_answers_as_the_reference(name: str) -> None:
    cfg, rules = SETTINGS[name]
    assert _check(RequestSystem(cfg, rules), max_states=3_000) > 0
