"""The transactions model's rows for `kcheck check`: each historical rule breaks one of the properties it names,
and today's rules (Kafka 4.4) are complete and clean at the same setting.

Every row is an exhaustive breadth-first search (`kcheck.model.search.exhaust`) of `TransactionsModel` at the
variant's own setting (`kcheck.model.transactions.VARIANTS`): under the variant it must stop at a violation of an
invariant the variant names (the shortest trace); under `Rules.current()` it must visit every reachable state with
every invariant holding. A setting two variants share is searched once under today's rules. The rows are
`kcheck.invariants.request_rows.RequestRow`s, the request model's, so `kcheck check` reports both alike.
"""

from __future__ import annotations

import time
from typing import Any

from kcheck.invariants.request_rows import RequestRow
from kcheck.invariants.transactions_model import TransactionsModel
from kcheck.model.search import exhaust
from kcheck.model.transactions import VARIANTS, Config, Rules

MAX_STATES = 200_000


def _row(model: TransactionsModel, jira: str, setting: str, expect: bool, expected: tuple[str, ...],
         max_states: int) -> RequestRow:
    started = time.perf_counter()
    r = exhaust(model, max_states=max_states)
    cx = r.counterexample
    return RequestRow(model.rules.name, jira, setting, expect, r.states, time.perf_counter() - started, r.complete,
                      (cx.invariant,) if cx else (), len(cx.steps) - 1 if cx else 0,
                      cx.message if cx else ("" if r.complete else f"stopped: {r.stopped_because}"), expected)


def run_transactions_rows(max_states: int = MAX_STATES) -> list[RequestRow]:
    """Each variant's row under its rules, then today's rules at the same setting (once per setting)."""
    rows: list[RequestRow] = []
    seen: dict[Any, RequestRow] = {}
    for v in VARIANTS.values():
        setting = ", ".join(f"{k}={x}" for k, x in v.settings.items())
        rows.append(_row(TransactionsModel.of_variant(v), v.jira, setting, True, v.violates, max_states))
        key = tuple(sorted(v.settings.items()))
        if key not in seen:
            seen[key] = _row(TransactionsModel(Config(**dict(v.settings)), Rules.current()), v.jira, setting, False,
                             (), max_states)
        rows.append(seen[key])
    return rows
