"""The transactions model (`kcheck.model.transactions`, `kcheck.invariants.transactions_model`).

Each historical rule breaks the property its JIRA names in an exhaustive search, with the shortest trace the JIRA's
scenario needs, and today's rules (Kafka 4.4) are complete and clean at the same bounds and at the default ones;
the scenarios of KAFKA-14402 and KAFKA-17754 replayed step by step, and the TV1 client's KIP-360 epoch bump that
fences the late write; EndTxn answered as the coordinator's table says, InitProducerId as
`prepareInitProducerIdTransit` does, retried after a lost answer or late as a copy; a verification copied or its
answer lost; liveness (a prepared transaction completes, the
last stable offset reaches the log end) fails for the rules that leave a transaction stuck or hanging and holds
today; the port to Kafka's code (the references) loses nothing when a partition or the coordinator's metadata is
frozen and thawed.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kcheck.invariants.transactions_model import INVARIANT_IDS, ReferenceKafka, TransactionsModel, read_committed
from kcheck.model.liveness import check_liveness
from kcheck.model.search import exhaust
from kcheck.model.transactions import VARIANTS, Config, Rules
from kcheck.model.transactions.model import end_txn_tv1, end_txn_tv2, init_producer_id
from kcheck.model.transactions.rules import tv1_epoch_per_producer
from kcheck.model.transactions.state import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    EMPTY,
    NO_EPOCH,
    NO_PRODUCER_ID,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    Meta,
    Msg,
    State,
)
from kcheck.model.visited import SearchResult

# The shortest run of each JIRA's scenario, counted by hand from it (one step per request, delivery or append to
# __transaction_state; the coordinator answers a request once its record is written). InitProducerId is four steps
# (init: the request in flight; it reaches the coordinator; the record; the answer reaches the client). A TV1 write
# is four steps before its produce goes (write: AddPartitionsToTxn in flight; it reaches the coordinator; Ongoing's
# record; the answer reaches the client); an EndTxn three before its markers go (commit or abort: EndTxn in flight;
# it reaches the coordinator; the PrepareCommit/PrepareAbort record) and one more for its answer to reach the client:
SCENARIO_STEPS = {
    # init (4 steps), the TV1 write (4 steps; the produce in flight), the client times out, the abort (3 steps: a
    # marker in flight), the marker lands, the late produce lands after it
    "unverified-hanging": 14,
    # the same abort (12 steps), its answer reaches the client (which keeps its epoch), its marker lands,
    # CompleteAbort written, the next transaction adds the partition again (same epoch; 4 steps), the late produce
    # reaches the leader (a verification entry, the coordinator asked), the coordinator answers yes, the leader
    # appends it, the new write lands (a transaction is open: no verification), commit (3 steps), its marker lands:
    # the aborted write is committed with the next one
    "tv1-late-write": 27,
    # init (4 steps), the TV1 write (4 steps), it lands (reaches the leader, verified, appended: 3 steps),
    # commit, its EndTxn copied, one copy reaches the coordinator, PrepareCommit written, the answer reaches the
    # client, the next write (same epoch: AddPartitionsToTxn in flight), the marker lands, CompleteCommit written,
    # the AddPartitionsToTxn reaches the coordinator and Ongoing is written, the late copy commits the transaction
    # the client has not ended (txn.end-own; the duplicated marker's own trace, txn.marker-own, is 26 steps)
    "tv1-delayed-marker": 22,
    # init (4 steps), write, the write lands (reaches the leader, the leader's AddPartitionsToTxn, its record,
    # the answer and the append: 4 steps), commit (3 steps; epoch bumped), its answer reaches the client, the next
    # write, the commit marker duplicated, one copy lands, CompleteCommit written, the next write lands (4 steps),
    # the stale copy lands on it
    "marker-epoch-not-below": 22,
    # init (4 steps), write, the write lands (4 steps), commit (3 steps), the marker lands with its answer lost, its
    # retry is refused
    "retried-marker-refused": 14,
    # unverified-hanging's trace (the second instance idle)
    "unverified-fenced-write": 14,
}


def _run(model: TransactionsModel) -> SearchResult:
    return exhaust(model, keep_going=True)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_historical_rule_breaks_its_property_and_today_is_clean(name: str) -> None:
    v = VARIANTS[name]
    old = _run(TransactionsModel.of_variant(v))
    assert old.counterexamples and set(old.counterexamples) <= set(INVARIANT_IDS)
    shortest = min(len(cx.steps) - 1 for cx in old.counterexamples.values())
    assert shortest == SCENARIO_STEPS[name]
    assert set(v.violates) <= set(old.counterexamples), old.counterexamples.keys()
    now = _run(TransactionsModel(Config(**dict(v.settings))))
    assert now.complete and not now.counterexamples


@pytest.mark.slow
def test_today_is_complete_and_clean_at_the_default_bounds() -> None:
    """Two transactions over two partitions, a duplicate or lost answer, a client time-out (315,322 states:
    minutes)."""
    r = _run(TransactionsModel())
    assert r.complete and not r.counterexamples


@pytest.mark.slow
def test_today_is_clean_with_failover_and_transaction_timeout() -> None:
    r = _run(TransactionsModel(Config(txns=1, failovers=1, txn_timeouts=1)))
    assert r.complete and not r.counterexamples


@pytest.mark.parametrize("cfg", [Config(txns=1), Config(txns=1, partitions=1, failovers=1, txn_timeouts=1)],
                         ids=["one-transaction", "failover-and-timeout"])
def test_today_is_clean_at_the_quick_bounds(cfg: Config) -> None:
    """The default bounds and the failover run above, one transaction (and one partition) fewer: seconds."""
    r = _run(TransactionsModel(cfg))
    assert r.complete and not r.counterexamples


def _settled(model: TransactionsModel, s: State) -> State:
    """The coordinator's appends to __transaction_state, the leaders' verifications and the client's
    InitProducerId, EndTxn and AddPartitionsToTxn (each request to the coordinator, its answer) carried out, as long
    as one is in flight."""
    while True:
        ks = [k for k, m in enumerate(s.bag)
              if m.kind in ("verify", "verified", "end", "ended", "add", "added", "init", "inited")]
        t = model.step(s, ("append",)) or next((u for k in ks if (u := model.step(s, ("deliver", k))) is not None),
                                               None)
        if t is None:
            return s
        s = t


def _replay(model: TransactionsModel, actions: list[tuple[object, ...]]) -> State:
    """The actions from the initial state, each followed by the appends it started."""
    s = model.initial_states()[0]
    for a in actions:
        assert a in model.actions(s), (a, model.actions(s))
        t = model.step(s, a)
        assert t is not None
        s = _settled(model, t)
    return s


def _replay_from(model: TransactionsModel, s: State, actions: list[tuple[object, ...]]) -> State:
    for a in actions:
        t = model.step(s, a)
        assert t is not None, a
        s = _settled(model, t)
    return s


def _violated(model: TransactionsModel, s: State) -> dict[str, str]:
    return {inv.id: msg for inv in model.invariants() if (msg := inv.holds(s)) is not None}


def test_kafka_14402_a_late_produce_after_the_abort_marker_hangs_the_partition() -> None:
    """KAFKA-14402: without verification the delayed produce is appended after the abort's marker and opens a
    transaction the coordinator has ended (CompleteAbort); with verification it is refused and nothing opens."""
    steps: list[tuple[object, ...]] = [("init", 0), ("write", 0, 0), ("timeout", 0, 0), ("abort", 0)]
    old = TransactionsModel.of_variant(VARIANTS["unverified-hanging"])
    s = _replay(old, steps)
    marker = next(k for k, m in enumerate(s.bag) if m.kind == "marker")
    s = _replay_from(old, s, [("deliver", marker), ("deliver", 0)])
    assert s.coordinator.meta.state == COMPLETE_ABORT and s.parts[0].ongoing
    assert "txn.no-hanging" in _violated(old, s)
    lso, returned = read_committed(old.reference, s.parts[0])
    assert lso == 1 and returned == []  # the last stable offset stays at the hanging transaction's first offset
    tv1_verified = TransactionsModel(Config(**dict(VARIANTS["unverified-hanging"].settings)),
                                     replace(Rules.current(), name="tv1", transaction_version=tv1_epoch_per_producer))
    s = _replay(tv1_verified, steps)
    marker = next(k for k, m in enumerate(s.bag) if m.kind == "marker")
    s = _replay_from(tv1_verified, s, [("deliver", marker), ("deliver", 0)])
    assert not s.parts[0].ongoing and not _violated(tv1_verified, s)


def test_kafka_17754_tv1_late_write_joins_the_next_transaction_and_tv2_refuses_it() -> None:
    """KAFKA-17754: under TV1 the next transaction has the same epoch, so the late write of the aborted one passes
    verification and the sequence check and is committed with it; under TV2 (today) the abort bumped the epoch (the
    coordinator never had the partition: no marker), and the leader's AddPartitionsToTxn refuses the late write."""
    settings = dict(VARIANTS["tv1-late-write"].settings)
    for model, bad in ((TransactionsModel.of_variant(VARIANTS["tv1-late-write"]), True),
                       (TransactionsModel(Config(**settings)), False)):
        s = _replay(model, [("init", 0), ("write", 0, 0), ("timeout", 0, 0), ("abort", 0)])
        markers = [k for k, m in enumerate(s.bag) if m.kind == "marker"]
        assert len(markers) == (1 if bad else 0)
        s = _replay_from(model, s, [("deliver", k) for k in markers] + [("write", 0, 0)])
        late = next(k for k, m in enumerate(s.bag) if m.tag == (0, 1))
        s = _replay_from(model, s, [("deliver", late)])
        assert len(s.parts[0].batches) == (2 if bad else 0)  # the abort marker and the late write, or nothing
        s = _replay_from(model, s, [("deliver", 0), ("commit", 0), ("deliver", 0)])
        violated = _violated(model, s)
        assert ("txn.no-aborted-read" in violated) == bad, violated
        assert bad or not violated
        assert len(read_committed(model.reference, s.parts[0])[1]) == (2 if bad else 1)


