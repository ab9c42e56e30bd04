"""The replication model's controller against Kafka's own KRaft controller classes (issue 15).

Kafka's `ClusterControlManager`, `ReplicationControlManager` and `BrokerHeartbeatManager` run random broker
lifecycles through the bridge (request KC, reference/harness/KcheckController.java); before every AlterPartition,
session expiry and controlled-shutdown heartbeat, the model's action (`handle_alter_partition`, `fence`,
`controlled_shutdown`, the `shutdown_granted` rule) runs on the registry Kafka held, and must do what Kafka did.
AlterPartition requests the model's leader never sends are compared too, and their differences kept apart
(`alter_partition/unmodelled`); the facts those show are pinned by the tests at the end.

Default run: 4.4.0 with today's protocol and the two ELR-off rows, a few hundred lifecycles each. 4.1.2 and 4.0.2
are `slow` (KCHECK_KAFKA_RELEASES overrides the list); 3.9.1's controller lacks the APIs the harness calls.
Million-call runs: bench/bench_kafka_controller.py.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.model.replication.actions import elect, restart
from kcheck.model.replication.protocol import VARIANTS, Protocol, any_incarnation
from kcheck.model.replication.state import Registry, evolve
from kcheck.reference.kafka_bridge import JavaException
from kcheck.reference.kafka_controller import (
    Script,
    Step,
    compare_lifecycle,
    controller_settings,
    kafka_partition_fields,
    model_config,
    model_fence,
    model_registry,
    model_stale_shutdown,
    model_state,
    op_alter,
    op_expire,
    op_heartbeat,
    op_register,
    op_topic,
    partition_fields,
    random_lifecycle,
    run_scripts,
)

pytestmark = pytest.mark.kafka

_slow = pytest.mark.slow
RELEASES: list = list(ENV_RELEASES) or ["4.4.0", *(pytest.param(v, marks=_slow) for v in ("4.1.2", "4.0.2"))]
PROTOCOLS = {"current": Protocol.current(), "last-replica-standing": VARIANTS["last-replica-standing"].protocol,
             "unclean-election": VARIANTS["unclean-election"].protocol}
BATCH = settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
MODELLED = ("alter_partition", "fence", "controlled_shutdown", "shutdown_granted")


def _run(version: str, scripts: list[Script]) -> list[list[Step]]:
    answers = run_scripts(_kafka(version), scripts)
    bad = [(s, a) for s, a in zip(scripts, answers, strict=True) if isinstance(a, JavaException)]
    assert not bad, bad[:3]
    return [a for a in answers if not isinstance(a, JavaException)]


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("row", sorted(PROTOCOLS))
@BATCH
@given(seed=st.integers(0, 2**32 - 1))
def test_controller_calls_match_the_model(version: str, row: str, seed: int) -> None:
    """Every AlterPartition the model's leader could send, every session expiry, every first heartbeat asking to
    shut down and every later one (granted or not): the model decides what Kafka decided, on Kafka's state."""
    p = PROTOCOLS[row]
    settings_ = controller_settings(p)
    assert settings_ is not None
    elr, election = settings_
    rng = random.Random(seed)
    lives = [random_lifecycle(rng, elr=elr, unclean=election.name == "UNCLEAN") for _ in range(120)]
    counts: dict[str, int] = {}
    diffs = []
    for life, steps in zip(lives, _run(version, [life.script for life in lives]), strict=True):
        c, d = compare_lifecycle(life, steps, p)
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + v
        diffs += [x for x in d if x.in_model]
    assert not diffs, "\n".join(x.describe() for x in sorted(diffs, key=lambda x: len(x.lifecycle.script.ops))[:5])
    for kind in ("alter_partition", "fence", "controlled_shutdown"):
        assert counts.get(kind, 0) >= 30, counts  # the batch exercised every call
    assert counts.get("stale_shutdown", 0) >= 1, counts


# ---- facts about Kafka's controller the model's rules rest on (ReplicationControlManager, ClusterControlManager) -----

SETUP = (op_register(1), op_register(2), op_register(3), op_heartbeat(1), op_heartbeat(2), op_heartbeat(3),
         op_topic((1, 2, 3)))


def _last(version: str, *ops: str, elr: bool = True, min_isr: int = 2) -> list[Step]:
    (steps,) = _run(version, [Script(SETUP + ops, elr, min_isr)])
    return steps[len(SETUP):]


