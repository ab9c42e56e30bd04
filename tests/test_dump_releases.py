"""Every release's own kafka-dump-log, 1.0.2 to 4.4.0, on the same segment files in each mode, read by verify-log.

The dumps are real: tests/data/dump/releases/ holds what each release's DumpLogSegments printed (stdout and stderr
as one stream, as `2>&1` pastes it), run by tests/data/dump/make_releases.py through kcheck.reference.kafka_tools on
the segment files kept in tests/data/dump/segments (plain-0 and compacted-0 from a real 4.4.0 cluster stopped cleanly;
live-0, live-1 and a __consumer_offsets partition copied from a running 4.4.0 broker). No JVM is needed here.

What each must give: the LogView (segments, records with offsets, keys, values, timestamps and bytes, batch
positions, index entries) that the newest release's dump of the same files gives, less what that release's tool does
not print, each such omission checked on the release's own text; and verify-log's verdict: clean. The newest
release's dumps are themselves checked against what the producers sent (tests/test_log_formats.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from cli_support import one_error_line, run
from kcheck.inputs.formats import InputError
from kcheck.inputs.log_tools import (
    EARLY_MISMATCH,
    UNNAMED,
    ZERO_SLOT,
    Dump,
    PartitionDump,
    log_view,
    parse_dump,
    partitions,
    read_inputs,
    verify_log,
)
from kcheck.runtime.exit_codes import Exit

DATA = Path(__file__).parent / "data" / "dump"
RELEASES = DATA / "releases"
MANIFEST = json.loads((RELEASES / "manifest.json").read_text(encoding="utf-8"))
NEWEST = "4.4.0"
CASES = [(mode, release) for mode, rows in MANIFEST["dumps"].items() for release in rows]
# 1.1 to 3.3's --offsets-decoder dies on the offset commits a 4.x broker writes (schema version 4): refused
DECODER_TOO_OLD = {r for r in MANIFEST["dumps"]["offsets"] if (1, 1) <= tuple(map(int, r.split(".")))[:2] <= (3, 3)}


def v(release: str) -> tuple[int, int]:
    major, minor = release.split(".")[:2]
    return int(major), int(minor)


def text(mode: str, release: str) -> str:
    return (RELEASES / MANIFEST["dumps"][mode][release]["file"]).read_text(encoding="utf-8")


@cache
def dump(mode: str, release: str) -> Dump:
    return parse_dump(text(mode, release), f"{mode}/{release}")


def bare(mode: str) -> str | None:
    return "plain-0" if mode == "bare" else None


def printed_by(p: PartitionDump, release: str, mode: str) -> PartitionDump:
    """The newest release's dump of a partition as `release`'s tool prints the same files (what it leaves out)."""
    segments = []
    for s in p.segments:
        # 1.0: --print-data-log and the decoders do not imply --deep-iteration (they do from 1.1)
        deep = s.deep and not (v(release) < (1, 1) and mode in ("compacted", "offsets"))
        batches = []
        for b in s.batches:
            records = b.records if deep else ()
            if v(release) < (2, 4):  # a tombstone's key is not printed (KAFKA-9293)
                records = tuple(replace(r, key=None) if r.value_size < 0 and r.printed else r for r in records)
            batches.append(replace(
                b, records=records,
                size=None if deep and v(release) < (2, 2) else b.size,  # one line per record, no batch line
                count=b.count if deep or v(release) >= (2, 0) else None))  # no count: 1.0 and 1.1
        segments.append(replace(s, batches=tuple(batches), deep=deep))
    return replace(p, segments=tuple(segments))


def undecoded(view):
    """A view without its keys and values: each release's --offsets-decoder prints them its own way (JSON from 3.8,
    'offset_commit::group=...' in 3.4 to 3.7, with the topic id from 4.1)."""
    return replace(view, segments=tuple(replace(s, records=tuple(
        replace(r, key=None, value=None if r.value is None else "") for r in s.records)) for s in view.segments))


def views(mode: str, release: str, newest: bool = False) -> dict[str, object]:
    parts = partitions([dump(mode, NEWEST if newest else release)], bare(mode))
    out = {p.name: log_view(printed_by(p, release, mode) if newest else p) for p in parts}
    return {k: undecoded(x) for k, x in out.items()} if mode == "offsets" else out


@pytest.mark.parametrize(("mode", "release"), [c for c in CASES if c[1] not in DECODER_TOO_OLD or c[0] != "offsets"])
def test_every_release_reads_as_the_newest(mode: str, release: str) -> None:
    got = views(mode, release)
    assert got == views(mode, release, newest=True)
    if not got:  # only indexes dumped (--index-sanity-check): the same files, each passed (or said to be empty)
        assert mode in ("sanity", "live-sanity")
        files = {(i.path, i.kind, i.entries) for i in dump(mode, release).indexes}
        newest = {(i.path, i.kind, i.entries) for i in dump(mode, NEWEST).indexes}
        assert files == newest if mode == "sanity" else files <= newest  # 1.0 and 1.1 stop earlier on live-1
        died = {n.path for n in dump(mode, release).notes if n.kind == "exception"}
        for i in dump(mode, release).indexes:  # what the newest passed: passed, said to be empty (2.8+) or died on
            if f"{i.path} passed sanity check." in text(mode, NEWEST):
                assert i.sanity_checked or f"{i.path} is empty." in text(mode, release) or i.path in died, i.path
    result = verify_log([dump(mode, release)], partition=bare(mode))
    assert result.violations == [], [x.message for _, x in result.violations]
    assert all(n.expected is not None for n in result.notes if n.finding)  # anything the tool reported: explained


@pytest.mark.parametrize("release", sorted(DECODER_TOO_OLD))
def test_an_offsets_decoder_older_than_the_data_is_refused(release: str) -> None:
    with pytest.raises(InputError) as e:
        dump("offsets", release)
    assert re.search(r"stopped at offset 0 \(Exception in thread \"main\" \S+: Unknown offset (schema|message) "
                     r"version:? 4\): this release's --offsets-decoder cannot read", str(e.value)), str(e.value)
    assert MANIFEST["dumps"]["offsets"][release]["exit"] == 1  # the tool itself died


def test_the_release_differences_are_in_the_tools_own_text() -> None:
    """What printed_by() leaves out, read on each release's own output."""
    for release in MANIFEST["dumps"]["deep-data"]:
        deep = text("deep-data", release)
        tombstones = [line for line in deep.splitlines() if re.search(r"value[sS]ize: -1 ", line + " ")]
        assert tombstones and all((" key: " in line) == (v(release) >= (2, 4)) for line in tombstones), release
        assert ("baseOffset: " in deep) == (v(release) >= (2, 2)), release  # batch lines with the records
        assert ("keysize: " in deep) == (v(release) <= (2, 7)), release
        assert ("isValid: " in deep) == (v(release) == (2, 8)), release  # 2.8's record lines repeat their batch
        shallow = text("shallow", release)
        assert ("count: " in shallow) == (v(release) >= (2, 0)), release
        assert ("Log starting offset: " in shallow) == (v(release) >= (3, 3)), release
        assert ("deleteHorizonMs: " in shallow) == (v(release) >= (3, 2)), release
        for mode in ("compacted", "offsets"):
            if release not in DECODER_TOO_OLD or mode == "compacted":
                records = re.search(r"^(\| offset: |offset: [0-9]+ position: [0-9]+ \w+: )", text(mode, release),
                                    re.MULTILINE)
                assert bool(records) == (v(release) >= (1, 1)), (mode, release)  # 1.0: not without --deep-iteration
        first = next(line for line in shallow.splitlines() if line.startswith("baseOffset: "))
        assert (first.index("isvalid: ") < first.index("size: ")) == (v(release) <= (2, 1)), release
        assert ("compresscodec: none" in first) == (v(release) >= (3, 0)), release
        # up to 2.2 every offset-index entry of a batch of several records is 'a mismatch' (KAFKA-7487)
        assert ("Mismatches in :" in deep) == (v(release) <= (2, 2)), release
        assert ("Non-consecutive offsets in " in deep) == (v(release) >= (4, 3)), release
        gaps = text("compacted", release)  # compacted-0 has real gaps: every release with records reports them
        assert ("Non-consecutive offsets in :" in gaps) == ((1, 1) <= v(release) <= (2, 2)), release
        assert ("Non-consecutive offsets in " in gaps) == (v(release) >= (1, 1)), release
        # segment 18's offset index has no entry: nothing printed up to 2.7, 'is empty.' from 2.8
        assert ("00000000000000000018.index is empty." in deep) == (v(release) >= (2, 8)), release
        sane = text("sanity", release)
        assert ("00000000000000000018.index passed sanity check." in sane) == (v(release) <= (2, 7)), release
        # the Java tool from 4.3 (its stack trace names the class that died)
        died = text("live-sanity", release)
        assert ("at org.apache.kafka.tools.DumpLogSegments." in died) == (v(release) >= (4, 3)), release
        if release not in DECODER_TOO_OLD and v(release) >= (1, 1):
            decoded = text("offsets", release)
            assert ("key: offset_commit::group=" in decoded) == ((3, 4) <= v(release) <= (3, 7)), release
            assert ('key: {"type":"1"' in decoded) == (v(release) >= (3, 8)), release
            assert ('"topicId":' in decoded) == (v(release) >= (4, 1)), release


