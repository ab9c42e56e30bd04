"""A proposed truncation rule: while the leader cannot answer the epoch lookup, truncate to the high watermark.

Proposal: "a follower that has applied a new leader epoch before its new leader has (the leader answers
its OffsetsForLeaderEpoch with UNKNOWN_LEADER_EPOCH) waits. Instead, let it truncate to its own high
watermark right away and start fetching as soon as the leader is ready: everything below the high
watermark is committed, so nothing committed is lost."

The high watermark a follower holds lags the leader's, so records committed above it are cut from a
replica that stays in the ISR: KIP-101's first scenario, through a new door. Claim: `kcheck exhaust`
finds a violation within these bounds (three brokers, one record, one leader move, no faults):

    cd examples/protocols
    python -m kcheck exhaust --protocol truncate_to_hw_while_waiting:proposed --brokers 3 --min-isr 1 \
        --records 1 --crashes 0 --lossy-crashes 0 --fences 0 --elections 1 --isr-shrinks 0 --failovers 0 \
        --reads 0 --no-duplicates --atomic-fetch

exits 1 with replication.electable-has-committed (an ISR member lacks a committed record).
"""

from dataclasses import replace

from kcheck.model.replication.protocol import Protocol, truncate_by_epoch_lookup
from kcheck.model.replication.state import Replica


def high_watermark_while_waiting(follower: Replica, leader: Replica | None, p: Protocol) -> int | None:
    """Today's epoch lookup when the leader answers; the follower's own high watermark when it cannot yet."""
    point = truncate_by_epoch_lookup(follower, leader, p)
    return min(follower.hw, follower.leo) if point is None else point


proposed = replace(Protocol.current(), name="truncate-to-hw-while-waiting",
                   description="truncate to the high watermark while the new leader cannot answer the epoch lookup",
                   truncation=high_watermark_while_waiting)
