"""The transactions model's transition system (`TransactionsSystem`; `kcheck.invariants.transactions_model.
TransactionsModel` adds the invariants and binds Kafka's code).

Kafka's code is reached through `KafkaCode`, a port the invariants layer fills with the bit-exact references
(`kcheck.reference.txn_metadata.TxnMetadata` for the coordinator's transitions, `kcheck.reference.transaction_index.
TxnLog` for each partition's producer state, markers and last stable offset): the model part imports no reference
(ARCHITECTURE.md's layering), and no transition or producer-state check is re-read here. What is here is what
`TransactionCoordinator.scala`, `TransactionMarkerRequestCompletionHandler.scala`, `AddPartitionsToTxnManager` and
the client's `TransactionManager` do around that code. A coordinator transition is Kafka's two steps: the request
prepares the transit (its pending state set), `append` writes it to `__transaction_state` (or fails: the pending
state cleared, the request refused), and only then `completeTransitionTo` and the request's callback run; a request
meanwhile gets CONCURRENT_TRANSACTIONS and waits. The steps:

- `init i`: instance i's InitProducerId into the bag; at the coordinator (`handleInitProducerId`, the verdict
  `init_producer_id`): from Empty or a completed transaction the epoch is bumped (`prepareIncrementProducerEpoch`),
  fencing every older instance, and the answer, once the record is written, carries it to the client; from Ongoing
  the coordinator fences the epoch and aborts (`prepareFenceProducerEpoch`, then `endTransaction(ABORT)`) and the
  client sends it again (CONCURRENT_TRANSACTIONS); during PrepareCommit/PrepareAbort it waits; an instance whose
  abort followed an abortable error bumps its epoch this way, expecting its current one (KIP-360, the rule
  `client_epoch_bump`);
- `write i p`: instance i writes one record to partition p (beginning a transaction when it has none): with TV1
  its AddPartitionsToTxn goes into the bag (the produce follows its answer), with TV2 the produce directly;
- `timeout i p`: the client stops waiting for its produce to p (request.timeout.ms): the request stays in flight and
  the transaction can only abort;
- `commit i` / `abort i`: EndTxn into the bag; at the coordinator (`endTransactionWithTV1` / TV2's
  `endTransaction`: `end_txn_tv1`, `end_txn_tv2`) answered at once or PrepareCommit/PrepareAbort written, a marker
  per partition of the transaction into the bag (`TransactionMarkerChannelManager.addTxnMarkersToSend`) and the
  answer into the bag; with TV2 the client takes the bumped epoch from it;
- `deliver k` / `deliver-lost k`: the bag's k-th message arrives (a produce at its leader: unless a transaction of
  its producer is open there at its epoch, the verification entry is made and the coordinator asked, in flight; that
  request at the coordinator: TV2 adds the partition, TV1 verifies it, the answer in flight; the answer at the
  leader: `UnifiedLog.append`'s verification guard and producer-state checks; a marker: `appendEndTxnMarker`; the
  client's InitProducerId, EndTxn or AddPartitionsToTxn at the coordinator, their answers at the client) and,
  unless lost, its answer reaches the sender (for a marker the coordinator's completion
  handler: remove the partition, write CompleteCommit/CompleteAbort after the last one, or stop sending on
  INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED); a lost answer leaves the message to be retried (a
  verification's lost answer fails the produce, AddPartitionsToTxnManager's NETWORK_EXCEPTION, and the client's
  produce is sent again);
- `duplicate k`: the k-th message (a request: produce, marker, InitProducerId, EndTxn, AddPartitionsToTxn, a
  leader's verification) is copied (both copies are delivered, in any order);
- `txn-timeout`: `abortTimedOutTransactions` fences the epoch and aborts an Ongoing transaction;
- `failover`: a new coordinator epoch loads the transactional id's last `__transaction_state` record and, in
  PrepareCommit/PrepareAbort, sends its markers again; markers of the old epoch stay in flight, an append in flight
  is lost (its requester refused);
- `append` / `append-fail`: the coordinator's append to `__transaction_state` answered, written or failed.
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
    Config,
    Meta,
    Msg,
    Part,
    Producer,
    State,
    Tag,
    initial_state,
)

Action = tuple[Any, ...]
PREPARED = (PREPARE_COMMIT, PREPARE_ABORT)
ENDED = (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)
# what a client or the coordinator sends again (a copy, a retry after a lost answer)
RESENT = ("produce", "marker", "end", "add", "init", "verify")
FENCING = frozenset({"InvalidProducerEpochException", "PRODUCER_FENCED", "INVALID_PRODUCER_ID_MAPPING"})
PREPARE = "PREPARE"  # EndTxn's verdict: the transition goes to the transaction log
FENCE = "FENCE"  # InitProducerId's verdict from Ongoing: the epoch fenced and the transaction aborted
EPOCH_EXHAUSTED = 32_766  # TransactionMetadata.isEpochExhausted: Short.MAX_VALUE - 1


class KafkaCode(Protocol):
    """Kafka's code behind the model's steps (filled by `kcheck.invariants.transactions_model`)."""

    def metadata(self, meta: Meta, pending: int | None = None) -> Any:
        """A live TransactionMetadata (TxnMetadata) holding `meta`, with `pending` as its pending state."""
        ...

    def transit(self, record: Meta) -> Any:
        """The transit (TxnTransitMetadata) a record is."""
        ...

    def frozen_metadata(self, live: Any) -> Meta: ...

    def increment_epoch(self, live: Any, expected: int | None) -> Any | None:
        """`prepareIncrementProducerEpoch`'s transit, or None when it fences the request (Left(PRODUCER_FENCED), or
        from 4.2 ProducerFencedException)."""
        ...

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


def _end_by_state(state: int, commit: bool, retry: bool, tv2: bool) -> str | None:
    """EndTxn's verdict by the transaction's state once the epoch is checked: PREPARE, an answer (NONE for a retry of
    an ended transaction, INVALID_TXN_STATE), or None (CONCURRENT_TRANSACTIONS: a transition is under way)."""
    if state == ONGOING:
        return PREPARE
    if state in PREPARED:
        return None if (state == PREPARE_COMMIT) == commit else "INVALID_TXN_STATE"
    fresh_abort = PREPARE if tv2 and not commit else "INVALID_TXN_STATE"  # KIP-890: TV2 aborts from any ended state
    if state == EMPTY:
        return fresh_abort
    if commit != (state == COMPLETE_COMMIT):
        return "INVALID_TXN_STATE" if retry else fresh_abort
    return "NONE" if retry else fresh_abort


def end_txn_tv1(meta: Meta, pending: bool, m: Msg) -> str | None:
    """TransactionCoordinator's `endTransactionWithTV1` (before 4.0 `endTransaction`): the producer id and epoch must
    be the coordinator's, then a pending transition answers CONCURRENT_TRANSACTIONS; an EndTxn of the result already
    reached is answered NONE (a retry: the epoch cannot tell it from a late copy)."""
    if meta.producer_id != m.producer_id:
        return "INVALID_PRODUCER_ID_MAPPING"
    if meta.epoch != m.epoch:
        return "PRODUCER_FENCED"
    return None if pending else _end_by_state(meta.state, m.commit, True, False)


def end_txn_tv2(meta: Meta, pending: bool, m: Msg) -> str | None:
    """TransactionCoordinator's `endTransaction` for TV2 (KIP-890 part 2, 4.0): a pending transition first answers
    CONCURRENT_TRANSACTIONS; an EndTxn at the epoch below the coordinator's is a retry of the one that bumped it
    (`retryOnEpochBump`: NONE once the transaction is complete, CONCURRENT_TRANSACTIONS while it is prepared), any
    other epoch than the coordinator's is fenced."""
    if pending:
        return None
    if meta.producer_id != m.producer_id:
        return "INVALID_PRODUCER_ID_MAPPING"
    retry = meta.epoch == m.epoch + 1
    same = meta.epoch == m.epoch
    valid = retry if meta.state in PREPARED else same or (retry and meta.state in (COMPLETE_COMMIT, COMPLETE_ABORT))
    return _end_by_state(meta.state, m.commit, retry, True) if valid else "PRODUCER_FENCED"


