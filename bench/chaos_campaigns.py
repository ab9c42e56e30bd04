"""Fault campaigns on a real KRaft cluster (kcheck.cluster.chaos): today's defaults against the 2013 settings.

One cluster (Kafka --kafka-version, 3 brokers, kcheck chaos's campaign broker settings) runs, one topic per campaign:

1. Today's defaults: RF 3, min.insync.replicas 2, unclean election off, random schedules over every default fault
   kind (kill, pause, restart, shutdown, elect-preferred, elect-unclean (skipped: the topic forbids it),
   reassign; lossy-kill too with --lossy), --defaults campaigns of --seconds each. Expected: no acks=all record lost.
2. The 2013 settings: RF 3, min.insync.replicas 1, unclean election on, over --seeds seeds: the scripted scenario
   (both followers paused past replica.lag.time.max.ms, the leader killed, the followers resumed, an unclean
   election, the old leader started), then a random schedule per seed over the same kinds.

3. The request path, --request-path campaigns of --seconds-request each: today's topic settings, every
   producer kind of --producers at once (kcheck.cluster.producers: kafka-python idempotent and not, max in flight 1
   and 5, acks=1, and the release's VerifiableProducer with idempotence on and off), so each idempotent producer
   and its twin with idempotence off face the same faults; random schedules over the default kinds plus
   pause-followers and delete-records.

4. Volume, with --releases 3.9.1,4.0.x,4.1.x,4.4.0 (`4.0.x`: the newest patch of that line
   kcheck knows): instead of 1-3, per release one cluster (--controllers, --network) and --campaigns random campaigns
   of --seconds per setting: today's defaults (min.insync.replicas 2, unclean off), the 2013 settings (min ISR 1,
   unclean on), unclean on with min ISR 2, and acks=1 (today's topic settings, an acks=1 producer only); each seed's
   schedule is the same under every setting, so the settings face the same faults. Every campaign's JSON history
   goes to --json-dir (default out/chaos-volume) as RELEASE/SETTING-SEED.json; the table (per setting and
   release: campaigns, duration, faults by kind, acknowledged writes, anomalies by kind in Jepsen's names) is built
   from every history there, so runs made apart (one release per run) add up, and written with --markdown FILE.
   --table-only prints and writes the table from the histories already there, starting nothing.

Prints per campaign: settings, faults injected per kind, records acknowledged per acks level, acks=all records lost,
acks=1 records lost, the faults before the first loss, duration, and per producer kind what the request-path checks
counted; and in the end how often acks=all loss happened under each setting, per producer kind over the request-path
campaigns: acknowledged, duplicates, reorders, indefinite failures and how many of them were committed, stalls, and
the cluster's start and stop times. Usage:

    python bench/chaos_campaigns.py [--kafka-version 4.4.0] [--defaults 3] [--seconds 60] [--seeds 5] [--lossy]
                                    [--request-path 0] [--seconds-request 45] [--producers KINDS] [--json-dir DIR]
    python bench/chaos_campaigns.py --releases 3.9.1,4.0.x,4.1.x,4.4.0 [--campaigns 20] [--seconds 60]
                                    [--controllers 3] [--network] [--max-concurrent 2] [--settings NAMES]
                                    [--json-dir DIR] [--markdown FILE] [--table-only]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcheck.cluster.chaos import (
    CAMPAIGN_BROKER_CONFIG,
    DEFAULT_FAULTS,
    NETWORK_FAULTS,
    Campaign,
    Outcome,
    Settings,
    parse_schedule,
    random_schedule,
)
from kcheck.cluster.folder import CONTROLLER_ID
from kcheck.cluster.history import CONTROLLER_GONE, PRODUCER_COUNTS, PRODUCER_KINDS
from kcheck.cluster.local import DEFAULT_VERSION, LocalCluster
from kcheck.cluster.producers import DEFAULT_PRODUCERS, parse_producers
from kcheck.reference.kafka_jars import BRIDGE_RELEASES, UnknownRelease, check_release

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
    """Per producer kind, summed over the campaigns: the request path's campaign figures."""
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

# ---------------------------------------------------------------------------------------------------------
# volume: every setting on every release


@dataclass(frozen=True)
class Setting:
    label: str
    min_insync_replicas: int
    unclean: bool
    producers: tuple[str, ...]


# Each setting in the order of the docs table; the topic settings are topic configs, so one cluster runs them all.
VOLUME_SETTINGS = {
    "defaults": Setting("today's defaults (min ISR 2, unclean off)", 2, False, DEFAULT_PRODUCERS),
    "2013": Setting("the 2013 settings (min ISR 1, unclean on)", 1, True, DEFAULT_PRODUCERS),
    "unclean-isr2": Setting("unclean on, min ISR 2", 2, True, DEFAULT_PRODUCERS),
    "acks1": Setting("acks=1 (min ISR 2, unclean off, an acks=1 producer only)", 2, False, ("acks1",)),
}
DEFAULT_RELEASES = "3.9.1,4.0.x,4.1.x,4.4.0"


