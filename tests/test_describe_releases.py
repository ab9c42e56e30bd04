"""Every release's `kafka-topics --describe`, as the real tools printed it, read and judged as Kafka judges it.

tests/data/describe/ holds what each release's kafka-topics printed (tests/data/describe/make.py ran them;
nothing there is written by hand): `<release>/` on a KRaft cluster (`--bootstrap-server`, 2.2 and later) and
`<release>/` (before 2.2) or `<release>-zk/` on a ZooKeeper-mode cluster (`--zookeeper`, 0.10.2 to 2.8), each the
full `--describe` and each health filter the release has, all on one cluster state per cluster. Per release: the
describe parses, its layout names the release, and kcheck's `health.*` findings on the full describe list exactly
the partitions each filter listed (`--zookeeper` has only the under-replicated and unavailable ones). Where
TopicCommand used what a describe does not show, what it lists instead is computed from the state the cluster was
in (<kind>-state.json) by TopicCommand's own rule, never pasted:

- 2.3's `isUnderMinIsr` does not count a partition without a leader whose ISR is large enough (2.4 does; the
  state has none such: a KRaft leaderless partition's ISR is empty here).
- 2.5's `getReplicationFactor` leaves out the adding replicas of a reassignment still removing a replica, but
  2.5's describe prints no Adding/Removing Replicas (2.6 does): kcheck counts every replica there.
- `--unavailable-partitions` also lists a leader on a broker that is not live; the states have none (a stopped
  broker leads nothing once the controller knows), and `test_a_leader_on_a_dead_broker_needs_the_live_brokers`
  shows what the live brokers change.
"""

from __future__ import annotations

import contextlib
import io
import json
from functools import cache
from pathlib import Path

import pytest

from cli_support import run
from kcheck.cli import main
from kcheck.inputs.formats import read_describe
from kcheck.invariants.partition_health import HEALTH_FILTERS, check_partition_health

DATA = Path(__file__).parent / "data" / "describe"
STATES = {kind: json.loads((DATA / f"{kind}-state.json").read_text()) for kind in ("kraft", "zk")
          if (DATA / f"{kind}-state.json").exists()}
STATE = STATES["kraft"]
KRAFT = STATE["releases"]
FILTER_OF = {option.removeprefix("--"): inv for inv, option in HEALTH_FILTERS.items()}


def key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def folder(kind: str, release: str) -> str:
    return f"{release}-zk" if kind == "zk" and key(release) >= (2, 2) else release


# (cluster kind, release, folder): every describe stored
RUNS = [(kind, r, folder(kind, r)) for kind, st in STATES.items() for r in st["releases"]]


def listed(path: Path) -> set[str]:
    """The partitions a filter's output lists ('partition t-0'), read by kcheck's own parser."""
    text = path.read_text()
    return {f"partition {p.tp}" for p in read_describe(text, str(path)).assignment} if text.strip() else set()


