"""Each Kafka release's protocol messages as a table: API keys, valid and flexible versions, listeners.

Kafka generates `ApiMessageType`, `RequestHeaderData` and `ResponseHeaderData` from the JSON message definitions
in `clients/src/main/resources/common/message/` (shipped inside every kafka-clients jar since 2.x). This module
holds those definitions, reduced to what the headers and ApiVersions negotiation need, for every release kcheck
knows, in `protocol_messages.json` beside it. The table is GENERATED from the jars, never edited by hand:

    python -m kcheck.reference.protocol_messages [--check]    # rewrite (or check) the table from the cached jars

`tests/test_protocol_headers.py` checks the table against the jars that are cached, and the bridge compares
everything built on it with Kafka's own generated classes (`reference/kafka_protocol_headers.py`).

Version ranges follow `org.apache.kafka.message.Versions.parse` (generator/): `none` is the empty range, shown
as lowest 0 and highest -1, as the generated `ApiMessageType` constructors show it; `N+` reaches `Short.MAX_VALUE`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["SHORT_MAX", "ApiSpec", "MessageTable", "Versions", "releases", "table"]

SHORT_MAX = 32767
TABLE = Path(__file__).with_name("protocol_messages.json")
_LISTENERS = {"zkBroker": "ZK_BROKER", "broker": "BROKER", "controller": "CONTROLLER"}


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; `none` is (0, -1)."""

    lowest: int
    highest: int

    @property
    def empty(self) -> bool:
        return self.lowest > self.highest

    def __contains__(self, version: int) -> bool:
        return self.lowest <= version <= self.highest

    @staticmethod
    def parse(text: str | None) -> Versions:
        """Versions.parse of Kafka's generator (a missing value is `none`)."""
        text = (text or "none").strip()
        if text == "none":
            return Versions(0, -1)
        if text.endswith("+"):
            return Versions(int(text[:-1]), SHORT_MAX)
        lo, _, hi = text.partition("-")
        return Versions(int(lo), int(hi or lo))


@dataclass(frozen=True)
class ApiSpec:
    """One API key of one release: its request's valid and flexible versions and its response's."""

    key: int
    name: str  # "Produce", as ApiMessageType names it
    valid: Versions  # the request's validVersions
    latest_unstable: bool
    request_flexible: Versions
    response_valid: Versions
    response_flexible: Versions
    listeners: frozenset[str]  # ZK_BROKER / BROKER / CONTROLLER

    @property
    def has_valid_version(self) -> bool:
        return not self.valid.empty

    def latest(self, enable_unstable: bool = True) -> int:
        """ApiMessageType.highestSupportedVersion(enableUnstableLastVersion): one below when the latest is unstable."""
        return self.valid.highest if (enable_unstable or not self.latest_unstable) else self.valid.highest - 1


@dataclass(frozen=True)
class MessageTable:
    """One release's message definitions."""

    release: str
    request_header: Versions
    request_header_flexible: Versions
    response_header: Versions
    response_header_flexible: Versions
    apis: tuple[ApiSpec, ...]  # by key
    _keys: dict[int, ApiSpec] = field(init=False, repr=False, compare=False, hash=False)
    _names: dict[str, ApiSpec] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_keys", {a.key: a for a in self.apis})
        object.__setattr__(self, "_names", {a.name: a for a in self.apis})

    def api(self, key: int) -> ApiSpec | None:
        return self._keys.get(key)

    def named(self, name: str) -> ApiSpec:
        return self._names[name]


# ---------------------------------------------------------------- reading the jars

_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*')


def _json(text: str) -> dict[str, Any]:
    """Kafka's message JSON allows // comments (Jackson's ALLOW_COMMENTS): drop them outside strings."""
    return json.loads(_COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text))


def _range(v: Versions) -> list[int]:
    return [v.lowest, v.highest]


