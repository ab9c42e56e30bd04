"""The request model (`kcheck.model.request`, `kcheck.invariants.request_model`, `request_rows`).

Each historical rule breaks the property its JIRA names in an exhaustive search and today's rules are clean and
complete at the same bounds; the findings Kafka does not promise are reached; the model's producer-state rule agrees
with `kcheck.reference.producer_state` (bit-exact against Kafka's jars) on every short history of small inputs; a
user's rules (`dataclasses.replace` of `Rules.current()`) run on the same engines.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from kcheck.invariants.request_model import FINDINGS, RequestModel
from kcheck.invariants.request_rows import finding_rows, variant_rows
from kcheck.model.request import VARIANTS, Config, Rules
from kcheck.model.request.rules import add_batch, analyze_producer_state, retain_one
from kcheck.model.request.state import INT_MAX, INVALID_EPOCH, OUT_OF_ORDER
from kcheck.model.search import exhaust, random_search
from kcheck.reference.producer_state import PartitionLog


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_historical_rule_breaks_its_property_and_today_is_clean(name: str) -> None:
    old, now = variant_rows(name)
    if VARIANTS[name].violates:
        assert old.violated and set(old.violated) <= set(VARIANTS[name].violates), old
        assert old.trace_steps > 0
    else:  # a client profile: clean at its setting
        assert old.complete and not old.violated, old
    assert now.complete and not now.violated, now


def test_a_bump_that_rewrites_every_partition_writes_a_batch_twice() -> None:
    """KAFKA-12152's blind alternative: partition 1's expired, retried batch leaves its sequence unresolved and asks
    for a bump; the bump renumbers partition 0's batch, which the broker already holds after a dropped connection,
    and its retry under the new epoch is appended again. Today partition 0 keeps its epoch until its batch completes,
    so the retry is answered as a duplicate."""
    r = exhaust(RequestModel(Config(**VARIANTS["bump-rewrites-every-partition"].settings),
                             VARIANTS["bump-rewrites-every-partition"].rules))
    cx = r.counterexample
    assert cx is not None and cx.invariant == "produce.idem-no-duplicate"
    actions = [a for a, _ in cx.steps]
    assert {"drop 1", "expire-in-flight 1", "resolve"} <= set(actions)  # the loop that resolves bumps at once
    last = cx.steps[-1][1]
    copies = [last.records[rid - 1] for _, rid in sorted(last.rep.history.committed)]
    b0 = [(epoch, seq) for batch, epoch, seq in copies if batch == 0]
    assert b0 == [(0, 0), (1, 0)]  # the same batch under both epochs


def test_a_late_success_under_sequence_keys_untracks_the_new_epochs_batch() -> None:
    """KAFKA-13794: the late success of a batch that delivery.timeout.ms failed reaches
    `TransactionManager.handleCompletedBatch`; keyed by sequence only, its removal takes the new epoch's batch with
    the same sequence out of the in-flight set."""
    v = VARIANTS["inflight-by-sequence"]
    cx = exhaust(RequestModel(Config(**v.settings), v.rules)).counterexample
    assert cx is not None and cx.invariant == "client.inflight-tracked" and len(cx.steps) - 1 == 13
    assert cx.steps[-1][0] == "deliver 1" and "epoch 1, sequence 0" in cx.message
    actions = [a for a, _ in cx.steps]
    assert actions.index("expire-in-flight") < actions.index("resolve")  # the loop that resolves bumps at once


def test_kafka_python_is_clean_at_the_default_bounds() -> None:
    """At the bounds where today's Java rules write a batch twice across an epoch bump, kafka-python's profile (one
    batch in flight per partition, no retry of an older epoch's batch) breaks no invariant."""
    from kcheck.invariants.request_rows import profile_rows

    (row,) = profile_rows()
    assert row.complete and not row.violated and row.ok, row


def test_the_findings_are_reached_with_todays_rules() -> None:
    rows = finding_rows()
    assert all(r.findings for r in rows), [r.detail for r in rows if not r.findings]  # no hard invariant broke
    found = {f for r in rows for f in r.violated}
    assert found == set(FINDINGS) | {"produce.idem-no-duplicate"}


# The reference answers ("A", first offset) for an append, ("D", first, last, timestamp) for a duplicate and
# ("E", Java exception) for an error; the model answers ("append", None), ("duplicate", cached) or ("error", code).
_ERRORS = {"OutOfOrderSequenceException": OUT_OF_ORDER, "InvalidProducerEpochException": INVALID_EPOCH}
_SEQS = (0, 1, 2, INT_MAX - 1, INT_MAX)


def _model_answer(rules: Rules, entry: object, epoch: int, seq: int, end: int) -> tuple[tuple[object, ...], object]:
    verdict, detail = analyze_producer_state(rules, entry, epoch, seq, seq, INT_MAX)  # type: ignore[arg-type]
    if verdict == "append":
        return ("A", end), add_batch(rules, entry, epoch, seq, seq, end, end)  # type: ignore[arg-type]
    if verdict == "duplicate":
        return ("D", detail[2], detail[3]), entry
    return ("E", detail), entry


def test_the_producer_state_rule_agrees_with_the_reference_on_every_short_history() -> None:
    rules = Rules.current()
    inputs = [(e, s) for e in (0, 1) for s in _SEQS]
    compared = 0
    for n in (1, 2, 3):
        for history in itertools.product(inputs, repeat=n):
            ref = PartitionLog(expiration_ms=10**9, now=0)
            entry, end = None, 0
            for epoch, seq in history:
                got = ref.append_data(1, epoch, seq, 1, False, 0)
                mine, entry = _model_answer(rules, entry, epoch, seq, end)
                want = got[:3] if got[0] == "D" else (got if got[0] == "A" else ("E", _ERRORS[got[1]]))
                assert mine == want, (history, mine, got)
                end += mine[0] == "A"
                compared += 1
    assert compared == 10 + 2 * 100 + 3 * 1000


def test_six_batches_in_the_cache_agree_with_the_reference() -> None:
    """The cache keeps the last five batches: the first of six is no longer a duplicate (it is out of order)."""
    rules = Rules.current()
    ref = PartitionLog(expiration_ms=10**9, now=0)
    entry, end = None, 0
    for seq in (*range(6), 0, 1):
        got = ref.append_data(1, 0, seq, 1, False, 0)
        mine, entry = _model_answer(rules, entry, 0, seq, end)
        want = got[:3] if got[0] == "D" else (got if got[0] == "A" else ("E", _ERRORS[got[1]]))
        assert mine == want, (seq, mine, got)
        end += mine[0] == "A"
    assert mine[0] == "D"  # sequence 1 is still cached


def test_a_users_rules_run_on_the_engines() -> None:
    mine = replace(Rules.current(), name="mine", retained=retain_one)
    cfg = Config(**VARIANTS["broker-cache-one-batch"].settings)
    r = exhaust(RequestModel(cfg, mine), max_states=50_000)
    assert r.counterexample is not None and r.counterexample.invariant == "produce.idem-no-duplicate"
    walk = random_search(RequestModel(Config(), Rules.current()), seed=1, programs=5, max_steps=15)
    assert walk.programs == 5


@pytest.mark.slow
def test_an_election_with_pipelined_requests_duplicates_across_an_epoch_bump() -> None:
    """The default bounds (two batches, two in flight, a retry, a dropped connection, an election) reach the
    trace where the new leader, without producer state, takes the second batch before the first (KAFKA-8710's
    any-sequence rule), the first's retry is out of order, and the epoch bump rewrites both: today's rules break
    `produce.idem-no-duplicate` there, while the broker's per-epoch deduplication holds over every state. Pinned so
    a change to the model that makes it vanish is seen; see docs/models/request.md."""
    r = exhaust(RequestModel(Config()), keep_going=True)
    assert r.covered and set(r.counterexamples) == {"produce.idem-no-duplicate"}
    cx = r.counterexamples["produce.idem-no-duplicate"]
    actions = [a for a, _ in cx.steps]
    assert any("move_leader" in a for a in actions) and "bump" in actions and len(actions) - 1 == 21
    last = cx.steps[-1][1]
    epochs = {last.records[rid - 1][1] for _, rid in last.rep.history.committed}
    assert epochs == {0, 1}  # one copy under each epoch


# ---- the command line ---------------------------------------------------------------------------------------------


def test_the_cli_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    from kcheck.cli import main

    assert main(["request", "exhaust", "--protocol", "metadata-without-epoch"]) == 1
    assert "VIOLATED meta.epoch-monotonic in 4 steps" in capsys.readouterr().out
    assert main(["request", "exhaust", "--batches", "1", "--elections", "0"]) == 0
    assert "in every reachable state" in capsys.readouterr().out
    assert main(["request", "exhaust", "--max-states", "5"]) == 4
    assert main(["request", "explore", "--programs", "3", "--steps", "5", "--json"]) == 4
    out = capsys.readouterr().out
    assert '"engine": "explore"' in out.split("\n{", 1)[-1] or '"engine": "explore"' in out


def test_the_cli_json_and_findings(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from kcheck.cli import main

    code = main(["request", "exhaust", "--no-idempotent", "--batches", "2", "--retries", "1", "--elections", "0",
                 "--findings", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["complete"] is False and not data["violations"]  # findings never fail
    assert {f["finding"] for f in data["findings"]} == {"finding.nonidem-duplicate", "finding.nonidem-reorder"}


def test_a_users_rules_module_on_the_cli(tmp_path, monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    from kcheck.cli import main

    (tmp_path / "my_request_rules.py").write_text(
        "from dataclasses import replace\n"
        "from kcheck.model.request import Rules\n"
        "from kcheck.model.request.rules import in_sequence_without_wrap\n"
        "mine = replace(Rules.current(), name='mine', in_sequence=in_sequence_without_wrap)\n"
        "def broken(last, nxt, seq_max):\n"
        "    raise RuntimeError('my rule failed')\n"
        "bad = replace(Rules.current(), name='bad', in_sequence=broken)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["request", "exhaust", "--protocol", "my_request_rules:mine", "--batches", "7", "--seq-max", "5",
                 "--max-in-flight", "1", "--retries", "0", "--drops", "0", "--elections", "0"]) == 1
    assert "produce.sequence-error-means-gap" in capsys.readouterr().out
    assert main(["request", "exhaust", "--protocol", "my_request_rules:bad", "--batches", "2", "--drops", "0",
                 "--elections", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "my rule failed" in err


def test_replay_a_json_trace_and_a_script(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from kcheck.cli import main

    assert main(["request", "exhaust", "--protocol", "bump-resets-only-triggering", "--json"]) == 1
    written = capsys.readouterr().out
    trace = tmp_path / "trace.json"
    trace.write_text(written)
    steps = json.loads(written)["violations"][0]["steps"]
    assert main(["request", "replay", str(trace), "--json"]) == 1
    run = json.loads(capsys.readouterr().out)
    assert run["rules"] == "bump-resets-only-triggering" and len(run["steps"]) == len(steps) + 1
    assert run["violations"] == [{"invariant": "client.new-epoch-starts-at-zero", "step": len(steps),
                                  "message": json.loads(written)["violations"][0]["message"]}]
    assert main(["request", "replay", str(trace), "--protocol", "current"]) == 0  # today's bump resets partition 0
    assert "OK: all 15 steps replayed" in capsys.readouterr().out
    script = tmp_path / "steps.txt"
    script.write_text("# one batch, acknowledged\nsend\ndrain\nserve 1\nreplication: fetch_round follower=2\n"
                      "replication: fetch_round follower=2  # the next fetch tells the leader\n"
                      "replication: advance_hw broker=1\ndeliver 1\n")
    assert main(["request", "replay", str(script), "--batches", "1"]) == 0
    out = capsys.readouterr().out
    assert "1: [b0(0,0)] hw 1 leader e1" in out
    script.write_text("send\ndeliver 1\n")
    assert main(["request", "replay", str(script)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kcheck: error: {script}:2: step 2 'deliver 1' is not possible here")


def test_liveness_rows_and_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    """The missed purgatory trigger, without the clock, leaves a request unanswered on a fair run; today's rules
    answer every request (complete)."""
    from kcheck.cli import main
    from kcheck.invariants.request_rows import liveness_rows

    old, now = liveness_rows()
    assert old.violated == ("liveness.request-answered",) and old.complete
    assert now.complete and not now.violated
    assert main(["request", "liveness", "--protocol", "purgatory-missed-trigger"]) == 1
    assert "liveness.request-answered: violated" in capsys.readouterr().out
    assert main(["request", "liveness", "--max-states", "3"]) == 4


def test_the_invariant_ids_are_listed_once() -> None:
    from kcheck.invariants.request_model import HARD

    ids = [i.id for i in RequestModel(findings=True).invariants()]
    assert ids == [*HARD, *FINDINGS] and len(set(ids)) == len(ids)


def test_kcheck_check_reports_the_rows_and_fails_on_one_not_as_expected() -> None:
    import json

    from kcheck import html_report, junit, report
    from kcheck.check import CheckResult, failed_any

    rows = variant_rows("metadata-without-epoch")
    good = CheckResult(1, 1, [], request=rows)
    assert not failed_any(good)
    data = json.loads(report.check_json(good))
    assert [r["rules"] for r in data["request_models"]] == ["metadata-without-epoch", "current"]
    assert any(s.name == "kcheck check: request model" for s in junit.check_suites(good))
    assert "Request path model" in html_report.check_html(good, "OK", False)
    bad = CheckResult(1, 1, [], request=[replace(rows[1], violated=("meta.epoch-monotonic",))])  # today's broke
    assert failed_any(bad)
