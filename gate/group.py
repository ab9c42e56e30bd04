"""`kcheck verify-group`: a consumer group's `kafka-consumer-groups --describe` output judged.

Per group: its lag per partition, its members and what each owns, and the assignment invariants of
`invariants/assignment.py` on what the paste shows: every partition of the topics the group consumes owned by one
member (`assignment.complete`: nothing owned twice, nothing left to nobody) and the balance the group's assignor
promises, the assignor being the one `--state` names (ASSIGNMENT-STRATEGY; the KIP-848 server assignors `uniform` and
`range` when the group uses the consumer protocol). The promises are the reference registry's
(`reference/assignors/registry.py`), and for range, client or server, the balance of each topic on its own
(`RangeAssignor`'s javadoc: per topic, the first members get one partition more); a balance the assignor does not
promise is a soft finding. A KIP-848 group's target assignment (4.0's `--members --verbose`) is the assignor's
output, judged as such; its current assignment must own each partition at most once while members reconcile.

What the output cannot tell is said per group instead of being guessed: subscriptions (judged as if every member
subscribes to every topic the group owns), partitions with neither an owner nor a committed offset (not listed),
whether a member is alive, and that lag is one snapshot.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcheck.inputs.formats import InputError, read_text, shown
from kcheck.inputs.group_describe import GroupPaste, GroupView, merge, parse_group_describe
from kcheck.invariants.assignment import AssignmentSubject
from kcheck.invariants.registry import Report, Violation, check_all
from kcheck.model.group import PartitionInfo, Subscription
from kcheck.model.vocabulary import TopicPartition

COMPLETE, BALANCED, OPTIMAL = "assignment.complete", "assignment.balanced", "assignment.optimally-balanced"
_REBALANCING = {"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling", "rebalancing"}
# What a describe never shows, for the invariants verify-group does not run.
_NEVER = {
    "assignment.valid": "subscriptions are not in kafka-consumer-groups output",
    "assignment.sticky": "one describe has no previous assignment to compare with",
    "assignment.cooperative-safety": "one describe is one moment, not the two rounds of a cooperative rebalance",
    "assignment.rack-quality": "kafka-consumer-groups prints no racks",
}
_CLASSIC = {name: name for name in ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform")}
_SERVER = {"uniform": "uniform", "range": "server-range"}


@dataclass
class Member:
    id: str
    client: str | None = None
    host: str | None = None
    instance: str | None = None
    partitions: list[TopicPartition] | None = None  # None: not shown (counts only)
    count: int | None = None
    target: list[TopicPartition] | None = None  # a KIP-848 member's target assignment (4.0's --verbose)


@dataclass
class LagRow:
    tp: TopicPartition
    current: int | None
    log_end: int | None
    lag: int | None
    owners: list[str]  # member ids, as printed (two when the group has it twice)


@dataclass
class Verdict:
    group: GroupView
    state: str | None
    state_from: str
    protocol: str | None  # "classic", "consumer" (KIP-848) or None: the paste does not tell
    strategy: str | None  # ASSIGNMENT-STRATEGY as printed (or --assignor)
    assignor: str | None  # its name in kcheck's registry, when kcheck knows it
    members: list[Member]
    lag: list[LagRow]
    ownership_from: str | None
    report: Report
    guarantees: frozenset[str]
    pending: list[TopicPartition] = field(default_factory=list)  # KIP-848: in a target, in no current assignment
    cannot: list[str] = field(default_factory=list)  # what this paste cannot tell, said plainly
    notes: list[str] = field(default_factory=list)

    @property
    def broken(self) -> list[str]:
        return sorted({v.invariant for v in self.report.violations if v.invariant in self.guarantees})

    @property
    def failed(self) -> bool:
        return bool(self.report.hard_violations or self.broken)

    @property
    def name(self) -> str:
        return "(not named in the paste)" if self.group.name is None else self.group.name


# ---------------------------------------------------------------------------------------------
# what the paste says about a group


def _state(g: GroupView) -> tuple[str | None, str]:
    if g.states:
        return g.states[-1].state, "--state"
    kinds = [k for _, k in g.notes]
    if "missing" in kinds:
        return "Dead", "the tool's 'does not exist'"
    if "empty" in kinds:
        return "Empty", "the tool's 'has no active members'"
    if "rebalancing" in kinds:
        return "rebalancing", "the tool's 'is rebalancing' warning"
    return None, ""


def _protocol(g: GroupView) -> str | None:
    epochs = [m.current_epoch for m in g.members or ()] + [m.target_epoch for m in g.members or ()]
    epochs += [s.group_epoch for s in g.states]
    if any(e is not None for e in epochs) or any(s.strategy == "uniform" for s in g.states):
        return "consumer"
    if {"CURRENT-EPOCH", "GROUP-EPOCH"} & g.columns and (g.members or g.states) and \
            not any(s.state == "Empty" for s in g.states):
        return "classic"  # 4.0's verbose columns print '-' for a classic group
    return None


def _members(g: GroupView) -> list[Member]:
    out: dict[str, Member] = {}
    for m in g.members or ():
        known = out.get(m.consumer)  # a second members table of the group (--members after --members --verbose)
        out[m.consumer] = Member(
            m.consumer, m.client, m.host, m.instance,
            list(m.assignment) if m.assignment is not None else (known.partitions if known else None), m.count,
            list(m.target) if m.target is not None else (known.target if known else None))
    for r in g.offsets or ():
        if r.consumer is not None and r.consumer not in out:
            out[r.consumer] = Member(r.consumer, r.client, r.host)
    return list(out.values())


def _offset_owners(g: GroupView) -> dict[str, list[TopicPartition]] | None:
    if not any(r.consumer is not None for r in g.offsets or ()):
        return None
    owned: dict[str, list[TopicPartition]] = {}
    for r in g.offsets or ():
        if r.consumer is not None:
            tps = owned.setdefault(r.consumer, [])
            if r.tp is not None and r.tp not in tps:
                tps.append(r.tp)
    return owned


def ownership(g: GroupView, members: list[Member]) -> str | None:
    """Fill each member's partitions from the best table the paste has; the table used, or None."""
    if g.members is not None and g.verbose and all(m.anonymous is None for m in g.members):
        return "--members --verbose"
    owned = _offset_owners(g)
    if owned is None:
        return None
    for m in members:
        m.partitions = owned.get(m.id, [])
    return "the offsets table"


