"""The differential for log storage: our `log_segment` reference against Kafka's storage classes.

Request words (handler `reference/harness/KcheckStorageSegments.java`, kafka-storage jar, every release):

    SEG_LOG segmentBytes segmentMs jitterMs indexIntervalBytes maxIndexSize createdMs queries append...
        Real LogSegments (LogSegment.shouldRoll / append / onBecomeInactiveSegment / translateOffset) in a
        temporary directory, rolled as UnifiedLog.maybeRoll and LocalLog.roll do.
        append = nowMs@batch[+batch]..., batch = baseOffset/rec[,rec]..., rec = offsetDelta:timestamp:keyLen:valueLen
        queries = '~' or offsets 'o,o,...' looked up at the end.
        Answer: OK status segment... | query...   (status '-' or appendIndex:ExceptionName;
        segment base/logBytes/offsetIndexBytes/timeIndexBytes/o:p,...|~/t:o,...|~;
        query segBase:indexOffset:indexPosition:foundOffset:foundPosition:foundSize or segBase:idxO:idxP:none)
    OFFSET_INDEX baseOffset maxIndexSize op...   a real OffsetIndex (ops a, l, t, u, f, e, m, r)
    TIME_INDEX baseOffset maxIndexSize op...     a real TimeIndex (ops a, l, t, f, e, m, x, r)
        see the handler's comment for the ops; each answers one token, an exception its simple name.

S2 (retention) and S3 (cleaner) add their own words in their own handlers and their functions at the end.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from kcheck.reference.kafka_bridge import KafkaBridge, parse_error
from kcheck.reference.log_segment import (
    INT_MAX,
    Append,
    Batch,
    OffsetIndex,
    Record,
    SegmentConfig,
    SegmentedLog,
    StorageError,
    TimeIndex,
)


@dataclass(frozen=True)
class SegmentCase:
    """One differential input: a config, the log's creation time, appends, and offsets to look up."""

    config: SegmentConfig
    created_ms: int
    appends: tuple[Append, ...]
    queries: tuple[int, ...] = ()


@dataclass(frozen=True)
class SegmentSummary:
    base_offset: int
    size: int
    offset_index_bytes: int
    time_index_bytes: int
    offset_entries: tuple[tuple[int, int], ...]
    time_entries: tuple[tuple[int, int], ...]


Lookup = tuple[int, int, int, tuple[int, int, int] | None]  # segment base, index entry, translated batch


@dataclass(frozen=True)
class LogOutcome:
    failed: tuple[int, str] | None
    segments: tuple[SegmentSummary, ...]
    lookups: tuple[Lookup, ...]


# ---------------------------------------------------------------- encoding


def encode_append(a: Append) -> str:
    batches = "+".join(
        f"{b.base_offset}/" + ",".join(f"{r.offset_delta}:{r.timestamp}:{r.key_len}:{r.value_len}" for r in b.records)
        for b in a.batches)
    return f"{a.now_ms}@{batches}"


def encode_case(c: SegmentCase) -> str:
    cfg = c.config
    queries = ",".join(str(q) for q in c.queries) or "~"
    return " ".join([f"SEG_LOG {cfg.segment_bytes} {cfg.segment_ms} {cfg.jitter_ms} {cfg.index_interval_bytes}",
                     f"{cfg.max_index_size} {c.created_ms} {queries}", *map(encode_append, c.appends)])


def _pairs(tok: str) -> tuple[tuple[int, int], ...]:
    if tok == "~":
        return ()
    return tuple((int(a), int(b)) for a, b in (p.split(":") for p in tok.split(",")))


def parse_outcome(line: str) -> LogOutcome:
    if not line.startswith("OK "):
        raise parse_error(line)
    head, _, tail = line[3:].partition(" |")
    toks = head.split(" ")
    failed = None
    if toks[0] != "-":
        i, name = toks[0].split(":")
        failed = (int(i), name)
    segs = []
    for tok in toks[1:]:
        base, size, oib, tib, oe, te = tok.split("/")
        segs.append(SegmentSummary(int(base), int(size), int(oib), int(tib), _pairs(oe), _pairs(te)))
    lookups: list[Lookup] = []
    for q in tail.split():
        f = q.split(":")
        found = None if f[3] == "none" else (int(f[3]), int(f[4]), int(f[5]))
        lookups.append((int(f[0]), int(f[1]), int(f[2]), found))
    return LogOutcome(failed, tuple(segs), tuple(lookups))


