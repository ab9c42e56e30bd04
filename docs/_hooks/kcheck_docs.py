"""MkDocs hook (mkdocs.yml `hooks:`): the command reference generated from the CLI itself, and the source layout
mkdocstrings reads.

- One page per command (`reference/commands/<name>.md`, and an index), written at build time from the Typer app:
  usage, help, arguments and options exactly as `kcheck COMMAND --help` states them (Click's own help records), so
  the reference cannot drift from the code. The app is taken in one place, `_app()`.
- `build/docs-src/kcheck`: the package as it installs (kcheck.model is model/, ... per pyproject.toml's
  package-dir), linked as `.ci/mypy` links it, for mkdocstrings' `paths`.
"""

from __future__ import annotations

import html
import inspect
import re
import tomllib
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[2]
COMMANDS_NAV = "reference/commands/index.md"  # the nav entry this hook expands into one page per command
SOURCE_LAYOUT = ROOT / "build" / "docs-src"


def _app() -> Any:
    """The CLI as Click sees it (Typer's own copy of Click: types are checked by duck typing here): the one place
    the docs take the app from."""
    import typer

    from kcheck.cli import app

    return typer.main.get_command(app)


# --- the installed layout, for mkdocstrings -------------------------------------------------------------------


def link_source_layout(dest: Path = SOURCE_LAYOUT) -> Path:
    """Link the package as it installs under dest/kcheck (each part's folder at its dotted place)."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    top = dest / "kcheck"
    if dest.exists():
        for p in sorted(dest.rglob("*"), key=lambda p: -len(p.parts)):
            p.unlink() if p.is_symlink() or p.is_file() else p.rmdir()
    top.mkdir(parents=True)
    parts = {name: folder for name, folder in mapping.items() if name != "kcheck"}
    for entry in sorted((ROOT / mapping["kcheck"]).iterdir()):
        if entry.name != "__pycache__" and (entry.suffix == ".py" or entry.is_dir()):
            (top / entry.name).symlink_to(entry)
    for name, folder in sorted(parts.items()):  # kcheck.model -> dest/kcheck/model, deepest last
        target = dest.joinpath(*name.split("."))
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(ROOT / folder)
    return dest


# --- the command pages ----------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    """Text for a Markdown table cell: HTML and Markdown's inline marks escaped, lines joined."""
    text = html.escape(" ".join(text.split()), quote=False)
    return re.sub(r"([\\`*_\[\]|])", r"\\\1", text)


def _prose(text: str) -> str:
    """A command's help as Markdown: paragraphs escaped; Click's `\\b` blocks (kept as written) as code."""
    out = []
    for para in re.split(r"\n\s*\n", inspect.cleandoc(text or "")):
        if para.startswith("\b"):
            out.append("```text\n" + para.lstrip("\b\n") + "\n```")
        elif para.strip():
            out.append(_cell(para))
    return "\n\n".join(out)


def _is_group(cmd: Any) -> bool:
    return hasattr(cmd, "list_commands")


def walk(cmd: Any = None, ctx: Any = None) -> list[tuple[str, Any]]:
    """(name, context) of every command and subcommand under kcheck, in `--help` order; a group's name joins its
    path with '-' ("cluster-up")."""
    cmd = cmd or _app()
    ctx = ctx or cmd.context_class(cmd, info_name="kcheck")
    found = []
    for name in cmd.list_commands(ctx):
        sub = cmd.get_command(ctx, name)
        if sub is None or sub.hidden:
            continue
        sub_ctx = sub.context_class(sub, info_name=name, parent=ctx)
        page = "-".join(sub_ctx.command_path.split()[1:])
        found.append((page, sub_ctx))
        if _is_group(sub):
            found.extend(walk(sub, sub_ctx))
    return found


def command_page(ctx: Any) -> str:
    """One command's reference page, from Click's own help records."""
    cmd = ctx.command
    usage = " ".join([ctx.command_path, *cmd.collect_usage_pieces(ctx)])
    lines = [f"# `{ctx.command_path}`", "", "```text", usage, "```", "", _prose(cmd.help or cmd.short_help or "")]
    params = [p for p in cmd.get_params(ctx) if not getattr(p, "hidden", False)]
    arguments = [p for p in params if p.param_type_name == "argument"]
    options = [p for p in params if p.param_type_name == "option"]
    for title, group in (("Arguments", arguments), ("Options", options)):
        if not group:
            continue
        lines += ["", f"## {title}", "", "| | |", "|---|---|"]
        for p in group:
            record = p.get_help_record(ctx)
            names, text = record if record else (p.make_metavar(ctx), "")
            lines.append(f"| `{names}` | {_cell(text)} |")
    if _is_group(cmd):
        lines += ["", "## Commands", ""]
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                page = "-".join([*ctx.command_path.split()[1:], name])
                lines.append(f"- [`{ctx.command_path} {name}`]({page}.md): {_cell(sub.get_short_help_str(200))}")
    return "\n".join(lines) + "\n"


def index_page(pages: list[tuple[str, Any]]) -> str:
    lines = ["# Commands", "",
             "One page per command, generated from the command line itself at build time: what `kcheck COMMAND "
             "--help` prints. Every command follows [one exit-status policy](../../conventions.md).", "",
             "| command | what it does |", "|---|---|"]
    for page, ctx in pages:
        lines.append(f"| [`{ctx.command_path}`]({page}.md) | {_cell(ctx.command.get_short_help_str(200))} |")
    return "\n".join(lines) + "\n"


def generated_pages() -> dict[str, str]:
    """docs path -> Markdown of every generated reference page."""
    pages = walk()
    out = {COMMANDS_NAV: index_page(pages)}
    out.update({f"reference/commands/{page}.md": command_page(ctx) for page, ctx in pages})
    return out


# --- MkDocs events --------------------------------------------------------------------------------------------

_generated: dict[str, str] = {}


def _expand(nav: Any, pages: list[str]) -> Any:
    """The nav with the entry naming COMMANDS_NAV opened into the index and one entry per command page."""
    if isinstance(nav, list):
        return [_expand(item, pages) for item in nav]
    if isinstance(nav, dict):
        return {k: (pages if v == COMMANDS_NAV else _expand(v, pages)) for k, v in nav.items()}
    return nav


@event_priority(100)  # before mkdocstrings' own on_config, which reads `paths` (a fresh clone has no layout yet)
def on_config(config: Any) -> Any:
    link_source_layout()
    _generated.clear()
    _generated.update(generated_pages())
    if config.nav:
        config.nav = _expand(config.nav, list(_generated))
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, text in _generated.items():
        files.append(File.generated(config, path, content=text))
    return files
