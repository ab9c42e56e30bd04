"""The invariant registry: every property defined once, with an id, a source and one scalar check.

A check never answers a bare bool: it returns the violations, each saying what
is wrong, where (partition, broker, rack, topic) and by how much. Faster or
symbolic forms of a property (vectorised, Z3) are twins of the scalar check and
are tested against it.

Users add their own invariants the same way, in a module of theirs loaded with `--invariants MODULE`
(`load_module`); a replication invariant gets a `ReplicationSubject` (`invariants/replication.py`: the
model's `state` and the run's `config`)::

    from kcheck.invariants.registry import Severity, Violation, register

    @register("user.hw-within-isr-logs", "The high watermark is on every ISR member", Severity.HARD,
              "my design note", "replication")
    def hw_within_isr_logs(s):
        reg = s.state.registry
        ...
        return [Violation("user.hw-within-isr-logs", Severity.HARD, "broker 2", "what is wrong")]

An id may be registered once; `not_applicable(subject)` returns why the invariant does not apply to a
subject (every run reports it), or None.
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
    module: str = ""  # the module that registered it (a user's, loaded with --invariants, or kcheck's own)


REGISTRY: dict[str, Invariant] = {}
# Former ids of renamed invariants -> today's, so users' baselines and allowlists written with them still work.
ALIASES: dict[str, str] = {}


def canonical(id: str) -> str:
    """Today's id of an invariant id, also given by a former name."""
    return ALIASES.get(id, id)


def register(
    id: str, title: str, severity: Severity, source: str, applies_to: str,
    not_applicable: Callable[[Any], str | None] | None = None,
) -> Callable[[Callable[[Any], list[Violation]]], Callable[[Any], list[Violation]]]:
    """Decorator that adds a scalar check to the registry under `id`."""

    def wrap(check: Callable[[Any], list[Violation]]) -> Callable[[Any], list[Violation]]:
        if id in REGISTRY:
            raise ValueError(f"invariant {id} is registered twice")
        REGISTRY[id] = Invariant(id, title, severity, source, applies_to, check,
                                 not_applicable or (lambda subject: None), getattr(check, "__module__", "") or "")
        return check

    return wrap


def load_module(name: str) -> list[str]:
    """Import a user's module of invariants (`--invariants MODULE`) through the plug-in path: a name that does
    not import is a ValueError (one line); whatever the module does wrong while importing, and whatever its
    checks do wrong later (raise, exit, answer something that is not a list of its own Violations), is a
    PluginError naming the module and the invariant. Returns the ids the module registered (also when it
    was imported before)."""
    import importlib

    from kcheck.reference import plugins

    if name.endswith(".py"):
        raise ValueError(f"'{name}' is a file name: give the module's name ('{name[:-3]}'), with its directory on "
                         "PYTHONPATH")
    if not name or not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"'{name}' is not a module name (a dotted Python name on sys.path, without .py)")
    import sys

    before = set(REGISTRY)
    if plugins.watcher is not None:
        plugins.watcher.enter(name)
    try:
        if name in sys.modules and not any(v.module == name for v in REGISTRY.values()):
            importlib.reload(sys.modules[name])  # imported before, its ids since removed (tests restore the registry)
        else:
            importlib.import_module(name)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        if missing == name or name.startswith(missing + "."):
            raise ValueError(f"cannot import module '{name}': {e}") from None
        raise plugins.failure(name, e) from e
    except BaseException as e:  # noqa: BLE001 - SyntaxError, a duplicate id, sys.exit, KeyboardInterrupt
        raise plugins.failure(name, e) from e
    finally:
        if plugins.watcher is not None:
            plugins.watcher.leave()
    ids = [i for i in REGISTRY if i not in before or REGISTRY[i].module == name]
    for i in ids:
        if not getattr(REGISTRY[i].check, "_kcheck_guarded", False):
            REGISTRY[i] = _guarded(name, REGISTRY[i])
    return ids


def _guarded(spec: str, inv: Invariant) -> Invariant:
    """The user's invariant with its check and not_applicable reporting their failures as the plug-in's."""
    import dataclasses

    from kcheck.reference import plugins

    def fail(e: BaseException, what: str) -> plugins.PluginError:
        err = plugins.failure(spec, e)
        return plugins.PluginError(spec, err.message, err.exc_type, err.where, f"invariant {inv.id}{what}")

    def check(subject: Any) -> list[Violation]:
        if plugins.watcher is not None:
            plugins.watcher.enter(spec)
        try:
            out = inv.check(subject)
        except BaseException as e:  # noqa: BLE001 - the user's code: its failure, in one line
            raise fail(e, "") from e
        finally:
            if plugins.watcher is not None:
                plugins.watcher.leave()
        if not isinstance(out, list | tuple) or not all(isinstance(v, Violation) for v in out):
            raise plugins.PluginError(spec, f"returned {type(out).__name__}, not a list of Violation",
                                      "bad result", context=f"invariant {inv.id}")
        wrong = next((v.invariant for v in out if v.invariant != inv.id), None)
        if wrong is not None:
            raise plugins.PluginError(spec, f"returned a Violation of '{wrong}', not of '{inv.id}'", "bad result",
                                      context=f"invariant {inv.id}")
        return list(out)

    def not_applicable(subject: Any) -> str | None:
        try:
            why = inv.not_applicable(subject)
        except BaseException as e:  # noqa: BLE001
            raise fail(e, " (not_applicable)") from e
        if why is not None and not isinstance(why, str):
            raise plugins.PluginError(spec, f"not_applicable returned {type(why).__name__}, not a str or None",
                                      "bad result", context=f"invariant {inv.id}")
        return why

    check._kcheck_guarded = True  # type: ignore[attr-defined]
    return dataclasses.replace(inv, check=check, not_applicable=not_applicable)


def unknown_ids(ids: list[str] | tuple[str, ...] | set[str], applies_to: str) -> str | None:
    """The first id that is not a registered invariant of `applies_to`, with the one-line reason; else None."""
    for i in ids:
        inv = REGISTRY.get(i) if isinstance(i, str) else None
        if inv is None or inv.applies_to != applies_to:
            known = ", ".join(k for k, v in REGISTRY.items() if v.applies_to == applies_to)
            what = f"a {inv.applies_to} invariant, not a {applies_to} one" if inv is not None else \
                f"not a {applies_to} invariant kcheck knows"
            shown = repr(i) if not isinstance(i, str) else "'" + i.encode("unicode_escape").decode("ascii")[:80] + "'"
            return f"{shown} is {what} (known: {known}; load a user's module of invariants with --invariants MODULE)"
    return None


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


def fails_when_violated(severity: Severity | str, guaranteed: bool, kafkas_own: bool) -> bool:
    """The one rule for whether a violated invariant fails `check` and `sweep`: when Kafka guarantees it for the
    subject, or when it is hard and the subject is not Kafka's own code (a user's placer or assignor). A hard
    property Kafka's own placer breaks without promising it is a finding about Kafka, reported with its smallest
    case, not a failure of the gate."""
    return guaranteed or (str(severity) == Severity.HARD and not kafkas_own)
