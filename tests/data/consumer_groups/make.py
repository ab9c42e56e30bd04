"""Make the real `kafka-consumer-groups --describe` outputs in this folder: every release's tool on real groups.

Run (about eight minutes on 2 cores; it starts two one-broker KRaft clusters with cluster/local.py's LocalCluster, one
after the other, and stops them):

    python tests/data/consumer_groups/make.py [3.9.1|4.4.0] [--tools 4.4.0,...]

What it sets up, so the outputs are Kafka's and the ground truth is what was done, not what a tool printed:

  * topics `orders` (6 partitions, 10 records each), `payments` (3, 20 each), `audit` (3, 5 each);
  * per group, its offsets committed first by a standalone consumer (`assign` + `commit`, no membership: the group
    is empty then), then its members started: kafka-python consumers (`members.py`) for the classic protocol,
    Kafka's own Java consumer (`GroupMembers.java`, compiled against the cluster release's kafka-clients) for
    KIP-848's consumer protocol and for Kafka's CooperativeStickyAssignor. Members never commit, so the lag
    stays what was set up;
  * on Kafka 3.9.1 (classic groups; the tools of 0.10.2 to 3.9 run against it: 4.x brokers refuse clients older
    than 2.1's protocol, KIP-896): `billing` (range, 4 members on two 3-partition topics: range leaves the last
    member nothing), `shipping` (roundrobin), `search` (cooperative-sticky, two static members and a dynamic one),
    `archive` (offsets, no members), `reports` (range, 2 members, one killed with SIGKILL: it stays a member until
    its session times out), `misassigned` (a custom assignor that gives one partition to two members and one to
    nobody), `stuck` (a member paused with SIGSTOP, then a second one joins: the group waits in PreparingRebalance);
  * on Kafka 4.4.0 (the tools of 3.9.1, 4.0.2 and 4.4.0): `checkout` (consumer protocol, uniform assignor),
    `ledger` (consumer protocol, server range assignor), `legacy` (classic, Java CooperativeStickyAssignor,
    static members), `idle` (offsets, no members), `gone` (consumer protocol, one member's JVM killed once
    assigned), `stalled` (consumer protocol, a second member paused with SIGSTOP as soon as it has joined: it never
    takes the partition the first one revokes for it, and the group stays in reconciliation);
  * every release's tool run in every mode it has (`--describe` alone, `--offsets`, `--members`,
    `--members --verbose`, `--state`, and from 4.0 `--state --verbose` and `--offsets --verbose`), per group
    before 2.3 (no `--all-groups`), with `--all-groups` and for one group from 2.3 on, and for a group that does
    not exist (`nosuch`); stdout and stderr in one
    pipe, as a terminal shows them (the tool's "has no active members" and "is rebalancing" lines are on
    stderr), with the logging the release's own `bin/kafka-run-class.sh` sets up for tools (WARN, on stderr).

Written: `<tool release>@<cluster release>/<mode>.<group or all>.txt`, `index.json` (each file: the tool, the
cluster, the arguments, the exit status) and `truth.<cluster release>.json` (topics, log-end offsets, and per
group: protocol, assignor, subscribed topics, committed offsets, the state set up, each member's client id,
member id, instance id, its own view of its assignment, and whether it was alive, killed or paused). The script
fails if any member's assignment changed while the tools ran. `kept/` holds outputs of earlier runs that a new run
does not reproduce (see its README); the script leaves it alone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TOPICS = {"orders": (6, 10), "payments": (3, 20), "audit": (3, 5)}  # name -> (partitions, records per partition)
MISSING = "nosuch"  # a group never set up


@dataclass
class GroupSpec:
    name: str
    runner: str  # "py" (members.py), "java" (GroupMembers.java) or "" (no members)
    protocol: str  # "classic" or "consumer"
    assignor: str  # as configured: kafka-python's name, a Java class, or a KIP-848 server assignor
    topics: tuple[str, ...] = ()
    members: int = 0
    committed: dict[str, int] = field(default_factory=dict)
    instance: str | None = None  # group.instance.id prefix: static members
    static: int | None = None  # how many members are static (default: all, when `instance` is given)
    fate: str = ""  # "kill", "pause" (classic) or "stall" (KIP-848): see start_group
    state: str = "Stable"  # the state this sets up


def _each(topic: str, offset: int) -> dict[str, int]:
    return {f"{topic}-{p}": offset for p in range(TOPICS[topic][0])}


CLUSTERS: dict[str, tuple[tuple[str, ...], list[GroupSpec]]] = {
    "3.9.1": (("0.10.2.2", "1.1.1", "2.0.1", "2.6.3", "3.7.2", "3.9.1"), [
        GroupSpec("billing", "py", "classic", "range", ("payments", "audit"), 4,
                  {"payments-0": 20, "payments-1": 15, "payments-2": 20, "audit-0": 5, "audit-1": 2, "audit-2": 0}),
        GroupSpec("shipping", "py", "classic", "roundrobin", ("orders",), 3, {f"orders-{p}": 10 - p for p in range(6)}),
        GroupSpec("search", "py", "classic", "cooperative-sticky", ("orders", "payments"), 3,
                  {**_each("orders", 10), **_each("payments", 18)}, instance="search-host", static=2),
        GroupSpec("archive", "", "classic", "", (), 0, {**_each("orders", 10), "payments-0": 7}, state="Empty"),
        GroupSpec("reports", "py", "classic", "range", ("orders",), 2, _each("orders", 4), fate="kill"),
        GroupSpec("misassigned", "py", "classic", "misassign", ("payments",), 2, {"payments-0": 20, "payments-2": 11}),
        GroupSpec("stuck", "py", "classic", "range", ("audit",), 2, _each("audit", 1), fate="pause",
                  state="PreparingRebalance"),
    ]),
    "4.4.0": (("3.9.1", "4.0.2", "4.4.0"), [
        GroupSpec("checkout", "java", "consumer", "uniform", ("orders", "payments"), 3, _each("orders", 5)),
        GroupSpec("ledger", "java", "consumer", "range", ("orders", "payments"), 2, _each("payments", 20)),
        GroupSpec("legacy", "java", "classic", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
                  ("orders",), 2, _each("orders", 8), instance="legacy-host"),
        GroupSpec("idle", "", "classic", "", (), 0, _each("audit", 5), state="Empty"),
        GroupSpec("gone", "java", "consumer", "uniform", ("audit",), 2, _each("audit", 3), fate="kill"),
        GroupSpec("stalled", "java", "consumer", "uniform", ("audit",), 2, _each("audit", 2), fate="stall",
                  state="Reconciling"),
    ]),
}
# Broker settings: a killed KIP-848 member stays in its group for the whole run (the broker sets its session), and
# members heartbeat every second (default 5 s), so a reconciliation is over in seconds.
CLUSTER_CONFIG = {"4.4.0": {"group.consumer.session.timeout.ms": "600000",
                            "group.consumer.max.session.timeout.ms": "600000",
                            "group.consumer.heartbeat.interval.ms": "1000",
                            "group.consumer.min.heartbeat.interval.ms": "1000"}}
# What bin/kafka-run-class.sh gives the tools: config/tools-log4j.properties (WARN to stderr); the slf4j-simple
# binding of newer jar sets reads the same level from a system property.
LOG4J = ("log4j.rootLogger=WARN, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
         "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
         "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\nlog4j.appender.stderr.Target=System.err\n")


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def modes(tool: str) -> list[tuple[str, list[str]]]:
    """(file name, extra arguments) for every describe mode the tool release has."""
    if _key(tool) < (1, 1):  # KIP-175's --members, --state and --offsets came in 1.1
        return [("describe", [])]
    out = [("describe", []), ("offsets", ["--offsets"]), ("members", ["--members"]),
           ("members-verbose", ["--members", "--verbose"]), ("state", ["--state"])]
    if _key(tool) >= (4, 0):
        out += [("state-verbose", ["--state", "--verbose"]), ("offsets-verbose", ["--offsets", "--verbose"])]
    return out


class Members:
    """A members process (members.py or GroupMembers), its JSON lines read as they come: the latest per client."""

    def __init__(self, cmd: list[str], log: Path) -> None:
        self.latest: dict[str, dict[str, Any]] = {}
        self.changed = time.monotonic()
        self._err = open(log, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                doc = json.loads(line)
                self.latest[doc["client"]] = doc
                self.changed = time.monotonic()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._err.close()


def settle(procs: list[Members], clients: int, partitions: set[str] | None, timeout: float = 120.0) -> None:
    """Wait until `clients` members have reported a member id, nothing changed for 4 s, and (given `partitions`)
    those partitions are owned, each by one member: the rebalance, or KIP-848's reconciliation, is over."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        views = [d for p in procs for d in p.latest.values()]
        owned = [tp for d in views for tp in d["partitions"]]
        if (len(views) >= clients and all(d["member"] for d in views)
                and (partitions is None or sorted(owned) == sorted(partitions))
                and time.monotonic() - max(p.changed for p in procs) > 4):
            return
        for p in procs:
            if p.proc.poll() is not None:
                raise SystemExit(f"a members process exited ({p.proc.returncode}): see its log")
        time.sleep(0.5)
    raise SystemExit(f"members did not settle: {[p.latest for p in procs]}")


