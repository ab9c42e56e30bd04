"""Helpers the replication-model tests share."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from kcheck.model.replication import Config, Protocol, initial_state
from kcheck.model.replication.actions import successors


def reachable(protocol: Protocol, cfg: Config, limit: int, step: Callable[[Any], Any] | None = None) -> list[Any]:
    """The first `limit` states of a BFS over `actions.successors` (the model's own function table, not the
    adapter's fast path), each state passed through `step` first when one is given (a reduction's normal form)."""
    step = step or (lambda s: s)
    s0 = step(initial_state(cfg))
    seen, queue, out = {s0}, deque([s0]), []
    while queue and len(out) < limit:
        s = queue.popleft()
        out.append(s)
        for _, t in successors(s, protocol, cfg):
            t = step(t)
            if t not in seen:
                seen.add(t)
                queue.append(t)
    return out