@cache
def verdicts(kind: str, where: str) -> dict:
    """verify --json on a stored full describe, with the cluster's racks (once per describe)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["verify", str(DATA / where / "describe.txt"), "--json",
                     "--brokers-file", str(DATA / f"{kind}-brokers.txt")])
    assert err.getvalue() == "" and code == 1, err.getvalue()  # the state has unavailable partitions: hard
    return json.loads(out.getvalue())


def found(rep: dict, invariant: str) -> set[str]:
    return {v["where"] for v in rep["violations"] if v["invariant"] == invariant}


def topic_commands_own(kind: str, release: str, option: str, ours: set[str], rep: dict) -> set[str]:
    """What TopicCommand lists where it departs from the definition kcheck keeps (see the module doc)."""
    parts = STATES[kind]["partitions"]
    if kind == "kraft" and release.startswith("2.3.") and option == "under-min-isr-partitions":
        # 2.3's isUnderMinIsr has no 'no leader' clause (2.4 added it): only ISRs below the topic's value
        return {v["where"] for v in rep["violations"] if v["invariant"] == "health.under-min-isr"
                and len(v["detail"]["isr"]) < v["detail"]["min_insync_replicas"]}
    if kind == "kraft" and release.startswith("2.5.") and option == "under-replicated-partitions":
        # in progress for 2.5: a removing replica is still a replica; then RF = replicas - adding
        return ours - {f"partition {tp}" for tp, p in parts.items()
                       if set(p["removing"]) & set(p["replicas"])
                       and len(p["isr"]) >= len(p["replicas"]) - len(p["adding"])}
    return ours


CASES = [(kind, r, where, f.stem) for kind, r, where in RUNS for f in sorted((DATA / where).glob("*-partitions.txt"))]


@pytest.mark.parametrize("kind, release, where", RUNS, ids=[w for _, _, w in RUNS])
def test_the_describe_reads_and_names_its_release(kind, release, where):
    state = STATES[kind]
    d = read_describe((DATA / where / "describe.txt").read_text(), "d")
    assert len(d.assignment) == len(state["partitions"])
    lo, hi = d.releases
    assert key(lo) <= key(release)[:len(key(lo))] and key(release)[:len(key(hi))] <= key(hi), (release, d.layout)
    assert not d.partial and not d.filter_output and d.headers == 6
    # the state as read by the cluster's own client: replicas, leader, ISR
    for p in d.assignment:
        want = state["partitions"][str(p.tp)]
        assert (list(p.replicas), list(p.isr or ()), p.leader) == (want["replicas"], want["isr"], want["leader"])
        if "adding-removing" in d.features:
            assert (list(p.adding), list(p.removing)) == (want["adding"], want["removing"])
    era, _ = d.era
    # no TopicId (tools before 2.8) or Leader: -1: the ZooKeeper era; Elr values (3.8+ on KRaft): KRaft; a 2.8
    # --zookeeper describe prints the ZooKeeper cluster's TopicId, which tells nothing
    assert era == ("zk" if key(release) < (2, 8) else "kraft" if key(release) >= (3, 8) else None)


@pytest.mark.parametrize("kind, release, where, option", CASES, ids=[f"{c[2]}-{c[3]}" for c in CASES])
def test_kcheck_lists_what_the_filter_lists(kind, release, where, option):
    filtered = listed(DATA / where / f"{option}.txt")
    rep = verdicts(kind, where)
    ours = found(rep, FILTER_OF[option])
    assert filtered == topic_commands_own(kind, release, option, ours, rep)


def test_the_2_5_departure_shows_in_the_state():
    """2.5's departure is in the stored state (else the test of it would prove nothing): moving-0 is listed by
    kcheck, not by 2.5's filter."""
    rep = verdicts("kraft", "2.5.1")
    ours = found(rep, "health.under-replicated")
    assert topic_commands_own("kraft", "2.5.1", "under-replicated-partitions", ours, rep) == ours - {
        "partition moving-0"}
    assert "partition moving-0" in ours


@pytest.mark.parametrize("kind, release, where", RUNS, ids=[w for _, _, w in RUNS])
def test_every_release_has_its_filters(kind, release, where):
    have = {f.stem for f in (DATA / where).glob("*-partitions.txt")}
    # KIP-351 (2.3) added the two min-ISR filters, refused with --zookeeper ('Not supported with the --zookeeper
    # option')
    assert have == set(FILTER_OF) if key(release) >= (2, 3) and kind == "kraft" else {
        "under-replicated-partitions", "unavailable-partitions"}


@pytest.mark.parametrize("kind, release, where", RUNS, ids=[w for _, _, w in RUNS])
def test_a_filters_output_is_said_to_be_one(kind, release, where, capsys):
    for option in ("under-replicated-partitions", "unavailable-partitions"):
        path = DATA / where / f"{option}.txt"
        code, out, err = run(capsys, "verify", str(path), "--json", "--brokers-file",
                             str(DATA / f"{kind}-brokers.txt"))
        rep = json.loads(out)
        described = rep["describe"]
        assert described["filter_output"] and f"--{option}" in described["filters_matching"]
        assert "not a partial paste" in described["partial"]
        # balance over a filter's selection says nothing of the cluster: skipped, with the reason
        assert rep["not_applicable"]["placement.replica-spread"].startswith("covers only what was pasted")


def test_a_leader_on_a_dead_broker_needs_the_live_brokers():
    """TopicCommand's hasUnavailablePartitions: a leader that DescribeCluster does not list is unavailable too.
    Broker 4 was stopped; a describe taken before the controller moved its leadership still names it."""
    text = (DATA / KRAFT[-1] / "describe.txt").read_text().replace(
        "Partition: 1\tLeader: 1\tReplicas: 4,1,2", "Partition: 1\tLeader: 4\tReplicas: 4,1,2")
    d = read_describe(text, "d")
    blind = check_partition_health(d.assignment, d.min_isr, None, leader_text=d.leader_text)
    seeing = check_partition_health(d.assignment, d.min_isr, None, leader_text=d.leader_text,
                                    live_brokers=frozenset(STATE["live_brokers"]))
    unavailable = lambda rep: {v.where for v in rep.violations if v.invariant == "health.unavailable"}  # noqa: E731
    assert unavailable(seeing) - unavailable(blind) == {"partition orders-1"}


