"""The late-record finding (docs/models/replication.md, "A late record"): Kafka's `Partition.makeLeader` applies a
metadata record whose partition epoch the AlterPartition answer already taught the leader (KAFKA-13790), so the
shrink's record, arriving after the leader proposed the follower again, ends that proposal while the controller
commits it. The halves run on Kafka's own classes (tests/test_kafka_partition.py, "late record ends a proposed
expansion"; tests/test_kafka_kraft_controller.py, the controller half); here the model joins them into a loss of an
acknowledged record under `Protocol.current()` (Kafka's rule, `partition_epoch_not_older`), and the fix
(`skip_known_partition_epoch`) holds at the same bounds."""

from __future__ import annotations

from dataclasses import replace

from kcheck.invariants.replication_searches.yardstick import exhaust
from kcheck.model.replication.actions import Config
from kcheck.model.replication.protocol import Protocol, skip_known_partition_epoch

LOSS = {"replication.leader-has-acked", "replication.no-acked-lost"}
# two brokers, min.insync.replicas 1 (Kafka's default), one acks=all record, one ISR shrink, one fence
BOUNDS = Config(brokers=2, min_isr=1, records=1, crashes=0, lossy_crashes=0, fences=1, elections=0, isr_shrinks=1,
                failovers=0, reads=0, max_leader_epoch=3, duplicates=False, atomic_fetch=True)
FIX = replace(Protocol.current(), name="skip-known-partition-epoch", partition_state_applies=skip_known_partition_epoch)


def test_kafkas_rule_loses_an_acknowledged_record_after_a_late_record():
    r = exhaust(Protocol.current(), BOUNDS, only=LOSS)
    assert r.trace is not None and r.trace.violations[0].invariant in LOSS
    kinds = [a.kind for a in r.trace.steps]
    # the shrink's answer before its record, a proposal after the answer, the controller commits it, the late record
    answer = kinds.index("handle_alter_partition_response")
    late = kinds.index("apply_metadata")
    assert answer < kinds.index("fetch_round") < late
    assert kinds.count("handle_alter_partition") == 2 and kinds.index("produce") < late < kinds.index("fence")
    assert "acknowledged (acks=all)" in r.trace.violations[0].message


def test_the_fix_skips_the_late_record_and_holds_at_the_same_bounds():
    r = exhaust(FIX, BOUNDS)
    assert r.complete and r.trace is None
