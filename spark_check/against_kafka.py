"""Real Kafka beside the reference over a whole sweep space: `kcheck sweep placement|assignors --against-kafka V`.

`against_kafka(space, version)` wraps a `PlacementSpace` or a `GroupSpace`: the same ids and configurations,
but each configuration is run through the reference (with release V's profile, `reference/releases.py`)
and through Kafka V's own classes (its jars, through the bridge: `reference/kafka_bridge.py`), and the one
thing checked is that both answer the same (`kafka.same-as-reference`, one key per placer or assignor).

* Placement: AdminUtils.assignReplicasToBrokers (where the release has it: up to 4.0) and
  StripedReplicaPlacer, each configuration one request (AdminUtils' start index and shift become the
  smallest `java.util.Random` seed that draws them, Kafka's static Random re-seeded with it).
* Assignors: every assignor call the rebalance model makes for a configuration (round 1, the event, the
  rebalances after it), recorded with its exact inputs and the reference's answer, then the same inputs
  through Kafka's assignor (`kafka_client_assignors.map_kafka_assign`, `kafka_group_assignors
  .map_kafka_group_assign`). A configuration differs when any of its calls does. Calls the reference
  declines (NotImplementedError: a case it does not model) are not compared.

Each Spark task evaluates its range in one batch per algorithm: one bridge round trip. The bridge is the
worker process's own (`shared_bridge(version)`: one JVM per Python worker, reused across tasks). The
smallest differing configuration of each algorithm is stored with both answers and a command that replays
it alone: `kcheck place ... --against-kafka V` or `kcheck assign - ... --against-kafka V` (the group file on
stdin), each printing both answers and exiting 1 on a difference.
"""

from __future__ import annotations

import functools
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcheck.model import Broker, PartitionInfo, Subscription, TopicPartition
from kcheck.reference.errors import KafkaError
from kcheck.reference.java import JavaRandom
from kcheck.reference.releases import ReleaseProfile, profile
from kcheck.spark_check.batch import BatchResult, FirstViolation

SAME = "kafka.same-as-reference"
KAFKA_PLACERS = {  # our placer name -> the Kafka class that the bridge runs for it
    "adminutils": "org.apache.kafka.admin.AdminUtils",
    "striped": "org.apache.kafka.metadata.placement.StripedReplicaPlacer",
}
NOT_MODELLED = "not modelled"  # the reference declines the input (NotImplementedError): nothing to compare
# Exceptions the JVM may throw preallocated, without a message, once the throwing code is JIT-compiled
# (-XX:+OmitStackTraceInFastThrow): Kafka's message is then "null".
FAST_THROW = frozenset({"NullPointerException", "ArithmeticException", "ArrayIndexOutOfBoundsException",
                        "ClassCastException", "ArrayStoreException"})

Outcome = Any  # a result (placement dict, assignment) or an exception as (simple class name, message)


# --- comparing -----------------------------------------------------------------------------------------------


def error_key(e: BaseException) -> tuple[str, str]:
    """Our reference's exception as Kafka's would come back: (simple class name, message)."""
    if isinstance(e, ZeroDivisionError):
        return "ArithmeticException", "/ by zero"
    java = getattr(type(e), "java_class", None)
    name = java.rsplit(".", 1)[-1] if isinstance(java, str) else type(e).__name__
    return name, str(e) or "null"  # the harness writes a null message as "null"


def kafka_outcome(answer: Any) -> Outcome:
    from kcheck.reference.kafka_bridge import JavaException

    return (answer.simple_name, answer.message) if isinstance(answer, JavaException) else answer


def same(ours: Outcome, theirs: Outcome) -> bool:
    if ours == theirs:
        return True
    return (isinstance(ours, tuple) and isinstance(theirs, tuple) and ours[0] == theirs[0]
            and ours[0] in FAST_THROW and theirs[1] == "null")


