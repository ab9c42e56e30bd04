"""kcheck's JVM-side harness for the Kafka bridge: the Java sources in `reference/harness/`.

It is our own code (it calls Kafka's classes; it contains none of Kafka's). The bridge compiles it
with `javac` against a release's jars (see `kafka_jars`) and feeds it requests, one per line, on
stdin; it answers one line per request on stdout, flushing whenever its input runs dry, so a batch
costs one round trip and throughput is set by Kafka's code.

`KcheckKafkaHarness.java` reads the lines and dispatches on the first word; `KcheckCodec.java`
holds the shared encoding; a `Kcheck*.java` with a static `register(Map<String, KcheckHandler>)`
is a handler class naming the words it answers, any other is shared by handlers and compiled with
the base (`KcheckControlManagers.java`: Kafka's KRaft control managers, by reflection, so it
compiles on every release). One javac compiles everything; a handler whose Kafka classes are
missing from a release (AdminUtils after 4.0, the KIP-848 assignors' API before they existed, ...)
is set aside and left out of that release, with the reason javac gives for it alone, instead of
failing the whole bridge. A source may declare one of Kafka's packages (to override or call package-private
members); it cannot name the unnamed-package classes, so it registers its words by reflection.

Protocol (space-separated tokens; the harness first prints `READY <kafka version> <word,word,...>`):

    A <nPartitions> <rf> <fixedStartIndex> <startPartitionId> <seed|-> <broker>...
        AdminUtils.assignReplicasToBrokers(brokers, nPartitions, rf, fixedStartIndex, startPartitionId);
        a seed re-seeds AdminUtils' static Random first (the draws of a negative fixedStartIndex).
        broker = <id>/<rack>.  Answer: OK <partition>=<r,r,...> ...
    S <seed> <nSpecs> (<startPartition> <nPartitions> <rf>)*nSpecs <broker>...
        One StripedReplicaPlacer(new Random(seed)) places each spec in turn (rf cast to short).
        broker = <id>/<rack>/<fenced 0|1>.  Answer: OK <r,r,...> ... [| <r,r,...> ...]
    TIME
        The time inside Kafka's calls of the request before it (`KcheckTimer.java`; the handlers of the client and
        group assignors, the striped placer and SEG_LOG bracket their Kafka call): OK <wall ns> <thread CPU ns>
        <GC ms>. For bench/bench_side_by_side.py.
    Q   exit.
    rack (and any other string) = '-' for null, '_' for "", else its UTF-16 code units in hex
    joined by '.'; an int list is '1,2,3' ('~' when empty, where it must stay one token).
    Any throwable answers ERR <class name> <message, with \\ and newlines escaped>.

The handlers in `BROKER_SIDE` (the purgatories' DelayedProduce and DelayedFetch, the transaction coordinator's
TransactionMetadata, the replica side's Partition, 4.0's Scala UnifiedLog) are compiled only for the broker-side
bridge, `KafkaBridge(version, server=True)`, against the broker's jars and Mockito, and the others only for the
bridge.

Each handler file documents its own words.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

CLASS_NAME = "KcheckKafkaHarness"
DIRECTORY = Path(__file__).parent / "harness"
# With every other non-handler: the base. KcheckTimer: the time inside Kafka's calls (word TIME, in the dispatcher).
BASE = ("KcheckHandler", "KcheckCodec", "KcheckClock", "KcheckTimer", CLASS_NAME)


@functools.lru_cache(maxsize=1)
def sources() -> dict[str, str]:
    """Class name -> Java source, for every file of the harness."""
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(DIRECTORY.glob("Kcheck*.java"))}


# Handlers whose Kafka classes only the broker's jars hold (kafka_2.13, kafka-server, kafka-transaction-coordinator),
# with Mockito where they need it: only the broker-side bridge (`KafkaBridge(server=True)`) compiles them, and it
# compiles only them.
BROKER_SIDE = ("KcheckDelayedProduce", "KcheckDelayedProduceScala", "KcheckDelayedFetch", "KcheckTxnMetadata",
               "KcheckPartition", "KcheckTxnLogScala")


def handlers(server: bool = False) -> list[str]:
    """The handler classes: every source besides the base that registers request words (of the bridge, or of the
    broker-side bridge when `server`)."""
    return [name for name, src in sources().items()
            if name not in BASE and re.search(r"public static void register\(", src)
            and (name in BROKER_SIDE) == server]


_PACKAGE = re.compile(r"^package\s+([\w.]+)\s*;", re.MULTILINE)


def main_class(name: str) -> str:
    """The name the JVM loads a harness class by: a handler placed in one of Kafka's packages (to reach its
    package-private methods, as KcheckStickyPartitioner does) is named with its package."""
    m = _PACKAGE.search(sources()[name])
    return f"{m.group(1)}.{name}" if m else name


def source_hash() -> str:
    h = hashlib.sha256()
    for name, src in sources().items():
        h.update(name.encode("utf-8") + b"\0" + src.encode("utf-8") + b"\0")
    return h.hexdigest()[:16]
