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
- `sarama` (IBM/sarama, the Go client): its default `Producer.Partitioner = NewHashPartitioner` (sarama's
  `partitioner.go`, `hashPartitioner.Partition`): the FNV-1a 32-bit hash of the key's bytes read as a signed
  32-bit number, Go's truncated remainder by the partition count, negated when negative. So neither Java's nor
  librdkafka's answer. Its other hash partitioners: `sarama-reference` (`NewReferenceHashPartitioner`: the hash
  masked to 31 bits, then the remainder), `sarama-crc` (`NewConsistentCRCHashPartitioner`: the unsigned CRC-32
  modulo the count, librdkafka's default answer) and `sarama-murmur2` (`NewMurmur2Partitioner`, sarama 1.50.0 and
  later: the Java answer). A key that is present but empty is hashed (only an absent key is placed at random).
  Checked against sarama itself, built with Go (tests/test_client_partitioners.py, where Go is installed).

A record without a key has no fixed partition with any of them (the Java producer's sticky batches of KIP-794,
random choices elsewhere): `None` here.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kcheck.reference.partitioner import partition_for_key

CLIENTS = ("java", "kafka-python", "librdkafka", "librdkafka-murmur2", "sarama", "sarama-reference", "sarama-crc",
           "sarama-murmur2")
DESCRIPTIONS = {
    "java": "the Java producer (kafka-clients 3.9.1-4.4.0): murmur2",
    "kafka-python": "kafka-python's DefaultPartitioner: murmur2",
    "librdkafka": "librdkafka's default partitioner=consistent_random (confluent-kafka clients): CRC-32",
    "librdkafka-murmur2": "librdkafka with partitioner=murmur2_random: murmur2",
    "sarama": "sarama's default NewHashPartitioner (Go): FNV-1a, signed remainder made positive",
    "sarama-reference": "sarama's NewReferenceHashPartitioner: FNV-1a masked to 31 bits",
    "sarama-crc": "sarama's NewConsistentCRCHashPartitioner: unsigned CRC-32",
    "sarama-murmur2": "sarama's NewMurmur2Partitioner (1.50.0+): murmur2",
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


def fnv1a_32(data: bytes) -> int:
    """The FNV-1a 32-bit hash (Go's hash/fnv New32a), unsigned."""
    h = 0x811C9DC5  # the 32-bit offset basis
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF  # xor the byte, then multiply by the 32-bit FNV prime
    return h


def _signed(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def _sarama(key: bytes | None, partitions: int) -> int | None:
    if key is None:
        return None
    return abs(_signed(fnv1a_32(key))) % partitions  # Go's % truncates toward zero, then sarama negates: |h| mod n


def _sarama_reference(key: bytes | None, partitions: int) -> int | None:
    return None if key is None else (fnv1a_32(key) & 0x7FFFFFFF) % partitions


def _sarama_crc(key: bytes | None, partitions: int) -> int | None:
    return None if key is None else zlib.crc32(key) % partitions  # an empty key too: its CRC-32 is 0


# librdkafka's murmur2_random and sarama's NewMurmur2Partitioner are Java's hash (an absent key at random: None)
PARTITION: dict[str, Callable[[bytes | None, int], int | None]] = {
    "java": _java, "kafka-python": _kafka_python, "librdkafka": _librdkafka, "librdkafka-murmur2": _java,
    "sarama": _sarama, "sarama-reference": _sarama_reference, "sarama-crc": _sarama_crc, "sarama-murmur2": _java,
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
