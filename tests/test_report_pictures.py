"""A sweep report's pictures (one per metric, the user's subject beside Kafka's, the invariant's limit lines, a
sentence under each), file names every system can store and link, and `kcheck --version`."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
from collections import Counter

import pytest

from cli_support import run, write_module
from kcheck.reference.releases import DEFAULT_VERSION, RELEASES, releases_with
from kcheck.spark_check.report import write_markdown
from test_reports import assert_self_contained

SAFE = re.compile(r"^[a-z0-9][a-z0-9_-]*\.png$")
# A user's placer: AdminUtils with the replica order of every third partition reversed (so its preferred leaders
# differ from Kafka's), named as users name theirs, module:object.
EVEN_RACKS = """
from kcheck.reference.placement import assign_replicas_to_brokers


def even_racks(brokers, n_partitions, replication_factor, fixed_start_index=-1, start_partition_id=-1, random=None):
    placed = assign_replicas_to_brokers(brokers, n_partitions, replication_factor, fixed_start_index,
                                        start_partition_id, random)
    return {p: list(reversed(r)) if p % 3 == 0 else r for p, r in placed.items()}
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A small placement sweep of AdminUtils, the striped placer and a user's placer (no Spark: the same
    `evaluate` each Spark task runs)."""
    from kcheck.spark_check.placement_space import PlacementSpace, parse_placement_bounds

    with pytest.MonkeyPatch.context() as mp:
        module = write_module(tmp_path_factory.mktemp("mod"), mp, EVEN_RACKS)
        user = f"{module}:even_racks"
        space = PlacementSpace(parse_placement_bounds("brokers=3..5,racks=0..2,partitions=1..6,rf=1..3,seeds=4"),
                               ["adminutils", "striped", user])
        result = space.evaluate(0, len(space))
    return space, result, user


def by_metric(metrics):
    out: dict[str, dict[str, Counter]] = {}
    for key, hist in metrics.items():
        subject, _, metric = key.rpartition("/")
        out.setdefault(metric, {})[subject] = hist
    return out


def test_file_names_are_safe_unique_and_stable():
    from kcheck.spark_check.report import safe_file_name

    assert safe_file_name("leader-skew") == "leader-skew.png"  # a name already safe stays as it is
    names = ["myplacer:even_racks", "myplacer-even_racks", "MyPlacer:even_racks", "jvm:org.example.Placer",
             "con", "nul.txt", "a/b\\c", "../up", "", ".", "-x", "x" * 300, "é ü", "\ud800", "com1"]
    files = [safe_file_name(n) for n in names]
    for name, file in zip(names, files, strict=True):
        assert SAFE.match(file) and len(file) <= 100, (name, file)
        assert file.split(".")[0] not in {"con", "nul", "com1"}  # Windows' device names
        if safe_file_name(name) != name + ".png":  # changed: the name's own SHA-1 keeps it unique across runs
            assert hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:8] in file
    assert len({f.lower() for f in files}) == len(files)  # distinct even on a case-blind disk
    assert safe_file_name("myplacer:even_racks") == files[0]


def test_one_picture_per_metric_with_every_subject_and_the_limits(swept):
    import matplotlib.pyplot as plt

    from kcheck.spark_check.report import METRIC_NOTES, metric_pictures

    space, result, user = swept
    grouped = by_metric(result.metrics)
    pictures = metric_pictures(result.metrics, space.name)
    try:
        assert sorted(p.metric for p in pictures) == sorted(grouped) == sorted(
            ["leader-skew", "replica-skew", "rack-spread", "moved-partitions"])
        for picture in pictures:
            subjects = grouped[picture.metric]
            assert set(picture.subjects) == set(subjects) and picture.subjects[-1] == user  # Kafka's first
            (ax,) = picture.figure.axes
            picture.figure.canvas.draw()
            ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
            assert ticks and all(float(t).is_integer() for t in ticks), ticks  # counts: no 0.5 ticks
            labels = ax.get_legend_handles_labels()[1]
            assert sum(f"{user} (yours)" in label for label in labels) == 1
            assert sum("(Kafka)" in label for label in labels) == 2
            # every subject's bars add up to all of its configurations, overlaid in one axes
            bars = [c for c in ax.containers]
            assert len(bars) == 3
            for container, subject in zip(bars, picture.subjects, strict=True):
                assert sum(r.get_height() for r in container) == pytest.approx(100)
                assert len(container) == len(subjects[subject])
            lines = {line.get_label(): line.get_xdata()[0] for line in ax.get_lines()}
            note = METRIC_NOTES[("placement", picture.metric)]
            for value, label in note.limits:  # the invariant's bound, half a step right of the last value within
                assert lines[label] == value + 0.5
            worst = max(max(subjects[s]) for s in subjects if ":" not in s)
            assert lines[f"worst of Kafka's own: {worst:g}"] == worst + 0.5
            assert note.meaning in picture.caption and note.good in picture.caption
            assert f"{user} median" in picture.caption
        assert any(METRIC_NOTES[("placement", p.metric)].limits for p in pictures)
        spread_lines(METRIC_NOTES)
    finally:
        for picture in pictures:
            plt.close(picture.figure)


def spread_lines(notes):
    """placement.leader-spread's and replica-spread's line is drawn at a spread of 1 because counts k and k+1 (an
    average between them) are within Cruise Control's limits whatever the average and the threshold; a spread of
    2 can be outside them."""
    from kcheck.invariants.placement import balance_limits

    assert [value for metric in ("leader-skew", "replica-skew") for value, _ in notes[("placement", metric)].limits
            ] == [1, 1]
    for k in range(60):
        for avg in (k + 1e-9, k + 0.25, k + 0.5, k + 0.99, k + 1 - 1e-9):
            for threshold in (1.0, 1.01, 1.10, 1.5, 3.0):
                lower, upper = balance_limits(avg, threshold, 0.9)
                assert lower <= k and upper >= k + 1, (k, avg, threshold, lower, upper)
    assert balance_limits(1.0, 1.0, 0.9) == (1, 1)  # counts 0 and 2 around an average of 1: outside


def test_report_links_resolve_to_safe_files(swept, tmp_path):
    from kcheck.html_report import write_sweep_html

    space, result, user = swept
    text = open(write_markdown(str(tmp_path), space, result, {"space": "test"})).read()
    links = re.findall(r"!\[[^\]]*\]\(([^)]*)\)", text)
    assert sorted(links) == sorted(f"{m}.png" for m in by_metric(result.metrics))  # one picture per metric
    for link in links:
        assert SAFE.match(link) and (tmp_path / link).is_file(), link
        assert (tmp_path / link).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert all(SAFE.match(f) or f == "report.md" for f in os.listdir(tmp_path)), os.listdir(tmp_path)
    from kcheck.spark_check.report import METRIC_NOTES

    for metric in by_metric(result.metrics):  # the sentence right under each picture
        note = METRIC_NOTES[("placement", metric)]
        assert re.search(rf"\]\({metric}\.png\)\n\n{re.escape(note.meaning)} Good: ", text)
    page = open(write_sweep_html(str(tmp_path), space, result, {"space": "test"}, "OK", False)).read()
    assert_self_contained(page)  # the HTML embeds its pictures: no file to link
    captions = re.findall(r"<figcaption><b>([^<]*)</b>: ([^<]*)</figcaption>", page)
    assert sorted(m for m, _ in captions) == sorted(by_metric(result.metrics))
    for metric, caption in captions:
        assert METRIC_NOTES[("placement", metric)].meaning.replace("'", "&#x27;") in caption


def test_version(capsys):
    code, out, err = run(capsys, "--version")
    lines = out.splitlines()
    assert code == 0 and err == ""
    assert lines[0] == f"kcheck {importlib.metadata.version('kcheck')}"
    assert f"{DEFAULT_VERSION} (default)" in lines[1] and all(v in lines[1] for v in RELEASES)
    assert lines[2].endswith(", ".join(releases_with("adminutils")))
    assert lines[3].endswith(", ".join(releases_with("zk")))
    code, again, _ = run(capsys, "--version", "place", "--help")  # eager: prints and exits before any command
    assert code == 0 and again == out

