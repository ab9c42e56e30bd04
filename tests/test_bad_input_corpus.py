"""Bad input to every command: exit 2, one line on stderr that names the place, no traceback, no hang,
nothing printed on stdout, and no file touched.

The cases are generated from tables: per option a list of bad values, per input format a list of mutations
of a valid file from tests/data. They run in-process through `kcheck.cli.main` (fast); the few that could
hang (a FIFO with no writer) run as subprocesses under a timeout, so a hang fails instead of blocking.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
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
DUMP = (DATA / "dump" / "plain.txt").read_text()
LOG_DIRS = (DATA / "dump" / "log-dirs.txt").read_text()
GROUPS = (DATA / "consumer_groups" / "3.7.2@3.9.1" / "offsets.all.txt").read_text()  # kafka-consumer-groups output
TXN_LIST = (DATA / "transactions" / "4.4.0" / "list.txt").read_text()  # kafka-transactions list output
TXN_PRODUCERS = (DATA / "transactions" / "4.4.0" / "describe-producers.orders-1.txt").read_text()
VALID = {"txn.txt": TXN_LIST, "plan.json": PLAN, "current.txt": CURRENT, "brokers.txt": BROKERS, "group.json": GROUP,
         "trace.json": json.dumps(TRACE), "dump.txt": DUMP, "groups.txt": GROUPS, "request.txt": "send\nsend\n",
         "topic.properties": "segment.bytes=1048576\n",
         "kc_corpus_inv.py": "raise RuntimeError('imported: kcheck must refuse before loading this module')\n"}

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
# ---- issue 33: the newer commands and the options every command shares ---------------------------------------------

BIG = "9" * 5000  # past every integer type (Python's own int() refuses more than 4,300 digits)
DIGITS = ["\u0661", "\u0967", "\uff11", "\U0001d7cf"]  # Arabic-Indic, Devanagari, full-width and mathematical one
# An output path that cannot be written: a missing folder, a folder, a special file, pseudo file systems, nothing
OUTPUTS = ["nodir/out.x", "subdir", "/dev/null", "/proc/kcheck-out.x", "/sys/kcheck-out.x", "", *CONTROLS[:1]]
RELEASES_BAD = ["", " ", "x", "9.9.9", "4.4", "../../x", "4.4.0/..", "4.4.0\x00", "\x1b[31m", LONG]
CLASSPATHS = ["", "nope.jar", "subdir/none", "\x1b[31m.jar", "/dev/zero"]
FILES_IN = ["nope.txt", "subdir", "/dev/zero", "/dev/urandom", "/proc/self/mem", LONG, "\x1b[31m"]
GATE: dict[str, list[str]] = {
    "--baseline": [*FILES_IN, "plan.json", "current.txt"],
    "--allowlist": [*FILES_IN, "plan.json"],
    "--decommission": ["", ",", "x", "-1", "1,,2", "2147483648", BIG, "1," + BIG, *DIGITS, "+1", "1_0", *CONTROLS[:2]],
    "--fail-on": ["", "x", "HARD", "hard,soft", *CONTROLS[:2], LONG],
}
PLUGINS_BAD = ["", "nope", "no_such_module_kcheck:p", "kc_corpus_inv", "\x1b[2J", LONG]
REPLICATION = {  # the replication model's options, shared by explore, exhaust, replay and liveness
    "--lossy-crashes": ["-1", "x", "2147483648", BIG], "--fences": ["-1", "x", BIG], "--elections": ["-1", "1.5"],
    "--isr-shrinks": ["-1", "x"], "--failovers": ["-1", BIG], "--cancels": ["-1", "x"],
    "--metadata": ["", "x", "ZooKeeper", "\x1b[31m"], "--list-offsets": ["-1", "x", BIG],
    "--shutdowns": ["-1", "x", BIG], "--unclean-elections": ["-1", "x", "1.5", BIG], "--kafka-version": RELEASES_BAD,
}
SPARK_MASTERS = ["", "x", "spark://127.0.0.1:1", "spark://nohost.invalid:7077",
                 "local[0]", "local[-1]", "local[x]", "local[" + BIG + "]", "nope://host", "\x1b[31m", LONG]
WORKLOADS = [
    "", "x", "=1", "nope=1", "rate=x", "rate=nan", "rate=inf", "rate=-1", "rate=1e309", "rate=" + BIG,
    "duration=36500d", "duration=" + BIG, "duration=1y", "duration=\u0661s", "duration=0", "step=0",
    "rate=1000000,duration=1h", "step=1ms,duration=1d", "keys=" + BIG, "seed=" + BIG,
    "record.bytes=-1", "tombstone.share=2", "consumer.lag.ms=-5", "consumer.lag.records=" + BIG, *CONTROLS[:2], LONG,
]
TOPIC_CONFIGS = [
    "", "x", "nope=1", "segment.bytes=x", "segment.bytes=" + BIG, "segment.bytes=\u0661\u0662", "segment.bytes=13",
    "segment.ms=0", "segment.ms=" + BIG, "retention.ms=-2", "cleanup.policy=[]", "cleanup.policy=nope",
    "min.cleanable.dirty.ratio=nan", "min.cleanable.dirty.ratio=" + BIG, "\x1b[31m=1", LONG,
]
AXES = ["", "x", "consumer.lag.ms=", "nope=1,2", "consumer.lag.ms=5..1/1", "consumer.lag.ms=0..10/0",
        "consumer.lag.ms=0..10/-1", "consumer.lag.ms=0.." + BIG + "/1", "consumer.lag.ms=0..1000000000000/1",
        "consumer.lag.ms=" + ",".join(["1s"] * 3), "delete.retention.ms=x,y", "\x1b[31m=1", LONG]
FIFO_PLACEHOLDER = "fifo"  # FIFO cases run in a subprocess (FIFO_CASES)

_more: dict[str, dict[str, list[str]]] = {
    "check": {"--junit-xml": OUTPUTS, "--html": OUTPUTS, "--placer": PLUGINS_BAD,
              "--assignor": PLUGINS_BAD, "--classpath": CLASSPATHS},
    "place": {"--fenced": IDS[:14], "--classpath": CLASSPATHS[1:], "--kafka-version": RELEASES_BAD},
    "verify": {"--junit-xml": [*OUTPUTS, "plan.json"], "--kafka-version": RELEASES_BAD, **GATE,
               "--min-insync-replicas": ["0", "-1", "2147483648", "x", BIG, *DIGITS[:1]],
               "--controller": ["", "x", "ZK", *CONTROLS[:2]], "--block": ["", "x", "Proposed", "\x1b[31m"]},
    "verify-reassignment": {"--junit-xml": [*OUTPUTS, "plan.json", "current.txt"], "--kafka-version": RELEASES_BAD,
                            **GATE},
    "prove": {"--junit-xml": OUTPUTS, "--classpath": CLASSPATHS[1:], "--kafka-version": RELEASES_BAD,
              "--max-brokers": [BIG, *DIGITS[:1]], "--timeout": [BIG]},
    "optimize": {"--classpath": CLASSPATHS[1:]},
    "assign": {"--junit-xml": [*OUTPUTS, "group.json"], "--classpath": CLASSPATHS[1:], "--kafka-version": RELEASES_BAD},
    "reassign": {"--kafka-version": RELEASES_BAD},
    "sweep": {"--master": SPARK_MASTERS, "--out": ["plan.json", "/dev/null", "/proc/kcheck-sweep", "\x1b[31m"],
              "--junit-xml": OUTPUTS, "--classpath": CLASSPATHS[1:], "--kafka-version": RELEASES_BAD,
              "--tasks": [BIG, *DIGITS[:1]]},
    "explore": {**REPLICATION, "--out": [*OUTPUTS, "plan.json"], "--coverage-dir": ["/dev/null", "/proc/kcheck-cov"],
                "--hypothesis-dir": ["/dev/null", "/proc/kcheck-h", "nodir/deeper"]},
    "exhaust": {**REPLICATION, "--replication-factor": ["-1", "9", "x"], "--crashes": ["-1", "x"],
                "--reassignments": ["-1", "x"], "--out": [*OUTPUTS, "plan.json"],
                "--coverage-dir": ["/dev/null", "/proc/kcheck-cov"],
                "--max-seconds": ["-1", "nan", "inf", "1e10", "x", "", BIG],
                "--max-memory": ["", "x", "-1", "nan", "1e400", BIG, "5 parsecs", "\u0661G", "1_0G", "\x1b[31m"],
                "--workers": ["0", "-1", "x", "100000", BIG], "--master": SPARK_MASTERS,
                "--spill-dir": ["nope/none", "plan.json", "/dev/null", "/proc/kcheck-spill", "\x1b[31m"],
                "--visited-memory": ["", "x", "0", "-1", "nan", "12", "1e400", BIG, "\u0661G", "1_0G", "\x1b[31m"],
                "--order": ["", "x", "BFS", "\x1b[31m"],
                "--checkpoint": ["nope/none", "plan.json", "/dev/null", "/proc/kcheck-ck", "\x1b[31m"],
                "--checkpoint-every": ["0", "-1", "nan", "inf", "x", "", BIG]},
    "replay": {**REPLICATION, "--replication-factor": ["-1", "x"], "--crashes": ["-1"], "--reassignments": ["-1"],
               "--reads": ["-1"]},
}
for _command, _options in _more.items():
    OPTIONS[_command][1].update({k: v + [x for x in OPTIONS[_command][1].get(k, []) if x not in v]
                                 for k, v in _options.items()})
OPTIONS.update({
    "variants": (["variants"], {}),
    "invariants": (["invariants"], {}),
    "partition": (["partition", "--partitions", "6", "k"], {
        "--partitions": ["0", "-1", "x", "2147483648", "nan", "", "1.5"],
        "--client": ["", "nope", "JAVA", "\x1b[31m", LONG],
        "--kafka-version": ["", "9.9.9", "../../x", "\x1b[31m"],
        "--keys-file": ["", "nope.txt", "subdir", "/dev/zero"],
    }),
    "rules": (["rules"], {"--kafka-version": RELEASES_BAD}),
    "liveness": (["liveness", "--max-states", "5"], {
        **REPLICATION, "--protocol": ["", "nope", "no_such_module_kcheck:p", *CONTROLS, LONG],
        "--brokers": ["0", "7", "-1", "x", BIG], "--replication-factor": ["-1", "9", "x"],
        "--min-isr": ["-1", "9", "x"], "--initial-isr": ["-1", "9", "x"], "--acks": ["x", "", "all,x"],
        "--records": ["-1", "x", BIG], "--max-leader-epoch": ["0", "-1", "x"], "--crashes": ["-1", "x"],
        "--reads": ["-1"], "--reassignments": ["-1", "x"],
        "--reassign-target": ["", ",", "x", "1,1", "0", "9", BIG, *DIGITS[:2], "1,2,3,4,5,6,7,8", *CONTROLS[:1]],
        "--property": ["", "x", "liveness.nope", "\x1b[31m"], "--engine": ["", "x", "GRAPH", "\x1b[31m"],
        "--max-states": ["0", "-1", "x", "4294967295", BIG], "--max-seconds": ["-1", "nan", "inf", "1e10", "x", BIG],
        "--programs": ["0", "-1", "x", BIG], "--steps": ["-1", "x", BIG], "--heal-steps": ["0", "-1", "x"],
        "--seed": ["x", "1.5", "", BIG], "--out": [*OUTPUTS, "trace.json"],
    }),
    "plan": (["plan", "current.txt"], {
        "--brokers-file": ["nope.txt", "subdir", "/dev/zero", LONG, "\x1b[31m.txt"],
        "--decommission": GATE["--decommission"], "--add-brokers": GATE["--decommission"],
        "--threshold": [*FLOAT, "0.5", "-1", "0", BIG], "--max-replicas-per-broker": [*INT, "-1", "0"],
        "--min-insync-replicas": ["0", "-1", "2147483648", "x", BIG], "--timeout": [*FLOAT, "0", "-1", "86401", BIG],
        "--out": [*OUTPUTS, "current.txt"],
    }),
    "log": (["log", "--summary", "--workload", "duration=2s"], {
        "--config": TOPIC_CONFIGS, "--workload": WORKLOADS,
        "--config-file": FILES_IN, "--workload-file": FILES_IN,
    }),
    "sweep-log": (["sweep-log", "--python"], {
        "--config": TOPIC_CONFIGS[:10], "--workload": WORKLOADS, "--config-file": FILES_IN,
        "--workload-file": FILES_IN, "--axis": AXES, "--threshold": ["", "x", "nope.axis", "\x1b[31m", LONG],
        "--master": SPARK_MASTERS,
    }),
    "verify-group": (["verify-group", "groups.txt"], {
        "--assignor": ["", "nope", "range,uniform", "no_such_module_kcheck:a", *CONTROLS, LONG],
        "--junit-xml": [*OUTPUTS, "groups.txt"]}),
    # txn.txt is a list (no describe-producers table), so even a good partition is refused
    "verify-transactions": (["verify-transactions", "txn.txt"], {
        "--partition": ["", "x", "orders", "orders-x", "-0", "orders-0-", *CONTROLS, LONG, "orders-0"]}),
    "verify-log": (["verify-log", "dump.txt"], {"--junit-xml": [*OUTPUTS, "dump.txt"],
                                               # dump.txt names its folders, so even a good name is refused
                                               "--partition": ["", ".", "..", "a/b", "p\x1b[31m", LONG, "plain-0"]}),
})

REQUEST = {  # kcheck request exhaust, explore and liveness: the request model's bounds (Config's ranges)
    "--protocol": ["", "nope", "no_such_module_kcheck:p", "kcheck.model.request:Config", *CONTROLS, LONG],
    "--brokers": ["0", "4", "-1", "x", BIG], "--min-isr": ["0", "4", "x"], "--acks": ["", "0", "-1", "x", "\x1b[31m"],
    "--max-in-flight": ["0", "6", "-1", "x"], "--retries": ["-1", "9", "x"], "--batches": ["0", "9", "x", BIG],
    "--seq-max": ["4", "0", "2147483648", "x"], "--drops": ["-1", "9", "x"], "--elections": ["-1", "9", "1.5"],
    "--crashes": ["-1", "9"], "--isr-shrinks": ["-1", "9"], "--append-failures": ["-1", "9", "x"],
    "--delivery-timeouts": ["-1", "9"], "--log-start-moves": ["-1", "9"], "--expiries": ["-1", "9"],
    "--max-clock": ["-1", "9", "x"], "--partitions": ["0", "3", "-1", "x", BIG],
    "--inflight-timeouts": ["-1", "9", "x"],
}
OPTIONS.update({
    "request exhaust": (["request", "exhaust", "--batches", "1", "--elections", "0", "--max-states", "5"], {
        **REQUEST, "--max-states": ["0", "-1", "x", "4294967295", BIG],
        "--max-seconds": ["-1", "nan", "inf", "1e10", "x", BIG]}),
    "request explore": (["request", "explore", "--programs", "1", "--steps", "2"], {
        **REQUEST, "--programs": ["0", "-1", "x", BIG], "--steps": ["0", "-1", "x", BIG],
        "--seed": ["-1", "x", "1.5", "", BIG]}),
    "request liveness": (["request", "liveness", "--batches", "1", "--elections", "0", "--max-states", "5"], {
        **REQUEST, "--max-states": ["0", "-1", "x", "4294967295", BIG]}),
    "request replay": (["request", "replay", "request.txt"], {**REQUEST, "--batches": ["0", "9", "x", BIG]}),
    "request rules": (["request", "rules"], {"--protocol": REQUEST["--protocol"]}),
    "request variants": (["request", "variants"], {}),
})

TRANSACTIONS = {  # kcheck transactions exhaust and liveness: the transactions model's bounds (Config's ranges)
    "--rules": ["", "nope", "kcheck.model.transactions:Config", *CONTROLS, LONG],
    "--instances": ["0", "3", "-1", "x", BIG], "--txns": ["0", "4", "-1", "x"], "--partitions": ["0", "3", "x"],
    "--duplicates": ["-1", "4", "x"], "--client-timeouts": ["-1", "4", "1.5"], "--txn-timeouts": ["-1", "3", "x"],
    "--failovers": ["-1", "3", "x"], "--append-failures": ["-1", "3", "x"],
}
OPTIONS.update({
    "transactions exhaust": (["transactions", "exhaust", "--partitions", "1", "--txns", "1", "--max-states", "5"], {
        **TRANSACTIONS, "--max-states": ["0", "-1", "x", "4294967295", BIG],
        "--max-seconds": ["-1", "nan", "inf", "1e10", "x", BIG]}),
    "transactions liveness": (["transactions", "liveness", "--partitions", "1", "--txns", "1", "--max-states", "5"], {
        **TRANSACTIONS, "--max-states": ["0", "-1", "x", "4294967295", BIG]}),
    "transactions rules": (["transactions", "rules"], {"--rules": TRANSACTIONS["--rules"]}),
    "transactions variants": (["transactions", "variants"], {}),
})

# Options that take no value, extra arguments and unknown options, for every command (and none).
EXTRA: list[tuple[list[str], str]] = [
    *[([*base, "--nope"], "--nope") for base, _ in OPTIONS.values()],
    *[([*base, "extra-argument"], "extra-argument") for base, _ in OPTIONS.values()
      if base[0] not in ("sweep", "verify-reassignment", "verify", "assign", "replay", "partition")],
    (["partition", "--partitions", "6"], "KEY"), (["partition", "--partitions", "6", "--hex", "zz"], "KEY"),
    (["partition", "--partitions", "6", "--hex", "0"], "KEY"), (["partition", "k"], "--partitions"),
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

VARIANT = ["exhaust", "--max-states", "1", "--protocol", "truncate-to-hw"]
EXTRA += [
    (["check", "--junit-xml", "r.xml", "--html", "r.xml"], "--html"),  # one file for two reports
    (["check", "--invariants", "kc_corpus_inv", "--html", "kc_corpus_inv.py"], "--html"),  # the user's own module
    (["check", "--invariants", "kc_corpus_inv", "--junit-xml", "./kc_corpus_inv.py"], "--junit-xml"),
    *[([*VARIANT, "--coverage-dir", d], "--coverage-dir") for d in
      ("/dev/null", "/proc/kcheck-cov", "plan.json", "nodir/deeper", "/sys/kcheck-cov")],
    *[([*VARIANT, "--out", d], "--out") for d in ("nodir/t.json", "/proc/t.json", "/dev/null")],
    # a checkpoint of a search in workers or on Spark: its folder checked as with one process (before Spark starts),
    # --resume needs it
    *[([*VARIANT, *where, "--checkpoint", d], "--checkpoint") for d in ("/dev/null", "plan.json", "/proc/kcheck-ck")
      for where in (["--workers", "2"], ["--master", "local[1]"])],
    ([*VARIANT, "--workers", "2", "--resume"], "--resume"),
    ([*VARIANT, "--master", "local[1]", "--resume"], "--resume"),
    ([*VARIANT, "--master", "local[1]", "--checkpoint", "ck", "--coverage-dir", "cov"], "--checkpoint"),
    (["sweep-log", "--python", "--axis", "consumer.lag.ms=0..999999/1", "--axis", "delete.retention.ms=0..999999/1"],
     "--axis"),  # 10^12 cells
    (["sweep-log", "--python", "--axis", "consumer.lag.ms=0..9999/1", "--axis", "delete.retention.ms=0..9999/1",
      "--axis", "segment.ms=1..10000/1"], "--axis"),
    *[(["sweep-log", "--master", m], "--master") for m in SPARK_MASTERS],
    (["sweep-log", "--python", "--master", "local[1]"], "--master"),  # no Spark to give it to
    (["plan", "current.txt", "--decommission", "1", "--add-brokers", "1"], "--add-brokers"),
    (["plan", "current.txt", "--add-brokers", "1"], "--add-brokers"),  # already a broker
    (["plan"], "current"), (["plan", "-", "-"], "-"), (["verify-log"], "DUMP"), (["verify-log", "-", "-"], "DUMP"),
    (["verify-transactions"], "FILE"), (["verify-transactions", "-", "-"], "FILE"),
    (["log", "--workload", "rate=1000000", "--workload", "duration=1h"], "--workload"),
    (["log", "--workload-file", "topic.properties", "--config-file", "topic.properties", "--workload", "keys=0"],
     "--workload"),
    (["liveness", "--engine", "random", "--max-states", "5", "--programs", "1", "--reassign-target", "1,2"],
     "--reassign-target"),
    (["rules", "extra-argument"], "extra-argument"), (["invariants", "--json"], "--json"),
    (["verify", "plan.json", "--decommission", "9"], "--decommission"),
    (["verify-reassignment", "current.txt", "plan.json", "--decommission", "99"], "--decommission"),
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

REQUEST_TRACE = {"rules": "current", "config": {"batches": 1, "elections": 0}, "steps": ["send", "drain"]}
REQUEST_TRACE_MUTATIONS: dict[str, Any] = {  # kcheck request replay: its --json output, or a script of steps
    **GENERIC, "truncated": json.dumps(REQUEST_TRACE)[:30].encode(), "list": b"[]", "null": b"null",
    "no-steps": _json(json.dumps(REQUEST_TRACE), lambda d: d.pop("steps")),
    "steps-obj": _json(json.dumps(REQUEST_TRACE), lambda d: d.update(steps={})),
    "step-int": _json(json.dumps(REQUEST_TRACE), lambda d: d["steps"].append(1)),
    "step-unknown": _json(json.dumps(REQUEST_TRACE), lambda d: d["steps"].append("nope")),
    "step-impossible": _json(json.dumps(REQUEST_TRACE), lambda d: d["steps"].append("drain")),  # one batch only
    "step-esc": _json(json.dumps(REQUEST_TRACE), lambda d: d["steps"].append("send\x1b[31m")),
    "rules-nope": _json(json.dumps(REQUEST_TRACE), lambda d: d.update(rules="nope")),
    "rules-plugin": _json(json.dumps(REQUEST_TRACE), lambda d: d.update(rules="os:system")),
    "rules-int": _json(json.dumps(REQUEST_TRACE), lambda d: d.update(rules=1)),
    "config-list": _json(json.dumps(REQUEST_TRACE), lambda d: d.update(config=[])),
    "config-unknown": _json(json.dumps(REQUEST_TRACE), lambda d: d["config"].update(nope=1)),
    **{f"config-{k}-{n}": _json(json.dumps(REQUEST_TRACE), lambda d, k=k, v=v: d["config"].update({k: v}))
       for k, vs in (("batches", (("str", "1"), ("zero", 0), ("huge", 2**40), ("float", 1.0), ("bool", True))),
                     ("partitions", (("three", 3),)), ("acks", (("zero", "0"), ("int", 1))),
                     ("idempotent", (("int", 1),))) for n, v in vs},
    "no-trace": b'{"violations": [], "findings": []}',
    "script-unknown": b"send\nfly away\n",
    "script-impossible": b"drain\n",
}


def _dump(old: str, new: str) -> bytes:
    assert old in DUMP, old
    return DUMP.replace(old, new, 1).encode()


DUMP_MUTATIONS: dict[str, Any] = {  # kafka-dump-log.sh output: numbers past every type in its fields
    **GENERIC,
    **{f"{name}-{n}": _dump(old, old.split(": ")[0] + ": " + v) for name, old in (
        ("base-offset", "baseOffset: 0"), ("offset", "| offset: 0"), ("position", "position: 103"),
        ("size", "size: 103"), ("count", "count: 2"), ("start", "Log starting offset: 0"),
        ("timestamp", "timestamp: 1795538137019"), ("create-time", "CreateTime: 1795538136905"),
        ("key-size", "keySize: 2"), ("epoch", "partitionLeaderEpoch: 0"))
       for n, v in (("big", BIG), ("long-max-plus-1", str(2**63)), ("digit", "\u0661"), ("neg-big", "-" + BIG))},
    "segment-name-big": _dump("00000000000000000005.log", BIG + ".log"),
}
_DIRS = json.loads(LOG_DIRS[LOG_DIRS.index("{"):])


def _dirs(change) -> bytes:  # type: ignore[no-untyped-def]
    doc = json.loads(json.dumps(_DIRS))
    change(doc)
    return (LOG_DIRS[:LOG_DIRS.index("{")] + json.dumps(doc)).encode()


LOG_DIRS_MUTATIONS: dict[str, Any] = {  # kafka-log-dirs.sh --describe output: numbers past every type
    "size-big": _dirs(lambda d: d["brokers"][0]["logDirs"][0]["partitions"][1].update(size=int(BIG[:4000]))),
    "size-str": _dirs(lambda d: d["brokers"][0]["logDirs"][0]["partitions"][1].update(size="1487")),
    "size-float": _dirs(lambda d: d["brokers"][0]["logDirs"][0]["partitions"][1].update(size=1e400)),
    "broker-big": _dirs(lambda d: d["brokers"][0].update(broker=int(BIG[:4000]))),
    "offset-lag-big": _dirs(lambda d: d["brokers"][0]["logDirs"][0]["partitions"][1].update(offsetLag=2**64)),
    "bigint-text": (LOG_DIRS[:LOG_DIRS.index("{")] + '{"brokers":[{"broker":' + BIG + "}]}").encode(),
    "deep": (LOG_DIRS[:LOG_DIRS.index("{")] + "[" * 100_000).encode(),
}
BASELINE = {"command": "verify", "violations": [{"invariant": "placement.rack-diversity", "where": "partition a-0"}]}
BASELINE_MUTATIONS: dict[str, Any] = {
    **GENERIC, "list": b"[]", "no-violations": b'{"command": "verify"}', "violations-obj": b'{"violations": {}}',
    "other-command": _json(json.dumps(BASELINE), lambda d: d.update(command="assign")),
    "entry-str": _json(json.dumps(BASELINE), lambda d: d["violations"].append("x")),
    "entry-no-where": _json(json.dumps(BASELINE), lambda d: d["violations"].append({"invariant": "x"})),
    "bigint-detail": b'{"violations": [{"invariant": "a", "where": "b", "detail": {"n": ' + BIG.encode() + b"}}]}",
}
ALLOWLIST_MUTATIONS: dict[str, Any] = {
    **GENERIC, "one-field": b"placement.rack-diversity\n", "no-reason": b"placement.rack-diversity | * |\n",
    "unknown-invariant": b"placement.nope | * | why\n", "empty-where": b"placement.rack-diversity |  | why\n",
    "escape": b"placement.rack-diversity | \x1b[31m | why\n".replace(b"\\x1b", b"\x1b"),
}
PROPERTIES_MUTATIONS: dict[str, Any] = {
    **GENERIC, "no-equals": b"segment.bytes\n", "unknown": b"nope=1\n", "big": b"segment.bytes=" + BIG.encode() + b"\n",
    "digit": "segment.bytes=\u0661\u0662\u0663\n".encode(), "nan": b"min.cleanable.dirty.ratio=nan\n",
    "duration-years": b"duration=36500d\n", "rate-hour": b"rate=1000000\nduration=1h\n",
    "step-day": b"step=1ms\nduration=1d\n", "keys-big": b"keys=" + BIG.encode() + b"\n",
    "empty-key": b"=1\n", "control": b"segment.bytes=1\x1b[31m\n",
}

# Which command reads each format, and where the file goes on its command line.
GROUPS_MUTATIONS: dict[str, Any] = {  # kafka-consumer-groups --describe output
    **GENERIC,
    "truncated-row": GROUPS[: GROUPS.rindex("\n", 0, len(GROUPS) - 1) + 12].encode(),
    "header-only": GROUPS.split("\n\n")[1].splitlines()[0].encode() + b"\nx\n",
    "unknown-column": GROUPS.replace("CLIENT-ID", "CLIENT-ID       NEW", 1).encode(),
    **{f"offset-{n}": GROUPS.replace("orders          0          10 ", f"orders          0          {v} ", 1).encode()
       for n, v in (("big", "9" * 5000), ("neg", "-2"), ("digit", "\u0661"), ("x", "x"))},
    "partition-huge": GROUPS.replace("orders          0 ", "orders          2147483648 ", 1).encode(),
    "topic-esc": GROUPS.replace("archive         orders", "archive         ord\x1b[31m", 1).encode(),
    "reset-offsets": b"GROUP TOPIC PARTITION NEW-OFFSET\ng t 0 5\n",
    "describe-instead": CURRENT.encode(),
}
_TXN_ROW = TXN_LIST.splitlines()[1]
TXN_MUTATIONS: dict[str, Any] = {
    **GENERIC, "truncated-row": TXN_LIST[: len(TXN_LIST) - 20].encode(),
    "state": TXN_LIST.replace("Ongoing ", "Running ", 1).encode(),
    "state-esc": TXN_LIST.replace("Ongoing ", "Ong\x1b[31m ", 1).encode(),
    "header": TXN_LIST.replace("TransactionState", "TxnState", 1).encode(),
    "extra-cell": (TXN_LIST + _TXN_ROW + "x\t\n").encode(),
    **{f"producer-id-{n}": TXN_LIST.replace(_TXN_ROW, _TXN_ROW.replace(_TXN_ROW.split("\t")[2], v.ljust(10), 1), 1)
       .encode() for n, v in (("x", "x"), ("huge", "9" * 30), ("digit", "\u0661"), ("float", "1.5"))},
    "only-the-tools-error": b"Failed to list transactions: Unexpected key set: [BrokerKey(brokerId=OptionalInt[3])].\n",
    "producers-without-partition": TXN_PRODUCERS.encode(),
    "producers-epoch": TXN_PRODUCERS.replace("\t0            \t", "\t70000        \t", 1).encode(),
    "groups-instead": GROUPS.encode(),
    "describe-instead": CURRENT.encode(),
}
READERS: list[tuple[str, dict[str, Any], list[str]]] = [
    ("transactions", TXN_MUTATIONS, ["verify-transactions", "bad.txt"]),
    ("groups", GROUPS_MUTATIONS, ["verify-group", "bad.txt"]),
    ("plan", PLAN_MUTATIONS, ["verify", "bad.json"]),
    ("proposed", PLAN_MUTATIONS, ["verify-reassignment", "current.txt", "bad.json"]),
    ("describe", DESCRIBE_MUTATIONS, ["verify", "bad.txt"]),
    ("current", DESCRIBE_MUTATIONS, ["verify-reassignment", "bad.txt", "plan.json"]),
    ("brokers", BROKERS_MUTATIONS, ["verify", "plan.json", "--brokers-file", "bad.txt"]),
    ("group", GROUP_MUTATIONS, ["assign", "bad.json"]),
    ("trace", TRACE_MUTATIONS, ["replay", "bad.json"]),
    ("request-trace", REQUEST_TRACE_MUTATIONS, ["request", "replay", "bad.json"]),
    ("dump", DUMP_MUTATIONS, ["verify-log", "bad.txt"]),
    ("log-dirs", LOG_DIRS_MUTATIONS, ["verify-log", "dump.txt", "bad.txt"]),
    ("baseline", BASELINE_MUTATIONS, ["verify", "plan.json", "--baseline", "bad.json"]),
    ("allowlist", ALLOWLIST_MUTATIONS, ["verify-reassignment", "current.txt", "plan.json", "--allowlist", "bad.txt"]),
    ("plan-current", DESCRIBE_MUTATIONS, ["plan", "bad.txt"]),
    ("plan-brokers", BROKERS_MUTATIONS, ["plan", "current.txt", "--brokers-file", "bad.txt"]),
    ("config-file", PROPERTIES_MUTATIONS, ["log", "--config-file", "bad.txt"]),
    ("workload-file", PROPERTIES_MUTATIONS, ["log", "--workload-file", "bad.txt"]),
    ("sweep-config-file", PROPERTIES_MUTATIONS, ["sweep-log", "--python", "--config-file", "bad.txt"]),
]
# Trace and plug-in cases that engineer A's validation makes pass; each name listed here fails today.
def _ascii(value: str) -> str:
    shown = value.encode("unicode_escape").decode("ascii")
    return shown if len(shown) <= 24 else f"{shown[:16]}..{len(value)}"


PATH_OPTIONS = {"--brokers-file", "--config-file", "--workload-file", "--baseline", "--allowlist", "--schedule",
                "--keys-file"}

# The live commands' cases (tests/bad_input_live.py, the same shapes), merged into the same tests: one corpus.
import bad_input_live  # noqa: E402

LIVE_OPTIONS, LIVE_EXTRA = bad_input_live.LIVE_OPTIONS, bad_input_live.LIVE_EXTRA
# (command, option) pairs the live module has no case for yet, each with why (none once every one has a case)
LIVE_PENDING: dict[tuple[str, str], str] = getattr(bad_input_live, "LIVE_PENDING", {})

for _command, (_base, _options) in LIVE_OPTIONS.items():
    # on its own base (a --bootstrap-server case takes no PLAN file), under its own key
    if _command not in OPTIONS:
        EXTRA.append(([*_base, "--nope"], "--nope"))
    OPTIONS[_command if _command not in OPTIONS else f"{_command} (live)"] = (_base, dict(_options))
EXTRA += LIVE_EXTRA
# `kcheck chaos --producers` (kcheck.cluster.producers): unknown, repeated or empty kinds, refused before any cluster
OPTIONS["chaos"][1]["--producers"] = ["", ",", "nope", "Plain", "plain,plain", "plain,,nope", "java", "plain;acks1",
                                      *CONTROLS, LONG]

# Options that take no value: the only bad input is a value (`--json=1`), tried for each. No flag is missing here:
# test_every_command_and_option_has_a_case fails on a flag not listed.
FLAGS: dict[str, list[str]] = {
    "check": ["--json", "--deep"], "place": ["--report"], "verify": ["--json"],
    "prove": ["--labelled", "--exhaustive", "--json"], "assign": ["--json"],
    "verify-group": ["--json"], "verify-transactions": ["--json"], "reassign": ["--all-steps", "--json"],
    "verify-reassignment": ["--json"], "sweep": ["--resume"],
    "explore": ["--duplicates", "--atomic-fetch", "--json", "--progress", "--quiet"],
    "exhaust": ["--duplicates", "--atomic-fetch", "--abstract", "--symmetry", "--reduce", "--json", "--progress",
                "--quiet", "--resume"],
    "replay": ["--duplicates", "--atomic-fetch", "--json", "--on-cluster"], "variants": ["--json"],
    "liveness": ["--duplicates", "--atomic-fetch", "--permanent-crashes", "--drops", "--json"], "rules": ["--json"],
    "plan": ["--balance", "--json"], "chaos": ["--unclean-leader-election", "--network"], "verify-log": ["--json"],
    "log": ["--steps", "--json"], "sweep-log": ["--python", "--json"], "cluster status": ["--json"],
    "cluster up": ["--network"],
    "optimize": [], "partition": ["--hex", "--json"],
    "request exhaust": ["--idempotent", "--findings", "--json"], "request explore": ["--idempotent", "--json"],
    "request liveness": ["--idempotent", "--json"], "request replay": ["--idempotent", "--findings", "--json"],
    "request rules": ["--json"], "request variants": ["--json"],
    "transactions exhaust": ["--json"], "transactions liveness": ["--json"], "transactions rules": ["--json"],
    "transactions variants": ["--json"],
}
ISOLATING = ("check", "place", "optimize", "prove", "assign", "sweep", "explore", "exhaust", "replay", "liveness")
for _command in ISOLATING:  # kcheck/isolation.py's options (the flag's other half: --no-isolate-plugins)
    FLAGS[_command].append("--isolate-plugins")
    OPTIONS[_command][1]["--plugin-timeout"] = [*FLOAT, "0", "-1", "86401", BIG]
    EXTRA.append(([*OPTIONS[_command][0], "--no-isolate-plugins=1"], "--no-isolate-plugins"))
for _command, _flags in FLAGS.items():
    if _command in OPTIONS:
        EXTRA += [([*OPTIONS[_command][0], f"{flag}=1"], flag) for flag in _flags]


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
    monkeypatch.syspath_prepend(str(tmp_path))  # as `kcheck` run there: modules beside the command import
    _workdir(tmp_path, files)
    before = _snapshot(tmp_path)
    _never_replace_special_files(monkeypatch)
    code, out, err = _run_forked(argv, capsys)
    _assert_refused(code, out, err, place)
    assert _snapshot(tmp_path) == before  # every input and every other file unchanged, nothing new


def _never_replace_special_files(monkeypatch: Any) -> None:
    """The corpus runs as the user it is given, root included: a kcheck that regressed to renaming a report over
    /dev/null must fail the case, not replace the machine's /dev/null."""
    def guarded(real: Any) -> Any:
        def rename(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            if os.path.lexists(dst) and not os.path.isfile(dst) and not os.path.isdir(dst):
                raise AssertionError(f"kcheck renamed a file over the special file {dst}")
            if str(os.path.realpath(dst)).startswith(("/dev/", "/proc/", "/sys/")):
                raise AssertionError(f"kcheck renamed a file into {dst}")
            real(src, dst, *args, **kwargs)
        return rename
    monkeypatch.setattr(os, "replace", guarded(os.replace))
    monkeypatch.setattr(os, "rename", guarded(os.rename))


def _warm() -> None:
    """Build the Click command and import what commands import lazily, once in this process: every forked case
    then has them (each case would otherwise pay a second or more for pyspark, Z3, Hypothesis and Typer)."""
    import importlib

    import typer

    from kcheck import cli
    cli._command = typer.main.get_command(cli.app)
    for name in ("kcheck.junit", "kcheck.html_report", "kcheck.spark_check.log_sweep", "kcheck.spark_check.job",
                 "kcheck.invariants.prover", "kcheck.invariants.smt", "kcheck.reference.assignors.registry",
                 "kcheck.inputs.group_file", "kcheck.gate.reassign", "kcheck.isolation", "hypothesis", "z3",
                 "pyspark.sql"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    with contextlib.redirect_stderr(io.StringIO()):  # the first call's one-off costs (Click, Rich), here
        cli.main(["log", "--config", "x"])


_warm()
HANG_SECONDS = 20  # a refusal comes at once; a case still running after this is a hang (a command doing the work)


def _run_forked(argv: list[str], capsys: Any) -> tuple[int | None, str, str]:
    """kcheck.cli.main(argv) in a forked copy of this process (cheap: nothing is imported again), so that a case
    that hangs, or does the work it should refuse, is killed after HANG_SECONDS with whatever it started, and no
    case leaves state (a plug-in's registered invariants, sys.modules) to the next."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, send (code, out, err) back, leave without pytest's exit handlers
        status = 0
        try:
            os.close(read_end)
            os.setpgid(0, 0)
            code = main(list(argv))
            out, err = capsys.readouterr()
            with os.fdopen(write_end, "w") as f:
                json.dump([code, out, err], f)
        except BaseException:  # noqa: BLE001 - anything main() let through is reported by the parent as a failure
            import traceback

            status = 4
            out, err = capsys.readouterr()
            with contextlib.suppress(Exception), os.fdopen(write_end, "w") as f:
                json.dump([None, out, err + "Traceback (raised out of main()):\n" + traceback.format_exc()], f)
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as f:
        chunks: list[str] = []
        reader = threading.Thread(target=lambda: chunks.append(f.read()), daemon=True)
        reader.start()
        reader.join(HANG_SECONDS)
        if reader.is_alive():
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"HANG: kcheck {' '.join(argv)[:200]!r} still ran after {HANG_SECONDS} s")
    _, status = os.waitpid(pid, 0)
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)  # whatever the case started and left running
    if not chunks or not chunks[0]:
        pytest.fail(f"kcheck {' '.join(argv)[:200]!r} raised out of main() or ended the process "
                    f"(status {os.waitstatus_to_exitcode(status)})")
    code, out, err = json.loads(chunks[0])
    return code, out, err


def _command_of(argv: list[str]) -> str:
    return " ".join(argv[:2]) if argv[:1] in (["cluster"], ["request"], ["transactions"]) else (argv[0] if argv else "")


def _click_commands() -> dict[str, Any]:
    """Every command and subcommand of the Typer app, by its path ("cluster up")."""
    import typer

    from kcheck.cli import app

    found: dict[str, Any] = {}

    def walk(command: Any, path: list[str]) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, [*path, name])
        else:
            found[" ".join(path)] = command
    walk(typer.main.get_command(app), [])
    return found


def test_every_command_and_option_has_a_case() -> None:
    """A new command or option without a bad-input case fails here: add its bad values to OPTIONS (or the live
    helper's LIVE_OPTIONS), a case to EXTRA or READERS, or, for a flag, its name to FLAGS."""
    cases = [c.values[0] for c in _cases() + _plugin_cases()] + [a for a, _ in FIFO_CASES]
    tried: dict[str, set[str]] = {}
    for argv in cases:
        tried.setdefault(_command_of(argv), set()).update(a.split("=")[0] for a in argv if a.startswith("-"))
    for base, options in OPTIONS.values():
        tried.setdefault(_command_of(base), set()).update(options)
    read = {_command_of(argv) for _, _, argv in READERS} | {_command_of(a) for a, _ in FIFO_CASES}
    missing = []
    for path, command in _click_commands().items():
        for param in command.params:
            if param.param_type_name == "argument":
                if path not in read and not any(_command_of(a) == path and len(a) > 1 for a, _ in EXTRA):
                    missing.append(f"{path} {param.name} (an argument: no READERS or EXTRA case)")
                continue
            names = set(param.opts) | set(param.secondary_opts)
            if getattr(param, "is_flag", False):
                if param.opts[0] not in FLAGS.get(path, []):
                    missing.append(f"{path} {param.opts[0]} (a flag: list it in FLAGS)")
            elif not names & tried.get(path, set()) and (path, param.opts[0]) not in LIVE_PENDING:
                missing.append(f"{path} {param.opts[0]}")
    assert not missing, "no bad-input case for: " + "; ".join(missing)


def test_corpus_is_large_and_spans_every_command() -> None:
    cases = _cases()
    cases += _plugin_cases()
    assert len(cases) >= 600
    commands = {c.values[0][0] for c in cases if c.values[0]}
    assert commands >= {"check", "place", "verify", "prove", "optimize", "assign", "reassign", "verify-reassignment",
                        "sweep", "explore", "exhaust", "replay", "variants", "invariants", "liveness", "rules", "plan",
                        "log", "sweep-log", "verify-log", "verify-transactions", "chaos", "cluster", "partition"}


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
    (["log", "--config-file", "fifo"], "fifo"), (["log", "--workload-file", "fifo"], "fifo"),
    (["sweep-log", "--python", "--config-file", "fifo"], "fifo"), (["verify-log", "fifo"], "fifo"),
    (["plan", "fifo"], "fifo"), (["verify", "plan.json", "--baseline", "fifo"], "fifo"),
    (["verify", "plan.json", "--allowlist", "fifo"], "fifo"), (["chaos", "--schedule", "fifo"], "fifo"),
    # a FIFO as an output: refused (a special file), never opened for writing (it would wait) or replaced
    (["verify", "plan.json", "--junit-xml", "fifo"], "--junit-xml"),
    (["plan", "current.txt", "--out", "fifo"], "--out"),
    (["explore", "--examples", "1", "--steps", "1", "--out", "fifo"], "--out"),
    (["liveness", "--max-states", "5", "--out", "fifo"], "--out"), (["check", "--html", "fifo"], "--html"),
    (["verify-log", "dump.txt", "--junit-xml", "fifo"], "--junit-xml"),
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
