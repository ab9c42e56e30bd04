"""Kafka's log cleaner run through the bridge, beside our reference (`reference/log_cleaner.py`).

Request word `CLN` (handler `reference/harness/KcheckStorageCleaner.java`, Kafka 4.1+ where `Cleaner`,
`LogCleanerManager`, `LogToClean` and `SkimpyOffsetMap` are Java in kafka-storage,
`storage/src/main/java/org/apache/kafka/storage/internals/log/`): a scenario is one to a few compacted logs, each a
real `UnifiedLog` in a temp dir, and rounds of (appends with rolls, a high watermark per log, then one
`LogCleanerManager.grabFilthiestCompactedLog` and, when it picks a log, one `Cleaner.doClean` at the round's time
followed by `doneCleaning`). The answer is each round's choice (log, first dirty offset, first uncleanable offset,
clean and cleanable bytes, whether max.compaction.lag.ms forced it, the pass's end offset), the cleaner checkpoints,
and every log's segments to the byte: base offset, size, and per batch its offsets, KIP-534 delete horizon and the
records kept. In 4.0.x the cleaner is Scala in kafka_2.13 (not on the bridge classpath): no differential there.
Compare with `reference_cleaner(scenario, version)`: which emptied batch the cleaner keeps changed in 4.4.0
(`log_cleaner.EMPTY_BATCH_AT_HW_SINCE`).

    kafka = shared_bridge("4.4.0")
    scenarios = [random_scenario(random.Random(seed)) for seed in range(200)]
    for s, theirs in zip(scenarios, map_cleaner(kafka, scenarios)):
        assert theirs == reference_cleaner(s, "4.4.0")

A Java throw comes back as `JavaException(class name, message)` in place of the answer.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kcheck.reference.kafka_bridge import JavaException, KafkaBridge, parse_error
from kcheck.reference.log_cleaner import DEFAULT_VERSION, LONG_MAX, CleanerConfig, CleanerLog, Round, Spec, run_rounds

__all__ = [
    "CLN_WORD",
    "CleanerAnswer",
    "CleanerScenario",
    "encode_scenario",
    "map_cleaner",
    "parse_answer",
    "parse_spec",
    "random_scenario",
    "reference_cleaner",
]

CLN_WORD = "CLN"
_TOKEN = re.compile(r"[A-Za-z0-9]+")

# (chosen log, first dirty, first uncleanable, clean bytes, cleanable bytes, need compaction now, end offset)
RoundAnswer = tuple[int, int, int, int, int, bool, int] | None
BatchDump = tuple[int, int, int | None, tuple[tuple[int, str, str | None], ...]]  # base, last, horizon, records
SegmentDump = tuple[int, int, tuple[BatchDump, ...]]  # base offset, size in bytes, batches


@dataclass(frozen=True)
class CleanerScenario:
    cfg: CleanerConfig
    checkpoints: tuple[int | None, ...]  # per log, before the first round
    rounds: tuple[Round, ...]


@dataclass(frozen=True)
class CleanerAnswer:
    rounds: tuple[RoundAnswer, ...]
    checkpoints: tuple[int | None, ...]
    logs: tuple[tuple[SegmentDump, ...], ...]


def _ratio(x: float) -> str:
    text = repr(float(x))
    if float(text) != x:
        raise ValueError(f"ratio {x!r} has no exact decimal form")
    return text


def _encode_spec(spec: Spec) -> str:
    parts = []
    for part in spec:
        batches = []
        for batch in part:
            recs = []
            for key, value, ts in batch:
                for tok in (key, value):
                    if tok is not None and not _TOKEN.fullmatch(tok):
                        raise ValueError(f"keys and values must be [A-Za-z0-9]+: {tok!r}")
                recs.append(f"{key}:{'~' if value is None else value}:{ts}")
            batches.append(",".join(recs))
        parts.append(";".join(batches))
    return "|".join(parts) or "."


def parse_spec(text: str) -> Spec:
    """The request's appends notation back to a Spec: "a:1:10;a:~:20|b:2:30" (a roll at each '|')."""
    if text == ".":
        return ()
    return tuple(tuple(tuple((k, None if v == "~" else v, int(ts)) for k, v, ts in (r.split(":") for r in b.split(",")))
                       for b in part.split(";") if b) for part in text.split("|"))


def encode_scenario(s: CleanerScenario) -> str:
    c = s.cfg
    cfg = (f"{c.segment_bytes},{c.delete_retention_ms},{c.min_compaction_lag_ms},{c.max_compaction_lag_ms},"
           f"{_ratio(c.min_cleanable_ratio)},{c.map_bytes},{_ratio(c.load_factor)},{c.segment_ms}")
    cps = ",".join("-" if cp is None else str(cp) for cp in s.checkpoints)
    out = [CLN_WORD, cfg, str(len(s.checkpoints)), str(len(s.rounds)), cps]
    for rnd in s.rounds:
        out.append(str(rnd.now))
        for spec, hw in zip(rnd.appends, rnd.hws, strict=True):
            out.append(f"{_encode_spec(spec)}/{'-' if hw is None else hw}")
    return " ".join(out)


def _parse_log(tok: str) -> tuple[SegmentDump, ...]:
    segs = []
    for seg in tok.split("/"):
        head, _, body = seg.partition("=")
        base, size = head.split("@")
        batches = []
        for b in body.split(";") if body else []:
            fields = b.split(",")
            recs = []
            for r in fields[3:]:
                off, key, val = r.split(":")
                recs.append((int(off), key, None if val == "~" else val))
            batches.append((int(fields[0]), int(fields[1]), None if fields[2] == "-" else int(fields[2]),
                            tuple(recs)))
        segs.append((int(base), int(size), tuple(batches)))
    return tuple(segs)


