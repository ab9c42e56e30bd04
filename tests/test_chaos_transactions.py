"""Transactions under faults (kcheck.cluster.txn_chaos): the checks on constructed histories, each able to fail, the
faults' windows, the random schedules aimed at the coordinator, the JSON document against txn-history.schema.json,
`kcheck chaos --producers transactional`'s bad input; and on the session cluster (`kafka_cluster`, the default
release: transaction version 2 on 4.x) a campaign with a partition leader and the transaction coordinator's broker
killed, and the command line end to end with the coordinator killed, moved and paused, which must find no anomaly."""

from __future__ import annotations

import json
import uuid

import pytest

from cli_support import run
from kcheck.cluster import netns
from kcheck.cluster.history import Fault, Quorum
from kcheck.cluster.txn_chaos import (
    ANOMALY_KINDS,
    SCHEMA_NAME,
    SCHEMA_VERSION,
    TXN_FAULTS,
    TxnCampaign,
    TxnHistory,
    TxnOutcome,
    TxnSettings,
    check,
    fault_windows,
    random_txn_schedule,
    side_by_side,
    transaction_of,
    txn_history_schema,
    value_of,
)
from kcheck.cluster.txn_chaos import Txn as T
from kcheck.cluster.txn_chaos import TxnRead as R


def txn(number: int, outcome: str, intent: str = "commit", records: int = 2, partitions: int = 2) -> T:
    values = tuple(value_of(0, 0, number, p, i) for p in range(partitions) for i in range(records))
    return T(0, 0, number, values, intent, outcome, float(number), float(number) + 0.5)


def final_reads(*txns: T, skip: int = 0, start: int = 0) -> list[R]:
    """Each transaction's values in the final read, at increasing offsets per partition, `skip` of them left out."""
    offsets = {0: start, 1: start}
    out = []
    for x in txns:
        for v in x.values[skip:]:
            p = int(v.split("-")[4])
            out.append(R(9.0, p, offsets[p], v, final=True))
            offsets[p] += 1
        for p in offsets:  # a commit or abort marker takes an offset
            offsets[p] += 1
    return out


def counts(v) -> dict[str, int]:
    return {k: len(v.anomalies[k]) for k in ANOMALY_KINDS}


NONE = dict.fromkeys(ANOMALY_KINDS, 0)


def test_values_name_their_transaction():
    assert value_of(3, 1, 42, 0, 2) == "txn-3-1-00042-0-2"
    assert transaction_of("txn-3-1-00042-0-2") == (3, 1, 42)
    assert transaction_of("plain-0-2-000123") is None
    assert transaction_of("txn-3-1-0004²-0-2") is None  # ASCII digits only


def test_a_clean_history_passes():
    a, b = txn(0, "committed"), txn(1, "aborted", "abort")
    v = check([a, b], final_reads(a), final_complete=True)
    assert counts(v) == NONE and v.ok
    assert v.outcomes == {"committed": 1, "aborted": 1, "unknown": 0}


def test_a_record_of_an_aborted_transaction_read_is_an_aborted_read_live_or_final():
    a, b = txn(0, "committed"), txn(1, "aborted", "abort")
    live = [R(1.2, 0, 5, b.values[0])]
    v = check([a, b], final_reads(a) + live, final_complete=True)
    assert counts(v) == {**NONE, "aborted-read": 1} and not v.ok
    v = check([a, b], final_reads(a, b), final_complete=True)
    assert counts(v)["aborted-read"] == len(b.values)


def test_a_committed_transaction_missing_from_the_final_read_is_a_lost_write():
    a, b = txn(0, "committed"), txn(1, "committed")
    v = check([a, b], final_reads(a), final_complete=True)
    assert counts(v) == {**NONE, "lost-write": 1}
    assert "4 of 4 records" in v.anomalies["lost-write"][0]


def test_a_commit_the_client_reported_despite_a_failed_send_is_named_beside_the_lost_write():
    # kafka-python 3.0.12 on 4.4.0: commit_transaction() returned after 3 of 6 sends failed with
    # InvalidProducerEpochError, and none of the records was in the final read
    a = txn(0, "committed")
    b = T(0, 0, 1, txn(1, "committed").values, "commit", "committed", 6.2, 30.1, "",
          ("InvalidProducerEpochError",) * 2 + ("0:160", "0:161", "1:160", "1:161"))
    v = check([a, b], final_reads(a), final_complete=True)
    assert counts(v) == {**NONE, "lost-write": 1}
    assert len(v.commit_after_failed_send) == 1 and "InvalidProducerEpochError" in v.commit_after_failed_send[0]


