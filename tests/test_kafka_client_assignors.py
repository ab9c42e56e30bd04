"""Our client-side assignors against Kafka's own classes, bit for bit (marker `kafka`).

Kafka's RangeAssignor, RoundRobinAssignor, StickyAssignor and CooperativeStickyAssignor run through
the bridge (kcheck.reference.kafka_client_assignors) beside reference/assignors/client.py and
sticky.py, on inputs Kafka's unit tests never build: heterogeneous subscriptions, uneven and partial
racks on members and replicas, members with no topics, subscribed topics without metadata or with
zero partitions, partition-number gaps, stale ownership (two members claiming one partition with
equal, different or missing generations; claims of deleted topics and shrunk partitions; V0, V1,
empty and unreadable user data), generations sent or reset, static members (equal instance ids
too), hash-colliding and unicode ids, odd and large sizes, and every member order. Each input must
give the same member -> partitions, lists in Kafka's order, or the same exception class and message.

A Hypothesis example is a batch of inputs (one bridge round trip); the shape of each input is drawn,
its details come from a drawn seed. On a difference the failure message shows the input minimised
by `minimise` (members, topics, partitions, claims and fields dropped while the difference stays).

An exception the JVM throws implicitly (NullPointerException, ArithmeticException, ...) loses its message
once HotSpot has compiled the throwing site (OmitStackTraceInFastThrow): Kafka's "null" then matches any
message of the same class (`same`); before that, our message must be the JVM's helpful-NPE text.

Also here: each member's user data (StickyAssignor's serialised assignment, the cooperative generation) is
Kafka's bytes (`CU`); the leader's view through ConsumerProtocol (`CW`: topics and owned partitions sorted)
agrees with our reference on `wire_view`; and the two StickyAssignor stale-claim findings (README
"Stale-claim findings"), each as a whole group history through Kafka's real classes, with each client's
user data from Kafka's own assignor instance.

Default: Kafka 4.4.0, ~1,500 inputs per assignor. KCHECK_KAFKA_RELEASES="4.1.2,4.4.0" selects
releases; the `slow` twin runs ~6,000 per assignor on them and on the other releases (4.0.2, 4.1.2,
3.9.1). Millions of inputs: bench/bench_kafka_client_assignors.py.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.inputs.group_file import parse_group
from kcheck.model import Broker, PartitionInfo, Subscription, TopicPartition
from kcheck.reference.assignors.registry import ASSIGNORS
from kcheck.reference.assignors.sticky import (
    NO_ASSIGNMENT_NPE,
    encode_cooperative_user_data,
    serialize_topic_partition_assignment,
    serialize_topic_partition_assignment_v0,
)
from kcheck.reference.java import string_compare_key
from kcheck.reference.kafka_bridge import JavaException
from kcheck.reference.kafka_client_assignors import (
    CLIENT_ASSIGNOR_CLASSES,
    kafka_assign,
    map_kafka_assign,
    map_kafka_user_data,
)

pytestmark = pytest.mark.kafka

NAMES = tuple(CLIENT_ASSIGNOR_CLASSES)
NEWEST = "4.4.0"
OTHER_RELEASES = ("4.0.2", "4.1.2", "3.9.1")
_env = ENV_RELEASES
RELEASES = _env or [NEWEST]

BATCH = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)
# Batches of 100-200 inputs per assignor: the default run's share, and the `slow` twin's (every release)
DEFAULT_BATCHES = 10
DEEP_BATCHES = 40




# --- inputs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemberSpec:
    """One member as its client would send it; `data` says what its user data is (see `user_data`)."""

    id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int | None = None  # the generation its client state (user data) carries
    sent_generation: int | None = None  # Subscription.generationId (None: -1, as after a reset)
    data: str = "state"  # "state", "v0", "none", "empty" or "junk:<hex>"
    rack: str | None = None
    instance: str | None = None


@dataclass(frozen=True)
class Problem:
    metadata: tuple[tuple[str, tuple[PartitionInfo, ...]], ...]
    members: tuple[MemberSpec, ...]  # the subscriptions map is filled in this order

    def user_data(self, name: str, m: MemberSpec) -> bytes | None:
        """"state": what this assignor's client sends (StickyAssignor: its last assignment and generation,
        nothing when fresh; CooperativeStickyAssignor: its generation; the others: nothing)."""
        if m.data == "state":
            if name == "sticky":
                return None if m.generation is None else serialize_topic_partition_assignment(m.owned, m.generation)
            if name == "cooperative-sticky":
                return encode_cooperative_user_data(-1 if m.generation is None else m.generation)
            return None
        if m.data == "v0":
            return serialize_topic_partition_assignment_v0(m.owned)
        if m.data == "none":
            return None
        if m.data == "empty":
            return b""
        return bytes.fromhex(m.data.removeprefix("junk:"))

    def inputs(self, name: str) -> tuple[dict[str, list[PartitionInfo]], dict[str, Subscription]]:
        metadata = {t: list(ps) for t, ps in self.metadata}
        subs = {m.id: Subscription(m.topics, self.user_data(name, m), m.owned, m.sent_generation, m.rack, m.instance)
                for m in self.members}
        return metadata, subs


TOPICS = ["t0", "t1", "t2", "t3", "t4", "a", "b", "Aa", "BB", "topic-\u00e9", "\u4e2d", "\U0001F600", "x" * 40]
MEMBERS = ["c0", "c1", "c2", "c3", "c4", "c5", "Aa", "BB", "m-\u00e9", "\u4e2d", "\U0001F600", "consumer-1-" + "f" * 36,
           "", "C0", "c10"]
RACKS = ["r0", "r1", "r2", "r3", "a", "", "\u00e9", "Aa", "BB"]


@dataclass(frozen=True)
class Shape:
    """One input's shape; `seed` fills in the details (names, counts, who owns what)."""

    size: str  # a key of LIMITS
    subscriptions: str  # equal | mixed | random | sparse
    racks: str  # none | brokers | members | both | uneven
    ownership: str  # none | fresh | stale | chaos
    generations: str  # none | same | few | wild
    static: str  # none | some | clash
    gaps: bool  # partition numbers missing from the metadata
    seed: int


