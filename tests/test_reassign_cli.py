"""`kcheck reassign` and `kcheck verify-reassignment` end to end: the seed's six rows, exit codes, one-line errors."""

import json
from pathlib import Path

import pytest

from kcheck.cli import main

DATA = Path(__file__).parent / "data" / "reassign"
CURRENT, BROKERS = str(DATA / "describe_current.txt"), str(DATA / "brokers.txt")

# The seed's table (003), typed as it is printed there: RS, AR, RR, leader, ISR; then Kafka's label of the row
# (the seed's phase column: 초기 상태 / A 단계의 2번째 / B 단계 / B 단계의 3번째 / 4번째 / 6번째).
SEED_ROWS = [
    ["{1, 2, 3}", "{}", "{}", "1", "{1, 2, 3}", "initial state"],
    ["{4, 5, 6, 1, 2, 3}", "{4, 5, 6}", "{1, 2, 3}", "1", "{1, 2, 3}", "step A2"],
    ["{4, 5, 6, 1, 2, 3}", "{4, 5, 6}", "{1, 2, 3}", "1", "{1, 2, 3, 4, 5, 6}", "phase B"],
    ["{4, 5, 6, 1, 2, 3}", "{4, 5, 6}", "{1, 2, 3}", "4", "{1, 2, 3, 4, 5, 6}", "step B3"],
    ["{4, 5, 6, 1, 2, 3}", "{4, 5, 6}", "{1, 2, 3}", "4", "{4, 5, 6}", "step B4"],
    ["{4, 5, 6}", "{}", "{}", "4", "{4, 5, 6}", "step B6"],
]


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def table_rows(out):
    """The cells of a Rich table's body rows (lines drawn with │)."""
    rows = []
    for line in out.splitlines():
        if line.startswith("│"):
            rows.append([c.strip() for c in line.strip("│").split("│")])
    return rows


def test_reassign_prints_exactly_the_seeds_six_rows(capsys):
    code, out, err = run(capsys, "reassign", "--from", "1,2,3", "--to", "4,5,6")
    assert code == 0 and err == ""
    rows = table_rows(out)
    assert [r[0] for r in rows] == ["1", "2", "3", "4", "5", "6"]
    assert [r[1:] for r in rows] == SEED_ROWS


def test_reassign_all_steps_shows_the_seed_logs_epochs(capsys):
    code, out, _ = run(capsys, "reassign", "--from", "1,2,3", "--to", "4,5,6", "--all-steps", "--leader-epoch", "5")
    assert code == 0
    rows = {r[0]: r for r in table_rows(out) if r[0] in ("A1", "B3", "B6")}
    assert rows["A1"][6] == "6" and rows["B3"][4:7] == ["4", "5,1,6,2,3,4", "7"]
    assert rows["B6"][1:7] == ["{4, 5, 6}", "{}", "{}", "4", "5,6,4", "10"]


def test_reassign_kraft_and_json(capsys):
    code, out, _ = run(capsys, "reassign", "--from", "1,2,3", "--to", "4,5,6", "--controller", "kraft")
    assert code == 0
    last = table_rows(out)[-1]
    assert last[:6] == ["caught up 6", "{4, 5, 6}", "{}", "{}", "4", "5,6,4"]
    code, out, _ = run(capsys, "reassign", "--from", "1,2,3", "--to", "4,5,6", "--json")
    doc = json.loads(out)
    seed = [s for s in doc["steps"] if s["seed_row"]]
    assert [s["zookeeper"]["leader"] for s in seed] == [1, 1, 1, 4, 4, 4]
    assert seed[-1]["zookeeper"]["replicas"] == [4, 5, 6]


@pytest.mark.parametrize("args,message", [
    (["--from", "1,2,3", "--to", "4,x"], "--to: '4,x' is not a comma-separated list of broker ids"),
    (["--from", "1,2,3", "--to", "4", "--leader", "7"], "--leader: broker 7 is not in --from"),
    (["--from", "1,2,3", "--to", "4", "--isr", "2,3"], "--isr: the ISR must contain the leader"),
    (["--from", "1,1", "--to", "4"], "--from: broker 1 is listed twice"),
    (["--from", "1,2", "--to", "4", "--controller", "raft"], "--controller: 'raft' is neither zk nor kraft"),
])
def test_reassign_bad_input_is_one_line_exit_2(capsys, args, message):
    code, out, err = run(capsys, "reassign", *args)
    assert code == 2 and out == ""
    assert err == f"kcheck: error: {message}\n"


def test_verify_reassignment_safe_plan_exits_0(capsys):
    code, out, _ = run(capsys, "verify-reassignment", CURRENT, str(DATA / "plan_safe.json"), "--brokers-file", BROKERS)
    assert code == 0
    rows = {r[0]: r for r in table_rows(out) if r[0].startswith("payments-")}
    # payments-0: 1,3,5 -> 2,3,5 (KRaft lists: adding [2], removing [1]; RS = target ++ removing)
    assert rows["payments-0"][1:8] == ["1,3,5", "2,3,5", "2", "1", "4 (2,3,5,1)", "1 → 2*", "1,3,5"]
    assert rows["payments-2"][5:7] == ["4 (3,6,1,5)", "3"]  # the leader stays


