"""Retention against a real UnifiedLog, answer for answer (marker `kafka`).

Scripts of appends, rolls, high watermark moves, DeleteRecords, retention runs and snapshots run on Kafka's
UnifiedLog (kcheck.reference.kafka_retention, request RT) and on our reference (`reference_script`); every answer
must match: each run's deletion count and, after it, every segment's base offset, size in bytes, max timestamp and
end, the log start offset, high watermark and log end offset. Configurations are drawn around the boundaries
(retention.bytes at the log size minus a prefix of segments, plus or minus a byte; retention.ms at the age of a
segment, plus or minus a millisecond), over all cleanup policies and both timestamp types.

Default run: 4.4.0. 4.1.2 is `slow` (or KCHECK_KAFKA_RELEASES). 4.0.x: UnifiedLog is Scala in kafka_2.13, not on
the bridge classpath, so the RT handler is skipped there (checked, `slow`).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.reference.kafka_bridge import KafkaBridgeError
from kcheck.reference.kafka_retention import (
    Append,
    DeleteRecords,
    HighWatermark,
    Retain,
    RetentionScript,
    Roll,
    SetLastModified,
    Snapshot,
    map_retention,
    reference_script,
)
from kcheck.reference.log_retention import (
    CLEANUP_POLICIES,
    OffsetOutOfRange,
    RetentionConfig,
    append,
    delete_records,
    empty_log,
    retention_pass,
    roll,
    set_last_modified,
    update_high_watermark,
)

pytestmark = pytest.mark.kafka

RELEASES: list = list(ENV_RELEASES) or ["4.4.0", pytest.param("4.1.2", marks=pytest.mark.slow)]
NEWEST = RELEASES[0] if isinstance(RELEASES[0], str) else "4.4.0"
PER_EXAMPLE = 110
BATCH = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)


def _reference_state(script: RetentionScript, upto: int):
    """Our reference's log just before op `upto` (to place boundaries; the comparison replays everything)."""
    state = empty_log()
    for op in script.ops[:upto]:
        if isinstance(op, Append):
            state = append(state, op.timestamps, op.value_bytes, op.clock, script.log_append_time, op.key_bytes)
        elif isinstance(op, Roll):
            state = roll(state)
        elif isinstance(op, HighWatermark):
            state = update_high_watermark(state, op.offset)
        elif isinstance(op, DeleteRecords):
            try:
                state = delete_records(state, op.offset)[0]
            except OffsetOutOfRange:
                pass
        elif isinstance(op, Retain):
            state = retention_pass(state, script.config, op.now).state
        elif isinstance(op, SetLastModified):
            state = set_last_modified(state, op.ms)
    return state


def _touch(rng: random.Random, clock: int) -> tuple[SetLastModified, ...]:
    """Every segment file's mtime set before a retention run: Kafka's is the wall clock, not the log's clock."""
    return (SetLastModified(max(0, clock - rng.randrange(2000))),)


def random_script(rng: random.Random) -> RetentionScript:
    policy = rng.choice(CLEANUP_POLICIES + (("delete",),) * 3)
    keyed = "compact" in policy  # a compacted topic refuses null keys
    log_append_time = rng.random() < 0.25
    no_ts = rng.random() < 0.2  # records without timestamps: retention judges their segments by file mtime
    ops: list = []
    clock = rng.randrange(10_000)
    for _ in range(rng.randrange(1, 22)):
        r = rng.random()
        if r < 0.5:
            clock += rng.randrange(300)
            n = rng.choice((1, 1, 2, 3))
            ts = tuple(-1 if no_ts and rng.random() < 0.7 else max(0, clock + rng.randrange(-500, 200))
                       for _ in range(n))
            key = rng.choice((0, 3, 200)) if keyed else rng.choice((None, None, 0, 3, 200))
            ops.append(Append(clock, ts, rng.choice((0, 1, 10, 100, 300)), key))
        elif r < 0.68:
            ops.append(Roll())
        elif r < 0.8:
            ops.append(HighWatermark(rng.randrange(-1, 40) if rng.random() < 0.4 else 10**6))
        elif r < 0.87:
            ops.append(DeleteRecords(rng.randrange(0, 40)))
        else:
            clock += rng.randrange(1000)
            ops.extend((*_touch(rng, clock), Retain(clock), Snapshot()))
    if rng.random() < 0.7:
        ops.append(HighWatermark(10**6))
    clock += rng.randrange(1000)
    ops.extend((Snapshot(), *_touch(rng, clock), Retain(clock), Snapshot(), *_touch(rng, clock),
                Retain(clock + rng.randrange(2000)), Snapshot()))
    script = RetentionScript(RetentionConfig(), tuple(ops), log_append_time)
    # boundaries of the first retention run: a prefix of segments' bytes, a segment's age, each +-1
    first = next(i for i, op in enumerate(ops) if isinstance(op, Retain))
    state = _reference_state(script, first)
    now = ops[first].now
    cut = sum(s.size for s in state.segments[:rng.randrange(len(state.segments) + 1)])
    size = rng.choice((-1, 0, state.size - cut + rng.choice((-1, 0, 0, 1)), rng.randrange(3000)))
    seg = rng.choice(state.segments)
    judged = seg.retention_timestamp() if seg.size else now
    ms = rng.choice((-1, 0, now - judged + rng.choice((-1, 0, 1)), rng.randrange(3000)))
    return RetentionScript(RetentionConfig(max(ms, -1), size, policy), tuple(ops), log_append_time)


