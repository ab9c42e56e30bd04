import os
import shutil

import pytest
from hypothesis import HealthCheck, settings

# "ci": deterministic and bounded; "dev": the default; "deep": for long local runs.
settings.register_profile("ci", max_examples=100, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("deep", max_examples=5_000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

# Every Kafka cluster a test starts dies with this process however the run ends (kcheck.cluster.Watchdog), also one
# started by a subprocess the test runs (`kcheck cluster up`, `kcheck chaos`): they read this variable.
os.environ["KCHECK_CLUSTER_OWNER_PID"] = str(os.getpid())


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`-n N --dist loadgroup`, the README's test command) one worker runs every test that
    drives Kafka's own code or a cluster: one JVM per release and one cluster for the run, as in a serial run,
    while the other workers take the pure-Python tests. Likewise the Spark tests share one worker (each module
    starts one local SparkSession: a module split across two workers would start two), and the JVM oracle's."""
    for item in items:
        if item.get_closest_marker("kafka") or item.get_closest_marker("cluster"):
            item.add_marker(pytest.mark.xdist_group("kafka"))
        elif item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.xdist_group("spark"))
        elif item.get_closest_marker("jvm"):
            item.add_marker(pytest.mark.xdist_group("jvm"))


@pytest.fixture(scope="session")
def kafka_cluster():
    """A real KRaft cluster (kcheck.cluster.LocalCluster) for the session: one controller and brokers 1, 2, 3 in
    racks a, b, c, Kafka KCHECK_CLUSTER_RELEASE (default 4.4.0); besides PLAINTEXT, a SASL_PLAINTEXT listener
    (PLAIN, user alice, password alice-secret) at `sasl_bootstrap`. Stopped at the end, also when tests fail.
    Skipped only without `java`; a cluster that does not start fails the tests that use it."""
    if shutil.which("java") is None:
        pytest.skip("`java` not on PATH: a Kafka cluster needs a JDK 17+")
    from kcheck.cluster import LocalCluster

    cluster = LocalCluster(os.environ.get("KCHECK_CLUSTER_RELEASE", "4.4.0"), 3, ("a", "b", "c"),
                           sasl_users={"alice": "alice-secret"})
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(kafka_cluster):
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
