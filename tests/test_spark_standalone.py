"""`kcheck sweep --master spark://...` on a real standalone cluster: pyspark's own Master and Worker
(`spark-class org.apache.spark.deploy.master.Master` / `...worker.Worker`) on 127.0.0.1, free ports, started
here and killed by PID at the end.

The Worker starts with a clean environment (no PYTHONPATH), as a cluster node would: a user's placer module
exists only beside the driver, so its executors can import it only if kcheck ships it (SparkContext.addPyFile).
The README's spark-submit recipe (a packed virtualenv without pyspark, `--archives`, SPARK_LOCAL_IP) runs
against the same cluster in the slow test.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # a Master, a Worker and a driver JVM: minutes here

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "plugins"
README = ROOT / "README.md"


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _clean_env(**extra: str) -> dict[str, str]:
    """What a cluster node has: no PYTHONPATH pointing at the user's files, Spark on the loopback interface."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_MASTER", "PYSPARK_PYTHON",
                                                            "PYSPARK_DRIVER_PYTHON", "PYSPARK_GATEWAY_PORT")}
    env.update(SPARK_HOME=str(_spark_home()), SPARK_LOCAL_IP="127.0.0.1", **extra)
    return env


def _wait_for(what: str, ready, proc: subprocess.Popen, log: Path, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: {log.read_text()[-2000:]}")
        if ready():
            return
        time.sleep(0.5)
    raise RuntimeError(f"{what} did not start in {timeout:.0f} s: {log.read_text()[-2000:]}")


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group we started (spark-class execs java: its PID is the group's), then SIGKILL."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """A standalone Master and one Worker (1 core, 1 GiB): the master URL. Killed by PID at the end."""
    if shutil.which("java") is None:
        pytest.skip("java is not on PATH")
    base = tmp_path_factory.mktemp("standalone")
    spark_class = str(_spark_home() / "bin" / "spark-class")
    port, web, worker_web = _free_port(), _free_port(), _free_port()
    url = f"spark://127.0.0.1:{port}"
    env = _clean_env(SPARK_LOG_DIR=str(base / "logs"), SPARK_WORKER_DIR=str(base / "work"))
    started: list[subprocess.Popen] = []
    try:
        master_log = base / "master.log"
        master = subprocess.Popen([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                   "--port", str(port), "--webui-port", str(web)], env=env, cwd=base,
                                  stdout=master_log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
        started.append(master)
        _wait_for("the Master", lambda: "I have been elected leader" in master_log.read_text(), master, master_log)
        worker_log = base / "worker.log"
        worker = subprocess.Popen([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                   "--webui-port", str(worker_web), "--cores", "1", "--memory", "1g",
                                   "--work-dir", str(base / "work"), url], env=env, cwd=base,
                                  stdout=worker_log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
        started.append(worker)
        _wait_for("the Worker", lambda: "Successfully registered with master" in worker_log.read_text(), worker,
                  worker_log)
        yield url
    finally:
        for proc in reversed(started):
            _stop(proc)


def _driver(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`kcheck ARGS` as a user runs it in the directory holding the plug-in (PYTHONPATH=. on the driver only)."""
    return subprocess.run([sys.executable, "-m", "kcheck", *args], cwd=cwd,
                          env=_clean_env(PYTHONPATH=".", **env), capture_output=True, text=True, timeout=600)


def test_sweep_ships_the_users_placer_to_the_executors(standalone, tmp_path):
    """The placer module is importable on the driver only; the sweep must ship it. On kcheck before the fix, the
    executors could not import it: a Py4J traceback and exit 1."""
    work = tmp_path / "user"
    shutil.copytree(EXAMPLES, work)
    out = tmp_path / "sweep"
    done = _driver(["sweep", "placement", "--space", "small,brokers=1..3,partitions=1..2", "--placer",
                    "my_placer:place", "--master", standalone, "--out", str(out)], work)
    assert "Traceback" not in done.stderr and "Py4J" not in done.stderr, done.stderr[-3000:]
    # The example breaks the hard rack diversity on uneven racks (as `kcheck prove` shows): exit 1, not 2.
    assert done.returncode == 1, (done.stdout[-3000:], done.stderr[-3000:])
    assert "placement.rack-diversity" in done.stdout and "FAILED" in done.stdout
    assert "Verified:" in done.stdout  # every configuration computed (on the executor) and stored
    assert (out / "report.md").exists()


def test_a_module_in_a_package_is_shipped_as_a_zip(standalone, tmp_path):
    """A plug-in inside a package (and importing a sibling module) travels as the package's zip."""
    pkg = tmp_path / "user" / "teamplugins"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    shutil.copy(EXAMPLES / "my_placer.py", pkg / "base.py")
    (pkg / "placers.py").write_text("from teamplugins.base import place\n")
    done = _driver(["sweep", "placement", "--space", "small,brokers=1..2,partitions=1", "--placer",
                    "teamplugins.placers:place", "--master", standalone, "--out", str(tmp_path / "sweep")],
                   tmp_path / "user")
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    assert "Verified:" in done.stdout


def _recipe() -> list[str]:
    """The README's spark-submit recipe: its commands up to the standalone submit (continuation lines joined)."""
    text = (ROOT / "docs" / "tasks" / "spark-sweep.md").read_text()
    section = text[text.index("\n## Sweeps on a cluster\n"):]
    block = section[section.index("```bash\n") + 8:section.index("```\n", section.index("```bash\n") + 8)]
    commands, current = [], ""
    for line in block.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        current += line[:-1] + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            commands.append(current)
            current = ""
    return commands[:commands.index(next(c for c in commands if "--master spark://" in c)) + 1]


def test_the_readme_spark_submit_recipe_runs_as_written(standalone, tmp_path):
    """Pack the environment (venv-pack -p env, pyspark left out), SPARK_LOCAL_IP, spark-submit to the standalone
    master with the archive and a user's placer: the README's lines, with only the cluster's own names (master
    URL, address, output folder) and the space's size replaced. Minutes: pip installs kcheck's dependencies."""
    src = tmp_path / "checkout"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for folder in ("kcheck", "model", "reference", "invariants", "spark_check"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(EXAMPLES / "my_placer.py", src / "my_placer.py")
    out = tmp_path / "sweep"
    replace = {"10.0.0.5": "127.0.0.1", "spark://master:7077": standalone,
               "--space large": "--space small,brokers=1..3", "/shared/sweeps/placement-large": str(out)}
    commands = _recipe()
    script = " && ".join(commands)
    for placeholder, value in replace.items():
        assert placeholder in script, placeholder
        script = script.replace(placeholder, value)
    assert commands[0].startswith("python3 -m venv env") and "venv-pack -p env" in script
    assert "export SPARK_LOCAL_IP=" in script
    env = _clean_env(PATH=f"{_spark_home() / 'bin'}{os.pathsep}{os.environ['PATH']}")
    env.pop("SPARK_LOCAL_IP")  # the recipe exports it
    began = time.monotonic()
    done = subprocess.run(["bash", "-c", script], cwd=src, env=env, capture_output=True, text=True, timeout=1800)
    seconds = time.monotonic() - began
    archive = src / "kcheck-env.tar.gz"
    assert archive.exists(), (done.stdout[-3000:], done.stderr[-3000:])
    size_mib = archive.stat().st_size / 2**20
    assert size_mib < 300, f"{size_mib:.0f} MiB"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    # my_placer breaks rack diversity on uneven racks: the sweep ran on the executors and exits 1
    assert done.returncode == 1, (done.stdout[-3000:], done.stderr[-3000:])
    assert "Verified:" in done.stdout and "my_placer:place" in done.stdout
    print(f"recipe: {seconds:.0f} s, archive {size_mib:.0f} MiB")
