"""kcheck.reference.kafka_tools: which releases' tools run, and that a release's own tool class is the one run."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcheck.reference import kafka_jars, kafka_tools
from kcheck.reference.kafka_jars import KafkaBridgeError


@pytest.mark.parametrize("version", ["", "../../x", "/tmp/x", "4.4", "9.9.9", "1.0.2\x1b[31m", "0.9.0.1"])
def test_unknown_releases_are_refused_before_any_path_is_made(version: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(KafkaBridgeError, match="not a release whose tools kcheck runs"):
        kafka_tools.resolve_tools(version)
    assert list(tmp_path.iterdir()) == []


def test_every_release_kcheck_models_has_its_tools() -> None:
    every = kafka_tools.releases()
    assert set(kafka_jars.KNOWN_RELEASES) | set(kafka_jars.ZK_RELEASES) <= set(every)
    assert every == tuple(sorted(every, key=lambda v: tuple(map(int, v.split("."))), reverse=True))


@pytest.mark.kafka
def test_the_release_decides_which_class_runs() -> None:
    # 4.4.0 runs the Java tools of kafka-tools; the Scala objects it no longer ships are not picked up by mistake.
    release = kafka_tools.resolve_tools(kafka_jars.KNOWN_RELEASES[0])
    assert kafka_tools.main_class(release, "kafka-topics") == "org.apache.kafka.tools.TopicCommand"
    dump = Path(__file__).parent / "data" / "dump" / "segments" / "plain-0" / "00000000000000000000.index"
    done = kafka_tools.run(release.version, "kafka-dump-log", ["--files", str(dump)])
    assert done.returncode == 0 and "offset: 3 position: 103" in done.stdout
