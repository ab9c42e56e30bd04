"""The `kcheck` command line.

Exit status everywhere: 0 when every hard invariant holds, 1 when one is
violated, 2 on bad input (one line on stderr naming the place, never a traceback).
"""

from __future__ import annotations

import math
import os
import re
import sys
import traceback
from collections import Counter
from typing import Annotated, Any

import typer
from rich.markup import escape as _escape
from rich.table import Table

# Typer vendors Click since 0.26 (pyproject requires 0.27): its Click, not the click package, runs this CLI
from typer._click.core import Context as ClickContext
from typer._click.exceptions import ClickException

from kcheck import report
from kcheck.check import MAX_BROKERS, failed_any, run_check
from kcheck.cluster.chaos import chaos_command
from kcheck.cluster.local import cluster_command
from kcheck.gate.group import verify_group_command
from kcheck.gate.plan import plan_command
from kcheck.gate.policy import AllowlistOpt, BaselineOpt, DecommissionOpt, FailOnOpt, gate_settings
from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.inputs.log_tools import verify_log_command
from kcheck.invariants import REGISTRY, BalanceSettings, PlacementSubject, Severity, check_placement
from kcheck.isolation import isolating
from kcheck.liveness_cli import liveness_command
from kcheck.model import INT16_MAX, INT32_MAX, Cluster, ReplicaAssignment
from kcheck.reference.errors import KafkaError
from kcheck.reference.java import JavaRandom, MockRandom
from kcheck.reference.placers import resolve_placer
from kcheck.reference.plugins import PluginError
from kcheck.replication_cli import (
    InvariantsOpt,
    exhaust_command,
    explore_command,
    hypothesis_home,
    load_invariants,
    replay_command,
    variants_command,
)
from kcheck.rules_cli import rules_command
from kcheck.runtime import interrupts
from kcheck.simulation.storage import log_command, sweep_log_command
from kcheck.sweep import sweep_command


class _Commands(typer.core.TyperGroup):
    """Plain help lists each command's whole first sentence, wrapped (Click would cut it short with '...')."""

    def format_commands(self, ctx: ClickContext, formatter: Any) -> None:  # Click's HelpFormatter
        rows = [(name, cmd.get_short_help_str(limit=1_000)) for name in self.list_commands(ctx)
                if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


app = typer.Typer(
    cls=_Commands,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Click's plain help: Rich's option tables cut option names short at 80 columns ("--replication-fa…")
    rich_markup_mode=None,
    help="Property-checked formal model and bit-exact reference of Apache Kafka's control plane.",
)
_debug = False  # --debug: a plug-in's failure is printed with its traceback (set by the callback below)


def _version(value: bool) -> None:
    """--version: kcheck's own version (the installed package's metadata) and the Kafka releases it knows."""
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    from kcheck.reference.releases import DEFAULT_VERSION, RELEASES, releases_with
    from kcheck.runtime.exit_codes import Exit

    try:
        mine = version("kcheck")
    except PackageNotFoundError:  # run from a source tree that was never installed
        mine = "(not installed: no package metadata)"
    print(f"kcheck {mine}")
    print("Kafka releases the reference runs as (--kafka-version): "
          + ", ".join(v + (" (default)" if v == DEFAULT_VERSION else "") for v in RELEASES))
    print(f"  AdminUtils: {', '.join(releases_with('adminutils'))}")
    print(f"  ZooKeeper controller: {', '.join(releases_with('zk'))}")
    print("Kafka's own jars run beside the reference for each of them (--against-kafka; a JDK 17+, the jars from "
          "Maven Central)")
    raise typer.Exit(Exit.OK)


@app.callback()
def _options(
    debug: Annotated[bool, typer.Option("--debug", help="Print the full traceback when a plug-in fails.")] = False,
    show_version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_version,
        help="Print kcheck's version and the Kafka releases it supports, then exit.")] = False,
) -> None:
    global _debug
    _debug = debug


# Options that `place` and `optimize` share.
Brokers = Annotated[str, typer.Option(help="Broker ids, comma-separated, in the order Kafka lists them.")]
Partitions = Annotated[int, typer.Option(help="Number of partitions to place.")]
ReplicationFactor = Annotated[int, typer.Option(help="Replicas per partition.")]
Racks = Annotated[str | None, typer.Option(help="Broker racks: 0:r1,1:r2,...")]
StartIndex = Annotated[int, typer.Option(help="AdminUtils fixed start index (also fixes the shift).")]
PlacerName = Annotated[str, typer.Option(help="adminutils, striped, module:object, or jvm:<class> (a Java "
                                              "ReplicaPlacer).")]
# Java plug-ins (jvm:<class>): the user's jars or class folders, after Kafka's own jars (kcheck.reference.jvm_plugins)
Classpath = Annotated[str | None, typer.Option(
    "--classpath", metavar="PATHS", help=f"For jvm:<class> plug-ins: jars or class folders, '{os.pathsep}'-separated.")]
Seed = Annotated[str, typer.Option(help="Seed of java.util.Random for random draws, or 'mock'.")]
# The Kafka release a command's reference runs as (kcheck.reference.releases), and real Kafka beside it
KafkaVersion = Annotated[str | None, typer.Option(
    "--kafka-version", metavar="VERSION",
    help="The Kafka release to run as (default: the newest, 4.4.0, or for AdminUtils the newest that has it, "
         "4.0.2).")]
