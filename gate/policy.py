"""The CI gate: findings judged by what a change does, known findings suppressed with a reason, `--fail-on`.

`verify-reassignment` compares the findings of the target (the placement once the plan completes, and the safety
of every move) with the findings of the cluster as it is (its placement, its partitions' health, and the per-move
checks with nothing moved: an ISR already at `min.insync.replicas` has no headroom before any move); `verify`
compares with `--baseline` when given. Findings are matched on what they are about: the invariant and the place
(`where`: the broker, partition, rack or topic), then compared on the numbers in question (`figures`: a broker's
replica count, a partition's racks spanned, an ISR's size; not the message, nor cluster-wide context such as an
average or a limit). Each finding is then one of

- introduced: no finding of that invariant at that place before (without anything to compare with, every finding
  is introduced: nothing is known, so nothing may pass as already there);
- changed: found at the same place before with other figures (a broker going from 0 replicas to 6, or from 4 to
  0), shown before -> after, and *worse* when it is further outside its limit than before (`badness`), *better*
  when closer;
- unchanged: found before with the same figures, or found before by a check the target cannot answer (the health
  of a partition as it is now, the per-move checks of the state before the move: the plan leaves them as they are);
- fixed: found before by a check the target also ran, and gone after;
- suppressed: introduced, changed or unchanged, but listed in `--allowlist` (with its reason), or in `--baseline`
  (a previous `--json` report of the same command) at the same place and not worse than there.

`--fail-on` says what fails the gate (exit 1): `hard` (default) any hard finding that is not suppressed, `soft`
any finding that is not suppressed, `new` the hard findings the change introduces or makes worse (a changed hard
finding whose figures kcheck cannot rank counts as worse: a CI gate fails closed).

A baseline written by an older kcheck is read the same way: its findings are compared on the figures both reports
name, and a finding whose figures the baseline does not give is the same finding.

The allowlist is a text file, one known finding a line, three fields separated by `|`::

    # invariant               | where                | reason (required)
    placement.rack-diversity  | partition legacy-0   | one-rack topic until the migration (OPS-42)
    placement.replica-spread  | broker *             | balance is Cruise Control's job here

`where` is the finding's place as the reports print it; `*` and `?` match any text and any one character.
The invariant is an id `kcheck invariants` lists (or a pattern that matches one). Blank lines and lines that
start with `#` are skipped.

`--decommission 5,6` marks brokers as leaving: the placement's balance goals are judged over the other brokers
(`invariants.placement.PlacementSubject.leaving`), and a target that still places a replica on a leaving broker
is a hard finding (`placement.leaving-broker-emptied`).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.markup import escape
from rich.table import Table

from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.invariants import REGISTRY, Report, Severity, Violation
from kcheck.invariants.registry import canonical
from kcheck.runtime.exit_codes import Exit

FAIL_ON = ("hard", "soft", "new")


_ID_RE = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class AllowEntry:
    invariant: str  # an id or a pattern
    where: str  # a pattern
    reason: str
    line: int

    def matches(self, v: Violation) -> bool:
        return fnmatch.fnmatchcase(v.invariant, self.invariant) and fnmatch.fnmatchcase(v.where, self.where)


@dataclass(frozen=True)
class GateSettings:
    baseline: str | None
    allowlist: str | None
    decommission: frozenset[int]
    fail_on: str
    allow: tuple[AllowEntry, ...] = ()  # the allowlist's entries
    baseline_report: Report | None = None  # the baseline's findings as a Report (verify compares with it)


def _decommission(text: str) -> frozenset[int]:
    ids = []
    for part in text.split(","):
        item = part.strip()
        if not _ID_RE.fullmatch(item):
            raise InputError("--decommission", f"'{formats.shown(item, 40)}' is not a broker id (e.g. --decommission "
                                               "5,6)")
        if len(item) > 10 or int(item) > 2**31 - 1:  # the length first: int() of thousands of digits raises
            raise InputError("--decommission", f"broker id {formats.shown(item, 20)} is above 2147483647 (Kafka's "
                                               "int32 maximum)")
        ids.append(int(item))
    return frozenset(ids)


def read_allowlist(path: str) -> tuple[AllowEntry, ...]:
    entries = []
    for n, raw in enumerate(formats.read_text(path).splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split("|", 2)]
        if len(fields) < 3:
            raise InputError(path, "expected 'invariant | where | reason'", n)
        invariant, where, reason = fields
        bad = next((p for p in map(formats.control_problem, fields) if p is not None), None)
        if bad is not None:
            raise InputError(path, f"a field {bad}", n)
        invariant = canonical(invariant)  # a former id (README, "Renamed invariants") names today's
        if not reason:
            raise InputError(path, "the reason is required ('invariant | where | reason')", n)
        if not invariant or not where:
            raise InputError(path, f"the {'invariant' if not invariant else 'where'} is empty", n)
        if not any(fnmatch.fnmatchcase(i, invariant) for i in REGISTRY):
            raise InputError(path, f"'{formats.shown(invariant, 60)}' is no invariant kcheck knows "
                                   "(kcheck invariants lists them)", n)
        entries.append(AllowEntry(invariant, where, reason, n))
    return tuple(entries)


def read_baseline(path: str, command: str | None = None) -> Report:
    """The findings of a previous `--json` report (its "violations"), as a Report; `command`: the report must be
    this command's when it names one."""
    try:
        doc = json.loads(formats.read_text(path))
    except (ValueError, RecursionError) as e:
        raise InputError(path, f"not a kcheck --json report: {formats.one_line(str(e))}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("violations"), list):
        raise InputError(path, "not a kcheck --json report (no \"violations\" list)")
    if command is not None and doc.get("command", command) != command:
        raise InputError(path, f"is a report of kcheck {formats.shown(str(doc['command']), 40)}, not of kcheck "
                               f"{command}")
    found = []
    for i, v in enumerate(doc["violations"]):
        if not (isinstance(v, dict) and isinstance(v.get("invariant"), str) and isinstance(v.get("where"), str)):
            raise InputError(path, f"violation #{i + 1} has no \"invariant\" and \"where\" strings")
        severity = Severity.SOFT if v.get("severity") == "soft" else Severity.HARD
        detail = v.get("detail")
        found.append(Violation(canonical(v["invariant"]), severity, v["where"], str(v.get("message", "")),
                               detail if isinstance(detail, dict) else {}))
    checked = doc.get("checked")
    checked = tuple(canonical(c) for c in checked if isinstance(c, str)) if isinstance(checked, list) else \
        tuple(sorted({v.invariant for v in found}))
    return Report(checked, {}, tuple(found))


def gate_settings(baseline: str | None, allowlist: str | None, decommission: str | None, fail_on: str,
                  command: str | None = None) -> GateSettings:
    """The gate's options, read and checked; InputError (exit 2) for anything wrong with them."""
    if fail_on not in FAIL_ON:
        raise InputError("--fail-on", f"'{formats.shown(fail_on, 40)}' is not one of {', '.join(FAIL_ON)}")
    leaving = _decommission(decommission) if decommission is not None else frozenset()
    allow = read_allowlist(allowlist) if allowlist else ()
    report = read_baseline(baseline, command) if baseline else None
    return GateSettings(baseline, allowlist, leaving, fail_on, allow, report)


def check_decommission(settings: GateSettings, broker_ids: Iterable[int]) -> None:
    """Every leaving broker must be one of the cluster's."""
    known = set(broker_ids)
    unknown = sorted(settings.decommission - known)
    if unknown:
        raise InputError("--decommission", f"broker {unknown[0]} is not in the cluster (brokers: "
                                           f"{','.join(map(str, sorted(known)))})")


# What a finding is about, besides its place: the numbers in question, per invariant where the detail holds more
# than those (the replica list of a partition whose racks are the point, every follower count of a broker). Other
# invariants (and users') use every detail value but the place and the cluster-wide context below.
_CONTEXT = frozenset({"average", "lower", "upper", "limit", "excess", "min_per_rack", "max_per_rack",
                      "brokers_per_rack", "partitions"})
_PLACES = frozenset({"partition", "broker", "rack", "topic"})


def _off_limits(d: Mapping[str, Any]) -> dict[str, Any]:
    counts, lower, upper = d.get("followers_per_broker"), d.get("lower"), d.get("upper")
    if not (isinstance(counts, Mapping) and isinstance(lower, int) and isinstance(upper, int)):
        return {}
    return {"followers_off_limits": {str(b): n for b, n in counts.items() if not lower <= n <= upper}}


def _isr_size(d: Mapping[str, Any]) -> dict[str, Any]:
    isr = d.get("isr")
    return {"isr_size": len(isr) if isinstance(isr, list) else None,
            "min_insync_replicas": d.get("min_insync_replicas")}


def _keys(*names: str) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    return lambda d: {k: d.get(k) for k in names}


_FIGURES: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "placement.distinct-brokers": _keys("duplicated"),
    "placement.rack-diversity": _keys("racks_spanned", "racks_needed"),
    "placement.rack-distribution": _keys("replicas_per_rack"),
    "placement.leader-unfenced": _keys("leader"),
    "placement.follower-spread": _off_limits,
    "reassignment.min-isr-now": _isr_size,
}


