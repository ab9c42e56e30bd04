"""Kafka's own storage tools' output, read into `LogView`s, and `kcheck verify-log`.

* `kafka-dump-log.sh` of every release from 1.0 to 4.4 (`org.apache.kafka.tools.DumpLogSegments`,
  `tools/src/main/java/org/apache/kafka/tools/DumpLogSegments.java` from 4.3; `core/src/main/scala/kafka/tools/
  DumpLogSegments.scala` before; each release's layout below): `.log` segments shallow (batches only), with
  `--deep-iteration` (a line per record) and with `--print-data-log` (keys and payloads; from 1.1 it, and any decoder
  option, implies deep iteration), `--offsets-decoder`, `.index` and `.timeindex` files, `--index-sanity-check`,
  `--verify-index-only`, several `--files` at once, and what the tool writes on stderr (pasted with `2>&1`: index
  mismatches, non-consecutive offsets, a failed sanity check's exception).
* `kafka-log-dirs.sh --describe` (`org.apache.kafka.tools.LogDirsCommand`): the JSON of brokers, log dirs and
  each replica's size and offset lag, after the tool's two chatter lines.

How the dump shows what matters (read in Kafka's code, checked on each release's tool over a real cluster's data,
tests/data/dump/make.py and make_releases.py):
* A batch line (`baseOffset: ... position: P ... size: S ...`) gives the batch's file position and bytes; a
  record line (`| offset: N CreateTime: T keySize: K valueSize: V ...`) follows for each record with deep iteration
  (1.0 to 2.1: no batch line, a record line that names its batch's position).
* A null value (a tombstone) prints `valueSize: -1` and no `payload:` at all; an empty value prints
  `valueSize: 0` and `payload: ` with nothing after it. A null key prints `keySize: -1` and no `key:`. The offsets
  decoder prints a tombstone as `payload: <DELETE>` (with `valueSize: -1`). Payloads and keys are printed raw: a
  line break in a payload continues the record on the next line, and a key may hold ' payload: '; the sizes (in
  bytes, the UTF-8 of the printed text for the default StringDecoder) say where each ends.
* After cleaning, a batch keeps its base and last offsets while holding fewer records (`count` < the span).
* An offset-index entry is a batch's last offset and the batch's position; a time-index entry is a timestamp and
  an offset. `X.index is empty.` is an index with no entries (2.8+). An active segment's index files are
  preallocated: the slots past its entries are zeros, which the tool prints and checks as entries (judge_notes).
* Kafka 4.3+'s tool reports every segment not starting at offset 0 as 'Non-consecutive offsets ... -1 is
  followed by N' (its Java port compares the first record with -1; the Scala tool did not): kcheck ignores the
  tool's own non-consecutive report (a compacted log has gaps anyway) and checks offsets itself.

One `LogView` per partition directory (`kcheck.invariants.log_storage`): segments from the `.log` file names
(base offsets), records from the batches (offset, key, payload or tombstone, timestamp, the batch's bytes spread
over its records; a shallow dump: one per batch), each record's batch position, and the index entries of the
segment's `.index` and `.timeindex` dumps. What the dump cannot say: the log start offset (taken as the first
segment's base offset) and the high watermark (unknown). Every malformed line is an `InputError` naming the file
and line (exit 2).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kcheck.inputs.formats import InputError, is_shell_prompt, other_tool, read_text, shown
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
    count: int | None  # None: not printed (1.0 and 1.1)
    position: int
    size: int | None  # None: not printed (the one-line-per-record layout of 1.0 to 2.1 prints no batch line)
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
    base_offset: int  # from `Log starting offset:` / `Starting offset:` (the file name's number)
    batches: tuple[DumpBatch, ...]
    deep: bool  # record lines were printed (--deep-iteration, implied by --print-data-log)
    invalid_bytes: int  # `Found N invalid bytes at the end of FILE`
    line: int
    layout: str = ""  # the releases whose tool prints lines as this segment's were printed, e.g. '2.2–2.7'


@dataclass(frozen=True)
class IndexDump:
    path: str
    kind: str  # "offset" (.index) or "time" (.timeindex)
    entries: tuple[tuple[int, int], ...]  # (offset, position) or (timestamp, offset); zero slots left out
    sanity_checked: bool  # --index-sanity-check printed '... passed sanity check.' (no entries then)
    line: int
    # Slots of zeros the tool printed as entries: the preallocated, not yet written part of an active segment's index
    # (an offset entry (base offset, 0), a time entry (0, base offset): neither is one Kafka writes).
    zero_slots: int = 0


@dataclass(frozen=True)
class KafkaNote:
    """A line the tool wrote on stderr (pasted with 2>&1), kept as it said it."""

    kind: str  # index-mismatch, time-index-mismatch, time-index-order, offset-not-found, non-consecutive, exception
    path: str | None
    text: str
    line: int
    finding: bool = True  # one thing found (an exception, a detail line), not a block's heading
    repeat: int = 1  # the same line printed this many times in a row (the 1.x tools print one per zero slot)
    expected: str | None = None  # why this is what a healthy log shows (judge_notes), None: a finding


@dataclass
class Dump:
    source: str
    segments: list[SegmentDump] = field(default_factory=list)
    indexes: list[IndexDump] = field(default_factory=list)
    notes: list[KafkaNote] = field(default_factory=list)
    other_files: list[str] = field(default_factory=list)  # producer snapshots, transaction indexes, unknown files


# ---------------------------------------------------------------------------------------------------------------
# kafka-dump-log output, as every release from 1.0 to 4.4 prints it
#
# What changed, release by release (each read on that release's own tool, tests/data/dump/make_releases.py):
#   1.0-1.1  batch lines without `count:` and `isControl:`, `isvalid:` before `size:`; with --deep-iteration no batch
#            lines at all but one line per record: `offset: N position: P CreateTime: T isvalid: true keysize: K
#            valuesize: V magic: 2 compresscodec: NONE producerId: .. producerEpoch: .. sequence: S isTransactional:
#            B headerKeys: [..]` (position: its batch's); `Starting offset: N`
#   2.0-2.1  batch lines gain `count:` and `isControl:`
#   2.2      batch lines before their records (KAFKA-7687), `isvalid:` last; record lines `| offset: N CreateTime: T
#            keysize: K valuesize: V sequence: S headerKeys: [..]`
#   2.8      record lines repeat their batch's fields (`| offset: N isValid: .. crc: null keySize: K valueSize: V
#            CreateTime: T baseOffset: .. batchSize: .. position: P sequence: S headerKeys: [..]`), undone in 3.0
#   3.0      `| offset: N CreateTime: T keySize: K valueSize: V ...`; `compresscodec: none` in lower case
#   3.2      `deleteHorizonMs:` (KIP-534)
#   3.3      `Log starting offset: N`
#   4.3      the Java tool (KAFKA-14579)
# Up to 2.3 a tombstone's key is not printed (KAFKA-9293, 2.4); up to 2.2 every offset-index entry is reported as
# a mismatch with its batch's first offset (KAFKA-7487, 2.3); up to 2.7 an empty index prints nothing (later
# 'X.index is empty.').

_INT = r"-?[0-9]+"
_TIMESTAMP_TYPES = frozenset({"CreateTime", "LogAppendTime", "NoTimestampType"})
_FIELDS_RE = re.compile(r"\w+: \S+(?: \w+: \S+)*")
_BATCH_FIELDS = frozenset({
    "baseOffset", "lastOffset", "count", "baseSequence", "lastSequence", "producerId", "producerEpoch",
    "partitionLeaderEpoch", "isTransactional", "isControl", "deleteHorizonMs", "position", "size", "magic",
    "compresscodec", "crc", "isvalid"})
_BATCH_NEEDS = ("baseOffset", "lastOffset", "position", "size", "magic", "compresscodec", "isvalid", "producerId",
                "isTransactional")
_RECORD_FIELDS = frozenset({  # every layout's, keysize/valuesize read as keySize/valueSize
    "offset", "keySize", "valueSize", "sequence", "position", "isvalid", "isValid", "magic", "compresscodec",
    "producerId", "producerEpoch", "isTransactional", "crc", "baseOffset", "lastOffset", "baseSequence",
    "lastSequence", "partitionLeaderEpoch", "batchSize", "compressType"})
_RECORD_NEEDS = ("offset", "keySize", "valueSize", "sequence")
_PER_RECORD_NEEDS = ("position", "magic", "compresscodec", "producerId", "isTransactional", "isvalid")
_LAYOUTS = "the layouts of Kafka 1.0 to 4.4"
# What may follow a record's header keys: data, a control record's text, or nothing.
_AFTER_HEADERS = re.compile(r"\](?=$| key: | payload: | endTxnMarker: | controlType: | SnapshotHeader | "
                            r"SnapshotFooter | KRaftVersion | KRaftVoters )")
# A record's line cut by the tool's own death (its stack trace follows on the next lines), e.g. 1.1 to 3.3's
# --offsets-decoder on an offset commit of schema version 4 (written by 4.x): 'headerKeys: []Exception in thread ...'
_DIED_RE = re.compile(r"\](?P<exception>Exception in thread .*)")
_DECODER_VERSION = re.compile(r"Unknown (?:offset|group metadata|transaction) \w* ?(?:schema|message) version")
_DUMPING_RE = re.compile(r"Dumping (?P<path>.+)")
# The tool's first line glued to the end of the pasted command line (a paste that lost the line break).
_GLUED_DUMPING_RE = re.compile(r".*\SDumping (?P<path>\S+\.(?:log|index|timeindex|snapshot|txnindex|deleted|cleaned))")
_START_RE = re.compile(rf"(?P<header>Log starting offset|Starting offset): (?P<base>{_INT})")
_OFFSET_ENTRY_RE = re.compile(rf"offset: (?P<a>{_INT}) position: (?P<b>{_INT})")
_TIME_ENTRY_RE = re.compile(rf"timestamp: (?P<a>{_INT}) offset: (?P<b>{_INT})")
_INVALID_RE = re.compile(rf"Found (?P<n>{_INT}) invalid bytes at the end of (?P<name>.+)")
_LEGACY_RE = re.compile(rf"(?:\| )?offset: {_INT} .*\bmagic: [01] ")
_STDERR = (  # DumpLogSegments' stderr: (kind, pattern with the file, when it names one)
    ("non-consecutive", re.compile(r"Non-consecutive offsets in :?(?P<path>.+)")),  # ' :' in 1.1 to 2.2
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
# The tool's other stderr: unknown files, and the logging a release's jars print (log4j 1 warnings in 1.0 and 3.5 to
# 3.9, SLF4J's in 1.1 to 3.4 and 3.9, slf4j-simple's '[main] INFO ...' lines in 4.0)
_CHATTER = re.compile(r"Ignoring unknown file |SLF4J: |log4j:(?:WARN|ERROR) |\[[\w .$-]+\] (?:TRACE|DEBUG|INFO|WARN) ")
_KNOWN_START = re.compile(rf"Dumping |(?:Log s|S)tarting offset: |baseOffset: |\| offset: |offset: {_INT} position: "
                          rf"{_INT} \w+: |Found -?[0-9]+ invalid bytes|Non-consecutive offsets in |Mismatches in :")


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


def _fields(text: str) -> tuple[list[str], dict[str, str]] | None:
    """The `name: value` pairs of a metadata line, in order (None: not such a line)."""
    if not _FIELDS_RE.fullmatch(text):
        return None
    pairs = [p.split(": ", 1) for p in re.findall(r"\w+: \S+", text)]
    return [k for k, _ in pairs], dict(pairs)


def _timestamp(names: Sequence[str], fields: dict[str, str]) -> tuple[str, str] | None:
    """The (timestamp type, timestamp) a line prints as `CreateTime: T` (or LogAppendTime, NoTimestampType)."""
    found = [n for n in names if n in _TIMESTAMP_TYPES]
    return (found[0], fields[found[0]]) if len(found) == 1 else None


def _batch_layout(names: Sequence[str], fields: dict[str, str]) -> str:
    if "deleteHorizonMs" in fields:
        return "3.2–4.4"
    if "count" not in fields:
        return "1.0–1.1"
    if names.index("isvalid") < names.index("size"):
        return "2.0–2.1"
    return "2.2–2.8" if fields["compresscodec"].isupper() else "3.0–3.1"


def _record_layout(piped: bool, names: Sequence[str]) -> str:
    if not piped:
        return "1.0–2.1 (one line per record)"
    if "batchSize" in names:
        return "2.8"
    return "2.2–2.7" if "keysize" in names else "3.0–4.4"


def _int_field(fields: dict[str, str], name: str) -> int:
    value = fields[name]
    if not re.fullmatch(_INT, value):
        raise ValueError(f"'{name}: {value}' is not a number")
    return int(value)


def _bool_field(fields: dict[str, str], name: str, default: bool = False) -> bool:
    value = fields.get(name)
    if value is None:
        return default
    if value not in ("true", "false"):
        raise ValueError(f"'{name}: {value}' is not true or false")
    return value == "true"


def _batch_line(line: str) -> tuple[dict[str, Any], str]:
    """A batch line's fields for DumpBatch (records and line aside), and the layout it was printed in; ValueError
    when it is not one."""
    parsed = _fields(line)
    if parsed is None:
        raise ValueError("a batch line is `name: value` pairs")
    names, fields = parsed
    stamp = _timestamp(names, fields)
    unknown = [x for x in names if x not in _BATCH_FIELDS and x not in _TIMESTAMP_TYPES]
    missing = [x for x in _BATCH_NEEDS if x not in fields]
    if unknown or missing or stamp is None:
        what = f"'{unknown[0]}:'" if unknown else f"no '{missing[0]}:'" if missing else "no one timestamp"
        raise ValueError(f"a batch line with {what}: kcheck reads the batch lines of {_LAYOUTS}")
    horizon = fields.get("deleteHorizonMs")
    return dict(
        base_offset=_int_field(fields, "baseOffset"), last_offset=_int_field(fields, "lastOffset"),
        count=_int_field(fields, "count") if "count" in fields and fields["count"] != "null" else None,
        position=_int_field(fields, "position"), size=_int_field(fields, "size"), timestamp_type=stamp[0],
        max_timestamp=_int_field({"t": stamp[1]}, "t"), magic=_int_field(fields, "magic"),
        compression=fields["compresscodec"].lower(), is_transactional=_bool_field(fields, "isTransactional"),
        is_control=_bool_field(fields, "isControl"), is_valid=_bool_field(fields, "isvalid", True),
        producer_id=_int_field(fields, "producerId"),
        delete_horizon_ms=int(re.sub(r"[^0-9-]", "", horizon) or -1)
        if horizon and horizon != "OptionalLong.empty" else None), _batch_layout(names, fields)


@dataclass
class _RecordLine:
    fields: dict[str, str]
    headers: tuple[str, ...]
    rest: str  # after the header keys: data, a control record's text, or nothing
    layout: str


def _record_line(line: str, piped: bool) -> _RecordLine:
    """A record line's metadata, header keys and the text after them; ValueError when it is not one."""
    at = line.find(" headerKeys: [")
    if at < 0:
        raise ValueError("a record line without 'sequence: N headerKeys: [...]' (a v2 record)")
    parsed = _fields(line[2 if piped else 0:at])
    if parsed is None:
        raise ValueError("a record line's metadata is `name: value` pairs")
    names, fields = parsed
    layout = _record_layout(piped, names)
    for old, new in (("keysize", "keySize"), ("valuesize", "valueSize")):  # 2.7 and before
        if old in fields:
            fields[new] = fields.pop(old)
    stamp = _timestamp(names, fields)
    unknown = [x for x in fields if x not in _RECORD_FIELDS and x not in _TIMESTAMP_TYPES]
    missing = [x for x in (*_RECORD_NEEDS, *(() if piped else _PER_RECORD_NEEDS)) if x not in fields]
    if unknown or missing or stamp is None:
        spelt = {"keySize": "keysize", "valueSize": "valuesize"} if not piped or "keysize" in names else {}
        what = (f"'{unknown[0]}:'" if unknown else f"no '{spelt.get(missing[0], missing[0])}:'" if missing
                else "no one timestamp")
        raise ValueError(f"a record line of the {layout} layout with {what}: kcheck reads the record lines of "
                         f"{_LAYOUTS}")
    fields["timestamp"], fields["timestampType"] = stamp[1], stamp[0]
    tail = line[at + len(" headerKeys: ["):]
    if (died := _DIED_RE.search(tail)) is not None:  # the tool died printing this record's key or payload
        exception = died["exception"]
        hint = ("this release's --offsets-decoder cannot read the offset commits a newer broker wrote: dump with "
                "the broker's own release, or without the decoder" if _DECODER_VERSION.search(exception) else
                "the rest of the file was not dumped")
        raise ValueError(f"kafka-dump-log stopped at offset {fields['offset']} ({shown(exception, 120)}): {hint}")
    close = _AFTER_HEADERS.search(tail)
    if close is None:
        raise ValueError("the record's headerKeys list does not end")
    headers = tuple(h for h in tail[: close.start()].split(",") if h) if close.start() else ()
    return _RecordLine(fields, headers, tail[close.end():], layout)


