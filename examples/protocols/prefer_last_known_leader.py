"""A proposed leader choice: with the ISR empty, elect the last known leader before any ELR member.

Proposal: "when the ISR is empty, the broker that led last is the one most likely to hold every
committed record, so elect it (if it is unfenced) before the eligible leader replicas of KIP-966,
not only when the ELR is empty too."

The last known leader is remembered when the partition loses its leader, but a lossy shutdown can have
cost it records since: KIP-966 takes it only as a last resort (an unclean, RECOVERING election). Claim:
`kcheck exhaust` finds a violation within these bounds:

    cd examples/protocols
    python -m kcheck exhaust --protocol prefer_last_known_leader:proposed --brokers 2 --min-isr 2 \
        --records 1 --crashes 0 --lossy-crashes 1 --fences 1 --elections 0 --isr-shrinks 0 --failovers 0 \
        --reads 0 --no-duplicates --atomic-fetch

exits 1 with replication.electable-has-committed (the last known leader lost the committed record).
"""

from dataclasses import replace

from kcheck.model.replication.protocol import Choice, Protocol, clean_or_eligible
from kcheck.model.replication.state import NO_LEADER, Registry


def last_known_leader_first(registry: Registry, brokers: int) -> Choice | None:
    """An unfenced ISR member; else the unfenced last known leader; else today's choice (ELR, ...)."""
    for b in registry.replicas:
        if b in registry.isr and b not in registry.fenced:
            return b, registry.isr, registry.elr
    last = registry.last_known_leader
    if last != NO_LEADER and last in registry.replicas and last not in registry.fenced:
        return last, frozenset({last}), registry.elr - {last}
    return clean_or_eligible(registry, brokers)


proposed = replace(Protocol.current(), name="prefer-last-known-leader",
                   description="with the ISR empty, the last known leader before the ELR",
                   leader_choice=last_known_leader_first)
