"""kcheck's shared vocabulary: brokers, clusters, topic-partitions and replica assignments.

Small frozen values that every other part passes around. `model` imports nothing
of the project (see ARCHITECTURE.md); the formal models live in sub-packages.
"""

from model.vocabulary import (
    NO_LEADER,
    Broker,
    Cluster,
    PartitionReplicas,
    ReplicaAssignment,
    TopicPartition,
)

__all__ = [
    "NO_LEADER",
    "Broker",
    "Cluster",
    "PartitionReplicas",
    "ReplicaAssignment",
    "TopicPartition",
]
