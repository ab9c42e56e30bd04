"""`kcheck replay --on-cluster TRACE`: a replication-model trace's faults and operator steps played on real
KRaft brokers, the cluster's outcome compared with the model's prediction step by step.

The cluster: the one `--dir` names if a cluster runs there (`kcheck cluster up --dir`), else a new one of
`--kafka-version` with as many brokers as the trace's config (stopped at the end). Model broker i is cluster
broker i (both number their brokers 1..n; a started cluster has exactly n). One new topic with one partition
whose replicas are [1..RF] in the model's order (broker 1, the model's first leader, is the preferred one),
`min.insync.replicas` from the trace, `unclean.leader.election.enable=true` when the protocol's leader choice
is `unclean_allowed` (the unclean-election variant), else false (Kafka's default). Kafka's defaults hold
(a started cluster's too): a follower kept from fetching leaves the ISR when the controller fences it, after
broker.session.timeout.ms (9 s), which is sooner than replica.lag.time.max.ms (30 s).

Each model step maps onto the cluster as follows (`ACTIONS`):
- produce: one record `x<id>` (the model's record id) sent once (no retries) with the step's acks through
  kafka-python's producer, which writes to the leader the cluster has (a model step producing to a zombie leader
  cannot be forced);
- crash: kill -9; a lossy crash: `kcheck.cluster.lossy.lossy_kill` (kill -9, logs cut back to the recovery point);
- restart: start the broker and wait until it is unfenced;
- fence of a live broker: pause it (SIGSTOP: it stops heartbeating; the controller fences it after
  broker.session.timeout.ms); fence of a dead broker: the controller noticing the crash (nothing to do but wait);
- unfence: resume (SIGCONT) a paused broker; a dead broker's unfence is its restart;
- elect: nothing (Kafka's controller elects a leader on its own as soon as it can);
- move_leader: a preferred election (ElectLeaders) when the target is the first replica, else a reassignment
  that puts the target first (the same replicas), then a preferred election;
- reassign / cancel_reassignment: AlterPartitionReassignments with the target, or with none (cancel).
- A follower that the model keeps from fetching a record (its next step in the trace is `shrink_isr` of it,
  its fence or its crash, not a fetch) is held: paused before the produce, until its next fetch in the model,
  or its fence (then it stays paused as the fenced zombie), or its leader's crash (resumed once the controller has
  taken the dead leader out, so that it cannot fetch from the leader's next incarnation, and given the time for
  an election before the next step: the model's restart of the leader is then played after the election).
- Not mappable (the cluster does these on its own, or cannot be made to): fetch, handle_fetch(_response),
  fetch_round, truncate, advance_hw, expand_isr, shrink_isr, AlterPartition and LeaderAndIsr deliveries, drop,
  flush (a step at which the model acknowledges a record waits for the cluster's acknowledgement of it);
  failover and zombie_move_leader (one KRaft controller, whose quorum fences a stale one by epoch);
  consume (the final read compares what a consumer gets).

After each mapped step the cluster is polled (up to `settle_s`) until its leader and ISR are the model's
(`kcheck.cluster.admin.partition_states`): match, or differs with both shown; after a step that cannot be
mapped but moved the model's leader or ISR, the cluster is given the same time to get there on its own. At the
end the cluster heals (paused brokers resumed, dead ones started) and a consumer reads the partition: the
acknowledged records the model says are lost (not on its leader's log; with no leader, on no replica's log) are
compared with the records the cluster acknowledged and a consumer cannot read back. The model's leader epochs
start at 1, Kafka's at 0: epochs are shown, not compared. After a restart the restarted broker may be back in
the cluster's ISR before the poll: that counts as a match (the model's next steps would add it).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcheck.cluster.admin import (
    PartitionState,
    elect_leaders,
    live_bootstrap,
    partition_states,
    reassign,
    wait_until,
)
from kcheck.cluster.folder import check_new, has_cluster
from kcheck.cluster.live import kafka_log_level
from kcheck.cluster.local import DEFAULT_VERSION, LocalCluster, release_option
from kcheck.cluster.lossy import lossy_kill
from kcheck.inputs.formats import InputError
from kcheck.model.replication.actions import Action
from kcheck.model.replication.state import NO_LEADER, State
from kcheck.runtime import interrupts

NOT_MAPPABLE = {
    "fetch": "the cluster replicates on its own", "handle_fetch": "the cluster replicates on its own",
    "handle_fetch_response": "the cluster replicates on its own", "fetch_round": "the cluster replicates on its own",
    "truncate": "a follower truncates on its own", "advance_hw": "the leader moves its high watermark on its own",
    "expand_isr": "the leader adds caught-up followers on its own",
    "shrink_isr": "the leader drops a follower only when it stops fetching (held followers do)",
    "handle_alter_partition": "AlterPartition is the brokers' own traffic",
    "handle_alter_partition_response": "AlterPartition is the brokers' own traffic",
    "handle_leader_and_isr": "brokers follow the metadata log on their own",
    "handle_stop_replica": "brokers follow the metadata log on their own",
    "drop": "the cluster's network on loopback cannot be made to lose one message",
    "flush": "Kafka flushes on its own schedule (the recovery point)",
    "failover": "one KRaft controller; a stale one is fenced by the quorum's epoch",
    "zombie_move_leader": "a KRaft controller that lost its epoch cannot write",
    "consume": "the final read compares what a consumer gets",
}
FETCH_WAIT_S = 1.0  # replica.fetch.wait.max.ms (500 ms) and a margin
SETTLE_S = 25.0  # fencing a silent broker takes broker.session.timeout.ms (9 s) plus an election
SESSION_S = 11.0  # broker.session.timeout.ms (9 s) and a margin


@dataclass
class Row:
    number: int
    model_step: str
    cluster_action: str
    model_says: str
    cluster_shows: str
    verdict: str  # match | differs | not mappable


@dataclass
class Outcome:
    rows: list[Row] = field(default_factory=list)
    model_lost: list[str] = field(default_factory=list)
    cluster_lost: list[str] = field(default_factory=list)
    model_acked: list[str] = field(default_factory=list)
    cluster_acked: list[str] = field(default_factory=list)
    cluster_read: list[str] = field(default_factory=list)
    model_violations: list[str] = field(default_factory=list)  # the invariants the model's last step breaks
    model_leader: int = NO_LEADER
    cluster_leader: int = NO_LEADER
    notes: list[str] = field(default_factory=list)

    @property
    def differs(self) -> list[int]:
        return [r.number for r in self.rows if r.verdict == "differs"]

    @property
    def outcome_matches(self) -> bool:
        return self.model_lost == self.cluster_lost

    @property
    def reproduced(self) -> bool:
        """The model's loss of acknowledged records happened on the cluster too."""
        return bool(self.model_lost) and self.outcome_matches


