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
  youngest generation 100,000 allocations wide meanwhile (`_rarer_collections`): it holds no object per stored
  state, so collecting every 700 allocations finds nothing and cost about a fifth of a run.
- Fingerprint collisions: two different states with the same 64-bit fingerprint make the search skip the
  second one. With n states the probability of any collision is about n^2 / 2^65: about 2.7e-4 at 10^8 states
  (3e-8 at 10^6). TLC makes the same trade (it reports the same estimate after a run); a clean run is a proof up
  to that probability. `SearchResult.collision_probability` gives the figure for the run.
- `workers=N` (N > 1) runs the same BFS over N forked processes (`kcheck.model.parallel`): each owns the
  fingerprints with `fp % N == k`, level by level; a complete run stores the same states and counts the same
  transitions as one process, and a counterexample is still a shortest one.
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

import gc
import hashlib
import os
import pickle
import time
from array import array
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kcheck.model.interface import Model, StateInvariant
from kcheck.model.spill import DEFAULT_THRESHOLD, Objects, Spool

_EMPTY = 0  # a fingerprint of 0 is stored as 1, so 0 marks an empty slot
PROGRESS_SECONDS = 3.0  # random_search: the least time between two `progress` calls
# random_search's per-step hook: (state before, action, state after, every (index, action, state) enabled before)
StepHook = Callable[[Any, Any, Any, Sequence[tuple[int, Any, Any]]], None]
_NO_PARENT = 0xFFFFFFFF
ORDERS = ("bfs", "dfs", "novelty")  # exhaust's orders of expansion


@dataclass
class Counterexample:
    invariant: str
    message: str
    steps: list[tuple[str, Any]]  # (action text, state), the initial state first with ""


@dataclass
class SearchResult:
    complete: bool  # every reachable state was visited (no cap, no depth bound, no violation cut the search)
    states: int  # distinct states stored (up to symmetry when symmetry is on)
    transitions: int  # steps computed that applied (to new states or to states already stored)
    depth: int  # the largest BFS level a stored state is at (random search: the longest program)
    seconds: float
    stopped_because: str | None  # None when complete; else "max-states", "max-depth", "max-seconds",
    # "violation" (exhaust), a word of the `stop` callback, or "programs" (random search: never a proof)
    counterexample: Counterexample | None
    bytes_per_state: float | None  # the visited store's bytes per stored state (exhaust only)
    frontier_peak: int = 0  # the most states the frontier held at once (exhaust only)
    collision_probability: float = 0.0  # upper estimate of a fingerprint collision in this run (exhaust only)
    programs: int = 0  # random search: programs run (shrinking not counted)
    workers: int = 1  # processes the exhaustive search ran in
    spilled_bytes: int = 0  # frontier bytes written to spill_dir (exhaust only)
    order: str = "bfs"  # exhaust: which stored state is expanded next (ORDERS)
    # keep_going: the first counterexample of each invariant that broke, by id, in the order found (the first is
    # `counterexample`); `covered` is True when the search still went everywhere it would have gone without them
    counterexamples: dict[str, Counterexample] = field(default_factory=dict)
    covered: bool = False


