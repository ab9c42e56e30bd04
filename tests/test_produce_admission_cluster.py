"""Produce admission on a real cluster: each partition's error in Kafka's order, and what acks=0 and a connection do.

Real Produce requests (v8, written by `produce_admission.encode_produce_body` behind a header from
`request_header.encode_request_header`, records from `BatchSpec.encode`) go over raw sockets to the session's
cluster (`kafka_cluster`: brokers 1, 2, 3). Every expected code comes from the broker itself; the test checks that
our reference (`produce_admission.partition_error`, and `validate` for what LogValidator says) gives the same,
first for each rule alone, then for pairs of rules that only the order tells apart. The seed's point 4 is checked
the same way: acks=0 gets no response, acks=0 with a failed partition closes the connection
(`KafkaApis.handleProduceRequest`, `RequestChannel.CloseConnectionResponse`), and a connection answers its
requests one at a time, in order (pipelined requests come back with their correlation ids in order). A throttled
connection (KIP-219) holds its next request: a Produce over its client id's `producer_byte_rate` quota is answered
at once with its throttle time, and the connection's next request is served only after that time.
"""

from __future__ import annotations

import re
import socket
import struct
import time
import uuid
from dataclasses import replace

import pytest

from kcheck.cluster.admin import partition_states, wait_until
from kcheck.inputs.formats import InputError
from kcheck.reference import kafka_tools
from kcheck.reference import produce_admission as pa
from kcheck.reference.releases import profile
from kcheck.reference.request_header import encode_request_header

pytestmark = [pytest.mark.cluster, pytest.mark.kafka]

NOW = int(time.time() * 1000)
HOUR = 3_600_000


