"""A property: the leader's high watermark never passes an ISR member's log end."""
from kcheck.invariants.registry import Severity, Violation, register


@register("user.hw-within-isr", "The high watermark is within every live ISR member's log",
          Severity.HARD, "our design review", "replication")
def hw_within_isr(s):
    reg = s.state.registry
    if reg.leader < 1:
        return []
    leader = s.state.replica(reg.leader)
    return [Violation("user.hw-within-isr", Severity.HARD, f"broker {b}",
                      f"the high watermark {leader.hw} is past broker {b}'s log end {s.state.replica(b).leo}")
            for b in sorted(reg.isr) if s.state.replica(b).alive and s.state.replica(b).leo < leader.hw]
