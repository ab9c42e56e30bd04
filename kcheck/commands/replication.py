"""`kcheck explore`, `exhaust`, `replay` and `variants`: the replication model from the command line.

Exit status (`kcheck.runtime.exit_codes.Exit`): 0 when no invariant is violated and the search was complete (exhaust
visited every reachable state within its bounds; replay ran the whole trace), 1 with a counterexample, 2 on bad
input, 3 (explore and exhaust, `UNEXERCISED`) when no invariant is violated but the protocol differs from
today's and one of its changed rules never answered differently from today's rule in the states visited,
4 (`INCOMPLETE`) when no invariant is violated but the search did not cover its bounds: exhaust stopped by
--max-states, --max-seconds or --max-memory, an abstract exhaust, and every clean explore (a random search
never covers its bounds; it prints what it did cover). A search never ends in a state that looks like a pass
unless it is one.

`exhaust` runs on the one engine, `kcheck.model.search.exhaust` (through
`invariants/replication_searches/exhaustive.py`): in this process, over --workers forked processes, or on Spark
with --master (`kcheck.spark_check.exhaust`). `explore`
runs the one engine's random search, `kcheck.model.search.random_search`, with the replication model's settings
(`invariants/replication_searches/random_runs.py`: `explore`), atomic fetches unless --split-fetch.

Long searches print progress on stderr (states, depth, rate, resident memory, elapsed time) every few seconds
when stderr is a terminal or with --progress; --no-progress or --quiet turns it off. Never on stdout.

Every run says which invariants it checked, which its bounds switched off in some or all states and why,
and which it did not select; `--invariants MODULE` loads a user's invariants (`invariants/registry.py`).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import importlib.util
import json
import multiprocessing
import os
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from kcheck import report
from kcheck.cluster.replay import Outcome, verdict
from kcheck.errors import run_engine
from kcheck.inputs.formats import InputError, read_text
from kcheck.invariants.registry import unknown_ids
from kcheck.invariants.replication_searches.exhaustive import (
    RSS_BYTES_PER_STATE,
    SPARK_ENGINE,
    EngineRun,
    SearchSetupError,
    default_max_states,
    run_exhaust,
)
from kcheck.invariants.replication_searches.random_runs import ExploreResult, explore
from kcheck.invariants.replication_searches.runs import (
    ChangeProbe,
    InvariantTally,
    ReplayError,
    ResolvedProtocol,
    SearchProgress,
    Trace,
    changed_rules,
    replay,
    replication_ids,
    resolve_protocol,
    split_run,
    today_for,
)
from kcheck.invariants.trace_schema import check_trace
from kcheck.model import INT32_MAX
from kcheck.model.checkpoint import Checkpointer, CheckpointError, read_manifest
from kcheck.model.replication.actions import Config
from kcheck.model.replication.protocol import LIVENESS_VARIANTS, VARIANTS
from kcheck.model.replication.reassignment import complete_when_adding_unless_shrinking
from kcheck.model.search import ORDERS
from kcheck.options import (
    AcksOpt,
    AtomicFetchOpt,
    BrokersOpt,
    CancelsOpt,
    CoverageDirOpt,
    CrashesOpt,
    DuplicatesOpt,
    ElectionsOpt,
    ExploreAtomicFetchOpt,
    FailoversOpt,
    FencesOpt,
    InitialIsrOpt,
    InvariantOpt,
    InvariantsOpt,
    IsrShrinksOpt,
    JsonOpt,
    KafkaVersionOpt,
    ListOffsetsOpt,
    LossyCrashesOpt,
    MaxLeaderEpochOpt,
    MetadataOpt,
    MinIsrOpt,
    OutOpt,
    ProgressOpt,
    ProtocolOpt,
    QuietOpt,
    ReadsOpt,
    ReassignmentsOpt,
    RecordsOpt,
    ReplicationFactorOpt,
    ShutdownsOpt,
    UncleanElectionsOpt,
    check_master,
    check_out,
    config_option,
    config_options,
    current_protocol,
    hypothesis_home,
    load_invariants,
    not_current_protocol,
    protocol_option,
    write_trace,
)
from kcheck.report import config_line, trace_table
from kcheck.runtime import interrupts
from kcheck.runtime.exit_codes import Exit

# explore's defaults: every built-in variant is found with them at seed 0 (tests/test_search_status.py).
EXPLORE_EXAMPLES = 2000
EXPLORE_STEPS = 40
# explore runs atomic fetches unless told otherwise (--split-fetch, or a variant's row settings): the deepest rows
# need many complete fetches, and a run with atomic fetches is a run of the split model too (a trace is printed
# with its split length; it replays under the settings it was written with).
EXPLORE_DEFAULTS: dict[str, Any] = {"atomic_fetch": True}
EXPLORE_ENGINE = "kcheck.model.search.random_search"
MAX_SECONDS = 1e9  # the most explore --max-seconds takes, as exhaust's option: about 31 years























def _only(resolved: ResolvedProtocol, invariants: list[str] | None, users: list[str] | None = None
          ) -> tuple[set[str] | None, dict[str, str]]:
    """The invariants a run checks (None: every registered replication invariant) and, for the ones it leaves
    out, why. An id that is not a registered replication invariant is refused, wherever it comes from."""
    users = users or []
    variant = resolved.variant
    if variant is not None and variant.name in LIVENESS_VARIANTS and variant is LIVENESS_VARIANTS[variant.name]:
        variant = None  # a liveness row (kcheck liveness) breaks no safety invariant: every one is checked
    if variant is not None:
        if not variant.violates:
            raise InputError("--protocol", f"variant '{resolved.label}' names no invariant in its violates (name the "
                                           "properties its bug breaks)")
        problem = unknown_ids(variant.violates, "replication")
        if problem:
            raise InputError("--protocol", f"variant '{resolved.label}' names an invariant that does not exist: "
                                           f"{problem}")
    if invariants:
        problem = unknown_ids(invariants, "replication")
        if problem:
            raise InputError("--invariant", problem)
        only = set(invariants)
        why = "not chosen by --invariant"
    elif variant is not None:
        only = set(variant.violates) | set(users)
        why = f"not a property variant {variant.name}'s row names (--invariant ID checks it)"
    elif resolved.protocol.reassignment_completion is complete_when_adding_unless_shrinking:
        # Since 4.3.0 (KAFKA-19975) Kafka completes a move that adds at least as many replicas as it removes
        # once the adding ones are in sync, by design: a lagging target that was already a replica is no
        # longer a broken promise. `--invariant replication.reassignment-in-sync` still checks it.
        only = set(replication_ids()) - {"replication.reassignment-in-sync"}
        why = ("this release completes a reassignment once the adding replicas are in sync, by design (KAFKA-19975, "
               "4.3.0); --invariant replication.reassignment-in-sync checks it")
    else:
        return None, {}
    return only, {i: why for i in replication_ids() if i not in only}




@dataclass
class Prepared:
    resolved: ResolvedProtocol
    config: Config
    only: set[str] | None
    not_selected: dict[str, str]
    probe: ChangeProbe | None
    unchanged: str  # for a protocol that is not `current` but has no changed rule: which release it equals


def _probe(resolved: ResolvedProtocol) -> tuple[ChangeProbe | None, str]:
    """Change coverage for a protocol that differs from today's (`today_for`: the closest release)."""
    if resolved.label.partition("@")[0] in ("current", "current+elr"):
        return None, ""
    baseline, label = today_for(resolved.protocol)
    if not changed_rules(resolved.protocol, baseline):
        return None, label
    return ChangeProbe(resolved.protocol, baseline, label), ""


