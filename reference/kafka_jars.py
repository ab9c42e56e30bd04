"""Resolve a Kafka release's placement jars (and their runtime dependencies) from Maven Central.

The jars are Kafka's, run as dependencies; nothing here copies Kafka's code. Per release, a
small generated pom lists `kafka-server-common` (AdminUtils, Kafka <= 4.0), `kafka-metadata`
(StripedReplicaPlacer, PartitionChangeBuilder, ReplicationControlManager), `kafka-clients` (the
client assignors), `kafka-group-coordinator` (the KIP-848 assignors), `kafka-storage` (the log layer:
segments, indexes, UnifiedLog, from 4.1 the log cleaner) and, for 3.9, `kafka_2.13`
(the ZooKeeper controller); `mvn dependency:copy-dependencies` puts them and their runtime
dependencies into `${XDG_CACHE_HOME:-~/.cache}/kcheck/kafka/<version>/lib`. A `.complete`
marker is written last, so an interrupted download is redone on the next call, and a completed
cache is reused without running Maven (or touching the network) at all.

Maven itself is not a prerequisite: when `mvn` is not on PATH, Apache Maven's own binary
distribution is fetched from Maven Central once (SHA-512 checked against the value pinned here)
into `${XDG_CACHE_HOME:-~/.cache}/kcheck/maven/`, and run with the JDK the bridge needs anyway.

The broker's own jar set (`resolve_server`, used by `kcheck.cluster.local` to run real KRaft brokers) is
separate: `kafka_2.13` (kafka.Kafka, the storage tool) and `kafka-tools` (kafka-topics and the other
command-line tools) with their runtime dependencies (kafka-server, raft, storage, metadata, the group,
transaction and share coordinators ...) plus `slf4j-simple` at the
release's own slf4j version, so the processes' logs reach their log files (Kafka's distribution ships
a logging binding; the Maven artifact does not). It lives in `<version>/server/lib` with its own marker,
so the bridge's classpath never changes.

Failures raise `KafkaBridgeError(what, message)`; `str()` of it is one line a CLI can print.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

GROUP = "org.apache.kafka"
# kafka-storage: the log layer (LogSegment, OffsetIndex, TimeIndex, UnifiedLog and, from 4.1, the log cleaner).
ARTIFACTS = ("kafka-server-common", "kafka-metadata", "kafka-clients", "kafka-group-coordinator", "kafka-storage")
ZK_ARTIFACTS = ("kafka_2.13",)  # 3.x only: the ZooKeeper controller's election algorithms

# Newest first: the default release is the first of these that resolves (a cached one wins).
# AdminUtils left kafka-server-common after 4.0 (4.1's `kafka-reassign-partitions --generate`
# places with StripedReplicaPlacer), so AdminUtils is only bridged on 4.0.x.
# 3.9.x is the last ZooKeeper release; it is never the default.
KNOWN_RELEASES = ("4.4.0", "4.3.1", "4.3.0", "4.2.2", "4.2.0", "4.1.2", "4.1.1", "4.1.0", "4.0.2", "4.0.1", "4.0.0")
ZK_RELEASES = ("3.9.1", "3.9.0")
# Every release whose jars kcheck fetches for the bridge and for `kcheck cluster` (KRaft runs on each of them).
BRIDGE_RELEASES = (*KNOWN_RELEASES, *ZK_RELEASES)
# What a release string may look like before it is ever joined into a path (0.10.2.2 has four parts).
_RELEASE_SHAPE = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){2,3}")


class UnknownRelease(ValueError):
    """A release a caller does not accept; str() is one line naming the ones it does."""


def check_release(text: str, accepted: Collection[str] = BRIDGE_RELEASES, what: str = "a Kafka release kcheck knows",
                  ) -> str:
    """The release `text` names if `accepted` holds it, else UnknownRelease (one line listing `accepted`).

    The one check every `--kafka-version`, `--against-kafka` and cache path goes through: a release is a key
    of the jar cache (`<cache>/<version>/`), so only a known one, compared whole, may ever reach a path. Spaces
    around it are forgiven; a control character, a path (`../x`, `/tmp/x`), an empty string or a release the
    caller does not accept is not."""
    version = text.strip(" ")
    if version in accepted and _RELEASE_SHAPE.fullmatch(version):
        return version
    shown = (text if len(text) <= 40 else text[:40] + "...").encode("unicode_escape").decode("ascii")
    known = ", ".join(sorted(accepted, key=_release_key, reverse=True))
    raise UnknownRelease(f"'{shown}' is not {what} (known: {known})")


def _release_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) if x.isdigit() else -1 for x in version.split("."))


def artifacts(version: str) -> tuple[str, ...]:
    """The org.apache.kafka artifacts the bridge needs for this release."""
    return ARTIFACTS + (ZK_ARTIFACTS if version.startswith("3.") else ())

_MARKER = ".complete"

# Apache Maven's binary distribution on Maven Central, used when no `mvn` is on PATH.
MAVEN_VERSION = "3.9.9"
MAVEN_URL = (f"https://repo1.maven.org/maven2/org/apache/maven/apache-maven/{MAVEN_VERSION}/"
             f"apache-maven-{MAVEN_VERSION}-bin.tar.gz")
MAVEN_SHA512 = ("a555254d6b53d267965a3404ecb14e53c3827c09c3b94b5678835887ab404556"
                "bfaf78dcfe03ba76fa2508649dca8531c74bca4d5846513522404d48e8c4ac8b")


class KafkaBridgeError(RuntimeError):
    """The bridge to real Kafka cannot run: `what` is missing or failed (a tool, a release, a class)."""

    def __init__(self, what: str, message: str) -> None:
        super().__init__(f"{what}: {message}")
        self.what = what
        self.message = message


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kcheck" / "kafka"


def release_directory(version: str) -> Path:
    """`<cache>/<version>`, only for a known release (a KafkaBridgeError for anything else, before any path)."""
    try:
        return cache_root() / check_release(version)
    except UnknownRelease as e:
        raise KafkaBridgeError("kafka", str(e)) from None


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise KafkaBridgeError(name, f"`{name}` is not on PATH (the Kafka bridge needs a JDK 17+)")
    return path


def maven(timeout: float = 300.0) -> str:
    """The `mvn` to run: the one on PATH, else Maven's own distribution fetched once into the cache."""
    on_path = shutil.which("mvn")
    if on_path is not None:
        return on_path
    require_tool("java")  # Maven runs on it; say what is really missing first
    home = cache_root().parent / "maven" / f"apache-maven-{MAVEN_VERSION}"
    mvn = home / "bin" / "mvn"
    if (home / _MARKER).is_file() and mvn.is_file():
        return str(mvn)
    home.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="maven-", dir=home.parent))
    try:
        archive = work / "maven.tar.gz"
        try:
            with urllib.request.urlopen(MAVEN_URL, timeout=timeout) as r, open(archive, "wb") as f:
                shutil.copyfileobj(r, f)
        except OSError as e:
            raise KafkaBridgeError("mvn", f"not on PATH, and Maven could not be fetched from {MAVEN_URL}: {e}") from e
        digest = hashlib.sha512(archive.read_bytes()).hexdigest()
        if digest != MAVEN_SHA512:
            raise KafkaBridgeError("mvn", f"the Maven {MAVEN_VERSION} download from {MAVEN_URL} has the wrong SHA-512")
        with tarfile.open(archive) as tar:
            tar.extractall(work, filter="data")
        shutil.rmtree(home, ignore_errors=True)
        (work / f"apache-maven-{MAVEN_VERSION}").rename(home)
        (home / _MARKER).write_text(MAVEN_SHA512 + "\n", encoding="utf-8")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return str(mvn)


