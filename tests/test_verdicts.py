"""Verdicts that cannot pass by accident (issue 20, points 4 and 6): an unknown invariant id is refused wherever it
comes from; every run says which invariants it checked and which its bounds switched off, and why; `complete` is
reported apart from a violation found; program counts mean what --examples says; every Config field is an option
of explore, exhaust and replay, shown with its meaning and validated."""

from __future__ import annotations

import json
import re
from dataclasses import fields

import pytest

from cli_support import one_error_line, run, write_module
from kcheck.model.replication.actions import Config

SMALL = ["--brokers", "2", "--min-isr", "1", "--records", "1", "--crashes", "0", "--fences", "0", "--elections", "0",
         "--isr-shrinks", "0", "--failovers", "0", "--reads", "0", "--max-leader-epoch", "2", "--no-duplicates",
         "--atomic-fetch"]


# ---- unknown invariant ids ------------------------------------------------------------------------

TYPO_VARIANT = """
from kcheck.model.replication.protocol import VARIANTS, Variant
from dataclasses import replace
typo = replace(VARIANTS["zombie-controller"], violates=("replication.epochs-monotonik",))
empty = replace(VARIANTS["zombie-controller"], violates=())
"""


@pytest.mark.parametrize("command", [["exhaust"], ["explore", "--examples", "5", "--steps", "5"]])
def test_a_variant_naming_an_unknown_invariant_is_refused(capsys, tmp_path, monkeypatch, command):
    # On main this checked no invariant at all and printed "OK: no invariant violated in any reachable state".
    mod = write_module(tmp_path, monkeypatch, TYPO_VARIANT)
    code, out, err = run(capsys, *command, "--protocol", f"{mod}:typo")
    assert code == 2 and out == ""
    one_error_line(err, "--protocol", "'replication.epochs-monotonik'", "not a replication invariant")
    code, out, err = run(capsys, *command, "--protocol", f"{mod}:empty")
    assert code == 2
    one_error_line(err, "--protocol", "names no invariant")


