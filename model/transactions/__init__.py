"""A small-bound model of Kafka transactions (issue 37): one transactional id's producer instances, its coordinator
and its `__transaction_state` record, two data partitions, produce requests and markers in flight (delayed,
duplicated, retried), coordinator failover, fencing by a new instance, transaction time-outs. `state` holds the
state, `rules` every decision as a swappable function with today's Kafka as the default and history's alternatives
as `VARIANTS` (each with its JIRA), `model` the transition system over a port to Kafka's code. The invariants, and
the port bound to the bit-exact references, are in `kcheck.invariants.transactions_model`, whose
`TransactionsModel` is the `kcheck.model.interface.Model` the engines run."""

from kcheck.model.transactions.model import KafkaCode, TransactionsSystem
from kcheck.model.transactions.rules import VARIANTS, Rules
from kcheck.model.transactions.state import Config, State, initial_state

__all__ = ["VARIANTS", "Config", "KafkaCode", "Rules", "State", "TransactionsSystem", "initial_state"]
