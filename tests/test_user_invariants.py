"""Users' invariants from the command line (issue 20, point 3): `--invariants MODULE` loads a module whose checks are
registered with `kcheck.invariants.registry.register`, for any protocol including `current`, on explore, exhaust,
replay and check; the module is a plug-in: whatever it does wrong is one line, exit 2."""

from __future__ import annotations

import json
import uuid

import pytest

from cli_support import one_error_line, run
from kcheck.check import run_check
from kcheck.invariants.registry import REGISTRY

SMALL = ["--brokers", "2", "--min-isr", "1", "--records", "1", "--crashes", "0", "--lossy-crashes", "0", "--fences",
         "0", "--elections", "0", "--isr-shrinks", "0", "--failovers", "0", "--reads", "0", "--max-leader-epoch", "2",
         "--no-duplicates", "--atomic-fetch"]


def write_module(tmp_path, monkeypatch, body: str, prefix: str = "inv_") -> str:
    """A fresh module (unique name and ids: modules and the registry stay loaded between tests)."""
    name = prefix + uuid.uuid4().hex[:10]
    (tmp_path / f"{name}.py").write_text(body.replace("ID", f"user.{name}"))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


BUILT_IN = dict(REGISTRY)


def forget_users_invariants() -> None:
    """The registry as a new kcheck process has it (here one process runs many commands)."""
    REGISTRY.clear()
    REGISTRY.update(BUILT_IN)


@pytest.fixture(autouse=True)
def _registry():
    forget_users_invariants()
    yield
    forget_users_invariants()


# A property today's protocol breaks at once: nothing is ever written (a produce breaks it).
NOTHING_WRITTEN = '''
from kcheck.invariants.registry import Severity, Violation, register

@register("ID", "Nothing is ever written", Severity.HARD, "a test", "replication")
def nothing_written(s):
    leader = s.state.replica(1)
    found = [Violation("ID", Severity.HARD, "broker 1", f"broker 1 holds {len(leader.log)} record(s)")]
    return found if leader.log else []
'''


@pytest.mark.parametrize("command", [["exhaust", *SMALL], ["explore", "--examples", "20", "--steps", "10"]])
def test_a_users_invariant_is_checked_under_the_current_protocol(capsys, tmp_path, monkeypatch, command):
    mod = write_module(tmp_path, monkeypatch, NOTHING_WRITTEN)
    out_file = tmp_path / "t.json"
    code, out, err = run(capsys, *command, "--protocol", "current", "--invariants", mod, "--invariant",
                         f"user.{mod}", "--out", str(out_file), "--json")
    assert (code, err) == (1, "")
    rep = json.loads(out)
    assert rep["invariants"]["checked"] == [f"user.{mod}"]
    assert {v["invariant"] for v in rep["trace"]["violations"]} == {f"user.{mod}"}
    # without --invariant the user's invariant is checked beside every built-in one
    code, out, _ = run(capsys, *command, "--invariants", mod, "--json")
    assert code == 1 and f"user.{mod}" in json.loads(out)["invariants"]["checked"]
    # the trace names the user's invariant: replay needs its module, and then replays to the violation
    forget_users_invariants()
    code, out, err = run(capsys, "replay", str(out_file))
    assert code == 2
    one_error_line(err, f"'user.{mod}'", "--invariants MODULE")
    code, out, err = run(capsys, "replay", str(out_file), "--invariants", mod, "--json")
    assert code == 1 and json.loads(out)["violations"][0]["invariant"] == f"user.{mod}"


def test_a_users_invariant_needs_its_module(capsys):
    code, out, err = run(capsys, "exhaust", *SMALL, "--invariant", "user.never-loaded")
    assert code == 2
    one_error_line(err, "--invariant", "'user.never-loaded'", "--invariants MODULE")


@pytest.mark.parametrize("body, fragments", [
    ("raise RuntimeError('boom at import')\n", ["plug-in", "RuntimeError: boom at import"]),
    ("import sys\nsys.exit(3)\n", ["plug-in", "sys.exit(3)"]),
    ("x = 1\n", ["--invariants", "registers no replication invariant"]),
    (NOTHING_WRITTEN.replace('"replication")', '"placement")'), ["--invariants", "only placement ones"]),
    (NOTHING_WRITTEN.replace("Severity.HARD, \"a test\"", "Severity.SOFT, \"a test\""), ["--invariants", "is soft"]),
    (NOTHING_WRITTEN.replace("found = [Violation", "raise ValueError('bad check')\n    found = [Violation"),
     ["plug-in", "invariant user.", "ValueError: bad check"]),
    (NOTHING_WRITTEN.replace("found if leader.log else []", "found if leader.log else 'fine'"),
     ["plug-in", "bad result", "not a list of Violation"]),
    (NOTHING_WRITTEN.replace('Violation("ID"', 'Violation("user.other"'), ["plug-in", "not of 'user."]),
])
def test_a_broken_invariants_module_is_one_line_exit_2(capsys, tmp_path, monkeypatch, body, fragments):
    mod = write_module(tmp_path, monkeypatch, body)
    code, out, err = run(capsys, "exhaust", *SMALL, "--invariants", mod)
    assert code == 2 and out == ""
    one_error_line(err, *fragments)


@pytest.mark.parametrize("name, fragment", [("no_such_module_kcheck_inv", "cannot import module"),
                                            ("a b", "is not a module name"), ("mod.py", "is a file name"),
                                            ("\x1b[31m", "is not a module name")])
def test_an_invariants_module_that_does_not_import_is_one_line(capsys, tmp_path, name, fragment):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"protocol": "current", "config": {}, "steps": []}))
    for command in (["exhaust", *SMALL], ["explore", "--examples", "1", "--steps", "1"], ["replay", str(trace)],
                    ["check"]):
        code, out, err = run(capsys, *command, "--invariants", name)
        assert code == 2 and out == ""
        one_error_line(err, "--invariants", fragment)


def test_check_fails_on_a_users_placement_invariant(tmp_path, monkeypatch):
    # `kcheck check --invariants MODULE`: a user's hard invariant holds or fails the job (here: a placement one
    # every placement breaks; run_check is what `check` runs once the module is loaded).
    body = '''
from kcheck.invariants.registry import Severity, Violation, register

@register("ID", "Never more than one partition", Severity.HARD, "a test", "placement")
def one_partition(s):
    n = len(s.assignment.partitions)
    return [Violation("ID", Severity.HARD, "topic", f"{n} partitions")] if n > 1 else []
'''
    from kcheck.commands.replication import load_invariants

    mod = write_module(tmp_path, monkeypatch, body)
    ids = load_invariants([mod], applies_to=None)
    assert ids == [f"user.{mod}"] and REGISTRY[ids[0]].applies_to == "placement"
    result = run_check(max_brokers=2, proofs=False, user_invariants=ids)
    failed = {(o.placer, o.invariant) for o in result.failures}
    assert ("adminutils", ids[0]) in failed and ("striped", ids[0]) in failed
