"""The differential for a fetch waiting in the purgatory: `delayed_fetch.DelayedFetch` against each release's real
kafka.server.DelayedFetch.

Request word DFETCH, answered on the broker-side bridge (`KafkaBridge(server=True)`) by
`reference/harness/KcheckDelayedFetch.java`: the real class with Mockito's ReplicaManager and Partition answering
from the script. One case is one operation: its FetchParams and partitions, then tryComplete calls with the broker's
state of that moment and the deadline (run) in a random order; every op is one compared input: tryComplete's result
or the exception that escaped it, every collaborator call in order with its arguments, the completion flag, the
readFromLog and callback counts, the expiry meters, and what onComplete asked to read.

    DFETCH replicaId isolation clientMetadata minBytes maxWaitMs n partition*n op...   (grammar in the handler)

`random_case` reaches the edges: offsets that put the fetch before, at and past the isolation's end; offset-only
metadata on either side (KAFKA-16452: never an older or the same segment), the unknown metadata and metadata with
offset -1 but a segment (not unknown: equals() compares all three fields); positions whose difference overflows an
int and byte sums that wrap; min and max bytes at 0, negative and Integer.MAX_VALUE; every exception the lookups
may throw, caught or not; throttled followers; epoch ends that are undefined, errors, or diverge; tryComplete after
completion and repeated expiry.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from kcheck.reference import delayed_fetch as df
from kcheck.reference.fetch import HIGH_WATERMARK, LOG_END, TXN_COMMITTED, OffsetMetadata, PartitionFetch
from kcheck.reference.kafka_bridge import KafkaBridge, compare_drawn, ok_fields, step_answers

INT_MAX, INT_MIN = 2**31 - 1, -(2**31)
_ISOLATION = {LOG_END: "L", HIGH_WATERMARK: "H", TXN_COMMITTED: "T"}

Op = tuple[df.PartitionNow, ...] | None  # a tryComplete with the broker's state per partition, or None: run()


@dataclass(frozen=True)
class DelayedFetchCase:
    params: df.FetchWait
    partitions: tuple[df.Waiting, ...]
    ops: tuple[Op, ...]


def _meta(m: OffsetMetadata) -> str:
    return f"{m.offset},{m.segment_base},{m.position}"


def _epoch(e: int | None) -> str:
    return "-" if e is None else str(e)


def _waiting(w: df.Waiting) -> str:
    f = w.fetch
    return (f"{_meta(w.start)}:{f.fetch_offset}:{w.log_start_offset}:{f.max_bytes}:{_epoch(f.current_leader_epoch)}"
            f":{_epoch(f.last_fetched_epoch)}")


def _encode_now(p: df.PartitionNow) -> str:
    return (f"{p.lookup_error}:{p.snapshot_error}:{_meta(p.log_end)}:{_meta(p.high_watermark)}:"
            f"{_meta(p.last_stable)}:{int(p.throttled)}:{','.join(map(str, p.epoch_end))}")


def encode_case(case: DelayedFetchCase) -> str:
    p = case.params
    ops = ["x" if op is None else "t" + "/".join(map(_encode_now, op)) for op in case.ops]
    return " ".join(["DFETCH", str(p.replica_id), _ISOLATION[p.isolation], str(int(p.client_metadata)),
                     str(p.min_bytes), str(p.max_wait_ms), str(len(case.partitions)),
                     *map(_waiting, case.partitions), *ops])


parse_answers = ok_fields  # one answer per compared step (the bench runner reads this name)


def kafka_answers(bridge: KafkaBridge, cases: Sequence[DelayedFetchCase]) -> list[list[str]]:
    return step_answers(bridge, "DFETCH", "DelayedFetch", encode_case, cases)


# ---------------------------------------------------------------- our side


def _read(partitions: tuple[df.Waiting, ...]) -> str:
    """onComplete's readFromLog(params, every partition's PartitionData, quota, readFromPurgatory = true)."""
    return "1" + "".join(f";{i}@{w.fetch.fetch_offset}:{w.log_start_offset}:{w.fetch.max_bytes}:"
                         f"{_epoch(w.fetch.current_leader_epoch)}:{_epoch(w.fetch.last_fetched_epoch)}"
                         for i, w in enumerate(partitions))


def reference_answers(case: DelayedFetchCase) -> list[str]:
    """Our answer to each op, in the handler's tokens."""
    op = df.DelayedFetch(case.params, list(case.partitions))
    out = []
    for step in case.ops:
        reads = len(op.reads)
        calls: tuple[str, ...] = ()
        if step is None:
            op.run()
            ret = "-"
        else:
            outcome = op.try_complete(step)
            calls = outcome.calls
            ret = f"!{outcome.raised}" if outcome.result is None else str(int(outcome.result))
        read = _read(op.reads[-1]) if len(op.reads) > reads else "~"
        state = (f"{int(op.completed)}:{len(op.reads)}:{len(op.reads)}:{op.expired['follower']}:"
                 f"{op.expired['consumer']}")
        out.append(f"{ret}/{','.join(calls) or '~'}/{state}/{read}")
    return out


# ---------------------------------------------------------------- random inputs