def _pom(version: str, coordinates: tuple[tuple[str, str, str], ...] | None = None,
         exclusions: tuple[tuple[str, str], ...] = ()) -> str:
    """A pom whose dependencies are `coordinates` (group, artifact, version), each without `exclusions`
    (group, artifact; '*' for all); default: the bridge's jars."""
    if coordinates is None:
        coordinates = tuple((GROUP, a, version) for a in artifacts(version))
    excluded = "".join(f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
                       for g, a in exclusions)
    deps = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>"
        + (f"<exclusions>{excluded}</exclusions>" if excluded else "") + "</dependency>"
        for g, a, v in coordinates
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by kcheck.reference.kafka_jars: the Kafka jars the placement bridge runs. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kcheck</groupId>
  <artifactId>kafka-bridge-deps</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""


@dataclass(frozen=True)
class ResolvedRelease:
    version: str
    directory: Path
    jars: tuple[Path, ...]
    seconds: float  # time spent resolving now (0.0 when the cache was reused)

    @property
    def classpath(self) -> str:
        return os.pathsep.join(str(j) for j in self.jars)


def _cached_in(directory: Path, version: str, required: Sequence[str]) -> ResolvedRelease | None:
    """The jars a completed cache in `directory` holds, if they include `required`; else None (no network)."""
    if not (directory / _MARKER).is_file():
        return None
    names = (directory / _MARKER).read_text(encoding="utf-8").split()
    jars = tuple(directory / "lib" / n for n in names)
    if not jars or not all(j.is_file() for j in jars):
        return None
    if any(f"{a}-{version}.jar" not in names for a in required):
        return None  # cached by an older kcheck that needed fewer of Kafka's jars
    return ResolvedRelease(version, directory, jars, 0.0)


