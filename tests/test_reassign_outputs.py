"""Real `kafka-reassign-partitions` outputs of every release from 0.10.2 to 4.4 kept in tests/data/reassign/<release>/
(made by tests/data/reassign/make.py: each release's own tool against a real cluster, ZooKeeper-mode up to 2.5, KRaft
from 2.6, `kafka-topics --describe` of the cluster at each step): every layout is read, the block used is named, and
what kcheck reads is the cluster as Kafka's own describe showed it.

And plans judged by what they change (issue 32), each case from Kafka's own `--generate` and `--execute` output:
`events` (RF 1, four partitions on broker 1, one on 2 and 3, broker 4 empty) sent onto `--broker-list 4`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_support import one_error_line, run
from kcheck.inputs.formats import BlockRefused, InputError, parse_describe, parse_pasted, read_text

DATA = Path(__file__).parent / "data" / "reassign"
RELEASES = sorted((p.name for p in DATA.iterdir() if p.is_dir() and p.name[0].isdigit()),
                  key=lambda v: tuple(map(int, v.split("."))))
BROKERS = str(DATA / "brokers4.txt")
NEWEST = RELEASES[-1]


def text(release: str, *names: str) -> str:
    """The files joined as a user pastes them (a --verify run after `cat plan.json`)."""
    return "".join(read_text(str(DATA / release / name)) for name in names)


def replicas(assignment, topic=None):
    return {str(p.tp): (p.replicas, p.adding, p.removing) for p in assignment if topic in (None, p.topic)}


def described(release: str, name: str, topic: str | None = None):
    """The replicas, adding and removing replicas Kafka's kafka-topics --describe showed."""
    return replicas(parse_describe(text(release, name), name), topic)


ZK_ERA = [v for v in RELEASES if tuple(map(int, v.split("."))) < (2, 6)]  # --zookeeper: no --list, no --cancel
KRAFT_ERA = [v for v in RELEASES if v not in ZK_ERA]


def test_every_release_is_kept():
    assert len(ZK_ERA) == 10 and len(KRAFT_ERA) == 18 and (RELEASES[0], NEWEST) == ("0.10.2.2", "4.4.0")


def first_line(paste: str, fragment: str) -> int:
    return next(n for n, line in enumerate(paste.split("\n"), 1) if fragment in line)


@pytest.mark.parametrize("release", RELEASES)
def test_generate_gives_the_describes_state_and_kafkas_proposal(release):
    for topic in ("events", "orders"):
        paste = text(release, f"generate_{topic}.txt")
        current, block = parse_pasted(paste, "g", "current")
        assert block == "--generate output: Current partition replica assignment"
        assert replicas(current) == {tp: (r, (), ()) for tp, (r, _, _) in
                                     described(release, "describe_before.txt", topic).items()}
        proposed, block = parse_pasted(paste, "g", None)  # verify's default: the plan
        assert block == "--generate output: Proposed partition reassignment configuration"
        assert set(replicas(proposed)) == set(replicas(current))
    events = parse_pasted(text(release, "generate_events.txt"), "g", "proposed")[0]
    assert {p.replicas for p in events} == {(4,)}  # --broker-list 4


@pytest.mark.parametrize("release", RELEASES)
def test_execute_is_the_state_before_the_plan_by_default(release):
    before = described(release, "describe_before.txt")
    for name, plan in (("execute.txt", "plan_orders.json"), ("execute_events.txt", "plan_events.json")):
        current, block = parse_pasted(text(release, name), name)
        assert block == "--execute output: Current partition replica assignment (before the plan)"
        planned = parse_pasted(text(release, plan), plan)[0]
        # the plan's partitions (up to 2.5 every partition of the plan's topics), as the describe showed them
        assert {str(p.tp) for p in planned} <= set(replicas(current))
        assert replicas(current) == {tp: (before[tp][0], (), ()) for tp in replicas(current)}
        with pytest.raises(BlockRefused) as e:
            parse_pasted(text(release, name), name, "proposed")
        assert e.value.other == "current" and "holds only the replicas before the plan" in e.value.message


