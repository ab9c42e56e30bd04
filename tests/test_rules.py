"""Every protocol decision is a rule (issue 20, point 1): each rule added to `Protocol` is the one place its
decision is made, so replacing it changes what the model does in a state where today's rule decides
otherwise. Each test builds that state with the model's own actions and compares today's rule with a
shipped alternative (or, where none fits, a rule written here)."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from kcheck.model.replication import VARIANTS, Config, Protocol, initial_state
from kcheck.model.replication import protocol as P
from kcheck.model.replication.actions import Action, apply
from kcheck.model.replication.state import (
    AlterPartition,
    AlterPartitionResponse,
    FetchRequest,
    FetchResponse,
    LeaderAndIsr,
    Registry,
    State,
    request_key,
)

CURRENT = Protocol.current()


def _with(**rules: object) -> Protocol:
    return replace(CURRENT, name="test", **rules)


def _step(s: State, p: Protocol, cfg: Config, kind: str, *args: object) -> State:
    nxt = apply(s, p, cfg, Action(kind, tuple(args)))
    assert nxt is not None, f"{kind}{args} is not enabled"
    return nxt


def _messages(s: State, cls: type) -> list:
    return [m for m in s.messages() if isinstance(m, cls)]


def test_every_rule_is_a_field_holding_a_plain_function_and_current_sets_each():
    names = Protocol.rule_names()
    assert set(names) == {f.name for f in fields(Protocol)} - {"name", "description"}
    for n in names:
        fn = getattr(CURRENT, n)
        assert callable(fn) and fn.__doc__, n
    # rules added for issue 20, each with its default today's behaviour
    for n in ("fetch_leader_epoch", "accept_fetch_response", "partition_state_applies", "leader_keeps_follower_state",
              "produce_accepted", "ack_complete", "consumer_read_limit", "alter_partition_rollback",
              "alter_partition_fencing", "valid_leader", "leader_epoch_bump", "crash_drops", "restart_reads_metadata"):
        assert n in names


def test_send_leader_epoch_still_answers_for_the_fetch_rule():
    assert CURRENT.send_leader_epoch
    assert not VARIANTS["no-epoch-in-fetch"].protocol.send_leader_epoch
    assert VARIANTS["no-epoch-in-fetch"].protocol.fetch_leader_epoch is P.no_epoch_in_fetch


def test_fetch_leader_epoch_decides_what_a_fetch_carries():
    cfg = Config(brokers=2, min_isr=1)
    s = initial_state(cfg)
    (today,) = _messages(_step(s, CURRENT, cfg, "fetch", 2), FetchRequest)
    (before_kip_320,) = _messages(_step(s, _with(fetch_leader_epoch=P.no_epoch_in_fetch), cfg, "fetch", 2),
                                  FetchRequest)
    assert today.current_epoch == 1 and before_kip_320.current_epoch == -1


def _refuse(*_: object) -> bool:
    return False


def test_accept_fetch_response_decides_whether_a_response_is_applied():
    cfg = Config(brokers=2, min_isr=1)
    s = _step(initial_state(cfg), CURRENT, cfg, "produce", 1, "all")
    s = _step(s, CURRENT, cfg, "fetch", 2)
    (req,) = _messages(s, FetchRequest)
    assert _messages(_step(s, CURRENT, cfg, "handle_fetch", req, False), FetchResponse)
    # a follower that refuses every response: the model drops it at once
    assert not _messages(_step(s, _with(accept_fetch_response=_refuse), cfg, "handle_fetch", req, False), FetchResponse)


def test_partition_state_applies_decides_whether_a_leader_and_isr_is_applied():
    cfg = Config(brokers=2, min_isr=1, elections=1, metadata="zookeeper")  # a refused request is dropped
    s = _step(initial_state(cfg), CURRENT, cfg, "move_leader", 2)
    assert _messages(s, LeaderAndIsr)
    assert not _messages(_step(initial_state(cfg), _with(partition_state_applies=_refuse), cfg, "move_leader", 2),
                         LeaderAndIsr)
    # KRaft: the broker applies the batch either way (its image moves on); its partition state only if the rule says
    cfg = Config(brokers=2, min_isr=1, elections=1)
    s = _step(_step(initial_state(cfg), CURRENT, cfg, "move_leader", 2), CURRENT, cfg, "apply_metadata", 2)
    assert s.replica(2).is_leader and s.replica(2).applied == 1
    refusing = _with(partition_state_applies=_refuse)
    s = _step(_step(initial_state(cfg), refusing, cfg, "move_leader", 2), refusing, cfg, "apply_metadata", 2)
    assert not s.replica(2).is_leader and s.replica(2).applied == 1


def test_leader_keeps_follower_state_decides_what_a_re_elected_leader_remembers():
    cfg = Config(brokers=2, min_isr=1, atomic_fetch=True)
    s = _step(_step(initial_state(cfg), CURRENT, cfg, "produce", 1, "all"), CURRENT, cfg, "fetch_round", 2)
    assert s.replica(1).view_of(2) == 0
    # the same leader in a new leader epoch (as after a reassignment that removed a replica)
    m = LeaderAndIsr(1, 1, 1, 2, 2, (1, 2), (1, 2))
    s = State(s.replicas, s.registry, s.zombies, s.pool | {m}, s.history, s.used)
    # Kafka's `Partition.makeLeader`: the broker already led, so `resetReplicaState` keeps the follower's offset
    kept = _step(s, CURRENT, cfg, "handle_leader_and_isr", m, False).replica(1)
    assert kept.view_of(2) == 0 and kept.epoch_start == 1 and kept.leader_epoch == 2 and not kept.fetched_in_epoch(2)
    strict = _with(leader_keeps_follower_state=P.forget_followers_every_epoch)
    assert _step(s, strict, cfg, "handle_leader_and_isr", m, False).replica(1).view_of(2) is None
    # `updateAssignmentAndIsr`: a replica no longer assigned is dropped whatever the rule says
    gone = LeaderAndIsr(1, 1, 1, 2, 2, (1,), (1,))
    s = State(s.replicas, s.registry, s.zombies, s.pool | {gone}, s.history, s.used)
    assert _step(s, CURRENT, cfg, "handle_leader_and_isr", gone, False).replica(1).view_of(2) is None


def test_produce_accepted_and_ack_complete_decide_acks_all_below_min_isr():
    cfg = Config(brokers=2, min_isr=2, initial_isr=1)
    s = initial_state(cfg)
    assert apply(s, CURRENT, cfg, Action("produce", (1, "all"))) is None  # NotEnoughReplicas
    loose = _with(produce_accepted=P.accept_every_write, high_watermark=P.over_maximal_isr)
    s = _step(_step(s, loose, cfg, "produce", 1, "all"), loose, cfg, "advance_hw", 1)
    assert s.replica(1).hw == 1 and not s.history.acked  # NOT_ENOUGH_REPLICAS_AFTER_APPEND
    loosest = replace(loose, ack_complete=P.ack_at_high_watermark)
    s = _step(_step(initial_state(cfg), loosest, cfg, "produce", 1, "all"), loosest, cfg, "advance_hw", 1)
    assert s.history.acked == {(0, 1)}


def test_consumer_read_limit_decides_what_a_consumer_may_read():
    cfg = Config(brokers=2, min_isr=1, acks=("1",))
    s = _step(initial_state(cfg), CURRENT, cfg, "produce", 1, "1")
    assert s.replica(1).hw == 0
    assert apply(s, CURRENT, cfg, Action("consume", (1, 0))) is None
    uncommitted = _with(consumer_read_limit=P.read_to_log_end)
    assert _step(s, uncommitted, cfg, "consume", 1, 0).history.reads == {(0, 1)}


def test_alter_partition_fencing_decides_the_controllers_epoch_checks():
    cfg = Config(brokers=2, min_isr=1, isr_shrinks=1)
    s = initial_state(cfg)
    stale = AlterPartition(1, 1, 0, (1,), ((1, 1),))  # the right leader epoch, an older partition epoch
    s = State(s.replicas, s.registry, s.zombies, s.pool | {stale}, s.history, s.used)
    refused = _step(s, CURRENT, cfg, "handle_alter_partition", stale, False)
    assert refused.registry.isr == {1, 2}
    assert [m.error for m in _messages(refused, AlterPartitionResponse)] == ["INVALID_UPDATE_VERSION"]
    accepted = _step(s, _with(alter_partition_fencing=P.leader_epoch_only), cfg, "handle_alter_partition", stale, False)
    assert accepted.registry.isr == {1}


def test_alter_partition_rollback_decides_what_an_error_answer_does():
    cfg = Config(brokers=2, min_isr=1, isr_shrinks=1)
    s = _step(initial_state(cfg), CURRENT, cfg, "shrink_isr", 1, 2)
    (request,) = _messages(s, AlterPartition)
    assert s.replica(1).pending_isr == {1} and s.replica(1).sent == s.replica(1).in_flight == request_key(request)
    answer = AlterPartitionResponse(1, 1, 1, (1,), "INVALID_UPDATE_VERSION", request_key(request))
    s = State(s.replicas, s.registry, s.zombies, s.pool | {answer}, s.history, s.used)
    kept = _step(s, CURRENT, cfg, "handle_alter_partition_response", answer, False).replica(1)
    assert kept.pending_isr == {1} and kept.in_flight is None  # answered: released, but still pending
    simple = _with(alter_partition_rollback=P.roll_back_on_any_error)
    rolled = _step(s, simple, cfg, "handle_alter_partition_response", answer, False).replica(1)
    assert rolled.pending_isr is None and rolled.sent is None and rolled.in_flight is None
    # an answer to another request than the one the broker holds is not one it handles
    other = AlterPartitionResponse(1, 1, 1, (1,), "INVALID_UPDATE_VERSION", (1, 0, (1,), ((1, 1),)))
    s = State(s.replicas, s.registry, s.zombies, s.pool | {other}, s.history, s.used)
    assert apply(s, CURRENT, cfg, Action("handle_alter_partition_response", (other, False))) is None


def _anyone_unfenced(registry: Registry, broker: int) -> bool:
    return broker in registry.replicas and broker not in registry.fenced


def test_valid_leader_decides_where_an_election_may_move_leadership():
    cfg = Config(brokers=2, min_isr=1, initial_isr=1, elections=1)
    s = initial_state(cfg)
    assert apply(s, CURRENT, cfg, Action("move_leader", (2,))) is None  # 2 is not in the ISR
    assert _step(s, _with(valid_leader=_anyone_unfenced), cfg, "move_leader", 2).registry.leader == 2


def test_leader_epoch_bump_decides_whether_an_isr_shrink_moves_the_leader_epoch():
    cfg = Config(brokers=2, min_isr=1, isr_shrinks=1)
    for p, epoch in ((CURRENT, 1), (_with(leader_epoch_bump=P.bump_on_isr_shrink_too), 2)):
        s = _step(initial_state(cfg), p, cfg, "shrink_isr", 1, 2)
        (request,) = _messages(s, AlterPartition)
        s = _step(s, p, cfg, "handle_alter_partition", request, False)
        assert (s.registry.isr, s.registry.leader_epoch, s.registry.partition_epoch) == ({1}, epoch, 2)


def test_crash_drops_decides_which_messages_a_crash_destroys():
    cfg = Config(brokers=2, min_isr=1)
    s = _step(initial_state(cfg), CURRENT, cfg, "fetch", 2)
    survived = _step(s, CURRENT, cfg, "crash", 2, False)
    assert [m.frm for m in _messages(survived, FetchRequest)] == [2]
    assert not _step(s, _with(crash_drops=P.connections_die), cfg, "crash", 2, False).pool


def test_a_dead_incarnations_request_is_processed_but_not_answered():
    """KAFKA-14139's ingredient: the leader reads the fetch the follower sent before it died and records it (the
    view KIP-903's broker epoch then tells apart), but the answer has no connection to go back on."""
    cfg = Config(brokers=2, min_isr=1)
    s = _step(initial_state(cfg), CURRENT, cfg, "fetch", 2)
    s = _step(s, CURRENT, cfg, "crash", 2, False)
    s = _step(s, CURRENT, cfg, "restart", 2)
    (request,) = [m for m in _messages(s, FetchRequest) if m.broker_epoch < s.replica(2).broker_epoch]
    s = _step(s, CURRENT, cfg, "handle_fetch", request, False)
    assert dict(s.replica(1).follower_broker_epoch)[2] == request.broker_epoch
    assert not [m for m in s.pool if getattr(m, "to", None) == 2]


