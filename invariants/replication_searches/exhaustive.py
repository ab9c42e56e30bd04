"""`kcheck exhaust` and `kcheck check` on the one engine: the replication model run by `kcheck.model.search.exhaust`
(or, with a Spark master, `kcheck.spark_check.exhaust.spark_exhaust`), with what the command reports beside the
verdict.

`run_exhaust(protocol, cfg, ...)` wraps `ReplicationModel` (invariants/replication_model_adapter.py) so that the
engine also gives:
- the invariant tally (`InvariantTally`): in how many stored states each invariant was switched off by its own
  `not_applicable`, and why. Every stored state is checked once, as the replication model's own search did; the
  counts live in shared memory, so forked workers (`workers` > 1) add to them too;
- change coverage: with a `ChangeProbe`, every successor the engine computes goes through the probe one action
  at a time (`probed_successors`' enumeration), and each frontier state carries its depth and the actions that
  reached it, so the probe keeps the shortest run to each differing answer, as before;
- `abstract`: the encoding (so the fingerprint) drops what `runs.abstract_key` drops, the
  control messages in flight; the frontier keeps the concrete state reached, so every trace is a run of the
  model. A clean abstract run proves nothing (`EngineRun.complete` is False);
- a memory cap (`max_rss`) through the engine's `stop` callback, measured over this process and its workers;
- the counterexample as a `Trace` (the file `kcheck replay` reads) with the hard violations of its last state.

The probe and the abstract encoding stay in this process: with either, `workers` and `master` fall back to the
one-process search, and `EngineRun.notes` says so.
"""

from __future__ import annotations

import glob
import multiprocessing
import os
import pickle
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kcheck.invariants.registry import REGISTRY, Violation, load_module
from kcheck.invariants.replication import ReplicationSubject, check_replication
from kcheck.invariants.replication_model_adapter import ReplicationModel, encode_state
from kcheck.invariants.replication_searches.runs import (
    ChangeProbe,
    InvariantTally,
    ProgressFn,
    SearchProgress,
    Trace,
    abstract_key,
    novelty_key,
    replication_ids,
    rss_bytes,
)
from kcheck.model.checkpoint import Checkpointer
from kcheck.model.interface import StateInvariant
from kcheck.model.replication.actions import Action, Config
from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import State
from kcheck.model.search import SearchResult, exhaust
from kcheck.reference.plugins import PluginError

ENGINE = "kcheck.model.search"
SPARK_ENGINE = "kcheck.spark_check.exhaust"

# Resident memory a stored state costs a default `kcheck exhaust` run: its store (about 20-30 B: fingerprint table,
# parent and action index) plus its share of the compressed frontier, the part that varies. Measured as
# (peak RSS - RSS at 1,000 states) / states: 172 B at 300,000 states of the bench ladder's bound 2 (split fetches,
# frontier peak 80,027), rounded up. The default --max-states is the memory cap over it, so the two caps agree.
RSS_BYTES_PER_STATE = 200


# ---- the tally, shared with forked workers ----------------------------------------------------------------

_REASON_BYTES = 480
_ERROR_BYTES = 8192


class SharedTally:
    """`InvariantTally`'s counts in shared memory (inherited by forked workers): states checked, and per
    invariant the states in which its `not_applicable` switched it off, with the first reason given."""

    def __init__(self, ids: Sequence[str]) -> None:
        from multiprocessing import sharedctypes

        self.ids = list(ids)
        self._counts = sharedctypes.RawArray("q", 1 + len(self.ids))
        self._reasons = [sharedctypes.RawArray("c", _REASON_BYTES) for _ in self.ids]
        self._lock = multiprocessing.Lock()
        # A user's invariant that fails in a forked worker: its PluginError, pickled, for the caller to raise (the
        # engine passes a worker's failure on as text).
        self._error = sharedctypes.RawArray("c", _ERROR_BYTES)
        self._error_len = sharedctypes.RawValue("q", 0)

    def fail(self, e: PluginError) -> None:
        data = pickle.dumps(e)
        if len(data) <= _ERROR_BYTES:
            with self._lock:
                if not self._error_len.value:
                    self._error.raw = data + bytes(_ERROR_BYTES - len(data))
                    self._error_len.value = len(data)

    def error(self) -> PluginError | None:
        n = self._error_len.value
        return pickle.loads(self._error.raw[:n]) if n else None

    def add(self, off: list[tuple[int, str]]) -> None:
        with self._lock:
            self._counts[0] += 1
            for i, why in off:
                self._counts[1 + i] += 1
                if not self._reasons[i].value:
                    self._reasons[i].value = why.encode("utf-8", "replace")[:_REASON_BYTES - 1]

    def snapshot(self) -> dict[str, Any]:
        """The counts and reasons as JSON values (a checkpoint keeps them; `restore` puts them back)."""
        return {"counts": list(self._counts), "reasons": [r.value.decode("utf-8", "replace") for r in self._reasons]}

    def restore(self, saved: dict[str, Any]) -> None:
        for i, n in enumerate(saved["counts"]):
            self._counts[i] = n
        for r, why in zip(self._reasons, saved["reasons"], strict=True):
            r.value = why.encode("utf-8", "replace")[:_REASON_BYTES - 1]

    def tally(self) -> InvariantTally:
        """The counts as an `InvariantTally` (its `summary` prints them)."""
        out = InvariantTally(states=self._counts[0])
        for i, inv in enumerate(self.ids):
            n = self._counts[1 + i]
            if n:
                out.off[inv] = n
                out.reasons[inv] = self._reasons[i].value.decode("utf-8", "replace")
        return out


