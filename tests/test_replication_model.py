"""The replication model against Kafka's history: each catalogue row's own event sequence, written
out by hand from reference-notes/known-protocol-bugs.md, must break the row's property under the
row's historical rule and be stopped by Protocol.current(); and the explorers must find each
variant's violation on their own."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from invariants.replication import check_replication
from invariants.replication_explore import Trace, exhaust, explore, replay, resolve_protocol
from model.replication import KINDS, VARIANTS, Action, Config, Protocol, apply, initial_state
from model.replication.actions import enabled
from model.replication.protocol import (
    end_offset_for_epoch,
    first_offset_after_epoch,
    truncate_to_high_watermark,
)
from model.replication.state import Record, State

# ---- scripting the catalogue's sequences ---------------------------------------------------------


def _matches(action: Action, want: dict[str, Any]) -> bool:
    params = dict(zip(KINDS[action.kind].params, action.args, strict=True))
    if params.get("keep"):
        return False  # scripts never duplicate a message
    for key, value in want.items():
        if "message" in params and key not in params:
            if getattr(params["message"], key) != value:
                return False
        elif params.get(key) != value:
            return False
    return True


def run_script(protocol: Protocol, cfg: Config, script: list[tuple[str, dict[str, Any]]]
               ) -> tuple[int, list[str], State]:
    """Play (kind, what) steps; stops at the first violation or at the first step the protocol does not
    allow. Returns (steps played, invariants violated after the last one, last state)."""
    s = initial_state(cfg)
    for n, (kind, want) in enumerate(script, 1):
        options = [a for a, _ in enabled(s, protocol, cfg, kind) if _matches(a, want)]
        if not options:
            return n - 1, [], s
        assert len(options) == 1, f"step {n} {kind} {want} is ambiguous: {options}"
        s = apply(s, protocol, cfg, options[0])
        violated = sorted({v.invariant for v in check_replication(s, cfg).hard_violations})
        if violated:
            return n, violated, s
    return len(script), [], s


def cfg_for(name: str) -> Config:
    return Config(**VARIANTS[name].settings)


def fetch_round(follower: int, offset: int, respond: bool = True) -> list[tuple[str, dict[str, Any]]]:
    steps = [("fetch", {"follower": follower}), ("handle_fetch", {"frm": follower, "offset": offset})]
    if respond:
        steps.append(("handle_fetch_response", {"to": follower, "offset": offset}))
    return steps


# Row 1 (KIP-101 scenario 1), leader B = broker 1, follower A = broker 2.
ROW_1 = [
    ("produce", {"broker": 1, "acks": "all"}),  # B appends x0
    *fetch_round(2, 0),  # A fetches x0; the response carries HW 0
    *fetch_round(2, 1, respond=False),  # A fetches again: B learns A has offset 0 ...
    ("advance_hw", {"broker": 1}),  # ... so B's HW becomes 1: x0 committed and acked
    ("crash", {"broker": 2, "lossy": False}),  # A restarts before it hears HW 1
    ("restart", {"broker": 2}),
    ("truncate", {"follower": 2}),  # A truncates to its own HW 0: x0 is gone from an ISR member
]

# Row 2 (KIP-101 scenario 2), leader A = broker 1, follower B = broker 2.
ROW_2 = [
    ("produce", {"broker": 1, "acks": "all"}),  # m1
    *fetch_round(2, 0),
    ("flush", {"broker": 2}),  # B has flushed m1 only
    ("produce", {"broker": 1, "acks": "all"}),  # m2
    *fetch_round(2, 1),
    *fetch_round(2, 2, respond=False),
    ("advance_hw", {"broker": 1}),  # HW 2 on A
    ("crash", {"broker": 1, "lossy": False}),  # power failure: A keeps m1, m2
    ("crash", {"broker": 2, "lossy": True}),  # B loses the unflushed m2
    ("fence", {"broker": 1}),  # the controller elects B (e2)
    ("restart", {"broker": 2}),  # B comes back first, as the leader
    ("produce", {"broker": 2, "acks": "all"}),  # m3 at offset 1
    ("advance_hw", {"broker": 2}),
    ("restart", {"broker": 1}),  # A becomes a follower ...
    ("truncate", {"follower": 1}),  # ... and truncates to its own HW 2, keeping m2 where B has m3
]

# Row 3 (KIP-279): A = broker 1 leads epoch 1, B = broker 2.
ROW_3 = [
    ("produce", {"broker": 1, "acks": "all"}),  # x0/1
    *fetch_round(2, 0, respond=False),
    ("produce", {"broker": 1, "acks": "all"}),  # x1/1
    ("handle_fetch_response", {"to": 2, "offset": 0}),  # B replicates x0 only
    ("move_leader", {"target": 2}),  # e2 L=B; A does not hear of it
    ("handle_leader_and_isr", {"to": 2, "leader_epoch": 2}),
    ("produce", {"broker": 2, "acks": "all"}),  # y1/2
    ("move_leader", {"target": 1}),  # e3 L=A
    ("handle_leader_and_isr", {"to": 1, "leader_epoch": 3}),  # A goes from e1 straight to leading e3
    ("produce", {"broker": 1, "acks": "all"}),  # z2/3
    ("handle_leader_and_isr", {"to": 2, "leader_epoch": 3}),
    ("truncate", {"follower": 2}),  # one-shot lookup of epoch 2 answers 2 = B's LEO: nothing truncated
    *fetch_round(2, 2),  # B copies z2
    *fetch_round(2, 3, respond=False),
    ("advance_hw", {"broker": 1}),  # HW 3: offset 1 committed, x1 on A and y1 on B
]

# Row 4 (KIP-320): e1 L=1 ISR{1,2,3}; broker 2 becomes a zombie follower that hears of no later epoch.
ROW_4 = [
    ("produce", {"broker": 1, "acks": "all"}),  # x0
    *fetch_round(3, 0),  # 3 has [x0]
    ("produce", {"broker": 1, "acks": "all"}),  # x1
    *fetch_round(2, 0),  # 2 has [x0, x1]
    ("shrink_isr", {"leader": 1, "follower": 2}),  # 2 loses its session: out of the ISR
    ("handle_alter_partition", {"frm": 1}),
    ("move_leader", {"target": 3}),  # e2 L=3 ISR{1,3}; 2 never hears of it
    ("handle_leader_and_isr", {"to": 3, "leader_epoch": 2}),
    ("handle_leader_and_isr", {"to": 1, "leader_epoch": 2}),
    ("truncate", {"follower": 1}),  # 1 truncates to 3's end of epoch 1: [x0]
    ("produce", {"broker": 3, "acks": "all"}),  # y1 at offset 1
    *fetch_round(1, 1),  # 1 has [x0, y1]
    *fetch_round(1, 2, respond=False),
    ("advance_hw", {"broker": 3}),  # y1 committed
    ("move_leader", {"target": 1}),  # e3 L=1
    ("handle_leader_and_isr", {"to": 1, "leader_epoch": 3}),
    *fetch_round(2, 2, respond=False),  # zombie 2, still on epoch 1, fetches from 1 at its own LEO 2
    ("expand_isr", {"leader": 1, "follower": 2}),  # 2 looks caught up to the HW
    ("handle_alter_partition", {"frm": 1}),  # 2 is in the ISR with x1 where y1 is committed
]

# Row 6 (KIP-497's rejected design): e1 L=A ISR{A}, B caught up with an empty log.
ROW_6 = [
    *fetch_round(2, 0, respond=False),
    ("expand_isr", {"leader": 1, "follower": 2}),  # AlterIsr {A,B} in flight
    ("produce", {"broker": 1, "acks": "all"}),  # x0
    ("advance_hw", {"broker": 1}),  # HW over the committed ISR {A}: acked
    ("handle_alter_partition", {"frm": 1}),  # the controller commits {A,B}: B lacks x0
]

# Row 8 (Jepsen 2013): the ISR shrinks to the leader, which acks alone and dies.
ROW_8 = [
    ("produce", {"broker": 1, "acks": "all"}),
    ("shrink_isr", {"leader": 1, "follower": 2}),
    ("handle_alter_partition", {"frm": 1}),
    ("handle_alter_partition_response", {"to": 1}),
    ("advance_hw", {"broker": 1}),  # w1 acked by the ISR {A}
    ("crash", {"broker": 1, "lossy": False}),
    ("fence", {"broker": 1}),  # no ISR member left: B is elected anyway
]

# Row 9 (KIP-966 last replica standing), RF 2, min.insync.replicas 2.
ROW_9 = [
    ("produce", {"broker": 1, "acks": "all"}),  # x0
    ("flush", {"broker": 1}),
    ("produce", {"broker": 1, "acks": "all"}),  # x1, never flushed on A
    *fetch_round(2, 0),
    *fetch_round(2, 2, respond=False),
    ("advance_hw", {"broker": 1}),  # HW 2, both acked
    ("fence", {"broker": 2}),  # B cut off: ISR {A}
    ("crash", {"broker": 1, "lossy": True}),  # A loses x1
    ("fence", {"broker": 1}),  # A stays the last ISR member, no leader
    ("restart", {"broker": 1}),  # A is electable again, without x1
]

# Row 13 (KAFKA-6082): a zombie controller writes after the new one.
ROW_13 = [
    ("failover", {}),
    ("move_leader", {"target": 2}),
    ("zombie_move_leader", {"zombie": 0, "target": 2}),
]

ROWS = [
    ("truncate-to-hw", ROW_1, "replication.electable-has-committed"),
    ("truncate-to-hw-lossy", ROW_2, "replication.log-matching"),
    ("one-shot-epoch-lookup", ROW_3, "replication.electable-has-committed"),
    ("no-epoch-in-fetch", ROW_4, "replication.electable-has-committed"),
    ("hw-over-committed-isr", ROW_6, "replication.electable-has-committed"),
    ("unclean-election", ROW_8, "replication.leader-has-acked"),
    ("last-replica-standing", ROW_9, "replication.electable-has-committed"),
    ("zombie-controller", ROW_13, "replication.epochs-monotonic"),
]


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


@pytest.mark.parametrize("name", ["zombie-controller", "hw-over-committed-isr", "unclean-election",
                                  "truncate-to-hw", "last-replica-standing"])
def test_hypothesis_finds_and_shrinks_each_variant(name):
    v = VARIANTS[name]
    r = explore(v.protocol, Config(**v.settings), examples=600, steps=40, seed_value=0, only=set(v.violates))
    assert r.trace is not None, f"{name}: nothing found in {r.examples} programs"
    assert {x.invariant for x in r.trace.violations} & set(v.violates)
    assert len(r.trace.steps) <= v.minimal_steps + 4


def test_todays_protocol_holds_in_every_state_at_small_bounds():
    cfg = Config(brokers=2, min_isr=1, records=2, max_leader_epoch=3, crashes=1, lossy_crashes=0, fences=1,
                 elections=1, isr_shrinks=0, failovers=0, reads=1)
    result = exhaust(Protocol.current(), cfg, max_states=500_000)
    assert result.complete and result.trace is None
    assert result.states > 10_000  # the bound is not vacuous


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
    played, violated, _ = run_script(mine, replace(cfg_for("truncate-to-hw"), crashes=2),
                                     [s for s in ROW_1 if s[0] != "restart"] + [("restart", {"broker": 2})])
    # today's registration fences the restarted follower, so truncating to the HW alone loses nothing
    assert violated == []
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