def _resolve_into(directory: Path, version: str, required: Sequence[str], fill: Callable[[str, Path], None],
                  ) -> ResolvedRelease:
    """The cached jars, else `fill(mvn, work)` puts them in `work/lib` (and its pom in `work`), checked for
    `required` and moved in place. Downloading into a fresh directory beside the cache and moving it in with the
    marker written last means a half-copied lib/ from an interrupted run is never taken for a complete one."""
    hit = _cached_in(directory, version, required)
    if hit is not None:
        return hit
    mvn = maven()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / _MARKER).unlink(missing_ok=True)
    start = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="resolve-", dir=directory))
    try:
        fill(mvn, work)
        jars = sorted(p.name for p in (work / "lib").glob("*.jar"))
        missing = [a for a in required if f"{a}-{version}.jar" not in jars]
        if missing:
            raise KafkaBridgeError(f"kafka {version}", f"resolved without {', '.join(missing)}")
        shutil.rmtree(directory / "lib", ignore_errors=True)
        (work / "lib").rename(directory / "lib")
        (work / "pom.xml").replace(directory / "pom.xml")
        (directory / _MARKER).write_text("\n".join(jars) + "\n", encoding="utf-8")  # last
    finally:
        shutil.rmtree(work, ignore_errors=True)
    done = _cached_in(directory, version, required)
    assert done is not None
    return ResolvedRelease(version, directory, done.jars, time.perf_counter() - start)


def cached(version: str) -> ResolvedRelease | None:
    """The release's jars if a completed cache holds them, else None (never touches the network)."""
    return _cached_in(release_directory(version), version, artifacts(version))


def resolve(version: str, timeout: float = 900.0) -> ResolvedRelease:
    """The release's jars, from the cache or else from Maven Central via `mvn`."""
    return _resolve_into(release_directory(version), version, artifacts(version), lambda mvn, work: _copy_dependencies(
        mvn, _pom(version), work, version, ", ".join(artifacts(version)), timeout))


def _copy_dependencies(mvn: str, pom: str, work: Path, version: str, what: str, timeout: float) -> None:
    """`mvn dependency:copy-dependencies` of `pom` into `work/lib` (runtime scope)."""
    (work / "pom.xml").write_text(pom, encoding="utf-8")
    cmd = [mvn, "-q", "-B", "-f", str(work / "pom.xml"), "dependency:copy-dependencies",
           f"-DoutputDirectory={work / 'lib'}", "-DincludeScope=runtime"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=work)
    except subprocess.TimeoutExpired as e:
        raise KafkaBridgeError(f"kafka {version}", f"mvn did not resolve the jars within {timeout:.0f} s") from e
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "ERROR" in ln] or ["(no ERROR line)"]
        detail = re.sub(r"\x1b\[[0-9;]*m", "", lines[0]).replace("[ERROR]", "").strip()[:300]
        raise KafkaBridgeError(f"kafka {version}", f"mvn could not resolve {what}: {detail}")


# ---------------------------------------------------------------------------------------------
# The broker's jars (kcheck.cluster.local): kafka_2.13 and its runtime dependencies, plus a logging binding

