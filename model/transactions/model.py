"""The transactions model's transition system (`TransactionsSystem`; `kcheck.invariants.transactions_model.
TransactionsModel` adds the invariants and binds Kafka's code).

Kafka's code is reached through `KafkaCode`, a port the invariants layer fills with the bit-exact references
(`kcheck.reference.txn_metadata.TxnMetadata` for the coordinator's transitions, `kcheck.reference.transaction_index.
TxnLog` for each partition's producer state, markers and last stable offset): the model part imports no reference
(ARCHITECTURE.md's layering), and no transition or producer-state check is re-read here. What is here is what
`TransactionCoordinator.scala`, `TransactionMarkerRequestCompletionHandler.scala`, `AddPartitionsToTxnManager` and
the client's `TransactionManager` do around that code, each step atomic:

- `init i`: instance i's InitProducerId (`handleInitProducerId`): from Empty or a completed transaction the epoch is
  bumped (`prepareIncrementProducerEpoch`) and the instance gets it, fencing every older instance; from Ongoing the
  coordinator fences the epoch and aborts (`prepareFenceProducerEpoch`, then `endTransaction(ABORT)`) and the
  client retries later (CONCURRENT_TRANSACTIONS); during PrepareCommit/PrepareAbort it retries later;
- `write i p`: instance i writes one record to partition p (beginning a transaction when it has none): with TV1
  after AddPartitionsToTxn (`handleAddPartitionsToTransaction`), with TV2 directly; the produce goes into the bag;
- `timeout i p`: the client stops waiting for its produce to p (request.timeout.ms): the request stays in flight and
  the transaction can only abort;
- `commit i` / `abort i`: EndTxn (`endTransaction`): PrepareCommit/PrepareAbort written, a marker per partition of
  the transaction into the bag (`TransactionMarkerChannelManager.addTxnMarkersToSend`); with TV2 the client takes
  the bumped epoch from the answer;
- `deliver k` / `deliver-lost k`: the bag's k-th message reaches its partition (a produce: the leader's
  verification or AddPartitionsToTxn, then `UnifiedLog.append`'s producer-state checks; a marker:
  `appendEndTxnMarker`) and, unless lost, its answer reaches the sender (for a marker the coordinator's completion
  handler: remove the partition, write CompleteCommit/CompleteAbort after the last one, or stop sending on
  INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED); a lost answer leaves the message to be retried;
- `duplicate k`: the k-th message is copied (both copies are delivered, in any order);
- `txn-timeout`: `abortTimedOutTransactions` fences the epoch and aborts an Ongoing transaction;
- `failover`: a new coordinator epoch loads the transactional id's last `__transaction_state` record and, in
  PrepareCommit/PrepareAbort, sends its markers again; markers of the old epoch stay in flight.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields, is_dataclass, replace
from typing import Any, Protocol

from kcheck.model.interface import StateInvariant
from kcheck.model.rule_set import Variant
from kcheck.model.transactions.rules import Rules
from kcheck.model.transactions.state import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    EMPTY,
    NO_EPOCH,
    NO_PRODUCER_ID,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    STATE_NAMES,
    TIMEOUT_MS,
    Config,
    Meta,
    Msg,
    Part,
    State,
    Tag,
    initial_state,
)

Action = tuple[Any, ...]
PREPARED = (PREPARE_COMMIT, PREPARE_ABORT)
ENDED = (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)
FENCING = frozenset({"InvalidProducerEpochException", "PRODUCER_FENCED", "INVALID_PRODUCER_ID_MAPPING"})


class KafkaCode(Protocol):
    """Kafka's code behind the model's steps (filled by `kcheck.invariants.transactions_model`)."""

    def metadata(self, meta: Meta) -> Any:
        """A live TransactionMetadata (TxnMetadata) holding `meta`."""
        ...

    def frozen_metadata(self, live: Any) -> Meta: ...

    def record(self, transit: Any) -> Meta:
        """The `__transaction_state` record a transit is."""
        ...

    def partition(self, part: Part) -> Any:
        """A live partition log (TxnLog) holding `part`."""
        ...

    def frozen_partition(self, live: Any, before: Part, commit: bool) -> Part:
        """`live` frozen; `commit` says what a control batch appended since `before` is."""
        ...


def _with(t: tuple[Any, ...], i: int, v: Any) -> tuple[Any, ...]:
    return t[:i] + (v,) + t[i + 1:]


def _flag(s: State, invariant: str, message: str) -> State:
    return replace(s, history=replace(s.history, flags=s.history.flags | {(invariant, message)}))


def _bag(msgs: Sequence[Msg]) -> tuple[Msg, ...]:
    return tuple(sorted(msgs, key=repr))


def tag_text(tag: Tag | None) -> str:
    return "-" if tag is None else f"p{tag[0]}.t{tag[1]}"


class TransactionsSystem:
    """The transition system over `State` (see the module docstring)."""

    def __init__(self, kafka: KafkaCode, cfg: Config | None = None, rules: Rules | None = None) -> None:
        self.kafka = kafka
        self.cfg = cfg or Config()
        self.rules = rules or Rules.current()
        self.tv = self.rules.transaction_version()
        self.verify = self.rules.verification(self.tv)
        self.name = f"transactions[{self.rules.name}]"
        self._last: tuple[State, dict[Action, State | None]] | None = None

    @classmethod
    def for_variant(cls, kafka: KafkaCode, v: Variant[Rules], **overrides: Any) -> TransactionsSystem:
        return cls(kafka, Config(**{**dict(v.settings), **overrides}), v.rules)

    # ---- the coordinator --------------------------------------------------------------------------------------

    def _write(self, s: State, live: Any, transit: Any, owner: Tag | None = None) -> State:
        """The transit appended to __transaction_state, then `completeTransitionTo` (the model's append never
        fails)."""
        record = self.kafka.record(transit)
        live.complete_transition_to(transit)
        c = s.coordinator
        c = replace(c, meta=self.kafka.frozen_metadata(live), record=record, owner=owner or c.owner)
        return replace(s, coordinator=c)

    def _fence(self, s: State) -> State:
        """Every initialised instance older than the coordinator's epoch is fenced (history only)."""
        e = s.coordinator.meta.epoch
        out = {i for i, p in enumerate(s.producers) if p.phase != "new" and p.epoch < e}
        return replace(s, history=replace(s.history, fenced=s.history.fenced | out))

    def _markers(self, s: State, commit: bool) -> State:
        """After PrepareCommit/PrepareAbort: a marker per partition of the transaction, or, with none, the
        completion at once (`TransactionMarkerChannelManager.addTxnMarkersToSend`)."""
        c = s.coordinator
        m = c.meta
        if not m.partitions:
            return self._complete(s)
        tag = c.owner or (-1, 0)
        new = [Msg("marker", p, m.producer_id, m.epoch, tag, commit=commit, coordinator_epoch=c.epoch, tv=m.tv)
               for p in sorted(m.partitions)]
        return replace(s, bag=_bag(s.bag + tuple(new)))

    def _complete(self, s: State) -> State:
        live = self.kafka.metadata(s.coordinator.meta)
        return self._write(s, live, live.prepare_complete(0))

    def _end(self, s: State, commit: bool) -> State:
        """`endTransaction` from Ongoing (or a TV2 abort from a completed state): PrepareCommit/PrepareAbort."""
        live = self.kafka.metadata(s.coordinator.meta)
        empty = s.coordinator.meta.state in ENDED  # TV2's abort with no partition added starts the transaction now
        s = self._write(s, live, live.prepare_abort_or_commit(PREPARE_COMMIT if commit else PREPARE_ABORT, self.tv,
                                                              NO_PRODUCER_ID, 0, empty))
        h, owner = s.history, s.coordinator.owner
        if owner is not None:
            h = replace(h, committed=h.committed | {owner}) if commit else replace(h, aborted=h.aborted | {owner})
        return self._markers(replace(s, history=h), commit)

    def _fence_and_abort(self, s: State) -> State:
        """`prepareFenceProducerEpoch`, then `endTransaction(ABORT, isFromClient = false)`, which clears the fence's
        pending state and takes its epoch before `prepareAbortOrCommit` (TransactionCoordinator.scala)."""
        live = self.kafka.metadata(s.coordinator.meta)
        fence = live.prepare_fence_producer_epoch()
        live.pending = None
        live.epoch, live.last_epoch = fence.epoch, fence.last_epoch
        s = replace(s, coordinator=replace(s.coordinator, meta=self.kafka.frozen_metadata(live)))
        return self._fence(self._end(s, False))

    # ---- the client's requests --------------------------------------------------------------------------------

    def init(self, s: State, i: int) -> State | None:
        p = s.producers[i]
        if p.phase != "new" or (i > 0 and s.producers[i - 1].phase == "new"):
            return None
        m = s.coordinator.meta
        if m.state in PREPARED:
            return None  # CONCURRENT_TRANSACTIONS: the client retries later
        if m.state == ONGOING:
            return self._fence_and_abort(s)  # the client gets CONCURRENT_TRANSACTIONS and retries later
        live = self.kafka.metadata(m)
        s = self._fence(self._write(s, live, live.prepare_increment_producer_epoch(TIMEOUT_MS, None, 0)))
        m = s.coordinator.meta
        mine = replace(p, pid=m.producer_id, epoch=m.epoch, phase="ready", seqs=(0,) * self.cfg.partitions)
        return replace(s, producers=_with(s.producers, i, mine))

    def _fenced(self, s: State, i: int) -> State:
        return replace(s, producers=_with(s.producers, i, replace(s.producers[i], phase="fenced")))

    def _add_partition(self, s: State, p: int, pid: int, epoch: int, tag: Tag) -> State | str | None:
        """`handleAddPartitionsToTransaction`: the state after, an error name, or None (CONCURRENT_TRANSACTIONS)."""
        m = s.coordinator.meta
        if m.producer_id != pid:
            return "INVALID_PRODUCER_ID_MAPPING"
        if m.epoch != epoch:
            return "PRODUCER_FENCED"
        if m.state in PREPARED:
            return None
        if m.state == ONGOING and p in m.partitions:
            return s
        live = self.kafka.metadata(m)
        return self._write(s, live, live.prepare_add_partitions({p}, 0, self.tv),
                           owner=tag if m.state in ENDED else None)

    def write(self, s: State, i: int, p: int) -> State | None:
        prod = s.producers[i]
        if prod.phase == "ready" and prod.txn < self.cfg.txns:
            prod = replace(prod, phase="txn", txn=prod.txn + 1)
        if prod.phase != "txn" or p in prod.written:
            return None
        tag = (i, prod.txn)
        if self.tv < 2 and p not in prod.added:
            added = self._add_partition(s, p, prod.pid, prod.epoch, tag)
            if added is None:
                return None
            if isinstance(added, str):
                return self._fenced(s, i)
            s, prod = added, replace(prod, added=prod.added | {p})
        msg = Msg("produce", p, prod.pid, prod.epoch, tag, seq=prod.seqs[p])
        prod = replace(prod, seqs=_with(prod.seqs, p, prod.seqs[p] + 1), written=prod.written | {p},
                       waiting=prod.waiting | {p})
        return replace(s, producers=_with(s.producers, i, prod), bag=_bag(s.bag + (msg,)))

    def timeout(self, s: State, i: int, p: int) -> State | None:
        prod = s.producers[i]
        if p not in prod.waiting or s.used.client_timeouts >= self.cfg.client_timeouts:
            return None
        prod = replace(prod, waiting=prod.waiting - {p}, phase="abortable" if prod.phase == "txn" else prod.phase)
        return replace(s, producers=_with(s.producers, i, prod),
                       used=replace(s.used, client_timeouts=s.used.client_timeouts + 1))

    def end(self, s: State, i: int, commit: bool) -> State | None:
        prod = s.producers[i]
        if prod.waiting or prod.phase not in (("txn",) if commit else ("txn", "abortable")):
            return None
        done = replace(prod, phase="ready", added=frozenset(), written=frozenset())
        if not prod.written:  # nothing sent: the client ends it alone (TransactionManager, no EndTxn)
            return replace(s, producers=_with(s.producers, i, done))
        m = s.coordinator.meta
        if m.producer_id != prod.pid or m.epoch != prod.epoch:
            return self._fenced(s, i)
        if m.state in PREPARED:
            return None
        if m.state == ONGOING:
            s = self._end(s, commit)
        elif not commit and self.tv >= 2:  # KIP-890: a TV2 abort from a completed state bumps the epoch
            s = replace(s, coordinator=replace(s.coordinator, owner=(i, prod.txn)))
            s = self._end(s, False)
        else:
            return None
        if self.tv >= 2:  # EndTxn's answer carries the bumped epoch; every partition starts again at 0
            done = replace(done, epoch=s.coordinator.meta.epoch, seqs=(0,) * self.cfg.partitions)
        return replace(s, producers=_with(s.producers, i, done))

    # ---- the partitions -------------------------------------------------------------------------------------

    def _admit(self, s: State, m: Msg) -> State | str | None:
        """What the leader asks the coordinator before appending: TV2 adds the partition, TV1 with verification
        verifies it (`handleVerifyPartitionsInTransaction`), TV1 without appends unasked."""
        if self.tv >= 2:
            return self._add_partition(s, m.partition, m.producer_id, m.epoch, m.tag)
        if not self.verify:
            return s
        meta = s.coordinator.meta
        if meta.producer_id != m.producer_id:
            return "INVALID_PRODUCER_ID_MAPPING"
        if meta.epoch != m.epoch:
            return "PRODUCER_FENCED"
        if meta.state in PREPARED:
            return None
        return s if m.partition in meta.partitions else "TRANSACTION_ABORTABLE"

    def _produce(self, s: State, m: Msg) -> tuple[State, str] | None:
        admitted = self._admit(s, m)
        if admitted is None:
            return None
        if isinstance(admitted, str):
            return s, admitted
        s = admitted
        before = s.parts[m.partition]
        live = self.kafka.partition(before)
        verdict = live.append_data(m.producer_id, m.epoch, m.seq, 1, True, 0)
        if verdict[0] == "E":
            return s, str(verdict[1])
        if verdict[0] == "A":
            live.update_high_watermark(live.log_end)
            h = s.history
            tags = _with(h.tags, m.partition, h.tags[m.partition] + (m.tag,))
            s = replace(s, parts=_with(s.parts, m.partition, self.kafka.frozen_partition(live, before, False)),
                        history=replace(h, tags=tags))
            if m.tag[0] in h.fenced:
                s = _flag(s, "txn.fenced-writes-nothing", f"partition {m.partition} appended {tag_text(m.tag)}'s "
                          f"write (epoch {m.epoch}) after instance {m.tag[0]} was fenced")
        return s, "NONE"

    def _answer_produce(self, s: State, m: Msg, error: str) -> State:
        i, txn = m.tag
        prod = s.producers[i]
        if prod.txn != txn or m.partition not in prod.waiting or prod.epoch != m.epoch:
            return s  # an answer the client no longer waits for
        prod = replace(prod, waiting=prod.waiting - {m.partition})
        if error in FENCING:
            prod = replace(prod, phase="fenced")
        elif error != "NONE" and prod.phase == "txn":
            prod = replace(prod, phase="abortable")
        return replace(s, producers=_with(s.producers, i, prod))

    def _marker(self, s: State, m: Msg) -> tuple[State, str]:
        before = s.parts[m.partition]
        entry = next((e for e in before.entries if e.producer_id == m.producer_id), None)
        if entry is not None and self.rules.retried_marker(m.tv, m.epoch, entry.epoch,
                                                           entry.txn_first_offset is not None):
            return s, "InvalidProducerEpochException"
        live = self.kafka.partition(before)
        verdict = live.append_marker(m.producer_id, m.epoch, m.coordinator_epoch, m.tv, 0, m.commit)
        if verdict[0] == "E":
            return s, str(verdict[1])
        live.update_high_watermark(live.log_end)
        after = self.kafka.frozen_partition(live, before, m.commit)
        h = s.history
        s = replace(s, parts=_with(s.parts, m.partition, after),
                    history=replace(h, tags=_with(h.tags, m.partition, h.tags[m.partition] + (None,))))
        return self._check_ended(s, m, before, after), "NONE"

    def _check_ended(self, s: State, m: Msg, before: Part, after: Part) -> State:
        """Flag a marker that ended a transaction whose writes are not all of the transaction it was sent for."""
        ended = [first for first, pid in before.ongoing if pid == m.producer_id and (first, pid) not in after.ongoing]
        tags = s.history.tags[m.partition]
        for first in ended:
            for off in range(first, before.log_end):
                b = before.batches[off]
                if b.producer_id == m.producer_id and b.marker is None and tags[off] != m.tag:
                    return _flag(s, "txn.marker-own", f"the {'commit' if m.commit else 'abort'} marker of "
                                 f"{tag_text(m.tag)} ended partition {m.partition}'s transaction holding "
                                 f"{tag_text(tags[off])}'s write at offset {off}")
        return s

    def _answer_marker(self, s: State, m: Msg, error: str) -> State:
        """TransactionMarkerRequestCompletionHandler."""
        c = s.coordinator
        meta = c.meta
        if m.coordinator_epoch != c.epoch:
            return s  # the coordinator epoch changed: the new coordinator sends its own
        want = PREPARE_COMMIT if m.commit else PREPARE_ABORT
        if meta.state != want or meta.producer_id != m.producer_id or meta.epoch != m.epoch:
            return s  # the transaction is no longer pending: nothing to remove
        if error == "NONE":
            if m.partition not in meta.partitions:
                return s
            live = self.kafka.metadata(meta)
            live.remove_partition(m.partition)
            s = replace(s, coordinator=replace(c, meta=self.kafka.frozen_metadata(live)))
            return self._complete(s) if not live.partitions else s
        # INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED: removeMarkersForTxn, stop sending
        keep = [x for x in s.bag if not (x.kind == "marker" and x.producer_id == m.producer_id and x.epoch == m.epoch
                                         and x.coordinator_epoch == c.epoch)]
        return replace(s, bag=_bag(keep))

    def deliver(self, s: State, k: int, lost: bool) -> State | None:
        if k >= len(s.bag):
            return None
        if lost and s.used.duplicates >= self.cfg.duplicates:
            return None
        m = s.bag[k]
        rest = s.bag if lost else s.bag[:k] + s.bag[k + 1:]
        if m.kind == "produce":
            done = self._produce(s, m)
            if done is None:
                return None  # CONCURRENT_TRANSACTIONS: the request waits (retried by the leader/client)
            s, error = done
        else:
            s, error = self._marker(s, m)
        s = replace(s, bag=rest)
        if lost:
            return replace(s, used=replace(s.used, duplicates=s.used.duplicates + 1))
        return self._answer_produce(s, m, error) if m.kind == "produce" else self._answer_marker(s, m, error)

    # ---- faults -------------------------------------------------------------------------------------------------

    def duplicate(self, s: State, k: int) -> State | None:
        if k >= len(s.bag) or s.used.duplicates >= self.cfg.duplicates:
            return None
        return replace(s, bag=_bag(s.bag + (s.bag[k],)), used=replace(s.used, duplicates=s.used.duplicates + 1))

    def txn_timeout(self, s: State) -> State | None:
        if s.coordinator.meta.state != ONGOING or s.used.txn_timeouts >= self.cfg.txn_timeouts:
            return None
        return self._fence_and_abort(replace(s, used=replace(s.used, txn_timeouts=s.used.txn_timeouts + 1)))

    def failover(self, s: State) -> State | None:
        if s.used.failovers >= self.cfg.failovers:
            return None
        c = s.coordinator
        meta = c.record or Meta()
        s = replace(s, coordinator=replace(c, meta=meta, epoch=c.epoch + 1),
                    used=replace(s.used, failovers=s.used.failovers + 1))
        if meta.state in PREPARED:  # loadTransactionsForTxnTopicPartition: the markers are sent again
            s = self._markers(s, meta.state == PREPARE_COMMIT)
        return s

    # ---- the transition system ----------------------------------------------------------------------------------

    def initial_states(self) -> list[State]:
        return [initial_state(self.cfg)]

    def actions(self, s: State) -> list[Action]:
        out: list[Action] = []
        parts = range(self.cfg.partitions)
        for i in range(self.cfg.instances):
            out += [("init", i)] + [("write", i, p) for p in parts] + [("timeout", i, p) for p in parts]
            out += [("commit", i), ("abort", i)]
        out += [("deliver", k) for k in range(len(s.bag))] + [("deliver-lost", k) for k in range(len(s.bag))]
        out += [("duplicate", k) for k in range(len(s.bag))] + [("txn-timeout",), ("failover",)]
        done = {a: self._apply(s, a) for a in out}
        self._last = (s, done)  # the engines step each action next: computed once
        return [a for a, t in done.items() if t is not None]

    def step(self, s: State, a: Action) -> State | None:
        last = self._last
        if last is not None and last[0] is s and a in last[1]:
            return last[1][a]
        return self._apply(s, a)

    def _apply(self, s: State, a: Action) -> State | None:
        kind = a[0]
        if kind == "init":
            return self.init(s, a[1])
        if kind == "write":
            return self.write(s, a[1], a[2])
        if kind == "timeout":
            return self.timeout(s, a[1], a[2])
        if kind in ("commit", "abort"):
            return self.end(s, a[1], kind == "commit")
        if kind in ("deliver", "deliver-lost"):
            return self.deliver(s, a[1], kind == "deliver-lost")
        if kind == "duplicate":
            return self.duplicate(s, a[1])
        if kind == "txn-timeout":
            return self.txn_timeout(s)
        if kind == "failover":
            return self.failover(s)
        raise ValueError(f"unknown action {a!r}")

    def encode(self, s: State) -> bytes:
        return _text(s).encode()

    def symmetries(self) -> list[Callable[[State], State]]:
        return []  # the instances are ordered (the second fences the first), the partitions named by the writes

    def describe(self, a: Action) -> str:
        return " ".join(str(x) for x in a)

    def fair(self, a: Action) -> bool:
        """Deliveries are progress (liveness); the clients' requests and the faults are not."""
        return a[0] == "deliver"

    def invariants(self) -> Sequence[StateInvariant[State]]:
        return []


