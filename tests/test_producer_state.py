"""The producer-state reference on the cases of Kafka's own ProducerStateManagerTest (storage/src/test/java/org/
apache/kafka/storage/internals/log/ProducerStateManagerTest.java) and UnifiedLog's duplicate handling, through the
steps a leader takes (`PartitionLog`); the differential against the jars is tests/test_kafka_producer_state.py."""

from __future__ import annotations

import pytest

from kcheck.reference.producer_state import (
    CLIENT,
    INT_MAX,
    NO_SEQUENCE,
    PartitionLog,
    ProducerStateError,
    decrement_sequence,
    increment_sequence,
)

PID = 1
DAY = 86_400_000  # producer.id.expiration.ms' default


def _log(expiration: int = DAY, now: int = 0, release: str | None = None) -> PartitionLog:
    from kcheck.reference.releases import profile

    return PartitionLog(expiration, now, profile(release))


def test_sequences_wrap_at_integer_max() -> None:
    """DefaultRecordBatch.incrementSequence / decrementSequence."""
    assert increment_sequence(INT_MAX, 1) == 0
    assert increment_sequence(INT_MAX - 1, 3) == 1
    assert decrement_sequence(0, 1) == INT_MAX
    assert decrement_sequence(9, 20) == INT_MAX - 10


def test_basic_id_mapping() -> None:
    """testBasicIdMapping: in sequence is accepted, a gap is not, a new epoch starts at 0, an old epoch is fenced;
    the same batch again is not an error on the leader but a duplicate (UnifiedLog checks it first)."""
    log = _log()
    assert log.append_data(PID, 0, 0, 1, False, 0) == ("A", 0)
    assert log.append_data(PID, 0, 1, 1, False, 0) == ("A", 1)
    assert log.append_data(PID, 0, 1, 1, False, 0) == ("D", 1, 1, 0)
    info = log.psm.prepare_update(PID, CLIENT)  # ProducerAppendInfo alone: the duplicate is out of order
    with pytest.raises(ProducerStateError, match="OutOfOrderSequenceException"):
        info.append_data_batch(0, 1, 1, 0, 2, 2, False)
    assert log.append_data(PID, 0, 5, 1, False, 0) == ("E", "OutOfOrderSequenceException")
    assert log.append_data(PID, 1, 0, 1, False, 0) == ("A", 2)
    assert log.append_data(PID, 0, 0, 1, False, 0) == ("E", "InvalidProducerEpochException")


def test_only_the_last_five_batches_are_duplicates() -> None:
    """ProducerStateEntry.NUM_BATCHES_TO_RETAIN: a retry of the sixth batch back is no longer recognised."""
    log = _log()
    for seq in range(6):
        log.append_data(PID, 0, seq, 1, False, 10 + seq)
    assert log.append_data(PID, 0, 1, 1, False, 99) == ("D", 1, 1, 11)
    assert log.append_data(PID, 0, 0, 1, False, 99) == ("E", "OutOfOrderSequenceException")


def test_marker_alone_needs_sequence_zero() -> None:
    """testAppendTxnMarkerWithNoProducerState."""
    log = _log()
    assert log.append_marker(PID, 2, 0, 0, 0) == ("A", 0)
    entry = log.psm.producers[PID]
    assert (entry.producer_epoch, entry.last_seq()) == (2, NO_SEQUENCE)
    assert log.append_data(PID, 0, 0, 1, False, 0) == ("E", "InvalidProducerEpochException")
    assert log.append_data(PID, 2, 17, 1, False, 0) == ("E", "OutOfOrderSequenceException")
    assert log.append_data(PID, 2, 0, 1, False, 0) == ("A", 1)


def test_wrap_around() -> None:
    """testProducerSequenceWrapAround and testProducerSequenceInvalidWrapAround."""
    log = _log()
    log.append_data(PID, 15, INT_MAX - 2, 3, False, 0)  # sequences MAX-2 .. MAX
    assert log.append_data(PID, 15, 0, 1, False, 0) == ("A", 3)
    log2 = _log()
    log2.append_data(PID, 15, INT_MAX, 1, False, 0)
    assert log2.append_data(PID, 15, 1, 1, False, 0) == ("E", "OutOfOrderSequenceException")


