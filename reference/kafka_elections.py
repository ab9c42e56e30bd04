"""Kafka's leader elections and leader balancing run through the bridge, beside our reference.

KRaft leader balancing (request word `LB`, handler `reference/harness/KcheckLeaderBalance.java`):
one `ReplicationControlManager.maybeBalancePartitionLeaders()` run
(`metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java`) on a controller
built from the real `FeatureControlManager`, `ClusterControlManager` and `ConfigurationControlManager`,
fed a `RegisterBrokerRecord` per broker (active, fenced, or in controlled shutdown; a replica id with no
broker is unregistered), a `TopicRecord` (and `min.insync.replicas` `ConfigRecord`) per topic and a
`PartitionRecord` per partition, in the request's order. The answer is the controller's imbalanced set
in its iteration order before the run, the `PartitionChangeRecord`s of the run and the reschedule flag.
Our side: `reference/leader_balance.py` (`KRaftLeaderBalancer`, which models that set's order too).

ZooKeeper controller (3.x only, `kafka_2.13`; handler `reference/harness/KcheckZkElection.java`):
`ZA` runs one of the four `PartitionLeaderElectionAlgorithms`
(`core/src/main/scala/kafka/controller/PartitionStateMachine.scala`) and reports whether the unclean
election meter moved; `ZE` runs `Election.leaderFor*` (`core/.../controller/Election.scala`) for one
partition on a `ControllerContext` holding its full assignment, live and shutting-down brokers and
replicas on offline log dirs. Our side: the ZK part of `reference/election.py`.

    kafka = shared_bridge("4.4.0")
    (answer,) = map_leader_balance(kafka, [request])     # == reference_leader_balance(request, "4.4.0")
    zk = shared_bridge("3.9.1")
    map_zk_election(zk, [ZkElectionRequest("offline", (1, 2), (), (), (2,), (), (), LeaderAndIsr(1, 0, (1, 2)))])

A Java throw comes back as `JavaException(class name, message)` in place of the answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from kcheck.reference.election import (
    KRaftVersion,
    LeaderAndIsr,
    LeaderRecoveryState,
    PartitionChangeRecord,
    PartitionRegistration,
    ZkElectionResult,
    controlled_shutdown_partition_leader_election,
    leader_for_controlled_shutdown,
    leader_for_offline,
    leader_for_preferred_replica,
    leader_for_reassign,
    offline_partition_leader_election,
    preferred_replica_partition_leader_election,
    reassign_partition_leader_election,
)
from kcheck.reference.kafka_bridge import JavaException, KafkaBridge, encode_ints, parse_error
from kcheck.reference.leader_balance import (
    MAX_ELECTIONS_PER_IMBALANCE,
    RECORD_HASH_SINCE,
    KRaftLeaderBalancer,
    KRaftTopic,
)
from kcheck.reference.reassignment import ZkReplicaAssignment
from kcheck.reference.releases import profile, version_key

__all__ = [
    "BROKER_STATES",
    "BalanceAnswer",
    "BalanceRequest",
    "ZK_KINDS",
    "ZkAlgorithmRequest",
    "ZkElectionRequest",
    "kraft_version_for",
    "map_leader_balance",
    "map_zk_algorithm",
    "map_zk_election",
    "reference_leader_balance",
    "reference_leader_balance_releases",
    "reference_zk_algorithm",
    "reference_zk_election",
]

LB_WORD, ZA_WORD, ZE_WORD = "LB", "ZA", "ZE"
BROKER_STATES = ("active", "fenced", "shutting-down")  # RegisterBrokerRecord: unfenced, fenced, inControlledShutdown
_STATE_CODE = {"active": "a", "fenced": "f", "shutting-down": "s"}
ZK_KINDS = ("offline", "reassign", "preferred", "controlled-shutdown")
_ZK_CODE = {"offline": "o", "reassign": "r", "preferred": "p", "controlled-shutdown": "c"}


# --- KRaft leader balancing ----------------------------------------------------------------------


@dataclass(frozen=True)
class BalanceRequest:
    """A controller's state and one balance run. Topics are named t0, t1, ... in order on both sides."""

    brokers: tuple[tuple[int, str], ...]  # (id, one of BROKER_STATES), registered in this order
    topics: tuple[KRaftTopic, ...]  # ids and min.insync.replicas (their names are ignored: t<index>)
    partitions: tuple[tuple[int, int, PartitionRegistration], ...]  # (topic index, id, state), replayed in order
    max_elections: int = MAX_ELECTIONS_PER_IMBALANCE
    elr: bool = False  # eligible.leader.replicas.version=1
    metadata_version: int | None = None  # a metadata.version feature level; None: the release's latest production


