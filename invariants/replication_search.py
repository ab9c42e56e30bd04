"""The replication model's settings for the random search (`kcheck.model.search.random_search`).

One setting for every protocol and every configuration: nothing here knows a bug row, its script or its
invariant. Each choice follows from the model's structure (model/replication/actions.py):

- Kinds. A delivery with `keep` (the message stays in the pool: the network duplicates it) is its own kind,
  "duplicate", and so is "drop": both are network faults, not the ordinary traffic of their message kind.
- Weights. Faults (the kinds that spend a `Config` budget: crash, fence, an ISR shrink, an unrequested leader
  move, a controller failover and its zombie's writes, reassignment requests and cancels) get 0.3, the network
  faults 0.1, everything else 1 (produce, the fetch exchange, high-watermark advances, deliveries, healing).
  In Kafka faults are rare next to the traffic between them; a bug needs the traffic that sets it up (records
  replicated, epochs learnt) around a few well-placed faults, and at weight 1 a program spends every budget
  in its first steps.
- `follow` 0.5: half the steps are drawn among the actions the previous step enabled (the request just sent,
  its answer, the AlterPartition a shrink proposed), so exchanges complete instead of being interleaved away.
- `novelty`: `novelty_key` abstracts a state to what a replica and the controller believe (each replica's
  liveness, leader, leader epoch, the epochs of its log's records and its high watermark; the registry's
  leader, epoch, ISR and ELR; the budgets spent), leaving out the messages in flight and the history. A state
  with a key no earlier step reached joins the corpus that programs restart from (`restart` 0.5): the search
  keeps pushing from divergent logs, new epochs and ISR changes it has reached, and the key is coarse enough
  for the corpus to stay small (thousands of states, not every interleaving of the pool).
- Programs of 5 to 40 steps (each round of programs also restarts from the corpus), no swarm (switching
  kinds off per program found fewer rows than weights in the measurements, bench/bench_random_search.py).
- Atomic fetches (`Config.atomic_fetch`, one step per fetch round, as in the TLA+ models): the deepest rows need
  many complete fetches, and a run with atomic fetches is a run of the split model too (three steps per fetch).
  `search` uses them for every row unless told otherwise.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kcheck.invariants.replication_model_adapter import ReplicationModel
from kcheck.model.replication.actions import Action, Config
from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import State
from kcheck.model.search import SearchResult, random_search

# The kinds that spend a fault budget of `Config` (actions.py: `_spend`).
FAULT_KINDS = frozenset({"crash", "fence", "shrink_isr", "move_leader", "failover", "zombie_move_leader",
                         "reassign", "cancel_reassignment", "controlled_shutdown"})
FAULT_WEIGHT = 0.3
NETWORK_FAULT_WEIGHT = 0.1


def kind(action: Action) -> str:
    """The action's kind for weighting: its own, except that a duplicated delivery is "duplicate"."""
    if action.kind.startswith("handle_") and len(action.args) == 2 and action.args[1] is True:
        return "duplicate"
    return action.kind


def weights() -> dict[str, float]:
    from kcheck.model.replication.actions import KINDS

    out = {k: FAULT_WEIGHT if k in FAULT_KINDS else 1.0 for k in KINDS}
    out["drop"] = out["duplicate"] = NETWORK_FAULT_WEIGHT
    return out


def novelty_key(s: State) -> int:
    """What the replicas and the controller believe, without messages in flight or history (see above)."""
    reg = s.registry
    return hash((tuple((r.alive, r.known, r.leader, r.leader_epoch, tuple(x.epoch for x in r.log), r.hw)
                       for r in s.replicas),
                 reg.leader, reg.leader_epoch, reg.isr, reg.elr, reg.replicas, len(s.zombies), s.used))


def options() -> dict[str, Any]:
    """`random_search` keyword arguments for the replication model (the same for every protocol and row)."""
    return {"kind": kind, "weights": weights(), "follow": 0.5, "novelty": novelty_key, "restart": 0.5,
            "min_steps": 5, "max_steps": 40, "swarm": False, "choices": "random"}


def search_config(cfg: Config, atomic: bool = True) -> Config:
    """The configuration the search runs: `cfg` with atomic fetches unless `atomic` is False."""
    return replace(cfg, atomic_fetch=True) if atomic and not cfg.atomic_fetch else cfg


def search(protocol: Protocol, cfg: Config, seed: int = 0, programs: int = 100_000,
           max_seconds: float | None = None, *, atomic: bool = True, only: set[str] | None = None,
           **overrides: Any) -> SearchResult:
    """`random_search` on the replication model with the settings above (keyword `overrides` replace them)."""
    model = ReplicationModel(protocol, search_config(cfg, atomic), only=only)
    return random_search(model, seed=seed, programs=programs, max_seconds=max_seconds, **{**options(), **overrides})
