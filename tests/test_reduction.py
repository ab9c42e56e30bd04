"""The replication model's reductions (model/replication/reduction.py) against complete state spaces.

The claim: a state the full model reaches has its normal form (every quiet metadata batch applied, every log flushed
once no lossy crash is left) reached by the reduced search, up to the beliefs a broker holds while it knows nothing
of the partition (unread until the next state it applies overwrites them); the reduced search reaches nothing else;
and, what makes the reduction sound, the two searches agree invariant by invariant on whether any reachable state
breaks it, and on the shortest depth (in the model's steps for the full search, in reduced steps, each an action and
what the reduction adds to it, for the reduced one) at which one first does: each invariant judged on the states
each search itself reaches, the epoch invariants' running maxima included. Both searches here are plain BFS over
`actions.successors` (the model's own function table), independent of the engine and the adapter.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import replace
from typing import Any

import pytest

from cli_support import run
from kcheck.invariants.replication import check_replication
from kcheck.invariants.replication_model_adapter import ReplicationModel
from kcheck.invariants.replication_searches.runs import Trace, replay
from kcheck.model.replication import Config, Protocol, initial_state
from kcheck.model.replication.actions import Action, apply, successors
from kcheck.model.replication.protocol import VARIANTS
from kcheck.model.replication.reduction import normal, normalize, why_off
from kcheck.model.replication.state import NO_LEADER, State, evolve
from kcheck.runtime.exit_codes import Exit
from model_support import reachable

RF3 = dict(brokers=3, replication_factor=3, min_isr=2, records=1, crashes=0, fences=0, lossy_crashes=0, elections=0,
           isr_shrinks=0, failovers=0, reads=0, duplicates=False, atomic_fetch=True)
TWO = dict(brokers=2, min_isr=1, records=2, crashes=0, fences=0, lossy_crashes=0, elections=0, isr_shrinks=0,
           failovers=0, reads=0, duplicates=False)

# Complete state spaces of 3,000-50,000 states: RF 3's faults one at a time, both fetch granularities, both metadata
# modes, and historical rows whose invariants break (in KRaft and in ZooKeeper mode).
CASES = [
    ("current", dict(RF3, crashes=1)),
    ("current", dict(RF3, fences=1)),
    ("current", dict(RF3, records=2, elections=1)),
    ("current", dict(TWO, replication_factor=2, records=1, lossy_crashes=1, atomic_fetch=True)),
    ("current", dict(TWO, records=1, lossy_crashes=1)),
    ("truncate-to-hw", dict(TWO, crashes=1, atomic_fetch=True)),
    ("lagging-hw-list-offsets", dict(VARIANTS["lagging-hw-list-offsets"].settings)),
    ("truncate-to-hw-lossy", dict(VARIANTS["truncate-to-hw-lossy"].settings, records=2, crashes=0, duplicates=False,
                                  atomic_fetch=True)),
    # a row that breaks the epoch invariants (a zombie controller's write); the flushes reduction is on, with no
    # record to flush it merges nothing here, so the epochs' verdicts are compared where both searches are one
    ("zombie-controller", dict(VARIANTS["zombie-controller"].settings, elections=1, lossy_crashes=1, duplicates=False,
                               atomic_fetch=True)),
]


def _protocol(name: str) -> Protocol:
    return Protocol.current() if name == "current" else VARIANTS[name].protocol


def _bfs(p: Protocol, cfg: Config, norm: bool, limit: int = 200_000) -> set[State]:
    states = reachable(p, cfg, limit + 1, (lambda s: normal(s, p, cfg)) if norm else None)
    assert len(states) <= limit, "the case outgrew the test: pick a smaller one"
    return set(states)


def _first_breaks(p: Protocol, cfg: Config, norm: bool, limit: int = 200_000) -> tuple[set[State], dict[str, int]]:
    """Every state a BFS over `actions.successors` reaches (each passed through the normal form with `norm`: the
    reduced search), and for each invariant that some reached state breaks, the least BFS depth of such a state.
    Every invariant is checked in every state (a search that stops at the first violation would hide the rest)."""
    step = (lambda s: normal(s, p, cfg)) if norm else (lambda s: s)
    s0 = step(initial_state(cfg))
    depth, queue, first = {s0: 0}, deque([s0]), {}
    while queue:
        s = queue.popleft()
        d = depth[s]
        for v in check_replication(s, cfg).hard_violations:
            first.setdefault(v.invariant, d)
        for _, t in successors(s, p, cfg):
            t = step(t)
            if t not in depth:
                depth[t] = d + 1
                queue.append(t)
        assert len(depth) <= limit, "the case outgrew the test: pick a smaller one"
    return set(depth), first


def _unread(s: State) -> State:
    """`s` with the beliefs of each broker that knows nothing set aside (see the module docstring), and the history's
    running maxima (the highest epochs held *before* a state, which a step added by the reduction brings up to
    date one step early): this compares what the searches reach, not verdicts; `epochs-monotonic`, which reads
    the maxima, is judged on each search's own states by the verdict check."""
    h = evolve(s.history, max_leader_epoch=0, max_written_by=0, max_broker_epochs=())
    return evolve(s, history=h, replicas=tuple(
        r if r.known else evolve(r, leader=NO_LEADER, leader_epoch=0, partition_epoch=0, isr=frozenset())
        for r in s.replicas))


