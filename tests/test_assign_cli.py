"""`kcheck assign`: every assignor on small groups (expected assignments derived by hand), the group
file format with its one-line errors, exit codes and the --json shape.

HashMap order, needed for the sticky and uniform assignors: "c1".hashCode() = 99*31 + 49 = 3118,
"c2" = 3119, "c3" = 3120; spread(h) = h ^ (h >>> 16) = h for these; in a 16-bucket table they fall in
buckets 3118 & 15 = 14, 15 and 0. So a HashMap of c1, c2, c3 iterates c3, c1, c2 whatever the insertion order.
"""

import json
from pathlib import Path

import pytest

from kcheck.cli import main
from kcheck.inputs.formats import InputError
from kcheck.inputs.group_file import parse_group, partition_runs
from kcheck.model.vocabulary import TopicPartition
from kcheck.reference.assignors.sticky import deserialize_topic_partition_assignment
from kcheck.reference.java import JavaHashMap

DATA = Path(__file__).parent / "data"
ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "server-range")


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def assign_json(capsys, assignor, path):
    code, out, err = run(capsys, "assign", "--assignor", assignor, str(path), "--json")
    assert err == ""
    return code, json.loads(out)


def tps(topic, *ids):
    return [f"{topic}-{i}" for i in ids]


def test_hash_map_order_used_in_the_derivations():
    m = JavaHashMap()
    for c in ("c1", "c2", "c3"):
        m.put(c, None)
    assert m.keys() == ["c3", "c1", "c2"]


# --- every assignor, a fresh group: 7 partitions of orders over c3, c1, c2 (file order) ------------------------

FRESH = {
    # RangeAssignor: members sorted by id (c1, c2, c3); 7 // 3 = 2 each and the first 7 % 3 = 1 gets one more.
    "range": {"c3": tps("orders", 5, 6), "c1": tps("orders", 0, 1, 2), "c2": tps("orders", 3, 4)},
    # RoundRobinAssignor: partitions in order, dealt to c1, c2, c3, c1, ...
    "roundrobin": {"c3": tps("orders", 2, 5), "c1": tps("orders", 0, 3, 6), "c2": tps("orders", 1, 4)},
    # StickyAssignor, constrained builder (Kafka's seed test): minQuota 2, maxQuota 3, one member over.
    # Round robin over the members sorted by id [c1, c2, c3]: orders-0..2, then orders-3..5 bring each to
    # minQuota (moved to the 'exactly minQuota' queue), orders-6 goes to that queue's head, c1.
    "sticky": {"c3": tps("orders", 2, 5), "c1": tps("orders", 0, 3, 6), "c2": tps("orders", 1, 4)},
    # Same core; nothing owned, so nothing withheld.
    "cooperative-sticky": {"c3": tps("orders", 2, 5), "c1": tps("orders", 0, 3, 6), "c2": tps("orders", 1, 4)},
    # KIP-848 uniform, homogeneous, as Kafka 4.4.0's UniformAssignor answers through the bridge: members in
    # HashMap order c3, c1, c2; since 4.0.1 (KAFKA-18688) a member that owns nothing passes the one extra
    # slot on, so the last one, c2, takes it.
    "uniform": {"c3": tps("orders", 0, 1), "c1": tps("orders", 2, 3), "c2": tps("orders", 4, 5, 6)},
    # KIP-848 range: members sorted by id, ranges as the client-side range.
    "server-range": {"c3": tps("orders", 5, 6), "c1": tps("orders", 0, 1, 2), "c2": tps("orders", 3, 4)},
}


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_fresh_group(capsys, assignor):
    code, doc = assign_json(capsys, assignor, DATA / "group_fresh.json")
    assert code == 0
    assert doc["assignment"] == FRESH[assignor]
    assert list(doc["assignment"]) == ["c3", "c1", "c2"]  # file order
    assert doc["violations"] == [] and doc["broken_guarantees"] == []
    if assignor == "cooperative-sticky":
        assert doc["revoked"] == {} and doc["withheld"] == {}


