"""`kcheck liveness` (kcheck/commands/liveness.py): the liveness properties on the exhaustive graph and in random runs
healed to quiescence, from the command line. KAFKA-19975 (a reassignment blocked for ever by a target replica that
is down, fixed in 4.3.0) is found as a lasso whose trace `kcheck replay` reads; 4.4.0's completion rule is clean at
the row's bound; the rule of releases before 4.3.0 is not."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from cli_support import one_error_line, run, write_module
from kcheck.invariants.replication_liveness import LIVENESS_SETTINGS, LivenessModel, fair
from kcheck.invariants.replication_searches.runs import Trace, replay
from kcheck.model.replication.actions import KINDS, Action, Config
from kcheck.model.replication.protocol import LIVENESS_VARIANTS
from kcheck.reference import releases
from kcheck.runtime.exit_codes import Exit

ROW = "blocked-reassignment-completion"
# KAFKA-19975's bound, spelled out as options (the row's settings and model settings): any --protocol runs at it.
ROW_BOUND = ["--brokers", "3", "--replication-factor", "2", "--min-isr", "1", "--records", "0", "--reassignments", "1",
             "--crashes", "1", "--lossy-crashes", "0", "--fences", "0", "--elections", "0", "--isr-shrinks", "0",
             "--failovers", "0", "--reads", "0", "--atomic-fetch", "--max-leader-epoch", "8", "--permanent-crashes",
             "--reassign-target", "1,2,3", "--reassign-target", "1,3"]


def _json(capsys, *args):
    code, out, err = run(capsys, "liveness", *args, "--json")
    assert err == "", err
    return code, json.loads(out)


def _verdicts(data):
    return {p["id"]: p["verdict"] for p in data["properties"]}


def test_kafka_19975_is_a_lasso_whose_trace_replays(capsys, tmp_path):
    out = tmp_path / "lasso.json"
    code, data = _json(capsys, "--protocol", ROW, "--out", str(out))
    assert code == Exit.FAILED and data["exit_status"] == 1 and data["complete"]
    assert data["model"] == {"permanent_crashes": True, "drops": False, "reassign_targets": [[1, 2, 3], [1, 3]]}
    assert _verdicts(data)["liveness.reassignment-ends"] == "violated"
    assert {v for k, v in _verdicts(data).items() if k != "liveness.reassignment-ends"} == {"holds"}
    lasso = next(p["lasso"] for p in data["properties"] if p["lasso"])
    assert lasso["engine"] == "graph" and lasso["kind"] == "cycle" and lasso["cycle"]
    kinds = [s["action"]["action"] for s in lasso["prefix"][1:]]
    assert "crash" in kinds and "reassign" in kinds and "restart" not in kinds
    # the trace file is prefix + cycle, in the format kcheck replay reads, and the cycle closes on the prefix's end
    trace = Trace.from_json(out.read_text())
    assert trace.protocol == ROW and json.loads(out.read_text()) == data["trace"]
    cut = data["trace_cycle_start"]
    assert len(trace.steps) == cut + len(lasso["cycle"])
    steps = replay(trace, LIVENESS_VARIANTS[ROW].protocol)
    assert len(steps) == len(trace.steps) + 1 and not steps[-1].violations  # no safety invariant breaks
    model = LivenessModel(LIVENESS_VARIANTS[ROW].protocol, trace.config, permanent_crashes=True)
    assert model.encode(steps[-1].state) == model.encode(steps[cut].state)
    end = steps[cut].state
    assert end.registry.reassigning and any(not end.replica(b).alive for b in end.registry.target)


def test_the_lasso_prints_as_prefix_and_cycle(capsys):
    code, out, err = run(capsys, "liveness", "--protocol", ROW)
    assert code == Exit.FAILED and err == ""
    assert "liveness.reassignment-ends: violated" in out and "prefix (" in out and "cycle (" in out
    assert "repeated for ever" in out and out.rstrip().endswith("--out FILE saves the lasso as a trace")


@pytest.mark.parametrize(("version", "code"), [("4.4.0", Exit.OK), ("4.2.2", Exit.FAILED)])
def test_the_rows_bound_under_a_releases_rule(capsys, version, code):
    """4.3.0 took KAFKA-19975's fix (complete once the adding replicas are in sync unless the move shrinks the
    replica set): clean at the row's bound. 4.2.2 still waits for every target replica: the row's lasso."""
    got, data = _json(capsys, *ROW_BOUND, "--kafka-version", version)
    assert got == code and data["complete"] and data["graph"]["bound_states"] == 0
    expected = "holds" if code == Exit.OK else "violated"
    assert _verdicts(data)["liveness.reassignment-ends"] == expected


@pytest.mark.slow
@pytest.mark.parametrize("version", releases.KNOWN_RELEASES)
def test_the_rows_bound_under_every_release(capsys, version):
    """KAFKA-19975 was fixed in 4.3.0 (apache/kafka#21114): every earlier release's rule blocks, no later one's."""
    code, data = _json(capsys, *ROW_BOUND, "--kafka-version", version)
    fixed = releases.version_key(version) >= releases.version_key("4.3.0")
    assert code == (Exit.OK if fixed else Exit.FAILED) and data["complete"]


def test_todays_protocol_is_clean_at_the_default_bound(capsys):
    code, data = _json(capsys)
    assert code == Exit.OK and data["ok"] and data["complete"] and data["stopped_by"] is None
    assert data["protocol"] == "current@4.4.0" and data["graph"]["states"] > 100 and data["graph"]["fair_sccs"] > 0
    assert set(_verdicts(data).values()) == {"holds"}


def test_a_stopped_graph_search_proves_nothing(capsys):
    code, data = _json(capsys, "--max-states", "40")
    assert code == Exit.INCOMPLETE and not data["complete"] and data["graph"]["stopped_by"] == "max-states"
    assert all(v.startswith("not violated (proves nothing") for v in _verdicts(data).values())
    code, out, _ = run(capsys, "liveness", "--max-states", "40")
    assert code == Exit.INCOMPLETE and "INCOMPLETE" in out


def test_random_runs_healed_to_quiescence_find_the_row_and_prove_nothing_when_clean(capsys):
    code, data = _json(capsys, "--protocol", ROW, "--engine", "random", "--programs", "60", "--steps", "12")
    assert code == Exit.FAILED and data["graph"] is None
    lasso = next(p["lasso"] for p in data["properties"] if p["lasso"])
    assert lasso["engine"] == "random" and lasso["kind"] in ("cycle", "terminal")
    code, data = _json(capsys, *ROW_BOUND, "--engine", "random", "--programs", "30", "--steps", "12")
    assert code == Exit.INCOMPLETE and data["random"]["programs"] == 30 and not data["complete"]


def test_a_users_rules_module(capsys, tmp_path, monkeypatch):
    mod = write_module(tmp_path, monkeypatch, '''
from dataclasses import replace
from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.reassignment import complete_when_targets_in_sync

def boom(*args):
    raise RuntimeError("my rule broke")

def nobody(*args):
    return None

waits = replace(Protocol.current(), name="waits", reassignment_completion=complete_when_targets_in_sync)
broken = replace(Protocol.current(), name="broken", reassignment_completion=boom)
never_elects = replace(Protocol.current(), name="never-elects", leader_choice=nobody)
''')
    code, data = _json(capsys, "--protocol", f"{mod}:waits", *ROW_BOUND)
    assert code == Exit.FAILED and _verdicts(data)["liveness.reassignment-ends"] == "violated"
    code, out, err = run(capsys, "liveness", "--protocol", f"{mod}:broken", *ROW_BOUND)
    assert code == Exit.BAD_INPUT and out == ""
    one_error_line(err, f"{mod}:broken", "my rule broke")
    # a controller that never elects: once the leader is gone for good, the run stops with nobody leading
    args = ["--protocol", f"{mod}:never_elects", "--permanent-crashes",
            "--records", "0", "--elections", "0"]
    code, data = _json(capsys, *args)
    lasso = next(p["lasso"] for p in data["properties"] if p["lasso"])
    assert code == Exit.FAILED and _verdicts(data)["liveness.leader-elected"] == "violated"
    assert lasso["kind"] == "terminal" and lasso["cycle"] == []
    assert data["trace_cycle_start"] is None and len(lasso["prefix"]) - 1 == len(data["trace"]["steps"])
    code, out, _ = run(capsys, "liveness", *args)
    assert code == Exit.FAILED and "no progress action is enabled" in out


@pytest.mark.parametrize(("args", "fragments"), [
    (["--engine", "fast"], ["--engine", "graph, random, both"]),
    (["--property", "liveness.nope"], ["--property", "liveness.isr-rejoin"]),
    (["--property", "liveness.reassignment-ends"], ["--reassignments 1"]),
    (["--reassignments", "1", "--reassign-target", "1,7"], ["--reassign-target", "1..2"]),
    (["--reassignments", "1", "--reassign-target", "1,x"], ["--reassign-target", "1,x"]),
    (["--reassign-target", "1,2"], ["--reassign-target", "--reassignments 1"]),
    (["--protocol", "nope"], ["--protocol", ROW]),
    (["--protocol", ROW, "--kafka-version", "4.4.0"], ["--kafka-version", "current only"]),
    (["--kafka-version", "9.9.9"], ["--kafka-version", "9.9.9"]),
    (["--metadata", "etcd"], ["--metadata", "etcd"]),
    (["--brokers", "9"], ["--brokers"]),
])
def test_bad_input_is_one_line(capsys, args, fragments):
    code, out, err = run(capsys, "liveness", *args)
    assert code == Exit.BAD_INPUT and out == ""
    one_error_line(err, *fragments)


def test_an_existing_out_file_is_refused_before_any_work(capsys, tmp_path):
    f = tmp_path / "taken.json"
    f.write_text("mine")
    code, out, err = run(capsys, "liveness", "--protocol", ROW, "--out", str(f))
    assert code == Exit.BAD_INPUT and out == "" and f.read_text() == "mine"
    one_error_line(err, "already exists")


def test_help_cites_kafka_and_its_kips(capsys):
    code, out, _ = run(capsys, "liveness", "--help")
    assert code == Exit.OK
    text = " ".join(out.split())
    assert "KAFKA-19975" in text and "KIP-455" in text and "KIP-966" in text and "shared" not in text


def test_every_config_field_is_an_option(capsys):
    code, out, _ = run(capsys, "liveness", "--help")
    assert code == Exit.OK
    for name in (f.name for f in fields(Config)):
        assert f"--{name.replace('_', '-')}" in out, name


def test_applying_the_metadata_log_is_fair_progress():
    assert "apply_metadata" in KINDS and fair(Action("apply_metadata", (1,)))
    assert LIVENESS_SETTINGS[ROW].permanent_crashes and Config(**LIVENESS_VARIANTS[ROW].settings).reassignments
