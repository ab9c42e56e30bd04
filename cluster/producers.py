"""The producers of a fault campaign (`kcheck chaos --producers`), each writing its sends, acknowledgements and
failures into the campaign's history (kcheck.cluster.history).

Every value names its producer kind, session, partition and sequence (`plain-0-2-000123`, history.value_of);
a session is one producer instance, the scope of Kafka's idempotence (KIP-98). The kinds (history.PRODUCER_KINDS):

    plain            kafka-python, acks=all, not idempotent, max in flight 5 (today's acks=all producer)
    plain-1          the same with max in flight 1
    acks1            kafka-python, acks=1, not idempotent (today's acks=1 producer)
    idempotent       kafka-python, enable_idempotence, acks=all, max in flight 5
    idempotent-1     the same with max in flight 1
    java-idempotent  the release's own `org.apache.kafka.tools.VerifiableProducer` (tools/.../VerifiableProducer.java),
                     enable.idempotence=true, max.in.flight.requests.per.connection=5, acks=-1
    java-plain       the same with enable.idempotence=false

kafka-python producers send each value to an explicit partition (round robin). VerifiableProducer takes no
partition: it sends keys "0".."63" in turn (`--repeating-keys`), whose partition is the default partitioner's
(`BuiltInPartitioner.partitionForKey`: murmur2, kcheck.reference.partitioner), and values `<prefix>.<n>`
(`--value-prefix`), which the campaign translates to `java-idempotent-<session>-<partition>-<n>` wherever it reads
them. It prints one JSON line per outcome (`producer_send_success` with partition and offset,
`producer_send_error` with the exception's class), not its sends: the campaign records value n as sent when n or a
later value resolves, and, at the end, every value up to the count it reports (`tool_data`'s `sent`).

kafka-python 3.0's idempotent producer was seen to stop delivering, neither acknowledging nor failing, after a
paused leader resumed. A producer whose sends wait with none acknowledged or failed for `STALL_SECONDS` while the
cluster is healthy (every broker running, none paused, no fault for as long) is recorded as a client stall (a
finding about kafka-python, not about Kafka), abandoned, and started again as a new session.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from kcheck.cluster.history import (
    NOT_SENT,
    PRODUCER_KINDS,
    Ack,
    History,
    Send,
    SendFailure,
    Stall,
    value_of,
)
from kcheck.inputs.formats import InputError
from kcheck.reference.partitioner import partition_for_key

DEFAULT_PRODUCERS = ("plain", "acks1")
STALL_SECONDS = 10.0
JAVA_KEYS = 64  # VerifiableProducer's --repeating-keys: keys "0".."63"
VERIFIABLE_PRODUCER = "org.apache.kafka.tools.VerifiableProducer"
# Client settings on a campaign's time scale, the same for both clients.
REQUEST_TIMEOUT_MS = 5000
DELIVERY_TIMEOUT_MS = 20_000


def parse_producers(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    if not kinds:
        raise InputError("--producers", "no producer kind given")
    for k in kinds:
        if k not in PRODUCER_KINDS:
            raise InputError("--producers", f"{k[:60]!r} is not a producer kind ({', '.join(PRODUCER_KINDS)})")
    if len(set(kinds)) != len(kinds):
        raise InputError("--producers", "a producer kind is named twice")
    return kinds


class PythonProducer:
    """A kafka-python producer of one kind on its own thread, restarted as a new session after a stall."""

    def __init__(self, name: str, bootstrap: str, topic: str, partitions: int, rate: float, history: History,
                 stop: threading.Event, errors: list[str]) -> None:
        self.name, self.kind = name, PRODUCER_KINDS[name]
        self.bootstrap, self.topic, self.partitions, self.rate = bootstrap, topic, partitions, rate
        self.h, self.stop, self.errors = history, stop, errors
        self.idle = threading.Event()  # set: send nothing (a fault wants the producer idle)
        self.session = 0
        self.restart = threading.Event()
        self.outstanding = 0  # sends of the current session neither acknowledged nor failed
        self.progress = time.monotonic()  # the last acknowledgement or failure (or the session's start)
        self.client: Any = None
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name=f"chaos-{name}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def in_flight(self) -> int:
        return self.outstanding

    def stalled(self, now: float) -> bool:
        return self.outstanding > 0 and now - self.progress >= STALL_SECONDS

    def translate(self, raw: str, partition: int) -> str | None:
        return None

    def _new_client(self) -> Any:
        from kafka import KafkaProducer

        k = self.kind
        return KafkaProducer(bootstrap_servers=self.bootstrap.split(","), acks="all" if k.acks == "all" else 1,
                             enable_idempotence=k.idempotent, max_in_flight_requests_per_connection=k.max_in_flight,
                             linger_ms=5, request_timeout_ms=REQUEST_TIMEOUT_MS,
                             delivery_timeout_ms=DELIVERY_TIMEOUT_MS, max_block_ms=5000, retry_backoff_ms=100,
                             client_id=f"kcheck-chaos-{self.name}-{self.session}")

    def _resolved(self, session: int) -> None:
        with self._lock:
            if session == self.session:
                self.outstanding -= 1
                self.progress = time.monotonic()

    def _send(self, seq: int) -> None:
        from kafka.errors import KafkaError

        h, session, acks = self.h, self.session, self.kind.acks
        partition = seq % self.partitions
        value = value_of(self.name, session, partition, seq)
        h.add(Send(h.now(), acks, value))
        try:
            future = self.client.send(self.topic, value=value.encode(), partition=partition)
        except KafkaError as e:  # never queued: the record did not leave the client
            h.add(SendFailure(h.now(), acks, value, type(e).__name__ + NOT_SENT))
            return
        with self._lock:
            self.outstanding += 1

        def ok(md: Any) -> None:
            h.add(Ack(h.now(), acks, value, md.partition, md.offset))
            self._resolved(session)

        def failed(e: Exception) -> None:
            h.add(SendFailure(h.now(), acks, value, type(e).__name__))
            self._resolved(session)

        future.add_callback(ok)
        future.add_errback(failed)

    def _abandon(self) -> None:
        """Force a stalled client closed: its close() would first wait for what never comes. Its sender thread fails
        every batch it still holds ("Producer is closed forcefully": recorded as indefinite failures of the old
        session), and the client is marked closed so that nothing waits on it at exit or on collection."""
        client, self.client = self.client, None
        with contextlib.suppress(Exception):
            client._unregister_cleanup()
            client._sender.force_close()
            client._closed = True

    def _run(self) -> None:
        from kafka.errors import KafkaError

        try:
            self.client = self._new_client()
        except KafkaError as e:
            self.errors.append(f"the {self.name} producer did not start: {e}")
            return
        seq, interval, next_at = 0, 1.0 / self.rate, time.monotonic()
        while not self.stop.is_set():
            if self.restart.is_set():
                self._abandon()
                with self._lock:
                    self.session, self.outstanding, self.progress = self.session + 1, 0, time.monotonic()
                self.restart.clear()
                seq = 0
                try:
                    self.client = self._new_client()
                except KafkaError as e:
                    self.errors.append(f"the {self.name} producer did not start again: {e}")
                    return
            if not self.idle.is_set():
                self._send(seq)
                seq += 1
            next_at = max(next_at + interval, time.monotonic() - 1.0)
            self.stop.wait(max(0.0, next_at - time.monotonic()))
        self._finish()

    def _finish(self) -> None:
        from kafka.errors import KafkaError

        if self.client is None:
            return
        with contextlib.suppress(KafkaError):
            self.client.flush(timeout=(DELIVERY_TIMEOUT_MS + 5000) / 1000)
        if self.outstanding:
            self._abandon()
            return
        with contextlib.suppress(Exception):
            self.client.close(timeout=5)

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)

    def abort(self) -> None:
        with contextlib.suppress(Exception):  # kafka-python's own close at exit would wait on a paused leader
            self.client._unregister_cleanup()


class JavaProducer:
    """VerifiableProducer of the cluster's release as a child process; its JSON lines become history events."""

    def __init__(self, name: str, bootstrap: str, topic: str, partitions: int, rate: float, history: History,
                 stop: threading.Event, errors: list[str], classpath: str, prefix: int) -> None:
        self.name, self.kind = name, PRODUCER_KINDS[name]
        self.bootstrap, self.topic, self.partitions, self.rate = bootstrap, topic, partitions, rate
        self.h, self.stop, self.errors = history, stop, errors
        self.classpath, self.prefix = classpath, prefix
        self.session = prefix  # one process, one session; the prefix tells sessions apart in the log
        self.proc: subprocess.Popen[str] | None = None
        self.sent = 0  # values recorded as sent: 0..sent-1
        self.stderr: deque[str] = deque(maxlen=20)
        self.reported: int | None = None  # tool_data's `sent`
        self.folder: str | None = None
        self.threads: list[threading.Thread] = []

    def in_flight(self) -> int:
        return 0  # not observable: VerifiableProducer prints outcomes only

    def stalled(self, now: float) -> bool:
        return False

    def translate(self, raw: str, partition: int) -> str | None:
        """`<prefix>.<n>` of this process, as the campaign's value."""
        head, dot, n = raw.partition(".")
        if dot and head == str(self.prefix) and n.isascii() and n.isdigit():
            return value_of(self.name, self.session, partition, int(n))
        return None

    def _partition(self, n: int) -> int:
        return partition_for_key(str(n % JAVA_KEYS).encode(), self.partitions)

    def _config(self) -> str:
        self.folder = tempfile.mkdtemp(prefix="kcheck-chaos-java-")
        path = os.path.join(self.folder, "producer.properties")
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"enable.idempotence={'true' if self.kind.idempotent else 'false'}\n"
                    f"max.in.flight.requests.per.connection={self.kind.max_in_flight}\n"
                    # VerifiableProducer sets retries=0; the campaign's clients retry until delivery.timeout.ms
                    f"retries=2147483647\nlinger.ms=5\nrequest.timeout.ms={REQUEST_TIMEOUT_MS}\n"
                    f"delivery.timeout.ms={DELIVERY_TIMEOUT_MS}\nmax.block.ms=5000\nretry.backoff.ms=100\n"
                    f"client.id=kcheck-chaos-{self.name}-{self.session}\n")
        return path

    def start(self) -> None:
        from kcheck.reference.kafka_jars import require_tool

        cmd = [require_tool("java"), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Djava.awt.headless=true", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", self.classpath,
               VERIFIABLE_PRODUCER, "--topic", self.topic, "--bootstrap-server", self.bootstrap,
               "--max-messages", "-1", "--throughput", str(max(1, round(self.rate))), "--acks", "-1",
               "--value-prefix", str(self.prefix), "--repeating-keys", str(JAVA_KEYS),
               "--producer.config", self._config()]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        self.threads = [threading.Thread(target=self._read, name=f"chaos-{self.name}", daemon=True),
                        threading.Thread(target=self._drain, name=f"chaos-{self.name}-err", daemon=True),
                        threading.Thread(target=self._stop_when_told, daemon=True)]
        for th in self.threads:
            th.start()

    def _sent_up_to(self, n: int) -> None:
        h = self.h
        for i in range(self.sent, n + 1):
            h.add(Send(h.now(), "all", value_of(self.name, self.session, self._partition(i), i)))
        self.sent = max(self.sent, n + 1)

    def _line(self, line: str) -> None:
        try:
            doc = json.loads(line)
        except ValueError:
            return
        name, h = doc.get("name"), self.h
        if name == "tool_data":
            self.reported = int(doc.get("sent", 0))
            return
        if name not in ("producer_send_success", "producer_send_error"):
            return
        raw = str(doc.get("value", ""))
        n = int(raw.partition(".")[2]) if raw.partition(".")[2].isdigit() else -1
        if n < 0:
            return
        self._sent_up_to(n)
        if name == "producer_send_success":
            p = int(doc["partition"])
            h.add(Ack(h.now(), "all", value_of(self.name, self.session, p, n), p, int(doc["offset"])))
        else:  # "class org.apache.kafka.common.errors.TimeoutException": the simple name, as kafka-python's
            error = str(doc.get("exception", "")).rsplit(".", 1)[-1] or "unknown"
            h.add(SendFailure(h.now(), "all", value_of(self.name, self.session, self._partition(n), n), error))

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self._line(line)
        if self.reported:
            self._sent_up_to(self.reported - 1)

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip())

    def _stop_when_told(self) -> None:
        """SIGTERM when the campaign stops producing: VerifiableProducer's shutdown hook stops sending, closes the
        producer (every send resolves within delivery.timeout.ms) and prints tool_data."""
        self.stop.wait()
        self.signal(signal.SIGTERM)

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.kill(self.proc.pid, sig)

    def join(self, timeout: float) -> None:
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.errors.append(f"the {self.name} producer did not stop within {timeout:.0f} s; killed")
            self.signal(signal.SIGKILL)
            self.proc.wait()
        for th in self.threads:
            th.join(5)
        if self.proc.returncode not in (0, 143, -signal.SIGTERM) and not self.sent:
            self.errors.append(f"the {self.name} producer exited with {self.proc.returncode}: "
                               + " | ".join(list(self.stderr)[-3:]))
        self._clean()

    def abort(self) -> None:
        self.signal(signal.SIGKILL)
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(2)
        self._clean()

    def _clean(self) -> None:
        if self.folder is not None:
            for name in os.listdir(self.folder):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.folder, name))
            with contextlib.suppress(OSError):
                os.rmdir(self.folder)
            self.folder = None


Producer = PythonProducer | JavaProducer


def make_producers(kinds: tuple[str, ...], bootstrap: str, topic: str, partitions: int, rate: float,
                   history: History, stop: threading.Event, errors: list[str],
                   classpath: Callable[[], str]) -> list[Producer]:
    out: list[Producer] = []
    prefix = 0
    for name in kinds:
        if PRODUCER_KINDS[name].client == "java":
            prefix += 1
            out.append(JavaProducer(name, bootstrap, topic, partitions, rate, history, stop, errors, classpath(),
                                    prefix))
        else:
            out.append(PythonProducer(name, bootstrap, topic, partitions, rate, history, stop, errors))
    return out


def stall_watch(producers: list[Producer], history: History, healthy: Callable[[], bool],
                done: threading.Event) -> None:
    """Until `done`: a producer stalled on a healthy cluster is recorded (Stall) and restarted as a new session."""
    while not done.wait(0.5):
        now = time.monotonic()
        for p in producers:
            if isinstance(p, PythonProducer) and not p.restart.is_set() and p.stalled(now) and healthy():
                history.add(Stall(history.now(), p.name, p.session, p.outstanding, round(now - p.progress, 1)))
                p.restart.set()
