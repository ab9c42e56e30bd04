"""A proposed controller validation: let a fenced broker join the ISR when its broker epoch is current.

Proposal: "KIP-903's broker epoch already proves the follower did not restart since the leader saw its
fetches, so the controller need not also refuse fenced brokers: a broker fenced for a missed heartbeat
that is still fetching may rejoin the ISR (AlterPartition validation in
`ReplicationControlManager`)."

Claim: within these bounds (two brokers, broker 2 out of the ISR from the start, one record, one fence
of a live broker) no record is lost (a fence is not a crash, so the follower still holds what it fetched,
and a fenced broker is never elected), but `kcheck exhaust` finds a follower fenced while the leader's
proposal is in flight joining the ISR: an ISR holding a broker the controller fenced, which KRaft's own
specification forbids.

    cd examples/protocols
    python -m kcheck exhaust --protocol fenced_replicas_may_join:proposed --brokers 2 --min-isr 1 \
        --initial-isr 1 --records 1 --crashes 0 --lossy-crashes 0 --fences 1 --elections 0 --isr-shrinks 0 \
        --failovers 0 --reads 0 --no-duplicates --atomic-fetch

exits 1 with kraft.isr-unfenced.
"""

from collections.abc import Mapping
from dataclasses import replace

from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import Registry


def current_broker_epoch_only(registry: Registry, isr: frozenset[int], broker_epochs: Mapping[int, int]) -> bool:
    """Every broker joining the ISR was seen fetching with its registered broker epoch; fencing is not asked."""
    return all(broker_epochs.get(b) == registry.broker_epochs[b - 1] for b in isr - registry.isr)


proposed = replace(Protocol.current(), name="fenced-replicas-may-join",
                   description="AlterPartition accepts fenced joiners with a current broker epoch",
                   alter_partition_validation=current_broker_epoch_only)
