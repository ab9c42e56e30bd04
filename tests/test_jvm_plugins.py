"""Java plug-ins (`jvm:<class>` with `--classpath`) through every command, against Kafka's own classes.

The example classes (examples/jvm/src) and a few broken ones written here are compiled with javac against
the cached Kafka 4.4.0 jars (`kcheck kafka-classpath`) into a temporary folder. Expected values come from
Kafka's code: a class that extends StripedReplicaPlacer must answer exactly as Kafka's StripedReplicaPlacer
(request S of the same JVM), for every input, random state and exception; Kafka's RangeAssignor and
UniformAssignor given as `jvm:` must assign as our reference's range and uniform do (the reference is
checked against them in their own test files). The example placer's and assignor's expected answers
follow from the rule their class comments state.

Marker `kafka` (skipped only without java/javac/mvn); the Spark sweeps also `spark`.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_support import require_jdk
from kcheck.cli import main
from kcheck.invariants import smt
from kcheck.invariants.exhaustive import check_exhaustively
from kcheck.invariants.prover import Bounds
from kcheck.model import Broker
from kcheck.reference import jvm_plugins
from kcheck.reference.java import JavaRandom, MockRandom
from kcheck.reference.kafka_bridge import KafkaBridge, StripedRequest, shared_bridge
from kcheck.reference.placers import PlacerInfo, resolve_placer, striped_assign
from kcheck.reference.plugins import PluginError
from kcheck.reference.striped import PlacementSpec

pytestmark = pytest.mark.kafka

VERSION = "4.4.0"
ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "jvm" / "src"
DATA = Path(__file__).parent / "data"
STRIPED_PLUS = "jvm:com.example.StripedPlusPlacer"
RACK_BLIND = "jvm:com.example.RackBlindPlacer"
TOPIC_PER_MEMBER = "jvm:com.example.TopicPerMemberAssignor"

_PLACER_IMPORTS = """package kc;
import java.util.*;
import org.apache.kafka.metadata.placement.*;
"""
# Classes that go wrong in each way a user's class can (and one deterministic no-arg placer).
BROKEN = {
    "ThrowingCtorPlacer": _PLACER_IMPORTS + """
public class ThrowingCtorPlacer implements ReplicaPlacer {
    public ThrowingCtorPlacer(Random random) { throw new IllegalStateException("no placement.config given"); }
    public TopicAssignment place(PlacementSpec spec, ClusterDescriber cluster) { return null; }
}""",
    "ThrowingPlacer": _PLACER_IMPORTS + """
public class ThrowingPlacer implements ReplicaPlacer {
    public TopicAssignment place(PlacementSpec spec, ClusterDescriber cluster) {
        throw new UnsupportedOperationException("racks are not supported yet");
    }
}""",
    "NeedsConfigPlacer": _PLACER_IMPORTS + """
public class NeedsConfigPlacer implements ReplicaPlacer {
    public NeedsConfigPlacer(String config) { }
    public TopicAssignment place(PlacementSpec spec, ClusterDescriber cluster) { return null; }
}""",
    "AbstractPlacer": _PLACER_IMPORTS + """
public abstract class AbstractPlacer implements ReplicaPlacer { }""",
    "UnboundedPlacer": _PLACER_IMPORTS + """
public class UnboundedPlacer extends StripedReplicaPlacer {
    private final Random random;
    public UnboundedPlacer(Random random) { super(random); this.random = random; }
    public TopicAssignment place(PlacementSpec spec, ClusterDescriber cluster) {
        random.nextLong();
        return super.place(spec, cluster);
    }
}""",
    # No Random: partition p gets the brokers from index p on, in id order (no draws at all).
    "FirstBrokersPlacer": _PLACER_IMPORTS + """