def _steps(model: TransactionsModel, s: State, actions: list[tuple[object, ...]]) -> State:
    for a in actions:
        t = model.step(s, a)
        assert t is not None, a
        s = t
    return s


def _deliver_first(model: TransactionsModel, s: State, kind: str) -> State:
    t = model.step(s, ("deliver", next(k for k, m in enumerate(s.bag) if m.kind == kind)))
    assert t is not None, kind
    return t


@pytest.mark.parametrize("tv", [1, 2])
def test_a_marker_between_the_verification_and_the_append_voids_it(tv: int) -> None:
    """KIP-890 part 1's guard: the leader's verification entry, made when the produce arrives, is cleared by the
    abort's marker; the coordinator's answer (that the partition was in the transaction) then finds it gone and the
    append is refused with INVALID_TXN_STATE (`batchMissingRequiredVerification`): nothing is left hanging."""
    rules = Rules.current() if tv == 2 else replace(Rules.current(), name="tv1",
                                                    transaction_version=tv1_epoch_per_producer)
    model = TransactionsModel(Config(txns=1, partitions=1, duplicates=0), rules)
    s = _deliver_first(model, _replay(model, [("init", 0), ("write", 0, 0)]), "produce")
    assert [v[0] for v in s.parts[0].verification] == [1000] and [m.kind for m in s.bag] == ["verify"]
    s = _deliver_first(model, s, "verify")  # with TV2 the leader's AddPartitionsToTxn: Ongoing's record written
    s = _steps(model, s, [("append",)] if tv == 2 else [])
    assert [(m.kind, m.error) for m in s.bag] == [("verified", "NONE")]
    s = _deliver_first(model, _steps(model, s, [("timeout", 0, 0), ("abort", 0)]), "end")
    s = _deliver_first(model, _steps(model, s, [("append",)]), "marker")
    assert not s.parts[0].verification and [b.marker for b in s.parts[0].batches] == [0]
    s = _deliver_first(model, _deliver_first(model, s, "verified"), "ended")
    assert len(s.parts[0].batches) == 1 and not s.parts[0].ongoing
    assert s.producers[0].phase == ("bump" if tv == 1 else "ready")  # KIP-360: TV1's client bumps after a time-out
    assert not _violated(model, s)


