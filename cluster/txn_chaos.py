"""Transactions under faults on a real cluster: transactional producers, a read_committed reader, the faults of
kcheck.cluster.chaos aimed at the roles that matter for transactions, and the history checked in Jepsen's terms.

The promises are the transactions model's (model/transactions, docs/models/transactions.md), observed from outside:
a read_committed reader never returns a record of an aborted transaction (`UnifiedLog` fetches up to the last stable
offset and the consumer drops aborted batches by the fetch response's aborted-transaction list, KIP-98), and a
committed transaction's records are all there, on every partition it wrote, once every marker is written
(`TransactionMarkerChannelManager`). The same campaign runs on a release with the version 1 protocol (3.9.1: the
client's AddPartitionsToTxn, one epoch per producer session; it finalizes no `transaction.version` feature) and on
one with version 2 (4.x: KIP-890 part 2, the partition added by the leader and the epoch bumped by every EndTxn; the
finalized `transaction.version` level is read with ApiVersions' finalized features).

Each producer (`client`: the release's own Java KafkaProducer, java/KcheckTxnProducer.java run as a child process,
or kafka-python's KafkaProducer with a `transactional_id`, which speaks only the version 1 protocol: EndTxn up to v3)
runs transactions one after another: each writes `records` values to every partition of the topic,
`txn-<producer>-<session>-<number>-<partition>-<index>`, then commits, or aborts (a seeded choice). Its outcome:
`committed` when commitTransaction returned, `aborted` when no EndTxn(commit) was ever sent for it (an abort, or a
send failure followed by an abort, or a client dropped before committing: a new session's InitProducerId aborts it,
`TransactionCoordinator.handleInitProducerId`), `unknown` when commitTransaction failed or never returned. After an
error the client is dropped and a new session (a new client, the same transactional id, so InitProducerId fences the
old one) goes on.

The faults are kcheck.cluster.chaos's, injected by its `Campaign` (the same schedule steps, targets, ends, heal and
abort), with one role of its own, `coordinator`: the leader of the `__transaction_state` partition that holds producer
0's transactional id (`TransactionStateManager.partitionFor`: `Utils.abs(transactionalId.hashCode) % partitions`),
which is that id's transaction coordinator. A kill, pause, restart, shutdown or (with --network) partition may hit
it; `reassign coordinator` rotates that partition's replicas so that another in-sync replica comes first and elects
it (the coordinator moves: its successor loads the partition's transactions, `TransactionStateManager.loadTransactions
ForTxnTopicPartition`), `elect-preferred coordinator` moves it back to the preferred replica after a failover. The
`leader` role is partition 0's leader of the campaign's topic, and with a quorum of 3 the active controller may be
hit. Without a schedule the campaign runs its first one: partition 0's leader killed, then the coordinator's broker,
each started `down` s later (`fixed_schedule`). Every fault is in the history as chaos writes it (`Fault` and
`Quorum` events) and in the verdict with its window (`fault_windows`: from its start to its end); each anomaly names
the faults whose window overlaps its transaction.

The checks (`check`), named as Jepsen's Kafka workload (jepsen.tests.kafka) names them where it has a name:

    aborted-read      a read_committed read returned a record of an aborted transaction (Jepsen's G1a)
    lost-write        a committed transaction with a record missing from the final read
    torn-transaction  the final read holds some but not all records of a transaction (a non-atomic commit or abort)
    duplicate         one record read at two different offsets

An unknown outcome is resolved by the reads: committed if any read returned one of its records, aborted otherwise;
a resolved outcome is then checked as a definite one, except that a transaction resolved aborted cannot be an
aborted read. Lost writes and torn transactions need a complete final read (every partition read up to an end that
is also its last stable offset: no transaction left open).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from kcheck.cluster.chaos import ENDS, Campaign, Settings, Step, quiet_clients
from kcheck.cluster.history import Fault, History
from kcheck.cluster.local import LocalCluster
from kcheck.runtime import interrupts
from kcheck.runtime.exit_codes import Exit

ANOMALY_KINDS = ("aborted-read", "lost-write", "torn-transaction", "duplicate")
OUTCOMES = ("committed", "aborted", "unknown")
CLIENTS = ("java", "python")
# The fault kinds a random schedule of the transactions campaign draws from by default (with --network the partition
# kinds too), and the ones it refuses: delete-records deletes committed records, which the final read must find.
TXN_FAULTS = ("kill", "pause", "restart", "shutdown", "elect-preferred", "reassign")
NOT_TXN_FAULTS = ("delete-records",)
TXN_STATE_TOPIC = "__transaction_state"
TRANSACTION_TIMEOUT_MS = 10_000  # an abandoned transaction is aborted by its coordinator within 10 s, not 60 s
REQUEST_TIMEOUT_MS = 5000


def value_of(producer: int, session: int, number: int, partition: int, index: int) -> str:
    return f"txn-{producer}-{session}-{number:05d}-{partition}-{index}"


def transaction_of(value: str) -> tuple[int, int, int] | None:
    """(producer, session, number) of a value `value_of` made, None for any other value."""
    parts = value.split("-")
    if len(parts) != 6 or parts[0] != "txn" or not all(p.isascii() and p.isdigit() for p in parts[1:]):
        return None
    return int(parts[1]), int(parts[2]), int(parts[3])


@dataclass(frozen=True)
class Txn:
    producer: int
    session: int
    number: int
    values: tuple[str, ...]
    intent: str  # "commit" or "abort"
    outcome: str  # OUTCOMES
    began: float
    ended: float
    error: str = ""
    sends: tuple[str, ...] = ()  # each value's send as the client left it: "p:offset", an error's name, "pending"

    @property
    def key(self) -> tuple[int, int, int]:
        return self.producer, self.session, self.number


@dataclass(frozen=True)
class TxnRead:
    t: float
    partition: int
    offset: int
    value: str
    final: bool = False


@dataclass
class TxnHistory:
    began: float = field(default_factory=time.monotonic)
    txns: list[Txn] = field(default_factory=list)
    reads: list[TxnRead] = field(default_factory=list)
    final_complete: bool = False
    final_note: str = ""
    events: History = field(default_factory=lambda: History(began=0.0))  # the faults and quorum answers (chaos's)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.events.began = self.began  # one clock for transactions, reads and faults

    def now(self) -> float:
        return round(time.monotonic() - self.began, 3)

    def add(self, event: Txn | TxnRead) -> None:
        with self._lock:
            if isinstance(event, Txn):
                self.txns.append(event)
            else:
                self.reads.append(event)

    @property
    def faults(self) -> list[Fault]:
        return self.events.of(Fault)


@dataclass
class TxnVerdict:
    anomalies: dict[str, list[str]]
    outcomes: dict[str, int]  # as the producers saw them
    resolved: dict[str, int]  # unknown outcomes resolved by the reads: committed / aborted
    final_complete: bool
    # transactions the client reported committed although one of their sends had failed or never resolved: the
    # client's own fault (a Java client's commitTransaction throws then), shown beside the anomaly it causes
    commit_after_failed_send: list[str] = field(default_factory=list)
    healed: bool = True  # the cluster healed after the last fault (every replica back in the ISR)
    faults: list[dict[str, Any]] = field(default_factory=list)  # fault_windows

    @property
    def ok(self) -> bool:
        return self.final_complete and not any(self.anomalies.values())

    @property
    def status(self) -> str:
        """As the ordinary campaign's: an anomaly first, else incomplete when the cluster did not heal or the final
        read could not read to the end (lost writes and torn transactions cannot be judged then)."""
        if any(self.anomalies.values()):
            return "anomalies"
        return "clean" if self.healed and self.final_complete else "incomplete"

    @property
    def exit_code(self) -> Exit:
        return {"clean": Exit.OK, "anomalies": Exit.FAILED, "incomplete": Exit.INCOMPLETE}[self.status]

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "anomalies": self.anomalies, "outcomes": self.outcomes,
                "resolved": self.resolved, "final_complete": self.final_complete, "healed": self.healed,
                "commit_after_failed_send": self.commit_after_failed_send, "faults": self.faults}


def fault_windows(faults: Iterable[Fault]) -> list[dict[str, Any]]:
    """Each fault injected (phase `start`) with its window: from its start to its end, the first later `end` event
    of its ending kind (chaos's ENDS; a restart's own end) on one of its brokers, or None when it never ended. An
    election or a reassignment lasts an instant."""
    fs = sorted(faults, key=lambda f: f.t)
    out = []
    for i, f in enumerate(fs):
        if f.phase != "start":
            continue
        want = "restart" if f.kind == "restart" else ENDS.get(f.kind)
        end: float | None = f.t
        if want is not None:
            end = next((g.t for g in fs[i + 1:] if g.phase == "end" and g.kind == want
                        and (not f.brokers or not g.brokers or set(f.brokers) & set(g.brokers))), None)
        out.append({"step": f.step, "kind": f.kind, "role": f.role, "brokers": list(f.brokers), "start": f.t,
                    "end": end, "note": f.note})
    return out


def _during(began: float, ended: float, windows: Iterable[dict[str, Any]]) -> str:
    """The faults whose window overlaps began..ended, for an anomaly's text."""
    hit = [w for w in windows if w["start"] <= ended and (w["end"] is None or w["end"] >= began)]
    return "".join(f"; during {_window_text(w)}" for w in hit)


