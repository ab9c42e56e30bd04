"""`kcheck check`'s spot checks of the request path's references against Kafka's classes (reference/spot_checks.py).

Each family runs on the process's shared bridge of a release with a few hundred inputs; a reference made wrong on
purpose must show up as differences (so the check can fail), and a release whose jars are not cached is skipped
with the command that fetches them, never downloaded by the main job.
"""

from __future__ import annotations

import random

import pytest

from kafka_support import kafka_bridge as _kafka
from kafka_support import require_jdk
from kcheck.reference import spot_checks as sc
from kcheck.reference.kafka_bridge import shared_bridge


@pytest.mark.kafka
@pytest.mark.parametrize("family", sc.FAMILIES, ids=lambda f: f.name)
def test_each_family_gives_kafkas_answers(family: sc.SpotFamily) -> None:
    if family.server:
        require_jdk()
    bridge = shared_bridge("4.4.0", server=True) if family.server else _kafka("4.4.0")
    got = family.run(bridge, "4.4.0", random.Random(7), 300)
    assert got.inputs >= 150 and got.differences == 0, got.smallest  # about 300: scripts vary in length


@pytest.mark.kafka
def test_a_wrong_reference_is_reported_with_its_smallest_input(monkeypatch: pytest.MonkeyPatch) -> None:
    from kcheck.reference import kafka_partitioner as kp

    right = kp.reference_key_answers
    monkeypatch.setattr(kp, "reference_key_answers", lambda n, keys: [  # the hash one off: every keyed answer wrong
        a if a is None else (a[0] + 1, a[1]) for a in right(n, keys)])
    family = next(f for f in sc.FAMILIES if f.name == "key -> partition")
    got = family.run(_kafka("4.4.0"), "4.4.0", random.Random(7), 500)
    assert got.differences > 0 and got.smallest.startswith("PKEY ") and "kafka: " in got.smallest


def test_a_release_not_cached_is_skipped_with_the_command_that_fetches_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kcheck.reference.kafka_jars.cached", lambda version: None)
    out = sc.run_spot_checks(releases=("4.1.2",))
    assert [o.family for o in out] == [f.name for f in sc.FAMILIES]
    assert all(o.ok and o.inputs == 0 and "kcheck kafka-classpath --kafka-version 4.1.2" in o.skipped for o in out)
