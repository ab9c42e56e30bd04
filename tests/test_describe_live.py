"""Kafka's four health filters against kcheck on one live cluster state (the session cluster, tests/conftest.py).

Broker 3 stops (a controlled shutdown); then the release's own `kafka-topics --describe` with each filter option
(`org.apache.kafka.tools.TopicCommand`, through `kcheck.reference.kafka_tools`) and kcheck on the same state, both
on the full describe that TopicCommand printed and on the cluster read live (`verify --bootstrap-server`, which
also knows which brokers are live) must list the same partitions.
"""

from __future__ import annotations

import json
import time

import pytest

from cli_support import run
from kcheck.cluster import admin as cluster_admin
from kcheck.inputs.formats import read_describe
from kcheck.invariants.partition_health import HEALTH_FILTERS
from kcheck.reference import kafka_tools

PREFIX = "f32-"


def _listed(text: str) -> set[str]:
    return {f"partition {p.tp}" for p in read_describe(text, "tool").assignment} if text.strip() else set()


def _found(rep: dict, invariant: str) -> set[str]:
    return {v["where"] for v in rep["violations"]
            if v["invariant"] == invariant and v["where"].startswith(f"partition {PREFIX}")}


@pytest.mark.cluster
@pytest.mark.kafka
def test_the_four_filters_match_kcheck_on_a_live_cluster(cluster, capsys, tmp_path):
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        admin.create_topics([
            # broker 3 leaves: min2-0 keeps 1,2 (at min ISR 2, under-replicated); pairs-0 keeps 1 (under min ISR 2)
            NewTopic(f"{PREFIX}min2", replica_assignments={0: [1, 2, 3], 1: [2, 1, 3]},
                     topic_configs={"min.insync.replicas": "2"}),
            NewTopic(f"{PREFIX}pairs", replica_assignments={0: [3, 1], 1: [1, 2]},
                     topic_configs={"min.insync.replicas": "2"}),
            # single-0 only on broker 3: no leader (unavailable); single-1 whole, at the default min ISR 1
            NewTopic(f"{PREFIX}single", replica_assignments={0: [3], 1: [1]}),
        ])
    finally:
        admin.close()
    cluster.shutdown(3)
    live = cluster_admin.live_bootstrap(cluster)
    deadline = time.monotonic() + 60
    while any(3 in s.isr or s.leader == 3 for t in ("min2", "pairs", "single")
              for s in cluster_admin.partition_states(live, PREFIX + t).values()):
        assert time.monotonic() < deadline, "broker 3 still in an ISR"
        time.sleep(0.5)

    def tool(*option: str) -> str:
        done = kafka_tools.run(cluster.version, "kafka-topics",
                               ["--bootstrap-server", live, "--describe", "--topic", f"{PREFIX}.*", *option])
        assert done.returncode == 0, done.stderr[-1000:]
        return done.stdout

    full = tmp_path / "describe.txt"
    full.write_text(tool())
    brokers = tmp_path / "brokers.txt"
    brokers.write_text("1:a\n2:b\n3:c\n")
    _, out, err = run(capsys, "verify", str(full), "--json", "--brokers-file", str(brokers))
    from_text = json.loads(out)
    _, out, err = run(capsys, "verify", "--bootstrap-server", live, "--json")
    from_live = json.loads(out)
    for invariant, option in HEALTH_FILTERS.items():
        filtered = _listed(tool(option))
        assert filtered, option  # the state has one of each
        assert _found(from_text, invariant) == filtered == _found(from_live, invariant), option
    # zone loss: min2-0's ISR 1,2 spans racks a and b, min ISR 2: losing either stops acks=all writes
    zone = {v["where"]: v["detail"] for v in from_text["violations"] if v["invariant"] == "health.zone-loss"}
    assert sorted(zone[f"topic {PREFIX}min2"]["unwritable"]) == [f"{PREFIX}min2-0", f"{PREFIX}min2-1"]
