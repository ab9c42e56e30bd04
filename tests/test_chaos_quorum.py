"""A KRaft quorum of three controllers (`LocalCluster(controllers=3)`, `--controllers`) and campaigns whose faults hit
the active controller (kcheck.cluster.chaos, the history's controller-failover check).

The option and schedule checks and the failover check run on their own (hand-written histories: the check fails on
one where no new leader with a larger epoch is observed in time, passes where one is). The campaign test starts its
own three-controller cluster on 4.4.0 (and 3.9.1, slow), kills the active controller (kill -9) and pauses the next
one (SIGSTOP), and expects what KIP-595 promises: another voter elected with a larger epoch each time, and no
acknowledged acks=all record lost; the quorum's leader and epoch are read back by Kafka's own `kafka-metadata-quorum`
tool too. The slow test SIGKILLs a `kcheck chaos --controllers 3` mid-campaign and expects every JVM and folder it
created gone (the cluster's watchdog, README "Lifetime").
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_support import run
from kcheck.cluster.chaos import (
    CAMPAIGN_BROKER_CONFIG,
    CONTROLLER_ROLES,
    DEFAULT_FAULTS,
    Campaign,
    Settings,
    check_schedule_brokers,
    parse_schedule,
    random_schedule,
)
from kcheck.cluster.folder import check_state
from kcheck.cluster.history import (
    FAILOVER_BOUND,
    SCHEMA_VERSION,
    Fault,
    FinalRead,
    History,
    Quorum,
    check,
    event_json,
    history_schema,
)
from kcheck.cluster.local import LocalCluster
from kcheck.inputs.formats import InputError
from test_chaos import _written, schema_errors

# ---------------------------------------------------------------------------------------------------------
# options, schedules and the state file


@pytest.mark.parametrize("count", [0, 2, 4, 6, 7])
def test_a_quorum_is_one_or_an_odd_number_of_controllers_up_to_five(count, capsys, tmp_path):
    with pytest.raises(InputError, match=r"^--controllers: .* is not an odd number of controllers from 1 to 5"):
        LocalCluster(controllers=count)
    for argv in (("cluster", "up", "--dir", str(tmp_path / "c")), ("chaos",)):
        code, out, err = run(capsys, *argv, "--controllers", str(count))
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert err.startswith(f"kcheck: error: --controllers: {count} is not an odd number"), err
    assert not (tmp_path / "c").exists()
    code, out, err = run(capsys, "chaos", "--controllers", "3", "--dir", str(tmp_path))
    assert (code, out, err) == (2, "", "kcheck: error: --controllers: applies to a cluster kcheck starts, not with "
                                       "--dir\n")


def test_schedules_name_controller_roles_only_for_faults_that_can_hit_a_controller():
    steps = parse_schedule("1 kill active-controller\n2 start\n3 pause controller\n4 resume\n5 restart 1001\n"
                           "6 shutdown active-controller\n7 start 1000\n", "s")
    assert [s.target for s in steps] == ["active-controller", None, "controller", None, "1001", "active-controller",
                                         "1000"]
    check_schedule_brokers(steps, (1, 2, 3), "s", (1000, 1001, 1002))
    for text, message in (("1 lossy-kill active-controller", "lossy-kill does not hit a controller"),
                          ("1 start controller", "start does not hit a controller .only kill, pause, restart, "),
                          ("1 elect-preferred controller", "elect-preferred takes no target"),
                          ("1 kill controllers", "is not a node id, leader, follower, active-controller, controller")):
        with pytest.raises(InputError, match=message):
            parse_schedule(text, "s")
    refusals = ((("1 kill active-controller",), (1000,), "s:1: kill active-controller needs a quorum of 3 or more"),
                (("1 pause 1001",), (1000,), "s:1: node 1001 is not in the cluster"),
                (("1 lossy-kill 1002",), (1000, 1001, 1002), "s:1: lossy-kill does not hit a controller"))
    for lines, controllers, message in refusals:
        with pytest.raises(InputError) as e:
            check_schedule_brokers(parse_schedule("\n".join(lines), "s"), (1, 2, 3), "s", controllers)
        assert str(e.value).startswith(message), str(e.value)


def test_random_schedules_draw_controller_roles_with_three_controllers_a_minority_at_a_time():
    assert random_schedule(4, 200, DEFAULT_FAULTS) == random_schedule(4, 200, DEFAULT_FAULTS, controllers=1)
    assert not any(s.target in CONTROLLER_ROLES for s in random_schedule(4, 200, DEFAULT_FAULTS))
    for seed in range(30):
        steps = random_schedule(seed, 200, ("kill", "pause", "restart", "shutdown"), max_concurrent=3, brokers=3,
                                controllers=3)
        hit = [i for i, s in enumerate(steps) if s.target in CONTROLLER_ROLES]
        assert hit and all(steps[i].kind in ("kill", "pause", "restart", "shutdown") for i in hit)
        ends = {s.ends: s.t for s in steps if s.ends is not None}
        lasting = [(steps[i].t, ends[i]) for i in hit if i in ends]  # a restart lasts while it runs: no end step
        for start, _ in lasting:  # at most one of three controllers down or paused at any moment
            assert sum(a <= start < b for a, b in lasting) == 1, (seed, lasting)


def test_state_files_of_one_controller_still_open_and_a_quorum_is_listed_in_order(tmp_path):
    node = {"role": "controller", "port": 9, "rack": None, "pid": None, "sasl_port": None}
    broker = {"node_id": 1, "role": "broker", "port": 10, "rack": None, "pid": None, "sasl_port": None}
    base = {"version": "4.4.0", "cluster_id": "AAAAAAAAAAAAAAAAAAAAAA", "directory": str(tmp_path), "id": "x",
            "brokers": [broker]}
    old = {**base, "controller": {**node, "node_id": 1000}}  # what kcheck wrote before quorums
    new = {**base, "state_version": 2, "controllers": [{**node, "node_id": 1000 + i} for i in range(3)]}
    assert check_state(old, tmp_path, "x") is None and check_state(new, tmp_path, "x") is None
    swapped = {**new, "controllers": new["controllers"][::-1]}
    assert check_state(swapped, tmp_path, "x") == "the controllers are not nodes 1000.. in order"
    for bad in ({**new, "state_version": 4}, {**new, "controllers": []}, {**base, "state_version": 2}):
        assert check_state(bad, tmp_path, "x").startswith("controllers is not a list of 1..5 nodes")


# ---------------------------------------------------------------------------------------------------------
# the controller-failover check on hand-written histories


def _history(*events) -> History:
    h = History(began=0.0)
    for e in events:
        h.add(e)
    h.final[0] = FinalRead(0, 0, 0, True)
    return h


def _failover_violations(*events) -> list:
    return [v for v in check(_history(*events)).violations if v.check == "history.controller-failover"]


def test_a_killed_or_paused_active_controller_must_be_followed_by_a_new_leader_with_a_larger_epoch():
    before = Quorum(1.0, 1000, 4, 0)
    for kind in ("kill", "pause", "shutdown", "restart"):
        fault = Fault(1.2, kind, "start", (1000,), "", 0, "active-controller")
        assert _failover_violations(before, fault, Quorum(3.5, 1001, 5, 0)) == []
        for after in ((), (Quorum(3.5, 1000, 4, 0),),  # the old leader still named
                      (Quorum(3.5, 1001, 4, 0),),  # another leader, the same epoch
                      (Quorum(3.5, -1, 5, 0),),  # an election under way, no leader yet
                      (Quorum(1.2 + FAILOVER_BOUND + 0.1, 1002, 5, 0),)):  # too late
            found = _failover_violations(before, fault, *after)
            assert len(found) == 1, (kind, after)
            v = found[0]
            assert v.message.startswith(f"{kind} of the active controller 1000 (epoch 4) at 1.2s: no new quorum "
                                        "leader with a larger epoch"), v.message
            assert v.window[:2] == (event_json(before), event_json(fault))
            assert v.window[2:] == tuple(event_json(q) for q in after if q.t <= 1.2 + FAILOVER_BOUND)
    # a controller that was not the leader when it was hit, or a broker fault: nothing to elect
    assert _failover_violations(before, Fault(1.2, "kill", "start", (1001,), "", 0, "controller")) == []
    assert _failover_violations(Fault(1.2, "kill", "start", (1,), "", 0, "leader")) == []
    # the quorum read before must be of the same step: one of an earlier fault does not count
    assert _failover_violations(before, Fault(5.0, "kill", "start", (1000,), "", 1, "controller")) == []


def test_histories_with_quorum_events_fit_schema_version_2_and_version_1_documents_still_fit():
    schema = history_schema()
    h = _history(Quorum(1.0, 1000, 1, 0), Fault(1.1, "kill", "start", (1000,), "n", 0, "active-controller"),
                 Quorum(3.0, 1001, 2, 0), Fault(6.0, "start", "end", (1000,), "", 1))
    doc = _written(h, parse_schedule("1 kill active-controller\n6 start\n", "s"), controllers=3)
    assert schema_errors(doc, schema) == [] and doc["schema_version"] == SCHEMA_VERSION
    assert [e["type"] for e in doc["events"]] == ["quorum", "fault", "quorum", "fault"]
    assert doc["events"][1]["role"] == "active-controller" and doc["settings"]["controllers"] == 3
    old = _written(_history(Fault(1.0, "kill", "start", (1,), "", 0)))
    old["schema_version"] = 1
    old["settings"].pop("controllers")
    for e in old["events"]:
        e.pop("role")
        e.pop("cuts")
    old["verdict"]["checks"].pop("history.controller-failover")
    assert schema_errors(old, schema) == []


# ---------------------------------------------------------------------------------------------------------
# a three-controller cluster


def _tool_quorum(cluster: LocalCluster) -> tuple[int, int]:
    """LeaderId and LeaderEpoch as Kafka's own `kafka-metadata-quorum describe --status` prints them."""
    from kcheck.reference import kafka_tools

    done = kafka_tools.run(cluster.version, "kafka-metadata-quorum",
                           ["--bootstrap-controller", cluster.bootstrap_controllers, "describe", "--status"], 90)
    assert done.returncode == 0, done.stderr[-2000:]
    fields = dict(re.findall(r"^(\w+):\s*(\S+)", done.stdout, re.M))
    return int(fields["LeaderId"]), int(fields["LeaderEpoch"])