# ---------------------------------------------------------------- our side


def reference_outcome(c: SegmentCase, kafka_version: str = "4.4.0") -> LogOutcome:
    log = SegmentedLog(c.config, c.created_ms).run(c.appends)
    segs = tuple(SegmentSummary(s.base_offset, s.size, s.offset_index.length, s.time_index.length,
                                tuple(s.offset_index.entries), tuple(s.time_index.entries)) for s in log.segments)
    lookups: list[Lookup] = []
    for q in c.queries:
        seg = log.segment_for(q)
        o, p = seg.offset_index.lookup(q)
        lookups.append((seg.base_offset, o, p, seg.translate_offset(q, kafka_version)))
    return LogOutcome(log.failed, segs, tuple(lookups))


def kafka_outcomes(bridge: KafkaBridge, cases: Sequence[SegmentCase]) -> list[LogOutcome]:
    bridge.require("SEG_LOG", "log segments")
    return [parse_outcome(line) for line in bridge.roundtrip([encode_case(c) for c in cases])]


# ---------------------------------------------------------------- index ops


IndexOp = tuple[str, tuple[int, ...]]  # ('a', (offset, pos)) / ('a', (ts, offset, skip)) / ('l', (target,)) ...


def encode_index_ops(word: str, base: int, max_index_size: int, ops: Sequence[IndexOp]) -> str:
    parts = [word, str(base), str(max_index_size)]
    for op, args in ops:
        if word == "TIME_INDEX" and op == "a":
            parts.append(f"a{args[0]}:{args[1]}" + (":s" if args[2] else ""))
        else:
            parts.append(op + ":".join(map(str, args)))
    return " ".join(parts)


def reference_index_answers(word: str, base: int, max_index_size: int, ops: Sequence[IndexOp]) -> list[str]:
    """Our index's answer to each op, in the handler's tokens ('!Name' alone when the index cannot be made)."""
    try:
        idx: OffsetIndex | TimeIndex = (OffsetIndex if word == "OFFSET_INDEX" else TimeIndex)(base, max_index_size)
    except StorageError as e:
        return ["!" + e.java_name]
    out: list[str] = []
    for op, args in ops:
        try:
            if op == "a":
                if isinstance(idx, OffsetIndex):
                    idx.append(args[0], args[1])
                else:
                    idx.maybe_append(args[0], args[1], bool(args[2]))
                out.append("ok")
            elif op == "l":
                k, v = idx.lookup(args[0])
                out.append(f"{k}:{v}")
            elif op == "t":
                idx.truncate_to(args[0])
                out.append("ok")
            elif op == "u" and isinstance(idx, OffsetIndex):
                up = idx.fetch_upper_bound_offset(args[0], args[1])
                out.append("none" if up is None else f"{up[0]}:{up[1]}")
            elif op == "f":
                out.append("1" if idx.is_full() else "0")
            elif op == "e":
                out.append(str(idx.count))
            elif op == "m":
                out.append(str(idx.max_entries))
            elif op == "x" and isinstance(idx, TimeIndex):
                k, v = idx.last_entry()
                out.append(f"{k}:{v}")
            elif op == "r":
                idx.trim_to_valid_size()
                out.append(str(idx.length))
            else:
                raise ValueError(f"unknown index op {op!r}")
        except StorageError as e:
            out.append(e.java_name)
    return out


def kafka_index_answers(bridge: KafkaBridge, requests: Sequence[tuple[str, int, int, Sequence[IndexOp]]]
                        ) -> list[list[str]]:
    bridge.require("OFFSET_INDEX", "offset and time indexes")
    answers = bridge.roundtrip([encode_index_ops(*r) for r in requests])
    out = []
    for line in answers:
        if not line.startswith("OK"):
            raise parse_error(line)
        out.append(line.split()[1:])
    return out