@pytest.mark.parametrize("version", RELEASES)
def test_alter_partition_checks_in_kafkas_order(version: str) -> None:
    """`ReplicationControlManager.validateAlterPartitionData`'s answers. Where the model's rule answers otherwise
    (a request the model's leader never sends) the comment says what the model answers."""
    cases = {
        op_alter("L", "c+1", "c", (1, 2, 3)): "NOT_CONTROLLER",  # model: FENCED_LEADER_EPOCH
        op_alter("L", "c", "c+1", (1, 2, 3)): "NOT_CONTROLLER",  # model: INVALID_UPDATE_VERSION
        op_alter(2, "c", "c", (1, 2)): "INVALID_REQUEST",  # not the leader, current epoch; model: FENCED_LEADER_EPOCH
        op_alter(2, "c-1", "c", (1, 2)): "FENCED_LEADER_EPOCH",
        op_alter("L", "c", "c-1", (1, 2)): "INVALID_UPDATE_VERSION",
        op_alter("L", "c", "c", (2, 3)): "INVALID_REQUEST",  # without the leader; model: accepted
        op_alter("L", "c", "c", (1, 2, 3), {1: "s"}): "INELIGIBLE_REPLICA",  # the leader's own stale epoch
        op_alter("L", "c", "c", (1, 2), {2: "s"}): "INELIGIBLE_REPLICA",  # a kept member's; model: accepted
        op_alter("L", "c", "c", (1, 2, 3), {2: "n"}): "NONE",  # -1 skips the epoch check
        op_alter("L", "c", "c", (1, 2, 3)): "NONE",  # the ISR it has: nothing written
    }
    for op, expected in cases.items():
        (step,) = _last(version, op)
        assert step.result == expected, (op, step.result)
    (same,) = _last(version, op_alter("L", "c", "c", (1, 2, 3)))
    assert same.partition is not None and same.partition.partition_epoch == 0  # no record: the model bumps it
    (stale,) = _last(version, op_alter("L", "c", "c", (1, 2), broker_epoch=1))
    assert stale.result == "StaleBrokerEpochException"  # the request's own broker epoch, before any partition


@pytest.mark.parametrize("version", RELEASES)
def test_every_proposed_member_must_be_active(version: str) -> None:
    """INELIGIBLE_REPLICA for a fenced or shutting-down member, added or not; the leader checks the same from its
    image before it proposes (KIP-841, KIP-903)."""
    cs, add_back = _last(version, op_heartbeat(1, want_shutdown=True), op_alter("L", "c", "c", "I+1"))
    assert cs.result == "0,1,0,1" and cs.partition is not None and cs.partition.leader == 2  # CONTROLLED_SHUTDOWN
    assert add_back.result == "INELIGIBLE_REPLICA"  # 1 is shutting down
    fence, add = _last(version, op_expire(3), op_alter("L", "c", "c", (1, 2, 3)))
    assert fence.partition is not None and fence.partition.isr == (1, 2)
    assert add.result == "INELIGIBLE_REPLICA"


@pytest.mark.parametrize("version", RELEASES)
def test_controlled_shutdown_moves_leadership_then_waits_for_every_active_broker(version: str) -> None:
    """The leader asking to stop: CONTROLLED_SHUTDOWN (flag, ISR shrink, new leader) in one batch; it is let go only
    once every active broker has reported an offset at or past that batch's end; letting it go fences it and keeps
    its in-controlled-shutdown flag."""
    begin, lag2, wait, hb2, still, hb3, go = _last(
        version, op_heartbeat(1, want_shutdown=True), op_heartbeat(2, offset=0), op_heartbeat(1, want_shutdown=True),
        op_heartbeat(2), op_heartbeat(1, want_shutdown=True), op_heartbeat(3), op_heartbeat(1, want_shutdown=True))
    assert begin.result == "0,1,0,1"
    assert begin.partition is not None and begin.partition.leader == 2 and begin.partition.isr == (2, 3)
    assert lag2.result == "0,0,0,0"  # offset 0 is before its own registration record: not caught up
    assert wait.result == "0,1,0,1" and still.result == "0,1,0,1"  # 3 last reported an offset before the batch
    assert go.result == "1,0,1,1"  # SHUTDOWN_NOW
    b1 = go.broker(1)
    assert b1 is not None and b1.fenced and b1.shutting_down
    assert hb2.result == hb3.result == "0,0,0,1"