public class FirstBrokersPlacer implements ReplicaPlacer {
    public TopicAssignment place(PlacementSpec spec, ClusterDescriber cluster) {
        List<Integer> ids = new ArrayList<>();
        cluster.usableBrokers().forEachRemaining(b -> ids.add(b.id()));
        Collections.sort(ids);
        List<PartitionAssignment> out = new ArrayList<>();
        for (int p = 0; p < spec.numPartitions(); p++) {
            List<Integer> replicas = new ArrayList<>();
            for (int r = 0; r < spec.numReplicas(); r++) replicas.add(ids.get((p + r) % ids.size()));
            out.add(new PartitionAssignment(replicas, cluster::defaultDir));
        }
        return new TopicAssignment(out);
    }
}""",
    # Throws on one random draw of ten: the exhaustive checker meets it after a few runs.
    "UnluckyPlacer": _PLACER_IMPORTS + """
public class UnluckyPlacer extends StripedReplicaPlacer {
    private final Random random;
    public UnluckyPlacer(Random random) { super(random); this.random = random; }
    public TopicAssignment place(PlacementSpec spec, ClusterDescriber cluster) {
        if (random.nextInt(10) == 3) throw new IllegalStateException("unlucky draw");
        return super.place(spec, cluster);
    }
}""",
    "ThrowingAssignor": """package kc;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.common.Cluster;
public class ThrowingAssignor implements ConsumerPartitionAssignor {
    public String name() { return "throwing"; }
    public GroupAssignment assign(Cluster metadata, GroupSubscription subscriptions) {
        throw new IllegalArgumentException("no members with rack ids");
    }
}""",
}


def _require_tools() -> None:
    require_jdk()


def _kafka_classpath() -> str:
    """What `kcheck kafka-classpath --kafka-version 4.4.0` prints (the command a user compiles with)."""
    proc = subprocess.run([sys.executable, "-m", "kcheck", "kafka-classpath", "--kafka-version", VERSION],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def classes(tmp_path_factory) -> str:
    """The examples and the broken classes, compiled against Kafka 4.4.0's jars: the --classpath folder."""
    _require_tools()
    src = tmp_path_factory.mktemp("src")
    out = tmp_path_factory.mktemp("classes")
    (src / "kc").mkdir()
    for name, text in BROKEN.items():
        (src / "kc" / f"{name}.java").write_text(text, encoding="utf-8")
    sources = [*map(str, sorted(EXAMPLES.rglob("*.java"))), *map(str, sorted((src / "kc").glob("*.java")))]
    proc = subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", _kafka_classpath(), *sources],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    yield str(out)
    jvm_plugins.configure()  # later tests in this process start with no classpath


@pytest.fixture(scope="module")
def kafka(classes) -> KafkaBridge:
    """The bridge the plug-ins run in (Kafka 4.4.0 plus the classes); also answers Kafka's own requests."""
    return shared_bridge(VERSION, (classes,))


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# --- a class extending StripedReplicaPlacer is Kafka's StripedReplicaPlacer -----------------------------------

def _request(rnd: random.Random) -> StripedRequest:
    """Uneven racks, unicode and empty rack names, fenced brokers, RF beyond the brokers, any long seed."""
    n = rnd.randint(1, 9)
    racks = rnd.choice([[None], ["a"], ["a", "b"], ["a", "b", "c"], ["", "r\u00e9", "b"], [None, "a"]])
    brokers = tuple(Broker(i, rnd.choice(racks), rnd.random() < 0.2) for i in rnd.sample(range(2_000), n))
    specs = tuple(PlacementSpec("t", rnd.randint(0, 5), rnd.randint(1, 12), rnd.randint(1, 5))
                  for _ in range(rnd.randint(1, 3)))
    return StripedRequest(brokers, specs, rnd.randint(-(2**63), 2**63 - 1))


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.integers(0, 2**64), st.integers(150, 250))
def test_a_class_extending_striped_answers_as_kafkas_striped(kafka, seed, size):
    """Same replica lists (or the same exception) for every input, ~2,400 in all, one round trip per batch."""
    rnd = random.Random(seed)
    requests = [_request(rnd) for _ in range(size)]
    ours = jvm_plugins.map_place(kafka, STRIPED_PLUS[4:], requests)
    kafkas = kafka.map_striped(requests)
    assert ours == kafkas
    assert any(not isinstance(a, Exception) for a in ours) and any(isinstance(a, Exception) for a in ours)