def _checker(inner: ReplicationModel, cfg: Config, only: set[str] | None, tally: SharedTally | None,
             state_of: Callable[[Any], State]) -> StateInvariant[Any]:
    """One invariant for the engine: the tally of what the bounds switched off in this state, then the
    adapter's invariants (the verdict). The trace's violations are recomputed from its last state."""
    selected = [REGISTRY[i] for i in replication_ids(only)]
    checks = list(inner.invariants())

    def holds(x: Any) -> str | None:
        s = state_of(x)
        if tally is not None:
            subject = ReplicationSubject(s, cfg)
            off = []
            for i, inv in enumerate(selected):
                why = inv.not_applicable(subject)
                if why is not None:
                    off.append((i, why))
            tally.add(off)
        try:
            for check in checks:
                why = check.holds(s)
                if why is not None:
                    return f"{check.id}: {why}"
        except PluginError as e:  # a user's invariant failed (perhaps in a worker): the caller raises it
            if tally is not None:
                tally.fail(e)
            raise
        return None

    return StateInvariant("replication", "the replication invariants checked by this run", holds)


# ---- the models the engine runs ------------------------------------------------------------------------------

class PlainModel:
    """The replication model for the engine, compact: the frontier is kept as encodings (`decode`), so forked
    workers and Spark executors can share it."""

    def __init__(self, inner: ReplicationModel, invariant: StateInvariant[State]) -> None:
        self.inner = inner
        self.name = inner.name
        self._invariants = [invariant]
        self.decode = inner.decode
        if hasattr(inner, "successors"):
            self.successors = inner.successors
        if hasattr(inner, "encodings"):
            self.encodings = inner.encodings
        # the key without the bytes, which the engine then builds only for states it stores (model.search)
        for extension in ("fingerprint", "fingerprints"):
            if hasattr(inner, extension):
                setattr(self, extension, getattr(inner, extension))

    def initial_states(self) -> list[State]:
        return list(self.inner.initial_states())

    def actions(self, state: State) -> list[Action]:
        return list(self.inner.actions(state))

    def step(self, state: State, action: Action) -> State | None:
        return self.inner.step(state, action)

    def invariants(self) -> list[StateInvariant[State]]:
        return self._invariants

    def encode(self, state: State) -> bytes:
        return self.inner.encode(state)

    def symmetries(self) -> Sequence[Callable[[State], State]]:
        return self.inner.symmetries()

    def describe(self, action: Action) -> str:
        return self.inner.describe(action)

    def kind(self, action: Action) -> str:
        return action.kind


class AbstractModel(PlainModel):
    """The abstract search's model: states compared by `abstract_key` (the control messages in flight dropped).
    The frontier keeps the concrete state reached (no `decode`: the encoding cannot rebuild it; forked workers
    get it pickled), so every trace is a run of the model."""

    def __init__(self, inner: ReplicationModel, invariant: StateInvariant[State]) -> None:
        super().__init__(inner, invariant)
        self.name = inner.name + " abstract"
        del self.decode
        for concrete in ("encodings", "fingerprint", "fingerprints"):  # the abstract key is `encode`'s, below
            if hasattr(self, concrete):
                delattr(self, concrete)

    def encode(self, state: State) -> bytes:
        return encode_state(abstract_key(state))