# ---------------------------------------------------------------- random inputs


def random_config(rng: random.Random) -> SegmentConfig:
    segment_ms = rng.choice([1, 10, 100, 1000, 10_000, 7 * 24 * 3600 * 1000])
    jitter = rng.choice([0, 0, rng.randrange(segment_ms)])
    return SegmentConfig(segment_bytes=rng.choice([300, 1000, 1000, 4096, 4096, 20_000, 1 << 30]),
                         segment_ms=segment_ms, jitter_ms=jitter,
                         index_interval_bytes=rng.choice([0, 1, 50, 100, 500, 4096]),
                         max_index_size=rng.choice([12, 24, 25, 36, 40, 64, 64, 100, 1024, 10 * 1024 * 1024]))


def random_batch(rng: random.Random, base: int, now: int) -> Batch:
    n = rng.choice([1, 1, 2, 3, 5])
    recs = []
    delta = rng.choice([0, 0, 0, 1, 5])  # the first record need not sit at the batch's base offset
    for _ in range(n):
        ts = rng.choice([now, now, now - rng.randrange(200), now + rng.randrange(200), -1, 0])
        value = rng.choice([-1, 0, 5, 40, 40, 200, 200, 1000 if rng.random() < 0.2 else 100])
        recs.append(Record(delta, max(ts, -1), rng.choice([-1, 0, 3, 10]), value))
        delta += rng.choice([1, 1, 1, 2, 100])
    return Batch(base, tuple(recs))


def random_case(rng: random.Random, max_appends: int = 12) -> SegmentCase:
    cfg = random_config(rng)
    now = rng.choice([0, 1000, 1_700_000_000_000])
    created = now - rng.choice([0, 0, 5, 5000])
    offset = 0
    appends = []
    for _ in range(rng.randint(1, max_appends)):
        now += rng.choice([0, 0, 1, 5, 50, 500, 20_000])
        batches = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            # gaps as a compacted log has them, now and then one a relative offset cannot span
            offset += rng.choice([0, 0, 0, 1, 10]) if rng.random() < 0.97 else rng.choice([INT_MAX - 5, INT_MAX + 10])
            b = random_batch(rng, offset, now)
            batches.append(b)
            offset = b.last_offset + 1
        appends.append(Append(now, tuple(batches)))
    offsets = [b.base_offset + r.offset_delta for a in appends for b in a.batches for r in b.records]
    picks = {rng.choice(offsets) + rng.choice([-1, 0, 0, 1]) for _ in range(rng.randint(0, 5))}
    queries = tuple(sorted(q for q in picks if q >= 0))
    return SegmentCase(cfg, created, tuple(appends), queries)


def random_index_ops(rng: random.Random, time: bool) -> tuple[str, int, int, list[IndexOp]]:
    base = rng.choice([0, 10, 1000])
    size = rng.choice([8, 12, 16, 24, 36, 40, 48, 100, 12 * 700 + 5, 8 * 1100]) if rng.random() < 0.9 else 4
    ops: list[IndexOp] = []
    key = base
    val = rng.choice([-1, 0, 5]) if time else 0
    for _ in range(rng.randint(1, 40)):
        r = rng.random()
        if r < 0.6:
            if time:
                val += rng.choice([-1, 0, 1, 1, 7])
                key += rng.choice([-1, 0, 0, 1, 3])
                ops.append(("a", (val, key, int(rng.random() < 0.2))))
            else:
                key += rng.choice([-1, 0, 1, 1, 4, INT_MAX])
                val += rng.choice([0, 10, 100])
                ops.append(("a", (key, val)))
        elif r < 0.8:
            ops.append(("l", (rng.randint(-2, max(-2, val if time else key) + 3),)))
        elif r < 0.85:
            ops.append(("t", (rng.randint(base - 1, max(base, key) + 2),)))
        elif r < 0.9 and not time:
            ops.append(("u", (rng.randint(0, val + 5), rng.randint(0, 200))))
        else:
            ops.append((rng.choice("fem" + ("x" if time else "") + "r"), ()))
    return ("TIME_INDEX" if time else "OFFSET_INDEX", base, size, ops)
