"""`kcheck verify-group` on the real `kafka-consumer-groups --describe` outputs of tests/data/consumer_groups.

Every output there was printed by a release's own tool (0.10.2.2 to 4.4.0) about groups that make.py set up on a real
cluster; its truth.<cluster>.json records what was set up (committed offsets, each member's own view of its
assignment, the killed and paused members, the assignor). Each test holds what kcheck reads and concludes from an
output against that truth, never against kcheck's own earlier output. No JVM runs here.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from cli_support import one_error_line, run
from kcheck.gate.group import ALIVE, BALANCED, COMPLETE, OPTIMAL, Verdict, verdict
from kcheck.inputs.group_describe import parse_group_describe
from kcheck.inputs.tool_outputs import identify

DATA = Path(__file__).parent / "data"
GROUPS = DATA / "consumer_groups"
INDEX = json.loads((GROUPS / "index.json").read_text())
RELEASES = sorted({e["tool"] for e in INDEX}, key=lambda v: tuple(map(int, v.split("."))))
REBALANCING = {"PreparingRebalance", "Reconciling"}


@cache
def truth(cluster: str) -> dict[str, Any]:
    return json.loads((GROUPS / f"truth.{cluster}.json").read_text())


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


@cache
def read(file: str) -> dict[str, Verdict]:
    """The file's verdicts by group name (a group before 2.3 named by the --group the tool was run with)."""
    entry = next(e for e in INDEX if e["file"] == file)
    paste = parse_group_describe((GROUPS / file).read_text(), file)
    args = entry["args"]
    named = args[args.index("--group") + 1] if "--group" in args else None
    return {name if name is not None else named: verdict(g, None) for name, g in paste.groups.items()}


def _expected_strategy(group: dict[str, Any]) -> str | None:
    if group["state"] in ("Empty", "PreparingRebalance"):  # no protocol chosen: the tool prints a blank (or '-')
        return None
    return {"org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky"}.get(
        group["assignor"], group["assignor"])


def _owned(group: dict[str, Any]) -> dict[str, list[str]]:
    return {m["member"]: sorted(m["partitions"]) for m in group["members"] if m["partitions"]}


MISSING = "nosuch"  # make.py describes a group it never set up


def _cases() -> list[Any]:
    return [pytest.param(e["file"], e["cluster"], id=e["file"]) for e in INDEX if MISSING not in e["args"]]


def test_every_release_and_mode_is_stored() -> None:
    """The outputs cover 0.10.2, 1.x, 2.x, 3.x and 4.x, each in every mode its tool has, all printed without error."""
    assert {r.split(".")[0] for r in RELEASES} >= {"0", "1", "2", "3", "4"}
    modes = {(e["tool"], e["file"].split("/")[1].split(".")[0]) for e in INDEX}
    for tool in RELEASES:
        want = {"describe"} if _key(tool) < (1, 1) else {"describe", "offsets", "members", "members-verbose", "state"}
        want |= {"state-verbose", "offsets-verbose"} if _key(tool) >= (4, 0) else set()
        assert want <= {m for t, m in modes if t == tool}, tool
    assert all(e["exit"] == 0 for e in INDEX)


@pytest.mark.parametrize(("file", "cluster"), _cases())
def test_read_as_the_release_that_printed_it(file: str, cluster: str) -> None:
    """Every stored output is read, its groups are the ones set up, and the layout names a range with its release."""
    verdicts = read(file)
    assert set(verdicts) <= set(truth(cluster)["groups"]) and verdicts
    paste = parse_group_describe((GROUPS / file).read_text(), file)
    low, _, high = re.split(r" (to|or) ", paste.layout())
    tool = file.split("@")[0]
    assert _key(low) <= _key(tool)[:len(_key(low))] and _key(tool)[:len(_key(high))] <= _key(high), paste.layout()


