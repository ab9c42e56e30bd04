"""The storage model (`kcheck.model.storage`) as a `kcheck.model.interface.Model`, with its state invariants.

`StorageModel` is `kcheck.model.storage.StorageSystem` (the transition system) plus the properties, checked in
every state over the model's history variables: `storage.leader-log` and `storage.follower-log` (every `log.*`
invariant of `kcheck.invariants.log_storage` on the two logs' views), `storage.consumer-sees-latest` (Kafka's
compaction guarantee: a consumer that reads from the log start to the head within delete.retention.ms sees every
key's latest value or its tombstone), `storage.committed-kept`, `storage.follower-copy` and
`storage.compaction-lag` (KIP-58). Run it with the engines of `kcheck.model.search`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kcheck.invariants.log_storage import check_log
from kcheck.model.interface import StateInvariant
from kcheck.model.storage.model import StorageSystem, _leader_records, follower_view, leader_view
from kcheck.model.storage.state import NOT_SEEN, Config, State, key_name


def _first(report_violations: Sequence[Any]) -> str | None:
    if not report_violations:
        return None
    v = report_violations[0]
    return f"{v.invariant} at {v.where}: {v.message}"


def leader_log_holds(s: State) -> str | None:
    return _first(check_log(leader_view(s)).violations)


def follower_log_holds(s: State) -> str | None:
    return None if s.follower is None else _first(check_log(follower_view(s.follower)).violations)


def _show(v: int | None) -> str:
    return "a tombstone" if v is None else ("nothing" if v == NOT_SEEN else f"v{v}")


def consumer_sees_latest(cfg: Config) -> Callable[[State], str | None]:
    def holds(s: State) -> str | None:
        c = s.consumer
        if c is None or c.pos is None or c.reset or c.pos < s.leader.hw:
            return None  # not caught up, or its read was cut by retention
        if s.clock - c.since >= cfg.delete_retention:
            return None  # Kafka promises the tombstones only to a read that reaches the head within the retention
        expected: dict[int, int | None] = {}
        for off in range(c.start, c.pos):
            key, value = s.produced[off]
            expected[key] = value
        for key in range(cfg.keys):
            want, got = expected.get(key, NOT_SEEN), c.seen[key]
            ok = got == want or (want is None and got == NOT_SEEN)
            if not ok:
                return (f"consumer read offsets {c.start}..{c.pos - 1} in {s.clock - c.since} tick(s) and holds "
                        f"{_show(got)} for key {key_name(key)}, whose latest record is {_show(want)}")
        return None
    return holds


def committed_kept(s: State) -> str | None:
    L = s.leader
    held: dict[int, list[int]] = {}
    for r in _leader_records(L):
        held.setdefault(r.key, []).append(r.offset)
    latest: dict[int, int] = {}
    for off in range(min(L.hw, len(s.produced))):
        latest[s.produced[off][0]] = off
    for key, off in latest.items():
        value = s.produced[off][1]
        if value is None or off < L.log_start:
            continue
        if not any(o >= off for o in held.get(key, [])):
            return (f"key {key_name(key)}: its latest committed record (offset {off}, v{value}) is gone and no "
                    "newer record of the key is in the log")
    return None


def compaction_lag(cfg: Config) -> Callable[[State], str | None]:
    """KIP-58: min.compaction.lag.ms is the least time a record stays uncompacted (the cleaner stops at the first
    segment whose largest timestamp is within the lag, and a record is no younger than its segment's largest)."""
    def holds(s: State) -> str | None:
        if cfg.min_compaction_lag <= 0:
            return None
        L = s.leader
        held = {r.offset for r in _leader_records(L)}
        for off in range(L.log_start, L.leo):
            age = s.clock - s.produced_at[off]
            if age < cfg.min_compaction_lag and off not in held:
                return f"offset {off} was compacted {age} tick(s) after it was written (min.compaction.lag " \
                       f"{cfg.min_compaction_lag})"
        return None
    return holds


def follower_copy(s: State) -> str | None:
    f, L = s.follower, s.leader
    if f is None:
        return None
    if f.leo > L.leo:
        return f"the follower's log end {f.leo} is past the leader's {L.leo}"
    for r in f.recs:
        if r.offset >= len(s.produced) or s.produced[r.offset] != (r.key, r.value):
            return f"the follower holds offset {r.offset}, which the leader did not write there"
    have = {r.offset for r in f.recs}
    for r in _leader_records(L):
        if f.log_start <= r.offset < f.leo and r.offset not in have:
            return f"the follower lacks offset {r.offset}, which the leader holds below the follower's end"
    return None


class StorageModel(StorageSystem):
    """`kcheck.model.interface.Model` over the storage model's `State`: the transition system and its invariants."""

    def invariants(self) -> Sequence[StateInvariant[State]]:
        return [
            StateInvariant("storage.leader-log", "the leader's log passes every log.* invariant", leader_log_holds),
            StateInvariant("storage.follower-log", "the follower's log passes every log.* invariant",
                           follower_log_holds),
            StateInvariant("storage.consumer-sees-latest", "a consumer reading from the log start to the head "
                           "within delete.retention.ms holds every key's latest value or its deletion",
                           consumer_sees_latest(self.cfg)),
            StateInvariant("storage.committed-kept", "each key's latest committed record stays until superseded",
                           committed_kept),
            StateInvariant("storage.follower-copy", "the follower holds what the leader wrote, where it wrote it",
                           follower_copy),
            StateInvariant("storage.compaction-lag", "no record younger than min.compaction.lag.ms is compacted",
                           compaction_lag(self.cfg)),
        ]
