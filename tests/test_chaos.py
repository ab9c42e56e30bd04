"""Fault campaigns (kcheck.cluster.chaos) and their history checks (kcheck.cluster.history).

The checker is tested on hand-written histories: each check fails on one that breaks its property and passes on
one that keeps it. The campaigns run on the session cluster `kafka_cluster` (tests/conftest.py: Kafka's default
broker settings) and leave every broker running and healed: the CI campaign (kill -9 and restart of the leader, a
pause of the leader past its session, RF 3 / min.insync.replicas 2 / unclean off, acks=all) loses no acknowledged
record; the 2013 settings (min.insync.replicas 1, unclean election on) with the ISR shrunk to the leader and the
leader killed lose acknowledged records (marked slow: about 45 s on its own).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from cli_support import run
from kcheck.cluster.chaos import DEFAULT_FAULTS, Campaign, Settings, Step, parse_faults, parse_schedule, random_schedule
from kcheck.cluster.history import (
    DEFINITE_ERRORS,
    NOT_SENT,
    Ack,
    Commit,
    Fault,
    FinalRead,
    History,
    Read,
    Send,
    SendFailure,
    Stall,
    check,
    definite,
    event_json,
    event_text,
    faults_around,
    parse_value,
    value_of,
)
from kcheck.cluster.producers import parse_producers
from kcheck.inputs.formats import InputError

# ---------------------------------------------------------------------------------------------------------
# hand-written histories


def history(*events, final=None) -> History:
    h = History(began=0.0)
    for e in events:
        h.add(e)
    for f in final or [FinalRead(0, 0, 3, True)]:
        h.final[f.partition] = f
    return h


def acked(value: str, offset: int, acks: str = "all", partition: int = 0, t: float = 1.0) -> tuple:
    return Send(t - 0.1, acks, value), Ack(t, acks, value, partition, offset)


def final_reads(*values: str, partition: int = 0) -> list[Read]:
    return [Read(50.0, partition, i, v, None, final=True) for i, v in enumerate(values)]


def found(h: History, healed: bool = True) -> dict[str, int]:
    return {c: len(vs) for c, vs in check(h, healed).by_check().items() if vs}


def events(*observed) -> tuple:
    """A window as the verdict gives it: each event as the JSON history writes it."""
    return tuple(event_json(e) for e in observed)


def test_a_clean_history_passes_every_check():
    h = history(*acked("all-0", 0), *acked("one-0", 1, "1"), *acked("all-1", 2),
                Read(2.0, 0, 0, "all-0", 1), Read(3.0, 0, 1, "one-0", 3), Commit(3.1, 0, 2),
                *final_reads("all-0", "one-0", "all-1"))
    v = check(h)
    assert v.status == "clean" and found(h) == {}
    assert v.counts["acked_acks_all"] == 2 and v.counts["acked_acks_1"] == 1 and v.counts["lost_acks_all"] == 0


def test_an_acked_record_replaced_at_its_offset_is_lost():
    h = history(*acked("all-0", 0), *acked("all-1", 1, t=2.0), Fault(3.0, "kill", "start", (1,)),
                *final_reads("all-0", "one-7", "x"))
    v = check(h)
    assert found(h) == {"history.acked-not-lost": 1} and v.status == "violations"
    lost = v.violations[0]
    assert (lost.partition, lost.offset) == (0, 1) and "offset 1 now holds one-7" in lost.message
    assert lost.faults_before == ("3.0s kill 1",)


def test_an_acked_record_past_the_end_of_the_final_log_is_lost():
    h = history(*acked("all-0", 0), *acked("all-5", 5), *final_reads("all-0", "a", "b"))
    assert found(h) == {"history.acked-not-lost": 1}
    assert "the log now ends at offset 3" in check(h).violations[0].message


def test_acks_1_losses_are_counted_apart_not_violations():
    h = history(*acked("one-1", 1, "1"), *final_reads("a", "b", "c"))
    v = check(h)
    assert v.status == "clean" and v.counts["lost_acks_1"] == 1 and v.acks1_lost[0]["value"] == "one-1"


def test_a_partition_the_final_read_could_not_finish_is_not_readable():
    h = history(*acked("all-0", 0), final=[FinalRead(0, 0, 3, False, "the final read stopped at offset 0 of 3")])
    v = check(h, healed=False)
    assert found(h, healed=False) == {"history.acked-readable": 1} and "stopped at offset 0" in v.violations[0].message
    assert check(history(final=[FinalRead(0, 0, 0, False)]), healed=False).status == "incomplete"


def test_an_offset_read_with_two_values_is_a_violation():
    h = history(Read(1.0, 0, 0, "a", 1), Read(2.0, 0, 0, "a", 1), *final_reads("b", "c", "d"))
    assert found(h) == {"history.offset-single-value": 1}
    same = history(Read(1.0, 0, 0, "b", 1), *final_reads("b", "c", "d"))
    assert found(same) == {}


def test_committed_offsets_that_go_back_are_a_violation_failed_commits_are_not():
    ok = history(Commit(1.0, 0, 5), Commit(2.0, 0, 3, "CommitFailedError"), Commit(3.0, 0, 6), Commit(3.0, 1, 1))
    assert found(ok) == {}
    back = history(Commit(1.0, 0, 5), Fault(1.5, "elect-unclean", "start"), Commit(2.0, 0, 3))
    v = check(back)
    assert found(back) == {"history.commits-monotonic": 1}
    assert "committed offset 3" in v.violations[0].message and v.violations[0].faults_before == ("1.5s elect-unclean",)


def test_a_high_watermark_that_goes_back_is_a_violation_the_final_read_does_not_count():
    back = history(Read(1.0, 0, 0, "a", 10), Read(2.0, 0, 1, "b", 8), *final_reads("a", "b", "c"))
    assert found(back) == {"history.hw-monotonic": 1}
    forward = history(Read(1.0, 0, 0, "a", 8), Read(2.0, 0, 1, "b", 10), Read(3.0, 1, 0, "x", 2),
                      *final_reads("a", "b", "c"))
    assert found(forward) == {}


def test_the_faults_before_a_violation_are_the_last_before_it_and_the_first_after():
    faults = [Fault(float(t), "kill", "start", (t,)) for t in range(1, 9)]
    assert faults_around(faults, 4.5) == ("3.0s kill 3", "4.0s kill 4", "5.0s kill 5", "6.0s kill 6", "7.0s kill 7",
                                          "8.0s kill 8")
    assert faults_around(faults, 4.5, before=1, after=0) == ("4.0s kill 4",)


def test_the_json_history_reads_back_to_the_same_verdict():
    h = history(*acked("all-0", 0), *acked("all-1", 1), SendFailure(2.0, "all", "all-2", "KafkaTimeoutError"),
                Fault(2.5, "pause", "start", (2,), "x"), Read(3.0, 0, 0, "all-0", 2), Commit(3.0, 0, 1),
                *final_reads("all-0", "z"))
    doc = json.loads(json.dumps(h.to_json()))
    again = History.from_json(doc, [{"partition": 0, "start": 0, "end": 2, "complete": True, "note": ""}])
    assert check(again).to_json() == check(h).to_json()
    assert check(h).counts["failed_acks_all"] == 1 and check(h).counts["lost_acks_all"] == 1


# ---------------------------------------------------------------------------------------------------------
# the request path: producer sessions, idempotence, definite and indefinite failures


def sent(value: str, t: float = 1.0, acks: str = "all") -> Send:
    return Send(t, acks, value)


def log_of(*values: str, partition: int = 0, start: int = 0) -> list[Read]:
    return [Read(50.0, partition, start + i, v, None, final=True) for i, v in enumerate(values)]


def ended(n: int, partition: int = 0, start: int = 0) -> list[FinalRead]:
    return [FinalRead(partition, start, start + n, True)]


def test_values_name_producer_session_partition_and_sequence():
    assert value_of("java-idempotent", 1, 2, 7) == "java-idempotent-1-2-000007"
    assert parse_value("java-idempotent-1-2-000007") == ("java-idempotent", 1, 2, 7)
    assert parse_value("plain-1-0-1234567") == ("plain", 1, 0, 1234567)
    assert parse_value("all-000123") is None and parse_value("nope-0-0-000001") is None
    assert parse_value("plain-0-x-000001") is None and parse_value("plain-0-\u0661-000001") is None


def test_an_idempotent_value_at_two_offsets_is_a_duplicate_a_plain_one_a_finding():
    a, b = value_of("idempotent", 0, 0, 0), value_of("idempotent", 0, 0, 1)
    log = log_of(a, b, a)
    h = history(sent(a), sent(b), Ack(1.1, "all", a, 0, 0), Ack(1.2, "all", b, 0, 1), *log, final=ended(3))
    v = check(h)
    assert found(h) == {"history.idem-no-duplicate": 1}
    dup = v.by_check()["history.idem-no-duplicate"][0]
    assert dup.anomaly == "duplicate" and dup.window == events(sent(a), Ack(1.1, "all", a, 0, 0), log[0], log[2])
    assert v.producers["idempotent"]["duplicates"] == 1
    c, d = value_of("plain", 0, 0, 0), value_of("plain", 0, 0, 1)
    plain = history(sent(c), sent(d), Ack(1.1, "all", c, 0, 0), Ack(1.2, "all", d, 0, 1), *log_of(c, d, c),
                    final=ended(3))
    assert found(plain) == {} and check(plain).producers["plain"]["duplicates"] == 1


def test_an_idempotent_sessions_values_out_of_send_order_are_a_reorder():
    a, b, c = (value_of("java-idempotent", 1, 0, n) for n in (0, 1, 2))
    log = log_of(b, a, c)
    h = history(sent(a, 0.9), sent(b), sent(c), Ack(2.0, "all", b, 0, 0), Ack(2.0, "all", a, 0, 1),
                Ack(2.0, "all", c, 0, 2), *log, final=ended(3))
    v = check(h)
    assert found(h) == {"history.idem-order": 1}
    reorder = v.violations[0]
    assert reorder.anomaly == "nonmonotonic-send" and reorder.window == events(sent(a, 0.9), sent(b), log[0], log[1])
    # another session, or another partition, of the same producer orders nothing
    x, y = value_of("idempotent", 1, 0, 5), value_of("idempotent", 2, 0, 0)
    z = value_of("idempotent", 1, 1, 1)
    other = history(sent(x), sent(y), sent(z), Ack(2.0, "all", x, 0, 0), Ack(2.0, "all", y, 0, 1),
                    Ack(2.0, "all", z, 1, 0), *log_of(x, y), *log_of(z, partition=1),
                    final=ended(2) + ended(1, partition=1))
    assert found(other) == {}
    # without idempotence a reorder is counted, first copies only (a retried duplicate later in the log is none)
    p0, p1 = value_of("plain", 0, 0, 0), value_of("plain", 0, 0, 1)
    plain = history(sent(p0), sent(p1), Ack(2.0, "all", p1, 0, 0), Ack(2.0, "all", p0, 0, 1), *log_of(p1, p0, p1),
                    final=ended(3))
    assert found(plain) == {}
    assert (check(plain).producers["plain"]["reorders"], check(plain).producers["plain"]["duplicates"]) == (1, 1)


def test_an_idempotent_session_with_an_earlier_value_missing_and_no_failure_has_a_silent_gap():
    a, b, c = (value_of("idempotent", 0, 0, n) for n in (0, 1, 2))
    steps = (sent(a, 1.0), sent(b, 1.1), sent(c, 1.2), Ack(1.3, "all", a, 0, 0), Ack(1.4, "all", c, 0, 1))
    log = log_of(a, c)
    h = history(*steps, *log, final=ended(2))
    v = check(h)
    assert found(h) == {"history.idem-no-silent-gap": 1}
    gap = v.violations[0]
    assert gap.anomaly == "lost-write" and b in gap.message
    assert gap.window == events(sent(b, 1.1), Ack(1.4, "all", c, 0, 1), log[1])
    # a recorded failure explains the hole; a later value not acknowledged proves nothing
    assert found(history(*steps, SendFailure(1.5, "all", b, "KafkaTimeoutError"), *log_of(a, c),
                         final=ended(2))) == {}
    # a log start moved past the offset it could have had explains it, whenever its send was timed (a Java
    # producer's sends are timed when its outcomes are read, after the delete); with no offset free between its
    # neighbours' it was never appended, deleted or not
    x = value_of("java-idempotent", 1, 0, 3)
    moved = (Ack(1.3, "all", a, 0, 0), Fault(3.0, "delete-records", "start"), sent(b, 5.0), sent(c, 5.0),
             Ack(5.1, "all", c, 0, 2), sent(x, 5.2), *log_of(c, x, start=2))
    assert found(history(sent(a), *moved, Ack(5.3, "all", x, 0, 3), final=ended(2, start=2))) == {}
    assert found(history(sent(a), *moved[:-2], Read(50.0, 0, 1, "other", None, final=True), *log_of(c, start=2),
                         final=ended(2, start=1))) == {"history.idem-no-silent-gap": 1}
    assert found(history(*steps, Fault(3.0, "delete-records", "start"), *log_of(c, start=1),
                         final=ended(1, start=1))) == {"history.idem-no-silent-gap": 1}
    assert found(history(*steps[:4], *log_of(a), final=ended(1))) == {}
    # and a non-idempotent producer's hole is not this check's
    q = [value_of("plain", 0, 0, n) for n in (0, 1)]
    assert found(history(sent(q[0]), sent(q[1]), Ack(1.4, "all", q[1], 0, 0), *log_of(q[1]), final=ended(1))) == {}


def test_a_definite_failure_in_the_log_is_g1a_an_indefinite_one_is_counted():
    a, b, c, d = (value_of("plain", 0, 0, n) for n in range(4))
    h = history(sent(a), sent(b), sent(c), sent(d), SendFailure(2.0, "all", a, "MessageSizeTooLargeError"),
                SendFailure(2.0, "all", b, "NotEnoughReplicasError"), SendFailure(2.0, "all", c, "TimeoutException"),
                SendFailure(2.0, "all", d, "KafkaTimeoutError" + NOT_SENT), *log_of(a, b, c), final=ended(3))
    v = check(h)
    assert found(h) == {"history.failed-definite-absent": 1}
    assert v.violations[0].anomaly == "G1a" and a in v.violations[0].message
    n = v.producers["plain"]
    assert (n["definite_failures"], n["indefinite_failures"], n["indefinite_committed"]) == (2, 2, 2)
    assert definite("InvalidTimestampException") and definite("RecordTooLargeException")
    assert not definite("NotEnoughReplicasException") and not definite("NotLeaderOrFollowerException")


def test_an_acknowledged_value_at_another_offset_is_an_offset_mismatch_not_a_lost_write():
    a, b = value_of("plain", 0, 0, 0), value_of("plain", 0, 0, 1)
    h = history(sent(a), sent(b), Ack(1.0, "all", a, 0, 1), Ack(1.0, "all", b, 0, 0), *log_of(b, "x", a),
                final=ended(3))
    v = check(h)
    assert found(h) == {"history.ack-offset-match": 1}
    assert "is at partition 0 offset 2" in v.violations[0].message and v.counts["lost_acks_all"] == 0


def test_the_consumers_reads_below_the_log_start_still_count_and_stalls_are_counted():
    a = value_of("idempotent", 0, 0, 0)
    h = history(sent(a), Ack(1.0, "all", a, 0, 0), Read(2.0, 0, 0, a, 2), Read(2.0, 0, 1, a, 2),
                Stall(5.0, "idempotent", 0, 12, 10.0), final=[FinalRead(0, 2, 2, True)])
    v = check(h)
    assert found(h) == {"history.idem-no-duplicate": 1} and v.producers["idempotent"]["stalls"] == 1


def test_a_consumer_read_that_jumps_over_records_in_the_log_is_a_poll_skip():
    log = log_of("a", "b", "c", "d")
    skip = history(Read(1.0, 0, 0, "a", 4), Read(2.0, 0, 2, "c", 4), Read(2.0, 0, 3, "d", 4), *log, final=ended(4))
    assert check(skip).counts["poll_skips"] == 1 and found(skip) == {}
    # reading again from further back is no skip, nor is a jump over records deleted below the log start
    again = history(Read(1.0, 0, 1, "b", 4), Read(2.0, 0, 0, "a", 4), Read(2.0, 0, 1, "b", 4), *log, final=ended(4))
    deleted = history(Read(1.0, 0, 0, "a", 4), Read(2.0, 0, 3, "d", 4), *log_of("d", start=3),
                      final=ended(1, start=3))
    assert check(again).counts["poll_skips"] == 0 and check(deleted).counts["poll_skips"] == 0


def test_producer_kinds_are_checked():
    assert parse_producers("idempotent, java-idempotent") == ("idempotent", "java-idempotent")
    for text, message in (("", "no producer kind"), ("plain,Plain", "'Plain' is not a producer kind"),
                          ("plain,plain", "a producer kind is named twice")):
        with pytest.raises(InputError, match=f"^--producers: {message}"):
            parse_producers(text)


def test_the_error_names_are_the_clients_own():
    """Every kafka-python class named is kafka.errors' class for that Kafka error (its errno is the error code)."""
    import kafka.errors

    codes = {"CORRUPT_MESSAGE": 2, "MESSAGE_TOO_LARGE": 10, "INVALID_TOPIC_EXCEPTION": 17, "RECORD_LIST_TOO_LARGE": 18,
             "INVALID_REQUIRED_ACKS": 21, "TOPIC_AUTHORIZATION_FAILED": 29, "INVALID_TIMESTAMP": 32,
             "INVALID_RECORD": 87}  # Errors.java
    for error, (python, _) in DEFINITE_ERRORS.items():
        assert getattr(kafka.errors, python).errno == codes[error], error