def _state_text(leader: int, isr: Iterable[int], epoch: int | None = None) -> str:
    who = "no leader" if leader == NO_LEADER else f"leader {leader}"
    at = "" if epoch is None else f" (epoch {epoch})"
    return f"{who}{at}, ISR {{{','.join(map(str, sorted(isr)))}}}"


def _model_view(s: State) -> tuple[int, frozenset[int]]:
    return s.registry.leader, frozenset(s.registry.isr)


def _holds_until_shrink(steps: Sequence[Action], start: int, follower: int) -> bool:
    """In the model, does `follower` stay without fetching until it leaves the ISR (dropped as slow, fenced) or
    crashes?"""
    for a in steps[start:]:
        if a.kind in ("fetch", "fetch_round") and a.args[0] == follower:
            return False
        if (a.kind == "shrink_isr" and a.args[1] == follower) or (a.kind in ("fence", "crash")
                                                                    and a.args[0] == follower):
            return True
    return False


class _Replayer:
    def __init__(self, cluster: LocalCluster, topic: str, settle_s: float) -> None:
        self.cluster = cluster
        self.topic = topic
        self.settle_s = settle_s
        self.paused: dict[int, str] = {}  # broker -> why: "hold" (kept from fetching) or "fence"
        self.observed: PartitionState | None = None  # a step's outcome read during the step (see crash)
        self.unreadable = False
        self.sent: list[tuple[str, Any]] = []  # (value, future)
        self._producers: dict[str, Any] = {}

    # -- cluster reads -----------------------------------------------------------------------------------

    def now(self) -> PartitionState | None:
        try:
            return partition_states(live_bootstrap(self.cluster), self.topic, timeout_s=8)[0]
        except (InputError, KeyError):
            return None

    def settle(self, want: tuple[int, frozenset[int]]) -> tuple[PartitionState | None, bool]:
        last: list[PartitionState | None] = [None]

        def check() -> bool:
            last[0] = self.now()
            return last[0] is not None and (last[0].leader, frozenset(last[0].isr)) == want

        ok = bool(wait_until(check, self.settle_s, 0.5))
        return last[0], ok

    # -- cluster actions ---------------------------------------------------------------------------------

    def producer(self, acks: str) -> Any:
        from kafka import KafkaProducer

        if acks not in self._producers:
            self._producers[acks] = KafkaProducer(
                bootstrap_servers=live_bootstrap(self.cluster).split(","), acks={"all": "all", "1": 1, "0": 0}[acks],
                # One attempt, as the model's produce is one append: a retry would write the record again, maybe
                # to the next leader, and save what the model loses. The request waits long enough for the ISR to
                # shrink around a held follower (fencing takes broker.session.timeout.ms, 9 s).
                linger_ms=0, retries=0, enable_idempotence=False, request_timeout_ms=30_000,
                delivery_timeout_ms=31_000, max_block_ms=10_000)
        return self._producers[acks]

    def warm_up(self, acks: Sequence[str]) -> None:
        """Producers made, with the topic's metadata, before any broker is paused: a refresh of it may go to any
        broker the client knows, and a paused one never answers."""
        for a in acks:
            wait_until(lambda a=a: self.producer(a).partitions_for(self.topic), 15)

    def produce(self, value: str, acks: str) -> str:
        try:
            future = self.producer(acks).send(self.topic, value=value.encode(), partition=0)
        except Exception as e:  # noqa: BLE001 - no metadata in time: the record was never sent
            return f"{value} not sent ({type(e).__name__})"
        self.sent.append((value, future))
        try:
            md = future.get(timeout=3)
        except Exception as e:  # a timeout or Kafka's error: the record may still be acknowledged later
            return f"{value} sent, not acknowledged within 3 s ({type(e).__name__})"
        return f"{value} acknowledged at offset {md.offset}"

    def await_acks(self, values: Sequence[str]) -> tuple[str, str]:
        """Wait (up to settle_s) for the cluster's answers to these records: (what it shows, match/differs)."""
        shown, ok = [], True
        for value in values:
            future = next((f for v, f in self.sent if v == value), None)
            if future is None:
                shown.append(f"{value} was not sent")
                ok = False
                continue
            try:
                md = future.get(timeout=self.settle_s)
                shown.append(f"{value} acknowledged at offset {md.offset}")
            except Exception as e:  # noqa: BLE001 - Kafka's refusal or no answer: the model acknowledged it
                shown.append(f"{value} not acknowledged ({type(e).__name__})")
                ok = False
        return "; ".join(shown), "match" if ok else "differs"

    def pause(self, broker: int, why: str) -> bool:
        """Pause a broker (True if this paused it). A held follower's fetch already waiting at the leader (a long
        poll of up to replica.fetch.wait.max.ms, 500 ms by default) would still carry a record produced now into
        its socket buffer: that is waited out."""
        if broker in self.paused:
            self.paused[broker] = why
            return False
        if not self.cluster.is_running(broker):
            return False
        self.cluster.pause(broker)
        self.paused[broker] = why
        if why == "hold":
            time.sleep(FETCH_WAIT_S)
        return True

    def release(self, broker: int, why: str | None = None) -> bool:
        """Resume a broker paused (for `why`, if given); True if it was."""
        if broker not in self.paused or (why is not None and self.paused[broker] != why):
            return False
        del self.paused[broker]
        if self.cluster.is_running(broker):
            self.cluster.resume(broker)
        return True

    def close(self, timeout_s: float = 5.0) -> None:
        for p in self._producers.values():
            try:
                p.close(timeout=timeout_s)
            except Exception:  # noqa: S110 - a producer to a dead cluster may fail to close; nothing to keep
                pass


