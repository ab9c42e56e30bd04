"""A real KRaft cluster on loopback (cluster/local.py) and the live reader (cluster/live.py), checked against
Kafka itself.

The expected describe text is Kafka's: `kafka-topics --describe` (`org.apache.kafka.tools.TopicCommand`, run from the
release's jars) against the same cluster at the same moment. The cluster tests use the session fixture
`kafka_cluster` (tests/conftest.py: brokers 1, 2, 3 in racks a, b, c); each leaves every broker running.
The default run starts one cluster (about 25 s here) and one 1-broker cluster for the CLI and the start failure.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_support import run
from kcheck.cluster.live import client_config, parse_properties, read_cluster
from kcheck.cluster.local import LocalCluster, why_it_stopped
from kcheck.inputs.formats import InputError, parse_brokers, parse_describe
from kcheck.model import NO_LEADER

# ---------------------------------------------------------------------------------------------------------
# helpers


def kafka_topics_describe(cluster: LocalCluster) -> str:
    """What Kafka's own `kafka-topics --describe` prints for the cluster now."""
    from kcheck.reference.kafka_jars import resolve_server

    out = subprocess.run(
        ["java", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp",
         resolve_server(cluster.version).classpath, "org.apache.kafka.tools.TopicCommand",
         "--bootstrap-server", cluster.bootstrap, "--describe"],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def topic_blocks(text: str) -> dict[str, tuple[str, ...]]:
    """Describe text per topic (header first, then partition lines): Kafka lists topics in hash order."""
    blocks: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("Topic: "):
            blocks[line.split("\t")[0].removeprefix("Topic: ")] = [line]
        elif line.strip():
            last = next(reversed(blocks))
            blocks[last].append(line)
    return {k: tuple(v) for k, v in blocks.items()}


def _configs(header: str) -> list[str]:
    return [c for c in header.split("\tConfigs: ", 1)[1].split("\t")[0].split(",") if c]


def _with_configs(header: str, configs: list[str]) -> str:
    return header.replace("\tConfigs: " + ",".join(_configs(header)), "\tConfigs: " + ",".join(configs), 1)


def as_kafka_prints(ours: tuple[str, ...], kafka: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Both blocks with Configs in name order (Kafka's is a HashMap's), and ours with the one difference kcheck
    makes on purpose undone: where kafka-topics leaves out min.insync.replicas (Kafka's default, 1), ours shows
    min.insync.replicas=1."""
    configs = _configs(ours[0])
    if not any(c.startswith("min.insync.replicas=") for c in _configs(kafka[0])):
        assert "min.insync.replicas=1" in configs, ours[0]
        configs.remove("min.insync.replicas=1")
    return ((_with_configs(ours[0], sorted(configs)), *ours[1:]),
            (_with_configs(kafka[0], sorted(_configs(kafka[0]))), *kafka[1:]))


def assert_same_as_kafka(cluster: LocalCluster, topics: set[str]) -> str:
    """Our describe text of `topics` is line for line what kafka-topics prints (read just before and after it)."""
    ours_before = topic_blocks(read_cluster(cluster.bootstrap).describe_text)
    kafka = topic_blocks(kafka_topics_describe(cluster))
    ours_after = topic_blocks(read_cluster(cluster.bootstrap).describe_text)
    for t in topics:
        before, theirs = as_kafka_prints(ours_before[t], kafka[t])
        after, _ = as_kafka_prints(ours_after[t], kafka[t])
        assert theirs in (before, after), (t, theirs, before, after)
    return "\n".join(line for t in sorted(topics) for line in ours_after[t])


def admin(cluster: LocalCluster):
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap.split(","), request_timeout_ms=30_000)


def create(cluster: LocalCluster, topics) -> None:
    a = admin(cluster)
    try:
        a.create_topics(topics)
    finally:
        a.close()
    names = {t.name for t in topics}
    wait_for(lambda: names <= {topic for topic, _ in live_partitions(cluster)}, 30, "topics created")


def wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        time.sleep(0.5)


def live_partitions(cluster: LocalCluster):
    text = read_cluster(cluster.bootstrap).describe_text
    return {(p.topic, p.partition): p for p in parse_describe(text, "live").partitions} if text else {}


def produce(cluster: LocalCluster, topic: str, values: list[str]) -> dict[str, tuple[int, int]]:
    """Send with acks=all; the records Kafka acknowledged, with their (partition, offset)."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap.split(","), acks="all", linger_ms=5,
                             request_timeout_ms=15_000, retry_backoff_ms=200)
    try:
        futures = [(v, producer.send(topic, value=v.encode())) for v in values]
        producer.flush(timeout=90)
        acked = {}
        for v, f in futures:
            try:
                md = f.get(timeout=0.1)
            except KafkaError:
                continue
            acked[v] = (md.partition, md.offset)
        return acked
    finally:
        producer.close(timeout=10)


def consume_all(cluster: LocalCluster, topic: str) -> dict[tuple[int, int], str]:
    """Every record of the topic, read from the start to the end offsets: (partition, offset) -> value."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap.split(","), enable_auto_commit=False,
                             auto_offset_reset="earliest", request_timeout_ms=30_000)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        end = consumer.end_offsets(parts)
        seen: dict[tuple[int, int], str] = {}
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < end[tp] for tp in parts):
            assert time.monotonic() < deadline, "the consumer did not reach the end offsets"
            for tp, records in consumer.poll(timeout_ms=1000).items():
                for r in records:
                    seen[(tp.partition, r.offset)] = r.value.decode()
        return seen
    finally:
        consumer.close()


# ---------------------------------------------------------------------------------------------------------
# the live cluster, read and compared with kafka-topics


@pytest.mark.cluster
@pytest.mark.kafka
def test_kill_9_and_restart_loses_no_acknowledged_record_and_the_reader_matches_kafka_topics(cluster, capsys,
                                                                                            tmp_path):
    """The CI test: RF 3 / min ISR 2 with acks=all across a kill -9 and a restart of a broker loses no acknowledged
    record; while the broker is down, the reader shows what kafka-topics shows (ISR shrunk, ELR, a leaderless RF-1
    partition, the dead broker fenced, a reassignment in flight) and that parses into the right leaders and ISRs."""
    from kafka import TopicPartition
    from kafka.admin import NewTopic

    create(cluster, [
        NewTopic("acked", 3, 3, topic_configs={"min.insync.replicas": "2"}),
        NewTopic("single", replica_assignments={0: [1], 1: [3]}),
        NewTopic("under", replica_assignments={0: [1, 3]}, topic_configs={"min.insync.replicas": "2"}),
        NewTopic("moving", replica_assignments={0: [1, 2]}),
    ])
    acked = produce(cluster, "acked", [f"before-{i}" for i in range(150)])
    assert len(acked) == 150

    cluster.kill(3)
    assert not cluster.is_running(3)
    acked |= produce(cluster, "acked", [f"during-{i}" for i in range(150)])  # waits out the fencing of broker 3
    wait_for(lambda: live_partitions(cluster)[("under", 0)].isr == (1,), 60, "broker 3 out of under-0's ISR")
    a = admin(cluster)
    try:
        assert a.alter_partition_reassignments({TopicPartition("moving", 0): [1, 3]}) == {
            TopicPartition("moving", 0): None}
    finally:
        a.close()
    wait_for(lambda: live_partitions(cluster)[("moving", 0)].adding == (3,), 30, "moving-0 reassignment listed")

    text = assert_same_as_kafka(cluster, {"acked", "single", "under", "moving"})
    parts = {(p.topic, p.partition): p for p in parse_describe(text, "live").partitions}
    assert parts[("under", 0)].leader == 1 and parts[("under", 0)].isr == (1,) and parts[("under", 0)].elr == (3,)
    assert parts[("single", 1)].leader == NO_LEADER and parts[("single", 0)].leader == 1
    assert all(3 not in parts[("acked", p)].isr and len(parts[("acked", p)].isr) == 2 for p in range(3))
    moving = parts[("moving", 0)]
    assert (moving.replicas, moving.adding, moving.removing) == ((1, 3, 2), (3,), (2,))
    brokers = read_cluster(cluster.bootstrap).brokers_text
    assert brokers.splitlines() == ["1:a", "2:b", "3:c  # fenced"]
    assert [(b.id, b.rack) for b in parse_brokers(brokers, "live").brokers] == [(1, "a"), (2, "b"), (3, "c")]

    # verify and verify-reassignment read the live cluster and run a describe file's checks on it
    code, out, _ = run(capsys, "verify", "--bootstrap-server", cluster.bootstrap, "--json")
    doc = json.loads(out)
    found = {(v["invariant"], v["where"]) for v in doc["violations"]}
    assert code == 1 and doc["plan"].startswith("cluster at ") and doc["block"] == "kafka-topics --describe"
    assert {("health.under-min-isr", "partition under-0"), ("health.unavailable", "partition single-1")} <= found
    assert "placement.rack-diversity" in doc["checked"]  # racks come from the cluster, not a brokers file
    plan = tmp_path / "plan.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"single","partition":1,"replicas":[2]}]}')
    code, out, _ = run(capsys, "verify-reassignment", "--bootstrap-server", cluster.bootstrap, str(plan), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["current"].startswith("cluster at ") and doc["brokers_derived_from_plan"] is False
    assert [m["current"] for m in doc["moves"]] == [[3]]

    cluster.restart(3)
    acked |= produce(cluster, "acked", [f"after-{i}" for i in range(100)])
    assert len(acked) == 400
    read = consume_all(cluster, "acked")
    lost = {v: at for v, at in acked.items() if read.get(at) != v}
    assert not lost, f"{len(lost)} acknowledged record(s) not read back at their offsets: {sorted(lost)[:5]}"
    wait_for(lambda: live_partitions(cluster)[("moving", 0)].adding == (), 60, "moving-0 reassignment done")
    final = live_partitions(cluster)
    assert final[("moving", 0)].replicas == (1, 3) and set(final[("under", 0)].isr) == {1, 3}


@pytest.mark.cluster
@pytest.mark.kafka
def test_a_healthy_cluster_reads_as_kafka_topics_describes_it_with_min_isr_and_racks(cluster):
    from kafka.admin import NewTopic

    create(cluster, [NewTopic("healthy3", 4, 3, topic_configs={"min.insync.replicas": "2", "retention.ms": "60000"}),
                     NewTopic("healthy1", 2, 1)])
    text = assert_same_as_kafka(cluster, {"healthy3", "healthy1"})
    assert "Configs: min.insync.replicas=2,retention.ms=60000" in text.splitlines()[text.splitlines().index(
        next(line for line in text.splitlines() if line.startswith("Topic: healthy3")))]
    parsed = parse_describe(text, "live")
    assert parsed.replication_factors == {"healthy1": 1, "healthy3": 3}
    for p in parsed.partitions:
        assert p.leader == p.replicas[0] and set(p.isr or ()) == set(p.replicas)
    assert read_cluster(cluster.bootstrap).brokers_text.splitlines() == ["1:a", "2:b", "3:c"]


@pytest.mark.cluster
@pytest.mark.kafka
def test_a_paused_broker_is_shown_and_resumes(cluster):
    cluster.pause(2)
    try:
        assert next(r for r in cluster.status() if r["node"] == 2)["state"] == "paused"
    finally:
        cluster.resume(2)
    wait_for(lambda: next(r for r in cluster.status() if r["node"] == 2)["state"] == "running", 10, "resumed")


OTHER_RELEASES = [v.strip() for v in os.environ.get("KCHECK_CLUSTER_RELEASES", "4.1.2,4.0.2,3.9.1").split(",")
                  if v.strip()]


@pytest.mark.slow
@pytest.mark.cluster
@pytest.mark.kafka
@pytest.mark.parametrize("release", OTHER_RELEASES)
def test_other_releases_start_and_read_as_their_kafka_topics_describes_them(release):
    """Each release's own cluster and its own kafka-topics: healthy, then with broker 3 killed (ISR shrunk, a
    leaderless RF-1 partition), then after its restart."""
    from kafka.admin import NewTopic

    with LocalCluster(release, 3, ("a", "b", "c")) as c:
        create(c, [NewTopic("r3", 3, 3, topic_configs={"min.insync.replicas": "2"}),
                   NewTopic("r1", replica_assignments={0: [1], 1: [3]}),
                   NewTopic("r2", replica_assignments={0: [1, 3]}, topic_configs={"min.insync.replicas": "2"})])
        assert_same_as_kafka(c, {"r3", "r1", "r2"})
        c.kill(3)
        wait_for(lambda: live_partitions(c)[("r2", 0)].isr == (1,), 60, "broker 3 out of r2-0's ISR")
        text = assert_same_as_kafka(c, {"r3", "r1", "r2"})
        parts = {(p.topic, p.partition): p for p in parse_describe(text, "live").partitions}
        assert parts[("r1", 1)].leader == NO_LEADER and parts[("r2", 0)].leader == 1
        # DescribeCluster lists fenced brokers since 4.0 (KIP-1073); a 3.9 cluster leaves the dead broker out
        fenced = ["3:c  # fenced"] if not release.startswith("3.") else []
        assert read_cluster(c.bootstrap).brokers_text.splitlines() == ["1:a", "2:b", *fenced]
        c.restart(3)
        wait_for(lambda: set(live_partitions(c)[("r2", 0)].isr or ()) == {1, 3}, 60, "broker 3 back in the ISR")
        assert_same_as_kafka(c, {"r3", "r1", "r2"})


# ---------------------------------------------------------------------------------------------------------
# client errors: one line


def test_an_unreachable_bootstrap_server_is_one_line_at_once():
    """A closed port is refused by the OS at once: kcheck says so then, not after the client's 30 s bootstrap."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        began = time.monotonic()
        with pytest.raises(InputError) as e:
            read_cluster(f"127.0.0.1:{port}")
    assert time.monotonic() - began < 3
    assert str(e.value) == f"--bootstrap-server: cannot reach a broker (127.0.0.1:{port}: Connection refused)"


@pytest.mark.parametrize("bad", ["", "localhost", "host:port", "host:0", "host:70000", "a b:1"])
def test_a_bootstrap_that_is_not_host_port_is_refused_before_connecting(bad):
    with pytest.raises(InputError, match="^--bootstrap-server: "):
        read_cluster(bad, timeout_s=1)


def _sasl_config(tmp_path: Path, password: str) -> str:
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                      "org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
                      f'  username="alice" password="{password}";\n')
    return str(config)


