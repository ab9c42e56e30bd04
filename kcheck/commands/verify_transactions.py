"""`kcheck verify-transactions`: `kafka-transactions.sh` output judged (kcheck.gate.transactions)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from kcheck.gate.transactions import Verdict, verify
from kcheck.inputs.formats import shown
from kcheck.inputs.transactions import read_pastes
from kcheck.runtime.exit_codes import Exit

FilesArg = Annotated[list[str], typer.Argument(
    metavar="FILE", help="kafka-transactions.sh output (list, describe, describe-producers, find-hanging; any release "
                         "from 3.0 to 4.4), one or several subcommands' tables per file, several files read as one "
                         "paste ('-': stdin).")]
PartitionOpt = Annotated[str | None, typer.Option(
    "--partition", metavar="TOPIC-N",
    help="The partition of a describe-producers table pasted without its command line (the tool does not print "
         "it).")]


def _print(v: Verdict, tool_errors: list[tuple[str, int, str]]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from kcheck import report
    out = report.console()
    read = ", ".join(f"{n} {kind} row(s)" for kind, n in v.counts.items() if n) or "tables without rows"
    out.print(f"kafka-transactions output: {read}", markup=False)
    for source, n, text in tool_errors:
        out.print(f"The tool printed ({shown(source)}:{n}): {shown(text, 300)}", markup=False, soft_wrap=True)
    if v.findings:
        table = Table(title="Findings", title_justify="left")
        for col in ("check", "severity", "place", "finding", "row"):
            table.add_column(col, overflow="fold")
        for f in v.findings:
            table.add_row(f.check, "hard" if f.hard else "soft", escape(shown(f.place)), escape(shown(f.message, 600)),
                          escape(shown(f.where)))
        out.print(table)
        for f in v.findings:
            if f.fix:
                out.print(f"{f.place}: {shown(f.fix, 300)}", markup=False, soft_wrap=True)
    for line in v.notes:
        out.print(f"Note: {shown(line, 400)}", markup=False, soft_wrap=True)
    hard = sum(f.hard for f in v.findings)
    out.print(f"{'FAIL' if hard else 'OK'}: {hard} hard finding(s), {len(v.findings) - hard} soft; judged "
              f"{', '.join(v.checked) or 'nothing'}", markup=False, soft_wrap=True)
    for line in v.cannot:
        out.print(f"  cannot tell: {shown(line, 400)}", markup=False, soft_wrap=True)


def verify_transactions_command(
    files: FilesArg,
    partition: PartitionOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the transactions and findings as JSON.")] = False,
) -> int:
    """Check transactions from kafka-transactions output: hanging transactions (KIP-664), transactions past their
    timeout or stuck before their markers, and open transactions on partitions that no coordinator knows."""
    paste = read_pastes(files, partition)
    v = verify(paste)
    code = Exit.FAILED if v.failed else Exit.OK
    if json_out:
        print(json.dumps({
            "inputs": list(files), "ok": code == Exit.OK, "exit_status": int(code), "rows": v.counts,
            "transactions": v.transactions, "open_transactions_on_partitions": v.open_on_partitions,
            "findings": [f.as_dict() for f in v.findings], "checked": v.checked, "cannot_tell": v.cannot,
            "notes": v.notes,
            "tool_errors": [{"at": f"{s}:{n}", "text": text} for s, n, text in paste.tool_errors]}, indent=2))
    else:
        _print(v, paste.tool_errors)
    return int(code)
