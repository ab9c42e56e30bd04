"""The bug catalogue's rows as scripted scenarios: each row's own minimal event sequence, written out
by hand from each row's JIRA or KIP in this model's steps.

`run_script` plays (action kind, what to match) steps from the initial state; a step names its
action by kind and the fields that pick it out (a broker, a message's recipient and offset). Under
the row's historical protocol the sequence must end in a violation of the row's property; under
`Protocol.current()` it must either stop being possible (the protocol refuses a step) or break
nothing. Tests and `kcheck check` play every row both ways.
"""

from __future__ import annotations

from typing import Any

from kcheck.invariants.replication import check_replication
from kcheck.model.replication.actions import KINDS, Action, Config, enabled, initial_state
from kcheck.model.replication.protocol import VARIANTS, Protocol
from kcheck.model.replication.state import State

Script = list[tuple[str, dict[str, Any]]]


def matches(action: Action, want: dict[str, Any]) -> bool:
    """Does `action` fit a script step's description (its parameters, or the fields of its message)?"""
    params = dict(zip(KINDS[action.kind].params, action.args, strict=True))
    if params.get("keep"):
        return False  # scripts never duplicate a message
    for key, value in want.items():
        if "message" in params and key not in params:
            if getattr(params["message"], key) != value:
                return False
        elif params.get(key) != value:
            return False
    return True


def run_script(protocol: Protocol, cfg: Config, script: Script) -> tuple[int, list[str], State]:
    """Play (kind, what) steps; stops at the first violation or at the first step the protocol does not
    allow. Returns (steps played, invariants violated after the last one, last state)."""
    s = initial_state(cfg)
    for n, (kind, want) in enumerate(script, 1):
        options = [(a, after) for a, after in enabled(s, protocol, cfg, kind) if matches(a, want)]
        if not options:
            return n - 1, [], s
        if len(options) > 1:
            raise ValueError(f"step {n} ({kind} {want}) matches {len(options)} actions: name it more precisely")
        s = options[0][1]  # the state after the step, as enabled() computed it
        violated = sorted({v.invariant for v in check_replication(s, cfg).hard_violations})
        if violated:
            return n, violated, s
    return len(script), [], s


def cfg_for(name: str) -> Config:
    """The row's setting: the variant's cluster and budgets."""
    return Config(**VARIANTS[name].settings)


def fetch_round(follower: int, offset: int, respond: bool = True) -> Script:
    steps = [("fetch", {"follower": follower}), ("handle_fetch", {"frm": follower, "offset": offset})]
    if respond:
        steps.append(("handle_fetch_response", {"to": follower, "offset": offset}))
    return steps


# Row 1 (KIP-101 scenario 1), leader B = broker 1, follower A = broker 2.
ROW_1: Script = [
    ("produce", {"broker": 1, "acks": "all"}),  # B appends x0
    *fetch_round(2, 0),  # A fetches x0; the response carries HW 0
    *fetch_round(2, 1, respond=False),  # A fetches again: B learns A has offset 0 ...
    ("advance_hw", {"broker": 1}),  # ... so B's HW becomes 1: x0 committed and acked
    ("crash", {"broker": 2, "lossy": False}),  # A restarts before it hears HW 1
    ("restart", {"broker": 2}),
    ("truncate", {"follower": 2}),  # A truncates to its own HW 0: x0 is gone from an ISR member
]

# Row 2 (KIP-101 scenario 2), leader A = broker 1, follower B = broker 2.
ROW_2: Script = [
    ("produce", {"broker": 1, "acks": "all"}),  # m1
    *fetch_round(2, 0),
    ("flush", {"broker": 2}),  # B has flushed m1 only
    ("produce", {"broker": 1, "acks": "all"}),  # m2
    *fetch_round(2, 1),
    *fetch_round(2, 2, respond=False),
    ("advance_hw", {"broker": 1}),  # HW 2 on A
    ("crash", {"broker": 1, "lossy": False}),  # power failure: A keeps m1, m2
    ("crash", {"broker": 2, "lossy": True}),  # B loses the unflushed m2
    ("fence", {"broker": 1}),  # the controller elects B (e2)
    ("restart", {"broker": 2}),  # B comes back first, as the leader
    ("produce", {"broker": 2, "acks": "all"}),  # m3 at offset 1
    ("advance_hw", {"broker": 2}),
    ("restart", {"broker": 1}),  # A becomes a follower ...
    ("truncate", {"follower": 1}),  # ... and truncates to its own HW 2, keeping m2 where B has m3
]

