"""`kcheck liveness`: the replication model's liveness properties from the command line.

The properties (invariants/replication_liveness.py) say that something good eventually happens under bounded
faults and unbounded healing: an acknowledged record reaches every live ISR member, a reassignment (KIP-455)
completes or is cancelled, a partition with a live eligible replica (ISR or ELR, KIP-966) gets a leader, a
caught-up live replica rejoins the ISR. Two engines (`kcheck.model.liveness`):

- graph (default): every reachable state within the bounds, then fair cycles and terminal states that never meet
  a property's goal. A complete clean run is a proof within the bounds (exit 0).
- random: Hypothesis programs of every action kind, faults included, each healed to quiescence by a fair scheduler
  and judged there. Never a proof (a clean run exits 4).
- both: the graph, then the random runs.

A counterexample is a lasso: a prefix from the initial state, then a cycle the run repeats for ever (or a terminal
state where no progress action is enabled). It is printed as two tables, and `--out FILE` writes prefix and cycle
as one trace that `kcheck replay` reads (the output says at which step the cycle starts).

The liveness row KAFKA-19975 (`--protocol blocked-reassignment-completion`, LIVENESS_VARIANTS in
model/replication/protocol.py) brings its own bounds and model settings (crash-stop brokers, its reassignment
targets); releases before 4.3.0 (`--kafka-version 4.2.2`) have the same completion rule.

Exit status (`runtime/exit_codes.py`): 0 every property holds in a complete graph search, 1 a counterexample, 2 bad
input (one line), 4 no counterexample but nothing proved (a stopped graph search, or random runs only).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field, fields
from typing import Annotated, Any

import typer
from rich.markup import escape

from kcheck import report
from kcheck.errors import run_engine
from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.invariants.replication_liveness import (
    LIVENESS_SETTINGS,
    NOTICE_FAILURE,
    PROPERTY_IDS,
    LivenessModel,
    LivenessSetting,
    properties,
)
from kcheck.invariants.replication_searches.runs import ReplayStep, ResolvedProtocol, Trace
from kcheck.model import INT32_MAX
from kcheck.model.liveness import Lasso, LivenessProperty, LivenessResult, check_liveness, random_liveness
from kcheck.model.replication.actions import Action, Config
from kcheck.model.replication.protocol import LIVENESS_VARIANTS
from kcheck.model.replication.state import State
from kcheck.options import (
    AcksOpt,
    AtomicFetchOpt,
    BrokersOpt,
    CancelsOpt,
    CrashesOpt,
    DuplicatesOpt,
    ElectionsOpt,
    FailoversOpt,
    FencesOpt,
    InitialIsrOpt,
    IsrShrinksOpt,
    JsonOpt,
    KafkaVersionOpt,
    ListOffsetsOpt,
    LossyCrashesOpt,
    MaxLeaderEpochOpt,
    MetadataOpt,
    MinIsrOpt,
    OutOpt,
    ReadsOpt,
    ReassignmentsOpt,
    RecordsOpt,
    ReplicationFactorOpt,
    ShutdownsOpt,
    UncleanElectionsOpt,
    check_out,
    config_option,
    hypothesis_home,
    protocol_option,
    write_trace,
)
from kcheck.report import config_line, trace_table
from kcheck.runtime.exit_codes import Exit

# The bounds a plain `kcheck liveness` checks (a few seconds): two brokers, one record, one crash, one leader move.
DEFAULTS: dict[str, Any] = {"brokers": 2, "min_isr": 1, "records": 1, "max_leader_epoch": 8, "crashes": 1,
                            "lossy_crashes": 0, "fences": 0, "elections": 1, "isr_shrinks": 0, "failovers": 0,
                            "reads": 0, "atomic_fetch": True}
DEFAULT_MAX_STATES = 2_000_000  # the graph keeps every state and edge in memory: about 100 bytes a state
ENGINES = ("graph", "random", "both")


@dataclass
class LivenessRun:
    """What `kcheck liveness` found: per property a verdict and maybe a lasso (the first engine's that found one)."""

    graph: LivenessResult | None = None
    random_programs: int = 0
    random_unsettled: int = 0
    random_seconds: float = 0.0
    lassos: dict[str, tuple[str, Lasso]] = field(default_factory=dict)  # property id -> (engine, lasso)


def _targets(values: list[str] | None, brokers: int) -> tuple[tuple[int, ...], ...] | None:
    """--reassign-target 1,2,3 (repeatable): the target lists the operator may ask for."""
    if not values:
        return None
    out = []
    for v in values:
        if not re.fullmatch(r"[0-9]{1,9}(,[0-9]{1,9})*", v):  # ASCII digits, and few: int() takes '١' and 5,000 9s
            raise InputError("--reassign-target", f"expected broker ids separated by commas such as 1,2,3, not "
                                                  f"'{formats.shown(v, 40)}'")
        t = tuple(int(x) for x in v.split(","))
        if not t or len(set(t)) != len(t) or any(not 1 <= b <= brokers for b in t):
            raise InputError("--reassign-target", f"'{v}': expected distinct broker ids of the cluster (1..{brokers})")
        out.append(t)
    return tuple(out)


def _resolve(protocol: str, kafka_version: str | None) -> ResolvedProtocol:
    if protocol in LIVENESS_VARIANTS:
        if kafka_version is not None:
            raise InputError("--kafka-version", f"applies to --protocol current only, not '{protocol}' (a variant "
                                                "sets every rule itself)")
        v = LIVENESS_VARIANTS[protocol]
        return ResolvedProtocol(v.protocol, protocol, v)
    return protocol_option(protocol, kafka_version)


def _selected(cfg: Config, permanent: bool, chosen: list[str] | None) -> list[LivenessProperty[State]]:
    props = properties(cfg, permanent)
    if not chosen:
        return props
    by_id = {p.id: p for p in props}
    for c in chosen:
        if c not in PROPERTY_IDS:
            raise InputError("--property", f"unknown liveness property '{c}' (expected one of "
                                           f"{', '.join(PROPERTY_IDS)})")
        if c not in by_id:
            raise InputError("--property", f"'{c}' needs a reassignment to check: give --reassignments 1")
    return [by_id[c] for c in dict.fromkeys(chosen)]


def _actions(model: LivenessModel, steps: list[tuple[str, Any]]) -> list[Action]:
    """The model actions behind a run given as (text, state) pairs: the enabled action with that text that leads
    to that state (the controller noticing a failure is the `fence` of a dead broker, as a trace has it)."""
    out: list[Action] = []
    for (_, before), (text, after) in zip(steps, steps[1:], strict=False):
        want = model.encode(after)
        for a in model.actions(before):
            if model.describe(a) == text:
                t = model.step(before, a)
                if t is not None and model.encode(t) == want:
                    out.append(Action("fence", a.args) if a.kind == NOTICE_FAILURE else a)
                    break
        else:  # pragma: no cover - a run the model itself produced
            raise AssertionError(f"no enabled action '{text}' leads to the run's next state")
    return out


def _lasso_steps(model: LivenessModel, lasso: Lasso) -> tuple[list[ReplayStep], int]:
    """The lasso as numbered steps (prefix, then the cycle once) and the number of the prefix's last step."""
    run = lasso.prefix + lasso.cycle
    acts = _actions(model, run)
    steps = [ReplayStep(0, None, run[0][1], ())]
    steps += [ReplayStep(n, a, s, ()) for n, (a, (_, s)) in enumerate(zip(acts, run[1:], strict=True), 1)]
    return steps, len(lasso.prefix) - 1


def _random_lasso(prop_id: str, message: str, program: list[tuple[str, Any]], heal: Any) -> Lasso:
    """A random program and its healing run as a lasso: the healing's closing cycle (or its terminal state)."""
    healing = heal.steps[1:]
    if heal.cycle_start is None:
        return Lasso(prop_id, "terminal", message, program + healing)
    cut = heal.cycle_start
    return Lasso(prop_id, "cycle", message, program + healing[:cut], healing[cut:])


def run_liveness(model: LivenessModel, props: list[LivenessProperty[State]], engine: str, max_states: int,
                 max_seconds: float | None, programs: int, steps: int, heal_steps: int, seed: int) -> LivenessRun:
    out = LivenessRun()
    if engine in ("graph", "both"):
        out.graph = check_liveness(model, props, max_states=max_states, max_seconds=max_seconds,
                                   progress=_progress(max_states) if sys.stderr.isatty() else None)
        for pid, lasso in out.graph.violations.items():
            if lasso is not None:
                out.lassos[pid] = ("graph", lasso)
    if engine in ("random", "both"):
        left = [p for p in props if p.id not in out.lassos]
        if left:
            r = random_liveness(model, left, seed=seed, programs=programs, max_steps=steps, heal_steps=heal_steps)
            out.random_programs, out.random_unsettled, out.random_seconds = r.programs, r.unsettled, r.seconds
            if r.failure is not None:
                program, heal = r.failure
                for pid, why in heal.failed.items():
                    out.lassos[pid] = ("random", _random_lasso(pid, why, program, heal))
    return out


def _progress(max_states: int) -> Any:
    """On a terminal, the graph's growth once a second (stderr): a large bound says how far it is from its cap."""
    def show(states: int, transitions: int, seconds: float) -> None:
        print(f"kcheck liveness: {states:,} of at most {max_states:,} states, {transitions:,} transitions, "
              f"{states / seconds if seconds else 0:,.0f} states/s, {seconds:,.0f} s", file=sys.stderr, flush=True)
    return show


def _verdict(run: LivenessRun, pid: str) -> str:
    if pid in run.lassos:
        return "violated"
    if run.graph is not None and run.graph.complete:
        return "holds"
    return "not violated (proves nothing: " + ("the graph search stopped" if run.graph is not None else
                                               "random runs only") + ")"


def _trace(label: str, cfg: Config, steps: list[ReplayStep]) -> Trace:
    return Trace(label, cfg, tuple(s.action for s in steps[1:] if s.action is not None))


def liveness_command(
    protocol: Annotated[str, typer.Option(
        "--protocol", help="current (the --kafka-version release's rules), a variant: blocked-reassignment-completion "
                           "(KAFKA-19975) or a safety row of kcheck variants, or module:object (your rules).")
                        ] = "current",
    brokers: BrokersOpt = None,
    replication_factor: ReplicationFactorOpt = None,
    min_isr: MinIsrOpt = None,
    initial_isr: InitialIsrOpt = None,
    acks: AcksOpt = None,
    records: RecordsOpt = None, max_leader_epoch: MaxLeaderEpochOpt = None, crashes: CrashesOpt = None,
    lossy_crashes: LossyCrashesOpt = None, fences: FencesOpt = None, elections: ElectionsOpt = None,
    isr_shrinks: IsrShrinksOpt = None, failovers: FailoversOpt = None, reads: ReadsOpt = None,
    reassignments: ReassignmentsOpt = None, cancels: CancelsOpt = None,
    duplicates: DuplicatesOpt = None,
    atomic_fetch: AtomicFetchOpt = None,
    metadata: MetadataOpt = None,
    list_offsets: ListOffsetsOpt = None,
    shutdowns: ShutdownsOpt = None,
    unclean_elections: UncleanElectionsOpt = None,
    permanent_crashes: Annotated[bool | None, typer.Option(
        "--permanent-crashes/--restarts",
        help="Crashed brokers never return (crash-stop: what a reassignment exists to repair) instead of "
             "restarting (default: restarts; KAFKA-19975's row: permanent).")] = None,
    drops: Annotated[bool, typer.Option(
        "--drops/--no-drops",
        help="Let the network lose any message. The model has no retransmission (Kafka's AlterPartitionManager "
             "retries), so one loss can block progress for ever: off by default.")] = False,
    reassign_target: Annotated[list[str] | None, typer.Option(
        "--reassign-target", metavar="IDS",
        help="A target replica list the operator may ask for, such as 1,2,3 (repeatable; default: every list, or "
             "the row's own).")] = None,
    prop: Annotated[list[str] | None, typer.Option(
        "--property", metavar="ID", help=f"Check only this property (repeatable): {', '.join(PROPERTY_IDS)}.")
                    ] = None,
    engine: Annotated[str, typer.Option(
        help="graph: every reachable state, fair cycles and terminal states (a proof within the bounds); random: "
             "Hypothesis programs healed to quiescence (never a proof); both.")] = "graph",
    max_states: Annotated[int, typer.Option(
        min=1, max=0xFFFFFFFE, help="Graph: store at most this many states (then incomplete, exit 4); the "
                                    "default, 2,000,000, takes about 10 minutes on 2 cores, with its "
                                    "progress printed each second on a terminal.")
                          ] = DEFAULT_MAX_STATES,
    max_seconds: Annotated[float, typer.Option(
        min=0, max=1e9, help="Graph: stop after this many seconds (0: no limit; then incomplete, exit 4).")] = 0,
    programs: Annotated[int, typer.Option(min=1, max=INT32_MAX, help="Random: programs to run.")] = 200,
    steps: Annotated[int, typer.Option(min=0, max=INT32_MAX, help="Random: most actions per program.")] = 30,
    heal_steps: Annotated[int, typer.Option(
        min=1, max=INT32_MAX, help="Random: most healing steps after a program (an unsettled run judges nothing).")
                          ] = 500,
    seed: Annotated[int, typer.Option(help="Random: Hypothesis seed: the same seed gives the same run.")] = 0,
    out: OutOpt = None,
    json_out: JsonOpt = False,
    kafka_version: KafkaVersionOpt = None,
) -> int:
    """Check the liveness properties: an acknowledged record eventually reaches every live ISR member, a
    reassignment (KIP-455) eventually completes or is cancelled, a partition with a live ISR or ELR (KIP-966)
    replica eventually has a leader, a caught-up live replica eventually rejoins the ISR; under bounded faults and
    weakly fair healing. --protocol blocked-reassignment-completion is KAFKA-19975 (a reassignment blocked for ever
    by a target replica that is down; fixed in 4.3.0). A counterexample is a lasso: a prefix, then a cycle repeated
    for ever (or a state where nothing can progress). Exit status: 0 every property holds in a complete graph
    search (a proof within the bounds), 1 a counterexample, 2 bad input, 4 none found but nothing proved (a
    stopped graph search, or random runs only)."""
    if engine not in ENGINES:
        raise InputError("--engine", f"expected one of {', '.join(ENGINES)}, not '{engine}'")
    check_out(out)
    resolved = _resolve(protocol, kafka_version)
    given = {"brokers": brokers, "replication_factor": replication_factor, "min_isr": min_isr,
             "initial_isr": initial_isr, "acks": acks, "records": records, "max_leader_epoch": max_leader_epoch,
             "crashes": crashes, "lossy_crashes": lossy_crashes, "fences": fences, "elections": elections,
             "isr_shrinks": isr_shrinks, "failovers": failovers, "reads": reads, "reassignments": reassignments,
             "cancels": cancels, "duplicates": duplicates, "atomic_fetch": atomic_fetch, "metadata": metadata,
             "list_offsets": list_offsets, "shutdowns": shutdowns,
             "unclean_elections": unclean_elections}
    known = {f.name for f in fields(Config)}
    for k, v in given.items():
        if v is not None and k not in known:  # an option of a newer model than this one
            raise InputError(f"--{k.replace('_', '-')}", "this model has no such setting")
    given = {k: v for k, v in given.items() if k in known}
    cfg = config_option(resolved, {k: v for k, v in DEFAULTS.items() if k in known}, given)
    row = LIVENESS_SETTINGS.get(resolved.label, LivenessSetting()) if resolved.variant is not None else \
        LivenessSetting()
    permanent = row.permanent_crashes if permanent_crashes is None else permanent_crashes
    targets = _targets(reassign_target, cfg.brokers)
    if targets is None:
        targets = row.reassign_targets
    if reassign_target and not cfg.reassignments:
        raise InputError("--reassign-target", "needs a reassignment to make: give --reassignments 1")
    props = _selected(cfg, permanent, prop)
    model = run_engine("liveness check", resolved, LivenessModel, resolved.protocol, cfg, drops=drops,
                       permanent_crashes=permanent, reassign_targets=targets)
    with hypothesis_home(None):
        result: LivenessRun = run_engine("liveness check", resolved, run_liveness, model, props, engine, max_states,
                                         max_seconds or None, programs, steps, heal_steps, seed)
    lassos = {pid: (eng, lasso, *_lasso_steps(model, lasso)) for pid, (eng, lasso) in result.lassos.items()}
    first = next(iter(lassos.values()), None)
    trace = _trace(resolved.label, model.cfg, first[2]) if first is not None else None
    if out is not None and trace is not None:
        write_trace(out, trace)
    g = result.graph
    complete = g is not None and g.complete
    code = Exit.FAILED if lassos else Exit.OK if complete else Exit.INCOMPLETE
    settings = {"permanent_crashes": permanent, "drops": drops,
                "reassign_targets": None if targets is None else [list(t) for t in targets]}
    if json_out:
        print(json.dumps({
            "protocol": resolved.label, "config": model.cfg.as_dict(), "model": settings, "engine": engine,
            "ok": not lassos, "exit_status": int(code), "complete": complete,
            "stopped_by": "violation" if lassos else (g.stopped_because if g is not None else "programs"),
            "graph": None if g is None else {
                "complete": g.complete, "stopped_by": g.stopped_because, "states": g.states,
                "transitions": g.transitions, "seconds": round(g.seconds, 3), "bound_states": g.bound_states,
                "fair_sccs": g.fair_sccs, "max_states": max_states, "max_seconds": max_seconds or None},
            "random": None if engine == "graph" else {
                "programs": result.random_programs, "unsettled": result.random_unsettled,
                "seconds": round(result.random_seconds, 3), "seed": seed, "steps": steps, "heal_steps": heal_steps},
            "properties": [{
                "id": p.id, "title": p.title, "verdict": _verdict(result, p.id),
                "lasso": None if p.id not in lassos else _lasso_json(*lassos[p.id])} for p in props],
            "trace": None if trace is None else json.loads(trace.to_json()),
            # the number of the trace's step the cycle returns to (None: no cycle, the run stops at the end)
            "trace_cycle_start": None if first is None or not first[1].cycle else first[3]}, indent=2))
        return code
    con = report.console()
    con.print(f"protocol {escape(resolved.label)}: {escape(resolved.protocol.description)}")
    con.print(f"bounds: {escape(config_line(model.cfg))}")
    con.print("model: " + ("crashed brokers never return" if permanent else "crashed brokers restart")
              + (", the network may lose messages" if drops else ", no message is lost or duplicated")
              + ("" if targets is None else ", reassignment targets " + " ".join(",".join(map(str, t))
                                                                             for t in targets)))
    if g is not None:
        rate = g.states / g.seconds if g.seconds else 0.0
        state = ("complete: every reachable state within the bounds was visited" if g.complete else
                 f"INCOMPLETE: stopped by --{g.stopped_because} (a violation found is real; a clean property is "
                 "not proved)")
        con.print(f"graph: {g.states:,} states, {g.transitions:,} transitions, {g.fair_sccs:,} fair strongly "
                  f"connected components examined, {g.seconds:.1f} s ({rate:,.0f} states/s); {state}")
        if g.bound_states:
            con.print(f"note: in {g.bound_states:,} state(s) only --max-leader-epoch {model.cfg.max_leader_epoch} "
                      "stopped a step; they count as meeting every goal (raise the bound to look past them)")
    if engine != "graph":
        con.print(f"random: {result.random_programs:,} programs (seed {seed}, at most {steps} steps, healed for at "
                  f"most {heal_steps} steps), {result.random_unsettled:,} did not settle (judged nothing), "
                  f"{result.random_seconds:.1f} s")
    for p in props:
        con.print(f"{escape(p.id)}: {escape(_verdict(result, p.id))} ({escape(p.title)})")
    for pid, (eng, lasso, lsteps, cut) in lassos.items():
        _print_lasso(pid, eng, lasso, lsteps, cut)
    if lassos:
        where = (f"; the lasso of {next(iter(lassos))} written to {out} (kcheck replay {out}: the cycle is steps "
                 f"{first[3] + 1}..{len(first[2]) - 1})" if out and first is not None and first[1].cycle else
                 f"; written to {out}" if out else "; --out FILE saves the lasso as a trace")
        con.print("FAIL" + escape(where))
    elif complete:
        con.print("OK: every property holds in every fair run within the bounds.")
    else:
        con.print("INCOMPLETE: no counterexample, but "
                  + ("the graph search did not cover its bounds" if g is not None else "random runs prove nothing")
                  + " (exit 4).")
    return code


def _step_json(st: ReplayStep) -> dict[str, Any]:
    return {"step": st.number, "action": None if st.action is None else st.action.as_dict()}


def _lasso_json(engine: str, lasso: Lasso, steps: list[ReplayStep], cut: int) -> dict[str, Any]:
    return {"engine": engine, "kind": lasso.kind, "message": lasso.message,
            "prefix": [_step_json(s) for s in steps[:cut + 1]], "cycle": [_step_json(s) for s in steps[cut + 1:]]}


def _print_lasso(pid: str, engine: str, lasso: Lasso, steps: list[ReplayStep], cut: int) -> None:
    con = report.console()
    con.print(f"[bold red]{escape(pid)}[/] ({engine}): {escape(lasso.message)}")
    con.print(trace_table(steps[:cut + 1], f"prefix ({cut} steps)"))
    if lasso.kind == "terminal":
        con.print(f"the run stops at step {cut}: no progress action is enabled and the goal does not hold")
        return
    cycle = steps[cut + 1:]
    con.print(trace_table(cycle, f"cycle ({len(cycle)} steps, back to the state of step {cut}, repeated for ever; "
                                 "every progress action enabled all along it is taken in it)"))


__all__ = ["DEFAULTS", "LivenessRun", "liveness_command", "run_liveness"]
