"""Our KIP-848 server-side assignors against real Kafka, bit for bit (marker `kafka`).

Kafka's `UniformAssignor` and `RangeAssignor` (kafka-group-coordinator) run through the bridge
(`kcheck.reference.kafka_group_assignors`, request `G`) beside `reference/assignors/server.py`.
Hypothesis draws batches of group specs Kafka's unit tests never try: homogeneous and heterogeneous
subscriptions, members subscribed to nothing, uneven and zero partition counts, current assignments
that are stale (topics no longer subscribed or no longer in the metadata, partitions beyond the count,
two members owning one partition, an inverted target assignment that disagrees with the members'),
static members, member and partition racks, topic ids whose `hashCode`s collide or whose signed order
differs from the unsigned one, members in the coordinator's `HashMap` order or any other, and odd and
large sizes. Each input must give the same assignment, or the same exception class and message.
Request `GH` puts the same inputs into real HashMaps/HashSets, as the coordinator does, to check the
Java hash orders our reference (and `registry.ServerSideAdapter`) reproduce. The release differences
found are pinned on their smallest inputs below.

Default: 4.4.0 only (about 1,500 inputs per assignor). KCHECK_KAFKA_RELEASES="4.0.2,4.1.2,4.4.0"
overrides the list (3.9.1 works too: inputs our reference does not model for it, the 3.x heterogeneous
uniform builder, are left out); about 6,000 inputs per assignor on 4.4.0, 4.0.2 and 4.1.2, huge groups and
the 4.0.0/4.0.1 boundary run under `-m slow`. Skipped only when `java`, `javac` or `mvn` is missing.
"""

from __future__ import annotations

import atexit
import dataclasses
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES, require_jdk
from kcheck.model import PartitionInfo, Subscription, TopicPartition
from kcheck.reference.assignors import server
from kcheck.reference.assignors.registry import ServerSideAdapter, topic_id_for
from kcheck.reference.assignors.server import (
    GroupSpec,
    MemberSubscriptionSpec,
    SubscribedTopicDescriber,
    SubscriptionType,
    hash_map_order,
    hash_set_order,
    tree_map_order,
)
from kcheck.reference.assignors.uuid import Uuid
from kcheck.reference.kafka_bridge import JavaException, KafkaBridge
from kcheck.reference.kafka_group_assignors import GROUP_ASSIGNOR_CLASSES, kafka_group_assign, map_kafka_group_assign

pytestmark = pytest.mark.kafka

_env = ENV_RELEASES
NEWEST = "4.4.0"
RELEASES = _env or [NEWEST]
OTHER_RELEASES = [] if _env else ["4.0.2", "4.1.2"]
VERSIONS = [*RELEASES, *(pytest.param(v, marks=pytest.mark.slow) for v in OTHER_RELEASES)]
ASSIGNORS = ["uniform", "server-range"]

BATCH = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
# Batches of 100-200 group specs per assignor: the default run's share, and the `slow` twin's (every release)
DEFAULT_BATCHES = 10
DEEP_BATCHES = 40


# HotSpot throws a hot method's implicit exceptions (array index out of bounds, null pointer) preallocated,
# message null, once it has compiled the method (OmitStackTraceInFastThrow): after some thousand such inputs
# Kafka's messages would turn null. So this module's JVMs keep them; one per release, closed at exit.
JAVA_OPTIONS = ("-XX:+UseSerialGC", "-XX:-OmitStackTraceInFastThrow")
_bridges: dict[str, KafkaBridge] = {}


def _kafka(version: str) -> KafkaBridge:
    require_jdk()
    bridge = _bridges.get(version)
    if bridge is None:
        bridge = _bridges[version] = KafkaBridge(version, java_options=JAVA_OPTIONS)
        atexit.register(bridge.close)
    return bridge.start()  # a resolve or compile failure raises: loud, never a skip


# --- our reference, answering as the bridge does --------------------------------------------


def reference_assignor(name: str, version: str = NEWEST):
    """Our assignor as it mirrors `version` (the range assignor is the same in every 4.x)."""
    return server.UniformAssignor(kafka_version=version) if name == "uniform" else server.RangeAssignor()


