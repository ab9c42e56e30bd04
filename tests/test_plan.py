"""`kcheck plan`: the fewest moves that clear the hard violations and meet the balance limits.

Minimality is checked against an independent oracle: every target of a small cluster, enumerated in order of its
move count (then its leader changes), judged only by verify-reassignment's own checks (build_subject,
check_reassignment, check_placement): the first that passes is the minimum, and when none passes there is no plan.
The CLI tests run every printed plan through `kcheck verify-reassignment`.
"""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_support import one_error_line, run
from kcheck.gate.plan import BALANCE_INVARIANTS, Infeasible, PlanProblem, count_moves, solve
from kcheck.gate.reassign import build_subject
from kcheck.invariants import BalanceSettings, PlacementSubject, Severity, check_placement
from kcheck.invariants.reassignment import check_reassignment, target_assignment
from kcheck.model import Cluster, PartitionReplicas, ReplicaAssignment
from kcheck.runtime.exit_codes import Exit

# ---------------------------------------------------------------------------------------------
# The oracle


def passes(problem: PlanProblem, target: ReplicaAssignment) -> bool:
    """verify-reassignment's verdict on moving `problem.current` to `target`, on the remaining brokers."""
    before = {p.tp: p.replicas for p in problem.current}
    if any(b in problem.leaving or b not in problem.cluster.broker_ids for p in target for b in p.replicas):
        return False
    proposed = ReplicaAssignment(tuple(p for p in target if p.replicas != before[p.tp]))
    subject = build_subject(problem.current, proposed, problem.cluster, "plan", "kraft", problem.min_isr_override,
                            dict(problem.min_insync_replicas), problem.settings.max_replicas_per_broker)
    if not check_reassignment(subject).ok:
        return False
    remaining = Cluster(tuple(b for b in problem.cluster.brokers if b.id not in problem.leaving))
    result = check_placement(PlacementSubject(remaining, target_assignment(subject), problem.settings))
    return not any(v.severity is Severity.HARD or (problem.balance and v.invariant in BALANCE_INVARIANTS)
                   for v in result.violations)


def brute_force(problem: PlanProblem) -> tuple[int, int] | None:
    """(fewest moves, fewest leader changes with them) over every target, or None when no target passes."""
    brokers = [b for b in problem.cluster.broker_ids if b not in problem.leaving]
    options = []
    for p in problem.current:
        rf = len(problem.current.of_topic(p.topic)[0].replicas)
        options.append([PartitionReplicas(p.topic, p.partition, (lead, *sorted(set(s) - {lead})))
                        for s in itertools.combinations(brokers, rf) for lead in s])
    costed = []
    for combo in itertools.product(*options):
        target = ReplicaAssignment(combo)
        costed.append((count_moves(problem.current, target), target))
    costed.sort(key=lambda c: c[0])
    for cost, target in costed:
        if passes(problem, target):
            return cost
    return None


def _assignment(rows: list[tuple[str, int, tuple[int, ...]]]) -> ReplicaAssignment:
    return ReplicaAssignment(tuple(PartitionReplicas(t, p, r) for t, p, r in rows))


