"""What every model's rules share: a frozen dataclass of named decision functions, and historical variants of it.

A model's `Rules` (or `Protocol`) holds `name`, `description` and one function per decision; `RuleSet` lists the
decisions and the function each uses, for reports and `kcheck rules`. `Variant` is a historical rule set: today's
with one decision replaced, the Kafka issue that fixed it, the smallest setting that shows the bug and the
invariants it breaks (the storage and request models' catalogues).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Generic, TypeVar

R = TypeVar("R")


class RuleSet:
    """Mixed into a frozen dataclass whose fields are `name`, `description` and the decision functions."""

    @classmethod
    def rule_names(cls) -> tuple[str, ...]:
        """Every rule, in declaration order (every field but name and description)."""
        return tuple(f.name for f in fields(cls) if f.name not in ("name", "description"))  # type: ignore[arg-type]

    def rules(self) -> dict[str, str]:
        """Rule name -> the function in use, for reports."""
        return {k: getattr(self, k).__name__ for k in self.rule_names()}


@dataclass(frozen=True)
class Variant(Generic[R]):
    """A historical rule set: today's with one decision replaced, the smallest setting that shows it, what it breaks."""

    name: str
    jira: str
    bug: str
    rules: R
    settings: Mapping[str, Any] = field(default_factory=dict)  # the model's Config overrides
    violates: tuple[str, ...] = ()  # the model invariants that catch it


def variant(today: R, name: str, jira: str, bug: str, violates: tuple[str, ...], settings: Mapping[str, Any],
            **rules: Any) -> Variant[R]:
    """`today` with the named decisions replaced, as the historical rule set `name`."""
    return Variant(name, jira, bug, replace(today, name=name, description=bug, **rules), settings,  # type: ignore[type-var]
                   violates)
