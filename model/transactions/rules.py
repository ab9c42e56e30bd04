"""The transactions model's decisions: each a named function, today's Kafka (4.4) the default, history's alternatives.

The coordinator's transitions and the partitions' producer-state checks are Kafka's own code, run as
`kcheck.reference.txn_metadata` and `kcheck.reference.transaction_index` / `producer_state` have it (bit-exact per
release, 4.4.0 here); the rules are the decisions around that code that changed in Kafka's history. A user swaps
one as the other models' rules are swapped:

    from dataclasses import replace
    from kcheck.model.transactions.rules import Rules, tv1_epoch_per_producer
    mine = replace(Rules.current(), name="mine", transaction_version=tv1_epoch_per_producer)

`VARIANTS` holds the historical rules, each with its JIRA, the smallest setting that shows it and the invariants it
breaks (docs/models/transactions.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kcheck.model.rule_set import RuleSet, Variant, variant

# ---- the transaction version ----------------------------------------------------------------------------------


def tv2_epoch_per_transaction() -> int:
    """Transactions V2 (KIP-890 part 2, 4.0; the default from 4.0 when the cluster's transaction.version feature is
    2): the client adds no partition itself (the partition leader's AddPartitionsToTxn does, `verifyOnly` false,
    AddPartitionsToTxnManager), and every EndTxn bumps the producer epoch (`prepareAbortOrCommit`), so a write or a
    marker of one transaction carries another epoch than the next's."""
    return 2


def tv1_epoch_per_producer() -> int:
    """Transactions V1 (KIP-98, 0.11): the client calls AddPartitionsToTxn before its first write to a partition,
    and the epoch is fixed from InitProducerId on: every transaction of a producer has the same epoch."""
    return 1


# ---- verification of transactional writes -----------------------------------------------------------------------


def verify_transactional_writes(tv: int) -> bool:
    """KIP-890 part 1 (3.6, `transaction.partition.verification.enable` true by default): before a transactional
    batch is appended, the partition leader asks the coordinator whether the partition is in the producer's ongoing
    transaction (`handleVerifyPartitionsInTransaction`); TV2 adds it there instead (always on)."""
    return True


def append_unverified(tv: int) -> bool:
    """Before KIP-890 part 1 (KAFKA-14402): a TV1 partition appends any transactional batch whose producer state
    accepts it; with TV2 the leader still adds the partition (TV2 has no unverified path)."""
    return tv >= 2


# ---- the marker's epoch check -----------------------------------------------------------------------------------


def marker_epoch_by_transaction_version() -> bool:
    """KIP-1228 (KAFKA-19446, 4.2): `ProducerAppendInfo.checkProducerEpoch` for a TV2 marker needs an epoch above the
    producer's (its transaction's end bumped it); TV0/1 markers at or above (the reference's
    `producer_marker_epoch_by_transaction_version`)."""
    return True


def marker_epoch_not_below() -> bool:
    """Before KIP-1228 (4.0, 4.1): any marker at or above the producer's epoch is written, so a stale TV2 marker at
    the epoch of the next transaction ends that transaction."""
    return False


# ---- a retried marker ---------------------------------------------------------------------------------------------


def retried_marker_written(tv: int, marker_epoch: int, entry_epoch: int, txn_open: bool) -> bool:
    """KAFKA-19999 (4.2): a TV2 marker at the producer's epoch with no transaction open is a retry of the marker
    already written and is accepted (written again, ending nothing): Kafka's own check decides (False: not
    refused before it)."""
    return False


def retried_marker_refused(tv: int, marker_epoch: int, entry_epoch: int, txn_open: bool) -> bool:
    """KIP-1228's strict check without KAFKA-19999's exemption: the retry of a TV2 marker whose first answer was
    lost is refused with INVALID_PRODUCER_EPOCH, and the coordinator stops sending that transaction's markers
    (TransactionMarkerRequestCompletionHandler), so it stays in PrepareCommit/PrepareAbort."""
    return tv >= 2 and marker_epoch == entry_epoch and not txn_open


# ---- the client's epoch bump after an abortable error ------------------------------------------------------------


def bump_epoch_after_abortable_error(tv: int) -> bool:
    """KIP-360 (2.5): the Java client's `TransactionManager`, after an abortable error in a transaction (a batch
    that failed or expired: `maybeTransitionToErrorState`), when the coordinator can bump the epoch, follows the
    abort's EndTxn with InitProducerId carrying its current id and epoch, which bumps the epoch (3.9:
    `epochBumpRequired`; 4.4: `clientSideEpochBumpRequired`, set when `needToTriggerEpochBumpFromClient`: not with
    TV2, whose EndTxn bumps the epoch anyway). A late write of the aborted transaction then carries a fenced epoch."""
    return tv < 2


