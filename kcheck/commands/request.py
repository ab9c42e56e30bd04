"""`kcheck request exhaust|explore|liveness|replay|rules|variants`: the request path's model (`kcheck.model.request`).

Exit status (`kcheck.runtime.exit_codes.Exit`): 0 when exhaust visited every reachable state within its bounds and
no invariant Kafka promises broke; 1 with a counterexample; 2 on bad input; 4 when no invariant broke but the search
did not cover its bounds (exhaust stopped by --max-states or --max-seconds; every clean explore: a random search is
never a proof); replay: 0 when every step ran and no invariant Kafka promises broke, 1 when one did. Findings
(`--findings`: what Kafka does not promise) are printed with their smallest trace and never change the exit status.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from dataclasses import asdict, fields
from typing import Annotated, Any

import typer

from kcheck import report
from kcheck.inputs.formats import InputError, read_text
from kcheck.invariants.request_model import FINDINGS, RequestModel, state_line
from kcheck.model import INT32_MAX
from kcheck.model.request import VARIANTS, Config, Rules, Variant
from kcheck.options import CrashesOpt, ElectionsOpt, IsrShrinksOpt, JsonOpt, MinIsrOpt
from kcheck.reference import plugins
from kcheck.runtime.exit_codes import Exit

request_command = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                              help="The request path's model: a producer's batches from send() to the broker's answer.")

RequestProtocolOpt = Annotated[str, typer.Option(
    "--protocol", help="current (Kafka 4.x), a variant (kcheck request variants) or module:object naming a Rules "
                       "or Variant of kcheck.model.request, or a function returning one.")]


def _count(help: str) -> Any:
    return typer.Option(min=0, max=INT32_MAX, help=help)


RequestBrokersOpt = Annotated[int | None, typer.Option("--brokers", min=0, max=INT32_MAX,
                                                      help="Brokers (1..3), each holding a replica; broker 1 leads.")]
BatchesOpt = Annotated[int | None, _count("Batches the application sends (1..8).")]
InFlightOpt = Annotated[int | None, typer.Option("--max-in-flight", min=0, max=INT32_MAX,
                                                 help="max.in.flight.requests.per.connection (1..5).")]
RetriesOpt = Annotated[int | None, _count("retries (0..8).")]
AcksOneOpt = Annotated[str | None, typer.Option(help="acks: all or 1.")]
IdempotentOpt = Annotated[bool | None, typer.Option("--idempotent/--no-idempotent", help="enable.idempotence.")]
DropsOpt = Annotated[int | None, _count("Connections dropped (0..8).")]
FailuresOpt = Annotated[int | None, _count("Appends that fail after the producer-state checks (0..8).")]
TimeoutsOpt = Annotated[int | None, _count("Batches failed by delivery.timeout.ms before they are drained (0..8).")]
InflightTimeoutsOpt = Annotated[int | None, _count("Batches failed by delivery.timeout.ms after they were drained "
                                                   "(0..8).")]
PartitionsOpt = Annotated[int | None, _count("Partitions the producer writes to (1..2); batch i goes to partition "
                                             "i % partitions.")]
LogStartOpt = Annotated[int | None, _count("DeleteRecords moving the log start to the high watermark (0..8).")]
ExpiriesOpt = Annotated[int | None, _count("Producer-state expiries (producer.id.expiration.ms) (0..8).")]
ClockOpt = Annotated[int | None, _count("Clock ticks; the purgatory's timeouts need some (0..8).")]
SeqMaxOpt = Annotated[int | None, _count("The largest sequence before the wrap to 0 (5..2147483647).")]
MaxStatesOpt = Annotated[int, typer.Option(min=1, max=0xFFFFFFFE, help="Store at most this many states "
                                           "(then incomplete, exit 4).")]
MaxSecondsOpt = Annotated[float, typer.Option(min=0, max=1e9, help="Stop after this many seconds (0: no limit).")]
FindingsOpt = Annotated[bool, typer.Option("--findings", help="Also search for what Kafka does not promise "
                                           "(reported, never failing).")]


# The bounds every search subcommand takes, added to its signature by `_with_bounds` (Typer reads the signature).
_BOUNDS: tuple[tuple[str, Any], ...] = (
    ("brokers", RequestBrokersOpt), ("min_isr", MinIsrOpt), ("acks", AcksOneOpt), ("idempotent", IdempotentOpt),
    ("max_in_flight", InFlightOpt), ("retries", RetriesOpt), ("batches", BatchesOpt), ("partitions", PartitionsOpt),
    ("seq_max", SeqMaxOpt),
    ("drops", DropsOpt), ("elections", ElectionsOpt), ("crashes", CrashesOpt), ("isr_shrinks", IsrShrinksOpt),
    ("append_failures", FailuresOpt), ("delivery_timeouts", TimeoutsOpt), ("inflight_timeouts", InflightTimeoutsOpt),
    ("log_start_moves", LogStartOpt),
    ("expiries", ExpiriesOpt), ("max_clock", ClockOpt))


def _with_bounds(fn: Callable[..., int]) -> Callable[..., int]:
    """`fn(protocol, bounds, ...)` as a command taking --protocol, then every bound as its own option, then the
    rest of `fn`'s options; `bounds` gets the bounds given (None: the variant's or the default)."""
    sig = inspect.signature(fn, eval_str=True)
    own = [p for p in sig.parameters.values() if p.name != "bounds"]
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ann)
             for name, ann in _BOUNDS]

    @functools.wraps(fn)
    def command(**kwargs: Any) -> int:
        bounds = {name: kwargs.pop(name) for name, _ in _BOUNDS}
        return fn(bounds=bounds, **kwargs)

    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
    command.__signature__ = sig.replace(parameters=[params[0], *added, *params[1:]])  # type: ignore[attr-defined]
    command.__annotations__ = {**{p.name: p.annotation for p in own}, **dict(_BOUNDS), "return": int}
    return command


def resolve_rules(spec: str) -> tuple[Rules, Variant | None]:
    """--protocol: today's rules, a variant, or a user's `module:object` (a Rules, a Variant, or a function returning
    one), its rule functions guarded so that what they raise is the plug-in's one-line failure."""
    if spec == "current":
        return Rules.current(), None
    if spec in VARIANTS:
        return VARIANTS[spec].rules, VARIANTS[spec]
    if ":" not in spec:
        raise InputError("--protocol", f"unknown rules '{spec}' (expected current, one of {', '.join(VARIANTS)}, "
                                       "or module:object)")
    try:
        obj = plugins.load(spec)
    except ValueError as e:
        raise InputError("--protocol", str(e)) from None
    if callable(obj) and not isinstance(obj, (Rules, Variant)):
        plugins.takes(spec, obj, 0, "a function taking nothing and returning a Rules or Variant")
        obj = plugins.call(spec, obj)
    if isinstance(obj, Variant):
        return plugins.guard_rules(spec, obj.rules, Rules.rule_names()), obj
    if isinstance(obj, Rules):
        return plugins.guard_rules(spec, obj, Rules.rule_names()), None
    raise InputError("--protocol", f"'{spec}' is a {type(obj).__name__}, not a Rules or Variant of "
                                   "kcheck.model.request")