# (most topics, members, partitions per topic) by size class, and how often each class is drawn
LIMITS = {"tiny": (3, 4, 4), "small": (5, 7, 8), "medium": (8, 16, 24), "large": (10, 30, 60)}
SIZES = ("tiny",) * 3 + ("small",) * 4 + ("medium",) * 2 + ("large",)
# Each mode's options, simplest first (Hypothesis shrinks the drawn code towards them); repeats weigh.
MODES = (
    ("subscriptions", ("equal", "equal", "mixed", "random", "sparse")),
    ("racks", ("none", "brokers", "members", "both", "both", "uneven")),
    ("ownership", ("none", "fresh", "fresh", "stale", "stale", "chaos")),
    ("generations", ("none", "same", "few", "few", "wild")),
    ("static", ("none", "none", "some", "clash")),
    ("gaps", (False,) * 9 + (True,)),
)
CODES = 1
for _, options in MODES:
    CODES *= len(options)


def shape(size: str, code: int, seed: int) -> Shape:
    """The shape a size class, a mode code in range(CODES) (mixed radix over MODES) and a seed give."""
    modes = {}
    for field, options in MODES:
        code, i = divmod(code, len(options))
        modes[field] = options[i]
    return Shape(size=size, seed=seed, **modes)


def random_shape(rng: random.Random) -> Shape:
    """The same distribution as `problems()` draws, for scripts (bench/bench_kafka_client_assignors.py)."""
    return shape(rng.choice(SIZES), rng.randrange(CODES), rng.getrandbits(32))


def _name(rng: random.Random, pool: Sequence[str]) -> str:
    if rng.random() < 0.85:
        return rng.choice(pool)
    return "".join(rng.choice("abAB09-\u00e9\u4e2d") for _ in range(rng.randint(1, 5)))


