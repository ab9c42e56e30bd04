"""The differential for produce admission: `produce_admission.validate` against each release's LogValidator.

Request word LOGVAL (handler `reference/harness/KcheckLogValidator.java`, kafka-storage of every release): the
records' bytes as our `BatchSpec.encode` builds them, and the topic's and the partition's settings; the answer is
compared as a whole line (exception, message and record errors; or offsets, max timestamp, shallow offset, stamped
batches with their records' offsets and timestamps, and the target compression).

`random_case` reaches each rule's edges: offset ranges and counts that disagree (a client may lie), control and
transactional batches, producer ids with negative sequences, compacted topics with null keys, timestamps at exactly
message.timestamp.before/after.max.ms and one past them (strict '>'), -1 timestamps, Long.MAX_VALUE bounds and the
overflow of now +- bound, LogAppendTime batches from a producer, gzip batches (in place, recompressed, or with
inner offsets that force a rebuild), every compression.type, several batches, no batch, replication origin, and
the release's own knobs (IBP 2.0 for ZStandard on 3.9, maxRecordBodySize on 4.2.2 and 4.4).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from kcheck.reference.kafka_bridge import KafkaBridge, parse_error
from kcheck.reference.produce_admission import (
    LONG_MAX,
    NO_TIMESTAMP,
    TOPIC_COMPRESSIONS,
    BatchSpec,
    Rec,
    ValidatorCase,
    encode_records,
    validate,
)
from kcheck.reference.releases import ReleaseProfile, profile

RULES = ("offsets", "control", "sequence", "compacted", "timestamps", "log_append_time", "compression", "batches",
         "replication", "valid")


def encode_case(c: ValidatorCase) -> str:
    return " ".join(["LOGVAL", encode_records(c.batches).hex() or "_", str(c.now), str(c.offset),
                     str(c.leader_epoch), str(int(c.compacted)), str(int(c.log_append_time)), str(c.before_ms),
                     str(c.after_ms), c.topic_compression, c.origin, str(int(c.ibp_low)), str(c.max_record_body)])


def reference_answer(c: ValidatorCase, release: ReleaseProfile | str | None = None) -> str:
    prof = release if isinstance(release, ReleaseProfile) else profile(release)
    return validate(c, prof)


def parse_answer(line: str) -> str:
    if line.startswith("ERR"):
        raise parse_error(line)
    return line


def kafka_answers(bridge: KafkaBridge, cases: Sequence[ValidatorCase]) -> list[str]:
    bridge.require("LOGVAL", "LogValidator")
    return [parse_answer(line) for line in bridge.roundtrip([encode_case(c) for c in cases])]


def kafka_timestamp_after_max_default(bridge: KafkaBridge) -> int:
    """The release's default message.timestamp.after.max.ms (request LOGDEF)."""
    bridge.require("LOGDEF", "log config defaults")
    return int(parse_answer(bridge.roundtrip(["LOGDEF"])[0]).split()[1])


# ---------------------------------------------------------------- random inputs

_NOW = (0, 1000, 1_700_000_000_000, LONG_MAX - 5)


def _bytes(rng: random.Random, null_share: float) -> bytes | None:
    if rng.random() < null_share:
        return None
    return rng.randbytes(rng.choice([0, 1, 3, 8, 40]))


def _timestamp_delta(rng: random.Random, now: int, base: int, before: int, after: int) -> int:
    """A record timestamp's delta from the batch base, aimed at now, the bounds and one past them, or -1."""
    target = rng.choice([now, now, now - before, now - before - 1, now + after, now + after + 1, NO_TIMESTAMP,
                         now - rng.randint(0, 10_000), now + rng.randint(0, 10_000), -5, 0])
    return max(-(2**63), min(LONG_MAX, target)) - base


def _records(rng: random.Random, c: dict, n: int, base_ts: int) -> tuple[Rec, ...]:
    gaps = rng.random() < 0.1  # inner offsets not 0, 1, 2... (a rebuild when compressed)
    out, delta = [], 0
    for _ in range(n):
        ts = _timestamp_delta(rng, c["now"], base_ts, c["before_ms"], c["after_ms"])
        ts = max(-(2**63), min(LONG_MAX, ts))
        out.append(Rec(delta, ts, _bytes(rng, 0.15), _bytes(rng, 0.1)))
        delta += rng.choice([1, 1, 2]) if gaps else 1
    return tuple(out)


