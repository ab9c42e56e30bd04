"""Liveness checking over any `kcheck.model.interface.Model`: fair cycles and terminal states on the explicit graph.

A `LivenessProperty` names a state predicate `goal` and means: *from every reachable state, every fair run
eventually reaches a state where `goal` holds* (so, on every fair run, `goal` holds infinitely often, or the
run ends in a goal state). What a fair run is, precisely:

- The model's actions split into *fair* ones (progress: deliveries, fetches, restarts, the controller's
  elections; `fair(action)` says which) and the others (faults, operators' and clients' requests).
- The other actions happen only finitely often in a run: the model's budgets bound the faults, and what is not
  budgeted (a message loss, a duplicate) is assumed to stop eventually. So every infinite run ends in a suffix
  of fair actions only.
- Fair actions are weakly fair, per action instance (the action value, e.g. "deliver this message", "broker 2
  fetches"): one that stays enabled from some point on is eventually taken.
- A finite run may end only in a state where no fair action is enabled (a *terminal* state; faults may still
  be enabled there: nothing obliges them).

So the property fails exactly when some reachable state `t` with `goal` false is either terminal, or starts an
infinite fair run that never meets `goal`. The second is decided on strongly connected components (SCCs) of the
graph restricted to non-goal states and fair edges: a run staying in an SCC `C` forever, and visiting all of it
infinitely often, is weakly fair iff every fair action enabled in every state of `C` is taken by an edge inside
`C`. Checking the maximal SCCs suffices: a sub-component has at least as many actions enabled everywhere and no
more edges, so if `C` fails the test every part of it does (weak fairness needs no further decomposition,
unlike strong fairness). This is the standard construction of explicit-state checkers (TLC's `WF_vars`,
Stateright's eventually properties on the full graph).

`check_liveness` builds the graph breadth-first (64-bit fingerprints of `model.encode` in an open-addressing
table, each state's successor edges in flat arrays: target index, interned action id, the action's index in
`model.actions(state)`, whether it is fair), then runs an iterative Tarjan (no recursion) per property. A
counterexample is a lasso: a prefix from an initial state and, for a fair cycle, a closed walk through the SCC
that takes every fair action enabled everywhere in it (so the cycle itself shows why the run is fair), both
rebuilt by re-executing stored action indexes (`kcheck.model.search.replay_path`). Symmetry reduction is not
used (edges must carry concrete action instances for the fairness test).

Bounds. A complete run (every reachable state expanded) is a proof within the model's bounds. A run stopped by
`max_states` or `max_seconds` still reports every violation it found (each one is real: only fully expanded
states are judged), but proves nothing for the properties it found clean. A model may also say that one of its
own bounds (not a fault budget: e.g. a cap on epochs) cut an enabled step in a state, with `at_bound(state)`;
such states count as goal states (the bound, not the protocol, stops the run there) and are counted in
`LivenessResult.bound_states`, so a clean verdict with bound states is weaker and says so.

`heal_and_check` is the same idea for one state, e.g. the end of a random program: faults switched off, a fair
scheduler (the enabled fair action taken least recently goes next) runs until the run is terminal or closes a
fair cycle (a state repeats and every fair action enabled everywhere since its last visit was taken), and each
goal must hold at the terminal state or somewhere on that cycle. `random_liveness` runs Hypothesis programs and
heals at the end of each.
"""

from __future__ import annotations

import time
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kcheck.model.interface import Model
from kcheck.model.visited import NO_PARENT, Store, keyer, replay_path

S = TypeVar("S")

_EMPTY = 0


@dataclass(frozen=True)
class LivenessProperty(Generic[S]):
    """From every reachable state, every fair run eventually reaches a state where `goal` holds (module docstring)."""

    id: str
    title: str
    goal: Callable[[S], bool]


@dataclass
class Lasso:
    """A run that never reaches the goal: `prefix` from an initial state ((action text, state), the initial state
    first with ""), then `cycle` repeated forever (steps from the prefix's last state back to it), or, for a
    terminal state, no cycle: the run stops at the prefix's last state with no fair action enabled."""

    property: str
    kind: str  # "terminal" or "cycle"
    message: str
    prefix: list[tuple[str, Any]]
    cycle: list[tuple[str, Any]] = field(default_factory=list)


