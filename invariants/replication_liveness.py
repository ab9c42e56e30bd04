"""Liveness properties of the replication model (model/replication), for `kcheck.model.liveness`.

Each property is "from every reachable state, every fair run eventually reaches a goal state" (the semantics,
and the fairness assumed, are in `kcheck.model.liveness`'s docstring). For this model:

- Fair (weakly fair progress): a follower's fetch and the leader's and follower's handling of it (or the atomic
  `fetch_round`), truncation, high-watermark advance, a leader proposing a caught-up follower (`expand_isr`),
  the controller handling AlterPartition and the leader its answer, a broker applying LeaderAndIsr or
  StopReplica (ZooKeeper mode) or the next batch of the metadata log (KRaft, `apply_metadata`), flushing, a dead
  broker restarting, a live fenced broker being unfenced, a broker in controlled shutdown stopping once it is
  granted, and the controller electing a leader for a leaderless partition. A message delivered as a duplicate
  (`keep`) is not fair.
- Not fair, so finitely often in any run: every fault the budgets bound (crashes, fencing a live broker, ISR
  shrinks, leader moves, controller failovers, zombie writes), clients' produces, reads and ListOffsets,
  operators' reassignments, cancels and controlled shutdowns, and the network's duplicates and drops. Fencing a
  dead broker is the controller noticing missed heartbeats: `LivenessModel` lists it as its own action,
  `notice_failure`, which is fair (fencing a live broker stays a budgeted fault).

Healing the model lacks. The model has no retransmission: in Kafka a lost AlterPartition is retried by
`AlterPartitionManager` after its request timeout, and a KRaft broker reads partition changes from the
metadata log, which loses nothing. With `drop` (an unbudgeted loss of any message) one lost AlterPartition
leaves the leader's proposal pending for ever, and one lost LeaderAndIsr leaves a broker in its old role, so
`LivenessModel` switches drops and duplicates off (crashes still lose the connections' messages, which the
model does heal: a restarted broker reads the current metadata, a crashed leader's proposal dies with it).
`tests/test_liveness.py` shows the lasso a single drop makes, to keep that limitation visible.

Brokers that never return. By default a crashed broker restarts (fairly). `LivenessModel(...,
permanent_crashes=True)` makes crashes crash-stop (no `restart` at all): the fault that reassignments exist to
repair. The controller still notices the failure (`notice_failure`), fences the broker and elects
another leader; `reassignment_ends(permanent_crashes=True)` says what a reassignment may then wait for.

Bounds. `max_leader_epoch` is a bound of the model, not a fault budget: a controller write past it is refused.
`LivenessModel.at_bound` reports a state where that refusal disables an action (it re-runs the actions with the
bound raised by one), and `kcheck.model.liveness` then counts the state as a goal state and reports how many
there were; the configurations here choose the bound so that no reachable state meets it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

from kcheck.invariants.replication import durability_void_fast
from kcheck.invariants.replication_model_adapter import ReplicationModel
from kcheck.model.liveness import LivenessProperty
from kcheck.model.replication.actions import KINDS, Action, Config, apply
from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import NO_LEADER, LeaderAndIsr, State, StopReplica

NOTICE_FAILURE = "notice_failure"  # `fence` of a dead broker: the controller noticing missed heartbeats (fair)
# "apply_metadata": a KRaft broker applying the next batch of the metadata log (its MetadataLoader keeps reading);
# "complete_shutdown": a broker in controlled shutdown stopping once the controller grants it (its heartbeats go on).
FAIR_KINDS = frozenset({
    "fetch", "handle_fetch", "handle_fetch_response", "fetch_round", "truncate", "advance_hw", "expand_isr",
    "handle_alter_partition", "handle_alter_partition_response", "handle_leader_and_isr", "handle_stop_replica",
    "flush", "restart", "unfence", "elect", "apply_metadata", "handle_controlled_shutdown", "complete_shutdown",
})


def fair(a: Action) -> bool:
    """Whether an action is weakly fair progress (the module docstring); a duplicate delivery is not."""
    if a.kind not in FAIR_KINDS:
        return False
    params = KINDS[a.kind].params
    return "keep" not in params or not a.args[params.index("keep")]


class LivenessModel(ReplicationModel):
    """`ReplicationModel` without message loss or duplication (see the module docstring), with `fair` and
    `at_bound` for `kcheck.model.liveness`."""

    def __init__(self, protocol: Protocol, cfg: Config, drops: bool = False, permanent_crashes: bool = False,
                 reassign_targets: Collection[tuple[int, ...]] | None = None) -> None:
        if not drops:
            cfg = replace(cfg, duplicates=False)
        super().__init__(protocol, cfg, only=set(), symmetry=False)
        self.drops = drops
        self.permanent_crashes = permanent_crashes
        self.reassign_targets = None if reassign_targets is None else {tuple(t) for t in reassign_targets}
        self._higher = replace(cfg, max_leader_epoch=cfg.max_leader_epoch + 1)
        self.name = f"replication-liveness({protocol.name})"

    def actions(self, state: State) -> list[Action]:
        out = []
        for a in super().actions(state):
            if (a.kind == "drop" and not self.drops) or (a.kind == "restart" and self.permanent_crashes):
                continue
            if a.kind == "reassign" and self.reassign_targets is not None and a.args[0] not in self.reassign_targets:
                continue
            if a.kind == "fence" and not state.replica(a.args[0]).alive:
                a = Action(NOTICE_FAILURE, a.args)
            out.append(a)
        return out

    def step(self, state: State, action: Action) -> State | None:
        if action.kind == NOTICE_FAILURE:
            if state.replica(action.args[0]).alive:
                return None
            action = Action("fence", action.args)
        return super().step(state, action)

    def describe(self, action: Action) -> str:
        if action.kind == NOTICE_FAILURE:
            return f"{NOTICE_FAILURE} broker={action.args[0]} (the controller fences a dead broker)"
        return super().describe(action)

    def fair(self, a: Action) -> bool:
        return a.kind == NOTICE_FAILURE or fair(a)

    def at_bound(self, s: State) -> bool:
        """An action is refused here only because of `max_leader_epoch` (it applies with the bound one higher)."""
        if s.registry.leader_epoch < self.cfg.max_leader_epoch:
            return False
        for a in self.actions(s):
            if a.kind == NOTICE_FAILURE:
                a = Action("fence", a.args)
            if apply(s, self.protocol, self.cfg, a) is None and apply(s, self.protocol, self._higher, a) is not None:
                return True
        return False


# ---- the properties -----------------------------------------------------------------------------


# Kafka promises nothing of acknowledged records once min.insync.replicas replicas lost unflushed data, or after an
# operator's unclean election: the safety checks' own condition.
_durability_void = durability_void_fast


def acked_on_live_isr(cfg: Config) -> LivenessProperty[State]:
    def goal(s: State) -> bool:
        if _durability_void(s, cfg):
            return True
        for offset, rid in s.history.acked:
            for b in s.registry.isr:
                r = s.replica(b)
                if r.alive and not (offset < r.leo and r.log[offset].id == rid):
                    return False
        return True

    return LivenessProperty("liveness.acked-reaches-isr",
                            "An acknowledged record eventually reaches every live ISR member", goal)


def reassignment_ends(permanent_crashes: bool = False) -> LivenessProperty[State]:
    """With `permanent_crashes` (a crashed broker may never return, `LivenessModel`), a reassignment may wait
    for ever, by design, on a replica that is down: an adding one (it must join the ISR), or, when the move
    shrinks the replica set, any target replica (KAFKA-19975 keeps the ISR from shrinking); only then does the
    goal excuse it (an operator's cancel ends it)."""
    if not permanent_crashes:
        return LivenessProperty("liveness.reassignment-ends", "A reassignment eventually completes or is cancelled",
                                lambda s: not s.registry.reassigning)

    def goal(s: State) -> bool:
        reg = s.registry
        if not reg.reassigning:
            return True
        if any(not s.replica(b).alive for b in reg.adding):
            return True
        return len(reg.adding) < len(reg.removing) and any(not s.replica(b).alive for b in reg.target)

    return LivenessProperty("liveness.reassignment-ends",
                            "A reassignment eventually completes or is cancelled, unless it waits by design on a "
                            "replica that is down", goal)


def leader_when_eligible() -> LivenessProperty[State]:
    def goal(s: State) -> bool:
        reg = s.registry
        if reg.leader != NO_LEADER and s.replica(reg.leader).alive:
            return True
        eligible = (reg.isr | reg.elr) & set(reg.replicas)
        return not any(s.replica(b).alive for b in eligible)

    return LivenessProperty("liveness.leader-elected",
                            "A partition with a live eligible (ISR or ELR) replica eventually has a live leader",
                            goal)


def caught_up_rejoins(cfg: Config) -> LivenessProperty[State]:
    def goal(s: State) -> bool:
        reg = s.registry
        if reg.leader == NO_LEADER:
            return True
        lead = s.replica(reg.leader)
        if not (lead.is_leader and lead.leader_epoch == reg.leader_epoch):
            return True  # no leader acting in the registry's epoch: "caught up" has no reference yet
        for b in reg.replicas:
            r = s.replica(b)
            if b != reg.leader and b not in reg.isr and r.alive and r.log == lead.log:
                return False
        return True

    return LivenessProperty("liveness.isr-rejoin",
                            "A live replica holding the leader's whole log eventually rejoins the ISR", goal)


def properties(cfg: Config, permanent_crashes: bool = False) -> list[LivenessProperty[State]]:
    """Every replication liveness property that applies to `cfg` (reassignment's only when it reassigns), in the
    form that fits the model's crashes (`reassignment_ends`)."""
    out = [acked_on_live_isr(cfg), leader_when_eligible(), caught_up_rejoins(cfg)]
    if cfg.reassignments:
        out.insert(1, reassignment_ends(permanent_crashes))
    return out


# ---- parity with Vanlightly's KIP-966 specification ----------------------------------------------
# Its seven liveness properties are leads-to formulas, P ~> Q. Here a property is "always eventually goal" over
# fair runs; for a trigger P that stays true until Q (or that only faults, finitely many, end) P ~> Q is the same
# as always eventually (not P or Q), which is each goal below. invariants/replication_parity.py maps all seven.

def broker_starts() -> LivenessProperty[State]:
    """EventuallyRuns: a (re)started broker eventually knows the partition state and is unfenced."""
    def goal(s: State) -> bool:
        fenced = s.registry.fenced
        return all(r.known and r.id not in fenced for r in s.replicas if r.alive)

    return LivenessProperty("liveness.broker-starts",
                            "A live broker eventually has applied the partition state and is unfenced", goal)


def brokers_unfenced() -> LivenessProperty[State]:
    """EventuallyUnfenced: every fenced broker (a dead one restarts, fairly) is eventually unfenced."""
    return LivenessProperty("liveness.broker-unfenced", "A fenced broker is eventually unfenced",
                            lambda s: not s.registry.fenced)


def alter_partition_completes() -> LivenessProperty[State]:
    """AlterPartitionEpochEventuallyReachedOrZero: a leader's proposed ISR is eventually committed or dropped."""
    return LivenessProperty("liveness.alter-partition-completes",
                            "An AlterPartition in flight is eventually answered and applied or given up",
                            lambda s: all(r.pending_isr is None for r in s.replicas if r.alive))


def metadata_converges() -> LivenessProperty[State]:
    """EventuallyMetadataConverges: every live broker eventually holds the controller's partition state: it applied
    the whole metadata log (KRaft; in ZooKeeper mode no LeaderAndIsr or StopReplica is still travelling to it), and
    a live replica believes the controller's leader and leader epoch (`kraft.belief-matches-registry` checks the
    rest of a KRaft broker's belief as a safety property)."""
    def goal(s: State) -> bool:
        reg = s.registry
        if s.metadata:
            last = len(s.metadata) - 1
            if not all(r.known and r.applied == last for r in s.replicas if r.alive):
                return False
        elif any(isinstance(m, LeaderAndIsr | StopReplica) and s.replica(m.to).alive for m in s.pool):
            return False
        return all(r.known and (r.leader, r.leader_epoch) == (reg.leader, reg.leader_epoch)
                   for r in s.replicas if r.alive and r.id in reg.replicas)

    return LivenessProperty("liveness.metadata-converges",
                            "Every live broker eventually holds the controller's partition state", goal)


def write_answered() -> LivenessProperty[State]:
    """EventuallyWriteIsAcceptedOrRejected for acks=all writes: the model answers one when its leader's high
    watermark passes it (`advance_hw`: a success, or NOT_ENOUGH_REPLICAS_AFTER_APPEND per the ack rule). Kafka also
    answers it with an error once that broker no longer leads in the epoch the record was appended in (the delayed
    produce fails with NOT_LEADER_OR_FOLLOWER, or its connection dies with the broker); the model keeps those as
    pending, so the goal counts them answered. What is left: a live leader of the record's epoch holding it,
    whose high watermark never reaches it."""
    def goal(s: State) -> bool:
        for b, offset, rid in s.history.pending_acks:
            r = s.replica(b)
            if r.is_leader and offset < r.leo and r.log[offset].id == rid and r.leader_epoch == r.log[offset].epoch:
                return False
        return True

    return LivenessProperty("liveness.write-answered",
                            "An acks=all write is eventually answered (acknowledged or refused)", goal)


def acked_fully_replicated(cfg: Config) -> LivenessProperty[State]:
    """EventuallyAcknowledgedValueFullyReplicated: every acknowledged record eventually sits, at its offset, on
    every replica of the replica set (dead or alive: a dead broker restarts fairly), unless durability is void."""
    def goal(s: State) -> bool:
        if _durability_void(s, cfg):
            return True
        for offset, rid in s.history.acked:
            for b in s.registry.replicas:
                log = s.replica(b).log
                if offset >= len(log) or log[offset].id != rid:
                    return False
        return True

    return LivenessProperty("liveness.acked-fully-replicated",
                            "An acknowledged record eventually reaches every replica of the replica set", goal)


def parity_properties(cfg: Config) -> list[LivenessProperty[State]]:
    """The KIP-966 specification's seven liveness properties in this model (its reassignment one is
    `reassignment_ends`, which applies only when the configuration reassigns)."""
    out = [broker_starts(), brokers_unfenced(), alter_partition_completes(), metadata_converges(), write_answered(),
           acked_fully_replicated(cfg)]
    if cfg.reassignments:
        out.append(reassignment_ends())
    return out


PARITY_PROPERTY_IDS = ("liveness.broker-starts", "liveness.broker-unfenced", "liveness.alter-partition-completes",
                       "liveness.metadata-converges", "liveness.write-answered", "liveness.acked-fully-replicated",
                       "liveness.reassignment-ends")


# Every property id, in the order `properties` lists them (for `kcheck liveness --property`).
PROPERTY_IDS = ("liveness.acked-reaches-isr", "liveness.reassignment-ends", "liveness.leader-elected",
                "liveness.isr-rejoin")


@dataclass(frozen=True)
class LivenessSetting:
    """How a liveness row's `LivenessModel` is built beyond its Config (`LIVENESS_VARIANTS` settings): crash-stop
    brokers, and the reassignment targets the operator may ask for (None: every target list)."""

    permanent_crashes: bool = False
    reassign_targets: tuple[tuple[int, ...], ...] | None = None


# The model each liveness row needs besides its Config (model/replication/protocol.py: LIVENESS_VARIANTS). KAFKA-19975:
# a broker that never returns (a restart would unblock the move), and a move that keeps a replica that then
# crashes: [1,2] -> [1,2,3] adds 3 and keeps 2 ([1,3] is the move that swaps one replica for another).
LIVENESS_SETTINGS: dict[str, LivenessSetting] = {
    "blocked-reassignment-completion": LivenessSetting(True, ((1, 2, 3), (1, 3))),
}


__all__ = ["FAIR_KINDS", "LIVENESS_SETTINGS", "PARITY_PROPERTY_IDS", "PROPERTY_IDS", "LivenessModel", "LivenessSetting",
           "acked_fully_replicated", "acked_on_live_isr", "alter_partition_completes", "broker_starts",
           "brokers_unfenced", "caught_up_rejoins", "fair", "leader_when_eligible", "metadata_converges",
           "parity_properties", "properties", "reassignment_ends", "write_answered"]
