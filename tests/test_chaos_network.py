"""Network partitions in fault campaigns: `--network` (every node in its own namespace, kcheck.cluster.netns) and the
fault kinds partition, partition-one-way and partition-from-quorum with their heal (kcheck.cluster.chaos).

Schedules, options, state files and the history's schema are checked on their own. The campaign test starts a
three-controller cluster on 4.4.0 with `--network`, cuts partition 0's leader from every other node (the writes it
leads wait: nothing acknowledges them while it is cut), then cuts the leader from the controllers only (it still
serves clients and the other brokers: writes are acknowledged as before), then kills the active controller: no
acknowledged acks=all record lost, a new quorum leader, and nothing of the network left afterwards. The slow test
SIGKILLs a `kcheck chaos --network` mid-campaign and expects every namespace, interface, JVM and folder gone (the
cluster's watchdog and the network's both act). Cluster tests skip with netns.unavailable()'s reason where
namespaces cannot be made (not root).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_support import one_error_line, run
from kcheck.cluster import netns
from kcheck.cluster.chaos import (
    CAMPAIGN_BROKER_CONFIG,
    CONTROLLER_ROLES,
    DEFAULT_FAULTS,
    NETWORK_FAULTS,
    NETWORK_KINDS,
    SHAPE_KINDS,
    Campaign,
    Settings,
    bridge_sides,
    check_schedule_brokers,
    parse_schedule,
    random_schedule,
)
from kcheck.cluster.folder import check_state
from kcheck.cluster.history import SCHEMA_VERSION, Ack, Fault, History, Send, history_schema
from kcheck.cluster.local import LocalCluster
from kcheck.inputs.formats import InputError
from test_chaos import _written, schema_errors
from test_chaos_quorum import _naming, end_by_pid, read_until

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "chaos" / "partitions.txt"
LINKS = EXAMPLE.with_name("links.txt")
NO_NETNS = netns.unavailable()

# ---------------------------------------------------------------------------------------------------------
# schedules, options, state files, the history's schema


def test_partition_kinds_in_schedules_and_heal_takes_no_target():
    steps = parse_schedule(EXAMPLE.read_text(), "p")
    assert [(s.kind, s.target) for s in steps] == [
        ("partition", "leader"), ("heal", None), ("partition-from-quorum", "leader"), ("heal", None),
        ("kill", "active-controller"), ("start", None)]
    with pytest.raises(InputError, match=r"^s:1: heal takes no target"):
        parse_schedule("1 heal 2\n", "s")
    # partition-from-quorum cuts a broker from the controllers: it never aims at a controller
    with pytest.raises(InputError, match=r"^s:1: partition-from-quorum does not hit a controller"):
        parse_schedule("1 partition-from-quorum active-controller\n", "s")
    with pytest.raises(InputError, match=r"^s:1: partition-from-quorum does not hit a controller"):
        check_schedule_brokers(parse_schedule("1 partition-from-quorum 1001\n", "s"), (1, 2, 3), "s",
                               (1000, 1001, 1002))
    check_schedule_brokers(parse_schedule("1 partition 1001\n3 heal\n4 partition-one-way controller\n", "s"),
                           (1, 2, 3), "s", (1000, 1001, 1002))
    with pytest.raises(InputError, match=r"needs a quorum of 3 or more"):
        check_schedule_brokers(parse_schedule("1 partition active-controller\n", "s"), (1, 2, 3), "s")


def test_bridges_slow_and_lossy_links_in_schedules_aim_at_nodes_and_roles_controllers_included():
    steps = parse_schedule(LINKS.read_text(), "l")
    assert [(s.kind, s.target) for s in steps] == [
        ("partition-bridge", "active-controller"), ("heal", None), ("slow-links", "leader"), ("heal", None),
        ("lossy-links", "leader"), ("heal", None)]
    check_schedule_brokers(steps, (1, 2, 3), "l", (1000, 1001, 1002))
    check_schedule_brokers(parse_schedule("1 slow-links 1001\n2 heal\n3 lossy-links controller\n4 heal\n"
                                          "5 partition-bridge 2\n6 heal\n", "s"), (1, 2, 3), "s", (1000, 1001, 1002))
    with pytest.raises(InputError, match=r"^s:1: target 'everyone' is not a node id"):
        parse_schedule("1 slow-links everyone\n", "s")
    with pytest.raises(InputError, match=r"^s:1: node 7 is not in the cluster"):
        check_schedule_brokers(parse_schedule("1 lossy-links 7\n", "s"), (1, 2, 3), "s")


def test_a_bridge_deals_each_role_alternately_so_each_side_and_the_middle_hold_a_quorum():
    """Jepsen's bridge as kcheck deals it: with three controllers and one in the middle, each side has one of the
    other two, so either side with the middle is 2 of 3 voters; brokers are dealt the same way."""
    controllers, brokers = (1000, 1001, 1002), (1, 2, 3)
    assert bridge_sides(1000, controllers, brokers) == ([1001, 1, 3], [1002, 2])
    assert bridge_sides(1001, controllers, brokers) == ([1000, 1, 3], [1002, 2])
    assert bridge_sides(2, controllers, brokers) == ([1000, 1002, 1], [1001, 3])
    assert bridge_sides(3, (1000,), (1, 2, 3, 4, 5)) == ([1000, 1, 4], [2, 5])
    for middle in controllers:
        for side in bridge_sides(middle, controllers, brokers):
            assert len({middle, *side} & set(controllers)) == 2


def test_shaped_links_refused_where_the_relay_cannot_run_and_left_out_of_default_draws(capsys, tmp_path,
                                                                                         monkeypatch):
    monkeypatch.setattr("kcheck.cluster.local.netns_unavailable", lambda: None)
    monkeypatch.setattr("kcheck.cluster.netns.relay_unavailable", lambda: "no packet socket")
    code, out, err = run(capsys, "chaos", "--network", "--faults", "kill,slow-links")
    assert (code, out) == (2, "")
    one_error_line(err, "--faults: slow-links cannot run here: no packet socket")
    (tmp_path / "s.txt").write_text("1 kill\n2 start\n3 lossy-links leader\n5 heal\n")
    code, out, err = run(capsys, "chaos", "--network", "--schedule", str(tmp_path / "s.txt"))
    assert (code, out) == (2, "")
    one_error_line(err, f"{tmp_path / 's.txt'}:3: lossy-links cannot run here: no packet socket")
    from kcheck.commands.chaos import _need_network

    drawn = _need_network(NETWORK_FAULTS, [], None, True, defaulted=True)
    assert set(SHAPE_KINDS) & set(drawn) == set() and "partition-bridge" in drawn


def test_histories_with_shaped_links_fit_schema_version_5():
    h = History(began=0.0)
    links = ((1, 2), (2, 1))
    for e in (Fault(1.5, "slow-links", "start", (1,), "1 node(s)", 0, "leader", (), links, "delay 200ms 50ms"),
              Fault(4.0, "heal", "end", (1,), "", 1, None, (), links)):
        h.add(e)
    doc = _written(h, parse_schedule("1 slow-links leader\n4 heal\n", "s"), network=True)
    assert schema_errors(doc, history_schema()) == [] and doc["schema_version"] == SCHEMA_VERSION == 5
    assert doc["events"][0]["shaped"] == [[1, 2], [2, 1]] and doc["events"][0]["shape"] == "delay 200ms 50ms"
    assert History.from_json(doc["events"]).of(Fault)[1].shaped == ((1, 2), (2, 1))


def test_random_schedules_draw_partitions_only_when_asked_each_ended_by_its_heal():
    assert not any(s.kind in NETWORK_KINDS for s in random_schedule(4, 300, DEFAULT_FAULTS, controllers=3))
    steps = random_schedule(4, 300, NETWORK_FAULTS, controllers=3, max_concurrent=2)
    kinds = {s.kind for s in steps}
    assert set(NETWORK_KINDS) <= kinds and "heal" in kinds
    for i, s in enumerate(steps):
        if s.kind in NETWORK_KINDS:
            assert [e.kind for e in steps if e.ends == i] == ["heal"], (i, s)
        if s.kind == "partition-from-quorum":
            assert s.target not in CONTROLLER_ROLES
        if s.kind == "heal":
            assert steps[s.ends].kind in NETWORK_KINDS


def test_partitions_without_network_are_refused_before_anything_starts(capsys, tmp_path, monkeypatch):
    code, out, err = run(capsys, "chaos", "--faults", "kill,partition")
    assert (code, out) == (2, "")
    one_error_line(err, "--faults: partition needs --network")
    (tmp_path / "s.txt").write_text("# cuts\n1 kill\n2 start\n3 partition-one-way leader\n5 heal\n")
    code, out, err = run(capsys, "chaos", "--schedule", str(tmp_path / "s.txt"))
    assert (code, out) == (2, "")
    one_error_line(err, f"{tmp_path / 's.txt'}:4: partition-one-way needs --network")
    for kind in ("partition-bridge", "slow-links", "lossy-links"):
        (tmp_path / f"{kind}.txt").write_text(f"2 {kind} leader\n4 heal\n")
        code, out, err = run(capsys, "chaos", "--schedule", str(tmp_path / f"{kind}.txt"))
        assert (code, out) == (2, "")
        one_error_line(err, f"{tmp_path / f'{kind}.txt'}:1: {kind} needs --network")
        code, out, err = run(capsys, "chaos", "--faults", kind)
        assert (code, out) == (2, "")
        one_error_line(err, f"--faults: {kind} needs --network")
    code, out, err = run(capsys, "chaos", "--network", "--dir", str(tmp_path))
    assert (code, out) == (2, "")
    one_error_line(err, "--network: applies to a cluster kcheck starts")
    # where no namespace can be made: one line saying why, nothing created
    monkeypatch.setattr("kcheck.cluster.local.netns_unavailable", lambda: "cannot make a network namespace: no")
    for argv in (("cluster", "up", "--network", "--dir", str(tmp_path / "c")), ("chaos", "--network")):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, ""), err
        one_error_line(err, "--network: cannot make a network namespace: no")
    assert not (tmp_path / "c").exists()


def test_state_files_record_the_network_and_older_ones_still_open(tmp_path):
    node = {"role": "controller", "port": 9093, "rack": None, "pid": None, "sasl_port": None}
    broker = {"node_id": 1, "role": "broker", "port": 9092, "rack": None, "pid": None, "sasl_port": None,
              "host": "10.213.7.2"}
    base = {"version": "4.4.0", "cluster_id": "AAAAAAAAAAAAAAAAAAAAAA", "directory": str(tmp_path), "id": "x",
            "brokers": [broker], "controllers": [{**node, "node_id": 1000, "host": "10.213.7.1"}]}
    network = {"tag": "0a1b", "owner": 12, "subnet": "10.213.7.0/24", "holder": None}
    assert check_state({**base, "state_version": 3, "network": network}, tmp_path, "x") is None
    old = {**base, "state_version": 2, "brokers": [{k: v for k, v in broker.items() if k != "host"}]}
    assert check_state(old, tmp_path, "x") is None
    for bad, why in (({**network, "subnet": "192.168.1.0/24"}, "not a /24 of 10.213.0.0/16"),
                     ({**network, "tag": "../x"}, "tag is not 4 hexadecimal digits"),
                     ({**network, "owner": "1"}, "owner or holder is not a process id"),
                     ({k: v for k, v in network.items() if k != "holder"}, "network is not a network")):
        assert why in check_state({**base, "state_version": 3, "network": bad}, tmp_path, "x")
    bad_host = {**base, "state_version": 3, "brokers": [{**broker, "host": "localhost"}]}
    assert check_state(bad_host, tmp_path, "x") == "broker 1: host is not an IPv4 address"


def test_histories_with_cuts_fit_schema_version_3():
    h = History(began=0.0)
    links = ((1, 2), (2, 1))
    for e in (Send(1.0, "all", "plain-0-0-000000"), Fault(1.5, "partition", "start", (1,), "cut", 0, "leader", links),
              Ack(2.0, "all", "plain-0-0-000000", 0, 0), Fault(4.0, "heal", "end", (1,), "", 1, None, links)):
        h.add(e)
    doc = _written(h, parse_schedule("1 partition leader\n4 heal\n", "s"), network=True)
    assert schema_errors(doc, history_schema()) == [] and doc["schema_version"] == SCHEMA_VERSION >= 3
    assert doc["events"][1]["cuts"] == [[1, 2], [2, 1]] and doc["settings"]["network"] is True
    assert History.from_json(doc["events"]).of(Fault)[0].cuts == ((1, 2), (2, 1))


# ---------------------------------------------------------------------------------------------------------
# on a cluster in namespaces


def _ours() -> tuple[list[str], list[str]]:
    return ([n for n in netns._namespaces() if n.startswith(netns.PREFIX)],
            [link for link in netns._links() if link.startswith(netns.PREFIX)])


def _latencies(h: History, start: Fault, end: Fault) -> list[float]:
    """Seconds from send to acknowledgement of the acks=all records sent while `start`'s cut lasted."""
    sent = {s.value: s.t for s in h.of(Send) if s.acks == "all" and start.t <= s.t < end.t}
    return [a.t - sent[a.value] for a in h.of(Ack) if a.value in sent]


