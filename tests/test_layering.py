"""The import layering ARCHITECTURE.md draws, read from the diagram itself and from the installed package: every
import of every module (at the top, inside functions and under `TYPE_CHECKING` alike) goes from a part to itself or
to a part the diagram lets it import (the arrows, followed through), and no modules import each other in a circle.
The diagram names every installed part, so it cannot drift from the code.

The imports that break the rule today are listed in KNOWN, each with what it would take to remove it. The list can
only shrink: an entry whose import is gone fails the test until it is deleted, and any new upward import or circle
fails it at once."""

from __future__ import annotations

import ast
import importlib.util
import re
import tomllib
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent


def _diagram() -> nx.DiGraph:
    """The diagram of ARCHITECTURE.md's "Parts and the direction of imports": the first fenced block there, one line
    per part, `part -> the parts it imports directly, ...` (a part with no arrow imports no other part)."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Parts and the direction of imports", 1)[1]
    block = re.search(r"```[a-z]*\n(.*?)```", section, re.S)
    assert block, "no diagram in ARCHITECTURE.md"
    g = nx.DiGraph()
    for line in block.group(1).splitlines():
        part, _, targets = (s.strip() for s in line.partition("->"))
        g.add_node(part)
        g.add_edges_from((part, t.strip()) for t in targets.split(",") if t.strip())
    assert nx.is_directed_acyclic_graph(g), "the diagram has a circle"
    return g


DIAGRAM = _diagram()
CLI = "kcheck"  # the command line: the diagram's name for the package kcheck/ itself
# part -> every part it may import: itself and what its arrows reach
ALLOWED = {p: {p, *nx.descendants(DIAGRAM, p)} for p in DIAGRAM}
PARTS = tuple(f"kcheck.{p}" for p in DIAGRAM if p != CLI)

# (importer, imported): the imports against the layering still in the code, and why they are not gone yet.
KNOWN: dict[tuple[str, str], str] = {
}


def _part_dirs() -> dict[str, Path]:
    """Each part's package directory as installed (`kcheck.model` is model/ in the repository, ...), the command
    line's (kcheck/) last."""
    out = {}
    for part in (*PARTS, "kcheck"):
        spec = importlib.util.find_spec(part)
        assert spec is not None and spec.submodule_search_locations, part
        out[part] = Path(next(iter(spec.submodule_search_locations)))
    return out


def _modules() -> dict[str, Path]:
    """Every module of the installed package by its dotted name (a package by its own name)."""
    out: dict[str, Path] = {}
    for part, root in _part_dirs().items():
        for path in root.rglob("*.py"):
            rel = path.relative_to(root).with_suffix("").parts
            if part == "kcheck" and rel and f"kcheck.{rel[0]}" in PARTS:
                continue  # not in the repository's layout, but a part's own modules if ever installed there
            name = ".".join((part, *rel))
            out[name.removesuffix(".__init__")] = path
    return out


def _imported(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """The dotted names an import statement names: a module, or each `from` name as a submodule or an attribute of
    the module named."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        up = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*up, base] if base else up)
    return [f"{base}.{a.name}" for a in node.names]  # a submodule, else (the caller shortens it) the module


def _graph() -> nx.DiGraph:
    """Module -> the project modules it imports (each import resolved to the longest module name it names)."""
    modules = _modules()
    g = nx.DiGraph()
    g.add_nodes_from(modules)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _imported(node, package):
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    g.add_edge(name, target)
    return g


def _part(module: str) -> str:
    """The diagram's name of the part a module belongs to (`kcheck` for the command line)."""
    return next((part.removeprefix("kcheck.") for part in PARTS if module == part or module.startswith(part + ".")),
                CLI)


GRAPH = _graph()


def _against_the_diagram(a: str, b: str) -> bool:
    return _part(b) not in ALLOWED[_part(a)]


def test_the_diagram_names_every_part():
    """The parts pyproject.toml installs under kcheck. (each its own folder) are the diagram's parts."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        package_dir = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    assert {name.removeprefix("kcheck.") for name in package_dir} == set(DIAGRAM)


def test_every_package_folder_is_installed():
    """A non-editable install (`pip install .`, a wheel) ships only the packages pyproject.toml lists: every folder
    of a part holding an __init__.py is listed, or `kcheck` would start and then miss, say, its commands."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        setuptools = tomllib.load(f)["tool"]["setuptools"]
    found = set()
    for name, folder in setuptools["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            if name == "kcheck" and rel and rel[0] in {n.split(".")[1] for n in setuptools["package-dir"] if "." in n}:
                continue  # not in the repository's layout
            found.add(".".join((name, *rel)))
    assert found == set(setuptools["packages"])


def test_the_scan_sees_the_parts_and_their_imports():
    """The scan reads the installed layout: each part has modules, and known imports of each kind are found (one at
    the top of a module, one inside a function)."""
    for part in DIAGRAM:
        assert any(_part(m) == part for m in GRAPH), part
    assert GRAPH.has_edge("kcheck.model.search", "kcheck.model.visited")  # at the top
    assert GRAPH.has_edge("kcheck.cli", "kcheck.runtime.interrupts")
    assert GRAPH.has_edge("kcheck.check", "kcheck.invariants.rebalance")  # inside a function


def test_no_import_against_the_diagram_but_the_known_ones():
    against = sorted((a, b) for a, b in GRAPH.edges if _against_the_diagram(a, b))
    assert [e for e in against if e not in KNOWN] == []


def test_no_circle_but_through_the_known_imports():
    """Without the KNOWN imports the modules form no circle, within a part or across parts."""
    g = GRAPH.copy()
    g.remove_edges_from(KNOWN)
    assert [sorted(c) for c in nx.simple_cycles(g)] == []


def test_each_known_exception_is_still_there():
    """An entry of KNOWN whose import is gone must be deleted, so the list only shrinks; and each is against the
    diagram or lies on a circle (else it would not need listing). The list is empty today: keep it so."""
    for a, b in KNOWN:
        assert GRAPH.has_edge(a, b), f"{a} no longer imports {b}: delete its KNOWN entry"
        assert _against_the_diagram(a, b) or nx.has_path(GRAPH, b, a), f"{a} -> {b} is neither against the " \
            "diagram nor on a circle"


def test_the_front_door():
    """kcheck/commands/ holds one module per command or group: none imports another, and the modules they share
    (options, errors, report, ...) import none of them. Only the app (kcheck.cli) assembles them; the console scripts
    (kcheck.entry, kcheck.hook: the pre-commit hook) run it."""
    commands = {m for m in GRAPH if m.startswith("kcheck.commands.")}
    assert commands
    shared = {m for m in GRAPH if _part(m) == CLI and not m.startswith("kcheck.commands") and m not in
              ("kcheck.cli", "kcheck.entry", "kcheck.__main__", "kcheck.sweep", "kcheck.hook")}
    assert sorted((a, b) for a in commands | shared for b in GRAPH.successors(a) if b in commands) == []
    assert sorted((a, b) for a in commands | shared for b in GRAPH.successors(a) if b == "kcheck.cli") == []


def test_the_assignment_guarantees_are_the_assignment_invariants():
    """The assignor registry names the assignment invariants itself (it may not import them): the same ids."""
    import kcheck.invariants.assignment  # noqa: F401 - registers the assignment invariants
    from kcheck.invariants.registry import invariants_for
    from kcheck.reference.assignors.registry import ASSIGNMENT_INVARIANTS

    assert sorted(ASSIGNMENT_INVARIANTS) == sorted(inv.id for inv in invariants_for("assignment"))
