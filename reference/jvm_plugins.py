"""Java plug-ins: `--placer jvm:com.example.MyPlacer --classpath my.jar`, and `--assignor jvm:...`.

A Kafka engineer's proposed change is Java on a Kafka branch. A `jvm:<fully.qualified.Class>` spec runs
that class, unchanged, in the bridge's JVM (`kafka_bridge.KafkaBridge` with the user's classpath after
Kafka's jars) behind the same Python interfaces as kcheck's own placers and assignors, so `place`,
`check`, `assign`, `sweep` and `prove --exhaustive` check it as they check Kafka's:

- `org.apache.kafka.metadata.placement.ReplicaPlacer` (kafka-metadata's `placement/ReplicaPlacer.java`,
  the interface `StripedReplicaPlacer.java` implements): a `PlacerInfo` whose `place` has AdminUtils'
  signature (`reference.placers`). The class needs a public `(java.util.Random)` constructor, as
  StripedReplicaPlacer has, or a no-arg one. The `random` kcheck passes is mirrored exactly in Java: a
  `JavaRandom` by its 48-bit state (and advanced as Java advanced it), Kafka's test `MockRandom` (`--seed
  mock`), and the exhaustive checker's every-draw enumeration, which runs in Java a whole configuration
  per round trip (`JPX`).
- `org.apache.kafka.clients.consumer.ConsumerPartitionAssignor`: a client assignor, run by
  `kafka_client_assignors.kafka_assign` (`assign(Cluster, GroupSubscription)` on a fresh instance);
  cooperative when its `supportedProtocols()` lists COOPERATIVE. A fresh instance per call keeps no state
  between rebalances, so a member's `subscriptionUserData` is written here: for Kafka's StickyAssignor
  and CooperativeStickyAssignor (and their subclasses) as they write it; a user's own user data is not
  modelled (its members send none).
- `org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor` (KIP-848): run by
  `kafka_group_assignors.kafka_group_assign` behind `registry.ServerSideAdapter`, as the group
  coordinator runs its assignors.

Which interface a class implements is asked of the JVM (`JI`). Everything the class does wrong (not on
the classpath, no usable constructor, no supported interface, a constructor or a call that throws) is
the plug-in's failure: a `plugins.PluginError`, one line naming the class and the Java exception, exit 2
on the command line, as a Python plug-in's failure is. The classpath and the release are this process's
`JvmContext` (`configure`, set by the command line); sweeps carry it to their Spark workers
(`travel` / `arrive`), which start bridges of their own.

Request words (handler `reference/harness/KcheckJvmPlacer.java`, which documents the grammar):
`JI <class>` what the class is; `JP <class> <random> <specs> <brokers>` one instance placing each spec;
`JPX <class> <max runs> <prefix> <spec> <brokers>` every sequence of `nextInt(bound)` results in turn.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import random as _py_random
import re
import shlex
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kcheck.model import Broker, PartitionInfo, Subscription, TopicPartition
from kcheck.reference import plugins
from kcheck.reference.java import JavaRandom, MockRandom, to_int64
from kcheck.reference.kafka_bridge import (
    JavaException,
    KafkaBridge,
    KafkaBridgeError,
    StripedRequest,
    decode_text,
    encode_text,
    parse_error,
    shared_bridge,
)
from kcheck.reference.kafka_jars import default_version
from kcheck.reference.plugins import PluginError

__all__ = [
    "PREFIX",
    "JvmClass",
    "JvmContext",
    "arrive",
    "configure",
    "context",
    "inspect",
    "is_jvm",
    "map_place",
    "parse_classpath",
    "replay_name",
    "resolve_assignor",
    "resolve_placer",
    "travel",
]

PREFIX = "jvm:"
PLACER_INTERFACE = "org.apache.kafka.metadata.placement.ReplicaPlacer"
CLIENT_INTERFACE = "org.apache.kafka.clients.consumer.ConsumerPartitionAssignor"
GROUP_INTERFACE = "org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor"
_KINDS = {"placer": PLACER_INTERFACE, "client": CLIENT_INTERFACE, "group": GROUP_INTERFACE}
# A Java binary class name: dotted identifiers, '$' for nested classes.
_CLASS_RE = re.compile(r"[^\W\d][\w$]*(?:\.[^\W\d][\w$]*)*")
MAX_CLASS_NAME = 65_535  # bytes: a class file's constant pool holds a name in one CONSTANT_Utf8 of at most this
_MASK48 = (1 << 48) - 1
_MASK64 = (1 << 64) - 1
ENUMERATION_CHUNK = 2_000  # runs per JPX answer: a few hundred kB at most


def is_jvm(spec: str) -> bool:
    return spec.startswith(PREFIX)


# --- the process's classpath and release ------------------------------------------------------


@dataclass(frozen=True)
class JvmContext:
    """The user's jars or class folders (absolute paths, after Kafka's jars) and the Kafka release to run on
    (None: the newest the bridge resolves)."""

    classpath: tuple[str, ...] = ()
    kafka_version: str | None = None


_context = JvmContext()
_lock = threading.Lock()


def parse_classpath(text: str | None) -> tuple[str, ...]:
    """`--classpath a.jar:classes/` (os.pathsep-separated) as absolute paths; a missing entry is a ValueError
    naming it (one line)."""
    if not text:
        return ()
    entries = []
    for entry in text.split(os.pathsep):
        if not entry.strip():
            continue
        path = os.path.abspath(os.path.expanduser(entry))
        if not os.path.exists(path):
            raise ValueError(f"'{entry}' does not exist")
        if not (os.path.isdir(path) or path.endswith((".jar", ".zip", ".JAR", ".ZIP"))):
            raise ValueError(f"'{entry}' is neither a jar nor a folder of classes")
        if not os.path.isdir(path) and not os.path.isfile(path):  # a FIFO or a device: the JVM would wait on it
            raise ValueError(f"'{entry}' is not a regular file")
        if os.path.isdir(path) is False and not os.access(path, os.R_OK):
            raise ValueError(f"'{entry}' is not readable")
        entries.append(path)
    return tuple(entries)


def configure(classpath: Sequence[str] = (), kafka_version: str | None = None) -> JvmContext:
    """Set this process's classpath (already checked entries, see parse_classpath) and release for jvm: specs."""
    global _context
    with _lock:
        _context = JvmContext(tuple(classpath), kafka_version)
    return _context


