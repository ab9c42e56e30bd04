"""Kafka's own formats, read into `model` values, and the reassignment JSON written back.

* Reassignment JSON, the input and output of `kafka-reassign-partitions.sh`
  (`tools/src/main/java/org/apache/kafka/tools/reassign/ReassignPartitionsCommand.java`:
  `parsePartitionReassignmentData`, `formatAsReassignmentJson`).
* `kafka-topics.sh --describe` text in every release's layout from 0.10.2 to 4.4 and Confluent Server's
  (`core/src/main/scala/kafka/admin/TopicCommand.scala` up to 3.6, `tools/src/main/java/org/apache/kafka/tools/
  TopicCommand.java` from 3.7: `printDescription`), with what the text tells about itself (`read_describe`).
* Broker rack files for `--brokers-file`: JSON or `id:rack` lines (kcheck's own; Kafka has none).

Every problem with the input is an `InputError` whose text is one line naming the file and
the place in it, so the CLI can print it as is.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from kcheck.model import (
    INT32_MAX,
    NO_LEADER,
    Broker,
    Cluster,
    PartitionReplicas,
    ReplicaAssignment,
    TopicPartition,
)

NAME_LIMIT = 200  # characters of a user's name shown to people; JSON output keeps names whole
LINE_LIMIT = 2_000  # characters of an error line, names already shortened

# C0/C1 controls, DEL, and the Unicode line separators and bidi overrides that can rewrite what a terminal shows.
_CONTROL_RE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_LONG_WORD_RE = re.compile(rf"\S{{{NAME_LIMIT + 1},}}")


def _escape_control(m: re.Match[str]) -> str:
    c = ord(m.group())
    return {10: "\\n", 13: "\\r"}.get(c) or (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…({len(text):,} chars)"


def shown(name: str, limit: int = NAME_LIMIT) -> str:
    """A user's name (topic, rack, member, path) as printed for people: controls escaped (ESC as \\x1b, so the
    terminal is not driven by the input), and cut to `limit` characters with the full length noted."""
    return _cut(_CONTROL_RE.sub(_escape_control, name), limit)


def printable(text: str) -> str:
    """A message that may quote users' names: controls escaped, and every word longer than NAME_LIMIT cut."""
    escaped = _CONTROL_RE.sub(_escape_control, text)
    return _LONG_WORD_RE.sub(lambda m: _cut(m.group(), NAME_LIMIT), escaped)


# org.apache.kafka.common.internals.Topic.validate: what Kafka accepts as a topic name
_LEGAL_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def topic_problem(name: str) -> str | None:
    """Why Kafka would refuse `name` as a topic name, or None."""
    if _LEGAL_TOPIC_RE.fullmatch(name) and name not in (".", ".."):
        return None
    if len(name) > 249:
        return f"topic name {shown(name)} is longer than 249 characters"
    return f"{shown(name, 60)} is not a legal Kafka topic name (ASCII letters, digits, '.', '_' and '-' only)"


def control_problem(name: str) -> str | None:
    """A name with a control character is a corrupted file or paste, never a real Kafka name."""
    m = _CONTROL_RE.search(name)
    return None if m is None else f"contains the control character {_escape_control(m)}"


def terminal_safe(text: str) -> str:
    """Text for a terminal, line breaks and tabs kept: the last guard of every table and line kcheck prints."""
    return _CONTROL_RE.sub(lambda m: m.group() if m.group() == "\n" else _escape_control(m), text)


class InputError(Exception):
    """Bad user input. str(e) is one line: '<source>: <message>', '<source>:<line>: <message>' or, for a position
    in a line (a JSON error in a 100,000-character line of Kafka's JSON), '<source>:<line>:<column>: <message>',
    as compilers and linters name places. The place comes first, so it stays whole however much of the message is
    cut."""

    def __init__(self, source: str, message: str, line: int | None = None, column: int | None = None) -> None:
        self.source = source
        self.message = message
        self.line = line
        self.column = column
        # User text (names, quoted lines, paths) must not break the one-line promise nor drive the terminal; a long
        # path is cut before its :line:column is added, so the position stays whole.
        where = printable(source) + ("" if line is None else f":{line}" + ("" if column is None else f":{column}"))
        super().__init__(_cut(f"{where}: {printable(message)}", LINE_LIMIT))


def one_line(text: str) -> str:
    """An error message as one printable line of at most LINE_LIMIT characters."""
    return _cut(printable(text), LINE_LIMIT)


MAX_INPUT_BYTES = 4 << 30  # the most kcheck reads of one input file (a pipe that never ends stops here)


