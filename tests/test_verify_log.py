"""`kcheck verify-log DUMP...`: a real log directory's invariants, from Kafka's own kafka-dump-log output.

The clean inputs are Kafka 4.4.0's dumps of a real cluster (tests/data/dump/make.py): every invariant holds on them.
The corrupt inputs are copies with one thing broken the way a damaged log directory would show it (an offset
repeated, an index entry moved past its target, a segment file out of its place, a size kafka-log-dirs reports
that the segments do not add up to); each must be reported at that segment, offset and key, and exit 1.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cli_support import one_error_line, run
from kcheck.inputs.log_tools import log_view, parse_dump, partitions
from kcheck.runtime.exit_codes import Exit

DATA = Path(__file__).parent / "data" / "dump"
REAL = [str(DATA / n) for n in ("plain.txt", "compacted.txt", "offsets.txt", "log-dirs.txt")]


def corrupt(tmp_path: Path, name: str, old: str, new: str, count: int = 1, *more: tuple[str, str, int]) -> str:
    """A copy of a real dump with `old` replaced by `new` (found `count` times), and each further replacement."""
    text = (DATA / name).read_text(encoding="utf-8")
    for o, n, c in ((old, new, count), *more):
        assert text.count(o) == c, (o, text.count(o))
        text = text.replace(o, n)
    out = tmp_path / f"corrupt-{name}"
    out.write_text(text, encoding="utf-8")
    return str(out)


def line_of(name: str, text: str) -> int:
    """The line number of the first line of a real dump that starts with `text`."""
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return next(i + 1 for i, line in enumerate(lines) if line.startswith(text))


def dirs_size(partition: str, broker: int = 1) -> int:
    doc = json.loads((DATA / "log-dirs.txt").read_text(encoding="utf-8").splitlines()[-1])
    (b,) = [b for b in doc["brokers"] if b["broker"] == broker]
    return next(p["size"] for d in b["logDirs"] for p in d["partitions"] if p["partition"] == partition)


def violations(capsys, *files: str) -> list[dict]:
    code, out, err = run(capsys, "verify-log", "--json", *files)
    assert err == "" and code == Exit.FAILED, (code, err)
    doc = json.loads(out)
    assert doc["ok"] is False and doc["exit_status"] == Exit.FAILED
    return doc["violations"]


def test_real_dumps_hold_every_invariant(capsys) -> None:
    code, out, err = run(capsys, "verify-log", *REAL)
    assert code == Exit.OK and err == "", err
    for partition in ("plain-0", "compacted-0", "__consumer_offsets-0"):
        assert partition in out
    assert "OK: 0 hard violation(s) over 8 invariant(s) in 3 partition(s)" in out
    assert "log-dirs.size for __consumer_offsets-0 (kafka-log-dirs does not list this partition)" in out


def test_json_and_junit(capsys, tmp_path: Path) -> None:
    xml = tmp_path / "report.xml"
    code, out, _ = run(capsys, "verify-log", "--json", "--junit-xml", str(xml), *REAL)
    assert code == Exit.OK
    doc = json.loads(out)
    parts = {p["partition"]: p for p in doc["partitions"]}
    assert parts["plain-0"]["segments"] == [0, 5, 9, 15, 18, 20] and parts["plain-0"]["bytes"] == dirs_size("plain-0")
    assert parts["compacted-0"]["compacted"] and not parts["plain-0"]["compacted"]
    assert "log-dirs.size" in parts["plain-0"]["checked"] and doc["violations"] == []
    suites = ET.parse(xml).getroot().findall("testsuite")
    assert {s.get("name") for s in suites} == {f"kcheck verify-log {p}" for p in parts} | {
        "kcheck verify-log kafka-dump-log"}
    assert all(s.get("failures") == "0" for s in suites)


def test_offset_repeated(capsys, tmp_path: Path) -> None:
    # the record at offset 21 (key k7, in segment 20) claims offset 20, which k6 already holds
    bad = corrupt(tmp_path, "plain.txt", "| offset: 21 ", "| offset: 20 ")
    found = [v for v in violations(capsys, bad) if v["invariant"] == "log.offsets-increasing"]
    assert [(v["segment"], v["offset"], v["key"]) for v in found] == [("20", "20", "k7")]
    assert "repeats" in found[0]["message"]


def test_index_entry_past_its_target(capsys, tmp_path: Path) -> None:
    # segment 5's offset-index entry for offset 8 (key clé-ü) points into the middle of its batch
    bad = corrupt(tmp_path, "plain.txt", "offset: 8 position: 79\n", "offset: 8 position: 88\n")
    found = violations(capsys, bad)
    assert [(v["invariant"], v["segment"], v["offset"], v["key"]) for v in found] == \
        [("log.offset-index", "5", "8", "clé-ü")]
    assert "lands past its target" in found[0]["message"]


def test_segment_out_of_place(capsys, tmp_path: Path) -> None:
    # the segment holding offsets 5..8 is named as if it began at 10: it sorts after segment 9
    bad = corrupt(tmp_path, "plain.txt", "00000000000000000005.", "00000000000000000010.", 4,
                  ("Log starting offset: 5\n", "Log starting offset: 10\n", 1))
    found = violations(capsys, bad)
    where = {(v["invariant"], v["segment"], v["offset"], v["key"]) for v in found}
    assert ("log.offsets-increasing", "10", "5", "k1") in where  # back from 14 to 5
    assert ("log.segment-bounds", "10", "7", "key with spaces payload: x") in where  # below its base offset 10
    assert ("log.segment-bounds", "9", "10", "g1") in where  # at or above the next segment's base offset 10


def test_size_that_log_dirs_reports(capsys, tmp_path: Path) -> None:
    size = dirs_size("plain-0")
    bad = corrupt(tmp_path, "log-dirs.txt", f'"partition":"plain-0","size":{size}',
                  f'"partition":"plain-0","size":{size + 24}', 3)
    found = violations(capsys, str(DATA / "plain.txt"), bad)
    assert [(v["invariant"], v["partition"], v["detail"]["reported"], v["detail"]["segments"]) for v in found] == \
        [("log-dirs.size", "plain-0", size + 24, size)]


def test_invalid_bytes_at_the_end(capsys, tmp_path: Path) -> None:
    # DumpLogSegments' report of a torn write: the segment's file holds more than its batches
    bad = corrupt(tmp_path, "compacted.txt", "Dumping broker-1/data/compacted-0/00000000000000000000.index",
                  "Found 17 invalid bytes at the end of 00000000000000000000.log\n"
                  "Dumping broker-1/data/compacted-0/00000000000000000000.index")
    found = violations(capsys, bad)
    assert [(v["invariant"], v["segment"]) for v in found] == [("log.sizes", "0")]


def test_index_out_of_order_that_kafkas_sanity_check_passes(capsys) -> None:
    # Kafka's tool on a real index whose two entries were swapped (make.py corrupt_dumps): its --index-sanity-check
    # passes (it checks the last entry and the length only), the entries read back (23, 166) then (22, 88)
    text = (DATA / "swapped-index.txt").read_text(encoding="utf-8")
    assert "00000000000000000020.index passed sanity check." in text
    found = violations(capsys, str(DATA / "swapped-index.txt"))
    assert [(v["invariant"], v["segment"], v["offset"]) for v in found] == [("log.offset-index", "20", "22")]
    assert "does not follow" in found[0]["message"]


def test_failed_sanity_check_is_a_finding(capsys) -> None:
    # Kafka's --index-sanity-check on a time index with 3 stray bytes: the tool dies with CorruptIndexException
    found = violations(capsys, str(DATA / "sanity-failure.txt"))
    assert [(v["invariant"], v["partition"], v["segment"]) for v in found] == [("log-dump.kafka-check", "plain-0",
                                                                                "5")]
    assert "CorruptIndexException" in found[0]["message"]


@pytest.mark.parametrize(("old", "new", "at", "fragment"), [
    ("| offset: 7 CreateTime", "| offset: seven CreateTime", "| offset: 7 ", "'offset: seven' is not a number"),
    ("| offset: 7 CreateTime", "| offset: 7 Time", "| offset: 7 ", "a record line of the 3.0–4.4 layout with 'Time:'"),
    (" offset: 8\n", "\n", "timestamp: ", "expected an index entry"),
    ("Log starting offset: 5\n", "Log starting offset: 6\n", "Dumping broker-1/data/plain-0/00000000000000000005.log",
     "is not the file name's 5"),
])
def test_bad_lines_exit_2_naming_file_and_line(capsys, tmp_path: Path, old: str, new: str, at: str,
                                               fragment: str) -> None:
    bad = corrupt(tmp_path, "plain.txt", old, new)
    line = line_of("plain.txt", at) if at != "timestamp: " else next(
        i + 1 for i, text in enumerate((DATA / "plain.txt").read_text(encoding="utf-8").splitlines())
        if text.startswith(at) and text.endswith(old.rstrip("\n")))
    code, out, err = run(capsys, "verify-log", bad)
    assert code == Exit.BAD_INPUT and out == ""
    one_error_line(err, f"{bad}:{line}: ", fragment)


def test_shallow_and_sanity_only_dumps_are_read(capsys) -> None:
    """A shallow dump (batch lines only) is checked batch by batch: positions and sizes, and the indexes against the
    batches (an index entry names a batch's last offset and position). A dump of --index-sanity-check alone carries
    Kafka's own verdict on each index."""
    code, out, err = run(capsys, "verify-log", "--json", str(DATA / "plain.shallow.txt"))
    doc = json.loads(out)
    assert code == Exit.OK and err == "" and doc["violations"] == []
    (part,) = doc["partitions"]
    assert part["records"] == 24 and part["shallow_segments"] == [0, 5, 9, 15, 18, 20]
    assert part["bytes"] == dirs_size("plain-0") and "log.sizes" in part["checked"]
    code, out, err = run(capsys, "verify-log", str(DATA / "plain.sanity.txt"))
    assert code == Exit.OK and "Kafka's index sanity check passed 11 index(es)" in out and "in 0 partition(s)" in out


def test_a_shallow_dump_shows_a_batch_out_of_place(capsys, tmp_path: Path) -> None:
    # segment 5's second batch (offsets 7 and 8) said to start a byte later than the first batch's 79 bytes end
    bad = corrupt(tmp_path, "plain.shallow.txt", "position: 79 CreateTime: 1795538139508", "position: 80 CreateTime: "
                  "1795538139508")
    found = violations(capsys, bad)
    assert [(v["invariant"], v["segment"], v["offset"]) for v in found] == [("log.sizes", "5", "8")]
    assert "does not follow the previous batch at 0 of 79 bytes" in found[0]["message"]


def test_what_cannot_be_checked_is_refused(capsys, tmp_path: Path) -> None:
    empty = tmp_path / "empty-index.txt"  # an index that prints nothing (empty, or --verify-index-only), alone
    empty.write_text("Dumping d/t-0/00000000000000000000.index\n", encoding="utf-8")
    code, _, err = run(capsys, "verify-log", str(empty))
    assert code == Exit.BAD_INPUT
    one_error_line(err, "empty-index.txt: no .log segment", "dump the .log files")
    index_only = tmp_path / "index-only.txt"  # a segment's index entries without the segment
    index_only.write_text("Dumping d/t-0/00000000000000000000.index\noffset: 3 position: 103\n", encoding="utf-8")
    code, _, err = run(capsys, "verify-log", str(index_only))
    assert code == Exit.BAD_INPUT
    one_error_line(err, "index-only.txt:1:", "dump the .log files too")
    code, _, err = run(capsys, "verify-log", str(DATA / "log-dirs.txt"))
    assert code == Exit.BAD_INPUT
    one_error_line(err, "no kafka-dump-log.sh output given")
    code, _, err = run(capsys, "verify-log", "/nonexistent/dump.txt")
    assert code == Exit.BAD_INPUT
    one_error_line(err, "/nonexistent/dump.txt: no such file")


# ---------------------------------------------------------------------------------------------------------------
# A live broker's log directory, dumped while it runs (the active segment's indexes are still preallocated)


@pytest.mark.cluster
def test_live_broker_directory(kafka_cluster, capsys, tmp_path: Path) -> None:
    import subprocess
    import time

    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    from kcheck.reference.kafka_jars import resolve_server

    boot = kafka_cluster.bootstrap.split(",")
    admin = KafkaAdminClient(bootstrap_servers=boot, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic("verify-log", replica_assignments={0: [1, 2, 3]}, topic_configs={
            "segment.ms": "1000", "index.interval.bytes": "64", "cleanup.policy": "compact",
            # compacted, but never cleaned while the test runs (the cleaner would take the older values away)
            "min.compaction.lag.ms": "3600000"})])
    finally:
        admin.close()
    time.sleep(1)
    producer = KafkaProducer(bootstrap_servers=boot, acks="all", linger_ms=0)
    sent: list[tuple[str, str | None]] = []
    try:
        for burst in range(3):
            for i in range(6):
                kv = (f"k{i % 4}", None if (burst, i) == (1, 2) else f"v{burst}.{i}")
                producer.send("verify-log", key=kv[0].encode(), value=None if kv[1] is None else kv[1].encode())
                sent.append(kv)
                if i % 2:
                    producer.flush()
            time.sleep(1.2)  # past segment.ms: the next burst rolls a segment
    finally:
        producer.close()
    classpath = resolve_server(kafka_cluster.version).classpath
    folder = kafka_cluster.directory / "broker-1" / "data" / "verify-log-0"
    files = [str(f) for f in sorted(folder.iterdir()) if f.suffix in (".log", ".index", ".timeindex")]
    java = ["java", "-XX:TieredStopAtLevel=1", "-cp", classpath]
    dump = subprocess.run([*java, "org.apache.kafka.tools.DumpLogSegments", "--print-data-log", "--files",
                           ",".join(files)], capture_output=True, text=True, timeout=120, check=True)
    dirs = subprocess.run([*java, "org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server",
                           kafka_cluster.bootstrap, "--describe", "--topic-list", "verify-log"],
                          capture_output=True, text=True, timeout=120, check=True)
    (tmp_path / "dump.txt").write_text(dump.stdout + dump.stderr, encoding="utf-8")
    (tmp_path / "dirs.txt").write_text(dirs.stdout, encoding="utf-8")
    code, out, err = run(capsys, "verify-log", "--json", str(tmp_path / "dump.txt"), str(tmp_path / "dirs.txt"))
    doc = json.loads(out)
    assert code == Exit.OK and doc["violations"] == [], (err, doc["violations"], dump.stdout[-3000:])
    (part,) = doc["partitions"]
    assert part["records"] == len(sent) and "log-dirs.size" in part["checked"] and len(part["segments"]) >= 3
    view = log_view(partitions([parse_dump(dump.stdout, "dump")])[0])
    assert [(r.key, r.value) for s in view.segments for r in s.records] == sent  # tombstone included, as None