def read_jar(jar: Path) -> dict[str, Any]:
    """The table entry of one kafka-clients jar (the generator's input, reduced)."""
    specs: dict[str, dict[str, Any]] = {}
    with zipfile.ZipFile(jar) as z:
        for name in z.namelist():
            if name.startswith("common/message/") and name.endswith(".json"):
                spec = _json(z.read(name).decode("utf-8"))
                specs[str(spec["name"])] = spec
    headers = {h: [_range(Versions.parse(specs[h]["validVersions"])),
                   _range(Versions.parse(specs[h].get("flexibleVersions")))]
               for h in ("RequestHeader", "ResponseHeader")}
    apis = []
    for spec in specs.values():
        if spec.get("type") != "request":
            continue
        name = str(spec["name"])[: -len("Request")]
        response = specs[name + "Response"]
        listeners = sorted(_LISTENERS[x] for x in spec.get("listeners", []))
        apis.append([spec["apiKey"], name,
                     _range(Versions.parse(spec["validVersions"])), bool(spec.get("latestVersionUnstable", False)),
                     _range(Versions.parse(spec.get("flexibleVersions"))),
                     _range(Versions.parse(response["validVersions"])),
                     _range(Versions.parse(response.get("flexibleVersions"))),
                     listeners])
    apis.sort(key=lambda a: int(a[0]))
    return {"headers": headers, "apis": apis}


def generate(releases_: Iterable[str]) -> dict[str, Any]:
    """The whole table from the cached kafka-clients jars of these releases."""
    from kcheck.reference.kafka_jars import cached, cached_server

    out: dict[str, Any] = {}
    for version in releases_:
        jars = [j for rel in (cached(version), cached_server(version)) if rel for j in rel.jars]
        jar = next((j for j in jars if j.name == f"kafka-clients-{version}.jar"), None)
        if jar is None:
            raise FileNotFoundError(f"kafka-clients {version} is not cached (kcheck.reference.kafka_jars.resolve)")
        out[version] = read_jar(jar)
    return out


def _dump(data: dict[str, Any]) -> str:
    lines = ["{"]
    for i, (version, e) in enumerate(data.items()):
        lines.append(f'  "{version}": {{"headers": {json.dumps(e["headers"])}, "apis": [')
        apis = e["apis"]
        lines += [f"    {json.dumps(a)}" + ("," if j < len(apis) - 1 else "") for j, a in enumerate(apis)]
        lines.append("  ]}" + ("," if i < len(data) - 1 else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the table


@cache
def _raw() -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(TABLE.read_text(encoding="utf-8"))
    return raw


def releases() -> tuple[str, ...]:
    """The releases the table covers."""
    return tuple(_raw())


@cache
def table(release: str) -> MessageTable:
    """One release's message table (KeyError for a release the table lacks)."""
    entry = _raw()[release]
    (rh, rhf), (sh, shf) = entry["headers"]["RequestHeader"], entry["headers"]["ResponseHeader"]
    apis = tuple(ApiSpec(int(a[0]), str(a[1]), Versions(*a[2]), bool(a[3]), Versions(*a[4]),
                         Versions(*a[5]), Versions(*a[6]), frozenset(a[7]))
                 for a in entry["apis"])
    return MessageTable(release, Versions(*rh), Versions(*rhf), Versions(*sh), Versions(*shf), apis)


def main(argv: list[str] | None = None) -> int:
    from kcheck.reference.kafka_jars import BRIDGE_RELEASES

    p = argparse.ArgumentParser(description="Write (or --check) protocol_messages.json from the cached jars.")
    p.add_argument("--check", action="store_true", help="only compare the table with the jars; exit 1 if they differ")
    a = p.parse_args(argv)
    text = _dump(generate(sorted(BRIDGE_RELEASES, key=lambda v: tuple(map(int, v.split("."))))))
    if a.check:
        same = TABLE.read_text(encoding="utf-8") == text
        print("protocol_messages.json matches the jars" if same else "protocol_messages.json differs from the jars")
        return 0 if same else 1
    TABLE.write_text(text, encoding="utf-8")
    print(f"wrote {TABLE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
