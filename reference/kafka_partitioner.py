"""The differential for the producer's partitioner: `kcheck.reference.partitioner` against kafka-clients' classes.

Request words (reference/harness/KcheckPartitionKeys.java, and KcheckStickyDriver.java with its per-release
KcheckStickyPartitioner.java (3.3 to 4.3) or KcheckStickyRackPartitioner.java (4.4, KIP-1123)):

    PKEY numPartitions key...     Utils.murmur2 and BuiltInPartitioner.partitionForKey of each key (bytes, or a
                                  String through StringSerializer)
    PSTICKY size rackAware rack draws op...
                                  one BuiltInPartitioner whose randomPartition() returns the given draws, driven
                                  through cluster changes (K), load stats (L) and appends (A)

Each handler file documents its grammar. The random inputs aim at the edges: empty keys and keys of 1 to 3
bytes (murmur2's tail), bytes >= 0x80, unpaired surrogates in strings, keys built to hash to Integer.MIN_VALUE,
-1, 0 and MAX_VALUE (`murmur2_preimage`), partition counts of 0 and below; for the sticky partitioner, topics
with and without leaders and racks, queue sizes that overflow the cumulative frequency table, sticky batch sizes
whose double wraps, and draws of 0 and Integer.MAX_VALUE.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from kcheck.reference.kafka_bridge import KafkaBridge, encode_text, parse_error
from kcheck.reference.partitioner import (
    BuiltInPartitioner,
    PartitionerError,
    PartitionLeader,
    murmur2,
    partition_for_key,
    serialize_key,
)

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
_MASK = 0xFFFFFFFF
_SEED, _M = 0x9747B28C, 0x5BD1E995
_M_INV = pow(_M, -1, 1 << 32)

Key = str | bytes | None
KeyAnswer = tuple[int, int | str] | None  # (murmur2, partition or '!Exception'), None for a null key


# ---------------------------------------------------------------- keys: PKEY


def encode_key(key: Key) -> str:
    if key is None:
        return "-"
    if isinstance(key, bytes):
        return "b" + key.hex()
    return "s" + encode_text(key)


def encode_keys(num_partitions: int, keys: Sequence[Key]) -> str:
    return " ".join([f"PKEY {num_partitions}", *map(encode_key, keys)])


def _parse_key_answer(tok: str) -> KeyAnswer:
    if tok == "-":
        return None
    h, _, p = tok.partition(":")
    return int(h), p if p.startswith("!") else int(p)


def kafka_key_answers(bridge: KafkaBridge, requests: Sequence[tuple[int, Sequence[Key]]]) -> list[list[KeyAnswer]]:
    bridge.require("PKEY", "the producer's key hash")
    out = []
    for line in bridge.roundtrip([encode_keys(n, keys) for n, keys in requests]):
        if not line.startswith("OK"):
            raise parse_error(line)
        out.append([_parse_key_answer(t) for t in line.split()[1:]])
    return out


def reference_key_answers(num_partitions: int, keys: Sequence[Key]) -> list[KeyAnswer]:
    out: list[KeyAnswer] = []
    for key in keys:
        data = serialize_key(key)
        if data is None:
            out.append(None)
            continue
        try:
            out.append((murmur2(data), partition_for_key(data, num_partitions)))
        except PartitionerError as e:
            out.append((murmur2(data), "!" + e.java_name))
    return out


def _unxorshift(y: int, shift: int) -> int:
    x = y
    for _ in range(32 // shift + 1):
        x = y ^ (x >> shift)
    return x & _MASK


def murmur2_preimage(target: int, prefix: bytes = b"") -> bytes:
    """A key of `prefix` plus 4 bytes whose murmur2 is `target` (len(prefix) a multiple of 4): murmur2's steps are
    each invertible, so the last word can be solved for. Reaches Integer.MIN_VALUE, whose toPositive is 0."""
    assert len(prefix) % 4 == 0
    h = (_SEED ^ (len(prefix) + 4)) & _MASK
    for i in range(0, len(prefix), 4):
        k = (int.from_bytes(prefix[i:i + 4], "little") * _M) & _MASK
        k = ((k ^ (k >> 24)) * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    # undo the final mix: h ^= h>>>13; h *= m; h ^= h>>>15
    f = _unxorshift(target & _MASK, 15)
    f = _unxorshift((f * _M_INV) & _MASK, 13)
    k = f ^ ((h * _M) & _MASK)  # the mixed last word
    k = _unxorshift((k * _M_INV) & _MASK, 24)
    k = (k * _M_INV) & _MASK
    return prefix + k.to_bytes(4, "little")


_TEXT = ["", "a", "ab", "abc", "abcd", "key-1", "user:42", "\u00e9", "\u20ac", "\U0001f600", "\ud800", "\udc00",
         "a\ud83d", "\ud83d\ude00", "\u0000", "\uffff", "ключ", "キー"]


def random_key(rng: random.Random) -> Key:
    r = rng.random()
    if r < 0.03:
        return None
    if r < 0.35:
        return bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 33])))
    if r < 0.45:
        target = rng.choice([INT_MIN, INT_MIN + 1, -1, 0, 1, INT_MAX, rng.randrange(INT_MIN, INT_MAX)])
        prefix = bytes(rng.getrandbits(8) for _ in range(4 * rng.randrange(3)))
        return murmur2_preimage(target, prefix)
    if r < 0.75:
        return "".join(rng.choice(_TEXT) for _ in range(rng.randrange(4)))
    return f"{rng.choice(['user', 'order', 'k', ''])}-{rng.randrange(10 ** rng.randrange(1, 10))}"


def random_num_partitions(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.02:
        return rng.choice([0, -1, -7, INT_MIN, INT_MAX])
    return rng.choice([1, 2, 3, 6, 10, 12, 50, 64, 100, 1000, rng.randrange(1, 10_000)])


def random_key_request(rng: random.Random, keys: int = 50) -> tuple[int, list[Key]]:
    return random_num_partitions(rng), [random_key(rng) for _ in range(keys)]


# ---------------------------------------------------------------- records without a key: PSTICKY


@dataclass(frozen=True)
class Topic:
    """K: the topic's metadata from now on."""

    partitions: tuple[PartitionLeader, ...]