@pytest.mark.kafka
def test_the_java_error_names_are_classes_of_the_clients_jar():
    import zipfile

    from kcheck.reference.kafka_jars import resolve

    jar = next(p for p in resolve("4.4.0").classpath.split(":") if "kafka-clients" in p)
    names = {n.rsplit("/", 1)[-1] for n in zipfile.ZipFile(jar).namelist() if n.startswith("org/apache/kafka/common/")}
    for error, (_, java) in DEFINITE_ERRORS.items():  # InvalidRecordException is in o.a.k.common, the rest in .errors
        assert f"{java}.class" in names, error


# ---------------------------------------------------------------------------------------------------------
# schedules


def test_a_schedule_file_reads_one_fault_a_line():
    steps = parse_schedule("# 2013\n2 pause follower\n2 pause follower  # both\n\n15.5 kill leader\n16 resume\n"
                           "17 elect-unclean\n20 start 1\n", "s.txt")
    assert [(s.t, s.kind, s.target, s.line) for s in steps] == [
        (2.0, "pause", "follower", 2), (2.0, "pause", "follower", 3), (15.5, "kill", "leader", 5),
        (16.0, "resume", None, 6), (17.0, "elect-unclean", None, 7), (20.0, "start", "1", 8)]


@pytest.mark.parametrize(("text", "message"), [
    ("1 kill\nsoon kill 1\n", "s.txt:2: 'soon' is not a number of seconds from 0 to 86,400"),
    ("\u0661 kill\n", "s.txt:1: '\u0661' is not a number of seconds"),  # int() and float() take any script's digits
    ("1" + "0" * 400 + " kill\n", "s.txt:1: '1000"),  # float() of it is inf: sleep() would overflow
    ("1 kill " + "9" * 5000 + "\n", "s.txt:1: target '9999"),  # int() refuses past 4,300 digits
    ("1 kill \u0661\n", "s.txt:1: target '\u0661' is not a node id"),
    ("1 explode 2\n", "s.txt:1: 'explode' is not a fault kind"),
    ("1 kill the-leader\n", "s.txt:1: target 'the-leader' is not a node id, leader, follower, active-controller, "
                            "controller"),
    ("1 reassign 2\n", "s.txt:1: reassign takes no target"),
    ("1 start leader\n", "s.txt:1: start takes a broker id or nothing"),
    ("5 kill 1\n3 start\n", "s.txt:2: 3 s comes before the previous line's 5 s"),
    ("1 kill 1 2\n", "s.txt:1: not `SECONDS KIND"),
    ("# nothing\n", "s.txt: no fault in the schedule"),
])
def test_a_bad_schedule_line_is_one_line_naming_file_and_line(text, message):
    with pytest.raises(InputError) as e:
        parse_schedule(text, "s.txt")
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_a_random_schedule_is_the_seeds_and_every_fault_that_leaves_a_broker_down_has_its_end():
    a = random_schedule(7, 120, DEFAULT_FAULTS)
    assert a == random_schedule(7, 120, DEFAULT_FAULTS) and a != random_schedule(8, 120, DEFAULT_FAULTS)
    kinds = {s.kind for s in a}
    assert kinds <= {*DEFAULT_FAULTS, "start", "resume"} and "lossy-kill" not in kinds
    for s, nxt in zip(a, a[1:], strict=False):
        if s.kind in ("kill", "shutdown"):
            assert nxt.kind == "start"
        if s.kind == "pause":
            assert nxt.kind == "resume"
    assert all(x.t <= y.t for x, y in zip(a, a[1:], strict=False)) and a[-1].t < 120
    assert {s.kind for s in random_schedule(1, 60, ("pause",))} == {"pause", "resume"}