def test_verify_reassignment_unsafe_plan_exits_1_and_names_each_problem(capsys):
    code, out, _ = run(capsys, "verify-reassignment", CURRENT, str(DATA / "plan_unsafe.json"), "--brokers-file",
                       BROKERS, "--json")
    assert code == 1
    doc = json.loads(out)
    hard = {(v["invariant"], v["where"]) for v in doc["violations"] if v["severity"] == "hard"}
    assert hard == {
        ("reassignment.min-isr-during-move", "partition payments-0"),  # target [4] < min.insync.replicas=2
        ("placement.replication-factor", "partition payments-0"),  # RF 1 in a topic of RF 3
        ("reassignment.min-isr-now", "partition payments-3"),  # ISR [4] already below 2
    }
    moves = {m["partition"]: m for m in doc["moves"]}
    assert moves["payments-0"]["lowest_isr_during_move"] == 1 and moves["payments-0"]["min_insync_replicas"] == 2
    assert moves["payments-1"]["lowest_isr_during_move"] == 2  # ISR 2,4: 6 out of sync, 5 joins, 6 leaves


def test_verify_reassignment_zk_and_kraft_differ_on_replacing_a_move(capsys):
    """In flight 1,3,5 -> 2,4,6 with ISR 1,2,4; new plan 1,3,6. ZK rebuilds from the origin and stops 2 and 4 at
    once (ISR 1 < 2); KRaft up to 4.2 keeps them as removing replicas until 3 and 6 catch up (from 4.3 the move
    never completes: tests/test_release_gaps.py)."""
    args = [str(DATA / "describe_inflight.txt"), str(DATA / "plan_inflight.json"), "--brokers-file", BROKERS]
    code, out, _ = run(capsys, "verify-reassignment", *args, "--controller", "zk", "--json")
    assert code == 1
    (move,) = json.loads(out)["moves"]
    assert (move["transient_replicas"], move["adding"], move["removing"], move["lowest_isr_during_move"]) == (
        [1, 3, 6, 5], [6], [5], 1)
    code, out, _ = run(capsys, "verify-reassignment", *args, "--controller", "kraft", "--kafka-version", "4.2.2",
                       "--json")
    assert code == 0
    (move,) = json.loads(out)["moves"]
    assert (move["transient_replicas"], move["adding"], move["removing"], move["lowest_isr_during_move"]) == (
        [1, 3, 6, 2, 4, 5], [2, 4, 6], [2, 4, 5], 3)


def test_verify_reassignment_without_brokers_file_says_where_brokers_come_from(capsys):
    code, out, _ = run(capsys, "verify-reassignment", CURRENT, str(DATA / "plan_safe.json"))
    assert code == 0 and out.startswith("Note: brokers derived from CURRENT and PROPOSED")


def test_verify_reassignment_min_isr_option_overrides_the_describe(capsys):
    code, _, _ = run(capsys, "verify-reassignment", CURRENT, str(DATA / "plan_safe.json"), "--brokers-file", BROKERS,
                     "--min-insync-replicas", "4")
    assert code == 1  # every partition's ISR (3) is below 4


@pytest.mark.parametrize("current,proposed,extra,message", [
    ("describe_current.txt", "missing.json", [], "missing.json: no such file"),
    ("describe_current.txt", "describe_current.txt", [], "PROPOSED must be a reassignment JSON"),
    ("describe_current.txt", "plan_unknown_partition.json", [],
     "plan_unknown_partition.json: partition payments-9 is not in CURRENT"),
    ("describe_current.txt", "plan_safe.json", ["--min-insync-replicas", "0"], "--min-insync-replicas: 0 is below 1"),
    ("describe_current.txt", "plan_safe.json", ["--controller", "ko"], "--controller: 'ko' is not one of kraft, zk"),
])
def test_verify_reassignment_bad_input_is_one_line_exit_2(capsys, tmp_path, current, proposed, extra, message):
    (tmp_path / "plan_unknown_partition.json").write_text(
        '{"version":1,"partitions":[{"topic":"payments","partition":9,"replicas":[1,2,3]}]}')

    def where(name):
        return str(DATA / name) if (DATA / name).exists() else str(tmp_path / name)

    code, out, err = run(capsys, "verify-reassignment", where(current), where(proposed), *extra)
    assert code == 2 and out == ""
    assert err.startswith("kcheck: error: ") and message in err and err.count("\n") == 1


def test_verify_reassignment_unknown_broker_in_brokers_file(capsys, tmp_path):
    small = tmp_path / "brokers.txt"
    small.write_text("1:a\n2:a\n3:b\n")
    code, _, err = run(capsys, "verify-reassignment", CURRENT, str(DATA / "plan_safe.json"), "--brokers-file",
                       str(small))
    assert code == 2 and "partition payments-0: unknown broker id 5" in err


def test_verify_reassignment_target_broker_outside_the_cluster_is_unsafe(capsys, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"payments","partition":0,"replicas":[1,3,7]}]}')
    code, out, _ = run(capsys, "verify-reassignment", CURRENT, str(plan), "--brokers-file", BROKERS, "--json")
    assert code == 1
    assert "reassignment.brokers-registered" in {v["invariant"] for v in json.loads(out)["violations"]}
