"""Kafka's Java beside our reference at Kafka's own large sizes: one huge input per row, both sides, one run.

Run (holds a Kafka JVM: take the machine's Kafka lock around it if you share the machine):

    nice .venv/bin/python bench/bench_side_by_side.py [--rows sticky-equal,...] [--release 4.4.0] [--xmx 5g]
        [--profile DIR]

Rows (every input built once in Python and handed to both sides; Kafka gets it through the bridge):

- `sticky-equal`, `sticky-general`, `coop-equal`, `coop-general`: StickyAssignor / CooperativeStickyAssignor on
  the inputs of Kafka's `AbstractStickyAssignorTest.testLargeAssignmentAndGroupWithUniformSubscription` and
  `...WithNonEqualSubscription` (clients/src/test/.../consumer/internals/), without consumer racks: 500 topics
  `t000`.. of 2,000 partitions (1,000,000), 9 brokers in racks a, b, c, RF 3 (`AbstractPartitionAssignorTest.
  partitionInfos`), 2,000 consumers `c0000`..; general: the last consumer subscribes to `t000` only. Two calls,
  as the test makes them: `fresh` (nobody owns anything), then `rebalance` (every consumer but `c0000` owns what
  the first call gave it, at generation 1, with the user data the test's `buildSubscriptionV2Above` sends).
- `uniform-homogeneous`, `uniform-heterogeneous`: the KIP-848 server-side UniformAssignor at the same size, with
  the members of Kafka's `jmh-benchmarks` `ServerSideAssignorBenchmark` (FULL assignment, no racks): 2,000
  members `member0`.. over 500 topics `topic-0`.. of 2,000 partitions; heterogeneous: its 5 buckets (members in
  5 runs of 400, each subscribing to its run of 100 topics). Members in the coordinator's HashMap order.
- `striped`: the KRaft controller's StripedReplicaPlacer (`metadata/.../placement/StripedReplicaPlacer.java`)
  placing one topic of 200,000 partitions, RF 3, on 60 unfenced brokers in 3 racks, `new Random(42)`.
- `storage`: a 1 GiB log appended through real `LogSegment`s (kafka-storage, harness `SEG_LOG`: files in a
  temporary folder, rolled as `UnifiedLog.maybeRoll` / `LocalLog.roll` do) and through our `log_segment`
  reference: topic defaults (segment.bytes 1 GiB, index.interval.bytes 4096, segment.index.bytes 10 MiB), one
  16-record batch of 1,000-byte values per append (about 66,000 appends), then 1,000 offsets looked up.
  Compared whole: segments, sizes, every offset and time index entry, the lookups. Kafka's timed part is the
  roll decisions and `LogSegment.append` (writing the bytes to the page cache, indexing); building each
  batch's MemoryRecords is not timed. Our reference computes sizes and index entries, it writes no bytes.

Timed: Kafka, inside the JVM, only the call (`assign(Cluster, GroupSubscription)`, `assign(GroupSpec,
SubscribedTopicDescriber)`, `place(PlacementSpec, ClusterDescriber)`), not the decoding of the request or the
encoding of the answer (harness `KcheckTimer`): its thread's CPU time plus the collectors' pause time (the
bridge runs SerialGC, one thread, as our Python is), and, for reference, the wall time. Ours: the CPU time
(`time.process_time`) of the reference's call on the already-built input. ratio = ours / Kafka. Each side first
runs a warm-up input a tenth of the size (the JIT's and our caches' first use are not timed).

Compared whole: the assignors' results member by member, each member's partition list in order (client) or its
topic -> partition set (server); the placement partition by partition, replica lists in order.

Peak RSS: each process's VmHWM over the row (reset before it through /proc/PID/clear_refs): for Python that
includes building the input, encoding it and parsing Kafka's answer; for the JVM, decoding and encoding.
`--profile DIR` writes a cProfile of each reference call to DIR/<row>-<call>.prof (and prints its top lines).

Asserts nothing; prints one table. Exit 1 when an output differs.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import pstats
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kcheck.model import Broker, PartitionInfo, Subscription
from kcheck.reference import kafka_storage as ks
from kcheck.reference.assignors import server
from kcheck.reference.assignors.registry import ASSIGNORS, topic_id_for
from kcheck.reference.assignors.sticky import encode_cooperative_user_data, serialize_topic_partition_assignment
from kcheck.reference.java import JavaRandom
from kcheck.reference.kafka_bridge import (
    JavaException,
    KafkaBridge,
    KafkaBridgeError,
    StripedRequest,
    _encode_striped,
    _parse_striped,
)
from kcheck.reference.kafka_client_assignors import CLIENT_ASSIGNOR_CLASSES, encode_request, parse_answer
from kcheck.reference.kafka_group_assignors import GROUP_ASSIGNOR_CLASSES
from kcheck.reference.kafka_group_assignors import encode_request as encode_group_request
from kcheck.reference.kafka_group_assignors import parse_answer as parse_group_answer
from kcheck.reference.log_segment import Append, Batch, Record, SegmentConfig
from kcheck.reference.striped import PlacementSpec, StaticCluster, StripedReplicaPlacer

ROWS = ("sticky-equal", "sticky-general", "coop-equal", "coop-general", "uniform-homogeneous",
        "uniform-heterogeneous", "striped", "storage")


@dataclass
class Line:
    row: str
    size: str
    kafka_s: float  # thread CPU + GC pauses inside the call
    kafka_gc_s: float  # of which GC pauses
    kafka_wall_s: float
    ours_s: float
    equal: bool
    kafka_rss_mib: float | None
    ours_rss_mib: float | None


# --- measuring -------------------------------------------------------------------------------------------


def _reset_peak(pid: int) -> None:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        pass


def _peak_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def kafka_timed(bridge: KafkaBridge, line: str) -> tuple[str, float, float, float]:
    """Kafka's answer to `line`; its CPU + GC, GC and wall seconds inside the call (harness `TIME`)."""
    answer, timing = bridge.roundtrip([line, "TIME"])
    _, wall, cpu, gc_ms = timing.split()
    return answer, int(cpu) / 1e9 + int(gc_ms) / 1e3, int(gc_ms) / 1e3, int(wall) / 1e9


