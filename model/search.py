"""Search engines over any `kcheck.model.interface.Model`: fingerprinted exhaustive BFS and Hypothesis search.

`exhaust` is an explicit-state breadth-first search in the style of TLC and Stateright:

- Each visited state is kept as a 64-bit fingerprint (blake2b, digest_size=8) of its canonical encoding, in an
  open-addressing table of unsigned 64-bit ints, plus the index of its parent and the index of the action
  taken (positions in `model.actions(parent)`), in flat arrays. That is about 20-40 bytes per state, measured
  in `SearchResult.bytes_per_state` from the arrays' own sizes (no objects per state).
- The frontier (the states of the current and the next BFS level) is kept as encodings packed into 64 KiB
  chunks compressed with zlib (`kcheck.model.spill.Spool`) when the model has a `decode(bytes) -> state` (the
  optional extension below), else as state objects; it is transient and is not counted in `bytes_per_state`
  (`SearchResult.frontier_peak` says how many states it held at most). With `spill_dir`, a frontier whose
  compressed chunks pass `spill_threshold` bytes goes to a file there and is streamed back at the next level
  (`SearchResult.spilled_bytes`), so memory holds the visited set and at most the threshold of frontier.
- `visited_memory` bounds the visited set's memory (kcheck.model.diskset): a table of at most that many bytes,
  the rest of the fingerprints sorted in a file, merged in when the table fills, looked up at once (no delayed
  detection), so the search stores the same states in the same order; the store stays in memory.
- A counterexample is rebuilt by re-executing the recorded action indexes from the initial state, so it is a
  run of the model, and BFS makes it a shortest one (in steps, among the states the search stored).
- Symmetry reduction: a state's fingerprint is the minimum of the fingerprints of the state and of its images
  under `model.symmetries()`. Sound whatever the model lists, provided each listed map preserves behaviour and
  every invariant: two states share a fingerprint only if one is the image of the other under a composition of
  listed maps (or they collide, below), and a symmetric state has symmetric successors and the same invariant
  verdicts, so visiting one of them finds every violation up to renaming. The reduction is complete (one state
  per orbit) when the identity and the listed maps form a group: list every non-identity element.
  The frontier keeps the concrete state that was reached, not a canonical image, so traces stay concrete runs.
- A model may compute the fingerprint itself (`fingerprint(state) -> int`, optional extension below), without
  building the encoding: most steps reach a state already stored, and only a new state's encoding is built (for
  the frontier). Equal states must share it and two different states share it with probability at most 2^-64 (a
  64-bit hash of the encoding, or of something the encoding determines and that determines it; the replication
  model XORs a personalised 64-bit digest of each part of its encoding, kept with the part), so that the estimate
  below holds; with symmetry the least over the images is taken as above
  (`fingerprints(state)`: the state's and its images' at once). The search keeps the garbage collector's
  youngest generation 100,000 allocations wide meanwhile (`visited.rarer_collections`): it holds no object per stored
  state, so collecting every 700 allocations finds nothing and cost about a fifth of a run.
- Fingerprint collisions: two different states with the same 64-bit fingerprint make the search skip the
  second one. With n states the probability of any collision is about n^2 / 2^65: about 2.7e-4 at 10^8 states
  (3e-8 at 10^6). TLC makes the same trade (it reports the same estimate after a run); a clean run is a proof up
  to that probability. `SearchResult.collision_probability` gives the figure for the run.
- `workers=N` (N > 1) runs the same BFS over N forked processes (`kcheck.model.parallel`): each owns the
  fingerprints with `fp % N == k`, level by level; a complete run stores the same states and counts the same
  transitions as one process, and a counterexample is still a shortest one.
- `checkpoint` (any order; with workers, bfs): the visited set, store, frontier and counters are saved to a folder
  between two expansions, periodically and when a cap or `stop` ends the search, and `resume` continues from them
  to the result of a run never cut (kcheck.model.checkpoint says why that holds and how a write survives kill -9;
  kcheck.model.parallel how N workers stop at one cut inside a level, each saving its share).
- `order` changes only which stored state is expanded next, for counterexamples deeper than a BFS reaches, as in
  directed model checking (Edelkamp, Lluch Lafuente and Leue, "Directed explicit-state model checking in the
  validation of communication protocols", STTT 2004): "dfs" expands the state stored last (a stack), "novelty" is a
  best-first search ranking a state by how many states stored before it share its `novelty(state)` key (an
  abstraction that leaves out what multiplies states): states with a new key first (tier 0), then tier b = the
  states that found 2^(b-1) to 2^b-1 before them, first in first out within a tier, as best-first width search ranks
  by novelty in planning (Lipovetzky and Geffner, AAAI 2017). Until it first leaves tier 0 it is the abstract search
  that keeps the first state of each key, breadth first; it then goes on. Every state is still stored by fingerprint
  with its parent and every invariant checked in it, so a complete run visits exactly the states BFS visits (a proof
  within the bounds) and a counterexample is a run of the model rebuilt by re-execution; it is not a shortest one,
  and `depth` is the longest stored path, not a BFS level. These orders run in one process, without `max_depth` (a
  state first reached by a long path is not expanded again when a shorter one reaches it) or `spill_dir`; their
  frontier's segments are compressed.

`random_search` runs Hypothesis programs: each picks an initial state, then up to `max_steps` actions among the
enabled ones, checking every invariant after every step; per-kind weights bias the choice, and swarm testing
(on by default) switches each action kind on or off per program. Options make it a guided search: `follow`
(chain the actions the previous step enabled), `novelty` (restart programs from a corpus of states with a new
abstract key, as coverage-guided fuzzers do), drawn program lengths and a CPU budget. A failing run is shrunk by
re-execution (`minimize_run`). Two hooks let a caller report on the run without a search of its own: `on_step`
after every step of a program (the state before, the action, the state after, what was enabled) and `progress`
every few seconds (`kcheck explore` counts its coverage and invariant tally with them).

Optional extensions a model may provide (the engines use them when present): `decode(data) -> state` (inverse of
`encode`, so the frontier is kept as bytes); `novelty(state) -> Hashable` (exhaust's order "novelty");
`encodings(state) -> list[bytes]` (the encodings of the state and of its images under every listed symmetry, when
the model computes them faster than `encode(g(state))`); `successors(state) -> list[(index in actions(state),
action, next state)]` (only the actions that apply, when the model computes them faster than `actions` + `step`);
`kind(action) -> str` (the action's kind, for weights and swarm; by default the first word of
`describe(action)`); `fingerprint(state) -> int` and `fingerprints(state) -> list[int]` (the 64-bit key without
the encoding, above; `fingerprints`: the state's and its images' under the listed symmetries, in their order);
`first_violation(state) -> (id, message) | None` (what asking each of `invariants()` in turn gives: the first that
breaks, or None; exhaust's breadth-first loop asks it once per new state instead, unless keep_going).
"""

from __future__ import annotations

import itertools
import os
import pickle
import random
import struct
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from kcheck.model.checkpoint import Checkpointer, CheckpointError, check_workers, read_records
from kcheck.model.diskset import DiskFingerprintSet, restore_visited, visited_set
from kcheck.model.interface import Model, StateInvariant
from kcheck.model.parallel import parallel_exhaust
from kcheck.model.spill import DEFAULT_THRESHOLD, Spool
from kcheck.model.visited import (
    NO_PARENT,
    Counterexample,
    FingerprintSet,
    SearchResult,
    Store,
    fingerprint,
    frontier_codec,
    keyer,
    rarer_collections,
    replay_path,
    successor_fn,
    violated,
)

__all__ = ["ORDERS", "PROGRESS_SECONDS", "Counterexample", "FingerprintSet", "SearchResult", "StepHook", "exhaust",
           "fingerprint", "minimize_run", "random_search", "replay_path"]

