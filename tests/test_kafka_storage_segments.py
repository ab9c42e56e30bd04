"""Differential: `kcheck.reference.log_segment` against Kafka's LogSegment, OffsetIndex and TimeIndex.

Every example draws a batch of random inputs (configs with small segment.bytes, index.interval.bytes and
segment.index.bytes so that rolls, full indexes and relative-offset overflow happen; appends of several
batches with offset gaps, missing and out-of-order timestamps) and sends them in one bridge round trip
(words SEG_LOG, OFFSET_INDEX, TIME_INDEX of reference/harness/KcheckStorageSegments.java). The default run is
4.4.0; 4.1.2, 4.0.2 and 3.9.1 are `slow`. KCHECK_KAFKA_RELEASES="4.0.2,4.4.0" overrides the list.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.reference import kafka_storage as ks
from kcheck.reference.log_segment import Append, Batch, Record, SegmentConfig

pytestmark = pytest.mark.kafka

_slow = pytest.mark.slow
RELEASES: list = list(ENV_RELEASES) or ["4.4.0", *(pytest.param(v, marks=_slow) for v in ("4.1.2", "4.0.2", "3.9.1"))]
BATCH = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
PER_EXAMPLE = 200


@pytest.mark.parametrize("version", RELEASES)
@BATCH
@given(seed=st.integers(0, 2**63))
def test_segments_roll_and_index_as_kafka(version: str, seed: int) -> None:
    rng = random.Random(seed)  # one seed per batch: Hypothesis' own Random is far too slow for thousands of draws
    cases = [ks.random_case(rng) for _ in range(PER_EXAMPLE)]
    theirs = ks.kafka_outcomes(_kafka(version), cases)
    diffs = [(c, k, r) for c, k in zip(cases, theirs, strict=True) if k != (r := ks.reference_outcome(c, version))]
    if diffs:
        c, k, r = min(diffs, key=lambda d: len(ks.encode_case(d[0])))
        pytest.fail(f"{len(diffs)}/{len(cases)} differ; smallest:\n{ks.encode_case(c)}\nkafka: {k}\nours:  {r}")


@pytest.mark.parametrize("version", RELEASES)
@BATCH
@given(seed=st.integers(0, 2**63))
def test_indexes_answer_as_kafka(version: str, seed: int) -> None:
    rng = random.Random(seed)
    requests = [ks.random_index_ops(rng, time=bool(i % 2)) for i in range(PER_EXAMPLE)]
    theirs = ks.kafka_index_answers(_kafka(version), requests)
    diffs = [(q, k, r) for q, k in zip(requests, theirs, strict=True)
             if k != (r := ks.reference_index_answers(*q))]
    if diffs:
        q, k, r = min(diffs, key=lambda d: len(d[0][3]))
        pytest.fail(f"{len(diffs)}/{len(requests)} differ; smallest:\n{ks.encode_index_ops(*q)}\n"
                    f"kafka: {k}\nours:  {r}")


def test_translate_offset_names_the_base_offset_since_4_0() -> None:
    """FileRecords.searchForOffsetWithSize names the batch's base offset from 4.0 on, its last offset in 3.9."""
    batch = Batch(0, (Record(1, 0, -1, 3),))  # one record, at offset 1 of a batch based at 0
    c = ks.SegmentCase(SegmentConfig(), 0, (Append(0, (batch,)),), (0,))
    assert ks.reference_outcome(c).lookups[0][3] == (0, 0, batch.size)
    assert ks.reference_outcome(c, "3.9.1").lookups[0][3] == (1, 0, batch.size)
    assert ks.kafka_outcomes(_kafka("4.4.0"), [c])[0].lookups[0][3] == (0, 0, batch.size)


def test_a_failed_time_index_append_garbles_the_next_entry() -> None:
    """TimeIndex.maybeAppend writes the timestamp before converting the offset: when the offset is below the base,
    the buffer is left 8 bytes ahead, and the next append writes a misaligned entry then throws."""
    request = ("TIME_INDEX", 0, 48, [("a", (1, -1, 0)), ("a", (2, 2, 0)), ("l", (1,)), ("e", ())])
    ours = ks.reference_index_answers(*request)
    assert ours == ["IndexOffsetOverflowException", "IllegalStateException", "1:0", "1"]
    assert ks.kafka_index_answers(_kafka("4.4.0"), [request])[0] == ours
