"""Kafka's request and response headers, bit-exact: which header version an API version uses, the bytes a client
writes, and what a broker (or a client) reads back, failures included.

Mirrors, per release (3.9.x to 4.4.x, checked through the bridge: `reference/kafka_protocol_headers.py`):

- `clients/src/main/java/org/apache/kafka/common/requests/RequestHeader.java` (`new RequestHeader(...)`, `size()`,
  `toResponseHeader()`, `parse(ByteBuffer)`) and `ResponseHeader.java` (`parse(ByteBuffer, short)`);
- the generated `RequestHeaderData` / `ResponseHeaderData` (`read`, `write`, `size`) and `ApiMessageType`'s
  `requestHeaderVersion` / `responseHeaderVersion`, which Kafka's generator
  (`generator/src/main/java/org/apache/kafka/message/ApiMessageTypeGenerator.java`, `VersionConditional.java`)
  writes from the message JSON: `protocol_messages.py` holds that JSON per release;
- `clients/.../common/protocol/ByteBufferAccessor.java` and `Readable.java` (strings, raw tagged fields) and
  `clients/.../common/utils/ByteUtils.java` (`readUnsignedVarint`); a client id's bytes decode as
  `java.lang.String(byte[], UTF_8)` does (JDK 17's `String.decodeUTF8_UTF16`).

Layout (KIP-482 for the tagged fields): request header v0 is api key INT16, api version INT16, correlation id INT32
(ControlledShutdown v0 only, gone in 4.0); v1 adds the client id (INT16 length, -1 for null, then UTF-8); v2 adds
the tagged-field section (an unsigned varint count, then tag, size and bytes per field). Response header v0 is the
correlation id, v1 adds tagged fields. A flexible API version takes the newer header, and an ApiVersions response
always has header v0 so that any client can read it (KIP-511).

Release differences (`ReleaseProfile`): `header_parse_refuses_removed_apis` (4.0 refuses an API key whose versions
were all removed before choosing a header version), `header_parse_wording` (the failure's "apiKey" / "apiKeyId")
and `tagged_field_count_checked` (4.2.2 and 4.4.0 bound the tagged-field count before reading; 4.3.x does not).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kcheck.reference.errors import KafkaError
from kcheck.reference.protocol_messages import ApiSpec, MessageTable, table
from kcheck.reference.releases import ReleaseProfile, profile

__all__ = [
    "EncodedHeader",
    "HeaderFailure",
    "ParsedRequestHeader",
    "ParsedResponseHeader",
    "encode_request_header",
    "parse_request_header",
    "parse_response_header",
    "request_header_version",
    "response_header_version",
]

API_VERSIONS_KEY = 18
CONTROLLED_SHUTDOWN_KEY = 7
_CLIENT_ID_MAX = 0x7FFF
MAX_TAGGED_FIELD_COUNT = 10_000  # MessageUtil.MAX_TAGGED_FIELD_COUNT, where the release checks it
_HEAD = struct.Struct(">hhi")


class HeaderFailure(KafkaError):
    """A Java exception Kafka's header code throws: its simple name, message and (for parse) its cause's name."""

    def __init__(self, java_name: str, message: str | None, cause: str | None = None) -> None:
        super().__init__(f"{java_name}: {message}")
        self.java_name = java_name
        self.message = message
        self.cause = cause


Tagged = tuple[tuple[int, bytes], ...]


@dataclass(frozen=True)
class EncodedHeader:
    header_version: int
    size: int
    data: bytes
    response_header_version: int  # toResponseHeader()
    response_data: bytes


@dataclass(frozen=True)
class ParsedRequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str  # a null client id reads as ""
    header_version: int
    size: int  # bytes the header took
    version_supported: bool  # ApiKeys.isVersionSupported: oldest <= version <= latest (unstable included)
    tagged: Tagged  # unknown tagged fields, in wire order


@dataclass(frozen=True)
class ParsedResponseHeader:
    correlation_id: int
    size: int
    tagged: Tagged


# ---------------------------------------------------------------- header versions (ApiMessageType)


def _flexible(valid: tuple[int, int], flexible: tuple[int, int], version: int) -> bool:
    """The branch VersionConditional.generate emits for 'is `version` flexible', evaluated at any version (also
    outside the valid range, where the generated code still answers)."""
    (vlo, vhi), (flo, fhi) = valid, flexible
    if vlo < flo:
        if vhi > fhi:
            return flo <= version <= fhi
        return vhi >= flo and version >= flo
    if vhi >= flo and vlo <= fhi:
        return vhi <= fhi or version <= fhi
    return False


def _spec(t: MessageTable, api_key: int) -> ApiSpec:
    api = t.api(api_key)
    if api is None or not api.has_valid_version:  # no case in the generated switch
        raise HeaderFailure("UnsupportedVersionException", f"Unsupported API key {api_key}")
    return api


def request_header_version(release: str, api_key: int, version: int) -> int:
    """ApiKeys.requestHeaderVersion(version): 2 when flexible, else 1 (0 for ControlledShutdown v0)."""
    api = _spec(table(release), api_key)
    if api_key == CONTROLLED_SHUTDOWN_KEY and version == 0:
        return 0
    valid, flexible = (api.valid.lowest, api.valid.highest), (api.request_flexible.lowest, api.request_flexible.highest)
    return 2 if _flexible(valid, flexible, version) else 1


def response_header_version(release: str, api_key: int, version: int) -> int:
    """ApiKeys.responseHeaderVersion(version): 1 when flexible, else 0; always 0 for ApiVersions (KIP-511)."""
    api = _spec(table(release), api_key)
    if api_key == API_VERSIONS_KEY:
        return 0
    valid = (api.response_valid.lowest, api.response_valid.highest)
    flexible = (api.response_flexible.lowest, api.response_flexible.highest)
    return 1 if _flexible(valid, flexible, version) else 0


# ---------------------------------------------------------------- encoding (a client's side)


def _api_key(t: MessageTable, api_key: int) -> ApiSpec:
    api = t.api(api_key)
    if api is None:
        raise HeaderFailure("IllegalArgumentException", f"Unexpected api key: {api_key}")  # ApiKeys.forId
    return api


def java_utf8(text: str) -> bytes:
    """String.getBytes(UTF_8): an unpaired surrogate becomes '?'."""
    return text.encode("utf-8", "surrogatepass") if text.isascii() else text.encode("utf-8", "replace")


def encode_request_header(release: str, api_key: int, version: int, correlation_id: int,
                          client_id: str | None) -> EncodedHeader:
    """new RequestHeader(ApiKeys.forId(api_key), version, client_id, correlation_id), written at its header version,
    and its toResponseHeader() written at the response header version."""
    t = table(release)
    _api_key(t, api_key)
    hv = request_header_version(release, api_key, version)
    out = bytearray(_HEAD.pack(api_key, version, correlation_id))
    if hv >= 1:
        if client_id is None:
            out += b"\xff\xff"
        else:
            raw = java_utf8(client_id)
            if len(raw) > _CLIENT_ID_MAX:
                raise HeaderFailure("RuntimeException", "'clientId' field is too long to be serialized")
            out += struct.pack(">h", len(raw)) + raw
    if hv >= 2:
        out.append(0)  # no tagged fields
    rhv = response_header_version(release, api_key, version)
    resp = struct.pack(">i", correlation_id) + (b"\x00" if rhv >= 1 else b"")
    return EncodedHeader(hv, len(out), bytes(out), rhv, resp)


# ---------------------------------------------------------------- decoding (a broker's side, then a client's)


REPLACEMENT = "\ufffd"


def _cont(b: int) -> bool:
    return (b & 0xC0) == 0x80


def _three(data: bytes, i: int, n: int, out: list[str]) -> tuple[int, bool]:
    """A 3-byte lead at data[i-1]: (next index, stop)."""
    b1 = data[i - 1]
    if i + 1 < n:
        b2, b3 = data[i], data[i + 1]
        if (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2) or not _cont(b3):
            out.append(REPLACEMENT)
            return i + (1 if (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2) else 2) - 1, False
        c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
        out.append(REPLACEMENT if 0xD800 <= c <= 0xDFFF else chr(c))
        return i + 2, False
    out.append(REPLACEMENT)
    if i < n and ((b1 == 0xE0 and (data[i] & 0xE0) == 0x80) or not _cont(data[i])):
        return i, False
    return n, True


def _bad_second(b1: int, b2: int) -> bool:
    """String.isMalformed4_2: the second byte of a 4-byte sequence."""
    return (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and (b2 & 0xF0) != 0x80) or not _cont(b2)


def _four(data: bytes, i: int, n: int, out: list[str]) -> tuple[int, bool]:
    """A 4-byte lead (0xF0-0xF7) at data[i-1]: (next index, stop)."""
    b1 = data[i - 1]
    if i + 2 < n:
        b2, b3, b4 = data[i], data[i + 1], data[i + 2]
        uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
        if not (_cont(b2) and _cont(b3) and _cont(b4)) or not 0x10000 <= uc <= 0x10FFFF:
            out.append(REPLACEMENT)
            return i + (0 if b1 > 0xF4 or _bad_second(b1, b2) else 1 if not _cont(b3) else 2), False
        out.append(chr(uc))
        return i + 3, False
    out.append(REPLACEMENT)
    if b1 > 0xF4 or (i < n and _bad_second(b1, data[i])):
        return i, False
    i += 1
    if i < n and not _cont(data[i]):
        return i, False
    return n, True


def java_utf8_decode(data: bytes) -> str:
    """new String(bytes, UTF_8) (java.lang.String.decodeUTF8_UTF16 with replacement): where a malformed or truncated
    sequence becomes U+FFFD differs from Python's decoder (a truncated tail is one U+FFFD, however it ends)."""
    if data.isascii():
        return data.decode("ascii")
    out: list[str] = []
    i, n = 0, len(data)
    while i < n:
        b1 = data[i]
        i += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif 0xC2 <= b1 <= 0xDF:
            if i < n:
                if _cont(data[i]):
                    out.append(chr(((b1 & 0x1F) << 6) | (data[i] & 0x3F)))
                    i += 1
                else:
                    out.append(REPLACEMENT)
                continue
            out.append(REPLACEMENT)
            break
        elif 0xE0 <= b1 <= 0xEF:
            i, stop = _three(data, i, n, out)
            if stop:
                break
        elif 0xF0 <= b1 <= 0xF7:
            i, stop = _four(data, i, n, out)
            if stop:
                break
        else:
            out.append(REPLACEMENT)
    return "".join(out)


