"""kcheck-pre-commit (kcheck/hook.py), the pre-commit hook's command, in this process: which kcheck command each
changed file gets, the worst exit status, and kcheck's one line on bad input. pre-commit's own runner runs it in
tests/test_pytest_plugin.py."""

from __future__ import annotations

import pytest

from kcheck.hook import commands, main

DESCRIBE = """\
Topic: orders	TopicId: 0m8f2CqhS4yN3bXd0xVbAw	PartitionCount: 1	ReplicationFactor: 2	\
Configs: min.insync.replicas=1
	Topic: orders	Partition: 0	Leader: 1	Replicas: 1,3	Isr: 1,3
"""


def test_each_file_gets_its_command():
    assert commands(["d.txt", "plans/p.json", "x.txt"], "d.txt", "b.txt") == [
        ["verify", "d.txt", "--brokers-file", "b.txt"],
        ["verify-reassignment", "d.txt", "plans/p.json", "--brokers-file", "b.txt"],
        ["verify", "x.txt", "--brokers-file", "b.txt"]]
    assert commands(["p.json"], None, None) == [["verify", "p.json"]]


def test_the_worst_status_wins_and_every_file_is_checked(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "describe.txt").write_text(DESCRIBE)
    (tmp_path / "brokers.txt").write_text("1:a\n2:a\n3:b\n")
    (tmp_path / "one-rack.json").write_text('{"version": 1, "partitions": [{"topic": "orders", "partition": 0, '
                                            '"replicas": [1, 2]}]}')
    args = ["--describe", "describe.txt", "--brokers-file", "brokers.txt"]
    assert main([*args, "describe.txt"]) == 0
    assert main([*args, "one-rack.json", "describe.txt"]) == 1  # both racks a: rack-diversity
    out = capsys.readouterr().out
    assert "$ kcheck verify-reassignment describe.txt one-rack.json" in out and "placement.rack-diversity" in out
    assert main([*args, "missing.json", "one-rack.json"]) == 2
    assert "kcheck: error: missing.json: " in capsys.readouterr().err
    assert main([]) == 0


def test_a_bad_option_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--describ", "x"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("kcheck: error: kcheck-pre-commit: ") and err.count("\n") == 1
