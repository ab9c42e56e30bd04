"""Leader balancing and elections: real Kafka through the bridge vs our Python reference, same inputs, one run.

Run: .venv/bin/python bench/bench_kafka_elections.py [N] [RELEASE ...]
N controllers per release for KRaft's maybeBalancePartitionLeaders (default 2,000; each 1-4 topics of
1-40 partitions, sometimes 150, over 1-9 brokers, some fenced, shutting down or unregistered; leaderless
partitions, ISRs without the preferred replica, reassignments in flight, ELR on for half, caps from 0 to
1000), and 10 x N ZooKeeper elections (the four PartitionLeaderElectionAlgorithms and Election.leaderFor*)
on the 3.x releases. Prints inputs compared, differences (the first one in full), Kafka's rate through the
bridge and the reference's rate, measured in the same run. Asserts nothing.
Default releases: 4.4.0, 4.1.2, 4.0.2 (KRaft) and 3.9.1 (KRaft without ELR, and ZooKeeper).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

from kcheck.reference.assignors.uuid import Uuid
from kcheck.reference.election import LeaderAndIsr, LeaderRecoveryState, PartitionRegistration
from kcheck.reference.kafka_bridge import JavaException, KafkaBridge
from kcheck.reference.kafka_elections import (
    ZK_KINDS,
    BalanceRequest,
    ZkAlgorithmRequest,
    ZkElectionRequest,
    map_leader_balance,
    map_zk_algorithm,
    map_zk_election,
    reference_leader_balance,
    reference_zk_algorithm,
    reference_zk_election,
)
from kcheck.reference.leader_balance import KRaftTopic


def registration(rng: random.Random, ids: list[int], elr: bool) -> PartitionRegistration:
    replicas = rng.sample(ids, rng.randint(1, min(5, len(ids))))
    isr = [r for r in replicas if rng.random() < 0.7]
    rng.shuffle(isr)
    adding: list[int] = []
    removing: list[int] = []
    if len(replicas) >= 2 and rng.random() < 0.15:
        cut = rng.randint(1, len(replicas) - 1)
        adding, removing = rng.choice([(replicas[cut:], []), ([], replicas[cut:]), (replicas[cut:], replicas[:1])])
    leader = -1 if not isr or rng.random() < 0.2 else rng.choice(isr)
    elr_, last_known = [], []
    if elr and rng.random() < 0.4:
        elr_ = [r for r in replicas if r not in isr and rng.random() < 0.5]
        last_known = [rng.choice(replicas)] if not isr and rng.random() < 0.5 else []
    state = LeaderRecoveryState.RECOVERING if leader >= 0 and rng.random() < 0.05 else LeaderRecoveryState.RECOVERED
    return PartitionRegistration(tuple(replicas), tuple(isr), leader, rng.randint(0, 9), rng.randint(0, 9),
                                 tuple(removing), tuple(adding), state, tuple(elr_), tuple(last_known))


def balance_inputs(count: int, elr_allowed: bool, seed: int = 1) -> list[BalanceRequest]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.randint(1, 9)
        ids = list(range(n)) if rng.random() < 0.6 else rng.sample(range(60), n)
        p_fenced = rng.choice([0.0, 0.25, 0.7, 1.0])
        brokers = tuple((b, "fenced" if rng.random() < p_fenced else rng.choice(["active"] * 9 + ["shutting-down"]))
                        for b in ids if rng.random() > 0.08)
        elr = elr_allowed and rng.random() < 0.5
        topics = tuple(KRaftTopic("", Uuid(rng.getrandbits(64) - 2**63, rng.getrandbits(64) - 2**63),
                                  rng.choice([None, None, 1, 2, 3])) for _ in range(rng.randint(1, 4)))
        per_topic = 150 if rng.random() < 0.05 else rng.randint(1, 40)
        parts = [(t, p, registration(rng, ids, elr))
                 for t in range(len(topics)) for p in range(rng.randint(1, per_topic))]
        rng.shuffle(parts)
        cap = rng.choice([1000, 1000, rng.randint(0, 6), rng.randint(1, 60)])
        out.append(BalanceRequest(brokers, topics, tuple(parts), cap, elr))
    return out


def zk_inputs(count: int, seed: int = 2) -> tuple[list[ZkAlgorithmRequest], list[ZkElectionRequest]]:
    rng = random.Random(seed)

    def some(k: int) -> list[int]:
        return rng.sample(range(12), k)

    algorithms, elections = [], []
    for _ in range(count):
        kind = rng.choice(ZK_KINDS)
        a = some(rng.randint(0, 6))
        isr = [r for r in a if rng.random() < 0.6] + (some(2) if rng.random() < 0.2 else [])
        live = [r for r in set(a) | set(some(2)) if rng.random() < 0.7]
        algorithms.append(ZkAlgorithmRequest(kind, tuple(a), tuple(isr), tuple(live), rng.random() < 0.5,
                                             tuple(r for r in set(a) | set(some(1)) if rng.random() < 0.3)))
        replicas = some(rng.randint(1, 6))
        cut = rng.randint(0, len(replicas))
        adding = replicas[:cut] if kind == "reassign" and rng.random() < 0.5 else []
        removing = [r for r in replicas[cut:] if kind == "reassign" and rng.random() < 0.5]
        cur_isr = tuple(r for r in replicas if rng.random() < 0.6)
        current = None if kind == "offline" and rng.random() < 0.1 else LeaderAndIsr(
            rng.choice(replicas + [-1]), rng.randint(0, 9), cur_isr,
            LeaderRecoveryState(int(rng.random() < 0.1)), rng.randint(0, 9))
        elections.append(ZkElectionRequest(
            kind, tuple(replicas), tuple(adding), tuple(removing),
            tuple(r for r in set(replicas) | set(some(2)) if rng.random() < 0.75),
            tuple(r for r in set(replicas) | set(some(1)) if rng.random() < 0.25),
            tuple(r for r in replicas if rng.random() < 0.15), current, rng.random() < 0.5, rng.random() < 0.7))
    return algorithms, elections


def _same(mine: object, real: object) -> bool:
    if isinstance(real, JavaException):
        return isinstance(mine, Exception) and (type(mine).__name__, str(mine)) == (real.simple_name, real.message)
    return mine == real


def differential(version: str, name: str, inputs: Sequence, kafka: Callable, ours: Callable) -> None:
    kafka(inputs[: min(200, len(inputs))])  # warm the JIT
    t0 = time.perf_counter()
    real = kafka(inputs)
    t1 = time.perf_counter()
    mine = []
    for r in inputs:
        try:
            mine.append(ours(r))
        except Exception as e:  # noqa: BLE001 - compared with Kafka's refusal
            mine.append(e)
    t2 = time.perf_counter()
    diffs = [(r, m, k) for r, m, k in zip(inputs, mine, real, strict=True) if not _same(m, k)]
    n = len(inputs)
    print(f"{version:8} {name:16} {n:>8,} {len(diffs):>6} {n / (t1 - t0):>9,.0f} {n / (t2 - t1):>9,.0f} "
          f"{(t2 - t1) / (t1 - t0):>9.2f}x", flush=True)
    if diffs:
        r, m, k = diffs[0]
        print(f"  first difference: {r}\n    ours:  {m}\n    kafka: {k}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=2_000)
    ap.add_argument("releases", nargs="*", default=["4.4.0", "4.1.2", "4.0.2", "3.9.1"])
    args = ap.parse_args()
    print(f"{'release':8} {'algorithm':16} {'compared':>8} {'diffs':>6} {'kafka/s':>9} {'ours/s':>9} "
          f"{'kafka/ours':>10}")
    for v in args.releases:
        zk = v.startswith("3.")
        with KafkaBridge(v, timeout=120) as kafka:
            differential(v, "leader-balance", balance_inputs(args.n, elr_allowed=not zk),
                         lambda rs, k=kafka: map_leader_balance(k, rs),
                         lambda r, v=v: reference_leader_balance(r, v))
            if zk:
                algorithms, elections = zk_inputs(10 * args.n)
                differential(v, "zk-algorithms", algorithms, lambda rs, k=kafka: map_zk_algorithm(k, rs),
                             reference_zk_algorithm)
                differential(v, "zk-election", elections, lambda rs, k=kafka: map_zk_election(k, rs),
                             reference_zk_election)


if __name__ == "__main__":
    main()