_releases = [v.strip() for v in os.environ.get("KCHECK_KAFKA_RELEASES", "").split(",") if v.strip()]


@pytest.mark.slow
@pytest.mark.parametrize("version", _releases or ["3.9.1", "4.0.2", "4.1.2"])
def test_the_class_runs_beside_other_releases(classes, version):
    """The classes compiled against 4.4.0 run on each release's jars, as that release's striped placer."""
    kafka = shared_bridge(version, (classes,))
    rnd = random.Random(version)
    requests = [_request(rnd) for _ in range(1_000)]
    assert jvm_plugins.map_place(kafka, STRIPED_PLUS[4:], requests) == kafka.map_striped(requests)


def test_random_state_and_mock_random_follow_java(classes):
    """Successive calls sharing one java.util.Random (and Kafka's test MockRandom) advance it as Java did."""
    jvm_plugins.configure((classes,), VERSION)
    jvm = resolve_placer(STRIPED_PLUS)
    brokers = [Broker(i, "ab"[i % 2], fenced=i == 3) for i in range(6)]
    for make in (lambda: JavaRandom(7), lambda: MockRandom()):
        a, b = make(), make()
        for n, rf, start in ((5, 3, -1), (3, 2, 4), (8, 1, -1)):
            assert jvm.place(brokers, n, rf, -1, start, a) == striped_assign(brokers, n, rf, -1, start, b)


def test_place_cli_matches_the_striped_placer(capsys, classes):
    base = ["place", "--brokers", "0,1,2,3,4,5", "--racks", "0:a,1:a,2:b,3:b,4:c,5:c", "--partitions", "7",
            "--replication-factor", "3"]
    for extra in (["--seed", "42"], ["--seed", "mock", "--fenced", "2"], ["--seed", "-3", "--start-partition", "5"]):
        code, jvm_out, err = run(capsys, *base, *extra, "--placer", STRIPED_PLUS, "--classpath", classes)
        assert code == 0 and err == ""
        code, striped_out, _ = run(capsys, *base, *extra, "--placer", "striped")
        assert code == 0 and jvm_out == striped_out


def test_a_no_arg_placer_runs_without_draws(capsys, classes):
    code, out, err = run(capsys, "place", "--placer", "jvm:kc.FirstBrokersPlacer", "--classpath", classes,
                         "--brokers", "5,3,9", "--partitions", "4", "--replication-factor", "2")
    assert code == 0, err
    ids = [3, 5, 9]
    expected = {p: [ids[(p + r) % 3] for r in range(2)] for p in range(4)}
    got = {q["partition"]: q["replicas"] for q in json.loads(out)["partitions"]}
    assert got == expected


# --- kcheck check / place --report find what the rack-blind example gets wrong -------------------------------


def _rack_blind(ids: list[int], partitions: int, rf: int, seed: int) -> dict[int, list[int]]:
    """The rule RackBlindPlacer's comment states: one nextInt(n) start, then round-robin in id order."""
    ids = sorted(ids)
    start = JavaRandom(seed).next_int(len(ids))
    return {p: [ids[(start + p + r) % len(ids)] for r in range(rf)] for p in range(partitions)}