@pytest.mark.parametrize("release", RELEASES)
def test_verify_reads_the_json_it_verified_and_the_state_it_states(release):
    plan = parse_pasted(text(release, "plan_orders.json"), "p")[0]
    # in flight: no replica list for the partitions, so the state is refused, naming the other block
    paste = text(release, "plan_orders.json", "verify_progress.txt")
    assert replicas(parse_pasted(paste, "v", "proposed")[0]) == replicas(plan)
    with pytest.raises(BlockRefused) as e:
        parse_pasted(paste, "v")
    line = first_line(paste, "in progress")
    assert e.value.other == "proposed" and e.value.line == line
    assert f"v:{line}: partition orders-" in str(e.value) and "reassignment still in progress" in str(e.value)
    # done: on the target, or (2.6+, cancelled) "no active reassignment ... but replica set is", or (up to 2.0)
    # "ERROR: Assigned replicas (..) don't match": the replicas Kafka's describe shows afterwards
    after = described(release, "describe_after.txt")
    for plan_file, done in (("plan_orders.json", "verify_cancelled.txt"), ("plan_orders.json", "verify_orders.txt"),
                            ("plan_mismatch.json", "verify_mismatch.txt")):
        if not (DATA / release / done).exists():
            continue
        paste = text(release, plan_file, done)
        if "failed" in paste and "ERROR" not in paste:  # 2.1 to 2.5: failed, no replicas named
            with pytest.raises(BlockRefused, match="its reassignment failed; that output has no replica list"):
                parse_pasted(paste, "v")
            continue
        state, block = parse_pasted(paste, "v")
        assert block == "--verify output: the partitions as it states them"
        verified = parse_pasted(text(release, plan_file), "p")[0]
        assert replicas(state) == {tp: after[tp] for tp in replicas(verified)}, done
    # completed: on the target, as the describe shows it
    state, _ = parse_pasted(text(release, "plan_events.json", "verify_complete.txt"), "v")
    assert replicas(state) == described(release, "describe_after.txt", "events")


@pytest.mark.parametrize("release", KRAFT_ERA)
def test_list_is_the_moves_in_flight_as_the_describe_shows_them(release):
    listed, block = parse_pasted(text(release, "list.txt"), "l")
    assert block == "--list output: the reassignments in flight (no leader or ISR)"
    moving = {tp: r for tp, r in described(release, "describe_moving.txt").items() if r[1] or r[2]}
    assert replicas(listed) == moving and len(moving) == 3
    with pytest.raises(BlockRefused):
        parse_pasted(text(release, "list.txt"), "l", "proposed")


@pytest.mark.parametrize("release", KRAFT_ERA)
def test_cancel_names_no_replicas_and_is_refused(release):
    with pytest.raises(InputError, match="--cancel output names the partitions it cancelled, not their replicas"):
        parse_pasted(text(release, "cancel.txt"), "c")


@pytest.mark.parametrize("release", ZK_ERA)
def test_execute_refused_while_a_move_runs_is_refused(release):
    with pytest.raises(InputError, match="refused while a reassignment was in flight names no replicas"):
        parse_pasted(text(release, "execute_again.txt"), "e")


# --- the commands on the real outputs ---------------------------------------------------------------------------


def test_verify_reads_execute_output_by_default_and_a_refusal_names_the_option(capsys):
    path = str(DATA / NEWEST / "execute.txt")
    code, out, err = run(capsys, "verify", path, "--json")
    assert err == "" and json.loads(out)["block"] == (
        "--execute output: Current partition replica assignment (before the plan)")
    code, out, err = run(capsys, "verify", path, "--block", "proposed")
    assert (code, out) == (2, "")
    one_error_line(err, "execute.txt: kafka-reassign-partitions --execute output holds only the replicas before the "
                        "plan", "--block current reads that block, the state before the plan")


