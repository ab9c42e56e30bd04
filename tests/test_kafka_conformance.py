"""The KRaft controller, ours and the replication model's, against Kafka's own PartitionChangeBuilder (marker `kafka`).

Kafka's `PartitionChangeBuilder` and `PartitionRegistration.merge` run in the bridge's JVM
(`reference.kafka_controller`, request word PC). Three comparisons:

1. our reference builder (`reference.election`, the release's `KRaftVersion`) on random registrations and
   changes: the record and the registration after it, field by field and in order;
2. every controller step of the replication model (`model.replication`): the builder run the controller
   makes for that step (`kafka_controller.model_step_change`) must write what the model wrote (leader,
   leader epoch, partition epoch, ISR, ELR, last known leader, replicas, adding, removing), and our
   reference must give Kafka's answer for it too. Steps come from the bug rows' scripts and exhaustive
   traces, every transition of a bounded search per row setting, the ELR finding's trace, and random runs;
3. the findings: a reassignment leaves the removed replica in the ELR and a later election takes it
   (4.1.2 and 4.4.0), and which release has KAFKA-19975.

Default: release 4.4.0. `KCHECK_KAFKA_RELEASES=4.0.2,4.1.2` picks others; 4.0.2 and 4.1.2 also run as
`slow`. Skipped only when java, javac or mvn is missing.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.invariants.replication_rows import ROW_SCRIPTS, cfg_for, matches
from kcheck.invariants.replication_searches.runs import replay
from kcheck.invariants.replication_searches.yardstick import exhaust
from kcheck.model.replication import VARIANTS, Config, Protocol, initial_state
from kcheck.model.replication.actions import KINDS, Action, enabled, successors
from kcheck.model.replication.state import NO_LEADER, State
from kcheck.reference.election import Election, PartitionRegistration
from kcheck.reference.kafka_bridge import JavaException
from kcheck.reference.kafka_controller import (
    MODEL_FIELDS,
    Carried,
    ChangeResult,
    ModelStep,
    PartitionChange,
    carry,
    kafka_fields,
    model_fields,
    model_step_change,
    random_change,
    reference_change,
    registration,
    run_change,
    run_changes,
    same_as_model,
)
from kcheck.reference.reassignment import PartitionReassignmentReplicas

pytestmark = pytest.mark.kafka


def _rel(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".")[:3])


_env = ENV_RELEASES
SLOW = pytest.mark.slow
RELEASES = [pytest.param(v) for v in _env] if _env else [
    pytest.param("4.4.0"), pytest.param("4.1.2", marks=SLOW), pytest.param("4.0.2", marks=SLOW)]
# The model has 4.1.2's last-known-leader rules; 4.0.x's (KAFKA-19522 unfixed) are only in the reference.
MODEL_RELEASES = [p for p in RELEASES if _rel(str(p.values[0])) >= (4, 1, 2)]
BATCH = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)




def _ours(change: PartitionChange, version: str) -> ChangeResult | tuple[str, str]:
    try:
        return reference_change(change, version)
    except Exception as e:  # noqa: BLE001 - compared with Kafka's exception
        return type(e).__name__, str(e)


def _theirs(answer: ChangeResult | JavaException) -> ChangeResult | tuple[str, str]:
    return (answer.simple_name, answer.message) if isinstance(answer, JavaException) else answer


# ---- 1. our reference's builder ---------------------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_reference_builder_matches_kafka_on_random_changes(version):
    kafka = _kafka(version)
    compared = []

    @BATCH
    @given(st.integers(0, 2**32 - 1), st.integers(150, 300))
    def check(seed, n):
        rng = random.Random(seed)
        changes = [random_change(rng) for _ in range(n)]
        for c, real in zip(changes, run_changes(kafka, changes), strict=True):
            assert _ours(c, version) == _theirs(real), f"\ninput: {c}\nours:  {_ours(c, version)}\nkafka: {real}"
        compared.append(n)

    check()
    assert sum(compared) >= 3000


def _pr(replicas, isr, leader, elr=(), lke=(), adding=(), removing=()) -> PartitionRegistration:
    return PartitionRegistration(tuple(replicas), tuple(isr), leader, 3, 7, tuple(removing), tuple(adding),
                                 elr=tuple(elr), last_known_elr=tuple(lke))


# Inputs on which releases differ, each with what Kafka does: (release predicate, expected leader after).
# KAFKA-19522 (apache/kafka#20200, in 4.1.2): a fenced last known leader was elected.
FENCED_LAST_KNOWN_LEADER = PartitionChange(_pr((1, 2), (), -1, lke=(1,)), frozenset(), min_isr=2, elr=True)
# apache/kafka#20629 (in 4.1.2): losing the leader remembers it even when the ISR is not emptied.
LEADER_LOST_ISR_LEFT = PartitionChange(_pr((1, 2), (1, 2), 1), frozenset(), min_isr=2, elr=True, target_isr=(2,))
# KAFKA-19975 (apache/kafka#21114, in 4.3.0): broker 2 stays out of the ISR, 3 was added and is in sync.
ADDING_IN_SYNC = PartitionChange(_pr((0, 1, 2, 3), (0, 1, 3), 0, adding=(3,)), frozenset({0, 1, 2, 3}), min_isr=2,
                                 elr=True)


@pytest.mark.parametrize("version", RELEASES)
def test_the_releases_differ_where_their_code_does(version):
    """Each release difference shows on its smallest input, in Kafka's jars and in our reference."""
    kafka = _kafka(version)
    cases = [FENCED_LAST_KNOWN_LEADER, LEADER_LOST_ISR_LEFT, ADDING_IN_SYNC]
    real = [run_change(kafka, c) for c in cases]
    assert real == [reference_change(c, version) for c in cases]
    fenced, lost, adding = real
    assert (fenced.after.leader == 1) == (_rel(version) < (4, 1, 2))  # elected while fenced before the fix
    assert lost.after.leader == NO_LEADER and (lost.after.last_known_elr == (1,)) == (_rel(version) >= (4, 1, 2))
    completed = adding.after.replicas == (0, 1, 2, 3) and adding.after.adding_replicas == ()
    assert completed == (_rel(version) >= (4, 3, 0))