def _describe(a: Action) -> str:
    return a.label()


def prepare_cluster(version: str | None, directory: str | None, brokers: int) -> LocalCluster:
    """`--kafka-version` and `--dir` of `replay --on-cluster`, checked before anything starts (one line, exit 2):
    the cluster set up in `directory` (its folder's identity checked, as every command checks it: kcheck.
    cluster_folder; enough brokers, each running; its release the one asked for, if one was), else a cluster to
    start (a release kcheck can run; a folder a cluster can be set up in, or a temporary one)."""
    release = release_option(version) if version is not None else None
    if directory is not None and has_cluster(directory):
        cluster = LocalCluster.attach(directory)
        if release is not None and release != cluster.version:
            raise InputError("--kafka-version", f"{release}, but the cluster in --dir runs Kafka {cluster.version}")
        if len(cluster.brokers) < brokers:
            raise InputError("--dir", f"the cluster in {directory} has {len(cluster.brokers)} broker(s); the trace "
                                      f"needs {brokers}")
        for row in cluster.status():
            if row["role"] == "broker" and row["state"] != "running":
                raise InputError("--dir", f"broker {row['node']} of the cluster in {directory} is {row['state']}")
        return cluster
    return LocalCluster(release or DEFAULT_VERSION, brokers,
                        directory=check_new(directory) if directory is not None else None)