@pytest.mark.parametrize("version", RELEASES)
def test_fast_bounce_is_refused_until_the_session_expires(version: str) -> None:
    """A new incarnation registering while the old one's session lives: DUPLICATE_BROKER_REGISTRATION; after the
    session expires it registers, with a larger epoch, fenced until it reports the offset of its registration."""
    dup, fence, reg, lag, up = _last(version, op_register(2, 1, "*"), op_expire(2), op_register(2, 1, "*"),
                                     op_heartbeat(2, offset=0), op_heartbeat(2))
    assert dup.result == "DuplicateBrokerRegistrationException"
    assert fence.result == "NONE"
    old = fence.broker(2)
    assert old is not None and int(reg.result) > old.epoch
    assert lag.result.startswith("1,") and up.result.startswith("0,")


@pytest.mark.parametrize("version", RELEASES)
def test_a_bounced_brokers_late_request_to_shut_down_is_refused(version: str) -> None:
    """KIP-380's fast bounce in KRaft: the heartbeat asking to shut down that the previous incarnation sent,
    arriving after the broker registered again, carries the old broker epoch; `checkBrokerEpoch` refuses it and
    nothing changes. The model's rule refuses it too; the rule before KIP-380 (`any_incarnation`) would put the new
    process in controlled shutdown."""
    *_, up, late = _last(version, op_expire(1), op_register(1, 1, "*"), op_heartbeat(1),
                         op_heartbeat(1, want_shutdown=True, stale=True))
    assert late.result == "StaleBrokerEpochException"
    assert late.partition == up.partition and late.broker(1) == up.broker(1)
    cfg = model_config(3, 3, 2)
    reg = model_registry(up, 3)
    assert model_stale_shutdown(Protocol.current(version), cfg, reg, 1) == reg
    old = replace(Protocol.current(version), shutdown_request_accepted=any_incarnation)
    acted = model_stale_shutdown(old, cfg, reg, 1)
    assert acted is not None and 1 in acted.shutting_down and 1 not in acted.isr


@pytest.mark.parametrize("version", RELEASES)
def test_unclean_restart_leaves_the_elr_a_clean_one_does_not(version: str) -> None:
    """KIP-966: a registration whose previousBrokerEpoch is not the stored epoch is an unclean shutdown: with ELR
    on, the broker leaves the ELR as well as the ISR; a clean one leaves only the ISR."""
    base = (op_expire(3), op_expire(2))  # ISR [1], ELR [2, 3] (min ISR 3)
    *_, clean = _last(version, *base, op_register(3, 1, "*"), min_isr=3)
    *_, unclean = _last(version, *base, op_register(3, 1, -1), min_isr=3)
    assert clean.partition is not None and unclean.partition is not None
    assert set(clean.partition.elr) == {2, 3}
    assert set(unclean.partition.elr) == {2}


def _model_call(op: str, reg: Registry, brokers: int, min_isr: int) -> Registry:
    """The model controller's answer to a session expiry (`fence`), a registration of a new incarnation (`restart`
    of the dead broker, clean or not as the op's previousBrokerEpoch says) or an unfencing heartbeat (the broker
    unfenced, then `elect`), on the registry Kafka held."""
    p, cfg = Protocol.current(), model_config(brokers, len(reg.replicas), min_isr)
    kind, b = op[0], int(op.split(":")[1])
    if kind == "x":
        after = model_fence(p, cfg, reg, b)
        assert after is not None
        return after
    if kind == "r":
        s = model_state(reg, cfg)
        s = s.with_replica(evolve(s.replica(b), alive=False, clean_shutdown=op.endswith(":*")))
        moved = restart(s, p, cfg, b)
        assert moved is not None
        return moved.registry
    up = evolve(reg, fenced=reg.fenced - {b})
    elected = elect(model_state(up, cfg), p, cfg)
    return up if elected is None else elected.registry


