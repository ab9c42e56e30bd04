"""Rendering: Rich tables for people, JSON for machines (kept separate, as CI tools expect)."""

from __future__ import annotations

import json
import shutil
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kcheck.check import CheckResult, ModelOutcome, RejoinSweep, ReplicationOutcome, failed_any
from kcheck.inputs.formats import printable, terminal_safe
from kcheck.invariants import REGISTRY, Report, Severity
from kcheck.invariants.prover import ProofResult
from kcheck.invariants.replication_searches.runs import ReplayStep
from kcheck.model.replication.actions import Config
from kcheck.model.replication.state import NO_LEADER, State
from kcheck.options import MEANINGS
from kcheck.runtime.exit_codes import Exit

if TYPE_CHECKING:
    from kcheck.reference.spot_checks import SpotOutcome


class _SafeConsole(Console):
    """Rich passes ESC, NUL and other controls through: a name from the user's file could drive the terminal.
    Every string printed, table cells and titles included, goes through render_str."""

    def render_str(self, text: str, **kwargs: Any) -> Any:
        return super().render_str(terminal_safe(text), **kwargs)


def console(stderr: bool = False) -> Console:
    """A console that does not wrap long lines into noise when output goes to a file or CI log."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else max(shutil.get_terminal_size((200, 24)).columns, 200)
    return _SafeConsole(file=stream, width=width, soft_wrap=False, highlight=False)


def print_decisions(rules: Any, mine: dict[str, str], today: dict[str, str]) -> None:
    """A model's decisions, one per line with the function that makes it (today's noted where it differs) and the
    first line of that function's docstring: `kcheck request rules`, `kcheck transactions rules`."""
    out = console()
    for name, fn in mine.items():
        changed = "" if fn == today[name] else f"   (today: {today[name]})"
        doc = (getattr(getattr(rules, name), "__doc__", None) or "").split("\n")[0]
        out.print(f"{name}: {fn}{changed}\n    {doc}", markup=False, soft_wrap=True)


def variant_rows(variants: Any, today: dict[str, str]) -> list[dict[str, Any]]:
    """A model's historical rules as rows: name, JIRA, the bug, what it breaks, its smallest setting and the rules it
    changes from `today` (`kcheck request variants`, `kcheck transactions variants`; `--json` prints the rows)."""
    return [{"name": v.name, "jira": v.jira, "bug": v.bug, "violates": list(v.violates), "settings": dict(v.settings),
             "changed": {k: f for k, f in v.rules.rules().items() if f != today[k]}} for v in variants]


def print_variants(rows: list[dict[str, Any]]) -> None:
    out = console()
    for row in rows:
        out.print(f"{row['name']} ({row['jira']}): breaks {', '.join(row['violates'])}\n    {row['bug']}\n"
                  f"    rules: {row['changed']}; setting: {row['settings']}", markup=False, soft_wrap=True)


