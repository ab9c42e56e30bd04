"""`kafka-consumer-groups --describe` output of every release from 0.10.2 to 4.4, read into one view per group.

What the tool prints is in `ConsumerGroupCommand` (`core/src/main/scala/kafka/admin/ConsumerGroupCommand.scala` up to
3.7, `tools/src/main/java/org/apache/kafka/tools/consumer/group/ConsumerGroupCommand.java` from 3.8): one table per
group and mode, each after a header line, with these layouts (tests/data/consumer_groups holds each release's real
output):

* offsets (`--describe` alone or `--offsets`): `[GROUP] TOPIC PARTITION [LEADER-EPOCH] CURRENT-OFFSET LOG-END-OFFSET
  LAG CONSUMER-ID HOST CLIENT-ID`. GROUP from 2.3 (KAFKA-7471, with `--all-groups`); LEADER-EPOCH with `--verbose`
  from 4.0. `-` where a value is missing: no committed offset, no owner. Before 2.3 a member without partitions
  has a row of `-` (topic, partition, offsets) with its ids; from 2.3 it has none.
* `--members` (from 1.1, KIP-175): `[GROUP] CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS`, and with
  `--verbose` `ASSIGNMENT` as `topic(0,1), other(2)` up to 3.7, as `(0,1), (2)` in 3.8 and 3.9 (the Java port drops
  the topic names), and from 4.0 `CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT` as
  `topic:0,1;other:2` (KAFKA-17750; `-` for a classic group's epochs and target). GROUP-INSTANCE-ID (from 2.6) only
  when some member is static; a dynamic member's cell is then blank.
* `--state` (from 1.1): `[GROUP] COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE [GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH]
  #MEMBERS`, the epochs with `--verbose` from 4.0. An empty group's strategy is blank (`-` from 4.0).

Around the tables, on stderr (pasted with them from a terminal): "Consumer group 'g' has no active members.",
"Warning: Consumer group 'g' is rebalancing.", "Error: Consumer group 'g' does not exist.", the "Note: ..." of
0.10.2 to 2.0, and log lines (SLF4J, log4j). Before 2.3 no line names the group but those notes, and the command
line when the paste has it (`kafka-consumer-groups.sh ... --group g`); a paste's tables named by neither are taken as
one group.

Cells are read by the header's column positions (every release pads its columns to the widest value), and by
whitespace when a paste lost the alignment; a row that fits neither is an InputError naming its line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from kcheck.inputs.formats import InputError, control_problem, shown, topic_problem
from kcheck.inputs.tool_outputs import identify
from kcheck.model.vocabulary import TopicPartition

OFFSETS, MEMBERS, STATE = "offsets", "members", "state"
# Each kind's columns in the order the tool prints them; a header is a subsequence with the required ones.
COLUMNS = {
    OFFSETS: ("GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
              "CONSUMER-ID", "HOST", "CLIENT-ID"),
    MEMBERS: ("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT",
              "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"),
    STATE: ("GROUP", "COORDINATOR", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH",
            "#MEMBERS"),
}
REQUIRED = {
    OFFSETS: ("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID"),
    MEMBERS: ("CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"),
    STATE: ("COORDINATOR", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
}
# Cells a row may leave blank (a dynamic member beside static ones; an empty group's strategy before 4.0).
_MAY_BE_BLANK = {"GROUP-INSTANCE-ID", "ASSIGNMENT-STRATEGY"}
_HEADER_WORD = re.compile(r"#?[A-Z][A-Z-]*")
_NOTE = re.compile(r"^(?P<warning>Warning: )?Consumer group '(?P<group>.*)' (?P<what>has no active members|"
                   r"is rebalancing)\.$")
# Up to 3.9 a group that is not there is named in a line; 4.x's tool fails with GroupIdNotFoundException instead.
_MISSING = re.compile(r"^Error: (?:The )?[Cc]onsumer group '(?P<group>.*)' does not exist\.$|"
                      r"^Error: Executing consumer group command failed due to \S*GroupIdNotFoundException: "
                      r"Group (?P<id>.*) not found\.$")
_ERA_NOTE = re.compile(r"^Note: This will (?:only show information about consumers that use the Java consumer API|"
                       r"not show information about old Zookeeper-based consumers)")
_LOG_LINE = re.compile(r"^(?:SLF4J: |log4j:|\[\d{4}-\d\d-\d\d[ T][\d:,.]+\] (?:TRACE|DEBUG|INFO|WARN|ERROR) |"
                       r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d|(?:TRACE|DEBUG|INFO|WARN|ERROR) |"
                       r"\[[\w .|-]+\] (?:INFO|WARN) )")
_COMMAND = re.compile(r"kafka-consumer-groups(?:\.sh|\.bat)?\s")
_TOOL_ERROR = re.compile(r"^(?:Error: |Exception in thread |\s*at \S+\(|Caused by: |WARN: |Warn: |Warning: |"
                         r"[\w$.]+(?:Exception|Error)(?::|$)|\s*\.\.\. \d+ more$)")
_COORDINATOR = re.compile(r"(?P<host>\S+):(?P<port>\d+)\s+\((?P<id>-?\d+)\)")
_SCALA_ASSIGNMENT = re.compile(r"(?P<topic>[^\s(),]+)\((?P<parts>[\d,]*)\)")
_ANONYMOUS_ASSIGNMENT = re.compile(r"\((?P<parts>[\d,]*)\)")


@dataclass(frozen=True)
class OffsetRow:
    line: int
    group: str | None
    topic: str | None  # None: '-', a member without partitions (before 2.3)
    partition: int | None
    current: int | None  # the committed offset; None: none committed
    log_end: int | None
    lag: int | None
    consumer: str | None  # the owning member's id; None: no member owns it
    host: str | None
    client: str | None
    leader_epoch: int | None = None

    @property
    def tp(self) -> TopicPartition | None:
        return None if self.topic is None or self.partition is None else TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class MemberRow:
    line: int
    group: str | None
    consumer: str
    instance: str | None
    host: str
    client: str
    count: int  # #PARTITIONS
    # ASSIGNMENT (or CURRENT-ASSIGNMENT); None when the mode does not show it (--members without --verbose)
    assignment: tuple[TopicPartition, ...] | None = None
    # 3.8 and 3.9: the partition numbers per topic without the topic names
    anonymous: tuple[tuple[int, ...], ...] | None = None
    current_epoch: int | None = None
    target_epoch: int | None = None
    target: tuple[TopicPartition, ...] | None = None  # KIP-848 groups from 4.0: the assignor's target


@dataclass(frozen=True)
class StateRow:
    line: int
    group: str | None
    coordinator: str
    strategy: str | None  # None: blank or '-' (an empty group)
    state: str
    members: int
    group_epoch: int | None = None
    target_epoch: int | None = None


@dataclass
class GroupView:
    """Everything a paste says about one group (None name: a table before 2.3, which names no group)."""

    name: str | None
    offsets: list[OffsetRow] | None = None  # None: no offsets table of this group in the paste
    members: list[MemberRow] | None = None
    verbose: bool = False  # the members table shows assignments
    states: list[StateRow] = field(default_factory=list)
    notes: list[tuple[int, str]] = field(default_factory=list)  # (line, kind): empty, rebalancing, missing
    columns: set[str] = field(default_factory=set)  # every column of its tables (the layout's release)


@dataclass
class GroupPaste:
    source: str
    groups: dict[str | None, GroupView]
    tool_notes: list[tuple[int, str]]  # the tool's own "Note:" and error lines
    commands: list[tuple[int, str]]  # kafka-consumer-groups command lines pasted with the output

    def layout(self) -> str:
        """Which releases print this paste's layout."""
        return release_range(set().union(*(g.columns for g in self.groups.values())) if self.groups else set(),
                             [text for _, text in self.tool_notes], self.groups.values())


