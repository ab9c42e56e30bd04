"""The differential for the idempotent producer's state: `producer_state.PartitionLog` against Kafka's classes.

Request word PSTATE (handler `reference/harness/KcheckProducerState.java`, kafka-storage of every release; 3.9's
rebuild through kafka_2.13): one script of steps on a fresh partition, each answered with its verdict and the state
after it, so every step is one compared input (the step function: state and step in, verdict and state out).

    PSTATE expirationMs clockMs op...     (the handler's comment has the ops and the answer's grammar)

`random_case` draws scripts that reach the edges: sequences at and across Integer.MAX_VALUE, epochs at
Short.MAX_VALUE and 0 (a batch with a producer id cannot carry epoch -1: Kafka's MemoryRecordsBuilder refuses it),
producer id Long.MAX_VALUE and -1 (a batch without one), retries of batches in and past the five cached, new epochs
at and off sequence 0, markers of every transaction version, verification entries, expiry at exactly
`producer.id.expiration.ms`, timestamps in the future and -1, rolls, segment deletion, the log start moved into a
batch, and truncation below snapshots and below the log start.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from kcheck.reference.kafka_bridge import KafkaBridge, ok_fields
from kcheck.reference.producer_state import INT_MAX, SHORT_MAX, PartitionLog, Verdict
from kcheck.reference.releases import ReleaseProfile, profile

Op = tuple[str | int, ...]  # ('a', pid, epoch, seq, count, txn, ts), ('m', pid, epoch, coord, commit, tv, ts), ...


@dataclass(frozen=True)
class ProducerStateCase:
    expiration_ms: int
    clock_ms: int
    ops: tuple[Op, ...]


def _encode_op(op: Op) -> str:
    kind, *args = op
    return str(kind) + ":".join(str(int(a)) for a in args)


def encode_case(case: ProducerStateCase) -> str:
    return " ".join(["PSTATE", str(case.expiration_ms), str(case.clock_ms), *map(_encode_op, case.ops)])


parse_answers = ok_fields  # one answer per compared step (the bench runner reads this name)


# ---------------------------------------------------------------- our side


def _verdict(log: PartitionLog, op: Op) -> Verdict | None:
    kind = op[0]
    if kind == "a":
        _, pid, epoch, seq, count, txn, ts = op
        return log.append_data(int(pid), int(epoch), int(seq), int(count), bool(txn), int(ts))
    if kind == "m":
        _, pid, epoch, coord, _commit, tv, ts = op
        return log.append_marker(int(pid), int(epoch), int(coord), int(tv), int(ts))
    if kind == "v":
        _, pid, seq, epoch, bump = op
        return log.verify(int(pid), int(seq), int(epoch), bool(bump))
    steps = {"c": lambda: log.set_clock(int(op[1])), "x": log.expire, "r": log.roll,
             "d": lambda: log.delete_segments(int(op[1])),
             "s": lambda: log.increment_log_start(int(op[1])),
             "t": lambda: log.truncate(int(op[1]))}
    steps[str(kind)]()
    return None


def _format_verdict(v: Verdict | None) -> str:
    if v is None:
        return "-"
    kind, *rest = v
    if kind == "E":
        return f"E{rest[0]}"
    return str(kind) + ":".join(map(str, rest))


def format_state(log: PartitionLog) -> str:
    psm = log.psm
    oldest, latest = psm.oldest_snapshot_offset(), psm.latest_snapshot_offset()
    head = ":".join(["~" if x is None else str(x)
                     for x in (psm.last_map_offset, oldest, latest, log.log_start, log.log_end)])
    producers = []
    for pid in sorted(psm.producers):
        e = psm.producers[pid]
        batches = "_".join(f"{b.last_seq}:{b.last_offset}:{b.offset_delta}:{b.timestamp}" for b in e.batches) or "~"
        txn = "~" if e.current_txn_first_offset is None else str(e.current_txn_first_offset)
        producers.append(f"{pid},{e.producer_epoch},{e.coordinator_epoch},{e.last_timestamp},{txn},{batches}")
    verification = ";".join(f"{pid},{v.lowest_sequence},{v.epoch}" for pid, v in sorted(psm.verification.items()))
    return f"{head}/{';'.join(producers) or '~'}/{verification or '~'}"


def reference_answers(case: ProducerStateCase, release: ReleaseProfile | str | None = None) -> list[str]:
    """Our answer to each step, in the handler's tokens."""
    prof = release if isinstance(release, ReleaseProfile) else profile(release)
    log = PartitionLog(case.expiration_ms, case.clock_ms, prof)
    return [f"{_format_verdict(_verdict(log, op))}/{format_state(log)}" for op in case.ops]


def kafka_answers(bridge: KafkaBridge, cases: Sequence[ProducerStateCase]) -> list[list[str]]:
    bridge.require("PSTATE", "producer state")
    return [parse_answers(line) for line in bridge.roundtrip([encode_case(c) for c in cases])]


# ---------------------------------------------------------------- random inputs

_PIDS = (0, 1, 42, 2**63 - 1)


