"""Bad input to the commands and options that drive real Kafka (cluster, chaos, replay --on-cluster,
kafka-classpath, verify --bootstrap-server, --against-kafka), in the shape of tests/test_bad_input_corpus.py's
OPTIONS and EXTRA, which merges them into its parametrised tests: one corpus.

Placeholder: only the cases refused today, in one line naming the option, without starting a JVM, a cluster or
Maven (an unknown but well-formed release, 9.9.9, still reaches Maven in chaos and cluster up). The options with no such
case yet are in LIVE_PENDING, with why; the live helper's module replaces this one.
"""

from __future__ import annotations

LIVE_OPTIONS: dict[str, tuple[list[str], dict[str, list[str]]]] = {
    "chaos": (["chaos"], {
        "--brokers": ["0", "x", "-1"], "--partitions": ["0", "-1", "9" * 50], "--replication-factor": ["0", "x"],
        "--min-insync-replicas": ["0", "x"], "--duration": ["nan", "-1", "inf"], "--seed": ["x", "1.5"],
        "--faults": ["nope", ""], "--schedule": ["nope.txt", "subdir"], "--rate": ["nan", "-1"],
        "--heal-timeout": ["nan", "-1"], "--kafka-version": ["x"],
        "--json": [""],
    }),
    "cluster up": (["cluster", "up"], {
        "--brokers": ["0", "x", "-1"], "--racks": [""], "--kafka-version": ["x"],
    }),
    "cluster down": (["cluster", "down"], {}),
    "cluster status": (["cluster", "status"], {}),
    "replay": (["replay", "trace.json"], {"--dir": ["/nonexistent-kcheck-dir"]}),
    "verify": (["verify"], {"--bootstrap-server": ["", "x", "a:b", "a:99999"]}),
    "verify-reassignment": (["verify-reassignment", "plan.json"], {"--bootstrap-server": ["x", "a:b"]}),
    "place": (["place", "--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2"],
              {"--against-kafka": ["", "x", "9.9.9"]}),
    "assign": (["assign", "group.json"], {"--against-kafka": ["", "x", "9.9.9"]}),
    "sweep": (["sweep", "placement"], {"--against-kafka": ["", "x", "9.9.9"]}),
}
LIVE_EXTRA: list[tuple[list[str], str]] = [
    (["verify", "plan.json", "--command-config", "nope.properties"], "--command-config"),
    (["verify-reassignment", "current.txt", "plan.json", "--command-config", "nope.properties"], "--command-config"),
    (["chaos", "--unclean-leader-election=1"], "--unclean-leader-election"),
    (["cluster", "status", "--json=1"], "--json"), (["replay", "trace.json", "--on-cluster=1"], "--on-cluster"),
    (["cluster", "nope"], "nope"), (["cluster", "up", "--nope"], "--nope"),
]
# Options (command, option) with no case that is refused today without a cluster, a JVM or Maven: each starts one.
LIVE_PENDING: dict[tuple[str, str], str] = {
    ("chaos", "--topic"): "an internal or invalid topic name is refused only after the cluster started",
    ("cluster up", "--dir"): "a --dir under a file is a traceback after the jars resolve",
    ("cluster up", "--timeout"): "NaN and negative timeouts reach the storage formatting",
    ("kafka-classpath", "--kafka-version"): "an unknown release runs Maven and writes into the jar cache",
    ("chaos", "--dir"): "a folder with no cluster is refused naming 'cluster', not --dir",
    ("cluster down", "--dir"): "a folder with no cluster is refused naming 'cluster', not --dir",
    ("cluster status", "--dir"): "a folder with no cluster is refused naming 'cluster', not --dir",
}