def test_stdin(capsys, monkeypatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO((DATA / "plain.txt").read_text(encoding="utf-8")))
    code, out, err = run(capsys, "verify-log", "--json", "-", str(DATA / "log-dirs.txt"))
    doc = json.loads(out)
    assert code == Exit.OK and err == "" and doc["inputs"] == ["<stdin>", str(DATA / "log-dirs.txt")]
    assert [p["partition"] for p in doc["partitions"]] == ["plain-0"] and doc["violations"] == []
    code, out, err = run(capsys, "verify-log", "-", "-")
    assert code == Exit.BAD_INPUT and out == ""
    one_error_line(err, "DUMP: '-' (stdin) given more than once")


@pytest.mark.parametrize("glued", [False, True])
def test_a_pasted_shell_prompt_is_not_the_dump(tmp_path: Path, glued: bool) -> None:
    # A paste often starts with the command that made it; one that lost a line break has the tool's first line
    # glued to the command. Either way the dump reads as the tool printed it.
    real = (DATA / "releases" / "deep-data" / "3.8.1.txt").read_text()
    first, rest = real.split("\n", 1)
    assert first.startswith("Dumping ")
    command = "[root@host kafka_2.13-3.8.1]# bin/kafka-dump-log.sh --deep-iteration --print-data-log --files x"
    pasted = command + first + "\n" + rest if glued else f"{command}\n{real}"
    assert log_view(partitions([parse_dump(pasted, "paste")])[0]) == log_view(partitions([parse_dump(real, "real")])[0])