def java_name(e: Exception) -> str:
    """The Java class our reference's exception stands for (its `java_class`, else by Python type)."""
    java = getattr(type(e), "java_class", None)
    if java:
        return java
    if isinstance(e, ValueError):
        return "java.lang.IllegalArgumentException"
    return type(e).__name__  # no Java counterpart: never equal to Kafka's answer


def ours(assignor, spec: GroupSpec, describer: SubscribedTopicDescriber):
    try:
        return assignor.assign(spec, describer)
    except Exception as e:  # noqa: BLE001 - compared with Kafka's exception
        return java_name(e), str(e)


def theirs(answer):
    return (answer.class_name, answer.message) if isinstance(answer, JavaException) else answer


def show(spec: GroupSpec, describer: SubscribedTopicDescriber) -> str:
    lines = [f"  type={spec.subscription_type.value if spec.subscription_type else None} "
             f"partitions={ {str(t): n for t, n in describer.partitions.items()} }"]
    for m, s in spec.members.items():
        lines.append(f"  {m!r}: topics={[str(t) for t in s.subscribed_topic_ids]} instance={s.instance_id!r} "
                     f"assignment={ {str(t): ps for t, ps in s.assignment.items()} }")
    own = {t: sorted(ps) for t, ps in (spec.inverted_assignment or {}).items()}
    lines.append(f"  inverted={ {str(t): ps for t, ps in own.items()} }")
    return "\n".join(lines)


def unmodelled(answer) -> bool:
    """Our reference says it does not model this release's code for the input (3.x's heterogeneous builder)."""
    return isinstance(answer, tuple) and answer[0] == "NotImplementedError"


def compare(assignor: str, version: str, problems) -> list[str]:
    """Every input where our reference and Kafka differ, described (empty when all agree)."""
    ref = reference_assignor(assignor, version)
    kafka = map_kafka_group_assign(_kafka(version), GROUP_ASSIGNOR_CLASSES[assignor], problems)
    out = []
    for (spec, describer), real in zip(problems, kafka, strict=True):
        mine, real = ours(ref, spec, describer), theirs(real)
        if mine != real and not unmodelled(mine):
            out.append(f"\ninput:\n{show(spec, describer)}\nours:  {mine}\nkafka: {real}")
    return out


# --- random inputs -------------------------------------------------------------------------------

MEMBER_POOL = ["m0", "m1", "m2", "m10", "M1", "a", "b", "", " ", "member-\u00e9", "\u4e2d", "\U0001F600", "Aa",
               "BB", "consumer-1-9f3c", "consumer-1-0a1b", "z"]  # "Aa"/"BB": equal String.hashCode
RACK_POOL = ["r0", "r1", "r2", "", "rack-\u00e9", None]


def _uuid(rng: random.Random, mode: str, taken: list[Uuid]) -> Uuid:
    if mode == "small" or (mode == "mixed" and rng.random() < 0.3):
        return Uuid(rng.randint(-3, 3), rng.randint(-3, 3))
    if taken and (mode == "collide" or (mode == "mixed" and rng.random() < 0.3)):
        # Equal msb ^ lsb, so equal Uuid.hashCode: HashSet order falls back on insertion order.
        base, d = rng.choice(taken), rng.getrandbits(64) - 2**63
        return Uuid(base.most_significant_bits ^ d, base.least_significant_bits ^ d)
    return Uuid.of_unsigned(rng.getrandbits(64), rng.getrandbits(64))


def _partition_count(rng: random.Random, large: bool, huge: bool = False) -> int:
    if huge:
        return rng.randint(10, 500)
    r = rng.random()
    if large and r < 0.3:
        return rng.randint(50, 400)
    if r < 0.15:
        return 0
    if r < 0.35:
        return 1
    if r < 0.85:
        return rng.randint(2, 8)
    return rng.randint(9, 40)


def _ordered(rng: random.Random, items, how: str) -> tuple:
    items = list(items)
    if how == "hash":
        return hash_set_order(items)
    if how == "shuffled":
        rng.shuffle(items)
        return tuple(items)
    return tuple(sorted(items))