def _plain(value: Any) -> Any:
    """A figure as compared: lists of ids as sets (an ISR's order is no number), mappings by key."""
    if isinstance(value, list | tuple):
        items = [_plain(x) for x in value]
        return tuple(sorted(items, key=repr))
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _plain(x)) for k, x in value.items()))
    return value


def figures(v: Violation) -> dict[str, Any]:
    """The numbers a finding is about (`_FIGURES`, else its detail but the place and cluster-wide context); a
    figure the finding does not give is left out."""
    pick = _FIGURES.get(v.invariant)
    found = pick(v.detail) if pick else {k: x for k, x in v.detail.items() if k not in _PLACES | _CONTEXT}
    return {k: _plain(x) for k, x in found.items() if x is not None}


def badness(v: Violation) -> float | None:
    """How far a finding is outside its limit (larger is worse), or None when its detail does not say: the excess
    over a limit or below it (balance, capacity, racks spanned, replication factor), the replicas on a leaving
    broker or on one while the plan runs, the ISR members short of min.insync.replicas, the brokers or replicas a
    partition has wrong."""
    d = v.detail

    def number(key: str) -> float | None:
        x = d.get(key)
        return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None

    def size(key: str) -> float | None:
        x = d.get(key)
        return float(len(x)) if isinstance(x, list | tuple) else None

    need, excess = number("min_insync_replicas"), number("excess")
    for measure in (
        None if excess is None else abs(excess),
        number("count"),
        None if need is None or number("lowest_isr") is None else need - (number("lowest_isr") or 0.0),
        None if need is None or size("isr") is None else need - (size("isr") or 0.0),
        size("duplicated"), size("lagging"), size("brokers"),
    ):
        if measure is not None:
            return measure
    return None


