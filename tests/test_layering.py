"""The import layering ARCHITECTURE.md states, read from the installed package: every import of every module of
`kcheck.model`, `kcheck.reference`, `kcheck.invariants` and `kcheck.spark_check` (at the top, inside functions and
under `TYPE_CHECKING` alike) points down the line model <- reference <- invariants <- spark_check <- kcheck (the
command line), and no modules of those parts import each other in a circle.

The imports that break the rule today are listed in KNOWN, each with what it would take to remove it. The list can
only shrink: an entry whose import is gone fails the test until it is deleted, and any new upward import or circle
fails it at once."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import networkx as nx
import pytest

# The parts in order: a module may import its own part and the parts before it, never a later one.
PARTS = ("kcheck.model", "kcheck.reference", "kcheck.invariants", "kcheck.spark_check", "kcheck")

# (importer, imported): the imports against the layering still in the code, and why they are not gone yet.
KNOWN: dict[tuple[str, str], str] = {
    ("kcheck.invariants.replication_engine", "kcheck.spark_check.exhaust"):
        "upward: `run_exhaust(master=...)` runs the search on Spark itself (`_on_spark`); the command line "
        "(kcheck/replication_cli.py) should pass the Spark search in, then this import goes",
    ("kcheck.spark_check.log_sweep", "kcheck.log_sim"):
        "upward into the command line: the storage simulator lives in kcheck/log_sim.py; it moves to a part "
        "below spark_check with issue 34's package moves (log_sim also imports log_sweep: a circle through kcheck/)",
    ("kcheck.spark_check.against_kafka", "kcheck.group_format"):
        "upward into the command line: `group_file` checks its replay file with the group-file reader of "
        "kcheck/group_format.py, which moves below spark_check (with the other formats) with the package moves",
    ("kcheck.reference.assignors.registry", "kcheck.reference.jvm_plugins"):
        "circle registry -> jvm_plugins -> registry: `resolve_assignor` hands `jvm:` names to jvm_plugins, which "
        "builds the registry's AssignorInfo and ServerSideAdapter; with those two in a module below both (and "
        "PlacerInfo likewise for placers), jvm_plugins would import only downward",
    ("kcheck.reference.placers", "kcheck.reference.jvm_plugins"):
        "circle placers -> jvm_plugins -> placers: `resolve_placer` hands `jvm:` names to jvm_plugins, which builds "
        "the placers' PlacerInfo (the same fix as for the assignor registry)",
    ("kcheck.reference.election", "kcheck.reference.releases"):
        "circle election -> releases -> election: `KRaftVersion.for_release` asks releases.py for a release's rules, "
        "which releases.py builds as a KRaftVersion; for_release should go (its callers, kafka_controller.py and "
        "three tests, ask `releases.profile(v).kraft_rules()`), leaving releases -> election only",
}


def _part_dirs() -> dict[str, Path]:
    """Each part's package directory as installed (`kcheck.model` is model/ in the repository, ...)."""
    out = {}
    for part in PARTS:
        spec = importlib.util.find_spec(part)
        assert spec is not None and spec.submodule_search_locations, part
        out[part] = Path(next(iter(spec.submodule_search_locations)))
    return out


def _modules() -> dict[str, Path]:
    """Every module of the installed parts by its dotted name (a package by its own name)."""
    out: dict[str, Path] = {}
    for part, root in _part_dirs().items():
        for path in root.rglob("*.py"):
            rel = path.relative_to(root).with_suffix("").parts
            if part == "kcheck" and rel and rel[0] in ("model", "reference", "invariants", "spark_check"):
                continue  # not in the repository's layout, but a part's own modules if ever installed there
            name = ".".join((part, *rel))
            out[name.removesuffix(".__init__")] = path
    return out


def _imported(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """The dotted names an import statement names: a module, or each `from` name as a submodule or attribute."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        up = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*up, base] if base else up)
    return [base, *(f"{base}.{a.name}" for a in node.names)]


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


def _part(module: str) -> int:
    """The part a module belongs to, as its place in PARTS: a part below the command line it is in, else the
    command line's."""
    return next((i for i, part in enumerate(PARTS[:-1]) if module == part or module.startswith(part + ".")),
                len(PARTS) - 1)


GRAPH = _graph()
LAYERED = [m for m in GRAPH if _part(m) < PARTS.index("kcheck")]  # the four parts below the command line


def test_the_scan_sees_the_parts_and_their_imports():
    """The scan reads the installed layout: each part has modules, and known imports of each kind are found (one at
    the top of a module, one inside a function)."""
    for i, part in enumerate(PARTS[:-1]):
        assert any(m.startswith(part + ".") and _part(m) == i for m in LAYERED), part
    assert GRAPH.has_edge("kcheck.model.search", "kcheck.model.visited")  # at the top
    assert GRAPH.has_edge("kcheck.invariants.replication_engine", "kcheck.spark_check.exhaust")  # inside a function


def test_no_upward_import_but_the_known_ones():
    upward = sorted((a, b) for a in LAYERED for b in GRAPH.successors(a) if _part(b) > _part(a))
    assert [e for e in upward if e not in KNOWN] == []


def test_no_circle_among_the_parts_but_through_the_known_imports():
    """Without the KNOWN imports the parts' modules form no circle (a circle through the command line shows as an
    upward import above)."""
    g = GRAPH.subgraph(LAYERED).copy()
    g.remove_edges_from(KNOWN)
    assert [sorted(c) for c in nx.simple_cycles(g)] == []


@pytest.mark.parametrize("edge", sorted(KNOWN), ids=lambda e: f"{e[0]}->{e[1]}")
def test_each_known_exception_is_still_there(edge):
    """An entry of KNOWN whose import is gone must be deleted, so the list only shrinks; and each is an upward import
    or lies on a circle (else it would not need listing)."""
    a, b = edge
    assert GRAPH.has_edge(a, b), f"{a} no longer imports {b}: delete its KNOWN entry"
    assert _part(b) > _part(a) or nx.has_path(GRAPH, b, a), f"{a} -> {b} is neither upward nor on a circle"


def test_the_assignment_guarantees_are_the_assignment_invariants():
    """The assignor registry names the assignment invariants itself (it may not import them): the same ids."""
    import kcheck.invariants.assignment  # noqa: F401 - registers the assignment invariants
    from kcheck.invariants.registry import invariants_for
    from kcheck.reference.assignors.registry import ASSIGNMENT_INVARIANTS

    assert sorted(ASSIGNMENT_INVARIANTS) == sorted(inv.id for inv in invariants_for("assignment"))
