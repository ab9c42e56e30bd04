"""Symbolic (Z3) twins of Kafka's placement algorithms.

A twin builds Z3 terms for the broker *position* of every replica (brokers are
0..n-1 in the order the placer receives them, so distinct positions are
distinct brokers) from symbolic parameters: start index, shift, random draws
and rack layouts. `model.smt` imports nothing of the project; the twins are
tested against the concrete reference in `tests/test_smt_twins.py`.
"""

from kcheck.model.smt.adminutils import (
    rack_aware_twin,
    rack_unaware_closed_form,
    rack_unaware_remainders,
    rack_unaware_twin,
)
from kcheck.model.smt.common import SymbolicPlacement
from kcheck.model.smt.striped import striped_twin

__all__ = [
    "SymbolicPlacement",
    "rack_aware_twin",
    "rack_unaware_closed_form",
    "rack_unaware_remainders",
    "rack_unaware_twin",
    "striped_twin",
]
