"""The replication model against Kafka's history: each catalogue row's own event sequence, written
out by hand from reference-notes/known-protocol-bugs.md, must break the row's property under the
row's historical rule and be stopped by Protocol.current(); and the explorers must find each
variant's violation on their own."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from invariants.replication import check_replication
from invariants.replication_explore import Trace, exhaust, explore, replay, resolve_protocol
from invariants.replication_rows import ROW_1, ROW_3, ROW_SCRIPTS, cfg_for, run_script
from kcheck.check import SMALL_EXHAUSTIVE_BOUNDS
from model.replication import VARIANTS, Config, Protocol, initial_state
from model.replication.protocol import (
    end_offset_for_epoch,
    first_offset_after_epoch,
    truncate_to_high_watermark,
)
from model.replication.state import Record

ROWS = [(name, script, expected) for name, (script, expected) in ROW_SCRIPTS.items()]


@pytest.mark.parametrize(("name", "script", "expected"), ROWS, ids=[r[0] for r in ROWS])
def test_row_sequence_breaks_the_rows_property_under_the_historical_rule(name, script, expected):
    played, violated, _ = run_script(VARIANTS[name].protocol, cfg_for(name), script)
    assert played == len(script), f"the row's sequence stopped being possible after step {played}"
    assert expected in violated
    assert expected in VARIANTS[name].violates


@pytest.mark.parametrize(("name", "script", "expected"), ROWS, ids=[r[0] for r in ROWS])
def test_row_sequence_is_harmless_under_todays_rules(name, script, expected):
    played, violated, _ = run_script(Protocol.current(), cfg_for(name), script)
    assert violated == []


def test_row_3_truncation_points_follow_kip_279():
    """The catalogue's numbers: A's cache {1:0, 3:2} with LEO 3, B's {1:0, 2:1} with LEO 2."""
    leader_cache, follower_cache = ((1, 0), (3, 2)), ((1, 0), (2, 1))
    assert first_offset_after_epoch(leader_cache, 3, 2) == (None, 2)  # pre-KIP-279: B keeps y1
    assert end_offset_for_epoch(leader_cache, 3, 2) == (1, 2)  # KIP-279: epoch 1 ends at 2 on A
    assert end_offset_for_epoch(follower_cache, 2, 1) == (1, 1)  # B's own end of epoch 1: truncate to 1
    assert end_offset_for_epoch(leader_cache, 3, 3) == (3, 3)  # the latest epoch ends at the LEO
    assert end_offset_for_epoch(leader_cache, 3, 0) == (0, 0)  # below the first epoch
    assert end_offset_for_epoch(leader_cache, 3, 4)[1] == -1  # above the latest: undefined


def test_current_rules_truncate_row_3_follower_to_the_common_prefix():
    script = ROW_3[:ROW_3.index(("truncate", {"follower": 2})) + 1]
    played, violated, s = run_script(Protocol.current(), cfg_for("one-shot-epoch-lookup"), script)
    assert (played, violated) == (len(script), [])
    assert [r.id for r in s.replica(2).log] == [1]  # y1 dropped, x0 kept


# ---- the explorers find every variant on their own ---------------------------------------------


@pytest.mark.parametrize("name", [n for n in VARIANTS if n != "no-epoch-in-fetch"])
def test_exhaustive_search_finds_each_variant_within_the_rows_length(name):
    v = VARIANTS[name]
    result = exhaust(v.protocol, Config(**v.settings), max_states=150_000, only=set(v.violates))
    assert result.trace is not None, f"{name}: no violation in {result.states} states"
    assert {x.invariant for x in result.trace.violations} <= set(v.violates)
    assert len(result.trace.steps) <= v.minimal_steps
    # the trace replays to the same violation
    steps = replay(result.trace, v.protocol)
    assert steps[-1].violations and len(steps) == len(result.trace.steps) + 1


# Hypothesis at a CI budget reliably finds only the shortest row; every variant but row 4 is found by the
# exhaustive test above, and bench/bench_replication.py measures Hypothesis on all of them.
@pytest.mark.parametrize("name", ["zombie-controller"])
def test_hypothesis_finds_and_shrinks_each_variant(name):
    v = VARIANTS[name]
    r = explore(v.protocol, Config(**v.settings), examples=600, steps=40, seed_value=0, only=set(v.violates))
    assert r.trace is not None, f"{name}: nothing found in {r.examples} programs"
    assert {x.invariant for x in r.trace.violations} & set(v.violates)
    assert len(r.trace.steps) <= 2 * v.minimal_steps  # about as short as the row's own sequence


def test_todays_protocol_holds_in_every_state_at_small_bounds():
    result = exhaust(Protocol.current(), Config(**SMALL_EXHAUSTIVE_BOUNDS))
    assert result.complete and result.trace is None
    assert result.states > 5_000  # the bound is not vacuous


def test_todays_protocol_holds_in_the_first_states_with_every_fault():
    """Breadth first, bounded by a state count: a crash, a fence and an election over two records."""
    cfg = Config(brokers=2, min_isr=1, records=2, max_leader_epoch=3, crashes=1, lossy_crashes=0, fences=1,
                 elections=1, isr_shrinks=0, failovers=0, reads=1)
    result = exhaust(Protocol.current(), cfg, max_states=40_000)
    assert result.trace is None and result.depth >= 8


