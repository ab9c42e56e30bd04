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
   caller. Its `transitions` are those of the levels before the violation's (how far the others got into that
   level depends on timing), so the whole result is the same in every run with N workers. (`states` and
   `transitions` of a violation then differ from one process's, which checks a state when it stores it: the
   level, verdict and trace do not.)

Checkpoints (`checkpoint`, kcheck.model.checkpoint), taken inside a level: a level can take an hour at 10^8
states, so waiting for its end would make the interval and Ctrl-C as slow. When one is due the caller sets a
pause word; each worker stops at its next look at the flags (every 64 expansions), sends its last batches and its
end mark, and takes everything sent to it, as at a level's end. The workers' stops are then a cut: every state of
a frontier before its worker's stop is checked and expanded, each of its successors routed and waiting with its
owner among this level's candidates, in its sender's order; no state after the stop was touched. Each worker
writes its share into `gen-NNNNNN.partial/worker-K/` at once (`visited.bin`, and `visited-disk.bin` for a disk
set; `parent.bin`, `action.bin`; `frontier.bin`, its frontier, and `cands.bin`, its candidates from each sender in
turn, both as their spools' compressed chunks, copied without decoding a record (`Spool.dump`); the counters say
where in the frontier it stopped), the caller writes the counters and the manifest, and the level goes on.
Resumed, each worker goes on from its stop with its candidates: stored at the level's end in the same fixed order,
they get the same numbers and parents, so counts, depth and counterexample are an uncut run's. (The fingerprints a
worker routed before the stop are not saved: one routed again arrives a second time and loses to the first, as equal
fingerprints do.) A halt (time, `stop`, a signal) saves the same cut before the search returns; `max_states` saves
the level routed and not yet stored (how many new states it holds is counted first), so a run with a higher cap goes
on from there. A checkpoint of N workers resumes with N: each holds the share of the states it owns.

Caps behave as with one process: `max_states` (the last level's new states are stored in worker order up to the cap,
then checked), `max_depth` (the level past the bound is generated but not stored; any new state there makes it
"max-depth"), `max_seconds` (each worker looks at the clock every 64 expansions) and `stop` (called by the caller about
every 0.2 s while the workers run). A run stopped by time or `stop` reports as `states` the states whose invariants
were checked (the stored ones minus the part of the last level not reached).