def test_check_fails_the_rack_blind_placer_and_its_replay_reproduces_it(capsys, classes):
    code, out, err = run(capsys, "check", "--placer", RACK_BLIND, "--classpath", classes, "--max-brokers", "4",
                         "--json")
    assert code == 1, err
    rows = {r["invariant"]: r for r in json.loads(out)["outcomes"]}
    assert rows["placement.rack-diversity"]["result"] == "FAILED"  # a user's placer must hold the hard ones
    assert rows["placement.leader-unfenced"]["result"] == "FAILED"
    assert rows["placement.distinct-brokers"]["result"] == "holds"
    replay = rows["placement.rack-diversity"]["smallest_counterexample"]["replay"]
    assert f"--classpath {classes}" in replay
    args = shlex.split(replay)[1:]
    code, out, err = run(capsys, *args, "--report")
    assert code == 1 and "placement.rack-diversity" in err
    seed = int(args[args.index("--seed") + 1])
    ids = [int(b) for b in args[args.index("--brokers") + 1].split(",")]
    got = {q["partition"]: q["replicas"] for q in json.loads(out)["partitions"]}
    assert got == _rack_blind(ids, int(args[args.index("--partitions") + 1]),
                              int(args[args.index("--replication-factor") + 1]), seed)


# --- prove --exhaustive: every draw, enumerated in Java ------------------------------------------------------


def test_prove_enumerates_every_draw_exactly_as_for_the_reference(capsys, classes, monkeypatch):
    bounds = Bounds(4, 3, 4, 3)
    code, out, err = run(capsys, "prove", "--placer", STRIPED_PLUS, "--classpath", classes, "--max-brokers", "4",
                         "--max-partitions", "4", "--max-rf", "3", "--json")
    assert code == 0, err
    jvm = json.loads(out)["results"]
    ours = check_exhaustively(PlacerInfo("ours", striped_assign, False, frozenset()), list(smt.FORMS), bounds)
    assert [r["status"] for r in jvm] == [ours[r["invariant"]].status for r in jvm]
    assert {r["queries"] for r in jvm} == {r.queries for r in ours.values()}  # the same number of runs
    for r in jvm:  # the same counterexamples: placement, draws, the replay's seed and its violations
        mine = json.loads(json.dumps(ours[r["invariant"]].as_dict()))
        assert {k: v for k, v in r.items() if k not in ("algorithm", "seconds")} == \
            {k: v for k, v in mine.items() if k not in ("algorithm", "seconds")}
    assert any(r["status"] == "refuted" for r in jvm) and any(r["status"] == "proved" for r in jvm)

    # one round trip per configuration, not per run: the runs come from Java in batches
    calls = []
    real = KafkaBridge.roundtrip
    monkeypatch.setattr(KafkaBridge, "roundtrip", lambda self, lines: calls.append(len(lines)) or real(self, lines))
    jvm_plugins.configure((classes,), VERSION)
    results = check_exhaustively(resolve_placer(STRIPED_PLUS), ["placement.distinct-brokers"], bounds)
    runs = results["placement.distinct-brokers"].queries
    assert runs > 1_000 and len(calls) < runs / 5

    # answers cut short (a configuration's runs over several round trips) give the same results
    monkeypatch.setattr(jvm_plugins, "ENUMERATION_CHUNK", 7)
    small = Bounds(3, 2, 3, 2)
    cut = check_exhaustively(resolve_placer(STRIPED_PLUS), list(smt.FORMS), small)
    whole = check_exhaustively(PlacerInfo("ours", striped_assign, False, frozenset()), list(smt.FORMS), small)
    assert [(r.status, r.queries) for r in cut.values()] == [(r.status, r.queries) for r in whole.values()]


# --- assignors --------------------------------------------------------------------------------------------------

GROUPS = sorted(DATA.glob("group_*.json"))


