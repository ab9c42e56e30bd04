"""The request model's exhaustive search at its default bounds (`kcheck.model.request.Config()`): two batches, two
requests in flight, one retry, one dropped connection, one election, two brokers, acks=all, idempotent. Runs with
`keep_going` so the whole reachable space is covered (today's rules break one invariant there: see
docs/models/request.md); prints states, transitions, seconds, states per second and the process's peak RSS.

    .venv/bin/python bench/bench_request_model.py [key=value ...]   # Config overrides, e.g. batches=3
"""

from __future__ import annotations

import resource
import sys
import time

from kcheck.invariants.request_model import RequestModel
from kcheck.model.request import Config
from kcheck.model.search import exhaust


def _value(v: str) -> object:
    return v == "True" if v in ("True", "False") else (v if not v.lstrip("-").isdigit() else int(v))


def main(argv: list[str]) -> None:
    overrides = {k: _value(v) for k, v in (a.split("=", 1) for a in argv)}
    cfg = Config(**overrides)  # type: ignore[arg-type]
    started = time.perf_counter()
    r = exhaust(RequestModel(cfg, findings=True), keep_going=True)
    seconds = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"config: {cfg}")
    print(f"states {r.states:,}, transitions {r.transitions:,}, depth {r.depth}, covered {r.covered}, "
          f"{seconds:.1f} s, {r.states / seconds:,.0f} states/s, peak RSS {rss:,.0f} MiB")
    for inv, cx in r.counterexamples.items():
        print(f"  {inv}: {len(cx.steps) - 1} steps: {cx.message}")


if __name__ == "__main__":
    main(sys.argv[1:])
