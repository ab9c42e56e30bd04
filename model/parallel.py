"""The exhaustive search over several processes on one machine: `kcheck.model.search.exhaust(..., workers=N)`.

Level-synchronous BFS over N processes forked from the caller (multiprocessing's "fork" context: the model
object is inherited, never pickled). Worker k owns the fingerprints with `fp % N == k`: its own visited set
(`FingerprintSet`) and its own parent/action store (`_Store`), where a state's global number is
`local index * N + k`, so a parent pointer names its owner and stays 4 bytes. One level:

1. Each worker expands its share of the frontier. For every successor it computes the canonical fingerprint
   (symmetry included), drops the ones it already routed this level, and routes (fingerprint, parent number,
   action index, encoding) to the owner, in batches through the owner's inbox queue (its own it keeps). An
   owner drops, as they arrive, the candidates whose fingerprint it already stored at an earlier level.
2. After every worker sent its last batch (the barrier: each waits for an end mark from every other), each
   owner stores the new states in a fixed order: the candidates from worker 0 first, then worker 1, ..., each
   in its sender's order, the first of equal fingerprints winning. The order does not depend on timing, so
   the stored parents, and the counterexample rebuilt from them, are the same in every run with N workers.
3. Invariants are checked by the owner when it takes a state out of its frontier to expand it (the state is
   decoded then anyway, so checking it costs no second decode). When a worker finds a violation it raises a
   shared flag; every worker then stops expanding but goes on checking its frontier up to its own first
   violation, and the caller takes the violation of the lowest-numbered worker: the result is deterministic,
   and the state is at the shallowest level with a violation, so the counterexample is a shortest one. Its
   path is rebuilt by asking owners for (parent, action) up the chain; `replay_path` re-executes it in the
   caller.

Caps behave as with one process: `max_states` (the last level's new states are stored in worker order up to the
cap, then checked), `max_depth` (the level past the bound is generated but not stored; any new state there makes
it "max-depth"), `max_seconds` (each worker looks at the clock every 64 expansions) and `stop` (called by the
caller about every 0.2 s while the workers run). A run stopped by time or `stop` reports as `states` the states
whose invariants were checked (the stored ones minus the part of the last level not reached).

States travel as their encodings when the model has `decode`, else as pickles. A worker that raises makes the
search raise `RuntimeError` with its traceback; every worker is ended (by its own process object) when the
search returns or raises.
"""

from __future__ import annotations

import marshal
import multiprocessing as mp
import signal
import sys
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from queue import Empty
from typing import Any

from kcheck.model.interface import Model
from kcheck.model.search import (
    _NO_PARENT,
    Counterexample,
    FingerprintSet,
    SearchResult,
    _frontier_codec,
    _keyer,
    _Store,
    _successor_fn,
    _violated,
    replay_path,
)
from kcheck.model.spill import Spool

BATCH = 512  # candidates per message between workers
_RUN, _TIME, _STOP, _VIOLATION = 0, 1, 2, 3  # the shared halt flag


