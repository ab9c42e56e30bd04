"""`--junit-xml`, `--html` / report.html and `--help` at 80 columns.

Each JUnit report is parsed and its counts compared with the command's own --json output; a report has
failures exactly when the command exits 1.
"""

from __future__ import annotations

import html
import json
import os
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kcheck.cli import app, main

DATA = Path(__file__).parent / "data"
REASSIGN = DATA / "reassign"


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def junit(path) -> tuple[ET.Element, list[ET.Element]]:
    """The parsed report, after checking that every count attribute matches the test cases it holds."""
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    for el, cases in [(s, s.findall("testcase")) for s in suites] + [(root, root.findall("testsuite/testcase"))]:
        assert int(el.get("tests")) == len(cases)
        assert int(el.get("failures")) == sum(c.find("failure") is not None for c in cases)
        assert int(el.get("skipped")) == sum(c.find("skipped") is not None for c in cases)
        assert el.get("errors") == "0" and float(el.get("time")) >= 0
    cases = root.findall("testsuite/testcase")
    for c in cases:
        assert c.get("classname") and c.get("name")
        f = c.find("failure")
        assert f is None or (f.get("message") and f.text)
    assert len({(c.get("classname"), c.get("name")) for c in cases}) == len(cases)
    return root, cases


def by_name(cases: list[ET.Element]) -> dict[str, ET.Element]:
    return {c.get("name"): c for c in cases}


def report_counts(doc: dict) -> tuple[int, int, int]:
    """(tests, failures, skipped) an invariant report's JSON implies: failures are invariants with a hard
    violation, or a broken guarantee (assign)."""
    hard = {v["invariant"] for v in doc["violations"] if v["severity"] == "hard"}
    return (len(doc["checked"]) + len(doc["not_applicable"]), len(hard | set(doc.get("broken_guarantees", []))),
            len(doc["not_applicable"]))


def counts(root: ET.Element) -> tuple[int, int, int]:
    return int(root.get("tests")), int(root.get("failures")), int(root.get("skipped"))


# --- verify, verify-reassignment, assign, prove ---------------------------------------------------------------------


@pytest.mark.parametrize("args, expected_code", [
    (["verify", DATA / "describe_uneven_racks.txt", "--brokers-file", DATA / "brokers_uneven.txt"], 1),
    (["verify", DATA / "describe_uneven_racks.txt"], 0),  # no racks: only balance (soft) violations
    (["verify-reassignment", REASSIGN / "describe_current.txt", REASSIGN / "plan_safe.json", "--brokers-file",
      REASSIGN / "brokers.txt"], 0),
    (["verify-reassignment", REASSIGN / "describe_current.txt", REASSIGN / "plan_unsafe.json", "--brokers-file",
      REASSIGN / "brokers.txt"], 1),
    (["assign", "--assignor", "sticky", DATA / "group_fresh.json"], 0),
    (["assign", "--assignor", "range", DATA / "group_unequal.json"], None),
])
def test_junit_counts_match_the_json(capsys, tmp_path, args, expected_code):
    xml_path = tmp_path / "junit.xml"
    code, out, _ = run(capsys, *args, "--json", "--junit-xml", xml_path)
    doc = json.loads(out)
    assert expected_code is None or code == expected_code
    root, cases = junit(xml_path)
    assert counts(root) == report_counts(doc)
    assert (int(root.get("failures")) > 0) == (code == 1)
    cases_by_name = by_name(cases)
    assert set(cases_by_name) == set(doc["checked"]) | set(doc["not_applicable"])
    for v in doc["violations"]:  # a soft violation that fails nothing is still reported, in <system-out>
        case = cases_by_name[v["invariant"]]
        assert case.find("failure") is not None or v["message"] in case.find("system-out").text


def test_junit_without_json_is_the_same_report(capsys, tmp_path):
    args = ["verify", DATA / "describe_uneven_racks.txt", "--brokers-file", DATA / "brokers_uneven.txt"]
    run(capsys, *args, "--json", "--junit-xml", tmp_path / "a.xml")
    code, out, _ = run(capsys, *args, "--junit-xml", tmp_path / "b.xml")
    assert code == 1 and "FAIL" in out  # the table still goes to stdout
    # 25 invariants: 12 placement (one hard failure) and the 13 partition-health ones (the describe has no
    # reassignment in flight: 2 not applicable), 5 not applicable in all
    assert counts(junit(tmp_path / "a.xml")[0]) == counts(junit(tmp_path / "b.xml")[0]) == (25, 1, 5)