def _needs_more(rest: str, key_size: int, value_size: int) -> bool:
    """A printed payload shorter than its valueSize (or a key shorter than its keySize) goes on over the next line."""
    if not rest.startswith(" key: ") and not rest.startswith(" payload: "):
        return False
    at = rest.find(" payload: ")
    if at < 0:  # only a key (the value is null)
        return rest.startswith(" key: ") and key_size >= 0 and _utf8_len(rest[len(" key: "):]) < key_size
    return value_size >= 0 and _utf8_len(rest[at + len(" payload: "):]) < value_size


def _base_of(path: str) -> int:
    name = os.path.basename(path)
    return int(name[: name.find(".")])


class _DumpParser:
    """Reads one dump line by line; `dump` holds what was read."""

    def __init__(self, text: str, source: str) -> None:
        self.dump = Dump(source)
        self.lines = text.removeprefix("\ufeff").splitlines()
        self.n = 0  # the number of the line read last
        self.current: str | None = None  # the file being dumped
        self.kind: str | None = None  # log, index, timeindex, other
        self.in_stderr: str | None = None  # the kind of the stderr block being read
        self.in_trace = False
        self._reset(0)

    def _reset(self, line: int) -> None:
        self.seg_line = line
        self.base: int | None = None
        self.batches: list[DumpBatch] = []
        self.batch: dict[str, Any] | None = None
        self.records: list[DumpRecord] = []
        self.entries: list[tuple[int, int]] = []
        self.zero_slots = 0
        self.sanity = False
        self.invalid = 0
        self.deep = False
        self.layouts: list[str] = []

    def err(self, message: str, line: int | None = None) -> InputError:
        return InputError(self.dump.source, message, self.n if line is None else line)

    # -- files -----------------------------------------------------------------------------------------------

    def close_batch(self) -> None:
        if self.batch is not None:
            if self.batch.pop("per_record", False):  # 1.0-2.1 deep: the batch is what its records print
                self.batch.update(last_offset=self.records[-1].offset, count=len(self.records),
                                  max_timestamp=max(r.timestamp for r in self.records))
            self.batches.append(DumpBatch(records=tuple(self.records), **self.batch))
        self.batch, self.records = None, []

    def close_file(self) -> None:
        self.close_batch()
        current, kind = self.current, self.kind
        if current is not None and kind == "log":
            if self.base is None:
                raise self.err(f"{shown(current)}: no 'Log starting offset' (or 1.x-3.2 'Starting offset') line",
                               self.seg_line)
            self.dump.segments.append(SegmentDump(current, self.base, tuple(self.batches), self.deep, self.invalid,
                                                  self.seg_line, " and ".join(dict.fromkeys(self.layouts))))
        elif current is not None and kind in ("index", "timeindex"):
            self.dump.indexes.append(IndexDump(current, "offset" if kind == "index" else "time", tuple(self.entries),
                                               self.sanity, self.seg_line, self.zero_slots))

    def open_file(self, path: str) -> None:
        self.close_file()
        self.in_stderr, self.in_trace = None, False
        self.current = path
        self._reset(self.n)
        name = os.path.basename(path)
        suffix = name[name.rfind("."):] if "." in name else ""
        self.kind = {".log": "log", ".index": "index", ".timeindex": "timeindex"}.get(suffix, "other")
        if self.kind == "other":
            self.dump.other_files.append(path)
        elif not re.fullmatch(r"[0-9]+", name[: name.find(".")]):
            raise self.err(f"{shown(path)}: a segment file's name is its base offset (digits), as Kafka names it")

    # -- what the tool wrote on stderr -----------------------------------------------------------------------

    def note(self, note: KafkaNote) -> None:
        last = self.dump.notes[-1] if self.dump.notes else None
        if last is not None and (last.kind, last.path, last.text, last.finding) == (
                note.kind, note.path, note.text, note.finding):
            self.dump.notes[-1] = replace(last, repeat=last.repeat + 1)  # a 1.x tool's line per zero slot
        else:
            self.dump.notes.append(note)

    def stderr_line(self, line: str) -> bool:
        """The tool's stderr (and its logging chatter): read as notes. False: not such a line."""
        if self.in_trace and _TRACE_RE.fullmatch(line):
            return True
        self.in_trace = False
        if _EXCEPTION_RE.fullmatch(line.strip()):  # an uncaught exception (a failed --index-sanity-check)
            self.note(KafkaNote("exception", self.current, line.strip(), self.n))
            self.in_trace = True
            return True
        for kind, pattern in _STDERR:
            if (m := pattern.fullmatch(line)) is not None:
                self.in_stderr = kind
                self.note(KafkaNote(kind, m.groupdict().get("path"), line, self.n, finding=False))
                return True
        if self.in_stderr is not None and _STDERR_DETAIL.fullmatch(line):
            self.note(KafkaNote(self.in_stderr, self.dump.notes[-1].path, line.strip(), self.n))
            return True
        return _CHATTER.match(line) is not None

    # -- index files -----------------------------------------------------------------------------------------

    def index_line(self, line: str) -> None:
        assert self.current is not None
        if line in (f"{self.current} is empty.", f"{self.current} passed sanity check."):
            self.sanity = self.sanity or line.endswith("passed sanity check.")
            return
        m = (_OFFSET_ENTRY_RE if self.kind == "index" else _TIME_ENTRY_RE).fullmatch(line)
        if m is None:
            want = "offset: N position: P" if self.kind == "index" else "timestamp: T offset: N"
            raise self.err(f"{shown(self.current)}: expected an index entry '{want}' but read "
                           f"{shown(line.strip(), 80)!r}")
        entry = (int(m["a"]), int(m["b"]))
        base = _base_of(self.current)
        if entry == ((base, 0) if self.kind == "index" else (0, base)):
            self.zero_slots += 1  # a preallocated slot: Kafka never writes this entry (LogSegment.append)
        else:
            self.entries.append(entry)

    # -- .log files ------------------------------------------------------------------------------------------

    def log_line(self, line: str) -> None:
        assert self.current is not None
        if (m := _START_RE.fullmatch(line)) is not None:
            if self.base is not None or self.batches or self.batch is not None:
                raise self.err(f"{shown(self.current)}: a second '{m['header']}' line")
            self.base = int(m["base"])
            self.layouts.append(f"{m['header']}: " + ("1.0–3.2" if m["header"] == "Starting offset" else "3.3–4.4"))
            return
        if _LEGACY_RE.match(line) and " headerKeys: [" not in line:
            raise self.err(f"{shown(self.current)}: a message-format v0/v1 batch: kcheck reads the v2 format (Kafka "
                           "0.11 and later; the only one Kafka 4 writes)")
        if line.startswith("baseOffset: "):
            return self.batch_line(line)
        if line.startswith("| offset: ") or re.match(rf"offset: {_INT} position: {_INT} \w+: ", line):
            return self.record_line(line)
        if line.startswith(("| key: ", "| payload: ")) or line in ("|", "| "):
            raise self.err(f"{shown(self.current)}: a record without its metadata (--skip-record-metadata): dump "
                           "without that option, the offsets are needed")
        if (m := _INVALID_RE.fullmatch(line)) is not None:
            self.close_batch()
            self.invalid = int(m["n"])
            return
        if _OTHER_FILE_LINE.match(line):
            return
        raise self.err(f"{shown(self.current)}: not a line of kafka-dump-log.sh output ({_LAYOUTS}): "
                       f"{shown(line.strip(), 80)!r}")

    def batch_line(self, line: str) -> None:
        assert self.current is not None
        if self.base is None:
            raise self.err(f"{shown(self.current)}: a batch before the 'Log starting offset' line")
        self.close_batch()
        try:
            self.batch, layout = _batch_line(line)
        except ValueError as e:
            raise self.err(f"{shown(self.current)}: {e}") from None
        self.batch["line"] = self.n
        self.layouts.append(f"batch lines {layout}")

    def record_line(self, line: str) -> None:
        assert self.current is not None
        piped = line.startswith("| ")
        try:
            rec = _record_line(line, piped)
        except ValueError as e:
            raise self.err(f"{shown(self.current)}: {e}") from None
        f = rec.fields
        self.layouts.append(f"record lines {rec.layout}")
        if piped and self.batch is None:
            raise self.err(f"{shown(self.current)}: a record line of the {rec.layout} layout before any batch line")
        if not piped:
            self.per_record_batch(rec)
        assert self.batch is not None
        self.deep = True
        key_size, value_size = int(f["keySize"]), int(f["valueSize"])
        rest, control = rec.rest, None
        if self.batch["is_control"] or rest.startswith((" endTxnMarker: ", " controlType: ")):
            self.batch["is_control"] = True
            control, rest = rest.strip() or None, ""
        # A payload (or key) with line breaks goes on over the next lines: its size says how far.
        while self.n < len(self.lines) and _needs_more(rest, key_size, value_size) and not _KNOWN_START.match(
                self.lines[self.n]):
            rest += "\n" + self.lines[self.n].rstrip("\r")
            self.n += 1
        try:
            key, payload, printed = _split_data(rest, key_size, value_size)
            record = DumpRecord(_int_field(f, "offset"), _int_field(f, "timestamp"), f["timestampType"], key_size,
                                value_size, _int_field(f, "sequence"), rec.headers, key, payload, printed, control,
                                self.n)
        except ValueError as e:
            raise self.err(f"{shown(self.current)}: offset {f['offset']}: {e}") from None
        self.records.append(record)

    def per_record_batch(self, rec: _RecordLine) -> None:
        """1.0 to 2.1 with --deep-iteration print no batch lines: a record's batch is the run of records at its
        position (the batch's file position), with the batch fields each record line repeats."""
        assert self.current is not None
        f = rec.fields
        if self.base is None:
            raise self.err(f"{shown(self.current)}: a record before the 'Starting offset' line")
        try:
            position = _int_field(f, "position")
            if self.batch is not None and self.batch.get("per_record") and self.batch["position"] == position:
                return
            self.close_batch()
            self.batch = dict(
                per_record=True, base_offset=_int_field(f, "offset"), last_offset=_int_field(f, "offset"), count=None,
                position=position, size=None, timestamp_type=f["timestampType"],
                max_timestamp=_int_field(f, "timestamp"), magic=_int_field(f, "magic"),
                compression=f["compresscodec"].lower(), is_transactional=_bool_field(f, "isTransactional"),
                is_control=False, is_valid=_bool_field(f, "isvalid", True), producer_id=_int_field(f, "producerId"),
                delete_horizon_ms=None, line=self.n)
        except ValueError as e:
            raise self.err(f"{shown(self.current)}: offset {f['offset']}: {e}") from None

    # -- the whole dump --------------------------------------------------------------------------------------

    def run(self) -> Dump:
        while self.n < len(self.lines):
            line = self.lines[self.n].rstrip("\r")
            self.n += 1
            if not line.strip():
                continue
            if (m := _DUMPING_RE.fullmatch(line)) is not None:
                self.open_file(m["path"])
            elif is_shell_prompt(line):  # the command of a paste, not the tool's output
                if (m := _GLUED_DUMPING_RE.fullmatch(line)) is not None:
                    self.open_file(m["path"])
            elif self.stderr_line(line):
                continue
            elif self.current is None:
                other_tool("\n".join(self.lines), self.dump.source, "kafka-dump-log output")
                raise self.err(f"expected 'Dumping FILE' (kafka-dump-log.sh output) but read "
                               f"{shown(line.strip(), 80)!r}")
            elif self.kind in ("index", "timeindex"):
                self.index_line(line)
            elif self.kind == "log":
                self.log_line(line)
            # other files (producer snapshots, transaction indexes, KRaft snapshots): not part of a partition's view
        self.close_file()
        d = self.dump
        if not d.segments and not d.indexes and not d.other_files:
            raise InputError(d.source, "no 'Dumping FILE' line: not kafka-dump-log.sh output")
        return d


