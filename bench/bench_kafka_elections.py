"""Leader balancing and elections: real Kafka of every release vs our Python reference, same inputs, one pass.

Run: .venv/bin/python bench/bench_kafka_elections.py [-n N] [--zk-n N] [--batch B] [--seed S] [--progress SECONDS]
                                                     [--family leader-balance|zk|all] [RELEASE ...]
leader-balance: KRaft's `ReplicationControlManager.maybeBalancePartitionLeaders` on a controller fed
records, against `KRaftLeaderBalancer`. Each input (`random_balance_request` of tests/test_kafka_elections.py:
1-4 topics of 1-40 partitions, 1 in 20 of up to 150, over 1-9 brokers, some fenced, shutting down or
unregistered; leaderless partitions, ISRs without the preferred replica, reassignments in flight,
RECOVERING partitions, replicas listed twice, ELR on for half, caps from 0 to 1000) is drawn once and
sent to one JVM per release at the same time; 3.x releases, which cannot enable ELR, get ELR inputs with
the ELR flag and fields cleared. Our reference runs once per distinct reference profile (the imbalanced
set's hash changed in 4.1; PartitionChangeBuilder rules per release), meanwhile; the raw answers are
compared across releases first, and each distinct answer is parsed once.
zk (3.x releases only): the ZooKeeper controller's four PartitionLeaderElectionAlgorithms and
Election.leaderFor* (`zk_algorithm_request` / `zk_election_request` of the same test file).
Prints, per algorithm and release: inputs compared, differences (the smallest one in full), Kafka's rate
(inputs per second of its JVM's CPU time, and per second of round-trip wall time, with the other JVMs
running beside it) and our reference's rate (per CPU second), measured in the same run. Asserts nothing.

Default: 1,000 leader-balance inputs on 4.4.0, 4.1.2, 4.0.2 and 3.9.1 and 20,000 of each ZK kind on 3.9.1,
about a minute. A million per algorithm and release (--progress prints the table as it goes; SIGTERM or
Ctrl-C stops after the current batch and prints the figures so far):

    nice -n 5 .venv/bin/python bench/bench_kafka_elections.py --family zk --zk-n 1000000 3.9.1  # ~10 min
    nice -n 5 .venv/bin/python bench/bench_kafka_elections.py --family leader-balance -n 1000000 --progress 300

The leader balance's Python sets its pace (about 2.6 ms of CPU per input: our reference for the four
releases 1.4 ms, drawing 0.45, encoding and adapting 0.35, comparing 0.15; each JVM about 0.1-0.15 ms):
from 73 inputs/s on 2 cores shared with three other runs to 365/s beside one; a million took 90 min.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from dataclasses import replace

from kafka_fanout import Clock, Fanout, Tally, load_tests_module, rate, stop_on_signal
from kcheck.reference.kafka_bridge import JavaException
from kcheck.reference.kafka_elections import (
    LB_WORD,
    ZA_WORD,
    ZE_WORD,
    ZK_KINDS,
    BalanceRequest,
    encode_balance,
    encode_zk_algorithm,
    encode_zk_election,
    parse_balance,
    parse_zk_algorithm,
    parse_zk_election,
    reference_leader_balance_releases,
    reference_zk_algorithm,
    reference_zk_election,
)
from kcheck.reference.releases import version_key


def _same(mine: object, real: object) -> bool:
    if isinstance(real, JavaException):  # a refusal: same exception, same message
        return isinstance(mine, Exception) and (type(mine).__name__, str(mine)) == (real.simple_name, real.message)
    return mine == real


def _ours(fn: Callable, *args):
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - compared with Kafka's refusal
        return e


def without_elr(r: BalanceRequest) -> BalanceRequest:
    """The input as a 3.x controller can hold it: ELR off, no ELR fields in the partition records."""
    if not r.elr:
        return r
    return replace(r, elr=False, partitions=tuple((t, p, replace(reg, elr=(), last_known_elr=()))
                                                  for t, p, reg in r.partitions))


class Family:
    """One algorithm's inputs, encoders, parser and reference, per release."""

    def __init__(self, name: str, word: str, what: str, draw: Callable, encode: Callable, parse: Callable,
                 reference: Callable, adapt: Callable, size: Callable) -> None:
        self.name, self.word, self.what = name, word, what
        self.draw, self.encode, self.parse = draw, encode, parse
        self.reference = reference  # (input, releases) -> {release: our answer or exception}, shared where it can
        self.adapt, self.size = adapt, size  # adapt: (release, input) -> what that release is sent


