"""The storage model: one partition's storage under produce, roll, retention, the cleaner, a consumer and a
follower, as a transition system (`StorageSystem`; `kcheck.invariants.storage_model.StorageModel` adds the
invariants and is what the engines in `kcheck.model.search` run).

Actions (each one step; the engines interleave them freely within the bounds of `Config`):

- `produce k v` / `produce k null`: the leader appends a record (a tombstone when null) to its active segment;
- `roll`: the active segment is sealed and a new one starts at the log end (segment.bytes / segment.ms);
- `tick`: the clock advances one coarse step (delete.retention.ms and min.compaction.lag.ms are counted in ticks);
- `clean`: one cleaner pass (LogCleaner / Cleaner.doClean): an offset map of the dirty section up to the first
  uncleanable offset, then every segment below the map's end rewritten keeping each key's latest record;
- `retain`: a retention run deletes the oldest segment (the time or size predicate is left free: any segment the
  rules allow may go), moving the log start offset to the next segment's base;
- `fetch`: the follower fetches one batch at its log end (or resets when below the leader's log start); the leader
  learns the follower's end offset from the same fetch, and the high watermark is the ISR's smallest end offset;
- `isr-shrink`: the lagging follower leaves the ISR (the high watermark moves to the leader's log end); it comes
  back on a fetch that reaches the high watermark;
- `consume-start`, `consume`, `commit`: a consumer starts at the log start offset and reads one record below the
  high watermark per step, keeping the last value it read per key (an application's materialized table);
- `crash`: an unclean shutdown of the leader loses the records nobody has seen (above the high watermark, the
  follower's end and the consumer's position; Kafka flushes a rolled segment asynchronously, so they may be in
  any segment), and recovery rebuilds what it rebuilds.

The properties are state invariants over history variables: `storage.leader-log` and `storage.follower-log` (every
`log.*` invariant of `kcheck.invariants.log_storage` on the two logs' views), `storage.consumer-sees-latest`
(Kafka's compaction guarantee: a consumer that reads from the log start to the head within delete.retention.ms
sees every key's latest value or its tombstone), `storage.committed-kept` (the latest committed record of each key
stays until a newer one of its key is in the log, it is a tombstone, or retention passed it) and
`storage.follower-copy` (the follower holds only what the leader wrote, at the same offsets, and everything the
leader still holds in its range) and `storage.compaction-lag` (KIP-58: no record younger than
min.compaction.lag.ms is compacted away).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, Self

from kcheck.model.log_view import LogRecord, LogSegmentView, LogView
from kcheck.model.storage.rules import PassContext, Rules, Variant, index_entries
from kcheck.model.storage.state import (
    NOT_SEEN,
    Config,
    Consumer,
    Follower,
    Leader,
    Rec,
    Seg,
    State,
    initial_state,
    key_name,
)

Action = tuple[Any, ...]


# ---- views for the log invariants ---------------------------------------------------------------------------------


def _log_records(recs: Iterable[Rec]) -> tuple[LogRecord, ...]:
    return tuple(LogRecord(r.offset, key_name(r.key), None if r.value is None else f"v{r.value}", r.ts, 1, r.horizon)
                 for r in recs)


def leader_view(s: State) -> LogView:
    """The leader's log; when its last records are gone (a crash cut the log below an already-cleaned tail), an
    empty active segment at the log end keeps the view's end offset right (a LogView holds no empty batches)."""
    L = s.leader
    segs = [LogSegmentView(g.base, _log_records(g.recs), len(g.recs), g.index, (), tuple(range(len(g.recs))))
            for g in L.segments]
    last = L.segments[-1]
    end = last.recs[-1].offset + 1 if last.recs else last.base
    if L.leo > end:
        segs.append(LogSegmentView(L.leo, (), 0))
    return LogView("leader", tuple(segs), L.log_start, L.hw, True)


def follower_view(f: Follower) -> LogView:
    """The follower's log as one segment, closed at its log end by an empty active segment when its last records
    were compacted away on the leader before it fetched them (Kafka keeps an empty batch there since KAFKA-17076;
    a LogView holds no empty batches)."""
    segs = [LogSegmentView(f.base, _log_records(f.recs), len(f.recs), index_entries(f.recs), (),
                           tuple(range(len(f.recs))))]
    end = f.recs[-1].offset + 1 if f.recs else f.base
    if f.leo > end:
        segs.append(LogSegmentView(f.leo, (), 0))
    return LogView("follower", tuple(segs), f.log_start, f.hw, True)