def _read_bytes(path: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """Open without blocking (a FIFO with no writer would wait forever), then refuse what is not a file or a pipe
    (a directory, a device such as /dev/zero that never ends, a socket), and read at most `limit` bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb", closefd=True) as f:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(path)
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise OSError(0, "not a regular file")
        os.set_blocking(fd, True)  # a pipe with a writer is read to its end; one without reads as empty
        data = f.read(limit + 1)
        if len(data) > limit:
            raise OSError(0, f"larger than kcheck's limit of {limit:,} bytes for this input")
        return data


def read_text(path: str, limit: int = MAX_INPUT_BYTES) -> str:
    """The text of a UTF-8 file (a BOM is dropped); an unreadable, blank or too large file is an InputError."""
    try:
        data = _read_bytes(path, limit)
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory, not a file") from None
    except PermissionError:
        raise InputError(path, "permission denied") from None
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # what PowerShell's `>` writes
        raise InputError(path, "is UTF-16 text; convert it to UTF-8")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        bad = f"byte 0x{data[e.start]:02x} at offset {e.start}"
        raise InputError(path, f"is not UTF-8 text ({bad})") from None
    if not text.strip():
        try:
            fifo = stat.S_ISFIFO(os.stat(path).st_mode)
        except OSError:
            fifo = False
        raise InputError(path, "is a named pipe that nothing wrote to" if fifo else "file is empty")
    return text


def parse_plan(text: str, source: str) -> ReplicaAssignment:
    """A reassignment JSON (first non-blank character '{' or '[') or else `kafka-topics --describe` text."""
    if is_json(text):
        return parse_reassignment_json(text, source)
    return parse_describe(text, source)


def is_json(text: str) -> bool:
    """A reassignment JSON ('[' too: a clearer error than a describe one), not a paste that starts with a shell
    prompt such as '[user@host ~]$ kafka-topics ...'."""
    body = text.removeprefix("\ufeff").lstrip()
    return body[:1] in ("{", "[") and not _PROMPT_RE.match(body.split("\n", 1)[0])


# ---------------------------------------------------------------------------------------------
# Reassignment JSON


def parse_reassignment_json(text: str, source: str) -> ReplicaAssignment:
    """Parse `{"version":1,"partitions":[{"topic","partition","replicas"[,"log_dirs"]}, ...]}`.

    Checks at least what kafka-reassign-partitions checks; unknown keys are ignored as Kafka does.
    """
    doc = _load_json(text, source)
    if not isinstance(doc, dict):
        raise InputError(source, f'expected an object with "version" and "partitions", got {_show(doc)}')
    if "version" not in doc:
        raise InputError(source, 'missing "version" (must be 1)')
    version = doc["version"]
    if type(version) is not int:
        raise InputError(source, f'"version" must be the integer 1, got {_show(version)}')
    if version != 1:
        raise InputError(source, f"not supported version field value {version} (only 1 is supported)")
    if "partitions" not in doc:
        raise InputError(source, 'missing "partitions"')
    entries = doc["partitions"]
    if not isinstance(entries, list):
        raise InputError(source, f'"partitions" must be a list, got {_show(entries)}')
    if not entries:
        raise InputError(source, "partition reassignment list cannot be empty")
    first_index: dict[TopicPartition, int] = {}
    parts: list[PartitionReplicas] = []
    for i, entry in enumerate(entries):
        p = _json_partition(entry, i, source)
        if p.tp in first_index:
            raise InputError(source, f"partition {p.tp} is listed twice "
                                     f"(partitions[{first_index[p.tp]}] and partitions[{i}])")
        first_index[p.tp] = i
        parts.append(p)
    return ReplicaAssignment(tuple(parts))


def _json_partition(entry: object, i: int, source: str) -> PartitionReplicas:
    where = f"partitions[{i}]"
    if not isinstance(entry, dict):
        raise InputError(source, f"{where}: expected an object, got {_show(entry)}")
    for key in ("topic", "partition", "replicas"):
        if key not in entry:
            raise InputError(source, f'{where}: missing "{key}"')
    topic, partition = entry["topic"], entry["partition"]
    if not isinstance(topic, str) or not topic:
        raise InputError(source, f'{where}: "topic" must be a non-empty string, got {_show(topic)}')
    if (problem := topic_problem(topic)) is not None:
        raise InputError(source, f"{where}: {problem}")
    if not _is_id(partition):
        raise InputError(source, f'{where} (topic {topic}): "partition" must be an integer >= 0, '
                                 f"got {_show(partition)}")
    where = f"partition {TopicPartition(topic, partition)}"  # from here on, name the partition
    replicas = entry["replicas"]
    if not isinstance(replicas, list) or not all(_is_id(b) for b in replicas):
        raise InputError(source, f'{where}: "replicas" must be a list of broker ids (integers >= 0), '
                                 f"got {_show(replicas)}")
    if not replicas:
        raise InputError(source, f"{where}: partition replica list cannot be empty")
    _no_duplicate_broker(replicas, lambda b: InputError(
        source, f"{where}: replica list contains broker {b} twice"))
    log_dirs = None
    if "log_dirs" in entry:
        log_dirs = entry["log_dirs"]
        if not isinstance(log_dirs, list) or not all(isinstance(d, str) for d in log_dirs):
            raise InputError(source, f'{where}: "log_dirs" must be a list of strings, got {_show(log_dirs)}')
        if len(log_dirs) != len(replicas):
            raise InputError(source, f'{where}: "log_dirs" has {len(log_dirs)} entries '
                                     f'but "replicas" has {len(replicas)}')
        log_dirs = tuple(log_dirs)
    return PartitionReplicas(topic, partition, tuple(replicas), log_dirs=log_dirs)


def format_reassignment_json(assignment: ReplicaAssignment) -> str:
    """Kafka's `formatAsReassignmentJson`: compact, sorted by (topic, partition), log_dirs always present."""
    partitions = [
        {
            "topic": p.topic,
            "partition": p.partition,
            "replicas": list(p.replicas),
            "log_dirs": list(p.log_dirs) if p.log_dirs is not None else ["any"] * len(p.replicas),
        }
        for p in sorted(assignment.partitions, key=lambda p: (p.topic, p.partition))
    ]
    # ensure_ascii=False: Jackson writes non-ASCII characters as they are.
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"), ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# kafka-topics --describe

# Every key any Kafka version prints. A field is 'Key:' at the start of the line or after
# whitespace; its value runs to the next key. That survives tabs turned into spaces, the
# pre-2.4 'Key:value' style, and Configs values full of ',' and '='.
_DESCRIBE_KEYS = ("Adding Replicas", "Removing Replicas", "TopicId", "Topic", "PartitionCount", "Partition",
                  "ReplicationFactor", "Configs", "Leader", "Replicas", "Isr", "LastKnownElr", "Elr",
                  "MarkedForDeletion", "Offline", "LiveObservers", "Observers")
_KEY_RE = re.compile(r"(?:^|(?<=\s))(" + "|".join(re.escape(k).replace(r"\ ", r"\s+") for k in _DESCRIBE_KEYS)
                     + r"):")
# A line with any of these describes a partition; otherwise it is a topic header.
_PARTITION_KEYS = frozenset({"Partition", "Leader", "Replicas", "Isr", "Adding Replicas", "Removing Replicas",
                             "Elr", "LastKnownElr", "Offline", "LiveObservers", "Observers"})
_UINT_RE = re.compile(r"[0-9]+")  # not int(): it also takes '+1', '1_0' and non-ASCII digits
_MIN_ISR_RE = re.compile(r"(?:^|,)\s*min\.insync\.replicas=([0-9]+)\s*(?=,|$)")
# Lines around a paste that are not the tool's: a shell prompt with its command ('$ kafka-topics ...',
# '[user@host ~]$ ...', 'user@host:~$ ...'), the '==> Describe topic t' banners of Confluent's example
# scripts, and '...' where a document left lines out.
_PROMPT_RE = re.compile(r"\s*(?:\$|\[[^\]]*\]\s*[$#]|[\w.-]+@[\w.-]+(?::\S*)?\s*[$#])(?:\s|$)")


def is_shell_prompt(line: str) -> bool:
    """A shell prompt line of a paste ('$ cmd', '[user@host dir]# cmd', 'user@host:~$ cmd'): not a tool's output."""
    return _PROMPT_RE.match(line) is not None
_BANNER_RE = re.compile(r"\s*==> ")
_ELISION_RE = re.compile(r"\s*(?:\.\.\.|…)\s*")

# The kafka-topics releases whose layout prints each feature (TopicCommand's printDescription per release):
# the header's 'Topic:t' without spaces up to 2.3 and 'Topic: t' from 2.4 (KAFKA-8669); TopicId from 2.8
# (KIP-516); Adding/Removing Replicas from 2.6 (KIP-455); Elr/LastKnownElr from 3.8 (KIP-966); 'Leader: -1' only
# from --zookeeper before 2.4 (a ZooKeeper partition state without a leader; later releases print 'none').
OLDEST, NEWEST = "0.10.2", "4.4"
_RELEASES_OF = {
    "compact-header": (OLDEST, "2.3"),
    "spaced-header": ("2.4", NEWEST),
    "topic-id": ("2.8", NEWEST),
    "adding-removing": ("2.6", NEWEST),
    "elr": ("3.8", NEWEST),
    "leader-minus-one": (OLDEST, "2.3"),
}
_CONFLUENT = ("Offline", "LiveObservers", "Observers")  # Confluent Server's kafka-topics (Apache Kafka's never)


def _release_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


@dataclass(frozen=True)
class Describe:
    """`kafka-topics --describe` text as read: the partitions, and what the text tells about itself."""

    assignment: ReplicaAssignment
    partition_counts: Mapping[str, int]  # topic -> its header's PartitionCount
    min_isr: Mapping[str, int]  # topic -> min.insync.replicas in its header's Configs
    headers: int  # topic header lines read (0: the output of a filter option)
    leader_text: Mapping[TopicPartition, str]  # a partition without a leader -> 'none' or '-1', as written
    observers: Mapping[TopicPartition, tuple[int, ...]]  # Confluent observers outside the ISR, left out
    features: frozenset[str]  # layout features seen (keys of _RELEASES_OF, 'confluent', 'elr-values')
    skipped: tuple[tuple[int, str], ...] = ()  # (line, what) not the tool's output: prompts, banners, '...'
    topic_from_header: tuple[int, ...] = ()  # partition lines without Topic:, read as the header's topic

    @property
    def releases(self) -> tuple[str, str] | None:
        """The oldest and newest kafka-topics whose layout has every feature seen; None when none has."""
        lo, hi = OLDEST, NEWEST
        for f in self.features & _RELEASES_OF.keys():
            a, b = _RELEASES_OF[f]
            lo, hi = max(lo, a, key=_release_key), min(hi, b, key=_release_key)
        return (lo, hi) if _release_key(lo) <= _release_key(hi) else None

    @property
    def layout(self) -> str:
        """The layout in words: which kafka-topics releases print it."""
        span = self.releases
        if span is None:
            text = "kafka-topics, lines of several releases' layouts (a mix of pastes?)"
        else:
            text = f"kafka-topics {span[0]}–{span[1]}" if span != (OLDEST, NEWEST) else "kafka-topics, any release"
        return (f"Confluent Server's kafka-topics (Offline/Observers columns) on the layout of Apache {text}"
                if "confluent" in self.features else text)

    @property
    def era(self) -> tuple[str | None, str]:
        """('zk' | 'kraft' | None, why): the controller the layout shows, where it shows one."""
        kraft = "elr-values" in self.features
        zk = "leader-minus-one" in self.features or (self.headers > 0 and "topic-id" not in self.features)
        if kraft and not zk:
            return "kraft", "Elr/LastKnownElr values: only KRaft brokers report them (KIP-966)"
        if zk and not kraft:
            if "leader-minus-one" in self.features:
                return "zk", "'Leader: -1': kafka-topics --zookeeper before 2.4 prints a ZooKeeper state that way"
            return "zk", "no TopicId: the layout of kafka-topics before 2.8 or a cluster before 2.8, the ZooKeeper era"
        if kraft and zk:
            return None, "the lines mix ZooKeeper-era and KRaft-only layouts"
        return None, "the layout does not tell (TopicId is printed for ZooKeeper clusters from 2.8 too)"

    @property
    def partial(self) -> dict[str, tuple[int, int | None]]:
        """Topics with fewer partitions listed than their header's PartitionCount, or listed without a header
        while other topics have one: topic -> (listed, PartitionCount or None)."""
        if not self.headers:
            return {}
        listed = Counter(p.topic for p in self.assignment)
        out: dict[str, tuple[int, int | None]] = {}
        for topic, n in listed.items():
            count = self.partition_counts.get(topic)
            if count is None or n < count:
                out[topic] = (n, count)
        return out

    @property
    def filter_output(self) -> bool:
        """No topic line at all: what kafka-topics prints with a health filter option."""
        return self.headers == 0


def parse_describe(text: str, source: str) -> ReplicaAssignment:
    """Parse `kafka-topics.sh --describe` output of any Kafka version, with or without topic headers."""
    return read_describe(text, source).assignment


class _DescribeReader:
    """One pass over the lines; what it has seen so far also names the layout an unreadable line breaks."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.parts: list[PartitionReplicas] = []
        self.part_line: dict[TopicPartition, int] = {}
        self.rf: dict[str, int] = {}
        self.rf_line: dict[str, int] = {}
        self.counts: dict[str, int] = {}
        self.min_isr: dict[str, int] = {}
        self.headers = 0
        self.leader_text: dict[TopicPartition, str] = {}
        self.observers: dict[TopicPartition, tuple[int, ...]] = {}
        self.features: set[str] = set()
        self.skipped: list[tuple[int, str]] = []
        self.header_topic: str | None = None  # the topic of the last header line
        self.topic_from_header: list[int] = []

    def expected(self) -> str:
        """The layout a line was expected in, from the lines read so far."""
        d = self.result(check=False)
        return (f"expected a topic line 'Topic: NAME  PartitionCount: N ...' or a partition line 'Topic: NAME  "
                f"Partition: N  Leader: ID  Replicas: IDS  Isr: IDS' ({d.layout})")

    def line(self, n: int, line: str) -> None:
        if not line.strip():
            return
        for kind, pattern in (("shell prompt", _PROMPT_RE), ("banner", _BANNER_RE)):
            if pattern.match(line):
                self.skipped.append((n, kind))
                return
        if _ELISION_RE.fullmatch(line):
            self.skipped.append((n, "'...' (lines left out)"))
            return
        fields = _describe_fields(line, self.source, n, self.expected)
        if fields.keys() & _PARTITION_KEYS:
            self.partition(fields, n)
        else:
            self.header(fields, line, n)

    def partition(self, fields: dict[str, str], n: int) -> None:
        if "Topic" not in fields and self.header_topic is not None:
            # Kafka prints Topic: on every partition line; a paste (or an edited blog post) may have dropped it.
            fields = {"Topic": self.header_topic, **fields}
            self.topic_from_header.append(n)
        p, observers = _describe_partition(fields, self.source, n, self.expected)
        if p.tp in self.part_line:
            raise InputError(self.source, f"partition {p.tp} is listed twice (lines {self.part_line[p.tp]} and {n})",
                             n)
        self.part_line[p.tp] = n
        self.parts.append(p)
        if p.leader == NO_LEADER:
            self.leader_text[p.tp] = fields["Leader"]
            if fields["Leader"] == "-1":
                self.features.add("leader-minus-one")
        if observers:
            self.observers[p.tp] = observers
        keys = fields.keys()
        if "Adding Replicas" in keys or "Removing Replicas" in keys:
            self.features.add("adding-removing")
        if "Elr" in keys or "LastKnownElr" in keys:
            self.features.add("elr")
            if fields.get("Elr", "N/A") != "N/A" or fields.get("LastKnownElr", "N/A") != "N/A":
                self.features.add("elr-values")
        if not keys.isdisjoint(_CONFLUENT):
            self.features.add("confluent")

    def header(self, fields: dict[str, str], line: str, n: int) -> None:
        source = self.source
        if "Topic" not in fields:
            raise InputError(source, "topic line has no Topic: field", n)
        topic = _topic_name(fields["Topic"], source, n)
        self.header_topic = topic
        self.headers += 1
        self.features.add("compact-header" if re.match(r"\s*Topic:\S", line) else "spaced-header")
        if "TopicId" in fields:
            self.features.add("topic-id")
        if "PartitionCount" in fields:
            self.counts[topic] = _uint(fields["PartitionCount"], "PartitionCount", "a partition count", source, n)
        if (m := _MIN_ISR_RE.search(fields.get("Configs", ""))) and int(m.group(1)) <= INT32_MAX:
            self.min_isr[topic] = int(m.group(1))
        if "ReplicationFactor" in fields:
            factor = _uint(fields["ReplicationFactor"], "ReplicationFactor", "a replication factor", source, n)
            if self.rf.get(topic, factor) != factor:
                raise InputError(source, f"topic {topic}: ReplicationFactor {factor} contradicts "
                                         f"ReplicationFactor {self.rf[topic]} on line {self.rf_line[topic]}", n)
            self.rf[topic] = factor
            self.rf_line.setdefault(topic, n)

    def result(self, check: bool = True) -> Describe:
        if check and not self.parts:
            why = (" (topic lines only, as --topics-with-overrides prints them: nothing to check)" if self.headers
                   else "")
            raise InputError(self.source, "no partitions found" + why)
        # A header's ReplicationFactor counts observers, which are left out: those topics' factor is not known.
        rf = {t: n for t, n in self.rf.items() if not any(tp.topic == t for tp in self.observers)}
        return Describe(ReplicaAssignment(tuple(self.parts), rf) if check else ReplicaAssignment(()),
                        dict(self.counts), dict(self.min_isr), self.headers, dict(self.leader_text),
                        dict(self.observers), frozenset(self.features), tuple(self.skipped),
                        tuple(self.topic_from_header))


def read_describe(text: str, source: str) -> Describe:
    """`kafka-topics.sh --describe` output of any release (Apache Kafka's or Confluent Server's), with or without
    topic headers, with the shell prompts, banners and '...' of a paste skipped. The last text read is kept:
    `verify` reads it as a plan (`parse_plan`), then for what it tells about itself."""
    return _read_describe(text, source)


@lru_cache(maxsize=1)
def _read_describe(text: str, source: str) -> Describe:
    reader = _DescribeReader(source)
    for n, line in enumerate(_lines(text), 1):
        try:
            reader.line(n, line)
        except InputError:
            if not reader.parts and not reader.headers:  # nothing of kafka-topics read yet: another tool's output?
                other_tool(text, source, "kafka-topics --describe output")
            raise
    return reader.result()


def other_tool(text: str, source: str, expected: str) -> None:
    """Raise, for a text that is not `expected`, which Kafka tool printed it and which command reads it (nothing
    when it is no tool's output that kcheck knows, or `expected` itself)."""
    from kcheck.inputs.tool_outputs import identify

    what = identify(text)
    if what is not None and not what.what.startswith(expected.removesuffix(" output")):
        raise InputError(source, what.hint(expected))


def _describe_fields(line: str, source: str, n: int, expected: Callable[[], str]) -> dict[str, str]:
    matches = list(_KEY_RE.finditer(line))
    if not matches or line[: matches[0].start()].strip():
        raise InputError(source, f"not a kafka-topics --describe line: {_quote(line.strip())}; {expected()}", n)
    fields: dict[str, str] = {}
    following: list[re.Match[str] | None] = [*matches[1:], None]
    for m, nxt in zip(matches, following, strict=True):
        key = " ".join(m.group(1).split())  # 'Adding   Replicas' after a mangled paste
        if key in fields:
            raise InputError(source, f"{key}: appears twice in one line", n)
        fields[key] = line[m.end(): nxt.start() if nxt else len(line)].strip()
    return fields


def _describe_partition(fields: dict[str, str], source: str, n: int,
                        expected: Callable[[], str]) -> tuple[PartitionReplicas, tuple[int, ...]]:
    """The partition, and the Confluent observers left out of its replicas (those outside the ISR)."""
    for key in ("Topic", "Partition", "Leader", "Replicas"):
        if key not in fields:
            raise InputError(source, f"partition line has no {key}: field; {expected()}", n)
    topic = _topic_name(fields["Topic"], source, n)
    partition = _uint(fields["Partition"], "Partition", "a partition id", source, n)
    leader_text = fields["Leader"]
    # 'none' when there is no leader; kafka-topics --zookeeper before 2.4 prints ZooKeeper's stored -1 instead.
    leader = (NO_LEADER if leader_text in ("none", "-1")
              else _uint(leader_text, "Leader", "a broker id ('none' without a leader)", source, n))
    replicas = _id_list(fields["Replicas"], "Replicas", source, n)
    if not replicas:
        raise InputError(source, f"partition {topic}-{partition}: Replicas: is empty", n)
    _no_duplicate_broker(replicas, lambda b: InputError(
        source, f"partition {topic}-{partition}: Replicas: contains broker {b} twice", n))
    isr = _id_list(fields["Isr"], "Isr", source, n) if "Isr" in fields else None
    adding = _id_list(fields.get("Adding Replicas", ""), "Adding Replicas", source, n)
    removing = _id_list(fields.get("Removing Replicas", ""), "Removing Replicas", source, n)
    # Elr/LastKnownElr (3.8+, KIP-966): 'N/A' when the broker does not report them, empty when ELR is empty.
    # Offline, Observers (LiveObservers in Confluent Platform 5.4): Confluent Server's kafka-topics prints them.
    extra = {key: None if key not in fields or fields[key] == "N/A" else _id_list(fields[key], key, source, n)
             for key in ("Elr", "LastKnownElr", "Offline", "Observers", "LiveObservers")}
    # kcheck has no model of observers (asynchronous replicas kept out of the ISR): one outside the ISR is left
    # out of every check; one in the ISR (promoted) is a replica like the others.
    left_out = tuple(b for b in (*(extra["Observers"] or ()), *(extra["LiveObservers"] or ()))
                     if b in replicas and b not in (isr or ()))
    if left_out and len(left_out) < len(replicas):
        replicas = tuple(r for r in replicas if r not in left_out)
    else:
        left_out = ()
    return PartitionReplicas(topic, partition, replicas, leader, isr, adding, removing, elr=extra["Elr"],
                             last_known_elr=extra["LastKnownElr"], offline=extra["Offline"]), left_out


def _topic_name(value: str, source: str, n: int) -> str:
    # Kafka topic names never contain whitespace, so any is stray text between two fields.
    if not value or any(c.isspace() for c in value):
        raise InputError(source, f"Topic: {_quote(value)} is not a topic name", n)
    if (problem := topic_problem(value)) is not None:
        raise InputError(source, f"Topic: {problem}", n)
    return value


def _uint(value: str, key: str, what: str, source: str, n: int) -> int:
    if not _UINT_RE.fullmatch(value) or int(value) > INT32_MAX:
        raise InputError(source, f"{key}: {_quote(value)} is not {what}", n)
    return int(value)


def _id_list(value: str, key: str, source: str, n: int) -> tuple[int, ...]:
    if not value:
        return ()
    items = [s.strip() for s in value.split(",")]
    if not all(_UINT_RE.fullmatch(s) and int(s) <= INT32_MAX for s in items):
        raise InputError(source, f"{key}: {_quote(value)} is not a list of broker ids", n)
    return tuple(int(s) for s in items)


# ---------------------------------------------------------------------------------------------
# Pasted tool output: kafka-reassign-partitions --generate / --execute / --verify / --list, or any of the above
#
# What each release prints (`kafka.admin.ReassignPartitionsCommand` up to 3.6, then
# `org.apache.kafka.tools.reassign.ReassignPartitionsCommand`), all read here:
#   --generate  "Current partition replica assignment", its JSON, a blank line, "Proposed partition reassignment
#               configuration", its JSON (log_dirs from 1.0; partitions in ZooKeeper's order up to 2.5).
#   --execute   "Current partition replica assignment", a blank line, the JSON (the rollback plan: the replicas the
#               plan's partitions have now, up to 2.5 every partition of the plan's topics; their real log
#               directories from 4.2, "any" before), "Save this to use as the --reassignment-json-file option during
#               rollback", throttle lines, "Successfully started ...".
#   --verify    "Status of partition reassignment:" then per partition: up to 2.5 "Reassignment of partition
#               [t,0] (to 0.11) / t-0 completed successfully | is still in progress | failed" (up to 2.0 with
#               "ERROR: Assigned replicas (..) don't match the list of replicas for reassignment (..) for partition
#               .." before a failure); from 2.6 "... is complete." (3.3+: "is completed."), "... is still in
#               progress.", "There is no active reassignment of partition t-0, but replica set is a rather than b.",
#               and throttle lines.
#   --list      (2.6+) "Current partition reassignments:" then "t-0: replicas: 4,2,3,1. adding: 4. removing: 1."
#   --cancel    (2.6+) names the partitions it cancelled, no replicas: refused; so is --execute's "There is an
#               existing assignment running." (up to 2.5, a second run while one is in flight).

PASTED_WANTS = ("current", "proposed")
_CURRENT_HEADER = "Current partition replica assignment"
_PROPOSED_HEADER = "Proposed partition reassignment configuration"
_STATUS_HEADER = "Status of partition reassignment:"
_ROLLBACK_LINE = "Save this to use as the --reassignment-json-file option during rollback"
_LIST_HEADER = "Current partition reassignments:"
# --verify's partition lines, every release: 'foo-0' (TopicPartition) or '[foo,0]' (0.10's TopicAndPartition).
_TP = r"(?:\[(?P<t1>[^,\]\s]+),(?P<p1>[0-9]+)\]|(?P<t2>\S+)-(?P<p2>[0-9]+))"
_STATUS_RE = re.compile(rf"Reassignment of partition {_TP} (?P<state>is complete|is completed|completed successfully"
                        rf"|is still in progress|failed)\.?\s*$")
_ELSEWHERE_RE = re.compile(rf"There is no active reassignment of partition {_TP}, but replica set is "
                           r"(?P<now>[0-9,]*) rather than (?P<target>[0-9,]*)\.\s*$")
_MISMATCH_RE = re.compile(r"ERROR: Assigned replicas \((?P<now>[0-9,]*)\) don't match the list of replicas for "
                          rf"reassignment \((?P<target>[0-9,]*)\) for partition {_TP}\s*$")
_LIST_RE = re.compile(r"(?P<t>\S+)-(?P<p>[0-9]+): replicas: (?P<replicas>[0-9,]*)\.(?: adding: (?P<adding>[0-9,]+)\.)?"
                      r"(?: removing: (?P<removing>[0-9,]+)\.)?\s*$")
_CANCEL_RE = re.compile(r"(Successfully cancelled partition reassignments? for: |None of the specified partition "
                        r"(reassignments|moves) are active\.)")
# Lines the tool prints around its blocks, and a shell prompt line of the paste: not data, skipped.
_TOOL_NOISE_RE = re.compile(r"(Successfully started (partition )?reassignments? |Warning: |There is an existing "
                            r"assignment running|The (inter-broker |replica-alter-dir )?throttle |Throttle was removed"
                            r"|Reassignment of replica |Partition \S+ (on broker|is not found|cannot be found)"
                            r"|There are no ongoing|Clearing broker-level throttles|Clearing topic-level throttles"
                            r"|No partition reassignments found|\$ |> )")
# The block each kind of output gives when the command does not ask (verify's --block unset): the plan of
# --generate, the state of the others.
DEFAULT_BLOCK = {"--generate": "proposed", "--execute": "current", "--verify": "current", "--list": "current"}


class BlockRefused(InputError):
    """The block asked for is not in the paste, or cannot be read from it, but `other` can be: each command says
    how to ask for it (verify: --block; verify-reassignment: the other argument)."""

    def __init__(self, source: str, message: str, other: str, what: str, line: int | None = None) -> None:
        super().__init__(source, message, line)
        self.other = other  # "current" or "proposed"
        self.what = what  # what that block is, for people


def parse_pasted(text: str, source: str, want: str | None = None) -> tuple[ReplicaAssignment, str]:
    """Kafka's own tool output as pasted, auto-detected; returns the assignment and the name of the block used.

    * `kafka-reassign-partitions --generate` (its "Current partition replica assignment" and "Proposed partition
      reassignment configuration" blocks, each a reassignment JSON): `want` picks the block.
    * `--execute` output: its only block, the replicas before the plan (the rollback JSON), is the current state.
    * `--verify` output ("Status of partition reassignment:" lines) with the reassignment JSON it verified in the
      same paste: "proposed" is that JSON; "current" is each partition as --verify states it (completed: on its
      target; "no active reassignment ... rather than" or a ZooKeeper-era "Assigned replicas (..) don't match": on
      the replicas it names). A partition still in progress has no replica list in that output, so "current"
      refuses it (kafka-topics --describe shows its Adding and Removing Replicas). --verify output alone names no
      replicas and is refused.
    * `--list` output: the partitions being reassigned with their replicas, adding and removing ones ("current").
    * Otherwise a reassignment JSON or `kafka-topics --describe` text of any release (`parse_plan`).

    `want` None: the block `DEFAULT_BLOCK` names for what was pasted. A block that is not there, or cannot be read,
    while the other can is a `BlockRefused`."""
    if want is not None and want not in PASTED_WANTS:
        raise ValueError(f"want must be one of {PASTED_WANTS} or None, not {want!r}")
    lines = _lines(text)
    kind = _pasted_kind(lines, source)
    if kind is None:
        return parse_plan(text, source), "reassignment JSON" if is_json(text) else "kafka-topics --describe"
    pasted = _pasted_blocks(lines, source, kind)
    assignment, name = _pick_block(kind, want or DEFAULT_BLOCK[kind], pasted, source)
    if pasted.wrapped:
        name += f" (its JSON wrapped at {pasted.wrapped} columns by a terminal: read with those line breaks removed)"
    return assignment, name


def _pick_block(kind: str, want: str, pasted: _Pasted, source: str) -> tuple[ReplicaAssignment, str]:
    """The block `want` names in `kind` output, with the name the report gives it."""
    if kind == "--generate":
        name, other = (_PROPOSED_HEADER, _CURRENT_HEADER) if want == "proposed" else (_CURRENT_HEADER, _PROPOSED_HEADER)
        if name not in pasted.blocks:
            message = f'kafka-reassign-partitions --generate output without its "{name}" block'
            if other in pasted.blocks:
                raise BlockRefused(source, message, _other(want), f'its "{other}" block')
            raise InputError(source, message)
        return pasted.blocks[name], f"--generate output: {name}"
    if kind == "--execute":
        if want == "proposed":
            raise BlockRefused(source, "kafka-reassign-partitions --execute output holds only the replicas before the "
                                       'plan ("Current partition replica assignment", the rollback JSON), not a plan',
                               "current", "that block, the state before the plan")
        return pasted.blocks[_CURRENT_HEADER], f"--execute output: {_CURRENT_HEADER} (before the plan)"
    if kind == "--list":
        if want == "proposed":
            raise BlockRefused(source, "kafka-reassign-partitions --list output names the reassignments in flight, not "
                                       "a plan", "current", "the partitions in flight with their adding and removing "
                                                            "replicas")
        return ReplicaAssignment(tuple(pasted.listed)), "--list output: the reassignments in flight (no leader or ISR)"
    return _verified(pasted, source, want)


def _other(want: str) -> str:
    return "current" if want == "proposed" else "proposed"


def _pasted_kind(lines: list[str], source: str) -> str | None:
    """Which output of kafka-reassign-partitions the paste is, from its headers; None when it is none of them."""
    def at(header: str) -> list[int]:
        return [n for n, line in enumerate(lines, 1) if line.strip().rstrip(":") == header.rstrip(":")]

    current, proposed, listed = at(_CURRENT_HEADER), at(_PROPOSED_HEADER), at(_LIST_HEADER)
    for header, found in ((_CURRENT_HEADER, current), (_PROPOSED_HEADER, proposed), (_LIST_HEADER, listed)):
        if len(found) > 1:
            raise InputError(source, f'"{header.rstrip(":")}" appears twice (lines {found[0]} and {found[1]}): paste '
                                     "one run's output", found[1])
    if proposed or (current and not any(line.strip() == _ROLLBACK_LINE for line in lines)):
        return "--generate"
    if current:
        return "--execute"
    if listed:
        return "--list"
    if any(line.strip().startswith(_STATUS_HEADER.rstrip(":")) for line in lines):
        return "--verify"
    if any(_CANCEL_RE.match(line.strip()) for line in lines):
        raise InputError(source, "kafka-reassign-partitions --cancel output names the partitions it cancelled, not "
                                 "their replicas: paste kafka-topics --describe")
    if any(line.strip().startswith("There is an existing assignment running") for line in lines):
        raise InputError(source, "kafka-reassign-partitions --execute output of a run refused while a reassignment "
                                 "was in flight names no replicas: paste kafka-topics --describe")
    if any(line.strip() == "No partition reassignments found." for line in lines):
        raise InputError(source, "kafka-reassign-partitions --list output with no reassignment in flight names no "
                                 "partition: paste kafka-topics --describe")
    return None


def _verified(pasted: _Pasted, source: str, want: str) -> tuple[ReplicaAssignment, str]:
    """--verify output with the reassignment JSON it verified: that JSON ("proposed"), or the partitions as the
    output states them ("current")."""
    plan = pasted.blocks.get("")
    if plan is None:
        raise InputError(source, "kafka-reassign-partitions --verify output names each partition's status, not its "
                                 "replicas: paste it with the reassignment JSON it verified, or paste "
                                 "kafka-topics --describe")
    if want == "proposed":
        return plan, "--verify output: the reassignment JSON it verified"
    by_tp = {p.tp: p for p in plan}
    parts: list[PartitionReplicas] = []
    for tp, (state, n) in sorted(pasted.statuses.items()):
        if tp not in by_tp:
            raise InputError(source, f"partition {tp}: --verify status without an entry in the reassignment JSON", n)
        if tp in pasted.elsewhere:
            continue  # "failed", after the ZooKeeper-era line naming its replicas
        if state in ("is still in progress", "failed"):
            raise BlockRefused(source, f"partition {tp}: --verify says its reassignment {state.removeprefix('is ')}; "
                                       "that output has no replica list for it (kafka-topics --describe shows its "
                                       "Adding and Removing Replicas)", "proposed", "the reassignment JSON it "
                                                                                    "verified", n)
        parts.append(PartitionReplicas(tp.topic, tp.partition, by_tp[tp].replicas))
    for tp, (now, _) in sorted(pasted.elsewhere.items()):
        parts.append(PartitionReplicas(tp.topic, tp.partition, now))
    missing = sorted(set(by_tp) - set(pasted.statuses) - set(pasted.elsewhere))
    if missing:
        raise InputError(source, f"partition {missing[0]}: in the reassignment JSON but without a --verify status")
    return ReplicaAssignment(tuple(parts)), "--verify output: the partitions as it states them"


@dataclass
class _Pasted:
    blocks: dict[str, ReplicaAssignment] = field(default_factory=dict)  # by the header before them ('' when none)
    statuses: dict[TopicPartition, tuple[str, int]] = field(default_factory=dict)  # --verify: (state, line)
    elsewhere: dict[TopicPartition, tuple[tuple[int, ...], int]] = field(default_factory=dict)  # replicas now, line
    listed: list[PartitionReplicas] = field(default_factory=list)  # --list
    wrapped: int | None = None  # the terminal width a JSON block was wrapped at (line breaks removed to read it)


def _pasted_blocks(lines: list[str], source: str, kind: str) -> _Pasted:
    """The JSON blocks, --verify statuses and the replicas it names, --list lines; anything else is refused."""
    found = _Pasted()
    header = ""
    n = 0
    while n < len(lines):
        line = lines[n].strip()
        n += 1
        if not line or line == _ROLLBACK_LINE or line.startswith(_STATUS_HEADER.rstrip(":")) or line == _LIST_HEADER \
                or _TOOL_NOISE_RE.match(line) or _CANCEL_RE.match(line):
            continue
        if line.rstrip(":") in (_CURRENT_HEADER, _PROPOSED_HEADER):
            header = line.rstrip(":")
            continue
        if line.startswith("{"):
            n = _json_block(lines, n, header, source, found)
            header = ""
            continue
        _status_line(line, n, source, found, kind)
    return found


def _json_block(lines: list[str], n: int, header: str, source: str, found: _Pasted) -> int:
    """Read the JSON that starts on line n (1-based) into `found`; returns the number of its last line."""
    rest = "\n".join(lines[n - 1:])
    start = rest.index("{")
    where = f"{header} block" if header else "reassignment JSON"
    try:
        _, end = json.JSONDecoder().raw_decode(rest, start)
        text, last = rest[start:end], n + rest[start:end].count("\n")
    except json.JSONDecodeError as e:
        unwrapped = _unwrapped_json(lines, n)
        if unwrapped is None:
            raise InputError(source, f"invalid JSON in the {where}: {e.msg}", n - 1 + e.lineno, e.colno) from None
        text, last, found.wrapped = unwrapped
    except (ValueError, RecursionError) as e:  # an integer of more than 4300 digits, deep nesting
        raise InputError(source, f"invalid JSON in the {where}: {type(e).__name__}: {e}", n) from None
    if header in found.blocks:
        raise InputError(source, f"a second {where}", n)
    try:
        found.blocks[header] = parse_reassignment_json(text, source)
    except InputError as e:
        raise InputError(source, f"{where}: {e.message}", n) from None
    return last


_WRAP_MIN = 40  # narrower lines of equal length are a JSON of short lines, not a terminal's wrapping


def _unwrapped_json(lines: list[str], n: int) -> tuple[str, int, int] | None:
    """kafka-reassign-partitions prints each JSON on one line; a terminal wraps it at its width, and a paste keeps
    those breaks, even inside a string. Lines of one width (at least _WRAP_MIN) from line n, and the shorter last
    one, joined without the breaks, when that is one whole JSON: (text, its last line, the width). Else None."""
    width = len(lines[n - 1])
    last = n
    while last < len(lines) and len(lines[last]) == width:
        last += 1
    if width < _WRAP_MIN or last == n or last >= len(lines):
        return None
    text = "".join(lines[n - 1:last + 1]).strip()
    try:
        _, end = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return None
    return (text, last + 1, width) if end == len(text) else None


def _status_line(line: str, n: int, source: str, found: _Pasted, kind: str) -> None:
    """A --verify status, a line naming a partition's replicas now, or a --list line."""
    listed = _LIST_RE.match(line)
    if listed is not None:
        topic = _topic_name(listed.group("t"), source, n)
        replicas = _id_list(listed.group("replicas"), "replicas", source, n)
        if not replicas:
            raise InputError(source, f"partition {topic}-{listed.group('p')}: empty replica set", n)
        found.listed.append(PartitionReplicas(topic, int(listed.group("p")), replicas,
                                              adding=_id_list(listed.group("adding") or "", "adding", source, n),
                                              removing=_id_list(listed.group("removing") or "", "removing", source, n)))
        return
    m = _STATUS_RE.match(line) or _ELSEWHERE_RE.match(line) or _MISMATCH_RE.match(line)
    if m is None:
        raise InputError(source, f"not part of kafka-reassign-partitions {kind} output (of any release from 0.10.2 "
                                 f"to 4.4): {_quote(line)}", n)
    tp = TopicPartition(_topic_name(m.group("t1") or m.group("t2"), source, n), int(m.group("p1") or m.group("p2")))
    if "now" not in m.groupdict():
        if tp in found.statuses:
            raise InputError(source, f"partition {tp} has two --verify statuses", n)
        found.statuses[tp] = (m.group("state"), n)
        return
    if tp in found.elsewhere or (tp in found.statuses and found.statuses[tp][0] != "failed"):
        raise InputError(source, f"partition {tp} has two --verify statuses", n)
    now = _id_list(m.group("now"), "replica set", source, n)
    if not now:
        raise InputError(source, f"partition {tp}: empty replica set", n)
    found.elsewhere[tp] = (now, n)


# ---------------------------------------------------------------------------------------------
# Brokers file

_COMMENT_RE = re.compile(r"(?:^|\s)#.*")  # '#' starts a comment only at a word start: racks may contain '#'


def parse_brokers(text: str, source: str) -> Cluster:
    """Brokers and racks, in file order, from JSON or from `id:rack` / `id rack` / `id` lines."""
    body = text.removeprefix("\ufeff")
    if body.lstrip()[:1] in ("{", "["):
        brokers = _json_brokers(body, source)
    else:
        brokers = _line_brokers(body, source)
    if not brokers:
        raise InputError(source, "no brokers found")
    return Cluster(tuple(brokers))


def _json_brokers(text: str, source: str) -> list[Broker]:
    doc = _load_json(text, source, object_pairs_hook=_JsonObject)
    brokers: list[Broker] = []
    where: dict[int, str] = {}

    def add(broker_id: int, rack: str | None, place: str) -> None:
        if broker_id in where:
            raise InputError(source, f"broker {broker_id} is listed twice ({where[broker_id]} and {place})")
        where[broker_id] = place
        brokers.append(Broker(broker_id, rack))

    if isinstance(doc, _JsonObject) and "brokers" not in doc:  # {"0": "r1", "1": null}
        for key, count in Counter(k for k, _ in doc.pairs).items():
            if count > 1 and _UINT_RE.fullmatch(key):  # json.loads would silently keep the last one
                raise InputError(source, f"broker {int(key)} is listed twice")
        for key, rack in doc.items():
            place = f"broker {_show(key)}"
            if not _UINT_RE.fullmatch(key) or int(key) > INT32_MAX:
                raise InputError(source, f"{place}: the key must be a broker id (an integer >= 0)")
            add(int(key), _json_rack(rack, place, source), place)
        return brokers
    entries = doc["brokers"] if isinstance(doc, dict) else doc
    if not isinstance(entries, list):
        raise InputError(source, f'"brokers" must be a list, got {_show(entries)}')
    for i, entry in enumerate(entries):
        place = f"brokers[{i}]"
        if not isinstance(entry, dict):
            raise InputError(source, f'{place}: expected an object like {{"id": 0, "rack": "r1"}}, '
                                     f"got {_show(entry)}")
        if not _is_id(entry.get("id")):
            raise InputError(source, f'{place}: "id" must be a broker id (an integer >= 0), '
                                     f"got {_show(entry.get('id'))}")
        add(entry["id"], _json_rack(entry.get("rack"), place, source), place)
    return brokers


def _json_rack(rack: object, place: str, source: str) -> str | None:
    if rack is None:
        return None
    if not isinstance(rack, str):
        raise InputError(source, f"{place}: the rack must be a string or null, got {_show(rack)}")
    if not rack.strip():
        raise InputError(source, f"{place}: empty rack name (use null for a broker without a rack)")
    if (problem := control_problem(rack)) is not None:
        raise InputError(source, f"{place}: the rack {shown(rack, 60)} {problem}")
    return rack


def _line_brokers(text: str, source: str) -> list[Broker]:
    brokers: list[Broker] = []
    line_of: dict[int, int] = {}
    for n, raw in enumerate(_lines(text), 1):
        line = _COMMENT_RE.sub("", raw).strip()
        if not line:
            continue
        rack: str | None
        if ":" in line:
            id_text, rack = (s.strip() for s in line.split(":", 1))
            if not rack:
                raise InputError(source, f"broker {id_text}: empty rack name (write just the id for a "
                                         "broker without a rack)", n)
        else:
            words = line.split()
            if len(words) > 2:
                raise InputError(source, f"expected 'id:rack', 'id rack' or 'id', got {_quote(line)}", n)
            id_text, rack = words[0], (words[1] if len(words) == 2 else None)
        if not _UINT_RE.fullmatch(id_text) or int(id_text) > INT32_MAX:
            raise InputError(source, f"{_quote(id_text)} is not a broker id (an integer >= 0)", n)
        broker_id = int(id_text)
        if rack is not None and (problem := control_problem(rack)) is not None:
            raise InputError(source, f"broker {broker_id}: the rack {shown(rack, 60)} {problem}", n)
        if broker_id in line_of:
            raise InputError(source, f"broker {broker_id} is listed twice "
                                     f"(lines {line_of[broker_id]} and {n})", n)
        line_of[broker_id] = n
        brokers.append(Broker(broker_id, rack))
    return brokers


# ---------------------------------------------------------------------------------------------
# Helpers


def _lines(text: str) -> list[str]:
    # Not str.splitlines(): it also breaks at \f, \x1c or U+2028, so line numbers would not match editors'.
    return [line.removesuffix("\r") for line in text.removeprefix("\ufeff").split("\n")]


class _JsonObject(dict[str, Any]):
    """A JSON object that remembers its key/value pairs, duplicates included."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs


def _load_json(text: str, source: str, **kwargs: Any) -> Any:
    try:
        return json.loads(text.removeprefix("\ufeff"), **kwargs)
    except json.JSONDecodeError as e:
        raise InputError(source, f"invalid JSON: {e.msg}", e.lineno, e.colno) from None
    except (ValueError, RecursionError) as e:  # e.g. an integer with more than 4300 digits, deep nesting
        raise InputError(source, f"invalid JSON: {type(e).__name__}: {e}") from None


def _is_id(value: object) -> bool:
    return type(value) is int and 0 <= value <= INT32_MAX  # type() is not isinstance(): bools are not ids


def _no_duplicate_broker(brokers: Sequence[int], error: Callable[[int], InputError]) -> None:
    seen: set[int] = set()
    for b in brokers:
        if b in seen:
            raise error(b)
        seen.add(b)


def _show(value: object, limit: int = 40) -> str:
    """A JSON value shown in an error message, cut short."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _quote(text: str, limit: int = 40) -> str:
    return '"' + (text if len(text) <= limit else text[: limit - 3] + "...") + '"'


def check_plan_brokers(partitions: Iterable[PartitionReplicas], cluster: Cluster, plan: str, brokers: str,
                       purpose: str = "") -> None:
    """A plan read against a brokers file: every broker has a rack or none does (Kafka's rack-aware paths
    refuse a mix), and every replica in the plan is a known broker."""
    if cluster.rack_layout == "mixed":
        bare = [b.id for b in cluster.brokers if b.rack is None]
        raise InputError(brokers, f"Not all brokers have rack information{purpose} "
                                  f"(no rack: broker(s) {', '.join(map(str, bare))})")
    known = set(cluster.broker_ids)
    for p in partitions:
        for b in (*p.replicas, *p.adding):
            if b not in known:
                raise InputError(plan, f"partition {p.tp}: unknown broker id {b} (not in {brokers})")
