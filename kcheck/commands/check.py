"""`kcheck check`: every check kcheck has over its built-in clusters, or the placers and assignors named; the
checks themselves are in kcheck/check.py."""

from __future__ import annotations

from typing import Annotated

import typer

from kcheck import report
from kcheck.check import MAX_BROKERS, failed_any, run_check
from kcheck.inputs.formats import InputError
from kcheck.invariants import REGISTRY, Severity
from kcheck.options import (
    Classpath,
    InvariantsOpt,
    JunitXml,
    hypothesis_home,
    load_invariants,
    load_jvm_classpath,
    module_files,
    name_list,
)
from kcheck.reference.placers import resolve_placer


def check(
    json_out: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    max_brokers: Annotated[int, typer.Option(min=1, max=12, help="Largest built-in cluster.")] = MAX_BROKERS,
    deep: Annotated[bool, typer.Option(
        help="Also find row 4 (KIP-320) with the exact search in novelty order (exhaust --order novelty): "
             "about 190,000 states and about 10 s more.")] = False,
    junit_xml: JunitXml = None,
    html_out: Annotated[str | None, typer.Option("--html", metavar="FILE",
                                                 help="Also write a self-contained HTML report to FILE.")] = None,
    placer: Annotated[list[str] | None, typer.Option(
        help="Check this placer (module:object, jvm:<class> or a built-in name) on Kafka's placement cases instead "
             "of the whole job; repeat or comma-separate.")] = None,
    assignor: Annotated[list[str] | None, typer.Option(
        help="Check this assignor (module:object, jvm:<class> or a built-in name) in the rebalance model and the "
             "rejoin sweep instead of the whole job; repeat or comma-separate.")] = None,
    classpath: Classpath = None,
    invariants: InvariantsOpt = None,
) -> int:
    """Run every check kcheck has and print one summary (the main job), or check the placers and assignors named."""
    from kcheck import html_report, junit
    from kcheck.reference.assignors.registry import resolve_assignor

    # refused before minutes of work, not after; never over the user's own module (found without importing it)
    own = module_files(invariants)
    junit_path = junit.output_path(junit_xml, "--junit-xml", own) if junit_xml is not None else None
    html_path = junit.output_path(html_out, "--html", [junit_xml, *own]) if html_out is not None else None
    placers, assignors = name_list(placer, "--placer"), name_list(assignor, "--assignor")
    user_invariants = load_invariants(invariants, applies_to=None)  # a user's invariants hold or fail the job
    load_jvm_classpath(classpath)
    for option, names, resolve in (("--placer", placers, resolve_placer), ("--assignor", assignors, resolve_assignor)):
        for name in names or ():
            try:
                resolve(name)
            except ValueError as e:
                raise InputError(option, str(e)) from None
    with hypothesis_home():  # the replication model's Hypothesis run: its cache stays out of the user's directory
        result = run_check(max_brokers, deep=deep, placers=placers, assignors=assignors,
                           user_invariants=user_invariants)
    hard_findings = [o for o in result.findings if REGISTRY[o.invariant].severity is Severity.HARD]
    failed = failed_any(result)
    summary = (
        f"{'FAIL' if failed else 'OK'}: {len(result.failures)} guarantee(s) of Kafka's placers violated and "
        f"{len(result.failed_proofs)} not proved; {len(result.failed_models)} assignor(s) broke a guarantee in "
        f"the rebalance model and {len(result.failed_rejoins)} in the rejoin sweep; "
        f"{len(result.rejoins.findings) if result.rejoins else 0} stale-claim finding(s) (Kafka's own); "
        f"{len(result.failed_replication)} replication-model run(s), {len(result.failed_request)} "
        f"request-model and {len(result.failed_transactions)} transactions-model row(s) not as expected; "
        f"{len(result.failed_spots)} request-path reference(s) differing from Kafka's classes; "
        f"{len(hard_findings)} hard and "
        f"{len(result.findings) - len(hard_findings)} soft finding(s) about properties Kafka does not promise "
        "(replay them with the commands shown)."
    )
    subjects = bool(placers or assignors)
    if subjects:  # the named placers and assignors only: no proofs of Kafka's placers, no replication model
        summary = (
            f"{'FAIL' if failed else 'OK'}: {len(result.failures)} placement invariant(s) that must hold (hard, or "
            f"guaranteed by Kafka) violated; {len(result.failed_models)} assignor(s) broke what must hold in the "
            f"rebalance model and {len(result.failed_rejoins)} in the rejoin sweep; "
            f"{len(result.rejoins.findings) if result.rejoins else 0} stale-claim finding(s) (Kafka's own); "
            f"{len(result.findings)} finding(s) about properties Kafka does not promise (replay them with the "
            "commands shown)."
        )
    if junit_path:
        junit.write(junit_path, "kcheck check", junit.check_suites(result))
    if html_path:
        junit.write_atomic(html_path, html_report.check_html(result, summary, failed).encode("utf-8"))
    if json_out:
        print(report.check_json(result))
    else:
        out = report.console()
        if placers or not subjects:
            out.print(report.check_table(result))
        if not subjects:
            out.print(report.prove_table(result.proofs, "Kafka's placement guarantees, proved"))
        if assignors or not subjects:
            out.print(report.models_table(result.models))
        if result.rejoins is not None:
            out.print(report.rejoin_table(result.rejoins))
        if not subjects:
            out.print(report.replication_table(result.replication))
            out.print(report.request_table(result.request))
            out.print(report.request_table(result.transactions, "Transactions model"))
            out.print(report.spots_table(result.spots))
        out.print(summary)
    return 1 if failed else 0