def init_producer_id(meta: Meta, pending: bool, m: Msg) -> str | None:
    """TransactionCoordinator's `prepareInitProducerIdTransit` (the same in 3.9 and 4.4): a transition under way
    answers CONCURRENT_TRANSACTIONS; a request expecting a producer id (KIP-360's bump; -1: none) is fenced unless
    the metadata is new, the id is the coordinator's (its epoch is checked by `prepareIncrementProducerEpoch`), or it
    is the previous id with an exhausted epoch (a retry after the id was rotated); then PrepareCommit/PrepareAbort
    answers CONCURRENT_TRANSACTIONS, Ongoing is fenced and aborted (FENCE, whatever epoch the request expects), and
    Empty or a completed transaction bumps the epoch (PREPARE). None: CONCURRENT_TRANSACTIONS."""
    if pending:
        return None
    if m.producer_id != NO_PRODUCER_ID and not (
            meta.epoch == NO_EPOCH or m.producer_id == meta.producer_id
            or (m.producer_id == meta.prev_producer_id and m.epoch >= EPOCH_EXHAUSTED)):
        return "PRODUCER_FENCED"
    if meta.state in PREPARED:
        return None
    return FENCE if meta.state == ONGOING else PREPARE


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

    def _live(self, s: State) -> Any:
        """The coordinator's live TransactionMetadata, its pending state that of the transit being appended."""
        c = s.coordinator
        return self.kafka.metadata(c.meta, None if c.transit is None else c.transit.state)

    def _prepare(self, s: State, live: Any, transit: Any, then: tuple[Any, ...]) -> State:
        """A prepared transit (`live` has it pending) goes to `appendTransactionToLog`: the append is its own step
        (`append`), and `then` is what the coordinator does once it is answered (`_appended`, `_refused`)."""
        c = replace(s.coordinator, meta=self.kafka.frozen_metadata(live), transit=self.kafka.record(transit),
                    then=then)
        return replace(s, coordinator=c)

    def _busy(self, s: State) -> bool:
        """`pendingTransitionInProgress` or a prepared transaction (whose completion Kafka has pending from the
        moment PrepareCommit/PrepareAbort is written, `sendTxnMarkersCallback`'s `prepareComplete`, while the markers
        are sent): a request gets CONCURRENT_TRANSACTIONS (the client, or the leader, retries later)."""
        return s.coordinator.transit is not None or s.coordinator.meta.state in PREPARED

    def append(self, s: State, ok: bool) -> State | None:
        """The transit's append to __transaction_state answered: written, then `completeTransitionTo` and the
        request's callback; or failed (`append_failures`), then the pending state is cleared and the request
        refused (TransactionStateManager.appendTransactionToLog). A completion's failed append is retried with its
        pending state kept (TransactionMarkerChannelManager's retry queue): a delay, which `append` already is."""
        c = s.coordinator
        if c.transit is None or c.then is None:
            return None
        live, then = self._live(s), c.then
        if ok:
            live.complete_transition_to(self.kafka.transit(c.transit))
            c = replace(c, meta=self.kafka.frozen_metadata(live), record=c.transit, transit=None, then=None)
            return self._appended(replace(s, coordinator=c), then)
        if s.used.append_failures >= self.cfg.append_failures or then[0] == "complete":
            return None
        live.append_failed()
        if then[0] == "fence":  # endTransaction's callback: an epoch fence whose write failed
            live.has_failed_epoch_fence = True
        s = replace(s, coordinator=replace(c, meta=self.kafka.frozen_metadata(live), transit=None, then=None),
                    used=replace(s.used, append_failures=s.used.append_failures + 1))
        return self._refused(s, then)

    def _appended(self, s: State, then: tuple[Any, ...]) -> State:
        """The callback of a written transit."""
        kind = then[0]
        if kind == "init":
            req = then[1]
            s = self._fence(s, req.tag[0] if self._awaits(s, req) else -1)
            return self._answer_init(s, req, "NONE")
        if kind == "leader-add":
            if then[-1]:  # the partition began the transaction: the model's label of it
                s = replace(s, coordinator=replace(s.coordinator, owner=then[1].tag))
            return self._answer_verify(s, then[1], "NONE")
        if kind == "add":
            return self._answer(self._own(s, then[1], then[-1]), then[1], "added", "NONE")
        if kind in ("end", "fence"):
            commit = kind == "end" and then[1].commit
            h, owner = s.history, s.coordinator.owner
            if owner is not None:
                h = replace(h, committed=h.committed | {owner}) if commit else replace(h, aborted=h.aborted | {owner})
            s = self._markers(replace(s, history=h), commit)
            if kind == "fence":
                return self._fence(s)
            return self._answer(s, then[1], "ended", "NONE", s.coordinator.meta.epoch if then[1].tv >= 2 else -1)
        return s  # complete

    @staticmethod
    def _answer(s: State, req: Msg, kind: str, error: str, epoch: int = -1) -> State:
        """The coordinator's answer to the client's EndTxn ("ended", with the epoch it carries: TV2's bumped one, -1
        for none) or AddPartitionsToTxn ("added") in flight back, unless its answer is lost (the request, kept in
        flight, is retried)."""
        if req.lost:
            return s
        answer = replace(req, kind=kind, error=error, epoch=epoch if kind == "ended" else req.epoch)
        return replace(s, bag=_bag(s.bag + (answer,)))

    @staticmethod
    def _current(s: State, m: Msg) -> bool:
        """The client request `m` is of the transaction its instance is in (not a copy or a late one of an
        earlier transaction)."""
        p = s.producers[m.tag[0]]
        return p.txn == m.tag[1] and p.phase in ("txn", "abortable", "ending")

    def _own(self, s: State, m: Msg, began: bool) -> State:
        """The model's label of the coordinator's transaction: the client transaction whose AddPartitionsToTxn began
        it or, under TV1 (where a late copy at the same epoch may begin one), last added to it. A transaction a late
        copy began keeps that copy's label: its marker ends what the copy's own late writes opened."""
        if began or self._current(s, m):
            return replace(s, coordinator=replace(s.coordinator, owner=m.tag))
        return s

    def _refused(self, s: State, then: tuple[Any, ...]) -> State:
        """What the requester sees when the append failed or the coordinator moved (NOT_COORDINATOR,
        COORDINATOR_NOT_AVAILABLE: retriable): the client sends its InitProducerId (if it still waits for it), EndTxn
        or AddPartitionsToTxn again, a leader's produce is sent again by its client (back in flight)."""
        if then[0] == "init" and not self._awaits(s, then[1]):
            return s
        if then[0] in ("end", "add", "leader-add", "init") and not (then[1].lost or then[1].leader_lost):
            m = then[1]  # the client retries (after a lost answer it retries the copy kept in flight)
            again = replace(m, kind="produce", guard=-1) if then[0] == "leader-add" else m
            return replace(s, bag=_bag(s.bag + (again,)))
        return s

    def _fence(self, s: State, requester: int = -1) -> State:
        """Every initialised instance older than the coordinator's epoch is fenced (history only), but the one whose
        InitProducerId bumped it."""
        e = s.coordinator.meta.epoch
        out = {i for i, p in enumerate(s.producers) if p.phase != "new" and p.epoch < e and i != requester}
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
        live = self._live(s)
        return self._prepare(s, live, live.prepare_complete(0), ("complete",))

    def _end(self, s: State, commit: bool, then: tuple[Any, ...]) -> State:
        """`endTransaction` from Ongoing (or a TV2 abort from a completed state): PrepareCommit/PrepareAbort."""
        live = self._live(s)
        empty = s.coordinator.meta.state in ENDED  # TV2's abort with no partition added starts the transaction now
        return self._prepare(s, live, live.prepare_abort_or_commit(PREPARE_COMMIT if commit else PREPARE_ABORT,
                                                                   self.tv, NO_PRODUCER_ID, 0, empty), then)

    def _fence_and_abort(self, s: State) -> State:
        """`prepareFenceProducerEpoch`, then `endTransaction(ABORT, isFromClient = false)`, which clears the fence's
        pending state and takes its epoch before `prepareAbortOrCommit` (TransactionCoordinator.scala)."""
        live = self._live(s)
        fence = live.prepare_fence_producer_epoch()
        live.pending = None
        live.epoch, live.last_epoch = fence.epoch, fence.last_epoch
        s = replace(s, coordinator=replace(s.coordinator, meta=self.kafka.frozen_metadata(live)))
        return self._end(s, False, ("fence",))

    # ---- the client's requests --------------------------------------------------------------------------------

    def init(self, s: State, i: int) -> State | None:
        """InitProducerId in flight: the instance's first (phase new: no producer id or epoch expected), or the epoch
        bump after an abortable error (phase bump: its current id and epoch expected, KIP-360). The second instance
        sends its first once the first instance has its epoch."""
        p = s.producers[i]
        first = p.phase == "new"
        if p.init or not (first or p.phase == "bump") or (first and i > 0 and s.producers[i - 1].phase == "new"):
            return None
        req = Msg("init", -1, NO_PRODUCER_ID if first else p.pid, NO_EPOCH if first else p.epoch, (i, p.txn))
        return replace(s, producers=_with(s.producers, i, replace(p, init=True)), bag=_bag(s.bag + (req,)))

    @staticmethod
    def _awaits(s: State, m: Msg) -> bool:
        """The instance still waits for this InitProducerId (not a copy of one already answered)."""
        p = s.producers[m.tag[0]]
        return p.init and p.txn == m.tag[1]

    def _init_producer_id(self, s: State, m: Msg) -> State | None:
        """InitProducerId at the coordinator (`handleInitProducerId`, `init_producer_id`'s verdict): None waits
        (CONCURRENT_TRANSACTIONS, the client retries later); from Ongoing the epoch is fenced and the transaction
        aborted (`prepareFenceProducerEpoch`, `endTransaction(ABORT)`) and the client, answered
        CONCURRENT_TRANSACTIONS, sends it again (a copy it no longer waits for is answered to no one); else
        `prepareIncrementProducerEpoch` with the expected epoch: its transit goes to the log and the answer waits
        for it, or the request is fenced. A late copy bumps the epoch as well, fencing whoever had it."""
        verdict = init_producer_id(s.coordinator.meta, self._busy(s), m)
        if verdict is None:
            return None
        if verdict == FENCE:
            s = self._fence_and_abort(s)
            return replace(s, bag=_bag(s.bag + (m,))) if self._awaits(s, m) and not m.lost else s
        if verdict != PREPARE:
            return self._answer_init(s, m, verdict)
        live = self._live(s)
        transit = self.kafka.increment_epoch(live, None if m.producer_id == NO_PRODUCER_ID else m.epoch)
        if transit is None:
            return self._answer_init(s, m, "PRODUCER_FENCED")
        return self._prepare(s, live, transit, ("init", m))

    @staticmethod
    def _answer_init(s: State, req: Msg, error: str) -> State:
        """InitProducerId's answer in flight (on NONE the coordinator's producer id and epoch), unless lost."""
        if req.lost:
            return s
        meta = s.coordinator.meta
        ok = error == "NONE"
        answer = replace(req, kind="inited", error=error, producer_id=meta.producer_id if ok else NO_PRODUCER_ID,
                         epoch=meta.epoch if ok else NO_EPOCH)
        return replace(s, bag=_bag(s.bag + (answer,)))

    def _inited(self, s: State, r: Msg) -> State:
        """InitProducerIdHandler: NONE gives the instance its producer id and epoch (ready, every sequence 0); an
        epoch a newer one has fenced meanwhile makes it a fenced instance (history); PRODUCER_FENCED (or
        INVALID_PRODUCER_EPOCH) is fatal. An answer to a copy the instance no longer waits for is dropped."""
        i = r.tag[0]
        if not self._awaits(s, r):
            return s
        p = replace(s.producers[i], init=False)
        if r.error != "NONE":
            return replace(s, producers=_with(s.producers, i, replace(p, phase="fenced")))
        p = replace(p, pid=r.producer_id, epoch=r.epoch, phase="ready", bump=False, seqs=(0,) * self.cfg.partitions)
        s = replace(s, producers=_with(s.producers, i, p))
        if r.epoch < s.coordinator.meta.epoch:
            s = replace(s, history=replace(s.history, fenced=s.history.fenced | {i}))
        return s

    def _fenced(self, s: State, i: int, phase: str = "fenced") -> State:
        return replace(s, producers=_with(s.producers, i, replace(s.producers[i], phase=phase)))

    def _add_partition(self, s: State, p: int, pid: int, epoch: int, then: tuple[Any, ...]) -> State | str | None:
        """`handleAddPartitionsToTransaction` (4.4's order: a pending transition first): an error name, None
        (CONCURRENT_TRANSACTIONS: the request waits), `s` itself (the partition is in the ongoing transaction:
        answered at once) or the state with Ongoing's transit pending."""
        m = s.coordinator.meta
        if s.coordinator.transit is not None:
            return None
        if m.producer_id != pid:
            return "INVALID_PRODUCER_ID_MAPPING"
        if m.epoch != epoch:
            return "PRODUCER_FENCED"
        if m.state in PREPARED:
            return None
        if m.state == ONGOING and p in m.partitions:
            return s
        live = self._live(s)
        return self._prepare(s, live, live.prepare_add_partitions({p}, 0, self.tv), then + (m.state in ENDED,))

    def write(self, s: State, i: int, p: int) -> State | None:
        """One record to p: with TV2 the produce at once; with TV1 first AddPartitionsToTxn (in flight; the record
        waits in the accumulator and counts as sent for the client's time-out)."""
        prod = s.producers[i]
        if prod.phase == "ready" and prod.txn < self.cfg.txns:
            prod = replace(prod, phase="txn", txn=prod.txn + 1)
        if prod.phase != "txn" or p in prod.written:
            return None
        s = replace(s, producers=_with(s.producers, i, prod))
        if self.tv >= 2 or p in prod.added:
            return self._sent(s, i, p)
        ask = Msg("add", p, prod.pid, prod.epoch, (i, prod.txn))
        prod = replace(prod, adding=prod.adding | {p}, written=prod.written | {p}, waiting=prod.waiting | {p})
        return replace(s, producers=_with(s.producers, i, prod), bag=_bag(s.bag + (ask,)))

    def _client_add(self, s: State, m: Msg) -> State | None:
        """The TV1 client's AddPartitionsToTxn at the coordinator: answered at once, or once Ongoing's record is
        written (`_appended`); None: CONCURRENT_TRANSACTIONS, the request waits."""
        added = self._add_partition(s, m.partition, m.producer_id, m.epoch, ("add", m))
        if added is None or isinstance(added, str):
            return None if added is None else self._answer(s, m, "added", added)
        return self._answer(self._own(s, m, False), m, "added", "NONE") if added is s else added

    def _added(self, s: State, r: Msg) -> State:
        """AddPartitionsToTxnHandler: on NONE the record's produce goes; a fencing error is fatal."""
        i, txn = r.tag
        prod = s.producers[i]
        if prod.txn != txn or r.partition not in prod.adding:
            return s  # an answer to a copy: the client already has one
        s = replace(s, producers=_with(s.producers, i, replace(prod, adding=prod.adding - {r.partition})))
        if r.error == "NONE":
            return self._sent(s, i, r.partition)
        return self._fenced(s, i)

    def _sent(self, s: State, i: int, p: int) -> State:
        """The client's produce to p goes in flight (after AddPartitionsToTxn with TV1)."""
        prod = s.producers[i]
        if prod.phase != "txn":
            return s  # the transaction turned abortable meanwhile: the client fails the queued batch
        msg = Msg("produce", p, prod.pid, prod.epoch, (i, prod.txn), seq=prod.seqs[p])
        prod = replace(prod, added=prod.added | ({p} if self.tv < 2 else set()), seqs=_with(prod.seqs, p,
                       prod.seqs[p] + 1), written=prod.written | {p}, waiting=prod.waiting | {p})
        return replace(s, producers=_with(s.producers, i, prod), bag=_bag(s.bag + (msg,)))

    def _abortable(self, prod: Producer) -> Producer:
        """`maybeTransitionToErrorState`: an abortable error in the transaction, with the epoch bump if the rule
        has one."""
        if prod.phase != "txn":
            return prod
        return replace(prod, phase="abortable", bump=prod.bump or self.rules.client_epoch_bump(self.tv))

    def timeout(self, s: State, i: int, p: int) -> State | None:
        prod = s.producers[i]
        if p not in prod.waiting or s.used.client_timeouts >= self.cfg.client_timeouts:
            return None
        prod = self._abortable(replace(prod, waiting=prod.waiting - {p}))
        return replace(s, producers=_with(s.producers, i, prod),
                       used=replace(s.used, client_timeouts=s.used.client_timeouts + 1))

    def end(self, s: State, i: int, commit: bool) -> State | None:
        """commitTransaction / abortTransaction: EndTxn in flight (after every produce and AddPartitionsToTxn is
        answered or, for a produce, timed out)."""
        prod = s.producers[i]
        if prod.waiting or prod.adding or prod.phase not in (("txn",) if commit else ("txn", "abortable")):
            return None
        if not prod.written:  # nothing sent: the client ends it alone (TransactionManager, no EndTxn)
            return self._ended(s, i, -1)
        req = Msg("end", -1, prod.pid, prod.epoch, (i, prod.txn), commit=commit, tv=self.tv)
        return replace(s, producers=_with(s.producers, i, replace(prod, phase="ending")), bag=_bag(s.bag + (req,)))

    def _end_txn(self, s: State, m: Msg) -> State | None:
        """EndTxn at the coordinator (`handleEndTransaction`): the verdict of `endTransactionWithTV1` or
        `endTransaction` (TV2), by the request's transaction version; on PREPARE, PrepareCommit/PrepareAbort
        goes to the log and the answer waits for it. A late EndTxn (a copy, a retry) that ends the coordinator's
        transaction while its own instance has moved on is flagged."""
        c = s.coordinator
        verdict = (end_txn_tv2 if m.tv >= 2 else end_txn_tv1)(c.meta, self._busy(s), m)
        if verdict is None:
            return None  # CONCURRENT_TRANSACTIONS: the client retries later
        if verdict != PREPARE:
            return self._answer(s, m, "ended", verdict, c.meta.epoch if m.tv >= 2 and verdict == "NONE" else -1)
        mine = s.producers[m.tag[0]]
        if mine.txn != m.tag[1] or mine.phase in ("ready", "bump"):  # the instance is past that transaction
            s = _flag(s, "txn.end-own", f"a late EndTxn({'COMMIT' if m.commit else 'ABORT'}) of {tag_text(m.tag)} "
                      f"ended the coordinator's transaction {tag_text(c.owner)} (epoch {c.meta.epoch})")
        elif not m.commit and c.meta.state in ENDED:  # KIP-890: a TV2 abort from a completed state begins it now
            s = replace(s, coordinator=replace(c, owner=m.tag))
        return self._end(s, m.commit, ("end", m))

    def _ended_answer(self, s: State, r: Msg) -> State:
        """EndTxnHandler: NONE ends the transaction (TV2: with the epoch the answer carries); PRODUCER_FENCED is
        fatal (fenced), INVALID_TXN_STATE fatal (failed)."""
        i, txn = r.tag
        prod = s.producers[i]
        if prod.txn != txn or prod.phase != "ending":
            return s  # an answer to a copy: the client already has one
        if r.error == "NONE":
            return self._ended(s, i, r.epoch)
        return self._fenced(s, i, "fenced" if r.error in FENCING else "failed")

    def _ended(self, s: State, i: int, epoch: int) -> State:
        """The transaction ended: the instance is ready for its next one, or bumps its epoch first (InitProducerId,
        phase bump); an answer carrying an epoch (TV2's bumped one) is taken, every partition at sequence 0."""
        prod = s.producers[i]
        prod = replace(prod, phase="bump" if prod.bump else "ready", added=frozenset(), written=frozenset())
        if epoch >= 0:
            prod = replace(prod, epoch=epoch, seqs=(0,) * self.cfg.partitions)
        return replace(s, producers=_with(s.producers, i, prod))

    # ---- the partitions -------------------------------------------------------------------------------------

    def _ongoing(self, part: Part, m: Msg) -> bool:
        """`UnifiedLog.hasOngoingTransaction(producerId, epoch)`: the producer has a transaction open here at this
        epoch, so its write needs no verification."""
        return any(e.producer_id == m.producer_id and e.epoch == m.epoch and e.txn_first_offset is not None
                   for e in part.entries)

    def _start_verification(self, s: State, m: Msg, lost: bool) -> State:
        """`maybeStartTransactionVerification`: the partition's verification entry made (or its lowest sequence and
        epoch updated), and AddPartitionsToTxnManager's request to the coordinator in flight with the produce."""
        before = s.parts[m.partition]
        live = self.kafka.partition(before)
        live.verify(m.producer_id, m.seq, m.epoch, self.tv >= 2)
        after = self.kafka.frozen_partition(live, before, False)
        guard = next(v[1] for v in after.verification if v[0] == m.producer_id)
        ask = replace(m, kind="verify", guard=guard, lost=lost)
        return replace(s, parts=_with(s.parts, m.partition, after), bag=_bag(s.bag + (ask,)))

    def _verify(self, s: State, v: Msg) -> State | None:
        """The coordinator answers the leader's AddPartitionsToTxn: TV2 adds the partition (`verifyOnly` false: its
        Ongoing transit written first, `_appended`), TV1 only verifies (`handleVerifyPartitionsInTransaction`);
        None: CONCURRENT_TRANSACTIONS, the request waits."""
        if self.tv >= 2:
            added = self._add_partition(s, v.partition, v.producer_id, v.epoch, ("leader-add", v))
            if added is None or added is s or isinstance(added, str):
                return None if added is None else self._answer_verify(s, v, "NONE" if added is s else str(added))
            return added
        meta = s.coordinator.meta
        if meta.producer_id != v.producer_id:
            return self._answer_verify(s, v, "INVALID_PRODUCER_ID_MAPPING")
        if meta.epoch != v.epoch:
            return self._answer_verify(s, v, "PRODUCER_FENCED")
        if self._busy(s):
            return None
        return self._answer_verify(s, v, "NONE" if v.partition in meta.partitions else "TRANSACTION_ABORTABLE")

    def _answer_verify(self, s: State, v: Msg, error: str) -> State:
        if v.leader_lost:
            return s  # the leader fails the produce (NETWORK_EXCEPTION, retriable): the client's retry is in flight
        return replace(s, bag=_bag(s.bag + (replace(v, kind="verified", error=error),)))

    def _verified(self, s: State, r: Msg) -> State:
        """The coordinator's answer at the leader: on NONE the append, which `batchMissingRequiredVerification`
        refuses (INVALID_TXN_STATE) unless the verification entry the request made is still there (a transactional
        batch, a marker, cleared it: the guard against the hanging transaction) or a transaction is open."""
        error = r.error
        if error == "NONE":
            part = s.parts[r.partition]
            if self._ongoing(part, r) or any(v[0] == r.producer_id and v[1] == r.guard for v in part.verification):
                s, error = self._append(s, r)
            else:
                error = "INVALID_TXN_STATE"
        return s if r.lost else self._answer_produce(s, r, error)

    def _append(self, s: State, m: Msg) -> tuple[State, str]:
        """`UnifiedLog.append`'s producer-state checks and the append."""
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
            if m.tag[0] in h.fenced and not self._abort_pending(s, m):
                s = _flag(s, "txn.fenced-writes-nothing", f"partition {m.partition} appended {tag_text(m.tag)}'s "
                          f"write (epoch {m.epoch}) after instance {m.tag[0]} was fenced")
        return s, "NONE"

    @staticmethod
    def _abort_pending(s: State, m: Msg) -> bool:
        """The abort that fenced the writer still has its marker to write on the partition: the partition is fenced
        only by that marker (KIP-890's guard ends the window there), so a write verified before the fence may land
        in between, and the marker aborts it."""
        meta = s.coordinator.meta
        return meta.state == PREPARE_ABORT and meta.producer_id == m.producer_id and m.partition in meta.partitions

    def _answer_produce(self, s: State, m: Msg, error: str) -> State:
        i, txn = m.tag
        prod = s.producers[i]
        if prod.txn != txn or m.partition not in prod.waiting or prod.epoch != m.epoch:
            return s  # an answer the client no longer waits for
        prod = replace(prod, waiting=prod.waiting - {m.partition})
        if error in FENCING:
            prod = replace(prod, phase="fenced")
        elif error != "NONE":
            prod = self._abortable(prod)
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
        if lost and m.kind not in RESENT:
            return None
        rest = s.bag if lost else s.bag[:k] + s.bag[k + 1:]
        if lost:
            s = replace(s, used=replace(s.used, duplicates=s.used.duplicates + 1))
        if lost and m.kind == "verify":  # the coordinator's answer to the leader lost (AddPartitionsToTxnManager:
            # NETWORK_EXCEPTION, a retriable error for the produce): the client sends its produce again
            retry = () if m.lost else (replace(m, kind="produce", guard=-1),)
            return self._verify(replace(s, bag=_bag(s.bag[:k] + s.bag[k + 1:] + retry)), replace(m, leader_lost=True))
        if m.kind == "marker":
            s, error = self._marker(s, m)
            s = replace(s, bag=rest)
            return s if lost else self._answer_marker(s, m, error)
        at = self._AT.get(m.kind)
        if at is not None:  # a request at the coordinator, or an answer at the leader or the client
            return at(self, replace(s, bag=rest), replace(m, lost=True) if lost else m)
        s = replace(s, bag=rest)
        if not self.verify or self._ongoing(s.parts[m.partition], m):  # TV1 before KIP-890, or no verification due
            s, error = self._append(s, m)
            return s if lost else self._answer_produce(s, m, error)
        return self._start_verification(s, m, lost)

    _AT: dict[str, Callable[[Any, State, Msg], State | None]] = {
        "verify": _verify, "verified": _verified, "end": _end_txn, "ended": _ended_answer, "add": _client_add,
        "added": _added, "init": _init_producer_id, "inited": _inited}

    # ---- faults -------------------------------------------------------------------------------------------------

    def duplicate(self, s: State, k: int) -> State | None:
        if k >= len(s.bag) or s.used.duplicates >= self.cfg.duplicates or s.bag[k].kind not in RESENT:
            return None
        return replace(s, bag=_bag(s.bag + (s.bag[k],)), used=replace(s.used, duplicates=s.used.duplicates + 1))

    def txn_timeout(self, s: State) -> State | None:
        c = s.coordinator  # abortTimedOutTransactions skips a transaction with a pending state
        if c.meta.state != ONGOING or c.transit is not None or s.used.txn_timeouts >= self.cfg.txn_timeouts:
            return None
        return self._fence_and_abort(replace(s, used=replace(s.used, txn_timeouts=s.used.txn_timeouts + 1)))

    def failover(self, s: State) -> State | None:
        if s.used.failovers >= self.cfg.failovers:
            return None
        c = s.coordinator
        if c.then is not None:  # the append in flight is lost with the old coordinator: its requester is refused
            s = self._refused(s, c.then)
        meta = c.record or Meta()
        s = replace(s, coordinator=replace(c, meta=meta, epoch=c.epoch + 1, transit=None, then=None),
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
        out += [("append",), ("append-fail",)]
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
        if kind in ("append", "append-fail"):
            return self.append(s, kind == "append")
        raise ValueError(f"unknown action {a!r}")

    def encode(self, s: State) -> bytes:
        return _text(s).encode()

    def symmetries(self) -> list[Callable[[State], State]]:
        return []  # the instances are ordered (the second fences the first), the partitions named by the writes

    def describe(self, a: Action) -> str:
        return " ".join(str(x) for x in a)

    def fair(self, a: Action) -> bool:
        """Deliveries and the coordinator's appends are progress (liveness); the clients' requests and the faults
        are not."""
        return a[0] in ("deliver", "append")

    def invariants(self) -> Sequence[StateInvariant[State]]:
        return []


def describe_msg(m: Msg) -> str:
    if m.kind == "produce":
        return f"produce {tag_text(m.tag)} -> partition {m.partition} (epoch {m.epoch}, seq {m.seq})"
    if m.kind in ("end", "ended"):
        what = f"EndTxn({'COMMIT' if m.commit else 'ABORT'}) {tag_text(m.tag)}"
        return f"{what} (epoch {m.epoch})" if m.kind == "end" else f"{what} answered {m.error}"
    if m.kind in ("add", "added"):
        what = f"AddPartitionsToTxn {tag_text(m.tag)} partition {m.partition}"
        return f"{what} (epoch {m.epoch})" if m.kind == "add" else f"{what} answered {m.error}"
    if m.kind in ("init", "inited"):
        what = f"InitProducerId p{m.tag[0]}"
        return f"{what} (expects epoch {m.epoch})" if m.kind == "init" else f"{what} answered {m.error} (epoch " \
            f"{m.epoch})"
    if m.kind in ("verify", "verified"):
        return f"{m.kind} {tag_text(m.tag)} partition {m.partition}" + (f" {m.error}" if m.error else "")
    return (f"{'COMMIT' if m.commit else 'ABORT'} marker {tag_text(m.tag)} -> partition {m.partition} (epoch "
            f"{m.epoch}, coordinator epoch {m.coordinator_epoch})")


def state_line(s: State) -> str:
    """One line for a trace table: the coordinator, the producers, the logs and the bag."""
    c = s.coordinator
    prods = ", ".join(f"i{i}:{p.phase}{'+init' if p.init else ''}@{p.epoch}" for i, p in enumerate(s.producers))
    logs = " | ".join(" ".join(("C" if b.commit else "A") if b.marker is not None else tag_text(s.history.tags[n][o])
                               for o, b in enumerate(part.batches)) or "empty" for n, part in enumerate(s.parts))
    pending = "" if c.transit is None else f", writing {STATE_NAMES[c.transit.state]}"
    return (f"coordinator {STATE_NAMES[c.meta.state]} epoch {c.meta.epoch} (coordinator epoch {c.epoch}{pending}); "
            f"{prods}; "
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
