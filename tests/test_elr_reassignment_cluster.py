"""The ELR-after-reassignment finding (docs/findings.md) on real brokers: a KRaft cluster of two brokers, ELR on
(a new 4.1+ cluster finalizes eligible.leader.replicas.version 1), a topic on [1, 2] with min.insync.replicas 2.

What the model predicted, step by step, and what the brokers do:

1. Moving the partition to [1] completes with ISR {1}, below min ISR: the controller puts the removed broker 2 into
   the ELR (`PartitionChangeBuilder.maybePopulateTargetElr` ignores the replica set), and broker 2 deletes its log
   (renamed `<topic>-0.<id>-delete`). As predicted.
2. Moving it back to [2] while broker 1 leads: the model elected broker 2 from the ELR once broker 1 was fenced.
   Kafka does not: `ReplicationControlManager.getTopicEffectiveMinIsr` caps min.insync.replicas at the replica count
   (1 after the first move), so the reassignment's own record finds ISR {1} at the effective min ISR and clears the
   ELR. Broker 2 is held back by a replication throttle (it stays registered and unfenced but cannot catch up);
   broker 1 is killed; nobody is elected, and broker 1, back, is elected again (balanced recovery) with every
   acknowledged record.
3. Fencing broker 1 first, then moving the partition to [2]: the election asks the `LeaderAcceptor` about broker 2,
   an unfenced ELR member that is not a replica yet; looking up its directory throws ("Replica 2 is not assigned to
   this partition") and the request fails with UNKNOWN_SERVER_ERROR. No data is lost, but the partition stays
   offline: broker 1 restarts after an unclean shutdown and leaves the ELR, while 2 stays in it, so the last known
   leader is not elected either; an unclean election of broker 1 (which has every record) brings it back.

The model follows Kafka in both places now (model/replication/actions.py: `effective_min_isr`, `_acceptor_throws`).
"""

from __future__ import annotations

import os
import re

import pytest

from kcheck.cluster import admin as ca
from kcheck.inputs.formats import InputError
from kcheck.reference import kafka_tools

pytestmark = [pytest.mark.kafka, pytest.mark.cluster, pytest.mark.slow]

RELEASE = os.environ.get("KCHECK_CLUSTER_RELEASE", "4.4.0")
RECORDS = 60  # acknowledged before x; ~1 KB each, so a throttled follower cannot fetch them all at once
THROTTLED = {"leader.replication.throttled.rate": "1", "follower.replication.throttled.rate": "1"}


@pytest.fixture(scope="module")
def two_brokers():
    """A cluster of its own: the tests kill broker 1 and throttle replication. Small replica fetches, so the first
    fetch a throttle lets through (its rate starts at zero) carries only a few of the records."""
    from kcheck.cluster.local import LocalCluster

    cluster = LocalCluster(RELEASE, 2, config={"replica.fetch.max.bytes": "8192"})
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def _address(cluster, broker: int) -> str:
    return f"127.0.0.1:{cluster.node(broker).port}"


def _create(cluster, topic: str, configs: dict[str, str]) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, client_id="kcheck-elr")
    try:
        admin.create_topics([NewTopic(topic, replica_assignments={0: [1, 2]},
                                      topic_configs={"min.insync.replicas": "2", **configs})])
    finally:
        admin.close()
    assert ca.wait_for_states(cluster.bootstrap, topic, lambda s: set(s[0].isr) == {1, 2}, 30)


def _produce(cluster, topic: str, values: list[bytes]) -> list[int]:
    """acks=all writes, each acknowledged (its offset) before the next."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", linger_ms=0, retries=0)
    try:
        return [producer.send(topic, value=v, partition=0).get(timeout=30).offset for v in values]
    finally:
        producer.close()


def _read_all(address: str, topic: str) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=address, enable_auto_commit=False, consumer_timeout_ms=5000)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        return [m.value for m in consumer]
    finally:
        consumer.close()


def _moved_away(cluster, broker: int, topic: str) -> bool:
    names = os.listdir(cluster.directory / f"broker-{broker}" / "data")
    return f"{topic}-0" not in names and any(re.fullmatch(rf"{topic}-0\.[0-9a-f]+-delete", n) for n in names)


def _throttle(cluster, configs: dict) -> None:
    """Dynamic configs of brokers 1 and 2 (IncrementalAlterConfigs)."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, client_id="kcheck-elr")
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, str(b), configs) for b in (1, 2)],
                            raise_on_unknown=False)
    finally:
        admin.close()


def _state(address: str, topic: str):
    return ca.partition_states(address, topic)[0]


def _move_to_1(cluster, topic: str) -> None:
    """Step 1: the move to [1] completes below min ISR; broker 2 enters the ELR and deletes its log."""
    ca.reassign(cluster.bootstrap, topic, {0: [1]})
    s = ca.wait_until(lambda: (s := _state(cluster.bootstrap, topic)).replicas == (1,) and not s.adding and s, 30)
    assert (s.leader, s.isr, s.elr) == (1, (1,), (2,))
    assert ca.wait_until(lambda: _moved_away(cluster, 2, topic), 30)