@st.composite
def small_problems(draw):
    n = draw(st.integers(3, 5))
    racks = draw(st.sampled_from([0, 2, 3]))
    rack_of = {b: f"r{draw(st.integers(0, racks - 1))}" for b in range(n)} if racks else {}
    if racks and len(set(rack_of.values())) < 2:
        rack_of = {b: f"r{b % racks}" for b in range(n)}
    rf = draw(st.integers(1, min(3, n - 1)))
    parts = draw(st.integers(1, 3 if rf < 3 else 2))
    holders = list(range(n))
    rows = [("t", i, tuple(draw(st.permutations(holders))[:rf])) for i in range(parts)]
    leaving = frozenset(draw(st.sets(st.integers(0, n - 1), max_size=1)))
    balance = draw(st.booleans())
    threshold = draw(st.sampled_from([1.1, 2.0, 5.0]))
    limit = draw(st.sampled_from([10_000, parts * rf // max(1, n - 2) + 1]))
    settings_ = BalanceSettings(replica_threshold=threshold, leader_threshold=threshold,
                                follower_threshold=threshold, max_replicas_per_broker=limit)
    return PlanProblem(_assignment(rows), Cluster.of(range(n), rack_of), leaving, settings_, balance)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problems())
def test_fewest_moves_and_leader_changes_match_brute_force(problem):
    expected = brute_force(problem)
    if expected is None:
        with pytest.raises(Infeasible):
            solve(problem, timeout_s=30)
        return
    plan = solve(problem, timeout_s=30)
    assert plan.proved and plan.leaders_proved, plan
    assert (plan.moves, plan.leader_changes) == expected
    assert passes(problem, plan.target)


def test_decommission_moves_only_the_leaving_brokers_replicas():
    # 6 brokers on 3 racks, RF 3, broker 5 leaves: its 4 replicas move, each within the rack rules
    rows = [("t", i, (i % 6, (i + 1) % 6, (i + 2) % 6)) for i in range(6)]
    cluster = Cluster.of(range(6), {b: f"r{b % 3}" for b in range(6)})
    problem = PlanProblem(_assignment(rows), cluster, frozenset({5}), balance=False)
    plan = solve(problem)
    assert plan.moves == 3 and plan.proved
    assert all(5 not in p.replicas for p in plan.target)
    assert passes(problem, plan.target)


def test_brokers_added_get_their_share():
    rows = [("t", i, tuple((i + k) % 3 for k in range(2))) for i in range(6)]
    cluster = Cluster.of(range(4))  # broker 3 holds nothing: it is new
    problem = PlanProblem(_assignment(rows), cluster)
    plan = solve(problem)
    counts = [sum(b in p.replicas for p in plan.target) for b in range(4)]
    assert counts[3] >= 2 and plan.proved  # 12 replicas over 4 brokers: the lower limit is floor(3 * 0.91) = 2
    assert plan.moves == 2 and passes(problem, plan.target)


def test_rack_unaware_cluster_made_rack_aware():
    rows = [("t", 0, (0, 1)), ("t", 1, (2, 3)), ("t", 2, (0, 2))]
    cluster = Cluster.of(range(4), {0: "a", 1: "a", 2: "b", 3: "b"})  # partitions 0 and 1 sit in one rack each
    plan = solve(PlanProblem(_assignment(rows), cluster, balance=False))
    assert plan.moves == 2 and plan.leader_changes == 0 and plan.proved
    assert all({cluster.rack_of(b) for b in p.replicas} == {"a", "b"} for p in plan.target)


def test_infeasible_replication_factor_names_the_topic():
    rows = [("orders", 0, (0, 1, 2))]
    with pytest.raises(Infeasible, match="topic orders has replication factor 3 but only 2 broker"):
        solve(PlanProblem(_assignment(rows), Cluster.of(range(3)), frozenset({2})))


def test_infeasible_balance_says_so():
    # racks a (1 broker) and b (3 brokers), RF 2: broker 0 holds every partition, far above the replica limit
    rows = [("t", i, (0, 1 + i % 3)) for i in range(6)]
    cluster = Cluster.of(range(4), {0: "a", 1: "b", 2: "b", 3: "b"})
    with pytest.raises(Infeasible, match="balance limits at --threshold 1.1"):
        solve(PlanProblem(_assignment(rows), cluster))
    assert solve(PlanProblem(_assignment(rows), cluster, balance=False)).moves == 0


def test_partition_below_min_isr_is_not_moved():
    rows = (PartitionReplicas("t", 0, (0, 1), leader=0, isr=(0,)), PartitionReplicas("t", 1, (1, 2), leader=1,
                                                                                        isr=(1, 2)))
    problem = PlanProblem(ReplicaAssignment(rows), Cluster.of(range(3)), frozenset({0}), balance=False,
                          min_isr_override=2)
    with pytest.raises(Infeasible, match="partition t-0 must move .* ISR \\[0\\] is below min.insync.replicas=2"):
        solve(problem)


# ---------------------------------------------------------------------------------------------
# The command, and every printed plan through verify-reassignment


DESCRIBE = """Topic: orders\tTopicId: x\tPartitionCount: 4\tReplicationFactor: 3\tConfigs: min.insync.replicas=2
\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3
\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,4\tIsr: 2,3,4
\tTopic: orders\tPartition: 2\tLeader: 3\tReplicas: 3,4,1\tIsr: 3,4,1
\tTopic: orders\tPartition: 3\tLeader: 4\tReplicas: 4,1,2\tIsr: 4,1,2
"""
BROKERS = "1:a\n2:a\n3:b\n4:b\n5:c\n6:c\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "current.txt").write_text(DESCRIBE)
    (tmp_path / "brokers.txt").write_text(BROKERS)
    return tmp_path


def _verify(capsys, files, plan_path, *extra):
    code, out, err = run(capsys, "verify-reassignment", str(files / "current.txt"), str(plan_path),
                         "--brokers-file", str(files / "brokers.txt"), "--min-insync-replicas", "2", *extra)
    assert code == Exit.OK, out + err
    return out


def test_plan_makes_a_rack_unaware_cluster_rack_aware_and_verify_reassignment_passes_it(capsys, files):
    code, out, err = run(capsys, "plan", str(files / "current.txt"), "--brokers-file", str(files / "brokers.txt"))
    assert code == Exit.OK, err
    plan = json.loads(out)
    assert plan["version"] == 1 and len(plan["partitions"]) == 4
    assert "4 replica move(s)" in err and "minimal (proved)" in err
    (files / "plan.json").write_text(out)
    _verify(capsys, files, files / "plan.json")


def test_plan_out_and_json(capsys, files):
    code, out, err = run(capsys, "plan", str(files / "current.txt"), "--brokers-file", str(files / "brokers.txt"),
                         "--out", str(files / "plan.json"), "--json", "--threshold", "2")
    assert code == Exit.OK, err
    doc = json.loads(out)
    assert doc["proved_minimal"] and doc["moves"] == len(doc["moved_replicas"]) == doc["lower_bound"]
    assert json.loads((files / "plan.json").read_text()) == doc["reassignment"]
    _verify(capsys, files, files / "plan.json", "--threshold", "2")


def test_plan_decommission_and_verify(capsys, files):
    code, out, err = run(capsys, "plan", str(files / "current.txt"), "--brokers-file", str(files / "brokers.txt"),
                         "--decommission", "4", "--threshold", "3")
    assert code == Exit.OK, err
    assert all(4 not in p["replicas"] for p in json.loads(out)["partitions"])
    (files / "plan.json").write_text(out)
    _verify(capsys, files, files / "plan.json", "--threshold", "3", "--decommission", "4")


def test_plan_add_brokers_without_a_brokers_file(capsys, tmp_path):
    (tmp_path / "current.json").write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": i, "replicas": [i % 3, (i + 1) % 3]} for i in range(6)]}))
    code, out, err = run(capsys, "plan", str(tmp_path / "current.json"), "--add-brokers", "3")
    assert code == Exit.OK, err
    moved = json.loads(out)["partitions"]
    assert sum(3 in p["replicas"] for p in moved) == 2 and "2 replica move(s)" in err


def test_plan_infeasible_exits_failed_with_the_reason(capsys, files):
    code, out, err = run(capsys, "plan", str(files / "current.txt"), "--brokers-file", str(files / "brokers.txt"),
                         "--decommission", "3,4,5,6")
    assert code == Exit.FAILED and out == ""
    assert "topic orders has replication factor 3 but only 2 broker(s) would remain (3,4,5,6 leaving)" in err


def test_plan_nothing_to_do(capsys, tmp_path):
    (tmp_path / "current.json").write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": i, "replicas": [i % 3, (i + 1) % 3]} for i in range(3)]}))
    code, out, err = run(capsys, "plan", str(tmp_path / "current.json"))
    assert code == Exit.OK and out == "" and "Nothing to move" in err


@pytest.mark.parametrize(("args", "fragments"), [
    (["--add-brokers", "1"], ("--add-brokers", "broker 1 already holds replicas")),
    (["--decommission", "9"], ("--decommission", "broker 9 is not in the cluster")),
    (["--threshold", "0.5"], ("--threshold",)),
    (["--timeout", "0"], ("--timeout",)),
    (["--add-brokers", "7"], ("--add-brokers", "broker 7 is not in", "add it there with its rack")),
])
def test_plan_bad_input_is_one_line(capsys, files, args, fragments):
    code, out, err = run(capsys, "plan", str(files / "current.txt"), "--brokers-file", str(files / "brokers.txt"),
                         *args)
    assert code == Exit.BAD_INPUT
    one_error_line(err, *fragments)


def test_plan_refuses_a_reassignment_in_flight(capsys, tmp_path):
    (tmp_path / "current.txt").write_text(
        "Topic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\tAdding Replicas: 3\tRemoving Replicas: \n")
    code, _, err = run(capsys, "plan", str(tmp_path / "current.txt"))
    assert code == Exit.BAD_INPUT
    one_error_line(err, "partition t-0 has a reassignment in flight")


def test_plan_out_never_overwrites_its_input(capsys, files):
    code, _, err = run(capsys, "plan", str(files / "current.txt"), "--out", str(files / "current.txt"))
    assert code == Exit.BAD_INPUT
    one_error_line(err, "--out")
    assert (files / "current.txt").read_text() == DESCRIBE


# ---------------------------------------------------------------------------------------------
# The bench's --generate stand-in is Kafka's own --generate (marker `kafka`)

PROBE = r"""
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.metadata.placement.UsableBroker;

/** ReassignPartitionsCommand.calculateAssignment (what --generate prints as its proposal), its placer's Random
 *  seeded: args seed partitions rf id/rack... ; prints one replica list per partition. */
public class GenerateProbe {
    public static void main(String[] a) throws Exception {
        long seed = Long.parseLong(a[0]);
        int parts = Integer.parseInt(a[1]);
        int rf = Integer.parseInt(a[2]);
        List<UsableBroker> brokers = new ArrayList<>();
        for (int i = 3; i < a.length; i++) {
            String[] br = a[i].split("/", -1);
            brokers.add(new UsableBroker(Integer.parseInt(br[0]),
                                         br[1].isEmpty() ? Optional.empty() : Optional.of(br[1]), false));
        }
        Class<?> cmd = Class.forName("org.apache.kafka.tools.reassign.ReassignPartitionsCommand");
        Field placer = cmd.getDeclaredField("REPLICA_PLACER");  // static final: set through Unsafe
        Field theUnsafe = Class.forName("sun.misc.Unsafe").getDeclaredField("theUnsafe");
        theUnsafe.setAccessible(true);
        sun.misc.Unsafe u = (sun.misc.Unsafe) theUnsafe.get(null);
        u.putObject(u.staticFieldBase(placer), u.staticFieldOffset(placer), new StripedReplicaPlacer(new Random(seed)));
        Map<TopicPartition, List<Integer>> current = new LinkedHashMap<>();
        for (int p = 0; p < parts; p++) {
            List<Integer> r = new ArrayList<>();
            for (int k = 0; k < rf; k++) r.add(brokers.get(k).id());
            current.put(new TopicPartition("t", p), r);
        }
        Method m = cmd.getDeclaredMethod("calculateAssignment", Map.class, List.class);
        m.setAccessible(true);
        @SuppressWarnings("unchecked")
        Map<TopicPartition, List<Integer>> out = (Map<TopicPartition, List<Integer>>) m.invoke(null, current, brokers);
        for (int p = 0; p < parts; p++) {
            StringBuilder s = new StringBuilder();
            for (int b : out.get(new TopicPartition("t", p))) s.append(s.length() == 0 ? "" : ",").append(b);
            System.out.println(s);
        }
    }
}
"""


@pytest.mark.kafka
def test_bench_generate_stand_in_is_kafkas_generate(tmp_path):
    import importlib.util
    import subprocess
    import sys
    from pathlib import Path

    from kafka_support import kafka_bridge
    from kcheck.model import Broker
    from kcheck.reference.kafka_jars import resolve_server

    bridge = kafka_bridge("4.4.0")
    tools = resolve_server("4.4.0").classpath
    (tmp_path / "GenerateProbe.java").write_text(PROBE)
    subprocess.run(["javac", "-nowarn", "-cp", tools, "-d", str(tmp_path), str(tmp_path / "GenerateProbe.java")],
                   check=True, capture_output=True)
    spec = importlib.util.spec_from_file_location("plan_vs_generate",
                                                  Path(__file__).parent.parent / "bench" / "plan_vs_generate.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, bench)  # its dataclasses look their module up
    spec.loader.exec_module(bench)
    cases = [(6, 3, 12, 3, 7), (9, 3, 20, 3, 1001), (8, 0, 16, 2, -5), (5, 2, 7, 2, 2**40), (12, 4, 24, 3, 42)]
    for n, racks, parts, rf, seed in cases:
        brokers = tuple(Broker(b, f"r{b % racks}" if racks else None) for b in range(n))
        probe = subprocess.run(["java", "-cp", f"{tools}:{tmp_path}", "GenerateProbe", str(seed), str(parts), str(rf),
                                *(f"{b.id}/{b.rack or ''}" for b in brokers)],
                               check=True, capture_output=True, text=True)
        kafka_generate = [[int(x) for x in line.split(",")] for line in probe.stdout.split()]
        (stand_in,) = bench.kafka_proposal(bridge, bench.generate_requests(brokers, [(parts, rf)], seed, "4.4.0"),
                                           "4.4.0")
        assert stand_in == kafka_generate, (n, racks, parts, rf, seed)


def test_rack_distribution_beyond_the_flow_is_proved_by_z3():
    # RF 4 on racks a = {0,1,2} and b = {3,4,5}: today 3 replicas in a and 1 in b, which rack-distribution forbids;
    # the min-cost flow leaves that rule out (its answer keeps the partition as it is), so Z3 finds and proves 1 move
    cluster = Cluster.of(range(6), {b: "a" if b < 3 else "b" for b in range(6)})
    problem = PlanProblem(_assignment([("t", 0, (0, 1, 2, 3))]), cluster, balance=False)
    assert brute_force(problem) == (1, 0)
    plan = solve(problem)
    assert (plan.moves, plan.leader_changes) == (1, 0) and plan.proved and plan.leaders_proved


def test_plan_says_what_it_could_not_cover(capsys, tmp_path, monkeypatch):
    import kcheck.gate.plan

    (tmp_path / "current.json").write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [0, 1, 2, 3]}]}))
    (tmp_path / "brokers.txt").write_text("".join(f"{b}:{'a' if b < 3 else 'b'}\n" for b in range(6)))
    monkeypatch.setattr(kcheck.gate.plan, "MAX_CELLS", 8)  # below this problem's 12 Booleans: Z3 is not run
    code, out, err = run(capsys, "plan", str(tmp_path / "current.json"), "--brokers-file",
                         str(tmp_path / "brokers.txt"), "--no-balance")
    assert code == Exit.INCOMPLETE and out == ""
    assert "1 partitions x 6 brokers is 12 solver Booleans, above kcheck's limit of 8" in err
    assert "lower bound: 1 move(s)" in err  # the counting bound: one replica must cross to rack b
