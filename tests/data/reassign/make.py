"""Make the real `kafka-reassign-partitions` outputs in tests/data/reassign/<release>/: each release's own tool run on a
real cluster, with `kafka-topics --describe` of the cluster at each step.

    python tests/data/reassign/make.py [RELEASE ...]    (default: every release below; under the shared Kafka lock)

Releases from 2.6 talk to the brokers with --bootstrap-server (KIP-455's admin API); they run against one Kafka 3.9.1
KRaft cluster (cluster/local.py's LocalCluster: a 4.x broker refuses the requests of clients before 2.1, KIP-896, and
3.9.1 accepts every client here). Releases up to 2.5 write the reassignment into ZooKeeper (`--zookeeper`; 2.5 takes
--bootstrap-server for log directories only): they run against a ZooKeeper-mode 3.9.1 cluster (tests/zk_cluster.py).
Either cluster has brokers 1..4 in racks a, b, c, a. For each release, from a clean slate:

  * topic `orders`: 6 partitions, RF 3 on brokers 1, 2, 3, min.insync.replicas=2, ~1 MB of records;
    topic `events`: 6 partitions, RF 1, four on broker 1, one each on 2 and 3 (broker 4 holds nothing);
  * describe_before.txt: `kafka-topics --describe` (3.9.1's tool, the cluster's own release);
  * generate_events.txt: `--generate` of `events` onto `--broker-list 4` (every partition to broker 4);
    generate_orders.txt: `--generate` of `orders` onto brokers 1..4 (Kafka's random placement: as it came out);
  * execute.txt: `--execute --throttle 1` of plan_orders.json (three partitions swap broker 1 for 4), so the moves
    stay in flight; describe_moving.txt; verify_progress.txt (`--verify`);
  * 2.6 on: list.txt (`--list`), cancel.txt (`--cancel`), verify_cancelled.txt (`--verify` once cancelled: "no
    active reassignment ... rather than");
    up to 2.5 (no --list, no --cancel): execute_again.txt (`--execute` again with a throttle of 100 MB/s: "There is
    an existing assignment running."), verify_orders.txt (`--verify` once the moves completed, "Throttle was
    removed."), verify_mismatch.txt (`--verify` of generate_orders.txt's proposal, plan_mismatch.json, never
    executed: "ERROR: Assigned replicas (..) don't match ..." and "failed" where it differs);
  * execute_events.txt: `--execute` of generate_events.txt's Proposed block (plan_events.json), run to completion;
    verify_complete.txt; describe_after.txt;
  * the topics deleted.

Every file is the tool's stdout as printed (stderr is its log); `tests/test_reassign_outputs.py` reads them all.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BROKER_RELEASE = "3.9.1"  # the cluster's release: accepts the requests of every client from 0.10.2 on
KRAFT_TOOLS = ("4.4.0", "4.3.1", "4.2.2", "4.1.2", "4.0.2", "3.9.1", "3.8.1", "3.7.2", "3.6.2", "3.5.2", "3.4.1",
               "3.3.2", "3.2.3", "3.1.2", "3.0.2", "2.8.2", "2.7.2", "2.6.3")
ZK_TOOLS = ("2.5.1", "2.4.1", "2.3.1", "2.2.2", "2.1.1", "2.0.1", "1.1.1", "1.0.2", "0.11.0.3", "0.10.2.2")
ORDERS = {p: [[1, 2, 3], [2, 3, 1], [3, 1, 2]][p % 3] for p in range(6)}
EVENTS = {0: [1], 1: [1], 2: [1], 3: [1], 4: [2], 5: [3]}
PLAN_ORDERS = {"version": 1, "partitions": [
    {"topic": "orders", "partition": 0, "replicas": [4, 2, 3]},
    {"topic": "orders", "partition": 1, "replicas": [2, 3, 4]},
    {"topic": "orders", "partition": 2, "replicas": [3, 4, 2]}]}


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def tool(version: str, name: str, args: list[str], timeout: float = 120.0) -> str:
    from kcheck.reference import kafka_tools

    done = kafka_tools.run(version, name, args, timeout=timeout)
    if done.returncode != 0 and not done.stdout.strip():
        raise RuntimeError(f"{name} {version} {args} exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def wait_until(check, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(1.0)


def _create_topics(boot: str) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=boot.split(","), request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic("orders", replica_assignments=ORDERS,
                                      topic_configs={"min.insync.replicas": "2"}),
                             NewTopic("events", replica_assignments=EVENTS)])
        wait_until(lambda: {"orders", "events"} <= set(admin.list_topics()), "the topics")
        producer = KafkaProducer(bootstrap_servers=boot.split(","), acks="all", linger_ms=20)
        for i in range(1200):
            producer.send("orders", value=b"x" * 1000, partition=i % 6)
        producer.flush()
        producer.close()
    finally:
        admin.close()


def _delete_topics(boot: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import KafkaError

    tool(BROKER_RELEASE, "kafka-topics", ["--bootstrap-server", boot, "--delete", "--topic", "orders|events"])
    admin = KafkaAdminClient(bootstrap_servers=boot.split(","), request_timeout_ms=30_000)

    def gone() -> bool:  # ZooKeeper mode deletes in the background: gone once the names can be created again
        try:
            admin.create_topics([NewTopic(t, 1, 1) for t in ("orders", "events")], validate_only=True)
        except KafkaError:
            return False
        return True

    try:
        wait_until(gone, "the topics' deletion", 120.0)
    finally:
        admin.close()


def _plan(work: Path, out: dict[str, str], name: str, body: str) -> Path:
    path = work / name
    path.write_text(body + "\n")
    out[name] = body + "\n"
    return path


def _proposed(generated: str) -> str:
    return generated.split("Proposed partition reassignment configuration", 1)[1].strip()


def release_outputs(version: str, boot: str, zookeeper: str | None, work: Path) -> dict[str, str]:
    """Run the scenario with `version`'s tool against the cluster at `boot` (its tool talks to `zookeeper` when
    given); the files to write, by name."""
    _create_topics(boot)
    out: dict[str, str] = {}
    server = ["--zookeeper", zookeeper] if zookeeper else ["--bootstrap-server", boot]
    describe = ["--bootstrap-server", boot, "--describe", "--topic", "orders|events"]

    def reassign(*args: str) -> str:
        return tool(version, "kafka-reassign-partitions", [*server, *args])

    out["describe_before.txt"] = tool(BROKER_RELEASE, "kafka-topics", describe)
    for topic, brokers in (("events", "4"), ("orders", "1,2,3,4")):
        topics = work / f"topics_{topic}.json"
        topics.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
        out[f"generate_{topic}.txt"] = reassign("--generate", "--topics-to-move-json-file", str(topics),
                                                "--broker-list", brokers)
    orders = ["--reassignment-json-file", str(_plan(work, out, "plan_orders.json", json.dumps(PLAN_ORDERS)))]
    out["execute.txt"] = reassign(*orders, "--execute", "--throttle", "1")
    out["describe_moving.txt"] = tool(BROKER_RELEASE, "kafka-topics", describe)
    if zookeeper is None:
        out["verify_progress.txt"] = reassign(*orders, "--verify", "--preserve-throttles")
        out["list.txt"] = reassign("--list")
        out["cancel.txt"] = reassign(*orders, "--cancel")
        out["verify_cancelled.txt"] = reassign(*orders, "--verify")
    else:  # no --cancel: raise the throttle and let the moves complete
        out["verify_progress.txt"] = reassign(*orders, "--verify")
        out["execute_again.txt"] = reassign(*orders, "--execute", "--throttle", "100000000")
        out["verify_orders.txt"] = _verified(reassign, orders, "the orders moves")
        mismatch = _plan(work, out, "plan_mismatch.json", _proposed(out["generate_orders.txt"]))
        out["verify_mismatch.txt"] = reassign("--reassignment-json-file", str(mismatch), "--verify")
    events = ["--reassignment-json-file", str(_plan(work, out, "plan_events.json",
                                                   _proposed(out["generate_events.txt"])))]
    out["execute_events.txt"] = reassign(*events, "--execute")
    out["verify_complete.txt"] = _verified(reassign, events, "the events moves")
    out["describe_after.txt"] = tool(BROKER_RELEASE, "kafka-topics", describe)
    _delete_topics(boot)
    return out


def _verified(reassign, plan: list[str], what: str) -> str:
    """--verify, again until nothing is in progress; its last output."""
    verified: list[str] = []

    def complete() -> bool:
        verified.append(reassign(*plan, "--verify"))
        return "progress" not in verified[-1]

    wait_until(complete, what)
    return verified[-1]


def main(versions: list[str]) -> None:
    from kcheck.cluster.local import LocalCluster

    unknown = [v for v in versions if v not in KRAFT_TOOLS + ZK_TOOLS]
    if unknown:
        raise SystemExit(f"not a release this script runs: {unknown[0]} (known: {', '.join(KRAFT_TOOLS + ZK_TOOLS)})")
    # A fixed folder: --execute and --generate print the replicas' log directories, so the files stay comparable.
    work = Path(tempfile.gettempdir()) / "kcheck-reassign-make"
    work.mkdir()  # refused when present: another run's, not ours to remove
    try:
        kraft = [v for v in versions if v in KRAFT_TOOLS]
        if kraft:
            cluster = LocalCluster(BROKER_RELEASE, 4, ("a", "b", "c"), directory=work / "cluster")
            cluster.start()
            try:
                _write(kraft, cluster.bootstrap, None, work)
            finally:
                cluster.stop()
        old = [v for v in versions if v in ZK_TOOLS]
        if old:
            from zk_cluster import ZkCluster

            with ZkCluster(4, ("a", "b", "c")) as zk:
                _write(old, zk.bootstrap, zk.zookeeper, work)
    finally:
        for name in ("topics_events.json", "topics_orders.json", "plan_orders.json", "plan_events.json",
                     "plan_mismatch.json"):
            (work / name).unlink(missing_ok=True)
        work.rmdir()


def _write(versions: list[str], boot: str, zookeeper: str | None, work: Path) -> None:
    for version in versions:
        started = time.monotonic()
        files = release_outputs(version, boot, zookeeper, work)
        folder = HERE / version
        folder.mkdir(exist_ok=True)
        for name, text in files.items():
            (folder / name).write_text(text)
        print(f"{version}: {len(files)} files in {time.monotonic() - started:.0f} s", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1]))  # tests/: zk_cluster
    main(sys.argv[1:] or [*KRAFT_TOOLS, *ZK_TOOLS])