@pytest.mark.parametrize(("file", "cluster"), _cases())
def test_lag_is_the_committed_and_log_end_offsets_set_up(file: str, cluster: str) -> None:
    t = truth(cluster)
    for name, v in read(file).items():
        if v.group.offsets is None:
            continue
        group = t["groups"][name]
        owned = set() if group["state"] == "PreparingRebalance" else {tp for m in group["members"]
                                                                       for tp in m["partitions"]}
        assert {str(r.tp) for r in v.lag} == set(group["committed"]) | owned, name
        for r in v.lag:
            committed = group["committed"].get(str(r.tp))
            assert r.current == committed, (name, r)
            assert r.lag == (None if committed is None or r.log_end is None else r.log_end - committed), (name, r)
            assert r.log_end == t["log_end_offsets"][str(r.tp)], (name, r)


def test_a_log_end_read_wrong_is_called_out() -> None:
    """1.1.1's tool once printed log end 0 for a partition of 20 records (kept/): a lag below zero, which kcheck calls
    out and leaves out of the total rather than adding it up."""
    kept = GROUPS / "kept"
    t = json.loads((kept / "truth.3.9.1.negative-lag.json").read_text())["groups"]["search"]
    paste = parse_group_describe((kept / "1.1.1-describe.search.negative-lag.txt").read_text(), "kept")
    v = verdict(paste.groups[None], None)
    wrong = [r for r in v.lag if r.lag is not None and r.lag < 0]
    assert [(str(r.tp), r.current) for r in wrong] == [("payments-1", t["committed"]["payments-1"])]
    assert any(n.startswith("lag below zero on payments 1: the committed offset is above") for n in v.notes)
    assert not v.failed and {str(r.tp) for r in v.lag} == set(t["committed"])


@pytest.mark.parametrize(("file", "cluster"), _cases())
def test_members_and_what_they_own_are_the_ones_set_up(file: str, cluster: str) -> None:
    for name, v in read(file).items():
        group = truth(cluster)["groups"][name]
        members = {m["member"] for m in group["members"]}
        if v.group.members is not None:  # the members table lists every member, killed and paused ones too
            assert {m.id for m in v.members} == members, name
            if "GROUP-INSTANCE-ID" in v.group.columns:  # from 2.6, when a member is static
                assert {m.instance for m in v.members} == {m["instance"] for m in group["members"]}, name
        else:
            assert {m.id for m in v.members} <= members, name
        if v.ownership_from is not None and group["state"] != "PreparingRebalance":
            assert {m.id: sorted(map(str, m.partitions or ())) for m in v.members if m.partitions} == _owned(group)
        if v.group.members and group["state"] != "PreparingRebalance":  # a rebalancing classic group shows 0 each
            counts = {m["member"]: len(m["partitions"]) for m in group["members"]}
            assert {m.id: m.count for m in v.members} == counts, name


@pytest.mark.parametrize(("file", "cluster"), _cases())
def test_state_assignor_and_protocol_are_the_ones_set_up(file: str, cluster: str) -> None:
    for name, v in read(file).items():
        group = truth(cluster)["groups"][name]
        if v.state_from == "--state":
            assert v.state == group["state"], name
            assert v.strategy == _expected_strategy(group), name
        elif v.state == "rebalancing":
            assert group["state"] in REBALANCING, name
        else:  # the tool's notes are in these outputs (stderr with stdout): no note is a stable group
            assert v.state == ("Empty" if group["state"] == "Empty" else None), name
            assert group["state"] in ("Empty", "Stable"), name
        if v.protocol is not None:
            assert v.protocol == group["protocol"], name