def test_fault_kinds_are_checked():
    assert parse_faults("kill, lossy-kill") == ("kill", "lossy-kill")
    with pytest.raises(InputError, match="^--faults: 'start' is not a fault kind"):
        parse_faults("kill,start")


def test_the_cli_refuses_bad_input_in_one_line_before_starting_anything(capsys, tmp_path):
    existing = tmp_path / "out.json"
    existing.write_text("{}")
    code, _, err = run(capsys, "chaos", "--json", str(existing))
    assert code == 2 and err == f"kcheck: error: --json: {existing} exists; kcheck does not overwrite it (give a new " \
                                "file)\n" and existing.read_text() == "{}"
    bad = tmp_path / "s.txt"
    bad.write_text("1 kill 1\n2 kill 9\n")
    code, _, err = run(capsys, "chaos", "--schedule", str(bad))
    assert code == 2 and err == f"kcheck: error: {bad}:2: node 9 is not in the cluster (brokers 1, 2, 3; " \
                                "controller(s) 1000)\n"
    code, _, err = run(capsys, "chaos", "--faults", "kill", "--schedule", str(bad))
    assert code == 2 and "--faults: applies only to a random schedule" in err
    code, _, err = run(capsys, "chaos", "--min-insync-replicas", "4")
    assert code == 2 and err.startswith("kcheck: error: --min-insync-replicas: 4 is outside 1..3")