def build_config(variant: Variant | None, given: dict[str, Any], base: dict[str, Any] | None = None) -> Config:
    """`base` (else the variant's setting, else the defaults) with the options given; a value out of range names its
    option."""
    base = base if base is not None else dict(variant.settings) if variant is not None else {}
    try:
        return Config(**{**base, **{k: v for k, v in given.items() if v is not None}})
    except ValueError as e:
        field = str(e).split(" ", 1)[0]
        option = "--" + field.replace("_", "-") if field in {f.name for f in fields(Config)} else "--protocol"
        raise InputError(option, str(e)) from None


def _model(protocol: str, bounds: dict[str, Any], findings: bool = False) -> RequestModel:
    rules, variant = resolve_rules(protocol)
    return RequestModel(build_config(variant, bounds), rules, findings=findings)


def _trace_lines(cx: Any, model: RequestModel) -> list[str]:
    lines = []
    for n, (action, s) in enumerate(cx.steps):
        lines.append(f"  {n:3d}. {action or '(initial state)'}")
        lines.append(f"       {state_line(s)}")
    return lines


def _print_result(model: RequestModel, r: Any, engine: str, json_out: bool) -> None:
    every = r.counterexamples or ({r.counterexample.invariant: r.counterexample} if r.counterexample else {})
    hard = {k: cx for k, cx in every.items() if k not in FINDINGS}
    found = {k: cx for k, cx in every.items() if k in FINDINGS}
    if json_out:
        print(json.dumps({
            "engine": engine, "rules": model.rules.name, "config": asdict(model.cfg), "states": r.states,
            "transitions": r.transitions, "depth": r.depth, "seconds": round(r.seconds, 3), "complete": r.complete,
            "stopped_because": r.stopped_because,
            "violations": [{"invariant": k, "message": cx.message, "steps": [a for a, _ in cx.steps[1:]]}
                           for k, cx in hard.items()],
            "findings": [{"finding": k, "message": cx.message, "steps": [a for a, _ in cx.steps[1:]]}
                         for k, cx in found.items()]}, indent=2))
        return
    out = report.console()
    out.print(f"request model, rules {model.rules.name}: {model.cfg}", markup=False)
    out.print(f"{engine}: {r.states:,} states, {r.transitions:,} transitions, depth {r.depth}, {r.seconds:.2f} s"
              + ("" if r.complete or hard else f", stopped: {r.stopped_because}"), markup=False)
    for title, group in (("VIOLATED", hard), ("finding", found)):
        for k, cx in group.items():
            out.print(f"{title} {k} in {len(cx.steps) - 1} steps: {cx.message}", markup=False)
            for line in _trace_lines(cx, model):
                out.print(line, markup=False, soft_wrap=True)
    if not hard:
        out.print("no invariant Kafka promises broke" + (" in every reachable state" if r.complete else
                                                          " in the states visited"), markup=False)


