"""`kcheck exhaust` and `kcheck check` on the one engine (`kcheck.model.search` through
`invariants/replication_searches/exhaustive.py`): the same first violation, trace and state counts as the
replication model's own search (`yardstick.exhaust`, run here beside it), the invariant tally and change coverage it
reported, the abstract search, several workers, and the options' bad input."""

from __future__ import annotations

import json
import uuid

import pytest

from cli_support import one_error_line, run, write_module
from kcheck.check import SMALL_EXHAUSTIVE_BOUNDS, VARIANT_MAX_STATES
from kcheck.invariants.registry import REGISTRY
from kcheck.invariants.replication_searches.exhaustive import default_max_states, run_exhaust
from kcheck.invariants.replication_searches.runs import ChangeProbe, Trace, replay
from kcheck.invariants.replication_searches.yardstick import exhaust as old_exhaust
from kcheck.model.replication import VARIANTS, Config, Protocol
from kcheck.runtime.exit_codes import Exit

SMALL = ["--brokers", "2", "--min-isr", "1", "--records", "1", "--crashes", "1", "--lossy-crashes", "0",
         "--fences", "0", "--elections", "0", "--isr-shrinks", "0", "--failovers", "0", "--reads", "0",
         "--max-leader-epoch", "2", "--no-duplicates", "--atomic-fetch"]
# A lossy crash and no other: the durability invariants are switched off in some states (885 states).
LOSSY = [*SMALL, "--crashes", "0", "--lossy-crashes", "1", "--max-leader-epoch", "1"]
# Three brokers, one replica: brokers 2 and 3 hold none and are interchangeable (symmetry merges them).
SPARE = ["--brokers", "3", "--replication-factor", "1", "--min-isr", "1", "--records", "1", "--crashes", "1",
         "--lossy-crashes", "0", "--fences", "1", "--elections", "0", "--isr-shrinks", "0", "--failovers", "0",
         "--reads", "0", "--max-leader-epoch", "2", "--no-duplicates", "--atomic-fetch"]

# The searches `kcheck check` runs (run_replication_models): today's protocol at the small bounds, and each variant
# at its row's settings (row 4 is left to --deep). The three largest take minutes with both engines: slow.
DEEP = {"truncate-to-hw-lossy", "one-shot-epoch-lookup", "stale-control-request"}
CHECK_RUNS = [pytest.param("current", id="current")] + [
    pytest.param(name, id=name, marks=[pytest.mark.slow] if name in DEEP else [])
    for name in VARIANTS if name != "no-epoch-in-fetch"]


def mod_id() -> str:
    return uuid.uuid4().hex[:10]


def _check_search(name: str) -> tuple[Protocol, Config, dict]:
    if name == "current":
        return Protocol.current(), Config(**SMALL_EXHAUSTIVE_BOUNDS), {}
    v = VARIANTS[name]
    return v.protocol, Config(**v.settings), {"max_states": VARIANT_MAX_STATES, "only": set(v.violates)}


@pytest.mark.parametrize("name", CHECK_RUNS)
def test_check_searches_find_what_the_old_engine_found(name):
    protocol, cfg, kwargs = _check_search(name)
    old = old_exhaust(protocol, cfg, **kwargs)
    new = run_exhaust(protocol, cfg, **kwargs)
    assert (new.states, new.transitions, new.complete) == (old.states, old.transitions, old.complete)
    assert (new.trace is None) == (old.trace is None)
    if old.trace is not None:
        assert new.trace.steps == old.trace.steps  # the same shortest run: BFS in the same order
        assert new.trace.violations == old.trace.violations and new.trace.invariants == old.trace.invariants
        last = replay(new.trace, protocol, kwargs.get("only"))[-1]
        assert last.number == len(new.trace.steps) and last.violations == new.trace.violations
    # what the run says it checked: the same tally, state by state
    assert (new.tally.states, new.tally.off, new.tally.reasons) == (old.tally.states, old.tally.off,
                                                                     old.tally.reasons)


