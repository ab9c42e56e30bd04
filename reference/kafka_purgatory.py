"""The differential for the acks=all wait: `purgatory.DelayedProduce` against each release's real DelayedProduce.

Request word DPROD, answered on the broker-side bridge (`KafkaBridge(server=True)`: the broker's jars and Mockito)
by `reference/harness/KcheckDelayedProduce.java` (the Java class, 4.3 on) or `KcheckDelayedProduceScala.java` (the
Scala class of kafka_2.13, 3.9 to 4.2, with a Mockito ReplicaManager and Partition answering from the script). One
case is one operation: its creation, then tryComplete calls with the validator's answers of that moment and expiry
(run) in a random order; every step (the creation too) is one compared input: its result, the partitions asked and
the offsets they were asked with, every partition's pending flag and error, the completion flag and the callback's
count, and the map the callback got.

    DPROD delayMs n partition*n op...     (the handler's comment has the grammar and the answer's)

`random_case` reaches the edges: partitions whose append failed (they never wait), all failed (the first
tryComplete completes at once), validator answers that settle with an error while hasEnough is true or false,
tryComplete after completion (it still settles partitions: the callback's map is the one sent, the statuses move on),
repeated expiry, offsets at 0 and Long.MAX_VALUE.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from kcheck.reference import purgatory as pg
from kcheck.reference.kafka_bridge import KafkaBridge, compare_drawn, ok_fields, step_answers

LONG_MAX = 2**63 - 1

# A validator answer token: ('L', 0, code) ReplicaManager.getPartitionOrError failed; ('R', hasEnough, code) the
# partition's own check.
AnswerToken = tuple[str, int, int]
Op = tuple[AnswerToken, ...] | None  # a tryComplete with one answer per partition, or None: the deadline (run)


@dataclass(frozen=True)
class PartitionSpec:
    error: int
    base_offset: int
    required_offset: int
    log_start_offset: int


@dataclass(frozen=True)
class DelayedProduceCase:
    delay_ms: int
    partitions: tuple[PartitionSpec, ...]
    ops: tuple[Op, ...]


def _encode_answer(a: AnswerToken) -> str:
    return f"L{a[2]}" if a[0] == "L" else f"R{a[1]}:{a[2]}"


def encode_case(case: DelayedProduceCase) -> str:
    parts = [f"{p.error}:{p.base_offset}:{p.required_offset}:{p.log_start_offset}" for p in case.partitions]
    ops = ["x" if op is None else "t" + ",".join(map(_encode_answer, op)) for op in case.ops]
    return " ".join(["DPROD", str(case.delay_ms), str(len(case.partitions)), *parts, *ops])


parse_answers = ok_fields  # one answer per compared step (the bench runner reads this name)


def kafka_answers(bridge: KafkaBridge, cases: Sequence[DelayedProduceCase]) -> list[list[str]]:
    return step_answers(bridge, "DPROD", "DelayedProduce", encode_case, cases)


# ---------------------------------------------------------------- our side


def _answer(a: AnswerToken) -> pg.Answer:
    return (False if a[0] == "L" else bool(a[1])), a[2]


def _step(ret: str, asked: list[int], op: pg.DelayedProduce, required: list[int], callbacks_before: int) -> str:
    validated = ",".join(f"{i}@{required[i]}" for i in asked) or "~"
    state = "".join(f",{int(s.acks_pending)}:{s.response.error}" for s in op.statuses)
    callback = "~"
    if len(op.responses) > callbacks_before:
        callback = ",".join(f"{r.error}:{r.base_offset}:{r.log_append_time}:{r.log_start_offset}"
                            for r in op.responses[-1])
    return f"{ret}/{validated}/{int(op.completed)}:{len(op.responses)}{state}/{callback}"


def reference_answers(case: DelayedProduceCase) -> list[str]:
    """Our answer to the creation and to each op, in the handler's tokens."""
    op = pg.DelayedProduce([pg.ProducePartitionStatus(
        p.required_offset, pg.PartitionResponse(p.error, p.base_offset, -1, p.log_start_offset))
        for p in case.partitions])
    required = [p.required_offset for p in case.partitions]
    out = [_step("-", [], op, required, 0)]
    for step in case.ops:
        before = len(op.responses)
        if step is None:
            op.run()
            out.append(_step("-", [], op, required, before))
        else:
            done, asked = op.try_complete({i: _answer(a) for i, a in enumerate(step)})
            out.append(_step(str(int(done)), asked, op, required, before))
    return out


# ---------------------------------------------------------------- random inputs

# What a local append can leave (ReplicaManager.appendToLocalLog's errors) and what the validator can answer.
_APPEND_ERRORS = (pg.NOT_LEADER_OR_FOLLOWER, pg.UNKNOWN_TOPIC_OR_PARTITION, pg.NOT_ENOUGH_REPLICAS,
                  pg.KAFKA_STORAGE_ERROR, 10, 87, pg.UNKNOWN_SERVER_ERROR)  # 10 MESSAGE_TOO_LARGE, 87 INVALID_RECORD
_LEFT_ERRORS = (pg.UNKNOWN_TOPIC_OR_PARTITION, pg.KAFKA_STORAGE_ERROR, pg.NOT_LEADER_OR_FOLLOWER)


def _partition(rng: random.Random) -> PartitionSpec:
    error = pg.NONE if rng.random() < 0.75 else rng.choice(_APPEND_ERRORS)
    base = rng.choice([0, 0, 5, 1000, LONG_MAX - 10]) if error == pg.NONE else rng.choice([-1, -1, 0])
    last = base + rng.choice([0, 0, 1, 9])
    lso = rng.choice([-1, 0, 0, base if base > 0 else 0])
    # a failed append reports no offsets (lastOffset -1): its required offset is 0, never asked about
    return PartitionSpec(error, base, pg.required_offset(last if error == pg.NONE else -1), lso)


def _validator_answer(rng: random.Random) -> AnswerToken:
    r = rng.random()
    if r < 0.08:
        return ("L", 0, rng.choice(_LEFT_ERRORS))
    if r < 0.14:
        return ("R", 0, pg.NOT_LEADER_OR_FOLLOWER)  # Case B: no longer the leader
    if r < 0.5:
        return ("R", 1, pg.NONE)
    if r < 0.58:
        return ("R", 1, pg.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    if r < 0.6:
        return ("R", rng.randint(0, 1), rng.choice(_APPEND_ERRORS))  # any (hasEnough, error) the class must take
    return ("R", 0, pg.NONE)  # the high watermark is short of the required offset


def random_case(rng: random.Random, max_ops: int = 8) -> DelayedProduceCase:
    partitions = tuple(_partition(rng) for _ in range(rng.choice([1, 1, 2, 3, 4, 6])))
    ops: list[Op] = []
    for _ in range(rng.randint(0, max_ops)):
        if rng.random() < 0.12:
            ops.append(None)
        else:
            ops.append(tuple(_validator_answer(rng) for _ in partitions))
    return DelayedProduceCase(rng.choice([0, 1, 30_000, LONG_MAX]), partitions, tuple(ops))


def compare_random(bridge: KafkaBridge, rng: random.Random, steps: int) -> tuple[int, int, str]:
    """Random operations of about `steps` steps through Kafka's DelayedProduce and ours (a broker-side bridge):
    (steps compared, steps that differ, the smallest differing operation with the first differing step's answers;
    '' when none differ)."""
    return compare_drawn(lambda: random_case(rng), steps, lambda cases: kafka_answers(bridge, cases),
                         reference_answers, encode_case, "step",
                         size=lambda case: len(case.ops) + 1)  # the creation is a step too