def _lag(g: GroupView) -> list[LagRow]:
    rows: dict[TopicPartition, LagRow] = {}
    for r in g.offsets or ():
        if r.tp is None:
            continue
        row = rows.setdefault(r.tp, LagRow(r.tp, r.current, r.log_end, r.lag, []))
        if r.consumer is not None and r.consumer not in row.owners:
            row.owners.append(r.consumer)
    return sorted(rows.values(), key=lambda x: (x.tp.topic, x.tp.partition))


# ---------------------------------------------------------------------------------------------
# the invariants on what the paste shows


def _subject(owned: Mapping[str, Sequence[TopicPartition]], partitions: Iterable[TopicPartition],
             topics: Sequence[str]) -> AssignmentSubject:
    """Members owning `owned`, each taken to subscribe to every one of `topics` (the paste has no subscriptions)."""
    per_topic: dict[str, list[PartitionInfo]] = {t: [] for t in topics}
    for tp in sorted(set(partitions), key=lambda x: (x.topic, x.partition)):
        if tp.topic in per_topic:
            per_topic[tp.topic].append(PartitionInfo(tp.topic, tp.partition))
    subs = {m: Subscription(tuple(topics)) for m in owned}
    return AssignmentSubject(per_topic, subs, {m: list(tps) for m, tps in owned.items()})


def _run(subject: AssignmentSubject, only: set[str]) -> Report:
    return check_all(subject, "assignment", only)


