"""Fetch bounds and DelayedFetch on real brokers: the ported Scala rules of reference/fetch.py (Partition.fetchRecords'
checks, ReplicaManager.readFromLog's byte sharing, fetchMessages' answer-at-once test) and delayed_fetch.py's
DelayedFetch.tryComplete against raw Fetch v12 requests (kafka-python's protocol classes, one socket to the leader)
on the session's cluster.

The log each prediction is made on is the broker's own: every partition is first read whole, its batches parsed
(base offset, size, leader epoch), and the reference's log and epoch cache are built from them; the batch sizes are
also checked against the reference's size of the records produced. Timing checks have generous slack: a long poll
that data ends must answer well before its deadline, one that nothing ends must not answer before it.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from typing import Any

import pytest

from kcheck.reference import delayed_fetch as df
from kcheck.reference import fetch as rf
from kcheck.reference.log_segment import Batch, Record
from kcheck.reference.releases import profile

pytestmark = [pytest.mark.kafka, pytest.mark.cluster]

TOPIC = "fetch-bounds"
VERSION = 12  # topic names (v13 uses ids), current and last fetched epochs: every release 3.9-4.4 serves it
VALUES = {0: [3000, 100, 100], 1: [200, 200, 200], 2: [50, 50, 50, 50]}
RELEASE = profile(os.environ.get("KCHECK_CLUSTER_RELEASE", "4.4.0"))  # the fixture's release


class Conn:
    """One connection to a broker: framed requests, responses in order."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.correlation = 0

    def fetch(self, parts: list[tuple[int, rf.PartitionFetch]], max_bytes: int = 1 << 20, min_bytes: int = 0,
              max_wait_ms: int = 0) -> dict[int, Any]:
        from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse

        topic = FetchRequest.FetchTopic(topic=TOPIC, partitions=[FetchRequest.FetchTopic.FetchPartition(
            partition=p, fetch_offset=f.fetch_offset, partition_max_bytes=f.max_bytes, log_start_offset=-1,
            current_leader_epoch=-1 if f.current_leader_epoch is None else f.current_leader_epoch,
            last_fetched_epoch=-1 if f.last_fetched_epoch is None else f.last_fetched_epoch) for p, f in parts])
        req = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
                           isolation_level=0, session_id=0, session_epoch=-1, topics=[topic],
                           forgotten_topics_data=[], rack_id="")
        self.correlation += 1
        req.with_header(correlation_id=self.correlation, client_id="kcheck-fetch")
        self.sock.sendall(req.encode(version=VERSION, header=True, framed=True))
        size = struct.unpack(">i", self._read(4))[0]
        resp = FetchResponse.decode(self._read(size), version=VERSION, header=True)
        assert resp.error_code == 0
        return {p.partition_index: p for t in resp.responses for p in t.partitions}

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            assert chunk, "the broker closed the connection"
            buf += chunk
        return buf

    def close(self) -> None:
        self.sock.close()


def _records(p: Any) -> bytes:
    return bytes(p.records or b"")


def _batches(data: bytes) -> list[tuple[int, int, int]]:
    """(base offset, size, partition leader epoch) of each whole batch (DefaultRecordBatch's header)."""
    out, pos = [], 0
    while pos + 17 <= len(data):
        base, length, epoch = struct.unpack_from(">qii", data, pos)
        if pos + 12 + length > len(data):
            break
        out.append((base, 12 + length, epoch))
        pos += 12 + length
    return out