def _hard_found(r: Any) -> bool:
    every = r.counterexamples or ({r.counterexample.invariant: r.counterexample} if r.counterexample else {})
    return any(k not in FINDINGS for k in every)


@request_command.command("exhaust")
@_with_bounds
def exhaust_command(
    protocol: RequestProtocolOpt = "current",
    *, bounds: dict[str, Any],
    findings: FindingsOpt = False,
    max_states: MaxStatesOpt = 2_000_000,
    max_seconds: MaxSecondsOpt = 0,
    json_out: JsonOpt = False,
) -> int:
    """Visit every state of the request model within its bounds (breadth first: shortest counterexamples)."""
    from kcheck.model.search import exhaust

    model = _model(protocol, bounds, findings)
    r = exhaust(model, max_states=max_states, max_seconds=max_seconds or None, keep_going=findings)
    _print_result(model, r, "exhaust", json_out)
    if _hard_found(r):
        return Exit.FAILED
    return Exit.OK if (r.complete or r.covered) else Exit.INCOMPLETE


@request_command.command("explore")
@_with_bounds
def explore_command(
    protocol: RequestProtocolOpt = "current",
    *, bounds: dict[str, Any],
    programs: Annotated[int, typer.Option(min=1, max=1_000_000, help="Random programs to run.")] = 200,
    steps: Annotated[int, typer.Option(min=1, max=10_000, help="Steps per program at most.")] = 40,
    seed: Annotated[int, typer.Option(min=0, max=INT32_MAX, help="The search's seed.")] = 0,
    json_out: JsonOpt = False,
) -> int:
    """Random programs through the request model (the one engine's random search); never a proof."""
    from kcheck.model.search import random_search

    model = _model(protocol, bounds)
    r = random_search(model, seed=seed, programs=programs, max_steps=steps)
    _print_result(model, r, "explore", json_out)
    return Exit.FAILED if _hard_found(r) else Exit.INCOMPLETE


@request_command.command("liveness")
@_with_bounds
def liveness_command(
    protocol: RequestProtocolOpt = "current",
    *, bounds: dict[str, Any],
    max_states: MaxStatesOpt = 2_000_000,
    json_out: JsonOpt = False,
) -> int:
    """Every produce request is eventually answered, on every weakly fair run (kcheck.model.liveness)."""
    from kcheck.invariants.request_model import LIVENESS
    from kcheck.model.liveness import check_liveness

    model = _model(protocol, bounds)
    r = check_liveness(model, LIVENESS, max_states=max_states)
    prop = LIVENESS[0]
    lasso = r.violations[prop.id]
    if json_out:
        print(json.dumps({"rules": model.rules.name, "config": asdict(model.cfg), "states": r.states,
                          "complete": r.complete, "seconds": round(r.seconds, 3), "property": prop.id,
                          "verdict": r.verdict(prop.id),
                          "lasso": None if lasso is None else {
                              "kind": lasso.kind, "prefix": [a for a, _ in lasso.prefix[1:]],
                              "cycle": [a for a, _ in lasso.cycle]}}, indent=2))
    else:
        out = report.console()
        out.print(f"request model, rules {model.rules.name}: {model.cfg}", markup=False)
        out.print(f"liveness: {r.states:,} states, {r.seconds:.2f} s; {prop.id}: {r.verdict(prop.id)}", markup=False)
        if lasso is not None:
            out.print(lasso.message, markup=False)
            for n, (action, s) in enumerate(lasso.prefix + lasso.cycle):
                mark = "cycle " if n >= len(lasso.prefix) else ""
                out.print(f"  {n:3d}. {mark}{action or '(initial state)'}\n       {state_line(s)}", markup=False,
                          soft_wrap=True)
    if lasso is not None:
        return Exit.FAILED
    return Exit.OK if r.complete else Exit.INCOMPLETE