def problem(shape: Shape) -> Problem:
    rng = random.Random(shape.seed)
    n_topics, n_members, max_partitions = (rng.randint(0, lim) for lim in LIMITS[shape.size])
    if n_members == 0 and rng.random() < 0.8:  # a group without members: about 1 input in 25
        n_members = 1
    # topics: partition counts (some zero), some subscribed names never in the metadata
    names: list[str] = []
    while len(names) < n_topics:
        t = _name(rng, TOPICS)
        if t not in names:
            names.append(t)
    known = [t for t in names if rng.random() < 0.92]
    # brokers and their racks
    n_brokers = rng.randint(1, 8)
    broker_racks: list[str | None]
    if shape.racks in ("brokers", "both"):
        pool = rng.sample(RACKS[:5], rng.randint(1, 4))
        broker_racks = [pool[i % len(pool)] for i in range(n_brokers)]
    elif shape.racks == "uneven":
        pool = [*rng.sample(RACKS, rng.randint(1, 5)), None]
        weights = [rng.random() ** 3 + 0.01 for _ in pool]
        broker_racks = rng.choices(pool, weights, k=n_brokers)
    else:
        broker_racks = [None] * n_brokers
    brokers = [Broker(i, r) for i, r in enumerate(broker_racks)]
    metadata = []
    common_count = rng.randint(1, max(1, max_partitions)) if rng.random() < 0.3 else None  # co-partitioned topics
    for t in known:
        n = common_count or (rng.randint(0, max_partitions) if rng.random() < 0.9 else 0)
        ids = sorted(rng.sample(range(n + 3), n)) if shape.gaps and n else list(range(n))
        rng.shuffle(ids)  # Cluster.partitionsForTopic's order is the assignors' to sort
        infos = []
        for p in ids:
            rf = rng.randint(0, min(3, n_brokers)) if rng.random() < 0.05 else rng.randint(1, min(3, n_brokers))
            replicas = tuple(rng.sample(brokers, rf))
            leader = replicas[0] if replicas and rng.random() < 0.9 else None
            infos.append(PartitionInfo(t, p, leader, replicas))
        if infos or rng.random() < 0.5:  # a topic with no partitions: listed empty, or absent
            metadata.append((t, tuple(infos)))
    all_tps = [TopicPartition(t, p.partition) for t, ps in metadata for p in ps]
    # members
    ids: list[str] = []
    while len(ids) < n_members:
        m = _name(rng, MEMBERS)
        if m not in ids:
            ids.append(m)
    common = rng.sample(names, rng.randint(min(1, len(names)), len(names)))
    member_racks = [r for r in broker_racks if r is not None] or ["r0"]
    members = []
    for m in ids:
        if shape.subscriptions == "equal" or (shape.subscriptions == "mixed" and rng.random() < 0.6):
            topics = rng.sample(common, len(common))  # the same set, each in its own order
        elif shape.subscriptions == "sparse" and rng.random() < 0.4:
            topics = []
        else:
            topics = rng.sample(names, rng.randint(0, len(names)))
        if topics and rng.random() < 0.03:
            topics.append(rng.choice(topics))  # a duplicate: the assignors take a List
        rack = None
        if shape.racks in ("members", "both", "uneven") and rng.random() < 0.85:
            rack = rng.choice(member_racks) if rng.random() < 0.8 else rng.choice(RACKS)
        instance = None
        if shape.static == "some" and rng.random() < 0.5:
            instance = f"i-{m}"
        elif shape.static == "clash" and rng.random() < 0.6:
            instance = rng.choice(["i0", "i1", "Aa", "BB", f"i-{m}"])
        members.append(MemberSpec(m, tuple(topics), rack=rack, instance=instance))
    members = _own(rng, shape, members, all_tps, names)
    return Problem(tuple(metadata), tuple(members))


def _generation(rng: random.Random, shape: Shape) -> int | None:
    if shape.generations == "none":
        return None
    if shape.generations == "same":
        return 3
    if shape.generations == "few":
        return rng.choice([None, 1, 2, 3, 3, 4])
    return rng.choice([None, -1, 0, 1, 2, 5, 2**31 - 1, -(2**31), rng.randint(-5, 100)])


def _own(rng: random.Random, shape: Shape, members: list[MemberSpec], all_tps: list[TopicPartition],
         names: list[str]) -> list[MemberSpec]:
    if not members or shape.ownership == "none":
        return members
    owned: dict[str, list[TopicPartition]] = {m.id: [] for m in members}
    subscribers = {tp: [m.id for m in members if tp.topic in m.topics] for tp in all_tps}
    for tp in all_tps:
        if rng.random() < (0.3 if shape.ownership == "fresh" else 0.75):
            continue
        # fresh: a subscriber owns it; otherwise anyone may, and sometimes two claim it
        if shape.ownership == "fresh" and subscribers[tp]:
            owned[rng.choice(subscribers[tp])].append(tp)
            continue
        for m in rng.sample(list(owned), min(len(owned), 2 if rng.random() < 0.3 else 1)):
            owned[m].append(tp)
    if shape.ownership in ("stale", "chaos"):
        for m in owned:  # claims of a deleted topic or of partitions beyond a shrunk topic
            if rng.random() < 0.2:
                owned[m].append(TopicPartition(rng.choice([*names, "gone"]), rng.randint(0, 10)))
    out = []
    for m in members:
        tps = owned[m.id]
        rng.shuffle(tps)
        if tps and shape.ownership == "chaos" and rng.random() < 0.1:
            tps.append(tps[0])  # listed twice
        generation = _generation(rng, shape)
        if generation is None and tps and shape.generations != "none" and rng.random() < 0.7:
            generation = 1
        roll = rng.random()
        sent = generation if roll < 0.6 else None if roll < 0.85 else _generation(rng, shape)
        data = "state"
        if shape.ownership == "chaos" or rng.random() < 0.05:
            data = rng.choice(["state", "v0", "none", "empty", "junk:" + rng.randbytes(rng.randint(1, 9)).hex()])
        out.append(replace(m, owned=tuple(tps), generation=generation, sent_generation=sent, data=data))
    return out


