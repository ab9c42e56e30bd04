"""Every command and code block of the documentation site (docs/**/*.md) runs here, so the
docs cannot drift from the code. The conventions a page follows (docs/development.md, "The docs"):

- A ```bash block is commands, run in page order in one folder per page (a copy of examples/, and tests/ linked):
  `kcheck ...` lines (a trailing `# exit N` states the exit status, default 0; `> FILE` writes stdout to FILE),
  `export PYTHONPATH=.` and `cd DIR`. kcheck runs in this process, or as `python -m kcheck` once a page exported
  PYTHONPATH (its plug-ins are the page's own files, and stay out of this process).
- A block with `title="NAME"` is a file the page shows: written into the folder where it appears.
- A ```python block without a title is run (one namespace per page, in the page's folder).
- `<!-- test: output -->` before a block: each of its lines appears in the previous command's output (spaces and
  table rules ignored; `...` stands for any text).
- `<!-- test: test_NAME -->`: tests/test_NAME.py runs the block (it reads this page).
- `<!-- test: MARK ... -->` before a ```bash block (slow, kafka, cluster, spark): the block runs through bash under
  those pytest markers, with the page's files, as its own test; `bash` alone runs it through bash in the fast run.
Any other block fails `test_every_block_is_run`.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md"))
MARKS = {"slow", "kafka", "cluster", "spark", "bash"}
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)(?P<attrs>[^\n]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.M | re.S)
DIRECTIVE = re.compile(r"<!--\s*test:\s*(?P<words>[\w ,-]+?)\s*-->\s*\Z")


@dataclass
class Block:
    page: str
    line: int
    lang: str
    body: str
    title: str | None = None
    directives: set[str] = field(default_factory=set)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        indent = len(m.group("indent"))
        body = "".join(line[indent:] + "\n" for line in m.group("body").splitlines())
        title = re.search(r'title="([^"]+)"', m.group("attrs"))
        before = DIRECTIVE.search(text[:m.start()].rstrip())
        words = set(re.split(r"[\s,]+", before.group("words"))) if before else set()
        found.append(Block(str(path.relative_to(ROOT)), text.count("\n", 0, m.start()) + 1, m.group("lang"), body,
                           title.group(1) if title else None, words))
    return found


def kind(b: Block) -> str:
    """What the tests do with a block: file, output, python, bash (through bash), commands (line by line), or
    elsewhere (a test module of its own runs it: named in the directive)."""
    if any(w.startswith("test_") for w in b.directives):
        return "elsewhere"
    if b.title:
        return "file"
    if "output" in b.directives:
        return "output"
    if b.lang == "python":
        return "python"
    if b.lang in ("bash", "sh", "shell"):
        return "bash" if b.directives & MARKS else "commands"
    return "unrun"


ALL = [b for p in PAGES for b in blocks(p)]


def test_every_block_is_run():
    unrun = [b.where for b in ALL if kind(b) == "unrun"]
    assert not unrun, f"blocks no test runs (see this file's docstring): {unrun}"
    unknown = [(b.where, w) for b in ALL for w in b.directives - MARKS - {"output"} if not w.startswith("test_")]
    assert not unknown, unknown
    for b in ALL:  # a block another test runs: that test reads this page
        for name in (w for w in b.directives if w.startswith("test_")):
            assert Path(b.page).name in (ROOT / "tests" / f"{name}.py").read_text(), (b.where, name)


def test_the_pages_have_blocks():
    assert len(ALL) > 50 and {kind(b) for b in ALL} == {"file", "output", "python", "bash", "commands",
                                                 "elsewhere"}


# --- running a page -----------------------------------------------------------------------------------------


def _folder(tmp_path: Path) -> Path:
    work = tmp_path / "page"
    shutil.copytree(ROOT / "examples", work / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    for linked in ("tests", "bench"):
        (work / linked).symlink_to(ROOT / linked)
    return work


def _lines(body: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", body)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def _expected_exit(line: str) -> int:
    found = re.search(r"#\s*exit (\d+)", line)
    return int(found.group(1)) if found else 0


def flat(text: str) -> str:
    return " ".join(re.sub("[\u2500-\u257f]", " ", text).split())


def assert_shown(shown: str, stdout: str, where: str) -> None:
    """Each line a page shows as output appears in stdout (spaces and table rules ignored; `...` is any text)."""
    out = flat(stdout)
    for line in shown.splitlines():
        words = flat(line)
        if not words:
            continue
        pattern = r"\s*".join(".*?" if piece == "..." else re.escape(piece).replace(r"\ ", r"\s*")
                              for piece in re.split(r"(\.\.\.)", words) if piece)
        assert re.search(pattern, out, re.S), f"{where}: not in the output: {line!r}\n{stdout[-3000:]}"


class Page:
    """One page's folder and state: the commands run so far, the last one's stdout."""

    def __init__(self, work: Path, capsys, monkeypatch):
        self.work, self.cwd, self.capsys, self.monkeypatch = work, work, capsys, monkeypatch
        self.pythonpath = False
        self.stdout = ""
        self.namespace: dict = {}
        monkeypatch.chdir(work)

    def run(self, b: Block) -> None:
        k = kind(b)
        if k == "file":
            (self.cwd / b.title).write_text(b.body, encoding="utf-8")
        elif k == "output":
            assert_shown(b.body, self.stdout, b.where)
        elif k == "python":
            exec(compile(b.body, b.where, "exec"), self.namespace)  # noqa: S102 (the page's own example)
        elif k == "commands":
            for line in _lines(b.body):
                self.command(line, b.where)

    def command(self, line: str, where: str) -> None:
        if line.startswith("export PYTHONPATH=."):
            self.pythonpath = True
            return
        if line.startswith("cd "):
            self.cwd = self.cwd / line[3:].strip()
            self.monkeypatch.chdir(self.cwd)
            return
        command, _, redirect = line.split("#", 1)[0].partition(" > ")
        args = shlex.split(command)
        assert args and args[0] == "kcheck", f"{where}: not a kcheck command: {line}"
        if self.pythonpath:
            done = subprocess.run([sys.executable, "-m", "kcheck", *args[1:]], cwd=self.cwd, capture_output=True,
                                  text=True, timeout=600, env=dict(os.environ, PYTHONPATH="."))
            code, out, err = done.returncode, done.stdout, done.stderr
        else:
            from kcheck.cli import main

            code = main(args[1:])
            out, err = self.capsys.readouterr()
        self.stdout = out + err  # what a terminal shows: the output blocks are checked against both
        if redirect:
            (self.cwd / redirect.strip()).write_text(out)
        assert "Traceback" not in err, (where, line, err[-3000:])
        assert code == _expected_exit(line), (where, line, code, out[-3000:], err[-3000:])


FAST = sorted({b.page for b in ALL if kind(b) not in ("bash", "elsewhere")})


@pytest.mark.parametrize("page", FAST)
def test_page_runs_as_written(page, tmp_path, capsys, monkeypatch):
    """The page's blocks in order, but those run through bash (below)."""
    state = Page(_folder(tmp_path), capsys, monkeypatch)
    for b in ALL:
        if b.page == page and kind(b) not in ("bash", "elsewhere"):
            state.run(b)


