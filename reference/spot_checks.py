"""Spot checks of the request path's references against Kafka's own classes, for `kcheck check`.

The million-input differentials are benches (bench/bench_kafka_*.py); the main job runs a few thousand random inputs
per rule family on every release whose jars are already in the cache (`kafka_jars.cached`: the main job never
downloads), so a reference that drifts from Kafka fails the job wherever Kafka's code is at hand. Each family names
the Kafka classes it is compared with and reuses its differential module's generators and comparison (one
definition of "the same answer" per family: the module's).

A release whose jars are not cached is reported as skipped with the command that fetches them; a family the
release's harness does not answer (its handler did not compile there) is reported as skipped with the reason.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kcheck.reference.kafka_bridge import KafkaBridge, KafkaBridgeError

# The releases every request-path differential is built for (the 3.9.1, 4.0.x, 4.1.x and 4.4.0).
SPOT_RELEASES = ("3.9.1", "4.0.2", "4.1.2", "4.4.0")
SPOT_INPUTS = 2_000  # per family and release: about a second of JVM time each


@dataclass(frozen=True)
class Compared:
    """What one family's run compared: inputs, how many differed, and the smallest difference in words."""

    inputs: int
    differences: int
    smallest: str = ""


@dataclass(frozen=True)
class SpotFamily:
    name: str
    words: tuple[str, ...]  # the harness's request words the family needs
    kafka: str  # the classes compared, as `kcheck check` prints them
    run: Callable[[KafkaBridge, str, random.Random, int], Compared]
    server: bool = False  # compared on the broker-side bridge (the broker's jars and Mockito: KafkaBridge(server=True))


@dataclass(frozen=True)
class SpotOutcome:
    family: str
    kafka: str
    release: str
    inputs: int = 0
    differences: int = 0
    seconds: float = 0.0
    smallest: str = ""
    skipped: str = ""  # why nothing was compared (jars not cached, no handler for this release)

    @property
    def ok(self) -> bool:
        return self.differences == 0


def _smallest(diffs: Sequence[tuple[str, object, object]]) -> str:
    if not diffs:
        return ""
    given, kafka, ours = min(diffs, key=lambda d: len(d[0]))
    return f"{given}\nkafka: {kafka}\nours:  {ours}"


