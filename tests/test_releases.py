"""Release profiles (`kcheck.reference.releases`) and `--kafka-version` on the commands.

The profile fields are facts about Kafka's jars: the tests marked `kafka` run each release's own classes
(through the bridge, and a small Java probe for the values no harness request returns) and check every
field the jars can show. By default only the newest release runs; KCHECK_KAFKA_RELEASES="4.0.2,4.1.0,..."
picks others, and the slow test runs every known release (each field on both sides of every change).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from kafka_support import ENV_RELEASES, require_jdk
from kcheck.cli import main
from kcheck.model.replication import protocol as model_protocol
from kcheck.model.replication import reassignment as model_reassignment
from kcheck.reference import releases
from kcheck.reference.election import Election, KRaftVersion, PartitionChangeBuilder, PartitionRegistration
from kcheck.reference.kafka_jars import KNOWN_RELEASES, ZK_RELEASES
from kcheck.reference.releases import DEFAULT_VERSION, DIFFERENCES, RELEASES, ReleaseProfile, profile

DATA = Path(__file__).parent / "data"


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, out, err, *fragments):
    assert code == 2 and out == "" and err.startswith("kcheck: error: ") and err.count("\n") == 1, err
    for fragment in fragments:
        assert fragment in err, err


# --- the profiles --------------------------------------------------------------------------------------------


def test_releases_follow_the_jar_resolver_and_the_default_is_the_newest_4x():
    assert set(RELEASES) == set(KNOWN_RELEASES) | set(ZK_RELEASES)
    assert DEFAULT_VERSION == KNOWN_RELEASES[0] == RELEASES[0]
    assert list(RELEASES) == sorted(RELEASES, key=releases.version_key, reverse=True)
    assert profile() is profile(DEFAULT_VERSION) and profile().version == "4.4.0"


def test_every_profile_field_is_one_declared_difference():
    names = [f.name for f in dataclasses.fields(ReleaseProfile) if f.name != "version"]
    assert names == [d.field for d in DIFFERENCES]
    for d in DIFFERENCES:
        assert d.what and (d.evidence or d.steps), d.field
        sinces = [s.since for s in d.steps]
        assert all(len(releases.version_key(v)) == 3 for v in sinces), d.field  # a release (maybe not a known one)
        assert sinces == sorted(sinces, key=releases.version_key), d.field
        values = [d.initial, *(s.value for s in d.steps)]
        assert all(a != b for a, b in itertools.pairwise(values)), d.field  # every step changes the value
        assert all(s.source and s.evidence for s in d.steps), d.field


@pytest.mark.parametrize("version, expected", [
    ("3.9.1", dict(admin_utils=True, zk_controller=True, eligible_leader_replicas=False,
                   last_known_leader_must_be_acceptable=False, last_known_leader_update="isr-emptied",
                   reassignment_completion="all-targets", striped_cordoned_wording=False,
                   header_parse_wording="apiKey", produce_advertised_min_zero=False,
                   client_api_listeners=("BROKER", "ZK_BROKER"))),
    ("4.0.2", dict(admin_utils=True, zk_controller=False, eligible_leader_replicas=False,
                   last_known_leader_must_be_acceptable=False, reassignment_completion="all-targets")),
    ("4.1.0", dict(admin_utils=False, eligible_leader_replicas=True, last_known_leader_must_be_acceptable=True,
                   last_known_leader_update="isr-emptied")),
    ("4.1.1", dict(last_known_leader_update="leaderless", reassignment_completion="all-targets")),
    ("4.2.2", dict(reassignment_completion="all-targets", striped_cordoned_wording=False,
                   tagged_field_count_checked=True)),
    ("4.3.0", dict(reassignment_completion="adding-unless-shrinking", striped_cordoned_wording=True,
                   tagged_field_count_checked=False)),
    ("4.3.1", dict(partitioner_rack_aware=False)),
    ("4.4.0", dict(admin_utils=False, zk_controller=False, eligible_leader_replicas=True,
                   striped_continues_from_existing=False, partitioner_rack_aware=True, metadata_version="4.4-IV2",
                   header_parse_refuses_removed_apis=True, tagged_field_count_checked=True,
                   client_api_listeners=("BROKER",))),
])
def test_profile_values(version, expected):
    p = profile(version)
    assert {k: getattr(p, k) for k in expected} == expected


@pytest.mark.parametrize("text", ["4.5.0", "4.4", "", "latest", "4.4.0 ", "4.4.0\n", "3.8.1", "\u0664.4.0",
                                  "x" * 500])
def test_unknown_release_is_one_line_naming_the_known_ones(text):
    if text.strip(" ") in RELEASES:  # surrounding spaces are forgiven; a line break or tab is not
        assert releases.check_version(text) == text.strip(" ")
        return
    with pytest.raises(releases.UnknownRelease) as e:
        releases.check_version(text)
    message = str(e.value)
    assert "\n" not in message and len(message) < 300 and all(v in message for v in RELEASES)


def test_algorithms_a_release_lacks():
    assert releases.release_for("adminutils").version == "4.0.2"  # the newest with AdminUtils
    assert releases.release_for("striped").version == DEFAULT_VERSION
    assert releases.release_for("zk").version == "3.9.1"
    assert releases.release_for("adminutils", "3.9.0").version == "3.9.0"
    for algorithm, version in (("adminutils", "4.1.0"), ("adminutils-rack-aware", "4.4.0"), ("zk", "4.0.0")):
        with pytest.raises(releases.UnknownRelease, match=f"is not in Kafka {version}"):
            releases.release_for(algorithm, version)


def test_kraft_rules_per_release_come_from_the_profile():
    for v in RELEASES:
        p = profile(v)
        rules = p.kraft_rules()
        assert not rules.eligible_leader_replicas  # a cluster setting: off unless asked for
        assert (rules.last_known_leader_must_be_acceptable, rules.last_known_leader_update,
                rules.reassignment_completion) == (p.last_known_leader_must_be_acceptable,
                                                   p.last_known_leader_update, p.reassignment_completion)
        assert p.kraft_version() == dataclasses.replace(rules, eligible_leader_replicas=p.eligible_leader_replicas)
    assert KRaftVersion() == profile("4.0.2").kraft_rules() == profile("3.9.1").kraft_rules()
    with pytest.raises(ValueError, match="is not a Kafka release kcheck knows"):
        profile("5.0.0")


def test_replication_protocol_per_release():
    elr_off, elr_on, new_completion = profile("4.0.2").protocol(), profile("4.2.2").protocol(), profile().protocol()
    assert elr_off.leader_choice is model_protocol.clean_only
    assert elr_off.isr_removal is model_protocol.keep_last_replica
    assert elr_off.last_known_leader is model_protocol.no_last_known_leader
    assert elr_on.leader_choice is model_protocol.clean_or_eligible
    assert elr_on.reassignment_completion is model_reassignment.complete_when_targets_in_sync
    # issue 36: one `current`, the newest release's (the profile of every release asks the model's own table)
    assert new_completion.rules() == model_protocol.Protocol.current().rules()
    assert new_completion.reassignment_completion is model_reassignment.complete_when_adding_unless_shrinking
    for v in RELEASES:
        assert profile(v).protocol().rules() == model_protocol.Protocol.current(v).rules(), v


def test_profile_agrees_with_the_release_switches_of_other_modules():
    """Modules that take a `kafka_version` themselves must draw the same lines as the profiles."""
    from kcheck.reference import leader_balance
    from kcheck.reference.assignors import server

    for v in RELEASES:
        key, p = releases.version_key(v), profile(v)
        assert p.uniform_extra_slot_deferred == (key >= server.EXTRA_SLOT_DEFERRED_SINCE), v
        assert (p.uniform_heterogeneous_builder == "KAFKA-17710") == (key >= server.HETEROGENEOUS_BUILDER_SINCE), v
        assert p.topic_id_partition_record_hash == (key >= leader_balance.RECORD_HASH_SINCE), v
    assert profile("4.0.0").assignor("uniform").factory().assignor.kafka_version == "4.0.0"
    from kcheck.reference.assignors.registry import ASSIGNORS

    assert profile("4.1.0").assignor("uniform") is ASSIGNORS["uniform"]  # runs as the newest does


def test_striped_refusals_are_worded_per_release():
    fenced = "All brokers are currently fenced."
    assert profile("4.2.2").striped_refusal(fenced) == fenced
    assert profile("4.3.0").striped_refusal(fenced).endswith("or have all their log directories cordoned.")
    assert profile("4.4.0").striped_refusal("The target replication factor of 3 cannot be reached because only 2 "
                                            "broker(s) are registered.").endswith("log directories cordoned.")


# --- --kafka-version on the commands --------------------------------------------------------------------------

PLAN = DATA / "reassign" / "plan_safe.json"
CURRENT = DATA / "reassign" / "describe_current.txt"
BAD = ["--kafka-version", "4.9.9"]


@pytest.mark.parametrize("args", [
    ["place", "--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2", *BAD],
    ["place", "--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2", "--against-kafka", "4.9.9"],
    ["assign", DATA / "group_fresh.json", *BAD],
    ["prove", "--algorithm", "striped", *BAD],
    ["sweep", "placement", "--space", "small", *BAD],
    ["sweep", "placement", "--space", "small", "--against-kafka", "4.9.9"],
    ["reassign", "--from", "1,2,3", "--to", "4,5,6", *BAD],
    ["verify", PLAN, *BAD],
    ["verify-reassignment", CURRENT, PLAN, *BAD],
    ["explore", *BAD],
    ["exhaust", *BAD],
    ["explore", "--protocol", "current@4.9.9"],
])
def test_an_unknown_release_is_one_line_and_exit_2(capsys, args):
    code, out, err = run(capsys, *args)
    one_line_error(code, out, err, "'4.9.9' is not a Kafka release kcheck knows", "4.4.0", "3.9.0")


@pytest.mark.parametrize("args, fragments", [
    (["place", "--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2", "--kafka-version", "4.1.0"],
     ["--kafka-version", "AdminUtils is not in Kafka 4.1.0", "4.0.2"]),
    (["prove", "--algorithm", "adminutils-rack-aware", "--kafka-version", "4.4.0"], ["AdminUtils is not in"]),
    (["sweep", "placement", "--space", "small", "--kafka-version", "4.3.1"], ["AdminUtils is not in Kafka 4.3.1"]),
    (["sweep", "placement", "--space", "small", "--placer", "adminutils", "--against-kafka", "4.4.0"],
     ["--against-kafka", "AdminUtils is not in Kafka 4.4.0"]),
    (["sweep", "placement", "--space", "small", "--kafka-version", "4.0.2", "--against-kafka", "4.4.0"],
     ["give one release"]),
    (["reassign", "--from", "1,2,3", "--to", "4,5,6", "--kafka-version", "4.0.0"],
     ["the ZooKeeper controller is not in Kafka 4.0.0", "3.9.1"]),
    (["verify-reassignment", CURRENT, PLAN, "--controller", "zk", "--kafka-version", "4.4.0"], ["ZooKeeper"]),
    (["exhaust", "--protocol", "zombie-controller", "--kafka-version", "4.0.2"], ["applies to --protocol current"]),
    (["place", "--brokers", "0,1", "--partitions", "1", "--replication-factor", "1", "--placer", "striped",
      "--seed", "mock", "--against-kafka", "4.4.0"], ["--seed", "MockRandom"]),
])
def test_a_release_without_the_algorithm_is_one_line_and_exit_2(capsys, args, fragments):
    code, out, err = run(capsys, *args)
    one_line_error(code, out, err, *fragments)


def test_the_release_shows_in_outputs(capsys, tmp_path):
    code, out, _ = run(capsys, "verify", PLAN, "--json", "--kafka-version", "4.1.2", "--junit-xml", tmp_path / "v.xml")
    assert json.loads(out)["kafka_version"] == "4.1.2"
    assert 'name="kafka_version" value="4.1.2"' in (tmp_path / "v.xml").read_text()
    code, out, _ = run(capsys, "assign", DATA / "group_fresh.json", "--junit-xml", tmp_path / "a.xml")
    assert code == 0 and f'name="kafka_version" value="{DEFAULT_VERSION}"' in (tmp_path / "a.xml").read_text()
    code, out, _ = run(capsys, "reassign", "--from", "1,2", "--to", "2,3", "--controller", "kraft", "--json")
    assert code == 0 and json.loads(out)["kafka_version"] == DEFAULT_VERSION
    code, out, _ = run(capsys, "reassign", "--from", "1,2", "--to", "2,3", "--json")  # zk: the last ZK release
    assert code == 0 and json.loads(out)["kafka_version"] == "3.9.1"
    code, out, _ = run(capsys, "prove", "--algorithm", "adminutils", "--invariant", "placement.distinct-brokers",
                       "--json")
    assert code == 0 and json.loads(out)["kafka_version"] == "4.0.2"


def test_place_words_striped_refusals_as_the_release_does(capsys):
    args = ["place", "--brokers", "0,1", "--fenced", "0,1", "--placer", "striped", "--partitions", "1",
            "--replication-factor", "1"]
    code, out, err = run(capsys, *args, "--kafka-version", "4.2.2")
    one_line_error(code, out, err, "All brokers are currently fenced.")
    assert "cordoned" not in err
    code, out, err = run(capsys, *args)  # the newest: 4.4.0
    one_line_error(code, out, err, "All brokers are currently fenced, or have all their log directories cordoned.")


def test_replication_commands_follow_the_release(capsys, tmp_path):
    args = ["exhaust", "--brokers", "2", "--records", "0", "--crashes", "0", "--lossy-crashes", "0", "--fences", "0",
            "--elections", "0", "--isr-shrinks", "1", "--failovers", "0", "--reads", "0", "--json"]
    code, out, _ = run(capsys, *args, "--kafka-version", "4.0.2")
    assert json.loads(out)["protocol"] == "current@4.0.2"
    code, out, _ = run(capsys, *args)
    assert json.loads(out)["protocol"] == f"current@{DEFAULT_VERSION}"
    code, out, _ = run(capsys, *args, "--protocol", "current@3.9.1")
    assert json.loads(out)["protocol"] == "current@3.9.1"
    # a trace names its release; replay follows it, and --kafka-version overrides it
    trace = {"format": 2, "protocol": "current@4.0.2", "config": {"brokers": 2}, "steps": []}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    code, out, _ = run(capsys, "replay", path, "--json")
    assert code == 0 and json.loads(out)["protocol"] == "current@4.0.2"
    code, out, _ = run(capsys, "replay", path, "--json", "--kafka-version", "4.3.0")
    assert json.loads(out)["protocol"] == "current@4.3.0"
    path.write_text(json.dumps({**trace, "protocol": "current@7.0.0"}))
    code, out, err = run(capsys, "replay", path)
    one_line_error(code, out, err, "field 'protocol': '7.0.0' is not a Kafka release")


def test_elr_off_before_4_1_keeps_the_last_isr_member():
    """4.0's new cluster (ELR off) never empties the ISR; 4.1's moves the leaving members into the ELR."""
    from kcheck.model.replication.actions import Config, initial_state

    reg = initial_state(Config(brokers=2, min_isr=2)).registry
    both = frozenset(reg.isr)
    assert profile("4.0.2").protocol().isr_removal(reg, both, 2, frozenset()) == (reg.isr, frozenset())
    assert profile("4.1.0").protocol().isr_removal(reg, both, 2, frozenset()) == (frozenset(), both)


# --- each field against the real jars (marker kafka) ----------------------------------------------------------

_env = ENV_RELEASES
JAR_RELEASES = _env or [DEFAULT_VERSION]

# Values no harness request returns, read by a few lines of Java against the release's jars (reflection, so one
# source runs on every release): the latest production metadata.version, the eligible-leader-replicas feature's
# default level for a new cluster (absent before 4.0: a static config, off), and whether ClusterDescriber can
# describe a topic's existing replicas (what the striped placer would need to continue after them).
PROBE = """
public class KcheckReleaseProbe {
    public static void main(String[] args) throws Exception {
        Class<?> mv = Class.forName("org.apache.kafka.server.common.MetadataVersion");
        Object latest = mv.getMethod("latestProduction").invoke(null);
        System.out.println("metadata_version " + latest);
        String elr = "none";
        try {
            Class<?> f = Class.forName("org.apache.kafka.server.common.Feature");
            Object feature = f.getField("ELIGIBLE_LEADER_REPLICAS_VERSION").get(null);
            elr = String.valueOf(f.getMethod("defaultLevel", mv).invoke(feature, latest));
        } catch (ClassNotFoundException | NoSuchFieldException e) {
            elr = "none";
        }
        System.out.println("elr_default_level " + elr);
        boolean existing = false;
        for (java.lang.reflect.Method m : Class.forName("org.apache.kafka.metadata.placement.ClusterDescriber")
                .getMethods()) {
            existing |= m.getName().equals("replicasForTopicName");
        }
        System.out.println("describes_existing " + existing);
    }
}
"""


def _tools():
    require_jdk()


def probe(version: str, work: Path) -> dict[str, str]:
    from kcheck.reference.kafka_jars import resolve

    release = resolve(version)
    src = work / version / "KcheckReleaseProbe.java"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(PROBE)
    subprocess.run(["javac", "-nowarn", "-cp", release.classpath, "-d", str(src.parent), str(src)], check=True,
                   capture_output=True, timeout=120)
    proc = subprocess.run(["java", "-cp", f"{src.parent}{os.pathsep}{release.classpath}", "KcheckReleaseProbe"],
                          check=True, capture_output=True, text=True, timeout=120)
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)


def _reassignment_cases():
    """Every in-flight reassignment of up to 4 brokers (replicas in the plan's order, adding/removing as
    PartitionReassignmentReplicas makes them) with every ISR the leader could report: what completion decides."""
    out = []
    brokers = (1, 2, 3, 4)
    for n_cur, n_tgt in ((1, 2), (2, 1), (2, 2), (2, 3), (3, 2), (1, 3), (3, 1)):
        for cur in itertools.permutations(brokers, n_cur):
            for tgt in itertools.permutations(brokers, n_tgt):
                removing = tuple(sorted(set(cur) - set(tgt)))
                adding = tuple(sorted(set(tgt) - set(cur)))
                if not adding and not removing:
                    continue
                replicas = (*tgt, *removing)
                leader = cur[0]
                for k in range(1, len(replicas) + 1):
                    for isr in itertools.combinations(replicas, k):
                        if leader in isr:
                            out.append((replicas, adding, removing, leader, isr))
    return out[::3]  # a third of them: still every shape, a faster round trip


def check_release_against_jars(version: str, work: Path) -> None:
    from kcheck.model import Broker
    from kcheck.reference import kafka_partitioner
    from kcheck.reference.kafka_bridge import KafkaBridge, StripedRequest
    from kcheck.reference.kafka_controller import PartitionChange, reference_change, run_changes
    from kcheck.reference.partitioner import PartitionLeader
    from kcheck.reference.striped import PlacementSpec

    p = profile(version)
    facts = probe(version, work)
    assert facts["metadata_version"] == p.metadata_version
    assert (facts["elr_default_level"] == "1") == p.eligible_leader_replicas
    assert (facts["describes_existing"] == "true") == p.striped_continues_from_existing
    with KafkaBridge(version) as kafka:
        assert kafka.kafka_version == version
        assert kafka.has_admin_utils == p.admin_utils
        # ZooKeeper's controller: in the release's core jar (resolved for 3.x only) or nowhere
        core = [j for j in kafka.release.jars if j.name.startswith("kafka_2.13-")]
        has_zk = any("kafka/controller/KafkaController.class" in zipfile.ZipFile(j).namelist() for j in core)
        assert has_zk == p.zk_controller
        # KIP-1066's wording, and the reference's refusal as this release words it
        fenced = tuple(Broker(i, "r", True) for i in range(3))
        (answer,) = kafka.map_striped([StripedRequest(fenced, (PlacementSpec("t", 0, 1, 1),), 1)])
        assert answer.message.endswith("cordoned.") == p.striped_cordoned_wording
        assert p.striped_refusal("All brokers are currently fenced.") == answer.message
        # PartitionChangeBuilder (the PC request): the last known leader and reassignment completion
        fenced_last = PartitionRegistration(replicas=(1, 2, 3), isr=(), leader=-1, leader_epoch=3, partition_epoch=4,
                                            last_known_elr=(1,))
        leaderless = PartitionRegistration(replicas=(1, 2), isr=(1, 2), leader=1, leader_epoch=3, partition_epoch=4)
        growing = PartitionRegistration(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, leader_epoch=3,
                                        partition_epoch=4, adding_replicas=(3,))
        a, b, c = run_changes(kafka, [
            PartitionChange(fenced_last, frozenset(), Election.ONLINE, min_isr=2, elr=True),
            PartitionChange(leaderless, frozenset(), Election.ONLINE, min_isr=1, elr=True, target_isr=(2,)),
            PartitionChange(growing, frozenset({1, 2, 3}), Election.ONLINE, target_isr=(1, 3))])
        assert (a.record is None) == p.last_known_leader_must_be_acceptable  # KAFKA-19522
        assert (b.record.last_known_elr == (1,)) == (p.last_known_leader_update == "leaderless")
        assert (c.record.adding_replicas == ()) == (p.reassignment_completion == "adding-unless-shrinking")
        # BuiltInPartitioner with partitioner.rack.aware and client.rack 'b' (KIP-1123): partition 1 is led in rack b
        (sticky,) = kafka_partitioner.kafka_sticky_outcomes(kafka, [kafka_partitioner.StickyCase(
            10, True, "b", (0,), (kafka_partitioner.Topic((PartitionLeader(0, 1, "a"), PartitionLeader(1, 2, "b"))),
                                  kafka_partitioner.Append(1)))])
        assert (sticky[0][1] == 1) == p.partitioner_rack_aware
        # and the reference, with this release's rules, completes every small reassignment as Kafka does
        changes = [PartitionChange(PartitionRegistration(replicas=r, isr=r, leader=leader, leader_epoch=1,
                                                         partition_epoch=1, adding_replicas=add,
                                                         removing_replicas=rem),
                                   frozenset(r), Election.ONLINE, target_isr=isr)
                   for r, add, rem, leader, isr in _reassignment_cases()]
        assert len(changes) > 500
        rules = p.kraft_rules()
        for change, real in zip(changes, run_changes(kafka, changes), strict=True):
            b_ = PartitionChangeBuilder(change.partition, change.acceptable, rules, change.min_isr)
            mine = b_.set_target_isr(change.target_isr).build()
            assert mine == real.record, (change, mine, real.record)
            assert reference_change(change, version).record == real.record
    # the KIP-848 uniform assignor (extra slots since 4.0.1, the heterogeneous builder since 4.0.0): the release's
    # reference answers every call of a small group sweep as Kafka does (this space tells 4.0.0 from 4.0.1)
    from kcheck.spark_check import against_kafka as ak
    from kcheck.spark_check.groups import GroupSpace, parse_group_bounds

    groups = ak.against_kafka(GroupSpace(parse_group_bounds("small,max_topics=1"), ["uniform"]), version)
    result = groups.evaluate(0, len(groups))
    assert not result.violated and sum(k * c for k, c in result.metrics["uniform/assignor-calls"].items()) > 50


@pytest.mark.kafka
@pytest.mark.parametrize("version", JAR_RELEASES)
def test_profile_fields_match_the_jars(version, tmp_path):
    _tools()
    check_release_against_jars(version, tmp_path)


@pytest.mark.kafka
@pytest.mark.slow
def test_profile_fields_match_the_jars_of_every_release(tmp_path):
    """Every known release, so each field is checked on both sides of every change (resolves missing jars)."""
    _tools()
    for version in RELEASES:
        check_release_against_jars(version, tmp_path)