def test_the_abstract_search_keeps_the_same_representatives():
    for protocol, cfg, only in ((Protocol.current(), Config(**SMALL_EXHAUSTIVE_BOUNDS), None),
                                (VARIANTS["hw-over-committed-isr"].protocol,
                                 Config(**{**VARIANTS["hw-over-committed-isr"].settings, "atomic_fetch": True}),
                                 set(VARIANTS["hw-over-committed-isr"].violates))):
        old = old_exhaust(protocol, cfg, abstract=True, only=only)
        new = run_exhaust(protocol, cfg, abstract=True, only=only)
        assert (new.states, new.transitions) == (old.states, old.transitions)
        assert not new.complete and new.abstract
        assert (new.trace and new.trace.steps) == (old.trace and old.trace.steps)
        if new.trace is not None:  # a concrete run of the model, not of the abstraction
            assert replay(new.trace, protocol, only)[-1].violations == new.trace.violations


def test_change_coverage_sees_every_successor_as_before():
    v = VARIANTS["unclean-election"]
    cfg = Config(**{**v.settings, "atomic_fetch": True})
    old_probe = ChangeProbe(v.protocol, Protocol.current(), "current")
    old = old_exhaust(old_probe.protocol, cfg, probe=old_probe, only=set(v.violates))
    probe = ChangeProbe(v.protocol, Protocol.current(), "current")
    new = run_exhaust(probe.protocol, cfg, probe=probe, only=set(v.violates), workers=2)
    assert new.workers == 1 and "change coverage runs in this one process" in new.notes[0]
    assert new.states == old.states and probe.visited == old_probe.visited
    assert [c.as_dict() for c in probe.coverage.values()] == [c.as_dict() for c in old_probe.coverage.values()]
    assert any(c.differed for c in probe.coverage.values())


def test_two_workers_find_what_one_finds():
    cfg = Config(brokers=2, min_isr=1, records=1, max_leader_epoch=1, crashes=0, lossy_crashes=1, fences=0,
                 elections=0, isr_shrinks=0, failovers=0, reads=0, duplicates=False, atomic_fetch=True)
    one = run_exhaust(Protocol.current(), cfg, workers=1)
    two = run_exhaust(Protocol.current(), cfg, workers=2)
    assert one.complete and two.complete and two.workers == 2
    assert (two.states, two.transitions) == (one.states, one.transitions)
    # the tally counts what the forked workers checked too; the lossy crash switches durability off somewhere
    assert two.tally.states == one.tally.states == one.states
    assert two.tally.off == one.tally.off and two.tally.reasons == one.tally.reasons
    assert 0 < one.tally.off["replication.no-acked-lost"] < one.states
    v = VARIANTS["last-replica-standing"]
    one = run_exhaust(v.protocol, Config(**v.settings), only=set(v.violates))
    two = run_exhaust(v.protocol, Config(**v.settings), only=set(v.violates), workers=2)
    assert len(two.trace.steps) == len(one.trace.steps)
    assert {x.invariant for x in two.trace.violations} == {x.invariant for x in one.trace.violations}
    assert replay(two.trace, v.protocol, set(v.violates))[-1].violations == two.trace.violations