def _bash_params():
    for b in ALL:
        if kind(b) == "bash":
            marks = [getattr(pytest.mark, m) for m in sorted(b.directives & (MARKS - {"bash"}))]
            yield pytest.param(b, id=b.where, marks=marks)


@pytest.mark.parametrize("block", list(_bash_params()))
def test_bash_block_runs_as_written(block, tmp_path):
    """A block that needs the shell (a pipe, javac, spark-submit), with the page's files written first; `kcheck` is
    this interpreter's."""
    work = _folder(tmp_path)
    for b in ALL:
        if b.page == block.page and kind(b) == "file":
            (work / b.title).write_text(b.body, encoding="utf-8")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "kcheck").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kcheck "$@"\n')
    (bindir / "kcheck").chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    script = "\n".join(_stated_exit(line) for line in re.sub(r"\\\n\s*", " ", block.body).splitlines())
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=work, env=env, capture_output=True,
                          text=True, timeout=1800)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, (done.returncode, done.stdout[-3000:], done.stderr[-3000:])


def _stated_exit(line: str) -> str:
    """A shell line whose comment states an exit status N: the script goes on only when it ended with N."""
    status = _expected_exit(line)
    command = line.split("#", 1)[0].rstrip()
    return f"rc=0; {command} || rc=$?; test $rc = {status}" if status and command else line


# --- the quick start: .ci/run runs the two commands as written ------------------------------------------------


def test_the_quick_start_commands_are_what_ci_runs():
    """docs/getting-started.md and README.md show the two set-up commands `.ci/run` runs (its first step and its
    last line), byte for byte: those blocks are run by CI itself."""
    ci = (ROOT / ".ci" / "run").read_text()
    shown = [b.body.strip() for b in blocks(ROOT / "docs" / "getting-started.md") if kind(b) == "elsewhere"]
    assert len(shown) == 2 and all(line.startswith("python3 -m venv .venv && ") for line in shown)
    readme = (ROOT / "README.md").read_text()
    main_job, tests = shown
    assert f'"{main_job}"' in ci and ci.rstrip().endswith(tests)
    assert all(f"```bash\n{line}\n```" in readme for line in shown)
