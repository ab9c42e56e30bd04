"""Users' plug-ins (`--placer`, `--assignor`, `--protocol` given as `module:object`): loading, calling, checking.

A plug-in is the user's code running inside kcheck, so whatever it does at import or when called (raise,
`sys.exit`, a KeyboardInterrupt, return something of the wrong shape) is reported as that plug-in's
failure: a `PluginError`, which the command line prints as one line naming the plug-in, the exception
and the user's own file and line (`--debug` prints the traceback instead). A typo in the name (no such
module or attribute, or a module not on the path) stays a ValueError about the option.

Each kind's signature (README, "Plug-ins"; the minimal examples are in examples/plugins/) is checked when the
plug-in is loaded, before any work: a callable that cannot take the arguments kcheck passes is refused in one
line that names the signature kcheck expected (`PLACER_SIGNATURE`, `ASSIGNOR_SIGNATURE`).

An assignor declares what it promises as attributes of its class (`declarations`): `cooperative = True`
(KIP-429's protocol: Kafka's `ConsumerPartitionAssignor.supportedProtocols()` listing COOPERATIVE) and
`guarantees`, assignment invariant ids that must hold for it; the engines hold it to them, and an undeclared
property is only a finding.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
import re
import sys
import sysconfig
import traceback
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")

# kcheck's own folders (installed as kcheck.*): never "the user's frame".
_HERE = os.path.dirname(os.path.abspath(__file__))
_OURS = tuple(os.path.join(os.path.dirname(_HERE), d) + os.sep
              for d in ("model", "reference", "invariants", "spark_check", "kcheck"))
_LIBRARY = tuple({os.path.abspath(p) + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib")
                  if (p := sysconfig.get_paths().get(k))})


# What kcheck calls each kind with; printed in the one line that refuses a plug-in of the wrong shape.
PLACER_SIGNATURE = ("place(brokers, n_partitions, replication_factor, fixed_start_index=-1, start_partition_id=-1, "
                    "random=None) -> {partition id: [broker id, ...]}")
ASSIGNOR_SIGNATURE = ("a class (or a function of no arguments) making objects with "
                      "assign_partitions(partitions_per_topic, subscriptions) -> {member id: [TopicPartition, ...]}")
PROTOCOL_SIGNATURE = "a Protocol (dataclasses.replace(Protocol.current(), rule=function, ...)) or a Variant"
INVARIANTS_SIGNATURE = "a module whose import calls kcheck.invariants.registry.register(..., 'replication')"


class PluginError(Exception):
    """A user's plug-in failed: at import, when called, or by returning a result of the wrong shape.

    str(e) is one line: `plug-in mod:obj: ValueError: boom (at mod.py:12)`.
    """

    def __init__(self, spec: str, message: str, exc_type: str = "", where: str = "", context: str = "") -> None:
        self.spec, self.message, self.exc_type, self.where, self.context = spec, message, exc_type, where, context
        text = (f"plug-in {spec}: " + (f"{context}: " if context else "") + (f"{exc_type}: " if exc_type else "")
                + message + (f" (at {where})" if where else ""))
        # The plug-in's message is its text: one line, and no control characters to drive the terminal.
        super().__init__(_CONTROL.sub(lambda m: {"\n": "\\n", "\r": "\\r"}.get(m.group(), f"\\x{ord(m.group()):02x}"),
                                      text))

    def __reduce__(self) -> tuple[Any, ...]:  # Spark ships exceptions between processes
        return (PluginError, (self.spec, self.message, self.exc_type, self.where, self.context))


def _module_file(module_name: str) -> str | None:
    mod = sys.modules.get(module_name)
    path = getattr(mod, "__file__", None)
    if path is None:
        try:
            spec = importlib.util.find_spec(module_name)
        except BaseException:  # noqa: BLE001 - finding a parent package may run its code; it already failed
            spec = None
        path = spec.origin if spec is not None else None
    return os.path.abspath(path) if path else None


def _user_frame(exc: BaseException, module_name: str) -> str:
    """file:line of the innermost frame in the user's module (else in any file that is not kcheck's or a library)."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return f"{os.path.basename(exc.filename)}:{exc.lineno}"
    frames = traceback.extract_tb(exc.__traceback__)
    own = _module_file(module_name)
    mine = [f for f in frames if own and os.path.abspath(f.filename) == own]
    if not mine:
        mine = [f for f in frames if not f.filename.startswith("<")
                and not os.path.abspath(f.filename).startswith(_OURS + _LIBRARY)]
    return f"{os.path.basename(mine[-1].filename)}:{mine[-1].lineno}" if mine else ""


def failure(spec: str, exc: BaseException) -> PluginError:
    """The PluginError for an exception the plug-in `spec` raised (its cause stays attached for --debug)."""
    if isinstance(exc, PluginError):
        return exc
    module_name = spec.partition(":")[0]
    if isinstance(exc, SystemExit):
        message = f"called sys.exit({exc.code!r})"
    else:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else "(no message)"
        message = message if len(message) <= 300 else message[:297] + "..."  # one readable line; --debug has all
    err = PluginError(spec, message, type(exc).__name__, _user_frame(exc, module_name))
    err.__cause__ = exc
    return err


