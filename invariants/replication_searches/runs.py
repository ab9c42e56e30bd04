"""What every search over the replication model shares (the former networkx search of yardstick.py, the one
engine's exhaustive run in exhaustive.py, its random search in random_runs.py, `kcheck replay`):

- `Trace`: a counterexample as data, JSON in and out (`trace_schema.check_trace` first), replayed step by step
  (`replay`; `split_fetches` and `split_run` turn an atomic-fetch trace into the split model's run);
- `InvariantTally`: which invariants a run checked, in how many states, and which its bounds switched off and why;
- `ChangeProbe`: for a protocol that differs from today's, in how many visited states each changed rule was asked
  and answered differently from today's rule, with the shortest run to a differing answer (`today_for` picks
  today's rules to compare with, `probed_successors` steps one action at a time through the probe);
- `SearchProgress` and `rss_bytes`: the snapshot a long search hands its `progress` callback;
- the abstractions of a state: `abstract_key` (what `--abstract` compares: the state without the control messages
  in flight) and `novelty_key` (what the random search's corpus and exhaust's order "novelty" rank states by);
- `resolve_protocol`: `current`, a variant name or `module:object` as a `Protocol`.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from kcheck.invariants.registry import REGISTRY, Report, Violation
from kcheck.invariants.replication import check_replication
from kcheck.invariants.trace_schema import check_trace
from kcheck.model.replication.actions import KINDS, Action, Config, apply, initial_state
from kcheck.model.replication.protocol import LIVENESS_VARIANTS, VARIANTS, Protocol, Variant
from kcheck.model.replication.state import (
    AlterPartition,
    AlterPartitionResponse,
    LeaderAndIsr,
    State,
    StopReplica,
    evolve,
)
from kcheck.reference import plugins

TRACE_FORMAT = 2  # 2: LeaderAndIsr names the replica set; StopReplica, reassign, cancel_reassignment


@dataclass(frozen=True)
class Trace:
    protocol: str  # a variant name, "current", or module:object
    config: Config
    steps: tuple[Action, ...]
    violations: tuple[Violation, ...] = ()
    invariants: tuple[str, ...] | None = None  # the ids the run checked (replay checks the same); None: all

    def to_json(self) -> str:
        out: dict[str, Any] = {
            "format": TRACE_FORMAT,
            "protocol": self.protocol,
            "config": self.config.as_dict(),
            "steps": [a.as_dict() for a in self.steps],
            "violations": [v.as_dict() for v in self.violations],
        }
        if self.invariants is not None:
            out["invariants"] = sorted(self.invariants)
        return json.dumps(out, indent=2)

    @classmethod
    def from_json(cls, text: str) -> Trace:
        """Raises ValueError with a one-line reason on anything malformed."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"not JSON ({e.msg} at line {e.lineno})") from None
        except RecursionError:  # json's parser recurses once per nesting level
            raise ValueError("JSON nested too deeply to be a trace") from None
        if isinstance(data, dict) and data.get("format", TRACE_FORMAT) != TRACE_FORMAT:
            raise ValueError(f"trace format {data.get('format')!r} is not {TRACE_FORMAT}")
        config = check_trace(data)  # every field's type and range, before any of it is used
        steps = []
        for n, d in enumerate(data["steps"], 1):
            try:
                steps.append(Action.from_dict(d))
            except (KeyError, TypeError, ValueError) as e:  # not expected after check_trace; still one line
                raise ValueError(f"step {n}: {type(e).__name__}: {e}") from None
        checked = data.get("invariants")
        return cls(data["protocol"], config, tuple(steps), (), None if checked is None else tuple(checked))


@dataclass(frozen=True)
class ReplayStep:
    number: int
    action: Action | None  # None for the initial state
    state: State
    violations: tuple[Violation, ...]


class ReplayError(ValueError):
    """A trace step is not enabled where the trace puts it."""


# ---- what a run checked, and what it exercised ---------------------------------------------------

def replication_ids(only: set[str] | None = None) -> tuple[str, ...]:
    """The replication invariants a run with `only` checks (all registered ones when None), in registry order."""
    return tuple(i for i, v in REGISTRY.items() if v.applies_to == "replication" and (only is None or i in only))