def _shown(outcome: Outcome) -> str:
    if isinstance(outcome, tuple):
        return f"throws {outcome[0]}: {outcome[1]}"
    return json.dumps(_jsonable(outcome), sort_keys=False)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | frozenset | set):
        items = sorted(value) if isinstance(value, frozenset | set) else value
        return [_jsonable(v) for v in items]
    if isinstance(value, TopicPartition):
        return str(value)
    return value if isinstance(value, int | str | float | bool) or value is None else str(value)


def difference_text(ours: Outcome, theirs: Outcome, version: str) -> tuple[str, str]:
    """(where, message) of a difference: the first key whose values differ, or the two refusals."""
    if isinstance(ours, Mapping) and isinstance(theirs, Mapping):
        for k in [*ours, *(k for k in theirs if k not in ours)]:
            a, b = ours.get(k), theirs.get(k)
            if a != b:
                where = f"partition {k}" if isinstance(k, int) else f"member {k}"
                return where, (f"kcheck {_shown(a) if a is not None else 'has none'}; Kafka {version} "
                               f"{_shown(b) if b is not None else 'has none'}")
        return "order", f"the same entries in another order: kcheck {_shown(ours)}; Kafka {version} {_shown(theirs)}"
    return "answer", f"kcheck {_shown(ours)}; Kafka {version} {_shown(theirs)}"


# --- placement -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlaceInput:
    """One placement, as `kcheck place` takes it: a Kafka placer, brokers in order, the topic and the draws."""

    placer: str  # adminutils or striped
    brokers: tuple[Broker, ...]
    partitions: int
    rf: int
    start_index: int = -1  # AdminUtils' fixed start index (also its shift); -1: drawn from the seed
    start_partition: int = -1
    seed: int | None = 0  # java.util.Random's seed (AdminUtils: its static Random, re-seeded)

    def command(self, version: str) -> str:
        """The `kcheck place ... --against-kafka VERSION` that replays this input."""
        ids = ",".join(str(b.id) for b in self.brokers)
        cmd = f"kcheck place --placer {self.placer} --brokers {ids}"
        racks = [f"{b.id}:{b.rack}" for b in self.brokers if b.rack is not None]
        if racks:
            cmd += " --racks " + shlex.quote(",".join(racks))
        fenced = [str(b.id) for b in self.brokers if b.fenced]
        if fenced:
            cmd += " --fenced " + ",".join(fenced)
        cmd += f" --partitions {self.partitions} --replication-factor {self.rf}"
        if self.start_index >= 0:
            cmd += f" --start-index {self.start_index}"
        if self.start_partition >= 0:
            cmd += f" --start-partition {self.start_partition}"
        if self.seed is not None and self.start_index < 0:
            cmd += f" --seed {self.seed}"
        return cmd + f" --against-kafka {version}"


def reference_place(inp: PlaceInput, prof: ReleaseProfile) -> Outcome:
    """The reference placer on this input as release `prof` words it: partition -> replicas, or its refusal."""
    from kcheck.reference.placers import BUILTIN_PLACERS

    info = BUILTIN_PLACERS[inp.placer]
    rnd = JavaRandom(inp.seed if inp.seed is not None else 0)
    try:
        placed = info.place(list(inp.brokers), inp.partitions, inp.rf, inp.start_index, inp.start_partition, rnd)
    except KafkaError as e:
        name, message = error_key(e)
        return name, prof.striped_refusal(message) if inp.placer == "striped" else message
    return {p: list(r) for p, r in placed.items()}


def kafka_place(bridge: Any, inputs: Sequence[PlaceInput]) -> list[Outcome]:
    """Kafka's answers to the inputs: one round trip per placer."""
    from kcheck.reference.kafka_bridge import AssignRequest, StripedRequest
    from kcheck.reference.striped import PlacementSpec

    out: list[Outcome] = [None] * len(inputs)
    admin = [i for i, x in enumerate(inputs) if x.placer == "adminutils"]
    striped = [i for i, x in enumerate(inputs) if x.placer == "striped"]
    if admin:
        assign_requests = [AssignRequest(x.brokers, x.partitions, x.rf, x.start_index, x.start_partition,
                                         x.seed if x.start_index < 0 else None) for x in (inputs[i] for i in admin)]
        for i, answer in zip(admin, bridge.map_assign(assign_requests), strict=True):
            out[i] = kafka_outcome(answer)
    if striped:
        striped_requests = [StripedRequest(x.brokers, (PlacementSpec("topic", max(0, x.start_partition), x.partitions,
                                                                     x.rf),), 0 if x.seed is None else x.seed)
                            for x in (inputs[i] for i in striped)]
        for i, answer in zip(striped, bridge.map_striped(striped_requests), strict=True):
            if isinstance(answer, list):
                first = max(0, inputs[i].start_partition)
                out[i] = {first + p: reps for p, reps in enumerate(answer[0])}
            else:
                out[i] = kafka_outcome(answer)
    return out


