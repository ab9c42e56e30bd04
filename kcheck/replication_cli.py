"""`kcheck explore`, `exhaust`, `replay` and `variants`: the replication model from the command line.

Exit status: 0 when no invariant is violated, 1 with a counterexample, 2 on bad input.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from kcheck import report
from kcheck.formats import InputError, read_text
from kcheck.invariants import REGISTRY
from kcheck.invariants.replication_explore import (
    ExhaustResult,
    ExploreResult,
    ReplayError,
    ReplayStep,
    ResolvedProtocol,
    Trace,
    exhaust,
    explore,
    replay,
    resolve_protocol,
    split_run,
)
from kcheck.model import INT32_MAX
from kcheck.model.replication.actions import Config
from kcheck.model.replication.protocol import VARIANTS
from kcheck.model.replication.reassignment import complete_when_adding_unless_shrinking
from kcheck.model.replication.state import NO_LEADER, State
from kcheck.reference import plugins, releases
from kcheck.reference.plugins import PluginError

ProtocolOpt = Annotated[str, typer.Option("--protocol", help="current (the --kafka-version release's rules), a variant "
                                                          "(kcheck variants), or module:object.")]
KafkaVersionOpt = Annotated[str | None, typer.Option(
    "--kafka-version", metavar="VERSION",
    help=f"The Kafka release whose controller rules --protocol current follows (default: the newest, "
         f"{releases.DEFAULT_VERSION}): ELR off before 4.1, KAFKA-19975's reassignment completion from 4.3.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
OutOpt = Annotated[str | None, typer.Option("--out", help="Write the counterexample trace (JSON) to this new file.")]
InvariantOpt = Annotated[list[str] | None, typer.Option(
    "--invariant", help="Check only this invariant id (repeatable; default: all, or a variant's own row).")]
Budget = Annotated[int | None, typer.Option(min=0, max=INT32_MAX)]
BrokersOpt = Annotated[int | None, typer.Option(help="Brokers 1..n (at most 6).")]
ReplicationFactorOpt = Annotated[int | None, typer.Option(
    "--replication-factor", min=0, max=INT32_MAX,
    help="Replicas at the start, on brokers 1..RF (default: every broker).")]
ReassignmentsOpt = Annotated[int | None, typer.Option(
    min=0, max=INT32_MAX,
    help="Reassignment requests (AlterPartitionReassignments to any target list) the operator may make.")]
CancelsOpt = Annotated[int | None, typer.Option(min=0, max=INT32_MAX,
                                                 help="Requests cancelling the reassignment in flight.")]
AtomicFetchOpt = Annotated[bool | None, typer.Option(
    "--atomic-fetch/--split-fetch",
    help="One step per fetch (request, answer, follower applying it) instead of three: reaches deeper, "
         "explores fewer interleavings.")]


def _release(option: str, version: str, prefix: str = "") -> releases.ReleaseProfile:
    try:
        return releases.profile(version)
    except releases.UnknownRelease as e:
        raise InputError(option, prefix + str(e)) from None


def _current(spec: str, kafka_version: str | None, option: str, prefix: str = "") -> ResolvedProtocol | None:
    """`current` or `current@VERSION` as a release's rules (labelled `current@VERSION`, which a trace keeps);
    `kafka_version` (--kafka-version) wins over a release in the name. None for any other protocol."""
    base, at, named = spec.partition("@")
    if base != "current" or (not at and spec != "current"):
        return None
    if kafka_version is not None:
        prof = _release("--kafka-version", kafka_version)
    else:
        prof = _release(option, named, prefix) if at else releases.profile()
    return ResolvedProtocol(prof.protocol(), f"current@{prof.version}", None)


def _not_current(spec: str, kafka_version: str | None) -> None:
    """--kafka-version with a variant or a user's protocol: refused (they carry every rule themselves)."""
    if kafka_version is not None:
        _release("--kafka-version", kafka_version)
        raise InputError("--kafka-version", f"applies to --protocol current only, not '{spec}' (a variant or a "
                                            "module:object protocol sets every rule itself)")


def _protocol(spec: str, kafka_version: str | None = None) -> ResolvedProtocol:
    current = _current(spec, kafka_version, "--protocol")
    if current is not None:
        return current
    _not_current(spec, kafka_version)
    try:
        return resolve_protocol(spec)
    except ValueError as e:
        raise InputError("--protocol", str(e)) from None