def _per_topic(owned: Mapping[str, Sequence[TopicPartition]], partitions: Iterable[TopicPartition],
               topics: Sequence[str]) -> Report:
    """`assignment.balanced` on each topic alone: what range (client or server) promises."""
    found: list[Violation] = []
    for t in topics:
        mine = {m: [tp for tp in tps if tp.topic == t] for m, tps in owned.items()}
        for v in _run(_subject(mine, [tp for tp in partitions if tp.topic == t], [t]), {BALANCED}).violations:
            found.append(Violation(v.invariant, v.severity, f"topic {t} / {v.where}", f"topic {t}: {v.message}",
                                   {**v.detail, "topic": t}))
    return Report((BALANCED,), {}, tuple(found))


def _counts_subject(counts: Mapping[str, int]) -> AssignmentSubject:
    """Counts only (`--members`, or 3.8/3.9's nameless assignments): one stand-in topic whose partitions are dealt
    out in those counts, which is all `assignment.balanced` reads when subscriptions are equal."""
    total = sum(counts.values())
    tps = [TopicPartition("(partitions)", i) for i in range(total)]
    owned, i = {}, 0
    for m, n in counts.items():
        owned[m], i = tps[i:i + n], i + n
    return _subject(owned, tps, ["(partitions)"])


def _combine(reports: Iterable[Report], skipped: Mapping[str, str]) -> Report:
    checked: list[str] = []
    found: list[Violation] = []
    for r in reports:
        checked += [c for c in r.checked if c not in checked]
        found += r.violations
    return Report(tuple(checked), {k: v for k, v in skipped.items() if k not in checked}, tuple(found))


def judge(v: Verdict, owned: dict[str, list[TopicPartition]] | None, counts: dict[str, int] | None,
          target: dict[str, list[TopicPartition]] | None) -> Report:
    """The assignment invariants on what the paste shows, and why each of the others is not judged."""
    skipped = dict(_NEVER)
    state = v.state
    if state in ("Empty", "Dead"):
        why = "the group has no active members" if state == "Empty" else "the group does not exist"
        return _combine([], {**skipped, COMPLETE: why, BALANCED: why, OPTIMAL: why})
    if target is not None:  # KIP-848: the target is the assignor's output; the current must never share
        reports = _judge_assignment(v, target, "target assignment")
        if owned is not None and owned != target:
            current = _run(_subject(owned, [tp for tps in owned.values() for tp in tps], _topics(owned)), {COMPLETE})
            reports.append(current)
        return _combine(reports, skipped)
    if state in _REBALANCING:
        why = (f"the group is rebalancing ({state}): a classic group's members hold no settled assignment until "
               "it ends")
        return _combine([], {**skipped, COMPLETE: why, BALANCED: why, OPTIMAL: why})
    if owned is not None:
        return _combine(_judge_assignment(v, owned, "assignment"), skipped)
    if counts is not None:
        return _combine(_judge_counts(v, counts), {**skipped, COMPLETE: "the paste shows how many partitions each "
                                                   "member has, not which (--members --verbose or --offsets does)"})
    why = "the paste shows no member's partitions (--members --verbose or --offsets does)"
    return _combine([], {**skipped, COMPLETE: why, BALANCED: why, OPTIMAL: why})


def _topics(owned: Mapping[str, Sequence[TopicPartition]]) -> list[str]:
    return sorted({tp.topic for tps in owned.values() for tp in tps})


def _judge_assignment(v: Verdict, owned: dict[str, list[TopicPartition]], what: str) -> list[Report]:
    topics = _topics(owned)
    seen = {tp for tps in owned.values() for tp in tps} | {row.tp for row in v.lag if row.tp.topic in topics}
    subject = _subject(owned, seen, topics)
    if any(len(ms) > 1 for ms in subject.holders.values()):
        v.notes.append(f"the balance of this {what} counts a partition owned twice for its first owner only")
    reports = [_run(subject, {COMPLETE, OPTIMAL})]
    if v.assignor in ("range", "server-range"):
        reports.append(_per_topic(owned, seen, topics))
        v.notes.append(f"range balances each topic on its own ({what}): the first members in member-id order get "
                       "one partition more of each topic, so the counts across topics may differ by more than one")
    else:
        reports.append(_run(subject, {BALANCED}))
    return reports