def run_on_cluster(trace: Any, protocol: Any, model_steps: list[Any], cluster: LocalCluster,
                   settle_s: float = SETTLE_S) -> tuple[Outcome, dict[str, Any]]:
    """Play the trace on `cluster` (running, or not started yet: then started here and stopped at the end); the
    step table and the final comparison. Every broker runs again at the end of a cluster this did not start. On an
    interrupt the caller runs `undo`: a cluster started here killed at once, paused brokers of one it did not start
    resumed and stopped ones started again without waiting."""
    cfg = trace.config
    n, rf = cfg.brokers, cfg.rf
    unclean = protocol.rules().get("leader_choice") == "unclean_allowed"
    if len(cluster.brokers if cluster._state is not None else range(cluster.broker_count)) < n:
        raise InputError("cluster", f"the cluster has {len(cluster.brokers)} broker(s); the trace needs {n}")
    started = cluster._state is None
    if started:
        cluster.start()
    outcome = Outcome()
    topic = f"kcheck-replay-{uuid.uuid4().hex[:8]}"
    info: dict[str, Any] = {"kafka_version": cluster.version, "bootstrap": cluster.bootstrap, "started": started,
                            "topic": topic, "unclean_leader_election": unclean,
                            "broker_mapping": "model broker i is cluster broker i; replicas [1..RF] in the model's "
                                              "order"}
    replayer = _Replayer(cluster, topic, settle_s)
    try:
        _create_topic(cluster, topic, rf, cfg.min_isr, unclean)
        replayer.warm_up(cfg.acks)
        _play(replayer, trace, model_steps, outcome)
    except BaseException as e:
        if interrupts.by_interrupt(e):  # the caller undoes (undo); the producers' waits are not kept
            replayer.close(timeout_s=0.0)
            raise
        replayer.close()
        _finish(cluster, started)
        raise
    replayer.close()
    _finish(cluster, started)
    return outcome, info


def _finish(cluster: LocalCluster, started: bool) -> None:
    """A cluster this run started is stopped; one it did not start has every broker running again."""
    if started:
        cluster.stop()
        return
    for row in cluster.status():
        if row["role"] == "broker" and row["state"] == "paused":
            cluster.resume(row["node"])
        elif row["role"] == "broker" and row["state"] == "stopped":
            cluster.restart(row["node"])


def undo(cluster: LocalCluster, started: bool) -> str:
    """After an interrupt, at once: what this run started is stopped, what it paused or stopped of a cluster it did
    not start runs again (without waiting for it); what was done, for the one line."""
    if started:
        if cluster._dir is not None:
            cluster.stop(kill=True)
            return "stopped the cluster it started and removed its folder"
        return "nothing was started"
    done = []
    for row in cluster.status():
        if row["role"] == "broker" and row["state"] == "paused":
            cluster.resume(row["node"])
            done.append(f"resumed broker {row['node']}")
        elif row["role"] == "broker" and row["state"] == "stopped":
            cluster.launch(row["node"])
            done.append(f"started broker {row['node']} again")
    return "; ".join(done) or "the cluster runs as it did"