class Conn:
    """One client connection to a broker, speaking raw Kafka requests."""

    def __init__(self, cluster, broker: int) -> None:
        self.release = cluster.state.version
        self.sock = socket.create_connection(("localhost", cluster.node(broker).port), timeout=15)
        self.corr = 0

    def send(self, api: int, version: int, body: bytes, client_id: str = "kcheck-test") -> int:
        self.corr += 1
        head = encode_request_header(self.release, api, version, self.corr, client_id).data
        self.sock.sendall(struct.pack(">i", len(head) + len(body)) + head + body)
        return self.corr

    def _exactly(self, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            data += chunk
        return data

    def receive(self, timeout: float = 15.0) -> tuple[int, bytes] | None:
        """The next response (correlation id, body), or None when the broker closed the connection."""
        self.sock.settimeout(timeout)
        size = self._exactly(4)
        if size is None:
            return None
        frame = self._exactly(struct.unpack(">i", size)[0])
        assert frame is not None, "the connection closed in the middle of a response"
        return struct.unpack(">i", frame[:4])[0], frame[4:]

    def produce(self, acks: int, topics: list[tuple[str, list[tuple[int, bytes | None]]]]
                ) -> dict[tuple[str, int], pa.PartitionResponse]:
        corr = self.send(pa.PRODUCE, pa.PRODUCE_WIRE_VERSION, pa.encode_produce_body(acks, 10_000, topics))
        answer = self.receive()
        assert answer is not None and answer[0] == corr
        return pa.parse_produce_body(answer[1])

    def close(self) -> None:
        self.sock.close()


def _topic(cluster, assignment: dict[int, list[int]], configs: dict[str, str] | None = None) -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"produce-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap.split(","), request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(name, replica_assignments=assignment, topic_configs=configs or {})])
    finally:
        admin.close()
    def ready() -> bool:
        try:
            states = partition_states(cluster.bootstrap, name)
        except InputError:  # not in the metadata yet
            return False
        return len(states) == len(assignment) and all(s.leader >= 0 and len(s.isr) == len(assignment[p])
                                                      for p, s in states.items())

    led = wait_until(ready, 30)
    assert led, f"topic {name} not ready"
    return name


def _batch(*records: pa.Rec, **kw: object) -> pa.BatchSpec:
    return pa.BatchSpec(records, base_timestamp=NOW, **kw)  # type: ignore[arg-type]


KEYED = pa.Rec(0, 0, b"k", b"v")
NULL_KEY = pa.Rec(1, 0, None, b"v")


def _bad_crc(batch: pa.BatchSpec) -> bytes:
    raw = bytearray(batch.encode())
    raw[-1] ^= 0xFF  # the last value byte: the CRC no longer matches
    return bytes(raw)


@pytest.fixture(scope="module")
def topics(kafka_cluster) -> dict[str, str]:
    """Topics led by broker 1 (the only replica), one per configuration the rules need."""
    c = kafka_cluster
    return {
        "plain": _topic(c, {0: [1]}),
        "compact": _topic(c, {0: [1]}, {"cleanup.policy": "compact"}),
        "bounded": _topic(c, {0: [1]}, {"message.timestamp.before.max.ms": "60000",
                                        "message.timestamp.after.max.ms": "60000"}),
        "append_time": _topic(c, {0: [1]}, {"message.timestamp.type": "LogAppendTime"}),
        "small": _topic(c, {0: [1]}, {"max.message.bytes": "200", "cleanup.policy": "compact"}),
        "segment": _topic(c, {0: [1]}, {"segment.bytes": "1048576", "max.message.bytes": "3000000"}),
    }


def _state(name: str) -> pa.PartitionState:
    if name == "small":
        return pa.PartitionState(max_message_bytes=200)
    if name == "segment":
        return pa.PartitionState(max_message_bytes=3_000_000, segment_bytes=1_048_576)
    return pa.PartitionState()


def _case(release: str, name: str, batch: pa.BatchSpec) -> pa.ValidatorCase:
    """The LogValidator call the broker makes for this topic's partition (its configuration and defaults, its
    clock: the timestamps the cases use are hours from either bound, so the seconds between are no matter)."""
    bounded = name == "bounded"
    return pa.ValidatorCase((batch,), now=NOW, compacted=name in ("compact", "small"),
                            log_append_time=name == "append_time", before_ms=60_000 if bounded else pa.LONG_MAX,
                            after_ms=60_000 if bounded else profile(release).timestamp_after_max_default)


# (what, topic key, batch, bad CRC): each alone, on the leader with acks=1
ALONE = [
    ("valid", "plain", _batch(KEYED), False),
    ("base_offset_not_zero", "plain", _batch(KEYED, base_offset=5), False),
    ("batch_over_max_message_bytes", "small", _batch(pa.Rec(0, 0, b"k", b"v" * 300)), False),
    ("bad_crc", "plain", _batch(KEYED), True),
    ("compacted_null_key", "compact", _batch(KEYED, NULL_KEY), False),
    ("timestamp_too_old", "bounded", _batch(pa.Rec(0, -HOUR, b"k", b"v")), False),
    ("timestamp_too_new", "bounded", _batch(pa.Rec(0, HOUR, b"k", b"v")), False),
    ("log_append_time_from_producer", "append_time", _batch(KEYED, log_append_time=True, max_timestamp=NOW), False),
    ("control_batch_from_client", "plain", _batch(KEYED, control=True), False),
    ("producer_id_negative_sequence", "plain", _batch(KEYED, producer_id=7, producer_epoch=0, base_sequence=-3),
     False),
    ("count_disagrees_with_offsets", "plain", _batch(KEYED, count=2), False),
    # a gzip batch whose count and offset range agree but whose inner offsets skip one: LogValidator reads it for an
    # in-place append without keys, then rebuilds it and asks for them (UNKNOWN_SERVER_ERROR)
    ("inner_offset_gap_in_compressed_batch", "plain",
     _batch(KEYED, pa.Rec(2, 0, b"k", b"v"), compression="gzip", last_offset_delta=1), False),
    ("set_over_segment_bytes", "segment", _batch(pa.Rec(0, 0, b"k", b"v" * 1_100_000)), False),
    # pairs whose answer says which check comes first
    ("base_offset_before_size", "small", _batch(pa.Rec(0, 0, b"k", b"v" * 300), base_offset=5), False),
    ("size_before_crc", "small", _batch(pa.Rec(0, 0, b"k", b"v" * 300)), True),
    ("crc_before_validator", "compact", _batch(KEYED, NULL_KEY), True),
    ("batch_checks_before_record_errors", "compact", _batch(KEYED, NULL_KEY, count=3), False),
    ("timestamp_error_wins_over_key_error", "compact", _batch(KEYED, NULL_KEY, pa.Rec(2, HOUR * 10**6, b"k", b"v")),
     False),
]


@pytest.mark.parametrize(("what", "name", "batch", "bad_crc"), ALONE, ids=[a[0] for a in ALONE])
def test_log_checks_in_kafkas_order(kafka_cluster, topics, what: str, name: str, batch: pa.BatchSpec,
                                    bad_crc: bool) -> None:
    topic = topics[name]
    conn = Conn(kafka_cluster, 1)
    try:
        got = conn.produce(1, [(topic, [(0, _bad_crc(batch) if bad_crc else batch.encode())])])[(topic, 0)]
    finally:
        conn.close()
    release = kafka_cluster.state.version
    case = _case(release, name, batch)
    validator = pa.validate(case, profile(release))
    expected = pa.partition_error(1, "kcheck-test", pa.ProduceEntry(_state(name), (batch,), bad_crc), validator)
    assert got.error_code == expected, (what, got)
    if got.error_code in (pa.INVALID_RECORD, pa.INVALID_TIMESTAMP) and validator.startswith("E"):
        # the record errors (KIP-467) and the message are LogValidator's, for this topic's partition; a timestamp
        # error names the broker's clock (its bounds), which then is the clock our reference is given
        seen = re.search(r"should be within \[(-?\d+), ", " ".join(m or "" for _, m in got.record_errors))
        if seen:
            validator = pa.validate(replace(case, now=int(seen.group(1)) + case.before_ms), profile(release))
        assert (got.error_message, list(got.record_errors)) == pa.response_detail(validator, topic)


def test_request_checks_in_kafkas_order(kafka_cluster, topics) -> None:
    """Unknown topic before acks; the one-batch rule before acks; acks before leadership; the internal topic before
    leadership (every broker answers it, two of them not its leader)."""
    plain, missing = topics["plain"], f"missing-{uuid.uuid4().hex[:8]}"
    one = _batch(KEYED).encode()
    two = one + _batch(KEYED).encode()
    conn = Conn(kafka_cluster, 1)
    try:
        got = conn.produce(2, [(missing, [(0, one)]), (plain, [(0, one)])])
        assert got[(missing, 0)].error_code == pa.UNKNOWN_TOPIC_OR_PARTITION
        assert got[(plain, 0)].error_code == pa.INVALID_REQUIRED_ACKS
        got = conn.produce(2, [(plain, [(0, two)])])
        assert got[(plain, 0)].error_code == pa.INVALID_RECORD
    finally:
        conn.close()
    ok = pa.ProduceEntry(pa.PartitionState(), (_batch(KEYED),))
    assert pa.partition_error(2, "x", pa.ProduceEntry(pa.PartitionState(topic_exists=False), (_batch(KEYED),))) == 3
    assert pa.partition_error(2, "x", ok) == pa.INVALID_REQUIRED_ACKS
    assert pa.partition_error(2, "x", pa.ProduceEntry(pa.PartitionState(), (_batch(KEYED), _batch(KEYED)))) == 87
    for acks, code in ((1, pa.NOT_LEADER_OR_FOLLOWER), (2, pa.INVALID_REQUIRED_ACKS)):
        conn = Conn(kafka_cluster, 2)  # not the leader of `plain`
        try:
            assert conn.produce(acks, [(plain, [(0, one)])])[(plain, 0)].error_code == code
        finally:
            conn.close()
        assert pa.partition_error(acks, "x", pa.ProduceEntry(pa.PartitionState(leader_here=False),
                                                             (_batch(KEYED),))) == code
    _ensure_offsets_topic(kafka_cluster)
    for broker in kafka_cluster.brokers:
        conn = Conn(kafka_cluster, broker)
        try:
            got = conn.produce(1, [("__consumer_offsets", [(0, one)])])
        finally:
            conn.close()
        assert got[("__consumer_offsets", 0)].error_code == pa.INVALID_TOPIC_EXCEPTION, broker
    internal = pa.ProduceEntry(pa.PartitionState(internal=True, leader_here=False), (_batch(KEYED),))
    assert pa.partition_error(1, "kcheck-test", internal) == pa.INVALID_TOPIC_EXCEPTION


def _ensure_offsets_topic(cluster) -> None:
    """FindCoordinator (v1: key, key type) makes the broker create __consumer_offsets."""
    def found() -> bool:
        conn = Conn(cluster, 1)
        try:
            conn.send(10, 1, pa._string("kcheck-group") + b"\x00")
            answer = conn.receive()
        finally:
            conn.close()
        return answer is not None and struct.unpack_from(">h", answer[1], 4)[0] == 0  # after the throttle time
    assert wait_until(found, 60), "__consumer_offsets was not created"


def test_min_isr_after_leadership_and_before_the_records(cluster) -> None:
    """acks=-1 with the ISR below min.insync.replicas: NOT_ENOUGH_REPLICAS on the leader, before LogValidator looks
    at the records (a compacted topic's null key); acks=1 appends the same records' errors; a broker that is not the
    leader answers NOT_LEADER_OR_FOLLOWER first."""
    topic = _topic(cluster, {0: [1, 2]}, {"min.insync.replicas": "2", "cleanup.policy": "compact"})
    cluster.shutdown(2)  # a controlled shutdown leaves the ISR at once
    assert wait_until(lambda: partition_states(cluster.bootstrap, topic)[0].isr == (1,), 30)
    bad = _batch(KEYED, NULL_KEY)
    under = pa.PartitionState(isr=1, replicas=2, min_isr=2)
    answers = {}
    for broker, acks, batch in ((1, -1, _batch(KEYED)), (1, -1, bad), (1, 1, bad), (3, -1, bad)):
        conn = Conn(cluster, broker)
        try:
            answers[(broker, acks, batch)] = conn.produce(acks, [(topic, [(0, batch.encode())])])[(topic, 0)]
        finally:
            conn.close()
    validator = pa.validate(pa.ValidatorCase((bad,), compacted=True), profile(cluster.state.version))
    for (broker, acks, batch), got in answers.items():
        state = under if broker == 1 else pa.PartitionState(leader_here=False)
        answer = validator if batch is bad else None
        assert got.error_code == pa.partition_error(acks, "kcheck-test", pa.ProduceEntry(state, (batch,)), answer), \
            (broker, acks, got)
    assert [a.error_code for a in answers.values()] == [pa.NOT_ENOUGH_REPLICAS, pa.NOT_ENOUGH_REPLICAS,
                                                        pa.INVALID_RECORD, pa.NOT_LEADER_OR_FOLLOWER]


def test_acks_zero_and_one_request_at_a_time(kafka_cluster, topics) -> None:
    """acks=0 is never answered; a connection answers in request order (pipelined: produce acks=1, acks=0, and
    ApiVersions come back in order, the acks=0 one missing); acks=0 with a failed partition closes the connection."""
    plain = topics["plain"]
    one = _batch(KEYED).encode()
    conn = Conn(kafka_cluster, 1)
    try:
        sent = []
        for acks in (1, 0, 1, 0, 1):
            corr = conn.send(pa.PRODUCE, pa.PRODUCE_WIRE_VERSION, pa.encode_produce_body(acks, 10_000,
                                                                                          [(plain, [(0, one)])]))
            sent.append((corr, acks))
            sent.append((conn.send(pa.API_VERSIONS, 0, b""), None))
        received = []
        for _ in range(sum(acks != 0 for _, acks in sent)):
            answer = conn.receive()
            assert answer is not None
            received.append(answer[0])
        assert received == [corr for corr, acks in sent if acks != 0]
        assert pa.acks0_response([pa.NONE]) == "none"
        # acks=0 and a partition that fails: no response, the connection closes
        conn.send(pa.PRODUCE, pa.PRODUCE_WIRE_VERSION,
                  pa.encode_produce_body(0, 10_000, [(plain, [(0, one)]), (f"missing-{uuid.uuid4().hex[:6]}",
                                                                          [(0, one)])]))
        assert conn.receive() is None
        assert pa.acks0_response([pa.NONE, pa.UNKNOWN_TOPIC_OR_PARTITION]) == "close"
    finally:
        conn.close()


def _configs(cluster, *args: str) -> None:
    """The release's own kafka-configs on the client quotas (`--entity-type clients`)."""
    done = kafka_tools.run(cluster.state.version, "kafka-configs",
                           ["--bootstrap-server", cluster.bootstrap, "--alter", *args, "--entity-type", "clients"])
    assert done.returncode == 0, done.stderr


def test_a_throttled_connection_holds_its_next_request(kafka_cluster, topics) -> None:
    """KIP-219: a Produce over its client id's byte-rate quota is answered at once with throttle_time_ms > 0, and
    the broker mutes that connection for the throttle time (`ClientQuotaManager.throttle`, `SocketServer`'s
    MUTED_AND_THROTTLED): an ApiVersions sent right after on the same connection waits that long, while the same
    request on another connection of the same client id, sent at the same moment, is answered at once."""
    client = f"kcheck-throttle-{uuid.uuid4().hex[:8]}"
    # Rate over a fresh sensor's window (quota.window.num 11: 10 full seconds), so 13 KiB at 1 KiB/s is throttled
    # about 3 s (QuotaUtils.throttleTime: (rate - quota) / quota * window)
    records = _batch(pa.Rec(0, 0, b"k", b"v" * 13 * 1024)).encode()
    body = pa.encode_produce_body(1, 10_000, [(topics["plain"], [(0, records)])])
    _configs(kafka_cluster, "--add-config", "producer_byte_rate=1024", "--entity-name", client)
    try:
        deadline = time.monotonic() + 30
        while True:  # until broker 1 has the quota from the metadata log
            held, other = Conn(kafka_cluster, 1), Conn(kafka_cluster, 1)
            started = time.monotonic()
            corr = held.send(pa.PRODUCE, pa.PRODUCE_WIRE_VERSION, body, client)
            answer = held.receive()
            answered = time.monotonic() - started
            assert answer is not None and answer[0] == corr
            assert pa.parse_produce_body(answer[1])[(topics["plain"], 0)].error_code == pa.NONE
            throttle_ms = struct.unpack(">i", answer[1][-4:])[0]  # v8's last field
            if throttle_ms > 0 or time.monotonic() > deadline:
                break
            held.close()
            other.close()
            time.sleep(0.5)
        try:
            assert throttle_ms > 1000, "the quota never throttled the produce"
            assert answered < throttle_ms / 1000 / 2  # answered at once, not after the throttle (before KIP-219)
            sent = time.monotonic()
            waiting = held.send(pa.API_VERSIONS, 0, b"", client)
            prompt = other.send(pa.API_VERSIONS, 0, b"", client)
            assert (other.receive() or (None,))[0] == prompt
            other_delay = time.monotonic() - sent
            assert (held.receive(timeout=throttle_ms / 1000 + 15) or (None,))[0] == waiting
            held_delay = time.monotonic() - sent
        finally:
            held.close()
            other.close()
        seen = (f"throttle_time_ms {throttle_ms}, produce answered in {answered:.3f} s, next request on the same "
                f"connection {held_delay:.3f} s, on another {other_delay:.3f} s")
        assert held_delay >= 0.8 * throttle_ms / 1000, seen
        assert other_delay < 0.2 * throttle_ms / 1000, seen
    finally:
        _configs(kafka_cluster, "--delete-config", "producer_byte_rate", "--entity-name", client)
