"""kcheck's consumer-group description (JSON): the topics a group's assignor sees and its members.

```json
{"topics": {"orders": {"partitions": 3, "racks": [["a", "b"], ["b", "c"], ["c", "a"]]},
            "payments": 3},
 "members": {"c1": {"topics": ["orders", "payments"], "owned": ["orders-0", "payments-1"], "generation": 4,
                    "rack": "a", "instance_id": null},
             "c2": {"topics": ["orders"]},
             "c3": ["payments"]}}
```

* `topics`: name -> partition count, or `{"partitions": N, "racks": [...]}` where `racks` has one entry
  per partition: the racks of its replicas, in replica order (`null` for a broker without a rack). They
  become `PartitionInfo.replicas` (brokers numbered by replica position: only their racks matter to an
  assignor), which is what KIP-881's rack-aware assignment reads.
* `members`: member id -> subscription, in the order the group leader put them in its `HashMap` (the
  file's order). A list is short for `{"topics": [...]}`. `owned`: the partitions the member reports
  owning, as `"topic-partition"` strings or `{"topic": ..., "partition": ...}` objects; they need the
  `generation` they were owned in. `rack` is `client.rack`, `instance_id` is `group.instance.id`.
  The same partition owned by two members is accepted for the classic-protocol assignors, which resolve
  such claims by generation; the KIP-848 ones (uniform, server-range) refuse it, as their coordinator's
  current assignment cannot hold it.
* An optional top-level `description` (a string) is ignored.

What a member sends depends on its assignor, as on a real client (`Subscription` of the
`ConsumerProtocolSubscription` v3): every member sends its owned partitions, generation and rack; a
StickyAssignor member also sends its ownership as user data (`StickyAssignor.subscriptionUserData`:
schema V1, written with the reference's serializer), a CooperativeStickyAssignor member its generation
(`{generation:int32}`, -1 before it has one).

Every problem is an `InputError` naming the file and the place in it (`member c1`, `topic orders`,
`member c1: owned[2]`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kcheck.inputs.formats import InputError, control_problem
from kcheck.model.group import PartitionInfo, Subscription
from kcheck.model.vocabulary import INT32_MAX, Broker, TopicPartition

MAX_INT = INT32_MAX  # partition ids, counts and generations
# KRaft's scale target is ~2 million partitions per cluster; measured, `assign` takes 15 s and 0.7 GB per million
# (range), so 10 million would need minutes and ~7 GB: a typo should not look like a hang.
MAX_TOTAL_PARTITIONS = 2_000_000
# org.apache.kafka.common.internals.Topic.validate
_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_OWNED_RE = re.compile(r"(.+)-([0-9]+)")  # greedy: the partition is after the last '-'

_TOP_KEYS = ("topics", "members", "description")
_TOPIC_KEYS = ("partitions", "racks")
_MEMBER_KEYS = ("topics", "owned", "generation", "rack", "instance_id")


@dataclass(frozen=True)
class Member:
    id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int | None = None
    rack: str | None = None
    instance_id: str | None = None


@dataclass(frozen=True)
class Group:
    """A parsed group description: the topics' partitions (file order) and the members (file order)."""

    partitions_per_topic: Mapping[str, Sequence[PartitionInfo]]
    members: tuple[Member, ...]
    source: str = "<group>"  # the file, for error messages

    def single_owners(self) -> None:
        """Raise unless every owned partition has one owner: the KIP-848 coordinator's current assignment
        maps each partition to one member, so a shared one cannot reach a server-side assignor."""
        owner: dict[TopicPartition, str] = {}
        for m in self.members:
            for i, tp in enumerate(m.owned):
                if tp in owner:
                    raise InputError(self.source, f"member {_name(m.id)}: owned[{i}]: partition {tp} is also owned "
                                                  f"by member {_name(owner[tp])}; a KIP-848 group's current "
                                                  "assignment gives a partition to one member only")
                owner[tp] = m.id

    @property
    def has_racks(self) -> bool:
        return any(b.rack for parts in self.partitions_per_topic.values() for p in parts for b in p.replicas)

    def subscriptions(self, assignor: str) -> dict[str, Subscription]:
        """What each member sends when the group uses `assignor` (a registry name), in member order."""
        from kcheck.reference.assignors.sticky import (
            DEFAULT_GENERATION,
            encode_cooperative_user_data,
            serialize_topic_partition_assignment,
        )

        subs: dict[str, Subscription] = {}
        for m in self.members:
            user_data: bytes | None = None
            if assignor == "sticky" and m.generation is not None:
                # A fresh StickyAssignor sends no user data; after onAssignment, its assignment and generation.
                user_data = serialize_topic_partition_assignment(m.owned, m.generation)
            elif assignor == "cooperative-sticky":
                user_data = encode_cooperative_user_data(
                    DEFAULT_GENERATION if m.generation is None else m.generation)
            subs[m.id] = Subscription(m.topics, user_data, m.owned, m.generation, m.rack, m.instance_id)
        return subs


