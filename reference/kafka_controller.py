"""The KRaft controller's partition changes, run by Kafka's own `PartitionChangeBuilder` beside ours.

Kafka's side is `metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java`
with `metadata/.../metadata/PartitionRegistration.java` (the registration, and `merge` applying the
record), run through the bridge (`kafka_bridge`, handler `reference/harness/KcheckPartitionChange.java`).
Ours is `reference.election.PartitionChangeBuilder` with the release's `KRaftVersion`.

A `PartitionChange` is one builder run: a registration (our `election.PartitionRegistration`), the
LeaderAcceptor as the set of acceptable brokers, the election type, the targets the controller sets,
min.insync.replicas, ELR on or off, the last-known-leader switch and a metadata version. The answer is
a `ChangeResult`: the record (None when `build()` returned empty) and the registration after it.

    kafka = shared_bridge("4.4.0")
    results = run_changes(kafka, changes)            # one round trip for the whole batch
    ours = [reference_change(c, "4.4.0") for c in changes]

Request word (see the Java class comment for the exact grammar):

    PC mv elr lkl minIsr election acceptable  replicas isr removing adding elr lastKnownElr leader lrs
       leaderEpoch partitionEpoch  targetIsr targetReplicas targetRemoving targetAdding targetLrs unclean
    -> OK built recLeader recIsr recElr recLke recReplicas recRemoving recAdding recLrs
          leader leaderEpoch partitionEpoch isr elr lastKnownElr replicas removing adding lrs

An int list is '1,2' ('~' empty, '-' for "not set"); lrs 0 RECOVERED, 1 RECOVERING (-1: no change).

The second half drives Kafka's KRaft controller itself: `ClusterControlManager`, `ReplicationControlManager`,
`BrokerHeartbeatManager` (metadata/src/main/java/org/apache/kafka/controller/), for one topic with one partition,
through handler `reference/harness/KcheckController.java`. A `Script` is a list of controller calls on a fresh
controller (broker registrations, heartbeats, session expiries, topic creation, AlterPartition, elections); the
answer is one `Step` per call: its result and the partition and broker registrations after it. Each call the
replication model also makes is then run by the model on the state Kafka held (`compare_lifecycle`):

    steps = run_scripts(kafka, [life.script for life in lives])     # one round trip
    counts, diffs = compare_lifecycle(life, steps_of_life, Protocol.current())

Request word (grammar in the Java class comment):

    KC elr minIsr unclean op op ...      ops: r:B:INC:PREV  h:B:F:S:OFF  x:B  t:R  a:B:E:LE:PE:ISR:EP  e:P|U
    -> OK result/partition/brokers ...   (one token per op)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kcheck.model.replication import protocol as rules
from kcheck.model.replication.actions import (
    Action,
    Config,
    controlled_shutdown,
    fence,
    handle_alter_partition,
    handle_controlled_shutdown,
    initial_state,
)
from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.reassignment import reassignment_plan
from kcheck.model.replication.state import (
    NO_LEADER,
    AlterPartition,
    AlterPartitionResponse,
    ControlledShutdown,
    Registry,
    State,
    evolve,
)
from kcheck.reference import releases
from kcheck.reference.election import (
    Election,
    KRaftVersion,
    LeaderRecoveryState,
    PartitionChangeBuilder,
    PartitionChangeRecord,
    PartitionRegistration,
)
from kcheck.reference.kafka_bridge import JavaException, KafkaBridge, encode_ints, parse_error

__all__ = [
    "BrokerView",
    "ChangeResult",
    "Difference",
    "Lifecycle",
    "PartitionChange",
    "PartitionView",
    "Script",
    "Step",
    "compare_lifecycle",
    "model_alter_partition",
    "model_controlled_shutdown",
    "model_fence",
    "model_registry",
    "op_alter",
    "op_elect",
    "op_expire",
    "op_heartbeat",
    "op_register",
    "op_topic",
    "random_lifecycle",
    "resolve_alter",
    "run_scripts",
    "encode_change",
    "kraft_version",
    "parse_change",
    "random_change",
    "reference_change",
    "run_change",
    "run_changes",
]

WORD = "PC"
_ELECTION = {Election.PREFERRED: "P", Election.ONLINE: "O", Election.UNCLEAN: "U"}
# metadata.version strings whose rules our KRaftVersion has (older than 3.6-IV0: an ISR shrink bumps the
# leader epoch, KAFKA-15021). 3.3-IV3 is the oldest a 4.x controller runs.
_EPOCH_BUMP_ON_SHRINK = ("3.3-IV3", "3.4-IV0", "3.5-IV0", "3.5-IV1", "3.5-IV2")


@dataclass(frozen=True)
class PartitionChange:
    """One `PartitionChangeBuilder` run. A target left None keeps the builder's default (the registration's)."""

    partition: PartitionRegistration
    acceptable: frozenset[int]
    election: Election = Election.ONLINE
    min_isr: int = 1
    elr: bool = False  # eligible.leader.replicas.version enabled
    use_last_known_leader: bool = True  # Kafka's default; the controller never changes it
    metadata_version: str | None = None  # e.g. "3.5-IV2"; None: the release's latest production version
    target_isr: tuple[int, ...] | None = None
    target_replicas: tuple[int, ...] | None = None
    target_removing: tuple[int, ...] | None = None
    target_adding: tuple[int, ...] | None = None
    target_leader_recovery_state: LeaderRecoveryState | None = None
    unclean_shutdown_replicas: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "acceptable", frozenset(self.acceptable))
        for name in ("target_isr", "target_replicas", "target_removing", "target_adding", "unclean_shutdown_replicas"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(value))


@dataclass(frozen=True)
class ChangeResult:
    """What `build()` returned (None: no change) and the registration after `merge`."""

    record: PartitionChangeRecord | None
    after: PartitionRegistration

    @property
    def built(self) -> bool:
        return self.record is not None


def _opt(xs: Sequence[int] | None) -> str:
    return "-" if xs is None else encode_ints(xs)


def encode_change(c: PartitionChange) -> str:
    p = c.partition
    head = (f"{WORD} {c.metadata_version or '-'} {int(c.elr)} {int(c.use_last_known_leader)} {c.min_isr} "
            f"{_ELECTION[c.election]} {encode_ints(sorted(c.acceptable))}")
    reg = (f"{encode_ints(p.replicas)} {encode_ints(p.isr)} {encode_ints(p.removing_replicas)} "
           f"{encode_ints(p.adding_replicas)} {encode_ints(p.elr)} {encode_ints(p.last_known_elr)} {p.leader} "
           f"{int(p.leader_recovery_state)} {p.leader_epoch} {p.partition_epoch}")
    lrs = "-" if c.target_leader_recovery_state is None else str(int(c.target_leader_recovery_state))
    targets = (f"{_opt(c.target_isr)} {_opt(c.target_replicas)} {_opt(c.target_removing)} {_opt(c.target_adding)} "
               f"{lrs} {_opt(c.unclean_shutdown_replicas)}")
    return f"{head} {reg} {targets}"


def _ints(tok: str) -> tuple[int, ...] | None:
    if tok == "-":
        return None
    if tok == "~":
        return ()
    return tuple(int(x) for x in tok.split(","))


def _list(tok: str) -> tuple[int, ...]:
    out = _ints(tok)
    if out is None:
        raise ValueError("a registration list is never '-'")
    return out


def parse_change(line: str) -> ChangeResult | JavaException:
    if line.startswith("ERR "):
        return parse_error(line)
    t = line.split(" ")
    if len(t) != 20 or t[0] != "OK":
        raise ValueError(f"not a PC answer: {line!r}")
    record = None
    if t[1] == "1":
        lrs = int(t[9])
        record = PartitionChangeRecord(
            leader=int(t[2]), isr=_ints(t[3]), elr=_ints(t[4]), last_known_elr=_ints(t[5]), replicas=_ints(t[6]),
            removing_replicas=_ints(t[7]), adding_replicas=_ints(t[8]),
            leader_recovery_state=None if lrs < 0 else LeaderRecoveryState(lrs))
    after = PartitionRegistration(
        replicas=_list(t[16]), isr=_list(t[13]), leader=int(t[10]), leader_epoch=int(t[11]),
        partition_epoch=int(t[12]), removing_replicas=_list(t[17]), adding_replicas=_list(t[18]),
        leader_recovery_state=LeaderRecoveryState(int(t[19])), elr=_list(t[14]), last_known_elr=_list(t[15]))
    return ChangeResult(record, after)


def run_changes(bridge: KafkaBridge, changes: Iterable[PartitionChange]) -> list[ChangeResult | JavaException]:
    """Kafka's answer to each change, in one batch (a Kafka exception in place of its result)."""
    bridge.require(WORD, "PartitionChangeBuilder")
    return [parse_change(a) for a in bridge.roundtrip([encode_change(c) for c in changes])]