def random_problem(rng: random.Random, huge: bool = False) -> tuple[GroupSpec, SubscribedTopicDescriber]:
    """One group spec and describer, every detail from `rng` (so a batch is one Hypothesis draw per input).
    `huge`: hundreds of members and thousands of partitions."""
    large = huge or rng.random() < 0.05
    if huge:
        n_topics = rng.randint(5, 50)
    elif large and rng.random() < 0.3:
        n_topics = rng.randint(20, 60)
    else:
        n_topics = 0 if rng.random() < 0.04 else rng.choice([1, 1, 2, 2, 2, 3, 3, 3, 4, 5, 7])
    id_mode = rng.choice(["random", "random", "small", "collide", "mixed"])
    topics: list[Uuid] = []
    for _ in range(4 * n_topics):  # small ids run out, and at most 4 topics share a hashCode
        t = _uuid(rng, id_mode, topics)
        if t not in topics and sum(u.java_hash_code() == t.java_hash_code() for u in topics) < 4:
            topics.append(t)
        if len(topics) == n_topics:
            break
    counts = {t: _partition_count(rng, large, huge) for t in topics}
    unknown = [_uuid(rng, "random", topics) for _ in range(rng.choice([0, 0, 0, 1, 2]))]  # not in the metadata
    racks: dict[Uuid, dict[int, frozenset[str]]] = {}
    if rng.random() < 0.3:
        for t, n in counts.items():
            racks[t] = {p: frozenset(rng.sample(["r0", "r1", "r2", "", "\u00e9"], rng.randint(0, 3)))
                        for p in range(n)}

    if large:
        n_members = rng.randint(200, 1000) if huge else rng.randint(30, 150)
    else:
        n_members = 0 if rng.random() < 0.03 else rng.choice([1, 1, 2, 2, 3, 3, 3, 4, 4, 5, 6, 8, 11])
    ids: list[str] = []
    while len(ids) < n_members:  # terminates: the numbered ids are plenty
        m = rng.choice(MEMBER_POOL) if rng.random() < 0.4 else f"member-{rng.randrange(10_000)}"
        if m not in ids:
            ids.append(m)

    # Subscriptions. Unknown topics only now and then: they make the whole assignment throw.
    pool = topics + (unknown if rng.random() < 0.15 else [])
    sub_mode = rng.choice(["homogeneous"] * 4 + ["heterogeneous"] * 4 + ["mostly-same"] * 3 + ["empty"])
    common = rng.sample(pool, rng.randint(0 if rng.random() < 0.1 else min(1, len(pool)), len(pool)))
    subs: dict[str, list[Uuid]] = {}
    for i, m in enumerate(ids):
        if sub_mode == "homogeneous":
            s = list(common)
        elif sub_mode == "empty":
            s = []
        elif sub_mode == "mostly-same" and i % 4 != 3:
            s = list(common)
        else:
            s = rng.sample(pool, rng.randint(0, len(pool))) if rng.random() < 0.85 else []
        rng.shuffle(s)
        subs[m] = s

    # Current assignments: an earlier assignment (over the topics then subscribed), then made stale.
    assignment: dict[str, dict[Uuid, list[int]]] = {m: {} for m in ids}
    prev_mode = rng.choice(["none", "valid", "valid", "stale", "stale"])
    if prev_mode != "none" and ids:
        fill = rng.random()
        stale = prev_mode == "stale"
        previous_topics = topics + (unknown if stale and rng.random() < 0.5 else [])
        for t in previous_topics:
            owners = [m for m in ids if t in subs[m]] or ids
            n = counts.get(t, rng.randint(1, 5))
            extra = rng.choice([1, 3]) if stale and rng.random() < 0.1 else 0  # partitions beyond today's count
            for p in range(n + extra):
                if rng.random() < fill:
                    who = rng.choice(ids if stale and rng.random() < 0.2 else owners)
                    assignment[who].setdefault(t, []).append(p)
                    if stale and rng.random() < 0.05:  # two members claim it
                        assignment[rng.choice(ids)].setdefault(t, []).append(p)
        if stale and rng.random() < 0.03:
            who, t = rng.choice(ids), rng.choice(topics) if topics else None
            if t is not None:
                assignment[who].setdefault(t, []).append(-1)
    order = rng.choice(["sorted", "hash", "shuffled"])
    members = {}
    for m in ids:
        by_topic = {t: _ordered(rng, ps, order) for t, ps in assignment[m].items()}
        if rng.random() < 0.5:
            by_topic = hash_map_order(by_topic)
        instance = None
        if rng.random() < 0.2:
            instance = rng.choice(["i0", "i1", "i2", "", "\u00e9", m])
        members[m] = MemberSubscriptionSpec(tuple(subs[m]), rng.choice(RACK_POOL), instance, by_topic)

    member_order = rng.choice(["hash", "hash", "tree", "given"])
    if member_order == "hash":
        members = hash_map_order(members)  # the coordinator's HashMap of member ids
    elif member_order == "tree":
        members = tree_map_order(members)

    subscription_type = None  # what ModernGroup computes
    if rng.random() < 0.05:
        subscription_type = rng.choice(list(SubscriptionType))
    inverted = None  # the members' own assignments
    r = rng.random()
    if r < 0.05:
        inverted = {}
    elif r < 0.12 and topics:
        # A removed member's partitions are still in the target assignment.
        inverted = {}
        for m, spec in members.items():
            for t, ps in spec.assignment.items():
                for p in ps:
                    inverted.setdefault(t, {})[p] = m
        for _ in range(rng.randint(1, 4)):
            t = rng.choice(topics)
            if counts[t]:
                inverted.setdefault(t, {})[rng.randrange(counts[t])] = "gone"
    spec = GroupSpec(members, subscription_type, inverted)
    describer = SubscribedTopicDescriber(counts, racks)
    return spec, describer