@dataclass
class InvariantTally:
    """Which invariants a run checked: the states checked, and per invariant the states in which its own
    condition switched it off (`not_applicable`: durability once min.insync.replicas replicas lost unflushed
    records, the reassignment invariants when nothing reassigns, ...), with the first reason given."""

    states: int = 0
    off: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def check(self, s: State, cfg: Config, only: set[str] | None) -> tuple[Violation, ...]:
        report: Report = check_replication(s, cfg, only)
        self.states += 1
        for i, why in report.skipped.items():
            self.off[i] = self.off.get(i, 0) + 1
            self.reasons.setdefault(i, why)
        return report.hard_violations

    def summary(self, only: set[str] | None, not_selected: dict[str, str] | None = None) -> dict[str, Any]:
        """`checked`: ids checked in every state; `switched_off`: checked in some states only (how many were
        not, and why); `not_checked`: ids no state checked, or that the run did not select, and why."""
        checked, partly, never = [], [], []
        for i in replication_ids(only):
            n = self.off.get(i, 0)
            if n == 0:
                checked.append(i)
            elif n < self.states:
                partly.append({"invariant": i, "states_off": n, "states": self.states, "reason": self.reasons[i]})
            else:
                never.append({"invariant": i, "reason": self.reasons[i]})
        for i, why in (not_selected or {}).items():
            never.append({"invariant": i, "reason": why})
        return {"states": self.states, "checked": checked, "switched_off": partly, "not_checked": never}


class _Raised:
    """Today's rule raised on inputs the changed rule was asked with: an answer that differs from any value."""

    def __init__(self, e: BaseException) -> None:
        self.text = f"raised {type(e).__name__}: {e}"

    def __repr__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Raised) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass
class RuleCoverage:
    """One changed rule in a run: in how many visited states it was asked and answered differently from today's
    rule, and the shortest run found to a differing answer (`trace`: its last step is the action in which the
    rule answered, unless that action was not enabled under the protocol, `enabled` False)."""

    rule: str
    yours: str  # the function the protocol uses
    today: str  # today's function for the rule
    asked: int = 0  # visited states in which the rule was asked
    differed: int = 0  # visited states in which one of its answers differed from today's rule's
    calls: int = 0
    differing_calls: int = 0
    trace: Trace | None = None
    enabled: bool = True
    where: str = ""  # the action being decided and both answers, for the shortest differing run

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "function": self.yours, "today": self.today, "asked_states": self.asked,
                "differed_states": self.differed, "calls": self.calls, "differing_calls": self.differing_calls,
                "where": self.where or None, "last_step_enabled": self.enabled if self.trace else None,
                "trace": json.loads(self.trace.to_json()) if self.trace else None}


def changed_rules(protocol: Protocol, baseline: Protocol) -> list[str]:
    """Every callable field of `protocol` whose function is not `baseline`'s (through any wrappers: a user's
    rules are guarded, `plugins.guard_rules`)."""
    out = []
    for f in fields(Protocol):
        mine, today = getattr(protocol, f.name), getattr(baseline, f.name)
        if callable(mine) and inspect.unwrap(mine) is not inspect.unwrap(today):
            out.append(f.name)
    return out


def today_for(protocol: Protocol) -> tuple[Protocol, str]:
    """Today's rules to compare a changed protocol with: of the releases kcheck knows (`current@VERSION`, newest
    first) and `Protocol.current()`, the one it differs from in the fewest rules (a user's protocol written as
    `replace(Protocol.current(), ...)` is compared with that release, not with one whose controller rules differ)."""
    from kcheck.reference import releases

    candidates = [(releases.profile(v).protocol(), f"current@{v}") for v in releases.RELEASES]
    candidates.append((Protocol.current(), "current"))
    return min(candidates, key=lambda c: len(changed_rules(protocol, c[0])))  # min keeps the first (newest) tie


