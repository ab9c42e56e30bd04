"""KRaft partition reassignment over the model's registry: the request, the completion rule, the revert.

Mirrors `metadata/src/main/java/org/apache/kafka/controller/PartitionReassignmentReplicas.java`
(the plan and `maybeCompleteReassignment`), `PartitionReassignmentRevert.java` (cancel), and the
parts of `ReplicationControlManager.changePartitionReassignment` that decide which targets the
`PartitionChangeBuilder` gets. `reference.reassignment` holds the same logic over Kafka's own
values; `model` imports nothing of the project, so this is a twin of it, tested against it
(tests/test_replication_reassignment.py).

Everything here is pure and works on tuples and frozensets; the ISR is a set in this model.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from kcheck.model.replication.state import Registry

Ids = tuple[int, ...]
# (replicas, adding, removing, ISR the controller is about to write) -> (replicas, ISR) once complete, else None
Completion = Callable[[Ids, Ids, Ids, frozenset[int]], tuple[Ids, frozenset[int]] | None]
# the registry -> (replicas, ISR) of the revert, or None when the revert is refused
Revert = Callable[[Registry], tuple[Ids, frozenset[int]] | None]
# (ELR computed for the change, the replica set it writes) -> the ELR written
ElrFilter = Callable[[frozenset[int], Ids], frozenset[int]]


def _without(items: Sequence[int], gone: Collection[int]) -> Ids:
    return tuple(b for b in items if b not in gone)


def reassignment_plan(current: Sequence[int], target: Sequence[int]) -> tuple[Ids, Ids, Ids]:
    """`new PartitionReassignmentReplicas(current, target)`: (replicas, adding, removing).

    Removing and adding are sorted ascending (TreeSet); the replica set is the target in the order
    given, then the replicas being removed. `current` is the full replica set, so a request on top of
    an in-flight reassignment counts the previous adding replicas as current ones.
    """
    removing = tuple(sorted(set(current) - set(target)))
    adding = tuple(sorted(set(target) - set(current)))
    return (*target, *removing), adding, removing


def request_targets(reg: Registry, target: Sequence[int]) -> tuple[Ids, Ids, Ids]:
    """What `changePartitionReassignment` hands the PartitionChangeBuilder: (replicas, adding, removing).

    Kafka sets each target only when the plan's value is non-empty (or, for the replicas, differs),
    so an empty plan list leaves the in-flight reassignment's list in place.
    """
    replicas, adding, removing = reassignment_plan(reg.replicas, target)
    return (replicas if replicas != reg.replicas else reg.replicas,
            adding if adding else reg.adding,
            removing if removing else reg.removing)


def _completed(replicas: Ids, removing: Ids, isr: frozenset[int]) -> tuple[Ids, frozenset[int]] | None:
    """The replicas and ISR after the removing replicas leave, or None if either would be empty."""
    new_isr, new_replicas = isr - set(removing), _without(replicas, removing)
    if not new_isr or not new_replicas:
        return None
    return new_replicas, new_isr


def complete_when_targets_in_sync(replicas: Ids, adding: Ids, removing: Ids, isr: frozenset[int]
                                  ) -> tuple[Ids, frozenset[int]] | None:
    """Today (since KAFKA-15665, apache/kafka#15359, 2024-02): every target replica is in the ISR."""
    if not adding and not removing:
        return None
    done = _completed(replicas, removing, isr)
    return done if done is not None and set(done[0]) <= done[1] else None


def complete_when_adding_in_sync(replicas: Ids, adding: Ids, removing: Ids, isr: frozenset[int]
                                 ) -> tuple[Ids, frozenset[int]] | None:
    """Before KAFKA-15665 (Kafka 3.7 and older): only the adding replicas need to be in the ISR, so a
    target replica that fell out of the ISR does not hold the completion back, and the ISR shrinks."""
    if not adding and not removing:
        return None
    done = _completed(replicas, removing, isr)
    return done if done is not None and set(adding) <= done[1] else None


def complete_when_adding_unless_shrinking(replicas: Ids, adding: Ids, removing: Ids, isr: frozenset[int]
                                          ) -> tuple[Ids, frozenset[int]] | None:
    """KAFKA-19975 (apache/kafka#21114, 2025-12; Kafka 4.3.0 on): the adding replicas in the ISR, and every
    target replica too when fewer replicas are added than removed (the target is smaller)."""
    if not adding and not removing:
        return None
    done = _completed(replicas, removing, isr)
    if done is None or not set(adding) <= done[1]:
        return None
    return None if len(adding) < len(removing) and not set(done[0]) <= done[1] else done


def revert_clean(reg: Registry) -> tuple[Ids, frozenset[int]] | None:
    """`PartitionReassignmentRevert` with unclean.leader.election.enable=false: replicas and ISR lose the
    adding replicas; if no ISR member is left the cancel is refused (InvalidReplicaAssignmentException:
    "it would require an unclean leader election"). The original order is not restored."""
    replicas, isr = _without(reg.replicas, reg.adding), reg.isr - set(reg.adding)
    if not isr or not replicas:
        return None
    return replicas, isr


def revert_unclean(reg: Registry) -> tuple[Ids, frozenset[int]] | None:
    """The same with unclean.leader.election.enable=true: an emptied ISR takes the first remaining replica."""
    replicas, isr = _without(reg.replicas, reg.adding), reg.isr - set(reg.adding)
    if not replicas:
        return None
    return replicas, (isr or frozenset({replicas[0]}))


def elr_as_computed(elr: frozenset[int], replicas: Ids) -> frozenset[int]:
    """Kafka (4.0, 4.1, trunk as read): `PartitionChangeBuilder.maybePopulateTargetElr` adds every member
    of the old ISR missing from the new one when the new ISR is below min.insync.replicas, and does not
    look at the replica set, so a replica that a completed (or cancelled) reassignment removed stays in
    the ELR after its log is deleted."""
    return elr


def elr_within_replicas(elr: frozenset[int], replicas: Ids) -> frozenset[int]:
    """A proposed fix: a replica leaving the replica set leaves the ELR too."""
    return elr & frozenset(replicas)