def _check_coverage_dir(directory: str | None, probe: ChangeProbe | None) -> None:
    """Refuse, before any work, a --coverage-dir that is a file or already holds a trace this run would write."""
    if directory is None:
        return
    if probe is None:
        raise InputError("--coverage-dir", "applies to a protocol that differs from today's (a variant or a "
                                           "module:object protocol with changed rules)")
    from kcheck import junit
    junit.output_path(directory, "--coverage-dir", directory=True)
    for rule in probe.coverage:
        path = os.path.join(directory, f"{rule}.json")
        if os.path.exists(path):
            raise InputError(path, "already exists; kcheck does not overwrite files (choose another --coverage-dir)")


def _prepare(out: str | None, protocol: str, invariant: list[str] | None, modules: list[str] | None,
             defaults: dict[str, Any], given: dict[str, Any], kafka_version: str | None = None,
             coverage_dir: str | None = None) -> Prepared:
    """What explore and exhaust check first: the --out file, the protocol, the users' invariants, the settings,
    the invariants checked, the change-coverage directory."""
    check_out(out)
    resolved = protocol_option(protocol, kafka_version)
    users = load_invariants(modules)
    cfg = config_option(resolved, defaults, given)
    only, not_selected = _only(resolved, invariant, users)
    probe, unchanged = _probe(resolved)
    _check_coverage_dir(coverage_dir, probe)
    return Prepared(resolved, cfg, only, not_selected, probe, unchanged)








# ---- how far a search got ----------------------------------------------------------------------

def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GiB"  # not reached


def _elapsed(seconds: float) -> str:
    m, sec = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def progress_printer(progress: bool | None, quiet: bool) -> Any:
    """The progress callback a search gets: lines on stderr when asked (--progress) or when stderr is a terminal
    (None), never with --quiet / --no-progress; None when off."""
    on = (sys.stderr.isatty() if progress is None else progress) and not quiet
    if not on:
        return None

    def show(p: SearchProgress) -> None:
        counts = dict(p.counts)
        if p.engine == "exhaust":
            rate = p.states / p.seconds if p.seconds else 0.0
            what = (f"{p.states:,} states, depth {p.depth}, {counts.get('transitions', 0):,} transitions, "
                    f"frontier peak {counts.get('frontier', 0):,}, {rate:,.0f} states/s")
        else:
            steps = counts.get("steps", 0)
            rate = steps / p.seconds if p.seconds else 0.0
            what = (f"{counts.get('programs', 0):,}/{counts.get('of', 0):,} programs, {steps:,} steps, "
                    f"{p.states:,} distinct states, longest program {p.depth}, {rate:,.0f} steps/s")
        done = "done: " if p.final else ""
        print(f"kcheck {p.engine}: {done}{what}, RSS {_size(p.rss)}, {_elapsed(p.seconds)} elapsed",
              file=sys.stderr, flush=True)

    return show


def machine_memory() -> int | None:
    """Physical memory in bytes, or None where the system does not say."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


# A default exhaust stops at a quarter of the machine's memory (its workers' included), and its default state cap
# is that memory over what a stored state costs (`exhaustive.RSS_BYTES_PER_STATE`), so the two agree.
DEFAULT_MEMORY_SHARE = 4


def parse_memory(text: str) -> tuple[int | None, str]:
    """--max-memory: `auto` (a quarter of the machine's memory), `0`/`none` (no cap), or a size like 4G, 512M,
    2.5GiB. (bytes or None, how to say it)."""
    t = text.strip().lower()
    if t == "auto":
        total = machine_memory()
        if total is None:
            return None, "none (the system does not report its memory)"
        cap = total // DEFAULT_MEMORY_SHARE
        return cap, f"{_size(cap)} (auto: a quarter of this machine's {_size(total)})"
    if t in ("0", "none"):
        return None, "none"
    cap = parse_size(text, "--max-memory", "expected auto, 0 (no cap) or a size such as 4G or 512M")
    return cap, _size(cap)


def parse_size(text: str, option: str, expected: str, least: int = 1) -> int:
    """A size like 4G, 512M, 2.5GiB in bytes (at least `least`); else `option`'s one line: `expected`, not it."""
    t = text.strip().lower()
    units = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
             "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40,
             "tib": 1 << 40}
    number = t.rstrip("kmgtib")
    unit = t[len(number):]
    try:
        value = float(number) if number.isascii() and "_" not in number else -1.0  # float() takes '١' and '1_0'
    except ValueError:
        value = -1.0
    if unit not in units or not value > 0 or value != value or not least <= value * units[unit] <= 1 << 50:
        raise InputError(option, f"{expected}, not '{text}'")
    return int(value * units[unit])


def exit_for(found: bool, probe: ChangeProbe | None, complete: bool) -> Exit:
    """The one order every search command follows: a counterexample, then a change never exercised, then a search
    that did not cover its bounds; only a complete, clean search is OK."""
    if found:
        return Exit.FAILED
    if probe is not None and probe.unexercised:
        return Exit.CHANGE_NOT_EXERCISED
    return Exit.OK if complete else Exit.INCOMPLETE


def _explore_coverage_lines(result: ExploreResult) -> list[str]:
    """What a clean random search covered, and what it never did."""
    cov = result.coverage()
    lines = [f"covered: {cov['programs']:,} programs, {cov['steps']:,} steps, {cov['distinct_states']:,} distinct "
             f"states, longest run {cov['longest_run']} steps (a program may continue a run an earlier one began)"]
    never = cov["kinds_never_fired"]
    if never:
        enabled = [k for k in never if k not in cov["kinds_never_enabled"]]
        lines.append("action kinds never taken: " + ", ".join(never)
                     + (f" (enabled somewhere but never drawn: {', '.join(enabled)})" if enabled else
                        " (never enabled in any state visited)"))
    unspent = {b: v for b, v in cov["budgets_most_used"].items() if b in cov["budgets_never_used_in_full"]}
    if unspent:
        lines.append("budgets no run used in full: " + ", ".join(
            f"--{b.replace('_', '-')} (at most {v['used']} of {v['bound']})" for b, v in unspent.items()))
    return lines


# ---- rendering ---------------------------------------------------------------------------------









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




def _print_invariants(summary: dict[str, Any]) -> None:
    """Which invariants the run checked, which its bounds switched off (in how many states, and why), and which
    it did not check at all."""
    con = report.console()
    checked = summary["checked"]
    con.print(f"invariants checked in every state ({len(checked)}): " + (escape(", ".join(checked)) or "none"))
    for off in summary["switched_off"] or ():  # None: not counted (a Spark search)
        con.print(f"switched off by the bounds in {off['states_off']:,} of {off['states']:,} states: "
                  f"{escape(off['invariant'])} ({escape(off['reason'])})")
    by_reason: dict[str, list[str]] = {}
    for off in summary["not_checked"]:
        by_reason.setdefault(off["reason"], []).append(off["invariant"])
    for reason, ids in by_reason.items():
        con.print(f"NOT checked ({escape(reason)}): {escape(', '.join(ids))}")