def test_a_trace_naming_an_unknown_invariant_is_refused(capsys, tmp_path):
    trace = {"format": 2, "protocol": "current", "config": {"brokers": 2, "min_isr": 1},
             "steps": [{"action": "produce", "broker": 1, "acks": "all"}],
             "violations": [{"invariant": "replication.log-matchin", "severity": "hard", "where": "x", "message": "y"}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    code, out, err = run(capsys, "replay", str(path))
    assert code == 2 and out == ""
    one_error_line(err, "violations[0]", "'replication.log-matchin'")
    trace["violations"] = []
    trace["invariants"] = ["replication.log-matching", "user.nope"]
    path.write_text(json.dumps(trace))
    code, out, err = run(capsys, "replay", str(path))
    assert code == 2
    one_error_line(err, "field 'invariants'", "'user.nope'", "--invariants MODULE")


def test_a_trace_replays_the_invariants_its_run_checked(capsys, tmp_path):
    out_file = tmp_path / "t.json"
    code, _, _ = run(capsys, "exhaust", "--protocol", "zombie-controller", "--out", str(out_file))
    assert code == 1
    trace = json.loads(out_file.read_text())
    assert trace["invariants"] == ["replication.epochs-monotonic", "replication.one-leader-per-epoch"]
    code, out, _ = run(capsys, "replay", str(out_file), "--json")
    rep = json.loads(out)
    assert code == 1 and rep["invariants"]["checked"] == ["replication.one-leader-per-epoch",
                                                          "replication.epochs-monotonic"]


# ---- what was checked, and what the bounds switched off -------------------------------------------------

def test_durability_switched_off_by_the_lossy_crash_budget_is_reported(capsys):
    # min.insync.replicas 1 and one lossy crash: after the crash Kafka promises no durability, so the three
    # durability invariants are switched off in those states. On main nothing said so.
    code, out, _ = run(capsys, "exhaust", *SMALL, "--lossy-crashes", "1", "--json")
    rep = json.loads(out)
    assert code == 0 and rep["complete"]
    off = {o["invariant"]: o for o in rep["invariants"]["switched_off"]}
    assert set(off) == {"replication.electable-has-committed", "replication.leader-has-acked",
                        "replication.no-acked-lost"}
    for o in off.values():
        assert 0 < o["states_off"] < o["states"] == rep["states"]
        assert "min.insync.replicas=1" in o["reason"]
    assert "replication.log-matching" in rep["invariants"]["checked"]
    not_checked = {o["invariant"] for o in rep["invariants"]["not_checked"]}
    assert "replication.reassignment-completed" in not_checked  # no reassignment in these bounds
    code, out, _ = run(capsys, "exhaust", *SMALL, "--lossy-crashes", "1")
    assert "switched off by the bounds in" in out and "replication.electable-has-committed" in out
    assert "NOT checked (no reassignment in this configuration" in out


def test_a_variant_run_says_which_invariants_it_left_out(capsys):
    code, out, _ = run(capsys, "exhaust", "--protocol", "zombie-controller", "--json")
    rep = json.loads(out)
    assert code == 1
    assert rep["invariants"]["checked"] == ["replication.one-leader-per-epoch", "replication.epochs-monotonic"]
    left = {o["invariant"]: o["reason"] for o in rep["invariants"]["not_checked"]}
    assert "zombie-controller's row" in left["replication.log-matching"]


# ---- complete, apart from a violation; program counts ------------------------------------------------------

def test_exhaust_json_is_not_complete_next_to_a_violation(capsys):
    code, out, _ = run(capsys, "exhaust", "--protocol", "zombie-controller", "--json")
    rep = json.loads(out)
    assert code == 1 and rep["violation_found"] and not rep["ok"]
    assert rep["complete"] is False  # main said true: the search stops at the first violation
    code, out, _ = run(capsys, "exhaust", "--protocol", "zombie-controller")
    assert "search stopped at the first violation: not every reachable state was visited." in out
    code, out, _ = run(capsys, "exhaust", *SMALL, "--lossy-crashes", "0", "--json")
    rep = json.loads(out)
    assert code == 0 and rep["complete"] and not rep["violation_found"]
    code, out, _ = run(capsys, "exhaust", *SMALL, "--lossy-crashes", "1", "--max-states", "50", "--json")
    rep = json.loads(out)
    assert code == 4 and not rep["complete"] and rep["stopped_at_max_states"]  # main: exit 0, as if it passed


def test_explore_reports_the_programs_asked_for(capsys):
    # On main `explore --examples 40` reported every run Hypothesis started, abandoned ones included (about twice).
    # Now a program is one of the one engine's: exactly --examples of them, each at most --steps steps.
    code, out, _ = run(capsys, "explore", "--examples", "40", "--steps", "20", "--json")
    rep = json.loads(out)
    assert code == 4  # a clean random search is never a pass (exit_codes.Exit.INCOMPLETE)
    assert rep["examples"] == rep["examples_asked"] == 40 and rep["steps_asked"] == 20
    assert 40 < rep["steps"] <= 40 * 20 and rep["engine"] == "kcheck.model.search.random_search"
    code, out, _ = run(capsys, "explore", "--examples", "40", "--steps", "20")
    assert "INCOMPLETE: no invariant violated in 40 programs (--examples 40)" in out


# ---- every Config field on the command line ----------------------------------------------------------------

@pytest.mark.parametrize("command", ["explore", "exhaust", "replay"])
def test_every_config_field_is_an_option(capsys, command):
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    for name in (f.name for f in fields(Config)):
        option = f"--{name.replace('_', '-')}"
        if name == "atomic_fetch":
            option = "--atomic-fetch"
        assert option in out, (command, option)


def test_settings_line_shows_each_option_with_its_meaning(capsys):
    code, out, _ = run(capsys, "explore", "--examples", "2", "--steps", "3", "--initial-isr", "1",
                       "--max-leader-epoch", "3", "--reads", "0", "--no-duplicates")
    assert code == 4
    settings = re.sub(r"\s+", " ", out)  # the console wraps long lines
    for fragment in ("--initial-isr 1 (the first replicas in the ISR at the start)",
                     "--min-isr 2 (min.insync.replicas)", "--max-leader-epoch 3 (", "--reads 0 (consumer reads)",
                     "--no-duplicates (", "--lossy-crashes 1 ("):
        assert fragment in settings, fragment
    code, out, _ = run(capsys, "explore", "--examples", "2", "--steps", "3", "--initial-isr", "1", "--json")
    assert code == 4 and json.loads(out)["config"]["initial_isr"] == 1


@pytest.mark.parametrize("args, option, fragment", [
    (["--brokers", "2", "--initial-isr", "3"], "--initial-isr", "must be between 0 and the replication factor 2"),
    (["--max-leader-epoch", "0"], "--max-leader-epoch", "must be at least 1"),
    (["--brokers", "2", "--min-isr", "3"], "--min-isr", "must be between 1 and the broker count 2"),
    (["--initial-isr", "-1"], "--initial-isr", "greater than or equal to 0"),
    (["--reads", "x"], "--reads", "valid integer"),
])
@pytest.mark.parametrize("command", [["explore", "--examples", "1", "--steps", "1"], ["exhaust", "--max-states", "1"]])
def test_a_bad_setting_is_one_line_naming_the_option(capsys, command, args, option, fragment):
    code, out, err = run(capsys, *command, *args)
    assert code == 2 and out == ""
    one_error_line(err, option, fragment)


def test_replay_takes_settings_over_the_trace(capsys, tmp_path):
    trace = {"format": 2, "protocol": "current", "config": {"brokers": 2, "min_isr": 2},
             "steps": [{"action": "produce", "broker": 1, "acks": "all"}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    code, out, _ = run(capsys, "replay", str(path), "--min-isr", "1", "--initial-isr", "1", "--json")
    rep = json.loads(out)
    assert code == 0 and rep["config"]["min_isr"] == 1 and rep["config"]["initial_isr"] == 1
    code, out, err = run(capsys, "replay", str(path), "--min-isr", "3")
    assert code == 2
    one_error_line(err, "--min-isr")