# ---- 2. the replication model's controller steps ------------------------------------------------------


def _steps_of(transitions: Iterable[tuple[State, Action, State]], p: Protocol, cfg: Config, version: str
              ) -> list[tuple[Action, ModelStep]]:
    """The builder run of every controller step of a run (consecutive transitions), the leader recovery
    state carried along from our reference's answers."""
    out, carried = [], Carried()
    for before, action, after in transitions:
        step = model_step_change(before, action, after, p, cfg, carried)
        if step is not None:
            out.append((action, step))
            carried = carry(reference_change(step.change, version))
    return out


def _assert_conform(kafka, version: str, steps: list[tuple[Action, ModelStep]], what: str) -> int:
    """Kafka's builder writes what the model wrote, and our reference answers as Kafka does."""
    answers = run_changes(kafka, [s.change for _, s in steps])
    for (action, step), real in zip(steps, answers, strict=True):
        assert not isinstance(real, JavaException), f"{what}: {action.label()}: {real}"
        assert same_as_model(real, step), (
            f"\n{what}: {action.label()} ({step.kind})\ninput: {step.change}\nfields: {MODEL_FIELDS}\n"
            f"model: {None if step.model_after is None else model_fields(step.model_after)}\n"
            f"kafka: {kafka_fields(real.after) if real.built else 'no record'}")
        assert reference_change(step.change, version) == real, f"\n{what}: {action.label()}\ninput: {step.change}"
    return len(steps)


def _script_run(p: Protocol, cfg: Config, script) -> list[tuple[State, Action, State]]:
    """A row script's steps while the protocol allows them (as `replication_rows.run_script` plays it)."""
    s, out = initial_state(cfg), []
    for kind, want in script:
        options = [(a, nxt) for a, nxt in enabled(s, p, cfg, kind) if matches(a, want)]
        if len(options) != 1:
            break
        a, nxt = options[0]
        out.append((s, a, nxt))
        s = nxt
    return out


def _trace_run(trace, p: Protocol) -> list[tuple[State, Action, State]]:
    steps = replay(trace, p)
    return [(a.state, b.action, b.state) for a, b in zip(steps, steps[1:], strict=False)]


