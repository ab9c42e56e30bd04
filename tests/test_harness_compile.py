"""How `compile_harness` (reference/kafka_bridge.py) compiles the Java harness against a release's jars.

One javac for the base and every handler (each javac is a JVM start); a handler that does not compile is set aside,
the rest compiled together again, and the handler skipped alone with the first error its own compile gives, as a
compile per handler gives it. Run on a small harness (the real base and two or three handlers) against 4.4.0's
jars, in a cache folder of its own (marker `kafka`: it needs the jars and a JDK); the three-handler case is `slow`.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kafka_support import require_jdk
from kcheck.reference import kafka_bridge, kafka_harness
from kcheck.reference.kafka_jars import ResolvedRelease, resolve

pytestmark = pytest.mark.kafka

GOOD = """import java.util.Map;
public final class KcheckGood {
    public static void register(Map<String, KcheckHandler> table) { table.put("G", t -> "OK"); }
}
"""
# Two ways a handler misses a class of this release: an import, and a name inside a method.
NO_PACKAGE = """import java.util.Map;
import org.apache.kafka.nowhere.Gone;
public final class KcheckNoPackage {
    public static void register(Map<String, KcheckHandler> table) { table.put("N", t -> "OK " + Gone.class); }
}
"""
NO_SYMBOL = """import java.util.Map;
public final class KcheckNoSymbol {
    public static void register(Map<String, KcheckHandler> table) {
        table.put("M", t -> "OK " + org.apache.kafka.common.utils.NoSuchUtility.NAME);
    }
}
"""


@pytest.fixture
def harness(tmp_path: Path, monkeypatch):
    """A harness folder of the real base classes and the given handlers; a release whose cache is a fresh folder;
    the javac runs counted."""
    require_jdk()
    real = resolve("4.4.0")
    folder = tmp_path / "harness"
    folder.mkdir()
    for name in kafka_harness.BASE:
        shutil.copy(kafka_harness.DIRECTORY / f"{name}.java", folder)
    monkeypatch.setattr(kafka_harness, "DIRECTORY", folder)
    kafka_harness.sources.cache_clear()
    calls: list[list[str]] = []
    run = subprocess.run

    def counted(cmd, *args, **kwargs):
        calls.append([Path(a).stem for a in cmd if a.endswith(".java")])
        return run(cmd, *args, **kwargs)

    monkeypatch.setattr(kafka_bridge.subprocess, "run", counted)

    def compile_with(**handlers: str):
        for name, text in handlers.items():
            (folder / f"{name}.java").write_text(text, encoding="utf-8")
        kafka_harness.sources.cache_clear()
        calls.clear()
        release = ResolvedRelease(real.version, tmp_path / f"cache-{len(list(tmp_path.iterdir()))}", real.jars, 0.0)
        return (*kafka_bridge.compile_harness(release), list(calls))

    yield compile_with
    kafka_harness.sources.cache_clear()


def test_a_harness_that_compiles_is_one_javac(harness):
    classes, compiled, skipped, calls = harness(KcheckGood=GOOD)
    assert compiled == ["KcheckGood"] and skipped == {}
    assert len(calls) == 1 and set(calls[0]) == {*kafka_harness.BASE, "KcheckGood"}
    assert (classes / "KcheckGood.class").is_file() and (classes / ".complete").is_file()


@pytest.mark.slow  # ~15 s of javac; every release's compile skips a handler this way
def test_a_handler_that_does_not_compile_is_skipped_alone_with_its_own_first_error(harness):
    classes, compiled, skipped, calls = harness(KcheckGood=GOOD, KcheckNoPackage=NO_PACKAGE)
    assert compiled == ["KcheckGood"]
    assert skipped == {"KcheckNoPackage": "package org.apache.kafka.nowhere does not exist"}
    assert (classes / "KcheckGood.class").is_file() and not (classes / "KcheckNoPackage.class").exists()
    # the handlers that compile are compiled with the base in one javac; the skipped one's reason comes from a
    # javac of that handler alone (against the rest), as a compile per handler gives it
    assert [set(c) for c in calls] == [{*kafka_harness.BASE, "KcheckGood", "KcheckNoPackage"},
                                       {*kafka_harness.BASE, "KcheckGood"}, {"KcheckNoPackage"}]


@pytest.mark.slow
def test_handlers_missing_classes_in_different_ways_are_each_skipped_with_their_own_error(harness):
    """An import javac rejects early and a name inside a method it rejects later: both set aside, each skipped
    with the error its own compile gives."""
    classes, compiled, skipped, calls = harness(KcheckGood=GOOD, KcheckNoPackage=NO_PACKAGE, KcheckNoSymbol=NO_SYMBOL)
    assert compiled == ["KcheckGood"]
    assert skipped == {"KcheckNoPackage": "package org.apache.kafka.nowhere does not exist",
                       "KcheckNoSymbol": "cannot find symbol"}
    assert {*kafka_harness.BASE, "KcheckGood"} in [set(c) for c in calls]
    assert ["KcheckNoPackage"] in calls and ["KcheckNoSymbol"] in calls


def test_two_compiles_of_one_harness_at_once_run_one_javac_and_agree(harness, tmp_path, monkeypatch):
    """pytest's workers may ask for the same harness at the same moment: one compiles, the other waits on the
    folder's lock and reads what the first wrote (before the lock, both compiled into one folder and a reader could
    see half a marker)."""
    import threading

    real = resolve("4.4.0")
    release = ResolvedRelease(real.version, tmp_path / "shared-cache", real.jars, 0.0)
    harness(KcheckGood=GOOD)  # the sources in place (its own cache folder is another one)
    answers: list[tuple] = []
    javacs: list[str] = []
    run = kafka_bridge.subprocess.run  # the fixture's counting wrapper

    def counted(cmd, *args, **kwargs):
        javacs.append(cmd[0])
        return run(cmd, *args, **kwargs)

    monkeypatch.setattr(kafka_bridge.subprocess, "run", counted)
    threads = [threading.Thread(target=lambda: answers.append(kafka_bridge.compile_harness(release)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert len(answers) == 2 and answers[0] == answers[1] and answers[0][1] == ["KcheckGood"]
    assert len(javacs) == 1
    assert not list(answers[0][0].glob(".complete-*"))  # the marker was written whole and moved in place
