"""The CI gate: findings judged by what a change does, known findings suppressed with a reason, `--fail-on`.

`verify-reassignment` compares the findings of the target (the placement once the plan completes, and the safety
of every move) with the findings of the cluster as it is; `verify` compares with `--baseline` when given. A
finding is matched on (invariant, where): the message may change (a count, an average) and it is still the same
finding. Each finding is then one of

- introduced: not found before (without anything to compare with, every finding is introduced: nothing is
  known, so nothing may pass as already there);
- unchanged: found before and after, or found before by a check the target cannot answer (the health of a
  partition as it is now: the plan leaves it as it is);
- fixed: found before by a check the target also ran, and gone after;
- suppressed: introduced or unchanged, but listed in `--allowlist` (with its reason) or in `--baseline` (a
  previous `--json` report of the same command).

`--fail-on` says what fails the gate (exit 1): `hard` (default) any hard finding that is not suppressed, `soft`
any finding that is not suppressed, `new` only the hard findings the change introduces.

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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from kcheck import formats
from kcheck.exit_codes import Exit
from kcheck.formats import InputError
from kcheck.invariants import REGISTRY, Report, Severity, Violation
from kcheck.invariants.registry import canonical

FAIL_ON = ("hard", "soft", "new")

BaselineOpt = Annotated[str | None, typer.Option(
    "--baseline", metavar="FILE",
    help="A previous --json report of this command: the findings it lists are known and do not fail the gate "
         "(shown as suppressed, with the file as the reason).")]
AllowlistOpt = Annotated[str | None, typer.Option(
    "--allowlist", metavar="FILE",
    help="Known findings, one a line: 'invariant | where | reason' (where may use * and ?; the reason is "
         "required). They do not fail the gate and are shown with their reason.")]
DecommissionOpt = Annotated[str | None, typer.Option(
    "--decommission", metavar="IDS",
    help="Brokers leaving the cluster, e.g. 5,6: balance is judged over the other brokers, and a replica still "
         "placed on a leaving broker is a hard finding.")]
FailOnOpt = Annotated[str, typer.Option(
    "--fail-on", metavar="LEVEL",
    help="What fails the gate (exit 1): hard (any hard finding not suppressed), soft (any finding not "
         "suppressed), new (only hard findings the change introduces).")]

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
    known: frozenset[tuple[str, str]] = frozenset()  # (invariant, where) of the baseline's findings
    baseline_report: Report | None = None  # the baseline's findings as a Report (verify compares with it)


def _decommission(text: str) -> frozenset[int]:
    ids = []
    for part in text.split(","):
        item = part.strip()
        if not _ID_RE.fullmatch(item):
            raise InputError("--decommission", f"'{formats.shown(item, 40)}' is not a broker id (e.g. --decommission "
                                               "5,6)")
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
    known = frozenset((v.invariant, v.where) for v in report.violations) if report else frozenset()
    return GateSettings(baseline, allowlist, leaving, fail_on, allow, known, report)


def check_decommission(settings: GateSettings, broker_ids: Iterable[int]) -> None:
    """Every leaving broker must be one of the cluster's."""
    known = set(broker_ids)
    unknown = sorted(settings.decommission - known)
    if unknown:
        raise InputError("--decommission", f"broker {unknown[0]} is not in the cluster (brokers: "
                                           f"{','.join(map(str, sorted(known)))})")


@dataclass(frozen=True)
class Judged:
    introduced: tuple[Violation, ...]
    fixed: tuple[Violation, ...]
    unchanged: tuple[Violation, ...]
    suppressed: tuple[tuple[Violation, str], ...]  # (finding, reason)
    exit: Exit
    fail_on: str = "hard"
    against: str | None = None  # what the findings were compared with, for people

    @property
    def counted(self) -> tuple[Violation, ...]:
        """The findings that fail the gate."""
        return counted(self.introduced, self.unchanged, self.fail_on)


def counted(introduced: Sequence[Violation], unchanged: Sequence[Violation], fail_on: str) -> tuple[Violation, ...]:
    if fail_on == "new":
        return tuple(v for v in introduced if v.severity is Severity.HARD)
    both = (*introduced, *unchanged)
    return both if fail_on == "soft" else tuple(v for v in both if v.severity is Severity.HARD)


def _key(v: Violation) -> tuple[str, str]:
    return v.invariant, v.where


def judge(after: Report, before: Report | None, settings: GateSettings, against: str | None = None) -> Judged:
    """The findings of `after` judged against those of `before` (None: nothing to compare with, so every finding
    is introduced), then the allowlist and the baseline applied, then `--fail-on`."""
    before_keys = {_key(v) for v in before.violations} if before else set()
    after_keys = {_key(v) for v in after.violations}
    introduced = [v for v in after.violations if _key(v) not in before_keys]
    unchanged = [v for v in after.violations if _key(v) in before_keys]
    fixed: list[Violation] = []
    seen = set(after_keys)
    for v in before.violations if before else ():
        if _key(v) in seen:
            continue
        seen.add(_key(v))
        # a check the target did not run (the live state of a partition) cannot say the plan fixed it
        (fixed if v.invariant in after.checked else unchanged).append(v)
    suppressed: list[tuple[Violation, str]] = []

    def keep(v: Violation) -> bool:
        for entry in settings.allow:
            if entry.matches(v):
                suppressed.append((v, f"allowlist {settings.allowlist} line {entry.line}: {entry.reason}"))
                return False
        if _key(v) in settings.known:
            suppressed.append((v, f"in the baseline {settings.baseline}"))
            return False
        return True

    introduced = [v for v in introduced if keep(v)]
    unchanged = [v for v in unchanged if keep(v)]
    failing = counted(introduced, unchanged, settings.fail_on)
    return Judged(tuple(introduced), tuple(fixed), tuple(unchanged), tuple(suppressed),
                  Exit.FAILED if failing else Exit.OK, settings.fail_on, against)


def judged_json(j: Judged) -> dict[str, Any]:
    return {
        "fail_on": j.fail_on,
        "compared_with": j.against,
        "introduced": [v.as_dict() for v in j.introduced],
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
    rows += [("suppressed", v, f"{v.message} [suppressed: {reason}]") for v, reason in j.suppressed]
    order = {"introduced": 0, "unchanged": 1, "suppressed": 2, "fixed": 3}
    rows.sort(key=lambda r: (id(r[1]) not in fails, order[r[0]], r[1].severity is not Severity.HARD,
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


def report_json_fields(result: Report, j: Judged, command: str) -> dict[str, Any]:
    """What a gated command adds to its --json report: the command (a baseline must be the same command's),
    the judgement, and "ok" as the gate says."""
    return {"command": command, **judged_json(j), "ok": j.exit is Exit.OK}
