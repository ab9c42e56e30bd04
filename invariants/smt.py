"""Z3 forms of the placement invariants: twins of the scalar checks in `invariants/placement.py`.

Each form takes a `SymbolicPlacement` and the number of leading partitions to
judge, and returns a Z3 Bool that is true exactly when the scalar check would
report at least one violation for that placement. Limits that depend only on
concrete sizes are computed by the scalar code's own `balance_limits`, so both
sides round the same floats; a limit that depends on a symbolic count (the
followers of a leader) is a table over the count's possible values.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from kcheck.invariants.placement import BalanceSettings, balance_limits
from kcheck.model.smt.common import SymbolicPlacement, count, select

ViolationForm = Callable[[SymbolicPlacement, int, BalanceSettings], z3.BoolRef]


def _outside(value: z3.ArithRef, lower: int, upper: int) -> z3.BoolRef:
    return z3.Or(value < lower, value > upper)


def distinct_brokers(sp: SymbolicPlacement, partitions: int, st: BalanceSettings) -> z3.BoolRef:
    reps = sp.replicas[:partitions]
    return z3.Or([row[i] == row[j] for row in reps for i in range(len(row)) for j in range(i + 1, len(row))] or
                 [z3.BoolVal(False)])


def leader_spread(sp: SymbolicPlacement, partitions: int, st: BalanceSettings) -> z3.BoolRef:
    lower, upper = balance_limits(partitions / sp.n, st.leader_threshold, st.margin)
    leaders = [row[0] for row in sp.replicas[:partitions]]
    return z3.Or([_outside(count([x == b for x in leaders]), lower, upper) for b in range(sp.n)])


def replica_spread(sp: SymbolicPlacement, partitions: int, st: BalanceSettings) -> z3.BoolRef:
    lower, upper = balance_limits(partitions * sp.rf / sp.n, st.replica_threshold, st.margin)
    cells = [x for row in sp.replicas[:partitions] for x in row]
    return z3.Or([_outside(count([x == b for x in cells]), lower, upper) for b in range(sp.n)])


def _rack(sp: SymbolicPlacement, position: z3.ArithRef) -> z3.ArithRef:
    assert sp.rack_of is not None
    return select(sp.rack_of, position)


def rack_diversity(sp: SymbolicPlacement, partitions: int, st: BalanceSettings) -> z3.BoolRef:
    need = min(sp.rf, sp.racks)
    out = []
    for row in sp.replicas[:partitions]:
        racks = [_rack(sp, x) for x in row]
        spanned = count([z3.Or([r == k for r in racks]) for k in range(sp.racks)])
        out.append(spanned < need)
    return z3.Or(out)


def rack_distribution(sp: SymbolicPlacement, partitions: int, st: BalanceSettings) -> z3.BoolRef:
    """RF > racks: some rack holds >= 2 more replicas than another rack that still has a free broker."""
    assert sp.rack_of is not None
    size = [count([r == k for r in sp.rack_of]) for k in range(sp.racks)]
    out = []
    for row in sp.replicas[:partitions]:
        racks = [_rack(sp, x) for x in row]
        per = [count([r == k for r in racks]) for k in range(sp.racks)]
        out += [z3.And(per[a] >= per[b] + 2, per[b] < size[b])
                for a in range(sp.racks) for b in range(sp.racks) if a != b]
    return z3.Or(out or [z3.BoolVal(False)])


def follower_spread(sp: SymbolicPlacement, partitions: int, st: BalanceSettings) -> z3.BoolRef:
    """For each broker that leads v >= 1 partitions, its v*(RF-1) follower slots over the other n-1 brokers."""
    rows = sp.replicas[:partitions]
    # limits for every possible number of led partitions, computed by the scalar code
    table = {v: balance_limits(v * (sp.rf - 1) / (sp.n - 1), st.follower_threshold, st.margin)
             for v in range(1, partitions + 1)}
    out = []
    for b in range(sp.n):
        led = count([row[0] == b for row in rows])
        followers = {x: count([z3.And(row[0] == b, y == x) for row in rows for y in row[1:]])
                     for x in range(sp.n) if x != b}
        for v, (lower, upper) in table.items():
            out.append(z3.And(led == v, z3.Or([_outside(f, lower, upper) for f in followers.values()])))
    return z3.Or(out or [z3.BoolVal(False)])


FORMS: dict[str, ViolationForm] = {
    "placement.distinct-brokers": distinct_brokers,
    "placement.leader-spread": leader_spread,
    "placement.replica-spread": replica_spread,
    "placement.rack-diversity": rack_diversity,
    "placement.rack-distribution": rack_distribution,
    "placement.follower-spread": follower_spread,
}


def applies(invariant: str, n: int, rf: int, racks: int) -> bool:
    """Whether the scalar check would judge a placement of this shape (its `not_applicable` is None)."""
    if invariant == "placement.rack-diversity":
        return racks > 0
    if invariant == "placement.rack-distribution":
        return racks > 0 and rf > racks
    if invariant == "placement.follower-spread":
        return n >= 2
    return True