# ---- the steps ----------------------------------------------------------------------------------------------------


def _leader_records(L: Leader) -> Iterable[Rec]:
    for g in L.segments:
        yield from g.recs


def _advance_hw(L: Leader, f: Follower | None) -> Leader:
    """The high watermark: the smallest log end offset in the ISR, never going back."""
    end = L.leo if f is None or not f.in_isr else min(L.leo, f.leo)
    return replace(L, hw=max(L.hw, end)) if end > L.hw else L


def _produce(s: State, key: int, tombstone: bool) -> State:
    L = s.leader
    value = None if tombstone else s.sent + 1
    active = L.segments[-1]
    rec = Rec(L.leo, key, value, s.clock)
    recs = active.recs + (rec,)
    seg = Seg(active.base, recs, s.clock, active.index + ((rec.offset, len(active.recs)),) if active.recs else
              active.index)
    L = replace(L, segments=L.segments[:-1] + (seg,), leo=L.leo + 1)
    L = _advance_hw(L, s.follower)
    return replace(s, leader=L, produced=s.produced + ((key, value),), sent=s.sent + 1,
                   produced_at=s.produced_at + (s.clock,))


def _roll(s: State) -> State:
    L = s.leader
    return replace(s, leader=replace(L, segments=L.segments + (Seg(L.leo, (), s.clock),)))


def _clean(s: State, rules: Rules, cfg: Config) -> State | None:
    L, now = s.leader, s.clock
    first_dirty = L.clean_offset if L.log_start <= L.clean_offset <= L.leo else L.log_start
    upper = rules.uncleanable(L, now, cfg, first_dirty)
    dirty = [r for r in _leader_records(L) if first_dirty <= r.offset < upper]
    if not dirty:
        return None
    latest: dict[int, int] = {}
    for r in dirty:
        latest[r.key] = r.offset
    map_end = dirty[-1].offset
    clean_segs = [g for g in L.segments if g.base < first_dirty]
    legacy = clean_segs[-1].mtime - cfg.delete_retention if clean_segs else None
    ctx = PassContext(now, cfg.delete_retention, legacy)
    segs: list[Seg] = []
    for g in L.segments:
        if g.base > map_end:
            segs.append(g)
            continue
        kept: list[Rec] = []
        for r in g.recs:
            if r.offset > map_end or r.value is not None and r.offset >= latest.get(r.key, -1):
                kept.append(r)
            elif r.offset >= latest.get(r.key, -1):  # the key's latest record, a tombstone
                retain, horizon = rules.tombstone(r, g, ctx)
                if retain:
                    kept.append(replace(r, horizon=horizon))
        recs = tuple(kept)
        segs.append(replace(g, recs=recs, index=index_entries(recs)))
    return replace(s, leader=replace(L, segments=tuple(segs), clean_offset=map_end + 1))


def _retain(s: State, rules: Rules) -> State | None:
    L = s.leader
    if not rules.deletable(L):
        return None
    segs = L.segments
    if len(segs) == 1:  # Kafka rolls a new active segment before deleting the last one
        segs = segs + (Seg(L.leo, (), s.clock),)
    rest = segs[1:]
    return replace(s, leader=replace(L, segments=rest, log_start=max(L.log_start, rest[0].base)))


def _fetch(s: State, rules: Rules) -> State | None:
    f, L = s.follower, s.leader
    assert f is not None
    if f.leo < L.log_start:
        return replace(s, follower=rules.out_of_range(f, L))
    nxt = next((r for r in _leader_records(L) if r.offset >= f.leo), None)
    recs, leo = (f.recs + (nxt,), nxt.offset + 1) if nxt is not None else (f.recs, L.leo)
    in_isr = f.in_isr or leo >= L.hw
    f2 = replace(f, recs=recs, leo=leo, in_isr=in_isr)
    L2 = _advance_hw(L, f2)
    hw = min(L2.hw, leo)
    ls = max(f.log_start, min(L2.log_start, hw))
    f2 = replace(f2, hw=max(f.hw, hw), log_start=ls, recs=tuple(r for r in recs if r.offset >= ls))
    out = replace(s, leader=L2, follower=f2)
    return out if out != s else None


