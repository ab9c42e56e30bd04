"""Our placement reference against real Kafka, bit for bit (marker `kafka`).

Kafka's own jars run in one JVM per release (kcheck.reference.kafka_bridge). Hypothesis draws
batches of inputs Kafka's unit tests never try: uneven racks (one big rack beside single-broker
ones, weighted rack pools, racks on some brokers only), RF equal to the broker count, odd and large
sizes, unicode rack names, fenced brokers, many specs placed in turn by one striped placer, start
indexes, seeds and start partition ids across their range. Each input must give the same replica
lists in the same order, or the same exception class and message; where releases word a refusal
differently, the expected wording is the release's (`releases.profile(version).striped_refusal`).
A deterministic sweep of small clusters adds every fixed start index.

Default run: AdminUtils on 4.0.2 (the newest release that has it) and the striped placer on 4.4.0;
3.9.1, 4.0.2 and 4.1.2 are `slow`. KCHECK_KAFKA_RELEASES="3.9.1,4.0.2,4.4.0" overrides the list
(AdminUtils runs on the 3.x and 4.0.x ones). Million-input runs: bench/bench_kafka_bridge.py.
Skipped only when `java`, `javac` or `mvn` is missing; a failed download fails loudly.
"""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.model import Broker
from kcheck.reference.java import JavaRandom
from kcheck.reference.kafka_bridge import AssignRequest, JavaException, StripedRequest
from kcheck.reference.placement import assign_replicas_to_brokers
from kcheck.reference.releases import profile
from kcheck.reference.striped import PlacementSpec, StaticCluster, StripedReplicaPlacer

pytestmark = pytest.mark.kafka

_env = ENV_RELEASES
_slow = pytest.mark.slow
# AdminUtils is in kafka-server-common up to 4.0 only (3.9.1 has it too); the striped placer in all.
if _env:
    ADMIN_RELEASES: list = [v for v in _env if v.startswith(("3.", "4.0."))]
    STRIPED_RELEASES: list = list(_env)
else:
    ADMIN_RELEASES = ["4.0.2", pytest.param("3.9.1", marks=_slow)]
    STRIPED_RELEASES = ["4.4.0", *(pytest.param(v, marks=_slow) for v in ("4.1.2", "4.0.2", "3.9.1"))]

BATCH = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))




# --- our reference, answering as the bridge does --------------------------------------------


def _kafka_name(e: Exception) -> tuple[str, str]:
    return type(e).__name__, str(e)


def ours_assign(r: AssignRequest):
    try:
        rnd = None if r.seed is None else JavaRandom(r.seed)
        return assign_replicas_to_brokers(list(r.brokers), r.n_partitions, r.replication_factor,
                                          r.fixed_start_index, r.start_partition_id, rnd)
    except Exception as e:  # noqa: BLE001 - compared with Kafka's exception
        return _kafka_name(e)


def ours_striped(r: StripedRequest):
    placer = StripedReplicaPlacer(JavaRandom(r.seed))
    cluster = StaticCluster(r.brokers)
    try:
        return [placer.place(spec, cluster).replicas() for spec in r.specs]
    except Exception as e:  # noqa: BLE001
        return _kafka_name(e)


def theirs(answer):
    return (answer.simple_name, answer.message) if isinstance(answer, JavaException) else answer


def release(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".")[:3])


def as_release(version: str, mine):
    """Our answer as this release gives it: the reference words refusals as 4.0 does."""
    if not isinstance(mine, tuple):
        return mine
    name, message = mine
    return name, profile(version).striped_refusal(message)


def assert_same(ours, kafka, requests, version="4.0.2"):
    for r, mine, real in zip(requests, ours, kafka, strict=True):
        mine = as_release(version, mine)
        assert mine == theirs(real), f"\nKafka {version}\ninput: {r}\nours:  {mine}\nkafka: {theirs(real)}"


# --- strategies --------------------------------------------------------------------------------

# Each input costs Hypothesis a handful of draws (its shape); the details (ids, rack names, which
# brokers are fenced) come from a drawn seed, so batches of thousands stay cheap and still shrink.
RACK_POOL = ["r0", "r1", "r2", "r10", "R1", "a", "b", "", " ", "rack-\u00e9", "\u4e2d", "\uffff", "\U0001F600",
             "\U00010000", "\ud800", "zz", "Aa", "BB"]  # "Aa"/"BB": equal String.hashCode


def _rack_name(rng):
    if rng.random() < 0.7:
        return rng.choice(RACK_POOL)
    return "".join(rng.choice("abAB09_-\u00e9\u4e2d\U0001F600") for _ in range(rng.randint(0, 4)))


