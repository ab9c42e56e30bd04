"""The disk-backed visited set (model/diskset.py, `kcheck exhaust --visited-memory SIZE`): with a budget so small that
the fingerprints are flushed to disk many times, a search gives the same states, transitions, depth, invariant tally
and counterexample as the search all in memory (one process, workers, a checkpoint taken while fingerprints are on
disk and resumed); its files are never seen in the folder they live in, during a run, after it, or after Ctrl-C."""

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

from cli_support import RUNNER, one_error_line, run
from kcheck.model.diskset import DiskFingerprintSet, restore_visited
from kcheck.model.visited import FingerprintSet

ZERO = ["--fences", "0", "--elections", "0", "--isr-shrinks", "0", "--failovers", "0", "--reads", "0",
        "--no-duplicates", "--atomic-fetch"]
# today's protocol, complete in about 5,000 states; a historical row whose shortest counterexample is 8 steps deep;
# another row, broken 10 steps deep
CLEAN = ["exhaust", "--brokers", "2", "--replication-factor", "2", "--min-isr", "1", "--records", "1", "--crashes",
         "0", "--lossy-crashes", "1", *ZERO]
FAILS = ["exhaust", "--protocol", "truncate-to-hw-lossy", "--atomic-fetch"]
FAILS_DEEPER = ["exhaust", "--protocol", "truncate-to-hw"]
DFS_FAILS = ["exhaust", "--protocol", "hw-over-committed-isr", "--order", "dfs"]  # about 3,000 states deep first
SAME = ("ok", "exit_status", "complete", "stopped_by", "states", "transitions", "depth", "invariants", "trace")
TINY = "1K"  # a table of 128 fingerprints: flushed every 90 new states


def _report(capsys: Any, argv: list[str]) -> dict[str, Any]:
    code, out, err = run(capsys, *argv, "--json")
    rep = json.loads(out)
    assert rep["exit_status"] == code, err
    return rep


def test_the_set_answers_as_a_set_across_many_flushes(tmp_path: Path) -> None:
    rng = random.Random(40)
    fps = [rng.getrandbits(64) or 1 for _ in range(20_000)]
    fps += rng.sample(fps, 5_000)  # duplicates, some in memory and some on disk by the time they come
    rng.shuffle(fps)
    disk, plain = DiskFingerprintSet(1 << 10, str(tmp_path)), set()
    for fp in fps:
        assert disk.add(fp) == (fp not in plain)
        plain.add(fp)
    assert disk.flushes > 100 and disk.on_disk > 15_000 and len(disk) == len(plain)
    assert all(fp in disk for fp in plain)
    assert not any((fp ^ 0x5A5A) in disk for fp in list(plain)[:2000] if (fp ^ 0x5A5A) not in plain)
    assert os.listdir(tmp_path) == []  # its files are never linked into the folder
    # what a checkpoint keeps (the table and the file's bytes) restores to the same set, either kind
    saved = tmp_path / "disk.bin"
    saved.write_bytes(b"".join(disk.disk_chunks()))
    back = restore_visited(DiskFingerprintSet(1 << 12, str(tmp_path)), disk.table, str(saved))
    in_memory = restore_visited(FingerprintSet(), disk.table, str(saved))
    assert len(back) == len(in_memory) == len(plain)
    assert all(fp in back and fp in in_memory for fp in plain)
    disk.close()


@pytest.mark.parametrize("argv", [CLEAN, FAILS, FAILS_DEEPER, DFS_FAILS],
                         ids=["complete", "counterexample", "deeper", "dfs-counterexample"])
def test_a_search_with_its_fingerprints_on_disk_is_the_search_in_memory(argv: list[str], capsys: Any) -> None:
    want = _report(capsys, argv)
    got = _report(capsys, [*argv, "--visited-memory", TINY])
    assert {k: got[k] for k in SAME} == {k: want[k] for k in SAME}
    assert got["visited_disk_bytes"] > 8 * got["states"] // 2  # most of them on disk
    assert want["visited_disk_bytes"] == 0


def test_on_spark_the_option_is_refused_in_one_line(capsys: Any) -> None:
    code, out, err = run(capsys, *CLEAN, "--master", "local[1]", "--visited-memory", "1M")
    assert (code, out) == (2, "")
    one_error_line(err, "--visited-memory", "Spark")


def test_workers_share_the_budget_and_find_the_same_states(capsys: Any) -> None:
    want = _report(capsys, CLEAN)
    got = _report(capsys, [*CLEAN, "--workers", "2", "--visited-memory", "2K"])
    assert {k: got[k] for k in SAME} == {k: want[k] for k in SAME}
    assert got["workers"] == 2 and got["visited_disk_bytes"] > 0


def test_a_checkpoint_taken_with_fingerprints_on_disk_resumes_to_the_uncut_counts(tmp_path: Path) -> None:
    from kcheck.invariants.replication_model_adapter import ReplicationModel
    from kcheck.model.checkpoint import Checkpointer
    from kcheck.model.replication import Config, Protocol
    from kcheck.model.search import exhaust

    cfg = Config(brokers=2, replication_factor=2, min_isr=1, records=1, crashes=0, fences=0, lossy_crashes=1,
                 elections=0, isr_shrinks=0, failovers=0, reads=0, duplicates=False, atomic_fetch=True)
    uncut = exhaust(ReplicationModel(Protocol.current(), cfg))
    calls = [0]

    def pause() -> str | None:  # stops every third poll: a checkpoint there
        calls[0] += 1
        return "paused" if calls[0] % 3 == 0 else None

    folder = tmp_path / "ck"
    runs, resume, on_disk = 0, False, []
    while True:
        r = exhaust(ReplicationModel(Protocol.current(), cfg), stop=pause, visited_memory=1 << 10,
                    checkpoint=Checkpointer(str(folder), {"case": 1}, 1e9), resume=resume)
        runs, resume = runs + 1, True
        manifest = json.loads((folder / "kcheck-checkpoint.json").read_text())
        on_disk.append(manifest["files"].get("visited-disk.bin", {}).get("bytes", 0))
        if r.stopped_because != "paused":
            break
    assert runs > 5 and sum(1 for b in on_disk if b) > 3  # several checkpoints held fingerprints on disk
    assert (r.states, r.transitions, r.depth) == (uncut.states, uncut.transitions, uncut.depth)
    assert r.complete
    # and the folder holds only the checkpoint's own files: the set's working files were never linked there
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith("gen-")) == ["kcheck-checkpoint.json"]




def _open_in(pid: int, folder: Path) -> list[str]:
    """The files process `pid` holds open in `folder` (Linux: /proc/PID/fd)."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder) + "/"):
            out.append(target)
    return out


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads a process's open files from /proc")
@pytest.mark.parametrize("interrupt", [False, True], ids=["run-to-the-end", "ctrl-c"])
def test_the_files_live_in_the_folder_and_nothing_is_left_there(interrupt: bool, tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    argv = [*CLEAN[:CLEAN.index("--records") + 1], "2", *CLEAN[CLEAN.index("--records") + 2:]] if interrupt else CLEAN
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, *argv, "--quiet", "--visited-memory", TINY,
                             "--spill-dir", str(spill)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        held: list[str] = []
        deadline = time.monotonic() + 60
        while not held and proc.poll() is None and time.monotonic() < deadline:
            held = _open_in(proc.pid, spill)  # the set's file, open there, deleted from the start
            time.sleep(0.02)
        assert held and all(t.endswith("(deleted)") for t in held), held
        assert os.listdir(spill) == []
        if interrupt:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == (130 if interrupt else 0), err
    assert os.listdir(spill) == []