USER_ASSIGNORS = '''
from kcheck.reference.assignors.registry import AssignorInfo

class AllToFirst:
    def assign_partitions(self, ppt, subs):
        first = next(iter(subs))
        return {m: [p.tp for ps in ppt.values() for p in ps] if m == first else [] for m in subs}

class Throws:
    def assign_partitions(self, ppt, subs):
        raise ZeroDivisionError("division by zero")

BALANCED_ALL_TO_FIRST = AssignorInfo("balanced-all-to-first", AllToFirst, False, frozenset({"assignment.balanced"}))
'''


@pytest.mark.parametrize("assignor, expected_code, failed", [
    ("my_junit_assignors:AllToFirst", 0, set()),  # unbalanced, but it promises nothing: <system-out> only
    ("my_junit_assignors:BALANCED_ALL_TO_FIRST", 1, {"assignment.balanced"}),  # a soft guarantee broken
])
def test_junit_assign_soft_guarantee(capsys, tmp_path, monkeypatch, assignor, expected_code, failed):
    (tmp_path / "my_junit_assignors.py").write_text(USER_ASSIGNORS)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = run(capsys, "assign", "--assignor", assignor, DATA / "group_fresh.json", "--json",
                       "--junit-xml", tmp_path / "a.xml")
    root, cases = junit(tmp_path / "a.xml")
    assert code == expected_code and counts(root) == report_counts(json.loads(out))
    assert {c.get("name") for c in cases if c.find("failure") is not None} == failed
    balanced = by_name(cases)["assignment.balanced"]
    assert failed or "soft violation(s) (not a failure)" in balanced.find("system-out").text


def test_junit_assign_when_the_assignor_fails(capsys, tmp_path):
    """Kafka's StickyAssignor throws on this valid group (a stale owner set aside as fixed: an NPE), so the
    rebalance fails: exit 1 and a failed test case. (A user's assignor that throws is its own failure instead:
    one line, exit 2, and no report, as for any error.)"""
    group = tmp_path / "g.json"
    group.write_text(json.dumps({"topics": {"t1": 1, "t2": 4}, "members": {
        "F": {"topics": ["t1"], "owned": ["t1-0", "t2-0"], "generation": 1},
        "A": {"topics": ["t2"], "owned": ["t2-0", "t2-1", "t2-2", "t2-3"], "generation": 2},
        "B": ["t2"]}}))
    code, _, _ = run(capsys, "assign", "--assignor", "sticky", group, "--junit-xml", tmp_path / "a.xml")
    root, (case,) = junit(tmp_path / "a.xml")
    assert code == 1 and "NullPointerException" in case.find("failure").get("message")


@pytest.mark.parametrize("args, expected_code", [
    (["--algorithm", "adminutils", "--invariant", "placement.distinct-brokers"], 0),
    (["--algorithm", "adminutils-rack-aware", "--invariant", "placement.rack-distribution", "--max-brokers", "5",
      "--max-racks", "2", "--max-partitions", "1"], 1),
])
def test_junit_prove(capsys, tmp_path, args, expected_code):
    code, out, _ = run(capsys, "prove", *args, "--json", "--junit-xml", tmp_path / "p.xml")
    doc = json.loads(out)
    root, cases = junit(tmp_path / "p.xml")
    assert code == expected_code and (int(root.get("failures")) > 0) == (code == 1) == (not doc["ok"])
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        (f"kcheck.prove.{r['algorithm']}", r["invariant"]) for r in doc["results"]]
    if code:
        assert "replay: kcheck place" in cases[0].find("failure").text


# --- the output file ------------------------------------------------------------------------------------------------


