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
import re
import sys
from collections.abc import Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.invariants import Report
from kcheck.invariants.reassignment import (
    PartitionMove,
    ReassignmentSubject,
    check_reassignment,
)
from kcheck.model import NO_LEADER, Cluster, ReplicaAssignment
from kcheck.reference.reassignment import (
    KRaftControllerState,
    TraceRow,
    ZkControllerState,
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




def _move_json(m: PartitionMove, s: ReassignmentSubject) -> dict[str, Any]:
    return {"partition": str(m.tp), "current": list(m.current.replicas), "target": list(m.target),
            "adding": list(m.adding), "removing": list(m.removing), "transient_replicas": list(m.transient),
            "transient_size": len(m.transient), "leader": m.leader, "leader_must_move": m.leader_must_move,
            "predicted_leader": None if m.predicted_leader == NO_LEADER else m.predicted_leader,
            "isr": list(m.isr), "isr_known": m.isr_known, "lowest_isr_during_move": m.lowest_isr,
            "final_replicas": list(m.final_replicas), "completes": m.completes,
            "min_insync_replicas": s.min_isr(m.tp.topic)}