def test_verify_of_a_verify_paste_in_progress_names_block_proposed(capsys, tmp_path):
    paste = tmp_path / "verify.txt"
    paste.write_text(text(NEWEST, "plan_orders.json", "verify_progress.txt"))
    code, out, err = run(capsys, "verify", str(paste))
    assert (code, out) == (2, "")
    one_error_line(err, "verify.txt:3: partition orders-0", "--block proposed reads the reassignment JSON it "
                                                                 "verified")
    code, out, err = run(capsys, "verify", str(paste), "--block", "proposed", "--json")
    assert err == "" and json.loads(out)["block"] == "--verify output: the reassignment JSON it verified"


def test_verify_reassignment_names_the_argument_for_a_block_it_refuses(capsys):
    code, out, err = run(capsys, "verify-reassignment", str(DATA / NEWEST / "describe_before.txt"),
                         str(DATA / NEWEST / "execute.txt"))
    assert (code, out) == (2, "")
    one_error_line(err, "execute.txt: kafka-reassign-partitions --execute output holds only",
                   "given as CURRENT (the cluster as it is), kcheck reads that block")


def test_plan_reads_execute_and_list_output_as_the_cluster(capsys):
    code, out, err = run(capsys, "plan", str(DATA / NEWEST / "execute_events.txt"), "--json", "--no-balance")
    assert code == 0 and json.loads(out)["current_block"].startswith("--execute output")
    code, out, err = run(capsys, "plan", str(DATA / NEWEST / "list.txt"))
    assert code == 2
    one_error_line(err, "list.txt: partition orders-0 has a reassignment in flight")


# --- plans judged by what they change, from Kafka's own --generate output ---------------------------------------


def judged(capsys, current, proposed, *more):
    code, out, err = run(capsys, "verify-reassignment", current, proposed, "--brokers-file", BROKERS, "--json", *more)
    assert err == "", err
    doc = json.loads(out)
    assert doc["exit_status"] == code
    return code, doc


def at(found, invariant):
    return {v["where"]: v for v in found if v["invariant"] == invariant}


@pytest.mark.parametrize("release", [RELEASES[0], "2.5.1", "2.6.3", "3.6.2", "3.7.2", NEWEST])  # ZK, Scala, Java
def test_a_broker_going_from_0_to_6_replicas_or_4_to_0_is_changed_not_unchanged(capsys, monkeypatch, release):
    """--generate of `events` onto broker 4, read as both CURRENT (its Current block) and PROPOSED: replicas per
    broker 4,1,1,0 -> 0,0,0,6 around an average of 1.5 (Cruise Control's limits 1..2). On main both brokers were
    `unchanged` (matched on invariant and broker only)."""
    paste = str(DATA / release / "generate_events.txt")
    code, doc = judged(capsys, paste, paste)
    changed = at(doc["changed"], "placement.replica-spread")
    assert changed["broker 4"]["detail"]["count"] == 6 and changed["broker 4"]["before"]["detail"]["count"] == 0
    assert changed["broker 4"]["direction"] == "worse"  # 1 below the lower limit -> 4 above the upper one
    assert changed["broker 1"]["detail"]["count"] == 0 and changed["broker 1"]["before"]["detail"]["count"] == 4
    assert changed["broker 1"]["direction"] == "better"  # 2 above -> 1 below
    # brokers 2 and 3 held one replica each, within the limits: a new place, introduced
    assert {"broker 2", "broker 3"} <= set(at(doc["introduced"], "placement.replica-spread"))
    assert not at(doc["unchanged"], "placement.replica-spread")
    monkeypatch.setenv("COLUMNS", "300")  # one table row a line
    code, out, _ = run(capsys, "verify-reassignment", paste, paste, "--brokers-file", BROKERS)
    flat = " ".join(out.replace("│", " ").split())
    assert "changed (worse) soft placement.replica-spread broker 4 broker 4 has 0 replicas" in flat
    assert "→ broker 4 has 6 replicas" in flat


