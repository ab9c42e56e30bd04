"""`kcheck verify` on `kafka-topics --describe` text: what the text tells about itself, and what verify adds for it.

- The text as read (`formats.read_describe`): the layout and the kafka-topics releases that print it, the
  controller era where the layout tells it (`--controller` overrides), a paste that is not whole (fewer partitions
  than a header's PartitionCount) and the output of a filter option (no topic lines), which is a selection and
  not a partial paste; Confluent Server's observers, which kcheck does not model (left out, said in one line).
- Balance findings are skipped on a partial paste or a filter's output (not applicable, with the reason): a
  balance over some partitions says nothing of the cluster. The per-partition checks run on what is there.
- The health checks' inputs: each topic's min.insync.replicas from its Configs, `Leader:` as written, the racks
  of `--brokers-file`, and with `--bootstrap-server` the live brokers (`TopicCommand`'s `--unavailable-partitions`
  also lists a leader on a broker that is not live; a describe does not say which are).
- The survivability figures (`invariants.partition_health.survivability`) per topic for people and per
  partition in `--json`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.markup import escape
from rich.table import Table

from kcheck.inputs import formats
from kcheck.inputs.formats import Describe
from kcheck.invariants import REGISTRY, Report, check_all, check_placement
from kcheck.invariants.partition_health import (
    HEALTH_FILTERS,
    HealthSubject,
    PartitionSurvival,
    health_subject,
    survivability,
)
from kcheck.invariants.placement import PlacementSubject
from kcheck.model import Cluster

DESCRIBE_BLOCK = "kafka-topics --describe"
# Balance goals: over part of the cluster they say nothing of the whole.
BALANCE = ("placement.leader-spread", "placement.leader-spread-rack", "placement.replica-spread",
           "placement.follower-spread", "placement.topic-replica-spread")
MAX_ROWS = 200  # topics in the survivability table (--json has every partition)


@dataclass(frozen=True)
class DescribeView:
    describe: Describe | None  # None: not a describe (a reassignment JSON, kafka-reassign-partitions output)
    controller: str
    controller_from: str  # why this controller: the option, the layout, or the default
    live_brokers: frozenset[int] | None  # from --bootstrap-server

    @property
    def partial(self) -> str | None:
        """Why the text is not the whole cluster, or None."""
        d = self.describe
        if d is None:
            return None
        if d.filter_output:
            return ("the output of a filter option (no topic lines): only the partitions it selected, not a partial "
                    "paste")
        if d.partial:
            parts = [f"{formats.shown(t, 60)} lists {n} of its {c} partitions (PartitionCount: {c})" if c is not None
                     else f"{formats.shown(t, 60)} has no topic line" for t, (n, c) in sorted(d.partial.items())]
            more = f" and {len(parts) - 3} more topics" if len(parts) > 3 else ""
            return "a partial paste: " + "; ".join(parts[:3]) + more
        if any(kind.startswith("'...'") for _, kind in d.skipped):
            return "a partial paste: lines were left out ('...')"
        return None


def view(text: str, source: str, block_used: str, controller: str | None, live: Any) -> DescribeView:
    """The describe behind `block_used` (what `formats.parse_pasted` read) and the controller to judge it by."""
    live_brokers = None
    if live is not None:  # cluster/live.py: a fenced broker's line is '<id>[:rack]  # fenced'; a 3.9 cluster omits it
        live_brokers = frozenset(int(line.split(":")[0].split()[0]) for line in live.brokers_text.splitlines()
                                 if line.strip() and "# fenced" not in line)
    d = formats.read_describe(text, source) if block_used == DESCRIBE_BLOCK else None
    if controller is not None:
        return DescribeView(d, controller, "--controller", live_brokers)
    era, why = d.era if d is not None else (None, "no describe")
    if era is not None:
        return DescribeView(d, era, f"from the layout: {why}", live_brokers)
    return DescribeView(d, "kraft", f"the default: {why}; --controller zk for a ZooKeeper cluster", live_brokers)


def check(v: DescribeView, subject: PlacementSubject, min_insync_replicas: int | None,
          release: str) -> tuple[Report, HealthSubject]:
    """The placement checks (balance skipped on what is not the whole cluster) and every health check."""
    why = v.partial
    only = None if why is None else {i for i, inv in REGISTRY.items() if inv.applies_to == "placement"} - set(BALANCE)
    placement = check_placement(subject, only)
    if why is not None:
        placement = Report(placement.checked, {**placement.skipped, **{b: f"covers only what was pasted: {why}"
                                                                        for b in BALANCE if b in REGISTRY}},
                           placement.violations)
    d = v.describe
    cluster: Cluster = subject.cluster
    hs = health_subject(subject.assignment, d.min_isr if d else {}, min_insync_replicas, v.controller, release,
                        leader_text=d.leader_text if d else None,
                        racks=cluster.rack_map if cluster.rack_layout == "full" else None,
                        live_brokers=v.live_brokers)
    health = check_all(hs, "partition-health")
    return Report((*placement.checked, *health.checked), {**placement.skipped, **health.skipped},
                  (*placement.violations, *health.violations)), hs


def _filters_matching(d: Describe, hs: HealthSubject, report: Report) -> list[str]:
    """The health filters whose definition every listed partition meets (the min-ISR ones only when
    --min-insync-replicas says the value: a filter's output has no Configs)."""
    listed = {f"partition {p.tp}" for p in d.assignment}
    known = hs.default_min_isr is not None
    return [option for inv, option in HEALTH_FILTERS.items() if (known or "min-isr" not in inv)
            and listed <= {x.where for x in report.violations if x.invariant == inv}]


def notes(v: DescribeView, hs: HealthSubject, report: Report) -> list[str]:
    """What people should know about the text read, one line each."""
    d = v.describe
    if d is None:
        return []
    out = [f"Layout: {d.layout}. Controller: {v.controller}, {v.controller_from}."]
    if (why := v.partial) is not None:
        out.append(f"Not the whole cluster: {why}; balance findings are skipped.")
    if d.filter_output:
        matching = _filters_matching(d, hs, report)
        out.append("Every partition listed is " + (f"what {', '.join(matching)} lists." if matching else
                                                   "not what any one health filter lists: topic lines removed?")
                   + " min.insync.replicas is not in it (topic lines hold Configs): --min-insync-replicas or 1"
                   + ("." if hs.default_min_isr is not None else " (the min-ISR filters are not told apart)."))
    if d.observers:
        shown = ", ".join(f"{tp} ({','.join(map(str, obs))})" for tp, obs in sorted(d.observers.items())[:3])
        out.append(f"Confluent Server's observers are not modelled by kcheck: the {len(d.observers)} partitions with "
                   f"observers outside the ISR ({shown}{' ...' if len(d.observers) > 3 else ''}) are checked on "
                   "their other replicas.")
    if d.skipped:
        kinds = ", ".join(f"{kind} line {n}" for n, kind in d.skipped[:4]) + (" ..." if len(d.skipped) > 4 else "")
        out.append(f"Skipped {len(d.skipped)} line(s) that are not kafka-topics output: {kinds}.")
    if d.topic_from_header:
        lines = ", ".join(map(str, d.topic_from_header[:4])) + (" ..." if len(d.topic_from_header) > 4 else "")
        out.append(f"{len(d.topic_from_header)} partition line(s) without Topic: (line {lines}) read as the topic of "
                   "the header above them; kafka-topics prints Topic: on every partition line.")
    if v.live_brokers is None:
        out.append("--unavailable-partitions also lists a leader on a broker that is not live; a describe does not "
                   "say which brokers are (--bootstrap-server does): only Leader: none/-1 is judged unavailable.")
    return out


@dataclass(frozen=True)
class TopicSurvival:
    topic: str
    partitions: int
    min_isr: int
    broker_failures: int  # the fewest over the topic's partitions
    weakest: str  # a partition with that fewest
    rack_failures: int | None
    writable_after_rack_loss: bool | None  # any one rack lost: every partition writable now stays writable
    readable_after_rack_loss: bool | None  # ... and every one with a leader keeps an in-sync replica to lead
    not_writable_now: int  # partitions without a leader or below min.insync.replicas already

    def as_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "partitions": self.partitions, "min_insync_replicas": self.min_isr,
                "broker_failures": self.broker_failures, "weakest_partition": self.weakest,
                "rack_failures": self.rack_failures, "writable_after_any_rack_loss": self.writable_after_rack_loss,
                "readable_after_any_rack_loss": self.readable_after_rack_loss,
                "not_writable_now": self.not_writable_now}