def _window_text(w: dict[str, Any]) -> str:
    who = f" {','.join(map(str, w['brokers']))}" if w["brokers"] else ""
    role = f" ({w['role']})" if w["role"] else ""
    end = "never ended" if w["end"] is None else f"{w['end']:.1f}s"
    return f"{w['kind']}{who}{role} {w['start']:.1f}s-{end}"


def _resolve(txns: Iterable[Txn], read_keys: set[tuple[int, int, int]]) -> tuple[dict[tuple[int, int, int], str],
                                                                                  dict[str, int]]:
    """Every transaction's outcome, an unknown one resolved by whether any read returned one of its records."""
    outcome: dict[tuple[int, int, int], str] = {}
    resolved = {"committed": 0, "aborted": 0}
    for x in txns:
        o = x.outcome
        if o == "unknown":
            o = "committed" if x.key in read_keys else "aborted"
            resolved[o] += 1
        outcome[x.key] = o
    return outcome, resolved


def check(txns: Iterable[Txn], reads: Iterable[TxnRead], final_complete: bool, faults: Iterable[Fault] = (),
          healed: bool = True) -> TxnVerdict:
    txns, reads = list(txns), list(reads)
    windows = fault_windows(faults)
    read_keys = {k for r in reads if (k := transaction_of(r.value)) is not None}
    outcome, resolved = _resolve(txns, read_keys)
    anomalies: dict[str, list[str]] = {k: [] for k in ANOMALY_KINDS}
    anomalies["aborted-read"] = _aborted_reads(txns, reads, windows)
    anomalies["duplicate"] = _duplicates(reads)
    if final_complete:
        _final_anomalies(txns, reads, outcome, windows, anomalies)
    outcomes = {o: sum(x.outcome == o for x in txns) for o in OUTCOMES}
    failed_sends = [_name(x) for x in txns if x.outcome == "committed" and any(":" not in st for st in x.sends)]
    return TxnVerdict(anomalies, outcomes, resolved, final_complete, failed_sends, healed, windows)


