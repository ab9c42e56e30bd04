"""Kafka's retention run on a real UnifiedLog through the bridge, beside `reference/log_retention.py`.

Request word `RT` (handler `reference/harness/KcheckStorageRetention.java`): a fresh UnifiedLog
(`storage/src/main/java/org/apache/kafka/storage/internals/log/UnifiedLog.java`) in a temporary directory, with our
own clock and a scheduler that runs nothing, driven by a script of operations: appends as leader (uncompressed
batches, chosen timestamps, key and value sizes), rolls, high watermark updates, DeleteRecords
(`maybeIncrementLogStartOffset`), segment file modification times (`LogSegment.setLastModified`: what retention
judges a segment without timestamps by), retention runs (`deleteOldSegments` at a chosen clock) and snapshots of the
segments (base offset, size, max timestamp so far, end), the log start offset, high watermark and log end offset.
`reference_script` replays the same script on our reference, answer for answer.

Releases: 4.1 and later (UnifiedLog is Java in the storage jar). In 4.0.x UnifiedLog is Scala in kafka_2.13, which
is not on the bridge classpath: the handler does not compile there, `bridge.skipped` says so, `require` raises.

    kafka = shared_bridge("4.4.0")
    script = RetentionScript(RetentionConfig(1000, -1), (Append(100, (1, 2), 10), Roll(), HighWatermark(2),
                                                         Retain(2000), Snapshot()))
    (answer,) = map_retention(kafka, [script])       # == reference_script(script)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kcheck.reference.kafka_bridge import JavaException, KafkaBridge, parse_error
from kcheck.reference.log_retention import (
    LogState,
    OffsetOutOfRange,
    RetentionConfig,
    SegmentSummary,
    append,
    delete_records,
    empty_log,
    retention_pass,
    roll,
    set_last_modified,
    update_high_watermark,
)

__all__ = [
    "RT_WORD",
    "Append",
    "DeleteRecords",
    "HighWatermark",
    "Retain",
    "RetentionScript",
    "Roll",
    "SetLastModified",
    "Snapshot",
    "encode_retention",
    "map_retention",
    "parse_retention",
    "reference_script",
]

RT_WORD = "RT"
_POLICY = {("delete",): "d", ("compact",): "c", ("compact", "delete"): "cd", (): "n"}


@dataclass(frozen=True)
class Append:
    clock: int  # the clock at the append (the batch's timestamp under LogAppendTime)
    timestamps: tuple[int, ...]  # one record each (CreateTime)
    value_bytes: int = 0
    key_bytes: int | None = None  # None: a null key (refused by a compacted topic)


@dataclass(frozen=True)
class Roll:
    pass


@dataclass(frozen=True)
class HighWatermark:
    offset: int


@dataclass(frozen=True)
class DeleteRecords:
    offset: int


@dataclass(frozen=True)
class Retain:
    now: int


@dataclass(frozen=True)
class SetLastModified:
    ms: int  # every segment file's modification time


@dataclass(frozen=True)
class Snapshot:
    pass


Op = Append | Roll | HighWatermark | DeleteRecords | Retain | SetLastModified | Snapshot
# Answers: ("H", hw) | ("S", "1" | "0" | "X<exception>") | ("D", count) | ("P", lso, hw, leo, segments)
Answer = tuple


@dataclass(frozen=True)
class RetentionScript:
    config: RetentionConfig
    ops: tuple[Op, ...]
    log_append_time: bool = False  # message.timestamp.type=LogAppendTime


def _encode_op(op: Op) -> str:
    if isinstance(op, Append):
        key = "-" if op.key_bytes is None else op.key_bytes
        return f"a{op.clock}:{','.join(map(str, op.timestamps))}:{op.value_bytes}:{key}"
    if isinstance(op, Roll):
        return "r"
    if isinstance(op, HighWatermark):
        return f"h{op.offset}"
    if isinstance(op, DeleteRecords):
        return f"s{op.offset}"
    if isinstance(op, Retain):
        return f"d{op.now}"
    if isinstance(op, SetLastModified):
        return f"m{op.ms}"
    return "p"


def encode_retention(s: RetentionScript) -> str:
    policy = _POLICY[tuple(sorted(s.config.cleanup_policy))]
    head = [RT_WORD, str(s.config.retention_ms), str(s.config.retention_bytes), policy, "l" if s.log_append_time
            else "c"]
    return " ".join(head + [_encode_op(op) for op in s.ops])


def parse_retention(line: str) -> tuple[Answer, ...] | JavaException:
    if line.startswith("ERR "):
        return parse_error(line)
    out: list[Answer] = []
    for tok in line.split(" ")[1:]:
        kind, rest = tok[0], tok[1:]
        if kind == "P":
            lso, hw, leo, segs = rest.split("/")
            summaries = () if segs == "~" else tuple(
                SegmentSummary(*map(int, s.split(":"))) for s in segs.split(";"))
            out.append(("P", int(lso), int(hw), int(leo), summaries))
        elif kind == "S":
            out.append(("S", rest))
        else:
            out.append((kind, int(rest)))
    return tuple(out)


def map_retention(bridge: KafkaBridge, scripts: Iterable[RetentionScript]) -> list[tuple[Answer, ...] | JavaException]:
    """One round trip for the whole batch."""
    bridge.require(RT_WORD, "UnifiedLog retention (Kafka 4.1+: UnifiedLog is Scala in 4.0)")
    return [parse_retention(a) for a in bridge.roundtrip([encode_retention(s) for s in scripts])]


def _snapshot(state: LogState) -> Answer:
    return ("P", state.log_start_offset, state.high_watermark, state.log_end_offset, state.segments)


def reference_script(s: RetentionScript) -> tuple[Answer, ...]:
    """The script on our reference: the same answers the harness gives."""
    state = empty_log()
    out: list[Answer] = []
    for op in s.ops:
        if isinstance(op, Append):
            state = append(state, op.timestamps, op.value_bytes, op.clock, s.log_append_time, op.key_bytes)
        elif isinstance(op, Roll):
            state = roll(state)
        elif isinstance(op, HighWatermark):
            state = update_high_watermark(state, op.offset)
            out.append(("H", state.high_watermark))
        elif isinstance(op, DeleteRecords):
            try:
                state, moved = delete_records(state, op.offset)
                out.append(("S", "1" if moved else "0"))
            except OffsetOutOfRange as e:
                out.append(("S", "X" + e.class_name))
        elif isinstance(op, Retain):
            result = retention_pass(state, s.config, op.now)
            state = result.state
            out.append(("D", result.count))
        elif isinstance(op, SetLastModified):
            state = set_last_modified(state, op.ms)
        else:
            out.append(_snapshot(state))
    return tuple(out)