def fingerprint(data: bytes) -> int:
    """The 64-bit fingerprint of an encoding (never 0)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little") or 1


class FingerprintSet:
    """A set of nonzero 64-bit ints in one flat array (open addressing, linear probing, load factor <= 0.7)."""

    def __init__(self, capacity: int = 1 << 12) -> None:
        cap = 1
        while cap < capacity:
            cap <<= 1
        self._table = array("Q", bytes(8 * cap))
        self._mask = cap - 1
        self._limit = int(cap * 0.7)
        self.size = 0

    def add(self, fp: int) -> bool:
        """Adds `fp`; True if it was not there."""
        table, mask = self._table, self._mask
        i = fp & mask
        v = table[i]
        while v:  # 0 (_EMPTY) ends the probe
            if v == fp:
                return False
            i = (i + 1) & mask
            v = table[i]
        table[i] = fp
        self.size += 1
        if self.size > self._limit:
            self._grow()
        return True

    def __contains__(self, fp: int) -> bool:
        table, mask = self._table, self._mask
        i = fp & mask
        while True:
            v = table[i]
            if v == _EMPTY:
                return False
            if v == fp:
                return True
            i = (i + 1) & mask

    def __len__(self) -> int:
        return self.size

    def _grow(self) -> None:
        old = self._table
        cap = 2 * len(old)
        self._table = table = array("Q", bytes(8 * cap))
        self._mask = mask = cap - 1
        self._limit = int(cap * 0.7)
        for v in old:
            if v != _EMPTY:
                i = v & mask
                while table[i] != _EMPTY:
                    i = (i + 1) & mask
                table[i] = v

    @property
    def nbytes(self) -> int:
        return len(self._table) * self._table.itemsize


class _Store:
    """Every stored state: its parent's number and the index of the action that reached it (flat arrays)."""

    def __init__(self) -> None:
        self.parent = array("I")
        self.action = array("H")

    def add(self, parent: int, action: int) -> int:
        if action > 0xFFFF and self.action.typecode == "H":
            self.action = array("I", self.action)
        self.parent.append(parent)
        self.action.append(action)
        return len(self.parent) - 1

    def __len__(self) -> int:
        return len(self.parent)

    @property
    def nbytes(self) -> int:
        return len(self.parent) * self.parent.itemsize + len(self.action) * self.action.itemsize

    def path(self, n: int) -> tuple[int, list[int]]:
        """(initial state index, action indexes from it to state `n`)."""
        out: list[int] = []
        while self.parent[n] != _NO_PARENT:
            out.append(self.action[n])
            n = self.parent[n]
        out.reverse()
        return self.action[n], out


def _keyer(model: Model[Any, Any], syms: Sequence[Callable[[Any], Any]], lazy: bool = False
           ) -> Callable[[Any], tuple[int, bytes | None]]:
    """state -> (its canonical fingerprint, its own encoding). With `lazy` and a model that has `fingerprint`, the
    encoding is None: the caller builds it with `encode` only for a state it stores (most steps reach a state
    already stored, and then only the fingerprint is needed)."""
    encode = model.encode
    blake2b, from_bytes = hashlib.blake2b, int.from_bytes
    own = getattr(model, "fingerprint", None)
    if own is not None:
        if syms:
            many = getattr(model, "fingerprints", None)
            if many is not None:
                def canon_fp(s: Any) -> int:
                    return min(many(s))
            else:
                def canon_fp(s: Any) -> int:
                    return min(own(s), *(own(g(s)) for g in syms))
        else:
            canon_fp = own
        if lazy:
            def lazy_key(s: Any) -> tuple[int, None]:
                return canon_fp(s), None

            lazy_key.fp_only = canon_fp  # type: ignore[attr-defined]  # exhaust's loop calls it directly
            return lazy_key
        return lambda s: (canon_fp(s), encode(s))

    def plain(s: Any) -> tuple[int, bytes]:
        data = encode(s)
        return from_bytes(blake2b(data, digest_size=8).digest(), "little") or 1, data

    if not syms:
        return plain
    encodings = getattr(model, "encodings", None)
    if encodings is not None:
        def fast(s: Any) -> tuple[int, bytes]:
            data = encodings(s)
            return min(map(fingerprint, data)), data[0]

        return fast

    def canon(s: Any) -> tuple[int, bytes]:
        data = encode(s)
        return min(fingerprint(data), *(fingerprint(encode(g(s))) for g in syms)), data

    return canon