@pytest.mark.parametrize("version", RELEASES)
def test_an_unclean_last_known_leader_waits_while_a_clean_replica_is_eligible(version: str) -> None:
    """KIP-966, RF 2, min.insync.replicas 2: b2 then b1 lose their sessions (ISR [], ELR [1, 2], lastKnownElr [1]);
    b1 comes back reporting an unclean shutdown: it leaves the ELR, but b2, fenced, stays in it, so the partition
    stays leaderless (`PartitionChangeBuilder.canElectLastKnownLeader` needs the ELR empty) until b2 is back and
    elected from the ELR, RECOVERED. Only when b2's shutdown was unclean too does b1 lead as the last known
    leader, RECOVERING (4.0.x elects it at once, fenced, at its own unclean registration: KAFKA-19522, fixed in
    4.1.0). Every call agrees with the model's on Kafka's state (the model has 4.1's last-known-leader rules), and
    `leader_choice` (`clean_or_eligible`) answers the same on the unfenced registry."""
    fixed_19522 = tuple(int(x) for x in version.split(".")[:3]) >= (4, 1, 0)
    setup = (op_register(1), op_register(2), op_heartbeat(1), op_heartbeat(2), op_topic((1, 2)))
    down = (op_expire(2), op_expire(1))
    b2_clean = down + (op_register(1, 1, -1), op_heartbeat(1), op_register(2, 1, "*"), op_heartbeat(2))
    both_unclean = down + (op_register(2, 1, -1), op_register(1, 1, -1), op_heartbeat(1))
    runs = _run(version, [Script(setup + ops, True, 2) for ops in (b2_clean, both_unclean)])
    (*_, gone, reg1, up1, _, up2), (*_, unclean2, unclean1, lead1) = (r[len(setup) - 1:] for r in runs)
    for step, leader, isr, elr, lke, recovering in (
            (gone, -1, (), {1, 2}, (1,), False),
            (reg1, -1, (), {2}, (1,), False),  # unclean: out of the ELR; lastKnownElr unchanged
            (up1, -1, (), {2}, (1,), False),  # unfenced, not elected: b2 is eligible
            (up2, 2, (2,), set(), (), False),  # b2 from the ELR, a clean election
            (unclean2, -1, (), {1}, (1,), False),
            (unclean1, -1, (), set(), (1,), False) if fixed_19522 else (unclean1, 1, (1,), set(), (), True),
            (lead1, 1, (1,), set(), (), True)):  # the last known leader, RECOVERING
        p = step.partition
        assert p is not None
        assert (p.leader, p.isr, set(p.elr), p.last_known_elr, p.recovering) == (leader, isr, elr, lke, recovering)
    for ops, steps in list(zip((b2_clean, both_unclean), runs, strict=True))[:2 if fixed_19522 else 1]:
        for i, op in enumerate(ops, start=len(setup)):
            ours = _model_call(op, model_registry(steps[i - 1], 2), 2, 2)
            assert partition_fields(ours) == kafka_partition_fields(steps[i]), (op, ops)
    choice = Protocol.current().leader_choice
    assert choice(evolve(model_registry(reg1, 2), fenced=frozenset({2})), 2) is None
    if fixed_19522:
        assert choice(evolve(model_registry(unclean1, 2), fenced=frozenset({2})), 2) == (1, frozenset({1}),
                                                                                          frozenset())


@pytest.mark.parametrize("version", RELEASES)
def test_the_late_record_loss_controller_half(version: str) -> None:
    """The controller's half of the late-record loss (docs/models/replication.md, "A late record"): with two
    replicas and min.insync.replicas 1, the leader's shrink commits, then its expansion, sent at the partition epoch
    the shrink's answer taught it, commits too; its session then expires and broker 2, in the ISR only through that
    expansion, leads. (The broker half, tests/test_kafka_partition.py, shows Kafka's Partition committing a record
    over itself alone between the two: the late record of the shrink ended the expansion it had proposed.)"""
    setup = (op_register(1), op_register(2), op_heartbeat(1), op_heartbeat(2), op_topic((1, 2)))
    ops = (op_alter("L", "c", "c", (1,)), op_alter("L", "c", "c", (1, 2)), op_expire(1))
    (steps,) = _run(version, [Script(setup + ops, True, 1)])
    shrink, expand, expire = steps[len(setup):]
    assert shrink.result == expand.result == "NONE"
    assert shrink.partition is not None and expand.partition is not None and expire.partition is not None
    assert (shrink.partition.isr, expand.partition.isr) == ((1,), (1, 2))
    assert expand.partition.partition_epoch == shrink.partition.partition_epoch + 1
    assert (expire.partition.leader, expire.partition.isr) == (2, (2,))