def context() -> JvmContext:
    return _context


def travel(names: Sequence[str]) -> dict[str, Any]:
    """What a sweep's space carries to its Spark workers when it names a jvm: plug-in (see `arrive`)."""
    if not any(is_jvm(n) for n in names):
        return {}
    return {"jvm": (_context.classpath, _context.kafka_version)}


def arrive(state: dict[str, Any]) -> None:
    """On a worker: take the driver's classpath and release out of a space's pickled state."""
    carried = state.pop("jvm", None)
    if carried is not None:
        configure(*carried)


def replay_name(spec: str) -> str:
    """How a replay command names the plug-in: a jvm: spec with the --classpath that finds its class."""
    if is_jvm(spec) and _context.classpath:
        return f"{spec} --classpath {shlex.quote(os.pathsep.join(_context.classpath))}"
    return spec


@functools.lru_cache(maxsize=1)
def _newest() -> str:
    return default_version()


def _bridge(spec: str) -> KafkaBridge:
    ctx = _context
    try:  # by its version, not None: one JVM with the tests' and bench's shared_bridge("4.4.0", classpath)
        return shared_bridge(ctx.kafka_version or _newest(), ctx.classpath)
    except KafkaBridgeError as e:  # no JDK, a release that does not resolve: the plug-in cannot run here
        raise PluginError(spec, str(e), context="cannot start the JVM") from None


def _where(ctx: JvmContext, bridge: KafkaBridge | None = None) -> str:
    version = bridge.version if bridge is not None else (ctx.kafka_version or "the newest release")
    if ctx.classpath:
        return f"neither in Kafka {version}'s jars nor in --classpath {os.pathsep.join(ctx.classpath)}"
    return f"not in Kafka {version}'s jars (and no --classpath was given)"


# --- what a class is -------------------------------------------------------------------------------


@dataclass(frozen=True)
class JvmClass:
    """What the JVM says about a plug-in class (`JI`)."""

    spec: str  # jvm:<class>
    class_name: str
    kinds: frozenset[str]  # "placer", "client", "group"
    constructors: frozenset[str]  # the public ones kcheck can call: "random" (java.util.Random), "noarg"
    abstract: bool  # an abstract class or an interface
    assignor_name: str | None  # an assignor's name()
    protocols: tuple[str, ...]  # a client assignor's supportedProtocols()