def problems() -> st.SearchStrategy[Problem]:
    return st.builds(lambda *a: problem(shape(*a)), st.sampled_from(SIZES), st.integers(0, CODES - 1),
                     st.integers(0, 2**32 - 1))


# --- comparing ------------------------------------------------------------------------------------

NOT_MODELLED = "not modelled"  # the reference refuses (a treeified JavaHashMap bucket): no comparison


def exception_key(e: BaseException) -> tuple[str, str]:
    """Our reference's exception as Kafka's (simple class name, message)."""
    if isinstance(e, ZeroDivisionError):
        return "ArithmeticException", "/ by zero"
    return type(e).__name__, str(e) or "null"  # the harness writes a null message as "null"


def ours_on(name: str, metadata, subs):
    """Our reference's answer to what Kafka is given, an exception as (class, message), or NOT_MODELLED."""
    try:
        return ASSIGNORS[name].factory().assign(metadata, subs)
    except NotImplementedError:
        return NOT_MODELLED
    except Exception as e:  # noqa: BLE001 - compared with Kafka's exception
        return exception_key(e)


def ours(name: str, p: Problem, version: str = NEWEST):
    """`version`: every release compared so far (3.9.1 to 4.4.0) agrees with the one reference."""
    return ours_on(name, *p.inputs(name))


def theirs(answer):
    return (answer.simple_name, answer.message) if isinstance(answer, JavaException) else answer


def kafka_answers(kafka, name: str, ps: Sequence[Problem]) -> list:
    return [theirs(a) for a in map_kafka_assign(kafka, CLIENT_ASSIGNOR_CLASSES[name], [p.inputs(name) for p in ps])]


# Exceptions the JVM throws implicitly: once a throwing site is JIT-compiled, HotSpot may throw a preallocated
# one without message (-XX:+OmitStackTraceInFastThrow, the default), so Kafka's message is then "null".
FAST_THROW = {"NullPointerException", "ArithmeticException", "ArrayIndexOutOfBoundsException", "ClassCastException",
              "ArrayStoreException"}


def same(mine, real) -> bool:
    if mine == real:
        return True
    return (isinstance(mine, tuple) and isinstance(real, tuple) and mine[0] == real[0] and mine[0] in FAST_THROW
            and real[1] == "null")


def kind(answer) -> str:
    """What sort of answer: an exception's class, or a result."""
    return answer[0] if isinstance(answer, tuple) else "result"


def differs(kafka, name: str, version: str, like: tuple[str, str] | None = None) -> Callable[[Problem], bool]:
    """Whether an input still differs (`like`: in the same way, as (kind of ours, kind of Kafka's))."""
    def check(p: Problem) -> bool:
        mine = ours(name, p, version)
        if mine == NOT_MODELLED:
            return False
        real = kafka_answers(kafka, name, [p])[0]
        return not same(mine, real) and (like is None or (kind(mine), kind(real)) == like)

    return check


def _smaller(p: Problem):
    """Candidate inputs one step smaller than p, biggest cuts first."""
    ms = p.members
    for i in range(len(ms)):
        yield replace(p, members=ms[:i] + ms[i + 1:])
    for i in range(len(p.metadata)):
        yield replace(p, metadata=p.metadata[:i] + p.metadata[i + 1:])
    for i, (t, ps) in enumerate(p.metadata):  # the highest partition, so no gap opens
        if ps:
            top = max(range(len(ps)), key=lambda j: ps[j].partition)
            yield replace(p, metadata=p.metadata[:i] + ((t, ps[:top] + ps[top + 1:]),) + p.metadata[i + 1:])
    for i, m in enumerate(ms):
        def put(m2: MemberSpec, i: int = i) -> Problem:
            return replace(p, members=ms[:i] + (m2,) + ms[i + 1:])
        for j in range(len(m.owned)):
            yield put(replace(m, owned=m.owned[:j] + m.owned[j + 1:]))
        for j in range(len(m.topics)):
            yield put(replace(m, topics=m.topics[:j] + m.topics[j + 1:]))
        for field, plain in (("rack", None), ("instance", None), ("sent_generation", None), ("generation", None),
                             ("data", "state")):
            if getattr(m, field) != plain:
                yield put(replace(m, **{field: plain}))
    for i, (t, ps) in enumerate(p.metadata):
        plain = tuple(PartitionInfo(t, x.partition, None, ()) for x in ps)
        if ps != plain:
            yield replace(p, metadata=p.metadata[:i] + ((t, plain),) + p.metadata[i + 1:])


