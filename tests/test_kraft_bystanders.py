"""KRaft bystanders (`Config.bystanders`): a broker that holds no replica and cannot get one applies each metadata
batch as it is published. The reduction is sound only if nothing can observe such a broker's position in the log;
these tests check that on whole state spaces: with and without it, the same states are reachable once each state
is seen from outside the bystanders (every other broker, the controller, the messages, the budgets, and what each
live broker has still to apply) and the same invariants break."""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from unittest import mock

import pytest

from kcheck.invariants.replication import check_replication
from kcheck.model.replication import Config, Protocol, initial_state
from kcheck.model.replication import actions as A
from kcheck.model.replication.actions import successors

ONE_SPARE = dict(brokers=2, replication_factor=1, min_isr=1, records=1, max_leader_epoch=2, crashes=1,
                 lossy_crashes=0, fences=1, elections=0, isr_shrinks=0, failovers=0, reads=0, duplicates=False)
RF2_ONE_SPARE = dict(brokers=3, replication_factor=2, min_isr=1, records=1, max_leader_epoch=2, crashes=1,
                     lossy_crashes=0, fences=0, elections=1, isr_shrinks=0, failovers=0, reads=0, duplicates=False,
                     atomic_fetch=True)


def _reachable(protocol: Protocol, cfg: Config) -> set:
    s0 = initial_state(cfg)
    seen, queue = {s0}, deque([s0])
    while queue:
        for _, t in successors(queue.popleft(), protocol, cfg):
            if t not in seen:
                seen.add(t)
                queue.append(t)
    return seen


def _outside(s, cfg: Config, spares: range) -> tuple:
    """The state as the rest of the cluster sees it: a spare's log position and whether it has read the partition
    yet left out; every other live broker with the batches it has still to apply (not positions, which depend on
    how far the log was trimmed); the history's one-step-late maxima brought up to date."""
    s = A._record_history(s, s)
    reps = []
    for r in s.replicas:
        if r.id in spares:
            reps.append(replace(r, applied=0, known=True))
        else:
            ahead = tuple(m.image for m in s.metadata[r.applied:]) if r.alive else ()
            reps.append((replace(r, applied=0), ahead))
    return tuple(reps), s.registry, s.history, s.used, s.pool, s.zombies


def _compare(bounds: dict) -> tuple[int, int]:
    protocol, cfg = Protocol.current(), Config(**bounds)
    spares = range(cfg.rf + 1, cfg.brokers + 1)
    assert cfg.kraft and cfg.bystanders == tuple(spares)
    reduced = _reachable(protocol, cfg)
    with mock.patch.object(A.Config, "bystanders", property(lambda self: ())):
        full = _reachable(protocol, cfg)

    def views(states: set) -> dict:
        out: dict = {}
        for s in states:
            out.setdefault(_outside(s, cfg, spares), set()).add(
                frozenset(v.invariant for v in check_replication(s, cfg).hard_violations))
        return out

    seen_reduced, seen_full = views(reduced), views(full)
    assert seen_reduced.keys() == seen_full.keys()
    assert seen_reduced == seen_full  # the same invariants break in the same outside views
    return len(reduced), len(full)


def test_a_spare_brokers_log_position_is_unobservable():
    reduced, full = _compare(ONE_SPARE)
    assert reduced < full  # the reduction removes states (977 against 3,197 when written)


@pytest.mark.slow
def test_a_spare_brokers_log_position_is_unobservable_with_two_replicas_and_an_election():
    reduced, full = _compare(RF2_ONE_SPARE)
    assert reduced < full


@pytest.mark.parametrize("extra", [{"reassignments": 1}, {"shutdowns": 1}, {"metadata": "zookeeper"},
                                   {"replication_factor": 2}])
def test_no_bystanders_where_a_spare_could_be_observed(extra):
    """A reassignment can give a spare a replica; a controlled shutdown waits for every active broker to apply
    its batch; ZooKeeper mode has no log; with every broker a replica there is no spare."""
    assert Config(**{**ONE_SPARE, **extra}).bystanders == ()
