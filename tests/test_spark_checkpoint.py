"""`kcheck exhaust --master local[N] --checkpoint DIR` / `--resume` (spark_check/exhaust.py, model/checkpoint.py): the
Spark search saved at level boundaries, killed (kill -9 of its whole process group, its JVM with it) at random
moments and continued, invocation after invocation, on local[1] or local[2] (the checkpoint keeps its partitions),
ends with the states, transitions, depth, verdict, trace and exit code of the same Spark search run once without a
cut; SIGTERM ends it at once (exit 130, one line saying how to resume), keeping the last checkpoint; a checkpoint of
another engine is bad input. Every run is a process of its own (a Spark session each), so the file is slow."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cli_support import CHECKPOINT_CLEAN as CLEAN
from cli_support import CHECKPOINT_FAILS as FAILS
from cli_support import RUNNER, sigterm_when_ready, wait_group_gone
from kcheck.model.checkpoint import MANIFEST

pytestmark = [pytest.mark.spark, pytest.mark.slow]

pytest.importorskip("pyspark")
if shutil.which("java") is None:
    pytest.skip("java is not on PATH", allow_module_level=True)

SAME = ("ok", "exit_status", "complete", "stopped_by", "states", "transitions", "depth", "trace", "engine")


def _env(tmp_path: Path) -> dict[str, str]:
    """Spark's scratch files in the test's folder (a process killed by -9 cannot remove them)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    return {**os.environ, "SPARK_LOCAL_DIRS": str(scratch), "TMPDIR": str(scratch), "SPARK_LOCAL_IP": "127.0.0.1"}


def _start(argv: list[str], folder: Path, tmp_path: Path, master: str = "local[1]") -> subprocess.Popen[str]:
    resume = ["--resume"] if (folder / MANIFEST).exists() else []
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, *argv, "--master", master, "--json", "--checkpoint",
                             str(folder), "--checkpoint-every", "0.05", *resume], cwd=tmp_path, env=_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def _finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=300)
    finally:
        wait_group_gone(proc.pid, "processes of the search were")



def _generation(folder: Path) -> int:
    try:
        return int(json.loads((folder / MANIFEST).read_text())["generation_number"])
    except (OSError, ValueError):
        return 0


def _uncut(argv: list[str], tmp_path: Path) -> tuple[dict[str, Any], int]:
    """The same Spark search run once: with a checkpoint folder too (a historical protocol's change coverage would
    otherwise move the search into this one process), never resumed."""
    out, err = _finish(proc := _start(argv, tmp_path / "uncut", tmp_path))
    assert out, err
    return json.loads(out), proc.returncode


@pytest.mark.parametrize("argv", [CLEAN, FAILS], ids=["complete", "counterexample"])
def test_a_spark_search_killed_at_random_moments_resumes_to_the_uncut_result(argv: list[str], tmp_path: Path) -> None:
    want, want_code = _uncut(argv, tmp_path)
    assert want["engine"] == "kcheck.spark_check.exhaust" and want["exit_status"] == want_code
    folder, rng, kills = tmp_path / "ck", random.Random(40), 3
    resumed_from: list[int] = []
    for attempt in range(10):
        was = _generation(folder)
        if was:
            resumed_from.append(json.loads((folder / MANIFEST).read_text())["counters"]["level"])
        proc = _start(argv, folder, tmp_path, "local[2]" if attempt % 2 else "local[1]")
        if attempt < kills:  # once it saved again, at a random moment of the levels that follow
            while _generation(folder) == was and proc.poll() is None:
                time.sleep(0.01)
            time.sleep(rng.uniform(0, 0.8))
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                wait_group_gone(proc.pid, "processes of the search were")
                continue
        out, err = _finish(proc)
        break
    assert len(resumed_from) >= kills - 1 and resumed_from == sorted(resumed_from), resumed_from
    got = json.loads(out)
    assert {k: got[k] for k in SAME} == {k: want[k] for k in SAME}
    assert proc.returncode == want_code, err
    assert f"resumed from the checkpoint in {folder}; seconds and memory are this run's" in got["notes"]


def test_sigterm_ends_a_spark_search_at_once_and_keeps_its_last_checkpoint(tmp_path: Path) -> None:
    folder = tmp_path / "ck"
    proc = _start(CLEAN, folder, tmp_path)
    out, err, seconds = sigterm_when_ready(proc, lambda: _generation(folder) >= 2,  # under way, and saved
                                           "the search ended before its checkpoints", False,
                                           "processes of the search were", 120)
    assert proc.returncode == 130 and out == "", (out, err)
    assert err.splitlines() == [f"kcheck: interrupted (SIGTERM): stopped, no output written; the search was saved "
                                f"in {folder}: --resume continues it"], err
    assert seconds < 4, seconds
    out, err = _finish(resumed := _start(CLEAN, folder, tmp_path))
    got, (want, want_code) = json.loads(out), _uncut(CLEAN, tmp_path)
    assert resumed.returncode == want_code == 0, err
    assert {k: got[k] for k in SAME} == {k: want[k] for k in SAME}


def test_a_checkpoint_resumes_only_on_the_engine_that_wrote_it(tmp_path: Path) -> None:
    # a Spark search's checkpoint continued in this one process, and one process's continued on Spark: exit 2, one
    # line naming the difference, the folder left as it was
    for spark_first, folder in ((True, tmp_path / "spark"), (False, tmp_path / "local")):
        first = [*CLEAN, "--checkpoint", str(folder), "--max-states", "50", "--json"]
        done = subprocess.run([sys.executable, "-c", RUNNER, *first, *(["--master", "local[1]"] * spark_first)],
                              cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
        assert done.returncode == 4 and (folder / MANIFEST).exists(), done.stderr
        before = (folder / MANIFEST).read_bytes()
        again = [*CLEAN, "--checkpoint", str(folder), "--resume", *(["--master", "local[1]"] * (not spark_first))]
        done = subprocess.run([sys.executable, "-c", RUNNER, *again], cwd=tmp_path, env=_env(tmp_path),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and done.stdout == "ready\n", done
        assert done.stderr.splitlines() == [
            f"kcheck: error: --resume: {folder}: a checkpoint of another search (engine: "
            f"{'spark' if spark_first else None!r} there, {None if spark_first else 'spark'!r} here)"], done.stderr
        assert (folder / MANIFEST).read_bytes() == before