# --- a rebalance with ownership: c1 owned orders-0..3 and c2 orders-4..6 in generation 4; c3 joined -----------

OWNED = {
    # Range and round robin ignore ownership: as for the fresh group.
    "range": FRESH["range"],
    "roundrobin": FRESH["roundrobin"],
    # Sticky, constrained builder, members in HashMap order c3, c1, c2. c3 owns 0 < minQuota 2: unfilled.
    # c1 owns 4 >= maxQuota 3 and no member is over yet: keeps orders-0..2 (sorted by partition), orders-3
    # may be revoked. c2 owns 3 but the one over-quota slot is taken: keeps minQuota 2 (orders-4, 5).
    # The unassigned orders-3 and orders-6 go round robin to the only unfilled member, c3.
    "sticky": {"c1": tps("orders", 0, 1, 2), "c2": tps("orders", 4, 5), "c3": tps("orders", 3, 6)},
    # The same core, then orders-3 and orders-6 change owner: withheld from c3 until c1 and c2 revoke them.
    "cooperative-sticky": {"c1": tps("orders", 0, 1, 2), "c2": tps("orders", 4, 5), "c3": []},
    # Uniform, as Kafka 4.4.0 answers through the bridge: c1 keeps three of what it owns (the extra slot
    # goes to a member that can fill it from its own partitions), c2 keeps orders-4, 5; c3 gets orders-3, 6.
    "uniform": {"c1": tps("orders", 0, 1, 2), "c2": tps("orders", 4, 5), "c3": tps("orders", 3, 6)},
    "server-range": FRESH["server-range"],
}


def test_reference_class_by_import_path_gets_the_same_subscriptions(capsys):
    code, doc = assign_json(capsys, "kcheck.reference.assignors.sticky:StickyAssignor", DATA / "group_owned.json")
    assert code == 0 and doc["assignment"] == OWNED["sticky"] and doc["guarantees"] == []


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_group_with_ownership(capsys, assignor):
    code, doc = assign_json(capsys, assignor, DATA / "group_owned.json")
    assert code == 0
    assert doc["assignment"] == OWNED[assignor]
    assert doc["broken_guarantees"] == []
    if assignor == "cooperative-sticky":
        assert doc["revoked"] == {"c1": ["orders-3"], "c2": ["orders-6"]}
        assert doc["withheld"] == {"c3": ["orders-3", "orders-6"]}
        assert "assignment.balanced" in doc["not_applicable"]  # judged on the follow-up round
    if assignor in ("sticky", "cooperative-sticky", "uniform"):
        assert doc["violations"] == []
    else:  # range and round robin move more than the counts require: a soft finding, not a failure
        assert [v["invariant"] for v in doc["violations"]] == ["assignment.sticky"]


def test_cooperative_table_shows_revoked_and_withheld(capsys):
    code, out, err = run(capsys, "assign", "--assignor", "cooperative-sticky", str(DATA / "group_owned.json"))
    assert code == 0 and err == ""
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in out.splitlines() if line.startswith("│")}
    # member: rack, assigned, count, revoked, withheld
    assert rows["c1"] == ["-", "orders 0-2", "3", "orders 3", ""]
    assert rows["c2"] == ["-", "orders 4-5", "2", "orders 6", ""]
    assert rows["c3"] == ["-", "", "0", "", "orders 3,6"]
    assert "not applicable here: assignment.balanced" in out