def test_a_request_meanwhile_waits_and_a_failed_append_clears_the_pending_state() -> None:
    """TransactionCoordinator: while a transit is being appended (`pendingTransitionInProgress`) InitProducerId gets
    CONCURRENT_TRANSACTIONS and abortTimedOutTransactions skips the id; a failed append clears the pending state
    (TransactionStateManager.appendTransactionToLog) and the client retries its EndTxn; a failed epoch fence sets
    `hasFailedEpochFence`, so the next fence keeps the epoch it bumped."""
    model = TransactionsModel(Config(instances=2, txns=1, partitions=1, txn_timeouts=1, append_failures=2))
    start = _replay(model, [("init", 0), ("write", 0, 0), ("deliver", 0)])  # TV2: the leader added the partition
    assert start.coordinator.meta.state == ONGOING and start.coordinator.transit is None
    s = _deliver_first(model, _steps(model, start, [("commit", 0)]), "end")
    assert s.coordinator.transit is not None
    assert s.coordinator.transit.state == PREPARE_COMMIT and s.coordinator.meta.state == ONGOING
    waiting = _steps(model, s, [("init", 1)])  # InitProducerId: CONCURRENT_TRANSACTIONS, it waits in flight
    init = next(k for k, m in enumerate(waiting.bag) if m.kind == "init")
    assert ("deliver", init) not in model.actions(waiting) and ("txn-timeout",) not in model.actions(s)
    failed = model.step(s, ("append-fail",))
    assert failed is not None and failed.coordinator.transit is None and failed.coordinator.meta.state == ONGOING
    assert failed.producers[0].phase == "ending" and failed.coordinator.record == start.coordinator.record
    assert [m.kind for m in failed.bag] == ["end"]  # refused (retriable): the client sends its EndTxn again
    s = _settled(model, failed)
    assert s.coordinator.meta.state == PREPARE_COMMIT and s.history.committed == {(0, 1)}
    epoch = start.coordinator.meta.epoch
    fenced = model.step(start, ("txn-timeout",))
    assert fenced is not None and fenced.coordinator.transit is not None
    fenced = model.step(fenced, ("append-fail",))
    assert fenced is not None and fenced.coordinator.meta.state == ONGOING
    assert fenced.coordinator.meta.has_failed_epoch_fence and fenced.coordinator.meta.epoch == epoch + 1
    again = _deliver_first(model, _steps(model, fenced, [("init", 1)]), "init")  # fences again from Ongoing: the
    assert again.coordinator.transit is not None  # epoch is not bumped twice
    assert again.coordinator.transit.state == PREPARE_ABORT and again.coordinator.transit.last_epoch == epoch + 1