def test_junit_refuses_a_missing_directory_and_the_commands_inputs(capsys, tmp_path):
    plan = tmp_path / "plan.txt"
    plan.write_bytes((DATA / "describe_uneven_racks.txt").read_bytes())
    link = tmp_path / "link.txt"
    link.symlink_to(plan)
    before = plan.read_bytes()
    for target, message in ((tmp_path / "nope" / "j.xml", "does not exist"), (plan, "would be overwritten"),
                            (link, "would be overwritten"), (tmp_path, "is a directory")):
        code, out, err = run(capsys, "verify", plan, "--junit-xml", target)
        assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err
    code, _, err = run(capsys, "verify", link, "--brokers-file", DATA / "brokers_uneven.txt", "--junit-xml",
                       tmp_path / "." / "plan.txt")
    assert code == 2 and "would be overwritten" in err
    assert plan.read_bytes() == before
    code, _, err = run(capsys, "verify-reassignment", REASSIGN / "describe_current.txt", plan, "--junit-xml", plan)
    assert code == 2 and "--junit-xml" in err and plan.read_bytes() == before
    code, _, err = run(capsys, "check", "--junit-xml", tmp_path / "r", "--html", tmp_path / "r")
    assert code == 2 and "--html" in err
    (tmp_path / "sweep").mkdir()
    for target, message in ((tmp_path / "sweep" / "report.html", "would be overwritten"),
                            (tmp_path / "nope" / "j.xml", "does not exist")):  # refused before any Spark starts
        code, _, err = run(capsys, "sweep", "placement", "--space", "small", "--out", tmp_path / "sweep",
                           "--junit-xml", target)
        assert code == 2 and err.startswith("kcheck: error: --junit-xml: ") and message in err, err
    assert os.listdir(tmp_path / "sweep") == []


def test_junit_replaces_atomically(capsys, tmp_path):
    target = tmp_path / "j.xml"
    target.write_text("an old report")
    run(capsys, "verify", DATA / "describe_uneven_racks.txt", "--junit-xml", target)
    junit(target)
    assert os.listdir(tmp_path) == ["j.xml"]  # no temporary file left behind


def test_junit_text_is_always_well_formed(tmp_path):
    from kcheck import junit as writer
    nasty = 'a <b> & "c" \x00\x1b[31m ]]> \ud800'
    suite = writer.TestSuite(nasty, [writer.TestCase(nasty, nasty, failure=nasty, detail=nasty, output=nasty),
                                     writer.TestCase(nasty, nasty, skipped=nasty)])
    writer.write(str(tmp_path / "n.xml"), nasty, [suite])
    root, cases = junit(tmp_path / "n.xml")
    cleaned = nasty.replace("\x00", "\ufffd").replace("\x1b", "\ufffd").replace("\ud800", "\ufffd")
    assert [c.get("name") for c in cases] == [cleaned, cleaned + " #2"]  # same name twice: both stay visible
    assert cases[0].find("failure").text == cleaned and cases[1].find("skipped").get("message") == cleaned


# --- kcheck check: a small real run with one failure of each kind added --------------------------------------------


@pytest.fixture(scope="module")
def check_result():
    from kcheck.check import PROOF_BOUNDS, ModelOutcome, ReplicationOutcome, run_check
    from kcheck.invariants.prover import ProofResult
    from kcheck.reference.spot_checks import SpotOutcome

    result = run_check(3, proofs=False)  # the placement cases only; the rest are made up below
    result.proofs = [ProofResult("adminutils", "placement.distinct-brokers", "proved", "unbounded", 0.5),
                     ProofResult("striped", "placement.leader-spread", "unknown", "bounded", 1.5,
                                                 PROOF_BOUNDS.as_dict(), reason="timeout")]
    result.models = [ModelOutcome("range", 10, 5, 0.1), ModelOutcome("<b>lossy</b>", 10, 5, 0.2,
                                                                     "assignment.complete broken\njoin c1")]
    result.replication = [ReplicationOutcome("current", "explore", False, "10 x 5", 0.3),
                          ReplicationOutcome("truncate-to-hw", "exhaust", True, "99 states", 0.4,
                                             detail="not found in 99 states")]
    result.spots = [SpotOutcome("key -> partition", "Utils.murmur2", "4.4.0", 2000, 0, 0.3),
                    SpotOutcome("request headers", "RequestHeader", "4.4.0", 2000, 1, 0.4, "HDR_PARSE <b>00</b>"),
                    SpotOutcome("key -> partition", "Utils.murmur2", "3.9.1", skipped="jars not cached")]
    try:  # the rejoin sweep of the main job, where this kcheck has it
        from kcheck.check import GroupOutcome, RejoinSweep
    except ImportError:
        return result
    story = {"story": ["c1 times out", "c1 rejoins"]}
    result.rejoins = RejoinSweep("max_members=2", 10, 0.5, [
        GroupOutcome("sticky", "assignment.stale-claim", False, 10, 2, "stale <claim>", story, None),
        GroupOutcome("range", "assignment.complete", True, 10, 1, "partition t1-0 unassigned", story, None)])
    return result