@pytest.mark.cluster
@pytest.mark.kafka
def test_command_config_logs_in_with_sasl_plain_and_reads_what_plaintext_reads(cluster, tmp_path):
    from kafka.admin import NewTopic

    create(cluster, [NewTopic("sasl", 1, 2)])
    over_sasl = read_cluster(cluster.sasl_bootstrap, _sasl_config(tmp_path, "alice-secret"))
    plain = read_cluster(cluster.bootstrap)
    assert topic_blocks(over_sasl.describe_text)["sasl"] == topic_blocks(plain.describe_text)["sasl"]
    assert over_sasl.brokers_text == plain.brokers_text


@pytest.mark.cluster
@pytest.mark.kafka
def test_a_wrong_password_is_one_line_saying_authentication_failed(cluster, tmp_path):
    with pytest.raises(InputError) as e:
        # a ceiling only: the broker refuses the password at once, once it answers (slower on a busy machine)
        read_cluster(cluster.sasl_bootstrap, _sasl_config(tmp_path, "wrong"), timeout_s=45)
    # the broker's own reason, as Kafka's PlainServerCallbackHandler words it; or, when the broker closed the
    # connection before that answer reached the client (it happens under load), the client's own inference
    assert str(e.value) in (
        f"--bootstrap-server: {cluster.sasl_bootstrap}: authentication failed: "
        "Authentication failed: Invalid username or password",
        f"--bootstrap-server: {cluster.sasl_bootstrap}: authentication failed: the broker closed the connection "
        "after the SASL credentials were sent, without saying why")