def _create_topic(cluster: LocalCluster, topic: str, rf: int, min_isr: int, unclean: bool) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap.split(","), request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(topic, replica_assignments={0: list(range(1, rf + 1))}, topic_configs={
            "min.insync.replicas": str(min_isr), "unclean.leader.election.enable": str(unclean).lower()})])
    finally:
        admin.close()


def _play(rp: _Replayer, trace: Any, model_steps: list[Any], out: Outcome) -> None:
    steps: tuple[Action, ...] = trace.steps
    first = model_steps[0].state
    got, ok = rp.settle(_model_view(first))
    leader, isr = _model_view(first)
    out.rows.append(Row(0, "initial state", f"create topic {rp.topic} (replicas 1..{trace.config.rf})",
                        _state_text(leader, isr, first.registry.leader_epoch),
                        _state_text(got.leader, got.isr, got.leader_epoch) if got else "topic not readable",
                        "match" if ok else "differs"))
    if trace.config.initial_isr and trace.config.initial_isr < trace.config.rf:
        out.notes.append(f"the trace starts with an ISR of {trace.config.initial_isr} of {trace.config.rf} "
                         "replicas; a new topic starts with every replica in its ISR")
    for n, a in enumerate(steps, 1):
        interrupts.check()
        before, after = model_steps[n - 1].state, model_steps[n].state
        action = _map(rp, steps, n, a, before, after)
        leader, isr = _model_view(after)
        says = _state_text(leader, isr, after.registry.leader_epoch)
        newly = sorted(i for _, i in (after.history.acked - before.history.acked))
        if action is None and newly:  # the model's producer got its answer: wait for the cluster's
            out.rows.append(Row(n, _describe(a), "wait for the acknowledgement", f"{says}; acknowledges "
                                + ", ".join(f"x{i}" for i in newly), *rp.await_acks([f"x{i}" for i in newly])))
            continue
        if action is None:
            why = f"not mappable: {NOT_MAPPABLE.get(a.kind, a.kind)}"
            if _model_view(before) != (leader, isr):  # the model's controller moved: the cluster must on its own
                got, ok = rp.settle((leader, isr))
                now = _state_text(got.leader, got.isr, got.leader_epoch) if got else "partition not readable"
                why += f"; {'reached on its own' if ok else 'not reached within the wait'}: {now}"
            out.rows.append(Row(n, _describe(a), "-", says, why, "not mappable"))
            continue
        extra = ""
        if a.kind == "produce":
            rec = after.replica(a.args[0]).log[-1]
            says = f"x{rec.id} appended at offset {after.replica(a.args[0]).leo - 1} by {a.args[0]}; {says}"
            extra = action
            action = f"produce x{rec.id} (acks={a.args[1]})"
        if rp.unreadable:
            rp.unreadable = False
            out.rows.append(Row(n, _describe(a), action, says, "not readable: every other broker is paused or down",
                                "not mappable"))
            continue
        if rp.observed is not None:
            got, ok = rp.observed, (rp.observed.leader, frozenset(rp.observed.isr)) == (leader, isr)
            rp.observed = None
        else:
            got, ok = rp.settle((leader, isr))
        if not ok and got is not None and a.kind == "restart" and got.leader == leader \
                and frozenset(got.isr) == isr | {a.args[0]}:
            ok = True  # already caught up and back in the ISR: the model's expand_isr would follow
        shows = _state_text(got.leader, got.isr, got.leader_epoch) if got else "partition not readable"
        if extra:
            shows = f"{extra}; {shows}"
        out.rows.append(Row(n, _describe(a), action, says, shows, "match" if ok else "differs"))
    last = model_steps[-1].state
    out.model_leader = last.registry.leader
    out.model_violations = sorted({v.invariant for v in model_steps[-1].violations})
    _final(rp, last, out, trace.config.brokers)


