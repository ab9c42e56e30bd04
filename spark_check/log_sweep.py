"""`kcheck sweep-log`: `kcheck log`'s simulation over a grid of topic configurations x workloads, on Spark.

A grid is a base topic config and workload (simulation/storage.py) and axes, each a config or workload key with the
values it takes; every cell of their product is one `simulate` run with every check on. The result per invariant:
how many cells break it and the smallest cell that does; and per combination of the other axes, the smallest
value of a threshold axis (by default the consumer's lag) that breaks each invariant, e.g. the smallest consumer
lag that makes a tombstone invisible for each delete.retention.ms.

Spark (`sweep_spark`) runs the cells as tasks of `parallelize(range(cells))`, local[2] by default or any
`--master`; `sweep_python` runs them in this process (small grids, tests). Both give the same rows.

Verdict (Kafka's documented semantics): a `log.*` invariant broken anywhere is a failure, and so is
`consumer.sees-latest` broken in a cell whose consumer lags at most delete.retention.ms behind the clock (Kafka
promises such a consumer every tombstone); broken in a cell lagging more (or by records), it is a finding.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcheck.simulation.storage import (
    CONFIG_KEYS,
    CONSUMER_INVARIANT,
    WORKLOAD_KEYS,
    ConfigError,
    TopicConfig,
    Workload,
    parse_duration,
    simulate,
)

THRESHOLD_AXES = ("consumer.lag.ms", "consumer.lag.records")

# The default grid: a compacted topic with small segments, a workload that deletes keys, and a consumer lagging
# 0..50 s for three delete.retention.ms values.
DEFAULT_CONFIG = (("cleanup.policy", "compact"), ("segment.bytes", "20000"), ("segment.ms", "10000"),
                  ("min.cleanable.dirty.ratio", "0.1"))
DEFAULT_WORKLOAD = (("rate", "20"), ("record.bytes", "50"), ("keys", "500"), ("tombstone.share", "0.3"),
                    ("duration", "3m"))
DEFAULT_AXES = (("delete.retention.ms", ("2000", "10000", "30000")),
                ("consumer.lag.ms", tuple(str(x) for x in range(0, 50_001, 5000))))


def parse_axis(text: str) -> tuple[str, tuple[str, ...]]:
    """'KEY=V1,V2,...' or 'KEY=LO..HI/STEP' (numbers or durations: 0..40s/5s) -> (key, values)."""
    key, eq, spec = text.partition("=")
    key = key.strip()
    if not eq or not spec.strip():
        raise ConfigError(key or text, "an axis is KEY=V1,V2,... or KEY=LO..HI/STEP")
    if key not in CONFIG_KEYS and key not in WORKLOAD_KEYS:
        raise ConfigError(key, f"unknown key (known: {', '.join([*CONFIG_KEYS, *WORKLOAD_KEYS])})")
    m = re.fullmatch(r"\s*([^.,/]+(?:\.\d+)?)\s*\.\.\s*([^/]+?)\s*/\s*(.+?)\s*", spec)
    if m:
        try:
            lo, hi, step = (parse_duration(x) for x in m.groups())
        except ValueError as e:
            raise ConfigError(key, str(e)) from None
        if step <= 0 or hi < lo:
            raise ConfigError(key, f"empty range {spec}")
        if (hi - lo) // step >= 10_000:
            raise ConfigError(key, f"range {spec} has more than 10,000 values")
        return key, tuple(str(v) for v in range(lo, hi + 1, step))
    values = tuple(v.strip() for v in re.findall(r"(?:[^,\[]|\[[^\]]*\])+", spec) if v.strip())
    if not values:
        raise ConfigError(key, "no value")
    if len(set(values)) != len(values):  # the same cells twice
        raise ConfigError(key, f"value '{next(v for v in values if values.count(v) > 1)}' is given twice")
    return key, values


@dataclass(frozen=True)
class LogGrid:
    config: tuple[tuple[str, str], ...]  # the base topic config, Kafka's names
    workload: tuple[tuple[str, str], ...]  # the base workload
    axes: tuple[tuple[str, tuple[str, ...]], ...]

    def __len__(self) -> int:
        n = 1
        for _, values in self.axes:
            n *= len(values)
        return n

    def params(self, index: int) -> dict[str, str]:
        """Cell `index`'s axis values (the last axis varies fastest)."""
        out: dict[str, str] = {}
        for key, values in reversed(self.axes):
            index, i = divmod(index, len(values))
            out[key] = values[i]
        return {k: out[k] for k, _ in self.axes}

    def cell(self, index: int) -> tuple[TopicConfig, Workload]:
        p = self.params(index)
        cpairs = [*self.config, *((k, v) for k, v in p.items() if k in CONFIG_KEYS)]
        wpairs = [*self.workload, *((k, v) for k, v in p.items() if k in WORKLOAD_KEYS)]
        return TopicConfig.from_pairs(cpairs), Workload.from_pairs(wpairs)

    def validate(self) -> None:
        """Every axis value parses (ConfigError naming the key otherwise): checked before any Spark starts."""
        TopicConfig.from_pairs(self.config)
        Workload.from_pairs(self.workload)
        for key, values in self.axes:
            for v in values:
                if key in CONFIG_KEYS:
                    TopicConfig.from_pairs([*self.config, (key, v)])
                else:
                    Workload.from_pairs([*self.workload, (key, v)])
        if len(self) == 0:
            raise ConfigError("--axis", "the grid holds no cell")


