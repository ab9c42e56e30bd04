"""The late-record finding (docs/findings.md, "A late record") on real KRaft brokers: an acks=all write acknowledged
by leader 1 alone and then lost, with min.insync.replicas 1, because broker 1 applied the metadata record of its
own ISR shrink after the controller's answer to it.

A cluster of three brokers with a `ControllerGate` between broker 1 and the controller (kcheck.cluster
.controller_gate): the test holds back broker 1's metadata replay (the raft client's Fetch) and its AlterPartition
requests, one at a time, to make the order of the finding. Topic `late`, replicas [1, 2], leader 1.

a. Replay held. Broker 2 paused, a record written with acks=1: leader 1 shrinks the ISR to {1}; the controller
   commits it and answers; broker 1 takes ISR {1} and the new partition epoch from the answer, while its metadata
   image still says {1, 2}.
b. AlterPartition held. Broker 2 resumed: it catches up and leader 1 proposes ISR {1, 2} at the epoch the answer
   taught; the gate holds that request. Broker 2 paused again.
c. Replay let through until broker 1's image shows the shrink (ISR {1}), then held again: `Partition.makeLeader`
   applies a record of an equal partition epoch, so the pending expansion gives way to the committed ISR {1}.
d. AlterPartition let through: the controller commits the expansion, ISR {1, 2}; broker 1 ignores the answer, its
   partition state has changed since it asked.
e. x is produced with acks=all to leader 1: acknowledged, the high watermark moving over broker 1 alone.
f. Broker 1 killed, broker 2 resumed: the controller fences 1 and elects 2, in the ISR it committed in d. x is
   not in broker 2's log.
"""

from __future__ import annotations

import time

import pytest

from kcheck.cluster import admin as ca
from kcheck.cluster.controller_gate import ALTER_PARTITION, FETCH, alter_partition_proposals

pytestmark = [pytest.mark.kafka, pytest.mark.cluster]

TOPIC = "late"
LAG_MS = 2000
CONFIG = {
    "replica.lag.time.max.ms": str(LAG_MS),  # a paused follower leaves the ISR in 2-3 s
    "broker.heartbeat.interval.ms": "500",  # a paused broker keeps nearly all of broker.session.timeout.ms (9 s)
}
RELEASES = ["4.4.0", *(pytest.param(r, marks=pytest.mark.slow) for r in ("4.1.2", "4.0.2", "3.9.1"))]


@pytest.fixture(params=RELEASES)
def gated(request):
    from kcheck.cluster.local import LocalCluster

    with LocalCluster(request.param, 3, config=CONFIG, gate_broker=1) as cluster:
        yield cluster


def _view(cluster, broker: int):
    """Partition 0 as `broker`'s own metadata image has it (a describe answered by that broker)."""
    return ca.partition_states(cluster.address(broker), TOPIC)[0]


def _wait_view(cluster, broker: int, ready, timeout_s: float = 20.0):
    return ca.wait_for_states(cluster.address(broker), TOPIC, lambda s: ready(s[0]) and s[0], timeout_s)


def _expansion(frame: bytes) -> bool:
    return any(p.partition == 0 and set(p.isr) == {1, 2} for p in alter_partition_proposals(frame))


@pytest.fixture
def producers(gated):
    """An acks=1 and an acks=all producer that know partition 0's leader (1) before any broker is paused: asked
    later, the client may send its metadata request to paused broker 2 and time out."""
    from kafka import KafkaProducer

    made = {}
    try:
        for acks in (1, "all"):
            made[acks] = KafkaProducer(bootstrap_servers=gated.address(1), acks=acks, linger_ms=0, retries=0,
                                       request_timeout_ms=8000, max_block_ms=8000)
        yield made
    finally:
        for producer in made.values():
            producer.close()


def _send(producer, value: bytes) -> int:
    """One write to partition 0; its offset once acknowledged."""
    return int(producer.send(TOPIC, value=value, partition=0).get(timeout=10).offset)


def _read(cluster, broker: int) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cluster.address(broker), enable_auto_commit=False,
                             consumer_timeout_ms=3000)
    try:
        consumer.assign([TopicPartition(TOPIC, 0)])
        consumer.seek_to_beginning()
        return [m.value for m in consumer]
    finally:
        consumer.close()


def _create(cluster, producers) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, client_id="kcheck-late")
    try:
        admin.create_topics([NewTopic(TOPIC, replica_assignments={0: [1, 2]},
                                      topic_configs={"min.insync.replicas": "1"})])
    finally:
        admin.close()
    assert _wait_view(cluster, 1, lambda s: s.leader == 1 and set(s.isr) == {1, 2})
    assert _send(producers["all"], b"w0") == 0
    assert producers[1].partitions_for(TOPIC) == {0}
    assert ca.wait_until(lambda: ca.log_end_offset(cluster.address(2), TOPIC, 0) == 1, 20)


def _hold_replay(gate) -> None:
    """Hold broker 1's Fetch and wait until one waits: the Fetch in flight before (a long poll the controller
    answers as soon as a record commits) has come back, so no record reaches broker 1 from now on."""
    gate.hold(FETCH)
    assert gate.wait_held(FETCH, 15), "broker 1's metadata Fetch never came through the gate"