@st.composite
def problem_batches(draw, size=(100, 200)):
    seeds = draw(st.lists(st.integers(0, 2**64 - 1), min_size=size[0], max_size=size[1]))
    return [random_problem(random.Random(seed)) for seed in seeds]


# --- the differential tests --------------------------------------------------------------------


def check_release(version: str, assignor: str, batches: int) -> None:
    _kafka(version)

    @settings(BATCH, max_examples=batches)
    @given(problem_batches())
    def check(problems):
        differences = compare(assignor, version, problems)
        assert not differences, f"{len(differences)} of {len(problems)} differ; first:{differences[0]}"

    check()


@pytest.mark.parametrize("assignor", ASSIGNORS)
@pytest.mark.parametrize("version", RELEASES)
def test_group_assignor_matches_kafka(version, assignor):
    check_release(version, assignor, DEFAULT_BATCHES)


@pytest.mark.slow
@pytest.mark.parametrize("assignor", ASSIGNORS)
@pytest.mark.parametrize("version", [*RELEASES, *OTHER_RELEASES])
def test_group_assignor_matches_kafka_deep(version, assignor):
    check_release(version, assignor, DEEP_BATCHES)


@pytest.mark.slow
@pytest.mark.parametrize("assignor", ASSIGNORS)
@pytest.mark.parametrize("version", [*RELEASES, *OTHER_RELEASES])
def test_huge_groups_match_kafka(version, assignor):
    """Hundreds of members, up to 50 topics of up to 500 partitions, stale assignments and all."""
    problems = [random_problem(random.Random(seed), huge=True) for seed in range(30)]
    differences = compare(assignor, version, problems)
    assert not differences, f"{len(differences)} of {len(problems)} differ; first:{differences[0]}"


def coordinator_view(spec: GroupSpec) -> GroupSpec:
    """`spec` as the coordinator's collections iterate it: members in a HashMap filled in `spec`'s order
    (TargetAssignmentBuilder), each assignment a HashMap of HashSets (Assignment.fromRecord)."""
    members = {m: dataclasses.replace(s, assignment=hash_map_order({t: hash_set_order(ps)
                                                                     for t, ps in s.assignment.items()}))
               for m, s in spec.members.items()}
    return GroupSpec(hash_map_order(members), spec.subscription_type, spec.inverted_assignment)