def test_partition_owned_twice_in_one_generation_is_accepted(capsys, tmp_path):
    """Both c1 and c2 claim orders-0 in generation 1: allowed (Kafka resolves it). Cooperative sticky, by hand:
    equal generations, so nobody keeps it (multi-owned); c1 then c2 get orders-0 and orders-1 round robin,
    and orders-0, claimed by several, is withheld from c1 this round. Both claimants revoke it."""
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"topics": {"orders": 2}, "members": {
        "c1": {"topics": ["orders"], "owned": ["orders-0"], "generation": 1},
        "c2": {"topics": ["orders"], "owned": ["orders-0"], "generation": 1}}}))
    code, doc = assign_json(capsys, "cooperative-sticky", path)
    assert code == 0
    assert doc["assignment"] == {"c1": [], "c2": ["orders-1"]}
    assert doc["withheld"] == {"c1": ["orders-0"]}
    assert doc["revoked"] == {"c1": ["orders-0"], "c2": ["orders-0"]}
    code, doc = assign_json(capsys, "sticky", path)  # eager: no withholding
    assert code == 0 and doc["assignment"] == {"c1": ["orders-0"], "c2": ["orders-1"]}
    for server_side in ("uniform", "server-range"):  # a KIP-848 coordinator cannot have two owners
        code, out, err = run(capsys, "assign", "--assignor", server_side, str(path))
        assert code == 2 and out == "" and err == (
            f"kcheck: error: {path}: member c2: owned[0]: partition orders-0 is also owned by member c1; "
            "a KIP-848 group's current assignment gives a partition to one member only\n")


# --- unequal subscriptions, racks, static members ---------------------------------------------------------------


def test_unequal_subscriptions(capsys):
    """t0 (3 partitions) read by c1 only, t1 (2) by c1 and c2."""
    path = DATA / "group_unequal.json"
    # Range, topic by topic: t0 all to c1; t1 one each, c1 first.
    code, doc = assign_json(capsys, "range", path)
    assert code == 0 and doc["assignment"] == {"c1": tps("t0", 0, 1, 2) + tps("t1", 0), "c2": tps("t1", 1)}
    # Round robin over all partitions in (topic, partition) order, skipping members not subscribed:
    # t0-0, t0-1, t0-2 to c1 (c2 skipped each time), t1-0 to c2, t1-1 to c1.
    code, doc = assign_json(capsys, "roundrobin", path)
    assert code == 0 and doc["assignment"] == {"c1": tps("t0", 0, 1, 2) + tps("t1", 1), "c2": tps("t1", 0)}
    # Kafka does not promise balance for either: a soft finding (4 against 1 while c2 could take a t1
    # partition), exit 0.
    assert {v["invariant"] for v in doc["violations"]} == {"assignment.balanced", "assignment.optimally-balanced"}
    assert doc["broken_guarantees"] == []
    # Sticky, general builder: topics by number of subscribers (t0, then t1); each partition goes to the least
    # loaded subscriber: t0-0..2 to c1, then c2 (0) before c1 (3) for t1-0 and t1-1. Balanced.
    code, doc = assign_json(capsys, "sticky", path)
    assert code == 0 and doc["assignment"] == {"c1": tps("t0", 0, 1, 2), "c2": tps("t1", 0, 1)}
    assert doc["violations"] == []


@pytest.mark.parametrize("assignor", ["range", "sticky"])
def test_rack_aware_assignment(capsys, assignor):
    """KIP-881: t-0, t-2 have replicas in rack a, t-1, t-3 in rack b; c1 is in b, c2 in a. Each member gets the
    two partitions of its rack (range: rack-matching pass first; sticky: rack-aware round robin)."""
    code, doc = assign_json(capsys, assignor, DATA / "group_racks.json")
    assert code == 0
    assert doc["assignment"] == {"c1": tps("t", 1, 3), "c2": tps("t", 0, 2)}
    assert "assignment.rack-quality" in doc["checked"] and doc["violations"] == []


@pytest.mark.parametrize("assignor", ["range", "server-range"])
def test_static_members_come_first(capsys, tmp_path, assignor):
    """Range orders static members (by group.instance.id) before dynamic ones (by member id): c3 first."""
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"topics": {"orders": 7}, "members": {
        "c1": ["orders"], "c2": ["orders"], "c3": {"topics": ["orders"], "instance_id": "host-3"}}}))
    code, doc = assign_json(capsys, assignor, path)
    assert code == 0
    assert doc["assignment"] == {"c1": tps("orders", 3, 4), "c2": tps("orders", 5, 6), "c3": tps("orders", 0, 1, 2)}
    code, out, _ = run(capsys, "assign", "--assignor", assignor, str(path))
    assert "instance id" in out and "host-3" in out


