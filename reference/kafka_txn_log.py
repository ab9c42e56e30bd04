"""The differential of `transaction_index.TxnLog` against a real UnifiedLog (Java in kafka-storage from 4.1, Scala in
kafka_2.13 before): the last stable offset, the transaction indexes and what a read_committed fetch returns.

Request word TXNLOG (`reference/harness/KcheckTxnLogs.java`, registered by `KcheckTxnLog.java` on the bridge and by
`KcheckTxnLogScala.java` on the broker-side bridge, which 4.0 needs: `broker_side`): the scripts of
`kafka_transaction_index` (`random_case`), each fetch step sent as `fSTART`, read through `UnifiedLog.read(START,
Integer.MAX_VALUE, TXN_COMMITTED, true)`, so the bound is Kafka's own: the last stable offset, and the end of the
segment read for the aborted transactions. After every step both sides give the verdict (an append's first offset, a
duplicate's, or the exception's class), the high watermark, UnifiedLog's first unstable and last stable offsets, the log
start and end and every segment's transaction index. TXNIDX (`kafka_transaction_index`) compares the same steps on every
release against Kafka's ProducerStateManager and TransactionIndex with UnifiedLog's steps done in the harness; this one
has UnifiedLog do them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from kcheck.reference.kafka_bridge import KafkaBridge, ok_fields
from kcheck.reference.kafka_transaction_index import Op, TxnIndexCase, format_aborted
from kcheck.reference.kafka_transaction_index import random_case as _random_case
from kcheck.reference.producer_state import ProducerStateError
from kcheck.reference.releases import ReleaseProfile, profile
from kcheck.reference.transaction_index import TxnLog

parse_answers = ok_fields


def random_case(rng: random.Random, release: ReleaseProfile | str | None = None) -> TxnIndexCase:
    """`kafka_transaction_index.random_case`, its fetches drawn as reads (a read may move the high watermark)."""
    return _random_case(rng, release, read=True)


def encode_case(case: TxnIndexCase) -> str:
    ops = (str(op[0]) + ":".join(str(int(a)) for a in (op[1:2] if op[0] == "f" else op[1:])) for op in case.ops)
    return " ".join(["TXNLOG", str(case.expiration_ms), str(case.clock_ms), *ops])


def _step(log: TxnLog, op: Op) -> str:
    kind, args = op[0], [int(a) for a in op[1:]]
    if kind == "a":
        v = log.append_data(args[0], args[1], args[2], args[3], bool(args[4]), args[5])
    elif kind == "m":
        v = log.append_marker(args[0], args[1], args[2], args[4], args[5], bool(args[3]))
    elif kind == "f":
        try:
            found = log.read_committed(args[0])
        except ProducerStateError as e:
            return f"E{e.java_name}"
        return "F-" if found is None else "F" + (";".join(f"{p},{f}" for p, f in found) or "~")
    else:
        try:
            _other_step(log, kind, args)
        except ProducerStateError as e:
            return f"E{e.java_name}"
        return "-"
    return f"E{v[1]}" if v[0] == "E" else f"A{v[1]}"  # a duplicate answers its first offset too


def _other_step(log: TxnLog, kind: str | int, args: list[int]) -> None:
    steps = {"c": lambda: log.set_clock(args[0]), "x": log.expire, "r": log.roll,
             "d": lambda: log.delete_segments(args[0]), "s": lambda: log.increment_log_start(args[0]),
             "t": lambda: log.truncate(args[0]), "h": lambda: log.update_high_watermark(args[0])}
    steps[str(kind)]()


def _state(log: TxnLog) -> str:
    fuo = "~" if log.first_unstable is None else str(log.first_unstable)
    head = f"{log.hw}:{fuo}:{log.last_stable_offset}:{log.log_start}:{log.log_end}"
    return head + "/" + "|".join(f"{base}={format_aborted(log.indexes[base])}" for base, _ in log.segments)


def reference_answers(case: TxnIndexCase, release: ReleaseProfile | str | None = None) -> list[str]:
    prof = release if isinstance(release, ReleaseProfile) else profile(release)
    log = TxnLog(case.expiration_ms, case.clock_ms, prof)
    return [f"{_step(log, op)}/{_state(log)}" for op in case.ops]


def broker_side(version: str) -> bool:
    """Whether the release's UnifiedLog is only on the broker-side bridge (4.0: Scala, in the broker's kafka_2.13)."""
    return version.startswith("4.0.")


def kafka_answers(bridge: KafkaBridge, cases: Sequence[TxnIndexCase]) -> list[list[str]]:
    bridge.require("TXNLOG", "the transaction index on a UnifiedLog")
    return [parse_answers(line) for line in bridge.roundtrip([encode_case(c) for c in cases])]
