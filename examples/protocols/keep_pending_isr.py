"""A fix for the late-record finding: the leader keeps the ISR change it proposed when a record it already knows of
arrives.

Question: "`Partition.makeLeader` applies a record whose partition epoch is the one the leader already holds (the
AlterPartition answer taught it first, KAFKA-13790), which can end an expansion the leader proposed since and let it
commit over a smaller ISR than the controller's. If a broker skipped such a record, would that hole close without
opening another?"

Claim: within these bounds (two brokers, min.insync.replicas 1, one record, one ISR shrink, no fault) `kcheck
exhaust` finds no violation, where `--protocol current` (Kafka 4.4's rule) breaks
replication.maximal-isr-covers-quorum in 6 steps (docs/findings.md, "A late record").

    cd examples/protocols
    python -m kcheck exhaust --protocol keep_pending_isr:proposed --brokers 2 --min-isr 1 \
        --records 1 --crashes 0 --lossy-crashes 0 --fences 0 --elections 0 --isr-shrinks 1 --failovers 0 \
        --reads 0 --no-duplicates --atomic-fetch

exits 0.
"""

from dataclasses import replace

from kcheck.model.replication.protocol import Protocol, partition_epoch_not_older
from kcheck.model.replication.state import LeaderAndIsr, Replica, StopReplica


def skip_known_records(replica: Replica, record: LeaderAndIsr | StopReplica) -> bool:
    """Kafka's rule, except that a record at the partition epoch the broker already holds (and the same leader
    epoch) is skipped: the broker has it from the AlterPartition answer, and whatever it proposed since stands."""
    if replica.known and (record.leader_epoch, record.partition_epoch) == (replica.leader_epoch,
                                                                         replica.partition_epoch):
        return False
    return partition_epoch_not_older(replica, record)


proposed = replace(Protocol.current(), name="keep-pending-isr",
                   description="a broker skips a metadata record whose epochs it already holds",
                   partition_state_applies=skip_known_records)
