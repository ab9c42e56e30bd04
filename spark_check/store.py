"""The sweep's result store: Parquet datasets per id range, and a manifest of the space.

Layout under the store's root (a local directory, or any URI pyarrow can open:
hdfs://, s3://, ...; on a cluster it must be a path every executor can write):

    manifest.json                     space name, bounds, size, invariants, fingerprint
    metrics/<start>-<stop>.parquet    range_start, range_stop, metric, value, count
    violations/<start>-<stop>.parquet range_start, range_stop, invariant, checked, violated,
                                      first_id, first_config, first_where, first_message, first_detail

A range is stored once its violations file exists: each file is written under a
hidden temporary name and renamed (metrics first), so a sweep killed at any
moment leaves only whole ranges, and a task that Spark runs twice replaces its
file with the same content. `load` refuses overlapping ranges and reports the
ids not yet covered, so totals are never double-counted and a resumed sweep
computes exactly the gaps.

Ranges are stored as cells of a grid that depends on the space's size only
(`cell_size`), never on the task count, so runs with different `--tasks` write the
same files. A run holds an exclusive lock on a local store (`lock`); a second run
is refused while the first lives, and the kernel drops the lock when its holder dies.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import socket
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from kcheck.spark_check.batch import BatchResult, FirstViolation, Space

FORMAT = 1  # bump when the file layout changes: an old store is then refused, not misread
_RANGE = re.compile(r"^(\d+)-(\d+)\.parquet$")
LOCK_NAME = ".kcheck-sweep.lock"
CELLS = 256  # grid cells per space (cells hold CELL_MIN..CELL_MAX ids): one file pair each, at most this many tasks
CELL_MIN = 1_000
CELL_MAX = 1_000_000

VIOLATIONS_SCHEMA = pa.schema([
    ("range_start", pa.int64()), ("range_stop", pa.int64()), ("invariant", pa.string()),
    ("checked", pa.int64()), ("violated", pa.int64()), ("first_id", pa.int64()), ("first_config", pa.string()),
    ("first_where", pa.string()), ("first_message", pa.string()), ("first_detail", pa.string()),
])
METRICS_SCHEMA = pa.schema([
    ("range_start", pa.int64()), ("range_stop", pa.int64()), ("metric", pa.string()),
    ("value", pa.float64()), ("count", pa.int64()),
])


class StoreError(ValueError):
    """A store that cannot be used as asked (one line, naming the directory)."""


def _jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {k: _jsonable(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def describe_space(space: Space) -> dict[str, Any]:
    """What identifies a space: name, bounds, size and invariant keys (which name its placers or assignors)."""
    out: dict[str, Any] = {"name": space.name, "size": len(space), "invariants": list(space.invariant_ids())}
    for attr in ("bounds", "settings"):
        if hasattr(space, attr):
            out[attr] = _jsonable(getattr(space, attr))
    fingerprint = hashlib.sha256(json.dumps({**out, "format": FORMAT}, sort_keys=True).encode()).hexdigest()
    return {**out, "format": FORMAT, "fingerprint": fingerprint[:16]}


def _range_name(start: int, stop: int) -> str:
    return f"{start:015d}-{stop:015d}.parquet"


@dataclass(frozen=True)
class Stored:
    """What the store holds: the merged result of its ranges and the ids they leave out."""

    result: BatchResult
    ranges: list[tuple[int, int]]
    missing: list[tuple[int, int]]
    size: int

    @property
    def configurations(self) -> int:
        return sum(b - a for a, b in self.ranges)

    @property
    def complete(self) -> bool:
        return not self.missing and self.configurations == self.size


class ResultStore:
    """Parquet files of one sweep under `root`. Picklable (the root only): executors write through it."""

    def __init__(self, root: str) -> None:
        if "://" not in root:
            root = os.path.abspath(root)
        self.root = root

    def __repr__(self) -> str:
        return f"ResultStore({self.root!r})"

    def _fs(self) -> tuple[pafs.FileSystem, str]:
        if "://" in self.root:
            return pafs.FileSystem.from_uri(self.root)
        return pafs.LocalFileSystem(), self.root

    def _list(self, fs: pafs.FileSystem, path: str) -> list[pafs.FileInfo]:
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            return []
        if info.type != pafs.FileType.Directory:
            raise StoreError(f"{self.root}: {path} is not a directory")
        return fs.get_file_info(pafs.FileSelector(path))

    # --- driver side ---------------------------------------------------------------------------------------

    def manifest(self) -> dict[str, Any] | None:
        fs, root = self._fs()
        path = f"{root}/manifest.json"
        if fs.get_file_info(path).type == pafs.FileType.NotFound:
            return None
        try:
            with fs.open_input_stream(path) as f:
                manifest = json.loads(f.read().decode())
        except OSError as e:
            raise StoreError(f"{self.root}/manifest.json: cannot read it ({_first_line(e)})") from None
        except ValueError:  # also bytes that are not UTF-8
            raise StoreError(f"{self.root}/manifest.json is not valid JSON") from None
        if not isinstance(manifest, dict) or "fingerprint" not in manifest:
            raise StoreError(f"{self.root}/manifest.json is not a kcheck sweep manifest")
        return manifest

    def lock(self) -> StoreLock:
        """Hold the store for one run: a non-blocking exclusive flock on its lock file, which names the holder.

        The kernel releases a flock when its process dies, so a killed sweep never blocks the next one.
        Remote stores (URIs) have no lock: run one sweep at a time there.
        """
        if "://" in self.root:
            return StoreLock(None)
        path = os.path.join(self.root, LOCK_NAME)
        try:
            os.makedirs(self.root, exist_ok=True)
            # O_NOFOLLOW: a planted symlink is not followed; no O_TRUNC: the holder's line is read when refused
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            raise StoreError(f"{self.root} is not a directory") from None
        except OSError as e:
            raise StoreError(f"{self.root}: cannot create the lock file {LOCK_NAME} ({e.strerror or e}); "
                             "is the directory writable?") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 300, 0).decode(errors="replace").strip().splitlines()
            os.close(fd)
            raise StoreError(f"{self.root} is in use by another sweep ({holder[0] if holder else 'holder unknown'}); "
                             "wait for it or stop it") from None
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}, started {started}\n".encode(), 0)
        return StoreLock(fd)

    def open(self, space: Space, resume: bool) -> dict[str, Any]:
        """Prepare the store for a sweep of `space`; refuse anything that could lose or mix results."""
        fs, root = self._fs()
        # A kill before the manifest is renamed into place leaves only this run's lock, empty dataset
        # folders and hidden temporary files: nothing to protect, so such a store starts afresh.
        entries = [e for e in self._list(fs, root) if not _disposable(e) and not (
            e.base_name in ("violations", "metrics") and e.type == pafs.FileType.Directory
            and all(_disposable(f) for f in self._list(fs, e.path)))]
        wanted = describe_space(space)
        manifest = self.manifest()
        if "://" not in root:  # refuse before computing, not when the first task fails to write
            for path in (root, f"{root}/violations", f"{root}/metrics"):
                if os.path.isdir(path) and not os.access(path, os.W_OK | os.X_OK):
                    raise StoreError(f"{path} is not writable")
        if entries and not resume:
            raise StoreError(f"{self.root} already holds results (pass --resume to continue that sweep, "
                             "or choose another --out)")
        if resume and manifest is None and entries:
            raise StoreError(f"{self.root} is not empty and has no manifest.json: not a kcheck sweep to resume")
        if manifest is not None:
            if manifest.get("fingerprint") != wanted["fingerprint"]:
                raise StoreError(f"{self.root} holds a different sweep: {_difference(manifest, wanted)}")
            return manifest
        try:
            fs.create_dir(f"{root}/violations", recursive=True)
            fs.create_dir(f"{root}/metrics", recursive=True)
            self._write_atomic(fs, f"{root}/manifest.json", json.dumps(wanted, indent=2).encode())
        except OSError as e:
            raise StoreError(f"{self.root}: cannot create the store ({_first_line(e)})") from None
        return wanted

    def begin(self, space: Space, resume: bool) -> StoreLock:
        """`open` and `lock`, for one run: opened first, so no lock file lands in a foreign directory; opened
        again under the lock, since another sweep may have begun the store in between."""
        self.open(space, resume)
        held = self.lock()
        try:
            self.open(space, resume=True)
        except BaseException:
            held.release()
            raise
        return held

    def stored_ranges(self) -> list[tuple[int, int]]:
        fs, root = self._fs()
        out = []
        for info in self._list(fs, f"{root}/violations"):
            m = _RANGE.match(info.base_name)
            if m:
                out.append((int(m.group(1)), int(m.group(2))))
        return sorted(out)

    def load(self, size: int) -> Stored:
        """Merge every stored range; check they are disjoint and list the ids none of them covers."""
        fs, root = self._fs()
        ranges = self.stored_ranges()
        for (a, b), (c, d) in zip(ranges, ranges[1:], strict=False):
            if c < b:  # only stores written by older versions (task-dependent ranges) or by hand
                raise StoreError(f"{self.root}: stored ranges [{a}, {b}) and [{c}, {d}) overlap; delete "
                                 f"violations/{_range_name(c, d)} and resume to recompute what it held")
        if ranges and (ranges[0][0] < 0 or ranges[-1][1] > size):
            raise StoreError(f"{self.root}: stored ranges run outside the space's ids 0..{size - 1}")
        result = BatchResult(0, size)
        for start, stop in ranges:
            table = self._read(fs, f"{root}/violations/{_range_name(start, stop)}", VIOLATIONS_SCHEMA)
            for row in table.to_pylist():
                key = row["invariant"]
                result.checked[key] += row["checked"]
                result.violated[key] += row["violated"]
                if row["first_id"] is not None:
                    first = FirstViolation(row["first_id"], json.loads(row["first_config"]), row["first_where"],
                                           row["first_message"], json.loads(row["first_detail"]))
                    kept = result.first.get(key)
                    if kept is None or first.config_id < kept.config_id:
                        result.first[key] = first
            metrics_path = f"{root}/metrics/{_range_name(start, stop)}"
            if fs.get_file_info(metrics_path).type != pafs.FileType.NotFound:
                for row in self._read(fs, metrics_path, METRICS_SCHEMA).to_pylist():
                    value = row["value"]
                    result.metrics.setdefault(row["metric"], Counter())[int(value) if value.is_integer() else value] \
                        += row["count"]
        return Stored(result, ranges, gaps(ranges, size), size)

    def _read(self, fs: pafs.FileSystem, path: str, schema: pa.Schema) -> pa.Table:
        """One stored file; a damaged one is a one-line StoreError naming it (it is never rewritten here)."""
        # the range counts as stored while its violations file exists (the metrics one is replaced on recompute)
        redo = f"delete violations/{path.rpartition('/')[2]} and resume to recompute its range"
        try:
            table = pq.read_table(path, filesystem=fs)
        except (OSError, ValueError, pa.ArrowException) as e:
            reason = _first_line(e).replace(f" '{path}'", "").replace(path, "it")  # name the file once
            raise StoreError(f"{path} is damaged ({reason}); {redo}") from None
        if not table.schema.equals(schema, check_metadata=False):
            raise StoreError(f"{path} is damaged (its columns are not a kcheck sweep's); {redo}")
        return table

    # --- executor side ---------------------------------------------------------------------------------------

    def write(self, result: BatchResult, invariant_ids: Iterable[str]) -> None:
        """Store one evaluated range: metrics, then violations (the commit), each renamed into place."""
        fs, root = self._fs()
        name = _range_name(result.start, result.stop)
        metric_rows = [(m, float(v), int(c)) for m, hist in sorted(result.metrics.items())
                       for v, c in sorted(hist.items())]
        metrics = pa.table({
            "range_start": [result.start] * len(metric_rows), "range_stop": [result.stop] * len(metric_rows),
            "metric": [r[0] for r in metric_rows], "value": [r[1] for r in metric_rows],
            "count": [r[2] for r in metric_rows]}, schema=METRICS_SCHEMA)
        self._write_table(fs, f"{root}/metrics", name, metrics)
        keys = list(dict.fromkeys([*invariant_ids, *result.checked, *result.violated]))
        rows: dict[str, list[Any]] = {f.name: [] for f in VIOLATIONS_SCHEMA}
        for key in keys:
            first = result.first.get(key)
            rows["range_start"].append(result.start)
            rows["range_stop"].append(result.stop)
            rows["invariant"].append(key)
            rows["checked"].append(int(result.checked.get(key, 0)))
            rows["violated"].append(int(result.violated.get(key, 0)))
            rows["first_id"].append(None if first is None else first.config_id)
            rows["first_config"].append(None if first is None else json.dumps(_jsonable(dict(first.config))))
            rows["first_where"].append(None if first is None else first.where)
            rows["first_message"].append(None if first is None else first.message)
            rows["first_detail"].append(None if first is None else json.dumps(_jsonable(dict(first.detail))))
        self._write_table(fs, f"{root}/violations", name, pa.table(rows, schema=VIOLATIONS_SCHEMA))

    def _write_table(self, fs: pafs.FileSystem, directory: str, name: str, table: pa.Table) -> None:
        tmp = f"{directory}/.tmp-{uuid.uuid4().hex}-{name}"  # hidden: dataset readers skip it
        pq.write_table(table, tmp, filesystem=fs)
        fs.move(tmp, f"{directory}/{name}")

    def _write_atomic(self, fs: pafs.FileSystem, path: str, data: bytes) -> None:
        directory, _, name = path.rpartition("/")
        tmp = f"{directory}/.tmp-{uuid.uuid4().hex}-{name}"
        with fs.open_output_stream(tmp) as f:
            f.write(data)
        fs.move(tmp, path)


class StoreLock:
    """A held store lock (or none, for remote stores); `release` ends it, as does the process's death."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def release(self) -> None:
        # The lock file stays: unlinking it would let a waiter lock the old inode while a newcomer locks a new one.
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _disposable(info: pafs.FileInfo) -> bool:
    return info.base_name == LOCK_NAME or info.base_name.startswith(".tmp-")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def cell_size(size: int) -> int:
    """Ids per stored range: from the space's size only, so every run of a space cuts it on the same grid."""
    return min(CELL_MAX, max(CELL_MIN, -(-size // CELLS)))


def grid(start: int, stop: int, cell: int) -> list[tuple[int, int]]:
    """[start, stop) cut at the multiples of `cell`."""
    cuts = [start, *range((start // cell + 1) * cell, stop, cell), stop] if stop > start else []
    return list(zip(cuts, cuts[1:], strict=False))


def gaps(ranges: Iterable[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """The ids in [0, size) that no range covers, as sorted ranges."""
    out = []
    at = 0
    for a, b in sorted(ranges):
        if a > at:
            out.append((at, a))
        at = max(at, b)
    if at < size:
        out.append((at, size))
    return out


def split(ranges: Iterable[tuple[int, int]], pieces: int) -> list[tuple[int, int]]:
    """Cut ranges into about `pieces` ranges of nearly equal size (never across a given boundary)."""
    ranges = [r for r in ranges if r[1] > r[0]]
    total = sum(b - a for a, b in ranges)
    if not total:
        return []
    target = max(1, -(-total // max(1, pieces)))
    out = []
    for a, b in ranges:
        count = -(-(b - a) // target)
        step = -(-(b - a) // count)
        out += [(s, min(b, s + step)) for s in range(a, b, step)]
    return out


def _difference(old: dict[str, Any], new: dict[str, Any]) -> str:
    for key in ("format", "name", "bounds", "size", "settings", "invariants"):
        if old.get(key) != new.get(key):
            if key == "invariants":
                return "its placers, assignors or invariants differ"
            return f"{key} {json.dumps(old.get(key))} there, {json.dumps(new.get(key))} now"
    return "fingerprint differs"