@pytest.mark.skipif(NO_NETNS is not None, reason=str(NO_NETNS))
@pytest.mark.cluster
@pytest.mark.kafka
def test_a_campaign_cuts_the_leader_then_cuts_it_from_the_quorum_then_kills_the_active_controller(tmp_path):
    """4.4.0 in namespaces, three controllers, three brokers, RF 3, min.insync.replicas 2: partition 0's leader cut
    from every other node (what it leads is acknowledged only once healed), then from the controllers only (it still
    serves: writes are acknowledged as before), then the active controller killed. Nothing acknowledged is lost, a
    new quorum leader is elected, and every namespace and interface is gone with the cluster."""
    before = _ours()
    with LocalCluster("4.4.0", brokers=3, controllers=3, directory=tmp_path / "c", config=CAMPAIGN_BROKER_CONFIG,
                      network=True) as cluster:
        assert cluster.network is not None
        hosts = {n.node_id: n.host for n in cluster.state.nodes}
        assert len(set(hosts.values())) == 6 and all(h.startswith("10.213.") for h in hosts.values())
        assert cluster.bootstrap == ",".join(f"{hosts[b]}:9092" for b in (1, 2, 3))
        saved = json.loads((tmp_path / "c" / "kcheck-cluster.json").read_text())
        assert saved["state_version"] == 3 and saved["network"]["tag"] == cluster.network.tag
        settings = Settings(f"chaos-net-{int(time.time())}", partitions=1, duration=26, rate=30, controllers=3,
                            network=True)
        schedule = parse_schedule(EXAMPLE.read_text(), "p")
        out = Campaign(cluster, settings, schedule).run()
        faults = out.history.of(Fault)
        start = {f.kind: f for f in faults if f.phase == "start"}
        heals = [f for f in faults if f.kind == "heal" and f.phase == "end"]
        assert set(start) == {"partition", "partition-from-quorum", "kill"}, faults
        assert len(heals) == 2 and not cluster.network.cuts
        cut = start["partition"].brokers[0]
        assert set(start["partition"].cuts) == {(a, b) for o in hosts if o != cut for a, b in ((cut, o), (o, cut))}
        apart = start["partition-from-quorum"].brokers[0]
        assert set(start["partition-from-quorum"].cuts) == {link for c in (1000, 1001, 1002)
                                                            for link in ((apart, c), (c, apart))}
        # the cut leader's writes waited for the heal; cut from the quorum only, it went on serving
        assert max(_latencies(out.history, start["partition"], heals[0])) > 3.0
        served = _latencies(out.history, start["partition-from-quorum"], heals[1])
        assert len(served) > 50 and max(served) < 3.0
        assert "the active controller; quorum leader" in start["kill"].note
        v = out.verdict
        assert v.counts["acked_acks_all"] > 300 and v.counts["lost_acks_all"] == 0
        assert v.healed and {c: len(x) for c, x in v.by_check().items() if x} == {}, v.violations[:3]
    assert _ours() == before and not (tmp_path / "c").exists()