def _map(rp: _Replayer, steps: Sequence[Action], n: int, a: Action, before: State, after: State) -> str | None:
    """Do step `n` on the cluster; the text of what was done, or None when it cannot be mapped."""
    c = rp.cluster
    kind = a.kind
    if kind == "produce":
        return _produce(rp, steps, n, a, before, after)
    if kind in ("fetch", "fetch_round") and rp.release(a.args[0], "hold"):
        return f"resume broker {a.args[0]} (held until this fetch)"
    if kind == "crash":
        return _crash(rp, a, before)
    if kind == "restart":
        c.restart(a.args[0])
        return f"start broker {a.args[0]} (waited until unfenced)"
    if kind == "fence":
        broker = a.args[0]
        if before.replica(broker).alive:
            was_paused = broker in rp.paused
            rp.pause(broker, "fence")
            return f"{'keep broker paused' if was_paused else 'pause broker'} {broker} (it stops heartbeating)"
        return f"none: the controller notices broker {broker} is gone (broker.session.timeout.ms)"
    if kind == "unfence":
        broker = a.args[0]
        return f"resume broker {broker}" if rp.release(broker) else f"none: broker {broker} registers on its own"
    if kind == "elect":
        return "none: the controller elects a leader on its own"
    if kind == "move_leader":
        return _move_leader(rp, a, before)
    if kind == "reassign":
        target = list(a.args[0])
        reassign(live_bootstrap(c), rp.topic, {0: target})
        return f"reassign to {','.join(map(str, target))}"
    if kind == "cancel_reassignment":
        reassign(live_bootstrap(c), rp.topic, {0: None})
        return "cancel the reassignment"
    return None


def _produce(rp: _Replayer, steps: Sequence[Action], n: int, a: Action, before: State, after: State) -> str:
    """A produce, the followers that must not fetch it before the model's ISR shrink paused first."""
    broker, acks = a.args
    for f in before.registry.replicas:
        r = before.replica(f)
        if f != broker and r.alive and _holds_until_shrink(steps, n, f):
            rp.pause(f, "hold")
    rec = after.replica(broker).log[-1]
    return rp.produce(f"x{rec.id}", acks)


def _crash(rp: _Replayer, a: Action, before: State) -> str:
    """kill -9 (or a lossy kill) of a broker; followers held for it resumed once the controller moved on."""
    c = rp.cluster
    broker, lossy = a.args
    rp.paused.pop(broker, None)  # SIGKILL ends a stopped process too
    if lossy:
        cut = lossy_kill(c, broker)
        text = f"lossy-kill broker {broker} ({cut.records_cut} unflushed record(s) cut)"
    else:
        c.kill(broker)
        text = f"kill -9 broker {broker}"
    held = [f for f in sorted(rp.paused) if rp.paused[f] == "hold" and before.replica(f).leader == broker]
    if held:  # the step's own outcome, read now: the controller has not noticed yet, as in the model
        rp.observed = rp.now()
        rp.unreadable = rp.observed is None  # no broker to ask: every other one is paused or down
        # the held follower is resumed once the controller has taken the dead leader out: it must not fetch
        # from the leader's next incarnation; with no broker to ask, wait out the broker session
        if rp.unreadable:
            time.sleep(SESSION_S)
        else:
            wait_until(lambda: (st := rp.now()) is not None and st.leader != broker, rp.settle_s, 0.5)
    released = [f for f in held if rp.release(f, "hold")]
    if released:  # and, where the topic allows an unclean election, until the controller made one
        wait_until(lambda: (st := rp.now()) is not None and st.leader not in (broker, NO_LEADER), rp.settle_s, 0.5)
        text += f"; resume held broker(s) {','.join(map(str, released))} (their leader is gone)"
    return text


def _move_leader(rp: _Replayer, a: Action, before: State) -> str:
    """The target first in the replica set (a reassignment when it is not), then a preferred election."""
    c = rp.cluster
    target = a.args[0]
    replicas = list(before.registry.replicas)
    text = ""
    if replicas and replicas[0] != target:
        order = [target] + [b for b in replicas if b != target]
        reassign(live_bootstrap(c), rp.topic, {0: order})
        wait_until(lambda: (s := rp.now()) is not None and list(s.replicas) == order, 10)
        text = f"reassign to {','.join(map(str, order))} (target first); "
    answer = elect_leaders(live_bootstrap(c), rp.topic, [0], unclean=False).get(0)
    return text + f"elect-preferred ({answer or 'elected'})"


