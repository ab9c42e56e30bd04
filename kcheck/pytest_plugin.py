"""kcheck's pytest plugin: installed with kcheck (entry point `pytest11`), so any pytest run where kcheck is
installed has these fixtures; a conftest fixture of the same name overrides one of them, and `-p no:kcheck` turns
the plugin off.

- `kafka_release`: the Kafka release the fixtures below use: `--kafka-release` on pytest's command line, else the
  KCHECK_CLUSTER_RELEASE variable, else 4.4.0 (`kcheck.reference.releases.DEFAULT_VERSION`).
- `kafka_cluster` (session): a real KRaft cluster of that release on 127.0.0.1 (`kcheck.cluster.local.LocalCluster`:
  one controller, brokers 1, 2, 3 in racks a, b, c, and a SASL_PLAINTEXT listener, PLAIN, user alice, password
  alice-secret, at `sasl_bootstrap`), the one kcheck's own suite uses. Every node dies with the pytest process
  however the run ends (the cluster's watchdog; KCHECK_CLUSTER_OWNER_PID is set to this process for clusters a
  test's subprocess starts). Skipped without `java`; a cluster that does not start fails the tests using it.
- `cluster`: the session's cluster, every broker running again after the test (a test may kill, pause or stop one).
- `kafka_bridge` (session): a JVM running that release's own classes (`kcheck.reference.kafka_bridge.KafkaBridge`:
  AdminUtils' placement, the assignors, ...); the jars come from Maven Central on first use. Skipped without
  `java` and `javac`.

The state machines (`kcheck.machines`) and strategies (`kcheck.strategies`) need no fixture: import them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

RELEASE_ENV = "KCHECK_CLUSTER_RELEASE"
# kcheck.cluster.local.OWNER_ENV, named here so that every pytest run does not import the cluster code to read it
OWNER_ENV = "KCHECK_CLUSTER_OWNER_PID"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kcheck", "kcheck: Kafka fixtures")
    group.addoption("--kafka-release", metavar="VERSION", default=None,
                    help="the Kafka release of the kafka_cluster and kafka_bridge fixtures (default: the "
                         f"{RELEASE_ENV} variable, else kcheck's newest)")


def pytest_configure(config: pytest.Config) -> None:
    # Clusters started by a test's subprocess (`kcheck cluster up`, `kcheck chaos`) die with this process too (each
    # xdist worker: itself).
    os.environ[OWNER_ENV] = str(os.getpid())


def _need_jdk(*tools: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"`{tool}` not on PATH: Kafka needs a JDK 17+")


@pytest.fixture(scope="session")
def kafka_release(request: pytest.FixtureRequest) -> str:
    """The release the Kafka fixtures use (see the module docstring)."""
    from kcheck.reference.releases import DEFAULT_VERSION

    given = request.config.getoption("--kafka-release", None)
    return str(given or os.environ.get(RELEASE_ENV) or DEFAULT_VERSION)


@pytest.fixture(scope="session")
def kafka_cluster(kafka_release: str) -> Iterator[Any]:
    """A real KRaft cluster for the session (see the module docstring). Stopped at the end, also when tests fail."""
    _need_jdk("java")
    from kcheck.cluster.local import LocalCluster

    cluster = LocalCluster(kafka_release, 3, ("a", "b", "c"), sasl_users={"alice": "alice-secret"})
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(kafka_cluster: Any) -> Iterator[Any]:
    """The session's cluster, every broker running again after the test (also when it failed): the tests that kill,
    pause or stop brokers leave it as they found it."""
    yield kafka_cluster
    for row in kafka_cluster.status():
        if row["role"] != "broker":
            continue
        if row["state"] == "paused":
            kafka_cluster.resume(row["node"])
        elif row["state"] == "stopped":
            kafka_cluster.restart(row["node"])


@pytest.fixture(scope="session")
def kafka_bridge(kafka_release: str) -> Any:
    """The release's own classes in a JVM for the session (closed when the process ends)."""
    _need_jdk("java", "javac")  # the bridge's harness is compiled against the release's jars
    from kcheck.reference.kafka_bridge import shared_bridge

    return shared_bridge(kafka_release)