def parse_group(text: str, source: str) -> Group:
    doc = _load(text, source)
    top = _object(doc, "the file", source, _TOP_KEYS)
    for key in ("topics", "members"):
        if key not in top:
            raise InputError(source, f'missing "{key}" (a group description has "topics" and "members")')
    if "description" in top and not isinstance(top["description"], str):
        raise InputError(source, f'"description" must be a string, got {_show(top["description"])}')
    ppt = _topics(top["topics"], source)
    return Group(ppt, _members(top["members"], ppt, source), source)


# ---------------------------------------------------------------------------------------------
# topics


def _topics(value: object, source: str) -> dict[str, list[PartitionInfo]]:
    if not isinstance(value, dict):
        raise InputError(source, f'"topics" must be an object of topic name -> partition count, got {_show(value)}')
    _no_duplicates(value, source, lambda k: f"topic {k} is listed twice")
    if not value:
        raise InputError(source, '"topics" is empty: the group needs at least one topic')
    specs: list[tuple[str, int, list[tuple[Broker, ...]] | None]] = []
    total = 0
    for name, spec in value.items():
        place = f"topic {_name(name)}"
        _topic_name(name, place, source)
        racks = None
        if isinstance(spec, dict):
            obj = _object(spec, place, source, _TOPIC_KEYS)
            if "partitions" not in obj:
                raise InputError(source, f'{place}: missing "partitions"')
            count = obj["partitions"]
            racks = obj.get("racks")
        else:
            count = spec
        if type(count) is not int or not 1 <= count <= MAX_INT:
            raise InputError(source, f"{place}: the partition count must be an integer from 1 to {MAX_INT}, "
                                     f"got {_show(count)}")
        total += count
        if total > MAX_TOTAL_PARTITIONS:  # checked before any partition is built
            raise InputError(source, f"{place}: more than {MAX_TOTAL_PARTITIONS:,} partitions in all")
        specs.append((name, count, _racks(racks, count, place, source) if racks is not None else None))
    return {name: [PartitionInfo(name, p, None, replicas[p] if replicas else ()) for p in range(count)]
            for name, count, replicas in specs}


def _racks(value: object, count: int, place: str, source: str) -> list[tuple[Broker, ...]]:
    if not isinstance(value, list):
        raise InputError(source, f'{place}: "racks" must be a list with the replica racks of each partition, '
                                 f"got {_show(value)}")
    if len(value) != count:
        raise InputError(source, f'{place}: "racks" has {len(value)} entries but the topic has {count} partitions')
    out = []
    for p, entry in enumerate(value):
        where = f"{place}: racks[{p}] (partition {p})"
        if not isinstance(entry, list) or not entry:
            raise InputError(source, f"{where}: expected a non-empty list of the racks of its replicas, "
                                     f"got {_show(entry)}")
        brokers = []
        for j, rack in enumerate(entry):
            if rack is not None and (not isinstance(rack, str) or not rack.strip()):
                raise InputError(source, f"{where}: replica {j}'s rack must be a rack name or null, got {_show(rack)}")
            if rack is not None and (problem := control_problem(rack)) is not None:
                raise InputError(source, f"{where}: replica {j}'s rack {_show(rack)} {problem}")
            brokers.append(Broker(j, rack))
        out.append(tuple(brokers))
    return out


# ---------------------------------------------------------------------------------------------
# members


