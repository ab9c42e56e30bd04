"""Issue 36: one `current`. `Protocol.current()` is the newest release's rules, `Protocol.current(VERSION)` a named
release's, and `--protocol current --kafka-version VERSION` (through `ReleaseProfile.protocol`) the same protocol:
the model keeps the table of rules per release, the release profiles' fields (confirmed on each release's jars,
reference/releases.py) must say the same thing."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cli_support import run
from kcheck.invariants.replication_searches.runs import Trace
from kcheck.model.replication import protocol as P
from kcheck.model.replication import reassignment as R
from kcheck.model.replication.actions import Action, Config, apply, initial_state
from kcheck.model.replication.protocol import Protocol
from kcheck.reference import releases


def test_current_without_a_release_is_the_default_release_and_the_cli_s_current():
    assert P.DEFAULT_RELEASE == releases.DEFAULT_VERSION
    assert Protocol.current().rules() == Protocol.current(releases.DEFAULT_VERSION).rules()
    assert Protocol.current().rules() == releases.profile().protocol().rules()


@pytest.mark.parametrize("version", releases.RELEASES)
def test_the_model_s_table_agrees_with_each_release_s_profile(version):
    prof, ours = releases.profile(version), Protocol.current(version)
    assert prof.protocol().rules() == ours.rules()
    elr = prof.eligible_leader_replicas
    assert (ours.isr_removal is P.eligible_leader_replicas) == elr
    assert (ours.last_known_leader is P.remember_last_known_leader) == elr
    completion = {"all-targets": R.complete_when_targets_in_sync,
                  "adding-unless-shrinking": R.complete_when_adding_unless_shrinking}[prof.reassignment_completion]
    assert ours.reassignment_completion is completion
    # with ELR turned on (a cluster that enabled it), KAFKA-19522 decides whether a fenced last known leader wins
    on = Protocol.current(version, elr=True)
    fenced_ok = not prof.last_known_leader_must_be_acceptable
    assert on.leader_choice is (P.clean_or_eligible_fenced_last_known if fenced_ok else P.clean_or_eligible)
    assert prof.protocol(True).rules() == on.rules()
    # the rest is Kafka's code, the same in every release
    assert ours.valid_leader is P.in_isr_or_elr_unfenced


def test_a_release_the_model_does_not_know_is_one_clear_error():
    with pytest.raises(ValueError, match="3.9.0 and later, not 3.8.1"):
        Protocol.current("3.8.1")
    with pytest.raises(ValueError, match="not a Kafka release"):
        Protocol.current("4.x")


# Both brokers die uncleanly (power loss) while the ISR is below min.insync.replicas, so both are eligible leader
# replicas until each registers again reporting its unclean shutdown; then ISR and ELR are empty and broker 1, the
# last known leader, is registered but still fenced (it has not caught up with its registration).
FENCED_LAST_KNOWN = [("crash", (2, True)), ("fence", (2,)), ("crash", (1, True)), ("fence", (1,)),
                     ("restart", (1,)), ("restart", (2,))]
ELR_CLUSTER = Config(brokers=2, min_isr=2, records=0, crashes=0, lossy_crashes=2, fences=0, elections=0,
                     isr_shrinks=0, failovers=0, reads=0)


def _play(p: Protocol) -> list:
    s, states = initial_state(ELR_CLUSTER), []
    for kind, args in FENCED_LAST_KNOWN:
        s = apply(s, p, ELR_CLUSTER, Action(kind, args))
        assert s is not None, (kind, args)
        states.append(s)
    return states


def test_4_0_2_elects_a_fenced_last_known_leader_and_4_1_on_do_not():
    old = _play(Protocol.current("4.0.2", elr=True))[-1].registry
    assert (old.leader, old.isr, old.elr, old.fenced) == (1, {1}, set(), {1, 2})
    for v in ("4.1.0", "4.4.0"):
        new = _play(Protocol.current(v, elr=True))[-1].registry
        assert (new.leader, new.isr, new.elr, new.last_known_leader) == (-1, set(), set(), 1), v
    # a new 4.0.2 cluster has ELR off: the ISR keeps its last member and nobody is remembered
    off = _play(Protocol.current("4.0.2"))[-1].registry
    assert off.elr == set() and off.last_known_leader == -1


def test_the_cli_replays_the_fenced_election_under_kafka_version_4_0_2(capsys, tmp_path):
    steps = tuple(Action(k, a) for k, a in FENCED_LAST_KNOWN)
    path = tmp_path / "fenced.json"
    path.write_text(Trace("current+elr@4.0.2", ELR_CLUSTER, steps).to_json())
    code, out, err = run(capsys, "replay", str(path), "--json")
    assert (code, err) == (0, ""), err
    last = json.loads(out)
    assert last["protocol"] == "current+elr@4.0.2"
    code, out, err = run(capsys, "replay", str(path), "--kafka-version", "4.4.0", "--json")
    assert code == 0 and json.loads(out)["protocol"] == "current+elr@4.4.0"
    code, out, err = run(capsys, "replay", str(path), "--kafka-version", "3.8.1")
    assert code == 2 and out == "" and err.startswith("kcheck: error: --kafka-version: ")


def _go(s, p, cfg, kind, *args):
    nxt = apply(s, p, cfg, Action(kind, tuple(args)))
    assert nxt is not None, f"{kind}{args} is not enabled"
    return nxt


def test_one_alter_partition_at_a_time_and_an_answer_applies_only_to_the_state_that_sent_it():
    """`AlterPartitionManager.submit` refuses a second request for a partition while one is held (the leader's new
    pending state fails at once, OPERATION_NOT_ATTEMPTED, and returns to the committed one), and
    `Partition.submitAlterPartition`'s callback ignores an answer once new partition state replaced the pending
    state that sent it (Partition.scala, Kafka 4.0.2 to 4.3.1; AlterPartitionManager.scala)."""
    p, cfg = Protocol.current(), Config(brokers=2, min_isr=1, records=0, isr_shrinks=1, atomic_fetch=True)
    s = _go(initial_state(cfg), p, cfg, "shrink_isr", 1, 2)
    (request,) = [m for m in s.pool if m.kind == "AlterPartition"]
    s = _go(s, p, cfg, "handle_alter_partition", request, False)
    (answer,) = [m for m in s.pool if m.kind == "AlterPartitionResponse"]
    # the leader applies the ISR change from the metadata log before the answer arrives: committed, not pending
    s = _go(s, p, cfg, "apply_metadata", 1)
    leader = s.replica(1)
    assert (leader.isr, leader.pending_isr, leader.sent) == ({1}, None, None) and leader.in_flight is not None
    s = _go(s, p, cfg, "fetch_round", 2)  # caught up, but the manager still holds the shrink: no proposal
    assert s.replica(1).pending_isr is None and s.replica(1).view_of(2) == 0
    s = _go(s, p, cfg, "handle_alter_partition_response", answer, False)
    leader = s.replica(1)
    assert (leader.isr, leader.pending_isr, leader.in_flight, leader.partition_epoch) == ({1}, None, None, 2)
    s = _go(s, p, cfg, "fetch_round", 2)  # released: the next fetch proposes the follower (`maybeExpandIsr`)
    assert s.replica(1).pending_isr == {1, 2}


# Issue 36: the follower-state questions a user asks are modules of a few lines over today's rules.
FORGET_OUTSIDE_ISR = '''
from dataclasses import replace
from kcheck.model.replication.protocol import Protocol, keep_followers_when_reelected

def keep_in_sync_followers(before, leader_epoch, follower, isr):
    return keep_followers_when_reelected(before, leader_epoch, follower, isr) and follower in isr

proposed = replace(Protocol.current(), name="forget-outside-isr", leader_keeps_follower_state=keep_in_sync_followers)
'''
FETCH_BEFORE_EXPANSION = '''
from dataclasses import replace
from kcheck.model.replication.protocol import Protocol, caught_up_in_leader_epoch, expand_at_any_time

def fetched_in_this_epoch(leader, follower, registry):
    return caught_up_in_leader_epoch(leader, follower, registry) and leader.fetched_in_epoch(follower)

proposed = replace(Protocol.current(), name="fetch-before-expansion", isr_join=fetched_in_this_epoch,
                   isr_expansion=expand_at_any_time)
'''


def _reelected(p: Protocol) -> tuple:
    """Broker 2 fetches x0 in epoch 1; the same leader gets leader epoch 2 without broker 2 in the ISR (as a
    shrink then a reassignment's epoch bump would leave it): (the leader's view of 2, whether 2 fetched in epoch 2,
    whether the free-standing expansion of 2 is enabled)."""
    from kcheck.model.replication.state import LeaderAndIsr, State

    cfg = Config(brokers=2, min_isr=1, atomic_fetch=True, metadata="zookeeper")
    s = _go(_go(initial_state(cfg), p, cfg, "produce", 1, "all"), p, cfg, "fetch_round", 2)
    s = _go(s, p, cfg, "fetch_round", 2)  # the leader has seen broker 2 at offset 1
    m = LeaderAndIsr(1, 1, 1, 2, 2, (1,), (1, 2))
    s = _go(State(s.replicas, s.registry, s.zombies, s.pool | {m}, s.history, s.used), p, cfg,
            "handle_leader_and_isr", m, False)
    leader = s.replica(1)
    return leader.view_of(2), leader.fetched_in_epoch(2), apply(s, p, cfg, Action("expand_isr", (1, 2))) is not None


def test_the_two_follower_state_questions_are_user_modules_of_a_few_lines(tmp_path, monkeypatch):
    import importlib

    (tmp_path / "forget_outside_isr.py").write_text(FORGET_OUTSIDE_ISR)
    (tmp_path / "fetch_before_expansion.py").write_text(FETCH_BEFORE_EXPANSION)
    monkeypatch.syspath_prepend(str(tmp_path))
    forget = importlib.import_module("forget_outside_isr").proposed
    fetch_first = importlib.import_module("fetch_before_expansion").proposed
    # Kafka keeps the re-elected leader's view of broker 2 (isNewLeader false); no expansion without a fetch
    assert _reelected(Protocol.current()) == (1, False, False)
    assert _reelected(forget)[0] is None  # 2 is outside the new ISR: forgotten
    # the free-standing step with the kept view would add 2 at once; the module asks for a fetch in epoch 2 first
    assert _reelected(replace(Protocol.current(), isr_expansion=P.expand_at_any_time)) == (1, False, True)
    assert _reelected(fetch_first) == (1, False, False)


# Issue 36's open finding: with Kafka's follower-state rule swapped into the old model, x1 (committed on both brokers)
# was lost after `reassign to [1]` (broker 2 deletes its log) and `reassign to [1,2]`: the re-elected leader kept
# broker 2's old fetch offset and the free-standing expansion put the empty broker 2 back into the ISR before it
# fetched. Both of Kafka's rules now in the model stop it at that step.
REMOVE_THEN_ADD = [("produce", (1, "all")), ("fetch_round", (2,)), ("fetch_round", (2,)), ("advance_hw", (1,)),
                   ("reassign", ((1,),)), ("apply_metadata", (1,)), ("apply_metadata", (2,)),
                   ("reassign", ((1, 2),)), ("apply_metadata", (1,))]
REASSIGN_CLUSTER = Config(brokers=2, min_isr=1, records=1, crashes=1, lossy_crashes=0, fences=0, elections=0,
                          isr_shrinks=0, failovers=0, reads=0, reassignments=2, atomic_fetch=True, duplicates=False)


def test_a_replica_removed_and_added_back_is_not_put_in_the_isr_on_its_old_fetch_state():
    free_standing = replace(Protocol.current(), isr_expansion=P.expand_at_any_time)
    for p in (Protocol.current(), free_standing):
        s = initial_state(REASSIGN_CLUSTER)
        for i, (kind, args) in enumerate(REMOVE_THEN_ADD):
            s = _go(s, p, REASSIGN_CLUSTER, kind, *args)
            if i == 5:  # the leader applied replicas [1]: `updateAssignmentAndIsr` dropped broker 2's state
                assert s.replica(1).view_of(2) is None and s.history.committed == {(0, 1)}
        assert s.replica(2).log == () and s.registry.adding == (2,) and s.replica(1).view_of(2) is None
        # no expansion without a fetch that reports broker 2's real (empty) log
        assert apply(s, p, REASSIGN_CLUSTER, Action("expand_isr", (1, 2))) is None
        s = _go(s, p, REASSIGN_CLUSTER, "apply_metadata", 2)
        s = _go(s, p, REASSIGN_CLUSTER, "fetch_round", 2)
        assert s.replica(1).view_of(2) == 0 and s.replica(1).pending_isr is None  # 0 < high watermark 1: not in sync


def _hw_or_zero(leader, min_isr):
    """Today's high watermark where it advances, and 0 (not the current one) where it does not: a different answer
    the model never acts on (it bounds the high watermark below by the one it has)."""
    hw = P.over_maximal_isr_strict(leader, min_isr)
    return hw if hw > leader.hw else 0


def test_change_coverage_counts_an_answer_only_where_the_successor_differs():
    from kcheck.invariants.replication_searches.runs import ChangeProbe, probed_successors

    cfg = Config(brokers=2, min_isr=1, records=2, crashes=0, lossy_crashes=0, fences=0, elections=0, isr_shrinks=0,
                 failovers=0, reads=0, atomic_fetch=True, duplicates=False)
    probe = ChangeProbe(replace(Protocol.current(), name="hw-or-zero", high_watermark=_hw_or_zero),
                        Protocol.current(), "current")
    s, frontier, seen = initial_state(cfg), [initial_state(cfg)], set()
    while frontier:
        s = frontier.pop()
        if s in seen:
            continue
        seen.add(s)
        probe.visit()
        frontier += [t for _, t in probed_successors(s, probe.protocol, cfg, probe, lambda: (), "hw-or-zero")]
    cov = probe.coverage["high_watermark"]
    assert cov.calls > 0 and cov.asked > 0  # asked, and answering 0 where today's rule answers the current one
    assert cov.differed == cov.differing_calls == 0 and probe.unexercised == ["high_watermark"]
    # asked without the state before the step (the counting before issue 36), the same answers all count
    from kcheck.model.replication.actions import successors
    old = ChangeProbe(replace(Protocol.current(), name="hw-or-zero", high_watermark=_hw_or_zero),
                      Protocol.current(), "current")
    for s in seen:
        old.visit()
        for a, _ in successors(s, Protocol.current(), cfg):
            old.begin()
            old.end(a, apply(s, old.protocol, cfg, a), lambda: (), "hw-or-zero", cfg)
        old.begin()
        old.end(Action("advance_hw", (1,)), apply(s, old.protocol, cfg, Action("advance_hw", (1,))), lambda: (),
                "hw-or-zero", cfg)
    assert old.coverage["high_watermark"].differed > 0


NO_EPOCH_ON_SHUTDOWN = '''
from dataclasses import replace
from kcheck.model.replication.protocol import Protocol

def any_request(registered_epoch, request_epoch):  # the controller does not look at the broker epoch
    return True

proposed = replace(Protocol.current(), name="no-epoch-on-shutdown", shutdown_request_accepted=any_request)
'''


def test_the_fast_bounce_during_controlled_shutdown_is_a_user_module_of_a_few_lines(capsys, tmp_path, monkeypatch):
    """KIP-380's second half as a proposed change: a KRaft controller that skipped `checkBrokerEpoch` on a heartbeat
    asking to shut down. The exhaustive search finds the bounced broker's new process put in controlled shutdown
    although it never asked; today's rule, at the same bound, is clean."""
    (tmp_path / "no_epoch_on_shutdown.py").write_text(NO_EPOCH_ON_SHUTDOWN)
    monkeypatch.syspath_prepend(str(tmp_path))
    bound = ["--brokers", "2", "--min-isr", "1", "--records", "0", "--crashes", "1", "--lossy-crashes", "0",
             "--fences", "0", "--elections", "0", "--isr-shrinks", "0", "--failovers", "0", "--reads", "0",
             "--shutdowns", "1", "--atomic-fetch", "--no-duplicates", "--json"]
    code, out, err = run(capsys, "exhaust", "--protocol", "no_epoch_on_shutdown:proposed", *bound)
    assert code == 1, err
    trace = json.loads(out)["trace"]
    assert [v["invariant"] for v in trace["violations"]] == ["replication.shutdown-asked"]
    kinds = [step["action"] for step in trace["steps"]]
    assert kinds == ["controlled_shutdown", "crash", "restart", "unfence", "handle_controlled_shutdown"]
    code, out, err = run(capsys, "exhaust", "--protocol", "current", *bound)
    assert code == 0 and json.loads(out)["complete"], err