# ---------------------------------------------------------------------------------------------
# headers and cells


def _header(line: str) -> tuple[str, list[tuple[str, int]]] | None:
    """(kind, [(column, start)]) when `line` is a describe table's header; None when it is not a header."""
    text = line.replace("COORDINATOR (ID)", "COORDINATOR")
    words = [(m.group(), m.start()) for m in re.finditer(r"\S+", text)]
    if len(words) < 3 or not all(_HEADER_WORD.fullmatch(w) for w, _ in words):
        return None
    names = {w for w, _ in words}
    kind = (OFFSETS if {"CURRENT-OFFSET", "LOG-END-OFFSET"} <= names else MEMBERS if "#PARTITIONS" in names
            else STATE if {"COORDINATOR", "STATE"} <= names else None)
    if kind is None:
        return ("", words)
    return kind, words


def _check_header(kind: str, words: list[tuple[str, int]], source: str, n: int) -> None:
    order = COLUMNS[kind]
    names = [w for w, _ in words]
    for w in names:
        if w == "OWNER":  # the member column before 0.10.2 (CONSUMER-ID, HOST and CLIENT-ID since)
            raise InputError(source, "OWNER column: the layout of kafka-consumer-groups before 0.10.2; kcheck reads "
                                     f"the layouts of 0.10.2 to 4.4 ({kind} table: {' '.join(order)})", n)
        if w not in order:
            raise InputError(source, f"unknown column {w} in a kafka-consumer-groups --describe header "
                                     f"({kind} table of Kafka 0.10.2 to 4.4: {' '.join(order)})", n)
    if names != sorted(names, key=order.index) or len(set(names)) != len(names):
        raise InputError(source, f"the columns of this {kind} header are not in kafka-consumer-groups' order "
                                 f"({' '.join(order)})", n)
    missing = [c for c in REQUIRED[kind] if c not in names]
    if missing:
        raise InputError(source, f"this {kind} header has no {', '.join(missing)} column(s)", n)


