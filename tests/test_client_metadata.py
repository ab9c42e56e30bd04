"""The client's metadata cache (`reference.client_metadata`) on the cases of Kafka's own MetadataTest
(clients/src/test/java/org/apache/kafka/clients/MetadataTest.java), with its expected values. The whole class is
compared with each release's kafka-clients in tests/test_kafka_client_metadata.py."""

from __future__ import annotations

import pytest

from kcheck.reference import client_metadata as cm

TP = ("a", 0)


def _response(epoch: int, topic_id: int = 0, version: int = 12, error: int = 0) -> cm.MetadataResponse:
    """RequestTestUtils.metadataUpdateWith(Ids): one broker, topic a with one partition led by node 0."""
    partitions = () if error else (cm.ResponsePartition(0, 0, 0, epoch),)
    return cm.MetadataResponse(version, (0,), (cm.ResponseTopic("a", topic_id, error, False, partitions),))


EMPTY = cm.MetadataResponse(12, (0,), ())


def _metadata() -> cm.Metadata:
    m = cm.Metadata(100, 100, 1000)
    m.update(0, EMPTY, False, 0)
    return m


def test_update_last_epoch() -> None:
    """testUpdateLastEpoch."""
    m = _metadata()
    assert not any(m.update_last_seen_epoch_if_newer(TP, e) for e in (0, 1, 2))  # no epoch known: nothing
    assert m.last_seen.get(TP) is None
    m.update(0, _response(10), False, 1)
    assert m.last_seen[TP] == 10
    assert not m.update_last_seen_epoch_if_newer(TP, 1) and not m.update_last_seen_epoch_if_newer(TP, 10)
    assert m.update_last_seen_epoch_if_newer(TP, 12) and m.last_seen[TP] == 12
    m.update(0, _response(12), False, 2)
    m.update(0, _response(11), False, 3)  # an older epoch does not overwrite
    assert m.last_seen[TP] == 12


def test_epoch_update_on_changed_topic_ids() -> None:
    """testEpochUpdateOnChangedTopicIds: a new topic id lets a lower epoch in."""
    m = _metadata()
    m.update(0, _response(100), False, 1)
    expected = [(10, 1, 10), (10, 1, 10), (12, 1, 12), (3, 2, 3), (20, 3, 20)]
    for epoch, topic_id, seen in expected:
        m.update(0, _response(epoch, topic_id), False, 2)
        assert m.last_seen[TP] == seen


def test_epoch_update_after_topic_deletion() -> None:
    """testEpochUpdateAfterTopicDeletion: the epoch outlives the topic's error, a re-created topic resets it."""
    m = _metadata()
    m.update(0, _response(10, 1), False, 1)
    m.update(0, _response(0, 0, error=3), False, 1)  # UNKNOWN_TOPIC_OR_PARTITION
    assert m.last_seen[TP] == 10
    m.update(0, _response(5, 2), False, 1)
    assert m.last_seen[TP] == 5


def test_out_of_band_epoch_update() -> None:
    """testOutOfBandEpochUpdate: a newer epoch seen elsewhere makes the cached partition stale until a response
    with that epoch or newer."""
    m = _metadata()
    assert not m.update_last_seen_epoch_if_newer(TP, 99)
    m.update(0, _response(100), False, 10)
    assert m.update_last_seen_epoch_if_newer(TP, 101)
    assert TP in m.snapshot.partitions and m.partition_metadata_if_current(TP) is None
    m.update(0, _response(100), False, 20)
    assert m.partition_metadata_if_current(TP) is None and m.last_seen[TP] == 101
    m.update(0, _response(101), False, 30)
    assert m.partition_metadata_if_current(TP) is not None and m.last_seen[TP] == 101


def test_no_epoch() -> None:
    """testNoEpoch and testIgnoreLeaderEpochInOlderMetadataResponse: no usable epoch, none remembered."""
    m = _metadata()
    m.update(0, _response(-1), False, 10)
    assert m.last_seen.get(TP) is None and m.current_leader(TP) == (0, None)
    m.update_last_seen_epoch_if_newer(TP, 10)
    assert m.partition_metadata_if_current(TP).epoch is None
    m.update(0, _response(10, version=8), False, 20)  # before v9 the epoch is not trusted
    assert m.last_seen.get(TP) is None and m.current_leader(TP) == (0, None)


@pytest.mark.parametrize(("backoff", "expire"), [(100, 1000), (1000, 100), (0, 0), (0, 100), (100, 0)])
def test_time_to_next_update(backoff: int, expire: int) -> None:
    """checkTimeToNextUpdate (testTimeToNextUpdate), exponential backoff disabled as there."""
    now = 10000
    m = cm.Metadata(backoff, backoff, expire)
    assert m.time_to_next_update(now) == 0
    m.update(0, EMPTY, False, now)
    assert m.time_to_next_update(now) == max(backoff, expire)
    m.request_update(True)
    assert m.time_to_next_update(now) == backoff


def test_a_jittered_backoff_is_not_modelled() -> None:
    with pytest.raises(ValueError, match="jitter"):
        cm.backoff(100, 1000, 1)