def test_restart_reads_metadata_decides_what_a_restarted_broker_knows_before_it_acts():
    cfg = Config(brokers=2, min_isr=1, metadata="zookeeper")
    s = _step(initial_state(cfg), CURRENT, cfg, "crash", 2, False)
    today = _step(s, CURRENT, cfg, "restart", 2)
    assert today.replica(2).known and not [m for m in _messages(today, LeaderAndIsr) if m.to == 2]
    zk = _with(restart_reads_metadata=P.await_leader_and_isr)
    later = _step(s, zk, cfg, "restart", 2)
    assert not later.replica(2).known and not later.replica(2).is_leader
    (m,) = [m for m in _messages(later, LeaderAndIsr) if m.to == 2]
    assert (m.leader, m.leader_epoch, m.partition_epoch) == (1, later.registry.leader_epoch,
                                                             later.registry.partition_epoch)
    assert _step(later, zk, cfg, "handle_leader_and_isr", m, False).replica(2).known
    # KRaft: the restarted broker stands on its own registration batch, or, without the catch-up, reads the log
    # from the batch before it and knows nothing until a batch tells it
    cfg = Config(brokers=2, min_isr=1)
    s = _step(initial_state(cfg), CURRENT, cfg, "crash", 2, False)
    today = _step(s, CURRENT, cfg, "restart", 2)
    assert today.replica(2).known and today.replica(2).applied == len(today.metadata) - 1
    assert today.metadata[-1].kind.startswith("RegisterBrokerRecord")
    later = _step(s, zk, cfg, "restart", 2)
    assert not later.replica(2).known and later.replica(2).applied == len(later.metadata) - 2
    caught_up = _step(later, zk, cfg, "apply_metadata", 2).replica(2)
    assert caught_up.known and caught_up.leader == 1 and caught_up.applied == len(later.metadata) - 1


