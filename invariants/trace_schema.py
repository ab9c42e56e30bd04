"""The schema of a replication trace file, checked before anything in it is used.

A trace is data: a protocol label, a config and steps. Every field is checked for its JSON type and
range here, so a malformed trace is refused with one line naming the step and the field instead of
replaying something else (broker -1 would index the last replica; "yes" is truthy) or failing deep in
the model with Python's own words. Nothing in a trace is ever imported or called.

Invariant ids (the optional `invariants` a run checked, each violation's `invariant`) must be registered
replication invariants: a typo would otherwise replay checking nothing. A user's invariant is known once
its module is loaded (`--invariants MODULE`).
"""

from __future__ import annotations

import json
from dataclasses import MISSING, fields
from typing import Any

from kcheck.invariants.registry import unknown_ids
from kcheck.model import INT32_MAX
from kcheck.model.replication.actions import KINDS, LIST_OFFSETS_SPECS, METADATA_MODES, Config
from kcheck.model.replication.state import ACKS, MESSAGE_TYPES, NO_LEADER
from kcheck.reference.plugins import is_int

TOP_LEVEL: dict[str, str] = {"format": "int", "protocol": "str", "config": "object", "steps": "list",
                             "violations": "list", "invariants": "list"}
# Message fields whose value is a broker of the cluster (or a list of them); other int fields are epochs/offsets.
_MESSAGE_BROKER = {"to", "frm"}
_MESSAGE_BROKERS = {"isr", "replicas"}


class TraceSchemaError(ValueError):
    """One line: where in the trace, which field, what was expected and what was there."""

    def __init__(self, where: str, field: str, expected: str, got: Any = MISSING) -> None:
        found = "it is missing" if got is MISSING else f"got {_show(got)}"
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}field '{field}': expected {expected}, {found}")


def _show(value: Any) -> str:
    """The value as the JSON text the user wrote (short)."""
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _broker(where: str, field: str, v: Any, n: int, *, leader: bool = False) -> int:
    if not is_int(v) or not (1 <= v <= n or (leader and v == NO_LEADER)):
        extra = f" or {NO_LEADER} (no leader)" if leader else ""
        raise TraceSchemaError(where, field, f"a broker id of the trace's cluster (1..{n}){extra}", v)
    return v


def _brokers(where: str, field: str, v: Any, n: int, *, non_empty: bool = False, distinct: bool = False
             ) -> tuple[int, ...]:
    what = f"a list of {'distinct ' if distinct else ''}broker ids of the trace's cluster (1..{n})"
    if not isinstance(v, list) or (non_empty and not v):
        raise TraceSchemaError(where, field, ("a non-empty " + what[2:]) if non_empty else what, v)
    out = tuple(_broker(where, field, b, n) for b in v)
    if distinct and len(set(out)) != len(out):
        raise TraceSchemaError(where, field, what, v)
    return out


def _count(where: str, field: str, v: Any) -> int:
    if not is_int(v) or not 0 <= v <= INT32_MAX:
        raise TraceSchemaError(where, field, f"an integer from 0 to {INT32_MAX}", v)
    return v


def _integer(where: str, field: str, v: Any) -> int:
    if not is_int(v):
        raise TraceSchemaError(where, field, "an integer", v)
    return v


