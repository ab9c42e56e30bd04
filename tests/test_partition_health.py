"""Whole-partition health in `kcheck verify` (issue 19 part 1) and the leader a move predicts for a leaderless
partition (part 1's plan-table gap).

Each health case is the smallest describe that shows it; on the code before `invariants/partition_health.py`
every one passed `verify` with exit 0 and no finding. The Kafka-marked tests run Kafka's own
`PartitionChangeBuilder` (request PC): the leader a leaderless partition gets when a reassignment starts, and
whether an in-flight reassignment completes once every replica is in sync, against `health.reassignment-completes`.
"""

from __future__ import annotations

import json
import random

import pytest

from cli_support import run
from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.inputs.formats import parse_describe
from kcheck.invariants.partition_health import check_partition_health
from kcheck.invariants.reassignment import PartitionMove
from kcheck.model import NO_LEADER, PartitionReplicas, ReplicaAssignment
from kcheck.reference.election import Election, PartitionRegistration
from kcheck.reference.kafka_bridge import JavaException
from kcheck.reference.kafka_controller import PartitionChange, run_changes

HEADER = "Topic: t\tTopicId: 5hS4KXn2QZyW0uR1mB9xZg\tPartitionCount: {n}\tReplicationFactor: 3\tConfigs: {configs}\n"


def describe(*partitions: str, configs: str = "") -> str:
    """A 4.x describe of topic t; each partition given as its fields after 'Partition: i'."""
    lines = [HEADER.format(n=len(partitions), configs=configs)]
    lines += [f"\tTopic: t\tPartition: {i}\t{fields}\n" for i, fields in enumerate(partitions)]
    return "".join(lines)


def verify(capsys, tmp_path, text: str, *args: str) -> tuple[int, dict]:
    path = tmp_path / "describe.txt"
    path.write_text(text)
    code, out, err = run(capsys, "verify", str(path), "--json", *args)
    assert err == "", err
    return code, json.loads(out)


def findings(rep: dict, prefix: str = "health.") -> set[tuple[str, str, str]]:
    return {(v["invariant"], v["severity"], v["where"]) for v in rep["violations"] if v["invariant"].startswith(prefix)}


HEALTHY = "Leader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: \tLastKnownElr: "

# (case, the partition's fields, the finding on partition t-0)
CASES = [
    ("leader outside the replicas", "Leader: 4\tReplicas: 1,2,3\tIsr: 1,2,3", "health.leader-in-replicas"),
    ("leader outside the ISR", "Leader: 1\tReplicas: 1,2,3\tIsr: 2,3", "health.leader-in-isr"),
    ("ISR member outside the replicas", "Leader: 1\tReplicas: 1,2,3\tIsr: 1,2,5", "health.isr-within-replicas"),
    ("ELR member outside the replicas", "Leader: 1\tReplicas: 1,2,3\tIsr: 1\tElr: 6\tLastKnownElr: ",
     "health.elr-within-replicas"),
    ("ELR member also in the ISR", "Leader: 1\tReplicas: 1,2,3\tIsr: 1\tElr: 1,2\tLastKnownElr: ",
     "health.elr-disjoint-isr"),
    ("Leader: none", "Leader: none\tReplicas: 1,2,3\tIsr: \tElr: \tLastKnownElr: 1", "health.unavailable"),
    ("under min ISR (Configs)", "Leader: 1\tReplicas: 1,2,3\tIsr: 1", "health.under-min-isr"),
    ("removing replica the only ISR member",
     "Leader: 1\tReplicas: 4,2,3,1\tIsr: 1\tAdding Replicas: 4\tRemoving Replicas: 1", "health.reassignment-safe"),
]


@pytest.mark.parametrize("case, fields, invariant", CASES, ids=[c[0] for c in CASES])
def test_verify_fails_on_an_unhealthy_partition(capsys, tmp_path, case, fields, invariant):
    code, rep = verify(capsys, tmp_path, describe(fields, HEALTHY, configs="min.insync.replicas=2"))
    assert code == 1, rep
    assert (invariant, "hard", "partition t-0") in findings(rep)
    assert all(where == "partition t-0" for _, _, where in findings(rep)), findings(rep)  # t-1 is healthy


def test_healthy_describe_has_no_health_finding(capsys, tmp_path):
    code, rep = verify(capsys, tmp_path, describe(HEALTHY, "Leader: 2\tReplicas: 2,3,1\tIsr: 2,3,1",
                                                  configs="min.insync.replicas=2"))
    assert findings(rep) == set() and "health.under-min-isr" in rep["checked"]


