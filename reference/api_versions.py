"""ApiVersions negotiation between a client of one Kafka release and a broker of another, bit-exact.

Mirrors, per release (3.9.x to 4.4.x, checked through the bridge: `reference/kafka_protocol_headers.py`):

- `clients/src/main/java/org/apache/kafka/common/requests/ApiVersionsResponse.java`: `filterApis` (what a broker
  listener advertises: its APIs, the unstable latest version left out unless enabled, the telemetry APIs only with
  a telemetry receiver) and `intersect`;
- `clients/.../common/protocol/ApiKeys.java`: `toApiVersionForApiResponse` (4.0+: Produce advertised from 0 on a
  broker listener, KAFKA-18659), `latestVersion(enableUnstableLastVersion)`, `clientApis`;
- `clients/.../clients/NodeApiVersions.java`: `latestUsableVersion` (the highest version both sides allow, else
  `UnsupportedVersionException` with Kafka's message);
- `clients/.../common/requests/ApiVersionsRequest.java` and `RequestContext.parseRequest`: the broker answers an
  ApiVersions request of a version it does not know in v0, with `UNSUPPORTED_VERSION` and its own ApiVersions
  range (KIP-511); a v3+ request must name its client software by the pattern (`isValid`);
- the client's side of that exchange in `clients/.../clients/NetworkClient.java` (`handleApiVersionsResponse`,
  private, so modelled, not bridged): it first asks at its newest ApiVersions version, retries at the broker's
  newest after `UNSUPPORTED_VERSION`, and disconnects on any other error or an error to a v0 request.

The versions come from each release's message JSON (`protocol_messages.py`). "Which version does a client use"
is the default request builder's range (`AbstractRequest.Builder(apiKey)`: oldest to the newest stable version);
some builders narrow it further (a consumer's Fetch, a transactional Produce), which this module does not model.
A broker here is one whose controller runs the same release (`DefaultApiVersionManager` then advertises the
broker's own ranges), with the default `unstable.api.versions.enable=false` and no client-telemetry receiver.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache

from kcheck.reference.protocol_messages import ApiSpec, table
from kcheck.reference.releases import profile
from kcheck.reference.request_header import API_VERSIONS_KEY, HeaderFailure

__all__ = [
    "ApiVersion",
    "Handshake",
    "NodeApiVersions",
    "advertised",
    "api_versions_request",
    "client_versions",
    "enum_name",
    "handshake",
    "intersect",
]

PRODUCE_KEY = 0
TELEMETRY_KEYS = frozenset({71, 72})  # GetTelemetrySubscriptions, PushTelemetry
UNSUPPORTED_VERSION = 35  # Errors.UNSUPPORTED_VERSION
CLIENT_SOFTWARE_NAME = "apache-kafka-java"  # ApiVersionsRequest.Builder's default
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


@dataclass(frozen=True)
class ApiVersion:
    """ApiVersionsResponseData.ApiVersion: one API and the version range one side supports."""

    key: int
    min: int
    max: int


def enum_name(api: ApiSpec) -> str:
    """The ApiKeys constant's name (what Kafka's messages print): MessageGenerator.toSnakeCase, upper-cased."""
    return _snake(api.name)


@cache
def _snake(name: str) -> str:
    out, prev_upper = [], True
    for c in name:
        if c.isupper():
            if not prev_upper:
                out.append("_")
            prev_upper = True
        else:
            prev_upper = False
        out.append(c.upper())
    return "".join(out)


def _in_listener(api: ApiSpec, listeners: Iterable[str]) -> bool:
    return any(listener in api.listeners for listener in listeners)


def _to_api_version(release: str, api: ApiSpec, enable_unstable: bool, listener: str) -> ApiVersion | None:
    """ApiKeys.toApiVersionForApiResponse: the advertised range, or None when no version is enabled."""
    oldest = api.valid.lowest
    if api.key == PRODUCE_KEY and listener == "BROKER" and profile(release).produce_advertised_min_zero:
        oldest = 0
    latest = api.latest(enable_unstable)
    return ApiVersion(api.key, oldest, latest) if latest >= oldest else None


@cache
def advertised(release: str, listener: str = "BROKER", enable_unstable: bool = False,
               telemetry: bool = False) -> tuple[ApiVersion, ...]:
    """ApiVersionsResponse.filterApis: what a listener of this release advertises, in ApiKeys order."""
    out = []
    for api in table(release).apis:
        if listener not in api.listeners or (api.key in TELEMETRY_KEYS and not telemetry):
            continue
        v = _to_api_version(release, api, enable_unstable, listener)
        if v is not None:
            out.append(v)
    return tuple(out)


def intersect(a: ApiVersion | None, b: ApiVersion | None) -> ApiVersion | None:
    """ApiVersionsResponse.intersect: the common range, None when there is none."""
    if a is None or b is None:
        return None
    if a.key != b.key:
        raise HeaderFailure("IllegalArgumentException",
                            f"thisVersion.apiKey: {a.key} must be equal to other.apiKey: {b.key}")
    lo, hi = max(a.min, b.min), min(a.max, b.max)
    return None if lo > hi else ApiVersion(a.key, lo, hi)


class NodeApiVersions:
    """What a client of `release` keeps of a broker's ApiVersions answer (NodeApiVersions, no features)."""

    def __init__(self, release: str, ads: Iterable[ApiVersion]) -> None:
        self.release = release
        self._table = table(release)
        self.supported: dict[int, ApiVersion] = {}
        self.unknown: list[ApiVersion] = []  # APIs newer than the client
        for a in ads:
            if self._table.api(a.key) is not None:
                self.supported[a.key] = a  # a repeated key: the last one counts (EnumMap.put)
            else:
                self.unknown.append(a)

    def latest_usable_version(self, key: int, oldest: int | None = None, latest: int | None = None) -> int:
        """latestUsableVersion(ApiKeys.forId(key)[, oldest, latest]); the default range is the client's whole
        range, unstable latest version included (ApiKeys.latestVersion())."""
        api = self._table.api(key)
        if api is None:
            raise HeaderFailure("IllegalArgumentException", f"Unexpected api key: {key}")  # ApiKeys.forId
        if oldest is None or latest is None:
            oldest, latest = api.valid.lowest, api.latest(True)
        name = enum_name(api)
        node = self.supported.get(key)
        if node is None:
            raise HeaderFailure("UnsupportedVersionException", f"The node does not support {name}")
        both = intersect(node, ApiVersion(key, oldest, latest))
        if both is None:
            raise HeaderFailure("UnsupportedVersionException",
                                f"The node does not support {name} with version in range [{oldest},{latest}]. "
                                f"The supported range is [{node.min},{node.max}].")
        return both.max