def minimise(p: Problem, fails: Callable[[Problem], bool], budget: int = 3000) -> Problem:
    """Greedy: take the first smaller input that still fails, until none does."""
    progress = True
    while progress and budget > 0:
        progress = False
        for q in _smaller(p):
            budget -= 1
            if fails(q):
                p, progress = q, True
                break
            if budget <= 0:
                break
    return p


def show(name: str, p: Problem, version: str, kafka) -> str:
    metadata, subs = p.inputs(name)
    return (f"\n{name} on Kafka {version}\nmetadata: {metadata}\nsubscriptions: {subs}\n"
            f"ours:  {ours(name, p, version)}\nkafka: {kafka_answers(kafka, name, [p])[0]}")


def assert_same(kafka, name: str, version: str, ps: Sequence[Problem]) -> int:
    """Compares every input; returns how many were compared (not refused by the reference)."""
    compared = 0
    for p, real in zip(ps, kafka_answers(kafka, name, ps), strict=True):
        mine = ours(name, p, version)
        if mine == NOT_MODELLED:
            continue
        compared += 1
        if not same(mine, real):
            small = minimise(p, differs(kafka, name, version, (kind(mine), kind(real))))
            raise AssertionError("differs from Kafka; smallest input found:" + show(name, small, version, kafka))
    return compared


def check_release(version: str, name: str, examples: int) -> None:
    kafka = _kafka(version)
    compared = []

    @settings(BATCH, max_examples=examples)
    @given(st.lists(problems(), min_size=100, max_size=200))
    def check(ps):
        compared.append(assert_same(kafka, name, version, ps))

    check()
    assert sum(compared) >= 50 * examples  # the reference declined only a few inputs


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("version", RELEASES)
def test_client_assignor_matches_kafka(version, name):
    check_release(version, name, DEFAULT_BATCHES)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("version", [*RELEASES, *OTHER_RELEASES])
def test_client_assignor_matches_kafka_deep(version, name):
    check_release(version, name, DEEP_BATCHES)



def _partitions(topic: str, numbers: Sequence[int]) -> tuple[str, tuple[PartitionInfo, ...]]:
    return topic, tuple(PartitionInfo(topic, n, None, ()) for n in numbers)


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
@pytest.mark.parametrize("version", RELEASES)
def test_is_balanced_skips_a_partition_the_member_lists_even_when_another_member_lists_it_too(version, name):
    """Found by the million-input bench (our reference threw Kafka's NullPointerException, Kafka answered):
    once c0 and c4 both hold b-2, `isBalanced` records c0 as its owner, yet c4's scan skips it as one of
    its own; our per-topic shortcut compared c4 with c0's size and went on reassigning, into the NPE of a
    previous owner set aside (Aa). Names and orders as drawn: the HashMap order decides which member is
    the recorded owner."""
    metadata = (_partitions("BB", [0]), _partitions("b\u4e2dB", [4, 5, 6, 3, 2, 7, 0, 1]),
                _partitions("b", [3, 1, 0, 2]))
    members = (MemberSpec("c1", ("BB", "b"), (TopicPartition("BB", 5), TopicPartition("b", 3)), 3),
               MemberSpec("Aa", (), (TopicPartition("b\u4e2dB", 3),), 1),
               MemberSpec("c0", ("b", "b\u4e2dB"), (TopicPartition("b", 2),), 3),
               MemberSpec("m-\u00e9", ("b\u4e2dB",)), MemberSpec("c4", ("b",)))
    p = Problem(metadata, members)
    real = kafka_answers(_kafka(version), name, [p])[0]
    assert not isinstance(real, tuple), real  # Kafka answers: no exception
    assert same(ours(name, p, version), real), show(name, p, version, _kafka(version))

# --- the bridge's other requests: user data (CU) and the leader's view of JoinGroup metadata (CW) -----

TOPIC_FAMILY = ["".join(x) for x in itertools.product(("Aa", "BB"), repeat=3)]  # 8 topics, one String.hashCode


