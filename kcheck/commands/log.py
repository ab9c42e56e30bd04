"""`kcheck log` and `kcheck sweep-log`: a topic's storage simulated step by step (kcheck.simulation.storage), and
grids of topic configs x workloads on Spark or in this process (kcheck.spark_check.log_sweep)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from kcheck.inputs.formats import InputError
from kcheck.options import check_master, spark_failure
from kcheck.runtime.exit_codes import Exit
from kcheck.simulation.storage import (
    CONFIG_KEYS,
    CONSUMER_INVARIANT,
    WORKLOAD_KEYS,
    ConfigError,
    Workload,
    check_size,
    parse_inputs,
    simulate,
    source_pairs,
)

ConfigOpt = Annotated[list[str] | None, typer.Option(
    "--config", metavar="KEY=VALUE", help="A topic config with Kafka's name, as kafka-configs --add-config takes it "
    "(repeat, or comma-separate; lists in brackets: cleanup.policy=[compact,delete]). Keys: "
    + ", ".join(CONFIG_KEYS) + ".")]


ConfigFileOpt = Annotated[str | None, typer.Option("--config-file", metavar="FILE",
                                                   help="A properties file of topic configs (--config wins).")]


WorkloadOpt = Annotated[list[str] | None, typer.Option(
    "--workload", "-w", metavar="KEY=VALUE", help="A workload setting (repeat or comma-separate). Keys: "
    + "; ".join(f"{k} ({d})" for k, (_, _, d) in WORKLOAD_KEYS.items()) + ".")]


WorkloadFileOpt = Annotated[str | None, typer.Option(
    "--workload-file", metavar="FILE", help="A properties file of workload settings (and topic configs).")]


def log_command(
    config: ConfigOpt = None,
    config_file: ConfigFileOpt = None,
    workload_file: WorkloadFileOpt = None,
    workload: WorkloadOpt = None,
    steps: Annotated[bool, typer.Option("--steps/--summary", help="Print every step's events (default), or only "
                                                                  "the summary and the violations.")] = True,
    json_out: Annotated[bool, typer.Option("--json", help="Print the events, summary and violations as JSON.")]
    = False,
) -> int:
    """Simulate a topic partition's storage (segments, indexes, retention, the log cleaner, a lagging consumer) on
    kcheck's bit-exact storage reference, step by step, checking the log invariants and the consumer's view after
    every step. Exit 1 on a violation. Refused (exit 2) above 50,000,000 steps x records produced, about 2 minutes
    of CPU (the default workload: 600 x 6,000)."""
    cfg, wl = parse_inputs(config or [], config_file, workload_file, workload or [])
    sim = simulate(cfg, wl, record_steps=steps or json_out)
    code = Exit.FAILED if sim.violations else Exit.OK
    if json_out:
        print(json.dumps({"config": cfg.as_kafka(), "workload": wl.as_dict(), "ok": sim.ok, "exit_status": int(code),
                          "summary": sim.summary, "steps": [e.as_dict() for e in sim.events] if steps else None,
                          "violations": [v.as_dict() for v in sim.violations]}, indent=2))
        return int(code)
    from rich.markup import escape
    from rich.table import Table

    from kcheck import report
    out = report.console()
    if steps:
        table = Table(title="Steps", title_justify="left")
        for col in ("step", "time ms", "event", "segment", "what happened"):
            table.add_column(col, overflow="fold", justify="right" if col in ("step", "time ms", "segment") else "left")
        for e in sim.events:
            table.add_row(str(e.step), str(e.time_ms), e.kind, "-" if e.segment is None else str(e.segment),
                          escape(e.detail))
        out.print(table)
    s = sim.summary
    st = Table(title="Summary", title_justify="left", show_header=False)
    st.add_column("what")
    st.add_column("value", overflow="fold")
    for k, v in s.items():
        st.add_row(k.replace("_", " "), escape(str(v)))
    out.print(st)
    if sim.violations:
        vt = Table(title="Violations", title_justify="left")
        for col in ("step", "time ms", "invariant", "segment", "offset", "key", "violation"):
            vt.add_column(col, overflow="fold")
        for v in sim.violations:
            vt.add_row(str(v.step), str(v.time_ms), v.invariant, "-" if v.segment is None else str(v.segment),
                       "-" if v.offset is None else str(v.offset), escape(v.key or "-"), escape(v.message))
        out.print(vt)
    verdict = "FAIL" if sim.violations else "OK"
    out.print(f"{verdict}: {len(sim.violations)} violation(s) in {wl.steps} step(s) "
              f"({s['records_produced']} records, {s['rolls']} roll(s), {s['cleaner_passes']} cleaner pass(es))",
              markup=False, soft_wrap=True)
    return int(code)


def _costliest(grid: Any) -> Workload:
    """The workload of a grid's costliest cell: the most records a second, the longest duration, the shortest step
    any axis gives (cost grows with the first two and falls with the step)."""
    pairs = list(grid.workload)
    for key, pick in (("rate", max), ("duration", max), ("step", min)):
        values = dict(grid.axes).get(key)
        if values:
            parse = WORKLOAD_KEYS[key][1]
            pairs.append((key, pick(values, key=parse)))
    return Workload.from_pairs(pairs)


def sweep_log_command(
    config: ConfigOpt = None,
    config_file: ConfigFileOpt = None,
    workload_file: WorkloadFileOpt = None,
    workload: WorkloadOpt = None,
    axis: Annotated[list[str] | None, typer.Option(
        "--axis", metavar="KEY=VALUES", help="A grid axis: a topic config or workload key and its values, "
        "V1,V2,... or LO..HI/STEP (durations allowed: consumer.lag.ms=0..40s/5s); repeat. Default grid: "
        "delete.retention.ms=2000,10000,30000 x consumer.lag.ms=0..50s/5s on a compacted topic.")] = None,
    threshold: Annotated[str | None, typer.Option(
        "--threshold", metavar="AXIS", help="The axis whose smallest breaking value is reported per combination "
                                            "of the others (default: consumer.lag.ms or .records when an axis).")]
    = None,
    master: Annotated[str | None, typer.Option(help="Spark master URL (default local[2]).")] = None,
    python: Annotated[bool, typer.Option("--python", help="Run the cells in this process, without Spark.")]
    = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print every cell and the findings as JSON.")] = False,
) -> int:
    """Run `kcheck log`'s simulation over a grid of topic configs x workloads (Spark, local[2] by default) and
    report which configurations break which invariant, and the smallest threshold-axis value (e.g. consumer lag)
    that breaks each. Exit 1 when a log invariant breaks, or a consumer lagging at most delete.retention.ms
    misses a tombstone (Kafka promises both); other consumer findings are reported, exit 0. Refused (exit 2) above
    100,000 cells, or 500,000,000 steps x records over the grid (its costliest cell's count for every cell; about
    20 minutes of CPU)."""
    import time as _time

    from kcheck.spark_check import log_sweep as sw

    if config is not None or config_file or workload is not None or workload_file:
        cpairs, wpairs = source_pairs(config or [], config_file, workload_file, workload or [])
    else:
        cpairs, wpairs = list(sw.DEFAULT_CONFIG), list(sw.DEFAULT_WORKLOAD)
    try:
        axes = tuple(sw.parse_axis(a) for a in axis) if axis else sw.DEFAULT_AXES
        grid = sw.LogGrid(tuple(cpairs), tuple(wpairs), axes)
        grid.validate()
        t_axis = sw.threshold_axis(grid, threshold)
        worst = _costliest(grid)
    except ConfigError as e:
        from kcheck.inputs import formats
        where = "--threshold" if threshold is not None and e.key == threshold else "--axis"
        raise InputError(where, f"{formats.shown(e.key, 60)}: {e.message}") from None
    check_size(Workload.from_pairs(wpairs), "--workload", len(grid))  # every cell runs the base workload at least
    check_size(worst, "--axis", len(grid))
    if python and master is not None:
        raise InputError("--master", "the cells run in this process with --python: no Spark master to give them to")
    if not python:

        check_master(master)
    began = _time.perf_counter()
    try:
        rows = sw.sweep_python(grid) if python else sw.sweep_spark(grid, master)
    except Exception as e:

        if (bad := spark_failure(e, master)) is not None:
            raise bad from None
        raise
    wall = _time.perf_counter() - began
    inv = sw.invariant_rows(rows)
    names, ths = sw.thresholds(grid, rows, t_axis) if t_axis else ([], [])
    failing = [r for r in inv if r.failing]
    code = Exit.FAILED if failing else Exit.OK
    cpu = sum(r.seconds for r in rows)
    engine = "python" if python else f"spark {master or 'local[2]'}"
    if json_out:
        print(json.dumps({
            "config": dict(grid.config), "workload": dict(grid.workload), "axes": {k: list(v) for k, v in grid.axes},
            "cells": len(grid), "engine": engine, "seconds": round(wall, 3), "cpu_seconds_in_cells": round(cpu, 3),
            "invariants": [{"invariant": r.invariant, "checked": r.checked, "broken": r.broken, "failing": r.failing,
                            "smallest": None if r.smallest is None else
                            {"params": r.smallest.params, "violation": r.smallest.first[r.invariant]}}
                           for r in inv],
            "threshold_axis": t_axis,
            "thresholds": [{"others": t.others, "smallest": t.smallest} for t in ths],
            "rows": [{"params": r.params, "violated": r.violated, "promised": r.promised, "records": r.records}
                     for r in rows],
            "ok": not failing, "exit_status": int(code)}, indent=2))
        return int(code)
    from rich.markup import escape
    from rich.table import Table

    from kcheck import report
    out = report.console()
    out.print(f"kcheck sweep-log: {len(grid):,} cells ({escape(sw.grid_text(grid))}) over "
              f"{escape(sw.base_text(grid.config))}; workload {escape(sw.base_text(grid.workload))}; {engine}",
              soft_wrap=True)
    table = Table(title="Invariants", title_justify="left")
    for col in ("invariant", "cells", "broken", "Kafka promises it there", "smallest breaking cell"):
        table.add_column(col, overflow="fold", justify="right" if col in ("cells", "broken") else "left")
    for r in inv:
        example = "-"
        if r.smallest is not None:
            first = r.smallest.first[r.invariant]
            example = (f"{sw.base_text(r.smallest.params.items())}: step {first['step']}, segment {first['segment']}, "
                       f"offset {first['offset']}, key {first['key']}: {first['message']}")
        table.add_row(r.invariant, f"{r.checked:,}", f"{r.broken:,}",
                      f"{r.failing:,} cell(s)" if r.invariant == CONSUMER_INVARIANT else "always",
                      escape(example))
    out.print(table)
    if t_axis and names:
        tt = Table(title=f"Smallest {t_axis} that breaks each invariant", title_justify="left")
        for k in [k for k, _ in grid.axes if k != t_axis]:
            tt.add_column(k)
        for n in names:
            tt.add_column(n, justify="right")
        for t in ths:
            tt.add_row(*t.others.values(), *("holds" if t.smallest[n] is None else str(t.smallest[n]) for n in names))
        out.print(tt)
    rate = f"{len(rows) / wall:,.1f} cells/s" if wall else "-"
    out.print(f"{len(rows):,} cells in {wall:.1f} s ({rate}; {cpu:.1f} CPU s in the simulations)", markup=False)
    out.print(("FAIL: " if failing else "OK: ") + f"{len(failing)} invariant(s) broken where Kafka promises them"
              + (f" ({', '.join(r.invariant for r in failing)})" if failing else "")
              + f"; {sum(1 for r in inv if r.broken and not r.failing)} finding(s) where it does not",
              markup=False, soft_wrap=True)
    return int(code)