States travel as their encodings when the model has `decode`, else as pickles. A worker that raises makes the
search raise `RuntimeError` with its traceback; every worker is ended (by its own process object) when the
search returns or raises, and ends by itself within a second when the caller is gone (killed). With a checkpoint
the workers ignore SIGTERM (sent to the whole process group, say): the caller saves, then ends them.
"""

from __future__ import annotations

import marshal
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from multiprocessing.connection import Connection, wait
from queue import Empty
from typing import Any

from kcheck.model.checkpoint import (
    Checkpointer,
    check_workers,
    fsync_dir,
    read_array,
    write_file,
)
from kcheck.model.diskset import DiskFingerprintSet, restore_visited, visited_set
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
_PAUSE = 4  # what a worker sees when a checkpoint is asked for (its own slot: it never hides a violation)


class _Worker:
    """Worker k's shard: its visited set, store, frontier, and this level's candidates (see the module docstring)."""

    def __init__(self, k: int, n: int, model: Model[Any, Any], opts: dict[str, Any], inboxes: list[Any],
                 shared: Any, start: float) -> None:
        self.k, self.n, self.model = k, n, model
        self.inbox, self.inboxes = inboxes[k], inboxes
        self.shared, self.start = shared, start
        self.parent_pid = os.getppid()  # the caller: gone (killed), this worker ends too
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
        self.seen = visited_set(None if budget is None else budget // n, opts["visited_dir"])
        self.store = Store()
        self.frontier = self.spool(0)
        self.base = 0  # local index of the frontier's first state
        self.limit: int | None = None  # how much of the frontier counts (max-states cut the last level)
        self.position = 0  # the frontier's states checked and expanded this level (where a cut is)
        self.transitions = 0
        self.spilled = 0
        self.cands: list[Any] = []  # this level's candidates, per sending worker
        self.sent = FingerprintSet()  # the fingerprints this worker routed this level
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

    def expand(self, probe: bool, fresh: bool) -> dict[str, Any]:
        """Checks and expands the frontier from where this level stopped (`fresh`: a new level), routing the
        successors to their owners (`probe`: without their encodings), until the level is routed or this worker
        stops (a violation, a halt, a pause). Every worker then takes what was sent to it: together the stops are
        a cut, every successor of the states before it with its owner, none of the states after."""
        k, n, shared = self.k, self.n, self.shared
        if fresh:
            self.cands, self.sent, self.position = [self.spool(3) for _ in range(n)], FingerprintSet(), 0
        self.out, self.ends = [[] for _ in range(n)], 0
        violation, cut, transitions = self.route_level(probe)
        self.end_routing()
        if not probe:
            self.transitions += transitions
        shared[1 + n + k] = self.transitions
        reply: dict[str, Any] = {"violation": violation, "cut": cut, "transitions": self.transitions}
        if violation is not None or cut:
            reply["unchecked"], reply["fresh"] = self.end() - self.position, 0
        else:  # at most this many new states (a fingerprint may have come from two senders); probe: whether any
            reply["fresh"], reply["unchecked"] = sum(len(c) for c in self.cands), 0
        return self.figures(reply)

    def figures(self, reply: dict[str, Any]) -> dict[str, Any]:
        self.shared[1 + self.k] = len(self.store)
        reply["stored"] = len(self.store)
        reply["nbytes"] = self.seen.nbytes + self.store.nbytes
        reply["disk"] = getattr(self.seen, "disk_bytes", 0)
        reply["spilled"] = self.spilled + self.frontier.spilled + sum(c.spilled for c in self.cands)
        return reply

    def end(self) -> int:
        return self.limit if self.limit is not None else len(self.frontier)

    def route_level(self, probe: bool) -> tuple[tuple[int, str, str] | None, str | None, int]:
        """Checks the frontier's states in order from `position` and routes their successors to their owners (each
        fingerprint once a level): (the first violation as (global number, id, message), "halted" or "paused" when
        the search stopped this worker before the level's end, transitions). After a violation anywhere (the
        shared flag) the rest of the frontier is only checked. The hot loop: every name it uses per successor is a
        local."""
        k, n, shared, seen, key, succ, unpack = self.k, self.n, self.shared, self.seen, self.key, self.succ, self.unpack
        invariants, inboxes, out, base = self.invariants, self.inboxes, self.out, self.base
        mine = self.cands[k].append
        item = self.routed_item(probe)
        sent_add = self.sent.add
        start, end = self.position, self.end()
        only_check, transitions = False, 0
        for i, (packed,) in enumerate(self.frontier):
            if i < start:
                continue
            if i >= end:
                break
            if not (i - start) & 63:
                flag = self.halt_flag(transitions)
                if flag == _VIOLATION:
                    only_check = True
                elif flag != _RUN:
                    self.position = i
                    return None, "paused" if flag == _PAUSE else "halted", transitions
            s = unpack(packed)
            found = violated(invariants, s)
            gid = (base + i) * n + k
            if found is not None:
                shared[0] = _VIOLATION
                self.position = i
                return (gid, *found), None, transitions
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
        self.position = end
        return None, None, transitions

    def routed_item(self, probe: bool) -> Callable[[Any, bytes | None], bytes]:
        """(successor, its encoding or None) -> what travels to its owner: the packed state, or nothing (`probe`,
        which only counts)."""
        if probe:
            return lambda t, data: b""
        pack, encode = self.pack, self.encode
        return lambda t, data: pack(t, encode(t) if data is None else data)

    def halt_flag(self, transitions: int) -> int:
        """Every 64 states: the shared halt flag (raised here when the clock ran out), or _PAUSE when a checkpoint
        is asked for; unless halted, the batches other workers sent so far are taken and the transitions shown to
        the caller."""
        shared = self.shared
        flag = shared[0]
        if flag == _RUN and self.max_seconds is not None and time.perf_counter() - self.start >= self.max_seconds:
            shared[0] = flag = _TIME
        if flag == _RUN and shared[1 + 2 * self.n]:
            return _PAUSE
        if flag in (_RUN, _VIOLATION):
            self.orphaned()
            if self.n > 1:
                self.receive(False)
            shared[1 + self.n + self.k] = self.transitions + transitions
        return flag

    def orphaned(self) -> None:
        """Ends this worker at once when the caller is gone (killed: no one will ask for the rest)."""
        if os.getppid() != self.parent_pid:
            os._exit(3)

    def receive(self, block: bool) -> None:
        """Takes the candidates other workers sent (blocking: until every one sent its end mark), dropping the
        fingerprints stored at an earlier level."""
        seen, cands = self.seen, self.cands
        while self.ends < self.n - 1:
            try:
                src, payload = self.inbox.get(block, 1.0 if block else None)
            except Empty:
                if not block:
                    return
                self.orphaned()
                continue
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

    def count(self) -> int:
        """How many new states this level's candidates hold: what `store` would store."""
        fresh, add = 0, FingerprintSet().add
        for c in self.cands:
            for fp, _, _, _ in c:
                fresh += add(fp)
        return fresh

    def store_level(self) -> dict[str, Any]:
        """Stores this level's new states as the next frontier: candidates of worker 0 first, then 1, ...; the first
        of equal fingerprints wins."""
        nxt = self.spool(0)
        seen_add, store_add, append = self.seen.add, self.store.add, nxt.append
        base = len(self.store)
        for c in self.cands:
            for fp, gid, ai, data in c:
                if seen_add(fp):
                    store_add(gid, ai)
                    append(data)
        self.spilled += self.frontier.spilled + sum(c.spilled for c in self.cands)
        for c in self.cands:
            c.close()
        self.frontier.close()
        self.frontier, self.base, self.limit, self.cands = nxt, base, None, []
        return self.figures({"fresh": len(nxt), "unchecked": len(nxt)})  # stored, checked when expanded

    def truncate(self, quota: int) -> int:
        """Keeps only the first `quota` states of the last level (max-states)."""
        keep = self.base + quota
        del self.store.parent[keep:]
        del self.store.action[keep:]
        self.limit = quota
        self.shared[1 + self.k] = len(self.store)
        return len(self.store)

    def check(self, start: int = 0) -> tuple[int, str, str] | None:
        """Checks the frontier's states from `start` (the last level, not expanded) up to the first violation."""
        end = self.end()
        for i, (packed,) in enumerate(self.frontier):
            if i >= end:
                break
            if i >= start:
                found = violated(self.invariants, self.unpack(packed))
                if found is not None:
                    return ((self.base + i) * self.n + self.k, *found)
        return None

    def check_rest(self) -> tuple[int, str, str] | None:
        """After a pause that met a violation elsewhere: the rest of the frontier checked, as the workers that saw
        the violation's flag did."""
        return self.check(self.position)

    def parent(self, local: int) -> tuple[int, int]:
        return self.store.parent[local], self.store.action[local]

    # ---- checkpoints (kcheck.model.checkpoint) ----

    def save(self, folder: str) -> dict[str, Any]:
        """This worker's share of a checkpoint taken at a cut, written to `folder`/worker-k and synced: its visited
        set, its store, the rest of its frontier and this level's candidates so far. {files, counters}."""
        k, seen, store = self.k, self.seen, self.store
        d = os.path.join(folder, f"worker-{k}")
        os.mkdir(d)
        start, end = self.position, self.end()
        parts: list[tuple[str, Iterable[Any]]] = [
            ("visited.bin", [memoryview(seen.table).cast("B")]),
            ("parent.bin", [memoryview(store.parent).cast("B")]),
            ("action.bin", [memoryview(store.action).cast("B")]),
            # the spools' compressed chunks copied as they are (no record decoded: the write is I/O), each
            # sender's candidates after the other
            ("frontier.bin", self.frontier.dump()),
            ("cands.bin", (part for c in self.cands for part in c.dump()))]
        if isinstance(seen, DiskFingerprintSet):
            parts.append(("visited-disk.bin", seen.disk_chunks()))
        files = {f"worker-{k}/{name}": write_file(os.path.join(d, name), data) for name, data in parts}
        files[f"worker-{k}/action.bin"]["typecode"] = store.action.typecode
        fsync_dir(d)
        spilled = self.figures({})["spilled"]
        return {"files": files, "counters": {"base": self.base, "position": start, "transitions": self.transitions,
                                             "spilled": spilled, "rest": end - start,
                                             "candidates": sum(len(c) for c in self.cands)}}

    def restore(self, gen: str, saved: dict[str, Any], files: dict[str, Any]) -> int:
        """This worker's share of the checkpoint in folder `gen` put back (`saved`: its counters, `files`: the
        manifest's): the level goes on where the cut was."""
        k, n = self.k, self.n
        d = os.path.join(gen, f"worker-{k}")
        disk = os.path.join(d, "visited-disk.bin") if f"worker-{k}/visited-disk.bin" in files else None
        self.seen = restore_visited(self.seen, read_array("Q", os.path.join(d, "visited.bin")), disk)
        self.store.parent = read_array("I", os.path.join(d, "parent.bin"))
        self.store.action = read_array(files[f"worker-{k}/action.bin"].get("typecode", "H"),
                                       os.path.join(d, "action.bin"))
        self.base, self.transitions, self.spilled = saved["base"], saved["transitions"], saved["spilled"]
        with open(os.path.join(d, "frontier.bin"), "rb") as f:
            self.frontier.load(f)
        self.cands, self.sent, self.position = [self.spool(3) for _ in range(n)], FingerprintSet(), saved["position"]
        with open(os.path.join(d, "cands.bin"), "rb") as f:
            for c in self.cands:
                c.load(f)
        self.shared[1 + k], self.shared[1 + n + k] = len(self.store), self.transitions
        return len(self.frontier)