def _aborted_reads(txns: list[Txn], reads: list[TxnRead], windows: list[dict[str, Any]]) -> list[str]:
    by_key = {x.key: x for x in txns}
    out = []
    for r in reads:
        k = transaction_of(r.value)
        x = by_key.get(k) if k is not None else None
        if x is not None and x.outcome == "aborted":  # definite: no EndTxn(commit) was ever sent
            where = "the final read" if r.final else f"{r.t:.1f}s"
            out.append(f"{r.value} at {r.partition}:{r.offset} ({where}) of an aborted transaction"
                       + _during(x.began, r.t, windows))
    return out


def _duplicates(reads: list[TxnRead]) -> list[str]:
    at: dict[str, set[tuple[int, int]]] = defaultdict(set)
    for r in reads:
        at[r.value].add((r.partition, r.offset))
    # a value names its partition: two places are two offsets
    return [f"{value} read at {', '.join(f'{p}:{o}' for p, o in sorted(places))}"
            for value, places in sorted(at.items()) if len(places) > 1]


def _final_anomalies(txns: list[Txn], reads: list[TxnRead], outcome: dict[tuple[int, int, int], str],
                     windows: list[dict[str, Any]], anomalies: dict[str, list[str]]) -> None:
    """Lost writes and torn transactions, judged on a complete final read."""
    final = {r.value for r in reads if r.final}
    for x in txns:
        seen = sum(v in final for v in x.values)
        during = _during(x.began, x.ended, windows)
        if outcome[x.key] == "committed" and seen < len(x.values):
            how = "committed" if x.outcome == "committed" else "read, so committed"
            anomalies["lost-write"].append(f"{len(x.values) - seen} of {len(x.values)} records of "
                                           f"{_name(x)} ({how}) missing from the final read{during}")
        if 0 < seen < len(x.values):
            anomalies["torn-transaction"].append(f"the final read holds {seen} of {len(x.values)} records of "
                                                 f"{_name(x)} ({x.outcome}){during}")


def _name(x: Txn) -> str:
    sends = f"; sends {' '.join(x.sends)}" if x.sends else ""
    return (f"transaction {x.number} of producer {x.producer} session {x.session} ({x.began:.1f}-{x.ended:.1f}s"
            f"{sends})")


def _send_state(future: Any) -> str:
    if future.succeeded():
        return f"{future.value.partition}:{future.value.offset}"
    return type(future.exception).__name__ if future.failed() else "pending"


# ---------------------------------------------------------------------------------------------------------
# the campaign


@dataclass
class TxnSettings:
    topic: str = "kcheck-txn"
    duration: float = 30.0
    seed: int = 0
    producers: int = 2
    records: int = 3  # per partition and transaction
    partitions: int = 2
    abort_share: float = 0.3
    # without a schedule (`fixed_schedule`): kill -9 of partition 0's leader, then of the coordinator's broker, each
    # started `down` s later
    kill_leader_at: float = 6.0
    kill_coordinator_at: float = 16.0
    down: float = 5.0
    client: str = "java"  # CLIENTS: the release's own Java client, or kafka-python
    replication_factor: int = 3
    min_insync_replicas: int = 2
    unclean: bool = False
    heal_timeout: float = 90.0
    faults: tuple[str, ...] = ()  # the kinds a random schedule drew from (empty: a schedule file or the fixed one)
    max_concurrent: int = 1
    controllers: int = 1
    network: bool = False


