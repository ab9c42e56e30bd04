"""A sweep's results for people: rows per invariant, and a Markdown report with one PNG picture per metric.

Each picture shows every placer or assignor of the sweep side by side (Kafka's own in blues and greys, a user's
`module:object` or `jvm:<class>` in warm colours), the bound the invariant puts on the metric as a labelled line,
and a sentence on what the metric means and what good looks like (`METRIC_NOTES`). Picture files are named by
`safe_file_name`, so a name like `myplacer:even_racks` never reaches a file system or a Markdown link.

Works for any `Space`. Result keys are `subject/invariant` (a placer or an
assignor, then a registry id) or a bare invariant id; the severity comes from
the space (`space.severity(key)`) when it has one, else from the registry, and
an id the registry does not know counts as hard.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kcheck.invariants import REGISTRY, Severity
from kcheck.invariants.rebalance import MAX_FOLLOW_UPS
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


# --- pictures --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricNote:
    """What a metric counts, what good looks like, and the bound an invariant puts on it (drawn as a line)."""

    meaning: str
    good: str
    limits: tuple[tuple[float, str], ...] = ()  # (value, label): where an invariant draws its line


# A spread of 1 or less (counts k and k+1 around an average between them) lies within Cruise Control's limits,
# floor(avg * (1 - p)) and ceil(avg * (1 + p)), for every average and every threshold: the line that always holds.
_EVEN = ("1 or less{promise}: as even as the counts allow, within {inv}'s limits (Cruise Control {goal}, limits "
         "around the average) whatever the average and threshold; more may still be within them on larger averages")
# Keyed by (space family, metric): the placement space (spark_check/placement_space.py) and the consumer-group
# space (spark_check/groups.py), each also as swept against Kafka's jars.
METRIC_NOTES: dict[tuple[str, str], MetricNote] = {
    ("placement", "leader-skew"): MetricNote(
        "Per configuration, the most preferred leaders on one broker minus the fewest.",
        _EVEN.format(promise=" (AdminUtils promises it: round-robin leaders)", inv="placement.leader-spread",
                     goal="LeaderReplicaDistributionGoal"),
        ((1, "≤ 1: placement.leader-spread holds at any average"),)),
    ("placement", "replica-skew"): MetricNote(
        "Per configuration, the most replicas on one broker minus the fewest.",
        _EVEN.format(promise="", inv="placement.replica-spread", goal="ReplicaDistributionGoal"),
        ((1, "≤ 1: placement.replica-spread holds at any average"),)),
    ("placement", "rack-spread"): MetricNote(
        "Per configuration (brokers all with racks), the largest gap within one partition between the rack "
        "holding most of its replicas and the rack holding fewest.",
        "0 or 1: the even split placement.rack-distribution (Cruise Control RackAwareDistributionGoal) and "
        "placement.rack-diversity ask for; more only where a rack has too few brokers to take its share",
        ((1, "≤ 1: the even split (placement.rack-distribution)"),)),
    ("placement", "moved-partitions"): MetricNote(
        "Per configuration, the partitions whose replica set changes when the same topic is placed again on the "
        "cluster grown by one broker: the data a reassignment would copy.",
        "low; no invariant bounds it, so compare with Kafka's placers (the dashed line is the worst of theirs)"),
    ("assignors", "moved-partitions"): MetricNote(
        "Per configuration, the partitions the settled rebalance after the event takes from a previous owner that "
        "still subscribes to them.",
        "low; assignment.sticky flags a rebalance that moves more than the per-member counts require "
        "(StickyAssignor: 'preserves as many existing assignments as possible')"),
    ("assignors", "count-spread"): MetricNote(
        "Per configuration, the most partitions on one member minus the fewest, after the settled rebalance.",
        "0 or 1; assignment.balanced (AbstractStickyAssignor.isBalanced) allows more only when no member with "
        "2 or more fewer subscribes to a partition it could take",
        ((1, "≤ 1: assignment.balanced"),)),
    ("assignors", "rack-mismatches"): MetricNote(
        "Per configuration (members and replicas with racks), the partitions on a member whose rack holds none of "
        "the partition's replicas.",
        "0 where the racks allow it; assignment.rack-quality (KIP-881) flags more mismatches than the per-member "
        "counts force"),
    ("assignors", "follow-up-rebalances"): MetricNote(
        "Per configuration (cooperative assignors), the follow-up rebalances until no member revokes a partition.",
        "1 or less (KIP-429: revoked partitions are assigned in the next rebalance); more than "
        f"{MAX_FOLLOW_UPS} fails as the assignor's error (CooperativeStickyAssignorTest allows at most "
        f"{MAX_FOLLOW_UPS})",
        ((1, "≤ 1: KIP-429's one follow-up"), (MAX_FOLLOW_UPS, f"≤ {MAX_FOLLOW_UPS}: the most allowed"))),
    ("assignors", "assignor-calls"): MetricNote(
        "Per configuration, the assignor calls compared with Kafka's own classes.",
        "any: it says how much each configuration exercised, not how well it did"),
}


def metric_note(space_name: str, metric: str) -> MetricNote | None:
    return METRIC_NOTES.get((space_name.removesuffix("-against-kafka"), metric))


_UNSAFE = re.compile(r"[^a-z0-9_-]+")
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def safe_file_name(name: str, suffix: str = ".png") -> str:
    """`name` as a file name every system stores and every Markdown viewer links to as a file: lower-case
    letters, digits, '_' and '-' only, then `suffix` (a ':' reads as a URI scheme and Windows refuses it, as it
    refuses CON or NUL.txt). A name that had to change gets 8 hex digits of its SHA-1, so it stays unique (`a:b`
    and `a-b`, `A` and `a` on a case-blind disk) and the same name always gets the same file."""
    slug = _UNSAFE.sub("-", name.lower()).strip("-")[:80].strip("-")
    if not slug or slug != name or slug in _RESERVED:
        slug = f"{slug or 'metric'}-{hashlib.sha1(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
    return slug + suffix


def is_kafka_subject(subject: str) -> bool:
    """A placer or assignor of Kafka's own (built in by name), as against a user's `module:object` or
    `jvm:<class>`."""
    from kcheck.reference.assignors.registry import ASSIGNORS
    from kcheck.reference.placers import BUILTIN_PLACERS

    return subject in BUILTIN_PLACERS or subject in ASSIGNORS


@dataclass(frozen=True)
class MetricPicture:
    """One metric's picture: every subject's distribution side by side, with the invariant's limit lines."""

    metric: str
    file: str  # safe_file_name(metric)
    subjects: tuple[str, ...]  # Kafka's first, then the user's
    caption: str  # what the metric means and what good looks like, one paragraph
    figure: Any  # a matplotlib Figure (closed once plot_metrics has saved it)


