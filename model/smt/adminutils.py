"""Symbolic twins of AdminUtils' replica assignment (`reference/placement.py`).

* `rack_unaware_closed_form`: the rack-unaware position of any replica of any
  partition, in closed form over a *symbolic* broker count, start partition,
  start index and shift: exact, but it uses `%` and `/` by the symbolic n.
* `rack_unaware_remainders`: the same positions for one partition, with the two
  remainders that matter ((pid + start) mod n and shift mod (n-1)) as free
  variables. Every value in their ranges is reached by some start index and
  shift, so a property of one partition proved over them holds for every
  cluster size, partition count, start index and shift; and the formulas are
  linear, which Z3 decides.
* `rack_unaware_twin` / `rack_aware_twin`: bounded unrollings for n brokers and
  P partitions, with a symbolic start index and shift (and, rack-aware, a
  symbolic rack layout: the rack-alternated list, the skip rule and the
  candidate counter that followers share are all encoded).
"""

from __future__ import annotations

import z3

from kcheck.model.smt.common import SymbolicPlacement, bounded_mod, count, select


def _params(n: int, start: z3.ArithRef | None, shift: z3.ArithRef | None) -> tuple[z3.ArithRef, z3.ArithRef, list]:
    """Start index and initial shift: random mode draws both from [0, n); fixed mode sets both to one value."""
    start = start if start is not None else z3.Int("start")
    shift = shift if shift is not None else z3.Int("shift")
    return start, shift, [start >= 0, start < n, shift >= 0, shift < n]


def rack_unaware_closed_form(
    n: z3.ArithRef, pid0: z3.ArithRef, start: z3.ArithRef, shift0: z3.ArithRef, pid: z3.ArithRef, r: z3.ArithRef
) -> z3.ArithRef:
    """Position of replica r of partition `pid` when numbering starts at `pid0` (AdminUtils, no racks).

    The shift has grown once per multiple of n in [max(pid0, 1), pid].
    """
    shift = shift0 + pid / n - (z3.If(pid0 > 1, pid0, 1) - 1) / n
    first = (pid + start) % n
    follower = (first + 1 + (shift + r - 1) % (n - 1)) % n
    return z3.If(r == 0, first, follower)


def rack_unaware_remainders(
    n: z3.ArithRef, first: z3.ArithRef, shift_mod: z3.ArithRef, r: z3.ArithRef
) -> tuple[z3.ArithRef, list[z3.BoolRef]]:
    """Position of replica r of one partition, linear in n: first = (pid+start) mod n, shift_mod = shift mod (n-1).

    Needs r < n (RF <= brokers), so shift_mod + (r - 1) < 2(n - 1) and one
    subtraction wraps it; likewise first + 1 + offset < 2n.
    """
    a = shift_mod + r - 1
    offset = z3.If(a < n - 1, a, a - (n - 1))
    t = first + 1 + offset
    pos = z3.If(r == 0, first, z3.If(t < n, t, t - n))
    domain = [first >= 0, first < n, z3.Implies(n >= 2, z3.And(shift_mod >= 0, shift_mod < n - 1))]
    return pos, domain


def rack_unaware_twin(
    n: int, partitions: int, rf: int, start: z3.ArithRef | None = None, shift: z3.ArithRef | None = None
) -> SymbolicPlacement:
    """Bounded unrolling of the rack-unaware path for partitions 0..P-1 (topic creation)."""
    start, shift, constraints = _params(n, start, shift)
    replicas = []
    for pid in range(partitions):
        s = shift + pid // n  # one increment per multiple of n passed
        first = bounded_mod(pid + start, n, pid + n)
        followers = [bounded_mod(first + 1 + bounded_mod(s + j, n - 1, 2 * n + pid), n, 2 * n) for j in range(rf - 1)]
        replicas.append([first, *followers])
    return SymbolicPlacement(n, partitions, rf, 0, replicas, None, {"start": start, "shift": shift}, constraints)


def rack_sequence(sizes: list[z3.ArithRef], n: int) -> list[z3.ArithRef]:
    """Rack index at each position of the rack-alternated list, from the racks' sizes (racks in name order).

    Round t takes the t-th broker of every rack that has more than t, in rack
    order; so the broker of rank j in rack k sits after the earlier rounds and
    the earlier racks of round j.
    """
    racks = len(sizes)
    sequence: list[z3.ArithRef] = [z3.IntVal(0)] * n
    for k in range(racks):
        for j in range(n):
            pos = (z3.Sum([count([sizes[q] > t for q in range(racks)]) for t in range(j)]) if j else 0) + count(
                [sizes[q] > j for q in range(k)])
            for i in range(n):
                sequence[i] = z3.If(z3.And(j < sizes[k], pos == i), k, sequence[i])
    return sequence


def rack_aware_twin(
    n: int,
    partitions: int,
    rf: int,
    racks: int,
    sizes: list[z3.ArithRef] | None = None,
    start: z3.ArithRef | None = None,
    shift: z3.ArithRef | None = None,
) -> SymbolicPlacement:
    """Bounded unrolling of the rack-aware path over `racks` non-empty racks of symbolic sizes.

    Brokers are named by their position in the rack-alternated list (the only
    order the algorithm sees), and rack_of gives each position's rack. Which
    broker ids fill a rack does not change any placement invariant (they are
    all unchanged by renaming brokers), so symbolic sizes cover every layout.
    `replicas` are list positions: map them through the concrete list to compare with the reference.
    """
    start, shift, constraints = _params(n, start, shift)
    if sizes is None:
        sizes = [z3.Int(f"rack_size_{k}") for k in range(racks)]
    constraints += [sz >= 1 for sz in sizes] + [z3.Sum(sizes) == n]
    rack_at = rack_sequence(sizes, n)
    replicas = []
    for pid in range(partitions):
        s = (shift + pid // n) * racks
        s_max = (n + pid // n) * racks
        first = bounded_mod(pid + start, n, pid + n)
        chosen = [first]
        k: z3.ArithRef = z3.IntVal(0)  # the candidate counter, shared by all followers
        for _ in range(rf - 1):
            used_racks = [z3.Or([select(rack_at, c) == q for c in chosen]) for q in range(racks)]
            all_racks_used = z3.And(used_racks)
            picks = []
            # The walk visits every non-leader position within n - 1 candidates, and one is always acceptable.
            for m in range(n - 1):
                walk = bounded_mod(s + k + m, n - 1, s_max + rf * n)  # k < rf * (n - 1)
                b = bounded_mod(first + 1 + walk, n, 2 * n)
                rack = select(rack_at, b)
                rack_ok = z3.Or(z3.Not(z3.Or([z3.And(rack == q, used_racks[q]) for q in range(racks)])), all_racks_used)
                broker_ok = z3.And([b != c for c in chosen])
                picks.append((z3.And(rack_ok, broker_ok), b, m + 1))
            pick: z3.ArithRef = picks[-1][1]
            step: z3.ArithRef = z3.IntVal(picks[-1][2])
            for ok, b, m1 in reversed(picks[:-1]):
                pick, step = z3.If(ok, b, pick), z3.If(ok, m1, step)
            chosen.append(pick)
            k = k + step
        replicas.append(chosen)
    params = {"start": start, "shift": shift} | {f"rack_size_{q}": sz for q, sz in enumerate(sizes)}
    return SymbolicPlacement(n, partitions, rf, racks, replicas, rack_at, params, constraints)
