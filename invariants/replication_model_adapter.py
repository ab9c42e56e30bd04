"""The replication model (model/replication) behind the one model interface (`kcheck.model.interface.Model`).

`ReplicationModel(protocol, cfg)` gives the engines of `kcheck.model.search` what `replication_explore` has
built in: one initial state (`actions.initial_state`), every candidate action of every kind the config allows,
in `actions.KINDS` order (exactly `actions.successors`' enumeration; `step` is `actions.apply`, None when its
guard is false), and one `StateInvariant` per registered replication invariant (`check_replication`'s hard
ones; an invariant holds where its `not_applicable` says it does not apply, as `InvariantTally` counts it).

Encoding: a state becomes nested tuples of ints, bools, None and strings (every frozenset as a sorted tuple,
the message pool sorted, each Record as its (id, epoch) pair) serialised with `marshal` format 2, which writes
the same bytes for equal values (no back-references, unlike formats 3 and 4). Equal states therefore give equal
bytes, and `decode` inverts it, so the search keeps its frontier as bytes.

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
from itertools import permutations
from typing import Any

from kcheck.invariants.registry import REGISTRY
from kcheck.invariants.replication import ReplicationSubject
from kcheck.model.interface import StateInvariant
from kcheck.model.replication import protocol as protocol_module
from kcheck.model.replication import reassignment as reassignment_module
from kcheck.model.replication.actions import KINDS, Action, Config, apply, initial_state
from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import (
    NO_LEADER,
    AlterPartition,
    AlterPartitionResponse,
    Budget,
    FetchRequest,
    FetchResponse,
    History,
    LeaderAndIsr,
    Message,
    Record,
    Registry,
    Replica,
    State,
    StopReplica,
    ZombieController,
)

_MSG_CODE: dict[type, int] = {LeaderAndIsr: 0, StopReplica: 1, FetchRequest: 2, FetchResponse: 3, AlterPartition: 4,
                              AlterPartitionResponse: 5}
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
            _s(g.fenced), g.broker_epochs, g.replicas, g.adding, g.removing, g.last_known_leader)


def _unreg(t: tuple[Any, ...]) -> Registry:
    return Registry(t[0], t[1], t[2], t[3], frozenset(t[4]), frozenset(t[5]), t[6], frozenset(t[7]), t[8], t[9],
                    t[10], t[11], t[12])


def _rep(r: Replica) -> tuple[Any, ...]:
    return (r.id, r.alive, r.broker_epoch, r.clean_shutdown, _log(r.log), r.flushed, r.hw, r.known, r.leader,
            r.leader_epoch, r.partition_epoch, _s(r.isr), r.controller_epoch, r.needs_truncation, r.replicas,
            r.follower_leo, r.follower_broker_epoch, r.epoch_start,
            None if r.pending_isr is None else _s(r.pending_isr))


def _unrep(t: tuple[Any, ...]) -> Replica:
    return Replica(t[0], t[1], t[2], t[3], _unlog(t[4]), t[5], t[6], t[7], t[8], t[9], t[10], frozenset(t[11]),
                   t[12], t[13], t[14], t[15], t[16], t[17], None if t[18] is None else frozenset(t[18]))


def _msg(m: Message) -> tuple[Any, ...]:
    if isinstance(m, FetchResponse):
        return (3, m.to, m.frm, m.offset, m.follower_epoch, _log(m.records), m.hw, m.error)
    return (_MSG_CODE[type(m)], *(getattr(m, f) for f in m.__dataclass_fields__))


def _unmsg(t: tuple[Any, ...]) -> Message:
    code = t[0]
    if code == 3:
        return FetchResponse(t[1], t[2], t[3], t[4], _unlog(t[5]), t[6], t[7])
    cls = (LeaderAndIsr, StopReplica, FetchRequest, FetchResponse, AlterPartition, AlterPartitionResponse)[code]
    return cls(*t[1:])


def _unhist(t: tuple[Any, ...]) -> History:
    return History(frozenset(t[0]), frozenset(t[1]), frozenset(t[2]), frozenset(t[3]), t[4], frozenset(t[5]),
                   frozenset(t[6]), t[7], t[8], t[9], t[10], frozenset(t[11]), frozenset(t[12]), frozenset(t[13]))


class _Memo:
    """Sub-encodings by object identity: a successor shares most of its replicas, registry, message objects and
    history sets with its parent (`evolve` copies only what changed), so each is converted once. Entries hold
    their object, so an id is never reused while it is cached; the memo is emptied when it grows large."""

    LIMIT = 20_000

    def __init__(self) -> None:
        self.d: dict[int, tuple[Any, Any]] = {}

    def get(self, obj: Any, conv: Callable[[Any], Any]) -> Any:
        hit = self.d.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        if len(self.d) >= self.LIMIT:
            self.d.clear()
        value = conv(obj)
        self.d[id(obj)] = (obj, value)
        return value


_MEMO = _Memo()


def state_tuple(s: State) -> tuple[Any, ...]:
    """The canonical nested-tuple form of a state (equal states, equal tuples)."""
    get = _MEMO.get
    h = s.history
    hist = (get(h.acked, _s), get(h.acked_leader_only, _s), get(h.pending_acks, _s), get(h.committed, _s),
            h.true_hw, get(h.reads, _s), get(h.epoch_leaders, _s), h.max_leader_epoch, h.max_written_by,
            h.max_broker_epochs, h.lossy_crashes, get(h.reassign_origin, _s), get(h.reassign_seen, _s),
            get(h.completions, _s))
    return (tuple(get(r, _rep) for r in s.replicas), get(s.registry, _reg),
            tuple((z.epoch, get(z.view, _reg)) for z in s.zombies), get(s.pool, _pool), hist,
            get(s.used, _budget))


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
                 _cached(t[3], _unpool), _cached(t[4], _unhist), _cached(t[5], _unbudget))


def _unpool(t: tuple[Any, ...]) -> frozenset[Message]:
    return frozenset(_cached(m, _unmsg) for m in t)


def _unbudget(t: tuple[Any, ...]) -> Budget:
    return Budget(*t)


def encode_state(s: State) -> bytes:
    return marshal.dumps(state_tuple(s), 2)


def decode_state(data: bytes) -> State:
    return state_from_tuple(marshal.loads(data))


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
            _s(p[b] for b in t[11]), one(t[12]))


def _ren_rep(t: tuple[Any, ...], p: tuple[int, ...]) -> tuple[Any, ...]:
    leader = t[8] if t[8] == NO_LEADER else p[t[8]]
    return (p[t[0]], t[1], t[2], t[3], t[4], t[5], t[6], t[7], leader, t[9], t[10], _s(p[b] for b in t[11]),
            t[12], t[13], tuple(p[b] for b in t[14]), _s((p[b], v) for b, v in t[15]),
            _s((p[b], v) for b, v in t[16]), t[17], None if t[18] is None else _s(p[b] for b in t[18]))


def _ren_msg(t: tuple[Any, ...], p: tuple[int, ...]) -> tuple[Any, ...]:
    code = t[0]
    if code == 0:  # LeaderAndIsr: to, controller epoch, leader, leader epoch, partition epoch, isr, replicas
        leader = t[3] if t[3] == NO_LEADER else p[t[3]]
        return (0, p[t[1]], t[2], leader, t[4], t[5], _s(p[b] for b in t[6]), tuple(p[b] for b in t[7]))
    if code == 1:  # StopReplica: to, ...
        return (1, p[t[1]], *t[2:])
    if code in (2, 3):  # FetchRequest (frm, to, ...) / FetchResponse (to, frm, ...)
        return (code, p[t[1]], p[t[2]], *t[3:])
    if code == 4:  # AlterPartition: frm, leader epoch, partition epoch, isr, broker epochs
        return (4, p[t[1]], t[2], t[3], _s(p[b] for b in t[4]), _s((p[b], e) for b, e in t[5]))
    return (5, p[t[1]], t[2], t[3], _s(p[b] for b in t[4]), t[5])  # AlterPartitionResponse: to, ..., isr, error


def _ren_hist(t: tuple[Any, ...], p: tuple[int, ...]) -> tuple[Any, ...]:
    maxima = [0] * len(t[9])
    for b, e in enumerate(t[9], 1):
        maxima[p[b] - 1] = e
    completions = _s((tuple(p[b] for b in trs), _s(p[b] for b in isr), tuple(p[b] for b in rs),
                      _s(p[b] for b in ar), _s(p[b] for b in rr)) for trs, isr, rs, ar, rr in t[13])
    return (t[0], t[1], _s((p[lead], o, i) for lead, o, i in t[2]), t[3], t[4], t[5],
            _s((e, p[lead]) for e, lead in t[6]), t[7], t[8], tuple(maxima), t[10], _s(p[b] for b in t[11]),
            _s(p[b] for b in t[12]), completions)


def rename_tuple(t: tuple[Any, ...], p: tuple[int, ...]) -> tuple[Any, ...]:
    """A state tuple with every broker b renamed p[b] (p is a permutation of 1..n, with p[0] = 0)."""
    reps = [None] * len(t[0])
    for r in t[0]:
        reps[p[r[0]] - 1] = _ren_rep(r, p)
    return (tuple(reps), _ren_reg(t[1], p), tuple((e, _ren_reg(v, p)) for e, v in t[2]),
            _s(_ren_msg(m, p) for m in t[3]), _ren_hist(t[4], p), t[5])


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


class ReplicationModel:
    """The replication model as a `kcheck.model.interface.Model` (see the module docstring)."""

    def __init__(self, protocol: Protocol, cfg: Config, only: set[str] | None = None, symmetry: bool = True) -> None:
        self.protocol, self.cfg = protocol, cfg
        self.name = f"replication({protocol.name})"
        self._kinds = [(k, spec) for k, spec in KINDS.items() if spec.possible(cfg)]
        self._invariants = [StateInvariant(i, inv.title, partial(self._holds, inv))
                            for i, inv in REGISTRY.items()
                            if inv.applies_to == "replication" and (only is None or i in only)]
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

    def _holds(self, inv: Any, s: State) -> str | None:
        subject = ReplicationSubject(s, self.cfg)
        if inv.not_applicable(subject) is not None:
            return None
        for v in inv.check(subject):
            if str(v.severity) == "hard":
                return v.message
        return None

    def initial_states(self) -> list[State]:
        return [initial_state(self.cfg)]

    def actions(self, state: State) -> list[Action]:
        out = []
        for kind, spec in self._kinds:
            for args in spec.candidates(state, self.cfg):
                out.append(Action(kind, tuple(args)))
        return out

    def step(self, state: State, action: Action) -> State | None:
        return apply(state, self.protocol, self.cfg, action)

    def successors(self, state: State) -> list[tuple[int, Action, State]]:
        out = []
        for i, a in enumerate(self.actions(state)):
            nxt = apply(state, self.protocol, self.cfg, a)
            if nxt is not None:
                out.append((i, a, nxt))
        return out

    def invariants(self) -> Sequence[StateInvariant[State]]:
        return self._invariants

    def encode(self, state: State) -> bytes:
        return encode_state(state)

    def decode(self, data: bytes) -> State:
        return decode_state(data)

    def encodings(self, state: State) -> list[bytes]:
        """The encodings of the state and of its images under every listed symmetry (one tuple built once)."""
        t = state_tuple(state)
        return [marshal.dumps(t, 2)] + [marshal.dumps(rename_tuple(t, p), 2) for p in self._perms]

    def symmetries(self) -> Sequence[Callable[[State], State]]:
        return [partial(rename_state, p=p) for p in self._perms]

    def describe(self, action: Action) -> str:
        return action.label()

    def kind(self, action: Action) -> str:
        return action.kind