def run_change(bridge: KafkaBridge, change: PartitionChange) -> ChangeResult:
    (out,) = run_changes(bridge, [change])
    if isinstance(out, JavaException):
        raise out
    return out


def kraft_version(change: PartitionChange, kafka_version: str = "4.4.0") -> KRaftVersion:
    """Our rules for this change on this release: the release's, with the change's ELR and metadata version."""
    return releases.profile(kafka_version).kraft_rules(
        eligible_leader_replicas=change.elr,
        use_last_known_leader_in_balanced_recovery=change.use_last_known_leader,
        leader_epoch_bump_on_isr_shrink=change.metadata_version in _EPOCH_BUMP_ON_SHRINK)


def reference_change(change: PartitionChange, kafka_version: str = "4.4.0") -> ChangeResult:
    """Our reference's answer to the same change (exceptions propagate)."""
    b = PartitionChangeBuilder(change.partition, change.acceptable, kraft_version(change, kafka_version),
                               change.min_isr).set_election(change.election)
    if change.target_isr is not None:
        b.set_target_isr(change.target_isr)
    if change.target_replicas is not None:
        b.set_target_replicas(change.target_replicas)
    if change.target_removing is not None:
        b.set_target_removing(change.target_removing)
    if change.target_adding is not None:
        b.set_target_adding(change.target_adding)
    if change.target_leader_recovery_state is not None:
        b.set_target_leader_recovery_state(change.target_leader_recovery_state)
    if change.unclean_shutdown_replicas is not None:
        b.set_unclean_shutdown_replicas(change.unclean_shutdown_replicas)
    record = b.build()
    return ChangeResult(record, change.partition if record is None else change.partition.merge(record))



def random_change(rng: random.Random, max_brokers: int = 6) -> PartitionChange:
    """A random registration and change, for differential runs (tests, bench): mostly the shapes the
    controller makes (ISR within the replicas, ELR apart from the ISR, reassignment lists within the
    replica set), sometimes not, over every election, ELR, last-known-leader and min ISR setting."""
    n = rng.randint(1, max_brokers)
    brokers = list(range(1, n + 1))
    replicas = rng.sample(brokers, rng.randint(1, n))

    def some(pool: Sequence[int], k: int | None = None) -> tuple[int, ...]:
        return tuple(rng.sample(list(pool), rng.randint(0, len(pool)) if k is None else min(k, len(pool))))

    odd = rng.random() < 0.1  # outside what the controller writes
    isr = some(brokers if odd else replicas)
    rest = [b for b in (brokers if odd else replicas) if b not in isr]
    elr = some(rest) if rng.random() < 0.6 else ()
    lke: tuple[int, ...] = ()
    if rng.random() < 0.4:
        lke = some([b for b in rest if b not in elr], 1) if rng.random() < 0.5 else some(rest)
    leader = rng.choice([*isr, *isr, -1, rng.choice(brokers)]) if isr else rng.choice([-1, -1, rng.choice(brokers)])
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    if rng.random() < 0.3 and len(replicas) > 1:
        cut = rng.randint(0, len(replicas))
        adding, removing = tuple(sorted(replicas[:cut])), tuple(sorted(replicas[cut:]))
        if rng.random() < 0.3:
            adding, removing = some(replicas), some(replicas)
    part = PartitionRegistration(
        tuple(replicas), isr, leader, rng.randint(0, 5), rng.randint(0, 9), removing, adding,
        LeaderRecoveryState(int(rng.random() < 0.15)), elr, lke)
    target_isr = target_replicas = target_removing = target_adding = None
    kind = rng.random()
    if kind < 0.45:
        target_isr = some(brokers if odd else replicas)
    elif kind < 0.75:  # a reassignment request: target replicas then the ones leaving
        target = rng.sample(brokers, rng.randint(1, n))
        gone = sorted(set(replicas) - set(target))
        target_replicas = (*target, *gone)
        target_adding = tuple(sorted(set(target) - set(replicas)))
        target_removing = tuple(gone)
        if rng.random() < 0.3:
            target_isr = some(brokers)
    elif kind < 0.85:  # a cancel
        target_replicas = tuple(b for b in replicas if b not in adding) or tuple(replicas)
        target_isr = tuple(b for b in isr if b not in adding)
        target_adding = target_removing = ()
    acceptable = frozenset(b for b in brokers if rng.random() < 0.7)
    return PartitionChange(
        part, acceptable, rng.choice(list(Election)), min_isr=rng.randint(1, 3), elr=rng.random() < 0.7,
        use_last_known_leader=rng.random() < 0.8, metadata_version=rng.choice([None, None, None, "3.5-IV2", "3.6-IV0"]),
        target_isr=target_isr, target_replicas=target_replicas, target_removing=target_removing,
        target_adding=target_adding,
        target_leader_recovery_state=LeaderRecoveryState(rng.randint(0, 1)) if rng.random() < 0.15 else None,
        unclean_shutdown_replicas=some(brokers, 1) if rng.random() < 0.2 else None)


