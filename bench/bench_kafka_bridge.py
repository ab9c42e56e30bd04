"""Placement differential at scale: real Kafka through the bridge vs our Python reference, same inputs, one run.

Run: .venv/bin/python bench/bench_kafka_bridge.py [N] [RELEASE ...] [--algorithms adminutils,striped]
N inputs per algorithm per release (default 5,000; 1000000 for the full differential), drawn from a
fixed seed in chunks of 10,000: clusters of 1-40 brokers (sometimes 64-211) with no racks, a few,
uneven weighted racks, one big rack beside small ones, a rack per broker or racks on some brokers
only (unicode names, equal String.hashCode pairs); fenced brokers for the striped placer; 1-60
partitions (sometimes up to 1,000 and odd sizes), RF from -1 to n+1; AdminUtils with fixed start
indexes and start partition ids, or its own Random re-seeded; the striped placer with one to twelve
specs placed in turn by one placer and 64-bit seeds. Each input must give the same replicas in the
same order, or the same exception class and message (in the release's wording,
`releases.profile(version).striped_refusal`).

Prints, per release and algorithm: inputs compared, differences (and the smallest one), Kafka's rate
through the bridge (encode, JVM, parse) and the Python reference's rate, measured in the same run.
Asserts nothing. Default releases: 4.0.2 (AdminUtils and striped) and 4.4.0 (striped); AdminUtils runs
only where the release has it (3.9.x, 4.0.x). The first run resolves the jars from Maven Central into
~/.cache/kcheck/kafka; the timings exclude that.
"""

from __future__ import annotations

import argparse
import random
import time
import zlib
from collections.abc import Callable, Iterator

from kcheck.model import Broker
from kcheck.reference.java import JavaRandom
from kcheck.reference.kafka_bridge import AssignRequest, JavaException, KafkaBridge, StripedRequest
from kcheck.reference.kafka_jars import resolve
from kcheck.reference.placement import assign_replicas_to_brokers
from kcheck.reference.releases import profile
from kcheck.reference.striped import PlacementSpec, StaticCluster, StripedReplicaPlacer

CHUNK = 10_000
RACK_NAMES = ["r0", "r1", "r2", "r10", "a", "b", "", " ", "rack-\u00e9", "\u4e2d", "\U0001F600", "Aa", "BB"]


def cluster(rng: random.Random, striped: bool) -> tuple[Broker, ...]:
    n = rng.randint(1, 40) if rng.random() < 0.95 else rng.choice([64, 97, 128, 211])
    if rng.random() < 0.7:
        ids = list(range(n))
    else:  # negative ids only for AdminUtils: the striped placer loops forever on one (so does Kafka's)
        ids = rng.sample(range(0 if striped else -(2**31), 2**31 - 1), n) if rng.random() < 0.3 else \
            rng.sample(range(0, 3000), n)
    rng.shuffle(ids)
    layout = rng.choice(["none", "few", "uneven", "one-big-rack", "one-per-rack", "mixed"])
    if layout == "none":
        racks: list[str | None] = [None] * n
    elif layout == "few":
        k = rng.randint(1, 5)
        racks = [f"r{rng.randrange(k)}" for _ in range(n)]
    elif layout == "one-big-rack":
        racks = ["big" if rng.random() < 0.7 else f"s{rng.randrange(max(1, n // 3))}" for _ in range(n)]
    elif layout == "one-per-rack":
        racks = [f"r{i}" for i in range(n)]
        rng.shuffle(racks)
    else:
        pool: list[str | None] = list(dict.fromkeys(rng.choice(RACK_NAMES) for _ in range(rng.randint(1, 6))))
        if layout == "mixed":
            pool.append(None)
        racks = rng.choices(pool, [rng.random() ** 3 + 0.01 for _ in pool], k=n)
    fenced = [False] * n
    if striped:
        mode = rng.random()
        if mode < 0.05:
            fenced = [True] * n
        elif mode < 0.5:
            p = rng.random()
            fenced = [rng.random() < p for _ in range(n)]
    return tuple(Broker(i, r, f) for i, r, f in zip(ids, racks, fenced, strict=True))


def _partitions(rng: random.Random, n: int) -> int:
    x = rng.random()
    if x < 0.85:
        return rng.randint(1, 60)
    if x < 0.95:
        return rng.choice([2 * n + 1, 3 * n, 97, 101, rng.randint(-1, 300)])
    return rng.choice([997, 1000])


def _rf(rng: random.Random, n: int) -> int:
    x = rng.random()
    if x < 0.8:
        return rng.randint(1, min(n, 4))
    return rng.choice([n, n + 1, 0, -1, rng.randint(1, n)])