def test_a_connection_closed_after_the_credentials_reads_as_a_refused_login():
    """kafka-python's own log lines (debug and error) of a connection the broker closed after the SaslAuthenticate
    request and before its answer: the bootstrap's time-out reads as a refused login, not as an unreachable
    broker. A closed connection before the credentials went out, or after their answer, is not one."""
    import logging

    from kafka.errors import KafkaTimeoutError

    from kcheck.cluster.live import _client_errors, _Recorder

    def lines(*texts: tuple[int, str]) -> _Recorder:
        r = _Recorder()
        for level, text in texts:
            r.handle(logging.makeLogRecord({"name": "kafka.net", "levelno": level, "msg": text}))
        return r

    handshake = (logging.DEBUG, "node=bootstrap-1[127.0.0.1:9093] Sending request 2 SaslHandshakeRequest(version=1)")
    sent = (logging.DEBUG, "node=bootstrap-1[127.0.0.1:9093] Sending request 3 SaslAuthenticateRequest(version=2)")
    answered = (logging.DEBUG, "node=bootstrap-1[127.0.0.1:9093] Received response 3 SaslAuthenticateResponse("
                               "version=2, error_code=0)")
    lost = (logging.ERROR, "<KafkaConnection node_id=bootstrap-1 broker_version=(4, 3) (disconnected)>: Connection "
                           "lost: KafkaConnectionError: socket disconnected")

    def message(recorder: _Recorder) -> str:
        with pytest.raises(InputError) as e, _client_errors(["127.0.0.1:9093"], 5, recorder):
            raise KafkaTimeoutError("Bootstrap timed out")
        return str(e.value)

    assert message(lines(handshake, sent, lost)).endswith(
        "127.0.0.1:9093: authentication failed: the broker closed the connection after the SASL credentials were "
        "sent, without saying why")
    for unclear in (lines(handshake, lost), lines(handshake, sent, answered, lost)):
        assert message(unclear) == "--bootstrap-server: cannot reach a broker at 127.0.0.1:9093 within 5 s"