def _batch(rng: random.Random, c: dict, rule: str) -> BatchSpec:
    n = rng.choice([1, 1, 2, 3, 5])
    base_ts = rng.choice([c["now"], c["now"] - 1000, 0, NO_TIMESTAMP])
    records = _records(rng, c, n, base_ts)
    kw: dict = {"compression": "gzip" if rng.random() < 0.3 else "none",
                "leader_epoch": rng.choice([-1, 0, 7]),
                "base_timestamp": base_ts}
    if rule == "offsets":
        r = rng.random()
        if r < 0.3:
            kw["last_offset_delta"] = rng.choice([-1, -2, n, n - 2, 2**31 - 1])
        elif r < 0.5:
            kw["count"] = rng.choice([0, -1, n + 1, n - 1])
        elif r < 0.6:  # a count and offset range that agree with each other but not with the records
            lie = rng.choice([1, -1, 2]) if n > 1 else rng.choice([1, 2])
            kw["count"], kw["last_offset_delta"] = n + lie, n + lie - 1
        elif r < 0.65:
            records, kw["count"], kw["last_offset_delta"] = (), 0, -1
        else:
            kw["base_offset"] = rng.choice([1, 5, 2**62, -3])
    elif rule == "control":
        kw["control"] = True
    elif rule in ("sequence", "valid") or rng.random() < 0.3:
        kw["producer_id"] = rng.choice([-1, 0, 42, LONG_MAX])
        kw["producer_epoch"] = rng.choice([-1, 0, 3, 32767])
        kw["base_sequence"] = rng.choice([-1, -5, 0, 7, 2**31 - 1]) if rule == "sequence" else rng.choice([0, 9])
        kw["transactional"] = rng.random() < 0.3
    if rule == "log_append_time" or rng.random() < 0.05:
        kw["log_append_time"] = True
        kw["max_timestamp"] = rng.choice([NO_TIMESTAMP, c["now"], c["now"] - c["before_ms"] - 1 if
                                          c["before_ms"] < 10**12 else 0])
    elif rng.random() < 0.05:
        kw["max_timestamp"] = rng.choice([NO_TIMESTAMP, 0, c["now"]])  # a header that disagrees with the records
    return BatchSpec(records, **kw)


def _bound(rng: random.Random) -> int:
    return rng.choice([LONG_MAX, LONG_MAX, 0, 1, 1000, 3_600_000, 86_400_000, LONG_MAX - 1])


def random_case(rng: random.Random, release: ReleaseProfile | str | None = None, rule: str | None = None
                ) -> ValidatorCase:
    """A LogValidator call aimed at `rule` (one of RULES; random if None)."""
    prof = release if isinstance(release, ReleaseProfile) else profile(release)
    rule = rule or rng.choice(RULES)
    c = {"now": rng.choice(_NOW), "before_ms": _bound(rng), "after_ms": _bound(rng)}
    if rule == "batches":
        batches: tuple[BatchSpec, ...] = tuple(_batch(rng, c, "valid") for _ in range(rng.choice([0, 2, 3])))
    else:
        batches = (_batch(rng, c, rule),)
    compacted = rule == "compacted" or rng.random() < 0.1
    topic_compression = rng.choice(TOPIC_COMPRESSIONS) if rule == "compression" or rng.random() < 0.2 else \
        rng.choice(["producer", "producer", "uncompressed"])
    return ValidatorCase(
        batches=batches, now=c["now"], offset=rng.choice([0, 1, 1000, 2**40]),
        leader_epoch=rng.choice([0, 5, 2**31 - 1]),
        compacted=compacted, log_append_time=rng.random() < 0.2, before_ms=c["before_ms"], after_ms=c["after_ms"],
        topic_compression=topic_compression, origin="R" if rule == "replication" else "C",
        ibp_low=prof.log_validator_zstd_needs_ibp and rng.random() < 0.2,
        max_record_body=rng.choice([-1, -1, 5, 12, 40]) if prof.log_validator_max_record_body else -1)