def keep_epoch_after_abortable_error(tv: int) -> bool:
    """Before KIP-360 (a client that never bumps its own epoch, or a coordinator older than 2.5): after the abort
    the client goes on at the same epoch, so under TV1 the next transaction has the epoch of the aborted one."""
    return False


@dataclass(frozen=True)
class Rules(RuleSet):
    """One choice per decision point (see the module docstring)."""

    name: str
    description: str
    transaction_version: Callable[[], int]
    verification: Callable[[int], bool]
    marker_epoch: Callable[[], bool]
    retried_marker: Callable[[int, int, int, bool], bool]
    client_epoch_bump: Callable[[int], bool]

    @classmethod
    def current(cls) -> Rules:
        return cls("current", "Kafka 4.4", tv2_epoch_per_transaction, verify_transactional_writes,
                   marker_epoch_by_transaction_version, retried_marker_written, bump_epoch_after_abortable_error)


def _variant(name: str, jira: str, bug: str, violates: tuple[str, ...], settings: Mapping[str, Any],
             **rules: Any) -> Variant[Rules]:
    return variant(Rules.current(), name, jira, bug, violates, settings, **rules)


_ONE = {"instances": 1, "partitions": 1, "failovers": 0, "txn_timeouts": 0}

VARIANTS: dict[str, Variant[Rules]] = {v.name: v for v in (
    _variant("unverified-hanging", "KAFKA-14402 (KIP-890 part 1)",
             "TV1 without verification: a produce the client stopped waiting for is appended after the abort's "
             "marker and opens a transaction on the partition that the coordinator has already ended (a hanging "
             "transaction: the last stable offset stays behind it)",
             ("txn.no-hanging",),
             {**_ONE, "txns": 1, "duplicates": 0, "client_timeouts": 1},
             transaction_version=tv1_epoch_per_producer, verification=append_unverified),
    _variant("tv1-late-write", "KAFKA-17754 (KIP-890 part 2)",
             "TV1 with verification, a client that keeps its epoch after the abort (no KIP-360 bump): the next "
             "transaction has the same epoch and the partition again, so a late produce of an aborted transaction "
             "passes verification and the producer-state checks and joins it; its commit makes the aborted write "
             "visible to read_committed",
             ("txn.no-aborted-read", "txn.marker-own"),
             {**_ONE, "txns": 2, "duplicates": 0, "client_timeouts": 1},
             transaction_version=tv1_epoch_per_producer, client_epoch_bump=keep_epoch_after_abortable_error),
    _variant("tv1-delayed-marker", "KAFKA-14402 (KIP-890 part 2)",
             "TV1: a duplicated marker of a finished transaction arrives after the next transaction, at the same "
             "epoch, wrote to the partition, and ends it there (KIP-890's third case: a transaction completed by "
             "another's marker); likewise a copy of the finished transaction's EndTxn commits the next one",
             ("txn.marker-own", "txn.no-aborted-read", "txn.committed-whole", "txn.end-own"),
             {**_ONE, "txns": 2, "duplicates": 1, "client_timeouts": 0},
             transaction_version=tv1_epoch_per_producer),
    _variant("marker-epoch-not-below", "KAFKA-19446 (KIP-1228)",
             "TV2 markers checked as TV1's (refused only below the producer's epoch): a duplicated marker of a "
             "completed transaction, at the epoch the next transaction runs at, ends that transaction on the "
             "partition",
             ("txn.marker-own", "txn.no-aborted-read", "txn.committed-whole"),
             {**_ONE, "txns": 2, "duplicates": 1, "client_timeouts": 0},
             marker_epoch=marker_epoch_not_below),
    _variant("retried-marker-refused", "KAFKA-19999",
             "the strict TV2 marker check without the retry exemption: a marker retried after its answer was lost "
             "is refused, the coordinator stops sending the transaction's markers, and the transaction never "
             "completes",
             ("txn.markers-outstanding",),
             {**_ONE, "txns": 1, "duplicates": 1, "client_timeouts": 0},
             retried_marker=retried_marker_refused),
    _variant("unverified-fenced-write", "KAFKA-14402 (KIP-890 part 1)",
             "TV1 without verification, two instances: the first instance's late produce of an ended transaction "
             "is appended after the second instance's InitProducerId fenced it (the partition never saw the new "
             "epoch)",
             ("txn.fenced-writes-nothing", "txn.no-hanging"),
             {**_ONE, "instances": 2, "txns": 1, "duplicates": 0, "client_timeouts": 1},
             transaction_version=tv1_epoch_per_producer, verification=append_unverified),
)}