# kafka_2.13: kafka.Kafka (the server's main class) and kafka.tools.StorageTool; kafka-tools: the command-line
# tools (TopicCommand is `kafka-topics.sh`, ReassignPartitionsCommand `kafka-reassign-partitions.sh`).
SERVER_ARTIFACTS = ("kafka_2.13", "kafka-tools")
# kafka-tools depends on Connect's runtime (for the Connect tools, with Jetty); no broker or tool kcheck runs needs it.
_SERVER_EXCLUSIONS = ((GROUP, "connect-runtime"),)
_SLF4J_API = re.compile(r"slf4j-api-([0-9][0-9A-Za-z.\-]*)\.jar")


def server_directory(version: str) -> Path:
    return release_directory(version) / "server"


def cached_server(version: str) -> ResolvedRelease | None:
    """The release's broker jars if a completed cache holds them, else None (never touches the network)."""
    return _cached_in(server_directory(version), version, SERVER_ARTIFACTS)


def resolve_server(version: str, timeout: float = 900.0) -> ResolvedRelease:
    """The jars that run this release's broker and controller (`kafka.Kafka`), from the cache or Maven Central."""
    def fill(mvn: str, work: Path) -> None:
        what = ", ".join(f"{GROUP}:{a}:{version}" for a in SERVER_ARTIFACTS)
        pom = _pom(version, tuple((GROUP, a, version) for a in SERVER_ARTIFACTS), _SERVER_EXCLUSIONS)
        _copy_dependencies(mvn, pom, work, version, what, timeout)
        # The binding must match the slf4j-api the release brought, so it is resolved in a second step.
        names = [p.name for p in (work / "lib").glob("*.jar")]
        api = next((m.group(1) for n in names if (m := _SLF4J_API.fullmatch(n))), None)
        if api is not None:
            binding = work / "binding"
            binding.mkdir()
            _copy_dependencies(mvn, _pom(version, (("org.slf4j", "slf4j-simple", api),)), binding, version,
                               f"org.slf4j:slf4j-simple:{api}", timeout)
            for jar in (binding / "lib").glob("slf4j-simple-*.jar"):
                jar.rename(work / "lib" / jar.name)

    return _resolve_into(server_directory(version), version, SERVER_ARTIFACTS, fill)


def default_version() -> str:
    """The newest known release that resolves (from the cache, else from Maven Central)."""
    errors = []
    for v in KNOWN_RELEASES:
        try:
            return resolve(v).version
        except KafkaBridgeError as e:
            if e.what == "mvn":
                raise
            errors.append(str(e))
    raise KafkaBridgeError("kafka", "no known release resolved: " + "; ".join(errors[:2]))


# ---------------------------------------------------------------------------------------------
# The broker-side harness (KafkaBridge(server=True)): the broker's jars plus Mockito

# kafka.server.DelayedProduce (Scala, kafka_2.13 up to 4.2) asks a ReplicaManager for each partition's state; a
# ReplicaManager cannot be built without a broker, so the harness stands one in with a Mockito mock (subclass mock
# maker: no agent attached to the JVM). Pinned: a new version is a new cache directory.
MOCKITO = ("org.mockito", "mockito-core", "5.14.2")


def mockito_directory() -> Path:
    return cache_root().parent / "mockito" / MOCKITO[2]


def resolve_mockito(timeout: float = 900.0) -> ResolvedRelease:
    """Mockito and its runtime dependencies (Byte Buddy, Objenesis), from the cache or Maven Central."""
    group, artifact, version = MOCKITO
    return _resolve_into(mockito_directory(), version, (artifact,), lambda mvn, work: _copy_dependencies(
        mvn, _pom(version, (MOCKITO,)), work, version, f"{group}:{artifact}:{version}", timeout))


def cached_server_harness(version: str) -> ResolvedRelease | None:
    """`resolve_server_harness`'s jars if the cache holds them all, else None (never touches the network)."""
    server = cached_server(version)
    mockito = _cached_in(mockito_directory(), MOCKITO[2], (MOCKITO[1],))
    if server is None or mockito is None:
        return None
    return ResolvedRelease(version, server.directory, server.jars + mockito.jars, server.seconds + mockito.seconds)


def resolve_server_harness(version: str, timeout: float = 900.0) -> ResolvedRelease:
    """The jars the broker-side harness compiles and runs against: the broker's set and Mockito. Its directory is
    the broker set's, so its compiled harness sits beside that set and apart from the bridge's own."""
    server, mockito = resolve_server(version, timeout), resolve_mockito(timeout)
    return ResolvedRelease(version, server.directory, server.jars + mockito.jars, server.seconds + mockito.seconds)