@pytest.mark.parametrize(("name", "settings"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_the_reduced_search_reaches_every_states_normal_form_and_the_same_verdicts(name: str,
                                                                                    settings: dict[str, Any]):
    p, cfg = _protocol(name), Config(**settings)
    assert why_off(cfg, True, True) is None
    full, full_breaks = _first_breaks(p, cfg, False)
    reduced, reduced_breaks = _first_breaks(p, cfg, True)
    assert reduced <= full  # every reduced step is a run of the model
    assert {_unread(normal(s, p, cfg)) for s in full} == {_unread(s) for s in reduced}
    if name != "current":
        assert full_breaks, "a historical row's case should break an invariant"
    if name == "zombie-controller":
        assert "replication.epochs-monotonic" in full_breaks
    # The soundness claim itself: the same invariants broken, each first at the same depth (the reduction keeps
    # depth on every case here: the steps it adds are never the ones a shortest violation needs).
    assert reduced_breaks == full_breaks


def test_normalize_lists_the_steps_it_took_as_model_actions():
    p, cfg = Protocol.current(), Config(**dict(RF3, crashes=1))
    seen = 0
    for s in _bfs(p, cfg, False):
        t, steps = normalize(s, p, cfg)
        replayed = s
        for a in steps:
            replayed = apply(replayed, p, cfg, a)
            assert replayed is not None
        assert replayed == t and normal(t, p, cfg) is t
        seen += bool(steps)
    assert seen  # some states were not normal


def test_the_reduction_is_off_where_its_argument_does_not_reach():
    cfg = Config(**dict(RF3, crashes=1))
    assert "audited" in why_off(cfg, False, True)
    assert "user's invariant" in why_off(cfg, True, False)
    assert why_off(Config(**dict(RF3, crashes=1, metadata="zookeeper")), True, True) is not None
    shut = Config(**dict(RF3, crashes=1, shutdowns=1))
    assert why_off(shut, True, True) is not None
    # A controlled shutdown makes the controller wait on every broker's image: no batch is applied early then.
    s = initial_state(shut)
    assert normal(s, Protocol.current(), shut) is s
    assert why_off(replace(shut, lossy_crashes=1), True, True) is None  # the flushes still apply


def test_kcheck_exhaust_reduce_is_the_same_verdict_over_fewer_states(capsys):
    args = ["exhaust", "--brokers", "3", "--replication-factor", "3", "--min-isr", "2", "--records", "1", "--crashes",
            "1", "--lossy-crashes", "0", "--fences", "0", "--elections", "0", "--isr-shrinks", "0", "--failovers", "0",
            "--reads", "0", "--no-duplicates", "--atomic-fetch", "--json"]
    code, out, _ = run(capsys, *args)
    plain = json.loads(out)
    code_r, out, _ = run(capsys, *args, "--reduce")
    reduced = json.loads(out)
    assert code == code_r == Exit.OK and plain["complete"] and reduced["complete"]
    assert (plain["reduction"], plain["reduction_note"]) == ("off", "not asked for")
    assert (reduced["reduction"], reduced["reduction_note"]) == ("on", None)
    assert reduced["states"] < plain["states"]
    p, cfg = Protocol.current(), Config(**dict(RF3, crashes=1))
    assert reduced["states"] == len(_bfs(p, cfg, True))  # the engine's reduced search is the model's


def test_a_reduced_counterexample_is_a_run_of_the_model_that_replays(capsys, tmp_path):
    # Row 9 (KRaft, a lossy crash and a fence) found by the reduced search: its trace replays through the model alone
    # to a broken invariant.
    out_file = tmp_path / "trace.json"
    code, out, _ = run(capsys, "exhaust", "--protocol", "last-replica-standing", "--atomic-fetch", "--no-duplicates",
                       "--reduce", "--json", "--out", str(out_file))
    rep = json.loads(out)
    assert code == Exit.FAILED and rep["reduction"] == "on"
    steps = replay(Trace.from_json(out_file.read_text()), VARIANTS["last-replica-standing"].protocol)
    assert steps[-1].violations


def test_explicit_writes_out_the_steps_the_reduction_took():
    p, cfg = Protocol.current(), Config(**dict(RF3, lossy_crashes=1))
    model = ReplicationModel(p, cfg, reduce=True)
    s = initial_state(cfg)
    for a in (Action("produce", (1, "all")), Action("fetch_round", (2,))):
        s = model.step(s, a)
    crash = Action("crash", (3, True))  # spends the only lossy crash: every live log is flushed at once
    taken = model.explicit(s, crash)
    assert taken == (crash, Action("flush", (1,)), Action("flush", (2,)))
    t = s
    for a in taken:
        t = apply(t, p, cfg, a)
    assert t == model.step(s, crash) and model.step(s, Action("flush", (1,))) is not None
    assert model.explicit(s, Action("flush", (1,))) == (Action("flush", (1,)),)  # nothing to add before the crash


def test_the_adapter_switches_the_reduction_off_for_a_rule_it_has_not_audited():
    cfg = Config(**dict(RF3, crashes=1))
    theirs = replace(Protocol.current(), unfence_when=lambda registry, image, broker: True)
    model = ReplicationModel(theirs, cfg, reduce=True)
    assert model.reduction_off is not None and "audited" in model.reduction_off
    assert ReplicationModel(Protocol.current(), cfg, reduce=True).reduction_off is None
    assert ReplicationModel(Protocol.current(), cfg).reduction_off == "switched off"


def test_the_reduced_model_gives_the_same_counts_with_worker_processes():
    from kcheck.model.search import exhaust

    cfg = Config(**dict(RF3, crashes=1))
    one = exhaust(ReplicationModel(Protocol.current(), cfg, reduce=True))
    two = exhaust(ReplicationModel(Protocol.current(), cfg, reduce=True), workers=2)
    assert one.complete and two.complete and (one.states, one.transitions) == (two.states, two.transitions)
