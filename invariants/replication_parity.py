"""Parity with the most complete public specification of Kafka replication: Vanlightly's KIP-966 TLA+ model
(Vanlightly/kafka-tlaplus, kafka_data_replication/kraft/kip-966: `kip_966_properties.tla` states the properties,
`kafka_replication_kip_966.cfg` the bounds it ships).

Each of its eight safety properties and seven liveness properties is mapped to kcheck's registered invariants
(invariants/replication.py) or liveness properties (invariants/replication_liveness.py), with where the meanings
differ; `shipped_config` maps its shipped bounds to a `Config` and `BOUNDS` says how each maps. The rows are data,
so the bench (bench/bench_parity.py), the test (tests/test_parity.py) and the docs (docs/models/parity.md) read one
table.

Vocabulary of the specification, for the notes below: a broker is RUNNING once its registration is answered
(STARTING before), the controller keeps its own FENCED/UNFENCED status, `inv_true_hwm` is the highest high
watermark any leader reached, `inv_consumed` the records below it (every committed record counts as consumed),
`inv_pos_acked` the acknowledged values, and a "non-stale leader" a broker whose role is Leader in the
controller's leader epoch. Its logs hold values (each written once), so a value names a record.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kcheck.model.replication import protocol as rules
from kcheck.model.replication.actions import Config
from kcheck.model.replication.protocol import Protocol

SPEC = "Vanlightly/kafka-tlaplus kafka_data_replication/kraft/kip-966"


@dataclass(frozen=True)
class ParityRow:
    """One property of the specification and its counterpart here."""

    spec: str  # the specification's name for it
    kind: str  # "safety" or "liveness"
    kcheck: tuple[str, ...]  # invariant or liveness property ids (the first is the main counterpart)
    new: bool  # written for this parity (no counterpart before)
    differs: str  # where the meanings differ (the specification's state against kcheck's)


SAFETY: tuple[ParityRow, ...] = (
    ParityRow("LeaderCompletenessProperty", "safety", ("replication.leader-has-acked",), False,
              "Both judge the controller's leader. The specification asks a RUNNING leader for a log at least as long "
              "as the true high watermark and for each acknowledged value somewhere in it; kcheck asks a live leader "
              "for every acknowledged and every committed record at its own offset (stronger: the content below the "
              "high watermark, not only the length). A restarted broker is live at once here, while the "
              "specification exempts it until registered. kcheck switches the check off once min.insync.replicas "
              "lossy crashes happened (Kafka promises nothing then, and Kafka's balanced recovery may elect the "
              "last known leader); the specification has no such switch."),
    ParityRow("LeaderCandidateCompletenessProperty", "safety", ("replication.electable-has-committed",), False,
              "Both judge the ISR and ELR members that are up (RUNNING there, live here). The specification compares "
              "their log end with the true high watermark; kcheck requires every committed record at its offset, and "
              "only for members still in the replica set (Kafka elects nobody else). Off past min.insync.replicas "
              "lossy crashes, as above."),
    ParityRow("ReplicationQuorumSupersetProperty", "safety", ("replication.maximal-isr-covers-quorum",), True,
              "New. Same subject (a live broker leading in the controller's leader epoch) and condition (its ISR at "
              "least min.insync.replicas): its maximal ISR covers the controller's ISR and ELR. The specification's "
              "other half (no AlterPartition pending implies maximal ISR = ISR) holds by construction here: the "
              "maximal ISR is computed as the ISR plus the proposal in flight, never stored."),
    ParityRow("LogMatchingProperty", "safety", ("replication.log-matching",), False,
              "Both compare two replicas below the smaller high watermark. The specification compares every broker, "
              "a stopped one included, by value; kcheck compares live replicas that are not about to truncate, by "
              "record (id and leader epoch), since a dead broker serves nothing and a restarted one repairs its "
              "log before its high watermark is used."),
    ParityRow("MetadataLogMatchingProperty", "safety", ("kraft.metadata-prefix", "kraft.belief-matches-registry"),
              False,
              "The specification copies the metadata log to each broker and checks each copy is a prefix of the "
              "controller's. kcheck keeps one log and each broker's position in it, so the prefix holds by "
              "construction; what it checks instead is the consequence: each broker's partition state is the "
              "log's at the batch it applied, and the controller's once it applied them all."),
    ParityRow("ConsistentReadProperty", "safety", ("replication.leader-has-acked", "replication.consistent-reads"),
              False,
              "The specification counts every committed record as consumed (`inv_consumed`, the records below the "
              "true high watermark) and asks a non-stale leader to hold each at its offset. kcheck's committed "
              "records are the same set (`History.committed`), and leader-has-acked asks the controller's live "
              "leader, applied or not yet, to hold them: the specification's check, on a superset of leaders, off "
              "past min.insync.replicas lossy crashes. consistent-reads judges what budgeted consumer reads returned "
              "(two reads of one offset, two records), so it needs reads >= 2 to say anything."),
    ParityRow("MinIsrRecoveryQuorum", "safety", ("replication.recovery-quorum",), True,
              "New, and the design differs: the specification keeps min.insync.replicas last known ELR members for "
              "KIP-966's unclean recovery; Kafka ships balanced recovery, which keeps the last leader alone in "
              "lastKnownElr and elects it (PartitionChangeBuilder.maybeUpdateLastKnownLeader, "
              "canElectLastKnownLeader). kcheck's invariant is the shipped form: with neither ISR nor ELR left, one "
              "last known leader is kept."),
    ParityRow("NoCommittedRecordLostGlobally", "safety", ("replication.no-acked-lost",), False,
              "Both look at every broker, stopped ones too. The specification looks for each acknowledged value "
              "anywhere in some log; kcheck for each acknowledged or committed record at its offset. Both are off "
              "from min.insync.replicas lossy crashes on: the shipped .cfg says to drop this invariant when "
              "DataLossShutdownLimit reaches MinISR, and kcheck's durability condition says the same."),
)

LIVENESS: tuple[ParityRow, ...] = (
    ParityRow("EventuallyRuns", "liveness", ("liveness.broker-starts",), True,
              "New. STARTING ~> RUNNING and UNFENCED per broker; here restart and registration are one step and "
              "the broker is fenced until it caught up, so the goal is every live broker knowing the partition "
              "state and unfenced at once (stronger than per broker; equal once faults stop)."),
    ParityRow("EventuallyUnfenced", "liveness", ("liveness.broker-unfenced",), True,
              "New. FENCED ~> UNFENCED per broker; here no broker fenced at all. A dead broker is fenced by the "
              "controller noticing it (fair) and restarts (fair), as BrokerStart is weakly fair there."),
    ParityRow("AlterPartitionEpochEventuallyReachedOrZero", "liveness", ("liveness.alter-partition-completes",), True,
              "New. There: a pending request's partition epoch is reached or the request reset (written as "
              "[]<>(\\A b : P ~> Q), a leads-to nested under []<>). Here: no live broker keeps a proposed ISR "
              "(committed from the answer or the metadata, rolled back, or dropped with a new epoch)."),
    ParityRow("EventuallyMetadataConverges", "liveness", ("liveness.metadata-converges",), True,
              "New. There: each broker's ISR, leader and epochs equal the controller's, or it is a follower with no "
              "record it acts on, or it was removed. Here: every live broker applied the whole metadata log (KRaft), "
              "and kraft.belief-matches-registry makes its partition state the controller's then."),
    ParityRow("EventuallyWriteIsAcceptedOrRejected", "liveness", ("liveness.write-answered",), True,
              "New. There: every sent value is positively or negatively acknowledged (the leader fails pending "
              "writes when it shuts down, loses leadership or its ISR drops below min.insync.replicas). Here the "
              "model answers at the high watermark; a write whose leader no longer leads in the record's epoch, "
              "died, or truncated it counts as answered (Kafka answers NOT_LEADER_OR_FOLLOWER or drops the "
              "connection). Kafka's produce timeout would answer any write: neither model has one."),
    ParityRow("EventuallyAcknowledgedValueFullyReplicated", "liveness",
              ("liveness.acked-fully-replicated", "liveness.acked-reaches-isr"), True,
              "New. There: each acknowledged value reaches every replica of the replica set, stopped ones included. "
              "Here the same, each record at its offset, off past min.insync.replicas lossy crashes. kcheck's older "
              "acked-reaches-isr asks it only of live ISR members."),
    ParityRow("EventuallyReassignmentCompletes", "liveness", ("liveness.reassignment-ends",), False,
              "Here: a reassignment in flight eventually ends (completes or is cancelled). There, as written, the "
              "bulleted disjunction binds ~> to its second item only, so the formula is adding # {} \\/ "
              "(removing # {} ~> both empty): from the initial state (nothing adding) it asks only moves that remove "
              "a replica to complete, and a move that only adds escapes it. The shipped bounds allow no reassignment "
              "(ReassignmentLimit = 0), so it is vacuous there; here it runs with reassignments >= 1."),
)

ROWS = SAFETY + LIVENESS

# The specification's shipped constants (kafka_replication_kip_966.cfg).
SHIPPED: dict[str, Any] = {"BrokerCount": 3, "InitReplicationFactor": 3, "Values": 1, "MinISR": 2, "InitIsrSize": 2,
                           "NoDataLossShutdownLimit": 0, "DataLossShutdownLimit": 1, "FenceBrokerLimit": 1,
                           "LeaderShrinkIsrLimit": 0, "ReassignmentLimit": 0}

# (its constant, kcheck's Config field, how they correspond); None: no counterpart on that side.
BOUNDS: tuple[tuple[str | None, str | None, str], ...] = (
    ("BrokerCount", "brokers", "same"),
    ("InitReplicationFactor", "replication_factor", "same (replicas on brokers 1..RF, broker 1 leading, both)"),
    ("Values", "records", "one value is one record (each written once, acks=all only there: acks=('all',))"),
    ("MinISR", "min_isr", "same"),
    ("InitIsrSize", "initial_isr", "the replica outside the ISR starts fenced with stale metadata there; here it "
                                   "starts unfenced, out of the ISR, having applied the metadata"),
    ("NoDataLossShutdownLimit", "crashes", "a stop that keeps the log (clean or not)"),
    ("DataLossShutdownLimit", "lossy_crashes", "there the whole log is lost; here the unflushed suffix (a broker "
                                               "that never flushed loses it all, so the specification's case is one "
                                               "of kcheck's)"),
    ("FenceBrokerLimit", "fences", "fencing a live broker; fencing a dead one is not counted in either"),
    ("LeaderShrinkIsrLimit", "isr_shrinks", "same"),
    ("ReassignmentLimit", "reassignments", "same"),
    (None, "elections", "0: preferred and operators' elections are not in the specification"),
    (None, "failovers", "0: the controller is one state machine there (KRaft's Raft is abstracted)"),
    (None, "reads", "0: consumption is the history variable, not an action (see ConsistentReadProperty)"),
    (None, "duplicates", "False: its network delivers each message once (kcheck also loses any message: "
                         "more behaviours, no fewer)"),
    (None, "max_leader_epoch", "10: a model bound here (there the faults alone bound the epochs); the liveness "
                               "runs count the states where it cut a step: none"),
    (None, "atomic_fetch", "False maps its three fetch steps; True (one step) is a subset of those runs"),
)


def shipped_config(**overrides: Any) -> Config:
    """The specification's shipped bounds as kcheck's Config (`BOUNDS`), with `overrides`."""
    s = SHIPPED
    settings: dict[str, Any] = dict(
        brokers=s["BrokerCount"], replication_factor=s["InitReplicationFactor"], records=s["Values"],
        min_isr=s["MinISR"], initial_isr=s["InitIsrSize"], crashes=s["NoDataLossShutdownLimit"],
        lossy_crashes=s["DataLossShutdownLimit"], fences=s["FenceBrokerLimit"], isr_shrinks=s["LeaderShrinkIsrLimit"],
        reassignments=s["ReassignmentLimit"], elections=0, failovers=0, reads=0, duplicates=False,
        max_leader_epoch=10, acks=("all",))
    settings.update(overrides)
    return Config(**settings)


# ---- broken rules: each new property can fail -------------------------------------------------------------------
# Hand-made rules for the properties no model/replication alternative breaks; each is the simplest way to lose the
# progress its property promises.

def _never_unfence(registry: Any, image: Any, broker: int) -> bool:
    return False


def _frozen_high_watermark(leader: Any, min_isr: int) -> int:
    return int(leader.hw)


def _refuse_every_isr(registry: Any, isr: Any, broker_epochs: Any) -> bool:
    return False


def _never_roll_back(error: str) -> bool:
    return False


def _never_apply(r: Any, m: Any) -> bool:
    return False


def _in_sync_followers_only(follower: Any, response: Any) -> bool:
    return follower.id in follower.isr and bool(rules.response_matches_fetch_state(follower, response))


_QUIET: dict[str, Any] = {"brokers": 2, "min_isr": 1, "records": 0, "crashes": 0, "lossy_crashes": 0, "fences": 0,
                          "elections": 0, "isr_shrinks": 0, "failovers": 0, "reads": 0, "atomic_fetch": True}


def broken_rules() -> tuple[tuple[str, Protocol, Config, str], ...]:
    """(new property, a protocol with one or two rules broken, the smallest Config found to show it, "safety" or
    "liveness"): each property the parity added can fail, and the search finds it (bench/bench_parity.py,
    tests/test_parity.py). The rollback and last-known-leader rules are model/replication's own alternatives (the
    first a proposed simplification, the second the rule without ELR), the others are hand-made."""
    current = Protocol.current("4.4.0")
    never_unfence = replace(current, name="never-unfence", unfence_when=_never_unfence)
    return (
        ("replication.maximal-isr-covers-quorum",
         replace(current, name="roll-back-on-any-error", alter_partition_rollback=rules.roll_back_on_any_error),
         Config(**{**_QUIET, "brokers": 3, "min_isr": 2, "initial_isr": 2, "duplicates": True}), "safety"),
        ("replication.recovery-quorum",
         replace(current, name="no-last-known-leader", last_known_leader=rules.no_last_known_leader),
         Config(**{**_QUIET, "min_isr": 2, "lossy_crashes": 2, "duplicates": False}), "safety"),
        ("liveness.broker-starts", never_unfence, Config(**{**_QUIET, "crashes": 1}), "liveness"),
        ("liveness.broker-unfenced", never_unfence, Config(**{**_QUIET, "crashes": 1}), "liveness"),
        ("liveness.alter-partition-completes",
         replace(current, name="refused-and-kept", alter_partition_validation=_refuse_every_isr,
                 alter_partition_rollback=_never_roll_back), Config(**{**_QUIET, "initial_isr": 1}), "liveness"),
        ("liveness.metadata-converges", replace(current, name="never-apply", partition_state_applies=_never_apply),
         Config(**{**_QUIET, "fences": 1}), "liveness"),
        ("liveness.write-answered",
         replace(current, name="frozen-high-watermark", high_watermark=_frozen_high_watermark),
         Config(**{**_QUIET, "records": 1}), "liveness"),
        ("liveness.acked-fully-replicated",
         replace(current, name="in-sync-followers-only", accept_fetch_response=_in_sync_followers_only),
         Config(**{**_QUIET, "initial_isr": 1, "records": 1}), "liveness"),
    )


__all__ = ["BOUNDS", "LIVENESS", "ROWS", "SAFETY", "SHIPPED", "SPEC", "ParityRow", "broken_rules", "shipped_config"]