@pytest.mark.cluster
@pytest.mark.kafka
def test_a_sasl_client_against_a_plaintext_listener_is_one_line(cluster, tmp_path):
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                      'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";\n')
    with pytest.raises(InputError) as e:
        read_cluster(cluster.bootstrap, str(config), timeout_s=5)
    assert str(e.value).startswith("--bootstrap-server: ") and "\n" not in str(e.value)


# ---------------------------------------------------------------------------------------------------------
# --command-config: Kafka client properties mapped to the client's options (no cluster needed)


def test_command_config_maps_sasl_and_pem_ssl_settings(tmp_path):
    f = tmp_path / "client.properties"
    f.write_text("# a comment\n"
                 "security.protocol = SASL_SSL\n"
                 "sasl.mechanism: SCRAM-SHA-512\n"
                 "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
                 '    username="alice" password="s3cr=t;x";\n'
                 "ssl.truststore.type=PEM\nssl.truststore.location=/etc/ca.pem\n"
                 "ssl.endpoint.identification.algorithm=\n"
                 "client.id=ops\n")
    assert client_config(str(f)) == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "alice",
        "sasl_plain_password": "s3cr=t;x", "ssl_cafile": "/etc/ca.pem", "ssl_check_hostname": False,
        "client_id": "ops"}