# ---- the replication model's controller steps ------------------------------------------------------
# Every step of `model.replication` that writes the controller's registry is one PartitionChangeBuilder
# run in Kafka's ReplicationControlManager; `model_step_change` names that run, so the model's write can be
# compared with Kafka's. The model keeps no leader recovery state: `Carried` threads it along a trace from
# our reference's answers (which are compared with Kafka's at every step).


@dataclass(frozen=True)
class Carried:
    """What Kafka's registration holds and the model's does not."""

    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED


@dataclass(frozen=True)
class ModelStep:
    """A model step as a builder run: `change`, and what the model wrote (None: the model wrote nothing)."""

    kind: str  # the model action, and for move_leader how it is driven ("move_leader/preferred")
    change: PartitionChange
    model_after: Registry | None


def registration(reg: Registry, carried: Carried = Carried()) -> PartitionRegistration:
    """The model's registry as Kafka's PartitionRegistration (ISR and ELR, sets in the model, sorted; the
    last known leader as a one-member lastKnownElr)."""
    lke = () if reg.last_known_leader == NO_LEADER else (reg.last_known_leader,)
    return PartitionRegistration(
        replicas=reg.replicas, isr=tuple(sorted(reg.isr)), leader=reg.leader, leader_epoch=reg.leader_epoch,
        partition_epoch=reg.partition_epoch, removing_replicas=reg.removing, adding_replicas=reg.adding,
        leader_recovery_state=carried.leader_recovery_state, elr=tuple(sorted(reg.elr)), last_known_elr=lke)


def controller_settings(p: Protocol) -> tuple[bool, Election] | None:
    """(ELR on, election type) of the Kafka controller whose rules `p` has; None when no 4.x controller has them.

    KIP-966's rules are ELR on; keeping the last ISR member is ELR off; unclean_allowed is
    unclean.leader.election.enable=true (Election.UNCLEAN).
    """
    if p.leader_choice is rules.clean_or_eligible and p.isr_removal is rules.eligible_leader_replicas:
        return True, Election.ONLINE
    if p.leader_choice is rules.clean_only and p.isr_removal is rules.keep_last_replica:
        return False, Election.ONLINE
    if p.leader_choice is rules.unclean_allowed and p.isr_removal is rules.keep_last_replica:
        return False, Election.UNCLEAN
    return None


def _written(before: Registry, after: Registry) -> bool:
    """The step wrote the partition (a zombie controller's write can repeat the epochs it overwrites)."""
    return model_fields(before) != model_fields(after)


def model_step_change(before: State, action: Action, after: State, p: Protocol, cfg: Config,
                      carried: Carried = Carried()) -> ModelStep | None:
    """The builder run the controller makes for this step of the model, or None when the step is not one.

    - handle_alter_partition (accepted): `alterPartition`, target ISR from the request, RECOVERED.
    - fence, restart (registration with a new incarnation): `handleBrokerFenced` / `handleBrokerShutdown`:
      target ISR without the broker, the broker not acceptable, and after an unclean shutdown (ELR on) the
      broker as unclean-shutdown replica. Run for every partition with the broker in the ISR (and, unclean,
      in the ELR), as Kafka does, also when the model writes nothing.
    - elect: `handleBrokerUnfenced`'s election for leaderless partitions (targets unchanged).
    - unclean_election: `electLeader`'s UNCLEAN election (an operator's ElectLeaders), targets unchanged.
    - move_leader: to the preferred replica a PREFERRED election; to another replica an ONLINE election
      whose LeaderAcceptor admits only the target (as when every other broker is shutting down).
    - zombie_move_leader: the same, from the zombie's stale view.
    - reassign: `changePartitionReassignment`; cancel_reassignment: `cancelPartitionReassignment`.
    - handle_controlled_shutdown: none here (`_heartbeat_compared`).
    """
    settings = controller_settings(p)
    if settings is None:
        return None
    step = _Step(before, action, after, p, cfg, carried, *settings)
    builder = _STEP_BUILDERS.get(action.kind)
    if builder is not None:
        return builder(step)
    if step.wrote is not None:
        raise ValueError(f"model step {action.label()} writes the registry but maps to no controller call")
    return None


class _Step:
    """A model step as `model_step_change` reads it: the registries before and after, the partition as Kafka holds
    it, the unfenced brokers, whether the step wrote, and the controller's settings."""

    def __init__(self, before: State, action: Action, after: State, p: Protocol, cfg: Config, carried: Carried,
                 elr: bool, election: Election) -> None:
        self.before, self.action, self.after, self.p, self.cfg, self.carried = before, action, after, p, cfg, carried
        self.elr, self.election = elr, election
        self.reg = before.registry
        self.unfenced = frozenset(b for b in before.brokers if b not in self.reg.fenced)
        self.part = registration(self.reg, carried)
        self.wrote = after.registry if _written(self.reg, after.registry) else None

    def change(self, acceptable: frozenset[int], how: Election | None = None, *,
               part: PartitionRegistration | None = None, **targets: Any) -> PartitionChange:
        # ReplicationControlManager hands every builder the topic's effective min ISR (capped at the replica count)
        min_isr = min(self.cfg.min_isr, len(self.reg.replicas))
        return PartitionChange(self.part if part is None else part, acceptable, self.election if how is None else how,
                               min_isr, self.elr, **targets)


