"""kcheck.inputs.log_tools reads Kafka's own storage tools' output: kafka-dump-log.sh and kafka-log-dirs.sh --describe.

The inputs are real: tests/data/dump/*.txt are Kafka 4.4.0's DumpLogSegments and LogDirsCommand run on a real
3-broker cluster's log directories by tests/data/dump/make.py. The expected values are not our parser's output:
they are what make.py's producers sent (keys, values, tombstones, batches, segments, headers, commits), and the
sizes Kafka's other tool (kafka-log-dirs) reports for the same replicas.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from kcheck.inputs.formats import InputError
from kcheck.inputs.log_tools import (
    Dump,
    log_view,
    looks_like_log_dirs,
    parse_dump,
    parse_log_dirs,
    partitions,
    verify_log,
)
from kcheck.invariants.log_storage import check_log

DATA = Path(__file__).parent / "data" / "dump"


def _make():
    spec = importlib.util.spec_from_file_location("dump_make", DATA / "make.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _make()


def dump(name: str) -> Dump:
    return parse_dump((DATA / name).read_text(encoding="utf-8"), name)


def log_dirs_sizes() -> dict[tuple[int, str], int]:
    ld = parse_log_dirs((DATA / "log-dirs.txt").read_text(encoding="utf-8"), "log-dirs.txt")
    return {(r.broker, r.partition): r.size for r in ld.replicas}


def sent_plain() -> list[tuple[str | None, str | None]]:
    return [kv for _, records, _ in MAKE.PLAIN for kv in records]


# ---------------------------------------------------------------------------------------------------------------
# kafka-dump-log --deep-iteration --print-data-log, several --files (.log, .index, .timeindex) at once


def test_records_are_what_the_producers_sent() -> None:
    d = dump("plain.txt")
    recs = [r for s in d.segments for b in s.batches for r in b.records]
    data = [r for r in recs if r.control is None]
    assert [(r.key, r.payload if r.value_size >= 0 else None) for r in data] == sent_plain()
    assert [r.offset for r in recs] == list(range(len(recs)))  # one offset each, the COMMIT marker included
    # a null value: valueSize -1 and no payload; an empty one: valueSize 0 and an empty payload; a null key: -1
    by_key = {r.key: r for r in data}
    assert (by_key["k3"].value_size, by_key["k3"].payload) == (0, "")
    assert by_key["k4"].payload == "line one\nline two" and by_key["key with spaces payload: x"].payload == "value: y"
    tomb = [r for r in data if r.value_size == -1]
    assert [(r.key, r.payload) for r in tomb] == [(k, v) for k, v in sent_plain() if v is None]
    assert [r.key_size for r in data if r.key is None] == [-1]
    assert data[0].header_keys == tuple(k for k, _ in MAKE.HEADERS) and data[1].header_keys == ()
    (marker,) = [r for r in recs if r.control is not None]  # the transaction's COMMIT, among the records after it
    assert marker.control.startswith("endTxnMarker: COMMIT") and marker.offset > max(
        r.offset for r in data if r.key == "t1")


def test_segments_and_batches_follow_the_bursts() -> None:
    d = dump("plain.txt")
    # each burst rolled a segment (segment.ms); the transaction's COMMIT marker lands with the next burst
    sizes = [len(records) for _, records, _ in MAKE.PLAIN]
    bases = [sum(sizes[:i]) for i in range(len(sizes))]
    assert [s.base_offset for s in d.segments] == bases
    gz = [r.key for s in d.segments for b in s.batches if b.compression == "gzip" for r in b.records]
    burst = [k for p, records, _ in MAKE.PLAIN if p == "gzip" for k, _ in records]
    assert gz and gz == burst[-len(gz):]  # inside gzip batches (kafka-python sends a lone first record uncompressed)
    for s in d.segments:
        assert [b.position for b in s.batches] == [sum(b.size for b in s.batches[:i]) for i in range(len(s.batches))]
    # the bytes of the dumped batches are what kafka-log-dirs reports for the replica
    assert sum(b.size for s in d.segments for b in s.batches) == log_dirs_sizes()[(1, "plain-0")]


def test_index_dumps() -> None:
    d = dump("plain.txt")
    assert len(d.indexes) == 2 * len(d.segments)
    batches = {(b.last_offset, b.position) for s in d.segments for b in s.batches}
    offset_entries = [e for i in d.indexes if i.kind == "offset" for e in i.entries]
    assert offset_entries and set(offset_entries) <= batches  # an entry is a batch's last offset and its position
    stamps = {r.offset: r.timestamp for s in d.segments for b in s.batches for r in b.records}
    for i in d.indexes:
        if i.kind == "time":
            assert i.entries and all(stamps[off] <= ts for ts, off in i.entries)
    assert any(not i.entries for i in d.indexes if i.kind == "offset")  # 'X.index is empty.'


def test_deep_iteration_without_data_and_shallow() -> None:
    deep, shallow, full = dump("plain.records.txt"), dump("plain.shallow.txt"), dump("plain.txt")
    recs = [r for s in deep.segments for b in s.batches for r in b.records]
    assert all(not r.printed and r.key is None and r.payload is None for r in recs)
    assert [(r.offset, r.key_size, r.value_size) for r in recs] == \
        [(r.offset, r.key_size, r.value_size) for s in full.segments for b in s.batches for r in b.records]
    assert all(not s.deep and all(not b.records for b in s.batches) for s in shallow.segments)
    assert [(b.base_offset, b.last_offset, b.position, b.size) for s in shallow.segments for b in s.batches] == \
        [(b.base_offset, b.last_offset, b.position, b.size) for s in full.segments for b in s.batches]


def test_non_consecutive_report_of_the_java_tool() -> None:
    """Kafka 4.3+'s tool (the Java port, KAFKA-14579) reports every segment that does not start at offset 0 as
    'Non-consecutive offsets ... -1 is followed by BASE' (it starts from -1 without skipping the first record);
    4.2's Scala tool, on the same files, reports nothing. kcheck does not take the tool's report as a finding."""
    d = dump("plain.txt")
    spurious = {int(n.text.split()[-1]) for n in d.notes if "-1 is followed by" in n.text}
    assert spurious == {s.base_offset for s in d.segments} - {0}
    assert not parse_dump((DATA / "releases" / "deep-data" / "4.2.2.txt").read_text(encoding="utf-8"), "4.2.2").notes
    assert verify_log([d]).notes == []


def test_index_sanity_check() -> None:
    d = dump("plain.sanity.txt")
    assert not d.segments and len(d.indexes) == 2 * len(MAKE.PLAIN)
    assert all(i.sanity_checked for i in d.indexes if i.kind == "time")


def test_compacted_log_after_cleaning() -> None:
    d = dump("compacted.txt")
    recs = [r for s in d.segments for b in s.batches for r in b.records]
    latest: dict[str, tuple[int, str | None]] = {}
    offset = 0
    for records in MAKE.COMPACTED:
        for k, v in records:
            latest[k] = (offset, v)
            offset += 1
    # the cleaner kept every key's latest record at its offset (the tombstone too: delete.retention.ms is a day);
    # the active segment holds c3's newest, so the cleaned segments also keep c3's latest below it
    kept = {(r.offset, r.key, r.payload if r.value_size >= 0 else None) for r in recs}
    assert {(o, k, v) for k, (o, v) in latest.items()} <= kept
    assert any(b.count is not None and b.count < b.last_offset - b.base_offset + 1
               for s in d.segments for b in s.batches)  # a cleaned batch keeps its offsets span
    assert any(b.delete_horizon_ms is not None for s in d.segments for b in s.batches)  # KIP-534's horizon
    view = log_view(partitions([d])[0])
    assert view.compacted and sum(s.size_bytes or 0 for s in view.segments) == log_dirs_sizes()[(1, "compacted-0")]


def test_offsets_decoder() -> None:
    d = dump("offsets.txt")
    recs = [r for s in d.segments for b in s.batches for r in b.records]
    keys = [json.loads(r.key) for r in recs if r.key is not None]
    commits = [json.loads(r.payload)["data"]["offset"] for r in recs if r.value_size >= 0 and r.payload]
    assert commits == list(MAKE.COMMITS)
    assert all(k["data"]["group"] == "dump-group" for k in keys)
    # deleting the group writes tombstones: valueSize -1, printed '<DELETE>' by the offsets decoder
    dead = [r for r in recs if r.value_size == -1]
    assert dead and all(r.payload == "<DELETE>" for r in dead)
    view = log_view(partitions([d])[0])
    assert [r.value for s in view.segments for r in s.records][-len(dead):] == [None] * len(dead)


def test_log_dirs() -> None:
    text = (DATA / "log-dirs.txt").read_text(encoding="utf-8")
    assert looks_like_log_dirs(text) and not looks_like_log_dirs((DATA / "plain.txt").read_text(encoding="utf-8"))
    ld = parse_log_dirs(text, "log-dirs.txt")
    assert {r.broker for r in ld.replicas} == {1, 2, 3} and not ld.dir_errors
    assert {r.partition for r in ld.replicas} == {"plain-0", "compacted-0"}
    assert all(r.offset_lag == 0 and not r.is_future for r in ld.replicas)


def test_views_hold_every_invariant_on_real_dumps() -> None:
    dumps = [dump(n) for n in ("plain.txt", "compacted.txt", "offsets.txt")]
    dirs = [parse_log_dirs((DATA / "log-dirs.txt").read_text(encoding="utf-8"), "log-dirs.txt")]
    result = verify_log(dumps, dirs)
    assert {v.partition for v in result.views} == {"plain-0", "compacted-0", "__consumer_offsets-0"}
    for view, rep, dirs_rep in result.reports:
        assert rep.violations == () and "log.offset-index" in rep.checked and "log.sizes" in rep.checked, view
        if view.partition != "__consumer_offsets-0":
            assert dirs_rep is not None and dirs_rep.checked == ("log-dirs.size",) and not dirs_rep.violations
    plain = next(v for v in result.views if v.partition == "plain-0")
    data = [(r.key, r.value) for s in plain.segments for r in s.records]
    assert [kv for kv in data if not (kv[0] is None and (kv[1] or "").startswith("endTxnMarker: COMMIT"))] \
        == sent_plain() and len(data) == len(sent_plain()) + 1


def test_the_same_segment_dumped_twice_takes_the_fuller_dump() -> None:
    (p,) = partitions([dump("plain.shallow.txt"), dump("plain.txt"), dump("plain.records.txt")])
    assert all(r.printed for s in p.segments for b in s.batches for r in b.records if r.control is None)
    assert check_log(log_view(p)).ok


# ---------------------------------------------------------------------------------------------------------------
# Bad input: one line naming the file and line

HEAD = "Dumping d/t-0/00000000000000000000.log\nLog starting offset: 0\n"
BATCH = ("baseOffset: 0 lastOffset: 0 count: 1 baseSequence: 0 lastSequence: 0 producerId: 1 producerEpoch: 0 "
         "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
         "position: 0 CreateTime: 5 size: 70 magic: 2 compresscodec: none crc: 1 isvalid: true\n")
RECORD = "| offset: 0 CreateTime: 5 keySize: 1 valueSize: 1 sequence: 0 headerKeys: [] key: a payload: b\n"


@pytest.mark.parametrize(("text", "line", "fragment"), [
    ("hello\n", 1, "expected 'Dumping FILE'"),
    (HEAD + RECORD, 3, "a record line of the 3.0–4.4 layout before any batch line"),
    (HEAD + BATCH.replace("size: 70", "size: seventy"), 3, "'size: seventy' is not a number"),
    (HEAD + BATCH.replace("size: 70 ", ""), 3, "a batch line with no 'size:': kcheck reads the batch lines of the "
                                               "layouts of Kafka 1.0 to 4.4"),
    (HEAD + BATCH.replace("crc: 1", "checksum: 1"), 3, "a batch line with 'checksum:'"),
    (HEAD + BATCH + RECORD.replace("keySize: 1 valueSize: 1", "keysize: 1"), 4,
     "a record line of the 2.2–2.7 layout with no 'valuesize:'"),
    (HEAD + BATCH + "offset: 0 position: 0 CreateTime: 5 isvalid: true keysize: 1 valuesize: 1 magic: 2 "
                    "sequence: 0 headerKeys: []\n", 4, "a record line of the 1.0–2.1 (one line per record) layout "
                                                       "with no 'compresscodec:'"),
    (HEAD + "hello\n", 3, "not a line of kafka-dump-log.sh output (the layouts of Kafka 1.0 to 4.4)"),
    (HEAD + BATCH + RECORD.replace("[] key: a", "[] junk"), 4, "headerKeys list does not end"),
    (HEAD + BATCH + RECORD + "| key: a payload: b\n", 5, "--skip-record-metadata"),
    ("Dumping d/t-0/00000000000000000000.index\noffset: 3 position: x\n", 2, "expected an index entry"),
    ("Dumping d/t-0/abc.log\n", 1, "base offset"),
    ("Dumping d/t-0/00000000000000000000.log\n" + BATCH, 2, "before the 'Log starting offset'"),
    (HEAD + "offset: 0 position: 0 CreateTime: 5 size: 70 magic: 1 compresscodec: none crc: 1 isvalid: true\n", 3,
     "v0/v1"),
])
def test_bad_dump_lines(text: str, line: int, fragment: str) -> None:
    with pytest.raises(InputError) as e:
        parse_dump(text, "bad.txt")
    assert e.value.line == line and fragment in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert str(e.value).startswith(f"bad.txt:{line}: ")


@pytest.mark.parametrize(("text", "fragment"), [
    ("Querying brokers for log directories information\n{\"brokers\": [", "invalid JSON"),
    ('{"brokers":[{"broker":"1","logDirs":[]}],"version":1}', "'broker' is str, not int"),
    ('{"brokers":[{"broker":1,"logDirs":[{"logDir":"/d","error":null,"partitions":[{"partition":"t-0"}]}]}]}',
     "no 'size'"),
    ("garbage\n{\"brokers\": []}", "not kafka-log-dirs.sh output"),
])
def test_bad_log_dirs(text: str, fragment: str) -> None:
    with pytest.raises(InputError) as e:
        parse_log_dirs(text, "dirs.txt")
    assert fragment in str(e.value) and "\n" not in str(e.value), str(e.value)


# ---------------------------------------------------------------------------------------------------------------
# Each release's own tool, run now on the kept segment files: it prints what tests/data/dump/releases/ holds


@pytest.mark.kafka
@pytest.mark.parametrize("release", ["4.4.0", *(pytest.param(r, marks=pytest.mark.slow) for r in ("3.9.1", "2.3.1",
                                                                                                 "1.0.2"))])
def test_stored_dumps_are_what_the_tool_prints(release: str, tmp_path: Path) -> None:
    import shutil
    import subprocess
    import sys

    from kcheck.reference import kafka_tools

    if shutil.which("java") is None:
        pytest.skip("`java` not on PATH")
    sys.path.insert(0, str(DATA))
    try:
        import make_releases
    finally:
        sys.path.remove(str(DATA))
    manifest = json.loads((DATA / "releases" / "manifest.json").read_text(encoding="utf-8"))
    shutil.copytree(DATA / "segments", tmp_path / "segments")
    for mode in ("deep-data", "live"):
        cmd = kafka_tools.command(kafka_tools.resolve_tools(release), "kafka-dump-log", make_releases.arguments(mode))
        out = subprocess.run(cmd, cwd=tmp_path / "segments", stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=180)
        stored = (DATA / "releases" / manifest["dumps"][mode][release]["file"]).read_text(encoding="utf-8")
        # the same lines; the tool's reports come in its hash map's order, which the folder's path decides
        got = out.stdout.replace(str(tmp_path / "segments"), manifest["work"])
        assert sorted(got.splitlines()) == sorted(stored.splitlines()), mode