class _Reader:
    """ByteBufferAccessor over a wrapped array: Java's exceptions by simple name."""

    def __init__(self, data: bytes, count_checked: bool) -> None:
        self.data = data
        self.pos = 0
        self.count_checked = count_checked  # ReleaseProfile.tagged_field_count_checked

    def _take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise HeaderFailure("BufferUnderflowException", None)
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def short(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def uvarint(self) -> int:
        """ByteUtils.readUnsignedVarint: at most 5 bytes, the 5th shifted left 28 as a signed byte."""
        result = 0
        for i in range(4):
            b = self._take(1)[0]
            if b < 0x80:
                return _int32(result | (b << (7 * i)))
            result |= (b & 0x7F) << (7 * i)
        b = self._take(1)[0]
        result = _int32(result | (_sbyte(b) << 28))
        if b >= 0x80:
            raise HeaderFailure("IllegalArgumentException",
                                "Varint is too long, the most significant bit in the 5th byte is set, converted "
                                f"value: {result & 0xFFFFFFFF:x}")
        return result

    def array(self, size: int) -> bytes:
        remaining = len(self.data) - self.pos
        if size > remaining:
            raise HeaderFailure("RuntimeException",
                                f"Error reading byte array of {size} byte(s): only {remaining} byte(s) available")
        if size < 0:
            raise HeaderFailure("NegativeArraySizeException", str(size))
        return self._take(size)

    def tagged(self) -> Tagged:
        """The tagged-field section of a generated read(): every field is unknown to a header."""
        n = self.uvarint()
        if self.count_checked:
            left = len(self.data) - self.pos
            if n < 0:
                raise HeaderFailure("RuntimeException", f"Invalid negative number of tagged fields {n}")
            if n > left:
                raise HeaderFailure("RuntimeException",
                                    f"Tried to read {n} tagged fields, but there are only {left} bytes remaining.")
            if n > MAX_TAGGED_FIELD_COUNT:
                raise HeaderFailure("RuntimeException", f"Tried to read {n} tagged fields, which exceeds the maximum "
                                    f"allowed count of {MAX_TAGGED_FIELD_COUNT}.")
        fields = []
        for _ in range(n):  # a negative count reads none
            tag = self.uvarint()
            fields.append((tag, self.array(self.uvarint())))
        return tuple(fields)


def _sbyte(b: int) -> int:
    return b - 256 if b >= 128 else b


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def _read_header_data(r: _Reader, hv: int) -> tuple[int, int, int, str | None, Tagged]:
    """RequestHeaderData.read at header version hv."""
    api_key, version, corr = r.short(), r.short(), r.int32()
    client_id: str | None = ""
    if hv >= 1:
        n = r.short()
        client_id = None if n < 0 else java_utf8_decode(r.array(n))
    tagged = r.tagged() if hv >= 2 else ()
    return api_key, version, corr, client_id, tagged


def parse_request_header(release: str, data: bytes, prof: ReleaseProfile | None = None) -> ParsedRequestHeader:
    """RequestHeader.parse(ByteBuffer.wrap(data)); raises HeaderFailure as Kafka throws (InvalidRequestException)."""
    prof = prof or profile(release)
    t = table(release)
    api_key_id = -1
    try:
        r = _Reader(data, prof.tagged_field_count_checked)
        api_key_id = r.short()
        version = r.short()
        api = _api_key(t, api_key_id)
        if prof.header_parse_refuses_removed_apis and not api.has_valid_version:
            raise HeaderFailure("InvalidRequestException",
                                f"Unsupported api with key {api_key_id} ({api.name}) and version {version}", "-")
        hv = request_header_version(release, api_key_id, version)
        r.pos = 0
        key, version, corr, client_id, tagged = _read_header_data(r, hv)
    except HeaderFailure as e:
        if e.java_name == "InvalidRequestException":
            raise
        if e.java_name == "UnsupportedVersionException":
            raise HeaderFailure("InvalidRequestException", f"Unknown API key {api_key_id}", e.java_name) from e
        raise HeaderFailure("InvalidRequestException", "Error parsing request header. Our best guess of the "
                            f"{prof.header_parse_wording} is: {api_key_id}", e.java_name) from e
    supported = api.valid.lowest <= version <= api.valid.highest
    return ParsedRequestHeader(key, version, corr, "" if client_id is None else client_id, hv, r.pos, supported,
                               tagged)


def parse_response_header(release: str, data: bytes, header_version: int) -> ParsedResponseHeader:
    """ResponseHeader.parse(ByteBuffer.wrap(data), header_version); Kafka's exceptions propagate as HeaderFailure."""
    r = _Reader(data, profile(release).tagged_field_count_checked)
    corr = r.int32()
    tagged = r.tagged() if header_version >= 1 else ()
    return ParsedResponseHeader(corr, r.pos, tagged)