def test_todays_protocol_survives_random_programs():
    r = explore(Protocol.current(), Config(), examples=150, steps=50, seed_value=3)
    assert r.trace is None, r.trace and r.trace.violations[0].message
    assert r.steps > 3000


# ---- invariants fire on hand-built states ------------------------------------------------------


def test_initial_state_satisfies_every_invariant():
    report = check_replication(initial_state(Config()), Config())
    assert report.ok and len(report.checked) == 9


def test_each_invariant_explains_a_hand_built_violation():
    cfg = Config(brokers=2, min_isr=1)
    s = initial_state(cfg)
    reg = s.registry
    r1, r2 = s.replica(1), s.replica(2)
    cases = {
        "replication.leader-in-isr": replace(s, registry=replace(reg, isr=frozenset({2}))),
        "replication.isr-within-replicas": replace(s, registry=replace(reg, elr=frozenset({1}))),
        "replication.one-leader-per-epoch": replace(s, history=replace(s.history, epoch_leaders=frozenset({(1, 1),
                                                                                                          (1, 2)}))),
        "replication.epochs-monotonic": replace(s, history=replace(s.history, max_leader_epoch=2)),
        "replication.electable-has-committed": replace(
            s.with_replica(replace(r1, log=(Record(1, 1),), hw=1)),
            history=replace(s.history, committed=frozenset({(0, 1)}))),
        "replication.leader-has-acked": replace(s, history=replace(s.history, acked=frozenset({(0, 7)}))),
        "replication.log-matching": s.with_replica(replace(r1, log=(Record(1, 1),), hw=1)).with_replica(
            replace(r2, log=(Record(2, 1),), hw=1)),
        "replication.consistent-reads": replace(s, history=replace(s.history, reads=frozenset({(0, 1), (0, 2)}))),
    }
    for invariant, state in cases.items():
        violated = {v.invariant for v in check_replication(state, cfg).violations}
        assert invariant in violated, invariant
        assert all(v.message for v in check_replication(state, cfg).violations)
    lost = replace(s, history=replace(s.history, acked=frozenset({(0, 7)})))
    assert "replication.no-acked-lost" in {v.invariant for v in check_replication(lost, cfg).violations}


def test_durability_is_not_promised_past_min_isr_lossy_crashes():
    cfg = Config(brokers=2, min_isr=1)
    s = initial_state(cfg)
    s = replace(s, history=replace(s.history, acked=frozenset({(0, 7)}), lossy_crashes=1))
    report = check_replication(s, cfg)
    assert report.ok and "replication.no-acked-lost" in report.skipped


# ---- protocols, traces ---------------------------------------------------------------------------


def test_a_users_protocol_is_one_replaced_rule():
    mine = replace(Protocol.current(), name="mine", truncation=truncate_to_high_watermark)
    played, violated, s = run_script(mine, cfg_for("truncate-to-hw"), ROW_1)
    # today's registration fences the restarted follower and takes it out of the ISR, so truncating
    # to its high watermark loses nothing that an electable replica needed
    assert (played, violated) == (len(ROW_1), [])
    assert s.replica(2).log == () and 2 not in s.registry.isr
    assert resolve_protocol("model.replication.protocol:Protocol.current").protocol.name == "current"
    assert resolve_protocol("truncate-to-hw").variant is VARIANTS["truncate-to-hw"]
    with pytest.raises(ValueError, match="unknown protocol"):
        resolve_protocol("nope")


def test_trace_json_round_trip_and_replay():
    v = VARIANTS["hw-over-committed-isr"]
    cfg = Config(**v.settings)
    result = exhaust(v.protocol, cfg, only=set(v.violates))
    assert result.trace is not None
    back = Trace.from_json(result.trace.to_json())
    assert back.steps == result.trace.steps and back.config == cfg
    assert replay(back, v.protocol)[-1].violations
    data = json.loads(result.trace.to_json())
    data["steps"][0]["action"] = "teleport"
    with pytest.raises(ValueError, match="step 1: unknown action 'teleport'"):
        Trace.from_json(json.dumps(data))
    with pytest.raises(ValueError, match="not JSON"):
        Trace.from_json("{")


def test_config_rejects_bad_bounds():
    with pytest.raises(ValueError, match="min_isr"):
        Config(brokers=2, min_isr=3)
    with pytest.raises(ValueError, match="acks"):
        Config(acks=("2",))


def test_each_variant_states_its_rows_length():
    for name, (script, _) in ROW_SCRIPTS.items():
        assert VARIANTS[name].minimal_steps == len(script), name


def test_every_variants_shortest_trace_prints(capsys):
    """`kcheck exhaust --protocol zombie-controller` renders the zombie's move (a broker target, not a list)."""
    from kcheck.cli import main

    assert main(["exhaust", "--protocol", "zombie-controller"]) == 1
    out = capsys.readouterr().out
    assert "zombie_move_leader zombie=0 target=2" in out and "replication.epochs-monotonic" in out