def by_topic(parts: list[PartitionSurvival]) -> list[TopicSurvival]:
    groups: dict[str, list[PartitionSurvival]] = {}
    for ps in parts:
        groups.setdefault(ps.partition.topic, []).append(ps)
    out = []
    for topic, group in groups.items():
        weakest = min(group, key=lambda x: (x.broker_failures, x.rack_failures or 0))
        racked = group[0].after_rack_loss is not None
        out.append(TopicSurvival(
            topic, len(group), group[0].min_isr, weakest.broker_failures, str(weakest.partition.tp),
            min(x.rack_failures or 0 for x in group) if racked else None,
            all(w for x in group if x.writable for w, _ in (x.after_rack_loss or {}).values()) if racked else None,
            all(r for x in group if x.readable for _, r in (x.after_rack_loss or {}).values()) if racked else None,
            sum(not x.writable for x in group)))
    return sorted(out, key=lambda t: (t.broker_failures, t.rack_failures or 0, t.topic))


def _yes(x: bool | None) -> str:
    return "-" if x is None else ("yes" if x else "[red]no[/]")


def survivability_table(topics: list[TopicSurvival]) -> Table:
    table = Table(title="Survivability now (acks=all, each topic's min.insync.replicas): the failures every "
                        "partition survives and stays writable", title_justify="left")
    for col in ("topic", "partitions", "not writable now", "min ISR", "broker failures", "weakest partition",
                "rack failures", "one rack lost: stays writable", "stays readable"):
        table.add_column(col, justify="left" if col in ("topic", "weakest partition") else "right")
    for t in topics[:MAX_ROWS]:
        table.add_row(escape(formats.shown(t.topic)), str(t.partitions),
                      f"[red]{t.not_writable_now}[/]" if t.not_writable_now else "0", str(t.min_isr),
                      str(t.broker_failures),
                      escape(formats.shown(t.weakest)), "-" if t.rack_failures is None else str(t.rack_failures),
                      _yes(t.writable_after_rack_loss), _yes(t.readable_after_rack_loss))
    if len(topics) > MAX_ROWS:
        table.caption = f"{MAX_ROWS} of {len(topics):,} topics, the weakest first (--json lists every partition)"
    return table