@dataclass(frozen=True)
class BalanceAnswer:
    reschedule: bool
    order: tuple[tuple[int, int], ...]  # the imbalanced set before the run: (topic index, partition)
    records: tuple[tuple[int, int, PartitionChangeRecord], ...]  # (topic index, partition, record) in order


def _registration(r: PartitionRegistration) -> str:
    return "/".join([encode_ints(r.replicas), encode_ints(r.isr), str(r.leader), str(r.leader_epoch),
                     str(r.partition_epoch), str(int(r.leader_recovery_state)), encode_ints(r.removing_replicas),
                     encode_ints(r.adding_replicas), encode_ints(r.elr), encode_ints(r.last_known_elr)])


def encode_balance(r: BalanceRequest) -> str:
    brokers = [f"{b}/{_STATE_CODE[state]}" for b, state in r.brokers]
    topics = [f"{t.topic_id.most_significant_bits}/{t.topic_id.least_significant_bits}/"
              f"{'-' if t.min_insync_replicas is None else t.min_insync_replicas}" for t in r.topics]
    parts = [f"{t}/{p}/{_registration(reg)}" for t, p, reg in r.partitions]
    mv = "-" if r.metadata_version is None else str(r.metadata_version)
    return " ".join([LB_WORD, str(r.max_elections), str(int(r.elr)), mv, str(len(brokers)), *brokers,
                     str(len(topics)), *topics, *parts])


def _ints_or_none(tok: str) -> tuple[int, ...] | None:
    if tok == "-":
        return None
    if tok == "~":
        return ()
    return tuple(int(x) for x in tok.split(","))


def _record(tok: str) -> tuple[int, int, PartitionChangeRecord]:
    t, p, leader, isr, elr, lke, lrs, replicas, removing, adding = tok.split("/")
    state = int(lrs)
    return int(t), int(p), PartitionChangeRecord(
        leader=int(leader), isr=_ints_or_none(isr), replicas=_ints_or_none(replicas),
        removing_replicas=_ints_or_none(removing), adding_replicas=_ints_or_none(adding), elr=_ints_or_none(elr),
        last_known_elr=_ints_or_none(lke), leader_recovery_state=None if state < 0 else LeaderRecoveryState(state))


def parse_balance(line: str) -> BalanceAnswer | JavaException:
    if line.startswith("ERR "):
        return parse_error(line)
    _, reschedule, order, *records = line.split(" ")
    pairs = () if order == "~" else tuple(tuple(int(x) for x in o.split(":")) for o in order.split(","))
    return BalanceAnswer(reschedule == "1", pairs, tuple(_record(r) for r in records))  # type: ignore[arg-type]


def map_leader_balance(bridge: KafkaBridge, requests: Iterable[BalanceRequest]) -> list[BalanceAnswer | JavaException]:
    """Kafka's answer to each request, in one round trip."""
    bridge.require(LB_WORD, "ReplicationControlManager.maybeBalancePartitionLeaders")
    return [parse_balance(a) for a in bridge.roundtrip([encode_balance(r) for r in requests])]


def kraft_version_for(kafka_version: str, elr: bool = False) -> KRaftVersion:
    """Our `PartitionChangeBuilder` rules for a release (`releases.profile`), with ELR on or off as requested."""
    return replace(profile(kafka_version).kraft_rules(), eligible_leader_replicas=elr)


def reference_leader_balance(r: BalanceRequest, kafka_version: str = "4.4.0") -> BalanceAnswer:
    """Our answer to the same request: `KRaftLeaderBalancer` replaying the same records, then one run."""
    if r.metadata_version is not None:
        raise ValueError("our reference runs the release's latest metadata version only")
    if r.elr and version_key(kafka_version) < (4, 0, 0):
        raise ValueError(f"Kafka {kafka_version} cannot enable eligible leader replicas (metadata.version 4.0-IV1+)")
    balancer = KRaftLeaderBalancer(kafka_version)
    index: dict[str, int] = {}
    for i, topic in enumerate(r.topics):
        balancer.add_topic(KRaftTopic(f"t{i}", topic.topic_id, topic.min_insync_replicas))
        index[f"t{i}"] = i
    for t, p, reg in r.partitions:
        balancer.replay(r.topics[t].topic_id, p, reg)
    ids = {topic.topic_id: i for i, topic in enumerate(r.topics)}
    order = tuple((ids[topic_id], p) for topic_id, p in balancer.imbalanced)
    active = {b for b, state in r.brokers if state == "active"}
    result = balancer.balance(active, r.max_elections, kraft_version_for(kafka_version, r.elr))
    records = tuple((index[tp.topic], tp.partition, rec) for tp, rec in result.records)
    return BalanceAnswer(result.reschedule_immediately, order, records)