def _config(resolved: ResolvedProtocol, defaults: dict[str, Any], given: dict[str, Any]) -> Config:
    """Config defaults, then the command's own defaults, then a variant's row settings, then the options given."""
    settings = dict(defaults)
    if resolved.variant is not None:
        settings.update(resolved.variant.settings)
    settings.update({k: v for k, v in given.items() if v is not None})
    if isinstance(settings.get("acks"), str):
        settings["acks"] = tuple(a.strip() for a in settings["acks"].split(",") if a.strip())
    try:
        return Config(**settings)
    except ValueError as e:
        name = str(e).split()[0]
        raise InputError(f"--{name.replace('_', '-')}", str(e)) from None


def _only(resolved: ResolvedProtocol, invariants: list[str] | None) -> set[str] | None:
    if invariants:
        for inv in invariants:
            if inv not in REGISTRY or REGISTRY[inv].applies_to != "replication":
                known = ", ".join(i for i, v in REGISTRY.items() if v.applies_to == "replication")
                raise InputError("--invariant", f"'{inv}' is not a replication invariant ({known})")
        return set(invariants)
    if resolved.variant is not None:
        return set(resolved.variant.violates)
    if resolved.protocol.reassignment_completion is complete_when_adding_unless_shrinking:
        # Since 4.3.0 (KAFKA-19975) Kafka completes a move that adds at least as many replicas as it removes
        # once the adding ones are in sync, by design: a lagging target that was already a replica is no
        # longer a broken promise. `--invariant replication.reassignment-in-sync` still checks it.
        return {i for i, v in REGISTRY.items()
                if v.applies_to == "replication" and i != "replication.reassignment-in-sync"}
    return None


def _check_out(path: str | None) -> None:
    """Refuse an existing --out file before any work is done."""
    if path is not None and os.path.exists(path):
        raise InputError(path, "already exists; kcheck does not overwrite files (choose another --out)")


def _prepare(out: str | None, protocol: str, invariant: list[str] | None, defaults: dict[str, Any],
             given: dict[str, Any], kafka_version: str | None = None
             ) -> tuple[ResolvedProtocol, Config, set[str] | None]:
    """What explore and exhaust check first: the --out file, the protocol, the settings, the invariants."""
    _check_out(out)
    resolved = _protocol(protocol, kafka_version)
    return resolved, _config(resolved, defaults, given), _only(resolved, invariant)


def _write_trace(path: str | None, trace: Trace | None) -> None:
    if path is None or trace is None:
        return
    if os.path.exists(path):
        raise InputError(path, "already exists; kcheck does not overwrite files (choose another --out)")
    try:
        with open(path, "x", encoding="utf-8") as f:
            f.write(trace.to_json() + "\n")
    except OSError as e:
        raise InputError(path, f"cannot write: {e.strerror or e}") from None


