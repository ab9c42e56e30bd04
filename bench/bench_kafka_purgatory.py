"""The acks=all wait: each release's real DelayedProduce vs our reference, step by step, one pass.

Run: .venv/bin/python bench/bench_kafka_purgatory.py [-n STEPS] [--batch B] [--seed S] [RELEASE ...]
Each input is one step of an operation (`kafka_purgatory.random_case`): its creation, a tryComplete with the
validator's answers of the moment, or the deadline (run); its result, the partitions asked, every partition's state and
the callback's map are compared (request DPROD on the broker-side bridge: the Scala kafka.server.DelayedProduce with a
Mockito ReplicaManager up to 4.2, the Java org.apache.kafka.server.purgatory.DelayedProduce from 4.3). Releases run
side by side, one JVM each. Prints, per release: steps and operations compared, differences (the smallest in full);
Kafka's rate per JVM CPU second and ours per CPU second (kafka_steps.py). Asserts nothing.
Default: 1,000,000 steps on each of 4.4.0, 4.1.2, 4.0.2 and 3.9.1.
"""

from __future__ import annotations

import kafka_steps
from kcheck.reference import kafka_purgatory

if __name__ == "__main__":
    kafka_steps.main(__doc__, "DelayedProduce", "steps", kafka_purgatory, "DPROD", "DelayedProduce", server=True,
                     batch=2000)