@dataclass
class LivenessResult:
    complete: bool  # every reachable state was expanded: a clean verdict is a proof within the model's bounds
    states: int
    transitions: int  # edges stored (steps that applied)
    seconds: float
    stopped_because: str | None  # None when complete; "max-states" or "max-seconds"
    violations: dict[str, Lasso | None]  # property id -> a counterexample, or None (holds, if complete)
    bound_states: int = 0  # states where the model's own bound cut an enabled step (counted as goal states)
    fair_sccs: int = 0  # non-trivial SCCs of fair edges among non-goal states examined, over all properties

    def verdict(self, prop: str) -> str:
        if self.violations.get(prop) is not None:
            return "violated"
        return "holds" if self.complete else "not violated in the states explored (incomplete: proves nothing)"


class _IndexTable:
    """Fingerprint -> state index, in two flat arrays (open addressing, linear probing, load factor <= 0.7)."""

    def __init__(self, capacity: int = 1 << 12) -> None:
        self._keys = array("Q", bytes(8 * capacity))
        self._vals = array("I", bytes(4 * capacity))
        self._mask = capacity - 1
        self._limit = int(capacity * 0.7)
        self.size = 0

    def get_or_add(self, fp: int, value: int) -> int:
        """The index stored for `fp`, or `value` after storing it."""
        keys, mask = self._keys, self._mask
        i = fp & mask
        while True:
            k = keys[i]
            if k == _EMPTY:
                break
            if k == fp:
                return self._vals[i]
            i = (i + 1) & mask
        keys[i] = fp
        self._vals[i] = value
        self.size += 1
        if self.size > self._limit:
            self._grow()
        return value

    def _grow(self) -> None:
        old_k, old_v = self._keys, self._vals
        cap = 2 * len(old_k)
        self._keys, self._vals = keys, vals = array("Q", bytes(8 * cap)), array("I", bytes(4 * cap))
        self._mask = mask = cap - 1
        self._limit = int(cap * 0.7)
        for k, v in zip(old_k, old_v, strict=True):
            if k != _EMPTY:
                i = k & mask
                while keys[i] != _EMPTY:
                    i = (i + 1) & mask
                keys[i], vals[i] = k, v


class _Graph:
    """States 0..n-1 (BFS order), the out-edges of expanded states in CSR form."""

    def __init__(self) -> None:
        self.start = array("Q", [0])  # edges of state n: [start[n], start[n+1]) for n < expanded
        self.dst = array("I")
        self.act = array("I")  # interned action id
        self.aidx = array("I")  # index of the action in model.actions(source)
        self.fair = bytearray()
        self.expanded = 0
        self.store = Store()  # BFS tree: parent and action index of each state, for prefixes

    def edges(self, n: int) -> range:
        return range(self.start[n], self.start[n + 1]) if n < self.expanded else range(0)


def _action_key(model: Model[Any, Any], a: Any) -> Any:
    try:
        hash(a)
        return a
    except TypeError:
        return model.describe(a)


def _explore(model: Model[Any, Any], fair: Callable[[Any], bool], goals: Sequence[Callable[[Any], bool]],
             max_states: int | None, max_seconds: float | None, started: float,
             progress: Callable[[int, int, float], None] | None = None
             ) -> tuple[_Graph, list[bytearray], bytearray, str | None, int]:
    key = keyer(model, [])
    at_bound = getattr(model, "at_bound", None)
    table = _IndexTable()
    g = _Graph()
    goal_bits: list[bytearray] = [bytearray() for _ in goals]
    bound = bytearray()
    action_ids: dict[Any, int] = {}
    frontier: deque[Any] = deque()

    def note(s: Any) -> None:
        b = 1 if at_bound is not None and at_bound(s) else 0
        bound.append(b)
        for bits, goal in zip(goal_bits, goals, strict=True):
            bits.append(1 if b or goal(s) else 0)

    for i, s in enumerate(model.initial_states()):
        n = len(g.store.parent)
        if table.get_or_add(key(s)[0], n) != n:
            continue
        g.store.add(NO_PARENT, i)
        note(s)
        frontier.append(s)
    stopped = None
    transitions = 0
    shown = started
    while frontier:
        n = g.expanded
        if n % 64 == 0 and (max_seconds is not None or progress is not None):
            now = time.perf_counter()
            if max_seconds is not None and now - started >= max_seconds:
                stopped = "max-seconds"
                break
            if progress is not None and now - shown >= 1.0:  # states stored, transitions, seconds: once a second
                shown = now
                progress(len(g.store.parent), transitions, now - started)
        s = frontier.popleft()
        mark = len(g.dst)
        for ai, a in enumerate(model.actions(s)):
            t = model.step(s, a)
            if t is None:
                continue
            fresh = len(g.store.parent)
            m = table.get_or_add(key(t)[0], fresh)
            if m == fresh:
                if max_states is not None and fresh >= max_states:
                    stopped = "max-states"
                    break
                g.store.add(n, ai)
                note(t)
                frontier.append(t)
            k = _action_key(model, a)
            aid = action_ids.get(k)
            if aid is None:
                aid = action_ids[k] = len(action_ids)
            g.dst.append(m)
            g.act.append(aid)
            g.aidx.append(ai)
            g.fair.append(1 if fair(a) else 0)
        if stopped is not None:  # n is not fully expanded: its edges are dropped, and the search ends here
            del g.dst[mark:], g.act[mark:], g.aidx[mark:], g.fair[mark:]
            break
        transitions += len(g.dst) - mark
        g.expanded += 1
        g.start.append(len(g.dst))
    return g, goal_bits, bound, stopped, transitions