def _alter_partition(step: _Step) -> ModelStep | None:
    """`alterPartition`: the request's ISR, RECOVERED; a refused request runs no builder."""
    if step.wrote is None:
        return None  # refused by the request's validation, before any builder runs
    m = step.action.args[0]
    return ModelStep(step.action.kind, step.change(step.unfenced, target_isr=tuple(sorted(m.isr)),
                                                   target_leader_recovery_state=LeaderRecoveryState.RECOVERED),
                     step.wrote)


def _broker_gone(step: _Step) -> ModelStep | None:
    """fence and restart: `handleBrokerFenced` / `handleBrokerShutdown` for a partition with the broker in the ISR
    (or, after an unclean shutdown with ELR on, in the ELR)."""
    kind, b, before, reg = step.action.kind, step.action.args[0], step.before, step.reg
    unclean = kind == "restart" and not before.replica(b).clean_shutdown and step.elr
    if kind == "restart" and not step.p.registration(before.replica(b).clean_shutdown)[0]:
        return None  # the broker comes back unnoticed: no registration, no change
    if b not in reg.isr and not (unclean and b in reg.elr):
        return None  # Kafka visits only the partitions with the broker in the ISR (or ELR)
    target = tuple(x for x in sorted(reg.isr) if x != b)
    return ModelStep(kind, step.change(step.unfenced - {b}, target_isr=target,
                                       unclean_shutdown_replicas=(b,) if unclean else None), step.wrote)


def _elect(step: _Step) -> ModelStep:
    """`handleBrokerUnfenced`'s election for a leaderless partition, targets unchanged."""
    return ModelStep(step.action.kind, step.change(step.unfenced), step.wrote)


def _unclean_election(step: _Step) -> ModelStep:
    """An operator's ElectLeaders UNCLEAN of a leaderless partition (`electLeader`): an UNCLEAN election, targets
    unchanged."""
    return ModelStep(step.action.kind, step.change(step.unfenced, Election.UNCLEAN), step.wrote)


def _move_leader(step: _Step) -> ModelStep:
    """move_leader and zombie_move_leader (from the zombie's stale view, always a write): to the preferred replica a
    PREFERRED election, to another an ONLINE election only the target may win."""
    kind, args = step.action.kind, step.action.args
    part, wrote = step.part, step.wrote
    if kind == "zombie_move_leader":  # it always writes, possibly the very fields it overwrites
        part, wrote = registration(step.before.zombies[args[0]].view, step.carried), step.after.registry
    target = args[-1]
    if target == part.preferred_replica:
        return ModelStep(f"{kind}/preferred", step.change(step.unfenced, Election.PREFERRED, part=part), wrote)
    return ModelStep(kind, step.change(frozenset({target}), part=part), wrote)


def _reassign(step: _Step) -> ModelStep:
    """`changePartitionReassignment`: the plan's replicas, adding and removing."""
    reg = step.reg
    replicas, adding, removing = reassignment_plan(reg.replicas, step.action.args[0])
    return ModelStep(step.action.kind, step.change(
        step.unfenced, target_replicas=replicas if replicas != reg.replicas else None,
        target_removing=removing or None, target_adding=adding or None), step.wrote)


def _cancel_reassignment(step: _Step) -> ModelStep:
    """`cancelPartitionReassignment`: back to the replicas before the adding ones, the ISR without them."""
    reg = step.reg
    replicas = tuple(x for x in reg.replicas if x not in reg.adding)
    isr = tuple(x for x in sorted(reg.isr) if x not in reg.adding)
    if not isr and replicas:  # PartitionReassignmentRevert's unclean case
        isr = (replicas[0],)
    return ModelStep(step.action.kind, step.change(step.unfenced, target_isr=isr, target_replicas=replicas,
                                                   target_removing=(), target_adding=()), step.wrote)


def _heartbeat_compared(step: _Step) -> None:
    """handle_controlled_shutdown: the controller's answer to a heartbeat asking to shut down is one or two builder
    runs (CONTROLLED_SHUTDOWN, then SHUTDOWN_NOW's fence), so it is compared whole against Kafka's
    `processBrokerHeartbeat` on Kafka's own state instead (`compare_lifecycle`,
    tests/test_kafka_kraft_controller.py)."""
    return None


_STEP_BUILDERS: dict[str, Callable[[_Step], ModelStep | None]] = {
    "handle_alter_partition": _alter_partition, "fence": _broker_gone, "restart": _broker_gone, "elect": _elect,
    "move_leader": _move_leader, "zombie_move_leader": _move_leader, "reassign": _reassign,
    "cancel_reassignment": _cancel_reassignment, "handle_controlled_shutdown": _heartbeat_compared,
    "unclean_election": _unclean_election}


MODEL_FIELDS = ("leader", "leader_epoch", "partition_epoch", "isr", "elr", "last_known_leader", "replicas", "adding",
                "removing")


def model_fields(reg: Registry) -> tuple[object, ...]:
    return (reg.leader, reg.leader_epoch, reg.partition_epoch, reg.isr, reg.elr, reg.last_known_leader, reg.replicas,
            reg.adding, reg.removing)


def kafka_fields(after: PartitionRegistration) -> tuple[object, ...]:
    """Kafka's registration in the model's terms. A lastKnownElr of [-1] (an epoch bump while leaderless
    remembers "no leader") acts as an empty one, and the model keeps it so."""
    lke = after.last_known_elr
    last_known = lke[0] if len(lke) == 1 else NO_LEADER
    return (after.leader, after.leader_epoch, after.partition_epoch, frozenset(after.isr), frozenset(after.elr),
            last_known, after.replicas, after.adding_replicas, after.removing_replicas)


