"""`kcheck plan`: the fewest moves that clear every hard placement violation (kcheck.gate.plan), printed or
written as the reassignment JSON Kafka takes."""

from __future__ import annotations

import json
import math
from typing import Annotated

import typer

from kcheck import report
from kcheck.gate import policy as gate
from kcheck.gate.plan import (
    DEFAULT_TIMEOUT,
    Incomplete,
    Infeasible,
    PlanProblem,
    _summary_table,
    judged,
    plan_json,
    solve,
    verdict,
)
from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.invariants import BalanceSettings
from kcheck.model import INT32_MAX, Broker, Cluster
from kcheck.options import DecommissionOpt
from kcheck.runtime.exit_codes import Exit


def _id_list(text: str, option: str) -> frozenset[int]:
    from kcheck.options import int_list

    return frozenset(int_list(text, option))


def read_problem(current_path: str, brokers_file: str | None, decommission: str | None, add_brokers: str | None,
                 threshold: float, max_replicas_per_broker: int, min_isr: int | None,
                 balance: bool) -> tuple[PlanProblem, str, str]:
    """The problem from the command's inputs: (problem, CURRENT's name, the block of it used)."""
    from kcheck.gate import policy as gate
    from kcheck.gate.reassign import _read, topic_min_isr
    from kcheck.options import balance_options

    balance_options(threshold, max_replicas_per_broker)
    if min_isr is not None and not 1 <= min_isr <= INT32_MAX:
        raise InputError("--min-insync-replicas", f"{min_isr} is outside 1..{INT32_MAX}")
    leaving = gate.gate_settings(None, None, decommission, "hard")
    added = _id_list(add_brokers, "--add-brokers") if add_brokers is not None else frozenset()
    text, source = _read(current_path)
    current, block = formats.parse_pasted(text, source, "current")
    moving = [p for p in current if p.adding or p.removing]
    if moving:
        raise InputError(source, f"partition {moving[0].tp} has a reassignment in flight (Adding/Removing Replicas): "
                                 "let it complete or cancel it (kafka-reassign-partitions --cancel) before planning")
    held = set(current.broker_ids())
    if brokers_file:
        cluster = formats.parse_brokers(formats.read_text(brokers_file), brokers_file)
        if cluster.rack_layout == "mixed":
            formats.check_plan_brokers((), cluster, source, brokers_file)  # its one-line refusal of a mix
        missing = sorted(added - set(cluster.broker_ids))
        if missing and cluster.rack_layout == "full":
            raise InputError("--add-brokers", f"broker {missing[0]} is not in {brokers_file}: add it there with its "
                                              "rack")
        cluster = Cluster((*cluster.brokers, *(Broker(b) for b in missing)))
    else:
        cluster = Cluster.of(sorted(held | added))
    busy = sorted(added & held)
    if busy:
        raise InputError("--add-brokers", f"broker {busy[0]} already holds replicas in {source}: it is not new")
    gate.check_decommission(leaving, set(cluster.broker_ids) | held)
    if leaving.decommission & added:
        raise InputError("--decommission", f"broker {min(leaving.decommission & added)} is also in --add-brokers")
    settings = BalanceSettings(replica_threshold=threshold, leader_threshold=threshold, follower_threshold=threshold,
                               max_replicas_per_broker=max_replicas_per_broker)
    problem = PlanProblem(current, cluster, leaving.decommission, settings, balance, topic_min_isr(text), min_isr)
    return problem, source, block


