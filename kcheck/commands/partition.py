"""`kcheck partition`: which partition each key goes to, with the client the user names, and which clients put it
elsewhere (kcheck.reference.client_partitioners)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from kcheck import report
from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.model import INT32_MAX
from kcheck.options import JsonOpt, bounded_int, requested_release
from kcheck.reference.client_partitioners import CLIENTS, DESCRIPTIONS, Placement, place

MAX_KEYS = 1_000_000  # keys of one run (a million take seconds); more is a job for kcheck.reference.client_partitioners


def _hex_key(text: str, place: str) -> bytes:
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise InputError(place, f"'{formats.shown(text)}' is not hexadecimal bytes (--hex)") from None


def _keys(given: list[str], keys_file: str | None, hex_keys: bool) -> list[bytes]:
    """The keys as the producer serialises them: a string key as StringSerializer writes it (UTF-8; `?` for a lone
    surrogate), or hexadecimal bytes with --hex. A keys file holds one key a line (its line ends are not part of
    the key)."""
    from kcheck.reference.partitioner import serialize_key

    items = [(k, "KEY") for k in given]
    if keys_file == "":
        raise InputError("--keys-file", "an empty path: give a file, or '-' for stdin")
    if keys_file is not None:
        text = sys.stdin.read() if keys_file == "-" else formats.read_text(keys_file)
        source = "<stdin>" if keys_file == "-" else keys_file
        items += [(line, f"{source}:{n}") for n, line in enumerate(text.splitlines(), 1)]
    if not items:
        raise InputError("KEY", "no key given: name keys on the command line or in --keys-file")
    if len(items) > MAX_KEYS:
        raise InputError("--keys-file" if keys_file else "KEY", f"{len(items):,} keys, above the limit of {MAX_KEYS:,}")
    if hex_keys:
        return [_hex_key(k, where) for k, where in items]
    return [b for k, _ in items if (b := serialize_key(k)) is not None]


def _shown_key(key: bytes | None, hex_keys: bool) -> str:
    if key is None:
        return "(none)"
    if not key:
        return '""'
    return key.hex() if hex_keys else formats.shown(key.decode("utf-8", errors="replace"))


def _shown_partition(partition: int | None) -> str:
    return "random" if partition is None else str(partition)  # an empty key with librdkafka's default


def _json_key(key: bytes | None, hex_keys: bool) -> str | None:
    return None if key is None else key.hex() if hex_keys else key.decode("utf-8", errors="replace")


def _elsewhere(p: Placement, client: str) -> str:
    """The clients that put the key elsewhere, grouped by where: `5: librdkafka, sarama-crc; 3: sarama`."""
    where: dict[str, list[str]] = {}
    for c in p.differing(client):
        where.setdefault(_shown_partition(p.partitions[c]), []).append(c)
    return "; ".join(f"{at}: {', '.join(cs)}" for at, cs in where.items()) or "-"


def _render(placements: list[Placement], client: str, partitions: int, hex_keys: bool) -> None:
    print(f"Partition of each key in a topic of {partitions} partition(s), with {DESCRIPTIONS[client]}:")
    table = Table()
    for col in ("key", "partition", "elsewhere with"):
        table.add_column(col, overflow="fold")
    for p in placements:
        table.add_row(escape(_shown_key(p.key, hex_keys)), _shown_partition(p.partitions[client]),
                      _elsewhere(p, client))
    report.console().print(table)
    differ = {c: sum(1 for p in placements if p.partitions[c] != p.partitions[client]) for c in CLIENTS if c != client}
    print(f"{len(placements)} key(s). Elsewhere than {client}: "
          + "; ".join(f"{c} {n}" for c, n in differ.items()) + ".")
    if differ.get("librdkafka"):
        print("librdkafka's default (confluent-kafka clients) hashes with CRC-32: set partitioner=murmur2_random "
              "there to place keys as the Java client does.")
    if differ.get("sarama"):
        print("sarama's default (Go) hashes with FNV-1a: its NewMurmur2Partitioner (sarama 1.50.0 and later) places "
              "keys as the Java client does.")


def partition_command(
    partitions: Annotated[int, typer.Option(
        "--partitions", metavar="N", help="The topic's partition count (every partition counts, led or not).")],
    keys: Annotated[list[str] | None, typer.Argument(
        metavar="KEY...", show_default=False,
        help="Keys, as the producer's StringSerializer writes them (UTF-8), or hexadecimal bytes with --hex.")] = None,
    keys_file: Annotated[str | None, typer.Option(
        "--keys-file", metavar="FILE", help="More keys, one a line ('-': stdin).")] = None,
    client: Annotated[str, typer.Option(
        help=f"The client whose answer comes first: {', '.join(CLIENTS)}.")] = "java",
    kafka_version: Annotated[str | None, typer.Option(
        help="The Java client's release (keyed records go to the same partition in every release kcheck "
             "knows).")] = None,
    hex_keys: Annotated[bool, typer.Option("--hex", help="The keys are hexadecimal bytes (a ByteArraySerializer "
                                                         "key).")] = False,
    json_out: JsonOpt = False,
) -> int:
    """Which partition each key goes to with a client's default partitioner, and the clients that put it elsewhere
    (the Java producer and kafka-python hash with murmur2, librdkafka's default with CRC-32)."""
    requested_release(kafka_version)
    if client not in CLIENTS:
        raise InputError("--client", f"'{formats.shown(client)}' is not one of {', '.join(CLIENTS)}")
    bounded_int("--partitions", partitions, 1, INT32_MAX, "the topic's partition count")
    placements = place(_keys(keys or [], keys_file, hex_keys), partitions)
    if json_out:
        print(json.dumps({"partitions": partitions, "client": client, "clients": DESCRIPTIONS, "keys": [
            {"key": _json_key(p.key, hex_keys), "partition": p.partitions[client], "partitions": p.partitions,
             "elsewhere": p.differing(client)} for p in placements]}, indent=2))
    else:
        _render(placements, client, partitions, hex_keys)
    return 0
