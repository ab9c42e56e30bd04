"""Fast decisions for the three soft assignment checks that run min-cost flows, for sweeps of small groups.

`optimally-balanced`, `sticky` and `rack-quality` (`invariants/assignment.py`) compare an assignment with
the best achievable one, found by networkx flows (0.2-0.5 ms each on a small group: most of a sweep's
time otherwise). Here each is decided in two steps:

1. A cheap sufficient condition (`evenly_spread`, `unavoidable_moves`, `racks_matched_where_possible`)
   proves from counts alone that the check finds nothing; the argument is in each docstring.
2. Otherwise the best achievable value is taken from the registry's own measure (`optimal_counts`,
   `movement`, `rack_placement`), memoised under a key holding exactly what that measure reads, with
   members in sorted order: each is an optimum of a flow whose value does not depend on member names
   (for the balanced counts, their sorted form is unique: the square-sum minimisers of a base polyhedron
   are its decreasingly-minimal points, Frank and Murota). The decision is the check's own comparison.

The sweep records a violation's where/message/detail from the registry's check itself and stops if the
check disagrees with the decision here; tests/test_sweep_groups.py compares both on random subjects.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from typing import TypeVar, cast

from kcheck.invariants.assignment import AssignmentSubject, movement, optimal_counts, rack_placement
from kcheck.model.vocabulary import TopicPartition

MEMO_LIMIT = 500_000  # entries; a bounded space needs far fewer, an unbounded one must not eat the executor
_T = TypeVar("_T")


def _racks(s: AssignmentSubject, tp: TopicPartition) -> frozenset[str]:
    return frozenset(b.rack for b in s.infos[tp].replicas if b.rack)


def evenly_spread(s: AssignmentSubject) -> bool:
    """optimally-balanced finds nothing when member counts are at most 1 apart.

    With a fixed total and member count, the vectors whose entries differ by at most 1 share one sorted
    form, the unique minimum of the sum of squares over all integer vectors. This assignment is feasible,
    so the check's optimum (which minimises the sum of squares over feasible vectors) has that sorted form.
    """
    counts = s.counts.values()
    return not counts or max(counts) - min(counts) <= 1


def unavoidable_moves(s: AssignmentSubject) -> bool:
    """sticky finds nothing when every move is forced by the member counts.

    A member that previously owned k (still placed) partitions and now has c can keep at most min(k, c),
    so any assignment with these counts moves at least sum(max(0, k - c)). No more moves than that means
    no more than the fewest possible.
    """
    placed = s.placed
    previous = [(tp, m) for tp, m in s.previous_owner.items() if tp in placed]
    moved = sum(1 for tp, m in previous if placed[tp] != m)
    if not moved:
        return True
    counts = s.counts
    owned = Counter(m for _, m in previous)
    return moved <= sum(max(0, k - counts[m]) for m, k in owned.items())


def racks_matched_where_possible(s: AssignmentSubject) -> bool:
    """rack-quality finds nothing when no partition off its replicas' racks has a subscriber in them.

    A partition can only be rack-local on a member subscribed to its topic in one of its replicas' racks;
    if each one that could be is, no assignment matches more.
    """
    rack = {m: sub.rack_id for m, sub in s.subscriptions.items() if sub.rack_id}
    for tp, m in s.placed.items():
        racks = _racks(s, tp)
        if rack.get(m) in racks:
            continue
        if any(rack.get(o) in racks for o, topics in s.eligible.items() if tp.topic in topics):
            return False
    return True


class FastChecks:
    """Decides the flow-based soft checks; one instance per executor process keeps its memo across batches."""

    def __init__(self) -> None:
        self.memo: dict[Hashable, object] = {}
        self.flows = 0  # measures actually computed (memo misses), for the benchmark

    def _best(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """compute(), memoised; every key starts with its measure's name, so its value has that measure's type."""
        value = self.memo.get(key)
        if value is None:
            if len(self.memo) >= MEMO_LIMIT:
                self.memo.clear()
            value = self.memo[key] = compute()
            self.flows += 1
        return cast(_T, value)

    def violated(self, invariant: str, s: AssignmentSubject) -> bool | None:
        """Whether the registry's check of `invariant` would report a violation; None: no fast form."""
        decide = _DECIDERS.get(invariant)
        return None if decide is None else decide(self, s)

    def optimally_balanced(self, s: AssignmentSubject) -> bool:
        if evenly_spread(s):
            return False
        sizes = Counter(tp.topic for tp in s.placed)
        key = ("optimally-balanced", tuple(sorted(sizes.items())),
               tuple(sorted(tuple(sorted(e)) for e in s.eligible.values())))
        best = self._best(key, lambda: tuple(sorted(optimal_counts(s).values(), reverse=True)))
        return tuple(sorted(s.counts.values(), reverse=True)) != best

    def sticky(self, s: AssignmentSubject) -> bool:
        if unavoidable_moves(s):
            return False
        placed = s.placed
        previous = {tp: m for tp, m in s.previous_owner.items() if tp in placed}
        moved = sum(1 for tp, m in previous.items() if placed[tp] != m)
        sizes = Counter(tp.topic for tp in placed)
        kept = Counter((tp.topic, m) for tp, m in previous.items())
        topics = sorted(sizes)
        members = sorted((tuple(sorted(s.eligible[m])), s.counts[m], tuple(kept[t, m] for t in topics))
                         for m in s.subscriptions)
        key = ("sticky", tuple(sorted(sizes.items())), tuple(members))
        return moved > self._best(key, lambda: movement(s).fewest_moves)

    def rack_quality(self, s: AssignmentSubject) -> bool:
        if racks_matched_where_possible(s):
            return False
        rack = {m: sub.rack_id for m, sub in s.subscriptions.items() if sub.rack_id}
        classes = Counter((tp.topic, tuple(sorted(_racks(s, tp)))) for tp in s.placed)
        matched = sum(1 for tp, m in s.placed.items() if rack.get(m) in _racks(s, tp))
        members = sorted((tuple(sorted(s.eligible[m])), rack.get(m) or "", s.counts[m]) for m in s.subscriptions)
        key = ("rack-quality", tuple(sorted(classes.items())), tuple(members))
        return matched < self._best(key, lambda: rack_placement(s).best)


_DECIDERS: dict[str, Callable[[FastChecks, AssignmentSubject], bool]] = {
    "assignment.optimally-balanced": FastChecks.optimally_balanced,
    "assignment.sticky": FastChecks.sticky,
    "assignment.rack-quality": FastChecks.rack_quality,
}
