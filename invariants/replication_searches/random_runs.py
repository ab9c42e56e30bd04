"""The replication model's settings for the random search (`kcheck.model.search.random_search`).

One setting for every protocol and every configuration: nothing here knows a bug row, its script or its
invariant. Each choice follows from the model's structure (model/replication/actions.py):

- Kinds. A delivery with `keep` (the message stays in the pool: the network duplicates it) is its own kind,
  "duplicate", and so is "drop": both are network faults, not the ordinary traffic of their message kind.
- Weights. Faults (the kinds that spend a `Config` budget: crash, fence, an ISR shrink, an unrequested leader
  move, a controller failover and its zombie's writes, reassignment requests and cancels) get 0.3, the network
  faults 0.1, everything else 1 (produce, the fetch exchange, high-watermark advances, deliveries, healing).
  In Kafka faults are rare next to the traffic between them; a bug needs the traffic that sets it up (records
  replicated, epochs learnt) around a few well-placed faults, and at weight 1 a program spends every budget
  in its first steps.
- `follow` 0.5: half the steps are drawn among the actions the previous step enabled (the request just sent,
  its answer, the AlterPartition a shrink proposed), so exchanges complete instead of being interleaved away.
- `novelty`: `novelty_key` abstracts a state to what a replica and the controller believe (each replica's
  liveness, leader, leader epoch, the epochs of its log's records and its high watermark; the registry's
  leader, epoch, ISR and ELR; the budgets spent), leaving out the messages in flight and the history. A state
  with a key no earlier step reached joins the corpus that programs restart from (`restart` 0.5): the search
  keeps pushing from divergent logs, new epochs and ISR changes it has reached, and the key is coarse enough
  for the corpus to stay small (thousands of states, not every interleaving of the pool).
- Programs of 5 to 40 steps (each round of programs also restarts from the corpus), no swarm (switching
  kinds off per program found fewer rows than weights in the measurements, bench/bench_random_search.py).
- Atomic fetches (`Config.atomic_fetch`, one step per fetch round, as in the TLA+ models): the deepest rows need
  many complete fetches, and a run with atomic fetches is a run of the split model too (three steps per fetch).
  `search` uses them for every row unless told otherwise.

`explore` is `kcheck explore` (and `kcheck check`'s random search): `random_search` with these settings, the
user's program count and length, and what the command reports beside the verdict, counted through the engine's
`on_step` hook (action kinds taken and enabled, the most of each fault budget a program used, the invariant
tally of the states stepped into, `TallyPlan`), change coverage (a `ChangeProbe`: the states become `Node`s
carrying their path, and every action of each distinct state goes through the probe, as in `kcheck exhaust`;
`ProbedModel`), and the counterexample shrunk by `minimize_run` and returned as a `Trace` that `kcheck replay`
reads. `max_seconds` stops the search (wall clock, as `kcheck exhaust --max-seconds`); shrinking is not cut.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from kcheck.invariants import registry
from kcheck.invariants import replication as replication_invariants
from kcheck.invariants.registry import REGISTRY
from kcheck.invariants.replication import ReplicationSubject, check_replication
from kcheck.invariants.replication_model_adapter import ReplicationModel
from kcheck.invariants.replication_searches.exhaustive import Node, NodeModel, _trace_actions
from kcheck.invariants.replication_searches.runs import (
    ChangeProbe,
    InvariantTally,
    ProgressFn,
    SearchProgress,
    Trace,
    novelty_key,
    replication_ids,
    rss_bytes,
)
from kcheck.model.interface import StateInvariant
from kcheck.model.replication.actions import KINDS, Action, Config
from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import Budget, State
from kcheck.model.search import SearchResult, StepHook, minimize_run, random_search

# The kinds that spend a fault budget of `Config` (actions.py: `_spend`).
FAULT_KINDS = frozenset({"crash", "fence", "shrink_isr", "move_leader", "failover", "zombie_move_leader",
                         "reassign", "cancel_reassignment", "controlled_shutdown"})
FAULT_WEIGHT = 0.3
NETWORK_FAULT_WEIGHT = 0.1
FOLLOW = 0.5


def kind(action: Action) -> str:
    """The action's kind for weighting: its own, except that a duplicated delivery is "duplicate"."""
    if action.kind.startswith("handle_") and len(action.args) == 2 and action.args[1] is True:
        return "duplicate"
    return action.kind


def weights() -> dict[str, float]:
    from kcheck.model.replication.actions import KINDS

    out = {k: FAULT_WEIGHT if k in FAULT_KINDS else 1.0 for k in KINDS}
    out["drop"] = out["duplicate"] = NETWORK_FAULT_WEIGHT
    return out


