"""The invariant registry: every property defined once, with an id, a source and one scalar check.

A check never answers a bare bool: it returns the violations, each saying what
is wrong, where (partition, broker, rack, topic) and by how much. Faster or
symbolic forms of a property (vectorised, Z3) are twins of the scalar check and
are tested against it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    HARD = "hard"  # must hold: a violation makes the plan unsafe or wrong
    SOFT = "soft"  # a balance goal: a violation is worth a look, not a failure


@dataclass(frozen=True)
class Violation:
    invariant: str
    severity: Severity
    where: str  # e.g. "partition foo-3", "broker 4", "rack r1", "topic foo / broker 2"
    message: str  # one line for people
    detail: Mapping[str, Any] = field(default_factory=dict)  # the numbers, for machines

    def as_dict(self) -> dict[str, Any]:
        return {
            "invariant": self.invariant,
            "severity": str(self.severity),
            "where": self.where,
            "message": self.message,
            "detail": dict(self.detail),
        }


@dataclass(frozen=True)
class Invariant:
    id: str
    title: str
    severity: Severity
    source: str  # the Kafka (or Cruise Control) code or document the property comes from
    applies_to: str  # the kind of subject it checks, e.g. "placement"
    check: Callable[[Any], list[Violation]]
    # Returns why the invariant does not apply to a subject (e.g. "no rack information"), or None.
    not_applicable: Callable[[Any], str | None] = lambda subject: None


REGISTRY: dict[str, Invariant] = {}


def register(
    id: str, title: str, severity: Severity, source: str, applies_to: str,
    not_applicable: Callable[[Any], str | None] | None = None,
) -> Callable[[Callable[[Any], list[Violation]]], Callable[[Any], list[Violation]]]:
    """Decorator that adds a scalar check to the registry under `id`."""

    def wrap(check: Callable[[Any], list[Violation]]) -> Callable[[Any], list[Violation]]:
        if id in REGISTRY:
            raise ValueError(f"invariant {id} is registered twice")
        REGISTRY[id] = Invariant(id, title, severity, source, applies_to, check,
                                 not_applicable or (lambda subject: None))
        return check

    return wrap


def invariants_for(applies_to: str) -> list[Invariant]:
    return [inv for inv in REGISTRY.values() if inv.applies_to == applies_to]


def get(id: str) -> Invariant:
    try:
        return REGISTRY[id]
    except KeyError:
        raise KeyError(f"unknown invariant '{id}'") from None


@dataclass(frozen=True)
class Report:
    """The outcome of checking one subject against a set of invariants."""

    checked: tuple[str, ...]  # invariant ids that applied
    skipped: Mapping[str, str]  # invariant id -> why it did not apply
    violations: tuple[Violation, ...]

    @property
    def hard_violations(self) -> tuple[Violation, ...]:
        return tuple(v for v in self.violations if v.severity is Severity.HARD)

    @property
    def ok(self) -> bool:
        return not self.hard_violations


def check_all(subject: Any, applies_to: str, only: set[str] | None = None) -> Report:
    checked: list[str] = []
    skipped: dict[str, str] = {}
    violations: list[Violation] = []
    for inv in invariants_for(applies_to):
        if only is not None and inv.id not in only:
            continue
        reason = inv.not_applicable(subject)
        if reason is not None:
            skipped[inv.id] = reason
            continue
        checked.append(inv.id)
        violations.extend(inv.check(subject))
    return Report(tuple(checked), skipped, tuple(violations))
