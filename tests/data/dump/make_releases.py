"""Make releases/: every release's own `kafka-dump-log` (1.0.2 to 4.4.0) run on the segment files kept in segments/, in
each mode, so the tests read what each release's tool really prints (no JVM needed to read them).

    python tests/data/dump/make_releases.py          # every release x every mode (about 8 minutes on 2 cores)
    python tests/data/dump/make_releases.py --live   # first remake segments/live-* and __consumer_offsets-N on a
                                                     # running Kafka 4.4.0 broker (a 1-broker cluster, 1 minute)

It starts Kafka JVMs: on a shared machine, run it when no other cluster is starting.

The segment files (segments/):
  * plain-0 and compacted-0: broker 1's folders of make.py's cluster, stopped cleanly (indexes trimmed to their
    entries), see make.py;
  * live-0, live-1 and the group's __consumer_offsets-N (`--live`): copied from a 4.4.0 broker WHILE IT RUNS, so
    the active segment's .index and .timeindex are still preallocated (Kafka sizes a new index file to
    segment.index.bytes and trims it only when the segment rolls or the log closes). live-0 has a rolled segment and
    an active one with index entries, live-1 one batch and no index entry yet (its time index is all zero slots).
    The topic sets segment.index.bytes=4096 so the preallocated files stay 4 KB; with the default 10 MiB the tools
    print the same lines, only more of the zero slots (873,811 per time index for the 1.x tools). The
    __consumer_offsets partition holds the group's commits and, after the group is deleted, its tombstones (only
    its .log is kept).

The modes (MODES): --deep-iteration --print-data-log on every file of plain-0 (several --files), --deep-iteration
alone, shallow (batches only), --index-sanity-check, --verify-index-only, --print-data-log on compacted-0,
--offsets-decoder, the live segments dumped, sanity-checked and verified, and a dump run inside the partition's
folder naming bare files. Each run is the tool's stdout and stderr as one stream (what `2>&1` pastes), from a temporary
copy of segments/ (old tools open index files themselves: the kept files are never handed to them).

Stored size: most releases print the same bytes as a neighbour, so releases/ keeps each distinct output once, named by
the newest release that printed it, and manifest.json maps every release and mode to its file and the tool's exit
status: 33 releases x 11 modes in 167 files, 1.2 MB (30 KB compressed, as git stores them).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEGMENTS = HERE / "segments"
RELEASES = HERE / "releases"
OLDEST = (1, 0)  # 0.10's tool cannot read magic-2 batches; 0.11 is not a release engineers still paste from
LIVE_CONFIG = {"segment.ms": "1500", "index.interval.bytes": "64", "segment.index.bytes": "4096"}
LIVE_COMMITS = (2, 5)  # what group live-group commits for live-0 before it is deleted


def _files(partition: str, suffixes: tuple[str, ...], bare: bool = False, first: int | None = None) -> str:
    """Every segment's files of a kept partition, segment by segment, as the tool's --files list."""
    (folder,) = SEGMENTS.glob(partition)  # one folder (the group's __consumer_offsets partition is found by glob)
    bases = sorted(p.stem for p in folder.glob("*.log"))[:first]
    return ",".join(f"{'' if bare else folder.name + '/'}{b}{s}" for b in bases for s in suffixes)


ALL = (".log", ".index", ".timeindex")
# mode -> (options, the folder the tool runs in, relative to the copy of segments/); files are read when run
MODES: dict[str, tuple[tuple[str, ...], str]] = {
    "deep-data": (("--deep-iteration", "--print-data-log", "--files", "plain-0:" + ",".join(ALL)), "."),
    "deep": (("--deep-iteration", "--files", "plain-0:.log"), "."),
    "shallow": (("--files", "plain-0:.log"), "."),
    "sanity": (("--index-sanity-check", "--files", "plain-0:.index,.timeindex"), "."),
    "verify": (("--verify-index-only", "--files", "plain-0:" + ",".join(ALL)), "."),
    "compacted": (("--print-data-log", "--files", "compacted-0:" + ",".join(ALL)), "."),
    "offsets": (("--offsets-decoder", "--files", "__consumer_offsets-*:.log"), "."),
    "live": (("--deep-iteration", "--print-data-log", "--files", "live-1:" + ",".join(ALL), "live-0:" + ",".join(ALL)),
             "."),
    "live-sanity": (("--index-sanity-check", "--files", "live-1:.index,.timeindex", "live-0:.index,.timeindex"), "."),
    "live-verify": (("--verify-index-only", "--files", "live-1:" + ",".join(ALL), "live-0:" + ",".join(ALL)), "."),
    "bare": (("--deep-iteration", "--print-data-log", "--files", "plain-0:" + ",".join(ALL) + ":bare:2"), "plain-0"),
}


def arguments(mode: str) -> list[str]:
    """The tool's arguments for `mode`: each 'PARTITION:SUFFIXES[:bare[:N]]' becomes those files (several partitions
    join into one --files list)."""
    options, _ = MODES[mode]
    out: list[str] = []
    files: list[str] = []
    for option in options:
        if ":" in option:
            partition, suffixes, *rest = option.split(":")
            files.append(_files(partition, tuple("." + s.lstrip(".") for s in suffixes.split(",")),
                                bare=bool(rest), first=int(rest[1]) if len(rest) > 1 else None))
        else:
            out.append(option)
    return [*out, ",".join(files)] if files else out


def releases() -> list[str]:
    from kcheck.reference import kafka_tools

    return [r for r in kafka_tools.releases() if tuple(int(x) for x in r.split("."))[:2] >= OLDEST]


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(folder.rglob("*")):
        if f.is_file():
            h.update(str(f.relative_to(folder)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def dump_all(only: list[str] | None = None) -> None:
    """Run every release's tool in every mode; write releases/ and releases/manifest.json."""
    from kcheck.reference import kafka_tools

    before = _digest(SEGMENTS)
    work = Path(tempfile.mkdtemp(prefix="kcheck-dump-releases-"))
    outputs: dict[str, dict[str, str]] = {}  # mode -> release -> text
    status: dict[str, dict[str, int]] = {}
    try:
        shutil.copytree(SEGMENTS, work / "segments")
        for release in only or releases():
            resolved = kafka_tools.resolve_tools(release)
            for mode, (_, cwd) in MODES.items():
                cmd = kafka_tools.command(resolved, "kafka-dump-log", arguments(mode))
                run = subprocess.run(cmd, cwd=work / "segments" / cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=300)
                outputs.setdefault(mode, {})[release] = run.stdout.decode("utf-8")
                status.setdefault(mode, {})[release] = run.returncode
            print(release, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if _digest(SEGMENTS) != before:
        raise SystemExit("the kept segment files changed while the tools ran")
    shutil.rmtree(RELEASES, ignore_errors=True)
    manifest: dict[str, object] = {"work": str(work / "segments"), "modes": {}, "dumps": {}}
    for mode, by_release in outputs.items():
        (RELEASES / mode).mkdir(parents=True)
        named: dict[str, str] = {}  # text -> file (the newest release printing it; releases() is newest first)
        rows = {}
        for release, text in by_release.items():
            if text not in named:
                named[text] = f"{mode}/{release}.txt"
                (RELEASES / named[text]).write_text(text, encoding="utf-8")
            rows[release] = {"file": named[text], "exit": status[mode][release]}
        manifest["dumps"][mode] = rows  # type: ignore[index]
        manifest["modes"][mode] = {"args": arguments(mode), "cwd": MODES[mode][1]}  # type: ignore[index]
    (RELEASES / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


def make_live() -> None:
    """segments/live-0, live-1 and __consumer_offsets-N, copied from a running Kafka 4.4.0 broker."""
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    from make import commit_then_delete_group

    from kcheck.cluster.local import LocalCluster

    cluster = LocalCluster("4.4.0", 1, ())
    cluster.start()
    try:
        boot = cluster.bootstrap.split(",")
        admin = KafkaAdminClient(bootstrap_servers=boot, request_timeout_ms=30_000)
        admin.create_topics([NewTopic("live", 2, 1, topic_configs=LIVE_CONFIG)])
        time.sleep(2)
        producer = KafkaProducer(bootstrap_servers=boot, acks="all", linger_ms=0)

        def burst(partition: int, records: list[tuple[str, str]]) -> None:
            for i, (k, v) in enumerate(records):
                producer.send("live", key=k.encode(), value=v.encode(), partition=partition)
                if i % 2:
                    producer.flush()
            producer.flush()

        burst(0, [(f"a{i}", f"first segment {i}") for i in range(6)])
        time.sleep(2.2)  # past segment.ms: the next append rolls live-0's segment 0
        burst(0, [(f"b{i}", f"active segment {i}") for i in range(6)])
        burst(1, [("only", "one batch")])  # one batch: no index entry yet
        producer.close()
        admin.close()
        commit_then_delete_group(boot, "live", "live-group", LIVE_COMMITS)
        time.sleep(1)
        data = cluster.directory / "broker-1" / "data"
        offsets = [d for d in sorted(data.glob("__consumer_offsets-*")) if any(
            f.stat().st_size for f in d.glob("*.log"))]
        if len(offsets) != 1:
            raise SystemExit(f"expected the group's commits in one __consumer_offsets partition: {offsets}")
        for old in SEGMENTS.glob("__consumer_offsets-*"):
            shutil.rmtree(old)
        copies = {"live-0": (data / "live-0", ALL), "live-1": (data / "live-1", ALL),
                  offsets[0].name: (offsets[0], (".log",))}
        for name, (folder, suffixes) in copies.items():  # while the broker runs
            shutil.rmtree(SEGMENTS / name, ignore_errors=True)
            (SEGMENTS / name).mkdir(parents=True)
            for f in sorted(folder.iterdir()):
                if f.suffix in suffixes:
                    shutil.copyfile(f, SEGMENTS / name / f.name)
        for name in ("live-0", "live-1"):  # the active segment's indexes are the preallocated files
            active = sorted((SEGMENTS / name).glob("*.log"))[-1].stem
            sizes = [(SEGMENTS / name / f"{active}{s}").stat().st_size for s in (".index", ".timeindex")]
            if sizes != [4096, 4092]:
                raise SystemExit(f"{name}: the active segment's indexes are {sizes} bytes, not preallocated")
    finally:
        cluster.stop()


if __name__ == "__main__":
    if "--live" in sys.argv[1:]:
        make_live()
    dump_all([a for a in sys.argv[1:] if not a.startswith("--")] or None)