def options() -> dict[str, Any]:
    """`random_search` keyword arguments for the replication model (the same for every protocol and row)."""
    return {"kind": kind, "weights": weights(), "follow": FOLLOW, "novelty": novelty_key, "restart": 0.5,
            "min_steps": 5, "max_steps": 40, "swarm": False, "choices": "random"}


def search_config(cfg: Config, atomic: bool = True) -> Config:
    """The configuration the search runs: `cfg` with atomic fetches unless `atomic` is False."""
    return replace(cfg, atomic_fetch=True) if atomic and not cfg.atomic_fetch else cfg


def search(protocol: Protocol, cfg: Config, seed: int = 0, programs: int = 100_000,
           max_seconds: float | None = None, *, atomic: bool = True, only: set[str] | None = None,
           **overrides: Any) -> SearchResult:
    """`random_search` on the replication model with the settings above (keyword `overrides` replace them)."""
    model = ReplicationModel(protocol, search_config(cfg, atomic), only=only)
    return random_search(model, seed=seed, programs=programs, max_seconds=max_seconds, **{**options(), **overrides})


# ---- kcheck explore ----------------------------------------------------------------------------------------

BUDGETS = tuple(f.name for f in fields(Budget))  # the fault budgets a Config bounds and a State counts
MIN_STEPS = 5  # `options()`' shortest program, unless the user's --steps is shorter


@dataclass
class ExploreResult:
    """One `explore` run: the counterexample (shrunk) or what a clean run covered (never a proof)."""

    protocol: str
    examples: int = 0  # programs run (at most the `examples` asked for)
    steps: int = 0  # steps the programs took (shrinking not counted)
    seconds: float = 0.0  # the whole run, shrinking included
    found_after: float = 0.0  # seconds until the violation was found
    stopped_by: str = "programs"  # "violation", "programs" (all run) or "max-seconds"
    trace: Trace | None = None  # the counterexample, shrunk by `minimize_run` (unless shrink=False)
    minimized_from: int = 0  # the counterexample's length as found (from the initial state)
    tally: InvariantTally = field(default_factory=InvariantTally)
    kinds_possible: tuple[str, ...] = ()  # action kinds the bounds allow
    kinds_enabled: set[str] = field(default_factory=set)  # kinds enabled in some state a step was drawn in
    kinds_fired: dict[str, int] = field(default_factory=dict)  # steps taken per kind
    budgets_spent: dict[str, int] = field(default_factory=dict)  # per fault budget: the most one run used
    bounds: dict[str, int] = field(default_factory=dict)  # the config's fault budgets
    distinct_states: int = 0
    longest: int = 0  # the longest run from the initial state (a program restarting from a stored state
    # continues the run that reached it)
    peak_rss: int = 0

    @property
    def never_fired(self) -> list[str]:
        """Kinds the bounds allow that no program took (enabled somewhere or not)."""
        return [k for k in self.kinds_possible if not self.kinds_fired.get(k)]

    @property
    def budgets_unspent(self) -> dict[str, tuple[int, int]]:
        """Fault budgets no run used in full: budget -> (most used, bound)."""
        return {b: (used, bound) for b, (used, bound) in self._budgets().items() if used < bound}

    def _budgets(self) -> dict[str, tuple[int, int]]:
        return {b: (self.budgets_spent.get(b, 0), bound) for b, bound in self.bounds.items() if bound}

    def coverage(self) -> dict[str, Any]:
        """What a clean run covered, as JSON: a random search's coverage, never a proof."""
        return {"proof": False, "programs": self.examples, "steps": self.steps,
                "distinct_states": self.distinct_states, "longest_run": self.longest,
                "kinds_fired": dict(sorted(self.kinds_fired.items())),
                "kinds_never_fired": self.never_fired,
                "kinds_never_enabled": [k for k in self.kinds_possible if k not in self.kinds_enabled],
                "budgets_most_used": {b: {"used": u, "bound": n} for b, (u, n) in self._budgets().items()},
                "budgets_never_used_in_full": sorted(self.budgets_unspent)}