def class_name(spec: str) -> str:
    """The class of a `jvm:<class>` spec; a ValueError (one line) when it is not one."""
    name = spec[len(PREFIX):] if is_jvm(spec) else ""
    if len(name.encode("utf-8", "surrogatepass")) > MAX_CLASS_NAME or not _CLASS_RE.fullmatch(name):
        raise ValueError(f"'{spec}' is not of the form jvm:<fully.qualified.ClassName>")
    return name


def java_failure(spec: str, e: JavaException, context: str = "") -> PluginError:
    """A Java throw of the plug-in's code: its class and message, one line."""
    return PluginError(spec, e.message.strip() or "(no message)", e.class_name, context=context)


_inspected: dict[tuple[JvmContext, str], JvmClass] = {}


def inspect(spec: str) -> JvmClass:
    """Load the class in the JVM, instantiate it once, and say which of Kafka's interfaces it implements."""
    name = class_name(spec)
    ctx = _context
    hit = _inspected.get((ctx, name))
    if hit is not None:
        return hit
    bridge = _bridge(spec)
    try:
        bridge.require("JI", "Java plug-ins")
    except KafkaBridgeError as e:
        raise PluginError(spec, str(e), context="cannot run Java plug-ins") from None
    (answer,) = bridge.roundtrip([f"JI {encode_text(name)}"])
    if answer.startswith("ERR "):
        error = parse_error(answer)
        if error.class_name == "java.lang.ClassNotFoundException":
            raise PluginError(spec, f"class {name} is {_where(ctx, bridge)}", "ClassNotFoundException") from None
        if error.class_name in ("java.lang.NoClassDefFoundError", "java.lang.UnsupportedClassVersionError"):
            raise java_failure(spec, error, "cannot load the class") from None
        if error.class_name.endswith("KcheckJvmPlacer$MethodFailed"):
            raise PluginError(spec, error.message) from None
        raise java_failure(spec, error, "its constructor threw") from None
    _, kinds, ctors, assignor, protocols = answer.split(" ")
    found = JvmClass(spec, name, frozenset() if kinds == "~" else frozenset(kinds.split(",")),
                     frozenset() if ctors in ("~", "abstract") else frozenset(ctors.split(",")), ctors == "abstract",
                     None if assignor == "-" else decode_text(assignor),
                     () if protocols == "~" else tuple(protocols.split(",")))
    _inspected[(ctx, name)] = found
    return found


def _usable(found: JvmClass, kinds: Sequence[str], what: str) -> str:
    """The kind to run the class as, or the PluginError saying why it cannot run as `what`."""
    kind = next((k for k in kinds if k in found.kinds), None)
    if kind is None:
        wanted = " or ".join(_KINDS[k] for k in kinds)
        other = sorted(found.kinds)
        hint = f" (it is a {', '.join(_KINDS[k].rsplit('.', 1)[-1] for k in other)})" if other else ""
        raise PluginError(found.spec, f"{found.class_name} does not implement {wanted}{hint}",
                          context=f"not a {what}")
    if found.abstract:
        raise PluginError(found.spec, f"{found.class_name} is abstract: kcheck needs a class it can instantiate")
    if "noarg" not in found.constructors and (kind != "placer" or "random" not in found.constructors):
        wanted = "a public no-arg or (java.util.Random)" if kind == "placer" else "a public no-arg"
        raise PluginError(found.spec, f"{found.class_name} has no suitable constructor: kcheck needs {wanted} one")
    return kind


# --- placers ----------------------------------------------------------------------------------------


def _broker_token(b: Any) -> str:
    if isinstance(b, Broker):
        return f"{b.id}/{encode_text(b.rack)}/{int(b.fenced)}"
    return f"{int(b)}/-/0"


def _ints(token: str) -> list[int]:
    return [] if token == "~" else [int(x) for x in token.split(",")]


def _spec_placement(token: str) -> list[list[int]]:
    return [] if token == "." else [_ints(r) for r in token.split(";")]


def _draws(token: str) -> tuple[list[int], list[int]]:
    bounds, _, values = token.partition("/")
    return _ints(bounds), _ints(values)


