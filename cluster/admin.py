"""Admin operations on a live cluster for fault campaigns and trace replay: read a topic's partition states,
elect leaders (preferred or unclean), reassign, list reassignments in flight.

Every call goes through kafka-python's admin client (the client `kcheck.cluster.live` reads clusters with):

- `partition_states` is DescribeTopicPartitions (KIP-966: leader, leader epoch, replicas, ISR, ELR; Kafka's
  `DescribeTopicPartitionsRequestHandler`), with the adding/removing replicas of ListPartitionReassignments
  (KIP-455). It reads a broker's metadata cache, which follows the controller's a moment later: after `reassign`
  or `elect_leaders`, poll until the change shows. A broker without DescribeTopicPartitions is read with
  Metadata: no ELR, no leader epoch (None).
- `elect_leaders` is ElectLeaders (KIP-460; election type 0 preferred, 1 unclean). The controller answers per
  partition (`ReplicationControlManager.electLeaders`): ELECTION_NOT_NEEDED when the wanted leader already leads,
  PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE when it cannot elect; those are results, not
  errors: the answer maps each partition to its Kafka error name, None when a leader was elected.
- `reassign` is AlterPartitionReassignments (KIP-455): a target replica list per partition, None cancels the
  partition's reassignment in flight (a superset of the CONTRACTS signature: C passes lists only). A partition the
  controller refuses is an InputError naming the partition and Kafka's error name.

A broker that was just killed stays in the metadata until the controller fences it (broker.session.timeout.ms),
and a paused one accepts connections but never answers; the admin client bootstraps from a random server and
may ask either. So requests go only to the brokers named in `bootstrap` (`live_bootstrap(cluster)` names the
running, unpaused ones), each try is short (4 s), and a refused connection or a timeout is tried again with a
fresh client until `timeout_s`. Every other client error is one line (`kcheck.inputs.formats.InputError` on
`--bootstrap-server`).
"""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kcheck.cluster.live import SOURCE, _bootstrap_servers, _client_errors, _quiet, _Recorder
from kcheck.inputs.formats import InputError

if TYPE_CHECKING:
    from kcheck.cluster.local import LocalCluster

PREFERRED = 0  # ElectionType in Kafka's ElectLeadersRequest
UNCLEAN = 1
ATTEMPT_MS = 4000  # one try of a request: a paused broker must not use up the whole timeout


@dataclass(frozen=True)
class PartitionState:
    leader: int  # -1 when none
    leader_epoch: int | None  # None when the broker answers only Metadata without it
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@contextlib.contextmanager
def _admin_session(bootstrap: str, timeout_s: float) -> Iterator[Any]:
    """Quiet client logs, one-line errors; yields a function that runs `op(admin)` with a fresh admin client,
    again on a refused connection (a dead broker still in the metadata) while time is left."""
    servers = _bootstrap_servers(bootstrap)
    timeout_ms = int(timeout_s * 1000)
    recorder = _Recorder()
    with _quiet(recorder), _client_errors(servers, timeout_s, recorder):
        from kafka.admin import KafkaAdminClient
        from kafka.errors import KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError, RequestTimedOutError

        deadline = time.monotonic() + timeout_s

        def run(op: Any) -> Any:
            while True:
                # Short attempts: the client bootstraps from a random server, and a paused (SIGSTOP) broker accepts
                # the connection but never answers; the next attempt likely picks another.
                left_ms = max(1000, int((deadline - time.monotonic()) * 1000))
                attempt_ms = min(timeout_ms, left_ms, ATTEMPT_MS)
                admin = None
                try:
                    admin = KafkaAdminClient(bootstrap_servers=servers, bootstrap_timeout_ms=attempt_ms,
                                             request_timeout_ms=attempt_ms, client_id="kcheck-admin")
                    _pin_to(admin, servers)
                    return op(admin)
                except (KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError, RequestTimedOutError):
                    if time.monotonic() + 0.5 >= deadline:
                        raise
                finally:
                    if admin is not None:
                        admin.close()
                time.sleep(0.2)

        yield run


