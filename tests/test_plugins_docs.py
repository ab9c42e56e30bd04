"""The docs' "Plug-ins" page (docs/plugins.md): each kind's minimal example (examples/plugins/) is the page's
block character for character and runs through the commands; the walk-through "Checking a change with each
plug-in kind" runs as written; a user's assignor is held to what it declares (cooperative, guarantees); a plug-in
of the wrong shape or a module not on the path is one line naming what kcheck expected, exit 2."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli_support import one_error_line, run, write_module

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "plugins"
README = (ROOT / "docs" / "plugins.md").read_text()


def _section(title: str, level: str = "## ") -> str:
    """The page from the heading `title` to the next heading of the same level or above (the whole page for its
    own title)."""
    if level == "# ":
        return README
    start = README.index(f"\n{level}{title}\n")
    ends = [e for lv in range(2, len(level)) if (e := README.find("\n" + "#" * lv + " ", start + 1)) >= 0]
    return README[start:min(ends, default=len(README))]


PLUGINS = _section("Plug-ins", "# ")
WALK = _section("Checking a change with each plug-in kind", "## ")


def _walkthrough() -> list[str]:
    (block,) = re.findall(r"```bash\n(.*?)```", WALK, re.S)
    return [line for line in block.splitlines() if line.strip()]  # as written (a `# exit N` comment states the status)


def _expected_exit(line: str) -> int:
    found = re.search(r"#\s*exit (\d)\s*$", line)
    assert found, f"the walk-through line does not say its exit status: {line}"
    return int(found.group(1))


def _kcheck(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A README line as a user runs it after `export PYTHONPATH=.` (kcheck is `python -m kcheck`: CI has no venv
    on PATH)."""
    args = shlex.split(line, comments=True)
    assert args[0] == "kcheck", line
    env = dict(os.environ, PYTHONPATH=".")
    return subprocess.run([sys.executable, "-m", "kcheck", *args[1:]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.fixture
def workdir(tmp_path) -> Path:
    """A copy of examples/plugins: the walk-through's `cd examples/plugins`, without writing into the checkout."""
    work = tmp_path / "plugins"
    shutil.copytree(EXAMPLES, work, ignore=shutil.ignore_patterns("__pycache__"))
    return work


# --- the README's blocks are the example files ------------------------------------------------------------


def test_every_example_file_is_a_readme_block_character_for_character():
    blocks = dict(re.findall(r'```(?:python|json) title="examples/plugins/([\w.]+)"\n(.*?)```', PLUGINS, re.S))
    files = sorted(p.name for p in EXAMPLES.iterdir() if p.suffix in (".py", ".json"))
    assert sorted(blocks) == files
    for name in files:
        assert blocks[name] == (EXAMPLES / name).read_text(), name


def test_the_readme_states_each_signature_kcheck_checks():
    from kcheck.reference import plugins

    flat = " ".join(PLUGINS.split())
    assert plugins.PLACER_SIGNATURE in flat
    assert "assign_partitions(partitions_per_topic, subscriptions) -> {member id: [TopicPartition, ...]}" in flat
    for declared in ("`cooperative = True`", "`guarantees = (...)`"):
        assert declared in flat


# --- the walk-through, as written ---------------------------------------------------------------------------


def test_the_walkthrough_starts_in_the_examples_with_pythonpath_dot():
    lines = _walkthrough()
    assert lines[:2] == ["cd examples/plugins", "export PYTHONPATH=."]
    assert all(line.startswith("kcheck ") for line in lines[2:])
    kinds = " ".join(lines)
    for option in ("--placer my_placer:place", "--assignor my_assignor:KeepOwned", "--protocol my_protocol:proposed",
                   "--invariants my_invariants"):
        assert option in kinds


def _run_lines(workdir: Path, sweeps: bool) -> list[tuple[str, subprocess.CompletedProcess[str]]]:
    out = []
    for line in _walkthrough()[2:]:
        if line.startswith("kcheck sweep") == sweeps:
            done = _kcheck(line, workdir)
            assert "Traceback" not in done.stderr, (line, done.stderr[-3000:])
            assert done.returncode == _expected_exit(line), (line, done.stdout[-3000:], done.stderr[-3000:])
            out.append((line, done))
    return out


def test_the_walkthrough_runs_as_written(workdir):
    """Every line but the sweeps (those start Spark: the slow test below): prove, assign, exhaust."""
    (prove, out_prove), (assign, out_assign), (exhaust, out_exhaust) = _run_lines(workdir, sweeps=False)
    assert prove.startswith("kcheck prove") and assign.startswith("kcheck assign")
    text = out_prove.stdout
    assert re.search(r"placement\.distinct-brokers\s.*proved", text)
    assert re.search(r"placement\.rack-diversity\s.*refuted", text)
    assert "3 brokers, racks a={0}, b={1,2}, 1 partition(s), RF 2, start index 1" in text
    assert "kcheck place --placer my_placer:place --brokers 0,1,2 --racks 0:a,1:b,2:b" in text
    text = out_assign.stdout
    assert "revoked" in text and "assignment.balanced" in text  # cooperative columns; the soft finding
    assert re.search(r"assignment\.complete, assignment\.cooperative-safety, assignment\.valid hold", text)
    text = out_exhaust.stdout
    assert "Shortest counterexample (4 steps)" in text
    assert "user.hw-within-isr at broker 3" in text and "replication.electable-has-committed at broker 3" in text


@pytest.mark.spark
@pytest.mark.slow
def test_the_walkthrough_sweeps_run_as_written(workdir):
    """The two sweeps of the walk-through (local Spark; about 1.5 and 1 min on this shared 2-core machine)."""
    (_, placers), (_, assignors) = _run_lines(workdir, sweeps=True)
    assert re.search(r"my_placer:place\s.*placement\.rack-diversity\s.*FAILED", placers.stdout)
    assert "Verified:" in placers.stdout and (workdir / "sweeps" / "placers" / "report.html").exists()
    assert re.search(r"my_assignor:KeepOwned\s.*assignment\.cooperative-safety\s.*holds", assignors.stdout)
    assert "Verified:" in assignors.stdout


def test_declaring_balanced_makes_the_walkthrough_assign_fail(workdir, capsys, monkeypatch):
    """The README's claim under step 3: the same assignor declaring `balanced` exits 1."""
    source = (workdir / "my_assignor.py").read_text()
    changed = source.replace('guarantees = ("assignment.complete", "assignment.valid")',
                             'guarantees = ("complete", "valid", "balanced")')
    assert changed != source
    mod = write_module(workdir, monkeypatch, changed)
    code, out, _ = run(capsys, "assign", "--assignor", f"{mod}:KeepOwned", str(workdir / "group.json"))
    assert code == 1
    assert "breaks what it declares: assignment.balanced" in " ".join(out.split())


# --- an assignor is held to what it declares ----------------------------------------------------------------

ROUND_ROBIN = '''
from kcheck.model import TopicPartition


class RoundRobin:
    """Deals every partition round the members, whatever they own: moves owned partitions in one generation."""
    cooperative = {cooperative}

    def assign_partitions(self, partitions_per_topic, subscriptions):
        out = {{m: [] for m in subscriptions}}
        dealt = 0
        for topic in sorted(partitions_per_topic):
            readers = sorted(m for m, s in subscriptions.items() if topic in s.topics)
            for p in partitions_per_topic[topic]:
                out[readers[dealt % len(readers)]].append(TopicPartition(topic, p.partition))
                dealt += 1
        return out
'''


def test_assign_holds_a_declared_cooperative_assignor_to_cooperative_safety(tmp_path, monkeypatch, capsys):
    """The same assignor, declared cooperative and not: only the declared one is held to cooperative safety."""
    import json

    for cooperative, exit_code in ((True, 1), (False, 0)):
        mod = write_module(tmp_path, monkeypatch, ROUND_ROBIN.format(cooperative=cooperative))
        code, out, _ = run(capsys, "assign", "--assignor", f"{mod}:RoundRobin", str(EXAMPLES / "group.json"),
                           "--json")
        doc = json.loads(out)
        assert code == exit_code
        assert doc["cooperative"] is cooperative
        if cooperative:  # c1's orders-1 goes to c2 in the round c1 still owns it
            assert doc["broken_guarantees"] == ["assignment.cooperative-safety"]
            assert "assignment.cooperative-safety" in doc["guarantees"]
        else:  # eager members revoke everything first: the invariant does not apply
            assert doc["broken_guarantees"] == [] and doc["guarantees"] == []


def test_the_sweep_holds_a_declared_cooperative_assignor_to_cooperative_safety(tmp_path, monkeypatch):
    """The sweep's engine (GroupSpace.evaluate, what each Spark task runs) on a small space, in this process."""
    from kcheck.spark_check.groups import GroupSpace, parse_group_bounds
    from kcheck.spark_check.report import failures, invariant_rows

    for cooperative in (True, False):
        mod = write_module(tmp_path, monkeypatch, ROUND_ROBIN.format(cooperative=cooperative))
        space = GroupSpace(parse_group_bounds("small,max_members=2,max_partitions=2,racks=none"),
                           [f"{mod}:RoundRobin"])
        rows = {r.invariant: r for r in invariant_rows(space, space.evaluate(0, len(space)))}
        safety = rows["assignment.cooperative-safety"]
        if cooperative:  # a guarantee it declared (hard in any case): the sweep fails
            assert safety.violated > 0 and safety.guaranteed and safety.fails
            assert [r.invariant for r in failures(list(rows.values()))] == ["assignment.cooperative-safety"]
        else:  # eager: not a cooperative round, never checked
            assert safety.checked == safety.violated == 0 and not safety.guaranteed
            assert failures(list(rows.values())) == []


def test_a_declared_soft_guarantee_fails_the_sweep(tmp_path, monkeypatch):
    from kcheck.spark_check.groups import GroupSpace, parse_group_bounds
    from kcheck.spark_check.report import invariant_rows

    body = (EXAMPLES / "my_assignor.py").read_text().replace(
        'guarantees = ("assignment.complete", "assignment.valid")', 'guarantees = ("balanced",)')
    mod = write_module(tmp_path, monkeypatch, body)
    space = GroupSpace(parse_group_bounds("small,max_members=2,max_partitions=2,racks=none"), [f"{mod}:KeepOwned"])
    rows = {r.invariant: r for r in invariant_rows(space, space.evaluate(0, len(space)))}
    assert rows["assignment.balanced"].violated > 0 and rows["assignment.balanced"].fails
    assert rows["assignment.optimally-balanced"].violated > 0 and not rows["assignment.optimally-balanced"].fails


@pytest.mark.parametrize("declaration, fragment", [
    ("cooperative = 'yes'", "declares cooperative = 'yes'; kcheck expected True or False"),
    ("guarantees = 'balanced'", "kcheck expected a tuple of assignment invariant ids"),
    ("guarantees = ('balance',)", "declares the guarantee 'balance', which is not an assignment invariant (one of "),
    ("guarantees = ('placement.distinct-brokers',)", "'placement.distinct-brokers', which is not an assignment"),
])
def test_a_malformed_declaration_is_one_line(declaration, fragment, tmp_path, monkeypatch, capsys):
    body = ROUND_ROBIN.format(cooperative=False).replace("    cooperative = False\n", f"    {declaration}\n")
    mod = write_module(tmp_path, monkeypatch, body)
    code, _, err = run(capsys, "assign", "--assignor", f"{mod}:RoundRobin", str(EXAMPLES / "group.json"))
    assert code == 2
    one_error_line(err, "--assignor", fragment)


# --- a plug-in of the wrong shape: one line naming what kcheck expected, exit 2 -----------------------------

PLACER_EXPECTED = "kcheck expected place(brokers, n_partitions, replication_factor, fixed_start_index=-1"
ASSIGNOR_EXPECTED = "kcheck expected a class (or a function of no arguments) making objects with assign_partitions("

WRONG = '''
def two_args(brokers, n_partitions):
    return {}

def keyword_only(brokers, n_partitions, replication_factor, *, random):
    return {}

def a_list(brokers, n_partitions, replication_factor, fixed_start_index=-1, start_partition_id=-1, random=None):
    return [[b.id for b in brokers]]

number = 7

class OneArgument:
    def assign_partitions(self, partitions_per_topic):
        return {}

def needs_config(config):
    return OneArgument()
'''

SMALL_PROVE = ("--max-brokers", "2", "--max-racks", "1", "--max-partitions", "1", "--max-rf", "1")


@pytest.mark.parametrize("args, fragments", [
    (["prove", "--placer", "{m}:two_args", *SMALL_PROVE],
     ["plug-in {m}:two_args: TypeError: wrong signature: two_args(brokers, n_partitions) cannot be called with 6 "
      "positional arguments", PLACER_EXPECTED]),
    (["prove", "--placer", "{m}:keyword_only", *SMALL_PROVE], ["wrong signature", PLACER_EXPECTED]),
    (["place", "--placer", "{m}:two_args", "--brokers", "0,1", "--partitions", "1", "--replication-factor", "1"],
     ["wrong signature", PLACER_EXPECTED]),
    (["prove", "--placer", "{m}:a_list", *SMALL_PROVE],
     ["bad result: returned a list, not a mapping partition id -> replica list", PLACER_EXPECTED]),
    # Refused before any Spark starts (no --out is written): the sweep used to run the whole space first.
    (["sweep", "placement", "--space", "small", "--placer", "{m}:two_args", "--out", "{tmp}/sweep"],
     ["wrong signature", PLACER_EXPECTED]),
    (["assign", "--assignor", "{m}:OneArgument", "{group}"],
     ["plug-in {m}:OneArgument: TypeError: wrong signature: assign_partitions(partitions_per_topic) cannot be "
      "called with 2", ASSIGNOR_EXPECTED]),
    (["assign", "--assignor", "{m}:needs_config", "{group}"],
     ["needs_config(config) cannot be called with 0 positional arguments", ASSIGNOR_EXPECTED]),
    (["assign", "--assignor", "{m}:number", "{group}"], ["is not a class or factory of assignors", ASSIGNOR_EXPECTED]),
    (["sweep", "assignors", "--space", "small", "--assignor", "{m}:OneArgument", "--out", "{tmp}/sweep"],
     ["wrong signature", ASSIGNOR_EXPECTED]),
    (["explore", "--protocol", "{m}:needs_config", "--examples", "1"],
     ["needs_config(config) cannot be called with 0 positional arguments", "kcheck expected a Protocol ("]),
    (["prove", "--placer", "{m}:number", *SMALL_PROVE], ["is not callable", PLACER_EXPECTED]),
])
def test_a_wrong_signature_is_one_line_naming_what_kcheck_expected(args, fragments, tmp_path, monkeypatch, capsys):
    mod = write_module(tmp_path, monkeypatch, WRONG)
    fill = {"m": mod, "tmp": str(tmp_path), "group": str(EXAMPLES / "group.json")}
    code, _, err = run(capsys, *[a.format(**fill) for a in args])
    assert code == 2, err
    one_error_line(err, *[f.format(**fill) for f in fragments])
    assert not (tmp_path / "sweep").exists()


@pytest.mark.parametrize("args", [
    ["prove", "--placer", "not_on_the_path_kcheck:place", *SMALL_PROVE],
    ["assign", "--assignor", "not_on_the_path_kcheck:A", str(EXAMPLES / "group.json")],
    ["explore", "--protocol", "not_on_the_path_kcheck:proposed", "--examples", "1", "--steps", "1"],
])
def test_a_module_not_on_the_path_says_where_kcheck_looks(args, capsys):
    code, _, err = run(capsys, *args)
    assert code == 2
    one_error_line(err, "cannot import module 'not_on_the_path_kcheck'",
                   "kcheck imports plug-ins from the current directory and PYTHONPATH")


def test_debug_keeps_the_traceback_of_a_wrong_signature(tmp_path, monkeypatch, capsys):
    mod = write_module(tmp_path, monkeypatch, WRONG)
    code, _, err = run(capsys, "--debug", "prove", "--placer", f"{mod}:two_args", *SMALL_PROVE)
    assert code == 2
    assert err.startswith("Traceback") and err.splitlines()[-1].startswith("kcheck: error: plug-in ")
    assert "wrong signature" in err.splitlines()[-1]


# --- what `kcheck sweep --master` ships (the standalone cluster runs it: tests/test_spark_standalone.py) -----


def test_the_sweep_ships_the_users_module_files_and_package_zips(tmp_path, monkeypatch):
    import zipfile

    from kcheck.reference.plugins import load, shippable_paths
    from kcheck.spark_check.job import _zip_package

    mod = write_module(tmp_path, monkeypatch, (EXAMPLES / "my_placer.py").read_text())
    pkg = tmp_path / "team_plugins_kcheck"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "placers.py").write_text("from team_plugins_kcheck.sub.base import place\n")
    shutil.copy(EXAMPLES / "my_placer.py", pkg / "sub" / "base.py")
    specs = [f"{mod}:place", "team_plugins_kcheck.sub.placers:place", "adminutils", "jvm:org.example.Placer",
             "kcheck.reference.placers:striped_assign", f"{mod}:place"]
    for spec in specs:
        if ":" in spec and not spec.startswith("jvm:"):
            load(spec)
    assert shippable_paths(specs) == [str(tmp_path / f"{mod}.py"), str(pkg)]  # kcheck's own and jvm: stay
    with zipfile.ZipFile(_zip_package(str(pkg), str(tmp_path))) as z:
        assert sorted(z.namelist()) == ["team_plugins_kcheck/__init__.py", "team_plugins_kcheck/sub/__init__.py",
                                        "team_plugins_kcheck/sub/base.py", "team_plugins_kcheck/sub/placers.py"]
