"""One self-contained HTML report (`kcheck check --html FILE`, DIR/report.html of `kcheck sweep`).

Everything is inline: CSS in a <style>, plots as base64 PNG data URIs or inline SVG, no scripts and no
links, so the file can be attached to a CI run or mailed and still show everything. Every string that can
come from the user (placer and assignor names, configurations, messages) goes through html.escape.
"""

from __future__ import annotations

import base64
import html
import json
import os
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from kcheck.invariants import REGISTRY
from kcheck.junit import write_atomic

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em;color:#222;max-width:90em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top;white-space:pre-line}
th{background:#eee}td.num{text-align:right}
tr.fail td{background:#fbe3e3}tr.finding td{background:#fdf6d8}tr.na td{color:#888}
.verdict{font-weight:bold;padding:.5em;border:1px solid #ccc}.verdict.fail{background:#fbe3e3}
.verdict.ok{background:#e3f5e3}code{font-size:.95em}img{max-width:100%}
"""
STATUS_COLOURS = {"holds": "#4c9a4c", "finding": "#d9b43a", "FAILED": "#c94040", "n/a": "#aaaaaa"}


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], classes: Sequence[str] = (),
          numeric: Sequence[str] = ()) -> str:
    """A table of plain-text cells, every one escaped; `classes` gives a CSS class per row."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{esc(classes[i])}"' if i < len(classes) and classes[i] else ""
        cells = "".join(f'<td class="num">{esc(c)}</td>' if h in numeric else f"<td>{esc(c)}</td>"
                        for h, c in zip(headers, row, strict=True))
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def png(data: bytes, alt: str) -> str:
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{base64.b64encode(data).decode("ascii")}">'


def status_bars(title: str, counts: Mapping[str, Counter[str]]) -> str:
    """An inline SVG: one stacked bar per section, coloured by result (holds, finding, FAILED, n/a)."""
    width, label_w, bar_h = 640, 200, 22
    parts = [f'<svg role="img" width="{width}" '
             f'height="{bar_h * (len(counts) + 1) + 10}"><title>{esc(title)}</title>']
    for i, (section, counter) in enumerate(counts.items()):
        y, total, x = 5 + i * bar_h, sum(counter.values()) or 1, float(label_w)
        parts.append(f'<text x="0" y="{y + 15}" font-size="12">{esc(section)}</text>')
        for status, colour in STATUS_COLOURS.items():
            w = (width - label_w - 10) * counter.get(status, 0) / total
            if w:
                parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h - 4}" fill="{colour}">'
                             f"<title>{esc(status)}: {counter[status]}</title></rect>")
                x += w
    legend_y = 5 + len(counts) * bar_h + 14
    for j, (status, colour) in enumerate(STATUS_COLOURS.items()):
        parts.append(f'<rect x="{label_w + j * 90}" y="{legend_y - 10}" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{label_w + j * 90 + 14}" y="{legend_y}" font-size="12">{esc(status)}</text>')
    return "".join(parts) + "</svg>"


def page(title: str, body: Sequence[str]) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f"<style>{CSS}</style></head><body>\n<h1>{esc(title)}</h1>\n" + "\n".join(body) + "\n</body></html>\n")


def verdict(text: str, failed: bool) -> str:
    return f'<p class="verdict {"fail" if failed else "ok"}">{esc(text)}</p>'


# ---------------------------------------------------------------------------------------------
# kcheck check


def check_html(result: Any, summary: str, failed: bool) -> str:
    """The main job: the same four tables as the console, the summary line and a chart of the results."""
    from kcheck.report import _scope

    counts: dict[str, Counter[str]] = {"placement invariants": Counter(o.status for o in result.outcomes),
                                       "proofs": Counter(), "rebalance model": Counter(),
                                       "replication model": Counter()}
    rows, classes = [], []
    for o in result.outcomes:
        example = "" if o.smallest is None else f"{o.smallest_violations[0].message}\n{o.smallest.replay()}"
        rows.append([o.placer, o.invariant, REGISTRY[o.invariant].severity, "yes" if o.guaranteed else "no",
                     f"{o.checked:,}", f"{o.violated:,}", o.status, example])
        classes.append({"FAILED": "fail", "finding": "finding", "n/a": "na"}.get(o.status, ""))
    body = [verdict(summary, failed), "",  # the chart, once every section is counted
            f"<h2>Placement invariants over {result.cases:,} placements on {result.clusters} clusters</h2>",
            table(("placer", "invariant", "severity", "Kafka guarantees", "checked", "violated", "result",
                   "smallest counterexample"), rows, classes, numeric=("checked", "violated"))]
    rows, classes = [], []
    for r in result.proofs:
        counts["proofs"]["holds" if r.status == "proved" else "FAILED"] += 1
        status = r.status if not r.reason or r.status != "unknown" else f"unknown: {r.reason}"
        rows.append([r.algorithm, r.invariant, REGISTRY[r.invariant].severity, status, _scope(r),
                     f"{r.seconds:.2f} s", f"{r.queries:,}"])
        classes.append("" if r.status == "proved" else "fail")
    body += ["<h2>Kafka's placement guarantees, proved</h2>",
             table(("algorithm", "invariant", "severity", "result", "scope", "time", "queries / runs"), rows, classes,
                   numeric=("time", "queries / runs"))]
    rows, classes = [], []
    for m in result.models:
        counts["rebalance model"]["FAILED" if m.failure else "holds"] += 1
        findings = "".join(f"\nfinding {f.message} ({f.steps} events)" for f in getattr(m, "findings", ()))
        rows.append([m.assignor, f"{m.examples} x {m.steps}", f"{m.seconds:.2f} s",
                     (f"FAILED\n{m.failure}" if m.failure else "holds") + findings])
        classes.append("fail" if m.failure else "finding" if findings else "")
    body += ["<h2>Consumer assignors in the rebalance model (guarantees checked after every step)</h2>",
             table(("assignor", "programs x steps", "time", "result"), rows, classes, numeric=("time",))]
    rejoins = getattr(result, "rejoins", None)  # the group sweep's time-out-and-rejoin events, when run
    if rejoins is not None:
        counts["rejoin sweep"] = Counter("FAILED" if g.fails else "finding" for g in rejoins.outcomes)
        rows = [[g.assignor, g.invariant, f"{g.checked:,}", f"{g.violated:,}", "FAILED" if g.fails else "finding",
                 f"{g.message}\n{'; '.join(g.config.get('story', []))}"
                 + ("" if g.replay is None else f"\nkcheck assign --assignor {g.assignor} <file>, file: "
                    f"{json.dumps(g.replay)}")] for g in rejoins.outcomes]
        classes = ["fail" if g.fails else "finding" for g in rejoins.outcomes]
        if not rows:
            counts["rejoin sweep"]["holds"] += 1
            rows, classes = [["all", "every guarantee", "", "0", "holds", ""]], [""]
        body += [f"<h2>Consumer assignors on {rejoins.groups:,} groups with a time-out and stale rejoin per assignor "
                 f"({rejoins.seconds:.1f} s)</h2>",
                 table(("assignor", "invariant", "checked", "violated", "result", "smallest group and replay"),
                       rows, classes, numeric=("checked", "violated"))]
    rows, classes = [], []
    for r in result.replication:
        counts["replication model"]["holds" if r.ok else "FAILED"] += 1
        found = f"{', '.join(r.violated)} in {r.trace_steps} steps" if r.violated else "holds"
        res = found if r.ok else f"FAILED: {found if r.violated else r.detail}"
        if r.violated and not r.ok:
            res += f"\n{r.detail}"
        rows.append([r.protocol, r.engine, r.size, f"{r.seconds:.2f} s",
                     "a violation" if r.expect_violation else "no violation",
                     res + (" (search incomplete)" if r.detail == "incomplete" else "")])
        classes.append("" if r.ok else "fail")
    body += ["<h2>Replication model: today's protocol must hold, each historical variant must break its row</h2>",
             table(("protocol", "engine", "explored", "time", "expected", "result"), rows, classes,
                   numeric=("time",))]
    for label, title in (("request", "Request path model"), ("transactions", "Transactions model")):
        body += _model_rows(getattr(result, label, ()), f"{label} model", title, counts)
    body += _spot_section(getattr(result, "spots", ()), counts)
    body[1] = status_bars("Results by section", counts)
    return page("kcheck check", body)


def _model_rows(rows_in: Any, label: str, title: str, counts: dict[str, Counter[str]]) -> list[str]:
    """The request or transactions model's rows (invariants.request_rows.RequestRow)."""
    rows, classes = [], []
    for q in rows_in:
        counts.setdefault(label, Counter())["holds" if q.ok else "FAILED"] += 1
        found = f"{', '.join(q.violated)} in {q.trace_steps} steps" if q.violated else "holds"
        rows.append([q.rules, q.engine, q.setting, f"{q.states:,}", f"{q.seconds:.2f} s",
                     "findings" if q.findings else ("a violation" if q.expect_violation else "no violation"),
                     (found if q.ok else f"FAILED: {found}") + (f"\n{q.detail}" if q.detail else "")])
        classes.append("finding" if q.findings and q.violated else ("" if q.ok else "fail"))
    if not rows:
        return []
    return [f"<h2>{title}: each historical rule must break its property, today's rules must not</h2>",
            table(("rules", "engine", "setting", "states", "time", "expected", "result"), rows, classes,
                  numeric=("states", "time"))]


def _spot_section(spots: Any, counts: dict[str, Counter[str]]) -> list[str]:
    """The request path's references against Kafka's classes, one row per family and release."""
    if not spots:
        return []
    counts["request-path references"] = Counter("n/a" if o.skipped else "holds" if o.ok else "FAILED"
                                                for o in spots)
    rows = [[o.family, o.kafka, o.release, f"{o.inputs:,}", f"{o.seconds:.2f} s",
             f"skipped: {o.skipped}" if o.skipped else "the same answers" if o.ok
             else f"FAILED: {o.differences:,} differ; smallest:\n{o.smallest}"] for o in spots]
    classes = ["na" if o.skipped else "" if o.ok else "fail" for o in spots]
    return ["<h2>The request path's references against Kafka's own classes (random inputs, cached releases)</h2>",
            table(("family", "Kafka's classes", "release", "inputs", "time", "result"), rows, classes,
                  numeric=("inputs", "time"))]


# ---------------------------------------------------------------------------------------------
# kcheck sweep


def sweep_html(space: Any, result: Any, header: Mapping[str, Any], verdict_text: str, failed: bool) -> str:
    """A sweep's report.md as one HTML page: the invariant table, the smallest violations, the metric
    distributions and their plots (rendered here, embedded as data URIs)."""
    from kcheck.spark_check.report import config_text, invariant_rows, metric_stats, plot_metrics

    body = ["<ul>" + "".join(f"<li><b>{esc(k)}</b>: {esc(v)}</li>" for k, v in header.items()) + "</ul>",
            verdict(verdict_text, failed), "<h2>Invariants</h2>"]
    rows, classes, detailed = [], [], []
    for r in invariant_rows(space, result):
        first = f"#{r.first.config_id}: {config_text(r.first.config)}" if r.first else ""
        status = ("FAILED" if r.fails else "finding") if r.violated else ("holds" if r.checked else "n/a")
        rows.append([r.subject, r.invariant, r.severity, {True: "yes", False: "no", None: "-"}[r.guaranteed],
                     f"{r.checked:,}", f"{r.violated:,}", status, first, r.first.message if r.first else ""])
        classes.append({"FAILED": "fail", "finding": "finding", "n/a": "na"}.get(status, ""))
        if r.first:
            detailed.append((r.key, r.first))
    body.append(table(("subject", "invariant", "severity", "Kafka guarantees", "checked", "violated", "result",
                       "smallest violating configuration", "violation"), rows, classes,
                      numeric=("checked", "violated")))
    if detailed:
        body.append("<h2>Smallest violations</h2>")
        for key, first_violation in detailed:
            body.append(f"<h3>{esc(key)}</h3><p>Configuration #{first_violation.config_id}: "
                        f"{esc(config_text(first_violation.config))}</p>"
                        f"<p>{esc(first_violation.where)}: {esc(first_violation.message)}</p>")
            if "replay" in first_violation.config:
                body.append(f"<pre><code>{esc(first_violation.config['replay'])}</code></pre>")
    if result.metrics:
        stats = [metric_stats(hist) for _, hist in sorted(result.metrics.items())]
        body += ["<h2>Metric distributions</h2>", table(
            ("metric", "configurations", "mean", "median", "p99", "max"),
            [[name, f"{s['configurations']:,}", f"{s['mean']:.3f}", f"{s['median']:g}", f"{s['p99']:g}",
              f"{s['max']:g}"] for (name, _), s in zip(sorted(result.metrics.items()), stats, strict=True)],
            numeric=("configurations", "mean", "median", "p99", "max"))]
        body.append("<h2>Pictures</h2>")
        with tempfile.TemporaryDirectory() as tmp:  # rendered apart from report.md's PNGs: the page needs none
            for picture in plot_metrics(result.metrics, tmp, space.name):
                with open(os.path.join(tmp, picture.file), "rb") as f:
                    body.append(f"<figure>{png(f.read(), picture.metric)}<figcaption><b>{esc(picture.metric)}"
                                f"</b>: {esc(picture.caption)}</figcaption></figure>")
    return page(f"kcheck sweep: {space.name}", body)


def write_sweep_html(directory: str, space: Any, result: Any, header: Mapping[str, Any], verdict_text: str,
                     failed: bool) -> str:
    """DIR/report.html beside report.md; returns its path."""
    path = os.path.join(directory, "report.html")
    write_atomic(path, sweep_html(space, result, header, verdict_text, failed).encode("utf-8"))
    return path