_violated = violated  # the name tests and older callers import from here

PROGRESS_SECONDS = 3.0  # random_search: the least time between two `progress` calls
# random_search's per-step hook: (state before, action, state after, every (index, action, state) enabled before)
StepHook = Callable[[Any, Any, Any, Sequence[tuple[int, Any, Any]]], None]
ORDERS = ("bfs", "dfs", "novelty")  # exhaust's orders of expansion


# ---- exhaust ------------------------------------------------------------------------------------------------

@rarer_collections()
def exhaust(model: Model[Any, Any], max_states: int | None = None, max_depth: int | None = None,
            max_seconds: float | None = None, symmetry: bool = True,
            progress: Callable[[SearchResult], None] | None = None, compress: bool = True, *,
            workers: int = 1, spill_dir: str | None = None, stop: Callable[[], str | None] | None = None,
            spill_threshold: int = DEFAULT_THRESHOLD, order: str = "bfs",
            novelty: Callable[[Any], Hashable] | None = None, keep_going: bool = False,
            checkpoint: Checkpointer | None = None, resume: bool = False,
            visited_memory: int | None = None) -> SearchResult:
    """Breadth-first search of every state reachable from `model.initial_states()` (see the module docstring).

    Stops at the first state violating an invariant (`counterexample`, a shortest run to it), when storing
    another state would pass `max_states`, when a state at level `max_depth` has a successor (it is not
    expanded: the search covered every state within that many steps), after `max_seconds`, or when `stop`
    (called about every 64 expansions; with workers, by the calling process about every 0.2 s) returns a word,
    which becomes `stopped_because` (e.g. "max-memory"). `complete` is True only when none of these cut it:
    every reachable state was visited and every invariant held in each. `progress`, if given, gets the running
    figures about every 3 seconds. With `compress` (and a model with `decode`), the frontier's chunks are
    zlib-compressed. `spill_dir`: the frontier goes to files there past `spill_threshold` compressed bytes (per
    process). `workers` > 1: several forked processes (`kcheck.model.parallel`; Linux/macOS), the states
    travelling between them as encodings (`decode`) or pickles.

    `order` (ORDERS): "bfs" (the default, above); "dfs" or "novelty" expand the stored states in another order
    (see the module docstring), in one process, without `max_depth` or `spill_dir`; `novelty(state) -> key` is
    the abstraction order "novelty" ranks states by (default: the model's own `novelty`).

    `keep_going` (as TLC's -continue; order bfs, one process): a violation does not end the search. The first
    state found breaking each invariant gives that invariant's counterexample (a shortest run, breadth first),
    the invariant is not checked again, and the search goes on, through the violating states too, until every
    invariant broke or nothing is left. `counterexamples` holds them all; `complete` stays False when any was
    found, and `covered` says whether the search still visited every reachable state.

    `checkpoint` (any order, workers too, not keep_going): the search is saved to its folder every
    `checkpoint.every` seconds and whenever a cap or `stop` ends it between two expansions
    (kcheck.model.checkpoint); with `resume` it starts from the folder's checkpoint instead of the initial states
    and ends with the counts, depth and counterexample of a run never cut (`seconds` is this run's). A checkpoint
    of N workers resumes with N workers (CheckpointError otherwise).

    `visited_memory` (bytes; any order, workers too): the visited set keeps at most that much fingerprint table in
    memory and the rest in a sorted file (kcheck.model.diskset), in the checkpoint's folder, else `spill_dir`, else
    the system's temporary folder (unlinked from the start); with workers, each gets its share of the budget.
    The search is the same (counts, depth, counterexample); None keeps it all in memory.
    """
    _check_exhaust_options(workers, order, keep_going, max_depth, spill_dir, visited_memory)
    if (checkpoint is not None or resume) and (keep_going or checkpoint is None):
        raise ValueError("checkpoints are taken by a search without keep_going; resume needs a checkpoint")
    if order != "bfs":
        rank = _novelty_key(model, novelty) if order == "novelty" else None
        ordered = _OrderedSearch(model, order, rank, max_states, max_seconds, symmetry, progress, compress, stop,
                                 checkpoint, visited_memory)
        return ordered.resume() if resume else ordered.run()
    if workers > 1:
        return parallel_exhaust(model, workers=workers, max_states=max_states, max_depth=max_depth,
                                max_seconds=max_seconds, symmetry=symmetry, progress=progress, compress=compress,
                                spill_dir=spill_dir, spill_threshold=spill_threshold, stop=stop,
                                visited_memory=visited_memory, checkpoint=checkpoint, resume=resume,
                                visited_dir=_visited_dir(checkpoint, spill_dir))
    search = _BreadthFirst(model, max_states, max_depth, max_seconds, symmetry, progress, compress, stop, spill_dir,
                           spill_threshold, keep_going, checkpoint, visited_memory)
    return search.resume() if resume else search.run()


def _visited_dir(checkpoint: Checkpointer | None, spill_dir: str | None) -> str | None:
    """Where a disk-backed visited set keeps its file: beside the checkpoint (its copy is then made on the same
    file system), else in `spill_dir`."""
    if checkpoint is None:
        return spill_dir
    folder = checkpoint.folder
    return folder if os.path.isdir(folder) else os.path.dirname(os.path.abspath(folder))


def _check_exhaust_options(workers: int, order: str, keep_going: bool, max_depth: int | None,
                           spill_dir: str | None, visited_memory: int | None) -> None:
    """Raises ValueError on options `exhaust` cannot run together, in one line."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    if keep_going and (order != "bfs" or workers > 1):
        raise ValueError("keep_going runs breadth first in one process: it needs order bfs and workers 1")
    if order != "bfs":
        for refused, why in ((workers > 1, "runs in one process: workers > 1 needs"),
                             (max_depth is not None, "does not find every state's shortest depth: max_depth needs"),
                             (spill_dir is not None, "keeps its frontier in memory: spill_dir needs")):
            if refused:
                raise ValueError(f"order {order} {why} order bfs")
    if visited_memory is not None and visited_memory < 1:
        raise ValueError(f"visited_memory must be a positive number of bytes, not {visited_memory}")
    if spill_dir is not None and not os.path.isdir(spill_dir):
        raise ValueError(f"spill_dir {spill_dir} is not a directory")


def _novelty_key(model: Model[Any, Any], novelty: Callable[[Any], Hashable] | None) -> Callable[[Any], Hashable]:
    """The abstraction order "novelty" ranks states by: the one given, else the model's own `novelty`."""
    rank = novelty or getattr(model, "novelty", None)
    if rank is None:
        raise ValueError(f"order novelty needs a novelty key: {model.name} has no novelty(state) and none was given")
    return rank