def _compare(version: str, scripts: list[RetentionScript]) -> None:
    answers = map_retention(_kafka(version), scripts)
    bad = [(s, k) for s, k in zip(scripts, answers, strict=True) if k != reference_script(s)]
    if bad:
        s, k = min(bad, key=lambda b: len(b[0].ops))
        pytest.fail(f"{len(bad)}/{len(scripts)} scripts differ on {version}; smallest:\n{s}\nKafka: {k}\n"
                    f"ours:  {reference_script(s)}")


# The UnifiedLogTest retention scenarios of tests/test_log_retention.py, on the real log.
def _singletons(n: int, per_segment: int, ts: int, key: int | None = None) -> list:
    ops: list = []
    for i in range(n):
        if i and i % per_segment == 0:
            ops.append(Roll())
        ops.append(Append(5000, (ts,), 4, key))
    return ops


NOW = 1_700_000_000_000
SCENARIOS = {
    "testRetentionIdempotency": RetentionScript(RetentionConfig(900), (
        Append(NOW, (NOW + 100,), 1), Roll(), Append(NOW, (NOW,), 1), Roll(), Append(NOW, (NOW + 100,), 1),
        HighWatermark(3), DeleteRecords(1), Retain(NOW + 901), Snapshot(), Retain(NOW + 901), Snapshot())),
    "testRetentionDeletesProducerStateSnapshots": RetentionScript(RetentionConfig(60_000, 0), (
        Append(NOW, (NOW,), 1), Roll(), Append(NOW, (NOW,), 1), Roll(), Append(NOW, (NOW,), 1), HighWatermark(3),
        Retain(NOW + 60_001), Snapshot())),
    "testDeleteOldSegments": RetentionScript(RetentionConfig(999), (
        *_singletons(100, 5, NOW - 1000), Retain(NOW), Snapshot(),
        *(x for hw in range(25, 31) for x in (HighWatermark(hw), Retain(NOW), Snapshot())),
        HighWatermark(100), Retain(NOW), Snapshot())),
    "testLogDeletionAfterDeleteRecords": RetentionScript(RetentionConfig(), (
        *_singletons(15, 5, NOW), HighWatermark(15),
        *(x for lso in (1, 6, 15) for x in (DeleteRecords(lso), Retain(NOW), Snapshot())))),
    "shouldDeleteSizeBasedSegments": RetentionScript(RetentionConfig(retention_bytes=720), (
        *_singletons(15, 5, NOW), HighWatermark(15), Retain(NOW), Snapshot())),
    "shouldNotDeleteSizeBasedSegmentsWhenUnderRetentionSize": RetentionScript(RetentionConfig(retention_bytes=1080), (
        *_singletons(15, 5, NOW), HighWatermark(15), Retain(NOW), Snapshot())),
    "shouldDeleteTimeBasedSegmentsReadyToBeDeleted": RetentionScript(RetentionConfig(10_000), (
        *_singletons(15, 5, 10), HighWatermark(15), Retain(NOW), Snapshot())),
    "shouldNotDeleteSegmentsWhenPolicyDoesNotIncludeDelete": RetentionScript(
        RetentionConfig(10_000, cleanup_policy=("compact",)), (
            *_singletons(15, 5, 10, key=4), HighWatermark(15), SetLastModified(NOW - 20_000), Retain(NOW),
            Snapshot())),
    "records without timestamps, judged by file mtime": RetentionScript(RetentionConfig(1000), (
        *_singletons(15, 5, -1), HighWatermark(15), SetLastModified(NOW - 500), Retain(NOW), Snapshot(),
        SetLastModified(NOW - 1001), Retain(NOW), Snapshot())),
    "shouldDeleteSegmentsReadyToBeDeletedWhenCleanupPolicyIsCompactAndDelete": RetentionScript(
        RetentionConfig(10_000, cleanup_policy=("compact", "delete")), (
            *_singletons(15, 5, 10, key=4), HighWatermark(15), Retain(NOW), Snapshot())),
    "shouldDeleteStartOffsetBreachedSegmentsWhenPolicyDoesNotIncludeDelete": RetentionScript(
        RetentionConfig(10_000, cleanup_policy=("compact",)), (
            *_singletons(15, 5, 10, key=4), HighWatermark(15), DeleteRecords(5), Retain(NOW), Snapshot())),
    # ours: the size pass runs before the time pass (an expired segment behind a young one goes in the same run)
    "size pass before time pass": RetentionScript(RetentionConfig(100, 156), (
        Append(1000, (950,), 10), Roll(), Append(1000, (800,), 10), Roll(), Append(1000, (990,), 10),
        HighWatermark(2), Snapshot(), Retain(1000), Snapshot())),
    "testCannotDeleteSegmentsAtOrAboveHighWatermark": RetentionScript(RetentionConfig(999), (
        *_singletons(100, 7, NOW - 1000),
        *(x for hw in range(101) for x in (HighWatermark(hw), Retain(NOW), Snapshot())))),
    "testCannotIncrementLogStartOffsetPastHighWatermark": RetentionScript(RetentionConfig(999), (
        *_singletons(100, 7, NOW), HighWatermark(25), DeleteRecords(26), DeleteRecords(25), Snapshot())),
}


