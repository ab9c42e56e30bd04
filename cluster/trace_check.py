"""Trace validation at quiescent points: random replication-model runs, restricted to what an operator can do to a
cluster, played on real KRaft brokers with every observable compared after each step.

A run starts from the model's initial state (RF = brokers, broker 1 leading) and a new one-partition topic on
[1..n] led by broker 1 (`min.insync.replicas` from the config). Each step is one cluster action drawn at random
among those the model allows (`_choices`): a produce of one record with acks=all or acks=1; kill -9, a clean
shutdown or a pause past the session timeout of a broker (all of them may be down at once); the restart or resume
of one; a reassignment of the partition to another replica list (AlterPartitionReassignments: brokers added,
removed or reordered); an operator's unclean election of the leaderless partition when no replica can be elected
cleanly (`kafka-leader-election --election-type unclean`, KIP-460). Then both sides go quiet:

- the model runs its internal steps until none changes the state, in a fixed fair order (`INTERNAL`: metadata
  applied by each broker, AlterPartition and its answer, a fetch by each follower (KIP-320 truncation included),
  the high-watermark advance, the controller acting on a request to shut down and letting the broker go, fencing
  a dead broker and electing, a restarted broker unfenced);
  no step the cluster would not take on its own at a quiet point (no ISR shrink for lag, no dropped message);
- the cluster is polled until what is compared stops changing (`settle`), and after a kill until the controller
  has fenced the broker (broker.session.timeout.ms).

Compared then: leader, leader epoch (the model starts at 1, Kafka at 0: the increase since the start), replica
set with the replicas being added and removed, ISR, ELR, the leader's high watermark (ListOffsets LATEST as a
consumer) and each live broker's log end offset (ListOffsets with the debugging replica id,
`admin.log_end_offset`; none where it holds no replica). A difference is reported with both values. A step that
leaves every broker down is taken but not compared (nothing answers).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcheck.cluster import admin as ca
from kcheck.model.replication import Config, Protocol, apply, initial_state
from kcheck.model.replication.actions import Action, enabled
from kcheck.model.replication.state import NO_LEADER, State

INTERNAL = ("apply_metadata", "handle_alter_partition", "handle_alter_partition_response", "fetch_round", "truncate",
            "expand_isr", "advance_hw", "handle_controlled_shutdown", "complete_shutdown", "fence", "elect",
            "unfence")
# replica.high.watermark.checkpoint.interval.ms (Kafka's default, 5 s) and a margin: a broker killed sooner restarts
# with the high watermark of its previous checkpoint, lower than the one the model keeps across a crash (an
# abstraction: seen on 4.4.0 as a ListOffsets answer missing after a restarted broker was elected)
HW_CHECKPOINT_S = 6.0
FIELDS = ("leader", "leader_epoch", "replicas", "adding", "removing", "isr", "elr", "hw", "leo")


@dataclass
class Steps:
    """What a set of runs compared: steps, and each difference as (run, step, action, field, model, cluster)."""

    runs: int = 0
    steps: int = 0
    differences: list[tuple[int, int, str, str, Any, Any]] = field(default_factory=list)


def config(steps: int) -> Config:
    """Three brokers, RF 3, min ISR 2, KRaft, one fetch a step; budgets that never run out within `steps`."""
    return Config(brokers=3, min_isr=2, acks=("all", "1"), records=steps, crashes=steps, lossy_crashes=0,
                  fences=steps, shutdowns=steps, reassignments=steps, elections=0, isr_shrinks=0, failovers=0,
                  reads=0, duplicates=False, atomic_fetch=True, max_leader_epoch=10 * steps,
                  unclean_elections=steps)


def quiesce(s: State, p: Protocol, cfg: Config, paused: frozenset[int] = frozenset(), limit: int = 400) -> State:
    """The model's internal steps in `INTERNAL`'s order, each candidate once per round, until a round changes
    nothing. `fence` only of a dead broker (the session timeout), `unfence` only of a live one not in `paused`."""
    for _ in range(limit):
        moved = False
        for kind in INTERNAL:
            for a, nxt in enabled(s, p, cfg, kind):
                if (kind == "fence" and s.replica(a.args[0]).alive) or (kind == "unfence" and a.args[0] in paused):
                    continue
                if nxt != s:
                    s, moved = nxt, True
                    break
        if not moved:
            return s
    raise RuntimeError("the model did not go quiet")


def model_view(s: State, p: Protocol, epoch0: int, paused: frozenset[int] = frozenset()) -> dict[str, Any]:
    """The compared observables of the model (a paused broker's log end is not read: it cannot answer). The high
    watermark is what the leader answers a consumer's ListOffsets LATEST (rule `list_offsets_latest`: under KIP-207
    none while it lags behind the start of the leader's epoch, as after an unclean election below min ISR)."""
    reg = s.registry
    leader = reg.leader if reg.leader != NO_LEADER else -1
    live = leader != -1 and s.replica(leader).alive and leader not in paused
    hw = p.list_offsets_latest(s.replica(leader)) if live else None
    return {"leader": leader, "leader_epoch": reg.leader_epoch - epoch0, "replicas": reg.replicas,
            "adding": tuple(sorted(reg.adding)), "removing": tuple(sorted(reg.removing)),
            "isr": tuple(sorted(reg.isr)), "elr": tuple(sorted(reg.elr)), "hw": hw,
            "leo": tuple((b, s.replica(b).leo if s.replica(b).hosts else None) for b in sorted(s.brokers)
                         if s.replica(b).alive and b not in paused)}


def cluster_view(cluster: Any, topic: str, down: set[int], epoch0: int) -> dict[str, Any]:
    live = [b for b in cluster.brokers if b not in down]
    boot = _bootstrap(cluster, down)
    st = ca.partition_states(boot, topic)[0]
    hw = None
    if st.leader in live:
        hw = ca.high_watermark(f"127.0.0.1:{cluster.node(st.leader).port}", topic, 0)
    leos = tuple((b, ca.log_end_offset(f"127.0.0.1:{cluster.node(b).port}", topic, 0)) for b in live)
    return {"leader": st.leader, "leader_epoch": (st.leader_epoch or 0) - epoch0, "replicas": st.replicas,
            "adding": tuple(sorted(st.adding)), "removing": tuple(sorted(st.removing)),
            "isr": tuple(sorted(st.isr)), "elr": tuple(sorted(st.elr)), "hw": hw, "leo": leos}


def settle(read: Any, done: Any = lambda v: True, quiet_s: float = 1.5, timeout_s: float = 40.0) -> dict[str, Any]:
    """Poll `read()` until `done(view)` and the view has stayed the same for `quiet_s`."""
    deadline = time.monotonic() + timeout_s
    last, since = read(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = read()
        if now != last:
            last, since = now, time.monotonic()
        elif done(now) and time.monotonic() - since >= quiet_s:
            break
    return last


def _cluster_quiet(v: dict[str, Any], gone: frozenset[int]) -> bool:
    """The cluster has taken the steps the model's quiet point takes: no broker that is down in the ISR or leading,
    and no reassignment left that could complete (one whose added replicas are all running)."""
    moving = bool(v["adding"] or v["removing"]) and not set(v["adding"]) & gone and v["leader"] != -1
    return not gone & set(v["isr"]) and v["leader"] not in gone and not moving


def _choices(s: State, p: Protocol, cfg: Config, down: dict[int, str]) -> list[Action]:
    """The cluster actions the model allows: produce to the leader; kill -9, a clean shutdown or a pause (SIGSTOP
    past the session timeout: the model's fence of a live broker) of a running broker; the restart of a dead one or
    the resume of a paused one; a reassignment the controller accepts, when none is in flight and some broker runs
    (the model's `reassign` targets, at least two replicas); an unclean election where the model has one (a
    leaderless partition that no replica can lead cleanly) and some broker runs to take the request."""
    out = [a for a, _ in enabled(s, p, cfg, "produce") if a.args[0] == s.registry.leader]
    running = len(down) < len(s.brokers)
    if not s.registry.reassigning and running:
        out += [a for a, _ in enabled(s, p, cfg, "reassign") if len(a.args[0]) >= 2]
    if running:
        out += [a for a, _ in enabled(s, p, cfg, "unclean_election")]
    for b in s.brokers:
        if b not in down:
            out += [Action("crash", (b, False)), Action("controlled_shutdown", (b,)), Action("fence", (b,))]
    out += [Action("restart", (b,)) if how != "paused" else Action("unfence", (b,)) for b, how in down.items()]
    return out


def _bootstrap(cluster: Any, down: Any) -> str:
    """The running brokers' addresses, as a client's bootstrap list."""
    return ",".join(f"127.0.0.1:{cluster.node(x).port}" for x in cluster.brokers if x not in down)


def _act(cluster: Any, topic: str, a: Action, n: int, down: dict[int, str]) -> None:
    """Do `a` on the cluster; `down` follows (broker -> "dead" or "paused")."""
    b = a.args[0] if a.args else -1
    if a.kind == "produce":
        from kafka import KafkaProducer

        boot = _bootstrap(cluster, down)
        producer = KafkaProducer(bootstrap_servers=boot, acks=-1 if a.args[1] == "all" else 1, retries=0,
                                 linger_ms=0)
        try:
            producer.send(topic, value=b"x%d" % n, partition=0).get(timeout=15)
        finally:
            producer.close()
    elif a.kind == "reassign":
        boot = _bootstrap(cluster, down)
        ca.reassign(boot, topic, {0: list(a.args[0])})
    elif a.kind == "unclean_election":
        _unclean_election(cluster, topic, down)
    elif a.kind == "crash":
        time.sleep(HW_CHECKPOINT_S)  # the model's crash keeps the high watermark; Kafka keeps its last checkpoint
        cluster.kill(b)
        down[b] = "dead"
    elif a.kind == "controlled_shutdown":
        cluster.shutdown(b)
        down[b] = "dead"
    elif a.kind == "fence":
        cluster.pause(b)
        down[b] = "paused"
    elif a.kind == "unfence":
        cluster.resume(b)
        del down[b]
    else:
        cluster.restart(b)
        del down[b]


def _unclean_election(cluster: Any, topic: str, down: dict[int, str]) -> None:
    """`kafka-leader-election --election-type unclean` of the release, on partition 0 of `topic`. Where Kafka
    refuses (the tool says why and exits non-zero), the comparison that follows shows the partition still without
    a leader against the model's election."""
    from kcheck.reference import kafka_tools

    boot = _bootstrap(cluster, down)
    kafka_tools.run(cluster.version, "kafka-leader-election", [
        "--bootstrap-server", boot, "--election-type", "unclean", "--topic", topic, "--partition", "0"])


# The shortest way three brokers reach an unclean election: the partition's last replicas die in turn (2 and 1 hold
# the second record, 3 does not), 3 returns first and nobody can lead it cleanly (the ELR's 1 and 2 are down), the
# operator's unclean election makes 3 the leader (the acknowledged second record is gone), and 1 and 2 return,
# truncate to it and rejoin, then a write goes through the new leader.
UNCLEAN_SCRIPT = (Action("produce", (1, "all")), Action("crash", (3, False)), Action("produce", (1, "all")),
                  Action("crash", (2, False)), Action("crash", (1, False)), Action("restart", (3,)),
                  Action("unclean_election", ()), Action("restart", (1,)), Action("restart", (2,)),
                  Action("produce", (3, "all")))


def run_one(cluster: Any, p: Protocol, cfg: Config, seed: int, steps: int, out: Steps, log: Any = None) -> None:
    """One random run on a new topic of `cluster` (every broker running at the start and at the end)."""
    rng = random.Random(seed)

    def pick(s: State, down: dict[int, str], n: int) -> Action | None:
        options = _choices(s, p, cfg, down)
        moves = [x for x in options if x.kind == "reassign"]  # one of them counts as one option
        options = [x for x in options if x.kind != "reassign"] + ([rng.choice(moves)] if moves else [])
        unclean = [x for x in options if x.kind == "unclean_election"]
        if unclean and rng.random() < 0.5:  # rare to reach (every ISR and ELR member down): taken half the time
            return unclean[0]
        writes = [x for x in options if x.kind == "produce"]
        return rng.choice(writes if writes and rng.random() < 0.5 else options)  # half the steps write, if they can

    _run(cluster, p, cfg, seed, steps, out, pick, log)


def run_script(cluster: Any, p: Protocol, cfg: Config, name: int, script: Sequence[Action], out: Steps,
               log: Any = None) -> None:
    """A given run (`script`, actions the model must allow in turn) played and compared as `run_one` plays a random
    one; `name` numbers its topic and its differences."""
    _run(cluster, p, cfg, name, len(script), out, lambda s, down, n: script[n - 1], log)


def _run(cluster: Any, p: Protocol, cfg: Config, seed: int, steps: int, out: Steps,
         pick: Callable[[State, dict[int, str], int], Action | None], log: Any) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = f"trace-{seed}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, client_id="kcheck-trace")
    try:
        admin.create_topics([NewTopic(topic, replica_assignments={0: list(cluster.brokers)},
                                      topic_configs={"min.insync.replicas": str(cfg.min_isr)})])
    finally:
        admin.close()
    s = quiesce(initial_state(cfg), p, cfg)
    down: dict[int, str] = {}
    first = ca.wait_for_states(cluster.bootstrap, topic, lambda x: len(x[0].isr) == len(cluster.brokers) and x[0], 30)
    epoch0 = first.leader_epoch or 0
    out.runs += 1
    try:
        for n in range(1, steps + 1):
            a = pick(s, down, n)
            nxt = None if a is None else apply(s, p, cfg, a)
            if a is None or nxt is None:
                continue
            _act(cluster, topic, a, n, down)
            paused = frozenset(b for b, how in down.items() if how == "paused")
            s = quiesce(nxt, p, cfg, paused)
            if len(down) == len(cluster.brokers):
                continue  # nothing answers: taken, not compared
            _compare(cluster, topic, s, p, down, paused, epoch0, out, (seed, n, a.label()), log)
    finally:
        for b, how in sorted(down.items()):
            if how == "paused":
                cluster.resume(b)
            else:
                cluster.restart(b)


def _compare(cluster: Any, topic: str, s: State, p: Protocol, down: dict[int, str], paused: frozenset[int],
             epoch0: int, out: Steps, where: tuple[int, int, str], log: Any) -> None:
    gone = frozenset(down)
    seen = settle(lambda: cluster_view(cluster, topic, set(gone), epoch0), lambda v: _cluster_quiet(v, gone))
    want = model_view(s, p, 1, paused)
    out.steps += 1
    for f in FIELDS:
        if want[f] != seen[f]:
            out.differences.append((*where, f, want[f], seen[f]))
    if log is not None:
        log(f"run {where[0]} step {where[1]} {where[2]}: model {want} cluster {seen}")