class _Search:
    """What every one-process exhaust order shares: the invariants (a list of its own, which keep_going shortens),
    the key (lazy: encodings built only for the states stored), the successor function, the visited set and the
    store, the caps checked every 64 expansions, and the result's closing figures."""

    def __init__(self, model: Model[Any, Any], max_states: int | None, max_seconds: float | None, symmetry: bool,
                 progress: Callable[[SearchResult], None] | None, stop: Callable[[], str | None] | None,
                 checkpoint: Checkpointer | None = None, visited_memory: int | None = None,
                 spill_dir: str | None = None) -> None:
        self.model = model
        self.max_states, self.max_seconds, self.progress, self.stop = max_states, max_seconds, progress, stop
        self.start = self.last_report = time.perf_counter()
        self.invariants = list(model.invariants())
        self.key = keyer(model, list(model.symmetries()) if symmetry else [], lazy=True)
        self.succ = successor_fn(model)
        self.checkpoint = checkpoint
        self.seen = visited_set(visited_memory, _visited_dir(checkpoint, spill_dir))
        self.store = Store()
        self.result = SearchResult(False, 0, 0, 0, 0.0, None, None, None)
        self.transitions = 0
        self.expanded = 0

    def save_checkpoint(self, frontier: Iterable[tuple[int, bytes]], nxt: Iterable[tuple[int, bytes]],
                        counters: dict[str, Any], more: Mapping[str, Iterable[tuple[int, bytes]]] | None = None
                        ) -> None:
        """One checkpoint of the visited set (its table, and its disk file's copy), the store and what the order
        keeps."""
        assert self.checkpoint is not None
        seen = self.seen
        self.checkpoint.save({"visited": seen.table, "parent": self.store.parent, "action": self.store.action},
                             frontier, nxt, counters, more,
                             disk=seen.disk_chunks() if isinstance(seen, DiskFingerprintSet) else None)

    def counters(self, transitions: int, expanded: int) -> dict[str, Any]:
        """The counters every order's checkpoint keeps (`transitions` and `expanded`: as counted before the state
        the search goes on from)."""
        return {"order": self.result.order, "transitions": transitions, "expanded": expanded,
                "depth": self.result.depth, "frontier_peak": self.result.frontier_peak, "states": len(self.store)}

    def restore(self) -> tuple[dict[str, Any], str, str]:
        """The checkpoint's visited set, store and shared counters put back: (its counters, the frontier file, the
        next file). CheckpointError for a checkpoint of another order."""
        assert self.checkpoint is not None
        check_workers(self.checkpoint.manifest()["counters"], 1, self.checkpoint.folder)
        counters, arrays, frontier, nxt = self.checkpoint.load()
        if counters.get("order", "bfs") != self.result.order:
            raise CheckpointError(f"{self.checkpoint.folder}: a checkpoint of order {counters.get('order', 'bfs')}, "
                                  f"not {self.result.order}")
        self.seen = restore_visited(self.seen, arrays["visited"], self.checkpoint.disk_file())
        self.store.parent, self.store.action = arrays["parent"], arrays["action"]
        self.transitions, self.expanded = counters["transitions"], counters["expanded"]
        self.result.depth, self.result.frontier_peak = counters["depth"], counters["frontier_peak"]
        return counters, frontier, nxt

    def initial(self) -> Iterator[tuple[int, Any, bytes, tuple[str, str] | None]]:
        """Each distinct initial state, stored: (its number, the state, its encoding, the invariant it breaks or
        None)."""
        for i, s in enumerate(self.model.initial_states()):
            fp, data = self.key(s)
            if self.seen.add(fp):
                yield (self.store.add(NO_PARENT, i), s, self.model.encode(s) if data is None else data,
                       violated(self.invariants, s))

    def interrupted(self) -> str | None:
        """Called every 64 expansions: the word that stops the search now (the clock, the `stop` callback), after
        a progress report when one is due."""
        now = time.perf_counter()
        if self.max_seconds is not None and now - self.start >= self.max_seconds:
            return "max-seconds"
        if self.stop is not None:
            word = self.stop()
            if word:
                return word
        if self.progress is not None and now - self.last_report >= PROGRESS_SECONDS:
            self.last_report = now
            r = self.result
            r.states, r.seconds, r.transitions = len(self.store.parent), now - self.start, self.transitions
            self.progress(r)
        return None

    def counterexample(self, n: int, found: tuple[str, str]) -> Counterexample:
        """The run to stored state `n`, rebuilt by re-executing its path, as the counterexample of `found`."""
        initial, path = self.store.path(n)
        return Counterexample(found[0], found[1], replay_path(self.model, initial, path))

    def close(self, stopped: str | None) -> SearchResult:
        """The result's figures once the search stopped (`stopped`: why, None when it ran to its end)."""
        result = self.result
        n = result.states = len(self.store.parent)
        result.transitions = self.transitions
        result.complete = stopped is None
        result.stopped_because = stopped
        result.seconds = time.perf_counter() - self.start
        result.bytes_per_state = (self.seen.nbytes + self.store.nbytes) / n if n else None
        if isinstance(self.seen, DiskFingerprintSet):
            result.visited_disk_bytes = self.seen.disk_bytes
            self.seen.close()
        result.collision_probability = min(1.0, n * n / 2.0 ** 65)
        return result


