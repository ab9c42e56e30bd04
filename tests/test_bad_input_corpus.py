"""Bad input to every command: exit 2, one line on stderr that names the place, no traceback, no hang,
nothing printed on stdout, and no file touched.

The cases are generated from tables: per option a list of bad values, per input format a list of mutations
of a valid file from tests/data. They run in-process through `kcheck.cli.main` (fast); the few that could
hang (a FIFO with no writer) run as subprocesses under a timeout, so a hang fails instead of blocking.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kcheck.cli import main

DATA = Path(__file__).parent / "data"
DIR = object()  # a directory where a file is expected
FIFO = object()  # a named pipe with no writer
LONG = "x" * 100_000
CONTROLS = ("\x1b[31m", "\x00", "\x1b]0;owned\x07", "\u202e")  # colour, NUL, terminal title, bidi override

# ---- valid inputs, written into each case's empty working directory ------------------------------------------

PLAN = (DATA / "reassign" / "plan_safe.json").read_text()
CURRENT = (DATA / "reassign" / "describe_current.txt").read_text()
BROKERS = (DATA / "reassign" / "brokers.txt").read_text()
GROUP = (DATA / "group_owned.json").read_text()
TRACE = {"format": 2, "protocol": "current",
         "config": {"brokers": 2, "replication_factor": 0, "min_isr": 1, "initial_isr": 0, "acks": ["all"],
                    "records": 1, "max_leader_epoch": 3, "crashes": 1, "lossy_crashes": 0, "fences": 0,
                    "elections": 0, "isr_shrinks": 0, "failovers": 0, "reads": 1, "reassignments": 0, "cancels": 0,
                    "duplicates": True, "atomic_fetch": False},
         "steps": [{"action": "produce", "broker": 1, "acks": "all"}, {"action": "fetch", "follower": 2}]}
VALID = {"plan.json": PLAN, "current.txt": CURRENT, "brokers.txt": BROKERS, "group.json": GROUP,
         "trace.json": json.dumps(TRACE)}

# ---- options: per command, a valid command line and per option its bad values ----------------------------------

INT = ["", "x", "1.5", "1e9", "0x10", "nan", "inf", "2147483648", "-2147483649", "9" * 5000, *CONTROLS, LONG]
FLOAT = ["", "x", "nan", "NaN", "inf", "-inf", "Infinity", "1e309", "1,5", *CONTROLS[:2], LONG]
IDS = ["", ",", "x", "0,x", "-1", "0,-1", "0,0", "2147483648", "0,99999999999999999999", "1.5", "0;1", "+1", "1_0",
       "0,\u0661", "nan", *CONTROLS, LONG]
TOPICS = ["", "a b", ".", "..", "top/ic", "t\u00f6pic", "x" * 250, *CONTROLS, LONG]
PLACERS = ["", "nope", "no_such_module_kcheck:place", "\x1b[2J", LONG]
PLACE = ["place", "--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2"]
OPTIMIZE = ["optimize", "--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2"]

OPTIONS: dict[str, tuple[list[str], dict[str, list[str]]]] = {
    "check": (["check"], {"--max-brokers": [*INT, "0", "13", "-1"],
                          "--invariants": ["", "no_such_module_kcheck_inv", "a b", "\x1b[31m"]}),
    "place": (PLACE, {
        "--brokers": IDS,
        "--partitions": [*INT, "0", "-1", "200001", "100000000", "2147483647"],
        "--replication-factor": [*INT, "0", "-1", "4", "32768", "2147483647"],
        "--racks": ["x", "0", "0:", ":a", "9:a", "0:a,0:b", "0:a", "x:a", "2147483648:a", "0:a,1:b,2:\x1b[31m",
                    "0:a,1:b,2:c\x00", *CONTROLS, LONG],
        "--topic": TOPICS,
        "--start-index": ["-2", "2147483648", "x", "nan", "1.5", ""],
        "--start-partition": ["-2", "2147483648", "2147483647", "x", ""],
        "--placer": PLACERS,
        "--seed": ["", "x", "1.5", "nan", "9" * 30, "-9" * 30, *CONTROLS[:2]],
    }),
    "optimize": (OPTIMIZE, {
        "--brokers": IDS[:12],
        "--partitions": [*INT, "0", "-1", "65", "100000", "2147483647"],
        "--replication-factor": ["0", "-1", "4", "x", "nan", "2147483648"],
        "--racks": ["x", "9:a", "0:a", "0:a,1:b,2:\x1b[31m"],
        "--placer": PLACERS[:3],
        "--start-index": ["-2", "2147483648", "x"],
        "--seed": ["x", "9" * 30],
    }),
    "verify": (["verify", "plan.json"], {
        "--threshold": [*FLOAT, "0.5", "-1", "0"],
        "--max-replicas-per-broker": [*INT, "-1", "0"],
        "--brokers-file": ["nope.txt", LONG, "\x1b[31m.txt"],
    }),
    "verify-reassignment": (["verify-reassignment", "current.txt", "plan.json"], {
        "--threshold": [*FLOAT, "0.5"],
        "--max-replicas-per-broker": ["-1", "0", "2147483648", "x", "nan"],
        "--min-insync-replicas": ["0", "-1", "2147483648", "x", "nan", ""],
        "--controller": ["", "x", "ZooKeeper", *CONTROLS, LONG],
        "--brokers-file": ["nope.txt", "\x1b[31m"],
    }),
    "prove": (["prove"], {
        "--algorithm": ["", "x", "\x1b[31m", LONG],
        "--invariant": ["", "x", "placement.nope", "\x1b[31m"],
        "--max-brokers": ["0", "-1", "99", "x", "2147483648", "nan"],
        "--max-racks": ["0", "11", "x"],
        "--max-partitions": ["0", "65", "2147483648"],
        "--max-rf": ["0", "11", "-3"],
        "--timeout": [*FLOAT, "-1", "0", "-0", "86401", "1e12"],
        "--placer": ["nope", "no_such_module_kcheck:place"],
    }),
    "assign": (["assign", "group.json"], {"--assignor": ["", "nope", "no_such_module_kcheck:a", *CONTROLS, LONG]}),
    "reassign": (["reassign", "--from", "1,2,3", "--to", "4,5,6"], {
        "--from": IDS[:14],
        "--to": IDS[:14],
        "--leader": ["-1", "9", "2147483648", "x", "nan", ""],
        "--isr": ["x", "9", "2,3", "-1", "2147483648"],
        "--controller": ["", "x", "KRAFT", *CONTROLS[:2]],
        "--leader-epoch": ["-1", "2147483648", "x", "1.5"],
    }),
    "sweep": (["sweep", "placement"], {
        "--space": ["", "nope", "default,brokers=1..99999999999", "brokers=x", "default,rf=3..1", "\x1b[31m", LONG],
        "--placer": ["nope", "adminutils,adminutils", "no_such_module_kcheck:p", "\x1b[31m"],
        "--assignor": ["range"],
        "--tasks": ["0", "-1", "x", "nan", "2147483648.5"],
    }),
    "explore": (["explore", "--examples", "1", "--steps", "1"], {
        "--protocol": ["", "nope", "no_such_module_kcheck:p", *CONTROLS, LONG],
        "--brokers": ["0", "7", "-1", "x", "2147483648"],
        "--replication-factor": ["-1", "9", "x", "2147483648"],
        "--min-isr": ["-1", "0", "9", "x"],
        "--acks": ["x", "2", "", ",", "all,x", "\x1b[31m"],
        "--seed": ["x", "1.5", ""],
        "--examples": ["0", "-1", "x", "2147483648"],
        "--steps": ["0", "-1", "x"],
        "--records": ["-1", "x", "2147483648"],
        "--crashes": ["-1"],
        "--reassignments": ["-1", "2147483648"],
        "--invariant": ["nope", "placement.distinct-brokers", "\x1b[31m"],
        "--out": ["plan.json", "subdir"],
        "--hypothesis-dir": ["plan.json"],
        "--initial-isr": ["-1", "4", "x", "2147483648"],
        "--max-leader-epoch": ["0", "-1", "x"],
        "--reads": ["-1", "x"],
        "--invariants": ["", "no_such_module_kcheck_inv", "a b", "mod.py", "kcheck.model", *CONTROLS, LONG],
        "--coverage-dir": ["plan.json"],
        "--max-seconds": ["-1", "-0.5", "nan", "inf", "1e10", "x", ""],
    }),
    "exhaust": (["exhaust", "--max-states", "1"], {
        "--protocol": ["nope", "\x1b[31m"],
        "--brokers": ["0", "7", "x"],
        "--min-isr": ["-1", "9"],
        "--acks": ["x", ""],
        "--max-leader-epoch": ["-1", "0", "2147483648"],
        "--records": ["-1", "2147483648"],
        "--reads": ["-1", "x"],
        "--max-states": ["0", "-1", "x", "4294967295"],
        "--invariant": ["nope"],
        "--out": ["plan.json"],
        "--initial-isr": ["-1", "3", "x"],
        "--invariants": ["", "no_such_module_kcheck_inv", "\x1b[31m"],
        "--coverage-dir": ["plan.json"],
    }),
    "replay": (["replay", "trace.json"], {
        "--protocol": ["", "nope", "\x1b[31m", LONG],
        "--brokers": ["0", "7", "1", "x"],
        "--min-isr": ["0", "3", "x"],
        "--initial-isr": ["3", "-1"],
        "--max-leader-epoch": ["0"],
        "--acks": ["x", ""],
        "--records": ["-1"],
        "--invariants": ["", "no_such_module_kcheck_inv", "\x1b[31m"],
    }),
}
# Options that take no value, extra arguments and unknown options, for every command (and none).
EXTRA: list[tuple[list[str], str]] = [
    *[([*base, "--nope"], "--nope") for base, _ in OPTIONS.values()],
    *[([*base, "extra-argument"], "extra-argument") for base, _ in OPTIONS.values()
      if base[0] not in ("sweep", "verify-reassignment", "verify", "assign", "replay")],
    (["variants", "extra-argument"], "extra-argument"), (["variants", "--nope"], "--nope"),
    (["variants", "--json=1"], "--json"), (["invariants", "extra-argument"], "extra-argument"),
    (["invariants", "--nope"], "--nope"), (["nosuch"], "nosuch"), (["--nope"], "--nope"), ([""], "''"),
    (["verify", "plan.json", "--json=yes"], "--json"), (["check", "--deep=1"], "--deep"),
    (["place", "--brokers", "0,1"], "--partitions"), (["verify"], "plan"), (["verify-reassignment", "plan.json"],
                                                                             "proposed"),
    (["assign"], "group"), (["replay"], "trace_file"), (["sweep"], "SPACE"), (["sweep", "nope"], "SPACE"),
    (["sweep", "\x1b[31m"], "SPACE"), (["sweep", "assignors", "--placer", "striped"], "--placer"),
    (["sweep", "placement", "--assignor", "range"], "--assignor"),
    (["reassign", "--from", "1,2,3"], "--to"), (["verify-reassignment", "-", "-"], "stdin"),
    (["optimize", "--brokers", ",".join(map(str, range(20))), "--partitions", "20", "--replication-factor", "3"],
     "--partitions"),
    (["place", "--brokers", ",".join(map(str, range(1000))), "--partitions", "1001", "--replication-factor",
      "1000"], "--partitions"),
]

# ---- input files: per format, mutations of a valid file ----------------------------------------------------

GENERIC: dict[str, Any] = {  # any file kcheck reads
    "empty": b"", "blank": b" \n\t\n", "binary": bytes(range(256)) * 4, "nul": b"\x00" * 64,
    "utf16": "\ufeff{}".encode("utf-16-le"), "latin1": "caf\xe9\n".encode("latin-1"),
    "directory": DIR, "deep": b"[" * 200_000, "bigint": b"{" + b"1" * 5000 + b"}",
}


def _json(text: str, change) -> bytes:  # type: ignore[no-untyped-def]
    doc = json.loads(text)
    change(doc)
    return json.dumps(doc).encode()


def _plan(change) -> bytes:  # type: ignore[no-untyped-def]
    return _json(PLAN, change)


def _part(key: str, value: object):  # type: ignore[no-untyped-def]
    def change(doc: dict[str, Any]) -> None:
        doc["partitions"][0][key] = value
    return change


def _drop(key: str):  # type: ignore[no-untyped-def]
    return lambda doc: doc["partitions"][0].pop(key)


PLAN_MUTATIONS: dict[str, Any] = {
    **GENERIC, "truncated": PLAN[: len(PLAN) // 2].encode(), "list": b"[]", "string": b'"plan"', "number": b"1",
    "no-version": _json(PLAN, lambda d: d.pop("version")), "version-2": _json(PLAN, lambda d: d.update(version=2)),
    "version-str": _json(PLAN, lambda d: d.update(version="1")), "no-partitions": _json(PLAN, lambda d: d.pop(
        "partitions")),
    "partitions-obj": _json(PLAN, lambda d: d.update(partitions={})), "partitions-empty": _json(
        PLAN, lambda d: d.update(partitions=[])),
    "entry-null": _json(PLAN, lambda d: d["partitions"].__setitem__(0, None)),
    "dup-partition": _json(PLAN, lambda d: d["partitions"].append(dict(d["partitions"][0]))),
    **{f"no-{k}": _plan(_drop(k)) for k in ("topic", "partition", "replicas")},
    **{f"partition-{n}": _plan(_part("partition", v)) for n, v in (
        ("str", "0"), ("neg", -1), ("huge", 2**31), ("float", 0.0), ("null", None), ("bool", True), ("list", [0]))},
    **{f"replica-{n}": _plan(_part("replicas", v)) for n, v in (
        ("str", ["2", 3, 5]), ("neg", [-1, 3, 5]), ("huge", [2**31, 3, 5]), ("float", [2.0, 3, 5]),
        ("null", [None, 3, 5]), ("bool", [True, 3, 5]), ("dup", [2, 2, 5]), ("empty", []), ("obj", {"a": 1}),
        ("nested", [[2], 3, 5]), ("huger", [10**30, 3, 5]))},
    **{f"topic-{n}": _plan(_part("topic", v)) for n, v in (
        ("empty", ""), ("int", 7), ("null", None), ("space", "a b"), ("esc", "pay\x1b[31mments"), ("nul", "p\x00"),
        ("bidi", "p\u202eq"), ("long", LONG), ("250", "x" * 250), ("slash", "a/b"))},
    "log-dirs-short": _plan(_part("log_dirs", ["any"])), "log-dirs-int": _plan(_part("log_dirs", [1, 2, 3])),
}
DESCRIBE_MUTATIONS: dict[str, Any] = {
    **GENERIC, "truncated": CURRENT[: len(CURRENT) // 3].encode() + b"Partition: ",
    "garbage-line": (CURRENT + "hello world\n").encode(), "no-partitions": CURRENT.splitlines()[0].encode(),
    **{f"{key}-{n}": CURRENT.replace(old, new, 1).encode() for key, old, variants in (
        ("leader", "Leader: 1", (("neg", "Leader: -2"), ("huge", "Leader: 2147483648"), ("x", "Leader: x"),
                                 ("float", "Leader: 1.0"), ("empty", "Leader: "))),
        ("replicas", "Replicas: 1,3,5", (("neg", "Replicas: -1,3,5"), ("huge", "Replicas: 2147483648,3,5"),
                                         ("dup", "Replicas: 1,1,5"), ("x", "Replicas: 1,x,5"), ("empty", "Replicas: "),
                                         ("digit", "Replicas: \u0661,3,5"), ("plus", "Replicas: +1,3,5"))),
        ("isr", "Isr: 1,3,5", (("neg", "Isr: -1"), ("huge", "Isr: 99999999999"), ("x", "Isr: a"))),
        ("partition", "Partition: 0", (("neg", "Partition: -1"), ("huge", "Partition: 2147483648"),
                                       ("x", "Partition: zero"), ("dup", "Partition: 1"))),
        ("topic", "Topic: payments\tPartition: 0", (
            ("esc", "Topic: pay\x1b[31mments\tPartition: 0"), ("nul", "Topic: pay\x00ments\tPartition: 0"),
            ("long", f"Topic: {LONG}\tPartition: 0"), ("slash", "Topic: a/b\tPartition: 0"))),
        ("rf", "ReplicationFactor: 3", (("x", "ReplicationFactor: three"), ("huge", "ReplicationFactor: 2147483648"))),
    ) for n, new in variants},
}
BROKERS_MUTATIONS: dict[str, Any] = {
    **GENERIC, "dup": (BROKERS + "1:c\n").encode(), "neg": (BROKERS + "-7:c\n").encode(),
    "huge": (BROKERS + "2147483648:c\n").encode(), "x": (BROKERS + "x:c\n").encode(),
    "float": (BROKERS + "7.0:c\n").encode(), "three-words": (BROKERS + "7 c d\n").encode(),
    "empty-rack": (BROKERS + "7:\n").encode(), "rack-esc": (BROKERS + "7:r\x1b[31m\n").encode(),
    "rack-nul": (BROKERS + "7:r\x00\n").encode(), "digit": (BROKERS + "\u0667:c\n").encode(),
    "mixed": (BROKERS + "7\n").encode(), "comments-only": b"# nothing\n",
    "json-list-str": b'[{"id": "1", "rack": "a"}]', "json-list-neg": b'[{"id": -1, "rack": "a"}]',
    "json-list-huge": b'[{"id": 2147483648, "rack": "a"}]', "json-list-float": b'[{"id": 1.0, "rack": "a"}]',
    "json-list-null": b'[{"id": null, "rack": "a"}]', "json-list-bool": b'[{"id": true}]',
    "json-list-rack-int": b'[{"id": 1, "rack": 5}]', "json-list-rack-esc": b'[{"id": 1, "rack": "a\\u001b[31m"}]',
    "json-list-dup": b'[{"id": 1, "rack": "a"}, {"id": 1, "rack": "b"}]', "json-entry-str": b'["1"]',
    "json-map-key": b'{"x": "a"}', "json-map-neg": b'{"-1": "a"}', "json-map-huge": b'{"2147483648": "a"}',
    "json-map-dup": b'{"1": "a", "1": "b"}', "json-map-rack-list": b'{"1": ["a"]}',
    "json-brokers-obj": b'{"brokers": 1}',
    "json-truncated": b'[{"id": 1, "rack": ',
}
GROUP_MUTATIONS: dict[str, Any] = {
    **GENERIC, "truncated": GROUP[: len(GROUP) // 2].encode(), "list": b"[]",
    "no-topics": _json(GROUP, lambda d: d.pop("topics")), "no-members": _json(GROUP, lambda d: d.pop("members")),
    "topics-list": _json(GROUP, lambda d: d.update(topics=["orders"])),
    "members-empty": _json(GROUP, lambda d: d.update(members={})),
    "unknown-key": _json(GROUP, lambda d: d.update(extra=1)),
    "description-int": _json(GROUP, lambda d: d.update(description=1)),
    **{f"count-{n}": _json(GROUP, lambda d, v=v: d["topics"].update(orders=v)) for n, v in (
        ("str", "7"), ("zero", 0), ("neg", -1), ("huge", 2**31), ("float", 7.0), ("null", None), ("bool", True),
        ("ten-million", 10_000_001), ("over-two-million", 2_000_001))},
    **{f"topic-{n}": _json(GROUP, lambda d, v=v: d["topics"].update({v: 1})) for n, v in (
        ("esc", "o\x1b[31m"), ("nul", "o\x00"), ("long", LONG), ("space", "a b"))},
    **{f"generation-{n}": _json(GROUP, lambda d, v=v: d["members"]["c1"].update(generation=v)) for n, v in (
        ("str", "4"), ("neg", -1), ("huge", 2**31), ("float", 4.0))},
    **{f"owned-{n}": _json(GROUP, lambda d, v=v: d["members"]["c1"].update(owned=[v])) for n, v in (
        ("out-of-range", "orders-7"), ("huge", "orders-2147483648"), ("unknown", "nope-0"), ("int", 3),
        ("obj-neg", {"topic": "orders", "partition": -1}), ("obj-str", {"topic": "orders", "partition": "1"}),
        ("no-dash", "orders"))},
    "member-esc": _json(GROUP, lambda d: d["members"].update({"c\x1b[31m": ["orders"]})),
    "member-nul": _json(GROUP, lambda d: d["members"].update({"c\x00": ["orders"]})),
    "member-blank": _json(GROUP, lambda d: d["members"].update({" ": ["orders"]})),
    "member-topics-str": _json(GROUP, lambda d: d["members"]["c3"].update(topics="orders")),
    "member-unknown-topic": _json(GROUP, lambda d: d["members"]["c3"].update(topics=["nope"])),
    "member-rack-esc": _json(GROUP, lambda d: d["members"]["c3"].update(rack="r\x1b[31m")),
    "member-rack-int": _json(GROUP, lambda d: d["members"]["c3"].update(rack=1)),
    "member-instance-nul": _json(GROUP, lambda d: d["members"]["c3"].update(instance_id="i\x00")),
    "owned-no-generation": _json(GROUP, lambda d: d["members"]["c1"].pop("generation")),
    "dup-member": GROUP.replace('"c3": {', '"c2": {').encode(),
}
TRACE_MUTATIONS: dict[str, Any] = {  # engineer A's strict trace schema
    **GENERIC, "truncated": json.dumps(TRACE)[:100].encode(), "list": b"[]",
    "format-99": _json(json.dumps(TRACE), lambda d: d.update(format=99)),
    "format-str": _json(json.dumps(TRACE), lambda d: d.update(format="2")),
    "protocol-nope": _json(json.dumps(TRACE), lambda d: d.update(protocol="nope")),
    "protocol-plugin": _json(json.dumps(TRACE), lambda d: d.update(protocol="os:system")),
    "protocol-int": _json(json.dumps(TRACE), lambda d: d.update(protocol=1)),
    "no-config": _json(json.dumps(TRACE), lambda d: d.pop("config")),
    "no-steps": _json(json.dumps(TRACE), lambda d: d.pop("steps")),
    "steps-obj": _json(json.dumps(TRACE), lambda d: d.update(steps={})),
    **{f"config-{k}-{n}": _json(json.dumps(TRACE), lambda d, k=k, v=v: d["config"].update({k: v})) for k, vs in (
        ("brokers", (("str", "2"), ("neg", -1), ("huge", 2**31), ("float", 2.0), ("null", None), ("seven", 7))),
        ("records", (("neg", -1), ("huge", 2**40))), ("acks", (("str", "all"), ("bad", ["x"]))),
        ("duplicates", (("int", 1),))) for n, v in vs},
    "step-unknown": _json(json.dumps(TRACE), lambda d: d["steps"].append({"action": "nope"})),
    "step-broker-99": _json(json.dumps(TRACE), lambda d: d["steps"][0].update(broker=99)),
    "step-broker-str": _json(json.dumps(TRACE), lambda d: d["steps"][0].update(broker="1")),
    "step-no-broker": _json(json.dumps(TRACE), lambda d: d["steps"][0].pop("broker")),
    "step-null": _json(json.dumps(TRACE), lambda d: d["steps"].append(None)),
    "step-disabled": _json(json.dumps(TRACE), lambda d: d["steps"].insert(0, {"action": "fetch", "follower": 1})),
}

# Which command reads each format, and where the file goes on its command line.
READERS: list[tuple[str, dict[str, Any], list[str]]] = [
    ("plan", PLAN_MUTATIONS, ["verify", "bad.json"]),
    ("proposed", PLAN_MUTATIONS, ["verify-reassignment", "current.txt", "bad.json"]),
    ("describe", DESCRIBE_MUTATIONS, ["verify", "bad.txt"]),
    ("current", DESCRIBE_MUTATIONS, ["verify-reassignment", "bad.txt", "plan.json"]),
    ("brokers", BROKERS_MUTATIONS, ["verify", "plan.json", "--brokers-file", "bad.txt"]),
    ("group", GROUP_MUTATIONS, ["assign", "bad.json"]),
    ("trace", TRACE_MUTATIONS, ["replay", "bad.json"]),
]
# Trace and plug-in cases that engineer A's validation makes pass; each name listed here fails today.
def _ascii(value: str) -> str:
    shown = value.encode("unicode_escape").decode("ascii")
    return shown if len(shown) <= 24 else f"{shown[:16]}..{len(value)}"


PATH_OPTIONS = {"--brokers-file"}


def _cases() -> list[Any]:
    cases = []
    for command, (base, options) in OPTIONS.items():
        for option, values in options.items():
            for i, value in enumerate(values):
                name = f"{command}{option}[{i}:{_ascii(value)}]"
                place = value if option in PATH_OPTIONS else option  # a bad path: the file is named
                cases.append(pytest.param([*base, option, value], place, {}, id=name))
    for i, (argv, place) in enumerate(EXTRA):
        cases.append(pytest.param(argv, place, {}, id=f"extra[{i}:{_ascii(' '.join(argv))[:40]}]"))
    for reader, mutations, argv in READERS:
        target = next(a for a in argv if a.startswith("bad."))
        for name, content in mutations.items():
            if content is FIFO:
                continue
            cases.append(pytest.param(argv, target, {target: content}, id=f"{reader}-{name}"))
        cases.append(pytest.param([target if a == target else a for a in argv], target, {}, id=f"{reader}-missing"))
    for place, argv in (("/dev/null", ["verify", "/dev/null"]), ("/dev/zero", ["assign", "/dev/zero"]),
                        ("/dev/urandom", ["replay", "/dev/urandom"])):
        cases.append(pytest.param(argv, place, {}, id=f"device{place}"))
    return cases


def _snapshot(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:  # a directory, or the FIFO, which must not be opened here either
            out[rel] = "<dir>" if path.is_dir() else "<other>"
    return out


def _workdir(root: Path, files: dict[str, Any]) -> None:
    for name, text in VALID.items():
        (root / name).write_text(text)
    (root / "subdir").mkdir()
    for name, content in files.items():
        if content is DIR:
            (root / name).mkdir()
        else:
            (root / name).write_bytes(content)


_CONTROL_RE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _assert_refused(code: int | None, out: str, err: str, place: str) -> None:
    assert "Traceback" not in err, err
    assert code == 2, (code, err[:500])
    assert err.endswith("\n") and err.count("\n") == 1, err[:2000]
    line = err.removesuffix("\n")
    assert line.startswith("kcheck: error: ") and line.removeprefix("kcheck: error: ").strip(), line
    assert not _CONTROL_RE.search(line), f"raw control character in {line!r}"  # escaped as \x1b, not sent raw
    assert len(line) <= 2_100, len(line)  # a 100,000-character name is shortened
    shown = place.encode("unicode_escape").decode("ascii") if _CONTROL_RE.search(place) else place
    assert shown[:100] in line, (place, line[:300])
    assert out == "", out[:500]


@pytest.mark.parametrize("argv, place, files", _cases())
def test_refused_in_one_line(argv: list[str], place: str, files: dict[str, Any], tmp_path: Path, capsys: Any,
                             monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path.parent / "cache"))  # Hypothesis's cache is not in the case
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    _workdir(tmp_path, files)
    before = _snapshot(tmp_path)
    code = main(list(argv))
    out, err = capsys.readouterr()
    _assert_refused(code, out, err, place)
    assert _snapshot(tmp_path) == before  # every input and every other file unchanged, nothing new


def test_corpus_is_large_and_spans_every_command() -> None:
    cases = _cases()
    cases += _plugin_cases()
    assert len(cases) >= 600
    commands = {c.values[0][0] for c in cases if c.values[0]}
    assert commands >= {"check", "place", "verify", "prove", "optimize", "assign", "reassign", "verify-reassignment",
                        "sweep", "explore", "exhaust", "replay", "variants", "invariants"}


# ---- plug-ins (engineer A's loading and result checks): broken module:object placers, assignors, protocols ------

PLUGIN_MODULES: dict[str, str] = {
    "import-raises": "raise RuntimeError('boom at import')\n",
    "import-exits": "import sys\nsys.exit(3)\n",
    "syntax-error": "def place(:\n",
    "imports-missing": "import no_such_dependency_kcheck\n",
    "place-raises": "def place(*a, **k):\n    raise ValueError('boom \\x1b[31m')\n",
    "place-exits": "import sys\ndef place(*a, **k):\n    sys.exit(0)\n",
    "returns-none": "def place(*a, **k):\n    return None\n",
    "returns-list": "def place(*a, **k):\n    return [[0, 1]]\n",
    "str-ids": "def place(b, n, rf, *a, **k):\n    return {p: ['0'] * rf for p in range(n)}\n",
    "unknown-broker": "def place(b, n, rf, *a, **k):\n    return {p: [2**31] * rf for p in range(n)}\n",
    "float-partition": "def place(b, n, rf, *a, **k):\n    return {float(p): [0] * rf for p in range(n)}\n",
    "missing-partition": "def place(b, n, rf, *a, **k):\n    return {0: [0] * rf}\n",
    "not-callable": "place = 42\n",
}
PLUGIN_COMMANDS: dict[str, list[str]] = {
    "place": ["place", "--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2", "--placer"],
    "optimize": ["optimize", "--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2", "--placer"],
    "assign": ["assign", "group.json", "--assignor"],
    "explore": ["explore", "--examples", "1", "--steps", "1", "--protocol"],
    "replay": ["replay", "trace.json", "--protocol"],
}
# Where each module is tried: import failures anywhere, a bad placer result where a placer is called.
PLUGIN_USES = {name: (["place", "optimize", "assign", "explore", "replay"] if name in (
    "import-raises", "import-exits", "syntax-error", "imports-missing", "not-callable") else ["place", "optimize"])
    for name in PLUGIN_MODULES}


def _plugin_cases() -> list[Any]:
    cases = []
    for i, (name, source) in enumerate(PLUGIN_MODULES.items()):
        for command in PLUGIN_USES[name]:
            module = f"kc_bad_plugin_{i}_{command.replace('-', '_')}"
            cases.append(pytest.param([*PLUGIN_COMMANDS[command], f"{module}:place"], module,
                                      {f"{module}.py": source.encode()}, id=f"plugin-{name}-{command}"))
    return cases


@pytest.mark.parametrize("argv, place, files", _plugin_cases())
def test_broken_plugin_refused_in_one_line(argv: list[str], place: str, files: dict[str, Any], tmp_path: Path,
                                           capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    test_refused_in_one_line(argv, place, files, tmp_path, capsys, monkeypatch)


# ---- hangs: a FIFO with no writer, in a subprocess under a timeout ----------------------------------------------

FIFO_CASES = [
    (["verify", "fifo"], "fifo"), (["verify", "plan.json", "--brokers-file", "fifo"], "fifo"),
    (["verify-reassignment", "fifo", "plan.json"], "fifo"), (["assign", "fifo"], "fifo"), (["replay", "fifo"], "fifo"),
]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes")
@pytest.mark.parametrize("argv, place", FIFO_CASES, ids=[" ".join(a) for a, _ in FIFO_CASES])
def test_fifo_without_writer_is_refused_not_waited_on(argv: list[str], place: str, tmp_path: Path) -> None:
    _workdir(tmp_path, {})
    os.mkfifo(tmp_path / "fifo")
    before = _snapshot(tmp_path)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path.parent / "cache")}
    try:
        done = subprocess.run([sys.executable, "-m", "kcheck", *argv], cwd=tmp_path, capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"kcheck {' '.join(argv)} hung on a FIFO with no writer")
    _assert_refused(done.returncode, done.stdout, done.stderr, place)
    assert _snapshot(tmp_path) == before


# ---- what is printed for people: names escaped and shortened; JSON exact; no cache in the working directory ------

def test_tables_escape_control_characters_and_shorten_long_names(tmp_path: Path, capsys: Any,
                                                                  monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    rack = "r" * 300
    (tmp_path / "brokers.txt").write_text("".join(f"{b}:{rack}{b % 3}\n" for b in range(1, 7)))
    (tmp_path / "p\x1b[2J.json").write_text(PLAN)
    code = main(["verify", "p\x1b[2J.json", "--brokers-file", "brokers.txt"])
    out, err = capsys.readouterr()
    assert code in (0, 1) and err == ""
    assert "\x1b" not in out and "p\\x1b[2J.json" in out  # the path, escaped
    assert rack not in out and re.search(r"r…\(3\d\d chars\)", out)  # the rack, cut to 200 characters
    code = main(["verify", "p\x1b[2J.json", "--brokers-file", "brokers.txt", "--json"])
    out, _ = capsys.readouterr()
    assert json.loads(out)["plan"] == "p\x1b[2J.json"  # JSON keeps names exact


def test_explore_keeps_hypothesis_cache_out_of_the_working_directory(tmp_path: Path, capsys: Any,
                                                                      monkeypatch: Any) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("HYPOTHESIS_STORAGE_DIRECTORY", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    import hypothesis.configuration as hc

    homes: list[Any] = []  # where kcheck points Hypothesis (whether it writes anything there depends on its version)
    set_home = hc.set_hypothesis_home_dir
    monkeypatch.setattr(hc, "set_hypothesis_home_dir", lambda d: (homes.append(d), set_home(d))[1])
    assert main(["explore", "--examples", "2", "--steps", "3"]) == 4  # clean: a random search proves nothing
    capsys.readouterr()
    assert list(work.iterdir()) == []  # no .hypothesis/ here
    assert homes and homes[0] == str(tmp_path / "cache" / "kcheck" / "hypothesis")


def test_no_arguments_prints_the_help_not_an_empty_error(capsys: Any) -> None:
    assert main([]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Usage: kcheck") and "Commands:" in out and err == ""
