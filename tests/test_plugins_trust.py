"""Trust boundaries: a trace file is data and never runs code; users' plug-ins fail in one line, exit 2.

Tests whose failure on unguarded code would kill or stop the pytest process (os.abort, KeyboardInterrupt, a FIFO
that blocks forever) run kcheck in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_support import one_error_line, run, write_module

DATA = Path(__file__).parent / "data"
PLACE = ["--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2"]
SIGNATURE = "(brokers, n, rf, fixed_start_index=-1, start_partition_id=-1, random=None)"


def subprocess_kcheck(*args, cwd, env_path=None, timeout=60):
    env = dict(os.environ)
    if env_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [env_path, env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "kcheck", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


# ---- traces are data ---------------------------------------------------------------------------

def valid_trace(**changes):
    trace = {"format": 2, "protocol": "current", "config": {"brokers": 3},
             "steps": [{"action": "produce", "broker": 1, "acks": "all"},
                       {"action": "fetch", "follower": 2},
                       {"action": "handle_fetch", "keep": False,
                        "message": {"type": "Fetch", "frm": 2, "to": 1, "offset": 0, "current_epoch": 1,
                                    "broker_epoch": 1}}]}
    trace.update(changes)
    return trace


def write_trace(tmp_path, trace, name="t.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(trace) if not isinstance(trace, str) else trace)
    return str(path)


def test_a_trace_naming_a_planted_module_runs_nothing(tmp_path):
    marker = tmp_path / "marker"
    (tmp_path / "evil_trace_payload.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "from kcheck.model.replication.protocol import Protocol\n"
        "def run():\n    return Protocol.current()\n")
    write_trace(tmp_path, valid_trace(protocol="evil_trace_payload:run"))
    # `python -m kcheck` puts the working directory first on sys.path: the planted module would be found.
    r = subprocess_kcheck("replay", "t.json", cwd=tmp_path)
    assert r.returncode == 2 and not marker.exists()
    one_error_line(r.stderr, "t.json: field 'protocol'", "--protocol evil_trace_payload:run")


def test_a_trace_naming_sys_exit_is_refused(capsys, tmp_path):
    path = write_trace(tmp_path, valid_trace(protocol="sys:exit"))
    code, out, err = run(capsys, "replay", path)
    assert code == 2 and out == ""
    one_error_line(err, f"{path}: field 'protocol'", "pass --protocol sys:exit")


def test_a_trace_naming_os_abort_is_refused(tmp_path):
    write_trace(tmp_path, valid_trace(protocol="os:abort"))
    r = subprocess_kcheck("replay", "t.json", cwd=tmp_path)
    assert r.returncode == 2
    one_error_line(r.stderr, "t.json: field 'protocol'")


def test_a_module_protocol_is_loaded_from_the_command_line_and_checked_against_the_label(capsys, tmp_path):
    spec = "kcheck.model.replication.protocol:Protocol.current"
    trace = valid_trace(protocol=spec, steps=[{"action": "produce", "broker": 1, "acks": "all"}])
    path = write_trace(tmp_path, trace)
    code, out, err = run(capsys, "replay", path, "--protocol", spec, "--json")
    assert (code, err) == (0, "") and json.loads(out)["steps"] == 1
    code, out, err = run(capsys, "replay", path, "--protocol", "kcheck.model.replication.protocol:other")
    assert code == 2
    one_error_line(err, f"{path}: field 'protocol'", "recorded under")
    code, out, err = run(capsys, "replay", path, "--protocol", "current", "--json")  # a built-in loads nothing
    assert code == 0


def test_an_unknown_protocol_name_in_a_trace_is_one_line(capsys, tmp_path):
    path = write_trace(tmp_path, valid_trace(protocol="nope"))
    code, _, err = run(capsys, "replay", path)
    assert code == 2
    one_error_line(err, f"{path}: field 'protocol': unknown protocol 'nope'")


def _set_step(n, field, value, message=False):
    def change(t):
        step = t["steps"][n - 1]
        (step["message"] if message else step)[field] = value
    return change


def _set_config(field, value):
    return lambda t: t["config"].__setitem__(field, value)


@pytest.mark.parametrize("change, fragment", [
    (_set_step(3, "frm", "2", message=True),
     "step 3: field 'frm': expected a broker id of the trace's cluster (1..3), got \"2\""),
    (_set_step(1, "broker", 99), "step 1: field 'broker': expected a broker id of the trace's cluster (1..3), got 99"),
    (_set_step(1, "broker", -1), "step 1: field 'broker': expected a broker id of the trace's cluster (1..3), got -1"),
    (_set_step(1, "broker", None), "step 1: field 'broker': expected a broker id"),
    (_set_step(1, "broker", 1.5), "step 1: field 'broker': expected a broker id"),
    (_set_step(1, "broker", True), "step 1: field 'broker': expected a broker id"),
    (_set_step(2, "follower", [2]), "step 2: field 'follower': expected a broker id"),
    (_set_step(3, "keep", "yes"), "step 3: field 'keep': expected true or false, got \"yes\""),
    (_set_step(3, "isr", [1], message=True), "step 3: field 'isr'"),
    (_set_config("records", float("nan")),
     "config: field 'records': expected an integer from 0 to 2147483647, got NaN"),
    (_set_config("records", 2.5), "config: field 'records': expected an integer from 0 to 2147483647, got 2.5"),
    (_set_config("duplicates", "no"), "config: field 'duplicates': expected true or false"),
    (_set_config("acks", [["all"]]), "config: field 'acks'"),
    (_set_step(1, "action", "teleport"), "step 1: unknown action 'teleport'"),
    (_set_step(1, "action", ["produce"]), "step 1: field 'action': expected a known action kind"),
    (lambda t: t["steps"][0].pop("broker"), "step 1: field 'broker'"),
    (lambda t: t["steps"][2]["message"].pop("offset"), "step 3: field 'offset'"),
    (lambda t: t.__setitem__("steps", {"1": "produce"}), "field 'steps': expected a list"),
    (lambda t: t.__setitem__("steps", [7]), "step 1: field '(step)'"),
    (lambda t: t.__setitem__("protocol", ["current"]), "field 'protocol': expected a string"),
    (lambda t: t.__setitem__("extra", 1), "field 'extra'"),
])
def test_a_malformed_trace_field_is_one_line_naming_the_step_and_field(capsys, tmp_path, change, fragment):
    trace = valid_trace()
    change(trace)
    path = write_trace(tmp_path, trace)
    code, out, err = run(capsys, "replay", path)
    assert code == 2 and out == ""
    one_error_line(err, f"kcheck: error: {path}: {fragment}")
    assert "unhashable" not in err


def test_a_fifo_directory_or_binary_is_not_a_trace(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    r = subprocess_kcheck("replay", str(fifo), cwd=tmp_path, timeout=30)  # no writer: must not block
    assert r.returncode == 2
    one_error_line(r.stderr, str(fifo))
    (tmp_path / "bin.json").write_bytes(b"\x00\x01\xff\xfe\x80binary")
    for path in (str(tmp_path), str(tmp_path / "bin.json")):
        r = subprocess_kcheck("replay", path, cwd=tmp_path, timeout=30)
        assert r.returncode == 2
        one_error_line(r.stderr, path)


# ---- placers -------------------------------------------------------------------------------------

BROKEN_PLACERS = {
    "raises at import": ("import sys\nraise ValueError('boom')\n", "ValueError: boom (at {mod}.py:2)"),
    "syntax error": ("def place(:\n", "SyntaxError"),
    "sys.exit at import": ("import sys\nsys.exit(0)\n", "SystemExit"),
    "imports a missing module": ("import no_such_dependency_xyz\n", "ModuleNotFoundError"),
    "sys.exit when called": (f"import sys\ndef place{SIGNATURE}:\n    sys.exit(0)\n", "SystemExit"),
    "raises when called": (f"def place{SIGNATURE}:\n    raise ValueError('boom')\n",
                           "ValueError: boom (at {mod}.py:2)"),
    "returns None": (f"def place{SIGNATURE}:\n    return None\n", "returned a NoneType"),
    "returns a list": (f"def place{SIGNATURE}:\n    return [[0, 1]] * n\n", "returned a list"),
    "returns a string": (f"def place{SIGNATURE}:\n    return 'ab'\n", "returned a str"),
    "string partition ids": (f"def place{SIGNATURE}:\n    return {{str(p): [0, 1] for p in range(n)}}\n",
                             "partition id '0'"),
    "negative partition ids": (f"def place{SIGNATURE}:\n    return {{-p - 1: [0, 1] for p in range(n)}}\n",
                               "partition -1, which was not requested"),
    "string replicas": (f"def place{SIGNATURE}:\n    return {{p: ['0', '1'] for p in range(n)}}\n",
                        "replica '0' (str)"),
    "float replicas": (f"def place{SIGNATURE}:\n    return {{p: [0.0, 1.0] for p in range(n)}}\n",
                       "replica 0.0 (float)"),
    "bool replicas": (f"def place{SIGNATURE}:\n    return {{p: [True, False] for p in range(n)}}\n",
                      "replica True (bool)"),
    "brokers not in the cluster": (f"def place{SIGNATURE}:\n    return {{p: [7, 8] for p in range(n)}}\n",
                                   "broker 7 for partition 0, not a broker of the cluster (0, 1, 2)"),
    "empty result": (f"def place{SIGNATURE}:\n    return {{}}\n", "returned no partitions"),
    "missing partitions": (f"def place{SIGNATURE}:\n    return {{0: [0, 1]}}\n", "no replicas for partition 1"),
    "wrong arity": ("def place(brokers, n):\n    return {}\n", "TypeError"),
}


@pytest.mark.parametrize("case", list(BROKEN_PLACERS))
def test_a_broken_placer_is_one_line_exit_2(capsys, tmp_path, monkeypatch, case):
    body, fragment = BROKEN_PLACERS[case]
    mod = write_module(tmp_path, monkeypatch, body)
    code, out, err = run(capsys, "place", *PLACE, "--placer", f"{mod}:place")
    assert code == 2 and out == ""
    one_error_line(err, f"kcheck: error: plug-in {mod}:place: ", fragment.format(mod=mod))


@pytest.mark.parametrize("case", ["returns a string", "raises when called", "string replicas"])
def test_optimize_and_prove_report_a_broken_placer(capsys, tmp_path, monkeypatch, case):
    mod = write_module(tmp_path, monkeypatch, BROKEN_PLACERS[case][0])
    code, out, err = run(capsys, "optimize", *PLACE, "--placer", f"{mod}:place")
    assert code == 2
    one_error_line(err, f"plug-in {mod}:place: ")
    code, out, err = run(capsys, "prove", "--placer", f"{mod}:place", "--max-brokers", "2", "--max-racks", "1",
                         "--max-partitions", "2", "--max-rf", "2")
    assert code == 2 and "proved" not in out
    one_error_line(err, f"plug-in {mod}:place: ")


def test_a_well_formed_placer_still_has_its_invariants_checked(capsys, tmp_path, monkeypatch):
    """Duplicate brokers are a finding of the invariants (exit 1), not a malformed result."""
    mod = write_module(tmp_path, monkeypatch, f"def place{SIGNATURE}:\n    return {{p: [0, 0] for p in range(n)}}\n")
    code, _, err = run(capsys, "place", *PLACE, "--placer", f"{mod}:place", "--report")
    assert code == 1 and "placement.distinct-brokers" in err


def test_debug_prints_the_traceback(capsys, tmp_path, monkeypatch):
    mod = write_module(tmp_path, monkeypatch, f"def place{SIGNATURE}:\n    raise ValueError('boom')\n")
    code, _, err = run(capsys, "--debug", "place", *PLACE, "--placer", f"{mod}:place")
    assert code == 2 and "Traceback" in err and f"{mod}.py\", line 2" in err
    assert err.rstrip().splitlines()[-1].startswith(f"kcheck: error: plug-in {mod}:place: ValueError: boom")
    code, _, err = run(capsys, "place", *PLACE, "--placer", f"{mod}:place")  # --debug does not stick
    assert code == 2 and "Traceback" not in err


def test_keyboard_interrupt_in_a_placer_is_its_failure(tmp_path):
    (tmp_path / "kbd_placer.py").write_text(f"def place{SIGNATURE}:\n    raise KeyboardInterrupt\n")
    r = subprocess_kcheck("place", *PLACE, "--placer", "kbd_placer:place", cwd=tmp_path, env_path=str(tmp_path))
    assert r.returncode == 2
    one_error_line(r.stderr, "plug-in kbd_placer:place: KeyboardInterrupt")


# ---- assignors -----------------------------------------------------------------------------------

ASSIGNOR = ("from kcheck.model.vocabulary import TopicPartition\n"
            "class A:\n"
            "    def name(self):\n        return 'a'\n"
            "    def assign_partitions(self, ppt, subs):\n{body}")


@pytest.mark.parametrize("body, fragment", [
    ("        import sys\n        sys.exit(0)\n", "SystemExit"),
    ("raise RuntimeError('bad import')\n", "RuntimeError: bad import"),
])
def test_a_broken_assignor_is_one_line_exit_2(capsys, tmp_path, monkeypatch, body, fragment):
    text = ASSIGNOR.format(body=body) if body.startswith(" ") else body
    mod = write_module(tmp_path, monkeypatch, text)
    code, out, err = run(capsys, "assign", "--assignor", f"{mod}:A", str(DATA / "group_fresh.json"))
    assert code == 2 and out == ""
    one_error_line(err, f"plug-in {mod}:A: ", fragment)


def test_an_assignor_constructor_that_exits_is_its_failure(capsys, tmp_path, monkeypatch):
    mod = write_module(tmp_path, monkeypatch, "import sys\nclass A:\n    def __init__(self):\n        sys.exit(1)\n")
    code, _, err = run(capsys, "assign", "--assignor", f"{mod}:A", str(DATA / "group_fresh.json"))
    assert code == 2
    one_error_line(err, f"plug-in {mod}:A: SystemExit: called sys.exit(1) (at {mod}.py:4)")


def test_an_assignor_returning_badly_typed_partitions_fails_in_one_line(capsys, tmp_path, monkeypatch):
    body = "        return {m: [TopicPartition('orders', str(i))] for i, m in enumerate(subs)}\n"
    mod = write_module(tmp_path, monkeypatch, ASSIGNOR.format(body=body))
    code, out, err = run(capsys, "assign", "--assignor", f"{mod}:A", str(DATA / "group_fresh.json"))
    assert code == 2 and out == ""
    one_error_line(err, f"plug-in {mod}:A: bad result: gave member", "not a topic name and partition number")


def test_keyboard_interrupt_in_an_assignor_is_its_failure(tmp_path):
    (tmp_path / "kbd_assignor.py").write_text(ASSIGNOR.format(body="        raise KeyboardInterrupt\n"))
    r = subprocess_kcheck("assign", "--assignor", "kbd_assignor:A", str(DATA / "group_fresh.json"), cwd=tmp_path,
                          env_path=str(tmp_path))
    assert r.returncode == 2
    one_error_line(r.stderr, "plug-in kbd_assignor:A: KeyboardInterrupt")


# ---- protocols -----------------------------------------------------------------------------------

PROTOCOL = ("from dataclasses import replace\n"
            "from kcheck.model.replication.protocol import Protocol\n"
            "def bad(*args):\n    raise ValueError('boom')\n"
            "P = replace(Protocol.current(), name='mine', fetch_validation=bad)\n"
            "def exits():\n    import sys\n    sys.exit(0)\n")


@pytest.mark.parametrize("command", [["exhaust"], ["explore", "--examples", "5", "--steps", "10"]])
def test_a_protocol_rule_that_raises_is_the_plug_ins_failure(capsys, tmp_path, monkeypatch, command):
    mod = write_module(tmp_path, monkeypatch, PROTOCOL)
    code, out, err = run(capsys, *command, "--protocol", f"{mod}:P")
    assert code == 2
    one_error_line(err, f"plug-in {mod}:P: rule fetch_validation: ValueError: boom (at {mod}.py:4)")


def test_a_protocol_factory_that_exits_is_the_plug_ins_failure(capsys, tmp_path, monkeypatch):
    mod = write_module(tmp_path, monkeypatch, PROTOCOL)
    code, _, err = run(capsys, "exhaust", "--protocol", f"{mod}:exits")
    assert code == 2
    one_error_line(err, f"plug-in {mod}:exits: SystemExit")


def test_replay_under_a_protocol_plug_in_that_raises(capsys, tmp_path, monkeypatch):
    mod = write_module(tmp_path, monkeypatch, PROTOCOL)
    path = write_trace(tmp_path, valid_trace(protocol=f"{mod}:P"))
    code, _, err = run(capsys, "replay", path, "--protocol", f"{mod}:P")
    assert code == 2
    one_error_line(err, f"plug-in {mod}:P: rule fetch_validation: ValueError: boom")