AgainstKafka = Annotated[str | None, typer.Option(
    "--against-kafka", metavar="VERSION",
    help="Also run Kafka VERSION's own classes (its jars, through a JVM) on the same input: print both answers, "
         "exit 1 when they differ.")]
# Reports for CI, on the commands that check something (kcheck/junit.py, kcheck/html_report.py)
JunitXml = Annotated[str | None, typer.Option("--junit-xml", metavar="FILE",
                                              help="Also write the results as a JUnit XML report to FILE.")]


# Refused before any work: sizes whose answer would not come in reasonable time (measured on 2 cores: `place`
# takes 9 s for 200,000 partitions x RF 3 with --report, 26 s and 1 GB for 1,000,000; `optimize`'s Z3 takes
# seconds up to ~1,000 partition-replica-broker triples, then minutes or gives up).
MAX_PLACE_PARTITIONS = 200_000  # also the per-cluster partition count Kafka's ZooKeeper-era guidance names
MAX_PLACE_REPLICAS = 1_000_000  # partitions x replication factor
MAX_OPTIMIZE_PARTITIONS = 64
MAX_OPTIMIZE_PRODUCT = 1_000  # partitions x replication factor x brokers given to Z3
MAX_TIMEOUT = 86_400.0  # seconds per solver query: a day
_ID_RE = re.compile(r"-?[0-9]+")  # ASCII digits: not int() alone: it also takes '+1', '1_0' and non-ASCII digits


def _bounded(option: str, value: int, low: int, high: int, what: str = "") -> int:
    """An integer option within Kafka's type or the command's limit (the message names both ends)."""
    if not low <= value <= high:
        raise InputError(option, f"{value} is outside {low}..{high:,}" + (f" ({what})" if what else ""))
    return value


def _finite(option: str, value: float) -> float:
    if not math.isfinite(value):
        raise InputError(option, f"{value} is not a finite number")
    return value


def _int_list(text: str, option: str) -> list[int]:
    tokens = [tok.strip() for tok in text.split(",") if tok.strip()]
    if not all(_ID_RE.fullmatch(tok) for tok in tokens):
        raise InputError(option, f"'{formats.shown(text, 60)}' is not a comma-separated list of broker ids")
    huge = next((tok for tok in tokens if len(tok.lstrip("-")) > 10), None)  # before int(): thousands of digits
    if huge is not None:
        raise InputError(option, f"broker id {formats.shown(huge, 20)} is outside Kafka's int32 range")
    values = [int(tok) for tok in tokens]
    if not values:
        raise InputError(option, "no broker ids given")
    dup = [b for b, n in Counter(values).items() if n > 1]
    if dup:
        raise InputError(option, f"broker {dup[0]} is listed twice")
    if any(v < 0 for v in values):
        raise InputError(option, f"broker id {min(values)} is negative")
    if max(values) > INT32_MAX:  # Kafka's broker ids are Java ints
        raise InputError(option, f"broker id {max(values)} is above {INT32_MAX} (Kafka's int32 maximum)")
    return values


def _rack_map(text: str, broker_ids: list[int]) -> dict[int, str]:
    racks: dict[int, str] = {}
    for tok in filter(None, (t.strip() for t in text.split(","))):
        broker, sep, rack = tok.partition(":")
        if not sep or not rack:
            raise InputError("--racks", f"'{tok}' is not of the form broker:rack")
        if not _ID_RE.fullmatch(broker.strip()):
            raise InputError("--racks", f"'{broker}' in '{tok}' is not a broker id")
        b = int(broker)
        if (problem := formats.control_problem(rack)) is not None:
            raise InputError("--racks", f"the rack of broker {b} {problem}")
        if b not in broker_ids:
            raise InputError("--racks", f"broker {b} is not in --brokers")
        if b in racks:
            raise InputError("--racks", f"broker {b} is given a rack twice")
        racks[b] = rack
    return racks


def _module_files(modules: list[str] | None) -> list[str]:
    """The files of the user's modules, so that no report is written over one: found on sys.path without running
    them (a dotted name's packages would run: only a top-level module, or one imported already, is looked up)."""
    import importlib.util

    files = []
    for name in (m.partition(":")[0] for m in modules or ()):
        path = getattr(sys.modules.get(name), "__file__", None)
        if path is None and name.isidentifier():
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            path = spec.origin if spec is not None else None
        if isinstance(path, str):
            files.append(path)
    return files


def _jvm(classpath: str | None, kafka_version: str | None = None) -> None:
    """--classpath (and the release) for jvm:<class> plug-ins, checked now: a missing entry is one line."""
    if classpath is not None and not classpath.strip():
        raise InputError("--classpath", "is empty: give jars or class folders, or leave --classpath out")
    if not classpath and "kcheck.reference.jvm_plugins" not in sys.modules:
        return  # nothing to set, nothing an earlier command set to reset
    from kcheck.reference import jvm_plugins

    try:
        jvm_plugins.configure(jvm_plugins.parse_classpath(classpath), kafka_version)
    except ValueError as e:
        raise InputError("--classpath", str(e)) from None


