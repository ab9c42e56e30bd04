"""A small-bound model of one partition's storage: segments, offset index, retention, the log cleaner
with KIP-534 delete horizons, a consumer reading from the log start, a follower replicating the compacted log
while the leader's log start moves under it, and unclean shutdowns. `model` has the transition system, `rules`
every decision as a swappable function with today's Kafka as the default and Kafka's historical storage bugs as
`VARIANTS` (each with its JIRA). The state invariants are in `kcheck.invariants.storage_model`, whose
`StorageModel` is the `kcheck.model.interface.Model` the engines of `kcheck.model.search` run."""

from kcheck.model.storage.model import StorageSystem, follower_view, leader_view
from kcheck.model.storage.rules import VARIANTS, Rules, Variant
from kcheck.model.storage.state import Config, State, initial_state

__all__ = ["VARIANTS", "Config", "Rules", "State", "StorageSystem", "Variant", "follower_view", "initial_state",
           "leader_view"]