def fixed_schedule(s: TxnSettings) -> list[Step]:
    """The campaign's first schedule: partition 0's leader killed, then the coordinator's broker, each started again
    `down` s later."""
    return [Step(s.kill_leader_at, "kill", "leader"), Step(s.kill_leader_at + s.down, "start", ends=0),
            Step(s.kill_coordinator_at, "kill", "coordinator"), Step(s.kill_coordinator_at + s.down, "start", ends=2)]


def random_txn_schedule(s: TxnSettings, kinds: Iterable[str]) -> list[Step]:
    """A random schedule (chaos's `random_schedule`) aimed at the transactions' roles: a broker fault hits the
    coordinator's broker or partition 0's leader (with a quorum of 3 or more also a controller), an election or a
    reassignment moves the coordinator."""
    from kcheck.cluster.chaos import random_schedule

    return random_schedule(s.seed, s.duration, tuple(kinds), max_concurrent=s.max_concurrent,
                           controllers=s.controllers, roles=("coordinator", "leader"), move_roles=("coordinator",))


@dataclass
class TxnOutcome:
    version: str
    transaction_version: int | None  # the finalized transaction.version feature level; None when not finalized
    settings: TxnSettings
    history: TxnHistory
    verdict: TxnVerdict
    seconds: float
    errors: list[str]
    schedule: list[Step] = field(default_factory=list)
    heal_seconds: float = 0.0
    cluster: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> Exit:
        return self.verdict.exit_code

    def document(self) -> str:
        """The campaign as JSON, in the shape of `txn-history.schema.json` (its name and version in the document)."""
        h = self.history
        doc = {"schema": SCHEMA_NAME, "schema_version": SCHEMA_VERSION, "release": self.version,
               "transaction_version": self.transaction_version,
               "settings": {**asdict(self.settings), "faults": list(self.settings.faults)},
               "verdict": self.verdict.to_json(), "schedule": [asdict(st) for st in self.schedule],
               "seconds": self.seconds, "heal_seconds": round(self.heal_seconds, 2), "cluster": self.cluster,
               "errors": self.errors, "final_note": h.final_note,
               "txns": [asdict(x) for x in h.txns], "reads": [asdict(r) for r in h.reads],
               "events": h.events.to_json()}
        return json.dumps(doc, indent=1) + "\n"


# The JSON document's format (`txn-history.schema.json`, shipped beside this module, as chaos's history.schema.json)
SCHEMA_NAME = "kcheck-txn-history"
SCHEMA_VERSION = 2  # 2: a fault's shaped links and shape (slow-links, lossy-links)
SCHEMA_FILE = "txn-history.schema.json"


def txn_history_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the document `TxnOutcome.document` writes."""
    from importlib.resources import files

    return json.loads(files("kcheck.cluster").joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))


def java_seed(seed: int, index: int) -> int:
    """The Java driver's Random seed for producer `index`: seed * 1000 + index, wrapped to a Java long."""
    return (seed * 1000 + index + 2**63) % 2**64 - 2**63


