"""The GitHub Action (action.yml, kcheck/action.py), its steps run as a script: each `run:` step through bash as a
runner runs it (`bash --noprofile --norc -eo pipefail`), its `env:` with the inputs the workflow of
docs/tasks/pytest.md gives (or others), GITHUB_ACTION_PATH this repository, GITHUB_STEP_SUMMARY and GITHUB_OUTPUT
files. `actions/setup-python` is the runner's: here the Python on PATH is this environment's (or, in the slow test,
a new virtual environment's, where the install step installs kcheck from this repository)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from test_docs import blocks
from test_pytest_plugin import _clean_env, dependencies, write_project

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
PAGE = ROOT / "docs" / "tasks" / "pytest.md"  # docs/tasks/pytest.md: its workflow's inputs and files


def workflow_inputs() -> dict[str, str]:
    """The `with:` of the page's workflow step that uses kcheck's action."""
    (block,) = [b for b in blocks(PAGE) if "test_ci_action" in b.directives]
    steps = yaml.safe_load(block.body)["jobs"]["plans"]["steps"]
    (step,) = [s for s in steps if str(s.get("uses", "")).split("@")[0].endswith("/kcheck")]
    return {k: str(v) for k, v in step["with"].items()}


def run_steps(folder: Path, given: dict[str, str], python_bin: Path, only: set[str] | None = None,
              **env: str) -> tuple[int, str, str, str]:
    """The action's `run:` steps (those named in `only`, else all) in `folder`: (exit status of the last step run,
    its output, the job summary, the step outputs)."""
    inputs = {k: str(v.get("default", "")) for k, v in ACTION["inputs"].items()} | given
    assert set(given) <= set(inputs), set(given) - set(inputs)
    summary, outputs = folder.parent / "summary.md", folder.parent / "outputs.txt"
    base = _clean_env(PATH=f"{python_bin}{os.pathsep}{os.environ.get('PATH', '')}", GITHUB_ACTION_PATH=str(ROOT),
                      GITHUB_STEP_SUMMARY=str(summary), GITHUB_OUTPUT=str(outputs), **env)
    proc: Any = None
    for step in ACTION["runs"]["steps"]:
        if "run" not in step or (only is not None and step["name"] not in only):
            continue
        assert step["shell"] == "bash"
        step_env = {k: re.sub(r"\$\{\{ inputs\.([\w-]+) \}\}", lambda m: inputs[m.group(1)], str(v))
                    for k, v in step.get("env", {}).items()}
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=folder,
                              env=base | step_env, capture_output=True, text=True, timeout=600)
        if proc.returncode:
            break
    read = lambda p: p.read_text() if p.exists() else ""  # noqa: E731
    return proc.returncode, proc.stdout + proc.stderr, read(summary), read(outputs)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    write_project(folder)  # the page's cluster and plans
    return folder


def junit_counts(path: Path) -> tuple[int, int]:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    return sum(int(s.get("tests", "0")) for s in suites), sum(int(s.get("failures", "0")) for s in suites)


HERE = Path(sys.executable).parent


def test_the_workflows_check_passes_with_a_report_and_a_summary(project):
    given = workflow_inputs()
    code, out, summary, outputs = run_steps(project, given, HERE, {"Run kcheck"})
    assert code == 0, out
    assert "OK:" in out and "exit-code=0" in outputs
    tests, failures = junit_counts(project / given["junit-xml"])
    assert tests > 0 and failures == 0
    assert summary.startswith("### kcheck verify-reassignment: passed (exit 0)")
    assert f"JUnit: {tests} test cases, 0 failed" in summary and "placement.replica-spread" in summary


def test_a_plan_that_breaks_a_hard_invariant_fails_the_step(project):
    given = workflow_inputs() | {"args": "cluster/describe.txt plans/one-rack.json --brokers-file cluster/brokers.txt"}
    code, out, summary, outputs = run_steps(project, given, HERE, {"Run kcheck"})
    assert code == 1 and "exit-code=1" in outputs and "placement.rack-diversity" in out
    assert junit_counts(project / given["junit-xml"])[1] >= 1
    assert summary.startswith("### kcheck verify-reassignment: failed (exit 1)")


def test_plan_gets_a_report_of_its_verdict(project):
    code, out, summary, outputs = run_steps(
        project, {"command": "plan", "args": "cluster/describe.txt --brokers-file cluster/brokers.txt"}, HERE,
        {"Run kcheck"})
    assert code == 0 and "Nothing to move" in out
    assert junit_counts(project / "kcheck-junit.xml") == (1, 0)
    assert summary.startswith("### kcheck plan: passed (exit 0)")


@pytest.mark.parametrize(("given", "line"), [
    ({"command": "prove", "args": "x"}, "kcheck: error: command: expected one of verify, verify-reassignment, plan, "
                                        "not 'prove'"),
    ({"command": "verify", "args": "'unclosed"}, "kcheck: error: args: No closing quotation"),
    ({"command": "verify", "args": "missing.txt"}, "kcheck: error: missing.txt: "),
])
def test_bad_inputs_fail_with_kchecks_one_line(project, given, line):
    code, out, summary, outputs = run_steps(project, given, HERE, {"Run kcheck"})
    assert code == 2 and out.startswith(line) and out.count("\n") == 1, out
    assert not (project / "kcheck-junit.xml").exists()


@pytest.mark.slow
def test_the_install_step_installs_kcheck_from_the_repository(tmp_path, project):
    """Both steps on a new virtual environment: the install step pip-installs this repository (its dependencies come
    from this environment through a .pth file, PIP_NO_DEPS: no network), then the workflow's check runs on it."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "test-env-deps.pth").write_text(f"{dependencies(tmp_path)}\n")
    code, out, summary, _ = run_steps(project, workflow_inputs(), venv / "bin", PIP_NO_DEPS="1")
    assert code == 0, out
    assert summary.startswith("### kcheck verify-reassignment: passed (exit 0)")
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import kcheck; print(kcheck.__file__)"],
                           cwd=project, capture_output=True, text=True, env=_clean_env()).stdout
    assert where.startswith(str(venv)), where
