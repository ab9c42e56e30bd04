"""The storage model's state: one partition's leader log (segments with their offset indexes), one follower's
copy, one consumer, the clock, and history variables (what was produced at each offset, what the consumer saw).

Everything is a frozen dataclass of tuples and ints, so states hash and compare by value. Records take one byte
each and each is its own batch, so a record's file position is its place in its segment.
"""

from __future__ import annotations

from dataclasses import dataclass

NOT_SEEN = -1  # Consumer.seen: the consumer has read no record of the key


@dataclass(frozen=True)
class Config:
    """The bounds of a search and the topic's settings (in the model's coarse clock ticks)."""

    keys: int = 2  # key space: keys 0..keys-1 (shown as a, b, c)
    records: int = 3  # produce budget
    max_segments: int = 3  # a roll is enabled below this many segments
    max_clock: int = 2  # the clock runs 0..max_clock
    delete_retention: int = 1  # delete.retention.ms, in ticks
    min_compaction_lag: int = 0  # min.compaction.lag.ms, in ticks
    tombstones: bool = True  # the producer may write null values
    retention: bool = False  # cleanup.policy=compact,delete: retention runs delete the oldest segments
    follower: bool = True  # a second replica fetching from the leader
    consumer: bool = True  # a consumer that reads the log from its start, at its own pace
    commits: bool = False  # the consumer commits its position (adds states; no property reads it)
    crashes: int = 0  # unclean shutdowns of the leader (it loses records nobody has seen)
    # A fixed producer script, (key, tombstone?) per record, taken in order (the other actions still interleave
    # freely); None lets every produce choose any key and either kind, up to `records`.
    workload: tuple[tuple[int, bool], ...] | None = None


@dataclass(frozen=True)
class Rec:
    offset: int
    key: int
    value: int | None  # a unique id per produce; None = a tombstone
    ts: int  # the clock when produced
    horizon: int | None = None  # KIP-534: the delete horizon the cleaner stamped on the tombstone's batch


@dataclass(frozen=True)
class Seg:
    base: int
    recs: tuple[Rec, ...]
    mtime: int  # the clock at the last append (a cleaned segment keeps its own)
    index: tuple[tuple[int, int], ...] = ()  # offset index: (offset, position)


@dataclass(frozen=True)
class Leader:
    segments: tuple[Seg, ...]  # oldest first, the last one active
    log_start: int
    leo: int  # log end offset
    hw: int  # high watermark
    clean_offset: int  # the cleaner checkpoint: the first dirty offset


@dataclass(frozen=True)
class Follower:
    base: int  # its log's base offset (a full truncation starts a new one)
    recs: tuple[Rec, ...]
    log_start: int
    leo: int
    hw: int
    in_isr: bool


@dataclass(frozen=True)
class Consumer:
    pos: int | None  # the next offset to fetch; None before it starts
    since: int  # the clock when it started at the log start
    start: int  # the log start offset it started from
    seen: tuple[int | None, ...]  # per key: the last value read (None: a tombstone), NOT_SEEN if none
    reset: bool  # its position fell below the log start and was reset (its read is no snapshot)
    committed: int


@dataclass(frozen=True)
class State:
    clock: int
    leader: Leader
    follower: Follower | None
    consumer: Consumer | None
    produced: tuple[tuple[int, int | None], ...]  # history: (key, value) written at each offset below the LEO
    sent: int  # produce actions so far (value ids)
    crashes: int
    produced_at: tuple[int, ...] = ()  # history: the clock when each offset below the LEO was written


def key_name(k: int) -> str:
    return "abcdefgh"[k] if k < 8 else f"k{k}"


def initial_state(cfg: Config) -> State:
    leader = Leader((Seg(0, (), 0),), 0, 0, 0, 0)
    follower = Follower(0, (), 0, 0, 0, True) if cfg.follower else None
    consumer = Consumer(None, 0, 0, (NOT_SEEN,) * cfg.keys, False, 0) if cfg.consumer else None
    return State(0, leader, follower, consumer, (), 0, 0)