class _BreadthFirst(_Search):
    """`exhaust` in one process, level by level: the frontier of a level kept packed (`frontier_codec`), each new
    state checked as it is stored."""

    def __init__(self, model: Model[Any, Any], max_states: int | None, max_depth: int | None,
                 max_seconds: float | None, symmetry: bool, progress: Callable[[SearchResult], None] | None,
                 compress: bool, stop: Callable[[], str | None] | None, spill_dir: str | None, spill_threshold: int,
                 keep_going: bool, checkpoint: Checkpointer | None = None, visited_memory: int | None = None) -> None:
        super().__init__(model, max_states, max_seconds, symmetry, progress, stop, checkpoint, visited_memory,
                         spill_dir)
        self.max_depth, self.keep_going = max_depth, keep_going
        # a checkpoint writes the frontier's records as bytes: encodings, or pickles for a model without decode
        self.pack, self.unpack, self.new_frontier = frontier_codec(model, compress, spill_dir, spill_threshold,
                                                                   need_bytes=checkpoint is not None)
        # the model's one call per new state; keep_going drops invariants as they break, so it asks each in turn
        self.first_violation = getattr(model, "first_violation", None) if not keep_going else None
        self.frontier = self.new_frontier()
        self.nxt: Any = None  # the next level's frontier while a level is expanded
        self.spilled = 0  # bytes spilled by frontiers already dropped

    def run(self) -> SearchResult:
        for n, s, own, found in self.initial():
            if found is not None and self.broke(n, s, found):
                return self.finish("violation")
            self.frontier.append(self.pack(s, own), n)
        self.result.frontier_peak = len(self.frontier)
        return self.levels(0)

    def resume(self) -> SearchResult:
        """The search from its checkpoint (kcheck.model.checkpoint): the visited set, store, counters, the frontier
        still to expand and the next level so far as they were saved; then on as `run`."""
        counters, frontier, nxt = self.restore()
        for n, data in read_records(frontier):
            self.frontier.append(data, n)
        self.nxt = self.new_frontier()
        for n, data in read_records(nxt):
            self.nxt.append(data, n)
        self.spilled = counters["spilled"]
        return self.levels(counters["level"])

    def save(self, level: int, position: int, transitions: int, expanded: int) -> None:
        """A checkpoint between two expansions: the frontier from `position` on is still to expand, `transitions`
        and `expanded` counted before it. (A state cut in the middle by max_states is expanded again on resume:
        the successors it stored are seen then, and counted again from `transitions`.)"""
        assert self.checkpoint is not None and self.nxt is not None
        rest = (rec for i, rec in enumerate(self.frontier) if i >= position)
        counters = {**self.counters(transitions, expanded), "level": level, "spilled": self.spilled}
        self.save_checkpoint(rest, self.nxt, counters)

    def levels(self, level: int) -> SearchResult:
        """Expands level after level from `level` (whose frontier is `self.frontier`) until none is left or the
        search stops."""
        result = self.result
        while len(self.frontier):
            if self.max_depth is not None and level >= self.max_depth:
                return self.finish("max-depth" if self.new_past_bound() else None)
            stopped = self.expand_level(level)
            if stopped is not None:
                return self.finish(stopped)
            self.spilled += self.frontier.spilled
            self.frontier.close()
            self.frontier, self.nxt = self.nxt, None
            if len(self.frontier):
                level += 1
                result.depth = level
                result.frontier_peak = max(result.frontier_peak, len(self.frontier))
        return self.finish(None)

    def new_past_bound(self) -> bool:
        """Whether a state of the frontier (at level `max_depth`) has a successor not stored: looked at without
        storing it, the answer decides `complete`."""
        key, seen = self.key, self.seen
        for _, packed in self.frontier:
            for _, _, t in self.succ(self.unpack(packed)):
                if key(t)[0] not in seen:
                    return True
        return False

    def expand_level(self, level: int) -> str | None:
        """Expands every state of the frontier (level `level`) into the next level's (begun already when the search
        resumed), storing and checking each new state: the word that stops the search, or None when the level is
        done. The hot loop: every name it uses per successor is a local."""
        if self.nxt is None:
            self.nxt = self.new_frontier()
        nxt = self.nxt
        append, pack, unpack, encode = nxt.append, self.pack, self.unpack, self.model.encode
        succ, key, seen = self.succ, self.key, self.seen
        seen_add, store_add, parents = seen.add, self.store.add, self.store.parent
        fp_only = getattr(key, "fp_only", None)  # the model's own fingerprint: encodings built for new states only
        first_violation, invariants, max_states = self.first_violation, self.invariants, self.max_states
        expanded, transitions = self.expanded, self.transitions
        for position, (n, packed) in enumerate(self.frontier):
            expanded += 1
            before = transitions
            if not expanded & 63:
                self.transitions = transitions
                word = self.interrupted()
                if self.checkpoint is not None and (word or self.checkpoint.due()):
                    self.save(level, position, transitions, expanded - 1)
                if word:
                    return word
            for ai, _, t in succ(unpack(packed)):
                transitions += 1
                if fp_only is not None:
                    fp, data = fp_only(t), None
                else:
                    fp, data = key(t)
                if max_states is not None and len(parents) >= max_states:
                    if fp not in seen:
                        self.transitions = transitions
                        if self.checkpoint is not None:
                            self.save(level, position, before, expanded - 1)
                        return "max-states"
                    continue
                if not seen_add(fp):
                    continue
                m = store_add(n, ai)
                found = first_violation(t) if first_violation is not None else violated(invariants, t)
                if found is not None and self.broke(m, t, found):
                    self.transitions = transitions
                    self.result.depth = level + 1
                    return "violation"
                append(pack(t, encode(t) if data is None else data), m)
        self.expanded, self.transitions = expanded, transitions
        return None

    def broke(self, n: int, s: Any, found: tuple[str, str]) -> bool:
        """Record stored state `n`'s violation; True when the search ends here (always, unless keep_going)."""
        result = self.result
        if not self.keep_going:
            result.counterexample = self.counterexample(n, found)
            return True
        # every invariant not yet broken that `s` breaks gets `n` as its counterexample, and is not checked again
        for inv in list(self.invariants):
            why = found[1] if inv.id == found[0] else inv.holds(s)
            if why is not None:
                result.counterexamples[inv.id] = self.counterexample(n, (inv.id, why))
                self.invariants.remove(inv)
        result.counterexample = next(iter(result.counterexamples.values()))
        return not self.invariants

    def finish(self, stopped: str | None) -> SearchResult:
        if self.result.counterexamples:  # keep_going: ran to its end (covered), or stopped by a cap or every invariant
            self.result.covered, stopped = stopped is None, stopped or "violation"
        result = self.close(stopped)
        nxt = self.nxt
        result.spilled_bytes = self.spilled + self.frontier.spilled + (nxt.spilled if nxt is not None else 0)
        self.frontier.close()
        if nxt is not None:
            nxt.close()
        return result


class _OrderedSearch(_Search):
    """`exhaust` in order "dfs" or "novelty" (see the module docstring): the same visited set, store, invariant
    checks and traces as the BFS; only which stored state is expanded next differs.

    A checkpoint (kcheck.model.checkpoint) is taken between two expansions: the rest of the batch being expanded,
    the stack or the tiers in their order, and the novelty keys' counts. Restored, they give the same expansion
    order: a tier's segments are only ever taken whole from its front, so its remaining states appended again in
    order fall into the same segments. A state cut in the middle by max_states is expanded again on resume (the
    successors it stored already are seen then); under dfs the stack's height before it (`below`) is kept, so that
    its successors of both runs are turned over together, as one expansion does."""

    def __init__(self, model: Model[Any, Any], order: str, novelty: Callable[[Any], Hashable] | None,
                 max_states: int | None, max_seconds: float | None, symmetry: bool,
                 progress: Callable[[SearchResult], None] | None, compress: bool,
                 stop: Callable[[], str | None] | None, checkpoint: Checkpointer | None = None,
                 visited_memory: int | None = None) -> None:
        super().__init__(model, max_states, max_seconds, symmetry, progress, stop, checkpoint, visited_memory)
        self.result.order = order
        self.novelty = novelty
        self.decode = getattr(model, "decode", None)
        self.stack: list[tuple[int, int, Any]] = []  # dfs: (state number, depth, packed state)
        self.tiers = _Tiers((lambda: Spool(2, compress)) if self.decode is not None else _Listed)
        self.counts: dict[Hashable, int] = {}  # novelty key -> states stored with it so far
        self.below: int | None = None  # resumed dfs: the stack's height before the state cut by max_states

    def run(self) -> SearchResult:
        for n, s, own, found in self.initial():
            if found is not None:
                self.result.counterexample = self.counterexample(n, found)
                return self.finish("violation")
            self.put(s, own, n, 0)
        self.stack.reverse()  # the first initial state is expanded first
        return self.loop(None)

    def resume(self) -> SearchResult:
        """The search from its checkpoint: the store and counters, the stack or tiers and the novelty counts as they
        were saved, then the rest of the batch that was being expanded; then on as `run`."""
        assert self.checkpoint is not None
        counters, rest, queue = self.restore()
        thaw = self.decode is None  # states saved as pickles (the model has no decode)

        def places(path: str) -> Iterator[tuple[int, int, int, Any]]:
            for n, data in read_records(path):
                tier, depth = _PLACE.unpack_from(data)
                yield tier, n, depth, pickle.loads(data[_PLACE.size:]) if thaw else data[_PLACE.size:]

        for tier, n, depth, packed in places(queue):
            if self.novelty is None:
                self.stack.append((n, depth, packed))
            else:
                self.tiers.append(tier, packed, n, depth)
        if self.novelty is not None:
            self.counts = {pickle.loads(key): c for c, key in read_records(self.checkpoint.records("keys.bin"))}
        batch = _Listed()
        for _, n, depth, packed in places(rest):
            batch.append(packed, n, depth)
        self.below = counters["below"]
        return self.loop(batch)

    def save(self, rest: Iterator[tuple[int, int, Any]], transitions: int, expanded: int,
             below: int | None) -> None:
        """A checkpoint between two expansions: `rest` of the batch still to expand, the stack or tiers, the counts."""
        assert self.checkpoint is not None
        freeze = self.decode is None

        def records(items: Iterable[tuple[int, int, int, Any]]) -> Iterator[tuple[int, bytes]]:
            for tier, n, depth, packed in items:
                yield n, _PLACE.pack(tier, depth) + (pickle.dumps(packed, 5) if freeze else packed)

        queue = (((0, n, depth, packed) for n, depth, packed in self.stack) if self.novelty is None
                 else self.tiers.items())
        more = (None if self.novelty is None
                else {"keys.bin": ((c, pickle.dumps(k, 5)) for k, c in self.counts.items())})
        self.save_checkpoint(records((0, n, d, p) for n, d, p in rest), records(queue),
                             {**self.counters(transitions, expanded), "below": below}, more)

    def loop(self, batch: Any) -> SearchResult:
        """Expands `batch` (None: none), then batch after batch as `take` hands them out, until none is left or the
        search stops."""
        while True:
            if batch is None:
                batch = self.take()
                if batch is None:
                    return self.finish(None)
            stopped = self.expand(batch)
            if stopped is not None:
                return self.finish(stopped)
            if self.novelty is not None or isinstance(batch, _Listed):
                batch.close()
            batch = None

    def put(self, t: Any, data: bytes | None, n: int, depth: int) -> None:
        """Queue stored state `n` for expansion: on the stack (dfs), or in its novelty tier."""
        packed = (self.model.encode(t) if data is None else data) if self.decode is not None else t
        if self.novelty is None:
            self.stack.append((n, depth, packed))
            return
        k = self.novelty(t)
        c = self.counts.get(k, 0)
        self.counts[k] = c + 1
        # Tier 0: the first state of its key; then tier b holds the states that found 2^(b-1)..2^b-1 before them.
        self.tiers.append(c.bit_length(), packed, n, depth)

    def take(self) -> Any:
        """The states to expand next: the top of the stack (dfs), or the oldest segment of the lowest tier; None
        when nothing is left."""
        if self.novelty is None:
            return (self.stack.pop(),) if self.stack else None
        return self.tiers.take()

    def paused(self, batch: Any, position: int, transitions: int, expanded: int) -> str | None:
        """Called every 64 expansions, before the state at `position` of `batch`: the word that stops the search,
        after a checkpoint when one is due or the search stops here."""
        self.transitions = transitions
        word = self.interrupted()
        if self.checkpoint is not None and (word or self.checkpoint.due()):
            self.save(itertools.islice(batch, position, None), transitions, expanded - 1, None)
        return word

    def expand(self, batch: Any) -> str | None:
        """Expands the states of `batch`, storing, checking and queueing each new state: the word that stops the
        search, or None."""
        decode, succ, key, seen, stack, result = self.decode, self.succ, self.key, self.seen, self.stack, self.result
        seen_add, store_add, parents = seen.add, self.store.add, self.store.parent
        invariants, max_states, put = self.invariants, self.max_states, self.put
        expanded, transitions = self.expanded, self.transitions
        for position, (n, depth, packed) in enumerate(batch):
            expanded += 1
            if not expanded & 63:
                word = self.paused(batch, position, transitions, expanded)
                if word:
                    return word
            below, before = len(stack) if self.below is None else self.below, transitions
            self.below = None
            for ai, _, t in succ(decode(packed) if decode is not None else packed):
                transitions += 1
                fp, data = key(t)
                if max_states is not None and len(parents) >= max_states:
                    if fp not in seen:
                        self.transitions = transitions
                        if self.checkpoint is not None:
                            self.save(itertools.islice(batch, position, None), before, expanded - 1, below)
                        return "max-states"
                    continue
                if not seen_add(fp):
                    continue
                m = store_add(n, ai)
                result.depth = max(result.depth, depth + 1)
                found = violated(invariants, t)
                if found is not None:
                    self.transitions = transitions
                    result.counterexample = self.counterexample(m, found)
                    return "violation"
                put(t, data, m, depth + 1)
            if self.novelty is None:
                stack[below:] = stack[below:][::-1]  # the first successor on top: expanded first
            result.frontier_peak = max(result.frontier_peak, len(stack) + self.tiers.count)
        self.expanded, self.transitions = expanded, transitions
        return None

    def finish(self, stopped: str | None) -> SearchResult:
        result = self.close(stopped)
        self.tiers.close()
        self.stack.clear()
        return result


