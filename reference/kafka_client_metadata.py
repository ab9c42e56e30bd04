"""The differential for the client's metadata cache: `client_metadata.Metadata` against kafka-clients' Metadata.

Request word CMETA (handler `reference/harness/KcheckClientMetadata.java`, kafka-clients of every release): one
script of calls on a fresh Metadata, each answered with its result and the cache after it (updateRequested, the topic
ids, the nodes, and per partition of topics a and b the leader and epoch `currentLeader` gives and the last seen
epoch), so every call is one compared input.

    CMETA refreshBackoffMs refreshBackoffMaxMs metadataExpireMs op...   (the handler's comment has the grammar)

`random_case` reaches the edges: epochs going back, equal, forward and absent, responses of version 8 (epochs not
reliable) and 12, topic ids appearing, changing and vanishing, topic and partition errors (those that request an
update and those that do not), partitions and topics leaving the response, partial updates with stale request
versions, leaders on unknown nodes, KIP-951 hints with missing fields, older or equal epochs, unknown nodes, uncached
partitions and duplicate nodes, epochs seen elsewhere (negative ones throw), failed updates, and timeToNextUpdate
around the expiry (Long.MAX_VALUE included: Kafka's sum overflows).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from kcheck.reference import client_metadata as cm
from kcheck.reference.kafka_bridge import KafkaBridge, compare_drawn, ok_fields, step_answers

LONG_MAX = 2**63 - 1
TOPICS = ("a", "b")
PARTITIONS = 3

# ('u', version, now, partial, request_version, response) | ('e', topic, p, epoch) | ('h', hints, nodes)
# | ('r', reset) | ('n',) | ('f', now) | ('w', now)
Op = tuple


@dataclass(frozen=True)
class ClientMetadataCase:
    refresh_backoff_ms: int
    refresh_backoff_max_ms: int
    metadata_expire_ms: int
    ops: tuple[Op, ...]


def _ids(ids: Sequence[int]) -> str:
    return ",".join(map(str, ids)) or "~"


def _encode_topic(t: cm.ResponseTopic) -> str:
    parts = ";".join(f"{p.index}.{p.error}.{p.leader}.{p.epoch}" for p in t.partitions) or "~"
    return f"{t.name}/{t.topic_id}/{t.error}/{int(t.internal)}/{parts}"


def _encode_op(op: Op) -> str:
    kind = op[0]
    if kind == "u":
        _, version, now, partial, request_version, response = op
        return "|".join([f"u{version}:{now}:{int(partial)}:{request_version}", _ids(response.nodes),
                         *map(_encode_topic, response.topics)])
    if kind == "e":
        return f"e{op[1]}.{op[2]}.{op[3]}"
    if kind == "h":
        hints = ";".join(f"{t}.{p}.{leader}.{epoch}" for (t, p), leader, epoch in op[1]) or "~"
        return f"h{hints}|{_ids(op[2])}"
    if kind == "r":
        return f"r{int(op[1])}"
    return str(kind) + "".join(str(a) for a in op[1:])


def encode_case(case: ClientMetadataCase) -> str:
    return " ".join(["CMETA", str(case.refresh_backoff_ms), str(case.refresh_backoff_max_ms),
                     str(case.metadata_expire_ms), *map(_encode_op, case.ops)])


parse_answers = ok_fields  # one answer per compared step (the bench runner reads this name)


def kafka_answers(bridge: KafkaBridge, cases: Sequence[ClientMetadataCase]) -> list[list[str]]:
    return step_answers(bridge, "CMETA", "client metadata", encode_case, cases)


# ---------------------------------------------------------------- our side


def _call(m: cm.Metadata, op: Op) -> str:
    kind = op[0]
    if kind == "u":
        _, version, now, partial, request_version, response = op
        m.update(request_version, response, partial, now)
        return "-"
    if kind == "e":
        return str(int(m.update_last_seen_epoch_if_newer((op[1], op[2]), op[3])))
    if kind == "h":
        updated = m.update_partition_leadership({tp: (leader, epoch) for tp, leader, epoch in op[1]}, list(op[2]))
        return ",".join(sorted(f"{t}-{p}" for t, p in updated)) or "~"
    if kind == "r":
        return str(m.request_update(op[1]))
    if kind == "n":
        return str(m.request_update_for_new_topics())
    if kind == "f":
        m.failed_update(op[1])
        return "-"
    return str(m.time_to_next_update(op[1]))


def _opt(x: int | None) -> str:
    return "-" if x is None else str(x)


def format_state(m: cm.Metadata) -> str:
    ids = ",".join(sorted(f"{t}={i}" for t, i in m.snapshot.topic_ids.items())) or "~"
    out = [str(int(m.update_requested())), ids, _ids(sorted(m.snapshot.nodes))]
    for t in TOPICS:
        for p in range(PARTITIONS):
            leader, epoch = m.current_leader((t, p))
            out.append(f"{_opt(leader)}.{_opt(epoch)}.{_opt(m.last_seen.get((t, p)))}")
    return ":".join(out)


def reference_answers(case: ClientMetadataCase) -> list[str]:
    """Our answer to each call, in the handler's tokens."""
    m = cm.Metadata(case.refresh_backoff_ms, case.refresh_backoff_max_ms, case.metadata_expire_ms)
    out = []
    for op in case.ops:
        try:
            ret = _call(m, op)
        except cm.JavaException as e:
            ret = "E" + e.simple_name
        out.append(f"{ret}/{format_state(m)}")
    return out