def _requested_release(kafka_version: str | None, against_kafka: str | None = None) -> str | None:
    """The release --kafka-version or --against-kafka names (checked: one line for an unknown one), or None."""
    from kcheck.reference import releases

    if against_kafka is not None and kafka_version is not None and against_kafka != kafka_version:
        raise InputError("--against-kafka", f"compares with Kafka {against_kafka}, but --kafka-version is "
                                            f"{kafka_version}: give one release")
    requested = against_kafka if against_kafka is not None else kafka_version
    if requested is None:
        return None
    try:
        return releases.check_version(requested)
    except releases.UnknownRelease as e:
        raise InputError("--against-kafka" if against_kafka is not None else "--kafka-version", str(e)) from None


def _release_for(algorithm: str, requested: str | None, against: bool = False) -> Any:
    """The release profile an algorithm runs as; InputError when the requested release lacks it."""
    from kcheck.reference import releases

    try:
        return releases.release_for(algorithm, requested)
    except releases.UnknownRelease as e:
        raise InputError("--against-kafka" if against else "--kafka-version", str(e)) from None


def _random(seed: str) -> JavaRandom:
    if seed == "mock":  # Kafka's test MockRandom, to replay Kafka's own placer test vectors
        return MockRandom()
    if not _ID_RE.fullmatch(seed.strip()):
        raise InputError("--seed", f"'{seed}' is neither an integer nor 'mock'")
    if not -(2**63) <= int(seed) < 2**63:  # java.util.Random's seed is a long
        raise InputError("--seed", f"{seed.strip()} is outside Java's long range")
    return JavaRandom(int(seed))


@app.command()
@isolating(("placer", "assignor", "invariants"), gate=True)
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
    from kcheck.sweep import _names

    # refused before minutes of work, not after; never over the user's own module (found without importing it)
    own = _module_files(invariants)
    junit_path = junit.output_path(junit_xml, "--junit-xml", own) if junit_xml is not None else None
    html_path = junit.output_path(html_out, "--html", [junit_xml, *own]) if html_out is not None else None
    placers, assignors = _names(placer, "--placer"), _names(assignor, "--assignor")
    user_invariants = load_invariants(invariants, applies_to=None)  # a user's invariants hold or fail the job
    _jvm(classpath)
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
        f"{len(result.failed_replication)} replication-model run(s) not as expected; "
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
        out.print(summary)
    return 1 if failed else 0


@app.command()
@isolating(("placer",))
def place(
    brokers: Brokers,
    partitions: Partitions,
    replication_factor: ReplicationFactor,
    racks: Racks = None,
    fenced: Annotated[str | None, typer.Option(help="Fenced brokers (striped placer): 3,4")] = None,
    topic: Annotated[str, typer.Option(help="Topic name written to the JSON.")] = "topic",
    start_index: StartIndex = -1,
    start_partition: Annotated[int, typer.Option(help="First partition id, when adding partitions.")] = -1,
    placer: PlacerName = "adminutils",
    seed: Seed = "0",
    check_report: Annotated[bool, typer.Option("--report", help="Also check invariants; table on stderr.")] = False,
    classpath: Classpath = None,
    kafka_version: KafkaVersion = None,
    against_kafka: AgainstKafka = None,
) -> int:
    """Place a topic's replicas as Kafka would; print the JSON kafka-reassign-partitions.sh --execute takes."""
    _place_sizes(partitions, replication_factor, start_index)
    _bounded("--start-partition", start_partition, -1, INT32_MAX, "-1: after the existing ones")
    if start_partition >= 0 and start_partition + partitions - 1 > INT32_MAX:
        raise InputError("--start-partition", f"partition ids {start_partition}..{start_partition + partitions - 1} "
                                              f"go above {INT32_MAX} (Kafka's int32 maximum)")
    if (problem := formats.topic_problem(topic)) is not None:
        raise InputError("--topic", problem)
    ids = _int_list(brokers, "--brokers")
    rack_map = _rack_map(racks, ids) if racks else {}
    fenced_ids = _int_list(fenced, "--fenced") if fenced is not None else []
    unknown = [b for b in fenced_ids if b not in ids]
    if unknown:
        raise InputError("--fenced", f"broker {unknown[0]} is not in --brokers")
    cluster = Cluster.of(ids, rack_map, fenced_ids)
    requested = _requested_release(kafka_version, against_kafka)
    _jvm(classpath, requested)
    try:
        info = resolve_placer(placer)
    except ValueError as e:
        raise InputError("--placer", str(e)) from None
    prof = _release_for(info.name, requested, against_kafka is not None)
    if start_index >= 0 and not info.has_start_index:
        raise InputError("--start-index", f"the {info.name} placer has no start index; use --seed")
    if against_kafka is not None:
        return _place_against_kafka(info.name, cluster, partitions, replication_factor, start_index, start_partition,
                                    seed, topic, prof)
    try:
        placement = info.place(list(cluster.brokers), partitions, replication_factor, start_index,
                               start_partition, _random(seed))
    except KafkaError as e:
        raise _placer_error(info.name, e, prof) from None
    assignment = ReplicaAssignment.from_placement(topic, placement)
    print(formats.format_reassignment_json(assignment))
    if not check_report:
        return 0
    result = check_placement(PlacementSubject(cluster, assignment, replication_factor=replication_factor))
    err = report.console(stderr=True)
    err.print(report.violations_table(result, f"Invariants of this placement ({info.name})"))
    err.print(report.report_summary(result))
    return 0 if result.ok else 1


