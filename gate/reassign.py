"""`kcheck reassign` (a reassignment, step by step) and `kcheck verify-reassignment` (plan safety).

`reassign` runs the reference controller (`reference/reassignment.py`) on one partition and prints
what ZooKeeper (or the KRaft metadata log) holds after each step. By default it prints the rows of
Kafka's own `onPartitionReassignment` comment (the seed's table); `--all-steps` prints every
sub-step with epochs and the controller's memory.

`verify-reassignment` reads the cluster as it is (`kafka-topics --describe`, or a reassignment
JSON) and a proposed plan (reassignment JSON) and checks every moved partition with the plan-safety
invariants (`invariants/reassignment.py`) and the target placement with the placement invariants.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from kcheck import report
from kcheck.gate import policy as gate
from kcheck.gate.policy import GateSettings
from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.invariants import BalanceSettings, PlacementSubject, Report, Severity, check_placement
from kcheck.invariants.partition_health import check_partition_health
from kcheck.invariants.placement import LEAVING
from kcheck.invariants.reassignment import (
    CONTROLLERS,
    PartitionMove,
    ReassignmentSubject,
    check_reassignment,
    target_assignment,
)
from kcheck.model import INT32_MAX, NO_LEADER, Cluster, ReplicaAssignment
from kcheck.reference.reassignment import (
    KRaftControllerState,
    TraceRow,
    ZkControllerState,
    kraft_reassignment_steps,
    zk_reassignment_steps,
)
from kcheck.reference.releases import DEFAULT_VERSION

# ---------------------------------------------------------------------------------------------
# kcheck reassign


def fmt_set(items: Sequence[int]) -> str:
    """`{4, 5, 6, 1, 2, 3}`, as Kafka's comment and the seed write replica sets."""
    return "{" + ", ".join(map(str, items)) + "}"


def _leader(leader: int) -> str:
    return "none" if leader == NO_LEADER else str(leader)


def seed_rows(rows: list[TraceRow]) -> list[tuple[str, str, str, str, str, str]]:
    """(RS, AR, RR, leader, ISR, phase) of the rows Kafka's comment shows, from ZooKeeper's values.

    RS, AR and RR keep their order; the ISR is a set, shown sorted (Kafka's list order is a Scala Set's).
    """
    out = []
    for r in rows:
        if r.seed_row is None:
            continue
        assert isinstance(r.state, ZkControllerState)
        a, lai = r.state.zk.assignment, r.state.zk.leader_and_isr
        out.append((fmt_set(a.replicas), fmt_set(a.adding_replicas), fmt_set(a.removing_replicas),
                    _leader(lai.leader), fmt_set(sorted(lai.isr)), r.seed_row))
    return out


def _zk_detail(r: TraceRow) -> list[str]:
    st = r.state
    assert isinstance(st, ZkControllerState)
    a, lai = st.zk.assignment, st.zk.leader_and_isr
    memory = "=" if st.assignment == a else fmt_set(st.assignment.replicas)
    return [r.label, fmt_set(a.replicas), fmt_set(a.adding_replicas), fmt_set(a.removing_replicas),
            _leader(lai.leader), ",".join(map(str, lai.isr)), str(lai.leader_epoch), str(lai.partition_epoch),
            memory, r.seed_row or ""]


def _kraft_detail(r: TraceRow) -> list[str]:
    st = r.state
    assert isinstance(st, KRaftControllerState)
    p = st.registration
    rec = st.last_record
    fields = [] if rec is None else [k for k, v in (
        ("leader", rec.leader != -2), ("isr", rec.isr is not None), ("replicas", rec.replicas is not None),
        ("removing", rec.removing_replicas is not None), ("adding", rec.adding_replicas is not None),
        ("elr", rec.elr is not None), ("recovery", rec.leader_recovery_state is not None)) if v]
    return [r.label, fmt_set(p.replicas), fmt_set(p.adding_replicas), fmt_set(p.removing_replicas),
            _leader(p.leader), ",".join(map(str, p.isr)), str(p.leader_epoch), str(p.partition_epoch),
            "-" if r.label == "initial" else ("none" if rec is None else ", ".join(fields))]


