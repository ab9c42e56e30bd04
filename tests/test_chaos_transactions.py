"""Transactions under faults (kcheck.cluster.txn_chaos): the checks on constructed histories, each able to fail, and
one short campaign on the session cluster (`kafka_cluster`, the default release: transaction version 2 on 4.x) with a
partition leader and the transaction coordinator's broker killed, which must find no anomaly."""

from __future__ import annotations

import uuid

import pytest

from kcheck.cluster.txn_chaos import (
    ANOMALY_KINDS,
    TxnCampaign,
    TxnSettings,
    check,
    side_by_side,
    transaction_of,
    value_of,
)
from kcheck.cluster.txn_chaos import Txn as T
from kcheck.cluster.txn_chaos import TxnRead as R


def txn(number: int, outcome: str, intent: str = "commit", records: int = 2, partitions: int = 2) -> T:
    values = tuple(value_of(0, 0, number, p, i) for p in range(partitions) for i in range(records))
    return T(0, 0, number, values, intent, outcome, float(number), float(number) + 0.5)


def final_reads(*txns: T, skip: int = 0, start: int = 0) -> list[R]:
    """Each transaction's values in the final read, at increasing offsets per partition, `skip` of them left out."""
    offsets = {0: start, 1: start}
    out = []
    for x in txns:
        for v in x.values[skip:]:
            p = int(v.split("-")[4])
            out.append(R(9.0, p, offsets[p], v, final=True))
            offsets[p] += 1
        for p in offsets:  # a commit or abort marker takes an offset
            offsets[p] += 1
    return out


def counts(v) -> dict[str, int]:
    return {k: len(v.anomalies[k]) for k in ANOMALY_KINDS}


NONE = dict.fromkeys(ANOMALY_KINDS, 0)


def test_values_name_their_transaction():
    assert value_of(3, 1, 42, 0, 2) == "txn-3-1-00042-0-2"
    assert transaction_of("txn-3-1-00042-0-2") == (3, 1, 42)
    assert transaction_of("plain-0-2-000123") is None
    assert transaction_of("txn-3-1-0004²-0-2") is None  # ASCII digits only


def test_a_clean_history_passes():
    a, b = txn(0, "committed"), txn(1, "aborted", "abort")
    v = check([a, b], final_reads(a), final_complete=True)
    assert counts(v) == NONE and v.ok
    assert v.outcomes == {"committed": 1, "aborted": 1, "unknown": 0}


def test_a_record_of_an_aborted_transaction_read_is_an_aborted_read_live_or_final():
    a, b = txn(0, "committed"), txn(1, "aborted", "abort")
    live = [R(1.2, 0, 5, b.values[0])]
    v = check([a, b], final_reads(a) + live, final_complete=True)
    assert counts(v) == {**NONE, "aborted-read": 1} and not v.ok
    v = check([a, b], final_reads(a, b), final_complete=True)
    assert counts(v)["aborted-read"] == len(b.values)


def test_a_committed_transaction_missing_from_the_final_read_is_a_lost_write():
    a, b = txn(0, "committed"), txn(1, "committed")
    v = check([a, b], final_reads(a), final_complete=True)
    assert counts(v) == {**NONE, "lost-write": 1}
    assert "4 of 4 records" in v.anomalies["lost-write"][0]


def test_a_commit_the_client_reported_despite_a_failed_send_is_named_beside_the_lost_write():
    # kafka-python 3.0.12 on 4.4.0: commit_transaction() returned after 3 of 6 sends failed with
    # InvalidProducerEpochError, and none of the records was in the final read
    a = txn(0, "committed")
    b = T(0, 0, 1, txn(1, "committed").values, "commit", "committed", 6.2, 30.1, "",
          ("InvalidProducerEpochError",) * 2 + ("0:160", "0:161", "1:160", "1:161"))
    v = check([a, b], final_reads(a), final_complete=True)
    assert counts(v) == {**NONE, "lost-write": 1}
    assert len(v.commit_after_failed_send) == 1 and "InvalidProducerEpochError" in v.commit_after_failed_send[0]


def test_part_of_a_transaction_in_the_final_read_is_torn_and_a_committed_one_also_lost():
    a, b = txn(0, "committed"), txn(1, "unknown")
    v = check([a, b], final_reads(a, skip=1) + final_reads(b, skip=3, start=10), final_complete=True)
    assert counts(v) == {**NONE, "lost-write": 2, "torn-transaction": 2}
    assert v.resolved == {"committed": 1, "aborted": 0}


def test_an_unknown_outcome_is_resolved_by_the_reads_and_never_an_aborted_read():
    a, b, c = txn(0, "committed"), txn(1, "unknown"), txn(2, "unknown")
    v = check([a, b, c], final_reads(a, b), final_complete=True)
    assert counts(v) == NONE and v.resolved == {"committed": 1, "aborted": 1}
    # read live, so committed: then missing from the final read is a lost write
    v = check([a, c], final_reads(a) + [R(3.0, 0, 9, c.values[0])], final_complete=True)
    assert counts(v) == {**NONE, "lost-write": 1}


def test_a_record_read_at_two_offsets_is_a_duplicate():
    a = txn(0, "committed")
    reads = final_reads(a)
    v = check([a], [*reads, R(2.0, 0, 0, a.values[0])], final_complete=True)
    assert counts(v) == NONE  # the same offset read again is no duplicate
    v = check([a], [*reads, R(2.0, 0, 7, a.values[0])], final_complete=True)
    assert counts(v) == {**NONE, "duplicate": 1}


def test_an_incomplete_final_read_finds_no_lost_write_and_is_not_ok():
    a = txn(0, "committed")
    v = check([a], [], final_complete=False)
    assert counts(v) == NONE and not v.ok


@pytest.mark.kafka
@pytest.mark.cluster
def test_transactions_survive_a_leader_and_a_coordinator_kill(cluster):
    s = TxnSettings(topic=f"kcheck-txn-{uuid.uuid4().hex[:8]}", duration=16.0, producers=2, records=2,
                    kill_leader_at=3.0, kill_coordinator_at=9.0, down=2.0)
    o = TxnCampaign(cluster, s, say=lambda line: None).run()
    v = o.verdict
    assert {k: v.anomalies[k] for k in ANOMALY_KINDS} == {k: [] for k in ANOMALY_KINDS}
    assert v.final_complete and v.ok
    assert [f.role for f in o.history.faults if f.kind == "kill"] == ["leader", "coordinator"]
    assert v.outcomes["committed"] > 0 and v.outcomes["aborted"] > 0
    assert sum(r.final for r in o.history.reads) > 0
    if int(cluster.version.split(".")[0]) >= 4:
        assert o.transaction_version == 2  # 4.x formats with transaction.version 2 (KIP-890)
    assert side_by_side([o])[0] == ["release", cluster.version]