@pytest.mark.parametrize("name", list(VARIANTS))
def test_variants_replace_only_the_rules_they_name(name):
    """The variants were written against the rules before issue 20: the new rules keep today's function."""
    v, current = VARIANTS[name].protocol.rules(), CURRENT.rules()
    # row 15 (KIP-380) is about a restarted broker waiting for the ZooKeeper controller's LeaderAndIsr: it names that
    own = {"restart_reads_metadata"} if name == "stale-control-request" else set()
    for rule in {"accept_fetch_response", "partition_state_applies", "leader_keeps_follower_state",
                 "produce_accepted", "ack_complete", "consumer_read_limit", "alter_partition_rollback",
                 "alter_partition_fencing", "valid_leader", "leader_epoch_bump", "crash_drops",
                 "restart_reads_metadata", "control_request_incarnation"} - own:
        changed = name == "stale-control-request" and rule == "control_request_incarnation"
        assert (v[rule] == current[rule]) != changed, rule


@pytest.mark.parametrize("metadata", ["kraft", "zookeeper"])
def test_a_restart_asks_its_rule_once(metadata):
    """A user's rule may keep state (count, log): one restart is one decision, asked once in either mode."""
    calls = []

    def reads(replica, registry):
        calls.append(replica.id)
        return P.catch_up_before_acting(replica, registry)

    cfg = Config(brokers=2, min_isr=1, metadata=metadata)
    p = _with(restart_reads_metadata=reads)
    s = _step(initial_state(cfg), p, cfg, "crash", 2, False)
    _step(s, p, cfg, "restart", 2)
    assert calls == [2]
