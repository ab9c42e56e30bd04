"""A lossy crash: kill -9 a broker, then drop what it had not flushed to disk (the fault kind `lossy-kill`).

What it reproduces: power loss of one machine, which takes with it the page cache, i.e. every write the broker
made after its last fsync. Kafka does not fsync per message (by default `log.flush.interval.messages` and
`log.flush.interval.ms` never trigger; durability comes from replication), so after a power loss a broker's
logs hold only what was flushed: up to its recovery point. `lossy_kill(cluster, broker_id)`:

1. kills the broker's JVM (SIGKILL: no controlled shutdown, no clean-shutdown marker, so on restart Kafka runs
   its log recovery: `LogLoader`, and the broker registers as having shut down uncleanly, KIP-966);
2. reads each log dir's `recovery-point-offset-checkpoint` (`LogManager` writes every partition's
   `UnifiedLog.recoveryPoint` there every `log.flush.offset.checkpoint.interval.ms`, default 60 s, and at a clean
   shutdown; format of `storage/.../checkpoint/OffsetCheckpointFile` and `CheckpointFile`: a version line `0`,
   an entry count, then `topic partition offset` lines). A partition without an entry has recovery point 0;
3. in every partition directory (`topic-partition`; not the KRaft metadata log `__cluster_metadata-0`, which the
   Raft layer flushes itself) walks each segment's `.log` file batch by batch (`clients/.../record/
   DefaultRecordBatch`: baseOffset int64, batchLength int32 counting the bytes after these 12, ...,
   lastOffsetDelta int32 at byte 23, recordsCount int32 at byte 57) and cuts it at the first batch that holds an
   offset at or above the recovery point; a segment whose base offset is at or above it is deleted with its
   indexes (the first segment is kept, empty, if nothing below the recovery point remains). Indexes, producer
   snapshots and the leader-epoch file are left for Kafka's recovery to truncate or rebuild.

The broker is left stopped: restart it with `cluster.restart(broker_id)`.

What it does not reproduce: the OS's own write-back (Linux writes dirty pages back after about 30 s, so a real
power loss usually loses less: this cut is the worst case, everything Kafka itself did not fsync); torn writes
inside a batch (only whole batches go); lost directory entries (a partition directory created since the last
sync survives here); metadata files that were not fsynced (checkpoint files are written with fsync, but the
cut trusts them as written); a checkpoint written later than the flush it records (the recovery point read is
taken as flushed, while data flushed after the last checkpoint is cut: again the worst case).
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from kcheck.cluster.local import ClusterError, LocalCluster

CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_OVERHEAD = 12  # baseOffset int64 + batchLength int32 (Records.LOG_OVERHEAD)
LAST_OFFSET_DELTA_AT = 23  # DefaultRecordBatch.LAST_OFFSET_DELTA_OFFSET
RECORDS_COUNT_AT = 57  # DefaultRecordBatch.RECORDS_COUNT_OFFSET
MAGIC_AT = 16  # DefaultRecordBatch.MAGIC_OFFSET
_PARTITION_DIR = re.compile(r"^(.+)-([0-9]+)$")
_SEGMENT = re.compile(r"^([0-9]{20})\.log$")
METADATA_LOG = "__cluster_metadata"


@dataclass(frozen=True)
class LossyCut:
    broker: int
    files: tuple[tuple[str, int, int], ...]  # (path of a .log file, size before, size after); deleted: after 0
    records_cut: int
    deleted: tuple[str, ...] = ()  # the .log files removed (also in `files`, with size after 0)


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """An OffsetCheckpointFile: (topic, partition) -> offset. A missing or empty file has no entries; a malformed
    one is an error."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return {}
    if not lines:  # created empty by LogManager before its first checkpoint
        return {}
    if len(lines) < 2 or lines[0].strip() != "0" or not lines[1].strip().isdigit():
        raise ClusterError(f"{path}: not an offset checkpoint file (version 0, a count, then entries)")
    out: dict[tuple[str, int], int] = {}
    for line in lines[2:2 + int(lines[1])]:
        parts = line.split()
        if len(parts) != 3:
            raise ClusterError(f"{path}: malformed entry {line!r}")
        out[(parts[0], int(parts[1]))] = int(parts[2])
    return out