@pytest.mark.parametrize("assignor", ASSIGNORS)
@pytest.mark.parametrize("version", VERSIONS)
def test_coordinator_hash_orders_match_ours(version, assignor):
    """Request GH puts the members and assignments into real HashMaps/HashSets, as the coordinator does;
    our `hash_map_order` / `hash_set_order` (what `registry.ServerSideAdapter` feeds) must predict the
    order Kafka then iterates, or the assignments differ."""
    kafka = _kafka(version)
    ref = reference_assignor(assignor, version)

    @settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
    @given(problem_batches())
    def check(problems):
        real = map_kafka_group_assign(kafka, GROUP_ASSIGNOR_CLASSES[assignor], problems, coordinator_collections=True)
        for (spec, describer), answer in zip(problems, real, strict=True):
            mine = ours(ref, coordinator_view(spec), describer)
            assert mine == theirs(answer) or unmodelled(mine), \
                f"\ninput:\n{show(spec, describer)}\nours:  {mine}\nkafka: {theirs(answer)}"

    check()


# --- release differences and facts, each on its smallest input ---------------------------------------

T = Uuid.from_string("T1-A4s3VTwiI5CTbEp6POw")


def two_members_one_partition() -> tuple[GroupSpec, SubscribedTopicDescriber]:
    """A and B (memberIds order) subscribe to T, which has one partition; nobody owns anything."""
    return GroupSpec({"A": MemberSubscriptionSpec((T,)), "B": MemberSubscriptionSpec((T,))}), \
        SubscribedTopicDescriber({T: 1})


def test_uniform_passes_the_extra_slot_on():
    """Since 4.0.1 (KAFKA-18688) a member that owns nothing passes its +1 slot to a later member: B gets T-0;
    up to 4.0.0 the first member kept it (A). Our reference takes `kafka_version`, newest by default."""
    spec, describer = two_members_one_partition()
    (kafka,) = map_kafka_group_assign(_kafka(NEWEST), GROUP_ASSIGNOR_CLASSES["uniform"], [(spec, describer)])
    assert kafka == {"A": {}, "B": {T: frozenset({0})}} == server.UniformAssignor().assign(spec, describer)
    assert server.UniformAssignor(kafka_version="4.0.0").assign(spec, describer) == {"A": {T: frozenset({0})},
                                                                                     "B": {}}


@pytest.mark.slow
@pytest.mark.parametrize("version", ["4.0.0", "4.0.1"])
def test_uniform_extra_slot_release_boundary(version):
    spec, describer = two_members_one_partition()
    (kafka,) = map_kafka_group_assign(_kafka(version), GROUP_ASSIGNOR_CLASSES["uniform"], [(spec, describer)])
    owner = "A" if version == "4.0.0" else "B"
    assert kafka == {m: ({T: frozenset({0})} if m == owner else {}) for m in "AB"}
    assert kafka == server.UniformAssignor(kafka_version=version).assign(spec, describer)


def test_uniform_heterogeneous_partition_beyond_count_is_javas_array_index_error():
    """A (subscribed to T, 1 partition) owns T-1; B subscribes to nothing: Kafka indexes an int[1] with 1."""
    spec = GroupSpec({"A": MemberSubscriptionSpec((T,), assignment={T: (1,)}), "B": MemberSubscriptionSpec(())})
    describer = SubscribedTopicDescriber({T: 1})
    (kafka,) = map_kafka_group_assign(_kafka(NEWEST), GROUP_ASSIGNOR_CLASSES["uniform"], [(spec, describer)])
    assert theirs(kafka) == ("java.lang.ArrayIndexOutOfBoundsException", "Index 1 out of bounds for length 1")
    assert ours(server.UniformAssignor(), spec, describer) == theirs(kafka)