def _aligned(line: str, words: list[tuple[str, int]]) -> dict[str, str] | None:
    """The row's cells cut at the header's column starts, or None when a value runs over a column boundary (a
    value wider than its column, or a paste that lost the padding)."""
    cells = {}
    for i, (name, start) in enumerate(words):
        end = words[i + 1][1] if i + 1 < len(words) else None
        cell = line[start:end].strip() if start < len(line) else ""
        # 0.10.2 to 1.0 print CONSUMER-ID as %-50s with no space before HOST (`/address`): a 50-character id
        # runs into it
        if 0 < start < len(line) and line[start - 1] != " " and not (name == "HOST" and cell.startswith("/")):
            return None
        if not cell and name not in _MAY_BE_BLANK:
            return None
        cells[name] = cell
    return cells


def _split_offsets(tokens: list[str], names: list[str]) -> dict[str, str] | None:
    """Whitespace-split cells of an offsets row: every column is one word, but CLIENT-ID (last) may have spaces."""
    fixed = names.index("CONSUMER-ID")
    if len(tokens) < fixed + 1:
        return None
    cells = dict(zip(names[:fixed + 1], tokens, strict=False))
    rest = tokens[fixed + 1:]
    glued = cells["CONSUMER-ID"].find("/")
    if glued > 0 and "HOST" in names and len(rest) == 1:  # 0.10.2 to 1.0: CONSUMER-ID%-50s then HOST, no space
        cells["CONSUMER-ID"], rest = cells["CONSUMER-ID"][:glued], [cells["CONSUMER-ID"][glued:], *rest]
    tail = names[fixed + 1:]
    if len(tail) == 2 and len(rest) >= 2:  # HOST CLIENT-ID
        cells.update({"HOST": rest[0], "CLIENT-ID": " ".join(rest[1:])})
    elif len(tail) != len(rest):
        return None
    else:
        cells.update(zip(tail, rest, strict=True))
    return cells