def reference_leader_balance_releases(r: BalanceRequest, versions: Iterable[str]
                                      ) -> dict[str, BalanceAnswer | Exception]:
    """`reference_leader_balance(r, v)` for each release `v` (an exception in place of the answer it raises),
    computed once per distinct profile: the controller's replay once per imbalanced-set hash (it changed
    in 4.1), the run once per set of `PartitionChangeBuilder` rules."""
    out: dict[str, BalanceAnswer | Exception] = {}
    by_hash: dict[bool, list[str]] = {}
    for v in versions:
        if r.metadata_version is not None or (r.elr and version_key(v) < (4, 0, 0)):
            try:
                out[v] = reference_leader_balance(r, v)  # raises: our reference refuses the request
            except Exception as e:  # noqa: BLE001 - the caller compares it with Kafka's answer
                out[v] = e
            continue
        by_hash.setdefault(version_key(v) >= RECORD_HASH_SINCE, []).append(v)
    for group in by_hash.values():
        try:
            balancer = KRaftLeaderBalancer(group[0])
            for i, topic in enumerate(r.topics):
                balancer.add_topic(KRaftTopic(f"t{i}", topic.topic_id, topic.min_insync_replicas))
            for t, p, reg in r.partitions:
                balancer.replay(r.topics[t].topic_id, p, reg)
        except Exception as e:  # noqa: BLE001
            out.update(dict.fromkeys(group, e))
            continue
        ids = {topic.topic_id: i for i, topic in enumerate(r.topics)}
        order = tuple((ids[topic_id], p) for topic_id, p in balancer.imbalanced)
        active = {b for b, state in r.brokers if state == "active"}
        runs: dict[KRaftVersion, BalanceAnswer | Exception] = {}
        for v in group:
            rules = kraft_version_for(v, r.elr)
            if rules not in runs:
                try:
                    result = balancer.balance(active, r.max_elections, rules)
                    records = tuple((int(tp.topic[1:]), tp.partition, rec) for tp, rec in result.records)
                    runs[rules] = BalanceAnswer(result.reschedule_immediately, order, records)
                except Exception as e:  # noqa: BLE001
                    runs[rules] = e
            out[v] = runs[rules]
    return out


# --- ZooKeeper controller ----------------------------------------------------------------------


@dataclass(frozen=True)
class ZkAlgorithmRequest:
    """One `PartitionLeaderElectionAlgorithms` call (`unclean` for offline, `shutting_down` for controlled shutdown)."""

    kind: str  # one of ZK_KINDS
    assignment: tuple[int, ...]
    isr: tuple[int, ...]
    live: tuple[int, ...]  # liveReplicas (a Set in Kafka)
    unclean: bool = False
    shutting_down: tuple[int, ...] = ()


def encode_zk_algorithm(r: ZkAlgorithmRequest) -> str:
    line = f"{ZA_WORD} {_ZK_CODE[r.kind]} {encode_ints(r.assignment)} {encode_ints(r.isr)} {encode_ints(r.live)}"
    if r.kind == "offline":
        return f"{line} {int(r.unclean)}"
    if r.kind == "controlled-shutdown":
        return f"{line} {encode_ints(r.shutting_down)}"
    return line


def parse_zk_algorithm(line: str) -> tuple[int | None, bool] | JavaException:
    """(leader or None, whether the unclean election meter moved)."""
    if line.startswith("ERR "):
        return parse_error(line)
    _, leader, unclean = line.split(" ")
    return (None if leader == "-" else int(leader)), unclean == "1"


def map_zk_algorithm(bridge: KafkaBridge, requests: Iterable[ZkAlgorithmRequest]
                     ) -> list[tuple[int | None, bool] | JavaException]:
    bridge.require(ZA_WORD, "the ZooKeeper controller's PartitionLeaderElectionAlgorithms")
    return [parse_zk_algorithm(a) for a in bridge.roundtrip([encode_zk_algorithm(r) for r in requests])]


