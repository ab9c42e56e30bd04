"""The Spark-distributed exhaustive search (`kcheck.spark_check.exhaust.spark_exhaust`) against the one-process
engine (`kcheck.model.search.exhaust`): on complete runs the same states, transitions and depth; on the first
violating level a shortest counterexample that re-executes; the caps; the visited set never shuffled.

Default run: one local[2] session for the file and small bounds. The standalone-cluster run (a real Master and
Worker on 127.0.0.1, tests/test_spark_standalone.py's fixture) and the replication model's small exhaustive bounds
are marked slow."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from kcheck.check import SMALL_EXHAUSTIVE_BOUNDS
from kcheck.invariants.replication_model_adapter import ReplicationModel
from kcheck.invariants.storage_model import StorageModel
from kcheck.model.replication import VARIANTS, Config, Protocol
from kcheck.model.search import _violated, exhaust, replay_path
from kcheck.model.storage import VARIANTS as STORAGE_VARIANTS
from kcheck.model.storage import Config as StorageConfig

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark")

# A standalone Master and Worker on 127.0.0.1 (module scope, killed by PID), started only by the slow test using it.
from test_spark_standalone import _clean_env, standalone  # noqa: E402, F401

# Each BFS level is one Spark job of two stages, so the default run keeps to few levels.
# brokers 3, RF 1: brokers 2 and 3 hold no replica and are interchangeable, so symmetry merges states
# (30 states with it, 42 without, 6 levels); the slow run's 603 states (1,057 without) take 10 levels.
TINY_SYMMETRIC = Config(**{**SMALL_EXHAUSTIVE_BOUNDS, "brokers": 3, "replication_factor": 1, "records": 1,
                           "crashes": 1})
SYMMETRIC_SETTINGS = {**SMALL_EXHAUSTIVE_BOUNDS, "brokers": 3, "replication_factor": 1, "records": 2, "crashes": 1,
                      "max_leader_epoch": 2, "fences": 1}
SYMMETRIC = Config(**SYMMETRIC_SETTINGS)
# two interchangeable keys (47 states, 93 without symmetry, 5 levels); the slow run: 560 states, 12 levels
TINY_STORAGE = StorageConfig(keys=2, records=2, max_segments=1, max_clock=0, consumer=False, retention=False,
                             crashes=0)
STORAGE = StorageConfig(keys=1, records=2, max_segments=2, max_clock=0, consumer=False, retention=True, crashes=1)


@pytest.fixture(scope="module")
def spark():
    import shutil

    if shutil.which("java") is None:
        pytest.skip("java is not on PATH")
    from kcheck.spark_check.job import spark_session

    session = spark_session("local[2]", progress=False)
    try:
        yield session
    finally:
        session.stop()


def _same_as_one_process(got, want) -> None:
    assert got.complete and want.complete, (got, want)
    assert (got.states, got.transitions, got.depth) == (want.states, want.transitions, want.depth), (got, want)
    assert got.frontier_peak == want.frontier_peak and got.counterexample is None


@pytest.mark.parametrize("cfg", [TINY_SYMMETRIC, pytest.param(SYMMETRIC, marks=pytest.mark.slow)],
                         ids=["tiny", "603-states"])
@pytest.mark.slow  # a Spark job per level (~20 s)
def test_replication_model_with_symmetry_matches_the_one_process_engine(spark, cfg: Config) -> None:
    from kcheck.spark_check.exhaust import spark_exhaust

    factory = partial(ReplicationModel, Protocol.current(), cfg)
    assert factory().symmetry_off is None  # the reduction is in use
    want = exhaust(factory())
    assert want.states < exhaust(ReplicationModel(Protocol.current(), cfg, symmetry=False)).states
    seen = []
    got = spark_exhaust(factory, partitions=3, progress=lambda r: seen.append(r.states))
    _same_as_one_process(got, want)
    assert seen == sorted(seen) and seen[-1] == want.states  # a figure per level, the last one complete


@pytest.mark.parametrize("cfg", [TINY_STORAGE, pytest.param(STORAGE, marks=pytest.mark.slow)],
                         ids=["tiny", "560-states"])
@pytest.mark.slow  # a Spark job per level (~12 s)
def test_storage_model_matches_the_one_process_engine(spark, cfg: StorageConfig) -> None:
    from kcheck.spark_check.exhaust import spark_exhaust

    factory = partial(StorageModel, cfg)
    if cfg.keys > 1:  # interchangeable keys: the reduction is in use
        assert exhaust(factory(), symmetry=False).states > exhaust(factory()).states
    _same_as_one_process(spark_exhaust(factory, partitions=2), exhaust(factory()))


@pytest.mark.parametrize("which", ["replication zombie-controller",
                                   pytest.param("storage clean-above-hw", marks=pytest.mark.slow)])
def test_a_violation_gives_a_shortest_trace_that_re_executes(spark, which: str) -> None:
    from kcheck.spark_check.exhaust import spark_exhaust

    kind, name = which.split()
    if kind == "replication":
        v = VARIANTS[name]
        factory = partial(ReplicationModel, v.protocol, Config(**v.settings))
    else:
        v = STORAGE_VARIANTS[name]
        factory = partial(StorageModel.for_variant, v)
    want = exhaust(factory())
    assert want.counterexample is not None
    runs = [spark_exhaust(factory, partitions=p) for p in ((1, 3) if kind == "replication" else (2,))]
    for got in runs:
        assert got.stopped_because == "violation" and not got.complete
        cx = got.counterexample
        assert cx is not None and cx.invariant in v.violates, cx
        assert len(cx.steps) == len(want.counterexample.steps)  # BFS: as short as the one-process engine's
        assert got.depth == len(cx.steps) - 1
        model = factory()
        actions = [[model.describe(a) for a in model.actions(s)].index(text)
                   for (_, s), (text, _) in zip(cx.steps, cx.steps[1:], strict=False)]
        again = replay_path(model, 0, actions)
        assert [t for t, _ in again] == [t for t, _ in cx.steps]
        assert _violated(list(model.invariants()), again[-1][1]) is not None
    # the smallest violating fingerprint of the first violating level: the same run whatever the partitioning
    assert len({tuple(t for t, _ in got.counterexample.steps) for got in runs}) == 1


def test_caps_stop_at_whole_levels(spark) -> None:
    from kcheck.spark_check.exhaust import spark_exhaust

    factory = partial(StorageModel, TINY_STORAGE)
    want = exhaust(factory(), max_depth=2)
    got = spark_exhaust(factory, max_depth=2, partitions=2)
    assert got.stopped_because == want.stopped_because == "max-depth"
    assert (got.states, got.depth) == (want.states, 2)
    # levels 0..2 fit in `cap` states and level 3 would pass it: the run covers exactly the first three levels
    cap = want.states
    assert exhaust(factory(), max_depth=3).states > cap
    capped = spark_exhaust(factory, max_states=cap, partitions=2)
    assert capped.stopped_because == "max-states" and not capped.complete
    assert capped.states == cap, capped
    # a deadline cancels the running job or stops between levels, whichever comes first: never complete
    late = spark_exhaust(factory, max_seconds=0.01, partitions=2)
    assert late.stopped_because == "max-seconds" and not late.complete and late.states < want.states


def test_the_visited_set_is_not_shuffled(spark) -> None:
    """Each level shuffles only the successors: the visited side of the union is a narrow dependency."""
    from kcheck.spark_check.exhaust import _first_level, _model_tools, _next_level

    factory = partial(StorageModel, TINY_STORAGE)
    model = factory()
    key, _ = _model_tools(model, True)
    s0 = next(iter(model.initial_states()))
    level0 = _first_level(spark.sparkContext, [(key(s0)[0], (0, 0, s0))], factory, 3).cache()
    level0.localCheckpoint()  # as the search does every level: the plan below starts at the stored blocks
    level0.count()
    level1 = _next_level(level0, factory, True, 3, False)
    plan = level1.toDebugString().decode()
    assert "PartitionerAwareUnionRDD" in plan and plan.count("ShuffledRDD") == 1, plan
    assert level1.getNumPartitions() == 3
    level0.unpersist()


def test_a_second_master_in_one_process_is_one_clear_error(spark) -> None:
    from kcheck.spark_check.exhaust import SparkExhaustError, spark_exhaust

    with pytest.raises(SparkExhaustError, match="runs in this process already") as info:
        spark_exhaust(partial(StorageModel, STORAGE), master="spark://127.0.0.1:1")
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="partitions"):
        spark_exhaust(partial(StorageModel, STORAGE), partitions=0)


@pytest.mark.slow
def test_replication_small_exhaustive_bounds_match(spark) -> None:
    from kcheck.spark_check.exhaust import spark_exhaust

    factory = partial(ReplicationModel, Protocol.current(), Config(**SMALL_EXHAUSTIVE_BOUNDS))
    _same_as_one_process(spark_exhaust(factory), exhaust(factory()))


_DRIVER = """
import json, sys
from functools import partial
from kcheck.invariants.replication_model_adapter import ReplicationModel
from kcheck.model.replication import Config, Protocol
from kcheck.spark_check.exhaust import spark_exhaust
cfg = Config(**json.loads(sys.argv[2]))
r = spark_exhaust(partial(ReplicationModel, Protocol.current(), cfg), sys.argv[1], partitions=2)
print(json.dumps({"complete": r.complete, "states": r.states, "transitions": r.transitions, "depth": r.depth}))
"""


@pytest.mark.slow
def test_on_a_standalone_cluster(standalone: str, tmp_path: Path) -> None:  # noqa: F811
    """A driver process (clean environment, as a user runs it) against a real standalone Master and Worker: the
    executors run on the Worker, the counts equal the one-process engine's."""
    done = subprocess.run([sys.executable, "-c", _DRIVER, standalone, json.dumps(SYMMETRIC_SETTINGS)],
                          cwd=tmp_path, env=_clean_env(), capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    want = exhaust(ReplicationModel(Protocol.current(), SYMMETRIC))
    assert got == {"complete": True, "states": want.states, "transitions": want.transitions, "depth": want.depth}