@dataclass(frozen=True, eq=False)
class Node:
    """A frontier state with its BFS depth and the actions that reached it (a linked list sharing prefixes)."""

    state: State
    depth: int
    path: tuple[Any, ...] | None  # (last action, the parent's path) or None at the initial state

    def actions(self) -> tuple[Action, ...]:
        out: list[Action] = []
        p = self.path
        while p is not None:
            out.append(p[0])
            p = p[1]
        return tuple(reversed(out))


class NodeModel:
    """The replication model over `Node`s, for change coverage: the probe asks for the path and the depth of the
    state whose successors are computed. No `decode`: the frontier keeps the objects (in this one process,
    where the probe records). `abstract`: the encoding drops what `abstract_key` drops."""

    def __init__(self, inner: ReplicationModel, invariant: StateInvariant[Node], *, abstract: bool,
                 probe: ChangeProbe | None, label: str) -> None:
        self.inner, self.abstract, self.probe, self.label = inner, abstract, probe, label
        self.name = inner.name + (" abstract" if abstract else "")
        self._invariants = [invariant]
        if not abstract and hasattr(inner, "encodings"):
            self.encodings = lambda n: inner.encodings(n.state)

    def initial_states(self) -> list[Node]:
        return [Node(s, 0, None) for s in self.inner.initial_states()]

    def actions(self, node: Node) -> list[Action]:
        return list(self.inner.actions(node.state))

    def step(self, node: Node, action: Action) -> Node | None:
        """One step outside the search proper (a trace rebuilt, a look past the depth bound): not a visit."""
        probe = self.probe
        recording = probe._recording if probe is not None else False
        if probe is not None:
            probe._recording = False
        try:
            nxt = self.inner.step(node.state, action)
        finally:
            if probe is not None:
                probe._recording = recording
        return None if nxt is None else Node(nxt, node.depth + 1, (action, node.path))

    def successors(self, node: Node) -> list[tuple[int, Action, Node]]:
        probe, inner, s = self.probe, self.inner, node.state
        out = []
        if probe is None:
            for i, a in enumerate(inner.actions(s)):
                nxt = inner.step(s, a)
                if nxt is not None:
                    out.append((i, a, Node(nxt, node.depth + 1, (a, node.path))))
            return out
        probe.visit()
        cfg = inner.cfg
        for i, a in enumerate(inner.actions(s)):
            probe.begin()
            nxt = inner.step(s, a)
            probe.end(a, nxt, node.actions, self.label, cfg, depth=node.depth, before=s)
            if nxt is not None:
                out.append((i, a, Node(nxt, node.depth + 1, (a, node.path))))
        return out

    def invariants(self) -> list[StateInvariant[Node]]:
        return self._invariants

    def encode(self, node: Node | State) -> bytes:
        s = node.state if isinstance(node, Node) else node
        return encode_state(abstract_key(s)) if self.abstract else self.inner.encode(s)

    def symmetries(self) -> list[Callable[[Node], Node]]:
        return [partial(_image, g) for g in self.inner.symmetries()]

    def describe(self, action: Action) -> str:
        return self.inner.describe(action)

    def kind(self, action: Action) -> str:
        return action.kind


def _image(g: Callable[[State], State], node: Node) -> Node:
    return Node(g(node.state), node.depth, node.path)


def plain_model(protocol: Protocol, cfg: Config, only: set[str] | None = None, symmetry: bool = True,
                modules: Sequence[str] = (), reduce: bool = False) -> PlainModel:
    """The model a Spark executor builds (no tally: executors' counts do not come back), after importing the
    user's invariant `modules` (they register into the executor's registry)."""
    for m in modules:
        load_module(m)
    inner = ReplicationModel(protocol, cfg, only=only, symmetry=symmetry, reduce=reduce)
    return PlainModel(inner, _checker(inner, cfg, only, None, _same))


# ---- memory ----------------------------------------------------------------------------------------------------

def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for path in glob.glob(f"/proc/{p}/task/*/children"):
            try:
                with open(path, encoding="ascii") as f:
                    kids = [int(x) for x in f.read().split()]
            except (OSError, ValueError):
                continue
            out += kids
            todo += kids
    return out