def release_of(text: str) -> str:
    """A release kcheck runs, or `4.0.x`: the newest patch of that line kcheck knows (BRIDGE_RELEASES, newest first)."""
    if text.endswith(".x"):
        line = text[:-1]
        newest = next((v for v in BRIDGE_RELEASES if v.startswith(line)), None)
        if newest is None:
            raise SystemExit(f"--releases: no release of the {text} line kcheck knows")
        return newest
    try:
        return check_release(text)
    except UnknownRelease as e:
        raise SystemExit(f"--releases: {e}") from None


def setting_of(settings: dict[str, Any]) -> str:
    """Which of VOLUME_SETTINGS a history's settings are (read back from the JSON, not from its file name)."""
    for name, s in VOLUME_SETTINGS.items():
        if (settings["min_insync_replicas"], settings["unclean"], tuple(settings["producers"])) == (
                s.min_insync_replicas, s.unclean, s.producers):
            return name
    return "other"


def volume(args: argparse.Namespace, out: Path) -> None:
    """Per release one cluster, --campaigns seeds, every setting per seed (the same schedule under each)."""
    kinds = NETWORK_FAULTS if args.network else DEFAULT_FAULTS
    names = [n.strip() for n in args.settings.split(",")]
    for release in [release_of(r.strip()) for r in args.releases.split(",")]:
        where = out / release
        where.mkdir(parents=True, exist_ok=True)
        cluster = LocalCluster(release, 3, config=CAMPAIGN_BROKER_CONFIG, controllers=args.controllers,
                               network=args.network)
        cluster.start()
        print(f"\n== Kafka {release}: cluster of {args.controllers} controller(s) and 3 brokers"
              f"{' in namespaces' if args.network else ''} started in {cluster.started_in_s:.1f} s", flush=True)
        try:
            stamp = int(time.time())
            for seed in range(args.first_seed, args.first_seed + args.campaigns):
                steps = random_schedule(seed, args.seconds, kinds, max_concurrent=args.max_concurrent,
                                        controllers=args.controllers)
                for name in names:
                    s = VOLUME_SETTINGS[name]
                    settings = Settings(f"volume-{name}-{stamp}-{seed}", 3, 3, s.min_insync_replicas, s.unclean,
                                        args.seconds, args.rate, seed, kinds, producers=s.producers,
                                        max_concurrent=args.max_concurrent, controllers=args.controllers,
                                        network=args.network)
                    o = Campaign(cluster, settings, steps).run()
                    o.cluster = {"version": release, "attached": False, "start_seconds": round(cluster.started_in_s, 2)}
                    (where / f"{name}-{seed}.json").write_text(o.document(), encoding="utf-8")
                    print(row(f"{name}-{seed}", o), flush=True)
        finally:
            print(f"cluster stopped in {cluster.stop():.1f} s", flush=True)


