"""A proposed ListOffsets answer: a leader answers LATEST with its high watermark at once, even just elected.

Proposal: "OFFSET_NOT_AVAILABLE right after an election only makes clients retry: answer ListOffsets LATEST with
the leader's high watermark as soon as it leads (`Partition.fetchOffsetForTimestamp`)."

Claim: within these bounds (two brokers, min.insync.replicas 1, one record, one leader move, two ListOffsets
calls) `kcheck exhaust` finds a client that sees the latest offset go back: the new leader's high watermark lags
behind the one the old leader exposed until its follower fetches again (KAFKA-2334, the reason for KIP-207).

    cd examples/protocols
    python -m kcheck exhaust --protocol latest_from_high_watermark:proposed --brokers 2 --min-isr 1 \
        --records 1 --crashes 0 --lossy-crashes 0 --fences 0 --elections 1 --isr-shrinks 0 --failovers 0 \
        --reads 0 --list-offsets 2 --no-duplicates --atomic-fetch

exits 1 with client.list-offsets-monotonic.
"""

from dataclasses import replace

from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import Replica


def high_watermark_at_once(leader: Replica) -> int | None:
    """The leader's high watermark, never OFFSET_NOT_AVAILABLE."""
    return leader.hw


proposed = replace(Protocol.current(), name="latest-from-high-watermark",
                   description="ListOffsets LATEST answered with the high watermark even while it lags",
                   list_offsets_latest=high_watermark_at_once)
