"""kcheck.cluster.admin on a real cluster (the session fixture `kafka_cluster`: brokers 1, 2, 3 in racks a, b, c).

The expected outcomes are what Kafka's controller does: ElectLeaders (KIP-460) and AlterPartitionReassignments
(KIP-455) as `ReplicationControlManager` handles them; each test leaves every broker running.
"""

from __future__ import annotations

import threading
import uuid

import pytest

from kcheck.cluster.admin import (
    elect_leaders,
    live_bootstrap,
    partition_states,
    reassign,
    reassignments_in_flight,
    wait_for_states,
    wait_until,
)
from kcheck.inputs.formats import InputError

pytestmark = [pytest.mark.cluster, pytest.mark.kafka]


def new_topic(cluster, assignment: dict[int, list[int]], configs: dict[str, str] | None = None,
              name: str = "") -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    name = name or f"admin-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap.split(","), request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(name, replica_assignments=assignment, topic_configs=configs or {})])
    finally:
        admin.close()
    assert wait_for_states(cluster.bootstrap, name, lambda states: len(states) == len(assignment) and all(
        s.leader >= 0 for s in states.values()), 30), "topic not created"
    return name


def test_unclean_election_elects_an_out_of_sync_replica_and_preferred_election_brings_the_first_replica_back(
        cluster):
    topic = new_topic(cluster, {0: [1, 2]})
    bs = cluster.bootstrap
    first = partition_states(bs, topic)[0]
    assert (first.leader, first.replicas, set(first.isr), first.adding) == (1, (1, 2), {1, 2}, ())
    assert elect_leaders(bs, topic, [0], unclean=False) == {0: "ELECTION_NOT_NEEDED"}

    cluster.shutdown(2)  # a controlled shutdown leaves the ISR at once
    assert wait_until(lambda: partition_states(bs, topic)[0].isr == (1,), 15)
    cluster.shutdown(1)  # the last ISR member: no leader, and (KIP-966, on in 4.x) broker 1 is the ELR
    gone = wait_until(lambda: (s := partition_states(bs, topic)[0]).leader == -1 and s, 15)
    assert gone and gone.isr == () and gone.leader_epoch is not None and gone.leader_epoch > first.leader_epoch
    cluster.restart(2)
    # broker 2 is out of sync: only an unclean election makes it the leader
    assert partition_states(bs, topic)[0].leader == -1
    assert elect_leaders(bs, topic, [0], unclean=False) == {0: "PREFERRED_LEADER_NOT_AVAILABLE"}
    assert elect_leaders(bs, topic, [0], unclean=True) == {0: None}
    after = wait_until(lambda: (s := partition_states(bs, topic)[0]).leader != -1 and s, 10)
    assert (after.leader, after.isr) == (2, (2,)) and after.leader_epoch > gone.leader_epoch

    cluster.restart(1)
    assert wait_until(lambda: set(partition_states(bs, topic)[0].isr) == {1, 2}, 30), "broker 1 not back in sync"
    assert partition_states(bs, topic)[0].leader == 2  # the leader does not move back by itself within this test
    assert elect_leaders(bs, topic, [0], unclean=False) == {0: None}
    assert wait_until(lambda: partition_states(bs, topic)[0].leader == 1, 10)


def test_a_reassignment_completes_and_the_states_show_the_new_replicas(cluster):
    topic = new_topic(cluster, {0: [1, 2], 1: [2, 3]})
    bs = cluster.bootstrap
    reassign(bs, topic, {0: [3, 2]})
    assert wait_until(lambda: not reassignments_in_flight(bs, topic), 30), "reassignment still in flight"
    # the broker's metadata cache may lag the controller's completion by a moment
    assert wait_until(lambda: partition_states(bs, topic)[0].replicas == (3, 2), 15), "the new replicas never showed"
    states = partition_states(bs, topic)
    assert states[0].replicas == (3, 2) and set(states[0].isr) == {2, 3} and states[0].adding == ()
    assert states[0].leader in (2, 3) and states[1].replicas == (2, 3)
    # a replica order change alone moves no data; a preferred election then follows the new order
    reassign(bs, topic, {1: [3, 2]})
    assert wait_until(lambda: partition_states(bs, topic)[1].replicas == (3, 2), 15)
    assert elect_leaders(bs, topic, [1], unclean=False) == {1: None}
    assert wait_until(lambda: partition_states(bs, topic)[1].leader == 3, 10)


def test_a_reassignment_in_flight_is_listed_with_its_adding_replicas_and_can_be_cancelled(cluster):
    topic = new_topic(cluster, {0: [1, 2]})
    cluster.pause(3)  # the new replica cannot catch up while broker 3 is paused: the reassignment stays in flight
    bs = live_bootstrap(cluster)  # brokers 1 and 2: no request waits on the paused broker
    assert bs == ",".join(f"127.0.0.1:{cluster.node(b).port}" for b in (1, 2))
    try:
        reassign(bs, topic, {0: [1, 3]})
        assert reassignments_in_flight(bs, topic) == {0}  # the controller's own list
        # a broker's metadata follows the controller's a moment later
        moving = wait_until(lambda: (s := partition_states(bs, topic)[0]).adding and s, 10)
        assert (moving.replicas, moving.adding, moving.removing) == ((1, 3, 2), (3,), (2,))
        reassign(bs, topic, {0: None})
        assert wait_until(lambda: not reassignments_in_flight(bs, topic), 15)
        back = wait_until(lambda: not (s := partition_states(bs, topic)[0]).adding and s, 10)
        assert (back.replicas, back.adding, back.removing) == ((1, 2), (), ())
    finally:
        cluster.resume(3)


def test_the_wait_after_creating_a_topic_outlasts_brokers_that_have_not_learned_it(cluster):
    """A broker learns a new topic when it replays the controller's record, so the broker a describe reaches may not
    know a topic created a moment ago (CI met it): waiting counts that as not ready, not as an error."""
    name = f"admin-{uuid.uuid4().hex[:8]}"
    assert wait_for_states(cluster.bootstrap, name, lambda s: s, 1) is None
    later = threading.Timer(1.0, new_topic, (cluster, {0: [2, 1]}), {"name": name})
    later.start()
    try:
        got = wait_for_states(cluster.bootstrap, name, lambda s: s, 30)
    finally:
        later.join()
    assert got and got[0].replicas == (2, 1)


def test_client_errors_are_one_line(cluster):
    topic = new_topic(cluster, {0: [1]})
    bs = cluster.bootstrap
    with pytest.raises(InputError) as e:
        partition_states(bs, "no-such-topic")
    assert str(e.value) == "--bootstrap-server: topic no-such-topic does not exist"
    with pytest.raises(InputError) as e:
        reassign(bs, topic, {0: [1, 9]})
    assert str(e.value) == (f"--bootstrap-server: reassignment of {topic}-0 to replicas 1,9: "
                            "INVALID_REPLICATION_ASSIGNMENT")
    with pytest.raises(InputError) as e:
        reassign(bs, topic, {0: None})
    assert str(e.value) == f"--bootstrap-server: reassignment of {topic}-0 to cancel: NO_REASSIGNMENT_IN_PROGRESS"
    assert elect_leaders(bs, topic, [0, 7], unclean=True) == {0: "ELECTION_NOT_NEEDED", 7: "UNKNOWN_TOPIC_OR_PARTITION"}
    with pytest.raises(InputError, match="^--bootstrap-server: 'a b' is not a topic name$"):
        partition_states(bs, "a b")
