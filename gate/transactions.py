"""`kafka-transactions.sh` output judged (kcheck.inputs.transactions reads it): hanging transactions, transactions
past their timeout, transactions stuck before their markers, and open transactions no coordinator knows.

What Kafka does, in its sources (apache/kafka):
  * a transaction's state at its coordinator (KIP-98), `core/src/main/scala/kafka/coordinator/transaction/` (3.9;
    moving to the `transaction-coordinator` module in 4.x): `TransactionMetadata.scala`; the coordinator aborts an
    Ongoing transaction once it is older than its timeout, checked every
    `transaction.abort.timed.out.transaction.cleanup.interval.ms` (10 s by default, `TransactionStateManagerConfig`;
    `TransactionStateManager.timedOutTransactions`, `TransactionCoordinator.abortTimedOutTransactions`);
  * PrepareCommit / PrepareAbort last until every partition of the transaction has its marker
    (`TransactionMarkerChannelManager.scala`): a partition without a leader holds them there;
  * a hanging transaction (KIP-664) is an open transaction on a partition (the producer state's
    CurrentTransactionStartOffset) that no coordinator will complete: its producer id is no transactional id's,
    or the id's transaction is not Ongoing/Prepare* on that partition; `TransactionsCommand`'s find-hanging
    computes it, `abort --topic --partition --start-offset` writes the abort marker (KIP-664's `WriteTxnMarkers`
    from the admin client); KIP-890 (3.6, on by default with `transaction.partition.verification.enable`) has the
    leader ask the coordinator before it takes a transactional write, so new ones should not happen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kcheck.inputs.transactions import HEADERS, Paste, Table

OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")
CLEANUP_INTERVAL_MS = 10_000  # transaction.abort.timed.out.transaction.cleanup.interval.ms's default
ABORT = ("kafka-transactions.sh --bootstrap-server BROKER abort --topic {topic} --partition {partition} "
         "--start-offset {offset}")


@dataclass(frozen=True)
class Finding:
    check: str  # transactions.hanging, transactions.timed-out, transactions.stuck-prepare, transactions.unknown-open
    hard: bool
    place: str  # transactional id, topic-partition and producer id, as known
    message: str
    where: str  # file:line of the row
    fix: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"check": self.check, "severity": "hard" if self.hard else "soft", "place": self.place,
                "message": self.message, "row": self.where, **({"fix": self.fix} if self.fix else {})}


@dataclass
class Verdict:
    counts: dict[str, int]  # rows per subcommand
    transactions: list[dict[str, object]]  # one per transactional id (list/describe rows merged)
    open_on_partitions: list[dict[str, object]]  # describe-producers rows with an open transaction
    findings: list[Finding] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    cannot: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(f.hard for f in self.findings)


def _rows(paste: Paste, kind: str) -> list[tuple[Table, int, dict[str, str]]]:
    return [(t, n, dict(zip(HEADERS[kind], cells, strict=True)))
            for t in paste.tables if t.kind == kind for n, cells in t.rows]


def _hanging(paste: Paste, v: Verdict) -> None:
    for t, n, r in _rows(paste, "find-hanging"):
        tp = f"{r['Topic']}-{r['Partition']}"
        v.findings.append(Finding(
            "transactions.hanging", True, f"{tp} producer {r['ProducerId']}",
            f"a hanging transaction (KIP-664): producer {r['ProducerId']} (epoch {r['ProducerEpoch']}) has had a "
            f"transaction open on {tp} from offset {r['StartOffset']} for {r['Duration(min)']} min that no "
            "coordinator will complete; consumers with isolation.level=read_committed stop at offset "
            f"{r['StartOffset']} (the last stable offset) and the log cannot be cleaned or compacted past it",
            f"{t.source}:{n}",
            "abort it: " + ABORT.format(topic=r["Topic"], partition=r["Partition"], offset=r["StartOffset"])))


def _described(paste: Paste, v: Verdict) -> None:
    for t, n, r in _rows(paste, "describe"):
        tid, state = r["TransactionalId"], r["TransactionState"]
        place = f"transactional id {tid} producer {r['ProducerId']}"
        duration, timeout = r["TransactionDurationMs"], int(r["TransactionTimeoutMs"])
        late = duration != "None" and int(duration) > timeout
        if state == "Ongoing" and late:
            hard = int(duration) > timeout + CLEANUP_INTERVAL_MS
            v.findings.append(Finding(
                "transactions.timed-out", hard, place,
                f"Ongoing for {duration} ms, longer than its TransactionTimeoutMs {timeout}: its coordinator (broker "
                f"{r['CoordinatorId']}) aborts a transaction past its timeout at its next check, every "
                "transaction.abort.timed.out.transaction.cleanup.interval.ms (10000 ms by default); "
                + ("this one is past that too: is the coordinator's check slowed or configured longer?" if hard else
                   "still within one interval, so not yet a fault") + f" (partitions: {r['TopicPartitions'] or '-'})",
                f"{t.source}:{n}"))
        elif state in ("PrepareCommit", "PrepareAbort"):
            v.findings.append(Finding(
                "transactions.stuck-prepare", late, place,
                f"{state}: its coordinator (broker {r['CoordinatorId']}) has decided to "
                f"{'commit' if state == 'PrepareCommit' else 'abort'} and has not written the markers to "
                f"{r['TopicPartitions'] or 'its partitions'} yet"
                + (f", {duration} ms after it began (past its timeout of {timeout} ms): is one of those partitions "
                   "offline (no leader) or its leader unreachable?" if late else
                   ": normally a moment; if describe shows it again, is one of those partitions offline?"),
                f"{t.source}:{n}"))


def _known(paste: Paste) -> dict[str, list[tuple[str, str, set[str] | None]]]:
    """producer id -> (transactional id, state, its partitions or None when only `list` showed it)."""
    by_pid: dict[str, list[tuple[str, str, set[str] | None]]] = {}
    described = set()
    for _, _, r in _rows(paste, "describe"):
        described.add(r["TransactionalId"])
        parts = set(r["TopicPartitions"].split(",")) if r["TopicPartitions"] else set()
        by_pid.setdefault(r["ProducerId"], []).append((r["TransactionalId"], r["TransactionState"], parts))
    for _, _, r in _rows(paste, "list"):
        if r["TransactionalId"] not in described:
            by_pid.setdefault(r["ProducerId"], []).append((r["TransactionalId"], r["TransactionState"], None))
    return by_pid


def _cross_check(paste: Paste, v: Verdict) -> None:
    """find-hanging's reasoning on describe-producers beside list/describe: an open transaction on a partition
    whose producer id no coordinator has an open transaction for (on that partition)."""
    have_list = any(t.kind == "list" for t in paste.tables)
    by_pid = _known(paste)
    for t, n, r in _rows(paste, "describe-producers"):
        start = r["CurrentTransactionStartOffset"]
        if start == "None":
            continue
        tp, pid = t.partition or "?", r["ProducerId"]
        topic, _, partition = tp.rpartition("-")
        known = by_pid.get(pid, [])
        covering = [tid for tid, state, parts in known if state in OPEN_STATES and (parts is None or tp in parts)]
        if covering or any(f.place == f"{tp} producer {pid}" for f in v.findings):  # fine, or find-hanging's row
            continue
        if not known and not have_list:
            v.cannot.append(f"{tp}: producer {pid}'s open transaction (from offset {start}): no list or describe of "
                            "its transactional id was given")
            continue
        said = ("no transactional id has this producer id in the list" if not known else
                "; ".join(f"transactional id {tid} is {state}" + ("" if parts is None else
                                                                   f" on {','.join(sorted(parts))}" if parts else
                                                                   " with no partition")
                          for tid, state, parts in known))
        v.findings.append(Finding(
            "transactions.unknown-open", True, f"{tp} producer {pid}",
            f"producer {pid} (epoch {r['ProducerEpoch']}) has a transaction open on {tp} from offset {start}, and "
            f"{said}: no coordinator will write its marker, so it hangs (what find-hanging reports once it is older "
            "than --max-transaction-timeout; true if the outputs were taken together)",
            f"{t.source}:{n}", "abort it: " + ABORT.format(topic=topic, partition=partition, offset=start)))


def _epoch_notes(paste: Paste, v: Verdict) -> None:
    described = {r["ProducerId"]: r for _, _, r in _rows(paste, "describe")}
    for t, _, r in _rows(paste, "describe-producers"):
        d = described.get(r["ProducerId"])
        if d is not None and int(r["ProducerEpoch"]) < int(d["ProducerEpoch"]):
            v.notes.append(f"{t.partition}: producer {r['ProducerId']} last wrote with epoch {r['ProducerEpoch']}; "
                           f"transactional id {d['TransactionalId']} is now at epoch {d['ProducerEpoch']}: a newer "
                           "instance fenced the one that wrote it, or an abort bumped the epoch (KIP-98, KIP-890)")


def verify(paste: Paste) -> Verdict:
    counts = {kind: sum(len(t.rows) for t in paste.tables if t.kind == kind) for kind in HEADERS}
    merged: dict[str, dict[str, object]] = {}
    for _, _, r in _rows(paste, "list") + _rows(paste, "describe"):
        merged.setdefault(r["TransactionalId"], {}).update(r)
    opens: list[dict[str, object]] = [{"partition": t.partition, **r} for t, _, r in _rows(paste, "describe-producers")
             if r["CurrentTransactionStartOffset"] != "None"]
    v = Verdict(counts, list(merged.values()), opens)
    kinds = {t.kind for t in paste.tables}
    if "find-hanging" in kinds:
        v.checked.append("transactions.hanging")
        _hanging(paste, v)
    if "describe" in kinds:
        v.checked += ["transactions.timed-out", "transactions.stuck-prepare"]
        _described(paste, v)
    elif "list" in kinds:
        v.cannot.append("how long the listed transactions have been open (only describe prints their durations and "
                        "timeouts)")
    if "describe-producers" in kinds and kinds & {"list", "describe"}:
        v.checked.append("transactions.unknown-open")
        _cross_check(paste, v)
        _epoch_notes(paste, v)
    elif "describe-producers" in kinds:
        v.cannot.append("whether the partitions' open transactions are their coordinators' (give list or describe "
                        "output too)")
    for _, _, r in _rows(paste, "list"):
        if r["TransactionState"] in ("PrepareCommit", "PrepareAbort"):
            v.notes.append(f"transactional id {r['TransactionalId']} is {r['TransactionState']} in the list: "
                           "describe it to see for how long and which partitions still wait for markers")
    return v