def test_elr_is_cleared_when_the_partition_moves_back(two_brokers):
    cluster, topic = two_brokers, "elr-back"
    _create(cluster, topic, {"leader.replication.throttled.replicas": "0:1",
                             "follower.replication.throttled.replicas": "0:2"})
    features = kafka_tools.run(RELEASE, "kafka-features", ["--bootstrap-server", cluster.bootstrap, "describe"])
    assert re.search(r"Feature: eligible\.leader\.replicas\.version\s.*FinalizedVersionLevel: 1\s", features.stdout)
    acked = _produce(cluster, topic, [b"%04d" % i * 256 for i in range(RECORDS)] + [b"x"])
    assert acked == list(range(RECORDS + 1))
    _move_to_1(cluster, topic)
    shown = kafka_tools.run(RELEASE, "kafka-topics", ["--bootstrap-server", cluster.bootstrap, "--describe",
                                                      "--topic", topic])
    assert re.search(r"Replicas: 1\tIsr: 1\tElr: 2\t", shown.stdout), shown.stdout  # what the operator sees

    # Step 2: throttle replication to 1 byte/s, move the partition back to [2]; the record clears the ELR.
    _throttle(cluster, THROTTLED)
    ca.reassign(cluster.bootstrap, topic, {0: [2]})
    s = ca.wait_until(lambda: (s := _state(cluster.bootstrap, topic)).adding == (2,) and s, 30)
    assert (s.replicas, s.removing, s.leader, s.isr, s.elr) == ((2, 1), (1,), 1, (1,), ())
    behind = ca.log_end_offset(_address(cluster, 2), topic, 0)
    assert behind is not None and behind < RECORDS + 1  # broker 2 has a new, short log

    # Broker 1 dies; broker 2 (registered, unfenced, not in the ISR nor the ELR) is not elected.
    cluster.kill(1)
    b2 = _address(cluster, 2)
    s = ca.wait_until(lambda: (s := _state(b2, topic)).isr == () and s, 30)
    assert (s.leader, s.elr) == (-1, (1,))
    assert ca.log_end_offset(b2, topic, 0) < RECORDS + 1

    # Broker 1 comes back (unclean shutdown: it leaves the ELR) and, as the last known leader, leads again with
    # every record (its high watermark waits for a second in-sync replica: KIP-966). Unthrottled, broker 2 catches
    # up, the move completes, and every acknowledged record is read from broker 2.
    cluster.restart(1)
    s = ca.wait_until(lambda: (s := _state(cluster.bootstrap, topic)).leader == 1 and s, 30)
    assert s.isr == (1,) and ca.log_end_offset(_address(cluster, 1), topic, 0) == RECORDS + 1
    _throttle(cluster, {k: ("DELETE", None) for k in THROTTLED})
    s = ca.wait_until(lambda: (s := _state(cluster.bootstrap, topic)).replicas == (2,) and s, 60)
    assert (s.leader, s.isr) == (2, (2,))
    assert _read_all(cluster.bootstrap, topic)[RECORDS:] == [b"x"]


def test_moving_a_leaderless_partition_to_its_removed_eligible_replica_fails(two_brokers):
    cluster, topic = two_brokers, "elr-offline"
    _create(cluster, topic, {})
    assert _produce(cluster, topic, [b"x"]) == [0]
    _move_to_1(cluster, topic)

    cluster.kill(1)  # fenced after broker.session.timeout.ms: ISR empty, both brokers in the ELR, no leader
    b2 = _address(cluster, 2)
    s = ca.wait_until(lambda: (s := _state(b2, topic)).isr == () and s, 30)
    assert (s.replicas, s.leader, s.elr) == ((1,), -1, (1, 2))
    with pytest.raises(InputError, match=f"reassignment of {topic}-0 to replicas 2: UNKNOWN"):
        ca.reassign(b2, topic, {0: [2]}, timeout_s=10)
    log = (cluster.directory / "controller" / "server.log").read_text(errors="replace")
    assert "IllegalArgumentException error: Replica 2 is not assigned to this partition" in log
    assert _state(b2, topic).replicas == (1,)

    # Broker 1 restarts with x, but stays out: an unclean shutdown drops it from the ELR, and broker 2, still in the
    # ELR, keeps the last known leader from being elected.
    cluster.restart(1)
    s = ca.wait_until(lambda: (s := _state(cluster.bootstrap, topic)).elr == (2,) and s, 30)
    assert (s.leader, s.isr) == (-1, ())
    assert ca.log_end_offset(_address(cluster, 1), topic, 0) == 1
    assert ca.elect_leaders(cluster.bootstrap, topic, [0], unclean=True) == {0: None}
    s = ca.wait_until(lambda: (s := _state(cluster.bootstrap, topic)).leader == 1 and s, 30)
    assert _read_all(_address(cluster, 1), topic) == [b"x"]