def violations_table(report: Report, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("severity", "invariant", "where", "violation"):
        table.add_column(col, overflow="fold")
    order = sorted(report.violations, key=lambda v: (v.severity is not Severity.HARD, v.invariant))
    for v in order:
        style = "bold red" if v.severity is Severity.HARD else "yellow"
        # names come from the user's files (members, topics, racks): never let them read as Rich markup
        table.add_row(f"[{style}]{v.severity}[/]", v.invariant, escape(printable(v.where)),
                      escape(printable(v.message)))
    return table


def _not_applicable(report: Report) -> str:
    """Invariants that do not apply, those with one reason named together: '(reason): a, b, c'."""
    by_reason: dict[str, list[str]] = {}
    for inv, why in report.skipped.items():
        by_reason.setdefault(why, []).append(inv)
    parts = [f"{invs[0]} ({why})" if len(invs) == 1 else f"{', '.join(invs)} ({len(invs)}: {why})"
             for why, invs in by_reason.items()]
    return f"; not applicable: {'; '.join(parts)}" if parts else ""


def report_summary(report: Report) -> str:
    hard = len(report.hard_violations)
    soft = len(report.violations) - hard
    verdict = "FAIL" if hard else "OK"
    return (f"{verdict}: {hard} hard and {soft} soft violation(s) over {len(report.checked)} invariant(s)"
            + _not_applicable(report))


def gate_summary(report: Report, judged: Any) -> str:
    """The verdict of a gated command (gate/policy.py): the findings that stand (not suppressed, not fixed), how
    many of them fail the gate (--fail-on), and what the change did."""

    standing = (*judged.introduced, *(c.after for c in judged.changed), *judged.unchanged)
    hard = sum(v.severity is Severity.HARD for v in standing)
    verdict = "FAIL" if judged.exit is Exit.FAILED else "OK"
    return (f"{verdict}: {hard} hard and {len(standing) - hard} soft violation(s) over {len(report.checked)} "
            f"invariant(s); {len(judged.counted)} fail the gate (--fail-on {judged.fail_on}): "
            f"{len(judged.introduced)} introduced, {len(judged.changed)} changed, {len(judged.unchanged)} unchanged, "
            f"{len(judged.fixed)} fixed, "
            f"{len(judged.suppressed)} suppressed"
            + (f" (compared with {judged.against})" if judged.against else "") + _not_applicable(report))


def report_json(report: Report, extra: dict[str, Any]) -> str:
    return json.dumps({
        **extra,
        "ok": extra.get("ok", report.ok),  # a gated command says whether its gate passed
        "checked": list(report.checked),
        "not_applicable": dict(report.skipped),
        "violations": [v.as_dict() for v in report.violations],
    }, indent=2)


def check_table(result: CheckResult) -> Table:
    table = Table(title=f"Placement invariants over {result.cases:,} placements on {result.clusters} clusters",
                  title_justify="left")
    for col in ("placer", "invariant", "severity", "Kafka guarantees", "checked", "violated", "result",
                "smallest counterexample"):
        table.add_column(col, overflow="fold")
    for o in result.outcomes:
        inv = REGISTRY[o.invariant]
        style = {"FAILED": "bold red", "finding": "yellow", "holds": "green", "n/a": "dim"}[o.status]
        example = ""
        if o.smallest is not None:
            example = f"{o.smallest_violations[0].message}\n[dim]{o.smallest.replay()}[/]"
        table.add_row(o.placer, o.invariant, str(inv.severity), "yes" if o.guaranteed else "no",
                      f"{o.checked:,}", f"{o.violated:,}", f"[{style}]{o.status}[/]", example)
    return table


def _model_row(r: Any) -> dict[str, Any]:
    """A request or transactions model row (`kcheck.invariants.request_rows.RequestRow`) for --json."""
    return {"rules": r.rules, "jira": r.jira, "setting": r.setting, "expect_violation": r.expect_violation,
            "states": r.states, "seconds": round(r.seconds, 2), "complete": r.complete, "violated": list(r.violated),
            "trace_steps": r.trace_steps, "detail": r.detail, "findings": r.findings, "engine": r.engine, "ok": r.ok}


def check_json(result: CheckResult) -> str:
    return json.dumps({
        "cases": result.cases,
        "clusters": result.clusters,
        "ok": not failed_any(result),
        "replication_models": [{"protocol": r.protocol, "engine": r.engine, "expect_violation": r.expect_violation,
                                "size": r.size, "seconds": round(r.seconds, 2), "violated": list(r.violated),
                                "trace_steps": r.trace_steps, "detail": r.detail, "ok": r.ok}
                               for r in result.replication],
        "request_models": [_model_row(r) for r in result.request],
        "transactions_models": [_model_row(r) for r in result.transactions],
        "rebalance_models": [{"assignor": m.assignor, "examples": m.examples, "steps": m.steps,
                              "seconds": round(m.seconds, 2), "failure": m.failure,
                              "findings": [{"finding": f.kind, "message": f.message, "story": list(f.story),
                                            "replay": f.group_file()} for f in m.findings]}
                             for m in result.models],
        "rejoin_sweep": None if result.rejoins is None else {
            "space": result.rejoins.space, "groups": result.rejoins.groups,
            "seconds": round(result.rejoins.seconds, 2),
            "outcomes": [{"assignor": o.assignor, "invariant": o.invariant,
                          "result": "FAILED" if o.fails else "finding", "checked": o.checked,
                          "violated": o.violated, "message": o.message, "smallest_group": o.config,
                          "replay": o.replay} for o in result.rejoins.outcomes]},
        "proofs": [r.as_dict() for r in result.proofs],
        "reference_spot_checks": [{"family": o.family, "kafka": o.kafka, "release": o.release, "inputs": o.inputs,
                                   "differences": o.differences, "seconds": round(o.seconds, 2),
                                   "smallest": o.smallest, "skipped": o.skipped, "ok": o.ok}
                                  for o in result.spots],
        "outcomes": [
            {
                "placer": o.placer, "invariant": o.invariant, "severity": str(REGISTRY[o.invariant].severity),
                "guaranteed": o.guaranteed, "checked": o.checked, "violated": o.violated, "result": o.status,
                "smallest_counterexample": None if o.smallest is None else {
                    "replay": o.smallest.replay(),
                    "violations": [v.as_dict() for v in o.smallest_violations],
                },
            }
            for o in result.outcomes
        ],
    }, indent=2)


def _scope(r: ProofResult) -> str:
    if r.scope == "unbounded":
        return "all sizes"
    b = r.bounds
    what = "Z3" if r.scope == "bounded" else "every config, start index and random draw"
    return f"{what}: brokers<={b['brokers']} racks<={b['racks']} partitions<={b['partitions']} rf<={b['rf']}"


def prove_table(results: list[ProofResult],
                title: str = "Placement invariants: proofs and smallest counterexamples") -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("algorithm", "invariant", "severity", "result", "scope", "time", "queries / runs"):
        table.add_column(col, overflow="fold")
    for r in results:
        style = {"proved": "green", "refuted": "bold red", "unknown": "yellow"}.get(r.status, "dim")
        status = r.status if not r.reason or r.status != "unknown" else f"unknown: {r.reason}"
        table.add_row(r.algorithm, r.invariant, str(REGISTRY[r.invariant].severity), f"[{style}]{status}[/]",
                      _scope(r), f"{r.seconds:.2f} s", f"{r.queries:,}")
    return table


def counterexample_lines(r: ProofResult) -> list[object]:
    """A heading, the placement as a table, the violation and the command that replays it."""
    ce = r.counterexample
    assert ce is not None
    racks = ce.cluster.rack_map
    layout = ", ".join(f"{rack}={{{','.join(str(b) for b, x in racks.items() if x == rack)}}}"
                       for rack in ce.cluster.racks) or "no racks"
    if ce.start_index < 0:
        how = "random draws " + str(ce.draws)
    elif ce.start_index == ce.shift:
        how = f"start index {ce.start_index}"
    else:
        how = f"start index {ce.start_index}, shift {ce.shift}"
    table = Table(title_justify="left")
    table.add_column("partition", justify="right")
    table.add_column("replicas")
    if racks:
        table.add_column("racks")
    for p, replicas in sorted(ce.placement.items()):
        row = [str(p), ",".join(map(str, replicas))]
        if racks:
            row.append(",".join(racks[b] for b in replicas))
        table.add_row(*row)
    return [
        f"\n[bold]Smallest counterexample to {r.invariant} ({r.algorithm})[/]: {len(ce.cluster)} brokers, "
        f"racks {layout}, {ce.partitions} partition(s), RF {ce.rf}, {how}",
        table,
        ce.violations[0].message,
        f"replay: {r.replay_command}",
    ]


def models_table(models: list[ModelOutcome]) -> Table:
    table = Table(title="Consumer assignors in the rebalance model (random search, seed 0; guarantees checked after "
                        "every step)",
                  title_justify="left")
    for col in ("assignor", "programs x steps", "time", "result"):
        table.add_column(col, overflow="fold")
    for m in models:
        result = "[green]holds[/]" if not m.failure else f"[bold red]FAILED[/]\n{m.failure}"
        for f in m.findings:  # met by chance at this budget; the rejoin sweep below finds the smallest
            result += f"\n[yellow]finding[/] {escape(f.message)} ({f.steps} events)"
        table.add_row(m.assignor, f"{m.examples} x {m.steps}", f"{m.seconds:.2f} s", result)
    return table


def rejoin_table(sweep: RejoinSweep) -> Table:
    """Failures and stale-claim findings of the rejoin sweep, each with its smallest group and replay file."""
    table = Table(title=f"Consumer assignors on {sweep.groups:,} groups with a time-out and stale rejoin per "
                        f"assignor ({sweep.seconds:.1f} s): guarantees must hold; the stale-claim findings are "
                        "Kafka's own (its StickyAssignor, 3.9.1 to 4.4.0, reproduces them), not run on a cluster",
                  title_justify="left")
    for col in ("assignor", "invariant", "checked", "violated", "result", "smallest group and replay"):
        table.add_column(col, overflow="fold")
    if not sweep.outcomes:
        table.add_row("all", "every guarantee", "", "0", "[green]holds[/]", "")
    for o in sweep.outcomes:
        result = "[bold red]FAILED[/]" if o.fails else "[yellow]finding[/]"
        example = escape(o.message) + "\n" + escape("; ".join(o.config.get("story", [])))
        if o.replay is not None:
            example += f"\n[dim]kcheck assign --assignor {o.assignor} <file>, file: {escape(json.dumps(o.replay))}[/]"
        table.add_row(o.assignor, o.invariant, f"{o.checked:,}", f"{o.violated:,}", result, example)
    return table


def replication_table(outcomes: list[ReplicationOutcome]) -> Table:
    table = Table(title="Replication model: today's protocol must hold, each historical variant must break its row",
                  title_justify="left")
    for col in ("protocol", "engine", "explored", "time", "expected", "result"):
        table.add_column(col, overflow="fold")
    for r in outcomes:
        if r.violated:
            found = f"{', '.join(r.violated)} in {r.trace_steps} steps"
            result = f"[green]{found}[/]" if r.ok else f"[bold red]FAILED[/]: {found}\n{escape(r.detail)}"
        else:
            result = "[green]holds[/]" if r.ok else f"[bold red]FAILED[/]: {escape(r.detail)}"
        if r.detail == "incomplete":
            result += " (search incomplete)"
        table.add_row(r.protocol, r.engine, r.size, f"{r.seconds:.2f} s",
                      "a violation" if r.expect_violation else "no violation", result)
    return table


def spots_table(outcomes: list[SpotOutcome]) -> Table:
    table = Table(title="The request path's references against Kafka's own classes (random inputs, cached releases)",
                  title_justify="left")
    for col in ("family", "Kafka's classes", "release", "inputs", "time", "result"):
        table.add_column(col, overflow="fold")
    for o in outcomes:
        if o.skipped:
            result = f"skipped: {escape(o.skipped)}"
        elif o.ok:
            result = "[green]the same answers[/]"
        else:
            result = f"[bold red]FAILED[/]: {o.differences:,} differ; smallest:\n{escape(o.smallest)}"
        table.add_row(o.family, o.kafka, o.release, f"{o.inputs:,}", f"{o.seconds:.2f} s", result)
    return table


def request_table(rows: list[Any], model: str = "Request path model") -> Table:
    """The request model's rows (`kcheck.invariants.request_rows`), or the transactions model's (the same rows)."""
    table = Table(title=f"{model}: each historical rule must break its property, today's rules must not "
                  "(exhaustive)", title_justify="left")
    for col in ("rules", "setting", "states", "time", "expected", "result"):
        table.add_column(col, overflow="fold")
    for r in rows:
        expected = "findings" if r.findings else ("a violation" if r.expect_violation else "no violation, complete")
        if r.findings:
            result = f"[yellow]{escape(r.detail)}[/]" if r.violated else "[dim]none reached[/]"
        elif r.violated:
            found = f"{', '.join(r.violated)} in {r.trace_steps} steps"
            result = f"[green]{found}[/]" if r.ok else f"[bold red]FAILED[/]: {found}\n{escape(r.detail)}"
        else:
            result = "[green]holds[/]" if r.ok else f"[bold red]FAILED[/]: {escape(r.detail)}"
        name = f"{r.rules} ({r.jira})" if r.jira and r.expect_violation else r.rules
        if r.engine != "exhaust":
            name += f" [{r.engine}]"
        table.add_row(name, r.setting, f"{r.states:,}", f"{r.seconds:.2f} s", expected, result)
    return table


def _replica_cell(s: State, broker: int) -> str:
    r = s.replica(broker)
    log = " ".join(str(rec) for rec in r.log) or "-"
    flags = []
    if not r.alive:
        flags.append("down")
    elif r.known and not r.hosts:
        flags.append("no replica")
    elif r.is_leader:
        flags.append(f"leader e{r.leader_epoch}")
    elif r.known and r.leader != NO_LEADER:
        flags.append(f"follows {r.leader} e{r.leader_epoch}")
    if broker in s.registry.fenced:
        flags.append("fenced")
    return f"{log} | hw {r.hw}" + (f" ({', '.join(flags)})" if flags else "")


def _set(xs: frozenset[int]) -> str:
    return "{" + ", ".join(map(str, sorted(xs))) + "}"


def _assignment(s: State) -> str:
    """RS with AR and RR, as `kafka-topics --describe` shows a partition being reassigned."""
    reg = s.registry
    out = "[" + ",".join(map(str, reg.replicas)) + "]"
    if reg.adding:
        out += " +" + ",".join(map(str, reg.adding))
    if reg.removing:
        out += " -" + ",".join(map(str, reg.removing))
    return out


def trace_table(steps: list[ReplayStep], title: str) -> Table:
    """One row per step, in the style of seed 003's reassignment table: every replica's log with
    record epochs and high watermark, then what the controller stores (replicas with adding (+) and
    removing (-) when they ever differ from every broker, leader, epoch, ISR, ELR)."""
    table = Table(title=title, title_justify="left")
    first = steps[0].state
    show_rs = any(st.state.registry.replicas != tuple(first.brokers) or st.state.registry.reassigning
                  for st in steps)
    table.add_column("step", justify="right")
    table.add_column("action", overflow="fold")
    for b in first.brokers:
        table.add_column(f"broker {b}", overflow="fold")
    for col in (("replicas",) if show_rs else ()) + ("leader", "epoch", "ISR", "ELR"):
        table.add_column(col)
    for st in steps:
        s, reg = st.state, st.state.registry
        label = "initial state" if st.action is None else st.action.label()
        if st.violations:
            label += "  [bold red]<- " + ", ".join(sorted({v.invariant for v in st.violations})) + "[/]"
        table.add_row(str(st.number), label, *(escape(_replica_cell(s, b)) for b in s.brokers),
                      *((_assignment(s),) if show_rs else ()),
                      "none" if reg.leader == NO_LEADER else str(reg.leader), str(reg.leader_epoch),
                      _set(reg.isr), _set(reg.elr) if reg.elr else "")
    return table


def config_line(cfg: Config) -> str:
    """Every setting as its option, its value and what it means: `--min-isr 2 (min.insync.replicas)`."""
    out = []
    for k, v in cfg.as_dict().items():
        if isinstance(v, bool):
            option = {"duplicates": "--duplicates" if v else "--no-duplicates",
                      "atomic_fetch": "--atomic-fetch" if v else "--split-fetch"}[k]
            out.append(f"{option} ({MEANINGS[k]}: {'yes' if v else 'no'})")
            continue
        value = ",".join(v) if isinstance(v, list) else str(v)
        if k == "replication_factor" and v == 0:
            value += f" = {cfg.rf}"
        elif k == "initial_isr" and v == 0:
            value += f" = {cfg.rf}"
        out.append(f"--{k.replace('_', '-')} {value} ({MEANINGS.get(k, k.replace('_', ' '))})")
    return ", ".join(out)