def _split_members(tokens: list[str], names: list[str]) -> dict[str, str] | None:
    """Whitespace-split cells of a members row. HOST is `name/address` or `/address` (InetAddress.toString) and a
    group instance id has no '/', so a blank GROUP-INSTANCE-ID cell shows as a HOST right after CONSUMER-ID."""
    cells: dict[str, str] = {}
    i = 0
    for name in ("GROUP", "CONSUMER-ID"):
        if name in names:
            if i >= len(tokens):
                return None
            cells[name] = tokens[i]
            i += 1
    if "GROUP-INSTANCE-ID" in names:
        blank = i < len(tokens) and "/" in tokens[i]
        cells["GROUP-INSTANCE-ID"] = "" if blank else (tokens[i] if i < len(tokens) else "")
        i += 0 if blank else 1
    after = [n for n in names if names.index(n) > names.index("#PARTITIONS")]
    if len(tokens) < i + 3 + len(after):
        return None
    cells["HOST"] = tokens[i]
    rest = tokens[i + 1:]
    if after == ["ASSIGNMENT"]:  # a topic(0,1), other(2) list: commas and spaces; #PARTITIONS is the 2nd word
        cells.update({"CLIENT-ID": rest[0], "#PARTITIONS": rest[1], "ASSIGNMENT": " ".join(rest[2:])})
        return cells
    tail = len(after)
    cells["CLIENT-ID"] = " ".join(rest[:len(rest) - 1 - tail])
    cells["#PARTITIONS"] = rest[len(rest) - 1 - tail]
    cells.update(zip(after, rest[len(rest) - tail:], strict=True))
    return cells if cells["CLIENT-ID"] else None


def _split_state(line: str, names: list[str]) -> dict[str, str] | None:
    """Cells of a state row: the coordinator is `host:port (id)` (two words; two spaces from 3.8), and the state is
    the word before the numbers, so a blank strategy is told from a missing one."""
    cells: dict[str, str] = {}
    rest = line.strip()
    if "GROUP" in names:
        group, _, rest = rest.partition(" ")
        cells["GROUP"] = group
    m = _COORDINATOR.match(rest.strip())
    if not m:
        return None
    cells["COORDINATOR"] = f"{m['host']}:{m['port']} ({m['id']})"
    tokens = rest.strip()[m.end():].split()
    numbers = [n for n in names if n in ("GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS")]
    if len(tokens) < 1 + len(numbers):
        return None
    cells.update(zip(numbers, tokens[len(tokens) - len(numbers):], strict=True))
    cells["STATE"] = tokens[len(tokens) - len(numbers) - 1]
    cells["ASSIGNMENT-STRATEGY"] = " ".join(tokens[:len(tokens) - len(numbers) - 1])
    return cells


def _cells(kind: str, line: str, words: list[tuple[str, int]]) -> dict[str, str] | None:
    names = [w for w, _ in words]
    if kind == STATE:  # state rows are read by their shape: the coordinator cell has a space in it
        return _split_state(line, names)
    aligned = _aligned(line, words)
    if aligned is not None:
        return aligned
    return (_split_offsets if kind == OFFSETS else _split_members)(line.split(), names)


# ---------------------------------------------------------------------------------------------
# typed values


# Kafka's types per column: partitions, counts and epochs are int32, offsets and lag int64.
_INT32_COLUMNS = frozenset({"PARTITION", "#PARTITIONS", "#MEMBERS", "LEADER-EPOCH", "CURRENT-EPOCH", "TARGET-EPOCH",
                            "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"})


def _number(cell: str, column: str, source: str, n: int, signed: bool = False) -> int | None:
    """An integer cell (ASCII digits, within the column's Java type); None for '-'."""
    if cell == "-":
        return None
    limit = 2**31 - 1 if column in _INT32_COLUMNS else 2**63 - 1
    if not re.fullmatch(r"-?[0-9]{1,19}" if signed else r"[0-9]{1,19}", cell) or not -limit - 1 <= int(cell) <= limit:
        raise InputError(source, f"{column} {shown(cell, 40)!r} is not a number or '-'", n)
    return int(cell)


def _topic(cell: str, source: str, n: int) -> str | None:
    if cell == "-":
        return None
    if problem := topic_problem(cell):
        raise InputError(source, f"TOPIC: {problem}", n)
    return cell


def _text(cell: str) -> str | None:
    return None if cell in ("-", "") else cell


