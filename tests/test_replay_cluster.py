"""`kcheck replay --on-cluster`: a model trace played on real brokers (the session fixture `kafka_cluster`).

The trace is the one kcheck writes for the unclean-election row (Jepsen 2013: `kcheck exhaust --protocol
unclean-election --out`): an ISR of one acknowledges an acks=all write, its leader dies, and the replica outside
the ISR is elected. The expected outcome is the cluster's own: with unclean.leader.election.enable=true, Kafka 4.4
elects the out-of-sync broker 2 and the acknowledged record is gone, as the model predicts.
"""

from __future__ import annotations

import json

import pytest

from cli_support import one_error_line, run
from kcheck.cluster.local import LocalCluster

pytestmark = [pytest.mark.cluster, pytest.mark.kafka]


@pytest.fixture
def cluster(cluster, monkeypatch):
    """The session's cluster (healed after the test by conftest's `cluster`), handed to `--dir` as itself: one
    object keeps every PID it starts."""
    monkeypatch.setattr(LocalCluster, "attach", classmethod(lambda cls, directory: cluster))
    return cluster


@pytest.mark.slow  # about 50 s: the broker session time-out and elections are waited out
def test_the_unclean_election_row_loses_the_acknowledged_record_on_real_brokers_too(cluster, capsys, tmp_path):
    trace = tmp_path / "unclean.json"
    code, _, err = run(capsys, "exhaust", "--protocol", "unclean-election", "--out", str(trace))
    assert code == 1, err
    steps = [s["action"] for s in json.loads(trace.read_text())["steps"]]
    assert steps[0] == "produce" and "crash" in steps and steps[-1] == "restart"

    code, out, err = run(capsys, "replay", "--on-cluster", str(trace), "--dir", str(cluster.directory), "--json")
    doc = json.loads(out)
    rows = doc["steps"]
    # the table: the initial state, then one row per model step, each mapped or said to be not mappable
    assert [r["number"] for r in rows] == list(range(len(steps) + 1))
    by_kind = {s: [r for r in rows[1:] if r["model_step"].startswith(s)] for s in set(steps)}
    for kind in ("handle_alter_partition", "shrink_isr"):
        assert all(r["verdict"] == "not mappable" and r["cluster_action"] == "-" for r in by_kind.get(kind, []))
    assert by_kind["crash"][0]["cluster_action"].startswith("kill -9 broker 1")
    assert by_kind["advance_hw"][0]["cluster_action"] == "wait for the acknowledgement"
    assert by_kind["advance_hw"][0]["cluster_shows"] == "x1 acknowledged at offset 0"
    assert doc["cluster"]["unclean_leader_election"] is True and doc["cluster"]["started"] is False
    # the real outcome: broker 2, never in sync with x1, leads, and the acknowledged x1 is gone
    final = doc["final"]
    assert final["cluster_acknowledged"] == ["x1"] and final["cluster_read"] == []
    assert final["cluster_leader"] == 2 and final["cluster_lost"] == final["model_lost"] == ["x1"]
    assert "replication.leader-has-acked" in doc["model_violations"]
    assert (code, doc["reproduced"], doc["differs_at"]) == (0, True, []), doc


def test_a_bad_trace_or_dir_without_on_cluster_is_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": 2, "protocol": "current", "config": {}, "steps": [{"action": "crash"}]}')
    code, _, err = run(capsys, "replay", "--on-cluster", str(bad))
    assert code == 2
    one_error_line(err, str(bad))
    code, _, err = run(capsys, "replay", str(bad), "--dir", str(tmp_path))
    assert code == 2
    one_error_line(err, "--dir: only goes with --on-cluster")
