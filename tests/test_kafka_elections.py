"""Leader balancing and elections against real Kafka, record for record (marker `kafka`).

KRaft: `ReplicationControlManager.maybeBalancePartitionLeaders` on a controller built from Kafka's own
managers and fed records (kcheck.reference.kafka_elections) against `KRaftLeaderBalancer`: the
imbalanced set's iteration order, every `PartitionChangeRecord` in order, and the reschedule flag.
Clusters have fenced, shutting-down and unregistered brokers, leaderless partitions, ISRs without the
preferred replica, reassignments in flight, RECOVERING partitions, ELR state and more imbalanced
partitions than the run may elect.

ZooKeeper (3.9.1): the four `PartitionLeaderElectionAlgorithms` (and whether the unclean meter moved)
and `Election.leaderFor*` on a `ControllerContext` against the ZK part of `reference/election.py`.

Default run: 4.4.0 for KRaft, 3.9.1 for ZooKeeper; 4.0.2 and 4.1.2 are `slow`.
KCHECK_KAFKA_RELEASES="4.0.2,4.1.2" overrides the KRaft releases (3.x ones there select the ZK ones).
Skipped only when `java`, `javac` or `mvn` is missing; a failed download fails loudly.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.reference.assignors.uuid import Uuid
from kcheck.reference.election import LeaderAndIsr, LeaderRecoveryState, PartitionRegistration
from kcheck.reference.kafka_bridge import JavaException
from kcheck.reference.kafka_elections import (
    ZK_KINDS,
    BalanceAnswer,
    BalanceRequest,
    ZkAlgorithmRequest,
    ZkElectionRequest,
    map_leader_balance,
    map_zk_algorithm,
    map_zk_election,
    reference_leader_balance,
    reference_leader_balance_releases,
    reference_zk_algorithm,
    reference_zk_election,
)
from kcheck.reference.leader_balance import KRaftTopic, topic_id_partition_hash

pytestmark = pytest.mark.kafka

_env = ENV_RELEASES
if _env:
    KRAFT_RELEASES = list(_env)
    ZK_RELEASES = [v for v in _env if v.startswith("3.")]
else:
    KRAFT_RELEASES = ["4.4.0", *(pytest.param(v, marks=pytest.mark.slow) for v in ("4.1.2", "4.0.2", "3.9.1"))]
    ZK_RELEASES = ["3.9.1"]


def _version(param) -> str:
    return param if isinstance(param, str) else param.values[0]


def _balance_cases():
    for v in KRAFT_RELEASES:
        marks = () if isinstance(v, str) else v.marks
        for elr in (False, True):
            if not (elr and _version(v).startswith("3.")):  # ELR needs metadata.version 4.0-IV1
                yield pytest.param(_version(v), elr, marks=marks, id=f"{_version(v)}-{'elr' if elr else 'no-elr'}")


BALANCE_CASES = list(_balance_cases())
NEWEST = _version(KRAFT_RELEASES[0]) if KRAFT_RELEASES else "4.4.0"
BATCH = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))




def _ours(fn, *args):
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - shown beside Kafka's answer
        return e


# --- KRaft leader balancing -------------------------------------------------------------------


@st.composite
def balance_requests(draw, elr: bool):
    """A controller's brokers, topics and partitions. The shape comes from Hypothesis, the details from
    a drawn seed, so a batch of hundreds stays cheap and still shrinks."""
    n = draw(st.integers(1, 9))
    n_topics = draw(st.integers(1, 4))
    per_topic = draw(st.one_of(st.integers(1, 8), st.integers(1, 40), st.just(150)))
    fencing = draw(st.sampled_from(FENCING))
    leaders = draw(st.sampled_from(LEADERS))
    max_elections = draw(st.one_of(st.just(1000), st.integers(0, 6), st.integers(1, 60)))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    return balance_request(rng, elr, n, n_topics, per_topic, fencing, leaders, max_elections)


FENCING = ["none", "some", "some", "most", "all"]
LEADERS = ["mixed", "mixed", "leaderless", "not-preferred"]


def random_balance_request(rng: random.Random, elr: bool) -> BalanceRequest:
    """`balance_requests` with the shape drawn from `rng` too, 150-partition topics rarer (1 in 20): the
    million-input bench's generator."""
    n, n_topics = rng.randint(1, 9), rng.randint(1, 4)
    per_topic = 150 if rng.random() < 0.05 else rng.choice([rng.randint(1, 8), rng.randint(1, 40)])
    fencing, leaders = rng.choice(FENCING), rng.choice(LEADERS)
    max_elections = rng.choice([1000, rng.randint(0, 6), rng.randint(1, 60)])
    return balance_request(rng, elr, n, n_topics, per_topic, fencing, leaders, max_elections)


