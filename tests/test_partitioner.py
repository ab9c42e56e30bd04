"""The producer's partitioner reference (`kcheck.reference.partitioner`) against Kafka's own tests and documented
behaviour, and against kafka-python's murmur2 (real code, no JVM). The differential against each release's
kafka-clients classes is tests/test_kafka_partitioner.py."""

from __future__ import annotations

import random

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kcheck.reference import kafka_partitioner as kp
from kcheck.reference.partitioner import (
    BuiltInPartitioner,
    PartitionerError,
    PartitionLeader,
    murmur2,
    new_partitioner,
    partition_for_key,
    place_keys,
    place_records,
    record_partition,
    serialize_key,
    to_positive,
    topic_of,
)
from kcheck.reference.releases import profile


def test_murmur2_matches_kafkas_utils_test():
    """clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2."""
    cases = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}
    assert {k: murmur2(k) for k in cases} == cases


def test_murmur2_agrees_with_kafka_python():
    rng = random.Random(1)
    keys = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(40))) for _ in range(3000)]
    assert [murmur2(k) & 0xFFFFFFFF for k in keys] == [kafka_python_murmur2(k) for k in keys]


def test_a_hash_of_integer_min_value_goes_to_partition_zero():
    """toPositive clears the sign bit; Math.abs(Integer.MIN_VALUE) would stay negative."""
    key = kp.murmur2_preimage(-(2**31))
    assert murmur2(key) == -(2**31) and to_positive(murmur2(key)) == 0
    assert partition_for_key(key, 7) == 0
    for target in (-1, 0, 2**31 - 1, 12345):
        assert murmur2(kp.murmur2_preimage(target, b"pref")) == target


def test_keys_count_every_partition_and_null_keys_are_left_to_the_sticky_partitioner():
    assert record_partition(None, 6) is None
    assert record_partition("k", 6, ignore_keys=True) is None
    assert record_partition("", 6) == partition_for_key(b"", 6)
    assert record_partition("foobar", 6) == to_positive(-790332482) % 6
    with pytest.raises(PartitionerError, match="ArithmeticException"):
        partition_for_key(b"x", 0)


def test_string_keys_are_utf8_and_an_unpaired_surrogate_is_a_question_mark():
    assert serialize_key("\u20ac") == b"\xe2\x82\xac"
    assert serialize_key("a\ud800b") == b"a?b"
    assert serialize_key("\ud83d\ude00") == "\U0001f600".encode()  # a pair written as two code points
    assert serialize_key(b"\xff") == b"\xff"


def test_load_stats_follow_kafkas_worked_example():
    """BuiltInPartitioner's comment: queue sizes 0 3 1 give the table 4 5 8; draws 0..3 pick partition 0, 4 picks
    partition 1, 5..7 partition 2."""
    topic = topic_of(3)
    draws = iter(range(8))
    p = BuiltInPartitioner(1, draw=lambda: next(draws))
    p.update_partition_load_stats([0, 3, 1], [0, 1, 2], [None] * 3, 3)
    assert p.total is not None and p.total.cft == (4, 5, 8)
    assert [p.next_partition(topic) for _ in range(8)] == [0, 0, 0, 0, 1, 2, 2, 2]


def test_adaptive_frequencies_are_reciprocal_to_queue_sizes():
    """BuiltInPartitionerTest.adaptivePartitionsTest: sequential draws, sticky batch size 1, one byte per record."""
    queue = [5, 0, 3, 0, 1]
    counter = iter(range(10**6))
    p = BuiltInPartitioner(1, draw=lambda: next(counter))
    p.update_partition_load_stats(list(queue), list(range(5)), [None] * 5, 5)
    topic = topic_of(5)
    freq = [0] * 5
    assert p.total is not None
    for _ in range(2 * p.total.cft[4]):  # two cycles of loadStatsRangeEnd()
        freq[p.append(1, topic)] += 1
    assert freq == [2 * (6 - q) for q in queue]


def test_all_equal_queues_mean_a_uniform_draw_unless_some_were_excluded():
    p = BuiltInPartitioner(1, draw=lambda: 0)
    p.update_partition_load_stats([2, 2, 2], [0, 1, 2], [None] * 3, 3)
    assert p.total is None
    p.update_partition_load_stats([2, 2, 2], [0, 1, 2], [None] * 3, 2)  # one excluded for latency
    assert p.total is not None


def test_the_sticky_partition_switches_after_batch_size_or_twice_it():
    draws = iter([0, 1, 2])
    p = BuiltInPartitioner(10, draw=lambda: next(draws))
    topic = topic_of(3)
    # 12 >= 10 but the batch is not ready; 24 >= 2 * 10 switches all the same
    assert [p.append(6, topic, enable_switch=False) for _ in range(4)] == [0, 0, 0, 0]
    assert p.append(10, topic) == 1 and p.peek_current_partition(topic) == 2  # 10 >= 10 with switching on


def test_rack_aware_on_4_4_only_and_it_needs_a_client_rack():
    """KIP-1123: partitions led in the client's rack first, all available partitions when none is."""
    topic = (PartitionLeader(0, 1, "a"), PartitionLeader(1, 2, "b"), PartitionLeader(2, None))
    assert profile("4.4.0").partitioner_rack_aware and not profile("4.3.1").partitioner_rack_aware
    assert new_partitioner("4.4.0", rack_aware=True, client_rack="b", draw=lambda: 0).append(1, topic) == 1
    assert new_partitioner("4.4.0", rack_aware=True, client_rack="z", draw=lambda: 0).append(1, topic) == 0
    assert new_partitioner("4.1.2", rack_aware=True, client_rack="b", draw=lambda: 0).append(1, topic) == 0
    with pytest.raises(PartitionerError, match="client.rack must be provided"):
        new_partitioner("4.4.0", rack_aware=True, client_rack=" ")
    new_partitioner("4.1.2", rack_aware=True)  # an older client ignores the setting
    with pytest.raises(PartitionerError, match="stickyBatchSize must be >= 1"):
        BuiltInPartitioner(0)


def test_releases_agree_on_keys_and_differ_on_rack_aware_keyless_records():
    topic = topic_of(6, racks=["a", "b"] * 3)
    keys = ["order-1", b"", None, None, "user:9", None]
    placed = place_keys(keys, topic, ["4.4.0", "4.1.2", "4.0.2", "3.9.1"], rack_aware=True, client_rack="b",
                        record_bytes=20_000, seed=5)
    assert all(p.agreed for p, k in zip(placed, keys, strict=True) if k is not None)
    rack_b = {1, 3, 5}
    assert all(p.partitions["4.4.0"] in rack_b for p, k in zip(placed, keys, strict=True) if k is None)
    assert place_records(keys, topic, "4.1.2", record_bytes=20_000, seed=5) == [p.partitions["4.1.2"] for p in placed]
    # the older clients draw among all six partitions: with these draws some keyless records land outside rack b
    assert {v for p in placed if not p.agreed for v in p.disagreeing()} == {"4.1.2", "4.0.2", "3.9.1"}
