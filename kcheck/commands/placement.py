"""`kcheck place`, `prove` and `optimize`: Kafka's placers run, proved with Z3 (or run on every configuration),
and compared with the best placement the cluster allows."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from kcheck import report
from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.invariants import REGISTRY, PlacementSubject, Severity, check_placement
from kcheck.model import INT16_MAX, INT32_MAX, Cluster, ReplicaAssignment
from kcheck.options import (
    AgainstKafka,
    Brokers,
    Classpath,
    JunitXml,
    KafkaVersion,
    Partitions,
    PlacerName,
    Racks,
    ReplicationFactor,
    Seed,
    StartIndex,
    algorithm_release,
    bounded_int,
    finite_float,
    int_list,
    java_random,
    load_jvm_classpath,
    parse_rack_map,
    requested_release,
)
from kcheck.reference.errors import KafkaError
from kcheck.reference.placers import resolve_placer
from kcheck.runtime import interrupts

# Refused before any work: sizes whose answer would not come in reasonable time (measured on 2 cores: `place`
# takes 9 s for 200,000 partitions x RF 3 with --report, 26 s and 1 GB for 1,000,000; `optimize`'s Z3 takes
# seconds up to ~1,000 partition-replica-broker triples, then minutes or gives up).
MAX_PLACE_PARTITIONS = 200_000  # also the per-cluster partition count Kafka's ZooKeeper-era guidance names


MAX_PLACE_REPLICAS = 1_000_000  # partitions x replication factor


MAX_OPTIMIZE_PARTITIONS = 64


MAX_OPTIMIZE_PRODUCT = 1_000  # partitions x replication factor x brokers given to Z3


MAX_TIMEOUT = 86_400.0  # seconds per solver query: a day


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
    bounded_int("--start-partition", start_partition, -1, INT32_MAX, "-1: after the existing ones")
    if start_partition >= 0 and start_partition + partitions - 1 > INT32_MAX:
        raise InputError("--start-partition", f"partition ids {start_partition}..{start_partition + partitions - 1} "
                                              f"go above {INT32_MAX} (Kafka's int32 maximum)")
    if (problem := formats.topic_problem(topic)) is not None:
        raise InputError("--topic", problem)
    ids = int_list(brokers, "--brokers")
    rack_map = parse_rack_map(racks, ids) if racks else {}
    fenced_ids = int_list(fenced, "--fenced") if fenced is not None else []
    unknown = [b for b in fenced_ids if b not in ids]
    if unknown:
        raise InputError("--fenced", f"broker {unknown[0]} is not in --brokers")
    cluster = Cluster.of(ids, rack_map, fenced_ids)
    requested = requested_release(kafka_version, against_kafka)
    load_jvm_classpath(classpath, requested)
    try:
        info = resolve_placer(placer)
    except ValueError as e:
        raise InputError("--placer", str(e)) from None
    prof = algorithm_release(info.name, requested, against_kafka is not None)
    if start_index >= 0 and not info.has_start_index:
        raise InputError("--start-index", f"the {info.name} placer has no start index; use --seed")
    if against_kafka is not None:
        return _place_against_kafka(info.name, cluster, partitions, replication_factor, start_index, start_partition,
                                    seed, topic, prof)
    try:
        placement = info.place(list(cluster.brokers), partitions, replication_factor, start_index,
                               start_partition, java_random(seed))
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
    bounded_int("--start-index", start_index, -1, INT32_MAX, "-1: a random start")


# The option behind each of Kafka's placement errors, so the one-line error names it.
_PLACER_ERROR_OPTION = {"InvalidPartitionsException": "--partitions",
                        "InvalidReplicationFactorException": "--replication-factor",
                        "AdminOperationException": "--racks", "BrokerNotAvailableException": "--brokers"}


def _placer_error(placer: str, e: KafkaError, release: Any = None) -> InputError:
    """A placer's refusal in one line, worded as the release words it (`release`: a ReleaseProfile)."""
    option = _PLACER_ERROR_OPTION.get(type(e).__name__, "--brokers")
    message = release.striped_refusal(str(e)) if release is not None and placer == "striped" else str(e)
    return InputError(f"{option} ({placer} placer)", f"{type(e).__name__}: {message}")


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
    java_random(seed)  # checked: an integer within Java's long range
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
    from kcheck.invariants.prover import ALGORITHMS

    junit_path = junit.output_path(junit_xml, "--junit-xml") if junit_xml is not None else None
    names = [algorithm] if algorithm != "all" else list(ALGORITHMS)
    if placer is None and any(a not in ALGORITHMS for a in names):
        raise InputError("--algorithm", f"'{algorithm}' is not one of {', '.join(ALGORITHMS)}, all")
    ids = list(smt.FORMS) if invariant == "all" else [invariant]
    if any(i not in smt.FORMS for i in ids):
        raise InputError("--invariant", f"'{invariant}' has no Z3 form (one of {', '.join(smt.FORMS)}, or all)")
    bounds = _prove_bounds(max_brokers, max_racks, max_partitions, max_rf, timeout)
    timeout_ms = max(1, int(timeout * 1000))
    _prove_setup(placer, classpath)
    requested = requested_release(kafka_version)
    if placer is None and algorithm == "all" and requested is not None:
        from kcheck.reference.releases import profile

        names = [a for a in names if profile(requested).has(a)]  # the placers this release has
    per_release = {a: algorithm_release(a, requested) for a in (names if placer is None else [])}
    from kcheck.reference.releases import describe as describe_releases

    release = requested or describe_releases(per_release)
    if placer is not None:
        load_jvm_classpath(classpath, requested)
        try:
            info = resolve_placer(placer)
        except ValueError as e:
            raise InputError("--placer", str(e)) from None
        results = list(check_exhaustively(info, ids, bounds, labelled=labelled).values())
    else:
        results = _prove_kafkas(names, ids, bounds, exhaustive, timeout_ms)
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
        _print_proofs(results, hard, ok, release)
    return 0 if ok else 1


