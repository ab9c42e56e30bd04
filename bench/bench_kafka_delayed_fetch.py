"""A fetch waiting in the purgatory: each release's real DelayedFetch vs our reference, op by op, one pass.

Run: .venv/bin/python bench/bench_kafka_delayed_fetch.py [-n OPS] [--batch B] [--seed S] [RELEASE ...]
Each input is one op on a waiting fetch (`kafka_delayed_fetch.random_case`): a tryComplete with the broker's state of
the moment (the partition's lookup and offset snapshot, or the exception they throw; the log end, high watermark and
last stable offset; throttling; the last fetched epoch's end), or the deadline (run); its result or escaped
exception, the collaborators' calls in order, the completion, callback and expiry counts and what onComplete reads
are compared (request DFETCH on the broker-side bridge: kafka.server.DelayedFetch with a Mockito ReplicaManager and
Partition). Releases run side by side, one JVM each. Prints, per release: ops and operations compared, differences
(the smallest in full); Kafka's rate per JVM CPU second and ours per CPU second (kafka_steps.py). Asserts nothing.
Default: 1,000,000 ops on each of 4.4.0, 4.1.2, 4.0.2 and 3.9.1.
"""

from __future__ import annotations

import kafka_steps
from kcheck.reference import kafka_delayed_fetch

if __name__ == "__main__":
    kafka_steps.main(__doc__, "DelayedFetch", "ops", kafka_delayed_fetch, "DFETCH", "DelayedFetch", server=True,
                     batch=2000)
