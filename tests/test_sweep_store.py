"""The Parquet result store: round trips, whole ranges only, refusals that protect earlier results, coverage."""

from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest

from kcheck.spark_check.batch import merge
from kcheck.spark_check.placement_space import PLACEMENT_PRESETS, PlacementSpace, parse_placement_bounds
from kcheck.spark_check.store import ResultStore, StoreError, describe_space, gaps, split

SPACE = PlacementSpace(PLACEMENT_PRESETS["small"], ["adminutils", "striped"])


def _norm(result):
    return ({k: v for k, v in result.checked.items() if v}, {k: v for k, v in result.violated.items() if v},
            # details are stored as JSON: keys such as broker ids come back as strings
            {k: (f.config_id, dict(f.config), f.where, f.message, json.loads(json.dumps(dict(f.detail))))
             for k, f in result.first.items()},
            {k: dict(v) for k, v in result.metrics.items()})


def test_round_trip_of_every_range(tmp_path):
    store = ResultStore(str(tmp_path / "out"))
    store.open(SPACE, resume=False)
    cuts = [0, 1_000, 4_321, 8_670, len(SPACE)]
    results = [SPACE.evaluate(a, b) for a, b in zip(cuts, cuts[1:], strict=False)]
    for r in reversed(results):  # any order
        store.write(r, SPACE.invariant_ids())
    stored = store.load(len(SPACE))
    assert stored.complete and stored.ranges == list(zip(cuts, cuts[1:], strict=False))
    assert _norm(stored.result) == _norm(merge(results))
    # the datasets are plain Parquet: pyarrow reads each as one table
    table = pq.read_table(str(tmp_path / "out" / "violations"))
    assert table.num_rows == 4 * len(SPACE.invariant_ids())
    assert sum(table.column("checked").to_pylist()[i] for i in range(table.num_rows)
               if table.column("invariant")[i].as_py().endswith("/placement.placer-error")) == len(SPACE)


def test_missing_ranges_are_reported_and_partial_files_ignored(tmp_path):
    root = tmp_path / "out"
    store = ResultStore(str(root))
    store.open(SPACE, resume=False)
    store.write(SPACE.evaluate(0, 500), SPACE.invariant_ids())
    store.write(SPACE.evaluate(900, 1_000), SPACE.invariant_ids())
    # a sweep killed mid-write leaves a hidden temporary file, or a metrics file without its violations file
    (root / "violations" / ".tmp-abc-000000000000500-000000000000900.parquet").write_bytes(b"partial")
    r = SPACE.evaluate(500, 900)
    ResultStore(str(root)).write(r, SPACE.invariant_ids())
    os.remove(root / "violations" / "000000000000500-000000000000900.parquet")
    stored = store.load(len(SPACE))
    assert stored.ranges == [(0, 500), (900, 1_000)]
    assert stored.missing == [(500, 900), (1_000, len(SPACE))]
    assert not stored.complete and stored.configurations == 600
    assert stored.result.checked["adminutils/placement.placer-error"] == 600


def test_overlapping_ranges_are_refused(tmp_path):
    store = ResultStore(str(tmp_path))
    store.open(SPACE, resume=False)
    store.write(SPACE.evaluate(0, 500), SPACE.invariant_ids())
    store.write(SPACE.evaluate(400, 600), SPACE.invariant_ids())
    with pytest.raises(StoreError, match=r"ranges \[0, 500\) and \[400, 600\) overlap"):
        store.load(len(SPACE))


def test_open_protects_earlier_results(tmp_path):
    root = tmp_path / "out"
    ResultStore(str(root)).open(SPACE, resume=False)
    with pytest.raises(StoreError, match="already holds results"):
        ResultStore(str(root)).open(SPACE, resume=False)
    assert ResultStore(str(root)).open(SPACE, resume=True)["fingerprint"] == describe_space(SPACE)["fingerprint"]
    other = PlacementSpace(parse_placement_bounds("small,brokers=1..4"), ["adminutils", "striped"])
    with pytest.raises(StoreError, match=r"holds a different sweep: bounds .*\[1, 5\].* there, .*\[1, 4\].* now"):
        ResultStore(str(root)).open(other, resume=True)
    fewer = PlacementSpace(PLACEMENT_PRESETS["small"], ["adminutils"])
    with pytest.raises(StoreError, match="size"):
        ResultStore(str(root)).open(fewer, resume=True)


def test_open_refuses_foreign_directories(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match="already holds results"):
        ResultStore(str(tmp_path)).open(SPACE, resume=False)
    with pytest.raises(StoreError, match="has no manifest.json"):
        ResultStore(str(tmp_path)).open(SPACE, resume=True)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(StoreError, match="not a directory"):
        ResultStore(str(file)).open(SPACE, resume=True)


def test_resume_of_nothing_starts_a_new_store(tmp_path):
    manifest = ResultStore(str(tmp_path / "new")).open(SPACE, resume=True)
    on_disk = json.loads((tmp_path / "new" / "manifest.json").read_text())
    assert on_disk == manifest and on_disk["size"] == len(SPACE) and on_disk["name"] == "placement"
    assert on_disk["bounds"]["brokers"] == [1, 5]


def test_gaps_and_split():
    assert gaps([], 10) == [(0, 10)]
    assert gaps([(2, 4), (0, 1), (4, 6)], 10) == [(1, 2), (6, 10)]
    assert gaps([(0, 10)], 10) == []
    assert split([(0, 10)], 3) == [(0, 4), (4, 8), (8, 10)]
    pieces = split([(0, 100), (150, 160)], 11)
    assert pieces[-1] == (150, 160) and sum(b - a for a, b in pieces) == 110
    assert all(b <= 100 or a >= 150 for a, b in pieces)  # never across a stored range
    assert split([], 4) == []
