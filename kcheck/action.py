"""The GitHub Action's run step (action.yml, a composite action at the repository's root): `python -m kcheck.action`.

It reads the action's inputs from the environment the step sets (KCHECK_COMMAND: verify, verify-reassignment or
plan; KCHECK_ARGS: the command's arguments as one shell-quoted string; KCHECK_JUNIT_XML: where the JUnit report
goes), runs `kcheck COMMAND ARGS` with `--junit-xml` (plan, which has no report of its own, gets a one-case report
of its exit status), prints what kcheck prints, appends a job summary (GITHUB_STEP_SUMMARY: the verdict, the
JUnit counts and kcheck's output) and the exit status (GITHUB_OUTPUT: `exit-code`), and exits as kcheck did, so
the job fails on a failed check (1) or bad input (2).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from kcheck import junit
from kcheck.runtime.exit_codes import Exit

COMMANDS = ("verify", "verify-reassignment", "plan")
SUMMARY_LINES = 200  # the most lines of kcheck's output a summary shows (the log has all of it)


def _error(place: str, message: str) -> int:
    print(f"kcheck: error: {place}: {message}", file=sys.stderr)
    return int(Exit.BAD_INPUT)


def _counts(path: str) -> str:
    """'N test cases, F failed, S skipped' from a JUnit report, or why there is none."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return "no JUnit report (the command refused its input)"
    suites = [root] if root.tag == "testsuite" else list(root)
    tests, failures, skipped = (sum(int(s.get(k, "0")) for s in suites) for k in ("tests", "failures", "skipped"))
    return f"{tests} test cases, {failures} failed, {skipped} skipped ({path})"


def summary(command: str, args: list[str], code: int, output: str, report: str) -> str:
    """The job summary's Markdown."""
    verdict = {0: "passed", 1: "failed", 2: "refused its input"}.get(code, f"exited {code}")
    lines = output.rstrip("\n").splitlines()
    shown = lines[-SUMMARY_LINES:]
    cut = f"(the last {len(shown)} of {len(lines)} lines)\n\n" if len(shown) < len(lines) else ""
    return (f"### kcheck {command}: {verdict} (exit {code})\n\n`kcheck {shlex.join([command, *args])}`\n\n"
            f"JUnit: {_counts(report)}\n\n{cut}```text\n" + "\n".join(shown) + "\n```\n")


def _append(variable: str, text: str) -> None:
    path = os.environ.get(variable)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)


def main() -> int:
    command = os.environ.get("KCHECK_COMMAND", "")
    if command not in COMMANDS:
        return _error("command", f"expected one of {', '.join(COMMANDS)}, not {command!r}")
    try:
        args = shlex.split(os.environ.get("KCHECK_ARGS", ""))
    except ValueError as e:
        return _error("args", str(e))
    report = os.environ.get("KCHECK_JUNIT_XML") or "kcheck-junit.xml"
    own_report = command != "plan"
    argv = [command, *args, *(["--junit-xml", report] if own_report else [])]
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kcheck", *argv], capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    output = proc.stdout + proc.stderr
    if not own_report and proc.returncode in (0, 1, 4):  # as kcheck's reports: a failure exactly when it exits 1
        failed = proc.returncode == 1
        case = junit.TestCase("kcheck.plan", "plan", time.perf_counter() - started,
                              "no plan meets the constraints" if failed else None, output if failed else "",
                              "the solver found no plan within its time or size limit" if proc.returncode == 4
                              else None, output)
        junit.write(report, "kcheck plan", [junit.TestSuite("kcheck plan", [case])])
    _append("GITHUB_STEP_SUMMARY", summary(command, args, proc.returncode, output, report))
    _append("GITHUB_OUTPUT", f"exit-code={proc.returncode}\n")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
