"""What one batch of a sweep yields, and how batches merge.

Every configuration space evaluates an id range [start, stop) to a BatchResult.
The Spark job, the Parquet store and the report only see BatchResults, so a
placement space, a consumer-group space or a user's space share one pipeline.

Balance metrics are kept as histograms (value -> number of configurations), not
per-configuration columns: ten million configurations stay a few kilobytes and
histograms from any split of the id range add up to the same totals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class FirstViolation:
    """The smallest configuration id in a range that violates one invariant."""

    config_id: int
    config: Mapping[str, Any]  # the configuration, JSON-able (space[config_id].describe())
    where: str
    message: str
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class BatchResult:
    start: int
    stop: int
    # invariant id -> configurations the invariant applied to / was violated in
    checked: Counter[str] = field(default_factory=Counter)
    violated: Counter[str] = field(default_factory=Counter)
    first: dict[str, FirstViolation] = field(default_factory=dict)
    # metric name -> histogram (metric value -> configurations with that value)
    metrics: dict[str, Counter[float]] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return self.stop - self.start

    def add_violation(self, invariant: str, first: FirstViolation) -> None:
        self.violated[invariant] += 1
        kept = self.first.get(invariant)
        if kept is None or first.config_id < kept.config_id:
            self.first[invariant] = first

    def add_metric(self, name: str, value: float, count: int = 1) -> None:
        self.metrics.setdefault(name, Counter())[value] += count


def merge(results: Iterable[BatchResult]) -> BatchResult:
    """Sum of batches; ranges need not be contiguous (start/stop become min/max)."""
    out: BatchResult | None = None
    for r in results:
        if out is None:
            out = BatchResult(r.start, r.stop)
        out.start, out.stop = min(out.start, r.start), max(out.stop, r.stop)
        out.checked.update(r.checked)
        out.violated.update(r.violated)
        for inv, f in r.first.items():
            kept = out.first.get(inv)
            if kept is None or f.config_id < kept.config_id:
                out.first[inv] = f
        for name, hist in r.metrics.items():
            out.metrics.setdefault(name, Counter()).update(hist)
    return out if out is not None else BatchResult(0, 0)


class Space(Protocol):
    """An indexable configuration space (ARCHITECTURE.md, principle 6)."""

    name: str  # e.g. "placement", "assignors"

    def __len__(self) -> int: ...

    def __getitem__(self, config_id: int) -> Any: ...  # a configuration with .describe() -> dict

    def evaluate(self, start: int, stop: int) -> BatchResult: ...  # every configuration in [start, stop)

    def invariant_ids(self) -> list[str]: ...  # every invariant the space checks, in report order