def balance_request(rng: random.Random, elr: bool, n: int, n_topics: int, per_topic: int, fencing: str, leaders: str,
                    max_elections: int) -> BalanceRequest:
    ids = list(range(n)) if rng.random() < 0.6 else rng.sample(range(0, 60), n)
    p_fenced = {"none": 0.0, "some": 0.25, "most": 0.7, "all": 1.0}[fencing]
    brokers = []
    for b in ids:
        if rng.random() < 0.08:
            continue  # a replica on a broker that never registered
        state = "fenced" if rng.random() < p_fenced else ("shutting-down" if rng.random() < 0.1 else "active")
        brokers.append((b, state))
    rng.shuffle(brokers)
    topics = tuple(KRaftTopic("", Uuid(rng.randint(-(2**63), 2**63 - 1), rng.randint(-(2**63), 2**63 - 1)),
                              rng.choice([None, None, 1, 2, 3, 5])) for _ in range(n_topics))
    partitions = []
    for t in range(n_topics):
        for p in range(rng.randint(1, per_topic)):
            partitions.append((t, p, _registration(rng, ids, leaders, elr)))
    rng.shuffle(partitions)  # replay order: the imbalanced set's chains keep it
    if rng.random() < 0.03:  # a replica listed twice: Kafka refuses the PartitionRecord
        t, p, reg = partitions[-1]
        partitions[-1] = (t, p, replace(reg, replicas=reg.replicas + reg.replicas[-1:]))
    return BalanceRequest(tuple(brokers), topics, tuple(partitions), max_elections, elr)


def _registration(rng: random.Random, ids: list[int], leaders: str, elr: bool) -> PartitionRegistration:
    replicas = rng.sample(ids, rng.randint(1, min(5, len(ids))))
    isr = [r for r in replicas if rng.random() < 0.7]
    if rng.random() < 0.3:
        rng.shuffle(isr)
    adding: list[int] = []
    removing: list[int] = []
    if len(replicas) >= 2 and rng.random() < 0.15:  # a reassignment in flight
        cut = rng.randint(1, len(replicas) - 1)
        kind = rng.random()
        if kind < 0.4:
            adding = replicas[cut:]
        elif kind < 0.8:
            removing = replicas[cut:]
        else:
            adding, removing = replicas[cut:], replicas[cut - 1:cut]
    if rng.random() < 0.03:
        isr.append(max(ids) + 1)  # an ISR member that is no replica
    if not isr or leaders == "leaderless" or (leaders == "mixed" and rng.random() < 0.2):
        leader = -1
    elif rng.random() < 0.04:
        leader = rng.choice(replicas)  # possibly outside the ISR
    elif leaders == "not-preferred" and len(isr) > 1:
        leader = rng.choice([r for r in isr if r != replicas[0]])
    else:
        leader = rng.choice(isr)
    elr_, last_known = [], []
    if elr and rng.random() < 0.4:
        elr_ = [r for r in replicas if r not in isr and rng.random() < 0.5]
        if not isr and rng.random() < 0.5:
            last_known = [rng.choice(replicas)]
    recovering = leader >= 0 and rng.random() < 0.05
    return PartitionRegistration(
        tuple(replicas), tuple(isr), leader, rng.randint(0, 9), rng.randint(0, 9), tuple(removing), tuple(adding),
        LeaderRecoveryState.RECOVERING if recovering else LeaderRecoveryState.RECOVERED, tuple(elr_), tuple(last_known))