def test_part_of_a_transaction_in_the_final_read_is_torn_and_a_committed_one_also_lost():
    a, b = txn(0, "committed"), txn(1, "unknown")
    v = check([a, b], final_reads(a, skip=1) + final_reads(b, skip=3, start=10), final_complete=True)
    assert counts(v) == {**NONE, "lost-write": 2, "torn-transaction": 2}
    assert v.resolved == {"committed": 1, "aborted": 0}


def test_an_unknown_outcome_is_resolved_by_the_reads_and_never_an_aborted_read():
    a, b, c = txn(0, "committed"), txn(1, "unknown"), txn(2, "unknown")
    v = check([a, b, c], final_reads(a, b), final_complete=True)
    assert counts(v) == NONE and v.resolved == {"committed": 1, "aborted": 1}
    # read live, so committed: then missing from the final read is a lost write
    v = check([a, c], final_reads(a) + [R(3.0, 0, 9, c.values[0])], final_complete=True)
    assert counts(v) == {**NONE, "lost-write": 1}


def test_a_record_read_at_two_offsets_is_a_duplicate():
    a = txn(0, "committed")
    reads = final_reads(a)
    v = check([a], [*reads, R(2.0, 0, 0, a.values[0])], final_complete=True)
    assert counts(v) == NONE  # the same offset read again is no duplicate
    v = check([a], [*reads, R(2.0, 0, 7, a.values[0])], final_complete=True)
    assert counts(v) == {**NONE, "duplicate": 1}


def test_an_incomplete_final_read_finds_no_lost_write_and_is_not_ok():
    a = txn(0, "committed")
    v = check([a], [], final_complete=False)
    assert counts(v) == NONE and not v.ok


# ---------------------------------------------------------------------------------------------------------
# faults: windows, schedules


FAULTS = [Fault(2.0, "kill", "start", (2,), "", 0, "coordinator"), Fault(5.0, "start", "end", (2,), "", 1),
          Fault(6.0, "restart", "start", (3,), "", 2, "leader"), Fault(8.5, "restart", "end", (3,), "", 2),
          Fault(9.0, "reassign", "start", (1,), "__transaction_state-1", 3, "coordinator"),
          Fault(10.0, "elect-preferred", "skipped", (1,), "not needed", 4, "coordinator"),
          Fault(11.0, "pause", "start", (1,), "", 5, "leader")]


def test_each_fault_injected_has_its_window_from_its_start_to_its_end():
    windows = [(w["kind"], w["role"], w["brokers"], w["start"], w["end"]) for w in fault_windows(FAULTS)]
    assert windows == [("kill", "coordinator", [2], 2.0, 5.0), ("restart", "leader", [3], 6.0, 8.5),
                       ("reassign", "coordinator", [1], 9.0, 9.0), ("pause", "leader", [1], 11.0, None)]
    # an end on another broker does not end it
    assert fault_windows([FAULTS[0], Fault(3.0, "start", "end", (3,), "", 1)])[0]["end"] is None


def test_an_anomaly_names_the_faults_during_its_transaction():
    a = txn(0, "committed")  # 0.0-0.5 s: before every fault
    b = T(0, 0, 1, txn(1, "committed").values, "commit", "committed", 4.0, 7.0)  # during the kill and the restart
    v = check([a, b], final_reads(a), final_complete=True, faults=FAULTS)
    assert counts(v) == {**NONE, "lost-write": 1}
    lost = v.anomalies["lost-write"][0]
    assert "during kill 2 (coordinator) 2.0s-5.0s" in lost and "during restart 3 (leader) 6.0s-8.5s" in lost
    assert "reassign" not in lost and "pause" not in lost
    assert v.status == "anomalies" and int(v.exit_code) == 1
    assert check([a], final_reads(a), final_complete=True, healed=False).status == "incomplete"
    assert int(check([a], final_reads(a), final_complete=True).exit_code) == 0


def test_a_random_transactions_schedule_aims_at_the_coordinator_and_partition_0s_leader():
    steps = random_txn_schedule(TxnSettings(duration=120, seed=3), TXN_FAULTS)
    faults = [st for st in steps if st.ends is None]
    assert {st.kind for st in faults} == set(TXN_FAULTS)
    assert {st.target for st in faults if st.kind in ("elect-preferred", "reassign")} == {"coordinator"}
    assert {st.target for st in faults if st.kind not in ("elect-preferred", "reassign")} == {"coordinator", "leader"}
    quorum = random_txn_schedule(TxnSettings(duration=120, seed=4, controllers=3), ("kill", "pause"))
    assert {"active-controller", "controller"} & {st.target for st in quorum}


# ---------------------------------------------------------------------------------------------------------
# the JSON document and the command line


