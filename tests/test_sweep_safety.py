"""A sweep's store on a shared machine: private temporary files, one run at a time, stored data never
rewritten, a damaged store refused in one line. None of these start Spark (they fail, or find nothing to
compute, before a session would start).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kcheck.cli import main
from kcheck.commands.sweep import build_space
from kcheck.spark_check import job
from kcheck.spark_check.job import plan
from kcheck.spark_check.store import LOCK_NAME, ResultStore, StoreError, cell_size, grid

SPACE_ARGS = ["sweep", "placement", "--space", "small,brokers=1..4"]
SPACE = build_space("placement", "small,brokers=1..4", None, None)


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, out: str, err: str) -> None:
    # stdout holds at most the banner (a damaged file is found when the sweep reads its store back)
    assert code == 2 and (out == "" or out.startswith("kcheck sweep ") and out.count("\n") == 1), (code, out)
    assert err.startswith("kcheck: error: --out: ") and err.count("\n") == 1, err


def hashes(root) -> dict[str, str]:
    """Every stored file (manifest and Parquet), by path: what a resumed sweep must leave alone."""
    out = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            if name == "manifest.json" or name.endswith(".parquet"):
                with open(path, "rb") as f:
                    out[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


@pytest.fixture(scope="module")
def complete(tmp_path_factory):
    """A complete store of SPACE, written cell by cell without Spark, as the job writes it."""
    root = tmp_path_factory.mktemp("complete") / "store"
    store = ResultStore(str(root))
    store.open(SPACE, resume=False)
    for a, b in grid(0, len(SPACE), cell_size(len(SPACE))):
        store.write(SPACE.evaluate(a, b), SPACE.invariant_ids())
    return root


@pytest.fixture
def store_copy(complete, tmp_path):
    root = tmp_path / "store"
    shutil.copytree(complete, root)
    return root


# --- temporary files ------------------------------------------------------------------------------------------


def test_log4j_configuration_is_private_and_fresh(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(job, "_log4j_path", None)
    old = tmp_path / f"kcheck-log4j2-{os.getuid()}.properties"  # the fixed names earlier versions used
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.symlink(victim, str(old) + ".tmp")
    old.write_text("rootLogger.level = all\n")  # planted by someone else
    path = job._quiet_log4j()
    assert victim.read_text() == "precious\n" and old.read_text() == "rootLogger.level = all\n"
    assert os.path.realpath(path) != os.path.realpath(old) and not os.path.islink(path)
    with open(path) as f:
        assert f.read() == job._LOG4J
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert os.path.dirname(os.path.dirname(path)) == str(tmp_path)  # a fresh directory of its own
    assert job._quiet_log4j() == path  # one per process
    job._drop_log4j()  # what spark_session does once the JVM has read it
    assert not os.path.exists(os.path.dirname(path)) and job._quiet_log4j() != path
    job._drop_log4j()


def test_java_options_do_not_reach_stderr(monkeypatch):
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Xss4m")
    monkeypatch.delenv("_JAVA_OPTIONS", raising=False)
    assert job._java_options_off_stderr("-Dx=1") == "-Xss4m -Dx=1"
    assert "JAVA_TOOL_OPTIONS" not in os.environ  # else the JVM prints "Picked up JAVA_TOOL_OPTIONS" on stderr


# --- one run at a time ------------------------------------------------------------------------------------------


HOLD = ("import sys, time\nfrom kcheck.spark_check.store import ResultStore\n"
        "lock = ResultStore(sys.argv[1]).lock()\nprint('held', flush=True)\ntime.sleep(120)\n")


def test_a_second_run_is_refused_while_the_first_holds_the_lock(capsys, store_copy):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(store_copy)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        assert (store_copy / LOCK_NAME).read_text().startswith(f"pid {holder.pid} on {socket.gethostname()}, ")
        for tasks in ("2", "5"):
            code, out, err = run(capsys, *SPACE_ARGS, "--out", str(store_copy), "--resume", "--tasks", tasks)
            one_line_error(code, out, err)
            assert f"is in use by another sweep (pid {holder.pid} on {socket.gethostname()}, started " in err
        with pytest.raises(StoreError, match="in use by another sweep"):
            ResultStore(str(store_copy)).lock()
    finally:
        holder.kill()  # SIGKILL: no clean-up; the kernel drops the flock with the process
        holder.wait()
    lock = ResultStore(str(store_copy)).lock()  # a dead holder blocks nobody
    with pytest.raises(StoreError, match=f"pid {os.getpid()} "):  # the holder's line is rewritten
        ResultStore(str(store_copy)).lock()
    lock.release()
    ResultStore(str(store_copy)).lock().release()


def test_no_lock_file_lands_in_a_foreign_directory(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    for resume in ([], ["--resume"]):
        one_line_error(*run(capsys, *SPACE_ARGS, "--out", str(tmp_path), *resume))
    assert os.listdir(tmp_path) == ["notes.txt"]


def test_stored_ranges_do_not_depend_on_the_task_count():
    size = 1_234_567
    cell = cell_size(size)
    for stored in ([], [(0, cell), (5 * cell, 9 * cell)], [(0, 123)]):  # the last: an older version's range
        pieces = {tuple(p) for tasks in (1, 3, 7, 64, 1000) for t in plan(size, stored, tasks)
                  for p in grid(*t, cell)}
        flat = sorted(pieces)
        assert all(b <= c for (_, b), (c, _) in zip(flat, flat[1:], strict=False))  # never overlap
        covered = sorted([*stored, *flat])
        assert covered[0][0] == 0 and covered[-1][1] == size
        assert sum(b - a for a, b in covered) == size
    assert plan(8_670, [], 7) == [(0, 1000), (1000, 2000), (2000, 3000), (3000, 5000), (5000, 6000), (6000, 7000),
                                  (7000, 8670)]


def test_a_store_killed_before_its_manifest_resumes(tmp_path):
    root = tmp_path / "store"
    for name in ("violations", "metrics"):
        (root / name).mkdir(parents=True)
    (root / ".tmp-0123-manifest.json").write_text("{")  # the manifest's temporary file, never renamed
    assert ResultStore(str(root)).open(SPACE, resume=True)["size"] == len(SPACE)
    assert ResultStore(str(root)).load(len(SPACE)).missing == [(0, len(SPACE))]


# --- stored data is never rewritten; a damaged store is refused ----------------------------------------------


def test_resume_of_a_complete_store_rewrites_nothing(capsys, store_copy):
    before = hashes(store_copy)
    code, out, err = run(capsys, *SPACE_ARGS, "--out", str(store_copy), "--resume", "--tasks", "3")
    assert code in (0, 1) and err == "" and "This run: 0 configurations" in out
    assert hashes(store_copy) == before and (store_copy / "report.md").exists()


def _damage(root, how: str) -> str:
    name = sorted(os.listdir(root / "violations"))[1]
    path = root / ("metrics" if how == "metrics-garbage" else "violations") / name
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how in ("garbage", "metrics-garbage"):
        path.write_bytes(b"PAR1 this is not Parquet\n" * 20)
    elif how == "wrong-schema":
        pq.write_table(pa.table({"invariant": ["x"], "checked": [1.5]}), path)
    return str(path)


@pytest.mark.parametrize("how", ["truncated", "empty", "garbage", "wrong-schema", "metrics-garbage"])
def test_a_damaged_parquet_file_is_refused_in_one_line(capsys, store_copy, how):
    path = _damage(store_copy, how)
    before = hashes(store_copy)
    code, out, err = run(capsys, *SPACE_ARGS, "--out", str(store_copy), "--resume")
    one_line_error(code, out, err)
    assert f"{path} is damaged (" in err and f"delete violations/{os.path.basename(path)} and resume" in err
    assert hashes(store_copy) == before


@pytest.mark.parametrize("text, message", [
    (b"[1, 2]", "manifest.json is not a kcheck sweep manifest"),
    (b'{"name": "placement"}', "manifest.json is not a kcheck sweep manifest"),
    (b"\xff\xfe garbage \x00", "manifest.json is not valid JSON"),
    (b"", "manifest.json is not valid JSON"),
])
def test_a_damaged_manifest_is_refused_in_one_line(capsys, store_copy, text, message):
    (store_copy / "manifest.json").write_bytes(text)
    before = hashes(store_copy)
    code, out, err = run(capsys, *SPACE_ARGS, "--out", str(store_copy), "--resume")
    one_line_error(code, out, err)
    assert f"{store_copy}/{message}" in err and hashes(store_copy) == before


@pytest.mark.parametrize("sub", ["", "violations"])
def test_a_read_only_store_is_refused_before_computing(capsys, store_copy, monkeypatch, sub):
    for name in os.listdir(store_copy / "violations")[:3]:
        os.remove(store_copy / "violations" / name)  # ranges left to compute
    read_only = store_copy / sub if sub else store_copy
    mode = os.stat(read_only).st_mode
    os.chmod(read_only, 0o555)
    if os.geteuid() == 0:  # root writes anywhere: let os.access answer as for anyone else
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, m, **kw: os.fspath(p) != str(read_only) and real(p, m, **kw))
    try:
        code, out, err = run(capsys, *SPACE_ARGS, "--out", str(store_copy), "--resume")
    finally:
        os.chmod(read_only, mode)
    one_line_error(code, out, err)
    assert str(read_only) in err and "writable" in err
