"""The clients' view in the replication model: ListOffsets LATEST and the high watermark of a consumer's fetch.

Kafka's behaviour (apache/kafka core/src/main/scala/kafka/cluster/Partition.scala):
- `fetchOffsetForTimestamp` answers a client's LATEST with the high watermark (read_uncommitted), but throws
  OFFSET_NOT_AVAILABLE while `leaderEpochStartOffsetOpt` (the log end when the broker became leader) is greater
  than the high watermark: KIP-207, KAFKA-2334's fix (commit 152292994e4, first in 2.2.0).
- `readRecords` puts the leader's high watermark as it is into a fetch response (`initialHighWatermark`) with no
  such check, and the consumer stores whatever it gets (clients' `FetchCollector` ->
  `SubscriptionState.tryUpdatingHighWatermark`): that high watermark may go back after an election, which
  Kafka does not promise against, so `client.fetch-high-watermark-monotonic` is SOFT (reported, never a failure).
Both read in the source and confirmed in 4.4.0's bytecode (`javap -c` of kafka_2.13-4.4.0's `Partition`: the
condition is `isolationLevel.isDefined && epochStart > highWatermark`; kafka-clients-4.4.0's
`SubscriptionState.tryUpdatingHighWatermark` stores the value unconditionally).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kcheck.invariants.registry import Severity
from kcheck.invariants.replication import check_replication
from kcheck.invariants.replication_model_adapter import decode_state, encode_state, rename_tuple, state_tuple
from kcheck.invariants.replication_rows import ROW_14, fetch_round, play_row, run_script
from kcheck.invariants.replication_searches.exhaustive import run_exhaust
from kcheck.model.replication import VARIANTS, Config, Protocol, initial_state
from kcheck.model.replication.actions import KINDS, Action, apply, successors
from kcheck.model.replication.protocol import (
    latest_is_high_watermark,
    leader_high_watermark,
    offset_not_available_while_hw_lags,
    withhold_lagging_high_watermark,
)
from kcheck.model.replication.state import Record, Replica

ROW = "lagging-hw-list-offsets"


def _leader(hw: int, epoch_start: int, leo: int) -> Replica:
    log = tuple(Record(i, 1) for i in range(leo))
    return Replica(id=1, leader=1, leader_epoch=2, log=log, hw=hw, epoch_start=epoch_start)


def test_latest_rules_follow_fetch_offset_for_timestamp():
    """Partition.fetchOffsetForTimestamp: OFFSET_NOT_AVAILABLE exactly when epochStart > highWatermark; an equal
    high watermark is answered. Before KIP-207 the high watermark is answered whatever it is."""
    assert offset_not_available_while_hw_lags(_leader(hw=1, epoch_start=2, leo=2)) is None
    assert offset_not_available_while_hw_lags(_leader(hw=2, epoch_start=2, leo=3)) == 2
    assert offset_not_available_while_hw_lags(_leader(hw=3, epoch_start=2, leo=3)) == 3
    assert latest_is_high_watermark(_leader(hw=1, epoch_start=2, leo=2)) == 1
    # The fetch response: Kafka reports the lagging high watermark; the proposal withholds it (-1 on the wire).
    assert leader_high_watermark(_leader(hw=1, epoch_start=2, leo=2)) == 1
    assert withhold_lagging_high_watermark(_leader(hw=1, epoch_start=2, leo=2)) is None
    assert Protocol.current().list_offsets_latest is offset_not_available_while_hw_lags
    assert Protocol.current().fetch_high_watermark is leader_high_watermark


def test_row_14_goes_back_under_the_old_rule_and_is_refused_today():
    (old_n, old_violated), (now_n, now_violated), length = play_row(ROW)
    assert (old_n, old_violated) == (length, ["client.list-offsets-monotonic"])
    # Today's leader answers the last request with OFFSET_NOT_AVAILABLE: the step is not possible, nothing broke.
    assert now_n == length - 1 and now_violated == []
    assert ROW_14[-1][0] == "list_offsets" and VARIANTS[ROW].minimal_steps == length


def test_exhaustive_engine_finds_row_14_and_todays_rule_is_clean_at_its_bound():
    v = VARIANTS[ROW]
    cfg = Config(**v.settings)
    old = run_exhaust(v.protocol, cfg, only=set(v.violates))
    assert old.trace is not None and len(old.trace.steps) <= v.minimal_steps
    assert {x.invariant for x in old.trace.violations} == {"client.list-offsets-monotonic"}
    assert [a.kind for a in old.trace.steps][-1] == "list_offsets"
    now = run_exhaust(Protocol.current(), cfg)
    assert now.complete and now.trace is None, now.trace and now.trace.violations


def _fetch_hw_script() -> list:
    """Leader 1 exposes high watermark 2 to a consumer; broker 2 takes over knowing high watermark 1; a consumer's
    fetch from it carries 1."""
    return [
        ("produce", {"broker": 1, "acks": "all"}),
        *fetch_round(2, 0),
        *fetch_round(2, 1, respond=False),
        ("advance_hw", {"broker": 1}),  # HW 1
        ("handle_fetch_response", {"to": 2, "offset": 1}),  # answered before the HW moved: broker 2 keeps 0
        ("produce", {"broker": 1, "acks": "all"}),
        *fetch_round(2, 1),  # broker 2 gets x2 and HW 1
        *fetch_round(2, 2, respond=False),
        ("advance_hw", {"broker": 1}),  # HW 2
        ("consume", {"broker": 1, "offset": 1}),  # its fetch response carries HW 2
        ("move_leader", {"target": 2}),
        ("apply_metadata", {"broker": 2}),  # leads from log end 2 with HW 1
        ("consume", {"broker": 2, "offset": 0}),  # its fetch response carries HW 1
    ]


def test_fetch_high_watermark_may_go_back_in_kafka_and_is_reported_not_failed():
    cfg = Config(brokers=2, min_isr=1, records=2, reads=2, elections=1, crashes=0, lossy_crashes=0, fences=0,
                 isr_shrinks=0, failovers=0, list_offsets=1, metadata="kraft")
    script = _fetch_hw_script()
    played, hard, s = run_script(Protocol.current(), cfg, script)
    assert (played, hard) == (len(script), [])
    report = check_replication(s, cfg)
    soft = [v for v in report.violations if v.invariant == "client.fetch-high-watermark-monotonic"]
    assert soft and soft[0].severity is Severity.SOFT and soft[0].detail == {"was": 2, "now": 1}
    # KIP-207's check applied to the fetch response would keep it monotonic: the lagging one is withheld.
    mine = replace(Protocol.current(), name="withhold", fetch_high_watermark=withhold_lagging_high_watermark)
    played, hard, s = run_script(mine, cfg, script)
    assert played == len(script) and s.history.offset_regressions == frozenset()


def test_without_a_list_offsets_budget_clients_are_not_recorded():
    """list_offsets=0 (the default): no list_offsets action and nothing recorded by consume, so every existing
    bound explores the states it did."""
    cfg = Config(brokers=2, min_isr=1, records=1, reads=1, elections=1, crashes=0, lossy_crashes=0, fences=0,
                 isr_shrinks=0, failovers=0, max_leader_epoch=2, duplicates=False, atomic_fetch=True)
    assert not KINDS["list_offsets"].possible(cfg)
    p = Protocol.current()
    seen, frontier = set(), [initial_state(cfg)]
    while frontier:
        s = frontier.pop()
        if s in seen:
            continue
        seen.add(s)
        h = s.history
        assert (h.latest_seen, h.fetch_hw_seen, h.client_epoch, h.offset_regressions) == (0, 0, 0, frozenset())
        frontier.extend(t for _, t in successors(s, p, cfg))
    assert any(s.history.reads for s in seen)  # consumers did read


def test_client_fields_survive_the_engines_encoding():
    """The adapter encodes every new History field (else the search would merge distinct states)."""
    v = VARIANTS[ROW]
    cfg = Config(**v.settings)
    played, _, s = run_script(v.protocol, cfg, ROW_14)
    h = s.history
    assert (h.latest_seen, h.client_epoch, h.offset_regressions) == (1, 2, frozenset({("latest", 1, 0)}))
    assert decode_state(encode_state(s)) == s
    assert rename_tuple(state_tuple(s), (0, 2, 1))[4][14:18] == (1, 0, 2, (("latest", 1, 0),))
    # A state that differs only in what the client saw encodes differently.
    other = replace(s, history=replace(h, latest_seen=0))
    assert encode_state(other) != encode_state(s)


def test_list_offsets_is_fenced_by_the_clients_leader_epoch():
    """A client that has seen epoch 2 is not answered by a zombie leader of epoch 1 (UNKNOWN_LEADER_EPOCH, KIP-320
    via `Partition.localLogWithEpochOrThrow`); a client behind a leader's epoch catches up to it."""
    v = VARIANTS[ROW]
    cfg = Config(**v.settings)
    played, _, s = run_script(Protocol.current(), cfg, ROW_14[:-1])
    assert s.replica(1).is_leader and s.replica(1).leader_epoch == 1  # broker 1 has not applied epoch 2
    asked_new = apply(s, v.protocol, cfg, Action("list_offsets", (2, "latest")))
    assert asked_new is not None and asked_new.history.client_epoch == 2
    assert apply(asked_new, v.protocol, cfg, Action("list_offsets", (1, "latest"))) is None
    # EARLIEST is the log start offset, 0 here, and moves nothing the client saw.
    early = apply(s, Protocol.current(), cfg, Action("list_offsets", (1, "earliest")))
    assert early is not None and early.history.offset_regressions == frozenset()