# ---------------------------------------------------------------------------------------------------------
# the JSON history's schema (cluster/history.schema.json) and overlapping random faults


def schema_errors(doc, schema, node=None, where="$") -> list[str]:
    """The places where `doc` breaks the JSON Schema keywords history.schema.json uses (jsonschema is not among
    kcheck's dependencies): $ref into $defs, type, const, enum, required, properties, additionalProperties,
    items, oneOf, minimum, pattern."""
    import re

    node = schema if node is None else node
    if "$ref" in node:
        return schema_errors(doc, schema, schema["$defs"][node["$ref"].removeprefix("#/$defs/")], where)
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None), "number": (int, float),
             "integer": int}
    errors = []
    if "type" in node:
        wanted = node["type"] if isinstance(node["type"], list) else [node["type"]]
        fits = [k for k in wanted if isinstance(doc, kinds[k]) and not (isinstance(doc, bool) and k != "boolean")]
        if not fits:
            return [f"{where}: {doc!r} is not {wanted}"]
    tests = {"const": lambda c: doc == c, "enum": lambda e: doc in e, "minimum": lambda m: doc >= m,
             "pattern": lambda p: re.search(p, doc),
             "oneOf": lambda choices: sum(not schema_errors(doc, schema, c, where) for c in choices) == 1}
    errors += [f"{where}: {doc!r} breaks {k} {node[k]!r}" for k, test in tests.items()
               if k in node and not test(node[k])]
    if isinstance(doc, dict):
        errors += [f"{where}: no {k}" for k in node.get("required", ()) if k not in doc]
        props, extra = node.get("properties", {}), node.get("additionalProperties", True)
        for k, v in doc.items():
            if k in props:
                errors += schema_errors(v, schema, props[k], f"{where}.{k}")
            elif extra is False:
                errors.append(f"{where}: {k} is not a field")
            elif isinstance(extra, dict):
                errors += schema_errors(v, schema, extra, f"{where}.{k}")
    if isinstance(doc, list) and "items" in node:
        for i, v in enumerate(doc):
            errors += schema_errors(v, schema, node["items"], f"{where}[{i}]")
    return errors