@pytest.mark.parametrize("release", MANIFEST["dumps"]["deep-data"])
def test_the_layout_read_is_named(capsys, release: str) -> None:
    """--json names the layouts a dump was read in: the releases whose tool prints each kind of line that way."""
    code, out, _ = run(capsys, "verify-log", "--json", str(RELEASES / MANIFEST["dumps"]["deep-data"][release]["file"]))
    (part,) = json.loads(out)["partitions"]
    header = "Starting offset: 1.0–3.2" if v(release) < (3, 3) else "Log starting offset: 3.3–4.4"
    records = ("record lines 1.0–2.1 (one line per record)" if v(release) < (2, 2) else
               "record lines 2.2–2.7" if v(release) < (2, 8) else "record lines 2.8" if v(release) < (3, 0) else
               "record lines 3.0–4.4")
    batches = ("batch lines 1.0–1.1" if v(release) < (2, 0) else "batch lines 2.0–2.1" if v(release) < (2, 2) else
               "batch lines 2.2–2.8" if v(release) < (3, 0) else "batch lines 3.0–3.1" if v(release) < (3, 2) else
               "batch lines 3.2–4.4")
    deep = [header, records] + ([batches] if v(release) >= (2, 2) else [])  # 1.0 to 2.1: no batch line then
    assert code == Exit.OK and part["layouts"] == sorted(deep)
    code, out, _ = run(capsys, "verify-log", "--json", str(RELEASES / MANIFEST["dumps"]["shallow"][release]["file"]))
    (part,) = json.loads(out)["partitions"]
    assert code == Exit.OK and part["layouts"] == sorted([header, batches])