def test_check_junit_and_html_match_the_json(capsys, tmp_path, monkeypatch, check_result):
    monkeypatch.setattr("kcheck.commands.check.run_check", lambda *a, **k: check_result)
    xml_path, html_path = tmp_path / "check.xml", tmp_path / "check.html"
    code, out, _ = run(capsys, "check", "--json", "--junit-xml", xml_path, "--html", html_path)
    doc = json.loads(out)
    root, cases = junit(xml_path)
    rejoins = (doc.get("rejoin_sweep") or {}).get("outcomes", [])
    failures = ([o for o in doc["outcomes"] if o["result"] == "FAILED"] + [p for p in doc["proofs"]
                if p["status"] != "proved"] + [m for m in doc["rebalance_models"] if m["failure"]]
                + [r for r in doc["replication_models"] if not r["ok"]] + [o for o in rejoins
                                                                          if o["result"] == "FAILED"]
                + [o for o in doc["reference_spot_checks"] if not o["ok"]])
    spots = doc["reference_spot_checks"]
    assert counts(root) == (len(doc["outcomes"]) + len(doc["proofs"]) + len(doc["rebalance_models"])
                            + len(doc["replication_models"]) + len(rejoins) + len(spots), len(failures),
                            sum(o["result"] == "n/a" for o in doc["outcomes"]) + sum(bool(o["skipped"]) for o in spots))
    assert code == 1 and len(failures) == 4 + bool(rejoins)
    cls = {(c.get("classname"), c.get("name")): c for c in cases}
    failed_spot = cls[("kcheck.check.reference.4.4.0", "request headers")].find("failure")
    assert failed_spot is not None and "1 of 2,000 inputs differ from RequestHeader" in failed_spot.get("message")
    for o in doc["outcomes"]:
        case = cls[(f"kcheck.check.placement.{o['placer']}", o["invariant"])]
        if o["result"] == "finding":  # a finding passes, with its replay command in <system-out>
            assert case.find("failure") is None
            assert o["smallest_counterexample"]["replay"] in case.find("system-out").text
    assert cls[("kcheck.check.rebalance", "<b>lossy</b>")].find("failure").get("message") == \
        "assignment.complete broken"

    text = html_path.read_text()
    Strict().feed(text)
    assert "<b>lossy</b>" not in text and "&lt;b&gt;lossy&lt;/b&gt;" in text  # user-derived text is escaped
    assert_self_contained(text)
    for o in doc["outcomes"]:  # every row of the console's table
        assert re.search(rf"<tr[^>]*><td>{o['placer']}</td><td>{re.escape(o['invariant'])}</td>", text)
    for p in doc["proofs"]:
        assert f"<td>{p['algorithm']}</td><td>{p['invariant']}</td>" in text
    for r in doc["replication_models"]:
        assert f"<td>{r['protocol']}</td><td>{r['engine']}</td>" in text
    for m in doc["rebalance_models"]:
        assert f"<td>{html.escape(m['assignor'])}</td><td>{m['examples']} x {m['steps']}</td>" in text
    for o in rejoins:
        assert f"<td>{o['assignor']}</td><td>{o['invariant']}</td>" in text
        case = cls[(f"kcheck.check.rejoin.{o['assignor']}", o["invariant"])]
        assert (case.find("failure") is not None) == (o["result"] == "FAILED")
    assert "stale <claim>" not in text and (not rejoins or "stale &lt;claim&gt;" in text)
    for o in spots:
        assert f"<td>{html.escape(o['family'])}</td><td>{o['kafka']}</td><td>{o['release']}</td>" in text
    assert "<b>00</b>" not in text and "HDR_PARSE &lt;b&gt;00&lt;/b&gt;" in text
    assert "<svg" in text and "FAIL: 0 guarantee(s)" in text


def test_check_without_options_writes_nothing(capsys, tmp_path, monkeypatch, check_result):
    monkeypatch.setattr("kcheck.commands.check.run_check", lambda *a, **k: check_result)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "check")
    assert code == 1 and "FAIL: 0 guarantee(s)" in out and os.listdir(tmp_path) == []


