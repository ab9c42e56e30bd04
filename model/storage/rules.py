"""Storage rules: every decision of the storage model as a named, replaceable function.

`Rules.current()` is today's Kafka (4.x): the cleaner stops at the first uncleanable offset (the active segment's
base, the high watermark as the last stable offset, min.compaction.lag.ms; LogCleanerManager.cleanableOffsets),
a tombstone's batch gets a delete horizon (now + delete.retention.ms) on the first cleaning pass that keeps it and
goes on the first pass at or after that horizon (KIP-534; Cleaner.shouldRetainRecord), a follower whose fetch
offset is below the leader's log start truncates fully and starts at the leader's log start with its high
watermark moved up to it (AbstractFetcherThread out-of-range handling; UnifiedLog.truncateFullyAndStartAt,
KAFKA-9491), recovery after an unclean shutdown rebuilds a truncated segment's index (LogSegment.recover,
OffsetIndex.truncateTo), and retention deletes the oldest segment only when everything in it is below the high
watermark (UnifiedLog.deletableSegments). A historical rule is the same rules with one replaced:

    from dataclasses import replace
    from kcheck.model.storage.rules import Rules, legacy_delete_horizon
    old = replace(Rules.current(), name="old", tombstone=legacy_delete_horizon)

`VARIANTS` holds Kafka's historical storage bugs, each with its JIRA, the smallest setting that shows it and the
invariants it breaks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kcheck.model.rule_set import RuleSet, Variant, variant
from kcheck.model.storage.state import Config, Follower, Leader, Rec, Seg


@dataclass(frozen=True)
class PassContext:
    """What one cleaning pass knows when it judges a tombstone."""

    now: int
    delete_retention: int
    legacy_horizon: int | None  # the pre-KIP-534 horizon: last clean segment's mtime - delete.retention.ms


# ---- the first uncleanable offset -------------------------------------------------------------------------------


def _lag_bound(leader: Leader, now: int, cfg: Config, first_dirty: int) -> int | None:
    """The first non-active segment from the first dirty one whose largest timestamp is within the lag."""
    if cfg.min_compaction_lag <= 0:
        return None
    segs = leader.segments
    for i, seg in enumerate(segs[:-1]):
        if segs[i + 1].base > first_dirty and seg.recs and \
                max(r.ts for r in seg.recs) > now - cfg.min_compaction_lag:
            return seg.base
    return None


def uncleanable_below_hw(leader: Leader, now: int, cfg: Config, first_dirty: int) -> int:
    """Today (KAFKA-13194, 3.0.1/3.1): the active segment's base, the last stable offset (the high watermark without
    transactions) and the first segment inside min.compaction.lag.ms, whichever is lowest."""
    bounds = [leader.segments[-1].base, leader.hw]
    lag = _lag_bound(leader, now, cfg, first_dirty)
    return min(bounds + ([lag] if lag is not None else []))


def uncleanable_active_segment(leader: Leader, now: int, cfg: Config, first_dirty: int) -> int:
    """Before KAFKA-13194: bounded by the first unstable offset, which is undefined without transactions, so the
    high watermark did not bound cleaning when it sat in a non-active segment."""
    bounds = [leader.segments[-1].base]
    lag = _lag_bound(leader, now, cfg, first_dirty)
    return min(bounds + ([lag] if lag is not None else []))


# ---- tombstones -------------------------------------------------------------------------------------------------


def delete_horizon_on_batch(rec: Rec, seg: Seg, ctx: PassContext) -> tuple[bool, int | None]:
    """Today (KIP-534, 3.1): (retain?, the batch's delete horizon). The first pass that keeps the tombstone stamps
    now + delete.retention.ms; a later pass drops it once now reaches the horizon."""
    if rec.horizon is None:
        return True, ctx.now + ctx.delete_retention
    return ctx.now < rec.horizon, rec.horizon


def legacy_delete_horizon(rec: Rec, seg: Seg, ctx: PassContext) -> tuple[bool, int | None]:
    """Before KIP-534 (KAFKA-4545; still Kafka's rule for message format v0/v1 batches): a tombstone is kept while
    its segment was last modified after the last clean segment's last-modified time minus delete.retention.ms.
    Modification times are append times, not the time the cleaner reached the tombstone."""
    if ctx.legacy_horizon is None:  # no clean segment yet (Kafka: horizon 0, below every wall-clock mtime)
        return True, None
    return seg.mtime > ctx.legacy_horizon, None


# ---- a follower below the leader's log start -----------------------------------------------------------------------


def truncate_fully_moving_hw(f: Follower, leader: Leader) -> Follower:
    """Today (KAFKA-9491, 2.5): truncate fully and start at the leader's log start; the high watermark follows."""
    ls = leader.log_start
    return replace(f, base=ls, recs=(), log_start=ls, leo=ls, hw=max(f.hw, ls))


def truncate_fully_keeping_hw(f: Follower, leader: Leader) -> Follower:
    """Before KAFKA-9491: the full truncation moved the log start offset but not the high watermark."""
    ls = leader.log_start
    return replace(f, base=ls, recs=(), log_start=ls, leo=ls)


# ---- recovery after an unclean shutdown ---------------------------------------------------------------------------


def index_entries(recs: tuple[Rec, ...]) -> tuple[tuple[int, int], ...]:
    """The offset index LogSegment.append builds with index.interval.bytes=0: an entry for every batch but a
    segment's first (bytes since the last entry must exceed the interval), at the batch's position."""
    return tuple((r.offset, i) for i, r in enumerate(recs) if i > 0)


def recover_rebuilding_index(seg: Seg, keep: int) -> Seg:
    """Today: the recovered segment's index holds only entries for records still in the log."""
    recs = tuple(r for r in seg.recs if r.offset < keep)
    return replace(seg, recs=recs, index=index_entries(recs))


def recover_keeping_index(seg: Seg, keep: int) -> Seg:
    """An index kept as found after the log was cut (the broken-index-after-kill-9 class of KAFKA-1112)."""
    return replace(seg, recs=tuple(r for r in seg.recs if r.offset < keep))


# ---- retention ----------------------------------------------------------------------------------------------------


def below_high_watermark(leader: Leader) -> bool:
    """Today: the oldest segment may go only when it ends (next base, or the log end) at or below the high
    watermark, and never as the last segment while empty (UnifiedLog.deletableSegments)."""
    segs = leader.segments
    upper = segs[1].base if len(segs) > 1 else leader.leo
    if len(segs) == 1 and not segs[0].recs:
        return False
    return leader.hw >= upper


def regardless_of_high_watermark(leader: Leader) -> bool:
    """Before KAFKA-5634 (0.11.0.1): the retention predicate alone decided, so a segment holding offsets at or above
    the high watermark could go and the log start offset got ahead of the high watermark."""
    return not (len(leader.segments) == 1 and not leader.segments[0].recs)


@dataclass(frozen=True)
class Rules(RuleSet):
    """One choice per decision point (see the module docstring)."""

    name: str
    description: str
    uncleanable: Callable[[Leader, int, Config, int], int]
    tombstone: Callable[[Rec, Seg, PassContext], tuple[bool, int | None]]
    out_of_range: Callable[[Follower, Leader], Follower]
    recover: Callable[[Seg, int], Seg]
    deletable: Callable[[Leader], bool]

    @classmethod
    def current(cls) -> Rules:
        return cls("current", "Kafka 4.x", uncleanable_below_hw, delete_horizon_on_batch, truncate_fully_moving_hw,
                   recover_rebuilding_index, below_high_watermark)


def _variant(name: str, jira: str, bug: str, violates: tuple[str, ...], settings: Mapping[str, Any],
             **rules: Any) -> Variant[Rules]:
    return variant(Rules.current(), name, jira, bug, violates, settings, **rules)


VARIANTS: dict[str, Variant[Rules]] = {v.name: v for v in (
    _variant("legacy-delete-horizon", "KAFKA-4545 (KIP-534)",
             "the tombstone horizon comes from segment modification times, which can lie arbitrarily before the "
             "cleaner reached the tombstone, so a tombstone goes too early and a consumer reading from the log "
             "start within delete.retention.ms misses the deletion",
             ("storage.consumer-sees-latest",),
             {"keys": 2, "workload": ((0, False), (0, True), (1, False), (1, False)), "max_segments": 4,
              "max_clock": 1, "delete_retention": 1, "follower": False, "retention": False, "crashes": 0},
             tombstone=legacy_delete_horizon),
    _variant("clean-above-hw", "KAFKA-13194",
             "with the high watermark in a non-active segment the cleaner was not bounded by it, so an uncommitted "
             "record superseded a committed one; when the uncommitted record is lost the committed value is gone",
             ("storage.committed-kept",),
             {"keys": 1, "records": 2, "max_segments": 2, "max_clock": 0, "tombstones": False, "follower": True,
              "consumer": False, "crashes": 1},
             uncleanable=uncleanable_active_segment),
    _variant("follower-hw-below-log-start", "KAFKA-9491",
             "a follower below the leader's log start truncated fully and moved its log start offset but not its "
             "high watermark, leaving the high watermark below the log start",
             ("storage.follower-log",),
             {"keys": 1, "records": 1, "max_segments": 2, "max_clock": 0, "tombstones": False, "follower": True,
              "consumer": False, "retention": True, "crashes": 0},
             out_of_range=truncate_fully_keeping_hw),
    _variant("retention-above-hw", "KAFKA-5634",
             "segment deletion did not wait for the high watermark, so the log start offset (reported to "
             "followers in fetch responses) got ahead of the high watermark",
             ("storage.leader-log",),
             {"keys": 1, "records": 1, "max_segments": 2, "max_clock": 0, "tombstones": False, "follower": True,
              "consumer": False, "retention": True, "crashes": 0},
             deletable=regardless_of_high_watermark),
    _variant("index-kept-after-crash", "KAFKA-1112",
             "after an unclean shutdown cut the log, the segment's offset index was kept as found: its entries "
             "point past the data",
             ("storage.leader-log",),
             {"keys": 1, "records": 2, "max_segments": 1, "max_clock": 0, "tombstones": False, "follower": True,
              "consumer": False, "crashes": 1},
             recover=recover_keeping_index),
)}
