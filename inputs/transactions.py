"""`kafka-transactions.sh` output read back (KIP-664's tool: `list`, `describe`, `describe-producers`,
`find-hanging`), any release from 3.0 to 4.4.

The tool is `tools/src/main/java/org/apache/kafka/tools/TransactionsCommand.java`; each subcommand prints one table
with `ToolsUtils.prettyPrintTable` (`tools/src/main/java/org/apache/kafka/tools/ToolsUtils.java`): a header line, then
one line per row, every cell padded to its column's width and followed by a tab. A terminal's copy turns the tabs
into spaces, so a line without tabs is split on runs of spaces. Its errors are one line on stderr ("Failed to ..."
from `printErrorAndExit`); the admin client's log records ('[thread] LEVEL logger - message') may be mixed in.

`describe-producers` does not print its partition: a shell prompt line with the command in the paste names it
(`$ kafka-transactions.sh ... describe-producers --topic orders --partition 0`), else the caller's `--partition`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from kcheck.inputs.formats import InputError, is_shell_prompt, read_text, shown, topic_problem
from kcheck.inputs.tool_outputs import identify

# Each subcommand's columns (TransactionsCommand's HEADERS), the same in every release from 3.0 to 4.4.
HEADERS: dict[str, tuple[str, ...]] = {
    "list": ("TransactionalId", "Coordinator", "ProducerId", "TransactionState"),
    "describe": ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                 "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"),
    "describe-producers": ("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                           "CurrentTransactionStartOffset"),
    "find-hanging": ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                     "LastTimestamp", "Duration(min)"),
}
# clients/src/main/java/org/apache/kafka/clients/admin/TransactionState.java's names
STATES = ("Ongoing", "PrepareAbort", "PrepareCommit", "CompleteAbort", "CompleteCommit", "Empty", "PrepareEpochFence",
          "Unknown")
_LOG = re.compile(r"^\[[^\]]*\] (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) |^\t|^SLF4J|^log4j:|^(?:\S+ )?(?:WARN|ERROR) ")
_TOOL_LINE = re.compile(r"^(?:Failed to |The `find-hanging` command requires|The --partition argument requires|"
                        r"usage: kafka-transactions|kafka-transactions(?:\.sh)?: error:|Exception in thread )")
_PRODUCERS_CMD = re.compile(r"\bdescribe-producers\b")
_TOPIC_ARG = re.compile(r"--topic[ =](\S+)")
_PARTITION_ARG = re.compile(r"--partition[ =](\S+)")
_TP = re.compile(r"(.+)-([0-9]+)")
_DIGITS = re.compile(r"-?[0-9]{1,20}")


@dataclass(frozen=True)
class Table:
    kind: str  # a key of HEADERS
    source: str
    line: int  # of its header
    rows: tuple[tuple[int, tuple[str, ...]], ...]  # (line number, cells)
    partition: str | None = None  # describe-producers: the topic-partition it was run on


@dataclass
class Paste:
    tables: list[Table] = field(default_factory=list)
    tool_errors: list[tuple[str, int, str]] = field(default_factory=list)  # (source, line, text)


def _cells(line: str) -> list[str]:
    if "\t" in line:
        return [c.strip() for c in line.rstrip("\n").rstrip().split("\t")]
    return line.split()


def _header_kind(cells: Sequence[str]) -> str | None:
    for kind, header in HEADERS.items():
        if tuple(cells) == header:
            return kind
    return None


def _command_partition(line: str, source: str, n: int) -> str | None:
    topic, part = _TOPIC_ARG.search(line), _PARTITION_ARG.search(line)
    if topic is None or part is None:
        return None
    if _DIGITS.fullmatch(part.group(1)) is None or part.group(1).startswith("-"):
        raise InputError(source, f"--partition {shown(part.group(1), 40)!r} is not a partition number", n)
    return f"{topic.group(1)}-{int(part.group(1))}"


def parse(text: str, source: str) -> Paste:
    """The tables and tool errors of one paste; InputError (naming source:line) on a line the tool did not print."""
    paste = Paste()
    lines = text.splitlines()
    n, pending = 0, None  # pending: the partition of the last describe-producers command line not yet used
    while n < len(lines):
        line, n = lines[n], n + 1
        if not line.strip() or _LOG.match(line):
            continue
        if is_shell_prompt(line) or line.lstrip().startswith(("kafka-transactions", "bin/kafka-transactions")):
            pending = _command_partition(line, source, n) if _PRODUCERS_CMD.search(line) else None
            continue
        if _TOOL_LINE.match(line):
            paste.tool_errors.append((source, n, line.strip()))
            continue
        kind = _header_kind(_cells(line))
        if kind is None:
            raise InputError(source, _not_ours(line, text), n)
        start, rows = n, []
        while n < len(lines) and lines[n].strip() and _header_kind(_cells(lines[n])) is None \
                and not _LOG.match(lines[n]) and not _TOOL_LINE.match(lines[n]) and not is_shell_prompt(lines[n]):
            cells = _cells(lines[n])
            n += 1
            rows.append((n, tuple(_row(kind, cells, source, n))))
        paste.tables.append(Table(kind, source, start, tuple(rows), pending if kind == "describe-producers" else None))
        pending = None if kind == "describe-producers" else pending
    return paste


def _not_ours(line: str, text: str) -> str:
    other = identify(text)
    if other is not None and not other.what.startswith("kafka-transactions"):
        return other.hint("kafka-transactions output")
    return (f"{shown(line.strip(), 80)!r} is not a line kafka-transactions prints (a table header of list, describe, "
            "describe-producers or find-hanging, a row of one, or the tool's error)")


def _int(value: str, column: str, source: str, n: int, low: int, high: int, none: bool = False) -> str:
    if none and value == "None":
        return value
    number = int(value) if _DIGITS.fullmatch(value) else None  # int() would take '١' and '1_0'
    if number is None or not low <= number <= high:
        raise InputError(source, f"{column} {shown(value, 40)!r} is not {'None or ' if none else ''}an integer "
                                 f"from {low} to {high}", n)
    return value


_LONG = (-(1 << 63), (1 << 63) - 1)
_INT = (-(1 << 31), (1 << 31) - 1)
_SHORT = (-1, (1 << 15) - 1)
# The cells that are numbers, per subcommand: column -> (range, None allowed)
_NUMBERS: dict[str, dict[str, tuple[tuple[int, int], bool]]] = {
    "list": {"Coordinator": (_INT, False), "ProducerId": (_LONG, False)},
    "describe": {"CoordinatorId": (_INT, False), "ProducerId": (_LONG, False), "ProducerEpoch": (_SHORT, False),
                 "TransactionTimeoutMs": (_INT, False), "CurrentTransactionStartTimeMs": (_LONG, True),
                 "TransactionDurationMs": (_LONG, True)},
    "describe-producers": {"ProducerId": (_LONG, False), "ProducerEpoch": (_SHORT, False),
                           "LatestCoordinatorEpoch": (_INT, False), "LastSequence": (_INT, False),
                           "LastTimestamp": (_LONG, False), "CurrentTransactionStartOffset": (_LONG, True)},
    "find-hanging": {"Partition": ((0, _INT[1]), False), "ProducerId": (_LONG, False), "ProducerEpoch": (_SHORT, False),
                     "CoordinatorEpoch": (_INT, False), "StartOffset": (_LONG, False), "LastTimestamp": (_LONG, False),
                     "Duration(min)": (_LONG, False)},
}


def _row(kind: str, cells: list[str], source: str, n: int) -> list[str]:
    header = HEADERS[kind]
    if kind == "describe" and len(cells) == len(header) - 1:
        cells = [*cells, ""]  # no partitions: the last cell is blank (only spaces before its tab)
    if len(cells) != len(header):
        raise InputError(source, f"a {kind} row has {len(cells)} cells, not {len(header)} ({', '.join(header)})"
                                 + ("; a name with spaces cannot be read once the tabs became spaces"
                                    if len(cells) > len(header) else ""), n)
    for column, ((low, high), none) in _NUMBERS[kind].items():
        _int(cells[header.index(column)], column, source, n, low, high, none)
    if "TransactionState" in header and cells[header.index("TransactionState")] not in STATES:
        raise InputError(source, f"TransactionState {shown(cells[header.index('TransactionState')], 40)!r} is not "
                                 f"one of Kafka's ({', '.join(STATES)})", n)
    if kind == "describe" and cells[-1]:
        for tp in cells[-1].split(","):
            if _TP.fullmatch(tp) is None:
                raise InputError(source, f"TopicPartitions: {shown(tp, 60)!r} is not a topic-partition", n)
    return cells


def check_partition_option(value: str | None) -> str | None:
    m = None if value is None else _TP.fullmatch(value)
    if value is not None and (m is None or topic_problem(m.group(1)) is not None or len(m.group(2)) > 10):
        raise InputError("--partition", f"{shown(value, 80)!r} is not a topic-partition (TOPIC-N)")
    return value


def read_pastes(files: Sequence[str], partition: str | None = None) -> Paste:
    """Every file's tables in one paste ('-': stdin); a paste with no table is an InputError naming why."""
    check_partition_option(partition)
    if sum(f == "-" for f in files) > 1:
        raise InputError("FILE", "'-' (stdin) given more than once")
    whole = Paste()
    for f in files:
        source = "<stdin>" if f == "-" else f
        text = sys.stdin.read() if f == "-" else read_text(f)
        if not text.strip():
            raise InputError(source, "is empty")
        one = parse(text, source)
        if not one.tables:
            said = f" (the tool printed: {one.tool_errors[0][2]})" if one.tool_errors else ""
            raise InputError(source, f"has no kafka-transactions table, nothing to verify{said}")
        whole.tables += one.tables
        whole.tool_errors += one.tool_errors
    unnamed = [i for i, t in enumerate(whole.tables) if t.kind == "describe-producers" and t.partition is None]
    if partition is not None and len(unnamed) > 1:
        raise InputError("--partition", f"names one partition, and {len(unnamed)} describe-producers tables have "
                                        "none: paste each one's command line above it instead")
    if partition is not None and unnamed:
        t = whole.tables[unnamed[0]]
        whole.tables[unnamed[0]] = Table(t.kind, t.source, t.line, t.rows, partition)
    elif unnamed:
        first = whole.tables[unnamed[0]]
        raise InputError(f"{first.source}:{first.line}",
                         "describe-producers does not print its partition: give --partition TOPIC-N, or paste the "
                         "command line ('$ kafka-transactions.sh ... describe-producers --topic T --partition N') "
                         "above its table")
    if partition is not None and not unnamed:
        raise InputError("--partition", "names the partition of a describe-producers table without its command "
                                        "line, and there is none")
    return whole