@st.composite
def client_states(draw) -> tuple[list[TopicPartition], int | None]:
    """A member's last assignment and generation; colliding topic names exercise HashMap bin order."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    # "\ud800x": a lone surrogate, which Java's UTF-8 encoder (and ours) writes as '?'
    pool = rng.sample([*TOPICS, *TOPIC_FAMILY, "\ud800x", *(f"t{i}" for i in range(30))], rng.randint(1, 40))
    tps = [TopicPartition(rng.choice(pool), rng.randint(0, 40)) for _ in range(draw(st.integers(0, 150)))]
    generation = draw(st.one_of(st.none(), st.integers(0, 5), st.integers(-(2**31), 2**31 - 1)))
    return tps, generation


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
@pytest.mark.parametrize("version", RELEASES)
def test_user_data_matches_kafka(version, name):
    """What a member sends (subscriptionUserData after onAssignment) is Kafka's bytes: StickyAssignor groups its
    partitions by topic with computeIfAbsent, so colliding topics come out newest first."""
    kafka = _kafka(version)
    make = ASSIGNORS[name].factory

    @settings(BATCH, max_examples=10)
    @given(st.lists(client_states(), min_size=50, max_size=100))
    def check(states):
        real = map_kafka_user_data(kafka, CLIENT_ASSIGNOR_CLASSES[name], states)
        for (tps, generation), theirs_ in zip(states, real, strict=True):
            client = make()
            if generation is not None:
                client.on_assignment(tps, generation)
            try:
                mine = client.subscription_user_data()
            except NotImplementedError:  # 8 colliding topics in a 64+ table: a tree bin, not modelled
                continue
            assert mine == theirs_, (tps, generation)

    check()


def wire_view(s: Subscription) -> Subscription:
    """The Subscription the leader decodes (ConsumerProtocol): topics and owned partitions sorted (String order),
    an empty rack absent, a negative generation -1."""
    return Subscription(
        tuple(sorted(s.topics, key=string_compare_key)), s.user_data,
        tuple(sorted(s.owned_partitions, key=lambda tp: (string_compare_key(tp.topic), tp.partition))),
        None if s.generation_id is None or s.generation_id < 0 else s.generation_id,
        s.rack_id or None, s.group_instance_id)


@pytest.mark.parametrize("version", RELEASES)
def test_leader_view_through_consumer_protocol(version):
    """`wire=True` runs each subscription through ConsumerProtocol first: our reference on `wire_view` agrees."""
    kafka = _kafka(version)

    @settings(BATCH, max_examples=5)
    @given(st.lists(problems(), min_size=100, max_size=150))
    def check(ps):
        for name in ("range", "cooperative-sticky"):
            inputs = [p.inputs(name) for p in ps]
            real = map_kafka_assign(kafka, CLIENT_ASSIGNOR_CLASSES[name], inputs, wire=True)
            for (metadata, subs), r in zip(inputs, real, strict=True):
                view = {m: wire_view(s) for m, s in subs.items()}
                mine = ours_on(name, metadata, view)
                assert mine == NOT_MODELLED or same(mine, theirs(r)), (name, metadata, subs)

    check()


def test_any_assignor_class_and_its_refusals():
    """A class is loaded by name from the bridge's classpath; a missing or wrong one is Kafka's JVM saying so."""
    kafka = _kafka(NEWEST)
    metadata = {"t": [PartitionInfo("t", 0, None, (Broker(0),))]}
    subs = {"c": Subscription(("t",))}
    assert kafka_assign(kafka, CLIENT_ASSIGNOR_CLASSES["range"], metadata, subs) == {"c": [TopicPartition("t", 0)]}
    with pytest.raises(JavaException) as missing:
        kafka_assign(kafka, "org.example.NoSuchAssignor", metadata, subs)
    assert missing.value.simple_name == "ClassNotFoundException"
    with pytest.raises(JavaException) as wrong:
        kafka_assign(kafka, "java.lang.String", metadata, subs)
    assert (wrong.value.simple_name, wrong.value.message) == (
        "IllegalArgumentException", "java.lang.String is not a ConsumerPartitionAssignor")
    # RoundRobin over no members: Kafka's CircularIterator refuses, and so does our reference
    (real,) = map_kafka_assign(kafka, CLIENT_ASSIGNOR_CLASSES["roundrobin"], [(metadata, {})])
    assert theirs(real) == ours("roundrobin", Problem(tuple((t, tuple(ps)) for t, ps in metadata.items()), ()))


# --- the StickyAssignor stale-claim findings (README "Stale-claim findings"), through Kafka's classes ------

FINDING_RELEASES = [*RELEASES, *(pytest.param(v, marks=pytest.mark.slow) for v in ("4.1.2", "4.0.2", "3.9.1")
                                 if v not in RELEASES)]


@dataclass
class Client:
    """What a consumer keeps between rebalances: its ConsumerCoordinator's generation and owned partitions,
    and its assignor's memory (the last onAssignment)."""

    topics: tuple[str, ...]
    generation: int = -1  # -1: none yet, or reset after its session timed out
    owned: tuple[TopicPartition, ...] = ()
    last: tuple[tuple[TopicPartition, ...], int] | None = None  # (partitions, generation) of onAssignment


