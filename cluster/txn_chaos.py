"""Transactions under faults on a real cluster: transactional producers, a read_committed reader, kill -9 of a
partition leader and of the transaction coordinator's broker, and the history checked in Jepsen's terms.

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
from dataclasses import asdict, dataclass, field
from typing import Any

from kcheck.cluster.local import ClusterError, LocalCluster
from kcheck.inputs.formats import InputError

ANOMALY_KINDS = ("aborted-read", "lost-write", "torn-transaction", "duplicate")
OUTCOMES = ("committed", "aborted", "unknown")
CLIENTS = ("java", "python")
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


@dataclass(frozen=True)
class TxnFault:
    t: float
    kind: str  # "kill" or "start"
    broker: int
    role: str  # "leader" (of partition 0), "coordinator" (of producer 0's transactional id) or "heal"


@dataclass
class TxnHistory:
    began: float = field(default_factory=time.monotonic)
    txns: list[Txn] = field(default_factory=list)
    reads: list[TxnRead] = field(default_factory=list)
    faults: list[TxnFault] = field(default_factory=list)
    final_complete: bool = False
    final_note: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def now(self) -> float:
        return round(time.monotonic() - self.began, 3)

    def add(self, event: Txn | TxnRead | TxnFault) -> None:
        with self._lock:
            if isinstance(event, Txn):
                self.txns.append(event)
            elif isinstance(event, TxnRead):
                self.reads.append(event)
            else:
                self.faults.append(event)


@dataclass
class TxnVerdict:
    anomalies: dict[str, list[str]]
    outcomes: dict[str, int]  # as the producers saw them
    resolved: dict[str, int]  # unknown outcomes resolved by the reads: committed / aborted
    final_complete: bool
    # transactions the client reported committed although one of their sends had failed or never resolved: the
    # client's own fault (a Java client's commitTransaction throws then), shown beside the anomaly it causes
    commit_after_failed_send: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.final_complete and not any(self.anomalies.values())


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


def check(txns: Iterable[Txn], reads: Iterable[TxnRead], final_complete: bool) -> TxnVerdict:
    txns, reads = list(txns), list(reads)
    by_key = {x.key: x for x in txns}
    read_keys = {k for r in reads if (k := transaction_of(r.value)) is not None}
    outcome, resolved = _resolve(txns, read_keys)
    anomalies: dict[str, list[str]] = {k: [] for k in ANOMALY_KINDS}
    at: dict[str, set[tuple[int, int]]] = defaultdict(set)
    for r in reads:
        at[r.value].add((r.partition, r.offset))
        k = transaction_of(r.value)
        x = by_key.get(k) if k is not None else None
        if x is not None and x.outcome == "aborted":  # definite: no EndTxn(commit) was ever sent
            where = "the final read" if r.final else f"{r.t:.1f}s"
            anomalies["aborted-read"].append(f"{r.value} at {r.partition}:{r.offset} ({where}) of an aborted "
                                             "transaction")
    for value, places in sorted(at.items()):
        if len(places) > 1:  # a value names its partition: two places are two offsets
            shown = ", ".join(f"{p}:{o}" for p, o in sorted(places))
            anomalies["duplicate"].append(f"{value} read at {shown}")
    if final_complete:
        final = {r.value for r in reads if r.final}
        for x in txns:
            seen = sum(v in final for v in x.values)
            if outcome[x.key] == "committed" and seen < len(x.values):
                how = "committed" if x.outcome == "committed" else "read, so committed"
                anomalies["lost-write"].append(f"{len(x.values) - seen} of {len(x.values)} records of "
                                               f"{_name(x)} ({how}) missing from the final read")
            if 0 < seen < len(x.values):
                anomalies["torn-transaction"].append(f"the final read holds {seen} of {len(x.values)} records of "
                                                     f"{_name(x)} ({x.outcome})")
    outcomes = {o: sum(x.outcome == o for x in txns) for o in OUTCOMES}
    failed_sends = [_name(x) for x in txns if x.outcome == "committed" and any(":" not in st for st in x.sends)]
    return TxnVerdict(anomalies, outcomes, resolved, final_complete, failed_sends)


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
    kill_leader_at: float = 6.0  # kill -9 of partition 0's leader, then its start `down` s later
    kill_coordinator_at: float = 16.0  # kill -9 of the broker coordinating producer 0's transactional id
    down: float = 5.0
    client: str = "java"  # CLIENTS: the release's own Java client, or kafka-python


@dataclass
class TxnOutcome:
    version: str
    transaction_version: int | None  # the finalized transaction.version feature level; None when not finalized
    settings: TxnSettings
    history: TxnHistory
    verdict: TxnVerdict
    seconds: float
    errors: list[str]


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

        source = os.path.join(os.path.dirname(__file__), "java", "KcheckTxnProducer.java")
        cmd = [require_tool("java"), "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", self.classpath, source, self.bootstrap,
               self.s.topic, self.transactional_id(), str(self.index), str(self.s.partitions), str(self.s.records),
               str(self.s.abort_share), str(self.s.seed * 1000 + self.index)]
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


class TxnCampaign:
    def __init__(self, cluster: LocalCluster, settings: TxnSettings, say: Callable[[str], None] = print) -> None:
        self.cluster, self.s, self.say = cluster, settings, say
        self.h = TxnHistory()
        self.stop_producing, self.stop_reading = threading.Event(), threading.Event()
        self.errors: list[str] = []
        self.producers: list[_Producer | _JavaProducer] = []

    def bootstrap(self) -> str:
        return ",".join(self.cluster.address(b) for b in self.cluster.brokers if self.cluster.is_running(b))

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

    def create_topic(self) -> None:
        from kafka.admin import NewTopic

        from kcheck.cluster.admin import wait_for_states

        admin = self._admin()
        try:
            admin.create_topics([NewTopic(self.s.topic, self.s.partitions, 3,
                                          topic_configs={"min.insync.replicas": "2"})])
        finally:
            admin.close()
        wait_for_states(self.bootstrap(), self.s.topic, lambda st: len(st) == self.s.partitions and all(
            p.leader >= 0 and len(p.isr) == 3 for p in st.values()), 30)

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

    def _leader(self) -> int:
        from kcheck.cluster.admin import partition_states

        return partition_states(self.bootstrap(), self.s.topic)[0].leader

    def _coordinator(self) -> int:
        admin = self._admin()
        try:
            tid = self.producers[0].transactional_id()
            return int(admin.describe_transactions([tid])[tid].coordinator_id)
        finally:
            admin.close()

    def _kill(self, role: str, find: Callable[[], int]) -> None:
        from kafka.errors import KafkaError

        try:
            broker = find()
        except (KafkaError, KeyError, OSError, InputError) as e:
            self.errors.append(f"the {role} was not found: {type(e).__name__}")
            return
        if broker < 0 or not self.cluster.is_running(broker):
            self.errors.append(f"the {role} ({broker}) is not a running broker")
            return
        self.cluster.kill(broker)
        self.h.add(TxnFault(self.h.now(), "kill", broker, role))
        self.say(f"{self.h.now():7.1f}s  kill {broker} ({role})")
        self.stop_producing.wait(self.s.down)
        self.cluster.launch(broker)
        try:
            self.cluster.wait_ready(60, brokers=[broker])
        except ClusterError as e:  # the heal at the end waits for it again, and fails the campaign if it must
            self.errors.append(str(e))
        self.h.add(TxnFault(self.h.now(), "start", broker, role))
        self.say(f"{self.h.now():7.1f}s  start {broker}")

    def _faults(self) -> None:
        for at, role, find in ((self.s.kill_leader_at, "leader", self._leader),
                               (self.s.kill_coordinator_at, "coordinator", self._coordinator)):
            if self.stop_producing.wait(max(0.0, at - self.h.now())):
                return
            self._kill(role, find)

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

    def run(self) -> TxnOutcome:
        began = time.monotonic()
        self.create_topic()
        tv = self.transaction_version()
        boot = self.bootstrap()
        if self.s.client == "java":
            from kcheck.reference.kafka_jars import resolve_server

            cp = resolve_server(self.cluster.version).classpath
            self.producers = [_JavaProducer(i, boot, self.s, self.h, self.stop_producing, cp)
                              for i in range(self.s.producers)]
        else:
            self.producers = [_Producer(i, boot, self.s, self.h, self.stop_producing)
                              for i in range(self.s.producers)]
        reader = threading.Thread(target=self._read, name="txn-reader", daemon=True)
        injector = threading.Thread(target=self._faults, name="txn-faults", daemon=True)
        for th in (*(p.thread for p in self.producers), reader, injector):
            th.start()
        whole = False
        try:
            self.stop_producing.wait(self.s.duration)
            injector.join(180)  # both faults happen even when they outlast the duration: transactions go on meanwhile
            whole = True
        finally:  # also on Ctrl-C or an error: no producer (a Java child in its own session) outlives the campaign
            self.stop_producing.set()
            for p in self.producers:
                p.finish(30 if whole else 0)
        try:
            for b in self.cluster.brokers:  # heal: a fault cut short leaves its broker down
                if not self.cluster.is_running(b):
                    self.cluster.launch(b)
                    self.h.add(TxnFault(self.h.now(), "start", b, "heal"))
            self.cluster.wait_ready(60)
            self.final_read()
        finally:
            self.stop_reading.set()
            reader.join(10)
        verdict = check(self.h.txns, self.h.reads, self.h.final_complete)
        return TxnOutcome(self.cluster.version, tv, self.s, self.h, verdict, round(time.monotonic() - began, 1),
                          self.errors)


def _offsets(m: dict[Any, int]) -> str:
    return ",".join(f"{tp.partition}:{o}" for tp, o in sorted(m.items(), key=lambda kv: kv[0].partition))


def run_campaign(version: str, settings: TxnSettings, say: Callable[[str], None] = print,
                 logs: str | None = None) -> TxnOutcome:
    """A 3-broker cluster of `version` (the chaos campaign's broker settings), one campaign, the cluster stopped;
    with `logs`, every node's server.log copied into that folder first (as `<node>.log`)."""
    import shutil

    from kcheck.cluster.chaos import CAMPAIGN_BROKER_CONFIG

    with LocalCluster(version, brokers=3, config=CAMPAIGN_BROKER_CONFIG) as cluster:
        cluster.start()
        try:
            return TxnCampaign(cluster, settings, say).run()
        finally:
            if logs is not None:
                os.makedirs(logs, exist_ok=True)
                for n in (*cluster.controllers, *cluster.brokers):
                    with contextlib.suppress(OSError):
                        shutil.copyfile(cluster.log_file(n), os.path.join(logs, f"{n}.log"))


def history_json(o: TxnOutcome) -> str:
    """The campaign's history and verdict as JSON (for reading a finding again; no schema promised)."""
    h = o.history
    return json.dumps({"release": o.version, "transaction_version": o.transaction_version,
                       "settings": asdict(o.settings), "seconds": o.seconds, "errors": o.errors,
                       "txns": [asdict(x) for x in h.txns], "reads": [asdict(r) for r in h.reads],
                       "faults": [asdict(f) for f in h.faults], "final_complete": h.final_complete,
                       "final_note": h.final_note, "anomalies": o.verdict.anomalies,
                       "outcomes": o.verdict.outcomes, "resolved": o.verdict.resolved,
                       "commit_after_failed_send": o.verdict.commit_after_failed_send}, indent=1)


def side_by_side(outcomes: Iterable[TxnOutcome]) -> list[list[str]]:
    """Rows of a table, a column per campaign: release, transaction version, outcomes, anomalies by kind."""
    outs = list(outcomes)
    rows = [["release", *(o.version for o in outs)],
            ["client", *(o.settings.client for o in outs)],
            ["transaction.version", *("none" if o.transaction_version is None else str(o.transaction_version)
                                     for o in outs)],
            ["seconds", *(f"{o.seconds:.0f}" for o in outs)],
            ["faults", *(" ".join(f"{f.kind}:{f.broker}({f.role})" for f in o.history.faults if f.kind == "kill")
                         for o in outs)]]
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