def test_survivability_on_the_generated_state():
    """Broker failures survived = |ISR| - min.insync.replicas (0 when not writable); racks a,b,c,a with broker 4
    (rack a) stopped. Each figure follows from the state file."""
    rep = verdicts("kraft", KRAFT[-1])
    parts = {p["partition"]: p for p in rep["survivability"]["partitions"]}
    assert (parts["healthy-0"]["broker_failures"], parts["healthy-0"]["rack_failures"]) == (2, 2)  # ISR 1,2,3
    assert (parts["orders-1"]["broker_failures"], parts["orders-1"]["rack_failures"]) == (0, 0)  # ISR 1,2 min 2
    assert parts["pairs-0"]["writable"] is False and parts["pairs-0"]["broker_failures"] == 0  # ISR 1 < 2
    assert parts["single-0"]["readable"] is False  # no leader
    # strict's min ISR 3 = RF: zero failures even when whole
    assert parts["strict-1"]["broker_failures"] == 0
    zone = {v["where"]: v for v in rep["violations"] if v["invariant"] == "health.zone-loss"}
    # healthy spans a,b,c with min ISR 1: any rack may go; orders-1 (ISR 1 in a, 2 in b) loses writes with a
    assert "topic healthy" not in zone and zone["topic orders"]["detail"]["rack"] in ("a", "b")


# --- pastes as engineers make them ----------------------------------------------------------------------------


def verify_json(capsys, path: Path | str, *args: str) -> tuple[int, dict]:
    code, out, err = run(capsys, "verify", str(path), "--json", *args)
    assert err == "", err
    return code, json.loads(out)


def test_a_partial_paste_is_said_to_be_one_and_balance_is_skipped(capsys, tmp_path):
    """A header says PartitionCount: 3 and one of its partitions follows: per-partition checks run, balance over
    the rest of the cluster is not judged."""
    lines = (DATA / KRAFT[-1] / "describe.txt").read_text().splitlines(keepends=True)
    keep = [x for x in lines if "Topic: healthy" in x or "Topic: pairs" in x]
    keep = [x for x in keep if "Partition: 1" not in x and "Partition: 2" not in x]  # healthy 1 of 3, pairs 1 of 2
    path = tmp_path / "cut.txt"
    path.write_text("".join(keep))
    code, rep = verify_json(capsys, path, "--brokers-file", str(DATA / "kraft-brokers.txt"))
    partial = rep["describe"]["partial"]
    assert partial.startswith("a partial paste:") and "healthy lists 1 of its 3 partitions" in partial
    assert "pairs lists 1 of its 2 partitions" in partial and not rep["describe"]["filter_output"]
    for balance in ("placement.replica-spread", "placement.leader-spread", "placement.topic-replica-spread"):
        assert rep["not_applicable"][balance].startswith("covers only what was pasted: a partial paste")
    assert "placement.rack-diversity" in rep["checked"]  # per partition: still judged
    assert found(rep, "health.under-min-isr") == {"partition pairs-0"}  # ISR 1 of min 2


def test_the_junit_report_names_the_layout_and_the_partial_paste(capsys, tmp_path):
    import xml.etree.ElementTree as ET

    lines = (DATA / KRAFT[-1] / "describe.txt").read_text().splitlines(keepends=True)
    path = tmp_path / "cut.txt"
    path.write_text("".join(lines[:-1]))  # the last partition line left out
    xml = tmp_path / "junit.xml"
    run(capsys, "verify", str(path), "--junit-xml", str(xml))
    props = {p.get("name"): p.get("value") for p in ET.parse(xml).iter("property")}
    assert props["layout"] == read_describe("".join(lines), "d").layout
    assert props["partial"].startswith("a partial paste: ")
    assert (props["filter_output"], props["controller"]) == ("false", "kraft")


def test_an_elided_paste_is_partial(capsys, tmp_path):
    lines = (DATA / KRAFT[-1] / "describe.txt").read_text().splitlines(keepends=True)
    at = next(i for i, x in enumerate(lines) if "Topic: healthy\tPartition: 2" in x)
    path = tmp_path / "doc.txt"
    path.write_text("".join(lines[:at] + ["...\n"] + lines[at:]))
    _, rep = verify_json(capsys, path)
    assert rep["describe"]["skipped_lines"] == [{"line": at + 1, "what": "'...' (lines left out)"}]
    assert rep["describe"]["partial"] == "a partial paste: lines were left out ('...')"