def parse_assignment(cell: str, source: str, n: int, column: str = "ASSIGNMENT") \
        -> tuple[tuple[TopicPartition, ...] | None, tuple[tuple[int, ...], ...] | None]:
    """(partitions, None) for `topic(0,1), other(2)` (to 3.7) and `topic:0,1;other:2` (4.x); (None, groups) for
    3.8/3.9's `(0,1), (2)`; ((), None) for '-'."""
    text = cell.strip()
    if text in ("-", ""):
        return (), None
    if re.fullmatch(r"\([\d,]*\)(?:,\s*\([\d,]*\))*", text):
        return None, tuple(_ints(m["parts"], source, n, column) for m in _ANONYMOUS_ASSIGNMENT.finditer(text))
    if re.fullmatch(r"[^\s(),:;]+\([\d,]*\)(?:,\s*[^\s(),:;]+\([\d,]*\))*", text):
        pairs = [(m["topic"], m["parts"]) for m in _SCALA_ASSIGNMENT.finditer(text)]
    elif re.fullmatch(r"[^\s(),:;]+:[\d,]+(?:;[^\s(),:;]+:[\d,]+)*", text):
        pairs = [tuple(part.rsplit(":", 1)) for part in text.split(";")]  # type: ignore[misc]
    else:
        raise InputError(source, f"{column} {shown(text, 60)!r} is not an assignment as kafka-consumer-groups "
                                 "prints it (topic(0,1), (0,1) or topic:0,1)", n)
    out = []
    for topic, parts in pairs:
        if problem := topic_problem(topic):
            raise InputError(source, f"{column}: {problem}", n)
        out += [TopicPartition(topic, p) for p in _ints(parts, source, n, column)]
    return tuple(out), None


def _ints(text: str, source: str, n: int, column: str) -> tuple[int, ...]:
    parts = [p for p in text.split(",") if p]
    if any(not re.fullmatch(r"[0-9]{1,10}", p) or int(p) > 2**31 - 1 for p in parts):
        raise InputError(source, f"{column}: partition list {shown(text, 60)!r} is not numbers", n)
    return tuple(int(p) for p in parts)


def _offset_row(cells: dict[str, str], source: str, n: int) -> OffsetRow:
    return OffsetRow(
        n, cells.get("GROUP"), _topic(cells["TOPIC"], source, n), _number(cells["PARTITION"], "PARTITION", source, n),
        _number(cells["CURRENT-OFFSET"], "CURRENT-OFFSET", source, n),
        _number(cells["LOG-END-OFFSET"], "LOG-END-OFFSET", source, n),
        _number(cells["LAG"], "LAG", source, n, signed=True), _text(cells["CONSUMER-ID"]),
        _text(cells.get("HOST", "-")), _text(cells.get("CLIENT-ID", "-")),
        _number(cells["LEADER-EPOCH"], "LEADER-EPOCH", source, n, signed=True) if "LEADER-EPOCH" in cells else None)


def _member_row(cells: dict[str, str], source: str, n: int) -> MemberRow:
    count = _number(cells["#PARTITIONS"], "#PARTITIONS", source, n)
    if count is None:
        raise InputError(source, "#PARTITIONS is '-'", n)
    assignment = anonymous = target = None
    column = "ASSIGNMENT" if "ASSIGNMENT" in cells else "CURRENT-ASSIGNMENT"
    if column in cells:
        assignment, anonymous = parse_assignment(cells[column], source, n, column)
    if "TARGET-ASSIGNMENT" in cells and cells["TARGET-ASSIGNMENT"] != "-":
        target, _ = parse_assignment(cells["TARGET-ASSIGNMENT"], source, n, "TARGET-ASSIGNMENT")
    return MemberRow(
        n, cells.get("GROUP"), cells["CONSUMER-ID"], _text(cells.get("GROUP-INSTANCE-ID", "")), cells["HOST"],
        cells["CLIENT-ID"], count, assignment, anonymous,
        _number(cells.get("CURRENT-EPOCH", "-"), "CURRENT-EPOCH", source, n, signed=True),
        _number(cells.get("TARGET-EPOCH", "-"), "TARGET-EPOCH", source, n, signed=True), target)


