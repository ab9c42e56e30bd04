"""Kafka's control-plane algorithms, executable and bit-exact with Kafka (see ARCHITECTURE.md)."""