def _pin_to(admin: Any, servers: Sequence[str]) -> None:
    """Send every request to a broker named in `servers`. kafka-python picks a random known broker for a request,
    and in KRaft any broker forwards controller requests (ElectLeaders, AlterPartitionReassignments,
    ListPartitionReassignments) to the active controller; so a caller that leaves a paused or dead broker out of
    the bootstrap list never waits for it. Uses the client's internals where they are as in kafka-python 3.0;
    otherwise (or if no listed broker is in the metadata) the client picks as it would."""
    manager = getattr(admin, "_manager", None)
    metadata = getattr(manager, "cluster", None)
    if manager is None or metadata is None or not hasattr(admin, "_controller_id") \
            or not callable(getattr(manager, "least_loaded_node", None)):
        return
    ids = sorted(b.node_id for b in metadata.brokers() if f"{b.host}:{b.port}" in servers)
    if not ids:
        return
    choose = manager.least_loaded_node

    def least_loaded_listed() -> Any:
        node = choose()
        return node if node in ids else random.choice(ids)

    manager.least_loaded_node = least_loaded_listed
    admin._controller_id = random.choice(ids)


def live_bootstrap(cluster: LocalCluster) -> str:
    """The addresses of the cluster's brokers that run and are not paused: the bootstrap to hand these functions
    while a fault is on, so that no request waits on a broker that cannot answer."""
    rows = [r for r in cluster.status() if r["role"] == "broker" and r["state"] == "running"]
    return ",".join(r["address"] for r in rows) or cluster.bootstrap


class UnknownTopic(InputError):
    """The answering broker does not know the topic: a wrong name, or one just created that this broker has not
    learned yet (each broker replays the metadata log on its own)."""


def _check_topic(topic: str) -> None:
    if not topic or any(c.isspace() for c in topic):
        raise InputError(SOURCE, f"{topic!r} is not a topic name")


def partition_states(bootstrap: str, topic: str, timeout_s: float = 15.0) -> dict[int, PartitionState]:
    """Every partition of `topic` as the controller's metadata has it now (see the module doc)."""
    _check_topic(topic)
    with _admin_session(bootstrap, timeout_s) as run:
        return run(lambda admin: _states(admin, topic)) or {}


def _states(admin: Any, topic: str) -> dict[int, PartitionState]:
    from kafka import errors

    try:
        answer = admin.describe_topic_partitions([topic])
        found = [t for t in answer["topics"] if t["name"] == topic]
        epochs = True
    except (errors.IncompatibleBrokerVersion, errors.UnsupportedVersionError):
        found = [{"name": t["topic"], "error_code": t.get("error_code", 0),
                  "partitions": [{"partition_index": p["partition"], "leader_id": p["leader"],
                                  "leader_epoch": None, "replica_nodes": p["replicas"], "isr_nodes": p["isr"],
                                  "error_code": p.get("error_code", 0)} for p in t["partitions"]]}
                 for t in admin.describe_topics([topic])]
        epochs = False
    error = errors.for_code(found[0].get("error_code", 0)) if found else errors.UnknownTopicOrPartitionError
    if error is errors.UnknownTopicOrPartitionError:
        raise UnknownTopic(SOURCE, f"topic {topic} does not exist")
    if error is not errors.NoError:
        raise InputError(SOURCE, f"topic {topic}: {error.message}")
    try:
        moving = admin.list_partition_reassignments({topic: [p["partition_index"] for p in found[0]["partitions"]]})
    except (errors.IncompatibleBrokerVersion, errors.UnsupportedVersionError):
        moving = {}
    by_partition = {tp.partition: r for tp, r in moving.items() if tp.topic == topic}
    out: dict[int, PartitionState] = {}
    for p in found[0]["partitions"]:
        ra = by_partition.get(p["partition_index"], {})
        leader = p["leader_id"]
        out[p["partition_index"]] = PartitionState(
            leader=leader if leader is not None and leader >= 0 else -1,
            leader_epoch=p.get("leader_epoch") if epochs else None,
            replicas=tuple(p["replica_nodes"] or ()), isr=tuple(p["isr_nodes"] or ()),
            elr=tuple(p.get("eligible_leader_replicas") or ()),
            adding=tuple(ra.get("adding_replicas") or ()), removing=tuple(ra.get("removing_replicas") or ()))
    return dict(sorted(out.items()))


