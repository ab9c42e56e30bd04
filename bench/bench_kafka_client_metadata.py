"""The client metadata cache: each release's kafka-clients Metadata vs our reference, call by call, one pass.

Run: .venv/bin/python bench/bench_kafka_client_metadata.py [-n CALLS] [--batch B] [--seed S] [RELEASE ...]
Each input is one call of a script on a fresh Metadata (`kafka_client_metadata.random_case`): a MetadataResponse
(full or partial, version 8 or 12, epochs back and forth or absent, topic ids changing, errors), an out-of-band epoch,
a KIP-951 leader hint, an update request, a failed update or timeToNextUpdate; its result and the cache after it
(updateRequested, topic ids, nodes, and per partition the current leader, its epoch and the last seen epoch) are
compared (request CMETA, reference/harness/KcheckClientMetadata.java). Releases run side by side, one JVM each.
Prints, per release: calls and scripts compared, differences (the smallest in full); Kafka's rate per JVM CPU second
and ours per CPU second (kafka_steps.py). Asserts nothing.
Default: 1,000,000 calls on each of 4.4.0, 4.1.2, 4.0.2 and 3.9.1.
"""

from __future__ import annotations

import kafka_steps
from kcheck.reference import kafka_client_metadata

if __name__ == "__main__":
    kafka_steps.main(__doc__, "client metadata", "calls", kafka_client_metadata, "CMETA", "client metadata")
