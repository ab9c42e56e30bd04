"""`kcheck sweep placement|assignors`: the PySpark sweep, its per-invariant table and its report.

Exit 0 when no invariant that must hold (hard, or guaranteed by Kafka for the
placer or assignor) is violated anywhere in the space, 1 otherwise, 2 on bad
input. For spark-submit, kcheck/sweep.py runs it as a script:
`spark-submit --py-files kcheck.zip kcheck/sweep.py placement --space default --out DIR`.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from kcheck.inputs.formats import InputError
from kcheck.options import check_master, name_list, spark_failure
from kcheck.runtime import interrupts

if TYPE_CHECKING:
    from kcheck.spark_check.batch import Space

SPACES = ("placement", "assignors")




def build_space(kind: str, space: str, placers: list[str] | None, assignors: list[str] | None,
                kafka_version: str | None = None) -> Any:
    """The space a command line names; InputError (exit 2) for anything wrong with it. `kafka_version` (checked):
    the release the assignors space runs its built-in assignors as (default the newest)."""
    if kind not in SPACES:
        raise InputError("SPACE", f"'{kind}' is not one of {', '.join(SPACES)}")
    built: Space
    if kind == "placement":
        from kcheck.spark_check.placement_space import PlacementSpace, parse_placement_bounds

        if assignors:
            raise InputError("--assignor", "only applies to `kcheck sweep assignors`")
        try:
            bounds = parse_placement_bounds(space)
        except ValueError as e:
            raise InputError("--space", str(e)) from None
        try:
            built = PlacementSpace(bounds, placers or ["adminutils"])
        except ValueError as e:
            raise InputError("--placer", str(e)) from None
    else:
        if placers:
            raise InputError("--placer", "only applies to `kcheck sweep placement`")
        try:
            from kcheck.spark_check.groups import GroupSpace, parse_group_bounds
        except ImportError as e:
            raise InputError("assignors", f"the consumer-group space is not available ({e})") from None
        try:
            group_bounds = parse_group_bounds(space)
        except ValueError as e:
            raise InputError("--space", str(e)) from None
        try:
            built = GroupSpace(group_bounds, assignors, kafka_version)
        except ValueError as e:
            raise InputError("--assignor", str(e)) from None
    if len(built) == 0:
        raise InputError("--space", f"'{space}' holds no configuration")
    return built


def _bounds_text(space: Any) -> str:
    bounds = getattr(space, "bounds", None)
    for attr in ("text", "as_text"):
        if hasattr(bounds, attr):
            return str(getattr(bounds, attr)())
    return repr(bounds)


def _subjects(space: Any) -> str:
    return ", ".join(getattr(space, "placers", None) or getattr(space, "assignors", None) or ())


def results_table(rows: list[Any], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("subject", "invariant", "severity", "Kafka guarantees", "checked", "violated", "result",
                "smallest violating configuration"):
        table.add_column(col, overflow="fold", justify="right" if col in ("checked", "violated") else "left")
    from kcheck.spark_check.report import config_text

    for r in rows:
        if r.violated:
            status = "[bold red]FAILED[/]" if r.fails else "[yellow]finding[/]"
        else:
            status = "[green]holds[/]" if r.checked else "[dim]n/a[/]"
        example = ""
        if r.first is not None:
            example = f"#{r.first.config_id}: {escape(config_text(r.first.config))}\n{escape(r.first.message)}"
            if "replay" in r.first.config:
                example += f"\n[dim]{escape(str(r.first.config['replay']))}[/]"
        guaranteed = {True: "yes", False: "no", None: "-"}[r.guaranteed]
        table.add_row(escape(r.subject), r.invariant, str(r.severity), guaranteed, f"{r.checked:,}",
                      f"{r.violated:,}", status, example)
    return table










def sweep_command(
    kind: Annotated[str, typer.Argument(metavar="SPACE", help="placement or assignors.")],
    space: Annotated[str, typer.Option(help="small, default, large, or bounds, e.g. "
                                            "'default,brokers=1..8,rf=2..3' (placement) or "
                                            "'max_members=3' (assignors).")] = "default",
    placer: Annotated[list[str] | None, typer.Option(help="adminutils, striped, module:object or jvm:<class>; "
                                                          "repeat or comma-separate (default: adminutils).")] = None,
    assignor: Annotated[list[str] | None, typer.Option(help="An assignor name, module:object or jvm:<class>; repeat "
                                                            "or comma-separate (default: every built-in one).")]
    = None,
    master: Annotated[str | None, typer.Option(help="Spark master URL (default: local[*], or spark-submit's); "
                                                    "module:object plug-ins are shipped to its executors.")]
    = None,
    out: Annotated[str | None, typer.Option(help="Result store and report directory "
                                                 "(default: ./kcheck-sweep/SPACE).")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the sweep stored in --out: compute only missing ranges "
                                               "(stored ranges and manifest are never rewritten; the report is "
                                               "regenerated).")]
    = False,
    tasks: Annotated[int | None, typer.Option(min=1, help="Spark tasks (id ranges) to cut the space into "
                                                         "(default: 4 per core, at most 1,000,000 ids each; "
                                                         "at most one per stored range, a grid set by the space "
                                                         "alone).")]
    = None,
    junit_xml: Annotated[str | None, typer.Option("--junit-xml", metavar="FILE",
                                                  help="Also write the results as a JUnit XML report to FILE.")]
    = None,
    classpath: Annotated[str | None, typer.Option(
        "--classpath", metavar="PATHS", help=f"For jvm:<class> plug-ins: jars or class folders, '{os.pathsep}'-"
                                             "separated (each Spark worker starts its own JVM with them).")] = None,
    kafka_version: Annotated[str | None, typer.Option(
        "--kafka-version", metavar="VERSION", help="The Kafka release the reference runs as (default: the newest, "
                                                   "4.4.0; AdminUtils: the newest that has it, 4.0.2).")] = None,
    against_kafka: Annotated[str | None, typer.Option(
        "--against-kafka", metavar="VERSION",
        help="Run Kafka VERSION's own placers or assignors (its jars, one JVM per Spark worker) beside the "
             "reference on every configuration and report each difference (default placers: those the "
             "release has).")] = None,
) -> int:
    """Check every configuration of a generated space with PySpark; print a table per invariant and write a
    Markdown report with plots of the balance metrics."""
    from kcheck.options import load_jvm_classpath, requested_release
    from kcheck.spark_check.store import ResultStore, StoreError

    check_master(master)
    requested = requested_release(kafka_version, against_kafka)
    load_jvm_classpath(classpath, requested)  # before the space resolves its plug-ins
    if against_kafka is not None and kind == "placement" and not placer:
        placer = _kafka_placers(against_kafka)  # every Kafka placer the release has
    # --against-kafka runs the reference as the release itself (and compares only the calls it models)
    built = build_space(kind, space, name_list(placer, "--placer"), name_list(assignor, "--assignor"),
                           None if against_kafka else requested)
    built, release = with_release(built, kafka_version, against_kafka)
    root = out if out is not None else os.path.join("kcheck-sweep", built.name + (f"-{against_kafka}" if against_kafka
                                                                                 else ""))
    from kcheck import junit

    created = "://" not in root and not os.path.lexists(root)
    junit.output_path(root, "--out", directory=True, parents=True)

    junit_path = (junit.output_path(junit_xml, "--junit-xml", [os.path.join(root, "report.md"),
                                                               os.path.join(root, "report.html")])
                  if junit_xml is not None else None)
    store = ResultStore(root)
    size = len(built)
    try:
        lock = store.begin(built, resume)  # held to the end of the run, report included
    except StoreError as e:
        raise InputError("--out", str(e)) from None
    try:
        return _run(built, store, resume, master, tasks, size, junit_path, release)
    except BaseException as e:
        if interrupts.by_interrupt(e):
            interrupts.note(_left_behind(store, created))
        raise
    finally:
        lock.release()


def _left_behind(store: Any, created: bool) -> str:
    """What an interrupted sweep leaves in --out, said in the interrupt's line: the ranges it stored are kept for
    --resume; a store this run created and stored nothing in is removed, so the next run starts as this one did."""
    try:
        ranges = store.stored_ranges()
    except Exception:  # noqa: BLE001 (the line must still be printed)
        ranges = None
    if ranges == [] and created:
        shutil.rmtree(store.root, ignore_errors=True)
        return f"removed {store.root}, which this run created and stored nothing in"
    kept = "the ranges stored so far" if ranges is None else f"the {len(ranges)} range(s) stored so far"
    return f"{store.root} keeps {kept}: --resume continues the sweep"


def _kafka_placers(version: str) -> list[str]:
    """The Kafka placers a release has (AdminUtils up to 4.0, the striped placer in every release)."""
    from kcheck.reference import releases

    try:
        prof = releases.profile(version)
    except releases.UnknownRelease as e:
        raise InputError("--against-kafka", str(e)) from None
    return [p for p in ("adminutils", "striped") if prof.has(p)]


def with_release(built: Any, kafka_version: str | None, against_kafka: str | None) -> tuple[Any, str]:
    """The space as the release runs it (`--against-kafka`: wrapped to compare with Kafka's own classes), and the
    release(s) for the report; InputError (exit 2) for an unknown release or an algorithm the release lacks."""
    from kcheck.reference import releases

    if against_kafka is not None and kafka_version is not None and against_kafka != kafka_version:
        raise InputError("--against-kafka", f"compares with Kafka {against_kafka}, but --kafka-version is "
                                            f"{kafka_version}: give one release")
    option = "--against-kafka" if against_kafka is not None else "--kafka-version"
    requested = against_kafka or kafka_version
    subjects = list(getattr(built, "placers", None) or getattr(built, "assignors", None) or ())
    try:
        per = releases.releases_for([s for s in subjects if ":" not in s], requested)
        if requested is not None:
            releases.profile(requested)
    except releases.UnknownRelease as e:
        raise InputError(option, str(e)) from None
    release = requested or releases.describe(per)
    if against_kafka is None:
        return built, release
    from kcheck.inputs.formats import one_line
    from kcheck.reference.kafka_jars import KafkaBridgeError
    from kcheck.spark_check.against_kafka import against_kafka as wrap

    try:
        wrapped = wrap(built, against_kafka)
    except ValueError as e:
        raise InputError("--placer" if built.name == "placement" else "--assignor", str(e)) from None
    try:
        wrapped.prepare()  # jars and harness ready before Spark starts: its workers only start JVMs
    except KafkaBridgeError as e:
        raise InputError("--against-kafka", one_line(str(e))) from None
    return wrapped, f"{against_kafka} (Kafka's own jars beside the reference)"


def _run(built: Any, store: Any, resume: bool, master: str | None, tasks: int | None, size: int,
         junit_path: str | None, release: str = "") -> int:
    """The sweep itself, under the store's lock."""
    from kcheck import junit
    from kcheck.spark_check.job import sweep
    from kcheck.spark_check.report import failures, invariant_rows, write_markdown
    from kcheck.spark_check.store import StoreError

    # stdout: stderr carries nothing but a failing sweep's one line of error
    print(f"kcheck sweep {built.name}: {size:,} configurations ({_bounds_text(built)}; {_subjects(built)}; "
          f"Kafka {release}) -> {store.root}", flush=True)
    began = time.perf_counter()
    from kcheck.reference.plugins import shippable_paths

    # The user's module:object plug-ins (imported here when the space resolved them) go to the executors too.
    subjects = list(getattr(built, "placers", None) or getattr(built, "assignors", None) or ())
    try:
        outcome = sweep(built, store, resume=resume, master=master, tasks=tasks, opened=True,
                        py_files=shippable_paths(subjects))
    except StoreError as e:  # a damaged stored file (read before any Spark starts), or overlapping ranges
        raise InputError("--out", str(e)) from None
    except Exception as e:
        if (bad := spark_failure(e, master)) is not None:
            raise bad from None
        raise
    wall = time.perf_counter() - began
    stored, job = outcome.stored, outcome.job
    rows = invariant_rows(built, stored.result)
    out_console = _console()
    out_console.print(results_table(rows, f"{built.name} sweep: {size:,} configurations, {_bounds_text(built)}"))
    counted = stored.result.checked and _counted(built, stored.result)
    verified = stored.complete and (counted is None or counted == size)
    coverage = (f"Verified: {len(stored.ranges)} stored ranges are disjoint and cover all {size:,} configurations"
                + (f"; checked configurations add up to {counted:,}" if counted is not None else "")
                if verified else
                f"INCOMPLETE: stored ranges cover {stored.configurations:,} of {size:,} configurations"
                + (f" (checked configurations add up to {counted:,})" if counted is not None else ""))
    rate = f" ({job.configurations / job.seconds:,.0f} configurations/s)" if job.seconds else ""
    run = (f"This run: {job.configurations:,} configurations in {job.ranges} Spark task(s), job {job.seconds:.1f} s"
           f"{rate}, {wall:.1f} s wall; {outcome.resumed_ranges} range(s) were already stored.")
    failed = failures(rows)
    findings = [r for r in rows if r.violated and not r.fails]
    verdict = (f"{'FAIL' if failed or not verified else 'OK'}: {len(failed)} invariant(s) that must hold are violated"
               + (f" ({', '.join(r.key for r in failed)})" if failed else "")
               + f"; {len(findings)} soft finding(s) about properties Kafka does not promise.")
    report_path = None
    if "://" not in store.root:
        header = {"space": f"{built.name}, {_bounds_text(built)}", "subjects": _subjects(built),
                  "kafka release": release, "configurations": f"{size:,}", "coverage": coverage, "run": run}
        report_path = write_markdown(store.root, built, stored.result, header)
        from kcheck.html_report import write_sweep_html

        html_path = write_sweep_html(store.root, built, stored.result, header, verdict, bool(failed or not verified))
        report_path += f" (and {html_path}, self-contained)"
    if junit_path:
        junit.write(junit_path, "kcheck sweep", [junit.TestSuite(
            f"kcheck sweep {built.name}", junit.sweep_cases(rows, built.name, verified, coverage), job.seconds,
            properties={"space": f"{built.name}, {_bounds_text(built)}", "subjects": _subjects(built),
                        "kafka_version": release, "configurations": str(size)})])
    for line in (coverage, run, verdict) + ((f"Report: {report_path}",) if report_path else ()):
        out_console.print(line, markup=False, highlight=False)
    _raise_plugin_failure(stored.result)
    return 1 if failed or not verified else 0


def _raise_plugin_failure(result: Any) -> None:
    """A user's placer or assignor (module:object) that raised or answered malformed data failed itself, not
    Kafka: after everything is stored and reported, one line naming it and its smallest configuration, exit 2."""
    from kcheck.reference.plugins import PluginError
    from kcheck.spark_check.groups import ASSIGNOR_ERROR
    from kcheck.spark_check.placement_space import PLACER_ERROR

    broken = sorted((first.config_id, key.rpartition("/")[0], first) for key, first in result.first.items()
                    if key.rpartition("/")[2] in (PLACER_ERROR, ASSIGNOR_ERROR) and ":" in key.rpartition("/")[0])
    if broken:
        config_id, spec, first = broken[0]
        message = first.message.removeprefix(f"PluginError: plug-in {spec}: ")  # the space names it once already
        raise PluginError(spec, f"{message} (the report has the whole configuration)", "",
                          context=f"sweep configuration {config_id}, the smallest where it failed")


def _counted(space: Any, result: Any) -> int | None:
    """Configurations the results account for, when the space can say (every id counts once per key it owns)."""
    if getattr(space, "name", None) == "placement":
        from kcheck.spark_check.placement_space import PLACER_ERROR

        return sum(v for k, v in result.checked.items() if k.endswith("/" + PLACER_ERROR))
    return None


def _console(stderr: bool = False) -> Any:
    from kcheck.report import console

    return console(stderr=stderr)