def _coverage_json(probe: ChangeProbe | None, unchanged: str) -> dict[str, Any] | None:
    if probe is None:
        return {"today": unchanged, "rules": [], "unexercised": []} if unchanged else None
    return {"today": probe.baseline_label, "visited_states": probe.visited,
            "rules": [c.as_dict() for c in probe.coverage.values()], "unexercised": probe.unexercised}


def _write_coverage(directory: str | None, probe: ChangeProbe | None) -> dict[str, str]:
    """Each changed rule's shortest differing run as DIR/RULE.json; rule -> path written."""
    if directory is None or probe is None:
        return {}
    written = {}
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise InputError("--coverage-dir", f"cannot create {directory}: {e.strerror or e}") from None
    for rule, cov in probe.coverage.items():
        if cov.trace is not None:
            path = os.path.join(directory, f"{rule}.json")
            write_trace(path, cov.trace)
            written[rule] = path
    return written


def _print_coverage(probe: ChangeProbe | None, unchanged: str, label: str, written: dict[str, str]) -> None:
    con = report.console()
    if probe is None:
        if unchanged:
            con.print(f"change coverage: protocol {escape(label)} has no rule that differs from today's "
                      f"({unchanged}): nothing to cover")
        return
    con.print(f"change coverage: {len(probe.coverage)} rule(s) differ from today's ({probe.baseline_label}); "
              f"{probe.visited:,} states visited")
    for cov in probe.coverage.values():
        head = (f"  {cov.rule} ({escape(cov.yours)}, today {escape(cov.today)}): asked in {cov.asked:,} states, "
                f"answered differently in {cov.differed:,}")
        if cov.trace is None:
            con.print(head + (" [bold]-- never differed from today's rule[/]" if cov.asked else
                              " [bold]-- never asked[/]"))
            continue
        n = len(cov.trace.steps)
        con.print(head + f"; shortest run to a differing answer: {n} step(s)"
                  + ("" if cov.enabled else ", then an action this protocol does not enable"))
        con.print(f"    {escape(cov.where)}")
        if cov.trace.steps:
            con.print("    " + escape("; ".join(f"{i}. {a.label()}" for i, a in enumerate(cov.trace.steps, 1))))
        if cov.rule in written:
            con.print(f"    written to {escape(written[cov.rule])} (kcheck replay {escape(written[cov.rule])} "
                      f"--protocol {escape(label)})")


def _unexercised_line(probe: ChangeProbe | None) -> str | None:
    if probe is None or not probe.unexercised:
        return None
    rules = ", ".join(probe.unexercised)
    return (f"UNEXERCISED: no invariant violated, but the changed rule(s) {rules} never answered differently from "
            f"today's ({probe.baseline_label}) in the {probe.visited:,} states visited: this run says nothing about "
            "that change (exit 3).")


# ---- commands ----------------------------------------------------------------------------------

def explore_command(
    protocol: ProtocolOpt = "current",
    brokers: BrokersOpt = None,
    replication_factor: ReplicationFactorOpt = None,
    min_isr: MinIsrOpt = None,
    initial_isr: InitialIsrOpt = None,
    acks: AcksOpt = None,
    seed: Annotated[int, typer.Option(help="Seed of the random search: the same seed gives the same run.")] = 0,
    examples: Annotated[int, typer.Option(
        min=1, max=INT32_MAX,
        help="Programs to run (fewer when a violation ends the search). About half of them start from a state "
             "an earlier program reached first, and continue its run.")] = EXPLORE_EXAMPLES,
    steps: Annotated[int, typer.Option(
        min=1, max=INT32_MAX,
        help="Most steps a program takes (each draws its length up to this). A step is one action of the model: "
             "a produce, a crash, a message delivered, a broker applying a metadata batch; with atomic fetches "
             "(explore's default) a whole fetch, request to applied answer, is one step.")] = EXPLORE_STEPS,
    records: RecordsOpt = None, max_leader_epoch: MaxLeaderEpochOpt = None, crashes: CrashesOpt = None,
    lossy_crashes: LossyCrashesOpt = None, fences: FencesOpt = None, elections: ElectionsOpt = None,
    isr_shrinks: IsrShrinksOpt = None, failovers: FailoversOpt = None, reads: ReadsOpt = None,
    reassignments: ReassignmentsOpt = None, cancels: CancelsOpt = None, duplicates: DuplicatesOpt = None,
    atomic_fetch: ExploreAtomicFetchOpt = None,
    metadata: MetadataOpt = None,
    list_offsets: ListOffsetsOpt = None,
    shutdowns: ShutdownsOpt = None,
    unclean_elections: UncleanElectionsOpt = None,
    max_seconds: Annotated[float | None, typer.Option(
        "--max-seconds", metavar="SECONDS", show_default=False,
        help="Stop the search after this many seconds of wall-clock time, as exhaust --max-seconds does (the "
             "shrinking of a violation found in time is not cut). A clean run stopped so says how many programs "
             "and steps it covered and exits 4, as every clean explore. 0 (as for exhaust) or no value: no "
             "limit.")] = None,
    invariant: InvariantOpt = None,
    invariants: InvariantsOpt = None,
    out: OutOpt = None,
    coverage_dir: CoverageDirOpt = None,
    json_out: JsonOpt = False,
    hypothesis_dir: Annotated[str | None, typer.Option(
        help="Hypothesis's cache directory (default: $HYPOTHESIS_STORAGE_DIRECTORY, else "
             "$XDG_CACHE_HOME/kcheck/hypothesis or ~/.cache/kcheck/hypothesis).")] = None,
    kafka_version: KafkaVersionOpt = None,
    progress: ProgressOpt = None,
    quiet: QuietOpt = False,
) -> int:
    """Explore the replication model with a random search (the one engine's, seeded by Hypothesis): programs of
    actions that favour traffic over faults, follow up what the last step enabled and restart from states earlier
    programs reached, every invariant checked after every step; a violation is shrunk by re-running the trace
    without steps it does not need. A random search finds, it never proves: with no violation it prints what it
    covered (programs, steps, distinct states, action kinds never taken, budgets never used in full) and exits 4.
    Exit status: 1 a counterexample, 2 bad input, 3 no invariant violated but a rule the protocol changes never
    answered differently from today's rule in the states visited, 4 no invariant violated (not a proof: kcheck
    exhaust proves within its bounds)."""
    # nan and inf pass a float option's range check; the budget must be a finite number of seconds, 0 or more
    if max_seconds is not None and not 0 <= max_seconds <= MAX_SECONDS:
        raise InputError("--max-seconds", f"expected a number of seconds from 0 (no limit) to {MAX_SECONDS:g}, "
                                          f"not '{max_seconds:g}'")
    max_seconds = max_seconds or None  # 0 means no limit, as exhaust's --max-seconds 0
    given = config_options(
        brokers=brokers, replication_factor=replication_factor, min_isr=min_isr, initial_isr=initial_isr, acks=acks,
        records=records, max_leader_epoch=max_leader_epoch, crashes=crashes, lossy_crashes=lossy_crashes,
        fences=fences, elections=elections, isr_shrinks=isr_shrinks, failovers=failovers, reads=reads,
        reassignments=reassignments, cancels=cancels, duplicates=duplicates, atomic_fetch=atomic_fetch,
        metadata=metadata, list_offsets=list_offsets, shutdowns=shutdowns,
        unclean_elections=unclean_elections)
    prep = _prepare(out, protocol, invariant, invariants, EXPLORE_DEFAULTS, given, kafka_version, coverage_dir)
    resolved, cfg, only, probe = prep.resolved, prep.config, prep.only, prep.probe
    with hypothesis_home(hypothesis_dir):
        result: ExploreResult = run_engine("exploration", resolved, explore,
                                           probe.protocol if probe else resolved.protocol, cfg, examples=examples,
                                           steps=steps, seed_value=seed, label=resolved.label, only=only, probe=probe,
                                           progress=progress_printer(progress, quiet), max_seconds=max_seconds)
    write_trace(out, result.trace)
    written = _write_coverage(coverage_dir, probe)
    summary = result.tally.summary(only, prep.not_selected)
    code = exit_for(result.trace is not None, probe, complete=False)
    trace = result.trace
    if json_out:
        print(json.dumps({"protocol": resolved.label, "config": cfg.as_dict(), "ok": trace is None,
                          "exit_status": int(code), "complete": False, "engine": EXPLORE_ENGINE,
                          "stopped_by": result.stopped_by, "caps": {"max_seconds": max_seconds}, "seed": seed,
                          "examples": result.examples, "examples_asked": examples, "steps": result.steps,
                          "steps_asked": steps, "seconds": round(result.seconds, 3),
                          "found_after_seconds": round(result.found_after, 3) if trace else None,
                          "minimized_from": result.minimized_from if trace else None,
                          "peak_rss_bytes": result.peak_rss,
                          "search": result.coverage(), "invariants": summary,
                          "coverage": _coverage_json(probe, prep.unchanged),
                          "trace": json.loads(trace.to_json()) if trace else None}, indent=2))
        return code
    con = report.console()
    con.print(f"protocol {escape(resolved.label)}: {escape(resolved.protocol.description)}")
    con.print(f"settings: {escape(config_line(cfg))}")
    cap = f", stopping after {max_seconds:g} s (--max-seconds)" if max_seconds is not None else ""
    con.print(f"search: {EXPLORE_ENGINE}, seed {seed}, up to {examples:,} programs of up to {steps:,} steps{cap}")
    programs = f"{result.examples:,} programs (--examples {examples:,})"
    _print_invariants(summary)
    _print_coverage(probe, prep.unchanged, resolved.label, written)
    if trace is None:
        for covered in _explore_coverage_lines(result):
            con.print(escape(covered))
        if result.stopped_by == "max-seconds":  # the programs begun: the last one may have been cut short
            ran = (f"stopped by --max-seconds {max_seconds:g} after {result.examples:,} of the {examples:,} programs "
                   f"asked (--examples), {result.steps:,} steps ({result.seconds:.1f} s, seed {seed}); no invariant "
                   "violated in them")
        else:
            ran = f"no invariant violated in {programs}, {result.steps:,} steps ({result.seconds:.1f} s, seed {seed})"
        con.print(f"INCOMPLETE: {ran}. A random search proves nothing: `kcheck exhaust` with these bounds visits "
                  "every reachable state" + ("." if code != Exit.INCOMPLETE else " (exit 4)."))
        line = _unexercised_line(probe)
        if line:
            con.print(escape(line))
        return code
    _print_trace(trace, resolved, f"Counterexample, shrunk to {len(trace.steps)} steps", only)
    con.print(f"FAIL: found after {programs}, {result.steps:,} steps ({result.found_after:.1f} s, seed {seed}); "
              f"shrunk from {result.minimized_from} to {len(trace.steps)} steps "
              f"({result.seconds - result.found_after:.1f} s)"
              + (f"; trace written to {escape(out)}" if out else "; --out FILE saves the trace."))
    return Exit.FAILED