def _place_sizes(partitions: int, replication_factor: int, start_index: int) -> None:
    """Upper bounds (Kafka's types, and what finishes); the placer itself refuses zero and negative sizes."""
    if partitions > MAX_PLACE_PARTITIONS:
        raise InputError("--partitions", f"{partitions:,} is above kcheck's limit of {MAX_PLACE_PARTITIONS:,} "
                                         "partitions per topic")
    if replication_factor > INT16_MAX:
        raise InputError("--replication-factor", f"{replication_factor:,} is above {INT16_MAX:,} "
                                                  "(Kafka's replication factor is an int16)")
    if partitions * replication_factor > MAX_PLACE_REPLICAS:
        raise InputError("--partitions", f"{partitions:,} partitions x replication factor {replication_factor} is "
                                         f"above kcheck's limit of {MAX_PLACE_REPLICAS:,} replicas")
    _bounded("--start-index", start_index, -1, INT32_MAX, "-1: a random start")


# The option behind each of Kafka's placement errors, so the one-line error names it.
_PLACER_ERROR_OPTION = {"InvalidPartitionsException": "--partitions",
                        "InvalidReplicationFactorException": "--replication-factor",
                        "AdminOperationException": "--racks", "BrokerNotAvailableException": "--brokers"}


def _placer_error(placer: str, e: KafkaError, release: Any = None) -> InputError:
    """A placer's refusal in one line, worded as the release words it (`release`: a ReleaseProfile)."""
    option = _PLACER_ERROR_OPTION.get(type(e).__name__, "--brokers")
    message = release.striped_refusal(str(e)) if release is not None and placer == "striped" else str(e)
    return InputError(f"{option} ({placer} placer)", f"{type(e).__name__}: {message}")


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


def _place_against_kafka(placer: str, cluster: Cluster, partitions: int, rf: int, start_index: int,
                         start_partition: int, seed: str, topic: str, prof: Any) -> int:
    """`place --against-kafka`: the reference's placement and Kafka's own (its jars through the bridge), both
    printed; exit 1 when they differ."""
    from kcheck.reference.kafka_bridge import shared_bridge
    from kcheck.reference.kafka_jars import KafkaBridgeError
    from kcheck.spark_check import against_kafka as ak

    if placer not in ak.KAFKA_PLACERS:
        raise InputError("--against-kafka", f"only Kafka's own placers ({', '.join(ak.KAFKA_PLACERS)}) have a "
                                            f"Kafka answer, not '{placer}'")
    if seed.strip() == "mock":
        raise InputError("--seed", "'mock' is Kafka's test MockRandom, which its placers cannot be given; "
                                   "use an integer seed with --against-kafka")
    _random(seed)  # checked: an integer within Java's long range
    inp = ak.PlaceInput(placer, tuple(cluster.brokers), partitions, rf, start_index, start_partition, int(seed))
    ours = ak.reference_place(inp, prof)
    try:
        (theirs,) = ak.kafka_place(shared_bridge(prof.version), [inp])
    except KafkaBridgeError as e:
        raise InputError("--against-kafka", formats.one_line(str(e))) from None

    def show(outcome: Any) -> str:
        if isinstance(outcome, tuple):
            return f"refuses: {outcome[0]}: {formats.one_line(outcome[1])}"
        return formats.format_reassignment_json(ReplicaAssignment.from_placement(topic, outcome))

    print(f"kcheck's reference ({placer}, as Kafka {prof.version}):")
    print(show(ours))
    print(f"Kafka {prof.version} ({ak.KAFKA_PLACERS[placer]}, its own jars):")
    print(show(theirs))
    if ak.same(ours, theirs):
        print(f"SAME: Kafka {prof.version} answers as kcheck's reference does.")
        return 0
    where, message = ak.difference_text(ours, theirs, prof.version)
    print(f"DIFFERENT: {where}: {message}")
    return 1


BootstrapOpt = Annotated[str | None, typer.Option(
    "--bootstrap-server", metavar="HOST:PORT",
    help="Read the cluster now from a live cluster (topics, replicas, leaders, ISR, ELR, racks, min.insync.replicas, "
         "reassignments in flight) instead of a describe file; the same checks and reports follow.")]
CommandConfigOpt = Annotated[str | None, typer.Option(
    "--command-config", metavar="FILE",
    help="Kafka client properties for --bootstrap-server (security.protocol, sasl.*, ssl.* with PEM files), as "
         "kafka-topics.sh --command-config takes them.")]


def read_live(bootstrap_server: str | None, command_config: str | None) -> Any:
    """The live cluster (kcheck.cluster.live.LiveState) when --bootstrap-server is given, else None."""
    if bootstrap_server is None:
        if command_config is not None:
            raise InputError("--command-config", "applies only with --bootstrap-server")
        return None
    from kcheck.cluster.live import read_cluster

    return read_cluster(bootstrap_server, command_config)


