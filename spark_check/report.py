"""A sweep's results for people: rows per invariant, and a Markdown report with PNG plots of the metrics.

Works for any `Space`. Result keys are `subject/invariant` (a placer or an
assignor, then a registry id) or a bare invariant id; the severity comes from
the space (`space.severity(key)`) when it has one, else from the registry, and
an id the registry does not know counts as hard.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kcheck.invariants import REGISTRY, Severity
from kcheck.spark_check.batch import BatchResult, FirstViolation, Space


@dataclass(frozen=True)
class InvariantRow:
    key: str
    subject: str  # placer or assignor ("" for a bare invariant key)
    invariant: str
    severity: Severity
    guaranteed: bool | None  # Kafka guarantees it for this subject (None: the space does not say)
    fails: bool  # a violation fails the sweep (hard, or guaranteed by Kafka); otherwise it is a finding
    checked: int
    violated: int
    first: FirstViolation | None


def split_key(key: str) -> tuple[str, str]:
    """`adminutils/placement.rack-diversity` -> (`adminutils`, `placement.rack-diversity`)."""
    if key in REGISTRY or "/" not in key:
        return "", key
    subject, _, invariant = key.rpartition("/")
    return subject, invariant


def _info(space: Space, key: str) -> tuple[Severity, bool | None, bool]:
    """(severity, guaranteed by Kafka, fails the sweep when violated), from the space when it says."""
    if hasattr(space, "invariant_info"):
        info = space.invariant_info(key)
        return Severity(info.severity), bool(info.guaranteed), bool(info.fails)
    inv = split_key(key)[1]
    severity = REGISTRY[inv].severity if inv in REGISTRY else Severity.HARD
    return severity, None, severity is Severity.HARD


def invariant_rows(space: Space, result: BatchResult) -> list[InvariantRow]:
    keys = list(dict.fromkeys([*space.invariant_ids(), *result.checked, *result.violated]))
    rows = []
    for key in keys:
        subject, inv = split_key(key)
        severity, guaranteed, fails = _info(space, key)
        rows.append(InvariantRow(key, subject, inv, severity, guaranteed, fails, int(result.checked.get(key, 0)),
                                 int(result.violated.get(key, 0)), result.first.get(key)))
    return rows


def failures(rows: list[InvariantRow]) -> list[InvariantRow]:
    """Violated rows that fail the sweep: a hard invariant, or one Kafka guarantees for the placer or assignor."""
    return [r for r in rows if r.fails and r.violated]


def config_text(config: Mapping[str, Any]) -> str:
    """A configuration in one line, without its replay command; a consumer group by its story alone
    (its full description, members and topics, is in the report and the Parquet store)."""
    if "story" in config:
        story = config["story"]
        story = "; ".join(story) if isinstance(story, list) else str(story)
        return f"{config['assignor']}: {story}" if "assignor" in config else story
    return ", ".join(f"{k} {v}" for k, v in config.items() if k != "replay")


def metric_stats(hist: Mapping[float, int]) -> dict[str, float]:
    total = sum(hist.values())
    values = sorted(hist)
    mean = sum(v * c for v, c in hist.items()) / total if total else 0.0
    stats = {"configurations": total, "mean": mean, "min": values[0] if values else 0,
             "max": values[-1] if values else 0}
    for name, q in (("median", 0.5), ("p99", 0.99)):
        seen, at = 0, values[-1] if values else 0
        for v in values:
            seen += hist[v]
            if seen >= q * total:
                at = v
                break
        stats[name] = at
    return stats


def plot_metrics(metrics: Mapping[str, Counter[float]], directory: str) -> dict[str, str]:
    """One bar chart per metric (value -> configurations), as PNG files in `directory`; name -> file name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = {}
    for name, hist in sorted(metrics.items()):
        if not hist:
            continue
        values = sorted(hist)
        fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
        ax.bar([float(v) for v in values], [hist[v] for v in values], width=0.8, color="#3b6ea5")
        ax.set_title(name)
        ax.set_xlabel(name.rpartition("/")[2])
        ax.set_ylabel("configurations")
        ax.ticklabel_format(axis="y", style="plain")
        fig.tight_layout()
        file = name.replace("/", "-") + ".png"
        fig.savefig(os.path.join(directory, file))
        plt.close(fig)
        files[name] = file
    return files


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def write_markdown(directory: str, space: Space, result: BatchResult, header: Mapping[str, Any]) -> str:
    """`report.md` (and the metric PNGs) in `directory`; returns the report's path."""
    os.makedirs(directory, exist_ok=True)
    rows = invariant_rows(space, result)
    plots = plot_metrics(result.metrics, directory)
    lines = [f"# kcheck sweep: {space.name}", ""]
    lines += [f"- **{k}**: {_md(v)}" for k, v in header.items()]
    failed = failures(rows)
    findings = [r for r in rows if r.violated and not r.fails]
    lines += ["", f"**{'FAIL' if failed else 'OK'}**: {len(failed)} invariant(s) that must hold are violated "
                  f"(hard, or guaranteed by Kafka); {len(findings)} soft finding(s).", ""]
    lines += ["## Invariants", "",
              "| subject | invariant | severity | Kafka guarantees | checked | violated | smallest violating "
              "configuration | violation |", "|---|---|---|---|---:|---:|---|---|"]
    for r in rows:
        guaranteed = {True: "yes", False: "no", None: "-"}[r.guaranteed]
        first = f"#{r.first.config_id}: {config_text(r.first.config)}" if r.first else ""
        lines.append(f"| {_md(r.subject)} | {r.invariant} | {r.severity} | {guaranteed} | {r.checked:,} | "
                     f"{r.violated:,} | {_md(first)} | {_md(r.first.message) if r.first else ''} |")
    detailed = [r for r in rows if r.first]
    if detailed:
        lines += ["", "## Smallest violations", ""]
        for r in detailed:
            assert r.first is not None
            lines += [f"### {r.key}", "", f"Configuration #{r.first.config_id}: {_md(config_text(r.first.config))}",
                      "", f"{r.first.where}: {r.first.message}", ""]
            if "replay" in r.first.config:
                lines += ["```bash", str(r.first.config["replay"]), "```", ""]
            lines += ["```json", json.dumps(dict(r.first.detail), indent=1, sort_keys=True, default=str), "```", ""]
    if result.metrics:
        lines += ["## Metric distributions", "", "| metric | configurations | mean | median | p99 | max |",
                  "|---|---:|---:|---:|---:|---:|"]
        for name, hist in sorted(result.metrics.items()):
            s = metric_stats(hist)
            lines.append(f"| {name} | {s['configurations']:,} | {s['mean']:.3f} | {s['median']:g} | {s['p99']:g} | "
                         f"{s['max']:g} |")
        lines.append("")
        for name, file in plots.items():
            lines += [f"![{name}]({file})", ""]
    path = os.path.join(directory, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path
