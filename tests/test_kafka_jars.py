"""Resolving Kafka's jars needs only a JDK: Maven is fetched from Maven Central when it is not installed.

Marker `kafka`: these download Apache Maven's distribution (9 MB) into a temporary cache; the
Kafka jars themselves come from the local Maven repository (~/.m2) that earlier runs filled.
"""

from __future__ import annotations

import shutil

import pytest

from kcheck.reference import kafka_jars
from kcheck.reference.kafka_jars import KafkaBridgeError

pytestmark = pytest.mark.kafka


@pytest.fixture
def no_mvn(monkeypatch, tmp_path):
    if shutil.which("java") is None:
        pytest.skip("`java` not on PATH")
    real = shutil.which
    monkeypatch.setattr(kafka_jars.shutil, "which", lambda n, *a, **k: None if n == "mvn" else real(n, *a, **k))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path


@pytest.mark.slow  # downloads Maven's distribution when not cached (~10 s)
def test_maven_is_fetched_verified_and_reused_when_not_installed(no_mvn):
    mvn = kafka_jars.maven()
    assert mvn.startswith(str(no_mvn)) and mvn.endswith("/bin/mvn")
    release = kafka_jars.resolve("4.4.0")
    names = {j.name for j in release.jars}
    for artifact in kafka_jars.artifacts("4.4.0"):
        assert f"{artifact}-4.4.0.jar" in names
    assert kafka_jars.maven() == mvn  # the second call reuses the cache (no download, same path)


def test_a_maven_download_with_the_wrong_digest_is_refused_and_not_kept(no_mvn, monkeypatch):
    monkeypatch.setattr(kafka_jars, "MAVEN_SHA512", "0" * 128)
    with pytest.raises(KafkaBridgeError, match="wrong SHA-512"):
        kafka_jars.maven()
    assert not (no_mvn / "kcheck" / "maven" / f"apache-maven-{kafka_jars.MAVEN_VERSION}").exists()


def test_an_older_cache_without_a_jar_the_bridge_now_needs_is_resolved_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    directory = tmp_path / "kcheck" / "kafka" / "4.4.0"
    (directory / "lib").mkdir(parents=True)
    old = ["kafka-metadata-4.4.0.jar", "kafka-server-common-4.4.0.jar"]
    for name in old:
        (directory / "lib" / name).write_bytes(b"")
    (directory / ".complete").write_text("\n".join(old) + "\n", encoding="utf-8")
    assert kafka_jars.cached("4.4.0") is None
