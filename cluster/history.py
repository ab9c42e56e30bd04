"""The history a fault campaign records (`kcheck chaos`), and the checks run on it afterwards.

A campaign's clients write every observation here, stamped with `time.monotonic()` seconds since the campaign
began: each send, its acknowledgement (partition, offset) or its failure, each record a consumer read (with the
high watermark its fetch reported), each offset commit, each fault's start and end, and the final read of every
partition after the cluster healed. The checks then restate the replication invariants over observations, the
way Jepsen checks a history (nothing here looks inside a broker):

- history.acked-not-lost: a record produced with acks=all and acknowledged is, in the final read, at the offset
  its acknowledgement named. Kafka's guarantee (docs "Design: Replication", `acks` and `min.insync.replicas` in
  the producer and topic configs; KIP-101 and KIP-279 for the truncation that used to break it): an acks=all
  write acknowledged while the ISR held at least min.insync.replicas replicas survives as long as one of them
  does, unless an unclean leader election (`unclean.leader.election.enable`) picks a replica outside the ISR.
- history.acked-readable (Jepsen `unseen`): once faults heal, the final read reaches the end of every partition that
  holds an acknowledged record (the partition is online and readable up to its high watermark).
- history.offset-single-value: no offset read with two different values, across the consumer's reads and the
  final read (a log is append-only; a replica truncates only what was never committed, KIP-101).
- history.commits-monotonic: the offsets a consumer commits for a partition never go back
  (the group coordinator stores what it is given: `GroupCoordinator`/`OffsetCommit`; a consumer goes back only
  when its position is reset, e.g. after `OFFSET_OUT_OF_RANGE` once the log was truncated under it).
- history.hw-monotonic: the high watermark a consumer's fetches report for a partition never goes back
  (`Partition.maybeIncrementLeaderHW`: the HW only moves forward on a leader; KIP-101/KIP-207 discuss the
  leader change where a new leader's HW lags).
- history.controller-failover: after a fault that killed, paused or stopped the active controller of a KRaft quorum
  of three or more, DescribeQuorum names another leader with a larger epoch within FAILOVER_BOUND seconds (KIP-595:
  a voter that hears nothing from the leader for `controller.quorum.fetch.timeout.ms` becomes a candidate and wins
  a majority's votes for a bumped epoch, within `controller.quorum.election.timeout.ms` and its backoff).

Every violation carries its `window`: the smallest slice of the history that shows it (the write affected, its
acknowledgement or failure, the reads that show the violation, and every fault that started or ended in between),
as events of the JSON history, so another checker can replay just that slice.

Records produced with acks=1 are checked the same way but their losses are counted apart (`acks1_lost`), not
violations: Kafka promises an acks=1 record only the leader's copy.

The request path: every value names its producer kind, session, partition and sequence
(`<producer>-<session>-<partition>-<seq>`, `PRODUCER_KINDS`); a session is one producer instance, the scope of
Kafka's idempotence (KIP-98: a producer id and epoch per instance). Each violation names the anomaly the way
Jepsen's Kafka checker (jepsen.tests.kafka) does where one fits:

- history.ack-offset-match (hard, acks=all; Jepsen `inconsistent-offsets`, as its checker puts sends' and polls'
  values of an offset side by side): an acknowledged value in the final log but at another offset than its
  acknowledgement named (`ProduceResponse.PartitionResponse.baseOffset`).
- history.idem-no-duplicate (hard, idempotent sessions; Jepsen `duplicate`): no value at two offsets.
  `ProducerStateManager`/`ProducerAppendInfo` answer a retried batch with its first offset (KIP-98).
- history.idem-order (hard, idempotent sessions; Jepsen `nonmonotonic-send`): values of one session and partition
  lie in the log in their send order (the broker refuses a sequence that is not the next, OUT_OF_ORDER_SEQUENCE_NUMBER).
- history.idem-no-silent-gap (hard, idempotent sessions; Jepsen `lost-write`): a later value acknowledged, an
  earlier one of the same session and partition absent with no failure recorded.
- history.failed-definite-absent (hard; Jepsen `G1a`, a read of a failed write): a send that failed with a definite
  error (`DEFINITE_ERRORS`: the broker refused the batch before appending it) is never in the log.
- Findings, counted per producer, not violations: duplicates and reorders of non-idempotent producers (Kafka's
  producer docs: retries with more than one request in flight may reorder; a retry after a lost response
  duplicates), indefinite failures that were in fact committed (KAFKA-13574's class: `NOT_LEADER_OR_FOLLOWER`
  from a leader that lost leadership while the write sat in the purgatory, timeouts, dropped connections), and
  client stalls (a kafka-python producer that neither acknowledged nor failed a send for a while on a healthy
  cluster: a finding about kafka-python, not about Kafka).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

# ---------------------------------------------------------------------------------------------------------
# events


@dataclass(frozen=True)
class Send:
    t: float
    acks: str  # "all" or "1"
    value: str


@dataclass(frozen=True)
class Ack:
    t: float
    acks: str
    value: str
    partition: int
    offset: int


@dataclass(frozen=True)
class SendFailure:
    t: float
    acks: str
    value: str
    error: str


@dataclass(frozen=True)
class Read:
    t: float
    partition: int
    offset: int
    value: str
    hw: int | None  # the high watermark the fetch reported (None when the client did not say)
    final: bool = False  # part of the final read after healing


@dataclass(frozen=True)
class Commit:
    t: float
    partition: int
    offset: int
    error: str | None = None  # None: the coordinator accepted it


@dataclass(frozen=True)
class Fault:
    t: float
    kind: str  # a fault kind (CONTRACTS: kill, lossy-kill, pause, restart, shutdown, start, elect-preferred, ...)
    phase: str  # "start", "end", "skipped", "failed"
    brokers: tuple[int, ...] = ()
    note: str = ""
    step: int | None = None  # the index of the schedule's step that did it (None: healing)
    role: str | None = None  # what the target was named by: leader, follower, active-controller, controller, ...
    cuts: tuple[tuple[int, int], ...] = ()  # a partition's links cut (start) or restored (end): (from, to)
    shaped: tuple[tuple[int, int], ...] = ()  # a slow-links or lossy-links fault's links shaped (start) or restored
    shape: str | None = None  # what its shaped links do (chaos.SHAPES: `delay 200ms 50ms`, `loss 20% burst 50%`)


@dataclass(frozen=True)
class Quorum:
    """What DescribeQuorum said of the KRaft metadata quorum (`__cluster_metadata` partition 0) around a controller
    fault: its leader (the active controller; -1: none known) and leader epoch."""

    t: float
    leader: int
    epoch: int
    step: int | None = None  # the schedule's step of the fault it was asked around


@dataclass(frozen=True)
class Stall:
    """A producer session that neither acknowledged nor failed any send for `seconds` while `outstanding` sends
    waited and the cluster was healthy: abandoned, and the producer restarted as a new session."""

    t: float
    producer: str
    session: int
    outstanding: int
    seconds: float


@dataclass(frozen=True)
class FinalRead:
    """What the final read of one partition saw: its log start and end (high watermark) offsets, and whether it
    read every record in between (False: the partition was offline or the read timed out)."""

    partition: int
    start: int
    end: int
    complete: bool
    note: str = ""


Event = Send | Ack | SendFailure | Read | Commit | Fault | Stall | Quorum
_TYPES: dict[str, type] = {"send": Send, "ack": Ack, "send-failure": SendFailure, "read": Read, "commit": Commit,
                           "fault": Fault, "stall": Stall, "quorum": Quorum}
_NAMES = {v: k for k, v in _TYPES.items()}


def event_json(e: Event) -> dict[str, Any]:
    """An event as the JSON history writes it (`history.schema.json`'s `event`)."""
    return {"type": _NAMES[type(e)], **asdict(e)}


def event_text(e: dict[str, Any]) -> str:
    """One line for an event of a window (the text report)."""
    kind, at = e["type"], f"{e['t']:.2f}s"
    if kind == "fault":
        who = ",".join(map(str, e["brokers"]))
        return f"{at} {e['kind']}{' ' + who if who else ''}{' (end)' if e['phase'] == 'end' else ''}"
    if kind in ("ack", "read"):
        what = "final read" if e.get("final") else kind
        return f"{at} {what} p{e['partition']}@{e['offset']} {e['value']}"
    if kind == "send":
        return f"{at} send {e['value']} acks={e['acks']}"
    if kind == "send-failure":
        return f"{at} fail {e['value']} {e['error']}"
    if kind == "commit":
        return f"{at} commit p{e['partition']} offset {e['offset']}"
    if kind == "quorum":
        return f"{at} quorum leader {e['leader']} epoch {e['epoch']}"
    return f"{at} {kind}"


class History:
    """Thread-safe: producers' callbacks, the consumer and the fault injector all append to one history."""

    def __init__(self, began: float | None = None) -> None:
        self.began = time.monotonic() if began is None else began
        self.events: list[Event] = []
        self.final: dict[int, FinalRead] = {}
        self._lock = threading.Lock()

    def now(self) -> float:
        return round(time.monotonic() - self.began, 4)

    def add(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        with self._lock:
            return [e for e in self.events if type(e) is kind]

    def to_json(self) -> list[dict[str, Any]]:
        with self._lock:
            return [event_json(e) for e in self.events]

    @classmethod
    def from_json(cls, events: list[dict[str, Any]], final: list[dict[str, Any]] = ()) -> History:  # type: ignore[assignment]
        h = cls(began=0.0)
        for raw in events:
            raw = dict(raw)
            kind = _TYPES[raw.pop("type")]
            if kind is Fault:
                raw["brokers"] = tuple(raw.get("brokers", ()))
                raw["cuts"] = tuple(tuple(c) for c in raw.get("cuts", ()))
                raw["shaped"] = tuple(tuple(c) for c in raw.get("shaped", ()))
            h.events.append(kind(**raw))
        for f in final:
            h.final[int(f["partition"])] = FinalRead(**f)
        return h


# ---------------------------------------------------------------------------------------------------------
# producers and their values


@dataclass(frozen=True)
class ProducerKind:
    client: str  # "kafka-python" or "java" (org.apache.kafka.tools.VerifiableProducer of the cluster's release)
    acks: str  # "all" or "1"
    idempotent: bool
    max_in_flight: int


# The producers a campaign can run (`kcheck chaos --producers`). kafka-python mutes a partition while one of its
# batches is in flight when idempotent or at max in flight 1 (its Sender's guarantee_message_order), so only the
# Java client has up to 5 batches of one partition in flight with idempotence.
PRODUCER_KINDS: dict[str, ProducerKind] = {
    "plain": ProducerKind("kafka-python", "all", False, 5),
    "plain-1": ProducerKind("kafka-python", "all", False, 1),
    "acks1": ProducerKind("kafka-python", "1", False, 5),
    "idempotent": ProducerKind("kafka-python", "all", True, 5),
    "idempotent-1": ProducerKind("kafka-python", "all", True, 1),
    "java-idempotent": ProducerKind("java", "all", True, 5),
    "java-plain": ProducerKind("java", "all", False, 5),
}


def value_of(producer: str, session: int, partition: int, seq: int) -> str:
    return f"{producer}-{session}-{partition}-{seq:06d}"


def parse_value(value: str) -> tuple[str, int, int, int] | None:
    """(producer, session, partition, seq) of a campaign value, or None for another value (an older history's)."""
    parts = value.rsplit("-", 3)
    if len(parts) != 4 or parts[0] not in PRODUCER_KINDS or not all(p.isascii() and p.isdigit() for p in parts[1:]):
        return None
    return parts[0], int(parts[1]), int(parts[2]), int(parts[3])


# Errors by Kafka's error name (`org.apache.kafka.common.protocol.Errors`) with kafka-python's class (kafka.errors)
# and the Java client's exception: the broker refused the whole batch before appending it, and would refuse every
# retry alike (validation in `UnifiedLog.analyzeAndValidateRecords`/`LogValidator`, `KafkaApis.handleProduceRequest`'s
# authorisation and acks checks). A send that failed with one of them never reached the log.
DEFINITE_ERRORS: dict[str, tuple[str, str]] = {
    "CORRUPT_MESSAGE": ("CorruptRecordError", "CorruptRecordException"),
    "MESSAGE_TOO_LARGE": ("MessageSizeTooLargeError", "RecordTooLargeException"),
    "INVALID_TOPIC_EXCEPTION": ("InvalidTopicError", "InvalidTopicException"),
    "RECORD_LIST_TOO_LARGE": ("RecordListTooLargeError", "RecordBatchTooLargeException"),
    "INVALID_REQUIRED_ACKS": ("InvalidRequiredAcksError", "InvalidRequiredAcksException"),
    "TOPIC_AUTHORIZATION_FAILED": ("TopicAuthorizationFailedError", "TopicAuthorizationException"),
    "INVALID_TIMESTAMP": ("InvalidTimestampError", "InvalidTimestampException"),
    "INVALID_RECORD": ("InvalidRecordError", "InvalidRecordException"),
}
# NOT_ENOUGH_REPLICAS is raised before the append (`Partition.appendRecordsToLeader`), so it is definite for the one
# attempt it answers; but it is retriable, and both clients fail a batch with the last attempt's error once
# `delivery.timeout.ms` has passed (Java's `Sender.completeBatch`/`canRetry`), after earlier attempts that may have
# been appended and then timed out. For a retrying producer it is therefore indefinite, as are
# NOT_ENOUGH_REPLICAS_AFTER_APPEND (`Partition.checkEnoughReplicasReachOffset`), NOT_LEADER_OR_FOLLOWER (also sent
# by `DelayedProduce` when leadership moved while the write waited: KAFKA-13574), REQUEST_TIMED_OUT,
# NETWORK_EXCEPTION, a dropped connection and the client's own delivery timeout.
NOT_SENT = " before sending"  # suffix of a failure raised by send() itself: the record never left the client


def definite(error: str) -> bool:
    """Whether a send that failed with `error` (a client's exception class name) is known not to be in the log."""
    return error.endswith(NOT_SENT) or any(error in names for names in DEFINITE_ERRORS.values())


# ---------------------------------------------------------------------------------------------------------
# checks

CHECKS: dict[str, tuple[str, str]] = {
    "history.acked-not-lost": (
        "an acks=all acknowledged record is in the final read at its acknowledged offset",
        "Kafka docs, Design: Replication (acks=all with min.insync.replicas); KIP-101, KIP-279"),
    "history.acked-readable": (
        "once faults heal, every partition with an acknowledged record reads to its end",
        "Kafka docs, Design: Replication (availability once a replica of the ISR is back)"),
    "history.offset-single-value": (
        "no offset is read with two different values",
        "KIP-101 (replicas truncate only uncommitted data; consumers read below the high watermark)"),
    "history.commits-monotonic": (
        "a consumer's committed offsets never go back",
        "OffsetCommit in GroupCoordinator; KafkaConsumer's position moves back only on a reset"),
    "history.hw-monotonic": (
        "the high watermark a consumer sees never goes back",
        "Partition.maybeIncrementLeaderHW (storage: the HW only advances); KIP-101, KIP-207"),
    "history.ack-offset-match": (
        "an acks=all acknowledged record is in the final read at the offset acknowledged, not elsewhere",
        "ProduceResponse's base offset; KafkaProducer RecordMetadata.offset"),
    "history.idem-no-duplicate": (
        "no value of an idempotent producer session is at two offsets",
        "KIP-98; ProducerStateManager/ProducerAppendInfo (a retried batch answered with its first offset)"),
    "history.idem-order": (
        "an idempotent session's values of one partition lie in the log in send order",
        "KIP-98; ProducerAppendInfo.checkSequence (OUT_OF_ORDER_SEQUENCE_NUMBER)"),
    "history.idem-no-silent-gap": (
        "a later value of an idempotent session acknowledged: every earlier one is in the log or failed",
        "KIP-98 (per-partition sequence with no hole); Sender/TransactionManager fail the batches they give up"),
    "history.failed-definite-absent": (
        "a send failed with a definite error is never in the log",
        "Errors (validation and authorisation refuse the batch before UnifiedLog.appendAsLeader)"),
    "history.controller-failover": (
        "the active controller killed, paused or stopped: the quorum elects another leader, a larger epoch, in time",
        "KIP-595 (KRaft leader election); KafkaRaftClient, QuorumState"),
}
# Seconds within which a KRaft quorum of three elects a new leader once its leader is gone: Kafka's defaults make it
# controller.quorum.fetch.timeout.ms (2 s) for a voter to notice, plus up to controller.quorum.election.timeout.ms
# (1 s, randomised up to twice that) per election round; 15 s leaves room for a few split votes and a loaded machine.
FAILOVER_BOUND = 15.0
# The faults after which the controller they hit is gone (a restart: gone while it restarts; a partition: cut from
# the other voters both ways, so they elect a leader among themselves).
CONTROLLER_GONE = ("kill", "pause", "shutdown", "restart", "partition")
# Jepsen's Kafka checker's name for the anomaly each check reports (jepsen.tests.kafka), where one fits.
ANOMALIES = {"history.acked-not-lost": "lost-write", "history.offset-single-value": "inconsistent-offsets",
             "history.ack-offset-match": "inconsistent-offsets", "history.acked-readable": "unseen",
             "history.idem-no-duplicate": "duplicate", "history.idem-order": "nonmonotonic-send",
             "history.idem-no-silent-gap": "lost-write", "history.failed-definite-absent": "G1a"}


@dataclass(frozen=True)
class Violation:
    check: str
    message: str
    t: float  # when it happened (or was first observable)
    partition: int | None = None
    offset: int | None = None
    faults_before: tuple[str, ...] = ()  # the faults that preceded it, oldest first, as "12.3s kill 2"
    # The smallest slice of the history that shows it (`window`): its events, as the JSON history writes them.
    window: tuple[dict[str, Any], ...] = ()

    @property
    def anomaly(self) -> str:
        return ANOMALIES.get(self.check, "")


@dataclass
class Verdict:
    violations: list[Violation] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    faults: dict[str, int] = field(default_factory=dict)  # faults injected per kind (phase start)
    acks1_lost: list[dict[str, Any]] = field(default_factory=list)
    healed: bool = True
    producers: dict[str, dict[str, int]] = field(default_factory=dict)  # per producer kind, PRODUCER_COUNTS

    @property
    def status(self) -> str:
        if self.violations:
            return "violations"
        return "clean" if self.healed else "incomplete"

    def by_check(self) -> dict[str, list[Violation]]:
        out: dict[str, list[Violation]] = {c: [] for c in CHECKS}
        for v in self.violations:
            out[v.check].append(v)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "healed": self.healed, "counts": self.counts, "faults": self.faults,
                "checks": {c: {"title": CHECKS[c][0], "source": CHECKS[c][1], "anomaly": ANOMALIES.get(c, ""),
                               "violations": len(vs)} for c, vs in self.by_check().items()},
                "violations": [{**asdict(v), "anomaly": v.anomaly} for v in self.violations],
                "acks1_lost": self.acks1_lost, "producers": self.producers}


def _fault_text(f: Fault) -> str:
    who = ",".join(map(str, f.brokers))
    return f"{f.t:.1f}s {f.kind}{' ' + who if who else ''}{' (end)' if f.phase == 'end' else ''}"


def faults_around(faults: list[Fault], t: float, before: int = 2, after: int = 4) -> tuple[str, ...]:
    """The faults that preceded an observation's consequence: the last `before` faults started before `t` and the
    first `after` from `t` on (a loss is caused after the ack it destroys and seen only in the final read)."""
    started = [f for f in faults if f.phase in ("start", "end")]
    earlier = [f for f in started if f.t <= t][-before:]
    later = [f for f in started if f.t > t][:after]
    return tuple(_fault_text(f) for f in earlier + later)


class _Slices:
    """What each violation's window is cut from: every value's first send and acknowledgement, every read of each
    offset (the consumer's in time order, then the final read), and the faults' starts and ends."""

    def __init__(self, history: History, faults: list[Fault]) -> None:
        self.faults = [f for f in faults if f.phase in ("start", "end")]
        self.sends: dict[str, Send] = {}
        self.acks: dict[str, Ack] = {}
        for kind, into in ((Send, self.sends), (Ack, self.acks)):
            for e in history.of(kind):
                into.setdefault(e.value, e)
        self.last_ack: dict[int, Ack] = {}  # per partition, the last acknowledgement
        for a in sorted(self.acks.values(), key=lambda a: a.t):
            self.last_ack[a.partition] = a
        self.reads: dict[tuple[int, int], list[Read]] = {}
        self.last_final: dict[int, Read] = {}  # per partition, the final read's record at its highest offset
        for r in sorted(history.of(Read), key=lambda r: (r.final, r.t)):
            self.reads.setdefault((r.partition, r.offset), []).append(r)
            if r.final and r.offset >= getattr(self.last_final.get(r.partition), "offset", -1):
                self.last_final[r.partition] = r

    def read(self, partition: int, offset: int, value: str | None = None, not_value: str | None = None,
             last: bool = False) -> Read | None:
        """The first (or `last`) read of an offset, of `value` only or of any value but `not_value`."""
        found = [r for r in self.reads.get((partition, offset), ())
                 if (value is None or r.value == value) and (not_value is None or r.value != not_value)]
        return (found[-1] if last else found[0]) if found else None

    def window(self, *anchors: Event | None, until: float = 0.0) -> tuple[dict[str, Any], ...]:
        """The anchors (the write affected, its outcome, the reads that show the violation) and every fault that
        started or ended between the first and the last of them (or `until`, if later), in time order."""
        chosen = [a for a in anchors if a is not None]
        if not chosen:
            return ()
        lo, hi = min(a.t for a in chosen), max(until, *(a.t for a in chosen))
        out: dict[int, Event] = {}  # by identity: a fault anchored and in between is shown once
        for e in sorted([*chosen, *(f for f in self.faults if lo <= f.t <= hi)], key=lambda e: e.t):
            out.setdefault(id(e), e)
        return tuple(event_json(e) for e in out.values())


def check(history: History, healed: bool = True, max_per_check: int = 1000) -> Verdict:
    """Run every check on a finished history (its final read included)."""
    faults = history.of(Fault)
    acks: list[Ack] = history.of(Ack)
    reads: list[Read] = history.of(Read)
    final_values = {(r.partition, r.offset): r.value for r in reads if r.final}
    verdict = Verdict(healed=healed)
    out = verdict.violations

    def add(v: Violation) -> None:
        if sum(1 for x in out if x.check == v.check) < max_per_check:
            out.append(v)

    # Each value's (partition, offset)s in the log: the final read, and below its log start (records deleted by
    # DeleteRecords or retention) what the consumer read there.
    log = dict(final_values)
    for r in reads:
        fr = history.final.get(r.partition)
        if not r.final and fr is not None and r.offset < fr.start:
            log.setdefault((r.partition, r.offset), r.value)
    where: dict[str, list[tuple[int, int]]] = {}
    for (p, o), value in sorted(log.items()):
        where.setdefault(value, []).append((p, o))
    look = _Slices(history, faults)
    lost_all = _check_acks(history, acks, final_values, where, faults, verdict, add, look)
    _check_single_values(reads, faults, add, look)
    _check_commits(history, faults, add, look)
    _check_hw(reads, faults, add, look)
    _count(history, verdict, acks, reads, final_values, faults, lost_all)
    _check_request_path(history, where, faults, verdict, add, look)
    _check_failovers(history, faults, add, look)
    verdict.counts["poll_skips"] = _poll_skips(reads, log, history.final)
    return verdict


def _check_failovers(history: History, faults: list[Fault], add: Callable[[Violation], None],
                     look: _Slices) -> None:
    """controller-failover: each fault that took down the quorum's leader (the last DescribeQuorum answer before it,
    of its step, named the node it hit) is followed within FAILOVER_BOUND by an answer naming another leader with a
    larger epoch."""
    quorum: list[Quorum] = sorted(history.of(Quorum), key=lambda q: q.t)
    for f in faults:
        if f.phase != "start" or f.kind not in CONTROLLER_GONE or len(f.brokers) != 1:
            continue
        before = [q for q in quorum if q.step == f.step and q.t <= f.t]
        if not before or before[-1].leader != f.brokers[0]:
            continue  # not the active controller when it struck
        was = before[-1]
        seen = [q for q in quorum if f.t < q.t <= f.t + FAILOVER_BOUND]
        if any(q.leader >= 0 and q.leader != was.leader and q.epoch > was.epoch for q in seen):
            continue
        window = look.window(was, f, *seen)
        add(Violation("history.controller-failover", f"{f.kind} of the active controller {was.leader} (epoch "
                      f"{was.epoch}) at {f.t:.1f}s: no new quorum leader with a larger epoch observed within "
                      f"{FAILOVER_BOUND:g} s", f.t, faults_before=faults_around(faults, f.t), window=window))


def _poll_skips(reads: list[Read], log: dict[tuple[int, int], str], final: dict[int, FinalRead]) -> int:
    """Jepsen's poll-skip, counted (a finding, not a violation): the group consumer's next read of a partition jumps
    over offsets that hold records in the log. A jump over records deleted below the final log start is none (the
    consumer's position is reset to the new log start: OFFSET_OUT_OF_RANGE)."""
    last: dict[int, int] = {}
    skips = 0
    for r in sorted((r for r in reads if not r.final), key=lambda r: r.t):
        before = last.get(r.partition)
        last[r.partition] = r.offset
        fr = final.get(r.partition)
        if before is None or fr is None or r.offset <= before + 1:
            continue
        skipped = range(max(before + 1, fr.start), r.offset)
        skips += int(any((r.partition, o) in log for o in skipped))
    return skips


def _check_acks(history: History, acks: list[Ack], final_values: dict[tuple[int, int], Any],
                where: dict[str, list[tuple[int, int]]], faults: list[Any], verdict: Verdict,
                add: Callable[[Violation], None], look: _Slices) -> int:
    """acked-not-lost and acked-readable (acks=1 losses are counted, not violations); the acks=all records lost."""
    unreadable: set[int] = set()
    lost_all = 0
    for a in sorted(acks, key=lambda a: a.t):
        fr = history.final.get(a.partition)
        if fr is None or not fr.complete:
            if a.partition not in unreadable and a.acks == "all":
                unreadable.add(a.partition)
                why = fr.note if fr is not None and fr.note else "the final read did not reach its end"
                add(Violation("history.acked-readable", f"partition {a.partition} holds acknowledged records but "
                              f"{why}", a.t, a.partition, None, faults_around(faults, a.t),
                              look.window(look.last_ack.get(a.partition), look.last_final.get(a.partition),
                                          until=math.inf)))
            continue
        there = final_values.get((a.partition, a.offset))
        if there == a.value:
            continue
        if a.offset < fr.start:
            # below the log start: deleted by retention, not lost by replication (campaign topics keep everything)
            continue
        if there is None:
            what = f"the log now ends at offset {fr.end}" if a.offset >= fr.end else "the offset was not read"
        else:
            what = f"offset {a.offset} now holds {there}"
        elsewhere = where.get(a.value)
        # from the write to the read that shows it: the first read of another value there (else the final read's
        # last record, where the log now ends), with the last read that still saw it
        shows = look.read(a.partition, a.offset, not_value=a.value) or look.last_final.get(a.partition)
        seen = look.read(a.partition, a.offset, value=a.value, last=True)
        if a.acks == "all" and elsewhere:
            at = ", ".join(f"partition {p} offset {o}" for p, o in elsewhere)
            add(Violation("history.ack-offset-match", f"{a.value} acknowledged at partition {a.partition} offset "
                          f"{a.offset} at {a.t:.1f}s is at {at}; {what}", a.t, a.partition, a.offset,
                          faults_around(faults, a.t),
                          look.window(look.sends.get(a.value), a, seen, shows,
                                      *(look.read(p, o, value=a.value) for p, o in elsewhere))))
        elif a.acks == "all":
            lost_all += 1
            add(Violation("history.acked-not-lost", f"{a.value} acknowledged (acks=all) at partition {a.partition} "
                          f"offset {a.offset} at {a.t:.1f}s is gone: {what}", a.t, a.partition, a.offset,
                          faults_around(faults, a.t), look.window(look.sends.get(a.value), a, seen, shows)))
        else:
            verdict.acks1_lost.append({"value": a.value, "partition": a.partition, "offset": a.offset, "t": a.t,
                                       "now": there, "faults": list(faults_around(faults, a.t))})
    return lost_all


def _check_single_values(reads: list[Read], faults: list[Any], add: Callable[[Violation], None],
                         look: _Slices) -> None:
    # offset-single-value: the first value read at each offset, against every later read
    first: dict[tuple[int, int], Read] = {}
    for r in sorted(reads, key=lambda r: (r.final, r.t)):
        seen = first.setdefault((r.partition, r.offset), r)
        if seen.value != r.value:
            where = "the final read" if r.final else f"a read at {r.t:.1f}s"
            add(Violation("history.offset-single-value", f"partition {r.partition} offset {r.offset} read as "
                          f"{seen.value} at {seen.t:.1f}s and as {r.value} in {where}", r.t, r.partition, r.offset,
                          faults_around(faults, seen.t),
                          look.window(look.acks.get(seen.value), seen, look.acks.get(r.value), r)))
            first[(r.partition, r.offset)] = r  # report each change once


def _check_commits(history: History, faults: list[Any], add: Callable[[Violation], None], look: _Slices) -> None:
    # commits-monotonic
    last_commit: dict[int, Commit] = {}
    for c in sorted(history.of(Commit), key=lambda c: c.t):
        if c.error is not None:
            continue
        prev = last_commit.get(c.partition)
        if prev is not None and c.offset < prev.offset:
            add(Violation("history.commits-monotonic", f"partition {c.partition}: committed offset {c.offset} at "
                          f"{c.t:.1f}s after {prev.offset} at {prev.t:.1f}s", c.t, c.partition, c.offset,
                          faults_around(faults, c.t, after=0, before=3), look.window(prev, c)))
        last_commit[c.partition] = c


def _check_hw(reads: list[Read], faults: list[Any], add: Callable[[Violation], None], look: _Slices) -> None:
    # hw-monotonic: the consumer's fetches only (the final read is a new client)
    last_hw: dict[int, Read] = {}
    for r in sorted((r for r in reads if not r.final and r.hw is not None), key=lambda r: r.t):
        before = last_hw.get(r.partition)
        if before is not None and before.hw is not None and r.hw is not None and r.hw < before.hw:
            add(Violation("history.hw-monotonic", f"partition {r.partition}: high watermark {r.hw} at {r.t:.1f}s "
                          f"after {before.hw} at {before.t:.1f}s", r.t, r.partition, None,
                          faults_around(faults, r.t, after=0, before=3), look.window(before, r)))
        last_hw[r.partition] = r


def _count(history: History, verdict: Verdict, acks: list[Ack], reads: list[Read],
           final_values: dict[tuple[int, int], Any], faults: list[Any], lost_all: int) -> None:
    """What the campaign sent, had acknowledged, failed, read and committed, and the faults it ran."""
    sends: list[Send] = history.of(Send)
    failures: list[SendFailure] = history.of(SendFailure)
    acked_values = {a.value for a in acks}
    failed_values = {f.value for f in failures}
    for level in ("all", "1"):
        verdict.counts[f"sent_acks_{level}"] = sum(1 for s in sends if s.acks == level)
        verdict.counts[f"acked_acks_{level}"] = len({a.value for a in acks if a.acks == level})
        verdict.counts[f"failed_acks_{level}"] = sum(1 for f in failures if f.acks == level)
        verdict.counts[f"unresolved_acks_{level}"] = sum(1 for s in sends if s.acks == level
                                                         and s.value not in acked_values
                                                         and s.value not in failed_values)
    verdict.counts["lost_acks_all"] = lost_all
    verdict.counts["lost_acks_1"] = len(verdict.acks1_lost)
    verdict.counts["consumer_reads"] = sum(1 for r in reads if not r.final)
    verdict.counts["final_reads"] = len(final_values)
    verdict.counts["commits"] = sum(1 for c in history.of(Commit) if c.error is None)
    verdict.faults = dict(Counter(f.kind for f in faults if f.phase == "start"))
    skipped = Counter(f.kind for f in faults if f.phase in ("skipped", "failed"))
    if skipped:
        verdict.counts |= {f"skipped_{k}": n for k, n in skipped.items()}


PRODUCER_COUNTS = ("sessions", "sent", "acknowledged", "failed", "unresolved", "duplicates", "reorders",
                   "definite_failures", "indefinite_failures", "indefinite_committed", "stalls")
_Key = tuple[str, int, int]  # (producer, session, partition)


def _check_request_path(history: History, where: dict[str, list[tuple[int, int]]], faults: list[Any],
                        verdict: Verdict, add: Callable[[Violation], None], look: _Slices) -> None:
    """The request-path checks on campaign values (`<producer>-<session>-<partition>-<seq>`), and the counts per
    producer kind; a history of older values (no producer named) has none."""
    counts: dict[str, Counter[str]] = {}

    def count(producer: str, what: str, n: int = 1) -> None:
        counts.setdefault(producer, Counter())[what] += n

    _duplicates_and_reorders(where, faults, count, add, look)
    _silent_gaps(history, where, faults, add, look)
    _failures(history, where, faults, count, add, look)
    _per_producer(history, count)
    verdict.producers = {p: {k: c[k] for k in PRODUCER_COUNTS} for p, c in sorted(counts.items())}


def _log_order(where: dict[str, list[tuple[int, int]]]) -> dict[_Key, list[tuple[int, int, str]]]:
    """Each (producer, session, partition)'s records in the final read, in log order: (offset, seq, value)."""
    out: dict[_Key, list[tuple[int, int, str]]] = {}
    for value, places in where.items():
        parsed = parse_value(value)
        if parsed is None:
            continue
        producer, session, _, seq = parsed
        for p, o in places:
            out.setdefault((producer, session, p), []).append((o, seq, value))
    for records in out.values():
        records.sort()
    return out


def _duplicates_and_reorders(where: dict[str, list[tuple[int, int]]], faults: list[Any],
                             count: Callable[[str, str, int], None], add: Callable[[Violation], None],
                             look: _Slices) -> None:
    """idem-no-duplicate and idem-order (violations for idempotent sessions, findings for the others). A reorder is
    a value whose first copy lies after the first copy of a later value of its session and partition."""
    for (producer, session, p), records in sorted(_log_order(where).items()):
        idempotent = PRODUCER_KINDS[producer].idempotent
        seen: dict[str, int] = {}
        top: tuple[int, int, str] | None = None  # the highest sequence so far, in log order
        for offset, seq, value in records:
            if value in seen:
                count(producer, "duplicates", 1)
                if idempotent:
                    shown = look.read(p, offset, value=value)
                    add(Violation("history.idem-no-duplicate", f"{value} (session {session}) is at partition {p} "
                                  f"offsets {seen[value]} and {offset}", shown.t if shown else 0.0, p, offset,
                                  faults_around(faults, look.sends[value].t) if value in look.sends else (),
                                  look.window(look.sends.get(value), look.acks.get(value),
                                              look.read(p, seen[value], value=value), shown)))
                continue
            seen[value] = offset
            if top is not None and seq < top[1]:
                count(producer, "reorders", 1)
                if idempotent:
                    shown = look.read(p, offset, value=value)
                    add(Violation("history.idem-order", f"{value} lies at partition {p} offset {offset}, after "
                                  f"{top[2]} sent later at offset {top[0]} (session {session})",
                                  shown.t if shown else 0.0, p, offset,
                                  faults_around(faults, look.sends[value].t) if value in look.sends else (),
                                  look.window(look.sends.get(value), look.sends.get(top[2]),
                                              look.read(p, top[0], value=top[2]), shown)))
            if top is None or seq > top[1]:
                top = (offset, seq, value)


def _silent_gaps(history: History, where: dict[str, list[tuple[int, int]]], faults: list[Any],
                 add: Callable[[Violation], None], look: _Slices) -> None:
    """idem-no-silent-gap: per idempotent session and partition, every value sent before the last one acknowledged is
    in the log or failed. A value may be missing only where it could lie below the final log start (a
    `delete-records` moved it): after the offset of the session's last earlier value known (acknowledged or read)
    and before the first later one acknowledged. Offsets, not send times, decide: a Java producer's sends are timed
    when its outcomes are read, which can be after a delete that removed them."""
    failed = {f.value for f in history.of(SendFailure)}
    acked: dict[_Key, list[tuple[int, Ack]]] = {}
    known: dict[_Key, list[tuple[int, int]]] = {}  # (seq, offset) of every value with an offset known
    for a in history.of(Ack):
        parsed = parse_value(a.value)
        if parsed is not None and PRODUCER_KINDS[parsed[0]].idempotent:
            acked.setdefault(parsed[:3], []).append((parsed[3], a))
            if a.offset >= 0:
                known.setdefault(parsed[:3], []).append((parsed[3], a.offset))
    for (producer, session, p), records in _log_order(where).items():
        known.setdefault((producer, session, p), []).extend((seq, o) for o, seq, _ in records)
    for key in acked:
        acked[key].sort(key=lambda x: x[0])
    for s in history.of(Send):
        parsed = parse_value(s.value)
        if parsed is None or parsed[:3] not in acked or s.value in where or s.value in failed:
            continue
        fr = history.final.get(parsed[2])
        later = [(seq, a) for seq, a in acked[parsed[:3]] if seq > parsed[3]]
        if fr is None or not fr.complete or not later:
            continue
        seq, a = later[0]
        after = max((o for q, o in known.get(parsed[:3], []) if q < parsed[3]), default=-1)
        before = min((o for q, o in known.get(parsed[:3], []) if q > parsed[3]), default=a.offset)
        if after + 1 < before and after + 1 < fr.start:  # room for it, and that room was deleted
            continue
        add(Violation("history.idem-no-silent-gap", f"{s.value} sent at {s.t:.1f}s is not in the log and did not "
                      f"fail, but {a.value}, sent after it, was acknowledged at partition {a.partition} offset "
                      f"{a.offset}", s.t, parsed[2], None, faults_around(faults, s.t),
                      look.window(s, a, look.read(a.partition, a.offset, value=a.value))))


def _failures(history: History, where: dict[str, list[tuple[int, int]]], faults: list[Any],
              count: Callable[[str, str, int], None], add: Callable[[Violation], None], look: _Slices) -> None:
    """failed-definite-absent, and the indefinite failures that were in fact committed (counted)."""
    for f in history.of(SendFailure):
        parsed = parse_value(f.value)
        places = where.get(f.value, [])
        if definite(f.error):
            if parsed is not None:
                count(parsed[0], "definite_failures", 1)
            for p, o in places:
                add(Violation("history.failed-definite-absent", f"{f.value} failed with {f.error} at {f.t:.1f}s "
                              f"(definite: never appended) but is at partition {p} offset {o}", f.t, p, o,
                              faults_around(faults, f.t),
                              look.window(look.sends.get(f.value), f, look.read(p, o, value=f.value))))
        elif parsed is not None:
            count(parsed[0], "indefinite_failures", 1)
            if places:
                count(parsed[0], "indefinite_committed", 1)


def _per_producer(history: History, count: Callable[[str, str, int], None]) -> None:
    acked = {a.value for a in history.of(Ack)}
    failed = {f.value for f in history.of(SendFailure)}
    sessions: set[tuple[str, int]] = set()
    for s in history.of(Send):
        parsed = parse_value(s.value)
        if parsed is None:
            continue
        sessions.add(parsed[:2])
        count(parsed[0], "sent", 1)
        count(parsed[0], "acknowledged", int(s.value in acked))
        count(parsed[0], "failed", int(s.value in failed and s.value not in acked))
        count(parsed[0], "unresolved", int(s.value not in acked and s.value not in failed))
    for producer, _ in sessions:
        count(producer, "sessions", 1)
    for stall in history.of(Stall):
        count(stall.producer, "stalls", 1)


# The JSON history's format (`history.schema.json`, shipped beside this module): its name and version are written
# into every document. A new version whenever a field changes meaning or a reader could not ignore a new one.
SCHEMA_NAME = "kcheck-chaos-history"
# 5: a fault's shaped links and shape (slow-links, lossy-links); 4: a violation's window is events, not text;
# 3: settings.network, a fault's cuts; 2: quorum events, a fault's
# role, settings.controllers (older documents are valid in the newer versions)
SCHEMA_VERSION = 5
SCHEMA_FILE = "history.schema.json"


def history_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the document `history_document` writes."""
    from importlib.resources import files

    return json.loads(files("kcheck.cluster").joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))


def history_document(settings: dict[str, Any], history: History, verdict: Verdict,
                     extra: dict[str, Any] | None = None) -> str:
    """The whole campaign as JSON (`history.schema.json`): settings, verdict, every event, the final read."""
    doc: dict[str, Any] = {"schema": SCHEMA_NAME, "schema_version": SCHEMA_VERSION, "settings": settings,
                           "verdict": verdict.to_json(), **(extra or {}),
                           "final": [asdict(f) for f in sorted(history.final.values(), key=lambda f: f.partition)],
                           "events": history.to_json()}
    return json.dumps(doc, indent=1, default=str) + "\n"