def describe_quorum(controllers: str, timeout_s: float = 1.0) -> tuple[int, int] | None:
    """The KRaft metadata quorum's leader (the active controller) and its leader epoch, as the leader itself says:
    DescribeQuorum v0 on `__cluster_metadata` partition 0 (KIP-595) sent to each controller of `controllers`
    (host:port, comma-separated) in turn. Only the leader answers it (`KafkaRaftClient.handleDescribeQuorumRequest`:
    another voter answers NOT_LEADER_OR_FOLLOWER), so this is what `kafka-metadata-quorum --bootstrap-controller`
    reads, without a JVM; a paused controller never answers and costs `timeout_s`. None when no controller answers as
    leader (an election under way, or the leader paused)."""
    for address in controllers.split(","):
        host, _, port = address.rpartition(":")
        try:
            answer = _ask_controller(host, int(port), timeout_s)
        except (OSError, ValueError, struct.error):
            continue
        if answer is not None:
            return answer
    return None


def _ask_controller(host: str, port: int, timeout_s: float) -> tuple[int, int] | None:
    """One DescribeQuorum v0 to one controller over a plain socket (kafka-python's message classes encode it)."""
    from kafka.protocol.admin import DescribeQuorumRequest, DescribeQuorumResponse

    topic = DescribeQuorumRequest.TopicData
    request = DescribeQuorumRequest(topics=[topic(topic_name="__cluster_metadata",
                                                  partitions=[topic.PartitionData(partition_index=0)])])
    request.API_VERSION = 0
    request.with_header(correlation_id=1, client_id="kcheck-quorum")
    with socket.create_connection((host, port), timeout=timeout_s) as conn:
        conn.settimeout(timeout_s)
        conn.sendall(request.encode(version=0, header=True, framed=True))
        size = struct.unpack(">i", _read_exactly(conn, 4))[0]
        if not 0 < size <= 1 << 20:
            raise ValueError(f"a response of {size} bytes")
        response = DescribeQuorumResponse.decode(_read_exactly(conn, size), version=0, header=True)
    parts = [p for t in response.topics if t.topic_name == "__cluster_metadata" for p in t.partitions]
    if response.error_code != 0 or not parts or parts[0].error_code != 0 or parts[0].leader_id < 0:
        return None
    return int(parts[0].leader_id), int(parts[0].leader_epoch)


def _read_exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise OSError("the controller closed the connection")
        data += chunk
    return data


def elect_leaders(bootstrap: str, topic: str, partitions: Sequence[int], unclean: bool,
                  timeout_s: float = 15.0) -> dict[int, str | None]:
    """An ElectLeaders request (preferred, or unclean) for `partitions` of `topic`: partition -> Kafka's error
    name for it (e.g. ELECTION_NOT_NEEDED), None where a leader was elected."""
    _check_topic(topic)
    wanted = sorted(set(partitions))
    if not wanted:
        return {}

    def op(admin: Any) -> dict[int, str | None]:
        from kafka import errors

        response = admin.elect_leaders(UNCLEAN if unclean else PREFERRED, {topic: wanted},
                                       timeout_ms=min(int(timeout_s * 1000), ATTEMPT_MS), raise_errors=False)
        top = errors.for_code(getattr(response, "error_code", 0) or 0)
        if top is not errors.NoError:
            raise InputError(SOURCE, f"leader election on {topic}: {top.message}")
        out: dict[int, str | None] = {}
        for result in response.replica_election_results:
            if result.topic != topic:
                continue
            for p in result.partition_result:
                e = errors.for_code(p.error_code)
                out[p.partition_id] = None if e is errors.NoError else e.message
        return out

    with _admin_session(bootstrap, timeout_s) as run:
        return run(op) or {}