def _bounded(p: Protocol, cfg: Config, max_states: int) -> list[tuple[Action, ModelStep]]:
    """Every controller transition out of the first `max_states` states of a breadth-first search (the
    leader recovery state taken as RECOVERED: it is compared on runs, not here)."""
    init = initial_state(cfg)
    seen, frontier, out = {init}, [init], []
    while frontier and len(seen) < max_states:
        nxt_frontier = []
        for s in frontier:
            for a, nxt in successors(s, p, cfg):
                step = model_step_change(s, a, nxt, p, cfg)
                if step is not None:
                    out.append((a, step))
                if nxt not in seen and len(seen) < max_states:
                    seen.add(nxt)
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    return out


ROW_NAMES = sorted(ROW_SCRIPTS)


@pytest.mark.parametrize("version", MODEL_RELEASES)
def test_every_controller_step_of_the_bug_rows_matches_kafka(version):
    """Each row's own sequence under its historical rule and under today's, and the shortest trace the
    exhaustive search finds for the rows it finds quickly: every controller write is Kafka's. (Rows 8 and 9
    are Kafka with ELR off, row 8 with unclean.leader.election.enable=true; row 13's zombie controller
    writes from its stale view.)"""
    kafka = _kafka(version)
    compared = 0
    for name in ROW_NAMES:
        script, _ = ROW_SCRIPTS[name]
        cfg = cfg_for(name)
        for p in (VARIANTS[name].protocol, Protocol.current(version)):
            compared += _assert_conform(kafka, version, _steps_of(_script_run(p, cfg, script), p, cfg, version),
                                        f"row {name} under {p.name}")
    for name in ("truncate-to-hw", "hw-over-committed-isr", "unclean-election", "last-replica-standing",
                 "zombie-controller"):
        p = VARIANTS[name].protocol
        result = exhaust(p, cfg_for(name), only=set(VARIANTS[name].violates))
        assert result.trace is not None
        compared += _assert_conform(kafka, version, _steps_of(_trace_run(result.trace, p), p, cfg_for(name), version),
                                    f"row {name}'s shortest trace")
    assert compared >= 25


@pytest.mark.parametrize("version", MODEL_RELEASES)
def test_every_controller_transition_near_the_start_matches_kafka(version):
    """Every controller transition out of the first states of each row's setting (today's rules, and the
    row's own where they are a Kafka controller's), plus settings with reassignments and cancels."""
    kafka = _kafka(version)
    current = Protocol.current(version)
    settings_ = [(cfg_for(name), p) for name in ROW_NAMES if name != "no-epoch-in-fetch"
                 for p in {current, VARIANTS[name].protocol}]
    settings_ += [(Config(brokers=2, min_isr=2, records=1, reassignments=2, cancels=1, fences=1, crashes=1,
                          lossy_crashes=1, elections=1, isr_shrinks=1, failovers=0, duplicates=False), current),
                  (Config(brokers=3, replication_factor=2, min_isr=1, records=1, reassignments=2, cancels=1,
                          fences=1, crashes=0, lossy_crashes=1, elections=1, isr_shrinks=1, failovers=0,
                          duplicates=False, atomic_fetch=True), current)]
    steps: list[tuple[Action, ModelStep]] = []
    for cfg, p in settings_:
        steps += _bounded(p, cfg, 700)
    kinds = {s.kind for _, s in steps}
    assert {"handle_alter_partition", "fence", "restart", "elect", "move_leader", "reassign",
            "cancel_reassignment"} <= kinds
    assert _assert_conform(kafka, version, steps, "bounded search") > 2000


# The shortest loss the README's ELR finding names (min.insync.replicas 2, two brokers).
ELR_CFG = Config(brokers=2, min_isr=2, records=1, reassignments=2, fences=1, crashes=0, lossy_crashes=0,
                 elections=0, isr_shrinks=0, failovers=0, duplicates=False)


def _fetch(f: int, offset: int, respond: bool = True):
    steps = [("fetch", {"follower": f}), ("handle_fetch", {"frm": f, "offset": offset})]
    return steps + ([("handle_fetch_response", {"to": f, "offset": offset})] if respond else [])


ELR_LOSS = [
    ("produce", {"broker": 1, "acks": "all"}), *_fetch(2, 0), *_fetch(2, 1, respond=False),
    ("advance_hw", {"broker": 1}),  # x1 committed on brokers 1 and 2
    ("reassign", {"target": (1,)}),  # completes at once: 2 leaves the replicas and joins the ELR
    ("apply_metadata", {"broker": 2}),  # the record no longer lists broker 2: it deletes its log
    ("reassign", {"target": (2,)}),
    ("apply_metadata", {"broker": 2}),
    ("fence", {"broker": 1}),  # broker 2 is elected from the ELR, with an empty log
]