def _version(p) -> str:
    return p if isinstance(p, str) else p.values[0]


def _marks(p):
    return () if isinstance(p, str) else p.marks


@pytest.mark.parametrize("version", [pytest.param(_version(v), marks=_marks(v), id=_version(v)) for v in RELEASES])
def test_unified_log_test_scenarios(version):
    scripts = list(SCENARIOS.values())
    answers = map_retention(_kafka(version), scripts)
    for (name, script), kafka in zip(SCENARIOS.items(), answers, strict=True):
        assert kafka == reference_script(script), name
    # the scenarios' own expectations, on Kafka's answers
    idem = answers[0]
    assert [a for a in idem if a[0] == "D"] == [("D", 2), ("D", 0)]
    last = answers[list(SCENARIOS).index("testCannotDeleteSegmentsAtOrAboveHighWatermark")][-1]
    assert last[1] == 100 and len(last[4]) == 1 and last[4][0].size == 0
    assert answers[-1][1] == ("S", "XOffsetOutOfRangeException") and answers[-1][2] == ("S", "1")
    order = answers[list(SCENARIOS).index("size pass before time pass")]
    assert order[2] == ("D", 2) and [s.base_offset for s in order[3][4]] == [2]


@pytest.mark.parametrize("version", [pytest.param(_version(v), marks=_marks(v), id=_version(v)) for v in RELEASES])
def test_random_scripts(version):
    @BATCH
    @given(st.integers(0, 2**32 - 1))
    def run(seed):
        rng = random.Random(seed)
        _compare(version, [random_script(rng) for _ in range(PER_EXAMPLE)])

    run()


@pytest.mark.slow
def test_unified_log_is_scala_in_4_0():
    bridge = _kafka("4.0.2")
    assert "RT" not in bridge.words and "KcheckStorageRetention" in bridge.skipped
    with pytest.raises(KafkaBridgeError):
        map_retention(bridge, [SCENARIOS["testRetentionIdempotency"]])