def _pss(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def tree_memory(pid: int, ignore: frozenset[int] = frozenset()) -> int:
    """Resident memory of process `pid` and its descendants (the forked workers), leaving out the processes in
    `ignore` (descendants that were there before the search: a JVM a library started, a test runner's helpers).
    With workers, each process's proportional share (PSS, Linux): pages the fork shares are counted once; else
    RSS as `rss_bytes`. A descendant that ended meanwhile counts nothing."""
    kids = [k for k in _descendants(pid) if k not in ignore]
    if not kids:
        return rss_bytes() if pid == os.getpid() else (_pss(pid) or 0)
    own = _pss(pid)
    total = own if own is not None else (rss_bytes() if pid == os.getpid() else 0)
    for p in kids:
        total += _pss(p) or 0
    return total


class MemoryWatch:
    """The engine's `stop` callback for --max-memory, and the peak seen (shared with forked workers)."""

    INTERVAL = 0.25  # seconds between two readings of /proc (the engine asks every 64 expansions)

    def __init__(self, cap: int | None) -> None:
        from multiprocessing import sharedctypes

        self.cap, self.pid = cap, os.getpid()
        self._before = frozenset(_descendants(self.pid))  # not the search's: only its own workers count
        self._peak = sharedctypes.RawValue("q", 0)
        self._last = 0.0

    @property
    def peak(self) -> int:
        return self._peak.value

    def sample(self) -> int:
        now = tree_memory(self.pid, self._before)
        if now > self._peak.value:
            self._peak.value = now
        return now

    def __call__(self) -> str | None:
        t = time.monotonic()
        if t - self._last < self.INTERVAL:
            return None
        self._last = t
        now = self.sample()
        return "max-memory" if self.cap is not None and now >= self.cap else None


class SearchSetupError(ValueError):
    """The search could not start where it was asked to run (Spark missing, a bad master): one line."""


# ---- the run --------------------------------------------------------------------------------------------------

@dataclass
class EngineRun:
    """What `kcheck exhaust` and `kcheck check` report of one exhaustive run."""

    protocol: str
    result: SearchResult
    trace: Trace | None
    tally: InvariantTally | None  # None on Spark: the executors' counts do not come back
    abstract: bool
    peak_rss: int
    engine: str
    workers: int
    symmetry: bool
    symmetry_note: str | None  # why symmetry is off (None when on)
    notes: list[str] = field(default_factory=list)
    reduction_off: str | None = "not asked for"  # why model/replication/reduction.py did not run (None: it did)

    @property
    def states(self) -> int:
        return self.result.states

    @property
    def transitions(self) -> int:
        return self.result.transitions

    @property
    def depth(self) -> int:
        return self.result.depth

    @property
    def seconds(self) -> float:
        return self.result.seconds

    @property
    def stop_reason(self) -> str | None:
        """What stopped the search before its bounds (max-states, max-seconds, max-memory, ...); None when it
        ran to its end or stopped at a violation."""
        why = self.result.stopped_because
        return None if why == "violation" else why

    @property
    def complete(self) -> bool:
        """Every reachable state within the bounds was visited, and every invariant held in each: not stopped
        by a cap or a violation, not merged by the abstraction."""
        return self.result.complete and not self.abstract and self.trace is None


def _same(s: State) -> State:
    return s


def _node_state(n: Node) -> State:
    return n.state


def _trace_actions(inner: ReplicationModel, steps: Sequence[tuple[str, Any]]) -> tuple[Action, ...]:
    """The actions of a counterexample's steps (action text, state): in each state, the first action with that
    text that leads to the next state, followed by the steps the reduction took after it (`explicit`), so the
    trace is a run of the model that `kcheck replay` replays."""
    out: list[Action] = []
    for (_, before), (text, after) in zip(steps, steps[1:], strict=False):
        for a in inner.actions(before):
            if inner.describe(a) == text and inner.step(before, a) == after:
                out.extend(inner.explicit(before, a))
                break
        else:  # the engine rebuilt this step by re-execution: it applies
            raise AssertionError(f"no action '{text}' leads to the next state of the counterexample")
    return tuple(out)


def _violations(s: State, cfg: Config, only: set[str] | None) -> tuple[Violation, ...]:
    return check_replication(s, cfg, only).hard_violations


def run_exhaust(protocol: Protocol, cfg: Config, *, label: str | None = None, only: set[str] | None = None,
                abstract: bool = False, probe: ChangeProbe | None = None, max_states: int | None = None,
                max_seconds: float | None = None, max_rss: int | None = None, progress: ProgressFn | None = None,
                workers: int = 1, master: str | None = None, symmetry: bool = True,
                spill_dir: str | None = None, modules: Sequence[str] = (), order: str = "bfs",
                reduce: bool = False, spark_search: Callable[..., SearchResult] | None = None,
                checkpoint: Checkpointer | None = None, resume: bool = False,
                stop: Callable[[], str | None] | None = None, visited_memory: int | None = None) -> EngineRun:
    """Every state reachable within `cfg`'s bounds, breadth first, on the one engine (see the module docstring).

    With a `probe`, pass `probe.protocol` as `protocol`. `max_rss` (bytes) stops the search when this process
    and its workers hold that much resident memory. `master` runs the search on Spark (`local[2]` or
    `spark://host:port`) with `spark_search`, which the caller passes in (the command line passes
    `spark_check.exhaust.spark_exhaust`, its errors as SearchSetupError); `workers` > 1 forks that many processes
    on this machine. `modules`: the user's invariant modules (imported in Spark executors, and shipped with a
    `module:object` protocol's module).
    Raises `SearchSetupError` (one line) when the Spark search cannot run. `order` is the engine's (bfs, dfs or
    novelty, the last ranked by `runs.novelty_key`); orders other than bfs run in this one process.
    `reduce`: the search takes model/replication/reduction.py's steps at once where its argument holds (a complete
    run is the same proof; a counterexample is a run of the model with those steps written out, not necessarily
    a shortest one).
    `checkpoint` (on this machine, any order; with workers or on Spark, bfs): the search is saved to its folder as it
    goes, the invariant tally with it (none on Spark); `resume` continues the folder's checkpoint. `stop`: the
    engine's callback beside the memory cap (a word stops the search, between two expansions: a checkpoint is
    written there; on Spark it ends the search at once, the last checkpoint kept).
    `visited_memory`: the engine's (bytes of visited fingerprints kept in memory, the rest on disk; not on Spark).
    """
    if checkpoint is not None and probe is not None:
        raise SearchSetupError("checkpoints are taken by a search without change coverage")
    if visited_memory is not None and master is not None:
        raise SearchSetupError("the visited set's memory budget is for a search on this machine, not on Spark")
    label = label or protocol.name
    inner = ReplicationModel(protocol, cfg, only=only, symmetry=symmetry, reduce=reduce)
    notes: list[str] = []
    workers, master = _where(workers, master, probe, abstract, order, notes)
    watch = MemoryWatch(max_rss)
    report = _reporter(progress, watch, time.perf_counter())
    tally: InvariantTally | None
    state_of: Callable[[Any], State]
    if master is not None:
        result = _on_spark(spark_search, protocol, cfg, label, only, symmetry, modules, reduce, master, max_states,
                           max_seconds, report, checkpoint=checkpoint, resume=resume, stop=stop)
        tally, engine, state_of = None, SPARK_ENGINE, _same
        notes.append("on Spark the states in which the bounds switched an invariant off are not counted")
        if max_rss is not None:
            notes.append("--max-memory is not applied on Spark: the executors' memory is Spark's to bound")
    else:
        shared = SharedTally(replication_ids(only))
        model, state_of = _engine_model(inner, cfg, only, shared, abstract, probe, label)
        if checkpoint is not None:
            checkpoint.extra = (shared.snapshot, shared.restore)
        stops = watch if stop is None else (lambda: stop() or watch())
        try:
            result = exhaust(model, max_states=max_states, max_seconds=max_seconds, symmetry=symmetry,
                             progress=report, workers=workers, spill_dir=spill_dir, stop=stops, order=order,
                             novelty=_novelty(state_of) if order == "novelty" else None, checkpoint=checkpoint,
                             resume=resume, visited_memory=visited_memory)
        except RuntimeError:
            failed = shared.error()  # a user's invariant failed in a worker: its own error, not the worker's text
            if failed is not None:
                raise failed from None
            raise
        tally, engine = shared.tally(), ENGINE
    watch.sample()
    trace = _trace(inner, result, state_of, label, cfg, only)
    report(result, final=True)
    return EngineRun(label, result, trace, tally, abstract, max(watch.peak, rss_bytes()), engine,
                     getattr(result, "workers", 1) if master is None else workers, not inner.symmetry_off,
                     inner.symmetry_off, notes, inner.reduction_off if reduce else "not asked for")


def _where(workers: int, master: str | None, probe: ChangeProbe | None, abstract: bool, order: str,
           notes: list[str]) -> tuple[int, str | None]:
    """Where the search runs, (workers, master): change coverage and the abstract search run in this process (a note
    says so); raises `SearchSetupError` for an order other than bfs on Spark."""
    if probe is not None and (workers > 1 or master is not None):
        asked = f"--master {master}" if master is not None else f"--workers {workers}"
        notes.append(f"change coverage runs in this one process, where the probe records ({asked} not used)")
        workers, master = 1, None
    if order != "bfs" and master is not None:
        raise SearchSetupError(f"order {order} runs in this one process; the Spark search is breadth first")
    if probe is not None and order != "bfs":
        notes.append(f"order {order}: change coverage's run to each differing answer is the first one found, not "
                     "necessarily a shortest one")
    if abstract and master is not None:
        notes.append(f"the abstract search runs on this machine (--master {master} not used): its states travel "
                     "as objects, not encodings")
        master = None
    return workers, master


def _reporter(progress: ProgressFn | None, watch: MemoryWatch, start: float
              ) -> Callable[..., None]:
    """The engine's `progress` callback: the running figures as a `SearchProgress` (`final`: the last one)."""
    def report(r: SearchResult, final: bool = False) -> None:
        if progress is None:
            return
        rss = watch.sample()
        progress(SearchProgress("exhaust", r.states, r.depth, r.seconds if final else time.perf_counter() - start,
                                rss, (("transitions", r.transitions), ("frontier", r.frontier_peak)), final))

    return report


def _on_spark(spark_search: Callable[..., SearchResult] | None, protocol: Protocol, cfg: Config, label: str,
              only: set[str] | None, symmetry: bool, modules: Sequence[str], reduce: bool, master: str,
              max_states: int | None, max_seconds: float | None, report: Callable[..., None],
              **saving: Any) -> SearchResult:
    """The search on Spark, each executor building `plain_model`, the user's modules shipped. The Spark search
    itself comes from the caller (spark_check sits above this part). `saving`: its checkpoint, resume and stop,
    passed on when a checkpoint is asked for."""
    if spark_search is None:
        raise SearchSetupError("no Spark search was given to run on (run_exhaust's spark_search)")
    from kcheck.reference.plugins import shippable_paths

    ship = shippable_paths([label, *(f"{m}:_" for m in modules)])
    return spark_search(partial(plain_model, protocol, cfg, only, symmetry, tuple(modules), reduce), master,
                        max_states=max_states, max_seconds=max_seconds, symmetry=symmetry, progress=report,
                        py_files=ship, **(saving if saving.get("checkpoint") is not None else {}))


def _engine_model(inner: ReplicationModel, cfg: Config, only: set[str] | None, shared: SharedTally, abstract: bool,
                  probe: ChangeProbe | None, label: str) -> tuple[Any, Callable[[Any], State]]:
    """The model the engine runs in this process (over `Node`s with a probe, abstract, or plain), and how to get the
    replication state from one of its states."""
    if probe is not None:
        return (NodeModel(inner, _checker(inner, cfg, only, shared, _node_state), abstract=abstract, probe=probe,
                          label=label), _node_state)
    plain = _checker(inner, cfg, only, shared, _same)
    return (AbstractModel(inner, plain) if abstract else PlainModel(inner, plain)), _same


def _trace(inner: ReplicationModel, result: SearchResult, state_of: Callable[[Any], State], label: str, cfg: Config,
           only: set[str] | None) -> Trace | None:
    """The counterexample as a `Trace` `kcheck replay` reads, with the hard violations of its last state."""
    cx = result.counterexample
    if cx is None:
        return None
    last = cx.steps[-1][1]
    if isinstance(last, Node):
        actions = last.actions()
    else:
        actions = _trace_actions(inner, [(text, state_of(s)) for text, s in cx.steps])
    checked = None if only is None else tuple(sorted(only))
    return Trace(label, cfg, actions, _violations(state_of(last), cfg, only), checked)


def _novelty(state_of: Callable[[Any], State]) -> Callable[[Any], int]:
    """Order novelty's key on the engine's states (plain or `Node`): the random search's abstraction."""
    return lambda s: novelty_key(state_of(s))


def default_max_states(memory_cap: int | None) -> int:
    """The default --max-states: the memory cap (else a quarter of 16 GiB) over RSS_BYTES_PER_STATE."""
    cap = memory_cap if memory_cap is not None else (16 << 30) // 4
    return max(1, min(cap // RSS_BYTES_PER_STATE, 0xFFFFFFFE))


__all__ = ["ENGINE", "RSS_BYTES_PER_STATE", "SPARK_ENGINE", "AbstractModel", "EngineRun", "MemoryWatch", "Node",
           "NodeModel", "PlainModel", "SearchSetupError", "SharedTally", "default_max_states", "plain_model",
           "run_exhaust", "tree_memory"]
