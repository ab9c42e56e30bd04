"""`kcheck transactions exhaust|liveness|rules|variants`: the transactions model (`kcheck.model.transactions`).

Exit status (`kcheck.runtime.exit_codes.Exit`): 0 when the search visited every reachable state within its bounds
and no invariant (liveness: no property) broke; 1 with a counterexample; 2 on bad input; 4 when nothing broke but the
search did not cover its bounds (stopped by --max-states or --max-seconds).
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Annotated, Any

import typer

from kcheck import report
from kcheck.inputs.formats import InputError
from kcheck.invariants.transactions_model import TransactionsModel
from kcheck.model import INT32_MAX
from kcheck.model.transactions import VARIANTS, Config, Rules
from kcheck.model.transactions.model import state_line
from kcheck.options import JsonOpt
from kcheck.runtime.exit_codes import Exit

transactions_command = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                                   help="The transactions model: producers, the coordinator, requests and markers "
                                        "in flight.")

RulesOpt = Annotated[str, typer.Option("--rules", help="current (Kafka 4.4) or a variant (kcheck transactions "
                                                       "variants).")]


def _count(help: str) -> Any:
    return typer.Option(min=0, max=INT32_MAX, help=help)


InstancesOpt = Annotated[int | None, _count("Producer instances sharing the transactional id (1..2).")]
TxnsOpt = Annotated[int | None, _count("Transactions each instance may begin (1..3).")]
PartitionsOpt = Annotated[int | None, _count("Data partitions (1..2).")]
DuplicatesOpt = Annotated[int | None, _count("Requests (produce, InitProducerId, EndTxn, AddPartitionsToTxn, a "
                                             "leader's verification) or markers copied, or delivered with the "
                                             "answer lost (0..3).")]
ClientTimeoutsOpt = Annotated[int | None, _count("Produce requests the client stops waiting for (0..3).")]
TxnTimeoutsOpt = Annotated[int | None, _count("Transactions the coordinator aborts as timed out (0..2).")]
FailoversOpt = Annotated[int | None, _count("Coordinator failovers (0..2).")]
AppendFailuresOpt = Annotated[int | None, _count("Appends to __transaction_state that fail (0..2).")]
MaxStatesOpt = Annotated[int, typer.Option(min=1, max=0xFFFFFFFE, help="Store at most this many states "
                                           "(then incomplete, exit 4).")]
MaxSecondsOpt = Annotated[float, typer.Option(min=0, max=1e9, help="Stop after this many seconds (0: no limit).")]


def _model(rules_name: str, given: dict[str, Any]) -> TransactionsModel:
    """--rules and the bounds given (else the variant's setting, else the defaults); a bad value names its option."""
    if rules_name == "current":
        rules, base = Rules.current(), {}
    elif rules_name in VARIANTS:
        rules, base = VARIANTS[rules_name].rules, dict(VARIANTS[rules_name].settings)
    else:
        raise InputError("--rules", f"unknown rules '{rules_name}' (expected current or one of {', '.join(VARIANTS)})")
    try:
        cfg = Config(**{**base, **{k: v for k, v in given.items() if v is not None}})
    except ValueError as e:
        field = str(e).split(" ", 1)[0]
        option = "--" + field.replace("_", "-") if field in {f.name for f in fields(Config)} else "--rules"
        raise InputError(option, str(e)) from None
    return TransactionsModel(cfg, rules)


def _steps(steps: list[tuple[str, Any]]) -> list[str]:
    return [f"  {n:3d}. {a or '(initial state)'}\n       {state_line(s)}" for n, (a, s) in enumerate(steps)]


@transactions_command.command("exhaust")
def exhaust_command(
    rules: RulesOpt = "current",
    instances: InstancesOpt = None, txns: TxnsOpt = None, partitions: PartitionsOpt = None,
    duplicates: DuplicatesOpt = None, client_timeouts: ClientTimeoutsOpt = None, txn_timeouts: TxnTimeoutsOpt = None,
    failovers: FailoversOpt = None, append_failures: AppendFailuresOpt = None,
    max_states: MaxStatesOpt = 2_000_000,
    max_seconds: MaxSecondsOpt = 0,
    json_out: JsonOpt = False,
) -> int:
    """Visit every state of the transactions model within its bounds (breadth first: each invariant's shortest
    counterexample)."""
    from kcheck.model.search import exhaust

    model = _model(rules, dict(instances=instances, txns=txns, partitions=partitions, duplicates=duplicates,
                               client_timeouts=client_timeouts, txn_timeouts=txn_timeouts, failovers=failovers,
                               append_failures=append_failures))
    r = exhaust(model, max_states=max_states, max_seconds=max_seconds or None, keep_going=True)
    found = r.counterexamples
    everywhere = r.complete or r.covered  # covered: every state visited though a violation was found on the way
    if json_out:
        print(json.dumps({
            "rules": model.rules.name, "config": asdict(model.cfg), "states": r.states, "depth": r.depth,
            "seconds": round(r.seconds, 3), "complete": r.complete, "covered": everywhere,
            "stopped_because": r.stopped_because,
            "violations": [{"invariant": k, "message": cx.message, "steps": [a for a, _ in cx.steps[1:]]}
                           for k, cx in found.items()]}, indent=2))
    else:
        out = report.console()
        out.print(f"transactions model, rules {model.rules.name}: {model.cfg}", markup=False)
        out.print(f"exhaust: {r.states:,} states, depth {r.depth}, {r.seconds:.2f} s"
                  + ("" if everywhere else f", stopped: {r.stopped_because}"), markup=False)
        for k, cx in found.items():
            out.print(f"VIOLATED {k} in {len(cx.steps) - 1} steps: {cx.message}", markup=False)
            for line in _steps(cx.steps):
                out.print(line, markup=False, soft_wrap=True)
        if not found:
            out.print("no invariant broke" + (" in every reachable state" if everywhere else " in the states visited"),
                      markup=False)
    if found:
        return Exit.FAILED
    return Exit.OK if everywhere else Exit.INCOMPLETE


@transactions_command.command("liveness")
def liveness_command(
    rules: RulesOpt = "current",
    instances: InstancesOpt = None, txns: TxnsOpt = None, partitions: PartitionsOpt = None,
    duplicates: DuplicatesOpt = None, client_timeouts: ClientTimeoutsOpt = None, txn_timeouts: TxnTimeoutsOpt = None,
    failovers: FailoversOpt = None, append_failures: AppendFailuresOpt = None,
    max_states: MaxStatesOpt = 2_000_000,
    json_out: JsonOpt = False,
) -> int:
    """A prepared transaction eventually completes, and with none open at the coordinator every partition's last
    stable offset reaches its log end, on every weakly fair run (deliveries fair; kcheck.model.liveness)."""
    from kcheck.model.liveness import check_liveness

    model = _model(rules, dict(instances=instances, txns=txns, partitions=partitions, duplicates=duplicates,
                               client_timeouts=client_timeouts, txn_timeouts=txn_timeouts, failovers=failovers,
                               append_failures=append_failures))
    props = model.liveness()
    r = check_liveness(model, props, max_states=max_states)
    if json_out:
        print(json.dumps({"rules": model.rules.name, "config": asdict(model.cfg), "states": r.states,
                          "complete": r.complete, "seconds": round(r.seconds, 3),
                          "properties": {p.id: {"verdict": r.verdict(p.id), "lasso": None if (la := r.violations[p.id])
                                                is None else {"kind": la.kind, "prefix": [a for a, _ in la.prefix[1:]],
                                                              "cycle": [a for a, _ in la.cycle]}}
                                         for p in props}}, indent=2))
    else:
        out = report.console()
        out.print(f"transactions model, rules {model.rules.name}: {model.cfg}", markup=False)
        out.print(f"liveness: {r.states:,} states, {r.seconds:.2f} s", markup=False)
        for p in props:
            out.print(f"{p.id}: {r.verdict(p.id)}", markup=False)
            lasso = r.violations[p.id]
            if lasso is not None:
                out.print(lasso.message, markup=False)
                for line in _steps(lasso.prefix + lasso.cycle):
                    out.print(line, markup=False, soft_wrap=True)
    if any(v is not None for v in r.violations.values()):
        return Exit.FAILED
    return Exit.OK if r.complete else Exit.INCOMPLETE


@transactions_command.command("rules")
def rules_command(rules: RulesOpt = "current", json_out: JsonOpt = False) -> int:
    """Each decision of the transactions model and the function that makes it (today's, or the rules named)."""
    chosen = _model(rules, {}).rules
    today, mine = Rules.current().rules(), chosen.rules()
    if json_out:
        print(json.dumps({"rules": chosen.name, "decisions": mine}, indent=2))
        return Exit.OK
    report.print_decisions(chosen, mine, today)
    return Exit.OK


@transactions_command.command("variants")
def variants_command(json_out: JsonOpt = False) -> int:
    """The historical rules: each one's JIRA, what went wrong, its smallest setting and the invariants it breaks."""
    rows = report.variant_rows(VARIANTS.values(), Rules.current().rules())
    if json_out:
        print(json.dumps(rows, indent=2))
        return Exit.OK
    report.print_variants(rows)
    return Exit.OK


__all__ = ["transactions_command"]