@contextmanager
def _rarer_collections() -> Iterator[None]:
    """Python's cyclic garbage collector runs its youngest generation every 700 net allocations; a search allocates
    a few hundred short-lived tuples and model objects per state, freed by reference counting (immutable values
    make no cycles), and holds no object per stored state (flat arrays), so those collections find nothing and
    cost about a fifth of the run. They run every 100,000 allocations meanwhile (cycles are still collected)."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], 100_000), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def _successor_fn(model: Model[Any, Any]) -> Callable[[Any], Sequence[tuple[int, Any, Any]]]:
    """The model's `successors` (C1's optional extension), else one built from `actions` and `step`."""
    succ = getattr(model, "successors", None)
    if succ is not None:
        return succ
    actions, step = model.actions, model.step

    def generic(s: Any) -> list[tuple[int, Any, Any]]:
        out = []
        for ai, a in enumerate(actions(s)):
            t = step(s, a)
            if t is not None:
                out.append((ai, a, t))
        return out

    return generic


def _frontier_codec(model: Model[Any, Any], compress: bool, spill_dir: str | None, threshold: int,
                    need_bytes: bool = False, ints: int = 1
                    ) -> tuple[Callable[[Any, bytes], Any], Callable[[Any], Any], Callable[[], Any]]:
    """(pack(state, encoding) -> frontier item, unpack(item) -> state, a new empty frontier). States travel as
    their encodings when the model has `decode`; else as pickles when they must be bytes (spilling, processes),
    else as the objects themselves."""
    decode = getattr(model, "decode", None)
    if decode is None and spill_dir is None and not need_bytes:
        return (lambda s, data: s), (lambda s: s), Objects
    if decode is None:
        return (lambda s, data: pickle.dumps(s, 5)), pickle.loads, lambda: Spool(ints, compress, spill_dir, threshold)
    return (lambda s, data: data), decode, lambda: Spool(ints, compress, spill_dir, threshold)


def _violated(invariants: Sequence[StateInvariant[Any]], s: Any) -> tuple[str, str] | None:
    for inv in invariants:
        why = inv.holds(s)
        if why is not None:
            return inv.id, why
    return None


def _search_setup(model: Model[Any, Any], symmetry: bool
                  ) -> tuple[list[StateInvariant[Any]], Callable[[Any], tuple[int, bytes | None]],
                             Callable[[Any], Sequence[tuple[int, Any, Any]]], FingerprintSet, _Store]:
    """What a one-process exhaust starts from, in every order: the invariants (a list of its own, which keep_going
    shortens), the key (lazy: encodings built only for the states stored), the successor function, an empty
    visited set and an empty store."""
    return (list(model.invariants()), _keyer(model, list(model.symmetries()) if symmetry else [], lazy=True),
            _successor_fn(model), FingerprintSet(), _Store())


def _store_initial(model: Model[Any, Any], key: Callable[[Any], tuple[int, bytes | None]], seen: FingerprintSet,
                   store: _Store, invariants: Sequence[StateInvariant[Any]]
                   ) -> Iterator[tuple[int, Any, bytes, tuple[str, str] | None]]:
    """Each distinct initial state, stored: (its number, the state, its encoding, the invariant it breaks or None)."""
    for i, s in enumerate(model.initial_states()):
        fp, data = key(s)
        if seen.add(fp):
            yield store.add(_NO_PARENT, i), s, model.encode(s) if data is None else data, _violated(invariants, s)


def replay_path(model: Model[Any, Any], initial: int, actions: Sequence[int]) -> list[tuple[str, Any]]:
    """Re-execute a path given as the initial state's index and action indexes: [(action text, state)], the
    initial state first with "". Raises ValueError if a step does not apply (the model is not deterministic)."""
    s = list(model.initial_states())[initial]
    out: list[tuple[str, Any]] = [("", s)]
    for n, ai in enumerate(actions, 1):
        acts = list(model.actions(s))
        nxt = model.step(s, acts[ai]) if ai < len(acts) else None
        if nxt is None:
            raise ValueError(f"step {n} of a stored path does not apply on re-execution: "
                             f"{model.name}'s actions() or step() is not deterministic")
        out.append((model.describe(acts[ai]), nxt))
        s = nxt
    return out


@_rarer_collections()
def exhaust(model: Model[Any, Any], max_states: int | None = None, max_depth: int | None = None,
            max_seconds: float | None = None, symmetry: bool = True,
            progress: Callable[[SearchResult], None] | None = None, compress: bool = True, *,
            workers: int = 1, spill_dir: str | None = None, stop: Callable[[], str | None] | None = None,
            spill_threshold: int = DEFAULT_THRESHOLD, order: str = "bfs",
            novelty: Callable[[Any], Hashable] | None = None, keep_going: bool = False) -> SearchResult:
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
    """
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
        if order == "novelty":
            novelty = novelty or getattr(model, "novelty", None)
            if novelty is None:
                raise ValueError(f"order novelty needs a novelty key: {model.name} has no novelty(state) and none "
                                 "was given")
        return _ordered_exhaust(model, order, novelty if order == "novelty" else None, max_states, max_seconds,
                                symmetry, progress, compress, stop)
    if spill_dir is not None and not os.path.isdir(spill_dir):
        raise ValueError(f"spill_dir {spill_dir} is not a directory")
    if workers > 1:
        from kcheck.model.parallel import parallel_exhaust

        return parallel_exhaust(model, workers=workers, max_states=max_states, max_depth=max_depth,
                                max_seconds=max_seconds, symmetry=symmetry, progress=progress, compress=compress,
                                spill_dir=spill_dir, spill_threshold=spill_threshold, stop=stop)
    start = time.perf_counter()
    perf_counter = time.perf_counter
    invariants, key, succ, seen, store = _search_setup(model, symmetry)
    encode = model.encode
    pack, unpack, new_frontier = _frontier_codec(model, compress, spill_dir, spill_threshold)
    result = SearchResult(False, 0, 0, 0, 0.0, None, None, None)
    counts = [0, 0]  # transitions, bytes spilled by frontiers already dropped

    def finish(stopped: str | None) -> SearchResult:
        result.states = len(store.parent)
        result.transitions = counts[0]
        if result.counterexamples:  # keep_going: ran to its end (covered), or stopped by a cap or every invariant
            result.covered, stopped = stopped is None, stopped or "violation"
        result.complete = stopped is None
        result.stopped_because = stopped
        result.seconds = time.perf_counter() - start
        n = result.states
        result.bytes_per_state = (seen.nbytes + store.nbytes) / n if n else None
        result.collision_probability = min(1.0, n * n / 2.0 ** 65)
        result.spilled_bytes = counts[1] + frontier.spilled + (nxt.spilled if nxt is not None else 0)
        frontier.close()
        if nxt is not None:
            nxt.close()
        return result

    def counterexample(n: int, found: tuple[str, str]) -> Counterexample:
        initial, path = store.path(n)
        return Counterexample(found[0], found[1], replay_path(model, initial, path))

    def broke(n: int, s: Any, found: tuple[str, str]) -> bool:
        """Record state `n`'s violation; True when the search ends here (always, unless keep_going)."""
        if not keep_going:
            result.counterexample = counterexample(n, found)
            return True
        # every invariant not yet broken that `s` breaks gets `n` as its counterexample, and is not checked again
        for inv in list(invariants):
            why = found[1] if inv.id == found[0] else inv.holds(s)
            if why is not None:
                result.counterexamples[inv.id] = counterexample(n, (inv.id, why))
                invariants.remove(inv)
        result.counterexample = next(iter(result.counterexamples.values()))
        return not invariants

    frontier = new_frontier()
    nxt = None
    for n, s, own, found in _store_initial(model, key, seen, store, invariants):
        if found is not None and broke(n, s, found):
            return finish("violation")
        frontier.append(pack(s, own), n)
    result.frontier_peak = len(frontier)
    level = 0
    last_report = start
    expanded = 0
    transitions = 0
    seen_add, store_add, parents = seen.add, store.add, store.parent
    fp_only = getattr(key, "fp_only", None)
    violation = getattr(model, "first_violation", None) if not keep_going else None  # keep_going drops invariants
    while len(frontier):
        if max_depth is not None and level >= max_depth:
            # Anything new past the bound? Look without storing: the answer decides `complete`.
            for _, packed in frontier:
                for _, _, t in succ(unpack(packed)):
                    if key(t)[0] not in seen:
                        return finish("max-depth")
            break
        nxt = new_frontier()
        append = nxt.append
        for n, packed in frontier:
            expanded += 1
            if not expanded & 63:
                now = perf_counter()
                counts[0] = transitions
                if max_seconds is not None and now - start >= max_seconds:
                    return finish("max-seconds")
                if stop is not None:
                    word = stop()
                    if word:
                        return finish(word)
                if progress is not None and now - last_report >= 3.0:
                    last_report = now
                    result.states, result.seconds, result.transitions = len(parents), now - start, transitions
                    progress(result)
            s = unpack(packed)
            for ai, _, t in succ(s):
                transitions += 1
                if fp_only is not None:  # the model's own fingerprint: the encoding is built for new states only
                    fp, data = fp_only(t), None
                else:
                    fp, data = key(t)
                if max_states is not None and len(parents) >= max_states:
                    if fp not in seen:
                        counts[0] = transitions
                        return finish("max-states")
                    continue
                if not seen_add(fp):
                    continue
                m = store_add(n, ai)
                found = violation(t) if violation is not None else _violated(invariants, t)
                if found is not None and broke(m, t, found):
                    counts[0] = transitions
                    result.depth = level + 1
                    return finish("violation")
                append(pack(t, encode(t) if data is None else data), m)
        counts[0] = transitions
        counts[1] += frontier.spilled
        frontier.close()
        frontier, nxt = nxt, None
        if len(frontier):
            level += 1
            result.depth = level
            result.frontier_peak = max(result.frontier_peak, len(frontier))
    return finish(None)


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

    def close(self) -> None:
        for segments in self._tiers:
            for segment in segments:
                segment.close()
        self._tiers, self.count = [], 0