class Ours:
    """Runs the reference's call, CPU-timed, optionally under cProfile."""

    def __init__(self, profile_dir: Path | None) -> None:
        self.profile_dir = profile_dir

    def __call__(self, name: str, fn: Callable[[], object]) -> tuple[object, float]:
        if self.profile_dir is None:
            t = time.process_time()
            out = fn()
            return out, time.process_time() - t
        prof = cProfile.Profile()
        t = time.process_time()
        out = prof.runcall(fn)
        seconds = time.process_time() - t
        self.profile_dir.mkdir(parents=True, exist_ok=True)
        prof.dump_stats(self.profile_dir / f"{name}.prof")
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(12)
        print(f"--- cProfile of {name} (under the profiler: {seconds:.1f} s CPU), by own time", flush=True)
        print("\n".join(text.getvalue().splitlines()[5:]), flush=True)
        return out, seconds


# --- client-side sticky assignors (AbstractStickyAssignorTest's large tests) ----------------------------


def _canonical(prefix: str, i: int, n: int) -> str:
    return f"{prefix}{i:0{len(str(n))}d}"  # the test's getCanonicalName: zero-padded to the digits of n


def client_metadata(topics: int, partitions: int) -> tuple[list[str], dict[str, list[PartitionInfo]]]:
    """AbstractPartitionAssignorTest.partitionInfos with 3 broker racks and RF 3 (9 brokers), topic i rotated by i."""
    brokers = [Broker(i, "abc"[i % 3]) for i in range(9)]
    rotations = [tuple(brokers[(k + j) % 9] for j in range(3)) for k in range(9)]
    names = [_canonical("t", i, topics) for i in range(topics)]
    metadata = {}
    for ti, t in enumerate(names):
        metadata[t] = [PartitionInfo(t, p, rotations[(p + ti) % 9][0], rotations[(p + ti) % 9])
                       for p in range(partitions)]
    return names, metadata


def client_rows(bridge: KafkaBridge, row: str, ours: Ours, scale: float) -> list[Line]:
    name = "sticky" if row.startswith("sticky") else "cooperative-sticky"
    general = row.endswith("general")
    n_topics, n_partitions, n_consumers = (max(1, int(500 * scale)), 2000, max(2, int(2000 * scale)))
    names, metadata = client_metadata(n_topics, n_partitions)
    consumers = [_canonical("c", i, n_consumers) for i in range(n_consumers)]

    def topics_of(i: int) -> list[str]:
        return names[:1] if general and i == n_consumers - 1 else names

    subs = {c: Subscription(topics_of(i)) for i, c in enumerate(consumers)}
    size = f"{n_topics * n_partitions:,} partitions x {n_consumers:,} consumers"
    cls = CLIENT_ASSIGNOR_CLASSES[name]
    fresh, first = _client_call(bridge, f"{row} fresh", cls, name, metadata, subs, ours, size)
    # The test's second call: every consumer but the first owns what Kafka's first call gave it, at generation 1,
    # with the user data its buildSubscriptionV2Above sends (StickyAssignor's serialized MemberData;
    # CooperativeStickyAssignor's subscriptionUserData of a fresh instance: generation -1).
    subs = {c: subs[c] if i == 0 else Subscription(
        topics_of(i),
        serialize_topic_partition_assignment(first[c], 1) if name == "sticky" else encode_cooperative_user_data(-1),
        first[c], 1) for i, c in enumerate(consumers)}
    rebalance, _ = _client_call(bridge, f"{row} rebalance", cls, name, metadata, subs, ours, size)
    return [fresh, rebalance]


