"""Change coverage (issue 20, point 5): for a protocol that differs from today's, explore and exhaust report per
changed rule in how many visited states it was asked and answered differently from today's rule, with the shortest
run to a differing answer (a replayable trace); a run in which a changed rule never differed exits 3."""

from __future__ import annotations

import importlib
import json
from dataclasses import fields, replace

import pytest

from cli_support import run, write_module
from kcheck.invariants.replication_searches.runs import (
    ChangeProbe,
    Trace,
    changed_rules,
    probed_successors,
    replay,
    today_for,
)
from kcheck.invariants.replication_searches.yardstick import exhaust
from kcheck.model.replication.actions import Config, apply, initial_state, successors
from kcheck.model.replication.protocol import VARIANTS, Protocol, caught_up_in_leader_epoch
from kcheck.reference import releases

SMALL = ["--brokers", "2", "--min-isr", "2", "--records", "1", "--crashes", "0", "--fences", "0", "--elections", "0",
         "--isr-shrinks", "0", "--failovers", "0", "--reads", "0", "--max-leader-epoch", "2", "--no-duplicates",
         "--atomic-fetch"]


RULES = '''
from dataclasses import replace
from kcheck.model.replication.protocol import Protocol, caught_up_in_leader_epoch

def join_at_high_watermark(leader, follower, registry):
    leo = leader.view_of(follower)
    return leo is not None and leo >= leader.hw

def same_as_today(leader, follower, registry):
    return caught_up_in_leader_epoch(leader, follower, registry)

proposed = replace(Protocol.current(), name="proposed", isr_join=join_at_high_watermark)
unchanged_answers = replace(Protocol.current(), name="same", isr_join=same_as_today)
'''


def test_a_changed_rule_is_covered_with_a_replayable_shortest_run(capsys, tmp_path, monkeypatch):
    mod = write_module(tmp_path, monkeypatch, RULES)
    cov_dir = tmp_path / "cov"
    code, out, err = run(capsys, "exhaust", "--protocol", f"{mod}:proposed", *SMALL, "--lossy-crashes", "1",
                         "--coverage-dir", str(cov_dir), "--json")
    assert (code, err) == (0, "")
    rep = json.loads(out)
    cov = rep["coverage"]
    assert cov["unexercised"] == [] and [r["rule"] for r in cov["rules"]] == ["isr_join"]
    rule = cov["rules"][0]
    assert rule["function"] == "join_at_high_watermark" and rule["today"] == "caught_up_in_leader_epoch"
    assert 0 < rule["differed_states"] < rule["asked_states"] <= cov["visited_states"] == rep["states"]
    steps = rule["trace"]["steps"]
    # the leader asks right after recording the fetch (Kafka's `maybeExpandIsr`): a fenced, restarted follower
    assert steps[-1] == {"action": "fetch_round", "follower": 1} and rule["last_step_enabled"]
    assert [s["action"] for s in steps].count("crash") == 1
    # the file replays, and the replay names the step where the rule answered differently
    path = cov_dir / "isr_join.json"
    assert json.loads(path.read_text())["steps"] == steps
    code, out, err = run(capsys, "replay", str(path), "--protocol", f"{mod}:proposed", "--json")
    assert (code, err) == (0, "")
    differing = json.loads(out)["differing_answers"]
    assert differing and differing[-1]["step"] == len(steps) and differing[-1]["rule"] == "isr_join"
    # under today's rules the same run proposes nothing at its last step: the follower is refused for the ISR there
    trace = Trace.from_json(path.read_text())
    ours = replay(trace, importlib.import_module(mod).proposed)[-1].state
    today = replay(trace, Protocol.current())[-1].state
    assert ours.replica(2).pending_isr == {1, 2} and today.replica(2).pending_isr is None


def test_explore_covers_a_changed_rule_on_the_one_engine(capsys, tmp_path, monkeypatch):
    mod = write_module(tmp_path, monkeypatch, RULES)
    cov_dir = tmp_path / "cov"
    code, out, err = run(capsys, "explore", "--protocol", f"{mod}:proposed", *SMALL, "--lossy-crashes", "1",
                         "--examples", "100", "--coverage-dir", str(cov_dir), "--json")
    assert (code, err) == (4, "")  # clean and exercised: a random search's clean run, never a proof
    rep = json.loads(out)
    assert rep["engine"] == "kcheck.model.search.random_search"
    cov = rep["coverage"]
    assert cov["unexercised"] == [] and [r["rule"] for r in cov["rules"]] == ["isr_join"]
    rule = cov["rules"][0]
    # each distinct state counted once, however many programs pass through it
    assert 0 < rule["differed_states"] <= rule["asked_states"] <= cov["visited_states"]
    assert cov["visited_states"] <= rep["search"]["distinct_states"]
    steps = rule["trace"]["steps"]
    assert steps[-1]["action"] == "fetch_round" and rule["last_step_enabled"]
    code, out, err = run(capsys, "replay", str(cov_dir / "isr_join.json"), "--protocol", f"{mod}:proposed", "--json")
    assert (code, err) == (0, "")
    differing = json.loads(out)["differing_answers"]
    assert differing and differing[-1]["step"] == len(steps) and differing[-1]["rule"] == "isr_join"