def _written(h: History, schedule=(), **settings) -> dict:
    """The document `kcheck chaos --json` writes for history `h` (Outcome.document, the code's own writer)."""
    from kcheck.cluster.chaos import Outcome

    out = Outcome(Settings("t", **settings), list(schedule), h, check(h), 12.5, 3.25,
                  {"version": "4.4.0", "attached": True}, ["the consumer did not start: x"])
    return json.loads(out.document())


def test_every_history_the_code_writes_fits_the_shipped_schema_and_names_its_version():
    from kcheck.cluster.history import SCHEMA_NAME, SCHEMA_VERSION, history_schema

    schema = history_schema()
    assert schema["properties"]["schema_version"]["enum"] == [1, 2, 3, 4, SCHEMA_VERSION]
    assert schema["properties"]["schema"]["const"] == SCHEMA_NAME
    a, b, c = (value_of("idempotent", 0, 0, n) for n in range(3))
    p = [value_of("plain", 0, 1, n) for n in range(3)]
    histories = [
        # every event kind and every violation with a window: a duplicate, a silent gap, G1a, an offset mismatch
        history(sent(a, 1.0), sent(b, 1.1), sent(c, 1.2), Ack(1.3, "all", a, 0, 0), Ack(1.4, "all", c, 0, 1),
                sent(p[0]), sent(p[1]), sent(p[2]), SendFailure(2.0, "all", p[0], "MessageSizeTooLargeError"),
                Ack(2.0, "all", p[1], 1, 2), Ack(2.1, "1", p[2], 1, 3), Fault(2.5, "kill", "start", (2,), "", 0),
                Fault(4.0, "start", "end", (2,), "", 1), Fault(5.0, "start", "end", (3,), "heal"),
                Fault(4.5, "elect-unclean", "skipped", (), "no"), Read(3.0, 0, 0, a, 2), Read(3.5, 0, 0, c, 1),
                Commit(3.0, 0, 1), Commit(3.1, 0, 0, "CommitFailedError"), Stall(6.0, "idempotent", 0, 3, 10.0),
                *log_of(a, c, a), *log_of(p[0], p[2], p[1], "other", partition=1),
                final=ended(3) + ended(4, partition=1)),
        # the final read incomplete: not healed
        history(*acked("all-0", 0), *final_reads("all-0"), final=[FinalRead(0, -1, -1, False, "offline")]),
        history(),
    ]
    schedule = random_schedule(3, 40, DEFAULT_FAULTS, max_concurrent=2)
    for h in histories:
        doc = _written(h, schedule, max_concurrent=2)
        assert schema_errors(doc, schema) == []
        assert (doc["schema"], doc["schema_version"]) == (SCHEMA_NAME, SCHEMA_VERSION)
    doc = _written(histories[0], schedule)
    assert {v["anomaly"] for v in doc["verdict"]["violations"]} >= {"duplicate", "lost-write", "G1a"}
    # each window is a slice of the history: events of it, in time order
    windows = [v["window"] for v in doc["verdict"]["violations"]]
    assert all(w and all(e in doc["events"] for e in w) and [e["t"] for e in w] == sorted(e["t"] for e in w)
               for w in windows)
    assert {e["type"] for e in doc["events"]} == {"send", "ack", "send-failure", "read", "commit", "fault", "stall"}
    # the schema is strict: a field gone, one unknown, a wrong type or an unknown event kind is refused
    doc["events"][0].pop("value")
    doc["events"].append({"type": "poll", "t": 1.0})
    doc["verdict"]["violations"][0]["window"] = "p0@1"
    doc["settings"]["extra"] = 1
    doc["schema_version"] = SCHEMA_VERSION + 1
    assert len(schema_errors(doc, schema)) == 5


