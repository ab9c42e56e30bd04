"""`kcheck reassign` (one partition's reassignment through Kafka's controller, step by step) and
`kcheck verify-reassignment` (a plan's per-move safety and target placement, judged by the gate;
kcheck.gate.reassign)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from kcheck import report
from kcheck.gate import policy as gate
from kcheck.gate.policy import GateSettings, gate_settings
from kcheck.gate.reassign import (
    BEFORE_THE_MOVE,
    _kraft_detail,
    _merge,
    _move_json,
    _moves_table,
    _pasted,
    _read,
    _row_json,
    _zk_detail,
    build_subject,
    fmt_set,
    seed_rows,
    topic_min_isr,
    unmoved_findings,
)
from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.invariants import BalanceSettings, PlacementSubject, Report, Severity, check_placement
from kcheck.invariants.partition_health import check_partition_health
from kcheck.invariants.placement import LEAVING
from kcheck.invariants.reassignment import (
    CONTROLLERS,
    check_reassignment,
    target_assignment,
)
from kcheck.model import INT32_MAX, Cluster, ReplicaAssignment
from kcheck.options import (
    AllowlistOpt,
    BaselineOpt,
    BootstrapOpt,
    CommandConfigOpt,
    DecommissionOpt,
    FailOnOpt,
    JunitXml,
    algorithm_release,
    balance_options,
    int_list,
    read_live,
    requested_release,
)
from kcheck.reference.reassignment import (
    kraft_reassignment_steps,
    zk_reassignment_steps,
)
from kcheck.reference.releases import DEFAULT_VERSION


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

    if controller not in ("zk", "kraft"):
        raise InputError("--controller", f"'{controller}' is neither zk nor kraft")
    prof = algorithm_release(controller, requested_release(kafka_version))
    return run_reassign(int_list(from_, "--from"), int_list(to, "--to"), leader,
                        int_list(isr, "--isr") if isr is not None else None, controller, all_steps, json_out,
                        leader_epoch, prof)


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
    prof = algorithm_release(controller, requested_release(kafka_version)) if controller in ("zk", "kraft") else None
    if bootstrap_server is None and command_config is not None:
        raise InputError("--command-config", "applies only with --bootstrap-server")
    # read once every file and option is checked (run_verify_reassignment calls it)
    live = (lambda: read_live(bootstrap_server, command_config)) if bootstrap_server is not None else None
    assert proposed is not None  # both given, or the live cluster and the plan
    return run_verify_reassignment(current, proposed, brokers_file, min_insync_replicas, controller, json_out,
                                   threshold, max_replicas_per_broker, junit_xml, prof, gs, live)


def run_reassign(from_: list[int], to: list[int], leader: int | None, isr: list[int] | None,
                 controller: str, all_steps: bool, json_out: bool, leader_epoch: int, release: Any = None) -> int:
    """`release`: the Kafka release's profile (`reference.releases`); its KRaft rules run a kraft move."""
    if leader is not None and leader not in from_:
        raise InputError("--leader", f"broker {leader} is not in --from")
    if isr is not None:
        bad = [b for b in isr if b not in from_]
        if bad:
            raise InputError("--isr", f"broker {bad[0]} is not in --from")
        if (leader if leader is not None else from_[0]) not in isr:
            raise InputError("--isr", "the ISR must contain the leader")
    if leader_epoch < 0:
        raise InputError("--leader-epoch", f"{leader_epoch} is negative")
    if leader_epoch > INT32_MAX:
        raise InputError("--leader-epoch", f"{leader_epoch} is above {INT32_MAX} (Kafka's int32 maximum)")
    if controller == "zk":
        rows = zk_reassignment_steps(from_, to, leader=leader, isr=isr, leader_epoch=leader_epoch)
    else:
        version = {} if release is None else {"version": release.kraft_version()}
        rows = kraft_reassignment_steps(from_, to, leader=leader, isr=isr, leader_epoch=leader_epoch, **version)
    kafka = None if release is None else release.version
    if json_out:
        print(json.dumps({"controller": controller, "kafka_version": kafka, "from": from_, "to": to,
                          "steps": [_row_json(r) for r in rows]}, indent=2))
        return 0
    out = report.console()
    title = (f"{'ZooKeeper' if controller == 'zk' else 'KRaft'} controller{f' (Kafka {kafka})' if kafka else ''}: "
             f"{fmt_set(from_)} to {fmt_set(to)}")
    if controller == "zk" and not all_steps:
        table = Table(title=title + ", as stored in ZooKeeper", title_justify="left")
        for col in ("#", "RS", "AR", "RR", "leader", "ISR", "phase"):
            table.add_column(col, justify="right" if col == "#" else "left")
        for i, row in enumerate(seed_rows(rows), 1):
            table.add_row(str(i), *row)
        out.print(table)
        out.print("ISR shown as a set; --all-steps shows every sub-step, Kafka's ISR order and the epochs.")
        return 0
    table = Table(title=title, title_justify="left")
    cols: tuple[str, ...]
    if controller == "zk":
        cols = ("step", "RS", "AR", "RR", "leader", "ISR", "leader epoch", "zk version", "RS in memory", "row")
        detail = _zk_detail
    else:
        cols = ("event", "replicas", "adding", "removing", "leader", "ISR", "leader epoch", "partition epoch",
                "record fields")
        detail = _kraft_detail
    for col in cols:
        table.add_column(col)
    for r in rows:
        table.add_row(*detail(r))
    out.print(table)
    return 0


