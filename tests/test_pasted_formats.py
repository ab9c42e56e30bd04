"""Kafka's own tool output accepted as pasted (issue 19 part 3): `kafka-reassign-partitions` output and
`kafka-topics --describe` of every release, auto-detected, the block used named.

The describe fixtures under tests/data/pasted follow the print statements of Kafka's `TopicCommand` of each release
family (Scala up to 3.6, Java since); `kafka-reassign-partitions` output is the real tool's, of every release, in
tests/data/reassign/ (read by tests/test_reassign_outputs.py; here the commands on 4.4.0's and bad pastes).
"""

import json
from pathlib import Path

import pytest

from cli_support import one_error_line, run
from kcheck.inputs.formats import InputError, parse_pasted, read_text

DATA = Path(__file__).parent / "data" / "pasted"
REAL = Path(__file__).parent / "data" / "reassign" / "4.4.0"  # Kafka 4.4.0's own outputs (tests/data/reassign/make.py)
GENERATE = str(REAL / "generate_orders.txt")
BEFORE = {("orders", 0): (1, 2, 3), ("orders", 1): (2, 3, 1)}


def replicas(assignment):
    return {(p.topic, p.partition): p.replicas for p in assignment}


def test_verify_output_alone_is_one_clear_line():
    text = "Status of partition reassignment:\nReassignment of partition orders-0 is completed.\n"
    with pytest.raises(InputError, match="names each partition's status, not its replicas"):
        parse_pasted(text, "v", "proposed")


@pytest.mark.parametrize("name", ["describe_2.0.txt", "describe_2.7.txt", "describe_3.6.txt", "describe_4.0.txt",
                                  "describe_no_configs.txt", "describe_offline.txt"])
def test_describe_of_every_release(name):
    assignment, block = parse_pasted(read_text(str(DATA / name)), name, "current")
    assert block == "kafka-topics --describe" and replicas(assignment) == BEFORE
    p1 = assignment.partitions[1]
    assert (p1.leader, p1.isr) == (3, (3,))
    assert p1.elr == ((2,) if name == "describe_4.0.txt" else None)
    assert p1.offline == ((2, 1) if name == "describe_offline.txt" else None)


@pytest.mark.parametrize("text, line, fragment", [
    ("Current partition replica assignment\n{\"version\":1,\"partitions\":[]}\n"
     "Proposed partition reassignment configuration\n{}\n", 2, "partition reassignment list cannot be empty"),
    ("Current partition replica assignment\n{\"version\":1,\n", "3:1", "invalid JSON"),  # where it ends
    ("Proposed partition reassignment configuration\n{\"version\":1,\"partitions\":[{\"topic\":\"a\",\"partition\":0,"
     "\"replicas\":[1]}]}\nhello\n", 3,
     'not part of kafka-reassign-partitions --generate output (of any release from 0.10.2 to 4.4): "hello"'),
])
def test_bad_paste_is_one_line_naming_the_line(text, line, fragment):
    with pytest.raises(InputError) as e:
        parse_pasted(text, "p.txt", "proposed")
    msg = str(e.value)
    assert msg.startswith(f"p.txt:{line}: ") and fragment in msg and "\n" not in msg


def test_a_json_error_in_a_long_pasted_line_keeps_its_line_and_column(capsys, tmp_path):
    """Kafka prints each block as one line (100,000 characters for a few thousand partitions): the error names
    the column, ahead of the message, so it stays whole when the message is cut. On main it named the line only."""
    parts = ",".join(f'{{"topic":"t","partition":{p},"replicas":[1,2,3]}}' for p in range(3000))
    good = f'{{"version":1,"partitions":[{parts}]}}'
    block = f'{{"version":1,"partitions":[{parts},]}}'  # a stray comma before the closing bracket
    paste = tmp_path / ("x" * 200 + ".txt")  # a long name, cut in the message: the position is not
    paste.write_text(f"Current partition replica assignment\n{good}\n\nProposed partition reassignment "
                     f"configuration\n{block}\n")
    code, out, err = run(capsys, "verify", str(paste))
    assert (code, out) == (2, "")
    one_error_line(err, "…(", f":5:{len(block) - 1}: invalid JSON in the Proposed partition reassignment "
                        "configuration block: Expecting value")


