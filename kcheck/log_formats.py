"""Kafka's own storage tools' output, read into `LogView`s, and `kcheck verify-log` (issue 17, part 4).

* `kafka-dump-log.sh` (`org.apache.kafka.tools.DumpLogSegments`, `tools/src/main/java/org/apache/kafka/tools/
  DumpLogSegments.java` from 4.x; `core/src/main/scala/kafka/tools/DumpLogSegments.scala` before): `.log` segments
  shallow (batches only), with `--deep-iteration` (one line per record) and with `--print-data-log` (keys and
  payloads; any decoder option implies it), `--offsets-decoder` (__consumer_offsets as JSON), `.index` and
  `.timeindex` files, `--index-sanity-check`, several `--files` at once, and what the tool writes on stderr
  (pasted with `2>&1`: index mismatches, non-consecutive offsets, a failed sanity check's exception).
* `kafka-log-dirs.sh --describe` (`org.apache.kafka.tools.LogDirsCommand`): the JSON of brokers, log dirs and
  each replica's size and offset lag, after the tool's two chatter lines.

How the dump shows what matters (read in Kafka's code, checked on Kafka 4.4.0's tool over a real cluster's data,
tests/data/dump/make.py):
* A batch line (`baseOffset: ... position: P ... size: S ...`) gives the batch's file position and bytes; a
  record line (`| offset: N CreateTime: T keySize: K valueSize: V ...`) follows for each record with deep iteration.
* A null value (a tombstone) prints `valueSize: -1` and no `payload:` at all; an empty value prints
  `valueSize: 0` and `payload: ` with nothing after it. A null key prints `keySize: -1` and no `key:`. The offsets
  decoder prints a tombstone as `payload: <DELETE>` (with `valueSize: -1`). Payloads and keys are printed raw: a
  line break in a payload continues the record on the next line, and a key may hold ' payload: '; the sizes (in
  bytes, the UTF-8 of the printed text for the default StringDecoder) say where each ends.
* After cleaning, a batch keeps its base and last offsets while holding fewer records (`count` < the span).
* An offset-index entry is a batch's last offset and the batch's position; a time-index entry is a timestamp and
  an offset. `X.index is empty.` is an index with no entries.
* Kafka 4.4.0's tool reports every segment not starting at offset 0 as 'Non-consecutive offsets ... -1 is
  followed by N' (its Java port compares the first record with -1; 3.9's Scala tool did not): kcheck ignores the
  tool's own non-consecutive report (a compacted log has gaps anyway) and checks offsets itself.

One `LogView` per partition directory (`kcheck.invariants.log_storage`): segments from the `.log` file names
(base offsets), records from the batches (offset, key, payload or tombstone, timestamp, the batch's bytes spread
over its records), each record's batch position, and the index entries of the segment's `.index` and `.timeindex`
dumps. What the dump cannot say: the log start offset (taken as the first segment's base offset) and the high
watermark (unknown). Every malformed line is an `InputError` naming the file and line (exit 2).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import typer

from kcheck.exit_codes import Exit
from kcheck.formats import InputError, read_text, shown
from kcheck.invariants.registry import Report, Severity, Violation, check_all, register

# ---------------------------------------------------------------------------------------------------------------
# What a dump holds


@dataclass(frozen=True)
class DumpRecord:
    offset: int
    timestamp: int
    timestamp_type: str  # CreateTime, LogAppendTime, NoTimestampType
    key_size: int  # -1: a null key
    value_size: int  # -1: a null value (a tombstone)
    sequence: int
    header_keys: tuple[str, ...]
    key: str | None  # as printed (--print-data-log); None when null or not printed
    payload: str | None  # as printed; None when null or not printed
    printed: bool  # keys and payloads were printed (--print-data-log or a decoder)
    control: str | None  # a control record's text (e.g. 'endTxnMarker: COMMIT coordinatorEpoch: 0')
    line: int


@dataclass(frozen=True)
class DumpBatch:
    base_offset: int
    last_offset: int
    count: int | None
    position: int
    size: int
    timestamp_type: str
    max_timestamp: int
    magic: int
    compression: str
    is_transactional: bool
    is_control: bool
    is_valid: bool
    producer_id: int
    delete_horizon_ms: int | None
    records: tuple[DumpRecord, ...]  # empty without deep iteration
    line: int


@dataclass(frozen=True)
class SegmentDump:
    path: str  # as the tool printed it (`Dumping PATH`)
    base_offset: int  # from `Log starting offset:` (the file name's number)
    batches: tuple[DumpBatch, ...]
    deep: bool  # record lines were printed (--deep-iteration, implied by --print-data-log)
    invalid_bytes: int  # `Found N invalid bytes at the end of FILE`
    line: int


@dataclass(frozen=True)
class IndexDump:
    path: str
    kind: str  # "offset" (.index) or "time" (.timeindex)
    entries: tuple[tuple[int, int], ...]  # (offset, position) or (timestamp, offset)
    sanity_checked: bool  # --index-sanity-check printed '... passed sanity check.' (no entries then)
    line: int


@dataclass(frozen=True)
class KafkaNote:
    """A line the tool wrote on stderr (pasted with 2>&1), kept as it said it."""

    kind: str  # index-mismatch, time-index-mismatch, time-index-order, offset-not-found, non-consecutive, exception
    path: str | None
    text: str
    line: int
    finding: bool = True  # one thing found (an exception, a detail line), not a block's heading


@dataclass
class Dump:
    source: str
    segments: list[SegmentDump] = field(default_factory=list)
    indexes: list[IndexDump] = field(default_factory=list)
    notes: list[KafkaNote] = field(default_factory=list)
    other_files: list[str] = field(default_factory=list)  # producer snapshots, transaction indexes, unknown files


# ---------------------------------------------------------------------------------------------------------------
# kafka-dump-log output

_INT = r"-?[0-9]+"
_BATCH_RE = re.compile(
    rf"baseOffset: (?P<base>{_INT}) lastOffset: (?P<last>{_INT}) count: (?P<count>{_INT}|null) "
    rf"baseSequence: {_INT} lastSequence: {_INT} producerId: (?P<pid>{_INT}) producerEpoch: {_INT} "
    rf"partitionLeaderEpoch: {_INT} isTransactional: (?P<txn>true|false) isControl: (?P<control>true|false) "
    rf"(?:deleteHorizonMs: (?P<horizon>OptionalLong\.empty|OptionalLong\[{_INT}\]|{_INT}) )?"
    rf"position: (?P<position>{_INT}) (?P<ttype>\w+): (?P<maxts>{_INT}) size: (?P<size>{_INT}) "
    rf"magic: (?P<magic>{_INT}) compresscodec: (?P<codec>\S+) crc: {_INT} isvalid: (?P<valid>true|false)")
_LEGACY_BATCH_RE = re.compile(rf"offset: {_INT} position: {_INT} \w+: {_INT} size: {_INT} magic: [01] ")
_RECORD_RE = re.compile(
    rf"\| offset: (?P<offset>{_INT}) (?P<ttype>\w+): (?P<ts>{_INT}) keySize: (?P<ks>{_INT}) "
    rf"valueSize: (?P<vs>{_INT})(?: sequence: (?P<seq>{_INT}) headerKeys: \[)?")
# What may follow a record's header keys: data, a control record's text, or nothing.
_AFTER_HEADERS = re.compile(r"\](?=$| key: | payload: | endTxnMarker: | controlType: | SnapshotHeader | "
                            r"SnapshotFooter | KRaftVersion | KRaftVoters )")
_DUMPING_RE = re.compile(r"Dumping (?P<path>.+)")
_START_RE = re.compile(rf"Log starting offset: (?P<base>{_INT})")
_OFFSET_ENTRY_RE = re.compile(rf"offset: (?P<a>{_INT}) position: (?P<b>{_INT})")
_TIME_ENTRY_RE = re.compile(rf"timestamp: (?P<a>{_INT}) offset: (?P<b>{_INT})")
_INVALID_RE = re.compile(rf"Found (?P<n>{_INT}) invalid bytes at the end of (?P<name>.+)")
_STDERR = (  # DumpLogSegments' stderr: (kind, pattern with the file, when it names one)
    ("non-consecutive", re.compile(r"Non-consecutive offsets in (?P<path>.+)")),
    ("index-mismatch", re.compile(r"Mismatches in :(?P<path>.+)")),
    ("time-index-mismatch", re.compile(r"Found timestamp mismatch in :(?P<path>.+)")),
    ("time-index-order", re.compile(r"Found out of order timestamp in :(?P<path>.+)")),
    ("offset-not-found", re.compile(r"The following indexed offsets are not found in the log\.")),
)
_STDERR_DETAIL = re.compile(rf"(?:\s+{_INT} is followed by {_INT}|\s+Index offset: {_INT}, log offset: {_INT}|"
                            rf"\s+Index timestamp: {_INT}, (?:log timestamp|Previously indexed timestamp): {_INT}|"
                            rf"Indexed offset: {_INT}, found log offset: {_INT})")
_EXCEPTION_RE = re.compile(r"(?:Exception in thread \"\S+\" )?(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error)"
                           r"(?::.*)?")
_TRACE_RE = re.compile(r"\s+at \S+|\s*\.\.\. [0-9]+ more|Caused by: .*")
_OTHER_FILE_LINE = re.compile(r"(?:producerId: |version: [0-9]+ producerId: |Snapshot end offset: |"
                              r"KRaft bootstrap snapshot$)")
# The tool's other stderr: unknown files, and the logging a release's jars print (SLF4J and log4j warnings in 3.9,
# slf4j-simple's '[main] INFO ...' lines in 4.0)
_CHATTER = re.compile(r"Ignoring unknown file |SLF4J: |log4j:(?:WARN|ERROR) |\[[\w .$-]+\] (?:TRACE|DEBUG|INFO|WARN) ")


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _take_bytes(text: str, size: int) -> str | None:
    """The prefix of `text` whose UTF-8 is `size` bytes, or None if no prefix is."""
    n = 0
    for i, ch in enumerate(text):
        if n == size:
            return text[:i]
        n += _utf8_len(ch)
        if n > size:
            return None
    return text if n == size else None


def _split_data(rest: str, key_size: int, value_size: int) -> tuple[str | None, str | None, bool]:
    """The key and payload of a record line's tail (after its header keys), and whether they were printed.

    The key ends where its printed UTF-8 is keySize bytes and ' payload: ' or the line's end follows (exact for the
    default StringDecoder); otherwise (another decoder) a JSON key (--offsets-decoder) ends where its JSON does,
    and any other key at the first ' payload: '."""
    if not rest:
        return None, None, False
    key: str | None = None
    if rest.startswith(" key: "):
        tail = rest[len(" key: "):]
        cut = _take_bytes(tail, key_size) if key_size >= 0 else None
        if cut is not None and (tail[len(cut):] == "" or tail[len(cut):].startswith(" payload: ")):
            key, rest = cut, tail[len(cut):]
        else:
            end = -1
            if tail.startswith("{"):
                try:
                    _, end = json.JSONDecoder().raw_decode(tail)
                except ValueError:
                    end = -1
            if end < 0 or not (tail[end:] == "" or tail[end:].startswith(" payload: ")):
                found = tail.find(" payload: ")
                end = len(tail) if found < 0 else found
            key, rest = tail[:end], tail[end:]
    if rest.startswith(" payload: "):
        return key, rest[len(" payload: "):], True
    if rest:
        raise ValueError(f"unexpected text after the record's metadata: {rest[:80]!r}")
    return key, None, True


def parse_dump(text: str, source: str) -> Dump:
    """The output of one or more kafka-dump-log.sh runs (stdout, and stderr if pasted with it)."""
    dump = Dump(source)
    lines = text.removeprefix("\ufeff").splitlines()
    current: str | None = None  # the file being dumped
    kind: str | None = None  # log, index, timeindex, other
    seg_base: int | None = None
    seg_line = 0
    batches: list[DumpBatch] = []
    batch: dict[str, Any] | None = None
    records: list[DumpRecord] = []
    entries: list[tuple[int, int]] = []
    sanity = False
    invalid = 0
    deep = False
    in_stderr: str | None = None  # the kind of the stderr block being read
    in_trace = False

    def err(message: str, n: int) -> InputError:
        return InputError(source, message, n)

    def close_batch() -> None:
        nonlocal batch, records
        if batch is not None:
            batches.append(DumpBatch(records=tuple(records), **batch))
        batch, records = None, []

    def close_file() -> None:
        nonlocal batches, entries, sanity, invalid, deep, seg_base
        close_batch()
        if current is not None and kind == "log":
            if seg_base is None:
                raise err(f"{current}: no 'Log starting offset' line", seg_line)
            dump.segments.append(SegmentDump(current, seg_base, tuple(batches), deep, invalid, seg_line))
        elif current is not None and kind in ("index", "timeindex"):
            dump.indexes.append(IndexDump(current, "offset" if kind == "index" else "time", tuple(entries), sanity,
                                          seg_line))
        batches, entries, sanity, invalid, deep, seg_base = [], [], False, 0, False, None

    n = 0
    while n < len(lines):
        raw = lines[n]
        n += 1
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        if (m := _DUMPING_RE.fullmatch(line)) is not None:
            close_file()
            in_stderr, in_trace = None, False
            current, seg_line = m["path"], n
            name = os.path.basename(current)
            suffix = name[name.rfind("."):] if "." in name else ""
            kind = {".log": "log", ".index": "index", ".timeindex": "timeindex"}.get(suffix, "other")
            if kind == "other":
                dump.other_files.append(current)
            elif not re.fullmatch(r"[0-9]+", name[: name.find(".")]):
                raise err(f"{shown(current)}: a segment file's name is its base offset (digits), as Kafka names it",
                          n)
            continue
        if in_trace and _TRACE_RE.fullmatch(line):
            continue
        in_trace = False
        if _EXCEPTION_RE.fullmatch(line.strip()):  # an uncaught exception (a failed --index-sanity-check)
            dump.notes.append(KafkaNote("exception", current, line.strip(), n))
            in_trace = True
            continue
        stderr_kind = next(((k, p) for k, p in _STDERR if p.fullmatch(line)), None)
        if stderr_kind is not None:
            m2 = stderr_kind[1].fullmatch(line)
            assert m2 is not None
            in_stderr = stderr_kind[0]
            path = m2.groupdict().get("path")
            dump.notes.append(KafkaNote(in_stderr, path, line, n, finding=False))
            continue
        if in_stderr is not None and _STDERR_DETAIL.fullmatch(line):
            dump.notes.append(KafkaNote(in_stderr, dump.notes[-1].path, line.strip(), n))
            continue
        if _CHATTER.match(line):
            continue
        if current is None:
            raise err(f"expected 'Dumping FILE' (kafka-dump-log.sh output) but read {shown(line.strip(), 80)!r}", n)
        if kind == "other":
            continue  # a producer snapshot, a transaction index, a KRaft snapshot: not part of a partition's view
        if kind in ("index", "timeindex"):
            if line == f"{current} is empty.":
                continue
            if line == f"{current} passed sanity check.":
                sanity = True
                continue
            m = (_OFFSET_ENTRY_RE if kind == "index" else _TIME_ENTRY_RE).fullmatch(line)
            if m is None:
                want = "offset: N position: P" if kind == "index" else "timestamp: T offset: N"
                raise err(f"{shown(current)}: expected an index entry '{want}' but read "
                          f"{shown(line.strip(), 80)!r}", n)
            entries.append((int(m["a"]), int(m["b"])))
            continue
        # a .log segment
        if (m := _START_RE.fullmatch(line)) is not None:
            if seg_base is not None or batches or batch is not None:
                raise err(f"{shown(current)}: a second 'Log starting offset' line", n)
            seg_base = int(m["base"])
            continue
        if (m := _BATCH_RE.fullmatch(line)) is not None:
            if seg_base is None:
                raise err(f"{shown(current)}: a batch before the 'Log starting offset' line", n)
            close_batch()
            horizon = m["horizon"]
            batch = dict(base_offset=int(m["base"]), last_offset=int(m["last"]),
                         count=None if m["count"] == "null" else int(m["count"]), position=int(m["position"]),
                         size=int(m["size"]), timestamp_type=m["ttype"], max_timestamp=int(m["maxts"]),
                         magic=int(m["magic"]), compression=m["codec"], is_transactional=m["txn"] == "true",
                         is_control=m["control"] == "true", is_valid=m["valid"] == "true",
                         producer_id=int(m["pid"]),
                         delete_horizon_ms=int(re.sub(r"\D", "", horizon) or -1)
                         if horizon and horizon != "OptionalLong.empty" else None,
                         line=n)
            continue
        if _LEGACY_BATCH_RE.match(line):
            raise err(f"{shown(current)}: a message-format v0/v1 batch: kcheck reads the v2 format (Kafka 0.11 "
                      "and later; the only one Kafka 4 writes)", n)
        if (m := _RECORD_RE.match(line)) is not None:
            if batch is None:
                raise err(f"{shown(current)}: a record line before any batch line", n)
            deep = True
            if m["seq"] is None:
                raise err(f"{shown(current)}: a record line without 'sequence: N headerKeys: [...]' (a v2 record)", n)
            tail = line[m.end():]
            close = _AFTER_HEADERS.search(tail)
            if close is None:
                raise err(f"{shown(current)}: the record's headerKeys list does not end", n)
            headers = tuple(h for h in tail[: close.start()].split(",") if h) if close.start() else ()
            rest = tail[close.end():]
            key_size, value_size = int(m["ks"]), int(m["vs"])
            control = None
            if batch["is_control"]:
                control, rest = rest.strip() or None, ""
            # A payload (or key) with line breaks goes on over the next lines: its size says how far.
            while n < len(lines) and _needs_more(rest, key_size, value_size) and not _starts_known(lines[n]):
                rest += "\n" + lines[n].rstrip("\r")
                n += 1
            try:
                key, payload, printed = _split_data(rest, key_size, value_size)
            except ValueError as e:
                raise err(f"{shown(current)}: offset {m['offset']}: {e}", n) from None
            records.append(DumpRecord(int(m["offset"]), int(m["ts"]), m["ttype"], key_size, value_size,
                                      int(m["seq"]), headers, key, payload, printed, control, n))
            continue
        if line.startswith(("| key: ", "| payload: ")) or line in ("|", "| "):
            raise err(f"{shown(current)}: a record without its metadata (--skip-record-metadata): dump without that "
                      "option, the offsets are needed", n)
        if (m := _INVALID_RE.fullmatch(line)) is not None:
            close_batch()
            invalid = int(m["n"])
            continue
        if _OTHER_FILE_LINE.match(line):
            continue
        raise err(f"{shown(current)}: not a line of kafka-dump-log.sh output: {shown(line.strip(), 80)!r}", n)
    close_file()
    if not dump.segments and not dump.indexes and not dump.other_files:
        raise InputError(source, "no 'Dumping FILE' line: not kafka-dump-log.sh output")
    return dump


def _needs_more(rest: str, key_size: int, value_size: int) -> bool:
    """A printed payload shorter than its valueSize (or a key shorter than its keySize) goes on over the next line."""
    if not rest.startswith(" key: ") and not rest.startswith(" payload: "):
        return False
    at = rest.find(" payload: ")
    if at < 0:  # only a key (the value is null)
        return rest.startswith(" key: ") and key_size >= 0 and _utf8_len(rest[len(" key: "):]) < key_size
    return value_size >= 0 and _utf8_len(rest[at + len(" payload: "):]) < value_size


_KNOWN_START = re.compile(r"Dumping |Log starting offset: |baseOffset: |\| offset: |Found -?[0-9]+ invalid bytes|"
                          r"Non-consecutive offsets in |Mismatches in :")


def _starts_known(line: str) -> bool:
    return _KNOWN_START.match(line) is not None


# ---------------------------------------------------------------------------------------------------------------
# kafka-log-dirs output


@dataclass(frozen=True)
class LogDirReplica:
    broker: int
    log_dir: str
    partition: str  # topic-partition, as Kafka prints it
    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirs:
    source: str
    replicas: tuple[LogDirReplica, ...]
    dir_errors: tuple[tuple[int, str, str], ...]  # (broker, log dir, the error's class name)


def looks_like_log_dirs(text: str) -> bool:
    return '"brokers"' in text and "{" in text and "Dumping " not in text


def parse_log_dirs(text: str, source: str) -> LogDirs:
    """kafka-log-dirs.sh --describe output: its JSON line (the lines before it are the tool's chatter)."""
    lines = text.removeprefix("\ufeff").splitlines()
    at = next((i for i, line in enumerate(lines) if line.lstrip().startswith("{")), None)
    if at is None:
        raise InputError(source, "no JSON object: not kafka-log-dirs.sh --describe output")
    for i, chatter in enumerate(lines[:at]):
        if chatter.strip() and not chatter.startswith(("Querying brokers", "Received log directory information")):
            raise InputError(source, f"not kafka-log-dirs.sh output: {shown(chatter.strip(), 80)!r}", i + 1)
    try:
        doc = json.loads("\n".join(lines[at:]))
    except json.JSONDecodeError as e:
        raise InputError(source, f"invalid JSON: {e.msg}", at + e.lineno) from None
    line = at + 1

    def need(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
        if not isinstance(obj, dict) or key not in obj:
            raise InputError(source, f"{where}: no '{key}'", line)
        value = obj[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            want = getattr(kind, "__name__", str(kind))
            raise InputError(source, f"{where}: '{key}' is {type(value).__name__}, not {want}", line)
        return value

    replicas: list[LogDirReplica] = []
    errors: list[tuple[int, str, str]] = []
    for b in need(doc, "brokers", list, "the document"):
        broker = need(b, "broker", int, "a broker")
        for d in need(b, "logDirs", list, f"broker {broker}"):
            log_dir = need(d, "logDir", str, f"broker {broker}")
            if d.get("error") is not None:
                errors.append((broker, log_dir, str(d["error"])))
            for p in need(d, "partitions", list, f"broker {broker} {log_dir}"):
                where = f"broker {broker} {log_dir}"
                replicas.append(LogDirReplica(broker, log_dir, need(p, "partition", str, where),
                                              need(p, "size", int, where), need(p, "offsetLag", int, where),
                                              need(p, "isFuture", bool, where)))
    return LogDirs(source, tuple(replicas), tuple(errors))


# ---------------------------------------------------------------------------------------------------------------
# LogViews


@dataclass(frozen=True)
class PartitionDump:
    """One partition directory's segments and indexes, from one or more dumps."""

    directory: str  # the directory as the dump printed it
    name: str  # its last component: topic-partition
    segments: tuple[SegmentDump, ...]  # by base offset
    offset_indexes: dict[int, IndexDump]
    time_indexes: dict[int, IndexDump]


def _base_of(path: str) -> int:
    name = os.path.basename(path)
    return int(name[: name.find(".")])


def partitions(dumps: Sequence[Dump]) -> list[PartitionDump]:
    """Group the dumps' files by partition directory. A segment dumped more than once is taken from the dump that
    says most (data printed, then records, then batches only); an index without its segment is refused."""
    segs: dict[str, dict[int, tuple[SegmentDump, str]]] = {}
    idx: dict[str, dict[str, dict[int, IndexDump]]] = {}
    for d in dumps:
        for s in d.segments:
            directory = os.path.dirname(s.path)
            base = _base_of(s.path)
            if base != s.base_offset:
                raise InputError(d.source, f"{shown(s.path)}: 'Log starting offset: {s.base_offset}' is not the file "
                                           f"name's {base}", s.line)
            have = segs.setdefault(directory, {}).get(base)
            if have is None or _detail(s) >= _detail(have[0]):
                segs[directory][base] = (s, d.source)
        for i in d.indexes:
            directory = os.path.dirname(i.path)
            by_kind = idx.setdefault(directory, {"offset": {}, "time": {}})[i.kind]
            have_i = by_kind.get(_base_of(i.path))
            if have_i is None or i.entries or not i.sanity_checked:  # entries say more than 'passed sanity check'
                by_kind[_base_of(i.path)] = i
    out = []
    for directory in sorted(set(segs) | set(idx)):
        found = segs.get(directory, {})
        for kind, by_base in idx.get(directory, {}).items():
            for base in [b for b in by_base if b not in found and not by_base[b].entries]:
                del by_base[base]  # sanity-checked or empty: nothing to check against the segment
            missing = sorted(set(by_base) - set(found))
            if missing:
                i = by_base[missing[0]]
                raise InputError(next(d.source for d in dumps if i in d.indexes),
                                 f"{shown(i.path)}: the {'offset' if kind == 'offset' else 'time'} index of segment "
                                 f"{missing[0]} is dumped but not the segment's .log: dump the .log files too", i.line)
        for s, source in found.values():
            if not s.deep and any(b.count != 0 for b in s.batches):
                raise InputError(source, f"{shown(s.path)}: batches only (no record lines): dump the segments with "
                                         "--deep-iteration (and --print-data-log for keys) to check them", s.line)
        if not found:
            continue  # only sanity-checked or empty indexes: nothing to build a view from
        ordered = tuple(found[b][0] for b in sorted(found))
        out.append(PartitionDump(directory, os.path.basename(directory) or directory, ordered,
                                 idx.get(directory, {}).get("offset", {}), idx.get(directory, {}).get("time", {})))
    return out


def _detail(s: SegmentDump) -> int:
    printed = any(r.printed for b in s.batches for r in b.records)
    return 2 if printed else 1 if s.deep else 0


def _value(r: DumpRecord) -> str | None:
    if r.control is not None:
        return r.control  # a transaction marker or KRaft control record: no key, its text for a value
    if r.value_size < 0:
        return None  # a tombstone: the dump prints no payload (the offsets decoder prints <DELETE>)
    if r.payload is not None:
        return r.payload
    return "" if r.value_size == 0 else f"<{r.value_size} bytes, not printed>"


def log_view(p: PartitionDump, name: str | None = None) -> Any:
    """The LogView of one partition directory (kcheck.invariants.log_storage)."""
    from kcheck.model.log_view import LogRecord, LogSegmentView, LogView

    segments = []
    offsets: list[int] = []
    for s in p.segments:
        recs: list[Any] = []
        positions: list[int] = []
        for b in s.batches:
            n = len(b.records)
            for i, r in enumerate(b.records):
                # the batch's bytes spread over its records, the remainder on the first: they add up to the batch
                size = b.size // n + (b.size % n if i == 0 else 0)
                recs.append(LogRecord(r.offset, r.key, _value(r), r.timestamp, size))
                positions.append(b.position)
                offsets.append(r.offset)
        base = s.base_offset
        size_bytes = sum(b.size for b in s.batches) + s.invalid_bytes
        oi = p.offset_indexes.get(base)
        ti = p.time_indexes.get(base)
        segments.append(LogSegmentView(base, tuple(recs), size_bytes, oi.entries if oi else (),
                                       tuple(ti.entries) if ti else (), tuple(positions)))
    compacted = any(b - a > 1 for a, b in zip(offsets, offsets[1:], strict=False))
    start = segments[0].base_offset if segments else 0
    return LogView(name or p.name, tuple(segments), start, None, compacted)


# ---------------------------------------------------------------------------------------------------------------
# The sizes kafka-log-dirs reports


@dataclass(frozen=True)
class LogDirsSubject:
    """A partition's LogView beside the replica kafka-log-dirs describes for the same directory (or None)."""

    view: Any  # LogView
    replica: LogDirReplica | None
    why_unmatched: str | None = None


@register("log-dirs.size", "The size kafka-log-dirs reports for a replica is the sum of its segments' bytes",
          Severity.HARD, "UnifiedLog.size (LogSegments.sizeInBytes), ReplicaManager.describeLogDirs", "log-dirs",
          lambda s: s.why_unmatched)
def _log_dirs_size(s: LogDirsSubject) -> list[Violation]:
    assert s.replica is not None
    total = sum(seg.size_bytes or 0 for seg in s.view.segments)
    if total == s.replica.size:
        return []
    return [Violation("log-dirs.size", Severity.HARD, f"partition {s.view.partition}",
                      f"kafka-log-dirs reports {s.replica.size} bytes on broker {s.replica.broker} "
                      f"({s.replica.log_dir}), the dumped segments hold {total}",
                      {"reported": s.replica.size, "segments": total, "broker": s.replica.broker})]


def match_replica(p: PartitionDump, log_dirs: Sequence[LogDirs]) -> tuple[LogDirReplica | None, str | None]:
    """The replica whose log dir holds the dumped directory (by path; a dump's relative path matches a log dir's
    tail), else the only replica of that partition; with several and no path to tell, None and why."""
    rows = [r for ld in log_dirs for r in ld.replicas if r.partition == p.name and not r.is_future]
    if not rows:
        return None, "kafka-log-dirs does not list this partition" if log_dirs else "no kafka-log-dirs output given"
    want = os.path.normpath(p.directory)
    held = [(r, os.path.normpath(os.path.join(r.log_dir, p.name))) for r in rows]
    by_path = [r for r, d in held if d == want or (not os.path.isabs(want) and d.endswith(os.sep + want))]
    if len(by_path) == 1:
        return by_path[0], None
    if len(rows) == 1:
        return rows[0], None
    return None, f"{len(rows)} brokers hold {p.name} and the dump's path does not say which"


# ---------------------------------------------------------------------------------------------------------------
# kcheck verify-log


@register("log-dump.kafka-check",
          "Kafka's own dump tool reports nothing wrong: no failed index sanity check, no index entry that does not "
          "match its batch, no time-index timestamp out of order or unlike its batch's, no indexed offset missing",
          Severity.HARD, "DumpLogSegments (--index-sanity-check, --verify-index-only); OffsetIndex/TimeIndex."
          "sanityCheck", "log-dump")
def _kafka_check(notes: Sequence[KafkaNote]) -> list[Violation]:
    out = []
    for n in notes:
        if not n.finding or n.kind == "non-consecutive":  # gaps are normal in a compacted log (and 4.4.0's -1)
            continue
        where = "the dump"
        if n.path is not None:
            directory, name = os.path.split(n.path)
            where = f"partition {os.path.basename(directory) or directory}"
            if name[: name.find(".")].isdigit():
                where += f" segment {int(name[: name.find('.')])}"
        out.append(Violation("log-dump.kafka-check", Severity.HARD, where, f"kafka-dump-log: {n.text}",
                             {"kind": n.kind, "file": n.path}))
    return out


@dataclass
class VerifyLogResult:
    views: list[Any]
    reports: list[tuple[Any, Report, Report | None]]  # (view, log report, log-dirs report)
    notes: list[KafkaNote]
    kafka: Report  # what Kafka's tool itself reported (log-dump.kafka-check)

    @property
    def violations(self) -> list[tuple[Any, Violation]]:
        """(the partition's LogView, or None for what the tool reported), each violation."""
        own = [(v, x) for v, r, d in self.reports for x in (*r.violations, *(d.violations if d else ()))]
        return own + [(None, x) for x in self.kafka.violations]


# ---- numbers: Kafka's tools print Java longs in ASCII digits (issue 33; checked before either parser runs) ----------

# A number field of kafka-dump-log.sh (before the record's key and payload, which are the user's text) or a JSON
# number of kafka-log-dirs.sh: its digits, ASCII or not.
_DUMP_NUMBER = re.compile(r"(?:^|\s|\|)([A-Za-z]+(?: [a-z]+)*): (-?\w+)")
_JSON_NUMBER = re.compile(r"(?<![\w.\"])-?[0-9]{20,}")
_LONG = 2**63


def check_numbers(text: str, source: str) -> None:
    """Refuse, naming file and line, a number past Java's long range or written with non-ASCII digits (Python's
    int() takes '١' and thousands of digits; Kafka prints neither)."""
    json_like = looks_like_log_dirs(text)
    for n, line in enumerate(text.splitlines(), 1):
        if json_like:
            m = _JSON_NUMBER.search(line)
            if m is not None and not -_LONG <= int(m.group(0)[:25]) < _LONG:
                raise InputError(source, f"a number of {len(m.group(0).lstrip('-')):,} digits is outside Java's "
                                         "long range", n)
            continue
        if line.startswith("Dumping "):  # a segment's file name is its base offset
            base = os.path.basename(line.removeprefix("Dumping ").strip()).partition(".")[0]
            if base.isdigit() and (not base.isascii() or len(base) > 20):
                raise InputError(source, f"segment file name {shown(base, 30)}: not a base offset in Java's long "
                                         "range", n)
            continue
        head = re.split(r" (?:key|payload): ", line, maxsplit=1)[0]  # the key and payload are the user's data
        for label, token in _DUMP_NUMBER.findall(head):
            digits = token.lstrip("-")
            if not any(c.isdigit() for c in digits) or not digits.isdigit():
                continue
            if not digits.isascii():
                raise InputError(source, f"{label}: {shown(token, 30)!r} is not written in ASCII digits", n)
            if len(digits) > 19 or not -_LONG <= int(token) < _LONG:
                raise InputError(source, f"{label}: a number of {len(digits):,} digits is outside Java's long range",
                                 n)


def read_inputs(paths: Sequence[str]) -> tuple[list[Dump], list[LogDirs]]:
    dumps: list[Dump] = []
    dirs: list[LogDirs] = []
    for path in paths:
        source = "<stdin>" if path == "-" else path
        text = sys.stdin.read() if path == "-" else read_text(path)
        if not text.strip():
            raise InputError(source, "is empty")
        check_numbers(text, source)
        if looks_like_log_dirs(text):
            dirs.append(parse_log_dirs(text, source))
        else:
            dumps.append(parse_dump(text, source))
    if not dumps:
        raise InputError(paths[0] if paths else "DUMP", "no kafka-dump-log.sh output given (only kafka-log-dirs)")
    return dumps, dirs


def verify_log(dumps: Sequence[Dump], log_dirs: Sequence[LogDirs] = ()) -> VerifyLogResult:
    parts = partitions(dumps)
    notes = [n for d in dumps for n in d.notes]
    if not parts and not any(n.finding and n.kind != "non-consecutive" for n in notes):
        raise InputError(dumps[0].source, "no .log segment in the dump (only other files) and no finding of "
                                          "Kafka's: dump the .log files (--deep-iteration)")
    names = [p.name for p in parts]
    reports = []
    views = []
    for p in parts:
        view = log_view(p, p.name if names.count(p.name) == 1 else p.directory)
        views.append(view)
        rep = check_all(view, "log")
        dirs_rep = None
        if log_dirs:
            replica, why = match_replica(p, log_dirs)
            dirs_rep = check_all(LogDirsSubject(view, replica, why), "log-dirs")
        reports.append((view, rep, dirs_rep))
    kafka = check_all(tuple(notes), "log-dump")
    return VerifyLogResult(views, reports, [n for n in notes if n.kind != "non-consecutive"], kafka)


_WHERE_RE = re.compile(r"segment (?P<seg>-?[0-9]+)|offset (?P<off>-?[0-9]+)")


def partition_of(view: Any, v: Violation) -> str:
    if view is not None:
        return str(view.partition)
    m = re.match(r"partition (\S+)", v.where)
    return m[1] if m else "-"


def locate(view: Any, v: Violation) -> tuple[str, str, str]:
    """A violation's segment, offset and key (the record at that offset), as strings ('-' when none)."""
    seg = off = None
    for m in _WHERE_RE.finditer(v.where):
        if m["seg"] is not None:
            seg = int(m["seg"])
        elif m["off"] is not None:
            off = int(m["off"])
    key: str | None = None
    # the record at that offset (the later one of a repeated offset: the one found wrong)
    if off is not None and view is not None:
        for s in view.segments:
            if seg is not None and s.base_offset != seg:
                continue
            for r in s.records:
                if r.offset == off:
                    key, seg = r.key, s.base_offset
    return ("-" if seg is None else str(seg), "-" if off is None else str(off),
            "-" if key is None else shown(key, 80))


FilesArg = Annotated[list[str], typer.Argument(
    metavar="DUMP",
    help="kafka-dump-log.sh output (--deep-iteration or --print-data-log; .log, .index and .timeindex files of "
         "the partitions to check, several --files per dump allowed), and optionally kafka-log-dirs.sh --describe "
         "output ('-': stdin).")]


def verify_log_command(
    dumps: FilesArg,
    json_out: Annotated[bool, typer.Option("--json", help="Print the partitions and violations as JSON.")] = False,
    junit_xml: Annotated[str | None, typer.Option("--junit-xml", metavar="FILE",
                                                  help="Also write the results as a JUnit XML report to FILE.")]
    = None,
) -> int:
    """Check a real log directory's segments and indexes, from kafka-dump-log output, against every log invariant
    (and the sizes kafka-log-dirs reports): each violation with its segment, offset and key."""
    from rich.markup import escape
    from rich.table import Table

    from kcheck import junit, report
    from kcheck.invariants.registry import REGISTRY

    junit_path = junit.output_path(junit_xml, "--junit-xml", dumps) if junit_xml is not None else None
    if sum(d == "-" for d in dumps) > 1:
        raise InputError("DUMP", "'-' (stdin) given more than once")
    parsed, dirs = read_inputs(dumps)
    result = verify_log(parsed, dirs)
    found = result.violations
    hard = [x for _, x in found if x.severity is Severity.HARD]
    code = Exit.FAILED if hard else Exit.OK
    if junit_path:
        suites = []
        for view, rep, dirs_rep in result.reports:
            cases = junit.report_cases(rep, f"kcheck.verify_log.{view.partition}")
            if dirs_rep is not None:
                cases += junit.report_cases(dirs_rep, f"kcheck.verify_log.{view.partition}")
            suites.append(junit.TestSuite(f"kcheck verify-log {view.partition}", cases, properties={
                "partition": view.partition, "segments": str(len(view.segments)),
                "records": str(sum(len(s.records) for s in view.segments))}))
        suites.append(junit.TestSuite("kcheck verify-log kafka-dump-log", junit.report_cases(
            result.kafka, "kcheck.verify_log.kafka_dump_log")))
        junit.write(junit_path, "kcheck verify-log", suites)
    if json_out:
        doc = {
            "inputs": [d.source for d in parsed] + [d.source for d in dirs],
            "ok": not hard,
            "exit_status": int(code),
            "partitions": [{
                "partition": view.partition, "segments": [s.base_offset for s in view.segments],
                "records": sum(len(s.records) for s in view.segments), "compacted": view.compacted,
                "bytes": sum(s.size_bytes or 0 for s in view.segments),
                "checked": list(rep.checked) + (list(d.checked) if d else []),
                "not_applicable": {**rep.skipped, **(d.skipped if d else {})},
            } for view, rep, d in result.reports],
            "violations": [{**x.as_dict(), "partition": partition_of(view, x),
                            **dict(zip(("segment", "offset", "key"), locate(view, x), strict=True))}
                           for view, x in found],
            "kafka_notes": [{"kind": n.kind, "file": n.path, "text": n.text} for n in result.notes],
        }
        print(json.dumps(doc, indent=2))
        return int(code)
    out = report.console()
    table = Table(title="Partitions", title_justify="left")
    for col in ("partition", "segments", "records", "bytes", "compacted", "violations"):
        table.add_column(col, justify="left" if col == "partition" else "right")
    for view, rep, d in result.reports:
        table.add_row(escape(shown(view.partition)), str(len(view.segments)),
                      str(sum(len(s.records) for s in view.segments)),
                      str(sum(s.size_bytes or 0 for s in view.segments)), "yes" if view.compacted else "no",
                      str(len(rep.violations) + (len(d.violations) if d else 0)))
    out.print(table)
    if found:
        vt = Table(title="Violations", title_justify="left")
        for col in ("invariant", "partition", "segment", "offset", "key", "violation"):
            vt.add_column(col, overflow="fold")
        for view, x in found:
            seg, off, key = locate(view, x)
            vt.add_row(x.invariant, escape(shown(partition_of(view, x))), seg, off, escape(key),
                       escape(shown(x.message, 500)))
        out.print(vt)
    checked = sorted({i for _, r, d in result.reports for i in (*r.checked, *(d.checked if d else ()))}
                     | set(result.kafka.checked))
    skipped: dict[tuple[str, str], list[str]] = {}  # (invariant, why) -> the partitions it did not apply to
    for view, r, d in result.reports:
        for i, why in {**r.skipped, **(d.skipped if d else {})}.items():
            skipped.setdefault((i, why), []).append(view.partition)
    na = [f"{i}{'' if len(ps) == len(result.reports) else ' for ' + ', '.join(ps)} ({why})"
          for (i, why), ps in skipped.items()]
    verdict = "FAIL" if hard else "OK"
    out.print(f"{verdict}: {len(hard)} hard violation(s) over {len(checked)} invariant(s) in "
              f"{len(result.reports)} partition(s)" + (f"; not applicable: {'; '.join(na)}" if na else ""),
              markup=False, soft_wrap=True)
    assert all(i in REGISTRY for i in checked)
    return int(code)