@pytest.mark.parametrize("assignor", ASSIGNORS)
@pytest.mark.parametrize("version", VERSIONS)
def test_kafka_ignores_racks(version, assignor):
    """No release's uniform or range assignor reads a member's rack or a partition's racks: the same
    groups with every rack removed get the same answers (our reference ignores them too)."""
    problems = [random_problem(random.Random(seed)) for seed in range(400)]
    problems = [(s, d) for s, d in problems if d.racks or any(m.rack_id for m in s.members.values())]
    bare = [(GroupSpec({m: dataclasses.replace(x, rack_id=None) for m, x in s.members.items()}, s.subscription_type,
                       s.inverted_assignment), SubscribedTopicDescriber(d.partitions)) for s, d in problems]
    kafka = _kafka(version)
    cls = GROUP_ASSIGNOR_CLASSES[assignor]
    assert len(problems) > 100
    assert map_kafka_group_assign(kafka, cls, problems) == map_kafka_group_assign(kafka, cls, bare)


def test_assignor_class_must_be_a_consumer_group_partition_assignor():
    spec, describer = two_members_one_partition()
    kafka = _kafka(NEWEST)
    out = map_kafka_group_assign(kafka, "java.lang.String", [(spec, describer)])
    assert theirs(out[0]) == ("java.lang.IllegalArgumentException", "java.lang.String does not implement "
                              "org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor")
    with pytest.raises(JavaException, match="ClassNotFoundException: no.such.Assignor"):
        kafka_group_assign(kafka, "no.such.Assignor", spec, describer)


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_server_side_adapter_feeds_the_coordinators_orders(assignor):
    """`registry.ServerSideAdapter` (what the engines and the CLI run) builds its GroupSpec in the orders
    the coordinator's HashMaps give: members by id, each current assignment a HashMap of HashSets. Kafka,
    handed the same members in their plain order through GH (real HashMaps), must answer the same.
    Smallest input that needs the HashSet: A owns t-1 then t-0, B nothing, both on t (2 partitions):
    Kafka keeps t-0 on A (HashSet order 0, 1), the owned list's order would have kept t-1."""
    rng = random.Random(5)
    kafka = _kafka(NEWEST)
    cls = GROUP_ASSIGNOR_CLASSES[assignor]
    cases = [({"t": 2}, {"A": (["t"], [("t", 1), ("t", 0)]), "B": (["t"], [])})]
    for _ in range(300):
        topics = {f"t{i}": rng.randint(1, 40) for i in range(rng.randint(1, 4))}
        names = list(topics)
        members = {}
        for m in rng.sample(MEMBER_POOL + [f"c{i}" for i in range(40)], rng.randint(1, 8)):
            members[m] = (rng.sample(names, rng.randint(1, len(names))), [])
        tps = [(t, p) for t, n in topics.items() for p in range(n)]
        rng.shuffle(tps)
        for tp in tps[: rng.randint(0, len(tps))]:
            members[rng.choice(list(members))][1].append(tp)
        cases.append((topics, members))
    problems, ours_out = [], []
    for topics, members in cases:
        ppt = {t: [PartitionInfo(t, p) for p in range(n)] for t, n in topics.items()}
        subs = {m: Subscription(tuple(ts), owned_partitions=tuple(TopicPartition(t, p) for t, p in owned))
                for m, (ts, owned) in members.items()}
        ours_out.append(ServerSideAdapter(reference_assignor(assignor)).assign_partitions(ppt, subs))
        plain = {}
        for m, (ts, owned) in members.items():
            by_topic: dict[Uuid, list[int]] = {}
            for t, p in owned:
                by_topic.setdefault(topic_id_for(t), []).append(p)
            plain[m] = MemberSubscriptionSpec(tuple(map(topic_id_for, ts)), assignment=by_topic)
        problems.append((GroupSpec(plain), SubscribedTopicDescriber({topic_id_for(t): n for t, n in topics.items()})))
    real = map_kafka_group_assign(kafka, cls, problems, coordinator_collections=True)
    for (topics, members), mine, answer in zip(cases, ours_out, real, strict=True):
        assert not isinstance(answer, JavaException), answer
        names = {topic_id_for(t): t for t in topics}
        theirs_out = {m: sorted(TopicPartition(names[u], p) for u, ps in answer.get(m, {}).items() for p in ps)
                      for m in members}
        assert {m: sorted(tps) for m, tps in mine.items()} == theirs_out, (topics, members)
