"""The command line: Kafka's examples end to end, exit codes, and one-line errors for bad input."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kcheck.cli import main

DATA = Path(__file__).parent / "data"
KAFKA_RACKS = "0:rack1,1:rack3,2:rack3,3:rack2,4:rack2,5:rack1"


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def reassignment_json(topic, placement):
    """Kafka's formatAsReassignmentJson, written out from its documented shape."""
    parts = [{"topic": topic, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)}
             for p, r in sorted(placement.items())]
    return json.dumps({"version": 1, "partitions": parts}, separators=(",", ":"))


def test_place_reproduces_kafkas_rack_aware_example(capsys):
    code, out, err = run(capsys, "place", "--brokers", "0,1,2,3,4,5", "--racks", KAFKA_RACKS,
                         "--partitions", "7", "--replication-factor", "3", "--start-index", "0", "--topic", "foo")
    assert code == 0 and err == ""
    # AdminRackAwareTest / AdminUtils javadoc expectation.
    expected = {0: [0, 3, 1], 1: [3, 1, 5], 2: [1, 5, 4], 3: [5, 4, 2], 4: [4, 2, 0], 5: [2, 0, 3], 6: [0, 4, 2]}
    assert out.strip() == reassignment_json("foo", expected)


def test_place_striped_with_kafkas_mock_random(capsys):
    code, out, _ = run(capsys, "place", "--placer", "striped", "--brokers", "0,3,2,1", "--partitions", "5",
                       "--replication-factor", "3", "--seed", "mock")
    assert code == 0
    # StripedReplicaPlacerTest.testSuccessfulPlacement
    expected = {0: [2, 3, 0], 1: [3, 0, 1], 2: [0, 1, 2], 3: [1, 2, 3], 4: [1, 0, 2]}
    assert out.strip() == reassignment_json("topic", expected)


def test_place_report_goes_to_stderr(capsys):
    code, out, err = run(capsys, "place", "--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2",
                         "--start-index", "0", "--report")
    assert code == 0 and json.loads(out)["version"] == 1
    assert "OK: 0 hard" in err


def test_place_custom_placer_by_import_path(capsys, tmp_path, monkeypatch):
    (tmp_path / "my_placer.py").write_text(
        "def place(brokers, n, rf, fixed_start_index=-1, start_partition_id=-1, random=None):\n"
        "    return {p: [brokers[0].id] * rf for p in range(n)}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, err = run(capsys, "place", "--placer", "my_placer:place", "--brokers", "0,1", "--partitions", "1",
                         "--replication-factor", "2", "--report")
    assert code == 1 and "placement.distinct-brokers" in err