def balance_options(threshold: float, max_replicas_per_broker: int) -> None:
    """verify's and verify-reassignment's shared options."""
    if _finite("--threshold", threshold) < 1.0:
        raise InputError("--threshold", f"{threshold} is below 1.0 (it is a ratio to the average, e.g. 1.10)")
    _bounded("--max-replicas-per-broker", max_replicas_per_broker, 1, INT32_MAX)


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


@app.command()
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

    release = _requested_release(kafka_version) or DEFAULT_VERSION
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
        _bounded("--min-insync-replicas", min_insync_replicas, 1, INT32_MAX)
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


@app.command("prove")
@isolating(("placer",))
def prove_command(
    algorithm: Annotated[str, typer.Option(help="adminutils, adminutils-rack-aware, striped or all.")] = "all",
    invariant: Annotated[str, typer.Option(help="An invariant id (see kcheck invariants) or all.")] = "all",
    max_brokers: Annotated[int, typer.Option(help="Largest cluster searched.")] = 5,
    max_racks: Annotated[int, typer.Option(help="Most racks searched.")] = 3,
    max_partitions: Annotated[int, typer.Option(help="Most partitions searched.")] = 6,
    max_rf: Annotated[int, typer.Option(help="Largest replication factor searched.")] = 4,
    placer: Annotated[str | None, typer.Option(help="Check a module:object or jvm:<class> placer by exhaustive "
                                                    "enumeration.")] = None,
    labelled: Annotated[bool, typer.Option(help="With --placer: every broker-to-rack assignment.")] = False,
    exhaustive: Annotated[bool, typer.Option(help="Run Kafka's placers on every configuration and random draw "
                                                  "instead of Z3.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds per solver query.")] = 120.0,
    json_out: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    junit_xml: JunitXml = None,
    classpath: Classpath = None,
    kafka_version: Annotated[str | None, typer.Option(
        "--kafka-version", metavar="VERSION",
        help="The Kafka release whose placers to prove (default: the newest that has each; with a release after "
             "4.0, --algorithm all leaves AdminUtils out).")] = None,
) -> int:
    """Prove placement invariants with Z3 for all clusters within bounds (or all sizes), or find the smallest
    cluster that breaks them, replayed through the concrete reference."""
    from kcheck import junit
    from kcheck.invariants import smt
    from kcheck.invariants.exhaustive import check_exhaustively
    from kcheck.invariants.prover import ALGORITHMS, RACK_NAMES, Bounds
    from kcheck.invariants.prover import prove as prove_pair

    junit_path = junit.output_path(junit_xml, "--junit-xml") if junit_xml is not None else None
    names = [algorithm] if algorithm != "all" else list(ALGORITHMS)
    if placer is None and any(a not in ALGORITHMS for a in names):
        raise InputError("--algorithm", f"'{algorithm}' is not one of {', '.join(ALGORITHMS)}, all")
    ids = list(smt.FORMS) if invariant == "all" else [invariant]
    if any(i not in smt.FORMS for i in ids):
        raise InputError("--invariant", f"'{invariant}' has no Z3 form (one of {', '.join(smt.FORMS)}, or all)")
    for option, value, top in (("--max-brokers", max_brokers, len(RACK_NAMES)), ("--max-racks", max_racks, 10),
                               ("--max-partitions", max_partitions, 64), ("--max-rf", max_rf, 10)):
        if not 1 <= value <= top:
            raise InputError(option, f"{value} is outside 1..{top}")
    if not 0 < _finite("--timeout", timeout) <= MAX_TIMEOUT:
        raise InputError("--timeout", f"{timeout} is outside (0, {MAX_TIMEOUT:,.0f}] seconds")
    bounds = Bounds(max_brokers, max_racks, max_partitions, max_rf)
    timeout_ms = max(1, int(timeout * 1000))
    _prove_setup(placer, classpath)
    requested = _requested_release(kafka_version)
    if placer is None and algorithm == "all" and requested is not None:
        from kcheck.reference.releases import profile

        names = [a for a in names if profile(requested).has(a)]  # the placers this release has
    per_release = {a: _release_for(a, requested) for a in (names if placer is None else [])}
    from kcheck.reference.releases import describe as describe_releases

    release = requested or describe_releases(per_release)
    results = []
    if placer is not None:
        _jvm(classpath, requested)
        try:
            info = resolve_placer(placer)
        except ValueError as e:
            raise InputError("--placer", str(e)) from None
        results = list(check_exhaustively(info, ids, bounds, labelled=labelled).values())
    else:
        for name in names:
            info = resolve_placer("striped" if name == "striped" else "adminutils")
            if exhaustive:
                if name == "adminutils-rack-aware":
                    continue  # the exhaustive pass of the adminutils placer covers both of its paths
                results += check_exhaustively(info, ids, bounds).values()
                continue
            for inv in ids:
                results.append(prove_pair(name, inv, info, bounds, timeout_ms=timeout_ms))
    hard = [r for r in results if REGISTRY[r.invariant].severity is Severity.HARD]
    ok = all(r.status in ("proved", "not applicable") for r in hard)
    if junit_path:
        cases = junit.prove_cases(results)
        junit.write(junit_path, "kcheck prove", [junit.TestSuite(
            "kcheck prove", cases, sum(c.seconds for c in cases),
            properties={**{k: str(v) for k, v in bounds.as_dict().items()}, "kafka_version": release})])
    if json_out:
        import json

        print(json.dumps({"ok": ok, "kafka_version": release, "bounds": bounds.as_dict(),
                          "results": [r.as_dict() for r in results]}, indent=2))
    else:
        out = report.console()
        out.print(f"Kafka release: {release}", markup=False, highlight=False)
        out.print(report.prove_table(results))
        for r in results:
            if r.counterexample is not None:
                for line in report.counterexample_lines(r):
                    out.print(line)
        refuted = sum(r.status == "refuted" for r in hard)
        out.print(f"{'OK' if ok else 'FAIL'}: {sum(r.status == 'proved' for r in hard)} hard invariant result(s) "
                  f"proved, {refuted} refuted, {sum(r.status == 'unknown' for r in hard)} unknown.")
    return 0 if ok else 1


