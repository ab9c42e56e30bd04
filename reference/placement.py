"""Replica placement as Kafka's AdminUtils does it (ZooKeeper-era topic creation, `--generate`).

Mirrors `server-common/src/main/java/org/apache/kafka/admin/AdminUtils.java`
(formerly `kafka.admin.AdminUtils`): the rack-unaware round-robin with a
growing follower shift, and the rack-aware variant over a rack-alternated
broker list. Randomness is explicit: a fixed start index, or draws from a
seeded `java.util.Random` in Kafka's order (start index, then shift).
"""

from __future__ import annotations

import random as _py_random
from collections.abc import Iterator, Mapping, Sequence

from kcheck.model import Broker
from kcheck.reference.errors import (
    AdminOperationException,
    InvalidPartitionsException,
    InvalidReplicationFactorException,
)
from kcheck.reference.java import JavaRandom, string_compare_key


def replica_index(first_replica_index: int, second_replica_shift: int, replica_index: int, n_brokers: int) -> int:
    """Position of a follower: `1 + (shift + j) mod (n-1)` past the leader, so never the leader."""
    shift = 1 + (second_replica_shift + replica_index) % (n_brokers - 1)
    return (first_replica_index + shift) % n_brokers


def rack_alternated_broker_list(broker_rack_map: Mapping[int, str]) -> list[int]:
    """Brokers interleaved by rack: racks in name order, each rack's brokers by id, one per rack in turn.

    `{0:r1, 1:r3, 2:r3, 3:r2, 4:r2, 5:r1}` gives `[0, 3, 1, 5, 4, 2]`.
    """
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in broker_rack_map.items():
        by_rack.setdefault(rack, []).append(broker_id)
    racks = sorted(by_rack, key=string_compare_key)  # Arrays.sort on String
    iterators = {r: iter(sorted(by_rack[r])) for r in racks}
    result: list[int] = []
    rack_index = 0
    while len(result) < len(broker_rack_map):
        nxt = next(iterators[racks[rack_index]], None)
        if nxt is not None:
            result.append(nxt)
        rack_index = (rack_index + 1) % len(racks)
    return result


def _partitions(
    n: int, n_partitions: int, fixed_start_index: int, start_partition_id: int, random: JavaRandom | None
) -> Iterator[tuple[int, int, int]]:
    """(partition id, leader position, follower shift) for each partition, as both AdminUtils paths walk them.

    The start index and the initial shift are both the fixed index, or two
    independent nextInt(n) draws (start first). The shift grows at each multiple
    of n of the *real* partition id, so adding partitions does not replay the
    increments already passed.
    """
    if fixed_start_index >= 0:
        start_index = shift = fixed_start_index
    else:
        rnd = random if random is not None else JavaRandom(_py_random.getrandbits(48))
        start_index = rnd.next_int(n)
        shift = rnd.next_int(n)
    pid = max(0, start_partition_id)
    for _ in range(n_partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        yield pid, (pid + start_index) % n, shift
        pid += 1


def assign_replicas_to_brokers(
    brokers: Sequence[Broker],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    random: JavaRandom | None = None,
) -> dict[int, list[int]]:
    """`AdminUtils.assignReplicasToBrokers`: partition id -> replicas (first = preferred leader).

    Validation runs in Kafka's order; with no rack on any broker the broker list
    is used in the order given, otherwise every broker needs a rack. Without a
    fixed start index and without `random`, draws come from an unseeded
    generator, as Kafka's static `new Random()` does.
    """
    if n_partitions <= 0:
        raise InvalidPartitionsException("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorException("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorException(
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}."
        )
    if all(b.rack is None for b in brokers):
        return _assign_rack_unaware(
            n_partitions, replication_factor, [b.id for b in brokers], fixed_start_index, start_partition_id, random
        )
    if any(b.rack is None for b in brokers):
        raise AdminOperationException("Not all brokers have rack information for replica rack aware assignment.")
    return _assign_rack_aware(n_partitions, replication_factor, brokers, fixed_start_index, start_partition_id, random)


def _assign_rack_unaware(
    n_partitions: int,
    replication_factor: int,
    broker_list: list[int],
    fixed_start_index: int,
    start_partition_id: int,
    random: JavaRandom | None,
) -> dict[int, list[int]]:
    n = len(broker_list)
    result: dict[int, list[int]] = {}
    for pid, first, shift in _partitions(n, n_partitions, fixed_start_index, start_partition_id, random):
        followers = [broker_list[replica_index(first, shift, j, n)] for j in range(replication_factor - 1)]
        result[pid] = [broker_list[first], *followers]
    return result


def _assign_rack_aware(
    n_partitions: int,
    replication_factor: int,
    brokers: Sequence[Broker],
    fixed_start_index: int,
    start_partition_id: int,
    random: JavaRandom | None,
) -> dict[int, list[int]]:
    rack_of = {b.id: b.rack for b in brokers}
    num_racks = len(set(rack_of.values()))
    arranged = rack_alternated_broker_list(rack_of)  # type: ignore[arg-type]
    n = len(arranged)
    result: dict[int, list[int]] = {}
    for pid, first, shift in _partitions(n, n_partitions, fixed_start_index, start_partition_id, random):
        leader = arranged[first]
        replicas = [leader]
        racks_used = {rack_of[leader]}
        brokers_used = {leader}
        k = 0  # shared by all followers of the partition, never reset between them
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[replica_index(first, shift * num_racks, k, n)]
                k += 1
                rack = rack_of[broker]
                # Skip a broker whose rack already has a replica while some rack has none,
                # or that already holds one while some broker holds none.
                if (rack not in racks_used or len(racks_used) == num_racks) and (
                    broker not in brokers_used or len(brokers_used) == n
                ):
                    replicas.append(broker)
                    racks_used.add(rack)
                    brokers_used.add(broker)
                    break
        result[pid] = replicas
    return result


def create_new_partitions_assignment(
    topic: str,
    existing: Mapping[int, Sequence[int]],
    all_brokers: Sequence[Broker],
    num_partitions: int,
) -> dict[int, list[int]]:
    """Replicas of the partitions added to a topic, as the ZooKeeper-era `AdminZkClient` computes them.

    Mirrors `createNewPartitionsAssignment` (`core/src/main/scala/kafka/zk/AdminZkClient.scala`)
    without a manual assignment: the new partitions continue the numbering, keep partition 0's
    replication factor, and start at the first broker whose id is at least partition 0's leader.
    Kafka passes `all_brokers` sorted by id (`getBrokerMetadatas`); the order given is used as is.
    The missing-partition-0 message renders the existing assignment Python's way, not Scala's.
    """
    if 0 not in existing:
        raise AdminOperationException(f"Unexpected existing replica assignment for topic '{topic}', "
                                      f"partition id 0 is missing. Assignment: {dict(existing)}")
    partition0 = list(existing[0])
    to_add = num_partitions - len(existing)
    if to_add <= 0:
        raise InvalidPartitionsException(
            f"The number of partitions for a topic can only be increased. Topic {topic} currently has "
            f"{len(existing)} partitions, {num_partitions} would not be an increase.")
    start_index = next((i for i, b in enumerate(all_brokers) if b.id >= partition0[0]), 0)
    return assign_replicas_to_brokers(all_brokers, to_add, len(partition0), start_index, len(existing))
