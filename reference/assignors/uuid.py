"""Kafka's topic id: `clients/src/main/java/org/apache/kafka/common/Uuid.java`.

Two signed 64-bit halves. What the server-side assignors depend on: `fromString`
(URL-safe base64, no padding needed, 16 bytes big-endian: msb then lsb), `hashCode`
(it decides `HashSet<Uuid>` iteration order) and `compareTo` (a *signed*
comparison of msb, then of lsb; the heterogeneous uniform builder's last
tie-break).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from kcheck.reference.java import to_int32, to_int64

_BASE64URL = re.compile(r"[A-Za-z0-9_-]*={0,2}")


@dataclass(frozen=True, order=True)
class Uuid:
    """`org.apache.kafka.common.Uuid`. Fields are Java `long`s, so ordering is Kafka's signed `compareTo`."""

    most_significant_bits: int
    least_significant_bits: int

    def __post_init__(self) -> None:
        for bits in (self.most_significant_bits, self.least_significant_bits):
            if to_int64(bits) != bits:
                raise ValueError(f"{bits} is not a Java long")
        # The value the dataclass's own __hash__ gives (so Python sets keep their order), computed once: the
        # server-side assignors look a topic id up several times per partition.
        object.__setattr__(self, "_hash", hash((self.most_significant_bits, self.least_significant_bits)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]

    @classmethod
    def from_string(cls, s: str) -> Uuid:
        """`Uuid.fromString`: Kafka's two checks and messages; a malformed string raises ValueError too."""
        if len(s) > 24:
            raise ValueError(f"Input string with prefix `{s[:24]}` is too long to be decoded as a base64 UUID")
        if not _BASE64URL.fullmatch(s):  # java.util.Base64's URL decoder refuses '+', '/' and the like
            raise ValueError(f"Input string `{s}` is not base64url")
        body = s.rstrip("=")
        try:
            data = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError) as e:  # a lone trailing character: Java refuses it as well
            raise ValueError(f"Input string `{s}` is not base64url: {e}") from e
        if len(data) != 16:
            raise ValueError(
                f"Input string `{s}` decoded as {len(data)} bytes, which is not equal to the expected 16 bytes "
                "of a base64-encoded UUID"
            )
        return cls(
            to_int64(int.from_bytes(data[:8], "big")),
            to_int64(int.from_bytes(data[8:], "big")),
        )

    @classmethod
    def of_unsigned(cls, msb: int, lsb: int) -> Uuid:
        """Build from two unsigned 64-bit values (handy for generated test ids)."""
        return cls(to_int64(msb), to_int64(lsb))

    def java_hash_code(self) -> int:
        """`Uuid.hashCode`: x = msb ^ lsb; (int)(x >> 32) ^ (int)x (an arithmetic shift, as on a Java long)."""
        x = self.most_significant_bits ^ self.least_significant_bits
        return to_int32(to_int32(x >> 32) ^ to_int32(x))

    def __str__(self) -> str:
        """`Uuid.toString`: URL-safe base64 of the 16 bytes, without padding."""
        data = (self.most_significant_bits & (2**64 - 1)).to_bytes(8, "big") + (
            self.least_significant_bits & (2**64 - 1)
        ).to_bytes(8, "big")
        return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")

    def __repr__(self) -> str:
        return f"Uuid({str(self)!r})"


ZERO_UUID = Uuid(0, 0)