def _random_run(p: Protocol, cfg: Config, rng: random.Random, length: int) -> list[tuple[State, Action, State]]:
    """A random run: each step picks an action kind at random among those enabled, then one of its actions."""
    kinds = [k for k, spec in KINDS.items() if spec.possible(cfg)]
    s, out = initial_state(cfg), []
    for _ in range(length):
        rng.shuffle(kinds)
        for kind in kinds:
            options = enabled(s, p, cfg, kind)
            if options:
                a, nxt = rng.choice(options)
                out.append((s, a, nxt))
                s = nxt
                break
        else:
            break
    return out


RUN_CONFIGS = [
    dict(brokers=3, min_isr=2, records=3, reassignments=3, cancels=1, fences=2, crashes=2, lossy_crashes=2,
         elections=2, isr_shrinks=2, failovers=1),
    dict(brokers=2, min_isr=2, records=2, reassignments=2, cancels=1, fences=2, crashes=1, lossy_crashes=2,
         elections=1, isr_shrinks=1, failovers=1),
    dict(brokers=4, replication_factor=3, min_isr=2, records=2, reassignments=3, cancels=1, fences=2, crashes=1,
         lossy_crashes=2, elections=2, isr_shrinks=2, failovers=1),
    dict(brokers=3, min_isr=1, records=2, reassignments=2, cancels=1, fences=2, crashes=2, lossy_crashes=2,
         elections=2, isr_shrinks=2, failovers=1),
]


@pytest.mark.parametrize("version", MODEL_RELEASES)
def test_the_elr_findings_trace_matches_kafka_step_by_step(version):
    kafka = _kafka(version)
    p = Protocol.current(version)
    run = _script_run(p, ELR_CFG, ELR_LOSS)
    assert len(run) == len(ELR_LOSS)
    assert _assert_conform(kafka, version, _steps_of(run, p, ELR_CFG, version), "ELR finding") == 3


@pytest.mark.parametrize("version", MODEL_RELEASES)
def test_an_operators_unclean_elections_match_kafka(version):
    """ElectLeaders UNCLEAN (KIP-460) of a leaderless partition, in random runs with crashes and fences: Kafka's
    `electLeader` writes what the model's `unclean_election` wrote, from whatever ELR, last known leader and
    fenced replicas the run left."""
    kafka = _kafka(version)
    p = Protocol.current(version)
    rng = random.Random(460)
    steps: list[tuple[Action, ModelStep]] = []
    for n in range(400):
        cfg = Config(**RUN_CONFIGS[n % len(RUN_CONFIGS)], unclean_elections=2, duplicates=False, atomic_fetch=True)
        steps += _steps_of(_random_run(p, cfg, rng, 60), p, cfg, version)
        if sum(a.kind == "unclean_election" for a, _ in steps) >= 20:
            break
    unclean = [a for a, s in steps if a.kind == "unclean_election" and s.model_after is not None]
    assert len(unclean) >= 20
    _assert_conform(kafka, version, steps, "random runs with an operator's unclean elections")


@pytest.mark.parametrize("version", MODEL_RELEASES)
def test_random_model_runs_match_kafka(version):
    kafka = _kafka(version)
    p = Protocol.current(version)
    compared = []

    @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.integers(0, 2**32 - 1), st.sampled_from(range(len(RUN_CONFIGS))), st.booleans())
    def check(seed, which, atomic):
        cfg = Config(**RUN_CONFIGS[which], duplicates=False, atomic_fetch=atomic)
        rng = random.Random(seed)
        steps = []
        for _ in range(12):
            steps += _steps_of(_random_run(p, cfg, rng, 60), p, cfg, version)
        compared.append(_assert_conform(kafka, version, steps, f"random runs (seed {seed}, {cfg})"))

    check()
    assert sum(compared) >= 400