def member_command(spec: GroupSpec, boot: str, count: int, client: str, classes: Path, classpath: str) -> list[str]:
    if spec.runner == "py":
        return [sys.executable, str(HERE / "members.py"), boot, spec.name, spec.assignor, ",".join(spec.topics),
                str(count), client, *([spec.instance, str(spec.static or count)] if spec.instance else [])]
    return ["java", "-Xmx96m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", f"{classpath}:{classes}", "GroupMembers",
            f"bootstrap={boot}", f"group={spec.name}",
            f"protocol={spec.protocol}", f"assignor={spec.assignor}", f"topics={','.join(spec.topics)}",
            f"members={count}", f"client={client}", *([f"instance={spec.instance}"] if spec.instance else [])]


def start_group(spec: GroupSpec, boot: str, work: Path, classes: Path, classpath: str) -> tuple[list[Members], dict]:
    """Start the group's members as its fate says; the members' own views once settled, and what was done."""
    subscribed = {f"{t}-{p}" for t in spec.topics for p in range(TOPICS[t][0])}
    whole = None if spec.assignor == "misassign" else subscribed

    def start(client: str, count: int) -> Members:
        return Members(member_command(spec, boot, count, client, classes, classpath), work / f"{client}.log")

    if spec.fate == "":
        procs = [start(spec.name, spec.members)]
        settle(procs, spec.members, whole)
        return procs, {}
    # One process per member, so one can be killed or paused alone.
    procs = [start(f"{spec.name}0", 1)]
    if spec.fate == "kill":  # every member assigned, then the last one killed: it stays a member, with its partitions
        procs += [start(f"{spec.name}{i}", 1) for i in range(1, spec.members)]
        settle(procs, spec.members, whole)
        victim = procs[-1]
        os.kill(victim.proc.pid, signal.SIGKILL)
        victim.proc.wait()
        return procs, {next(iter(victim.latest)): "killed"}
    settle(procs, 1, whole)
    if spec.fate == "pause":  # classic: the first member paused, then the next joins and waits for it to rejoin
        os.kill(procs[0].proc.pid, signal.SIGSTOP)
        procs.append(start(f"{spec.name}1", 1))
        time.sleep(8)
        return procs, {next(iter(procs[0].latest)): "paused"}
    # "stall", KIP-848: the next member joins and is paused once it has a member id, before it takes what the
    # first member revokes for it; the group stays in reconciliation.
    procs.append(start(f"{spec.name}1", 1))
    deadline = time.monotonic() + 60
    while not any(d["member"] for d in procs[1].latest.values()):
        if time.monotonic() > deadline:
            raise SystemExit(f"{spec.name}: the second member never joined")
        time.sleep(0.05)
    os.kill(procs[1].proc.pid, signal.SIGSTOP)
    time.sleep(12)  # the first member revokes in its next heartbeats
    return procs, {next(iter(procs[1].latest)): "paused"}