@st.composite
def clusters(draw, striped: bool):
    """Distinct broker ids in a drawn order, with a rack layout and (striped) fenced flags."""
    n = draw(st.one_of(st.integers(1, 12), st.integers(1, 40), st.sampled_from([64, 97, 128, 211])))
    id_mode = draw(st.sampled_from(["dense", "dense", "sparse", "wide"]))
    layout = draw(st.sampled_from(["none", "uneven", "one-per-rack", "few", "mixed", "one-big-rack"]))
    fencing = draw(st.sampled_from(["none", "some", "some", "all-but-one", "all"])) if striped else "none"
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    if id_mode == "dense":
        ids = list(range(n))
    else:
        # Negative ids only for AdminUtils: the striped placer takes a negative broker for "none
        # left" and loops forever on one (Kafka as well as our reference; Kafka never registers one).
        lo = 0 if striped or id_mode == "sparse" else -(2**31)
        hi = 2000 if id_mode == "sparse" else 2**31 - 1
        ids = rng.sample(range(lo, hi + 1), n)
    rng.shuffle(ids)
    if layout == "none":
        racks = [None] * n
    elif layout == "one-per-rack":
        racks = [f"r{i}" for i in range(n)]
        rng.shuffle(racks)
    elif layout == "few":
        k = rng.randint(1, 4)
        racks = [f"rack{rng.randrange(k)}" for _ in range(n)]
    elif layout == "one-big-rack":  # most brokers in one rack, the rest one or two to a rack
        racks = ["big" if rng.random() < 0.7 else f"small{rng.randrange(max(1, n // 3))}" for _ in range(n)]
    else:
        pool = list({_rack_name(rng) for _ in range(rng.randint(1, 6))})
        options = pool + [None] if layout == "mixed" else pool
        weights = [rng.random() ** 3 + 0.01 for _ in options]  # uneven
        racks = rng.choices(options, weights, k=n)
    if fencing == "none":
        fenced = [False] * n
    elif fencing == "all":
        fenced = [True] * n
    elif fencing == "all-but-one":
        keep = rng.randrange(n)
        fenced = [i != keep for i in range(n)]
    else:
        p = rng.random()
        fenced = [rng.random() < p for _ in range(n)]
    return tuple(Broker(i, r, f) for i, r, f in zip(ids, racks, fenced, strict=True))


def _rf(draw, n):
    return draw(st.one_of(st.just(n), st.integers(1, min(n, 5)), st.integers(-1, n + 2), st.integers(1, n)))


@st.composite
def assign_requests(draw):
    brokers = draw(clusters(striped=False))
    n = len(brokers)
    parts = draw(st.one_of(st.integers(1, 3 * n), st.integers(-1, 400), st.sampled_from([997, 1000, 2 * n + 1])))
    rf = _rf(draw, n)
    seeded = draw(st.booleans())
    if seeded:
        fixed = draw(st.sampled_from([-1, -1, -1, -2, -(2**31)]))
        seed = draw(st.one_of(st.integers(-1000, 1000), st.integers(-(2**63), 2**63 - 1)))
    else:
        fixed = draw(st.one_of(st.integers(0, n - 1), st.integers(0, 3 * n + 7)))
        seed = None
    start_pid = draw(st.one_of(st.just(-1), st.integers(0, 3 * n), st.integers(-5, 10_000)))
    return AssignRequest(brokers, parts, rf, fixed, start_pid, seed)


