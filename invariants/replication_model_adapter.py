"""The replication model (model/replication) behind the one model interface (`kcheck.model.interface.Model`).

`ReplicationModel(protocol, cfg)` gives the engines of `kcheck.model.search` what the former search
(`yardstick.exhaust`) has built in: one initial state (`actions.initial_state`), every candidate action of
every kind the config allows, in `actions.KINDS` order (exactly `actions.successors`' enumeration; `step` is
`actions.apply`, None when its guard is false), and one `StateInvariant` per registered replication invariant
(`check_replication`'s hard ones; an invariant holds where its `not_applicable` says it does not apply, as
`InvariantTally` counts it).

Encoding: a state becomes nested tuples of ints, bools, None and strings (every frozenset as a sorted tuple,
the message pool sorted, each Record as its (id, epoch) pair; `state_tuple`); each part of it (every replica,
the registry, the zombies, the pool, the history, the budget spent) is serialised with `marshal` format 2, which
writes the same bytes for equal values (no back-references, unlike formats 3 and 4), and the tuple of those
parts' bytes is marshalled again. Equal states therefore give equal bytes, and `decode` inverts it, so the
search keeps its frontier as bytes. The parts are kept by value, so a successor (which shares most objects with
its parent) converts only what its step replaced, and only when no state had that value yet.

Speed: `successors` computes the enabled actions and their results in one pass, skipping candidates
that a guard of their own kind rules out (`_PRE`) and, at plan time, those that spend a budget the config sets to
0 (`_NEVER`); each successor is settled by `actions.settler`, which repeats only the settling its step made
necessary. Some steps read and change only a few parts, so their results are kept per the objects they read
(decoded states share them): `apply_metadata` (the broker's replica and the log), `advance_hw` (the replica and the
history), `handle_fetch` (the leader's answer to a request) and the steps of `_RECIPIENT_ONLY` (the recipient's
replica); a drop and its settling are one step. The invariants of invariants/replication.py run as their twins
(`replication.FAST`: None fast, no Violation objects), those with a twin sharing one verdict per state
(`_shared_verdict`), asked by the search in one call (`first_violation`), and the ones a config switches off do
not run. A decoded state's registry is the
same object as its metadata log's last image when they are equal, so `publish` finds it unchanged by identity.
The search's key is `fingerprint` (`fingerprint_state`): the XOR of the parts' 64-bit digests (blake2b of each
part's bytes, personalised with the part's kind), equal to `encoding_fingerprint(encode(s))`. A part's digest is
kept with its bytes, by value, so a successor of the state just decoded (the one the search steps) costs a table
lookup per part its step replaced and two XORs, never hashing bytes or building the encoding, which only new
states get. The twins read no message in flight, so a state whose other parts' bytes are those of a state where
every twin held shares its verdict (most new states differ from one already checked only in their pool).

Broker symmetry, and why it is sound. A permutation p of the broker ids 1..n acts on a state by renaming every
broker id in it (the replicas' positions, every leader, ISR, ELR, fenced set, replica list, message sender and
recipient, the per-broker epoch tuples, the history's leaders) and re-sorting what the model keeps sorted as a
set (ISR tuples in messages, follower views, AlterPartition's broker epochs). It is a symmetry of the transition
system when, for every state s and action a, apply(p(s), p(a)) = p(apply(s, a)), and every invariant gives the
same verdict on s and p(s). That holds when no rule and no action compares broker ids as numbers: then ids are
only names, compared for equality, and order enters only through the ordered replica list, which p renames
along with everything else. We checked the rules in model/replication/protocol.py (leader choice walks the
registry's replica list; no rule sorts or compares ids) and the actions in model/replication/actions.py (ids
are sorted only where the result is a set), and the invariants only read sets, per-broker values and
logs. Two things do order ids numerically, so symmetry is switched off for them:
- reassignment: `reassignment_plan` appends the replicas being removed in ascending id order, and that order is
  the leader-choice order, so with `reassignments` or `cancels` > 0 no symmetry is used;
- a protocol whose rules are not all model/replication/protocol.py's or reassignment.py's own functions (a
  user's module:object): we cannot read its rules, so no symmetry is used.
Which permutations are listed. Without reassignment the registry's replica list, and every replica's copy of it,
stays (1, ..., RF) in every reachable state (nothing else writes it), and p renames that list, so a permutation
that moves a replica broker maps every reachable state to an unreachable one: it is a symmetry, but merges no
two reachable states. Only the permutations of the brokers outside the replica set (RF+1..n, which hold no log
and never lead or join the ISR, though they can still crash or be fenced and so spend a budget) can merge
reachable states, and all of them are listed (with the identity they form a group, so the reduction keeps one
state per orbit). So the reduction pays only when RF < brokers - 1: the replication model's replicas are not
interchangeable, because Kafka's leader choice walks the replica list in order (`PartitionChangeBuilder`),
which makes the preferred replica and every later position a role of its own. tests/test_engine.py checks the
commuting property on every reachable state of a small configuration, for today's protocol and each built-in
variant, and that the reduced search finds the same verdicts with fewer states.
"""

from __future__ import annotations

import inspect
import marshal
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields
from functools import partial
from hashlib import blake2b
from itertools import permutations
from typing import Any

from kcheck.invariants import registry
from kcheck.invariants import replication as replication_invariants
from kcheck.invariants.registry import REGISTRY
from kcheck.invariants.replication import ReplicationSubject
from kcheck.model.interface import StateInvariant
from kcheck.model.replication import protocol as protocol_module
from kcheck.model.replication import reassignment as reassignment_module
from kcheck.model.replication.actions import (
    KINDS,
    Action,
    Config,
    advance_hw,
    apply,
    apply_metadata,
    drop,
    handle_fetch,
    handle_fetch_response,
    handle_leader_and_isr,
    handle_stop_replica,
    initial_state,
    settler,
)
from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.reduction import normal, normalize, why_off
from kcheck.model.replication.state import (
    NO_LEADER,
    AlterPartition,
    AlterPartitionResponse,
    Budget,
    ControlledShutdown,
    FetchRequest,
    FetchResponse,
    History,
    LeaderAndIsr,
    Message,
    MetadataRecord,
    Record,
    Registry,
    Replica,
    State,
    StopReplica,
    ZombieController,
    message_key,
)

_MSG_CODE: dict[type, int] = {LeaderAndIsr: 0, StopReplica: 1, FetchRequest: 2, FetchResponse: 3, AlterPartition: 4,
                              AlterPartitionResponse: 5, ControlledShutdown: 6}
_BUDGET_FIELDS = tuple(f.name for f in fields(Budget))