KAFKA_COLOURS = ("#3b6ea5", "#8fb3d9", "#5b8f5b", "#a9c99a", "#7a7a7a", "#b5b5b5")
USER_COLOURS = ("#e4572e", "#b8336a", "#f0a202", "#6a4c93")


def _by_metric(metrics: Mapping[str, Counter[float]]) -> dict[str, dict[str, Counter[float]]]:
    """`subject/metric` keys grouped as metric -> subject -> histogram (a bare key's subject is "")."""
    out: dict[str, dict[str, Counter[float]]] = {}
    for key, hist in metrics.items():
        subject, _, metric = key.rpartition("/")
        if hist:
            out.setdefault(metric, {})[subject] = hist
    return out


def _caption(metric: str, note: MetricNote | None, subjects: Sequence[str], hists: Mapping[str, Counter[float]],
             kafka_worst: float | None) -> str:
    parts = [note.meaning if note else f"The distribution of {metric} over the configurations.",
             f"Good: {note.good}." if note else ""]
    if note and note.limits:
        parts.append("Solid lines: " + "; ".join(label for _, label in note.limits) + ".")
    if kafka_worst is not None:
        parts.append(f"Dashed line: the worst of Kafka's own ({kafka_worst:g}).")
    parts.append("Per subject: " + "; ".join(
        f"{s or 'all'} median {metric_stats(hists[s])['median']:g}, worst {metric_stats(hists[s])['max']:g}"
        for s in subjects) + ".")
    return " ".join(p for p in parts if p)


