"""The idempotent producer's client bookkeeping: each release's real TransactionManager vs our reference, one pass.

Run: .venv/bin/python bench/bench_kafka_client_producer_state.py [-n STEPS] [--batch B] [--seed S] [RELEASE ...]
Each input is one step of a script (`kafka_client_producer_state.random_case`, drawn per release since which batch
can be drained or answered next depends on the release's verdicts): a new batch, a drain, an answer (success,
OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID, DUPLICATE_SEQUENCE_NUMBER, retriable, non-retriable and fatal
errors, in time or past delivery.timeout.ms), an expiry, a Sender loop (sequence resolution, epoch bump) or an
InitProducerId answer; its verdict and the whole bookkeeping after it are compared (request TXNCLI,
reference/harness/KcheckClientProducerState.java). Releases run side by side, one JVM each. Prints, per release:
steps and scripts compared, differences (the smallest script in full) and the seconds the run took; Kafka's rate per
JVM CPU second and ours per CPU second (kafka_steps.py). Asserts nothing.
Default: 1,000,000 steps on each of 4.4.0, 4.1.2, 4.0.2 and 3.9.1.
"""

from __future__ import annotations

import kafka_steps
from kcheck.reference import kafka_client_producer_state

if __name__ == "__main__":
    kafka_steps.main(__doc__, "idempotent producer client state", "steps", kafka_client_producer_state, "TXNCLI",
                     "idempotent producer client state", batch=500, per_release=True)
