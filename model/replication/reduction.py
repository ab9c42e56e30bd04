"""Two reductions of the replication model's state space for the exhaustive search, each made of the model's own
steps: a reduced step is one action followed by steps the model allows at any later point with the same effect,
taken at once. Every run of the reduced model is therefore a run of the model (`normalize` says which steps it
added, so a counterexample is written with them and replays through `actions.apply`), and the question is only
whether the reduced search still reaches a representative of every state.

1. **Quiet metadata batches** (KRaft, no controlled shutdowns or reassignments). A broker that does not believe it
   leads, and whose next batch keeps the partition's leader, leader epoch, replica set and writer (an ISR change,
   or a batch of registrations only), learns from it nothing it acts on: applying it changes its ISR and
   partition-epoch beliefs and its place in the log. A follower's fetches carry its leader and leader epoch, the
   rules read its epochs only to order batches it applies in log order anyway, and only a leader reads its own
   ISR or its image's fencing (`expand_isr`); of the built-in invariants only the two metadata-log ones read what
   changes, and they compare the broker with the log it is applying in order. The step stays enabled until it is
   taken, except by the broker's crash, which erases its place in the log (`crash` sets `applied` to 0), and its
   beliefs become unread until it knows the partition again (`known` is False until the next state it applies,
   which overwrites them). So applying such batches as soon as they are published only merges states that differ
   in when a follower caught up with an ISR it never consults: Kafka's brokers apply them at their own pace, and
   every pace is still covered where it can make a difference (a change of leader or epoch, which makes the
   follower truncate, is applied at the broker's own pace). `Config.bystanders` is the same argument for a broker
   holding no replica, which is why reassignments and controlled shutdowns (which give a broker a replica, or make
   the controller wait on a broker's image, `shutdown_seen`) switch this one off.
2. **Flushes once no lossy crash is left.** Only a lossy crash reads the flushed prefix (`crash`); once the
   lossy-crash budget is spent, every live broker flushes its log at once, so states that differ only in what the
   page cache still held are one state.

Both hold for the built-in invariants and for rules kcheck has audited (model/replication's own functions): a
user's invariant or rule may read the beliefs or the flushed prefix these merge, so `why_off` switches them off
then. tests/test_reduction.py checks the claim on complete state spaces: every state of the full search, normalized
(and with the beliefs of brokers that know nothing set aside), is a state of the reduced search and the other way
round, and the two searches agree, invariant by invariant, on whether a state they reach breaks it and on the least
depth at which one first does (each judged on its own states, so the epoch invariants read each search's own
running maxima).
"""

from __future__ import annotations

from kcheck.model.replication.actions import Action, Config, apply
from kcheck.model.replication.protocol import Protocol
from kcheck.model.replication.state import State

_KEPT = ("leader", "leader_epoch", "replicas", "adding", "removing", "written_by")


def quiet_applies(cfg: Config) -> bool:
    """Whether reduction 1 can apply under `cfg` (see the module docstring)."""
    return cfg.kraft and not (cfg.shutdowns or cfg.reassignments or cfg.cancels)


def why_off(cfg: Config, audited: bool, builtin_invariants: bool) -> str | None:
    """Why no reduction runs for this config, protocol (`audited`: every rule is model/replication's own) and
    invariants (`builtin_invariants`: every one checked is kcheck's), or None when at least one does."""
    if not audited:
        return "the protocol has rules kcheck has not audited for the reduction"
    if not builtin_invariants:
        return "a user's invariant may read the beliefs or flushed prefix the reduction merges"
    if not quiet_applies(cfg) and not cfg.lossy_crashes:
        return ("no quiet metadata batch (ZooKeeper mode, reassignments or controlled shutdowns) and no lossy "
                "crash budget")
    return None


def _next(s: State, cfg: Config) -> Action | None:
    """The first step `normalize` takes in `s`, or None when `s` is already normal."""
    meta = s.metadata
    if len(meta) > 1 and quiet_applies(cfg):
        last = len(meta) - 1
        for r in s.replicas:
            if r.alive and r.known and r.leader != r.id and r.applied < last:
                was, now = meta[r.applied].image, meta[r.applied + 1].image
                if r.id in now.replicas and all(getattr(was, f) == getattr(now, f) for f in _KEPT):
                    return Action("apply_metadata", (r.id,))
    if cfg.lossy_crashes and s.used.lossy_crashes >= cfg.lossy_crashes:
        for r in s.replicas:
            if r.alive and r.flushed < len(r.log):
                return Action("flush", (r.id,))
    return None


def normalize(s: State, p: Protocol, cfg: Config) -> tuple[State, tuple[Action, ...]]:
    """`s` after every quiet metadata batch and every flush the reductions take at once, with those steps."""
    return _take(s, p, cfg, _next(s, cfg))


def _take(s: State, p: Protocol, cfg: Config, a: Action | None) -> tuple[State, tuple[Action, ...]]:
    """`normalize` from its first step `a` (already asked of `_next`)."""
    taken: list[Action] = []
    while a is not None:
        nxt = apply(s, p, cfg, a)
        if nxt is None:  # _next asks for enabled steps only
            raise AssertionError(f"the reduction's step {a.label()} does not apply")
        s = nxt
        taken.append(a)
        a = _next(s, cfg)
    return s, tuple(taken)


def normal(s: State, p: Protocol, cfg: Config) -> State:
    """`normalize`'s state alone; `s` itself (the same object) when it is normal already."""
    a = _next(s, cfg)
    return s if a is None else _take(s, p, cfg, a)[0]