class TallyPlan:
    """How `explore` counts, per state a step reaches, which checked invariants their own condition switched off
    (`InvariantTally`), asking each condition only as often as its answer can change: a config-only condition
    (`replication.CONFIG_ONLY`) once for the run, a condition with a boolean twin (`replication.STATE_VOID`) through
    the twin, once per state for all the invariants sharing it (its text only for the first state it holds in,
    the reason the tally keeps), and the registry's default condition of a built-in invariant ("applies") never.
    Any other condition (a user's) is asked in every state, as it is. The counts are those of asking every
    condition in every state."""

    def __init__(self, selected: list[Any], cfg: Config, initial: State) -> None:
        self.cfg = cfg
        self.always_off: dict[str, str] = {}  # id -> reason, for every state of the run
        voids: dict[Any, tuple[Any, list[str]]] = {}  # condition -> (its twin, the ids it switches off)
        self.asked: list[Any] = []
        first = ReplicationSubject(initial, cfg)
        for inv in selected:
            cond = inv.not_applicable
            if _builtin(inv) and cond in replication_invariants.CONFIG_ONLY:
                why = cond(first)
                if why is not None:
                    self.always_off[inv.id] = why
            elif _builtin(inv) and cond in replication_invariants.STATE_VOID:
                voids.setdefault(cond, (replication_invariants.STATE_VOID[cond], []))[1].append(inv.id)
            elif not (_builtin(inv) and getattr(cond, "__module__", None) == registry.__name__):
                self.asked.append(inv)
        self.voids = [(cond, twin, ids) for cond, (twin, ids) in voids.items()]

    def counter(self, tally: InvariantTally) -> Any:
        cfg, voids, asked, off, reasons = self.cfg, self.voids, self.asked, tally.off, tally.reasons

        def count(s: State) -> None:
            tally.states += 1
            for cond, twin, ids in voids:
                if twin(s, cfg):
                    for i in ids:
                        off[i] = off.get(i, 0) + 1
                        if i not in reasons:
                            reasons[i] = cond(ReplicationSubject(s, cfg))
            if asked:
                subject = ReplicationSubject(s, cfg)
                for inv in asked:
                    why = inv.not_applicable(subject)
                    if why is not None:
                        off[inv.id] = off.get(inv.id, 0) + 1
                        reasons.setdefault(inv.id, why)

        return count

    def close(self, tally: InvariantTally) -> None:
        """The config-only conditions that hold: off in every state counted."""
        for i, why in self.always_off.items():
            tally.off[i] = tally.states
            tally.reasons.setdefault(i, why)


def _builtin(inv: Any) -> bool:
    """An invariant of invariants/replication.py, with its own conditions (a user's is wrapped by the registry)."""
    return getattr(inv.check, "__module__", None) == replication_invariants.__name__


class ProbedModel(NodeModel):
    """The replication model over `Node`s for change coverage in a random search: the successors of each distinct
    state go through the probe one action at a time (as in `kcheck exhaust`: the rules are asked what `apply` asks
    them for every candidate action), so each distinct state is counted once (programs revisit states); a state
    visited before, where the probe records nothing, gets the model's own one-pass `successors` (the same list,
    tests/test_replication_model.py). Steps outside the programs (shrinking) are not visits (`NodeModel.step`)."""

    def __init__(self, inner: ReplicationModel, probe: ChangeProbe, label: str) -> None:
        super().__init__(inner, StateInvariant("replication", "", _never), abstract=False, probe=probe, label=label)
        self._invariants = [StateInvariant(i.id, i.title, _on_state(i.holds)) for i in inner.invariants()]
        self._last: tuple[State | None, bytes] = (None, b"")  # the state encoded last, and its encoding

    def encode(self, node: Node | State) -> bytes:
        s = node.state if isinstance(node, Node) else node
        last = self._last
        if last[0] is s:
            return last[1]
        out = self.inner.encode(s)
        self._last = (s, out)
        return out

    def successors(self, node: Node) -> list[tuple[int, Action, Node]]:
        probe, inner, s = self.probe, self.inner, node.state
        assert probe is not None
        # the search encodes each state it steps into, then asks for its successors: the encoding is reused
        probe.visit(hash(self.encode(s)))
        depth, path = node.depth + 1, node.path
        if not probe._recording:  # visited before: nothing to record
            return [(i, a, Node(t, depth, (a, path))) for i, a, t in inner.successors(s)]
        out = []
        for i, a in enumerate(inner.actions(s)):
            probe.begin()
            nxt = inner.step(s, a)
            probe.end(a, nxt, node.actions, self.label, inner.cfg, depth=node.depth, before=s)
            if nxt is not None:
                out.append((i, a, Node(nxt, depth, (a, path))))
        return out


def _never(_: Any) -> None:
    return None


def _on_state(holds: Any) -> Any:
    return lambda n: holds(n.state)


def _node_novelty(n: Node) -> int:
    return novelty_key(n.state)