def _row_json(r: TraceRow) -> dict[str, Any]:
    st = r.state
    if isinstance(st, ZkControllerState):
        a, lai = st.zk.assignment, st.zk.leader_and_isr
        return {"step": r.label, "seed_row": r.seed_row, "zookeeper": {
            "replicas": list(a.replicas), "adding_replicas": list(a.adding_replicas),
            "removing_replicas": list(a.removing_replicas), "leader": lai.leader, "leader_epoch": lai.leader_epoch,
            "isr": list(lai.isr), "partition_epoch": lai.partition_epoch},
            "controller_memory": {"replicas": list(st.assignment.replicas),
                                  "adding_replicas": list(st.assignment.adding_replicas),
                                  "removing_replicas": list(st.assignment.removing_replicas),
                                  "being_reassigned": st.being_reassigned,
                                  "pending": [p.name for p in st.pending]}}
    p = st.registration
    return {"step": r.label, "registration": {
        "replicas": list(p.replicas), "adding_replicas": list(p.adding_replicas),
        "removing_replicas": list(p.removing_replicas), "leader": p.leader, "leader_epoch": p.leader_epoch,
        "isr": list(p.isr), "partition_epoch": p.partition_epoch}}


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


# ---------------------------------------------------------------------------------------------
# kcheck verify-reassignment

_MIN_ISR_RE = re.compile(r"(?:^|[\s,])min\.insync\.replicas=([0-9]+)")
_TOPIC_RE = re.compile(r"(?:^|\s)Topic:\s*(\S+)")