def parse_dump(text: str, source: str) -> Dump:
    """The output of one or more kafka-dump-log.sh runs (stdout, and stderr if pasted with it), of any release from
    1.0 to 4.4."""
    return _DumpParser(text, source).run()


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

    directory: str  # the directory as the dump printed it (for bare file names: the name it was given)
    name: str  # its last component: topic-partition
    segments: tuple[SegmentDump, ...]  # by base offset
    offset_indexes: dict[int, IndexDump]
    time_indexes: dict[int, IndexDump]


UNNAMED = "(unnamed)"  # the partition of bare file names when nothing names their folder
_PARTITION_DIR = re.compile(r"[A-Za-z0-9._-]+-[0-9]+")  # a partition's folder: topic-N (Kafka's topic characters)


def _bare(path: str) -> bool:
    return not os.path.dirname(path)


def bare_folder(dumps: Sequence[Dump], given: str | None = None, cwd: str | None = None) -> tuple[str | None, str]:
    """The partition folder of the files a dump names without a folder (kafka-dump-log run inside it), and where
    that name comes from: `given` (--partition), else the folder the tool itself printed for one of those files on
    stderr (some lines name files by their absolute path), else the current directory when its name is a
    partition's (topic-N). (None, '') when no dump names a bare file."""
    files = {os.path.basename(f) for d in dumps for f in [*(s.path for s in d.segments), *(i.path for i in d.indexes)]
             if _bare(f)}
    if not files:
        return None, ""
    if given is not None:
        return given, "--partition"
    for d in dumps:
        for n in d.notes:
            for path in re.findall(r"(/\S+?\.(?:log|index|timeindex))\b", n.text) + ([n.path] if n.path else []):
                if os.path.basename(path) in files and os.path.dirname(path):
                    return os.path.basename(os.path.dirname(path)), f"the path kafka-dump-log printed ({shown(path)})"
    here = os.path.basename(os.path.normpath(cwd or os.getcwd()))
    if _PARTITION_DIR.fullmatch(here):
        return here, "the current directory"
    return None, "nothing: give --partition TOPIC-N"


