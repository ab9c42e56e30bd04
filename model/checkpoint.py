"""Checkpoints of `exhaust` (kcheck.model.search) in one process, in every order, and in N workers
(kcheck.model.parallel): the visited set, the store, the states still to expand as the order keeps them, and the
counters, written to a folder so that a search cut short (a
signal, --max-seconds, a killed machine) continues where it was and ends with the same counts, depth and
counterexample as a run never cut.

What is saved is taken only between two expansions, so it is one consistent moment of the search: every stored
state was checked once (its verdict is in the counters) and is either expanded (its successors stored) or in the
frontier still to expand, in order. Continuing expands the rest of that frontier in the same order, which gives
each new state the same number and parent as the uncut run: the same store, so the same counterexample. (Orders
dfs and novelty: `frontier.bin` is the rest of the batch being expanded, `next.bin` the stack or the novelty tiers
in their order, and `keys.bin` the novelty keys' counts; kcheck.model.search says how each is restored.)

The folder (format `FORMAT`, version `VERSION`):
- `kcheck-checkpoint.json`, the manifest: the format and version, what the search is (`identity`: the model, its
  bounds and options, kcheck's version; a checkpoint of another search is refused), the machine's byte order and
  array sizes (a checkpoint moves between machines of the same kind), the counters, the generation folder that
  holds the arrays, and each file's size and blake2b digest;
- `gen-NNNNNN/`: `visited.bin` (the fingerprint table; with a disk-backed visited set, its table in memory, and
  `visited-disk.bin` its sorted file, kcheck.model.diskset), `parent.bin` and `action.bin` (the store), `frontier.bin`
  and `next.bin` (records of the frontier still to expand and of the next level: state number, length, bytes;
  one zlib stream each), and for order novelty `keys.bin` (records: a key's count, the pickled key); with N workers,
  `worker-K/` per worker instead (`WORKER_FILES`: its share of the visited set and the store, its frontier (and where
  in it the worker stopped) and `cands.bin`, the level's candidates it holds, as its spools' chunks;
  kcheck.model.parallel says what the cut is), and the manifest's `counters.workers` is N (it resumes with N workers,
  `check_workers`); on Spark, `part-K/` per partition instead (`PARTITION_FILES`: its visited table, its store and
  the saved level's new states; spark_check/exhaust.py), and `counters.partitions` is how many.
  The manifest's `write_seconds` says how long the write took.
A write goes to `gen-NNNNNN.partial/`, is synced, renamed, and only then does a new manifest replace the old one
(`os.replace`), after which older generations are removed: a process killed at any moment leaves the last whole
checkpoint readable. kcheck writes only into a folder it creates, an empty one, or one holding its own manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import sys
import time
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

FORMAT = "kcheck-exhaust-checkpoint"
VERSION = 1
MANIFEST = "kcheck-checkpoint.json"
_RECORD = struct.Struct("<QI")  # a frontier record's head: state number, length of the bytes that follow
_FILES = ("visited.bin", "parent.bin", "action.bin", "frontier.bin", "next.bin")
_OPTIONAL = ("keys.bin", "visited-disk.bin")  # written by the searches that need them (`save`'s `more`, `disk`)
WORKER_FILES = ("visited.bin", "parent.bin", "action.bin", "frontier.bin", "cands.bin")  # each worker's (workers > 1)
# each Spark partition's (spark_check/exhaust.py): its visited table, its store (fingerprint, parent fingerprint,
# action index) and the last level's new states
PARTITION_FILES = ("visited.bin", "fingerprint.bin", "parent.bin", "action.bin", "frontier.bin")


class CheckpointError(ValueError):
    """A checkpoint folder kcheck cannot use: one line, about the folder."""


def _machine() -> dict[str, Any]:
    return {"byteorder": sys.byteorder, "Q": array("Q").itemsize, "I": array("I").itemsize,
            "H": array("H").itemsize}


def read_manifest(folder: str) -> dict[str, Any] | None:
    """The folder's manifest if it holds a kcheck checkpoint, None if it holds none (missing or empty folder);
    raises CheckpointError when the folder holds something else, or a manifest kcheck cannot read."""
    if not os.path.exists(folder):
        return None
    if not os.path.isdir(folder):
        raise CheckpointError(f"{folder} is not a folder")
    path = os.path.join(folder, MANIFEST)
    if not os.path.exists(path):
        # a first checkpoint killed before its manifest leaves only kcheck's own partial files: nothing to resume
        if any(not _own_leftover(entry) for entry in os.listdir(folder)):
            raise CheckpointError(f"{folder} holds files that are not a kcheck checkpoint; kcheck writes only into "
                                  "a new or empty folder, or one holding its own checkpoint")
        return None
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path}: not a readable kcheck checkpoint manifest ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a kcheck exhaust checkpoint")
    if manifest.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint format version {manifest.get('version')!r}; this kcheck reads "
                              f"version {VERSION}")
    return manifest


def _own_leftover(entry: str) -> bool:
    return re.fullmatch(r"gen-\d{6}(\.partial)?|" + re.escape(MANIFEST) + r"\.partial", entry) is not None


def check_resumable(manifest: dict[str, Any], identity: dict[str, Any], folder: str) -> None:
    """Raises CheckpointError unless `manifest` is a checkpoint of the search `identity` names, on this kind of
    machine: the first field that differs is named."""
    theirs = manifest.get("identity")
    if not isinstance(theirs, dict):
        raise CheckpointError(f"{folder}: the checkpoint names no search")
    for key in sorted(set(identity) | set(theirs)):
        was, now = theirs.get(key), identity.get(key)
        if was != now:
            if key == "workers" and isinstance(now, int):
                check_workers({"workers": was}, now, folder)
            if isinstance(was, dict) and isinstance(now, dict):  # the config: the setting that differs
                key, was, now = next((f"{key}.{k}", was.get(k), now.get(k)) for k in sorted(set(was) | set(now))
                                     if was.get(k) != now.get(k))
            raise CheckpointError(f"{folder}: a checkpoint of another search ({key}: {was!r} there, {now!r} here)")
    if manifest.get("machine") != _machine():
        raise CheckpointError(f"{folder}: written on another kind of machine ({manifest.get('machine')!r})")


def encode_records(items: Iterable[tuple[int, bytes]]) -> Iterator[bytes]:
    """The records, zlib-compressed (level 1) as one stream: the states of a level share most of their bytes."""
    z, buf = zlib.compressobj(1), bytearray()
    for n, data in items:
        buf += _RECORD.pack(n, len(data))
        buf += data
        if len(buf) >= 1 << 20:
            yield z.compress(bytes(buf))
            buf = bytearray()
    yield z.compress(bytes(buf)) + z.flush()


def read_records(path: str) -> Iterator[tuple[int, bytes]]:
    """(state number, bytes) of each frontier record of `path`, in order."""
    size, z, buf = _RECORD.size, zlib.decompressobj(), b""
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            buf += z.decompress(chunk) if chunk else z.flush()
            pos = 0
            while len(buf) - pos >= size:
                n, length = _RECORD.unpack_from(buf, pos)
                if len(buf) - pos - size < length:
                    break
                yield n, buf[pos + size:pos + size + length]
                pos += size + length
            buf = buf[pos:]
            if not chunk:
                return


class Checkpointer:
    """Writes a search's checkpoints to `folder` every `every` seconds (and when asked: `save`), and reads the one
    it holds back (`load`). `identity`: what the search is, kept in the manifest and compared on `--resume`;
    `extra`: (save() -> JSON value, load(value)) for what a caller counts beside the engine (the invariant tally)."""

    def __init__(self, folder: str, identity: dict[str, Any], every: float,
                 extra: tuple[Callable[[], Any], Callable[[Any], None]] | None = None) -> None:
        # as the manifest keeps it (JSON: tuples read back as lists), so that a resumed search compares equal
        self.folder, self.identity = folder, json.loads(json.dumps(identity))
        self.every, self.extra = every, extra
        self.last = time.monotonic()
        self.written = 0  # checkpoints this process wrote
        self.seconds = 0.0  # how long the last one took to write
        self._verified: dict[str, Any] | None = None

    def due(self) -> bool:
        return time.monotonic() - self.last >= self.every

    def save(self, arrays: dict[str, array], frontier: Iterable[tuple[int, bytes]],
             nxt: Iterable[tuple[int, bytes]], counters: dict[str, Any],
             more: Mapping[str, Iterable[tuple[int, bytes]]] | None = None,
             disk: Iterable[bytes] | None = None) -> None:
        """One checkpoint: `arrays` (visited, parent, action), the frontier still to expand and the next level's
        records, the engine's counters, `more` record files (names among `_OPTIONAL`) and `disk`, the bytes of a
        disk-backed visited set's sorted file (see the module docstring for the order of the writes)."""

        def write(tmp: str) -> dict[str, Any]:
            files: dict[str, Any] = {}
            for name, parts in (("visited.bin", [arrays["visited"].tobytes()]),
                                ("parent.bin", [arrays["parent"].tobytes()]),
                                ("action.bin", [arrays["action"].tobytes()]),
                                ("frontier.bin", encode_records(frontier)), ("next.bin", encode_records(nxt)),
                                *((name, encode_records(recs)) for name, recs in (more or {}).items()),
                                *((("visited-disk.bin", disk),) if disk is not None else ())):
                files[name] = write_file(os.path.join(tmp, name), parts)
            files["action.bin"]["typecode"] = arrays["action"].typecode
            return files

        self.commit(write, counters)

    def commit(self, write: Callable[[str], dict[str, Any]], counters: dict[str, Any]) -> None:
        """One checkpoint: `write(folder)` writes the generation's files into the new folder given (and syncs them)
        and returns {name relative to it: {bytes, blake2b, ...}}; then the manifest names the generation, with
        `counters` (read after `write`, which may fill them)."""
        began = time.monotonic()
        os.makedirs(self.folder, exist_ok=True)
        old = read_manifest(self.folder)  # refuses a folder that became someone else's meanwhile
        n = (old["generation_number"] + 1) if old else 1
        gen = f"gen-{n:06d}"
        tmp = os.path.join(self.folder, gen + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        os.mkdir(tmp)
        files = write(tmp)
        fsync_dir(tmp)
        final = os.path.join(self.folder, gen)
        shutil.rmtree(final, ignore_errors=True)  # a run killed before its manifest named it: never read
        os.rename(tmp, final)
        manifest = {"format": FORMAT, "version": VERSION, "identity": self.identity, "machine": _machine(),
                    "generation": gen, "generation_number": n, "written_at": time.time(), "files": files,
                    "counters": counters, "extra": self.extra[0]() if self.extra else None,
                    "write_seconds": round(time.monotonic() - began, 3)}
        path = os.path.join(self.folder, MANIFEST)
        with open(path + ".partial", "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(path + ".partial", path)
        fsync_dir(self.folder)
        for entry in os.listdir(self.folder):  # older generations and partial writes of killed runs: kcheck's own
            if entry.startswith("gen-") and entry != gen:
                shutil.rmtree(os.path.join(self.folder, entry), ignore_errors=True)
        self.last = time.monotonic()
        self.seconds = self.last - began
        self.written += 1

    def verify(self) -> dict[str, Any]:
        """The folder's manifest, once it is known to be a checkpoint of this search whose files have the manifest's
        sizes and digests: else CheckpointError (no checkpoint, another search's, or a damaged one)."""
        manifest = read_manifest(self.folder)
        if manifest is None:
            raise CheckpointError(f"{self.folder} holds no checkpoint to resume")
        check_resumable(manifest, self.identity, self.folder)
        gen = os.path.join(self.folder, str(manifest.get("generation")))
        files = manifest.get("files") or {}
        if not isinstance(files, dict):
            raise CheckpointError(f"{os.path.join(self.folder, MANIFEST)}: its list of files is not a mapping")
        for name in sorted({*_required(manifest), *files}):
            if not re.fullmatch(r"((worker|part)-\d+/)?[a-z-]+\.bin", name):
                raise CheckpointError(f"{os.path.join(self.folder, MANIFEST)}: names a file kcheck never writes "
                                      f"({name!r})")
            want = files.get(name) or {}
            path = os.path.join(gen, name)
            try:
                got = _digest(path)
            except OSError as e:
                raise CheckpointError(f"{path}: {e.strerror or e}") from None
            if got != (want.get("bytes"), want.get("blake2b")):
                raise CheckpointError(f"{path}: damaged (its size or digest is not the manifest's)")
        self._verified = manifest
        return manifest

    def manifest(self) -> dict[str, Any]:
        """The folder's manifest (`verify`, unless it was just verified)."""
        return self._verified or self.verify()

    def load(self) -> tuple[dict[str, Any], dict[str, array], str, str]:
        """(counters, arrays, the frontier file, the next level's file) of the folder's checkpoint (`verify`, unless
        it was just verified); the caller's `extra` restored."""
        manifest = self._verified or self.verify()
        gen, files = os.path.join(self.folder, str(manifest["generation"])), manifest["files"]
        arrays = {"visited": read_array("Q", os.path.join(gen, "visited.bin")),
                  "parent": read_array("I", os.path.join(gen, "parent.bin")),
                  "action": read_array(files["action.bin"].get("typecode", "H"), os.path.join(gen, "action.bin"))}
        if self.extra is not None and manifest.get("extra") is not None:
            self.extra[1](manifest["extra"])
        return (manifest["counters"], arrays, os.path.join(gen, "frontier.bin"), os.path.join(gen, "next.bin"))

    def generation(self) -> tuple[dict[str, Any], str]:
        """(the manifest, the generation's folder) of the folder's checkpoint (`verify`, unless it was just
        verified), the caller's `extra` restored: for a search that reads its files itself (kcheck.model.parallel)."""
        manifest = self.manifest()
        if self.extra is not None and manifest.get("extra") is not None:
            self.extra[1](manifest["extra"])
        return manifest, os.path.join(self.folder, str(manifest["generation"]))

    def disk_file(self) -> str | None:
        """The path of the loaded checkpoint's disk-backed visited fingerprints (sorted), None when it has none."""
        manifest = self._verified or self.verify()
        if "visited-disk.bin" not in (manifest.get("files") or {}):
            return None
        return os.path.join(self.folder, str(manifest["generation"]), "visited-disk.bin")

    def records(self, name: str) -> str:
        """The path of the loaded checkpoint's record file `name` (one of `_OPTIONAL`, verified with the rest);
        CheckpointError when the checkpoint has none."""
        manifest = self._verified or self.verify()
        if name not in (manifest.get("files") or {}):
            raise CheckpointError(f"{self.folder}: the checkpoint has no {name}")
        return os.path.join(self.folder, str(manifest["generation"]), name)


def check_workers(counters: dict[str, Any], workers: int, folder: str) -> None:
    """Raises CheckpointError unless the checkpoint's search ran in `workers` processes (each holds its share)."""
    was = counters.get("workers", 1)
    if was != workers:
        raise CheckpointError(f"{folder}: a checkpoint of a search in {was} worker process(es); it resumes with as "
                              f"many (--workers {was}), not {workers}")


def _required(manifest: dict[str, Any]) -> tuple[str, ...]:
    """The files a checkpoint must hold: one process's, each worker's (kcheck.model.parallel), or each Spark
    partition's (spark_check/exhaust.py)."""
    counters = manifest.get("counters")
    partitions = counters.get("partitions") if isinstance(counters, dict) else None
    if isinstance(partitions, int) and partitions > 0:
        return tuple(f"part-{k}/{name}" for k in range(partitions) for name in PARTITION_FILES)
    workers = counters.get("workers") if isinstance(counters, dict) else None
    if isinstance(workers, int) and workers > 1:
        return tuple(f"worker-{k}/{name}" for k in range(workers) for name in WORKER_FILES)
    return _FILES


def read_array(typecode: str, path: str) -> array:
    a = array(typecode)
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a


def write_file(path: str, parts: Iterable[bytes]) -> dict[str, Any]:
    h, size = hashlib.blake2b(digest_size=16), 0
    with open(path, "wb") as f:
        for p in parts:
            f.write(p)
            h.update(p)
            size += len(p)
        f.flush()
        os.fsync(f.fileno())
    return {"bytes": size, "blake2b": h.hexdigest()}


def _digest(path: str) -> tuple[int, str]:
    h, size = hashlib.blake2b(digest_size=16), 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