def _isr_shrink(s: State) -> State | None:
    f = s.follower
    assert f is not None
    if not f.in_isr or f.leo >= s.leader.leo:
        return None
    f2 = replace(f, in_isr=False)
    return replace(s, follower=f2, leader=_advance_hw(s.leader, f2))


def _consume(s: State) -> State | None:
    c, L = s.consumer, s.leader
    assert c is not None and c.pos is not None
    if c.pos >= L.hw:
        return None
    if c.pos < L.log_start:  # out of range: auto.offset.reset=earliest
        return replace(s, consumer=replace(c, pos=L.log_start, reset=True))
    nxt = next((r for r in _leader_records(L) if c.pos <= r.offset < L.hw), None)
    if nxt is None:
        return replace(s, consumer=replace(c, pos=L.hw))
    seen = c.seen[:nxt.key] + (nxt.value,) + c.seen[nxt.key + 1:]
    return replace(s, consumer=replace(c, pos=nxt.offset + 1, seen=seen))


def _crash(s: State, rules: Rules) -> State | None:
    L = s.leader
    keep = L.hw
    if s.follower is not None:
        keep = max(keep, s.follower.leo)
    if s.consumer is not None and s.consumer.pos is not None:
        keep = max(keep, s.consumer.pos)
    if keep >= L.leo:
        return None
    segs = tuple(rules.recover(g, keep) for g in L.segments if g.base <= keep or g is L.segments[0])
    L2 = replace(L, segments=segs, leo=keep, clean_offset=min(L.clean_offset, keep))
    return replace(s, leader=L2, produced=s.produced[:keep], crashes=s.crashes + 1, produced_at=s.produced_at[:keep])


# ---- the properties -----------------------------------------------------------------------------------------------


# ---- the Model ----------------------------------------------------------------------------------------------------


class StorageSystem:
    """The transition system over `State` (see the module docstring): everything of a `kcheck.model.interface.Model`
    but its invariants, which `kcheck.invariants.storage_model.StorageModel` adds (the model imports nothing of the
    invariants)."""

    def __init__(self, cfg: Config | None = None, rules: Rules | None = None) -> None:
        self.cfg = cfg or Config()
        self.rules = rules or Rules.current()
        self.name = f"storage[{self.rules.name}]"
        n = self.cfg.keys
        symmetric = 2 <= n <= 3 and self.cfg.workload is None  # a workload script names its keys
        self._perms = [p for p in itertools.permutations(range(n)) if list(p) != list(range(n))] if symmetric else []

    @classmethod
    def for_variant(cls, variant: Variant, rules: Rules | None = None, **overrides: Any) -> Self:
        """The variant's smallest setting, with its rules (or `rules`, e.g. today's, to check they are clean)."""
        cfg = replace(Config(), **{**dict(variant.settings), **overrides})
        return cls(cfg, rules or variant.rules)

    def initial_states(self) -> Iterable[State]:
        return [initial_state(self.cfg)]

    def actions(self, s: State) -> Iterable[Action]:
        cfg, L = self.cfg, s.leader
        out: list[Action] = []
        if cfg.workload is not None:
            if s.sent < len(cfg.workload):
                out.append(("produce", *cfg.workload[s.sent]))
        elif s.sent < cfg.records:
            for k in range(cfg.keys):
                out.append(("produce", k, False))
                if cfg.tombstones:
                    out.append(("produce", k, True))
        if L.segments[-1].recs and len(L.segments) < cfg.max_segments:
            out.append(("roll",))
        if s.clock < cfg.max_clock:
            out.append(("tick",))
        out.append(("clean",))
        if cfg.retention:
            out.append(("retain",))
        if s.follower is not None:
            out.append(("fetch",))
            out.append(("isr-shrink",))
        if s.consumer is not None:
            if s.consumer.pos is None:
                out.append(("consume-start",))
            else:
                out.append(("consume",))
                if cfg.commits and s.consumer.committed != s.consumer.pos:
                    out.append(("commit",))
        if s.crashes < cfg.crashes:
            out.append(("crash",))
        return out

    def step(self, s: State, a: Action) -> State | None:
        kind = a[0]
        if kind == "produce":
            return _produce(s, a[1], a[2])
        if kind == "roll":
            return _roll(s)
        if kind == "tick":
            return replace(s, clock=s.clock + 1)
        if kind == "clean":
            return _clean(s, self.rules, self.cfg)
        if kind == "retain":
            return _retain(s, self.rules)
        if kind == "fetch":
            return _fetch(s, self.rules)
        if kind == "isr-shrink":
            return _isr_shrink(s)
        if kind == "consume-start":
            L = s.leader
            return replace(s, consumer=Consumer(L.log_start, s.clock, L.log_start, (NOT_SEEN,) * self.cfg.keys,
                                                False, 0))
        if kind == "consume":
            return _consume(s)
        if kind == "commit":
            c = s.consumer
            assert c is not None and c.pos is not None
            return replace(s, consumer=replace(c, committed=c.pos))
        if kind == "crash":
            return _crash(s, self.rules)
        raise ValueError(f"unknown storage action {a!r}")

    def encode(self, s: State) -> bytes:
        return repr(_plain(s)).encode()

    def encodings(self, s: State) -> list[bytes]:
        """The encodings of `s` and of its images under `symmetries()`, without building the images."""
        return [repr(_plain(s)).encode()] + [repr(_plain(s, p)).encode() for p in self._perms]

    def symmetries(self) -> Sequence[Callable[[State], State]]:
        """Keys are interchangeable (without a workload script): every non-identity permutation of up to 3 keys."""
        return [_permuting(p) for p in self._perms]

    def describe(self, a: Action) -> str:
        if a[0] == "produce":
            return f"produce {key_name(a[1])} {'null' if a[2] else 'value'}"
        return a[0]

    def kind(self, a: Action) -> str:
        return str(a[0])