# --- the subscriptions a group file turns into --------------------------------------------------------------------


def test_subscriptions_carry_what_each_client_sends():
    group = parse_group((DATA / "group_owned.json").read_text(), "g")
    owned_c2 = (TopicPartition("orders", 4), TopicPartition("orders", 5), TopicPartition("orders", 6))
    sticky = group.subscriptions("sticky")
    # StickyAssignor: ownership as user data (schema V1), as subscriptionUserData writes it after onAssignment.
    md = deserialize_topic_partition_assignment(sticky["c2"].user_data)
    assert (md.partitions, md.generation) == (owned_c2, 4)
    assert sticky["c3"].user_data is None  # a fresh StickyAssignor sends none
    assert sticky["c2"].owned_partitions == owned_c2 and sticky["c2"].generation_id == 4
    coop = group.subscriptions("cooperative-sticky")
    assert coop["c2"].user_data == (4).to_bytes(4, "big")  # {generation:int32}
    assert coop["c3"].user_data == (-1).to_bytes(4, "big", signed=True)  # before any assignment
    assert coop["c2"].owned_partitions == owned_c2 and coop["c2"].generation_id == 4
    assert group.subscriptions("range")["c2"].user_data is None


def test_racks_become_replica_brokers():
    group = parse_group((DATA / "group_racks.json").read_text(), "g")
    assert [[b.rack for b in p.replicas] for p in group.partitions_per_topic["t"]] == [["a"], ["b"], ["a"], ["b"]]
    fresh = parse_group((DATA / "group_fresh.json").read_text(), "g")
    assert not fresh.has_racks and fresh.partitions_per_topic["orders"][6].replicas == ()


def test_partition_runs():
    assert partition_runs([TopicPartition("b", 5), TopicPartition("a", 0), TopicPartition("b", 3),
                           TopicPartition("b", 4), TopicPartition("b", 0)]) == "b 0,3-5; a 0"
    assert partition_runs([]) == ""


# --- exit status 1 --------------------------------------------------------------------------------------------------

USER_ASSIGNORS = '''
from kcheck.model.vocabulary import TopicPartition
from kcheck.reference.assignors.registry import AssignorInfo

class AllToFirst:
    def name(self):
        return "all-to-first"
    def assign_partitions(self, ppt, subs):
        first = next(iter(subs))
        return {m: [p.tp for ps in ppt.values() for p in ps] if m == first else [] for m in subs}

class Everyone:
    def assign_partitions(self, ppt, subs):
        return {m: [p.tp for ps in ppt.values() for p in ps] for m in subs}

class Throws:
    def assign_partitions(self, ppt, subs):
        raise ZeroDivisionError("division by zero")

class Junk:
    def assign_partitions(self, ppt, subs):
        return {m: ["orders-0"] for m in subs}

class Stranger:
    def assign_partitions(self, ppt, subs):
        return {"nobody": []}

BALANCED_ALL_TO_FIRST = AssignorInfo("balanced-all-to-first", AllToFirst, False, frozenset({"assignment.balanced"}))
'''


@pytest.fixture
def user_assignors(tmp_path, monkeypatch):
    (tmp_path / "my_assignors.py").write_text(USER_ASSIGNORS)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_user_assignor_without_guarantees_only_has_findings(capsys, user_assignors):
    code, doc = assign_json(capsys, "my_assignors:AllToFirst", DATA / "group_fresh.json")
    assert code == 0  # unbalanced (soft), but it promises nothing
    assert doc["assignment"]["c3"] == tps("orders", *range(7))
    assert "assignment.balanced" in {v["invariant"] for v in doc["violations"]}
    assert doc["guarantees"] == [] and doc["broken_guarantees"] == []