def same_as_model(result: ChangeResult, step: ModelStep) -> bool:
    """Kafka's registration after the change has what the model wrote (or, model silent, no record)."""
    if step.model_after is None:
        return not result.built
    return kafka_fields(result.after) == model_fields(step.model_after)


def carry(result: ChangeResult) -> Carried:
    return Carried(result.after.leader_recovery_state)


# ---- the controller's broker lifecycle and AlterPartition handling (request KC) ----------------------------
# Kafka's side: metadata/.../controller/ClusterControlManager.java (registerBroker, the registrations),
# ReplicationControlManager.java (alterPartition, processBrokerHeartbeat, handleBrokerFenced,
# handleBrokerInControlledShutdown, handleBrokerShutdown, electLeaders) and BrokerHeartbeatManager.java
# (calculateNextBrokerState), driven by reference/harness/KcheckController.java: one script of controller calls
# per line, every record replayed at the next metadata offset. Ours: the replication model's controller actions
# (`handle_alter_partition`, `fence`, `controlled_shutdown`, `Protocol.shutdown_granted`) run on the registry
# Kafka held before each call (`model_registry`).

CONTROLLER_WORD = "KC"


@dataclass(frozen=True)
class BrokerView:
    """One broker registration as the controller holds it."""

    id: int
    epoch: int
    fenced: bool
    shutting_down: bool  # BrokerRegistration.inControlledShutdown


@dataclass(frozen=True)
class PartitionView:
    """The topic's partition 0 as the controller holds it (PartitionRegistration)."""

    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    replicas: tuple[int, ...]
    recovering: bool = False  # leaderRecoveryState RECOVERING (after an unclean or last-known-leader election)


@dataclass(frozen=True)
class Step:
    """One controller call's answer (NONE or an error name; a new broker epoch for a registration; for a heartbeat
    'fenced,inControlledShutdown,shouldShutDown,caughtUp') and the controller's state after it."""

    result: str
    partition: PartitionView | None
    brokers: tuple[BrokerView, ...]

    def broker(self, b: int) -> BrokerView | None:
        return next((x for x in self.brokers if x.id == b), None)


@dataclass(frozen=True)
class Script:
    """A sequence of controller calls on a fresh controller (see KcheckController.java for the op grammar;
    build ops with `op_*`)."""

    ops: tuple[str, ...]
    elr: bool = True
    min_isr: int = 1
    unclean: bool = False


def op_register(broker: int, incarnation: int = 0, previous_epoch: int | str = -1) -> str:
    """previous_epoch "*": the broker's registered epoch (it shut down cleanly); -1: none."""
    return f"r:{broker}:{incarnation}:{previous_epoch}"


def op_heartbeat(broker: int, want_fence: bool = False, want_shutdown: bool = False, offset: int | None = None,
                 stale: bool = False) -> str:
    """offset None: the broker has applied the whole log. stale: sent by an older incarnation (a broker epoch below
    the registration's)."""
    return f"h:{broker}:{int(want_fence)}:{int(want_shutdown)}:{'*' if offset is None else offset}" + (
        ":s" if stale else "")


def op_expire(broker: int) -> str:
    return f"x:{broker}"


def op_topic(replicas: Sequence[int]) -> str:
    return f"t:{encode_ints(replicas)}"


def op_alter(broker: int | str, leader_epoch: int | str, partition_epoch: int | str, isr: Sequence[int] | str,
             epochs: dict[int, int | str] | None = None, broker_epoch: int | None = None) -> str:
    """broker "L": the leader; epochs "c", "c-1", "c+1": relative to the partition's; isr "I", "I+3", "I-3": the
    partition's ISR, with 3 added at the end, without 3; per member epoch "r" its registered one, "s" one less,
    "n" -1, or a number (a member not in `epochs`: "r"); broker_epoch None: the requester's registered one."""
    ep = "*" if not epochs else ",".join(f"{b}.{h}" for b, h in sorted(epochs.items()))
    be = "*" if broker_epoch is None else str(broker_epoch)
    isr_tok = isr if isinstance(isr, str) else encode_ints(isr)
    return f"a:{broker}:{be}:{leader_epoch}:{partition_epoch}:{isr_tok}:{ep}"


def _isr(tok: str, p: PartitionView) -> tuple[int, ...]:
    if not tok.startswith("I"):
        return _list(tok)
    out = list(p.isr)
    if len(tok) > 1:
        b = int(tok[2:])
        if tok[1] == "+" and b not in out:
            out.append(b)
        elif tok[1] == "-" and b in out:
            out.remove(b)
    return tuple(out)


def _relative(tok: str, current: int) -> int:
    if not tok.startswith("c"):
        return int(tok)
    return current if tok == "c" else current + int(tok[1:])


def resolve_alter(op: str, before: Step) -> tuple[int, int, int, tuple[int, ...], tuple[int, ...]]:
    """An `op_alter` op's request as the harness sends it, given the state before it: (from, leader epoch,
    partition epoch, ISR, each member's broker epoch)."""
    _, frm, _, le, pe, isr_tok, ep = op.split(":")
    p = before.partition
    if p is None:
        raise ValueError("no partition")
    broker = p.leader if frm == "L" else int(frm)
    isr = _isr(isr_tok, p)
    how = {} if ep == "*" else {int(k): v for k, v in (x.split(".") for x in ep.split(","))}
    epochs = []
    for b in isr:
        view = before.broker(b)
        registered = -1 if view is None else view.epoch
        h = how.get(b, "r")
        epochs.append({"r": registered, "s": registered - 1, "n": -1}[h] if h in ("r", "s", "n") else int(h))
    return broker, _relative(le, p.leader_epoch), _relative(pe, p.partition_epoch), isr, tuple(epochs)


def op_elect(unclean: bool = False) -> str:
    return f"e:{'U' if unclean else 'P'}"


def encode_script(script: Script) -> str:
    return f"{CONTROLLER_WORD} {int(script.elr)} {script.min_isr} {int(script.unclean)} {' '.join(script.ops)}"


def _parse_step(tok: str) -> Step:
    result, part, brokers = tok.split("/")
    partition = None
    if part != "-":
        f = part.split(";")
        partition = PartitionView(int(f[0]), int(f[1]), int(f[2]), _list(f[3]), _list(f[4]), _list(f[5]),
                                  _list(f[6]), f[7] == "1")
    views = []
    if brokers != "~":
        for b in brokers.split(";"):
            i, e, fenced, cs = b.split(":")
            views.append(BrokerView(int(i), int(e), fenced == "1", cs == "1"))
    return Step(result, partition, tuple(views))