# ---- replay ---------------------------------------------------------------------------------------------------------


def _json_line(lines: list[str], step: str, after: int) -> int | None:
    """The line (1-based) where the JSON string `step` next appears after line `after`."""
    needle = json.dumps(step)
    return next((n + 1 for n in range(max(after - 1, 0), len(lines)) if needle in lines[n]), None)


def _json_trace(path: str, text: str) -> tuple[dict[str, Any], str | None, list[tuple[int | None, str]]]:
    """A trace `kcheck request exhaust|explore --json` wrote (its first violation's steps, else its first finding's),
    or an object with `steps` (and optionally `config` and `rules`): (config, rules label, [(line, step)])."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(path, f"invalid JSON: {e.msg}", e.lineno, e.colno) from None
    except (ValueError, RecursionError) as e:
        raise InputError(path, f"invalid JSON: {type(e).__name__}") from None
    if not isinstance(doc, dict):
        raise InputError(path, "expected a JSON object (a trace kcheck request exhaust --json wrote)")
    steps = doc.get("steps")
    if steps is None:
        runs = [r for key in ("violations", "findings") for r in (doc.get(key) or []) if isinstance(r, dict)]
        if not runs:
            raise InputError(path, "no trace in it: no 'steps', and no violation or finding with steps")
        steps = runs[0].get("steps")
    if not isinstance(steps, list) or not all(isinstance(a, str) for a in steps):
        raise InputError(path, "field 'steps': expected a list of action names (strings)")
    config = doc.get("config", {})
    if not isinstance(config, dict):
        raise InputError(path, "field 'config': expected an object")
    kinds = {f.name: type(f.default) for f in fields(Config)}
    for key, value in config.items():
        if key not in kinds:
            raise InputError(path, f"field 'config': unknown setting '{key}'")
        if type(value) is not kinds[key]:
            raise InputError(path, f"field 'config': '{key}' must be {_KINDS[kinds[key]]}, not {_show(value)}")
    rules = doc.get("rules")
    if rules is not None and not isinstance(rules, str):
        raise InputError(path, "field 'rules': expected a string")
    lines, out, at = text.split("\n"), [], 0
    for step in steps:
        line = _json_line(lines, step, at)
        at = line if line is not None else at
        out.append((line, step))
    return config, rules, out


_KINDS = {int: "a whole number", bool: "true or false", str: "a string"}


def _show(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 20 else text[:17] + "..."


def _script(text: str) -> list[tuple[int | None, str]]:
    """A hand-written script: one action a line as `kcheck request exhaust` prints them; # starts a comment."""
    out: list[tuple[int | None, str]] = []
    for n, line in enumerate(text.split("\n"), 1):
        step = line.split("#", 1)[0].strip()
        if step:
            out.append((n, step))
    return out


def _replay_rules(path: str, label: str | None, given: str | None) -> tuple[Rules, Variant | None]:
    """--protocol wins; else the trace's rules, which must be a built-in name (a trace is data: kcheck never loads
    the code a trace names)."""
    if given is not None:
        return resolve_rules(given)
    if label is None or label == "current" or label in VARIANTS:
        return resolve_rules(label or "current")
    raise InputError(path, f"field 'rules': '{label}' is not a built-in rule set; pass --protocol to name the rules "
                           "to replay under")


def replay_trace(model: RequestModel, path: str, steps: list[tuple[int | None, str]]) -> list[tuple[str, Any]]:
    """Run `steps` from the initial state: each must name an action the model can take there (by its printed name);
    [(action, state)], the initial state first."""
    s = model.initial_states()[0]
    out: list[tuple[str, Any]] = [("", s)]
    for n, (line, step) in enumerate(steps, 1):
        nexts = {model.describe(a): nxt for _, a, nxt in model.successors(s)}
        if step not in nexts:
            possible = ", ".join(sorted(nexts)) or "none"
            raise InputError(path, f"step {n} '{step}' is not possible here (possible: {possible})", line)
        s = nexts[step]
        out.append((step, s))
    return out


