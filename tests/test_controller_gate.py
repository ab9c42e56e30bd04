"""The controller gate (kcheck.cluster.controller_gate) without Kafka: a stand-in controller that answers every
request frame with its correlation id, and Fetch answers encoded by kafka-python from Kafka's FetchResponse.json.
tests/test_late_record_cluster.py runs it between a real broker and controller."""

from __future__ import annotations

import socket
import struct
import threading
import time
import uuid

import pytest

from kcheck.cluster.controller_gate import ALTER_PARTITION, FETCH, ControllerGate, rename_leader_endpoint

HEARTBEAT = 63  # ApiKeys.BROKER_HEARTBEAT


def _request(key: int, correlation: int, body: bytes = b"") -> bytes:
    """A framed request: api key, version 0, correlation id, client id "1", then `body`."""
    payload = struct.pack(">hhih", key, 0, correlation, 1) + b"1" + body
    return struct.pack(">i", len(payload)) + payload


def _fetch_answer(correlation: int, port: int | None, version: int = 17) -> bytes:
    """A framed FetchResponse (response header v1: correlation id, no tagged fields) with the leader's endpoint at
    127.0.0.1:`port` (None: without NodeEndpoints) and one partition's bytes, as kafka-python encodes it."""
    from kafka.protocol.consumer.fetch import FetchResponse as F

    topic = F.FetchableTopicResponse(topic="late", topic_id=uuid.UUID(int=1), partitions=[
        F.FetchableTopicResponse.PartitionData(partition_index=0, error_code=0, high_watermark=7,
                                               last_stable_offset=7, log_start_offset=0, aborted_transactions=None,
                                               preferred_read_replica=-1, records=b"\x01\x02\x03")])
    endpoints = [] if port is None else [F.NodeEndpoint(node_id=1000, host="127.0.0.1", port=port, rack=None)]
    body = bytes(F(throttle_time_ms=0, error_code=0, session_id=0, responses=[topic],
                   node_endpoints=endpoints).encode(version=version))
    payload = struct.pack(">i", correlation) + b"\x00" + body
    return struct.pack(">i", len(payload)) + payload


def _decode_fetch(frame: bytes, version: int = 17):
    from kafka.protocol.consumer.fetch import FetchResponse as F

    return F.decode(frame[9:], version=version)  # after the size, the correlation id and the empty tagged fields