def test_early_index_mismatches_are_the_batches_last_offsets() -> None:
    """1.0 to 2.2 report each offset-index entry whose batch holds several records: the entry names the batch's last
    offset (LogSegment.append writes it so), the tool compared it with the batch's first (KAFKA-7487, fixed in
    2.3). kcheck does not count them, and its own log.offset-index check passes the same entries."""
    for release in [r for r in MANIFEST["dumps"]["deep-data"] if v(r) <= (2, 2)]:
        notes = [n for n in verify_log([dump("deep-data", release)]).notes if n.kind == "index-mismatch" and n.finding]
        assert notes and {n.expected for n in notes} == {EARLY_MISMATCH}, release
        batches = {(b.records[0].offset, b.records[-1].offset) for s in dump("deep-data", NEWEST).segments
                   for b in s.batches}
        for n in notes:
            m = re.fullmatch(r"Index offset: (\d+), log offset: (\d+)", n.text)
            assert m and (int(m[2]), int(m[1])) in batches and m[1] != m[2]


# ---------------------------------------------------------------------------------------------------------------
# The active segment's index slots that are still zeros (segments/live-*, copied from a running broker)


@pytest.mark.parametrize("release", MANIFEST["dumps"]["live"])
def test_an_active_time_index_with_no_entry_yet(release: str) -> None:
    """live-1's only segment holds one batch and no index entry yet: its preallocated time index is all zeros. Every
    release's tool prints the first slot as an entry and reports it as a timestamp mismatch, dumped or verified
    (--verify-index-only); 1.0 to 2.2 also read every zero slot of live-0's active time index (out of order, indexed
    offset not found). kcheck reads all of it as the active segment's preallocated slots: no violation."""
    for mode in ("live", "live-verify"):
        result = verify_log([dump(mode, release)])
        assert result.violations == []
        zero = [n for n in result.notes if n.finding and n.expected == ZERO_SLOT]
        assert {(n.path.split("/")[-2], n.kind) for n in zero if n.path} >= {("live-1", "time-index-mismatch")}
        assert all(re.fullmatch(r"Index timestamp: 0, log timestamp: \d+", n.text) for n in zero
                   if n.kind == "time-index-mismatch")
        if v(release) <= (2, 2):  # the old tools look up every zero slot of live-0's active time index too
            (missing,) = [n for n in zero if n.kind == "offset-not-found"]
            assert missing.text.startswith("Indexed offset: 6,") and missing.repeat == 4092 // 12 - 2
            assert [n.text for n in zero if n.kind == "time-index-order"] == [
                "Index timestamp: 0, Previously indexed timestamp: 0"]
        else:
            assert {n.kind for n in result.notes if n.finding} == {"time-index-mismatch"}
    # the copies of the running broker's files: the active segments' indexes as preallocated (segment.index.bytes)
    assert [(DATA / "segments" / f).stat().st_size for f in ("live-1/00000000000000000000.timeindex",
                                                               "live-0/00000000000000000006.timeindex")] == [4092] * 2
    (live_1,) = [p for p in partitions([dump("live", release)]) if p.name == "live-1"]
    assert live_1.time_indexes[0].entries == () and live_1.time_indexes[0].zero_slots >= 1