def test_broken_guarantee_exits_1(capsys, user_assignors):
    code, doc = assign_json(capsys, "my_assignors:BALANCED_ALL_TO_FIRST", DATA / "group_fresh.json")
    assert code == 1 and doc["exit_status"] == 1
    assert doc["ok"] is True  # no hard violation: it fails on the soft invariant it guarantees
    assert doc["broken_guarantees"] == ["assignment.balanced"]
    code, out, _ = run(capsys, "assign", "--assignor", "my_assignors:BALANCED_ALL_TO_FIRST",
                       str(DATA / "group_fresh.json"))
    assert code == 1 and "FAIL: balanced-all-to-first breaks what it declares: assignment.balanced" in out


def test_hard_violation_exits_1(capsys, user_assignors):
    code, doc = assign_json(capsys, "my_assignors:Everyone", DATA / "group_fresh.json")
    assert code == 1 and doc["ok"] is False
    assert {v["invariant"] for v in doc["violations"] if v["severity"] == "hard"} == {"assignment.complete"}


@pytest.mark.parametrize("name, message", [
    ("my_assignors:Throws", "kcheck: error: plug-in my_assignors:Throws: ZeroDivisionError: division by zero (at "),
    ("my_assignors:Junk",
     'kcheck: error: plug-in my_assignors:Junk: bad result: gave member c3 "orders-0", not a TopicPartition'),
    ("my_assignors:Stranger", "kcheck: error: plug-in my_assignors:Stranger: bad result: assigned "
                              'partitions to "nobody", which is not a member'),
])
def test_failing_user_assignor_is_the_plugins_failure(capsys, user_assignors, name, message):
    """A user's assignor that raises or answers malformed data failed itself, not Kafka: one line, exit 2."""
    for extra in ([], ["--json"]):
        code, out, err = run(capsys, "assign", *extra, "--assignor", name, str(DATA / "group_fresh.json"))
        assert code == 2 and out == "" and err.startswith(message) and err.count("\n") == 1, err


def test_kafka_exception_exits_1(capsys, tmp_path):
    """A valid group on which Kafka's StickyAssignor throws (general builder, a stale previous owner set
    aside as 'fixed' is dereferenced: an NPE; see test_assignors_sticky): the rebalance fails, exit 1."""
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"topics": {"t1": 1, "t2": 4}, "members": {
        "F": {"topics": ["t1"], "owned": ["t1-0", "t2-0"], "generation": 1},
        "A": {"topics": ["t2"], "owned": ["t2-0", "t2-1", "t2-2", "t2-3"], "generation": 2},
        "B": ["t2"]}}))
    code, out, err = run(capsys, "assign", "--assignor", "sticky", str(path))
    assert code == 1 and err == ""
    # Java's own helpful-NPE text, as the real StickyAssignor throws it (tests/test_kafka_client_assignors.py)
    assert out == ("FAIL: sticky assignor throws NullPointerException: Cannot invoke \"java.util.List.size()\" "
                   "because the return value of \"java.util.Map.get(Object)\" is null\n")


# --- --json shape and stdin -----------------------------------------------------------------------------------------


def test_json_shape(capsys):
    code, doc = assign_json(capsys, "cooperative-sticky", DATA / "group_owned.json")
    assert code == 0
    assert list(doc) == ["group", "assignor", "kafka_version", "cooperative", "partitions", "members", "assignment",
                         "revoked", "withheld", "guarantees", "broken_guarantees", "exit_status", "ok", "checked",
                         "not_applicable", "violations"]
    assert doc["group"] == str(DATA / "group_owned.json") and doc["assignor"] == "cooperative-sticky"
    assert doc["cooperative"] is True and doc["partitions"] == 7 and doc["members"] == 3
    assert doc["guarantees"] == ["assignment.balanced", "assignment.complete", "assignment.cooperative-safety",
                                 "assignment.valid"]
    code, doc = assign_json(capsys, "range", DATA / "group_owned.json")
    assert "revoked" not in doc and "withheld" not in doc and doc["cooperative"] is False
    v = doc["violations"][0]
    assert set(v) == {"invariant", "severity", "where", "message", "detail"}