def _judge_counts(v: Verdict, counts: dict[str, int]) -> list[Report]:
    if v.assignor in ("range", "server-range"):
        v.cannot.append("range balances each topic on its own, and these counts do not say which topic each "
                        "partition is of: its balance is not judged")
        return [_run(_counts_subject(counts), {OPTIMAL})]
    return [_run(_counts_subject(counts), {BALANCED, OPTIMAL})]


# ---------------------------------------------------------------------------------------------
# a group's verdict


def _assignor(strategy: str | None, protocol: str | None) -> str | None:
    if strategy is None:
        return None
    return (_SERVER if protocol == "consumer" else _CLASSIC).get(strategy)


def _guarantees(assignor: str | None) -> frozenset[str]:
    from kcheck.reference.assignors.registry import ASSIGNORS

    base = frozenset({COMPLETE})  # every assignor's contract (ConsumerPartitionAssignor)
    if assignor is None:
        return base
    promised = ASSIGNORS[assignor].guarantees & {COMPLETE, BALANCED}
    if assignor in ("range", "server-range"):  # per topic: RangeAssignor's javadoc, KIP-848's RangeAssignor
        promised |= {BALANCED}
    return base | promised


def verdict(g: GroupView, assignor_option: str | None) -> Verdict:
    state, state_from = _state(g)
    protocol = _protocol(g)
    strategy = next((s.strategy for s in reversed(g.states) if s.strategy), None)
    if strategy is None and assignor_option is not None and state not in ("Empty", "Dead"):
        strategy = assignor_option
    assignor = _assignor(strategy, protocol)
    members = _members(g)
    v = Verdict(g, state, state_from, protocol, strategy, assignor, members, _lag(g), None,
                Report((), {}, ()), _guarantees(assignor))
    v.ownership_from = ownership(g, members)
    owned = {m.id: m.partitions for m in members if m.partitions is not None} if v.ownership_from else None
    counts = {m.id: m.count for m in members if m.count is not None} if g.members else None
    target = {m.id: m.target for m in members if m.target is not None} or None
    if target is not None and owned is not None:
        current = {tp for tps in owned.values() for tp in tps}
        v.pending = sorted({tp for tps in target.values() for tp in tps} - current,
                           key=lambda x: (x.topic, x.partition))
    v.report = judge(v, owned, counts, target)
    v.cannot += cannot_tell(v, owned)
    v.notes += lag_notes(v, owned)
    return v


def lag_notes(v: Verdict, owned: Mapping[str, Sequence[TopicPartition]] | None) -> list[str]:
    """What the lag table says beyond its numbers: partitions nobody consumes, lag below zero."""
    out = []
    waiting = sum(r.lag for r in v.lag if not r.owners and r.lag is not None and r.lag > 0)
    if v.state == "Empty" and waiting:
        out.append(f"no active members: nothing consumes these partitions, and their lag ({waiting:,}) grows with "
                   "every produce")
    in_scope = set(_topics(owned or {}))
    idle = sorted({r.tp.topic for r in v.lag if not r.owners} - in_scope) if owned else []
    if idle:
        out.append(f"committed offsets of topic(s) no member owns a partition of ({', '.join(idle)}): the group may "
                   "no longer subscribe to them, or every member that did is gone; not judged")
    below = [r.tp for r in v.lag if r.lag is not None and r.lag < 0]
    if below:
        out.append(f"lag below zero on {_tps(below)}: the committed offset is above the log-end offset printed, so "
                   "either the tool read the log end wrong in this snapshot or the log was cut below the group's "
                   "commit (an unclean leader election, a topic deleted and re-created); on the latter the consumer "
                   "resets by auto.offset.reset")
    return out


