"""Differential: `kcheck.reference.delayed_fetch.DelayedFetch` against each release's real kafka.server.DelayedFetch.

Each example draws a batch of random operations (`kafka_delayed_fetch.random_case`) and sends them in one round trip
to the broker-side bridge (word DFETCH: the Scala class with a Mockito ReplicaManager and Partition answering from
the script); every op's result, the collaborators' calls in order, the completion and expiry counts and what
onComplete asks to read are compared. Then the cases of Kafka's DelayedFetchTest (1eb7644349) through the bridge,
with the test's expectations. KCHECK_KAFKA_RELEASES="4.0.2,4.4.0" overrides the releases.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES, assert_broker_side_ops_agree, kafka_bridge
from kcheck.reference import delayed_fetch as df
from kcheck.reference import fetch as rf
from kcheck.reference import kafka_delayed_fetch as kdf

pytestmark = pytest.mark.kafka

RELEASES = list(ENV_RELEASES) or ["4.4.0", "4.1.2", "4.0.2", "3.9.1"]
BATCH = settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
OPS = 600  # per release: operations of up to 6 ops


@pytest.mark.parametrize("version", RELEASES)
@BATCH
@given(seed=st.integers(0, 2**63))
def test_delayed_fetch_ops_as_kafka(version: str, seed: int) -> None:
    assert_broker_side_ops_agree(kdf.compare_random, version, seed, OPS)


def _follower_case(waiting: df.Waiting, now: df.PartitionNow) -> kdf.DelayedFetchCase:
    """DelayedFetchTest's set-up: a follower (replica 1) reading to the log end, min bytes 1, a 500 ms wait."""
    return kdf.DelayedFetchCase(df.FetchWait(1, rf.LOG_END, 1, 500), (waiting,), ((now,),))


def _end(m: rf.OffsetMetadata, **kw: object) -> df.PartitionNow:
    return df.PartitionNow(log_end=m, high_watermark=m, last_stable=m, **kw)  # type: ignore[arg-type]


_AT_500 = df.Waiting(rf.OffsetMetadata(500), rf.PartitionFetch(500, 1024, 10))
_AT_450 = df.Waiting(rf.OffsetMetadata(450), rf.PartitionFetch(450, 1024, 10), 5)
# name -> (case, whether tryComplete completes it, as DelayedFetchTest asserts)
KAFKA_TEST_CASES = {
    "testFetchWithFencedEpoch": (_follower_case(_AT_500, df.PartitionNow(snapshot_error=rf.FENCED_LEADER_EPOCH)),
                                 True),
    "testNotLeaderOrFollower": (_follower_case(_AT_500, df.PartitionNow(lookup_error=rf.NOT_LEADER_OR_FOLLOWER)),
                                True),
    "testDivergingEpoch": (_follower_case(df.Waiting(rf.OffsetMetadata(500), rf.PartitionFetch(500, 1024, 10, 9)),
                                          _end(rf.OffsetMetadata(500, 0, 500), epoch_end=(rf.NONE, 9, 499))), True),
    "testDelayedFetchWithMessageOnlyHighWatermark endOffset=0": (_follower_case(_AT_450, _end(rf.OffsetMetadata(0))),
                                                                 True),
    "testDelayedFetchWithMessageOnlyHighWatermark endOffset=500": (
        _follower_case(_AT_450, _end(rf.OffsetMetadata(500))), False),
}


@pytest.mark.parametrize("version", RELEASES)
def test_kafka_delayed_fetch_test_cases(version: str) -> None:
    names = list(KAFKA_TEST_CASES)
    cases = [KAFKA_TEST_CASES[n][0] for n in names]
    answers = kdf.kafka_answers(kafka_bridge(version, server=True), cases)
    for name, case, (kafka,) in zip(names, cases, answers, strict=True):
        completes = KAFKA_TEST_CASES[name][1]
        assert [kafka] == kdf.reference_answers(case), name
        ret, _, state, read = kafka.split("/")
        # tryComplete's result, isCompleted, and the response callback run (once) exactly when it completes
        assert (ret, state.split(":")[:3]) == (("1", ["1", "1", "1"]) if completes else ("0", ["0", "0", "0"])), name
        assert (read != "~") == completes, name
