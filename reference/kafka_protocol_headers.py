"""The differential for request headers and ApiVersions: `request_header` and `api_versions` against Kafka's classes.

Request words (handler `reference/harness/KcheckProtocolHeaders.java`, kafka-clients, every release; its comment
gives each answer's grammar):

    HDR_ENC apiKey apiVersion correlationId clientId   new RequestHeader(...): header version, size, bytes, and
                                                       toResponseHeader()'s version and bytes
    HDR_PARSE hex                                      RequestHeader.parse
    HDR_RESP hex headerVersion                         ResponseHeader.parse
    HDR_VERSIONS apiKey v,v,...                        ApiKeys: range, listeners, header versions at any version
    APIVER_ADV listener unstable telemetry             ApiVersionsResponse.filterApis
    APIVER_USE ads query,...                           NodeApiVersions.latestUsableVersion
    APIVER_X a b                                       ApiVersionsResponse.intersect
    APIVER_REQ version softwareName softwareVersion    an ApiVersions request's first check on the broker

Two rules: `headers` (the HDR_* words) and `negotiation` (the APIVER_* words). Each input is one request line; the
answers are compared as the harness prints them, our side rendered in the same tokens (`reference_answer`).
Random inputs reach the edges: unknown and removed API keys, versions -32768 / -1 / one past the newest / 32767,
correlation ids Integer.MIN_VALUE and -1, null / empty / non-ASCII / unpaired-surrogate / over-long client ids,
truncated and corrupted header bytes, 5-byte varints, negative tagged-field sizes, empty and inverted ranges.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from functools import cache

from kcheck.reference import api_versions as av
from kcheck.reference.kafka_bridge import KafkaBridge, decode_text, encode_text
from kcheck.reference.protocol_messages import table
from kcheck.reference.request_header import (
    HeaderFailure,
    encode_request_header,
    parse_request_header,
    parse_response_header,
    request_header_version,
    response_header_version,
)

__all__ = ["RULES", "kafka_answers", "random_request", "reference_answer"]

RULES = ("headers", "negotiation")
SHORT_MIN, SHORT_MAX, INT_MIN, INT_MAX = -(1 << 15), (1 << 15) - 1, -(1 << 31), (1 << 31) - 1


def _hex(b: bytes) -> str:
    return b.hex() or "_"


def _text(s: str | None) -> str:
    return encode_text(s)


def _tagged(fields: Sequence[tuple[int, bytes]]) -> str:
    return ",".join(f"{t}:{_hex(b)}" for t, b in fields) or "~"


def _failure(e: HeaderFailure) -> str:
    return f"!{e.java_name} {_text(e.message)}"


# ---------------------------------------------------------------- our side, in the harness's tokens


def _enc(release: str, t: list[str]) -> str:
    try:
        h = encode_request_header(release, int(t[1]), int(t[2]), int(t[3]), decode_text(t[4]))
    except HeaderFailure as e:
        return "OK " + _failure(e)
    return f"OK {h.header_version} {h.size} {_hex(h.data)} {h.response_header_version} {_hex(h.response_data)}"


def _parse(release: str, t: list[str]) -> str:
    try:
        h = parse_request_header(release, bytes.fromhex("" if t[1] == "_" else t[1]))
    except HeaderFailure as e:
        return f"OK {_failure(e)} {e.cause or '-'}"
    return (f"OK {h.api_key} {h.api_version} {h.correlation_id} {_text(h.client_id)} {h.header_version} {h.size} "
            f"{int(h.version_supported)} {_tagged(h.tagged)}")


def _resp(release: str, t: list[str]) -> str:
    try:
        h = parse_response_header(release, bytes.fromhex("" if t[1] == "_" else t[1]), int(t[2]))
    except HeaderFailure as e:
        return "OK " + _failure(e)
    return f"OK {h.correlation_id} {h.size} {_tagged(h.tagged)}"


def _side(f: Callable[[str, int, int], int], release: str, key: int, version: int) -> str:
    try:
        return str(f(release, key, version))
    except HeaderFailure as e:
        return "!" + e.java_name


def _versions(release: str, t: list[str]) -> str:
    key = int(t[1])
    api = table(release).api(key)
    if api is None:
        return f"OK !IllegalArgumentException {_text(f'Unexpected api key: {key}')}"
    listeners = ",".join(sorted(api.listeners)) or "~"
    out = [f"OK {api.name} {api.valid.lowest} {api.latest(True)} {api.latest(False)} {listeners}"]
    for v in (int(x) for x in t[2].split(",")):
        out.append(_side(request_header_version, release, key, v) + ":"
                   + _side(response_header_version, release, key, v))
    return " ".join(out)


def _ranges(vs: Sequence[av.ApiVersion]) -> str:
    return " ".join(f"{v.key}:{v.min}:{v.max}" for v in vs) or "~"


def _adv(release: str, t: list[str]) -> str:
    return "OK " + _ranges(av.advertised(release, t[1], t[2] == "1", t[3] == "1"))


def _api_version(tok: str) -> av.ApiVersion:
    k, lo, hi = (int(x) for x in tok.split(":"))
    return av.ApiVersion(k, lo, hi)


def _use(release: str, t: list[str]) -> str:
    ads = [] if t[1] == "~" else [_api_version(a) for a in t[1].split(",")]
    node = av.NodeApiVersions(release, ads)
    out = ["OK"]
    for q in t[2].split(","):
        f = q.split(":")
        try:
            v = (node.latest_usable_version(int(f[0])) if f[1] == "d"
                 else node.latest_usable_version(int(f[0]), int(f[1]), int(f[2])))
            out.append(str(v))
        except HeaderFailure as e:
            out.append(f"!{e.java_name}:{_text(e.message)}")
    return " ".join(out)


def _x(release: str, t: list[str]) -> str:
    try:
        v = av.intersect(_api_version(t[1]), _api_version(t[2]))
    except HeaderFailure as e:
        return f"OK !{e.java_name}:{_text(e.message)}"
    return "OK none" if v is None else f"OK {v.key}:{v.min}:{v.max}"


def _req(release: str, t: list[str]) -> str:
    a = av.api_versions_request(release, int(t[1]), decode_text(t[2]) or "", decode_text(t[3]) or "")
    if a.unsupported:
        return f"OK 1 {a.error_code} {_ranges(a.api_keys)}"
    return f"OK 0 {int(a.valid)}"


_OURS: dict[str, Callable[[str, list[str]], str]] = {
    "HDR_ENC": _enc, "HDR_PARSE": _parse, "HDR_RESP": _resp, "HDR_VERSIONS": _versions,
    "APIVER_ADV": _adv, "APIVER_USE": _use, "APIVER_X": _x, "APIVER_REQ": _req,
}
WORDS = {"headers": ("HDR_ENC", "HDR_PARSE", "HDR_RESP", "HDR_VERSIONS"),
         "negotiation": ("APIVER_ADV", "APIVER_USE", "APIVER_X", "APIVER_REQ")}


def reference_answer(release: str, line: str) -> str:
    """Our reference's answer to one request line, in the harness's tokens."""
    t = line.split(" ")
    return _OURS[t[0]](release, t)


def kafka_answers(bridge: KafkaBridge, lines: Sequence[str]) -> list[str]:
    bridge.require("HDR_PARSE", "request headers and ApiVersions")
    return bridge.roundtrip(list(lines))


# ---------------------------------------------------------------- random inputs


def _short(rng: random.Random, near: Sequence[int] = ()) -> int:
    r = rng.random()
    if r < 0.15:
        return rng.choice([SHORT_MIN, -1, 0, 1, SHORT_MAX, SHORT_MAX - 1])
    if near and r < 0.85:
        return rng.choice(near) + rng.choice([-1, 0, 0, 0, 1])
    return rng.randint(SHORT_MIN, SHORT_MAX)


def _int(rng: random.Random) -> int:
    if rng.random() < 0.3:
        return rng.choice([INT_MIN, INT_MIN + 1, -1, 0, 1, INT_MAX])
    return rng.randint(INT_MIN, INT_MAX)


_ALPHABETS = ("producer-1", "consumer", "abcXYZ019-._", "é€日本", "\U0001f600\U00010348", "\ud800\udc00\udfff",
              " \t", "\x00\x7f\x80")


def _client_id(rng: random.Random) -> str | None:
    r = rng.random()
    if r < 0.1:
        return None
    if r < 0.2:
        return ""
    if r < 0.201:  # around Short.MAX_VALUE UTF-8 bytes (rare: a long line)
        n = rng.choice([32766, 32767, 32768])
        return "x" * n if rng.random() < 0.5 else "é" * (n // 2) + "x" * (n % 2)
    alphabet = rng.choice(_ALPHABETS)
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))


@cache
def _keys(release: str) -> tuple[int, ...]:
    return tuple(a.key for a in table(release).apis)


def _api_key(rng: random.Random, release: str) -> int:
    keys = _keys(release)
    r = rng.random()
    if r < 0.85:
        return rng.choice(keys)
    if r < 0.95:
        return rng.choice([-1, max(keys) + 1, 99, 200, SHORT_MAX, SHORT_MIN])
    return rng.randint(SHORT_MIN, SHORT_MAX)


def _version(rng: random.Random, release: str, key: int) -> int:
    api = table(release).api(key)
    near = [api.valid.lowest, api.valid.highest, 0] if api else [0]
    return _short(rng, near)


def _uvarint(x: int) -> bytes:
    x &= 0xFFFFFFFF
    out = bytearray()
    while x >= 0x80:
        out.append((x & 0x7F) | 0x80)
        x >>= 7
    out.append(x)
    return bytes(out)


def _tagged_bytes(rng: random.Random) -> bytes:
    n = rng.choice([0, 0, 0, 1, 1, 2, 3])
    out = bytearray(_uvarint(n))
    for _ in range(n):
        data = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 3, 8])))
        out += _uvarint(rng.choice([0, 1, 7, 1000, INT_MAX]))
        size = len(data) if rng.random() < 0.85 else rng.choice([len(data) + 1, -1, INT_MIN, 300])
        out += _uvarint(size) + data
    return bytes(out)


def _corrupt(rng: random.Random, data: bytes) -> bytes:
    """Truncate, overwrite or extend some bytes, or replace the tail with a hostile varint."""
    b = bytearray(data)
    r = rng.random()
    if r < 0.3 and b:
        del b[rng.randrange(len(b)):]
    elif r < 0.6 and b:
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.choice([0x00, 0x7F, 0x80, 0xFF, rng.randrange(256)])
    elif r < 0.8:
        b += rng.choice([b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x80", b"\xff\xff\xff\xff\x7f", b"\x01",
                         b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"])
    else:
        b = bytearray(rng.randrange(256) for _ in range(rng.randint(0, 16)))
    return bytes(b)


# Well-formed sequences of each length, and the malformed ones Java and Python replace differently: truncated
# leads, lone continuations, overlong forms, encoded surrogates, code points past U+10FFFF, bytes never valid.
_UTF8_PIECES = (b"a", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xed\xa0\x80", b"\xed\xb3", b"\xc3",
                b"\xe2\x82", b"\xe0\x9f", b"\xf0\x9f", b"\xf0\x9f\x98", b"\xf0\x8f", b"\xf4\x90", b"\x80", b"\xbf",
                b"\xc0\xaf", b"\xc1", b"\xe0\x80\xaf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xf8", b"\xff",
                b"\xef\xbf\xbd")


def _request_bytes(rng: random.Random, release: str) -> bytes:
    key = _api_key(rng, release)
    version = _version(rng, release, key)
    try:
        hv = request_header_version(release, key, version)
    except HeaderFailure:
        hv = rng.choice([1, 2])
    head = bytearray(_api_key_bytes(key, version, _int(rng)))
    if hv >= 1:
        r = rng.random()
        if r < 0.1:
            head += b"\xff\xff"
        elif r < 0.4:  # raw, often malformed, UTF-8 as the client id
            raw = b"".join(rng.choice(_UTF8_PIECES) for _ in range(rng.randint(0, 5)))
            if rng.random() < 0.2:
                raw = bytes(rng.randrange(256) for _ in range(rng.randint(0, 6)))
            head += len(raw).to_bytes(2, "big") + raw
        else:
            cid = _client_id(rng) or ""
            raw = cid.encode("utf-8", "replace")[:300]
            head += len(raw).to_bytes(2, "big") + raw
    if hv >= 2:
        head += _tagged_bytes(rng)
    head += bytes(rng.randrange(256) for _ in range(rng.choice([0, 0, 2, 5])))  # the request body that follows
    return _corrupt(rng, bytes(head)) if rng.random() < 0.35 else bytes(head)


def _api_key_bytes(key: int, version: int, corr: int) -> bytes:
    return key.to_bytes(2, "big", signed=True) + version.to_bytes(2, "big", signed=True) + corr.to_bytes(
        4, "big", signed=True)


def _headers_line(rng: random.Random, release: str) -> str:
    r = rng.random()
    if r < 0.3:
        key = _api_key(rng, release)
        return (f"HDR_ENC {key} {_version(rng, release, key)} {_int(rng)} {_text(_client_id(rng))}")
    if r < 0.7:
        return f"HDR_PARSE {_hex(_request_bytes(rng, release))}"
    if r < 0.9:
        body = _int(rng).to_bytes(4, "big", signed=True) + _tagged_bytes(rng)
        if rng.random() < 0.35:
            body = _corrupt(rng, body)
        return f"HDR_RESP {_hex(body)} {rng.choice([0, 0, 1, 1, 2, -1, SHORT_MAX])}"
    key = _api_key(rng, release)
    versions = ",".join(str(_version(rng, release, key)) for _ in range(rng.randint(1, 8)))
    return f"HDR_VERSIONS {key} {versions}"


def _range_token(rng: random.Random, release: str, key: int) -> str:
    api = table(release).api(key)
    lo_hi = [api.valid.lowest, api.valid.highest] if api else [0, 3]
    lo = _short(rng, lo_hi) if rng.random() < 0.3 else rng.choice(lo_hi) + rng.choice([-1, 0, 0, 1, 2])
    hi = _short(rng, lo_hi) if rng.random() < 0.3 else max(lo, rng.choice(lo_hi)) + rng.choice([-2, -1, 0, 0, 1])
    lo, hi = (max(SHORT_MIN, min(SHORT_MAX, x)) for x in (lo, hi))
    return f"{key}:{lo}:{hi}"


def _ads(rng: random.Random, release: str) -> str:
    """A broker's advertisement: another release's real one, changed a little, or random ranges."""
    r = rng.random()
    if r < 0.4:
        other = rng.choice(table_releases())
        ads = [f"{a.key}:{a.min}:{a.max}" for a in av.advertised(other, "BROKER", rng.random() < 0.2)]
        if rng.random() < 0.1:
            rng.shuffle(ads)
        return ",".join(a for a in ads if rng.random() < 0.95) or "~"
    n = rng.choice([0, 1, 3, 10, 40])
    tokens = [_range_token(rng, release, _api_key(rng, release)) for _ in range(n)]
    return ",".join(tokens) or "~"


def table_releases() -> tuple[str, ...]:
    from kcheck.reference.protocol_messages import releases

    return releases()


def _listeners(release: str) -> tuple[str, ...]:
    return ("BROKER", "CONTROLLER", "ZK_BROKER") if "ZK_BROKER" in av.profile(release).client_api_listeners \
        else ("BROKER", "CONTROLLER")


def _negotiation_line(rng: random.Random, release: str) -> str:
    r = rng.random()
    if r < 0.02:
        return (f"APIVER_ADV {rng.choice(_listeners(release))} {rng.choice([0, 0, 1])} {rng.choice([0, 1])}")
    if r < 0.6:
        queries = []
        for _ in range(rng.randint(1, 8)):
            key = _api_key(rng, release) if rng.random() < 0.95 else rng.choice(_keys(release))
            queries.append(f"{key}:d" if rng.random() < 0.25 else _range_token(rng, release, key))
        return f"APIVER_USE {_ads(rng, release)} {','.join(queries)}"
    if r < 0.8:
        k1 = _api_key(rng, release)
        k2 = k1 if rng.random() < 0.9 else _api_key(rng, release)
        return f"APIVER_X {_range_token(rng, release, k1)} {_range_token(rng, release, k2)}"
    names = ["apache-kafka-java", "librdkafka", "a", "1.0", "x-", "-x", ".x", "x.", "", "é", "a b", "A-9.z"]
    version = _short(rng, [0, 3, table(release).named("ApiVersions").valid.highest, 6])
    return f"APIVER_REQ {version} {_text(rng.choice(names))} {_text(rng.choice(names + [release]))}"


def random_request(rng: random.Random, release: str, rule: str) -> str:
    """One random request line of `rule` ('headers' or 'negotiation') for `release`."""
    return _headers_line(rng, release) if rule == "headers" else _negotiation_line(rng, release)