@pytest.mark.parametrize(("jvm", "ours"), [
    ("jvm:org.apache.kafka.clients.consumer.RangeAssignor", "range"),
    ("jvm:org.apache.kafka.clients.consumer.RoundRobinAssignor", "roundrobin"),
    # the members' user data (owned partitions, generation) written as Kafka's sticky assignors write it
    ("jvm:org.apache.kafka.clients.consumer.StickyAssignor", "sticky"),
    ("jvm:org.apache.kafka.clients.consumer.CooperativeStickyAssignor", "cooperative-sticky"),
    ("jvm:org.apache.kafka.coordinator.group.assignor.UniformAssignor", "uniform"),
    ("jvm:org.apache.kafka.coordinator.group.assignor.RangeAssignor", "server-range"),
])
def test_kafkas_assignors_given_as_jvm_assign_as_the_reference(capsys, classes, jvm, ours):
    for group in GROUPS:
        code, out, err = run(capsys, "assign", "--assignor", jvm, "--classpath", classes, str(group), "--json")
        code2, out2, _ = run(capsys, "assign", "--assignor", ours, str(group), "--json")
        assert (code, err) == (code2, "")
        mine, theirs = json.loads(out), json.loads(out2)
        assert mine["assignment"] == theirs["assignment"], group.name
        assert mine.get("revoked") == theirs.get("revoked"), group.name
        assert mine["violations"] == theirs["violations"], group.name


def test_the_example_assignor_gives_each_topic_to_one_member(capsys, classes):
    code, out, err = run(capsys, "assign", "--assignor", TOPIC_PER_MEMBER, "--classpath", classes,
                         str(DATA / "group_racks.json"), "--json")
    assert code == 0, err  # nothing hard breaks: every partition is assigned once
    result = json.loads(out)
    # one topic t (4 partitions), subscribers c1, c2: the first subscriber in name order takes it all
    assert result["assignment"] == {"c1": ["t-0", "t-1", "t-2", "t-3"], "c2": []}
    assert "assignment.balanced" in {v["invariant"] for v in result["violations"]}


@pytest.mark.slow  # the main job's rebalance model over a JVM assignor (~11 s)
def test_check_runs_a_jvm_assignor_in_the_rebalance_model(capsys, classes):
    code, out, err = run(capsys, "check", "--assignor", "jvm:org.apache.kafka.clients.consumer.RangeAssignor",
                         "--classpath", classes, "--json")
    assert code == 0, err
    models = json.loads(out)["rebalance_models"]
    assert [m["assignor"] for m in models] == ["jvm:org.apache.kafka.clients.consumer.RangeAssignor"]
    assert models[0]["failure"] is None


def test_kafkas_sticky_assignor_makes_the_stale_claim_findings_of_the_model(classes):
    """The rejoin sweep's stale-claim findings about our StickyAssignor come from
    Kafka 4.4.0's own StickyAssignor too, on the same groups: as the leader's assignor, given the rejoining
    member's stale user data, it assigns a partition of a topic the member dropped (42 groups), or throws a
    NullPointerException (4 groups). For a user's class these break hard invariants, so they fail."""
    from kcheck.check import run_rejoin_sweep

    jvm_sticky = "jvm:org.apache.kafka.clients.consumer.StickyAssignor"
    jvm_plugins.configure((classes,), VERSION)
    sweep = run_rejoin_sweep(assignors=[jvm_sticky, "sticky"])
    found = {(o.assignor, o.invariant): o for o in sweep.outcomes}
    for kafkas, ours in (("assignment.valid", "assignment.stale-claim"),
                         ("assignment.assignor-error", "assignment.stale-claim-npe")):
        k, o = found[(jvm_sticky, kafkas)], found[("sticky", ours)]
        assert k.fails and not o.fails
        assert k.violated == o.violated > 0
        same = {key: v for key, v in k.config.items() if key not in ("id", "assignor", "story")}
        assert same == {key: v for key, v in o.config.items() if key not in ("id", "assignor", "story")}
    assert "java.lang.NullPointerException" in found[(jvm_sticky, "assignment.assignor-error")].message


# --- what a user's class does wrong: one line naming it, exit 2 ------------------------------------------------

PLACE = ["place", "--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2"]