class _Producer:
    """One transactional id's producer on its own thread; a new session (client) after every error."""

    def __init__(self, index: int, bootstrap: str, s: TxnSettings, h: TxnHistory, stop: threading.Event) -> None:
        self.index, self.bootstrap, self.s, self.h, self.stop = index, bootstrap, s, h, stop
        self.rng = random.Random(f"{s.seed}-{index}")
        self.session = -1
        self.client: Any = None
        self.current: tuple[int, tuple[str, ...], str, float] | None = None  # number, values, intent, began
        self.futures: list[Any] = []
        self.thread = threading.Thread(target=self._run, name=f"txn-producer-{index}", daemon=True)

    def transactional_id(self) -> str:
        return f"{self.s.topic}-tx-{self.index}"

    def _connect(self) -> bool:
        from kafka import KafkaProducer
        from kafka.errors import KafkaError

        while not self.stop.is_set():
            self._drop()
            self.session += 1
            try:
                self.client = KafkaProducer(
                    bootstrap_servers=self.bootstrap.split(","), transactional_id=self.transactional_id(),
                    transaction_timeout_ms=TRANSACTION_TIMEOUT_MS, request_timeout_ms=REQUEST_TIMEOUT_MS,
                    max_block_ms=10_000, retry_backoff_ms=100, linger_ms=2,
                    client_id=f"kcheck-txn-{self.index}-{self.session}")
                self.client.init_transactions()
                return True
            except KafkaError:
                self.stop.wait(0.5)
        return False

    def _drop(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close(timeout=0)

    def _run(self) -> None:
        number = 0
        if not self._connect():
            return
        while not self.stop.is_set():
            intent = "abort" if self.rng.random() < self.s.abort_share else "commit"
            values = tuple(value_of(self.index, self.session, number, p, i)
                           for p in range(self.s.partitions) for i in range(self.s.records))
            self.current = (number, values, intent, self.h.now())
            outcome, error = self._transaction(values, intent)
            self._record(outcome, error)
            number += 1
            if error and not self._connect():
                return
        self._drop()

    def _record(self, outcome: str, error: str) -> None:
        if self.current is None:  # finish() recorded it already: the thread outlived its join
            return
        number, values, intent, began = self.current
        sends = tuple(_send_state(f) for f in self.futures)
        self.h.add(Txn(self.index, self.session, number, values, intent, outcome, began, self.h.now(), error, sends))
        self.current = None

    def _transaction(self, values: tuple[str, ...], intent: str) -> tuple[str, str]:
        from kafka.errors import KafkaError

        c, per = self.client, self.s.records
        committing = False
        self.futures = []
        try:
            c.begin_transaction()
            for n, v in enumerate(values):
                self.futures.append(c.send(self.s.topic, value=v.encode(), partition=n // per))
            if intent == "abort":
                c.abort_transaction()
                return "aborted", ""
            committing = True
            c.commit_transaction()
            return "committed", ""
        except KafkaError as e:
            error = type(e).__name__
            if not committing:  # no EndTxn(commit) was sent: aborted, by this client or the next session's init
                with contextlib.suppress(Exception):
                    c.abort_transaction()
                return "aborted", error
            return "unknown", error

    def finish(self, timeout_s: float) -> None:
        """Join; a transaction still under way is unknown if it meant to commit, otherwise aborted."""
        self.thread.join(timeout_s)
        if self.thread.is_alive() and self.current is not None:
            intent = self.current[2]
            self._record("unknown" if intent == "commit" else "aborted", "did not finish")
            with contextlib.suppress(Exception):
                self.client._sender.force_close()

    def abort(self) -> None:
        """An interrupt: stop at once (the thread is a daemon and ends with kcheck)."""
        self.stop.set()


class _JavaProducer:
    """java/KcheckTxnProducer.java on the release's own client as a child process, its JSON lines recorded as
    transactions. The Java client speaks transaction version 2 where the cluster finalized it (EndTxn v5: KIP-890
    part 2), which kafka-python 3.0 does not (EndTxn up to v3, its own AddPartitionsToTxn)."""

    def __init__(self, index: int, bootstrap: str, s: TxnSettings, h: TxnHistory, stop: threading.Event,
                 classpath: str) -> None:
        self.index, self.bootstrap, self.s, self.h, self.stop, self.classpath = index, bootstrap, s, h, stop, classpath
        self.proc: subprocess.Popen[str] | None = None
        self.current: tuple[int, int, str, float] | None = None  # session, number, intent, began
        self.stderr: list[str] = []
        self.thread = threading.Thread(target=self._run, name=f"txn-java-{index}", daemon=True)

    def transactional_id(self) -> str:
        return f"{self.s.topic}-tx-{self.index}"

    def _run(self) -> None:
        from kcheck.reference.kafka_jars import require_tool

        if self.stop.is_set():  # stopped (an interrupt) before it started
            return
        source = os.path.join(os.path.dirname(__file__), "java", "KcheckTxnProducer.java")
        cmd = [require_tool("java"), "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", self.classpath, source, self.bootstrap,
               self.s.topic, self.transactional_id(), str(self.index), str(self.s.partitions), str(self.s.records),
               str(self.s.abort_share), str(java_seed(self.s.seed, self.index))]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        threading.Thread(target=self._drain, daemon=True).start()
        threading.Thread(target=self._close_when_told, daemon=True).start()
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._line(line)

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr = [*self.stderr[-19:], line.rstrip()]

    def _close_when_told(self) -> None:
        self.stop.wait()
        assert self.proc is not None and self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # the driver ends its transaction under way, then exits

    def _line(self, line: str) -> None:
        try:
            doc = json.loads(line)
        except ValueError:
            return
        if doc.get("event") == "begin":
            self.current = (int(doc["session"]), int(doc["number"]), str(doc["intent"]), self.h.now())
        elif doc.get("event") == "end" and self.current is not None:
            self._record(str(doc["outcome"]), str(doc["error"]), tuple(str(x) for x in doc["sends"]))

    def _record(self, outcome: str, error: str, sends: tuple[str, ...] = ()) -> None:
        if self.current is None:
            return
        session, number, intent, began = self.current
        values = tuple(value_of(self.index, session, number, p, i)
                       for p in range(self.s.partitions) for i in range(self.s.records))
        self.h.add(Txn(self.index, session, number, values, intent, outcome, began, self.h.now(), error, sends))
        self.current = None

    def finish(self, timeout_s: float) -> None:
        self.thread.join(timeout_s)
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.thread.join(5)
        if self.current is not None:
            self._record("unknown" if self.current[2] == "commit" else "aborted", "did not finish")

    def abort(self) -> None:
        """An interrupt: the child killed now, not waited for."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.kill(self.proc.pid, signal.SIGKILL)


class TxnCampaign:
    """One campaign on `cluster` (started, or attached): `run()` returns the TxnOutcome, every broker left running.
    The faults are a chaos `Campaign`'s (`injector`), on the same topic, with the `coordinator` role added."""

    def __init__(self, cluster: LocalCluster, settings: TxnSettings, say: Callable[[str], None] = print,
                 schedule: Iterable[Step] | None = None) -> None:
        self.cluster, self.s, self.say = cluster, settings, say
        self.schedule = list(schedule) if schedule is not None else fixed_schedule(settings)
        self.h = TxnHistory()
        self.stop_producing, self.stop_reading = threading.Event(), threading.Event()
        self.errors: list[str] = []
        self.producers: list[_Producer | _JavaProducer] = []
        s = settings
        self.injector = Campaign(cluster, Settings(
            s.topic, s.partitions, s.replication_factor, s.min_insync_replicas, s.unclean, s.duration, 0.0, s.seed,
            s.faults, s.heal_timeout, (), s.max_concurrent, s.controllers, s.network), self.schedule, say)
        self.injector.history = self.h.events
        self.injector.roles["coordinator"] = self.coordinator_partition
        self._txn_partitions: int | None = None

    def bootstrap(self) -> str:
        return self.injector.live_bootstrap()

    def transactional_id(self, index: int) -> str:
        return f"{self.s.topic}-tx-{index}"

    def coordinator_partition(self) -> tuple[str, int]:
        """The __transaction_state partition of producer 0's transactional id (`TransactionStateManager.partitionFor`:
        `Utils.abs(hashCode) % transaction.state.log.num.partitions`); its leader is the id's coordinator."""
        from kcheck.cluster.admin import partition_states
        from kcheck.reference.java import string_hash_code

        if self._txn_partitions is None:
            self._txn_partitions = len(partition_states(self.bootstrap(), TXN_STATE_TOPIC, timeout_s=5.0))
        h = string_hash_code(self.transactional_id(0))
        return TXN_STATE_TOPIC, (0 if h == -(2**31) else abs(h)) % self._txn_partitions

    def _admin(self) -> Any:
        from kafka.admin import KafkaAdminClient

        return KafkaAdminClient(bootstrap_servers=self.bootstrap().split(","), request_timeout_ms=10_000,
                                client_id="kcheck-txn-admin")

    def transaction_version(self) -> int | None:
        admin = self._admin()
        try:
            # kafka-python 3.0 answers {feature: {"supported": (min, max), "finalized": (min, max)}}
            level = admin.describe_features().get("transaction.version", {}).get("finalized")
        finally:
            admin.close()
        return None if level is None else int(level[1])

    def _read(self) -> None:
        """A read_committed consumer of every partition from the start, for the whole campaign."""
        from kafka import KafkaConsumer, TopicPartition
        from kafka.errors import KafkaError

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap().split(","), isolation_level="read_committed",
                                 enable_auto_commit=False, auto_offset_reset="earliest",
                                 request_timeout_ms=15_000, client_id="kcheck-txn-reader")
        try:
            consumer.assign([TopicPartition(self.s.topic, p) for p in range(self.s.partitions)])
            while not self.stop_reading.is_set():
                try:
                    batch = consumer.poll(timeout_ms=300)
                except KafkaError:
                    time.sleep(0.2)
                    continue
                for tp, records in batch.items():
                    t = self.h.now()
                    for r in records:
                        self.h.add(TxnRead(t, tp.partition, r.offset, (r.value or b"").decode(errors="replace")))
        finally:
            with contextlib.suppress(Exception):
                consumer.close(autocommit=False)

    def final_read(self, timeout_s: float = 60.0) -> None:
        """Every partition from its start, read_committed, once its last stable offset reached its end (no open
        transaction: an abandoned one is aborted by its coordinator after TRANSACTION_TIMEOUT_MS)."""
        from kafka import KafkaConsumer, TopicPartition

        parts = [TopicPartition(self.s.topic, p) for p in range(self.s.partitions)]
        common = {"bootstrap_servers": self.bootstrap().split(","), "enable_auto_commit": False,
                  "auto_offset_reset": "earliest", "request_timeout_ms": 15_000}
        deadline = time.monotonic() + timeout_s
        plain = KafkaConsumer(client_id="kcheck-txn-ends", **common)
        consumer = KafkaConsumer(isolation_level="read_committed", client_id="kcheck-txn-final", **common)
        try:
            while True:
                ends, stable = plain.end_offsets(parts), consumer.end_offsets(parts)
                if ends == stable or time.monotonic() >= deadline:
                    break
                time.sleep(0.5)
            consumer.assign(parts)
            consumer.seek_to_beginning(*parts)
            while any(consumer.position(tp) < stable[tp] for tp in parts) and time.monotonic() < deadline:
                for tp, records in consumer.poll(timeout_ms=500).items():
                    t = self.h.now()
                    for r in records:
                        self.h.add(TxnRead(t, tp.partition, r.offset, (r.value or b"").decode(errors="replace"),
                                           final=True))
            done = all(consumer.position(tp) >= stable[tp] for tp in parts)
            self.h.final_complete = done and ends == stable
            if not self.h.final_complete:
                self.h.final_note = f"ends {_offsets(ends)}, last stable {_offsets(stable)}"
        finally:
            plain.close()
            consumer.close()

    def _start_producers(self) -> None:
        boot = self.bootstrap()
        if self.s.client == "java":
            from kcheck.reference.kafka_jars import resolve_server

            cp = resolve_server(self.cluster.version).classpath
            self.producers = [_JavaProducer(i, boot, self.s, self.h, self.stop_producing, cp)
                              for i in range(self.s.producers)]
        else:
            self.producers = [_Producer(i, boot, self.s, self.h, self.stop_producing)
                              for i in range(self.s.producers)]
        for p in self.producers:
            p.thread.start()

    def _await_first_transactions(self, timeout_s: float = 60.0) -> None:
        """Wait until every producer has begun a transaction (the Java client takes seconds to start; the coordinator
        role needs __transaction_state, created by the first FindCoordinator), then run the schedule from then on:
        its times and the duration shifted by as much."""
        from kcheck.cluster.admin import wait_until

        def begun() -> bool:
            interrupts.check()
            started = {x.producer for x in self.h.txns} | {p.index for p in self.producers if p.current is not None}
            return len(started) == len(self.producers)

        if not wait_until(begun, timeout_s, 0.1):
            self.errors.append(f"not every producer began a transaction within {timeout_s:.0f} s")
        shift = self.h.now()
        self.schedule = [replace(st, t=round(st.t + shift, 1)) for st in self.schedule]
        self.injector.schedule = self.schedule
        self.injector.s.duration += shift

    def run(self) -> TxnOutcome:
        """The campaign, healed and checked. On an interrupt it stops at once, neither healing nor reading: the
        caller runs `abort()`."""
        with quiet_clients():
            began = time.monotonic()
            inj = self.injector
            inj.running_before = {n for n in inj._nodes() if self.cluster.is_running(n)}
            inj.create_topic()
            tv = self.transaction_version()
            reader = threading.Thread(target=self._read, name="txn-reader", daemon=True)
            reader.start()
            self._start_producers()
            try:
                self._await_first_transactions()
                inj.follow_schedule()
            except BaseException as e:
                self.stop_producing.set()
                if not interrupts.by_interrupt(e):  # a failure: heal what the faults did
                    for p in self.producers:
                        p.abort()
                    inj.heal()
                raise
            self.stop_producing.set()  # no new transaction; the ones under way end once the cluster is healed
            heal_began = time.monotonic()
            healed = inj.heal()
            heal_seconds = time.monotonic() - heal_began
            for p in self.producers:
                p.finish(30)
            try:
                self.final_read()
            finally:
                self.stop_reading.set()
                reader.join(10)
            verdict = check(self.h.txns, self.h.reads, self.h.final_complete, self.h.faults, healed)
            return TxnOutcome(self.cluster.version, tv, self.s, self.h, verdict, round(time.monotonic() - began, 1),
                              [*self.errors, *inj.errors], self.schedule, heal_seconds)

    def abort(self, restart: bool) -> list[str]:
        """After an interrupt, at once: the producers and the reader stop (a Java child killed), and the injector
        undoes its faults as chaos's does (paused brokers resumed, cut links restored, with `restart` stopped brokers
        started). What it did, for the one line."""
        self.stop_producing.set()
        self.stop_reading.set()
        for p in self.producers:
            p.abort()
        return self.injector.abort(restart)


def _offsets(m: dict[Any, int]) -> str:
    return ",".join(f"{tp.partition}:{o}" for tp, o in sorted(m.items(), key=lambda kv: kv[0].partition))


def run_campaign(version: str, settings: TxnSettings, say: Callable[[str], None] = print,
                 logs: str | None = None, schedule: Iterable[Step] | None = None) -> TxnOutcome:
    """A cluster of `version` (3 brokers, `settings.controllers` controllers, the chaos campaign's broker settings),
    one campaign, the cluster stopped; with `logs`, every node's server.log copied into that folder first (as
    `<node>.log`)."""
    import shutil

    from kcheck.cluster.chaos import CAMPAIGN_BROKER_CONFIG

    with LocalCluster(version, brokers=3, config=CAMPAIGN_BROKER_CONFIG, controllers=settings.controllers,
                      network=settings.network) as cluster:  # started by `with`
        try:
            return TxnCampaign(cluster, settings, say, schedule).run()
        finally:
            if logs is not None:
                os.makedirs(logs, exist_ok=True)
                for n in (*cluster.controllers, *cluster.brokers):
                    with contextlib.suppress(OSError):
                        shutil.copyfile(cluster.log_file(n), os.path.join(logs, f"{n}.log"))


def print_txn_outcome(o: TxnOutcome, out: Any) -> None:
    """`kcheck chaos --producers transactional`'s report: the transactions' outcomes, the faults with their windows,
    the checks, the verdict."""
    from rich.markup import escape
    from rich.table import Table

    s, v = o.settings, o.verdict
    tv = "none finalized" if o.transaction_version is None else str(o.transaction_version)
    out.print(f"Transactions campaign on Kafka {o.version} (transaction.version {tv}), {s.client} client: topic "
              f"{escape(s.topic)}, {s.partitions} partition(s), RF {s.replication_factor}, min.insync.replicas "
              f"{s.min_insync_replicas}; {s.producers} producer(s); {o.seconds:.1f} s (heal {o.heal_seconds:.1f} s)")
    table = Table(title="Transactions", title_justify="left")
    for col in (*OUTCOMES, "unknown resolved committed", "unknown resolved aborted", "records read (final)"):
        table.add_column(col, justify="right")
    table.add_row(*(str(v.outcomes[k]) for k in OUTCOMES), str(v.resolved["committed"]), str(v.resolved["aborted"]),
                  str(sum(r.final for r in o.history.reads)))
    out.print(table)
    for error in o.errors:
        out.print(f"[bold red]error:[/] {escape(error)}")
    out.print("Faults: " + ("; ".join(escape(_window_text(w)) for w in v.faults) or "none"))
    skipped = [f for f in o.history.faults if f.phase in ("skipped", "failed")]
    if skipped:
        out.print("Skipped or failed: " + "; ".join(escape(f"{f.kind} {f.phase}: {f.note}") for f in skipped))
    checks = Table(title="Checks", title_justify="left")
    for col in ("check", "verdict", "anomalies", "first"):
        checks.add_column(col, overflow="fold")
    for k in ANOMALY_KINDS:
        found = v.anomalies[k]
        checks.add_row(k, "[bold red]FAIL[/]" if found else "ok", str(len(found)), escape(found[0]) if found else "")
    out.print(checks)
    if v.commit_after_failed_send:
        out.print(f"committed despite a failed send (the client's fault): {len(v.commit_after_failed_send)}; the "
                  f"first: {escape(v.commit_after_failed_send[0])}")
    verdicts = {"clean": "CLEAN: no anomaly",
                "anomalies": f"FAIL: {sum(len(x) for x in v.anomalies.values())} anomaly(ies)",
                "incomplete": "INCOMPLETE: " + ("the cluster did not heal within the timeout" if not v.healed else
                                                f"the final read could not read to the end ({o.history.final_note})")}
    out.print(verdicts[v.status])


def side_by_side(outcomes: Iterable[TxnOutcome]) -> list[list[str]]:
    """Rows of a table, a column per campaign: release, transaction version, outcomes, anomalies by kind."""
    outs = list(outcomes)
    rows = [["release", *(o.version for o in outs)],
            ["client", *(o.settings.client for o in outs)],
            ["transaction.version", *("none" if o.transaction_version is None else str(o.transaction_version)
                                     for o in outs)],
            ["seconds", *(f"{o.seconds:.0f}" for o in outs)],
            ["faults", *(" ".join(f"{w['kind']}:{','.join(map(str, w['brokers']))}({w['role'] or ''})"
                                  for w in o.verdict.faults) for o in outs)]]
    for k in OUTCOMES:
        rows.append([f"transactions {k}", *(str(o.verdict.outcomes[k]) for o in outs)])
    rows.append(["unknown resolved committed/aborted",
                 *(f"{o.verdict.resolved['committed']}/{o.verdict.resolved['aborted']}" for o in outs)])
    rows.append(["records read (final)", *(str(sum(r.final for r in o.history.reads)) for o in outs)])
    rows.append(["final read complete", *("yes" if o.verdict.final_complete else "NO" for o in outs)])
    rows.append(["committed despite a failed send", *(str(len(o.verdict.commit_after_failed_send)) for o in outs)])
    for k in ANOMALY_KINDS:
        rows.append([k, *(str(len(o.verdict.anomalies[k])) for o in outs)])
    return rows