# Row 3 (KIP-279): A = broker 1 leads epoch 1, B = broker 2.
ROW_3: Script = [
    ("produce", {"broker": 1, "acks": "all"}),  # x0/1
    *fetch_round(2, 0, respond=False),
    ("produce", {"broker": 1, "acks": "all"}),  # x1/1
    ("handle_fetch_response", {"to": 2, "offset": 0}),  # B replicates x0 only
    ("move_leader", {"target": 2}),  # e2 L=B; A does not hear of it
    ("handle_leader_and_isr", {"to": 2, "leader_epoch": 2}),
    ("produce", {"broker": 2, "acks": "all"}),  # y1/2
    ("move_leader", {"target": 1}),  # e3 L=A
    ("handle_leader_and_isr", {"to": 1, "leader_epoch": 3}),  # A goes from e1 straight to leading e3
    ("produce", {"broker": 1, "acks": "all"}),  # z2/3
    ("handle_leader_and_isr", {"to": 2, "leader_epoch": 3}),
    ("truncate", {"follower": 2}),  # one-shot lookup of epoch 2 answers 2 = B's LEO: nothing truncated
    *fetch_round(2, 2),  # B copies z2
    *fetch_round(2, 3, respond=False),
    ("advance_hw", {"broker": 1}),  # HW 3: offset 1 committed, x1 on A and y1 on B
]

# Row 4 (KIP-320): e1 L=1 ISR{1,2,3}; broker 2 becomes a zombie follower that hears of no later epoch.
ROW_4: Script = [
    ("produce", {"broker": 1, "acks": "all"}),  # x0
    *fetch_round(3, 0),  # 3 has [x0]
    ("produce", {"broker": 1, "acks": "all"}),  # x1
    *fetch_round(2, 0),  # 2 has [x0, x1]
    ("shrink_isr", {"leader": 1, "follower": 2}),  # 2 loses its session: out of the ISR
    ("handle_alter_partition", {"frm": 1}),
    ("handle_alter_partition_response", {"to": 1}),  # answered: 1 may propose again (one AlterPartition at a time)
    ("move_leader", {"target": 3}),  # e2 L=3 ISR{1,3}; 2 never hears of it
    ("handle_leader_and_isr", {"to": 3, "leader_epoch": 2}),
    ("handle_leader_and_isr", {"to": 1, "leader_epoch": 2}),
    ("truncate", {"follower": 1}),  # 1 truncates to 3's end of epoch 1: [x0]
    ("produce", {"broker": 3, "acks": "all"}),  # y1 at offset 1
    *fetch_round(1, 1),  # 1 has [x0, y1]
    *fetch_round(1, 2, respond=False),
    ("advance_hw", {"broker": 3}),  # y1 committed
    ("move_leader", {"target": 1}),  # e3 L=1
    ("handle_leader_and_isr", {"to": 1, "leader_epoch": 3}),
    # zombie 2, still on epoch 1, fetches from 1 at its own LEO 2; 2 looks caught up to the HW, so the leader proposes
    # it for the ISR right after recording the fetch (`updateFollowerFetchState` -> `maybeExpandIsr`)
    *fetch_round(2, 2, respond=False),
    ("handle_alter_partition", {"frm": 1}),  # 2 is in the ISR with x1 where y1 is committed
]

# Row 6 (KIP-497's rejected design): e1 L=A ISR{A}, B caught up with an empty log.
ROW_6: Script = [
    *fetch_round(2, 0, respond=False),  # recorded, and AlterIsr {A,B} in flight (proposed right after the fetch)
    ("produce", {"broker": 1, "acks": "all"}),  # x0
    ("advance_hw", {"broker": 1}),  # HW over the committed ISR {A}: acked
    ("handle_alter_partition", {"frm": 1}),  # the controller commits {A,B}: B lacks x0
]

# Row 8 (Jepsen 2013): the ISR shrinks to the leader, which acks alone and dies.
ROW_8: Script = [
    ("produce", {"broker": 1, "acks": "all"}),
    ("shrink_isr", {"leader": 1, "follower": 2}),
    ("handle_alter_partition", {"frm": 1}),
    ("handle_alter_partition_response", {"to": 1}),
    ("advance_hw", {"broker": 1}),  # w1 acked by the ISR {A}
    ("crash", {"broker": 1, "lossy": False}),
    ("fence", {"broker": 1}),  # no ISR member left: B is elected anyway
]

# Row 9 (KIP-966 last replica standing), RF 2, min.insync.replicas 2.
ROW_9: Script = [
    ("produce", {"broker": 1, "acks": "all"}),  # x0
    ("flush", {"broker": 1}),
    ("produce", {"broker": 1, "acks": "all"}),  # x1, never flushed on A
    *fetch_round(2, 0),
    *fetch_round(2, 2, respond=False),
    ("advance_hw", {"broker": 1}),  # HW 2, both acked
    ("fence", {"broker": 2}),  # B cut off: ISR {A}
    ("crash", {"broker": 1, "lossy": True}),  # A loses x1
    ("fence", {"broker": 1}),  # A stays the last ISR member, no leader
    ("restart", {"broker": 1}),  # A is electable again, without x1
]