class ChangeProbe:
    """Change coverage: `protocol` is the given protocol with every rule that differs from `baseline` wrapped
    so that each call also asks today's rule (with the same arguments) and records whether the answers differ.
    The engines call `visit` once per state whose successors they compute (a `key` seen before is not counted
    again), `begin` before and `end` after computing each action."""

    def __init__(self, protocol: Protocol, baseline: Protocol, baseline_label: str) -> None:
        self.baseline_label = baseline_label
        self.baseline = baseline
        names = changed_rules(protocol, baseline)
        self.coverage = {n: RuleCoverage(n, _fn_name(getattr(protocol, n)), _fn_name(getattr(baseline, n)))
                         for n in names}
        self.visited = 0  # distinct states visited with the probe recording
        self.steps: list[tuple[int, str, str]] = []  # replay: (step, rule, both answers)
        self._seen: set[int] = set()
        self._recording = True
        self._shadow = 0
        self._asked_in = dict.fromkeys(names, -1)
        self._differed_in = dict.fromkeys(names, -1)
        self._pending: list[tuple[str, Any, Any]] = []
        wrapped: dict[str, Any] = {n: self._wrap(n, getattr(protocol, n), getattr(baseline, n)) for n in names}
        self.protocol = replace(protocol, **wrapped)

    @property
    def unexercised(self) -> list[str]:
        """The changed rules that never answered differently from today's rule."""
        return [n for n, c in self.coverage.items() if not c.differed]

    def _wrap(self, name: str, mine: Callable[..., Any], today: Callable[..., Any]) -> Callable[..., Any]:
        cov = self.coverage[name]

        def probed(*args: Any, **kwargs: Any) -> Any:
            answer = mine(*args, **kwargs)
            if self._shadow or not self._recording:  # today's rule calling rules back, or a state seen before
                return answer
            self._shadow += 1
            try:
                theirs = today(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 - inputs today's rule never gets; a difference
                theirs = _Raised(e)
            finally:
                self._shadow -= 1
            cov.calls += 1
            if self._asked_in[name] != self.visited:
                self._asked_in[name] = self.visited
                cov.asked += 1
            try:
                same = bool(answer == theirs)
            except Exception:  # noqa: BLE001 - an answer that cannot be compared is not today's
                same = False
            if not same:  # counted by `end` if it changed the step's successor
                self._pending.append((name, answer, theirs))
            return answer

        probed.__wrapped__ = inspect.unwrap(mine)  # type: ignore[attr-defined]
        probed.__name__ = _fn_name(mine)
        return probed

    def visit(self, key: int | None = None) -> None:
        if key is not None:
            if key in self._seen:
                self._recording = False
                return
            self._seen.add(key)
        self._recording = True
        self.visited += 1

    def begin(self) -> None:
        self._pending = []

    def _same_successor(self, before: State, action: Action, cfg: Config) -> bool:
        """Whether `action` leads from `before` to the same state (or is disabled in both) under today's rules as
        under the changed ones: then the rules' differing answers had no effect there."""
        self._shadow += 1  # the changed rules answer without recording
        try:
            return apply(before, self.protocol, cfg, action) == apply(before, self.baseline, cfg, action)
        except Exception:  # noqa: BLE001 - today's rules failing where the changed ones did not: a difference
            return False
        finally:
            self._shadow -= 1

    def end(self, action: Action, nxt: State | None, path: Callable[[], tuple[Action, ...] | list[Action]],
            label: str, cfg: Config, *, depth: int | None = None, step: int | None = None,
            before: State | None = None) -> None:
        """After computing `action` from the visited state `before` (reached by `path()`, `depth` steps): an answer
        that differed from today's counts only if the step's successor differs too (given `before`); the shortest
        run to each differing answer is kept as a trace."""
        pending, self._pending = self._pending, []
        if pending and before is not None and self._same_successor(before, action, cfg):
            return
        for name, answer, theirs in pending:
            cov = self.coverage[name]
            cov.differing_calls += 1
            if self._differed_in[name] != self.visited:
                self._differed_in[name] = self.visited
                cov.differed += 1
            if step is not None:
                self.steps.append((step, name, f"today's rule answered {_short(theirs)}, this protocol's "
                                                f"{_short(answer)}"))
            length = (depth if depth is not None else len(path())) + (nxt is not None)
            if cov.trace is None or length < len(cov.trace.steps):
                steps = tuple(path()) + ((action,) if nxt is not None else ())
                cov.trace, cov.enabled = Trace(label, cfg, steps), nxt is not None
                cov.where = (f"{action.label()}: today's rule ({cov.today}) answered {_short(theirs)}, this "
                             f"protocol's ({cov.yours}) {_short(answer)}")


def _fn_name(fn: Any) -> str:
    return getattr(inspect.unwrap(fn), "__name__", type(fn).__name__)


def probed_successors(s: State, p: Protocol, cfg: Config, probe: ChangeProbe, path: Callable[[], Any], label: str,
                      depth: int | None = None) -> list[tuple[Action, State]]:
    """`actions.successors` one action at a time, so that each differing answer is tied to the action being
    computed (the same enumeration: tests/test_change_coverage.py compares the two)."""
    out: list[tuple[Action, State]] = []
    for kind, spec in KINDS.items():
        if not spec.possible(cfg):
            continue
        for args in spec.candidates(s, cfg):
            a = Action(kind, tuple(args))
            probe.begin()
            nxt = apply(s, p, cfg, a)
            probe.end(a, nxt, path, label, cfg, depth=depth, before=s)
            if nxt is not None:
                out.append((a, nxt))
    return out


def _prefix(steps: tuple[Action, ...], n: int) -> tuple[Action, ...]:
    return steps[:n]


def replay(trace: Trace, protocol: Protocol, only: set[str] | None = None, tally: InvariantTally | None = None,
           probe: ChangeProbe | None = None) -> list[ReplayStep]:
    """Re-run a trace from the initial state; every step must be enabled. Stops after the first
    step that violates an invariant (the rest of the trace could not have happened in a checker run).
    With a `probe` (whose `protocol` must be the one given), each step records whether a changed rule
    answered differently from today's (`probe.steps`)."""
    tally = tally if tally is not None else InvariantTally()
    s = initial_state(trace.config)
    out = [ReplayStep(0, None, s, tally.check(s, trace.config, only))]
    for n, a in enumerate(trace.steps, 1):
        if probe is not None:
            probe.visit()
            probe.begin()
        nxt = apply(s, protocol, trace.config, a)
        if probe is not None:
            probe.end(a, nxt, functools.partial(_prefix, trace.steps, n - 1), trace.protocol, trace.config,
                      depth=n - 1, step=n, before=s)
        if nxt is None:
            raise ReplayError(f"step {n} ({a.label()}) is not enabled in the state before it")
        s = nxt
        violations = tally.check(s, trace.config, only)
        out.append(ReplayStep(n, a, s, violations))
        if violations:
            break
    return out


def split_fetches(trace: Trace, protocol: Protocol) -> Trace:
    """The same run in the split model: every `fetch_round` becomes its fetch, handle_fetch and
    handle_fetch_response. Replaying the result checks that an atomic-fetch counterexample is a run of the
    model with three steps per fetch."""
    if not trace.config.atomic_fetch:
        return trace
    cfg = replace(trace.config, atomic_fetch=False)
    s, steps = initial_state(cfg), []
    for n, a in enumerate(trace.steps, 1):
        parts: list[Action | str] = (
            [Action("fetch", a.args), "handle_fetch", "handle_fetch_response"] if a.kind == "fetch_round" else [a])
        sent: frozenset = frozenset()
        for part in parts:
            if isinstance(part, str):  # handle the one request or response the previous part sent
                wanted = "Fetch" if part == "handle_fetch" else "FetchResponse"
                mine = [m for m in sent if m.kind == wanted]  # handle_fetch may also propose the follower
                if len(mine) != 1:
                    raise ReplayError(f"step {n} ({a.label()}) is not enabled in the split model")
                action = Action(part, (mine[0], False))
            else:
                action = part
            nxt = apply(s, protocol, cfg, action)
            if nxt is None:
                raise ReplayError(f"step {n} ({a.label()}) is not enabled in the split model")
            sent, s = nxt.pool - s.pool, nxt
            steps.append(action)
    return Trace(trace.protocol, cfg, tuple(steps), trace.violations)


def split_run(trace: Trace, protocol: Protocol, only: set[str] | None = None) -> Trace | None:
    """`split_fetches`, replayed: the split trace with the violations it ends in, or None if it breaks nothing."""
    split = split_fetches(trace, protocol)
    last = replay(split, protocol, only)[-1]
    return replace(split, violations=last.violations) if last.violations else None


# ---- how far a search got ------------------------------------------------------------------------

def rss_bytes() -> int:
    """This process's resident memory now (Linux /proc), else its peak (getrusage): what a memory cap compares."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


@dataclass(frozen=True)
class SearchProgress:
    """A snapshot a long search hands its `progress` callback (at most every `PROGRESS_SECONDS`, and once at
    the end with `final`)."""

    engine: str  # "exhaust" or "explore"
    states: int  # exhaust: states stored; explore: distinct states seen
    depth: int  # exhaust: the BFS level being expanded; explore: the longest program so far
    seconds: float
    rss: int  # bytes
    counts: tuple[tuple[str, int], ...] = ()  # engine-specific figures: transitions, queue, programs, steps
    final: bool = False


PROGRESS_SECONDS = 3.0
ProgressFn = Callable[[SearchProgress], None]


# ---- abstractions of a state --------------------------------------------------------------------

_CONTROL = (LeaderAndIsr, StopReplica, AlterPartition, AlterPartitionResponse)


def abstract_key(s: State) -> State:
    """What an abstract search compares: the state without the control messages in flight (LeaderAndIsr,
    StopReplica, AlterPartition and its response).

    Pending control messages are what multiply states: every election sends one LeaderAndIsr per replica,
    and each may arrive now, later or never. Merging the states that differ only in them keeps the one
    reached first, whose messages may be gone; fetch messages stay (they carry records). States are lost,
    so a clean abstract search proves nothing; a violation it finds is real, since every path it reports
    is a concrete run.
    """
    return evolve(s, pool=frozenset(m for m in s.pool if not isinstance(m, _CONTROL)))


def novelty_key(s: State) -> int:
    """What the replicas and the controller believe, without messages in flight or history: each replica's
    liveness, leader, leader epoch, the epochs of its log's records and its high watermark; the registry's leader,
    epoch, ISR, ELR and replicas; the budgets spent (why it is this coarse: random_runs.py's docstring)."""
    reg = s.registry
    return hash((tuple((r.alive, r.known, r.leader, r.leader_epoch, tuple(x.epoch for x in r.log), r.hw)
                       for r in s.replicas),
                 reg.leader, reg.leader_epoch, reg.isr, reg.elr, reg.replicas, len(s.zombies), s.used))


# ---- protocols by name ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ResolvedProtocol:
    protocol: Protocol
    label: str  # what the user typed: current, a variant name, or module:object
    variant: Variant | None  # the historical variant, with its row's settings and properties


def resolve_protocol(spec: str, *, allow_plugin: bool = True) -> ResolvedProtocol:
    """`current`, a variant name (see VARIANTS), or (unless `allow_plugin` is False, as for a name read from a
    trace file) `module:object` naming a Protocol, a Variant, or a function returning either. Raises ValueError
    with one clear line; a user's module that fails is a PluginError, and so is a rule of its protocol that raises."""
    if spec == "current":
        return ResolvedProtocol(Protocol.current(), spec, None)
    if spec in VARIANTS:
        return ResolvedProtocol(VARIANTS[spec].protocol, spec, VARIANTS[spec])
    if spec in LIVENESS_VARIANTS:  # a liveness row (kcheck liveness); its traces replay like any other
        return ResolvedProtocol(LIVENESS_VARIANTS[spec].protocol, spec, LIVENESS_VARIANTS[spec])
    if ":" not in spec or not allow_plugin:
        names = ", ".join([*VARIANTS, *LIVENESS_VARIANTS])
        raise ValueError(f"unknown protocol '{spec}' (expected current, one of {names}"
                         + (", or module:object)" if allow_plugin else ")"))
    obj = plugins.load(spec)
    if callable(obj) and not isinstance(obj, (Protocol, Variant)):
        plugins.takes(spec, obj, 0, plugins.PROTOCOL_SIGNATURE)  # a factory takes nothing: say so, in one line
        obj = plugins.call(spec, obj)
    rules = [f.name for f in fields(Protocol) if f.name not in ("name", "description")]
    if isinstance(obj, Variant):
        return ResolvedProtocol(plugins.guard_rules(spec, obj.protocol, rules), spec, obj)
    if isinstance(obj, Protocol):
        return ResolvedProtocol(plugins.guard_rules(spec, obj, rules), spec, None)
    raise ValueError(f"'{spec}' is a {type(obj).__name__}, not a Protocol or Variant")