def metric_pictures(metrics: Mapping[str, Counter[float]], space_name: str = "") -> list[MetricPicture]:
    """One figure per metric (not saved): each subject's distribution (value -> % of its configurations) as bars
    side by side, Kafka's placers or assignors in blues and greys, the user's in warm colours, so a user's subject is
    seen against Kafka's; the invariant's limits as solid labelled lines and, beside a user's subject, the worst
    value of Kafka's own as a dashed line. A count metric's axis has integer ticks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    pictures = []
    for metric, by_subject in sorted(_by_metric(metrics).items()):
        subjects = sorted(by_subject, key=lambda s: (not is_kafka_subject(s), s))
        kafka = [s for s in subjects if is_kafka_subject(s)]
        users = [s for s in subjects if not is_kafka_subject(s)]
        values = sorted({float(v) for hist in by_subject.values() for v in hist})
        integral = all(v.is_integer() for v in values)
        step = 1.0 if integral else min((b - a for a, b in zip(values, values[1:], strict=False)), default=1.0)
        width = 0.8 * step / len(subjects)
        note = metric_note(space_name, metric)
        fig, ax = plt.subplots(figsize=(9.6, 3.9), dpi=100, layout="constrained")
        colours = {s: KAFKA_COLOURS[i % len(KAFKA_COLOURS)] for i, s in enumerate(kafka)}
        colours |= {s: USER_COLOURS[i % len(USER_COLOURS)] for i, s in enumerate(users)}
        for i, s in enumerate(subjects):
            # each subject's share of its own configurations: placers see different numbers of them (AdminUtils
            # one per start index and shift, the striped placer one per random seed)
            hist = by_subject[s]
            total = sum(hist.values())
            xs = sorted(float(v) for v in hist)
            offset = (i - (len(subjects) - 1) / 2) * width
            whose = "Kafka" if s in kafka else "yours"
            ax.bar([x + offset for x in xs], [100 * hist[x] / total for x in xs], width=width, color=colours[s],
                   edgecolor="black" if whose == "yours" else "none", linewidth=0.6,
                   label=f"{s} ({whose}), {total:,} configurations" if s else f"{total:,} configurations")
        # a limit of an integer metric is drawn half a step to its right: every bar left of the line is within it
        shift = step / 2 if integral else 0.0
        limits = list(note.limits) if note else []
        for value, label in limits:
            ax.axvline(value + shift, color="#c0392b", linewidth=1.4, label=label)
        kafka_worst = max(max(by_subject[s]) for s in kafka) if kafka and users else None
        if kafka_worst is not None:
            ax.axvline(float(kafka_worst) + shift, color="#444444", linestyle="--", linewidth=1.0,
                       label=f"worst of Kafka's own: {float(kafka_worst):g}")
        ax.set_title(metric)
        ax.set_xlabel(f"{metric} (per configuration)")
        ax.set_ylabel("% of the subject's configurations")
        if integral:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(0, None)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        pictures.append(MetricPicture(metric, safe_file_name(metric), tuple(subjects),
                                      _caption(metric, note, subjects, by_subject, kafka_worst), fig))
    return pictures


def plot_metrics(metrics: Mapping[str, Counter[float]], directory: str, space_name: str = "") -> list[MetricPicture]:
    """`metric_pictures` saved as PNG files in `directory` (their figures closed)."""
    import matplotlib.pyplot as plt

    pictures = metric_pictures(metrics, space_name)
    for picture in pictures:
        picture.figure.savefig(os.path.join(directory, picture.file))
        plt.close(picture.figure)
    return pictures


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def write_markdown(directory: str, space: Space, result: BatchResult, header: Mapping[str, Any]) -> str:
    """`report.md` (and the metric PNGs) in `directory`; returns the report's path."""
    os.makedirs(directory, exist_ok=True)
    rows = invariant_rows(space, result)
    plots = plot_metrics(result.metrics, directory, space.name)
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
        lines += ["## Pictures", ""]
        for picture in plots:
            lines += [f"### {picture.metric}", "", f"![{_md(picture.metric)}]({picture.file})", "",
                      _md(picture.caption), ""]
    path = os.path.join(directory, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path