def test_stdin(capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO((DATA / "group_fresh.json").read_text()))
    code, doc = assign_json(capsys, "range", "-")
    assert code == 0 and doc["group"] == "<stdin>" and doc["assignment"] == FRESH["range"]


def test_default_assignor_is_range(capsys):
    code, out, _ = run(capsys, "assign", str(DATA / "group_fresh.json"))
    assert code == 0 and out.startswith("range assignment of")


# --- bad input: exit 2, one line naming the place --------------------------------------------------------------------

OK_MEMBERS = '"members": {"c1": ["orders"]}'
BAD_GROUPS = [
    ('{"topics": {"orders": 1},\n "members": {', ":2:14: invalid JSON"),
    ("[1, 2]", "the file: expected an object, got [1, 2]"),
    ('{"topics": {"orders": 1}}', 'missing "members"'),
    ('{"members": {"c1": ["orders"]}}', 'missing "topics"'),
    ('{"topics": {"orders": 1}, ' + OK_MEMBERS + ', "member": {}}',
     'the file: unknown key "member" (expected topics, members, description)'),
    ('{"description": 3, "topics": {"orders": 1}, ' + OK_MEMBERS + "}", '"description" must be a string, got 3'),
    ('{"topics": ["orders"], ' + OK_MEMBERS + "}", '"topics" must be an object of topic name -> partition count'),
    ('{"topics": {}, ' + OK_MEMBERS + "}", '"topics" is empty'),
    ('{"topics": {"orders": -3}, ' + OK_MEMBERS + "}",
     "topic orders: the partition count must be an integer from 1 to 2147483647, got -3"),
    ('{"topics": {"orders": 0}, ' + OK_MEMBERS + "}", "topic orders: the partition count must be an integer"),
    ('{"topics": {"orders": true}, ' + OK_MEMBERS + "}", "topic orders: the partition count must be an integer"),
    ('{"topics": {"orders": 1.5}, ' + OK_MEMBERS + "}", "got 1.5"),
    ('{"topics": {"orders": 2147483648}, ' + OK_MEMBERS + "}", "got 2147483648"),
    ('{"topics": {"orders": {"racks": [["a"]]}}, ' + OK_MEMBERS + "}", 'topic orders: missing "partitions"'),
    ('{"topics": {"orders": {"partitions": 1, "replicas": 3}}, ' + OK_MEMBERS + "}",
     'topic orders: unknown key "replicas" (expected partitions, racks)'),
    ('{"topics": {"orders": {"partitions": 2, "racks": [["a"]]}}, ' + OK_MEMBERS + "}",
     'topic orders: "racks" has 1 entries but the topic has 2 partitions'),
    ('{"topics": {"orders": {"partitions": 1, "racks": "a"}}, ' + OK_MEMBERS + "}",
     'topic orders: "racks" must be a list'),
    ('{"topics": {"orders": {"partitions": 2, "racks": [["a"], []]}}, ' + OK_MEMBERS + "}",
     "topic orders: racks[1] (partition 1): expected a non-empty list of the racks of its replicas, got []"),
    ('{"topics": {"orders": {"partitions": 1, "racks": [["a", 7]]}}, ' + OK_MEMBERS + "}",
     "topic orders: racks[0] (partition 0): replica 1's rack must be a rack name or null, got 7"),
    ('{"topics": {"orders": {"partitions": 1, "racks": [[" "]]}}, ' + OK_MEMBERS + "}",
     "replica 0's rack must be a rack name or null"),
    ('{"topics": {"bad topic": 1}, ' + OK_MEMBERS + "}",
     "topic \"bad topic\": the name is not a legal topic name (ASCII letters, digits, '.', '_' and '-' only)"),
    ('{"topics": {"..": 1}, ' + OK_MEMBERS + "}", "topic ..: the name cannot be '.' or '..'"),
    ('{"topics": {"' + "t" * 250 + '": 1}, ' + OK_MEMBERS + "}", "the name is longer than 249 characters"),
    ('{"topics": {"orders": 1, "orders": 2}, ' + OK_MEMBERS + "}", "topic orders is listed twice"),
    ('{"topics": {"orders": 6000000, "payments": 6000000}, ' + OK_MEMBERS + "}",
     "topic orders: more than 2,000,000 partitions in all"),
    ('{"topics": {"orders": 1}, "members": ["c1"]}', '"members" must be an object of member id -> subscription'),
    ('{"topics": {"orders": 1}, "members": {}}', '"members" is empty: the group has no member to assign to'),
    ('{"topics": {"orders": 1}, "members": {"c1": ["orders"], "c1": ["orders"]}}', "member c1 is listed twice"),
    ('{"topics": {"orders": 1}, "members": {"": ["orders"]}}', 'member "": a member id cannot be empty'),
    ('{"topics": {"orders": 1}, "members": {"c1": "orders"}}',
     'member c1: expected an object like {"topics": ["orders"]} or a topic list, got "orders"'),
    ('{"topics": {"orders": 1}, "members": {"c1": {"owned": []}}}', 'member c1: missing "topics"'),
    ('{"topics": {"orders": 1}, "members": {"c1": {"topics": ["orders"], "owend": []}}}',
     'member c1: unknown key "owend" (expected topics, owned, generation, rack, instance_id)'),
    ('{"topics": {"orders": 1}, "members": {"c1": {"topics": ["orders"], "topics": []}}}',
     'member c1: "topics" is given twice'),
    ('{"topics": {"orders": 1}, "members": {"c1": ["payments"]}}',
     'member c1: subscribes to unknown topic payments (not in "topics")'),
    ('{"topics": {"orders": 1}, "members": {"c1": {"topics": "orders"}}}',
     'member c1: "topics" must be a list of topic names, got "orders"'),
    ('{"topics": {"orders": 1}, "members": {"c1": ["orders", "orders"]}}',
     "member c1: subscribes to topic orders twice"),
    ('{"topics": {"orders": 1}, "members": {"c1": {"topics": ["orders"], "owned": "orders-0", "generation": 1}}}',
     'member c1: "owned" must be a list of partitions like "orders-0", got "orders-0"'),
    ('{"topics": {"orders": 1}, "members": {"c1": {"topics": ["orders"], "owned": ["orders"], "generation": 1}}}',
     'member c1: owned[0]: "orders" is not a partition like "orders-0"'),
    ('{"topics": {"orders": 1}, "members": {"c1": {"topics": ["orders"], "owned": ["nope-0"], "generation": 1}}}',
     'member c1: owned[0]: partition nope-0 is of unknown topic nope (not in "topics")'),
    ('{"topics": {"orders": 2}, "members": {"c1": {"topics": ["orders"], "owned": ["orders-2"], "generation": 1}}}',
     "member c1: owned[0]: partition orders-2 does not exist (topic orders has 2 partitions: 0..1)"),
    ('{"topics": {"orders": 2}, "members": {"c1": {"topics": ["orders"], "owned": ["orders-1", "orders-1"], '
     '"generation": 1}}}', "member c1: owned[1]: partition orders-1 is listed twice"),
    ('{"topics": {"orders": 2}, "members": {"c1": {"topics": ["orders"], "owned": [{"topic": "orders"}], '
     '"generation": 1}}}', 'member c1: owned[0]: "partition" must be an integer >= 0, got null'),
    ('{"topics": {"orders": 2}, "members": {"c1": {"topics": ["orders"], '
     '"owned": [{"topic": "orders", "partition": 0, "leader": 1}], "generation": 1}}}',
     'member c1: owned[0]: unknown key "leader" (expected topic, partition)'),
    ('{"topics": {"orders": 2}, "members": {"c1": {"topics": ["orders"], "owned": [3], "generation": 1}}}',
     'member c1: owned[0]: expected "topic-partition" or {"topic": ..., "partition": ...}, got 3'),
    ('{"topics": {"orders": 2}, "members": {"c1": {"topics": ["orders"], "owned": ["orders-0"]}}}',
     'member c1: "owned" partitions need the "generation" the member owned them in'),
    ('{"topics": {"orders": 2}, "members": {"c1": {"topics": ["orders"], "generation": -1}}}',
     'member c1: "generation" must be an integer >= 0 or null, got -1'),
    ('{"topics": {"orders": 2}, "members": {"c1": {"topics": ["orders"], "generation": "4"}}}',
     'member c1: "generation" must be an integer >= 0 or null, got "4"'),
    ('{"topics": {"orders": 2}, "members": {"c1": {"topics": ["orders"], "rack": ""}}}',
     'member c1: "rack" is empty (use null for none)'),
    ('{"topics": {"orders": 2}, "members": {"c1": {"topics": ["orders"], "rack": 1}}}',
     'member c1: "rack" must be a string or null, got 1'),
    ('{"topics": {"orders": 2}, "members": {"c1": {"topics": ["orders"], "instance_id": "h"}, '
     '"c2": {"topics": ["orders"], "instance_id": "h"}}}',
     "member c2: instance_id h is already member c1's (a static member joins once)"),
]


