"""`kcheck exhaust --checkpoint DIR` / `--resume` (model/checkpoint.py): a search killed at random moments (kill -9,
nothing saved at the end) or stopped by SIGTERM and continued, invocation after invocation, ends with the counts,
depth, invariant tally and counterexample of the same search run once without a cut, in one process or in
`--workers 2` (model/parallel.py); a folder that is not this search's checkpoint (or one of another number of
workers) is bad input and is left as it was. Orders dfs and novelty too: a search cut inside expansions
and resumed holds, byte for byte, what the uncut search holds at the same expansion."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cli_support import CHECKPOINT_CLEAN as CLEAN
from cli_support import CHECKPOINT_FAILS as FAILS
from cli_support import RUNNER, one_error_line, run, sigterm_when_ready, wait_group_gone
from kcheck.model.checkpoint import MANIFEST
from kcheck.runtime.exit_codes import Exit

# the other orders: depth first into a counterexample after about 3,000 states; best first (--order novelty) into
# FAILS's after about 8,000
DFS_FAILS = ["exhaust", "--protocol", "hw-over-committed-isr", "--order", "dfs"]
SAME = ("ok", "exit_status", "complete", "stopped_by", "states", "transitions", "depth", "invariants", "trace")


def _uncut(capsys: Any, argv: list[str]) -> dict[str, Any]:
    code, out, _ = run(capsys, *argv, "--json")
    rep = json.loads(out)
    assert rep["exit_status"] == code
    return rep


def _generation(folder: Path) -> int:
    """The number of the checkpoint the folder holds (0: none)."""
    try:
        return int(json.loads((folder / MANIFEST).read_text())["generation_number"])
    except (OSError, ValueError):  # none yet (a manifest is replaced whole, never seen half-written)
        return 0


def _start(argv: list[str], folder: Path, cwd: Path) -> subprocess.Popen[str]:
    resume = ["--resume"] if (folder / MANIFEST).exists() else []
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, *argv, "--json", "--checkpoint", str(folder),
                             "--checkpoint-every", "0.05", *resume], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


@pytest.mark.parametrize("argv", [CLEAN, FAILS, DFS_FAILS, [*FAILS, "--order", "novelty"]],
                         ids=["complete", "counterexample", "dfs-counterexample", "novelty-counterexample"])
def test_a_search_killed_at_random_moments_resumes_to_the_uncut_result(argv: list[str], tmp_path: Path,
                                                                       capsys: Any) -> None:
    want = _uncut(capsys, argv)
    got, code, err = _killed_and_resumed(argv, tmp_path, random.Random(40))
    assert {k: got[k] for k in SAME} == {k: want[k] for k in SAME}
    assert code == want["exit_status"], err


WORKERS = ["--workers", "2"]


@pytest.mark.parametrize("argv", [CLEAN, FAILS, [*CLEAN, "--visited-memory", "1K"], [*FAILS, "--visited-memory", "1K"]],
                         ids=["complete", "counterexample", "complete-visited-on-disk",
                              "counterexample-visited-on-disk"])
def test_a_search_in_workers_killed_at_random_moments_resumes_to_the_uncut_result(argv: list[str], tmp_path: Path,
                                                                                  capsys: Any) -> None:
    # Each worker saves its share of a cut inside a level (kcheck.model.parallel); killed (the whole process group,
    # or only the calling process, whose workers then end by themselves) and resumed, again and again, the search
    # ends as it does uncut with 2 workers (a checkpoint folder never written: a historical protocol's change
    # coverage would otherwise keep the uncut run in one process), and as it does in one process: all of it for a
    # complete search; for a counterexample, the verdict, depth and trace (one process checks a state when it
    # stores it, workers when they expand it, so they stop after different counts).
    want = _uncut(capsys, [*argv, *WORKERS, "--checkpoint", str(tmp_path / "uncut")])
    one = _uncut(capsys, argv)
    got, code, err = _killed_and_resumed([*argv, *WORKERS], tmp_path, random.Random(41), kills=5, alone=True)
    assert {k: got[k] for k in SAME} == {k: want[k] for k in SAME}
    same_as_one = SAME if one["complete"] else ("ok", "exit_status", "complete", "stopped_by", "depth", "trace")
    assert {k: got[k] for k in same_as_one} == {k: one[k] for k in same_as_one}
    assert code == want["exit_status"], err
    manifest = json.loads((tmp_path / "ck" / MANIFEST).read_text())
    assert manifest["identity"]["workers"] == 2 and len(manifest["counters"]["shares"]) == 2


def _killed_and_resumed(argv: list[str], tmp_path: Path, rng: random.Random, kills: int = 4, alone: bool = False
                        ) -> tuple[dict[str, Any], int, str]:
    """`argv` with a checkpoint every 0.05 s, killed `kills` times (once it saved, at a random moment of its next
    interval: a save may be under way then; `alone`: every other time only the calling process), then resumed to its
    end: (its JSON report, exit code, stderr)."""
    folder = tmp_path / "ck"
    resumed_from: list[int] = []
    for attempt in range(12):
        was = _generation(folder)
        if was:
            resumed_from.append(json.loads((folder / MANIFEST).read_text())["counters"]["states"])
        proc = _start(argv, folder, tmp_path)
        if attempt < kills:  # no chance to save at the end, each run a fraction of a search of about a second
            while _generation(folder) == was and proc.poll() is None:
                time.sleep(0.005)
            time.sleep(rng.uniform(0, 0.06))
            if proc.poll() is None:
                if alone and attempt % 2:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait()
                    wait_group_gone(proc.pid, "the workers of a killed search were")
                else:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                continue
        out, err = proc.communicate(timeout=120)
        break
    assert len(resumed_from) >= kills - 1, "the search ended before the kills: make it longer"
    return json.loads(out), proc.returncode, err



@pytest.mark.parametrize("workers", [[], WORKERS], ids=["one-process", "workers"])
def test_sigterm_saves_the_search_and_ends_at_once(workers: list[str], tmp_path: Path, capsys: Any) -> None:
    folder = tmp_path / "ck"
    proc = _start([*CLEAN, *workers], folder, tmp_path)
    out, err, seconds = sigterm_when_ready(proc, (folder / MANIFEST).exists,  # under way, and saved once
                                           "the search ended before any checkpoint", True,  # workers too
                                           "the workers of a killed search were", 60)
    assert proc.returncode == 130 and out == "", (out, err)
    assert err.splitlines() == [f"kcheck: interrupted (SIGTERM): stopped, no output written; the search was saved "
                                f"in {folder}: --resume continues it"], err
    assert seconds < 4, seconds
    saved = json.loads((folder / MANIFEST).read_text())["counters"]["states"]
    code, out, _ = run(capsys, *CLEAN, *workers, "--json", "--checkpoint", str(folder), "--resume")
    got, want = json.loads(out), _uncut(capsys, CLEAN)
    assert 0 < saved < want["states"]
    assert code == Exit.OK and {k: got[k] for k in SAME} == {k: want[k] for k in SAME}
    assert got["notes"] == [f"resumed from the checkpoint in {folder}; seconds and memory are this run's"]


def _saved(capsys: Any, folder: Path, *more: str) -> dict[str, bytes]:
    """A checkpoint of CLEAN stopped by --max-states 300, and every file of its folder."""
    code, _, _ = run(capsys, *CLEAN, *more, "--checkpoint", str(folder), "--max-states", "300")
    assert code == Exit.INCOMPLETE
    return _files(folder)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("workers", [[], WORKERS], ids=["one-process", "workers"])
def test_a_cap_saves_the_search_and_a_later_run_goes_on_past_it(workers: list[str], tmp_path: Path,
                                                                capsys: Any) -> None:
    folder = tmp_path / "ck"
    _saved(capsys, folder, *workers)
    # resumed under the same cap, it stops where it stopped; with none, it runs to the uncut end
    capped = _uncut(capsys, [*CLEAN, *workers, "--max-states", "300"])
    code, out, _ = run(capsys, *CLEAN, *workers, "--json", "--checkpoint", str(folder), "--resume", "--max-states",
                       "300")
    assert code == Exit.INCOMPLETE and {k: json.loads(out)[k] for k in SAME} == {k: capped[k] for k in SAME}
    code, out, _ = run(capsys, *CLEAN, *workers, "--json", "--checkpoint", str(folder), "--resume")
    got, want = json.loads(out), _uncut(capsys, CLEAN)
    assert code == Exit.OK and {k: got[k] for k in SAME} == {k: want[k] for k in SAME}


def _refused(capsys: Any, args: list[str], *fragments: str) -> None:
    code, out, err = run(capsys, *args)
    assert code == Exit.BAD_INPUT and out == "", (code, out, err)
    one_error_line(err, *fragments)


def test_a_folder_that_is_not_this_searchs_checkpoint_is_bad_input_and_left_alone(tmp_path: Path,
                                                                                   capsys: Any) -> None:
    folder = tmp_path / "ck"
    before = _saved(capsys, folder)
    ck = ["--checkpoint", str(folder)]
    _refused(capsys, [*CLEAN, *ck], "--checkpoint: ", "holds a checkpoint already: --resume continues it")
    _refused(capsys, [*CLEAN, "--lossy-crashes", "0", *ck, "--resume"], "--resume: ", "a checkpoint of another "
             "search (config.lossy_crashes: 1 there, 0 here)")
    _refused(capsys, [*CLEAN, "--no-symmetry", *ck, "--resume"], "(symmetry: True there, False here)")
    _refused(capsys, [*CLEAN, "--protocol", "truncate-to-hw", *ck, "--resume"], "a checkpoint of another search")
    _refused(capsys, [*CLEAN, "--order", "dfs", *ck, "--resume"], "(order: 'bfs' there, 'dfs' here)")  # its order
    # its engine (refused before Spark starts: tests/test_spark_checkpoint.py continues Spark's own checkpoints)
    _refused(capsys, [*CLEAN, "--master", "local[1]", *ck, "--resume"], "(engine: None there, 'spark' here)")
    assert _files(folder) == before
    manifest = json.loads((folder / MANIFEST).read_text())
    for damage, fragment in ((lambda m: {**m, "version": 99}, "checkpoint format version 99"),
                             (lambda m: {**m, "format": "other"}, "not a kcheck exhaust checkpoint"),
                             # written by a kcheck whose model or invariants' code differed
                             (lambda m: {**m, "identity": {**m["identity"], "code": "0"}}, "(code: '0' there")):
        (folder / MANIFEST).write_text(json.dumps(damage(manifest)))
        _refused(capsys, [*CLEAN, *ck, "--resume"], "--resume: ", fragment)
    (folder / MANIFEST).write_text(json.dumps(manifest))
    frontier = folder / manifest["generation"] / "next.bin"
    frontier.write_bytes(frontier.read_bytes()[:-1])
    _refused(capsys, [*CLEAN, *ck, "--resume"], "next.bin: damaged")

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    _refused(capsys, [*CLEAN, "--checkpoint", str(theirs)], "--checkpoint: ", "not a kcheck checkpoint")
    _refused(capsys, [*CLEAN, "--checkpoint", str(theirs), "--resume"], "--resume: ", "not a kcheck checkpoint")
    assert _files(theirs) == {"notes.txt": b"mine"}

    missing = tmp_path / "missing"
    _refused(capsys, [*CLEAN, "--checkpoint", str(missing), "--resume"], "--resume: ", "holds no checkpoint")
    _refused(capsys, [*CLEAN, "--resume"], "--resume: needs --checkpoint DIR")
    _refused(capsys, [*CLEAN, "--coverage-dir", str(tmp_path / "cov"), "--checkpoint", str(missing)],
             "--checkpoint: ", "not with --coverage-dir")
    assert not missing.exists()


def test_a_checkpoint_resumes_only_with_as_many_workers(tmp_path: Path, capsys: Any) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    before = {"one": _saved(capsys, one), "two": _saved(capsys, two, *WORKERS)}
    _refused(capsys, [*CLEAN, *WORKERS, "--checkpoint", str(one), "--resume"], "--resume: ",
             "a checkpoint of a search in 1 worker process(es); it resumes with as many (--workers 1), not 2")
    _refused(capsys, [*CLEAN, "--checkpoint", str(two), "--resume"], "--resume: ",
             "a checkpoint of a search in 2 worker process(es); it resumes with as many (--workers 2), not 1")
    _refused(capsys, [*CLEAN, "--workers", "3", "--checkpoint", str(two), "--resume"], "(--workers 2), not 3")
    text = (two / MANIFEST).read_text()
    manifest = json.loads(text)
    share = two / manifest["generation"] / "worker-1" / "cands.bin"
    share.write_bytes(share.read_bytes() + b"x")
    _refused(capsys, [*CLEAN, *WORKERS, "--checkpoint", str(two), "--resume"], "worker-1/cands.bin: damaged")
    share.write_bytes(share.read_bytes()[:-1])
    (two / MANIFEST).write_text(json.dumps({**manifest, "files": {**manifest["files"], "../x.bin": {}}}))
    _refused(capsys, [*CLEAN, *WORKERS, "--checkpoint", str(two), "--resume"], "names a file kcheck never writes")
    (two / MANIFEST).write_text(text)
    assert {"one": _files(one), "two": _files(two)} == before


@pytest.mark.parametrize("workers", [1, 2])
def test_the_engine_resumes_a_spilled_frontier_to_the_uncut_counts(workers: int, tmp_path: Path) -> None:
    # The frontier spills to files past a tiny threshold, and a checkpoint reads it while the search iterates it
    # (with workers, the candidates too, copied chunk by chunk from memory and from the spill files).
    from kcheck.invariants.replication_model_adapter import ReplicationModel
    from kcheck.model.checkpoint import Checkpointer
    from kcheck.model.replication import Config, Protocol
    from kcheck.model.search import exhaust

    cfg = Config(brokers=2, replication_factor=2, min_isr=1, records=1, crashes=0, fences=0, lossy_crashes=1,
                 elections=0, isr_shrinks=0, failovers=0, reads=0, duplicates=False, atomic_fetch=True)
    uncut = exhaust(ReplicationModel(Protocol.current(), cfg))
    calls = [0]

    def pause() -> str | None:  # stops every third poll (every 192 expansions or so): a checkpoint there
        calls[0] += 1
        return "paused" if calls[0] % 3 == 0 else None

    runs, resume, spilled = 0, False, 0
    while True:
        r = exhaust(ReplicationModel(Protocol.current(), cfg), stop=pause, spill_dir=str(tmp_path),
                    spill_threshold=4096, checkpoint=Checkpointer(str(tmp_path / "ck"), {"case": 1}, 1e9),
                    resume=resume, workers=workers)
        runs, resume, spilled = runs + 1, True, spilled + r.spilled_bytes
        if r.stopped_because != "paused":
            break
    assert runs > 5 and spilled and r.complete
    assert (r.states, r.transitions, r.depth) == (uncut.states, uncut.transitions, uncut.depth)


@pytest.mark.parametrize("order", ["dfs", "novelty"])
def test_the_other_orders_resumed_after_cuts_hold_what_the_uncut_search_holds_at_the_same_expansion(
        order: str, tmp_path: Path) -> None:
    # Several --max-states cuts inside expansions, resumed, then paused at the next poll; the uncut search paused at
    # that same expansion saves the same store, stack or tiers and novelty counts, byte for byte.
    from kcheck.invariants.replication_model_adapter import ReplicationModel
    from kcheck.invariants.replication_searches.runs import novelty_key
    from kcheck.model.checkpoint import Checkpointer
    from kcheck.model.replication import Config, Protocol
    from kcheck.model.search import exhaust

    cfg = Config(brokers=2, replication_factor=2, min_isr=1, records=1, crashes=0, fences=0, lossy_crashes=1,
                 elections=0, isr_shrinks=0, failovers=0, reads=0, duplicates=False, atomic_fetch=True)

    def search(folder: Path, resume: bool, max_states: int | None = None, pause_at: int = 0) -> str | None:
        calls = [0]

        def stop() -> str | None:
            calls[0] += 1
            return "paused" if calls[0] == pause_at else None

        return exhaust(ReplicationModel(Protocol.current(), cfg), order=order, max_states=max_states, stop=stop,
                       novelty=novelty_key if order == "novelty" else None, resume=resume,
                       checkpoint=Checkpointer(str(folder), {"case": order}, 1e9)).stopped_because

    cut, uncut = tmp_path / "cut", tmp_path / "uncut"
    assert [search(cut, n > 0, 150 + 307 * n) for n in range(8)] == ["max-states"] * 8
    expanded = json.loads((cut / MANIFEST).read_text())["counters"]["expanded"]
    assert search(cut, True, pause_at=1) == "paused"
    assert search(uncut, False, pause_at=expanded // 64 + 1) == "paused"  # a poll every 64 expansions
    saved = [json.loads((f / MANIFEST).read_text()) for f in (cut, uncut)]
    assert saved[0]["counters"] == saved[1]["counters"]
    assert {k: v for k, v in _files(cut).items() if k != MANIFEST} == {
        k.replace(saved[1]["generation"], saved[0]["generation"]): v for k, v in _files(uncut).items() if k != MANIFEST}
