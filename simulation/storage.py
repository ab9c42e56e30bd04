"""`kcheck log`: one topic partition's storage simulated step by step on the storage reference, with a clock.

A topic configuration (Kafka's names and defaults, as `kafka-configs --add-config` or a properties file takes
them) and a workload (produce rate, record size, key space, tombstone share, duration, a lagging consumer, a seed)
drive the bit-exact reference, nothing re-implemented here:

- appends and rolls: `kcheck.reference.log_segment` (`SegmentedLog.append`: `LogSegment.shouldRoll`, the sparse
  offset and time indexes every index.interval.bytes, `onBecomeInactiveSegment` at a roll), one segment.jitter.ms
  draw per segment as `LogConfig.randomSegmentJitter` does, and, for a compacted topic, rolls by
  `LogConfig.maxSegmentMs` (min of segment.ms and max.compaction.lag.ms);
- retention: `kcheck.reference.log_retention.retention_pass` (`UnifiedLog.deleteOldSegments`: log start offset,
  retention.bytes, retention.ms, in Kafka's order) every log.retention.check.interval.ms;
- the cleaner: `kcheck.reference.log_cleaner` (`LogCleanerManager.grabFilthiestCompactedLog`, `Cleaner.doClean`,
  the SkimpyOffsetMap bound of log.cleaner.dedupe.buffer.size, KIP-534 delete horizons), tried every step and,
  when there is nothing to clean, again after log.cleaner.backoff.ms (`LogCleaner.CleanerThread`). A cleaned
  segment gets its indexes the way `Cleaner.cleanSegments` writes them: `LogSegment.append` of the retained
  batches, then `onBecomeInactiveSegment`.

The partition has one replica in sync (the high watermark is the log end offset). After every step the log's view
is checked against every `log.*` invariant (`kcheck.invariants.log_storage.check_log`), a retention run against
`check_retention` and a cleaner pass against `check_compaction`; and the consumer's view: a consumer that reads
`consumer.lag.ms` behind the clock (or `consumer.lag.records` behind the high watermark) keeps a table of each
key's last value and drops a key on its tombstone. Once it has read past a key's latest record it must hold that
value, or no value when it is a tombstone (`consumer.sees-latest`; Kafka's documented guarantee for compacted
topics: a consumer that reaches the head within delete.retention.ms sees every tombstone). A consumer lagging
more than delete.retention.ms may find the tombstone cleaned away and keep the stale value: the tombstone made
invisible. Keys whose latest record retention deleted before the consumer reached it (cleanup.policy delete, an
OffsetOutOfRange reset to the log start, auto.offset.reset=earliest) are promised nothing and not checked.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from kcheck.inputs.formats import InputError
from kcheck.invariants.log_storage import check_compaction, check_log, check_retention
from kcheck.invariants.registry import Violation
from kcheck.model.log_view import LogRecord, LogSegmentView, LogView
from kcheck.reference import log_cleaner as lc
from kcheck.reference import log_retention as lr
from kcheck.reference import log_segment as ls

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
CONSUMER_INVARIANT = "consumer.sees-latest"


class ConfigError(ValueError):
    """A bad topic configuration or workload entry: `key` names it, str(e) is one line."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


