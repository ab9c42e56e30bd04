"""Fault campaigns on a real KRaft cluster (kcheck.cluster.chaos): today's defaults against the 2013 settings.

One cluster (Kafka --kafka-version, 3 brokers, kcheck chaos's campaign broker settings) runs, one topic per campaign:

1. Today's defaults: RF 3, min.insync.replicas 2, unclean election off, random schedules over every default fault
   kind (kill, pause, restart, shutdown, elect-preferred, elect-unclean (skipped: the topic forbids it),
   reassign; lossy-kill too with --lossy), --defaults campaigns of --seconds each. Expected: no acks=all record lost.
2. The 2013 settings: RF 3, min.insync.replicas 1, unclean election on, over --seeds seeds: the scripted scenario
   (both followers paused past replica.lag.time.max.ms, the leader killed, the followers resumed, an unclean
   election, the old leader started), then a random schedule per seed over the same kinds.

3. The request path (issue 35), --request-path campaigns of --seconds-request each: today's topic settings, every
   producer kind of --producers at once (kcheck.cluster.producers: kafka-python idempotent and not, max in flight 1
   and 5, acks=1, and the release's VerifiableProducer with idempotence on and off), so each idempotent producer
   and its twin with idempotence off face the same faults; random schedules over the default kinds plus
   pause-followers and delete-records.

Prints per campaign: settings, faults injected per kind, records acknowledged per acks level, acks=all records lost,
acks=1 records lost, the faults before the first loss, duration, and per producer kind what the request-path checks
counted; and in the end how often acks=all loss happened under each setting, per producer kind over the request-path
campaigns: acknowledged, duplicates, reorders, indefinite failures and how many of them were committed, stalls, and
the cluster's start and stop times. Usage:

    python bench/chaos_campaigns.py [--kafka-version 4.4.0] [--defaults 3] [--seconds 60] [--seeds 5] [--lossy]
                                    [--request-path 0] [--seconds-request 45] [--producers KINDS] [--json-dir DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kcheck.cluster.chaos import (
    CAMPAIGN_BROKER_CONFIG,
    DEFAULT_FAULTS,
    Campaign,
    Outcome,
    Settings,
    parse_schedule,
    random_schedule,
)
from kcheck.cluster.history import PRODUCER_COUNTS, PRODUCER_KINDS
from kcheck.cluster.local import DEFAULT_VERSION, LocalCluster
from kcheck.cluster.producers import parse_producers

REQUEST_FAULTS = (*DEFAULT_FAULTS, "pause-followers", "delete-records")
SHOWN = ("acknowledged", "duplicates", "reorders", "indefinite_failures", "indefinite_committed", "stalls",
         "sessions", "definite_failures", "unresolved")

SCENARIO_2013 = (Path(__file__).resolve().parent.parent / "examples" / "chaos" / "2013.txt").read_text(encoding="utf-8")


def row(name: str, o: Outcome) -> str:
    c, v = o.verdict.counts, o.verdict
    faults = ",".join(f"{k}:{n}" for k, n in sorted(v.faults.items())) or "-"
    lost = v.by_check()["history.acked-not-lost"]
    after = "; ".join(lost[0].faults_before) if lost else "-"
    failed = sorted(k for k, x in v.by_check().items() if x)
    return (f"{name:<16} {o.seconds:6.1f}s  faults {faults:<58} acked all {c['acked_acks_all']:>6} "
            f"1 {c['acked_acks_1']:>6}  lost all {c['lost_acks_all']:>5} 1 {c['lost_acks_1']:>5}  "
            f"failed checks {','.join(failed) or '-'}  poll skips {c.get('poll_skips', 0)}  {v.status}\n"
            f"{'':<18}faults before the first acks=all loss: {after}"
            + "".join(f"\n{'':<18}{kind:<16} " + " ".join(f"{k} {n[k]}" for k in SHOWN)
                      for kind, n in v.producers.items()))


def producer_summary(outcomes: list[Outcome]) -> None:
    """Per producer kind, summed over the campaigns: the campaign figures of issue 35."""
    total: dict[str, dict[str, int]] = {}
    for o in outcomes:
        for name, n in o.verdict.producers.items():
            row_ = total.setdefault(name, dict.fromkeys(PRODUCER_COUNTS, 0))
            for k in PRODUCER_COUNTS:
                row_[k] += n[k]
    print(f"  {'producer':<16} {'idempotent':>10} {'acknowledged':>12} {'duplicates':>10} {'reorders':>8} "
          f"{'indefinite':>10} {'committed':>9} {'stalls':>6} {'sessions':>8} {'definite':>8}")
    for name in sorted(total, key=lambda k: (not PRODUCER_KINDS[k].idempotent, k)):
        n = total[name]
        print(f"  {name:<16} {'yes' if PRODUCER_KINDS[name].idempotent else 'no':>10} {n['acknowledged']:>12} "
              f"{n['duplicates']:>10} {n['reorders']:>8} {n['indefinite_failures']:>10} "
              f"{n['indefinite_committed']:>9} {n['stalls']:>6} {n['sessions']:>8} {n['definite_failures']:>8}")
    hard = {}
    for o in outcomes:
        for c, vs in o.verdict.by_check().items():
            hard[c] = hard.get(c, 0) + len(vs)
    print("  violations per check: " + ", ".join(f"{c.removeprefix('history.')} {n}" for c, n in hard.items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kafka-version", default=DEFAULT_VERSION)
    ap.add_argument("--defaults", type=int, default=3, help="campaigns with today's defaults")
    ap.add_argument("--seconds", type=float, default=60.0, help="seconds of each defaults campaign")
    ap.add_argument("--seeds", type=int, default=5, help="seeds of the 2013 settings (scenario + random each)")
    ap.add_argument("--seconds-2013", type=float, default=30.0, help="seconds of each random 2013 campaign")
    ap.add_argument("--rate", type=float, default=50.0)
    ap.add_argument("--lossy", action="store_true", help="also draw lossy-kill (kcheck.cluster.lossy)")
    ap.add_argument("--request-path", type=int, default=0, help="request-path campaigns (every producer kind)")
    ap.add_argument("--seconds-request", type=float, default=45.0, help="seconds of each request-path campaign")
    ap.add_argument("--producers", default=",".join(PRODUCER_KINDS), help="producer kinds of the request-path "
                    "campaigns")
    ap.add_argument("--json-dir", help="write every campaign's JSON history there")
    args = ap.parse_args()
    kinds = (*DEFAULT_FAULTS, "lossy-kill") if args.lossy else DEFAULT_FAULTS
    out = Path(args.json_dir) if args.json_dir else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    settings = ", ".join(f"{k}={v}" for k, v in CAMPAIGN_BROKER_CONFIG.items())
    print(f"Kafka {args.kafka_version}, 3 brokers; broker settings {settings}; {args.rate:g} records/s per producer")
    cluster = LocalCluster(args.kafka_version, 3, config=CAMPAIGN_BROKER_CONFIG)
    cluster.start()
    print(f"cluster started in {cluster.started_in_s:.1f} s")
    results: dict[str, list[Outcome]] = {"defaults": [], "2013 scenario": [], "2013 random": [], "request path": []}
    producers = parse_producers(args.producers)
    try:
        def campaign(group: str, name: str, settings: Settings, steps) -> None:
            o = Campaign(cluster, settings, steps).run()
            results[group].append(o)
            print(row(name, o), flush=True)
            if out is not None:
                (out / f"{name}.json").write_text(o.document(), encoding="utf-8")

        stamp = int(time.time())
        print(f"\n== today's defaults: RF 3, min.insync.replicas 2, unclean off; kinds {','.join(kinds)}")
        for seed in range(1, args.defaults + 1):
            s = Settings(f"bench-defaults-{stamp}-{seed}", 3, 3, 2, False, args.seconds, args.rate, seed, kinds)
            campaign("defaults", f"defaults-{seed}", s, random_schedule(seed, args.seconds, kinds))
        print("\n== the 2013 settings: RF 3, min.insync.replicas 1, unclean on")
        for seed in range(1, args.seeds + 1):
            s = Settings(f"bench-2013-scenario-{stamp}-{seed}", 1, 3, 1, True, 20.0, args.rate, seed, kinds)
            campaign("2013 scenario", f"2013-scenario-{seed}", s, parse_schedule(SCENARIO_2013, "scenario"))
            s = Settings(f"bench-2013-random-{stamp}-{seed}", 3, 3, 1, True, args.seconds_2013, args.rate, seed, kinds)
            campaign("2013 random", f"2013-random-{seed}", s, random_schedule(seed, args.seconds_2013, kinds))
        if args.request_path:
            print(f"\n== the request path: RF 3, min.insync.replicas 2, unclean off; producers {','.join(producers)}; "
                  f"kinds {','.join(REQUEST_FAULTS)}")
        for seed in range(1, args.request_path + 1):
            s = Settings(f"bench-request-{stamp}-{seed}", 3, 3, 2, False, args.seconds_request, args.rate, seed,
                         REQUEST_FAULTS, producers=producers)
            campaign("request path", f"request-{seed}", s, random_schedule(seed, args.seconds_request,
                                                                           REQUEST_FAULTS))
    finally:
        stopped = cluster.stop()
    print(f"\ncluster started in {cluster.started_in_s:.1f} s, stopped in {stopped:.1f} s")
    print("\nsummary (campaigns with acks=all loss / campaigns; records lost / acknowledged, acks=all and acks=1)")
    for group, os_ in results.items():
        if not os_ or group == "request path":
            continue
        hit = sum(1 for o in os_ if o.verdict.counts["lost_acks_all"])
        lost = sum(o.verdict.counts["lost_acks_all"] for o in os_)
        acked = sum(o.verdict.counts["acked_acks_all"] for o in os_)
        lost1 = sum(o.verdict.counts["lost_acks_1"] for o in os_)
        acked1 = sum(o.verdict.counts["acked_acks_1"] for o in os_)
        faults: dict[str, int] = {}
        for o in os_:
            for k, n in o.verdict.faults.items():
                faults[k] = faults.get(k, 0) + n
        print(f"  {group:<14} loss in {hit}/{len(os_)}; acks=all lost {lost}/{acked}, acks=1 lost {lost1}/{acked1}; "
              f"{sum(o.seconds for o in os_):.0f} s; faults " + ",".join(f"{k}:{n}" for k, n in sorted(faults.items())))
    if results["request path"]:
        print(f"\nper producer kind over the {len(results['request path'])} request-path campaign(s) "
              f"({sum(o.seconds for o in results['request path']):.0f} s; indefinite: failures with an indefinite "
              "error, committed: of them in the log)")
        producer_summary(results["request path"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