def explore(protocol: Protocol, cfg: Config, *, examples: int = 200, steps: int = 40, seed_value: int = 0,
            label: str | None = None, only: set[str] | None = None, shrink: bool = True,
            probe: ChangeProbe | None = None, progress: ProgressFn | None = None,
            max_seconds: float | None = None) -> ExploreResult:
    """`examples` programs of up to `steps` steps each (`random_search` with `options()`; a program may restart
    from a state an earlier one reached, continuing that run), every checked invariant after every step; the
    first violation is shrunk (`minimize_run`) and returned as a `Trace`. `cfg` is run as given: atomic fetches
    only if it says so. With a `probe`, pass `probe.protocol` as `protocol`: each changed rule's answers are
    recorded in every distinct state whose steps a program drew from. `progress` gets a snapshot every few
    seconds and one at the end."""
    label = label or protocol.name
    result = ExploreResult(label)
    result.kinds_possible = tuple(k for k, spec in KINDS.items() if spec.possible(cfg))
    result.bounds = {b: getattr(cfg, b) for b in BUDGETS}
    inner = ReplicationModel(protocol, cfg, only=only, symmetry=False)
    model: Any = inner if probe is None else ProbedModel(inner, probe, label)
    state_of: Any = (lambda x: x) if probe is None else (lambda n: n.state)
    plan = TallyPlan([REGISTRY[i] for i in replication_ids(only)], cfg, inner.initial_states()[0])
    count = plan.counter(result.tally)
    start = time.perf_counter()
    snapshot = _snapshots(result, examples, start)

    def report(r: SearchResult) -> None:
        if progress is not None:
            progress(snapshot(r, False))

    for s in inner.initial_states():
        count(s)
    opts = {**options(), "novelty": novelty_key if probe is None else _node_novelty,
            "min_steps": min(MIN_STEPS, steps), "max_steps": steps}
    r = random_search(model, seed=seed_value, programs=examples, max_seconds=max_seconds, shrink=False,
                      on_step=_step_counter(result, state_of, count), progress=report, **opts)
    result.found_after = time.perf_counter() - start
    result.examples, result.steps, result.distinct_states, result.longest = r.programs, r.transitions, r.states, r.depth
    result.stopped_by = r.stopped_because or "programs"
    if r.counterexample is not None:
        result.trace = _shrunk_trace(result, inner, model, r.counterexample.steps, state_of, shrink, label, cfg, only)
    plan.close(result.tally)
    result.seconds = time.perf_counter() - start
    if progress is not None:
        progress(snapshot(replace(r, seconds=result.seconds), True))
    else:
        result.peak_rss = max(result.peak_rss, rss_bytes())
    return result


def _snapshots(result: ExploreResult, examples: int, start: float) -> Callable[[SearchResult, bool], SearchProgress]:
    """(the engine's running figures, final) -> the `SearchProgress` `explore` reports; keeps the peak RSS."""
    def snapshot(r: SearchResult, final: bool) -> SearchProgress:
        rss = rss_bytes()
        result.peak_rss = max(result.peak_rss, rss)
        return SearchProgress("explore", r.states, r.depth, time.perf_counter() - start, rss,
                              (("programs", r.programs), ("of", examples), ("steps", r.transitions)), final)

    return snapshot


def _step_counter(result: ExploreResult, state_of: Callable[[Any], State], count: Callable[[State], None]
                  ) -> StepHook:
    """The engine's `on_step` hook for `explore`: kinds taken and enabled, the most of each fault budget a run used,
    and the invariant tally of the state stepped into (`count`)."""
    fired, enabled_kinds, spent = result.kinds_fired, result.kinds_enabled, result.budgets_spent
    for b in BUDGETS:
        spent[b] = 0

    def on_step(prev: Any, action: Action, nxt: Any, enabled: Any) -> None:
        s = state_of(nxt)
        fired[action.kind] = fired.get(action.kind, 0) + 1
        for _i, a, _t in enabled:
            enabled_kinds.add(a.kind)
        used = s.used
        for b in BUDGETS:
            n = getattr(used, b)
            if n > spent[b]:
                spent[b] = n
        count(s)

    return on_step


def _shrunk_trace(result: ExploreResult, inner: ReplicationModel, model: Any, run: list[tuple[str, Any]],
                  state_of: Callable[[Any], State], shrink: bool, label: str, cfg: Config, only: set[str] | None
                  ) -> Trace:
    """The counterexample `run` (action text, state) as a `Trace` of model actions, shrunk by `minimize_run` unless
    told not to (`result.minimized_from`: its length as found), with the hard violations of its last state."""
    def actions_of(steps: list[tuple[str, Any]]) -> list[Action]:
        last = steps[-1][1]
        if isinstance(last, Node):
            return list(last.actions())
        return list(_trace_actions(inner, steps))

    acts = actions_of(run)
    result.minimized_from = len(acts)
    if shrink and acts:
        acts = actions_of(minimize_run(model, run[0][1], acts)[0])
    last = run[0][1]
    for a in acts:
        last = model.step(last, a)
    checked = None if only is None else tuple(sorted(only))
    return Trace(label, cfg, tuple(acts), check_replication(state_of(last), cfg, only).hard_violations, checked)