DRAW_SEED_LIMIT = 2_000_000


@functools.cache
def _draw_seeds(n: int) -> dict[tuple[int, int], int]:
    """For n brokers: (start index, shift) -> the smallest java.util.Random seed whose first two nextInt(n)
    draws are those (what AdminUtils draws), for every pair. About 20,000 seeds cover n up to 63."""
    table: dict[tuple[int, int], int] = {}
    seed = 0
    while len(table) < n * n and seed < DRAW_SEED_LIMIT:
        r = JavaRandom(seed)
        table.setdefault((r.next_int(n), r.next_int(n)), seed)
        seed += 1
    return table


def draw_seed(n: int, start_index: int, shift: int) -> int | None:
    return _draw_seeds(n).get((start_index, shift))


def place_input(cfg: Any) -> PlaceInput:
    """A placement space's configuration (`placement_space.PlacementConfig`) as one Kafka-replayable input."""
    brokers = tuple(cfg.cluster().brokers)
    if cfg.seed >= 0:
        return PlaceInput(cfg.placer, brokers, cfg.partitions, cfg.rf, seed=cfg.seed)
    seed = draw_seed(cfg.brokers, cfg.start_index, cfg.shift)
    if seed is None:
        if cfg.start_index != cfg.shift:
            raise ValueError(f"no java.util.Random seed below {DRAW_SEED_LIMIT:,} draws start {cfg.start_index}, "
                             f"shift {cfg.shift} of {cfg.brokers}")
        return PlaceInput(cfg.placer, brokers, cfg.partitions, cfg.rf, start_index=cfg.start_index, seed=None)
    return PlaceInput(cfg.placer, brokers, cfg.partitions, cfg.rf, seed=seed)


@dataclass(frozen=True)
class KafkaInvariant:
    """What a result key `"<algorithm>/kafka.same-as-reference"` stands for: hard, and Kafka's own answer."""

    key: str
    subject: str
    invariant: str = SAME
    severity: str = "hard"
    guaranteed: bool = True

    @property
    def fails(self) -> bool:
        return True


class _AgainstKafka:
    """What both wrappers share: the inner space's ids and configurations, one key per algorithm."""

    inner: Any
    version: str
    subjects: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.inner)

    def __getitem__(self, config_id: int) -> Any:
        return self.inner[config_id]

    @property
    def bounds(self) -> Any:
        return self.inner.bounds

    @property
    def settings(self) -> dict[str, Any]:  # in the store's fingerprint: another release is another sweep
        return {"kafka_version": self.version, "against": self.inner.name}

    def invariant_ids(self) -> list[str]:
        return [f"{s}/{SAME}" for s in self.subjects]

    def invariant_info(self, key: str) -> KafkaInvariant:
        subject, _, inv = key.rpartition("/")
        if subject not in self.subjects or inv != SAME:
            raise KeyError(f"unknown key '{key}' of a sweep against Kafka")
        return KafkaInvariant(key, subject)

    def metric_names(self) -> list[str]:
        return []

    def __getstate__(self) -> dict[str, Any]:  # Spark ships the space to every task: bounds and names only
        return {"inner": self.inner, "version": self.version, "subjects": self.subjects}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _bridge(self) -> Any:
        from kcheck.reference.kafka_bridge import shared_bridge

        return shared_bridge(self.version)  # this worker process's JVM for the release

    words: dict[str, tuple[str, str]] = {}  # subject -> (the request word it needs, what it is)

    def prepare(self) -> None:
        """On the driver, before any Spark task: resolve the release's jars, compile the harness and check that it
        answers every request the sweep needs, so workers only start their JVMs (KafkaBridgeError otherwise)."""
        bridge = self._bridge()
        for subject in self.subjects:
            word, what = self.words[subject]
            bridge.require(word, what)

    def _record(self, out: BatchResult, key: str, config_id: int, config: Mapping[str, Any], ours: Outcome,
                theirs: Outcome, extra: Mapping[str, Any]) -> None:
        where, message = difference_text(ours, theirs, self.version)
        detail = {"kcheck": _jsonable(ours), f"kafka {self.version}": _jsonable(theirs), **extra}
        out.add_violation(key, FirstViolation(config_id, config, where, message, detail))


