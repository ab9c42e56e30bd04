"""What every exhaustive search of `kcheck.model.search` shares, in one process, in forked workers
(`kcheck.model.parallel`) or on Spark (`kcheck.spark_check.exhaust`): the visited set as 64-bit fingerprints of
canonical encodings (`fingerprint`, `FingerprintSet`, `keyer`), each stored state's parent and action in flat arrays
(`Store`), the path back to a state rebuilt by re-execution (`replay_path`), how a model's successors and frontier
states are computed and packed (`successor_fn`, `frontier_codec`), the first invariant a state breaks (`violated`),
and the result types (`SearchResult`, `Counterexample`). kcheck.model.search's docstring says why each is so.
"""

from __future__ import annotations

import gc
import hashlib
import pickle
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kcheck.model.interface import Model, StateInvariant
from kcheck.model.spill import Objects, Spool

_EMPTY = 0  # a fingerprint of 0 is stored as 1, so 0 marks an empty slot
NO_PARENT = 0xFFFFFFFF  # the parent of an initial state in `Store` (its action index is the initial state's)


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
    visited_disk_bytes: int = 0  # exhaust with visited_memory: the visited fingerprints on disk at the end


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

    @classmethod
    def from_table(cls, table: array) -> FingerprintSet:
        """The set whose table `table` is (`table` of another set, as a checkpoint saved it)."""
        out = cls(1)
        out._table, out._mask, out._limit = table, len(table) - 1, int(len(table) * 0.7)
        out.size = len(table) - table.tolist().count(_EMPTY)
        return out

    @property
    def table(self) -> array:
        """The open-addressing table itself (read only: a checkpoint writes it)."""
        return self._table

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


class Store:
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
        while self.parent[n] != NO_PARENT:
            out.append(self.action[n])
            n = self.parent[n]
        out.reverse()
        return self.action[n], out


def keyer(model: Model[Any, Any], syms: Sequence[Callable[[Any], Any]], lazy: bool = False
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
def rarer_collections() -> Iterator[None]:
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


def successor_fn(model: Model[Any, Any]) -> Callable[[Any], Sequence[tuple[int, Any, Any]]]:
    """state -> [(index in actions(state), action, next state)] for the actions that apply: the model's own
    `successors` (an optional extension) when it has one, else `actions` + `step`."""
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


def frontier_codec(model: Model[Any, Any], compress: bool, spill_dir: str | None, threshold: int,
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


def violated(invariants: Sequence[StateInvariant[Any]], s: Any) -> tuple[str, str] | None:
    """(id, message) of the first of `invariants` that `s` breaks, or None."""
    for inv in invariants:
        why = inv.holds(s)
        if why is not None:
            return inv.id, why
    return None


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