def parse_script(line: str) -> list[Step] | JavaException:
    if line.startswith("ERR "):
        return parse_error(line)
    t = line.split(" ")
    if t[0] != "OK":
        raise ValueError(f"not a KC answer: {line!r}")
    return [_parse_step(x) for x in t[1:]]


def run_scripts(bridge: KafkaBridge, scripts: Iterable[Script]) -> list[list[Step] | JavaException]:
    """Kafka's answers to each script, in one batch: one `Step` per op."""
    bridge.require(CONTROLLER_WORD, "the KRaft controller's managers")
    return [parse_script(a) for a in bridge.roundtrip([encode_script(s) for s in scripts])]


def model_registry(step: Step, brokers: int) -> Registry:
    """The controller state Kafka answered, as the model's Registry (brokers 1..`brokers`; the last known leader is
    a one-member lastKnownElr, as `kafka_fields` reads it). Needs the topic created and every broker registered."""
    p = step.partition
    if p is None:
        raise ValueError("no partition yet")
    views = {b.id: b for b in step.brokers}
    missing = [b for b in range(1, brokers + 1) if b not in views]
    if missing:
        raise ValueError(f"brokers {missing} are not registered")
    lke = p.last_known_elr[0] if len(p.last_known_elr) == 1 else NO_LEADER
    return Registry(leader=p.leader, leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch,
                    isr=frozenset(p.isr), elr=frozenset(p.elr), replicas=p.replicas, last_known_leader=lke,
                    fenced=frozenset(b for b, v in views.items() if v.fenced),
                    shutting_down=frozenset(b for b, v in views.items() if v.shutting_down),
                    broker_epochs=tuple(views[b].epoch for b in range(1, brokers + 1)))


def partition_fields(reg: Registry) -> tuple[object, ...]:
    """What a controller call decides about the partition, in the model's terms."""
    return (reg.leader, reg.leader_epoch, reg.partition_epoch, reg.isr, reg.elr, reg.last_known_leader)


def kafka_partition_fields(step: Step) -> tuple[object, ...]:
    p = step.partition
    if p is None:
        raise ValueError("no partition")
    lke = p.last_known_elr[0] if len(p.last_known_elr) == 1 else NO_LEADER
    return (p.leader, p.leader_epoch, p.partition_epoch, frozenset(p.isr), frozenset(p.elr), lke)


def model_config(brokers: int, replicas: int, min_isr: int) -> Config:
    """A model configuration whose budgets never stop a controller call the comparison asks for."""
    return Config(brokers=brokers, replication_factor=replicas, min_isr=min_isr, max_leader_epoch=10_000,
                  fences=100, shutdowns=100, elections=100, isr_shrinks=100)


def model_state(reg: Registry, cfg: Config) -> State:
    """The model's state with the controller holding `reg`; a broker that was let go (fenced and in controlled
    shutdown) is down, every other broker is up as the incarnation the controller registered (its broker epoch)."""
    s = initial_state(cfg)
    down = reg.fenced & reg.shutting_down
    reps = tuple(evolve(r, alive=r.id not in down, broker_epoch=reg.broker_epochs[r.id - 1]) for r in s.replicas)
    return evolve(s, registry=reg, replicas=reps)


def model_alter_partition(p: Protocol, cfg: Config, reg: Registry, frm: int, leader_epoch: int,
                          partition_epoch: int, isr: Sequence[int], epochs: Sequence[int]) -> tuple[str, Registry]:
    """The model controller's answer to an AlterPartition (`actions.handle_alter_partition`): the error ("NONE" when
    accepted) and the registry after it. A member sent with broker epoch -1 (the leader saw no fetch from it) is
    left out of the request's epochs, as the model's leader does."""
    m = AlterPartition(frm, leader_epoch, partition_epoch, tuple(sorted(isr)),
                       tuple(sorted((b, e) for b, e in zip(isr, epochs, strict=True) if e != -1)))
    s = model_state(reg, cfg)
    # the sender is the live process that sent these epochs, so the model's answer has a connection to go back on
    sender = dict(m.broker_epochs).get(frm, s.replica(frm).broker_epoch)
    s = s.with_replica(evolve(s.replica(frm), alive=True, broker_epoch=sender))
    after = handle_alter_partition(s, p, cfg, m, keep=True)
    if after is None:
        return "NO_WRITE", reg
    answers = [q for q in after.pool - s.pool if isinstance(q, AlterPartitionResponse) and q.to == frm]
    if len(answers) != 1:
        raise ValueError(f"the model answered {len(answers)} times")
    return answers[0].error or "NONE", after.registry


def model_fence(p: Protocol, cfg: Config, reg: Registry, broker: int) -> Registry | None:
    """The model controller fencing a live broker whose session lapsed (`actions.fence`); None: it refuses."""
    after = fence(model_state(reg, cfg), p, cfg, broker)
    return None if after is None else after.registry


def model_controlled_shutdown(p: Protocol, cfg: Config, reg: Registry, broker: int) -> Registry | None:
    """The model controller's answer to a live broker's first heartbeat asking to shut down, of its current
    registration (`actions.controlled_shutdown`, then `handle_controlled_shutdown`); None: it refuses."""
    asked = controlled_shutdown(model_state(reg, cfg), p, cfg, broker)
    if asked is None:
        return None
    m = next(m for m in asked.pool if isinstance(m, ControlledShutdown) and m.frm == broker)
    after = handle_controlled_shutdown(asked, p, cfg, m)
    return None if after is None else after.registry


def model_stale_shutdown(p: Protocol, cfg: Config, reg: Registry, broker: int) -> Registry | None:
    """The model controller's answer to a request to shut down that an older incarnation of `broker` sent
    (`actions.handle_controlled_shutdown` of a ControlledShutdown one broker epoch below the registration's)."""
    stale = ControlledShutdown(broker, reg.broker_epochs[broker - 1] - 1)
    s = model_state(reg, cfg)
    after = handle_controlled_shutdown(evolve(s, pool=s.pool | {stale}), p, cfg, stale)
    return None if after is None else after.registry


