"""`kcheck verify`: a reassignment plan or a `kafka-topics --describe` (a file, or a live cluster) judged by the
placement and partition-health invariants and the CI gate (kcheck.gate)."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Annotated

import typer
from rich.markup import escape as _escape
from rich.table import Table

from kcheck import report
from kcheck.gate.policy import gate_settings
from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.invariants import BalanceSettings, PlacementSubject
from kcheck.model import INT32_MAX, Cluster, ReplicaAssignment
from kcheck.options import (
    AllowlistOpt,
    BaselineOpt,
    BootstrapOpt,
    CommandConfigOpt,
    DecommissionOpt,
    FailOnOpt,
    JunitXml,
    balance_options,
    bounded_int,
    read_live,
    requested_release,
)


def _validate_against_cluster(assignment: ReplicaAssignment, cluster: Cluster, plan: str, brokers: str) -> None:
    formats.check_plan_brokers(assignment, cluster, plan, brokers, " for replica rack aware assignment")
    for topic, rf in assignment.replication_factors.items():
        if rf > len(cluster):
            raise InputError(plan, f"topic {topic}: replication factor {rf} larger than available brokers: "
                                   f"{len(cluster)}")


def _broker_table(subject: PlacementSubject) -> Table:
    replicas = Counter(b for p in subject.assignment for b in subject.replicas(p))
    leaders = Counter(subject.replicas(p)[0] for p in subject.assignment if subject.replicas(p))
    table = Table(title="Brokers", title_justify="left")
    for col in ("broker", "rack", "replicas", "preferred leaders"):
        table.add_column(col, justify="right" if col != "rack" else "left")
    for b in subject.broker_ids:
        rack = subject.rack_of.get(b)
        table.add_row(str(b), "-" if rack is None else _escape(formats.shown(rack)), str(replicas.get(b, 0)),
                      str(leaders.get(b, 0)))
    return table


def verify(
    plan: Annotated[str | None, typer.Argument(
        help="Reassignment JSON, kafka-topics --describe output (any release), or kafka-reassign-partitions "
             "--generate/--execute/--verify output as pasted ('-': stdin); or none with --bootstrap-server.")] = None,
    brokers_file: Annotated[str | None, typer.Option(help="Broker racks: JSON, or id:rack lines.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the violations as JSON.")] = False,
    threshold: Annotated[float, typer.Option(help="Replica and leader balance threshold (Cruise Control's).")] = 1.10,
    max_replicas_per_broker: Annotated[int, typer.Option(help="max.replicas.per.broker")] = 10_000,
    junit_xml: JunitXml = None,
    kafka_version: Annotated[str | None, typer.Option(
        "--kafka-version", metavar="VERSION",
        help="The Kafka release the cluster runs (default: the newest, 4.4.0), named in the reports; the placement "
             "invariants are the same for every release, a reassignment in flight completes by its controller's "
             "rule.")] = None,
    baseline: BaselineOpt = None,
    allowlist: AllowlistOpt = None,
    decommission: DecommissionOpt = None,
    fail_on: FailOnOpt = "hard",
    min_insync_replicas: Annotated[int | None, typer.Option(
        help="min.insync.replicas of topics whose describe has none in Configs (default: the broker default, 1).")]
    = None,
    controller: Annotated[str | None, typer.Option(
        help="kraft or zk: whose leader-imbalance and reassignment rules the health checks apply (default: what "
             "the describe's layout tells, else kraft).")] = None,
    block: Annotated[str | None, typer.Option(
        help="Which block of pasted kafka-reassign-partitions output to check: proposed or current (default: "
             "--generate's Proposed block; the state before the plan in --execute output; the partitions as --verify "
             "states them).")] = None,
    bootstrap_server: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
) -> int:
    """Check a reassignment plan or a cluster description against every placement invariant and, for a describe,
    every partition's health (against a baseline's findings when given)."""
    from kcheck import junit
    from kcheck.gate import describe as verify_describe
    from kcheck.gate import policy as gate
    from kcheck.invariants.partition_health import CONTROLLERS
    from kcheck.reference.releases import DEFAULT_VERSION

    release = requested_release(kafka_version) or DEFAULT_VERSION
    balance_options(threshold, max_replicas_per_broker)
    gs = gate_settings(baseline, allowlist, decommission, fail_on, "verify")
    if (plan is None) == (bootstrap_server is None):
        raise InputError("plan", "give a PLAN file or --bootstrap-server, not both" if plan else
                                 "missing argument: a plan or describe file ('-': stdin), or --bootstrap-server "
                                 "HOST:PORT")
    junit_path = (junit.output_path(junit_xml, "--junit-xml", [plan, brokers_file, baseline, allowlist,
                                                               command_config])
                  if junit_xml is not None else None)
    if controller is not None and controller not in CONTROLLERS:
        raise InputError("--controller", f"'{controller}' is not one of {', '.join(CONTROLLERS)}")
    if block is not None and block not in formats.PASTED_WANTS:
        raise InputError("--block", f"'{formats.shown(block, 40)}' is not one of {', '.join(formats.PASTED_WANTS)}")
    if min_insync_replicas is not None:
        bounded_int("--min-insync-replicas", min_insync_replicas, 1, INT32_MAX)
    # Every input is checked before a live cluster is asked (which may take seconds): the brokers file too.
    given_cluster = formats.parse_brokers(formats.read_text(brokers_file), brokers_file) if brokers_file else None
    live = read_live(bootstrap_server, command_config)
    if live is not None:  # the live cluster as kafka-topics --describe would print it: one parser, one set of checks
        source, text = live.source, live.describe_text
        if not text.strip():
            raise InputError("--bootstrap-server", f"{live.source} has no topics to check")
    else:
        assert plan is not None
        source = "<stdin>" if plan == "-" else plan
        text = sys.stdin.read() if plan == "-" else formats.read_text(plan)
        if not text.strip():
            raise InputError(source, "is empty")
    try:
        assignment, block_used = formats.parse_pasted(text, source, block)
    except formats.BlockRefused as e:
        raise InputError(e.source, f"{e.message}; --block {e.other} reads {e.what}", e.line) from None
    described = verify_describe.view(text, source, block_used, controller, live)
    if given_cluster is not None:
        cluster = given_cluster
    elif live is not None:  # the brokers the cluster reports, with their racks
        cluster = formats.parse_brokers(live.brokers_text, live.source)
    else:
        cluster = Cluster.of(assignment.broker_ids())
    _validate_against_cluster(assignment, cluster, source, brokers_file or "the plan")
    gate.check_decommission(gs, cluster.broker_ids)
    settings = BalanceSettings(replica_threshold=threshold, leader_threshold=threshold,
                               follower_threshold=threshold, max_replicas_per_broker=max_replicas_per_broker)
    subject = PlacementSubject(cluster, assignment, settings, leaving=gs.decommission)
    # Placement (balance skipped on a partial paste) and the partitions' live state: leader, ISR, ELR, moves.
    result, health = verify_describe.check(described, subject, min_insync_replicas, release)
    # Against the baseline's findings when given; without one every finding is new (nothing is known).
    judged = gate.judge(result, gs.baseline_report, gs, f"the baseline {baseline}" if baseline else None)
    if junit_path:
        junit.write(junit_path, "kcheck verify", [junit.TestSuite(
            f"kcheck verify {source}", junit.judged_cases(result, judged, "kcheck.verify"),
            properties={"plan": source, "block": block_used, "kafka_version": release,
                        "partitions": str(len(assignment)), "brokers": str(len(cluster)), "fail_on": gs.fail_on,
                        **verify_describe.junit_properties(described)})])
    if json_out:
        print(report.report_json(result, {"plan": source, "block": block_used, "kafka_version": release,
                                          "partitions": len(assignment),
                                          "brokers": len(cluster), "decommission": sorted(gs.decommission),
                                          **verify_describe.json_fields(described, health, result),
                                          **gate.report_json_fields(result, judged, "verify")}))
    else:
        out = report.console()
        out.print(f"Read {formats.shown(source)}: {block_used}.", markup=False)
        for line in verify_describe.notes(described, health, result):
            out.print(line, markup=False)
        out.print(_broker_table(subject))
        if described.describe is not None:
            out.print(verify_describe.survivability_table(verify_describe.survivability_of(health)))
        out.print(gate.judged_table(
            judged, f"Findings in {_escape(formats.shown(source))} ({len(assignment)} partitions, "
                    f"{len(cluster)} brokers)" + (f", against the baseline {_escape(formats.shown(baseline))}"
                                                   if baseline else "")))
        out.print(report.gate_summary(result, judged))
    return int(judged.exit)