# Row 13 (KAFKA-6082): a zombie controller writes after the new one.
ROW_13: Script = [
    ("failover", {}),
    ("move_leader", {"target": 2}),
    ("zombie_move_leader", {"zombie": 0, "target": 2}),
]

# Row 14 (KAFKA-2334, KIP-207), KRaft: leader A = broker 1, B = broker 2, min.insync.replicas 1.
ROW_14: Script = [
    ("produce", {"broker": 1, "acks": "all"}),  # x0
    *fetch_round(2, 0),  # B has x0, its high watermark still 0
    *fetch_round(2, 1, respond=False),  # A learns B has offset 0 ...
    ("advance_hw", {"broker": 1}),  # ... and its high watermark becomes 1
    ("list_offsets", {"broker": 1, "spec": "latest"}),  # a client is told LATEST = 1
    ("move_leader", {"target": 2}),  # epoch 2 L=B: one metadata batch
    ("apply_metadata", {"broker": 2}),  # B leads from its log end 1, with high watermark 0
    ("list_offsets", {"broker": 2, "spec": "latest"}),  # before KIP-207: LATEST = 0; since: OFFSET_NOT_AVAILABLE
]

# Row 15 (KAFKA-7235, KIP-380), ZooKeeper mode: leader 1 = A, follower 2 = B, min.insync.replicas 1.
ROW_15: Script = [
    ("produce", {"broker": 1, "acks": "all"}),  # x1 on A, never flushed
    *fetch_round(2, 0),  # B has x1
    ("shrink_isr", {"leader": 1, "follower": 2}),
    ("handle_alter_partition", {"frm": 1}),  # ISR {A}: a LeaderAndIsr to A queued for its current incarnation
    ("crash", {"broker": 1, "lossy": True}),  # A loses x1; the controller's queue keeps the request
    ("restart", {"broker": 1}),  # the bounce is seen: A leaves the ISR, the partition has no leader
    ("handle_leader_and_isr", {"to": 1, "leader_epoch": 1}),  # the request for the old A: A leads epoch 1 again
    ("produce", {"broker": 1, "acks": "all"}),  # y2 at offset 0, where B has x1
    ("advance_hw", {"broker": 1}),  # the ISR {A} of the stale request: high watermark 1
    *fetch_round(2, 1),  # B takes high watermark 1 with x1 below it
]

# Row 16 (KAFKA-7235, KIP-380), ZooKeeper mode: leader 1, follower 2 asks to shut down and bounces before the
# controller reads its request.
ROW_16: Script = [
    ("controlled_shutdown", {"broker": 2}),  # ControlledShutdownRequest from broker epoch 1
    ("crash", {"broker": 2, "lossy": False}),  # gone before the controller read it; the bytes are on the wire
    ("restart", {"broker": 2}),  # broker epoch 2, back before the controller noticed
    ("handle_controlled_shutdown", {"frm": 2}),  # the old request: the new process is put in controlled shutdown
]

# variant -> (the row's sequence, the invariant its last step breaks under the variant)
ROW_SCRIPTS: dict[str, tuple[Script, str]] = {name: (script, expected) for name, script, expected in [
    ("truncate-to-hw", ROW_1, "replication.electable-has-committed"),
    ("truncate-to-hw-lossy", ROW_2, "replication.log-matching"),
    ("one-shot-epoch-lookup", ROW_3, "replication.electable-has-committed"),
    ("no-epoch-in-fetch", ROW_4, "replication.electable-has-committed"),
    ("hw-over-committed-isr", ROW_6, "replication.electable-has-committed"),
    ("unclean-election", ROW_8, "replication.leader-has-acked"),
    ("last-replica-standing", ROW_9, "replication.electable-has-committed"),
    ("zombie-controller", ROW_13, "replication.epochs-monotonic"),
    ("lagging-hw-list-offsets", ROW_14, "client.list-offsets-monotonic"),
    ("stale-control-request", ROW_15, "replication.log-matching"),
    ("stale-controlled-shutdown", ROW_16, "replication.shutdown-asked"),
]}




def play_row(name: str) -> tuple[tuple[int, list[str]], tuple[int, list[str]], int]:
    """Play the row of variant `name` under the variant and under today's protocol:
    ((steps played, violated) historical, (steps played, violated) current, script length)."""
    script, _ = ROW_SCRIPTS[name]
    cfg = cfg_for(name)
    old = run_script(VARIANTS[name].protocol, cfg, script)
    now = run_script(Protocol.current(), cfg, script)
    return (old[0], old[1]), (now[0], now[1]), len(script)