def _folder(path: str, bare: str | None) -> str:
    return os.path.dirname(path) or (bare or UNNAMED)


def partitions(dumps: Sequence[Dump], bare: str | None = None) -> list[PartitionDump]:
    """Group the dumps' files by partition directory (`bare`: the folder of files named without one). A segment
    dumped more than once is taken from the dump that says most (data printed, then records, then batches only);
    an index without its segment is refused."""
    segs: dict[str, dict[int, SegmentDump]] = {}
    idx: dict[str, dict[str, dict[int, IndexDump]]] = {}
    for d in dumps:
        for s in d.segments:
            directory, base = _folder(s.path, bare), _base_of(s.path)
            if base != s.base_offset:
                raise InputError(d.source, f"{shown(s.path)}: 'Log starting offset: {s.base_offset}' is not the file "
                                           f"name's {base}", s.line)
            have = segs.setdefault(directory, {}).get(base)
            if have is None or _detail(s) >= _detail(have):
                segs[directory][base] = s
        for i in d.indexes:
            by_kind = idx.setdefault(_folder(i.path, bare), {"offset": {}, "time": {}})[i.kind]
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
        if not found:
            continue  # only sanity-checked or empty indexes: nothing to build a view from
        ordered = tuple(found[b] for b in sorted(found))
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


