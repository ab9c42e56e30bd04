"""The replication model's former exhaustive search, kept as the yardstick the one engine is measured against.

`exhaust` walks every reachable state breadth first within the config's bounds, keeps the transition graph in
networkx, and returns the shortest path to the first violating state; a state, time or memory cap stops it as
incomplete (`ExhaustResult.stop_reason`). `kcheck exhaust` and `check` run on the one engine instead
(exhaustive.py); tests/test_engine.py and bench/bench_engine.py compare the engine against this search.
"""

from __future__ import annotations

import functools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import networkx as nx

from kcheck.invariants.replication_searches.runs import (
    PROGRESS_SECONDS,
    ChangeProbe,
    InvariantTally,
    ProgressFn,
    SearchProgress,
    Trace,
    abstract_key,
    probed_successors,
    rss_bytes,
)
from kcheck.model.replication.actions import Action, Config, initial_state, successors
from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import State

STOP_REASONS = {"max-states": "--max-states", "max-seconds": "--max-seconds", "max-memory": "--max-memory"}


@dataclass
class ExhaustResult:
    protocol: str
    states: int = 0
    transitions: int = 0
    depth: int = 0  # BFS levels fully explored
    seconds: float = 0.0
    stopped: bool = False  # max_states refused a new state
    stop_reason: str | None = None  # what stopped the search before its bounds: a key of STOP_REASONS
    peak_rss: int = 0  # bytes, sampled while searching
    abstract: bool = False  # one representative per abstract state (`abstract_key`): finds, never proves
    trace: Trace | None = None  # shortest path to a violating state (within the abstraction, if abstract)
    graph: nx.DiGraph = field(default_factory=nx.DiGraph, repr=False)
    tally: InvariantTally = field(default_factory=InvariantTally)

    @property
    def complete(self) -> bool:
        """Every reachable state within the bounds was visited: not stopped by --max-states, not merged by the
        abstraction, and not cut short by a violation (the search stops at the first one it finds)."""
        return not (self.stopped or self.stop_reason or self.abstract or self.trace is not None)


def exhaust(protocol: Protocol, cfg: Config, *, max_states: int | None = None, label: str | None = None,
            only: set[str] | None = None, abstract: bool = False, probe: ChangeProbe | None = None,
            max_seconds: float | None = None, max_rss: int | None = None,
            progress: ProgressFn | None = None) -> ExhaustResult:
    """Breadth-first search of every state reachable within the config's bounds.

    States are compared as values (they are canonical: sorted tuples and frozensets throughout, with
    messages nobody can act on removed). The transition graph is a networkx DiGraph over state
    numbers, each edge labelled with its first action; the first violating state is found at the
    smallest depth, so the graph's shortest path to it is a shortest counterexample.

    `abstract=True` compares states by `abstract_key` and keeps the first state found for each key:
    far fewer states, so counterexamples far deeper than the exact search reaches (row 4's with
    `Config.atomic_fetch`), but no proof. The graph is then the BFS tree of the representatives, so
    every path in it is a run of the model.

    With a `probe`, `probe.protocol` is run (pass it as `protocol`): every expanded state records each changed
    rule's answers, and the first differing answer found is at the smallest depth (a shortest run to it).

    `max_seconds` and `max_rss` (bytes of resident memory) stop the search where it is (`stop_reason`); a
    state cap instead refuses new states and finishes the states already queued. `progress` gets a snapshot
    at most every PROGRESS_SECONDS and one at the end.
    """
    return _FormerSearch(protocol, cfg, label or protocol.name, only, abstract, probe, max_states, max_seconds,
                         max_rss, progress).run()


