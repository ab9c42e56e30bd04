"""The README's CI-gate walk-through ("A CI gate, start to finish"), run as written: a pasted `kafka-topics
--describe`, `verify` and a baseline, a decommission plan through `verify-reassignment`, `--fail-on new`, Kafka's
own `--generate` output pasted whole, an allowlist, and the JUnit XML for the CI system. The files and commands
here are the README's, character for character (the test checks the README holds each of them)."""

from __future__ import annotations

import json
import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import NamedTuple

from cli_support import run

DESCRIBE = """\
Topic: orders	TopicId: 0m8f2CqhS4yN3bXd0xVbAw	PartitionCount: 6	ReplicationFactor: 3	\
Configs: min.insync.replicas=2
	Topic: orders	Partition: 0	Leader: 1	Replicas: 1,3,5	Isr: 1,3,5
	Topic: orders	Partition: 1	Leader: 3	Replicas: 3,6,2	Isr: 3,6,2
	Topic: orders	Partition: 2	Leader: 5	Replicas: 5,2,4	Isr: 5,2,4
	Topic: orders	Partition: 3	Leader: 2	Replicas: 2,4,6	Isr: 2,4,6
	Topic: orders	Partition: 4	Leader: 4	Replicas: 4,5,1	Isr: 4,5,1
	Topic: orders	Partition: 5	Leader: 6	Replicas: 6,1,3	Isr: 6,1,3
Topic: legacy	TopicId: Yt3kq0bHRkWm7a0ZpQ2uJg	PartitionCount: 1	ReplicationFactor: 2	\
Configs: min.insync.replicas=1
	Topic: legacy	Partition: 0	Leader: 1	Replicas: 1,2	Isr: 1,2
"""
# The next day: orders-2's ISR is down to its leader (the README shows this line, the rest is describe.txt's).
LATER_LINE = "	Topic: orders	Partition: 2	Leader: 5	Replicas: 5,2,4	Isr: 5"
DESCRIBE_LATER = DESCRIBE.replace("	Topic: orders	Partition: 2	Leader: 5	Replicas: 5,2,4	Isr: 5,2,4", LATER_LINE)

BROKERS = """\
1:a
2:a
3:b
4:b
5:c
6:c
7:c
"""

PLAN = """\
{"version":1,"partitions":[
 {"topic":"orders","partition":1,"replicas":[3,7,2]},
 {"topic":"orders","partition":3,"replicas":[2,4,7]},
 {"topic":"orders","partition":5,"replicas":[7,1,3]}]}
"""

PLAN_PARTIAL = """\
{"version":1,"partitions":[
 {"topic":"orders","partition":1,"replicas":[3,7,2]},
 {"topic":"orders","partition":3,"replicas":[2,4,7]}]}
"""

# kafka-reassign-partitions.sh --generate --broker-list 1,2,3,4,5,7 for topic orders, as the tool prints it. The
# proposal is Kafka's AdminUtils.assignReplicasToBrokers with start index 0 (--generate draws it at random):
# `kcheck place --placer adminutils --brokers 1,2,3,4,5,7 --racks 1:a,2:a,3:b,4:b,5:c,7:c --partitions 6
# --replication-factor 3 --start-index 0 --against-kafka 4.0.2` prints the same from Kafka's own jars.
GENERATED = """\
Current partition replica assignment
{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,3,5],"log_dirs":["any","any","any"]},\
{"topic":"orders","partition":1,"replicas":[3,6,2],"log_dirs":["any","any","any"]},\
{"topic":"orders","partition":2,"replicas":[5,2,4],"log_dirs":["any","any","any"]},\
{"topic":"orders","partition":3,"replicas":[2,4,6],"log_dirs":["any","any","any"]},\
{"topic":"orders","partition":4,"replicas":[4,5,1],"log_dirs":["any","any","any"]},\
{"topic":"orders","partition":5,"replicas":[6,1,3],"log_dirs":["any","any","any"]}]}

Proposed partition reassignment configuration
{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,3,5],"log_dirs":["any","any","any"]},\
{"topic":"orders","partition":1,"replicas":[3,5,2],"log_dirs":["any","any","any"]},\
{"topic":"orders","partition":2,"replicas":[5,2,4],"log_dirs":["any","any","any"]},\
{"topic":"orders","partition":3,"replicas":[2,4,7],"log_dirs":["any","any","any"]},\
{"topic":"orders","partition":4,"replicas":[4,7,1],"log_dirs":["any","any","any"]},\
{"topic":"orders","partition":5,"replicas":[7,1,3],"log_dirs":["any","any","any"]}]}
"""