def run(families: list[Family], versions_of: dict[str, list[str]], n: int, batch: int, seed: int,
        progress: float) -> None:
    versions = list(dict.fromkeys(v for f in families for v in versions_of[f.name]))
    tallies = {(f.name, v): Tally() for f in families for v in versions_of[f.name]}
    clock = Clock()
    rng = random.Random(seed)
    with Fanout(versions) as fan:
        for f in families:
            for v in versions_of[f.name]:
                fan.bridges[v].require(f.word, f.what)
        warm_rng = random.Random(~seed)
        warm = {f.name: [f.draw(warm_rng) for _ in range(100)] for f in families}
        for fut in fan.submit({v: [(f.name, [f.encode(f.adapt(v, r)) for r in warm[f.name]]) for f in families
                                   if v in versions_of[f.name]] for v in versions}, timed=False).values():
            fut.result()
        start = last = time.perf_counter()
        done = 0

        def draw(count: int) -> dict[str, list]:
            return {f.name: [f.draw(rng) for _ in range(count)] for f in families}

        with clock("draw"):
            inputs = draw(min(batch, n))
        stop = stop_on_signal()
        while done < n and not stop.is_set():
            sent, lines = {}, {}
            with clock("adapt"):
                for f in families:
                    for v in versions_of[f.name]:
                        xs = [f.adapt(v, r) for r in inputs[f.name]]
                        same = all(a is b for a, b in zip(xs, inputs[f.name], strict=True))
                        sent[f.name, v] = inputs[f.name] if same else xs  # shared: encoded and run once
            for f in families:  # one encoding per distinct input list
                cache: dict[int, list[str]] = {}
                for v in versions_of[f.name]:
                    xs = sent[f.name, v]
                    if id(xs) not in cache:
                        with clock(f"encode {f.name}"):
                            cache[id(xs)] = [f.encode(r) for r in xs]
                    lines[f.name, v] = cache[id(xs)]
            futures = fan.submit({v: [(f.name, lines[f.name, v]) for f in families if v in versions_of[f.name]]
                                  for v in versions})
            ours: dict[tuple[str, str], list] = {(f.name, v): [] for f in families for v in versions_of[f.name]}
            for f in families:
                with clock(f"ours {f.name}"):
                    for i in range(len(inputs[f.name])):
                        same: dict[int, list[str]] = {}  # releases sent the same input object
                        for v in versions_of[f.name]:
                            same.setdefault(id(sent[f.name, v][i]), []).append(v)
                        for vs in same.values():
                            answers_ = f.reference(sent[f.name, vs[0]][i], vs)
                            for v in vs:
                                ours[f.name, v].append(answers_[v])
            done += len(inputs[families[0].name])
            with clock("draw"):
                upcoming = draw(min(batch, n - done))
            answers = {v: fut.result() for v, fut in futures.items()}
            with clock("compare"):
                compare(families, versions_of, inputs, sent, ours, answers, tallies)
            inputs = upcoming
            if progress and time.perf_counter() - last >= progress:
                last = time.perf_counter()
                report(fan, tallies, clock, done, last - start)
                smallest(tallies)
        report(fan, tallies, clock, done, time.perf_counter() - start)
    smallest(tallies)


def smallest(tallies) -> None:
    for (name, v), t in tallies.items():
        if t.smallest is not None:
            _, r, mine, real = t.smallest
            print(f"\nsmallest difference, {name} on {v} ({t.differences} in all):\n  input: {r}\n"
                  f"  ours:  {mine}\n  kafka: {real}", flush=True)


def compare(families, versions_of, inputs, sent, ours, answers, tallies) -> None:
    for f in families:
        vs = versions_of[f.name]
        for i in range(len(inputs[f.name])):
            parsed: dict[str, object] = {}  # each distinct raw answer parsed once
            for v in vs:
                raw = answers[v][f.name][i]
                tally = tallies[f.name, v]
                tally.inputs += 1
                if raw not in parsed:
                    parsed[raw] = f.parse(raw)
                mine = ours[f.name, v][i]
                if not _same(mine, parsed[raw]):
                    r = sent[f.name, v][i]
                    tally.difference(f.size(r), r, mine, parsed[raw])