_LOOKUP_ERRORS = (6, 3, 56, 74, 75, 9, 5, -1)  # caught (cases A-E) and not
_SNAPSHOT_ERRORS = (6, 74, 75, 56, 3, 78)
_POSITIONS = (0, 0, 100, 500, 1000, 4096, INT_MAX, INT_MIN, -1, -2)
_BYTES = (0, 1, 100, 500, 1024, 1 << 20, INT_MAX, -1, INT_MIN)


def _metadata(rng: random.Random, offset: int) -> OffsetMetadata:
    r = rng.random()
    if r < 0.12:
        return OffsetMetadata(offset)  # offset only
    if r < 0.16:
        return OffsetMetadata(offset, -1, rng.choice(_POSITIONS))  # a segment unknown, a position known
    if r < 0.2:
        return OffsetMetadata(offset, rng.choice((0, 10)), -1)
    return OffsetMetadata(offset, rng.choice((0, 0, 10, 10, 20, offset)), rng.choice(_POSITIONS))


def _start(rng: random.Random) -> OffsetMetadata:
    r = rng.random()
    if r < 0.06:
        return df.UNKNOWN_OFFSET_METADATA
    if r < 0.09:
        return OffsetMetadata(-1, rng.choice((0, -1)), rng.choice((0, -1)))  # offset -1, not all unknown
    return _metadata(rng, rng.randint(0, 30))


def _partition(rng: random.Random) -> df.Waiting:
    start = _start(rng)
    fetch_offset = start.offset if rng.random() < 0.8 else rng.randint(-1, 30)
    current = rng.choice((None, None, 5, 6))
    last = rng.choice((None, None, 3, 5, 6))
    return df.Waiting(start, PartitionFetch(fetch_offset, rng.choice(_BYTES), current, last),
                      rng.choice((0, 0, 5, -1)))


def _near(rng: random.Random, offset: int) -> int:
    return max(-1, offset + (rng.choice((-3, -1)) if rng.random() < 0.12 else rng.choice((0, 0, 1, 2, 5))))


def _now(rng: random.Random, w: df.Waiting) -> df.PartitionNow:
    base = w.start.offset if w.start.offset >= 0 else 0
    lookup = rng.choice(_LOOKUP_ERRORS) if rng.random() < 0.08 else 0
    snapshot = rng.choice(_SNAPSHOT_ERRORS) if rng.random() < 0.08 else 0
    end = _metadata(rng, _near(rng, base))
    hw = end if rng.random() < 0.5 else _metadata(rng, _near(rng, base))
    lso = hw if rng.random() < 0.6 else _metadata(rng, _near(rng, base))
    last = w.fetch.last_fetched_epoch if w.fetch.last_fetched_epoch is not None else 5
    r = rng.random()
    if r < 0.1:
        epoch_end = (rng.choice((74, 75, 6, 3)), last, w.fetch.fetch_offset)
    elif r < 0.2:
        epoch_end = (0, rng.choice((-1, last)), rng.choice((-1, w.fetch.fetch_offset)))
    else:
        epoch_end = (0, last + rng.choice((-1, 0, 0, 1)), _near(rng, w.fetch.fetch_offset))
    return df.PartitionNow(lookup, snapshot, end, hw, lso, rng.random() < 0.3, epoch_end)


def _byte_sum_case(rng: random.Random, params: df.FetchWait) -> DelayedFetchCase:
    """Partitions all on the end's segment with large gaps: the int sum of their bytes wraps around."""
    partitions = tuple(df.Waiting(OffsetMetadata(10, 0, rng.choice((0, 1, INT_MIN))),
                                  PartitionFetch(10, rng.choice((INT_MAX, 1 << 30, 1 << 20))))
                       for _ in range(rng.choice((2, 3, 4))))
    end = OffsetMetadata(12, 0, rng.choice((INT_MAX, 1 << 30, (1 << 30) + 1, 1 << 20)))
    now = tuple(df.PartitionNow(log_end=end, high_watermark=end, last_stable=end, throttled=rng.random() < 0.1)
                for _ in partitions)
    return DelayedFetchCase(params, partitions, (now,) * rng.randint(1, 2))


def random_case(rng: random.Random, max_ops: int = 6) -> DelayedFetchCase:
    params = df.FetchWait(rng.choice((-1, -1, -3, 0, 1, 2)), rng.choice((LOG_END, HIGH_WATERMARK, TXN_COMMITTED)),
                          rng.choice((0, 1, 1, 100, 500, 1000, 1 << 20, INT_MAX, -1, INT_MIN)),
                          rng.choice((0, 500, 30_000)), rng.random() < 0.3)
    if rng.random() < 0.05:
        return _byte_sum_case(rng, params)
    partitions = tuple(_partition(rng) for _ in range(rng.choice((1, 1, 2, 3, 4))))
    ops: list[Op] = []
    for _ in range(rng.randint(1, max_ops)):
        ops.append(None if rng.random() < 0.12 else tuple(_now(rng, w) for w in partitions))
    return DelayedFetchCase(params, partitions, tuple(ops))


def compare_random(bridge: KafkaBridge, rng: random.Random, steps: int) -> tuple[int, int, str]:
    """Random operations of about `steps` ops through Kafka's DelayedFetch and ours (a broker-side bridge):
    (ops compared, ops that differ, the smallest differing operation with its first differing op's answers)."""
    return compare_drawn(lambda: random_case(rng), steps, lambda cases: kafka_answers(bridge, cases),
                         reference_answers, encode_case, "op")