def _note(seen: Counter[str], r: BalanceRequest, a: BalanceAnswer | JavaException) -> None:
    states = dict(r.brokers)
    seen["inputs"] += 1
    if not isinstance(a, BalanceAnswer):
        seen["refused"] += 1
        return
    seen["records"] += len(a.records)
    seen["rescheduled"] += a.reschedule
    seen["capped"] += a.reschedule and len(a.order) > r.max_elections
    for _, _, reg in r.partitions:
        seen["leaderless"] += reg.leader == -1
        seen["preferred out of ISR"] += reg.replicas[0] not in reg.isr
        seen["fenced preferred"] += states.get(reg.replicas[0]) == "fenced"
        seen["reassigning"] += reg.is_reassigning
    for _, _, rec in a.records:
        seen["record completes a reassignment"] += rec.replicas is not None
        seen["record leaves no leader"] += rec.leader == -1
        seen["record with ELR"] += rec.elr is not None


def _same(mine, real) -> bool:
    if isinstance(real, JavaException):  # a refusal: same exception, same message
        return isinstance(mine, Exception) and (type(mine).__name__, str(mine)) == (real.simple_name, real.message)
    return mine == real


def check_balance(version: str, requests: list[BalanceRequest], seen: Counter[str]) -> None:
    kafka = map_leader_balance(_kafka(version), requests)
    for r, real in zip(requests, kafka, strict=True):
        _note(seen, r, real)
        mine = _ours(reference_leader_balance, r, version)
        assert _same(mine, real), f"\nKafka {version}\ninput: {r}\nours:  {mine}\nkafka: {real}"


@pytest.mark.parametrize(("version", "elr"), BALANCE_CASES)
def test_leader_balance_matches_kafka(version, elr):
    seen: Counter[str] = Counter()

    @BATCH
    @given(st.lists(balance_requests(elr), min_size=40, max_size=80))
    def check(requests):
        check_balance(version, requests, seen)

    check()
    # the batches did reach what the differential is about
    for what in ("records", "refused", "capped", "leaderless", "preferred out of ISR", "fenced preferred",
                 "reassigning", "record completes a reassignment", "record leaves no leader"):
        assert seen[what] > 0, (what, seen)
    assert seen["record with ELR"] > 0 if elr else seen["record with ELR"] == 0


def test_one_reference_run_for_many_releases_answers_as_each_release_alone():
    """`reference_leader_balance_releases` (the million-input bench's: one replay per imbalanced-set hash, one run
    per set of builder rules) gives every release the answer, or the refusal, `reference_leader_balance` gives."""
    releases = ["4.4.0", "4.1.2", "4.0.2", "3.9.1"]
    rng = random.Random(4)
    kinds: Counter[str] = Counter()
    for _ in range(300):
        r = random_balance_request(rng, rng.random() < 0.5)
        shared = reference_leader_balance_releases(r, releases)
        for v in releases:
            alone = _ours(reference_leader_balance, r, v)
            kinds[type(alone).__name__] += 1
            if isinstance(alone, Exception):
                assert (type(shared[v]), str(shared[v])) == (type(alone), str(alone)), (v, r)
            else:
                assert shared[v] == alone, (v, r)
    assert kinds["BalanceAnswer"] > 500 and len(kinds) > 2, kinds  # answers and two kinds of refusal


def _one_partition_cluster(max_elections: int) -> BalanceRequest:
    reg = PartitionRegistration((0, 1), (0, 1), 1)
    return BalanceRequest(((0, "active"), (1, "active")), (KRaftTopic("", Uuid(1, 2)),), ((0, 0, reg),), max_elections)


@pytest.mark.parametrize("version", KRAFT_RELEASES)
def test_a_run_that_fills_the_cap_asks_to_run_again_even_with_nothing_left(version):
    """Kafka reschedules when the run holds max_elections records, not when imbalanced partitions remain:
    one imbalanced partition and a cap of 1 reschedule; so does a cap of 0 with nothing to do."""
    requests = [_one_partition_cluster(1), _one_partition_cluster(2), _one_partition_cluster(0)]
    kafka = map_leader_balance(_kafka(version), requests)
    assert [a.reschedule for a in kafka] == [True, False, True]  # type: ignore[union-attr]
    assert [reference_leader_balance(r, version) for r in requests] == kafka