def _active(steps: list[Step], brokers: int):
    """Each fault's interval: (start, end, index); and at every fault start, the faults lasting then."""
    from kcheck.cluster.chaos import ENDS, _holds

    ends = {s.ends: s for s in steps if s.ends is not None}
    spans = []
    for i, s in enumerate(steps):
        if s.kind in ENDS:
            end = ends[i]  # every fault with an end has one, later, naming it
            assert end.kind == ENDS[s.kind] and end.t >= s.t and steps.index(end) > i
            spans.append((s.t, end.t, i))
    for i, s in enumerate(steps):
        if s.ends is None:
            lasting = [j for t0, t1, j in spans if t0 <= s.t < t1 and j != i]
            yield s, lasting, sum(_holds(steps[j].kind, brokers) for j in lasting) + _holds(s.kind, brokers)


def test_a_random_schedule_overlaps_at_most_max_concurrent_faults_and_always_leaves_a_broker():
    kinds = ("kill", "pause", "shutdown", "restart", "pause-followers", "elect-preferred", "reassign")
    overlapped = set()
    for seed in range(40):
        for n, brokers in ((1, 3), (2, 3), (3, 3), (3, 5), (16, 4)):
            steps = random_schedule(seed, 90, kinds, max_concurrent=n, brokers=brokers)
            assert steps == random_schedule(seed, 90, kinds, max_concurrent=n, brokers=brokers)
            assert all(x.t <= y.t for x, y in zip(steps, steps[1:], strict=False)) and steps[-1].t < 90
            for s, lasting, down in _active(steps, brokers):
                assert len(lasting) < n, (seed, n, s)
                if lasting:
                    assert down <= brokers - 1, (seed, n, brokers, s, lasting)
                    overlapped.add((n, s.kind, *sorted(steps[j].kind for j in lasting)))
    assert not any(o[0] == 1 for o in overlapped)  # one at a time by default
    assert (2, "pause", "kill") in overlapped and any(len(o) == 4 for o in overlapped)  # two lasting, a third
    # one fault at a time: each end straight after its fault, as before --max-concurrent
    one = random_schedule(5, 120, DEFAULT_FAULTS)
    assert all(one[s.ends + 1] is s for s in one if s.ends is not None)


def test_max_concurrent_is_checked_before_anything_starts(capsys, tmp_path):
    for bad, message in (("0", "--max-concurrent: 0 is outside 1..16"), ("17", "--max-concurrent: 17 is outside")):
        code, out, err = run(capsys, "chaos", "--max-concurrent", bad)
        assert code == 2 and out == "" and err.startswith(f"kcheck: error: {message}") and err.count("\n") == 1
    schedule = tmp_path / "s.txt"
    schedule.write_text("1 kill 1\n")
    code, out, err = run(capsys, "chaos", "--max-concurrent", "2", "--schedule", str(schedule))
    assert code == 2 and err == "kcheck: error: --max-concurrent: applies only to a random schedule, not with " \
                                "--schedule\n"
    code, out, err = run(capsys, "chaos", "--max-concurrent", "two")
    assert code == 2 and out == "" and err.startswith("kcheck: error: ") and err.count("\n") == 1, err


# ---------------------------------------------------------------------------------------------------------
# campaigns on the real cluster


def _steps(text: str) -> list[Step]:
    return parse_schedule(text, "test")


@pytest.mark.cluster
@pytest.mark.kafka
def test_ci_campaign_kill_restart_and_pause_of_the_leader_lose_no_acknowledged_record(cluster):
    """RF 3, min.insync.replicas 2, unclean off, acks=all: the leader killed (-9) and started again, then the new
    leader paused past its broker session (fenced, a new leader elected) and resumed as a zombie."""
    settings = Settings(f"chaos-ci-{int(time.time())}", partitions=2, replication_factor=3, min_insync_replicas=2,
                        unclean=False, duration=17, rate=40)
    schedule = _steps("1 kill leader\n3 start\n5 pause leader\n16 resume\n")
    out = Campaign(cluster, settings, schedule).run()
    v = out.verdict
    done = [(f.kind, f.phase) for f in out.history.of(Fault)]
    assert ("kill", "start") in done and ("pause", "start") in done and ("resume", "end") in done, done
    assert v.counts["acked_acks_all"] > 300 and v.counts["final_reads"] >= v.counts["acked_acks_all"]
    assert v.healed and {c: len(x) for c, x in v.by_check().items() if x} == {}, v.violations[:3]
    assert out.exit_code == 0
    assert all(r["state"] == "running" for r in cluster.status())
    from kcheck.cluster.history import history_schema

    assert schema_errors(json.loads(out.document()), history_schema()) == []