@pytest.fixture(scope="module")
def fetch_topic(kafka_cluster):
    """Partitions 0-2 led by broker 1 at a leader epoch above 0 (created on [2, 1], reassigned to [1, 2] and elected
    back), one record per batch (VALUES' sizes), then DeleteRecords on partition 2 up to offset 2."""
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.structs import TopicPartition

    from kcheck.cluster import admin as ca

    boot = kafka_cluster.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=boot, client_id="kcheck-fetch")
    try:
        admin.create_topics([NewTopic(TOPIC, replica_assignments={p: [2, 1] for p in VALUES})])
        assert ca.wait_for_states(boot, TOPIC, lambda s: len(s) == len(VALUES), 30), "topic not created"
        ca.reassign(boot, TOPIC, {p: [1, 2] for p in VALUES})
        ca.wait_until(lambda: not ca.reassignments_in_flight(boot, TOPIC), 30)
        ca.elect_leaders(boot, TOPIC, list(VALUES), unclean=False)
        states = ca.wait_until(lambda: (s := ca.partition_states(boot, TOPIC)) and all(
            x.leader == 1 for x in s.values()) and s, 30)
        producer = KafkaProducer(bootstrap_servers=boot, acks="all", linger_ms=0)
        for p, sizes in VALUES.items():
            for n in sizes:
                producer.send(TOPIC, value=b"v" * n, partition=p).get(timeout=30)
        producer.close()
        admin.delete_records({TopicPartition(TOPIC, 2): 2})
    finally:
        admin.close()
    conn = Conn(kafka_cluster.node(1).port)
    yield conn, {p: s.leader_epoch for p, s in states.items()}
    conn.close()


def _model(conn: Conn, partition: int, log_start: int = 0, above_hw: tuple[int, ...] = ()
           ) -> tuple[rf.PartitionLog, rf.EpochCache, int]:
    """The reference's log and epoch cache for a partition, from the broker's own batches (a consumer's read, up to
    the high watermark; `above_hw`: the value sizes of the batches past it, one record each)."""
    got = conn.fetch([(partition, rf.PartitionFetch(log_start, 1 << 20))])[partition]
    batches = _batches(_records(got))
    values = VALUES[partition][log_start:log_start + len(batches)]
    ours = [Batch(b, (Record(0, 0, -1, n),)) for (b, _, _), n in zip(batches, values, strict=True)]
    assert [b.size for b in ours] == [size for _, size, _ in batches]  # the reference's batch size is Kafka's
    offset = got.high_watermark
    for n in above_hw:
        ours.append(Batch(offset, (Record(0, 0, -1, n),)))
        offset += 1
    log = rf.PartitionLog.build(4096, got.log_start_offset, got.high_watermark, [(log_start, tuple(ours))], RELEASE)
    cache = rf.EpochCache()
    cache.assign(batches[0][2], 0)  # every batch was written by broker 1 as leader, at its epoch
    cache.truncate_from_start(got.log_start_offset)  # DeleteRecords (UnifiedLog.maybeIncrementLogStartOffset)
    return log, cache, got.log_start_offset


def _predict(log: rf.PartitionLog, cache: rf.EpochCache, epoch: int, f: rf.PartitionFetch) -> rf.PartitionRead:
    params = rf.fetch_params(VERSION, -1, False, False, RELEASE)
    return rf.fetch_partition(log, cache, rf.LeaderState(epoch), params, -1, f, f.max_bytes, True)


def test_partition_checks_as_the_broker_answers(fetch_topic) -> None:
    conn, epochs = fetch_topic
    e = epochs[1]
    assert e >= 1
    log, cache, _ = _model(conn, 1)
    end = log.log_end.offset
    big = 1 << 20
    cases = [rf.PartitionFetch(0, big, e - 1), rf.PartitionFetch(0, big, e + 1), rf.PartitionFetch(0, big, e),
             rf.PartitionFetch(end + 1, big, e), rf.PartitionFetch(end, big, e),
             rf.PartitionFetch(1, big, e, e), rf.PartitionFetch(1, big, e, e + 5),
             rf.PartitionFetch(2, big, e, e - 1), rf.PartitionFetch(0, big, e, e - 1)]
    expected_errors = [rf.FENCED_LEADER_EPOCH, rf.UNKNOWN_LEADER_EPOCH, rf.NONE, rf.OFFSET_OUT_OF_RANGE, rf.NONE,
                       rf.NONE, rf.OFFSET_OUT_OF_RANGE, rf.NONE, rf.NONE]
    for f, want in zip(cases, expected_errors, strict=True):
        ours = _predict(log, cache, e, f)
        got = conn.fetch([(1, f)])[1]
        assert got.error_code == ours.error == want, f
        if ours.data is not None:
            assert len(_records(got)) == ours.data.size, f
        d = got.diverging_epoch  # a tagged field: absent (None) when the epochs agree
        assert ((d.epoch, d.end_offset) if d is not None else (-1, -1)) == (ours.diverging_epoch or (-1, -1)), f
    # the older epoch ends where the leader's first batch starts: offset 2 diverges, offset 0 does not
    assert _predict(log, cache, e, cases[7]).diverging_epoch == (e - 1, 0)


