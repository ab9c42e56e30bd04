"""Controller throughput on this machine: elections and auto leader rebalance over a large cluster, reassignment
step functions, and `kcheck verify-reassignment` on a large plan.

Run: .venv/bin/python bench/bench_controller.py [--partitions 200000]   (prints figures; asserts nothing)
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import tempfile
import time
from pathlib import Path

from kcheck.cli import main as kcheck_main
from kcheck.model import PartitionReplicas, TopicPartition
from kcheck.reference.election import (
    KRAFT_ELR,
    Election,
    LeaderAndIsr,
    PartitionChangeBuilder,
    PartitionRegistration,
    leader_for_offline,
)
from kcheck.reference.leader_balance import kraft_balance_partition_leaders, zk_auto_leader_rebalance
from kcheck.reference.reassignment import kraft_reassignment_steps, zk_reassignment_steps

BROKERS = 60


def cluster(partitions: int) -> list[tuple[TopicPartition, tuple[int, ...], int, tuple[int, ...]]]:
    """RF-3 partitions over BROKERS brokers; a tenth led by their second replica (as after a rolling restart)."""
    rnd = random.Random(7)
    out = []
    for i in range(partitions):
        replicas = tuple(rnd.sample(range(BROKERS), 3))
        leader = replicas[1] if i % 10 == 0 else replicas[0]
        out.append((TopicPartition(f"topic-{i // 100}", i % 100), replicas, leader, replicas))
    return out


def rate(label: str, n: int, seconds: float, unit: str = "partitions") -> None:
    print(f"{label:64} {seconds:8.2f} s {n / seconds:12,.0f} {unit}/s")


def bench_elections(parts) -> None:
    dead = 0  # broker 0 dies: every partition it leads needs an offline election
    live = set(range(1, BROKERS))
    led = [(r, LeaderAndIsr(leader, 5, isr)) for _, r, leader, isr in parts if leader == dead]
    start = time.perf_counter()
    for replicas, lai in led:
        leader_for_offline(replicas, lai, live)
    rate(f"ZK offline elections ({len(led):,} partitions led by the dead broker)", len(led),
         time.perf_counter() - start)

    in_isr = [PartitionRegistration(r, isr, leader) for _, r, leader, isr in parts if dead in isr]
    for version, name in ((None, "ELR off"), (KRAFT_ELR, "ELR on, min ISR 2")):
        start = time.perf_counter()
        for p in in_isr:  # generateLeaderAndIsrUpdates(brokerToRemove=0)
            b = PartitionChangeBuilder(p, live, version, 2) if version else PartitionChangeBuilder(p, live)
            b.set_target_isr([x for x in p.isr if x != dead]).build()
        rate(f"KRaft fencing records, {name} ({len(in_isr):,} partitions with the broker in the ISR)",
             len(in_isr), time.perf_counter() - start)

    regs = [PartitionRegistration(r, isr, leader) for _, r, leader, isr in parts]
    start = time.perf_counter()
    for p in regs:
        PartitionChangeBuilder(p, live).set_election(Election.PREFERRED).build()
    rate(f"KRaft PREFERRED elections (all {len(regs):,} partitions)", len(regs), time.perf_counter() - start)


def bench_rebalance(parts) -> None:
    live = set(range(BROKERS))
    described = [PartitionReplicas(tp.topic, tp.partition, r, leader, isr) for tp, r, leader, isr in parts]
    start = time.perf_counter()
    zk = zk_auto_leader_rebalance(described, live)
    rate(f"ZK auto leader rebalance, one check ({len(zk.moves):,} moves)", len(parts), time.perf_counter() - start)
    regs = [(tp, PartitionRegistration(r, isr, leader)) for tp, r, leader, isr in parts]
    start = time.perf_counter()
    kr = kraft_balance_partition_leaders(regs, live)
    rate(f"KRaft balance, one run (cap 1000: {len(kr.moves):,} moves, rerun={kr.reschedule_immediately})",
         len(parts), time.perf_counter() - start)
    start = time.perf_counter()
    kr = kraft_balance_partition_leaders(regs, live, max_elections=len(parts))
    rate(f"KRaft balance, uncapped ({len(kr.moves):,} moves)", len(parts), time.perf_counter() - start)


def bench_steps(n: int) -> None:
    rnd = random.Random(3)
    moves = [(tuple(rnd.sample(range(BROKERS), 3)), tuple(rnd.sample(range(BROKERS), 3))) for _ in range(n)]
    for name, steps in (("ZK", zk_reassignment_steps), ("KRaft", kraft_reassignment_steps)):
        start = time.perf_counter()
        events = sum(len(steps(a, b)) for a, b in moves)
        rate(f"{name} reassignment, whole move step by step ({events / n:.1f} states each)", n,
             time.perf_counter() - start, "moves")


def bench_verify(partitions: int) -> None:
    rnd = random.Random(11)
    lines, plan = [], []
    topics = partitions // 100
    for t in range(topics):
        lines.append(f"Topic: topic-{t}\tTopicId: AAAAAAAAAAAAAAAAAAAAAA\tPartitionCount: 100\tReplicationFactor: 3"
                     "\tConfigs: min.insync.replicas=2")
        for p in range(100):
            replicas = [rnd.randrange(r, BROKERS, 3) for r in rnd.sample(range(3), 3)]  # rack = broker % 3
            reps = ",".join(map(str, replicas))
            lines.append(f"\tTopic: topic-{t}\tPartition: {p}\tLeader: {replicas[0]}\tReplicas: {reps}\tIsr: {reps}")
            if p % 2 == 0:  # the plan moves half the partitions, one replica per rack (brokers b % 3)
                target = [rnd.randrange(r, BROKERS, 3) for r in rnd.sample(range(3), 3)]
                plan.append({"topic": f"topic-{t}", "partition": p, "replicas": target})
    with tempfile.TemporaryDirectory() as d:
        current, proposed, brokers = Path(d, "describe.txt"), Path(d, "plan.json"), Path(d, "brokers.txt")
        current.write_text("\n".join(lines) + "\n")
        proposed.write_text(json.dumps({"version": 1, "partitions": plan}))
        brokers.write_text("".join(f"{b}:rack{b % 3}\n" for b in range(BROKERS)))
        for extra in ([], ["--json"]):
            start = time.perf_counter()
            code = _quiet(["verify-reassignment", str(current), str(proposed), "--brokers-file", str(brokers),
                           *extra])
            rate(f"verify-reassignment {' '.join(extra) or '(table)'}: {partitions:,}-partition describe, "
                 f"{len(plan):,} moves (exit {code})", len(plan), time.perf_counter() - start, "moves")


def _quiet(argv: list[str]) -> int:
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return kcheck_main(argv)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=200_000)
    ap.add_argument("--moves", type=int, default=2_000)
    ap.add_argument("--plan-partitions", type=int, default=100_000)
    a = ap.parse_args()
    parts = cluster(a.partitions)
    print(f"{a.partitions:,} partitions, RF 3, {BROKERS} brokers")
    bench_elections(parts)
    bench_rebalance(parts)
    bench_steps(a.moves)
    bench_verify(a.plan_partitions)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")


if __name__ == "__main__":
    main()