@dataclass(frozen=True)
class Change:
    """A finding at the same place before and after whose figures differ."""

    before: Violation
    after: Violation

    @property
    def direction(self) -> str:
        """worse, better, level, or unknown (a figure kcheck cannot rank: counted as worse by --fail-on new)."""
        b0, b1 = badness(self.before), badness(self.after)
        if b0 is None or b1 is None:
            return "unknown"
        return "worse" if b1 > b0 else "better" if b1 < b0 else "level"

    @property
    def worse(self) -> bool:
        return self.direction in ("worse", "unknown")

    @property
    def text(self) -> str:
        return f"{self.before.message} → {self.after.message}"


def _same(before: Violation, after: Violation) -> bool:
    """Same figures, on the figures both findings give (a baseline from an older kcheck may give fewer)."""
    a, b = figures(before), figures(after)
    return all(a[k] == b[k] for k in a.keys() & b.keys())


@dataclass(frozen=True)
class Judged:
    introduced: tuple[Violation, ...]
    fixed: tuple[Violation, ...]
    unchanged: tuple[Violation, ...]
    suppressed: tuple[tuple[Violation, str], ...]  # (finding, reason)
    exit: Exit
    fail_on: str = "hard"
    against: str | None = None  # what the findings were compared with, for people
    changed: tuple[Change, ...] = ()

    @property
    def counted(self) -> tuple[Violation, ...]:
        """The findings that fail the gate."""
        return counted(self.introduced, self.unchanged, self.fail_on, self.changed)


def counted(introduced: Sequence[Violation], unchanged: Sequence[Violation], fail_on: str,
            changed: Sequence[Change] = ()) -> tuple[Violation, ...]:
    if fail_on == "new":
        return tuple(v for v in (*introduced, *(c.after for c in changed if c.worse)) if v.severity is Severity.HARD)
    every = (*introduced, *(c.after for c in changed), *unchanged)
    return every if fail_on == "soft" else tuple(v for v in every if v.severity is Severity.HARD)


def _key(v: Violation) -> tuple[str, str]:
    return v.invariant, v.where


def _match(after: Sequence[Violation], before: Sequence[Violation]) -> tuple[
        list[Violation], list[Change], list[Violation], list[Violation]]:
    """(introduced, changed, unchanged, the before findings nothing matched): each finding of `after` takes a
    finding at its place in `before`, one with the same figures first."""
    left: dict[tuple[str, str], list[Violation]] = {}
    for v in before:
        left.setdefault(_key(v), []).append(v)
    introduced: list[Violation] = []
    changed: list[Change] = []
    unchanged: list[Violation] = []
    for v in after:
        there = left.get(_key(v))
        if not there:
            introduced.append(v)
            continue
        same = next((b for b in there if _same(b, v)), None)
        if same is not None:
            there.remove(same)
            unchanged.append(v)
        else:
            changed.append(Change(there.pop(0), v))
    return introduced, changed, unchanged, [v for vs in left.values() for v in vs]


