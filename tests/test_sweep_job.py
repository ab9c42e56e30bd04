"""The Spark job at the `small` preset in local mode: totals, a sweep killed halfway and resumed, `kcheck sweep`.

One local[2] SparkSession for the module (startup ~5-10 s). Deselect with `-m "not spark"`.
Expected totals come from evaluating the same space directly, without Spark (whose own
correctness against the scalar reference is tests/test_sweep_vector.py).
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kcheck.cli import main
from kcheck.spark_check.batch import merge
from kcheck.spark_check.job import plan, run_ranges, spark_session, sweep
from kcheck.spark_check.placement_space import PLACEMENT_PRESETS, PlacementSpace, parse_placement_bounds
from kcheck.spark_check.store import ResultStore, StoreError

pytestmark = pytest.mark.spark

SMALL = PlacementSpace(PLACEMENT_PRESETS["small"], ["adminutils", "striped"])


@pytest.fixture(scope="session")
def spark():
    session = spark_session("local[2]", progress=False)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def direct():
    """The small space evaluated in this process, in a few ranges, merged."""
    n = len(SMALL)
    return merge(SMALL.evaluate(a, min(n, a + 3_000)) for a in range(0, n, 3_000))


def _totals(result):
    return ({k: v for k, v in result.checked.items() if v}, {k: v for k, v in result.violated.items() if v},
            {k: f.config_id for k, f in result.first.items()}, {k: dict(v) for k, v in result.metrics.items()})


@pytest.mark.slow  # a Spark sweep of the small preset (~8 s); the end-to-end sweep stays in the fast run
def test_sweep_checks_every_configuration_once(spark, tmp_path, direct):
    outcome = sweep(SMALL, ResultStore(str(tmp_path)), spark=spark, tasks=7)
    assert outcome.job.ranges == 7 and outcome.job.configurations == len(SMALL)
    assert outcome.stored.complete and outcome.stored.configurations == len(SMALL)
    assert _totals(outcome.stored.result) == _totals(direct)
    per_placer = [outcome.stored.result.checked[f"{p}/placement.placer-error"] for p in ("adminutils", "striped")]
    assert sum(per_placer) == len(SMALL)


def test_killed_halfway_then_resumed_gives_the_same_totals(spark, tmp_path, direct):
    store = ResultStore(str(tmp_path))
    store.open(SMALL, resume=False)
    ranges = plan(len(SMALL), [], 10)
    run_ranges(spark, SMALL, store, ranges[:5])  # the job died after half of its tasks
    partial = store.load(len(SMALL))
    assert not partial.complete and partial.configurations == sum(b - a for a, b in ranges[:5])
    outcome = sweep(SMALL, store, resume=True, spark=spark, tasks=3)
    assert outcome.resumed_ranges == 5
    assert outcome.job.configurations == len(SMALL) - partial.configurations  # only the gaps were computed
    assert outcome.stored.complete
    assert _totals(outcome.stored.result) == _totals(direct)
    again = sweep(SMALL, store, resume=True, spark=spark)  # nothing left: no Spark job at all
    assert again.job.ranges == 0 and _totals(again.stored.result) == _totals(direct)


def test_kcheck_sweep_end_to_end(spark, capsys, tmp_path):
    out = str(tmp_path / "sweep")
    code = main(["sweep", "placement", "--space", "small", "--placer", "adminutils,striped", "--out", out])
    stdout, _ = capsys.readouterr()
    assert code == 0  # no hard invariant and no guarantee of Kafka's placers breaks on the small clusters
    assert "Verified: " in stdout and f"cover all {len(SMALL):,} configurations" in stdout
    assert "placement.follower-spread" in stdout and "finding" in stdout
    assert os.path.exists(os.path.join(out, "report.md"))
    assert os.path.exists(os.path.join(out, "leader-skew.png"))
    code = main(["sweep", "placement", "--space", "small", "--placer", "adminutils,striped", "--out", out])
    _, err = capsys.readouterr()
    assert code == 2 and "already holds results" in err
    code = main(["sweep", "placement", "--space", "small", "--placer", "adminutils,striped", "--out", out,
                 "--resume"])
    stdout2, _ = capsys.readouterr()
    assert code == 0 and "This run: 0 configurations" in stdout2


@pytest.mark.slow  # a whole Spark sweep (~35 s)
def test_sweep_judges_a_hard_violation_as_check_does(tmp_path):
    """One rule for `check` and `sweep` (registry.fails_when_violated): Kafka's AdminUtils breaking the hard
    placement.rack-distribution, which Kafka does not promise, is a finding (as in `check`); the same placements
    from a user's placer fail the sweep, exit 1 (its own Spark, so the executors import the placer from
    PYTHONPATH). 5 brokers in 2 racks with RF 4: Kafka's 3+2 rack finding."""
    (tmp_path / "same_as_kafka.py").write_text(
        "from kcheck.reference.placement import assign_replicas_to_brokers as place\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "kcheck", "sweep", "placement", "--placer",
                        "adminutils,same_as_kafka:place", "--space", "brokers=5,racks=2,partitions=1,rf=4",
                        "--out", str(tmp_path / "sweep")], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 1, r.stderr
    assert ("FAIL: 1 invariant(s) that must hold are violated (same_as_kafka:place/placement.rack-distribution)"
            in r.stdout)
    row = next(line for line in r.stdout.splitlines()
               if "adminutils" in line and "placement.rack-distribution" in line)
    assert "finding" in row and "FAILED" not in row