def test_min_isr_from_configs_else_the_option_else_1(capsys, tmp_path):
    one_member = "Leader: 1\tReplicas: 1,2,3\tIsr: 1"
    _, rep = verify(capsys, tmp_path, describe(one_member))
    assert findings(rep, "health.under-min-isr") == set()  # the broker default, 1
    # ... which the ISR of one meets exactly (TopicCommand's --at-min-isr-partitions lists it)
    assert findings(rep, "health.at-min-isr") == {("health.at-min-isr", "soft", "partition t-0")}
    _, rep = verify(capsys, tmp_path, describe(one_member), "--min-insync-replicas", "2")
    (v,) = [v for v in rep["violations"] if v["invariant"] == "health.under-min-isr"]
    assert v["detail"]["min_insync_replicas_from"] == "--min-insync-replicas"
    _, rep = verify(capsys, tmp_path, describe(one_member, configs="min.insync.replicas=3"),
                    "--min-insync-replicas", "2")
    (v,) = [v for v in rep["violations"] if v["invariant"] == "health.under-min-isr"]
    assert (v["detail"]["min_insync_replicas"], v["detail"]["min_insync_replicas_from"]) == (3, "the topic's Configs")


def test_a_reassignment_json_has_no_live_state_to_judge(capsys, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,3]}]}')
    code, out, _ = run(capsys, "verify", str(path), "--json")
    rep = json.loads(out)
    assert code == 0 and rep["not_applicable"]["health.unavailable"].startswith("no live state")


def _preferred_case() -> str:
    """Broker 1 prefers 11 partitions and leads 10 of them (one led by 2: 9% led elsewhere, under ZK's 10%)."""
    parts = ["Leader: 2\tReplicas: 1,2,3\tIsr: 1,2,3"] + ["Leader: 1\tReplicas: 1,2,3\tIsr: 1,2,3"] * 10
    return describe(*parts)


def test_preferred_leader_by_each_controllers_rule(capsys, tmp_path):
    # KRaft's maybeBalancePartitionLeaders takes every partition not led by replicas[0]
    code, rep = verify(capsys, tmp_path, _preferred_case())
    assert code == 0 and findings(rep) == {("health.preferred-leader", "soft", "partition t-0")}
    # ZooKeeper's checkAndTriggerAutoLeaderRebalance: 1 of 11 = 9% is not above leader.imbalance.per.broker.percentage
    _, rep = verify(capsys, tmp_path, _preferred_case(), "--controller", "zk")
    assert findings(rep) == set()
    # one more partition led elsewhere: 2 of 12 = 17% > 10%, and both are taken
    text = _preferred_case() + "\tTopic: t\tPartition: 11\tLeader: 3\tReplicas: 1,2,3\tIsr: 2,3\n"
    _, rep = verify(capsys, tmp_path, text, "--controller", "zk")
    assert findings(rep, "health.preferred") == {("health.preferred-leader", "soft", "partition t-0"),
                             ("health.preferred-leader", "soft", "partition t-11")}
    cannot = next(v for v in rep["violations"] if v["where"] == "partition t-11"
                  and v["invariant"] == "health.preferred-leader")
    assert "cannot elect 1" in cannot["message"]  # 1 is not in t-11's ISR


def test_stuck_reassignment_depends_on_the_release(capsys, tmp_path):
    # Broker 4 is both adding and removing (a stale adding list, KAFKA-19975): from 4.3.0 the controller waits for
    # it in the ISR left once the removing replicas go, which never holds; up to 4.2 every target in sync suffices.
    text = describe("Leader: 1\tReplicas: 1,2,3,4\tIsr: 1,2,3,4\tAdding Replicas: 4\tRemoving Replicas: 4")
    code, rep = verify(capsys, tmp_path, text)
    assert code == 1 and ("health.reassignment-completes", "hard", "partition t-0") in findings(rep)
    _, rep = verify(capsys, tmp_path, text, "--kafka-version", "4.1.2")
    assert ("health.reassignment-completes", "hard", "partition t-0") not in findings(rep)


def test_reassignment_waiting_for_an_offline_replica():
    text = ("Topic: t\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: \n"
            "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 4,2,1\tIsr: 1,2\tAdding Replicas: 4\t"
            "Removing Replicas: \tOffline: 4\n")
    rep = check_partition_health(parse_describe(text, "d"), {}, None)
    stuck = [v.detail["offline"] for v in rep.violations if v.invariant == "health.reassignment-completes"]
    assert stuck == [[4]]


# --- the leader a move predicts ---------------------------------------------------------------------------------


def test_plan_table_predicts_no_leader_for_a_leaderless_partition_with_an_empty_isr(capsys, tmp_path):
    cur = tmp_path / "cur.txt"
    cur.write_text(describe("Leader: none\tReplicas: 1,2,3\tIsr: \tElr: \tLastKnownElr: 1", HEALTHY))
    plan = tmp_path / "plan.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,5,6]}]}')
    code, out, err = run(capsys, "verify-reassignment", str(cur), str(plan))
    assert "→ 4*" not in out and "none (no ISR replica to elect)" in out, out
    code, out, err = run(capsys, "verify-reassignment", str(cur), str(plan), "--json")
    (move,) = json.loads(out)["moves"]
    assert move["predicted_leader"] is None and move["leader_must_move"]
    rep = json.loads(out)
    assert ("health.unavailable", "hard", "partition t-0") in findings(rep)


# --- against Kafka's PartitionChangeBuilder --------------------------------------------------------------------