def _engine_options(workers: int, master: str | None, spill_dir: str | None, visited_memory: str | None
                    ) -> int | None:
    """--workers, --master, --spill-dir and --visited-memory, checked before any work: one line each; the visited
    set's memory budget in bytes (None: all in memory)."""
    budget = None if visited_memory is None else parse_size(
        visited_memory, "--visited-memory", "expected a size such as 512M or 2G (at least 1K)", 1 << 10)
    if master is not None:
        if budget is not None:
            raise InputError("--visited-memory", "is for a search on this machine; on Spark the visited set is the "
                                                 "executors'")

        check_master(master)
        if workers > 1:
            raise InputError("--workers", "is for a search on this machine; with --master the Spark executors do "
                                          "the work (their cores decide)")
        if spill_dir is not None:
            raise InputError("--spill-dir", "is for a search on this machine; with --master the frontier stays in "
                                            "the Spark executors")
    if workers > 1 and "fork" not in multiprocessing.get_all_start_methods():
        raise InputError("--workers", "needs processes started by fork (Linux, macOS); use --workers 1 here")
    if spill_dir is not None:  # made only once every option is checked (_make_spill_dir)
        from kcheck import junit
        junit.output_path(spill_dir, "--spill-dir", directory=True)
    return budget


def _make_spill_dir(spill_dir: str | None) -> None:
    if spill_dir is not None:
        try:
            os.makedirs(spill_dir, exist_ok=True)
        except OSError as e:
            raise InputError("--spill-dir", f"cannot create {spill_dir}: {e.strerror or e}") from None


def _order_option(order: str, workers: int, master: str | None, spill_dir: str | None) -> None:
    """--order, checked before any work: one line."""
    if order not in ORDERS:
        raise InputError("--order", f"expected one of {', '.join(ORDERS)}, not '{order}'")
    if order == "bfs":
        return
    for given, option in ((workers > 1, "--workers"), (master is not None, "--master"),
                          (spill_dir is not None, "--spill-dir")):
        if given:
            raise InputError(option, f"is for the breadth-first search; --order {order} runs in this one process "
                                     "with its frontier in memory")


def _checkpoint_options(checkpoint: str | None, resume: bool, coverage_dir: str | None) -> None:
    """--checkpoint and --resume, checked before any work: one line each."""
    if resume and checkpoint is None:
        raise InputError("--resume", "needs --checkpoint DIR, the folder of the checkpoint to continue")
    if checkpoint is None:
        return
    if coverage_dir is not None:
        raise InputError("--checkpoint", "a search with change coverage is not checkpointed (what its probe records "
                                         "is not saved): not with --coverage-dir")
    from kcheck import junit
    junit.output_path(checkpoint, "--checkpoint", directory=True)


def _checkpointer(folder: str | None, resume: bool, every: float, identity: dict[str, Any]) -> Checkpointer | None:
    """The search's checkpointer, its folder checked (kcheck's own checkpoint of this very search with --resume;
    else new, empty, or nothing there yet) before any work: one line, exit 2, nothing written."""
    if folder is None:
        return None
    try:
        manifest = read_manifest(folder)
        if manifest is not None and not resume:
            raise InputError("--checkpoint", f"{folder} holds a checkpoint already: --resume continues it (or remove "
                                             "the folder to start again)")
        if manifest is None and resume:
            raise InputError("--resume", f"{folder} holds no checkpoint to continue")
        ck = Checkpointer(folder, identity, every)
        if manifest is not None:
            ck.verify()
    except CheckpointError as e:
        raise InputError("--resume" if resume else "--checkpoint", str(e)) from None
    return ck


