"""Transactions under faults on a real cluster (kcheck.cluster.txn_chaos), transaction version 1 beside version 2.

For each release of --releases (default 3.9.1, whose transactions are version 1, and 4.4.0, version 2: the finalized
`transaction.version` feature level is read from the cluster and printed), --campaigns campaigns of --seconds each,
every one on its own fresh cluster (3 brokers, --controllers controllers): --producers transactional producers
(--clients: the release's own Java client, which speaks transaction version 2 where the cluster finalized it, or
kafka-python, version 1 only), each transaction writing --records values to each of the topic's 2 partitions and
then committing or aborting (seeded), a read_committed reader throughout, faults, then a final read_committed read
and the checks (aborted-read, lost-write, torn-transaction, duplicate). The faults: without --faults, a kill -9 of
partition 0's leader and later of the broker coordinating producer 0's transactional id (each started again 5 s
later); with --faults KINDS, a random schedule of those kinds (seeded) aimed at the coordinator's broker and
partition 0's leader, elections and reassignments moving the coordinator, and with --controllers 3 the controllers
too, with --network (root) the partition kinds (`kcheck chaos --producers transactional` draws the same). Prints a
side-by-side table, one column per campaign, and the totals per release. With --json-dir every campaign's document
(txn-history.schema.json) and its nodes' logs are kept; --table DIR prints, from every document there, per release
and per fault (kind and target role): the faults injected, the transactions under way during them by outcome, and
the anomalies during them. Exit 1 if any campaign found an anomaly or could not read to the end. Usage (it starts
JVMs: under the machine's shared lock):

    python bench/chaos_transactions.py [--releases 3.9.1,4.4.0] [--campaigns 1] [--seconds 30] [--producers 2]
                                       [--records 3] [--clients java,python] [--seed 0] [--faults kill,pause]
                                       [--controllers 1] [--network] [--json-dir DIR] [--table DIR]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from collections import defaultdict
from typing import Any

from kcheck.cluster.txn_chaos import (
    ANOMALY_KINDS,
    OUTCOMES,
    TxnOutcome,
    TxnSettings,
    random_txn_schedule,
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
    ap.add_argument("--faults", default="", help="fault kinds of a random schedule (default: the two kills)")
    ap.add_argument("--controllers", type=int, default=1)
    ap.add_argument("--network", action="store_true", help="every node in its own network namespace (root): the "
                                                           "partition kinds can run")
    ap.add_argument("--json-dir", help="write each campaign's document (<release>-<client>-<seed>.json) and its "
                                       "nodes' logs here")
    ap.add_argument("--table", metavar="DIR", help="only print the per-fault table of the documents in DIR")
    a = ap.parse_args(argv)
    if a.table:
        print_fault_table(a.table)
        return 0
    outs: list[TxnOutcome] = []
    kinds = tuple(k for k in a.faults.split(",") if k)
    runs = [(v, c, n) for v in a.releases.split(",") for c in a.clients.split(",") for n in range(a.campaigns)]
    for version, client, n in runs:
        s = TxnSettings(topic=f"kcheck-txn-{n}", duration=a.seconds, seed=a.seed + n, producers=a.producers,
                        records=a.records, client=client, faults=kinds, controllers=a.controllers,
                        network=a.network)
        schedule = random_txn_schedule(s, kinds) if kinds else None
        print(f"== {version}, {client} client, campaign {n + 1} of {a.campaigns} (seed {s.seed})", flush=True)
        stem = (os.path.join(a.json_dir, f"{version}-{client}-{'_'.join(kinds) or 'kills'}-c{a.controllers}-{s.seed}")
                if a.json_dir else None)
        o = run_campaign(version, s, say=lambda line: print(line, flush=True),
                         logs=f"{stem}-logs" if stem else None, schedule=schedule)
        if stem:
            with open(f"{stem}.json", "w", encoding="utf-8") as f:
                f.write(o.document())
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


def fault_rows(docs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, int]]:
    """Per (release, `kind role`): faults injected, transactions under way during one by outcome (a transaction
    counted once per fault kind even if two such faults overlap it), and anomalies whose text names such a fault."""
    rows: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for d in docs:
        release = f"{d['release']} {d['settings']['client']}"
        windows = d["verdict"]["faults"]
        names = {f"{w['kind']} {w['role'] or 'drawn'}" for w in windows}
        for name in names:
            mine = [w for w in windows if f"{w['kind']} {w['role'] or 'drawn'}" == name]
            r = rows[(release, name)]
            r["faults"] += len(mine)
            r["campaigns"] += 1
            for x in d["txns"]:
                if any(w["start"] <= x["ended"] and (w["end"] is None or w["end"] >= x["began"]) for w in mine):
                    r[x["outcome"]] += 1
            kind = name.split()[0]
            r["anomalies"] += sum(f"during {kind} " in text for found in d["verdict"]["anomalies"].values()
                                  for text in found)
    return rows


def print_fault_table(folder: str) -> None:
    docs = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path, encoding="utf-8") as f:
            docs.append(json.load(f))
    per: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for d in docs:
        t = per[f"{d['release']} {d['settings']['client']}"]
        t["campaigns"] += 1
        for k in OUTCOMES:
            t[k] += d["verdict"]["outcomes"][k]
        for k in ANOMALY_KINDS:
            t[k] += len(d["verdict"]["anomalies"][k])
        t["incomplete"] += d["verdict"]["status"] == "incomplete"
    for release, t in sorted(per.items()):
        print(f"{release}: " + ", ".join(f"{k} {v}" for k, v in t.items()))
    print("| release | fault (target) | campaigns | injected | committed | aborted | unknown | anomalies |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for (release, name), r in sorted(fault_rows(docs).items()):
        print(f"| {release} | {name} | {r['campaigns']} | {r['faults']} | {r['committed']} | {r['aborted']} | "
              f"{r['unknown']} | {r['anomalies']} |")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # the campaign under way stopped its producers and its cluster on the way out
        print("interrupted", file=sys.stderr)
        sys.exit(130)