def test_a_changed_rule_that_never_differs_exits_3(capsys, tmp_path, monkeypatch):
    mod = write_module(tmp_path, monkeypatch, RULES)
    # a rule that answers as today's does, and a rule that differs only after a lossy crash the bounds forbid
    for spec, extra in ((f"{mod}:unchanged_answers", ["--lossy-crashes", "1"]),
                        (f"{mod}:proposed", ["--lossy-crashes", "0"])):
        code, out, err = run(capsys, "exhaust", "--protocol", spec, *SMALL, *extra)
        assert (code, err) == (3, ""), out
        assert "UNEXERCISED" in out and "isr_join" in out and "never" in out
        code, out, _ = run(capsys, "exhaust", "--protocol", spec, *SMALL, *extra, "--json")
        rep = json.loads(out)
        assert code == 3 and rep["exit_status"] == 3 and rep["coverage"]["unexercised"] == ["isr_join"]
    code, out, _ = run(capsys, "explore", "--protocol", f"{mod}:unchanged_answers", "--examples", "10", "--steps",
                       "10")
    assert code == 3 and "UNEXERCISED" in out
    code, out, _ = run(capsys, "exhaust", "--help")
    assert "3 no invariant violated but a rule" in " ".join(out.split())


def test_a_violation_wins_over_coverage(capsys):
    code, out, _ = run(capsys, "exhaust", "--protocol", "zombie-controller", "--json")
    rep = json.loads(out)
    assert code == 1 and rep["coverage"]["rules"][0]["rule"] == "controller_write"


def test_today_is_the_closest_release():
    base, label = today_for(replace(Protocol.current(), isr_join=lambda leader, f, reg: True))
    assert changed_rules(base, Protocol.current()) == [] and label.startswith("current@")
    newest = releases.profile(releases.DEFAULT_VERSION).protocol()
    base, label = today_for(replace(newest, isr_join=lambda leader, f, reg: True))
    assert label == f"current@{releases.DEFAULT_VERSION}"


def test_every_callable_rule_is_covered_generically():
    # Any rule Protocol has (helper rules added later included) is wrapped when it differs from today's.
    current = Protocol.current()
    rules = [f.name for f in fields(Protocol) if callable(getattr(current, f.name))]

    def shadow(fn):
        return lambda *a, **k: fn(*a, **k)

    everything = replace(current, **{r: shadow(getattr(current, r)) for r in rules})
    assert changed_rules(everything, current) == rules
    probe = ChangeProbe(everything, current, "current")
    assert set(probe.coverage) == set(rules)
    cfg = Config(brokers=2, min_isr=1, records=1, crashes=0, lossy_crashes=1, fences=0, elections=0, isr_shrinks=0,
                 failovers=0, reads=0, max_leader_epoch=2, duplicates=False, atomic_fetch=True)
    r = exhaust(probe.protocol, cfg, probe=probe)
    assert r.complete and probe.unexercised == rules  # same answers everywhere
    assert sum(c.asked for c in probe.coverage.values()) > 0