def log_dirs(cluster: LocalCluster, broker_id: int) -> list[Path]:
    """The broker's `log.dirs` as its properties file sets them, each inside the broker's own folder of the cluster:
    a lossy crash cuts and deletes files there, so a path the file names elsewhere (an edited properties file) is
    refused, never followed."""
    home = Path(os.path.realpath(cluster.properties_file(broker_id).parent))
    for line in cluster.properties_file(broker_id).read_text(encoding="utf-8").splitlines():
        if line.startswith("log.dirs="):
            dirs = [Path(os.path.realpath(d)) for d in line.split("=", 1)[1].split(",") if d]
            outside = [d for d in dirs if not d.is_relative_to(home)]
            if outside:
                raise ClusterError(f"broker {broker_id}'s log.dirs {outside[0]} is outside its folder {home}: kcheck "
                                   "cuts only logs it set up")
            return dirs
    raise ClusterError(f"broker {broker_id}'s properties set no log.dirs")


def _batches(data: bytes) -> list[tuple[int, int, int, int]]:
    """(position, size, last offset, record count) of each whole batch, in file order; a torn tail is left out."""
    out = []
    pos = 0
    while pos + LOG_OVERHEAD <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        end = pos + LOG_OVERHEAD + length
        if length <= 0 or end > len(data):
            break
        if data[pos + MAGIC_AT] >= 2 and length >= RECORDS_COUNT_AT + 4 - LOG_OVERHEAD:
            (delta,) = struct.unpack_from(">i", data, pos + LAST_OFFSET_DELTA_AT)
            (count,) = struct.unpack_from(">i", data, pos + RECORDS_COUNT_AT)
        else:  # a v0/v1 message (one record, or a compressed wrapper whose offset is its last inner one)
            delta, count = 0, 1
        out.append((pos, end - pos, base + delta, count))
        pos = end
    return out


def cut_partition(directory: Path, recovery_point: int) -> tuple[list[tuple[str, int, int]], list[str], int]:
    """Cut one partition directory back to `recovery_point`: (changed .log files, deleted .log files, records cut)."""
    segments = sorted((int(m.group(1)), p) for p in directory.iterdir() if (m := _SEGMENT.match(p.name)))
    changed: list[tuple[str, int, int]] = []
    deleted: list[str] = []
    cut = 0
    for i, (base, path) in enumerate(segments):
        data = path.read_bytes()
        batches = _batches(data)
        if base >= recovery_point and i > 0:
            cut += sum(b[3] for b in batches)
            for suffix in (".log", ".index", ".timeindex", ".txnindex"):
                path.with_suffix(suffix).unlink(missing_ok=True)
            changed.append((str(path), len(data), 0))
            deleted.append(str(path))
            continue
        keep = 0
        for pos, size, last, _ in batches:
            if last >= recovery_point:
                break
            keep = pos + size
        if keep < len(data):
            cut += sum(b[3] for b in batches if b[0] >= keep)
            with open(path, "r+b") as f:
                f.truncate(keep)
            changed.append((str(path), len(data), keep))
    return changed, deleted, cut


def lossy_kill(cluster: LocalCluster, broker_id: int) -> LossyCut:
    """kill -9 the broker, then cut its logs back to their recovery points (see the module doc). The broker is
    left stopped; `cluster.restart(broker_id)` brings it back, and Kafka recovers the cut logs."""
    dirs = log_dirs(cluster, broker_id)
    cluster.kill(broker_id)
    files: list[tuple[str, int, int]] = []
    deleted: list[str] = []
    records = 0
    for log_dir in dirs:
        if not log_dir.is_dir():
            continue
        points = read_checkpoint(log_dir / CHECKPOINT)
        for directory in sorted(log_dir.iterdir()):
            m = _PARTITION_DIR.match(directory.name)
            if m is None or not directory.is_dir() or m.group(1) == METADATA_LOG:
                continue  # not a partition's log (a `-delete`/`-future`/`-stray` directory has a suffix after it)
            changed, gone, n = cut_partition(directory, points.get((m.group(1), int(m.group(2))), 0))
            files += changed
            deleted += gone
            records += n
    return LossyCut(broker_id, tuple(files), records, tuple(deleted))
