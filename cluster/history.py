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
- history.acked-readable: once faults heal, the final read reaches the end of every partition that holds an
  acknowledged record (the partition is online and readable up to its high watermark).
- history.offset-single-value: no offset read with two different values, across the consumer's reads and the
  final read (a log is append-only; a replica truncates only what was never committed, KIP-101).
- history.commits-monotonic: the offsets a consumer commits for a partition never go back
  (the group coordinator stores what it is given: `GroupCoordinator`/`OffsetCommit`; a consumer goes back only
  when its position is reset, e.g. after `OFFSET_OUT_OF_RANGE` once the log was truncated under it).
- history.hw-monotonic: the high watermark a consumer's fetches report for a partition never goes back
  (`Partition.maybeIncrementLeaderHW`: the HW only moves forward on a leader; KIP-101/KIP-207 discuss the
  leader change where a new leader's HW lags).

Records produced with acks=1 are checked the same way but their losses are counted apart (`acks1_lost`), not
violations: Kafka promises an acks=1 record only the leader's copy.
"""

from __future__ import annotations

import json
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


@dataclass(frozen=True)
class FinalRead:
    """What the final read of one partition saw: its log start and end (high watermark) offsets, and whether it
    read every record in between (False: the partition was offline or the read timed out)."""

    partition: int
    start: int
    end: int
    complete: bool
    note: str = ""


Event = Send | Ack | SendFailure | Read | Commit | Fault
_TYPES: dict[str, type] = {"send": Send, "ack": Ack, "send-failure": SendFailure, "read": Read, "commit": Commit,
                           "fault": Fault}
_NAMES = {v: k for k, v in _TYPES.items()}


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
            return [{"type": _NAMES[type(e)], **asdict(e)} for e in self.events]

    @classmethod
    def from_json(cls, events: list[dict[str, Any]], final: list[dict[str, Any]] = ()) -> History:  # type: ignore[assignment]
        h = cls(began=0.0)
        for raw in events:
            raw = dict(raw)
            kind = _TYPES[raw.pop("type")]
            if kind is Fault:
                raw["brokers"] = tuple(raw.get("brokers", ()))
            h.events.append(kind(**raw))
        for f in final:
            h.final[int(f["partition"])] = FinalRead(**f)
        return h


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
}


@dataclass(frozen=True)
class Violation:
    check: str
    message: str
    t: float  # when it happened (or was first observable)
    partition: int | None = None
    offset: int | None = None
    faults_before: tuple[str, ...] = ()  # the faults that preceded it, oldest first, as "12.3s kill 2"


@dataclass
class Verdict:
    violations: list[Violation] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    faults: dict[str, int] = field(default_factory=dict)  # faults injected per kind (phase start)
    acks1_lost: list[dict[str, Any]] = field(default_factory=list)
    healed: bool = True

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
                "checks": {c: {"title": CHECKS[c][0], "source": CHECKS[c][1], "violations": len(vs)}
                           for c, vs in self.by_check().items()},
                "violations": [asdict(v) for v in self.violations], "acks1_lost": self.acks1_lost}


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

    lost_all = _check_acks(history, acks, final_values, faults, verdict, add)
    _check_single_values(reads, faults, add)
    _check_commits(history, faults, add)
    _check_hw(reads, faults, add)
    _count(history, verdict, acks, reads, final_values, faults, lost_all)
    return verdict


def _check_acks(history: History, acks: list[Ack], final_values: dict[tuple[int, int], Any], faults: list[Any],
                verdict: Verdict, add: Callable[[Violation], None]) -> int:
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
                              f"{why}", a.t, a.partition, None, faults_around(faults, a.t)))
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
        if a.acks == "all":
            lost_all += 1
            add(Violation("history.acked-not-lost", f"{a.value} acknowledged (acks=all) at partition {a.partition} "
                          f"offset {a.offset} at {a.t:.1f}s is gone: {what}", a.t, a.partition, a.offset,
                          faults_around(faults, a.t)))
        else:
            verdict.acks1_lost.append({"value": a.value, "partition": a.partition, "offset": a.offset, "t": a.t,
                                       "now": there, "faults": list(faults_around(faults, a.t))})
    return lost_all


def _check_single_values(reads: list[Read], faults: list[Any], add: Callable[[Violation], None]) -> None:
    # offset-single-value: the first value read at each offset, against every later read
    first: dict[tuple[int, int], Read] = {}
    for r in sorted(reads, key=lambda r: (r.final, r.t)):
        seen = first.setdefault((r.partition, r.offset), r)
        if seen.value != r.value:
            where = "the final read" if r.final else f"a read at {r.t:.1f}s"
            add(Violation("history.offset-single-value", f"partition {r.partition} offset {r.offset} read as "
                          f"{seen.value} at {seen.t:.1f}s and as {r.value} in {where}", r.t, r.partition, r.offset,
                          faults_around(faults, seen.t)))
            first[(r.partition, r.offset)] = r  # report each change once


def _check_commits(history: History, faults: list[Any], add: Callable[[Violation], None]) -> None:
    # commits-monotonic
    last_commit: dict[int, Commit] = {}
    for c in sorted(history.of(Commit), key=lambda c: c.t):
        if c.error is not None:
            continue
        prev = last_commit.get(c.partition)
        if prev is not None and c.offset < prev.offset:
            add(Violation("history.commits-monotonic", f"partition {c.partition}: committed offset {c.offset} at "
                          f"{c.t:.1f}s after {prev.offset} at {prev.t:.1f}s", c.t, c.partition, c.offset,
                          faults_around(faults, c.t, after=0, before=3)))
        last_commit[c.partition] = c


def _check_hw(reads: list[Read], faults: list[Any], add: Callable[[Violation], None]) -> None:
    # hw-monotonic: the consumer's fetches only (the final read is a new client)
    last_hw: dict[int, Read] = {}
    for r in sorted((r for r in reads if not r.final and r.hw is not None), key=lambda r: r.t):
        before = last_hw.get(r.partition)
        if before is not None and before.hw is not None and r.hw is not None and r.hw < before.hw:
            add(Violation("history.hw-monotonic", f"partition {r.partition}: high watermark {r.hw} at {r.t:.1f}s "
                          f"after {before.hw} at {before.t:.1f}s", r.t, r.partition, None,
                          faults_around(faults, r.t, after=0, before=3)))
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


def history_document(settings: dict[str, Any], history: History, verdict: Verdict,
                     extra: dict[str, Any] | None = None) -> str:
    """The whole campaign as JSON: settings, verdict, every event, the final read."""
    doc: dict[str, Any] = {"settings": settings, "verdict": verdict.to_json(), **(extra or {}),
                           "final": [asdict(f) for f in sorted(history.final.values(), key=lambda f: f.partition)],
                           "events": history.to_json()}
    return json.dumps(doc, indent=1, default=str) + "\n"