def _prove_setup(placer: str | None, classpath: str | None) -> None:
    """prove's --classpath goes with a jvm: placer only; Z3 is made interruptible (Ctrl-C mid-query)."""
    if placer is None and classpath is not None:
        raise InputError("--classpath", "is for a jvm:<class> --placer; Kafka's own placers need none")
    interrupts.z3_interruptible()


@app.command()
@isolating(("placer",))
def optimize(
    brokers: Brokers,
    partitions: Partitions,
    replication_factor: ReplicationFactor,
    racks: Racks = None,
    placer: PlacerName = "adminutils",
    start_index: StartIndex = -1,
    seed: Seed = "0",
    classpath: Classpath = None,
) -> int:
    """How far a placer's placement is from the best the cluster allows (Z3 optimisation)."""
    from kcheck.invariants.optimal import metrics, optimal_metrics

    ids = _int_list(brokers, "--brokers")
    cluster = Cluster.of(ids, _rack_map(racks, ids) if racks else {})
    _jvm(classpath)
    try:
        info = resolve_placer(placer)
    except ValueError as e:
        raise InputError("--placer", str(e)) from None
    if partitions < 1 or not 1 <= replication_factor <= len(ids):
        raise InputError("--replication-factor" if partitions >= 1 else "--partitions",
                         f"need partitions >= 1 and 1 <= RF <= {len(ids)} brokers")
    _bounded("--partitions", partitions, 1, MAX_OPTIMIZE_PARTITIONS, "what Z3 optimises in reasonable time")
    if partitions * replication_factor * len(ids) > MAX_OPTIMIZE_PRODUCT:
        raise InputError("--partitions", f"partitions x replication factor x brokers = "
                                         f"{partitions * replication_factor * len(ids):,} is above kcheck's limit "
                                         f"of {MAX_OPTIMIZE_PRODUCT:,} for Z3 optimisation")
    _bounded("--start-index", start_index, -1, INT32_MAX, "-1: a random start")
    try:
        placement = info.place(list(cluster.brokers), partitions, replication_factor, start_index, -1, _random(seed))
    except KafkaError as e:
        raise _placer_error(info.name, e) from None
    kafka = metrics(cluster, placement)
    try:
        best, seconds = optimal_metrics(cluster, partitions, replication_factor)
    except RuntimeError as e:  # Z3 gave up (its per-query timeout): too large a problem, not a crash
        raise InputError("--partitions", f"Z3 could not optimise this size ({e}); try fewer partitions, "
                                         "brokers or a smaller replication factor") from None
    table = Table(title=f"{info.name} against the best placement ({seconds:.2f} s of Z3)", title_justify="left")
    for col in ("metric", info.name, "best possible", "gap"):
        table.add_column(col)
    rows: list[tuple[str, int | None, int]] = [
        ("leader spread (max - min preferred leaders per broker)", kafka.leader_spread, best.leader_spread),
        ("replica spread (max - min replicas per broker)", kafka.replica_spread, best.replica_spread)]
    if best.min_racks_spanned is not None:
        rows.append(("fewest racks spanned by a partition", kafka.min_racks_spanned, best.min_racks_spanned))
    for name, got, opt in rows:
        table.add_row(name, str(got), str(opt), str(abs((got or 0) - opt)))
    report.console().print(table)
    return 0


@app.command()
@isolating(("assignor",))
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
    from kcheck.inputs.group_file import AssignorFailure, parse_group, partition_runs, run_assignor
    from kcheck.invariants.assignment import AssignmentSubject, check_assignment
    from kcheck.reference.assignors.registry import resolve_assignor

    junit_path = junit.output_path(junit_xml, "--junit-xml", [group]) if junit_xml is not None else None

    requested = _requested_release(kafka_version, against_kafka)
    _jvm(classpath, requested)
    try:
        info = resolve_assignor(assignor)
    except ValueError as e:
        raise InputError("--assignor", str(e)) from None
    prof = _release_for(info.name, requested, against_kafka is not None)
    info = prof.assignor(info)  # a built-in one as the release runs it
    source = "<stdin>" if group == "-" else group
    text = sys.stdin.read() if group == "-" else formats.read_text(group)
    if not text.strip():
        raise InputError(source, "is empty")
    try:
        parsed = parse_group(text, source)
    except InputError:  # another Kafka tool's output: say what it is and which command reads it
        from kcheck.inputs.tool_outputs import identify

        if (other := identify(text)) is None:
            raise
        raise InputError(source, other.hint("a group description JSON")) from None
    if against_kafka is not None:
        return _assign_against_kafka(info.name, parsed, prof)
    try:
        run = run_assignor(info, parsed)
    except AssignorFailure as e:  # a valid group the assignor cannot assign: Kafka's rebalance would fail
        if junit_path:
            junit.write(junit_path, "kcheck assign", [junit.TestSuite(f"kcheck assign {source}", [junit.TestCase(
                f"kcheck.assign.{info.name}", "assignment", failure=str(e))])])
        if json_out:
            import json

            print(json.dumps({"group": source, "assignor": info.name, "kafka_version": prof.version, "ok": False,
                              "error": str(e), "exit_status": 1}, indent=2))
        else:
            report.console().print(f"FAIL: {e}", markup=False)
        return 1
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
    from rich.markup import escape  # member ids, racks and paths are the user's text

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
    return code