@pytest.mark.parametrize("version", MODEL_RELEASES)
def test_a_leaderless_partition_is_elected_exactly_when_kafka_elects(version):
    """In every leaderless state of random runs the model's `elect` is enabled exactly when Kafka's
    unfence-time election (`handleBrokerUnfenced`) would name a leader: no election the model lacks."""
    kafka = _kafka(version)
    p = Protocol.current(version)
    rng = random.Random(7)
    leaderless = []
    for conf in RUN_CONFIGS:
        cfg = Config(**conf, duplicates=False, atomic_fetch=True)
        for _ in range(15):
            for _, _, after in _random_run(p, cfg, rng, 60):
                if after.registry.leader == NO_LEADER and after.registry.leader_epoch < cfg.max_leader_epoch:
                    leaderless.append((after, cfg))  # (at the epoch bound the model elects nobody)
    assert len(leaderless) > 100
    changes = [PartitionChange(registration(s.registry), frozenset(b for b in s.brokers if b not in s.registry.fenced),
                               min_isr=cfg.min_isr, elr=True) for s, cfg in leaderless]
    for (s, cfg), real in zip(leaderless, run_changes(kafka, changes), strict=True):
        model_elects = bool(enabled(s, p, cfg, "elect"))
        assert model_elects == (real.after.leader != NO_LEADER), f"\n{s.registry}\nkafka: {real}"


# ---- 3. the findings ------------------------------------------------------------------------------


def _plan(current, target) -> dict:
    """`changePartitionReassignment`'s targets for the builder (each set only when the plan has one)."""
    plan = PartitionReassignmentReplicas.of(tuple(current), tuple(target))
    return dict(target_replicas=plan.replicas if plan.replicas != tuple(current) else None,
                target_removing=plan.removing or None, target_adding=plan.adding or None)


@pytest.mark.parametrize("version", [pytest.param("4.4.0"), pytest.param("4.1.2", marks=SLOW), *(
    [pytest.param(v) for v in _env if v not in ("4.4.0", "4.1.2")])])
def test_a_completed_move_keeps_the_removed_replica_in_the_elr_and_kafka_elects_it(version):
    """The README's finding, through Kafka's own classes, in ReplicationControlManager's call order.

    Replicas [1, 2], ISR [1, 2], leader 1, min.insync.replicas 2, ELR on, both brokers unfenced:
    1. AlterPartitionReassignments to [1] (`changePartitionReassignment`: target removing [2]) completes at
       once (ISR [1] covers the target) and writes replicas [1], ISR [1], ELR [2]: the ELR names a broker that
       is no longer a replica (the broker then deletes its log: broker behaviour, model only);
    2. AlterPartitionReassignments to [2]: replicas [2, 1], adding [2], removing [1]; ELR still [2];
    3. broker 1 is fenced (`handleBrokerFenced`: target ISR [], broker 1 not acceptable): the builder elects
       broker 2 from the ELR (a clean election, no RECOVERING), whatever its log holds."""
    kafka = _kafka(version)
    reg = PartitionRegistration((1, 2), (1, 2), 1, 0, 0)
    both = frozenset({1, 2})
    moved = run_change(kafka, PartitionChange(reg, both, min_isr=2, elr=True, **_plan((1, 2), (1,))))
    assert moved.after.replicas == (1,) and moved.after.isr == (1,) and moved.after.elr == (2,)
    back = run_change(kafka, PartitionChange(moved.after, both, min_isr=2, elr=True, **_plan((1,), (2,))))
    assert back.after.replicas == (2, 1) and back.after.adding_replicas == (2,) and back.after.elr == (2,)
    fenced = run_change(kafka, PartitionChange(back.after, frozenset({2}), min_isr=2, elr=True, target_isr=()))
    assert fenced.after.leader == 2 and fenced.after.isr == (2,) and fenced.after.elr == (1,)
    assert fenced.after.leader_recovery_state == 0  # Kafka counts it as a clean election
    # our reference agrees at every step
    for change, real in ((PartitionChange(reg, both, min_isr=2, elr=True, **_plan((1, 2), (1,))), moved),
                         (PartitionChange(moved.after, both, min_isr=2, elr=True, **_plan((1,), (2,))), back),
                         (PartitionChange(back.after, frozenset({2}), min_isr=2, elr=True, target_isr=()), fenced)):
        assert reference_change(change, version) == real