def _boolean(where: str, field: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise TraceSchemaError(where, field, "true or false", v)
    return v


def _pairs(where: str, field: str, v: Any, first: Any) -> list[list[int]]:
    """A list of [int, int] pairs; `first(where, field, x)` checks the first element."""
    if not isinstance(v, list):
        raise TraceSchemaError(where, field, "a list of [int, int] pairs", v)
    for p in v:
        if not isinstance(p, list) or len(p) != 2:
            raise TraceSchemaError(where, field, "a list of [int, int] pairs", p)
        first(where, field, p[0])
        _integer(where, field, p[1])
    return v


def check_config(d: Any) -> None:
    """Every config field with its JSON type (Config's own checks then judge the ranges between fields)."""
    if not isinstance(d, dict):
        raise TraceSchemaError("", "config", "an object", d)
    known = {f.name: f for f in fields(Config)}
    for name, value in d.items():
        if name not in known:
            raise TraceSchemaError("config", name, f"a setting of {', '.join(known)}", value)
        if name == "acks":
            if not isinstance(value, list) or not value or any(a not in ACKS for a in value):
                raise TraceSchemaError("config", name, f"a non-empty list of {', '.join(map(json.dumps, ACKS))}",
                                       value)
        elif isinstance(known[name].default, bool):
            _boolean("config", name, value)
        elif name == "metadata":
            if value not in METADATA_MODES:
                raise TraceSchemaError("config", name, f"one of {', '.join(map(json.dumps, METADATA_MODES))}", value)
        else:
            _count("config", name, value)


def _check_message(where: str, field: str, v: Any, n: int) -> None:
    if not isinstance(v, dict) or v.get("type") not in MESSAGE_TYPES:
        raise TraceSchemaError(where, field, f"a message object with 'type' one of {', '.join(MESSAGE_TYPES)}",
                               v.get("type", v) if isinstance(v, dict) else v)
    cls = MESSAGE_TYPES[v["type"]]
    names = [f.name for f in fields(cls)]
    for extra in v:
        if extra != "type" and extra not in names:
            raise TraceSchemaError(where, extra, f"a field of {v['type']} ({', '.join(names)})", v[extra])
    for name in names:
        if name not in v:
            if name == "request":  # an answer in a trace written by an older kcheck: it names no request
                continue
            raise TraceSchemaError(where, name, f"a value (every field of {v['type']} is required)")
        value = v[name]
        if name in _MESSAGE_BROKER:
            _broker(where, name, value, n)
        elif name == "leader":
            _broker(where, name, value, n, leader=True)
        elif name in _MESSAGE_BROKERS:
            _brokers(where, name, value, n)
        elif name == "records":
            _pairs(where, name, value, _count)
        elif name == "broker_epochs":
            _pairs(where, name, value, lambda w, f, b: _broker(w, f, b, n))
        elif name == "request":
            _request(where, name, value, n)
        elif name == "error":
            if not isinstance(value, str):
                raise TraceSchemaError(where, name, "a string", value)
        else:
            _integer(where, name, value)


def _request(where: str, field: str, v: Any, n: int) -> None:
    """An AlterPartition answer's request: [] (none), or [leader epoch, partition epoch, ISR, broker epochs]."""
    if v == []:
        return
    if not isinstance(v, list) or len(v) != 4:
        raise TraceSchemaError(where, field, "[] or [leader epoch, partition epoch, ISR, [[broker, epoch], ...]]", v)
    _integer(where, field, v[0])
    _integer(where, field, v[1])
    _brokers(where, field, v[2], n)
    _pairs(where, field, v[3], lambda w, f, b: _broker(w, f, b, n))


def _check_arg(where: str, kind: str, name: str, v: Any, n: int) -> None:
    if name in ("broker", "follower", "leader") or (name == "target" and kind != "reassign"):
        _broker(where, name, v, n)
    elif name == "target":  # reassign: the new replica list
        _brokers(where, name, v, n, non_empty=True, distinct=True)
    elif name in ("keep", "lossy"):
        _boolean(where, name, v)
    elif name in ("zombie", "offset"):
        _count(where, name, v)
    elif name == "acks":
        if v not in ACKS:
            raise TraceSchemaError(where, name, f"one of {', '.join(map(json.dumps, ACKS))}", v)
    elif name == "message":
        _check_message(where, name, v, n)
    elif name == "spec":  # list_offsets: what the client asks for
        if v not in LIST_OFFSETS_SPECS:
            raise TraceSchemaError(where, name, f"one of {', '.join(map(json.dumps, LIST_OFFSETS_SPECS))}", v)
    else:  # a parameter added to KINDS without a schema entry: refuse rather than pass it on unchecked
        raise TraceSchemaError(where, name, "a parameter kcheck knows how to check", v)


def _check_invariant_ids(data: dict[str, Any]) -> None:
    for n, v in enumerate(data.get("violations", ())):
        where = f"violations[{n}]"
        if not isinstance(v, dict):
            raise TraceSchemaError("", where, "an object with 'invariant', 'where' and 'message'", v)
        if not isinstance(v.get("invariant"), str):
            raise TraceSchemaError(where, "invariant", "an invariant id (a string)", v.get("invariant", MISSING))
        problem = unknown_ids([v["invariant"]], "replication")
        if problem:
            raise ValueError(f"{where}: field 'invariant': {problem}")
    ids = data.get("invariants")
    if ids is not None:
        if not ids or not all(isinstance(i, str) for i in ids):
            raise TraceSchemaError("", "invariants", "a non-empty list of invariant ids", ids)
        problem = unknown_ids(ids, "replication")
        if problem:
            raise ValueError(f"field 'invariants': {problem}")


def check_trace(data: Any) -> Config:
    """The trace's Config; raises TraceSchemaError or ValueError (one line) at the first field of `data` that
    breaks the schema."""
    _check_top_level(data)
    _check_invariant_ids(data)
    config = _trace_config(data["config"])
    for number, step in enumerate(data["steps"], 1):
        _check_step(f"step {number}", step, config.brokers)
    return config


def _check_top_level(data: Any) -> None:
    """A JSON object of the trace's fields only, with 'protocol', 'config' and 'steps', each of its type."""
    if not isinstance(data, dict):
        raise TraceSchemaError("", "(top level)", "a JSON object with 'protocol', 'config' and 'steps'", data)
    for key, value in data.items():
        if key not in TOP_LEVEL:
            raise TraceSchemaError("", key, f"one of the trace's fields {', '.join(TOP_LEVEL)}", value)
    for key in ("protocol", "config", "steps"):  # what explore and exhaust write: a trace without them is not one
        if key not in data:
            raise TraceSchemaError("", key, f"{'a list of steps' if key == 'steps' else 'a value'}")
    checks = {"int": is_int, "str": lambda v: isinstance(v, str), "object": lambda v: isinstance(v, dict),
              "list": lambda v: isinstance(v, list)}
    words = {"int": "an integer", "str": "a string", "object": "an object", "list": "a list"}
    for key, word in TOP_LEVEL.items():
        if key in data and not checks[word](data[key]):
            raise TraceSchemaError("", key, words[word], data[key])


def _trace_config(given: dict[str, Any]) -> Config:
    """The trace's `config` object as a Config, each field and the ranges between them checked."""
    check_config(given)
    settings = dict(given)
    # kcheck writes every Config field; a trace without `metadata` predates KRaft mode, when every run delivered
    # decisions as ZooKeeper-era requests, so it replays in that mode.
    settings.setdefault("metadata", "zookeeper")
    try:
        return Config.from_dict(settings)
    except (TypeError, ValueError) as e:  # ranges between fields (min_isr <= brokers, ...)
        raise ValueError(f"config: {e}") from None


def _check_step(where: str, step: Any, brokers: int) -> None:
    """One step: an object naming a known action kind, with exactly that kind's arguments, each of its type and
    range."""
    if not isinstance(step, dict):
        raise TraceSchemaError(where, "(step)", "an object with 'action' and its arguments", step)
    kind = step.get("action")
    if not isinstance(kind, str) or kind not in KINDS:
        err = TraceSchemaError(where, "action", f"a known action kind ({', '.join(KINDS)})",
                               step.get("action", MISSING))
        if isinstance(kind, str):  # name the unknown kind first: the list of known ones is long
            raise ValueError(f"{where}: unknown action {kind!r} ({str(err).removeprefix(where + ': ')})")
        raise err
    params = KINDS[kind].params
    for extra in step:
        if extra != "action" and extra not in params:
            raise TraceSchemaError(where, extra, f"an argument of {kind} ({', '.join(params) or 'none'})", step[extra])
    for name in params:
        if name not in step:
            raise TraceSchemaError(where, name, f"an argument of {kind}")
        _check_arg(where, kind, name, step[name], brokers)