@pytest.mark.parametrize("current", ["generate_events.txt", "describe_before.txt"])
def test_moving_a_replication_factor_1_partition_does_not_introduce_its_headroom_finding(capsys, current):
    """An RF-1 partition's ISR is at min.insync.replicas (1) before any move: no headroom was there already. On main
    the move 'introduced' reassignment.min-isr-headroom on each of the six partitions."""
    code, doc = judged(capsys, str(DATA / NEWEST / current), str(DATA / NEWEST / "generate_events.txt"))
    headroom = "reassignment.min-isr-headroom"
    assert set(at(doc["unchanged"], headroom)) == {f"partition events-{p}" for p in range(6)}
    assert not at(doc["introduced"], headroom) and not at(doc["changed"], headroom)


def rollback(tmp_path, release=NEWEST):
    """The JSON --execute printed to "Save this to use as the --reassignment-json-file option during rollback"."""
    paste = text(release, "execute_events.txt")
    body = paste.split("Current partition replica assignment", 1)[1].split("Save this", 1)[0].strip()
    path = tmp_path / "rollback.json"
    path.write_text(body + "\n")
    return str(path)


def test_a_finding_gone_is_fixed_and_the_labels_of_a_rollback(capsys, tmp_path):
    """From every partition on broker 4 (the plan --execute ran) back by the rollback JSON --execute printed:
    replicas per broker 0,0,0,6 -> 4,1,1,0."""
    code, doc = judged(capsys, str(DATA / NEWEST / "plan_events.json"), rollback(tmp_path))
    spread = "placement.replica-spread"
    assert set(at(doc["fixed"], spread)) == {"broker 2", "broker 3"}
    assert at(doc["changed"], spread)["broker 1"]["direction"] == "worse"  # 0 -> 4 (1 below -> 2 above)
    assert at(doc["changed"], spread)["broker 4"]["direction"] == "better"  # 6 -> 0
    assert code == 0  # soft findings only


def test_fail_on_new_counts_a_hard_finding_made_worse(capsys, tmp_path):
    """The rollback onto the cluster after the move (describe_after: both topics, 6 replicas on each broker) with
    max.replicas.per.broker=6: broker 1 goes from 6 (at the limit) to 10; broker 2, 3 from 6 to 7; broker 4 from
    6 to 0. With the limit at 5 every broker is over it before: 1, 2 and 3 get worse, a hard finding changed."""
    args = (str(DATA / NEWEST / "describe_after.txt"), rollback(tmp_path), "--max-replicas-per-broker", "5")
    code, doc = judged(capsys, *args, "--fail-on", "new")
    capacity = at(doc["changed"], "placement.max-replicas-per-broker")
    assert {w: (v["before"]["detail"]["count"], v["detail"]["count"], v["direction"]) for w, v in capacity.items()} \
        == {"broker 1": (6, 10, "worse"), "broker 2": (6, 7, "worse"), "broker 3": (6, 7, "worse")}
    assert set(at(doc["fixed"], "placement.max-replicas-per-broker")) == {"broker 4"}
    assert code == 1 and doc["ok"] is False
    # the other way, 10,7,7,0 -> 6,6,6,6: better everywhere but broker 4, whose finding is new
    code, doc = judged(capsys, str(DATA / NEWEST / "describe_before.txt"), str(DATA / NEWEST / "plan_events.json"),
                       "--max-replicas-per-broker", "5", "--fail-on", "new")
    assert {v["direction"] for v in at(doc["changed"], "placement.max-replicas-per-broker").values()} == {"better"}
    assert set(at(doc["introduced"], "placement.max-replicas-per-broker")) == {"broker 4"} and code == 1
    code, doc = judged(capsys, str(DATA / NEWEST / "describe_before.txt"), str(DATA / NEWEST / "plan_events.json"),
                       "--max-replicas-per-broker", "6", "--fail-on", "new")
    assert code == 0 and set(at(doc["fixed"], "placement.max-replicas-per-broker")) == {"broker 1", "broker 2",
                                                                                         "broker 3"}


# --- a baseline written before issue 32 -------------------------------------------------------------------------

OLD_BASELINE = str(DATA / "baseline_before_issue32.json")  # `kcheck verify 4.4.0/plan_events.json --json`, main d86baaf