@pytest.mark.parametrize(("args", "message"), [
    (PLACE + ["--placer", "jvm:kc.Missing"], "plug-in jvm:kc.Missing: ClassNotFoundException: class kc.Missing is "
                                             "neither in Kafka 4.4.0's jars nor in --classpath"),
    (PLACE + ["--placer", TOPIC_PER_MEMBER], "does not implement org.apache.kafka.metadata.placement.ReplicaPlacer "
                                             "(it is a ConsumerPartitionAssignor)"),
    (PLACE + ["--placer", "jvm:kc.ThrowingCtorPlacer"],
     "plug-in jvm:kc.ThrowingCtorPlacer: its constructor threw: java.lang.IllegalStateException: no placement.config "
     "given"),
    (PLACE + ["--placer", "jvm:kc.ThrowingPlacer"],
     "plug-in jvm:kc.ThrowingPlacer: java.lang.UnsupportedOperationException: racks are not supported yet"),
    (PLACE + ["--placer", "jvm:kc.NeedsConfigPlacer"], "kc.NeedsConfigPlacer has no suitable constructor"),
    (PLACE + ["--placer", "jvm:kc.AbstractPlacer"], "kc.AbstractPlacer is abstract"),
    (PLACE + ["--placer", "jvm:kc..Bad"], "--placer: 'jvm:kc..Bad' is not of the form jvm:<fully.qualified."),
    (PLACE + ["--placer", RACK_BLIND, "--start-index", "1"], "--start-index: the jvm:com.example.RackBlindPlacer "
                                                             "placer has no start index"),
    (["assign", "--assignor", RACK_BLIND, str(DATA / "group_racks.json")],
     "does not implement org.apache.kafka.clients.consumer.ConsumerPartitionAssignor or org.apache.kafka.coordinator"
     ".group.api.assignor.ConsumerGroupPartitionAssignor (it is a ReplicaPlacer)"),
    (["assign", "--assignor", "jvm:kc.ThrowingAssignor", str(DATA / "group_racks.json")],
     "plug-in jvm:kc.ThrowingAssignor: java.lang.IllegalArgumentException: no members with rack ids"),
    (["prove", "--placer", "jvm:kc.UnluckyPlacer", "--max-brokers", "2"],
     "plug-in jvm:kc.UnluckyPlacer: java.lang.IllegalStateException: unlucky draw"),
    (["prove", "--placer", "jvm:kc.UnboundedPlacer", "--max-brokers", "2"],
     "plug-in jvm:kc.UnboundedPlacer: UnboundedDraw: asked for a draw kcheck cannot enumerate"),
])
def test_a_broken_class_is_one_line_naming_it(capsys, classes, args, message):
    code, _, err = run(capsys, *args, "--classpath", classes)
    assert message in one_line_error(code, err)


def test_a_missing_classpath_entry_is_one_line(capsys, classes, tmp_path):
    missing = str(tmp_path / "nope.jar")
    for args in (PLACE + ["--placer", STRIPED_PLUS], ["assign", str(DATA / "group_racks.json")],
                 ["sweep", "placement", "--placer", STRIPED_PLUS, "--out", str(tmp_path / "s")]):
        code, _, err = run(capsys, *args, "--classpath", os.pathsep.join([classes, missing]))
        assert one_line_error(code, err) == f"kcheck: error: --classpath: '{missing}' does not exist"


def test_kafka_classpath_names_the_releases_jars(capsys, classes):
    code, out, err = run(capsys, "kafka-classpath", "--kafka-version", VERSION)
    assert code == 0 and err == ""
    jars = out.strip().split(os.pathsep)
    assert any(Path(j).name == f"kafka-metadata-{VERSION}.jar" for j in jars) and all(Path(j).is_file() for j in jars)


def test_a_plugin_failure_inside_the_engine_is_a_plugin_error(classes):
    jvm_plugins.configure((classes,), VERSION)
    info = resolve_placer("jvm:kc.ThrowingPlacer")
    with pytest.raises(PluginError, match="UnsupportedOperationException"):
        info.place([Broker(0), Broker(1)], 1, 1, -1, -1, JavaRandom(0))