def _segment_records(s: SegmentDump) -> tuple[list[Any], list[int]]:
    """A segment's records and each one's batch position. A shallow dump (batch lines only) gives one entry per
    batch: its last offset, largest timestamp and bytes, which is what Kafka's indexes point at (an offset entry
    is a batch's last offset and position, a time entry a batch's largest timestamp and last offset)."""
    from kcheck.model.log_view import LogRecord

    recs: list[Any] = []
    positions: list[int] = []
    # sizes only where every byte of the segment is some record's (no batch size unknown, no empty batch kept)
    sized = all(b.size is not None and (b.records or (not s.deep and b.count != 0)) for b in s.batches)
    for b in s.batches:
        if not s.deep:
            if b.count != 0:
                what = f"{b.count} record(s)" if b.count is not None else "records"
                recs.append(LogRecord(b.last_offset, None, f"<a batch of {what}, not printed>", b.max_timestamp,
                                      b.size if sized and b.size else 0))
                positions.append(b.position)
            continue
        n = len(b.records)
        for i, r in enumerate(b.records):
            # the batch's bytes spread over its records, the remainder on the first: they add up to the batch
            size = b.size // n + (b.size % n if i == 0 else 0) if sized and b.size is not None else 0
            recs.append(LogRecord(r.offset, r.key, _value(r), r.timestamp, size))
            positions.append(b.position)
    return recs, positions


