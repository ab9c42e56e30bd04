"""The request model's rows for `kcheck check`: each historical rule breaks its property, today's rules are clean at
the same bounds, and the findings Kafka does not promise are reached.

Every row is an exhaustive breadth-first search (`kcheck.model.search.exhaust`) of `RequestModel` at the variant's
own setting: under the variant it must stop at a violation of one of the invariants the variant names (BFS: a
shortest trace); under `Rules.current()` it must visit every reachable state with every invariant holding
(`complete`). The findings row runs today's rules with the findings switched on and `keep_going`, at a setting
where each finding is reachable; a finding never fails.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from kcheck.invariants.request_model import FINDINGS, RequestModel
from kcheck.model.request import VARIANTS, Config, Rules
from kcheck.model.search import exhaust

MAX_STATES = 200_000

# Where each finding is reachable: no idempotence, two requests in flight, a retry, a dropped connection, an
# election (acks=all) or acks=1 with an election, and a delivery timeout for the idempotent gap. The last is the
# model's default bounds, where today's rules break `produce.idem-no-duplicate` (enable.idempotence's documented
# "exactly one copy") across an epoch bump while `produce.idem-epoch-no-duplicate` holds: a finding about Kafka,
# reported and never failing (docs/models/request.md, "An open trace under today's rules").
FINDING_SETTINGS: dict[str, dict[str, Any]] = {
    "not idempotent, acks=all": {"idempotent": False, "batches": 2, "max_in_flight": 2, "retries": 1, "drops": 1,
                                 "elections": 0},
    "not idempotent, acks=1, election": {"idempotent": False, "acks": "1", "batches": 2, "max_in_flight": 1,
                                         "retries": 0, "drops": 0, "elections": 1},
    "idempotent, election, delivery timeout": {"batches": 2, "max_in_flight": 1, "retries": 0, "drops": 0,
                                               "elections": 1, "delivery_timeouts": 1},
    "idempotent, the default bounds": {},
}
# The invariants Kafka promises that its own rules break at a finding row's setting (a finding about Kafka).
KAFKAS_OWN: dict[str, frozenset[str]] = {"idempotent, the default bounds": frozenset({"produce.idem-no-duplicate"})}


@dataclass(frozen=True)
class RequestRow:
    """One search: `expect_violation` for a variant's row, not for today's rules."""

    rules: str
    jira: str
    setting: str
    expect_violation: bool
    states: int
    seconds: float
    complete: bool
    violated: tuple[str, ...] = ()
    trace_steps: int = 0
    detail: str = ""
    expected: tuple[str, ...] = ()
    findings: bool = False  # a findings row: what it found is reported, never failed
    engine: str = "exhaust"  # or "liveness" (`kcheck.model.liveness.check_liveness`, weak fairness)

    @property
    def ok(self) -> bool:
        if self.findings:
            return True
        if self.expect_violation:
            return bool(set(self.violated) & set(self.expected))
        return self.complete and not self.violated


def _setting(settings: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings.items())


def _search(model: RequestModel, max_states: int, keep_going: bool = False) -> Any:
    started = time.perf_counter()
    r = exhaust(model, max_states=max_states, keep_going=keep_going)
    return r, time.perf_counter() - started


def variant_rows(name: str, max_states: int = MAX_STATES) -> list[RequestRow]:
    """The variant's row under its rules, then today's rules at the same setting."""
    v = VARIANTS[name]
    setting = _setting(dict(v.settings))
    out = []
    for rules, expect in ((v.rules, True), (Rules.current(), False)):
        r, seconds = _search(RequestModel(Config(**v.settings), rules), max_states)
        cx = r.counterexample
        out.append(RequestRow(rules.name, v.jira, setting, expect, r.states, seconds, r.complete,
                              (cx.invariant,) if cx else (), len(cx.steps) - 1 if cx else 0,
                              cx.message if cx else ("" if r.complete else f"stopped: {r.stopped_because}"),
                              v.violates))
    return out


def finding_rows(max_states: int = MAX_STATES) -> list[RequestRow]:
    out = []
    for label, settings in FINDING_SETTINGS.items():
        r, seconds = _search(RequestModel(Config(**settings), findings=True), max_states, keep_going=True)
        own = KAFKAS_OWN.get(label, frozenset())
        found = {k: cx for k, cx in r.counterexamples.items() if k in FINDINGS or k in own}
        hard = sorted(k for k in r.counterexamples if k not in FINDINGS and k not in own)
        detail = "; ".join(f"{k} ({len(cx.steps) - 1} steps{', Kafka breaks its own promise' if k in own else ''}): "
                           f"{cx.message}" for k, cx in found.items())
        if hard:
            detail = f"today's rules broke {', '.join(hard)}; " + detail
        out.append(RequestRow("current", "", f"{label}: {_setting(settings)}", False, r.states, seconds, r.covered,
                              tuple(found), min((len(cx.steps) - 1 for cx in found.values()), default=0), detail,
                              findings=not hard))
    return out


# The liveness row: the missed purgatory trigger without the clock (so no timeout answers for it), with two batches
# in flight and an election; today's rules answer every request on every fair run.
LIVENESS_VARIANT = "purgatory-missed-trigger"
LIVENESS_SETTINGS: dict[str, Any] = {"batches": 2, "max_in_flight": 2, "elections": 1, "max_clock": 0}


def liveness_rows(max_states: int = MAX_STATES) -> list[RequestRow]:
    """`liveness.request-answered` under the missed trigger (a fair cycle that never answers) and today's rules."""
    from kcheck.invariants.request_model import LIVENESS
    from kcheck.model.liveness import check_liveness

    v = VARIANTS[LIVENESS_VARIANT]
    settings = {**v.settings, **LIVENESS_SETTINGS}
    out = []
    for rules, expect in ((v.rules, True), (Rules.current(), False)):
        r = check_liveness(RequestModel(Config(**settings), rules), LIVENESS, max_states=max_states)
        lasso = r.violations[LIVENESS[0].id]
        steps = 0 if lasso is None else len(lasso.prefix) - 1 + len(lasso.cycle)
        out.append(RequestRow(rules.name, v.jira, _setting(settings), expect, r.states, r.seconds, r.complete,
                              () if lasso is None else (LIVENESS[0].id,), steps,
                              "" if lasso is None else f"{lasso.kind}: {lasso.message}", (LIVENESS[0].id,),
                              engine="liveness"))
    return out


def run_request_rows(max_states: int = MAX_STATES) -> list[RequestRow]:
    """Every variant's two rows, the liveness rows, then the findings rows."""
    rows = []
    for name in VARIANTS:
        rows += variant_rows(name, max_states)
    return rows + liveness_rows(max_states) + finding_rows(max_states)