class _Worker:
    """Worker k's shard: its visited set, store, frontier, and this level's candidates (see the module docstring)."""

    def __init__(self, k: int, n: int, model: Model[Any, Any], opts: dict[str, Any], inboxes: list[Any],
                 shared: Any, start: float) -> None:
        self.k, self.n, self.model = k, n, model
        self.inbox, self.inboxes = inboxes[k], inboxes
        self.shared, self.start = shared, start
        self.max_seconds = opts["max_seconds"]
        self.invariants = list(model.invariants())
        self.key = _keyer(model, list(model.symmetries()) if opts["symmetry"] else [], lazy=True)
        self.encode = model.encode
        self.succ = _successor_fn(model)
        threshold = max(1, opts["spill_threshold"] // n)
        pack, self.unpack, _ = _frontier_codec(model, opts["compress"], opts["spill_dir"], threshold, True, 0)
        self.pack: Callable[[Any, bytes], bytes] = pack
        self.spool = lambda ints: Spool(ints, opts["compress"], opts["spill_dir"], threshold)
        self.seen = FingerprintSet()
        self.store = _Store()
        self.frontier = self.spool(0)
        self.base = 0  # local index of the frontier's first state
        self.limit: int | None = None  # how much of the frontier counts (max-states cut the last level)
        self.transitions = 0
        self.spilled = 0

    # ---- commands (each returns the reply to the caller) ----

    def init(self) -> int:
        k, n = self.k, self.n
        for i, s in enumerate(self.model.initial_states()):
            fp, data = self.key(s)
            if fp % n == k and self.seen.add(fp):
                self.store.add(_NO_PARENT, i)
                self.frontier.append(self.pack(s, self.encode(s) if data is None else data))
        self.shared[1 + k] = len(self.store)
        return len(self.frontier)

    def expand(self, probe: bool) -> dict[str, Any]:
        """One level: check and expand the frontier, route the successors, then store the new ones (unless
        `probe`: then only count them)."""
        k, n, shared = self.k, self.n, self.shared
        seen, key, succ, pack, unpack, encode = self.seen, self.key, self.succ, self.pack, self.unpack, self.encode
        invariants, inboxes = self.invariants, self.inboxes
        cands = [self.spool(3) for _ in range(n)]
        mine = cands[k].append
        out: list[list[tuple[int, int, int, bytes]]] = [[] for _ in range(n)]
        sent = FingerprintSet()
        sent_add = sent.add
        ends = [0]
        violation: tuple[int, str, str] | None = None
        halted = False
        only_check = False
        checked = 0
        transitions = 0
        max_seconds, start, perf_counter = self.max_seconds, self.start, time.perf_counter
        base, stride = self.base, n

        def receive(block: bool) -> None:
            while ends[0] < n - 1:
                try:
                    src, payload = self.inbox.get(block)
                except Empty:
                    return
                if payload is None:
                    ends[0] += 1
                    continue
                append = cands[src].append
                for fp, gid, ai, data in marshal.loads(payload):
                    if fp not in seen:
                        append(data, fp, gid, ai)

        for i, (packed,) in enumerate(self.frontier):
            if self.limit is not None and i >= self.limit:
                break
            if not i & 63:
                flag = shared[0]
                if flag == _VIOLATION:
                    only_check = True
                elif flag != _RUN:
                    halted = True
                    break
                elif max_seconds is not None and perf_counter() - start >= max_seconds:
                    shared[0] = _TIME
                    halted = True
                    break
                if n > 1:
                    receive(False)
                shared[1 + n + k] = self.transitions + transitions
            s = unpack(packed)
            found = _violated(invariants, s)
            checked += 1
            if found is not None:
                violation = ((base + i) * stride + k, *found)
                shared[0] = _VIOLATION
                break
            if only_check:
                continue
            gid = (base + i) * stride + k
            for ai, _, t in succ(s):
                transitions += 1
                fp, data = key(t)
                if not sent_add(fp):
                    continue
                d = fp % n
                if probe:
                    data = b""
                elif data is None:
                    data = encode(t)
                if d == k:
                    if fp not in seen:
                        mine(pack(t, data) if not probe else data, fp, gid, ai)
                    continue
                box = out[d]
                box.append((fp, gid, ai, pack(t, data) if not probe else data))
                if len(box) >= BATCH:
                    inboxes[d].put((k, marshal.dumps(box)))
                    out[d] = []
        for d in range(n):
            if d != k:
                if out[d]:
                    inboxes[d].put((k, marshal.dumps(out[d])))
                inboxes[d].put((k, None))
        receive(True)
        if not probe:
            self.transitions += transitions
        shared[1 + n + k] = self.transitions
        reply: dict[str, Any] = {"violation": violation, "halted": halted, "checked": checked,
                                 "transitions": 0 if probe else transitions}
        if violation is not None or halted:
            reply["unchecked"] = (self.limit if self.limit is not None else len(self.frontier)) - checked
            reply["fresh"] = 0
        elif probe:
            reply["fresh"] = sum(len(c) for c in cands)
            reply["unchecked"] = 0
        else:
            # Store the new states: candidates of worker 0 first, then 1, ...; the first of equal fingerprints wins.
            nxt = self.spool(0)
            seen_add, store_add, append = seen.add, self.store.add, nxt.append
            base = len(self.store)
            for c in cands:
                for fp, gid, ai, data in c:
                    if seen_add(fp):
                        store_add(gid, ai)
                        append(data)
            self.spilled += self.frontier.spilled + sum(c.spilled for c in cands)
            self.frontier.close()
            self.frontier, self.base, self.limit = nxt, base, None
            reply["fresh"] = reply["unchecked"] = len(nxt)  # stored, checked when expanded
        for c in cands:
            self.spilled += c.spilled if violation is not None or halted or probe else 0
            c.close()
        shared[1 + k] = len(self.store)
        reply["stored"] = len(self.store)
        reply["nbytes"] = self.seen.nbytes + self.store.nbytes
        reply["spilled"] = self.spilled + self.frontier.spilled
        return reply

    def truncate(self, quota: int) -> int:
        """Keeps only the first `quota` states of the last level (max-states)."""
        keep = self.base + quota
        del self.store.parent[keep:]
        del self.store.action[keep:]
        self.limit = quota
        self.shared[1 + self.k] = len(self.store)
        return len(self.store)

    def check(self) -> tuple[int, str, str] | None:
        """Checks the frontier's states (the last level, not expanded) up to the first violation."""
        for i, (packed,) in enumerate(self.frontier):
            if self.limit is not None and i >= self.limit:
                break
            found = _violated(self.invariants, self.unpack(packed))
            if found is not None:
                return ((self.base + i) * self.n + self.k, *found)
        return None

    def parent(self, local: int) -> tuple[int, int]:
        return self.store.parent[local], self.store.action[local]


def _serve(k: int, n: int, model: Model[Any, Any], opts: dict[str, Any], inboxes: list[Any], conn: Connection,
           shared: Any, start: float) -> None:
    # Interrupts are the caller's: it ends the search and terminates the workers. A worker forked with the
    # caller's handlers would raise in the middle of a level on SIGTERM, or report Ctrl-C as its own error.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    try:
        w = _Worker(k, n, model, opts, inboxes, shared, start)
        while True:
            cmd, *args = conn.recv()
            if cmd == "exit":
                break
            conn.send(("ok", getattr(w, cmd)(*args)))
    except BaseException:  # noqa: BLE001 - everything goes back to the caller, which raises it
        try:
            conn.send(("error", traceback.format_exc()))
        except OSError:
            pass


PROGRESS_SECONDS = 3.0  # between two progress reports


def parallel_exhaust(model: Model[Any, Any], *, workers: int, max_states: int | None, max_depth: int | None,
                     max_seconds: float | None, symmetry: bool, progress: Callable[[SearchResult], None] | None,
                     compress: bool, spill_dir: str | None, spill_threshold: int,
                     stop: Callable[[], str | None] | None) -> SearchResult:
    """`exhaust` with `workers` processes (see the module docstring); called by `kcheck.model.search.exhaust`."""
    n = workers
    if mp.current_process().daemon:
        raise RuntimeError("exhaust(workers > 1) cannot start its processes from a daemonic process (a "
                           "multiprocessing Pool worker, for one): run it with workers=1 there")
    start = time.perf_counter()
    ctx = mp.get_context("fork")
    shared = ctx.RawArray("q", 1 + 2 * n)  # halt flag, stored states per worker, transitions per worker
    inboxes = [ctx.Queue() for _ in range(n)]
    pipes = [ctx.Pipe() for _ in range(n)]
    opts = dict(max_seconds=max_seconds, symmetry=symmetry, compress=compress, spill_dir=spill_dir,
                spill_threshold=spill_threshold)
    procs = [ctx.Process(target=_serve, args=(k, n, model, opts, inboxes, pipes[k][1], shared, start),
                         name=f"kcheck-search-{k}", daemon=True) for k in range(n)]
    conns = [p[0] for p in pipes]
    result = SearchResult(False, 0, 0, 0, 0.0, None, None, None, workers=n)
    halt_word: list[str | None] = [None]
    last_report = [start]

    def poll() -> None:
        now = time.perf_counter()
        if shared[0] == _RUN:
            if max_seconds is not None and now - start >= max_seconds:
                shared[0] = _TIME
            elif stop is not None:
                word = stop()
                if word:
                    halt_word[0] = word
                    shared[0] = _STOP
        if progress is not None and now - last_report[0] >= PROGRESS_SECONDS:
            last_report[0] = now
            result.states = sum(shared[1:1 + n])
            result.transitions = sum(shared[1 + n:])
            result.seconds = now - start
            progress(result)

    def ask(k: int, *cmd: Any) -> Any:
        conns[k].send(cmd)
        return gather([k])[0]

    def ask_all(*cmds: tuple[Any, ...]) -> list[Any]:
        for k in range(n):
            conns[k].send(cmds[k] if len(cmds) == n else cmds[0])
        return gather(list(range(n)))

    def gather(ks: list[int]) -> list[Any]:
        replies: dict[int, Any] = {}
        pending: dict[Any, int] = {conns[k]: k for k in ks}
        while pending:
            for c in wait(list(pending), timeout=0.2):
                k = pending.pop(c)
                try:
                    tag, value = conns[k].recv()
                except EOFError:
                    raise RuntimeError(f"search worker {k} ended unexpectedly (exit code {procs[k].exitcode})") \
                        from None
                if tag == "error":
                    raise RuntimeError(f"search worker {k} failed:\n{value}")
                replies[k] = value
            for k in pending.values():
                if not procs[k].is_alive():
                    raise RuntimeError(f"search worker {k} ended unexpectedly (exit code {procs[k].exitcode})")
            poll()
        return [replies[k] for k in ks]

    def finish(stopped: str | None, replies: list[dict[str, Any]] | None, states: int | None = None) -> SearchResult:
        result.complete = stopped is None
        result.stopped_because = stopped
        if replies is not None:
            stored = sum(r["stored"] for r in replies)
            result.states = stored if states is None else states
            result.bytes_per_state = sum(r["nbytes"] for r in replies) / stored if stored else None
            result.spilled_bytes = sum(r["spilled"] for r in replies)
        result.collision_probability = min(1.0, result.states * result.states / 2.0 ** 65)
        result.seconds = time.perf_counter() - start
        return result

    def counterexample(gid: int, invariant: str, message: str) -> Counterexample:
        path: list[int] = []
        while True:
            parent, action = ask(gid % n, "parent", gid // n)
            if parent == _NO_PARENT:
                break
            path.append(action)
            gid = parent
        path.reverse()
        return Counterexample(invariant, message, replay_path(model, action, path))

    try:
        for p in procs:
            p.start()
        result.frontier_peak = sum(ask_all(("init",)))
        level = 0
        stored = sum(shared[1:1 + n])
        transitions = 0
        while True:
            probe = max_depth is not None and level >= max_depth
            replies = ask_all(("expand", probe))
            # A progress report during the level wrote the live count (levels done + this one so far) into
            # `result`: the exact count is kept apart and written back.
            transitions += sum(r["transitions"] for r in replies)
            result.transitions = transitions
            found = next((r["violation"] for r in replies if r["violation"] is not None), None)
            if found is not None:
                result.depth = level
                result.counterexample = counterexample(*found)
                return finish("violation", replies)
            if any(r["halted"] for r in replies):
                word = halt_word[0] if shared[0] == _STOP and halt_word[0] else "max-seconds"
                stored = sum(r["stored"] for r in replies)
                return finish(word, replies, stored - sum(r["unchecked"] for r in replies))
            fresh = sum(r["fresh"] for r in replies)
            if probe:
                return finish("max-depth" if fresh else None, replies)
            if fresh == 0:
                return finish(None, replies)
            if max_states is not None and stored + fresh > max_states:
                room = max_states - stored
                quotas = []
                for r in replies:
                    quotas.append(min(room, r["fresh"]))
                    room -= quotas[-1]
                ask_all(*(("truncate", q) for q in quotas))
                checks = ask_all(("check",))
                found = next((c for c in checks if c is not None), None)
                for r, q in zip(replies, quotas, strict=True):
                    r["stored"] -= r["fresh"] - q
                if found is not None:
                    result.depth = level + 1
                    result.counterexample = counterexample(*found)
                    return finish("violation", replies)
                result.depth = level
                return finish("max-states", replies)
            stored += fresh
            level += 1
            result.depth = level
            result.frontier_peak = max(result.frontier_peak, fresh)
    finally:
        # A clean end asks each worker to exit; after an error a worker may wait on a peer forever: terminate.
        failed = sys.exc_info()[0] is not None
        if not failed:
            for c in conns:
                try:
                    c.send(("exit",))
                except OSError:
                    pass
        for p in procs:
            if p.pid is not None:
                if not failed:
                    p.join(timeout=5)
                if p.is_alive():
                    p.terminate()
                p.join()
        for q in inboxes:
            q.close()
            q.cancel_join_thread()
        for a, b in pipes:
            a.close()
            b.close()
