"""Consumer-group partition assignors: Kafka's client-side ones and the KIP-848 server-side ones."""
