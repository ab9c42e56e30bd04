import os

import pytest
from hypothesis import HealthCheck, settings

try:  # pytest >= 9.2: structured node ids
    from _pytest.nodeid import NodeId
except ImportError:  # older pytest: xdist's own suffix works
    NodeId = None

# "ci": deterministic and bounded; "dev": the default; "deep": for long local runs.
settings.register_profile("ci", max_examples=100, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("deep", max_examples=5_000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

# The Kafka fixtures (`kafka_cluster`, `cluster`, `kafka_bridge`, `kafka_release`) and the owner variable that makes
# every cluster a test starts die with this process are kcheck's pytest plugin's (kcheck/pytest_plugin.py), which
# users get too.


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """The plugin comes with the install (entry point pytest11); an environment installed before it existed (an
    editable install not redone since) gets it here, without its --kafka-release option."""
    if not config.pluginmanager.has_plugin("kcheck"):
        config.pluginmanager.import_plugin("kcheck.pytest_plugin")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`-n N --dist loadgroup`, the README's test command) one worker runs every test that
    drives Kafka's own code or a cluster: one JVM per release and one cluster for the run, as in a serial run,
    while the other workers take the pure-Python tests. Likewise the Spark tests share one worker (each module
    starts one local SparkSession: a module split across two workers would start two), and the JVM oracle's."""
    for item in items:
        group = _xdist_group(item)
        if group is None:
            continue
        item.add_marker(pytest.mark.xdist_group(group))
        # pytest-xdist 3.8 names the group by appending "@group" to `item._nodeid`, which pytest 9.2 no longer reads
        # (node ids are structured: `item._id`), so its loadgroup scheduler silently spread the groups over every
        # worker (pytest-xdist issue #1386). Where the structured id exists, append the suffix to it as xdist meant.
        structured = NodeId is not None and isinstance(getattr(item, "_id", None), NodeId)
        if structured and getattr(config.option, "loadgroup", False):
            item._id = NodeId.parse(f"{item.nodeid}@{group}")


def _xdist_group(item: pytest.Item) -> str | None:
    if item.get_closest_marker("kafka") or item.get_closest_marker("cluster"):
        return "kafka"
    if item.get_closest_marker("spark"):
        return "spark"
    if item.get_closest_marker("jvm"):
        return "jvm"
    return None


@pytest.fixture(autouse=True, scope="session")
def _one_click_command_per_process():
    """`kcheck.cli.main` builds its Click command from the Typer app on every call (about 60 ms of signature and
    type-hint evaluation), once per `kcheck` process; the tests call main() in-process about a thousand times, so
    each test process builds it once. It is the command main() would build: kcheck/cli.py registers every command
    at import, and building reads nothing else."""
    import typer.main

    from kcheck import cli
    build = typer.main.get_command
    built = build(cli.app)

    def get_command(app):
        return built if app is cli.app else build(app)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(typer.main, "get_command", get_command)
        yield
