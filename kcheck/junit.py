"""`--junit-xml FILE`: the results as a JUnit XML report, the format Jenkins, GitLab and GitHub Actions display.

One <testcase> per checked item. Whatever makes the command exit 1 is a <failure> (so a report has failures
exactly when the command exits 1); a soft violation or a finding about a property Kafka does not promise is
a passing test case whose <system-out> says what was found; an invariant that does not apply is <skipped>.
Reports (this one and `--html`) are written atomically, never over a file given as input on the same command.
"""

from __future__ import annotations

import datetime
import os
import re
import stat
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.invariants import REGISTRY, Report, Severity, Violation

MAX_DETAIL_LINES = 200  # a failure body lists at most this many violations (--json lists them all)
# Characters XML 1.0 cannot carry at all (user text may hold them): replaced, or the file would not parse.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass
class TestCase:
    classname: str
    name: str
    seconds: float = 0.0
    failure: str | None = None  # the failure's one-line message; None when the case passed
    detail: str = ""  # the failure's body
    skipped: str | None = None  # why it does not apply
    output: str = ""  # <system-out>: findings and soft violations, which do not fail the command

    __test__ = False  # not a pytest class


@dataclass
class TestSuite:
    name: str
    cases: list[TestCase]
    seconds: float = 0.0
    properties: dict[str, str] = field(default_factory=dict)

    __test__ = False

    @property
    def failures(self) -> int:
        return sum(c.failure is not None for c in self.cases)

    @property
    def skipped(self) -> int:
        return sum(c.skipped is not None and c.failure is None for c in self.cases)


def _clean(text: Any) -> str:
    return _NOT_XML.sub("\ufffd", str(text))


def _counts(el: ET.Element, tests: int, failures: int, skipped: int, seconds: float) -> None:
    for key, value in (("tests", tests), ("failures", failures), ("errors", 0), ("skipped", skipped),
                       ("time", f"{seconds:.3f}")):
        el.set(key, str(value))


def to_xml(name: str, suites: Sequence[TestSuite]) -> bytes:
    root = ET.Element("testsuites", name=_clean(name))
    _counts(root, sum(len(s.cases) for s in suites), sum(s.failures for s in suites),
            sum(s.skipped for s in suites), sum(s.seconds for s in suites))
    stamp = datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()
    for suite in suites:
        el = ET.SubElement(root, "testsuite", name=_clean(suite.name), timestamp=stamp)
        _counts(el, len(suite.cases), suite.failures, suite.skipped, suite.seconds)
        if suite.properties:
            props = ET.SubElement(el, "properties")
            for k, v in suite.properties.items():
                ET.SubElement(props, "property", name=_clean(k), value=_clean(v))
        seen: dict[tuple[str, str], int] = {}
        for case in suite.cases:
            # CI tools merge cases with the same class and name: keep each one visible
            n = seen[(case.classname, case.name)] = seen.get((case.classname, case.name), 0) + 1
            tc = ET.SubElement(el, "testcase", classname=_clean(case.classname),
                               name=_clean(case.name if n == 1 else f"{case.name} #{n}"), time=f"{case.seconds:.3f}")
            if case.failure is not None:
                f = ET.SubElement(tc, "failure", message=_clean(case.failure), type="failure")
                f.text = _clean(case.detail or case.failure)
            elif case.skipped is not None:
                ET.SubElement(tc, "skipped", message=_clean(case.skipped))
            if case.output:
                ET.SubElement(tc, "system-out").text = _clean(case.output)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


# ---------------------------------------------------------------------------------------------
# Output files: checked before the work starts, written atomically


# Where kcheck never writes: pseudo file systems whose files are the kernel's, not reports.
_PSEUDO = ("/proc", "/sys", "/dev")


