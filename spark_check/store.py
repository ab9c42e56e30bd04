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
"""

from __future__ import annotations

import hashlib
import json
import os
import re
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
        with fs.open_input_stream(path) as f:
            try:
                return json.loads(f.read().decode())
            except ValueError:
                raise StoreError(f"{self.root}/manifest.json is not valid JSON") from None

    def open(self, space: Space, resume: bool) -> dict[str, Any]:
        """Prepare the store for a sweep of `space`; refuse anything that could lose or mix results."""
        fs, root = self._fs()
        entries = self._list(fs, root)
        wanted = describe_space(space)
        manifest = self.manifest()
        if entries and not resume:
            raise StoreError(f"{self.root} already holds results (pass --resume to continue that sweep, "
                             "or choose another --out)")
        if resume and manifest is None and entries:
            raise StoreError(f"{self.root} is not empty and has no manifest.json: not a kcheck sweep to resume")
        if manifest is not None:
            if manifest.get("fingerprint") != wanted["fingerprint"]:
                raise StoreError(f"{self.root} holds a different sweep: {_difference(manifest, wanted)}")
            return manifest
        fs.create_dir(f"{root}/violations", recursive=True)
        fs.create_dir(f"{root}/metrics", recursive=True)
        self._write_atomic(fs, f"{root}/manifest.json", json.dumps(wanted, indent=2).encode())
        return wanted

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
            if c < b:
                raise StoreError(f"{self.root}: stored ranges [{a}, {b}) and [{c}, {d}) overlap")
        if ranges and (ranges[0][0] < 0 or ranges[-1][1] > size):
            raise StoreError(f"{self.root}: stored ranges run outside the space's ids 0..{size - 1}")
        result = BatchResult(0, size)
        for start, stop in ranges:
            table = pq.read_table(f"{root}/violations/{_range_name(start, stop)}", filesystem=fs)
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
                for row in pq.read_table(metrics_path, filesystem=fs).to_pylist():
                    value = row["value"]
                    result.metrics.setdefault(row["metric"], Counter())[int(value) if value.is_integer() else value] \
                        += row["count"]
        return Stored(result, ranges, gaps(ranges, size), size)

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