class StandIn:
    """A controller stand-in: every request it receives is recorded (api key, correlation id) and answered with its
    correlation id, or, for a Fetch, a Fetch answer naming itself as the leader."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.server.getsockname()[1])
        self.received: list[tuple[int, int]] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            while True:
                head = _read(conn, 4)
                if head is None:
                    return
                frame = _read(conn, struct.unpack(">i", head)[0])
                if frame is None:
                    return
                key, _, correlation = struct.unpack_from(">hhi", frame)
                self.received.append((key, correlation))
                if key == FETCH:
                    conn.sendall(_fetch_answer(correlation, self.port))
                else:
                    conn.sendall(struct.pack(">ii", 4, correlation))

    def close(self) -> None:
        self.server.close()


def _read(conn: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _answer(conn: socket.socket) -> bytes:
    head = _read(conn, 4)
    assert head is not None
    body = _read(conn, struct.unpack(">i", head)[0])
    assert body is not None
    return head + body


@pytest.fixture
def gate():
    standin = StandIn()
    with ControllerGate(("127.0.0.1", standin.port)) as g:
        g.standin = standin  # type: ignore[attr-defined]
        yield g
    standin.close()


def _wait(check, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_the_leader_endpoint_of_a_fetch_answer_is_renamed_to_the_gate():
    frame = _fetch_answer(5, 16095)
    renamed = rename_leader_endpoint(frame, ("127.0.0.1", 16095), 40001)
    assert len(renamed) == len(frame)
    before, after = _decode_fetch(frame), _decode_fetch(renamed)
    assert [e.port for e in after.node_endpoints] == [40001]
    assert [e.node_id for e in after.node_endpoints] == [1000]
    assert after.responses == before.responses and after.session_id == before.session_id


@pytest.mark.parametrize(("port", "version", "controller"), [
    (None, 17, ("127.0.0.1", 16095)),  # no NodeEndpoints
    (16095, 17, ("127.0.0.1", 16096)),  # another controller's
    (16095, 17, ("127.0.0.2", 16095)),
    (None, 12, ("127.0.0.1", 16095)),  # before KIP-951
])
def test_other_fetch_answers_pass_unchanged(port, version, controller):
    frame = _fetch_answer(5, port, version)
    assert rename_leader_endpoint(frame, controller, 40001) is frame


def test_requests_flow_until_their_key_is_held_and_wait_in_order(gate):
    standin = gate.standin
    with socket.create_connection((gate.host, gate.port)) as a, socket.create_connection((gate.host, gate.port)) as b:
        a.sendall(_request(ALTER_PARTITION, 1))
        assert struct.unpack(">i", _answer(a)[4:])[0] == 1
        gate.hold(ALTER_PARTITION)
        a.sendall(_request(ALTER_PARTITION, 2) + _request(HEARTBEAT, 3))  # the heartbeat waits behind it
        b.sendall(_request(HEARTBEAT, 4))  # another connection: flows
        assert struct.unpack(">i", _answer(b)[4:])[0] == 4
        assert len(gate.wait_held(ALTER_PARTITION, 5)) == 1
        assert gate.ever_held(ALTER_PARTITION) == 1 and gate.forwarded(ALTER_PARTITION) == 1
        assert (ALTER_PARTITION, 2) not in standin.received and (HEARTBEAT, 3) not in standin.received
        gate.release(ALTER_PARTITION)
        assert [struct.unpack(">i", _answer(a)[4:])[0] for _ in range(2)] == [2, 3]
    assert [r for r in standin.received if r[1] in (2, 3)] == [(ALTER_PARTITION, 2), (HEARTBEAT, 3)]
    assert gate.held(ALTER_PARTITION) == [] and gate.forwarded(ALTER_PARTITION) == 2
    assert gate.ever_held(ALTER_PARTITION) == 1


def test_a_held_request_goes_with_its_connection(gate):
    gate.hold(FETCH)
    with socket.create_connection((gate.host, gate.port)) as a:
        a.sendall(_request(FETCH, 9))
        assert gate.wait_held(FETCH, 5)
    assert _wait(lambda: not gate.held(FETCH))  # the broker gave up: forgotten, never sent
    gate.release(FETCH)
    with socket.create_connection((gate.host, gate.port)) as b:
        b.sendall(_request(FETCH, 10))
        answer = _decode_fetch(_answer(b))
    assert (FETCH, 9) not in gate.standin.received
    assert [e.port for e in answer.node_endpoints] == [gate.port] and gate.rewritten == 1


def test_stop_closes_every_connection_and_ends_its_thread():
    standin = StandIn()
    gate = ControllerGate(("127.0.0.1", standin.port)).start()
    conn = socket.create_connection((gate.host, gate.port))
    conn.sendall(_request(HEARTBEAT, 1))
    assert _answer(conn)
    gate.stop()
    assert not any(t.name == f"controller-gate-{gate.port}" for t in threading.enumerate())
    assert conn.recv(1) == b""  # closed by the gate
    conn.close()
    with pytest.raises(OSError):
        socket.create_connection((gate.host, gate.port), timeout=1).close()
    standin.close()


@pytest.mark.parametrize("options", [{"gate_broker": 4}, {"gate_broker": 0}, {"gate_broker": 1, "controllers": 3}])
def test_a_cluster_gates_one_of_its_brokers_in_front_of_its_one_controller(options):
    from kcheck.cluster.local import ClusterError, LocalCluster

    with pytest.raises(ClusterError, match="a controller gate needs one controller"):
        LocalCluster("4.4.0", 3, **options)