def assign_inputs(count: int, seed: int) -> list[AssignRequest]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        b = cluster(rng, False)
        n = len(b)
        if rng.random() < 0.3:  # AdminUtils draws its start index and shift from its own Random
            fixed, rand_seed = rng.choice([-1, -1, -2]), rng.getrandbits(64) - 2**63
        else:
            fixed, rand_seed = (rng.randrange(n) if rng.random() < 0.8 else rng.randint(0, 3 * n + 7)), None
        pid = rng.choice([-1, -1, 0, rng.randint(0, 3 * n), rng.randint(-5, 10_000)])
        out.append(AssignRequest(b, _partitions(rng, n), _rf(rng, n), fixed, pid, rand_seed))
    return out


def striped_inputs(count: int, seed: int) -> list[StripedRequest]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        b = cluster(rng, True)
        n = len(b)
        k = rng.randint(1, 3) if rng.random() < 0.9 else rng.randint(4, 12)
        specs = tuple(PlacementSpec("t", rng.randint(0, 5000), _partitions(rng, n) if k == 1 else rng.randint(1, 30),
                                    _rf(rng, n)) for _ in range(k))
        out.append(StripedRequest(b, specs, rng.getrandbits(64) - 2**63))
    return out


def ours_assign(r: AssignRequest):
    try:
        return assign_replicas_to_brokers(list(r.brokers), r.n_partitions, r.replication_factor, r.fixed_start_index,
                                          r.start_partition_id, None if r.seed is None else JavaRandom(r.seed))
    except Exception as e:  # noqa: BLE001 - compared with Kafka's exception
        return type(e).__name__, str(e)


def ours_striped(r: StripedRequest):
    placer, c = StripedReplicaPlacer(JavaRandom(r.seed)), StaticCluster(r.brokers)
    try:
        return [placer.place(s, c).replicas() for s in r.specs]
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)


def _size(r: AssignRequest | StripedRequest) -> int:
    if isinstance(r, AssignRequest):
        return len(r.brokers) * max(1, r.n_partitions)
    return len(r.brokers) * sum(max(1, s.num_partitions) for s in r.specs)


def differential(version: str, name: str, kafka_map: Callable, ours: Callable,
                 inputs: Callable[[int, int], list], total: int) -> None:
    wording = profile(version).striped_refusal
    compared = differences = 0
    kafka_s = ours_s = 0.0
    smallest = None
    start = time.perf_counter()

    def chunks() -> Iterator[list]:
        for i, lo in enumerate(range(0, total, CHUNK)):
            yield inputs(min(CHUNK, total - lo), zlib.crc32(f"{name} {i}".encode()))

    kafka_map(inputs(min(2000, total), 12345))  # warm the JIT
    for batch in chunks():
        t0 = time.perf_counter()
        real = kafka_map(batch)
        t1 = time.perf_counter()
        mine = [ours(r) for r in batch]
        t2 = time.perf_counter()
        kafka_s += t1 - t0
        ours_s += t2 - t1
        for r, m, k in zip(batch, mine, real, strict=True):
            k = (k.simple_name, k.message) if isinstance(k, JavaException) else k
            if isinstance(m, tuple):
                m = (m[0], wording(m[1]))
            compared += 1
            if m != k:
                differences += 1
                if smallest is None or _size(r) < _size(smallest[0]):
                    smallest = (r, m, k)
        if total >= 100_000:
            print(f"  ... {version} {name}: {compared:,} compared, {differences} different, "
                  f"{time.perf_counter() - start:.0f}s", flush=True)
    print(f"{version:8} {name:10} {compared:>10,} {differences:>6} {compared / kafka_s:>10,.0f} "
          f"{compared / ours_s:>10,.0f} {ours_s / kafka_s:>9.2f}x", flush=True)
    if smallest is not None:
        r, m, k = smallest
        print(f"  smallest difference: {r}\n    ours:  {m}\n    kafka: {k}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=5_000, help="inputs per algorithm per release")
    ap.add_argument("releases", nargs="*", default=["4.0.2", "4.4.0"])
    ap.add_argument("--algorithms", default="adminutils,striped")
    args = ap.parse_args()
    algorithms = set(args.algorithms.split(","))
    print(f"{args.n:,} inputs per algorithm per release; rates in inputs/s (kafka: through the bridge)")
    print(f"{'release':8} {'algorithm':10} {'compared':>10} {'diffs':>6} {'kafka':>10} {'ours':>10} "
          f"{'kafka/ours':>10}", flush=True)
    for v in args.releases:
        resolve(v)
        with KafkaBridge(v, timeout=120) as kafka:
            if "adminutils" in algorithms and kafka.has_admin_utils:
                differential(v, "adminutils", kafka.map_assign, ours_assign, assign_inputs, args.n)
            if "striped" in algorithms:
                differential(v, "striped", kafka.map_striped, ours_striped, striped_inputs, args.n)


if __name__ == "__main__":
    main()
