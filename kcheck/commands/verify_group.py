"""`kcheck verify-group`: `kafka-consumer-groups --describe` output judged per group (kcheck.gate.group)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from kcheck.gate.group import (
    _NEVER,
    GENERAL,
    Verdict,
    _check_assignor,
    _headline,
    _member_lag,
    _tps,
    lag_table,
    print_general,
    read_pastes,
    verdict_json,
    verify_groups,
)
from kcheck.inputs.formats import shown
from kcheck.runtime.exit_codes import Exit


def print_verdict(v: Verdict, out: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    from kcheck import report
    out.print(_headline(v), markup=False)
    if v.members:
        table = Table(title="Members", title_justify="left")
        static = any(m.instance for m in v.members)
        target = any(m.target is not None for m in v.members)
        for col in ("member", "client", *(["instance"] if static else []), "host", "partitions", "count",
                    *(["target"] if target else []), "lag"):
            table.add_column(col, overflow="fold", justify="right" if col in ("count", "lag") else "left")
        lag_of = {r.tp: r.lag for r in v.lag}
        for m in v.members:
            count = len(m.partitions) if m.partitions is not None else m.count
            lags = [lag_of.get(tp) for tp in m.partitions or ()]
            table.add_row(escape(shown(m.id)), escape(shown(m.client or "-")),
                          *([escape(shown(m.instance or "-"))] if static else []), escape(shown(m.host or "-")),
                          _tps(m.partitions), "?" if count is None else str(count),
                          *([_tps(m.target)] if target else []),
                          _member_lag(lags))
        out.print(table)
    if v.lag:
        out.print(lag_table(v))
    if v.pending:
        out.print(f"Pending (KIP-848): {_tps(v.pending)} in a member's target assignment but in no member's current "
                  "one: its new owner has not taken it yet (a member that never does is stuck or dead)", markup=False)
    if v.report.violations:
        out.print(report.violations_table(v.report, f"Invariants of group {escape(shown(v.name))}"))
    for line in v.notes:
        out.print(f"Note: {line}", markup=False)
    judged = ", ".join(v.report.checked) or "nothing"
    verdict_line = "FAIL" if v.failed else "OK"
    out.print(f"{verdict_line}: judged {judged}"
              + (f"; broken promise(s) of {v.assignor}: {', '.join(v.broken)}" if v.broken and v.assignor else ""),
              markup=False)
    for inv, why in v.report.skipped.items():
        if inv not in _NEVER:
            out.print(f"  not judged: {inv}: {why}", markup=False)
    for line in v.cannot:
        if line not in GENERAL:
            out.print(f"  cannot tell: {line}", markup=False)
    out.print("")


FilesArg = Annotated[list[str], typer.Argument(
    metavar="FILE", help="kafka-consumer-groups --describe output, any mode (--offsets, --members [--verbose], "
                         "--state [--verbose]), one group or --all-groups, any release 0.10.2 to 4.4; several files "
                         "are read as one paste ('-': stdin).")]


def verify_group_command(
    files: FilesArg,
    assignor: Annotated[str | None, typer.Option(
        help="The group's assignor when the paste has no --state table to name it: range, roundrobin, sticky, "
             "cooperative-sticky, uniform (KIP-848) or server-range.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print each group's verdict as JSON.")] = False,
    junit_xml: Annotated[str | None, typer.Option("--junit-xml", metavar="FILE",
                                                  help="Also write the results as a JUnit XML report to FILE.")]
    = None,
) -> int:
    """Check consumer groups from kafka-consumer-groups --describe output: lag per partition, each member's
    partitions, and the assignment invariants for the group's assignor; says what the output cannot tell."""
    from kcheck import junit, report
    _check_assignor(assignor)
    junit_path = junit.output_path(junit_xml, "--junit-xml", files) if junit_xml is not None else None
    paste = read_pastes(files)
    if assignor == "server-range":
        assignor = "range"  # as --state prints it; the protocol tells which range
    verdicts = verify_groups(paste, assignor)
    code = Exit.FAILED if any(v.failed for v in verdicts) else Exit.OK
    if junit_path:
        junit.write(junit_path, "kcheck verify-group", [junit.TestSuite(
            f"kcheck verify-group {v.name}", junit.report_cases(v.report, f"kcheck.gate.group.{v.name}",
                                                                v.guarantees),
            properties={"group": v.name, "state": v.state or "", "assignor": v.strategy or ""}) for v in verdicts])
    if json_out:
        print(json.dumps({"inputs": list(files), "layout": paste.layout(), "ok": code == Exit.OK,
                          "exit_status": int(code), "groups": [verdict_json(v) for v in verdicts]}, indent=2))
        return int(code)
    out = report.console()
    out.print(f"kafka-consumer-groups --describe output of {len(verdicts)} group(s), in the layout of Kafka "
              f"{paste.layout()}", markup=False)
    for line in (text for _, text in paste.tool_notes if text.startswith(("Error", "Exception"))):
        out.print(f"The tool printed: {shown(line)}", markup=False)
    out.print("")
    for v in verdicts:
        print_verdict(v, out)
    print_general(verdicts, out)
    failed = [v.name for v in verdicts if v.failed]
    out.print(f"FAIL: {', '.join(shown(n) for n in failed)}" if failed else
              f"OK: {len(verdicts)} group(s), no invariant the groups' assignors promise is broken", markup=False)
    return int(code)
