"""The exhaustive search's visited set beyond memory: at most a budget of fingerprints in a table in RAM, the rest in
one sorted file on disk, as TLC's disk fingerprint set does (tlc2/tool/fp/DiskFPSet.java: an in-memory table
flushed, sorted, into a sorted disk file when it fills, the file looked up through an in-memory index of its pages).

- `add(fp)` looks in the table first (the states of the last levels, where most duplicates of a breadth-first
  search are found), then in the file: the index (each 4 KiB page's first fingerprint, 1/512 of the file) names
  the one page that can hold it, read with one `pread` and searched by bisection. The answer is immediate, so the
  search stores the same states in the same order with the same numbers as with `FingerprintSet`: same counts,
  depth and counterexample, and every cap and checkpoint works as before.
- When the table passes its load factor it is flushed: its fingerprints sorted (numpy) and merged with the file in
  one sequential pass, a chunk of each at a time, into a new file; the table is emptied. The file only grows by
  merges, so a fingerprint is never in both.
- The files are made with `tempfile.TemporaryFile` in the folder given (the checkpoint's folder when
  checkpointing, else --spill-dir or the system's temporary folder): unlinked from the start (O_TMPFILE on
  Linux), so nothing is left behind however the process ends. A checkpoint copies the file (`disk_chunks`).

Memory: the table (`budget` bytes rounded down to a power of two) and the index (8 bytes per 512 fingerprints on
disk); the parent/action `Store` (6 bytes a state) stays in memory.
"""

from __future__ import annotations

import os
import tempfile
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import IO

import numpy as np

from kcheck.model.visited import FingerprintSet

PAGE = 512  # fingerprints per page of the file (4 KiB): one `pread` per lookup
_CHUNK = 1 << 17  # fingerprints per chunk of a merge (1 MiB)
_LOAD = 0.7  # the table's load factor, as FingerprintSet's
MIN_BUDGET = 1 << 10  # bytes: a table of 128 slots (tests force many flushes with it)