@pytest.mark.parametrize("release", MANIFEST["dumps"]["live-sanity"])
def test_index_sanity_check_on_an_active_segment(release: str) -> None:
    """--index-sanity-check reads the last slot of a preallocated index as its last entry: 1.0 and 1.1 fail on
    live-1's offset index ('the last offset is 0 which is no larger than the base offset 0'), 2.0 and later on
    live-0's active time index ('the last timestamp is 0 which is less than the first timestamp'); the tool dies
    there. Expected on a live log: clean, with the reason said."""
    result = verify_log([dump("live-sanity", release)])
    assert result.violations == [] and MANIFEST["dumps"]["live-sanity"][release]["exit"] == 1
    (died,) = [n for n in result.notes if n.kind == "exception"]
    assert died.expected is not None and died.expected.startswith(ZERO_SLOT)
    want = "live-1/00000000000000000000.index" if v(release) < (2, 0) else "live-0/00000000000000000006.timeindex"
    assert died.path == want and ("last offset is 0" if v(release) < (2, 0) else "last timestamp is 0") in died.text


def _sealed(tmp_path: Path, mode: str, old: str, new: str) -> str:
    """A real live dump whose report names a sealed segment's index (live-0's segment 0, rolled: segment 6 follows)
    instead of the active one's."""
    body = text(mode, NEWEST)
    assert old in body
    out = tmp_path / f"{mode}.sealed.txt"
    out.write_text(body.replace(old, new), encoding="utf-8")
    return str(out)


def test_a_zero_slot_in_a_sealed_segment_is_a_finding(capsys, tmp_path: Path) -> None:
    """Kafka trims a segment's indexes when it rolls: a zero slot in a sealed segment's index is damage (or a copy
    taken mid-roll), so the same report on segment 0 of live-0 is a hard finding."""
    bad = _sealed(tmp_path, "live", "live-1/00000000000000000000.timeindex", "live-0/00000000000000000000.timeindex")
    code, out, _ = run(capsys, "verify-log", "--json", bad)
    found = json.loads(out)["violations"]
    assert code == Exit.FAILED and [(x["invariant"], x["partition"], x["segment"]) for x in found] == [
        ("log-dump.kafka-check", "live-0", "0")] and "Index timestamp: 0" in found[0]["message"]
    bad = _sealed(tmp_path, "live-sanity", "live-0/00000000000000000006.timeindex",
                  "live-0/00000000000000000000.timeindex")
    code, out, _ = run(capsys, "verify-log", "--json", bad)
    assert code == Exit.FAILED and "CorruptIndexException" in json.loads(out)["violations"][0]["message"]


def test_the_cli_says_why_a_live_dump_is_clean(capsys) -> None:
    path = str(RELEASES / MANIFEST["dumps"]["live"]["1.0.2"]["file"])
    code, out, err = run(capsys, "verify-log", path)
    assert code == Exit.OK and err == ""
    assert "that a healthy log shows (not counted): the active segment's index file (its partition's last segment " \
           "in the dump) is preallocated" in out
    assert "live-1/00000000000000000000.timeindex" in out and "OK: 0 hard violation(s)" in out


# ---------------------------------------------------------------------------------------------------------------
# A dump run inside the partition's folder (`--files 00000000000000000000.log,...`: no folder in the paths)


