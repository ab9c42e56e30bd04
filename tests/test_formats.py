"""Kafka's formats: reassignment JSON, `kafka-topics --describe` text of every era, broker rack files.

The inputs below are written by hand after real tool output (after
Kafka's TopicCommand and ReassignPartitionsCommand output); tabs are spelled `\\t` so they survive editors.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcheck.inputs.formats import (
    InputError,
    format_reassignment_json,
    parse_brokers,
    parse_describe,
    parse_plan,
    parse_reassignment_json,
    read_text,
)
from kcheck.model import NO_LEADER, Broker, PartitionReplicas, ReplicaAssignment


def error_of(fn, text: str, source: str = "in.txt") -> str:
    with pytest.raises(InputError) as info:
        fn(text, source)
    message = str(info.value)
    assert "\n" not in message and "\r" not in message
    assert message.startswith(source)
    return message


def rows(assignment: ReplicaAssignment) -> list[tuple]:
    return [(p.topic, p.partition, p.replicas, p.leader, p.isr) for p in assignment]


# ---------------------------------------------------------------------------------------------
# kafka-topics --describe

# Kafka 2.4 - 2.7 (ZooKeeper): spaces after colons, no TopicId, no Elr.
DESCRIBE_2X = (
    "Topic: orders\tPartitionCount: 3\tReplicationFactor: 3\t"
    "Configs: min.insync.replicas=2,retention.ms=604800000\n"
    "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\n"
    "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3\n"
    "\tTopic: orders\tPartition: 2\tLeader: none\tReplicas: 3,1,2\tIsr: \n"
    "Topic: __consumer_offsets\tPartitionCount: 2\tReplicationFactor: 3\tConfigs: "
    "compression.type=producer,cleanup.policy=compact,segment.bytes=104857600\n"
    "\tTopic: __consumer_offsets\tPartition: 0\tLeader: 3\tReplicas: 3,1,2\tIsr: 3,1,2\n"
    "\tTopic: __consumer_offsets\tPartition: 1\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\n"
)


def test_describe_2x_without_topic_id():
    a = parse_describe(DESCRIBE_2X, "d.txt")
    assert rows(a) == [
        ("__consumer_offsets", 0, (3, 1, 2), 3, (3, 1, 2)),
        ("__consumer_offsets", 1, (1, 2, 3), 1, (1, 2, 3)),
        ("orders", 0, (1, 2, 3), 1, (1, 2, 3)),
        ("orders", 1, (2, 3, 1), 2, (2, 3)),
        ("orders", 2, (3, 1, 2), NO_LEADER, ()),
    ]
    assert a.replication_factors == {"orders": 3, "__consumer_offsets": 3}
    assert all(p.adding == () and p.removing == () and p.log_dirs is None for p in a)


# Kafka 3.8+ on KRaft: TopicId, Elr and LastKnownElr (empty, a list, or N/A), MarkedForDeletion.
DESCRIBE_KRAFT = (
    "Topic: payments\tTopicId: qL0Vt3mYRkOaM7cB2xS1dw\tPartitionCount: 2\tReplicationFactor: 2\t"
    "Configs: min.insync.replicas=1,cleanup.policy=compact\n"
    "\tTopic: payments\tPartition: 0\tLeader: 4\tReplicas: 4,5\tIsr: 4,5\tElr: \tLastKnownElr: \n"
    "\tTopic: payments\tPartition: 1\tLeader: 5\tReplicas: 5,6\tIsr: 5\tElr: 6\tLastKnownElr: 6\n"
    "Topic: old-logs\tTopicId: 5hS4KXn2QZyW0uR1mB9xZg\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \t"
    "MarkedForDeletion: true\n"
    "\tTopic: old-logs\tPartition: 0\tLeader: none\tReplicas: 7\tIsr: \tElr: N/A\tLastKnownElr: N/A\t"
    "MarkedForDeletion: true\n"
)


def test_describe_kraft_with_topic_id_and_elr():
    a = parse_describe(DESCRIBE_KRAFT, "d.txt")
    assert rows(a) == [
        ("old-logs", 0, (7,), NO_LEADER, ()),
        ("payments", 0, (4, 5), 4, (4, 5)),
        ("payments", 1, (5, 6), 5, (5,)),
    ]
    assert a.replication_factors == {"payments": 2, "old-logs": 1}


# Reassignment in flight: Replicas holds old and new; Adding/Removing since 2.6 (KAFKA-9688).
DESCRIBE_REASSIGNING = (
    "Topic: foo\tTopicId: 9aT1nQx0R3mVb7cYw2LkPg\tPartitionCount: 2\tReplicationFactor: 3\tConfigs: \n"
    "\tTopic: foo\tPartition: 0\tLeader: 1\tReplicas: 4,1,2,3\tIsr: 1,2,3\tAdding Replicas: 4\t"
    "Removing Replicas: 3\tElr: \tLastKnownElr: \n"
    "\tTopic: foo\tPartition: 1\tLeader: 2\tReplicas: 5,6,2,3,1\tIsr: 2,3,1\tAdding Replicas: 5,6\t"
    "Removing Replicas: 3,1\tElr: \tLastKnownElr: \n"
)


def test_describe_mid_reassignment():
    a = parse_describe(DESCRIBE_REASSIGNING, "d.txt")
    p0, p1 = a.partitions
    assert (p0.replicas, p0.adding, p0.removing, p0.target_replicas) == ((4, 1, 2, 3), (4,), (3,), (4, 1, 2))
    assert (p1.adding, p1.removing, p1.target_replicas) == ((5, 6), (3, 1), (5, 6, 2))
    assert a.replication_factors == {"foo": 3}


def test_describe_2_6_reassignment_has_trailing_tab_and_no_elr():
    text = ("\tTopic: foo\tPartition: 0\tLeader: 1\tReplicas: 1,2,3,4\tIsr: 1,2,3\t"
            "Adding Replicas: 4\tRemoving Replicas: 1\t\n")
    (p,) = parse_describe(text, "d.txt").partitions
    assert (p.replicas, p.isr, p.adding, p.removing) == ((1, 2, 3, 4), (1, 2, 3), (4,), (1,))


# Before 2.4 (still in docs/ops.html): no space after colons in the header; partition lines
# had spaces in some versions and not in others; no-leader printed as -1.
DESCRIBE_PRE_2_4 = (
    "Topic:foo\tPartitionCount:2\tReplicationFactor:2\tConfigs:\n"
    "\tTopic: foo\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n"
    "\tTopic:foo\tPartition:1\tLeader:-1\tReplicas:2,1\tIsr:\n"
    "Topic:bar\tPartitionCount:1\tReplicationFactor:1\tConfigs:cleanup.policy=compact,segment.ms=100\n"
    "\tTopic:bar\tPartition:0\tLeader:0\tReplicas:0\tIsr:0\n"
)


def test_describe_pre_2_4_without_spaces():
    a = parse_describe(DESCRIBE_PRE_2_4, "d.txt")
    assert rows(a) == [
        ("bar", 0, (0,), 0, (0,)),
        ("foo", 0, (1, 2), 1, (1, 2)),
        ("foo", 1, (2, 1), NO_LEADER, ()),
    ]
    assert a.replication_factors == {"foo": 2, "bar": 1}


# Copied from a terminal or a chat: tabs became runs of spaces, indentation lost or changed,
# CRLF line ends, blank lines between topics.
DESCRIBE_MANGLED = (
    "Topic: orders    TopicId: 5hS4KXn2QZyW0uR1mB9xZg    PartitionCount: 2   ReplicationFactor: 2  "
    "Configs: min.insync.replicas=2,cleanup.policy=delete\r\n"
    "        Topic: orders   Partition: 0    Leader: 1       Replicas: 1,2   Isr: 1,2  "
    "Elr:   LastKnownElr:  \r\n"
    "Topic: orders Partition: 1 Leader: 2 Replicas: 2,3 Isr: 2 Adding  Replicas: 3 Removing Replicas: 1 \r\n"
    "\r\n"
    "   \r\n"
    "  Topic: logs  Partition: 0  Leader: none  Replicas: 3, 1  Isr:\r\n"
)


def test_describe_whitespace_mangled_paste():
    a = parse_describe(DESCRIBE_MANGLED, "d.txt")
    assert rows(a) == [
        ("logs", 0, (3, 1), NO_LEADER, ()),
        ("orders", 0, (1, 2), 1, (1, 2)),
        ("orders", 1, (2, 3), 2, (2,)),
    ]
    assert (a.partitions[2].adding, a.partitions[2].removing) == ((3,), (1,))
    assert a.replication_factors == {"orders": 2}


def test_describe_filtered_output_has_no_headers():
    # kafka-topics --describe --under-replicated-partitions prints partition lines only.
    text = (
        "\tTopic: foo\tPartition: 2\tLeader: 3\tReplicas: 3,1,2\tIsr: 3\n"
        "\tTopic: bar\tPartition: 0\tLeader: none\tReplicas: 1,2\tIsr: \n"
    )
    a = parse_describe(text, "d.txt")
    assert rows(a) == [("bar", 0, (1, 2), NO_LEADER, ()), ("foo", 2, (3, 1, 2), 3, (3,))]
    assert a.replication_factors == {}


def test_describe_header_may_promise_more_partitions_than_follow():
    text = ("Topic: foo\tPartitionCount: 6\tReplicationFactor: 2\tConfigs: \n"
            "\tTopic: foo\tPartition: 4\tLeader: 1\tReplicas: 1,2\tIsr: 1\n")
    assert [p.partition for p in parse_describe(text, "d.txt")] == [4]


def test_describe_isr_is_optional_and_offline_accepted():
    text = "Topic: foo\tPartition: 0\tLeader: none\tReplicas: 1,2\tOffline: 1,2\n"
    (p,) = parse_describe(text, "d.txt").partitions
    assert p.isr is None and p.leader == NO_LEADER


def test_describe_leading_bom_is_ignored():
    assert len(parse_describe("\ufeffTopic: foo\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n", "d")) == 1


@pytest.mark.parametrize("text, fragments", [
    # a log line before the output
    (("\tTopic: foo\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n"
      "[2024-05-01 10:00:00,123] WARN [AdminClient clientId=adminclient-1] Connection to node 3 "
      "could not be established\n"),
     [":2:", 'not a kafka-topics --describe line: "[2024-05-01 10:00:00,123] WARN [Admin..."']),
    ("Error while executing topic command : Topic 'foo' does not exist as expected\n",
     [":1:", '"Error while executing topic command :..."']),
    ("junk Topic: foo\tPartition: 0\tLeader: 1\tReplicas: 1\n", [":1:", '"junk Topic: foo']),
    ("\n\n\tTopic: foo\tPartition: 0\tReplicas: 1,2\tIsr: 1,2\n", [":3:", "no Leader: field"]),
    ("\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n", [":1:", "no Topic: field"]),
    ("\tTopic: foo\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n", [":1:", "no Partition: field"]),
    ("\tTopic: foo\tPartition: 0\tLeader: 1\tIsr: 1,2\n", [":1:", "no Replicas: field"]),
    (("Topic: foo\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: \n"
      "\tTopic: foo\tPartition: 0\tLeader: 1\tReplicas: 1,x,3\tIsr: 1\n"),
     [":2:", 'Replicas: "1,x,3" is not a list of broker ids']),
    ("\tTopic: foo\tPartition: 0\tLeader: 1\tReplicas: 1,,3\tIsr: 1\n", [":1:", '"1,,3"']),
    ("\tTopic: foo\tPartition: 0\tLeader: 1\tReplicas: \tIsr: 1\n",
     [":1:", "foo-0", "Replicas: is empty"]),
    ("\tTopic: foo\tPartition: 0\tLeader: 1\tReplicas: 1,2,1\tIsr: 1\n",
     [":1:", "partition foo-0", "contains broker 1 twice"]),
    (("\tTopic: foo\tPartition: 0\tLeader: 1\tReplicas: 1,2\n\n"
      "\tTopic: bar\tPartition: 0\tLeader: 1\tReplicas: 1\n"
      "\tTopic: foo\tPartition: 0\tLeader: 2\tReplicas: 2,1\n"),
     [":4:", "partition foo-0 is listed twice (lines 1 and 4)"]),
    ("\tTopic: foo\tPartition: -1\tLeader: 1\tReplicas: 1\n",
     [":1:", 'Partition: "-1" is not a partition id']),
    ("\tTopic: foo\tPartition: zero\tLeader: 1\tReplicas: 1\n", [":1:", 'Partition: "zero"']),
    ("\tTopic: foo\tPartition: 0\tLeader: leader1\tReplicas: 1\n",
     [":1:", 'Leader: "leader1" is not a broker id']),
    ("\tTopic: foo\tPartition: 0\tLeader: -2\tReplicas: 1\n", [":1:", 'Leader: "-2"']),
    ("\tTopic: foo\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1;2\n", [":1:", 'Isr: "1;2"']),
    ("\tTopic: foo\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\tElr: x\tLastKnownElr: \n",
     [":1:", 'Elr: "x"']),
    ("\tTopic: foo\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\tAdding Replicas: 3?\n",
     [":1:", 'Adding Replicas: "3?"']),
    ("\tTopic: foo bar\tPartition: 0\tLeader: 1\tReplicas: 1\n",
     [":1:", 'Topic: "foo bar" is not a topic name']),
    ("\tTopic: \tPartition: 0\tLeader: 1\tReplicas: 1\n", [":1:", 'Topic: ""']),
    ("\tTopic: foo\tPartition: 0\tLeader: 1\tLeader: 2\tReplicas: 1\n", [":1:", "Leader: appears twice"]),
    (("PartitionCount: 1\tReplicationFactor: 1\tConfigs: \n"
      "\tTopic: foo\tPartition: 0\tLeader: 1\tReplicas: 1\n"),
     [":1:", "no Topic: field"]),
    ("Topic: foo\tPartitionCount: 1\tReplicationFactor: three\tConfigs: \n",
     [":1:", 'ReplicationFactor: "three"']),
    ("Topic: foo\tPartitionCount: -1\tReplicationFactor: 3\tConfigs: \n", [":1:", 'PartitionCount: "-1"']),
    (("Topic: foo\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: \n"
      "Topic: foo\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: \n"),
     [":2:", "topic foo: ReplicationFactor 2 contradicts ReplicationFactor 3 on line 1"]),
    # headers only, or nothing at all
    ("Topic: foo\tTopicId: 5hS4KXn2QZyW0uR1mB9xZg\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: \n",
     ["in.txt: no partitions found"]),
    ("", ["in.txt: no partitions found"]),
    ("  \n\t\n", ["in.txt: no partitions found"]),
])
def test_describe_errors_name_the_line(text, fragments):
    message = error_of(parse_describe, text)
    for fragment in fragments:
        assert fragment in message, message


# ---------------------------------------------------------------------------------------------
# Reassignment JSON


def test_reassignment_json_with_and_without_log_dirs():
    text = """{"version": 1,
      "partitions": [
        {"topic": "foo", "partition": 1, "replicas": [1, 2, 3], "log_dirs": ["any", "/data/d2", "any"]},
        {"topic": "foo", "partition": 0, "replicas": [3, 1, 2]},
        {"topic": "bar", "partition": 0, "replicas": [7], "comment": "extra keys are ignored"}
      ],
      "generated-by": "someone else"}"""
    a = parse_reassignment_json(text, "plan.json")
    assert a.partitions == (
        PartitionReplicas("bar", 0, (7,)),
        PartitionReplicas("foo", 0, (3, 1, 2)),
        PartitionReplicas("foo", 1, (1, 2, 3), log_dirs=("any", "/data/d2", "any")),
    )
    assert all(p.leader is None and p.isr is None for p in a)
    assert a.replication_factors == {}


def test_format_matches_kafka_unit_test_output():
    a = ReplicaAssignment((PartitionReplicas("bar", 0, (7, 8)),))
    assert format_reassignment_json(a) == (
        '{"version":1,"partitions":['
        '{"topic":"bar","partition":0,"replicas":[7,8],"log_dirs":["any","any"]}]}')


def test_format_sorts_and_keeps_log_dirs():
    a = ReplicaAssignment((
        PartitionReplicas("foo", 10, (1,)),
        PartitionReplicas("foo", 2, (2, 1), log_dirs=("/d1", "any")),
        PartitionReplicas("bar", 1, (3,)),
    ))
    assert format_reassignment_json(a) == (
        '{"version":1,"partitions":['
        '{"topic":"bar","partition":1,"replicas":[3],"log_dirs":["any"]},'
        '{"topic":"foo","partition":2,"replicas":[2,1],"log_dirs":["/d1","any"]},'
        '{"topic":"foo","partition":10,"replicas":[1],"log_dirs":["any"]}]}')


def test_format_then_parse_of_describe_keeps_replicas():
    a = parse_describe(DESCRIBE_2X, "d.txt")
    back = parse_reassignment_json(format_reassignment_json(a), "plan.json")
    assert [(p.tp, p.replicas) for p in back] == [(p.tp, p.replicas) for p in a]


LEGAL_TOPIC_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
topics = st.text(alphabet=LEGAL_TOPIC_CHARS, min_size=1, max_size=12).filter(lambda t: t not in (".", ".."))
ids = st.integers(min_value=0, max_value=2**31 - 1)


@st.composite
def assignments(draw) -> ReplicaAssignment:
    keys = draw(st.lists(st.tuples(topics, ids), min_size=1, max_size=8, unique=True))
    parts = []
    for topic, partition in keys:
        replicas = draw(st.lists(ids, min_size=1, max_size=5, unique=True))
        log_dirs = draw(st.none() | st.lists(st.sampled_from(["any", "/data/a", "/data/b"]),
                                             min_size=len(replicas), max_size=len(replicas)))
        parts.append(PartitionReplicas(topic, partition, replicas, log_dirs=log_dirs))
    return ReplicaAssignment(tuple(parts))


@given(assignments())
def test_format_then_parse_round_trips(a):
    text = format_reassignment_json(a)
    back = parse_reassignment_json(text, "plan.json")
    assert [(p.tp, p.replicas) for p in back] == [(p.tp, p.replicas) for p in a]
    # An absent log_dirs is written as "any" per replica, and read back as such.
    assert [p.log_dirs for p in back] == [p.log_dirs or ("any",) * len(p.replicas) for p in a]
    assert format_reassignment_json(back) == text
    assert json.loads(text)["version"] == 1


def entry(**fields) -> str:
    base = {"topic": "foo", "partition": 0, "replicas": [1, 2]}
    base.update(fields)
    return json.dumps({"version": 1, "partitions": [{k: v for k, v in base.items() if v is not ...}]})


@pytest.mark.parametrize("text, fragments", [
    ('{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}',
     [":1:", ": invalid JSON"]),
    ('{"version": 1,\n "partitions": [\n  {"topic": "foo", "partition": 0 "replicas": [1]}]}',
     [":3:35: invalid JSON", "Expecting ',' delimiter"]),
    ('{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]} trailing',
     ["invalid JSON"]),
    ("[1, 2]", ['expected an object with "version" and "partitions", got [1, 2]']),
    ('{"partitions":[{"topic":"foo","partition":0,"replicas":[1]}]}', ['missing "version"']),
    ('{"version":"1","partitions":[]}', ['"version" must be the integer 1, got "1"']),
    ('{"version":true,"partitions":[]}', ['"version" must be the integer 1, got true']),
    ('{"version":2,"partitions":[{"topic":"foo","partition":0,"replicas":[1]}]}',
     ["not supported version field value 2"]),
    ('{"version":1}', ['missing "partitions"']),
    ('{"version":1,"partitions":{"topic":"foo"}}', ['"partitions" must be a list']),
    ('{"version":1,"partitions":[]}', ["partition reassignment list cannot be empty"]),
    ('{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1]}, 7]}',
     ["partitions[1]: expected an object, got 7"]),
    (entry(topic=...), ['partitions[0]: missing "topic"']),
    (entry(topic=""), ['partitions[0]: "topic" must be a non-empty string, got ""']),
    (entry(topic=5), ['partitions[0]: "topic" must be a non-empty string, got 5']),
    (entry(partition=...), ['partitions[0]: missing "partition"']),
    (entry(partition=-1), ["partitions[0] (topic foo)", '"partition" must be an integer >= 0, got -1']),
    (entry(partition=True), ['"partition" must be an integer >= 0, got true']),
    (entry(partition=1.0), ["got 1.0"]),
    (entry(partition="0"), ['got "0"']),
    (entry(partition=2**31), ["got 2147483648"]),
    (entry(replicas=...), ['partitions[0]: missing "replicas"']),
    (entry(replicas=3), ['partition foo-0: "replicas" must be a list of broker ids']),
    (entry(replicas=[1, "2"]), ['partition foo-0', 'got [1, "2"]']),
    (entry(replicas=[1, -2]), ["partition foo-0", "got [1, -2]"]),
    (entry(replicas=[True, 2]), ["partition foo-0", "got [true, 2]"]),
    (entry(replicas=[]), ["partition foo-0: partition replica list cannot be empty"]),
    (entry(replicas=[1, 2, 1]), ["partition foo-0: replica list contains broker 1 twice"]),
    (entry(log_dirs="any"), ['partition foo-0: "log_dirs" must be a list of strings, got "any"']),
    (entry(log_dirs=[1, 2]), ['partition foo-0: "log_dirs" must be a list of strings']),
    (entry(log_dirs=None), ['partition foo-0: "log_dirs" must be a list of strings, got null']),
    (entry(log_dirs=["any"]), ['partition foo-0: "log_dirs" has 1 entries but "replicas" has 2']),
    (('{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1]},'
      '{"topic":"bar","partition":0,"replicas":[1]},{"topic":"foo","partition":0,"replicas":[2]}]}'),
     ["partition foo-0 is listed twice (partitions[0] and partitions[2])"]),
])
def test_reassignment_json_errors_name_the_place(text, fragments):
    message = error_of(parse_reassignment_json, text, "plan.json")
    for fragment in fragments:
        assert fragment in message, message


def test_topic_names_cannot_break_the_one_line_message():
    message = error_of(parse_reassignment_json, entry(topic="a\nb", replicas=[1, 1]), "plan.json")
    assert "a\\nb is not a legal Kafka topic name" in message and "\n" not in message  # refused, escaped


def test_long_values_are_cut_short_in_messages():
    message = error_of(parse_reassignment_json, entry(replicas=list(range(50)) + ["x"]), "plan.json")
    assert "..." in message and len(message) < 150


# ---------------------------------------------------------------------------------------------
# parse_plan chooses the format


def test_plan_detection():
    json_text = '\n  {"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]}\n'
    assert rows(parse_plan(json_text, "p")) == [("foo", 0, (1, 2), None, None)]
    assert len(parse_plan(DESCRIBE_KRAFT, "p")) == 3
    assert "expected an object" in error_of(parse_plan, "[]", "p")
    assert "p:1: not a kafka-topics --describe line" in error_of(parse_plan, "version: 1", "p")
    assert "p: no partitions found" in error_of(parse_plan, "", "p")


# ---------------------------------------------------------------------------------------------
# Brokers file


def test_brokers_json_forms():
    expected = (Broker(2, "r1"), Broker(0, "r2"), Broker(1, None))
    assert parse_brokers('{"brokers": [{"id": 2, "rack": "r1"}, {"id": 0, "rack": "r2"}, {"id": 1}]}',
                         "b.json").brokers == expected
    assert parse_brokers('[{"id": 2, "rack": "r1"}, {"id": 0, "rack": "r2"}, {"id": 1, "rack": null}]',
                         "b.json").brokers == expected
    assert parse_brokers('  {"2": "r1", "0": "r2", "1": null}', "b.json").brokers == expected


def test_brokers_line_forms():
    text = (
        "# broker.rack of each broker\n"
        "\n"
        "5:us-east-1a\n"
        "3 us-east-1b   # a trailing comment\n"
        "  4 : us-east-1c  \n"
        "7\n"
        "8:rack#2\n"
    )
    assert parse_brokers(text, "racks.txt").brokers == (
        Broker(5, "us-east-1a"), Broker(3, "us-east-1b"), Broker(4, "us-east-1c"), Broker(7, None),
        Broker(8, "rack#2"))


def test_brokers_mixed_racks_are_not_an_error_here():
    cluster = parse_brokers("1:a\n2\n", "b.txt")
    assert cluster.rack_layout == "mixed"


@pytest.mark.parametrize("text, fragments", [
    ("1:a\nbroker-2:b\n", ["b.txt:2:", '"broker-2" is not a broker id']),
    ("1:a\n-2:b\n", ["b.txt:2:", '"-2"']),
    ("1.5\n", ["b.txt:1:", '"1.5"']),
    ("1:a\n\n1 b\n", ["b.txt:3:", "broker 1 is listed twice (lines 1 and 3)"]),
    ("1:a\n2:\n", ["b.txt:2:", "broker 2: empty rack name"]),
    ("1 a b\n", ["b.txt:1:", "expected 'id:rack', 'id rack' or 'id'"]),
    ("# only comments\n\n", ["b.txt: no brokers found"]),
    ("", ["b.txt: no brokers found"]),
    ("{}", ["b.txt: no brokers found"]),
    ("[]", ["b.txt: no brokers found"]),
    ('{"brokers": []}', ["b.txt: no brokers found"]),
    ('{"brokers": [{"id": 0}', ["b.txt:1:", ": invalid JSON"]),
    ('{"brokers": {"0": "a"}}', ['"brokers" must be a list']),
    ('[{"id": 0}, 1]', ['brokers[1]: expected an object like {"id": 0, "rack": "r1"}, got 1']),
    ('[{"id": 0}, {"rack": "a"}]', ['brokers[1]: "id" must be a broker id (an integer >= 0), got null']),
    ('[{"id": "0"}]', ['brokers[0]: "id" must be a broker id', 'got "0"']),
    ('[{"id": -1}]', ["brokers[0]", "got -1"]),
    ('[{"id": true}]', ["brokers[0]", "got true"]),
    ('[{"id": 0, "rack": "a"}, {"id": 0, "rack": "b"}]',
     ["broker 0 is listed twice (brokers[0] and brokers[1])"]),
    ('[{"id": 0, "rack": ""}]', ["brokers[0]: empty rack name"]),
    ('[{"id": 0, "rack": 5}]', ["brokers[0]: the rack must be a string or null, got 5"]),
    ('{"0": "a", "x": "b"}', ['broker "x": the key must be a broker id']),
    ('{"0": "a", "-1": "b"}', ['broker "-1"']),
    ('{"0": "a", "0": "b"}', ["broker 0 is listed twice"]),
    ('{"0": "a", "00": "b"}', ['broker 0 is listed twice (broker "0" and broker "00")']),
    ('{"0": ""}', ['broker "0": empty rack name']),
    ('{"0": ["a"]}', ['broker "0": the rack must be a string or null']),
])
def test_brokers_errors_name_the_place(text, fragments):
    message = error_of(parse_brokers, text, "b.txt")
    for fragment in fragments:
        assert fragment in message, message


# ---------------------------------------------------------------------------------------------
# read_text and InputError


def test_read_text(tmp_path):
    good = tmp_path / "plan.json"
    good.write_bytes(b"\xef\xbb\xbf{\"version\": 1}\n")  # a BOM from a Windows editor is dropped
    assert read_text(str(good)) == '{"version": 1}\n'


@pytest.mark.parametrize("content, fragment", [
    (None, "no such file"),
    ("dir", "is a directory"),
    (b"Topic: caf\xe9\n", "is not UTF-8 text (byte 0xe9 at offset 10)"),
    ("Topic: foo\n".encode("utf-16"), "is UTF-16 text"),
    (b"", "file is empty"),
    (b" \n\t\r\n", "file is empty"),
])
def test_read_text_errors(tmp_path, content, fragment):
    path = tmp_path / "input.txt"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError) as info:
        read_text(str(path))
    message = str(info.value)
    assert message.startswith(f"{path}: ") and fragment in message and "\n" not in message
    assert info.value.source == str(path)


def test_input_error_attributes():
    e = InputError("d.txt", "Replicas: is empty", line=7)
    assert (e.source, e.message, e.line) == ("d.txt", "Replicas: is empty", 7)
    assert str(e) == "d.txt:7: Replicas: is empty"
    assert str(InputError("--racks", "bad")) == "--racks: bad"
    assert str(InputError("x", "two\nlines\r")) == "x: two\\nlines\\r"