def _tarjan(g: _Graph, inside: Callable[[int], bool]) -> list[list[int]]:
    """SCCs of the subgraph of states with `inside` true and fair edges between them (iterative Tarjan).
    Only non-trivial ones (more than one state, or a fair self-loop) are returned."""
    n_states = len(g.store.parent)
    index = array("i", [-1]) * n_states
    low = array("i", [0]) * n_states
    on_stack = bytearray(n_states)
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    dst, fair = g.dst, g.fair
    for root in range(n_states):
        if index[root] != -1 or not inside(root):
            continue
        work: list[tuple[int, int]] = [(root, g.start[root] if root < g.expanded else 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = 1
        while work:
            v, e = work[-1]
            end = g.start[v + 1] if v < g.expanded else 0
            advanced = False
            while e < end:
                w = dst[e]
                e += 1
                if not fair[e - 1] or not inside(w):
                    continue
                if index[w] == -1:
                    work[-1] = (v, e)
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = 1
                    work.append((w, g.start[w] if w < g.expanded else 0))
                    advanced = True
                    break
                if on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
            if advanced:
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = 0
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or any(dst[e] == v and fair[e] for e in g.edges(v)):
                    out.append(comp)
    return out


def _fair_cycle_actions(g: _Graph, comp: list[int]) -> tuple[bool, set[int], set[int]]:
    """(is the SCC a fair cycle, the fair actions enabled in every state of it, the fair actions taken inside)."""
    members = set(comp)
    everywhere: set[int] | None = None
    taken: set[int] = set()
    for v in comp:
        here = set()
        for e in g.edges(v):
            if g.fair[e]:
                here.add(g.act[e])
                if g.dst[e] in members:
                    taken.add(g.act[e])
        everywhere = here if everywhere is None else everywhere & here
    enabled = everywhere or set()
    return enabled <= taken, enabled, taken


def _path_within(g: _Graph, src: int, dst_ok: Callable[[int], bool], members: set[int], fair_only: bool
                 ) -> list[int] | None:
    """Edge ids of a shortest path (at least one edge) from `src` to a state satisfying `dst_ok`, within
    `members`."""
    prev: dict[int, tuple[int, int]] = {}  # state -> (edge that reached it, the edge's source)
    queue = deque([src])
    seen = {src}
    while queue:
        v = queue.popleft()
        for e in g.edges(v):
            w = g.dst[e]
            if w not in members or (fair_only and not g.fair[e]):
                continue
            if dst_ok(w):
                path = [e]
                x = v
                while x != src:
                    pe, x = prev[x]
                    path.append(pe)
                path.reverse()
                return path
            if w not in seen:
                seen.add(w)
                prev[w] = (e, v)
                queue.append(w)
    return None


def _edge_source(g: _Graph, e: int) -> int:
    """The state whose edge list holds edge `e` (binary search over the CSR offsets)."""
    lo, hi = 0, g.expanded - 1
    starts = g.start
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= e:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _cycle_edges(g: _Graph, comp: list[int], entry: int, required: set[int]) -> list[int]:
    """A closed walk from `entry` inside the SCC taking an edge of every required action (fair edges only)."""
    members = set(comp)
    walk: list[int] = []
    here = entry
    for aid in sorted(required):
        # an edge labelled aid inside the component, reached from `here`
        target_edges = {e for v in comp for e in g.edges(v) if g.fair[e] and g.act[e] == aid and g.dst[e] in members}
        sources = {_edge_source(g, e) for e in target_edges}
        if here not in sources:
            path = _path_within(g, here, sources.__contains__, members, True)
            if path is None:  # pragma: no cover - an SCC is strongly connected
                continue
            walk += path
            here = g.dst[path[-1]]
        e = min(e for e in target_edges if _edge_source(g, e) == here)
        walk.append(e)
        here = g.dst[e]
    if here != entry or not walk:
        back = _path_within(g, here, lambda w: w == entry, members, True)
        if back is not None:
            walk += back
    return walk


def _rebuild(model: Model[Any, Any], g: _Graph, prop: str, kind: str, message: str, state: int,
             cycle: list[int]) -> Lasso:
    initial, path = g.store.path(state)
    actions = list(path) + [g.aidx[e] for e in cycle]
    steps = replay_path(model, initial, actions)
    cut = len(path) + 1
    return Lasso(prop, kind, message, steps[:cut], steps[cut:])


def check_liveness(model: Model[Any, Any], properties: Sequence[LivenessProperty[Any]],
                   max_states: int | None = None, fair: Callable[[Any], bool] | None = None,
                   max_seconds: float | None = None,
                   progress: Callable[[int, int, float], None] | None = None) -> LivenessResult:
    """Check each property on the reachable graph (see the module docstring). `fair` says which actions are
    weakly fair progress (default: the model's `fair` method if it has one, else every action). `progress`
    is told (states, transitions, seconds) about once a second while the graph is built."""
    started = time.perf_counter()
    if fair is None:
        fair = getattr(model, "fair", None) or (lambda a: True)
    g, goal_bits, bound, stopped, transitions = _explore(model, fair, [p.goal for p in properties], max_states,
                                                         max_seconds, started, progress)
    violations: dict[str, Lasso | None] = {}
    sccs = 0
    depth = _depths(g)
    for prop, bits in zip(properties, goal_bits, strict=True):
        found: Lasso | None = None
        # terminal: expanded, not a goal state, no fair action enabled (the shallowest one)
        terminals = [n for n in range(g.expanded) if not bits[n] and not any(g.fair[e] for e in g.edges(n))]
        if terminals:
            n = min(terminals, key=lambda x: depth[x])
            found = _rebuild(model, g, prop.id, "terminal",
                             f"{prop.title}: the run stops where no progress action is enabled and the goal "
                             "does not hold", n, [])
        else:
            comps = _tarjan(g, lambda v: not bits[v])  # noqa: B023 - evaluated within this iteration
            sccs += len(comps)
            best: tuple[int, list[int], set[int]] | None = None
            for comp in comps:
                ok, enabled, _ = _fair_cycle_actions(g, comp)
                if ok:
                    entry = min(comp, key=lambda x: depth[x])
                    if best is None or depth[entry] < depth[best[0]]:
                        best = (entry, comp, enabled)
            if best is not None:
                entry, comp, enabled = best
                found = _rebuild(model, g, prop.id, "cycle",
                                 f"{prop.title}: a fair cycle of {len(comp)} state(s) never reaches the goal",
                                 entry, _cycle_edges(g, comp, entry, enabled))
        violations[prop.id] = found
    return LivenessResult(stopped is None, len(g.store.parent), transitions, time.perf_counter() - started, stopped,
                          violations, bound_states=sum(bound), fair_sccs=sccs)


def _depths(g: _Graph) -> array:
    """BFS depth of each state (from the BFS tree: parents come first)."""
    n = len(g.store.parent)
    depth = array("I", [0]) * n
    parent = g.store.parent
    for i in range(n):
        p = parent[i]
        if p != NO_PARENT:
            depth[i] = depth[p] + 1
    return depth


# ---- healing at the end of a run -----------------------------------------------------------------


@dataclass
class HealResult:
    settled: bool  # the healing run ended (terminal) or closed a fair cycle within max_steps
    steps: list[tuple[str, Any]]  # the healing run, (action text, state), the starting state first with ""
    failed: dict[str, str]  # property id -> why its goal was never met (only for properties that failed)
    cycle_start: int | None = None  # index in `steps` where the closing fair cycle starts (None: terminal/unsettled)


def heal_and_check(model: Model[Any, Any], state: Any, properties: Sequence[LivenessProperty[Any]],
                   fair: Callable[[Any], bool] | None = None, max_steps: int = 500) -> HealResult:
    """From `state`, faults off, run the fair actions under a fair scheduler until the run is terminal or closes
    a fair cycle, then check that each goal holds at the terminal state or somewhere on the cycle (see the
    module docstring). An unsettled run (max_steps reached) judges nothing: `settled` is False."""
    if fair is None:
        fair = getattr(model, "fair", None) or (lambda a: True)
    key = keyer(model, [])
    at_bound = getattr(model, "at_bound", None)
    last_taken: dict[Any, int] = {}
    steps: list[tuple[str, Any]] = [("", state)]
    fps: list[int] = [key(state)[0]]
    enabled_sets: list[frozenset[Any]] = []
    taken: list[Any] = []
    seen_at: dict[int, int] = {fps[0]: 0}
    s = state
    for n in range(max_steps + 1):
        options = []
        for a in model.actions(s):
            if fair(a):
                t = model.step(s, a)
                if t is not None:
                    options.append((_action_key(model, a), a, t))
        enabled_sets.append(frozenset(k for k, _, _ in options))
        if not options:
            failed = {p.id: f"{p.title}: healing stopped after {n} steps with no progress action enabled and the "
                      "goal unmet" for p in properties if not (p.goal(s) or (at_bound is not None and at_bound(s)))}
            return HealResult(True, steps, failed)
        if n == max_steps:
            break
        k, a, t = min(options, key=lambda o: last_taken.get(o[0], -1))
        last_taken[k] = n
        taken.append(k)
        s = t
        steps.append((model.describe(a), s))
        fp = key(s)[0]
        fps.append(fp)
        prev = seen_at.get(fp)
        seen_at[fp] = n + 1
        if prev is not None:
            # the stretch prev .. n+1 is a cycle; fair if every action enabled all along it was taken in it
            stretch = enabled_sets[prev:n + 1]
            everywhere = frozenset.intersection(*stretch) if stretch else frozenset()
            if everywhere <= set(taken[prev:n + 1]):
                cyc = [st for _, st in steps[prev:n + 1]]
                failed = {p.id: f"{p.title}: healing settled into a fair cycle of {n + 1 - prev} step(s) that "
                          "never meets the goal" for p in properties
                          if not any(p.goal(x) or (at_bound is not None and at_bound(x)) for x in cyc)}
                return HealResult(True, steps, failed, prev)
    return HealResult(False, steps, {})


@dataclass
class RandomLivenessResult:
    programs: int
    unsettled: int  # programs whose healing did not settle within heal_steps (judged nothing)
    seconds: float
    failure: tuple[list[tuple[str, Any]], HealResult] | None  # the (shrunk) program and its healing run


def random_liveness(model: Model[Any, Any], properties: Sequence[LivenessProperty[Any]],
                    fair: Callable[[Any], bool] | None = None, seed: int = 0, programs: int = 100,
                    max_steps: int = 30, heal_steps: int = 500) -> RandomLivenessResult:
    """Hypothesis programs of up to `max_steps` actions of every kind (faults included), each followed by
    `heal_and_check`; the first program whose healing misses a goal is shrunk and returned. Never a proof."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    try:
        from kcheck.model.search import _no_local_constants
    except ImportError:  # pragma: no cover - the random search moved it: literals as Hypothesis has them
        from contextlib import nullcontext as _no_local_constants  # type: ignore[assignment]

    started = time.perf_counter()
    inits = list(model.initial_states())
    stats = {"programs": 0, "unsettled": 0}
    best: list[tuple[list[tuple[str, Any]], HealResult]] = []
    shrinking = [False]

    class _Failed(AssertionError):
        pass

    @hseed(seed)
    @settings(max_examples=programs, database=None, deadline=None, suppress_health_check=list(HealthCheck),
              phases=[Phase.generate, Phase.shrink], print_blob=False, report_multiple_bugs=False)
    @given(st.data())
    def program(data: Any) -> None:
        s = inits[data.draw(st.integers(0, len(inits) - 1))] if len(inits) > 1 else inits[0]
        run: list[tuple[str, Any]] = [("", s)]
        for _ in range(data.draw(st.integers(0, max_steps))):
            options = [(a, t) for a in model.actions(s) if (t := model.step(s, a)) is not None]
            if not options:
                break
            a, s = options[data.draw(st.integers(0, len(options) - 1))]
            run.append((model.describe(a), s))
        healed = heal_and_check(model, s, properties, fair, heal_steps)
        if not shrinking[0]:
            stats["programs"] += 1
            stats["unsettled"] += 0 if healed.settled else 1
        if healed.failed:
            if not best or len(run) <= len(best[0][0]):
                best[:] = [(run, healed)]
            shrinking[0] = True
            raise _Failed(next(iter(healed.failed.values())))

    with _no_local_constants():
        try:
            program()
        except _Failed:
            pass
    return RandomLivenessResult(stats["programs"], stats["unsettled"], time.perf_counter() - started,
                                best[0] if best else None)