def test_bare_file_names(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = str(RELEASES / MANIFEST["dumps"]["bare"]["3.9.1"]["file"])  # 3.9's tool prints no absolute path
    assert not re.search(r"/[0-9]+\.(log|index|timeindex)\b", text("bare", "3.9.1"))
    code, out, _ = run(capsys, "verify-log", "--json", path)
    doc = json.loads(out)
    assert code == Exit.OK and [p["partition"] for p in doc["partitions"]] == [UNNAMED]
    assert doc["bare_files"] == {"partition": None, "from": "nothing: give --partition TOPIC-N"}
    code, out, _ = run(capsys, "verify-log", path)
    assert "partition (unnamed), named by nothing: give --partition TOPIC-N" in out
    code, out, _ = run(capsys, "verify-log", "--json", "--partition", "plain-0", path)
    doc = json.loads(out)
    assert [p["partition"] for p in doc["partitions"]] == ["plain-0"] and doc["bare_files"]["from"] == "--partition"
    (tmp_path / "plain-0").mkdir()
    monkeypatch.chdir(tmp_path / "plain-0")
    code, out, _ = run(capsys, "verify-log", path)
    assert code == Exit.OK and "partition plain-0, named by the current directory" in out
    # the same first two segments, named as when dumped from the folder above: the same view
    (got,) = partitions([dump("bare", "3.9.1")], "plain-0")
    (full,) = partitions([dump("deep-data", "3.9.1")])
    assert log_view(got) == log_view(replace(full, segments=full.segments[:2]))


def test_bare_file_names_named_by_the_tools_own_paths(capsys, tmp_path: Path, monkeypatch) -> None:
    """4.3+ (non-consecutive offsets) and 1.0 to 2.2 (index mismatches) print absolute paths on stderr: the folder."""
    monkeypatch.chdir(tmp_path)
    for release in ("4.4.0", "1.0.2"):
        code, out, _ = run(capsys, "verify-log", "--json", str(RELEASES / MANIFEST["dumps"]["bare"][release]["file"]))
        doc = json.loads(out)
        assert code == Exit.OK and [p["partition"] for p in doc["partitions"]] == ["plain-0"], release
        assert doc["bare_files"]["from"].startswith("the path kafka-dump-log printed (/")


def test_partition_option_misused(capsys) -> None:
    code, out, err = run(capsys, "verify-log", "--partition", "plain-0", str(DATA / "plain.txt"))
    assert code == Exit.BAD_INPUT and out == ""
    one_error_line(err, "--partition: ", "name every file with its folder")
    code, out, err = run(capsys, "verify-log", "--partition", "a/b", str(DATA / "plain.txt"))
    assert code == Exit.BAD_INPUT and out == ""
    one_error_line(err, "--partition: ", "is not a folder name")


@pytest.mark.parametrize("release", MANIFEST["dumps"]["shallow"])
def test_sizes_against_what_kafka_log_dirs_reports(release: str, tmp_path: Path) -> None:
    """The bytes of every release's dump of plain-0 are the size kafka-log-dirs reported for broker 1's replica of the
    same files (tests/data/dump/log-dirs.txt, from the cluster they were copied from); 1.0 to 2.1 with
    --deep-iteration print no batch sizes, so the check does not apply there (and says why)."""
    doc = json.loads((DATA / "log-dirs.txt").read_text(encoding="utf-8").splitlines()[-1])
    doc["brokers"] = [b for b in doc["brokers"] if b["broker"] == 1]  # the broker whose files were kept
    (tmp_path / "dirs.txt").write_text(json.dumps(doc), encoding="utf-8")
    dirs = read_inputs([str(tmp_path / "dirs.txt"), str(RELEASES / MANIFEST["dumps"]["shallow"][release]["file"])])[1]
    for mode in ("shallow", "deep-data"):
        ((_, _, checked),) = verify_log([dump(mode, release)], dirs).reports
        assert checked is not None and checked.violations == ()
        if mode == "deep-data" and v(release) < (2, 2):
            assert checked.skipped == {"log-dirs.size": "the dump prints no batch sizes (--deep-iteration of Kafka "
                                                         "1.0 to 2.1)"}
        else:
            assert checked.checked == ("log-dirs.size",)


def test_a_shallow_dump_checks_the_index_against_the_batches(capsys, tmp_path: Path) -> None:
    """1.0's --print-data-log prints batches only (no --deep-iteration implied) beside the indexes: an offset-index
    entry moved past its batch is still caught, batch by batch (segment 0's batch 17..18 starts at 75)."""
    body = text("compacted", "1.0.2")
    assert body.count("offset: 18 position: 75\n") == 1
    bad = tmp_path / "compacted.1.0.2.txt"
    bad.write_text(body.replace("offset: 18 position: 75\n", "offset: 18 position: 150\n"), encoding="utf-8")
    code, out, _ = run(capsys, "verify-log", "--json", str(RELEASES / MANIFEST["dumps"]["compacted"]["1.0.2"]["file"]))
    assert code == Exit.OK and json.loads(out)["partitions"][0]["shallow_segments"] == [0, 22]
    code, out, _ = run(capsys, "verify-log", "--json", str(bad))
    found = [(x["invariant"], x["segment"], x["offset"]) for x in json.loads(out)["violations"]]
    assert code == Exit.FAILED and ("log.offset-index", "0", "18") in found
    assert any("lands past its target: the batch of offset 18 starts at position 75" in x["message"]
               for x in json.loads(out)["violations"])
