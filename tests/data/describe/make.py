"""Regenerate the `kafka-topics --describe` outputs under tests/data/describe/ with Kafka's own tools.

Every release's `kafka-topics` (`kafka.admin.TopicCommand` up to 3.6, `org.apache.kafka.tools.TopicCommand` from
3.7; `kcheck.reference.kafka_tools` runs the class each release's script runs) describes one cluster state: the
full `--describe` and each health filter the release has (`--under-replicated-partitions`,
`--unavailable-partitions`, and from 2.3 `--under-min-isr-partitions`, `--at-min-isr-partitions`), all on the
same state, so the tests can compare kcheck's verdicts on the full describe with the partitions each filter
listed. Nothing here is written by hand but the state the script sets up.

The releases with `--bootstrap-server` (2.2 and later) describe a KRaft cluster (`kcheck.cluster.local.LocalCluster`,
Kafka 4.4.0; KIP-896's 4.0 brokers still speak every protocol version a 2.1+ client needs): `<release>/`. With
`--zk`, every release with `--zookeeper` (0.10.2 to 2.8) describes a ZooKeeper-mode cluster (`tests/zk_cluster.py`,
Kafka 3.9.1): `<release>/` before 2.2, `<release>-zk/` after (the min-ISR filters are refused there).

The state (brokers 1-4 in racks a, b, c, a; broker 4 stopped with a controlled shutdown, so its replicas leave the
ISR and partitions it alone held lose their leader):

    healthy  RF 3 on 1,2,3                          every partition whole
    orders   RF 3, min.insync.replicas=2 + configs  one whole, two at min ISR (a replica on 4)
    strict   RF 3, min.insync.replicas=3            one under min ISR, one at min ISR
    pairs    RF 2, min.insync.replicas=2            one under min ISR, one at min ISR
    single   RF 1                                   one without a leader (on 4), one at min ISR 1
    moving   RF 2, reassigned towards broker 4      in flight forever (the adding replica is down): one move
                                                    1,2 -> 2,4 and one RF increase 2,3 -> 2,3,4

Run from the repository root, under the shared lock: `flock /work/briefs/kafka.lock .venv/bin/python
tests/data/describe/make.py` (about 5 minutes on 2 cores), then with `--zk` (about 4); `--release 3.9.1`
(repeatable) regenerates only those. Each run writes `<kind>-state.json` (the partitions as the cluster's own client
read them, the live brokers) and `<kind>-brokers.txt` (the racks), which the tests compare with.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLUSTER_RELEASE = "4.4.0"
RACKS = ("a", "b", "c")  # round-robin: 1:a 2:b 3:c 4:a
STOPPED = 4
# One release per minor with --bootstrap-server (the last patch kafka_tools runs), newest last.
KRAFT_RELEASES = ("2.2.2", "2.3.1", "2.4.1", "2.5.1", "2.6.3", "2.7.2", "2.8.2", "3.0.2", "3.1.2", "3.2.3", "3.3.2",
                  "3.4.1", "3.5.2", "3.6.2", "3.7.2", "3.8.1", "3.9.1", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0")
# --zookeeper: the only way before 2.2, there until 2.8 (its own code path, stored as <release>-zk from 2.2 on).
ZK_RELEASES = ("0.10.2.2", "0.11.0.3", "1.0.2", "1.1.1", "2.0.1", "2.1.1", "2.2.2", "2.3.1", "2.4.1", "2.5.1",
               "2.6.3", "2.7.2", "2.8.2")
FILTERS = ("under-replicated-partitions", "unavailable-partitions", "under-min-isr-partitions",
           "at-min-isr-partitions")
# (topic, configs, replica assignment): created by 4.4.0's kafka-topics with --replica-assignment
TOPICS = (
    ("healthy", (), "1:2:3,2:3:1,3:1:2"),
    ("orders", ("min.insync.replicas=2", "retention.ms=604800000", "cleanup.policy=compact"), "1:2:3,4:1:2,2:3:4"),
    ("strict", ("min.insync.replicas=3",), "1:2:4,1:2:3"),
    ("pairs", ("min.insync.replicas=2",), "4:1,2:3"),
    ("single", (), "4,1"),
    ("moving", (), "1:2,2:3"),
)
MOVES = {0: [2, 4], 1: [2, 3, 4]}  # moving's reassignments, started once broker 4 is down


def key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def filters_of(version: str, zookeeper: bool = False) -> tuple[str, ...]:
    """The health filters a release's TopicCommand has: KIP-351 added the min-ISR two in 2.3, for
    --bootstrap-server only ('Not supported with the --zookeeper option')."""
    return FILTERS if key(version) >= (2, 3) and not zookeeper else FILTERS[:2]


def run_tool(version: str, args: list[str]) -> str:
    from kcheck.reference import kafka_tools

    done = kafka_tools.run(version, "kafka-topics", args, timeout=180.0)
    if done.returncode != 0:
        raise SystemExit(f"kafka {version} kafka-topics {' '.join(args)} failed ({done.returncode}): "
                         f"{(done.stdout + done.stderr).strip()[-800:]}")
    return done.stdout


def set_up(bootstrap: str) -> None:
    """Create the topics, stop broker 4, start the moves; wait until the state shows."""
    for name, configs, assignment in TOPICS:
        args = ["--bootstrap-server", bootstrap, "--create", "--topic", name, "--replica-assignment", assignment]
        for c in configs:
            args += ["--config", c]
        run_tool(CLUSTER_RELEASE, args)


def settle(bootstrap: str) -> dict[str, dict[int, object]]:
    """Wait until broker 4 has left every ISR and the moves are in flight; the partition states as read."""
    from kcheck.cluster import admin as cluster_admin
    deadline = time.monotonic() + 60
    while True:
        states = {name: cluster_admin.partition_states(bootstrap, name) for name, _, _ in TOPICS}
        out_of_isr = all(STOPPED not in s.isr or not s.isr for t in states.values() for s in t.values())
        moving = all(states["moving"][p].adding for p in MOVES)
        if out_of_isr and moving:
            return states
        if time.monotonic() > deadline:
            raise SystemExit(f"the state did not settle: {states}")
        time.sleep(1)


def write(release: str, server: str, zookeeper: bool = False) -> None:
    where = HERE / (f"{release}-zk" if zookeeper and key(release) >= (2, 2) else release)
    where.mkdir(exist_ok=True)
    base = ["--zookeeper" if zookeeper else "--bootstrap-server", server]
    (where / "describe.txt").write_text(run_tool(release, [*base, "--describe"]))
    for f in filters_of(release, zookeeper):
        (where / f"{f}.txt").write_text(run_tool(release, [*base, "--describe", f"--{f}"]))
    print(f"{where.name}: written", flush=True)


def kraft(releases: list[str]) -> None:
    from kcheck.cluster import admin as cluster_admin
    from kcheck.cluster.local import LocalCluster

    cluster = LocalCluster(CLUSTER_RELEASE, 4, RACKS).start(120)
    try:
        bootstrap = cluster.bootstrap
        set_up(bootstrap)
        cluster.shutdown(STOPPED)
        live = cluster_admin.live_bootstrap(cluster)
        cluster_admin.reassign(live, "moving", MOVES)
        states = settle(live)
        for release in releases:
            write(release, live)
        # The state every release described, as the admin client read it before and after (it must not move).
        after = settle(live)
        if after != states:
            raise SystemExit(f"the state changed while the tools ran: {states} -> {after}")
        write_state("kraft", f"KRaft, Kafka {CLUSTER_RELEASE}", releases, {
            f"{t}-{p}": {"leader": s.leader, "replicas": s.replicas, "isr": s.isr, "elr": s.elr, "adding": s.adding,
                         "removing": s.removing}
            for t, by_id in sorted(states.items()) for p, s in sorted(by_id.items())})
    finally:
        cluster.stop()


def write_state(kind: str, cluster: str, releases: list[str], parts: dict[str, dict[str, object]]) -> None:
    """<kind>-brokers.txt (racks) and <kind>-state.json: the partitions as read before the tools ran, the live
    brokers, and the releases described so far."""
    (HERE / f"{kind}-brokers.txt").write_text("".join(f"{b}:{RACKS[(b - 1) % len(RACKS)]}\n" for b in range(1, 5)))
    state = HERE / f"{kind}-state.json"
    done = json.loads(state.read_text())["releases"] if state.exists() else []
    lines = ",\n".join(f"  {json.dumps(tp)}: {json.dumps(v)}" for tp, v in sorted(parts.items()))
    state.write_text(
        "{\n"
        f' "cluster": "{cluster}, brokers 1-4 in racks a,b,c,a, broker {STOPPED} stopped",\n'
        f' "live_brokers": {json.dumps([b for b in range(1, 5) if b != STOPPED])},\n'
        f' "releases": {json.dumps(sorted({*done, *releases}, key=key))},\n'
        f' "partitions": {{\n{lines}\n }}\n}}\n')


def zk_state(bootstrap: str) -> dict[str, dict[str, object]]:
    """The partitions as 3.9.1's kafka-topics describes them (the ZooKeeper cluster's own release)."""
    from kcheck.inputs.formats import read_describe

    d = read_describe(run_tool("3.9.1", ["--bootstrap-server", bootstrap, "--describe"]), "3.9.1")
    return {str(p.tp): {"leader": p.leader, "replicas": p.replicas, "isr": p.isr, "elr": [], "adding": p.adding,
                        "removing": p.removing} for p in d.assignment}


def zookeeper(releases: list[str]) -> None:
    """Kafka 3.9.1 brokers in ZooKeeper mode (tests/zk_cluster.py). The ZooKeeper controller refuses to reassign
    onto a dead broker, so broker 4 is paused (still registered) while the moves start, then killed: its session
    ends and it leaves the ISRs; a partition it alone held keeps it as its last ISR member, without a leader."""
    import os
    import signal

    sys.path.insert(0, str(HERE.parent.parent))
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    from zk_cluster import ZkCluster  # tests/, put on the path just above

    # a session long enough to start the moves while broker 4 is paused but still registered
    with ZkCluster(4, RACKS, config={"zookeeper.session.timeout.ms": "15000"}) as cluster:
        live = ",".join(f"127.0.0.1:{cluster.ports[b]}" for b in cluster.ports if b != STOPPED)
        admin = KafkaAdminClient(bootstrap_servers=live)
        if admin.describe_cluster()["controller_id"] == STOPPED:  # the controller must not be the one paused
            cluster.kill(STOPPED)
            cluster.wait_registered({b for b in cluster.ports if b != STOPPED})
            cluster.start_broker(STOPPED)
            cluster.wait_registered(set(cluster.ports))
        set_up(cluster.bootstrap)
        try:
            if admin.describe_cluster()["controller_id"] == STOPPED:
                raise SystemExit(f"broker {STOPPED} is the controller again")
            os.kill(cluster.procs[f"broker-{STOPPED}"].pid, signal.SIGSTOP)
            answer = admin.alter_partition_reassignments({TopicPartition("moving", p): t for p, t in MOVES.items()})
        finally:
            admin.close()
        if any(e is not None for e in answer.values()):
            raise SystemExit(f"the moves did not start: {answer}")
        cluster.kill(STOPPED)
        cluster.wait_registered({b for b in cluster.ports if b != STOPPED})
        deadline = time.monotonic() + 60
        while True:
            states = zk_state(live)
            if all(STOPPED not in s["isr"] or s["isr"] == (STOPPED,) for s in states.values()):
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"the state did not settle: {states}")
            time.sleep(2)
        for release in releases:
            write(release, cluster.zookeeper, zookeeper=True)
        if zk_state(live) != states:
            raise SystemExit("the state changed while the tools ran")
        write_state("zk", "ZooKeeper mode, Kafka 3.9.1", releases, states)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", action="append", help="only these releases (default: every one)")
    parser.add_argument("--zk", action="store_true", help="the ZooKeeper cluster and --zookeeper (default: KRaft)")
    opts = parser.parse_args()
    known = ZK_RELEASES if opts.zk else KRAFT_RELEASES
    wanted = opts.release or list(known)
    unknown = [r for r in wanted if r not in known]
    if unknown:
        sys.exit(f"not a release described on the {'ZooKeeper' if opts.zk else 'KRaft'} cluster: {', '.join(unknown)}")
    (zookeeper if opts.zk else kraft)(wanted)


if __name__ == "__main__":
    main()