def _identity(resolved: ResolvedProtocol, cfg: Config, only: set[str] | None, modules: list[str] | None,
              symmetry: bool, reduce: bool, abstract: bool, order: str, workers: int, master: str | None = None
              ) -> dict[str, Any]:
    """What a checkpoint is of: a checkpoint resumes only the same search, under the same kcheck (its version, and
    a digest of the model's and invariants' code: a change to either can renumber states or change verdicts), in
    as many worker processes (each saved the share of the states it owns), on Spark or not (the Spark search's code
    in the digest; which master does not count: a saved search keeps its partitions on any master)."""
    from importlib.metadata import PackageNotFoundError, version

    import kcheck.invariants
    import kcheck.model

    try:
        mine = version("kcheck")
    except PackageNotFoundError:  # a source tree never installed
        mine = "unknown"
    roots = (*kcheck.model.__path__, *kcheck.invariants.__path__)
    code = _digest((root, path) for root in roots
                   for path in sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True)))
    identity = {"kcheck": mine, "code": code, "search": "exhaust", "protocol": resolved.label,
                "config": cfg.as_dict(), "invariants": None if only is None else sorted(only),
                "invariant_modules": list(modules or ()), "symmetry": symmetry, "reduce": reduce,
                "abstract": abstract, "order": order, "workers": workers}
    if master is not None:  # the Spark search's own code too (found without importing pyspark)
        spark = importlib.util.find_spec("kcheck.spark_check.exhaust")
        path = spark.origin if spark is not None and spark.origin else os.devnull
        identity.update(engine="spark", spark_code=_digest([(None, path)]))
    return identity


def _digest(files: Iterable[tuple[str | None, str]]) -> str:
    """One digest of source files, each (root, path): its path relative to root (when a root is given), then its
    bytes."""
    code = hashlib.blake2b(digest_size=16)
    for root, path in files:
        if root is not None:
            code.update(os.path.relpath(path, root).encode())
        with open(path, "rb") as f:
            code.update(f.read())
    return code.hexdigest()


# local, local[N], local[*], local[N,F]; spark://host:port[,host:port...]; yarn; k8s://...

def _engine_line(run: EngineRun) -> str:
    where = ("Spark" if run.engine == SPARK_ENGINE else
             f"{run.workers} worker processes" if run.workers > 1 else "one process")
    sym = "symmetry on" if run.symmetry else f"symmetry off ({run.symmetry_note})"
    bps = run.result.bytes_per_state
    store = f", {bps:.0f} bytes a stored state" if bps else ""
    spilled = f", {_size(run.result.spilled_bytes)} of frontier spilled" if run.result.spilled_bytes else ""
    disk = run.result.visited_disk_bytes
    spilled += f", {_size(disk)} of visited fingerprints on disk" if disk else ""
    order = f", order {run.result.order}" if getattr(run.result, "order", "bfs") != "bfs" else ""
    red = ("" if run.reduction_off == "not asked for" else ", reduction off (" + run.reduction_off + ")"
           if run.reduction_off else ", reduction on")
    return f"engine: {run.engine}, {where}{order}, {sym}{red}{store}{spilled}"


def _spark_search(model_factory: Any, master: str, **kwargs: Any) -> Any:
    """`exhaust --master`: the search on Spark (spark_check.exhaust), its failure to start as SearchSetupError."""
    try:
        from kcheck.spark_check.exhaust import SparkExhaustError, spark_exhaust  # pyspark only when asked
    except ImportError as e:
        raise SearchSetupError(f"the Spark search is not available: {e}") from None
    try:
        return spark_exhaust(model_factory, master, **kwargs)
    except SparkExhaustError as e:
        raise SearchSetupError(str(e)) from None


def _run_exhaust(saver: Checkpointer | None, resume: bool, resolved: ResolvedProtocol, probe: Any, cfg: Config,
                 **kwargs: Any) -> EngineRun:
    """The search, its setup failures as --master's; with a checkpoint, a signal is only recorded while it runs,
    the search stops at the next point it can save and the command then ends as interrupted (exit 130), saying
    where the search was saved."""
    stop = None
    if saver is not None:
        def stop() -> str | None:
            return "interrupted" if interrupts.interrupted() is not None else None
    try:
        with interrupts.deferred() if saver is not None else contextlib.nullcontext():
            result: EngineRun = run_engine("exhaustive search", resolved, run_exhaust,
                                           probe.protocol if probe else resolved.protocol, cfg, label=resolved.label,
                                           probe=probe, spark_search=_spark_search, checkpoint=saver, resume=resume,
                                           stop=stop, **kwargs)
    except SearchSetupError as e:
        raise InputError("--master", str(e)) from None
    if saver is not None:
        signum = interrupts.interrupted()
        if signum is not None:
            interrupts.note(f"the search was saved in {saver.folder}: --resume continues it")
            raise interrupts.Interrupted(signum)
        if resume:
            result.notes.append(f"resumed from the checkpoint in {saver.folder}; seconds and memory are this run's")
        if result.stop_reason is not None and result.trace is None:
            result.notes.append(f"the search was saved in {saver.folder}: --resume continues it")
    return result


