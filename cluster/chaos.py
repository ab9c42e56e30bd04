"""`kcheck chaos`: a fault campaign on a real Kafka cluster, with every client observation recorded and checked.

A campaign creates one topic (partitions, replication factor, and `min.insync.replicas` and
`unclean.leader.election.enable` as TOPIC configs, so one cluster runs both settings), runs the producers of
`--producers` (kcheck.cluster.producers: kafka-python idempotent or not, max in flight 1 or 5, acks=all or 1, and
the release's own Java VerifiableProducer; by default today's two, `plain` at acks=all and `acks1`, not idempotent)
at `--rate` records a second each, every value unique and naming its producer, session, partition and sequence
(`plain-0-2-000123`), and one consumer in a group that reads and commits after every poll. Meanwhile a fault
injector runs a schedule (a file, or drawn with `--seed` from the kinds in `--faults`). Fault kinds (the words of
kcheck's schedules, tables and JSON):

    kill         kill -9 of a broker (its end: `start`)
    lossy-kill   kill -9, then the broker's unflushed data cut away (cluster/lossy.py; opt-in: Kafka's defaults never
                 fsync per write and do not promise to survive losing the page cache); its end: `start`
    pause        SIGSTOP: the broker stops heartbeating and answering, the model's zombie (its end: `resume`)
    restart      a clean restart: controlled shutdown (SIGTERM), start, wait until unfenced
    shutdown     a controlled shutdown; the broker stays down until a later `start`
    start        start every stopped broker (or the one named), wait until unfenced
    resume       SIGCONT every paused broker (or the one named)
    elect-preferred  ElectLeaders (preferred) for every partition of the topic
    elect-unclean    ElectLeaders (unclean) for every partition: only where the topic allows unclean election,
                 otherwise skipped and said
    reassign     one partition moved to another replica set (one replica swapped for a broker outside it, or the
                 replica order rotated when every broker holds it)
    pause-followers  SIGSTOP of every in-sync follower of partition 0: its ISR shrinks to the leader after
                 replica.lag.time.max.ms, below a min.insync.replicas of 2, so acks=all writes wait in the purgatory
                 and then fail (NOT_ENOUGH_REPLICAS_AFTER_APPEND, a timeout) or are refused (NOT_ENOUGH_REPLICAS);
                 its end: `resume`
    delete-records   the producers go idle (kafka-python ones stop sending and wait for their answers; a Java one is
                 paused with SIGSTOP), DeleteRecords up to the high watermark of every partition (the log start
                 moves past every record an idle idempotent producer wrote: `UnifiedLog.maybeIncrementLogStartOffset`),
                 2 s, then they resume: their next batches continue sequences whose records are gone
    partition    (a cluster with --network: every node in its own namespace, kcheck.cluster.netns) the target cut from
                 every other node both ways, clients still reaching it; its end: `heal`
    partition-one-way      what the target sends to the other nodes dropped; it still hears them (end: `heal`)
    partition-from-quorum  a broker cut both ways from every controller only: it still serves clients and the
                 other brokers, a leader isolated from the quorum (end: `heal`)
    partition-bridge  the other nodes split in two sides (each role dealt alternately, in id order) cut from each
                 other both ways, the target in the middle reaching both (Jepsen's bridge; end: `heal`)
    slow-links   every link between the target and each other node, both ways, delayed 200 ms +- 50 ms; clients
                 unaffected (kcheck.cluster.netns's relay; end: `heal`)
    lossy-links  the same links dropping 20% of frames, in bursts (end: `heal`)
    heal         restore the links a network fault cut or shaped (without a random schedule's `ends`: every one)

A schedule file has one fault a line: `SECONDS KIND [TARGET]`, `#` comments. TARGET is a broker id, `leader` (the
leader of partition 0 when the fault fires) or `follower` (an in-sync follower of partition 0); without one, a
broker is drawn with the seed (`start`/`resume`: every stopped/paused broker). The election, reassign,
pause-followers and delete-records kinds take no target. In the transactions campaign (kcheck.cluster.txn_chaos)
TARGET may also be `coordinator`, the transaction coordinator's broker, and `elect-preferred coordinator` and
`reassign coordinator` move that coordinator (`Campaign.roles`). A step that fires late (a restart or start waits
until the broker is unfenced) delays every later step by as much, so the intervals between faults hold. Before a
fault that hits brokers or leaders (kill, pause, restart, shutdown, elections, pause-followers) the injector waits
up to 0.5 s for a kafka-python send in flight, so requests are mid-way when it strikes (the count is the fault's
note). A random schedule (`--seed`) injects one fault at a time: a fault, 3-8 s later its end where it has one, 1-4
s of quiet, and so on until `--duration`; with `--max-concurrent N` up to N faults overlap, never leaving no broker
running and answering, and each end brings back only its own fault's brokers (`random_schedule`). Every fault event
of the history names the schedule's step that did it, so overlapping faults can be told apart.

The JSON history (`--json`) has the shape of `history.schema.json`, shipped beside kcheck.cluster.history, whose
name and version every document carries.

After the last fault the campaign stops producing, heals the cluster (resumes, starts every broker, waits until
every replica is in the ISR and no reassignment is in flight, or `--heal-timeout`), lets the consumer catch up,
and reads every partition from its log start to its end: the final read. `kcheck.cluster.history` checks the
history. Exit: 0 clean, 1 a violation, 2 bad input, 4 the cluster never healed (the final read is incomplete).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from rich.markup import escape
from rich.table import Table

from kcheck.cluster import netns
from kcheck.cluster.history import (
    ANOMALIES,
    CHECKS,
    FAILOVER_BOUND,
    PRODUCER_KINDS,
    Commit,
    Fault,
    FinalRead,
    History,
    Quorum,
    Read,
    Verdict,
    check,
    event_text,
    history_document,
)
from kcheck.cluster.local import ClusterError, LocalCluster
from kcheck.cluster.producers import DEFAULT_PRODUCERS, Producer, make_producers, stall_watch
from kcheck.inputs.formats import InputError, read_text, topic_problem
from kcheck.runtime import interrupts
from kcheck.runtime.exit_codes import Exit

# Network partitions: links cut in the nodes' namespaces (kcheck.cluster.netns), only on a cluster with --network.
NETWORK_KINDS = ("partition", "partition-one-way", "partition-from-quorum", "partition-bridge", "slow-links",
                 "lossy-links")
SHAPE_KINDS = {"slow-links": netns.SLOW, "lossy-links": netns.LOSSY}  # links delayed or lossy, not cut
FAULT_KINDS = ("kill", "lossy-kill", "pause", "restart", "shutdown", "start", "elect-preferred", "elect-unclean",
               "reassign", "pause-followers", "delete-records", *NETWORK_KINDS)
SCHEDULE_KINDS = (*FAULT_KINDS, "resume", "heal")  # `resume` ends a pause, `heal` a partition
# Drawn by a random schedule unless --faults says otherwise: every kind but lossy-kill (opt-in) and the ends; with
# --network the partitions too.
DEFAULT_FAULTS = ("kill", "pause", "restart", "shutdown", "elect-preferred", "elect-unclean", "reassign")
NETWORK_FAULTS = (*DEFAULT_FAULTS, *NETWORK_KINDS)
BROKER_KINDS = ("kill", "lossy-kill", "pause", "restart", "shutdown", "start", "resume")
TOPIC_KINDS = ("elect-preferred", "elect-unclean", "reassign", "pause-followers", "delete-records")
# Roles a broker fault's target may name beside a node id; the controller roles need a quorum of 3 or more.
BROKER_ROLES = ("leader", "follower")
CONTROLLER_ROLES = ("active-controller", "controller")
# Roles only a campaign that defines them resolves (`Campaign.roles`): the transactions campaign's `coordinator`, the
# leader of the __transaction_state partition of its first transactional id (kcheck.cluster.txn_chaos). A
# topic-kind fault may also name one: MOVE_KINDS then move that partition's leader.
CAMPAIGN_ROLES = ("coordinator",)
MOVE_KINDS = ("elect-preferred", "reassign")
# The kinds that may hit a controller (partition-from-quorum cuts a broker from the controllers)
CONTROLLER_KINDS = ("kill", "pause", "restart", "shutdown", "partition", "partition-one-way", "partition-bridge",
                    "slow-links", "lossy-links")
ENDS = {"kill": "start", "lossy-kill": "start", "shutdown": "start", "pause": "resume", "pause-followers": "resume",
        **{k: "heal" for k in NETWORK_KINDS}}
# Faults that strike requests in flight: the injector first waits (briefly) for a send in flight.
IN_FLIGHT_KINDS = ("kill", "lossy-kill", "pause", "restart", "shutdown", "elect-preferred", "elect-unclean",
                   "pause-followers", *NETWORK_KINDS)

# Broker settings for a cluster `kcheck chaos` starts itself: Kafka's semantics, on a campaign's time scale.
CAMPAIGN_BROKER_CONFIG: dict[str, str] = {
    # a follower that stops fetching leaves the ISR after 3 s instead of 30 s (ReplicaManager's ISR shrink)
    "replica.lag.time.max.ms": "3000",
    # brokers heartbeat every 0.5 s instead of 2 s, so a resumed or restarted broker is unfenced sooner
    "broker.heartbeat.interval.ms": "500",
    # a follower notices a dead leader's socket within 5 s instead of 30 s
    "replica.socket.timeout.ms": "5000",
}
_LINE = re.compile(r"^\s*(\S+)\s+(\S+)(?:\s+(\S+))?\s*$")
_SECONDS = re.compile(r"[0-9]{1,9}(?:\.[0-9]{1,6})?")  # ASCII digits only: int() and float() take any script's
_BROKER = re.compile(r"[0-9]{1,9}")
# Ceilings, refused before anything starts (also in --help): a campaign of a day at most, 10,000 records a second
# per producer, an hour to heal, 10,000 faults in a schedule of at most 1 MiB.
MAX_SECONDS = 86_400.0
MAX_RATE = 10_000.0
MAX_HEAL_SECONDS = 3_600.0
MAX_PARTITIONS = 1_000
MAX_SCHEDULE_BYTES = 1 << 20
MAX_SCHEDULE_STEPS = 10_000
MAX_CONCURRENT = 16  # faults a random schedule lets overlap
JAVA_LONG = 2**63
# Kafka's internal topics (clients' `Topic.isInternal`) and KRaft's metadata log, which the controller refuses to
# create (`ControllerApis.createTopics`): a campaign never writes to them.
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata")


# What a shaped link does, as a fault's `shape` says it (kcheck.cluster.netns's figures, in netem's words).
SHAPES = {netns.SLOW: f"delay {netns.DELAY_MS}ms {netns.JITTER_MS}ms",
          netns.LOSSY: f"loss {netns.LOSS_PERCENT}% burst {netns.BURST_PERCENT}%"}


def bridge_sides(target: int, controllers: Sequence[int], brokers: Sequence[int]) -> tuple[list[int], list[int]]:
    """The two sides of a bridge whose middle is `target`: the other controllers dealt alternately into them in id
    order, then the other brokers the same way (each role starting on the first side), so that with three
    controllers and a controller in the middle, each side and the middle make a majority of the quorum."""
    sides: tuple[list[int], list[int]] = ([], [])
    for role in (controllers, brokers):
        for i, node in enumerate(n for n in sorted(role) if n != target):
            sides[i % 2].append(node)
    return sides


@dataclass(frozen=True)
class Step:
    t: float
    kind: str
    target: str | None = None  # a node id, a role (BROKER_ROLES, CONTROLLER_ROLES), or None
    line: int | None = None  # the schedule file's line
    ends: int | None = None  # a random schedule's end: the index of the step whose brokers it brings back


@dataclass
class Settings:
    topic: str
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int = 2
    unclean: bool = False
    duration: float = 30.0
    rate: float = 50.0
    seed: int = 0
    faults: tuple[str, ...] = DEFAULT_FAULTS
    heal_timeout: float = 90.0
    producers: tuple[str, ...] = DEFAULT_PRODUCERS
    max_concurrent: int = 1  # faults a random schedule lets overlap
    controllers: int = 1  # the cluster's KRaft controllers (voters)
    network: bool = False  # every node in its own namespace: partitions possible


# ---------------------------------------------------------------------------------------------------------
# schedules


def parse_faults(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    if not kinds:
        raise InputError("--faults", "no fault kind given")
    for k in kinds:
        if k not in FAULT_KINDS or k == "start":
            names = ", ".join(k for k in FAULT_KINDS if k != "start")
            raise InputError("--faults", f"{k!r} is not a fault kind ({names})")
    return kinds


def parse_schedule(text: str, source: str) -> list[Step]:
    """One fault a line, `SECONDS KIND [TARGET]`; '#' starts a comment. Bad lines: InputError naming file:line."""
    steps: list[Step] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0]
        if not line.strip():
            continue
        if len(steps) == MAX_SCHEDULE_STEPS:
            raise InputError(f"{source}:{n}", f"more than {MAX_SCHEDULE_STEPS:,} faults in one schedule")
        step = _step(line, f"{source}:{n}", n)
        if steps and step.t < steps[-1].t:
            raise InputError(f"{source}:{n}", f"{step.t:g} s comes before the previous line's {steps[-1].t:g} s")
        steps.append(step)
    if not steps:
        raise InputError(source, "no fault in the schedule")
    return steps


def _step(line: str, where: str, n: int) -> Step:
    m = _LINE.match(line)
    if m is None:
        raise InputError(where, f"not `SECONDS KIND [NODE|leader|follower|active-controller|controller|coordinator]`: "
                                f"{line.strip()!r}")
    seconds, kind, target = m.groups()
    if not _SECONDS.fullmatch(seconds) or float(seconds) > MAX_SECONDS:
        raise InputError(where, f"{seconds[:40]!r} is not a number of seconds from 0 to {MAX_SECONDS:,.0f} (ASCII "
                                "digits, at most 6 decimals)")
    if kind not in SCHEDULE_KINDS:
        raise InputError(where, f"{kind[:60]!r} is not a fault kind ({', '.join(SCHEDULE_KINDS)})")
    if target is not None:
        if kind in TOPIC_KINDS and not (kind in MOVE_KINDS and target in CAMPAIGN_ROLES):
            raise InputError(where, f"{kind} takes no target (it acts on the topic; elect-preferred and reassign "
                                    f"may name {', '.join(CAMPAIGN_ROLES)}), got {target[:40]!r}")
        if target not in (*BROKER_ROLES, *CONTROLLER_ROLES, *CAMPAIGN_ROLES) and not _BROKER.fullmatch(target):
            raise InputError(where, f"target {target[:40]!r} is not a node id, leader, follower, active-controller, "
                                    "controller or coordinator")
        if target in CONTROLLER_ROLES and kind not in CONTROLLER_KINDS:
            raise InputError(where, f"{kind} does not hit a controller (only {', '.join(CONTROLLER_KINDS)} do), "
                                    f"got {target}")
        if kind == "heal":
            raise InputError(where, f"heal takes no target (it restores every cut link), got {target[:40]!r}")
        if kind in ("start", "resume") and not _BROKER.fullmatch(target):
            raise InputError(where, f"{kind} takes a broker id or nothing (every "
                                    f"{'stopped' if kind == 'start' else 'paused'} broker), got {target!r}")
    return Step(float(seconds), kind, target, n)


def read_schedule(path: str) -> list[Step]:
    """`--schedule FILE`: a regular file (or a pipe) of at most MAX_SCHEDULE_BYTES, parsed."""
    with contextlib.suppress(OSError):
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode) and st.st_size > MAX_SCHEDULE_BYTES:
            raise InputError(path, f"is {st.st_size:,} bytes; a schedule holds at most {MAX_SCHEDULE_BYTES:,}")
    return parse_schedule(read_text(path), path)


def check_topic(name: str) -> str:
    """`--topic`: a name Kafka accepts for a topic a client creates (not one of Kafka's internal topics)."""
    problem = topic_problem(name)
    if problem is not None:
        raise InputError("--topic", problem)
    if name in INTERNAL_TOPICS:
        raise InputError("--topic", f"{name} is one of Kafka's internal topics; a campaign creates its own topic")
    return name


def check_schedule_brokers(steps: Sequence[Step], brokers: Sequence[int], source: str,
                           controllers: Sequence[int] = (1000,), roles: Sequence[str] = ()) -> None:
    """Every node a schedule names is in the cluster; a controller is hit only by CONTROLLER_KINDS (and their ends),
    and only in a quorum of 3 or more (taking down the one controller of a one-voter quorum leaves none); a role of
    CAMPAIGN_ROLES only where the campaign defines it (`roles`)."""
    for s in steps:
        where = f"{source}:{s.line}"
        if s.target in CAMPAIGN_ROLES and s.target not in roles:
            raise InputError(where, f"{s.target} is a role of the transactions campaign (--producers transactional)")
        named = int(s.target) if s.target is not None and _BROKER.fullmatch(s.target) else None
        if named is not None and named not in (*brokers, *controllers):
            raise InputError(where, f"node {s.target} is not in the cluster (brokers {', '.join(map(str, brokers))}; "
                                    f"controller(s) {', '.join(map(str, controllers))})")
        if s.target in CONTROLLER_ROLES or named in controllers:
            if len(controllers) < 3:
                raise InputError(where, f"{s.kind} {s.target} needs a quorum of 3 or more controllers "
                                        f"(--controllers 3); this cluster has {len(controllers)}")
            if s.kind not in (*CONTROLLER_KINDS, "start", "resume", "heal"):
                raise InputError(where, f"{s.kind} does not hit a controller (only {', '.join(CONTROLLER_KINDS)} do)")


def _holds(kind: str, brokers: int, target: str | None = None) -> int:
    """Brokers a fault keeps down or paused while it lasts (a restart: while it runs). pause-followers pauses the
    in-sync followers of partition 0, up to every broker but its leader: counted as that many. A fault on a
    controller holds no broker."""
    if target in CONTROLLER_ROLES:
        return 0
    if kind == "pause-followers":
        return brokers - 1
    return 1 if kind in ENDS or kind == "restart" else 0


def random_schedule(seed: int, duration: float, kinds: Sequence[str], start: float = 3.0, max_concurrent: int = 1,
                    brokers: int = 3, controllers: int = 1, roles: Sequence[str | None] = (*BROKER_ROLES, None),
                    move_roles: Sequence[str] = ()) -> list[Step]:
    """Faults until `duration`: a fault, its end 3-8 s later where it has one, and 1-4 s after it began the next one
    while fewer than `max_concurrent` faults last (else 1-4 s after the first of them ends). A fault that would leave
    no broker answering while another lasts waits for ends first (at most `brokers - 1` down or paused at once,
    so a leader can always be elected; the controllers are processes of their own). With 3 or more `controllers`,
    a kill, pause, restart or shutdown may also target the active controller or any controller, never more than a
    minority of them at once (a majority must remain to elect a leader). With `max_concurrent` 1: one fault at a
    time, the next 1-4 s after the end of the last. Each end names the step it ends (`Step.ends`). A broker fault's
    target is drawn from `roles` (None: a broker drawn when it fires); with `move_roles`, an elect-preferred or
    reassign names one of them (the transactions campaign: `coordinator`)."""
    rng = random.Random(seed)
    steps: list[Step] = []
    active: list[tuple[float, int]] = []  # (its end, the index of its step), by end

    def close_first() -> float:
        end, index = active.pop(0)
        steps.append(Step(round(end, 1), ENDS[steps[index].kind], ends=index))
        return end

    def held() -> int:
        return sum(_holds(steps[i].kind, brokers, steps[i].target) for _, i in active)

    def controllers_held() -> int:
        return sum(steps[i].target in CONTROLLER_ROLES for _, i in active)

    t = start
    while t < duration - 2:
        kind = rng.choice(list(kinds))
        broker_fault = (kind in ENDS or kind == "restart") and kind not in TOPIC_KINDS
        drawn = [*roles] + (list(CONTROLLER_ROLES) if controllers >= 3 and kind in CONTROLLER_KINDS else [])
        target = rng.choice(drawn) if broker_fault else None
        if kind in MOVE_KINDS and move_roles:
            target = rng.choice(list(move_roles))
        hold = rng.uniform(3, 8)
        while active and (active[0][0] <= t or len(active) >= max_concurrent
                          or held() + _holds(kind, brokers, target) > brokers - 1
                          or controllers_held() + (target in CONTROLLER_ROLES) > (controllers - 1) // 2):
            t = max(t, close_first())
        hold = min(hold, duration - 1 - t)  # its end within the duration
        if t >= duration - 2 or (kind in ENDS and hold < 1):
            break
        steps.append(Step(round(t, 1), kind, target))
        if kind in ENDS:
            active.append((t + hold, len(steps) - 1))
            active.sort()
        gap = rng.uniform(1, 4)
        t = (active[0][0] if len(active) >= max_concurrent else t) + gap
    while active:
        close_first()
    return steps


# ---------------------------------------------------------------------------------------------------------
# the campaign


@dataclass
class Outcome:
    settings: Settings
    schedule: list[Step]
    history: History
    verdict: Verdict
    seconds: float
    heal_seconds: float
    cluster: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # clients that did not start or stop

    @property
    def exit_code(self) -> Exit:
        return {"clean": Exit.OK, "violations": Exit.FAILED, "incomplete": Exit.INCOMPLETE}[self.verdict.status]

    def document(self) -> str:
        return history_document(
            {**asdict(self.settings), "faults": list(self.settings.faults), "producers": list(self.settings.producers)},
            self.history, self.verdict,
            {"schedule": [asdict(s) for s in self.schedule], "seconds": round(self.seconds, 2),
             "heal_seconds": round(self.heal_seconds, 2), "cluster": self.cluster, "errors": self.errors})


@contextlib.contextmanager
def quiet_clients() -> Iterator[None]:
    """kafka-python logs every refused connection and timed-out request: during a campaign those are the point."""
    logger = logging.getLogger("kafka")
    level, propagate = logger.level, logger.propagate
    logger.setLevel(logging.CRITICAL)
    logger.propagate = False
    try:
        yield
    finally:
        logger.setLevel(level)
        logger.propagate = propagate


class Campaign:
    """One campaign on `cluster` (started, or attached): `run()` returns the Outcome; every broker is left running."""

    def __init__(self, cluster: LocalCluster, settings: Settings, schedule: Sequence[Step],
                 say: Callable[[str], None] = lambda s: None) -> None:
        self.cluster = cluster
        self.s = settings
        self.schedule = list(schedule)
        self.say = say
        self.rng = random.Random(settings.seed)
        self.history = History()
        self.stop_producing = threading.Event()
        self.stop_consuming = threading.Event()
        self.paused: set[int] = set()
        self.hit: dict[int, tuple[int, ...]] = {}  # the brokers each started fault of the schedule hit, by step
        self.cut_by: dict[int | None, tuple[tuple[int, int], ...]] = {}  # the links each partition cut, by step
        # the links each slow-links or lossy-links shaped, and how (netns.SLOW, netns.LOSSY), by step
        self.shaped_by: dict[int | None, tuple[str, tuple[tuple[int, int], ...]]] = {}
        self._step: int | None = None  # the schedule's step running now (None: healing)
        self._states: dict[int, Any] | None = None  # the last partition states read, and when
        self._states_at = 0.0
        self.errors: list[str] = []
        self.lag = 0.0  # seconds the schedule ran late in all
        self.running_before: set[int] = set()  # the nodes that ran when the campaign began
        self._before: Quorum | None = None  # the quorum read just before the controller fault being applied
        self.threads: list[threading.Thread] = []
        self.producers: list[Producer] = []
        self.producers_done = threading.Event()
        # CAMPAIGN_ROLES this campaign resolves: a role -> the (topic, partition) whose leader it is now
        self.roles: dict[str, Callable[[], tuple[str, int]]] = {}

    # -- the cluster ---------------------------------------------------------------------------------------

    def _answering(self, nodes: Sequence[int] | None = None) -> list[int]:
        """The brokers (or `nodes`) that run and are not paused."""
        return [b for b in (self.cluster.brokers if nodes is None else nodes)
                if b not in self.paused and self.cluster.is_running(b)]

    def _nodes(self) -> tuple[int, ...]:
        """Every node, the controllers first (a start brings them back first: brokers register with them)."""
        return (*self.cluster.controllers, *self.cluster.brokers)

    def quorum(self) -> Quorum | None:
        """DescribeQuorum now, of the controllers that run and are not paused, recorded in the history; None when
        none answered as the leader (an election under way)."""
        from kcheck.cluster.admin import describe_quorum

        up = self._answering(self.cluster.controllers)
        answer = describe_quorum(",".join(self.cluster.address(c) for c in up)) if up else None
        if answer is None:
            return None
        q = Quorum(self.history.now(), *answer, self._step)
        self.history.add(q)
        return q

    def live_bootstrap(self) -> str:
        """Brokers that run and are not paused: an admin request to a paused broker would wait out its timeout."""
        up = self._answering() or list(self.cluster.brokers)
        return ",".join(self.cluster.address(b) for b in up)

    def states(self, attempts: int = 3, timeout_s: float = 3.0) -> dict[int, Any]:
        """The topic's partition states now. The admin client may send its request to a paused broker it knows
        from the metadata, which never answers: short attempts, each with a fresh client."""
        from kcheck.cluster.admin import partition_states

        for i in range(attempts):
            try:
                self._states = partition_states(self.live_bootstrap(), self.s.topic, timeout_s=timeout_s)
                self._states_at = time.monotonic()
                return self._states
            except InputError:
                if i == attempts - 1:
                    raise
        raise AssertionError("unreachable")

    def recent_states(self) -> dict[int, Any]:
        """The states to resolve a target with: read now (one short attempt), or the last ones read when that fails
        (while brokers are paused, the admin client's request may go to one of them) or when they are from the
        last two seconds (two faults at the same moment)."""
        if self._states is not None and time.monotonic() - self._states_at < 2.0:
            return self._states
        try:
            return self.states(attempts=1, timeout_s=2.5)
        except InputError:
            if self._states is None:
                raise
            return self._states

    def create_topic(self) -> None:
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka.errors import KafkaError

        from kcheck.cluster.admin import wait_until

        configs = {"min.insync.replicas": str(self.s.min_insync_replicas),
                   "unclean.leader.election.enable": "true" if self.s.unclean else "false"}
        admin = KafkaAdminClient(bootstrap_servers=self.live_bootstrap().split(","), request_timeout_ms=30_000,
                                 client_id="kcheck-chaos")
        try:
            admin.create_topics([NewTopic(self.s.topic, self.s.partitions, self.s.replication_factor,
                                          topic_configs=configs)])
        except KafkaError as e:
            raise InputError("--topic", f"cannot create {self.s.topic}: {type(e).__name__}: {e}") from None
        finally:
            admin.close()

        def ready() -> bool:
            try:
                st = self.states()
            except InputError:
                return False
            return len(st) == self.s.partitions and all(p.leader >= 0 and len(p.isr) == len(p.replicas)
                                                        for p in st.values())

        if not wait_until(ready, 30):
            raise ClusterError(f"topic {self.s.topic} did not get a leader and a full ISR for every partition "
                               "within 30 s")

    # -- clients -------------------------------------------------------------------------------------------

    def decode(self, raw: bytes | None, partition: int) -> str:
        """A record's value as the history names it: a Java producer's `<prefix>.<n>` translated."""
        text = (raw or b"").decode(errors="replace")
        for p in self.producers:
            named = p.translate(text, partition)
            if named is not None:
                return named
        return text

    def _healthy(self) -> bool:
        """Every broker running, none paused, and no fault for STALL_SECONDS (a producer's stall is its own)."""
        from kcheck.cluster.producers import STALL_SECONDS

        faults = self.history.of(Fault)
        quiet = not faults or self.history.now() - faults[-1].t >= STALL_SECONDS
        return (quiet and not self.paused and not self.cut_by and not self.shaped_by
                and all(self.cluster.is_running(b) for b in self._nodes()))

    def _in_flight(self, wait_s: float = 0.5) -> int:
        """Sends in flight now, after waiting up to `wait_s` for one (a fault should strike requests mid-way)."""
        until = time.monotonic() + wait_s
        while True:
            n = sum(p.in_flight() for p in self.producers)
            if n or time.monotonic() >= until:
                return n
            time.sleep(0.002)

    def _consume(self) -> None:
        from kafka import KafkaConsumer
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata

        h = self.history
        try:
            consumer = KafkaConsumer(bootstrap_servers=self.cluster.bootstrap.split(","),
                                     group_id=f"{self.s.topic}-group", enable_auto_commit=False,
                                     auto_offset_reset="earliest", session_timeout_ms=10_000,
                                     heartbeat_interval_ms=1000, request_timeout_ms=15_000,
                                     client_id="kcheck-chaos-consumer")
            consumer.subscribe([self.s.topic])
        except KafkaError as e:
            self.errors.append(f"the consumer did not start: {e}")
            return
        try:
            while not self.stop_consuming.is_set():
                try:
                    batch = consumer.poll(timeout_ms=300)
                except KafkaError:
                    time.sleep(0.2)
                    continue
                offsets = {}
                for tp, records in batch.items():
                    hw = consumer.highwater(tp)
                    t = h.now()
                    for r in records:
                        h.add(Read(t, tp.partition, r.offset, self.decode(r.value, tp.partition), hw))
                    if records:
                        offsets[tp] = OffsetAndMetadata(records[-1].offset + 1, "", -1)
                if offsets:
                    try:
                        consumer.commit(offsets)
                        error = None
                    except KafkaError as e:
                        error = type(e).__name__
                    t = h.now()
                    for tp, om in offsets.items():
                        h.add(Commit(t, tp.partition, om.offset, error))
        finally:
            with contextlib.suppress(Exception):
                consumer.close(autocommit=False)

    def consumer_caught_up(self, ends: dict[int, int]) -> bool:
        last: dict[int, int] = {}
        for r in self.history.of(Read):
            if not r.final:
                last[r.partition] = max(last.get(r.partition, -1), r.offset)
        return all(last.get(p, -1) + 1 >= end for p, end in ends.items())

    def final_read(self, timeout_s: float = 60.0) -> None:
        """Every partition from its log start to its end offset, with a fresh consumer outside the group."""
        from kafka import KafkaConsumer, TopicPartition
        from kafka.errors import KafkaError

        h = self.history
        parts = [TopicPartition(self.s.topic, p) for p in range(self.s.partitions)]
        consumer = KafkaConsumer(bootstrap_servers=self.live_bootstrap().split(","), enable_auto_commit=False,
                                 auto_offset_reset="earliest", request_timeout_ms=15_000,
                                 client_id="kcheck-chaos-final")
        try:
            consumer.assign(parts)
            try:
                starts = consumer.beginning_offsets(parts)
                ends = consumer.end_offsets(parts)
            except KafkaError as e:
                for tp in parts:
                    h.final[tp.partition] = FinalRead(tp.partition, -1, -1, False,
                                                      f"its offsets could not be listed ({type(e).__name__})")
                return
            consumer.seek_to_beginning(*parts)
            deadline = time.monotonic() + timeout_s
            while any(consumer.position(tp) < ends[tp] for tp in parts) and time.monotonic() < deadline:
                interrupts.check()
                with contextlib.suppress(KafkaError):
                    for tp, records in consumer.poll(timeout_ms=500).items():
                        t = h.now()
                        for r in records:
                            if r.offset < ends[tp]:
                                h.add(Read(t, tp.partition, r.offset, self.decode(r.value, tp.partition), None,
                                           final=True))
            for tp in parts:
                done = consumer.position(tp) >= ends[tp]
                h.final[tp.partition] = FinalRead(
                    tp.partition, starts[tp], ends[tp], done,
                    "" if done else f"the final read stopped at offset {consumer.position(tp)} of {ends[tp]}")
        finally:
            consumer.close()

    # -- faults --------------------------------------------------------------------------------------------

    def _fault(self, kind: str, phase: str, brokers: Sequence[int] = (), note: str = "", role: str | None = None,
               t: float | None = None, cuts: Sequence[tuple[int, int]] = (),
               shaped: Sequence[tuple[int, int]] = (), shape: str | None = None) -> None:
        f = Fault(self.history.now() if t is None else t, kind, phase, tuple(brokers), note, self._step, role,
                  tuple(cuts), tuple(shaped), shape)
        self.history.add(f)
        if phase == "start" and self._step is not None:
            self.hit[self._step] = f.brokers
        who = f" {','.join(map(str, brokers))}" if brokers else ""
        shown = {"start": "", "end": " done" if kind == "restart" else ""}.get(phase, " " + phase)
        self.say(f"{f.t:7.1f}s  {kind}{who}{shown}"
                 f"{': ' + note if note else ''}")

    def _target(self, step: Step) -> int | str:
        """The broker a step hits, resolved now; or a reason it cannot fire."""
        up = self._answering()
        if step.target in CONTROLLER_ROLES or (step.target is not None and _BROKER.fullmatch(step.target)
                                               and int(step.target) in self.cluster.controllers):
            return self._controller_target(step)
        if step.target is not None and _BROKER.fullmatch(step.target):
            b = int(step.target)
            return b if b in up else f"broker {b} is not running (or is paused)"
        if step.target in self.roles:
            found = self._role_partition(step.target)
            if isinstance(found, str):
                return found
            topic, p, st = found
            return st.leader if st.leader in up else f"{topic}-{p} has no answering leader ({st.leader})"
        if step.target in ("leader", "follower"):
            try:
                p0 = self.recent_states()[0]
            except InputError as e:
                return f"partition 0's state could not be read ({e})"
            if step.target == "leader":
                return p0.leader if p0.leader in up else f"partition 0 has no answering leader ({p0.leader})"
            followers = [b for b in p0.isr if b != p0.leader and b in up]
            return self.rng.choice(followers) if followers else "partition 0 has no answering in-sync follower"
        return self.rng.choice(up) if up else "no broker answers"

    def _role_partition(self, role: str) -> tuple[str, int, Any] | str:
        """The partition a campaign role (`roles`) names and its state now; or why it cannot be read."""
        from kafka.errors import KafkaError

        from kcheck.cluster.admin import partition_states

        try:
            topic, p = self.roles[role]()
            return topic, p, partition_states(self.live_bootstrap(), topic, timeout_s=3.0)[p]
        except (InputError, KafkaError, KeyError, OSError) as e:
            return f"the {role}'s partition could not be read ({type(e).__name__}: {e})"

    def _move_role_leader(self, kind: str, role: str) -> None:
        """`reassign ROLE`: the role's partition's replicas rotated so that another in-sync replica comes first, then
        a preferred election on it; `elect-preferred ROLE`: the election alone (it moves the leader back to the
        preferred replica after a failover, and is skipped when the leader is already the preferred one)."""
        from kcheck.cluster.admin import elect_leaders, reassign

        found = self._role_partition(role)
        if isinstance(found, str):
            self._fault(kind, "skipped", note=found, role=role)
            return
        topic, p, st = found
        note = f"{topic}-{p}"
        if kind == "reassign":
            others = [b for b in st.replicas if b != st.leader and b in st.isr and b in self._answering()]
            if st.adding or st.removing or not others:
                self._fault(kind, "skipped", note=f"{note} is being reassigned or has no other answering in-sync "
                                                  "replica", role=role)
                return
            first = st.replicas.index(others[0])
            new = [*st.replicas[first:], *st.replicas[:first]]
            if new == list(st.replicas):  # after a failover the preferred replica is the one to move to
                note += f": replicas {','.join(map(str, new))} kept"
            else:
                reassign(self.live_bootstrap(), topic, {p: new}, timeout_s=10.0)
                note += f": replicas {','.join(map(str, st.replicas))} -> {','.join(map(str, new))}"
        flying = self._flying_note(kind)
        error = elect_leaders(self.live_bootstrap(), topic, [p], unclean=False, timeout_s=10.0).get(p)
        if kind == "elect-preferred" and error is not None:
            self._fault(kind, "skipped", (st.leader,), f"{note}: {error}", role)
            return
        after = self._role_partition(role)
        now = str(after[2].leader) if not isinstance(after, str) else "not read"
        note += f"; leader {st.leader} -> {now}" + (f" (election: {error})" if error else "")
        self._fault(kind, "start", (st.leader,), note + flying, role)

    def _controller_target(self, step: Step) -> int | str:
        """The controller a step hits (the quorum read first: `_before`), or why it cannot fire: never a majority of
        the controllers down or paused at once."""
        controllers = self.cluster.controllers
        up = self._answering(controllers)
        if len(controllers) - len(up) + 1 > (len(controllers) - 1) // 2:
            return (f"{len(controllers) - len(up)} of {len(controllers)} controllers are down or paused: one more "
                    "would leave no majority")
        self._before = self.quorum()
        if step.target == "controller":
            return self.rng.choice(up)
        if step.target == "active-controller":
            if self._before is None:
                return "DescribeQuorum was not answered"
            leader = self._before.leader
            return leader if leader in up else f"the quorum has no answering leader ({leader})"
        named = int(str(step.target))
        return named if named in up else f"controller {named} is not running (or is paused)"

    def _controller_fault(self, step: Step, target: int, flying: str) -> None:
        """A kill, pause, shutdown or restart of a controller. When it was the quorum's leader, DescribeQuorum is
        asked until another leader with a larger epoch is named (or FAILOVER_BOUND passes); the fault's event names
        the quorum before and after."""
        kind, t = step.kind, self.history.now()
        if kind == "kill":
            self.cluster.kill(target)
        elif kind == "pause":
            self.cluster.pause(target)
            self.paused.add(target)
        else:  # shutdown, and the first half of a restart: the controller resigns its leadership
            self.cluster.shutdown(target)
        note = self._quorum_note(target, t) + flying
        self._fault(kind, "start", (target,), note, step.target, t)
        if kind == "restart":
            self.cluster.restart(target)
            self._fault(kind, "end", (target,), role=step.target)

    def _quorum_note(self, target: int, t: float) -> str:
        """After a fault on controller `target` at `t`: the failover awaited, and the quorum before and after."""
        before = self._before
        after = self._await_failover(before, target, t)
        shown = lambda q: f"leader {q.leader} epoch {q.epoch}" if q is not None else "not answered"  # noqa: E731
        active = before is not None and before.leader == target
        return (f"{'the active controller' if active else 'a follower controller'}; quorum {shown(before)} before, "
                f"{shown(after)} after" + (f" ({after.t - t:.1f} s)" if after is not None else ""))

    def _partition(self, step: Step, target: int, flying: str) -> None:
        """Cut `target`'s links (kcheck.cluster.netns): `partition` from every other node both ways,
        `partition-one-way` what it sends to them, `partition-from-quorum` a broker from every controller both ways
        (clients and the other brokers still reach it), `partition-bridge` the others' two sides from each other (the
        target, in the middle, keeps every link); or shape them (`slow-links`, `lossy-links`: every link of the
        target, both ways). A controller cut off (not the middle of a bridge): the failover is awaited as for a kill."""
        kind, net = step.kind, self.cluster.network
        if net is None:
            self._fault(kind, "failed", note="the cluster has no network (start it with --network)")
            return
        controllers = self.cluster.controllers
        if kind == "partition-from-quorum" and target in controllers:
            self._fault(kind, "skipped", (target,), "partition-from-quorum cuts a broker from the controllers")
            return
        if kind in SHAPE_KINDS:
            self._shape_links(step, target, net, flying)
            return
        links, note = self._cut_links(kind, target)
        t = self.history.now()
        for a, b in links:
            net.cut(a, b)
        self.cut_by[self._step] = tuple(links)
        if target in controllers and kind != "partition-bridge":
            note += "; " + self._quorum_note(target, t)
        self._fault(kind, "start", (target,), note + flying, step.target, t, links)

    def _cut_links(self, kind: str, target: int) -> tuple[list[tuple[int, int]], str]:
        """The links a partition kind cuts around `target`, and the fault's note."""
        if kind == "partition-bridge":
            left, right = bridge_sides(target, self.cluster.controllers, self.cluster.brokers)
            links = [link for a in left for b in right for link in ((a, b), (b, a))]
            return links, (f"the middle of a bridge between {','.join(map(str, left))} and "
                           f"{','.join(map(str, right))}")
        others = list(self.cluster.controllers) if kind == "partition-from-quorum" else [
            n for n in self._nodes() if n != target]
        links = [(target, o) for o in others]
        if kind != "partition-one-way":
            links += [(o, target) for o in others]
        return links, (f"cut from {len(others)} node(s)" + (" (one way: it still hears them)"
                                                             if kind == "partition-one-way" else ""))

    def _shape_links(self, step: Step, target: int, net: netns.Network, flying: str) -> None:
        """`slow-links`, `lossy-links`: every link between `target` and each other node, both ways, through the
        network's relay (the caller's link, the clients', untouched)."""
        how = SHAPE_KINDS[step.kind]
        others = [n for n in self._nodes() if n != target]
        links = [link for o in others for link in ((target, o), (o, target))]
        t = self.history.now()
        for a, b in links:
            net.shape(a, b, how)
        self.shaped_by[self._step] = (how, tuple(links))
        self._fault(step.kind, "start", (target,), f"{len(others)} node(s), both ways: {SHAPES[how]}{flying}",
                    step.target, t, shaped=links, shape=SHAPES[how])

    def _heal_links(self, ends: int | None, note: str = "") -> None:
        """Restore the links of step `ends`'s network fault (None: every cut or shaped link); a link another fault
        that still lasts also cut stays cut (one it shaped, shaped as that fault did)."""
        net = self.cluster.network
        if net is None:
            self._fault("heal", "failed", note="the cluster has no network (start it with --network)")
            return
        if ends is None:
            links, shaped = tuple(sorted(net.cuts)), tuple(sorted(net.shaped))
            self.cut_by.clear()
            self.shaped_by.clear()
        else:
            links, shaped = self.cut_by.pop(ends, ()), self.shaped_by.pop(ends, ("", ()))[1]
        if not links and not shaped:
            self._fault("heal", "skipped", note=note or "no link is cut or shaped")
            return
        still = {link for cut in self.cut_by.values() for link in cut}
        for a, b in links:
            if (a, b) not in still:
                net.uncut(a, b)
        kept = {link: how for how, shape in self.shaped_by.values() for link in shape}
        for a, b in shaped:
            if (a, b) in kept:
                net.shape(a, b, kept[(a, b)])
            else:
                net.unshape(a, b)
        who = self.hit.get(ends, ()) if ends is not None else ()
        self._fault("heal", "end", who, note or f"{len(links) + len(shaped)} link(s) restored", cuts=links,
                    shaped=shaped)

    def _await_failover(self, before: Quorum | None, target: int, t: float) -> Quorum | None:
        """After `target` went: the first DescribeQuorum answer with a new leader and a larger epoch if `target` led
        (else the next answer), asked until FAILOVER_BOUND seconds after `t`; the last answer if none."""
        last = None
        while True:
            interrupts.check()
            q = self.quorum()
            last = q or last
            if before is None or before.leader != target:
                return last
            if q is not None and q.leader >= 0 and q.leader != target and q.epoch > before.epoch:
                return last
            if self.history.now() - t >= FAILOVER_BOUND:
                return last
            time.sleep(0.2)

    def apply(self, step: Step) -> None:
        kind = step.kind
        try:
            if kind in MOVE_KINDS and step.target in self.roles:
                self._move_role_leader(kind, step.target)
                return
            if kind in TOPIC_KINDS:
                self._topic_fault(kind)
                return
            if kind in ("start", "resume"):
                self._end(kind, step.target, step.ends)
                return
            if kind == "heal":
                self._heal_links(step.ends)
                return
            target = self._target(step)
            if isinstance(target, str):
                self._fault(kind, "skipped", note=target)
                return
            flying = self._flying_note(kind)
            if kind in NETWORK_KINDS:
                self._partition(step, target, flying)
                return
            if target in self.cluster.controllers:
                self._controller_fault(step, target, flying)
                return
            if kind == "kill":
                self.cluster.kill(target)
            elif kind == "lossy-kill":
                from kcheck.cluster.lossy import lossy_kill

                cut = lossy_kill(self.cluster, target)
                self._fault(kind, "start", (target,), f"{cut.records_cut} record(s) cut from {len(cut.files)} "
                            f"file(s){flying}", step.target)
                return
            elif kind == "pause":
                self.cluster.pause(target)
                self.paused.add(target)
            elif kind == "shutdown":
                self.cluster.shutdown(target)
            elif kind == "restart":
                self._fault(kind, "start", (target,), flying.lstrip("; "), step.target)
                self.cluster.restart(target)
                self._fault(kind, "end", (target,), role=step.target)
                return
            self._fault(kind, "start", (target,), flying.lstrip("; "), step.target)
        except (InputError, OSError) as e:
            self._fault(kind, "failed", note=str(e))

    def _flying_note(self, kind: str) -> str:
        """For a fault that strikes requests: wait briefly for a send in flight and say how many there were."""
        if kind not in IN_FLIGHT_KINDS or not any(p.kind.client == "kafka-python" for p in self.producers):
            return ""
        return f"; {self._in_flight()} kafka-python send(s) in flight"

    def _end(self, kind: str, target: str | None, ends: int | None = None) -> None:
        """`start`/`resume`: of the broker named, of the brokers step `ends` hit (a random schedule's end: only
        those, when faults overlap), or of every broker stopped/paused."""
        if target:
            which = [int(target)]
        elif ends is not None:
            which = sorted(self.hit.get(ends, ()))
            if not which:
                self._fault(kind, "skipped", note=f"the fault of step {ends} hit no broker")
                return
        elif kind == "resume":
            which = sorted(self.paused)
        else:
            which = [b for b in self._nodes() if not self.cluster.is_running(b)]
        for b in which:
            if kind == "resume":
                if b not in self.paused:
                    self._fault(kind, "skipped", (b,), "not paused")
                    continue
                self.cluster.resume(b)
                self.paused.discard(b)
            else:
                if self.cluster.is_running(b):
                    self._fault(kind, "skipped", (b,), "already running")
                    continue
                self.cluster.restart(b)
            self._fault(kind, "end", (b,))

    def _topic_fault(self, kind: str) -> None:
        from kcheck.cluster.admin import elect_leaders, reassign

        partitions = list(range(self.s.partitions))
        if kind == "elect-unclean" and not self.s.unclean:
            self._fault(kind, "skipped", note="the topic has unclean.leader.election.enable=false")
            return
        if kind == "pause-followers":
            self._pause_followers()
            return
        if kind == "delete-records":
            self._delete_records()
            return
        if kind in ("elect-preferred", "elect-unclean"):
            flying = self._flying_note(kind)
            answer = elect_leaders(self.live_bootstrap(), self.s.topic, partitions, unclean=kind == "elect-unclean",
                                   timeout_s=10.0)
            elected = [p for p, e in answer.items() if e is None]
            others = sorted({e for e in answer.values() if e is not None})
            self._fault(kind, "start", note=f"elected on {len(elected)} partition(s)"
                        + (f"; {', '.join(others)} elsewhere" if others else "") + flying)
            return
        states = self.recent_states()
        free = [p for p, st in states.items() if not st.adding and not st.removing]
        if not free:
            self._fault(kind, "skipped", note="every partition is being reassigned")
            return
        p = self.rng.choice(free)
        replicas = list(states[p].replicas)
        outside = [b for b in self.cluster.brokers if b not in replicas]
        if outside:
            new = list(replicas)
            new[self.rng.randrange(len(new))] = self.rng.choice(outside)
        else:
            new = replicas[1:] + replicas[:1]
        reassign(self.live_bootstrap(), self.s.topic, {p: new}, timeout_s=10.0)
        self._fault(kind, "start", note=f"partition {p}: {','.join(map(str, replicas))} -> {','.join(map(str, new))}")

    def _pause_followers(self) -> None:
        """SIGSTOP every answering in-sync follower of partition 0 (`resume` ends it)."""
        try:
            p0 = self.recent_states()[0]
        except InputError as e:
            self._fault("pause-followers", "skipped", note=f"partition 0's state could not be read ({e})")
            return
        followers = [b for b in p0.isr if b != p0.leader and b in self._answering()]
        if not followers:
            self._fault("pause-followers", "skipped", note="partition 0 has no answering in-sync follower")
            return
        flying = self._flying_note("pause-followers")
        for b in followers:
            self.cluster.pause(b)
            self.paused.add(b)
        self._fault("pause-followers", "start", tuple(followers), f"leader {p0.leader} left alone{flying}")

    def _delete_records(self) -> None:
        """Producers idle, DeleteRecords up to every partition's high watermark, 2 s, producers resume."""
        from kafka import TopicPartition
        from kafka.admin import KafkaAdminClient
        from kafka.errors import KafkaError

        from kcheck.cluster.producers import JavaProducer, PythonProducer

        for p in self.producers:
            if isinstance(p, PythonProducer):
                p.idle.set()
        until = time.monotonic() + 10
        while any(p.in_flight() for p in self.producers) and time.monotonic() < until:
            time.sleep(0.05)
        java = [p for p in self.producers if isinstance(p, JavaProducer)]
        for p in java:
            p.signal(signal.SIGSTOP)
        try:
            admin = KafkaAdminClient(bootstrap_servers=self.live_bootstrap().split(","), request_timeout_ms=10_000,
                                     client_id="kcheck-chaos-delete")
            try:
                # -1: up to the high watermark (DeleteRecordsRequest.HIGH_WATERMARK)
                done = admin.delete_records({TopicPartition(self.s.topic, p): -1 for p in range(self.s.partitions)},
                                            timeout_ms=10_000)
            finally:
                admin.close()
            starts = ", ".join(f"p{tp.partition}:{r.get('low_watermark')}" for tp, r in sorted(done.items()))
            self._fault("delete-records", "start", note=f"log start now {starts}")
        except KafkaError as e:
            self._fault("delete-records", "failed", note=f"{type(e).__name__}: {e}")
        finally:
            time.sleep(2)
            for p in java:
                p.signal(signal.SIGCONT)
            for p in self.producers:
                if isinstance(p, PythonProducer):
                    p.idle.clear()

    def heal(self) -> bool:
        """Resume and start every broker, then wait until every replica is in the ISR and nothing is moving."""
        from kcheck.cluster.admin import wait_until

        self._step = None
        if self.cluster.network is not None and (self.cluster.network.cuts or self.cluster.network.shaped):
            self._heal_links(None, "heal")
        for b in sorted(self.paused):
            with contextlib.suppress(ClusterError, OSError):
                self.cluster.resume(b)
            self._fault("resume", "end", (b,), "heal")
        self.paused.clear()
        for row in self.cluster.status():
            if row["state"] == "paused":  # paused before this campaign
                self.cluster.resume(row["node"])
        for b in self._nodes():
            if not self.cluster.is_running(b):
                try:
                    self.cluster.restart(b)
                    self._fault("start", "end", (b,), "heal")
                except ClusterError as e:
                    self._fault("start", "failed", (b,), str(e))

        def healed() -> bool:
            try:
                st = self.states()
            except InputError:
                return False
            return all(p.leader >= 0 and set(p.isr) == set(p.replicas) and not p.adding and not p.removing
                       for p in st.values())

        return bool(wait_until(healed, self.s.heal_timeout, 0.5))

    # -- the whole campaign --------------------------------------------------------------------------------

    def run(self) -> Outcome:
        """The campaign, healed and checked. On an interrupt (Ctrl-C, SIGTERM: runtime/interrupts.py) it stops at once,
        neither healing nor reading: the caller runs `abort()`."""
        with quiet_clients():
            began = time.monotonic()
            self.running_before = {b for b in self._nodes() if self.cluster.is_running(b)}
            self.create_topic()
            self.history = History()
            self.producers = make_producers(self.s.producers, self.cluster.bootstrap, self.s.topic,
                                            self.s.partitions, self.s.rate, self.history, self.stop_producing,
                                            self.errors, self._classpath)
            threads = [threading.Thread(target=self._consume, name="chaos-consumer", daemon=True),
                       threading.Thread(target=stall_watch, args=(self.producers, self.history, self._healthy,
                                                                  self.producers_done), daemon=True)]
            self.threads = threads
            for th in threads:
                th.start()
            for p in self.producers:
                p.start()
            try:
                self.follow_schedule()
            except BaseException as e:
                if not interrupts.by_interrupt(e):  # a failure: heal what the faults did
                    self.stop_producing.set()
                    for p in self.producers:
                        p.abort()
                    self.heal()
                raise
            self.stop_producing.set()
            heal_began = time.monotonic()
            healed = self.heal()
            heal_seconds = time.monotonic() - heal_began
            for p in self.producers:
                p.join(40)
            self.producers_done.set()
            self._catch_up()
            self.stop_consuming.set()
            threads[0].join(20)
            self.final_read()
            verdict = check(self.history, healed=healed)
            return Outcome(self.s, self.schedule, self.history, verdict, time.monotonic() - began, heal_seconds,
                           errors=list(self.errors))

    def _classpath(self) -> str:
        """The release's broker and tools jars (VerifiableProducer is in kafka-tools)."""
        from kcheck.reference.kafka_jars import KafkaBridgeError, resolve_server

        try:
            return resolve_server(self.cluster.version).classpath
        except KafkaBridgeError as e:
            raise ClusterError(str(e)) from None

    def follow_schedule(self) -> None:
        """Every step of the schedule at its time, then the rest of the duration."""
        lag = 0.0  # a step that ran late (a restart waits until the broker is unfenced) delays the rest
        for index, step in enumerate(self.schedule):
            self._step = index
            wait = step.t + lag - (time.monotonic() - self.history.began)
            if wait > 0:
                time.sleep(wait)
            else:
                lag -= wait
            self.apply(step)
            interrupts.check()  # a fault's Kafka client may have swallowed a Ctrl-C
        self.lag = lag
        rest = self.s.duration + lag - (time.monotonic() - self.history.began)
        if rest > 0:
            time.sleep(rest)

    def _catch_up(self) -> None:
        """Give the consumer up to 20 s to read to the end offsets of the healed topic."""
        ends: dict[int, int] = {}
        with contextlib.suppress(Exception):
            from kafka import KafkaConsumer, TopicPartition

            c = KafkaConsumer(bootstrap_servers=self.live_bootstrap().split(","), request_timeout_ms=15_000)
            try:
                ends = {tp.partition: off for tp, off in c.end_offsets(
                    [TopicPartition(self.s.topic, p) for p in range(self.s.partitions)]).items()}
            finally:
                c.close()
        deadline = time.monotonic() + 20
        while ends and not self.consumer_caught_up(ends) and time.monotonic() < deadline:
            interrupts.check()
            time.sleep(0.3)

    def abort(self, restart: bool) -> list[str]:
        """After an interrupt, at once: the clients stop, every broker the campaign paused is resumed and, with
        `restart` (a cluster it did not start), every broker it stopped is started again without waiting for it.
        What it did, for the one line."""
        self.stop_producing.set()
        self.stop_consuming.set()
        logging.getLogger("kafka").setLevel(logging.CRITICAL)  # the clients' last words are not for the terminal
        logging.getLogger("kafka").propagate = False
        done = []
        if self.cluster.network is not None and (self.cluster.network.cuts or self.cluster.network.shaped):
            with contextlib.suppress(Exception):
                self.cluster.network.heal()
                done.append("restored every network link it had cut or shaped")
        resumed = [b for b in sorted(self.paused) if self._resume_now(b)]
        self.paused.clear()
        if resumed:
            done.append(f"resumed {_kind_of(resumed, self.cluster.brokers)} {', '.join(map(str, resumed))}")
        if restart:
            stopped = sorted(b for b in self.running_before if not self.cluster.is_running(b))
            for b in stopped:
                with contextlib.suppress(ClusterError, OSError):
                    self.cluster.launch(b)
            if stopped:
                done.append(f"started {_kind_of(stopped, self.cluster.brokers)} {', '.join(map(str, stopped))} again")
        for producer in self.producers:  # a Java producer is killed; kafka-python's are left to end with kcheck
            producer.abort()
        self.producers_done.set()
        until = time.monotonic() + 0.3  # the clients a moment to stop; kcheck's end does not wait for them
        for th in self.threads:
            th.join(max(0.0, until - time.monotonic()))
        return done

    def _resume_now(self, broker: int) -> bool:
        pid = self.cluster.pid_of(broker)
        if pid is None:
            return False
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGCONT)
        return True


def _kind_of(nodes: Sequence[int], brokers: Sequence[int]) -> str:
    return "broker(s)" if all(n in brokers for n in nodes) else "node(s)"


# ---------------------------------------------------------------------------------------------------------
# printing


def print_outcome(o: Outcome, out: Any) -> None:
    s, v = o.settings, o.verdict
    c = v.counts
    release = f"Kafka {o.cluster['version']}, " if o.cluster.get("version") else ""
    out.print(f"Campaign on {release}topic {escape(s.topic)}: {s.partitions} partition(s), RF {s.replication_factor}, "
              f"min.insync.replicas {s.min_insync_replicas}, unclean.leader.election.enable "
              f"{'true' if s.unclean else 'false'}; {o.seconds:.1f} s (heal {o.heal_seconds:.1f} s)")
    table = Table(title="Records", title_justify="left")
    for col in ("acks", "sent", "acknowledged", "failed", "unresolved", "lost"):
        table.add_column(col, justify="right" if col != "acks" else "left")
    for level in ("all", "1"):
        table.add_row(level, str(c[f"sent_acks_{level}"]), str(c[f"acked_acks_{level}"]),
                      str(c[f"failed_acks_{level}"]), str(c[f"unresolved_acks_{level}"]), str(c[f"lost_acks_{level}"]))
    out.print(table)
    _print_producers(v, out)
    for error in o.errors:
        out.print(f"[bold red]client error:[/] {escape(error)}")
    faults = ", ".join(f"{k} {n}" for k, n in sorted(v.faults.items())) or "none"
    skipped = ", ".join(f"{k.removeprefix('skipped_')} {n}" for k, n in sorted(c.items()) if k.startswith("skipped_"))
    out.print(f"Faults injected: {faults}" + (f"; skipped or failed: {skipped}" if skipped else ""))
    checks = Table(title="History checks", title_justify="left")
    for col in ("check", "anomaly", "verdict", "violations", "first violation", "faults before it"):
        checks.add_column(col, overflow="fold")
    for cid, vs in v.by_check().items():
        verdict = "[bold red]FAIL[/]" if vs else "ok"
        first = vs[0] if vs else None
        checks.add_row(cid, ANOMALIES.get(cid, ""), verdict, str(len(vs)), escape(first.message) if first else "",
                       escape("; ".join(first.faults_before)) if first else "")
    out.print(checks)
    _print_windows(v, out)
    if v.acks1_lost:
        first1 = v.acks1_lost[0]
        out.print(f"acks=1 records lost (not promised by Kafka, not a violation): {len(v.acks1_lost)}; the first: "
                  f"{first1['value']} at partition {first1['partition']} offset {first1['offset']}, after "
                  f"{escape('; '.join(first1['faults']))}")
    quorum = o.history.of(Quorum)
    if quorum:
        epochs = sorted({q.epoch for q in quorum})
        in_turn = [q.leader for q in sorted(quorum, key=lambda q: q.t)]
        leaders = ", ".join(str(n) for i, n in enumerate(in_turn) if i == 0 or in_turn[i - 1] != n)
        out.print(f"KRaft quorum (DescribeQuorum around controller faults): {len(quorum)} answer(s), leaders in turn "
                  f"{leaders}; epochs {epochs[0]}..{epochs[-1]}")
    if c.get("poll_skips"):
        out.print(f"poll skips (Jepsen's poll-skip; counted, not a violation): {c['poll_skips']} read(s) of the group "
                  "consumer jumped over records in the log")
    verdicts = {"clean": "CLEAN: no check failed",
                "violations": f"FAIL: {len(v.violations)} violation(s) of {sum(1 for x in v.by_check().values() if x)}"
                              f" check(s)",
                "incomplete": "INCOMPLETE: the cluster did not heal within the timeout (the final read may be short)"}
    out.print(verdicts[v.status])


def _print_windows(v: Verdict, out: Any) -> None:
    """Per failed check, the smallest slice of the history that shows its first violation (its `window`)."""
    for cid, vs in v.by_check().items():
        if vs and vs[0].window:
            name = f"{ANOMALIES[cid]} ({cid})" if ANOMALIES.get(cid) else cid
            out.print(f"The smallest window that shows the first {escape(name)}:")
            for e in vs[0].window:
                out.print(f"  {escape(event_text(e))}")


def _print_producers(v: Verdict, out: Any) -> None:
    """Per producer kind: what it sent and what became of it, with the findings (not violations) counted."""
    if not v.producers:
        return
    table = Table(title="Producers (duplicates and reorders of idempotent ones are violations, above; of the others "
                        "findings)", title_justify="left")
    heads = ("producer", "idempotent", "sessions", "sent", "acknowledged", "failed", "unresolved", "duplicates",
             "reorders", "indefinite failures", "of them committed", "stalls")
    for col in heads:
        table.add_column(col, justify="left" if col == "producer" else "right")
    for name, n in v.producers.items():
        table.add_row(name, "yes" if PRODUCER_KINDS[name].idempotent else "no",
                      *(str(n[k]) for k in ("sessions", "sent", "acknowledged", "failed", "unresolved", "duplicates",
                                            "reorders", "indefinite_failures", "indefinite_committed", "stalls")))
    out.print(table)
    if any(n["stalls"] for n in v.producers.values()):
        out.print("stalls: a kafka-python producer that neither acknowledged nor failed a send for 10 s on a healthy "
                  "cluster, restarted as a new session (a finding about kafka-python, not about Kafka)")


# ---------------------------------------------------------------------------------------------------------
# kcheck chaos
















__all__ = ["CHECKS", "Campaign", "Outcome", "Settings", "Step", "parse_schedule", "random_schedule"]
