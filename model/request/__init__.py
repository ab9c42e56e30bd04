"""A small-bound model of the request path: one producer's batches from `send()` to the broker's answer,
over the replication model's partition. `state` holds the client, the connections, each broker's producer state
and purgatory; `rules` every decision as a swappable function with today's Kafka as the default and history's
alternatives as `VARIANTS` (each with its JIRA); `model` the transition system. The invariants are in
`kcheck.invariants.request_model`, whose `RequestModel` is the `kcheck.model.interface.Model` the engines run."""

from kcheck.model.request.model import RequestSystem, initial_state
from kcheck.model.request.rules import VARIANTS, Rules, Variant
from kcheck.model.request.state import Config, State

__all__ = ["VARIANTS", "Config", "RequestSystem", "Rules", "State", "Variant", "initial_state"]
