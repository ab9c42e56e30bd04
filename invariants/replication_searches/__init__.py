"""The replication model's searches, on the one engine (`kcheck.model.search`):

- `exhaustive`: `run_exhaust`, what `kcheck exhaust` and `kcheck check` run (tally, change coverage, workers,
  memory cap, the Spark search passed in by the caller);
- `random_runs`: the random search's settings and `explore` (`kcheck explore`, `check`'s random search);
- `runs`: what every search shares: `Trace` and replay, `resolve_protocol`, `InvariantTally`, `ChangeProbe`,
  progress, the abstraction keys;
- `yardstick`: the former networkx search, kept as what the engine's tests and bench compare against.
"""