# Set by a supervisor that runs the command in a child process with a time limit per plug-in call (kcheck's
# --isolate-plugins): told when the user's code starts and ends running (`enter(spec)`, `leave()`, nested calls
# counted). None, the default, costs one test per call.
watcher: Any = None


def load(spec: str) -> object:
    """Import `module:object` (object may be dotted). A name that does not resolve is a ValueError (one line);
    anything the module does wrong while importing is a PluginError."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"'{spec}' is not of the form module:object")
    if watcher is not None:
        watcher.enter(spec)
    try:
        obj: object = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        if missing == module_name or module_name.startswith(missing + "."):  # the plug-in itself is not there
            raise ValueError(f"cannot import module '{module_name}': {e} (kcheck imports plug-ins from the current "
                             "directory and PYTHONPATH)") from None
        raise failure(spec, e) from e  # the plug-in exists but imports something that does not
    except BaseException as e:  # noqa: BLE001 - SyntaxError, its own exceptions, sys.exit, KeyboardInterrupt
        raise failure(spec, e) from e
    finally:
        if watcher is not None:
            watcher.leave()
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"module '{module_name}' has no attribute '{attr}'") from None
        except BaseException as e:  # noqa: BLE001 - a module __getattr__ or property is the user's code too
            raise failure(spec, e) from e
    return obj


def call(spec: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """fn(*args, **kwargs), where fn is the plug-in's code: whatever it raises (sys.exit and KeyboardInterrupt
    included) becomes a PluginError, so a plug-in never decides kcheck's exit status."""
    if watcher is not None:
        watcher.enter(spec)
    try:
        return fn(*args, **kwargs)
    except BaseException as e:  # noqa: BLE001
        raise failure(spec, e) from e
    finally:
        if watcher is not None:
            watcher.leave()


def bad_result(spec: str, what: str) -> PluginError:
    return PluginError(spec, f"returned {what}", "bad result")


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def is_int(v: Any) -> bool:
    """An int that is not a bool (JSON's true is not a broker id)."""
    return isinstance(v, int) and not isinstance(v, bool)


def check_placement(spec: str, result: Any, broker_ids: Sequence[int], n_partitions: int, replication_factor: int,
                    start_partition_id: int = -1) -> dict[int, list[int]]:
    """The shape AdminUtils' signature promises: partition id -> a list of brokers of the cluster, for exactly the
    partitions asked for (start_partition_id.., or 0..n-1).

    A replica list of the wrong length or with a broker twice is well-formed: that is what the invariants
    placement.replication-factor and placement.distinct-brokers are there to find (exit 1, with a counterexample),
    so it is left to them rather than refused here."""
    if not isinstance(result, Mapping):
        raise bad_result(spec, f"a {type(result).__name__}, not a mapping partition id -> replica list (kcheck "
                               f"expected {PLACER_SIGNATURE})")
    first = max(0, start_partition_id)
    wanted = set(range(first, first + n_partitions))
    if not result and wanted:
        raise bad_result(spec, f"no partitions; {n_partitions} were requested")
    ids = set(broker_ids)
    cluster = ", ".join(map(str, sorted(ids)))
    for p, replicas in result.items():
        if not is_int(p):
            raise bad_result(spec, f"partition id {_show(p)} ({type(p).__name__}), not an int")
        if p not in wanted:
            raise bad_result(spec, f"partition {p}, which was not requested ({first}..{first + n_partitions - 1})")
        if not isinstance(replicas, list | tuple):
            raise bad_result(spec, f"{_show(replicas)} for partition {p}, not a list of broker ids")
        for b in replicas:
            if not is_int(b):
                raise bad_result(spec, f"replica {_show(b)} ({type(b).__name__}) for partition {p}, not a broker id")
            if b not in ids:
                raise bad_result(spec, f"broker {b} for partition {p}, not a broker of the cluster ({cluster})")
    missing = sorted(wanted - set(result))
    if missing:
        raise bad_result(spec, f"no replicas for partition {missing[0]} ({len(missing)} of {n_partitions} missing)")
    return {p: list(r) for p, r in result.items()}


def assignment_problem(result: Any, members: Collection[str], show: Callable[[Any], str] = repr,
                       name: Callable[[Any], str] = str) -> str | None:
    """What is wrong with an assignor's answer against the shape `ConsumerPartitionAssignor.assign` promises
    (member id -> a list of TopicPartition, for members of the group only), or None. `show` renders a value
    and `name` a member id in the message (the CLI and the sweep render them differently)."""
    from kcheck.model import TopicPartition

    if not isinstance(result, Mapping):
        return f"returned {type(result).__name__}, not a map of member -> partitions"
    for member, tps in result.items():
        if member not in members:
            return f"assigned partitions to {show(member)}, which is not a member"
        if isinstance(tps, str | bytes) or not isinstance(tps, Sequence | set | frozenset):
            return f"gave member {name(member)} a {type(tps).__name__}, not a list of TopicPartition"
        wrong = next((tp for tp in tps if not isinstance(tp, TopicPartition)), None)
        if wrong is not None:
            return f"gave member {name(member)} {show(wrong)}, not a TopicPartition"
        # A TopicPartition does not check its fields; one Kafka could not serialize would break the checks later.
        wrong = next((tp for tp in tps if not isinstance(tp.topic, str) or isinstance(tp.partition, bool)
                      or not isinstance(tp.partition, int)), None)
        if wrong is not None:
            return (f"gave member {name(member)} TopicPartition({wrong.topic!r}, {wrong.partition!r}), "
                    "not a topic name and partition number")
    return None