@pytest.mark.parametrize(("file", "cluster"), _cases())
def test_verdict_is_the_faults_set_up(file: str, cluster: str) -> None:
    """The misassigning assignor's group fails wherever the paste shows who owns what, on exactly the partitions it
    gave twice and to nobody; every other group, set up by Kafka's own assignors, passes; range's skew across topics
    is a soft finding only where every member shows."""
    for name, v in read(file).items():
        group = truth(cluster)["groups"][name]
        holders: dict[str, int] = {}
        for m in group["members"]:
            for tp in m["partitions"]:
                holders[tp] = holders.get(tp, 0) + 1
        twice = {tp for tp, n in holders.items() if n > 1}
        shown = {str(r.tp) for r in v.lag}  # a partition nobody owns shows only in an offsets table
        nobody = {tp for tp in group["committed"] if tp.rsplit("-", 1)[0] in group["topics"] and tp not in holders
                  and tp in shown}
        visible = v.ownership_from is not None and group["state"] == "Stable"
        faulty = group["assignor"] == "misassign" and visible
        assert v.failed == faulty, (name, v.report.violations)
        hard = {x.where for x in v.report.violations if x.invariant == COMPLETE}
        assert hard == ({f"partition {tp}" for tp in twice | nobody} if faulty else set()), name
        if group["assignor"] != "misassign":
            assert v.broken == [], name
        if not visible and v.state not in ("Empty",) and group["state"] == "Stable":
            assert COMPLETE in v.report.skipped or v.group.members is None, name
        counts = [len(m["partitions"]) for m in group["members"]]
        every_member = v.group.members is not None or any(r.tp is None for r in v.group.offsets or ())
        if visible and every_member and group["assignor"] != "misassign":
            uneven = max(counts) - min(counts) > 1
            assert any(x.invariant == OPTIMAL for x in v.report.violations) == uneven, name
            # range balances each topic alone; with no assignor named, the whole group's balance is reported
            assert any(x.invariant == BALANCED for x in v.report.violations) == (uneven and v.strategy is None), name


@pytest.mark.parametrize(("file", "cluster"), _cases())
def test_what_cannot_be_told_is_said(file: str, cluster: str) -> None:
    for name, v in read(file).items():
        group = truth(cluster)["groups"][name]
        if any(m["fate"] == "killed" for m in group["members"]) and v.members:
            assert ALIVE in v.cannot, name  # a killed member still owns its partitions: only its session ends that
        if any(m.anonymous is not None for m in v.group.members or ()):
            assert any("prints no topic names" in c for c in v.cannot), name
        behind = sum(truth(cluster)["log_end_offsets"][tp] - o for tp, o in group["committed"].items())
        if group["state"] == "Empty" and v.group.offsets is not None:  # nothing consumes an empty group's partitions
            assert any(n.startswith(f"no active members: nothing consumes these partitions, and their lag "
                                    f"({behind:,})") for n in v.notes) == (behind > 0), name
        if group["state"] == "Reconciling" and any(m.target is not None for m in v.members):
            everything = {f"{t}-{p}" for t in group["topics"] for p in range(truth(cluster)["topics"][t])}
            taken = {tp for m in group["members"] for tp in m["partitions"]}
            assert {str(tp) for tp in v.pending} == everything - taken, name
        else:
            assert v.pending == [], name


def _collapsed(text: str) -> str:
    """The output as a chat or a web page pastes it: runs of spaces collapsed to one, alignment lost."""
    return "\n".join(re.sub(r" +", " ", line) for line in text.splitlines())


@pytest.mark.parametrize(("file", "cluster"), _cases())
def test_a_paste_that_lost_its_alignment_reads_the_same(file: str, cluster: str) -> None:
    text = (GROUPS / file).read_text()
    aligned = parse_group_describe(text, file)
    for changed in (_collapsed(text), text.replace("     ", "\t")):
        paste = parse_group_describe(changed, file)
        for name, g in aligned.groups.items():
            other = paste.groups[name]
            assert (other.offsets, other.members, other.states) == (g.offsets, g.members, g.states), name


