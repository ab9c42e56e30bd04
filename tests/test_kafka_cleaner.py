"""The log cleaner against real Kafka, byte for byte (marker `kafka`).

Kafka's `LogCleanerManager.grabFilthiestCompactedLog` and `Cleaner.doClean` run on real `UnifiedLog`s in a temp dir
(reference/kafka_cleaner.py, handler reference/harness/KcheckStorageCleaner.java) beside reference/log_cleaner.py:
every round's choice (log, first dirty and first uncleanable offsets, clean and cleanable bytes, forced by
max.compaction.lag.ms or not, the pass's end offset), the cleaner checkpoints, and every segment's base offset, size
in bytes and batches (offsets, KIP-534 delete horizon, the records kept).

Default run: 4.4.0, random scenarios of 1-3 logs and 1-3 rounds plus targeted ones; 4.1.2 is `slow`. 4.0.x has the
cleaner in Scala (kafka_2.13, not on the bridge classpath): no differential there. KCHECK_KAFKA_RELEASES="4.1.2"
overrides the list. Skipped only when `java` or `javac` is missing.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.reference.kafka_cleaner import (
    CleanerAnswer,
    CleanerScenario,
    differences,
    encode_scenario,
    map_cleaner,
    parse_spec,
    random_scenario,
)
from kcheck.reference.log_cleaner import CleanerConfig, Round

pytestmark = pytest.mark.kafka

RELEASES = list(ENV_RELEASES) or ["4.4.0", pytest.param("4.1.2", marks=pytest.mark.slow)]


def _version(param) -> str:
    return param if isinstance(param, str) else param.values[0]


def _scenario(cfg: CleanerConfig, checkpoints, *rounds: tuple[int, list[str]]) -> CleanerScenario:
    return CleanerScenario(cfg, tuple(checkpoints), tuple(
        Round(now, tuple(parse_spec(a) for a in appends), tuple(None for _ in appends)) for now, appends in rounds))


def _agree(version: str, scenarios: list[CleanerScenario]) -> list[CleanerAnswer]:
    answers = map_cleaner(_kafka(version), scenarios)
    diffs = differences(scenarios, answers, version)
    if diffs:
        s, theirs, ours = min(diffs, key=lambda d: len(encode_scenario(d[0])))
        pytest.fail(f"{len(diffs)} of {len(scenarios)} differ; smallest:\n{encode_scenario(s)}\n"
                    f"kafka: {theirs}\nours:  {ours}")
    return answers  # type: ignore[return-value]


def _offsets(answer: CleanerAnswer, log: int = 0) -> list[int]:
    return [r[0] for seg in answer.logs[log] for b in seg[2] for r in b[3]]


@pytest.mark.parametrize("version", RELEASES)
def test_tombstone_kept_until_the_horizon_of_its_first_pass(version) -> None:
    # KIP-534: the first pass keeping a tombstone stamps its batch with now + delete.retention.ms; passes before
    # that time keep it, the first at or after it drops it (LogCleanerTest.testCleanTombstone on the real classes).
    cfg = CleanerConfig(delete_retention_ms=100, min_cleanable_ratio=0.1)
    s = _scenario(cfg, [None], (1000, ["a:1:10;a:~:20|"]), (1050, ["b:1:1040|"]), (1100, ["c:1:1090|"]))
    (ans,) = _agree(_version(version), [s])
    assert [r is not None for r in ans.rounds] == [True, True, True]
    horizons = {b[2] for seg in ans.logs[0] for b in seg[2] if b[3] and b[3][0][0] == 1}
    assert _offsets(ans) == [2, 3] and horizons == set()
    (mid,) = _agree(_version(version), [CleanerScenario(cfg, s.checkpoints, s.rounds[:2])])
    assert _offsets(mid) == [1, 2] and {b[2] for seg in mid.logs[0] for b in seg[2] if b[0] == 1} == {1100}


@pytest.mark.parametrize("version", RELEASES)
def test_partial_clean_when_the_offset_map_fills(version) -> None:
    # LogCleanerTest.testPartialSegmentClean on the real classes: room for one key, checkpoint 2: the pass maps
    # offset 2, ends at 3 and keeps 1..4.
    cfg = CleanerConfig(map_bytes=2 * 24, load_factor=0.75, min_cleanable_ratio=0.0)
    s = _scenario(cfg, [2], (100, ["0:0:1;1:1:1;0:0:1;1:1:1;0:0:1|"]))
    (ans,) = _agree(_version(version), [s])
    assert ans.rounds[0] is not None and ans.rounds[0][6] == 3 and ans.checkpoints == (3,)
    assert _offsets(ans) == [1, 2, 3, 4]


@pytest.mark.parametrize("version", RELEASES)
def test_last_batch_of_a_pass_kept_empty(version) -> None:
    # LogCleanerTest.testCleanSegmentsRetainingLastEmptyBatch on the real classes: a one-key map stops the first
    # pass at offset 0, yet the tombstone past it is stamped (horizon 100 + 0); the second pass (at 200, from the
    # checkpoint 1) drops it, and its batch, the pass's last, stays as an empty 61-byte batch holding offset 1.
    cfg = CleanerConfig(map_bytes=2 * 24, load_factor=0.75, delete_retention_ms=0, min_cleanable_ratio=0.0)
    s = _scenario(cfg, [None], (100, ["a:1:1;b:~:2|"]), (200, ["."]))
    (ans,) = _agree(_version(version), [s])
    assert [r[6] if r else None for r in ans.rounds] == [1, 2]
    first = ans.logs[0][0]
    assert first[2] == ((0, 0, None, ((0, "a", "1"),)), (1, 1, None, ()))
    assert first[1] == 70 + 61


@pytest.mark.parametrize("version", RELEASES)
def test_emptied_batch_kept_at_the_pass_end_or_the_high_watermark(version) -> None:
    # Found by this differential: which emptied batch stays (empty) changed in 4.4.0. Up to 4.3 (Kafka 4.1.2 here;
    # 4.2.0's and 4.3.0's Cleaner read the same field) it is the batch ending the pass (next offset = the first
    # uncleanable offset); since 4.4.0 Cleaner.cleanSegments compares with log.highWatermark() instead. Here the
    # pass ends at 2 while the high watermark is 3: 4.1.2 keeps an empty batch at offset 1, 4.4.0 drops it.
    v = _version(version)
    cfg = CleanerConfig(map_bytes=2 * 24, load_factor=0.75, delete_retention_ms=0, min_cleanable_ratio=0.0)
    s = _scenario(cfg, [None], (100, ["a:1:1;b:~:2|c:1:3"]), (200, ["."]))
    (ans,) = _agree(v, [s])
    batches = ans.logs[0][0][2]
    kept_empty = (1, 1, None, ()) in batches
    assert kept_empty == (v < "4.4")
    assert batches[0] == (0, 0, None, ((0, "a", "1"),))


@pytest.mark.parametrize("version", RELEASES)
def test_checkpoint_past_the_log_end_is_reset(version) -> None:
    # LogCleanerManagerTest.testDirtyOffsetResetIfLargerThanEndOffset / testCheckpointUpdatedForInvalidOffsetNotSelected
    cfg = CleanerConfig(min_cleanable_ratio=0.99)
    s = _scenario(cfg, [50, 1], (100, ["a:1:1;a:2:2|", "a:1:1|b:1:1|"]))
    (ans,) = _agree(_version(version), [s])
    assert ans.rounds[0] is not None and ans.rounds[0][:2] == (0, 0)


@pytest.mark.parametrize("version", RELEASES)
def test_max_compaction_lag_forces_a_clean(version) -> None:
    # LogCleanerManager.maxCompactionDelay: below min.cleanable.dirty.ratio, yet forced once the first dirty
    # segment's first batch is older than now - max.compaction.lag.ms.
    cfg = CleanerConfig(min_cleanable_ratio=0.99, max_compaction_lag_ms=100)
    early = _scenario(cfg, [1], (110, ["a:1:10|b:1:10|"]))
    late = _scenario(cfg, [1], (111, ["a:1:10|b:1:10|"]))
    a, b = _agree(_version(version), [early, late])
    assert a.rounds == (None,) and b.rounds[0] is not None and b.rounds[0][5] is True


@pytest.mark.parametrize("version", RELEASES)
@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(seeds=st.lists(st.integers(0, 2**32 - 1), min_size=100, max_size=100))
def test_random_scenarios_match_kafka(version, seeds: list[int]) -> None:
    _agree(_version(version), [random_scenario(random.Random(seed)) for seed in seeds])