@app.command()
def reassign(
    from_: Annotated[str, typer.Option("--from", help="Current replicas, in order: 1,2,3")],
    to: Annotated[str, typer.Option(help="Target replicas, in order: 4,5,6")],
    leader: Annotated[int | None, typer.Option(help="Current leader (default: the first replica).")] = None,
    isr: Annotated[str | None, typer.Option(help="Current ISR (default: every current replica).")] = None,
    controller: Annotated[str, typer.Option(help="zk or kraft.")] = "zk",
    leader_epoch: Annotated[int, typer.Option(help="Leader epoch before the move.")] = 0,
    all_steps: Annotated[bool, typer.Option("--all-steps", help="Every sub-step, epochs and memory.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print every step as JSON.")] = False,
    kafka_version: Annotated[str | None, typer.Option(
        "--kafka-version", metavar="VERSION",
        help="The Kafka release whose controller runs the move (default: the newest, 4.4.0; zk: 3.9.1, the last "
             "with ZooKeeper).")] = None,
) -> int:
    """Run one partition's reassignment through Kafka's controller and print what it stores, step by step."""
    from kcheck.gate.reassign import run_reassign

    if controller not in ("zk", "kraft"):
        raise InputError("--controller", f"'{controller}' is neither zk nor kraft")
    prof = _release_for(controller, _requested_release(kafka_version))
    return run_reassign(_int_list(from_, "--from"), _int_list(to, "--to"), leader,
                        _int_list(isr, "--isr") if isr is not None else None, controller, all_steps, json_out,
                        leader_epoch, prof)


@app.command("verify-reassignment")
def verify_reassignment(
    current: Annotated[str | None, typer.Argument(
        help="The cluster now: kafka-topics --describe output, a reassignment JSON, or kafka-reassign-partitions "
             "output (its Current block) ('-': stdin). With --bootstrap-server give PROPOSED only.")] = None,
    proposed: Annotated[str | None, typer.Argument(help="The plan: a reassignment JSON or kafka-reassign-partitions "
                                                        "--generate output (its Proposed block) ('-': stdin).")]
    = None,
    brokers_file: Annotated[str | None, typer.Option(help="Broker racks: JSON, or id:rack lines.")] = None,
    min_insync_replicas: Annotated[int | None, typer.Option(
        help="min.insync.replicas for every topic (default: the describe's Configs, else 1).")] = None,
    controller: Annotated[str, typer.Option(help="kraft or zk: whose reassignment rules.")] = "kraft",
    json_out: Annotated[bool, typer.Option("--json", help="Print the moves and violations as JSON.")] = False,
    threshold: Annotated[float, typer.Option(help="Replica and leader balance threshold (Cruise Control's).")] = 1.10,
    max_replicas_per_broker: Annotated[int, typer.Option(help="max.replicas.per.broker")] = 10_000,
    junit_xml: JunitXml = None,
    kafka_version: Annotated[str | None, typer.Option(
        "--kafka-version", metavar="VERSION",
        help="The Kafka release the cluster runs (default: the newest, 4.4.0; zk: 3.9.1); shown in the reports.")]
    = None,
    baseline: BaselineOpt = None,
    allowlist: AllowlistOpt = None,
    decommission: DecommissionOpt = None,
    fail_on: FailOnOpt = "hard",
    bootstrap_server: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
) -> int:
    """Check a reassignment plan against the cluster it would run on: each move's safety and the target placement,
    and what the plan introduces, fixes and leaves unchanged."""
    from kcheck.gate.reassign import run_verify_reassignment

    if bootstrap_server is not None:  # the cluster now is the live one: the one file given is the plan
        if current is None or proposed is not None:
            raise InputError("proposed", "with --bootstrap-server give only the plan (PROPOSED)" if current else
                                         "missing argument: the plan (PROPOSED)")
        current, proposed = None, current
    elif current is None or proposed is None:
        raise InputError("current" if current is None else "proposed",
                         "missing argument: give CURRENT and PROPOSED files ('-': stdin for one), or "
                         "--bootstrap-server HOST:PORT and PROPOSED")
    gs = gate_settings(baseline, allowlist, decommission, fail_on, "verify-reassignment")
    prof = _release_for(controller, _requested_release(kafka_version)) if controller in ("zk", "kraft") else None
    if bootstrap_server is None and command_config is not None:
        raise InputError("--command-config", "applies only with --bootstrap-server")
    # read once every file and option is checked (run_verify_reassignment calls it)
    live = (lambda: read_live(bootstrap_server, command_config)) if bootstrap_server is not None else None
    assert proposed is not None  # both given, or the live cluster and the plan
    return run_verify_reassignment(current, proposed, brokers_file, min_insync_replicas, controller, json_out,
                                   threshold, max_replicas_per_broker, junit_xml, prof, gs, live)