def test_the_json_document_fits_the_shipped_schema_and_names_its_version():
    from test_chaos import schema_errors

    schema = txn_history_schema()
    assert schema["properties"]["schema"]["const"] == SCHEMA_NAME
    assert schema["properties"]["schema_version"]["enum"] == [1, SCHEMA_VERSION]
    a, b = txn(0, "committed"), txn(1, "aborted", "abort")
    h = TxnHistory(began=0.0)
    for x in (a, b):
        h.add(x)
    for r in [*final_reads(a), R(0.7, 0, 4, b.values[0])]:
        h.add(r)
    for e in [*FAULTS, Quorum(11.1, 1001, 3, 5)]:
        h.events.add(e)
    v = check(h.txns, h.reads, True, h.faults)
    s = TxnSettings(topic="t", faults=TXN_FAULTS, controllers=3)
    o = TxnOutcome("4.4.0", 2, s, h, v, 30.5, ["a note"], random_txn_schedule(s, TXN_FAULTS), 1.25,
                   {"version": "4.4.0", "attached": True})
    doc = json.loads(o.document())
    assert schema_errors(doc, schema) == []
    assert doc["verdict"]["status"] == "anomalies" and len(doc["verdict"]["anomalies"]["aborted-read"]) == 1
    assert [w["kind"] for w in doc["verdict"]["faults"]] == ["kill", "restart", "reassign", "pause"]
    assert {e["type"] for e in doc["events"]} == {"fault", "quorum"}
    # strict: a field gone, an unknown one, a wrong outcome, a newer version
    doc["txns"][0].pop("sends")
    doc["reads"][0]["extra"] = 1
    doc["txns"][1]["outcome"] = "maybe"
    doc["schema_version"] = SCHEMA_VERSION + 1
    assert len(schema_errors(doc, schema)) == 4


def test_the_cli_refuses_options_that_do_not_apply_to_transactions_in_one_line(capsys, tmp_path):
    schedule = tmp_path / "s.txt"
    schedule.write_text("1 kill coordinator\n3 start\n")
    for args, expected in (
            (["--producers", "transactional,idempotent"], "--producers: transactional runs the transactions campaign "
                                                          "alone"),
            (["--producers", "transactional", "--rate", "10"], "--rate: applies to the record producers"),
            (["--client", "java"], "--client: applies only with --producers transactional"),
            (["--producers", "transactional", "--client", "python"], "--client: 'python' is not a transactional "
                                                                     "client (java, kafka-python)"),
            (["--producers", "transactional", "--faults", "kill,delete-records"], "--faults: delete-records does not "
                                                                                  "apply"),
            (["--schedule", str(schedule)], f"{schedule}:1: coordinator is a role of the transactions campaign")):
        code, out, err = run(capsys, "chaos", *args)
        assert (code, out) == (2, "") and err.startswith(f"kcheck: error: {expected}") and err.count("\n") == 1, err


# ---------------------------------------------------------------------------------------------------------
# on the session cluster


@pytest.mark.kafka
@pytest.mark.cluster
def test_transactions_survive_a_leader_and_a_coordinator_kill(cluster):
    s = TxnSettings(topic=f"kcheck-txn-{uuid.uuid4().hex[:8]}", duration=10.0, producers=2, records=2,
                    kill_leader_at=1.0, kill_coordinator_at=5.0, down=2.0)
    o = TxnCampaign(cluster, s, say=lambda line: None).run()
    v = o.verdict
    assert {k: v.anomalies[k] for k in ANOMALY_KINDS} == {k: [] for k in ANOMALY_KINDS}
    assert v.final_complete and v.ok
    assert [f.role for f in o.history.faults if f.kind == "kill"] == ["leader", "coordinator"]
    assert v.outcomes["committed"] > 0 and v.outcomes["aborted"] > 0
    assert sum(r.final for r in o.history.reads) > 0
    if int(cluster.version.split(".")[0]) >= 4:
        assert o.transaction_version == 2  # 4.x formats with transaction.version 2 (KIP-890)
    assert side_by_side([o])[0] == ["release", cluster.version]


