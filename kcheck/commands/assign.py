"""`kcheck assign`: a consumer assignor run on a group as its leader (or the KIP-848 coordinator) would, and the
result checked by the assignment invariants."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.table import Table

from kcheck import report
from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.options import (
    AgainstKafka,
    Classpath,
    JunitXml,
    algorithm_release,
    load_jvm_classpath,
    requested_release,
)


def _assign_against_kafka(assignor: str, group: Any, prof: Any) -> int:
    """`assign --against-kafka`: the reference's assignment and Kafka's own assignor's on the same inputs, both
    printed; exit 1 when they differ."""
    from kcheck.reference.kafka_bridge import shared_bridge
    from kcheck.reference.kafka_jars import KafkaBridgeError
    from kcheck.spark_check import against_kafka as ak

    try:
        _, cls = ak.kafka_class(assignor)
    except ValueError as e:
        raise InputError("--against-kafka", str(e)) from None
    try:
        call, theirs = ak.replay_group(assignor, group, shared_bridge(prof.version), prof)
    except KafkaBridgeError as e:
        raise InputError("--against-kafka", formats.one_line(str(e))) from None
    if theirs == ak.NOT_MODELLED:
        raise InputError(f"{assignor} assignor", "the reference does not model this group: nothing to compare")

    def show(outcome: Any) -> list[str]:
        outcome = ak.readable(call, outcome)
        if isinstance(outcome, tuple):
            return [f"  throws {outcome[0]}: {formats.one_line(outcome[1])}"]
        return [f"  {formats.one_line(str(m))}: {', '.join(map(str, tps)) or '-'}" for m, tps in outcome.items()]

    lines = [f"kcheck's reference ({assignor}, as Kafka {prof.version}):", *show(call.ours),
             f"Kafka {prof.version} ({cls}, its own jars):", *show(theirs)]
    for line in lines:
        print(line)
    if ak.same(call.ours, theirs):
        print(f"SAME: Kafka {prof.version} answers as kcheck's reference does.")
        return 0
    where, message = ak.difference_text(ak.readable(call, call.ours), ak.readable(call, theirs), prof.version)
    print(formats.one_line(f"DIFFERENT: {where}: {message}"))
    return 1


def assign(
    group: Annotated[str, typer.Argument(help="Group description JSON: topics and members ('-': stdin).")],
    assignor: Annotated[str, typer.Option(
        help="range, roundrobin, sticky, cooperative-sticky, uniform, server-range, module:object, or jvm:<class> "
             "(a Java ConsumerPartitionAssignor or KIP-848 ConsumerGroupPartitionAssignor).")] = "range",
    json_out: Annotated[bool, typer.Option("--json", help="Print the assignment and violations as JSON.")] = False,
    junit_xml: JunitXml = None,
    classpath: Classpath = None,
    kafka_version: Annotated[str | None, typer.Option(
        "--kafka-version", metavar="VERSION", help="The Kafka release to run as (default: the newest, 4.4.0).")]
    = None,
    against_kafka: AgainstKafka = None,
) -> int:
    """Run a consumer assignor on a group as its leader (or the KIP-848 coordinator) would; check the result."""
    from kcheck import junit
    from kcheck.inputs.group_file import AssignorFailure, run_assignor
    from kcheck.invariants.assignment import AssignmentSubject, check_assignment
    from kcheck.reference.assignors.registry import resolve_assignor

    junit_path = junit.output_path(junit_xml, "--junit-xml", [group]) if junit_xml is not None else None

    requested = requested_release(kafka_version, against_kafka)
    load_jvm_classpath(classpath, requested)
    try:
        info = resolve_assignor(assignor)
    except ValueError as e:
        raise InputError("--assignor", str(e)) from None
    prof = algorithm_release(info.name, requested, against_kafka is not None)
    info = prof.assignor(info)  # a built-in one as the release runs it
    source = "<stdin>" if group == "-" else group
    parsed = _read_group(group, source)
    if against_kafka is not None:
        return _assign_against_kafka(info.name, parsed, prof)
    try:
        run = run_assignor(info, parsed)
    except AssignorFailure as e:  # a valid group the assignor cannot assign: Kafka's rebalance would fail
        return _assignor_failed(e, source, info.name, prof.version, json_out, junit_path)
    result = check_assignment(AssignmentSubject(run.partitions_per_topic, run.subscriptions, run.assignment,
                                                cooperative=run.cooperative))
    broken = sorted({v.invariant for v in result.violations if v.invariant in info.guarantees})
    code = 1 if result.hard_violations or broken else 0
    if junit_path:  # a soft invariant Kafka guarantees for this assignor fails it, as the exit status does
        junit.write(junit_path, "kcheck assign", [junit.TestSuite(
            f"kcheck assign {source}", junit.report_cases(result, f"kcheck.assign.{info.name}", info.guarantees),
            properties={"group": source, "assignor": info.name, "kafka_version": prof.version,
                        "partitions": str(run.partitions), "members": str(len(run.subscriptions))})])
    if json_out:
        def names(by_member, every_member=False):
            return {m: [str(tp) for tp in tps] for m, tps in by_member.items() if tps or every_member}

        extra = {"group": source, "assignor": info.name, "kafka_version": prof.version,
                 "cooperative": info.cooperative,
                 "partitions": run.partitions, "members": len(run.subscriptions),
                 "assignment": names(run.assignment, every_member=True)}
        if info.cooperative:
            extra.update(revoked=names(run.revoked), withheld=names(run.withheld))
        extra.update(guarantees=sorted(info.guarantees), broken_guarantees=broken, exit_status=code)
        print(report.report_json(result, extra))
        return code
    _print(run, result, info, source, assignor, broken)
    return code


def _read_group(group: str, source: str) -> Any:
    """The group description JSON (a file, or '-': stdin); another Kafka tool's output is named as such."""
    from kcheck.inputs.group_file import parse_group

    text = sys.stdin.read() if group == "-" else formats.read_text(group)
    if not text.strip():
        raise InputError(source, "is empty")
    try:
        return parse_group(text, source)
    except InputError:  # another Kafka tool's output: say what it is and which command reads it
        from kcheck.inputs.tool_outputs import identify

        if (other := identify(text)) is None:
            raise
        raise InputError(source, other.hint("a group description JSON")) from None