def client_versions(client: str, ads: Iterable[ApiVersion]) -> dict[int, int | None]:
    """For each API a client of `client` knows (ApiKeys.clientApis), the version its default request builder uses
    against a broker advertising `ads` (oldest to newest stable version), or None when none is usable."""
    node = NodeApiVersions(client, ads)
    out: dict[int, int | None] = {}
    for api in table(client).apis:
        if not _in_listener(api, profile(client).client_api_listeners):
            continue
        try:
            out[api.key] = node.latest_usable_version(api.key, api.valid.lowest, api.latest(False))
        except HeaderFailure:
            out[api.key] = None
    return out


@dataclass(frozen=True)
class BrokerAnswer:
    """The broker's first look at an ApiVersions request: UNSUPPORTED_VERSION with its own range, or valid or not."""

    unsupported: bool
    error_code: int = 0
    api_keys: tuple[ApiVersion, ...] = ()
    valid: bool = True


def api_versions_request(release: str, version: int, software_name: str, software_version: str) -> BrokerAnswer:
    """RequestContext.parseRequest + ApiVersionsRequest.getErrorResponse / isValid on a broker of `release`."""
    api = table(release).named("ApiVersions")
    if not api.valid.lowest <= version <= api.latest(True):
        return BrokerAnswer(True, UNSUPPORTED_VERSION, (ApiVersion(API_VERSIONS_KEY, api.valid.lowest,
                                                                   api.latest(True)),))
    valid = version < 3 or bool(_SOFTWARE.fullmatch(software_name) and _SOFTWARE.fullmatch(software_version))
    return BrokerAnswer(False, valid=valid)


@dataclass(frozen=True)
class Handshake:
    """A client of one release meets a broker of another: the ApiVersions versions tried, then per API the version
    the client uses (None: no usable version, the request fails with UnsupportedVersionException on the client)."""

    client: str
    broker: str
    tried: tuple[int, ...]  # ApiVersions request versions, in order
    connected: bool
    versions: Mapping[int, int | None]


def handshake(client: str, broker: str, telemetry: bool = False) -> Handshake:
    """NetworkClient's ApiVersions exchange (handleApiVersionsResponse) against the broker's answers."""
    version = table(client).named("ApiVersions").latest(True)  # ApiVersionsRequest.Builder(): latestVersion()
    tried: list[int] = []
    while version not in tried:
        tried.append(version)
        answer = api_versions_request(broker, version, CLIENT_SOFTWARE_NAME, client)
        if not answer.unsupported:
            if not answer.valid:  # INVALID_REQUEST: the client disconnects
                break
            return Handshake(client, broker, tuple(tried), True,
                             client_versions(client, advertised(broker, telemetry=telemetry)))
        if version == 0:
            break
        mine = [a for a in answer.api_keys if a.key == API_VERSIONS_KEY]
        version = mine[0].max if mine else 0
    return Handshake(client, broker, tuple(tried), False, {})
