"""ZooKeeper-era control requests across a broker's bounce (issue 36, item 1): what the controller's channel keeps
when the recipient dies, the recipient's broker epoch each request carries (KIP-380, KAFKA-7235), and the broker's
check of it. Expected behaviour from Kafka 3.9's code and tests: `ControllerChannelManager` (RequestSendThread
re-sends on a new connection; `removeBroker` clears the queue), `KafkaController.processBrokerChange` (bounced
brokers), `ZkBrokerEpochManager.isBrokerEpochStale` and KafkaApisTest's `test{LeaderAndIsr,StopReplica}Request
With{Current,Newer,Stale}BrokerEpoch...`."""

from __future__ import annotations

from dataclasses import replace

from kcheck.invariants.replication_rows import ROW_15, ROW_SCRIPTS, cfg_for, run_script
from kcheck.model.replication import VARIANTS, Config, Protocol, initial_state
from kcheck.model.replication import protocol as P
from kcheck.model.replication.actions import Action, apply
from kcheck.model.replication.state import LeaderAndIsr, Replica, State, StopReplica

CURRENT = Protocol.current()
ZK = Config(brokers=2, min_isr=1, isr_shrinks=1, lossy_crashes=1, metadata="zookeeper")
# A restart that waits for the controller's LeaderAndIsr (`KafkaController.onBrokerStartup`), as ZooKeeper mode does
WAITS = replace(CURRENT, name="zk", restart_reads_metadata=P.await_leader_and_isr)


def _step(s: State, p: Protocol, cfg: Config, kind: str, *args: object) -> State:
    nxt = apply(s, p, cfg, Action(kind, tuple(args)))
    assert nxt is not None, f"{kind}{args} is not enabled"
    return nxt


def _requests_to(s: State, broker: int) -> list:
    return [m for m in s.messages() if isinstance(m, (LeaderAndIsr, StopReplica)) and m.to == broker]


def _isr_shrunk(p: Protocol) -> State:
    """Leader 1 drops follower 2: the controller writes ISR {1} and queues a LeaderAndIsr for each broker."""
    s = _step(initial_state(ZK), p, ZK, "shrink_isr", 1, 2)
    (request,) = [m for m in s.messages() if m.kind == "AlterPartition"]
    return _step(s, p, ZK, "handle_alter_partition", request, False)


def test_the_broker_epoch_check_is_kafkas():
    """`isBrokerEpochStale`: below the broker's own epoch is stale; the same or a newer one (the controller may learn
    a new registration before the broker does) is valid; -1 (UNKNOWN_BROKER_EPOCH) is not checked."""
    r = Replica(id=1, broker_epoch=5)
    for sent, valid in ((5, True), (6, True), (4, False), (-1, True)):
        m = LeaderAndIsr(1, 1, 1, 1, 1, (1,), (1,), sent)
        assert P.refuse_stale_broker_epoch(r, m) is valid, sent
        assert P.refuse_stale_broker_epoch(r, StopReplica(1, 1, 1, 1, sent)) is valid, sent
        assert P.accept_any_broker_epoch(r, m)
    assert CURRENT.control_request_incarnation is P.refuse_stale_broker_epoch
    assert all(Protocol.current(v).control_request_incarnation is P.refuse_stale_broker_epoch
               for v in ("3.9.0", "4.0.2", "4.4.0"))


def test_requests_carry_the_recipients_registered_broker_epoch():
    s = _isr_shrunk(CURRENT)
    assert {(m.to, m.broker_epoch) for m in _requests_to(s, 1) + _requests_to(s, 2)} == {(1, 1), (2, 1)}


def test_the_controllers_queue_outlives_the_recipients_crash_until_it_handles_the_failure():
    s = _isr_shrunk(CURRENT)
    crashed = _step(s, CURRENT, ZK, "crash", 1, False)
    # the leader's AlterPartition answer dies with its connection; the controller's request to it waits
    assert [m.kind for m in crashed.messages() if getattr(m, "to", None) == 1] == ["LeaderAndIsr"]
    # `processBrokerChange` -> `removeBroker`: the dead broker's queue is cleared
    assert not _requests_to(_step(crashed, CURRENT, ZK, "fence", 1), 1)
    # a rule that loses every message to a crashed broker (the model's before) can still be swapped in
    def everything_to_it_lost(broker, m):
        return getattr(m, "to", None) == broker

    assert not _requests_to(_step(s, replace(CURRENT, crash_drops=everything_to_it_lost), ZK, "crash", 1, False), 1)


def test_the_new_incarnation_refuses_what_was_queued_for_the_old_one():
    s = _step(_isr_shrunk(WAITS), WAITS, ZK, "crash", 1, False)
    (stale,) = _requests_to(s, 1)
    today = _step(s, WAITS, ZK, "restart", 1)
    (fresh,) = _requests_to(today, 1)  # STALE_BROKER_EPOCH: the old request is gone, onBrokerStartup's is there
    assert (stale.broker_epoch, fresh.broker_epoch, today.replica(1).broker_epoch) == (1, 2, 2)
    assert _step(today, WAITS, ZK, "handle_leader_and_isr", fresh, False).replica(1).known
    old = replace(WAITS, control_request_incarnation=P.accept_any_broker_epoch)
    before_kip_380 = _step(s, old, ZK, "restart", 1)
    assert set(_requests_to(before_kip_380, 1)) == {stale, fresh}
    applied = _step(before_kip_380, old, ZK, "handle_leader_and_isr", stale, False).replica(1)
    assert (applied.leader, applied.leader_epoch, applied.isr) == (1, 1, {1})  # leads the epoch it no longer has


def test_row_15_breaks_log_matching_only_without_the_broker_epoch():
    script, expected = ROW_SCRIPTS["stale-control-request"]
    assert script is ROW_15
    cfg = cfg_for("stale-control-request")
    played, violated, _ = run_script(VARIANTS["stale-control-request"].protocol, cfg, script)
    assert (played, violated) == (len(script), [expected])
    # today's rules, with the same restart: the stale LeaderAndIsr is refused, the script stops there
    stop = script.index(("handle_leader_and_isr", {"to": 1, "leader_epoch": 1}))
    assert run_script(replace(VARIANTS["stale-control-request"].protocol, control_request_incarnation=
                              P.refuse_stale_broker_epoch), cfg, script)[:2] == (stop, [])