def test_a_baseline_of_an_older_kcheck_still_suppresses_what_it_knows(capsys):
    code, out, err = run(capsys, "verify", str(DATA / NEWEST / "plan_events.json"), "--brokers-file", BROKERS,
                         "--baseline", OLD_BASELINE, "--json")
    doc = json.loads(out)
    assert (code, err, doc["introduced"], doc["changed"]) == (0, "", [], [])
    old = json.loads(read_text(OLD_BASELINE))["violations"]
    assert {(v["invariant"], v["where"]) for v in doc["suppressed"]} == {(v["invariant"], v["where"]) for v in old}


def test_against_an_older_baseline_worse_fails_and_better_stays_suppressed(capsys, tmp_path):
    code, out, _ = run(capsys, "verify", rollback(tmp_path), "--brokers-file", BROKERS, "--baseline", OLD_BASELINE,
                       "--json")
    doc = json.loads(out)
    spread = "placement.replica-spread"
    assert at(doc["changed"], spread)["broker 1"]["direction"] == "worse"  # 0 -> 4: not the known finding
    assert set(at(doc["fixed"], spread)) == {"broker 2", "broker 3"}
    reasons = {v["where"]: v["reason"] for v in doc["suppressed"] if v["invariant"] == spread}
    assert reasons["broker 4"].startswith("in the baseline") and "not worse than there (broker 4 has 6" in \
        reasons["broker 4"]
    assert code == 0  # soft: --fail-on hard does not count it
    code, _, _ = run(capsys, "verify", rollback(tmp_path), "--brokers-file", BROKERS, "--baseline", OLD_BASELINE,
                     "--fail-on", "soft")
    assert code == 1


def test_plan_says_what_it_does_to_each_finding(capsys, tmp_path):
    """kcheck plan on Kafka's describe of the RF-1 topic before the moves (the lines `--topic events` prints): the
    findings it leaves are judged as verify-reassignment judges a plan (the RF-1 partitions it moves keep the
    headroom finding they had), and what it fixes is listed: broker 4 held nothing, broker 1 four of six.

    One topic, so that every minimal plan moves RF-1 partitions: with both topics several plans of the same size
    exist, and which one the solver returns is not fixed."""
    lines = (DATA / NEWEST / "describe_before.txt").read_text().splitlines(keepends=True)
    events = tmp_path / "describe_events.txt"
    events.write_text("".join(line for line in lines if "Topic: events" in line))
    code, out, err = run(capsys, "plan", str(events), "--brokers-file", BROKERS, "--json")
    doc = json.loads(out)
    moved = {m["partition"] for m in doc["moved_replicas"]}
    headroom = {f["where"]: f["change"] for f in doc["soft_findings"]
                if f["invariant"] == "reassignment.min-isr-headroom"}
    assert code == 0 and headroom and set(headroom.values()) == {"unchanged"}
    assert {w.removeprefix("partition ") for w in headroom} == moved
    fixed = {(f["invariant"], f["where"]) for f in doc["fixed_findings"]}
    assert {("placement.replica-spread", "broker 1"), ("placement.replica-spread", "broker 4")} <= fixed


def test_a_plan_that_empties_a_broker_points_at_decommission(capsys, tmp_path) -> None:
    # Kafka's own --generate with a --broker-list that leaves a broker out (tests/data/reassign: 4.4.0's run with
    # --broker-list 4 moves every replica onto broker 4): balance over every broker flags the emptied ones, and the
    # report says how to judge the plan as a decommission instead.
    path = DATA / "4.4.0" / "generate_events.txt"
    code, out, _ = run(capsys, "verify-reassignment", str(path), str(path), "--json")
    doc = json.loads(out)
    assert doc["emptied_brokers"], doc["emptied_brokers"]
    listed = ",".join(map(str, doc["emptied_brokers"]))
    code, out, _ = run(capsys, "verify-reassignment", str(path), str(path))
    assert f"--decommission {listed} judges balance over the others" in " ".join(out.split())
    code, out, _ = run(capsys, "verify-reassignment", str(path), str(path), "--decommission", listed)
    assert "hold no replica after the plan" not in out