def topic_min_isr(text: str) -> dict[str, int]:
    """`min.insync.replicas` from the `Configs:` of describe's topic lines (partition lines have no Configs)."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        if "Configs:" not in line or re.search(r"(?:^|\s)Partition:", line):
            continue
        topic, value = _TOPIC_RE.search(line), _MIN_ISR_RE.search(line.split("Configs:", 1)[1])
        if topic and value:
            found[topic.group(1)] = int(value.group(1))
    return found


def _read(path: str) -> tuple[str, str]:
    source = "<stdin>" if path == "-" else path
    text = sys.stdin.read() if path == "-" else formats.read_text(path)
    if not text.strip():
        raise InputError(source, "is empty")
    return text, source


def _pasted(text: str, source: str, want: str) -> tuple[ReplicaAssignment, str]:
    """CURRENT or PROPOSED read by `formats.parse_pasted`; a block it refuses names the argument that reads it."""
    try:
        return formats.parse_pasted(text, source, want)
    except formats.BlockRefused as e:
        argument = "CURRENT (the cluster as it is)" if e.other == "current" else "PROPOSED (the plan)"
        raise InputError(e.source, f"{e.message}; given as {argument}, kcheck reads {e.what}", e.line) from None


def build_subject(current: ReplicaAssignment, proposed: ReplicaAssignment, cluster: Cluster, proposed_source: str,
                  controller: str, min_isr: int | None, topic_min: dict[str, int],
                  max_replicas_per_broker: int, kafka_version: str | None = None) -> ReassignmentSubject:
    """The plan's moves against the current state; `kafka_version`: whose KRaft controller rules run the moves
    (default the newest release)."""
    by_tp = {p.tp: p for p in current}
    moves = []
    for p in proposed:
        if p.tp not in by_tp:
            raise InputError(proposed_source, f"partition {p.tp} is not in CURRENT (Kafka answers "
                                              "UNKNOWN_TOPIC_OR_PARTITION)")
        cur = by_tp[p.tp]
        if cur.isr is not None:
            stray = [b for b in cur.isr if b not in cur.replicas]
            if stray:
                raise InputError("CURRENT", f"partition {cur.tp}: ISR broker {stray[0]} is not a replica")
        need = min_isr if min_isr is not None else topic_min.get(p.tp.topic, 1)
        moves.append(PartitionMove(cur, p.replicas, controller, kafka_version or DEFAULT_VERSION, need))
    per_topic = {} if min_isr is not None else topic_min
    return ReassignmentSubject(tuple(moves), cluster, per_topic, 1 if min_isr is None else min_isr,
                               max_replicas_per_broker, current)


MAX_ROWS = 200  # above this, the table shows only the moves with problems (--json has them all)


def _moves_table(subject: ReassignmentSubject, violations: dict[str, list[str]], whose: str = "") -> Table:
    shown = subject.moves
    n = len(subject.moves)
    title = f"Moves ({n:,} partition{'' if n == 1 else 's'}{whose})"
    if len(shown) > MAX_ROWS:
        shown = tuple(m for m in shown if str(m.tp) in violations)[:MAX_ROWS]
        title += f"; {len(shown):,} shown, those with problems first (--json lists every move)"
    table = Table(title=title, title_justify="left")
    for col in ("partition", "current", "target", "added", "removed", "transient RS", "leader", "ISR now",
                "lowest ISR", "min ISR", "problems"):
        table.add_column(col, overflow="fold")
    for m in shown:
        if m.is_no_op or not m.leader_must_move:
            leader = _leader(m.leader)
        elif m.predicted_leader == NO_LEADER:
            leader = "none (no ISR replica to elect)"
        else:
            leader = f"{_leader(m.leader)} → {m.predicted_leader}*"
        table.add_row(escape(formats.shown(str(m.tp))), ",".join(map(str, m.current.replicas)),
                      ",".join(map(str, m.target)),
                      ",".join(map(str, m.adding)) or "-", ",".join(map(str, m.removing)) or "-",
                      f"{len(m.transient)} ({','.join(map(str, m.transient))})", leader,
                      ",".join(map(str, m.isr)) + ("" if m.isr_known else " (assumed)"), str(m.lowest_isr),
                      str(subject.min_isr(m.tp.topic)), escape(", ".join(violations.get(str(m.tp), [])) or "-"))
    return table


# The per-move checks that also describe the cluster before any move: an ISR below min.insync.replicas, one at it
# (no headroom: a replication-factor-1 partition has none, moved or not), a broker over max.replicas.per.broker.
BEFORE_THE_MOVE = frozenset({"reassignment.min-isr-now", "reassignment.min-isr-headroom",
                             "reassignment.transient-max-replicas-per-broker"})


def unmoved_findings(subject: ReassignmentSubject) -> Report:
    """What `BEFORE_THE_MOVE` finds with nothing moved (each partition's target its replicas now, nothing in
    flight): the findings the plan found and did not introduce. A plan cannot fix them (the move starts from that
    state), so the gate keeps them unchanged when the target lacks them."""
    still = tuple(dataclasses.replace(m, current=dataclasses.replace(m.current, adding=(), removing=()),
                                      target=m.current.replicas) for m in subject.moves)
    return check_reassignment(dataclasses.replace(subject, moves=still), set(BEFORE_THE_MOVE))


def _merge(a: Report, b: Report) -> Report:
    return Report((*a.checked, *b.checked), {**a.skipped, **b.skipped}, (*a.violations, *b.violations))


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
    from kcheck.cli import balance_options

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
    # reassignment.min-isr-now already reports an ISR below min.insync.replicas on a moved partition
    health = Report(tuple(i for i in health.checked if i != "health.under-min-isr"), health.skipped,
                    tuple(v for v in health.violations if v.invariant != "health.under-min-isr"))
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


def _move_json(m: PartitionMove, s: ReassignmentSubject) -> dict[str, Any]:
    return {"partition": str(m.tp), "current": list(m.current.replicas), "target": list(m.target),
            "adding": list(m.adding), "removing": list(m.removing), "transient_replicas": list(m.transient),
            "transient_size": len(m.transient), "leader": m.leader, "leader_must_move": m.leader_must_move,
            "predicted_leader": None if m.predicted_leader == NO_LEADER else m.predicted_leader,
            "isr": list(m.isr), "isr_known": m.isr_known, "lowest_isr_during_move": m.lowest_isr,
            "final_replicas": list(m.final_replicas), "completes": m.completes,
            "min_insync_replicas": s.min_isr(m.tp.topic)}