def test_out_of_range_below_the_log_start_after_delete_records(fetch_topic) -> None:
    conn, epochs = fetch_topic
    e = epochs[2]
    log, cache, start = _model(conn, 2, 2)
    assert start == 2
    for offset in (0, 1, 2, 3, 4, 5):
        f = rf.PartitionFetch(offset, 1 << 20, e)
        ours = _predict(log, cache, e, f)
        got = conn.fetch([(2, f)])[2]
        assert got.error_code == ours.error, offset
        assert (got.error_code == rf.OFFSET_OUT_OF_RANGE) == (offset < 2 or offset > 4)
    # log start wins over a diverging epoch (Partition.readRecords checks it first)
    f = rf.PartitionFetch(1, 1 << 20, e, e - 1)
    assert _predict(log, cache, e, f).error == conn.fetch([(2, f)])[2].error_code == rf.OFFSET_OUT_OF_RANGE


@pytest.mark.parametrize(("order", "response_max", "partition_max"), [
    ((0, 1, 2), 1000, 1000),  # the first batch (3 KB) comes whole; nothing is left for the others
    ((0, 1, 2), 100_000, 250),  # p0's first batch whole (minOneMessage), p1's cut batch dropped, p2 cut at 250
    ((2, 1, 0), 100_000, 250),  # p2 first now: minOneMessage spent there, p0's big batch dropped
    ((1, 2, 0), 500, 100_000),  # the response's 500 bytes shared in request order
    ((2, 0, 1), 0, 0),  # nothing allowed: still the first batch of the first partition
])
def test_bytes_shared_across_partitions_in_request_order(fetch_topic, order, response_max, partition_max) -> None:
    conn, epochs = fetch_topic
    models = {p: _model(conn, p, 2 if p == 2 else 0) for p in VALUES}
    fetches = [rf.PartitionFetch(models[p][2], partition_max) for p in order]

    def read(i: int, f: rf.PartitionFetch, max_bytes: int, min_one: bool) -> rf.PartitionRead:
        log = models[order[i]][0]
        return rf.PartitionRead(data=log.read(f.fetch_offset, max_bytes, rf.HIGH_WATERMARK, min_one))

    ours = rf.read_from_log(response_max, fetches, read)
    got = conn.fetch(list(zip(order, fetches, strict=True)), max_bytes=response_max)
    sizes = {p: len(_records(got[p])) for p in order}
    assert sizes == {p: r.data.size for p, r in zip(order, ours, strict=True) if r.data is not None}