# --- the commands -----------------------------------------------------------------------------------------------


def test_verify_checks_the_proposed_block_and_names_it(capsys, tmp_path):
    code, out, err = run(capsys, "verify", GENERATE, "--json")
    rep = json.loads(out)
    assert err == "" and rep["block"] == "--generate output: Proposed partition reassignment configuration"
    assert rep["partitions"] == 6
    junit = tmp_path / "j.xml"
    code, out, err = run(capsys, "verify", GENERATE, "--block", "current", "--junit-xml", str(junit))
    assert "Read " in out and "--generate output: Current partition replica assignment." in out
    assert 'name="block" value="--generate output: Current partition replica assignment"' in junit.read_text()


def test_verify_reassignment_takes_both_blocks_of_one_generate_output(capsys):
    code, out, err = run(capsys, "verify-reassignment", GENERATE, GENERATE, "--json")
    assert err == "", err
    rep = json.loads(out)
    assert rep["current_block"] == "--generate output: Current partition replica assignment"
    assert rep["proposed_block"] == "--generate output: Proposed partition reassignment configuration"
    generated = read_text(GENERATE).split("Proposed partition reassignment configuration")
    current, proposed = (json.loads(block.split("\n", 1)[1].strip())["partitions"] for block in generated)
    assert {(m["partition"], tuple(m["current"]), tuple(m["target"])) for m in rep["moves"]} == {
        (f"orders-{c['partition']}", tuple(c["replicas"]), tuple(p["replicas"])) for c, p in zip(current, proposed,
                                                                                               strict=True)}


def test_verify_reassignment_refuses_a_describe_as_the_plan(capsys):
    code, out, err = run(capsys, "verify-reassignment", GENERATE, str(DATA / "describe_4.0.txt"))
    assert code == 2
    one_error_line(err, "describe_4.0.txt", "PROPOSED must be a reassignment JSON")


def test_bad_block_option_is_one_line(capsys):
    code, out, err = run(capsys, "verify", GENERATE, "--block", "both")
    assert code == 2
    one_error_line(err, "--block", "'both' is not one of current, proposed")


@pytest.mark.parametrize("width", [65, 80, 132])
def test_json_wrapped_by_a_terminal_is_read_unwrapped(width: int) -> None:
    # 4.4.0's real --generate output, each one-line JSON cut at the terminal's width as a paste keeps it (even inside
    # a string): read as the tool printed it, and the block's name says how.
    real = (Path(__file__).parent / "data" / "reassign" / "4.4.0" / "generate_orders.txt").read_text()
    wrapped = "".join("\n".join(line[i:i + width] for i in range(0, len(line), width)) + "\n"
                      if line.startswith("{") else line + "\n" for line in real.splitlines())
    assert wrapped != real
    for want in ("current", "proposed"):
        got, name = parse_pasted(wrapped, "paste", want)
        expected, plain = parse_pasted(real, "real", want)
        assert got == expected
        assert name == (f"{plain} (its JSON wrapped at {width} columns by a terminal: read with those line breaks "
                        "removed)")


def test_a_broken_json_block_is_not_taken_for_a_wrapped_one() -> None:
    real = (Path(__file__).parent / "data" / "reassign" / "4.4.0" / "generate_orders.txt").read_text()
    broken = real.replace('"partition":0,', '"partition":0', 1)  # one comma lost: no line width explains it
    with pytest.raises(InputError, match=r"invalid JSON in the Current partition replica assignment block"):
        parse_pasted(broken, "paste", "current")