@pytest.mark.skipif((NO_LINKS := NO_NETNS or netns.relay_unavailable()) is not None, reason=str(NO_LINKS))
@pytest.mark.cluster
@pytest.mark.kafka
def test_a_campaign_bridges_the_active_controller_then_slows_then_makes_lossy_the_leaders_links(tmp_path):
    """examples/chaos/links.txt on 4.4.0 in namespaces (three controllers, three brokers, RF 3, min.insync.replicas
    2): the links a bridge cuts are those between its two sides, a slow or lossy fault shapes every link of partition
    0's leader both ways and its heal restores them; writes the slowed leader leads wait longer than two delayed
    frames; nothing acknowledged is lost and nothing of the network or its relay is left."""
    with LocalCluster("4.4.0", brokers=3, controllers=3, directory=tmp_path / "c", config=CAMPAIGN_BROKER_CONFIG,
                      network=True) as cluster:
        assert cluster.network is not None
        stem = cluster.network.stem
        settings = Settings(f"chaos-links-{int(time.time())}", partitions=1, duration=30, rate=30, controllers=3,
                            network=True)
        out = Campaign(cluster, settings, parse_schedule(LINKS.read_text(), "l")).run()
        relay = cluster.network._relay
        faults = out.history.of(Fault)
        start = {f.kind: f for f in faults if f.phase == "start"}
        heals = [f for f in faults if f.kind == "heal" and f.phase == "end"]
        assert set(start) == {"partition-bridge", "slow-links", "lossy-links"} and len(heals) == 3, faults
        middle = start["partition-bridge"].brokers[0]
        left, right = bridge_sides(middle, (1000, 1001, 1002), (1, 2, 3))
        assert middle in (1000, 1001, 1002) and set(start["partition-bridge"].cuts) == {
            link for a in left for b in right for link in ((a, b), (b, a))} == set(heals[0].cuts)
        for kind, shape, heal in (("slow-links", "delay 200ms 50ms", heals[1]), ("lossy-links", "loss 20% burst 50%",
                                                                                 heals[2])):
            target = start[kind].brokers[0]
            links = {link for o in (1, 2, 3, 1000, 1001, 1002) if o != target for link in ((target, o), (o, target))}
            assert (set(start[kind].shaped), start[kind].shape, set(heal.shaped)) == (links, shape, links)
        assert not cluster.network.cuts and not cluster.network.shaped
        slowed = sorted(_latencies(out.history, start["slow-links"], heals[1]))
        assert len(slowed) > 50 and slowed[len(slowed) // 2] > 0.4
        v = out.verdict
        assert v.counts["acked_acks_all"] > 300 and v.counts["lost_acks_all"] == 0
        assert v.healed and {c: len(x) for c, x in v.by_check().items() if x} == {}, v.violations[:3]
    assert relay is not None and relay.poll() is not None
    assert not [n for n in netns._namespaces() if n.startswith(stem)] and not (tmp_path / "c").exists()


@pytest.mark.skipif(NO_NETNS is not None, reason=str(NO_NETNS))
@pytest.mark.slow  # a cluster of its own, killed mid-campaign (~40 s)
@pytest.mark.cluster
@pytest.mark.kafka
def test_a_sigkilled_network_campaign_leaves_no_namespace_interface_process_or_folder(tmp_path):
    """`kcheck chaos --network --controllers 3` SIGKILLed while a partition lasts (no finally, no atexit): the
    cluster's watchdog kills the JVMs and removes the folder, the network's watchdog deletes the namespaces and the
    caller's interface."""
    before = _ours()
    (tmp_path / "s.txt").write_text("1 partition leader\n30 heal\n")
    proc = subprocess.Popen([sys.executable, "-m", "kcheck", "chaos", "--network", "--controllers", "3",
                             "--schedule", "s.txt", "--duration", "60"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        read_until(proc, r"partition \d: cut from 5 node")
        nodes = [p for p in _naming(tmp_path) if b"kafka.Kafka" in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert len(nodes) == 6 and len(_ours()[0]) == len(before[0]) + 7, (nodes, _ours())
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 20  # the watchdogs act within a moment of the owner's end
        while (_naming(tmp_path) or len(list(tmp_path.iterdir())) > 1 or _ours() != before) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _naming(tmp_path) and _ours() == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["s.txt"], sorted(map(str, tmp_path.rglob("*")))[:20]
    finally:
        end_by_pid(proc, tmp_path)


@pytest.mark.skipif(NO_NETNS is not None, reason=str(NO_NETNS))
@pytest.mark.slow  # a cluster of its own (~20 s)
@pytest.mark.cluster
@pytest.mark.kafka
def test_cluster_up_network_status_down_from_the_command_line(tmp_path):
    """`cluster up --network` (its output captured: nothing it leaves running holds the pipe), `status` with the
    namespace addresses, `down`: every namespace, the caller's interface, the network's holder and the folder gone."""
    from test_cluster import _kafka_processes_under, _kcheck

    before, folder = _ours(), tmp_path / "c"
    up = _kcheck("cluster", "up", "--network", "--brokers", "1", "--dir", str(folder), timeout=120)
    try:
        assert up.returncode == 0, up.stderr
        saved = json.loads((folder / "kcheck-cluster.json").read_text())
        hosts = {n["node_id"]: n["host"] for n in (*saved["controllers"], *saved["brokers"])}
        assert up.stdout == f"{hosts[1]}:9092\n" and hosts[1000] != hosts[1] and hosts[1].startswith("10.213.")
        assert len(_ours()[0]) == len(before[0]) + 3 and len(_ours()[1]) == len(before[1]) + 1  # hub + 2 nodes
        assert saved["network"]["holder"] is not None and saved["network"]["owner"] == saved["network"]["holder"]
        status = _kcheck("cluster", "status", "--json", "--dir", str(folder))
        assert status.returncode == 0, status.stderr
        assert [r["address"] for r in json.loads(status.stdout)["nodes"]] == [f"{hosts[1000]}:9093",
                                                                               f"{hosts[1]}:9092"]
    finally:
        down = _kcheck("cluster", "down", "--dir", str(folder))
    assert down.returncode == 0, down.stderr
    assert not folder.exists() and not _kafka_processes_under(folder) and _ours() == before
    assert not _naming(folder)  # the holder too
