"""The CI gate (gate/policy.py): plans judged by what they change, --baseline, --allowlist, --decommission,
--fail-on, their JSON and JUnit forms, one-line refusals, and the one exit policy in the README.

The cluster and plans are the CI-gate walk-through's (tests/test_walkthrough_gate.py): brokers 1..6 in racks a, b,
c and broker 7 (rack c) new and empty; `legacy-0` has both replicas in rack a (a hard finding the plans leave as
it is); the plan moves broker 6's three replicas to broker 7."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from cli_support import one_error_line, run
from kcheck.gate.policy import gate_settings, judge
from kcheck.invariants import BalanceSettings, PlacementSubject, Report, Severity, Violation, check_placement
from kcheck.model import Cluster, ReplicaAssignment
from kcheck.runtime.exit_codes import POLICY, Exit
from test_walkthrough_gate import BROKERS, DESCRIBE, PLAN, PLAN_PARTIAL

LEGACY = ("placement.rack-diversity", "partition legacy-0")


@pytest.fixture
def files(tmp_path, monkeypatch):
    for name, text in (("describe.txt", DESCRIBE), ("brokers.txt", BROKERS), ("plan.json", PLAN),
                       ("partial.json", PLAN_PARTIAL)):
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def keys(found):
    return {(v["invariant"], v["where"]) for v in found}


def reassign_json(capsys, plan="plan.json", *more):
    code, out, err = run(capsys, "verify-reassignment", "describe.txt", plan, "--brokers-file", "brokers.txt",
                         "--json", *more)
    assert err == "", err
    doc = json.loads(out)
    assert doc["exit_status"] == code
    return code, doc


# --- 1. what a plan introduces, fixes and leaves unchanged ------------------------------------------------------


def test_verify_reassignment_reports_what_the_plan_introduces_fixes_and_leaves_unchanged(capsys, files):
    # Before: legacy-0 in one rack (hard); broker 7 empty: too few replicas and leaders (soft). The plan fills
    # broker 7 and leaves legacy-0 alone. On HEAD the JSON had none of these lists and the run exited 1.
    code, doc = reassign_json(capsys, "plan.json", "--decommission", "6")
    assert keys(doc["unchanged"]) == {LEGACY}
    assert keys(doc["fixed"]) == {("placement.replica-spread", "broker 7"), ("placement.leader-spread", "broker 7")}
    assert doc["introduced"] == [] and doc["suppressed"] == []
    assert (code, doc["fail_on"], doc["ok"], doc["command"]) == (1, "hard", False, "verify-reassignment")


def test_a_finding_the_plan_introduces_is_introduced(capsys, files):
    # orders-0 moved from 1,3,5 (racks a, b, c) to 1,2,4 (a, a, b): a rack finding the current state does not have.
    (files / "bad.json").write_text('{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2,4]}]}')
    code, doc = reassign_json(capsys, "bad.json", "--fail-on", "new")
    assert code == 1
    assert ("placement.rack-diversity", "partition orders-0") in keys(doc["introduced"])
    assert LEGACY in keys(doc["unchanged"])


# --- 4. --fail-on ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fail_on", "plan", "expected"), [
    ("hard", "plan.json", Exit.FAILED),  # legacy-0's hard finding is still there
    ("new", "plan.json", Exit.OK),  # ... but the plan does not introduce it
    ("new", "partial.json", Exit.FAILED),  # a replica left on the leaving broker: introduced, hard
])
def test_fail_on_sets_what_fails_the_gate(capsys, files, fail_on, plan, expected):
    code, doc = reassign_json(capsys, plan, "--decommission", "6", "--fail-on", fail_on)
    assert code == expected and doc["fail_on"] == fail_on


def test_fail_on_soft_counts_soft_findings(capsys, files):
    allow = files / "allow.txt"
    allow.write_text("placement.rack-diversity | partition legacy-0 | known\n")
    # Without --decommission, broker 6 emptied is a soft balance finding the plan introduces.
    code, doc = reassign_json(capsys, "plan.json", "--allowlist", str(allow), "--fail-on", "hard")
    assert code == 0 and ("placement.replica-spread", "broker 6") in keys(doc["introduced"])
    code, _ = reassign_json(capsys, "plan.json", "--allowlist", str(allow), "--fail-on", "soft")
    assert code == 1


# --- 3. --decommission -------------------------------------------------------------------------------------------


def test_decommission_judges_balance_over_the_remaining_brokers(capsys, files):
    _, plain = reassign_json(capsys, "plan.json")
    _, leaving = reassign_json(capsys, "plan.json", "--decommission", "6")
    emptied = ("placement.replica-spread", "broker 6")
    assert emptied in keys(plain["violations"]) and emptied not in keys(leaving["violations"])
    assert leaving["decommission"] == [6]


def test_a_replica_left_on_a_leaving_broker_is_a_hard_finding(capsys, files):
    _, doc = reassign_json(capsys, "partial.json", "--decommission", "6")
    (v,) = [v for v in doc["introduced"] if v["invariant"] == "placement.leaving-broker-emptied"]
    assert (v["severity"], v["where"], v["detail"]["partitions"]) == ("hard", "broker 6", ["orders-5"])


def test_the_leaving_check_on_a_placement():
    cluster = Cluster.of([1, 2, 3])
    placement = ReplicaAssignment.from_placement("t", {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    report = check_placement(PlacementSubject(cluster, placement, BalanceSettings(), leaving=frozenset({3})))
    (v,) = [v for v in report.violations if v.invariant == "placement.leaving-broker-emptied"]
    assert v.where == "broker 3" and v.detail["partitions"] == ["t-1", "t-2"]
    assert "placement.leaving-broker-emptied" in check_placement(PlacementSubject(cluster, placement)).skipped


def test_a_rack_whose_brokers_all_leave_is_not_a_rack_the_target_must_use():
    """Racks a, b, c with c's two brokers leaving: a target on racks a and b spans every rack left (found by
    `kcheck plan`'s brute-force check, whose plan verify-reassignment refused with "needs 3")."""
    cluster = Cluster.of([1, 2, 3, 4, 5, 6], racks={1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"})
    target = ReplicaAssignment.from_placement("t", {0: [1, 3, 2], 1: [2, 4, 3], 2: [1, 4, 2]})
    leaving = PlacementSubject(cluster, target, BalanceSettings(), leaving=frozenset({5, 6}))
    assert not [v for v in check_placement(leaving).violations if v.invariant == "placement.rack-diversity"]
    staying = PlacementSubject(cluster, target, BalanceSettings())  # without --decommission rack c counts
    assert [v for v in check_placement(staying).violations if v.invariant == "placement.rack-diversity"]


# --- 2. --baseline and --allowlist ---------------------------------------------------------------------------


def test_verify_against_its_own_baseline_passes_and_names_the_reason(capsys, files):
    code, out, _ = run(capsys, "verify", "describe.txt", "--brokers-file", "brokers.txt", "--json")
    assert code == 1
    (files / "baseline.json").write_text(out)
    code, out, _ = run(capsys, "verify", "describe.txt", "--brokers-file", "brokers.txt", "--baseline",
                       "baseline.json", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] is True
    assert {(v["invariant"], v["where"], v["reason"]) for v in doc["suppressed"]} == {
        (*LEGACY, "in the baseline baseline.json"),
        ("placement.replica-spread", "broker 7", "in the baseline baseline.json"),
        ("health.zone-loss", "topic legacy", "in the baseline baseline.json")}  # both replicas in rack a
    # A new finding still fails: a describe where orders-0 sits in racks a and b only.
    (files / "later.txt").write_text(DESCRIBE.replace("Replicas: 1,3,5\tIsr: 1,3,5", "Replicas: 1,3,4\tIsr: 1,3,4"))
    code, out, _ = run(capsys, "verify", "later.txt", "--brokers-file", "brokers.txt", "--baseline", "baseline.json",
                       "--json")
    doc = json.loads(out)
    assert code == 1 and keys(doc["introduced"]) == {("placement.rack-diversity", "partition orders-0"),
                                                     ("health.zone-loss", "topic orders")}  # rack b holds 3,4
    # ... and what the baseline had and is gone now is fixed: legacy-0 moved to racks a and b.
    (files / "fixed.txt").write_text(DESCRIBE.replace("Replicas: 1,2\tIsr: 1,2", "Replicas: 1,3\tIsr: 1,3"))
    code, out, _ = run(capsys, "verify", "fixed.txt", "--brokers-file", "brokers.txt", "--baseline", "baseline.json",
                       "--json")
    doc = json.loads(out)
    assert code == 0 and keys(doc["fixed"]) == {LEGACY, ("health.zone-loss", "topic legacy")}
    assert [v["severity"] for v in doc["introduced"]] == ["soft"]  # broker 1's followers now lean on broker 3


def test_the_allowlist_suppresses_with_its_reason_and_patterns(capsys, files):
    (files / "allow.txt").write_text("# known\n\nplacement.rack-diversity | partition legacy-* | retired in Q3\n")
    code, doc = reassign_json(capsys, "plan.json", "--decommission", "6", "--allowlist", "allow.txt")
    assert code == 0
    ((v, reason),) = [((s["invariant"], s["where"]), s["reason"]) for s in doc["suppressed"]]
    assert v == LEGACY and reason == "allowlist allow.txt line 3: retired in Q3"
    code, out, _ = run(capsys, "verify-reassignment", "describe.txt", "plan.json", "--brokers-file", "brokers.txt",
                       "--decommission", "6", "--allowlist", "allow.txt")
    assert code == 0 and "[suppressed: allowlist allow.txt line 3: retired in Q3]" in " ".join(out.split())


@pytest.mark.parametrize(("text", "fragment"), [
    ("placement.rack-diversity | partition legacy-0\n", "allow.txt:1: expected 'invariant | where | reason'"),
    ("placement.rack-diversity | partition legacy-0 |  \n", "allow.txt:1: the reason is required"),
    ("# c\nplacement.rack-diversty | partition legacy-0 | typo\n", "allow.txt:2: 'placement.rack-diversty' is "
                                                                   "no invariant kcheck knows"),
])
def test_a_bad_allowlist_is_one_line_exit_2(capsys, files, text, fragment):
    (files / "allow.txt").write_text(text)
    code, out, err = run(capsys, "verify", "describe.txt", "--allowlist", "allow.txt")
    assert (code, out) == (2, "")
    one_error_line(err, fragment)


@pytest.mark.parametrize(("text", "fragment"), [
    ("not json", "base.json: not a kcheck --json report"),
    ('{"version": 1, "partitions": []}', 'base.json: not a kcheck --json report (no "violations" list)'),
    ('{"command": "verify", "violations": []}', "base.json: is a report of kcheck verify, not of kcheck "
                                                "verify-reassignment"),
    ('{"violations": [{"invariant": 3}]}', 'base.json: violation #1 has no "invariant" and "where" strings'),
])
def test_a_bad_baseline_is_one_line_exit_2(capsys, files, text, fragment):
    (files / "base.json").write_text(text)
    code, out, err = run(capsys, "verify-reassignment", "describe.txt", "plan.json", "--baseline", "base.json")
    assert (code, out) == (2, "")
    one_error_line(err, fragment)


@pytest.mark.parametrize(("args", "fragment"), [
    (("--decommission", "9"), "--decommission: broker 9 is not in the cluster (brokers: 1,2,3,4,5,6,7)"),
    (("--decommission", "6,x"), "--decommission: 'x' is not a broker id"),
    (("--fail-on", "warn"), "--fail-on: 'warn' is not one of hard, soft, new"),
])
def test_bad_gate_options_are_one_line_exit_2(capsys, files, args, fragment):
    for command in (("verify", "describe.txt"), ("verify-reassignment", "describe.txt", "plan.json")):
        code, out, err = run(capsys, *command, "--brokers-file", "brokers.txt", *args)
        assert (code, out) == (2, "")
        one_error_line(err, fragment)


# --- JUnit: a finding that does not fail the gate is no failure ------------------------------------------------


def test_junit_fails_exactly_what_fails_the_gate(capsys, files):
    for fail_on, failures in (("hard", "1"), ("new", "0")):
        code, _, _ = run(capsys, "verify-reassignment", "describe.txt", "plan.json", "--brokers-file", "brokers.txt",
                         "--decommission", "6", "--fail-on", fail_on, "--junit-xml", "gate.xml")
        root = ET.parse(files / "gate.xml").getroot()
        assert root.get("failures") == failures and code == int(failures)
        case = root.find(".//testcase[@name='placement.rack-diversity']")
        assert case is not None and (case.find("failure") is not None) == (fail_on == "hard")
        if fail_on == "new":  # unchanged, so not a failure; said in <system-out>
            assert "unchanged: partition legacy-0" in case.findtext("system-out", "")


# --- judge() on its own ----------------------------------------------------------------------------------------


def _v(inv, where, severity=Severity.HARD):
    return Violation(inv, severity, where, f"{inv} at {where}")


def test_judge_matches_on_invariant_and_place_and_keeps_checks_the_target_cannot_run():
    before = Report(("a", "b", "h"), {}, (_v("a", "p0"), _v("b", "p1"), _v("h", "p2")))
    after = Report(("a", "b"), {}, (Violation("a", Severity.HARD, "p0", "another message"), _v("b", "p9")))
    j = judge(after, before, gate_settings(None, None, None, "hard"))
    assert [(v.invariant, v.where) for v in j.introduced] == [("b", "p9")]
    assert [(v.invariant, v.where) for v in j.fixed] == [("b", "p1")]
    # a0 is in both; h (a check only the current state has, e.g. its live health) stays as it was
    assert sorted((v.invariant, v.where) for v in j.unchanged) == [("a", "p0"), ("h", "p2")]
    assert j.exit is Exit.FAILED


def test_judge_without_anything_to_compare_counts_every_finding_as_introduced():
    after = Report(("a",), {}, (_v("a", "p0"),))
    j = judge(after, None, gate_settings(None, None, None, "new"))
    assert j.introduced == after.violations and j.exit is Exit.FAILED


def _c(inv, where, severity=Severity.HARD, **detail):
    return Violation(inv, severity, where, f"{inv} at {where} {detail}", detail)


def test_judge_compares_the_figures_of_a_finding_at_the_same_place():
    cap = "placement.max-replicas-per-broker"
    before = Report((cap,), {}, (_c(cap, "broker 1", count=12, limit=10, excess=2),
                                 _c(cap, "broker 2", count=12, limit=10, excess=2),
                                 _c(cap, "broker 3", count=11, limit=10, excess=1)))
    after = Report((cap,), {}, (_c(cap, "broker 1", count=14, limit=10, excess=4),  # worse
                                _c(cap, "broker 2", count=11, limit=10, excess=1),  # better
                                _c(cap, "broker 3", count=11, limit=12, excess=-1)))  # the limit moved: same count
    for fail_on, failing in (("new", {"broker 1"}), ("hard", {"broker 1", "broker 2", "broker 3"})):
        j = judge(after, before, gate_settings(None, None, None, fail_on))
        assert {c.after.where: c.direction for c in j.changed} == {"broker 1": "worse", "broker 2": "better"}
        assert [v.where for v in j.unchanged] == ["broker 3"] and not j.introduced
        assert {v.where for v in j.counted} == failing


def test_a_change_kcheck_cannot_rank_counts_as_worse():
    before = Report(("user.x",), {}, (_c("user.x", "broker 1", owner="a"),))
    after = Report(("user.x",), {}, (_c("user.x", "broker 1", owner="b"),))
    (c,) = judge(after, before, gate_settings(None, None, None, "new")).changed
    assert (c.direction, c.worse) == ("unknown", True)


def test_the_baseline_suppresses_what_is_not_worse_than_it_and_old_reports_without_figures(tmp_path):
    spread = "placement.replica-spread"
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"command": "verify", "violations": [
        {"invariant": spread, "where": "broker 1", "severity": "soft", "detail": {"count": 9, "excess": 3}},
        {"invariant": spread, "where": "broker 2", "severity": "soft", "detail": {"count": 9, "excess": 3}},
        {"invariant": spread, "where": "broker 3", "severity": "soft"}]}))  # a report without detail
    settings = gate_settings(str(base), None, None, "soft", "verify")
    after = Report((spread,), {}, (_c(spread, "broker 1", Severity.SOFT, count=11, excess=5),
                                   _c(spread, "broker 2", Severity.SOFT, count=8, excess=2),
                                   _c(spread, "broker 3", Severity.SOFT, count=40, excess=34)))
    j = judge(after, settings.baseline_report, settings, "the baseline")
    assert [(c.after.where, c.direction) for c in j.changed] == [("broker 1", "worse")]
    reasons = {v.where: reason for v, reason in j.suppressed}
    assert reasons["broker 2"].startswith(f"in the baseline {base}, not worse than there")
    assert reasons["broker 3"] == f"in the baseline {base}"  # nothing to compare: the same finding
    assert [v.where for v in j.counted] == ["broker 1"] and j.exit is Exit.FAILED


# --- 5. one exit policy ----------------------------------------------------------------------------------------


def test_the_readme_exit_status_table_is_the_policy():
    from pathlib import Path

    section = (Path(__file__).resolve().parents[1] / "docs" / "conventions.md").read_text()
    rows = [line for line in section.splitlines() if line.startswith("| ") and line[2:3].isdigit()]
    assert rows == [f"| {int(e)} | `{e.name}` | {text} |" for e, text in POLICY]
