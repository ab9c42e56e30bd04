"""cluster/lossy.py: kill -9 plus cutting a broker's logs back to its recovery point, on the real cluster (the session
fixture `kafka_cluster`), and the segment walk checked on files Kafka itself wrote.

Measured on Kafka 4.4.0 (recorded by the second test): the cut of one follower loses nothing acknowledged (the
leader has it, the follower truncates and fetches again); the cut of both replicas of an acks=all,
min.insync.replicas=2 partition at once loses every acknowledged record that was not flushed: when both come
back, the controller elects one of them from its cut log although unclean.leader.election.enable=false (the
last known leader, KIP-966's balanced recovery, `PartitionChangeBuilder.canElectLastKnownLeader`, or the other
replica, depending on which registers first).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kcheck.cluster.admin import live_bootstrap, partition_states, wait_until
from kcheck.cluster.lossy import CHECKPOINT, _batches, log_dirs, lossy_kill, read_checkpoint
from kcheck.inputs.formats import InputError
from test_cluster import consume_all, produce  # the client helpers of the cluster tests

pytestmark = [pytest.mark.cluster, pytest.mark.kafka]


def new_topic(cluster, replicas: list[int]) -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"lossy-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap.split(","), request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(name, replica_assignments={0: replicas},
                                      topic_configs={"min.insync.replicas": "2"})])
    finally:
        admin.close()
    assert wait_until(lambda: _led(cluster, name), 30), "topic not created"
    return name


def _led(cluster, topic: str) -> bool:
    try:
        return partition_states(cluster.bootstrap, topic, timeout_s=5)[0].leader >= 0
    except InputError:
        return False


def segment(cluster, broker: int, topic: str) -> Path:
    return log_dirs(cluster, broker)[0] / f"{topic}-0" / f"{0:020d}.log"


def lost(acked: dict[str, tuple[int, int]], read: dict[tuple[int, int], str]) -> list[str]:
    return sorted(v for v, at in acked.items() if read.get(at) != v)


@pytest.mark.slow  # a second lossy crash on the cluster (~9 s)
def test_a_follower_cut_back_to_its_recovery_point_loses_nothing_acknowledged(cluster):
    topic = new_topic(cluster, [1, 2])
    acked = produce(cluster, topic, [f"a{i}" for i in range(200)])
    assert len(acked) == 200
    # the batch walk on the leader's file as Kafka wrote it: whole batches, every record, the last offset
    batches = _batches(segment(cluster, 1, topic).read_bytes())
    assert sum(b[1] for b in batches) == segment(cluster, 1, topic).stat().st_size
    assert sum(b[3] for b in batches) == 200 and batches[-1][2] == 199
    # no flush yet: the follower's recovery point for the new partition is 0 (or absent)
    assert read_checkpoint(log_dirs(cluster, 2)[0] / CHECKPOINT).get((topic, 0), 0) == 0

    cut = lossy_kill(cluster, 2)
    assert not cluster.is_running(2)
    mine = [f for f in cut.files if f"/{topic}-0/" in f[0]]
    assert mine == [(str(segment(cluster, 2, topic)), segment(cluster, 1, topic).stat().st_size, 0)]
    assert cut.records_cut >= 200 and segment(cluster, 2, topic).stat().st_size == 0
    cluster.restart(2)
    assert wait_until(lambda: set(partition_states(cluster.bootstrap, topic)[0].isr) == {1, 2}, 30)
    assert lost(acked, consume_all(cluster, topic)) == []
    assert segment(cluster, 2, topic).stat().st_size == segment(cluster, 1, topic).stat().st_size  # fetched again


def test_both_replicas_cut_at_once_lose_the_acknowledged_records_the_last_known_leader_had_not_flushed(cluster):
    topic = new_topic(cluster, [1, 2])
    acked = produce(cluster, topic, [f"b{i}" for i in range(200)])
    assert len(acked) == 200
    before = partition_states(cluster.bootstrap, topic)[0]
    assert (before.leader, set(before.isr)) == (1, {1, 2})
    lossy_kill(cluster, 1)
    lossy_kill(cluster, 2)
    cluster.restart(1)
    cluster.restart(2)
    back = wait_until(lambda: (s := partition_states(live_bootstrap(cluster), topic)[0]).leader >= 0 and s, 30)
    # Kafka 4.4 elects a replica although both shut down uncleanly: the last known leader (KIP-966 balanced
    # recovery) or the other one, depending on which registers first; both logs were cut
    assert back and back.leader in (1, 2) and back.leader_epoch > before.leader_epoch
    assert lost(acked, consume_all(cluster, topic)) == sorted(acked)  # every acknowledged record is gone