def _shrink_answered_not_replayed(cluster, gate, producers) -> None:
    """Step a. A follower whose log ends where the leader's does counts as caught up however long it is silent
    (`Replica.isCaughtUp`), so a record written with acks=1 puts paused broker 2 behind."""
    _hold_replay(gate)
    cluster.pause(2)
    assert _send(producers[1], b"w1") == 1
    assert _wait_view(cluster, 3, lambda s: s.isr == (1,)), "the controller never shrank the ISR to {1}"
    assert gate.forwarded(ALTER_PARTITION) == 1  # leader 1's shrink, answered through the gate
    assert set(_view(cluster, 1).isr) == {1, 2}  # broker 1's image: the shrink not replayed


def _expansion_held(cluster, gate) -> tuple[int, float]:
    """Step b: the partition epoch the held expansion carries (the one the shrink's answer taught), and when broker 2
    was paused again."""
    gate.hold(ALTER_PARTITION)
    cluster.resume(2)
    held = gate.wait_held(ALTER_PARTITION, 20, _expansion)
    cluster.pause(2)
    paused_at = time.monotonic()
    assert held, "leader 1 never proposed ISR {1, 2}"
    proposal = next(p for f in held for p in alter_partition_proposals(f) if set(p.isr) == {1, 2})
    return proposal.partition_epoch, paused_at


def test_a_late_metadata_record_loses_an_acknowledged_write(gated, producers):
    cluster, gate = gated, gated.gate
    _create(cluster, producers)
    assert gate.forwarded(FETCH) > 0 and gate.rewritten > 0  # the replay comes through the gate
    _shrink_answered_not_replayed(cluster, gate, producers)
    epoch, paused_at = _expansion_held(cluster, gate)
    assert epoch == 1  # created at partition epoch 0, the shrink made it 1: broker 1 learned it from the answer
    # c. The shrink's record reaches broker 1 late: its image shows ISR {1}.
    gate.release(FETCH)
    assert _wait_view(cluster, 1, lambda s: s.isr == (1,), 10), "broker 1 never replayed the shrink"
    _hold_replay(gate)
    # d. The expansion commits.
    gate.release(ALTER_PARTITION)
    assert _wait_view(cluster, 3, lambda s: set(s.isr) == {1, 2}, 10), "the controller never committed {1, 2}"
    assert _view(cluster, 1).isr == (1,)  # broker 1 has not replayed it
    # e. x, acknowledged by leader 1 alone. The high watermark also waits for a replica outside the ISR that is caught
    # up, one that fetched to the log end within replica.lag.time.max.ms (`Partition.maybeIncrementLeaderHW`): x is
    # written once that time has passed since broker 2's pause.
    time.sleep(max(0.0, paused_at + LAG_MS / 1000 + 0.5 - time.monotonic()))
    began = time.monotonic()
    offset = _send(producers["all"], b"x")
    acked_in = time.monotonic() - began
    assert ca.high_watermark(cluster.address(1), TOPIC, 0) == offset + 1
    assert set(_view(cluster, 3).isr) == {1, 2}  # acknowledged while the controller's ISR holds broker 2
    # f. Broker 1 dies before broker 2 fetches x; broker 2 is elected from the ISR the controller committed.
    cluster.kill(1)
    cluster.resume(2)
    elected = _wait_view(cluster, 3, lambda s: s.leader == 2, 30)
    assert elected, "broker 2 was never elected"
    assert _wait_view(cluster, 2, lambda s: s.leader == 2, 10)
    read = _read(cluster, 2)
    print(f"{cluster.version}: partition epoch {epoch} proposed; x acknowledged at offset {offset} in "
          f"{acked_in:.2f} s; broker 2 elected (ISR {elected.isr}, leader epoch {elected.leader_epoch}); "
          f"read from it: {read}")
    assert read == [b"w0", b"w1"]  # x, acknowledged, is lost


@pytest.mark.parametrize("gated", [pytest.param("4.4.0", marks=pytest.mark.slow)], indirect=True)
def test_without_the_late_record_the_controller_shrinks_the_isr_before_the_write_is_acknowledged(gated, producers):
    """The control: the same steps without c. The expansion's answer finds the pending state it answers and commits
    ISR {1, 2} on broker 1 too, so x waits for paused broker 2 until leader 1 shrinks the ISR to {1} again, through
    the controller; then broker 1's death leaves the partition without a leader (no unclean election), and broker 2,
    without x, is not elected."""
    cluster, gate = gated, gated.gate
    _create(cluster, producers)
    _shrink_answered_not_replayed(cluster, gate, producers)
    _, paused_at = _expansion_held(cluster, gate)
    gate.release(ALTER_PARTITION)
    assert _wait_view(cluster, 3, lambda s: set(s.isr) == {1, 2}, 10), "the controller never committed {1, 2}"
    time.sleep(max(0.0, paused_at + LAG_MS / 1000 + 0.5 - time.monotonic()))
    shrinks = gate.forwarded(ALTER_PARTITION)
    _send(producers["all"], b"x")
    assert gate.forwarded(ALTER_PARTITION) > shrinks  # acknowledged only after another AlterPartition
    assert _wait_view(cluster, 3, lambda s: s.isr == (1,), 10), "x acknowledged while the controller kept {1, 2}"
    cluster.kill(1)
    cluster.resume(2)
    assert _wait_view(cluster, 3, lambda s: s.leader == -1, 30), "the partition did not go offline"
    assert _view(cluster, 3).leader == -1  # not broker 2
