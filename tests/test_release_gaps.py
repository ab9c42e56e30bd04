"""Issue 13's release gaps, each against Kafka's own jars through the bridge where the behaviour is Kafka's.

1. `verify-reassignment --kafka-version V`: each move runs release V's KRaft controller rules
   (`invariants.reassignment.PartitionMove`). Kafka's `PartitionChangeBuilder` is driven through the same
   steps (the start record `changePartitionReassignment` writes, then one AlterPartition per replica catching
   up, in the move's `catch_up_order`) and must end where the move says: final replicas, lowest ISR, whether
   it completes; our reference controller must write Kafka's registrations step by step.
2. `kcheck sweep assignors --kafka-version V` runs V's reference assignors and records V.
3. `kcheck assign --json` names the release.
4. 4.1.0's last-known-leader rule: its builder differs from 4.1.1's, the replication model's states never
   tell them apart (the model conforms to 4.1.0's jars as it is).
5. `reference.election.PartitionChangeBuilder` refuses a registration that repeats a broker, as Kafka's does.

Release 4.4.0 by default, the others under `-m slow`; `KCHECK_KAFKA_RELEASES=4.2.2,4.1.2,...` picks the releases.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.cli import main
from kcheck.invariants.reassignment import PartitionMove
from kcheck.model import PartitionReplicas
from kcheck.reference.election import (
    Election,
    PartitionChangeBuilder,
    PartitionRegistration,
)
from kcheck.reference.errors import IllegalArgumentException
from kcheck.reference.kafka_bridge import JavaException
from kcheck.reference.kafka_controller import PartitionChange, reference_change, run_changes
from kcheck.reference.leader_balance import kraft_balance_partition_leaders
from kcheck.reference.reassignment import (
    PartitionReassignmentReplicas,
    kraft_reassignment_steps,
    scala_set_add,
    scala_set_of,
)
from kcheck.reference.releases import profile, version_key

DATA = Path(__file__).parent / "data"
SLOW = pytest.mark.slow
BATCH = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)


def _releases(*slow: str) -> list:
    if ENV_RELEASES:
        return [pytest.param(v) for v in ENV_RELEASES]
    return [pytest.param("4.4.0"), *(pytest.param(v, marks=SLOW) for v in slow)]


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ---- 1. verify-reassignment: the moves under a release's controller rules ----------------------------


def random_move(rng: random.Random, version: str) -> PartitionMove:
    """A partition at rest or in the middle of a KRaft move (lists as changePartitionReassignment writes them,
    sometimes a replaced move's), an ISR with the leader, a new target, min.insync.replicas 1 to 3."""
    ids = list(range(1, 7))
    original = rng.sample(ids, rng.randint(1, 4))
    replicas, adding, removing = tuple(original), (), ()
    if rng.random() < 0.7:
        first = PartitionReassignmentReplicas.of(original, rng.sample(ids, rng.randint(1, 4)))
        replicas, adding, removing = first.replicas, first.adding, first.removing
        if rng.random() < 0.3:  # a plan replaced once already: only its non-empty lists were written
            again = PartitionReassignmentReplicas.of(replicas, rng.sample(ids, rng.randint(1, 4)))
            replicas, adding, removing = again.replicas, again.adding or adding, again.removing or removing
    leader = rng.choice(original)
    isr = (leader, *rng.sample([b for b in replicas if b != leader], rng.randint(0, len(replicas) - 1)))
    current = PartitionReplicas("t", 0, tuple(replicas), leader, isr, tuple(adding), tuple(removing))
    return PartitionMove(current, tuple(rng.sample(ids, rng.randint(1, 4))), "kraft", version, rng.randint(1, 3))


def _start(m: PartitionMove) -> PartitionRegistration:
    return PartitionRegistration(m.current.replicas, m.isr, m.leader, 0, 0, m.current.removing, m.current.adding)


def kafka_moves(bridge, moves: list[PartitionMove], only_adding: bool = False) -> list[list[PartitionRegistration]]:
    """Each move run by Kafka's PartitionChangeBuilder, as the controller runs it: the record
    `changePartitionReassignment` builds (targets set only when non-empty), then the leader's AlterPartition for
    each replica that catches up, one at a time in `catch_up_order` (only the adding ones with `only_adding`),
    while the move is in flight. Batched: one round trip per step of every move. Kafka's registrations in order."""
    traces = [[_start(m)] for m in moves]
    live = [frozenset((*m.current.replicas, *m.target)) for m in moves]

    def change(m: PartitionMove, reg: PartitionRegistration, i: int, **targets) -> PartitionChange:
        elr = profile(m.kafka_version).eligible_leader_replicas  # as a new cluster of the release has it
        return PartitionChange(reg, live[i], Election.ONLINE, m.min_isr, elr, **targets)

    def step(batch: list[tuple[int, PartitionChange]]) -> None:
        for (i, c), answer in zip(batch, run_changes(bridge, [c for _, c in batch]), strict=True):
            assert not isinstance(answer, JavaException), f"{c}: {answer}"
            traces[i].append(answer.after)

    starts = []
    for i, m in enumerate(moves):
        plan = PartitionReassignmentReplicas.of(m.current.replicas, m.target)
        replicas = plan.replicas if plan.replicas != m.current.replicas else None
        starts.append((i, change(m, traces[i][0], i, target_replicas=replicas, target_removing=plan.removing or None,
                                 target_adding=plan.adding or None)))
    step(starts)
    pending = [[b for b in m.catch_up_order if not only_adding or b in m.adding] for m in moves]
    while True:
        batch = []
        for i, m in enumerate(moves):
            reg = traces[i][-1]
            while pending[i] and reg.is_reassigning:
                b = pending[i].pop(0)
                if b in reg.replicas and b not in reg.isr and reg.leader in live[i] and reg.leader in reg.isr:
                    batch.append((i, change(m, reg, i, target_isr=scala_set_add(scala_set_of(reg.isr), b))))
                    break
        if not batch:
            return traces
        step(batch)


def _ours(m: PartitionMove) -> list[PartitionRegistration]:
    rows = kraft_reassignment_steps(m.current.replicas, m.target, leader=m.leader, isr=m.isr, adding=m.current.adding,
                                    removing=m.current.removing, version=profile(m.kafka_version).kraft_version(),
                                    min_isr=m.min_isr, catch_up_order=m.catch_up_order)
    return [r.state.registration for r in rows]


@pytest.mark.kafka
@pytest.mark.parametrize("version", _releases("4.2.2", "4.1.2", "4.0.2", "3.9.1"))
def test_verify_reassignment_moves_end_where_kafka_ends_them(version):
    """Final replicas, lowest ISR and completion of every move (in flight or at rest) are Kafka's, under the
    release's rules; our reference controller writes Kafka's registration at every step."""
    kafka = _kafka(version)
    compared = []

    @BATCH
    @given(st.integers(0, 2**32 - 1), st.integers(150, 300))
    def check(seed, n):
        rng = random.Random(seed)
        moves = [random_move(rng, version) for _ in range(n)]
        for m, theirs in zip(moves, kafka_moves(kafka, moves), strict=True):
            end = theirs[-1]
            got = (m.final_replicas, m.lowest_isr, m.completes)
            want = (end.replicas, min(len(r.isr) for r in theirs), not end.is_reassigning)
            assert got == want, f"\n{m.current} -> {m.target} (min ISR {m.min_isr})\nkcheck: {got}\nkafka:  {want}"
            assert _ours(m) == theirs, f"\nmove: {m.current} -> {m.target}"
        compared.append(n)

    check()
    assert sum(compared) >= 3000


@pytest.mark.kafka
@pytest.mark.parametrize("version", _releases("4.2.2", "4.0.2"))
def test_kept_replicas_out_of_sync_hold_a_move_back_as_in_kafka(version):
    """`PartitionMove.kept_lagging_block` (the soft invariant's wording): with a kept target replica out of
    sync and only the adding replicas catching up, Kafka completes the move exactly when it says they do not
    hold it back (a reorder at once; from 4.3.0, KAFKA-19975, a move that adds no fewer replicas than it
    removes)."""
    kafka = _kafka(version)
    rng = random.Random(13)
    moves = []
    while len(moves) < 1500:
        m = random_move(rng, version)
        m = replace(m, current=replace(m.current, adding=(), removing=()))  # from rest
        if any(b in m.current.replicas and b not in m.isr for b in m.target):
            moves.append(m)
    traces = kafka_moves(kafka, moves, only_adding=True)
    for m, theirs in zip(moves, traces, strict=True):
        assert (not theirs[-1].is_reassigning) == (not m.kept_lagging_block), f"{m.current} -> {m.target}"
    blocked = sum(m.kept_lagging_block for m in moves)
    moving = sum(bool(m.adding or m.removing) for m in moves)  # the others only reorder: written at once
    assert 0 < moving < len(moves)
    assert 0 < blocked < moving if version_key(version) >= (4, 3, 0) else blocked == moving


# [1] -> [2, 1] is in flight (broker 2 not yet in sync) and the operator submits [1] again (a rollback through
# alterPartitionReassignments, e.g. kafka-reassign-partitions --execute --additional with the saved JSON).
ROLLBACK = PartitionReplicas("t", 0, (2, 1), 1, (1,), (2,), ())


@pytest.mark.kafka
@pytest.mark.parametrize("version", [pytest.param("4.4.0"), pytest.param("4.3.0", marks=SLOW),
                                     pytest.param("4.2.2", marks=SLOW)])
def test_from_4_3_a_rollback_in_flight_never_completes(version):
    """Finding (Kafka's builder, with the targets changePartitionReassignment sets, checked in 4.4.0's bytecode):
    the new plan [1] removes 2 but adds nothing, so the stored adding list [2] survives; from 4.3.0 a move
    completes only once its adding replicas are in the ISR left after the removing ones go, which 2, being
    both, never is. Up to 4.2 the move completes at once. verify-reassignment says so per release."""
    m = PartitionMove(ROLLBACK, (1,), "kraft", version)
    (theirs,) = kafka_moves(_kafka(version), [m])
    end = theirs[-1]
    if version_key(version) >= (4, 3, 0):
        assert (end.replicas, end.adding_replicas, end.removing_replicas, end.isr) == ((1, 2), (2,), (2,), (1, 2))
    else:
        assert (end.replicas, end.adding_replicas, end.removing_replicas) == ((1,), (), ())
    assert (m.final_replicas, m.completes) == (end.replicas, not end.is_reassigning)


def test_verify_reassignment_reports_the_release_and_its_completion_rule(capsys, tmp_path):
    """The in-flight plan of tests/data/reassign: 4.4.0 (the default) reports the move that never completes
    (test above for Kafka's side), 4.2.2 the move that ends on the target; each report names its release."""
    current = tmp_path / "current.txt"
    current.write_text("Topic: t\tTopicId: q7Hc2mVbT0a9sK1xWJ3eLw\tPartitionCount: 1\tReplicationFactor: 1\tConfigs:\n"
                       "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 2,1\tIsr: 1\tAdding Replicas: 2\t"
                       "Removing Replicas: \n")
    plan = tmp_path / "plan.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}')
    code, out, _ = run(capsys, "verify-reassignment", str(current), str(plan), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["kafka_version"] == "4.4.0"
    (move,) = doc["moves"]
    assert (move["final_replicas"], move["completes"]) == ([1, 2], False)
    (v,) = [v for v in doc["violations"] if v["invariant"] == "reassignment.reaches-target"]
    assert "never completes" in v["message"] and "Kafka 4.4.0" in v["message"]
    code, out, _ = run(capsys, "verify-reassignment", str(current), str(plan), "--kafka-version", "4.2.2", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["kafka_version"] == "4.2.2" and doc["moves"][0]["completes"] is True
    code, out, _ = run(capsys, "verify-reassignment", str(current), str(plan))
    assert "Kafka 4.4.0" in out


# ---- 2. sweep assignors --kafka-version ------------------------------------------------------------


def _uniform_calls(space):
    from kcheck.spark_check import against_kafka as ak

    calls = []
    for i in range(len(space)):
        calls += [c for c in ak.record_calls(space[i], space._infos["uniform"]) if c.ours != ak.NOT_MODELLED]
    return calls


@pytest.mark.kafka
@pytest.mark.parametrize("version", _releases("4.0.0"))
def test_a_sweeps_uniform_assignor_is_the_releases(version):
    """Every uniform-assignor call a plain `sweep assignors --kafka-version V` makes (the space's own assignor, no
    --against-kafka) is answered as Kafka V's UniformAssignor answers it; on 4.0.0 (before KAFKA-18688) the
    newest release's reference answers some of them differently, so the space runs the release's."""
    from kcheck.spark_check import against_kafka as ak
    from kcheck.spark_check.groups import GroupSpace, parse_group_bounds

    kafka = _kafka(version)
    bounds = parse_group_bounds("small,max_topics=1")
    calls = _uniform_calls(GroupSpace(bounds, ["uniform"], version))
    assert len(calls) > 100
    assert all(ak.same(c.ours, theirs) for c, theirs in zip(calls, ak.kafka_calls(kafka, "uniform", calls),
                                                             strict=True))
    if version == "4.0.0":
        newest = _uniform_calls(GroupSpace(bounds, ["uniform"]))
        answers = ak.kafka_calls(kafka, "uniform", newest)
        assert any(not ak.same(c.ours, theirs) for c, theirs in zip(newest, answers, strict=True))


def test_sweep_assignors_records_its_release(capsys, tmp_path):
    """The release is in the store's manifest (and fingerprint: a sweep of another release is another sweep);
    before 4.0.0 the uniform assignor, whose heterogeneous builder the reference lacks, is left out or refused."""
    from kcheck.commands.sweep import build_space
    from kcheck.spark_check.store import ResultStore, StoreError

    space = build_space("assignors", "small,max_topics=1", None, ["range", "uniform"], "4.0.0")
    assert space.kafka_version == "4.0.0"
    manifest = ResultStore(str(tmp_path)).open(space, resume=False)
    assert manifest["settings"] == {"kafka_version": "4.0.0"}
    assert json.loads((tmp_path / "manifest.json").read_text())["settings"]["kafka_version"] == "4.0.0"
    newest = build_space("assignors", "small,max_topics=1", None, ["range", "uniform"])
    assert newest.kafka_version == "4.4.0"
    with pytest.raises(StoreError, match="settings"):
        ResultStore(str(tmp_path)).open(newest, resume=True)
    assert "uniform" not in build_space("assignors", "small", None, None, "3.9.1").assignors
    code, _, err = run(capsys, "sweep", "assignors", "--space", "small", "--assignor", "uniform", "--kafka-version",
                       "3.9.1", "--out", str(tmp_path / "old"))
    assert code == 2 and "uniform" in err and "4.0.0" in err and len(err.strip().splitlines()) == 1


# ---- 3. assign --json names the release ----------------------------------------------------------


@pytest.mark.parametrize("args,version", [((), "4.4.0"), (("--kafka-version", "4.0.0"), "4.0.0")])
def test_assign_json_names_the_release(capsys, args, version):
    code, out, err = run(capsys, "assign", "--assignor", "uniform", str(DATA / "group_fresh.json"), "--json", *args)
    assert err == "" and json.loads(out)["kafka_version"] == version


# ---- 4. 4.1.0's last-known-leader rule ----------------------------------------------------------------


@pytest.mark.kafka
@pytest.mark.parametrize("version", [pytest.param(v, marks=SLOW) for v in ("4.1.0", "4.1.1")])
def test_4_1_0_remembers_the_leader_only_when_the_isr_empties(version):
    """apache/kafka#20629 is in 4.1.1: losing the leader while the ISR keeps a member (here 2, not acceptable)
    writes the last known leader from 4.1.1 on, not in 4.1.0; the reference's builder has each release's rule."""
    from test_kafka_conformance import LEADER_LOST_ISR_LEFT

    (real,) = run_changes(_kafka(version), [LEADER_LOST_ISR_LEFT])
    assert real.after.leader == -1 and real.after.last_known_elr == ((1,) if version == "4.1.1" else ())
    assert reference_change(LEADER_LOST_ISR_LEFT, version) == real
    assert profile(version).last_known_leader_update == ("leaderless" if version == "4.1.1" else "isr-emptied")


@pytest.mark.kafka
@pytest.mark.slow
def test_the_replication_model_writes_what_4_1_0s_controller_writes():
    """4.1.0's profile (ELR on, KAFKA-19522's acceptability check, the isr-emptied rule) runs the model with the
    4.1.1 rule (`remember_last_known_leader`): every controller step of a bounded search of the ELR settings and
    of random runs writes what 4.1.0's PartitionChangeBuilder writes (the rules differ only when ISR members
    remain and none is acceptable, which the model never has)."""
    from kcheck.model.replication import Config
    from test_kafka_conformance import RUN_CONFIGS, _assert_conform, _bounded, _random_run, _steps_of

    version = "4.1.0"
    kafka, p = _kafka(version), profile(version).protocol()
    steps = []
    for cfg in (Config(brokers=2, min_isr=2, records=1, reassignments=2, cancels=1, fences=1, crashes=1,
                       lossy_crashes=1, elections=1, isr_shrinks=1, failovers=0, duplicates=False),
                Config(brokers=3, min_isr=2, records=1, reassignments=1, cancels=1, fences=2, crashes=2,
                       lossy_crashes=1, elections=2, isr_shrinks=2, failovers=1, duplicates=False, atomic_fetch=True)):
        steps += _bounded(p, cfg, 3000)
    rng = random.Random(41)
    for conf in RUN_CONFIGS:
        cfg = Config(**conf, duplicates=False, atomic_fetch=True)
        for _ in range(40):
            steps += _steps_of(_random_run(p, cfg, rng, 60), p, cfg, version)
    assert _assert_conform(kafka, version, steps, "Kafka 4.1.0") > 10_000


# ---- 5. duplicate replicas ---------------------------------------------------------------------------


@pytest.mark.kafka
@pytest.mark.parametrize("version", _releases("4.1.2", "4.0.2", "3.9.1"))
def test_the_builder_refuses_a_repeated_replica_as_kafka_does(version):
    """Kafka's PartitionChangeBuilder constructor refuses a registration that names a broker twice
    (IllegalArgumentException from DirectoryId.createAssignmentMap); a repeated target replica it takes."""
    kafka = _kafka(version)
    changes = [PartitionChange(PartitionRegistration((1, 1, 2), (1, 2), 1), frozenset({1, 2})),
               PartitionChange(PartitionRegistration((1, 2, 1), (2,), 2), frozenset({1, 2}), Election.PREFERRED),
               PartitionChange(PartitionRegistration((1, 2), (1, 2), 1), frozenset({1, 2}), target_replicas=(2, 2))]
    refused, preferred, target = run_changes(kafka, changes)
    for change, real in zip(changes, (refused, preferred), strict=False):
        assert isinstance(real, JavaException)
        assert (real.simple_name, real.message) == ("IllegalArgumentException", "Duplicate broker ID in assignment")
        with pytest.raises(IllegalArgumentException, match="^Duplicate broker ID in assignment$"):
            PartitionChangeBuilder(change.partition, {1, 2}, profile(version).kraft_rules())
    assert reference_change(changes[2], version) == target
    # the leader balance (which no longer checks it itself) fails as Kafka's whole run does
    with pytest.raises(IllegalArgumentException):
        kraft_balance_partition_leaders([(ROLLBACK.tp, changes[1].partition)], {1, 2})
