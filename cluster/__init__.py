"""Real Kafka: a local KRaft cluster (`local`) and its folder, reading a live cluster, admin steps, the lossy
proxy, and the fault campaigns (`chaos`, `replay`) with their history checking."""
