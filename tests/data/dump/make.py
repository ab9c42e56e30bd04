"""Make the real dumps in this folder: Kafka 4.4.0's own tools run on a real cluster's log directories.

Run once (about two minutes on 2 cores; it starts a 3-broker KRaft cluster with `kcheck.cluster.local.LocalCluster`
and stops it):  python tests/data/dump/make.py [RELEASE]   (default 4.4.0: the dumps kept here are 4.4.0's)

What it does, so the dumps are Kafka's and nothing else:
  * topic `plain` (cleanup.policy=delete) and topic `compacted` (cleanup.policy=compact, dirty ratio 0.01), one
    partition each on brokers 1, 2, 3, segment.ms=1500 so each burst of produces lands in a new segment,
    index.interval.bytes=64 so the offset and time indexes get several sparse entries per segment;
  * records with keys, a null key, tombstones (null values), an empty value, a value with a line break, a key
    with spaces and ' payload: ' in it, a non-ASCII key, headers, one gzip-compressed burst and one committed
    transaction (its COMMIT marker is a control batch);
  * a consumer group that commits offsets and is then deleted (its offsets become tombstones in
    __consumer_offsets, which --offsets-decoder prints as <DELETE>);
  * `kafka-log-dirs.sh --describe` (org.apache.kafka.tools.LogDirsCommand) while the cluster runs, after the
    cleaner has cleaned `compacted` on broker 1;
  * the cluster stopped cleanly, then `kafka-dump-log.sh` (org.apache.kafka.tools.DumpLogSegments) on broker 1's
    partition folders, run from the cluster's folder so the dumps name files as broker-1/data/<partition>/<file>;
  * broker 1's plain-0 and compacted-0 files kept in segments/ (a few KB);
  * two damaged copies of those files dumped by Kafka's tool (`corrupt_dumps`): swapped-index.txt, sanity-failure.txt;
  * then every release's own tool on the kept files, in every mode (make_releases.py, which writes releases/).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEGMENTS = HERE / "segments"  # broker 1's plain-0 and compacted-0 files, as the dumps read them
TOPIC_CONFIG = {"segment.ms": "1500", "index.interval.bytes": "64"}
# What is sent to `plain`, burst by burst (each burst its own segment): (producer, (key, value) records, records per
# batch). The first record carries HEADERS. A None value is a tombstone.
PLAIN: list[tuple[str, list[tuple[str | None, str | None]], int]] = [
    ("plain", [("k0", "v0"), ("k1", "v1"), ("k2", "v2"), (None, "no key"), ("k0", "v0b")], 2),
    ("plain", [("k1", None), ("k3", ""), ("key with spaces payload: x", "value: y"), ("clé-ü", "välue ✓")], 2),
    ("gzip", [(f"g{i}", f"gzipped {i}") for i in range(6)], 6),
    ("plain", [("k4", "line one\nline two"), ("k2", None), ("k5", "x" * 300)], 2),
    ("txn", [("t0", "in a transaction"), ("t1", "also")], 2),
    ("plain", [("k6", "last"), ("k7", "after"), ("k0", "v0c")], 2),
]
HEADERS = [("trace", b"1"), ("origin", b"make")]
COMMITS = (3, 7, 12)  # the offsets group dump-group commits for plain-0, before the group is deleted
# What is sent to `compacted`: four rounds over five keys, then a tombstone for c1 and new values for c2 and c3.
COMPACTED: list[list[tuple[str, str | None]]] = (
    [[(f"c{i}", f"c{i}-r{round_}") for i in range(5)] for round_ in range(4)]
    + [[("c1", None), ("c2", "c2-final")], [("c3", "c3-final")]])


def main(version: str = "4.4.0") -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    from kcheck.cluster.local import LocalCluster
    from kcheck.reference.kafka_jars import resolve_server

    classpath = resolve_server(version).classpath
    work = Path(tempfile.mkdtemp(prefix="kcheck-dump-"))
    cluster = LocalCluster(version, 3, ("a", "b", "c"), directory=work / "cluster",
                           config={"log.cleaner.backoff.ms": "500"})
    cluster.start()
    try:
        boot = cluster.bootstrap.split(",")
        admin = KafkaAdminClient(bootstrap_servers=boot, request_timeout_ms=30_000)
        admin.create_topics([
            NewTopic("plain", replica_assignments={0: [1, 2, 3]}, topic_configs=TOPIC_CONFIG),
            NewTopic("compacted", replica_assignments={0: [1, 2, 3]},
                     topic_configs={**TOPIC_CONFIG, "cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
                                    "delete.retention.ms": "86400000", "min.compaction.lag.ms": "0"})])
        time.sleep(2)
        plain = KafkaProducer(bootstrap_servers=boot, acks="all", linger_ms=0)
        gzip = KafkaProducer(bootstrap_servers=boot, acks="all", linger_ms=0, compression_type="gzip")

        def burst(producer: KafkaProducer, topic: str, records: Sequence[tuple[str | None, str | None]],
                  per_batch: int = 2, headers: bool = False) -> None:
            for i, (k, v) in enumerate(records):
                producer.send(topic, key=None if k is None else k.encode(), value=None if v is None else v.encode(),
                              headers=HEADERS if headers and i == 0 else None)
                if i % per_batch == per_batch - 1:
                    producer.flush()
            producer.flush()
            time.sleep(2.0)  # past segment.ms: the next append rolls a new segment

        producers = {"plain": plain, "gzip": gzip}
        for producer, records, per_batch in PLAIN:
            if producer == "txn":  # a committed transaction: its records, then a COMMIT marker (a control batch)
                txn = KafkaProducer(bootstrap_servers=boot, acks="all", linger_ms=0, transactional_id="dump-txn")
                txn.init_transactions()
                txn.begin_transaction()
                burst(txn, "plain", records, per_batch)
                txn.commit_transaction()
                txn.close()
            else:
                burst(producers[producer], "plain", records, per_batch, headers=records is PLAIN[0][1])
        for records in COMPACTED:
            burst(plain, "compacted", records)
        plain.close()
        gzip.close()

        commit_then_delete_group(boot, "plain", "dump-group", COMMITS)
        admin.close()

        checkpoint = work / "cluster" / "broker-1" / "data" / "cleaner-offset-checkpoint"
        deadline = time.monotonic() + 90
        while "compacted 0 " not in (checkpoint.read_text() if checkpoint.exists() else ""):
            if time.monotonic() > deadline:
                raise SystemExit("the cleaner did not clean `compacted` on broker 1 within 90 s")
            time.sleep(1)
        time.sleep(2)

        log_dirs = subprocess.run(
            ["java", "-cp", classpath, "org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server",
             cluster.bootstrap, "--describe", "--topic-list", "plain,compacted"],
            capture_output=True, text=True, timeout=120, check=True)
        (HERE / "log-dirs.txt").write_text(log_dirs.stdout, encoding="utf-8")
        cluster.stop(remove=False)

        os.chdir(work / "cluster")

        def files(partition: str, *suffixes: str) -> list[str]:
            found = sorted(glob.glob(f"broker-1/data/{partition}/*.log"))
            return [f[: -len(".log")] + s for f in found for s in suffixes]

        def dump(name: str, paths: list[str], *options: str) -> None:
            out = subprocess.run(["java", "-cp", classpath, "org.apache.kafka.tools.DumpLogSegments", *options,
                                  "--files", ",".join(paths)], capture_output=True, text=True, timeout=120)
            if out.returncode != 0:
                raise SystemExit(f"{name}: {out.stderr[-2000:]}")
            (HERE / name).write_text(out.stdout + out.stderr, encoding="utf-8")

        dump("plain.txt", files("plain-0", ".log", ".index", ".timeindex"), "--deep-iteration", "--print-data-log")
        dump("plain.records.txt", files("plain-0", ".log"), "--deep-iteration")
        dump("plain.shallow.txt", files("plain-0", ".log"))
        dump("plain.sanity.txt", files("plain-0", ".index", ".timeindex"), "--index-sanity-check")
        dump("compacted.txt", files("compacted-0", ".log", ".index", ".timeindex"), "--print-data-log")
        offsets = [p for p in sorted(glob.glob("broker-1/data/__consumer_offsets-*/*.log")) if os.path.getsize(p)]
        dump("offsets.txt", offsets, "--offsets-decoder")
        # the segment files themselves, for the other releases' tools (and tests that run them)
        for partition in ("plain-0", "compacted-0"):  # (make_releases.py keeps its live segments beside them)
            shutil.rmtree(SEGMENTS / partition, ignore_errors=True)
            (SEGMENTS / partition).mkdir(parents=True)
            for f in files(partition, ".log", ".index", ".timeindex"):
                shutil.copyfile(f, SEGMENTS / partition / os.path.basename(f))
    finally:
        os.chdir(HERE)
        cluster.stop(remove=False)
        shutil.rmtree(work, ignore_errors=True)
    corrupt_dumps(version)
    sys.path.insert(0, str(HERE))
    import make_releases

    make_releases.dump_all()
    print(f"wrote the dumps of Kafka {version} (and every release's tool's, releases/) to {HERE}")


def commit_then_delete_group(boot: Sequence[str], topic: str, group: str, offsets: Sequence[int]) -> None:
    """A consumer group commits `offsets` for partition 0 of `topic`, one by one, then is deleted: its commits and then
    their tombstones land in __consumer_offsets."""
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.admin import KafkaAdminClient

    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=list(boot), group_id=group, enable_auto_commit=False)
    consumer.assign([tp])
    for offset in offsets:
        consumer.commit({tp: OffsetAndMetadata(offset, "", -1)})
    consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=list(boot), request_timeout_ms=30_000)
    admin.delete_groups([group])
    admin.close()


def dump_command(release: str) -> list[str]:
    """`kafka-dump-log.sh` of a release, as its script runs it (kcheck.reference.kafka_tools)."""
    from kcheck.reference import kafka_tools

    return kafka_tools.command(kafka_tools.resolve_tools(release), "kafka-dump-log", [])


def corrupt_dumps(version: str = "4.4.0") -> None:
    """Kafka's tool on two damaged copies of the kept plain-0 files (a temporary folder):
    swapped-index.txt: segment 20's offset index with its two entries swapped, which Kafka's --index-sanity-check
    passes (it checks the last entry and the file's length only), then the segment and that index dumped;
    sanity-failure.txt: segment 5's time index with 3 stray bytes, which --index-sanity-check fails (an exception)."""
    import struct

    work = Path(tempfile.mkdtemp(prefix="kcheck-dump-corrupt-"))
    try:
        shutil.copytree(SEGMENTS / "plain-0", work / "plain-0")
        index = work / "plain-0" / "00000000000000000020.index"
        data = index.read_bytes()
        entries = [data[i:i + 8] for i in range(0, len(data), 8)]
        assert len(entries) == 2 and struct.unpack(">i", entries[0][:4]) < struct.unpack(">i", entries[1][:4])
        index.write_bytes(entries[1] + entries[0])
        with open(work / "plain-0" / "00000000000000000005.timeindex", "ab") as f:
            f.write(b"\0\0\0")

        def run(*args: str) -> str:
            out = subprocess.run([*dump_command(version), *args], capture_output=True, text=True, timeout=120,
                                 cwd=work)
            return out.stdout + out.stderr

        seg20 = "plain-0/00000000000000000020"
        (HERE / "swapped-index.txt").write_text(
            run("--index-sanity-check", "--files", f"{seg20}.index")
            + run("--print-data-log", "--files", f"{seg20}.log,{seg20}.index"), encoding="utf-8")
        seg5 = "plain-0/00000000000000000005"
        (HERE / "sanity-failure.txt").write_text(
            run("--index-sanity-check", "--files", f"{seg5}.index,{seg5}.timeindex"), encoding="utf-8")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(*sys.argv[1:2])
