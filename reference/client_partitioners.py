"""Which partition a keyed record goes to with each client, for `kcheck partition`: the Java producer (every
release, `partitioner.py`) beside the clients that do not share its hash.

- `java`: kafka-clients' `BuiltInPartitioner.partitionForKey` (`partitioner.py`, diffed against each release's
  classes): `toPositive(murmur2(key)) % partitions`, the same in 3.9.1 to 4.4.0.
- `kafka-python`: its own `kafka/partitioner/default.py` murmur2 (the installed package's function, not a copy),
  masked and reduced as its `DefaultPartitioner` does: the Java answer.
- `librdkafka` (confluent-kafka for Python, Go and .NET, node-rdkafka, rdkafka-based tools): its default
  `partitioner=consistent_random` (librdkafka's `src/rdkafka_msg.c`, `rd_kafka_msg_partitioner_consistent_random`):
  the CRC-32 of the key, as an unsigned 32-bit number, modulo the partition count; an empty or absent key is
  placed at random. So the same key lands elsewhere than with the Java client, unless the producer sets
  `partitioner=murmur2_random` (`librdkafka-murmur2`), which hashes as Java does (an absent key at random).
  Checked against the real librdkafka of confluent-kafka on a real cluster (tests/test_client_partitioners.py).

A record without a key has no fixed partition with any of them (the Java producer's sticky batches of KIP-794,
random choices elsewhere): `None` here.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kcheck.reference.partitioner import partition_for_key

CLIENTS = ("java", "kafka-python", "librdkafka", "librdkafka-murmur2")
DESCRIPTIONS = {
    "java": "the Java producer (kafka-clients 3.9.1-4.4.0): murmur2",
    "kafka-python": "kafka-python's DefaultPartitioner: murmur2",
    "librdkafka": "librdkafka's default partitioner=consistent_random (confluent-kafka clients): CRC-32",
    "librdkafka-murmur2": "librdkafka with partitioner=murmur2_random: murmur2",
}


def _java(key: bytes | None, partitions: int) -> int | None:
    return None if key is None else partition_for_key(key, partitions)


def _kafka_python(key: bytes | None, partitions: int) -> int | None:
    """kafka-python's own murmur2 (its `kafka/partitioner/default.py`), masked and reduced as its DefaultPartitioner
    does over the sorted partition ids (0..n-1 here). Not the partitioner object itself: it sorts a list of every
    partition id on each call, which a count of 2^31 - 1 cannot afford."""
    if key is None:
        return None
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2

    return (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions


def _librdkafka(key: bytes | None, partitions: int) -> int | None:
    return None if not key else zlib.crc32(key) % partitions  # rd_crc32: the IEEE CRC-32 zlib computes


# librdkafka's murmur2_random is Java's hash (an absent key placed at random, as here None)
PARTITION: dict[str, Callable[[bytes | None, int], int | None]] = {
    "java": _java, "kafka-python": _kafka_python, "librdkafka": _librdkafka, "librdkafka-murmur2": _java,
}


@dataclass(frozen=True)
class Placement:
    """One key: its partition with each client (None: no fixed partition)."""

    key: bytes | None
    partitions: dict[str, int | None]

    def differing(self, client: str) -> list[str]:
        """The clients that put this key elsewhere than `client` does."""
        mine = self.partitions[client]
        return [c for c, p in self.partitions.items() if c != client and p != mine]


def place(keys: Sequence[bytes | None], partitions: int, clients: Sequence[str] = CLIENTS) -> list[Placement]:
    """Each key's partition with each client, for a topic of `partitions` partitions (at least 1)."""
    if partitions < 1:
        raise ValueError(f"a topic has at least one partition, not {partitions}")
    return [Placement(k, {c: PARTITION[c](k, partitions) for c in clients}) for k in keys]