class _Producer:
    """A client's view of one producer id: its epoch, next sequence and the batches it sent (to retry)."""

    def __init__(self, rng: random.Random, pid: int) -> None:
        self.pid = pid
        self.epoch = rng.choice([0, 0, 1, 5, SHORT_MAX - 1, SHORT_MAX])
        self.seq = rng.choice([0, 0, 0, 7, INT_MAX - 3, INT_MAX - 1, INT_MAX])
        self.sent: list[tuple[int, int, int]] = []  # epoch, base sequence, count

    def next_batch(self, rng: random.Random) -> tuple[int, int, int]:
        r = rng.random()
        if r < 0.2 and self.sent:  # a retry: the last few (cached) or an older one (evicted)
            return self.sent[-rng.randint(1, min(len(self.sent), 8))]
        count = rng.choice([1, 1, 2, 3, 5, 20])
        epoch, seq = self.epoch, self.seq
        if r < 0.27:  # a gap or a step back
            seq = (seq + rng.choice([-2, -1, 1, 2, 1000])) % (INT_MAX + 1)
        elif r < 0.33:  # a new epoch, normally from 0
            self.epoch = epoch = min(SHORT_MAX, epoch + 1) if rng.random() < 0.8 else max(0, epoch - 1)
            seq = 0 if rng.random() < 0.8 else rng.choice([1, 5, INT_MAX])
        elif r < 0.36:
            epoch = rng.choice([max(0, epoch - 1), 0, SHORT_MAX])
        batch = (epoch, seq, count)
        self.sent.append(batch)
        self.seq = (seq + count) % (INT_MAX + 1)
        return batch


def _timestamp(rng: random.Random, now: int, expiration: int) -> int:
    ts = rng.choice([now, now, now - rng.randint(0, 50), now + rng.randint(0, 50), now - expiration,
                     now - expiration + 1, -1, now + 10 * expiration])
    return max(ts, -1)  # a record's timestamp is -1 (none) or not negative


def _log_op(rng: random.Random, log: PartitionLog) -> Op | None:
    """A roll, a deletion, a log start move or a truncation that the log admits now (None if it admits none)."""
    r = rng.random()
    active_base, active = log.segments[-1]
    if r < 0.35:
        return ("r",) if active else None
    if r < 0.5:
        return ("d", rng.randint(1, len(log.segments) - 1)) if len(log.segments) > 1 else None
    if r < 0.7:
        return ("s", rng.randint(log.log_start + 1, log.log_end)) if log.log_end > log.log_start else None
    first = log.segments[0][0]
    bounds = sorted({b.base_offset for _, batches in log.segments for b in batches} | {s for s, _ in log.segments})
    targets = [o for o in bounds if first <= o < log.log_end]
    return ("t", rng.choice(targets)) if targets else None


def _producer_op(rng: random.Random, p: _Producer, now: int, expiration: int) -> Op:
    r = rng.random()
    ts = _timestamp(rng, now, expiration)
    if r < 0.1:
        epoch = rng.choice([p.epoch, p.epoch, p.epoch + 1, p.epoch - 1, SHORT_MAX])
        return ("m", p.pid, max(0, min(SHORT_MAX, epoch)), rng.choice([0, 0, 1, 3]), rng.randint(0, 1),
                rng.choice([0, 1, 2, 2]), ts)
    if r < 0.15:
        return ("v", p.pid, rng.choice([0, 0, p.seq, p.seq + 1, 3]) % (INT_MAX + 1),
                max(0, min(SHORT_MAX, p.epoch + rng.choice([0, 0, 1, -1]))), rng.randint(0, 1))
    epoch, seq, count = p.next_batch(rng)
    return ("a", p.pid, epoch, seq, count, int(rng.random() < 0.08), ts)


def random_case(rng: random.Random, release: ReleaseProfile | str | None = None, max_ops: int = 30
                ) -> ProducerStateCase:
    """A script the log admits at every step (run on our reference as it is drawn, to know the log's shape)."""
    prof = release if isinstance(release, ReleaseProfile) else profile(release)
    expiration = rng.choice([1, 50, 1000, 86_400_000, INT_MAX])
    start = now = rng.choice([0, 1000, 1_700_000_000_000])
    log = PartitionLog(expiration, now, prof)
    producers = [_Producer(rng, pid) for pid in rng.sample(_PIDS, rng.randint(1, 3))]
    ops: list[Op] = []
    for _ in range(rng.randint(1, max_ops)):
        r = rng.random()
        op: Op | None
        if r < 0.6:
            op = _producer_op(rng, rng.choice(producers), now, expiration)
        elif r < 0.63:
            op = ("a", -1, -1, -1, rng.choice([1, 3]), 0, now)
        elif r < 0.73:
            now += rng.choice([0, 1, expiration - 1, expiration, expiration + 1,
                               rng.randint(0, 2 * min(expiration, 10**6))])
            op = ("c", now)
        elif r < 0.8:
            op = ("x",)
        else:
            op = _log_op(rng, log)
        if op is not None:
            _verdict(log, op)
            ops.append(op)
    return ProducerStateCase(expiration, start, tuple(ops))
