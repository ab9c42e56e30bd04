"""Trace validation at quiescent points: random replication-model runs, restricted to what an operator can do to a
cluster, played on real KRaft brokers with every observable compared after each step.

A run starts from the model's initial state (RF = brokers, broker 1 leading) and a new one-partition topic on
[1..n] led by broker 1 (`min.insync.replicas` from the config). Each step is one cluster action drawn at random
among those the model allows: an acks=all produce of one record, kill -9 of a broker (at most one down at a time),
or the restart of the dead one. Then both sides go quiet:

- the model runs its internal steps until none changes the state, in a fixed fair order (`INTERNAL`: metadata
  applied by each broker, AlterPartition and its answer, a fetch by each follower (KIP-320 truncation included),
  the high-watermark advance, the controller fencing a dead broker and electing, a restarted broker unfenced);
  no step the cluster would not take on its own at a quiet point (no ISR shrink for lag, no dropped message);
- the cluster is polled until what is compared stops changing (`settle`), and after a kill until the controller
  has fenced the broker (broker.session.timeout.ms).

Compared then: leader, leader epoch (the model starts at 1, Kafka at 0: the increase since the start), ISR, ELR,
the leader's high watermark (ListOffsets LATEST as a consumer) and each live replica's log end offset (ListOffsets
with the debugging replica id, `admin.log_end_offset`). A difference is reported with both values.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

from kcheck.cluster import admin as ca
from kcheck.model.replication import Config, Protocol, apply, initial_state
from kcheck.model.replication.actions import Action, enabled
from kcheck.model.replication.state import NO_LEADER, State

INTERNAL = ("apply_metadata", "handle_alter_partition", "handle_alter_partition_response", "fetch_round", "truncate",
            "expand_isr", "advance_hw", "fence", "elect", "unfence")
FIELDS = ("leader", "leader_epoch", "isr", "elr", "hw", "leo")


@dataclass
class Steps:
    """What a set of runs compared: steps, and each difference as (run, step, action, field, model, cluster)."""

    runs: int = 0
    steps: int = 0
    differences: list[tuple[int, int, str, str, Any, Any]] = field(default_factory=list)


def quiesce(s: State, p: Protocol, cfg: Config, limit: int = 400) -> State:
    """The model's internal steps in `INTERNAL`'s order, each candidate once per round, until a round changes
    nothing. `fence` only of a dead broker (the session timeout), `unfence` only of a live one."""
    for _ in range(limit):
        moved = False
        for kind in INTERNAL:
            for a, nxt in enabled(s, p, cfg, kind):
                if kind == "fence" and s.replica(a.args[0]).alive:
                    continue
                if nxt != s:
                    s, moved = nxt, True
                    break
        if not moved:
            return s
    raise RuntimeError("the model did not go quiet")


def model_view(s: State, epoch0: int) -> dict[str, Any]:
    reg = s.registry
    leader = reg.leader if reg.leader != NO_LEADER else -1
    hw = s.replica(reg.leader).hw if leader != -1 and s.replica(leader).alive else None
    return {"leader": leader, "leader_epoch": reg.leader_epoch - epoch0, "isr": tuple(sorted(reg.isr)),
            "elr": tuple(sorted(reg.elr)), "hw": hw,
            "leo": tuple((b, s.replica(b).leo) for b in sorted(s.brokers) if s.replica(b).alive)}


def cluster_view(cluster: Any, topic: str, dead: set[int], epoch0: int) -> dict[str, Any]:
    live = [b for b in cluster.brokers if b not in dead]
    boot = ",".join(f"127.0.0.1:{cluster.node(b).port}" for b in live)
    st = ca.partition_states(boot, topic)[0]
    hw = None
    if st.leader in live:
        hw = ca.high_watermark(f"127.0.0.1:{cluster.node(st.leader).port}", topic, 0)
    leos = tuple((b, ca.log_end_offset(f"127.0.0.1:{cluster.node(b).port}", topic, 0)) for b in live)
    return {"leader": st.leader, "leader_epoch": (st.leader_epoch or 0) - epoch0, "isr": tuple(sorted(st.isr)),
            "elr": tuple(sorted(st.elr)), "hw": hw, "leo": leos}


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


def _choices(s: State, p: Protocol, cfg: Config, dead: set[int]) -> list[Action]:
    out = [a for a, _ in enabled(s, p, cfg, "produce") if a.args[0] == s.registry.leader]
    if not dead:
        out += [Action("crash", (b, False)) for b in s.brokers]
    out += [Action("restart", (b,)) for b in dead]
    return out


def run_one(cluster: Any, p: Protocol, cfg: Config, seed: int, steps: int, out: Steps, log: Any = None) -> None:
    """One random run on a new topic of `cluster` (every broker running at the start and at the end)."""
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    rng = random.Random(seed)
    topic = f"trace-{seed}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, client_id="kcheck-trace")
    try:
        admin.create_topics([NewTopic(topic, replica_assignments={0: list(cluster.brokers)},
                                      topic_configs={"min.insync.replicas": str(cfg.min_isr)})])
    finally:
        admin.close()
    s = quiesce(initial_state(cfg), p, cfg)
    dead: set[int] = set()
    first = ca.wait_until(lambda: (x := ca.partition_states(cluster.bootstrap, topic)) and len(x[0].isr) == len(
        cluster.brokers) and x[0], 30)
    epoch0 = first.leader_epoch or 0
    out.runs += 1
    try:
        for n in range(1, steps + 1):
            a = rng.choice(_choices(s, p, cfg, dead))
            nxt = apply(s, p, cfg, a)
            if nxt is None:
                continue
            if a.kind == "produce":
                boot = ",".join(f"127.0.0.1:{cluster.node(b).port}" for b in cluster.brokers if b not in dead)
                producer = KafkaProducer(bootstrap_servers=boot, acks="all", retries=0, linger_ms=0)
                try:
                    producer.send(topic, value=b"x%d" % n, partition=0).get(timeout=15)
                finally:
                    producer.close()
            elif a.kind == "crash":
                cluster.kill(a.args[0])
                dead.add(a.args[0])
            else:
                cluster.restart(a.args[0])
                dead.discard(a.args[0])
            s = quiesce(nxt, p, cfg)
            seen = settle(lambda d=frozenset(dead): cluster_view(cluster, topic, set(d), epoch0),
                          lambda v, d=frozenset(dead): not d & set(v["isr"]) and v["leader"] not in d)
            want = model_view(s, 1)
            out.steps += 1
            for f in FIELDS:
                if want[f] != seen[f]:
                    out.differences.append((seed, n, a.label(), f, want[f], seen[f]))
            if log is not None:
                log(f"run {seed} step {n} {a.label()}: model {want} cluster {seen}")
    finally:
        for b in sorted(dead):
            cluster.restart(b)
