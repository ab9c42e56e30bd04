"""Consumer-assignment invariants: what one rebalance's output must (hard) or should (soft) satisfy.

Sources, in apache/kafka at 1eb7644349: the `ConsumerPartitionAssignor` contract and
`AbstractStickyAssignorTest.verifyValidityAndBalance` (complete, valid), the `StickyAssignor` javadoc
(balanced; stickiness), `CooperativeStickyAssignorTest.verifyValidityAndBalance` and KIP-429 (a
partition is revoked in one rebalance and assigned in the follow-up one), KIP-881 (rack-aware
assignment). The soft quality goals are measured against the best any assignment could do, computed
as min-cost flows with networkx:

* optimally-balanced: the count vectors a complete assignment can reach are the integer points of a
  base polyhedron (f(S) = partitions some member of S can take); its decreasingly-minimal point
  minimises max, maximises min and minimises the sum of squares at once (Frank and Murota, "Discrete
  decreasing minimization"), so the sum of squares, minimised with unit arcs of cost 2k+1, defines
  "the most balanced" unambiguously. Kafka's own `balanced` only forbids direct transfers, so it
  accepts assignments that a chain of moves would even out (see the tests).
* sticky: the fewest moves any assignment with the *same per-member counts* needs (as balanced as
  this one, in the strongest sense), against the moves this one makes.
* rack-quality: the most partitions that can sit in a replica's rack with the same per-member counts.

The soft measures all range over the partitions the assignment places validly (each once), so they
stay defined while `complete` or `valid` fail; those failures are reported by the hard checks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import networkx as nx

from kcheck.invariants.registry import Report, Severity, Violation, check_all, register
from kcheck.model.group import PartitionInfo, Subscription
from kcheck.model.vocabulary import TopicPartition


@dataclass(frozen=True)
class AssignmentSubject:
    """One rebalance: what the assignor was given and what it returned.

    `owned_partitions` of each subscription is the member's assignment when the rebalance began (the
    previous one); eager members revoke it before they send their subscription, so a caller checking
    an eager round fills it in for the stickiness measure. `cooperative` marks a cooperative round
    (KIP-429), where partitions being revoked may be left unassigned until the follow-up round.
    """

    partitions_per_topic: Mapping[str, Sequence[PartitionInfo]]
    subscriptions: Mapping[str, Subscription]
    assignment: Mapping[str, Sequence[TopicPartition]]
    cooperative: bool = False

    @cached_property
    def infos(self) -> dict[TopicPartition, PartitionInfo]:
        return {TopicPartition(p.topic, p.partition): p for ps in self.partitions_per_topic.values() for p in ps}

    @cached_property
    def eligible(self) -> dict[str, frozenset[str]]:
        """Member -> the topics it subscribes to that exist (Kafka drops topics without metadata)."""
        return {m: frozenset(t for t in s.topics if t in self.partitions_per_topic)
                for m, s in self.subscriptions.items()}

    @cached_property
    def subscribed_partitions(self) -> tuple[TopicPartition, ...]:
        topics = set().union(*self.eligible.values()) if self.eligible else set()
        return tuple(sorted(tp for tp in self.infos if tp.topic in topics))

    @cached_property
    def holders(self) -> dict[TopicPartition, list[str]]:
        """Partition -> every member whose list names it (a member listing it twice appears twice)."""
        out: dict[TopicPartition, list[str]] = {}
        for m, tps in self.assignment.items():
            for tp in tps:
                out.setdefault(tp, []).append(m)
        return out

    def is_valid(self, member: str, tp: TopicPartition) -> bool:
        return member in self.subscriptions and tp in self.infos and tp.topic in self.eligible[member]

    @cached_property
    def placed(self) -> dict[TopicPartition, str]:
        """Each validly assigned partition with its (first valid) holder: what the soft measures range over."""
        out: dict[TopicPartition, str] = {}
        for m, tps in self.assignment.items():
            for tp in tps:
                if tp not in out and self.is_valid(m, tp):
                    out[tp] = m
        return out

    @cached_property
    def counts(self) -> dict[str, int]:
        c = Counter(self.placed.values())
        return {m: c.get(m, 0) for m in self.subscriptions}

    @cached_property
    def owners(self) -> dict[TopicPartition, list[str]]:
        """Partition -> the current members that list it in owned_partitions."""
        out: dict[TopicPartition, list[str]] = {}
        for m, s in self.subscriptions.items():
            for tp in s.owned_partitions:
                out.setdefault(tp, []).append(m)
        return out

    @cached_property
    def previous_owner(self) -> dict[TopicPartition, str]:
        """The member a partition would stay with: it owned it and still subscribes to its topic.

        Two claimants: the higher generation wins; equal generations leave it with nobody, as
        `AbstractStickyAssignor.allSubscriptionsEqual` does (KAFKA-12984).
        """
        out: dict[TopicPartition, str] = {}
        for tp, ms in self.owners.items():
            ms = [m for m in dict.fromkeys(ms) if tp in self.infos and tp.topic in self.eligible[m]]
            if not ms:
                continue
            gen = {m: _generation(self.subscriptions[m]) for m in ms}
            top = max(gen.values())
            best = [m for m in ms if gen[m] == top]
            if len(best) == 1:
                out[tp] = best[0]
        return out

    @cached_property
    def withheld(self) -> tuple[TopicPartition, ...]:
        """Cooperative round: subscribed partitions assigned to nobody because their owner is revoking them."""
        if not self.cooperative:
            return ()
        return tuple(tp for tp in self.subscribed_partitions if tp not in self.holders and tp in self.owners)


def _generation(s: Subscription) -> int:
    return -1 if s.generation_id is None else s.generation_id


def _tps(tps: Iterable[TopicPartition]) -> str:
    return ", ".join(str(tp) for tp in tps)


def check_assignment(subject: AssignmentSubject, only: set[str] | None = None) -> Report:
    """Check one rebalance against every assignment invariant (or the ids in `only`)."""
    return check_all(subject, "assignment", only)


# --- hard: complete, valid ------------------------------------------------------------------------------


@register("assignment.complete", "Every partition of a subscribed topic is assigned exactly once", Severity.HARD,
          "ConsumerPartitionAssignor contract; AbstractStickyAssignorTest.verifyValidityAndBalance; "
          "KIP-429 (cooperative: revoked partitions are assigned in the follow-up rebalance)", "assignment")
def complete(s: AssignmentSubject) -> list[Violation]:
    out = []
    for tp in s.subscribed_partitions:
        members = s.holders.get(tp, [])
        subscribers = sorted(m for m, ts in s.eligible.items() if tp.topic in ts)
        if len(members) > 1:
            out.append(Violation(
                "assignment.complete", Severity.HARD, f"partition {tp}",
                f"partition {tp} is assigned {len(members)} times: to {', '.join(members)}",
                {"partition": str(tp), "members": members, "count": len(members), "excess": len(members) - 1},
            ))
        elif not members and tp not in s.withheld:
            why = " (a cooperative round may only withhold a partition its owner is revoking; nobody owns it)" \
                if s.cooperative else ""
            out.append(Violation(
                "assignment.complete", Severity.HARD, f"partition {tp}",
                f"partition {tp} is assigned to no member, though {', '.join(subscribers)} "
                f"{'subscribes' if len(subscribers) == 1 else 'subscribe'} to {tp.topic}{why}",
                {"partition": str(tp), "members": [], "subscribers": subscribers, "count": 0, "excess": -1},
            ))
    return out


@register("assignment.valid", "Members get only existing partitions of topics they subscribe to", Severity.HARD,
          "AbstractStickyAssignorTest.verifyValidityAndBalance; ConsumerCoordinator "
          "(an assignment that does not match the subscription forces a rejoin)", "assignment")
def valid(s: AssignmentSubject) -> list[Violation]:
    out = []
    for m, tps in s.assignment.items():
        if m not in s.subscriptions:
            if tps:
                out.append(Violation(
                    "assignment.valid", Severity.HARD, f"member {m}",
                    f"member {m} is not in the group but is assigned {_tps(tps)}",
                    {"member": m, "partitions": [str(tp) for tp in tps], "reason": "not a member", "excess": len(tps)},
                ))
            continue
        missing = [tp for tp in tps if tp not in s.infos]
        foreign = [tp for tp in tps if tp in s.infos and tp.topic not in s.eligible[m]]
        if missing:
            out.append(Violation(
                "assignment.valid", Severity.HARD, f"member {m}",
                f"member {m} is assigned {_tps(missing)}, which do(es) not exist",
                {"member": m, "partitions": [str(tp) for tp in missing], "reason": "no such partition",
                 "excess": len(missing)},
            ))
        if foreign:
            out.append(Violation(
                "assignment.valid", Severity.HARD, f"member {m}",
                f"member {m} is assigned {_tps(foreign)} but subscribes only to "
                f"[{', '.join(s.subscriptions[m].topics)}]",
                {"member": m, "partitions": [str(tp) for tp in foreign], "reason": "topic not subscribed",
                 "subscribed": list(s.subscriptions[m].topics), "excess": len(foreign)},
            ))
    return out


# --- soft: balance --------------------------------------------------------------------------------------


def _withholding(s: AssignmentSubject) -> str | None:
    if s.withheld:
        return (f"cooperative round withholding {len(s.withheld)} partition(s) being revoked "
                "(balance is judged on the follow-up round)")
    return None


@register("assignment.balanced", "Counts differ by at most 1, or no member with 2+ fewer could take a partition",
          Severity.SOFT, "StickyAssignor javadoc ('as balanced as possible'); AbstractStickyAssignor.isBalanced",
          "assignment", _withholding)
def balanced(s: AssignmentSubject) -> list[Violation]:
    counts = s.counts
    if not counts:
        return []
    # Equal subscriptions (compared on topics that exist, which are all an assignor can hand out): max - min <= 1.
    if len(set(s.eligible.values())) == 1:
        hi = max(counts, key=lambda m: (counts[m], m))
        lo = min(counts, key=lambda m: (counts[m], m))
        if counts[hi] - counts[lo] <= 1:
            return []
        return [Violation(
            "assignment.balanced", Severity.SOFT, f"member {hi}",
            f"member {hi} has {counts[hi]} partitions and member {lo} {counts[lo]}: "
            "more than 1 apart though all subscriptions are equal",
            {"member": hi, "count": counts[hi], "min_member": lo, "min_count": counts[lo],
             "excess": counts[hi] - counts[lo] - 1},
        )]
    # Unequal subscriptions: a fuller member is out of balance when a member with 2+ fewer
    # partitions subscribes to the topic of one of its partitions (it could take that one).
    out = []
    topics_of: dict[str, set[str]] = {}
    for tp, m in s.placed.items():
        topics_of.setdefault(m, set()).add(tp.topic)
    for full in sorted(counts, key=lambda m: (-counts[m], m)):
        takers = {m: counts[m] for m in sorted(counts)
                  if counts[m] + 2 <= counts[full] and s.eligible[m] & topics_of.get(full, set())}
        if takers:
            topics = sorted(set().union(*(s.eligible[m] for m in takers)) & topics_of[full])
            out.append(Violation(
                "assignment.balanced", Severity.SOFT, f"member {full}",
                f"member {full} has {counts[full]} partitions; "
                + ", ".join(f"member {m} ({n})" for m, n in takers.items())
                + f" could take one of its partitions of {', '.join(topics)}",
                {"member": full, "count": counts[full], "could_take": takers, "topics": topics,
                 "excess": counts[full] - min(takers.values()) - 1},
            ))
    return out


_S: tuple[str] = ("source",)
_Z: tuple[str] = ("sink",)


def _min_cost_flow(arcs: Iterable[tuple[Hashable, Hashable, int, int]], amount: int) -> int:
    """Cost of a min-cost flow of `amount` from _S to _Z over (tail, head, capacity, cost) arcs."""
    if amount == 0:
        return 0
    g = nx.MultiDiGraph()
    g.add_node(_S, demand=-amount)
    g.add_node(_Z, demand=amount)
    for u, v, cap, cost in arcs:
        if cap > 0:
            g.add_edge(u, v, capacity=cap, weight=cost)
    cost, _ = nx.network_simplex(g)
    return cost


def _topic_sizes(s: AssignmentSubject) -> Counter[str]:
    return Counter(tp.topic for tp in s.placed)


def _lowest_max_load(s: AssignmentSubject, sizes: Mapping[str, int]) -> int:
    """The least h such that the placed partitions fit with at most h per member (max-flow, binary search)."""
    total = sum(sizes.values())
    g = nx.DiGraph()
    for t, n in sizes.items():
        g.add_edge(_S, ("topic", t), capacity=n)
        for m, ts in s.eligible.items():
            if t in ts:
                g.add_edge(("topic", t), ("member", m), capacity=n)
    members = [m for m in s.eligible if g.has_node(("member", m))]
    lo, hi = -(-total // max(1, len(members))), total
    while lo < hi:
        mid = (lo + hi) // 2
        for m in members:
            g.add_edge(("member", m), _Z, capacity=mid)
        if nx.maximum_flow_value(g, _S, _Z) == total:
            hi = mid
        else:
            lo = mid + 1
    return lo


def optimal_counts(s: AssignmentSubject) -> dict[str, int]:
    """Per-member counts of a most balanced assignment of the placed partitions (decreasingly minimal).

    Min-cost flow source -> topic (its partitions) -> subscribing member -> sink, where a member's
    k-th partition costs 2k+1 (= k^2 - (k-1)^2), so the cost is the sum of squared counts. Members need
    no more than the lowest feasible maximum load, which bounds the unit arcs.
    """
    sizes = _topic_sizes(s)
    total = sum(sizes.values())
    out = dict.fromkeys(s.subscriptions, 0)
    if total == 0:
        return out
    subscribed = set(s.eligible.values())
    if len(subscribed) == 1 and set(sizes) <= next(iter(subscribed)):
        # Equal subscriptions: the optimum is the even split (callers compare sorted counts only),
        # which spares large groups a flow over every member.
        q, r = divmod(total, len(s.eligible))
        return out | {m: q + (i < r) for i, m in enumerate(s.eligible)}
    h = _lowest_max_load(s, sizes)
    arcs: list[tuple[Hashable, Hashable, int, int]] = []
    for t, n in sizes.items():
        arcs.append((_S, ("topic", t), n, 0))
        arcs += [(("topic", t), ("member", m), n, 0) for m, ts in s.eligible.items() if t in ts]
    for m, ts in s.eligible.items():
        cap = min(h, sum(sizes.get(t, 0) for t in ts))
        arcs += [(("member", m), _Z, 1, 2 * k + 1) for k in range(cap)]
    g = nx.MultiDiGraph()
    g.add_node(_S, demand=-total)
    g.add_node(_Z, demand=total)
    for u, v, cap, cost in arcs:
        g.add_edge(u, v, capacity=cap, weight=cost)
    _, flow = nx.network_simplex(g)
    for m in s.eligible:
        out[m] = sum(flow.get(("member", m), {}).get(_Z, {}).values())
    return out


@register("assignment.optimally-balanced", "Counts are as balanced as any assignment could make them",
          Severity.SOFT, "ours: the decreasingly-minimal count vector (min-cost flow); StickyAssignor javadoc "
          "('as balanced as possible')", "assignment", _withholding)
def optimally_balanced(s: AssignmentSubject) -> list[Violation]:
    counts = s.counts
    best = optimal_counts(s)
    have = sorted(counts.values(), reverse=True)
    want = sorted(best.values(), reverse=True)
    if have == want:
        return []
    # Both vectors have the same sum; the optimum is decreasingly minimal, so at the first rank where
    # they differ this assignment has more.
    rank = next(i for i, (a, b) in enumerate(zip(have, want, strict=True)) if a != b)
    member = min(m for m in counts if counts[m] == have[rank])
    return [Violation(
        "assignment.optimally-balanced", Severity.SOFT, f"member {member}",
        f"member {member} has {have[rank]} partitions where the most balanced assignment has {want[rank]} at "
        f"that rank: counts {have} against the achievable {want}",
        {"member": member, "count": have[rank], "best_count": want[rank], "counts": have, "best_counts": want,
         "spread": have[0] - have[-1], "best_spread": want[0] - want[-1],
         "sum_of_squares": sum(n * n for n in have), "best_sum_of_squares": sum(n * n for n in want),
         "excess": sum(max(0, a - b) for a, b in zip(have, want, strict=True))},
    )]


# --- soft: stickiness -----------------------------------------------------------------------------------


class Movement(NamedTuple):
    previously_owned: int  # placed partitions whose previous owner still subscribes to their topic
    moved: int  # ... that this assignment gives to someone else
    fewest_moves: int  # ... that any assignment with the same per-member counts must give to someone else
    moved_partitions: tuple[TopicPartition, ...]


def movement(s: AssignmentSubject) -> Movement:
    """Moves against the fewest possible with the same per-member counts.

    Min-cost flow source -> topic -> member -> sink (capacity: the member's count). Between a topic
    and a member run two arcs: one of cost -1 with capacity = the member's previously owned partitions
    of the topic (kept), one of cost 0 for any partition of it. Partitions of one topic are
    interchangeable for the counts, so the optimum keeps -cost partitions and some real assignment
    keeps exactly that many.
    """
    prev = {tp: m for tp, m in s.previous_owner.items() if tp in s.placed}
    moved = tuple(sorted(tp for tp, m in prev.items() if s.placed[tp] != m))
    sizes = _topic_sizes(s)
    kept = Counter((tp.topic, m) for tp, m in prev.items())
    arcs: list[tuple[Hashable, Hashable, int, int]] = []
    for t, n in sizes.items():
        arcs.append((_S, ("topic", t), n, 0))
        for m, ts in s.eligible.items():
            if t in ts:
                arcs.append((("topic", t), ("member", m), n, 0))
                arcs.append((("topic", t), ("keep", t, m), kept[t, m], -1))
                arcs.append((("keep", t, m), ("member", m), kept[t, m], 0))
    arcs += [(("member", m), _Z, n, 0) for m, n in s.counts.items()]
    best_kept = -_min_cost_flow(arcs, sum(sizes.values()))
    return Movement(len(prev), len(moved), len(prev) - best_kept, moved)


def _nothing_owned(s: AssignmentSubject) -> str | None:
    return None if s.previous_owner else "no member owned a partition it still subscribes to"


@register("assignment.sticky", "No more partitions move than the same per-member counts require",
          Severity.SOFT, "StickyAssignor javadoc ('preserves as many existing assignments as possible'); "
          "KIP-54", "assignment", _nothing_owned)
def sticky(s: AssignmentSubject) -> list[Violation]:
    mv = movement(s)
    if mv.moved <= mv.fewest_moves:
        return []
    return [Violation(
        "assignment.sticky", Severity.SOFT, "group",
        f"{mv.moved} of {mv.previously_owned} previously owned partition(s) moved ({_tps(mv.moved_partitions)}); "
        f"{mv.fewest_moves} move(s) suffice for the same per-member counts",
        {"moved": mv.moved, "bound": mv.fewest_moves, "previously_owned": mv.previously_owned,
         "moved_partitions": [str(tp) for tp in mv.moved_partitions], "withheld": len(s.withheld),
         "excess": mv.moved - mv.fewest_moves},
    )]


# --- hard: cooperative safety ---------------------------------------------------------------------------


def _not_cooperative(s: AssignmentSubject) -> str | None:
    return None if s.cooperative else "not a cooperative round (eager members revoke everything first)"


@register("assignment.cooperative-safety", "No partition goes to a new owner in the round it is revoked",
          Severity.HARD, "KIP-429; CooperativeStickyAssignorTest.verifyValidityAndBalance; "
          "ConsumerCoordinator.validateCooperativeAssignment", "assignment", _not_cooperative)
def cooperative_safety(s: AssignmentSubject) -> list[Violation]:
    out = []
    for tp, members in sorted(s.holders.items()):
        for new in dict.fromkeys(members):
            old = [m for m in s.owners.get(tp, []) if m != new]
            if old:
                out.append(Violation(
                    "assignment.cooperative-safety", Severity.HARD, f"partition {tp}",
                    f"partition {tp} is assigned to {new} in the round {', '.join(old)} still own(s) it",
                    {"partition": str(tp), "new_owner": new, "previous_owners": old, "excess": len(old)},
                ))
    return out


def check_two_rounds(round1: AssignmentSubject, round2: AssignmentSubject) -> list[Violation]:
    """The hand-over between a cooperative round and its follow-up: never two owners of a partition.

    Between the rounds a partition is held by whoever round 1 assigned it to and by whoever lists it
    as owned when joining round 2; those must be one member at most, and round 2's owners must hold
    only what round 1 gave them (an owner that kept a revoked partition would share it with its next
    assignee).
    """
    given: dict[TopicPartition, list[str]] = {}
    for m, tps in round1.assignment.items():
        for tp in tps:
            given.setdefault(tp, []).append(m)
    out = []
    for tp in sorted(set(given) | set(round2.owners)):
        r1 = list(dict.fromkeys(given.get(tp, [])))
        r2 = list(dict.fromkeys(round2.owners.get(tp, [])))
        holders = list(dict.fromkeys(r1 + r2))
        if len(holders) > 1:
            out.append(Violation(
                "assignment.cooperative-safety", Severity.HARD, f"partition {tp}",
                f"partition {tp} has {len(holders)} owners across the hand-over: assigned to "
                f"{', '.join(r1) or 'nobody'} in round 1, owned by {', '.join(r2) or 'nobody'} in round 2",
                {"partition": str(tp), "round1_assigned": r1, "round2_owners": r2, "excess": len(holders) - 1},
            ))
        elif r2 and not r1:
            out.append(Violation(
                "assignment.cooperative-safety", Severity.HARD, f"partition {tp}",
                f"partition {tp} is still owned by {r2[0]} in round 2, though round 1 revoked it",
                {"partition": str(tp), "round1_assigned": [], "round2_owners": r2, "excess": 1},
            ))
    return out


# --- soft: rack quality ---------------------------------------------------------------------------------


def _racks(info: PartitionInfo) -> frozenset[str]:
    return frozenset(b.rack for b in info.replicas if b.rack)


class RackPlacement(NamedTuple):
    partitions: int  # placed partitions
    matched: int  # ... on a member whose client.rack holds one of its replicas
    best: int  # the most any assignment with the same per-member counts can match


def rack_placement(s: AssignmentSubject) -> RackPlacement:
    """Rack-matched partitions against the best with the same per-member counts.

    Min-cost flow source -> (topic, replica racks) class -> subscribing member -> sink (its count),
    cost -1 where the member's rack is among the class's racks. A member without `client.rack` never
    matches (Kafka's racksMismatch lets it take anything, but nothing it reads is rack-local).
    """
    rack = {m: sub.rack_id for m, sub in s.subscriptions.items() if sub.rack_id}
    classes = Counter((tp.topic, _racks(s.infos[tp])) for tp in s.placed)
    matched = sum(1 for tp, m in s.placed.items() if rack.get(m) in _racks(s.infos[tp]))
    arcs: list[tuple[Hashable, Hashable, int, int]] = []
    for (t, racks), n in classes.items():
        arcs.append((_S, ("class", t, racks), n, 0))
        arcs += [(("class", t, racks), ("member", m), n, -1 if rack.get(m) in racks else 0)
                 for m, ts in s.eligible.items() if t in ts]
    arcs += [(("member", m), _Z, n, 0) for m, n in s.counts.items()]
    return RackPlacement(len(s.placed), matched, -_min_cost_flow(arcs, len(s.placed)))


def _racks_missing(s: AssignmentSubject) -> str | None:
    if not any(sub.rack_id for sub in s.subscriptions.values()):
        return "no member has a rack (client.rack)"
    if not any(_racks(p) for p in s.infos.values()):
        return "no partition has a replica with a rack"
    return None


@register("assignment.rack-quality", "As many partitions sit in a replica's rack as the counts allow",
          Severity.SOFT, "KIP-881 (rack-aware assignment); AbstractStickyAssignor.RackInfo", "assignment",
          _racks_missing)
def rack_quality(s: AssignmentSubject) -> list[Violation]:
    rp = rack_placement(s)
    if rp.matched >= rp.best:
        return []
    return [Violation(
        "assignment.rack-quality", Severity.SOFT, "group",
        f"{rp.matched} of {rp.partitions} partition(s) are on a member in a replica's rack "
        f"({rp.matched / rp.partitions:.0%}); {rp.best} ({rp.best / rp.partitions:.0%}) are achievable "
        "with the same per-member counts",
        {"matched": rp.matched, "best": rp.best, "partitions": rp.partitions,
         "share": round(rp.matched / rp.partitions, 4), "best_share": round(rp.best / rp.partitions, 4),
         "excess": rp.best - rp.matched},
    )]


def renamed(s: AssignmentSubject, names: Mapping[str, str]) -> AssignmentSubject:
    """The same subject with members renamed (metamorphic tests; names must be a bijection)."""
    return AssignmentSubject(
        s.partitions_per_topic,
        {names.get(m, m): sub for m, sub in s.subscriptions.items()},
        {names.get(m, m): tps for m, tps in s.assignment.items()},
        s.cooperative,
    )


__all__ = [
    "AssignmentSubject", "Movement", "RackPlacement", "check_assignment", "check_two_rounds", "movement",
    "optimal_counts", "rack_placement", "renamed",
]