def _assignor_failed(e: Exception, source: str, name: str, version: str, json_out: bool,
                     junit_path: str | None) -> int:
    """A valid group the assignor cannot assign (Kafka's rebalance would fail): exit 1, in every report asked for."""
    from kcheck import junit

    if junit_path:
        junit.write(junit_path, "kcheck assign", [junit.TestSuite(f"kcheck assign {source}", [junit.TestCase(
            f"kcheck.assign.{name}", "assignment", failure=str(e))])])
    if json_out:
        import json

        print(json.dumps({"group": source, "assignor": name, "kafka_version": version, "ok": False,
                          "error": str(e), "exit_status": 1}, indent=2))
    else:
        report.console().print(f"FAIL: {e}", markup=False)
    return 1


def _print(run: Any, result: Any, info: Any, source: str, assignor: str, broken: list[str]) -> None:
    """The assignment per member, the invariants' table and the verdict on the assignor's guarantees."""
    from rich.markup import escape  # member ids, racks and paths are the user's text

    from kcheck.inputs.group_file import partition_runs

    static = any(s.group_instance_id for s in run.subscriptions.values())
    table = Table()
    columns = ["member", *(["instance id"] if static else []), "rack", "assigned", "count"]
    for col in columns + (["revoked", "withheld"] if info.cooperative else []):
        table.add_column(col, justify="right" if col == "count" else "left", overflow="fold")
    for m, s in run.subscriptions.items():
        row = [escape(formats.shown(m)), *([escape(formats.shown(s.group_instance_id or "-"))] if static else []),
               escape(formats.shown(s.rack_id or "-")),
               partition_runs(run.assignment[m]), str(len(run.assignment[m]))]
        if info.cooperative:
            row += [partition_runs(run.revoked.get(m, [])), partition_runs(run.withheld.get(m, []))]
        table.add_row(*row)
    out = report.console()
    out.print(f"{info.name} assignment of {formats.shown(source)}: {run.partitions:,} partitions, "
              f"{len(run.subscriptions):,} members", markup=False)
    out.print(table)
    if run.withheld.get(""):
        out.print(f"Withheld until revoked (the assignor does not say for whom): {partition_runs(run.withheld[''])}")
    if result.violations:
        out.print(report.violations_table(result, f"Invariants of this assignment ({info.name})"))
    out.print(report.report_summary(result))
    held = sorted(g for g in info.guarantees if g in result.checked and g not in broken)
    skipped = sorted(g for g in info.guarantees if g in result.skipped)
    kafkas = ":" not in assignor  # module:object and jvm:<class> are the user's: held to what they declare
    verdict = (f"FAIL: {info.name} breaks what {'Kafka guarantees for it' if kafkas else 'it declares'}: "
               f"{', '.join(broken)}") if broken else \
        (f"Kafka's guarantees for {info.name}: " if kafkas else f"The guarantees {info.name} declares: ") + \
        ("none declared" if not info.guarantees else f"{', '.join(held) or 'none'} hold")
    out.print(verdict + (f"; not applicable here: {', '.join(skipped)}" if skipped else ""))