def _hashes(root) -> dict[str, str]:
    """Manifest and Parquet files by path: what a resumed sweep must leave alone."""
    return {os.path.relpath(os.path.join(d, n), root): hashlib.sha256(Path(d, n).read_bytes()).hexdigest()
            for d, _, names in os.walk(root) for n in names if n == "manifest.json" or n.endswith(".parquet")}


@pytest.mark.slow  # three Spark sweeps (~10 s)
def test_resumes_with_different_task_counts_never_overlap(spark, tmp_path, direct):
    """Two resumes planned from one stored state with different --tasks (two at once on a store without a lock)
    write the same grid cells; the lock refuses the second on a local store; nothing stored is rewritten."""
    size = len(SMALL)
    store = ResultStore(str(tmp_path))
    store.open(SMALL, resume=False)
    run_ranges(spark, SMALL, store, plan(size, [], 10)[:4])  # a run killed after 4 of its tasks
    before = store.stored_ranges()
    run_ranges(spark, SMALL, store, plan(size, before, 3)[:1])  # two resumes, both killed part-way
    run_ranges(spark, SMALL, store, plan(size, before, 7)[:3])
    assert not store.load(size).complete  # no overlap
    stored = _hashes(tmp_path)
    held = ResultStore(str(tmp_path)).lock()
    with pytest.raises(StoreError, match=f"in use by another sweep \\(pid {os.getpid()} "):
        sweep(SMALL, ResultStore(str(tmp_path)), resume=True, spark=spark, tasks=5)
    held.release()
    assert _hashes(tmp_path) == stored
    outcome = sweep(SMALL, store, resume=True, spark=spark, tasks=5)
    assert outcome.stored.complete and _totals(outcome.stored.result) == _totals(direct)
    after = _hashes(tmp_path)
    assert {k: after[k] for k in stored} == stored  # stored ranges and manifest untouched, new ranges added


def test_a_store_of_empty_folders_resumes(spark, tmp_path, direct):
    for name in ("violations", "metrics"):  # killed after creating them, before the manifest
        (tmp_path / name).mkdir()
    outcome = sweep(SMALL, ResultStore(str(tmp_path)), resume=True, spark=spark, tasks=4)
    assert outcome.stored.complete and _totals(outcome.stored.result) == _totals(direct)


@pytest.mark.slow
def test_a_killed_kcheck_sweep_process_resumes(spark, tmp_path):
    """A real kill: SIGKILL a `kcheck sweep` process once it has stored some ranges, then resume here."""
    space = PlacementSpace(parse_placement_bounds("small,brokers=1..6,partitions=1..8"), ["adminutils", "striped"])
    out = str(tmp_path / "killed")
    cmd = [sys.executable, "-m", "kcheck", "sweep", "placement", "--space", "small,brokers=1..6,partitions=1..8",
           "--placer", "adminutils,striped", "--out", out, "--master", "local[1]", "--tasks", "60"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and len(ResultStore(out).stored_ranges()) < 3:
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole process group: Python, its JVM, Spark's workers
        proc.wait()
    stored = ResultStore(out).load(len(space))
    assert 0 < stored.configurations < len(space)
    outcome = sweep(space, ResultStore(out), resume=True, spark=spark)
    expected = merge(space.evaluate(a, min(len(space), a + 5_000)) for a in range(0, len(space), 5_000))
    assert outcome.stored.complete and _totals(outcome.stored.result) == _totals(expected)


@pytest.mark.slow  # a Spark sweep that fails (~30 s)
def test_a_users_placer_that_fails_in_a_sweep_is_one_line_exit_2(tmp_path):
    """The sweep stores and reports every configuration, then names the plug-in, its exception and the smallest
    configuration where it failed, in one stderr line with exit 2 (its own Spark, so the executors import the
    placer from PYTHONPATH)."""
    (tmp_path / "half_placer.py").write_text(
        "def place(brokers, n, rf, start=-1, first=-1, random=None):\n"
        "    if n == 2:\n"
        "        raise ValueError('two partitions are too many')\n"
        "    return {p: [b.id if hasattr(b, 'id') else b for b in brokers][:rf] for p in range(n)}\n")
    out = tmp_path / "sweep"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "kcheck", "sweep", "placement", "--placer", "half_placer:place",
                        "--space", "brokers=3,racks=1,partitions=2,rf=2", "--out", str(out)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()  # the JVM's start-up warning about incubator modules is not among them
    assert len(lines) == 1 and lines[0].startswith("kcheck: error: plug-in half_placer:place: sweep configuration ")
    assert "ValueError: two partitions are too many" in lines[0] and "Traceback" not in r.stderr
    assert (out / "report.md").exists() and (out / "report.html").exists()  # nothing computed is lost