def _refuse_place(target: str, path: str, option: str) -> None:
    """A target in a pseudo file system, or an existing special file (a device, a FIFO, a socket)."""
    if any(target == p or target.startswith(p + "/") for p in _PSEUDO) and not target.startswith("/dev/shm/"):
        raise InputError(option, f"{formats.shown(path)} is in {target.split('/')[1] and '/' + target.split('/')[1]}, "
                                 "a file system of the kernel's, not a place for a report")
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return
    if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
        return
    kind = "a named pipe" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else \
        "a socket" if stat.S_ISSOCK(mode) else "a special file"
    raise InputError(option, f"{formats.shown(path)} is {kind}, not a regular file")


def _probe_writable(directory: str, path: str, option: str) -> None:
    """Create and remove a file in `directory`: the only test that holds for root, read-only mounts and quotas."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".kcheck-probe-", dir=directory)
    except OSError as e:
        raise InputError(option, f"cannot write in {formats.shown(directory)} ({e.strerror or e}): "
                                 f"{formats.shown(path)} could not be written") from None
    os.close(fd)
    os.unlink(probe)


def output_path(path: str, option: str, inputs: Iterable[str | None] = (), *, new: bool = False,
                directory: bool = False, parents: bool = False) -> str:
    """The absolute path to write `option`'s output to, checked before any work (one line, exit 2, otherwise):
    its folder exists and takes a file (tried: a file made and removed), it is not in /proc, /sys or /dev nor a
    special file, not one of the command's own `inputs` (a report must never replace the plan it checks),
    not an existing file when `new`, and a folder (existing, or made in an existing parent, or with `parents` in
    its nearest existing ancestor) when `directory`."""
    if not path or not path.strip():
        raise InputError(option, "no path given")
    if (problem := formats.control_problem(path)) is not None:  # a mistyped or pasted name, never a real report
        raise InputError(option, f"the path {problem}")
    target = os.path.realpath(path)
    _refuse_place(target, path, option)
    if directory:
        if os.path.exists(target) and not os.path.isdir(target):
            raise InputError(option, f"{formats.shown(path)} exists and is not a directory")
        parent = target if os.path.isdir(target) else os.path.dirname(target)
        while parents and not os.path.exists(parent) and parent != os.path.dirname(parent):
            parent = os.path.dirname(parent)
        if os.path.exists(parent) and not os.path.isdir(parent):
            raise InputError(option, f"cannot create {formats.shown(path)}: {formats.shown(parent)} is a file")
    else:
        if os.path.isdir(target):
            raise InputError(option, f"{formats.shown(path)} is a directory, not a file")
        if new and os.path.lexists(path):
            raise InputError(option, f"{formats.shown(path)} already exists; kcheck does not overwrite files")
        parent = os.path.dirname(target)
    if not os.path.isdir(parent):
        raise InputError(option, f"directory {formats.shown(os.path.dirname(os.path.abspath(path)) or '.')} does "
                                 "not exist")
    # an input named as the output is refused before the folder is probed: a refusal touches no folder
    for given in inputs:
        if not given or given == "-":
            continue
        same = os.path.realpath(given) == target
        try:
            same = same or os.path.samefile(given, target)  # hard links
        except OSError:
            pass
        if same:
            raise InputError(option, f"{formats.shown(path)} is a file this command reads; it would be overwritten")
    _probe_writable(parent, path, option)
    return target


def write_atomic(path: str, data: bytes, *, new: bool = False) -> None:
    """Write a temporary file beside `path`, then rename it over `path`: a reader never sees half a report, and an
    interrupt leaves no partial file. `new`: never over an existing file (linked into place, which fails if
    something appeared there since output_path checked)."""
    from kcheck.runtime import interrupts
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with interrupts.partial_file(tmp):
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide the report from a CI artifact collector
            if new:
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    raise InputError(path, "already exists; kcheck does not overwrite files") from None
                os.unlink(tmp)
            else:
                os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write(path: str, name: str, suites: Sequence[TestSuite]) -> None:
    write_atomic(path, to_xml(name, suites))


# ---------------------------------------------------------------------------------------------
# Test cases from each command's results


def _violation_lines(violations: Sequence[Violation], change: Sequence[str] = ()) -> str:
    """The first MAX_DETAIL_LINES findings, one a line (each after its `change`, when given)."""
    prefixes = change or [""] * len(violations)
    lines = [(f"{c}: " if c else "") + f"{v.where}: {v.message}"
             for v, c in zip(violations[:MAX_DETAIL_LINES], prefixes, strict=False)]
    if len(violations) > MAX_DETAIL_LINES:
        lines.append(f"... and {len(violations) - MAX_DETAIL_LINES:,} more (--json lists them all)")
    return "\n".join(lines)


def report_cases(report: Report, classname: str, fails: Iterable[str] = ()) -> list[TestCase]:
    """One case per invariant of an invariant report: a failure when it has a hard violation or its id is in
    `fails` (e.g. a soft guarantee of an assignor), passing with the violations in <system-out> otherwise."""
    must_hold = set(fails)
    by_invariant: dict[str, list[Violation]] = {}
    for v in report.violations:
        by_invariant.setdefault(v.invariant, []).append(v)
    cases = []
    for inv in report.checked:
        found = by_invariant.get(inv, [])
        hard = any(v.severity is Severity.HARD for v in found)
        case = TestCase(classname, inv)
        if found and (hard or inv in must_hold):
            case.failure = f"{len(found):,} violation(s); first: {found[0].message}"
            case.detail = _violation_lines(found)
        elif found:
            case.output = f"{len(found):,} soft violation(s) (not a failure):\n{_violation_lines(found)}"
        cases.append(case)
    for inv, reason in report.skipped.items():
        cases.append(TestCase(classname, inv, skipped=f"not applicable: {reason}"))
    return cases


def judged_cases(report: Report, judged: Any, classname: str) -> list[TestCase]:
    """A gated command (gate/policy.py): one case per invariant, a failure exactly when one of its findings fails
    the gate (`--fail-on`); introduced, changed, unchanged, suppressed (with the reason) and fixed findings that do
    not fail it are listed in <system-out> of a passing case."""
    fails = {id(v) for v in judged.counted}
    by_invariant: dict[str, list[tuple[str, Violation]]] = {}
    for change, found in (("introduced", judged.introduced), ("unchanged", judged.unchanged),
                          ("fixed", judged.fixed)):
        for v in found:
            by_invariant.setdefault(v.invariant, []).append((change, v))
    for c in judged.changed:
        by_invariant.setdefault(c.after.invariant, []).append((f"changed ({c.direction}; before: {c.before.message})",
                                                               c.after))
    for v, reason in judged.suppressed:
        by_invariant.setdefault(v.invariant, []).append((f"suppressed ({reason})", v))
    cases = []
    for inv in dict.fromkeys([*report.checked, *by_invariant]):
        found = by_invariant.get(inv, [])
        failing = [v for _, v in found if id(v) in fails]
        case = TestCase(classname, inv)
        if failing:
            case.failure = (f"{len(failing):,} finding(s) fail the gate (--fail-on {judged.fail_on}); first: "
                            f"{failing[0].message}")
            case.detail = _violation_lines(failing)
        passing = [(change, v) for change, v in found if id(v) not in fails]
        if passing:
            case.output = (f"{len(passing):,} finding(s) that do not fail the gate (--fail-on {judged.fail_on}):\n"
                           + _violation_lines([v for _, v in passing], [c for c, _ in passing]))
        cases.append(case)
    for inv, reason in report.skipped.items():
        if inv not in by_invariant:
            cases.append(TestCase(classname, inv, skipped=f"not applicable: {reason}"))
    return cases


def check_suites(result: Any) -> list[TestSuite]:
    """`kcheck check`: per (placer, invariant), per proof, per assignor model, per rejoin-sweep result that is
    violated somewhere, per replication run."""
    placement = [_placement_case(o) for o in result.outcomes]
    proofs = []
    for r in result.proofs:
        case = TestCase(f"kcheck.check.proofs.{r.algorithm}", r.invariant, r.seconds)
        if r.status != "proved":
            case.failure = f"{r.status}{': ' + r.reason if r.reason else ''}"
            if r.counterexample is not None:
                case.detail = f"{case.failure}\nreplay: {r.replay_command}"
        proofs.append(case)
    models = []
    for m in result.models:
        case = TestCase("kcheck.check.rebalance", m.assignor, m.seconds)
        if m.failure:
            case.failure, case.detail = m.failure.splitlines()[0], m.failure
        case.output = "\n".join(f"finding: {f.message}" for f in getattr(m, "findings", ()))
        models.append(case)
    rejoins = getattr(result, "rejoins", None)  # the group sweep's time-out-and-rejoin events, when run
    rejoin_cases = _rejoin_cases(rejoins)
    replication = [_replication_case(r) for r in result.replication]
    spots = [_spot_case(o) for o in getattr(result, "spots", ())]
    request = [_request_case(r) for r in getattr(result, "request", ())]
    transactions = [_request_case(r, "transactions") for r in getattr(result, "transactions", ())]
    return [TestSuite("kcheck check: placement invariants", placement,
                      properties={"cases": str(result.cases), "clusters": str(result.clusters)}),
            TestSuite("kcheck check: proofs", proofs, sum(c.seconds for c in proofs)),
            TestSuite("kcheck check: rebalance model", models, sum(c.seconds for c in models)),
            *([TestSuite("kcheck check: rejoin sweep", rejoin_cases, rejoins.seconds,
                         properties={"space": rejoins.space, "groups": str(rejoins.groups)})]
              if rejoins is not None else []),
            TestSuite("kcheck check: replication model", replication, sum(c.seconds for c in replication)),
            *([TestSuite("kcheck check: request model", request, sum(c.seconds for c in request))] if request else []),
            *([TestSuite("kcheck check: transactions model", transactions, sum(c.seconds for c in transactions))]
              if transactions else []),
            TestSuite("kcheck check: request-path references against Kafka's classes", spots,
                      sum(c.seconds for c in spots))]


def _spot_case(o: Any) -> TestCase:
    """One family on one release: failed when any input's answer differs from Kafka's classes."""
    case = TestCase(f"kcheck.check.reference.{o.release}", o.family, o.seconds)
    if o.skipped:
        case.skipped = o.skipped
    elif not o.ok:
        case.failure = f"{o.differences:,} of {o.inputs:,} inputs differ from {o.kafka}"
        case.detail = f"{case.failure}\nsmallest:\n{o.smallest}"
    else:
        case.output = f"{o.inputs:,} inputs, the same answers as {o.kafka}"
    return case


def _placement_case(o: Any) -> TestCase:
    """One (placer, invariant) of `kcheck check`: failed when Kafka guarantees it, a finding otherwise."""
    case = TestCase(f"kcheck.check.placement.{o.placer}", o.invariant)
    example = ""
    if o.smallest is not None:
        example = f"smallest counterexample: {o.smallest_violations[0].message}\nreplay: {o.smallest.replay()}"
    summary = (f"{o.violated:,} of {o.checked:,} placements violate it ({REGISTRY[o.invariant].severity}, "
               f"{'guaranteed' if o.guaranteed else 'not guaranteed'} by Kafka for {o.placer})")
    if o.status == "FAILED":
        case.failure, case.detail = summary, f"{summary}\n{example}"
    elif o.status == "finding":
        case.output = f"finding: {summary}\n{example}"
    elif o.status == "n/a":
        case.skipped = "not applicable to any built-in case"
    return case


def _rejoin_cases(rejoins: Any) -> list[TestCase]:
    """The rejoin sweep's violated results (one passing case when nothing is violated), none when it did not run."""
    rejoin_cases = []
    for g in rejoins.outcomes if rejoins is not None else ():
        case = TestCase(f"kcheck.check.rejoin.{g.assignor}", g.invariant)
        summary = f"{g.violated:,} of {g.checked:,} groups violate it; smallest: {g.message}"
        story = "; ".join(g.config.get("story", []))
        if g.fails:
            case.failure, case.detail = summary, f"{summary}\n{story}"
        else:
            case.output = f"finding: {summary}\n{story}"
        rejoin_cases.append(case)
    if rejoins is not None and not rejoin_cases:  # nothing violated: one passing case says the sweep ran
        rejoin_cases.append(TestCase("kcheck.check.rejoin", "every guarantee"))
    return rejoin_cases