def test_cli_workers_2_equals_workers_1(capsys, tmp_path, monkeypatch):
    reps = []
    for workers in ("1", "2"):
        code, out, err = run(capsys, "exhaust", *LOSSY, "--workers", workers, "--json")
        reps.append((code, json.loads(out)))
    (c1, one), (c2, two) = reps
    assert c1 == c2 == Exit.OK and two["workers"] == 2 and one["workers"] == 1
    for key in ("states", "transitions", "complete", "invariants"):
        assert one[key] == two[key], key
    # a violation: a user's invariant that forbids any acknowledged record
    ids = f"user.acked-{mod_id()}"
    mod = write_module(tmp_path, monkeypatch, f'''
from kcheck.invariants.registry import Severity, Violation, register

@register("{ids}", "no record is ever acknowledged", Severity.HARD, "a test", "replication")
def nothing_acked(subject):
    acked = subject.state.history.acked
    return [Violation("{ids}", Severity.HARD, "partition", f"{{len(acked)}} acknowledged")] if acked else []
''')
    before = dict(REGISTRY)
    traces = []
    for workers in ("1", "2"):
        try:
            code, out, _ = run(capsys, "exhaust", *SMALL, "--invariants", mod, "--invariant", ids,
                               "--workers", workers, "--json")
        finally:
            REGISTRY.clear()
            REGISTRY.update(before)
        rep = json.loads(out)
        assert code == Exit.FAILED and rep["stopped_by"] == "violation" and not rep["complete"]
        traces.append(rep["trace"])
    assert len(traces[0]["steps"]) == len(traces[1]["steps"]) > 0
    assert [v["invariant"] for v in traces[0]["violations"]] == [v["invariant"] for v in traces[1]["violations"]]


def test_json_keeps_every_key_and_says_which_engine(capsys):
    code, out, _ = run(capsys, "exhaust", *SPARE, "--json")
    rep = json.loads(out)
    old_keys = {"protocol", "config", "ok", "exit_status", "complete", "stopped_by", "violation_found",
                "stopped_at_max_states", "caps", "peak_rss_bytes", "abstract", "states", "transitions", "depth",
                "seconds", "invariants", "coverage", "trace"}
    new_keys = {"engine", "workers", "bytes_per_state", "collision_probability", "symmetry", "symmetry_note"}
    assert old_keys | new_keys <= set(rep)
    assert code == Exit.OK and rep["complete"] and rep["engine"] == "kcheck.model.search" and rep["workers"] == 1
    assert rep["symmetry"] == "on" and rep["symmetry_note"] is None
    assert 0 < rep["bytes_per_state"] < 200 and 0 < rep["collision_probability"] < 1e-9
    assert rep["caps"]["max_states"] == default_max_states(rep["caps"]["max_memory_bytes"])
    code, out, _ = run(capsys, "exhaust", *SPARE, "--no-symmetry", "--json")
    off = json.loads(out)
    assert code == Exit.OK and off["symmetry"] == "off" and off["symmetry_note"] == "switched off"
    assert off["states"] > rep["states"]  # brokers 2 and 3 are told apart
    code, out, _ = run(capsys, "exhaust", *SMALL, "--json")
    rep = json.loads(out)
    assert rep["symmetry"] == "off" and "no two brokers are interchangeable" in rep["symmetry_note"]
    code, out, _ = run(capsys, "exhaust", *SPARE)
    text = " ".join(out.split())
    assert "engine: kcheck.model.search, one process, symmetry on" in text
    assert "a proof within them, up to a fingerprint collision" in text


def test_coverage_dir_is_written_and_replays(capsys, tmp_path):
    cov = tmp_path / "cov"
    code, out, _ = run(capsys, "exhaust", "--protocol", "hw-over-committed-isr", "--coverage-dir", str(cov),
                       "--workers", "2", "--json")
    rep = json.loads(out)
    assert code == Exit.FAILED and rep["workers"] == 1 and rep["notes"]
    written = sorted(p.name for p in cov.iterdir())
    assert written == sorted(f"{r['rule']}.json" for r in rep["coverage"]["rules"] if r["trace"]) and written
    for path in cov.iterdir():
        trace = Trace.from_json(path.read_text())
        assert trace.protocol == "hw-over-committed-isr"
        code, _, err = run(capsys, "replay", str(path), "--json")
        assert code in (Exit.OK, Exit.FAILED) and err == ""


def test_out_trace_replays(capsys, tmp_path):
    out_file = tmp_path / "t.json"
    code, out, _ = run(capsys, "exhaust", "--protocol", "zombie-controller", "--out", str(out_file), "--json")
    rep = json.loads(out)
    assert code == Exit.FAILED and json.loads(out_file.read_text()) == rep["trace"]
    code, out, _ = run(capsys, "replay", str(out_file), "--json")
    assert code == Exit.FAILED and json.loads(out)["steps"] == len(rep["trace"]["steps"])


