"""A proposed broker-side shortcut: apply a partition's metadata record only when its leader epoch is new.

Proposal: "a follower learns ISR changes from nothing it acts on, and a leader learns its own from the
AlterPartition answer, so a broker can skip records that change only the ISR (`ReplicaManager.applyDelta`
calling `Partition.makeLeader`/`makeFollower` for every changed partition)."

Claim: within these bounds (two brokers, min.insync.replicas 1, one record, one crash, one fence) `kcheck exhaust`
finds a broker that has applied the whole metadata log but believes another ISR than the controller's: the
controller shrank the ISR when it fenced the follower, and the leader, which did not ask for that change,
never learns it.

    cd examples/protocols
    python -m kcheck exhaust --protocol apply_new_leader_epochs_only:proposed --brokers 2 --min-isr 1 \
        --records 1 --crashes 0 --lossy-crashes 0 --fences 1 --elections 0 --isr-shrinks 0 --failovers 0 \
        --reads 0 --no-duplicates --atomic-fetch

exits 1 with kraft.belief-matches-registry.
"""

from dataclasses import replace

from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import LeaderAndIsr, Replica, StopReplica


def new_leader_epochs_only(replica: Replica, record: LeaderAndIsr | StopReplica) -> bool:
    """Apply a record only if it carries a leader epoch the broker has not seen (or it knows nothing yet)."""
    return replica.alive and (not replica.known or record.leader_epoch > replica.leader_epoch)


proposed = replace(Protocol.current(), name="apply-new-leader-epochs-only",
                   description="brokers skip metadata records that keep the leader epoch",
                   partition_state_applies=new_leader_epochs_only)