@pytest.mark.cluster
@pytest.mark.kafka
def test_producers_of_every_kind_keep_kafkas_promises_through_a_pause_a_kill_and_deleted_records(cluster):
    """kafka-python idempotent and plain at max in flight 1, and 4.4.0's own VerifiableProducer idempotent with 5 in
    flight: the leader paused with sends in flight, then killed and started, then every record deleted under the
    idle producers, which resume. Kafka's promises hold: nothing acknowledged lost or moved, no duplicate, reorder
    or silent gap in an idempotent session, no definite failure in the log."""
    settings = Settings(f"chaos-producers-{int(time.time())}", partitions=2, replication_factor=3,
                        min_insync_replicas=2, unclean=False, duration=14, rate=30,
                        producers=("idempotent", "plain-1", "java-idempotent"))
    campaign = Campaign(cluster, settings, _steps("1 pause leader\n4 resume\n6 kill leader\n8 start\n"
                                                  "10 delete-records\n"))
    out = campaign.run()
    v = out.verdict
    started = {f.kind: f for f in out.history.of(Fault) if f.phase == "start"}
    assert set(started) == {"pause", "kill", "delete-records"}, out.history.of(Fault)
    assert started["pause"].note.endswith("kafka-python send(s) in flight")
    assert any(fr.start > 0 for fr in out.history.final.values())  # the log start moved
    assert v.healed and {c: len(x) for c, x in v.by_check().items() if x} == {}, v.violations[:3]
    assert set(v.producers) == {"idempotent", "plain-1", "java-idempotent"} and not out.errors
    assert all(n["acknowledged"] > 150 and n["sessions"] >= 1 for n in v.producers.values()), v.producers
    # the Java client's values, read back from the log and translated, are where it was told they went: read by
    # the consumer during the campaign or in the final read (on a loaded machine the restart can push the deletion
    # to the campaign's last second, so few Java records outlive it)
    java = [a for a in out.history.of(Ack) if a.value.startswith("java-idempotent-")]
    seen = {(r.partition, r.offset, r.value) for r in out.history.of(Read)}
    assert sum(1 for a in java if (a.partition, a.offset, a.value) in seen) > 20
    assert all(p.proc.returncode is not None for p in campaign.producers if hasattr(p, "proc"))


@pytest.mark.slow  # a second campaign against the cluster (~30 s)
@pytest.mark.cluster
@pytest.mark.kafka
def test_the_cli_attaches_to_a_running_cluster_prints_the_tables_and_writes_the_json(cluster, capsys, tmp_path):
    """`kcheck chaos --dir`: elections and a reassignment (they leave no broker down), the tables, the JSON, exit 0;
    elect-unclean is skipped and said on a topic that forbids it."""
    schedule = tmp_path / "s.txt"
    schedule.write_text("1 elect-preferred\n1.5 elect-unclean\n2 reassign\n")
    out = tmp_path / "h.json"
    code, stdout, err = run(capsys, "chaos", "--dir", str(cluster.directory), "--schedule", str(schedule),
                            "--duration", "5", "--partitions", "1", "--rate", "20", "--json", str(out),
                            "--topic", f"chaos-cli-{int(time.time())}")
    assert code == 0, err
    assert "elect-unclean skipped: the topic has unclean.leader.election.enable=false" in err
    assert "History checks" in stdout and "CLEAN: no check failed" in stdout
    doc = json.loads(out.read_text())
    assert doc["verdict"]["status"] == "clean" and doc["settings"]["min_insync_replicas"] == 2
    assert doc["verdict"]["faults"] == {"elect-preferred": 1, "reassign": 1}
    assert [s["kind"] for s in doc["schedule"]] == ["elect-preferred", "elect-unclean", "reassign"]
    acks = [e for e in doc["events"] if e["type"] == "ack"]
    finals = {(e["partition"], e["offset"]): e["value"] for e in doc["events"] if e["type"] == "read" and e["final"]}
    assert acks and all(finals[(a["partition"], a["offset"])] == a["value"] for a in acks)
    code, _, err = run(capsys, "chaos", "--dir", str(cluster.directory), "--json", str(out))
    assert code == 2 and "exists; kcheck does not overwrite it" in err


@pytest.mark.slow  # a campaign with two faults at once (~35 s)
@pytest.mark.cluster
@pytest.mark.kafka
def test_overlapping_faults_end_each_on_its_own_brokers_and_the_history_interleaves_them(cluster):
    """A follower killed, the leader killed while it is down (two of three brokers out), the leader started first
    while the follower stays down, then the follower: each end starts its own fault's broker only (`Step.ends`; a
    plain `start` starts every stopped broker) and the history holds both faults' starts and ends, interleaved,
    each naming its step."""
    settings = Settings(f"chaos-overlap-{int(time.time())}", partitions=1, duration=12, rate=20, max_concurrent=2)
    schedule = [Step(1, "kill", "follower"), Step(2, "kill", "leader"), Step(4, "start", ends=1),
                Step(7, "start", ends=0)]
    out = Campaign(cluster, settings, schedule).run()
    faults = [(f.kind, f.phase, f.brokers, f.step) for f in out.history.of(Fault) if f.note != "heal"]
    follower, leader = faults[0][2], faults[1][2]
    assert follower != leader and len(follower) == len(leader) == 1
    assert faults == [("kill", "start", follower, 0), ("kill", "start", leader, 1), ("start", "end", leader, 2),
                      ("start", "end", follower, 3)], faults
    assert out.verdict.healed and not out.verdict.violations, out.verdict.violations[:3]
    from kcheck.cluster.history import history_schema

    assert schema_errors(json.loads(out.document()), history_schema()) == []


# ---------------------------------------------------------------------------------------------------------
# the smallest window that shows a violation (issue 38, item 5)


def test_a_lost_writes_window_runs_from_its_send_to_the_read_that_shows_it_with_the_faults_between():
    early = Fault(0.2, "pause", "start", (3,))  # before the write: outside
    s0, a0 = acked("all-0", 0, t=1.0)
    s1, a1 = acked("all-1", 1, t=2.0)
    seen = Read(2.5, 0, 1, "all-1", 2)  # the consumer read it after its acknowledgement
    kill, start = Fault(3.0, "kill", "start", (1,)), Fault(5.0, "start", "end", (1,))
    other = Read(6.0, 0, 1, "one-7", 2)  # the first read of another value at its offset: shows the loss
    late = Fault(7.0, "elect-preferred", "start")  # after that read: outside
    final = final_reads("all-0", "one-7", "x")
    v = check(history(early, s0, a0, s1, a1, seen, kill, start, other, late, *final))
    lost, changed = v.by_check()["history.acked-not-lost"], v.by_check()["history.offset-single-value"]
    assert [x.anomaly for x in lost + changed] == ["lost-write", "inconsistent-offsets"]
    assert lost[0].window == events(s1, a1, seen, kill, start, other)
    assert changed[0].window == events(a1, seen, kill, start, other)
    # past the end of the final log: the final read's last record shows where the log now ends
    s5, a5 = acked("all-5", 5, t=2.0)
    final = final_reads("all-0", "a", "b")
    v = check(history(early, s5, a5, kill, *final))
    assert v.violations[0].window == events(s5, a5, kill, final[2])