def parse_answer(line: str, n_logs: int, n_rounds: int) -> CleanerAnswer | JavaException:
    if line.startswith("ERR"):
        return parse_error(line)
    t = line.split(" ")
    rounds: list[RoundAnswer] = []
    for tok in t[1:1 + n_rounds]:
        if tok == "-1":
            rounds.append(None)
        else:
            i, fd, fu, cb, cl, need, end = tok.split(",")
            rounds.append((int(i), int(fd), int(fu), int(cb), int(cl), need == "1", int(end)))
    cps = tuple(None if c == "-" else int(c) for c in t[1 + n_rounds].split(","))
    logs = tuple(_parse_log(tok) for tok in t[2 + n_rounds:2 + n_rounds + n_logs])
    return CleanerAnswer(tuple(rounds), cps, logs)


def map_cleaner(kafka: KafkaBridge, scenarios: Iterable[CleanerScenario]) -> list[CleanerAnswer | JavaException]:
    kafka.require(CLN_WORD, "the log cleaner (Kafka 4.1+)")
    ss = list(scenarios)
    answers = kafka.roundtrip([encode_scenario(s) for s in ss])
    return [parse_answer(a, len(s.checkpoints), len(s.rounds)) for s, a in zip(ss, answers, strict=True)]


def dump_log(log: CleanerLog) -> tuple[SegmentDump, ...]:
    return tuple((s.base_offset, s.size,
                  tuple((b.base_offset, b.last_offset, b.delete_horizon,
                         tuple((r.offset, r.key, r.value) for r in b.records)) for b in s.batches))
                 for s in log.segments)


def reference_cleaner(s: CleanerScenario, kafka_version: str = DEFAULT_VERSION) -> CleanerAnswer:
    outcomes, logs = run_rounds(s.cfg, s.checkpoints, s.rounds, kafka_version)
    rounds: list[RoundAnswer] = []
    for o in outcomes:
        c = o.choice
        if c is None or o.end_offset is None:
            rounds.append(None)
        else:
            rounds.append((c.index, c.first_dirty, c.first_uncleanable, c.clean_bytes, c.cleanable_bytes,
                           c.need_compaction_now, o.end_offset))
    return CleanerAnswer(tuple(rounds), tuple(log.checkpoint for log in logs), tuple(dump_log(g) for g in logs))


def random_scenario(rng: random.Random, max_logs: int = 3, max_rounds: int = 3) -> CleanerScenario:
    """A small random scenario: keys from a small space, some tombstones, rolls, lagging high watermarks, offset
    maps that fill, compaction lags and checkpoints in and out of range."""
    cfg = CleanerConfig(
        segment_bytes=rng.choice([150, 250, 400, 700, 100_000]),
        segment_ms=rng.choice([604_800_000, 604_800_000, 200]),
        delete_retention_ms=rng.choice([0, 30, 100, 1000]),
        min_compaction_lag_ms=rng.choice([0, 0, 20, 150]),
        max_compaction_lag_ms=rng.choice([LONG_MAX, LONG_MAX, 50, 300]),
        min_cleanable_ratio=rng.choice([0.0, 0.1, 0.25, 0.5, 0.75]),
        map_bytes=rng.choice([2, 3, 4, 6, 10, 1000]) * 24 + rng.choice([0, 0, 7]),
        load_factor=rng.choice([0.5, 0.75, 0.9, 1.0]),
    )
    if cfg.map_capacity < 1:
        cfg = CleanerConfig(**{**cfg.__dict__, "load_factor": 1.0})
    n_logs = rng.randint(1, max_logs)
    n_rounds = rng.randint(1, max_rounds)
    n_keys = rng.randint(1, 6)
    tomb = rng.choice([0.0, 0.2, 0.4])
    counts = [0] * n_logs
    now = rng.randint(100, 1000)
    rounds = []
    for _ in range(n_rounds):
        now += rng.randint(0, 400)
        specs: list[Spec] = []
        hws: list[int | None] = []
        for i in range(n_logs):
            parts = []
            for _p in range(rng.choice([0, 1, 1, 2, 3, 4])):
                batches = []
                for _b in range(rng.randint(0, 4)):
                    batch = []
                    for _r in range(rng.choice([1, 1, 1, 2, 3])):
                        key = f"k{rng.randrange(n_keys)}"
                        value = None if rng.random() < tomb else f"v{rng.randrange(1000)}"
                        batch.append((key, value, max(0, now - rng.randint(0, 400))))
                    batches.append(tuple(batch))
                    counts[i] += len(batch)
                parts.append(tuple(batches))
            specs.append(tuple(parts))
            hws.append(None if rng.random() < 0.7 else max(0, counts[i] - rng.randint(0, 4)))
        rounds.append(Round(now, tuple(specs), tuple(hws)))
    checkpoints = tuple(None if rng.random() < 0.7 else rng.randint(0, counts[i] + 2) for i in range(n_logs))
    return CleanerScenario(cfg, checkpoints, tuple(rounds))


def differences(scenarios: Sequence[CleanerScenario], answers: Sequence[CleanerAnswer | JavaException],
                kafka_version: str = DEFAULT_VERSION,
                ) -> list[tuple[CleanerScenario, CleanerAnswer | JavaException, CleanerAnswer]]:
    """(scenario, Kafka's answer, ours for that release) for every scenario where they differ."""
    out = []
    for s, theirs in zip(scenarios, answers, strict=True):
        ours = reference_cleaner(s, kafka_version)
        if theirs != ours:
            out.append((s, theirs, ours))
    return out