def _instance(spec: GroupSpec, client: str) -> str | None:
    i = int(client.rsplit("-", 1)[1])
    return f"{spec.instance}-{i}" if spec.instance and i < (spec.static or spec.members) else None


def commit(boot: str, spec: GroupSpec) -> None:
    """The group's offsets, committed by a consumer outside the group (generation -1: allowed while it is empty)."""
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

    c = KafkaConsumer(bootstrap_servers=boot, group_id=spec.name, enable_auto_commit=False)
    offsets = {TopicPartition(tp.rsplit("-", 1)[0], int(tp.rsplit("-", 1)[1])): OffsetAndMetadata(o, "", -1)
               for tp, o in spec.committed.items()}
    c.assign(list(offsets))
    c.commit(offsets)
    c.close()


def run_tool(tool: str, args: list[str], log4j: Path) -> subprocess.CompletedProcess[str]:
    from kcheck.reference import kafka_tools

    cmd = kafka_tools.command(kafka_tools.resolve_tools(tool), "kafka-consumer-groups", args)
    cmd[1:1] = [f"-Dlog4j.configuration=file:{log4j}", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)


def describe_all(cluster: str, tools: tuple[str, ...], specs: list[GroupSpec], boot: str, log4j: Path,
                 index: list[dict]) -> None:
    for tool in tools:
        folder = HERE / f"{tool}@{cluster}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        runs: list[tuple[str, list[str]]] = []
        for mode, extra in modes(tool):
            if _key(tool) < (2, 3):  # one group per run before --all-groups
                runs += [(f"{mode}.{s.name}", ["--group", s.name, *extra]) for s in specs]
            else:
                runs.append((f"{mode}.all", ["--all-groups", *extra]))
        if _key(tool) >= (2, 3):
            runs.append((f"describe.{specs[0].name}", ["--group", specs[0].name]))
        runs.append((f"describe.{MISSING}", ["--group", MISSING]))  # what the tool says of a group that is not there
        for name, extra in runs:
            args = ["--bootstrap-server", boot, "--describe", *extra]
            done = run_tool(tool, args, log4j)
            (folder / f"{name}.txt").write_text(done.stdout, encoding="utf-8")
            index.append({"file": f"{folder.name}/{name}.txt", "tool": tool, "cluster": cluster,
                          "args": ["--bootstrap-server", "BOOTSTRAP", *args[2:]], "exit": done.returncode})
            print(f"  {folder.name}/{name}.txt: exit {done.returncode}", flush=True)


