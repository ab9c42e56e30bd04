"""Transactions under faults on a real cluster (kcheck.cluster.txn_chaos), transaction version 1 beside version 2.

For each release of --releases (default 3.9.1, whose transactions are version 1, and 4.4.0, version 2: the finalized
`transaction.version` feature level is read from the cluster and printed), --campaigns campaigns of --seconds each,
every one on its own fresh 3-broker cluster: --producers transactional producers (--clients: the release's own Java
client, which speaks transaction version 2 where the cluster finalized it, or kafka-python, version 1 only), each
transaction writing --records values to each of the topic's 2 partitions and then committing or aborting (seeded), a
read_committed reader throughout, a kill -9 of partition 0's leader and later of the broker coordinating producer
0's transactional id (each started again 5 s later), then a final read_committed read and the checks (aborted-read,
lost-write, torn-transaction, duplicate). Prints a side-by-side table, one column per campaign, and the totals per
release. Exit 1 if any campaign found an anomaly or could not read to the end. Usage (it starts JVMs: under the
machine's shared lock):

    python bench/chaos_transactions.py [--releases 3.9.1,4.4.0] [--campaigns 1] [--seconds 30] [--producers 2]
                                       [--records 3] [--clients java,python] [--seed 0] [--json-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

from kcheck.cluster.txn_chaos import (
    ANOMALY_KINDS,
    OUTCOMES,
    TxnOutcome,
    TxnSettings,
    history_json,
    run_campaign,
    side_by_side,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--releases", default="3.9.1,4.4.0")
    ap.add_argument("--campaigns", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--producers", type=int, default=2)
    ap.add_argument("--records", type=int, default=3)
    ap.add_argument("--clients", default="java", help="java (the release's own client), python (kafka-python), or both")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json-dir", help="write each campaign's history (<release>-<n>.json) and its nodes' logs here")
    a = ap.parse_args(argv)
    outs: list[TxnOutcome] = []
    runs = [(v, c, n) for v in a.releases.split(",") for c in a.clients.split(",") for n in range(a.campaigns)]
    for version, client, n in runs:
        s = TxnSettings(topic=f"kcheck-txn-{n}", duration=a.seconds, seed=a.seed + n, producers=a.producers,
                        records=a.records, client=client)
        print(f"== {version}, {client} client, campaign {n + 1} of {a.campaigns} (seed {s.seed})", flush=True)
        stem = os.path.join(a.json_dir, f"{version}-{client}-{n}") if a.json_dir else None
        o = run_campaign(version, s, say=lambda line: print(line, flush=True),
                         logs=f"{stem}-logs" if stem else None)
        if stem:
            with open(f"{stem}.json", "w", encoding="utf-8") as f:
                f.write(history_json(o))
        for e in o.errors:
            print(f"   note: {e}")
        for kind, found in o.verdict.anomalies.items():
            for text in found[:5]:
                print(f"   {kind}: {text}")
        outs.append(o)
    rows = side_by_side(outs)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for o in outs:
        t = totals[f"{o.version} {o.settings.client}"]
        t["campaigns"] += 1
        t["seconds"] += round(o.seconds)
        for k in OUTCOMES:
            t[k] += o.verdict.outcomes[k]
        for k in ANOMALY_KINDS:
            t[k] += len(o.verdict.anomalies[k])
    for version, t in totals.items():
        print(f"{version}: " + ", ".join(f"{k} {v}" for k, v in t.items()))
    return 0 if all(o.verdict.ok for o in outs) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # the campaign under way stopped its producers and its cluster on the way out
        print("interrupted", file=sys.stderr)
        sys.exit(130)