def _failures(model: RequestModel, s: Any) -> list[tuple[str, str]]:
    return [(inv.id, msg) for inv in model.invariants() if (msg := inv.holds(s)) is not None]


@request_command.command("replay")
@_with_bounds
def replay_command(
    trace_file: Annotated[str, typer.Argument(
        help="A trace `kcheck request exhaust|explore --json` wrote, or a script of action names, one a line.")],
    protocol: Annotated[str | None, typer.Option(
        "--protocol", help="The rules to replay under (default: the trace's, if built in): current, a variant or "
                           "module:object.")] = None,
    *, bounds: dict[str, Any],
    findings: FindingsOpt = False,
    json_out: JsonOpt = False,
) -> int:
    """Replay a trace step by step: each state's client, logs and connections, and where an invariant fails. A bound
    given as an option replaces the trace's setting."""
    text = read_text(trace_file)
    if text.lstrip()[:1] in ("{", "["):
        config, label, steps = _json_trace(trace_file, text)
    else:
        config, label, steps = None, None, _script(text)
    rules, variant = _replay_rules(trace_file, label, protocol)
    try:
        cfg = build_config(variant, bounds, config)
    except InputError as e:
        if config is None or bounds.get(e.source[2:].replace("-", "_")) is not None:
            raise  # an option's value
        raise InputError(trace_file, f"field 'config': {e.message}") from None
    model = RequestModel(cfg, rules, findings=findings)
    run = replay_trace(model, trace_file, steps)
    first: dict[str, tuple[int, str]] = {}
    rows: list[dict[str, Any]] = []
    for n, (action, s) in enumerate(run):
        failing = _failures(model, s)
        for inv, msg in failing:
            first.setdefault(inv, (n, msg))
        rows.append({"step": n, "action": action or None, "state": state_line(s),
                     "failing": [inv for inv, _ in failing]})
    hard = {k: v for k, v in first.items() if k not in FINDINGS}
    if json_out:
        print(json.dumps({"rules": rules.name, "config": asdict(cfg), "steps": rows,
                          "violations": [{"invariant": k, "step": n, "message": m} for k, (n, m) in hard.items()],
                          "findings": [{"finding": k, "step": n, "message": m} for k, (n, m) in first.items()
                                       if k in FINDINGS]}, indent=2))
        return Exit.FAILED if hard else Exit.OK
    out = report.console()
    out.print(f"request model, rules {rules.name}: {cfg}", markup=False)
    for row in rows:
        out.print(f"  {row['step']:3d}. {row['action'] or '(initial state)'}\n       {row['state']}", markup=False,
                  soft_wrap=True)
        for inv in row["failing"]:
            if first[inv][0] == row["step"]:
                title = "finding" if inv in FINDINGS else "VIOLATED"
                out.print(f"       {title} {inv}: {first[inv][1]}", markup=False, soft_wrap=True)
    out.print("FAIL" if hard else f"OK: all {len(run) - 1} steps replayed, no invariant Kafka promises broke.",
              markup=False)
    return Exit.FAILED if hard else Exit.OK


@request_command.command("rules")
def rules_command(protocol: RequestProtocolOpt = "current", json_out: JsonOpt = False) -> int:
    """Each decision of the request model and the function that makes it (today's, or the rules named)."""
    rules, _ = resolve_rules(protocol)
    today = Rules.current().rules()
    mine = rules.rules()
    if json_out:
        print(json.dumps({"rules": rules.name, "decisions": mine}, indent=2))
        return Exit.OK
    report.print_decisions(rules, mine, today)
    return Exit.OK


@request_command.command("variants")
def variants_command(json_out: JsonOpt = False) -> int:
    """The historical rules: each one's JIRA, what went wrong, its smallest setting and the invariant it breaks."""
    rows = report.variant_rows(VARIANTS.values(), Rules.current().rules())
    if json_out:
        print(json.dumps(rows, indent=2))
        return Exit.OK
    report.print_variants(rows)
    return Exit.OK


__all__ = ["build_config", "request_command", "resolve_rules"]