class PlacementAgainstKafka(_AgainstKafka):
    """A placement space, each configuration placed by the reference and by Kafka's own placer."""

    name = "placement-against-kafka"
    words = {"adminutils": ("A", "AdminUtils"), "striped": ("S", "StripedReplicaPlacer")}

    def __init__(self, inner: Any, version: str) -> None:
        self.inner, self.version = inner, version
        prof = profile(version)
        for p in inner.placers:
            if p not in KAFKA_PLACERS:
                raise ValueError(f"'{p}' is not one of Kafka's placers ({', '.join(KAFKA_PLACERS)}): there is no "
                                 "Kafka answer to compare it with")
            if not prof.has(p):
                raise ValueError(f"{p} is not in Kafka {version} (AdminUtils is in 3.9.x and 4.0.x)")
        self.subjects = tuple(inner.placers)

    @property
    def placers(self) -> tuple[str, ...]:
        return self.subjects

    def reference(self, inp: PlaceInput, prof: ReleaseProfile) -> Outcome:
        """The reference's answer (`reference_place`); a test plants a difference by overriding this."""
        return reference_place(inp, prof)

    def evaluate(self, start: int, stop: int) -> BatchResult:
        start, stop = max(0, start), min(stop, len(self))
        out = BatchResult(start, max(start, stop))
        prof = profile(self.version)
        configs = [self.inner[i] for i in range(start, stop)]
        inputs = [place_input(cfg) for cfg in configs]
        theirs = kafka_place(self._bridge(), inputs) if inputs else []
        for key in self.invariant_ids():
            out.checked[key] += 0
        for config_id, cfg, inp, real in zip(range(start, stop), configs, inputs, theirs, strict=True):
            key = f"{cfg.placer}/{SAME}"
            out.checked[key] += 1
            mine = self.reference(inp, prof)
            if same(mine, real):
                continue
            if key in out.first:
                out.violated[key] += 1
                continue
            config = {**cfg.describe(), "replay": inp.command(self.version)}
            self._record(out, key, config_id, config, mine, real, {"kafka_class": KAFKA_PLACERS[cfg.placer]})
        return out


# --- assignors -----------------------------------------------------------------------------------------------


@dataclass
class Call:
    """One assignor call of the rebalance model: its inputs exactly as the assignor got them, and the answer."""

    server: bool  # a KIP-848 assignor: inputs are (GroupSpec, SubscribedTopicDescriber)
    inputs: tuple[Any, Any]  # client: (partitions per topic, subscriptions)
    ours: Outcome
    topic_names: dict[Any, str] = field(default_factory=dict)  # server: topic id -> name (for people)


def _client_result(result: Mapping[str, Sequence[TopicPartition]], subs: Mapping[str, Any]) -> dict[str, list]:
    """An assignment with every member present, in member order, then any member the assignor added."""
    out: dict[str, list[TopicPartition]] = {m: [] for m in subs}
    out.update((m, list(tps)) for m, tps in result.items())
    return out


