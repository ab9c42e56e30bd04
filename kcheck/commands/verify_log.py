"""`kcheck verify-log`: `kafka-dump-log` and `kafka-log-dirs` output read and judged (kcheck.inputs.log_tools)."""

from __future__ import annotations

import json
import os
from typing import Annotated, Any

import typer

from kcheck.inputs.formats import InputError, shown
from kcheck.inputs.log_tools import (
    UNNAMED,
    VerifyLogResult,
    _bytes,
    _counts,
    locate,
    partition_of,
    read_inputs,
    verify_log,
)
from kcheck.invariants.registry import Severity, Violation
from kcheck.runtime.exit_codes import Exit

FilesArg = Annotated[list[str], typer.Argument(
    metavar="DUMP",
    help="kafka-dump-log.sh output of any release from 1.0 (shallow or --deep-iteration, --print-data-log; .log, "
         ".index and .timeindex files, several --files per dump allowed; --index-sanity-check, "
         "--verify-index-only, --offsets-decoder), and optionally kafka-log-dirs.sh --describe output ('-': stdin).")]


PartitionOpt = Annotated[str | None, typer.Option(
    "--partition", metavar="TOPIC-N",
    help="The partition folder of the files a dump names without one (kafka-dump-log run inside the folder). "
         "Default: the folder the tool printed for them on stderr, else the current directory's name when it is "
         "a partition's (topic-N).")]


def _json(result: VerifyLogResult, inputs: list[str], code: Exit) -> dict[str, Any]:
    rows = []
    for p, (view, rep, d) in zip(result.parts, result.reports, strict=True):
        records, shallow = _counts(p)
        rows.append({
            "partition": view.partition, "segments": [s.base_offset for s in view.segments], "records": records,
            "shallow_segments": shallow, "compacted": view.compacted,
            "layouts": sorted({x for s in p.segments for x in s.layout.split(" and ") if x}),
            "bytes": _bytes(view),
            "checked": list(rep.checked) + (list(d.checked) if d else []),
            "not_applicable": {**rep.skipped, **(d.skipped if d else {})}})
    return {
        "inputs": inputs, "ok": code == Exit.OK, "exit_status": int(code), "partitions": rows,
        "bare_files": None if result.bare == (None, "") else {"partition": result.bare[0], "from": result.bare[1]},
        "sanity_checks_passed": result.sanity_passed,
        "violations": [{**x.as_dict(), "partition": partition_of(view, x),
                        **dict(zip(("segment", "offset", "key"), locate(view, x), strict=True))}
                       for view, x in result.violations],
        "kafka_notes": [{"kind": n.kind, "file": n.path, "text": n.text, "repeat": n.repeat,
                         "expected": n.expected} for n in result.notes],
    }


def _junit(result: VerifyLogResult, path: str) -> None:
    from kcheck import junit
    suites = []
    for view, rep, dirs_rep in result.reports:
        cases = junit.report_cases(rep, f"kcheck.verify_log.{view.partition}")
        if dirs_rep is not None:
            cases += junit.report_cases(dirs_rep, f"kcheck.verify_log.{view.partition}")
        suites.append(junit.TestSuite(f"kcheck verify-log {view.partition}", cases, properties={
            "partition": view.partition, "segments": str(len(view.segments)),
            "records": str(sum(len(s.records) for s in view.segments))}))
    suites.append(junit.TestSuite("kcheck verify-log kafka-dump-log", junit.report_cases(
        result.kafka, "kcheck.verify_log.kafka_dump_log")))
    junit.write(path, "kcheck verify-log", suites)


def _expected_lines(result: VerifyLogResult) -> list[str]:
    """Kafka's lines a healthy log shows too, one line per file and reason."""
    grouped: dict[tuple[str, str], int] = {}
    for n in result.notes:
        if n.expected is not None:
            place = "the dump" if n.path is None else shown(n.path)
            grouped[(place, n.expected)] = grouped.get((place, n.expected), 0) + n.repeat
    return [f"kafka-dump-log printed {k} line(s) about {place} that a healthy log shows (not counted): {why}"
            for (place, why), k in grouped.items()]


