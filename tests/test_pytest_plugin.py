"""Issue 39's "done when": a project outside this repository, with only the built wheel installed by pip, runs a
user's placer property test through kcheck.strategies, a subclassed replication state machine with a user rule, the
plugin's fixtures, and the pre-commit hook with pre-commit's own runner. The project's files are the ones
docs/tasks/pytest.md shows, taken from the page.

No network: the wheel is built from a copy of the sources (pip's build isolation takes setuptools from pip's
cache), and the new virtual environment sees the test environment's installed distributions, kcheck's own left out,
through a folder of links named in a .pth file, so `pip install --no-index` of the wheel finds every dependency
installed and installs only kcheck."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from test_docs import blocks

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "tasks" / "pytest.md"  # docs/tasks/pytest.md: its files are this test's project
PARTS = ("kcheck", "model", "reference", "invariants", "spark_check", "runtime", "inputs", "simulation", "gate",
         "cluster")


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what would make the scratch run use this repository or this run."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "PYTHON", "HYPOTHESIS_", "KCHECK_TRACE", "VIRTUAL_ENV", "COV_"))}
    env.update(extra)
    return env


def build_wheel(work: Path) -> Path:
    src = work / "src"
    src.mkdir()
    for part in PARTS:
        shutil.copytree(ROOT / part, src / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    out = work / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(src)],
                   check=True, env=_clean_env(), cwd=work, timeout=300)
    (wheel,) = out.glob("kcheck-*.whl")
    return wheel


def dependencies(work: Path) -> Path:
    """A folder of links to this environment's installed distributions but kcheck."""
    deps = work / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_path("purelib")).iterdir():
        if entry.name.startswith(("kcheck", "__editable__", "_kcheck")) or entry.suffix == ".pth":
            continue
        (deps / entry.name).symlink_to(entry)
    return deps


def git_repository(folder: Path) -> None:
    """`folder` as a git repository with every file staged (pre-commit runs in one, its config staged)."""
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=folder, check=True, timeout=60)


def pre_commit(python: Path, folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """pre-commit's own runner in `folder`, its cache under the folder's parent, `python`'s scripts on PATH."""
    path = f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run([str(python), "-m", "pre_commit", *args], cwd=folder, capture_output=True, text=True,
                          timeout=600, env=_clean_env(PATH=path, PRE_COMMIT_HOME=str(folder.parent / "pre-commit"),
                                                      **env))


def scratch_venv(work: Path, wheel: Path) -> Path:
    """A virtual environment with the wheel installed by pip and this environment's other distributions."""
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "test-env-deps.pth").write_text(f"{dependencies(work)}\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index",
                    str(wheel)], check=True, env=_clean_env(), timeout=300)
    return python


def write_project(project: Path) -> list[str]:
    """The files docs/tasks/pytest.md shows for this test, written into `project`: their names."""
    names = []
    for b in blocks(PAGE):
        if "test_pytest_plugin" in b.directives:
            assert b.title, b.where
            (project / b.title).parent.mkdir(parents=True, exist_ok=True)
            (project / b.title).write_text(b.body)
            names.append(b.title)
    return names


def test_a_scratch_project_with_the_wheel_runs_the_plugin_strategies_and_machines(tmp_path):
    wheel = build_wheel(tmp_path)
    python = scratch_venv(tmp_path, wheel)
    project = tmp_path / "project"
    project.mkdir()
    names = write_project(project)
    assert {"my_placer.py", "test_my_placer.py", "test_my_replication.py", "test_my_fixtures.py",
            ".pre-commit-config.yaml", "plans/one-rack.json"} <= set(names)

    where = subprocess.run([str(python), "-c", "import kcheck; print(kcheck.__file__)"],
                           cwd=project, check=True, capture_output=True, text=True, env=_clean_env()).stdout
    assert where.startswith(str(tmp_path / "venv")), where  # the wheel's kcheck, not this repository's

    run = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--kafka-release", "4.0.2",
                          "-W", "error::pytest.PytestUnknownMarkWarning"],
                         cwd=project, capture_output=True, text=True, env=_clean_env(), timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed" in run.stdout, run.stdout
    assert "plugins: kcheck-0.1.0" in subprocess.run(
        [str(python), "-m", "pytest", "--co", "-p", "no:cacheprovider", "test_my_fixtures.py"], cwd=project,
        capture_output=True, text=True, env=_clean_env(), timeout=120).stdout

    # The hook, run by pre-commit on the project as a repository: the plan that spreads replicas passes, the one
    # that puts a partition in one rack fails the commit (Kafka spreads a partition over min(RF, racks) racks).
    git_repository(project)
    ok = pre_commit(python, project, "run", "--files", "cluster/describe.txt", "plans/spread.json")
    assert ok.returncode == 0 and "kcheck verify" in ok.stdout and "Passed" in ok.stdout, ok.stdout + ok.stderr
    bad = pre_commit(python, project, "run", "--verbose", "--files", "plans/one-rack.json")
    assert bad.returncode == 1 and "Failed" in bad.stdout, bad.stdout + bad.stderr
    assert "$ kcheck verify-reassignment cluster/describe.txt plans/one-rack.json" in bad.stdout
    assert "placement.rack-diversity" in bad.stdout and "FAIL:" in bad.stdout


@pytest.mark.slow
def test_the_repositorys_hook_definition_runs_under_pre_commit(tmp_path):
    """.pre-commit-hooks.yaml as a user's config names it (`pre-commit try-repo`: pre-commit clones this repository
    and installs it in an environment of its own; kcheck's dependencies come from this environment, not PyPI). Its
    default `files` pattern picks the plan and the describe; without `--describe` and racks, each gets `kcheck
    verify` alone, where nothing is wrong."""
    project = tmp_path / "project"
    project.mkdir()
    write_project(project)
    git_repository(project)
    deps = dependencies(tmp_path)
    run = pre_commit(Path(sys.executable), project, "try-repo", str(ROOT), "kcheck-verify", "--verbose", "--files",
                     "plans/one-rack.json", "cluster/describe.txt", "cluster/brokers.txt", "my_placer.py",
                     PIP_NO_DEPS="1", PYTHONPATH=str(deps))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "$ kcheck verify plans/one-rack.json" in run.stdout and "$ kcheck verify cluster/describe.txt" in run.stdout
    assert "brokers.txt" not in run.stdout and "my_placer" not in run.stdout and "Passed" in run.stdout


def test_the_plugin_does_not_import_the_cluster_code():
    """Every pytest run where kcheck is installed loads the plugin: configuring it sets the clusters' owner variable
    without importing kcheck.cluster.local (about 0.1 s), and names that module's variable."""
    code = ("import os, sys, kcheck.pytest_plugin as p; p.pytest_configure(None); "
            "assert 'kcheck.cluster.local' not in sys.modules, 'imported'; "
            "from kcheck.cluster.local import OWNER_ENV; assert os.environ[OWNER_ENV] == str(os.getpid()), OWNER_ENV")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_clean_env(), timeout=60)
    assert run.returncode == 0, run.stderr
