"""Exceptions named after the ones Kafka raises, carrying Kafka's messages.

Callers (the CLI, the invariant engines) tell Kafka's refusals apart from
kcheck's own errors by catching `KafkaError`.
"""


class KafkaError(Exception):
    """Base of the Kafka exceptions the reference raises."""


class InvalidPartitionsException(KafkaError):
    """org.apache.kafka.common.errors.InvalidPartitionsException"""


class InvalidReplicationFactorException(KafkaError):
    """org.apache.kafka.common.errors.InvalidReplicationFactorException"""


class AdminOperationException(KafkaError):
    """org.apache.kafka.server.common.AdminOperationException (mixed rack / no-rack brokers)."""


class IllegalArgumentException(KafkaError, ValueError):
    """java.lang.IllegalArgumentException thrown inside Kafka's code (e.g. `new ArrayList<>(-1)`)."""