def _state_row(cells: dict[str, str], source: str, n: int) -> StateRow:
    members = _number(cells["#MEMBERS"], "#MEMBERS", source, n)
    if members is None:
        raise InputError(source, "#MEMBERS is '-'", n)
    if not re.fullmatch(r"[A-Za-z]+", cells["STATE"]):
        raise InputError(source, f"STATE {shown(cells['STATE'], 40)!r} is not a group state", n)
    return StateRow(n, cells.get("GROUP"), cells["COORDINATOR"], _text(cells["ASSIGNMENT-STRATEGY"]), cells["STATE"],
                    members, _number(cells.get("GROUP-EPOCH", "-"), "GROUP-EPOCH", source, n, signed=True),
                    _number(cells.get("TARGET-ASSIGNMENT-EPOCH", "-"), "TARGET-ASSIGNMENT-EPOCH", source, n,
                            signed=True))


_ROW: dict[str, Callable[[dict[str, str], str, int], OffsetRow | MemberRow | StateRow]] = {
    OFFSETS: _offset_row, MEMBERS: _member_row, STATE: _state_row}


# ---------------------------------------------------------------------------------------------
# the paste


@dataclass
class _Table:
    kind: str
    words: list[tuple[str, int]]
    line: int
    named: str | None  # the group a note right before it, or the command line, named
    rows: list[OffsetRow | MemberRow | StateRow] = field(default_factory=list)


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source
        self.groups: dict[str | None, GroupView] = {}
        self.tool_notes: list[tuple[int, str]] = []
        self.commands: list[tuple[int, str]] = []
        self.table: _Table | None = None
        self.named: str | None = None  # the group the last note named, for the next table
        self.command_group: str | None = None  # the one --group of the last command line pasted

    def group(self, name: str | None) -> GroupView:
        if name not in self.groups:
            self.groups[name] = GroupView(name)
        return self.groups[name]

    def line(self, n: int, raw: str) -> None:
        line = raw.rstrip().replace("\t", " ")
        stripped = line.strip()
        if not stripped:
            self.close()
            return
        header = _header(line)
        if header is not None:
            self.start(header, n)
        elif self.note(stripped, n):
            self.close()
        elif self.table is not None:
            if problem := control_problem(line):  # no Kafka name has one: a corrupted file or paste
                raise InputError(self.source, f"this {self.table.kind} row {problem}", n)
            cells = _cells(self.table.kind, line, self.table.words)
            if cells is None:
                raise InputError(self.source, f"this row does not fit its {self.table.kind} header (line "
                                              f"{self.table.line}): {shown(stripped, 80)!r}", n)
            self.table.rows.append(_ROW[self.table.kind](cells, self.source, n))
        else:
            raise InputError(self.source, "not part of kafka-consumer-groups --describe output: "
                                          f"{shown(stripped, 80)!r}", n)

    def start(self, header: tuple[str, list[tuple[str, int]]], n: int) -> None:
        kind, words = header
        if not kind:
            what = identify(" ".join(w for w, _ in words) + "\n")
            raise InputError(self.source, (what.hint("a --describe table") if what else
                                           "a header that kafka-consumer-groups --describe does not print: "
                                           + " ".join(w for w, _ in words)), n)
        _check_header(kind, words, self.source, n)
        self.close()
        self.table = _Table(kind, words, n, self.named or self.command_group)
        self.named = None

    def note(self, text: str, n: int) -> bool:
        """Record a line printed around the tables; False when `text` is none of those."""
        if m := _NOTE.match(text):
            self.group(m["group"]).notes.append((n, "empty" if m["what"].startswith("has") else "rebalancing"))
            self.named = m["group"]
        elif m := _MISSING.match(text):
            self.group(m["group"] if m["group"] is not None else m["id"]).notes.append((n, "missing"))
            self.named = None
        elif _ERA_NOTE.match(text) or _TOOL_ERROR.match(text):
            self.tool_notes.append((n, text))
        elif _COMMAND.search(text):  # a new command: a note before it names none of its tables
            self.commands.append((n, text))
            groups = re.findall(r"--group[= ]+(\S+)", text)
            self.named, self.command_group = None, groups[0].strip("'\"") if len(groups) == 1 else None
        elif not _LOG_LINE.match(text):
            return False
        return True

    def close(self) -> None:
        t, self.table = self.table, None
        if t is None:
            return
        names = {r.group for r in t.rows} or {None}
        if names == {None}:
            names = {t.named}  # before 2.3, or a header without rows: the group a note or the command named
        for name in names:
            self.add(t, name)

    def add(self, t: _Table, name: str | None) -> None:
        g = self.group(name)
        rows = [r for r in t.rows if r.group == name or r.group is None]
        g.columns.update(w for w, _ in t.words)
        if t.kind == OFFSETS:
            g.offsets = (g.offsets or []) + [r for r in rows if isinstance(r, OffsetRow)]
        elif t.kind == MEMBERS:
            g.members = (g.members or []) + [r for r in rows if isinstance(r, MemberRow)]
            g.verbose = g.verbose or any(w in ("ASSIGNMENT", "CURRENT-ASSIGNMENT") for w, _ in t.words)
        else:
            g.states += [r for r in rows if isinstance(r, StateRow)]