def _run(what: str, resolved: ResolvedProtocol, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run an engine; a user's protocol whose rule raises is bad input, reported in one line."""
    try:
        return fn(*args, **kwargs)
    except (InputError, PluginError, ReplayError, KeyboardInterrupt):  # ReplayError: the trace is at fault
        raise
    except Exception as e:  # noqa: BLE001 - a user's rule may raise anything, or return what the model cannot use
        if ":" in resolved.label:  # a module:object protocol: its failure, in one line (--debug: the traceback)
            err = plugins.failure(resolved.label, e)
            raise PluginError(err.spec, err.message, err.exc_type, err.where, f"during {what}") from e
        raise


@contextlib.contextmanager
def hypothesis_home(directory: str | None = None) -> Iterator[None]:
    """Hypothesis keeps a cache in ./.hypothesis by default: never write into the user's working directory.
    The previous home is restored afterwards (tests run many commands in one process)."""
    import hypothesis.configuration as hc

    if directory is None and os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield  # the user's own choice, which Hypothesis reads itself
        return
    if directory is None:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        directory = os.path.join(cache, "kcheck", "hypothesis")
    elif os.path.exists(directory) and not os.path.isdir(directory):
        raise InputError("--hypothesis-dir", f"{directory} exists and is not a directory")
    previous = vars(hc).get("__hypothesis_home_directory")
    hc.set_hypothesis_home_dir(directory)
    try:
        yield
    finally:
        hc.set_hypothesis_home_dir(previous)


# ---- rendering ---------------------------------------------------------------------------------

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


def _print_trace(trace: Trace, resolved: ResolvedProtocol, header: str, only: set[str] | None) -> None:
    """Replay the trace checking the invariants the search checked (so it runs to the violation it found)."""
    out = report.console()
    steps = replay(trace, resolved.protocol, only)
    split = split_run(trace, resolved.protocol, only)  # the same run in the split model, replayed
    if split is not None and len(split.steps) > len(trace.steps):
        header += f"; {len(split.steps)} steps with split fetches"
    out.print(trace_table(steps, header))
    for v in steps[-1].violations:
        out.print(f"[bold red]{v.invariant}[/] at {escape(v.where)}: {escape(v.message)}")


def _config_line(cfg: Config) -> str:
    return ", ".join(f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in cfg.as_dict().items())


# ---- commands ----------------------------------------------------------------------------------

def explore_command(
    protocol: ProtocolOpt = "current",
    brokers: BrokersOpt = None,
    replication_factor: ReplicationFactorOpt = None,
    min_isr: Annotated[int | None, typer.Option(help="min.insync.replicas.")] = None,
    acks: Annotated[str | None, typer.Option(help="Producer acks to try: all, 1, 0 (comma-separated).")] = None,
    seed: Annotated[int, typer.Option(help="Hypothesis seed: the same seed gives the same run.")] = 0,
    examples: Annotated[int, typer.Option(min=1, max=INT32_MAX, help="Random programs to run.")] = 300,
    steps: Annotated[int, typer.Option(min=1, max=INT32_MAX, help="Most steps per program.")] = 60,
    records: Budget = None, crashes: Budget = None, lossy_crashes: Budget = None, fences: Budget = None,
    elections: Budget = None, isr_shrinks: Budget = None, failovers: Budget = None,
    reassignments: ReassignmentsOpt = None, cancels: CancelsOpt = None,
    atomic_fetch: AtomicFetchOpt = None,
    invariant: InvariantOpt = None,
    out: OutOpt = None,
    json_out: JsonOpt = False,
    hypothesis_dir: Annotated[str | None, typer.Option(
        help="Hypothesis's cache directory (default: $HYPOTHESIS_STORAGE_DIRECTORY, else "
             "$XDG_CACHE_HOME/kcheck/hypothesis or ~/.cache/kcheck/hypothesis).")] = None,
    kafka_version: KafkaVersionOpt = None,
) -> int:
    """Explore the replication model with Hypothesis: random programs of actions, shrunk to a minimal
    counterexample when an invariant breaks."""
    resolved, cfg, only = _prepare(out, protocol, invariant, {}, {
        "brokers": brokers, "replication_factor": replication_factor, "min_isr": min_isr, "acks": acks,
        "records": records, "crashes": crashes, "lossy_crashes": lossy_crashes, "fences": fences,
        "elections": elections, "isr_shrinks": isr_shrinks, "failovers": failovers, "reassignments": reassignments,
        "cancels": cancels, "atomic_fetch": atomic_fetch}, kafka_version)
    with hypothesis_home(hypothesis_dir):
        result: ExploreResult = _run("exploration", resolved, explore, resolved.protocol, cfg, examples=examples,
                                     steps=steps, seed_value=seed, label=resolved.label, only=only)
    _write_trace(out, result.trace)
    if json_out:
        print(json.dumps({"protocol": resolved.label, "config": cfg.as_dict(), "ok": result.trace is None,
                          "examples": result.examples, "steps": result.steps, "seconds": round(result.seconds, 3),
                          "trace": json.loads(result.trace.to_json()) if result.trace else None}, indent=2))
        return 0 if result.trace is None else 1
    con = report.console()
    con.print(f"protocol {escape(resolved.label)}: {escape(resolved.protocol.description)}")
    con.print(f"settings: {_config_line(cfg)}")
    if result.trace is None:
        con.print(f"OK: no invariant violated in {result.examples:,} programs, {result.steps:,} steps "
                  f"({result.seconds:.1f} s, seed {seed}).")
        return 0
    _print_trace(result.trace, resolved, f"Counterexample, shrunk to {len(result.trace.steps)} steps", only)
    con.print(f"FAIL: found after {result.examples:,} programs, {result.steps:,} steps ({result.seconds:.1f} s, "
              f"seed {seed})" + (f"; trace written to {escape(out)}" if out else "; --out FILE saves the trace."))
    return 1


def exhaust_command(
    protocol: ProtocolOpt = "current",
    brokers: BrokersOpt = None,
    replication_factor: ReplicationFactorOpt = None,
    min_isr: Annotated[int | None, typer.Option(help="min.insync.replicas.")] = None,
    acks: Annotated[str | None, typer.Option(help="Producer acks to try: all, 1, 0 (comma-separated).")] = None,
    records: Budget = None, max_leader_epoch: Budget = None, crashes: Budget = None, lossy_crashes: Budget = None,
    fences: Budget = None, elections: Budget = None, isr_shrinks: Budget = None, failovers: Budget = None,
    reads: Budget = None, reassignments: ReassignmentsOpt = None, cancels: CancelsOpt = None,
    duplicates: Annotated[bool | None, typer.Option(help="Let messages be delivered twice.")] = None,
    atomic_fetch: AtomicFetchOpt = None,
    abstract: Annotated[bool, typer.Option(
        help="Merge states that differ only in control messages in flight: finds much deeper "
             "counterexamples, but a clean result is no proof.")] = False,
    max_states: Annotated[int, typer.Option(min=1, max=INT32_MAX,
                                            help="Stop after this many states (reported as incomplete).")
                          ] = 2_000_000,
    invariant: InvariantOpt = None,
    out: OutOpt = None,
    json_out: JsonOpt = False,
    kafka_version: KafkaVersionOpt = None,
) -> int:
    """Explore every reachable state within the bounds, breadth first; a violation comes with the
    shortest trace that reaches it."""
    small = {"brokers": 2, "min_isr": 1, "records": 2, "max_leader_epoch": 3, "crashes": 1, "lossy_crashes": 1,
             "fences": 1, "elections": 1, "isr_shrinks": 1, "failovers": 1, "reads": 1}
    resolved, cfg, only = _prepare(out, protocol, invariant, small, {
        "brokers": brokers, "replication_factor": replication_factor, "min_isr": min_isr, "acks": acks,
        "records": records, "max_leader_epoch": max_leader_epoch, "crashes": crashes, "lossy_crashes": lossy_crashes,
        "fences": fences, "elections": elections, "isr_shrinks": isr_shrinks, "failovers": failovers, "reads": reads,
        "reassignments": reassignments, "cancels": cancels, "duplicates": duplicates, "atomic_fetch": atomic_fetch},
        kafka_version)
    result: ExhaustResult = _run("exhaustive search", resolved, exhaust, resolved.protocol, cfg,
                                 max_states=max_states, label=resolved.label, only=only, abstract=abstract)
    _write_trace(out, result.trace)
    rate = result.states / result.seconds if result.seconds else 0.0
    if json_out:
        print(json.dumps({"protocol": resolved.label, "config": cfg.as_dict(), "ok": result.trace is None,
                          "complete": result.complete, "abstract": result.abstract, "states": result.states,
                          "transitions": result.transitions,
                          "depth": result.depth, "seconds": round(result.seconds, 3),
                          "trace": json.loads(result.trace.to_json()) if result.trace else None}, indent=2))
        return 1 if result.trace else 0
    con = report.console()
    con.print(f"protocol {escape(resolved.label)}: {escape(resolved.protocol.description)}")
    con.print(f"bounds: {_config_line(cfg)}")
    con.print(f"{result.states:,} {'abstract ' if result.abstract else ''}states, {result.transitions:,} transitions, "
              f"depth {result.depth}, {result.seconds:.1f} s ({rate:,.0f} states/s)"
              + (f"; INCOMPLETE: stopped at --max-states {max_states:,}" if result.stopped else ""))
    if result.trace is None:
        if result.abstract:
            con.print("OK so far: no invariant violated in any state the abstract search kept (not a proof: "
                      "it explores one state per abstract state).")
        else:
            con.print(f"{'OK' if result.complete else 'OK so far'}: no invariant violated in any reachable state.")
        return 0
    _print_trace(result.trace, resolved, f"Shortest counterexample ({len(result.trace.steps)} steps)", only)
    con.print("FAIL" + (f"; trace written to {escape(out)}" if out else "; --out FILE saves the trace."))
    return 1


def _replay_protocol(trace_file: str, label: str, given: str | None, kafka_version: str | None = None
                     ) -> ResolvedProtocol:
    """A trace is data, never code: its protocol field is resolved only as a built-in name. A module:object
    protocol is loaded only from --protocol on the command line; the trace's field is then a label that must
    name the same plug-in (a built-in --protocol replays under that protocol instead). `current@VERSION` replays
    under that release's rules, plain `current` under the newest's; --kafka-version overrides both."""
    if given is None:
        current = _current(label, kafka_version, trace_file, "field 'protocol': ")
        if current is not None:
            return current
        _not_current(label, kafka_version)
        if ":" in label:
            raise InputError(trace_file, f"field 'protocol': the trace names the plug-in '{label}'; kcheck does not "
                                         f"load code a trace names (pass --protocol {label} to load it yourself)")
        try:
            return resolve_protocol(label, allow_plugin=False)
        except ValueError as e:
            raise InputError(trace_file, f"field 'protocol': {e}") from None
    if ":" in label and ":" in given and given != label:
        raise InputError(trace_file, f"field 'protocol': the trace was recorded under '{label}', "
                                     f"not --protocol '{given}'")
    return _protocol(given, kafka_version)


def replay_command(
    trace_file: Annotated[str, typer.Argument(help="A trace written by explore or exhaust --out.")],
    protocol: Annotated[str | None, typer.Option(help="Replay under another protocol than the trace's.")] = None,
    json_out: JsonOpt = False,
    kafka_version: Annotated[str | None, typer.Option(
        "--kafka-version", metavar="VERSION",
        help="Replay a current-protocol trace under this release's rules (default: the release the trace "
             "names, else the newest).")] = None,
) -> int:
    """Replay a trace step by step and show every replica's log, the leader, epochs, ISR and high watermarks."""
    text = read_text(trace_file)
    try:
        trace = Trace.from_json(text)  # checked against the trace schema first (invariants/trace_schema.py)
    except ValueError as e:
        raise InputError(trace_file, str(e)) from None
    resolved = _replay_protocol(trace_file, trace.protocol, protocol, kafka_version)
    try:
        steps = _run("replay", resolved, replay, trace, resolved.protocol)
    except ReplayError as e:
        raise InputError(trace_file, f"{e} under protocol {resolved.label}") from None
    violations = steps[-1].violations
    if json_out:
        print(json.dumps({"protocol": resolved.label, "steps": len(steps) - 1, "ok": not violations,
                          "violations": [v.as_dict() for v in violations]}, indent=2))
        return 1 if violations else 0
    con = report.console()
    con.print(trace_table(steps, f"{escape(trace_file)} under protocol {escape(resolved.label)}"))
    for v in violations:
        con.print(f"[bold red]{v.invariant}[/] at {escape(v.where)}: {escape(v.message)}")
    con.print("FAIL" if violations else f"OK: all {len(steps) - 1} steps replayed, no invariant violated.")
    return 1 if violations else 0


def variants_command(json_out: JsonOpt = False) -> int:
    """List the historical protocol variants and the Kafka bug each reproduces."""
    if json_out:
        print(json.dumps([{"name": v.name, "row": v.row, "bug": v.bug, "violates": list(v.violates),
                           "settings": dict(v.settings), "rules": _changed_rules(v.name)}
                          for v in VARIANTS.values()], indent=2))
        return 0
    table = Table(title="Protocol variants (historical Kafka replication bugs)", title_justify="left")
    for col in ("variant", "row", "rules changed", "bug", "violates"):
        table.add_column(col, overflow="fold")
    for v in VARIANTS.values():
        changed = ", ".join(f"{k}={fn}" for k, fn in _changed_rules(v.name).items())
        table.add_row(v.name, str(v.row), changed, v.bug, "\n".join(v.violates))
    report.console().print(table)
    return 0


def _changed_rules(name: str) -> dict[str, str]:
    from kcheck.model.replication.protocol import Protocol

    current = Protocol.current()
    v = VARIANTS[name].protocol
    out = {k: fn for k, fn in v.rules().items() if current.rules()[k] != fn}
    if v.send_leader_epoch != current.send_leader_epoch:
        out["send_leader_epoch"] = str(v.send_leader_epoch)
    return out


__all__ = ["exhaust_command", "explore_command", "replay_command", "trace_table", "variants_command"]