LAG_SNAPSHOT = ("lag is one snapshot: the log-end offset moves with every produce and the committed offset with "
                "every commit; two describes some seconds apart show whether a partition progresses")
ALIVE = ("whether each member is alive: a member that crashed or hangs keeps its partitions until its session times "
         "out (session.timeout.ms, 45 s by default from 3.0; group.consumer.session.timeout.ms for KIP-848 groups), "
         "and their lag grows meanwhile")
UNSEEN = ("partitions with neither an owner nor a committed offset are not listed: a partition missing from every "
          "table cannot be seen (kafka-topics --describe lists them all)")
GENERAL = (LAG_SNAPSHOT, ALIVE, UNSEEN)  # said once for a whole paste in the text report


def cannot_tell(v: Verdict, owned: dict[str, list[TopicPartition]] | None) -> list[str]:
    """What this group's paste cannot tell, plainly, so a clean result is not read as more than it is."""
    g = v.group
    active = v.state not in ("Empty", "Dead")
    out = [LAG_SNAPSHOT if g.offsets is not None else "no offsets table (--describe or --offsets): no lag"]
    if v.members and active:
        out.append(ALIVE)
    if owned:
        out += [f"subscriptions: not in the output; judged as if every member subscribes to every topic the group "
                f"owns partitions of ({', '.join(_topics(owned))})", UNSEEN]
    if g.members is None and active:
        out.append("members without partitions: the offsets table leaves them out from 2.3 (--members lists them)")
    if any(m.anonymous is not None for m in g.members or ()):
        out.append("this release's --members --verbose (3.8, 3.9) prints no topic names: "
                   + ("ownership is read from the offsets table" if v.ownership_from else
                      "only the counts per member are judged"))
    if v.state is None:
        out.append("the group's state: no --state table; judged as if Stable (the tool's 'is rebalancing' warning "
                   "goes to stderr, which a paste of stdout alone leaves out)")
    if v.strategy is None and active:
        out.append("the assignor: no --state table names it (nor --assignor): balance is reported, not held to an "
                   "assignor's promise")
    elif v.assignor is None and v.strategy is not None:
        out.append(f"the assignor {shown(v.strategy)!r} is not one kcheck knows: only what every assignor must do "
                   "(each partition owned once) is held to")
    return out


def verify_groups(paste: GroupPaste, assignor_option: str | None = None) -> list[Verdict]:
    return [verdict(g, assignor_option) for g in paste.groups.values()]


# ---------------------------------------------------------------------------------------------
# output


def _tps(tps: Sequence[TopicPartition] | None) -> str:
    from kcheck.inputs.group_file import partition_runs

    return "?" if tps is None else (partition_runs(tps) or "-")


def verdict_json(v: Verdict) -> dict[str, Any]:
    return {
        "group": v.group.name, "state": v.state, "state_from": v.state_from or None, "protocol": v.protocol,
        "assignment_strategy": v.strategy, "assignor": v.assignor, "guarantees": sorted(v.guarantees),
        "ownership_from": v.ownership_from,
        "members": [{"member": m.id, "client": m.client, "host": m.host, "instance": m.instance,
                     "partitions": None if m.partitions is None else [str(tp) for tp in m.partitions],
                     "count": len(m.partitions) if m.partitions is not None else m.count,
                     **({"target": [str(tp) for tp in m.target]} if m.target is not None else {})}
                    for m in v.members],
        "lag": [{"partition": str(r.tp), "committed": r.current, "log_end": r.log_end, "lag": r.lag,
                 "owners": r.owners} for r in v.lag],
        "total_lag": sum(r.lag for r in v.lag if r.lag is not None and r.lag > 0),
        "negative_lag": [str(r.tp) for r in v.lag if r.lag is not None and r.lag < 0],
        "pending": [str(tp) for tp in v.pending],
        "checked": list(v.report.checked), "not_judged": dict(v.report.skipped),
        "violations": [x.as_dict() for x in v.report.violations], "broken_guarantees": v.broken,
        "cannot_tell": v.cannot, "notes": v.notes, "ok": not v.failed,
    }