def judge(after: Report, before: Report | None, settings: GateSettings, against: str | None = None,
          cannot_fix: Iterable[str] = ()) -> Judged:
    """The findings of `after` judged against those of `before` (None: nothing to compare with, so every finding
    is introduced), then the allowlist and the baseline applied, then `--fail-on`. `cannot_fix`: invariants whose
    findings in `before` describe the state before the change, which the change cannot fix (gone after: unchanged,
    as for checks the target does not run)."""
    introduced, changed, unchanged, gone = _match(after.violations, before.violations if before else ())
    fixed: list[Violation] = []
    kept = set(cannot_fix)
    for v in gone:
        # a check the target did not run (the live state of a partition) cannot say the plan fixed it
        (fixed if v.invariant in after.checked and v.invariant not in kept else unchanged).append(v)
    suppressed: list[tuple[Violation, str]] = []
    baseline: dict[tuple[str, str], list[Violation]] = {}
    for b in settings.baseline_report.violations if settings.baseline_report else ():
        baseline.setdefault(_key(b), []).append(b)

    def keep(v: Violation) -> bool:
        for entry in settings.allow:
            if entry.matches(v):
                suppressed.append((v, f"allowlist {settings.allowlist} line {entry.line}: {entry.reason}"))
                return False
        known = baseline.get(_key(v), [])
        if any(_same(b, v) for b in known):
            suppressed.append((v, f"in the baseline {settings.baseline}"))
            return False
        better = next((c for c in (Change(b, v) for b in known) if not c.worse), None)
        if better is not None:
            suppressed.append((v, f"in the baseline {settings.baseline}, not worse than there "
                                  f"({better.before.message})"))
            return False
        return True

    introduced = [v for v in introduced if keep(v)]
    changed = [c for c in changed if keep(c.after)]
    unchanged = [v for v in unchanged if keep(v)]
    failing = counted(introduced, unchanged, settings.fail_on, changed)
    return Judged(tuple(introduced), tuple(fixed), tuple(unchanged), tuple(suppressed),
                  Exit.FAILED if failing else Exit.OK, settings.fail_on, against, tuple(changed))


def judged_json(j: Judged) -> dict[str, Any]:
    return {
        "fail_on": j.fail_on,
        "compared_with": j.against,
        "introduced": [v.as_dict() for v in j.introduced],
        "changed": [{**c.after.as_dict(), "direction": c.direction, "before": c.before.as_dict()}
                    for c in j.changed],
        "fixed": [v.as_dict() for v in j.fixed],
        "unchanged": [v.as_dict() for v in j.unchanged],
        "suppressed": [{**v.as_dict(), "reason": reason} for v, reason in j.suppressed],
        "exit_status": int(j.exit),
    }


MAX_ROWS = 500  # Rich takes minutes over tens of thousands of rows (--json lists them all)


def judged_table(j: Judged, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("change", "severity", "invariant", "where", "finding"):
        table.add_column(col, overflow="fold")
    fails = set(map(id, j.counted))
    rows: list[tuple[str, Violation, str]] = []
    for change, vs in (("introduced", j.introduced), ("unchanged", j.unchanged), ("fixed", j.fixed)):
        rows += [(change, v, v.message) for v in vs]
    rows += [(_changed_label(c), c.after, c.text) for c in j.changed]
    rows += [("suppressed", v, f"{v.message} [suppressed: {reason}]") for v, reason in j.suppressed]
    order = {"introduced": 0, "changed": 1, "unchanged": 2, "suppressed": 3, "fixed": 4}
    rows.sort(key=lambda r: (id(r[1]) not in fails, order[r[0].split(" ")[0]], r[1].severity is not Severity.HARD,
                             r[1].invariant))
    for change, v, text in rows[:MAX_ROWS]:
        if j.against is None and change == "introduced":  # nothing to compare with: simply found
            change = "found"
        style = "bold red" if id(v) in fails else ("yellow" if change != "fixed" else "green")
        table.add_row(f"[{style}]{change}[/]", str(v.severity), v.invariant, escape(formats.printable(v.where)),
                      escape(formats.printable(text)))
    if len(rows) > MAX_ROWS:
        table.caption = f"{MAX_ROWS:,} of {len(rows):,} findings shown, those failing the gate first (--json " \
                        "lists them all)"
    return table


def _changed_label(c: Change) -> str:
    return "changed" if c.direction in ("level", "unknown") else f"changed ({c.direction})"


def report_json_fields(result: Report, j: Judged, command: str) -> dict[str, Any]:
    """What a gated command adds to its --json report: the command (a baseline must be the same command's),
    the judgement, and "ok" as the gate says."""
    return {"command": command, **judged_json(j), "ok": j.exit is Exit.OK}