class JvmPlacer:
    """A ReplicaPlacer class behind AdminUtils' signature (`reference.placers.Placer`)."""

    def __init__(self, found: JvmClass) -> None:
        self.found = found
        self.spec = found.spec
        self.token = encode_text(found.class_name)
        self.seeded = "random" in found.constructors
        # the every-draw enumeration of one configuration, as JPX answered it: prefix -> (bounds, values, placement)
        self._runs_key: tuple[Any, ...] | None = None
        self._runs: dict[tuple[int, ...], tuple[list[int], list[int], list[list[int]]]] = {}
        self._runs_next: list[int] | None = None  # where JPX stopped; None when it covered every run
        self._per_call = False  # a run of this configuration threw: the rest go one JP call each

    def __repr__(self) -> str:
        return f"JvmPlacer({self.found.class_name})"

    def _roundtrip(self, line: str) -> list[str]:
        answer = _bridge(self.spec).roundtrip([line])[0]
        if answer.startswith("ERR "):
            e = parse_error(answer)
            if e.class_name.endswith("KcheckJvmPlacer$UnboundedDraw"):
                raise PluginError(self.spec, f"asked for {e.message}", "UnboundedDraw")
            raise java_failure(self.spec, e)
        return answer.split(" ")[1:]

    def _line(self, word: str, random: str, brokers: Sequence[Any], first: int, n: int, rf: int) -> str:
        return " ".join([word, self.token, random, "1", str(first), str(n), str(rf), *map(_broker_token, brokers)])

    def __call__(self, brokers: Sequence[Any], n_partitions: int, replication_factor: int, fixed_start_index: int = -1,
                 start_partition_id: int = -1, random: Any = None) -> dict[int, list[int]]:
        if fixed_start_index >= 0:
            raise ValueError("a ReplicaPlacer has no start index; pass a seeded random instead")
        first = max(0, start_partition_id)
        placed = self._place(list(brokers), first, n_partitions, replication_factor, random)
        return {first + i: replicas for i, replicas in enumerate(placed)}

    def _place(self, brokers: list[Any], first: int, n: int, rf: int, rnd: Any) -> list[list[int]]:
        if rnd is None:
            rnd = JavaRandom(_py_random.getrandbits(48))
        if type(rnd) is JavaRandom or type(rnd) is MockRandom:
            mock = type(rnd) is MockRandom
            token = f"M{to_int64(rnd._state)}" if mock else f"L{rnd._seed}"  # type: ignore[attr-defined]
            state, placed = self._roundtrip(self._line("JP", token, brokers, first, n, rf))
            if state != "-":  # the Java Random advanced: so does ours (a caller may share it across calls)
                if mock:
                    rnd._state = int(state) & _MASK64  # type: ignore[attr-defined]
                else:
                    rnd._seed = int(state) & _MASK48
            return _spec_placement(placed)
        if not self.seeded:  # the class draws its own randomness (or none): nothing to pass in
            return _spec_placement(self._roundtrip(self._line("JP", "D~", brokers, first, n, rf))[1])
        if type(rnd).__name__ == "AllDraws" and hasattr(rnd, "prefix"):
            return self._every_draw(brokers, first, n, rf, rnd)
        return self._drawn(brokers, first, n, rf, rnd)

    def _drawn(self, brokers: list[Any], first: int, n: int, rf: int, rnd: Any) -> list[list[int]]:
        """Any other random (a scripted one): Java runs with the draws so far, tells the next bound, and the
        Python random picks that draw; one round trip per draw."""
        prefix: list[int] = []
        while True:
            draws, placed = self._roundtrip(self._line("JP", f"D{','.join(map(str, prefix)) or '~'}", brokers,
                                                       first, n, rf))
            bounds, _ = _draws(draws)
            if len(bounds) <= len(prefix):
                return _spec_placement(placed)
            prefix.append(rnd.next_int(bounds[len(prefix)]))

    def _every_draw(self, brokers: list[Any], first: int, n: int, rf: int, rnd: Any) -> list[list[int]]:
        """The exhaustive checker's odometer (`invariants.exhaustive.AllDraws`: a forced prefix, then 0s): Java
        enumerates a configuration's runs in the same order, ENUMERATION_CHUNK per round trip."""
        key = (tuple(map(_broker_token, brokers)), first, n, rf)
        prefix = tuple(rnd.prefix)
        if key != self._runs_key:
            self._runs_key, self._runs, self._runs_next, self._per_call = key, {}, None, False
            self._fetch(brokers, first, n, rf, list(prefix))
        elif prefix not in self._runs and not self._per_call and self._runs_next is not None:
            self._runs.clear()
            self._fetch(brokers, first, n, rf, list(prefix))
        run = self._runs.get(prefix)
        if run is None:  # a run threw during the enumeration (or an odometer we do not know): one call each
            draws, placed = self._roundtrip(self._line("JP", f"D{','.join(map(str, prefix)) or '~'}", brokers,
                                                       first, n, rf))
            run = (*_draws(draws), _spec_placement(placed))
        bounds, values, placement = run
        for bound, value in zip(bounds, values, strict=True):
            if rnd.next_int(bound) != value:
                raise PluginError(self.spec, "gave a different sequence of draws for the same forced draws",
                                  "not deterministic")
        return placement

    def _fetch(self, brokers: list[Any], first: int, n: int, rf: int, prefix: list[int]) -> None:
        line = " ".join(["JPX", self.token, str(ENUMERATION_CHUNK), ",".join(map(str, prefix)) or "~", str(first),
                         str(n), str(rf), *map(_broker_token, brokers)])
        answer = _bridge(self.spec).roundtrip([line])[0]
        if answer.startswith("ERR "):
            self._per_call, self._runs_next = True, None
            return
        tokens = answer.split(" ")[1:]
        self._runs_next = None if tokens[0] == "." else _ints(tokens[0])
        for run in tokens[1:]:
            bounds, values, placed = run.split("/")
            b, v = _ints(bounds), _ints(values)
            while v and v[-1] == 0:  # the forced prefix of this run: its draws without the trailing zeros
                v = v[:-1]
            self._runs[tuple(v)] = (b, _ints(values), _spec_placement(placed))