def reference_zk_algorithm(r: ZkAlgorithmRequest) -> tuple[int | None, bool]:
    live = frozenset(r.live)
    if r.kind == "offline":
        leader = offline_partition_leader_election(r.assignment, r.isr, live, r.unclean)
        clean = offline_partition_leader_election(r.assignment, r.isr, live, False)
        return leader, leader is not None and clean is None
    if r.kind == "reassign":
        return reassign_partition_leader_election(r.assignment, r.isr, live), False
    if r.kind == "preferred":
        return preferred_replica_partition_leader_election(r.assignment, r.isr, live), False
    if r.kind == "controlled-shutdown":
        shutting_down = frozenset(r.shutting_down)
        return controlled_shutdown_partition_leader_election(r.assignment, r.isr, live, shutting_down), False
    raise ValueError(f"unknown election {r.kind!r}; one of {', '.join(ZK_KINDS)}")


@dataclass(frozen=True)
class ZkElectionRequest:
    """One partition's `Election.leaderFor*` on a controller context (see the module docstring)."""

    kind: str  # one of ZK_KINDS
    replicas: tuple[int, ...]  # the full assignment RS
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    live: tuple[int, ...]  # brokers in liveBrokerEpochs (shutting-down ones included)
    shutting_down: tuple[int, ...]
    offline_dir: tuple[int, ...]  # brokers whose replica of this partition is on an offline log dir
    current: LeaderAndIsr | None  # None: no leader and ISR in ZooKeeper (offline only)
    unclean: bool = False  # offline only
    leader_recovery_supported: bool = True  # offline only


def _leader_and_isr(x: LeaderAndIsr) -> str:
    return f"{x.leader}/{x.leader_epoch}/{encode_ints(x.isr)}/{int(x.leader_recovery_state)}/{x.partition_epoch}"


def encode_zk_election(r: ZkElectionRequest) -> str:
    current = "-" if r.current is None else _leader_and_isr(r.current)
    return " ".join([ZE_WORD, _ZK_CODE[r.kind], str(int(r.unclean)), str(int(r.leader_recovery_supported)),
                     *map(encode_ints, (r.replicas, r.adding, r.removing, r.live, r.shutting_down, r.offline_dir)),
                     current])


def parse_zk_election(line: str) -> ZkElectionResult | JavaException:
    if line.startswith("ERR "):
        return parse_error(line)
    _, state, live, unclean = line.split(" ")
    new = None
    if state != "-":
        leader, epoch, isr, lrs, partition_epoch = state.split("/")
        new = LeaderAndIsr(int(leader), int(epoch), _ints_or_none(isr) or (), LeaderRecoveryState(int(lrs)),
                           int(partition_epoch))
    return ZkElectionResult(new, _ints_or_none(live) or (), unclean == "1")


def map_zk_election(bridge: KafkaBridge, requests: Iterable[ZkElectionRequest]
                    ) -> list[ZkElectionResult | JavaException]:
    bridge.require(ZE_WORD, "the ZooKeeper controller's Election")
    return [parse_zk_election(a) for a in bridge.roundtrip([encode_zk_election(r) for r in requests])]


def _online(r: ZkElectionRequest, include_shutting_down: bool) -> frozenset[int]:
    """`ControllerContext.isReplicaOnline` for this partition, as a set of broker ids."""
    live = set(r.live) if include_shutting_down else set(r.live) - set(r.shutting_down)
    return frozenset(live - set(r.offline_dir))


def reference_zk_election(r: ZkElectionRequest) -> ZkElectionResult:
    assignment = ZkReplicaAssignment(r.replicas, r.adding, r.removing)
    if r.kind == "offline":
        return leader_for_offline(r.replicas, r.current, _online(r, False), r.unclean, r.leader_recovery_supported)
    if r.current is None:
        raise ValueError(f"a {r.kind} election needs the partition's leader and ISR")
    if r.kind == "reassign":
        return leader_for_reassign(assignment.target_replicas, r.current, _online(r, False))
    if r.kind == "preferred":
        return leader_for_preferred_replica(r.replicas, r.current, _online(r, False))
    if r.kind == "controlled-shutdown":
        return leader_for_controlled_shutdown(r.replicas, r.current, _online(r, True), r.shutting_down)
    raise ValueError(f"unknown election {r.kind!r}; one of {', '.join(ZK_KINDS)}")