def _s(xs: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(sorted(xs))


def _log(log: tuple[Record, ...]) -> tuple[int, ...]:
    out: list[int] = []
    for r in log:
        out += (r.id, r.epoch)
    return tuple(out)


def _unlog(flat: tuple[int, ...]) -> tuple[Record, ...]:
    return tuple(Record(flat[i], flat[i + 1]) for i in range(0, len(flat), 2))


def _reg(g: Registry) -> tuple[Any, ...]:
    return (g.controller_epoch, g.leader, g.leader_epoch, g.partition_epoch, _s(g.isr), _s(g.elr), g.written_by,
            _s(g.fenced), g.broker_epochs, g.replicas, g.adding, g.removing, g.last_known_leader, _s(g.shutting_down))


def _unreg(t: tuple[Any, ...]) -> Registry:
    return Registry(t[0], t[1], t[2], t[3], frozenset(t[4]), frozenset(t[5]), t[6], frozenset(t[7]), t[8], t[9],
                    t[10], t[11], t[12], frozenset(t[13]))


def _rep(r: Replica) -> tuple[Any, ...]:
    return (r.id, r.alive, r.broker_epoch, r.clean_shutdown, _MEMO.get(r.log, _log), r.flushed, r.hw, r.known,
            r.leader, r.leader_epoch, r.partition_epoch, _s(r.isr), r.controller_epoch, r.needs_truncation, r.replicas,
            r.follower_leo, r.follower_broker_epoch, r.epoch_start,
            None if r.pending_isr is None else _s(r.pending_isr), r.applied, r.sent, r.in_flight, _s(r.fetched),
            r.shutdown_asked)


def _unrep(t: tuple[Any, ...]) -> Replica:
    return Replica(t[0], t[1], t[2], t[3], _unlog(t[4]), t[5], t[6], t[7], t[8], t[9], t[10], frozenset(t[11]),
                   t[12], t[13], t[14], t[15], t[16], t[17], None if t[18] is None else frozenset(t[18]), t[19],
                   t[20], t[21], frozenset(t[22]), t[23])


def _msg(m: Message) -> tuple[Any, ...]:
    if isinstance(m, FetchResponse):
        return (3, m.to, m.frm, m.offset, m.follower_epoch, _log(m.records), m.hw, m.error)
    return (_MSG_CODE[type(m)], *(getattr(m, f) for f in m.__dataclass_fields__))


def _unmsg(t: tuple[Any, ...]) -> Message:
    code = t[0]
    if code == 3:
        return FetchResponse(t[1], t[2], t[3], t[4], _unlog(t[5]), t[6], t[7])
    cls = (LeaderAndIsr, StopReplica, FetchRequest, FetchResponse, AlterPartition, AlterPartitionResponse,
           ControlledShutdown)[code]
    return cls(*t[1:])


def _unhist(t: tuple[Any, ...]) -> History:
    return History(frozenset(t[0]), frozenset(t[1]), frozenset(t[2]), frozenset(t[3]), t[4], frozenset(t[5]),
                   frozenset(t[6]), t[7], t[8], t[9], t[10], frozenset(t[11]), frozenset(t[12]), frozenset(t[13]),
                   t[14], t[15], t[16], frozenset(t[17]))


class _Memo:
    """Sub-encodings by object identity: a successor shares most of its replicas, registry, message objects and
    history sets with its parent (`evolve` copies only what changed), so each is converted once. Entries hold
    their object, so an id is never reused while it is cached; the memo is emptied when it grows large (only before
    a state or a part is converted, so every entry a conversion uses stays valid while it runs)."""

    LIMIT = 8_000  # enough for a parent and its successors; a larger memo cost more in garbage collection

    def __init__(self) -> None:
        self.d: dict[int, tuple[Any, Any]] = {}

    def get(self, obj: Any, conv: Callable[[Any], Any]) -> Any:
        hit = self.d.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = conv(obj)
        self.d[id(obj)] = (obj, value)
        return value


_MEMO = _Memo()


def _hist(h: History) -> tuple[Any, ...]:
    get = _MEMO.get
    return (get(h.acked, _s), get(h.acked_leader_only, _s), get(h.pending_acks, _s), get(h.committed, _s),
            h.true_hw, get(h.reads, _s), get(h.epoch_leaders, _s), h.max_leader_epoch, h.max_written_by,
            h.max_broker_epochs, h.lossy_crashes, get(h.reassign_origin, _s), get(h.reassign_seen, _s),
            get(h.completions, _s), h.latest_seen, h.fetch_hw_seen, h.client_epoch, get(h.offset_regressions, _s))


def _reps(reps: tuple[Replica, ...]) -> tuple[Any, ...]:
    get = _MEMO.get
    return tuple(get(r, _rep) for r in reps)


def state_tuple(s: State) -> tuple[Any, ...]:
    """The canonical nested-tuple form of a state (equal states, equal tuples). A successor shares most of its
    objects with its parent, so each part is converted once and then found in the memo by identity."""
    d = _MEMO.d
    if len(d) >= _MEMO.LIMIT:
        d.clear()
    get, zs = _MEMO.get, s.zombies
    zt = tuple((z.epoch, get(z.view, _reg)) for z in zs) if zs else ()
    return (get(s.replicas, _reps), get(s.registry, _reg), zt, get(s.pool, _pool), get(s.history, _hist),
            get(s.used, _budget), get(s.metadata, _meta) if s.metadata else ())


def _meta(log: tuple[MetadataRecord, ...]) -> tuple[Any, ...]:
    get = _MEMO.get
    return tuple((rec.kind, get(rec.image, _reg)) for rec in log)


def _unmeta(t: tuple[Any, ...]) -> tuple[MetadataRecord, ...]:
    return tuple(MetadataRecord(kind, _cached(image, _unreg)) for kind, image in t)


def _pool(pool: frozenset[Message]) -> tuple[Any, ...]:
    get = _MEMO.get
    return _s(get(m, _msg) for m in pool)


def _budget(b: Budget) -> tuple[int, ...]:
    return tuple(getattr(b, f) for f in _BUDGET_FIELDS)


_DECODED: dict[tuple[Any, ...], Any] = {}  # sub-tuple -> the value built from it (replicas, registries, ...)


def _cached(t: tuple[Any, ...], build: Callable[[tuple[Any, ...]], Any]) -> Any:
    """The value for sub-tuple `t`: states in the frontier share most of their replicas, registry and messages,
    so each distinct one is built once (and shared, which the encoder's memo then hits as well). The key
    includes the builder, so equal tuples of different kinds never meet."""
    key = (build, t)
    v = _DECODED.get(key)
    if v is None:
        if len(_DECODED) >= 50_000:
            _DECODED.clear()
        v = _DECODED[key] = build(t)
    return v


def state_from_tuple(t: tuple[Any, ...]) -> State:
    return State(tuple(_cached(r, _unrep) for r in t[0]), _cached(t[1], _unreg),
                 tuple(ZombieController(e, _cached(v, _unreg)) for e, v in t[2]),
                 _cached(t[3], _unpool), _cached(t[4], _unhist), _cached(t[5], _unbudget),
                 _cached(t[6], _unmeta) if t[6] else ())


def _unpool(t: tuple[Any, ...]) -> frozenset[Message]:
    return frozenset(_cached(m, _unmsg) for m in t)


def _unbudget(t: tuple[Any, ...]) -> Budget:
    return Budget(*t)


def _tuple_parts(t: tuple[Any, ...]) -> tuple[bytes, ...]:
    """The parts of a state tuple: each replica, then registry, zombies, pool, history, budget, each marshalled."""
    dumps = marshal.dumps
    return (*(dumps(r, 2) for r in t[0]), *(dumps(x, 2) for x in t[1:]))


_POOL_PART = 2  # the pool's part follows the replicas' parts, the registry's and the zombies'
# The kind of each part, in the parts' order after the replicas (every replica's part is of the first kind).
_KINDS = (b"replica", b"registry", b"zombies", b"pool", b"history", b"budget", b"metadata")
_from_bytes = int.from_bytes


def _part_digest(kind: bytes, data: bytes) -> int:
    """A part's 64-bit digest: blake2b of its bytes, personalised with its kind."""
    return _from_bytes(blake2b(data, digest_size=8, person=kind).digest(), "little")


def _digest(parts: Sequence[bytes]) -> int:
    """The fingerprint of a state from its parts' bytes (see `fingerprint_state`)."""
    n = len(parts) - 6
    fp = 0
    for i, data in enumerate(parts):
        fp ^= _part_digest(_KINDS[i - n + 1] if i >= n else b"replica", data)
    return fp or 1


class _Last:
    """The parts of the state decoded last, with their objects and their (bytes, digest) entries, and the XOR of
    its digests (`decode_state`): its successors share most of them, found by identity before any table lookup."""

    __slots__ = ("reps", "rep_entries", "reg", "reg_e", "zs", "zs_e", "pool", "pool_e", "h", "h_e", "used", "used_e",
                 "meta", "meta_e", "fp")

    def __init__(self) -> None:
        self.reps: tuple[Replica, ...] = ()
        self.rep_entries: list[tuple[Any, ...]] = []  # (bytes, digest) entries, or a decoding table's (.., value)
        self.reg: Any = None
        self.zs: Any = None
        self.pool: Any = None
        self.h: Any = None
        self.used: Any = None
        self.meta: Any = None
        # each a (bytes, digest) entry, or a decoding table's (bytes, digest, value)
        self.reg_e: tuple[Any, ...] = (b"", 0)
        self.zs_e: tuple[Any, ...] = self.reg_e
        self.pool_e: tuple[Any, ...] = self.reg_e
        self.h_e: tuple[Any, ...] = self.reg_e
        self.used_e: tuple[Any, ...] = self.reg_e
        self.meta_e: tuple[Any, ...] = self.reg_e
        self.fp: int | None = None  # None: nothing decoded yet


_LAST = _Last()

# A part's (bytes, digest) by the part's value. A step builds new objects (a successor's replaced replica,
# registry, pool, history, budget), whose values other states mostly had, so a table by value finds them where a
# memo by object would not (a new object is never in one); hashing a value costs less than converting and
# marshalling it. For a replica, registry, history and budget the key is the tuple of its field values (in
# declaration order: `evolve` keeps the dict's order); equal tuples are equal values, since each field holds values
# of one type (never 1 where it holds True, which compare equal). A pool is its own key; a metadata log is kept by
# its batches' ids (`_meta_entry`). Each table is emptied when it grows large.
_REPS: dict[tuple[Any, ...], tuple[bytes, int]] = {}
_REGS: dict[tuple[Any, ...], tuple[bytes, int]] = {}
_HISTS: dict[tuple[Any, ...], tuple[bytes, int]] = {}
_USED: dict[tuple[Any, ...], tuple[bytes, int]] = {}
_POOLS: dict[frozenset[Message], tuple[bytes, int]] = {}
_METAS: dict[tuple[int, ...], tuple[bytes, int]] = {}


def _converted(table: dict[Any, tuple[bytes, int]], key: Any, obj: Any, conv: Callable[[Any], Any], kind: bytes,
               limit: int) -> tuple[bytes, int]:
    """A part not in its table: converted (through `_MEMO`, emptied first if large), marshalled, digested, kept."""
    if len(_MEMO.d) >= _MEMO.LIMIT:
        _MEMO.d.clear()
    if len(table) >= limit:
        table.clear()
    data = marshal.dumps(conv(obj), 2)
    e = table[key] = (data, _part_digest(kind, data))
    return e


def _rep_entry(r: Replica) -> tuple[bytes, int]:
    key = tuple(r.__dict__.values())
    return _REPS.get(key) or _converted(_REPS, key, r, _rep, b"replica", 4 * _MEMO.LIMIT)


def _reg_entry(g: Registry) -> tuple[bytes, int]:
    key = tuple(g.__dict__.values())
    return _REGS.get(key) or _converted(_REGS, key, g, _reg, b"registry", _MEMO.LIMIT)


def _hist_entry(h: History) -> tuple[bytes, int]:
    key = tuple(h.__dict__.values())
    return _HISTS.get(key) or _converted(_HISTS, key, h, _hist, b"history", _MEMO.LIMIT)


def _used_entry(b: Budget) -> tuple[bytes, int]:
    key = tuple(b.__dict__.values())
    return _USED.get(key) or _converted(_USED, key, b, _budget, b"budget", _MEMO.LIMIT)


def _pool_entry(pool: frozenset[Message]) -> tuple[bytes, int]:
    return _POOLS.get(pool) or _converted(_POOLS, pool, pool, _pool, b"pool", _MEMO.LIMIT)


_NO_ZOMBIES = marshal.dumps((), 2)
_NO_ZOMBIES_E = (_NO_ZOMBIES, _part_digest(b"zombies", _NO_ZOMBIES))
_NO_META_E = (_NO_ZOMBIES, _part_digest(b"metadata", _NO_ZOMBIES))


def _zs_entry(zs: tuple[ZombieController, ...]) -> tuple[bytes, int]:
    if not zs:
        return _NO_ZOMBIES_E
    if len(_MEMO.d) >= _MEMO.LIMIT:
        _MEMO.d.clear()
    data = marshal.dumps(_zombies(zs), 2)
    return data, _part_digest(b"zombies", data)


_BATCHES: dict[int, tuple[MetadataRecord, bytes]] = {}  # id of a metadata batch -> (the batch, its bytes)
_TUPLE = b"("  # marshal's tuple code: a tuple is the code, its length (4 bytes, little-endian), then each item


def _meta_entry(log: tuple[MetadataRecord, ...]) -> tuple[bytes, int]:
    """The metadata log's part, `marshal.dumps(_meta(log), 2)`, put together from each batch's bytes (a tuple's
    marshalled form is its items' forms after a header), kept per batch object (`_BATCHES`), and the whole log's
    entry by the ids of its batches (`_METAS`): a step makes a new log tuple (a batch appended, a prefix trimmed)
    around batch objects other states share. An id names one object only while the object lives: `_BATCHES`
    holds every batch of every log in `_METAS`, and the two are emptied together."""
    if not log:
        return _NO_META_E
    key = tuple(map(id, log))
    got = _METAS.get(key)
    if got is not None:
        return got
    if len(_BATCHES) >= _MEMO.LIMIT or len(_METAS) >= _MEMO.LIMIT:
        _BATCHES.clear()
        _METAS.clear()
    get = _BATCHES.get
    batches = []
    for rec in log:
        e = get(id(rec))
        if e is None or e[0] is not rec:
            if len(_MEMO.d) >= _MEMO.LIMIT:
                _MEMO.d.clear()
            e = _BATCHES[id(rec)] = (rec, marshal.dumps((rec.kind, _MEMO.get(rec.image, _reg)), 2))
        batches.append(e[1])
    data = _TUPLE + len(log).to_bytes(4, "little") + b"".join(batches)
    got = _METAS[key] = (data, _part_digest(b"metadata", data))
    return got


def _state_parts(s: State) -> list[bytes]:
    """The bytes of each part of the state (each replica, the registry, the zombies, the pool, the history, the
    budget spent, the metadata log), each `marshal.dumps(part tuple, 2)` of its `state_tuple` component. A part
    that is the same object as in the state decoded last (`_Last`) is taken from there; any other from its table by
    value (`_rep_entry`, ...), converted only when no state had that value yet. The list is the one kept for the
    next call on the same state (`_JUST`): read it, do not change it."""
    if s is _JUST[0]:  # a new state: checked, then encoded
        return _JUST[1]
    last = _LAST
    reps = s.replicas
    if reps is last.reps:
        parts = [e[0] for e in last.rep_entries]
    else:
        old: tuple[Any, ...] = last.reps
        if len(old) != len(reps):
            old = (None,) * len(reps)
        entries = last.rep_entries
        parts = [(entries[i] if r is old[i] else _rep_entry(r))[0] for i, r in enumerate(reps)]
    reg, zs, pool, h, used, meta = s.registry, s.zombies, s.pool, s.history, s.used, s.metadata
    parts.append((last.reg_e if reg is last.reg else _reg_entry(reg))[0])
    parts.append((last.zs_e if zs is last.zs else _zs_entry(zs))[0])
    parts.append((last.pool_e if pool is last.pool else _pool_entry(pool))[0])
    parts.append((last.h_e if h is last.h else _hist_entry(h))[0])
    parts.append((last.used_e if used is last.used else _used_entry(used))[0])
    parts.append((last.meta_e if meta is last.meta else _meta_entry(meta))[0])
    _JUST[0], _JUST[1] = s, parts
    return parts


_JUST: list[Any] = [None, []]  # the state `_state_parts` answered last and its parts (states are immutable)


def _zombies(zs: tuple[ZombieController, ...]) -> tuple[Any, ...]:
    get = _MEMO.get
    return tuple((z.epoch, get(z.view, _reg)) for z in zs)


def encode_state(s: State) -> bytes:
    """The state's canonical bytes: a marshalled tuple of its parts' bytes (`_state_parts`). Marshal format 2
    writes equal values as equal bytes, so equal states give equal bytes."""
    return marshal.dumps(tuple(_state_parts(s)), 2)


def fingerprint_state(s: State) -> int:
    """The state's 64-bit fingerprint, `encoding_fingerprint(encode_state(s))`, without building the encoding: the
    XOR of its parts' digests, each blake2b (8 bytes) of the part's bytes personalised with its kind (`_KINDS`),
    mapped to 1 if 0. Equal states have equal parts, so equal fingerprints. Two different states differ in the
    bytes of some part; that part's digest enters the XOR of one state and not of the other (a replica's bytes
    hold its broker id, the other kinds have one part each, and digests of different kinds are independent), so
    the fingerprints are equal with probability 2^-64 over the digests (taken as random functions), and the
    search's collision estimate (n^2 / 2^65, a union bound over pairs) holds as it is.

    A successor of the state decoded last (`_Last`) shares most parts with it by identity: its fingerprint is the
    parent's with the digests of the replaced parts swapped (XOR is its own inverse), a table lookup by value for
    each replaced part and no hashing of bytes (the digests are kept with the bytes, computed once per distinct
    part)."""
    last = _LAST
    fp = last.fp
    reps = s.replicas
    if fp is None or len(reps) != len(last.reps):
        return _full_fingerprint(s)
    if reps is not last.reps:
        old, entries = last.reps, last.rep_entries
        for i, r in enumerate(reps):
            if r is not old[i]:
                fp ^= entries[i][1] ^ (_REPS.get(tuple(r.__dict__.values())) or _rep_entry(r))[1]
    reg, zs, pool, h, used, meta = s.registry, s.zombies, s.pool, s.history, s.used, s.metadata
    if reg is not last.reg:
        fp ^= last.reg_e[1] ^ _reg_entry(reg)[1]
    if zs is not last.zs:
        fp ^= last.zs_e[1] ^ _zs_entry(zs)[1]
    if pool is not last.pool:
        fp ^= last.pool_e[1] ^ (_POOLS.get(pool) or _pool_entry(pool))[1]
    if h is not last.h:
        fp ^= last.h_e[1] ^ (_HISTS.get(tuple(h.__dict__.values())) or _hist_entry(h))[1]
    if used is not last.used:
        fp ^= last.used_e[1] ^ _used_entry(used)[1]
    if meta is not last.meta:
        fp ^= last.meta_e[1] ^ _meta_entry(meta)[1]
    return fp or 1


def _full_fingerprint(s: State) -> int:
    fp = 0
    for r in s.replicas:
        fp ^= _rep_entry(r)[1]
    fp ^= (_reg_entry(s.registry)[1] ^ _zs_entry(s.zombies)[1] ^ _pool_entry(s.pool)[1] ^ _hist_entry(s.history)[1]
           ^ _used_entry(s.used)[1] ^ _meta_entry(s.metadata)[1])
    return fp or 1


def encoding_fingerprint(data: bytes) -> int:
    """The fingerprint of the state whose encoding is `data` (the definition `fingerprint_state` computes)."""
    return _digest(marshal.loads(data))


# Per part kind: part bytes -> (those bytes, the part's digest, the value they stand for), built once per distinct
# part; the first two are the part's entry, as in the tables by value above.
_DECODED_PARTS: dict[bytes, dict[bytes, tuple[bytes, int, Any]]] = {kind: {} for kind in _KINDS}


def _decoded(table: dict[bytes, tuple[bytes, int, Any]], data: bytes, build: Callable[[tuple[Any, ...]], Any],
             kind: bytes) -> tuple[bytes, int, Any]:
    """A part not in its decoding table: built (see `_cached`), digested, kept."""
    if len(table) >= 10_000:
        table.clear()
    got = table[data] = (data, _part_digest(kind, data), build(marshal.loads(data)))
    return got


def _unzombies(t: tuple[Any, ...]) -> tuple[ZombieController, ...]:
    return tuple(ZombieController(e, _cached(v, _unreg)) for e, v in t)


def _shared_reg(t: tuple[Any, ...]) -> Registry:
    """The registry for tuple `t`, the same object as the metadata images and zombie views equal to it (all built
    through `_cached`): `publish` then sees an unchanged registry by identity, without comparing its fields."""
    return _cached(t, _unreg)


_DEC_REPS, _DEC_REG, _DEC_ZS, _DEC_POOL, _DEC_HIST, _DEC_USED, _DEC_META = (_DECODED_PARTS[k] for k in _KINDS)


def decode_state(data: bytes) -> State:
    parts = marshal.loads(data)
    n = len(parts) - 6
    reps_t = _DEC_REPS
    reps = [reps_t.get(r) or _decoded(reps_t, r, _unrep, b"replica") for r in parts[:n]]
    b_reg, b_zs, b_pool, b_h, b_used, b_meta = parts[n:]
    reg = _DEC_REG.get(b_reg) or _decoded(_DEC_REG, b_reg, _shared_reg, b"registry")
    zs = _DEC_ZS.get(b_zs) or _decoded(_DEC_ZS, b_zs, _unzombies, b"zombies")
    pool = _DEC_POOL.get(b_pool) or _decoded(_DEC_POOL, b_pool, _unpool, b"pool")
    h = _DEC_HIST.get(b_h) or _decoded(_DEC_HIST, b_h, _unhist, b"history")
    used = _DEC_USED.get(b_used) or _decoded(_DEC_USED, b_used, _unbudget, b"budget")
    meta = _DEC_META.get(b_meta) or _decoded(_DEC_META, b_meta, _unmeta, b"metadata")
    s = _new(State)  # every field given: the dataclass's __init__ would set the same dict, field by field
    _setattr(s, "__dict__", {"replicas": tuple([r[2] for r in reps]), "registry": reg[2], "zombies": zs[2],
                             "pool": pool[2], "history": h[2], "used": used[2], "metadata": meta[2]})
    # The search steps the state it decodes: its successors find the parts they share with it here, by identity.
    last = _LAST
    last.reps, last.rep_entries = s.replicas, reps
    last.reg, last.zs, last.pool, last.h, last.used, last.meta = reg[2], zs[2], pool[2], h[2], used[2], meta[2]
    last.reg_e, last.zs_e, last.pool_e, last.h_e, last.used_e, last.meta_e = reg, zs, pool, h, used, meta
    fp = reg[1] ^ zs[1] ^ pool[1] ^ h[1] ^ used[1] ^ meta[1]
    for r in reps:
        fp ^= r[1]
    last.fp = fp
    return s


_new, _setattr = object.__new__, object.__setattr__


def _with_replicas(s: State, reps: tuple[Replica, ...]) -> State:
    """`s` with its replicas replaced (`evolve`, which `State.with_replica` uses)."""
    fields_ = s.__dict__.copy()
    fields_["replicas"] = reps
    new = _new(State)
    _setattr(new, "__dict__", fields_)
    return new


_action = tuple.__new__  # Action(kind, args) without its Python-level __new__ (a NamedTuple's is one)


# ---- broker renaming ------------------------------------------------------------------------------

def _ren_reg(t: tuple[Any, ...], p: tuple[int, ...]) -> tuple[Any, ...]:
    """A registry tuple with broker b renamed p[b] (p[0] unused; NO_LEADER stays)."""
    def one(b: int) -> int:
        return b if b == NO_LEADER else p[b]

    epochs = [0] * len(t[8])
    for b, e in enumerate(t[8], 1):
        epochs[p[b] - 1] = e
    return (t[0], one(t[1]), t[2], t[3], _s(p[b] for b in t[4]), _s(p[b] for b in t[5]), t[6],
            _s(p[b] for b in t[7]), tuple(epochs), tuple(p[b] for b in t[9]), _s(p[b] for b in t[10]),
            _s(p[b] for b in t[11]), one(t[12]), _s(p[b] for b in t[13]))


def _ren_rep(t: tuple[Any, ...], p: tuple[int, ...]) -> tuple[Any, ...]:
    leader = t[8] if t[8] == NO_LEADER else p[t[8]]
    return (p[t[0]], t[1], t[2], t[3], t[4], t[5], t[6], t[7], leader, t[9], t[10], _s(p[b] for b in t[11]),
            t[12], t[13], tuple(p[b] for b in t[14]), _s((p[b], v) for b, v in t[15]),
            _s((p[b], v) for b, v in t[16]), t[17], None if t[18] is None else _s(p[b] for b in t[18]), t[19],
            _ren_request(t[20], p), _ren_request(t[21], p), _s(p[b] for b in t[22]), t[23])


def _ren_request(key: tuple[Any, ...] | None, p: tuple[int, ...]) -> tuple[Any, ...] | None:
    """An AlterPartition's `request_key` (leader epoch, partition epoch, ISR, broker epochs) renamed."""
    if not key:
        return key
    return (key[0], key[1], _s(p[b] for b in key[2]), _s((p[b], e) for b, e in key[3]))


def _ren_msg(t: tuple[Any, ...], p: tuple[int, ...]) -> tuple[Any, ...]:
    code = t[0]
    if code == 0:  # LeaderAndIsr: to, controller epoch, leader, leader epoch, partition epoch, isr, replicas, epoch
        leader = t[3] if t[3] == NO_LEADER else p[t[3]]
        return (0, p[t[1]], t[2], leader, t[4], t[5], _s(p[b] for b in t[6]), tuple(p[b] for b in t[7]), *t[8:])
    if code in (1, 6):  # StopReplica (to, ...) / ControlledShutdown (frm, broker epoch)
        return (code, p[t[1]], *t[2:])
    if code in (2, 3):  # FetchRequest (frm, to, ...) / FetchResponse (to, frm, ...)
        return (code, p[t[1]], p[t[2]], *t[3:])
    if code == 4:  # AlterPartition: frm, leader epoch, partition epoch, isr, broker epochs
        return (4, p[t[1]], t[2], t[3], _s(p[b] for b in t[4]), _s((p[b], e) for b, e in t[5]))
    # AlterPartitionResponse: to, leader epoch, partition epoch, isr, error, the request it answers
    return (5, p[t[1]], t[2], t[3], _s(p[b] for b in t[4]), t[5], _ren_request(t[6], p))


def _ren_hist(t: tuple[Any, ...], p: tuple[int, ...]) -> tuple[Any, ...]:
    maxima = [0] * len(t[9])
    for b, e in enumerate(t[9], 1):
        maxima[p[b] - 1] = e
    completions = _s((tuple(p[b] for b in trs), _s(p[b] for b in isr), tuple(p[b] for b in rs),
                      _s(p[b] for b in ar), _s(p[b] for b in rr)) for trs, isr, rs, ar, rr in t[13])
    return (t[0], t[1], _s((p[lead], o, i) for lead, o, i in t[2]), t[3], t[4], t[5],
            _s((e, p[lead]) for e, lead in t[6]), t[7], t[8], tuple(maxima), t[10], _s(p[b] for b in t[11]),
            _s(p[b] for b in t[12]), completions, t[14], t[15], t[16], t[17])  # the clients' view: no broker ids


def rename_tuple(t: tuple[Any, ...], p: tuple[int, ...]) -> tuple[Any, ...]:
    """A state tuple with every broker b renamed p[b] (p is a permutation of 1..n, with p[0] = 0)."""
    reps = [None] * len(t[0])
    for r in t[0]:
        reps[p[r[0]] - 1] = _ren_rep(r, p)
    return (tuple(reps), _ren_reg(t[1], p), tuple((e, _ren_reg(v, p)) for e, v in t[2]),
            _s(_ren_msg(m, p) for m in t[3]), _ren_hist(t[4], p), t[5], tuple((k, _ren_reg(v, p)) for k, v in t[6]))


def rename_state(s: State, p: tuple[int, ...]) -> State:
    return state_from_tuple(rename_tuple(state_tuple(s), p))


def rename_action(a: Action, p: tuple[int, ...]) -> Action:
    """The action `a` with brokers renamed (for the commuting check in the tests)."""
    spec = KINDS[a.kind]
    args = []
    for name, v in zip(spec.params, a.args, strict=True):
        if name == "message":
            v = _unmsg(_ren_msg(_msg(v), p))
        elif name in ("broker", "follower", "leader") or (name == "target" and isinstance(v, int)):
            v = p[v]
        elif name == "target":
            v = tuple(p[b] for b in v)
        args.append(v)
    return Action(a.kind, tuple(args))


def audited_rules(protocol: Protocol) -> bool:
    """Every rule of `protocol` is one of model/replication's own functions (whose use of broker ids we read)."""
    own = {protocol_module.__name__, reassignment_module.__name__}
    for f in fields(Protocol):
        fn = getattr(protocol, f.name)
        if callable(fn) and getattr(inspect.unwrap(fn), "__module__", None) not in own:
            return False
    return True


def symmetry_note(protocol: Protocol, cfg: Config) -> str | None:
    """Why broker symmetry is off for this protocol and config, or None when it is used."""
    if cfg.reassignments or cfg.cancels:
        return "reassignment orders the replicas being removed by broker id"
    if not audited_rules(protocol):
        return "the protocol has rules kcheck has not audited for broker symmetry"
    if cfg.brokers < 2:
        return "one broker"
    return None


# ---- the fast successor function ----------------------------------------------------------------
# Per kind, a necessary condition for its function in model/replication/actions.py to apply, read off that
# function's own guards: only the state and the config, never a protocol rule (user rules may be anything).
# A False here means the function would return None; True means nothing (the function decides).

def _leads(r: Replica) -> bool:
    return r.alive and r.known and r.leader == r.id


def _pre_fetch(s: State, cfg: Config, follower: int) -> bool:
    r = s.replicas[follower - 1]
    if not r.alive or not r.known or r.needs_truncation or r.leader == NO_LEADER or r.leader == follower:
        return False
    # one fetch in flight per follower incarnation (a dead process's request may still be on its way)
    fetching = _listed(s.pool)[2]
    return (follower, r.broker_epoch) not in fetching and (follower, None) not in fetching


def _pre_fetch_round(s: State, cfg: Config, follower: int) -> bool:
    # fetch's guard, and handle_fetch's: the believed leader is a live broker
    if not _pre_fetch(s, cfg, follower):
        return False
    leader = s.replicas[follower - 1].leader
    return 1 <= leader <= len(s.replicas) and s.replicas[leader - 1].alive


def _pre_expand(s: State, cfg: Config, leader: int, follower: int) -> bool:
    r = s.replicas[leader - 1]
    return (_leads(r) and r.pending_isr is None and r.in_flight is None and follower not in r.isr
            and follower != leader and follower in r.replicas)


def _pre_shrink(s: State, cfg: Config, leader: int, follower: int) -> bool:
    r = s.replicas[leader - 1]
    return (_leads(r) and r.pending_isr is None and r.in_flight is None and follower in r.isr and follower != leader
            and s.used.isr_shrinks < cfg.isr_shrinks)


def _pre_crash(s: State, cfg: Config, broker: int, lossy: bool) -> bool:
    if not s.replicas[broker - 1].alive:
        return False
    return s.used.lossy_crashes < cfg.lossy_crashes if lossy else s.used.crashes < cfg.crashes


def _pre_fence(s: State, cfg: Config, broker: int) -> bool:
    if broker in s.registry.fenced:
        return False
    return not s.replicas[broker - 1].alive or s.used.fences < cfg.fences


def _pre_move_leader(s: State, cfg: Config, target: int) -> bool:
    reg = s.registry
    return target != reg.leader and reg.leader != NO_LEADER and s.used.elections < cfg.elections


def _pre_zombie_move(s: State, cfg: Config, zombie: int, target: int) -> bool:
    if zombie >= len(s.zombies) or s.used.elections >= cfg.elections:
        return False
    view = s.zombies[zombie].view
    return target != view.leader and target in view.isr


def _pre_consume(s: State, cfg: Config, broker: int, offset: int) -> bool:
    r = s.replicas[broker - 1]
    return (_leads(r) and offset < len(r.log) and s.used.reads < cfg.reads
            and (offset, r.log[offset].id) not in s.history.reads)


def _pre_alter_response(s: State, cfg: Config, m: AlterPartitionResponse) -> bool:
    r = s.replicas[m.to - 1]
    return r.alive and r.in_flight is not None and r.in_flight == m.request


def _pre_advance_hw(s: State, cfg: Config, broker: int) -> bool:
    r = s.replicas[broker - 1]
    return _leads(r) and len(r.log) > r.hw  # the new high watermark is bounded by the log end


def _pre_flush(s: State, cfg: Config, broker: int) -> bool:
    r = s.replicas[broker - 1]
    return r.alive and r.flushed != len(r.log)


def _pre_handle_fetch(s: State, cfg: Config, m: FetchRequest) -> bool:
    return 1 <= m.to <= len(s.replicas) and s.replicas[m.to - 1].alive


_PRE: dict[str, Callable[..., bool]] = {
    "produce": lambda s, cfg, broker, acks: _leads(s.replicas[broker - 1]) and s.used.records < cfg.records,
    "fetch": _pre_fetch,
    "handle_fetch": _pre_handle_fetch,
    "fetch_round": _pre_fetch_round,
    "truncate": lambda s, cfg, follower: s.replicas[follower - 1].alive and s.replicas[follower - 1].needs_truncation,
    "advance_hw": _pre_advance_hw,
    "expand_isr": _pre_expand,
    "shrink_isr": _pre_shrink,
    "handle_alter_partition_response": _pre_alter_response,
    "flush": _pre_flush,
    "crash": _pre_crash,
    "restart": lambda s, cfg, broker: not s.replicas[broker - 1].alive,
    "fence": _pre_fence,
    "unfence": lambda s, cfg, broker: broker in s.registry.fenced and s.replicas[broker - 1].alive,
    "controlled_shutdown": lambda s, cfg, broker: (s.replicas[broker - 1].alive
                                                   and broker not in s.registry.shutting_down
                                                   and broker not in s.registry.fenced),
    "complete_shutdown": lambda s, cfg, broker: (s.replicas[broker - 1].alive
                                                 and broker in s.registry.shutting_down),
    "elect": lambda s, cfg: s.registry.leader == NO_LEADER,
    "unclean_election": lambda s, cfg: (s.registry.leader == NO_LEADER
                                        and s.used.unclean_elections < cfg.unclean_elections),
    "move_leader": _pre_move_leader,
    "failover": lambda s, cfg: s.used.failovers < cfg.failovers,
    "zombie_move_leader": _pre_zombie_move,
    "consume": _pre_consume,
    "apply_metadata": lambda s, cfg, broker: (s.replicas[broker - 1].alive
                                              and s.replicas[broker - 1].applied + 1 < len(s.metadata)),
}


def _always_holds(s: State) -> None:
    return None


# Kinds whose candidates depend on the config only (model/replication/actions.py: brokers, acks, pairs, ()).
_STATIC = frozenset({"produce", "fetch", "fetch_round", "truncate", "advance_hw", "expand_isr", "shrink_isr", "flush",
                     "crash", "restart", "fence", "unfence", "elect", "move_leader", "failover", "apply_metadata",
                     "controlled_shutdown", "complete_shutdown", "unclean_election"})


def _gate_leader(s: State, cfg: Config, leader: int) -> bool:
    r = s.replicas[leader - 1]
    return _leads(r) and r.pending_isr is None and r.in_flight is None


# For static kinds with more than one argument: a condition on the first argument only (the rest: `_PRE`).
_GATE: dict[str, Callable[..., bool]] = {
    "produce": lambda s, cfg, broker: _leads(s.replicas[broker - 1]),
    "expand_isr": _gate_leader,
    "shrink_isr": _gate_leader,
    "crash": lambda s, cfg, broker: s.replicas[broker - 1].alive,
}
# Conditions on the state and config alone (budgets) that rule a whole kind out.
_KIND_GATE: dict[str, Callable[[State, Config], bool]] = {
    "produce": lambda s, cfg: s.used.records < cfg.records,
    "shrink_isr": lambda s, cfg: s.used.isr_shrinks < cfg.isr_shrinks,
    # a broker that asked may ask again (its request was lost) with the budget spent
    "controlled_shutdown": lambda s, cfg: (s.used.shutdowns < cfg.shutdowns
                                           or any(r.shutdown_asked for r in s.replicas)),
    "move_leader": lambda s, cfg: s.used.elections < cfg.elections and s.registry.leader != NO_LEADER,
}


# Config-only conditions under which a candidate never applies, whatever the state: its function spends a budget
# (`_spend`) the config sets to 0, which it refuses. The plan leaves such candidates out (their indexes kept).
_NEVER: dict[str, Callable[[Config, tuple[Any, ...]], bool]] = {
    "produce": lambda cfg, args: cfg.records == 0,
    "shrink_isr": lambda cfg, args: cfg.isr_shrinks == 0,
    "crash": lambda cfg, args: (cfg.lossy_crashes if args[1] else cfg.crashes) == 0,
    "move_leader": lambda cfg, args: cfg.elections == 0,
    "failover": lambda cfg, args: cfg.failovers == 0,
    "unclean_election": lambda cfg, args: cfg.unclean_elections == 0,
    "zombie_move_leader": lambda cfg, args: cfg.elections == 0,
    "consume": lambda cfg, args: cfg.reads == 0,
}


class _Normalized:
    """A state's settler (`actions.settler`) followed by the reduction's normal form, its drop path too."""

    __slots__ = ("settle", "norm", "dropped")

    def __init__(self, settle: Callable[[State], State], norm: Callable[[State], State]) -> None:
        self.settle, self.norm = settle, norm
        dropped = getattr(settle, "dropped", None)
        self.dropped = None if dropped is None else (lambda m: norm(dropped(m)))

    def __call__(self, s: State) -> State:
        return self.norm(self.settle(s))


# Message kinds whose step reads only the message and its recipient's replica and changes only that replica (and
# consumes the message unless kept): model/replication/actions.py's functions, read for it.
_RECIPIENT_ONLY = frozenset({handle_fetch_response, handle_leader_and_isr, handle_stop_replica})


_Listed = tuple[list[Message], dict[type, list[Message]], frozenset[tuple[int, int | None]]]
_LISTED: dict[frozenset[Message], _Listed] = {}


def _listed(pool: frozenset[Message]) -> _Listed:
    """`State.messages()` (the pool in its order), the same grouped by type, and the fetches in flight (a request
    from a follower incarnation or a response to a follower), kept per pool value: many states share a pool, and
    sorting messages compares dataclasses field by field. Read only."""
    got = _LISTED.get(pool)
    if got is None:
        msgs = sorted(pool, key=message_key)
        by_type: dict[type, list[Message]] = {}
        for m in msgs:
            by_type.setdefault(type(m), []).append(m)
        requests: list[Any] = by_type.get(FetchRequest, [])
        responses: list[Any] = by_type.get(FetchResponse, [])
        # (follower, broker epoch) of each fetch in flight; a response's epoch is None (it goes to the live one)
        fetching = frozenset([(m.frm, m.broker_epoch) for m in requests] + [(m.to, None) for m in responses])
        if len(_LISTED) >= _MEMO.LIMIT:
            _LISTED.clear()
        got = _LISTED[pool] = (msgs, by_type, fetching)
    return got


class ReplicationModel:
    """The replication model as a `kcheck.model.interface.Model` (see the module docstring)."""

    def __init__(self, protocol: Protocol, cfg: Config, only: set[str] | None = None, symmetry: bool = True,
                 reduce: bool = False) -> None:
        self.protocol, self.cfg = protocol, cfg
        self.name = f"replication({protocol.name})"
        self._kinds = [(k, spec) for k, spec in KINDS.items() if spec.possible(cfg)]
        self._keeps = (False, True) if cfg.duplicates else (False,)
        self._fast = self._plan()
        self._applied_by: dict[tuple[int, int, int], tuple[Replica, tuple[MetadataRecord, ...], Replica | None]] = {}
        self._moved: dict[tuple[int, int, int], tuple[Replica, History, Replica | None, History | None]] = {}
        self._answers: dict[tuple[int, int, int, int], tuple[Any, ...]] = {}
        self._received_by: dict[tuple[int, int], tuple[Any, Replica, Replica | None]] = {}
        # A subclass that changes actions() or step() (e.g. the liveness model) gets successors() from them.
        self._own_steps = type(self).actions is ReplicationModel.actions and type(self).step is ReplicationModel.step
        self._verdict: tuple[Callable[[State], str | None] | None, list[Callable[[State], str | None]],
                             list[State | None]] = (None, [], [None])
        checked = [(i, inv) for i, inv in REGISTRY.items()
                   if inv.applies_to == "replication" and (only is None or i in only)]
        self._invariants = self._shared_verdict([(i, inv.title, *self._fast_holds(inv)) for i, inv in checked])
        # The search's one call per new state (`first_violation`), for the invariants this class lists.
        self.first_violation = (self._first_violation if self._verdict[0] is not None
                                and type(self).invariants is ReplicationModel.invariants else None)
        # model/replication/reduction.py: quiet metadata batches and flushes taken at once (`reduce`, which
        # `kcheck exhaust --reduce` asks for), where its argument holds; `reduction_off` says why not.
        builtin = all(getattr(inv.check, "__module__", None) == replication_invariants.__name__ for _, inv in checked)
        self.reduction_off = "switched off" if not reduce else why_off(cfg, audited_rules(protocol), builtin)
        self._normal: Callable[[State], State] | None = (
            None if self.reduction_off else partial(normal, p=protocol, cfg=cfg))
        self.symmetry_off = None if symmetry else "switched off"
        if self.symmetry_off is None:
            self.symmetry_off = symmetry_note(protocol, cfg)
        # Only the brokers outside the initial replica set are renamed (see the module docstring).
        n, rf = cfg.brokers, cfg.rf
        if self.symmetry_off is None and n - rf < 2:
            self.symmetry_off = "every broker but at most one holds a replica, so no two brokers are interchangeable"
        spare = range(rf + 1, n + 1)
        self._perms: list[tuple[int, ...]] = [] if self.symmetry_off else [
            (0, *range(1, rf + 1), *q) for q in permutations(spare) if q != tuple(spare)]
        if type(self).encode is not ReplicationModel.encode:  # a subclass's own encoding: no fingerprint from parts
            self.fingerprint = self.fingerprints = None  # type: ignore[method-assign,assignment]
        else:
            self.fingerprint = fingerprint_state  # type: ignore[method-assign,assignment]  # one call less a step

    def _fast_holds(self, inv: Any) -> tuple[Callable[[State], str | None], Callable[[State, Config], bool] | None]:
        """(`_holds` for `inv`, cheap where it holds; its twin as a bool, or None). An invariant of
        invariants/replication.py that its config-only condition switches off never runs; one with a twin
        (`replication.FAST`) runs the twin, and its check only when the twin finds a violation (for the message).
        Any other invariant (a user's) runs as it is, and has no twin."""
        slow = partial(self._holds, inv)
        if getattr(inv.check, "__module__", None) != replication_invariants.__name__:
            return slow, None
        if inv.not_applicable in replication_invariants.CONFIG_ONLY:
            if inv.not_applicable(ReplicationSubject(initial_state(self.cfg), self.cfg)) is not None:
                return _always_holds, None
            return (slow, None) if inv.check not in replication_invariants.FAST else self._twin(inv, slow, None)
        void = replication_invariants.STATE_VOID.get(inv.not_applicable)
        if inv.check not in replication_invariants.FAST or (
                void is None and getattr(inv.not_applicable, "__module__", None) != registry.__name__):
            return slow, None  # a condition we do not know (the registry's default one says "applies")
        return self._twin(inv, slow, void)

    def _twin(self, inv: Any, slow: Callable[[State], str | None], void: Callable[[State, Config], bool] | None
              ) -> tuple[Callable[[State], str | None], Callable[[State, Config], bool]]:
        ok, cfg = replication_invariants.FAST[inv.check], self.cfg
        if void is None:
            return (lambda s: None if ok(s, cfg) else slow(s)), ok
        return (lambda s: None if void(s, cfg) or ok(s, cfg) else slow(s)), (lambda s, c: void(s, c) or ok(s, c))

    def _shared_verdict(self, rows: list[tuple[str, str, Callable[[State], str | None],
                                             Callable[[State, Config], bool] | None]]) -> list[StateInvariant[State]]:
        """The invariants, those with a twin sharing one verdict per state: the first of them runs every twin in one
        loop and, when all hold, remembers the state (by identity; states are immutable), so the others answer
        None for it at once. A state where some twin fails, or one the first has not seen, gets each invariant's
        own `holds`. A search asks the invariants of each new state in order, so it pays one loop and a test per
        invariant instead of a call chain per invariant."""
        twins = [ok for _, _, _, ok in rows if ok is not None]
        if len(twins) < 2:
            return [StateInvariant(i, title, holds) for i, title, holds, _ in rows]
        cfg = self.cfg
        last: list[State | None] = [None]
        # The twins read the replicas, registry, history, metadata log (and the budget, zombies), never the pool
        # of messages (tests/test_replication_model.py checks it on reachable states): a state whose other parts
        # have the bytes of a state where every twin held gets the same verdicts. Most new states differ from
        # one already checked only in the messages in flight.
        passed: dict[tuple[bytes, ...], None] = {}

        def first(own: Callable[[State], str | None]) -> Callable[[State], str | None]:
            def holds(s: State) -> str | None:
                if s is last[0]:
                    return None
                parts = _state_parts(s)
                i = len(s.replicas) + _POOL_PART
                key = (*parts[:i], b"", *parts[i + 1:])
                if key not in passed:
                    for ok in twins:
                        if not ok(s, cfg):
                            return own(s)
                    if len(passed) >= 50_000:
                        passed.clear()
                    passed[key] = None
                last[0] = s
                return None
            return holds

        def other(own: Callable[[State], str | None]) -> Callable[[State], str | None]:
            return lambda s: None if s is last[0] else own(s)

        out, lead = [], True
        lead_holds: Callable[[State], str | None] | None = None
        rest: list[Callable[[State], str | None]] = []  # the invariants outside the shared verdict that can fail
        for i, title, holds, ok in rows:
            if ok is not None:
                holds, lead = (first(holds) if lead else other(holds)), False
                lead_holds = lead_holds or holds
            elif holds is not _always_holds:
                rest.append(holds)
            out.append(StateInvariant(i, title, holds))
        self._verdict = (lead_holds, rest, last)
        return out

    def _first_violation(self, s: State) -> tuple[str, str] | None:
        """(id, message) of the first invariant in `invariants()` order that `s` breaks, or None: what asking each
        in turn gives. When the shared verdict holds (every twin held: the first of them remembers `s`), the other
        invariants sharing it hold too and those switched off always hold, so only the rest are asked; any
        violation is found by asking each in turn."""
        lead_holds, rest, last = self._verdict
        if lead_holds is not None and lead_holds(s) is None and last[0] is s:
            for holds in rest:
                if holds(s) is not None:
                    break
            else:
                return None
        for inv in self._invariants:
            why = inv.holds(s)
            if why is not None:
                return inv.id, why
        return None

    def _holds(self, inv: Any, s: State) -> str | None:
        subject = ReplicationSubject(s, self.cfg)
        if inv.not_applicable(subject) is not None:
            return None
        for v in inv.check(subject):
            if str(v.severity) == "hard":
                return v.message
        return None

    def initial_states(self) -> list[State]:
        s = initial_state(self.cfg)
        return [s if self._normal is None else self._normal(s)]

    def actions(self, state: State) -> list[Action]:
        out = []
        for kind, spec in self._kinds:
            for args in spec.candidates(state, self.cfg):
                out.append(Action(kind, tuple(args)))
        return out

    def step(self, state: State, action: Action) -> State | None:
        nxt = apply(state, self.protocol, self.cfg, action)
        return nxt if nxt is None or self._normal is None else self._normal(nxt)

    def explicit(self, state: State, action: Action) -> tuple[Action, ...]:
        """`action` and the steps the reduction took after it (none without one): `step(state, action)` as a run of
        the model itself, which `actions.apply` replays (a trace file holds these)."""
        nxt = apply(state, self.protocol, self.cfg, action)
        if nxt is None or self._normal is None:
            return (action,)
        return (action, *normalize(nxt, self.protocol, self.cfg)[1])

    def _plan(self) -> list[tuple[Callable[..., int], tuple[Any, ...]]]:
        """How `successors` enumerates each kind the config allows (see there): per kind, the method that lists its
        successors and what it needs. Candidates `_NEVER` rules out under the config are left out, their action
        indexes kept: a static kind's by the count of the entry before it (or a "skip" entry), consume's and a
        generic kind's by counting them in the state."""
        plan: list[tuple[Any, ...]] = []
        for kind, spec in self._kinds:
            never = _NEVER.get(kind)
            mtype = getattr(spec.candidates, "message_type", None)  # a message kind's: the message's type
            if kind == "drop":
                plan.append(("_drops", kind, spec.fn))
            elif mtype is not None:
                how = ("_fetches" if spec.fn is handle_fetch else "_received" if spec.fn in _RECIPIENT_ONLY
                       else "_deliveries")
                plan.append((how, kind, spec.fn, mtype, _PRE.get(kind)))
            elif kind in _STATIC:
                self._plan_static(plan, kind, spec, never)
            elif kind == "consume":
                never_any = never is not None and never(self.cfg, ())
                plan.append(("_skip_logs", kind, None) if never_any else ("_consumes", kind, spec.fn, _PRE[kind]))
            elif never is not None and never(self.cfg, ()):
                plan.append(("_skip_generic", kind, None, spec.candidates))
            else:  # every candidate, as actions() lists them
                plan.append(("_generic", kind, spec.fn, spec.candidates, _PRE.get(kind)))
        return [(getattr(self, entry[0]), entry) for entry in plan]

    def _plan_static(self, plan: list[tuple[Any, ...]], kind: str, spec: Any,
                     never: Callable[[Config, tuple[Any, ...]], bool] | None) -> None:
        """`_plan`'s entry for a kind whose candidates depend on the config only: listed once, grouped by their first
        argument (a broker), the gates each group and candidate pass in a state; "_skip" when none can apply."""
        cfg = self.cfg
        groups: dict[Any, list[tuple[int, tuple[Any, ...], Action]]] = {}
        count = 0
        for pos, args in enumerate(spec.candidates(initial_state(cfg), cfg)):
            count += 1
            if never is None or not never(cfg, tuple(args)):
                groups.setdefault(args[0] if args else None, []).append((pos, tuple(args), Action(kind, tuple(args))))
        if not groups:
            if plan and plan[-1][0] in ("_static", "_units", "_skip"):  # the entry before counts them
                plan[-1] = (*plan[-1][:3], plan[-1][3] + count, *plan[-1][4:])
            else:
                plan.append(("_skip", "", None, count))
            return
        gate: Callable[..., bool] | None = _GATE.get(kind)
        pre: Callable[..., bool] | None = _PRE[kind]
        if gate is None:  # the kind's condition reads its first argument only: it is the gate
            gate, pre = pre, None
        kgate = _KIND_GATE.get(kind)
        if (pre is None and kgate is None and None not in groups
                and all(len(c) == 1 and len(c[0][1]) == 1 for c in groups.values())):
            # one candidate per broker, one argument: a flat list, the gate its only condition
            units = [(first, c[0][0], c[0][2]) for first, c in groups.items()]
            how = "_applied" if spec.fn is apply_metadata else "_advanced_hw" if spec.fn is advance_hw else "_units"
            plan.append((how, kind, spec.fn, count, units, gate))
        else:
            plan.append(("_static", kind, spec.fn, count, list(groups.items()), gate, pre, kgate))

    def successors(self, state: State) -> list[tuple[int, Action, State]]:
        """(index in `actions(state)`, action, `step(state, action)`) for every action that applies, in one pass.

        The same list `step` gives over `actions` (tests/test_replication_model.py compares them on every
        reachable state of several configurations), computed without building or stepping the candidates a
        cheap guard rules out: each kind's `_PRE` test (and `_GATE`, `_KIND_GATE`) is a condition its function in
        model/replication/actions.py checks itself, from the state and the config only (never a protocol rule),
        so a candidate that fails it is one `apply` would answer None. The candidates that pass go straight to
        the kind's function and then `settler`, which is what `apply` does once it has checked that the kind is
        possible under the config and the message is in the pool (both true here by construction). Kinds whose
        candidates depend only on the config (`_STATIC`) have them listed once, grouped by their first argument
        (a broker); the pool is sorted once per pool value (`_listed`) instead of once per message kind. Each kind
        is listed by the method its `_plan` entry names, from action index `i` on, returning the index after."""
        if not self._own_steps:
            return [(i, a, t) for i, a in enumerate(self.actions(state)) if (t := self.step(state, a)) is not None]
        out: list[tuple[int, Action, State]] = []
        append = out.append
        done: Callable[[State], State] = settler(state, self.protocol, self.cfg)
        if self._normal is not None:
            done = _Normalized(done, self._normal)
        i = 0
        for listing, entry in self._fast:
            i = listing(state, entry, i, append, done)
        return out

    # ---- successors, one plan entry each: (state, the entry, action index, append, settle) -> the index after ----

    def _units(self, state: State, entry: tuple[Any, ...], i: int, append: Callable[[Any], None],
               done: Callable[[State], State]) -> int:
        """A static kind with one candidate per broker, its gate the only condition."""
        _, _, fn, count, units, gate = entry
        p, cfg = self.protocol, self.cfg
        for first, pos, action in units:
            if gate(state, cfg, first):
                nxt = fn(state, p, cfg, first)
                if nxt is not None:
                    append((i + pos, action, done(nxt)))
        return i + count

    def _applied(self, state: State, entry: tuple[Any, ...], i: int, append: Callable[[Any], None],
                 done: Callable[[State], State]) -> int:
        """`apply_metadata` reads the broker's replica and the metadata log and changes that replica only: its
        replica is kept per (broker, replica, log) object (decoded states share them; the entry holds both, so their
        ids name them while it lives), the step's state rebuilt around it."""
        _, _, fn, count, units, gate = entry
        p, cfg, applied, reps, meta = self.protocol, self.cfg, self._applied_by, state.replicas, state.metadata
        for first, pos, action in units:
            if gate(state, cfg, first):
                r = reps[first - 1]
                got = applied.get((first, id(r), id(meta)))
                if got is None:
                    nxt = fn(state, p, cfg, first)
                    if len(applied) >= _MEMO.LIMIT:
                        applied.clear()
                    got = applied[(first, id(r), id(meta))] = (
                        r, meta, None if nxt is None else nxt.replicas[first - 1])
                if got[2] is not None:
                    changed = list(reps)
                    changed[first - 1] = got[2]
                    append((i + pos, action, done(_with_replicas(state, tuple(changed)))))
        return i + count

    def _advanced_hw(self, state: State, entry: tuple[Any, ...], i: int, append: Callable[[Any], None],
                     done: Callable[[State], State]) -> int:
        """`advance_hw` reads the broker's replica and the history and changes those two only: both kept per
        (broker, replica, history) object, as `_applied`."""
        _, _, fn, count, units, gate = entry
        p, cfg, moved, reps, h = self.protocol, self.cfg, self._moved, state.replicas, state.history
        for first, pos, action in units:
            if gate(state, cfg, first):
                r = reps[first - 1]
                hw = moved.get((first, id(r), id(h)))
                if hw is None:
                    nxt = fn(state, p, cfg, first)
                    if len(moved) >= _MEMO.LIMIT:
                        moved.clear()
                    hw = moved[(first, id(r), id(h))] = (
                        r, h, None if nxt is None else nxt.replicas[first - 1], None if nxt is None else nxt.history)
                if hw[2] is not None:
                    changed = list(reps)
                    changed[first - 1] = hw[2]
                    fields_ = state.__dict__.copy()
                    fields_["replicas"], fields_["history"] = tuple(changed), hw[3]
                    nxt = _new(State)
                    _setattr(nxt, "__dict__", fields_)
                    append((i + pos, action, done(nxt)))
        return i + count

    def _static(self, state: State, entry: tuple[Any, ...], i: int, append: Callable[[Any], None],
                done: Callable[[State], State]) -> int:
        """A static kind's candidates, by group: the kind's gate (`_KIND_GATE`), the group's (its first argument),
        then each candidate's own condition (`_PRE`)."""
        _, _, fn, count, groups, gate, pre, kgate = entry
        p, cfg = self.protocol, self.cfg
        if kgate is None or kgate(state, cfg):
            for first, cands in groups:
                if (gate(state, cfg, first) if first is not None else gate(state, cfg)):
                    for pos, args, action in cands:
                        if pre is None or pre(state, cfg, *args):
                            nxt = fn(state, p, cfg, *args)
                            if nxt is not None:
                                append((i + pos, action, done(nxt)))
        return i + count

    def _drops(self, state: State, entry: tuple[Any, ...], i: int, append: Callable[[Any], None],
               done: Callable[[State], State]) -> int:
        """Every message in the pool dropped; from a settled parent, `actions.drop` and its settling are one step."""
        _, kind, fn = entry
        msgs = _listed(state.pool)[0]
        dropped = getattr(done, "dropped", None) if fn is drop else None
        if dropped is not None:
            for m in msgs:
                append((i, _action(Action, (kind, (m,))), dropped(m)))
                i += 1
            return i
        p, cfg = self.protocol, self.cfg
        for m in msgs:
            nxt = fn(state, p, cfg, m)
            if nxt is not None:
                append((i, _action(Action, (kind, (m,))), done(nxt)))
            i += 1
        return i

    def _deliveries(self, state: State, entry: tuple[Any, ...], i: int, append: Callable[[Any], None],
                    done: Callable[[State], State]) -> int:
        """A message kind's deliveries (each kept too when the config duplicates), stepped by its function."""
        _, kind, fn, mtype, pre = entry
        p, cfg = self.protocol, self.cfg
        msgs: Sequence[Any] = _listed(state.pool)[1].get(mtype, ())
        for m in msgs:
            ok = pre is None or pre(state, cfg, m)
            for keep in self._keeps:
                if ok:
                    nxt = fn(state, p, cfg, m, keep)
                    if nxt is not None:
                        append((i, _action(Action, (kind, (m, keep))), done(nxt)))
                i += 1
        return i

    def _consumes(self, state: State, entry: tuple[Any, ...], i: int, append: Callable[[Any], None],
                  done: Callable[[State], State]) -> int:
        """A consumer's read of each offset of each leader's log, while the read budget lasts."""
        _, kind, fn, pre = entry
        p, cfg = self.protocol, self.cfg
        spend = state.used.reads < cfg.reads
        for b, r in enumerate(state.replicas, 1):
            n = len(r.log)
            if spend and n and _leads(r):
                for o in range(n):
                    if pre(state, cfg, b, o):
                        nxt = fn(state, p, cfg, b, o)
                        if nxt is not None:
                            append((i + o, _action(Action, (kind, (b, o))), done(nxt)))
            i += n
        return i

    def _generic(self, state: State, entry: tuple[Any, ...], i: int, append: Callable[[Any], None],
                 done: Callable[[State], State]) -> int:
        """Every candidate as `actions()` lists it, each with its `_PRE` test."""
        _, kind, fn, candidates, pre = entry
        p, cfg = self.protocol, self.cfg
        for args in candidates(state, cfg):
            if pre is None or pre(state, cfg, *args):
                nxt = fn(state, p, cfg, *args)
                if nxt is not None:
                    append((i, _action(Action, (kind, tuple(args))), done(nxt)))
            i += 1
        return i

    def _skip(self, state: State, entry: tuple[Any, ...], i: int, append: Callable[[Any], None],
              done: Callable[[State], State]) -> int:
        """Static candidates that never apply under the config: only counted."""
        return i + entry[3]

    def _skip_logs(self, state: State, entry: tuple[Any, ...], i: int, append: Callable[[Any], None],
                   done: Callable[[State], State]) -> int:
        """Consume's candidates when the config allows no read: one per offset of every log, only counted."""
        for r in state.replicas:
            i += len(r.log)
        return i

    def _skip_generic(self, state: State, entry: tuple[Any, ...], i: int, append: Callable[[Any], None],
                      done: Callable[[State], State]) -> int:
        """A kind's candidates that never apply under the config: only counted."""
        for _ in entry[3](state, self.cfg):
            i += 1
        return i

    def _fetches(self, state: State, entry: tuple[Any, ...], i: int, append: Callable[[Any], None],
                 done: Callable[[State], State]) -> int:
        """handle_fetch's deliveries. The leader's answer (its replica after the fetch, the messages it sends) is a
        function of the request, the leader's replica, the fetcher's (its leader epoch answers a request without
        one) and the leader's metadata image (an ISR expansion right after the fetch reads fencing and broker
        epochs there): kept per those objects (decoded states share them; the entry holds them, so their ids name
        them while it lives), the step's state rebuilt around it (the request consumed unless kept, the messages
        sent, the leader's replica replaced)."""
        _, kind, fn, mtype, pre = entry
        p, cfg, answers, reps = self.protocol, self.cfg, self._answers, state.replicas
        n = len(reps)
        msgs: Sequence[Any] = _listed(state.pool)[1].get(mtype, ())
        for m in msgs:
            ok = pre is None or pre(state, cfg, m)
            for keep in self._keeps:
                if ok:
                    leader = reps[m.to - 1]
                    follower = reps[m.frm - 1] if 1 <= m.frm <= n else None
                    seen = state.metadata[leader.applied].image if state.metadata else state.registry
                    key = (id(m), id(leader), id(follower), id(seen))
                    got = answers.get(key)
                    if got is None:
                        nxt = fn(state, p, cfg, m, keep)
                        if nxt is None:
                            got = (m, leader, follower, seen, None, None)
                        else:
                            sent, after = nxt.pool - state.pool, nxt.replicas[m.to - 1]
                            proposed = after.in_flight is not None and leader.in_flight is None
                            if len(sent) != 1 + proposed:
                                # a message it sends was in the pool already: nothing to keep
                                append((i, _action(Action, (kind, (m, keep))), done(nxt)))
                                i += 1
                                continue
                            got = (m, leader, follower, seen, after, sent)
                        if len(answers) >= _MEMO.LIMIT:
                            answers.clear()
                        answers[key] = got
                    if got[4] is not None:
                        pool = state.pool if keep else state.pool - {m}
                        fields_ = state.__dict__.copy()
                        fields_["pool"] = pool | got[5]
                        if got[4] is not leader:
                            changed = list(reps)
                            changed[m.to - 1] = got[4]
                            fields_["replicas"] = tuple(changed)
                        nxt = _new(State)
                        _setattr(nxt, "__dict__", fields_)
                        append((i, _action(Action, (kind, (m, keep))), done(nxt)))
                i += 1
        return i

    def _received(self, state: State, entry: tuple[Any, ...], i: int, append: Callable[[Any], None],
                  done: Callable[[State], State]) -> int:
        """The deliveries of a kind in `_RECIPIENT_ONLY`. Such a step reads the message and its recipient's replica,
        and changes that replica and nothing else but the message consumed (unless kept): the recipient's replica
        after it is kept per (message, replica) object (as `_fetches`), the step's state rebuilt around it."""
        _, kind, fn, mtype, pre = entry
        p, cfg, kept, reps = self.protocol, self.cfg, self._received_by, state.replicas
        n = len(reps)
        msgs: Sequence[Any] = _listed(state.pool)[1].get(mtype, ())
        for m in msgs:
            ok = pre is None or pre(state, cfg, m)
            for keep in self._keeps:
                if ok:
                    if not 1 <= m.to <= n:  # not a broker: the function decides, nothing kept
                        nxt = fn(state, p, cfg, m, keep)
                        if nxt is not None:
                            append((i, _action(Action, (kind, (m, keep))), done(nxt)))
                        i += 1
                        continue
                    r = reps[m.to - 1]
                    got = kept.get((id(m), id(r)))
                    if got is None:
                        nxt = fn(state, p, cfg, m, keep)
                        if len(kept) >= _MEMO.LIMIT:
                            kept.clear()
                        got = kept[(id(m), id(r))] = (m, r, None if nxt is None else nxt.replicas[m.to - 1])
                    if got[2] is not None:
                        fields_ = state.__dict__.copy()
                        if not keep:
                            fields_["pool"] = state.pool - {m}
                        if got[2] is not r:
                            changed = list(reps)
                            changed[m.to - 1] = got[2]
                            fields_["replicas"] = tuple(changed)
                        nxt = _new(State)
                        _setattr(nxt, "__dict__", fields_)
                        append((i, _action(Action, (kind, (m, keep))), done(nxt)))
                i += 1
        return i

    def invariants(self) -> Sequence[StateInvariant[State]]:
        return self._invariants

    def encode(self, state: State) -> bytes:
        return encode_state(state)

    def decode(self, data: bytes) -> State:
        return decode_state(data)

    def fingerprint(self, state: State) -> int:
        """`encoding_fingerprint(self.encode(state))`, computed from the cached parts (the engine's fast key)."""
        return fingerprint_state(state)

    def fingerprints(self, state: State) -> list[int]:
        """The fingerprints of the state and of its images under every listed symmetry (`symmetries()`)."""
        if not self._perms:
            return [fingerprint_state(state)]
        t = state_tuple(state)
        return [fingerprint_state(state)] + [_digest(_tuple_parts(rename_tuple(t, p))) for p in self._perms]

    def encodings(self, state: State) -> list[bytes]:
        """The encodings of the state and of its images under every listed symmetry (one tuple built once)."""
        t = state_tuple(state)
        return [encode_state(state)] + [marshal.dumps(_tuple_parts(rename_tuple(t, p)), 2) for p in self._perms]

    def symmetries(self) -> Sequence[Callable[[State], State]]:
        return [partial(rename_state, p=p) for p in self._perms]

    def describe(self, action: Action) -> str:
        return action.label()

    def kind(self, action: Action) -> str:
        return action.kind
