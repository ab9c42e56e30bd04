"""Hypothesis strategies for Kafka clusters and consumer groups, for a user's property tests.

    from hypothesis import given
    from kcheck.strategies import placer_cases

    @given(placer_cases())
    def test_my_placer(case):
        placement = my_placer.place(case.cluster.brokers, case.partitions, case.replication_factor)
        assert case.check(placement).hard_violations == ()

- `brokers()`: distinct broker ids, with racks on none, all or some of them (`racks`);
- `clusters()`: a `kcheck.model.Cluster` of them;
- `topics()`: a topic's name, partition count and replication factor;
- `placer_cases()`: what a placer is asked (a cluster, a partition count, a replication factor no larger than the
  cluster), with `check(placement)`: the placement invariants' report (`kcheck.invariants.check_placement`);
- `groups()`: a consumer group as an assignor gets it (topics' partitions, members' subscriptions with client
  racks and the partitions each owned, each owned by at most one member, with generations), with
  `check(assignment)`: the assignment invariants' report (`kcheck.invariants.check_assignment`).

Sizes are small by default (Hypothesis shrinks towards fewer brokers, partitions and members); every bound is a
parameter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from kcheck.invariants import AssignmentSubject, PlacementSubject, Report, check_assignment, check_placement
from kcheck.model import Broker, Cluster, PartitionInfo, ReplicaAssignment, Subscription, TopicPartition

__all__ = ["GroupCase", "PlacerCase", "Topic", "brokers", "clusters", "groups", "placer_cases", "topics"]

RACK_LAYOUTS = ("none", "full", "mixed")


@st.composite
def brokers(draw: st.DrawFn, min_size: int = 1, max_size: int = 6, racks: str | None = None,
            max_racks: int = 3, max_id: int = 20) -> tuple[Broker, ...]:
    """Brokers with distinct ids in 0..max_id (in no particular order, as a cluster lists them), on up to
    `max_racks` racks named r1, r2, ...: `racks` "none" (no broker has a rack), "full" (every one has one),
    "mixed" (some have one; Kafka refuses rack-aware placement there), or None to draw the layout."""
    if racks is not None and racks not in RACK_LAYOUTS:
        raise ValueError(f"racks must be one of {', '.join(RACK_LAYOUTS)} or None, not {racks!r}")
    ids = draw(st.lists(st.integers(0, max_id), min_size=min_size, max_size=max_size, unique=True))
    layout = racks or draw(st.sampled_from(RACK_LAYOUTS))
    names = [f"r{i}" for i in range(1, max_racks + 1)]
    out = []
    for i, b in enumerate(ids):
        has = layout == "full" or (layout == "mixed" and (i == 0 or draw(st.booleans())))
        out.append(Broker(b, draw(st.sampled_from(names)) if has else None))
    if layout == "mixed" and len(out) > 1 and all(b.rack is not None for b in out):
        out[-1] = Broker(out[-1].id, None)  # mixed: at least one with a rack and one without
    return tuple(out)


def clusters(min_brokers: int = 1, max_brokers: int = 6, racks: str | None = None,
             max_racks: int = 3) -> st.SearchStrategy[Cluster]:
    """A `Cluster` of `brokers(...)`."""
    return brokers(min_brokers, max_brokers, racks, max_racks).map(Cluster)


@dataclass(frozen=True)
class Topic:
    name: str
    partitions: int
    replication_factor: int


def topics(max_partitions: int = 12, max_replication_factor: int = 3,
           names: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Topic]:
    """A topic: a name (default t0..t9), 1..max_partitions partitions, replication factor 1..max."""
    return st.builds(Topic, names or st.sampled_from([f"t{i}" for i in range(10)]),
                     st.integers(1, max_partitions), st.integers(1, max(1, max_replication_factor)))


@dataclass(frozen=True)
class PlacerCase:
    """One question to a placer (AdminUtils' signature: brokers, partitions, replication factor)."""

    cluster: Cluster
    topic: str
    partitions: int
    replication_factor: int

    def check(self, placement: Mapping[int, Sequence[int]], only: set[str] | None = None) -> Report:
        """The placement invariants (or the ids in `only`) on a placer's answer {partition: [broker, ...]}."""
        assignment = ReplicaAssignment.from_placement(self.topic, placement)
        return check_placement(PlacementSubject(self.cluster, assignment,
                                                replication_factor=self.replication_factor), only)


@st.composite
def placer_cases(draw: st.DrawFn, max_brokers: int = 6, max_partitions: int = 12, racks: str | None = "full",
                 max_racks: int = 3) -> PlacerCase:
    """A cluster (`racks` as for `brokers`; default every broker in a rack) and a topic whose replication factor
    is at most the cluster's size."""
    cluster = draw(clusters(1, max_brokers, racks, max_racks))
    topic = draw(topics(max_partitions, len(cluster)))
    return PlacerCase(cluster, topic.name, topic.partitions, topic.replication_factor)


@dataclass(frozen=True)
class GroupCase:
    """A rebalance's input as an assignor gets it: `partitions_per_topic` (topic -> its PartitionInfos) and
    `subscriptions` (member -> Subscription, with the partitions it owned). `cooperative`: whether the assignor
    under test is (KIP-429: revoked partitions may stay unassigned for one round)."""

    partitions_per_topic: Mapping[str, Sequence[PartitionInfo]]
    subscriptions: Mapping[str, Subscription]

    def check(self, assignment: Mapping[str, Sequence[TopicPartition]], cooperative: bool = False,
              only: set[str] | None = None) -> Report:
        """The assignment invariants (or the ids in `only`) on an assignor's answer {member: [TopicPartition]}."""
        return check_assignment(AssignmentSubject(self.partitions_per_topic, self.subscriptions, assignment,
                                                  cooperative), only)


@st.composite
def groups(draw: st.DrawFn, max_topics: int = 3, max_partitions: int = 6, max_members: int = 4,
           racks: bool = False, ownership: bool = True) -> GroupCase:
    """A consumer group: topics t0.. with 1..max_partitions partitions (those some member subscribes to), members
    c0.. in join order, each subscribing to a non-empty list of the topics (with a client rack r1..r3 when
    `racks`); with `ownership` each member owns some of its subscribed partitions (each partition at most one
    member's: the previous round's assignment) and carries a generation (all the same, or, drawn, some older)."""
    n_topics = draw(st.integers(1, max_topics))
    parts = {f"t{t}": [PartitionInfo(f"t{t}", p) for p in range(draw(st.integers(1, max_partitions)))]
             for t in range(n_topics)}
    names = list(parts)
    members = [f"c{i}" for i in range(draw(st.integers(1, max_members)))]
    subscribed = {m: draw(st.lists(st.sampled_from(names), min_size=1, unique=True)) for m in members}
    # an assignor is given the partitions of the topics some member subscribes to (AbstractPartitionAssignor)
    parts = {t: infos for t, infos in parts.items() if any(t in s for s in subscribed.values())}
    owned: dict[str, list[TopicPartition]] = {m: [] for m in members}
    if ownership:
        for topic, infos in parts.items():
            for info in infos:
                can = [m for m in members if topic in subscribed[m]]
                who = draw(st.sampled_from([None, *can]))
                if who is not None:
                    owned[who].append(info.tp)
    generation = draw(st.integers(1, 5)) if ownership else None
    subs = {}
    for m in members:
        gen = None if generation is None else generation - draw(st.integers(0, 1))
        rack = draw(st.sampled_from(["r1", "r2", "r3"])) if racks else None
        subs[m] = Subscription(tuple(subscribed[m]), owned_partitions=tuple(owned[m]),
                               generation_id=gen if owned[m] else None, rack_id=rack)
    return GroupCase(parts, subs)
