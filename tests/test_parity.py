"""Parity with Vanlightly's KIP-966 TLA+ specification (invariants/replication_parity.py): every property it states
has a counterpart here, they hold with today's protocol at a small bound, and each property written for the parity
can fail (a broken rule, found by the search). The shipped bounds and larger ones are bench/bench_parity.py's."""

from __future__ import annotations

import pytest

from kcheck.invariants.registry import REGISTRY
from kcheck.invariants.replication_liveness import (
    PARITY_PROPERTY_IDS,
    PROPERTY_IDS,
    LivenessModel,
    parity_properties,
)
from kcheck.invariants.replication_parity import LIVENESS, ROWS, SAFETY, SHIPPED, broken_rules, shipped_config
from kcheck.invariants.replication_searches.exhaustive import run_exhaust
from kcheck.model.liveness import check_liveness
from kcheck.model.replication import Protocol

# The names kip_966_properties.tla gives its invariants and liveness properties, and its .cfg's constants.
SPEC_SAFETY = ["LeaderCompletenessProperty", "LeaderCandidateCompletenessProperty",
               "ReplicationQuorumSupersetProperty", "LogMatchingProperty", "MetadataLogMatchingProperty",
               "ConsistentReadProperty", "MinIsrRecoveryQuorum", "NoCommittedRecordLostGlobally"]
SPEC_LIVENESS = ["EventuallyRuns", "EventuallyUnfenced", "AlterPartitionEpochEventuallyReachedOrZero",
                 "EventuallyMetadataConverges", "EventuallyWriteIsAcceptedOrRejected",
                 "EventuallyAcknowledgedValueFullyReplicated", "EventuallyReassignmentCompletes"]
SPEC_CFG = {"BrokerCount": 3, "InitReplicationFactor": 3, "Values": 1, "MinISR": 2, "InitIsrSize": 2,
            "NoDataLossShutdownLimit": 0, "DataLossShutdownLimit": 1, "FenceBrokerLimit": 1, "LeaderShrinkIsrLimit": 0,
            "ReassignmentLimit": 0}

CURRENT = Protocol.current("4.4.0")
# Three brokers, RF 3, min ISR 2, broker 3 outside the ISR, one record: the shipped bounds without their two faults.
SMALL = shipped_config(lossy_crashes=0, fences=0, atomic_fetch=True)


def test_every_property_of_the_specification_has_a_counterpart():
    assert [r.spec for r in SAFETY] == SPEC_SAFETY and [r.spec for r in LIVENESS] == SPEC_LIVENESS
    assert SHIPPED == SPEC_CFG
    cfg = shipped_config(reassignments=1)
    live = {p.id for p in parity_properties(cfg)} | set(PROPERTY_IDS)
    assert {p.id for p in parity_properties(cfg)} == set(PARITY_PROPERTY_IDS)
    for row in ROWS:
        assert row.kcheck and row.differs, row.spec
        for ident in row.kcheck:
            if row.kind == "safety":
                assert ident in REGISTRY and REGISTRY[ident].applies_to == "replication", ident
            else:
                assert ident in live, ident
    new = [r for r in ROWS if r.new]
    assert {r.kcheck[0] for r in new} == {prop for prop, *_ in broken_rules()}


def test_the_shipped_bounds_map_to_the_config():
    cfg = shipped_config()
    assert (cfg.brokers, cfg.rf, cfg.min_isr, cfg.initial_isr, cfg.records) == (3, 3, 2, 2, 1)
    assert (cfg.crashes, cfg.lossy_crashes, cfg.fences, cfg.isr_shrinks, cfg.reassignments) == (0, 1, 1, 0, 0)
    assert cfg.acks == ("all",) and not cfg.duplicates and cfg.kraft


def test_every_counterpart_holds_at_a_small_bound():
    r = run_exhaust(CURRENT, SMALL, reduce=True)
    assert r.complete and r.trace is None, r.trace
    assert r.tally is not None and not {"replication.maximal-isr-covers-quorum", "replication.recovery-quorum"} & set(
        r.tally.off)  # checked in every state
    props = parity_properties(SMALL)
    lr = check_liveness(LivenessModel(CURRENT, SMALL), props)
    assert lr.complete and lr.bound_states == 0
    assert lr.violations == {p.id: None for p in props}


def test_the_durability_counterparts_hold_with_a_lossy_crash():
    cfg = shipped_config(brokers=2, replication_factor=2, initial_isr=1, fences=0, atomic_fetch=True)
    r = run_exhaust(CURRENT, cfg, reduce=True)
    assert r.complete and r.trace is None, r.trace


@pytest.mark.parametrize("prop,protocol,cfg,kind", broken_rules(), ids=[b[0] for b in broken_rules()])
def test_each_new_property_fails_under_a_broken_rule(prop, protocol, cfg, kind):
    if kind == "safety":
        r = run_exhaust(protocol, cfg, only={prop})
        assert r.trace is not None and prop in {v.invariant for v in r.trace.violations}
        assert run_exhaust(CURRENT, cfg, only={prop}).trace is None  # the rule, not the bound, breaks it
    else:
        props = [p for p in parity_properties(cfg) if p.id == prop]
        assert check_liveness(LivenessModel(protocol, cfg), props).violations[prop] is not None
        r = check_liveness(LivenessModel(CURRENT, cfg), props)
        assert r.complete and r.violations[prop] is None


def test_an_isr_expansion_after_a_lossy_crash_completes():
    """One AlterPartition in flight per partition, matched to its own request: a stale answer cannot take a new
    proposal out of flight, so the expansion after a lossy crash completes and the write is answered."""
    cfg = shipped_config(brokers=2, replication_factor=2, initial_isr=1, fences=0, atomic_fetch=True)
    props = [p for p in parity_properties(cfg) if p.id in ("liveness.alter-partition-completes",
                                                           "liveness.write-answered")]
    r = check_liveness(LivenessModel(CURRENT, cfg), props)
    assert r.complete and r.violations == {p.id: None for p in props}
