"""A proposed high-watermark rule: commit what a majority of the ISR has (Raft's commit rule).

Proposal: "acks=all waits for the slowest ISR member; let the leader advance its high watermark to the
largest offset that a majority of the maximal ISR (itself included) has fetched, as a Raft leader does,
and keep KIP-966's rule that nothing advances while the ISR is below min.insync.replicas."

Kafka's leader may only commit what *every* ISR member has, because any ISR member may be elected
(`PartitionChangeBuilder` elects from the ISR, not by comparing logs as Raft's vote does). So this change
loses committed records. Claim: `kcheck exhaust` finds a violation in these bounds (three brokers, all in
the ISR, min.insync.replicas 2, one record, no faults at all):

    cd examples/protocols
    python -m kcheck exhaust --protocol quorum_high_watermark:proposed --brokers 3 --min-isr 2 --records 1 \
        --crashes 0 --lossy-crashes 0 --fences 0 --elections 0 --isr-shrinks 0 --failovers 0 --reads 0 \
        --no-duplicates --atomic-fetch

exits 1 with replication.electable-has-committed (a committed record missing from an ISR member).
"""

from dataclasses import replace

from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import Replica


def majority_of_isr(leader: Replica, min_isr: int) -> int:
    """The largest offset a majority of the maximal ISR (current plus proposed members) has reached."""
    if len(leader.isr) < min_isr:
        return leader.hw
    members = leader.isr | (leader.pending_isr or frozenset())
    ends = sorted((leader.leo if b == leader.id else (leader.view_of(b) or 0) for b in members), reverse=True)
    majority = len(ends) // 2 + 1
    return max(leader.hw, ends[majority - 1])


proposed = replace(Protocol.current(), name="quorum-high-watermark",
                   description="high watermark over a majority of the maximal ISR (Raft-style)",
                   high_watermark=majority_of_isr)