def test_a_terminal_session_pasted_whole_names_each_group_by_its_command(capsys: Any) -> None:
    """Before 2.3 no table names its group: the command lines of a pasted session do, and a note names only the
    table right after it (never one after the next command)."""
    folder = GROUPS / "1.1.1@3.9.1"
    session = ""
    runs = (("archive", "members", " --members"), ("billing", "describe", ""), ("billing", "state", " --state"),
            ("shipping", "members-verbose", " --members --verbose"))
    for group, mode, flags in runs:
        session += (f"$ bin/kafka-consumer-groups.sh --bootstrap-server b:9092 --describe --group {group}{flags}\n"
                    + (folder / f"{mode}.{group}.txt").read_text() + "\n")
    paste = parse_group_describe(session, "session.txt")
    assert set(paste.groups) == {"archive", "billing", "shipping"} and len(paste.commands) == 4
    t = truth("3.9.1")["groups"]
    billing = verdict(paste.groups["billing"], None)
    assert (billing.state, billing.strategy) == ("Stable", "range")
    assert {str(r.tp): r.current for r in billing.lag} == t["billing"]["committed"]
    shipping = verdict(paste.groups["shipping"], None)
    assert {m.id: sorted(map(str, m.partitions or ())) for m in shipping.members} == _owned(t["shipping"])
    assert verdict(paste.groups["archive"], None).state == "Empty"


# --- the command --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("file", [e["file"] for e in INDEX if MISSING in e["args"]])
def test_a_group_that_is_not_there_is_nothing_to_verify(file: str, capsys: Any) -> None:
    """Up to 3.9 the tool says "Consumer group 'g' does not exist."; 4.x fails with GroupIdNotFoundException and a
    stack trace. Either way a gate must not pass: one line, exit 2. Beside a real group it is reported, not judged."""
    code, out, err = run(capsys, "verify-group", str(GROUPS / file))
    assert code == 2 and not out
    one_error_line(err, f"found no group '{MISSING}' (it does not exist)")
    cluster = file.split("@")[1].split("/")[0]
    folder = file.split("/")[0] + "/"
    other = next(e["file"] for e in INDEX if e["file"].startswith(folder) and MISSING not in e["args"])
    code, out, err = run(capsys, "verify-group", str(GROUPS / file), str(GROUPS / other), "--json")
    doc = json.loads(out)
    groups = {g["group"]: g for g in doc["groups"]}
    assert not err and groups[MISSING]["state"] == "Dead" and groups[MISSING]["checked"] == []
    assert groups[MISSING]["ok"] and code == (0 if all(g["ok"] for g in groups.values()) else 1)
    named = {name for name in groups if name not in (MISSING, None)}
    assert named <= set(truth(cluster)["groups"])


MISASSIGNED = GROUPS / "2.6.3@3.9.1" / "members-verbose.all.txt"


