"""The differential for the last stable offset and the aborted-transaction index: `transaction_index.TxnLog` against
Kafka's ProducerStateManager and TransactionIndex.

Request word TXNIDX (handler `reference/harness/KcheckProducerState.java`, beside PSTATE), on every release: one
script of steps on a fresh partition whose high watermark moves on its own, each answered with its verdict and, after
it, the high watermark, the producer state's first unstable and first undecided offsets, and every segment's
aborted-transaction index (each entry's last stable offset from `ProducerStateManager.lastStableOffset`); a fetch step
answers the aborted transactions LocalLog's walk collects up to a given upper bound. UnifiedLog's own first unstable
and last stable offsets and a whole read_committed read are compared by `kafka_txn_log` (TXNLOG) on a real
UnifiedLog, on every release too.

    TXNIDX expirationMs clockMs op...     (the handler's comment has the ops and the answer's grammar)

`random_case` draws scripts of several producers with overlapping transactions (committed and aborted, markers of
every transaction version, fenced and stale ones), plain and idempotent batches between them, high-watermark moves
(backwards, past the log end), rolls, segment deletion and log-start moves below the high watermark, truncation
above and below it, and fetches from every offset with upper bounds at the last stable offset, the high watermark,
the next segment's base and the log end.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

from kcheck.reference.kafka_bridge import KafkaBridge, ok_fields
from kcheck.reference.kafka_producer_state import Op
from kcheck.reference.producer_state import INT_MAX, SHORT_MAX, ProducerStateError, Verdict
from kcheck.reference.releases import ReleaseProfile, profile
from kcheck.reference.transaction_index import AbortedTxn, TxnLog


@dataclass(frozen=True)
class TxnIndexCase:
    expiration_ms: int
    clock_ms: int
    ops: tuple[Op, ...]


def encode_case(case: TxnIndexCase) -> str:
    ops = (str(op[0]) + ":".join(str(int(a)) for a in op[1:]) for op in case.ops)
    return " ".join(["TXNIDX", str(case.expiration_ms), str(case.clock_ms), *ops])


parse_answers = ok_fields  # one answer per compared step (the bench runner reads this name)


# ---------------------------------------------------------------- our side


def format_aborted(txns: Sequence[AbortedTxn]) -> str:
    return ";".join(f"{t.producer_id},{t.first_offset},{t.last_offset},{t.last_stable_offset}" for t in txns) or "~"


def _verdict(log: TxnLog, op: Op, read: bool = False) -> Verdict | str | None:
    """One step on our log; with `read`, a fetch step is UnifiedLog.read's (TXNLOG) rather than the walk's."""
    kind, args = op[0], [int(a) for a in op[1:]]
    if kind == "a":
        pid, epoch, seq, count, txn, ts = args
        return log.append_data(pid, epoch, seq, count, bool(txn), ts)
    if kind == "m":
        pid, epoch, coord, commit, tv, ts = args
        return log.append_marker(pid, epoch, coord, tv, ts, bool(commit))
    if kind == "f" and read:  # only its effect on the log matters while drawing
        with contextlib.suppress(ProducerStateError):
            log.read_committed(args[0])
        return None
    if kind == "f":
        return "F" + format_aborted(log.collect_aborted(args[0], args[1]))
    if kind == "v":
        return log.verify(args[0], args[1], args[2], bool(args[3]))
    steps = {"c": lambda: log.set_clock(args[0]), "x": log.expire, "r": log.roll,
             "d": lambda: log.delete_segments(args[0]), "s": lambda: log.increment_log_start(args[0]),
             "t": lambda: log.truncate(args[0]), "h": lambda: log.update_high_watermark(args[0])}
    steps[str(kind)]()
    return None


def _format_verdict(v: Verdict | str | None) -> str:
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    kind, *rest = v
    return f"E{rest[0]}" if kind == "E" else str(kind) + ":".join(map(str, rest))


def format_state(log: TxnLog) -> str:
    psm = log.psm
    head = f"{psm.last_map_offset}:{log.log_start}:{log.log_end}:{log.hw}"
    first = min([*psm.ongoing, *psm.unreplicated], default=None)
    undecided = min(psm.ongoing, default=None)
    producer = ":".join("~" if x is None else str(x) for x in (first, undecided))
    index = "|".join(f"{base}={format_aborted(log.indexes[base])}" for base, _ in log.segments)
    return f"{head}/{producer}/{index}"


def reference_answers(case: TxnIndexCase, release: ReleaseProfile | str | None = None) -> list[str]:
    """Our answer to each step, in the handler's tokens."""
    prof = release if isinstance(release, ReleaseProfile) else profile(release)
    log = TxnLog(case.expiration_ms, case.clock_ms, prof)
    return [f"{_format_verdict(_verdict(log, op))}/{format_state(log)}" for op in case.ops]


