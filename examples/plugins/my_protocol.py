"""A protocol change: the leader commits what a majority of the ISR has, as a Raft leader does."""
from dataclasses import replace

from kcheck.model.replication.protocol import Protocol


def majority_of_isr(leader, min_isr):
    if len(leader.isr) < min_isr:
        return leader.hw
    ends = sorted((leader.leo if b == leader.id else leader.view_of(b) or 0 for b in leader.isr), reverse=True)
    return max(leader.hw, ends[len(ends) // 2])


proposed = replace(Protocol.current(), name="majority-hw", high_watermark=majority_of_isr)
