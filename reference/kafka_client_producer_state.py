"""The differential for the idempotent producer's client bookkeeping: `client_producer_state.ClientProducer` against
kafka-clients' TransactionManager.

Request word TXNCLI (handler `reference/harness/KcheckClientProducerState.java`, kafka-clients of every release, in
the plain bridge): one script of steps on a fresh idempotent producer, each answered with its verdict and the
bookkeeping after it, so every step is one compared input.

    TXNCLI retries producerId epoch op...     (the handler's comment has the ops and the answer's grammar)

`random_case` draws scripts a producer can live through: batches of one to five records on three partitions, drained
in queue order (retries first, in sequence order), answered in order per partition or out of order across a
leader change, with every error the client treats apart (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID with the
log start before, at and after the last acked offset or unknown, DUPLICATE_SEQUENCE_NUMBER, retriable ones, a
non-retriable one, fatal ones), delivery timeouts at the answer, expiry in the queue and in flight, the Sender's
loop at any point, and epochs near Short.MAX_VALUE, where a bump asks for a new producer id.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from kcheck.reference.client_producer_state import (
    ERRORS,
    INITIALIZING,
    PARTITIONS,
    SHORT_MAX,
    ClientProducer,
    JavaThrow,
)
from kcheck.reference.kafka_bridge import KafkaBridge, ok_fields
from kcheck.reference.releases import ReleaseProfile, profile

Op = tuple[str | int, ...]  # ('n', p, count), ('d', b), ('r', b, error, offset, log start, late), ('x', b), ('l',),
# ('i', pid, epoch)


@dataclass(frozen=True)
class ClientCase:
    retries: int
    pid: int
    epoch: int
    ops: tuple[Op, ...]


def _encode_op(op: Op) -> str:
    kind, *args = op
    return str(kind) + ":".join(str(a) for a in args)


def encode_case(case: ClientCase) -> str:
    return " ".join(["TXNCLI", str(case.retries), str(case.pid), str(case.epoch), *map(_encode_op, case.ops)])


parse_answers = ok_fields  # one answer per compared step (the bench runner reads this name)


def apply(producer: ClientProducer, op: Op) -> str:
    """One step on our reference: its verdict (E<exception> where Kafka's code throws)."""
    kind = op[0]
    try:
        if kind == "n":
            return producer.new_batch(int(op[1]), int(op[2]))
        if kind == "d":
            return producer.drain(int(op[1]))
        if kind == "r":
            return producer.respond(int(op[1]), str(op[2]), int(op[3]), int(op[4]), bool(int(op[5])))
        if kind == "x":
            return producer.expire(int(op[1]))
        if kind == "l":
            return producer.loop()
        return producer.init_producer_id(int(op[1]), int(op[2]))
    except JavaThrow as e:
        return "E" + e.simple_name


def reference_answers(case: ClientCase, release: ReleaseProfile | str | None = None) -> list[str]:
    """Our answer to each step, in the handler's tokens."""
    prof = release if isinstance(release, ReleaseProfile) else profile(release)
    producer = ClientProducer(case.retries, case.pid, case.epoch, prof)
    return [f"{apply(producer, op)}/{producer.format_state()}" for op in case.ops]


def kafka_answers(bridge: KafkaBridge, cases: Sequence[ClientCase]) -> list[list[str]]:
    bridge.require("TXNCLI", "idempotent producer client state")
    return [parse_answers(line) for line in bridge.roundtrip([encode_case(c) for c in cases])]


# ---------------------------------------------------------------- random inputs

_RETRIABLE = ("NOT_LEADER_OR_FOLLOWER", "NETWORK_EXCEPTION", "REQUEST_TIMED_OUT", "NOT_ENOUGH_REPLICAS",
              "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "KAFKA_STORAGE_ERROR")
_RARE = ("INVALID_RECORD", "INVALID_PRODUCER_EPOCH", "CLUSTER_AUTHORIZATION_FAILED", "PRODUCER_FENCED",
         "INVALID_PRODUCER_ID_MAPPING")
assert set(_RETRIABLE + _RARE) < set(ERRORS)


class _World:
    """What the script's author knows: the queue per partition, the requests in flight and the log's offsets."""

    def __init__(self, rng: random.Random, producer: ClientProducer) -> None:
        self.rng = rng
        self.producer = producer
        self.queues: dict[int, list[int]] = {p: [] for p in PARTITIONS}
        self.sent: list[int] = []  # batches with a request in flight, in send order
        self.offset = 0

    def head(self, p: int) -> int | None:
        """The queue's head: a retry (lowest sequence first, RecordAccumulator.insertInSequenceOrder) before new."""
        q = self.queues[p]
        if not q:
            return None
        batches = self.producer.batches
        retries = [b for b in q if batches[b].base_seq >= 0]
        return min(retries, key=lambda b: batches[b].base_seq) if retries else q[0]

    def answer(self, b: int) -> Op:
        rng, batch = self.rng, self.producer.batches[b]
        r = rng.random()
        late = int(rng.random() < 0.08)
        if r < 0.4:
            self.offset += batch.count + rng.choice([0, 0, 0, 2])
            return ("r", b, "NONE", self.offset - batch.count, -1, late)
        if r < 0.55:
            return ("r", b, "OUT_OF_ORDER_SEQUENCE_NUMBER", -1, -1, late)
        if r < 0.68:
            e = self.producer.entries.get(batch.partition)
            acked = -1 if e is None else e.last_acked_offset
            lso = rng.choice([-1, 0, acked, acked + 1, acked + 5, max(0, acked - 1)])
            return ("r", b, "UNKNOWN_PRODUCER_ID", -1, lso, late)
        if r < 0.75:
            return ("r", b, "DUPLICATE_SEQUENCE_NUMBER", -1, -1, late)
        if r < 0.95:
            return ("r", b, rng.choice(_RETRIABLE), -1, -1, late)
        return ("r", b, rng.choice(_RARE), -1, -1, late)


def _response(w: _World) -> Op | None:
    """The answer to a request in flight: usually the oldest (one connection answers in order), sometimes another
    (a leader change: the old leader's answers come after the new one's)."""
    if not w.sent:
        return None
    b = w.sent[0] if w.rng.random() < 0.75 else w.rng.choice(w.sent)
    w.sent.remove(b)
    op = w.answer(b)
    verdict = apply(w.producer, op)
    if verdict == "R":
        w.queues[w.producer.batches[b].partition].append(b)
    return op


def _drain(w: _World) -> Op | None:
    heads = [h for p in PARTITIONS if (h := w.head(p)) is not None]
    if not heads:
        return None
    b = w.rng.choice(heads)
    op: Op = ("d", b)
    if apply(w.producer, op).startswith("S"):
        w.queues[w.producer.batches[b].partition].remove(b)
        w.sent.append(b)
    return op


def _expire(w: _World) -> Op | None:
    batches = w.producer.batches
    live = [b for p in PARTITIONS for b in w.queues[p]] + [b for b in w.sent if batches[b].final is None]
    if not live:
        return None
    b = w.rng.choice(live)
    op: Op = ("x", b)
    apply(w.producer, op)
    for q in w.queues.values():
        if b in q:
            q.remove(b)  # an expired in-flight batch's request may still be answered
    return op


def _step(w: _World) -> Op | None:
    rng, producer = w.rng, w.producer
    r = rng.random()
    if r < 0.2:
        p = rng.choice(PARTITIONS)
        op: Op = ("n", p, rng.choice([1, 1, 2, 3, 5]))
        apply(producer, op)
        w.queues[p].append(len(producer.batches) - 1)
        return op
    if r < 0.45:
        return _drain(w)
    if r < 0.75:
        return _response(w)
    if r < 0.8:
        return _expire(w)
    if producer.state == INITIALIZING and producer.init_pending and rng.random() < 0.5:
        op = ("i", rng.choice([7, 1234]), rng.choice([0, 0, SHORT_MAX - 1]))
        apply(producer, op)
        return op
    op = ("l",)
    apply(producer, op)
    return op


def random_case(rng: random.Random, release: ReleaseProfile | str | None = None, max_ops: int = 40) -> ClientCase:
    """A script the producer can live through (run on our reference as it is drawn, to know its queues)."""
    prof = release if isinstance(release, ReleaseProfile) else profile(release)
    retries = rng.choice([0, 1, 2, 5, 2**31 - 1])
    pid = rng.choice([0, 1, 1000, 2**63 - 1])
    epoch = rng.choice([0, 0, 3, SHORT_MAX - 2, SHORT_MAX - 1, SHORT_MAX])
    w = _World(rng, ClientProducer(retries, pid, epoch, prof))
    ops: list[Op] = []
    for _ in range(rng.randint(1, max_ops)):
        op = _step(w)
        if op is not None:
            ops.append(op)
    return ClientCase(retries, pid, epoch, tuple(ops))