@pytest.mark.cluster
@pytest.mark.kafka
@pytest.mark.parametrize("version", ["4.4.0", pytest.param("3.9.1", marks=pytest.mark.slow)])
def test_a_campaign_kills_and_pauses_the_active_controller_and_the_quorum_fails_over_losing_nothing(tmp_path,
                                                                                                    version):
    """4.4.0 (and 3.9.1, slow), three controllers, three brokers, RF 3, min.insync.replicas 2, acks=all: the
    active controller killed (-9) and started again, then the next active controller paused and resumed. Each time
    another voter becomes leader with a larger epoch, and no acknowledged record is lost."""
    from kcheck.cluster.admin import describe_quorum

    with LocalCluster(version, brokers=3, controllers=3, directory=tmp_path / "c",
                      config=CAMPAIGN_BROKER_CONFIG) as cluster:
        assert [r["role"] for r in cluster.status()] == ["controller"] * 3 + ["broker"] * 3
        voters = (tmp_path / "c" / "controller-1002" / "server.properties").read_text()
        assert all(f"{1000 + i}@{a}" in voters for i, a in enumerate(cluster.bootstrap_controllers.split(",")))
        settings = Settings(f"chaos-quorum-{int(time.time())}", partitions=2, duration=13, rate=30, controllers=3)
        schedule = parse_schedule("1 kill active-controller\n5 start\n6 pause active-controller\n12 resume\n", "t")
        out = Campaign(cluster, settings, schedule).run()
        hit = {f.kind: f for f in out.history.of(Fault) if f.phase == "start"}
        assert set(hit) == {"kill", "pause"} and all(f.role == "active-controller" for f in hit.values()), hit
        assert all("the active controller; quorum leader" in f.note for f in hit.values()), hit
        quorum = sorted(out.history.of(Quorum), key=lambda q: q.t)
        epochs = [q.epoch for q in quorum if q.leader >= 0]
        assert epochs == sorted(epochs) and epochs[-1] >= epochs[0] + 2, quorum  # two elections at least
        assert hit["kill"].brokers != hit["pause"].brokers  # the pause hit the leader elected after the kill
        v = out.verdict
        assert v.counts["acked_acks_all"] > 100 and v.counts["lost_acks_all"] == 0
        assert v.healed and {c: len(x) for c, x in v.by_check().items() if x} == {}, v.violations[:3]
        assert all(r["state"] == "running" for r in cluster.status())
        # what kcheck reads (DescribeQuorum of the controllers) is what Kafka's own tool reads
        assert describe_quorum(cluster.bootstrap_controllers) == _tool_quorum(cluster)
    assert not _naming(tmp_path) and not (tmp_path / "c").exists()


