"""The transactions model (`kcheck.model.transactions`, `kcheck.invariants.transactions_model`).

Each historical rule breaks the property its JIRA names in an exhaustive search, with the shortest trace the JIRA's
scenario needs, and today's rules (Kafka 4.4) are complete and clean at the same bounds and at the default ones;
the scenarios of KAFKA-14402 and KAFKA-17754 replayed step by step; liveness (a prepared transaction completes, the
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
from kcheck.model.transactions.rules import tv1_epoch_per_producer
from kcheck.model.transactions.state import COMPLETE_ABORT, ONGOING, PREPARE_ABORT, PREPARE_COMMIT, State
from kcheck.model.visited import SearchResult

# The shortest run of each JIRA's scenario, counted by hand from it (one step per request, delivery or append to
# __transaction_state; the coordinator answers a request once its record is written):
SCENARIO_STEPS = {
    # init and its record, write (AddPartitionsToTxn, its record; the produce in flight), the client times out,
    # abort and its PrepareAbort record (a marker in flight), the marker lands, the late produce lands after it
    "unverified-hanging": 9,
    # the same abort (7 steps), its marker lands, CompleteAbort written, the next transaction adds the partition
    # again (same epoch; 2 steps), the late produce reaches the leader (a verification entry, the coordinator asked),
    # the coordinator answers yes, the leader appends it, the new write lands (a transaction is open: no
    # verification), commit and its record, its marker lands: the aborted write is committed with the next one
    "tv1-late-write": 18,
    # init and its record, write (AddPartitionsToTxn, its record), it lands (reaches the leader, verified, appended:
    # 3 steps), commit and its record, the marker duplicated, one copy lands, CompleteCommit written, the next write
    # (same epoch; 2 steps), it lands (3 steps), the stale copy lands on it
    "tv1-delayed-marker": 18,
    # init and its record, write, the write lands (reaches the leader, the leader's AddPartitionsToTxn, its record,
    # the answer and the append: 4 steps), commit and its record (epoch bumped), the next write, the commit marker
    # duplicated, one copy lands, CompleteCommit written, the next write lands (4 steps), the stale copy lands on it
    "marker-epoch-not-below": 18,
    # init and its record, write, the write lands (4 steps), commit and its record, the marker lands with its answer
    # lost, its retry is refused
    "retried-marker-refused": 11,
    # unverified-hanging's trace (the second instance idle); the fenced write itself: 12 steps, the first instance's
    # transaction aborted and completed, the second's InitProducerId (2 steps, no marker: the partition never sees
    # the new epoch), the late produce lands
    "unverified-fenced-write": 9,
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
    """Two transactions over two partitions, a duplicate or lost answer, a client time-out (about a minute)."""
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
    """The coordinator's appends to __transaction_state and the leaders' verifications (the request to the
    coordinator, its answer) carried out, as long as one is in flight."""
    while True:
        ks = [k for k, m in enumerate(s.bag) if m.kind in ("verify", "verified")]
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
    s = _deliver_first(model, _steps(model, s, [("timeout", 0, 0), ("abort", 0), ("append",)]), "marker")
    assert not s.parts[0].verification and [b.marker for b in s.parts[0].batches] == [0]
    s = _deliver_first(model, s, "verified")
    assert len(s.parts[0].batches) == 1 and not s.parts[0].ongoing and s.producers[0].phase == "ready"
    assert not _violated(model, s)


def test_a_request_meanwhile_waits_and_a_failed_append_clears_the_pending_state() -> None:
    """TransactionCoordinator: while a transit is being appended (`pendingTransitionInProgress`) InitProducerId gets
    CONCURRENT_TRANSACTIONS and abortTimedOutTransactions skips the id; a failed append clears the pending state
    (TransactionStateManager.appendTransactionToLog) and the client retries its EndTxn; a failed epoch fence sets
    `hasFailedEpochFence`, so the next fence keeps the epoch it bumped."""
    model = TransactionsModel(Config(instances=2, txns=1, partitions=1, txn_timeouts=1, append_failures=2))
    start = _replay(model, [("init", 0), ("write", 0, 0), ("deliver", 0)])  # TV2: the leader added the partition
    assert start.coordinator.meta.state == ONGOING and start.coordinator.transit is None
    s = model.step(start, ("commit", 0))
    assert s is not None and s.coordinator.transit is not None
    assert s.coordinator.transit.state == PREPARE_COMMIT and s.coordinator.meta.state == ONGOING
    assert ("init", 1) not in model.actions(s) and ("txn-timeout",) not in model.actions(s)
    failed = model.step(s, ("append-fail",))
    assert failed is not None and failed.coordinator.transit is None and failed.coordinator.meta.state == ONGOING
    assert failed.producers[0].phase == "txn" and failed.coordinator.record == start.coordinator.record
    s = _replay_from(model, failed, [("commit", 0)])
    assert s.coordinator.meta.state == PREPARE_COMMIT and s.history.committed == {(0, 1)}
    epoch = start.coordinator.meta.epoch
    fenced = model.step(start, ("txn-timeout",))
    assert fenced is not None and fenced.coordinator.transit is not None
    fenced = model.step(fenced, ("append-fail",))
    assert fenced is not None and fenced.coordinator.meta.state == ONGOING
    assert fenced.coordinator.meta.has_failed_epoch_fence and fenced.coordinator.meta.epoch == epoch + 1
    again = model.step(fenced, ("init", 1))  # fences again from Ongoing: the epoch is not bumped twice
    assert again is not None and again.coordinator.transit is not None
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
                                       "retried_marker": "retried_marker_written"}
    with pytest.raises(ValueError, match="instances must be between 1 and 2"):
        Config(instances=3)


def test_the_hypothesis_machine_finds_a_variant_and_today_breaks_nothing() -> None:
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.stateful import run_state_machine_as_test

    from kcheck.machines import ModelViolation, TransactionsMachine

    quick = settings(max_examples=200, stateful_step_count=20, deadline=None, database=None, derandomize=True,
                     suppress_health_check=list(HealthCheck), phases=[Phase.generate])  # found, not shrunk
    with pytest.raises(ModelViolation) as found:
        run_state_machine_as_test(TransactionsMachine.for_variant("unverified-fenced-write"), settings=quick)
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