# ---- the topic configuration -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicConfig:
    """The topic (and the few broker) configs a partition's storage reads, with Kafka's defaults (LogConfig,
    ServerLogConfigs, CleanerConfig)."""

    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_jitter_ms: int = 0
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10 * 1024 * 1024
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    cleanup_policy: tuple[str, ...] = ("delete",)
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    delete_retention_ms: int = 24 * 3600 * 1000
    # broker configs: the cleaner's offset map (per cleaner thread), its back-off, the retention check's period
    dedupe_buffer_size: int = 128 * 1024 * 1024
    cleaner_threads: int = 1
    cleaner_load_factor: float = 0.9
    cleaner_backoff_ms: int = 15_000
    retention_check_interval_ms: int = 300_000

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def max_segment_ms(self) -> int:
        """LogConfig.maxSegmentMs: a compacted topic also rolls by max.compaction.lag.ms."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    def segment_config(self, jitter_ms: int = 0) -> ls.SegmentConfig:
        return ls.SegmentConfig(self.segment_bytes, self.max_segment_ms, jitter_ms, self.index_interval_bytes,
                                self.segment_index_bytes)

    def retention_config(self) -> lr.RetentionConfig:
        return lr.RetentionConfig(self.retention_ms, self.retention_bytes, self.cleanup_policy)

    def cleaner_config(self) -> lc.CleanerConfig:
        # LogCleaner: each thread's SkimpyOffsetMap gets dedupe.buffer.size / threads, at most Int.MaxValue
        return lc.CleanerConfig(self.segment_bytes, self.segment_ms, self.delete_retention_ms,
                                self.min_compaction_lag_ms, self.max_compaction_lag_ms, self.min_cleanable_dirty_ratio,
                                min(self.dedupe_buffer_size // self.cleaner_threads, INT_MAX),
                                self.cleaner_load_factor)

    def as_kafka(self) -> dict[str, Any]:
        """Kafka's names and this config's values."""
        out: dict[str, Any] = {}
        for name, (attr, _, _) in CONFIG_KEYS.items():
            v = getattr(self, attr)
            out[name] = ",".join(v) if isinstance(v, tuple) else v
        return out

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str]], base: TopicConfig | None = None) -> TopicConfig:
        return cast(TopicConfig, _from_pairs(base or cls(), pairs, CONFIG_KEYS, "topic config"))


_INT_RE = re.compile(r"[+-]?[0-9]{1,30}")  # ASCII digits only: int() also takes '١٢' and '1_0'
_FLOAT_RE = re.compile(r"[+-]?([0-9]{1,30}(\.[0-9]{0,30})?|\.[0-9]{1,30})([eE][+-]?[0-9]{1,3})?")


def _shown(text: str) -> str:
    from kcheck.inputs import formats
    return formats.shown(text, 40)


def _int(lo: int | None = None, hi: int = LONG_MAX) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not _INT_RE.fullmatch(text.strip()):
            raise ValueError(f"'{_shown(text)}' is not an integer")
        v = int(text.strip())
        if lo is not None and v < lo:
            raise ValueError(f"{v} is below the least allowed value {lo}")
        if v > hi:
            raise ValueError(f"{v} is above the largest allowed value {hi}")
        return v
    return parse


def _float(lo: float, hi: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        if not _FLOAT_RE.fullmatch(text.strip()):
            raise ValueError(f"'{_shown(text)}' is not a number")
        v = float(text.strip())
        if not (lo <= v <= hi) or math.isnan(v):
            raise ValueError(f"{v} is not in [{lo}, {hi}]")
        return v
    return parse


def _policy(text: str) -> tuple[str, ...]:
    items = tuple(p.strip() for p in text.strip().strip("[]").split(",") if p.strip())
    bad = [p for p in items if p not in ("compact", "delete")]
    if bad:
        raise ValueError(f"'{bad[0]}' is not compact or delete")
    if not items:
        raise ValueError("give compact, delete or both")  # the empty policy (4.1+) keeps everything: not simulated
    return tuple(dict.fromkeys(sorted(items)))


_Parser = Callable[[str], Any]
# Kafka name -> (attribute, parser, what it is). Bounds are LogConfig's (atLeast, between).
CONFIG_KEYS: dict[str, tuple[str, _Parser, str]] = {
    "segment.bytes": ("segment_bytes", _int(14, INT_MAX), "bytes of a segment before a roll"),
    "segment.ms": ("segment_ms", _int(1), "age of a segment's first record before a roll"),
    "segment.jitter.ms": ("segment_jitter_ms", _int(0), "random slack taken off segment.ms per segment"),
    "index.interval.bytes": ("index_interval_bytes", _int(0, INT_MAX), "bytes between two index entries"),
    "segment.index.bytes": ("segment_index_bytes", _int(ls.TIME_ENTRY, INT_MAX), "bytes of each index file"),
    "retention.ms": ("retention_ms", _int(-1), "age after which a segment is deleted (-1: never)"),
    "retention.bytes": ("retention_bytes", _int(-LONG_MAX - 1), "log size above which the oldest segments go "
                                                                 "(negative: no limit)"),
    "cleanup.policy": ("cleanup_policy", _policy, "delete, compact or [compact,delete]"),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", _float(0.0, 1.0),
                                  "dirty share above which the cleaner takes the log"),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", _int(0), "records younger than this are not compacted"),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", _int(1), "records older than this force a cleaning"),
    "delete.retention.ms": ("delete_retention_ms", _int(0), "how long a cleaned tombstone is kept"),
    "log.cleaner.dedupe.buffer.size": ("dedupe_buffer_size", _int(lc.BYTES_PER_ENTRY),
                                       "the cleaners' offset map memory (24 bytes a key)"),
    "log.cleaner.threads": ("cleaner_threads", _int(1, INT_MAX), "cleaner threads sharing the dedupe buffer"),
    "log.cleaner.io.buffer.load.factor": ("cleaner_load_factor", _float(0.0, 1.0), "offset map fill limit"),
    "log.cleaner.backoff.ms": ("cleaner_backoff_ms", _int(0), "cleaner's sleep when nothing is cleanable"),
    "log.retention.check.interval.ms": ("retention_check_interval_ms", _int(1), "period of the retention run"),
}


# ---- the workload -------------------------------------------------------------------------------------------------

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration(text: str) -> int:
    """'1500', '1500ms', '90s', '10m', '2h', '1d' -> milliseconds."""
    m = re.fullmatch(r"\s*([0-9]{1,19}(?:\.[0-9]{1,19})?)\s*(ms|s|m|min|h|d)?\s*", text)
    if not m:
        raise ValueError(f"'{_shown(text)}' is not a duration (e.g. 500ms, 90s, 10m, 2h)")
    v = int(round(float(m[1]) * _UNITS[m[2] or "ms"]))
    if v > LONG_MAX:
        raise ValueError(f"'{_shown(text)}' is above Java's long range in milliseconds")
    return v


def _duration(lo: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        v = parse_duration(text)
        if v < lo:
            raise ValueError(f"{v} ms is below {lo} ms")
        return v
    return parse


def _lag(text: str) -> int | None:
    return None if text.strip().lower() in ("none", "off", "") else parse_duration(text)


def _lag_records(text: str) -> int | None:
    return None if text.strip().lower() in ("none", "off", "") else _int(0)(text)


@dataclass(frozen=True)
class Workload:
    """What producers and a consumer do: `rate` records a second, each a value of `record_bytes` bytes under one of
    `keys` keys (fixed-width names, drawn uniformly) or a tombstone with probability `tombstone_share`; one batch per
    step of `step_ms`, every record of it stamped with the step's clock (CreateTime); for `duration_ms`. The consumer
    reads `consumer_lag_ms` behind the clock, or `consumer_lag_records` behind the high watermark (None: no
    consumer)."""

    rate: float = 10.0
    record_bytes: int = 100
    keys: int = 100
    tombstone_share: float = 0.0
    duration_ms: int = 600_000
    step_ms: int = 1000
    consumer_lag_ms: int | None = 0
    consumer_lag_records: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.consumer_lag_ms is not None and self.consumer_lag_records is not None:
            raise ConfigError("consumer.lag.records", "give consumer.lag.ms or consumer.lag.records, not both")

    @property
    def steps(self) -> int:
        return -(-self.duration_ms // self.step_ms)

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, attr) for name, (attr, _, _) in WORKLOAD_KEYS.items()}

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str]], base: Workload | None = None) -> Workload:
        return cast(Workload, _from_pairs(base or cls(), pairs, WORKLOAD_KEYS, "workload"))


WORKLOAD_KEYS: dict[str, tuple[str, _Parser, str]] = {
    "rate": ("rate", _float(0.0, 1e6), "records produced a second"),
    "record.bytes": ("record_bytes", _int(0, 1 << 20), "bytes of a record's value"),
    "keys": ("keys", _int(1, 10_000_000), "distinct keys"),
    "tombstone.share": ("tombstone_share", _float(0.0, 1.0), "share of records that are tombstones"),
    "duration": ("duration_ms", _duration(1), "simulated time (500ms, 90s, 10m, 2h)"),
    "step": ("step_ms", _duration(1), "clock step: one produce batch per step"),
    "consumer.lag.ms": ("consumer_lag_ms", _lag, "the consumer reads this far behind the clock (none: no consumer)"),
    "consumer.lag.records": ("consumer_lag_records", _lag_records, "or this many records behind the high watermark"),
    "seed": ("seed", _int(0), "random seed (keys, tombstones, segment jitter)"),
}


def _from_pairs(base: Any, pairs: Iterable[tuple[str, str]], keys: Mapping[str, tuple[str, _Parser, str]],
                what: str) -> Any:
    changes: dict[str, Any] = {}
    for key, text in pairs:
        if key not in keys:
            raise ConfigError(key, f"unknown {what} key (known: {', '.join(keys)})")
        attr, parse, _ = keys[key]
        try:
            changes[attr] = parse(text)
        except ValueError as e:
            raise ConfigError(key, str(e)) from None
    if "consumer_lag_records" in changes and changes["consumer_lag_records"] is not None \
            and "consumer_lag_ms" not in changes:
        changes["consumer_lag_ms"] = None  # a record lag replaces the default time lag
    try:
        return dataclasses.replace(base, **changes)
    except ConfigError:
        raise
    except ValueError as e:
        raise ConfigError(next(iter(k for k, _ in pairs), what), str(e)) from None


def split_assignments(text: str) -> list[tuple[str, str]]:
    """'a=1,b=[x,y]' (kafka-configs --add-config) -> [('a', '1'), ('b', 'x,y')]: commas inside [] stay."""
    out: list[tuple[str, str]] = []
    for part in re.findall(r"(?:[^,\[]|\[[^\]]*\])+", text):
        part = part.strip()
        if not part:
            continue
        key, eq, value = part.partition("=")
        if not eq:
            raise ConfigError(key.strip(), "expected KEY=VALUE")
        out.append((key.strip(), value.strip().strip("[]") if value.strip().startswith("[") else value.strip()))
    return out


def read_properties(text: str, source: str) -> list[tuple[str, str]]:
    """A Java properties file's KEY=VALUE (or KEY: VALUE) lines; '#' and '!' comments."""
    out: list[tuple[str, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s[0] in "#!":
            continue
        m = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", s)
        if not m:
            raise InputError(source, f"expected KEY=VALUE, not {s!r}", n)
        out.append((m[1], m[2].strip().strip("[]") if m[2].strip().startswith("[") else m[2].strip()))
    return out


# ---- the simulation -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    step: int
    time_ms: int
    kind: str  # append, roll, index, retention, clean, consume, reset, refused
    segment: int | None
    detail: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "time_ms": self.time_ms, "event": self.kind, "segment": self.segment,
                "detail": self.detail, **({"data": dict(self.data)} if self.data else {})}


@dataclass(frozen=True)
class SimViolation:
    step: int
    time_ms: int
    invariant: str
    segment: int | None
    offset: int | None
    key: str | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Simulation:
    config: TopicConfig
    workload: Workload
    events: list[Event]
    violations: list[SimViolation]
    summary: dict[str, Any]
    view: LogView  # the log at the end

    @property
    def ok(self) -> bool:
        return not self.violations

    def first(self, invariant: str) -> SimViolation | None:
        return next((v for v in self.violations if v.invariant == invariant), None)


class _KeyedBatch(lc.Batch):
    """A cleaner batch handed to the segment reference, which reads only offsets, sizes and the max timestamp of a
    batch (its own `Batch` carries key and value lengths, this one the keys and values the cleaner needs)."""

    @property
    def first_offset(self) -> int:
        return self.base_offset


def _batches(seg: ls.LogSegment) -> list[lc.Batch]:
    return [cast(lc.Batch, sb.batch) for sb in seg.batches]


_WHERE = re.compile(r"segment (-?\d+)|offset (-?\d+)")


class _Sim:
    def __init__(self, cfg: TopicConfig, wl: Workload, check: bool, record_steps: bool) -> None:
        self.cfg, self.wl, self.check, self.record_steps = cfg, wl, check, record_steps
        self.rng = random.Random(wl.seed)
        self.jitter_bound = ls.jitter_bound(cfg.segment_ms, cfg.segment_jitter_ms)
        self.log = ls.SegmentedLog(cfg.segment_config(self._jitter()), 0)
        self.mtime: dict[int, int] = {0: 0}  # base offset -> the segment file's last modification (ms)
        self.log_start = 0
        self.checkpoint: int | None = None  # the cleaner checkpoint (None: never cleaned)
        self.ccfg = cfg.cleaner_config()
        self.rcfg = cfg.retention_config()
        self.next_retention = cfg.retention_check_interval_ms
        self.next_clean = 0
        self.events: list[Event] = []
        self.violations: list[SimViolation] = []
        self.reported: set[tuple[str, str, int | None, str | None]] = set()
        self.width = len(str(wl.keys - 1))
        self.value = "x" * wl.record_bytes
        self.latest: dict[str, tuple[int, bool]] = {}  # key -> (offset, tombstone) of its last record produced
        self.step_ends: list[int] = []  # per step: the log end offset after it
        self.step_times: list[int] = []
        self.carry = 0.0
        # the consumer: position, table key -> offset of the value it holds, the lowest offset promised to it
        self.pos = 0
        self.table: dict[str, int] = {}
        self.floor = 0
        self.view_cache: dict[tuple[int, int, int, int, int], tuple[ls.LogSegment, LogSegmentView]] = {}
        self.counts: dict[str, int] = {}
        self.removed_tombstones = 0
        self.kept_tombstones = 0
        self.step = 0
        self.now = 0

    # -- helpers --
    def _jitter(self) -> int:
        # LogConfig.randomSegmentJitter: abs(nextInt()) % min(segment.jitter.ms, segment.ms), drawn per segment
        return self.rng.randrange(self.jitter_bound) if self.jitter_bound else 0

    def _count(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n

    def _event(self, kind: str, segment: int | None, detail: str, **data: Any) -> None:
        self._count(kind)
        if self.record_steps:
            self.events.append(Event(self.step, self.now, kind, segment, detail, data))

    def _violate(self, invariant: str, segment: int | None, offset: int | None, key: str | None,
                 message: str) -> None:
        mark = (invariant, message if offset is None else "", offset, key)
        if mark in self.reported:
            return
        self.reported.add(mark)
        self.violations.append(SimViolation(self.step, self.now, invariant, segment, offset, key, message))

    @property
    def leo(self) -> int:
        return self.log.log_end_offset

    def _segment_of(self, offset: int) -> int | None:
        bases = [s.base_offset for s in self.log.segments]
        i = bisect.bisect_right(bases, offset) - 1
        return bases[i] if i >= 0 else None

    def _seg_view(self, seg: ls.LogSegment, last: bool) -> LogSegmentView:
        # keyed by the object (its id alone may be reused once a deleted segment is collected) and what changes
        k = (id(seg), seg.size, seg.offset_index.count, seg.time_index.count, int(last))
        cached = self.view_cache.get(k)
        if cached is not None and cached[0] is seg:
            return cached[1]
        batches = _batches(seg)
        known = all(b.records for b in batches)
        recs: list[LogRecord] = []
        positions: list[int] = []
        for sb, b in zip(seg.batches, batches, strict=True):
            for i, r in enumerate(b.records):
                size = lc.record_size(r.offset - b.base_offset, r.timestamp - b.base_timestamp, r.key, r.value)
                recs.append(LogRecord(r.offset, r.key, r.value, r.timestamp,
                                      (size + (lc.BATCH_OVERHEAD if i == 0 else 0)) if known else 0,
                                      b.delete_horizon))
                positions.append(sb.position)
        v = LogSegmentView(seg.base_offset, tuple(recs), seg.size, tuple(seg.offset_index.entries),
                           tuple(seg.time_index.entries), tuple(positions))
        self.view_cache[k] = (seg, v)
        return v

    def view(self) -> LogView:
        segs = self.log.segments
        live = {id(s) for s in segs}
        self.view_cache = {k: v for k, v in self.view_cache.items() if k[0] in live}
        return LogView("topic-0", tuple(self._seg_view(s, i == len(segs) - 1) for i, s in enumerate(segs)),
                       self.log_start, self.leo, self.cfg.compact)

    def _report(self, view: LogView, found: Iterable[Violation]) -> None:
        for x in found:
            seg = off = None
            for m in _WHERE.finditer(x.where):
                if m[1] is not None:
                    seg = int(m[1])
                else:
                    off = int(m[2])
            detail_off = x.detail.get("offset") if isinstance(x.detail, Mapping) else None
            off = off if off is not None else (detail_off if isinstance(detail_off, int) else None)
            key = x.detail.get("key") if isinstance(x.detail, Mapping) else None
            if off is not None:
                if key is None:
                    key = next((r.key for s in view.segments for r in s.records if r.offset == off), None)
                if seg is None:
                    seg = self._segment_of(off)
            self._violate(x.invariant, seg, off, key if isinstance(key, str) else None, x.message)

    # -- the step's parts --
    def produce(self) -> None:
        self.carry += self.wl.rate * self.wl.step_ms / 1000.0
        n = int(self.carry + 1e-9)
        self.carry -= n
        if n == 0:
            return
        base = self.leo
        recs = []
        tomb = 0
        for i in range(n):
            key = f"k{self.rng.randrange(self.wl.keys):0{self.width}d}"
            dead = self.wl.tombstone_share > 0 and self.rng.random() < self.wl.tombstone_share
            tomb += dead
            recs.append(lc.Record(base + i, key, None if dead else self.value, self.now))
        batch = _KeyedBatch(base, base + n - 1, tuple(recs), None, self.now)
        active = self.log.active
        reason = self._roll_reason(active, batch)
        before = (len(self.log.segments), id(active), active.offset_index.count, active.time_index.count)
        try:
            self.log.append(ls.Append(self.now, (cast(ls.Batch, batch),)))
        except ls.StorageError as e:
            self._event("refused", active.base_offset, f"{n} record(s) refused: {e}", records=n)
            return
        new = self.log.active
        if id(new) != before[1]:
            new.config = self.cfg.segment_config(self._jitter())  # this segment's own jitter draw
            kind = "replaced the empty active segment" if len(self.log.segments) == before[0] else "rolled"
            self.mtime[new.base_offset] = self.now
            self._event("roll", new.base_offset, f"{kind} segment {active.base_offset} ({active.size} B) at offset "
                        f"{new.base_offset}: {reason or 'a roll condition of LogSegment.shouldRoll'}",
                        previous=active.base_offset, reason=reason)
            before = (0, 0, 0, 0)
        for r in recs:
            self.latest[r.key] = (r.offset, r.value is None)
        self.mtime[new.base_offset] = self.now
        added = (new.offset_index.count - before[2], new.time_index.count - before[3])
        self._count("records", n)
        self._count("tombstones", tomb)
        self._event("append", new.base_offset, f"offsets {base}..{base + n - 1}: {n} record(s) ({tomb} tombstone(s)), "
                    f"{batch.size} B; segment {new.size} B", records=n, tombstones=tomb, bytes=batch.size)
        if added != (0, 0):
            off = new.offset_index.entries[-1] if new.offset_index.count else None
            tim = new.time_index.entries[-1] if new.time_index.count else None
            self._event("index", new.base_offset, f"+{added[0]} offset index entr{'y' if added[0] == 1 else 'ies'}"
                        f" (last {off}), +{added[1]} time index (last {tim}); every index.interval.bytes="
                        f"{self.cfg.index_interval_bytes}", offset_entries=added[0], time_entries=added[1])

    def _roll_reason(self, active: ls.LogSegment, batch: lc.Batch) -> str:
        """Which of LogSegment.shouldRoll's conditions holds (the decision itself is the reference's)."""
        cfg, size = self.cfg, batch.size
        if active.size > cfg.segment_bytes - size:
            return f"segment.bytes: {active.size} + {size} B > {cfg.segment_bytes}"
        if active.size > 0:
            waited = active.time_waited_for_roll(self.now, batch.max_timestamp)
            limit = cfg.max_segment_ms - active.config.jitter_ms
            if waited > limit:
                name = "max.compaction.lag.ms" if cfg.max_segment_ms < cfg.segment_ms else "segment.ms"
                jit = f" - jitter {active.config.jitter_ms}" if active.config.jitter_ms else ""
                return f"{name}: first batch {waited} ms old > {cfg.max_segment_ms}{jit} ms"
        if active.offset_index.is_full():
            return f"segment.index.bytes: offset index full ({active.offset_index.count} entries)"
        if active.time_index.is_full():
            return f"segment.index.bytes: time index full ({active.time_index.count} entries)"
        if not active.offset_index.can_append_offset(batch.last_offset):
            return "offset overflow: relative offset past 2^31-1"
        return ""

    def consume(self) -> None:
        wl = self.wl
        hw = self.leo
        if wl.consumer_lag_records is not None:
            target = max(self.pos, hw - wl.consumer_lag_records)
        elif wl.consumer_lag_ms is not None:
            # every offset produced at or before now - lag (step i produced up to step_ends[i])
            i = bisect.bisect_right(self.step_times, self.now - wl.consumer_lag_ms) - 1
            target = max(self.pos, self.step_ends[i] if i >= 0 else 0)
        else:
            return
        target = min(target, hw)
        if self.pos < self.log_start:  # OffsetOutOfRange: auto.offset.reset=earliest
            self._event("reset", self._segment_of(self.log_start), f"consumer position {self.pos} below the log "
                        f"start offset {self.log_start}: reset to it (auto.offset.reset=earliest)",
                        position=self.pos, log_start=self.log_start)
            self.floor = self.pos = self.log_start
            target = max(target, self.pos)
        if target <= self.pos:
            return
        read = 0
        segs = self.log.segments
        for i, seg in enumerate(segs):
            if i + 1 < len(segs) and segs[i + 1].base_offset <= self.pos:
                continue
            if seg.base_offset >= target:
                break
            for b in _batches(seg):
                if b.last_offset < self.pos:
                    continue
                for r in b.records:
                    if self.pos <= r.offset < target:
                        read += 1
                        if r.value is None:
                            self.table.pop(r.key, None)
                        else:
                            self.table[r.key] = r.offset
        start, self.pos = self.pos, target
        self._event("consume", None, f"consumer read offsets {start}..{target - 1} ({read} record(s)), "
                    f"lag {hw - target} record(s)", start=start, end=target, read=read)

    def check_consumer(self) -> None:
        if not self.cfg.compact or (self.wl.consumer_lag_ms is None and self.wl.consumer_lag_records is None):
            return
        lag, d = self.wl.consumer_lag_ms, self.cfg.delete_retention_ms
        if lag is None:
            promise = f"a consumer {self.wl.consumer_lag_records} records behind: Kafka promises it nothing in time"
        elif lag > d:
            promise = f"it lags {lag} ms > delete.retention.ms={d}: Kafka does not promise it the tombstones"
        else:
            promise = f"it lags {lag} ms <= delete.retention.ms={d}: Kafka promises it every tombstone"
        for key, (off, dead) in self.latest.items():
            if off >= self.pos or off < self.floor:
                continue
            held = self.table.get(key)
            if dead and held is not None:
                self._violate(CONSUMER_INVARIANT, self._segment_of(off), off, key,
                              f"the consumer read past offset {off}, key {key}'s tombstone, but still holds the value "
                              f"of offset {held}: the tombstone was cleaned away before it got there ({promise})")
            elif not dead and held != off:
                self._violate(CONSUMER_INVARIANT, self._segment_of(off), off, key,
                              f"the consumer read past offset {off}, key {key}'s latest value, but holds "
                              f"{'nothing' if held is None else f'offset {held}'}")

    def retention(self) -> None:
        if self.now < self.next_retention:
            return
        self.next_retention += self.cfg.retention_check_interval_ms
        segs = self.log.segments
        summaries = tuple(lr.SegmentSummary(
            s.base_offset, s.size, max([-1, *(b.max_timestamp for b in _batches(s))]),
            segs[i + 1].base_offset if i + 1 < len(segs) else self.leo, self.mtime.get(s.base_offset, self.now))
            for i, s in enumerate(segs))
        state = lr.LogState(summaries, self.log_start, self.leo)
        result = lr.retention_pass(state, self.rcfg, self.now)
        if not result.deleted:
            return
        before = self.view() if self.check else None
        mine = {s.base_offset: s for s in segs}
        gone = {d.segment.base_offset for d in result.deleted}
        new_segs: list[ls.LogSegment] = []
        for summary in result.state.segments:
            s = mine.get(summary.base_offset)
            if s is None or summary.base_offset in gone:
                s = ls.LogSegment(summary.base_offset, self.cfg.segment_config(self._jitter()), self.now)
                self.mtime[summary.base_offset] = self.now
            new_segs.append(s)
        if result.rolled and segs[-1] in new_segs:
            segs[-1].on_become_inactive()
        self.log.segments = new_segs
        self.log_start = result.state.log_start_offset
        for d in result.deleted:
            if d.segment.base_offset not in mine or mine[d.segment.base_offset] not in new_segs:
                self.mtime.pop(d.segment.base_offset, None)
            self._count(f"deleted by {d.reason}")
            why = {"log-start-offset": f"below the log start offset {self.log_start}",
                   "retention-size": f"retention.bytes={self.cfg.retention_bytes} (log was {state.size} B)",
                   "retention-ms": f"retention.ms={self.cfg.retention_ms}: newest record {self.now - d.segment.retention_timestamp()} ms old"}[d.reason]  # noqa: E501
            self._event("retention", d.segment.base_offset, f"deleted segment {d.segment.base_offset} "
                        f"(offsets {d.segment.base_offset}..{d.segment.next_offset - 1}, {d.segment.size} B): {why}",
                        reason=d.reason, bytes=d.segment.size)
        if result.rolled:
            self._event("roll", self.log.active.base_offset, f"rolled a new active segment at {self.leo}: retention "
                        "deleted every segment", reason="retention")
        self._event("log-start", None, f"log start offset now {self.log_start}", log_start=self.log_start)
        if before is not None:
            after = self.view()
            self._report(after, check_retention(before, after))

    def clean(self) -> None:
        if not self.cfg.compact or self.now < self.next_clean:
            return
        segs = self.log.segments
        csegs = []
        for s in segs:
            cs = lc.Segment(s.base_offset, list(_batches(s)))
            cs.max_ts = max([-1, *(b.max_timestamp for b in cs.batches)])
            csegs.append(cs)
        clog = lc.CleanerLog(csegs, self.leo, self.log_start, self.checkpoint)
        choice, standings = lc.choose([clog], self.ccfg, self.now)
        self.checkpoint = clog.checkpoint
        if choice is None:
            st = standings[0]
            self.next_clean = self.now + self.cfg.cleaner_backoff_ms
            if st.total_bytes and st.cleanable_bytes:
                self._count("cleaner skipped")
            return
        before = self.view() if self.check else None
        m, _, full = lc.build_offset_map(clog, choice.first_dirty, choice.first_uncleanable,
                                              self.ccfg.map_capacity)
        old = {id(s): s for s in csegs}
        by_offset_before = {r.offset: r for s in csegs for b in s.batches for r in b.records}
        horizon_of = {r.offset: b.delete_horizon for s in csegs for b in s.batches for r in b.records}
        bytes_before = sum(s.size for s in segs)
        result = lc.clean_pass(clog, choice, self.ccfg, self.now)
        self.checkpoint = clog.checkpoint
        mine = {s.base_offset: s for s in segs}
        new_segs: list[ls.LogSegment] = []
        for cs in clog.segments:
            if id(cs) in old:
                new_segs.append(mine[cs.base_offset])
                continue
            # Cleaner.cleanSegments: the retained batches appended to a new segment, then its indexes trimmed
            seg = ls.LogSegment(cs.base_offset, self.cfg.segment_config(0), self.now)
            for b in cs.batches:
                seg.append(b.last_offset, [cast(ls.Batch, b)])
            seg.on_become_inactive()
            group = next(g for g in result.groups if g[0] == cs.base_offset)
            self.mtime[cs.base_offset] = max(self.mtime.get(g, 0) for g in group)
            for g in group[1:]:
                self.mtime.pop(g, None)
            new_segs.append(seg)
        self.log.segments = new_segs
        after_offsets = {r.offset: r for s in clog.segments for b in s.batches for r in b.records}
        removed = [r for off, r in by_offset_before.items() if off not in after_offsets]
        last_of_key: dict[str, int] = {}
        for off, r in by_offset_before.items():
            last_of_key[r.key] = max(off, last_of_key.get(r.key, -1))
        # a tombstone that was its key's latest record went because its delete horizon passed; others were superseded
        dropped = [r for r in removed if r.value is None and last_of_key[r.key] == r.offset]
        horizons = [b for s in clog.segments for b in s.batches
                    if b.delete_horizon is not None and b.delete_horizon == self.now + self.cfg.delete_retention_ms
                    and any(r.value is None for r in b.records)]
        kept_new = sum(sum(r.value is None for r in b.records) for b in horizons)
        self.removed_tombstones += len(dropped)
        self.kept_tombstones += kept_new
        self._count("cleaner passes")
        groups = "; ".join(",".join(map(str, g)) for g in result.groups)
        self._event("clean", self._segment_of(choice.first_dirty),
                    f"{choice.why(self.ccfg)}; dirty {choice.first_dirty}..{choice.first_uncleanable - 1}; offset map "
                    f"{len(m)}/{self.ccfg.map_capacity} keys{' FULL: cleaned up to ' + str(result.end_offset) if full else ''}"  # noqa: E501
                    f"; segments [{groups}] -> {len(result.groups)}; removed {len(removed)} record(s) "
                    f"({len(dropped)} expired tombstone(s) dropped), {kept_new} tombstone(s) kept until "
                    f"{self.now + self.cfg.delete_retention_ms}; {bytes_before} -> {sum(s.size for s in new_segs)} B; "
                    f"checkpoint {result.end_offset}",
                    ratio=choice.ratio, first_dirty=choice.first_dirty, first_uncleanable=choice.first_uncleanable,
                    map_keys=len(m), map_capacity=self.ccfg.map_capacity, map_full=full, removed=len(removed),
                    tombstones_dropped=len(dropped), tombstones_kept=kept_new, groups=[list(g) for g in result.groups],
                    checkpoint=result.end_offset)
        for r in dropped:
            self._event("tombstone", self._segment_of(r.offset), f"tombstone of {r.key} at offset {r.offset} "
                        f"(produced at {r.timestamp}) dropped: its delete horizon {horizon_of[r.offset]} passed "
                        f"(delete.retention.ms={self.cfg.delete_retention_ms})", offset=r.offset, key=r.key)
        if before is not None:
            after = self.view()
            self._report(after, check_compaction(before, after, now_ms=self.now))

    # -- the loop --
    def run(self) -> None:
        wl = self.wl
        for step in range(wl.steps + 1):
            self.step, self.now = step, step * wl.step_ms
            if step < wl.steps:
                self.produce()
            self.step_ends.append(self.leo)
            self.step_times.append(self.now)
            self.consume()
            self.retention()
            self.clean()
            if self.check:
                view = self.view()
                self._report(view, check_log(view).violations)
                self.check_consumer()

    def summary(self) -> dict[str, Any]:
        segs = self.log.segments
        return {
            "steps": self.wl.steps, "simulated_ms": self.wl.steps * self.wl.step_ms,
            "records_produced": self.counts.get("records", 0), "tombstones_produced": self.counts.get("tombstones", 0),
            "rolls": self.counts.get("roll", 0), "appends_refused": self.counts.get("refused", 0),
            "segments_deleted": {r: self.counts.get(f"deleted by {r}", 0) for r in lr.REASONS},
            "cleaner_passes": self.counts.get("cleaner passes", 0),
            "tombstones_dropped": self.removed_tombstones, "tombstones_kept_by_horizon": self.kept_tombstones,
            "segments": [s.base_offset for s in segs], "bytes": sum(s.size for s in segs),
            "records_in_log": sum(len(b.records) for s in segs for b in _batches(s)),
            "log_start_offset": self.log_start, "log_end_offset": self.leo, "cleaner_checkpoint": self.checkpoint,
            "consumer_position": self.pos if (self.wl.consumer_lag_ms is not None
                                              or self.wl.consumer_lag_records is not None) else None,
            "violations": len(self.violations),
        }


def simulate(config: TopicConfig, workload: Workload, *, check: bool = True, record_steps: bool = True) -> Simulation:
    """Run `workload` against a partition configured by `config`, step by step; `check`: the `log.*` invariants,
    the retention and compaction properties and the consumer's view after every step; `record_steps`: keep every
    event (a sweep keeps only the counts and violations)."""
    sim = _Sim(config, workload, check, record_steps)
    sim.run()
    return Simulation(config, workload, sim.events, sim.violations, sim.summary(), sim.view())


# ---- the command --------------------------------------------------------------------------------------------------


MAX_PROPERTIES_BYTES = 1 << 20  # a properties file of topic configs or workload settings: far more than any needs


def _read_file(path: str, option: str) -> str:
    """A properties file: a regular file or a pipe (never /dev/zero, a FIFO with no writer is empty), at most
    MAX_PROPERTIES_BYTES; InputError naming the file otherwise."""
    from kcheck.inputs import formats
    return formats.read_text(path, MAX_PROPERTIES_BYTES)


# Sizes refused before any work. A step checks the whole log (every log.* invariant) and the consumer's view, so
# the cost is about steps x records produced: 2.2 microseconds of CPU per step x record on this project's
# 2-core machine (600 steps x 600 records 0.8 s; 60 x 6,000 0.7 s; the default 600 x 6,000 about 8 s).
MAX_LOG_WORK = 50_000_000  # steps x records of one simulation: about 2 minutes of CPU
MAX_SWEEP_CELLS = 100_000
MAX_SWEEP_WORK = 500_000_000  # the sum over a sweep's cells: about 20 minutes of CPU, 10 on local[2]


def workload_size(wl: Workload) -> tuple[int, int]:
    """(steps, records produced) of a workload."""
    return wl.steps, math.ceil(wl.rate * wl.duration_ms / 1000)


def check_size(wl: Workload, option: str = "--workload", cells: int = 1) -> None:
    """Refuse a workload (times `cells` of a sweep) that would not finish in reasonable time, naming the limit."""
    steps, records = workload_size(wl)
    work = steps * records
    if work > MAX_LOG_WORK:
        raise InputError(option, f"{steps:,} steps x {records:,} records = {work:,} is above kcheck log's limit of "
                                 f"{MAX_LOG_WORK:,} (about 2 minutes of CPU): shorten duration, raise step or lower "
                                 "rate")
    if cells > MAX_SWEEP_CELLS:
        raise InputError("--axis", f"the grid has {cells:,} cells, above kcheck sweep-log's limit of "
                                   f"{MAX_SWEEP_CELLS:,}")
    if cells > 1 and work * cells > MAX_SWEEP_WORK:
        raise InputError("--axis", f"{cells:,} cells x up to {work:,} steps x records each is above kcheck "
                                   f"sweep-log's limit of {MAX_SWEEP_WORK:,} (about 20 minutes of CPU)")


def _pairs(texts: Sequence[str], option: str) -> list[tuple[str, str]]:
    """--config/--workload values as KEY=VALUE pairs; an empty value is refused (it would change nothing)."""
    out: list[tuple[str, str]] = []
    for text in texts:
        try:
            pairs = split_assignments(text)
        except ConfigError as e:
            from kcheck.inputs import formats
            raise InputError(option, f"{formats.shown(e.key, 60) or '(empty key)'}: {e.message}") from None
        if not pairs:
            raise InputError(option, "empty: give KEY=VALUE")
        out += pairs
    return out


def _checked(pairs: Sequence[tuple[str, str]], where: str, workload: bool) -> None:
    """Every key known and every value valid, one source at a time, so the error names the option or file that
    gave it: InputError(`where`, 'KEY: why'). A workload source may also carry topic configs, not the reverse."""
    for key, value in pairs:
        keys = CONFIG_KEYS if key in CONFIG_KEYS or not workload else WORKLOAD_KEYS
        try:
            if key not in keys:
                known = [*CONFIG_KEYS, *WORKLOAD_KEYS] if workload else list(CONFIG_KEYS)
                raise ValueError(f"unknown {'key' if workload else 'topic config key'} (known: {', '.join(known)})")
            keys[key][1](value)
        except ValueError as e:
            from kcheck.inputs import formats
            raise InputError(where, f"{formats.shown(key, 60) or '(empty key)'}: {e}") from None


def source_pairs(configs: Sequence[str], config_file: str | None, workload_file: str | None,
                 workload: Sequence[str]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The (topic config, workload) pairs the options and files give, each source checked on its own."""
    cpairs: list[tuple[str, str]] = []
    wpairs: list[tuple[str, str]] = []
    try:
        for pairs, where, into in (
                (read_properties(_read_file(config_file, "--config-file"), config_file) if config_file else [],
                 config_file, cpairs),
                (_pairs(configs, "--config"), "--config", cpairs),
                (read_properties(_read_file(workload_file, "--workload-file"), workload_file) if workload_file
                 else [], workload_file, wpairs),
                (_pairs(workload, "--workload"), "--workload", wpairs)):
            _checked(pairs, where or "", into is wpairs)
            into += pairs
    except ConfigError as e:
        raise InputError(e.key, e.message) from None
    if config_file and not any(True for _ in cpairs):
        raise InputError(config_file, "holds no KEY=VALUE line")
    # a workload file may carry the topic config too: any key of the topic's goes there
    return [p for p in wpairs if p[0] in CONFIG_KEYS] + cpairs, [p for p in wpairs if p[0] not in CONFIG_KEYS]


def parse_inputs(configs: Sequence[str], config_file: str | None, workload_file: str | None,
                 workload: Sequence[str]) -> tuple[TopicConfig, Workload]:
    """The topic config and workload a command line names; InputError naming the option or file otherwise."""
    cpairs, wpairs = source_pairs(configs, config_file, workload_file, workload)
    try:
        cfg, wl = TopicConfig.from_pairs(cpairs), Workload.from_pairs(wpairs)
    except ConfigError as e:
        raise InputError("--workload" if e.key in WORKLOAD_KEYS else "--config", f"{e.key}: {e.message}") from None
    check_size(wl, workload_file if workload_file and not workload else "--workload")
    return cfg, wl