@pytest.mark.parametrize("name", ["truncate-to-hw", "hw-over-committed-isr"])
def test_probed_successors_enumerate_what_successors_does(name):
    v = VARIANTS[name]
    cfg = Config(**v.settings)
    probe = ChangeProbe(v.protocol, Protocol.current(), "current")
    s = initial_state(cfg)
    for _ in range(6):
        plain = successors(s, v.protocol, cfg)
        probed = probed_successors(s, probe.protocol, cfg, probe, lambda: (), "x", 0)
        assert plain == probed
        s = plain[len(plain) // 2][1]


def test_same_as_today_is_still_a_change():
    assert changed_rules(replace(Protocol.current(), isr_join=lambda *a: caught_up_in_leader_epoch(*a)),
                         Protocol.current()) == ["isr_join"]


def test_explore_probes_each_distinct_state_once_as_if_it_probed_every_step(monkeypatch):
    # explore's ProbedModel takes the model's one-pass successors for a state visited before (the probe records
    # nothing there). The run and its coverage must be those of probing every action of every state it steps
    # from, the plain definition, which this subclass restores.
    from kcheck.invariants.replication_searches import random_runs
    from kcheck.invariants.replication_searches.exhaustive import Node

    def join_unless_fenced(leader, follower, registry):  # differs from today's after a lossy crash
        leo = leader.view_of(follower)
        return leo is not None and leo >= leader.hw and leo >= leader.epoch_start and follower not in registry.fenced

    class EveryStep(random_runs.ProbedModel):
        def successors(self, node):
            probe, inner, s = self.probe, self.inner, node.state
            probe.visit(hash(inner.encode(s)))
            out = []
            for i, a in enumerate(inner.actions(s)):
                probe.begin()
                nxt = inner.step(s, a)
                probe.end(a, nxt, node.actions, self.label, inner.cfg, depth=node.depth)
                if nxt is not None:
                    out.append((i, a, Node(nxt, node.depth + 1, (a, node.path))))
            return out

    mine = replace(Protocol.current(), name="mine", isr_join=join_unless_fenced)
    cfg = Config(brokers=2, min_isr=2, records=2, crashes=1, lossy_crashes=1, fences=1, elections=1, isr_shrinks=1,
                 failovers=0, reads=0, max_leader_epoch=3, atomic_fetch=True)

    def run():
        probe = ChangeProbe(mine, Protocol.current(), "current")
        r = random_runs.explore(probe.protocol, cfg, examples=300, steps=30, seed_value=2, probe=probe)
        return ((r.examples, r.steps, r.distinct_states, r.kinds_fired, r.trace),
                (probe.visited, [c.as_dict() for c in probe.coverage.values()]))

    fast = run()
    monkeypatch.setattr(random_runs, "ProbedModel", EveryStep)
    plain = run()
    assert fast == plain
    visited, (rule,) = fast[1]
    assert rule["differed_states"] > 0  # the rule was exercised
    assert visited < fast[0][1]  # and programs did revisit states (the shortcut was taken)


def test_a_rule_about_incarnations_counts_only_where_it_changed_the_successor():
    """KIP-380's broker-side check replaced by the pre-KIP-380 rule (`accept_any_broker_epoch`) answers differently
    whenever a control request queued for a broker's previous incarnation meets the restarted broker. With today's
    restart (the broker applies the current partition state at once) that request is older than what it knows, so
    `partition_state_applies` refuses it either way: asked, answered differently, no effect, not exercised. With a
    restart that waits for the controller's LeaderAndIsr (the ZooKeeper controller's `onBrokerStartup`), the same
    answer lets the broker apply it, and change coverage counts it there, with a trace that ends on that step."""
    from kcheck.model.replication import protocol as P

    stale_answers = []

    def pre_kip_380(r, m):
        if m.broker_epoch < r.broker_epoch:
            stale_answers.append(m)
        return P.accept_any_broker_epoch(r, m)

    cfg = Config(brokers=2, min_isr=1, records=0, crashes=1, lossy_crashes=0, fences=0, elections=0, isr_shrinks=1,
                 failovers=0, reads=0, max_leader_epoch=2, duplicates=False, atomic_fetch=True, metadata="zookeeper")
    today = Protocol.current()
    probe = ChangeProbe(replace(today, name="mine", control_request_incarnation=pre_kip_380), today, "current")
    r = exhaust(probe.protocol, cfg, probe=probe)
    (cov,) = probe.coverage.values()
    assert r.complete and stale_answers and cov.asked > 0
    assert (cov.differed, cov.differing_calls, cov.trace) == (0, 0, None)
    assert probe.unexercised == ["control_request_incarnation"]

    waits = replace(today, name="zk", restart_reads_metadata=P.await_leader_and_isr)
    probe = ChangeProbe(replace(waits, name="mine", control_request_incarnation=pre_kip_380), waits, "zk")
    r = exhaust(probe.protocol, cfg, probe=probe)
    (cov,) = probe.coverage.values()
    assert r.complete and cov.differed > 0 and not probe.unexercised
    # the first step it changes is the restart: the request for the old incarnation stays (today's rule drops it)
    *before, last = cov.trace.steps
    assert last.kind == "restart"
    s = initial_state(cfg)
    for a in before:
        s = apply(s, waits, cfg, a)
    mine, theirs = apply(s, probe.protocol, cfg, last), apply(s, waits, cfg, last)
    (stale,) = mine.pool - theirs.pool
    assert stale.to == last.args[0] and stale.broker_epoch < mine.replica(stale.to).broker_epoch