def test_the_era_is_read_from_the_layout_and_controller_overrides(capsys, tmp_path):
    pre_2_4 = "Topic:foo\tPartitionCount:1\tReplicationFactor:2\tConfigs:\n\tTopic: foo\tPartition: 0\tLeader: -1\t" \
              "Replicas: 2,1\tIsr: 2\n"
    path = tmp_path / "old.txt"
    path.write_text(pre_2_4)
    _, rep = verify_json(capsys, path)
    assert rep["controller"] == "zk" and "Leader: -1" in rep["describe"]["controller_from"]
    assert rep["describe"]["layout"] == "kafka-topics 0.10.2–2.3"
    _, rep = verify_json(capsys, path, "--controller", "kraft")
    assert (rep["controller"], rep["describe"]["controller_from"]) == ("kraft", "--controller")
    # Leader: -1 is quoted as the input wrote it; an ISR is a list with its size
    (v,) = [v for v in rep["violations"] if v["invariant"] == "health.unavailable"]
    assert "no leader (Leader: -1)" in v["message"]
    (v,) = [v for v in rep["violations"] if v["invariant"] == "health.at-min-isr"]
    assert "ISR [2] (1 member) is at min.insync.replicas=1" in v["message"]


def test_partition_lines_that_lost_their_topic_column_take_the_header_s(capsys, tmp_path):
    # A real release's describe with 'Topic: NAME' cut from every partition line, as a pasted blog post can have it:
    # each line is read as the topic of the header above it, and the report says so.
    text = (DATA / KRAFT[-1] / "describe.txt").read_text()
    cut = "".join(line.replace(line.split("Partition:")[0], "\t") if "\tPartition:" in line else line
                  for line in text.splitlines(keepends=True))
    assert "Topic: healthy\tPartition" not in cut
    path = tmp_path / "cut.txt"
    path.write_text(cut)
    _, rep = verify_json(capsys, path)
    whole = tmp_path / "whole.txt"
    whole.write_text(text)
    _, before = verify_json(capsys, whole)
    assert [v["message"] for v in rep["violations"]] == [v["message"] for v in before["violations"]]
    assert len(rep["describe"]["topic_from_header_lines"]) == len(read_describe(text, "x").assignment.partitions)
    assert any("without Topic:" in n for n in rep["describe"]["notes"])


def test_an_unreadable_line_names_the_layout_expected(capsys, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("Topic:foo\tPartitionCount:1\tReplicationFactor:1\tConfigs:\n"
                    "\tfoo 0 leader=1 replicas=1\n")
    code, out, err = run(capsys, "verify", str(path))
    assert code == 2 and out == ""
    assert ":2: not a kafka-topics --describe line" in err and "(kafka-topics 0.10.2–2.3)" in err
    assert "'Topic: NAME  Partition: N  Leader: ID  Replicas: IDS  Isr: IDS'" in err


# --- Confluent Server -----------------------------------------------------------------------------------------
# Not tool-generated: Confluent Server is not on Maven Central. tests/data/describe/confluent/ is written by hand in
# the layout Confluent's documentation shows (its multi-region tutorial: 'Offline:' then 'Observers:', and
# 'LiveObservers:' in Confluent Platform 5.4; the '==> Describe topic' banners and the prompt of its scripts), with
# topics of our own. What is expected follows from that layout's meaning: observers copy asynchronously, outside
# the ISR, unless promoted into it.

CONFLUENT = DATA / "confluent"


def test_confluent_observers_are_left_out_and_said_so(capsys):
    code, rep = verify_json(capsys, CONFLUENT / "observers.txt", "--brokers-file", str(CONFLUENT / "brokers.txt"))
    d = rep["describe"]
    assert d["layout"].startswith("Confluent Server's kafka-topics")
    assert d["observers_left_out"] == {"clicks-0": [3, 4], "clicks-1": [4, 3]}
    assert [s["what"] for s in d["skipped_lines"]] == ["shell prompt"] + ["banner"] * 4
    assert sum("observers are not modelled" in n for n in d["notes"]) == 1
    # clicks-0: both sync replicas in the ISR, its observers outside it by design: whole
    assert found(rep, "health.under-replicated") == {"partition clicks-1", "partition audit-0",
                                                     "partition failover-0", "partition ledger-0"}
    assert found(rep, "health.under-min-isr") == {"partition clicks-1", "partition ledger-0"}  # min ISR 2; no leader
    assert found(rep, "health.unavailable") == {"partition ledger-0"}
    # the header's ReplicationFactor 4 counts clicks' observers: not held against its two sync replicas
    assert found(rep, "placement.replication-factor") == set()


def test_confluent_5_4_live_observers(capsys):
    code, rep = verify_json(capsys, CONFLUENT / "live-observers.txt")
    assert rep["describe"]["observers_left_out"] == {"clicks-0": [4, 3]}
    assert found(rep, "health.under-replicated") == set()