def log_view(p: PartitionDump, name: str | None = None) -> Any:
    """The LogView of one partition directory (kcheck.invariants.log_storage). The active segment's index slots
    that are still zeros are not entries (IndexDump.zero_slots)."""
    from kcheck.model.log_view import LogSegmentView, LogView

    segments = []
    spans: list[tuple[int, int]] = []  # each record's offset, or (shallow) each batch's first and last offsets
    cleaned = False
    for s in p.segments:
        recs, positions = _segment_records(s)
        spans += [(r.offset, r.offset) for r in recs] if s.deep else [
            (b.base_offset, b.last_offset) for b in s.batches if b.count != 0]
        cleaned = cleaned or any(b.count is not None and b.count < b.last_offset - b.base_offset + 1
                                 for b in s.batches)
        sizes = [b.size for b in s.batches]
        size_bytes = None if None in sizes else sum(x or 0 for x in sizes) + s.invalid_bytes
        oi, ti = p.offset_indexes.get(s.base_offset), p.time_indexes.get(s.base_offset)
        segments.append(LogSegmentView(s.base_offset, tuple(recs), size_bytes, oi.entries if oi else (),
                                       tuple(ti.entries) if ti else (), tuple(positions)))
    compacted = cleaned or any(b[0] - a[1] > 1 for a, b in zip(spans, spans[1:], strict=False))
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
          lambda s: s.why_unmatched or (None if _bytes(s.view) is not None else
                                        "the dump prints no batch sizes (--deep-iteration of Kafka 1.0 to 2.1)"))
