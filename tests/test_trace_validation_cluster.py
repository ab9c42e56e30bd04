"""Trace validation at quiescent points on real brokers (kcheck.cluster.trace_check): random model runs of produce
(acks=all or 1), kill -9, clean shutdown, pause past the session timeout, restart, resume and reassignment, played
on a three-broker 4.4.0 cluster of its own, with leader, leader epoch, replica set (adding, removing), ISR, ELR, the
leader's high watermark and every live broker's log end offset compared after each step.
`bench/trace_validation.py` runs more of them and prints each difference."""

from __future__ import annotations

import os

import pytest

from kcheck.cluster.trace_check import Steps, config, run_one
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
