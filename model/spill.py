"""The exhaustive search's frontier store: records appended in order and read back in order, compressed in chunks,
spilled to a file when they outgrow a memory threshold.

A record is a few unsigned 64-bit ints (a state's number, its parent's, an action index, a fingerprint: the
caller says how many) and one byte string (a state's encoding). Records are packed into a buffer; each 64 KiB of
buffer is compressed as one zlib chunk (level 1). Compressing a chunk rather than each encoding costs about a
fifth of the time (one deflate set-up per chunk instead of per state) and stores about a quarter of the bytes,
because the states of one BFS level share most of their content: measured on the replication model's small
bounds, 640-byte encodings take 39 bytes a state chunked against 177 compressed one by one.

With a `spill_dir`, once the compressed chunks held in memory pass `threshold` bytes they are appended to a file
there and dropped from memory; reading streams the file's chunks back, then the ones still in memory. The file
is unlinked as soon as it is created (its descriptor keeps it), so nothing is left behind however the process
ends. `spilled` counts the bytes written to disk.
"""

from __future__ import annotations

import os
import struct
import tempfile
import zlib
from collections.abc import Iterator
from typing import IO, Any

CHUNK = 1 << 16  # bytes of packed records per compressed chunk
DEFAULT_THRESHOLD = 256 << 20  # compressed frontier bytes a process keeps in memory before spilling
_LEN = struct.Struct("<I")
_DUMP = struct.Struct("<cQQ")  # a dump's head: b"z" (chunks compressed) or b"r", records, chunks


class Spool:
    """Records of `ints` unsigned 64-bit ints and one bytes value, appended, then read back in order (any number
    of times). See the module docstring."""

    def __init__(self, ints: int = 0, compress: bool = True, spill_dir: str | None = None,
                 threshold: int = DEFAULT_THRESHOLD) -> None:
        self._head = struct.Struct("<" + "Q" * ints + "I")
        self._ints = ints
        self._compress = compress
        self._dir = spill_dir
        self._threshold = threshold
        self._chunk = min(CHUNK, max(1, threshold)) if spill_dir is not None else CHUNK  # tiny thresholds: tests
        self._buf = bytearray()
        self._chunks: list[bytes] = []
        self._held = 0  # bytes of self._chunks
        self._file: IO[bytes] | None = None
        self._filed = 0  # chunks in the file
        self.count = 0
        self.spilled = 0

    def __len__(self) -> int:
        return self.count

    def append(self, data: bytes, *ints: int) -> None:
        buf = self._buf
        buf += self._head.pack(*ints, len(data))
        buf += data
        self.count += 1
        if len(buf) >= self._chunk:
            self._seal()

    @property
    def nbytes(self) -> int:
        """Bytes held in memory."""
        return self._held + len(self._buf)

    def _seal(self) -> None:
        raw = bytes(self._buf)
        self._buf = bytearray()
        chunk = zlib.compress(raw, 1) if self._compress else raw
        self._chunks.append(chunk)
        self._held += len(chunk)
        if self._dir is not None and self._held > self._threshold:
            self._spill()

    def _spill(self) -> None:
        if self._file is None:
            fd, path = tempfile.mkstemp(dir=self._dir, prefix="kcheck-frontier-", suffix=".spill")
            os.unlink(path)
            self._file = os.fdopen(fd, "w+b")
        f = self._file
        f.seek(0, os.SEEK_END)
        for chunk in self._chunks:
            f.write(_LEN.pack(len(chunk)))
            f.write(chunk)
            self.spilled += _LEN.size + len(chunk)
        self._filed += len(self._chunks)
        self._chunks = []
        self._held = 0

    def dump(self) -> Iterator[bytes]:
        """The records as a checkpoint keeps them (`load` reads them back): a head (compressed or not, how many
        records, how many chunks), then each chunk as held, its length first; the records not sealed yet as one
        more chunk. No record is decoded: a chunk is copied as it is."""
        tail = bytes(self._buf)
        if tail and self._compress:
            tail = zlib.compress(tail, 1)
        yield _DUMP.pack(b"z" if self._compress else b"r", self.count, self._filed + len(self._chunks) + bool(tail))
        if self._file is not None:
            f = self._file
            f.flush()
            pos = 0  # its own place in the file, as _raw_chunks
            for _ in range(self._filed):
                f.seek(pos)
                head = f.read(_LEN.size)
                (n,) = _LEN.unpack(head)
                yield head + f.read(n)
                pos += _LEN.size + n
        for chunk in list(self._chunks):
            yield _LEN.pack(len(chunk)) + chunk
        if tail:
            yield _LEN.pack(len(tail)) + tail

    def load(self, f: IO[bytes]) -> None:
        """Appends the records of one `dump` read from `f` (chunks taken as they are when both compress alike)."""
        if self._buf:
            self._seal()
        flag, count, chunks = _DUMP.unpack(f.read(_DUMP.size))
        for _ in range(chunks):
            (n,) = _LEN.unpack(f.read(_LEN.size))
            chunk = f.read(n)
            if (flag == b"z") != self._compress:
                chunk = zlib.compress(chunk, 1) if self._compress else zlib.decompress(chunk)
            self._chunks.append(chunk)
            self._held += len(chunk)
            if self._dir is not None and self._held > self._threshold:
                self._spill()
        self.count += count

    def _raw_chunks(self) -> Iterator[bytes]:
        unpack = zlib.decompress if self._compress else bytes
        if self._file is not None:
            f = self._file
            f.flush()
            pos = 0  # its own place in the file: a checkpoint reads the frontier while the search iterates it
            for _ in range(self._filed):
                f.seek(pos)
                (n,) = _LEN.unpack(f.read(_LEN.size))
                data = f.read(n)
                pos += _LEN.size + n
                yield unpack(data)
        for chunk in list(self._chunks):
            yield unpack(chunk)
        if self._buf:
            yield bytes(self._buf)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        """(int, ..., data) per record, in the order appended."""
        head = self._head
        size, unpack_from = head.size, head.unpack_from
        for raw in self._raw_chunks():
            pos, end = 0, len(raw)
            while pos < end:
                rec = unpack_from(raw, pos)
                pos += size
                n = rec[-1]
                yield (*rec[:-1], raw[pos:pos + n])
                pos += n

    def close(self) -> None:
        """Drops every record (and the spill file)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._chunks, self._buf, self._held, self._filed, self.count = [], bytearray(), 0, 0, 0


class Objects:
    """The frontier of a model without `decode`, without spilling: (number, state object) pairs in a list."""

    spilled = 0

    def __init__(self) -> None:
        self._items: list[tuple[int, object]] = []

    def append(self, data: object, n: int) -> None:
        self._items.append((n, data))

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[tuple[int, object]]:
        return iter(self._items)

    def close(self) -> None:
        self._items = []
