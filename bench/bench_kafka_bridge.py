"""Placements per second: real Kafka through the bridge vs our Python reference, same inputs, one run.

Run: .venv/bin/python bench/bench_kafka_bridge.py [VERSION ...]   (prints figures; asserts nothing)
Default releases: 4.0.2 (AdminUtils and striped) and the newest known (striped). The first run
resolves the jars from Maven Central into ~/.cache/kcheck/kafka; the timings below exclude that.
"""

from __future__ import annotations

import random
import sys
import time

from kcheck.model import Broker
from kcheck.reference.java import JavaRandom
from kcheck.reference.kafka_bridge import AssignRequest, KafkaBridge, StripedRequest, _encode_assign, _encode_striped
from kcheck.reference.kafka_jars import KNOWN_RELEASES, resolve
from kcheck.reference.placement import assign_replicas_to_brokers
from kcheck.reference.striped import PlacementSpec, StaticCluster, StripedReplicaPlacer


def cluster(rng: random.Random, fenced: bool) -> tuple[Broker, ...]:
    n = rng.randint(3, 30)
    racks = rng.choice([0, 1, 3, 5])
    return tuple(Broker(i, f"r{rng.randrange(racks)}" if racks else None, fenced and rng.random() < 0.2)
                 for i in range(n))


def assign_inputs(count: int) -> list[AssignRequest]:
    rng = random.Random(1)
    out = []
    for _ in range(count):
        b = cluster(rng, False)
        out.append(AssignRequest(b, rng.randint(1, 50), rng.randint(1, min(3, len(b))), rng.randrange(len(b)),
                                 rng.choice([-1, 0, rng.randint(0, 100)])))
    return out


def striped_inputs(count: int) -> list[StripedRequest]:
    rng = random.Random(2)
    out = []
    for _ in range(count):
        b = cluster(rng, True)
        if all(x.fenced for x in b):
            b = (Broker(b[0].id, b[0].rack, False),) + b[1:]
        out.append(StripedRequest(b, (PlacementSpec("t", 0, rng.randint(1, 50), rng.randint(1, min(3, len(b)))),),
                                  rng.getrandbits(63)))
    return out


def ours_assign(r: AssignRequest):
    return assign_replicas_to_brokers(list(r.brokers), r.n_partitions, r.replication_factor, r.fixed_start_index,
                                      r.start_partition_id, None if r.seed is None else JavaRandom(r.seed))


def ours_striped(r: StripedRequest):
    placer, c = StripedReplicaPlacer(JavaRandom(r.seed)), StaticCluster(r.brokers)
    return [placer.place(s, c).replicas() for s in r.specs]


def rate(fn, inputs) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn(inputs)
    return len(inputs) / (time.perf_counter() - start), out


def main(versions: list[str]) -> None:
    n = 5_000
    assign, striped = assign_inputs(n), striped_inputs(n)
    print(f"{n} inputs each (3-30 brokers, 0-5 racks, 1-50 partitions, RF 1-3); inputs/s")
    print("  kafka: bridge.map_* (encode, JVM, parse); jvm: the JVM round trip alone (pre-encoded lines);")
    print("  1-by-1: one call per input; ours: the Python reference")
    print(f"{'release':8} {'algorithm':10} {'jvm start':>9} {'kafka':>8} {'jvm':>8} {'1-by-1':>7} {'ours':>8} "
          f"{'kafka/ours':>10}")
    for v in versions:
        t0 = time.perf_counter()
        resolve(v)
        resolve_s = time.perf_counter() - t0
        with KafkaBridge(v) as kafka:
            algos = [("striped", striped, kafka.map_striped, ours_striped, _encode_striped)]
            if kafka.has_admin_utils:
                algos.insert(0, ("adminutils", assign, kafka.map_assign, ours_assign, _encode_assign))
            for name, inputs, theirs, ours, encode in algos:
                for _ in range(3):
                    theirs(inputs[:2000])  # warm the JIT
                k_rate, k_out = rate(theirs, inputs)
                lines = [encode(x) for x in inputs]
                jvm_rate, _ = rate(kafka.roundtrip, lines)
                one_rate, _ = rate(lambda xs, f=theirs: [f([x]) for x in xs], inputs[:500])
                o_rate, o_out = rate(lambda xs, f=ours: [f(x) for x in xs], inputs)
                same = sum(1 for a, b in zip(k_out, o_out, strict=True) if a == b)
                print(f"{v:8} {name:10} {kafka.start_seconds:8.2f}s {k_rate:8,.0f} {jvm_rate:8,.0f} {one_rate:7,.0f} "
                      f"{o_rate:8,.0f} {k_rate / o_rate:9.2f}x  ({same}/{n} equal; jars {resolve_s:.2f}s)")


if __name__ == "__main__":
    main(sys.argv[1:] or ["4.0.2", KNOWN_RELEASES[0]])
