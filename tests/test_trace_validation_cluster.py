"""Trace validation at quiescent points on real brokers (kcheck.cluster.trace_check): random model runs of produce
(acks=all or 1), kill -9, clean shutdown, pause past the session timeout, restart, resume, reassignment and an
operator's unclean election, played
on a three-broker 4.4.0 cluster of its own, with leader, leader epoch, replica set (adding, removing), ISR, ELR, the
leader's high watermark and every live broker's log end offset compared after each step.
`bench/trace_validation.py` runs more of them and prints each difference."""

from __future__ import annotations

import os

import pytest

from kcheck.cluster.trace_check import UNCLEAN_SCRIPT, Steps, config, run_one, run_script
from kcheck.model.replication import Protocol

pytestmark = [pytest.mark.kafka, pytest.mark.cluster, pytest.mark.slow]

RELEASE = os.environ.get("KCHECK_CLUSTER_RELEASE", "4.4.0")
STEPS = 6


def test_random_runs_match_the_cluster_at_every_quiet_point():
    from kcheck.cluster.local import LocalCluster

    cfg = config(STEPS)
    out = Steps()
    with LocalCluster(RELEASE, 3) as cluster:
        for seed in (1, 2):
            run_one(cluster, Protocol.current(RELEASE), cfg, seed, STEPS, out)
    assert out.runs == 2 and out.steps > STEPS
    assert out.differences == []


def test_an_operators_unclean_election_matches_the_cluster_step_by_step():
    """Every replica dies in turn, the one without the last acknowledged record returns first and nobody can lead
    cleanly, `kafka-leader-election --election-type unclean` elects it: Kafka 4.4 and the model agree at every
    quiet point, the lost record included (log end offsets 1 where 2 were acknowledged), and after the others
    return and truncate."""
    from kcheck.cluster.local import LocalCluster

    out = Steps()
    with LocalCluster(RELEASE, 3) as cluster:
        run_script(cluster, Protocol.current(RELEASE), config(len(UNCLEAN_SCRIPT)), 0, UNCLEAN_SCRIPT, out)
    assert out.steps == len(UNCLEAN_SCRIPT) - 1  # all three down after the fifth step: nothing to compare
    assert out.differences == []