@pytest.mark.parametrize("version", KRAFT_RELEASES)
def test_more_imbalanced_partitions_than_one_run_elects(version):
    """1,200 partitions led by their second replica: the first 1,000 in the set's order move, the run asks
    for another, and the next run (replaying the records) moves the other 200."""
    brokers = tuple((b, "active") for b in range(4))
    topics = tuple(KRaftTopic("", Uuid(10 + t, -7 * t)) for t in range(3))
    parts = tuple((t, p, PartitionRegistration(((p + t) % 4, (p + t + 1) % 4), ((p + t) % 4, (p + t + 1) % 4),
                                               (p + t + 1) % 4)) for t in range(3) for p in range(400))
    first = BalanceRequest(brokers, topics, parts)
    (kafka,) = map_leader_balance(_kafka(version), [first])
    assert isinstance(kafka, BalanceAnswer)
    assert len(kafka.order) == 1200 and len(kafka.records) == 1000 and kafka.reschedule
    assert reference_leader_balance(first, version) == kafka
    moved = {(t, p): rec.leader for t, p, rec in kafka.records}
    after = tuple((t, p, PartitionRegistration(reg.replicas, reg.isr, moved.get((t, p), reg.leader)))
                  for t, p, reg in parts)
    second = BalanceRequest(brokers, topics, after)
    (kafka2,) = map_leader_balance(_kafka(version), [second])
    assert isinstance(kafka2, BalanceAnswer) and len(kafka2.records) == 200 and not kafka2.reschedule
    assert reference_leader_balance(second, version) == kafka2


@pytest.mark.slow
def test_imbalanced_set_order_changed_in_4_1():
    """TopicIdPartition became a record in 4.1: its hash code, and with it the order the balance visits
    partitions in (which decides who moves first when the cap is reached), differ from 4.0's."""
    topics = tuple(KRaftTopic("", Uuid(t * 7919 + 1, -t)) for t in range(2))
    parts = tuple((t, p, PartitionRegistration((0, 1), (0, 1), 1)) for t in range(2) for p in range(12))
    request = BalanceRequest(((0, "active"), (1, "active")), topics, parts, max_elections=5)
    old, new = (map_leader_balance(_kafka(v), [request])[0] for v in ("4.0.2", "4.4.0"))
    assert isinstance(old, BalanceAnswer) and isinstance(new, BalanceAnswer)
    assert old.order != new.order and old.records != new.records
    assert reference_leader_balance(request, "4.0.2") == old and reference_leader_balance(request, "4.4.0") == new
    u = topics[0].topic_id
    assert topic_id_partition_hash(u, 3, "4.0.2") != topic_id_partition_hash(u, 3, "4.1.2")


# --- ZooKeeper controller (3.x) ----------------------------------------------------------------


def _some(rng: random.Random, k: int) -> list[int]:
    return rng.sample(range(12), k)


@st.composite
def zk_algorithm_requests(draw):
    kind = draw(st.sampled_from(ZK_KINDS))
    return zk_algorithm_request(random.Random(draw(st.integers(0, 2**32 - 1))), kind)


def zk_algorithm_request(rng: random.Random, kind: str) -> ZkAlgorithmRequest:
    assignment = _some(rng, rng.randint(0, 6))
    if assignment and rng.random() < 0.1:
        assignment.append(assignment[0])  # a Seq: Kafka takes whatever it is given
    isr = [r for r in assignment if rng.random() < 0.6] + (_some(rng, 2) if rng.random() < 0.2 else [])
    if isr and rng.random() < 0.2:
        rng.shuffle(isr)
    live = [r for r in set(assignment) | set(_some(rng, 2)) if rng.random() < 0.7]
    shutting_down = [r for r in set(assignment) | set(_some(rng, 1)) if rng.random() < 0.3]
    return ZkAlgorithmRequest(kind, tuple(assignment), tuple(isr), tuple(live), rng.random() < 0.5,
                              tuple(shutting_down))