@pytest.mark.slow  # about 80 s on two shared cores
def test_todays_rules_keep_latest_monotonic_through_a_crash_a_leader_move_and_a_read():
    """KIP-207's promise checked exhaustively at RF 2: one crash (its restart registers fenced and moves
    leadership), one preferred election, one consumer read, two ListOffsets, leader epochs up to 3."""
    cfg = Config(brokers=2, min_isr=1, records=1, elections=1, list_offsets=2, reads=1, crashes=1, lossy_crashes=0,
                 fences=0, isr_shrinks=0, failovers=0, max_leader_epoch=3, duplicates=False, atomic_fetch=True)
    r = run_exhaust(Protocol.current(), cfg)
    assert r.complete and r.trace is None, r.trace and r.trace.violations
    old = run_exhaust(VARIANTS[ROW].protocol, cfg, only={"client.list-offsets-monotonic"})
    assert old.trace is not None


def test_row_14_trace_survives_json_and_replays():
    """A trace with list_offsets steps (and the KRaft config) is written, read back through the trace schema and
    replayed to the same violation."""
    from kcheck.invariants.replication_searches.runs import Trace, replay

    v = VARIANTS[ROW]
    found = run_exhaust(v.protocol, Config(**v.settings), only=set(v.violates)).trace
    assert found is not None
    back = Trace.from_json(found.to_json())
    assert back.steps == found.steps and back.config == found.config
    last = replay(back, v.protocol)[-1]
    assert {x.invariant for x in last.violations} == {"client.list-offsets-monotonic"}
    with pytest.raises(ValueError, match="spec"):
        Trace.from_json(found.to_json().replace('"latest"', '"newest"'))
