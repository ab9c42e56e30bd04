"""The exhaustive search over several processes on one machine: `kcheck.model.search.exhaust(..., workers=N)`.

Level-synchronous BFS over N processes forked from the caller (multiprocessing's "fork" context: the model
object is inherited, never pickled). Worker k owns the fingerprints with `fp % N == k`: its own visited set
(`FingerprintSet`) and its own parent/action store (`Store`), where a state's global number is
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

from kcheck.model.diskset import visited_set
from kcheck.model.interface import Model
from kcheck.model.spill import Spool
from kcheck.model.visited import (
    NO_PARENT,
    Counterexample,
    FingerprintSet,
    SearchResult,
    Store,
    frontier_codec,
    keyer,
    replay_path,
    successor_fn,
    violated,
)

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
        self.key = keyer(model, list(model.symmetries()) if opts["symmetry"] else [], lazy=True)
        self.encode = model.encode
        self.succ = successor_fn(model)
        threshold = max(1, opts["spill_threshold"] // n)
        pack, self.unpack, _ = frontier_codec(model, opts["compress"], opts["spill_dir"], threshold, True, 0)
        self.pack: Callable[[Any, bytes], bytes] = pack
        self.spool = lambda ints: Spool(ints, opts["compress"], opts["spill_dir"], threshold)
        budget = opts.get("visited_memory")  # a share of it each: kcheck.model.diskset
        self.seen = visited_set(None if budget is None else budget // n, opts["spill_dir"])
        self.store = Store()
        self.frontier = self.spool(0)
        self.base = 0  # local index of the frontier's first state
        self.limit: int | None = None  # how much of the frontier counts (max-states cut the last level)
        self.transitions = 0
        self.spilled = 0
        self.cands: list[Any] = []  # this level's candidates, per sending worker
        self.out: list[list[tuple[int, int, int, bytes]]] = []  # this level's batches not sent yet, per owner
        self.ends = 0  # end marks received this level

    # ---- commands (each returns the reply to the caller) ----

    def init(self) -> int:
        k, n = self.k, self.n
        for i, s in enumerate(self.model.initial_states()):
            fp, data = self.key(s)
            if fp % n == k and self.seen.add(fp):
                self.store.add(NO_PARENT, i)
                self.frontier.append(self.pack(s, self.encode(s) if data is None else data))
        self.shared[1 + k] = len(self.store)
        return len(self.frontier)

    def expand(self, probe: bool) -> dict[str, Any]:
        """One level: check and expand the frontier, route the successors, then store the new ones (unless
        `probe`: then only count them)."""
        k, n, shared = self.k, self.n, self.shared
        self.cands, self.out, self.ends = [self.spool(3) for _ in range(n)], [[] for _ in range(n)], 0
        violation, halted, checked, transitions = self.route_level(probe)
        self.end_routing()
        if not probe:
            self.transitions += transitions
        shared[1 + n + k] = self.transitions
        reply: dict[str, Any] = {"violation": violation, "halted": halted, "checked": checked,
                                 "transitions": 0 if probe else transitions}
        cut = violation is not None or halted
        if cut:
            reply["unchecked"] = (self.limit if self.limit is not None else len(self.frontier)) - checked
            reply["fresh"] = 0
        elif probe:
            reply["fresh"] = sum(len(c) for c in self.cands)
            reply["unchecked"] = 0
        else:
            reply["fresh"] = reply["unchecked"] = self.store_new()  # stored, checked when expanded
        for c in self.cands:
            self.spilled += c.spilled if cut or probe else 0
            c.close()
        shared[1 + k] = len(self.store)
        reply["stored"] = len(self.store)
        reply["nbytes"] = self.seen.nbytes + self.store.nbytes
        reply["disk"] = getattr(self.seen, "disk_bytes", 0)
        reply["spilled"] = self.spilled + self.frontier.spilled
        return reply

    def route_level(self, probe: bool) -> tuple[tuple[int, str, str] | None, bool, int, int]:
        """Checks the frontier's states in order and routes their successors to their owners (each fingerprint
        once a level; `probe`: without their encodings): (the first violation as (global number, id, message),
        whether the search was halted, states checked, transitions). After a violation anywhere (the shared
        flag) the rest of the frontier is only checked. The hot loop: every name it uses per successor is a
        local."""
        k, n, shared, seen, key, succ, unpack = self.k, self.n, self.shared, self.seen, self.key, self.succ, self.unpack
        invariants, inboxes, out, base = self.invariants, self.inboxes, self.out, self.base
        mine = self.cands[k].append
        item = self.routed_item(probe)
        sent_add = FingerprintSet().add
        end = self.limit if self.limit is not None else len(self.frontier)
        only_check, checked, transitions = False, 0, 0
        for i, (packed,) in enumerate(self.frontier):
            if i >= end:
                break
            if not i & 63:
                flag = self.halt_flag(transitions)
                if flag == _VIOLATION:
                    only_check = True
                elif flag != _RUN:
                    return None, True, checked, transitions
            s = unpack(packed)
            found = violated(invariants, s)
            checked += 1
            gid = (base + i) * n + k
            if found is not None:
                shared[0] = _VIOLATION
                return (gid, *found), False, checked, transitions
            if only_check:
                continue
            for ai, _, t in succ(s):
                transitions += 1
                fp, data = key(t)
                if not sent_add(fp):
                    continue
                d = fp % n
                if d == k:
                    if fp not in seen:
                        mine(item(t, data), fp, gid, ai)
                    continue
                box = out[d]
                box.append((fp, gid, ai, item(t, data)))
                if len(box) >= BATCH:
                    inboxes[d].put((k, marshal.dumps(box)))
                    out[d] = []
        return None, False, checked, transitions

    def routed_item(self, probe: bool) -> Callable[[Any, bytes | None], bytes]:
        """(successor, its encoding or None) -> what travels to its owner: the packed state, or nothing (`probe`,
        which only counts)."""
        if probe:
            return lambda t, data: b""
        pack, encode = self.pack, self.encode
        return lambda t, data: pack(t, encode(t) if data is None else data)

    def halt_flag(self, transitions: int) -> int:
        """Every 64 states: the shared halt flag (raised here when the clock ran out); unless halted, the batches
        other workers sent so far are taken and the transitions shown to the caller."""
        shared = self.shared
        flag = shared[0]
        if flag == _RUN and self.max_seconds is not None and time.perf_counter() - self.start >= self.max_seconds:
            shared[0] = flag = _TIME
        if flag in (_RUN, _VIOLATION):
            if self.n > 1:
                self.receive(False)
            shared[1 + self.n + self.k] = self.transitions + transitions
        return flag

    def receive(self, block: bool) -> None:
        """Takes the candidates other workers sent (blocking: until every one sent its end mark), dropping the
        fingerprints stored at an earlier level."""
        seen, cands = self.seen, self.cands
        while self.ends < self.n - 1:
            try:
                src, payload = self.inbox.get(block)
            except Empty:
                return
            if payload is None:
                self.ends += 1
                continue
            append = cands[src].append
            for fp, gid, ai, data in marshal.loads(payload):
                if fp not in seen:
                    append(data, fp, gid, ai)

    def end_routing(self) -> None:
        """Sends the last batches and an end mark to every other worker, then takes everything sent here."""
        k, inboxes, out = self.k, self.inboxes, self.out
        for d in range(self.n):
            if d != k:
                if out[d]:
                    inboxes[d].put((k, marshal.dumps(out[d])))
                inboxes[d].put((k, None))
        self.receive(True)

    def store_new(self) -> int:
        """Stores this level's new states as the next frontier: candidates of worker 0 first, then 1, ...; the first
        of equal fingerprints wins. Returns how many."""
        nxt = self.spool(0)
        seen_add, store_add, append = self.seen.add, self.store.add, nxt.append
        base = len(self.store)
        for c in self.cands:
            for fp, gid, ai, data in c:
                if seen_add(fp):
                    store_add(gid, ai)
                    append(data)
        self.spilled += self.frontier.spilled + sum(c.spilled for c in self.cands)
        self.frontier.close()
        self.frontier, self.base, self.limit = nxt, base, None
        return len(nxt)

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
            found = violated(self.invariants, self.unpack(packed))
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
                     stop: Callable[[], str | None] | None, visited_memory: int | None = None) -> SearchResult:
    """`exhaust` with `workers` processes (see the module docstring); called by `kcheck.model.search.exhaust`."""
    if mp.current_process().daemon:
        raise RuntimeError("exhaust(workers > 1) cannot start its processes from a daemonic process (a "
                           "multiprocessing Pool worker, for one): run it with workers=1 there")
    opts = dict(max_seconds=max_seconds, symmetry=symmetry, compress=compress, spill_dir=spill_dir,
                spill_threshold=spill_threshold, visited_memory=visited_memory)
    run = _Coordinator(model, workers, opts, max_states, max_depth, progress, stop)
    try:
        return run.levels()
    finally:
        run.close(failed=sys.exc_info()[0] is not None)


class _Coordinator:
    """The calling process of `parallel_exhaust`: it starts the workers, asks each for a level at a time, applies
    the caps between levels, and rebuilds a counterexample by asking owners for parents."""

    def __init__(self, model: Model[Any, Any], n: int, opts: dict[str, Any], max_states: int | None,
                 max_depth: int | None, progress: Callable[[SearchResult], None] | None,
                 stop: Callable[[], str | None] | None) -> None:
        self.model, self.n, self.max_states, self.max_depth = model, n, max_states, max_depth
        self.max_seconds, self.progress, self.stop = opts["max_seconds"], progress, stop
        self.start = self.last_report = time.perf_counter()
        ctx = mp.get_context("fork")
        self.shared = ctx.RawArray("q", 1 + 2 * n)  # halt flag, stored states per worker, transitions per worker
        self.inboxes = [ctx.Queue() for _ in range(n)]
        self.pipes = [ctx.Pipe() for _ in range(n)]
        self.procs = [ctx.Process(target=_serve, name=f"kcheck-search-{k}", daemon=True,
                                  args=(k, n, model, opts, self.inboxes, self.pipes[k][1], self.shared, self.start))
                      for k in range(n)]
        self.conns = [p[0] for p in self.pipes]
        self.result = SearchResult(False, 0, 0, 0, 0.0, None, None, None, workers=n)
        self.halt_word: str | None = None

    def levels(self) -> SearchResult:
        """The search, level by level, to its result."""
        n, result = self.n, self.result
        for p in self.procs:
            p.start()
        result.frontier_peak = sum(self.ask_all(("init",)))
        level, stored, transitions = 0, sum(self.shared[1:1 + n]), 0
        while True:
            probe = self.max_depth is not None and level >= self.max_depth
            replies = self.ask_all(("expand", probe))
            # A progress report during the level wrote the live count (levels done + this one so far) into
            # `result`: the exact count is kept apart and written back.
            transitions += sum(r["transitions"] for r in replies)
            result.transitions = transitions
            done = self.level_end(replies, level, stored, probe)
            if done is not None:
                return done
            fresh = sum(r["fresh"] for r in replies)
            stored += fresh
            level += 1
            result.depth = level
            result.frontier_peak = max(result.frontier_peak, fresh)

    def level_end(self, replies: list[dict[str, Any]], level: int, stored: int, probe: bool) -> SearchResult | None:
        """The result when the level just expanded ends the search (a violation, a halt, the depth bound, nothing
        new, the state cap), else None."""
        found = next((r["violation"] for r in replies if r["violation"] is not None), None)
        if found is not None:
            return self.violation(found, level, replies)
        if any(r["halted"] for r in replies):
            word = self.halt_word if self.shared[0] == _STOP and self.halt_word else "max-seconds"
            return self.finish(word, replies, sum(r["stored"] - r["unchecked"] for r in replies))
        fresh = sum(r["fresh"] for r in replies)
        if probe:
            return self.finish("max-depth" if fresh else None, replies)
        if fresh == 0:
            return self.finish(None, replies)
        if self.max_states is not None and stored + fresh > self.max_states:
            return self.capped(replies, level, stored)
        return None

    def capped(self, replies: list[dict[str, Any]], level: int, stored: int) -> SearchResult:
        """`max_states` reached within the level just stored: its new states are kept in worker order up to the
        cap, then checked (they will not be expanded)."""
        assert self.max_states is not None
        room = self.max_states - stored
        quotas = []
        for r in replies:
            quotas.append(min(room, r["fresh"]))
            room -= quotas[-1]
        self.ask_all(*(("truncate", q) for q in quotas))
        found = next((c for c in self.ask_all(("check",)) if c is not None), None)
        for r, q in zip(replies, quotas, strict=True):
            r["stored"] -= r["fresh"] - q
        if found is not None:
            return self.violation(found, level + 1, replies)
        self.result.depth = level
        return self.finish("max-states", replies)

    def violation(self, found: tuple[int, str, str], depth: int, replies: list[dict[str, Any]]) -> SearchResult:
        """The result for a violation of state `found[0]` (global number), at BFS level `depth`: its path walked
        back through the owners of its ancestors, re-executed in this process."""
        gid, invariant, message = found
        path: list[int] = []
        while True:
            parent, action = self.ask(gid % self.n, "parent", gid // self.n)
            if parent == NO_PARENT:
                break
            path.append(action)
            gid = parent
        path.reverse()
        self.result.depth = depth
        self.result.counterexample = Counterexample(invariant, message, replay_path(self.model, action, path))
        return self.finish("violation", replies)

    def finish(self, stopped: str | None, replies: list[dict[str, Any]], states: int | None = None) -> SearchResult:
        result = self.result
        result.complete = stopped is None
        result.stopped_because = stopped
        stored = sum(r["stored"] for r in replies)
        result.states = stored if states is None else states
        result.bytes_per_state = sum(r["nbytes"] for r in replies) / stored if stored else None
        result.spilled_bytes = sum(r["spilled"] for r in replies)
        result.visited_disk_bytes = sum(r.get("disk", 0) for r in replies)
        result.collision_probability = min(1.0, result.states * result.states / 2.0 ** 65)
        result.seconds = time.perf_counter() - self.start
        return result

    # ---- talking to the workers ----

    def poll(self) -> None:
        """While the workers run (about every 0.2 s): the clock and `stop`, which halt them through the shared flag,
        and a progress report when one is due."""
        now, shared = time.perf_counter(), self.shared
        if shared[0] == _RUN:
            if self.max_seconds is not None and now - self.start >= self.max_seconds:
                shared[0] = _TIME
            elif self.stop is not None:
                word = self.stop()
                if word:
                    self.halt_word = word
                    shared[0] = _STOP
        if self.progress is not None and now - self.last_report >= PROGRESS_SECONDS:
            self.last_report = now
            n, result = self.n, self.result
            result.states = sum(shared[1:1 + n])
            result.transitions = sum(shared[1 + n:])
            result.seconds = now - self.start
            self.progress(result)

    def ask(self, k: int, *cmd: Any) -> Any:
        self.conns[k].send(cmd)
        return self.gather([k])[0]

    def ask_all(self, *cmds: tuple[Any, ...]) -> list[Any]:
        """Sends each worker its command (one for all, or one each) and waits for every reply."""
        for k in range(self.n):
            self.conns[k].send(cmds[k] if len(cmds) == self.n else cmds[0])
        return self.gather(list(range(self.n)))

    def gather(self, ks: list[int]) -> list[Any]:
        """The replies of workers `ks`, polling meanwhile; a worker's failure or end raises RuntimeError."""
        replies: dict[int, Any] = {}
        pending: dict[Any, int] = {self.conns[k]: k for k in ks}
        while pending:
            for c in wait(list(pending), timeout=0.2):
                k = pending.pop(c)
                try:
                    tag, value = self.conns[k].recv()
                except EOFError:
                    raise RuntimeError(f"search worker {k} ended unexpectedly (exit code "
                                       f"{self.procs[k].exitcode})") from None
                if tag == "error":
                    raise RuntimeError(f"search worker {k} failed:\n{value}")
                replies[k] = value
            for k in pending.values():
                if not self.procs[k].is_alive():
                    raise RuntimeError(f"search worker {k} ended unexpectedly (exit code {self.procs[k].exitcode})")
            self.poll()
        return [replies[k] for k in ks]

    def close(self, failed: bool) -> None:
        """Ends every worker: a clean end asks each to exit; after an error a worker may wait on a peer forever, so
        it is terminated."""
        if not failed:
            for c in self.conns:
                try:
                    c.send(("exit",))
                except OSError:
                    pass
        for p in self.procs:
            if p.pid is not None:
                if not failed:
                    p.join(timeout=5)
                if p.is_alive():
                    p.terminate()
                p.join()
        for q in self.inboxes:
            q.close()
            q.cancel_join_thread()
        for a, b in self.pipes:
            a.close()
            b.close()