def _ordered_exhaust(model: Model[Any, Any], order: str, novelty: Callable[[Any], Hashable] | None,
                     max_states: int | None, max_seconds: float | None, symmetry: bool,
                     progress: Callable[[SearchResult], None] | None, compress: bool,
                     stop: Callable[[], str | None] | None) -> SearchResult:
    """`exhaust` in order "dfs" or "novelty" (see the module docstring): the same visited set, store, invariant
    checks and traces as the BFS; only which stored state is expanded next differs."""
    start = time.perf_counter()
    perf_counter = time.perf_counter
    invariants, key, succ, seen, store = _search_setup(model, symmetry)
    encode = model.encode
    decode = getattr(model, "decode", None)
    result = SearchResult(False, 0, 0, 0, 0.0, None, None, None, order=order)
    stack: list[tuple[int, int, Any]] = []  # dfs: (state number, depth, packed state)
    tiers = _Tiers((lambda: Spool(2, compress)) if decode is not None else _Listed)
    counts: dict[Hashable, int] = {}  # novelty key -> states stored with it so far

    def put(t: Any, data: bytes | None, n: int, depth: int) -> None:
        packed = (encode(t) if data is None else data) if decode is not None else t
        if novelty is None:
            stack.append((n, depth, packed))
            return
        k = novelty(t)
        c = counts.get(k, 0)
        counts[k] = c + 1
        # Tier 0: the first state of its key; then tier b holds the states that found 2^(b-1)..2^b-1 before them.
        tiers.append(c.bit_length(), packed, n, depth)

    def finish(stopped: str | None, transitions: int) -> SearchResult:
        n = result.states = len(store.parent)
        result.transitions = transitions
        result.complete = stopped is None
        result.stopped_because = stopped
        result.seconds = time.perf_counter() - start
        result.bytes_per_state = (seen.nbytes + store.nbytes) / n if n else None
        result.collision_probability = min(1.0, n * n / 2.0 ** 65)
        tiers.close()
        stack.clear()
        return result

    def violation(n: int, found: tuple[str, str], transitions: int) -> SearchResult:
        initial, path = store.path(n)
        result.counterexample = Counterexample(found[0], found[1], replay_path(model, initial, path))
        return finish("violation", transitions)

    for n, s, own, found in _store_initial(model, key, seen, store, invariants):
        if found is not None:
            return violation(n, found, 0)
        put(s, own, n, 0)
    stack.reverse()  # the first initial state is expanded first
    last_report = start
    expanded = transitions = 0
    seen_add, store_add, parents = seen.add, store.add, store.parent
    while True:
        if novelty is None:
            if not stack:
                break
            batch: Any = (stack.pop(),)
        else:
            batch = tiers.take()
            if batch is None:
                break
        for n, depth, packed in batch:
            expanded += 1
            if not expanded & 63:
                now = perf_counter()
                if max_seconds is not None and now - start >= max_seconds:
                    return finish("max-seconds", transitions)
                if stop is not None:
                    word = stop()
                    if word:
                        return finish(word, transitions)
                if progress is not None and now - last_report >= 3.0:
                    last_report = now
                    result.states, result.seconds, result.transitions = len(parents), now - start, transitions
                    progress(result)
            s = decode(packed) if decode is not None else packed
            below = len(stack)
            for ai, _, t in succ(s):
                transitions += 1
                fp, data = key(t)
                if max_states is not None and len(parents) >= max_states:
                    if fp not in seen:
                        return finish("max-states", transitions)
                    continue
                if not seen_add(fp):
                    continue
                m = store_add(n, ai)
                if depth >= result.depth:
                    result.depth = depth + 1
                found = _violated(invariants, t)
                if found is not None:
                    return violation(m, found, transitions)
                put(t, data, m, depth + 1)
            if novelty is None:
                stack[below:] = stack[below:][::-1]  # the first successor on top: expanded first
            result.frontier_peak = max(result.frontier_peak, len(stack) + tiers.count)
        if novelty is not None:
            batch.close()
    return finish(None, transitions)


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
    programs everywhere. Hypothesis's internal `providers._get_local_constants`; skipped if it is not there."""
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
    providers._get_local_constants = lambda: blank if blank is not None else empty
    try:
        yield
    finally:
        providers._get_local_constants = real


