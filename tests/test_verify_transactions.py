"""`kcheck verify-transactions` on real `kafka-transactions.sh` outputs (tests/data/transactions/make.py: Kafka's
TransactionsCommand of 3.9.1, 4.0.2, 4.1.2 and 4.4.0 run against transactions set up on a 4.4.0 cluster; what was
set up is truth.json, each output's command index.json). No JVM here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kcheck.cli import main
from kcheck.gate.transactions import verify
from kcheck.inputs.formats import InputError
from kcheck.inputs.tool_outputs import identify
from kcheck.inputs.transactions import HEADERS, parse, read_pastes

DATA = Path(__file__).parent / "data" / "transactions"
INDEX = json.loads((DATA / "index.json").read_text())
TRUTH = json.loads((DATA / "truth.json").read_text())
TABLES = [e for e in INDEX if e["exit"] == 0]
RELEASES = sorted({e["tool"] for e in INDEX})


def _subcommand(entry: dict) -> str:
    return entry["args"][2]


def _arg(entry: dict, name: str) -> str:
    return entry["args"][entry["args"].index(name) + 1]


def _file(release: str, name: str) -> str:
    return str(DATA / release / f"{name}.txt")


def _rows(path: str, partition: str | None = None) -> list[dict[str, str]]:
    paste = read_pastes([path], partition)
    return [dict(zip(HEADERS[t.kind], cells, strict=True)) for t in paste.tables for _, cells in t.rows]


@pytest.mark.parametrize("entry", TABLES, ids=[e["file"] for e in TABLES])
def test_every_table_kafka_printed_is_read(entry):
    text = (DATA / entry["file"]).read_text()
    paste = parse(text, entry["file"])
    assert [t.kind for t in paste.tables] == [_subcommand(entry)]
    assert not paste.tool_errors
    # the same when a terminal's copy turned the tabs into spaces
    spaced = parse(text.expandtabs(8), entry["file"])
    assert [t.rows for t in spaced.tables] == [t.rows for t in paste.tables]
    other = identify(text)
    assert other is not None and other.what == f"kafka-transactions output ({_subcommand(entry)})"


@pytest.mark.parametrize("release", RELEASES)
def test_list_and_describe_show_what_was_set_up(release):
    listed = {r["TransactionalId"]: r for r in _rows(_file(release, "list"))}
    assert set(listed) == {t for t in TRUTH if t.endswith("-1") and t != "stuck-1"}
    for tid, truth in TRUTH.items():
        if tid not in listed:
            continue
        (row,) = _rows(_file(release, f"describe.{tid}"))
        assert row["TransactionalId"] == tid and row["ProducerId"] == listed[tid]["ProducerId"]
        state = row["TransactionState"]
        if truth["state"].startswith("open"):
            assert state == "Ongoing" and set(row["TopicPartitions"].split(",")) == set(truth["partitions"])
        elif truth["state"] == "committed":
            assert state == "CompleteCommit"
        elif truth["state"] == "aborted":
            assert state == "CompleteAbort"
        else:  # fenced-1 (its first producer's transaction aborted) and hanging-1 (committed without hang-0)
            assert state in ("Empty", "CompleteAbort", "CompleteCommit") and not row["TopicPartitions"]


@pytest.mark.parametrize("release", RELEASES)
def test_find_hanging_rows_are_hard_findings_with_kafkas_abort_command(release):
    v = verify(read_pastes([_file(release, "find-hanging.hang")]))
    (hanging,) = _rows(_file(release, "describe.hanging-1"))
    (f,) = v.findings
    assert f.check == "transactions.hanging" and f.hard and v.failed
    assert f.place == f"hang-0 producer {hanging['ProducerId']}"
    (row,) = _rows(_file(release, "find-hanging.hang"))
    assert f.fix.endswith(f"abort --topic hang --partition 0 --start-offset {row['StartOffset']}")
    quiet = verify(read_pastes([_file(release, "find-hanging.broker-1")]))
    assert not quiet.findings and quiet.checked == ["transactions.hanging"]


@pytest.mark.parametrize("release", RELEASES)
def test_list_beside_describe_producers_finds_the_hanging_transaction(release):
    listed = _file(release, "list")
    v = verify(read_pastes([listed, _file(release, "describe-producers.hang-0")], "hang-0"))
    (hanging,) = _rows(_file(release, "describe.hanging-1"))
    (f,) = v.findings
    assert f.check == "transactions.unknown-open" and f.hard
    assert f.place == f"hang-0 producer {hanging['ProducerId']}"
    assert "hanging-1 is Empty" in f.message or "hanging-1 is Complete" in f.message
    for tp in ("orders-0", "orders-1"):  # open-1's and expired-1's transactions are their coordinators'
        ok = verify(read_pastes([listed, _file(release, f"describe-producers.{tp}")], tp))
        assert not ok.findings and ok.open_on_partitions
        assert ok.checked == ["transactions.unknown-open"]


@pytest.mark.parametrize("release", RELEASES)
def test_a_transaction_past_its_timeout_is_found_and_one_within_it_is_not(release):
    (row,) = _rows(_file(release, "describe.expired-1"))
    v = verify(read_pastes([_file(release, "describe.expired-1")]))
    (f,) = v.findings
    assert f.check == "transactions.timed-out" and f.place.startswith("transactional id expired-1 producer ")
    assert f.hard == (int(row["TransactionDurationMs"]) > int(row["TransactionTimeoutMs"]) + 10_000)
    for tid in ("open-1", "committed-1", "aborted-1", "fenced-1", "hanging-1"):
        assert not verify(read_pastes([_file(release, f"describe.{tid}")])).findings, tid


def test_a_fenced_producers_last_write_is_noted():
    release = RELEASES[-1]
    v = verify(read_pastes([_file(release, "describe.fenced-1"), _file(release, "describe-producers.orders-0")],
                           "orders-0"))
    (fenced,) = _rows(_file(release, "describe.fenced-1"))
    assert any(f"producer {fenced['ProducerId']} last wrote with epoch" in n for n in v.notes)
    assert not v.findings


def test_a_transaction_committed_with_its_partition_offline(tmp_path):
    """What Kafka 4.4.0 printed after stuck-0's only broker was killed and stuck-1 committed: CompleteCommit, no
    partitions left (no PrepareCommit to catch), so no finding."""
    (row,) = _rows(_file("4.4.0", "after-kill.describe.stuck-1"))
    assert row["TransactionState"] == "CompleteCommit" and not row["TopicPartitions"]
    assert not verify(read_pastes([_file("4.4.0", "after-kill.describe.stuck-1")])).findings
    # the same row as the coordinator shows it before its markers are written (no real output holds one: the state
    # and the partitions changed, nothing else): a PrepareCommit older than its timeout is a hard finding
    text = (DATA / "4.4.0" / "describe.expired-1.txt").read_text().replace("Ongoing      ", "PrepareCommit", 1)
    (tmp_path / "d.txt").write_text(text)
    (f,) = verify(read_pastes([str(tmp_path / "d.txt")])).findings
    assert f.check == "transactions.stuck-prepare" and f.hard and "orders-1" in f.message


@pytest.mark.parametrize("entry", [e for e in INDEX if e["exit"] != 0], ids=lambda e: e["file"])
def test_a_paste_of_only_the_tools_error_is_refused_with_it(entry):
    with pytest.raises(InputError, match=r"has no kafka-transactions table.*the tool printed: Failed to "):
        read_pastes([str(DATA / entry["file"])])


def test_describe_producers_needs_its_partition(tmp_path):
    path = _file("4.4.0", "describe-producers.orders-0")
    with pytest.raises(InputError, match="does not print its partition"):
        read_pastes([path])
    text = (DATA / "4.4.0" / "describe-producers.orders-0.txt").read_text()
    pasted = tmp_path / "p.txt"
    pasted.write_text("$ kafka-transactions.sh --bootstrap-server b:9092 describe-producers --topic orders "
                      f"--partition 0\n{text}")
    assert [t.partition for t in read_pastes([str(pasted)]).tables] == ["orders-0"]
    with pytest.raises(InputError, match="^--partition"):
        read_pastes([str(pasted)], "orders-1")


def test_cli_exit_status_and_json(capsys):
    assert main(["verify-transactions", _file("4.4.0", "find-hanging.hang"), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["exit_status"] == 1 and doc["findings"][0]["check"] == "transactions.hanging"
    assert main(["verify-transactions", _file("4.4.0", "describe.open-1")]) == 0
    assert "OK: 0 hard finding(s)" in capsys.readouterr().out


def test_other_tools_name_this_one(tmp_path, capsys):
    groups = DATA.parent / "consumer_groups" / "4.4.0@4.4.0" / "describe.all.txt"
    assert main(["verify-transactions", str(groups)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "`kcheck verify-group` reads it" in err
    for command in ("verify-group", "assign"):  # the commands that call identify()
        assert main([command, _file("4.4.0", "find-hanging.hang")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "kafka-transactions output (find-hanging)" in err, (command, err)
        assert "`kcheck verify-transactions` reads it" in err, command


@pytest.mark.kafka
@pytest.mark.cluster
def test_a_live_open_transaction_read_through_kafkas_tool(kafka_cluster, tmp_path, capsys):
    """Kafka 4.4.0's tool on the session's cluster while a kafka-python transaction is open: kcheck finds the open
    transaction on the partition and its coordinator's Ongoing transaction, and no finding."""
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    from kcheck.reference import kafka_tools
    boot = kafka_cluster.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=boot.split(","), request_timeout_ms=30_000)
    admin.create_topics([NewTopic("txn-live", 1, 3)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=boot.split(","), transactional_id="kcheck-live-txn", acks="all")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("txn-live", partition=0, value=b"open")
        producer.flush()
        listed = kafka_tools.run("4.4.0", "kafka-transactions", ["--bootstrap-server", boot, "list"])
        args = ["describe-producers", "--topic", "txn-live", "--partition", "0"]
        producers = kafka_tools.run("4.4.0", "kafka-transactions", ["--bootstrap-server", boot, *args])
    finally:
        producer.abort_transaction()
        producer.close()
    assert listed.returncode == 0 and producers.returncode == 0, listed.stderr[-2000:] + producers.stderr[-2000:]
    paste = tmp_path / "paste.txt"
    paste.write_text(f"{listed.stdout}\n$ kafka-transactions.sh --bootstrap-server {boot} {' '.join(args)}\n"
                     f"{producers.stdout}")
    assert main(["verify-transactions", str(paste), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (mine,) = [t for t in doc["transactions"] if t["TransactionalId"] == "kcheck-live-txn"]
    assert mine["TransactionState"] == "Ongoing" and not doc["findings"]
    assert [o["ProducerId"] for o in doc["open_transactions_on_partitions"]] == [mine["ProducerId"]]
    assert doc["open_transactions_on_partitions"][0]["partition"] == "txn-live-0"


@pytest.mark.parametrize("command, given, named", [
    ("verify", ("transactions", "4.4.0", "list.txt"), "kafka-transactions output (list)"),
    ("verify", ("consumer_groups", "4.4.0@4.4.0", "describe.all.txt"), "kafka-consumer-groups --describe output"),
    ("verify", ("dump", "compacted.txt"), "kafka-dump-log output"),
    ("plan", ("transactions", "4.4.0", "describe.open-1.txt"), "kafka-transactions output (describe)"),
    ("verify-log", ("transactions", "4.4.0", "find-hanging.hang.txt"), "kafka-transactions output (find-hanging)"),
    ("verify-log", ("describe", "4.4.0", "describe.txt"), "kafka-topics --describe output"),
    ("verify-log", ("consumer_groups", "4.4.0@4.4.0", "describe.all.txt"), "kafka-consumer-groups --describe output"),
])
def test_verify_plan_and_verify_log_name_another_tools_output(command, given, named, capsys):
    """Real outputs of Kafka's tools (made by the fixtures' generators on our cluster) handed to the wrong command:
    one line naming what the text is and which command reads it, exit 2."""
    assert main([command, str(DATA.parent.joinpath(*given))]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and named in err, err
    assert "reads it" in err and "Traceback" not in err