ALLOWLIST = """\
# invariant              | where              | reason
placement.rack-diversity | partition legacy-0 | two replicas in rack a until the legacy topic is retired (OPS-142)
"""



class Done(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


FILES = {"describe.txt": DESCRIBE, "describe_later.txt": DESCRIBE_LATER, "brokers.txt": BROKERS, "plan.json": PLAN,
         "plan_partial.json": PLAN_PARTIAL, "generated.txt": GENERATED, "allowlist.txt": ALLOWLIST}
SHOWN = ("describe.txt", "brokers.txt", "plan.json", "plan_partial.json", "generated.txt", "allowlist.txt")

COMMANDS = [
    "kcheck verify describe.txt --brokers-file brokers.txt",
    "kcheck verify describe.txt --brokers-file brokers.txt --json > baseline.json",
    "kcheck verify describe.txt --brokers-file brokers.txt --baseline baseline.json",
    "kcheck verify describe_later.txt --brokers-file brokers.txt --baseline baseline.json",
    "kcheck verify-reassignment describe.txt plan.json --brokers-file brokers.txt --decommission 6",
    "kcheck verify-reassignment describe.txt plan.json --brokers-file brokers.txt --decommission 6 --fail-on new",
    "kcheck verify-reassignment describe.txt plan_partial.json --brokers-file brokers.txt --decommission 6 "
    "--fail-on new",
    "kcheck verify-reassignment describe.txt generated.txt --brokers-file brokers.txt --decommission 6 --fail-on new",
    "kcheck verify-reassignment describe.txt plan.json --brokers-file brokers.txt --decommission 6 "
    "--allowlist allowlist.txt --junit-xml kcheck-gate.xml",
]


def kcheck(capsys, command: str, cwd: Path) -> tuple[int, str, str]:
    """`command` as the README runs it, in this process (a trailing `> FILE` writes stdout to FILE, as the shell
    would): (exit status, stdout, stderr)."""
    command, _, redirect = command.partition(" > ")
    args = shlex.split(command)
    assert args[0] == "kcheck"
    code, out, err = run(capsys, *args[1:])
    if redirect:
        (cwd / redirect.strip()).write_text(out)
    return code, out, err


def flat(text: str) -> str:
    """Words only: the tables' box-drawing characters and line breaks dropped."""
    return " ".join(re.sub("[\u2500-\u257f]", " ", text).split())


def test_the_ci_gate_walkthrough_runs_as_written(capsys, tmp_path, monkeypatch):
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    r = [Done(*kcheck(capsys, c, tmp_path)) for c in COMMANDS]
    for i, done in enumerate(r):
        assert done.stderr == "", (COMMANDS[i], done.stderr)

    # 1. The cluster as it is: legacy-0 sits in one rack (hard), the new broker 7 is empty (soft).
    out = flat(r[0].stdout)
    assert r[0].returncode == 1, out
    assert "partition legacy-0 spans 1 rack(s), needs 2: a=2" in out
    assert "broker 7 has 0 replicas, 2 below the lower limit 2" in out
    assert "topic legacy: losing rack a leaves 1 of its 1 partitions (legacy-0)" in out
    assert "FAIL: 1 hard and 2 soft violation(s)" in out

    # 2. Its JSON report is the baseline: the three findings, and the command that wrote it.
    base = json.loads((tmp_path / "baseline.json").read_text())
    assert r[1].returncode == 1 and base["command"] == "verify" and base["exit_status"] == 1
    assert {(v["invariant"], v["where"]) for v in base["violations"]} == {
        ("placement.rack-diversity", "partition legacy-0"), ("placement.replica-spread", "broker 7"),
        ("health.zone-loss", "topic legacy")}

    # 3. Against the baseline, the same cluster passes: what was known is shown as suppressed.
    out = flat(r[2].stdout)
    assert r[2].returncode == 0, out
    assert "[suppressed: in the baseline baseline.json]" in out
    assert "0 fail the gate (--fail-on hard): 0 introduced, 0 changed, 0 unchanged, 0 fixed, 3 suppressed" in out

    # 4. ... and a new problem the next day fails it.
    out = flat(r[3].stdout)
    assert r[3].returncode == 1, out
    assert "introduced hard health.under-min-isr partition orders-2" in out
    assert "introduced soft health.under-replicated partition orders-2" in out
    assert "introduced soft health.zone-loss topic orders" in out
    assert "1 fail the gate (--fail-on hard): 3 introduced, 0 changed, 0 unchanged, 0 fixed, 3 suppressed" in out

    # 5. Decommissioning broker 6 onto broker 7: the plan fixes broker 7's balance findings and leaves
    #    legacy-0 as it was; by default that known hard finding still fails the gate.
    out = flat(r[4].stdout)
    assert r[4].returncode == 1, out
    assert "unchanged hard placement.rack-diversity partition legacy-0" in out
    assert "fixed soft placement.replica-spread broker 7" in out
    assert "fixed soft placement.leader-spread broker 7" in out
    assert "1 fail the gate (--fail-on hard): 0 introduced, 0 changed, 1 unchanged, 2 fixed, 0 suppressed" in out
    assert "placement.replica-spread broker 6" not in out  # emptying a leaving broker is no balance violation

    # 6. --fail-on new: only what the plan introduces fails it.
    out = flat(r[5].stdout)
    assert r[5].returncode == 0, out
    assert "0 fail the gate (--fail-on new): 0 introduced, 0 changed, 1 unchanged, 2 fixed, 0 suppressed" in out

    # 7. A plan that forgets orders-5 leaves a replica on the leaving broker: a hard finding it introduces.
    out = flat(r[6].stdout)
    assert r[6].returncode == 1, out
    assert ("introduced hard placement.leaving-broker-emptied broker 6 broker 6 is leaving (--decommission) but "
            "still holds 1 replica(s): orders-5") in out

    # 8. Kafka's own --generate output, pasted whole: its Proposed block is the plan.
    out = flat(r[7].stdout)
    assert r[7].returncode == 0, out
    assert "PROPOSED generated.txt: --generate output: Proposed partition reassignment configuration" in out
    assert "Moves (6 partitions" in out and "orders-4 4,5,1 4,7,1 7 5" in out  # 0 and 2 stay as they are
    assert "0 fail the gate (--fail-on new): 0 introduced, 0 changed, 1 unchanged, 2 fixed, 0 suppressed" in out

    # 9. In CI: the allowlist names the known finding with its reason, and the JUnit XML has no failure.
    out = flat(r[8].stdout)
    assert r[8].returncode == 0, out
    assert ("[suppressed: allowlist allowlist.txt line 2: two replicas in rack a until the legacy topic is retired "
            "(OPS-142)]") in out
    suites = ET.parse(tmp_path / "kcheck-gate.xml").getroot()
    assert suites.get("failures") == "0"
    case = suites.find(".//testcase[@name='placement.rack-diversity']")
    assert case is not None and case.find("failure") is None
    assert "suppressed (allowlist allowlist.txt line 2" in case.findtext("system-out", "")


def test_the_docs_show_these_files_and_commands():
    """The docs' walk-through (docs/tasks/ci-gate.md) is this test's: every file it shows and every command appear
    there verbatim."""
    readme = (Path(__file__).resolve().parents[1] / "docs" / "tasks" / "ci-gate.md").read_text()
    section = readme.split("\n## Propose a plan")[0]
    for text in (*(FILES[name].rstrip() for name in SHOWN), LATER_LINE.strip(), *COMMANDS):
        assert text in section, text[:80]