def resolve_placer(spec: str) -> Any:
    """The ReplicaPlacer class `jvm:<class>` as a guarded `place` with AdminUtils' signature (placers.resolve_placer
    makes it a PlacerInfo: this module imports neither registry)."""
    found = inspect(spec)
    _usable(found, ("placer",), "placer")
    return plugins.guard_placer(spec, JvmPlacer(found))


def map_place(bridge: KafkaBridge, placer_class: str, requests: Sequence[StripedRequest]
              ) -> list[list[list[list[int]]] | JavaException]:
    """Each request's placements (a replica list per partition, per spec) by one `placer_class(new Random(seed))`
    (or its no-arg constructor) placing the specs in turn, in one round trip: `KafkaBridge.map_striped`'s
    answers, for any ReplicaPlacer."""
    bridge.require("JP", "Java plug-ins")
    lines = []
    for r in requests:
        specs = " ".join(f"{s.start_partition} {s.num_partitions} {s.num_replicas}" for s in r.specs)
        lines.append(" ".join(["JP", encode_text(placer_class), f"L{JavaRandom(r.seed)._seed}", str(len(r.specs)),
                               specs, *map(_broker_token, r.brokers)]).replace("  ", " "))
    out: list[list[list[list[int]]] | JavaException] = []
    for answer in bridge.roundtrip(lines):
        if answer.startswith("ERR "):
            out.append(parse_error(answer))
        else:
            out.append([_spec_placement(t) for t in answer.split(" ")[2:]])
    return out


# --- assignors ----------------------------------------------------------------------------------------


class _JvmAssignor:
    """A user's assignor class found in the JVM: its name is the one it reports, else its class name."""

    def __init__(self, found: JvmClass) -> None:
        self.found = found
        self.spec = found.spec

    def name(self) -> str:
        return self.found.assignor_name or self.found.class_name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.found.class_name})"