def takes(spec: str, fn: Callable[..., Any], n_args: int, expected: str, what: str = "") -> None:
    """Refuse (PluginError, one line naming `expected`) a callable that cannot be called with `n_args` positional
    arguments, before kcheck calls it deep inside a search or on a Spark executor. A callable whose signature
    Python cannot read (some builtins) is let through: calling it reports what it raises."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*range(n_args))
    except TypeError as e:
        name = getattr(fn, "__qualname__", None) or type(fn).__name__
        raise PluginError(spec, f"wrong signature: {what or name}{signature} cannot be called with {n_args} "
                                f"positional argument{'s' if n_args != 1 else ''} ({e}); kcheck expected {expected}",
                          "TypeError") from None


def guard_placer(spec: str, fn: Callable[..., Any]) -> Callable[..., dict[int, list[int]]]:
    """A user's placer behind AdminUtils' signature: called through `call`, its result checked. A placer that
    cannot take AdminUtils' six arguments is refused here, when it is loaded."""
    takes(spec, fn, 6, PLACER_SIGNATURE)

    @functools.wraps(fn)
    def place(brokers: Sequence[Any], n_partitions: int, replication_factor: int, fixed_start_index: int = -1,
              start_partition_id: int = -1, random: Any = None) -> dict[int, list[int]]:
        result = call(spec, fn, brokers, n_partitions, replication_factor, fixed_start_index, start_partition_id,
                      random)
        return check_placement(spec, result, [getattr(b, "id", b) for b in brokers], n_partitions,
                               replication_factor, start_partition_id)

    return place


def guard_rules(spec: str, protocol: T, rules: Sequence[str]) -> T:
    """A copy of a user's Protocol whose rule functions report what they raise as this plug-in's failure, naming
    the rule (the model calls rules from deep inside; a raw traceback would not say whose code failed)."""
    import dataclasses

    def wrap(rule: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            if watcher is not None:
                watcher.enter(spec)
            try:
                return fn(*args, **kwargs)
            except BaseException as e:  # noqa: BLE001
                err = failure(spec, e)
                if not err.context:  # the innermost rule names the failure (a rule may call another)
                    err = PluginError(spec, err.message, err.exc_type, err.where, f"rule {rule}")
                raise err from e
            finally:
                if watcher is not None:
                    watcher.leave()
        return guarded

    changes = {r: wrap(r, getattr(protocol, r)) for r in rules if callable(getattr(protocol, r, None))}
    return dataclasses.replace(protocol, **changes)  # type: ignore[type-var]


def guard_exits(spec: str, obj: T, methods: Sequence[str]) -> T:
    """Patch `obj`'s `methods` (on the instance, so its class and isinstance checks stay) so that sys.exit and
    KeyboardInterrupt inside them become a PluginError. Ordinary exceptions pass through unchanged: for an
    assignor they are Kafka's behaviour to model (the group leader's rebalance fails), judged by the engine."""
    for name in methods:
        method = getattr(obj, name, None)
        if not callable(method):
            continue

        def guarded(*args: Any, _method: Callable[..., Any] = method, **kwargs: Any) -> Any:
            if watcher is not None:
                watcher.enter(spec)
            try:
                return _method(*args, **kwargs)
            except Exception:
                raise
            except BaseException as e:  # noqa: BLE001 - SystemExit, KeyboardInterrupt, GeneratorExit
                raise failure(spec, e) from e
            finally:
                if watcher is not None:
                    watcher.leave()

        try:
            setattr(obj, name, guarded)
        except (AttributeError, TypeError):  # __slots__ or a frozen instance: left as it is
            pass
    return obj


def shippable_paths(specs: Sequence[str]) -> list[str]:
    """What to ship to Spark executors so they can import the user's `module:object` plug-ins (already imported
    here): a plain module's file, or the folder of a package's top level (the executor imports `pkg.mod` from its
    zip). kcheck's own modules and installed libraries are left out: a cluster that runs kcheck has them."""
    out: list[str] = []
    for spec in specs:
        if spec.startswith("jvm:") or ":" not in spec:
            continue
        module_name = spec.partition(":")[0]
        top = module_name.partition(".")[0]
        mod = sys.modules.get(top)
        path = getattr(mod, "__file__", None)
        if path is None:
            continue
        path = os.path.abspath(path)
        if path.startswith(_OURS + _LIBRARY):
            continue
        if os.path.basename(path) == "__init__.py":
            path = os.path.dirname(path)
        if path not in out:
            out.append(path)
    return out
