"""Differential: `request_header` and `api_versions` against Kafka's RequestHeader, ResponseHeader, ApiKeys,
ApiVersionsResponse, ApiVersionsRequest and NodeApiVersions of 3.9.1, 4.0.2, 4.1.2 and 4.4.0 (handler
reference/harness/KcheckProtocolHeaders.java), and `protocol_messages.json` against the jars' message JSON.

Each release gets a few thousand random request lines per rule in one round trip each; the cross-release test runs a
client release's NodeApiVersions on what a broker release's own filterApis advertises (two JVMs), which is the
negotiation between any two releases with nothing of ours in Kafka's half. KCHECK_KAFKA_RELEASES overrides the list.
"""

from __future__ import annotations

import itertools
import random

import pytest

from kafka_support import ENV_RELEASES
from kafka_support import kafka_bridge as _kafka
from kcheck.reference import api_versions as av
from kcheck.reference import kafka_protocol_headers as kh
from kcheck.reference import protocol_messages as pm
from kcheck.reference.kafka_jars import cached

RELEASES = list(ENV_RELEASES) or ["4.4.0", "4.1.2", "4.0.2", "3.9.1"]
PER_RULE = 3000


def _differences(version: str, lines: list[str]) -> list[tuple[str, str, str]]:
    theirs = kh.kafka_answers(_kafka(version), lines)
    return [(line, k, r) for line, k in zip(lines, theirs, strict=True)
            if k != (r := kh.reference_answer(version, line))]


@pytest.mark.kafka
@pytest.mark.parametrize("rule", kh.RULES)
@pytest.mark.parametrize("version", RELEASES)
def test_reference_answers_as_kafka(version: str, rule: str) -> None:
    rng = random.Random(f"{version}/{rule}")
    lines = [kh.random_request(rng, version, rule) for _ in range(PER_RULE)]
    diffs = _differences(version, lines)
    if diffs:
        line, k, r = min(diffs, key=lambda d: len(d[0]))
        pytest.fail(f"{len(diffs)}/{len(lines)} differ; smallest:\n{line}\nkafka: {k}\nours:  {r}")


@pytest.mark.kafka
def test_every_api_key_and_every_listener_as_kafka() -> None:
    """Not random: each API key's range, listeners and header versions around its range, and each listener's
    advertisement with and without the unstable latest versions and the telemetry APIs."""
    for version in RELEASES:
        keys = [a.key for a in pm.table(version).apis] + [-1, max(a.key for a in pm.table(version).apis) + 1]
        lines = []
        for key in keys:
            api = pm.table(version).api(key)
            hi = api.valid.highest if api else 3
            lines.append(f"HDR_VERSIONS {key} " + ",".join(map(str, (-32768, -1, 0, 1, 2, 3, hi, hi + 1, 32767))))
        lines += [f"APIVER_ADV {listener} {u} {t}" for listener in kh._listeners(version)
                  for u, t in itertools.product((0, 1), (0, 1))]
        diffs = _differences(version, lines)
        assert not diffs, diffs[:3]


@pytest.mark.kafka
def test_any_client_release_against_any_broker_release() -> None:
    """The version a client of release A uses for each API against a broker of release B (A's NodeApiVersions over
    B's own advertisement, each in its own JVM), and B's answer to A's first ApiVersions request."""
    for client, broker in itertools.product(RELEASES, repeat=2):
        ads = _kafka(broker).roundtrip(["APIVER_ADV BROKER 0 0"])[0].split()[1:]
        apis = [a for a in pm.table(client).apis
                if any(listener in a.listeners for listener in av.profile(client).client_api_listeners)]
        queries = ",".join(f"{a.key}:{a.valid.lowest}:{a.latest(False)}" for a in apis)
        (answer,) = _kafka(client).roundtrip([f"APIVER_USE {','.join(ads) or '~'} {queries}"])
        theirs = {a.key: (None if tok.startswith("!") else int(tok)) for a, tok in zip(apis, answer.split()[1:],
                                                                                         strict=True)}
        ours = av.handshake(client, broker)
        assert ours.connected and ours.versions == theirs, (client, broker)
        first = pm.table(client).named("ApiVersions").latest(True)
        (their_first,) = _kafka(broker).roundtrip([f"APIVER_REQ {first} {kh._text(av.CLIENT_SOFTWARE_NAME)} "
                                                   f"{kh._text(client)}"])
        assert their_first == kh.reference_answer(broker, f"APIVER_REQ {first} {kh._text(av.CLIENT_SOFTWARE_NAME)} "
                                                          f"{kh._text(client)}"), (client, broker)


def test_the_table_is_the_jars_message_json() -> None:
    """protocol_messages.json, entry by entry, against every cached kafka-clients jar (none cached: skipped)."""
    checked = 0
    for version in pm.releases():
        rel = cached(version)
        jar = next((j for j in rel.jars if j.name == f"kafka-clients-{version}.jar"), None) if rel else None
        if jar is None:
            continue
        assert pm._raw()[version] == pm.read_jar(jar), version
        checked += 1
    if not checked:
        pytest.skip("no kafka-clients jar is cached")


def test_a_440_client_against_a_391_broker_falls_back_and_keeps_produce_at_11() -> None:
    """KIP-896: a 4.x client's Produce starts at 3, a 3.9 broker stops at 11; the ApiVersions exchange itself
    starts at the client's newest ApiVersions version, which an older broker answers with UNSUPPORTED_VERSION
    (KIP-511) when it does not know it."""
    shake = av.handshake("4.4.0", "3.9.1")
    assert shake.tried == (5, 4) and shake.connected
    assert shake.versions[0] == 11
    assert av.handshake("3.9.1", "4.4.0").tried == (4,)