def json_fields(v: DescribeView, hs: HealthSubject, report: Report) -> dict[str, Any]:
    d = v.describe
    if d is None:
        return {"controller": v.controller}
    parts = survivability(hs)
    span = d.releases
    return {
        "controller": v.controller,
        "describe": {
            "layout": d.layout, "releases": None if span is None else list(span),
            "controller_from": v.controller_from, "topic_lines": d.headers, "filter_output": d.filter_output,
            "partial": v.partial, "partition_counts": dict(d.partition_counts),
            "filters_matching": _filters_matching(d, hs, report) if d.filter_output else None,
            "observers_left_out": {str(tp): list(b) for tp, b in sorted(d.observers.items())},
            "skipped_lines": [{"line": n, "what": kind} for n, kind in d.skipped],
            "topic_from_header_lines": list(d.topic_from_header),
            "notes": notes(v, hs, report),
        },
        "survivability": {"topics": [t.as_dict() for t in by_topic(parts)], "partitions": [p.as_dict() for p in parts]},
    }


def junit_properties(v: DescribeView) -> dict[str, str]:
    d = v.describe
    if d is None:
        return {"controller": v.controller}
    return {"controller": v.controller, "layout": d.layout, "partial": v.partial or "",
            "filter_output": str(d.filter_output).lower()}


def survivability_of(hs: HealthSubject) -> list[TopicSurvival]:
    return by_topic(survivability(hs))

