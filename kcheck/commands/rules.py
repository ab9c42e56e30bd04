"""`kcheck rules`: every rule of the replication protocol, for someone writing a changed one.

Everything printed is read from the code, not kept by hand: the rules are the fields of
`model/replication/protocol.py`'s `Protocol` (each declared with what it decides and the alternatives
kcheck ships); a rule's signature is today's function's; the state it may read is the fields, properties
and methods of the model classes in that signature (`model/replication/state.py`, with the comment each
field carries there); the Kafka code it mirrors is what today's function's docstring names (backquoted
Kafka classes and methods, KIPs, JIRAs and pull requests). Exit status 0, or 2 on bad input.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any

import typer

from kcheck.inputs.formats import InputError
from kcheck.model.replication import state as state_module
from kcheck.model.replication.protocol import Protocol
from kcheck.reference import releases

# The model's own classes a rule may be handed; their fields are what a rule may read.
_STATE_CLASSES: tuple[type, ...] = (state_module.Replica, state_module.Registry, state_module.LeaderAndIsr,
                                    state_module.StopReplica, state_module.FetchRequest, state_module.FetchResponse,
                                    state_module.AlterPartition, state_module.AlterPartitionResponse)
_MODEL_NAMES = {c.__name__ for c in _STATE_CLASSES} | {"Protocol", "Config", "State", "Record", "Variant"}
# A Kafka reference in a docstring: a backquoted Kafka class (or Class.method), or a KIP, JIRA or pull request.
_KAFKA_REF = re.compile(r"`([A-Z][A-Za-z0-9]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?:\(\))?`"
                        r"|\b(KIP-\d+|KAFKA-\d+|apache/kafka#\d+)\b")


def kafka_references(doc: str) -> list[str]:
    """The Kafka code a docstring names, in order, without repeats (model classes are not Kafka's)."""
    out: list[str] = []
    for m in _KAFKA_REF.finditer(doc or ""):
        ref = m.group(1) or m.group(2)
        if ref.split(".")[0] in _MODEL_NAMES or ref in out:
            continue
        out.append(ref)
    return out


def _first_sentence(doc: str | None) -> str:
    text = " ".join((doc or "").split())
    m = re.match(r"(.+?\.)(\s|$)", text)
    return m.group(1) if m else text


def _doc(fn: Callable[..., Any]) -> str:
    return " ".join((fn.__doc__ or "").split())


def _plain(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The user's or kcheck's own function under any wrapper (functools.wraps sets __wrapped__)."""
    return inspect.unwrap(fn)


def _hint_text(hint: Any) -> str:
    """A type hint as its source would write it: class names without their modules."""
    if isinstance(hint, type):
        return hint.__name__
    if hint is None or hint is type(None):
        return "None"
    return re.sub(r"\b(?:[a-z_]\w*\.)+([A-Za-z_]\w*)", r"\1", repr(hint))


def rule_hint(name: str) -> tuple[list[Any], Any]:
    """A rule's parameter types and return type, from its `Protocol` field's annotation."""
    hint = typing.get_type_hints(Protocol)[name]
    params, ret = typing.get_args(hint)
    return list(params), ret


def signature(name: str, fn: Callable[..., Any]) -> str:
    """`name(param: Type, ...) -> Type`: the parameter names of `fn` (today's function), the types the rule's
    field declares."""
    types_, ret = rule_hint(name)
    names = list(inspect.signature(_plain(fn)).parameters)
    if len(names) != len(types_):
        names = [f"arg{i}" for i in range(len(types_))]
    params = ", ".join(f"{n}: {_hint_text(t)}" for n, t in zip(names, types_, strict=True))
    return f"{name}({params}) -> {_hint_text(ret)}"


def _classes_in(hint: Any) -> list[type]:
    """The model classes (and Protocol) a type hint mentions, in order."""
    found: list[type] = []
    if hint in _STATE_CLASSES or hint is Protocol:
        return [hint]
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType or origin is not None:
        for arg in typing.get_args(hint):
            if isinstance(arg, list):
                for a in arg:
                    found.extend(c for c in _classes_in(a) if c not in found)
            else:
                found.extend(c for c in _classes_in(arg) if c not in found)
    return found


def reads(name: str) -> list[str]:
    """The model classes a rule is handed (its parameters' types)."""
    out: list[str] = []
    for hint in rule_hint(name)[0]:
        for c in _classes_in(hint):
            if c.__name__ not in out:
                out.append(c.__name__)
    return out


def class_fields(cls: type) -> dict[str, str]:
    """Each field, property and public method of a model class with what it means: the comment beside the field
    in the source (or the comment heading its group), a property's or method's docstring."""
    comments: dict[str, str] = {}
    group, previous_comment = "", False
    for line in inspect.getsource(cls).splitlines()[1:]:
        stripped = line.strip()
        if not stripped:
            group, previous_comment = "", False
            continue
        if stripped.startswith("#"):  # a comment heading the fields after it (it may take several lines)
            text = stripped.lstrip("# ").strip()
            group = f"{group} {text}".strip() if previous_comment else text
            previous_comment = True
            continue
        previous_comment = False
        m = re.match(r"(\w+): [^#]*?(?:#\s*(.*))?$", stripped)
        if m and line.startswith("    ") and not line.startswith("     "):
            comments[m.group(1)] = (m.group(2) or group).strip()
    out: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        out[f.name] = comments.get(f.name, "")
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            out[name] = _first_sentence(member.__doc__)
        elif inspect.isfunction(member):
            params = ", ".join(p for p in inspect.signature(member).parameters if p != "self")
            out[f"{name}({params})"] = _first_sentence(member.__doc__)
    return out


def _protocol(kafka_version: str | None) -> tuple[Protocol, str]:
    try:
        prof = releases.profile(kafka_version) if kafka_version is not None else releases.profile()
    except releases.UnknownRelease as e:
        raise InputError("--kafka-version", str(e)) from None
    return prof.protocol(), prof.version


def rule_reference(kafka_version: str | None = None) -> dict[str, Any]:
    """Every rule of `Protocol`, with today's function (the release's `--protocol current`), its signature, the
    state it may read, the Kafka code it mirrors and the alternatives kcheck ships; and the state classes."""
    current, version = _protocol(kafka_version)
    rules = []
    used: list[str] = []
    for f in dataclasses.fields(Protocol):
        if f.name not in Protocol.rule_names():
            continue
        today = _plain(getattr(current, f.name))
        shipped = [f.default] if f.default is not dataclasses.MISSING else []
        shipped += list(f.metadata.get("alternatives", ()))
        alternatives = [fn for fn in shipped if fn is not today]
        classes = reads(f.name)
        used.extend(c for c in classes if c not in used)
        rules.append({
            "name": f.name,
            "decides": f.metadata.get("doc", ""),
            "signature": signature(f.name, today),
            "reads": classes,
            "today": {"function": today.__name__, "module": today.__module__, "doc": _doc(today),
                      "kafka": kafka_references(today.__doc__ or "")},
            "alternatives": [{"function": fn.__name__, "module": fn.__module__, "doc": _doc(fn)}
                             for fn in alternatives],
        })
    state = {c.__name__: class_fields(c) for c in _STATE_CLASSES if c.__name__ in used}
    return {"kafka_version": version, "rules": rules, "state": state}


def _wrap(text: str, indent: str, width: int = 110) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent + "  ") or [indent]


def render(ref: dict[str, Any]) -> str:
    lines = [f"Rules of the replication protocol (--protocol current is Kafka {ref['kafka_version']}'s). "
             "Replace any with dataclasses.replace(Protocol.current(), name=..., <rule>=<your function>).", ""]
    for r in ref["rules"]:
        lines.append(r["signature"])
        lines += _wrap(r["decides"], "    ")
        if r["reads"]:
            lines += _wrap("reads: " + ", ".join(
                "Protocol (call its other rules)" if c == "Protocol" else c for c in r["reads"])
                + (" (their fields are listed at the end)" if set(r["reads"]) - {"Protocol"} else ""), "    ")
        today = r["today"]
        lines += _wrap(f"today: {today['function']} ({today['module']}): {today['doc']}", "    ")
        lines += _wrap("Kafka: " + (", ".join(today["kafka"]) or "-"), "    ")
        for alt in r["alternatives"]:
            lines += _wrap(f"alternative: {alt['function']}: {alt['doc']}", "    ")
        lines.append("")
    lines.append("State a rule may read (model/replication/state.py):")
    for cls, members in ref["state"].items():
        lines.append(f"  {cls}")
        for name, meaning in members.items():
            lines += _wrap(f"{name}: {meaning}" if meaning else name, "    ")
    return "\n".join(lines)


def rules_command(
    json_out: Annotated[bool, typer.Option("--json", help="Print the reference as JSON.")] = False,
    kafka_version: Annotated[str | None, typer.Option(
        "--kafka-version", metavar="VERSION",
        help=f"Show the rules --protocol current follows for this release (default: the newest, "
             f"{releases.DEFAULT_VERSION}).")] = None,
) -> int:
    """List every rule of the replication protocol: its signature, the state it may read, today's function, the
    Kafka code it mirrors and the alternatives kcheck ships (what a --protocol module:object may replace)."""
    if kafka_version is not None:  # an unknown or empty release is one line, before anything is printed
        from kcheck.options import requested_release

        requested_release(kafka_version)
    ref = rule_reference(kafka_version)
    if json_out:
        print(json.dumps(ref, indent=2))
    else:
        print(render(ref))
    return 0


__all__ = ["class_fields", "kafka_references", "rule_reference", "rules_command", "signature"]
