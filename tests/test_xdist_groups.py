"""The README's test command (`-n auto`, pyproject's `--dist loadgroup`) relies on tests/conftest.py's xdist groups:
one worker for every test marked `kafka` or `cluster` (one cluster and one JVM per release), one for Spark's, one for
the JVM oracle's. xdist's scheduler reads a group only from the `@group` suffix of a node id, and a pytest release
that stopped reading the field xdist writes (pytest-xdist issue #1386) spread them over every worker without a word:
two clusters on two cores, and a SASL test that timed out. This checks the suffix where the scheduler reads it."""

from __future__ import annotations

import pytest

GROUPS = (("kafka", "kafka"), ("cluster", "kafka"), ("spark", "spark"), ("jvm", "jvm"))


def _expected_group(item: pytest.Item) -> str | None:
    for marker, group in GROUPS:
        if item.get_closest_marker(marker):
            return group
    return None


def test_every_grouped_test_carries_its_group_in_the_node_id_the_scheduler_reads(request):
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("runs on a pytest-xdist worker under --dist loadgroup (the README's `-n auto`)")
    expected = {item.nodeid: _expected_group(item) for item in request.session.items}
    wrong = [nodeid for nodeid, group in expected.items()
             if (group is None and "@" in nodeid.rpartition("]")[2]) or (group and not nodeid.endswith(f"@{group}"))]
    assert not wrong, f"{len(wrong)} node ids without their xdist group (or with one they should not have): {wrong[:3]}"