@dataclass(frozen=True)
class LoadStats:
    """L: updatePartitionLoadStats(queue_sizes, partition_ids, racks, length); queue_sizes None for null."""

    queue_sizes: tuple[int, ...] | None
    partition_ids: tuple[int, ...] = ()
    racks: tuple[str | None, ...] = ()
    length: int = 0


@dataclass(frozen=True)
class Append:
    """A: a record of `appended_bytes` without a key: peekCurrentPartitionInfo, then updatePartitionInfo."""

    appended_bytes: int
    enable_switch: bool = True


Op = Topic | LoadStats | Append


@dataclass(frozen=True)
class StickyCase:
    sticky_batch_size: int
    rack_aware: bool
    rack: str | None
    draws: tuple[int, ...]
    ops: tuple[Op, ...]


StickyOutcome = tuple[tuple[int | str, ...], int]  # a token per op ('ok', a partition, '!Exception'); draws taken


def _ints(xs: Sequence[int]) -> str:
    return ",".join(map(str, xs)) or "~"


def encode_op(op: Op) -> str:
    if isinstance(op, Topic):
        return "K" + ",".join(f"{p.partition}:{'-' if p.leader is None else p.leader}:{encode_text(p.rack)}"
                              for p in op.partitions)
    if isinstance(op, LoadStats):
        if op.queue_sizes is None:
            return "L-"
        racks = ",".join(map(encode_text, op.racks)) or "~"
        return f"L{_ints(op.queue_sizes)}/{_ints(op.partition_ids)}/{racks}/{op.length}"
    return f"A{op.appended_bytes}:{int(op.enable_switch)}"


def encode_sticky(c: StickyCase) -> str:
    return " ".join([f"PSTICKY {c.sticky_batch_size} {int(c.rack_aware)} {encode_text(c.rack)} {_ints(c.draws)}",
                     *map(encode_op, c.ops)])


def parse_sticky(line: str) -> StickyOutcome:
    if not line.startswith("OK"):
        raise parse_error(line)
    toks = line.split()[1:]
    ops = tuple(t if t in ("ok",) or t.startswith("!") else int(t) for t in toks[:-1])
    return ops, int(toks[-1][1:])


def kafka_sticky_outcomes(bridge: KafkaBridge, cases: Sequence[StickyCase]) -> list[StickyOutcome]:
    bridge.require("PSTICKY", "the producer's sticky partitioner")
    return [parse_sticky(line) for line in bridge.roundtrip([encode_sticky(c) for c in cases])]