def _members(value: object, ppt: Mapping[str, Sequence[PartitionInfo]], source: str) -> tuple[Member, ...]:
    if not isinstance(value, dict):
        raise InputError(source, f'"members" must be an object of member id -> subscription, got {_show(value)}')
    _no_duplicates(value, source, lambda k: f"member {k} is listed twice")
    if not value:
        raise InputError(source, '"members" is empty: the group has no member to assign to')
    members = []
    instance_owner: dict[str, str] = {}
    for member_id, spec in value.items():
        place = f"member {_name(member_id)}"
        if not member_id.strip():
            raise InputError(source, f"{place}: a member id cannot be empty")
        if (problem := control_problem(member_id)) is not None:
            raise InputError(source, f"{place}: the member id {problem}")
        if isinstance(spec, list):
            spec = {"topics": spec}
        obj = _object(spec, place, source, _MEMBER_KEYS, 'an object like {"topics": ["orders"]} or a topic list')
        if "topics" not in obj:
            raise InputError(source, f'{place}: missing "topics" (the topics it subscribes to)')
        topics = _subscribed(obj["topics"], ppt, place, source)
        generation = obj.get("generation")
        if generation is not None and (type(generation) is not int or not 0 <= generation <= MAX_INT):
            raise InputError(source, f'{place}: "generation" must be an integer >= 0 or null, got {_show(generation)}')
        owned = _owned(obj.get("owned", []), ppt, place, source)
        if owned and generation is None:
            raise InputError(source, f'{place}: "owned" partitions need the "generation" the member owned them in')
        rack = _optional_name(obj.get("rack"), "rack", place, source)
        instance_id = _optional_name(obj.get("instance_id"), "instance_id", place, source)
        if instance_id is not None:
            if instance_id in instance_owner:
                raise InputError(source, f"{place}: instance_id {_name(instance_id)} is already member "
                                         f"{_name(instance_owner[instance_id])}'s (a static member joins once)")
            instance_owner[instance_id] = member_id
        members.append(Member(member_id, topics, owned, generation, rack, instance_id))
    return tuple(members)