@pytest.mark.kafka
@pytest.mark.cluster
def test_the_cli_runs_transactions_through_the_coordinators_kill_move_and_pause(cluster, capsys, tmp_path):
    """`kcheck chaos --producers transactional --dir`: the coordinator's broker killed and started, the coordinator
    moved (reassign coordinator), then paused and resumed; exit 0, the JSON fits its schema with every fault and its
    window, and the role named the broker Kafka names as the coordinator (DescribeTransactions)."""
    from kafka.admin import KafkaAdminClient

    from kcheck.cluster.admin import partition_states
    from test_chaos import schema_errors

    schedule = tmp_path / "s.txt"
    schedule.write_text("0.5 kill coordinator\n2.5 start\n3.5 reassign coordinator\n5 pause coordinator\n7 resume\n")
    out, topic = tmp_path / "t.json", f"txn-cli-{uuid.uuid4().hex[:8]}"
    code, stdout, err = run(capsys, "chaos", "--producers", "transactional", "--dir", str(cluster.directory),
                            "--schedule", str(schedule), "--duration", "8", "--partitions", "2", "--topic", topic,
                            "--json", str(out))
    assert code == 0, err
    assert "CLEAN: no anomaly" in stdout and "transaction.version 2" in stdout
    doc = json.loads(out.read_text())
    assert schema_errors(doc, txn_history_schema()) == []
    assert doc["verdict"]["status"] == "clean" and doc["verdict"]["outcomes"]["committed"] > 0
    windows = {w["kind"]: w for w in doc["verdict"]["faults"]}
    assert set(windows) == {"kill", "reassign", "pause"}, doc["events"]
    assert all(w["role"] == "coordinator" and w["end"] is not None for w in windows.values())
    assert "__transaction_state-" in windows["reassign"]["note"]
    # the role is the coordinator Kafka names for producer 0's transactional id, now as during the campaign
    tid = f"{topic}-tx-0"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap.split(","), client_id="kcheck-test")
    try:
        coordinator = admin.describe_transactions([tid])[tid].coordinator_id
    finally:
        admin.close()
    p = int(windows["reassign"]["note"].split(":")[0].rsplit("-", 1)[1])
    assert partition_states(cluster.bootstrap, "__transaction_state")[p].leader == coordinator


@pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))
@pytest.mark.slow  # a cluster of its own, in namespaces (~50 s)
@pytest.mark.cluster
@pytest.mark.kafka
def test_transactions_survive_the_coordinator_cut_from_every_node_then_from_the_controllers(tmp_path):
    """4.4.0 in namespaces: the coordinator's broker cut from every other node both ways (its transactions wait or
    time out; InitProducerId of a new session finds the coordinator elsewhere once the cut broker loses leadership),
    healed, then cut from the controllers only; no anomaly, both cuts recorded with their windows and healed."""
    from kcheck.cluster.chaos import CAMPAIGN_BROKER_CONFIG, parse_schedule
    from kcheck.cluster.local import LocalCluster

    s = TxnSettings(topic=f"kcheck-txn-{uuid.uuid4().hex[:8]}", duration=16.0, records=2, network=True)
    schedule = parse_schedule("1 partition coordinator\n7 heal\n9 partition-from-quorum coordinator\n14 heal\n", "s")
    with LocalCluster("4.4.0", brokers=3, directory=tmp_path / "c", config=CAMPAIGN_BROKER_CONFIG,
                      network=True) as cluster:
        o = TxnCampaign(cluster, s, lambda line: None, schedule).run()
        assert cluster.network is not None and not cluster.network.cuts
    v = o.verdict
    assert {k: v.anomalies[k] for k in ANOMALY_KINDS} == {k: [] for k in ANOMALY_KINDS} and v.ok, v.anomalies
    windows = [(w["kind"], w["role"]) for w in v.faults]
    assert windows == [("partition", "coordinator"), ("partition-from-quorum", "coordinator")], o.history.faults
    assert all(w["end"] is not None for w in v.faults)
    assert v.outcomes["committed"] > 0


@pytest.mark.slow  # a cluster of its own (~35 s)
@pytest.mark.cluster
@pytest.mark.kafka
def test_ctrl_c_resumes_the_paused_coordinator_kills_the_producers_and_stops_the_cluster(tmp_path):
    """Ctrl-C while the coordinator's broker is paused: exit 130, one line saying the broker was resumed and the
    cluster stopped, no --json file, and no Java producer left (they run in sessions of their own)."""
    import subprocess

    from test_interrupts import _interrupt

    schedule = tmp_path / "s.txt"
    schedule.write_text("1 pause coordinator\n50 resume\n")
    topic = f"txn-int-{uuid.uuid4().hex[:8]}"
    code, lines, seconds = _interrupt(["chaos", "--producers", "transactional", "--schedule", str(schedule),
                                       "--duration", "60", "--topic", topic, "--json", str(tmp_path / "t.json")],
                                      tmp_path, after=1.0, wait_for=" pause ")
    assert code == 130 and "resumed broker(s)" in lines[-1] and "stopped the cluster it started" in lines[-1], lines
    assert lines[-1].startswith("kcheck: interrupted (SIGINT): stopped, no output written; ")
    assert seconds < 10 and not (tmp_path / "t.json").exists()
    left = subprocess.run(["pgrep", "-f", f"KcheckTxnProducer.java .* {topic} "], capture_output=True, text=True)
    assert left.stdout == "", left.stdout