def _replication_case(r: Any) -> TestCase:
    """One replication run of `kcheck check`: failed when it did not find what it expected."""
    case = TestCase(f"kcheck.check.replication.{r.protocol}", r.engine, r.seconds)
    found = f"{', '.join(r.violated)} in {r.trace_steps} steps" if r.violated else "no violation"
    case.output = f"expected {'a violation' if r.expect_violation else 'no violation'}; found {found} " \
                  f"({r.size})"
    if not r.ok:
        case.failure, case.detail = f"expected {'a violation' if r.expect_violation else 'no violation'}, " \
                                    f"found {found}", f"{case.output}\n{r.detail}"
    return case


def _request_case(r: Any, model: str = "request") -> TestCase:
    """One request- or transactions-model row of `kcheck check` (`invariants.request_rows.RequestRow`): failed when
    not as expected."""
    case = TestCase(f"kcheck.check.{model}.{r.rules}", r.setting, r.seconds)
    found = f"{', '.join(r.violated)} in {r.trace_steps} steps" if r.violated else "no violation"
    case.output = f"{r.states:,} states; found {found}" + (f"\n{r.detail}" if r.detail else "")
    if not r.ok:
        case.failure, case.detail = f"not as expected: found {found}", case.output
    return case


def prove_cases(results: Sequence[Any]) -> list[TestCase]:
    """`kcheck prove`: per (algorithm, invariant). A hard invariant not proved fails (the exit status);
    a soft one refuted or unknown passes and says so."""
    cases = []
    for r in results:
        case = TestCase(f"kcheck.prove.{r.algorithm}", r.invariant, r.seconds)
        status = f"{r.status}{': ' + r.reason if r.reason else ''}"
        replay = "" if r.counterexample is None else (
            f"\n{r.counterexample.violations[0].message}\nreplay: {r.replay_command}")
        if r.status == "not applicable":
            case.skipped = r.reason or "not applicable"
        elif r.status != "proved":
            if REGISTRY[r.invariant].severity is Severity.HARD:
                case.failure, case.detail = status, status + replay
            else:
                case.output = f"soft invariant {status} (not a failure){replay}"
        cases.append(case)
    return cases


def sweep_cases(rows: Sequence[Any], space: str, verified: bool, coverage: str) -> list[TestCase]:
    """`kcheck sweep`: per invariant key, and one case for the coverage check (an incomplete sweep exits 1)."""
    cases = []
    for r in rows:
        case = TestCase(f"kcheck.sweep.{space}" + (f".{r.subject}" if r.subject else ""), r.invariant)
        first = ""
        if r.first is not None:
            first = f"\nsmallest violating configuration #{r.first.config_id}: {r.first.where}: {r.first.message}"
            if "replay" in r.first.config:
                first += f"\nreplay: {r.first.config['replay']}"
        summary = f"{r.violated:,} of {r.checked:,} configurations violate it ({r.severity})"
        if r.violated and r.fails:
            case.failure, case.detail = summary, summary + first
        elif r.violated:
            case.output = f"finding: {summary}{first}"
        elif not r.checked:
            case.skipped = "not applicable to any configuration of the space"
        cases.append(case)
    coverage_case = TestCase(f"kcheck.sweep.{space}", "coverage", output=coverage)
    if not verified:
        coverage_case.failure = coverage
    return [*cases, coverage_case]