def _keys(bridge: KafkaBridge, release: str, rng: random.Random, n: int) -> Compared:
    from kcheck.reference import kafka_partitioner as kp

    requests = [kp.random_key_request(rng, keys=50) for _ in range(max(1, n // 50))]
    diffs: list[tuple[str, object, object]] = []
    inputs = 0
    for (parts, keys), answers in zip(requests, kp.kafka_key_answers(bridge, requests), strict=True):
        for key, kafka, ours in zip(keys, answers, kp.reference_key_answers(parts, keys), strict=True):
            inputs += 1
            if kafka != ours:
                diffs.append((f"PKEY {kp.encode_keys(parts, [key])}", kafka, ours))
    return Compared(inputs, len(diffs), _smallest(diffs))


def _sticky(bridge: KafkaBridge, release: str, rng: random.Random, n: int) -> Compared:
    from kcheck.reference import kafka_partitioner as kp

    cases = [kp.random_sticky_case(rng) for _ in range(n)]
    diffs = [(kp.encode_sticky(c), k, r) for c, k in zip(cases, kp.kafka_sticky_outcomes(bridge, cases), strict=True)
             if k != (r := kp.reference_sticky_outcome(c, release))]
    return Compared(len(cases), len(diffs), _smallest(diffs))


def _header_rule(rule: str) -> Callable[[KafkaBridge, str, random.Random, int], Compared]:
    def run(bridge: KafkaBridge, release: str, rng: random.Random, n: int) -> Compared:
        from kcheck.reference import kafka_protocol_headers as kh

        lines = [kh.random_request(rng, release, rule) for _ in range(n)]
        diffs = [(line, k, r) for line, k in zip(lines, kh.kafka_answers(bridge, lines), strict=True)
                 if k != (r := kh.reference_answer(release, line))]
        return Compared(len(lines), len(diffs), _smallest(diffs))
    return run


def _producer_state(bridge: KafkaBridge, release: str, rng: random.Random, n: int) -> Compared:
    from kcheck.reference import kafka_producer_state as kps

    cases, steps = [], 0
    while steps < n:  # each script is up to 30 steps; every step is one compared input
        cases.append(kps.random_case(rng, release))
        steps += len(cases[-1].ops)
    diffs: list[tuple[str, object, object]] = []
    for case, kafka in zip(cases, kps.kafka_answers(bridge, cases), strict=True):
        ours = kps.reference_answers(case, release)
        diffs += [(kps.encode_case(case) + f" (step {i})", k, r)
                  for i, (k, r) in enumerate(zip(kafka, ours, strict=True)) if k != r]
    return Compared(steps, len(diffs), _smallest(diffs))


def _fetch_rule(rule: str) -> Callable[[KafkaBridge, str, random.Random, int], Compared]:
    def run(bridge: KafkaBridge, release: str, rng: random.Random, n: int) -> Compared:
        from kcheck.reference import kafka_fetch

        return Compared(*kafka_fetch.compare(bridge, release, rule, rng, n))
    return run


def _log_validator(bridge: KafkaBridge, release: str, rng: random.Random, n: int) -> Compared:
    from kcheck.reference import kafka_produce_admission as kpa

    cases = [kpa.random_case(rng, release) for _ in range(n)]  # each rule in turn, at random
    diffs = [(kpa.encode_case(c), k, r) for c, k in zip(cases, kpa.kafka_answers(bridge, cases), strict=True)
             if k != (r := kpa.reference_answer(c, release))]
    return Compared(len(cases), len(diffs), _smallest(diffs))


def _client_metadata(bridge: KafkaBridge, release: str, rng: random.Random, n: int) -> Compared:
    from kcheck.reference import kafka_client_metadata

    return Compared(*kafka_client_metadata.compare_random(bridge, rng, n))


def _delayed_produce(bridge: KafkaBridge, release: str, rng: random.Random, n: int) -> Compared:
    from kcheck.reference import kafka_purgatory

    return Compared(*kafka_purgatory.compare_random(bridge, rng, n))


FAMILIES: tuple[SpotFamily, ...] = (
    SpotFamily("key -> partition", ("PKEY",), "Utils.murmur2, BuiltInPartitioner.partitionForKey", _keys),
    SpotFamily("null-key partition", ("PSTICKY",), "BuiltInPartitioner (KIP-794, KIP-1123)", _sticky),
    SpotFamily("request headers", ("HDR_ENC", "HDR_PARSE", "HDR_RESP", "HDR_VERSIONS"),
               "RequestHeader, ResponseHeader, ApiKeys", _header_rule("headers")),
    SpotFamily("ApiVersions negotiation", ("APIVER_ADV", "APIVER_USE", "APIVER_X", "APIVER_REQ"),
               "ApiVersionsResponse, NodeApiVersions", _header_rule("negotiation")),
    SpotFamily("idempotent producer state", ("PSTATE",), "ProducerStateManager, ProducerAppendInfo",
               _producer_state),
    SpotFamily("produce: record-batch validation", ("LOGVAL",), "LogValidator", _log_validator),
    SpotFamily("fetch: leader epoch cache", ("EPOCH",), "LeaderEpochFileCache", _fetch_rule("EPOCH")),
    SpotFamily("fetch: isolation and parameters", ("FPARAMS",), "FetchIsolation, FetchParams",
               _fetch_rule("FPARAMS")),
    SpotFamily("fetch: reading a log", ("FREAD",), "UnifiedLog.read, LocalLog.read", _fetch_rule("FREAD")),
    SpotFamily("client metadata cache", ("CMETA",), "Metadata (KIP-320, KIP-951)", _client_metadata),
    SpotFamily("acks=all purgatory", ("DPROD",), "DelayedProduce (Scala to 4.2, Java from 4.3)", _delayed_produce,
               server=True),
)


def _families_on(bridge: KafkaBridge, families: Sequence[SpotFamily], release: str, inputs: int,
                 seed: int) -> list[SpotOutcome]:
    words = bridge.start().words
    out = []
    for family in families:
        missing = [w for w in family.words if w not in words]
        if missing:
            out.append(SpotOutcome(family.name, family.kafka, release,
                                   skipped=f"{release}'s harness does not answer {', '.join(missing)}"))
            continue
        started = time.perf_counter()
        got = family.run(bridge, release, random.Random(f"{seed}/{release}/{family.name}"), inputs)
        out.append(SpotOutcome(family.name, family.kafka, release, got.inputs, got.differences,
                               time.perf_counter() - started, got.smallest))
    return out


def _release_outcomes(release: str, inputs: int, seed: int) -> list[SpotOutcome]:
    from kcheck.reference.kafka_jars import cached_server_harness

    clients = [f for f in FAMILIES if not f.server]
    with KafkaBridge(release) as bridge:
        out = _families_on(bridge, clients, release, inputs, seed)
    broker_side = [f for f in FAMILIES if f.server]
    if cached_server_harness(release) is None:
        return out + [SpotOutcome(f.name, f.kafka, release, skipped=f"Kafka {release}'s broker jars or Mockito are "
                                  "not cached (the kafka-marked tests fetch them)") for f in broker_side]
    with KafkaBridge(release, server=True) as bridge:
        return out + _families_on(bridge, broker_side, release, inputs, seed)


def _release(release: str, inputs: int, seed: int) -> list[SpotOutcome]:
    from kcheck.reference.kafka_jars import cached

    if cached(release) is None:
        return [SpotOutcome(f.name, f.kafka, release, skipped=f"Kafka {release}'s jars are not cached "
                            f"(`kcheck kafka-classpath --kafka-version {release}` fetches them)") for f in FAMILIES]
    try:
        return _release_outcomes(release, inputs, seed)
    except KafkaBridgeError as e:  # no JDK, or a harness that does not start: said, not a crash
        return [SpotOutcome(f.name, f.kafka, release, skipped=f"Kafka {release}'s classes did not run: {e}")
                for f in FAMILIES]


def run_spot_checks(releases: Sequence[str] = SPOT_RELEASES, inputs: int = SPOT_INPUTS,
                    seed: int = 0) -> list[SpotOutcome]:
    """Every family on every release in `releases` whose jars are cached; the others reported as skipped.

    Two releases at a time: each JVM answers while Python draws and runs the reference for the other."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = [pool.submit(_release, release, inputs, seed) for release in releases]
        return [o for run in runs for o in run.result()]
