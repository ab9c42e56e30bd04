"""Kafka's command-line tools of any release from 0.10.2 on, run as the releases ship them, to produce real artefacts.

kcheck reads what engineers paste from Kafka's tools (`kafka-topics --describe`, `kafka-dump-log`,
`kafka-reassign-partitions`, `kafka-consumer-groups`). Their layouts changed from release to release, so the
tests read outputs the real tools of each release printed against kcheck's own cluster and log segments. This
module fetches a release's tool jars from Maven Central (Kafka's own artifacts, run as dependencies) and runs a
tool's main class, the one its `bin/kafka-*.sh` script runs in that release:

* up to 3.4 the tools are Scala objects in the broker's jar (`kafka_2.12`, `kafka_2.13` from 2.4): for example
  `kafka.admin.TopicCommand` (`core/src/main/scala/kafka/admin/TopicCommand.scala`) and
  `kafka.tools.DumpLogSegments`;
* from 3.5 they move one by one into `kafka-tools` as Java classes (`tools/src/main/java/org/apache/kafka/tools/`;
  in the jars of Maven Central: `TopicCommand` and `ReassignPartitionsCommand` from 3.7, `ConsumerGroupCommand` from
  3.8, `DumpLogSegments` from 4.3). `main_class` finds the one a release has by looking into its jars, so no table
  of moves has to be kept true by hand.

The releases covered are `TOOL_RELEASES` (the last patch of each minor release from 0.10.2 to 3.8) and every release
`kafka_jars` knows; the jars of 3.9 and 4.x are the broker's set (`kafka_jars.resolve_server`), older ones live in
`<cache>/<version>/tools` beside it. Nothing is written for a release outside that list (a version never becomes a
path before it is checked).
"""

from __future__ import annotations

import re
import subprocess
import zipfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from kcheck.reference import kafka_jars
from kcheck.reference.kafka_jars import GROUP, KafkaBridgeError, ResolvedRelease

# The last patch release of each minor from 0.10.2 to 3.8 (3.9 and 4.x are kafka_jars' releases). All run on Java 17;
# `kafka-dump-log` reads today's record batches (magic 2) from 0.11 on.
TOOL_RELEASES = ("3.8.1", "3.7.2", "3.6.2", "3.5.2", "3.4.1", "3.3.2", "3.2.3", "3.1.2", "3.0.2", "2.8.2", "2.7.2",
                 "2.6.3", "2.5.1", "2.4.1", "2.3.1", "2.2.2", "2.1.1", "2.0.1", "1.1.1", "1.0.2", "0.11.0.3",
                 "0.10.2.2")