def _print(result: VerifyLogResult, hard: list[Violation]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from kcheck import report
    out = report.console()
    if result.bare != (None, ""):
        name, how = result.bare
        out.print(f"The dump names files without their folder (run inside the partition's folder): partition "
                  f"{shown(name or UNNAMED)}, named by {how}.", markup=False, soft_wrap=True)
    table = Table(title="Partitions", title_justify="left")
    for col in ("partition", "segments", "records", "bytes", "compacted", "violations"):
        table.add_column(col, justify="left" if col == "partition" else "right")
    for p, (view, rep, d) in zip(result.parts, result.reports, strict=True):
        records, shallow = _counts(p)
        shown_records = ("?" if records is None else str(records)) + (" (batches only)" if shallow else "")
        table.add_row(escape(shown(view.partition)), str(len(view.segments)), shown_records,
                      str(_bytes(view) if _bytes(view) is not None else "?"), "yes" if view.compacted else "no",
                      str(len(rep.violations) + (len(d.violations) if d else 0)))
    out.print(table)
    if result.violations:
        vt = Table(title="Violations", title_justify="left")
        for col in ("invariant", "partition", "segment", "offset", "key", "violation"):
            vt.add_column(col, overflow="fold")
        for view, x in result.violations:
            seg, off, key = locate(view, x)
            vt.add_row(x.invariant, escape(shown(partition_of(view, x))), seg, off, escape(key),
                       escape(shown(x.message, 500)))
        out.print(vt)
    for line in _expected_lines(result):
        out.print(line, markup=False, soft_wrap=True)
    checked = sorted({i for _, r, d in result.reports for i in (*r.checked, *(d.checked if d else ()))}
                     | set(result.kafka.checked))
    skipped: dict[tuple[str, str], list[str]] = {}  # (invariant, why) -> the partitions it did not apply to
    for view, r, d in result.reports:
        for i, why in {**r.skipped, **(d.skipped if d else {})}.items():
            skipped.setdefault((i, why), []).append(view.partition)
    na = [f"{i}{'' if len(ps) == len(result.reports) else ' for ' + ', '.join(ps)} ({why})"
          for (i, why), ps in skipped.items()]
    sanity = f"; Kafka's index sanity check passed {result.sanity_passed} index(es)" if result.sanity_passed else ""
    out.print(f"{'FAIL' if hard else 'OK'}: {len(hard)} hard violation(s) over {len(checked)} invariant(s) in "
              f"{len(result.reports)} partition(s){sanity}" + (f"; not applicable: {'; '.join(na)}" if na else ""),
              markup=False, soft_wrap=True)


def verify_log_command(
    dumps: FilesArg,
    json_out: Annotated[bool, typer.Option("--json", help="Print the partitions and violations as JSON.")] = False,
    junit_xml: Annotated[str | None, typer.Option("--junit-xml", metavar="FILE",
                                                  help="Also write the results as a JUnit XML report to FILE.")]
    = None,
    partition: PartitionOpt = None,
) -> int:
    """Check a real log directory's segments and indexes, from kafka-dump-log output, against every log invariant
    (and the sizes kafka-log-dirs reports): each violation with its segment, offset and key."""
    from kcheck import junit
    junit_path = junit.output_path(junit_xml, "--junit-xml", dumps) if junit_xml is not None else None
    if sum(d == "-" for d in dumps) > 1:
        raise InputError("DUMP", "'-' (stdin) given more than once")
    if partition is not None and (not partition or os.sep in partition or partition in (".", "..")
                                  or not partition.isprintable() or len(partition) > 255):
        raise InputError("--partition", f"{shown(partition, 80)!r} is not a folder name (a partition's: TOPIC-N)")
    parsed, dirs = read_inputs(dumps)
    result = verify_log(parsed, dirs, partition)
    hard = [x for _, x in result.violations if x.severity is Severity.HARD]
    code = Exit.FAILED if hard else Exit.OK
    if junit_path:
        _junit(result, junit_path)
    if json_out:
        print(json.dumps(_json(result, [d.source for d in parsed] + [d.source for d in dirs], code), indent=2))
    else:
        _print(result, hard)
    return int(code)
