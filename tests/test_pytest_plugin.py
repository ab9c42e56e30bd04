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


def scratch_venv(work: Path, wheel: Path) -> Path:
    """A virtual environment with the wheel installed by pip and this environment's other distributions."""
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    ours = Path(sysconfig.get_path("purelib"))
    deps = work / "deps"
    deps.mkdir()
    for entry in ours.iterdir():
        if entry.name.startswith(("kcheck", "__editable__", "_kcheck")) or entry.suffix == ".pth":
            continue
        (deps / entry.name).symlink_to(entry)
    (site / "test-env-deps.pth").write_text(f"{deps}\n")
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
    assert {"my_placer.py", "test_my_placer.py", "test_my_replication.py", "test_my_fixtures.py"} <= set(names)

    where = subprocess.run([str(python), "-c", "import kcheck.machines, kcheck.strategies; print(kcheck.__file__)"],
                           cwd=project, check=True, capture_output=True, text=True, env=_clean_env()).stdout
    assert where.startswith(str(tmp_path / "venv")), where  # the wheel's kcheck, not this repository's

    run = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--kafka-release", "4.0.2",
                          "-W", "error::pytest.PytestUnknownMarkWarning"],
                         cwd=project, capture_output=True, text=True, env=_clean_env(), timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed" in run.stdout, run.stdout
    fixtures = subprocess.run([str(python), "-m", "pytest", "--fixtures", "-p", "no:cacheprovider"], cwd=project,
                              capture_output=True, text=True, env=_clean_env(), timeout=120).stdout
    assert "fixtures defined from kcheck.pytest_plugin" in fixtures and "kafka_cluster [session scope]" in fixtures
