"""The transaction coordinator's state machine: each release's real TransactionMetadata vs our reference, op by op.

Run: .venv/bin/python bench/bench_kafka_txn_metadata.py [-n OPS] [--batch B] [--seed S] [RELEASE ...]
Each input is one op on one transactional id's metadata (`kafka_txn_metadata.random_case`, walked on our reference as
the release): a prepare (fence, InitProducerId's epoch bump, producer id rotation, AddPartitions, EndTxn's abort or
commit, the markers' completion, expiry), a completion of the last transit as it is or with a field changed, a failed
append, a failed fence write or a written marker; the transit, Left or exception (class and message) and the whole
metadata after it are compared (request TXNMETA on the broker-side bridge: Scala TransactionMetadata in kafka_2.13 up
to 4.1, Java in kafka-transaction-coordinator from 4.2). Releases run side by side, one JVM each. Prints, per
release: ops compared (in how many scripts), differences (the smallest in full); Kafka's rate per JVM CPU second and
ours per CPU second (kafka_steps.py). Asserts nothing. Default: 1,000,000 ops on each of 4.4.0, 4.1.2, 4.0.2, 3.9.1.
"""

from __future__ import annotations

import kafka_steps
from kcheck.reference import kafka_txn_metadata

if __name__ == "__main__":
    kafka_steps.main(__doc__, "TransactionMetadata", "ops", kafka_txn_metadata, "TXNMETA", "TransactionMetadata",
                     server=True, batch=2000, per_release=True)
