"""The differential for the transaction coordinator's state machine: `txn_metadata.TxnMetadata` against each release's
real TransactionMetadata.

Request word TXNMETA, answered on the broker-side bridge (`KafkaBridge(server=True)`) by
`reference/harness/KcheckTxnMetadata.java`: the real class (Scala in kafka_2.13 up to 4.1, Java in
kafka-transaction-coordinator from 4.2) built with a case's fields, then its ops in order. Every op is one compared
input: the transit a prepare returned (every field), Left's error, or the exception's class and message; then every
field of the metadata after it (pending state and the failed-fence flag included).

    TXNMETA pid prev next epoch last timeout state parts start update tv fenceFailed op...   (grammar in the handler)

`random_case` draws a metadata (consistent with its state, or any fields at all: the class takes what the
transaction log holds) and walks it: each next op is drawn from what the coordinator would do in the state our
reference (as the release compared) is in, with arguments at the edges (epochs at -1, 0, Short.MAX_VALUE - 1 and
Short.MAX_VALUE, expected epochs that match the current, the last or neither, negative producer ids, TV 0 to 2,
timestamps going back), completions of a prepared transit as it is or with one field changed, appends that fail
(the pending state cleared), failed fence writes, and markers written to partitions in or out of the transaction.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from kcheck.reference import txn_metadata as tm
from kcheck.reference.kafka_bridge import KafkaBridge, compare_drawn, ok_fields, step_answers
from kcheck.reference.releases import ReleaseProfile, profile

Op = tuple[str | int | None, ...]
# ('f',) ('i', timeout, expected|None, ts) ('r', pid, timeout, ts, record) ('a', parts, ts, tv)
# ('e', 'c'|'a', tv, nextPid, ts, noPartitionAdded) ('c', ts) ('d',) ('k', field|None, value) ('x', p) ('u',) ('h',)
_FIELDS = {"p": "producer_id", "q": "prev_producer_id", "n": "next_producer_id", "e": "epoch", "l": "last_epoch",
           "t": "timeout_ms", "s": "state", "x": "partitions", "b": "start", "u": "update", "v": "tv"}


@dataclass(frozen=True)
class TxnCase:
    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    epoch: int
    last_epoch: int
    timeout_ms: int
    state: int
    partitions: tuple[int, ...]
    start: int
    update: int
    tv: int
    failed_fence: bool
    ops: tuple[Op, ...]


def _parts(ps: Sequence[int] | set[int], sep: str = ",") -> str:
    return sep.join(map(str, sorted(ps))) or "~"


def _encode_op(op: Op) -> str:
    kind = str(op[0])
    if kind == "i":
        return f"i{op[1]}:{'-' if op[2] is None else op[2]}:{op[3]}"
    if kind == "a":
        return f"a{op[1]}:{op[2]}:{op[3]}"
    if kind == "k":
        return "k-" if op[1] is None else f"k{op[1]}:{op[2]}"
    return kind + ":".join(str(a) for a in op[1:])


def encode_case(case: TxnCase) -> str:
    c = case
    return " ".join(["TXNMETA", str(c.producer_id), str(c.prev_producer_id), str(c.next_producer_id), str(c.epoch),
                     str(c.last_epoch), str(c.timeout_ms), str(c.state), _parts(c.partitions), str(c.start),
                     str(c.update), str(c.tv), str(int(c.failed_fence)), *map(_encode_op, c.ops)])


parse_answers = ok_fields  # one answer per compared op (the bench runner reads this name)


def kafka_answers(bridge: KafkaBridge, cases: Sequence[TxnCase]) -> list[list[str]]:
    return step_answers(bridge, "TXNMETA", "TransactionMetadata", encode_case, cases)


# ---------------------------------------------------------------- our side, in the handler's tokens

def new_metadata(case: TxnCase, release: ReleaseProfile) -> tm.TxnMetadata:
    c = case
    return tm.TxnMetadata(release, c.producer_id, c.prev_producer_id, c.next_producer_id, c.epoch, c.last_epoch,
                          c.timeout_ms, c.state, c.partitions, c.start, c.update, c.tv, c.failed_fence)


def _transit_text(t: tm.Transit, tv2: bool) -> str:
    nxt, tv = (str(t.next_producer_id), str(t.tv)) if tv2 else ("-", "-")
    return (f"T{t.producer_id},{t.prev_producer_id},{nxt},{t.epoch},{t.last_epoch},{t.timeout_ms},{t.state},"
            f"{_parts(t.partitions, '.')},{t.start},{t.update},{tv}")


def state_text(m: tm.TxnMetadata) -> str:
    tv2 = m.release.txn_tv2_transitions
    nxt, tv = (str(m.next_producer_id), str(m.tv)) if tv2 else ("-", "-")
    pending = "-" if m.pending is None else str(m.pending)
    return (f"{m.producer_id},{m.prev_producer_id},{nxt},{m.epoch},{m.last_epoch},{m.timeout_ms},{m.state},"
            f"{pending},{_parts(m.partitions, '.')},{m.start},{m.update},{tv},{int(m.has_failed_epoch_fence)}")


def _changed(m: tm.TxnMetadata, t: tm.Transit, op: Op) -> tm.Transit:
    """The transit 'k' completes: the last one, or a copy with one field changed (none a release lacks)."""
    if op[1] is None:
        return t
    field, value = _FIELDS[str(op[1])], str(op[2])
    if field in ("next_producer_id", "tv") and not m.release.txn_tv2_transitions:
        return tm.changed(t, "update", t.update)  # a new transit, nothing changed
    if field == "partitions":
        return tm.changed(t, field, {int(p) for p in value.split(".")} if value != "~" else set())
    return tm.changed(t, field, int(value))


def _prepare(m: tm.TxnMetadata, op: Op) -> tm.Transit | tm.Left:
    kind = op[0]
    if kind == "f":
        return m.prepare_fence_producer_epoch()
    if kind == "i":
        return m.prepare_increment_producer_epoch(int(op[1]), None if op[2] is None else int(op[2]),  # type: ignore
                                                  int(op[3]))  # type: ignore[arg-type]
    if kind == "r":
        return m.prepare_producer_id_rotation(int(op[1]), int(op[2]), int(op[3]), bool(op[4]))  # type: ignore
    if kind == "a":
        added = [] if op[1] == "~" else [int(p) for p in str(op[1]).split(",")]
        return m.prepare_add_partitions(added, int(op[2]), int(op[3]))  # type: ignore[arg-type]
    if kind == "e":
        state = tm.PREPARE_COMMIT if op[1] == "c" else tm.PREPARE_ABORT
        return m.prepare_abort_or_commit(state, int(op[2]), int(op[3]), int(op[4]), bool(op[5]))  # type: ignore
    if kind == "c":
        return m.prepare_complete(int(op[1]))  # type: ignore[arg-type]
    return m.prepare_dead()


def apply(m: tm.TxnMetadata, op: Op, last: list[tm.Transit]) -> str:
    """One op on our reference: its RESULT token (`last` holds the last transit a prepare returned)."""
    kind = op[0]
    try:
        if kind == "k":
            if not last:
                return "?"  # no prepare has returned a transit yet (the handler's answer)
            m.complete_transition_to(_changed(m, last[0], op))
        elif kind == "x":
            m.remove_partition(int(op[1]))  # type: ignore[arg-type]
        elif kind == "u":
            m.append_failed()
        elif kind == "h":
            m.has_failed_epoch_fence = True
        else:
            out = _prepare(m, op)
            if isinstance(out, tm.Left):
                return "L" + out.error
            last[:] = [out]
            return _transit_text(out, m.release.txn_tv2_transitions)
        return "-"
    except tm.JavaThrow as e:
        message = e.message.replace("%", "%25").replace(" ", "%20").replace("/", "%2F")
        return f"!{e.simple_name}:{message}"


def reference_answers(case: TxnCase, release: ReleaseProfile | str | None = None) -> list[str]:
    """Our answer to each op, in the handler's tokens."""
    prof = release if isinstance(release, ReleaseProfile) else profile(release)
    m = new_metadata(case, prof)
    last: list[tm.Transit] = []
    return [f"{apply(m, op, last)}/{state_text(m)}" for op in case.ops]


