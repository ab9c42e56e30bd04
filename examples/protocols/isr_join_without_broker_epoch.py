"""A proposed ISR-join rule: the leader stops comparing broker epochs (the controller does it anyway).

Proposal: "the leader proposes a follower for the ISR once it has fetched up to the high watermark and to
the start of the leader's epoch in this epoch and is unfenced. KIP-903's broker-epoch comparison is done
again by the controller on AlterPartition, so doing it in `Partition.isFollowerInSync` too is redundant."

Kafka asks the question right after it recorded a fetch (`Partition.updateFollowerFetchState` ->
`maybeExpandIsr`), with the broker epoch that fetch carried; the comparison decides something only when the
leader's metadata image still has an older registration of the follower, outside the ISR: a follower dropped from
the ISR that restarts (a new broker epoch, registered fenced) and fetches before the leader applied its
registration. The leader now proposes such a follower, and the controller's own checks (fenced, KIP-903) must
refuse it. Claim: they do, every time: `kcheck exhaust` finds no violation within these bounds (two brokers,
min.insync.replicas 2, one record, one ISR shrink, one crash), and the changed rule does answer differently from
today's in them:

    cd examples/protocols
    python -m kcheck exhaust --protocol isr_join_without_broker_epoch:proposed --brokers 2 --min-isr 2 \
        --records 1 --crashes 1 --lossy-crashes 0 --fences 0 --elections 0 --isr-shrinks 1 --failovers 0 \
        --reads 0 --no-duplicates --atomic-fetch

exits 0 ("OK: no invariant violated in any reachable state").
"""

from dataclasses import replace

from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import Registry, Replica


def caught_up_in_epoch_unfenced(leader: Replica, follower: int, registry: Registry) -> bool:
    """Fetched in this leader epoch up to the high watermark and the epoch's start offset, and unfenced."""
    fetched = leader.view_of(follower)
    if fetched is None or fetched < leader.hw or fetched < leader.epoch_start:
        return False
    return follower not in registry.fenced


proposed = replace(Protocol.current(), name="isr-join-without-broker-epoch",
                   description="the leader's ISR join without KIP-903's broker-epoch comparison",
                   isr_join=caught_up_in_epoch_unfenced)
