"""The storage model (model/storage): today's rules are clean, and each of Kafka's historical storage bugs
(`VARIANTS`, each with its JIRA) is found by the engines of kcheck.model.search at the same bounds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kcheck.invariants.log_storage import check_log
from kcheck.invariants.storage_model import StorageModel
from kcheck.model.search import exhaust, random_search
from kcheck.model.storage import VARIANTS, Config, Rules, State, initial_state, leader_view
from kcheck.model.storage.rules import (
    PassContext,
    delete_horizon_on_batch,
    legacy_delete_horizon,
    uncleanable_active_segment,
    uncleanable_below_hw,
)
from kcheck.model.storage.state import Leader, Rec, Seg


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_each_variant_is_found_and_todays_rules_are_clean_at_its_bounds(name: str) -> None:
    v = VARIANTS[name]
    found = exhaust(StorageModel.for_variant(v), max_seconds=60)
    assert found.stopped_because == "violation", (name, found)
    assert found.counterexample is not None and found.counterexample.invariant in v.violates, found.counterexample
    assert len(found.counterexample.steps) - 1 <= 14  # a short trace (BFS: the shortest at these bounds)
    today = exhaust(StorageModel.for_variant(v, rules=Rules.current()), max_seconds=60)
    assert today.complete and today.counterexample is None, (name, today.counterexample)


@pytest.mark.parametrize(("name", "steps"), [("follower-hw-below-log-start", 12), ("index-kept-after-crash", 12),
                                             ("retention-above-hw", 12), ("clean-above-hw", 8)])
def test_random_search_finds_the_short_variants(name: str, steps: int) -> None:
    found = random_search(StorageModel.for_variant(VARIANTS[name]), seed=0, programs=600, max_steps=steps)
    assert found.counterexample is not None and found.counterexample.invariant in VARIANTS[name].violates


def test_the_legacy_horizon_trace_is_the_kip_534_story() -> None:
    # The shortest run: a consumer reads a's value just before the pass that removes it; a second pass a moment
    # later (no tick) drops the tombstone because the last clean segment was appended a tick after the
    # tombstone's, so the consumer reaches the head holding a value that was deleted.
    found = exhaust(StorageModel.for_variant(VARIANTS["legacy-delete-horizon"]), max_seconds=60)
    assert found.counterexample is not None
    actions = [a for a, _ in found.counterexample.steps[1:]]
    assert actions.count("clean") == 2 and actions.index("consume") < actions.index("clean")
    assert "holds v1 for key a, whose latest record is a tombstone" in found.counterexample.message


def test_todays_rules_are_clean_with_a_free_workload_follower_retention_and_a_crash() -> None:
    cfg = Config(keys=1, records=3, max_segments=3, max_clock=0, consumer=False, retention=True, crashes=1)
    result = exhaust(StorageModel(cfg), max_seconds=60)
    assert result.complete and result.counterexample is None, result.counterexample
    assert result.states > 1000  # it explored something


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [
    Config(keys=2, records=3, max_segments=3, max_clock=1, follower=False),
    Config(keys=1, records=2, max_segments=2, max_clock=1, retention=True, crashes=1, commits=True),
    Config(keys=1, records=3, max_segments=3, max_clock=2, min_compaction_lag=1, follower=False,
           delete_retention=2),
])
def test_todays_rules_are_clean_at_wider_bounds(cfg: Config) -> None:
    result = exhaust(StorageModel(cfg), max_seconds=300)
    assert result.complete and result.counterexample is None, result.counterexample


# ---- the rules on their own -------------------------------------------------------------------------------------


def test_kip_534_stamps_a_horizon_then_drops_the_tombstone_at_it() -> None:
    tomb, seg = Rec(1, 0, None, 0), Seg(0, (), 0)
    assert delete_horizon_on_batch(tomb, seg, PassContext(5, 3, None)) == (True, 8)  # first pass: kept, stamped
    stamped = replace(tomb, horizon=8)
    assert delete_horizon_on_batch(stamped, seg, PassContext(7, 3, None)) == (True, 8)
    assert delete_horizon_on_batch(stamped, seg, PassContext(8, 3, None)) == (False, 8)  # Cleaner: now < horizon


def test_the_legacy_horizon_reads_segment_modification_times() -> None:
    tomb = Rec(1, 0, None, 0)
    assert legacy_delete_horizon(tomb, Seg(0, (), 0), PassContext(9, 1, None)) == (True, None)  # no clean segment
    assert legacy_delete_horizon(tomb, Seg(0, (), 0), PassContext(9, 1, 0)) == (False, None)  # mtime 0 <= 0
    assert legacy_delete_horizon(tomb, Seg(0, (), 1), PassContext(9, 1, 0)) == (True, None)


def test_the_uncleanable_offset_is_bounded_by_the_high_watermark_since_kafka_13194() -> None:
    leader = Leader((Seg(0, (Rec(0, 0, 1, 0), Rec(1, 0, 2, 0)), 0), Seg(2, (), 0)), 0, 2, 1, 0)
    cfg = Config()
    assert uncleanable_below_hw(leader, 0, cfg, 0) == 1
    assert uncleanable_active_segment(leader, 0, cfg, 0) == 2


def test_min_compaction_lag_keeps_a_young_segment_dirty() -> None:
    leader = Leader((Seg(0, (Rec(0, 0, 1, 0),), 0), Seg(1, (Rec(1, 0, 2, 2),), 2), Seg(2, (), 2)), 0, 2, 2, 0)
    assert uncleanable_below_hw(leader, 2, Config(min_compaction_lag=1), 0) == 1  # segment 1's record is at tick 2
    assert uncleanable_below_hw(leader, 3, Config(min_compaction_lag=1), 0) == 2


# ---- the Model contract -------------------------------------------------------------------------------------------


def test_steps_are_deterministic_and_encodings_canonical() -> None:
    m = StorageModel(Config(keys=2, records=2, max_segments=2, max_clock=1, retention=True, crashes=1))
    frontier, seen = list(m.initial_states()), 0
    for _ in range(4):
        nxt = []
        for s in frontier:
            for a in m.actions(s):
                t1, t2 = m.step(s, a), m.step(s, a)
                assert t1 == t2
                if t1 is not None and t2 is not None:
                    assert m.encode(t1) == m.encode(t2)
                    assert not check_log(leader_view(t1)).violations
                    nxt.append(t1)
                    seen += 1
        frontier = nxt[:200]
    assert seen > 100


def test_the_key_symmetry_preserves_every_invariant() -> None:
    m = StorageModel(Config(keys=2, records=3, max_segments=2, max_clock=1, follower=False))
    (swap,) = m.symmetries()
    s = initial_state(m.cfg)
    for a in [("produce", 0, False), ("produce", 1, False), ("consume-start",), ("consume",), ("produce", 0, True)]:
        t = m.step(s, a)
        assert t is not None
        s = t
    image = swap(s)
    assert image != s and m.encodings(s)[1] == m.encode(image)
    assert [inv.holds(s) is None for inv in m.invariants()] == [inv.holds(image) is None for inv in m.invariants()]
    # a produce of key a in the original is a produce of key b in the image
    after, after_image = m.step(s, ("produce", 0, False)), m.step(image, ("produce", 1, False))
    assert after is not None and after_image is not None and m.encode(swap(after)) == m.encode(after_image)


# ---- the transition properties of invariants/log_storage.py on the model's own steps ----------------------------


def _transitions(m: StorageModel, kind: str, limit: int = 4000) -> list[tuple[State, State]]:
    """(before, after) for every `kind` step among the first `limit` states of a BFS."""
    start = next(iter(m.initial_states()))
    seen, frontier = {m.encode(start)}, [start]
    out: list[tuple[State, State]] = []
    while frontier and len(seen) < limit:
        nxt = []
        for s in frontier:
            for a in m.actions(s):
                t = m.step(s, a)
                if t is None:
                    continue
                if a[0] == kind:
                    out.append((s, t))
                if m.encode(t) not in seen:
                    seen.add(m.encode(t))
                    nxt.append(t)
        frontier = nxt
    return out


def test_every_cleaner_pass_and_retention_run_of_todays_rules_passes_check_compaction_and_check_retention() -> None:
    from kcheck.invariants.log_storage import check_compaction, check_retention

    cfg = Config(keys=2, records=3, max_segments=3, max_clock=2, retention=True, consumer=False)
    m = StorageModel(cfg)
    cleans, retains = _transitions(m, "clean"), _transitions(m, "retain")
    assert len(cleans) > 50 and len(retains) > 10
    for s, t in cleans:
        out = check_compaction(leader_view(s), leader_view(t), now_ms=s.clock)
        assert not out, out
    for s, t in retains:
        assert not check_retention(leader_view(s), leader_view(t))


def test_check_compaction_catches_the_cleaner_that_ignores_the_high_watermark() -> None:
    from kcheck.invariants.log_storage import check_compaction

    v = VARIANTS["clean-above-hw"]
    m = StorageModel.for_variant(v, crashes=0)
    caught = {x.invariant for s, t in _transitions(m, "clean")
              for x in check_compaction(leader_view(s), leader_view(t))}
    assert "log.compaction-below-uncleanable" in caught


def test_min_compaction_lag_holds_today_and_is_caught_when_the_cleaner_ignores_it() -> None:
    cfg = Config(keys=1, records=2, max_segments=3, max_clock=1, min_compaction_lag=1, follower=False,
                 consumer=False, tombstones=False)
    today = exhaust(StorageModel(cfg), max_seconds=60)
    assert today.complete and today.counterexample is None, today.counterexample

    def no_lag(leader: Leader, now: int, cfg: Config, first_dirty: int) -> int:
        return min(leader.segments[-1].base, leader.hw)

    found = exhaust(StorageModel(cfg, replace(Rules.current(), name="no-lag", uncleanable=no_lag)), max_seconds=60)
    assert found.counterexample is not None and found.counterexample.invariant == "storage.compaction-lag"