@dataclass(frozen=True)
class Lifecycle:
    """A random script and the cluster it runs on (brokers 1..brokers, the partition on 1..replicas)."""

    script: Script
    brokers: int
    replicas: int


def random_lifecycle(rng: random.Random, max_brokers: int = 4, elr: bool | None = None,
                     unclean: bool | None = None) -> Lifecycle:
    """A random controller history: every broker registers and unfences, the topic is created on brokers 1..RF,
    then 2-12 calls among session expiries, restarts (expiry, then a clean or unclean registration of a new
    incarnation, usually unfenced), controlled shutdowns (once a broker asked to stop, each of its heartbeats
    asks again until it registers anew, as `BrokerLifecycleManager` does), heartbeats (caught up or lagging),
    AlterPartition requests (mostly the leader's, at or near the current epochs, adding or dropping a member, some
    broker epochs stale or -1) and elections. `elr`, `unclean`: the cluster's ELR feature and the
    topic's unclean.leader.election.enable (None: random)."""
    n = rng.randint(2, max_brokers)
    rf = rng.randint(min(2, n), n)
    ops = [op_register(b) for b in range(1, n + 1)] + [op_heartbeat(b) for b in range(1, n + 1)]
    ops.append(op_topic(range(1, rf + 1)))
    incarnation = dict.fromkeys(range(1, n + 1), 0)
    stopping: set[int] = set()  # asked to shut down: every heartbeat says so until it registers again (BLM)
    kinds = ("expire", "restart", "shutdown", "heartbeat", "alter", "elect")
    for _ in range(rng.randint(2, 12)):
        kind = rng.choices(kinds, weights=(3, 2, 3, 3, 8, 1))[0]
        b = rng.randint(1, n)
        if kind == "expire":  # a pause past the session timeout; the broker may heartbeat again afterwards
            ops.append(op_expire(b))
        elif kind == "restart":  # a clean restart presents its last epoch (the clean-shutdown file), a crash none
            incarnation[b] += 1
            clean = rng.random() < (0.8 if b in stopping else 0.3)
            ops += [op_expire(b), op_register(b, incarnation[b], "*" if clean else -1)]
            stopping.discard(b)
            if rng.random() < 0.8:
                ops.append(op_heartbeat(b))
        elif kind == "shutdown" and incarnation[b] and rng.random() < 0.5:  # a bounced process's request, late
            ops.append(op_heartbeat(b, want_shutdown=True, stale=True))
        elif kind == "shutdown" or (kind == "heartbeat" and b in stopping):
            stopping.add(b)
            ops.append(op_heartbeat(b, want_shutdown=True))
        elif kind == "heartbeat":
            ops.append(op_heartbeat(b, offset=None if rng.random() < 0.7 else 0))
        elif kind == "alter":
            frm: int | str = "L" if rng.random() < 0.85 else rng.randint(1, n)
            le = rng.choice(("c",) * 8 + ("c-1", "c+1"))
            pe = rng.choice(("c",) * 6 + ("c-1", "c-2", "c+1"))
            other = rng.randint(1, n if rng.random() < 0.2 else rf)
            isr: Sequence[int] | str = rng.choice((f"I+{other}",) * 4 + (f"I-{other}", "I"))
            if rng.random() < 0.05:
                isr = tuple(rng.sample(range(1, n + 1), rng.randint(1, n)))
            epochs: dict[int, int | str] = {}
            if rng.random() < 0.3:
                epochs[other] = rng.choice(("s", "n"))
            ops.append(op_alter(frm, le, pe, isr, epochs))
        else:
            ops.append(op_elect(unclean=rng.random() < 0.3))
    elr = rng.random() < 0.7 if elr is None else elr
    unclean = rng.random() < 0.1 if unclean is None else unclean
    return Lifecycle(Script(tuple(ops), elr, rng.randint(1, rf), unclean), n, rf)


@dataclass(frozen=True)
class Difference:
    """One controller call where the model and Kafka disagree."""

    # "alter_partition" (a request the model's leader can send), "alter_partition/unmodelled" (one it never sends),
    # "fence", "controlled_shutdown", "stale_shutdown", "shutdown_granted"
    what: str
    lifecycle: Lifecycle
    index: int  # the op in the script
    kafka: object
    ours: object
    in_model: bool  # the call has a shape the model makes (else Kafka's behaviour outside what the model reaches)

    def describe(self) -> str:
        s = self.lifecycle.script
        return (f"{self.what} at op {self.index} ({s.ops[self.index]}) of {encode_script(s)}: kafka {self.kafka}, "
                f"ours {self.ours}{'' if self.in_model else ' (a request the model never makes)'}")


def _model_shaped_alter(reg: Registry, frm: int, le: int, pe: int, isr: Sequence[int],
                        epochs: Sequence[int]) -> bool:
    """A request the model's leader can send: from a replica that believed it led at `le` (so at the current
    leader epoch only the leader), epochs not ahead of the controller's, an ISR of replicas holding the sender,
    each member's broker epoch one it saw (never -1; for members already in the ISR the registered one: a member
    that registers again leaves the ISR), no duplicates; at the current partition epoch a change (the
    leader's ISR is then the controller's, and it proposes only to add or drop a member)."""
    return (frm in reg.replicas and frm in isr and len(set(isr)) == len(isr) and set(isr) <= set(reg.replicas)
            and (set(isr) != reg.isr or pe != reg.partition_epoch)
            and (le < reg.leader_epoch or (le == reg.leader_epoch and frm == reg.leader))
            and pe <= reg.partition_epoch and -1 not in epochs
            and all(e == reg.broker_epochs[b - 1] for b, e in zip(isr, epochs, strict=True) if b in reg.isr))


def compare_lifecycle(life: Lifecycle, steps: Sequence[Step], p: Protocol, what: frozenset[str] | None = None
                      ) -> tuple[dict[str, int], list[Difference]]:
    """Each controller call of `life` that the model also makes, run by the model on the state Kafka held before
    it; returns how many calls of each kind were compared, and the differences."""
    run = _LifecycleComparison(life, p)
    counts: dict[str, int] = {}
    for i, op in enumerate(life.script.ops):
        if i == 0:
            continue
        before, after = steps[i - 1], steps[i]
        if before.partition is None or len(before.brokers) < life.brokers:
            continue
        kind = run.compare(i, op.split(":"), op, before, after)
        if kind and (what is None or kind in what):
            counts[kind] = counts.get(kind, 0) + 1
    diffs = run.diffs if what is None else [d for d in run.diffs if d.what in what]
    return counts, diffs