def join(kafka, name: str, clients: dict[str, Client]) -> dict[str, Subscription]:
    """Each client's JoinGroup subscription as ConsumerCoordinator.metadata() builds it, user data from Kafka's own
    assignor instance after the client's last onAssignment (`CU`)."""
    subs = {}
    for m, c in clients.items():
        partitions, generation = c.last if c.last else ((), None)
        (data,) = map_kafka_user_data(kafka, CLIENT_ASSIGNOR_CLASSES[name], [(partitions, generation)], c.topics)
        assert not isinstance(data, JavaException)
        subs[m] = Subscription(c.topics, data, c.owned, c.generation)
    return subs


def rebalance(kafka, name: str, metadata, clients: dict[str, Client], generation: int):
    """One rebalance: members revoke as onJoinPrepare does (eager: everything; cooperative: dropped topics; a
    reset member loses everything), the leader decodes the JoinGroup metadata (`wire=True`) and runs Kafka's
    assignor; our reference must give the same. Returns Kafka's answer (an assignment or its exception)."""
    for c in clients.values():
        if c.generation < 0 or name != "cooperative-sticky":
            c.owned = ()
        else:
            c.owned = tuple(tp for tp in c.owned if tp.topic in c.topics)
    subs = join(kafka, name, clients)
    (real,) = map_kafka_assign(kafka, CLIENT_ASSIGNOR_CLASSES[name], [(metadata, subs)], wire=True)
    real = theirs(real)
    assert same(ours_on(name, metadata, {m: wire_view(s) for m, s in subs.items()}), real)
    if isinstance(real, dict):
        for m, c in clients.items():
            c.generation, c.owned, c.last = generation, tuple(real[m]), (tuple(real[m]), generation)
    return real


def _metadata(**counts: int) -> dict[str, list[PartitionInfo]]:
    return {t: [PartitionInfo(t, i, Broker(0), (Broker(0),)) for i in range(n)] for t, n in counts.items()}


def _story(kafka, name: str, metadata, first: dict[str, tuple[str, ...]], rejoin_topics: tuple[str, ...],
           newcomer_topics: tuple[str, ...]):
    """c1 and c2 join (generation 1); c1's session times out and c2 rebalances alone (generation 2); c1 rejoins
    with `rejoin_topics` (its generation reset) as c3 joins (generation 3). Returns the three answers."""
    c1, c2 = Client(first["c1"]), Client(first["c2"])
    r1 = rebalance(kafka, name, metadata, {"c1": c1, "c2": c2}, 1)
    r2 = rebalance(kafka, name, metadata, {"c2": c2}, 2)
    c1.generation, c1.topics = -1, rejoin_topics  # ConsumerCoordinator resets it; its assignor remembers
    r3 = rebalance(kafka, name, metadata, {"c2": c2, "c1": c1, "c3": Client(newcomer_topics)}, 3)
    return r1, r2, r3


@pytest.mark.parametrize("version", FINDING_RELEASES)
def test_stale_claim_is_kafkas_behaviour(version):
    """assignment.stale-claim, through Kafka's real StickyAssignor with its own user data at every step: t1 (1),
    t2 (1); c1 on [t1] and c2 on [t1, t2] get one partition each; c1 times out and c2 takes both at generation
    2; c1 rejoins on [t2] (its StickyAssignor still sends t1-0 at generation 1) as c3 joins on [t1]: Kafka gives
    c1 t1-0, a partition of a topic it no longer subscribes to."""
    kafka = _kafka(version)
    t1_0, t2_0 = TopicPartition("t1", 0), TopicPartition("t2", 0)
    metadata = _metadata(t1=1, t2=1)
    r1, r2, r3 = _story(kafka, "sticky", metadata, {"c1": ("t1",), "c2": ("t1", "t2")}, ("t2",), ("t1",))
    assert r1 == {"c1": [t1_0], "c2": [t2_0]}
    assert r2 == {"c2": [t2_0, t1_0]}
    assert r3 == {"c1": [t1_0], "c2": [t2_0], "c3": []}
    # The README's replay file gives Kafka the same answer (group_format: owned and generation as sent).
    replay = parse_group(json.dumps({"topics": {"t1": 1, "t2": 1}, "members": {
        "c2": {"topics": ["t1", "t2"], "owned": ["t1-0", "t2-0"], "generation": 2},
        "c1": {"topics": ["t2"], "owned": ["t1-0"], "generation": 1}, "c3": {"topics": ["t1"]}}}), "replay")
    md = {t: list(ps) for t, ps in replay.partitions_per_topic.items()}
    assert kafka_assign(kafka, CLIENT_ASSIGNOR_CLASSES["sticky"], md, replay.subscriptions("sticky")) == r3