def _plain(s: State, p: tuple[int, ...] | None = None) -> tuple[Any, ...]:
    """The state as plain tuples, its keys renamed by `p` (None: as they are)."""
    L, f, c = s.leader, s.follower, s.consumer

    def recs(rs: tuple[Rec, ...]) -> tuple[Any, ...]:
        if p is None:
            return tuple((r.offset, r.key, r.value, r.ts, r.horizon) for r in rs)
        return tuple((r.offset, p[r.key], r.value, r.ts, r.horizon) for r in rs)

    lead = (tuple((g.base, recs(g.recs), g.mtime, g.index) for g in L.segments), L.log_start, L.leo, L.hw,
            L.clean_offset)
    fol = None if f is None else (f.base, recs(f.recs), f.log_start, f.leo, f.hw, f.in_isr)
    con: Any = None
    if c is not None:
        seen = c.seen
        if p is not None:
            moved: list[int | None] = [NOT_SEEN] * len(seen)
            for k, v in enumerate(seen):
                moved[p[k]] = v
            seen = tuple(moved)
        con = (c.pos, c.since, c.start, seen, c.reset, c.committed)
    produced = s.produced if p is None else tuple((p[k], v) for k, v in s.produced)
    return (s.clock, lead, fol, con, produced, s.sent, s.crashes, s.produced_at)


def _permuting(p: tuple[int, ...]) -> Callable[[State], State]:
    def rec(r: Rec) -> Rec:
        return replace(r, key=p[r.key])

    def apply(s: State) -> State:
        L = s.leader
        segs = tuple(replace(g, recs=tuple(rec(r) for r in g.recs)) for g in L.segments)
        f = s.follower
        f2 = None if f is None else replace(f, recs=tuple(rec(r) for r in f.recs))
        c = s.consumer
        c2 = None
        if c is not None:
            seen: list[int | None] = [NOT_SEEN] * len(c.seen)
            for k, v in enumerate(c.seen):
                seen[p[k]] = v
            c2 = replace(c, seen=tuple(seen))
        produced = tuple((p[k], v) for k, v in s.produced)
        return replace(s, leader=replace(L, segments=segs), follower=f2, consumer=c2, produced=produced)
    return apply