def _subscribed(value: object, ppt: Mapping[str, object], place: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise InputError(source, f'{place}: "topics" must be a list of topic names, got {_show(value)}')
    seen: set[str] = set()
    for t in value:
        if t not in ppt:
            raise InputError(source, f'{place}: subscribes to unknown topic {_name(t)} (not in "topics")')
        if t in seen:
            raise InputError(source, f"{place}: subscribes to topic {t} twice")
        seen.add(t)
    return tuple(value)


def _owned(value: object, ppt: Mapping[str, Sequence[PartitionInfo]], place: str,
           source: str) -> tuple[TopicPartition, ...]:
    if not isinstance(value, list):
        raise InputError(source, f'{place}: "owned" must be a list of partitions like "orders-0", got {_show(value)}')
    out: list[TopicPartition] = []
    seen: set[TopicPartition] = set()
    for i, entry in enumerate(value):
        where = f"{place}: owned[{i}]"
        if isinstance(entry, str):
            m = _OWNED_RE.fullmatch(entry)
            if m is None or int(m.group(2)) > MAX_INT:
                raise InputError(source, f'{where}: {_show(entry)} is not a partition like "orders-0"')
            topic, partition = m.group(1), int(m.group(2))
        elif isinstance(entry, dict):
            obj = _object(entry, where, source, ("topic", "partition"))
            topic_value, partition_value = obj.get("topic"), obj.get("partition")
            if not isinstance(topic_value, str):
                raise InputError(source, f'{where}: "topic" must be a topic name, got {_show(topic_value)}')
            if type(partition_value) is not int or not 0 <= partition_value <= MAX_INT:
                raise InputError(source, f'{where}: "partition" must be an integer >= 0, got {_show(partition_value)}')
            topic, partition = topic_value, partition_value
        else:
            raise InputError(source, f'{where}: expected "topic-partition" or {{"topic": ..., "partition": ...}}, '
                                     f"got {_show(entry)}")
        if topic not in ppt:
            raise InputError(source, f'{where}: partition {_name(topic)}-{partition} is of unknown topic '
                                     f'{_name(topic)} (not in "topics")')
        tp = TopicPartition(topic, partition)
        if partition >= len(ppt[topic]):
            raise InputError(source, f"{where}: partition {tp} does not exist (topic {topic} has "
                                     f"{len(ppt[topic])} partitions: 0..{len(ppt[topic]) - 1})")
        if tp in seen:
            raise InputError(source, f"{where}: partition {tp} is listed twice")
        seen.add(tp)
        out.append(tp)
    return tuple(out)


def _optional_name(value: object, key: str, place: str, source: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(source, f'{place}: "{key}" must be a string or null, got {_show(value)}')
    if not value.strip():
        raise InputError(source, f'{place}: "{key}" is empty (use null for none)')
    if (problem := control_problem(value)) is not None:
        raise InputError(source, f'{place}: "{key}" {_show(value)} {problem}')
    return value


def _topic_name(name: str, place: str, source: str) -> None:
    if not _TOPIC_RE.fullmatch(name) or name in (".", ".."):
        why = ("is longer than 249 characters" if len(name) > 249 else
               "cannot be '.' or '..'" if name in (".", "..") else
               "is not a legal topic name (ASCII letters, digits, '.', '_' and '-' only)")
        raise InputError(source, f"{place}: the name {why}")


# ---------------------------------------------------------------------------------------------
# JSON helpers


class _Obj(dict[str, Any]):
    """A JSON object that remembers its keys in order, duplicates included (json.loads keeps the last)."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.keys_in_order = [k for k, _ in pairs]


def _load(text: str, source: str) -> Any:
    try:
        return json.loads(text.removeprefix("\ufeff"), object_pairs_hook=_Obj)
    except json.JSONDecodeError as e:
        raise InputError(source, f"invalid JSON: {e.msg}", e.lineno, e.colno) from None
    except (ValueError, RecursionError) as e:  # e.g. an integer with more than 4300 digits, deep nesting
        raise InputError(source, f"invalid JSON: {type(e).__name__}: {e}") from None


def _no_duplicates(obj: dict[str, Any], source: str, message: Any) -> None:
    seen: set[str] = set()
    for k in getattr(obj, "keys_in_order", ()):
        if k in seen:
            raise InputError(source, message(_name(k)))
        seen.add(k)


def _object(value: object, place: str, source: str, allowed: Sequence[str],
            expected: str | None = None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(source, f"{place}: expected {expected or 'an object'}, got {_show(value)}")
    _no_duplicates(value, source, lambda k: f'{place}: "{k}" is given twice')
    for k in value:
        if k not in allowed:
            raise InputError(source, f'{place}: unknown key {_show(k)} (expected {", ".join(allowed)})')
    return value


def _name(text: str, limit: int = 60) -> str:
    """A name from the file shown in a message: as it is, unless it has spaces, quotes or controls, or is long."""
    if text and len(text) <= limit and text.isprintable() and not any(c.isspace() or c in "\"'" for c in text):
        return text
    return _show(text, limit)


def _show(value: object, limit: int = 40) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------
# Running an assignor on a group


@dataclass(frozen=True)
class AssignmentRun:
    """One assignor run on a group: its inputs as the assignor saw them and what came out.

    `assignment` is in member (file) order, every member present. For a cooperative assignor,
    `revoked` is what each member owned and must give up, and `withheld` what it is meant to get
    once the current owner has revoked it (under "" when the assignor does not say who gets it).
    """

    assignor: str
    cooperative: bool
    partitions_per_topic: Mapping[str, Sequence[PartitionInfo]]
    subscriptions: Mapping[str, Subscription]
    assignment: Mapping[str, Sequence[TopicPartition]]
    revoked: Mapping[str, Sequence[TopicPartition]]
    withheld: Mapping[str, Sequence[TopicPartition]]

    @property
    def partitions(self) -> int:
        return sum(len(ps) for ps in self.partitions_per_topic.values())


class AssignorFailure(Exception):
    """The assignor threw on a valid group (as Kafka's would at the group leader, failing the rebalance),
    or answered something that is not member -> [TopicPartition]. str(e) is one line."""


def run_assignor(info: Any, group: Group) -> AssignmentRun:
    """Run `info` (a `reference.assignors.registry.AssignorInfo`) on the group, as its leader would.

    A fresh assignor instance, as a newly elected leader has. The group is valid input, so what Kafka's
    assignor throws is the rebalance failing (`AssignorFailure`, exit 1), except where the reference says
    it does not model the case (`NotImplementedError`), which is an `InputError`: kcheck cannot answer.
    A user's `module:object` assignor that raises or answers something that is not member ->
    [TopicPartition] is the plug-in failing: a `PluginError` (one line, exit 2).
    """
    from kcheck.reference import plugins
    from kcheck.reference.assignors.registry import ASSIGNORS, ServerSideAdapter
    from kcheck.reference.assignors.sticky import CooperativeStickyAssignor, StickyAssignor
    from kcheck.reference.errors import KafkaError
    from kcheck.reference.plugins import PluginError

    where = f"{info.name} assignor"
    ppt = {t: list(ps) for t, ps in group.partitions_per_topic.items()}
    assignor = info.factory()
    # What the members send depends on the assignor class (also when it is given as module:object).
    subs = group.subscriptions("sticky" if isinstance(assignor, StickyAssignor) else
                               "cooperative-sticky" if isinstance(assignor, CooperativeStickyAssignor) else info.name)
    if isinstance(assignor, ServerSideAdapter):
        group.single_owners()
    users = ASSIGNORS.get(info.name) is not info  # a module:object assignor: its failures are its own (exit 2)
    try:
        result = assignor.assign_partitions(ppt, subs)
    except NotImplementedError as e:
        if users:
            raise plugins.failure(info.name, e) from e
        raise InputError(where, f"the reference does not model this group: {e}") from None
    except PluginError:  # a user's assignor called sys.exit or was interrupted: kcheck reports it, exit 2
        raise
    except Exception as e:
        if users:  # the user's code failed, not Kafka's: one line naming it and its frame
            raise plugins.failure(info.name, e) from e
        if isinstance(e, KafkaError):  # what Kafka throws at the group leader
            raise AssignorFailure(f"{where} throws {type(e).__name__}: {e}") from None
        raise  # a bug in the reference itself: keep the traceback

    problem = plugins.assignment_problem(result, subs, _show, _name)
    if problem is not None:
        raise PluginError(info.name, problem, "bad result") if users else AssignorFailure(f"{where} {problem}")
    assignment: dict[str, list[TopicPartition]] = {m: [] for m in subs}
    assignment.update((m, list(tps)) for m, tps in result.items())
    revoked: dict[str, list[TopicPartition]] = {}
    withheld: dict[str, list[TopicPartition]] = {}
    if info.cooperative:
        for m, s in subs.items():
            kept = set(assignment[m])
            revoked[m] = [tp for tp in s.owned_partitions if tp not in kept]
        withheld = _withheld(info, ppt, subs, assignment)
    return AssignmentRun(info.name, info.cooperative, ppt, subs, assignment, revoked, withheld)


def _withheld(info: Any, ppt: Mapping[str, Sequence[PartitionInfo]], subs: Mapping[str, Subscription],
              assignment: Mapping[str, list[TopicPartition]]) -> dict[str, list[TopicPartition]]:
    """CooperativeStickyAssignor drops the partitions changing owner after its sticky core assigned them:
    the core of a fresh instance, run on the same input, names the member each one is meant for."""
    from kcheck.reference.assignors.sticky import AbstractStickyAssignor, CooperativeStickyAssignor

    probe = info.factory()
    if isinstance(probe, CooperativeStickyAssignor):
        intended = AbstractStickyAssignor.assign_partitions(probe, ppt, subs)
        out = {}
        for m in subs:
            got = set(assignment[m])
            out[m] = [tp for tp in intended.get(m, []) if tp not in got]
        return out
    assigned = {tp for tps in assignment.values() for tp in tps}
    subscribed = {t for s in subs.values() for t in s.topics}
    orphans = [p.tp for t, ps in ppt.items() if t in subscribed for p in ps if p.tp not in assigned]
    return {"": orphans} if orphans else {}


def partition_runs(partitions: Sequence[TopicPartition]) -> str:
    """`orders 0-2,5; payments 1`: by topic (in order of first appearance), partition ids as sorted runs."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    parts = []
    for topic, ids in by_topic.items():
        ids.sort()
        runs: list[str] = []
        start = prev = ids[0]
        for cur in ids[1:]:
            if cur != prev + 1:
                runs.append(str(start) if start == prev else f"{start}-{prev}")
                start = cur
            prev = cur
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        parts.append(f"{topic} {','.join(runs)}")
    return "; ".join(parts)
