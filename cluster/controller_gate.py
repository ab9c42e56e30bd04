"""A gate between one broker and the KRaft controller: a TCP proxy that holds back the broker's requests of chosen
API keys while the rest flows, so a test can order two things Kafka sends on separate connections to the controller.

What for: the late-record finding (docs/findings.md, "A late record") needs broker 1's metadata replay (the KRaft
raft client's Fetch, api key 1) to lag the AlterPartition exchange (api key 56) of the same ISR change, and then
the reverse; both go from broker 1 to the controller. `LocalCluster(gate_broker=1)` starts a `ControllerGate` in
front of the (single) controller and names the gate's port, not the controller's, in that broker's
`controller.quorum.voters`; every other node keeps the controller's own address.

How the broker reaches the controller (Kafka 3.9 and 4.x):

- AlterPartition, BrokerHeartbeat/registration and forwarded requests go through `NodeToControllerChannelManager`s
  whose `RaftControllerNodeProvider` asks the raft client for the leader's id and looks its address up in the
  voter set (`KafkaRaftClient.voterNode`): with a static quorum (`controller.quorum.voters`, kraft.version 0) that
  is the broker's own configuration, so the gate's port.
- The raft client (`KafkaRaftClient`, an observer on a broker) starts from the static voters too, but a Fetch
  answer of version 17 or later carries the leader's endpoint (KIP-853 `NodeEndpoints`, the controller's own
  listener, `RaftUtil.singletonFetchResponse`), and the client then follows the leader there
  (`maybeHandleCommonResponse` -> `transitionToFollower`), past the gate. So the gate rewrites that endpoint's
  port in every Fetch answer it passes back (the same length: an int32 in place) to its own port, and the
  broker's metadata replay keeps coming through it.

The wire format (Kafka's protocol guide): every frame is an int32 size and that many bytes; a request starts
with int16 api key, int16 api version, int32 correlation id; an answer with the int32 correlation id. Per
connection the gate forwards the broker's requests in order: once one is held, those after it on the same
connection wait behind it (each of Kafka's channels to the controller is one connection with one request in
flight, so nothing else is held by it in practice). A held request is never dropped while its connection lives;
when the broker gives up on it (its request timeout: `controller.quorum.request.timeout.ms` for the raft client,
`controller.socket.timeout.ms` for the channels), it closes the connection and the gate closes the controller's
side too, forgetting what it held there; the broker sends again on a new connection. PLAINTEXT only.

One thread runs every connection (a selector); `stop()` closes them all and joins it.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

FETCH = 1  # ApiKeys.FETCH: the raft client's metadata replay from the controller
ALTER_PARTITION = 56  # ApiKeys.ALTER_PARTITION
_MAX_FRAME = 256 << 20  # a larger size is not Kafka's framing: the connection is closed


@dataclass(frozen=True)
class Proposal:
    """One partition of an AlterPartition request: the ISR a leader proposes at the partition epoch it holds."""

    topic: str  # the topic id (base64, as Kafka prints it) from version 2 on, else the name
    partition: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int


@dataclass
class _Request:
    key: int
    frame: bytes
    counted: bool = False  # in ever_held already


class _Link:
    """One connection of the broker and the gate's own connection to the controller for it."""

    def __init__(self, down: socket.socket, up: socket.socket) -> None:
        self.down, self.up = down, up
        self.from_down, self.from_up = bytearray(), bytearray()
        self.to_down, self.to_up = bytearray(), bytearray()
        self.queued: collections.deque[_Request] = collections.deque()  # the broker's, not forwarded yet
        self.asked: dict[int, int] = {}  # correlation id -> api key, of requests forwarded and not answered