class _RecordClient:
    """A client-side assignor instance that records each `assign_partitions` call (the leader's computation)."""

    def __init__(self, inner: Any, calls: list[Call]) -> None:
        self.inner, self.calls = inner, calls

    def __getattr__(self, name: str) -> Any:  # user data and onAssignment hooks
        if name in ("inner", "calls"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def assign_partitions(self, ppt: Mapping[str, Sequence[PartitionInfo]],
                          subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
        inputs = ({t: list(ps) for t, ps in ppt.items()}, dict(subscriptions))
        try:
            result = self.inner.assign_partitions(ppt, subscriptions)
        except NotImplementedError:
            self.calls.append(Call(False, inputs, NOT_MODELLED))
            raise
        except Exception as e:
            self.calls.append(Call(False, inputs, error_key(e)))
            raise
        self.calls.append(Call(False, inputs, _client_result(result, subscriptions)))
        return result


class _RecordServer:
    """A KIP-848 assignor (inside `ServerSideAdapter`) that records each `assign(spec, describer)` call."""

    def __init__(self, inner: Any, calls: list[Call], names: Mapping[Any, str]) -> None:
        self.inner, self.calls, self.names = inner, calls, names

    def name(self) -> str:
        return str(self.inner.name())

    def assign(self, spec: Any, describer: Any) -> Any:
        names = dict(self.names)
        try:
            result = self.inner.assign(spec, describer)
        except NotImplementedError:
            self.calls.append(Call(True, (spec, describer), NOT_MODELLED, names))
            raise
        except Exception as e:
            self.calls.append(Call(True, (spec, describer), error_key(e), names))
            raise
        self.calls.append(Call(True, (spec, describer), result, names))
        return result


def recording(info: Any, calls: list[Call]) -> Any:
    """`info` (an AssignorInfo) whose instances record every call into `calls`."""
    from kcheck.reference.assignors.registry import AssignorInfo, ServerSideAdapter

    def factory() -> Any:
        client = info.factory()
        if isinstance(client, ServerSideAdapter):
            client.assignor = _RecordServer(client.assignor, calls, _TopicNames(client))
            return client
        return _RecordClient(client, calls)

    return AssignorInfo(info.name, factory, info.cooperative, info.guarantees)


class _TopicNames(Mapping[Any, str]):
    """A ServerSideAdapter's topic id -> name, read when a call is recorded."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter

    def __getitem__(self, key: Any) -> str:
        return next(t for t, u in self.adapter.topic_ids.items() if u == key)

    def __iter__(self) -> Any:
        return iter({u: t for t, u in self.adapter.topic_ids.items()})

    def __len__(self) -> int:
        return len(self.adapter.topic_ids)


def record_calls(config: Any, info: Any) -> list[Call]:
    """Every assignor call the rebalance model makes for a group configuration (`groups.GroupConfig`)."""
    from kcheck.invariants.rebalance import ModelFailure
    from kcheck.spark_check.groups import _apply, _SweepGroup

    calls: list[Call] = []
    group = _SweepGroup(recording(info, calls), config.topics, layout=config.layout)
    for m in config.members:
        group.join(m.name, m.topics, m.rack)
    try:
        group.rebalance()
        _apply(group, config.event, [])
    except ModelFailure:  # the assignor threw (recorded) or a cooperative group did not settle
        pass
    except NotImplementedError:  # the reference does not model this input (recorded, not compared): stop here
        pass
    return calls


def kafka_class(assignor: str) -> tuple[bool, str]:
    """(KIP-848 server-side, Kafka's class) for a built-in assignor name."""
    from kcheck.reference.kafka_client_assignors import CLIENT_ASSIGNOR_CLASSES
    from kcheck.reference.kafka_group_assignors import GROUP_ASSIGNOR_CLASSES

    if assignor in GROUP_ASSIGNOR_CLASSES:
        return True, GROUP_ASSIGNOR_CLASSES[assignor]
    if assignor in CLIENT_ASSIGNOR_CLASSES:
        return False, CLIENT_ASSIGNOR_CLASSES[assignor]
    raise ValueError(f"'{assignor}' is not one of Kafka's assignors "
                     f"({', '.join([*CLIENT_ASSIGNOR_CLASSES, *GROUP_ASSIGNOR_CLASSES])}): there is no Kafka answer "
                     "to compare it with")


def kafka_calls(bridge: Any, assignor: str, calls: Sequence[Call]) -> list[Outcome]:
    """Kafka's answers to the calls' inputs, in one round trip."""
    if not calls:
        return []
    server, cls = kafka_class(assignor)
    if server:
        from kcheck.reference.kafka_group_assignors import map_kafka_group_assign

        answers = map_kafka_group_assign(bridge, cls, [c.inputs for c in calls])
        return [kafka_outcome(a) for a in answers]
    from kcheck.reference.kafka_client_assignors import map_kafka_assign

    out = []
    for answer, call in zip(map_kafka_assign(bridge, cls, [c.inputs for c in calls]), calls, strict=True):
        theirs = kafka_outcome(answer)
        out.append(_client_result(theirs, call.inputs[1]) if isinstance(theirs, Mapping) else theirs)
    return out


def readable(call: Call, outcome: Outcome) -> Outcome:
    """A KIP-848 answer with topic names instead of ids and sorted partitions (member -> ["t1-0", ...])."""
    if not call.server or not isinstance(outcome, Mapping):
        return outcome
    return {m: sorted((f"{call.topic_names.get(t, str(t))}-{p}" for t, ps in by_topic.items() for p in ps))
            for m, by_topic in outcome.items()}


def group_file(assignor: str, call: Call) -> tuple[dict[str, Any], bool]:
    """A `kcheck assign` group file for a client-side call, and whether `kcheck assign` sends exactly the
    recorded subscriptions for it (a sticky member's owned partitions and generation are its user data)."""
    from kcheck.reference.assignors.sticky import deserialize_topic_partition_assignment

    ppt, subs = call.inputs
    topics: dict[str, Any] = {}
    for t, infos in ppt.items():
        racks = [[b.rack for b in p.replicas] for p in infos]
        topics[t] = ({"partitions": len(infos), "racks": racks}
                     if any(r is not None for rs in racks for r in rs) else len(infos))
    members: dict[str, Any] = {}
    for m, s in subs.items():
        owned, generation = list(s.owned_partitions), s.generation_id
        if assignor == "sticky" and s.user_data is not None:
            member_data = deserialize_topic_partition_assignment(s.user_data)
            owned, generation = list(member_data.partitions), member_data.generation
        entry: dict[str, Any] = {"topics": list(s.topics), "owned": [str(tp) for tp in owned],
                                 "generation": generation, "rack": s.rack_id, "instance_id": s.group_instance_id}
        members[m] = {k: v for k, v in entry.items() if v not in (None, [])}
    data = {"topics": topics, "members": members}
    try:
        from kcheck.inputs.group_file import parse_group

        exact = parse_group(json.dumps(data), "<replay>").subscriptions(assignor) == dict(subs)
    except Exception:  # noqa: BLE001 - a group the file format cannot hold: the replay is only approximate
        exact = False
    return data, exact


def server_group_file(call: Call) -> dict[str, Any]:
    """A `kcheck assign` group file for a KIP-848 call (topics by name, members' current assignments)."""
    spec, describer = call.inputs
    names = call.topic_names
    topics = {names.get(t, str(t)): n for t, n in describer.partitions.items()}
    members: dict[str, Any] = {}
    for m, s in spec.members.items():
        owned = [f"{names.get(t, str(t))}-{p}" for t, ps in s.assignment.items() for p in sorted(ps)]
        entry = {"topics": [names.get(t, str(t)) for t in s.subscribed_topic_ids], "owned": owned,
                 "generation": 1 if owned else None, "rack": s.rack_id, "instance_id": s.instance_id}
        members[m] = {k: v for k, v in entry.items() if v not in (None, [])}
    return {"topics": topics, "members": members}


def assign_command(assignor: str, data: Mapping[str, Any], version: str) -> str:
    """The `kcheck assign` command that replays a group (the file on stdin)."""
    text = json.dumps(data, separators=(",", ":"))
    return f"echo {shlex.quote(text)} | kcheck assign - --assignor {assignor} --against-kafka {version}"


class GroupsAgainstKafka(_AgainstKafka):
    """A consumer-group space, every assignor call of each configuration answered by the reference and Kafka."""

    name = "assignors-against-kafka"
    words = {**dict.fromkeys(("range", "roundrobin", "sticky", "cooperative-sticky"),
                             ("C", "client-side assignors (ConsumerPartitionAssignor)")),
             **dict.fromkeys(("uniform", "server-range"), ("G", "KIP-848 assignors (ConsumerGroupPartitionAssignor)"))}

    def __init__(self, inner: Any, version: str) -> None:
        self.inner, self.version = inner, version
        profile(version)
        for a in inner.assignors:
            kafka_class(a)
        self.subjects = tuple(inner.assignors)

    @property
    def assignors(self) -> tuple[str, ...]:
        return self.subjects

    def evaluate(self, start: int, stop: int) -> BatchResult:
        start, stop = max(0, start), min(stop, len(self))
        out = BatchResult(start, max(start, stop))
        prof = profile(self.version)
        infos = {a: prof.assignor(a) for a in self.subjects}  # the reference as this release runs it
        per_config: list[tuple[int, Any, list[Call]]] = []
        by_assignor: dict[str, list[Call]] = {}
        for config_id in range(start, stop):
            config = self.inner[config_id]
            calls = [c for c in record_calls(config, infos[config.assignor]) if c.ours != NOT_MODELLED]
            per_config.append((config_id, config, calls))
            by_assignor.setdefault(config.assignor, []).extend(calls)
        answers: dict[int, Outcome] = {}
        bridge = self._bridge() if any(by_assignor.values()) else None
        for assignor, calls in by_assignor.items():
            for call, answer in zip(calls, kafka_calls(bridge, assignor, calls), strict=True):
                answers[id(call)] = answer
        for key in self.invariant_ids():
            out.checked[key] += 0
        for config_id, config, calls in per_config:
            key = f"{config.assignor}/{SAME}"
            out.checked[key] += 1
            out.add_metric(f"{config.assignor}/assignor-calls", len(calls))
            differing = next(((n, c) for n, c in enumerate(calls, 1) if not same(c.ours, answers[id(c)])), None)
            if differing is None:
                continue
            if key in out.first:
                out.violated[key] += 1
                continue
            n, call = differing
            theirs = answers[id(call)]
            if call.server:
                data, exact = server_group_file(call), False
            else:
                data, exact = group_file(config.assignor, call)
            described = {**config.describe(), "replay": assign_command(config.assignor, data, self.version)}
            extra = {"call": f"{n} of {len(calls)} assignor calls of this configuration", "group_file": data,
                     "replay_exact": exact}
            self._record(out, key, config_id, described, readable(call, call.ours), readable(call, theirs), extra)
        return out

    def metric_names(self) -> list[str]:
        return [f"{a}/assignor-calls" for a in self.subjects]


def against_kafka(space: Any, version: str) -> _AgainstKafka:
    """The sweep of `space` against Kafka `version` (ValueError, one line, for an algorithm Kafka lacks)."""
    if space.name == "placement":
        return PlacementAgainstKafka(space, version)
    if space.name == "assignors":
        return GroupsAgainstKafka(space, version)
    raise ValueError(f"no sweep against Kafka for the space '{space.name}'")


def replay_group(assignor: str, group: Any, bridge: Any, prof: ReleaseProfile) -> tuple[Call, Outcome]:
    """`kcheck assign --against-kafka`: a group file's rebalance by the reference (as its leader would run it, as
    release `prof`) and by Kafka's assignor on exactly the same inputs: (the reference's call, Kafka's answer)."""
    server, _ = kafka_class(assignor)
    if server:
        group.single_owners()
    calls: list[Call] = []
    client = recording(prof.assignor(assignor), calls).factory()
    ppt = {t: list(ps) for t, ps in group.partitions_per_topic.items()}
    try:
        client.assign_partitions(ppt, group.subscriptions(assignor))
    except Exception:  # noqa: BLE001 - recorded as the reference's answer, compared with Kafka's
        pass
    (call,) = calls
    if call.ours == NOT_MODELLED:
        return call, NOT_MODELLED
    return call, kafka_calls(bridge, assignor, [call])[0]