def make_cluster(cluster: str, index: list[dict]) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    from kcheck.cluster.local import LocalCluster
    from kcheck.reference.kafka_jars import resolve_server

    tools, specs = CLUSTERS[cluster]
    work = Path(tempfile.mkdtemp(prefix="kcheck-groups-"))
    classpath = resolve_server(cluster).classpath
    classes = work / "classes"
    subprocess.run(["javac", "-cp", classpath, "-d", str(classes), str(HERE / "GroupMembers.java")], check=True)
    log4j = work / "tools-log4j.properties"
    log4j.write_text(LOG4J, encoding="utf-8")
    lc = LocalCluster(cluster, 1, directory=work / "cluster", config=CLUSTER_CONFIG.get(cluster))
    lc.start()
    began = time.monotonic()
    groups: list[tuple[GroupSpec, list[Members], dict]] = []
    try:
        boot = lc.bootstrap
        admin = KafkaAdminClient(bootstrap_servers=boot, request_timeout_ms=30_000)
        admin.create_topics([NewTopic(t, n, 1) for t, (n, _) in TOPICS.items()])
        time.sleep(2)
        producer = KafkaProducer(bootstrap_servers=boot, acks="all", linger_ms=5)
        for t, (n, per) in TOPICS.items():
            for p in range(n):
                for i in range(per):
                    producer.send(t, f"{t}-{p}-{i}".encode(), partition=p)
        producer.flush()
        producer.close()
        log_end = {f"{t}-{p}": per for t, (n, per) in TOPICS.items() for p in range(n)}
        for spec in specs:
            commit(boot, spec)
        for spec in specs:
            if spec.runner:
                procs, fates = start_group(spec, boot, work, classes, classpath)
                groups.append((spec, procs, fates))
                print(f"{spec.name}: {[p.latest for p in procs]}", flush=True)
        before = {spec.name: [dict(p.latest) for p in procs] for spec, procs, _ in groups}
        print(f"groups set up in {time.monotonic() - began:.0f} s", flush=True)
        describe_all(cluster, tools, specs, boot, log4j, index)
        after = {spec.name: [dict(p.latest) for p in procs] for spec, procs, _ in groups}
        if before != after:
            raise SystemExit(f"assignments changed while the tools ran: {before} -> {after}")
        truth = {"cluster": cluster, "topics": {t: n for t, (n, _) in TOPICS.items()}, "log_end_offsets": log_end,
                 "groups": {}}
        for spec in specs:
            procs, fates = next(((p, f) for s, p, f in groups if s is spec), ([], {}))
            members = [{"client": d["client"], "member": d["member"],
                        "instance": _instance(spec, d["client"]),
                        "partitions": d["partitions"], "fate": fates.get(d["client"], "alive")}
                       for p in procs for d in p.latest.values()]
            truth["groups"][spec.name] = {
                "protocol": spec.protocol, "assignor": spec.assignor, "topics": list(spec.topics),
                "state": spec.state, "committed": spec.committed, "members": members}
        (HERE / f"truth.{cluster}.json").write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
    finally:
        for _, procs, _ in groups:
            for p in procs:
                p.stop()
        lc.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"{cluster}: done in {time.monotonic() - began:.0f} s", flush=True)


def main(argv: list[str]) -> None:
    only = set(argv[argv.index("--tools") + 1].split(",")) if "--tools" in argv else None  # a trial run
    clusters = [a for i, a in enumerate(argv) if a in CLUSTERS and (i == 0 or argv[i - 1] != "--tools")] \
        or list(CLUSTERS)
    if only is not None:
        for c in clusters:
            CLUSTERS[c] = (tuple(t for t in CLUSTERS[c][0] if t in only), CLUSTERS[c][1])
    index_path = HERE / "index.json"
    index = [e for e in json.loads(index_path.read_text()) if e["cluster"] not in clusters] \
        if index_path.exists() else []
    for cluster in clusters:
        make_cluster(cluster, index)
        index_path.write_text(json.dumps(sorted(index, key=lambda e: e["file"]), indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
