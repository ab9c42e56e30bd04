"""Differential: `kcheck.reference.fetch` against each release's real classes (reference/harness/KcheckFetch.java).

EPOCH drives a real LeaderEpochFileCache, FPARAMS FetchIsolation.of and FetchParams, FREAD UnifiedLog.read /
LocalLog.read on a real log of segment files built from the same batches (`kafka_fetch.random_*`: gaps, empty
segments, log start and high watermark inside batches, reads from below the log start to past the end, byte limits
around each batch's size). A few thousand inputs per rule and release; bench/bench_kafka_fetch.py runs a million.
KCHECK_KAFKA_RELEASES="4.0.2,4.4.0" overrides the releases.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.reference import kafka_fetch as kf
from kcheck.reference.log_segment import Batch, Record
from kcheck.reference.releases import profile

pytestmark = pytest.mark.kafka

RELEASES = list(ENV_RELEASES) or ["4.4.0", "4.1.2", "4.0.2", "3.9.1"]
BATCH = settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("rule", ["EPOCH", "FPARAMS", "FREAD"])
@BATCH
@given(seed=st.integers(0, 2**63))
def test_rule_as_kafka(version: str, rule: str, seed: int) -> None:
    # one seed per batch: Hypothesis' own Random is far too slow for thousands of draws
    inputs, differences, first = kf.compare(_kafka(version), version, rule, random.Random(seed), 4000)
    assert inputs >= 2000
    assert differences == 0, first


def _two_batches() -> kf.ReadCase:
    batch = Batch(0, (Record(0, 1000, -1, 10), Record(1, 1000, -1, 10), Record(2, 1000, -1, 10)))
    return kf.ReadCase(4096, 0, 4, ((0, (batch, Batch(3, (Record(0, 1000, -1, 500),)))),),
                       ((1, 1000, "l", 0), (3, 10, "l", 1), (3, 10, "l", 0), (4, 10, "h", 0)))


# Each release difference of the family, on the releases either side of it.
@pytest.mark.parametrize(("field", "before", "after"), [("fetch_offset_metadata_batch_base", "3.9.1", "4.0.2")])
def test_each_release_difference_is_kafkas(field: str, before: str, after: str) -> None:
    case = _two_batches()  # offset 1 lies inside the first batch: 3.9 names 1, 4.0 the batch's base 0 (KAFKA-17803)
    old, new = kf.reference_read(case, profile(before)), kf.reference_read(case, profile(after))
    assert old != new, field
    assert kf.kafka_read(_kafka(before), [case])[0] == old
    assert kf.kafka_read(_kafka(after), [case])[0] == new


def test_hard_max_bytes_only_while_fetch_params_has_a_version() -> None:
    inputs = [(2, -1, 0, 0), (3, -1, 0, 0)]
    for version, want in (("4.0.2", ["true", "false"]), ("4.1.2", ["-", "-"])):
        ours = [a.rsplit(":", 1)[1] for a in kf.reference_params(inputs, profile(version))]
        assert ours == want
        assert kf.kafka_params(_kafka(version), [inputs])[0] == kf.reference_params(inputs, profile(version))
