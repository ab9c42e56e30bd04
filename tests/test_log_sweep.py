"""`kcheck sweep-log` (kcheck.spark_check.log_sweep): the storage simulation over topic configs x workloads.

Expectations from Kafka's documented compaction guarantee ("Log Compaction": a consumer that reaches the head
within delete.retention.ms sees every delete): across a grid of delete.retention.ms x consumer lag, no cell whose
consumer lags at most delete.retention.ms loses a tombstone, so the smallest lag that does is above
delete.retention.ms; and a lag far above it does lose one. The Spark path gives the same rows as the in-process
one (marked `spark`: one local session).
"""

from __future__ import annotations

import json

import pytest

from kcheck.cli import main
from kcheck.simulation.storage import CONSUMER_INVARIANT, ConfigError
from kcheck.spark_check.log_sweep import (
    LogGrid,
    invariant_rows,
    parse_axis,
    sweep_python,
    sweep_spark,
    threshold_axis,
    thresholds,
)

CONFIG = (("cleanup.policy", "compact"), ("segment.bytes", "20000"), ("segment.ms", "10000"),
          ("min.cleanable.dirty.ratio", "0.1"))
WORKLOAD = (("rate", "20"), ("record.bytes", "30"), ("keys", "300"), ("tombstone.share", "0.4"),
            ("duration", "100s"), ("seed", "3"))
GRID = LogGrid(CONFIG, WORKLOAD, (("delete.retention.ms", ("2000", "6000")),
                                  ("consumer.lag.ms", ("0", "2000", "6000", "40000"))))


@pytest.fixture(scope="module")
def rows() -> list:
    return sweep_python(GRID)


def test_parse_axis() -> None:
    assert parse_axis("consumer.lag.ms=0..20s/5s") == ("consumer.lag.ms", ("0", "5000", "10000", "15000", "20000"))
    assert parse_axis("cleanup.policy=compact,[compact,delete]") == ("cleanup.policy", ("compact", "[compact,delete]"))
    assert parse_axis("delete.retention.ms=100..300/100") == ("delete.retention.ms", ("100", "200", "300"))
    for bad, key in [("nope=1", "nope"), ("segment.ms", "segment.ms"), ("segment.ms=5..1/1", "segment.ms")]:
        with pytest.raises(ConfigError) as e:
            parse_axis(bad)
        assert e.value.key == key


def test_grid_cells_cover_the_product() -> None:
    assert len(GRID) == 8
    seen = {tuple(GRID.params(i).items()) for i in range(len(GRID))}
    assert len(seen) == 8
    cfg, wl = GRID.cell(7)
    assert cfg.delete_retention_ms == 6000 and wl.consumer_lag_ms == 40000 and cfg.compact


def test_no_tombstone_lost_within_delete_retention_and_one_lost_far_beyond(rows: list) -> None:
    for r in rows:
        lag, d = int(r.params["consumer.lag.ms"]), int(r.params["delete.retention.ms"])
        assert r.promised == (lag <= d)
        if lag <= d:
            assert not r.violated, (r.params, r.first)
        # no log.* invariant breaks anywhere
        assert set(r.violated) <= {CONSUMER_INVARIANT}
    inv = {x.invariant: x for x in invariant_rows(rows)}
    assert inv[CONSUMER_INVARIANT].failing == 0
    assert inv[CONSUMER_INVARIANT].broken >= 1  # 40 s behind with delete.retention.ms=2000: the incident
    axis = threshold_axis(GRID)
    assert axis == "consumer.lag.ms"
    names, ths = thresholds(GRID, rows, axis)
    by_d = {t.others["delete.retention.ms"]: t.smallest.get(CONSUMER_INVARIANT) for t in ths}
    assert by_d["2000"] is not None
    for d, smallest in by_d.items():
        assert smallest is None or int(smallest) > int(d)


def test_cli_sweep_log_python_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["sweep-log", "--python", "--json", *(x for k, v in CONFIG for x in ("--config", f"{k}={v}")),
            *(x for k, v in WORKLOAD if k != "duration" for x in ("-w", f"{k}={v}")), "-w", "duration=60s",
            "--axis", "delete.retention.ms=1000", "--axis", "consumer.lag.ms=0,1000"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["cells"] == 2 and doc["ok"] and doc["threshold_axis"] == "consumer.lag.ms"
    assert [r["params"]["consumer.lag.ms"] for r in doc["rows"]] == ["0", "1000"]


@pytest.mark.parametrize("args, key", [
    (["--axis", "nope=1"], "nope"),
    (["--axis", "segment.bytes=1,2"], "segment.bytes"),
    (["--axis", "consumer.lag.ms=0", "--threshold", "keys"], "--threshold"),
    (["-w", "nope=1"], "nope"),
])
def test_cli_sweep_log_bad_input(args: list[str], key: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep-log", "--python", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and key in err


@pytest.mark.spark
def test_spark_rows_equal_python_rows() -> None:
    small = LogGrid(CONFIG, WORKLOAD, (("delete.retention.ms", ("2000",)), ("consumer.lag.ms", ("0", "40000"))))
    key = [(r.index, r.params, r.violated, r.promised, r.records) for r in sweep_python(small)]
    spark_rows = sweep_spark(small, "local[2]")
    assert [(r.index, r.params, r.violated, r.promised, r.records) for r in spark_rows] == key
    assert key[1][2].get(CONSUMER_INVARIANT)  # the lagging cell breaks it, on both paths
