"""Trace validation at quiescent points (kcheck.cluster.trace_check): random model runs played on a new KRaft cluster
of three brokers, every observable compared after each step. Prints each step (with -v), then the runs, the steps
compared and each difference:

    python bench/trace_validation.py --runs 3 --steps 8 [--seed 1] [--version 4.4.0] [--unclean] [-v]

--unclean also plays `UNCLEAN_SCRIPT` (the replicas die in turn, an operator's unclean election, they return).
"""

from __future__ import annotations

import argparse

from kcheck.cluster.local import LocalCluster
from kcheck.cluster.trace_check import UNCLEAN_SCRIPT, Steps, config, run_one, run_script
from kcheck.model.replication import Protocol


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--version", default="4.4.0")
    ap.add_argument("--unclean", action="store_true")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    cfg = config(args.steps)
    p = Protocol.current(args.version)
    out = Steps()
    with LocalCluster(args.version, 3) as cluster:
        if args.unclean:
            run_script(cluster, p, config(len(UNCLEAN_SCRIPT)), 0, UNCLEAN_SCRIPT, out, print if args.v else None)
        for seed in range(args.seed, args.seed + args.runs):
            run_one(cluster, p, cfg, seed, args.steps, out, print if args.v else None)
    print(f"{out.runs} runs, {out.steps} steps compared, {len(out.differences)} differences")
    for d in out.differences:
        print("  run {} step {} {}: {} model {!r} cluster {!r}".format(*d))


if __name__ == "__main__":
    main()
