"""Every property kcheck checks, defined once in a registry, and the engines that check them."""

from kcheck.invariants import assignment as _assignment  # noqa: F401  (registers the assignment invariants)
from kcheck.invariants import log_storage as _log_storage  # noqa: F401  (registers the log-storage invariants)
from kcheck.invariants import partition_health as _partition_health  # noqa: F401  (registers the health invariants)
from kcheck.invariants import placement as _placement  # noqa: F401  (registers the placement invariants)
from kcheck.invariants import reassignment as _reassignment  # noqa: F401  (registers the plan-safety invariants)
from kcheck.invariants import replication as _replication  # noqa: F401  (registers the replication invariants)
from kcheck.invariants.assignment import AssignmentSubject, check_assignment
from kcheck.invariants.placement import BalanceSettings, PlacementSubject, balance_limits
from kcheck.invariants.registry import (
    REGISTRY,
    Invariant,
    Report,
    Severity,
    Violation,
    check_all,
    get,
    invariants_for,
)


def check_placement(subject: PlacementSubject, only: set[str] | None = None) -> Report:
    """Check an assignment against every placement invariant (or the ids in `only`)."""
    return check_all(subject, "placement", only)


__all__ = [
    "REGISTRY", "AssignmentSubject", "BalanceSettings", "Invariant", "PlacementSubject", "Report", "Severity",
    "Violation", "balance_limits", "check_all", "check_assignment", "check_placement", "get", "invariants_for",
]
