"""Engines for the replication model: Hypothesis stateful exploration, bounded exhaustive search, traces.

- `explore` generates a `RuleBasedStateMachine` with one rule per action kind (so Hypothesis's
  swarm testing switches whole kinds of steps off per test case), checks every replication
  invariant after each step, and returns the shrunk failing trace.
- `exhaust` walks every reachable state breadth first within the config's bounds, keeps the
  transition graph in networkx, and returns the shortest path to the first violating state.
- `Trace` is a counterexample as data: JSON in and out, replayable step by step.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

import networkx as nx
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from kcheck.invariants.registry import Violation
from kcheck.invariants.replication import check_replication
from kcheck.invariants.trace_schema import check_trace
from kcheck.model.replication.actions import KINDS, Action, Config, apply, initial_state, successors
from kcheck.model.replication.protocol import VARIANTS, Protocol, Variant
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

    def to_json(self) -> str:
        return json.dumps({
            "format": TRACE_FORMAT,
            "protocol": self.protocol,
            "config": self.config.as_dict(),
            "steps": [a.as_dict() for a in self.steps],
            "violations": [v.as_dict() for v in self.violations],
        }, indent=2)

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
        return cls(data["protocol"], config, tuple(steps))


@dataclass(frozen=True)
class ReplayStep:
    number: int
    action: Action | None  # None for the initial state
    state: State
    violations: tuple[Violation, ...]


class ReplayError(ValueError):
    """A trace step is not enabled where the trace puts it."""


def replay(trace: Trace, protocol: Protocol, only: set[str] | None = None) -> list[ReplayStep]:
    """Re-run a trace from the initial state; every step must be enabled. Stops after the first
    step that violates an invariant (the rest of the trace could not have happened in a checker run)."""
    s = initial_state(trace.config)
    out = [ReplayStep(0, None, s, check_replication(s, trace.config, only).hard_violations)]
    for n, a in enumerate(trace.steps, 1):
        nxt = apply(s, protocol, trace.config, a)
        if nxt is None:
            raise ReplayError(f"step {n} ({a.label()}) is not enabled in the state before it")
        s = nxt
        violations = check_replication(s, trace.config, only).hard_violations
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
            if isinstance(part, str):  # handle the one message the previous part sent
                if len(sent) != 1:
                    raise ReplayError(f"step {n} ({a.label()}) is not enabled in the split model")
                action = Action(part, (next(iter(sent)), False))
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


# ---- Hypothesis --------------------------------------------------------------------------------

@dataclass
class ExploreResult:
    protocol: str
    examples: int = 0  # test cases run (including shrinking)
    steps: int = 0  # actions taken in all
    seconds: float = 0.0
    trace: Trace | None = None  # shrunk counterexample


class _Found(AssertionError):
    pass


def _machine(protocol: Protocol, label: str, cfg: Config, only: set[str] | None,
             result: ExploreResult) -> type[RuleBasedStateMachine]:
    """A state machine class with one rule per action kind; `i` picks among that kind's enabled steps."""

    def __init__(self: Any) -> None:
        RuleBasedStateMachine.__init__(self)
        self.state = initial_state(cfg)
        self.steps = []  # list[Action]
        self._enabled = None  # dict[str, list[tuple[Action, State]]] | None
        result.examples += 1

    def enabled_of(self: Any, kind: str) -> list[tuple[Action, State]]:
        if self._enabled is None:
            grouped: dict[str, list[tuple[Action, State]]] = {}
            for a, nxt in successors(self.state, protocol, cfg):
                grouped.setdefault(a.kind, []).append((a, nxt))
            self._enabled = grouped
        return self._enabled.get(kind, [])

    def holds(self: Any) -> None:
        violations = check_replication(self.state, cfg, only).hard_violations
        if violations:
            result.trace = Trace(label, cfg, tuple(self.steps), violations)
            raise _Found(violations[0].message)

    namespace: dict[str, Any] = {"__init__": __init__, "enabled_of": enabled_of, "holds": invariant()(holds)}

    def make_rule(kind: str) -> Callable[..., None]:
        def step(self: Any, i: int) -> None:
            options = self.enabled_of(kind)
            action, nxt = options[i % len(options)]
            self.steps.append(action)
            self.state = nxt
            self._enabled = None
            result.steps += 1

        step.__name__ = kind
        return precondition(lambda self: bool(self.enabled_of(kind)))(rule(i=st.integers(0, 15))(step))

    kinds = [k for k, spec in KINDS.items() if spec.possible(cfg)]  # e.g. no reassign rule without a budget
    for kind in kinds:
        namespace[kind] = make_rule(kind)

    # A quiescent state (budgets spent, nothing left to heal) may have no step at all; Hypothesis
    # needs one enabled rule, so the run idles there. Idling is not recorded in the trace.
    def quiescent(self: Any) -> None:
        pass

    namespace["quiescent"] = precondition(lambda self: not any(self.enabled_of(k) for k in kinds))(
        rule()(quiescent))
    return type("ReplicationModel", (RuleBasedStateMachine,), namespace)