class ControllerGate:
    """A proxy on 127.0.0.1 to the controller at `controller` (host, port); `hold(key)`/`release(key)` close and
    open the gate for one api key. Counts per api key: `forwarded`, `held` (now), `ever_held`; and `rewritten`, the
    Fetch answers whose leader endpoint now names the gate."""

    def __init__(self, controller: tuple[str, int], host: str = "127.0.0.1") -> None:
        self.controller = controller
        self._server = socket.create_server((host, 0))
        self._server.setblocking(False)
        self.host, self.port = host, int(self._server.getsockname()[1])
        self._lock = threading.Lock()
        self._closed_keys: set[int] = set()
        self._forwarded: collections.Counter[int] = collections.Counter()
        self._ever_held: collections.Counter[int] = collections.Counter()
        self.rewritten = 0
        self._links: list[_Link] = []
        self._wake_r, self._wake_w = socket.socketpair()
        self._selector = selectors.DefaultSelector()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=f"controller-gate-{self.port}", daemon=True)

    # -- the caller's side ---------------------------------------------------------------------------------------

    def start(self) -> ControllerGate:
        self._thread.start()
        return self

    def hold(self, *keys: int) -> None:
        """Close the gate for these api keys: their requests wait from now on."""
        with self._lock:
            self._closed_keys.update(keys)

    def release(self, *keys: int) -> None:
        """Open the gate for these api keys: what waits goes on, in order."""
        with self._lock:
            self._closed_keys.difference_update(keys)
        self._wake()

    def forwarded(self, key: int) -> int:
        with self._lock:
            return self._forwarded[key]

    def ever_held(self, key: int) -> int:
        """Requests of `key` the gate ever held back (each counted once, when it first had to wait)."""
        with self._lock:
            return self._ever_held[key]

    def held(self, key: int) -> list[bytes]:
        """The requests of `key` waiting now (whole frames, size included), oldest first."""
        with self._lock:
            return [r.frame for link in self._links for r in link.queued if r.key == key]

    def wait_held(self, key: int, timeout_s: float, matching: Callable[[bytes], bool] | None = None) -> list[bytes]:
        """Wait until a request of `key` waits (and, given `matching`, `matching(frame)` is true for one); the
        waiting frames of `key`, or [] after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while True:
            frames = self.held(key)
            if frames and (matching is None or any(matching(f) for f in frames)):
                return frames
            if time.monotonic() >= deadline:
                return []
            time.sleep(0.05)

    def stop(self) -> None:
        """Close every connection and the listener; the gate's thread is gone when this returns."""
        with self._lock:
            self._stopping = True
        self._wake()
        if self._thread.is_alive():
            self._thread.join(10)
        else:  # never started: nothing but the sockets to close
            self._close_all()

    def __enter__(self) -> ControllerGate:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    # -- the gate's thread -------------------------------------------------------------------------------------

    def _run(self) -> None:
        self._selector.register(self._server, selectors.EVENT_READ, None)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        try:
            while True:
                with self._lock:
                    if self._stopping:
                        return
                    for link in self._links:
                        self._pump(link)
                    links = list(self._links)
                self._watch(links)
                for key, events in self._selector.select(timeout=0.5):
                    self._on_ready(key.fileobj, key.data, events)  # type: ignore[arg-type]
        finally:
            self._close_all()

    def _watch(self, links: Iterable[_Link]) -> None:
        """Register each live socket for reading, and for writing while it has bytes to take."""
        for link in links:
            for sock, out in ((link.down, link.to_down), (link.up, link.to_up)):
                events = selectors.EVENT_READ | (selectors.EVENT_WRITE if out else 0)
                try:
                    self._selector.modify(sock, events, link)
                except KeyError:
                    self._selector.register(sock, events, link)

    def _on_ready(self, sock: socket.socket, link: _Link | None, events: int) -> None:
        if sock is self._wake_r:
            with contextlib.suppress(OSError):
                self._wake_r.recv(4096)
            return
        if sock is self._server:
            self._accept()
            return
        assert link is not None
        try:
            if events & selectors.EVENT_READ:
                self._read(sock, link)
            if events & selectors.EVENT_WRITE:
                out = link.to_down if sock is link.down else link.to_up
                del out[:sock.send(out)]
        except OSError:
            self._drop(link)

    def _accept(self) -> None:
        try:
            down, _ = self._server.accept()
        except (BlockingIOError, InterruptedError):
            return
        try:
            up = socket.create_connection(self.controller, timeout=5)
        except OSError:
            down.close()
            return
        for s in (down, up):
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._links.append(_Link(down, up))

    def _read(self, sock: socket.socket, link: _Link) -> None:
        data = sock.recv(1 << 16)
        if not data:
            raise ConnectionResetError("closed")
        with self._lock:
            if sock is link.down:
                link.from_down += data
                for frame in _frames(link.from_down):
                    link.queued.append(_Request(struct.unpack_from(">h", frame, 4)[0], frame))
                self._pump(link)
            else:
                link.from_up += data
                for frame in _frames(link.from_up):
                    link.to_down += self._answer(link, frame)

    def _pump(self, link: _Link) -> None:
        """Forward the broker's requests in order up to the first whose gate is closed (under the lock)."""
        while link.queued:
            request = link.queued[0]
            if request.key in self._closed_keys:
                if not request.counted:
                    request.counted = True
                    self._ever_held[request.key] += 1
                return
            link.queued.popleft()
            link.asked[struct.unpack_from(">i", request.frame, 8)[0]] = request.key
            self._forwarded[request.key] += 1
            link.to_up += request.frame

    def _answer(self, link: _Link, frame: bytes) -> bytes:
        """An answer on its way to the broker: a Fetch answer's leader endpoint renamed to the gate (see the module
        doc), anything else as it is."""
        key = link.asked.pop(struct.unpack_from(">i", frame, 4)[0], None)
        if key != FETCH:
            return frame
        patched = rename_leader_endpoint(frame, self.controller, self.port)
        if patched is not frame:
            self.rewritten += 1
        return patched

    def _drop(self, link: _Link) -> None:
        with self._lock:
            if link in self._links:
                self._links.remove(link)
        for s in (link.down, link.up):
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(s)
            with contextlib.suppress(OSError):
                s.close()

    def _close_all(self) -> None:
        with self._lock:
            links, self._links = self._links, []
        for link in links:
            self._drop(link)
        self._selector.close()
        for s in (self._server, self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                s.close()


def _frames(buffer: bytearray) -> list[bytes]:
    """The whole frames at the start of `buffer` (removed from it), size prefix included."""
    out = []
    while len(buffer) >= 4:
        size = struct.unpack_from(">i", buffer)[0]
        if not 0 <= size <= _MAX_FRAME:
            raise ConnectionAbortedError(f"frame of {size} bytes")
        if len(buffer) < 4 + size:
            break
        out.append(bytes(buffer[:4 + size]))
        del buffer[:4 + size]
    return out


def rename_leader_endpoint(frame: bytes, controller: tuple[str, int], port: int) -> bytes:
    """A Fetch answer (framed) whose trailing tagged field is the leader's `NodeEndpoints` at `controller`, with that
    endpoint's port replaced by `port`; `frame` itself (the same object) when it ends otherwise.

    The answer's body ends with its tagged fields, and a controller's Fetch answer (version 17+) carries one: tag 0,
    the leader's endpoints (KIP-951), a compact array of one NodeEndpoint {NodeId int32, Host compact string, Port
    int32, Rack compact nullable string (null), no tagged fields} (Kafka's FetchResponse.json)."""
    host = controller[0].encode()
    after_id = bytes([len(host) + 1]) + host + struct.pack(">i", controller[1]) + b"\x00\x00"
    size = 1 + 4 + len(after_id)  # the array's length (one element, compact: 2), NodeId, the rest
    head = bytes([1, 0, size, 2])  # one tagged field, tag 0, its size, the array's length
    if size >= 0x80 or len(frame) < 8 + len(head) + 4 + len(after_id):
        return frame
    start = len(frame) - len(head) - 4 - len(after_id)
    if frame[start:start + len(head)] != head or frame[start + len(head) + 4:] != after_id:
        return frame
    at = len(frame) - 6  # the port: before the rack's null and the element's empty tagged fields
    return frame[:at] + struct.pack(">i", port) + frame[at + 4:]


# -- reading a held AlterPartition -----------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, at: int = 0) -> None:
        self.data, self.at = data, at

    def take(self, fmt: str) -> int:
        value = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += struct.calcsize(fmt)
        return int(value)

    def varint(self) -> int:
        value, shift = 0, 0
        while True:
            b = self.data[self.at]
            self.at += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7

    def skip_tags(self) -> None:
        for _ in range(self.varint()):
            self.varint()
            self.at += self.varint()

    def raw(self, n: int) -> bytes:
        out = self.data[self.at:self.at + n]
        self.at += n
        return out


def alter_partition_proposals(frame: bytes) -> list[Proposal]:
    """The partitions of a framed AlterPartition request (versions 0 to 3, all flexible: request header v2), as
    Kafka's AlterPartitionRequest.json lays them out."""
    r = _Reader(frame, 4)
    if r.take(">h") != ALTER_PARTITION:
        raise ValueError("not an AlterPartition request")
    version = r.take(">h")
    r.take(">i")  # correlation id
    client = r.take(">h")
    r.at += max(client, 0)
    r.skip_tags()
    r.take(">i")  # BrokerId
    r.take(">q")  # BrokerEpoch
    out = []
    for _ in range(r.varint() - 1):
        if version >= 2:
            topic = base64.urlsafe_b64encode(r.raw(16)).decode().rstrip("=")
        else:
            topic = r.raw(r.varint() - 1).decode()
        for _ in range(r.varint() - 1):
            partition, leader_epoch = r.take(">i"), r.take(">i")
            isr = []
            for _ in range(r.varint() - 1):
                isr.append(r.take(">i"))
                if version >= 3:  # NewIsrWithEpochs: BrokerId, BrokerEpoch, tagged fields
                    r.take(">q")
                    r.skip_tags()
            if version >= 1:
                r.take(">b")  # LeaderRecoveryState
            out.append(Proposal(topic, partition, leader_epoch, tuple(isr), r.take(">i")))
            r.skip_tags()
        r.skip_tags()
    return out


__all__ = ["ALTER_PARTITION", "FETCH", "ControllerGate", "Proposal", "alter_partition_proposals",
           "rename_leader_endpoint"]
