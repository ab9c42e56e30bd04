"""`kcheck kafka-classpath` and `kcheck invariants`: what kcheck resolves and knows."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from kcheck import report
from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.invariants import REGISTRY
from kcheck.options import (
    requested_release,
)


def kafka_classpath(
    kafka_version: Annotated[str | None, typer.Option(
        help="The Kafka release (default: the newest kcheck knows that resolves).")] = None,
) -> int:
    """Print a Kafka release's jars as a classpath, to compile jvm:<class> plug-ins against:
    javac -cp "$(kcheck kafka-classpath)" -d classes MyPlacer.java."""
    from kcheck.reference.kafka_jars import KafkaBridgeError, default_version, resolve

    version = requested_release(kafka_version)  # a known release, before the cache or Maven is touched
    try:
        release = resolve(version) if version is not None else resolve(default_version())
    except KafkaBridgeError as e:
        raise InputError("--kafka-version", formats.one_line(str(e))) from None
    print(release.classpath)
    return 0


def list_invariants() -> int:
    """List every invariant kcheck knows, with its severity and source."""
    table = Table(title="Invariants", title_justify="left")
    for col in ("id", "severity", "title", "source"):
        table.add_column(col, overflow="fold")
    for inv in REGISTRY.values():
        table.add_row(inv.id, str(inv.severity), inv.title, inv.source)
    report.console().print(table)
    return 0