_PLACE = struct.Struct("<II")  # a saved dfs or novelty record's head: its tier (0 under dfs), its depth


# States per segment of a tier's queue (order "novelty"): the next state to expand is chosen anew after at most this
# many expansions. Large enough that a segment's last, uncompressed chunk of the Spool is a small share of it.
_SEGMENT = 4096


class _Listed:
    """A frontier segment of state objects (a model without `decode`): the same calls as a `Spool` of two ints."""

    def __init__(self) -> None:
        self._items: list[tuple[int, int, Any]] = []

    def append(self, data: Any, n: int, depth: int) -> None:
        self._items.append((n, depth, data))

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[tuple[int, int, Any]]:
        return iter(self._items)

    def close(self) -> None:
        self._items = []


class _Tiers:
    """Order "novelty"'s frontier: a FIFO queue per tier, each a list of segments of at most `_SEGMENT` states
    ((state number, depth, packed state)); `take` hands out the oldest segment of the lowest tier holding any."""

    def __init__(self, new_segment: Callable[[], Any]) -> None:
        self._new = new_segment
        self._tiers: list[list[Any]] = []
        self.count = 0

    def append(self, tier: int, data: Any, n: int, depth: int) -> None:
        while len(self._tiers) <= tier:
            self._tiers.append([])
        segments = self._tiers[tier]
        if not segments or len(segments[-1]) >= _SEGMENT:
            segments.append(self._new())
        segments[-1].append(data, n, depth)
        self.count += 1

    def take(self) -> Any:
        for segments in self._tiers:
            if segments:
                segment = segments.pop(0)
                self.count -= len(segment)
                return segment
        return None

    def items(self) -> Iterator[tuple[int, int, int, Any]]:
        """(tier, state number, depth, packed state) of every state queued, tier by tier, each in its order."""
        for tier, segments in enumerate(self._tiers):
            for segment in segments:
                for n, depth, data in segment:
                    yield tier, n, depth, data

    def close(self) -> None:
        for segments in self._tiers:
            for segment in segments:
                segment.close()
        self._tiers, self.count = [], 0




# ---- random_search -----------------------------------------------------------------------------------------

def _kind_of(model: Model[Any, Any]) -> Callable[[Any], str]:
    kind = getattr(model, "kind", None)
    if kind is not None:
        return kind
    return lambda a: model.describe(a).split(" ", 1)[0]