def _log_dirs_size(s: LogDirsSubject) -> list[Violation]:
    assert s.replica is not None
    total = _bytes(s.view)
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
# What Kafka's tool reported, judged as a Kafka engineer would


def _note_place(path: str | None, bare: str | None) -> tuple[str | None, int | None]:
    """The partition (folder name) and segment base offset a note's file belongs to."""
    if path is None:
        return None, None
    name = os.path.basename(path)
    base = int(name[: name.find(".")]) if name[: max(name.find("."), 0)].isdigit() else None
    return os.path.basename(_folder(path, bare)), base


# The tool's lines that come from an index slot still zero (the preallocated part of the active segment's index)
_ZERO_TIMESTAMP = re.compile(r"Index timestamp: 0, (?:log timestamp|Previously indexed timestamp): -?[0-9]+")
_MISMATCH = re.compile(r"Index offset: (?P<index>-?[0-9]+), log offset: (?P<log>-?[0-9]+)")
_NOT_FOUND = re.compile(r"Indexed offset: (?P<index>-?[0-9]+), found log offset: -?[0-9]+")
_SANITY_ZERO = re.compile(r".*Corrupt time index found, .* the last timestamp is 0 which is less than the first "
                          r"timestamp -?[0-9]+|.*Corrupt index found, .* the last offset is (?P<last>[0-9]+) which is "
                          r"no (?:larger|greater) than the base offset (?P<base>[0-9]+)\.?")
ZERO_SLOT = ("the active segment's index file (its partition's last segment in the dump) is preallocated to "
             "segment.index.bytes and holds slots of zeros past its entries (trimmed only when the segment rolls or "
             "the log closes); kafka-dump-log reads such a slot as an entry: expected on a live log or a copy of one")
SANITY_STOP = (" --index-sanity-check reads the last slot as the last entry and fails, so the tool stops here: the "
               "files listed after this one were not checked")
EARLY_MISMATCH = ("Kafka up to 2.2 compares an offset-index entry with the first offset of the batch at its position "
                  "(KAFKA-7487); the entry names the batch's last offset, as Kafka writes it")


@dataclass(frozen=True)
class _Files:
    """What the dumps show of each partition: its segment base offsets (any file dumped) and batches' offsets."""

    bases: dict[str, set[int]]
    batches: dict[tuple[str, int], set[tuple[int, int]]]  # (partition, segment) -> (first, last offsets) per batch

    def active(self, partition: str | None, base: int | None) -> bool:
        """The segment is its partition's last one in the dumps (the active segment, as far as they show)."""
        return partition is not None and base is not None and base == max(self.bases.get(partition, {base}))

    def active_base(self, offset: int) -> bool:
        return any(offset == max(b) for b in self.bases.values() if b)


def _files(dumps: Sequence[Dump], bare: str | None) -> _Files:
    bases: dict[str, set[int]] = {}
    batches: dict[tuple[str, int], set[tuple[int, int]]] = {}
    for d in dumps:
        for path in [*(s.path for s in d.segments), *(i.path for i in d.indexes)]:
            partition, base = _note_place(path, bare)
            if partition is not None and base is not None:
                bases.setdefault(partition, set()).add(base)
        for s in d.segments:
            partition, base = _note_place(s.path, bare)
            spans = batches.setdefault((partition or "", base or 0), set())
            for b in s.batches:
                spans.add((b.base_offset, b.last_offset))
                if b.records:
                    spans.add((b.records[0].offset, b.last_offset))
    return _Files(bases, batches)