def _successors(model: Model[Any, Any]) -> Callable[[Any], list[tuple[int, Any, Any]]]:
    """state -> [(index in actions(state), action, next state)] for the actions that apply: the model's own
    `successors` (C1) when it has one, else actions() + step()."""
    own = getattr(model, "successors", None)
    if own is not None:
        return own

    def generic(s: Any) -> list[tuple[int, Any, Any]]:
        out = []
        for i, a in enumerate(model.actions(s)):
            t = model.step(s, a)
            if t is not None:
                out.append((i, a, t))
        return out

    return generic


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
            found = _violated(invs, s)
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
    import random

    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st
    from hypothesis import target as htarget

    start, cpu_start = time.perf_counter(), time.process_time()
    invariants = list(model.invariants())
    remaining = list(invariants)  # those not broken yet (keep_going removes each as it breaks)
    kind_of = kind or _kind_of(model)

    def out_of_time() -> bool:
        return ((max_seconds is not None and time.perf_counter() - start >= max_seconds)
                or (max_cpu_seconds is not None and time.process_time() - cpu_start >= max_cpu_seconds))

    successors = _successors(model)
    weights = dict(weights or {})
    inits = list(model.initial_states())
    seen: set[int] = set()
    keys: set[Hashable] = set()
    corpus: list[_Node] = []
    stats = {"programs": 0, "steps": 0, "longest": 0}
    found: list[tuple[_Node, int, tuple[str, str]]] = []  # (the violating step, initial index, violation)
    stopped: list[str] = []
    scale: dict[str, int] = {}

    class _Done(Exception):
        """Ends the Hypothesis run: a violation was found or the time is up (raised again on its replay)."""

    def ended() -> bool:
        return bool(stopped or not remaining or (found and not keep_going))

    def broke(node: _Node, first: int, why: tuple[str, str]) -> None:
        """Record a violation; end the run (raise _Done) unless keep_going leaves invariants to check."""
        found.append((node, first, why))
        if keep_going:  # each other invariant this state breaks too gets it as its own counterexample
            for inv in list(remaining):
                other = why[1] if inv.id == why[0] else inv.holds(node.state)
                if other is not None:
                    if inv.id != why[0]:
                        found.append((node, first, (inv.id, other)))
                    remaining.remove(inv)
        if ended():
            raise _Done

    def weight(k: str) -> int:
        w = scale.get(k)
        if w is None:
            w = scale[k] = max(0, round(100 * weights.get(k, 1.0)))
        return w

    # One draw per step (and one per program) from a single wide integer strategy, split into the step's
    # choices: Hypothesis's cost is per draw, and a fixed range keeps every draw's constraints the same.
    word = st.integers(0, (1 << 48) - 1)

    def split(u: int, n: int) -> tuple[int, int]:
        """(a choice among n, what is left of the drawn word for the next choice)."""
        return u % n, u // n

    def chance(u: int, p: float) -> tuple[bool, int]:
        r, u = split(u, 1000)
        return r < round(1000 * p), u

    hashable = [True]

    def key_of(a: Any) -> Any:
        """What makes two actions the same for `follow`: the action itself when hashable, else its text."""
        if hashable[0]:
            try:
                hash(a)
                return a
            except TypeError:
                hashable[0] = False
        return model.describe(a)

    phases = [Phase.generate, Phase.target] if novelty is not None and targeted else [Phase.generate]
    pending: list[_Node] = []  # this round's new corpus entries: used from the next round on

    def program(data: Any) -> None:
        if ended():
            raise _Done  # Hypothesis replays the example that ended the run: end it the same way
        if out_of_time():
            stopped.append("max-seconds")
            raise _Done
        if choices == "random":
            rng = random.Random(data.draw(word))
            draw: Callable[[], int] = lambda: rng.getrandbits(48)  # noqa: E731
        else:
            draw = lambda: data.draw(word)  # noqa: E731
        u = draw()
        first, u = split(u, len(inits))
        node = _Node(None, None, inits[first])
        go, u = chance(u, restart)
        if corpus and go:
            pick, u = split(u, len(corpus))
            node = corpus[pick]
            first = node_initial[id(node)]
        stats["programs"] += 1
        if not node.depth:
            why = _violated(remaining, node.state)
            if why is not None:
                broke(node, first, why)
                return
        length = max_steps
        if min_steps is not None:
            extra, u = split(u, max_steps - min_steps + 1)
            length = min_steps + extra
        on: dict[str, bool] = {}
        onward: bool | None = {"end": False, "continue": True}.get(stuck)
        before: set[Any] | None = None
        fresh = 0
        s = node.state
        for _ in range(length):
            every: dict[str, list[tuple[Any, Any]]] = {}
            options = successors(s) if not lazy else [(i, a, None) for i, a in enumerate(model.actions(s))]
            for _i, a, t in options:
                k = kind_of(a)
                if weight(k):
                    every.setdefault(k, []).append((a, t))
            if not every:
                break
            u = draw()
            if follow:
                now = {key_of(a) for _i, a, _t in options}
                go, u = chance(u, follow)
                if before is not None and go:
                    new = {}
                    for k, v in every.items():
                        nv = [o for o in v if key_of(o[0]) not in before]
                        if nv:
                            new[k] = nv
                    if new:
                        every = new
                before = now
            if swarm:
                for k in every:
                    if k not in on:
                        on[k] = bool(draw() & 1)
            # Swarm: only the kinds switched on. When none of them is enabled here, the program ends or goes on
            # with every kind (`stuck`; "draw": Hypothesis draws which, the first time, per program).
            groups = {k: v for k, v in every.items() if on.get(k, True)} if swarm else every
            if not groups:
                if onward is None:
                    onward = bool(draw() & 1)
                if not onward:
                    break
                groups = every
            t = None
            while t is None and groups:
                kinds = list(groups)
                ws = [weight(k) for k in kinds]
                (pick, u), chosen = split(u, sum(ws)), 0
                while pick >= ws[chosen]:
                    pick -= ws[chosen]
                    chosen += 1
                group = groups[kinds[chosen]]
                i = split(u, len(group))[0]
                a, t = group[i]
                if t is None:  # lazy: only the drawn action is stepped; one that does not apply is set aside
                    t = model.step(s, a)
                    if t is None:
                        del group[i]
                        if not group:
                            del groups[kinds[chosen]]
                        u = draw()
            if t is None:
                break
            prev, s = s, t
            node = _Node(node, a, s)
            stats["steps"] += 1
            seen.add(fingerprint(model.encode(s)))
            if on_step is not None:
                on_step(prev, a, s, options)
            why = _violated(remaining, s)
            if why is not None:
                stats["longest"] = max(stats["longest"], node.depth)
                broke(node, first, why)
                return
            if novelty is not None:
                nk = novelty(s)
                if nk not in keys:
                    keys.add(nk)
                    (corpus if choices == "random" else pending).append(node)
                    node_initial[id(node)] = first
                    fresh += 1
            if out_of_time():
                stopped.append("max-seconds")
                raise _Done
        stats["longest"] = max(stats["longest"], node.depth)
        if novelty is not None and targeted:
            htarget(float(fresh), label="new novelty keys")
        if progress is not None:
            clock = time.perf_counter()
            if clock - last_report[0] >= PROGRESS_SECONDS:
                last_report[0] = clock
                progress(SearchResult(False, len(seen), stats["steps"], stats["longest"], clock - start, None, None,
                                      None, programs=stats["programs"]))

    node_initial: dict[int, int] = {}  # corpus node -> the index of the initial state its steps start from
    last_report = [start]
    seen.update(fingerprint(model.encode(s)) for s in inits)
    # With `novelty`, the programs run in rounds, each a Hypothesis run with a seed derived from `seed`: the
    # corpus grows only between rounds, so within one the same draws replay the same program (Hypothesis's
    # generation relies on that), while each round starts from everything the earlier ones stored.
    # With `choices` "random" a program makes one Hypothesis draw whatever the corpus holds, so the corpus can
    # grow at once and one run does.
    per_round = round_programs if novelty is not None and choices == "hypothesis" else programs
    rounds = 0
    with _no_local_constants():
        while stats["programs"] < programs and not ended():
            asked = min(per_round, programs - stats["programs"])
            before = stats["programs"]
            run = hseed(seed * 1_000_003 + rounds if rounds else seed)(
                settings(max_examples=asked, database=None, deadline=None, suppress_health_check=list(HealthCheck),
                         phases=phases, print_blob=False, report_multiple_bugs=False, derandomize=False)(
                    given(st.data())(program)))
            rounds += 1
            try:
                run()
            except Exception:
                # A violation or the time limit ends the run by raising from the program; Hypothesis replays
                # that example to report it, which raises again (or, drawing nothing, is called flaky).
                if not ended():
                    raise
            corpus.extend(pending)
            pending.clear()
            if stats["programs"] == before:  # Hypothesis ran nothing more (its choices exhausted): stop
                break
    found_all: dict[str, Counterexample] = {}
    for node, first, why in found:
        acts = node.actions()
        if shrink and acts:  # keep_going: against the invariant it broke alone, so the shrunk run still shows it
            steps, why = minimize_run(model, inits[first], acts,
                                      [i for i in invariants if i.id == why[0]] if keep_going else invariants)
        else:
            steps, n = [("", inits[first])], node
            chain = []
            while n.prev is not None:
                chain.append((model.describe(n.action), n.state))
                n = n.prev
            steps += reversed(chain)
        found_all[why[0]] = Counterexample(why[0], why[1], steps)
    cx = next(iter(found_all.values()), None)
    stop = "violation" if cx else (stopped[0] if stopped else "programs")
    return SearchResult(False, len(seen), stats["steps"], stats["longest"], time.perf_counter() - start,
                        stop, cx, None, programs=stats["programs"], counterexamples=found_all if keep_going else {})