# ---------------------------------------------------------------- random inputs

_PARTITION_ERRORS = (0, 0, 0, 0, 0, 0, 3, 5, 6, 9, 56, 74, 76, 7)  # 76 UNKNOWN_LEADER_EPOCH, 7: not metadata errors
_TOPIC_ERRORS = (0, 0, 0, 0, 0, 0, 0, 3, 5, 17, 29, 100, 103)


class _Cluster:
    """The brokers' view the responses are drawn from: per partition a leader and an epoch that mostly rise."""

    def __init__(self, rng: random.Random) -> None:
        self.epochs = {(t, p): rng.choice([0, 0, 3, 1000]) for t in TOPICS for p in range(PARTITIONS)}
        self.ids = {t: rng.choice([0, 1, 1, 2]) for t in TOPICS}

    def step(self, rng: random.Random) -> None:
        for tp in self.epochs:
            if rng.random() < 0.3:
                self.epochs[tp] += rng.choice([1, 1, 2])
        if rng.random() < 0.05:
            t = rng.choice(TOPICS)  # the topic is deleted and re-created: a new id, epochs from 0
            self.ids[t] = rng.choice([0, 2, 3, 4])
            for p in range(PARTITIONS):
                self.epochs[(t, p)] = 0

    def epoch(self, rng: random.Random, tp: tuple[str, int]) -> int:
        e = self.epochs[tp]
        r = rng.random()
        if r < 0.15:
            return max(e - rng.choice([1, 2, 5]), 0)  # a stale broker
        if r < 0.22:
            return -1
        return e


def _response(rng: random.Random, cluster: _Cluster) -> cm.MetadataResponse:
    nodes = tuple(sorted(rng.sample(range(4), rng.randint(0, 3))))
    topics = []
    for t in TOPICS:
        if rng.random() < 0.2:
            continue
        error = rng.choice(_TOPIC_ERRORS)
        parts = []
        if error == cm.NONE:
            for p in range(PARTITIONS):
                if rng.random() < 0.85:
                    leader = rng.choice([*nodes, *nodes, -1, 3]) if nodes else rng.choice([-1, 1])
                    parts.append(cm.ResponsePartition(p, rng.choice(_PARTITION_ERRORS), leader,
                                                      cluster.epoch(rng, (t, p))))
        topic_id = cluster.ids[t] if rng.random() < 0.9 else rng.choice([0, 5])
        topics.append(cm.ResponseTopic(t, topic_id, error, rng.random() < 0.05, tuple(parts)))
    rng.shuffle(topics)
    return cm.MetadataResponse(rng.choice([12, 12, 12, 8]), nodes, tuple(topics))


def _hint(rng: random.Random, cluster: _Cluster) -> Op:
    hints = []
    for tp in rng.sample(sorted(cluster.epochs), rng.randint(0, 3)):
        epoch = cluster.epoch(rng, tp) + rng.choice([0, 0, 1])
        leader = rng.choice([0, 1, 2, 3, 5, -1]) if rng.random() < 0.95 else -1
        hints.append((tp, leader, epoch if rng.random() < 0.93 else -1))
    nodes = rng.sample(range(6), rng.randint(0, 2))
    if nodes and rng.random() < 0.04:
        nodes.append(nodes[0])  # a duplicate node id: Collectors.toMap throws
    return ("h", tuple(hints), tuple(nodes))


def random_case(rng: random.Random, max_ops: int = 14) -> ClientMetadataCase:
    backoff = rng.choice([0, 1, 100, 100, 1000])
    backoff_max = rng.choice([backoff, backoff, max(backoff - 1, 0)])  # no jitter: see client_metadata.backoff
    expire = rng.choice([0, 50, 300_000, 300_000, LONG_MAX])
    cluster = _Cluster(rng)
    now, request_version = rng.choice([0, 1, 1_700_000_000_000]), 0
    ops: list[Op] = []
    for _ in range(rng.randint(1, max_ops)):
        r = rng.random()
        now += rng.choice([0, 0, 1, 10, backoff, expire if expire < LONG_MAX else 10**9, 100_000])
        if r < 0.4:
            cluster.step(rng)
            partial = rng.random() < 0.15
            version = request_version - (1 if rng.random() < 0.2 else 0)
            response = _response(rng, cluster)
            ops.append(("u", response.version, now, partial, version, response))
        elif r < 0.55:
            tp = rng.choice(sorted(cluster.epochs))
            ops.append(("e", tp[0], tp[1], max(cluster.epoch(rng, tp) + rng.choice([0, 1, 2, -1]), -1)))
        elif r < 0.7:
            ops.append(_hint(rng, cluster))
        elif r < 0.76:
            ops.append(("r", rng.random() < 0.5))
        elif r < 0.8:
            request_version += 1
            ops.append(("n",))
        elif r < 0.86:
            ops.append(("f", now))
        else:
            ops.append(("w", now + rng.choice([0, 1, -1, backoff, expire if expire < LONG_MAX else 5])))
    return ClientMetadataCase(backoff, backoff_max, expire, tuple(ops))


def compare_random(bridge: KafkaBridge, rng: random.Random, calls: int) -> tuple[int, int, str]:
    """Random scripts of about `calls` calls through Kafka's Metadata and ours: (calls compared, calls that differ,
    the smallest differing script with the first differing call's answers; '' when none differ)."""
    return compare_drawn(lambda: random_case(rng), calls, lambda cases: kafka_answers(bridge, cases),
                         reference_answers, encode_case, "call")