def _expected(n: KafkaNote, files: _Files, bare: str | None) -> str | None:
    """Why a line of Kafka's tool is what a healthy log shows, or None (a finding)."""
    partition, base = _note_place(n.path, bare)
    if n.kind in ("time-index-mismatch", "time-index-order") and _ZERO_TIMESTAMP.fullmatch(n.text):
        return ZERO_SLOT if files.active(partition, base) else None
    if n.kind == "offset-not-found" and (m := _NOT_FOUND.fullmatch(n.text)) and files.active_base(int(m["index"])):
        return ZERO_SLOT  # the 1.0 to 2.2 tools look up every slot of a time index: (0, base offset) here
    if n.kind == "index-mismatch" and (m := _MISMATCH.fullmatch(n.text)):
        index, log = int(m["index"]), int(m["log"])
        if (log, index) in files.batches.get((partition or "", base or 0), set()):
            return EARLY_MISMATCH
        return ZERO_SLOT if index == base and files.active(partition, base) else None
    if n.kind == "exception" and (m := _SANITY_ZERO.fullmatch(n.text)) and files.active(partition, base):
        # the time index's message names no offsets (both None); the offset index's names the zero slot's
        return ZERO_SLOT + "." + SANITY_STOP if m["last"] == m["base"] else None
    return None


def judge_notes(dumps: Sequence[Dump], bare: str | None = None) -> list[KafkaNote]:
    """The dumps' notes, each marked `expected` (with why) where a healthy log shows it."""
    files = _files(dumps, bare)
    return [replace(n, expected=_expected(n, files, bare)) if n.finding else n for d in dumps for n in d.notes]


# ---------------------------------------------------------------------------------------------------------------
# kcheck verify-log


@register("log-dump.kafka-check",
          "Kafka's own dump tool reports nothing wrong: no failed index sanity check, no index entry that does not "
          "match its batch, no time-index timestamp out of order or unlike its batch's, no indexed offset missing "
          "(what a healthy log shows too is not counted: the active segment's preallocated index slots, the "
          "index mismatches Kafka up to 2.2 misreports, the non-consecutive offsets 4.3+ reports)",
          Severity.HARD, "DumpLogSegments (--index-sanity-check, --verify-index-only); OffsetIndex/TimeIndex."
          "sanityCheck", "log-dump")
def _kafka_check(notes: Sequence[KafkaNote]) -> list[Violation]:
    out = []
    for n in notes:
        # gaps are normal in a compacted log (and 4.3+'s '-1 is followed by'); `expected` lines are a healthy log's
        if not n.finding or n.kind == "non-consecutive" or n.expected is not None:
            continue
        where = "the dump"
        if n.path is not None:
            directory, name = os.path.split(n.path)
            where = f"partition {os.path.basename(directory) or directory}"
            if name[: name.find(".")].isdigit():
                where += f" segment {int(name[: name.find('.')])}"
        out.append(Violation("log-dump.kafka-check", Severity.HARD, where, f"kafka-dump-log: {n.text}"
                             + (f" (printed {n.repeat} times)" if n.repeat > 1 else ""),
                             {"kind": n.kind, "file": n.path, "repeat": n.repeat}))
    return out


@dataclass
class VerifyLogResult:
    views: list[Any]
    reports: list[tuple[Any, Report, Report | None]]  # (view, log report, log-dirs report)
    notes: list[KafkaNote]  # what Kafka's tool wrote on stderr (its non-consecutive reports aside), judged
    kafka: Report  # what Kafka's tool itself reported (log-dump.kafka-check)
    parts: list[PartitionDump] = field(default_factory=list)  # each view's partition, as dumped
    bare: tuple[str | None, str] = (None, "")  # bare_folder(): the folder of files named without one, and whence
    sanity_passed: int = 0  # indexes Kafka's --index-sanity-check passed

    @property
    def violations(self) -> list[tuple[Any, Violation]]:
        """(the partition's LogView, or None for what the tool reported), each violation."""
        own = [(v, x) for v, r, d in self.reports for x in (*r.violations, *(d.violations if d else ()))]
        return own + [(None, x) for x in self.kafka.violations]


# ---- numbers: Kafka's tools print Java longs in ASCII digits (checked before either parser runs) ----------

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


def verify_log(dumps: Sequence[Dump], log_dirs: Sequence[LogDirs] = (), partition: str | None = None,
               cwd: str | None = None) -> VerifyLogResult:
    """Every log invariant on each partition the dumps show, and what Kafka's tool reported, judged. `partition`
    names the folder of files a dump names without one (else bare_folder() finds it)."""
    bare = bare_folder(dumps, partition, cwd)
    if partition is not None and bare[0] is None:
        raise InputError("--partition", "names the folder of files a dump names without one, and these dumps name "
                                        "every file with its folder")
    parts = partitions(dumps, bare[0])
    notes = judge_notes(dumps, bare[0])
    sanity = sum(i.sanity_checked for d in dumps for i in d.indexes)
    if not parts and not sanity and not any(n.finding and n.kind != "non-consecutive" for n in notes):
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
    return VerifyLogResult(views, reports, [n for n in notes if n.kind != "non-consecutive"], kafka, parts, bare,
                           sanity)


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




def _counts(p: PartitionDump) -> tuple[int | None, list[int]]:
    """A partition's records (None: a shallow dump of 1.0/1.1, which prints no batch counts) and its segments dumped
    shallow (batch lines only)."""
    n: int | None = 0
    for s in p.segments:
        got = sum(len(b.records) for b in s.batches) if s.deep else (
            None if any(b.count is None for b in s.batches) else sum(b.count or 0 for b in s.batches))
        n = None if n is None or got is None else n + got
    return n, [s.base_offset for s in p.segments if not s.deep]


def _bytes(view: Any) -> int | None:
    """A partition's bytes (None: unknown, the one-line-per-record dumps of 1.0 to 2.1 print no batch sizes)."""
    sizes = [s.size_bytes for s in view.segments]
    return None if None in sizes else sum(sizes)