@pytest.mark.parametrize("args, fragment", [
    (["--brokers", "0,x", "--partitions", "1", "--replication-factor", "1"], "--brokers"),
    (["--brokers", "0,1,1", "--partitions", "1", "--replication-factor", "1"], "broker 1 is listed twice"),
    (["--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "4"],
     "InvalidReplicationFactorException: Replication factor: 4 larger than available brokers: 3."),
    (["--brokers", "0,1,2", "--racks", "0:a,1:b", "--partitions", "3", "--replication-factor", "2"],
     "AdminOperationException: Not all brokers have rack information"),
    (["--brokers", "0,1", "--racks", "0:a,7:b", "--partitions", "1", "--replication-factor", "1"],
     "broker 7 is not in --brokers"),
    (["--brokers", "0,1", "--partitions", "0", "--replication-factor", "1"],
     "InvalidPartitionsException: Number of partitions must be larger than 0."),
    (["--brokers", "0,1", "--partitions", "abc", "--replication-factor", "1"], "--partitions"),
    (["--brokers", "0,1", "--partitions", "1", "--replication-factor", "1", "--placer", "nope"], "unknown placer"),
    (["--brokers", "0,1", "--partitions", "1", "--replication-factor", "1", "--placer", "no_such_mod:x"],
     "cannot import module"),
    (["--brokers", "0,1", "--partitions", "1", "--replication-factor", "1", "--placer", "striped",
      "--start-index", "0"], "no start index"),
    (["--brokers", "0,1", "--partitions", "1", "--replication-factor", "1", "--seed", "x"], "--seed"),
])
def test_place_bad_input_is_one_line_exit_2(capsys, args, fragment):
    code, out, err = run(capsys, "place", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("kcheck: error: ") and fragment in err


def verify_json(capsys, *args):
    code, out, err = run(capsys, "verify", *args, "--json")
    return code, json.loads(out), err


def test_verify_describe_with_uneven_racks_reports_numbers(capsys):
    # Racks: us-east-1a = {1,2,3}, 1b = {4}, 1c = {5}. Derivation of every number below:
    # replicas per broker: 1:5 2:4 3:2 4:7 5:6 (24 in all), avg 4.8, p = 0.09 -> limits 4..6.
    # preferred leaders: 1:3 2:1 3:1 4:2 5:2 (9), avg 1.8 -> limits 1..2.
    # rack diversity: orders-3 = 1,2,4 spans 1a,1b (needs 3); payments-0 = 1,2 spans 1a (needs 2).
    # followers of broker 1's partitions (orders-0, orders-3, payments-0): 2:2 3:0 4:2 5:1, avg 1.25
    # -> limits 1..2, so broker 3 is short by one.
    code, rep, err = verify_json(capsys, str(DATA / "describe_uneven_racks.txt"),
                                 "--brokers-file", str(DATA / "brokers_uneven.txt"))
    assert code == 1 and err == ""
    got = {(v["invariant"], v["where"]): v["detail"] for v in rep["violations"]}
    assert set(got) == {
        ("placement.rack-diversity", "partition orders-3"),
        ("placement.rack-diversity", "partition payments-0"),
        ("placement.replica-spread", "broker 3"),
        ("placement.replica-spread", "broker 4"),
        ("placement.leader-spread", "broker 1"),
        ("placement.follower-spread", "broker 1"),
        # orders-3 is led by 2, not its preferred replica 1 (Leader: 2, Replicas: 1,2,4): partition health
        ("health.preferred-leader", "partition orders-3"),
        # orders-3's ISR 2,4: 2 of 3 replicas (TopicCommand's isUnderReplicated), 2 = min.insync.replicas
        # (isAtMinIsrPartitions)
        ("health.under-replicated", "partition orders-3"),
        ("health.at-min-isr", "partition orders-3"),
        # losing us-east-1a leaves orders-3 one in-sync replica (4) of the 2 it needs, payments-0 (1,2) none
        ("health.zone-loss", "topic orders"),
        ("health.zone-loss", "topic payments"),
    }
    assert got[("placement.rack-diversity", "partition orders-3")]["replicas_per_rack"] == {
        "us-east-1a": 2, "us-east-1b": 1}
    assert got[("placement.rack-diversity", "partition payments-0")]["racks_spanned"] == 1
    b3, b4 = got[("placement.replica-spread", "broker 3")], got[("placement.replica-spread", "broker 4")]
    assert (b3["count"], b3["lower"], b3["upper"], b3["excess"]) == (2, 4, 6, -2)
    assert (b4["count"], b4["excess"], b4["average"]) == (7, 1, 4.8)
    leader = got[("placement.leader-spread", "broker 1")]
    assert (leader["count"], leader["lower"], leader["upper"]) == (3, 1, 2)
    assert got[("placement.follower-spread", "broker 1")]["followers_per_broker"] == {2: 2, 3: 0, 4: 2, 5: 1} or \
        got[("placement.follower-spread", "broker 1")]["followers_per_broker"] == {"2": 2, "3": 0, "4": 2, "5": 1}
    assert "placement.rack-distribution" in rep["not_applicable"]


def test_verify_table_output_and_threshold(capsys):
    code, out, _ = run(capsys, "verify", str(DATA / "describe_uneven_racks.txt"),
                       "--brokers-file", str(DATA / "brokers_uneven.txt"))
    assert code == 1
    assert "partition orders-3 spans 2 rack(s), needs 3" in out
    assert "broker 4 has 7 replicas, 1 above the upper limit 6" in out
    assert "FAIL: 2 hard" in out
    # A looser threshold: p = 0.5 * 0.9 = 0.45 -> replica limits floor(2.64)=2 .. ceil(6.96)=7: all inside.
    _, rep, _ = verify_json(capsys, str(DATA / "describe_uneven_racks.txt"),
                            "--brokers-file", str(DATA / "brokers_uneven.txt"), "--threshold", "1.5")
    assert not [v for v in rep["violations"] if v["invariant"] == "placement.replica-spread"]


def test_place_then_verify_round_trip(capsys, tmp_path):
    code, out, _ = run(capsys, "place", "--brokers", "0,1,2,3,4,5", "--racks", KAFKA_RACKS, "--partitions", "6",
                       "--replication-factor", "3", "--start-index", "0")
    plan = tmp_path / "plan.json"
    plan.write_text(out)
    racks = tmp_path / "racks.txt"
    racks.write_text("\n".join(KAFKA_RACKS.split(",")) + "\n")
    code, rep, _ = verify_json(capsys, str(plan), "--brokers-file", str(racks))
    assert code == 0 and rep["ok"] and rep["violations"] == []


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("plan, brokers, fragment", [
    ('{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}', None, "plan"),
    ('{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,7]}]}', "1:a\n2:b\n",
     "partition foo-0: unknown broker id 7"),
    ('{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,1]}]}', None, "foo-0"),
    ('{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]},'
     '{"topic":"foo","partition":0,"replicas":[2,1]}]}', None, "foo-0"),
    ("Topic: foo\tPartitionCount: 1\tReplicationFactor: 4\tConfigs: \n"
     "\tTopic: foo\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\n", "1:a\n2:b\n3:c\n",
     "topic foo: replication factor 4 larger than available brokers: 3"),
    ('{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]}', "1:a\n2\n",
     "Not all brokers have rack information"),
    ("", None, "plan"),
    ("   \n\n", None, "plan"),
])
def test_verify_bad_input_is_one_line_exit_2(capsys, tmp_path, plan, brokers, fragment):
    args = [write(tmp_path, "plan", plan)]
    if brokers is not None:
        args += ["--brokers-file", write(tmp_path, "brokers", brokers)]
    code, out, err = run(capsys, "verify", *args)
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and err.startswith("kcheck: error: ") and fragment in err, err


def test_verify_missing_file_and_bad_threshold(capsys, tmp_path):
    code, _, err = run(capsys, "verify", str(tmp_path / "nope.json"))
    assert code == 2 and "nope.json" in err and err.count("\n") == 1
    code, _, err = run(capsys, "verify", str(DATA / "describe_uneven_racks.txt"), "--threshold", "0.5")
    assert code == 2 and "--threshold" in err


def test_verify_does_not_touch_its_inputs(capsys):
    before = (DATA / "describe_uneven_racks.txt").read_bytes()
    run(capsys, "verify", str(DATA / "describe_uneven_racks.txt"))
    assert (DATA / "describe_uneven_racks.txt").read_bytes() == before


def _assert_adminutils_placement_outcomes(rep):
    results = {(o["placer"], o["invariant"]): o for o in rep["outcomes"]}
    assert results[("adminutils", "placement.rack-diversity")]["result"] == "holds"
    # AdminUtils does not promise Cruise Control's rack distribution: racks {0,1,2} and {3,4}, RF 4,
    # start 1 gives [3,2,0,1] (3 replicas in one rack although the other could hold 2).
    finding = results[("adminutils", "placement.rack-distribution")]
    assert finding["result"] == "finding"
    assert finding["smallest_counterexample"]["replay"] == (
        "kcheck place --placer adminutils --brokers 0,1,2,3,4 --racks 0:a,1:a,2:a,3:b,4:b "
        "--partitions 1 --replication-factor 4 --start-index 1")


def test_check_one_placer_small_bound_json(capsys):
    """The placement half of the test below, fast: the same cases and verdicts for the placer named."""
    code, out, _ = run(capsys, "check", "--placer", "adminutils", "--max-brokers", "5", "--json")
    rep = json.loads(out)
    assert code == 0 and rep["ok"] and {o["placer"] for o in rep["outcomes"]} == {"adminutils"}
    assert rep["proofs"] == rep["replication_models"] == rep["rebalance_models"] == []
    _assert_adminutils_placement_outcomes(rep)


@pytest.mark.slow  # the whole main job (about a minute alone); CI's first step runs it, `kcheck check`, in full
def test_check_small_bound_json(capsys):
    code, out, _ = run(capsys, "check", "--max-brokers", "5", "--json")
    rep = json.loads(out)
    assert code == 0 and rep["ok"]
    _assert_adminutils_placement_outcomes(rep)


def test_console_script_process_level():
    # The installed entry point: exit codes and stderr at process level, no traceback.
    proc = subprocess.run([sys.executable, "-m", "kcheck", "verify", "/nonexistent/plan.json"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "kcheck", "place", "--brokers", "0,1", "--partitions", "2",
                           "--replication-factor", "2", "--start-index", "0"], capture_output=True, text=True)
    assert proc.returncode == 0 and json.loads(proc.stdout)["partitions"][1]["replicas"] == [1, 0]


def test_prove_refutes_rack_distribution_and_exits_1(capsys):
    code, out, _ = run(capsys, "prove", "--algorithm", "adminutils-rack-aware", "--invariant",
                       "placement.rack-distribution", "--max-brokers", "5", "--max-racks", "2",
                       "--max-partitions", "1", "--json")
    rep = json.loads(out)
    assert code == 1 and not rep["ok"]
    (result,) = rep["results"]
    ce = result["counterexample"]
    assert result["status"] == "refuted" and len(ce["brokers"]) == 5 and ce["replication_factor"] == 4


def test_prove_unbounded_distinct_brokers_exits_0(capsys):
    code, out, _ = run(capsys, "prove", "--algorithm", "adminutils", "--invariant", "placement.distinct-brokers")
    assert code == 0 and "all sizes" in out and "proved" in out


def test_prove_user_placer_by_exhaustive_enumeration(capsys, tmp_path, monkeypatch):
    # A "proposed placer" that always puts partition p's followers right after its leader, ignoring racks.
    (tmp_path / "proposed.py").write_text(
        "def place(brokers, n, rf, fixed_start_index=-1, start_partition_id=-1, random=None):\n"
        "    ids = [b.id for b in brokers]\n"
        "    return {p: [ids[(p + j) % len(ids)] for j in range(rf)] for p in range(n)}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = run(capsys, "prove", "--placer", "proposed:place", "--invariant", "placement.rack-diversity",
                       "--max-brokers", "3", "--max-partitions", "2", "--max-rf", "2")
    # With 2 brokers, one rack needs 1 rack and two racks put [0,1] on both. The smallest break is
    # 3 brokers in racks a={0,1}, b={2} with RF 2: partition 0 = [0,1] stays in rack a.
    assert code == 1 and "refuted" in out and "3 brokers, racks a={0,1}, b={2}, 1 partition(s), RF 2" in out


@pytest.mark.parametrize("args, fragment", [
    (["--algorithm", "nope"], "--algorithm"),
    (["--invariant", "placement.nope"], "--invariant"),
    (["--max-brokers", "0"], "--max-brokers"),
    (["--placer", "no_such_module:x"], "cannot import"),
])
def test_prove_bad_input(capsys, args, fragment):
    code, out, err = run(capsys, "prove", *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and fragment in err


def test_optimize_reports_the_gap(capsys):
    # 6 brokers, 10 partitions RF 3, start 0: replica spread 2 where 0 is possible (see test_smt).
    code, out, _ = run(capsys, "optimize", "--brokers", "0,1,2,3,4,5", "--partitions", "10",
                       "--replication-factor", "3", "--start-index", "0")
    assert code == 0
    line = next(ln for ln in out.splitlines() if "replica spread" in ln)
    assert [c.strip() for c in line.split("│")[2:5]] == ["2", "0", "2"]


def test_main_job_reports_a_rebalance_model_failure(monkeypatch):
    # An assignor that drops the last partition of every member breaks assignment.complete as soon as a
    # member owns two partitions; the main job must say so, with the story of group events.
    from kcheck.check import run_rebalance_models
    from kcheck.reference.assignors.client import RangeAssignor
    from kcheck.reference.assignors.registry import ASSIGNORS, AssignorInfo

    class Lossy(RangeAssignor):
        def assign_partitions(self, partitions_per_topic, subscriptions):
            out = super().assign_partitions(partitions_per_topic, subscriptions)
            return {m: tps[:-1] if len(tps) > 1 else tps for m, tps in out.items()}

    monkeypatch.setattr("kcheck.reference.assignors.registry.ASSIGNORS",
                        {"lossy": AssignorInfo("lossy", Lossy, False, ASSIGNORS["range"].guarantees)})
    (outcome,) = run_rebalance_models(examples=100, steps=20)
    assert outcome.assignor == "lossy" and "assignment.complete" in outcome.failure
    assert "join" in outcome.failure  # the shrunk history of group events
