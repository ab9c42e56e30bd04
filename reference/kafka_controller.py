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
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kcheck.model.replication import protocol as rules
from kcheck.model.replication.actions import Action, Config
from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.reassignment import reassignment_plan
from kcheck.model.replication.state import NO_LEADER, Registry, State
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
    "ChangeResult",
    "PartitionChange",
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
    return KRaftVersion.for_release(
        kafka_version, eligible_leader_replicas=change.elr,
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
    - move_leader: to the preferred replica a PREFERRED election; to another replica an ONLINE election
      whose LeaderAcceptor admits only the target (as when every other broker is shutting down).
    - zombie_move_leader: the same, from the zombie's stale view.
    - reassign: `changePartitionReassignment`; cancel_reassignment: `cancelPartitionReassignment`.
    """
    settings = controller_settings(p)
    if settings is None:
        return None
    elr, election = settings
    reg, new = before.registry, after.registry
    unfenced = frozenset(b for b in before.brokers if b not in reg.fenced)

    def change(partition: PartitionRegistration, acceptable: frozenset[int], how: Election = election,
               **targets: Any) -> PartitionChange:
        return PartitionChange(partition, acceptable, how, cfg.min_isr, elr, **targets)

    kind, args = action.kind, action.args
    part = registration(reg, carried)
    wrote = new if _written(reg, new) else None
    if kind == "handle_alter_partition":
        m = args[0]
        if wrote is None:
            return None  # refused by the request's validation, before any builder runs
        return ModelStep(kind, change(part, unfenced, target_isr=tuple(sorted(m.isr)),
                                      target_leader_recovery_state=LeaderRecoveryState.RECOVERED), wrote)
    if kind in ("fence", "restart"):
        b = args[0]
        unclean = kind == "restart" and not before.replica(b).clean_shutdown and elr
        if kind == "restart" and not p.registration(before.replica(b).clean_shutdown)[0]:
            return None  # the broker comes back unnoticed: no registration, no change
        if b not in reg.isr and not (unclean and b in reg.elr):
            return None  # Kafka visits only the partitions with the broker in the ISR (or ELR)
        target = tuple(x for x in sorted(reg.isr) if x != b)
        return ModelStep(kind, change(part, unfenced - {b}, target_isr=target,
                                      unclean_shutdown_replicas=(b,) if unclean else None), wrote)
    if kind == "elect":
        return ModelStep(kind, change(part, unfenced), wrote)
    if kind in ("move_leader", "zombie_move_leader"):
        target = args[-1]
        if kind == "zombie_move_leader":  # it always writes, possibly the very fields it overwrites
            part, wrote = registration(before.zombies[args[0]].view, carried), new
        if target == part.preferred_replica:
            return ModelStep(f"{kind}/preferred", change(part, unfenced, Election.PREFERRED), wrote)
        return ModelStep(kind, change(part, frozenset({target})), wrote)
    if kind == "reassign":
        replicas, adding, removing = reassignment_plan(reg.replicas, args[0])
        return ModelStep(kind, change(
            part, unfenced, target_replicas=replicas if replicas != reg.replicas else None,
            target_removing=removing or None, target_adding=adding or None), wrote)
    if kind == "cancel_reassignment":
        replicas = tuple(x for x in reg.replicas if x not in reg.adding)
        isr = tuple(x for x in sorted(reg.isr) if x not in reg.adding)
        if not isr and replicas:  # PartitionReassignmentRevert's unclean case
            isr = (replicas[0],)
        return ModelStep(kind, change(part, unfenced, target_isr=isr, target_replicas=replicas,
                                      target_removing=(), target_adding=()), wrote)
    if wrote is not None:
        raise ValueError(f"model step {action.label()} writes the registry but maps to no controller call")
    return None


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
