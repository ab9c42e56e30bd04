"""Differential: `kcheck.reference.produce_admission.validate` against each release's LogValidator.

Each example draws a batch of random LogValidator calls (`kafka_produce_admission.random_case`, every rule in turn)
on record bytes our reference builds, and sends them in one bridge round trip (word LOGVAL of
reference/harness/KcheckLogValidator.java); the whole answer is compared: the exception, its message and the
per-record errors (batch index and message), or the offsets assigned, the max timestamp, the stamped batches with
their records and the target compression. KCHECK_KAFKA_RELEASES="4.0.2,4.4.0" overrides the releases.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.reference import kafka_produce_admission as kpa
from kcheck.reference import produce_admission as pa
from kcheck.reference.releases import profile

pytestmark = pytest.mark.kafka

RELEASES = list(ENV_RELEASES) or ["4.4.0", "4.1.2", "4.0.2", "3.9.1"]
BATCH = settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
PER_RULE = 300  # about 3,000 calls compared per release


@pytest.mark.parametrize("version", RELEASES)
@BATCH
@given(seed=st.integers(0, 2**63))
def test_log_validator_as_kafka(version: str, seed: int) -> None:
    rng = random.Random(seed)  # one seed per batch: Hypothesis' own Random is far too slow for thousands of draws
    cases = [kpa.random_case(rng, version, rule) for rule in kpa.RULES for _ in range(PER_RULE)]
    theirs = kpa.kafka_answers(_kafka(version), cases)
    diffs = [(c, k, r) for c, k in zip(cases, theirs, strict=True) if k != (r := kpa.reference_answer(c, version))]
    if diffs:
        c, k, r = min(diffs, key=lambda d: len(kpa.encode_case(d[0])))
        pytest.fail(f"{len(diffs)}/{len(cases)} differ; smallest:\n{kpa.encode_case(c)}\nkafka: {k}\nours:  {r}")


NOW = 1_700_000_000_000


def _one(ts: int, **kw: object) -> pa.ValidatorCase:
    batch = pa.BatchSpec((pa.Rec(0, 0, b"k", b"v"),), base_timestamp=ts)
    return pa.ValidatorCase((batch,), now=NOW, **kw)  # type: ignore[arg-type]


# Kafka's documented rules, each through the release's own LogValidator (not our reference): the code it gives.
DOCUMENTED = [
    # KIP-937: a timestamp exactly message.timestamp.before/after.max.ms away is accepted, one more is not
    ("before_bound_inclusive", _one(NOW - 1000, before_ms=1000), pa.NONE),
    ("before_bound_exceeded", _one(NOW - 1001, before_ms=1000), pa.INVALID_TIMESTAMP),
    ("after_bound_inclusive", _one(NOW + 1000, after_ms=1000), pa.NONE),
    ("after_bound_exceeded", _one(NOW + 1001, after_ms=1000), pa.INVALID_TIMESTAMP),
    # a compacted topic refuses a record without a key (KIP-467: INVALID_RECORD with the record's index)
    ("compacted_null_key", pa.ValidatorCase((pa.BatchSpec((pa.Rec(0, 0, b"k", b"v"), pa.Rec(1, 0, None, b"v"))),),
                                            compacted=True), pa.INVALID_RECORD),
    # a producer may not stamp LogAppendTime itself (on a LogAppendTime topic; on a CreateTime topic the batch's
    # max timestamp is checked as a CreateTime would be, and passes within the bounds)
    ("log_append_time_from_producer", pa.ValidatorCase((pa.BatchSpec((pa.Rec(0, 0, b"k", b"v"),),
                                                                     log_append_time=True, max_timestamp=NOW),),
                                                       now=NOW, log_append_time=True), pa.INVALID_TIMESTAMP),
    ("log_append_time_batch_on_create_time_topic", pa.ValidatorCase(
        (pa.BatchSpec((pa.Rec(0, 0, b"k", b"v"),), log_append_time=True, max_timestamp=NOW),), now=NOW,
        after_ms=0, before_ms=0), pa.NONE),
    # clients may not write control batches
    ("control_from_client", pa.ValidatorCase((pa.BatchSpec((pa.Rec(0, 0, b"k", b"v"),), control=True),)),
     pa.INVALID_RECORD),
]


@pytest.mark.parametrize(("name", "case", "code"), DOCUMENTED, ids=[d[0] for d in DOCUMENTED])
def test_documented_rules_on_every_release(name: str, case: pa.ValidatorCase, code: int) -> None:
    for version in RELEASES:
        kafka = kpa.kafka_answers(_kafka(version), [case])[0]
        assert pa.error_code(kafka) == code, (version, kafka)
        assert kpa.reference_answer(case, version) == kafka


def test_record_errors_name_each_bad_record() -> None:
    """KIP-467: every rejected record is listed with its index in the batch, and the first three in the message."""
    recs = tuple(pa.Rec(i, 0, None if i % 2 else b"k", b"v") for i in range(7))
    case = pa.ValidatorCase((pa.BatchSpec(recs),), compacted=True)
    kafka = kpa.kafka_answers(_kafka(RELEASES[0]), [case])[0].split("\t")
    assert kafka[2] == "InvalidRecordException"
    assert kafka[4::2] == ["1", "3", "5"]
    assert "3 record errors in total" in kafka[3]


def _gzip_case(**kw: object) -> pa.ValidatorCase:
    batch = pa.BatchSpec((pa.Rec(0, 0, b"key", b"value"),), compression="gzip")
    return pa.ValidatorCase((batch,), **kw)  # type: ignore[arg-type]


# Each release difference of the family: an input whose answer changes at the release that changed it, on the
# releases either side of it (4.2.2 and 4.3.1 for maxRecordBodySize, which 4.3.1 was built without).
DIFFERENCES = [
    ("log_validator_zstd_needs_ibp", "3.9.1", "4.0.2", _gzip_case(topic_compression="zstd", ibp_low=True)),
    ("log_validator_max_record_body", "4.1.2", "4.2.2", _gzip_case(max_record_body=5)),
    ("log_validator_max_record_body", "4.3.1", "4.4.0", _gzip_case(max_record_body=5)),
]


@pytest.mark.parametrize(("field", "before", "after", "case"), DIFFERENCES,
                         ids=[f"{d[0]}-{d[2]}" for d in DIFFERENCES])
def test_each_release_difference_is_kafkas(field: str, before: str, after: str, case: pa.ValidatorCase) -> None:
    old, new = kpa.reference_answer(case, before), kpa.reference_answer(case, after)
    assert old != new, f"{field}: the input does not tell {before} from {after}"
    assert kpa.kafka_answers(_kafka(before), [case])[0] == old
    assert kpa.kafka_answers(_kafka(after), [case])[0] == new


@pytest.mark.parametrize("version", ["3.9.1", "4.0.2"])
def test_timestamp_after_max_default_is_the_releases(version: str) -> None:
    assert kpa.kafka_timestamp_after_max_default(_kafka(version)) == profile(version).timestamp_after_max_default