def exhaust_command(
    protocol: ProtocolOpt = "current",
    brokers: BrokersOpt = None,
    replication_factor: ReplicationFactorOpt = None,
    min_isr: MinIsrOpt = None,
    initial_isr: InitialIsrOpt = None,
    acks: AcksOpt = None,
    records: RecordsOpt = None, max_leader_epoch: MaxLeaderEpochOpt = None, crashes: CrashesOpt = None,
    lossy_crashes: LossyCrashesOpt = None, fences: FencesOpt = None, elections: ElectionsOpt = None,
    isr_shrinks: IsrShrinksOpt = None, failovers: FailoversOpt = None, reads: ReadsOpt = None,
    reassignments: ReassignmentsOpt = None, cancels: CancelsOpt = None, duplicates: DuplicatesOpt = None,
    atomic_fetch: AtomicFetchOpt = None,
    metadata: MetadataOpt = None,
    list_offsets: ListOffsetsOpt = None,
    shutdowns: ShutdownsOpt = None,
    unclean_elections: UncleanElectionsOpt = None,
    abstract: Annotated[bool, typer.Option(
        help="Merge states that differ only in control messages in flight: finds much deeper "
             "counterexamples, but a clean result is no proof.")] = False,
    max_states: Annotated[int | None, typer.Option(
        min=1, max=0xFFFFFFFE, show_default=False,
        help=f"Store at most this many states (then incomplete, exit 4). Default: the memory cap over "
             f"{RSS_BYTES_PER_STATE} bytes, what a stored state costs with its share of the frontier.")] = None,
    max_seconds: Annotated[float, typer.Option(
        min=0, max=1e9, help="Stop after this many seconds (0: no limit; then incomplete, exit 4).")] = 0,
    max_memory: Annotated[str, typer.Option(
        metavar="SIZE", help="Stop when kcheck's resident memory (with its workers') reaches SIZE (4G, 512M; 0: no "
                             "cap; then incomplete, exit 4). Default auto: a quarter of this machine's memory.")
                          ] = "auto",
    workers: Annotated[int, typer.Option(
        min=1, max=1024, help="Processes on this machine, each owning a share of the visited states (a complete "
                              "run gives the same counts as one).")] = 1,
    master: Annotated[str | None, typer.Option(
        metavar="URL", help="Run the search on Spark: spark://HOST:7077 (a standalone cluster) or local[N].")] = None,
    symmetry: Annotated[bool, typer.Option(
        "--symmetry/--no-symmetry",
        help="Merge states that differ only by renaming interchangeable brokers (those outside the replica set; "
             "off where reassignment or a user's rule could tell them apart: said in the output).")] = True,
    reduce: Annotated[bool, typer.Option(
        "--reduce/--no-reduce",
        help="Take at once the steps no verdict depends on: a follower applying a KRaft metadata batch that keeps "
             "its leader and leader epoch (not with controlled shutdowns or reassignments), and a flush once no "
             "lossy crash is left; all of it off with a user's rules or invariants (said in the output). A complete "
             "run is the same "
             "proof over fewer states; a counterexample is a run of the model with those steps written out, not "
             "necessarily a shortest one.")] = False,
    spill_dir: Annotated[str | None, typer.Option(
        metavar="DIR", help="Write the frontier to files in DIR (created) when it outgrows memory.")] = None,
    visited_memory: Annotated[str | None, typer.Option(
        metavar="SIZE", help="Keep at most SIZE (512M, 2G) of visited fingerprints in memory, the rest sorted on disk "
                             "(in the --checkpoint folder, else --spill-dir, else the temporary folder; unlinked, "
                             "never left behind): the same search, slower. With --workers each gets a share. "
                             "Default: all in memory.")] = None,
    order: Annotated[str, typer.Option(
        metavar="ORDER", help="Which stored state to expand next: bfs (breadth first: shortest counterexamples), "
                              "dfs (depth first) or novelty (best first: states with a belief of the replicas and "
                              "the controller not seen before first; finds deeper counterexamples). Every order "
                              "stores every state; a complete run is the same proof. dfs and novelty: one process, "
                              "a counterexample that need not be shortest.")] = "bfs",
    checkpoint: Annotated[str | None, typer.Option(
        metavar="DIR", help="Save the search to DIR (created; kcheck writes only into a new or empty folder or its "
                            "own checkpoint) every --checkpoint-every seconds, when a cap stops it and on Ctrl-C or "
                            "SIGTERM (exit 130); --resume continues it. In one process in any --order, with "
                            "--workers N (each saves its share, inside a level; resumed with as many), or with "
                            "--master (the driver saves the last whole level; Ctrl-C ends at once, keeping the last "
                            "checkpoint; resumed on any master).")] = None,
    checkpoint_every: Annotated[float, typer.Option(
        min=0.01, max=1e9, metavar="SECONDS", help="Seconds between two checkpoints.")] = 300.0,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue the search saved in --checkpoint DIR (the same protocol, bounds, options and "
                         "kcheck, else exit 2): it ends with the counts, depth and counterexample of a run never "
                         "cut.")] = False,
    invariant: InvariantOpt = None,
    invariants: InvariantsOpt = None,
    out: OutOpt = None,
    coverage_dir: CoverageDirOpt = None,
    json_out: JsonOpt = False,
    kafka_version: KafkaVersionOpt = None,
    progress: ProgressOpt = None,
    quiet: QuietOpt = False,
) -> int:
    """Explore every reachable state within the bounds, breadth first (or in another --order); a violation comes with
    the shortest trace that reaches it (with --order dfs or novelty, a trace that reaches it). Exit status: 0 no
    invariant violated in any reachable state (a proof within the bounds), 1 a counterexample, 2 bad input, 3 no
    invariant violated but a rule the protocol changes never answered differently from today's rule in the states
    visited, 4 no invariant violated but the search did not cover its bounds (--max-states, --max-seconds, --max-memory,
    or --abstract)."""
    mem_cap, mem_text = parse_memory(max_memory)
    budget = _engine_options(workers, master, spill_dir, visited_memory)
    _order_option(order, workers, master, spill_dir)
    _checkpoint_options(checkpoint, resume, coverage_dir)
    small = {"brokers": 2, "min_isr": 1, "records": 2, "max_leader_epoch": 3, "crashes": 1, "lossy_crashes": 1,
             "fences": 1, "elections": 1, "isr_shrinks": 1, "failovers": 1, "reads": 1}
    given = config_options(
        brokers=brokers, replication_factor=replication_factor, min_isr=min_isr, initial_isr=initial_isr, acks=acks,
        records=records, max_leader_epoch=max_leader_epoch, crashes=crashes, lossy_crashes=lossy_crashes,
        fences=fences, elections=elections, isr_shrinks=isr_shrinks, failovers=failovers, reads=reads,
        reassignments=reassignments, cancels=cancels, duplicates=duplicates, atomic_fetch=atomic_fetch,
        metadata=metadata, list_offsets=list_offsets, shutdowns=shutdowns,
        unclean_elections=unclean_elections)
    prep = _prepare(out, protocol, invariant, invariants, small, given, kafka_version, coverage_dir)
    resolved, cfg, only, probe = prep.resolved, prep.config, prep.only, prep.probe
    if max_states is None:
        max_states = default_max_states(mem_cap if mem_cap is not None else parse_memory("auto")[0])
    identity = _identity(resolved, cfg, only, invariants, symmetry, reduce, abstract, order, workers, master)
    saver = _checkpointer(checkpoint, resume, checkpoint_every, identity)
    uncovered = saver is not None and probe is not None
    if uncovered:  # what the probe records is not in a checkpoint: a checkpointed search does without it
        probe = None
    _make_spill_dir(spill_dir)
    result = _run_exhaust(saver, resume, resolved, probe, cfg, only=only, abstract=abstract,
                          max_states=max_states, max_seconds=max_seconds or None, max_rss=mem_cap,
                          progress=progress_printer(progress, quiet), workers=workers, master=master,
                          symmetry=symmetry, spill_dir=spill_dir, modules=tuple(invariants or ()), order=order,
                          reduce=reduce, visited_memory=budget)
    if uncovered:
        result.notes.append("change coverage is not recorded by a search with --checkpoint (no exit 3)")
    write_trace(out, result.trace)
    written = _write_coverage(coverage_dir, probe)
    if result.tally is not None:
        summary = result.tally.summary(only, prep.not_selected)
    else:  # Spark: every state was checked; in how many the bounds switched an invariant off is not counted
        summary = {**InvariantTally(states=result.states).summary(only, prep.not_selected), "switched_off": None}
    rate = result.states / result.seconds if result.seconds else 0.0
    code = exit_for(result.trace is not None, probe, result.complete)
    stopped_by = ("violation" if result.trace is not None else result.stop_reason
                  or ("abstract" if result.abstract else None))
    caps = {"max_states": max_states, "max_seconds": max_seconds or None, "max_memory_bytes": mem_cap}
    r = result.result
    if json_out:
        print(json.dumps({"protocol": resolved.label, "config": cfg.as_dict(), "ok": result.trace is None,
                          "exit_status": int(code), "complete": result.complete, "stopped_by": stopped_by,
                          "violation_found": result.trace is not None,
                          "stopped_at_max_states": result.stop_reason == "max-states",
                          "caps": caps, "peak_rss_bytes": result.peak_rss,
                          "abstract": result.abstract, "states": result.states, "transitions": result.transitions,
                          "depth": result.depth, "seconds": round(result.seconds, 3),
                          "engine": result.engine, "workers": result.workers, "order": order,
                          "bytes_per_state": None if r.bytes_per_state is None else round(r.bytes_per_state, 1),
                          "collision_probability": r.collision_probability,
                          "frontier_peak": r.frontier_peak, "spilled_bytes": r.spilled_bytes,
                          "visited_memory_bytes": budget, "visited_disk_bytes": r.visited_disk_bytes,
                          "symmetry": "on" if result.symmetry else "off", "symmetry_note": result.symmetry_note,
                          "reduction": "off" if result.reduction_off else "on",
                          "reduction_note": result.reduction_off,
                          "notes": result.notes, "invariants": summary,
                          "coverage": _coverage_json(probe, prep.unchanged),
                          "trace": json.loads(result.trace.to_json()) if result.trace else None}, indent=2))
        return code
    con = report.console()
    con.print(f"protocol {escape(resolved.label)}: {escape(resolved.protocol.description)}")
    con.print(f"bounds: {escape(config_line(cfg))}")
    con.print(f"caps: --max-states {max_states:,}, --max-seconds {f'{max_seconds:g}' if max_seconds else 'none'}, "
              f"--max-memory {escape(mem_text)}")
    con.print(escape(_engine_line(result)))
    for note in result.notes:
        con.print(f"note: {escape(note)}")
    con.print(f"{result.states:,} {'abstract ' if result.abstract else ''}states, {result.transitions:,} transitions, "
              f"depth {result.depth}, {result.seconds:.1f} s ({rate:,.0f} states/s), peak memory "
              f"{_size(result.peak_rss)}")
    stop_line = {
        "max-states": f"stopped at --max-states {max_states:,}",
        "max-seconds": f"stopped by --max-seconds {max_seconds:g}",
        "max-memory": f"stopped by --max-memory {mem_text}",
    }
    if result.complete:
        con.print(f"search complete: every reachable state within the bounds was visited (a proof within them, up "
                  f"to a fingerprint collision: probability at most {r.collision_probability:.1g}).")
    elif result.trace is not None:
        con.print("search stopped at the first violation: not every reachable state was visited.")
    elif result.stop_reason in stop_line and order != "bfs":
        con.print(f"search INCOMPLETE: {escape(stop_line[result.stop_reason])}; --order {order} visited states "
                  f"down to depth {result.depth} without covering any depth in full.")
    elif result.stop_reason in stop_line:
        con.print(f"search INCOMPLETE: {escape(stop_line[result.stop_reason])} while expanding depth "
                  f"{result.depth}; every state up to depth {result.depth} was visited, deeper ones only in part.")
    else:
        con.print("search INCOMPLETE: the abstract search keeps one state per abstract state.")
    _print_invariants(summary)
    _print_coverage(probe, prep.unchanged, resolved.label, written)
    if result.trace is None:
        if result.abstract and result.stop_reason is None:
            con.print("INCOMPLETE: no invariant violated in any state the abstract search kept (not a proof: "
                      "it explores one state per abstract state; exit 4).")
        elif result.complete:
            con.print("OK: no invariant violated in any reachable state.")
        else:
            con.print(f"INCOMPLETE: no invariant violated in the {result.states:,} states visited, but the search "
                      "did not cover its bounds: not a pass (exit 4). Raise the cap, or narrow the bounds.")
        line = _unexercised_line(probe)
        if line:
            con.print(escape(line))
        return code
    title = (f"Shortest counterexample ({len(result.trace.steps)} steps)" if order == "bfs" else
             f"Counterexample ({len(result.trace.steps)} steps; --order {order}: a run of the model, not "
             f"necessarily a shortest one)")
    _print_trace(result.trace, resolved, title, only)
    con.print("FAIL" + (f"; trace written to {escape(out)}" if out else "; --out FILE saves the trace."))
    return Exit.FAILED