# The command-line tools, by script name: the main classes each has had, newest first.
TOOLS: dict[str, tuple[str, ...]] = {
    "kafka-topics": ("org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand"),
    "kafka-dump-log": ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments"),
    "kafka-reassign-partitions": ("org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
                                  "kafka.admin.ReassignPartitionsCommand"),
    "kafka-consumer-groups": ("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                              "kafka.admin.ConsumerGroupCommand"),
    "kafka-log-dirs": ("org.apache.kafka.tools.LogDirsCommand", "kafka.admin.LogDirsCommand"),
    "kafka-features": ("org.apache.kafka.tools.FeatureCommand", "kafka.admin.FeatureCommand"),
    "kafka-configs": ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"),
    "kafka-leader-election": ("org.apache.kafka.tools.LeaderElectionCommand", "kafka.admin.LeaderElectionCommand"),
    # KIP-664, from 3.0 (in the kafka-tools artifact, which this cache holds for 3.5 on)
    "kafka-transactions": ("org.apache.kafka.tools.TransactionsCommand",),
    # KIP-595's tool, from 3.3 (moved to kafka-tools in 3.5); --bootstrap-controller from 3.7 (KIP-919)
    "kafka-metadata-quorum": ("org.apache.kafka.tools.MetadataQuorumCommand", "kafka.admin.MetadataQuorumCommand"),
    "zookeeper-server": ("org.apache.zookeeper.server.ZooKeeperServerMain",),
}


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def releases() -> tuple[str, ...]:
    """Every release whose tools this module runs, newest first."""
    every = {*TOOL_RELEASES, *kafka_jars.KNOWN_RELEASES, *kafka_jars.ZK_RELEASES}
    return tuple(sorted(every, key=_key, reverse=True))


def check_release(version: str) -> str:
    """`version` if its tools can be run, else KafkaBridgeError naming the known releases (nothing touched)."""
    if version not in releases():
        shown = version if version.isprintable() and len(version) <= 40 else repr(version[:40])
        raise KafkaBridgeError(f"kafka {shown}", "not a release whose tools kcheck runs (known: "
                               + ", ".join(releases()) + ")")
    return version


def _scala_artifact(version: str) -> str:
    return "kafka_2.13" if _key(version) >= (2, 4) else "kafka_2.12"


def tools_directory(version: str) -> Path:
    return kafka_jars.cache_root() / check_release(version) / "tools"


def resolve_tools(version: str, timeout: float = 900.0) -> ResolvedRelease:
    """The jars that run this release's command-line tools, from the cache or else Maven Central."""
    check_release(version)
    if version in kafka_jars.KNOWN_RELEASES or version in kafka_jars.ZK_RELEASES:
        return kafka_jars.resolve_server(version, timeout)
    wanted = [_scala_artifact(version)] + (["kafka-tools"] if _key(version) >= (3, 5) else [])

    def fill(mvn: str, work: Path) -> None:
        pom = kafka_jars._pom(version, tuple((GROUP, a, version) for a in wanted), kafka_jars._SERVER_EXCLUSIONS)
        kafka_jars._copy_dependencies(mvn, pom, work, version, ", ".join(f"{GROUP}:{a}:{version}" for a in wanted),
                                      timeout)
        _java17_zookeeper_client(mvn, work, version, timeout)

    return kafka_jars._resolve_into(tools_directory(version), version, wanted, fill)


# ZooKeeper's 3.4.11-3.4.14 clients cannot connect on Java 14 and later (ZOOKEEPER-3779: they read a host back from
# InetSocketAddress.toString, whose format changed); 3.4.10's client speaks the same protocol and API and can.
_BROKEN_ZK_CLIENT = re.compile(r"zookeeper-3\.4\.1[1-4]\.jar")
_ZK_CLIENT = ("org.apache.zookeeper", "zookeeper", "3.4.10")


def _java17_zookeeper_client(mvn: str, work: Path, version: str, timeout: float) -> None:
    """Swap a release's ZooKeeper 3.4.11-3.4.14 client jar for 3.4.10's (2.0 to 2.3 ship them), so `--zookeeper`
    tools run on the JDK kcheck runs; the tool's own classes, and what it prints, are the release's."""
    broken = [p for p in (work / "lib").glob("zookeeper-3.4.*.jar") if _BROKEN_ZK_CLIENT.fullmatch(p.name)]
    if not broken:
        return
    client = work / "zookeeper-client"
    client.mkdir()
    kafka_jars._copy_dependencies(mvn, kafka_jars._pom(version, (_ZK_CLIENT,), (("*", "*"),)), client, version,
                                  ":".join(_ZK_CLIENT), timeout)
    for jar in broken:
        jar.unlink()
    for jar in (client / "lib").glob("*.jar"):
        jar.rename(work / "lib" / jar.name)


@cache
def _classes(jars: tuple[Path, ...]) -> frozenset[str]:
    names: set[str] = set()
    for jar in jars:
        with zipfile.ZipFile(jar) as z:
            names.update(n[:-6].replace("/", ".") for n in z.namelist() if n.endswith(".class"))
    return frozenset(names)


def main_class(release: ResolvedRelease, tool: str) -> str:
    """The class `bin/<tool>.sh` runs in this release (KafkaBridgeError when the release has no such tool)."""
    if tool not in TOOLS:
        raise KafkaBridgeError(tool, f"not a tool kcheck runs (known: {', '.join(TOOLS)})")
    have = _classes(release.jars)
    for name in TOOLS[tool]:
        if name in have:
            return name
    raise KafkaBridgeError(f"kafka {release.version}", f"has no {tool} ({' or '.join(TOOLS[tool])})")


def command(release: ResolvedRelease, tool: str, args: Sequence[str], heap: str = "256m") -> list[str]:
    """The command line that runs `tool` of `release` with `args`, as its script would (small heap, headless)."""
    java = kafka_jars.require_tool("java")
    return [java, f"-Xmx{heap}", "-Djava.awt.headless=true", "-cp", release.classpath, main_class(release, tool),
            *args]


def run(version: str, tool: str, args: Sequence[str], timeout: float = 120.0,
        cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a release's tool to the end; its stdout is the artefact (stderr carries the tool's log lines)."""
    cmd = command(resolve_tools(version), tool, args)
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        raise KafkaBridgeError(f"kafka {version} {tool}", f"did not finish within {timeout:.0f} s") from e