@pytest.mark.parametrize(("text", "message"), [
    ("ssl.truststore.location=/etc/t.jks\n", "JKS (the default) store: kafka-python reads PEM files only"),
    ("ssl.keystore.type=PKCS12\nssl.keystore.location=/k.p12\n", "is a PKCS12 store"),
    ("sasl.mechanism=GSSAPI\n", "sasl.mechanism GSSAPI is not supported"),
    ("sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;\n",
     ":1: sasl.jaas.config: login module com.sun.security.auth.module.Krb5LoginModule is not supported"),
    ("sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\";\n",
     'no password="..." option'),
    ("security.protocol=SSL\n\nbatch.size=5\n", ":3: batch.size is not a setting kcheck's client can use"),
    ("security.protocol=TLS\n", "security.protocol 'TLS' is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"),
    ("sasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
     'required username="u" password="p";\n', "PlainLoginModule does not go with sasl.mechanism SCRAM-SHA-256"),
])
def test_command_config_refuses_what_the_client_cannot_use_in_one_line(tmp_path, text, message):
    f = tmp_path / "client.properties"
    f.write_text(text)
    with pytest.raises(InputError) as e:
        client_config(str(f))
    assert message in str(e.value) and str(e.value).startswith(str(f)) and "\n" not in str(e.value)