def test_today_is_clean_with_failed_appends() -> None:
    r = _run(TransactionsModel(Config(txns=1, append_failures=1)))
    assert r.complete and not r.counterexamples


def test_liveness_fails_for_a_stuck_or_hanging_transaction_and_holds_today() -> None:
    for name, prop in (("retried-marker-refused", "txn.ends"), ("unverified-hanging", "txn.lso-reaches-end")):
        m = TransactionsModel.of_variant(VARIANTS[name])
        r = check_liveness(m, m.liveness())
        assert r.violations[prop] is not None, name
    m = TransactionsModel(Config(txns=1))
    r = check_liveness(m, m.liveness())
    assert r.complete and all(v is None for v in r.violations.values())


def test_the_reference_port_loses_nothing_frozen_and_thawed() -> None:
    """Every reachable partition and coordinator metadata at a small bound, thawed into Kafka's code and frozen
    again, is the same value (the model's state is all the references hold)."""
    model = TransactionsModel(Config(txns=2, partitions=1))
    k: ReferenceKafka = model.reference
    seen: list[State] = []
    todo = model.initial_states()
    while todo and len(seen) < 400:
        s = todo.pop()
        seen.append(s)
        todo += [t for a in model.actions(s) if (t := model.step(s, a)) is not None]
    for s in seen:
        for part in s.parts:
            assert k.frozen_partition(k.partition(part), part, False) == part
        assert k.frozen_metadata(k.metadata(s.coordinator.meta)) == s.coordinator.meta


def test_a_users_rules_and_bad_bounds() -> None:
    mine = replace(Rules.current(), name="tv1-verified", transaction_version=tv1_epoch_per_producer)
    r = _run(TransactionsModel(Config(txns=1), mine))
    assert r.complete and not r.counterexamples  # KIP-890 part 1 alone closes the hanging transaction
    assert Rules.current().rules() == {"transaction_version": "tv2_epoch_per_transaction",
                                       "verification": "verify_transactional_writes",
                                       "marker_epoch": "marker_epoch_by_transaction_version",
                                       "retried_marker": "retried_marker_written",
                                       "client_epoch_bump": "bump_epoch_after_abortable_error"}
    with pytest.raises(ValueError, match="instances must be between 1 and 2"):
        Config(instances=3)