@st.composite
def striped_requests(draw):
    brokers = draw(clusters(striped=True))
    n = len(brokers)
    specs = []
    n_specs = draw(st.one_of(st.integers(1, 3), st.integers(4, 12)))  # one placer places them in turn
    for _ in range(n_specs):
        big = st.sampled_from([n, 997]) if n_specs == 1 else st.just(n)
        parts = draw(st.one_of(st.integers(1, 2 * n + 3), st.integers(-1, 300 // n_specs), big))
        rf = draw(st.one_of(st.just(_rf(draw, n)), st.integers(-3, 3)))
        specs.append(PlacementSpec("t", draw(st.integers(0, 5000)), parts, rf))
    seed = draw(st.one_of(st.integers(-1000, 1000), st.integers(-(2**63), 2**63 - 1)))
    return StripedRequest(brokers, tuple(specs), seed)


# --- AdminUtils.assignReplicasToBrokers (kafka-server-common, <= 4.0) --------------------------


@pytest.mark.parametrize("version", ADMIN_RELEASES)
def test_assign_replicas_to_brokers_matches_kafka(version):
    kafka = _kafka(version)

    @BATCH
    @given(st.lists(assign_requests(), min_size=30, max_size=80))
    def check(requests):
        assert_same([ours_assign(r) for r in requests], kafka.map_assign(requests), requests)

    check()


def small_sweep_assign():
    """Every rack layout of up to 6 brokers over up to 3 racks (as sorted rack sizes), every RF,
    every fixed start index in [0, n] and start partition ids -1, 0, n-1, n."""
    out = []
    for n in range(1, 7):
        layouts = [None] + [sizes for k in range(1, 4) for sizes in itertools.combinations_with_replacement(
            range(1, n + 1), k) if sum(sizes) == n]
        for sizes in layouts:
            racks = [None] * n if sizes is None else [f"r{j}" for j, s in enumerate(sizes) for _ in range(s)]
            brokers = tuple(Broker(i, r) for i, r in enumerate(racks))
            for rf, start, pid in itertools.product(range(0, n + 2), range(0, n + 1), (-1, 0, n - 1, n)):
                out.append(AssignRequest(brokers, 2 * n + 1, rf, start, pid))
    return out


@pytest.mark.parametrize("version", ADMIN_RELEASES)
def test_assign_small_sweep_matches_kafka(version):
    requests = small_sweep_assign()
    assert len(requests) > 2000
    assert_same([ours_assign(r) for r in requests], _kafka(version).map_assign(requests), requests)


# --- StripedReplicaPlacer (kafka-metadata) -----------------------------------------------------


@pytest.mark.parametrize("version", STRIPED_RELEASES)
def test_striped_place_matches_kafka(version):
    kafka = _kafka(version)

    @BATCH
    @given(st.lists(striped_requests(), min_size=30, max_size=80))
    def check(requests):
        assert_same([ours_striped(r) for r in requests], kafka.map_striped(requests), requests, version)

    check()


def small_sweep_striped():
    """Up to 6 brokers over up to 3 racks (or none), each broker fenced or not, RF 1..3, 8 seeds."""
    out = []
    for n in range(1, 7):
        for nracks in (0, 1, 2, 3):
            racks = [None if nracks == 0 else f"r{i % nracks}" for i in range(n)]
            for mask in range(2**n) if n <= 4 else (0, 1, 2**n - 2, 5):
                brokers = tuple(Broker(i, r, bool(mask >> i & 1)) for i, r in enumerate(racks))
                for rf, seed in itertools.product(range(1, 4), range(8)):
                    out.append(StripedRequest(brokers, (PlacementSpec("t", 0, 2 * n + 1, rf),), seed))
    return out


@pytest.mark.parametrize("version", STRIPED_RELEASES)
def test_striped_small_sweep_matches_kafka(version):
    requests = small_sweep_striped()
    assert len(requests) > 2000
    assert_same([ours_striped(r) for r in requests], _kafka(version).map_striped(requests), requests, version)


def test_bridge_reports_release_and_refuses_adminutils_after_4_0():
    kafka = _kafka("4.4.0")
    assert kafka.kafka_version == kafka.version
    if not kafka.has_admin_utils:
        from kcheck.reference.kafka_jars import KafkaBridgeError

        with pytest.raises(KafkaBridgeError, match="AdminUtils"):
            kafka.map_assign([AssignRequest((Broker(0),), 1, 1, 0)])


@pytest.mark.parametrize("version", STRIPED_RELEASES)
def test_striped_refusals_name_cordoned_dirs_from_4_3(version):
    """Since 4.3.0 (KIP-1066) two refusals also name cordoned log directories: the release profile says
    which wording a release has, Kafka's jars agree, and our reference (4.0's wording) maps to it."""
    fenced = tuple(Broker(i, "r", True) for i in range(3))
    requests = [StripedRequest(fenced, (PlacementSpec("t", 0, 1, 1),), 1),
                StripedRequest(fenced[:1], (PlacementSpec("t", 0, 1, 2),), 1),
                StripedRequest((Broker(0, "r"),), (PlacementSpec("t", 0, -1, 1),), 1)]  # IllegalArgumentException
    kafka = [theirs(a) for a in _kafka(version).map_striped(requests)]
    ours = [ours_striped(r) for r in requests]
    assert profile(version).striped_cordoned_wording == (release(version) >= (4, 3, 0))
    assert kafka[0][1].endswith("cordoned.") == profile(version).striped_cordoned_wording
    assert kafka[1][1].endswith("cordoned.") == profile(version).striped_cordoned_wording
    assert kafka == [as_release(version, o) for o in ours]