def test_properties_follow_java_properties_syntax():
    text = "a=1\n! bang comment\n  b : 2\nc 3\nd=x\\\n  y\ne=\\u0041\\t\nf\n"
    assert [(k, v) for _, k, v in parse_properties(text, "p")] == [
        ("a", "1"), ("b", "2"), ("c", "3"), ("d", "xy"), ("e", "A\t"), ("f", "")]


# ---------------------------------------------------------------------------------------------------------
# kcheck cluster up | status | down, and a start that fails


def _kcheck(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kcheck", *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def _kafka_processes_under(folder: Path) -> list[str]:
    """The command lines of Kafka nodes whose properties file is under `folder` (whole, from /proc: `ps` cuts a
    JVM's long class path, and the properties file comes last)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            if "kafka.Kafka" in args and any(a.startswith(str(folder)) for a in args):
                out.append(" ".join(args))
    return out


@pytest.mark.cluster
@pytest.mark.kafka
def test_cluster_up_status_down_from_the_command_line(tmp_path):
    """One broker and a quorum of three controllers: up, status, down, every process ended by its PID."""
    folder = tmp_path / "c"
    began = time.monotonic()
    up = _kcheck("cluster", "up", "--brokers", "1", "--controllers", "3", "--racks", "r1", "--dir", str(folder))
    try:
        assert up.returncode == 0, up.stderr
        assert "1 broker(s) and 3 controllers up" in up.stderr
        bootstrap = up.stdout.strip()
        assert bootstrap.startswith("127.0.0.1:") and "," not in bootstrap
        assert time.monotonic() - began < 90
        status = _kcheck("cluster", "status", "--dir", str(folder))
        assert status.returncode == 0, status.stderr
        assert "rack r1" in status.stdout and "running" in status.stdout
        assert [line.split()[:2] for line in status.stdout.splitlines()[1:]] == [
            ["controller", "1000"], ["controller", "1001"], ["controller", "1002"], ["broker", "1"]]
        assert len(_kafka_processes_under(folder)) == 4
        assert read_cluster(bootstrap).brokers_text == "1:r1\n"
        again = _kcheck("cluster", "up", "--dir", str(folder))
        assert again.returncode == 2 and again.stderr.count("\n") == 1 and "already set up" in again.stderr
    finally:
        down = _kcheck("cluster", "down", "--dir", str(folder))
    assert down.returncode == 0, down.stderr
    assert not folder.exists() and not _kafka_processes_under(folder)
    gone = _kcheck("cluster", "status", "--dir", str(folder))
    assert gone.returncode == 2 and "no cluster in" in gone.stderr


@pytest.mark.cluster
@pytest.mark.kafka
def test_a_broker_that_cannot_bind_its_port_fails_the_start_in_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    import kcheck.cluster.local as cluster_module

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ports = iter([cluster_module.free_port(), port])  # the controller's, then broker 1's: taken
        monkeypatch.setattr(cluster_module, "free_port", lambda: next(ports))
        folder = tmp_path / "c"
        with pytest.raises(InputError) as e:
            LocalCluster(brokers=1, directory=folder).start(timeout_s=60)
    message = str(e.value)
    assert message.startswith("cluster: broker 1 exited while starting: ") and "\n" not in message
    assert f"127.0.0.1:{port}" in message and "Address already in use" in message
    assert not folder.exists() and not _kafka_processes_under(folder)


def test_without_java_the_cluster_says_so_in_one_line(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}  # no java on it
    out = _kcheck("cluster", "up", "--dir", str(tmp_path / "c"), env=env, timeout=60)
    assert out.returncode == 2
    assert out.stderr == "kcheck: error: cluster: `java` is not on PATH (a Kafka cluster needs a JDK 17+)\n"
    assert not (tmp_path / "c").exists()


def test_why_it_stopped_takes_the_exception_after_the_first_error(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("12:00:00.000 [main] INFO kafka.Kafka - starting\n"
                   "12:00:01.000 [main] ERROR kafka.Kafka$ - Exiting Kafka due to fatal exception\n"
                   "org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:1: "
                   "Address already in use.\n"
                   "\tat kafka.network.Acceptor.openServerSocket(SocketServer.scala:700)\n"
                   "Caused by: java.net.BindException: Address already in use\n")
    assert why_it_stopped(log) == "Socket server failed to bind to 127.0.0.1:1: Address already in use."