@pytest.mark.slow  # timing-bound on a loaded machine: a follower paused for long is fenced and the HW moves on
def test_a_consumer_reads_nothing_above_the_high_watermark(kafka_cluster, fetch_topic) -> None:
    """Broker 2 (the follower) paused: an acks=1 append moves the log end, not the high watermark; a consumer's
    fetch between them is empty without an error, one past the log end is out of range."""
    from kafka import KafkaProducer

    from kcheck.cluster import admin as ca

    conn, epochs = fetch_topic
    e = epochs[0]
    # the follower must be in the ISR when it is paused: one a loaded machine let fall out would not hold the HW back
    ca.wait_until(lambda: 2 in ca.partition_states(kafka_cluster.bootstrap, TOPIC)[0].isr, 60)
    hw = conn.fetch([(0, rf.PartitionFetch(0, 1))])[0].high_watermark
    kafka_cluster.pause(2)
    try:
        producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{kafka_cluster.node(1).port}", acks=1, linger_ms=0)
        producer.send(TOPIC, value=b"w" * 10, partition=0).get(timeout=30)
        producer.close()
        VALUES[0].append(10)
        got = conn.fetch([(0, rf.PartitionFetch(hw, 1 << 20, e))])[0]
        assert got.high_watermark == hw  # the follower has not fetched it
        log, cache, _ = _model(conn, 0, above_hw=(10,))
        assert log.log_end.offset == hw + 1
        for offset in (hw, hw + 1, hw + 2):
            f = rf.PartitionFetch(offset, 1 << 20, e)
            ours = _predict(log, cache, e, f)
            got = conn.fetch([(0, f)])[0]
            assert got.error_code == ours.error, offset
            assert len(_records(got)) == (ours.data.size if ours.data else 0) == 0, offset
        assert [conn.fetch([(0, rf.PartitionFetch(o, 1 << 20, e))])[0].error_code for o in (hw, hw + 1, hw + 2)] == [
            rf.NONE, rf.NONE, rf.OFFSET_OUT_OF_RANGE]
    finally:
        kafka_cluster.resume(2)


def _waiting_case(conn: Conn, p: int, offset: int) -> str | None:
    """Why a consumer's DelayedFetch waiting at `offset` completes now (None: it waits), on the broker's log as it
    stands: where the fetch started and the high watermark."""
    log, _, _ = _model(conn, p, 2 if p == 2 else 0)
    op = df.DelayedFetch(df.FetchWait(-1, rf.HIGH_WATERMARK, 1),
                         [df.Waiting(log.offset_metadata(offset), rf.PartitionFetch(offset, 1 << 20))])
    return op.try_complete([df.PartitionNow(high_watermark=log.high_watermark_metadata())]).case


def test_delayed_fetch_answers_when_data_arrives_and_at_its_deadline(kafka_cluster, fetch_topic) -> None:
    from kafka import KafkaProducer

    conn, _ = fetch_topic
    end = conn.fetch([(1, rf.PartitionFetch(0, 1))])[1].high_watermark
    at_end = [(1, rf.PartitionFetch(end, 1 << 20))]
    # min bytes already there, or no wait: at once
    assert rf.respond_now(10_000, 1, [rf.PartitionRead(data=rf.FetchData(rf.OffsetMetadata(0), 270))])
    t0 = time.monotonic()
    assert _records(conn.fetch([(1, rf.PartitionFetch(0, 1 << 20))], min_bytes=1, max_wait_ms=20_000)[1])
    assert time.monotonic() - t0 < 10
    # nothing readable and nothing arrives: the purgatory holds it to its deadline, then answers empty
    assert not rf.respond_now(1500, 1, [rf.PartitionRead(data=rf.FetchData(rf.OffsetMetadata(end)))])
    assert _waiting_case(conn, 1, end) is None
    t0 = time.monotonic()
    assert not _records(conn.fetch(at_end, min_bytes=1, max_wait_ms=1500)[1])
    assert time.monotonic() - t0 >= 1.4
    # data arrives while it waits: case G completes it long before its 20 s deadline
    result: dict[str, Any] = {}

    def long_poll() -> None:
        t = time.monotonic()
        result["records"] = _records(conn.fetch(at_end, min_bytes=1, max_wait_ms=20_000)[1])
        result["seconds"] = time.monotonic() - t

    poller = threading.Thread(target=long_poll)
    poller.start()
    time.sleep(0.5)
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap, acks="all", linger_ms=0)
    producer.send(TOPIC, value=b"d" * 20, partition=1).get(timeout=30)
    producer.close()
    poller.join(60)
    assert result["records"] and result["seconds"] < 15
    VALUES[1].append(20)
    assert _waiting_case(conn, 1, end) == "G"
