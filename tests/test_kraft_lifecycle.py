"""The KRaft broker lifecycle in the replication model (issue 15): controlled shutdown, unfencing once caught up,
who is active (may lead or join the ISR), the AlterPartition check of shutting-down replicas, and the two
invariants `kraft.isr-unfenced` and `kraft.shutdown-leads-nothing`.

Every expectation is Kafka's, cited at each test: the controller's `ReplicationControlManager`,
`BrokerHeartbeatManager`, `ClusterControlManager` and `PartitionChangeBuilder` (metadata module) and their unit
tests, and `Partition.isReplicaIsrEligible` on the broker. The conformance of these rules against Kafka's jars
through the bridge is tests/test_kafka_kraft_controller.py's. Deep searches are marked slow.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import replace

import pytest

from kcheck.invariants.replication import FAST, check_replication
from kcheck.invariants.replication_model_adapter import ReplicationModel
from kcheck.model.replication import protocol as P
from kcheck.model.replication.actions import (
    Action,
    Config,
    active_view,
    apply,
    image,
    initial_state,
    successors,
)
from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import (
    NO_LEADER,
    AlterPartition,
    AlterPartitionResponse,
    ControlledShutdown,
    LeaderAndIsr,
    State,
)
from kcheck.model.search import exhaust

CURRENT = Protocol.current()
QUIET = dict(crashes=0, lossy_crashes=0, fences=0, elections=0, isr_shrinks=0, failovers=0, reads=0, records=0,
             atomic_fetch=True, duplicates=False, max_leader_epoch=3)


def _cfg(**kw: object) -> Config:
    return Config(**{**QUIET, "shutdowns": 1, **kw})  # type: ignore[arg-type]


def _do(s: State, cfg: Config, kind: str, *args: object, p: Protocol = CURRENT) -> State:
    nxt = apply(s, p, cfg, Action(kind, tuple(args)))
    assert nxt is not None, f"{kind}{args} is not enabled"
    return nxt


def _enabled(s: State, cfg: Config, kind: str, *args: object, p: Protocol = CURRENT) -> bool:
    return apply(s, p, cfg, Action(kind, tuple(args))) is not None


def _shutdown(s: State, cfg: Config, broker: int, p: Protocol = CURRENT) -> State:
    """The broker asks to shut down and the controller handles its request."""
    s = _do(s, cfg, "controlled_shutdown", broker, p=p)
    m = next(m for m in s.pool if isinstance(m, ControlledShutdown) and m.frm == broker)
    return _do(s, cfg, "handle_controlled_shutdown", m, False, p=p)


def _catch_up(s: State, cfg: Config, *brokers: int) -> State:
    for b in brokers:
        while _enabled(s, cfg, "apply_metadata", b):
            s = _do(s, cfg, "apply_metadata", b)
    return s


# ---- controlled shutdown ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["kraft", "zookeeper"])
def test_controlled_shutdown_of_the_leader_moves_leadership_to_the_next_isr_member(mode):
    # ReplicationControlManagerTest.testProcessBrokerHeartbeatInControlledShutdown: brokers 0,1,2 all in the ISR,
    # leader 0 heartbeats wantShutDown -> one BrokerRegistrationChangeRecord(inControlledShutdown) and one
    # PartitionChangeRecord(isr=[1,2], leader=1). ZooKeeper mode: KafkaController.doControlledShutdown, the same
    # move sent as LeaderAndIsr.
    cfg = _cfg(brokers=3, min_isr=2, metadata=mode)
    s = _shutdown(initial_state(cfg), cfg, 1)
    reg = s.registry
    assert (reg.leader, reg.isr, reg.shutting_down, reg.fenced) == (2, {2, 3}, {1}, frozenset())
    assert s.replica(1).alive and s.used.shutdowns == 1
    if mode == "kraft":
        assert s.metadata[-1].kind == "BrokerRegistrationChangeRecord+PartitionChangeRecord"
        assert s.metadata[-1].image == reg
    else:
        told = {m.to for m in s.pool if isinstance(m, LeaderAndIsr) and m.leader == 2}
        assert told == {1, 2, 3}
    assert not _enabled(s, cfg, "controlled_shutdown", 1)  # asked once; the budget is spent as well


def test_shutdown_completes_once_every_active_broker_applied_it():
    # BrokerHeartbeatManager.calculateNextBrokerState (CONTROLLED_SHUTDOWN): SHUTDOWN_NOW only when the broker leads
    # nothing and controlledShutdownOffset <= lowestActiveOffset; BrokerHeartbeatManagerTest.
    # testCalculateNextBrokerState: broker 5 stays in CONTROLLED_SHUTDOWN while active broker 1 lags (offset 98 <
    # 99), and is let go once broker 1 is fenced. Then ReplicationControlManager.handleBrokerFenced: fenced, out of
    # every ISR; the registration keeps inControlledShutdown until the broker registers again.
    cfg = _cfg(brokers=3, min_isr=2, fences=1)
    s = _shutdown(initial_state(cfg), cfg, 1)
    assert not _enabled(s, cfg, "complete_shutdown", 1)
    s2 = _catch_up(s, cfg, 2)
    assert not _enabled(s2, cfg, "complete_shutdown", 1)  # broker 3 has not seen it
    # fencing the laggard takes it out of the active set: the shutdown may complete
    assert _enabled(_do(s2, cfg, "fence", 3), cfg, "complete_shutdown", 1)
    done = _do(_catch_up(s2, cfg, 3), cfg, "complete_shutdown", 1)
    r, reg = done.replica(1), done.registry
    assert not r.alive and r.clean_shutdown and r.flushed == r.leo
    assert 1 in reg.fenced and 1 in reg.shutting_down and reg.leader == 2 and 1 not in reg.isr
    assert done.metadata[-1].kind == "BrokerRegistrationChangeRecord"
    back = _do(done, cfg, "restart", 1)  # a new RegisterBrokerRecord: not in controlled shutdown, fenced
    assert 1 not in back.registry.shutting_down and 1 in back.registry.fenced
    assert back.registry.broker_epochs[0] == 2


def test_zookeeper_shutdown_completes_once_the_broker_leads_nothing():
    # KafkaController.doControlledShutdown answers with the partitions the broker still leads; the broker stops
    # when there are none, and the controller learns it when its session ends (a later fence).
    cfg = _cfg(brokers=3, min_isr=2, metadata="zookeeper")
    s = _do(_shutdown(initial_state(cfg), cfg, 1), cfg, "complete_shutdown", 1)
    assert not s.replica(1).alive and 1 not in s.registry.fenced and s.registry.leader == 2
    assert 1 in _do(s, cfg, "fence", 1).registry.fenced  # healing: the session expiry


@pytest.mark.parametrize("mode", ["kraft", "zookeeper"])
def test_a_follower_that_leads_nothing_stops_at_once(mode):
    # calculateNextBrokerState: an UNFENCED broker that wants to shut down and has no leaderships goes straight to
    # SHUTDOWN_NOW (BrokerHeartbeatManagerTest.testCalculateNextBrokerState, broker 1 with () -> false), which
    # ReplicationControlManager.processBrokerHeartbeat handles as handleBrokerFenced.
    cfg = _cfg(brokers=3, min_isr=2, metadata=mode)
    s = _shutdown(initial_state(cfg), cfg, 3)
    reg = s.registry
    assert not s.replica(3).alive and reg.leader == 1 and reg.isr == {1, 2}
    assert (3 in reg.fenced) == (mode == "kraft")


def test_last_isr_member_in_controlled_shutdown_joins_the_elr_and_leads_again_once_back():
    # KIP-966: PartitionChangeBuilder.maybePopulateTargetElr keeps a replica leaving an ISR below
    # min.insync.replicas as eligible (PartitionChangeBuilderTest.testEligibleLeaderReplicas_IsrCanShrinkToZero),
    # but a broker in controlled shutdown is not an acceptable leader (isAcceptableLeader excludes brokerToRemove
    # and any broker that is not ClusterControlManager.isActive), so the partition has no leader. Once it is back
    # and unfenced, handleBrokerUnfenced elects it from the ELR for the leaderless partition.
    cfg = _cfg(brokers=2, min_isr=2, initial_isr=1)
    s = _shutdown(initial_state(cfg), cfg, 1)
    reg = s.registry
    assert (reg.leader, reg.isr, reg.elr, reg.last_known_leader) == (NO_LEADER, frozenset(), {1}, 1)
    assert not _enabled(s, cfg, "elect")  # neither the ELR member nor the last known leader is active
    s = _do(_catch_up(s, cfg, 2), cfg, "complete_shutdown", 1)
    s = _do(_do(s, cfg, "restart", 1), cfg, "unfence", 1)
    reg = _do(s, cfg, "elect").registry
    assert (reg.leader, reg.isr, reg.elr) == (1, {1}, frozenset())


def test_last_isr_member_without_elr_keeps_the_isr_and_loses_the_leader():
    # Without ELR (PartitionChangeBuilder.build: an empty target ISR is not written unless ELR is enabled) the ISR
    # stays [1] and the election finds no acceptable leader: leader -1.
    p = replace(CURRENT, leader_choice=P.clean_only, isr_removal=P.keep_last_replica,
                last_known_leader=P.no_last_known_leader)
    cfg = _cfg(brokers=2, min_isr=1, initial_isr=1)
    reg = _shutdown(initial_state(cfg), cfg, 1, p=p).registry
    assert (reg.leader, reg.isr, reg.elr) == (NO_LEADER, {1}, frozenset())


def test_fenced_broker_in_controlled_shutdown_stops_at_once_and_is_never_unfenced():
    # BrokerHeartbeatManager.touch(fenced) drops the controlled-shutdown offset; a FENCED broker that wants to shut
    # down gets SHUTDOWN_NOW, never UNFENCED (testCalculateNextBrokerState, broker 0).
    cfg = _cfg(brokers=3, min_isr=2, fences=1)
    s = _do(_shutdown(initial_state(cfg), cfg, 1), cfg, "fence", 1)
    assert not _enabled(s, cfg, "unfence", 1)
    assert not _do(s, cfg, "complete_shutdown", 1).replica(1).alive


# ---- AlterPartition and the leader's ISR proposal ----------------------------------------------------------


def test_alter_partition_refuses_a_shutting_down_replica():
    # ReplicationControlManagerTest.testAlterPartitionShouldRejectShuttingDownBrokers: broker 3 in controlled
    # shutdown, an AlterPartition adding it back -> INELIGIBLE_REPLICA (ineligibleReplicasForIsr: "shutting down",
    # checked before "fenced" and the broker epoch).
    cfg = _cfg(brokers=3, min_isr=1)
    s = _shutdown(initial_state(cfg), cfg, 1)  # leader 2, ISR {2,3}
    reg = replace(s.registry, isr=frozenset({2}), shutting_down=frozenset({1, 3}))
    epochs = {b: reg.broker_epochs[b - 1] for b in (2, 3)}
    assert not P.isr_members_eligible(reg, frozenset({2, 3}), epochs)
    assert not P.added_replicas_unfenced(reg, frozenset({2, 3}), epochs)  # KIP-841 refused it too
    assert P.added_replicas_current_epoch_shutdown_unchecked(reg, frozenset({2, 3}), epochs)
    assert P.isr_members_eligible(replace(reg, shutting_down=frozenset({1})), frozenset({2, 3}), epochs)
    # end to end: the controller answers INELIGIBLE_REPLICA and writes nothing
    s = replace(s, registry=reg)
    req = AlterPartition(2, reg.leader_epoch, reg.partition_epoch, (2, 3), tuple(sorted(epochs.items())))
    s = replace(s, pool=s.pool | {req})
    out = _do(s, cfg, "handle_alter_partition", req, False)
    (answer,) = [m for m in out.pool if isinstance(m, AlterPartitionResponse)]
    assert answer.error == "INELIGIBLE_REPLICA" and out.registry.isr == {2}


def test_leader_does_not_propose_a_shutting_down_follower():
    # Partition.isReplicaIsrEligible (KRaft): a follower in controlled shutdown in the leader's metadata image is
    # not proposed, however caught up; with the relaxed broker_active rule it is. (With one partition Kafka's
    # shutting-down broker never gets there: it stops fetching what it is not in sync for, ReplicaManager.
    # applyLocalFollowersDelta; so the leader's view of its fetch is set here by hand.)
    cfg = _cfg(brokers=3, min_isr=1)
    s = _catch_up(_shutdown(initial_state(cfg), cfg, 1), cfg, 1, 2, 3)  # leader 2, ISR {2,3}
    s = _do(s, cfg, "truncate", 1)
    assert not _enabled(s, cfg, "fetch", 1)
    leader = s.replica(2)
    s = s.with_replica(leader.with_view(1, s.replica(1).leo, s.replica(1).broker_epoch))
    assert 1 in image(s, 2).shutting_down
    # the check itself, asked at a moment of its own (`expand_at_any_time`: Kafka asks it only right after a fetch)
    anytime = replace(CURRENT, isr_expansion=P.expand_at_any_time)
    assert not _enabled(s, cfg, "expand_isr", 2, 1, p=anytime)
    relaxed = replace(anytime, broker_active=P.active_unless_fenced)
    assert _enabled(s, cfg, "expand_isr", 2, 1, p=relaxed)


def test_active_view_is_the_registry_itself_while_nobody_shuts_down():
    # The broker_active rule changes no existing row: the election rules get the very same registry.
    for name, v in P.VARIANTS.items():
        cfg = Config.from_dict({**Config().as_dict(), **v.settings})
        reg = initial_state(cfg).registry
        assert active_view(reg, v.protocol) is reg, name
        fenced = replace(reg, fenced=frozenset({1}))
        assert active_view(fenced, v.protocol) is fenced, name
    reg = replace(initial_state(_cfg()).registry, shutting_down=frozenset({2}), fenced=frozenset({3}))
    assert active_view(reg, CURRENT).fenced == {2, 3}
    assert active_view(reg, replace(CURRENT, broker_active=P.active_unless_fenced)) is reg


# ---- unfencing and registration ----------------------------------------------------------------------------


def test_broker_is_not_unfenced_before_it_applied_its_registration():
    # BrokerHeartbeatManager.calculateNextBrokerState (FENCED): UNFENCED only when the heartbeat's metadata offset
    # reached the broker's RegisterBrokerRecord offset (testCalculateNextBrokerState: offset 50 < 100 stays
    # FENCED, 100 unfences). A broker that acts before catching up (restart_reads_metadata's alternative) starts
    # behind its own registration.
    p = replace(CURRENT, restart_reads_metadata=P.await_leader_and_isr)
    cfg = _cfg(brokers=2, min_isr=1, crashes=1, shutdowns=0)
    s = _do(_do(initial_state(cfg), cfg, "crash", 2, False, p=p), cfg, "restart", 2, p=p)
    assert 2 in s.registry.fenced
    assert image(s, 2).broker_epochs[1] != s.registry.broker_epochs[1]
    assert not _enabled(s, cfg, "unfence", 2, p=p)
    assert _enabled(s, cfg, "unfence", 2, p=replace(p, unfence_when=P.unfence_at_once))
    s = _catch_up(s, cfg, 2)
    assert _enabled(s, cfg, "unfence", 2, p=p)


def test_fast_bounce_registers_as_after_the_old_session_expired():
    # ClusterControlManager.registerBroker (4.4.0) refuses a new incarnation while the old registration's session
    # is valid (DuplicateBrokerRegistrationException, "should self-resolve once the heartbeat manager expires the
    # broker's session") and accepts it once the controller fenced the old one. The model's restart is that
    # registration with the expiry folded in: a crash and a restart before the controller noticed end where the
    # noticed case ends (the old epoch fenced, out of the ISR, a new broker epoch).
    for mode in ("kraft", "zookeeper"):
        cfg = _cfg(brokers=3, min_isr=2, crashes=1, shutdowns=0, metadata=mode)
        crashed = _do(initial_state(cfg), cfg, "crash", 1, False)
        fast = _do(crashed, cfg, "restart", 1)
        noticed = _do(_do(crashed, cfg, "fence", 1), cfg, "restart", 1)
        assert fast.registry == noticed.registry
        assert fast.registry.leader == 2 and 1 in fast.registry.fenced and fast.registry.broker_epochs[0] == 2


# ---- the invariants, exhaustively --------------------------------------------------------------------------

SMALL = dict(brokers=2, min_isr=1, records=1)


@pytest.mark.parametrize("mode", ["kraft", "zookeeper"])
def test_exhaustive_search_with_a_shutdown_finds_no_violation(mode):
    res = exhaust(ReplicationModel(CURRENT, _cfg(**SMALL, metadata=mode)), max_states=200_000)
    assert res.complete and res.counterexample is None, res
    assert res.states > 500


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["kraft", "zookeeper"])
def test_exhaustive_search_three_brokers_and_a_fence(mode):
    for cfg in (_cfg(brokers=3, min_isr=2, records=1, metadata=mode),
                _cfg(brokers=2, min_isr=1, records=1, fences=1, metadata=mode)):
        res = exhaust(ReplicationModel(CURRENT, cfg), max_states=1_000_000)
        assert res.complete and res.counterexample is None, res


def test_isr_unfenced_breaks_when_alter_partition_accepts_any_isr():
    # The ZooKeeper-era AlterPartition rule (nobody checks who joins) lets a follower fenced while the leader's
    # proposal is in flight into the ISR: what ineligibleReplicasForIsr's "fenced" test prevents.
    # Both from the late-record fix: at these bounds (a shrink, then the follower proposed again) Kafka's own rule
    # for a late metadata record breaks replication.maximal-isr-covers-quorum first (docs/findings.md).
    fixed = replace(CURRENT, partition_state_applies=P.skip_known_partition_epoch)
    wrong = replace(fixed, name="any-isr", alter_partition_validation=P.accept_any_isr)
    cfg = _cfg(brokers=2, min_isr=1, fences=1, isr_shrinks=1, shutdowns=0)
    res = exhaust(ReplicationModel(wrong, cfg), max_states=200_000)
    assert res.counterexample is not None and res.counterexample.invariant == "kraft.isr-unfenced"
    assert exhaust(ReplicationModel(fixed, cfg), max_states=200_000).complete


def test_shutdown_leads_nothing_breaks_with_wrong_lifecycle_rules():
    # A broker in controlled shutdown counted active (so re-elected from the ELR) and let go while it leads: in
    # ZooKeeper mode nothing fences it as it stops, and it stays the leader of an offline partition.
    wrong = replace(CURRENT, name="wrong-shutdown", broker_active=P.active_unless_fenced,
                    shutdown_granted=P.shut_down_when_asked)
    cfg = _cfg(brokers=2, min_isr=1, initial_isr=1, metadata="zookeeper")
    res = exhaust(ReplicationModel(wrong, cfg), max_states=200_000)
    assert res.counterexample is not None and res.counterexample.invariant == "kraft.shutdown-leads-nothing"
    steps = [a.split()[0] for a, _ in res.counterexample.steps[1:]]
    assert steps == ["controlled_shutdown", "handle_controlled_shutdown", "complete_shutdown"]
    # KRaft's SHUTDOWN_NOW fences and re-elects in the same batch: the same rules break nothing there
    assert exhaust(ReplicationModel(wrong, replace(cfg, metadata="kraft")), max_states=200_000).complete


def _reachable(p: Protocol, cfg: Config, limit: int = 3000) -> list[State]:
    seen: set[State] = set()
    todo, out = [initial_state(cfg)], list[State]()
    while todo and len(out) < limit:
        s = todo.pop()
        if s in seen:
            continue
        seen.add(s)
        out.append(s)
        todo.extend(t for _, t in successors(s, p, cfg))
    return out


def test_twins_and_fast_successors_agree_on_lifecycle_states():
    wrong = replace(CURRENT, broker_active=P.active_unless_fenced, shutdown_granted=P.shut_down_when_asked)
    for p, cfg in ((CURRENT, _cfg(**SMALL)), (wrong, _cfg(brokers=2, min_isr=1, initial_isr=1,
                                                                     metadata="zookeeper"))):
        model = ReplicationModel(p, cfg)
        kinds = set()
        for s in _reachable(p, cfg):
            fast = [(a, t) for _, a, t in model.successors(s)]
            slow = successors(s, p, cfg)
            assert fast == slow
            kinds |= {a.kind for a, _ in slow}
            report = check_replication(s, cfg, {"kraft.isr-unfenced", "kraft.shutdown-leads-nothing"})
            bad = {v.invariant for v in report.violations}
            for check, twin in FAST.items():
                if check.__name__ in ("isr_unfenced", "shutdown_leads_nothing"):
                    inv = "kraft.isr-unfenced" if check.__name__ == "isr_unfenced" else "kraft.shutdown-leads-nothing"
                    assert twin(s, cfg) == (inv not in bad)
        assert {"controlled_shutdown", "handle_controlled_shutdown", "complete_shutdown"} <= kinds


# ---- a user's module --------------------------------------------------------------------------------------


def test_a_user_module_swaps_the_lifecycle_rules(tmp_path):
    (tmp_path / "lazy_shutdown.py").write_text(textwrap.dedent('''
        from dataclasses import replace
        from kcheck.model.replication.protocol import Protocol

        def unfenced_is_enough(registry, broker):
            return broker not in registry.fenced

        def stop_when_asked(registry, broker, caught_up):
            return True

        proposed = replace(Protocol.current(), name="lazy-shutdown", broker_active=unfenced_is_enough,
                           shutdown_granted=stop_when_asked)
    '''))
    run = subprocess.run(
        [sys.executable, "-m", "kcheck", "exhaust", "--protocol", "lazy_shutdown:proposed", "--brokers", "2",
         "--min-isr", "1", "--initial-isr", "1", "--records", "0", "--crashes", "0", "--lossy-crashes", "0",
         "--fences", "0", "--elections", "0", "--isr-shrinks", "0", "--failovers", "0", "--reads", "0",
         "--shutdowns", "1", "--metadata", "zookeeper", "--no-duplicates", "--atomic-fetch"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-2000:]
    assert "kraft.shutdown-leads-nothing" in out


def test_rules_are_listed_with_kafka_sources():
    names = Protocol.rule_names()
    for rule in ("broker_active", "unfence_when", "shutdown_granted"):
        assert rule in names
        assert getattr(CURRENT, rule).__doc__
    assert CURRENT.broker_active is P.active_unless_fenced_or_shutting_down
    assert CURRENT.unfence_when is P.caught_up_to_registration
    assert CURRENT.shutdown_granted is P.leaderless_and_seen
    assert "isActive" in P.active_unless_fenced_or_shutting_down.__doc__
    assert "calculateNextBrokerState" in P.leaderless_and_seen.__doc__