def test_the_hypothesis_machine_finds_a_variant_and_today_breaks_nothing() -> None:
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.stateful import run_state_machine_as_test

    from kcheck.machines import ModelViolation, TransactionsMachine

    quick = settings(max_examples=200, stateful_step_count=20, deadline=None, database=None, derandomize=True,
                     suppress_health_check=list(HealthCheck), phases=[Phase.generate])  # found, not shrunk
    with pytest.raises(ModelViolation) as found:
        run_state_machine_as_test(TransactionsMachine.for_variant("unverified-hanging"), settings=quick)
    assert found.value.invariant in INVARIANT_IDS
    run_state_machine_as_test(TransactionsMachine, settings=settings(quick, max_examples=30))


def test_the_cli_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from kcheck.cli import main

    assert main(["transactions", "exhaust", "--rules", "unverified-hanging"]) == 1
    assert f"VIOLATED txn.no-hanging in {SCENARIO_STEPS['unverified-hanging']} steps" in capsys.readouterr().out
    assert main(["transactions", "exhaust", "--partitions", "1", "--txns", "1"]) == 0
    assert "in every reachable state" in capsys.readouterr().out
    assert main(["transactions", "exhaust", "--max-states", "5"]) == 4
    capsys.readouterr()
    assert main(["transactions", "liveness", "--rules", "retried-marker-refused", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["properties"]["txn.ends"]["verdict"] == "violated"
    assert main(["transactions", "rules", "--rules", "tv1-late-write", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["decisions"]["transaction_version"] == "tv1_epoch_per_producer"
    assert main(["transactions", "variants", "--json"]) == 0
    assert [v["name"] for v in json.loads(capsys.readouterr().out)] == list(VARIANTS)
    assert main(["transactions", "exhaust", "--append-failures", "3"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("kcheck: error: --append-failures: append_failures must be")
    assert main(["transactions", "exhaust", "--rules", "nope"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("kcheck: error: --rules: unknown rules 'nope'")


# TransactionCoordinator.scala's table of EndTxn's answers from Empty, CompleteAbort and CompleteCommit (KAFKA-14563,
# 4.0), by the request's epoch: the coordinator's (current) or one below it (retry). PF = PRODUCER_FENCED, ITS =
# INVALID_TXN_STATE, NONE = answered at once, EB = PrepareAbort/PrepareCommit written (with TV2 the epoch bumped).
_END_TXN_TABLE = {  # (tv, state): (abort retry, abort current, commit retry, commit current)
    (1, COMPLETE_ABORT): ("PF", "NONE", "PF", "ITS"),
    (1, COMPLETE_COMMIT): ("PF", "ITS", "PF", "NONE"),
    (2, EMPTY): ("PF", "EB", "PF", "ITS"),
    (2, COMPLETE_ABORT): ("NONE", "EB", "ITS", "ITS"),
    (2, COMPLETE_COMMIT): ("ITS", "EB", "NONE", "ITS"),
}
_SHORT = {"PRODUCER_FENCED": "PF", "INVALID_TXN_STATE": "ITS", "NONE": "NONE", "PREPARE": "EB"}


@pytest.mark.parametrize("tv, state", list(_END_TXN_TABLE))
def test_end_txn_is_answered_as_the_coordinators_table_says(tv: int, state: int) -> None:
    check = end_txn_tv2 if tv == 2 else end_txn_tv1
    meta = Meta(epoch=5, state=state, tv=tv)
    got = []
    for commit in (False, True):
        for epoch in (4, 5):
            verdict = check(meta, False, Msg("end", -1, meta.producer_id, epoch, (0, 1), commit=commit, tv=tv))
            got.append(_SHORT[str(verdict)])
    assert tuple(got) == _END_TXN_TABLE[(tv, state)]


def test_end_txn_waits_while_a_transition_is_under_way_and_a_tv2_retry_waits_for_the_completion() -> None:
    """CONCURRENT_TRANSACTIONS (None: the client retries later) while the metadata has a pending state, and for an
    EndTxn of the result being written (TV2: the retry at the epoch below, the prepare having bumped it); the other
    result is INVALID_TXN_STATE; a TV2 request at the prepared epoch itself is fenced (only a retry can carry it)."""
    prepared = Meta(epoch=5, state=PREPARE_COMMIT, tv=2)
    end = Msg("end", -1, prepared.producer_id, 4, (0, 1), commit=True, tv=2)
    assert end_txn_tv2(prepared, False, end) is None
    assert end_txn_tv2(prepared, False, replace(end, commit=False)) == "INVALID_TXN_STATE"
    assert end_txn_tv2(prepared, False, replace(end, epoch=5)) == "PRODUCER_FENCED"
    assert end_txn_tv2(Meta(epoch=5, state=ONGOING, tv=2), True, replace(end, epoch=5)) is None
    assert end_txn_tv1(Meta(epoch=5, state=ONGOING, tv=1), True, replace(end, epoch=4, tv=1)) == "PRODUCER_FENCED"
    assert end_txn_tv1(Meta(epoch=5, state=ONGOING, tv=1), False, replace(end, epoch=5, tv=1)) == "PREPARE"


def test_kip_360_the_tv1_clients_epoch_bump_fences_the_late_write() -> None:
    """KIP-360: after its produce timed out, the TV1 client aborts and then bumps its epoch with InitProducerId
    (TransactionManager's epochBumpRequired), so the aborted transaction's late write is fenced at the leader and
    the next transaction is clean: `tv1-late-write` needs a client that keeps its epoch."""
    settings = Config(**dict(VARIANTS["tv1-late-write"].settings))
    bumping = replace(Rules.current(), name="tv1", transaction_version=tv1_epoch_per_producer)
    model = TransactionsModel(settings, bumping)
    s = _replay(model, [("init", 0), ("write", 0, 0), ("timeout", 0, 0), ("abort", 0)])
    epoch = s.producers[0].epoch
    assert s.producers[0].phase == "bump" and ("write", 0, 0) not in model.actions(s)
    markers = [k for k, m in enumerate(s.bag) if m.kind == "marker"]
    waiting = _steps(model, s, [("init", 0)])  # CONCURRENT_TRANSACTIONS until the abort is complete: it waits
    assert ("deliver", next(k for k, m in enumerate(waiting.bag) if m.kind == "init")) not in model.actions(waiting)
    s = _replay_from(model, s, [("deliver", k) for k in markers] + [("init", 0)])
    assert s.producers[0].phase == "ready" and s.producers[0].epoch == s.coordinator.meta.epoch == epoch + 1
    s = _replay_from(model, s, [("write", 0, 0)])
    late = next(k for k, m in enumerate(s.bag) if m.tag == (0, 1))
    s = _replay_from(model, s, [("deliver", late)])
    assert [b.marker for b in s.parts[0].batches] == [0]  # the abort marker alone: the late write refused
    assert not _violated(model, s)
    r = _run(model)
    assert r.complete and not r.counterexamples


def test_kcheck_check_runs_the_transactions_rows_and_fails_on_one_not_as_expected() -> None:
    """`kcheck check`'s transactions rows (`invariants/transactions_rows.py`): each variant breaks a property it
    names, today's rules are complete and clean at its setting; reported in --json, JUnit and HTML, and a row not
    as expected fails the job."""
    import json

    from kcheck import html_report, junit, report
    from kcheck.check import CheckResult, failed_any
    from kcheck.invariants.transactions_rows import run_transactions_rows

    rows = run_transactions_rows()
    assert [r.rules for r in rows] == [x for name in VARIANTS for x in (name, "current")]
    assert all(r.ok for r in rows), [r for r in rows if not r.ok]
    by_rules = {r.rules: r for r in rows if r.expect_violation}
    assert {name: by_rules[name].trace_steps for name in VARIANTS} == SCENARIO_STEPS
    good = CheckResult(1, 1, [], transactions=rows)
    assert not failed_any(good)
    data = json.loads(report.check_json(good))
    assert [r["rules"] for r in data["transactions_models"]] == [r.rules for r in rows]
    assert any(s.name == "kcheck check: transactions model" for s in junit.check_suites(good))
    assert "Transactions model" in html_report.check_html(good, "OK", False)
    bad = CheckResult(1, 1, [], transactions=[replace(rows[1], violated=("txn.end-own",))])  # today's broke
    assert failed_any(bad)


def test_a_tv2_endtxn_retried_after_its_answer_was_lost_is_answered_with_the_bumped_epoch() -> None:
    """KIP-890 part 2's retry rule: the EndTxn whose answer was lost is retried; while the commit's markers are sent
    it waits (CONCURRENT_TRANSACTIONS), once CompleteCommit is written it is one epoch below the coordinator's, a
    retry, answered NONE with the epoch the commit bumped, which the client takes."""
    model = TransactionsModel(Config(txns=1, partitions=1, duplicates=1))
    s = _replay(model, [("init", 0), ("write", 0, 0), ("deliver", 0)])
    epoch = s.producers[0].epoch
    s = _steps(model, s, [("commit", 0), ("deliver-lost", 0), ("append",)])  # PrepareCommit: the answer lost
    retry = next(k for k, m in enumerate(s.bag) if m.kind == "end")
    assert ("deliver", retry) not in model.actions(s) and s.producers[0].phase == "ending"
    s = _deliver_first(model, s, "marker")
    s = _steps(model, s, [("append",)])
    assert s.coordinator.meta.state == COMPLETE_COMMIT and s.coordinator.meta.epoch == epoch + 1
    s = _deliver_first(model, s, "end")
    assert [(m.kind, m.error, m.epoch) for m in s.bag] == [("ended", "NONE", epoch + 1)]
    s = _deliver_first(model, s, "ended")
    assert s.producers[0].phase == "ready" and s.producers[0].epoch == epoch + 1 and not _violated(model, s)


def test_init_producer_id_is_answered_as_the_coordinators_code_says() -> None:
    """`prepareInitProducerIdTransit` (3.9 and 4.4 alike): a transition under way first (CONCURRENT_TRANSACTIONS,
    None); an expected producer id that is neither the coordinator's nor the previous one with an exhausted epoch is
    fenced (unless the metadata is new); a prepared transaction waits; Ongoing is fenced and aborted whatever epoch
    the request expects; Empty or a completed transaction goes on to `prepareIncrementProducerEpoch`."""
    first = Msg("init", -1, NO_PRODUCER_ID, NO_EPOCH, (0, 0))
    bump = Msg("init", -1, 1000, 3, (0, 1))
    assert init_producer_id(Meta(epoch=5, state=ONGOING), True, first) is None
    assert init_producer_id(Meta(epoch=5, state=COMPLETE_ABORT), False, replace(bump, producer_id=7)) == \
        "PRODUCER_FENCED"
    assert init_producer_id(Meta(state=EMPTY), False, replace(bump, producer_id=7)) == "PREPARE"  # new metadata
    rotated = Meta(producer_id=1001, prev_producer_id=1000, epoch=0, state=COMPLETE_COMMIT)
    assert init_producer_id(rotated, False, bump) == "PRODUCER_FENCED"
    assert init_producer_id(rotated, False, replace(bump, epoch=32_766)) == "PREPARE"
    for state in (PREPARE_COMMIT, PREPARE_ABORT):
        assert init_producer_id(Meta(epoch=5, state=state), False, bump) is None
    assert init_producer_id(Meta(epoch=5, state=ONGOING), False, bump) == "FENCE"  # epoch 3 is stale: fenced anyway
    for state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT):
        assert init_producer_id(Meta(epoch=5, state=state), False, first) == "PREPARE"


def test_init_producer_id_retried_after_its_answer_was_lost() -> None:
    """InitProducerId is a message: with its answer lost the client sends it again. The first InitProducerId
    expects no epoch, so its retry bumps the epoch once more and the client takes the second; KIP-360's bump
    expects the epoch it had, so its retry finds that epoch as the coordinator's last one and gets the same epoch
    again (`prepareIncrementProducerEpoch`), without a second bump."""
    model = TransactionsModel(Config(txns=1, partitions=1, duplicates=1, client_timeouts=0))
    s = _steps(model, model.initial_states()[0], [("init", 0), ("deliver-lost", 0), ("append",)])
    assert [m.kind for m in s.bag] == ["init"] and s.coordinator.meta.epoch == 0 and s.producers[0].init
    s = _settled(model, s)
    assert s.producers[0].phase == "ready" and s.producers[0].epoch == s.coordinator.meta.epoch == 1
    assert not s.producers[0].init and not _violated(model, s)
    tv1 = TransactionsModel(Config(txns=1, partitions=1, duplicates=1),
                            replace(Rules.current(), name="tv1", transaction_version=tv1_epoch_per_producer))
    s = _replay(tv1, [("init", 0), ("write", 0, 0), ("timeout", 0, 0), ("abort", 0)])
    s = _replay_from(tv1, s, [("deliver", next(k for k, m in enumerate(s.bag) if m.kind == "marker"))])
    epoch = s.producers[0].epoch
    assert s.producers[0].phase == "bump" and s.coordinator.meta.state == COMPLETE_ABORT
    s = _steps(tv1, s, [("init", 0)])
    s = _steps(tv1, s, [("deliver-lost", next(k for k, m in enumerate(s.bag) if m.kind == "init")), ("append",)])
    assert s.coordinator.meta.epoch == epoch + 1 and s.coordinator.meta.last_epoch == epoch
    assert s.producers[0].epoch == epoch  # the answer lost: the client still has the old epoch and sends it again
    s = _settled(tv1, s)
    assert s.producers[0].phase == "ready" and s.producers[0].epoch == s.coordinator.meta.epoch == epoch + 1


def test_a_late_copy_of_init_producer_id_fences_the_transaction_it_finds() -> None:
    """A copy of the first InitProducerId, delivered after the client has its epoch and a transaction Ongoing, is
    handled as a new instance's (it expects no epoch): the coordinator fences the epoch and aborts the transaction
    (`prepareFenceProducerEpoch`); the copy's CONCURRENT_TRANSACTIONS goes to no one (the client does not wait for
    it), and the client's EndTxn at its old epoch is fenced (PRODUCER_FENCED, fatal). Nothing is read that the
    coordinator did not commit."""
    model = TransactionsModel(Config(txns=1, partitions=1, duplicates=1, client_timeouts=0))
    s = _steps(model, model.initial_states()[0], [("init", 0), ("duplicate", 0)])
    s = _deliver_first(model, _steps(model, s, [("deliver", 0), ("append",)]), "inited")
    assert s.producers[0].phase == "ready" and [m.kind for m in s.bag] == ["init"]
    epoch = s.producers[0].epoch
    s = _deliver_first(model, _steps(model, s, [("write", 0, 0)]), "produce")
    s = _deliver_first(model, _steps(model, _deliver_first(model, s, "verify"), [("append",)]), "verified")
    assert s.coordinator.meta.state == ONGOING and len(s.parts[0].batches) == 1
    s = _deliver_first(model, s, "init")  # the late copy: the epoch fenced, the abort on its way
    assert s.coordinator.transit is not None and s.coordinator.transit.state == PREPARE_ABORT
    assert not any(m.kind == "init" for m in s.bag)
    s = _settled(model, _steps(model, s, [("commit", 0)]))  # its EndTxn waits while the abort completes
    assert s.producers[0].phase == "ending" and s.history.aborted == {(0, 1)}
    s = _replay_from(model, s, [("deliver", next(k for k, m in enumerate(s.bag) if m.kind == "marker"))])
    assert s.coordinator.meta.state == COMPLETE_ABORT and s.coordinator.meta.epoch == epoch + 2
    assert s.producers[0].phase == "fenced" and s.history.committed == set()
    assert not _violated(model, s) and read_committed(model.reference, s.parts[0])[1] == []


@pytest.mark.parametrize("tv", [1, 2])
def test_a_verification_copied_or_its_answer_lost(tv: int) -> None:
    """The leader's AddPartitionsToTxn (verification) within the duplicates budget: with its answer lost the leader
    fails the produce with a retriable error (AddPartitionsToTxnManager's NETWORK_EXCEPTION) and the client sends it
    again; TV2's lost request still added the partition, so the retry is verified at once and appended once. A
    copied verification is answered twice; the second answer finds the batch a duplicate."""
    rules = Rules.current() if tv == 2 else replace(Rules.current(), name="tv1",
                                                    transaction_version=tv1_epoch_per_producer)
    model = TransactionsModel(Config(txns=1, partitions=1, duplicates=1, client_timeouts=0), rules)
    start = _deliver_first(model, _replay(model, [("init", 0), ("write", 0, 0)]), "produce")
    k = next(k for k, m in enumerate(start.bag) if m.kind == "verify")
    s = _steps(model, start, [("deliver-lost", k)] + ([("append",)] if tv == 2 else []))
    assert [m.kind for m in s.bag] == ["produce"] and s.coordinator.meta.partitions == {0}
    s = _replay_from(model, s, [("deliver", 0)])
    assert len(s.parts[0].batches) == 1 and not s.producers[0].waiting and not _violated(model, s)
    s = _settled(model, _steps(model, start, [("duplicate", k)]))  # both copies answered, one batch appended
    assert len(s.parts[0].batches) == 1 and not s.bag and not _violated(model, s)
    s = _settled(model, _steps(model, s, [("commit", 0)]))
    s = _replay_from(model, s, [("deliver", 0)])
    assert read_committed(model.reference, s.parts[0])[1] == [0] and not _violated(model, s)