class Strict(HTMLParser):
    """Fails on unbalanced tags (void elements aside): the page must parse."""

    VOID = {"meta", "img", "br", "rect", "hr"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()

    def close(self):
        super().close()
        assert not self.stack, self.stack


def assert_self_contained(text: str) -> None:
    parser = Strict()
    parser.feed(text)
    parser.close()
    assert "<script" not in text and "<link" not in text
    for attr in re.findall(r'\b(?:src|href)="([^"]*)"', text):  # only data URIs: no site, no sibling file
        assert attr.startswith("data:image/png;base64,"), attr[:60]
    assert 'src="http' not in text and 'href="http' not in text and ".png\"" not in text


# --- kcheck sweep: report.html without Spark, then one Spark run for --junit-xml and the file on disk -----------


def test_sweep_html_report(tmp_path):
    from kcheck.html_report import write_sweep_html
    from kcheck.spark_check.placement_space import PlacementSpace, parse_placement_bounds
    from kcheck.spark_check.report import invariant_rows, write_markdown

    space = PlacementSpace(parse_placement_bounds("brokers=5,racks=2,partitions=1..2,rf=3..4"),
                           ["adminutils", "striped"])
    result = space.evaluate(0, len(space))
    header = {"space": "test <&>"}
    markdown = open(write_markdown(str(tmp_path), space, result, header)).read()
    path = write_sweep_html(str(tmp_path), space, result, header, "FAIL: 1 invariant(s)", True)
    text = open(path).read()
    assert_self_contained(text)
    assert "test &lt;&amp;&gt;" in text
    for r in invariant_rows(space, result):  # every row of report.md's table
        assert f"| {r.subject} | {r.invariant} |" in markdown
        assert f"<td>{r.subject}</td><td>{r.invariant}</td><td>{r.severity}</td>" in text
    images = re.findall(r'<img alt="([^"]*)" src="data:image/png;base64,', text)
    assert images and sorted(images) == sorted({key.rpartition("/")[2] for key in result.metrics})  # one a metric
    assert "](leader-skew.png)" in markdown and "leader-skew.png" not in text


@pytest.mark.slow  # a whole Spark sweep (~35 s)
@pytest.mark.spark
def test_sweep_junit_and_report_html(capsys, tmp_path):
    from kcheck.commands.sweep import build_space
    from kcheck.spark_check.report import failures, invariant_rows

    # AdminUtils on 5 brokers in 2 racks with RF 4: a hard property Kafka does not promise breaks (see
    # test_sweep_job): a finding, as `kcheck check` judges it, so no JUnit failure; the fastest sweep
    out = tmp_path / "sweep"
    code, _, _ = run(capsys, "sweep", "placement", "--space", "brokers=5,racks=2,partitions=1,rf=4", "--out",
                          out, "--junit-xml", tmp_path / "sweep.xml", "--master", "local[1]")
    root, cases = junit(tmp_path / "sweep.xml")
    failed = [f"{c.get('classname').removeprefix('kcheck.sweep.placement.')}/{c.get('name')}" for c in cases
              if c.find("failure") is not None]
    assert code == 0 and failed == []
    assert by_name(cases)["coverage"].find("failure") is None
    space = build_space("placement", "brokers=5,racks=2,partitions=1,rf=4", None, None)
    rows = invariant_rows(space, space.evaluate(0, len(space)))  # the table's rows, computed without Spark
    assert counts(root) == (len(rows) + 1, len(failures(rows)), sum(not r.checked for r in rows))
    text = (out / "report.html").read_text()
    assert_self_contained(text)
    assert "OK: 0 invariant(s) that must hold are violated" in text and "finding" in text
    for r in rows:
        assert f"<td>{r.subject}</td><td>{r.invariant}</td>" in text


# --- --help at 80 columns -------------------------------------------------------------------------------------------


def commands():
    import typer

    group = typer.main.get_command(app)
    return [(None, group)] + sorted(group.commands.items())


@pytest.mark.parametrize("name, command", commands(), ids=[name or "kcheck" for name, _ in commands()])
def test_help_fits_80_columns(capsys, monkeypatch, name, command):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    code, out, _ = run(capsys, *([name] if name else []), "--help")
    assert code == 0 and "Usage: kcheck" in out
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    if name is None:  # each command's first sentence whole, not cut with '...'
        assert not any(line.endswith("...") for line in out.splitlines()[1:])
        assert all(f"  {n} " in out for n in command.commands)
    words = set(re.findall(r"--?[A-Za-z0-9][\w-]*", out))
    for param in command.params:
        for opt in (*param.opts, *param.secondary_opts):
            if opt.startswith("-"):
                assert opt in words, f"{name}: {opt} not shown whole"