class _FormerSearch:
    """One run of the former `exhaust`: the states as values with their numbers, the networkx graph, the queue."""

    def __init__(self, protocol: Protocol, cfg: Config, label: str, only: set[str] | None, abstract: bool,
                 probe: ChangeProbe | None, max_states: int | None, max_seconds: float | None, max_rss: int | None,
                 progress: ProgressFn | None) -> None:
        self.protocol, self.cfg, self.label, self.only, self.probe = protocol, cfg, label, only, probe
        self.max_states, self.max_seconds, self.max_rss, self.progress = max_states, max_seconds, max_rss, progress
        self.checked = None if only is None else tuple(sorted(only))
        self.result = ExhaustResult(label, abstract=abstract)
        self.key: Callable[[State], State] = abstract_key if abstract else (lambda st_: st_)
        self.start = self.last_report = time.perf_counter()
        init = initial_state(cfg)
        self.ids: dict[State, int] = {self.key(init): 0}
        self.states: list[State] = [init]
        self.graph = self.result.graph
        self.graph.add_node(0)
        self.queue: deque[tuple[int, int]] = deque([(0, 0)])
        found = self.result.tally.check(init, cfg, only)
        if found:
            self.result.trace = Trace(label, cfg, (), found, self.checked)

    def run(self) -> ExhaustResult:
        result, queue = self.result, self.queue
        expanded = 0
        while queue and result.trace is None:
            expanded += 1
            if expanded % 256 == 0:  # the caps and the clock, often enough and cheaply
                result.stop_reason = self.cap_reached()
                if result.stop_reason is not None:
                    break
            node, depth = queue.popleft()
            result.depth = max(result.depth, depth)
            self.expand(node, depth)
        if result.stopped and result.stop_reason is None:
            result.stop_reason = "max-states"
        result.states = len(self.states)
        result.seconds = time.perf_counter() - self.start
        if self.progress is not None:
            self.progress(self.snapshot(final=True))
        else:
            result.peak_rss = max(result.peak_rss, rss_bytes())
        return result

    def cap_reached(self) -> str | None:
        """"max-seconds" or "max-memory" when that cap is reached (else None), after a progress report when one is
        due."""
        result, now = self.result, time.perf_counter()
        if self.max_seconds is not None and now - self.start >= self.max_seconds:
            return "max-seconds"
        if self.max_rss is not None:
            rss = rss_bytes()
            result.peak_rss = max(result.peak_rss, rss)
            if rss >= self.max_rss:
                return "max-memory"
        if self.progress is not None and now - self.last_report >= PROGRESS_SECONDS:
            self.last_report = now
            self.progress(self.snapshot())
        return None

    def expand(self, node: int, depth: int) -> None:
        """Numbers, queues and checks each new successor of state `node`; the first violation becomes the trace."""
        protocol, cfg, result, graph, ids, states = (self.protocol, self.cfg, self.result, self.graph, self.ids,
                                                     self.states)
        if self.probe is None:
            succ = successors(states[node], protocol, cfg)
        else:
            self.probe.visit()
            succ = probed_successors(states[node], protocol, cfg, self.probe, functools.partial(self.path_to, node),
                                     self.label, depth)
        for action, nxt in succ:
            result.transitions += 1
            k = self.key(nxt)
            known = ids.get(k)
            if known is None:
                if self.max_states is not None and len(states) >= self.max_states:
                    result.stopped = True
                    continue
                known = ids[k] = len(states)
                states.append(nxt)
                self.queue.append((known, depth + 1))
                graph.add_edge(node, known, action=action)
                violations = result.tally.check(nxt, cfg, self.only)
                if violations:
                    result.trace = Trace(self.label, cfg, self.path_to(known), violations, self.checked)
                    return
            elif not result.abstract and not graph.has_edge(node, known):
                graph.add_edge(node, known, action=action)

    def path_to(self, node: int) -> tuple[Action, ...]:
        path = nx.shortest_path(self.graph, 0, node)
        return tuple(self.graph.edges[u, v]["action"] for u, v in zip(path, path[1:], strict=False))

    def snapshot(self, final: bool = False) -> SearchProgress:
        result, rss = self.result, rss_bytes()
        result.peak_rss = max(result.peak_rss, rss)
        return SearchProgress("exhaust", len(self.states), result.depth, time.perf_counter() - self.start, rss,
                              (("transitions", result.transitions), ("queue", len(self.queue))), final)