def _final(rp: _Replayer, last: State, out: Outcome, brokers: int) -> None:
    """What the model loses (acknowledged records the leader's log, or with no leader every replica's log, does not
    hold at their offset) against what the cluster loses once healed (records it acknowledged that a consumer
    cannot read back)."""
    h = last.history
    acked = {rid: off for off, rid in h.acked | h.acked_leader_only}
    committed = {rid: off for off, rid in h.committed if rid not in acked}
    leader = last.registry.leader
    logs = [last.replica(leader)] if leader != NO_LEADER else list(last.replicas)  # what a consumer could get
    held = {(off, rec.id) for r in logs for off, rec in enumerate(r.log)}
    out.model_acked = [f"x{i}" for i in sorted(acked)]
    out.model_lost = [f"x{i}" for i in sorted(acked) if (acked[i], i) not in held]
    unacked_lost = [f"x{i}" for i in sorted(committed) if (committed[i], i) not in held]
    if unacked_lost:
        out.notes.append(f"the model also loses {', '.join(unacked_lost)}: committed below a high watermark but "
                         "never acknowledged; not compared (the cluster's high watermark is not tracked)")
    for _, future in rp.sent:
        try:
            future.get(timeout=5)
        except Exception:  # noqa: S112 - not acknowledged: not counted
            continue
    out.cluster_acked = sorted((v for v, f in rp.sent if f.is_done and f.succeeded()), key=lambda v: int(v[1:]))
    healed = []
    for b in sorted(rp.paused):
        rp.release(b)
        healed.append(f"resumed {b}")
    for b in range(1, brokers + 1):
        if not rp.cluster.is_running(b):
            rp.cluster.restart(b)
            healed.append(f"started {b}")
    if healed:
        out.notes.append(f"healed for the final read: {', '.join(healed)}")
    got = wait_until(lambda: (st := rp.now()) is not None and st.leader != NO_LEADER and st, rp.settle_s, 0.5)
    out.cluster_leader = got.leader if got else NO_LEADER
    read = _read_all(rp) if got else None
    must = set(out.cluster_acked)
    if read is None:
        out.notes.append("the cluster's partition has no leader at the end: nothing can be read")
        read = []
    out.cluster_read = sorted(set(read), key=lambda v: int(v[1:]))
    out.cluster_lost = sorted((v for v in must if v not in set(read)), key=lambda v: int(v[1:]))


def _read_all(rp: _Replayer) -> list[str] | None:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=live_bootstrap(rp.cluster).split(","), enable_auto_commit=False,
                             auto_offset_reset="earliest", request_timeout_ms=15_000)
    try:
        tp = TopicPartition(rp.topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        values: list[str] = []
        deadline = time.monotonic() + 20
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values += [r.value.decode() for r in records]
        return values
    except Exception:  # noqa: BLE001 - an unreadable partition is reported as such
        return None
    finally:
        consumer.close()


# ---------------------------------------------------------------------------------------------------------
# output


def verdict(out: Outcome) -> str:
    if out.reproduced:
        return f"reproduced: the cluster lost the acknowledged record(s) the model loses ({', '.join(out.model_lost)})"
    if out.outcome_matches:
        same = "same outcome: neither the model nor the cluster lost an acknowledged record"
        if out.model_violations:
            return (f"{same}; the model's run ends in {', '.join(out.model_violations)}, which a cluster shows only "
                    "as lost acknowledged records: not reproduced")
        return same
    return (f"not reproduced: the model loses {', '.join(out.model_lost) or 'nothing'}, the cluster lost "
            f"{', '.join(out.cluster_lost) or 'nothing'} of what it acknowledged")




def replay_on_cluster(trace: Any, resolved: Any, model_steps: list[Any], cluster: LocalCluster
                      ) -> tuple[Outcome, dict[str, Any]]:
    """The trace run on the cluster beside the model: what each did, and the cluster's settings (`report` prints
    them)."""
    started = cluster._state is None
    with kafka_log_level(logging.CRITICAL):  # the client logs every refused connection of a fault
        try:
            outcome, info = run_on_cluster(trace, resolved.protocol, model_steps, cluster)
        except BaseException as e:
            if not interrupts.by_interrupt(e):
                raise
            with interrupts.shielded():  # undone before kcheck's one line (cli.main), which says what was
                interrupts.note(undo(cluster, started))
            raise
    return outcome, info
