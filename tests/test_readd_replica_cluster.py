"""Issue 36's remove-then-re-add question on real brokers: can a replica that a reassignment removed (its log deleted)
and a second one added back rejoin the ISR on the leader's old view of it, and so be elected without the data?

The model says no (tests/test_current_protocol.py: `test_a_replica_removed_and_added_back_is_not_put_in_the_isr_...`):
the leader drops a removed replica's fetch state when it applies the assignment without it
(`Partition.updateAssignmentAndIsr`), and considers a follower for the ISR only right after recording one of its
fetches (`updateFollowerFetchState` -> `maybeExpandIsr`), which reports the new, empty log. Here, on the session's
cluster, a topic on [1, 2] with min.insync.replicas 1 takes acks=all writes the whole time while, run after run,
broker 2 is removed (`[1]`), its log deleted, added back (`[1, 2]`) and paused at once to widen the window in
which a stale view could put it in the ISR; then leadership moves to it. Checked: broker 2 never joins the ISR while
paused; when it does, its log end covers every write acknowledged so far; every acknowledged write is read at the
end. KCHECK_READD_RUNS sets the number of runs (default 4).
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from kcheck.cluster import admin as ca

pytestmark = [pytest.mark.kafka, pytest.mark.cluster, pytest.mark.slow]

RUNS = int(os.environ.get("KCHECK_READD_RUNS", "4"))
TOPIC = "readd"
PAUSE_S = 1.5  # below broker.session.timeout.ms: broker 2 stays registered, as a slow follower would


class Writer(threading.Thread):
    """acks=all writes, one at a time; the offset of each acknowledged value."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        from kafka import KafkaProducer

        self.producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0, retries=0,
                                      request_timeout_ms=5000, max_block_ms=5000)
        self.acked: dict[bytes, int] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            value = b"v%07d" % n
            n += 1
            try:
                offset = self.producer.send(TOPIC, value=value, partition=0).get(timeout=10).offset
            except Exception:  # noqa: BLE001 - a refused or timed-out write is not acknowledged: not checked
                time.sleep(0.05)
                continue
            with self.lock:
                self.acked[value] = offset
            time.sleep(0.01)

    def highest(self) -> int:
        with self.lock:
            return max(self.acked.values(), default=-1)


def _address(cluster, broker: int) -> str:
    return f"127.0.0.1:{cluster.node(broker).port}"


def _state(cluster):
    return ca.partition_states(ca.live_bootstrap(cluster), TOPIC)[0]


def _lead(cluster, order: list[int]) -> None:
    """Reorder the replicas and elect the preferred one (both in the ISR, so a clean election)."""
    ca.reassign(cluster.bootstrap, TOPIC, {0: order})
    assert ca.wait_until(lambda: _state(cluster).replicas == tuple(order), 30)
    ca.elect_leaders(cluster.bootstrap, TOPIC, [0], unclean=False)
    assert ca.wait_until(lambda: _state(cluster).leader == order[0], 30)


def _one_run(cluster, writer: Writer) -> None:
    ca.reassign(cluster.bootstrap, TOPIC, {0: [1]})
    assert ca.wait_until(lambda: _state(cluster).replicas == (1,), 30)
    data = cluster.directory / "broker-2" / "data"
    assert ca.wait_until(lambda: f"{TOPIC}-0" not in os.listdir(data), 30)  # broker 2 deleted its log
    ca.reassign(cluster.bootstrap, TOPIC, {0: [1, 2]})
    cluster.pause(2)
    try:
        until = time.monotonic() + PAUSE_S
        while time.monotonic() < until:
            assert 2 not in _state(cluster).isr  # no fetch, no expansion: the old view of 2 is gone
            time.sleep(0.1)
    finally:
        cluster.resume(2)
    assert ca.wait_until(lambda: (s := _state(cluster)).isr == (1, 2) and not s.adding, 60)
    acked = writer.highest()
    assert ca.log_end_offset(_address(cluster, 2), TOPIC, 0) > acked  # in the ISR with every acknowledged write
    _lead(cluster, [2, 1])  # the re-added replica leads
    _lead(cluster, [1, 2])


def test_a_replica_removed_and_added_back_loses_no_acknowledged_write(cluster):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, client_id="kcheck-readd")
    try:
        admin.create_topics([NewTopic(TOPIC, replica_assignments={0: [1, 2]},
                                      topic_configs={"min.insync.replicas": "1"})])
    finally:
        admin.close()
    assert ca.wait_for_states(cluster.bootstrap, TOPIC, lambda s: set(s[0].isr) == {1, 2}, 30)
    writer = Writer(cluster.bootstrap)
    writer.start()
    try:
        for _ in range(RUNS):
            _one_run(cluster, writer)
    finally:
        writer.stop.set()
        writer.join(30)
        writer.producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
    try:
        consumer.assign([TopicPartition(TOPIC, 0)])
        consumer.seek_to_beginning()
        read = {m.value: m.offset for m in consumer}
    finally:
        consumer.close()
    assert len(writer.acked) > 10 * RUNS
    lost = {v: o for v, o in writer.acked.items() if read.get(v) != o}
    assert not lost, f"{len(lost)} of {len(writer.acked)} acknowledged writes lost, e.g. {sorted(lost.items())[:3]}"
    print(f"{RUNS} runs, {len(writer.acked)} acknowledged writes, none lost")
