"""kcheck's shared vocabulary: brokers, clusters, topic-partitions, replica assignments, group members.

Small frozen values that every other part passes around. `model` imports nothing
of the project (see ARCHITECTURE.md); the formal models live in sub-packages.
"""

from kcheck.model.group import PartitionInfo, Subscription
from kcheck.model.vocabulary import (
    INT16_MAX,
    INT32_MAX,
    NO_LEADER,
    Broker,
    Cluster,
    PartitionReplicas,
    ReplicaAssignment,
    TopicPartition,
)

__all__ = [
    "INT16_MAX",
    "INT32_MAX",
    "NO_LEADER",
    "PartitionInfo",
    "Subscription",
    "Broker",
    "Cluster",
    "PartitionReplicas",
    "ReplicaAssignment",
    "TopicPartition",
]
