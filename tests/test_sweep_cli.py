"""`kcheck sweep`: bad input is one line and exit 2 before any Spark starts; the report and its table rows.

Runs of the Spark job itself are in tests/test_sweep_job.py (mark `spark`).
"""

from __future__ import annotations

import pytest

from kcheck.cli import main
from kcheck.spark_check.placement_space import PLACEMENT_PRESETS, PlacementSpace, parse_placement_bounds
from kcheck.spark_check.report import failures, invariant_rows, metric_stats, split_key, write_markdown
from kcheck.spark_check.store import ResultStore


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("args, message", [
    (["sweep", "placements"], "SPACE: 'placements' is not one of placement, assignors"),
    (["sweep", "placement", "--space", "huge"], "--space: unknown preset 'huge'"),
    (["sweep", "placement", "--space", "brokers=3..1"], "--space: brokers=3..1 is not a range"),
    (["sweep", "placement", "--space", "brokers=1,rf=2"], "--space: 'brokers=1,rf=2' holds no configuration"),
    (["sweep", "placement", "--placer", "nope"], "--placer: unknown placer 'nope'"),
    (["sweep", "placement", "--placer", "no_such_module:placer"], "--placer: cannot import module 'no_such_module'"),
    (["sweep", "placement", "--placer", "adminutils,adminutils"], "--placer: placer listed twice"),
    (["sweep", "placement", "--assignor", "range"], "--assignor: only applies to `kcheck sweep assignors`"),
    (["sweep", "assignors", "--placer", "striped"], "--placer: only applies to `kcheck sweep placement`"),
    (["sweep", "placement", "--tasks", "0"], "Invalid value for '--tasks'"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, args, message):
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith("kcheck: error: ") and message in err and err.count("\n") == 1, err


def test_an_earlier_sweep_is_never_overwritten(capsys, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "results.parquet").write_bytes(b"somebody's data")
    code, _, err = run(capsys, "sweep", "placement", "--space", "small", "--out", str(out_dir))
    assert code == 2 and "already holds results (pass --resume" in err and err.count("\n") == 1
    code, _, err = run(capsys, "sweep", "placement", "--space", "small", "--out", str(out_dir), "--resume")
    assert code == 2 and "has no manifest.json" in err
    assert (out_dir / "results.parquet").read_bytes() == b"somebody's data"


def test_resume_refuses_a_different_space(capsys, tmp_path):
    ResultStore(str(tmp_path)).open(PlacementSpace(PLACEMENT_PRESETS["small"]), resume=False)
    code, _, err = run(capsys, "sweep", "placement", "--space", "small,rf=1..2", "--out", str(tmp_path), "--resume")
    assert code == 2 and "holds a different sweep: bounds" in err and err.count("\n") == 1
    code, _, err = run(capsys, "sweep", "placement", "--space", "small", "--placer", "striped", "--out",
                       str(tmp_path), "--resume")
    assert code == 2 and "holds a different sweep" in err


def test_split_key():
    assert split_key("adminutils/placement.rack-diversity") == ("adminutils", "placement.rack-diversity")
    assert split_key("placement.rack-diversity") == ("", "placement.rack-diversity")
    assert split_key("my.module:placer/placement.placer-error") == ("my.module:placer", "placement.placer-error")


def test_metric_stats_by_hand():
    # 3 configurations at 0, 1 at 2, 1 at 10: mean 12/5, median 0, 99th percentile 10
    assert metric_stats({0: 3, 2: 1, 10: 1}) == {"configurations": 5, "mean": 2.4, "min": 0, "max": 10,
                                                  "median": 0, "p99": 10}


def test_report_rows_and_markdown(tmp_path):
    space = PlacementSpace(parse_placement_bounds("brokers=5,racks=2,partitions=1..2,rf=3..4"),
                           ["adminutils", "striped"])
    result = space.evaluate(0, len(space))
    rows = {r.key: r for r in invariant_rows(space, result)}
    rd = rows["adminutils/placement.rack-distribution"]
    assert rd.violated and not rd.fails and rd.guaranteed is False  # hard, but Kafka does not promise it: a finding
    assert rows["adminutils/placement.leader-spread"].guaranteed is True  # AdminUtils' round-robin leaders
    assert rows["striped/placement.leader-unfenced"].checked == 0  # no fenced broker in the space
    assert [r.key for r in failures(list(rows.values()))] == []  # as `kcheck check` judges it
    path = write_markdown(str(tmp_path), space, result, {"space": "test"})
    text = open(path).read()
    assert "| adminutils | placement.rack-distribution | hard | no |" in text
    assert rd.first is not None and rd.first.config["replay"] in text  # the command that replays the smallest
    for name in ("leader-skew", "rack-spread", "moved-partitions"):  # one picture a metric, every placer in it
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({name}.png)" in text