@pytest.mark.parametrize("text, message", BAD_GROUPS)
def test_bad_group_exits_2_with_one_line(capsys, tmp_path, text, message):
    path = tmp_path / "group.json"
    path.write_text(text)
    code, out, err = run(capsys, "assign", "--assignor", "sticky", str(path))
    assert code == 2 and out == ""
    assert err.startswith(f"kcheck: error: {path}:") and err.count("\n") == 1  # path: or path:line:column:
    assert message in err
    with pytest.raises(InputError):  # the library raises the same
        parse_group(text, "g")


@pytest.mark.parametrize("args, message", [
    (["--assignor", "sticky", "missing.json"], "kcheck: error: missing.json: no such file"),
    (["--assignor", "fancy", "GROUP"],
     "kcheck: error: --assignor: unknown assignor 'fancy' (expected one of range, roundrobin, sticky, "
     "cooperative-sticky, uniform, server-range, or module:object)"),
    (["--assignor", "no_such_module_here:X", "GROUP"], "kcheck: error: --assignor: cannot import module "
                                                       "'no_such_module_here'"),
    (["--assignor", "kcheck.inputs.group_file:MAX_INT", "GROUP"],
     "kcheck: error: --assignor: 'kcheck.inputs.group_file:MAX_INT' "
     "is not a class or factory of assignors"),
    (["--assignor", "sticky", "EMPTY"], "file is empty"),
    ([], "kcheck: error: Missing argument 'group'."),
])
def test_bad_arguments_exit_2(capsys, tmp_path, args, message):
    (tmp_path / "empty.json").write_text("  \n")
    args = [str(DATA / "group_fresh.json") if a == "GROUP" else str(tmp_path / "empty.json") if a == "EMPTY" else a
            for a in args]
    code, out, err = run(capsys, "assign", *args)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(message) or message in err


def test_non_utf8_file_exits_2(capsys, tmp_path):
    path = tmp_path / "g.json"
    path.write_bytes(b'{"topics": {"\xff": 1}}')
    code, _, err = run(capsys, "assign", str(path))
    assert code == 2 and err == f"kcheck: error: {path}: is not UTF-8 text (byte 0xff at offset 13)\n"


def test_user_text_cannot_break_the_one_line_error(capsys, tmp_path):
    path = tmp_path / "g.json"
    path.write_text('{"topics": {"orders": 1}, "members": {"c1\\nc2": ["nope"]}}')
    code, _, err = run(capsys, "assign", str(path))
    assert code == 2 and err.count("\n") == 1 and 'member "c1\\nc2"' in err


def test_member_ids_are_not_rich_markup(capsys, tmp_path):
    path = tmp_path / "[red]g.json"
    path.write_text(json.dumps({"topics": {"orders": 1},
                                "members": {"[bold]c1": {"topics": ["orders"], "rack": "[i]r"}}}))
    code, out, _ = run(capsys, "assign", str(path))
    assert code == 0 and "[bold]c1" in out and "[i]r" in out and f"range assignment of {path}:" in out