def default_grid() -> LogGrid:
    return LogGrid(DEFAULT_CONFIG, DEFAULT_WORKLOAD, DEFAULT_AXES)


@dataclass(frozen=True)
class CellResult:
    index: int
    params: dict[str, str]
    violated: dict[str, int]  # invariant -> violations in this cell
    first: dict[str, dict[str, Any]]  # invariant -> its first violation
    promised: bool  # the consumer lags at most delete.retention.ms behind the clock: Kafka promises its tombstones
    records: int
    seconds: float  # CPU seconds of the simulation


def run_cell(grid: LogGrid, index: int) -> CellResult:
    cfg, wl = grid.cell(index)
    began = time.process_time()
    sim = simulate(cfg, wl, record_steps=False)
    seconds = time.process_time() - began
    violated: dict[str, int] = {}
    first: dict[str, dict[str, Any]] = {}
    for v in sim.violations:
        violated[v.invariant] = violated.get(v.invariant, 0) + 1
        first.setdefault(v.invariant, v.as_dict())
    promised = wl.consumer_lag_ms is not None and wl.consumer_lag_ms <= cfg.delete_retention_ms
    return CellResult(index, grid.params(index), violated, first, promised, sim.summary["records_produced"], seconds)


def sweep_python(grid: LogGrid) -> list[CellResult]:
    return [run_cell(grid, i) for i in range(len(grid))]


def sweep_spark(grid: LogGrid, master: str | None = None, partitions: int | None = None,
                spark: Any = None) -> list[CellResult]:
    """The cells as Spark tasks (one session started here and stopped at the end unless `spark` is given)."""
    from kcheck.spark_check.job import spark_session

    own = spark is None
    session = spark or spark_session(master or "local[2]", progress=False, app_name="kcheck-sweep-log")
    try:
        sc = session.sparkContext
        slices = partitions or min(len(grid), 4 * sc.defaultParallelism)
        rows = sc.parallelize(range(len(grid)), slices).map(lambda i: run_cell(grid, i)).collect()
    finally:
        if own:
            session.stop()
    return sorted(rows, key=lambda r: r.index)


# ---- findings ------------------------------------------------------------------------------------------------------


@dataclass
class InvariantRow:
    invariant: str
    checked: int
    broken: int
    failing: int  # broken where Kafka promises it (always, for log.*)
    smallest: CellResult | None  # the first cell (grid order) that breaks it


@dataclass
class Threshold:
    others: dict[str, str]  # the other axes' values
    smallest: dict[str, str | None] = field(default_factory=dict)  # invariant -> smallest breaking value (None: none)


def _num(v: str) -> float:
    try:
        return float(parse_duration(v))
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return float("inf")


def invariant_rows(rows: Sequence[CellResult]) -> list[InvariantRow]:
    names = sorted({k for r in rows for k in r.violated} | {CONSUMER_INVARIANT})
    out = []
    for name in names:
        broken = [r for r in rows if r.violated.get(name)]
        failing = [r for r in broken if name != CONSUMER_INVARIANT or r.promised]
        out.append(InvariantRow(name, len(rows), len(broken), len(failing), broken[0] if broken else None))
    return out


def threshold_axis(grid: LogGrid, requested: str | None = None) -> str | None:
    keys = [k for k, _ in grid.axes]
    if requested is not None:
        if requested not in keys:
            raise ConfigError("--threshold", f"'{requested}' is not an axis of the grid ({', '.join(keys)})")
        return requested
    return next((k for k in THRESHOLD_AXES if k in keys), keys[-1] if keys else None)


def thresholds(grid: LogGrid, rows: Sequence[CellResult], axis: str) -> tuple[list[str], list[Threshold]]:
    """Per combination of the other axes, the smallest value of `axis` that breaks each broken invariant."""
    names = sorted({k for r in rows for k in r.violated})
    groups: dict[tuple[tuple[str, str], ...], list[CellResult]] = {}
    for r in rows:
        other = tuple((k, v) for k, v in r.params.items() if k != axis)
        groups.setdefault(other, []).append(r)
    out = []
    for other, cells in groups.items():
        t = Threshold(dict(other))
        for name in names:
            breaking = [c.params[axis] for c in cells if c.violated.get(name)]
            t.smallest[name] = min(breaking, key=_num) if breaking else None
        out.append(t)
    return names, out


def grid_text(grid: LogGrid) -> str:
    return "; ".join(f"{k}={','.join(v) if len(v) <= 6 else f'{v[0]}..{v[-1]} ({len(v)} values)'}"
                     for k, v in grid.axes)


def base_text(pairs: Iterable[tuple[str, str]]) -> str:
    return ", ".join(f"{k}={v}" for k, v in pairs)
