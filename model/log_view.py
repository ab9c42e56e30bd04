"""What kcheck knows of one partition's log: segments (oldest first, the last one active) with their records,
sizes, sparse offset and time indexes and batch positions, the log start offset and the high watermark.

Built from Kafka's own output (`kafka-dump-log.sh`, kcheck.inputs.log_tools), from the storage reference
(`reference/log_segment.py`, `log_retention.py`, `log_cleaner.py`) and from the storage model (`model/storage`);
checked by the `log.*` invariants of `kcheck.invariants.log_storage`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

INT_MAX = 2**31 - 1  # an index stores offsets relative to the segment's base as 4-byte ints


@dataclass(frozen=True)
class LogRecord:
    offset: int
    key: str | None
    value: str | None  # None = a tombstone
    timestamp: int = -1  # -1 when unknown
    # The bytes the record takes in its segment file (a batch's bytes spread over its records), 0 if unknown. Leave
    # every record of a segment at 0 when the segment holds bytes no record accounts for (an empty batch the
    # cleaner keeps, KAFKA-17076): sizes are checked only where every record's is known.
    size: int = 0
    # KIP-534: the delete horizon (ms) an earlier cleaning pass stamped on the record's batch (the batch's
    # deleteHorizonMs, stored as its base timestamp); None when the batch carries none.
    delete_horizon: int | None = None


@dataclass(frozen=True)
class LogSegmentView:
    base_offset: int
    records: tuple[LogRecord, ...]
    size_bytes: int | None = None
    offset_index: tuple[tuple[int, int], ...] = ()  # (offset, position)
    time_index: tuple[tuple[int, int], ...] = ()  # (timestamp, offset)
    positions: tuple[int, ...] = ()  # file position of each record's batch, if known


@dataclass(frozen=True)
class LogView:
    partition: str
    segments: tuple[LogSegmentView, ...]  # oldest first, the last one active
    log_start_offset: int
    high_watermark: int | None = None
    compacted: bool = False


def records(view: LogView) -> Iterator[LogRecord]:
    for seg in view.segments:
        yield from seg.records


def log_end_offset(view: LogView) -> int:
    """The next offset to be written: one past the last record, or the active segment's base when it is empty
    (Kafka keeps the last batch of a log through cleaning, so a record view gives the end)."""
    if not view.segments:
        return view.log_start_offset
    active = view.segments[-1]
    return active.records[-1].offset + 1 if active.records else active.base_offset