def describe_msg(m: Msg) -> str:
    if m.kind == "produce":
        return f"produce {tag_text(m.tag)} -> partition {m.partition} (epoch {m.epoch}, seq {m.seq})"
    return (f"{'COMMIT' if m.commit else 'ABORT'} marker {tag_text(m.tag)} -> partition {m.partition} (epoch "
            f"{m.epoch}, coordinator epoch {m.coordinator_epoch})")


def state_line(s: State) -> str:
    """One line for a trace table: the coordinator, the producers, the logs and the bag."""
    c = s.coordinator
    prods = ", ".join(f"i{i}:{p.phase}@{p.epoch}" for i, p in enumerate(s.producers))
    logs = " | ".join(" ".join(("C" if b.commit else "A") if b.marker is not None else tag_text(s.history.tags[n][o])
                               for o, b in enumerate(part.batches)) or "empty" for n, part in enumerate(s.parts))
    return (f"coordinator {STATE_NAMES[c.meta.state]} epoch {c.meta.epoch} (coordinator epoch {c.epoch}); {prods}; "
            f"logs {logs}; in flight {len(s.bag)}")


_FIELDS: dict[type, tuple[str, ...]] = {}
_PLAIN = (int, str, bool, type(None))
_MEMO: dict[int, tuple[Any, str]] = {}


def _canon(x: Any) -> Any:
    """Plain, ordered values for the encoding: dataclasses as the text of their fields (`_text`), sets sorted."""
    t = type(x)
    if t in _PLAIN:
        return x
    if t is tuple:
        return tuple([_canon(v) for v in x])
    if t is frozenset:
        return tuple(sorted([_canon(v) for v in x], key=repr))
    return _text(x)


def _text(obj: Any) -> str:
    """A dataclass's fields as text, kept per object while it lives in the memo: a successor shares most of its
    parts with its parent (the entry holds the object, so its id names it)."""
    got = _MEMO.get(id(obj))
    if got is not None and got[0] is obj:
        return got[1]
    names = _FIELDS.get(type(obj))
    if names is None:
        assert is_dataclass(obj), obj
        names = _FIELDS[type(obj)] = tuple(f.name for f in fields(obj))
    text = repr(tuple([_canon(getattr(obj, n)) for n in names]))
    if len(_MEMO) >= 400_000:
        _MEMO.clear()
    _MEMO[id(obj)] = (obj, text)
    return text


__all__ = ["NO_EPOCH", "KafkaCode", "TransactionsSystem", "describe_msg", "state_line", "tag_text"]