def reference_sticky_outcome(c: StickyCase, kafka_version: str = "4.4.0") -> StickyOutcome:
    draws = iter(c.draws)

    def draw() -> int:
        try:
            return next(draws)
        except StopIteration:
            raise PartitionerError("NoSuchElementException", "no draw left") from None

    p = BuiltInPartitioner(c.sticky_batch_size, rack_aware=c.rack_aware, rack=c.rack, release=kafka_version,
                           draw=draw)
    topic: tuple[PartitionLeader, ...] = ()
    out: list[int | str] = []
    for op in c.ops:
        try:
            if isinstance(op, Topic):
                topic = op.partitions
                out.append("ok")
            elif isinstance(op, LoadStats):
                p.update_partition_load_stats(op.queue_sizes, op.partition_ids, op.racks, op.length)
                out.append("ok")
            else:
                out.append(p.append(op.appended_bytes, topic, op.enable_switch))
        except PartitionerError as e:
            out.append("!" + e.java_name)
    return tuple(out), p.draws_used


_RACKS = ["a", "b", "c", None, "", "\u00e9", "a "]


def random_topic(rng: random.Random) -> Topic:
    n = rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 8, 12]) if rng.random() < 0.98 else 0
    ids = list(range(n))
    if rng.random() < 0.3:
        rng.shuffle(ids)  # the metadata's order, not necessarily by id
    racks = {b: rng.choice(_RACKS) for b in range(4)}
    no_leader = rng.choice([0.0, 0.0, 0.2, 0.6, 1.0])
    parts = []
    for pid in ids:
        broker = rng.randrange(4)
        leader = None if rng.random() < no_leader else broker
        parts.append(PartitionLeader(pid, leader, racks[broker] if leader is not None else None))
    return Topic(tuple(parts))


def random_load_stats(rng: random.Random, topic: Topic) -> LoadStats:
    if rng.random() < 0.1:
        return LoadStats(None)
    led = [p for p in topic.partitions if p.leader is not None]
    if rng.random() < 0.2:  # arrays of any size, as the accumulator's view of the deques may be
        led = [PartitionLeader(rng.randrange(20), 1, rng.choice(_RACKS)) for _ in range(rng.randrange(5))]
    sizes = []
    for _ in led:
        r = rng.random()
        sizes.append(rng.randrange(4) if r < 0.7 else rng.randrange(1000) if r < 0.9
                     else rng.choice([INT_MAX, INT_MAX - 1, 2**30, 2**31 // 3]))
    if len(set(sizes)) > 1 and rng.random() < 0.2:
        sizes = [sizes[0]] * len(sizes)  # all equal: uniform, unless some are excluded
    length = len(led) if rng.random() < 0.6 else rng.randint(0, len(led))
    return LoadStats(tuple(sizes), tuple(p.partition for p in led), tuple(p.rack for p in led), length)


def random_sticky_case(rng: random.Random, max_ops: int = 12) -> StickyCase:
    size = rng.choice([1, 2, 10, 100, 16384, 2**30, INT_MAX, rng.randrange(1, 50)])
    rack_aware = rng.random() < 0.6
    rack = rng.choice(["a", "b", "c", "\u00e9"]) if rack_aware or rng.random() < 0.5 else rng.choice([None, ""])
    topic = random_topic(rng)
    ops: list[Op] = [topic]
    appends = 0
    for _ in range(rng.randint(1, max_ops)):
        r = rng.random()
        if r < 0.1:
            topic = random_topic(rng)
            ops.append(topic)
        elif r < 0.35:
            ops.append(random_load_stats(rng, topic))
        else:
            appended = rng.choice([0, 1, 5, size // 2 + 1, size, 2 * size, rng.randrange(200), INT_MAX, 2**30])
            ops.append(Append(min(appended, INT_MAX), rng.random() < 0.7))  # an int: producedBytes may wrap
            appends += 1
    draws = tuple(rng.choice([0, 1, 2, 3, INT_MAX, INT_MAX - 1, rng.randrange(100), rng.randrange(INT_MAX)])
                  for _ in range(2 * appends + (1 if rng.random() < 0.9 else -appends)))
    return StickyCase(size, rack_aware, rack, draws, tuple(ops))
