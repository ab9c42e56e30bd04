"""`kcheck rules` (issue 20, point 2): the reference for rule writers is generated from the code, so it lists
every rule of `Protocol` with today's function (the release's), a signature, the state the rule may read,
the Kafka code it mirrors and the alternatives kcheck ships; and the README's "Changing a rule" section
names every rule it prints."""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable
from pathlib import Path

import pytest

from kcheck.cli import main
from kcheck.commands.rules import kafka_references, rule_hint
from kcheck.model.replication import protocol as protocol_module
from kcheck.model.replication import reassignment as reassignment_module
from kcheck.model.replication.protocol import Protocol
from kcheck.reference import releases

README = Path(__file__).resolve().parent.parent / "docs" / "tasks" / "protocol-change.md"


def _rules(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["rules", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_rules_json_lists_every_rule_with_todays_function(capsys):
    ref = _rules(capsys)
    assert ref["kafka_version"] == releases.DEFAULT_VERSION
    assert [r["name"] for r in ref["rules"]] == list(Protocol.rule_names())
    today = releases.profile().protocol().rules()
    for r in ref["rules"]:
        assert r["today"]["function"] == today[r["name"]], r["name"]
        assert r["signature"].startswith(r["name"] + "(") and " -> " in r["signature"]
        assert r["decides"], r["name"]
        assert r["today"]["kafka"], f"{r['name']}: today's function names no Kafka code in its docstring"
        assert r["today"]["function"] not in {a["function"] for a in r["alternatives"]}


def test_rules_follow_the_release(capsys):
    newest = {r["name"]: r for r in _rules(capsys)["rules"]}
    old = {r["name"]: r for r in _rules(capsys, "--kafka-version", "4.1.2")["rules"]}
    assert newest["reassignment_completion"]["today"]["function"] == "complete_when_adding_unless_shrinking"
    assert old["reassignment_completion"]["today"]["function"] == "complete_when_targets_in_sync"
    assert "complete_when_adding_unless_shrinking" in {a["function"] for a in old["reassignment_completion"]
                                                         ["alternatives"]}


def test_rules_name_the_state_a_rule_may_read(capsys):
    ref = _rules(capsys)
    by_name = {r["name"]: r for r in ref["rules"]}
    assert by_name["isr_join"]["reads"] == ["Replica", "Registry"]
    replica, registry = ref["state"]["Replica"], ref["state"]["Registry"]
    for member in ("view_of(follower)", "epoch_start", "follower_broker_epoch", "pending_isr", "is_leader"):
        assert replica[member], member
    for member in ("fenced", "broker_epochs", "elr", "last_known_leader"):
        assert registry[member], member
    assert by_name["truncation"]["reads"] == ["Replica", "Protocol"]
    assert by_name["alter_partition_rollback"]["reads"] == []
    assert set(by_name["crash_drops"]["reads"]) >= {"FetchRequest", "AlterPartition", "LeaderAndIsr"}


def test_kafka_references_are_kafkas_not_the_models():
    assert kafka_references("`Partition.makeLeader` keeps `Replica` and KIP-966, KAFKA-7128, `Replica.leo`") == [
        "Partition.makeLeader", "KIP-966", "KAFKA-7128"]


def _hint(fn: Callable[..., object]) -> tuple[list[object], object]:
    hints = typing.get_type_hints(fn)
    ret = hints.pop("return")
    return list(hints.values()), ret


def test_every_shipped_function_has_its_rules_signature(capsys):
    """The alternatives a rule's field declares take and return what the rule does."""
    for f in Protocol.__dataclass_fields__.values():
        if f.name not in Protocol.rule_names():
            continue
        params, ret = rule_hint(f.name)
        shipped = list(f.metadata["alternatives"]) + ([f.default] if callable(f.default) else [])
        for fn in shipped + [getattr(Protocol.current(), f.name)]:
            assert _hint(fn) == (params, ret), f"{f.name}: {fn.__name__}"


def test_every_rule_function_kcheck_defines_is_shipped_for_a_rule():
    """No rule function is left out of the reference: each public function of protocol.py and reassignment.py
    whose signature is some rule's is that rule's default or one of its alternatives."""
    shipped: dict[str, set[str]] = {}
    signatures = {}
    for f in Protocol.__dataclass_fields__.values():
        if f.name in Protocol.rule_names():
            shipped[f.name] = {fn.__name__ for fn in f.metadata["alternatives"]}
            shipped[f.name] |= {f.default.__name__} if callable(f.default) else set()
            shipped[f.name].add(getattr(Protocol.current(), f.name).__name__)
            signatures[f.name] = rule_hint(f.name)
    for module in (protocol_module, reassignment_module):
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("_") or fn.__module__ != module.__name__:
                continue
            matches = [rule for rule, sig in signatures.items() if _hint(fn) == sig]
            if matches:
                assert any(name in shipped[rule] for rule in matches), f"{name} fits {matches} but is shipped for none"


def test_rules_text_prints_each_signature_and_the_state(capsys):
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    ref = _rules(capsys)
    for r in ref["rules"]:
        assert r["signature"] in out
        assert f"today: {r['today']['function']}" in out
    assert "State a rule may read" in out and "view_of(follower): " in out


def test_rules_refuses_an_unknown_release_in_one_line(capsys):
    assert main(["rules", "--kafka-version", "9.9.9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kcheck: error: --kafka-version") and err.count("\n") == 1


def _readme_section(text: str, title: str) -> str:
    """The section under the heading containing `title`, up to the next heading of its level or higher
    (a `#` line inside a fenced code block is code, not a heading)."""
    headings: list[tuple[int, int, str]] = []  # (line, level, title)
    fenced = False
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"(#+)\s+(.*)", line)):
            headings.append((i, len(m.group(1)), m.group(2)))
    for k, (start, level, name) in enumerate(headings):
        if title.lower() in name.lower():
            end = next((i for i, lv, _ in headings[k + 1:] if lv <= level), len(lines))
            return "\n".join(lines[start:end])
    return ""


def test_readme_changing_a_rule_section_names_every_rule(capsys):
    """The README test: the section the integrator pastes ("Changing a rule") names every rule `kcheck rules`
    prints, and the five example modules."""
    section = _readme_section(README.read_text(encoding="utf-8"), "Changing a rule")
    assert section, "README.md has no 'Changing a rule' section"
    missing = [r["name"] for r in _rules(capsys)["rules"] if f"`{r['name']}`" not in section]
    assert not missing, f"README's 'Changing a rule' section does not name: {', '.join(missing)}"
    for module in ("truncate_to_hw_while_waiting", "isr_join_without_broker_epoch", "quorum_high_watermark",
                   "prefer_last_known_leader", "fenced_replicas_may_join"):
        assert module in section