@st.composite
def zk_election_requests(draw):
    kind = draw(st.sampled_from(ZK_KINDS))
    return zk_election_request(random.Random(draw(st.integers(0, 2**32 - 1))), kind)


def zk_election_request(rng: random.Random, kind: str) -> ZkElectionRequest:
    replicas = _some(rng, rng.randint(1, 6))
    adding: list[int] = []
    removing: list[int] = []
    if kind == "reassign" or rng.random() < 0.2:
        cut = rng.randint(0, len(replicas))
        adding = replicas[:cut] if rng.random() < 0.5 else []
        removing = [r for r in replicas[cut:] if rng.random() < 0.5]
    live = [r for r in set(replicas) | set(_some(rng, 2)) if rng.random() < 0.75]
    shutting_down = [r for r in set(replicas) | set(_some(rng, 1)) if rng.random() < 0.25]
    offline_dir = [r for r in replicas if rng.random() < 0.15]
    isr = [r for r in replicas if rng.random() < 0.6] + (_some(rng, 1) if rng.random() < 0.1 else [])
    if isr and rng.random() < 0.3:
        rng.shuffle(isr)
    current = None
    if kind != "offline" or rng.random() > 0.1:
        state = LeaderRecoveryState.RECOVERING if rng.random() < 0.1 else LeaderRecoveryState.RECOVERED
        current = LeaderAndIsr(rng.choice(replicas + [-1]), rng.randint(0, 9), tuple(isr), state, rng.randint(0, 9))
    return ZkElectionRequest(kind, tuple(replicas), tuple(adding), tuple(removing), tuple(live), tuple(shutting_down),
                             tuple(offline_dir), current, rng.random() < 0.5, rng.random() < 0.7)


ZK_BATCH = settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("version", ZK_RELEASES)
def test_zk_election_algorithms_match_kafka(version):
    kafka = _kafka(version)
    seen: Counter[str] = Counter()

    @ZK_BATCH
    @given(st.lists(zk_algorithm_requests(), min_size=200, max_size=400))
    def check(requests):
        for r, real in zip(requests, map_zk_algorithm(kafka, requests), strict=True):
            mine = _ours(reference_zk_algorithm, r)
            assert mine == real, f"\nKafka {version}\ninput: {r}\nours:  {mine}\nkafka: {real}"
            seen[r.kind, mine[0] is None] += 1
            seen["unclean"] += mine[1]

    check()
    assert all(seen[k, none] > 0 for k in ZK_KINDS for none in (False, True)) and seen["unclean"] > 0, seen


@pytest.mark.parametrize("version", ZK_RELEASES)
def test_zk_elections_match_kafka(version):
    kafka = _kafka(version)
    seen: Counter[str] = Counter()

    @ZK_BATCH
    @given(st.lists(zk_election_requests(), min_size=200, max_size=400))
    def check(requests):
        for r, real in zip(requests, map_zk_election(kafka, requests), strict=True):
            mine = _ours(reference_zk_election, r)
            assert mine == real, f"\nKafka {version}\ninput: {r}\nours:  {mine}\nkafka: {real}"
            seen[r.kind, mine.leader_and_isr is None] += 1
            seen["unclean"] += mine.unclean
            if mine.leader_and_isr is not None:
                seen["recovering"] += mine.leader_and_isr.leader_recovery_state is LeaderRecoveryState.RECOVERING

    check()
    assert all(seen[k, none] > 0 for k in ZK_KINDS for none in (False, True)), seen
    assert seen["unclean"] > 0 and seen["recovering"] > 0, seen


def test_zk_words_exist_only_where_the_zookeeper_controller_does():
    from kcheck.reference.kafka_jars import KafkaBridgeError

    newest = _kafka(NEWEST)
    with pytest.raises(KafkaBridgeError, match="ZooKeeper"):
        map_zk_algorithm(newest, [ZkAlgorithmRequest("preferred", (1,), (1,), (1,))])