def _replay_protocol(trace_file: str, label: str, given: str | None, kafka_version: str | None = None
                     ) -> ResolvedProtocol:
    """A trace is data, never code: its protocol field is resolved only as a built-in name. A module:object
    protocol is loaded only from --protocol on the command line; the trace's field is then a label that must
    name the same plug-in (a built-in --protocol replays under that protocol instead). `current@VERSION` replays
    under that release's rules, plain `current` under the newest's; --kafka-version overrides both."""
    if given is None:
        current = current_protocol(label, kafka_version, trace_file, "field 'protocol': ")
        if current is not None:
            return current
        not_current_protocol(label, kafka_version)
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
    return protocol_option(given, kafka_version)


def replay_command(
    trace_file: Annotated[str, typer.Argument(help="A trace written by explore or exhaust --out (or --coverage-dir).")],
    protocol: Annotated[str | None, typer.Option(help="Replay under another protocol than the trace's.")] = None,
    brokers: BrokersOpt = None,
    replication_factor: ReplicationFactorOpt = None,
    min_isr: MinIsrOpt = None,
    initial_isr: InitialIsrOpt = None,
    acks: AcksOpt = None,
    records: RecordsOpt = None, max_leader_epoch: MaxLeaderEpochOpt = None, crashes: CrashesOpt = None,
    lossy_crashes: LossyCrashesOpt = None, fences: FencesOpt = None, elections: ElectionsOpt = None,
    isr_shrinks: IsrShrinksOpt = None, failovers: FailoversOpt = None, reads: ReadsOpt = None,
    reassignments: ReassignmentsOpt = None, cancels: CancelsOpt = None, duplicates: DuplicatesOpt = None,
    atomic_fetch: AtomicFetchOpt = None,
    metadata: MetadataOpt = None,
    list_offsets: ListOffsetsOpt = None,
    shutdowns: ShutdownsOpt = None,
    unclean_elections: UncleanElectionsOpt = None,
    invariants: InvariantsOpt = None,
    json_out: JsonOpt = False,
    kafka_version: Annotated[str | None, typer.Option(
        "--kafka-version", metavar="VERSION",
        help="Replay a current-protocol trace under this release's rules (default: the release the trace "
             "names, else the newest).")] = None,
    on_cluster: Annotated[bool, typer.Option(
        "--on-cluster", help="Play the trace's faults and operator steps on real KRaft brokers (the cluster in "
                             "--dir if one runs there, else a new one of --kafka-version, default 4.4.0; a variant's "
                             "rules stay its own) and compare the cluster with the model step by step.")] = False,
    cluster_dir: Annotated[str | None, typer.Option(
        "--dir", help="With --on-cluster: the folder of a cluster `kcheck cluster up --dir` started (else one is "
                      "started in this new folder, or a temporary one, and stopped at the end).")] = None,
) -> int:
    """Replay a trace step by step and show every replica's log, the leader, epochs, ISR and high watermarks.
    A setting given as an option replaces the trace's; the invariants checked are the ones the trace's run
    checked (its `invariants`), else all. With --on-cluster, the trace runs on real brokers too (exit 0: the
    cluster did what the model predicts at every mapped step and lost the same acknowledged records)."""
    if cluster_dir is not None and not on_cluster:
        raise InputError("--dir", "only goes with --on-cluster")
    given = config_options(
        brokers=brokers, replication_factor=replication_factor, min_isr=min_isr, initial_isr=initial_isr, acks=acks,
        records=records, max_leader_epoch=max_leader_epoch, crashes=crashes, lossy_crashes=lossy_crashes,
        fences=fences, elections=elections, isr_shrinks=isr_shrinks, failovers=failovers, reads=reads,
        reassignments=reassignments, cancels=cancels, duplicates=duplicates, atomic_fetch=atomic_fetch,
        metadata=metadata, list_offsets=list_offsets, shutdowns=shutdowns,
        unclean_elections=unclean_elections)
    text = read_text(trace_file)
    load_invariants(invariants)  # before the trace's invariant ids are checked
    try:
        trace = Trace.from_json(text)  # checked against the trace schema first (invariants/trace_schema.py)
    except ValueError as e:
        raise InputError(trace_file, str(e)) from None
    # with --on-cluster, --kafka-version is the cluster's release; a variant's rules stay its own
    model_release = kafka_version if not on_cluster or (protocol or trace.protocol).startswith("current") else None
    resolved = _replay_protocol(trace_file, trace.protocol, protocol, model_release)
    cfg = config_option(ResolvedProtocol(resolved.protocol, resolved.label, None), trace.config.as_dict(), given)
    if cfg != trace.config:  # the steps again, against the settings given (a broker the cluster no longer has)
        data = json.loads(trace.to_json())
        data["config"] = cfg.as_dict()
        try:
            check_trace(data)
        except ValueError as e:
            named = ", ".join(f"--{k.replace('_', '-')}" for k, v in given.items() if v is not None)
            raise InputError(trace_file, f"with {named}: {e}") from None
    trace = replace(trace, config=cfg)
    if on_cluster:
        from kcheck.cluster.replay import prepare_cluster, replay_on_cluster

        cluster = prepare_cluster(kafka_version, cluster_dir, cfg.brokers)  # checked before the model runs
        try:
            model_steps = replay(trace, resolved.protocol)
        except ReplayError as e:
            raise InputError(trace_file, f"{e} under protocol {resolved.label}") from None
        outcome, info = replay_on_cluster(trace, resolved, model_steps, cluster)
        return _cluster_report(outcome, info, trace_file, resolved.label, json_out)
    only = None if trace.invariants is None else set(trace.invariants)
    probe, unchanged = _probe(resolved)
    tally = InvariantTally()
    try:
        steps = run_engine("replay", resolved, replay, trace, probe.protocol if probe else resolved.protocol, only,
                                 tally, probe)
    except ReplayError as e:
        raise InputError(trace_file, f"{e} under protocol {resolved.label}") from None
    violations = steps[-1].violations
    summary = tally.summary(only)
    differing: list[dict[str, Any]] = [{"step": n, "rule": rule, "answers": answers}
                                       for n, rule, answers in (probe.steps if probe else [])]
    if json_out:
        print(json.dumps({"protocol": resolved.label, "config": cfg.as_dict(), "steps": len(steps) - 1,
                          "ok": not violations, "violations": [v.as_dict() for v in violations],
                          "invariants": summary, "differing_answers": differing if probe else None}, indent=2))
        return 1 if violations else 0
    con = report.console()
    con.print(trace_table(steps, f"{escape(trace_file)} under protocol {escape(resolved.label)}"))
    if given != dict.fromkeys(given):
        con.print(f"settings: {escape(config_line(cfg))}")
    for v in violations:
        con.print(f"[bold red]{v.invariant}[/] at {escape(v.where)}: {escape(v.message)}")
    _print_invariants(summary)
    if probe is not None:
        if not differing:
            con.print(f"no changed rule answered differently from today's ({probe.baseline_label}) in this run")
        for d in differing:
            con.print(f"step {d['step']}: rule {d['rule']} answered differently from today's "
                      f"({probe.baseline_label}): {escape(str(d['answers']))}")
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
    return {k: fn for k, fn in v.rules().items() if current.rules()[k] != fn}