def test_exit_1_on_the_misassigned_group_with_its_partitions(capsys: Any) -> None:
    code, out, err = run(capsys, "verify-group", str(MISASSIGNED))
    assert code == 1 and not err
    assert "FAIL: misassigned" in out and "partition payments-0 is assigned 2 times" in out
    code, out, _ = run(capsys, "verify-group", str(MISASSIGNED), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["exit_status"] == 1
    failed = {g["group"] for g in doc["groups"] if not g["ok"]}
    assert failed == {"misassigned"}


def test_several_files_of_one_group_are_one_paste(capsys: Any) -> None:
    """Pre-2.3 outputs name no group: a group's describe, --members --verbose and --state files read as one."""
    files = [str(GROUPS / "1.1.1@3.9.1" / f"{m}.billing.txt") for m in ("describe", "members-verbose", "state")]
    code, out, err = run(capsys, "verify-group", *files, "--json")
    doc = json.loads(out)
    assert code == 0 and not err and len(doc["groups"]) == 1
    g = doc["groups"][0]
    assert (g["state"], g["assignment_strategy"], g["assignor"]) == ("Stable", "range", "range")
    members = truth("3.9.1")["groups"]["billing"]["members"]
    assert {m["member"]: sorted(m["partitions"]) for m in g["members"]} == \
        {m["member"]: sorted(m["partitions"]) for m in members}
    assert {v["invariant"] for v in g["violations"]} == {OPTIMAL}  # range's skew across topics: soft


def test_assignor_option_holds_an_unnamed_group_to_its_promise(capsys: Any) -> None:
    """Without --state, balance is reported only; --assignor names the promise (uniform: balanced overall)."""
    billing = str(GROUPS / "1.1.1@3.9.1" / "members-verbose.billing.txt")
    assert run(capsys, "verify-group", billing)[0] == 0
    code, out, _ = run(capsys, "verify-group", billing, "--assignor", "uniform", "--json")
    assert code == 1 and json.loads(out)["groups"][0]["broken_guarantees"] == [BALANCED]
    assert run(capsys, "verify-group", billing, "--assignor", "range")[0] == 0


def test_junit_report(tmp_path: Path, capsys: Any) -> None:
    xml = tmp_path / "groups.xml"
    code, _, _ = run(capsys, "verify-group", str(MISASSIGNED), "--junit-xml", str(xml))
    text = xml.read_text()
    assert code == 1 and "kcheck verify-group misassigned" in text and "<failure" in text


def _other_outputs() -> list[Any]:
    return [pytest.param(DATA / "pasted" / "describe_4.0.txt", "kafka-topics --describe", "kcheck verify`",
                         id="topics"),
            pytest.param(DATA / "reassign" / "4.4.0" / "generate_orders.txt",
                         "kafka-reassign-partitions", "kcheck verify-reassignment`",
                         id="reassign"),
            pytest.param(DATA / "dump" / "plain.txt", "kafka-dump-log", "kcheck verify-log`", id="dump"),
            pytest.param(DATA / "dump" / "log-dirs.txt", "kafka-log-dirs", "kcheck verify-log`", id="log-dirs"),
            pytest.param(DATA / "reassign" / "plan_safe.json", "reassignment JSON", "kcheck verify`", id="plan")]


@pytest.mark.parametrize(("path", "what", "reader"), _other_outputs())
def test_other_tools_output_is_named_with_its_reader(path: Path, what: str, reader: str, capsys: Any) -> None:
    code, out, err = run(capsys, "verify-group", str(path))
    assert code == 2 and not out
    one_error_line(err, what, reader)


@pytest.mark.parametrize("file", sorted(e["file"] for e in INDEX if e["file"].split("/")[1].split(".")[0] in (
    "describe", "members-verbose", "state")) [::7])
def test_assign_names_consumer_groups_output_and_its_reader(file: str, capsys: Any) -> None:
    """Issue 32: `kcheck assign` given kafka-consumer-groups output said "invalid JSON at line 1 column 3"."""
    code, out, err = run(capsys, "assign", str(GROUPS / file))
    assert code == 2 and not out
    one_error_line(err, "kafka-consumer-groups --describe output", "`kcheck verify-group` reads it")
    assert "invalid JSON" not in err


@pytest.mark.parametrize(("path", "what", "reader"), _other_outputs())
def test_assign_names_other_tools_output(path: Path, what: str, reader: str, capsys: Any) -> None:
    code, out, err = run(capsys, "assign", str(path))
    assert code == 2 and not out
    one_error_line(err, what, reader, "not a group description JSON")


def test_assign_keeps_its_own_errors_for_a_broken_group_json(tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "g.json"
    bad.write_text('{"topics": {"t": 3}, "members": {"c1": ["t"]},}')
    code, _, err = run(capsys, "assign", str(bad))
    assert code == 2
    one_error_line(err, "g.json:1:", ": invalid JSON")


def test_identify_every_stored_output() -> None:
    for e in INDEX:
        text = (GROUPS / e["file"]).read_text()
        if re.search(r"^(GROUP|TOPIC|CONSUMER-ID|COORDINATOR) ", text, re.M) or "Consumer group '" in text:
            found = identify(text)
            assert found is not None and found.what.startswith("kafka-consumer-groups --describe"), e["file"]
    assert identify((DATA / "group_fresh.json").read_text()) is None


# --- bad input: one line, exit 2, nothing on stdout ---------------------------------------------------------------

SHIPPING = (GROUPS / "3.7.2@3.9.1" / "offsets.all.txt").read_text()


def _row_broken(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


BAD = {
    "empty": ("", "is empty"),
    "blank": ("\n \n", "is empty"),
    "no table": ("Consumer group\n", "not part of kafka-consumer-groups --describe output"),
    "unknown column": ("GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID NEW\n",
                       "unknown column NEW"),
    "columns out of order": ("TOPIC GROUP PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID\n",
                             "not in kafka-consumer-groups' order"),
    "reset-offsets": ("GROUP TOPIC PARTITION NEW-OFFSET\ng t 0 5\n", "--reset-offsets output"),
    "offset not a number": (_row_broken(SHIPPING, " 8               10", " x8              10"),
                            "CURRENT-OFFSET 'x8' is not a number"),
    "bad topic": (_row_broken(SHIPPING, "shipping        orders ", "shipping        ord!rs "), "TOPIC:"),
    "short row": (_row_broken(SHIPPING, "/127.0.0.1      shipping-2", ""), "does not fit its offsets header"),
    "stray line": (SHIPPING + "\nsomething else\n", "not part of kafka-consumer-groups --describe output"),
    "control characters": (_row_broken(SHIPPING, "shipping        orders ", "ship\x1b[31mping  orders "),
                           "contains the control character \\x1b"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_refused_in_one_line(case: str, tmp_path: Path, capsys: Any) -> None:
    text, fragment = BAD[case]
    path = tmp_path / "groups.txt"
    path.write_text(text)
    code, out, err = run(capsys, "verify-group", str(path))
    assert code == 2 and not out, (out, err)
    one_error_line(err, str(path), fragment)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groups.txt"]


@pytest.mark.parametrize(("args", "fragment"), [
    (["--assignor", "nope"], "--assignor: 'nope' is not an assignor kcheck knows"),
    (["-", "-"], "'-' (stdin) given more than once"),
    (["/nonexistent/x"], "no such file"),
])
def test_bad_options_are_refused_in_one_line(args: list[str], fragment: str, capsys: Any) -> None:
    argv = ["verify-group", *args] if args[0] in ("-", "/nonexistent/x") else ["verify-group", str(MISASSIGNED), *args]
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out
    one_error_line(err, fragment)


def test_a_directory_is_refused(tmp_path: Path, capsys: Any) -> None:
    code, out, err = run(capsys, "verify-group", str(tmp_path))
    assert code == 2 and not out
    one_error_line(err, "is a directory")


def test_the_layout_before_0_10_2_is_named(tmp_path: Path, capsys: Any) -> None:
    # ConsumerGroupCommand before 0.10.2 printed one OWNER column (consumer id and host) where later releases print
    # CONSUMER-ID, HOST and CLIENT-ID; kcheck reads 0.10.2 on and says which layout it was given.
    path = tmp_path / "old.txt"
    path.write_text("GROUP                          TOPIC                          PARTITION  CURRENT-OFFSET  "
                    "LOG-END-OFFSET  LAG             OWNER\n"
                    "g                              t                              0          4499            "
                    "4500            1               consumer-1_/172.19.0.4\n")
    code, out, err = run(capsys, "verify-group", str(path))
    assert code == 2 and not out
    one_error_line(err, "OWNER column: the layout of kafka-consumer-groups before 0.10.2")


def test_a_member_whose_partitions_have_no_commit_has_no_lag_number(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "g.txt"
    path.write_text("GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID\n"
                    "g t 0 - 5 - c-1 /h c\ng t 1 3 5 2 c-2 /h c\ng t 2 - 9 - c-2 /h c\n")
    code, out, _ = run(capsys, "verify-group", str(path))
    rows = {line.split("│")[1].strip(): line.split("│")[-2].strip() for line in out.splitlines()
            if line.startswith("│ c-")}
    assert code == 0 and rows == {"c-1": "-", "c-2": "2+"}