# kcheck/sweep.py: PySpark sweeps over generated spaces
app.command("sweep")(isolating(("placer", "assignor"), gate=True)(sweep_command))
# kcheck/replication_cli.py: the replication state-machine model
app.command("explore")(isolating(("protocol", "invariants"))(explore_command))
app.command("exhaust")(isolating(("protocol", "invariants"))(exhaust_command))
app.command("replay")(isolating(("protocol", "invariants"))(replay_command))
app.command("variants")(variants_command)
# kcheck/liveness_cli.py: fair cycles, healing runs, KAFKA-19975
app.command("liveness")(isolating(("protocol", "invariants"))(liveness_command))
app.command("rules")(rules_command)  # kcheck/rules_cli.py: the protocol's rules, for rule writers
app.command("plan")(plan_command)  # gate/plan.py: the fewest moves that clear the hard violations
app.add_typer(cluster_command, name="cluster")  # cluster/local.py: a real KRaft cluster on 127.0.0.1
app.command("chaos")(chaos_command)  # cluster/chaos.py: fault campaigns with history checking
app.command("verify-log")(verify_log_command)  # inputs/log_tools.py: kafka-dump-log output checked
app.command("verify-group")(verify_group_command)  # gate/group.py: kafka-consumer-groups --describe output
app.command("log")(log_command)  # simulation/storage.py: a topic's storage simulated step by step
app.command("sweep-log")(sweep_log_command)  # simulation/storage.py, spark_check/log_sweep.py: of topic x workload


@app.command("kafka-classpath")
def kafka_classpath(
    kafka_version: Annotated[str | None, typer.Option(
        help="The Kafka release (default: the newest kcheck knows that resolves).")] = None,
) -> int:
    """Print a Kafka release's jars as a classpath, to compile jvm:<class> plug-ins against:
    javac -cp "$(kcheck kafka-classpath)" -d classes MyPlacer.java."""
    from kcheck.reference.kafka_jars import KafkaBridgeError, default_version, resolve

    version = _requested_release(kafka_version)  # a known release, before the cache or Maven is touched
    try:
        release = resolve(version) if version is not None else resolve(default_version())
    except KafkaBridgeError as e:
        raise InputError("--kafka-version", formats.one_line(str(e))) from None
    print(release.classpath)
    return 0


@app.command("invariants")
def list_invariants() -> int:
    """List every invariant kcheck knows, with its severity and source."""
    table = Table(title="Invariants", title_justify="left")
    for col in ("id", "severity", "title", "source"):
        table.add_column(col, overflow="fold")
    for inv in REGISTRY.values():
        table.add_row(inv.id, str(inv.severity), inv.title, inv.source)
    report.console().print(table)
    return 0


def main(argv: list[str] | None = None) -> int:
    global _debug
    _debug = False  # main() may run many times in one process (tests)
    with interrupts.handling():
        try:
            code = _main(argv)
        except interrupts.Interrupted:
            code = interrupts.INTERRUPTED
        except BaseException:
            if interrupts.interrupted() is None:
                raise
            code = interrupts.INTERRUPTED  # whatever the interrupt became on its way up (a library's own error)
        if interrupts.interrupted() is not None:  # one line, exit 130, nothing left running, no partial file
            interrupts.cleanup()
            print(interrupts.line(), file=sys.stderr)
            interrupts.exit_now(interrupts.INTERRUPTED)
            return interrupts.INTERRUPTED
    return code


def _error(message: str) -> int:
    if interrupts.interrupted() is not None:  # an error the interrupt caused: main() prints the one line
        raise interrupts.Interrupted()
    print(f"kcheck: error: {message}", file=sys.stderr)
    return 2


_command: Any = None  # the Click command, built once per process (Typer's build costs 0.1-0.3 s)


def _main(argv: list[str] | None) -> int:
    global _command
    if _command is None:
        _command = typer.main.get_command(app)
    command = _command
    return _main_errors(lambda: command.main(args=argv, prog_name="kcheck", standalone_mode=False))


def _main_errors(run: Any) -> int:
    """run()'s exit status; bad input and failing plug-ins as one line on stderr, exit 2."""
    try:
        code = run()
    except ClickException as e:  # usage errors: unknown option, bad integer, missing argument
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `kcheck`: the help, as `kcheck --help` prints it
            if e.format_message():
                print(e.format_message())
            return 0
        return _error(formats.one_line(e.format_message()))
    except InputError as e:
        return _error(str(e))
    except PluginError as e:  # the user's module:object failed; one line unless --debug
        if _debug and interrupts.interrupted() is None:
            traceback.print_exception(e, file=sys.stderr)
        return _error(str(e))
    except KafkaError as e:
        return _error(formats.one_line(f"{type(e).__name__}: {e}"))
    except BrokenPipeError:  # e.g. `kcheck place ... | head`
        return 0
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