class _LifecycleComparison:
    """`compare_lifecycle`'s run: the differences found, and what the heartbeat manager remembers between calls."""

    def __init__(self, life: Lifecycle, p: Protocol) -> None:
        self.life, self.p = life, p
        self.cfg = model_config(life.brokers, life.replicas, life.script.min_isr)
        self.diffs: list[Difference] = []
        self.last_full_heartbeat: dict[int, int] = {}  # broker -> op index of its last caught-up heartbeat that
        # kept its fencing
        self.shutdown_began: dict[int, int] = {}

    def compare(self, i: int, f: list[str], op: str, before: Step, after: Step) -> str:
        """Op `i` (`f`: its fields) run by the model on Kafka's state before it: the kind of call compared ("" when
        the model makes no such call), a difference recorded."""
        reg = model_registry(before, self.life.brokers)
        b = int(f[1]) if f[0] in ("h", "x") else 0
        kind = ""
        if f[0] == "a":
            kind = self.alter_partition(i, op, reg, before, after)
        elif f[0] == "x" and b not in reg.fenced and after.result == "NONE":
            kind = self.fence(i, reg, b, after)
        elif f[0] == "h" and f[5:] == ["s"]:
            kind = self.stale_shutdown(i, reg, b, after)
        elif f[0] == "h" and f[3] == "1" and b not in reg.fenced:  # a heartbeat asking to shut down
            if b not in reg.shutting_down:
                kind = self.controlled_shutdown(i, reg, b, after)
            elif b in self.shutdown_began:
                kind = self.shutdown_granted(i, reg, b, after)
        if f[0] == "h" and f[5:] != ["s"]:
            self.heartbeat(i, b, f[4] == "*", before, after)
        if f[0] == "r":
            self.shutdown_began.pop(int(f[1]), None)
        return kind

    def differs(self, kind: str, i: int, kafka: object, ours: object, in_model: bool = True) -> None:
        self.diffs.append(Difference(kind, self.life, i, kafka, ours, in_model))

    def alter_partition(self, i: int, op: str, reg: Registry, before: Step, after: Step) -> str:
        frm, le, pe, isr, epochs = resolve_alter(op, before)
        shaped = _model_shaped_alter(reg, frm, le, pe, isr, epochs)
        kind = "alter_partition" if shaped else "alter_partition/unmodelled"
        error, ours = model_alter_partition(self.p, self.cfg, reg, frm, le, pe, isr, epochs)
        kafka_after = model_registry(after, self.life.brokers) if after.partition else reg
        same = error == after.result and (
            error not in ("NONE", "NEW_LEADER_ELECTED") or partition_fields(ours) == partition_fields(kafka_after))
        if not same:
            self.differs(kind, i, (after.result, kafka_partition_fields(after)), (error, partition_fields(ours)),
                         shaped)
        return kind

    def fence(self, i: int, reg: Registry, b: int, after: Step) -> str:
        ours_reg = model_fence(self.p, self.cfg, reg, b)
        kafka_reg = model_registry(after, self.life.brokers)
        if ours_reg is None or partition_fields(ours_reg) != partition_fields(kafka_reg):
            self.differs("fence", i, kafka_partition_fields(after),
                         None if ours_reg is None else partition_fields(ours_reg))
        return "fence"

    def stale_shutdown(self, i: int, reg: Registry, b: int, after: Step) -> str:
        """A request to shut down from an older incarnation: whether Kafka and the model's
        `shutdown_request_accepted` rule both refuse it (nothing changes) or both act on it."""
        ours = model_stale_shutdown(self.p, self.cfg, reg, b)
        kafka_refused = after.result == "StaleBrokerEpochException"
        if kafka_refused != (ours == reg):
            self.differs("stale_shutdown", i, after.result, "refused" if ours == reg else "acted on")
        return "stale_shutdown"

    def controlled_shutdown(self, i: int, reg: Registry, b: int, after: Step) -> str:
        ours_reg = model_controlled_shutdown(self.p, self.cfg, reg, b)
        kafka_reg = model_registry(after, self.life.brokers)
        view = after.broker(b)
        if view is not None and view.shutting_down:
            self.shutdown_began[b] = i
        # Kafka's immediate SHUTDOWN_NOW (the broker leads nothing) writes no in-controlled-shutdown flag; the
        # model marks it anyway (only its invariants read it): compare who is fenced, not that flag.
        theirs = (*kafka_partition_fields(after), kafka_reg.fenced)
        ours_t = None if ours_reg is None else (*partition_fields(ours_reg), ours_reg.fenced)
        if ours_t != theirs:
            self.differs("controlled_shutdown", i, theirs, ours_t)
        return "controlled_shutdown"

    def shutdown_granted(self, i: int, reg: Registry, b: int, after: Step) -> str:
        active = [a for a in range(1, self.life.brokers + 1)
                  if a != b and a not in reg.fenced and a not in reg.shutting_down]
        seen = all(self.last_full_heartbeat.get(a, -1) > self.shutdown_began[b] for a in active)
        ours_granted = self.p.shutdown_granted(reg, b, seen)
        kafka_granted = after.result.split(",")[2] == "1"
        if ours_granted != kafka_granted:
            self.differs("shutdown_granted", i, kafka_granted, ours_granted)
        return "shutdown_granted"

    def heartbeat(self, i: int, b: int, caught_up: bool, before: Step, after: Step) -> None:
        """The heartbeat manager keeps the offset a heartbeat reports; replaying a registration change that leaves
        the broker's fencing as it was (the UNFENCE its own heartbeat caused) resets it to -1."""
        was, now = before.broker(b), after.broker(b)
        kept = was is not None and now is not None and was.fenced == now.fenced
        if caught_up and kept:
            self.last_full_heartbeat[b] = i
        else:
            self.last_full_heartbeat.pop(b, None)
