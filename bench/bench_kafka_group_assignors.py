"""KIP-848 server-side assignors: real Kafka of every release vs our Python reference, same inputs, one pass.

Run: .venv/bin/python bench/bench_kafka_group_assignors.py [-n N] [--batch B] [--seed S] [--progress SECONDS]
                                                            [VERSION ...]
Each input (a group spec and topic describer: `random_problem` of tests/test_kafka_group_assignors.py, the
differential test's generator, drawn from --seed a batch at a time) is drawn once, encoded once, and sent,
for both assignors (uniform, server-range), to one JVM per release at the same time. Our reference runs
once per distinct reference profile (uniform: 3.x's builder or 4.x's; range: one for all), meanwhile. The
raw answers are compared across releases first, and each distinct answer is parsed once.
Prints, per assignor and release: inputs compared, declined (our reference does not model the input
for that release: 3.x's heterogeneous uniform builder; those are not sent), differences (the smallest
one in full), Kafka's rate (inputs sent per second of its JVM's CPU time, and per second of round-trip
wall time, with the other JVMs running beside it) and our reference's rate (per CPU second), measured in
the same run. Asserts nothing.

Default: 3,000 inputs on 4.4.0, 4.1.2, 4.0.2 and 3.9.1, about a minute. A million per assignor and release
(--progress prints the table as it goes; SIGTERM or Ctrl-C stops after the current batch and prints the
figures so far). Its Python (drawing the inputs 0.57 ms, our reference 0.36 ms, encoding and comparing
0.23 ms of CPU per input) sets the pace, the four JVMs together take about 0.5 ms: a million took 86 min
on 2 cores shared with other runs (120-220 inputs/s):

    nice -n 5 .venv/bin/python bench/bench_kafka_group_assignors.py -n 1000000 --progress 300
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from kafka_fanout import Clock, Fanout, Tally, load_tests_module, rate, stop_on_signal
from kcheck.reference.assignors import server
from kcheck.reference.kafka_bridge import encode_text
from kcheck.reference.kafka_group_assignors import GROUP_ASSIGNOR_CLASSES, WORD, encode_request, parse_answer

ASSIGNORS = list(GROUP_ASSIGNOR_CLASSES)  # uniform, server-range


def _size(problem) -> int:
    spec, describer = problem
    return (len(spec.members) + sum(max(n, 0) for n in describer.partitions.values())
            + sum(len(ps) for m in spec.members.values() for ps in m.assignment.values()))


def _problem(gen, rng: random.Random):
    """A random group; drawn again when its member ids would make a Java HashMap bucket a tree (order not modelled)."""
    while True:
        try:
            return gen.random_problem(random.Random(rng.getrandbits(64)))
        except NotImplementedError:
            continue


def profile_key(assignor: str, version: str) -> tuple:
    """Releases with the same key run the same reference code (server.UniformAssignor's release switches)."""
    if assignor != "uniform":
        return (assignor,)
    release = server._release(version)
    return (assignor, release >= server.EXTRA_SLOT_DEFERRED_SINCE, release >= server.HETEROGENEOUS_BUILDER_SINCE)


def _clock_name(assignor: str, key: tuple) -> str:
    if assignor != "uniform":
        return f"ours {assignor}"
    return f"ours uniform ({'4.0.1+' if key[1] else '4.0.0-'}, {'4.x' if key[2] else '3.x'} builder)"


def _prefix(assignor: str) -> str:
    return f"{WORD} {encode_text(GROUP_ASSIGNOR_CLASSES[assignor])} "


def encode(problems) -> dict[str, list[str]]:
    """Both assignors' lines; encoded once, as they differ only in the class name."""
    first, *rest = ASSIGNORS
    lines = [encode_request(GROUP_ASSIGNOR_CLASSES[first], s, d) for s, d in problems]
    cut = len(_prefix(first))
    out = {first: lines}
    for a in rest:
        prefix = _prefix(a)
        out[a] = [prefix + line[cut:] for line in lines]
    return out


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("versions", nargs="*", default=["4.4.0", "4.1.2", "4.0.2", "3.9.1"])
    parser.add_argument("-n", type=int, default=3_000, help="inputs (each to both assignors and every release)")
    parser.add_argument("--batch", type=int, default=1_000, help="inputs per round trip (default 1000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--progress", type=float, default=0, help="print the table every SECONDS (0: at the end)")
    args = parser.parse_args(argv)
    if args.n < 1 or args.batch < 1:
        parser.error("-n and --batch must be positive")
    gen = load_tests_module("test_kafka_group_assignors")
    versions = list(dict.fromkeys(args.versions))
    profiles = {a: {profile_key(a, v): gen.reference_assignor(a, v) for v in versions} for a in ASSIGNORS}
    tallies = {(a, v): Tally() for a in ASSIGNORS for v in versions}
    clock = Clock()
    rng = random.Random(args.seed)
    print(f"{args.n:,} random group specs (seed {args.seed}), each to {', '.join(ASSIGNORS)} on "
          f"{', '.join(versions)}; batches of {args.batch}", flush=True)
    with Fanout(versions) as fan:
        fan.require(WORD, "KIP-848 server-side assignors (ConsumerGroupPartitionAssignor)")
        warm = encode([_problem(gen, random.Random(~args.seed)) for _ in range(200)])
        for f in fan.submit({v: list(warm.items()) for v in versions}, timed=False).values():
            f.result()
        start = last = time.perf_counter()
        done = 0
        with clock("draw"):
            problems = [_problem(gen, rng) for _ in range(min(args.batch, args.n))]
        stop = stop_on_signal()
        while problems and not stop.is_set():
            with clock("encode"):
                lines = encode(problems)
            skip = {(a, v): [declined(a, v, p) for p in problems] for a in ASSIGNORS for v in versions}
            futures = fan.submit({v: [(a, [line for line, no in zip(lines[a], skip[a, v], strict=True) if not no])
                                      for a in ASSIGNORS] for v in versions})
            ours: dict[str, dict[tuple, list]] = {a: {} for a in ASSIGNORS}
            for a in ASSIGNORS:
                for key, ref in profiles[a].items():
                    with clock(_clock_name(a, key)):
                        ours[a][key] = [gen.ours(ref, s, d) for s, d in problems]
            done += len(problems)
            with clock("draw"):
                upcoming = [_problem(gen, rng) for _ in range(min(args.batch, args.n - done))]
            answers = {v: f.result() for v, f in futures.items()}
            with clock("compare"):
                compare(gen, problems, ours, answers, skip, tallies, versions)
            problems = upcoming
            if args.progress and time.perf_counter() - last >= args.progress:
                last = time.perf_counter()
                report(fan, tallies, clock, versions, done, last - start)
                smallest(gen, tallies)
        report(fan, tallies, clock, versions, done, time.perf_counter() - start)
    smallest(gen, tallies)


def smallest(gen, tallies) -> None:
    for (a, v), t in tallies.items():
        if t.smallest is not None:
            _, problem, mine, real = t.smallest
            print(f"\nsmallest difference, {a} on {v} ({t.differences} in all):\n{gen.show(*problem)}")
            print(f"  ours:  {mine}\n  kafka: {real}", flush=True)


def declined(assignor: str, version: str, problem) -> bool:
    """Inputs our reference declines for a release (server.UniformAssignor: 3.x's heterogeneous builder is not
    modelled), known before sending: they are counted, not sent."""
    spec = problem[0]
    return (assignor == "uniform" and not profile_key(assignor, version)[2] and bool(spec.members)
            and spec.subscription_type is not server.SubscriptionType.HOMOGENEOUS)


def compare(gen, problems, ours, answers, skip, tallies, versions) -> None:
    for a in ASSIGNORS:
        keys = {v: profile_key(a, v) for v in versions}
        sent = {v: iter(answers[v][a]) for v in versions}
        for i, problem in enumerate(problems):
            parsed: dict[str, object] = {}  # each distinct raw answer parsed once
            verdicts: dict[tuple, bool | None] = {}  # (profile, raw answer) -> same? (None: declined)
            for v in versions:
                tally = tallies[a, v]
                tally.inputs += 1
                if skip[a, v][i]:
                    tally.declined += 1
                    continue
                raw = next(sent[v])
                key = (keys[v], raw)
                if key not in verdicts:
                    mine = ours[a][keys[v]][i]
                    if gen.unmodelled(mine):
                        verdicts[key] = None
                    else:
                        if raw not in parsed:
                            parsed[raw] = gen.theirs(parse_answer(raw))
                        verdicts[key] = mine == parsed[raw]
                verdict = verdicts[key]
                if verdict is None:
                    tally.declined += 1
                elif not verdict:
                    tally.difference(_size(problem), problem, ours[a][keys[v]][i], parsed[raw])


def report(fan: Fanout, tallies, clock: Clock, versions, done: int, seconds: float) -> None:
    print(f"\n{done:,} inputs drawn in {seconds:,.0f} s; our CPU s: "
          + ", ".join(f"{k} {s:,.1f}" for k, s in clock.seconds.items()))
    print(f"{'assignor':12} {'release':8} {'compared':>10} {'declined':>9} {'diffs':>6} {'kafka/cpu-s':>12} "
          f"{'kafka/wall-s':>12} {'ours/cpu-s':>11}")
    for (a, v), t in tallies.items():
        ours_s = clock.seconds.get(_clock_name(a, profile_key(a, v)), 0.0)
        print(f"{a:12} {v:8} {t.compared:>10,} {t.declined:>9,} {t.differences:>6} "
              f"{rate(t.compared, fan.cpu.get((v, a), 0.0)):>12} {rate(t.compared, fan.wall.get((v, a), 0.0)):>12} "
              f"{rate(t.inputs, ours_s):>11}")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