# ---------------------------------------------------------------- random inputs

def _long(x: int) -> int:
    """Java long arithmetic's wrap (the harness parses what a long can hold)."""
    return (x + 2**63) % 2**64 - 2**63


def _int(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


_EPOCHS = (-1, 0, 0, 1, 5, tm.SHORT_MAX - 2, tm.SHORT_MAX - 1, tm.SHORT_MAX)
_PIDS = (0, 1, 1000, 1001, 2**63 - 1)
_TIMEOUTS = (1, 60000, 2**31 - 1)


def _metadata_fields(rng: random.Random) -> dict[str, object]:
    """A metadata as the transaction log may hold it: mostly consistent with its state, sometimes anything."""
    state = rng.choice([tm.EMPTY, tm.EMPTY, tm.ONGOING, tm.ONGOING, tm.PREPARE_COMMIT, tm.PREPARE_ABORT,
                        tm.COMPLETE_COMMIT, tm.COMPLETE_ABORT, tm.DEAD, tm.PREPARE_EPOCH_FENCE])
    epoch = rng.choice(_EPOCHS)
    pid = rng.choice(_PIDS)
    open_txn = state in (tm.ONGOING, tm.PREPARE_COMMIT, tm.PREPARE_ABORT, tm.PREPARE_EPOCH_FENCE)
    parts = tuple(sorted(rng.sample(range(6), rng.randint(1, 3)))) if open_txn or rng.random() < 0.1 else ()
    update = rng.choice([0, 100, 1000])
    return dict(producer_id=pid, prev_producer_id=rng.choice([-1, pid, pid - 1 if pid else 7]),
                next_producer_id=rng.choice([-1, -1, -1, _long(pid + 1)]),
                epoch=epoch, last_epoch=rng.choice([-1, epoch, tm.short(epoch - 1)]), timeout_ms=rng.choice(_TIMEOUTS),
                state=state, partitions=parts,
                start=rng.choice([update - 10, update]) if open_txn or rng.random() < 0.2 else -1, update=update,
                tv=rng.choice([0, 1, 2, 2]), failed_fence=rng.random() < 0.1)


class _Walk:
    """Draws ops from what the coordinator does in the state our reference is in."""

    def __init__(self, rng: random.Random, m: tm.TxnMetadata) -> None:
        self.rng, self.m = rng, m
        self.clock = m.update
        self.last: list[tm.Transit] = []

    def now(self) -> int:
        self.clock += self.rng.choice([0, 1, 1, 7])
        return self.clock if self.rng.random() > 0.05 else self.rng.choice([-1, 0, self.clock - 50])

    def tv(self) -> int:
        return self.rng.choice([0, 1, 2, 2, self.m.tv, self.m.tv])

    def parts(self) -> str:
        return ",".join(map(str, sorted(self.rng.sample(range(6), self.rng.randint(1, 2)))))

    def complete(self) -> Op:
        rng, t = self.rng, self.last[0]
        if rng.random() < 0.8:
            return ("k", None, None)
        field = rng.choice(list(_FIELDS))
        d = rng.choice([-1, 1])
        values: dict[str, int | str] = {"p": _long(t.producer_id + d), "q": _long(t.prev_producer_id + d),
                         "n": rng.choice([-1, _long(t.producer_id + 1)]), "e": tm.short(t.epoch + d),
                         "l": tm.short(t.last_epoch + d), "t": _int(t.timeout_ms + d), "s": rng.randrange(8),
                         "x": _parts(set(t.partitions) ^ {rng.randrange(6)}, "."), "b": rng.choice([-1, t.start + 1]),
                         "u": t.update + d, "v": rng.randrange(3)}
        value = values[field]
        return ("k", field, value)

    def _prepare_op(self) -> Op:
        rng, m = self.rng, self.m
        r = rng.random()
        if r < 0.2:
            return ("a", self.parts(), self.now(), self.tv())
        if r < 0.4:
            nxt = -1 if rng.random() < 0.7 else _long(m.producer_id + 1)
            return ("e", rng.choice("ca"), self.tv(), nxt, self.now(), int(rng.random() < 0.2))
        if r < 0.5:
            return ("c", self.now())
        if r < 0.65:
            expected = rng.choice([None, m.epoch, m.epoch, m.last_epoch, tm.short(m.epoch - 1), 9])
            return ("i", rng.choice(_TIMEOUTS + (m.timeout_ms,) * 3), expected, self.now())
        if r < 0.75:
            pid = rng.choice([_long(m.producer_id + 1), 5000, -1])
            return ("r", pid, rng.choice((m.timeout_ms, 60000)), self.now(), rng.randrange(2))
        if r < 0.9:
            return ("f",)
        return ("d",)

    def step(self) -> Op:
        rng, m = self.rng, self.m
        r = rng.random()
        if m.pending is not None and self.last and r < 0.7:
            op = self.complete()
        elif r < 0.1 and m.state in (tm.PREPARE_COMMIT, tm.PREPARE_ABORT) and m.partitions:
            op = ("x", rng.choice(sorted(m.partitions)))
        elif r < 0.13:
            op = ("x", rng.randrange(6))
        elif r < 0.2:
            op = ("u",)
        elif r < 0.22:
            op = ("h",)
        else:
            op = self._prepare_op()
        apply(m, op, self.last)
        return op


def random_case(rng: random.Random, release: ReleaseProfile | str | None = None, max_ops: int = 24) -> TxnCase:
    """A metadata and a walk of up to `max_ops` ops through it, guided by our reference as `release`."""
    prof = release if isinstance(release, ReleaseProfile) else profile(release)
    fields = _metadata_fields(rng)
    case = TxnCase(**fields, ops=())  # type: ignore[arg-type]
    walk = _Walk(rng, new_metadata(case, prof))
    ops = tuple(walk.step() for _ in range(rng.randint(1, max_ops)))
    return TxnCase(**fields, ops=ops)  # type: ignore[arg-type]


def compare_random(bridge: KafkaBridge, rng: random.Random, steps: int) -> tuple[int, int, str]:
    """Random scripts of about `steps` ops through the release's TransactionMetadata and ours (a broker-side bridge):
    (ops compared, ops that differ, the shortest differing script with its first differing op's answers)."""
    prof = profile(bridge.version)
    return compare_drawn(lambda: random_case(rng, prof), steps, lambda cases: kafka_answers(bridge, cases),
                         lambda case: reference_answers(case, prof), encode_case, "op")