@contextmanager
def _no_local_constants() -> Iterator[None]:
    """Hypothesis (6.13x on) mixes integer literals found in the source of every local module imported so far
    into its draws, so what one seed finds would depend on which modules happen to be imported (a test passing
    alone and failing in a suite). The search switches that pool off while it runs, so a seed means the same
    programs everywhere. Hypothesis's internal `providers._get_local_constants`; skipped if it is not there. Its
    `CONSTANTS_CACHE` (the constants each kind of draw may take, local ones included, kept for the process) is
    emptied on entry and on exit: filled by an earlier test without the switch, it would bring the local constants
    back (a seed finding a row alone and not after another test)."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - another Hypothesis layout: constants as Hypothesis has them
        yield
        return
    real = getattr(providers, "_get_local_constants", None)
    empty = getattr(providers, "_local_constants", None)
    if real is None or empty is None:  # pragma: no cover
        yield
        return
    blank = type(empty)(**{k: type(v)() if not hasattr(v, "key") else type(v)(key=v.key)
                           for k, v in vars(empty).items()}) if hasattr(empty, "__dict__") else None
    cache = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", {})
    cache.clear()
    providers._get_local_constants = lambda: blank if blank is not None else empty
    try:
        yield
    finally:
        providers._get_local_constants = real
        cache.clear()


class _Node:
    """One step of a program, linked to the step before it: programs that restart from a stored state share
    the steps that led there (the corpus holds nodes, not copied traces)."""

    __slots__ = ("prev", "action", "state", "depth")

    def __init__(self, prev: _Node | None, action: Any, state: Any) -> None:
        self.prev, self.action, self.state = prev, action, state
        self.depth: int = 0 if prev is None else prev.depth + 1

    def actions(self) -> list[Any]:
        out, n = [], self
        while n.prev is not None:
            out.append(n.action)
            n = n.prev
        out.reverse()
        return out


def minimize_run(model: Model[Any, Any], initial: Any, actions: Sequence[Any],
                 invariants: Sequence[StateInvariant[Any]] | None = None
                 ) -> tuple[list[tuple[str, Any]], tuple[str, str]]:
    """A shorter run to a violation: drop runs of steps (halves, then smaller) while the rest, replayed from
    `initial`, still reaches a state violating an invariant (any of them; the run is cut at the first such
    state), until no single step can go. Every candidate is re-executed (an action must be among
    `model.actions(state)` and `step` must apply it), so the result is a run of the model. Returns
    ([(action text, state)], the initial state first with "", and (invariant id, message) of its last state.
    Raises ValueError if `actions` does not reach a violation."""
    invs = list(model.invariants()) if invariants is None else list(invariants)

    def replay(s: Any, acts: Sequence[Any]) -> tuple[list[Any], tuple[str, str]] | None:
        """The states after each of `acts` up to the first violation, or None (a step does not apply, or no
        violation)."""
        out = []
        for a in acts:
            if a not in model.actions(s):
                return None
            s = model.step(s, a)
            if s is None:
                return None
            out.append(s)
            found = violated(invs, s)
            if found is not None:
                return out, found
        return None

    first = replay(initial, actions)
    if first is None:
        raise ValueError("the run does not reach a violation on re-execution")
    states, found = first
    acts = list(actions[:len(states)])
    size = max(1, len(acts) // 2)
    while size >= 1:
        i, cut = 0, False
        while i < len(acts):
            base = initial if i == 0 else states[i - 1]  # the prefix is unchanged: replay from where it ends
            got = replay(base, acts[i + size:])
            if got is not None:
                acts = acts[:i] + acts[i + size:i + size + len(got[0])]
                states, found, cut = states[:i] + got[0], got[1], True
            else:
                i += size
        if not cut or size > 1:
            size //= 2
    steps: list[tuple[str, Any]] = [("", initial)]
    steps += [(model.describe(a), t) for a, t in zip(acts, states, strict=True)]
    return steps, found


def random_search(model: Model[Any, Any], seed: int = 0, programs: int = 200, max_steps: int = 50,
                  weights: Mapping[str, float] | None = None, swarm: bool = True, stuck: str = "continue", *,
                  kind: Callable[[Any], str] | None = None, min_steps: int | None = None, follow: float = 0.0,
                  novelty: Callable[[Any], Hashable] | None = None, restart: float = 0.5,
                  round_programs: int = 25, targeted: bool = False, max_seconds: float | None = None,
                  max_cpu_seconds: float | None = None, shrink: bool = True, choices: str = "hypothesis",
                  on_step: StepHook | None = None, progress: Callable[[SearchResult], None] | None = None,
                  keep_going: bool = False, lazy: bool = False) -> SearchResult:
    """Hypothesis-driven random search (see the module docstring); never a proof (`complete` is False).

    Each program (one Hypothesis example) starts in an initial state, or, with `novelty`, in a stored state,
    and takes up to `max_steps` steps (a length drawn from `min_steps`..`max_steps` when `min_steps` is given),
    checking every invariant after every step. Each step draws a kind among those enabled (by `weights`, which
    map kinds to relative weights, default 1, 0 switching a kind off), then one of that kind's steps uniformly.
    The kind of an action is `kind(action)` if given, else the model's `kind`, else the first word of
    `describe(action)`.

    - `swarm`: each program also draws, the first time it meets a kind, whether that kind is on for the whole
      program; `stuck` says what a program does in a state where none of its kinds is enabled but others are:
      "end", "continue" with every kind (the default), or "draw" (Hypothesis decides per program).
    - `follow` (0..1): the probability that a step is drawn only among the actions the previous step enabled
      (a message just sent, a follower that can now act), when there are any: requests, their answers and the
      reactions to them are chained far more often than independent draws line them up.
    - `novelty(state) -> key`: an abstraction of a state. Every state whose key no earlier step of the run had
      is stored (with the steps that led to it), and a program starts from a stored state, drawn uniformly,
      with probability `restart`: the search keeps going from what it reached first (restarts from a corpus, as
      coverage-guided fuzzers do). Each program also reports how many new keys it found to Hypothesis's
      `target()`, whose targeting phase then mutates the programs that found most. The programs run in rounds
      of `round_programs`, each a Hypothesis run of its own (stored states join the corpus between rounds; with
      `choices` "random", at once, in one run).
    - `max_seconds`, `max_cpu_seconds`: stop after that long in wall-clock or in this process's CPU seconds
      (`stopped_because` "max-seconds"; CPU seconds make budgets comparable on a shared machine).
    - `choices`: "hypothesis" draws every step's choice from Hypothesis (one integer a step); "random" draws one
      integer a program from Hypothesis and seeds a `random.Random` with it for the program's choices: uniform
      choices (Hypothesis favours zeros and repeated values) at one Hypothesis draw a program, which is what its
      overhead is counted in. Either way a seed gives the same programs; the shrinking below needs neither.
    - `shrink`: the counterexample is cut down by `minimize_run` (re-execution of the concrete run). Hypothesis's
      own shrinker is not used: with restarts a program's meaning depends on what the run stored before it.

    - `on_step(prev, action, state, enabled)`: called after each step a program takes (not while shrinking),
      before the invariants are checked in `state`; `enabled` is every (index, action, next state) enabled in
      `prev`, the list the step was drawn from (weights and swarm aside). What a caller counts with it (kinds
      taken and enabled, budgets spent, states per invariant switched off) costs the search nothing otherwise.
    - `progress(result)`: the running figures (programs, steps as `transitions`, distinct states, longest
      program as `depth`, seconds) at the end of a program, at most every `PROGRESS_SECONDS`.

    - `keep_going`: a violation ends only its program: the invariant it broke is not checked again and the run goes
      on until every invariant broke, the programs are spent or the time is up. Each invariant's first
      violation becomes its counterexample (shrunk against that invariant alone) in `counterexamples`.

    - `lazy`: a step lists `model.actions(state)` and runs `step` only on the action drawn (one that does not apply
      is set aside and another drawn), instead of computing every successor first: for models whose steps are
      dear (the rebalance model runs an assignor). Needs `follow` 0 and no `on_step` (both read every successor).

    Hypothesis's pool of literals from local modules is switched off meanwhile (`_no_local_constants`), so a
    seed gives the same programs whatever else is imported; a run that is not cut by `max_seconds` is
    deterministic for a seed.
    """
    _check_random_options(stuck, choices, follow, restart, lazy, on_step, min_steps, max_steps)
    search = _RandomSearch(model, seed=seed, programs=programs, max_steps=max_steps, weights=weights, swarm=swarm,
                           stuck=stuck, kind=kind, min_steps=min_steps, follow=follow, novelty=novelty,
                           restart=restart, round_programs=round_programs, targeted=targeted, max_seconds=max_seconds,
                           max_cpu_seconds=max_cpu_seconds, shrink=shrink, choices=choices, on_step=on_step,
                           progress=progress, keep_going=keep_going, lazy=lazy)
    search.run()
    return search.outcome()


class _Done(Exception):
    """Ends a Hypothesis run of `random_search`: a violation was found or the time is up (raised again when
    Hypothesis replays the example that raised it)."""


_WORD = (1 << 48) - 1  # each step draws one integer in 0.._WORD and splits it into the step's choices


def _split(u: int, n: int) -> tuple[int, int]:
    """(a choice among n, what is left of the drawn word for the next choice)."""
    return u % n, u // n


def _chance(u: int, p: float) -> tuple[bool, int]:
    """(True with probability `p`, what is left of the drawn word)."""
    r, u = _split(u, 1000)
    return r < round(1000 * p), u


class _Program:
    """One program's own choices: its draw function, the initial state its run starts from, the kinds swarm
    switched on, whether it goes on when none of them is enabled (`stuck`), the actions the previous step enabled
    (`follow`), and how many new novelty keys it found."""

    __slots__ = ("draw", "first", "on", "onward", "before", "fresh")

    def __init__(self, draw: Callable[[], int], onward: bool | None) -> None:
        self.draw = draw
        self.first = 0
        self.on: dict[str, bool] = {}
        self.onward = onward
        self.before: set[Any] | None = None
        self.fresh = 0


def _check_random_options(stuck: str, choices: str, follow: float, restart: float, lazy: bool,
                          on_step: StepHook | None, min_steps: int | None, max_steps: int) -> None:
    """Raises ValueError on options `random_search` cannot run, in one line."""
    if stuck not in ("end", "continue", "draw"):
        raise ValueError(f"stuck must be end, continue or draw, not {stuck!r}")
    if choices not in ("hypothesis", "random"):
        raise ValueError(f"choices must be hypothesis or random, not {choices!r}")
    if not 0.0 <= follow <= 1.0 or not 0.0 <= restart <= 1.0:
        raise ValueError("follow and restart are probabilities between 0 and 1")
    if lazy and (follow or on_step is not None):
        raise ValueError("lazy steps only the action drawn: follow and on_step need every successor")
    if min_steps is not None and not 0 <= min_steps <= max_steps:
        raise ValueError(f"min_steps must be between 0 and max_steps ({max_steps}), not {min_steps}")


class _RandomSearch:
    """One `random_search` run: its settings, what the programs found and stored, and the steps of a program."""

    def __init__(self, model: Model[Any, Any], *, seed: int, programs: int, max_steps: int,
                 weights: Mapping[str, float] | None, swarm: bool, stuck: str, kind: Callable[[Any], str] | None,
                 min_steps: int | None, follow: float, novelty: Callable[[Any], Hashable] | None, restart: float,
                 round_programs: int, targeted: bool, max_seconds: float | None, max_cpu_seconds: float | None,
                 shrink: bool, choices: str, on_step: StepHook | None,
                 progress: Callable[[SearchResult], None] | None, keep_going: bool, lazy: bool) -> None:
        self.model, self.seed, self.asked, self.max_steps, self.min_steps = model, seed, programs, max_steps, min_steps
        self.swarm, self.stuck, self.follow, self.novelty, self.restart = swarm, stuck, follow, novelty, restart
        self.round_programs, self.targeted, self.shrink, self.choices = round_programs, targeted, shrink, choices
        self.max_seconds, self.max_cpu_seconds = max_seconds, max_cpu_seconds
        self.on_step, self.progress, self.keep_going, self.lazy = on_step, progress, keep_going, lazy
        self.start, self.cpu_start = time.perf_counter(), time.process_time()
        self.last_report = self.start
        self.invariants = list(model.invariants())
        self.remaining = list(self.invariants)  # those not broken yet (keep_going removes each as it breaks)
        self.kind_of = kind or _kind_of(model)
        self.successors = successor_fn(model)
        self.weights = dict(weights or {})
        self.scale: dict[str, int] = {}  # kind -> its weight in hundredths (0: off)
        self.inits = list(model.initial_states())
        self.seen: set[int] = set()  # fingerprints of the states programs reached
        self.keys: set[Hashable] = set()  # novelty keys reached
        self.corpus: list[_Node] = []  # the stored states programs restart from
        self.pending: list[_Node] = []  # this round's new corpus entries: used from the next round on
        self.node_initial: dict[int, int] = {}  # corpus node -> the index of the initial state its steps start from
        self.ran = self.steps = self.longest = 0  # programs run, steps taken, the longest run
        self.found: list[tuple[_Node, int, tuple[str, str]]] = []  # (the violating step, initial index, violation)
        self.stopped: list[str] = []
        self.hashable = True  # whether actions hash (`key_of`)

    # ---- the run ----

    def run(self) -> None:
        """The programs, in rounds: with `novelty` each round is a Hypothesis run with a seed derived from `seed`, so
        the corpus grows only between rounds and within one the same draws replay the same program (Hypothesis's
        generation relies on that), while each round starts from everything the earlier ones stored. With
        `choices` "random" a program makes one Hypothesis draw whatever the corpus holds, so the corpus can grow
        at once and one run does."""
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import seed as hseed
        from hypothesis import strategies as st

        self.word = st.integers(0, _WORD)
        phases = [Phase.generate, Phase.target] if self.novelty is not None and self.targeted else [Phase.generate]
        per_round = self.round_programs if self.novelty is not None and self.choices == "hypothesis" else self.asked
        self.seen.update(fingerprint(self.model.encode(s)) for s in self.inits)

        def program(data: Any) -> None:  # a plain function for Hypothesis's `given`
            self.program(data)

        rounds = 0
        with _no_local_constants():
            while self.ran < self.asked and not self.ended():
                before = self.ran
                run = hseed(self.seed * 1_000_003 + rounds if rounds else self.seed)(
                    settings(max_examples=min(per_round, self.asked - self.ran), database=None, deadline=None,
                             suppress_health_check=list(HealthCheck), phases=phases, print_blob=False,
                             report_multiple_bugs=False, derandomize=False)(given(st.data())(program)))
                rounds += 1
                try:
                    run()
                except Exception:
                    # A violation or the time limit ends the run by raising from the program; Hypothesis replays
                    # that example to report it, which raises again (or, drawing nothing, is called flaky).
                    if not self.ended():
                        raise
                self.corpus.extend(self.pending)
                self.pending.clear()
                if self.ran == before:  # Hypothesis ran nothing more (its choices exhausted): stop
                    break

    def ended(self) -> bool:
        return bool(self.stopped or not self.remaining or (self.found and not self.keep_going))

    def check_clock(self) -> None:
        """Ends the run (raises _Done) once `max_seconds` or `max_cpu_seconds` is spent."""
        if ((self.max_seconds is not None and time.perf_counter() - self.start >= self.max_seconds)
                or (self.max_cpu_seconds is not None
                    and time.process_time() - self.cpu_start >= self.max_cpu_seconds)):
            self.stopped.append("max-seconds")
            raise _Done

    def broke(self, node: _Node, first: int, why: tuple[str, str]) -> None:
        """Record a violation; end the run (raise _Done) unless keep_going leaves invariants to check."""
        self.found.append((node, first, why))
        if self.keep_going:  # each other invariant this state breaks too gets it as its own counterexample
            for inv in list(self.remaining):
                other = why[1] if inv.id == why[0] else inv.holds(node.state)
                if other is not None:
                    if inv.id != why[0]:
                        self.found.append((node, first, (inv.id, other)))
                    self.remaining.remove(inv)
        if self.ended():
            raise _Done

    # ---- one program ----

    def program(self, data: Any) -> None:
        """One Hypothesis example: from an initial or a stored state, up to its length in steps, each checked."""
        if self.ended():
            raise _Done  # Hypothesis replays the example that ended the run: end it the same way
        self.check_clock()
        prog = _Program(self.drawer(data), {"end": False, "continue": True}.get(self.stuck))
        node, u = self.first_node(prog)
        self.ran += 1
        if not node.depth and self.breaks(node, prog):
            return
        s = node.state
        for _ in range(self.length(u)):
            options, every = self.enabled(s)
            if not every:
                break
            u = prog.draw()
            if self.follow:
                every, u = self.followed(prog, options, every, u)
            groups = self.switched_on(prog, every) if self.swarm else every
            a, t = self.pick(prog, groups, u, s)
            if t is None:
                break
            prev, s = s, t
            node = _Node(node, a, s)
            if self.stepped(prog, node, prev, options):
                return
        self.longest = max(self.longest, node.depth)
        self.program_done(prog)

    def drawer(self, data: Any) -> Callable[[], int]:
        """The program's source of words: Hypothesis's draws, or (`choices` "random") a `random.Random` seeded by
        one of them."""
        if self.choices == "random":
            rng = random.Random(data.draw(self.word))
            return lambda: rng.getrandbits(48)
        return lambda: data.draw(self.word)

    def first_node(self, prog: _Program) -> tuple[_Node, int]:
        """Where the program starts (an initial state, or with probability `restart` a stored one), and what is
        left of the word drawn for it."""
        first, u = _split(prog.draw(), len(self.inits))
        node = _Node(None, None, self.inits[first])
        go, u = _chance(u, self.restart)
        if self.corpus and go:
            pick, u = _split(u, len(self.corpus))
            node = self.corpus[pick]
            first = self.node_initial[id(node)]
        prog.first = first
        return node, u

    def length(self, u: int) -> int:
        """The program's length in steps: `max_steps`, or drawn from `min_steps`..`max_steps`."""
        if self.min_steps is None:
            return self.max_steps
        return self.min_steps + _split(u, self.max_steps - self.min_steps + 1)[0]

    def weight(self, k: str) -> int:
        w = self.scale.get(k)
        if w is None:
            w = self.scale[k] = max(0, round(100 * self.weights.get(k, 1.0)))
        return w

    def enabled(self, s: Any) -> tuple[Sequence[tuple[int, Any, Any]], dict[str, list[tuple[Any, Any]]]]:
        """(every (index, action, next state) enabled in `s` (`lazy`: next state None, not computed), the actions
        of the kinds with a weight grouped by kind as (action, next state))."""
        if self.lazy:
            options: Sequence[tuple[int, Any, Any]] = [(i, a, None) for i, a in enumerate(self.model.actions(s))]
        else:
            options = self.successors(s)
        every: dict[str, list[tuple[Any, Any]]] = {}
        for _i, a, t in options:
            k = self.kind_of(a)
            if self.weight(k):
                every.setdefault(k, []).append((a, t))
        return options, every

    def key_of(self, a: Any) -> Any:
        """What makes two actions the same for `follow`: the action itself when hashable, else its text."""
        if self.hashable:
            try:
                hash(a)
                return a
            except TypeError:
                self.hashable = False
        return self.model.describe(a)

    def followed(self, prog: _Program, options: Sequence[tuple[int, Any, Any]],
                 every: dict[str, list[tuple[Any, Any]]], u: int) -> tuple[dict[str, list[tuple[Any, Any]]], int]:
        """`follow`: with that probability, only the actions the previous step enabled (when there are any)."""
        now = {self.key_of(a) for _i, a, _t in options}
        go, u = _chance(u, self.follow)
        if prog.before is not None and go:
            new = {}
            for k, v in every.items():
                nv = [o for o in v if self.key_of(o[0]) not in prog.before]
                if nv:
                    new[k] = nv
            if new:
                every = new
        prog.before = now
        return every, u

    def switched_on(self, prog: _Program, every: dict[str, list[tuple[Any, Any]]]
                    ) -> dict[str, list[tuple[Any, Any]]]:
        """Swarm: only the kinds switched on (each drawn the first time the program meets it). When none of them is
        enabled here, the program ends (nothing to draw from) or goes on with every kind (`stuck`; "draw": drawn
        once per program)."""
        on = prog.on
        for k in every:
            if k not in on:
                on[k] = bool(prog.draw() & 1)
        groups = {k: v for k, v in every.items() if on.get(k, True)}
        if groups:
            return groups
        if prog.onward is None:
            prog.onward = bool(prog.draw() & 1)
        return every if prog.onward else {}

    def pick(self, prog: _Program, groups: dict[str, list[tuple[Any, Any]]], u: int, s: Any) -> tuple[Any, Any]:
        """The step drawn: a kind by weight, then one of its actions uniformly: (action, next state), the next state
        None when nothing applies (`lazy`: a drawn action that does not apply is set aside and another drawn)."""
        a = t = None
        while t is None and groups:
            kinds = list(groups)
            ws = [self.weight(k) for k in kinds]
            (pick, u), chosen = _split(u, sum(ws)), 0
            while pick >= ws[chosen]:
                pick -= ws[chosen]
                chosen += 1
            group = groups[kinds[chosen]]
            i = _split(u, len(group))[0]
            a, t = group[i]
            if t is None:  # lazy: only the drawn action is stepped
                t = self.model.step(s, a)
                if t is None:
                    del group[i]
                    if not group:
                        del groups[kinds[chosen]]
                    u = prog.draw()
        return a, t

    def breaks(self, node: _Node, prog: _Program) -> bool:
        """Whether `node`'s state breaks an invariant not broken yet (then recorded: `broke`)."""
        why = violated(self.remaining, node.state)
        if why is None:
            return False
        self.longest = max(self.longest, node.depth)
        self.broke(node, prog.first, why)
        return True

    def stepped(self, prog: _Program, node: _Node, prev: Any, options: Sequence[tuple[int, Any, Any]]) -> bool:
        """After a step into `node`: counted, reported (`on_step`), checked, its novelty key noted; True when the
        program ends there (a violation)."""
        s = node.state
        self.steps += 1
        self.seen.add(fingerprint(self.model.encode(s)))
        if self.on_step is not None:
            self.on_step(prev, node.action, s, options)
        if self.breaks(node, prog):
            return True
        if self.novelty is not None:
            nk = self.novelty(s)
            if nk not in self.keys:
                self.keys.add(nk)
                (self.corpus if self.choices == "random" else self.pending).append(node)
                self.node_initial[id(node)] = prog.first
                prog.fresh += 1
        self.check_clock()
        return False

    def program_done(self, prog: _Program) -> None:
        """A program's end: its new novelty keys told to Hypothesis's targeting, progress when one is due."""
        if self.novelty is not None and self.targeted:
            from hypothesis import target

            target(float(prog.fresh), label="new novelty keys")
        if self.progress is not None:
            clock = time.perf_counter()
            if clock - self.last_report >= PROGRESS_SECONDS:
                self.last_report = clock
                self.progress(SearchResult(False, len(self.seen), self.steps, self.longest, clock - self.start, None,
                                           None, None, programs=self.ran))

    # ---- the result ----

    def outcome(self) -> SearchResult:
        """The result: each violation found as a counterexample (shrunk unless told not to), never a proof."""
        found_all: dict[str, Counterexample] = {}
        for node, first, why in self.found:
            steps, why = self.run_to(node, first, why)
            found_all[why[0]] = Counterexample(why[0], why[1], steps)
        cx = next(iter(found_all.values()), None)
        stop = "violation" if cx else (self.stopped[0] if self.stopped else "programs")
        return SearchResult(False, len(self.seen), self.steps, self.longest, time.perf_counter() - self.start,
                            stop, cx, None, programs=self.ran, counterexamples=found_all if self.keep_going else {})

    def run_to(self, node: _Node, first: int, why: tuple[str, str]
               ) -> tuple[list[tuple[str, Any]], tuple[str, str]]:
        """The run to a violation as [(action text, state)] and the violation it ends in: shrunk by `minimize_run`
        (keep_going: against the invariant it broke alone, so the shrunk run still shows it), or as found."""
        acts = node.actions()
        if self.shrink and acts:
            invariants = [i for i in self.invariants if i.id == why[0]] if self.keep_going else self.invariants
            return minimize_run(self.model, self.inits[first], acts, invariants)
        steps: list[tuple[str, Any]] = [("", self.inits[first])]
        chain, n = [], node
        while n.prev is not None:
            chain.append((self.model.describe(n.action), n.state))
            n = n.prev
        steps += reversed(chain)
        return steps, why
