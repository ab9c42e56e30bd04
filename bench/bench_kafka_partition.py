"""One partition's broker side: each release's real kafka.cluster.Partition vs the replication model's steps, op by op.

Run: .venv/bin/python bench/bench_kafka_partition.py [-n OPS] [--batch B] [--seed S] [RELEASE ...]
Each input is a script of ops on one Partition (`kafka_partition.random_case`): become leader or follower, appends,
followers' fetches, maybeShrinkIsr, AlterPartition answers, KRaft images of broker epochs, fencing and controlled
shutdown; after every op the epochs, the committed and maximal ISR, the pending proposal, the high watermark, the
log end, the leader's view of each follower, the AlterPartition sent and held, and the op's error are compared
(request PART on the broker-side bridge, answered by reference/harness/KcheckPartition.java; ours by the model's own
steps under `Protocol.current`, 4.4.0's rules for
every release: they are the same from 3.9.0). Prints: ops compared (in how many scripts), differences (the smallest
in full); Kafka's rate per JVM CPU second and the model's per CPU second (kafka_steps.py). Asserts nothing.
Default: 1,000,000 ops on each of 4.4.0, 4.1.2, 4.0.2 and 3.9.1.
"""

from __future__ import annotations

import kafka_steps
from kcheck.reference import kafka_partition

if __name__ == "__main__":
    kafka_steps.main(__doc__, "Partition", "ops", kafka_partition, "PART", "Partition", server=True, batch=500,
                     releases=("4.4.0", "4.1.2", "4.0.2", "3.9.1"))
