"""`kcheck log` (kcheck.simulation.storage): a topic's storage simulated step by step on the storage reference.

Every expectation follows from Kafka's documented semantics (its topic-config docs and the storage code the
reference mirrors), never from this simulator's own output:
- segment.bytes: LogSegment.shouldRoll rolls when the next batch would take the segment past segment.bytes;
- index.interval.bytes: LogSegment.append adds an index entry once more than that many bytes went in since the last;
- retention never leaves the log without an active segment, never moves the log end offset back (UnifiedLog.
  deleteSegments rolls first when every segment goes), and the log start offset only moves forward;
- delete.retention.ms (the compaction guarantee of Kafka's docs, "Log Compaction"): a consumer that reaches the head
  within delete.retention.ms sees every delete; a consumer lagging far more may not (the tombstone made invisible);
- compaction keeps every key's latest value at its offset.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcheck.cli import main
from kcheck.reference import log_cleaner as lc
from kcheck.reference import log_segment as ls
from kcheck.simulation.storage import (
    CONSUMER_INVARIANT,
    ConfigError,
    TopicConfig,
    Workload,
    simulate,
    split_assignments,
)

EXAMPLES = "examples/log"


def _compact(**kw: str) -> TopicConfig:
    pairs = {"cleanup.policy": "compact", "segment.bytes": "20000", "segment.ms": "10000",
             "min.cleanable.dirty.ratio": "0.1", "delete.retention.ms": "5000", **kw}
    return TopicConfig.from_pairs(pairs.items())


def test_defaults_are_kafkas() -> None:
    # LogConfig.DEFAULT_* and the broker defaults (log.cleaner.dedupe.buffer.size 128 MiB, backoff 15 s,
    # log.retention.check.interval.ms 5 min): Kafka's documented defaults.
    c = TopicConfig()
    assert (c.segment_bytes, c.segment_ms, c.segment_jitter_ms) == (1 << 30, 604_800_000, 0)
    assert (c.index_interval_bytes, c.segment_index_bytes) == (4096, 10_485_760)
    assert (c.retention_ms, c.retention_bytes, c.cleanup_policy) == (604_800_000, -1, ("delete",))
    assert (c.min_cleanable_dirty_ratio, c.min_compaction_lag_ms, c.max_compaction_lag_ms) == (0.5, 0, 2**63 - 1)
    assert c.delete_retention_ms == 86_400_000
    assert (c.dedupe_buffer_size, c.cleaner_backoff_ms, c.retention_check_interval_ms) == (134_217_728, 15_000,
                                                                                          300_000)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segment_bytes=st.integers(3000, 30000), rate=st.integers(5, 60), value=st.integers(0, 300),
       seed=st.integers(0, 2**16))
def test_a_roll_every_segment_bytes(segment_bytes: int, rate: int, value: int, seed: int) -> None:
    cfg = TopicConfig.from_pairs([("segment.bytes", str(segment_bytes))])
    wl = Workload(rate=rate, record_bytes=value, keys=50, duration_ms=60_000, consumer_lag_ms=None, seed=seed)
    sim = simulate(cfg, wl)
    assert sim.ok, sim.violations[:3]
    segs = sim.view.segments
    appended = [e for e in sim.events if e.kind == "append"]
    refused = [e for e in sim.events if e.kind == "refused"]
    assert not refused or all(e.data.get("records") for e in refused)
    for seg, nxt in zip(segs, segs[1:], strict=False):
        size = seg.size_bytes or 0
        assert 0 < size <= segment_bytes
        # the batch that opened the next segment did not fit: size + its bytes > segment.bytes
        opener = next(e for e in appended if e.data["records"] and e.detail.startswith(f"offsets {nxt.base_offset}."))
        assert size + opener.data["bytes"] > segment_bytes
    # nothing but segment.bytes rolled (segment.ms is a week)
    assert all("segment.bytes" in e.detail for e in sim.events if e.kind == "roll")


def test_index_entries_every_index_interval_bytes() -> None:
    interval = 700
    cfg = TopicConfig.from_pairs([("segment.bytes", "40000"), ("index.interval.bytes", str(interval))])
    sim = simulate(cfg, Workload(rate=7, record_bytes=40, keys=10, duration_ms=120_000, consumer_lag_ms=None))
    assert sim.ok, sim.violations[:3]
    total = 0
    for seg in sim.view.segments:
        starts = sorted(set(seg.positions))
        prev = 0
        for _off, pos in seg.offset_index:
            # more than index.interval.bytes went in since the last entry's batch (or the segment's start) ...
            assert pos - prev > interval
            # ... and not yet up to the batch before this one: the entry came with the first batch past it
            before = starts[starts.index(pos) - 1]
            assert before - prev <= interval
            prev = pos
            total += 1
        # the offset index entry names a batch start, the time index one entry per offset entry at most
        assert len(seg.time_index) <= len(seg.offset_index) + 1
    assert total > 10


def test_retention_keeps_an_active_segment_and_the_log_end() -> None:
    # a batch every 5 s, retention.ms 1 s checked every second: every segment, the active one too, expires
    cfg = TopicConfig.from_pairs([("retention.ms", "1000"), ("log.retention.check.interval.ms", "1000"),
                                  ("segment.bytes", "2000")])
    sim = simulate(cfg, Workload(rate=0.2, record_bytes=100, keys=5, duration_ms=60_000, consumer_lag_ms=None))
    assert sim.ok, sim.violations[:3]
    deleted = [e for e in sim.events if e.kind == "retention"]
    assert deleted and all(e.data["reason"] == "retention-ms" for e in deleted)
    rolls = [e for e in sim.events if e.kind == "roll" and e.data.get("reason") == "retention"]
    assert rolls  # every segment went: a new active segment was rolled first (UnifiedLog.deleteSegments)
    starts = [e.data["log_start"] for e in sim.events if e.kind == "log-start"]
    assert starts == sorted(starts)  # the log start offset never goes back
    appends = [e for e in sim.events if e.kind == "append"]
    firsts = [int(e.detail.split()[1].split("..")[0]) for e in appends]
    lasts = [int(e.detail.split()[1].split("..")[1].rstrip(":")) for e in appends]
    assert all(f == last + 1 for f, last in zip(firsts[1:], lasts, strict=False))  # offsets never reused
    assert sim.view.segments and sim.summary["log_end_offset"] == lasts[-1] + 1


def test_retention_by_size_keeps_the_log_within_retention_bytes_plus_a_segment() -> None:
    limit = 30000
    cfg = TopicConfig.from_pairs([("retention.bytes", str(limit)), ("segment.bytes", "8000"),
                                  ("log.retention.check.interval.ms", "1000")])
    sim = simulate(cfg, Workload(rate=20, record_bytes=60, keys=50, duration_ms=60_000, consumer_lag_ms=0))
    assert sim.ok, sim.violations[:3]
    assert sim.summary["segments_deleted"]["retention-size"] > 0
    # after a retention run the log is at most retention.bytes, or deleting its oldest segment would take it below
    segs = sim.view.segments
    total = sum(s.size_bytes or 0 for s in segs)
    assert total - (segs[0].size_bytes or 0) < limit + 8000 * 2


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=st.sampled_from([2000, 5000, 9000]), frac=st.floats(0, 1), ratio=st.sampled_from(["0.01", "0.1", "0.5"]),
       seed=st.integers(0, 2**16))
def test_a_consumer_lagging_less_than_delete_retention_never_misses_a_tombstone(d: int, frac: float, ratio: str,
                                                                                  seed: int) -> None:
    lag = int(d * frac)
    cfg = _compact(**{"delete.retention.ms": str(d), "min.cleanable.dirty.ratio": ratio})
    wl = Workload(rate=20, record_bytes=30, keys=300, tombstone_share=0.4, duration_ms=90_000, consumer_lag_ms=lag,
                  seed=seed)
    sim = simulate(cfg, wl)
    assert sim.summary["tombstones_dropped"] > 0 or sim.summary["cleaner_passes"] > 0
    assert sim.ok, sim.violations[:3]


def test_a_consumer_lagging_far_more_than_delete_retention_loses_a_tombstone() -> None:
    d = 2000
    cfg = _compact(**{"delete.retention.ms": str(d)})
    wl = Workload(rate=20, record_bytes=30, keys=300, tombstone_share=0.4, duration_ms=120_000,
                  consumer_lag_ms=40_000, seed=3)
    sim = simulate(cfg, wl)
    found = [v for v in sim.violations if v.invariant == CONSUMER_INVARIANT]
    assert found and {v.invariant for v in sim.violations} == {CONSUMER_INVARIANT}
    v = found[0]
    assert v.key is not None and v.offset is not None and v.segment is not None
    # the offset named was that key's tombstone, and it is gone from the log
    assert all(r.offset != v.offset for s in sim.view.segments for r in s.records)
    dropped = [e for e in sim.events if e.kind == "tombstone" and e.data["offset"] == v.offset]
    assert dropped and dropped[0].data["key"] == v.key and dropped[0].step <= v.step


def test_compaction_keeps_every_keys_latest_value() -> None:
    cfg = _compact()
    wl = Workload(rate=30, record_bytes=20, keys=40, tombstone_share=0.1, duration_ms=90_000, consumer_lag_ms=0)
    sim = simulate(cfg, wl)
    assert sim.ok, sim.violations[:3]
    assert sim.summary["cleaner_passes"] > 1
    recs = [r for s in sim.view.segments for r in s.records]
    assert len(recs) < sim.summary["records_produced"] / 2  # compaction removed the superseded records
    offsets = [r.offset for r in recs]
    assert offsets == sorted(set(offsets))
    # every key at most once below the cleaner checkpoint (the cleaned part holds each key's latest only)
    cp = sim.summary["cleaner_checkpoint"]
    cleaned = [r.key for r in recs if r.offset < cp]
    assert len(cleaned) == len(set(cleaned))


def test_min_cleanable_ratio_one_never_cleans_unless_max_compaction_lag_forces_it() -> None:
    wl = Workload(rate=20, record_bytes=20, keys=20, duration_ms=60_000, consumer_lag_ms=0)
    never = simulate(_compact(**{"min.cleanable.dirty.ratio": "1.0"}), wl)
    assert never.ok and never.summary["cleaner_passes"] == 0
    forced = simulate(_compact(**{"min.cleanable.dirty.ratio": "1.0", "max.compaction.lag.ms": "15000"}), wl)
    assert forced.ok and forced.summary["cleaner_passes"] > 0


def test_a_full_offset_map_cleans_only_what_it_mapped() -> None:
    # room for int(10 slots * 0.9) = 9 keys: a pass over more keys stops at the last offset it mapped
    cfg = _compact(**{"log.cleaner.dedupe.buffer.size": str(10 * lc.BYTES_PER_ENTRY)})
    sim = simulate(cfg, Workload(rate=20, record_bytes=10, keys=200, duration_ms=60_000, consumer_lag_ms=0))
    passes = [e for e in sim.events if e.kind == "clean"]
    assert passes and all(e.data["map_keys"] <= 9 for e in passes)
    assert any(e.data["map_full"] for e in passes)
    assert sim.ok, sim.violations[:3]


def test_segment_jitter_rolls_earlier_but_never_before_segment_ms_minus_jitter() -> None:
    cfg = TopicConfig.from_pairs([("segment.ms", "10000"), ("segment.jitter.ms", "4000")])
    sim = simulate(cfg, Workload(rate=5, record_bytes=10, keys=5, duration_ms=120_000, consumer_lag_ms=None, seed=7))
    rolls = [e for e in sim.events if e.kind == "roll"]
    assert rolls and all("segment.ms" in e.detail for e in rolls)
    bases = [s.base_offset for s in sim.view.segments]
    times = {int(e.detail.split()[1].split("..")[0]): e.time_ms for e in sim.events if e.kind == "append"}
    ages = [times[b] - times[a] for a, b in zip(bases, bases[1:], strict=False)]
    assert all(6000 < age <= 11000 for age in ages)  # > segment.ms - jitter (jitter < 4000), <= segment.ms + a step
    assert len(set(ages)) > 1  # each segment draws its own jitter


def test_the_reference_batch_sizes_agree() -> None:
    # the cleaner's keyed batch and the segment reference's length-only batch are the same v2 bytes
    recs = tuple(lc.Record(5 + i, f"k{i:03d}", None if i % 3 == 0 else "x" * 17, 1000) for i in range(9))
    keyed = lc.Batch(5, 13, recs, None, 1000)
    plain = ls.Batch(5, tuple(ls.Record(i, 1000, 4, -1 if i % 3 == 0 else 17) for i in range(9)))
    assert keyed.size == plain.size


@pytest.mark.parametrize("text, expected", [
    ("segment.bytes=100,cleanup.policy=[compact,delete]", [("segment.bytes", "100"),
                                                           ("cleanup.policy", "compact,delete")]),
    ("retention.ms=-1", [("retention.ms", "-1")]),
])
def test_split_assignments(text: str, expected: list[tuple[str, str]]) -> None:
    assert split_assignments(text) == expected


@pytest.mark.parametrize("args, key", [
    (["--config", "segment.byte=100"], "segment.byte"),
    (["--config", "segment.bytes=abc"], "segment.bytes"),
    (["--config", "segment.bytes=10"], "segment.bytes"),  # LogConfig: at least 14
    (["--config", "retention.ms=-2"], "retention.ms"),
    (["--config", "cleanup.policy=shred"], "cleanup.policy"),
    (["--config", "min.cleanable.dirty.ratio=1.5"], "min.cleanable.dirty.ratio"),
    (["-w", "duration=forever"], "duration"),
    (["-w", "tombstones=0.1"], "tombstones"),
    (["-w", "consumer.lag.ms=5s,consumer.lag.records=10"], "consumer.lag.records"),
    (["--config-file", "/nonexistent/kcheck.properties"], "/nonexistent/kcheck.properties"),  # the file is named
])
def test_bad_input_is_one_line_naming_the_key(args: list[str], key: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["log", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and key in err and "Traceback" not in err


def test_config_error_names_the_key() -> None:
    with pytest.raises(ConfigError) as e:
        TopicConfig.from_pairs([("delete.retention.ms", "-5")])
    assert e.value.key == "delete.retention.ms"


def test_cli_tombstone_incident_exit_1_with_step_segment_offset_key(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["log", "--config-file", f"{EXAMPLES}/compacted-topic.properties", "--workload-file",
                 f"{EXAMPLES}/deletes-lagging-consumer.properties", "-w", "duration=100s", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and not doc["ok"] and doc["exit_status"] == 1
    v = doc["violations"][0]
    assert v["invariant"] == CONSUMER_INVARIANT and v["key"] and v["offset"] is not None and v["segment"] is not None
    assert v["step"] > 0 and "delete.retention.ms=5000" in v["message"]
    kinds = {s["event"] for s in doc["steps"]}
    assert {"append", "roll", "index", "clean", "consume", "tombstone"} <= kinds
    assert doc["config"]["cleanup.policy"] == "compact" and doc["workload"]["consumer.lag.ms"] == 25000


def test_cli_table_and_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["log", "--config-file", f"{EXAMPLES}/retention-topic.properties", "--workload-file",
                 f"{EXAMPLES}/steady-producer.properties", "-w", "duration=60s", "--steps"])
    out = capsys.readouterr().out
    assert code == 0
    assert "retention.bytes=65536" in out and "segment.bytes" in out and "OK: 0 violation(s)" in out
    assert main(["log", "--config", "segment.bytes=5000", "-w", "duration=10s", "--summary"]) == 0
    out = capsys.readouterr().out
    assert "Steps" not in out and "Summary" in out