def run_verify_reassignment(current_path: str | None, proposed_path: str, brokers_file: str | None,
                            min_isr: int | None, controller: str, json_out: bool, threshold: float,
                            max_replicas_per_broker: int, junit_xml: str | None = None, release: Any = None,
                            gate_settings: GateSettings | None = None, live: Any = None) -> int:
    """`release`: the Kafka release's profile (`reference.releases`), named in the reports; a KRaft move runs its
    controller rules (`invariants.reassignment.PartitionMove`), the newest release's without one.

    `gate_settings` (gate/policy.py): the findings of the target and the moves are judged against those of the
    current placement (introduced, fixed, unchanged), known ones suppressed, and `--fail-on` sets the exit."""
    from kcheck import junit
    gs = gate_settings or gate.gate_settings(None, None, None, "hard")
    junit_path = (junit.output_path(junit_xml, "--junit-xml", [current_path, proposed_path, brokers_file,
                                                               gs.baseline, gs.allowlist])
                  if junit_xml is not None else None)
    if controller not in CONTROLLERS:
        raise InputError("--controller", f"'{controller}' is not one of {', '.join(CONTROLLERS)}")
    if min_isr is not None and min_isr < 1:
        raise InputError("--min-insync-replicas", f"{min_isr} is below 1")
    if min_isr is not None and min_isr > INT32_MAX:
        raise InputError("--min-insync-replicas", f"{min_isr} is above {INT32_MAX} (Kafka's int32 maximum)")

    balance_options(threshold, max_replicas_per_broker)
    if current_path == "-" and proposed_path == "-":
        raise InputError("PROPOSED", "CURRENT and PROPOSED cannot both be stdin")
    # Kafka's tool output as pasted: CURRENT takes a --generate output's Current block, PROPOSED its Proposed one.
    # Every file first: a live cluster (`live`: a LiveState, or a callable that reads it) is asked only then.
    if live is None:
        assert current_path is not None
        current_text, current_source = _read(current_path)
        current, current_block = _pasted(current_text, current_source, "current")
    proposed_text, proposed_source = _read(proposed_path)
    proposed, proposed_block = _pasted(proposed_text, proposed_source, "proposed")
    if proposed_block == "kafka-topics --describe":
        raise InputError(proposed_source, "PROPOSED must be a reassignment JSON "
                                          '({"version":1,"partitions":[...]}) or kafka-reassign-partitions output')
    given_cluster = formats.parse_brokers(formats.read_text(brokers_file), brokers_file) if brokers_file else None
    if live is not None:  # kcheck.cluster.live.LiveState: the live cluster as kafka-topics --describe would print it
        live = live() if callable(live) else live
        current_text, current_source = live.describe_text, live.source
        current, current_block = _pasted(current_text, current_source, "current")
    derived = brokers_file is None and live is None
    if brokers_file or live is not None:  # the brokers file, else the brokers the live cluster reports
        cluster = given_cluster if given_cluster is not None else formats.parse_brokers(live.brokers_text, live.source)
        formats.check_plan_brokers(current, cluster, current_source, brokers_file or live.source)
    else:
        ids = set(current.broker_ids()) | set(proposed.broker_ids())
        cluster = Cluster.of(sorted(ids))
    gate.check_decommission(gs, cluster.broker_ids)
    subject = build_subject(current, proposed, cluster, proposed_source, controller, min_isr,
                            topic_min_isr(current_text), max_replicas_per_broker,
                            None if release is None else release.version)
    safety = check_reassignment(subject)
    settings = BalanceSettings(replica_threshold=threshold, leader_threshold=threshold,
                               follower_threshold=threshold, max_replicas_per_broker=max_replicas_per_broker)
    target = PlacementSubject(cluster, target_assignment(subject), settings, leaving=gs.decommission)
    placement = check_placement(target)
    result = _merge(safety, placement)
    # The cluster as it is, by the same placement checks: what the plan introduces, fixes and leaves unchanged.
    # Replicas on a leaving broker are what a decommission plan must remove: never "unchanged" (--fail-on new).
    before = check_placement(PlacementSubject(cluster, current, settings, leaving=gs.decommission),
                             {i for i in placement.checked if i != LEAVING})
    # CURRENT's health (leader, ISR, ELR, moves in flight) on the partitions the plan moves: a finding of the
    # cluster before the plan, so it is in both reports (unchanged as far as a describe can tell). The health of
    # partitions the plan leaves alone is `kcheck verify`'s to report, not this plan's.
    moved = ReplicaAssignment(tuple(m.current for m in subject.moves), current.replication_factors)
    health = check_partition_health(moved, subject.min_insync_replicas, subject.default_min_insync_replicas,
                                    controller, DEFAULT_VERSION if release is None else release.version)
    # reassignment.min-isr-now already reports an ISR below min.insync.replicas on a moved partition; a topic's
    # zone loss is `kcheck verify`'s (it needs every partition of the topic, and the plan's racks are judged by
    # the placement.rack-* checks)
    left_out = ("health.under-min-isr", "health.zone-loss")
    health = Report(tuple(i for i in health.checked if i not in left_out),
                    {i: why for i, why in health.skipped.items() if i not in left_out},
                    tuple(v for v in health.violations if v.invariant not in left_out))
    result, before = _merge(result, health), _merge(_merge(before, health), unmoved_findings(subject))
    judged = gate.judge(result, before, gs, f"the current placement ({current_source})", BEFORE_THE_MOVE)
    code = int(judged.exit)
    if junit_path:
        junit.write(junit_path, "kcheck verify-reassignment", [junit.TestSuite(
            f"kcheck verify-reassignment {proposed_source}",
            junit.judged_cases(result, judged, "kcheck.verify_reassignment"),
            properties={"current": current_source, "proposed": proposed_source, "current_block": current_block,
                        "proposed_block": proposed_block, "controller": controller,
                        "kafka_version": "" if release is None else release.version,
                        "moves": str(len(subject.moves)), "fail_on": gs.fail_on})])
    notes = ["brokers derived from CURRENT and PROPOSED (no --brokers-file): rack invariants not applicable"] \
        if derived else []
    # A plan that empties a broker is most often a decommission (--generate --broker-list without it): say how to
    # judge it as one, since balance over every broker counts the emptied one as under-loaded.
    emptied = sorted(set(current.broker_ids()) - set(target_assignment(subject).broker_ids()) - gs.decommission)
    if emptied:
        listed = ",".join(map(str, emptied))
        notes.append(f"broker(s) {listed} hold no replica after the plan: if they are leaving the cluster, "
                     f"--decommission {listed} judges balance over the others")
    if json_out:
        print(report.report_json(result, {
            "current": current_source, "proposed": proposed_source, "current_block": current_block,
            "proposed_block": proposed_block, "controller": controller,
            "kafka_version": None if release is None else release.version, "brokers": list(cluster.broker_ids),
            "brokers_derived_from_plan": derived,
            "decommission": sorted(gs.decommission), "emptied_brokers": emptied,
            "moves": [_move_json(m, subject) for m in subject.moves],
            **gate.report_json_fields(result, judged, "verify-reassignment")}))
        return code
    out = report.console()
    for note in notes:
        out.print(f"Note: {note}.", markup=False)
    out.print(f"Read CURRENT {formats.shown(current_source)}: {current_block}; PROPOSED "
              f"{formats.shown(proposed_source)}: {proposed_block}.", markup=False)
    by_partition: dict[str, list[str]] = {}
    for v in result.violations:
        if v.where.startswith("partition "):
            by_partition.setdefault(v.where.removeprefix("partition "), []).append(
                f"{v.invariant}{'' if v.severity is Severity.HARD else ' (soft)'}")
    whose = (f"; Kafka {release.version}'s {'ZooKeeper' if controller == 'zk' else 'KRaft'} controller"
             if release is not None else "")
    out.print(_moves_table(subject, by_partition, whose))
    out.print("* the new leader: the first target replica in the ISR at completion (ONLINE/reassign election).")
    out.print(gate.judged_table(judged, f"Findings of {escape(formats.shown(proposed_source))} on {len(cluster)} "
                                        "brokers" + (f" (Kafka {release.version}, {controller})" if release else "")
                                        + ", against the current placement's"))
    out.print(report.gate_summary(result, judged))
    return code