# --- sweeps: each Spark worker starts its own bridge with the same classpath ------------------------------------


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    from kcheck.spark_check.job import spark_session

    session = spark_session("local[2]", progress=False)
    yield session
    session.stop()


def _stored(out: str):
    from kcheck.spark_check.store import ResultStore

    manifest = json.loads(Path(out, "manifest.json").read_text())
    return ResultStore(out).load(manifest["size"]).result


def _by_subject(counts: dict[str, int], subject: str) -> dict[str, int]:
    return {k.rpartition("/")[2]: v for k, v in counts.items() if k.rpartition("/")[0] == subject}


_WORKER = """
import json, pickle, sys
space = pickle.loads(sys.stdin.buffer.read())
result = space.evaluate(0, len(space))
print(json.dumps({"checked": result.checked, "violated": result.violated}))
"""


@pytest.mark.parametrize(("kind", "space", "subjects"), [
    ("placement", "small,brokers=2..3,rf=1..2", (STRIPED_PLUS, "striped")),
    ("assignors", "max_members=2,max_topics=1,max_partitions=2",
     ("jvm:org.apache.kafka.clients.consumer.RangeAssignor", "range")),
])
def test_a_pickled_space_carries_the_classpath_to_a_fresh_worker(classes, kind, space, subjects):
    """What a Spark executor does with a task (unpickle the space, evaluate a range), in a fresh Python process
    that never saw --classpath: it starts its own bridge and answers as the built-in twin does."""
    from kcheck.commands.sweep import build_space

    jvm_plugins.configure((classes,), VERSION)
    built = build_space(kind, space, list(subjects) if kind == "placement" else None,
                        list(subjects) if kind == "assignors" else None)
    blob = pickle.dumps(built)
    jvm_plugins.configure()  # the driver's setting does not reach the worker but through the pickle
    proc = subprocess.run([sys.executable, "-c", _WORKER], input=blob, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    result = json.loads(proc.stdout)
    for counts in (result["checked"], result["violated"]):
        assert _by_subject(counts, subjects[0]) == _by_subject(counts, subjects[1])
    assert sum(_by_subject(result["violated"], subjects[0]).values()) > 0  # the twins' soft findings, too


@pytest.mark.slow  # Spark workers and a JVM each (~50 s)
@pytest.mark.spark
def test_sweeps_run_jvm_plugins_on_the_workers(spark, capsys, classes, tmp_path):
    out = str(tmp_path / "placement")
    code, stdout, err = run(capsys, "sweep", "placement", "--space", "small,brokers=2..3,rf=1..2",
                            "--placer", f"{STRIPED_PLUS},striped", "--classpath", classes, "--out", out, "--tasks", "2")
    assert code == 0, err
    result = _stored(out)
    for counts in (result.checked, result.violated):
        assert _by_subject(counts, STRIPED_PLUS) == _by_subject(counts, "striped")
    assert sum(_by_subject(result.violated, STRIPED_PLUS).values()) > 0  # the striped placer's soft findings

    out = str(tmp_path / "assignors")
    jvm_range = "jvm:org.apache.kafka.clients.consumer.RangeAssignor"
    code, stdout, err = run(capsys, "sweep", "assignors", "--space", "max_members=2,max_topics=1,max_partitions=2",
                            "--assignor", f"{jvm_range},range", "--classpath", classes, "--out", out, "--tasks", "2")
    assert code == 0, err
    result = _stored(out)
    for counts in (result.checked, result.violated):
        assert _by_subject(counts, jvm_range) == _by_subject(counts, "range")

    code, _, err = run(capsys, "sweep", "placement", "--space", "brokers=2,racks=1,partitions=1,rf=1",
                       "--placer", "jvm:kc.ThrowingPlacer", "--classpath", classes, "--out", str(tmp_path / "bad"))
    line = one_line_error(code, err)
    assert "plug-in jvm:kc.ThrowingPlacer" in line and "racks are not supported yet" in line