def _serve(k: int, n: int, model: Model[Any, Any], opts: dict[str, Any], inboxes: list[Any], conn: Connection,
           shared: Any, start: float) -> None:
    # Interrupts are the caller's: it ends the search and ends the workers. A worker forked with the caller's
    # handlers would raise in the middle of a level on SIGTERM, or report Ctrl-C as its own error. A checkpointed
    # search ignores a SIGTERM sent to the whole process group too: the caller saves the search, then ends them.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN if opts["checkpointing"] else signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    try:
        w = _Worker(k, n, model, opts, inboxes, shared, start)
        while True:
            while not conn.poll(1.0):  # every process holds both ends of each pipe: a dead caller is no EOF
                w.orphaned()
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
                     stop: Callable[[], str | None] | None, visited_memory: int | None = None,
                     checkpoint: Checkpointer | None = None, resume: bool = False,
                     visited_dir: str | None = None) -> SearchResult:
    """`exhaust` with `workers` processes (see the module docstring); called by `kcheck.model.search.exhaust`.
    `visited_dir`: where a disk-backed visited set keeps its files (default `spill_dir`)."""
    if mp.current_process().daemon:
        raise RuntimeError("exhaust(workers > 1) cannot start its processes from a daemonic process (a "
                           "multiprocessing Pool worker, for one): run it with workers=1 there")
    opts = dict(max_seconds=max_seconds, symmetry=symmetry, compress=compress, spill_dir=spill_dir,
                spill_threshold=spill_threshold, visited_memory=visited_memory,
                visited_dir=visited_dir if visited_dir is not None else spill_dir,
                checkpointing=checkpoint is not None)
    run = _Coordinator(model, workers, opts, max_states, max_depth, progress, stop, checkpoint)
    try:
        return run.levels(resume)
    finally:
        run.close(failed=sys.exc_info()[0] is not None)