@pytest.mark.parametrize("version", [pytest.param("4.4.0"), pytest.param("4.1.2", marks=SLOW)])
def test_a_cancelled_move_keeps_the_cancelled_replica_in_the_elr(version):
    """The cancel half: replicas [1, 2] moving to [3, 4] (ISR [1, 3]: 3 caught up, 4 not), min ISR 2. The
    cancel (`cancelPartitionReassignment`: replicas [1, 2], ISR [1]) leaves ISR [1] and puts broker 3, which
    the cancel removed and which deletes its log, in the ELR."""
    kafka = _kafka(version)
    reg = PartitionRegistration((3, 4, 1, 2), (1, 3), 1, 2, 5, removing_replicas=(1, 2), adding_replicas=(3, 4))
    cancel = PartitionChange(reg, frozenset({1, 2, 3, 4}), min_isr=2, elr=True, target_isr=(1,),
                             target_replicas=(1, 2), target_removing=(), target_adding=())
    done = run_change(kafka, cancel)
    assert done.after.replicas == (1, 2) and done.after.isr == (1,) and done.after.elr == (3,)
    assert reference_change(cancel, version) == done


def test_kafka_19975_is_in_the_newest_release():
    """apache/kafka#21114 (KAFKA-19975): a target replica out of the ISR no longer holds back a move that adds
    no fewer replicas than it removes; 4.4.0 completes [0,1,2] -> [0,1,2,3] with broker 2 out of sync."""
    done = run_change(_kafka("4.4.0"), ADDING_IN_SYNC)
    assert done.after.replicas == (0, 1, 2, 3) and done.after.adding_replicas == () and done.after.isr == (0, 1, 3)
    # ... and still refuses to shrink the ISR: [0,1,2] -> [1,3] with 1 out of sync waits
    shrink = PartitionChange(_pr((1, 3, 0, 2), (0, 2, 3), 0, adding=(3,), removing=(0, 2)), frozenset({0, 1, 2, 3}),
                             min_isr=1, elr=True)
    assert run_change(_kafka("4.4.0"), shrink).after.removing_replicas == (0, 2)
    assert Election.ONLINE is ADDING_IN_SYNC.election


# [1,2] -> [1,2,3] on three brokers while broker 2 is out of the ISR; broker 3 catches up.
GROW_PAST_A_LAGGING_REPLICA = [
    ("shrink_isr", {"leader": 1, "follower": 2}), ("handle_alter_partition", {"frm": 1}),
    ("handle_alter_partition_response", {"to": 1}),
    ("reassign", {"target": (1, 2, 3)}),
    # each broker applies the ISR shrink's batch, then the reassignment's (the leader knew the first from its answer)
    ("apply_metadata", {"broker": 1}), ("apply_metadata", {"broker": 1}),
    ("apply_metadata", {"broker": 3}), ("apply_metadata", {"broker": 3}),
    # the leader proposes broker 3 right after recording its fetch (`updateFollowerFetchState` -> `maybeExpandIsr`)
    ("fetch_round", {"follower": 3}), ("handle_alter_partition", {"frm": 1}),
]
GROW_CFG = Config(brokers=3, replication_factor=2, min_isr=1, records=0, reassignments=1, isr_shrinks=1, crashes=0,
                  lossy_crashes=0, fences=0, elections=0, failovers=0, duplicates=False, atomic_fetch=True)


@pytest.mark.parametrize("version", MODEL_RELEASES)
def test_from_4_3_a_move_completes_past_a_lagging_target_replica(version):
    """KAFKA-19975 in the model: under a 4.3+ release's rules the AlterPartition that brings broker 3 in
    completes the move with broker 2 (a target, not an adding replica) out of sync, as Kafka's builder does;
    the model's `replication.reassignment-in-sync` invariant (KAFKA-15665's rule) then reports Kafka's
    intended behaviour. Under 4.1's rules the move waits for broker 2."""
    from kcheck.invariants.replication import check_replication

    kafka = _kafka(version)
    p = Protocol.current(version)
    run = _script_run(p, GROW_CFG, GROW_PAST_A_LAGGING_REPLICA)
    assert len(run) == len(GROW_PAST_A_LAGGING_REPLICA)
    _assert_conform(kafka, version, _steps_of(run, p, GROW_CFG, version), "grow past a lagging replica")
    reg = run[-1][2].registry
    violated = {v.invariant for v in check_replication(run[-1][2], GROW_CFG).hard_violations}
    if _rel(version) >= (4, 3, 0):
        assert reg.replicas == (1, 2, 3) and not reg.adding and reg.isr == {1, 3}
        assert "replication.reassignment-in-sync" in violated
    else:
        assert reg.adding == (3,) and "replication.reassignment-in-sync" not in violated
