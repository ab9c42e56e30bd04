"""Members of one classic consumer group, with kafka-python, in one process (run by make.py, one process per group).

    python members.py BOOTSTRAP GROUP ASSIGNOR TOPICS MEMBERS CLIENT [INSTANCE [STATIC]]

ASSIGNOR is kafka-python's `range`, `roundrobin`, `sticky` or `cooperative-sticky`, or `misassign`: an assignor of
ours that hands the first partition to two members and the last one to nobody (the coordinator of the classic
protocol stores whatever the group's leader sends, so a faulty assignor leaves exactly this state). TOPICS is
comma-separated; MEMBERS consumers join in turn, with client ids CLIENT-0, CLIENT-1, ... (and group instance ids
INSTANCE-i when given: static members; only the first STATIC of them when that is given). They subscribe, poll and
never commit (make.py commits beforehand).

Every change of a member's assignment is one JSON line on stdout: {"client", "member", "generation", "partitions"}.
The members leave the group and the process exits when stdin is closed.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback

from kafka import KafkaConsumer
from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.structs import TopicPartition


class MisassignAssignor(AbstractPartitionAssignor):
    """Round-robin over the sorted partitions, then the first partition also to the second member and the last
    partition to nobody: a faulty custom assignor, as a user could plug in."""

    name = "misassign"
    version = 0

    @classmethod
    def assign(cls, cluster, members):
        topics = sorted({t for m in members for t in m.metadata.topics})
        tps = [TopicPartition(t, p) for t in topics for p in sorted(cluster.partitions_for_topic(t) or ())]
        ids = sorted(m.member_id for m in members)
        given: dict[str, list[TopicPartition]] = {m: [] for m in ids}
        for i, tp in enumerate(tps[:-1]):
            given[ids[i % len(ids)]].append(tp)
        if len(ids) > 1 and tps:
            given[ids[1]].append(tps[0])
        out = {}
        for m, owned in given.items():
            by_topic: dict[str, list[int]] = {}
            for tp in owned:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            out[m] = ConsumerProtocolAssignment(cls.version, sorted(by_topic.items()), b"")
        return out

    @classmethod
    def metadata(cls, topics):
        return ConsumerProtocolSubscription(cls.version, list(topics), b"")

    @classmethod
    def on_assignment(cls, assignment, generation):
        pass


ASSIGNORS = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
             "sticky": StickyPartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor,
             "misassign": MisassignAssignor}
_print = threading.Lock()


def member(bootstrap: str, group: str, assignor: str, topics: list[str], client: str, instance: str | None,
           stop: threading.Event) -> None:
    try:
        consume(bootstrap, group, assignor, topics, client, instance, stop)
    except BaseException:  # a member that cannot run ends the process: make.py sees it exit
        traceback.print_exc()
        os._exit(1)


def consume(bootstrap: str, group: str, assignor: str, topics: list[str], client: str, instance: str | None,
            stop: threading.Event) -> None:
    extra = {"group_instance_id": instance} if instance else {}
    # Long timeouts: a member make.py pauses or kills stays in the group while the tools describe it.
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id=client, enable_auto_commit=False,
                      auto_offset_reset="earliest", partition_assignment_strategy=(ASSIGNORS[assignor],),
                      session_timeout_ms=600_000, max_poll_interval_ms=600_000, request_timeout_ms=605_000,
                      connections_max_idle_ms=900_000,
                      heartbeat_interval_ms=1_000, **extra)
    c.subscribe(topics)
    shown = None
    while not stop.is_set():
        c.poll(200, max_records=1)
        meta = c.group_metadata()
        now = (meta.member_id, meta.generation_id, sorted(f"{tp.topic}-{tp.partition}" for tp in c.assignment()))
        if now != shown and meta.member_id:
            shown = now
            with _print:
                print(json.dumps({"client": client, "member": now[0], "generation": now[1], "partitions": now[2]}),
                      flush=True)
    c.close()


def main(argv: list[str]) -> None:
    bootstrap, group, assignor, topics, count, client, *rest = argv
    static = int(rest[1]) if len(rest) > 1 else int(count)
    stop = threading.Event()
    threads = []
    for i in range(int(count)):
        t = threading.Thread(target=member, args=(bootstrap, group, assignor, topics.split(","), f"{client}-{i}",
                                                  f"{rest[0]}-{i}" if rest and i < static else None, stop))
        t.start()
        threads.append(t)
        time.sleep(0.3)  # members join in turn, as separate clients would
    sys.stdin.read()
    stop.set()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main(sys.argv[1:])
