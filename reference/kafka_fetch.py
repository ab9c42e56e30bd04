"""The differential for fetch bounds: `reference/fetch.py` against Kafka's own classes, per release.

Request words (handler `reference/harness/KcheckFetch.java`; its comment has the grammar):

    EPOCH op...                         a real LeaderEpochFileCache: assign, truncations, endOffsetFor
    FPARAMS (version replicaId level clientMetadata)...   FetchIsolation.of and FetchParams' flags
    FREAD indexInterval logStart hw segment... | read...  UnifiedLog.read / LocalLog.read on a real log

Every op, tuple and read is one compared input. `random_*` draw inputs that reach the edges: epochs below, between
and above the cached ones, the undefined epoch, truncation at and past every entry; replica ids of followers,
consumers, the future replica and the extremes; logs with gaps between and inside batches (a compacted log's
shape), empty segments (an empty active segment after a roll), a log start inside a batch, a high watermark inside
a batch or in a gap, reads at every offset from below the log start to past the log end with byte limits around
each batch's size, for every isolation, with and without minOneMessage.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kcheck.reference.fetch import (
    HIGH_WATERMARK,
    LOG_END,
    TXN_COMMITTED,
    EpochCache,
    FetchData,
    FetchError,
    PartitionLog,
    fetch_params,
)
from kcheck.reference.kafka_bridge import KafkaBridge, parse_error
from kcheck.reference.kafka_storage import random_batch
from kcheck.reference.log_segment import INT_MAX, Batch
from kcheck.reference.releases import ReleaseProfile, profile

EpochOp = tuple[str, int, int]  # ('a', epoch, offset), ('s', offset, 0), ('e', offset, 0), ('q', epoch, leo)
ParamsInput = tuple[int, int, int, int]  # version, replica id, isolation level, client metadata
Read = tuple[int, int, str, int]  # offset, max bytes, isolation l|h|c, minOneMessage
_ISOLATION = {"l": LOG_END, "h": HIGH_WATERMARK, "c": TXN_COMMITTED}


def _answers(line: str) -> list[str]:
    if not line.startswith("OK"):
        raise parse_error(line)
    return line.split()[1:]


# ---------------------------------------------------------------- EPOCH


def encode_epoch(ops: Sequence[EpochOp]) -> str:
    parts = ["EPOCH"]
    for kind, a, b in ops:
        parts.append(f"{kind}{a}:{b}" if kind in "aq" else f"{kind}{a}")
    return " ".join(parts)


def reference_epoch(ops: Sequence[EpochOp]) -> list[str]:
    cache = EpochCache()
    out = []
    for kind, a, b in ops:
        if kind == "q":
            epoch, offset = cache.end_offset_for(a, b)
            out.append(f"{epoch}:{offset}")
            continue
        try:
            if kind == "a":
                cache.assign(a, b)
            elif kind == "s":
                cache.truncate_from_start(a)
            else:
                cache.truncate_from_end(a)
        except FetchError as e:
            out.append("E" + e.java_name)
            continue
        out.append(",".join(f"{e}:{o}" for e, o in cache.entries) or "~")
    return out


def random_epoch_ops(rng: random.Random, n: int = 40) -> list[EpochOp]:
    ops: list[EpochOp] = []
    epoch, offset = rng.choice([0, 0, 1, 5]), rng.choice([0, 0, 10])
    for _ in range(n):
        r = rng.random()
        if r < 0.4:
            epoch += rng.choice([0, 1, 1, 2, -1, -3])
            offset += rng.choice([0, 0, 1, 5, 100, -1, -20])
            e, o = (epoch, offset) if rng.random() > 0.03 else rng.choice([(-1, 5), (3, -1), (-2, -2)])
            ops.append(("a", e, o))
        elif r < 0.5:
            ops.append(("s", max(-1, offset + rng.choice([-200, -5, -1, 0, 1, 50])), 0))
        elif r < 0.6:
            ops.append(("e", offset + rng.choice([-200, -5, -1, 0, 1, 50, -10**6]), 0))
        else:
            ops.append(("q", epoch + rng.choice([-10, -3, -2, -1, -1, 0, 0, 1, 2]) if rng.random() > 0.05 else -1,
                        max(0, offset + rng.choice([0, 1, 7, 1000]))))
    return ops


# ---------------------------------------------------------------- FPARAMS


def encode_params(inputs: Sequence[ParamsInput]) -> str:
    return " ".join(["FPARAMS", *(f"{v} {r} {lvl} {cm}" for v, r, lvl, cm in inputs)])


def reference_params(inputs: Sequence[ParamsInput], release: ReleaseProfile) -> list[str]:
    out = []
    for v, r, lvl, cm in inputs:
        p = fetch_params(v, r, bool(lvl), bool(cm), release)
        hard = "-" if p.hard_max_bytes_limit is None else str(p.hard_max_bytes_limit).lower()
        out.append(":".join([p.isolation, *(str(x).lower() for x in (p.from_follower, p.from_consumer,
                                                                       p.fetch_only_leader)), hard]))
    return out


def random_params(rng: random.Random, n: int = 50) -> list[ParamsInput]:
    ids = [-1, -1, -2, -3, -4, 0, 1, 2, 1000, INT_MAX, -INT_MAX - 1]
    return [(rng.randint(0, 18), rng.choice(ids), rng.randint(0, 1), rng.randint(0, 1)) for _ in range(n)]


# ---------------------------------------------------------------- FREAD


@dataclass(frozen=True)
class ReadCase:
    index_interval: int
    log_start: int
    high_watermark: int
    segments: tuple[tuple[int, tuple[Batch, ...]], ...]  # (base offset, batches), the last one active
    reads: tuple[Read, ...]


def _encode_batch(b: Batch) -> str:
    return f"{b.base_offset}/" + ",".join(f"{r.offset_delta}:{r.timestamp}:{r.key_len}:{r.value_len}"
                                          for r in b.records)


def encode_read(case: ReadCase) -> str:
    segs = [f"{base}@" + "+".join(map(_encode_batch, batches)) for base, batches in case.segments]
    reads = [f"{o}:{m}:{i}:{one}" for o, m, i, one in case.reads]
    return " ".join(["FREAD", str(case.index_interval), str(case.log_start), str(case.high_watermark), *segs, "|",
                     *reads])


def format_data(d: FetchData) -> str:
    s = d.start
    aborted = "-" if d.aborted is None else str(d.aborted)
    return f"{s.offset}:{s.segment_base}:{s.position}:{d.size}:{int(d.first_entry_incomplete)}:{aborted}"


def reference_read(case: ReadCase, release: ReleaseProfile | None = None) -> list[str]:
    log = PartitionLog.build(case.index_interval, case.log_start, case.high_watermark, case.segments,
                             release or profile())
    out = []
    for offset, max_bytes, iso, one in case.reads:
        try:
            out.append(format_data(log.read(offset, max_bytes, _ISOLATION[iso], bool(one))))
        except FetchError as e:
            out.append(f"E{e.java_name}:{e.message.replace(' ', '_')}")
    return out


def random_read_case(rng: random.Random, n_reads: int = 40) -> ReadCase:
    now = 1_700_000_000_000
    offset = rng.choice([0, 0, 0, 7, 1000])
    segments: list[tuple[int, tuple[Batch, ...]]] = []
    for s in range(rng.randint(1, 4)):
        # the next segment starts at the log end, now and then past it; past an empty one always (two segments
        # never share a base offset: LocalLog.roll replaces an empty active segment at the same offset)
        gap = segments and (not segments[-1][1] or rng.random() < 0.1)
        base = offset + (rng.choice([1, 5]) if gap else 0)
        batches = []
        offset = base
        for _ in range(rng.choice([0, 1, 1, 2, 3, 4]) if s or rng.random() < 0.9 else 0):
            offset += rng.choice([0, 0, 0, 0, 1, 3])  # gaps between batches, as compaction leaves them
            b = random_batch(rng, offset, now)
            batches.append(b)
            offset = b.last_offset + 1
        segments.append((base, tuple(batches)))
    first = segments[0][0]
    active_base, active = segments[-1]
    end = active[-1].last_offset + 1 if active else active_base
    log_start = rng.choice([first, first, first, rng.randint(first, end)])
    hw = rng.choice([end, end, log_start, rng.randint(log_start, end)])
    sizes = [b.size for _, bs in segments for b in bs] or [61]
    offsets = [b.base_offset + r.offset_delta for _, bs in segments for b in bs for r in b.records]
    reads = []
    for _ in range(n_reads):
        o = rng.choice([log_start - 1, log_start, hw, hw - 1, hw + 1, end, end + 1, first, *offsets,
                        rng.randint(max(0, first - 2), end + 2)])
        size = rng.choice(sizes)
        m = rng.choice([0, 1, 10, 61, size - 1, size, size + 1, 2 * size, 1 << 20, INT_MAX])
        reads.append((max(o, -1), max(m, 0), rng.choice("lhc"), rng.randint(0, 1)))
    return ReadCase(rng.choice([0, 1, 50, 100, 4096]), log_start, hw, tuple(segments), tuple(reads))


# ---------------------------------------------------------------- through the bridge


def kafka_epoch(bridge: KafkaBridge, scripts: Sequence[Sequence[EpochOp]]) -> list[list[str]]:
    bridge.require("EPOCH", "leader epoch cache")
    return [_answers(line) for line in bridge.roundtrip([encode_epoch(s) for s in scripts])]


def kafka_params(bridge: KafkaBridge, batches: Sequence[Sequence[ParamsInput]]) -> list[list[str]]:
    bridge.require("FPARAMS", "fetch parameters")
    return [_answers(line) for line in bridge.roundtrip([encode_params(b) for b in batches])]


def kafka_read(bridge: KafkaBridge, cases: Sequence[ReadCase]) -> list[list[str]]:
    bridge.require("FREAD", "log read")
    return [_answers(line) for line in bridge.roundtrip([encode_read(c) for c in cases])]


def compare(bridge: KafkaBridge, release: str, rule: str, rng: random.Random, n: int) -> tuple[int, int, str]:
    """About `n` random inputs of one rule (EPOCH, FPARAMS or FREAD) on this bridge's release: (inputs compared,
    inputs that differ, the first difference with its request line or '')."""
    prof = profile(release)
    cases: list[Any]
    show: Callable[[Any], str]
    if rule == "EPOCH":
        cases = [random_epoch_ops(rng) for _ in range(max(1, n // 40))]
        ours, theirs, show = [reference_epoch(c) for c in cases], kafka_epoch(bridge, cases), encode_epoch
    elif rule == "FPARAMS":
        cases = [random_params(rng) for _ in range(max(1, n // 50))]
        ours, theirs, show = [reference_params(c, prof) for c in cases], kafka_params(bridge, cases), encode_params
    else:
        cases = [random_read_case(rng) for _ in range(max(1, n // 40))]
        ours, theirs, show = [reference_read(c, prof) for c in cases], kafka_read(bridge, cases), encode_read
    inputs = differences = 0
    first = ""
    for case, mine, real in zip(cases, ours, theirs, strict=True):
        inputs += len(real)
        bad = [i for i, (a, b) in enumerate(zip(mine, real, strict=False)) if a != b]
        differences += len(bad) + abs(len(mine) - len(real))
        if bad and not first:
            first = f"{show(case)}\nat {bad[0]}: kafka {real[bad[0]]}\nours:  {mine[bad[0]]}"
    return inputs, differences, first