@pytest.mark.parametrize("version", FINDING_RELEASES)
def test_stale_claim_npe_is_kafkas_behaviour(version):
    """assignment.stale-claim-npe: t1 (1), t2 (2); c1 and c2 on [t2]; c1 times out; c1 rejoins on [t1] (its user
    data: t2-0 at generation 1), holds all of t1 and is set aside as fixed, as c3 joins on [t2]: Kafka's
    performReassignments asks for the size of c1's assignment, which is gone: NullPointerException."""
    kafka = _kafka(version)
    metadata = _metadata(t1=1, t2=2)
    r1, r2, r3 = _story(kafka, "sticky", metadata, {"c1": ("t2",), "c2": ("t2",)}, ("t1",), ("t2",))
    assert r1 == {"c1": [TopicPartition("t2", 0)], "c2": [TopicPartition("t2", 1)]}
    assert r2 == {"c2": [TopicPartition("t2", 1), TopicPartition("t2", 0)]}
    assert r3[0] == "NullPointerException" and r3[1] in (NO_ASSIGNMENT_NPE, "null")  # "null": JIT fast throw
    replay = parse_group(json.dumps({"topics": {"t1": 1, "t2": 2}, "members": {
        "c2": {"topics": ["t2"], "owned": ["t2-1", "t2-0"], "generation": 2},
        "c1": {"topics": ["t1"], "owned": ["t2-0"], "generation": 1}, "c3": {"topics": ["t2"]}}}), "replay")
    md = {t: list(ps) for t, ps in replay.partitions_per_topic.items()}
    with pytest.raises(JavaException) as npe:
        kafka_assign(kafka, CLIENT_ASSIGNOR_CLASSES["sticky"], md, replay.subscriptions("sticky"))
    assert npe.value.simple_name == "NullPointerException"


@pytest.mark.parametrize("version", FINDING_RELEASES)
def test_cooperative_sticky_cannot_meet_either_finding(version):
    """The same two stories with CooperativeStickyAssignor: the rejoining member's generation was reset, so
    onJoinPrepare gave up its partitions as lost and it claims nothing (its user data carries only a
    generation): every answer is valid. Fed the claims directly, as owned partitions (what the replay files
    do), Kafka's class does hand t1-0 back, and throws the NPE: only ConsumerCoordinator keeps it safe."""
    kafka = _kafka(version)
    t1_0 = TopicPartition("t1", 0)
    stories = [(_metadata(t1=1, t2=1), {"c1": ("t1",), "c2": ("t1", "t2")}, ("t2",), ("t1",)),
               (_metadata(t1=1, t2=2), {"c1": ("t2",), "c2": ("t2",)}, ("t1",), ("t2",))]
    for metadata, first, rejoin_topics, newcomer in stories:
        *_, r3 = _story(kafka, "cooperative-sticky", metadata, first, rejoin_topics, newcomer)
        topics = {"c2": first["c2"], "c1": rejoin_topics, "c3": newcomer}
        assert isinstance(r3, dict) and all(tp.topic in topics[m] for m, tps in r3.items() for tp in tps)
    cls = CLIENT_ASSIGNOR_CLASSES["cooperative-sticky"]
    invalid = {"c2": Subscription(("t1", "t2"), None, (t1_0, TopicPartition("t2", 0)), 2),
               "c1": Subscription(("t2",), None, (t1_0,), 1), "c3": Subscription(("t1",))}
    assert kafka_assign(kafka, cls, _metadata(t1=1, t2=1), invalid)["c1"] == [t1_0]
    npe = {"c2": Subscription(("t2",), None, (TopicPartition("t2", 1), TopicPartition("t2", 0)), 2),
           "c1": Subscription(("t1",), None, (TopicPartition("t2", 0),), 1), "c3": Subscription(("t2",))}
    with pytest.raises(JavaException) as e:
        kafka_assign(kafka, cls, _metadata(t1=1, t2=2), npe)
    assert e.value.simple_name == "NullPointerException"
