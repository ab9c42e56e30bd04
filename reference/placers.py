"""Placers by name, all with AdminUtils' signature, so every engine can check any of them.

A placer is a callable
`(brokers, n_partitions, replication_factor, fixed_start_index=-1, start_partition_id=-1, random=None)
-> dict[int, list[int]]` (partition id -> replicas, first = preferred leader).
`resolve_placer` accepts a built-in name or a user's `module:object`.
"""

from __future__ import annotations

import random as _py_random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from kcheck.model import Broker
from kcheck.reference import plugins
from kcheck.reference.java import JavaRandom
from kcheck.reference.placement import assign_replicas_to_brokers
from kcheck.reference.striped import PlacementSpec, StaticCluster, StripedReplicaPlacer

Placer = Callable[..., dict[int, list[int]]]


def striped_assign(
    brokers: Sequence[Broker],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    random: JavaRandom | None = None,
) -> dict[int, list[int]]:
    """KRaft's StripedReplicaPlacer behind AdminUtils' signature (Kafka 3.x/4.0 behaviour).

    The striped placer has no start index: its only input besides the brokers is
    the random generator. Partition ids start at `start_partition_id`, which (as
    in Kafka) does not influence the placement.
    """
    if fixed_start_index >= 0:
        raise ValueError("the striped placer has no start index; pass a seeded random instead")
    rnd = random if random is not None else JavaRandom(_py_random.getrandbits(48))
    first = max(0, start_partition_id)
    spec = PlacementSpec("topic", first, n_partitions, replication_factor)
    placed = StripedReplicaPlacer(rnd).place(spec, StaticCluster(tuple(brokers)))
    return {first + i: list(a.replicas) for i, a in enumerate(placed.assignments)}


@dataclass(frozen=True)
class PlacerInfo:
    name: str
    place: Placer
    has_start_index: bool  # whether a fixed start index (and shift) is an input
    # Invariant ids that Kafka documents or tests for this placer; a violation of
    # one of these is a bug (in kcheck or Kafka), a violation of any other is a finding.
    guarantees: frozenset[str]


BUILTIN_PLACERS: dict[str, PlacerInfo] = {
    "adminutils": PlacerInfo(
        "adminutils",
        assign_replicas_to_brokers,
        True,
        frozenset(
            {
                "placement.distinct-brokers",
                "placement.replication-factor",
                "placement.leader-spread",  # leaders round-robin: per-broker counts differ by <= 1
                "placement.rack-diversity",  # documented: a partition spans min(RF, racks) racks
            }
        ),
    ),
    "striped": PlacerInfo(
        "striped",
        striped_assign,
        False,
        frozenset({"placement.distinct-brokers", "placement.replication-factor", "placement.leader-unfenced"}),
    ),
}


def load_object(spec: str) -> object:
    """Import `module:object` (object may be dotted). A bad name is a ValueError with one clear line; anything
    the module does wrong while importing is a `PluginError` (kcheck.reference.plugins)."""
    return plugins.load(spec)


def resolve_placer(name: str) -> PlacerInfo:
    """A built-in placer by name, a user's callable given as `module:object`, or a Java ReplicaPlacer class given as
    `jvm:<class>` (kcheck.reference.jvm_plugins)."""
    if name in BUILTIN_PLACERS:
        return BUILTIN_PLACERS[name]
    if name.startswith("jvm:"):
        from kcheck.reference import jvm_plugins

        return PlacerInfo(name, jvm_plugins.resolve_placer(name), False, frozenset())
    if ":" not in name:
        known = ", ".join(sorted(BUILTIN_PLACERS))
        raise ValueError(f"unknown placer '{name}' (expected one of {known}, module:object or jvm:<class>)")
    obj = load_object(name)
    if isinstance(obj, PlacerInfo):
        if obj in BUILTIN_PLACERS.values():
            return obj
        return replace(obj, place=plugins.guard_placer(name, obj.place))
    if not callable(obj):
        raise ValueError(f"'{name}' is not callable (kcheck expected {plugins.PLACER_SIGNATURE})")
    # The user's code: whatever it raises or returns out of shape is reported as this plug-in's failure.
    return PlacerInfo(name, plugins.guard_placer(name, obj), True, frozenset())