def parse_group_describe(text: str, source: str) -> GroupPaste:
    """Read a paste of `kafka-consumer-groups --describe` output (any mode, any release, several groups)."""
    reader = _Reader(source)
    try:
        for n, raw in enumerate(text.removeprefix("\ufeff").splitlines(), 1):
            reader.line(n, raw)
        reader.close()
    except InputError:
        _other_tool(text, source)
        raise
    if not any(g.offsets is not None or g.members is not None or g.states or g.notes
               for g in reader.groups.values()):
        _other_tool(text, source)
        errors = [t for _, t in reader.tool_notes if t.startswith(("Error", "Exception"))]
        raise InputError(source, "no kafka-consumer-groups --describe table in it"
                         + (f" (the tool printed: {shown(errors[0], 120)})" if errors else ""))
    return GroupPaste(source, reader.groups, reader.tool_notes, reader.commands)


def _other_tool(text: str, source: str) -> None:
    """Raise what another Kafka tool's output is and which command reads it (nothing for this tool's own)."""
    what = identify(text)
    if what is not None and not what.what.startswith("kafka-consumer-groups --describe"):
        raise InputError(source, what.hint("kafka-consumer-groups --describe output"))


def merge(pastes: Sequence[GroupPaste]) -> GroupPaste:
    """Several files of one group's (or groups') output read as one paste."""
    if len(pastes) == 1:
        return pastes[0]
    out = GroupPaste(", ".join(p.source for p in pastes), {}, [], [])
    for p in pastes:
        out.tool_notes += p.tool_notes
        out.commands += p.commands
        for name, g in p.groups.items():
            mine = out.groups.setdefault(name, GroupView(name))
            if g.offsets is not None:
                mine.offsets = (mine.offsets or []) + g.offsets
            if g.members is not None:
                mine.members = (mine.members or []) + g.members
            mine.verbose = mine.verbose or g.verbose
            mine.states += g.states
            mine.notes += g.notes
            mine.columns |= g.columns
    return out


# ---------------------------------------------------------------------------------------------
# which releases print a layout


def release_range(columns: set[str], notes: list[str], groups: Iterable[GroupView]) -> str:
    """The releases whose kafka-consumer-groups prints these columns and notes (from each release's source)."""
    views = list(groups)
    anonymous = any(m.anonymous is not None for g in views for m in g.members or ())
    named = any(m.assignment and m.current_epoch is None and "CURRENT-ASSIGNMENT" not in g.columns
                for g in views for m in g.members or ())
    if columns & {"LEADER-EPOCH", "CURRENT-EPOCH", "GROUP-EPOCH"}:
        return "4.0 to 4.4"
    if anonymous:
        return "3.8 or 3.9"
    low, high = ("2.3", "4.4") if "GROUP" in columns else ("0.10.2", "2.2")
    if any(n.startswith("Note: This will only show") for n in notes):
        low, high = "0.10.2", "1.0"
    elif any(n.startswith("Note: This will not show") for n in notes):
        low, high = "1.1", "2.0"
    elif columns & {"#PARTITIONS", "COORDINATOR"} and low == "0.10.2":
        low = "1.1"
    if "GROUP-INSTANCE-ID" in columns:
        low = "2.6"
    if named and high == "4.4":
        high = "3.7"
    return f"{low} to {high}"
