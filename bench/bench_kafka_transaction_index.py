"""The last stable offset and the aborted-transaction index: Kafka's ProducerStateManager and TransactionIndex vs our
reference, step by step, one pass.

Run: .venv/bin/python bench/bench_kafka_transaction_index.py [-n STEPS] [--batch B] [--seed S] [RELEASE ...]
Each input is one step of a script (`kafka_transaction_index.random_case`, drawn per release since what the log
admits next depends on the release's verdicts): a client's batch (transactional or not), a COMMIT or ABORT marker, the
clock, an expiry check, a high-watermark move, a roll, a segment deletion, a log-start move, a truncation or a
read_committed fetch's collection of aborted transactions; its verdict and, after it, the high watermark, the first
unstable and last stable offsets, the producer state's first unstable and undecided offsets and every segment's
transaction index are compared (request TXNIDX, reference/harness/KcheckProducerState.java). Prints, per release:
steps and scripts compared, differences (the smallest script in full) and the seconds the run took; Kafka's rate per
JVM CPU second and ours per CPU second (kafka_steps.py). Asserts nothing.
Default: 1,000,000 steps on each of 4.4.0, 4.1.2, 4.0.2 and 3.9.1.
"""

from __future__ import annotations

import kafka_steps
from kcheck.reference import kafka_transaction_index

if __name__ == "__main__":
    kafka_steps.main(__doc__, "transaction index", "steps", kafka_transaction_index, "TXNIDX", "the transaction index",
                     batch=500, per_release=True)