def _prove_bounds(max_brokers: int, max_racks: int, max_partitions: int, max_rf: int, timeout: float) -> Any:
    """prove's bounds, each within what the encodings name (brokers) or solve in reasonable time."""
    from kcheck.invariants.prover import RACK_NAMES, Bounds

    for option, value, top in (("--max-brokers", max_brokers, len(RACK_NAMES)), ("--max-racks", max_racks, 10),
                               ("--max-partitions", max_partitions, 64), ("--max-rf", max_rf, 10)):
        if not 1 <= value <= top:
            raise InputError(option, f"{value} is outside 1..{top}")
    if not 0 < finite_float("--timeout", timeout) <= MAX_TIMEOUT:
        raise InputError("--timeout", f"{timeout} is outside (0, {MAX_TIMEOUT:,.0f}] seconds")
    return Bounds(max_brokers, max_racks, max_partitions, max_rf)


def _prove_kafkas(names: list[str], ids: list[str], bounds: Any, exhaustive: bool, timeout_ms: int) -> list[Any]:
    """Kafka's placers: each invariant proved with Z3, or (--exhaustive) every configuration run."""
    from kcheck.invariants.exhaustive import check_exhaustively
    from kcheck.invariants.prover import prove as prove_pair

    results: list[Any] = []
    for name in names:
        info = resolve_placer("striped" if name == "striped" else "adminutils")
        if exhaustive:
            if name == "adminutils-rack-aware":
                continue  # the exhaustive pass of the adminutils placer covers both of its paths
            results += check_exhaustively(info, ids, bounds).values()
            continue
        for inv in ids:
            results.append(prove_pair(name, inv, info, bounds, timeout_ms=timeout_ms))
    return results


def _print_proofs(results: list[Any], hard: list[Any], ok: bool, release: str) -> None:
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


def _prove_setup(placer: str | None, classpath: str | None) -> None:
    """prove's --classpath goes with a jvm: placer only; Z3 is made interruptible (Ctrl-C mid-query)."""
    if placer is None and classpath is not None:
        raise InputError("--classpath", "is for a jvm:<class> --placer; Kafka's own placers need none")
    interrupts.z3_interruptible()


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

    ids = int_list(brokers, "--brokers")
    cluster = Cluster.of(ids, parse_rack_map(racks, ids) if racks else {})
    load_jvm_classpath(classpath)
    try:
        info = resolve_placer(placer)
    except ValueError as e:
        raise InputError("--placer", str(e)) from None
    if partitions < 1 or not 1 <= replication_factor <= len(ids):
        raise InputError("--replication-factor" if partitions >= 1 else "--partitions",
                         f"need partitions >= 1 and 1 <= RF <= {len(ids)} brokers")
    bounded_int("--partitions", partitions, 1, MAX_OPTIMIZE_PARTITIONS, "what Z3 optimises in reasonable time")
    if partitions * replication_factor * len(ids) > MAX_OPTIMIZE_PRODUCT:
        raise InputError("--partitions", f"partitions x replication factor x brokers = "
                                         f"{partitions * replication_factor * len(ids):,} is above kcheck's limit "
                                         f"of {MAX_OPTIMIZE_PRODUCT:,} for Z3 optimisation")
    bounded_int("--start-index", start_index, -1, INT32_MAX, "-1: a random start")
    try:
        placement = info.place(list(cluster.brokers), partitions, replication_factor, start_index, -1,
                               java_random(seed))
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
