"""The replication control plane as a state machine: state, actions and swappable protocol rules.

`state` holds the immutable state (replicas, the controller's registry, in-flight messages, history),
`actions` the guarded steps and their table, `protocol` the rules every decision goes through
(`Protocol.current()` and the historical `VARIANTS`), `reassignment` KRaft's partition reassignment
over the registry (plan, completion rules, revert). The invariants and the searches that drive
this model live in `invariants.replication`, `invariants.replication_model_adapter` (the model behind the engine's
interface) and `invariants.replication_searches` (`exhaustive`, `random_runs`, and `runs`: traces, tallies,
change coverage).
"""

from kcheck.model.replication.actions import KINDS, Action, Config, apply, initial_state, successors
from kcheck.model.replication.protocol import VARIANTS, Protocol, Variant
from kcheck.model.replication.state import NO_LEADER, Record, Registry, Replica, State

__all__ = ["KINDS", "NO_LEADER", "VARIANTS", "Action", "Config", "Protocol", "Record", "Registry", "Replica",
           "State", "Variant", "apply", "initial_state", "successors"]