def test_marker_bumps_the_epoch_and_clears_the_batches() -> None:
    """testControlRecordBumpsProducerEpoch and testOutOfSequenceAfterControlRecordEpochBump."""
    log = _log()
    log.append_data(PID, 0, 0, 1, True, 0)
    log.append_data(PID, 0, 1, 1, True, 0)
    assert log.append_marker(PID, 1, 0, 0, 0) == ("A", 2)
    entry = log.psm.producers[PID]
    assert (entry.producer_epoch, entry.current_txn_first_offset, entry.last_seq()) == (1, None, NO_SEQUENCE)
    assert log.append_data(PID, 1, 2, 1, True, 0) == ("E", "OutOfOrderSequenceException")
    assert log.append_data(PID, 2, 2, 1, True, 0) == ("E", "OutOfOrderSequenceException")
    assert log.append_data(PID, 1, 0, 1, True, 0) == ("A", 3)


def test_transaction_rules() -> None:
    """testNonTransactionalAppendWithOngoingTransaction, testOldEpochForControlRecord, testCoordinatorFencing."""
    log = _log()
    log.append_data(PID, 5, 0, 1, True, 0)
    assert log.append_data(PID, 5, 1, 1, False, 0) == ("E", "InvalidTxnStateException")
    assert log.append_marker(PID, 3, 0, 0, 0) == ("E", "InvalidProducerEpochException")
    assert log.append_marker(PID, 5, 1, 0, 0) == ("A", 1)
    log.append_data(PID, 5, 1, 1, True, 0)
    assert log.append_marker(PID, 5, 0, 0, 0) == ("E", "TransactionCoordinatorFencedException")


def test_expiry() -> None:
    """testPidExpirationTimeout, testProducersWithOngoingTransactionsDontExpire, and the bound itself: an entry
    expires once now - lastTimestamp >= producer.id.expiration.ms; then any sequence is accepted."""
    log = _log(expiration=1000)
    log.append_data(PID, 5, 0, 1, False, 0)
    log.set_clock(999)
    log.expire()
    assert PID in log.psm.producers
    log.set_clock(1000)
    log.expire()
    assert PID not in log.psm.producers
    assert log.append_data(PID, 5, 42, 1, False, 1000) == ("A", 1)
    log.append_data(2, 5, 0, 1, True, 1000)
    log.set_clock(10**9)
    log.expire()
    assert list(log.psm.producers) == [2]


def test_verification_sequence_check() -> None:
    """testThrowOutOfOrderSequenceWithVerificationSequenceCheck, testVerificationStateEntryExpiration."""
    log = _log(expiration=1000)
    log.verify(PID, 0, 0, False)
    assert log.append_data(PID, 0, 4, 1, True, 0) == ("E", "OutOfOrderSequenceException")
    log.set_clock(1000)
    log.expire()
    assert log.psm.verification == {}


def test_truncation_reloads_the_last_batch_only() -> None:
    """A snapshot keeps each producer's last batch (ProducerStateManager.writeSnapshot): after a truncation that
    reloads it, a retry of an older batch is out of order rather than a duplicate."""
    log = _log()
    for seq in range(3):
        log.append_data(PID, 0, seq, 1, False, 0)
    log.roll()  # a snapshot at 3
    log.append_data(PID, 0, 3, 1, False, 0)
    log.truncate(3)
    assert [b.last_seq for b in log.psm.producers[PID].batches] == [2]
    assert log.append_data(PID, 0, 1, 1, False, 0) == ("E", "OutOfOrderSequenceException")
    assert log.append_data(PID, 0, 2, 1, False, 0) == ("D", 2, 2, 0)


def test_deleted_records_take_producer_state_only_at_a_reload() -> None:
    """The log start moving past a producer's batches keeps its entry in memory; a truncation afterwards reloads
    snapshots above the log start only, so the producer is forgotten and any sequence is accepted."""
    log = _log()
    log.append_data(PID, 0, 0, 1, False, 0)
    log.roll()  # snapshot at 1
    log.append_data(2, 0, 0, 1, False, 0)
    log.append_data(2, 0, 1, 1, False, 0)
    log.increment_log_start(2)
    assert PID in log.psm.producers
    log.truncate(2)
    assert PID not in log.psm.producers
    assert log.append_data(PID, 0, 77, 1, False, 0) == ("A", 2)
