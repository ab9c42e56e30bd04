"""Small Z3 helpers shared by the twins."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import z3


@dataclass
class SymbolicPlacement:
    """Replica positions of a bounded placement, with the parameters and constraints that define them.

    `replicas[p][r]` is the position (0..n-1) of replica r of partition p;
    `rack_of[b]` is the rack index (0..racks-1) of broker b, or None without racks.
    `params` are the free inputs (start index, shift, random draws) a model assigns.
    """

    n: int
    partitions: int
    rf: int
    racks: int  # 0: no rack information
    replicas: list[list[z3.ArithRef]]
    rack_of: list[z3.ArithRef] | None
    params: dict[str, z3.ArithRef] = field(default_factory=dict)
    constraints: list[z3.BoolRef] = field(default_factory=list)
    # Twins that unroll a search loop (the striped placer): true when every search ended within the unrolling
    # (None: no such loop), and the random draws in order as (name, value, bound, used).
    complete: z3.BoolRef | None = None
    draw_order: list[tuple[str, z3.ArithRef, int | z3.ArithRef, z3.BoolRef]] = field(default_factory=list)


def select(values: Sequence[z3.ArithRef | int], index: z3.ArithRef | int) -> z3.ArithRef:
    """values[index] for a symbolic index known to be in range (an If chain, no arrays)."""
    if isinstance(index, int):
        return z3.IntVal(values[index]) if isinstance(values[index], int) else values[index]
    out: z3.ArithRef = z3.IntVal(values[-1]) if isinstance(values[-1], int) else values[-1]
    for i in range(len(values) - 2, -1, -1):
        out = z3.If(index == i, values[i], out)
    return out


def count(conditions: Sequence[z3.BoolRef]) -> z3.ArithRef:
    return z3.Sum([z3.If(c, 1, 0) for c in conditions]) if conditions else z3.IntVal(0)


def bounded_mod(x: z3.ArithRef, n: int, upper: int) -> z3.ArithRef:
    """x mod n for 0 <= x <= upper, without `%`: x - n * #{t >= 1 : x >= t*n}.

    Linear and free of integer division, so bounded problems stay in the
    fragment that Z3 can bit-blast to SAT.
    """
    if n == 1:
        return z3.IntVal(0)
    return x - n * count([x >= t * n for t in range(1, upper // n + 1)])
