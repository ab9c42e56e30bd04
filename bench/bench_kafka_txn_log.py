"""The last stable offset, the transaction indexes and read_committed reads: a real UnifiedLog (4.1 on) vs our
reference, step by step, one pass.

Run: .venv/bin/python bench/bench_kafka_txn_log.py [-n STEPS] [--batch B] [--seed S] [RELEASE ...]
Each input is one step of a script (`kafka_txn_log.random_case`, drawn per release): a client's batch (transactional
or not), a COMMIT or ABORT marker, the clock, an expiry check, a high-watermark move, a roll, a segment deletion, a
log-start move, a truncation or a read_committed read; its verdict (for a read, the aborted transactions it returns)
and, after it, the high watermark, UnifiedLog's first unstable and last stable offsets, the log start and end and
every segment's transaction index are compared (request TXNLOG, reference/harness/KcheckTxnLog.java). Each script is
a new UnifiedLog in a temporary directory, so Kafka's side is slower than TXNIDX's. Prints, per release: steps and
scripts compared, differences (the smallest script in full) and the seconds the run took; Kafka's rate per JVM CPU
second and ours per CPU second (kafka_steps.py). Asserts nothing.
Default: 1,000,000 steps on each of 4.4.0, 4.1.2 and 3.9.1; 4.0's UnifiedLog (Scala, in kafka_2.13) is on the
broker-side bridge only, so 4.0.x releases run on their own (`bench_kafka_txn_log.py 4.0.2`).
"""

from __future__ import annotations

import sys

import kafka_steps
from kcheck.reference import kafka_txn_log

if __name__ == "__main__":
    given = [a for a in sys.argv[1:] if a[:1].isdigit() and "." in a]
    server = any(kafka_txn_log.broker_side(v) for v in given)
    if server and not all(kafka_txn_log.broker_side(v) for v in given):
        print("kcheck: error: releases: 4.0.x runs on the broker-side bridge: give it alone", file=sys.stderr)
        sys.exit(2)
    kafka_steps.main(__doc__, "UnifiedLog transactions", "steps", kafka_txn_log, "TXNLOG",
                     "the transaction index on a UnifiedLog", server=server, batch=200, per_release=True,
                     releases=("4.4.0", "4.1.2", "3.9.1"))