def explore(protocol: Protocol, cfg: Config, *, examples: int = 200, steps: int = 50, seed_value: int = 0,
            label: str | None = None, only: set[str] | None = None, shrink: bool = True) -> ExploreResult:
    """Run `examples` random programs of up to `steps` actions; on a violation, shrink and return the trace."""
    label = label or protocol.name
    result = ExploreResult(label)
    machine = seed(seed_value)(_machine(protocol, label, cfg, only, result))
    phases = [Phase.generate, Phase.shrink] if shrink else [Phase.generate]
    conf = settings(max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck), phases=phases, print_blob=False, derandomize=False,
                    report_multiple_bugs=False)
    start = time.perf_counter()
    try:
        run_state_machine_as_test(machine, settings=conf)
    except (_Found, Flaky):
        if result.trace is None:
            raise
    finally:
        result.seconds = time.perf_counter() - start
    return result


# ---- exhaustive ----------------------------------------------------------------------------

@dataclass
class ExhaustResult:
    protocol: str
    states: int = 0
    transitions: int = 0
    depth: int = 0  # BFS levels fully explored
    seconds: float = 0.0
    stopped: bool = False  # max_states refused a new state
    abstract: bool = False  # one representative per abstract state (`abstract_key`): finds, never proves
    trace: Trace | None = None  # shortest path to a violating state (within the abstraction, if abstract)
    graph: nx.DiGraph = field(default_factory=nx.DiGraph, repr=False)

    @property
    def complete(self) -> bool:
        """Every reachable state was visited (or the first violation found): a clean result is a proof."""
        return not (self.stopped or self.abstract)


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


def exhaust(protocol: Protocol, cfg: Config, *, max_states: int | None = None, label: str | None = None,
            only: set[str] | None = None, abstract: bool = False) -> ExhaustResult:
    """Breadth-first search of every state reachable within the config's bounds.

    States are compared as values (they are canonical: sorted tuples and frozensets throughout, with
    messages nobody can act on removed). The transition graph is a networkx DiGraph over state
    numbers, each edge labelled with its first action; the first violating state is found at the
    smallest depth, so the graph's shortest path to it is a shortest counterexample.

    `abstract=True` compares states by `abstract_key` and keeps the first state found for each key:
    far fewer states, so counterexamples far deeper than the exact search reaches (row 4's with
    `Config.atomic_fetch`), but no proof. The graph is then the BFS tree of the representatives, so
    every path in it is a run of the model.
    """
    label = label or protocol.name
    result = ExhaustResult(label, abstract=abstract)
    key: Callable[[State], State] = abstract_key if abstract else (lambda st_: st_)
    start = time.perf_counter()
    init = initial_state(cfg)
    ids: dict[State, int] = {key(init): 0}
    states: list[State] = [init]
    graph = result.graph
    graph.add_node(0)
    found = check_replication(init, cfg, only).hard_violations
    if found:
        result.trace = Trace(label, cfg, (), found)
    queue: deque[tuple[int, int]] = deque([(0, 0)])
    while queue and result.trace is None:
        node, depth = queue.popleft()
        result.depth = max(result.depth, depth)
        for action, nxt in successors(states[node], protocol, cfg):
            result.transitions += 1
            k = key(nxt)
            known = ids.get(k)
            if known is None:
                if max_states is not None and len(states) >= max_states:
                    result.stopped = True
                    continue
                known = len(states)
                ids[k] = known
                states.append(nxt)
                queue.append((known, depth + 1))
                graph.add_edge(node, known, action=action)
                violations = check_replication(nxt, cfg, only).hard_violations
                if violations:
                    path = nx.shortest_path(graph, 0, known)
                    steps = tuple(graph.edges[u, v]["action"] for u, v in zip(path, path[1:], strict=False))
                    result.trace = Trace(label, cfg, steps, violations)
                    break
            elif not abstract and not graph.has_edge(node, known):
                graph.add_edge(node, known, action=action)
    result.states = len(states)
    result.seconds = time.perf_counter() - start
    return result


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
    if ":" not in spec or not allow_plugin:
        raise ValueError(f"unknown protocol '{spec}' (expected current, one of {', '.join(VARIANTS)}"
                         + (", or module:object)" if allow_plugin else ")"))
    obj = plugins.load(spec)
    if callable(obj) and not isinstance(obj, (Protocol, Variant)):
        obj = plugins.call(spec, obj)
    rules = [f.name for f in fields(Protocol) if f.name not in ("name", "description", "send_leader_epoch")]
    if isinstance(obj, Variant):
        return ResolvedProtocol(plugins.guard_rules(spec, obj.protocol, rules), spec, obj)
    if isinstance(obj, Protocol):
        return ResolvedProtocol(plugins.guard_rules(spec, obj, rules), spec, None)
    raise ValueError(f"'{spec}' is a {type(obj).__name__}, not a Protocol or Variant")
