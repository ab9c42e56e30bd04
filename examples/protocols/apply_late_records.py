"""Kafka's own rule for a late metadata record, the one place kcheck's `current` is stricter than Kafka 4.4.

Question: "`Partition.makeLeader` applies a record whose partition epoch is the one the leader already holds (the
AlterPartition answer taught it first, KAFKA-13790); kcheck's default skips it. Does it matter?"

Claim: within these bounds (two brokers, min.insync.replicas 1, one record, one ISR shrink, no fault) `kcheck
exhaust` finds the leader committing over a smaller ISR than the controller's: the shrink's answer arrives before
its record, the follower catches up and the leader proposes it again, the controller commits that, and the shrink's
late record then ends the expansion the leader had proposed. With one fence more the same run loses an acknowledged
record (docs/models/replication.md, "A late record").

    cd examples/protocols
    python -m kcheck exhaust --protocol apply_late_records:proposed --brokers 2 --min-isr 1 \
        --records 1 --crashes 0 --lossy-crashes 0 --fences 0 --elections 0 --isr-shrinks 1 --failovers 0 \
        --reads 0 --no-duplicates --atomic-fetch

exits 1 with replication.maximal-isr-covers-quorum.
"""

from dataclasses import replace

from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import LeaderAndIsr, Replica, StopReplica


def apply_same_partition_epoch(replica: Replica, record: LeaderAndIsr | StopReplica) -> bool:
    """Skip only a record older than the partition epoch the broker holds (KRaft bounds only)."""
    if not replica.alive or record.controller_epoch < replica.controller_epoch:
        return False
    return not replica.known or record.partition_epoch >= replica.partition_epoch


proposed = replace(Protocol.current(), name="apply-late-records",
                   description="brokers apply a record with the partition epoch they hold, as Kafka 4.4 does",
                   partition_state_applies=apply_same_partition_epoch)