def report(fan: Fanout, tallies, clock: Clock, done: int, seconds: float) -> None:
    print(f"\n{done:,} inputs per algorithm drawn in {seconds:,.0f} s; our CPU s: "
          + ", ".join(f"{k} {s:,.1f}" for k, s in clock.seconds.items()))
    print(f"{'algorithm':15} {'release':8} {'compared':>10} {'diffs':>6} {'kafka/cpu-s':>12} {'kafka/wall-s':>12} "
          f"{'ours/cpu-s':>11}   (ours: all the releases' answers to an input together)")
    for (name, v), t in tallies.items():
        print(f"{name:15} {v:8} {t.compared:>10,} {t.differences:>6} {rate(t.inputs, fan.cpu.get((v, name), 0.0)):>12} "
              f"{rate(t.inputs, fan.wall.get((v, name), 0.0)):>12} "
              f"{rate(t.inputs, clock.seconds.get(f'ours {name}', 0.0)):>11}")
    sys.stdout.flush()


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("releases", nargs="*", default=["4.4.0", "4.1.2", "4.0.2", "3.9.1"])
    ap.add_argument("-n", type=int, default=1_000, help="leader-balance inputs per release (default 1000)")
    ap.add_argument("--zk-n", type=int, default=20_000, help="inputs per ZooKeeper algorithm (default 20000)")
    ap.add_argument("--batch", type=int, default=1_000, help="inputs per round trip (default 1000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--progress", type=float, default=0, help="print the table every SECONDS (0: at the end)")
    ap.add_argument("--family", choices=["leader-balance", "zk", "all"], default="all")
    args = ap.parse_args(argv)
    if min(args.n, args.zk_n, args.batch) < 1:
        ap.error("-n, --zk-n and --batch must be positive")
    tests = load_tests_module("test_kafka_elections")
    releases = list(dict.fromkeys(args.releases))
    zk_releases = [v for v in releases if v.startswith("3.")]
    print(f"seed {args.seed}; batches of {args.batch}; releases {', '.join(releases)}", flush=True)
    if args.family in ("leader-balance", "all"):
        lb = Family("leader-balance", LB_WORD, "ReplicationControlManager.maybeBalancePartitionLeaders",
                    lambda rng: tests.random_balance_request(rng, rng.random() < 0.5), encode_balance, parse_balance,
                    reference_leader_balance_releases,
                    lambda v, r: without_elr(r) if version_key(v) < (4, 0, 0) else r, lambda r: len(r.partitions))
        print(f"leader-balance: {args.n:,} inputs, each to {', '.join(releases)}", flush=True)
        run([lb], {lb.name: releases}, args.n, args.batch, args.seed, args.progress)
    if args.family in ("zk", "all") and zk_releases:
        za = Family("zk-algorithms", ZA_WORD, "the ZooKeeper controller's PartitionLeaderElectionAlgorithms",
                    lambda rng: tests.zk_algorithm_request(rng, rng.choice(ZK_KINDS)), encode_zk_algorithm,
                    parse_zk_algorithm, lambda r, vs: dict.fromkeys(vs, _ours(reference_zk_algorithm, r)),
                    lambda v, r: r,
                    lambda r: len(r.assignment) + len(r.isr) + len(r.live))
        ze = Family("zk-election", ZE_WORD, "the ZooKeeper controller's Election",
                    lambda rng: tests.zk_election_request(rng, rng.choice(ZK_KINDS)), encode_zk_election,
                    parse_zk_election, lambda r, vs: dict.fromkeys(vs, _ours(reference_zk_election, r)),
                    lambda v, r: r,
                    lambda r: len(r.replicas) + len(r.live))
        print(f"\nZooKeeper elections: {args.zk_n:,} inputs per algorithm, each to {', '.join(zk_releases)}",
              flush=True)
        run([za, ze], {za.name: zk_releases, ze.name: zk_releases}, args.zk_n, args.batch, args.seed + 1, args.progress)


if __name__ == "__main__":
    main(sys.argv[1:])