def kafka_answers(bridge: KafkaBridge, cases: Sequence[TxnIndexCase]) -> list[list[str]]:
    bridge.require("TXNIDX", "the transaction index")
    return [parse_answers(line) for line in bridge.roundtrip([encode_case(c) for c in cases])]


# ---------------------------------------------------------------- random inputs

_PIDS = (0, 1, 7, 42, 2**63 - 1)


class _Producer:
    """A transactional client's view of one producer id: epoch, next sequence, whether a transaction is open."""

    def __init__(self, rng: random.Random, pid: int) -> None:
        self.pid = pid
        self.epoch = rng.choice([0, 0, 1, 5, SHORT_MAX - 1])
        self.seq = rng.choice([0, 0, 7, INT_MAX - 2])
        self.open = False
        self.tv = rng.choice([0, 1, 2])

    def op(self, rng: random.Random, now: int) -> Op:
        r = rng.random()
        if (self.open and r < 0.3) or r < 0.05:  # a marker; now and then a stale, fenced or retried one
            epoch = self.epoch
            if self.tv == 2 and rng.random() < 0.8:
                self.epoch = epoch = min(SHORT_MAX, epoch + 1)  # TV2: every marker bumps the epoch
            if rng.random() < 0.1:
                epoch = rng.choice([max(0, epoch - 1), min(SHORT_MAX, epoch + 1)])
            self.open = False
            self.seq = 0 if epoch != self.epoch else self.seq
            return ("m", self.pid, epoch, rng.choice([0, 0, 0, 1]), int(rng.random() < 0.5), self.tv, now)
        count = rng.choice([1, 1, 2, 3, 10])
        txn = self.open or rng.random() < 0.6
        seq = self.seq if rng.random() < 0.95 else (self.seq + 1) % (INT_MAX + 1)
        self.open = txn
        self.seq = (seq + count) % (INT_MAX + 1)
        return ("a", self.pid, self.epoch, seq, count, int(txn), now)


def _bounds(log: TxnLog) -> list[int]:
    return sorted({b.base_offset for _, bs in log.segments for b in bs} | {s for s, _ in log.segments})


def _fetch(rng: random.Random, log: TxnLog) -> Op:
    indexed = [o for txns in log.indexes.values() for t in txns for o in (t.first_offset, t.last_offset)]
    start = rng.choice([log.log_start, rng.randint(log.log_start, max(log.log_start, log.log_end)),
                        *_bounds(log)[-3:], *indexed[-4:]])
    nxt = next((b for b, _ in log.segments if b > start), log.log_end)
    upper = rng.choice([log.last_stable_offset, log.hw, nxt, log.log_end, start + rng.randint(0, 5)])
    return ("f", start, upper)


def _log_op(rng: random.Random, log: TxnLog) -> Op | None:
    """A step on the log that it admits now: the high watermark, a roll, a deletion or log-start move at or below
    the high watermark, a truncation to a batch boundary at or above the first segment, a fetch."""
    r = rng.random()
    if r < 0.3:
        return ("h", rng.choice([log.log_end, log.log_end, log.hw + 1, rng.randint(0, log.log_end + 2)]))
    if r < 0.45:
        return ("r",) if log.segments[-1][1] else None
    if r < 0.55:
        deletable = [i for i, (b, _) in enumerate(log.segments[1:], 1) if b <= log.hw]
        return ("d", rng.choice(deletable)) if deletable else None
    if r < 0.62:
        return ("s", rng.randint(log.log_start + 1, log.hw)) if log.hw > log.log_start else None
    if r < 0.72:
        targets = [o for o in _bounds(log) if log.segments[0][0] <= o < log.log_end]
        return ("t", rng.choice(targets)) if targets else None
    return _fetch(rng, log)


def random_case(rng: random.Random, release: ReleaseProfile | str | None = None, max_ops: int = 40,
                read: bool = False) -> TxnIndexCase:
    """A script the log admits at every step (run on our reference as it is drawn, to know the log's shape); with
    `read`, for TXNLOG, whose fetches are reads that may move the high watermark."""
    prof = release if isinstance(release, ReleaseProfile) else profile(release)
    expiration = rng.choice([1000, 86_400_000])
    start = now = rng.choice([0, 1_700_000_000_000])
    log = TxnLog(expiration, now, prof)
    producers = [_Producer(rng, pid) for pid in rng.sample(_PIDS, rng.randint(1, 4))]
    ops: list[Op] = []
    for _ in range(rng.randint(1, max_ops)):
        r = rng.random()
        op: Op | None
        if r < 0.55:
            op = rng.choice(producers).op(rng, now)
        elif r < 0.6:
            op = ("a", -1, -1, -1, rng.choice([1, 3]), 0, now)
        elif r < 0.63:
            now += rng.choice([1, expiration])
            op = ("c", now)
        elif r < 0.65:
            op = ("x",)
        else:
            op = _log_op(rng, log)
        if op is not None:
            _verdict(log, op, read)
            ops.append(op)
    return TxnIndexCase(expiration, start, tuple(ops))