def _client_call(bridge, label, cls, name, metadata, subs, ours, size) -> tuple[Line, dict]:
    _reset_peak(os.getpid())
    _reset_peak(bridge._proc.pid)  # type: ignore[union-attr]
    answer, kafka_s, kafka_gc, kafka_wall = kafka_timed(bridge, encode_request(cls, metadata, subs))
    kafka = parse_answer(answer)
    if isinstance(kafka, JavaException):
        raise SystemExit(f"{label}: Kafka threw {kafka}")
    gc.collect()
    mine, ours_s = ours(label.replace(" ", "-"), lambda: ASSIGNORS[name].factory().assign(metadata, subs))
    equal = isinstance(mine, dict) and mine == kafka and list(mine) == list(kafka)
    return Line(label, size, kafka_s, kafka_gc, kafka_wall, ours_s, equal, _peak_mib(bridge._proc.pid),  # type: ignore
                _peak_mib(os.getpid())), kafka


# --- server-side uniform assignor (ServerSideAssignorBenchmark's members) -------------------------------


def uniform_row(bridge: KafkaBridge, row: str, ours: Ours, scale: float) -> list[Line]:
    n_topics, n_partitions, n_members = max(5, int(500 * scale)), 2000, max(5, int(2000 * scale))
    ids = [topic_id_for(f"topic-{i}") for i in range(n_topics)]
    buckets = 5
    per_topics, per_members = -(-n_topics // buckets), -(-n_members // buckets)
    members = {}
    for i in range(n_members):
        if row.endswith("homogeneous") and not row.endswith("heterogeneous"):
            subscribed = ids
        else:
            b = i // per_members
            subscribed = ids[b * per_topics:(b + 1) * per_topics]
        members[f"member{i}"] = server.MemberSubscriptionSpec(tuple(subscribed))
    spec = server.GroupSpec(server.hash_map_order(members))  # the coordinator's HashMap of members
    describer = server.SubscribedTopicDescriber({t: n_partitions for t in ids})
    _reset_peak(os.getpid())
    _reset_peak(bridge._proc.pid)  # type: ignore[union-attr]
    answer, kafka_s, kafka_gc, kafka_wall = kafka_timed(
        bridge, encode_group_request(GROUP_ASSIGNOR_CLASSES["uniform"], spec, describer))
    kafka = parse_group_answer(answer)
    if isinstance(kafka, JavaException):
        raise SystemExit(f"{row}: Kafka threw {kafka}")
    gc.collect()
    mine, ours_s = ours(row, lambda: server.UniformAssignor(bridge.version).assign(spec, describer))
    equal = isinstance(mine, dict) and {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in mine.items()} == kafka
    size = f"{n_topics * n_partitions:,} partitions x {n_members:,} members"
    return [Line(row, size, kafka_s, kafka_gc, kafka_wall, ours_s, equal, _peak_mib(bridge._proc.pid),  # type: ignore
                 _peak_mib(os.getpid()))]


# --- the controller's striped placer -------------------------------------------------------------------


def striped_row(bridge: KafkaBridge, row: str, ours: Ours, scale: float) -> list[Line]:
    n_partitions, n_brokers, rf, seed = max(1, int(200_000 * scale)), 60, 3, 42
    brokers = tuple(Broker(b, f"rack{b % 3}") for b in range(n_brokers))
    spec = PlacementSpec("t", 0, n_partitions, rf)
    _reset_peak(os.getpid())
    _reset_peak(bridge._proc.pid)  # type: ignore[union-attr]
    answer, kafka_s, kafka_gc, kafka_wall = kafka_timed(bridge, _encode_striped(StripedRequest(brokers, (spec,), seed)))
    kafka = _parse_striped(answer)
    if isinstance(kafka, JavaException):
        raise SystemExit(f"{row}: Kafka threw {kafka}")
    gc.collect()
    mine, ours_s = ours(row, lambda: StripedReplicaPlacer(JavaRandom(seed)).place(spec, StaticCluster(brokers)))
    equal = mine.replicas() == kafka[0]  # type: ignore[attr-defined]
    size = f"{n_partitions:,} partitions, {n_brokers} brokers, 3 racks, RF {rf}"
    return [Line(row, size, kafka_s, kafka_gc, kafka_wall, ours_s, equal, _peak_mib(bridge._proc.pid),  # type: ignore
                 _peak_mib(os.getpid()))]


# --- the storage reference on a 1 GiB log -------------------------------------------------------------


def storage_row(bridge: KafkaBridge, row: str, ours: Ours, scale: float) -> list[Line]:
    total, per_batch, value = int((1 << 30) * scale), 16, 1000
    created = 1_700_000_000_000
    appends, offset, size = [], 0, 0
    while size < total:  # one 16-record batch of 1,000-byte values per append, 1 ms apart, keys null
        now = created + len(appends)
        records = tuple(Record(d, now, -1, value) for d in range(per_batch))
        appends.append(Append(now, (Batch(offset, records),)))
        size += Batch(offset, records).size  # a copy: the timed call computes (and caches) its batches' sizes
        offset += per_batch
    queries = tuple(range(0, offset, max(1, offset // 1000)))  # the index lookups and translateOffset
    case = ks.SegmentCase(SegmentConfig(), created, tuple(appends), queries)
    _reset_peak(os.getpid())
    _reset_peak(bridge._proc.pid)  # type: ignore[union-attr]
    answer, kafka_s, kafka_gc, kafka_wall = kafka_timed(bridge, ks.encode_case(case))
    kafka = ks.parse_outcome(answer)
    gc.collect()
    mine, ours_s = ours(row, lambda: ks.reference_outcome(case, bridge.version))
    size_text = f"{size / (1 << 30):.2f} GiB, {len(appends):,} appends, {len(kafka.segments)} segment(s)"
    return [Line(row, size_text, kafka_s, kafka_gc, kafka_wall, ours_s, mine == kafka, _peak_mib(bridge._proc.pid),
                 _peak_mib(os.getpid()))]


RUNNERS = {"sticky-equal": client_rows, "sticky-general": client_rows, "coop-equal": client_rows,
           "coop-general": client_rows, "uniform-homogeneous": uniform_row, "uniform-heterogeneous": uniform_row,
           "striped": striped_row, "storage": storage_row}


def _mib(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def run(rows: list[str], release: str, options: tuple[str, ...], ours: Ours, scale: float) -> list[Line]:
    out: list[Line] = []
    with KafkaBridge(release, java_options=options, timeout=1800) as bridge:
        print(f"Kafka {bridge.kafka_version} (JVM {' '.join(options)}); load average "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        for row in rows:
            RUNNERS[row](bridge, row, Ours(None), scale / 10)  # warm-up: a tenth of the size, untimed
            for line in RUNNERS[row](bridge, row, ours, scale):
                out.append(line)
                print(f"  {line.row}: Kafka {line.kafka_s:.2f} s, ours {line.ours_s:.2f} s, "
                      f"{'equal' if line.equal else 'DIFFERENT'}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default=",".join(ROWS), help="comma-separated, of: " + ", ".join(ROWS))
    p.add_argument("--release", default="4.4.0", help="Kafka release (default 4.4.0)")
    p.add_argument("--xmx", default="5g", help="the bridge JVM's -Xmx (default 5g)")
    p.add_argument("--scale", type=float, default=1.0, help="fraction of Kafka's sizes (default 1: Kafka's own)")
    p.add_argument("--profile", type=Path, help="cProfile each reference call into this folder")
    a = p.parse_args(argv)
    rows = [r for r in a.rows.split(",") if r]
    bad = [r for r in rows if r not in RUNNERS]
    if bad or not rows:
        print(f"bench_side_by_side: --rows: unknown row {bad[0] if bad else '(none)'!r} "
              f"(expected some of {', '.join(ROWS)})", file=sys.stderr)
        return 2
    if not 0 < a.scale <= 1:
        print("bench_side_by_side: --scale: expected a number in (0, 1]", file=sys.stderr)
        return 2
    options = ("-XX:+UseSerialGC", "-XX:-OmitStackTraceInFastThrow", f"-Xmx{a.xmx}")
    try:
        out = run(rows, a.release, options, Ours(a.profile), a.scale)
    except KafkaBridgeError as e:  # an unknown release, a JVM that does not start (e.g. a bad --xmx)
        print(f"bench_side_by_side: --release {a.release}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # the bridge's JVM is closed on the way out
        print("bench_side_by_side: interrupted", file=sys.stderr)
        return 130
    print(f"\nload average at the end {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'row':34} {'size':48} {'Kafka s':>8} {'(GC)':>6} {'(wall)':>7} {'ours s':>8} {'ratio':>6} {'equal':>5} "
          f"{'JVM MiB':>8} {'ours MiB':>8}")
    for x in out:
        print(f"{x.row:34} {x.size:48} {x.kafka_s:8.2f} {x.kafka_gc_s:6.2f} {x.kafka_wall_s:7.2f} {x.ours_s:8.2f} "
              f"{x.ours_s / x.kafka_s:6.1f} {'yes' if x.equal else 'NO':>5} {_mib(x.kafka_rss_mib):>8} "
              f"{_mib(x.ours_rss_mib):>8}")
    return 0 if all(x.equal for x in out) else 1


if __name__ == "__main__":
    sys.exit(main())