def run_plan(current: str, brokers_file: str | None, decommission: str | None, add_brokers: str | None,
             threshold: float, max_replicas_per_broker: int, min_isr: int | None, balance: bool, timeout: float,
             out: str | None, json_out: bool) -> int:
    from kcheck import junit
    if not (math.isfinite(timeout) and 0 < timeout <= 86_400):
        raise InputError("--timeout", f"{timeout} is outside (0, 86400] seconds")
    out_path = junit.output_path(out, "--out", [current, brokers_file]) if out is not None else None
    problem, source, block = read_problem(current, brokers_file, decommission, add_brokers, threshold,
                                          max_replicas_per_broker, min_isr, balance)
    err = report.console(stderr=True)
    from kcheck.runtime import interrupts
    interrupts.z3_interruptible()
    try:
        plan = solve(problem, timeout)
    except Infeasible as e:
        message = formats.one_line(f"no plan: {e}")
        if json_out:
            print(json.dumps({"current": source, "current_block": block, "feasible": False, "reason": str(e),
                              "exit_status": int(Exit.FAILED)}, indent=2))
        err.print(f"FAIL: {message}", markup=False, soft_wrap=True)
        return Exit.FAILED
    except Incomplete as e:
        if json_out:
            print(json.dumps({"current": source, "current_block": block, "feasible": None, "reason": str(e),
                              "exit_status": int(Exit.INCOMPLETE)}, indent=2))
        err.print(formats.one_line(f"INCOMPLETE: {e}"), markup=False, soft_wrap=True)
        return Exit.INCOMPLETE
    text = formats.format_reassignment_json(plan.proposed) if len(plan.proposed) else None
    j = judged(plan)
    if out_path and text is not None:
        junit.write_atomic(out_path, (text + "\n").encode("utf-8"))
    if json_out:
        print(json.dumps(plan_json(plan, source, block, out_path if text is not None else None, j), indent=2))
    elif text is not None and out_path is None:
        print(text)
    err.print(f"Read {formats.shown(source)}: {block}.", markup=False, soft_wrap=True)
    err.print(_summary_table(plan))
    if j.introduced or j.changed or j.unchanged or j.fixed:
        err.print(gate.judged_table(j, "Findings after the plan against the cluster now (soft ones are not "
                                       "constrained; every hard one is fixed)"))
    for i, why in list(problem.frozen.items())[:20]:
        err.print(f"Not moved: partition {formats.shown(str(problem.partitions[i].tp))}: {why} (moving it fails "
                  "verify-reassignment's safety checks).", markup=False, soft_wrap=True)
    if text is None:
        err.print("Nothing to move: the cluster already meets every hard invariant"
                  + (" and the balance limits." if problem.balance else "."), markup=False, soft_wrap=True)
    else:
        where = f" written to {formats.shown(out_path)}" if out_path else ""
        err.print(f"Plan{where}: {len(plan.proposed)} partition(s) change. Checked move by move as "
                  "verify-reassignment checks it: 0 hard findings.", markup=False, soft_wrap=True)
    err.print(verdict(plan), markup=False, soft_wrap=True)
    return Exit.OK


def plan_command(
    current: Annotated[str, typer.Argument(help="The cluster now: kafka-topics --describe output, a reassignment "
                                                "JSON, or kafka-reassign-partitions output ('-': stdin).")],
    brokers_file: Annotated[str | None, typer.Option(help="Broker racks: JSON, or id:rack lines. Brokers listed "
                                                          "that hold nothing are the new ones.")] = None,
    decommission: DecommissionOpt = None,
    add_brokers: Annotated[str | None, typer.Option(
        "--add-brokers", metavar="IDS", help="New brokers (without --brokers-file, or without racks), e.g. 7,8.")]
    = None,
    threshold: Annotated[float, typer.Option(help="Replica and leader balance threshold (Cruise Control's).")] = 1.10,
    max_replicas_per_broker: Annotated[int, typer.Option(help="max.replicas.per.broker")] = 10_000,
    min_insync_replicas: Annotated[int | None, typer.Option(
        help="min.insync.replicas for every topic (default: the describe's Configs, else 1).")] = None,
    balance: Annotated[bool, typer.Option("--balance/--no-balance",
                                          help="Meet the balance limits too (default), or clear the hard "
                                               "violations only.")] = True,
    timeout: Annotated[float, typer.Option(
        help="Seconds the solver may spend; past them the best plan found is printed with its lower bound, not "
             "called minimal.")] = DEFAULT_TIMEOUT,
    out: Annotated[str | None, typer.Option("--out", metavar="FILE",
                                            help="Write the reassignment JSON to FILE instead of stdout.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the plan and its figures as JSON.")] = False,
) -> int:
    """Propose the fewest replica moves, then preferred-leader changes, that clear every hard violation and meet the
    balance limits: Kafka's reassignment JSON, proved minimal where the solver can.

    Exit 0 with a plan (or nothing to move), 1 when no plan meets the constraints (the reason is printed), 4 when
    the solver found none within --timeout or the problem is above its size limit (partitions x brokers), 2 on bad
    input. Every plan is checked move by move as verify-reassignment checks it before it is printed."""
    return run_plan(current, brokers_file, decommission, add_brokers, threshold, max_replicas_per_broker,
                    min_insync_replicas, balance, timeout, out, json_out)
