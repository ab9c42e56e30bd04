"""`kcheck sweep placement|assignors --against-kafka VERSION`: real Kafka beside the reference in Spark.

End to end on small spaces (every configuration through Kafka's own classes, one JVM per Spark worker), and a
planted difference: a reference placer (or assignor) made to differ on some configurations must be found at
the smallest one, stored and reported with both answers, and its replay command must reproduce it.
Markers `kafka` and `spark`; skipped only when java, javac or mvn is missing.
"""

from __future__ import annotations

import io
import shlex
import shutil
import sys

import pytest

from kcheck.cli import main
from kcheck.reference.releases import DEFAULT_VERSION
from kcheck.spark_check import against_kafka as ak
from kcheck.spark_check.groups import GroupSpace, parse_group_bounds
from kcheck.spark_check.placement_space import PlacementSpace, parse_placement_bounds
from kcheck.spark_check.report import write_markdown
from kcheck.spark_check.store import ResultStore

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

VERSION = DEFAULT_VERSION
PLACEMENT = "small,brokers=1..4,partitions=1..4,seeds=2"
GROUPS = "small,max_topics=1"  # 84 groups with racks or none, every default event


@pytest.fixture(scope="module")
def spark():
    for tool in ("java", "javac", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"`{tool}` not on PATH: the Kafka bridge needs a JDK 17+ and Maven")
    from kcheck.spark_check.job import spark_session

    session = spark_session("local[2]", progress=False)
    yield session
    session.stop()


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# --- end to end through the CLI --------------------------------------------------------------------------------


def test_placement_sweep_against_kafka(spark, capsys, tmp_path):
    out_dir = tmp_path / "placement"
    code, out, err = run(capsys, "sweep", "placement", "--space", PLACEMENT, "--against-kafka", VERSION,
                         "--master", "local[2]", "--out", out_dir, "--junit-xml", tmp_path / "j.xml")
    size = len(PlacementSpace(parse_placement_bounds(PLACEMENT), ["striped"]))  # 4.4.0 has no AdminUtils
    assert code == 0, out + err
    report = (out_dir / "report.md").read_text()
    assert f"**kafka release**: {VERSION}" in report
    assert f"| striped | kafka.same-as-reference | hard | yes | {size:,} | 0 |" in report
    assert "Verified: " in out and f"cover all {size:,} configurations" in out
    assert f'name="kafka_version" value="{VERSION}' in (tmp_path / "j.xml").read_text()


def test_assignor_sweep_against_kafka(spark, capsys, tmp_path):
    code, out, err = run(capsys, "sweep", "assignors", "--space", GROUPS, "--against-kafka", VERSION,
                         "--master", "local[2]", "--out", tmp_path / "groups")
    space = GroupSpace(parse_group_bounds(GROUPS))  # every built-in assignor
    assert code == 0, out + err
    report = (tmp_path / "groups" / "report.md").read_text()
    for assignor in space.assignors:
        assert f"| {assignor} | kafka.same-as-reference | hard | yes | {space.group_count:,} | 0 |" in report
    assert "assignor-calls" in report  # calls compared per configuration


# --- a planted difference ----------------------------------------------------------------------------------------


def _planted_with(real):
    """The reference `real`, except that a 3-partition topic with RF 2 gets its last partition's replicas reversed."""
    def place(inp, prof):
        out = real(inp, prof)
        if isinstance(out, dict) and inp.partitions == 3 and inp.rf == 2:
            out = dict(out)
            out[2] = out[2][::-1]
        return out

    return place


PLANTED = _planted_with(ak.reference_place)


class PlantedPlacement(ak.PlacementAgainstKafka):
    def reference(self, inp, prof):
        return PLANTED(inp, prof)


def test_a_planted_placement_difference_is_found_reported_and_replayed(spark, capsys, tmp_path, monkeypatch):
    from pyspark import cloudpickle

    from kcheck.spark_check.job import sweep

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the Spark workers get the planted class
    space = PlantedPlacement(PlacementSpace(parse_placement_bounds(PLACEMENT), ["striped"]), VERSION)
    expected = [i for i in range(len(space)) if space[i].partitions == 3 and space[i].rf == 2]
    assert expected
    store = ResultStore(str(tmp_path / "planted"))
    outcome = sweep(space, store, spark=spark)
    result = outcome.stored.result
    key = f"striped/{ak.SAME}"
    assert result.checked[key] == len(space) and result.violated[key] == len(expected)
    first = result.first[key]
    assert first.config_id == expected[0] and first.where == "partition 2"
    ours, theirs = first.detail["kcheck"], first.detail[f"kafka {VERSION}"]
    assert ours["2"] == theirs["2"][::-1] and ours["0"] == theirs["0"]
    replay = first.config["replay"]
    assert replay.startswith("kcheck place --placer striped ") and replay.endswith(f"--against-kafka {VERSION}")
    write_markdown(store.root, space, result, {"kafka release": VERSION})
    report = (tmp_path / "planted" / "report.md").read_text()
    assert replay in report and f"#{expected[0]}" in report

    args = shlex.split(replay)[1:]
    code, out, _ = run(capsys, *args)
    assert code == 0 and "SAME" in out  # the real reference agrees with Kafka
    monkeypatch.setattr(ak, "reference_place", PLANTED)  # `kcheck place --against-kafka` now differs too
    code, out, _ = run(capsys, *args)
    assert code == 1 and "DIFFERENT: partition 2:" in out


def test_a_planted_assignor_difference_is_found_and_replayed(spark, capsys, monkeypatch):
    """In one process (no Spark): RangeAssignor's reference made to swap two members' partitions when two
    members share one two-partition topic; the sweep's smallest difference replays through `kcheck assign -`."""
    from kcheck.reference.assignors.client import RangeAssignor

    real = RangeAssignor.assign_partitions

    def planted(self, ppt, subscriptions):
        out = real(self, ppt, subscriptions)
        if len(out) == 2 and sum(len(v) for v in out.values()) == 2:
            a, b = list(out)
            out = {a: out[b], b: out[a]}
        return out

    space = ak.GroupsAgainstKafka(GroupSpace(parse_group_bounds(GROUPS), ["range"]), VERSION)
    clean = space.evaluate(0, len(space))
    assert clean.checked[f"range/{ak.SAME}"] == len(space) and not clean.violated
    monkeypatch.setattr(RangeAssignor, "assign_partitions", planted)
    found = space.evaluate(0, len(space))
    first = found.first[f"range/{ak.SAME}"]
    assert found.violated[f"range/{ak.SAME}"] > 0 and first.detail["replay_exact"]
    assert first.where.startswith("member ")
    replay = first.config["replay"]
    head, _, command = replay.partition(" | ")
    text = shlex.split(head)[1]  # echo '<group file>'
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    code, out, _ = run(capsys, *shlex.split(command)[1:])
    assert code == 1 and "DIFFERENT: member" in out
    monkeypatch.setattr(RangeAssignor, "assign_partitions", real)
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    code, out, _ = run(capsys, *shlex.split(command)[1:])
    assert code == 0 and "SAME" in out