class DiskFingerprintSet:
    """A set of nonzero 64-bit ints: at most `budget` bytes of table in memory, the rest sorted in a file in
    `folder` (see the module docstring). `add`, `in`, `len` and `nbytes` as FingerprintSet's."""

    def __init__(self, budget: int, folder: str | None = None) -> None:
        slots = 16
        while slots * 2 * 8 <= max(budget, MIN_BUDGET):
            slots *= 2
        self._table = array("Q", bytes(8 * slots))
        self._mask = slots - 1
        self._limit = int(slots * _LOAD)
        self._folder = folder
        self._file: IO[bytes] | None = None
        self._index = array("Q")  # the first fingerprint of each page of the file
        self.held = 0  # fingerprints in the table
        self.on_disk = 0  # fingerprints in the file
        self.flushes = 0
        self.written = 0  # bytes written to files in all

    def __len__(self) -> int:
        return self.held + self.on_disk

    @property
    def size(self) -> int:
        return self.held + self.on_disk

    @property
    def nbytes(self) -> int:
        """Bytes held in memory (the table and the file's index)."""
        return len(self._table) * 8 + len(self._index) * 8

    @property
    def disk_bytes(self) -> int:
        return self.on_disk * 8

    @property
    def table(self) -> array:
        """The in-memory table (read only: a checkpoint writes it beside the file's copy)."""
        return self._table

    def _slot(self, fp: int) -> int:
        """The table slot holding `fp`, else the empty slot where it would go (linear probing, as FingerprintSet's:
        its loop inlined there for speed)."""
        table, mask = self._table, self._mask
        i = fp & mask
        v = table[i]
        while v and v != fp:
            i = (i + 1) & mask
            v = table[i]
        return i

    def add(self, fp: int) -> bool:
        """Adds `fp`; True if it was not there."""
        i = self._slot(fp)
        if self._table[i] or (self.on_disk and self._on_disk(fp)):
            return False
        self._table[i] = fp
        self.held += 1
        if self.held > self._limit:
            self.flush()
        return True

    def __contains__(self, fp: int) -> bool:
        return bool(self._table[self._slot(fp)]) or (bool(self.on_disk) and self._on_disk(fp))

    def _on_disk(self, fp: int) -> bool:
        page = bisect_right(self._index, fp) - 1
        if page < 0:
            return False
        assert self._file is not None
        found = array("Q")
        found.frombytes(os.pread(self._file.fileno(), 8 * PAGE, 8 * PAGE * page))
        k = bisect_left(found, fp)
        return k < len(found) and found[k] == fp

    def flush(self) -> None:
        """The table's fingerprints merged into the file (a new one replaces it); the table emptied."""
        view = np.frombuffer(self._table, dtype=np.uint64)
        new = np.sort(view[view != 0])
        self._merge(new, self._chunks(self._file, self.on_disk) if self._file is not None else iter(()))
        view[:] = 0
        self.held = 0
        self.flushes += 1

    def _merge(self, new: np.ndarray, old: Iterator[np.ndarray]) -> None:
        """Writes the union of sorted `new` and the sorted chunks `old` (disjoint) to a new file, which becomes the
        file; its index is built as it is written."""
        out = tempfile.TemporaryFile(dir=self._folder, prefix="kcheck-visited-", suffix=".fps")
        index: list[np.ndarray] = []
        count, taken = 0, 0

        def emit(part: np.ndarray) -> None:
            nonlocal count
            if len(part):
                out.write(part.tobytes())
                index.append(part[(-count) % PAGE::PAGE])
                count += len(part)

        try:
            for chunk in old:
                cut = int(np.searchsorted(new, chunk[-1], side="right"))
                emit(np.sort(np.concatenate((chunk, new[taken:cut]))))
                taken = cut
            emit(new[taken:])
            out.flush()
        except BaseException:
            out.close()
            raise
        if self._file is not None:
            self._file.close()
        self._file, self.on_disk = out, count
        self._index = array("Q", np.concatenate(index).tobytes() if index else b"")
        self.written += 8 * count

    @staticmethod
    def _chunks(f: IO[bytes], count: int) -> Iterator[np.ndarray]:
        """The file's fingerprints, a chunk at a time (its own reads: the file's position is not used)."""
        fd = f.fileno()
        for start in range(0, count, _CHUNK):
            data = os.pread(fd, 8 * min(_CHUNK, count - start), 8 * start)
            yield np.frombuffer(data, dtype=np.uint64)

    def disk_chunks(self) -> Iterator[bytes]:
        """The file's bytes, a chunk at a time (a checkpoint's copy)."""
        if self._file is not None:
            for chunk in self._chunks(self._file, self.on_disk):
                yield chunk.tobytes()

    def restore(self, table: array, disk_path: str | None) -> None:
        """Puts back a checkpoint's visited set: the fingerprints of `table` (any size) and of the sorted file
        `disk_path` (None: none), all into this set's file; the table left empty."""
        view = np.frombuffer(table, dtype=np.uint64)
        new = np.sort(view[view != 0])
        if disk_path is None:
            self._merge(new, iter(()))
            return
        with open(disk_path, "rb") as f:
            self._merge(new, self._chunks(f, os.fstat(f.fileno()).st_size // 8))

    def close(self) -> None:
        """Drops the file (it was never linked: nothing is left on disk)."""
        if self._file is not None:
            self._file.close()
            self._file = None


def visited_set(budget: int | None, folder: str | None) -> FingerprintSet | DiskFingerprintSet:
    """The search's visited set: all in memory (`budget` None), else at most `budget` bytes of table in memory and
    the rest in files in `folder` (None: the system's temporary folder)."""
    return FingerprintSet() if budget is None else DiskFingerprintSet(budget, folder)


def restore_visited(seen: FingerprintSet | DiskFingerprintSet, table: array, disk_path: str | None
                    ) -> FingerprintSet | DiskFingerprintSet:
    """The visited set a checkpoint saved (its table, and its disk file when it had one), as the kind `seen` is:
    a checkpoint taken with a disk set resumes in memory and the other way round."""
    if isinstance(seen, DiskFingerprintSet):
        seen.restore(table, disk_path)
        return seen
    out = FingerprintSet.from_table(table)
    if disk_path is not None:
        with open(disk_path, "rb") as f:
            for chunk in DiskFingerprintSet._chunks(f, os.fstat(f.fileno()).st_size // 8):
                for fp in chunk.tolist():
                    out.add(fp)
    return out
