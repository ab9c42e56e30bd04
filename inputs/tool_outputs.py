"""Which Kafka tool printed a text, and which kcheck command reads it: the hint a command gives for input it does
not take (`kcheck assign` handed `kafka-consumer-groups --describe` output, say), instead of a bare parse error.

Recognised by the lines each tool prints (their sources in apache/kafka): `kafka-consumer-groups`
(`tools/src/main/java/org/apache/kafka/tools/consumer/group/ConsumerGroupCommand.java`, before 3.8
`core/src/main/scala/kafka/admin/ConsumerGroupCommand.scala`), `kafka-topics --describe` (`TopicCommand`),
`kafka-reassign-partitions` (`ReassignPartitionsCommand`), `kafka-dump-log` (`DumpLogSegments`), `kafka-log-dirs`
(`LogDirsCommand`), `kafka-transactions` (`tools/src/main/java/org/apache/kafka/tools/TransactionsCommand.java`,
KIP-664), and the reassignment JSON those tools read and write.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class KafkaOutput:
    what: str  # e.g. "kafka-consumer-groups --describe output (--members --verbose)"
    reads: str  # which kcheck command reads it, e.g. "`kcheck verify-group` reads it"

    def hint(self, expected: str) -> str:
        """One line for an error: what the text is instead of `expected`, and where it is read."""
        return f"this is {self.what}, not {expected}: {self.reads}"


_PLAN_READERS = "`kcheck verify` and `kcheck verify-reassignment` read it"
_CG_MODES = (  # (header pattern, mode), most specific first
    (re.compile(r"\bTOPIC\s+PARTITION\s+(?:LEADER-EPOCH\s+)?CURRENT-OFFSET\s+LOG-END-OFFSET\s+LAG\b"), "offsets"),
    (re.compile(r"\bCONSUMER-ID\b.*#PARTITIONS\s+(?:ASSIGNMENT|CURRENT-EPOCH)"), "--members --verbose"),
    (re.compile(r"\bCONSUMER-ID\b.*#PARTITIONS\b"), "--members"),
    (re.compile(r"\bCOORDINATOR \(ID\)\s+ASSIGNMENT-STRATEGY\s+STATE\b"), "--state"),
)
_CG_OTHER = (
    (re.compile(r"\bTOPIC\s+PARTITION\s+NEW-OFFSET\b"), "kafka-consumer-groups --reset-offsets output"),
    (re.compile(r"^\s*TOPIC\s+PARTITION\s+STATUS\s*$", re.M), "kafka-consumer-groups --delete-offsets output"),
)
_CG_NOTE = re.compile(r"^(?:(?:Warning: )?Consumer group '.*' (?:has no active members|is rebalancing)\.|"
                      r"Error: (?:The )?[Cc]onsumer group '.*' does not exist\.|Error: Executing consumer group "
                      r"command failed due to .*)$", re.M)
_TOPICS = re.compile(r"^\s*Topic:\s*\S+\s+(?:TopicId:|PartitionCount:|Partition:)", re.M)
_REASSIGN = re.compile(r"^(?:Current partition replica assignment|Proposed partition reassignment configuration|"
                       r"Status of partition reassignment:|Successfully started partition reassignments?)", re.M)
_DUMP = re.compile(r"^(?:Dumping \S|(?:Log )?[Ss]tarting offset: -?\d|baseOffset: -?\d+ lastOffset:)", re.M)
# TransactionsCommand's table headers (ToolsUtils.prettyPrintTable: cells padded, then a tab or, copied from a
# terminal, spaces)
_TXN = (
    (re.compile(r"^TransactionalId\s+Coordinator\s+ProducerId\s+TransactionState\b", re.M), "list"),
    (re.compile(r"^CoordinatorId\s+TransactionalId\s+ProducerId\s+ProducerEpoch\s+TransactionState\b", re.M),
     "describe"),
    (re.compile(r"^ProducerId\s+ProducerEpoch\s+LatestCoordinatorEpoch\s+LastSequence\b", re.M),
     "describe-producers"),
    (re.compile(r"^Topic\s+Partition\s+ProducerId\s+ProducerEpoch\s+CoordinatorEpoch\s+StartOffset\b", re.M),
     "find-hanging"),
)
_LOG_DIRS = re.compile(r"^(?:Querying brokers for log directories information|Received log directory information)",
                       re.M)


def identify(text: str) -> KafkaOutput | None:
    """The Kafka tool output `text` is, or None when it looks like none of them (a group JSON, say)."""
    modes = [mode for pattern, mode in _CG_MODES if pattern.search(text)]
    if modes or _CG_NOTE.search(text):
        # `--members --verbose` also matches the `--members` pattern; name the most specific once.
        shown = [m for m in dict.fromkeys(modes) if not (m == "--members" and "--members --verbose" in modes)]
        mode = f" ({', '.join(shown)})" if shown else ""
        return KafkaOutput(f"kafka-consumer-groups --describe output{mode}", "`kcheck verify-group` reads it")
    for pattern, what in _CG_OTHER:
        if pattern.search(text):
            return KafkaOutput(what, "`kcheck verify-group` reads --describe output only")
    txn = [name for pattern, name in _TXN if pattern.search(text)]
    if txn:
        return KafkaOutput(f"kafka-transactions output ({', '.join(txn)})", "`kcheck verify-transactions` reads it")
    if _TOPICS.search(text):
        return KafkaOutput("kafka-topics --describe output", "`kcheck verify` reads it")
    if _REASSIGN.search(text):
        return KafkaOutput("kafka-reassign-partitions output", _PLAN_READERS)
    if _DUMP.search(text):
        return KafkaOutput("kafka-dump-log output", "`kcheck verify-log` reads it")
    if _LOG_DIRS.search(text):
        return KafkaOutput("kafka-log-dirs --describe output", "`kcheck verify-log` reads it")
    return _json_output(text)


def _json_output(text: str) -> KafkaOutput | None:
    start = text.lstrip().removeprefix("\ufeff")[:1]
    if start not in ("{", "["):
        return None
    try:
        doc = json.loads(text.lstrip().removeprefix("\ufeff"))
    except (ValueError, RecursionError):
        return None
    if isinstance(doc, dict) and isinstance(doc.get("partitions"), list) and "version" in doc:
        return KafkaOutput("a partition reassignment JSON", _PLAN_READERS)
    if isinstance(doc, dict) and isinstance(doc.get("brokers"), list) and any(
            isinstance(b, dict) and "logDirs" in b for b in doc["brokers"]):
        return KafkaOutput("kafka-log-dirs --describe output", "`kcheck verify-log` reads it")
    return None