def _headline(v: Verdict) -> str:
    state = {None: "state not shown", "Dead": "Dead (the tool says it does not exist)"}.get(v.state, v.state)
    how = f", assignor {v.strategy}" if v.strategy else ""
    proto = {"consumer": " (consumer protocol, KIP-848)", "classic": " (classic protocol)"}.get(v.protocol or "", "")
    topics = {r.tp.topic for r in v.lag} | {tp.topic for m in v.members for tp in m.partitions or ()}
    return (f"Group {shown(v.name)}: {state}{how}{proto}, {len(v.members)} member(s), "
            f"{len(topics)} topic(s) seen")




def print_general(verdicts: Sequence[Verdict], out: Any) -> None:
    """What no group of the paste can tell, said once."""
    lines = [line for line in GENERAL if any(line in v.cannot for v in verdicts)]
    out.print("Not judged in any group: " + "; ".join(f"{inv} ({why})" for inv, why in _NEVER.items()),
              markup=False)
    for line in lines:
        out.print(f"Cannot tell: {line}", markup=False)


def _member_lag(lags: list[int | None]) -> str:
    """A member's lag: the sum over its partitions; '-' when none has a committed offset, '+' when some have not."""
    known = [x for x in lags if x is not None]
    if not known:
        return "-"
    return f"{sum(known):,}" + ("+" if len(known) < len(lags) else "")


def lag_table(v: Verdict) -> Any:
    from rich.markup import escape
    from rich.table import Table

    names = {m.id: m.client or m.id for m in v.members}
    table = Table(title="Lag per partition", title_justify="left")
    for col in ("partition", "committed", "log end", "lag", "owner"):
        table.add_column(col, overflow="fold", justify="left" if col in ("partition", "owner") else "right")
    for r in v.lag:
        owners = ", ".join(escape(shown(names.get(o, o))) for o in r.owners) or "- (no member)"
        table.add_row(escape(shown(str(r.tp))), _n(r.current), _n(r.log_end), _n(r.lag), owners)
    known = [r.lag for r in v.lag if r.lag is not None]
    table.caption = (f"total lag {sum(x for x in known if x > 0):,} over {len(known)} partition(s)"
                     + (f"; {len(v.lag) - len(known)} without a committed offset (lag unknown)"
                        if len(known) < len(v.lag) else ""))
    table.caption_justify = "left"
    return table


def _n(x: int | None) -> str:
    return "-" if x is None else f"{x:,}"


# ---------------------------------------------------------------------------------------------
# the command




def read_pastes(files: Sequence[str]) -> GroupPaste:
    if sum(f == "-" for f in files) > 1:
        raise InputError("FILE", "'-' (stdin) given more than once")
    pastes = []
    for f in files:
        source = "<stdin>" if f == "-" else f
        text = sys.stdin.read() if f == "-" else read_text(f)
        if not text.strip():
            raise InputError(source, "is empty")
        pastes.append(parse_group_describe(text, source))
    paste = merge(pastes)
    if all(g.offsets is None and g.members is None and not g.states and {k for _, k in g.notes} == {"missing"}
           for g in paste.groups.values()):  # nothing to judge: a gate must not pass on a group that is not there
        names = ", ".join(repr(shown(str(name), 60)) for name in paste.groups)
        raise InputError(paste.source, f"kafka-consumer-groups found no group {names} (it does not exist); "
                                       "nothing to verify")
    return paste


def _check_assignor(option: str | None) -> None:
    known = sorted(set(_CLASSIC) | {"server-range"})
    if option is not None and option not in known:
        raise InputError("--assignor", f"{shown(option, 60)!r} is not an assignor kcheck knows "
                                       f"({', '.join(known)})")




__all__ = ["Member", "Verdict", "read_pastes", "verdict", "verify_groups"]