def test_commit_high_watermark_offset_and_readability_windows_hold_both_observations_and_the_faults_between():
    before, unclean, after = Fault(0.5, "kill", "start", (1,)), Fault(1.5, "elect-unclean", "start"), \
        Fault(2.5, "kill", "start", (2,))
    c5, c3 = Commit(1.0, 0, 5), Commit(2.0, 0, 3)
    assert check(history(before, c5, unclean, c3, after)).violations[0].window == events(c5, unclean, c3)
    r10, r8 = Read(1.0, 0, 0, "a", 10), Read(2.0, 0, 1, "b", 8)
    hw = check(history(before, r10, unclean, r8, after, *final_reads("a", "b", "c"))).violations[0]
    assert hw.check == "history.hw-monotonic" and hw.window == events(r10, unclean, r8)
    # the final read never reached the end: from the last acknowledgement, every fault after it
    s0, a0 = acked("all-0", 0)
    s1, a1 = acked("all-1", 1, t=1.2)
    unreadable = check(history(s0, a0, s1, a1, unclean, after, final=[FinalRead(0, 0, 2, False, "offline")]),
                       healed=False).violations[0]
    assert unreadable.anomaly == "unseen" and unreadable.window == events(a1, unclean, after)
    # an acknowledged value at another offset: its send and ack, the read of another value there, the read of it
    a, b = value_of("plain", 0, 0, 0), value_of("plain", 0, 0, 1)
    log = log_of(b, "x", a)
    moved = check(history(sent(a, 0.4), sent(b, 0.6), Ack(1.0, "all", a, 0, 1), Ack(1.0, "all", b, 0, 0), after,
                          *log, final=ended(3))).violations[0]
    assert moved.anomaly == "inconsistent-offsets"
    assert moved.window == events(sent(a, 0.4), Ack(1.0, "all", a, 0, 1), after, log[1], log[2])


def test_the_text_report_prints_each_failed_checks_first_window():
    from rich.console import Console

    from kcheck.cluster.chaos import Outcome, print_outcome

    s1, a1 = acked("all-1", 1, t=2.0)
    kill = Fault(3.0, "kill", "start", (1,))
    h = history(*acked("all-0", 0), s1, a1, kill, *final_reads("all-0", "one-7", "x"))
    out = Console(record=True, width=300)
    print_outcome(Outcome(Settings("t"), [], h, check(h), 10.0, 1.0, {"version": "3.9.1", "attached": False}), out)
    text = out.export_text()
    assert text.startswith("Campaign on Kafka 3.9.1, topic t: ")  # the release is in the results
    lines = text[text.index("The smallest window that shows the first lost-write (history.acked-not-lost):"):]
    assert lines.splitlines()[1:5] == ["  1.90s send all-1 acks=all", "  2.00s ack p0@1 all-1", "  3.00s kill 1",
                                       "  50.00s final read p0@1 one-7"]
    assert [event_text(e) for e in events(kill, Fault(5.0, "start", "end", (1,)))] == ["3.00s kill 1",
                                                                                       "5.00s start 1 (end)"]


@pytest.mark.slow
@pytest.mark.cluster
@pytest.mark.kafka
def test_the_2013_settings_lose_acknowledged_records_after_the_isr_shrinks_to_the_leader(cluster, tmp_path):
    """min.insync.replicas 1 and unclean election on: both followers paused until fenced (out of the ISR), records
    acknowledged by the leader alone, the leader killed, the followers resumed: an out-of-sync replica leads and the
    old leader, started again, truncates what it had acknowledged."""
    settings = Settings(f"chaos-2013-{int(time.time())}", partitions=1, replication_factor=3, min_insync_replicas=1,
                        unclean=True, duration=24, rate=40)
    # the schedule the README shows
    schedule = _steps((Path(__file__).resolve().parent.parent / "examples" / "chaos" / "2013.txt").read_text())
    out = Campaign(cluster, settings, schedule).run()
    v = out.verdict
    lost = v.by_check()["history.acked-not-lost"]
    assert lost and v.counts["lost_acks_all"] == len(lost) and out.exit_code == 1
    doc = json.loads(out.document())
    recorded = {json.dumps(e, sort_keys=True) for e in doc["events"]}
    assert all(any(" kill " in f for f in x.faults_before) for x in lost)
    # each loss's window: from the write (the followers' pause may come before its acknowledgement) to a read of
    # another value at its offset (or the final read's last record, where the log now ends), the kill of the leader
    # that acknowledged it in between
    for x in (x for x in doc["verdict"]["violations"] if x["check"] == "history.acked-not-lost"):
        value = x["message"].split(" ", 1)[0]
        w = x["window"]
        ack = next(e for e in w if e["type"] == "ack")
        assert (w[0]["type"], w[0]["value"], ack["value"]) == ("send", value, value), w
        assert any(e["type"] == "fault" and e["kind"] == "kill" and e["phase"] == "start" and e["t"] > ack["t"]
                   for e in w), w
        assert w[-1]["type"] == "read" and w[-1]["value"] != value and w[-1]["t"] > ack["t"], w
        assert all(json.dumps(e, sort_keys=True) in recorded for e in w)  # a slice of the history
    assert doc["verdict"]["status"] == "violations" and doc["settings"]["unclean"] is True
    assert sum(1 for e in doc["events"] if e["type"] == "ack" and e["acks"] == "all") == v.counts["acked_acks_all"]