class _Coordinator:
    """The calling process of `parallel_exhaust`: it starts the workers, asks each for a level at a time, applies
    the caps between levels, saves and restores checkpoints, and rebuilds a counterexample by asking owners for
    parents."""

    def __init__(self, model: Model[Any, Any], n: int, opts: dict[str, Any], max_states: int | None,
                 max_depth: int | None, progress: Callable[[SearchResult], None] | None,
                 stop: Callable[[], str | None] | None, checkpoint: Checkpointer | None = None) -> None:
        self.model, self.n, self.max_states, self.max_depth = model, n, max_states, max_depth
        self.max_seconds, self.progress, self.stop = opts["max_seconds"], progress, stop
        self.checkpoint = checkpoint
        self.start = self.last_report = time.perf_counter()
        ctx = mp.get_context("fork")
        # the halt flag, stored states per worker, transitions per worker, the request for a checkpoint
        self.shared = ctx.RawArray("q", 2 + 2 * n)
        self.inboxes = [ctx.Queue() for _ in range(n)]
        self.pipes = [ctx.Pipe() for _ in range(n)]
        self.procs = [ctx.Process(target=_serve, name=f"kcheck-search-{k}", daemon=True,
                                  args=(k, n, model, opts, self.inboxes, self.pipes[k][1], self.shared, self.start))
                      for k in range(n)]
        self.conns = [p[0] for p in self.pipes]
        self.result = SearchResult(False, 0, 0, 0, 0.0, None, None, None, workers=n)
        self.halt_word: str | None = None
        self.level = 0  # the level being expanded
        self.stored = 0  # states stored before it
        self.before = 0  # transitions counted before it
        self.cut_saved = False  # the cut the workers stopped at is saved already

    def levels(self, resume: bool) -> SearchResult:
        """The search, level by level (from the checkpoint's cut: `resume`), to its result."""
        n, result = self.n, self.result
        for p in self.procs:
            p.start()
        if resume:
            self.restore()
        else:
            result.frontier_peak = sum(self.ask_all(("init",)))
            self.stored = sum(self.shared[1:1 + n])
        fresh = not resume
        while True:
            probe = self.max_depth is not None and self.level >= self.max_depth
            replies = self.route(probe, fresh)
            fresh = True
            # A progress report during the level wrote the live count into `result`: the exact one is written back.
            result.transitions = sum(r["transitions"] for r in replies)
            done = self.level_end(replies, probe)
            if done is not None:
                return done
            replies = self.ask_all(("store_level",))
            new = sum(r["fresh"] for r in replies)
            self.stored += new
            self.before = result.transitions
            self.level += 1
            result.depth = self.level
            result.frontier_peak = max(result.frontier_peak, new)

    def route(self, probe: bool, fresh: bool) -> list[dict[str, Any]]:
        """The workers' replies once the level is routed (from where it stopped unless `fresh`) or stopped; a pause
        for a checkpoint saves the cut and goes on."""
        self.cut_saved = False
        while True:
            replies = self.ask_all(("expand", probe, fresh))
            fresh = False
            if any(r["violation"] is not None for r in replies):
                # the workers that paused check the rest of their frontier too, as those that saw the flag did:
                # the lowest-numbered worker's violation is then the one a run without pauses finds
                paused = [k for k, r in enumerate(replies) if r["cut"] == "paused"]
                for k, found in zip(paused, self.ask_each(paused, ("check_rest",)), strict=True):
                    replies[k]["violation"] = found
                return replies
            if not any(r["cut"] == "paused" for r in replies) or any(r["cut"] == "halted" for r in replies):
                return replies
            self.save()
            self.shared[1 + 2 * self.n] = 0
            if self.shared[0] in (_TIME, _STOP):  # a cap or a signal during the save: it holds this very cut
                self.cut_saved = True
                return replies

    def level_end(self, replies: list[dict[str, Any]], probe: bool) -> SearchResult | None:
        """The result when the level just routed ends the search (a violation, a halt, the depth bound, nothing
        new, the state cap), else None."""
        found = next((r["violation"] for r in replies if r["violation"] is not None), None)
        if found is not None:
            # the level's transitions so far depend on when each worker saw the flag: those before it do not
            self.result.transitions = self.before
            return self.violation(found, self.level, replies)
        if any(r["cut"] for r in replies):  # halted (any that paused stopped at the same cut)
            if not self.cut_saved:
                self.save()
            word = self.halt_word if self.shared[0] == _STOP and self.halt_word else "max-seconds"
            return self.finish(word, replies, sum(r["stored"] - r["unchecked"] for r in replies))
        most = sum(r["fresh"] for r in replies)
        if probe:
            return self.finish("max-depth" if most else None, replies)
        if most == 0:
            return self.finish(None, replies)
        if self.max_states is not None and self.stored + most > self.max_states \
                and self.stored + sum(self.ask_all(("count",))) > self.max_states:
            self.save()  # the level routed, not stored: a run with a higher cap goes on from here
            return self.capped(self.ask_all(("store_level",)))
        return None

    def capped(self, replies: list[dict[str, Any]]) -> SearchResult:
        """`max_states` reached within the level just stored: its new states are kept in worker order up to the
        cap, then checked (they will not be expanded)."""
        assert self.max_states is not None
        room = self.max_states - self.stored
        quotas = []
        for r in replies:
            quotas.append(min(room, r["fresh"]))
            room -= quotas[-1]
        self.ask_all(*(("truncate", q) for q in quotas))
        found = next((c for c in self.ask_all(("check",)) if c is not None), None)
        for r, q in zip(replies, quotas, strict=True):
            r["stored"] -= r["fresh"] - q
        if found is not None:
            return self.violation(found, self.level + 1, replies)
        self.result.depth = self.level
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

    # ---- checkpoints: each worker writes its share, this process the manifest (kcheck.model.checkpoint) ----

    def save(self) -> None:
        """A checkpoint of the cut the workers stopped at (or of a level routed and not stored)."""
        if self.checkpoint is None:
            return
        r = self.result
        counters: dict[str, Any] = {"order": "bfs", "workers": self.n, "level": self.level, "stored": self.stored,
                                    "states": self.stored, "depth": r.depth, "frontier_peak": r.frontier_peak,
                                    "before": self.before}

        def write(folder: str) -> dict[str, Any]:
            shares = self.ask_all(("save", folder))
            counters["shares"] = [share["counters"] for share in shares]
            counters["transitions"] = sum(c["transitions"] for c in counters["shares"])
            counters["checked"] = self.stored - sum(c["rest"] for c in counters["shares"])  # as a halt reports
            return {name: info for share in shares for name, info in share["files"].items()}

        self.checkpoint.commit(write, counters)

    def restore(self) -> None:
        """The checkpoint's cut put back in every worker, and the counters here."""
        assert self.checkpoint is not None
        manifest, gen = self.checkpoint.generation()
        counters = manifest["counters"]
        check_workers(counters, self.n, self.checkpoint.folder)
        self.ask_all(*(("restore", gen, share, manifest["files"]) for share in counters["shares"]))
        self.level, self.stored, self.before = counters["level"], counters["stored"], counters["before"]
        self.result.depth, self.result.frontier_peak = counters["depth"], counters["frontier_peak"]

    # ---- talking to the workers ----

    def poll(self) -> None:
        """While the workers run (about every 0.2 s): the clock and `stop`, which halt them through the shared flag,
        the request for a checkpoint when one is due, and a progress report when one is due."""
        now, shared, n = time.perf_counter(), self.shared, self.n
        if shared[0] == _RUN:
            if self.max_seconds is not None and now - self.start >= self.max_seconds:
                shared[0] = _TIME
            elif self.stop is not None:
                word = self.stop()
                if word:
                    self.halt_word = word
                    shared[0] = _STOP
            if self.checkpoint is not None and self.checkpoint.due():
                shared[1 + 2 * n] = 1
        if self.progress is not None and now - self.last_report >= PROGRESS_SECONDS:
            self.last_report = now
            result = self.result
            result.states = sum(shared[1:1 + n])
            result.transitions = sum(shared[1 + n:1 + 2 * n])
            result.seconds = now - self.start
            self.progress(result)

    def ask(self, k: int, *cmd: Any) -> Any:
        return self.ask_each([k], cmd)[0]

    def ask_each(self, ks: list[int], cmd: tuple[Any, ...]) -> list[Any]:
        """Sends workers `ks` the command and waits for their replies."""
        for k in ks:
            self.conns[k].send(cmd)
        return self.gather(ks)

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
                    p.kill()
                p.join()
        for q in self.inboxes:
            q.close()
            q.cancel_join_thread()
        for a, b in self.pipes:
            a.close()
            b.close()