class JvmClientAssignor(_JvmAssignor):
    """A ConsumerPartitionAssignor class behind the client signature (`registry.ClientAssignor`)."""

    user_data: str | None = None  # "sticky" / "cooperative-sticky": see JvmStickyAssignor

    def _with_user_data(self, s: Subscription) -> Subscription:
        return s

    def assign(self, metadata: Mapping[str, Sequence[PartitionInfo]],
               subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
        from kcheck.reference.kafka_client_assignors import kafka_assign

        subscriptions = {m: self._with_user_data(s) for m, s in subscriptions.items()}
        try:
            return kafka_assign(_bridge(self.spec), self.found.class_name, metadata, subscriptions)
        except JavaException as e:
            raise java_failure(self.spec, e) from None

    def assign_partitions(self, partitions_per_topic: Mapping[str, Sequence[PartitionInfo]],
                          subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
        """The engines' entry point: the leader's metadata holds the subscribed topics."""
        return self.assign(partitions_per_topic, subscriptions)


class JvmStickyAssignor(JvmClientAssignor):
    """Kafka's StickyAssignor or CooperativeStickyAssignor, or a subclass. Each call runs a fresh Java instance, so
    what a member's instance keeps between rebalances (its `subscriptionUserData` after `onAssignment`) lives here,
    in the bytes Kafka's classes send (`reference.assignors.sticky`'s encoders, as the built-in sticky assignors),
    with the same hooks the rebalance model calls on them."""

    def __init__(self, found: JvmClass) -> None:
        from kcheck.reference.assignors.sticky import DEFAULT_GENERATION

        super().__init__(found)
        self.user_data = "cooperative-sticky" if "cooperative-sticky" in found.kinds else "sticky"
        self._owned: list[TopicPartition] | None = None
        self._generation = DEFAULT_GENERATION

    def on_assignment(self, partitions: Sequence[TopicPartition] | None, generation_id: int) -> None:
        self._owned = list(partitions or ())
        self._generation = generation_id

    def subscription_user_data(self, topics: Sequence[str] = ()) -> bytes | None:
        from kcheck.reference.assignors.sticky import encode_cooperative_user_data, serialize_topic_partition_assignment

        if self.user_data == "cooperative-sticky":
            return encode_cooperative_user_data(self._generation)
        if self._owned is None:  # a fresh StickyAssignor sends none
            return None
        return serialize_topic_partition_assignment(self._owned, self._generation)

    def member_data(self, subscription: Subscription) -> Any:
        """What the user data says (the reference's decoding of the same bytes)."""
        from kcheck.reference.assignors.sticky import CooperativeStickyAssignor, StickyAssignor

        reference = CooperativeStickyAssignor() if self.user_data == "cooperative-sticky" else StickyAssignor()
        return reference.member_data(subscription)

    def _with_user_data(self, s: Subscription) -> Subscription:
        """A member of a group file: what its sticky assignor would send, from its owned partitions and generation
        (as `kcheck assign` writes it for the built-in sticky assignors)."""
        from kcheck.reference.assignors.sticky import (
            DEFAULT_GENERATION,
            encode_cooperative_user_data,
            serialize_topic_partition_assignment,
        )

        if s.user_data is not None:
            return s
        if self.user_data == "cooperative-sticky":
            data = encode_cooperative_user_data(DEFAULT_GENERATION if s.generation_id is None else s.generation_id)
        elif s.generation_id is not None:
            data = serialize_topic_partition_assignment(list(s.owned_partitions), s.generation_id)
        else:
            return s
        return dataclasses.replace(s, user_data=data)


class JvmGroupAssignor(_JvmAssignor):
    """A KIP-848 ConsumerGroupPartitionAssignor class: what `registry.ServerSideAdapter` runs."""

    def assign(self, group_spec: Any, describer: Any) -> Any:
        from kcheck.reference.kafka_group_assignors import kafka_group_assign

        try:
            return kafka_group_assign(_bridge(self.spec), self.found.class_name, group_spec, describer)
        except JavaException as e:
            raise java_failure(self.spec, e) from None


@dataclass(frozen=True)
class JvmAssignor:
    """The assignor class `jvm:<class>`: a fresh instance per call of `factory`, a client assignor, or (server_side)
    a KIP-848 one, which the assignor registry puts behind the client signature (it makes the AssignorInfo: this
    module imports neither registry)."""

    factory: Callable[[], Any]
    cooperative: bool
    server_side: bool


def resolve_assignor(spec: str) -> JvmAssignor:
    """The assignor class `jvm:<class>`: a client one, else a KIP-848 one."""
    found = inspect(spec)
    kind = _usable(found, ("client", "group"), "consumer assignor")
    if kind == "client":
        sticky = "sticky" in found.kinds or "cooperative-sticky" in found.kinds
        return JvmAssignor(functools.partial(JvmStickyAssignor if sticky else JvmClientAssignor, found),
                           "COOPERATIVE" in found.protocols, False)
    return JvmAssignor(lambda: JvmGroupAssignor(found), False, True)