__all__ = ["exhaust_command", "explore_command", "replay_command", "trace_table", "variants_command"]


def _cluster_report(out: Outcome, info: dict[str, Any], trace_file: str, label: str, json_out: bool) -> int:
    """A trace replayed on a real cluster (`replay --on-cluster`): the model's and the cluster's steps side by side."""
    code = Exit.OK if out.outcome_matches and not out.differs else Exit.FAILED
    if json_out:
        print(json.dumps({"trace": trace_file, "protocol": label, "cluster": info,
                          "steps": [asdict(r) for r in out.rows],
                          "final": {"model_leader": out.model_leader, "cluster_leader": out.cluster_leader,
                                    "model_acknowledged": out.model_acked, "model_lost": out.model_lost,
                                    "cluster_acknowledged": out.cluster_acked, "cluster_read": out.cluster_read,
                                    "cluster_lost": out.cluster_lost},
                          "model_violations": out.model_violations, "differs_at": out.differs, "notes": out.notes,
                          "reproduced": out.reproduced, "outcome_matches": out.outcome_matches,
                          "verdict": verdict(out)}, indent=2))
        return code
    from rich.markup import escape
    from rich.table import Table

    from kcheck import report as rep
    con = rep.console()
    table = Table(title=f"{escape(trace_file)} under protocol {escape(label)} on Kafka {info['kafka_version']} "
                        f"(topic {info['topic']})")
    for col in ("step", "model step", "cluster action", "model says", "cluster shows", ""):
        table.add_column(col)
    for r in out.rows:
        style = {"match": "green", "differs": "bold red"}.get(r.verdict, "dim")
        table.add_row(str(r.number), escape(r.model_step), escape(r.cluster_action), escape(r.model_says),
                      escape(r.cluster_shows), f"[{style}]{r.verdict}[/]")
    con.print(table)
    con.print(f"brokers: {info['broker_mapping']}; unclean.leader.election.enable="
              f"{str(info['unclean_leader_election']).lower()}")
    con.print(f"model (last step): leader {out.model_leader}, acknowledged {', '.join(out.model_acked) or 'none'}, "
              f"lost {', '.join(out.model_lost) or 'none'}")
    con.print(f"cluster (healed): leader {out.cluster_leader}, acknowledged {', '.join(out.cluster_acked) or 'none'}, "
              f"read back {', '.join(out.cluster_read) or 'none'}, lost {', '.join(out.cluster_lost) or 'none'}")
    for note in out.notes:
        con.print(f"note: {escape(note)}")
    if out.differs:
        con.print(f"steps where the cluster differs from the model: {', '.join(map(str, out.differs))}")
    con.print(("OK: " if code == Exit.OK else "DIFFERS: ") + escape(verdict(out)))
    sys.stdout.flush()
    return code