def _naming(folder: Path) -> list[int]:
    """PIDs whose command line names something inside `folder`."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(folder).encode() in (entry / "cmdline").read_bytes():
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


def end_by_pid(proc: subprocess.Popen[str], folder: Path) -> None:
    """The campaign if it still runs, and what its watchdogs missed, if anything: ended here, by PID."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for pid in _naming(folder):
        os.kill(pid, signal.SIGKILL)


def read_until(proc: subprocess.Popen[str], pattern: str) -> None:
    """Read a campaign's stderr until a line matches `pattern` (it fails if the campaign ends first)."""
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if re.search(pattern, line):
            return
    raise AssertionError("".join(seen)[-2000:])


@pytest.mark.slow  # a cluster of its own, killed mid-campaign (~40 s)
@pytest.mark.cluster
@pytest.mark.kafka
def test_a_sigkilled_campaign_on_three_controllers_leaves_no_process_and_no_folder(tmp_path):
    """`kcheck chaos --controllers 3` SIGKILLed once it has hit the active controller (no finally, no atexit):
    the watchdog kills the three controllers and the brokers it started and removes the cluster's folder."""
    (tmp_path / "s.txt").write_text("1 pause active-controller\n4 resume\n5 kill controller\n9 start\n")
    proc = subprocess.Popen([sys.executable, "-m", "kcheck", "chaos", "--controllers", "3", "--schedule", "s.txt",
                             "--duration", "60"], cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        read_until(proc, r"pause 100[0-2]: the active controller")
        nodes = [p for p in _naming(tmp_path) if b"kafka.Kafka" in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert len(nodes) == 6, nodes
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 20  # the watchdog kills the nodes, then removes the folder a moment later
        while (_naming(tmp_path) or len(list(tmp_path.iterdir())) > 1) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _naming(tmp_path)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["s.txt"], sorted(map(str, tmp_path.rglob("*")))[:20]
    finally:
        end_by_pid(proc, tmp_path)
