"""Producer state: each release's real ProducerStateManager vs our reference, step by step, one pass.

Run: .venv/bin/python bench/bench_kafka_producer_state.py [-n STEPS] [--batch B] [--seed S] [RELEASE ...]
Each input is one step of a script (`kafka_producer_state.random_case`, drawn per release since what the log admits
next depends on the release's verdicts): a client's batch, a marker, a verification entry, the clock, an expiry
check, a roll, a segment deletion, a log-start move or a truncation; its verdict and the whole producer state after
it are compared (request PSTATE, reference/harness/KcheckProducerState.java). Releases run side by side, one JVM
each. Prints, per release: steps and scripts compared, differences (the smallest script in full) and the seconds
the run took; Kafka's rate per JVM CPU second and ours per CPU second (kafka_steps.py). Asserts nothing.
Default: 1,000,000 steps on each of 4.4.0, 4.1.2, 4.0.2 and 3.9.1.
"""

from __future__ import annotations

import kafka_steps
from kcheck.reference import kafka_producer_state

if __name__ == "__main__":
    kafka_steps.main(__doc__, "producer state", "steps", kafka_producer_state, "PSTATE", "producer state", batch=500,
                     per_release=True)
