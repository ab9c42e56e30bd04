"""What the tests that run Kafka's own jars share (marker `kafka`)."""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable

import pytest

from kcheck.reference.kafka_bridge import KafkaBridge, shared_bridge

# KCHECK_KAFKA_RELEASES="4.0.2,4.1.2" runs the differential tests on these releases instead of their defaults.
ENV_RELEASES = [v.strip() for v in os.environ.get("KCHECK_KAFKA_RELEASES", "").split(",") if v.strip()]


def require_jdk() -> None:
    """Skip only without a JDK: the jars (and Maven, when it is missing) are fetched, and a failure there is loud."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            pytest.skip(f"`{tool}` not on PATH: the Kafka bridge needs a JDK 17+")


def kafka_bridge(version: str, server: bool = False) -> KafkaBridge:
    """The process's bridge to this release (`server`: the broker-side one, the broker's jars and Mockito); a resolve
    or compile failure raises, never a skip."""
    require_jdk()
    return shared_bridge(version, server=server)


def assert_broker_side_ops_agree(compare_random: Callable[[KafkaBridge, random.Random, int], tuple[int, int, str]],
                                 version: str, seed: int, ops: int) -> None:
    """A broker-side differential's random operations (`compare_random(bridge, rng, n)`: compared, differing, the
    smallest difference) all answered as Kafka's classes answer them."""
    compared, differing, smallest = compare_random(kafka_bridge(version, server=True), random.Random(seed), ops)
    assert compared >= ops
    assert differing == 0, f"{differing} of {compared} ops differ; smallest:\n{smallest}"
