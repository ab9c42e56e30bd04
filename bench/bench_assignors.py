"""Consumer assignors on Kafka's own large groups: wall time and peak memory (prints figures; asserts nothing).

Kafka's `AbstractStickyAssignorTest` (apache/kafka 1eb7644349) has two timed tests, run here as Kafka runs them
(rack-less, `RackConfig.NO_BROKER_RACK`):

* `testLargeAssignmentAndGroupWithUniformSubscription` (`@Timeout(30)`): 500 topics x 2,000 partitions
  (1,000,000 partitions), 2,000 consumers all subscribed to every topic. Assign once (fresh group), then
  every consumer but the first (Kafka's loop starts at 1) reports what it got, with generation 1
  (`buildSubscriptionV2Above`), and the same assignor instance assigns again: the sticky path.
* `testLargeAssignmentAndGroupWithNonEqualSubscription` (`@Timeout(90)`): the same, except that the last
  consumer subscribes to the first topic only, so the sticky assignors take the general path.

Run: python bench/bench_assignors.py [--scale 0.1] [--assignor sticky ...] [--profile CASE:ASSIGNOR]

`--scale` multiplies the numbers of topics and consumers (partitions per topic stay 2,000). Every
(case, assignor) runs in a fresh interpreter, so its peak RSS (`ru_maxrss`) is its own; the figure
for the group alone (the inputs, before any assignor runs) is printed beside it. tracemalloc stays
off: it would slow the run several times over.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

from kcheck.model.group import PartitionInfo, Subscription
from kcheck.model.vocabulary import TopicPartition
from kcheck.reference.assignors.registry import resolve_assignor
from kcheck.reference.assignors.sticky import encode_cooperative_user_data, serialize_topic_partition_assignment

ASSIGNORS = ("sticky", "cooperative-sticky", "range", "roundrobin", "uniform")
CASES = {"uniform": "equal subscriptions", "non-equal": "last consumer on one topic"}
KAFKA_TIMEOUT = {"uniform": 30, "non-equal": 90}
GENERATION_ID = 1  # AbstractStickyAssignorTest.generationId


def canonical_name(prefix: str, i: int, max_num: int) -> str:
    """`AbstractPartitionAssignorTest.getCanonicalName`: the number zero-padded to the width of max_num."""
    return prefix + str(i).zfill(len(str(max_num)))


def build_group(case: str, scale: float) -> tuple[dict[str, list[PartitionInfo]], dict[str, list[str]]]:
    topic_count = max(1, round(500 * scale))
    consumer_count = max(2, round(2_000 * scale))
    partition_count = 2_000
    topics = [canonical_name("t", i, topic_count) for i in range(topic_count)]
    ppt = {t: [PartitionInfo(t, p) for p in range(partition_count)] for t in topics}
    member_topics = {}
    for i in range(consumer_count):
        last = case == "non-equal" and i == consumer_count - 1
        member_topics[canonical_name("c", i, consumer_count)] = topics[:1] if last else topics
    return ppt, member_topics


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def resubscribe(assignor: str, topics: list[str], assigned: list[TopicPartition]) -> Subscription:
    """`buildSubscriptionV2Above`: what a consumer sends after being given `assigned` in generation 1."""
    if assignor == "sticky":
        data = serialize_topic_partition_assignment(assigned, GENERATION_ID)
    elif assignor == "cooperative-sticky":
        data = encode_cooperative_user_data(GENERATION_ID)
    else:
        data = None
    return Subscription(tuple(topics), data, tuple(assigned), GENERATION_ID)


def run_one(case: str, assignor_name: str, scale: float, profiler: Any = None) -> dict[str, float]:
    """Both calls of Kafka's test; `profiler` (a cProfile.Profile) is on during the two calls only."""
    on, off = (profiler.enable, profiler.disable) if profiler is not None else (lambda: None, lambda: None)
    ppt, member_topics = build_group(case, scale)
    subs: dict[str, Subscription] = {m: Subscription(tuple(ts)) for m, ts in member_topics.items()}
    rss_inputs = rss_mib()
    assignor = resolve_assignor(assignor_name).factory()  # one instance for both calls, as in Kafka's test
    on()
    start = time.perf_counter()
    first = assignor.assign_partitions(ppt, subs)
    fresh = time.perf_counter() - start
    off()
    members = list(member_topics)
    for m in members[1:]:  # Kafka's loop: `for (int i = 1; i < consumerCount; i++)`
        subs[m] = resubscribe(assignor_name, member_topics[m], first[m])
    on()
    start = time.perf_counter()
    second = assignor.assign_partitions(ppt, subs)
    sticky = time.perf_counter() - start
    off()
    moved = sum(len(set(second[m]) - set(first[m])) for m in members)
    total = sum(len(ps) for ps in ppt.values())
    sizes = [len(second[m]) for m in members]
    return {
        "partitions": total, "consumers": len(members), "fresh_s": fresh, "sticky_s": sticky,
        "rss_inputs_mib": rss_inputs, "rss_peak_mib": rss_mib(), "moved": moved,
        "assigned": sum(sizes), "min": min(sizes), "max": max(sizes),
    }


def profile(case: str, assignor_name: str, scale: float, top: int) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    result = run_one(case, assignor_name, scale, profiler)
    print(json.dumps(result))
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def in_subprocess(case: str, assignor: str, scale: float) -> Mapping[str, float] | str:
    proc = subprocess.run([sys.executable, __file__, "--one", f"{case}:{assignor}", "--scale", str(scale)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies topics and consumers (default 1)")
    parser.add_argument("--assignor", action="append", choices=ASSIGNORS, help="repeatable; default: all")
    parser.add_argument("--case", action="append", choices=tuple(CASES), help="repeatable; default: both")
    parser.add_argument("--one", metavar="CASE:ASSIGNOR", help=argparse.SUPPRESS)
    parser.add_argument("--profile", metavar="CASE:ASSIGNOR", help="cProfile one run in this process")
    parser.add_argument("--top", type=int, default=25, help="functions shown with --profile")
    args = parser.parse_args()
    if args.one:
        case, assignor = args.one.split(":")
        print(json.dumps(run_one(case, assignor, args.scale)))
        return
    if args.profile:
        case, assignor = args.profile.split(":")
        profile(case, assignor, args.scale, args.top)
        return
    ppt, members = build_group("uniform", args.scale)
    print(f"scale {args.scale}: {len(ppt)} topics x 2,000 partitions = {2_000 * len(ppt):,} partitions, "
          f"{len(members):,} consumers (Kafka: scale 1; timeouts 30 s equal, 90 s non-equal, for both calls)")
    del ppt, members
    print(f"{'case':10} {'assignor':19} {'fresh':>9} {'sticky':>9} {'total':>9} {'Kafka':>6} "
          f"{'peak RSS':>10} {'group':>9} {'moved':>8} {'per member':>11}")
    for case in args.case or CASES:
        for assignor in args.assignor or ASSIGNORS:
            r = in_subprocess(case, assignor, args.scale)
            if isinstance(r, str):
                print(f"{case:10} {assignor:19} error: {r}")
                continue
            total = r["fresh_s"] + r["sticky_s"]
            print(f"{case:10} {assignor:19} {r['fresh_s']:8.2f}s {r['sticky_s']:8.2f}s {total:8.2f}s "
                  f"{KAFKA_TIMEOUT[case]:5}s {r['rss_peak_mib']:7.0f} MiB {r['rss_inputs_mib']:5.0f} MiB "
                  f"{r['moved']:8,} {r['min']:>5}-{r['max']:<5}", flush=True)


if __name__ == "__main__":
    main()