def volume_rows(out: Path) -> list[dict[str, Any]]:
    """The table's rows, per setting and release, summed over every history under `out`."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(out.glob("*/*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        key = (setting_of(doc["settings"]), doc["cluster"]["version"])
        r = rows.setdefault(key, {"setting": key[0], "release": key[1], "campaigns": 0, "seconds": 0.0,
                                  "faults": Counter(), "acked_all": 0, "acked_1": 0, "lost_1": 0,
                                  "anomalies": Counter(), "lossy_campaigns": 0, "duration": set(), "failovers": 0})
        v = doc["verdict"]
        r["campaigns"] += 1
        r["seconds"] += doc["seconds"]
        r["duration"].add(doc["settings"]["duration"])
        r["failovers"] += _count_faults(doc["events"], r["faults"])
        r["acked_all"] += v["counts"]["acked_acks_all"]
        r["acked_1"] += v["counts"]["acked_acks_1"]
        r["lost_1"] += v["counts"]["lost_acks_1"]
        r["anomalies"].update(x["anomaly"] or x["check"].removeprefix("history.") for x in v["violations"])
        r["lossy_campaigns"] += int(v["counts"]["lost_acks_all"] > 0)
        r["lost_all"] = r.get("lost_all", 0) + v["counts"]["lost_acks_all"]
    order = list(VOLUME_SETTINGS)
    return sorted(rows.values(), key=lambda r: (order.index(r["setting"]) if r["setting"] in order else len(order),
                                                tuple(int(x) for x in r["release"].split("."))))


def _count_faults(events: list[dict[str, Any]], into: Counter[str]) -> int:
    """Count the faults started, per kind (a controller's apart); return how many hit the active controller: the
    quorum's leader in DescribeQuorum's last answer before the fault, of its step (as history.controller-failover
    reads it)."""
    quorum = sorted((e for e in events if e["type"] == "quorum"), key=lambda e: e["t"])
    failovers = 0
    for e in events:
        if e["type"] != "fault" or e["phase"] != "start":
            continue
        on_controller = any(n >= CONTROLLER_ID for n in e["brokers"])
        into[f"{e['kind']} (controller)" if on_controller else e["kind"]] += 1
        before = [q["leader"] for q in quorum if q["step"] == e["step"] and q["t"] <= e["t"]]
        failovers += int(on_controller and e["kind"] in CONTROLLER_GONE and before[-1:] == e["brokers"])
    return failovers


def _counts(c: Counter[str]) -> str:
    return ", ".join(f"{k} {n:,}" for k, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"


def volume_table(rows: list[dict[str, Any]]) -> str:
    """The item-6 table as Markdown; anomalies by Jepsen's name (a check's own name where none fits)."""
    lines = ["| setting | release | campaigns | duration | faults by kind | of them on the active controller "
             "| acknowledged acks=all | acknowledged acks=1 | anomalies by kind | acks=1 lost (not promised) |",
             "|---|---|---:|---:|---|---:|---:|---:|---|---:|"]
    for r in rows:
        each = "/".join(f"{d:g}" for d in sorted(r["duration"]))
        hit = f" (acks=all loss in {r['lossy_campaigns']} campaign(s))" if r["lossy_campaigns"] else ""
        lines.append(f"| {r['setting']} | {r['release']} | {r['campaigns']} x {each} s | {r['seconds']:,.0f} s | "
                     f"{_counts(r['faults'])} | {r['failovers']} | {r['acked_all']:,} | {r['acked_1']:,} | "
                     f"{_counts(r['anomalies'])}{hit}"
                     f" | {r['lost_1']:,} |")
    return "\n".join(lines) + "\n"


def comparison_table(rows: list[dict[str, Any]]) -> str:
    """The README's short table: per release, what each setting lost of what it had acknowledged (acks=all, or acks=1
    for the acks=1 setting), and the anomalies."""
    names = [n for n in VOLUME_SETTINGS if any(r["setting"] == n for r in rows)]
    lines = ["| release | campaigns | " + " | ".join(VOLUME_SETTINGS[n].label for n in names) + " | anomalies |",
             "|---|---:|" + "---:|" * len(names) + "---|"]
    for release in dict.fromkeys(r["release"] for r in sorted(rows, key=lambda r: tuple(map(int, r["release"]
                                                                                          .split("."))))):
        mine = {r["setting"]: r for r in rows if r["release"] == release}
        cells = []
        for n in names:
            r = mine.get(n)
            level = "1" if n == "acks1" else "all"
            cells.append("-" if r is None else f"{r['lost_' + level]:,} of {r['acked_' + level]:,} lost")
        anomalies = Counter[str]()
        for r in mine.values():
            anomalies.update(r["anomalies"])
        lines.append(f"| {release} | {sum(r['campaigns'] for r in mine.values())} | " + " | ".join(cells)
                     + f" | {_counts(anomalies)} |")
    return "\n".join(lines) + "\n"


def volume_main(args: argparse.Namespace) -> int:
    where = Path(args.json_dir or Path(__file__).resolve().parent.parent / "out" / "chaos-volume")
    if not args.table_only:
        volume(args, where)
    rows = volume_rows(where)
    table = volume_table(rows) + "\n" + comparison_table(rows)
    print("\n" + table)
    if args.markdown:
        Path(args.markdown).write_text(table, encoding="utf-8")
    return 0


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
    ap.add_argument("--json-dir", help="write every campaign's JSON history there (volume: read the table from it too)")
    ap.add_argument("--releases", help=f"volume campaigns on these releases (e.g. {DEFAULT_RELEASES})")
    ap.add_argument("--campaigns", type=int, default=20, help="volume: campaigns (seeds) per setting and release")
    ap.add_argument("--first-seed", type=int, default=1, help="volume: the first seed (runs made apart add up)")
    ap.add_argument("--settings", default=",".join(VOLUME_SETTINGS), help="volume: which settings")
    ap.add_argument("--controllers", type=int, default=3, help="volume: KRaft controllers of each cluster")
    ap.add_argument("--network", action="store_true", help="volume: nodes in namespaces, partitions drawn too")
    ap.add_argument("--max-concurrent", type=int, default=1, help="volume: faults a random schedule lets overlap")
    ap.add_argument("--markdown", help="volume: write the table there as Markdown")
    ap.add_argument("--table-only", action="store_true", help="volume: the table of --json-dir's histories only")
    args = ap.parse_args()
    if args.releases or args.table_only:
        return volume_main(args)
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
