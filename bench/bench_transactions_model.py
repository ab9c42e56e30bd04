"""The transactions model's exhaustive searches: each historical rule set at its own setting, today's rules at the
same setting, TV1 with today's client (its KIP-360 epoch bump) at `tv1-late-write`'s setting, and today's at the
default bounds and with failover and a transaction time-out. Prints per run the
states, the depth, seconds, the verdict and, for a violation, the shortest trace's length per invariant; then the
liveness check of each rule set at its setting (states, seconds, each property's verdict and lasso length).

    .venv/bin/python bench/bench_transactions_model.py [key=value ...]   # Config overrides for today's extra run
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

from kcheck.invariants.transactions_model import TransactionsModel
from kcheck.model.liveness import check_liveness
from kcheck.model.search import exhaust
from kcheck.model.transactions import VARIANTS, Config, Rules
from kcheck.model.transactions.rules import tv1_epoch_per_producer


def _run(label: str, model: TransactionsModel) -> None:
    started = time.perf_counter()
    r = exhaust(model, keep_going=True)
    seconds = time.perf_counter() - started
    verdict = "clean" if r.complete and not r.counterexamples else ("violated" if r.counterexamples else "incomplete")
    traces = ", ".join(f"{inv} {len(cx.steps) - 1}" for inv, cx in r.counterexamples.items())
    print(f"{label:44} states {r.states:>7,} depth {r.depth:>3} {seconds:6.1f} s  {verdict}"
          + (f" ({traces})" if traces else ""))


def _live(label: str, model: TransactionsModel) -> None:
    started = time.perf_counter()
    r = check_liveness(model, model.liveness())
    seconds = time.perf_counter() - started
    verdicts = ", ".join(f"{p}: {r.verdict(p)}" + ("" if lasso is None else f" ({len(lasso.prefix) - 1} + "
                                                                             f"{len(lasso.cycle)} steps)")
                         for p, lasso in r.violations.items())
    print(f"{label:44} states {r.states:>7,} {seconds:6.1f} s  {verdicts}")


def main(argv: list[str]) -> None:
    for name, v in VARIANTS.items():
        _run(f"{name} [{v.jira}]", TransactionsModel.of_variant(v))
        _run("  current at the same setting", TransactionsModel(Config(**dict(v.settings))))
    tv1 = replace(Rules.current(), name="tv1", transaction_version=tv1_epoch_per_producer)
    late = dict(VARIANTS["tv1-late-write"].settings)
    _run("TV1, today's client (KIP-360 bump), tv1-late-write's setting", TransactionsModel(Config(**late), tv1))
    _run("  the same with a duplicate", TransactionsModel(Config(**{**late, "duplicates": 1}), tv1))
    _run("current, default bounds", TransactionsModel())
    _run("current, failover + txn timeout", TransactionsModel(Config(txns=1, failovers=1, txn_timeouts=1)))
    _run("current, a failed append", TransactionsModel(Config(txns=1, append_failures=1)))
    print("liveness (deliveries fair)")
    for name, v in VARIANTS.items():
        _live(name, TransactionsModel.of_variant(v))
    _live("current, default bounds", TransactionsModel())
    _run("current, two instances (long: last)", TransactionsModel(Config(instances=2, txns=1)))
    if argv:
        overrides = {k: int(v) for k, v in (a.split("=", 1) for a in argv)}
        _run(f"current, {overrides}", TransactionsModel(Config(**overrides)))


if __name__ == "__main__":
    main(sys.argv[1:])