RELEASES = list(ENV_RELEASES) or ["4.4.0", pytest.param("4.1.2", marks=pytest.mark.slow),
                                  pytest.param("4.0.2", marks=pytest.mark.slow)]


@pytest.mark.kafka
@pytest.mark.parametrize("version", RELEASES)
def test_kafka_elects_nobody_when_a_leaderless_partition_starts_a_move(version):
    """The controller's reassignment start (targets set, ONLINE election) on a partition without a leader: the ISR
    members are down (an up one would already lead), so Kafka leaves it leaderless, as `predicted_leader` says."""
    rng = random.Random(19)
    changes, moves = [], []
    for _ in range(300):
        brokers = list(range(1, 8))
        rng.shuffle(brokers)
        replicas, target = tuple(brokers[:3]), tuple(rng.sample(range(1, 8), 3))
        isr = tuple(r for r in replicas if rng.random() < 0.4)
        up = frozenset(b for b in range(1, 8) if b not in isr)  # describe says none: no ISR member is up
        removing = tuple(sorted(set(replicas) - set(target)))
        adding = tuple(sorted(set(target) - set(replicas)))
        reg = PartitionRegistration(replicas, isr, NO_LEADER)
        changes.append(PartitionChange(reg, up, Election.ONLINE, target_replicas=(*target, *removing),
                                       target_removing=removing, target_adding=adding))
        moves.append(PartitionMove(PartitionReplicas("t", 0, replicas, NO_LEADER, isr), target))
    answers = run_changes(_kafka(version), changes)
    compared = 0
    for move, answer in zip(moves, answers, strict=True):
        if isinstance(answer, JavaException):
            continue
        compared += 1
        assert answer.after.leader == move.predicted_leader == NO_LEADER, (move, answer)
    assert compared > 250


@pytest.mark.kafka
@pytest.mark.parametrize("version", RELEASES)
def test_reassignment_completes_as_kafkas_builder_completes_it(version):
    """An in-flight KRaft reassignment, every replica in sync (the ISR set to all of them): Kafka's builder completes
    it or not; `health.reassignment-completes` must flag exactly the ones it does not complete."""
    rng = random.Random(1975)
    changes, parts = [], []
    for _ in range(400):
        replicas = tuple(rng.sample(range(1, 8), rng.randint(2, 5)))
        removing = tuple(sorted(rng.sample(replicas, rng.randint(0, len(replicas) - 1))))
        adding = tuple(sorted(rng.sample(replicas, rng.randint(0 if removing else 1, len(replicas) - 1))))
        leader = rng.choice(replicas)
        isr = tuple(r for r in replicas if r == leader or rng.random() < 0.5)
        reg = PartitionRegistration(replicas, isr, leader, removing_replicas=removing, adding_replicas=adding)
        changes.append(PartitionChange(reg, frozenset(range(1, 8)), Election.ONLINE, target_isr=replicas))
        parts.append(PartitionReplicas("t", len(parts), replicas, leader, isr, adding, removing))
    answers = run_changes(_kafka(version), changes)
    report = check_partition_health(ReplicaAssignment(tuple(parts)), {}, None, kafka_version=version)
    stuck = {v.where for v in report.violations if v.invariant == "health.reassignment-completes"}
    compared = differ = 0
    for p, answer in zip(parts, answers, strict=True):
        if isinstance(answer, JavaException):
            continue
        compared += 1
        kafka_stuck = bool(answer.after.adding_replicas or answer.after.removing_replicas)
        differ += kafka_stuck != (f"partition {p.tp}" in stuck)
        assert kafka_stuck == (f"partition {p.tp}" in stuck), (p, answer)
    assert compared > 300 and differ == 0


def test_the_former_id_of_unavailable_still_works_in_baselines_and_allowlists(capsys, tmp_path):
    """health.unavailable was health.offline-partition: a user's allowlist and baseline name it so."""
    text = describe("Leader: none\tReplicas: 1,2,3\tIsr: \tElr: \tLastKnownElr: 1", HEALTHY)
    code, rep = verify(capsys, tmp_path, text)
    assert ("health.unavailable", "hard", "partition t-0") in findings(rep)
    allow = tmp_path / "allow.txt"
    allow.write_text("health.offline-partition | partition t-0 | decommissioned rack (OPS-1)\n"
                     "health.under-min-isr | partition t-0 | same\n")
    code, rep = verify(capsys, tmp_path, text, "--allowlist", str(allow))
    assert code == 0 and ("health.unavailable", "partition t-0") in {(v["invariant"], v["where"])
                                                                     for v in rep["suppressed"]}
    base = tmp_path / "old.json"  # a report written before the rename
    base.write_text(json.dumps(rep).replace("health.unavailable", "health.offline-partition"))
    assert "health.offline-partition" in base.read_text()
    code, rep = verify(capsys, tmp_path, text, "--baseline", str(base))
    assert code == 0 and ("health.unavailable", "partition t-0") in {(v["invariant"], v["where"])
                                                                     for v in rep["suppressed"]}
