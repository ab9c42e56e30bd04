"""The user modules in examples/protocols/ (issue 20, point 2): one proposed change per kind of rule, each
written from scratch as a user would. Each module's docstring gives the command that checks it and the
outcome it claims; this runs that command (`python -m kcheck` from the examples folder, so the module
imports as a user's would) and holds the module to its claim."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "protocols"
# the kind of rule each example changes: the five kinds issue 20 asks for
KINDS = {
    "truncate_to_hw_while_waiting": "truncation",
    "isr_join_without_broker_epoch": "isr_join",
    "quorum_high_watermark": "high_watermark",
    "prefer_last_known_leader": "leader_choice",
    "fenced_replicas_may_join": "alter_partition_validation",
    # issue 15: what a leader tells clients, and when a broker applies a metadata record
    "latest_from_high_watermark": "list_offsets_latest",
    "apply_new_leader_epochs_only": "partition_state_applies",
    # issue 36: a fix for the late-record finding in Kafka 4.4's rule
    "keep_pending_isr": "partition_state_applies",
}


def _claim(module: str) -> tuple[list[str], int, str | None]:
    """The command in the module's docstring (continuation lines joined), the exit status it claims and the
    invariant it names (for a violation)."""
    text = (EXAMPLES / f"{module}.py").read_text(encoding="utf-8")
    doc = text.split('"""')[1]
    m = re.search(r"^\s*(python -m kcheck (?:[^\n]*\\\n)*[^\n]*)$", doc, re.M)
    assert m, f"{module}: no 'python -m kcheck' command in the docstring"
    args = shlex.split(m.group(1).replace("\\\n", " "))[3:]
    status = re.search(r"^exits (\d)", doc, re.M)
    assert status, f"{module}: the docstring claims no exit status"
    invariant = re.search(r"^exits 1 with ((?:replication|client|kraft)\.[a-z-]+|a replication\.\* violation)", doc,
                          re.M)
    named = invariant.group(1) if invariant and "*" not in invariant.group(1) else None
    return args, int(status.group(1)), named


def test_there_is_one_example_per_kind_of_rule():
    modules = sorted(p.stem for p in EXAMPLES.glob("*.py"))
    assert modules == sorted(KINDS)
    assert sorted(KINDS.values()) == sorted(
        ["truncation", "isr_join", "high_watermark", "leader_choice", "alter_partition_validation",
         "list_offsets_latest", "partition_state_applies", "partition_state_applies"])


@pytest.mark.parametrize("module", sorted(KINDS))
def test_example_changes_only_its_kind_of_rule(module):
    sys.path.insert(0, str(EXAMPLES))
    try:
        mod = __import__(module)
    finally:
        sys.path.remove(str(EXAMPLES))
    from kcheck.model.replication.protocol import Protocol

    changed = {k for k, fn in mod.proposed.rules().items() if fn != Protocol.current().rules()[k]}
    assert changed == {KINDS[module]}


@pytest.mark.parametrize("module", sorted(KINDS))
def test_example_outcome_is_the_one_its_docstring_claims(module):
    args, status, invariant = _claim(module)
    assert args[0] in ("exhaust", "explore") and f"{module}:proposed" in args
    run = subprocess.run([sys.executable, "-m", "kcheck", *args], cwd=EXAMPLES, capture_output=True, text=True,
                         timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == status, out[-2000:]
    if status == 0:
        assert "OK: no invariant violated in any reachable state" in out, out[-2000:]
        assert "never differed" not in out
    else:
        assert "FAIL" in out
        assert (invariant or "replication.") in out


# Today's protocol has no violation to stop at, so it visits every state of the bounds: the last known leader's
# (two faults) take a few minutes, so that one runs in the slow suite.
SLOW_TODAY = {"prefer_last_known_leader"}


@pytest.mark.parametrize("module", [pytest.param(m, marks=[pytest.mark.slow] if m in SLOW_TODAY else [])
                                    for m in sorted(KINDS) if _claim(m)[1] == 1])
def test_todays_protocol_passes_where_the_example_fails(module):
    """The violation is the change's: today's protocol is clean in the same bounds."""
    args, _, _ = _claim(module)
    i = args.index("--protocol")
    args[i + 1] = "current"
    run = subprocess.run([sys.executable, "-m", "kcheck", *args], cwd=EXAMPLES, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-2000:]