def reassign(bootstrap: str, topic: str, targets: Mapping[int, Sequence[int] | None], timeout_s: float = 15.0) -> None:
    """Start a reassignment of each partition of `topic` to its target replicas (None cancels the one in flight).
    Returns once the controller has accepted it; the data moves afterwards (`reassignments_in_flight`)."""
    _check_topic(topic)
    if not targets:
        return
    from kafka import TopicPartition

    request = {TopicPartition(topic, p): (None if r is None else [int(b) for b in r]) for p, r in targets.items()}

    def op(admin: Any) -> None:
        answer = admin.alter_partition_reassignments(request, timeout_ms=min(int(timeout_s * 1000), ATTEMPT_MS))
        for tp, error in sorted(answer.items(), key=lambda kv: kv[0].partition):
            if error is not None:
                target = targets[tp.partition]
                what = "cancel" if target is None else f"replicas {','.join(map(str, target))}"
                raise InputError(SOURCE, f"reassignment of {topic}-{tp.partition} to {what}: {error.message}")

    with _admin_session(bootstrap, timeout_s) as run:
        run(op)


def reassignments_in_flight(bootstrap: str, topic: str, timeout_s: float = 15.0) -> set[int]:
    """The partitions of `topic` with a reassignment in flight (ListPartitionReassignments)."""
    _check_topic(topic)

    def op(admin: Any) -> set[int]:
        return {tp.partition for tp in admin.list_partition_reassignments() if tp.topic == topic}

    with _admin_session(bootstrap, timeout_s) as run:
        return run(op) or set()


DEBUGGING_REPLICA_ID = -2  # ListOffsetsRequest.DEBUGGING_REPLICA_ID


def log_end_offset(address: str, topic: str, partition: int, timeout_s: float = 10.0) -> int | None:
    """The log end offset of the broker at `address` ("host:port") for one partition, leader or follower: ListOffsets
    LATEST with the debugging replica id. `ReplicaManager.fetchOffset` then reads the broker's local log
    whatever its role and applies no isolation level, so LATEST is the log end offset, not the high watermark
    (`Partition.fetchOffsetForTimestamp` with no isolation level). None when the broker holds no replica of it."""
    return _latest_offset(address, topic, partition, DEBUGGING_REPLICA_ID, timeout_s)


def high_watermark(address: str, topic: str, partition: int, timeout_s: float = 10.0) -> int | None:
    """The high watermark of the partition's leader at `address`: ListOffsets LATEST as a consumer
    (READ_UNCOMMITTED). None when that broker does not lead it."""
    return _latest_offset(address, topic, partition, -1, timeout_s)


def _latest_offset(address: str, topic: str, partition: int, replica_id: int, timeout_s: float) -> int | None:
    import socket
    import struct

    from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse

    version = 5  # topic names, leader epochs in the answer: every release 2.2 to 4.4 serves it
    part = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(partition_index=partition, current_leader_epoch=-1,
                                                                     timestamp=-1)
    request = ListOffsetsRequest(replica_id=replica_id, isolation_level=0,
                                 topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[part])])
    request.with_header(correlation_id=1, client_id="kcheck-offsets")
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(request.encode(version=version, header=True, framed=True))

        def read(n: int) -> bytes:
            buf = b""
            while len(buf) < n:
                chunk = sock.recv(n - len(buf))
                if not chunk:
                    raise ConnectionError(f"{address} closed the connection")
                buf += chunk
            return buf

        size = struct.unpack(">i", read(4))[0]
        answer = ListOffsetsResponse.decode(read(size), version=version, header=True)
    found = answer.topics[0].partitions[0]
    return None if found.error_code else int(found.offset)


def wait_for_states(bootstrap: str, topic: str, ready: Any, timeout_s: float) -> Any:
    """`ready(partition_states(...))` until it is truthy (returned) or `timeout_s` passes (the last value, or None);
    a topic the answering broker does not know yet counts as not ready, so this is the wait after creating one."""
    def check() -> Any:
        try:
            return ready(partition_states(bootstrap, topic))
        except UnknownTopic:
            return None
    return wait_until(check, timeout_s)


def wait_until(check: Any, timeout_s: float, interval_s: float = 0.25) -> Any:
    """Call `check()` until it returns something truthy (returned) or `timeout_s` passes (the last value)."""
    from kcheck.runtime import interrupts
    deadline = time.monotonic() + timeout_s
    while True:
        interrupts.check()  # a Ctrl-C the Kafka client swallowed (it reports a time-out) ends the wait
        value = check()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval_s)