@pytest.mark.parametrize("args, fragments", [
    (["--workers", "0"], ["--workers"]),
    (["--workers", "two"], ["--workers"]),
    (["--master", "http://example:7077"], ["--master", "expected a Spark master URL"]),
    (["--master", "local[0]"], ["--master", "expected a Spark master URL"]),
    (["--master", "local[2]", "--workers", "2"], ["--workers", "with --master"]),
    (["--master", "local[2]", "--spill-dir", "somewhere"], ["--spill-dir", "with --master"]),
])
def test_bad_engine_options_are_one_line(capsys, args, fragments):
    code, out, err = run(capsys, "exhaust", *SMALL, *args)
    assert code == Exit.BAD_INPUT and out == ""
    one_error_line(err, *fragments)


def test_bad_spill_dir_is_one_line_and_a_good_one_is_used(capsys, tmp_path):
    not_dir = tmp_path / "file"
    not_dir.write_text("x")
    code, out, err = run(capsys, "exhaust", *SMALL, "--spill-dir", str(not_dir))
    assert code == Exit.BAD_INPUT and out == ""
    one_error_line(err, "--spill-dir", "is not a directory")
    code, out, err = run(capsys, "exhaust", *SMALL, "--spill-dir", str(not_dir / "below"))
    assert code == Exit.BAD_INPUT
    one_error_line(err, "--spill-dir", "cannot create")
    spill = tmp_path / "spill"
    code, out, _ = run(capsys, "exhaust", *SMALL, "--spill-dir", str(spill), "--json")
    rep = json.loads(out)
    code0, out0, _ = run(capsys, "exhaust", *SMALL, "--json")
    assert code == code0 == Exit.OK and spill.is_dir() and rep["states"] == json.loads(out0)["states"]


@pytest.mark.spark
@pytest.mark.slow
def test_master_runs_the_search_on_spark_with_the_same_counts(capsys):
    pytest.importorskip("pyspark")
    code, out, err = run(capsys, "exhaust", *SMALL, "--master", "local[2]", "--json")
    rep = json.loads(out)
    code1, out1, _ = run(capsys, "exhaust", *SMALL, "--json")
    one = json.loads(out1)
    assert code == code1 == Exit.OK and rep["engine"] == "kcheck.spark_check.exhaust"
    assert (rep["states"], rep["transitions"], rep["complete"]) == (one["states"], one["transitions"], True)
    assert rep["invariants"]["switched_off"] is None and rep["notes"]


def test_a_users_invariant_failing_in_a_worker_is_one_line(capsys, tmp_path, monkeypatch):
    ids = f"user.raises-{mod_id()}"
    mod = write_module(tmp_path, monkeypatch, f'''
from kcheck.invariants.registry import Severity, register

@register("{ids}", "raises once a record is acknowledged", Severity.HARD, "a test", "replication")
def raises(subject):
    if subject.state.history.acked:
        raise KeyError("oops")
    return []
''')
    before = dict(REGISTRY)
    try:
        code, out, err = run(capsys, "exhaust", *SMALL, "--invariants", mod, "--workers", "2")
    finally:
        REGISTRY.clear()
        REGISTRY.update(before)
    assert code == Exit.BAD_INPUT and out == ""
    one_error_line(err, f"plug-in {mod}: invariant {ids}: KeyError: 'oops'")


@pytest.mark.slow  # about 30 CPU s: the exact search in novelty order
def test_check_deep_finds_row_4_by_exact_search_and_replays_it_split():
    from kcheck.check import hunt_variant

    out = hunt_variant("no-epoch-in-fetch")
    v = VARIANTS["no-epoch-in-fetch"]
    assert out.ok and out.engine == "exhaust --order novelty" and set(out.violated) & set(v.violates)
    assert out.trace_steps > 0 and "atomic steps" in out.size and "not found" not in out.detail
