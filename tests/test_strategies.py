"""kcheck.strategies: generated clusters, topics and groups for a user's property tests (issue 39). The expected
verdicts are Kafka's: what its placers and assignors document or test (`guarantees`), and what Kafka refuses."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from kcheck.reference.assignors.registry import ASSIGNORS
from kcheck.reference.placement import assign_replicas_to_brokers
from kcheck.reference.placers import BUILTIN_PLACERS
from kcheck.strategies import brokers, clusters, groups, placer_cases, topics

BOUNDED = settings(max_examples=60, deadline=None, database=None, derandomize=True,
                   suppress_health_check=[HealthCheck.too_slow])


@BOUNDED
@given(brokers(racks="mixed", min_size=2), clusters(racks="none"), clusters(racks="full"))
def test_brokers_and_clusters_have_the_rack_layout_asked(mixed, bare, racked):
    assert len({b.id for b in mixed}) == len(mixed)
    assert any(b.rack for b in mixed) and any(b.rack is None for b in mixed)
    assert bare.rack_layout == "none" and racked.rack_layout == "full"


@BOUNDED
@given(st.data())
def test_topics_and_cases_stay_in_their_bounds(data):
    t = data.draw(topics(max_partitions=4, max_replication_factor=2))
    assert 1 <= t.partitions <= 4 and 1 <= t.replication_factor <= 2
    case = data.draw(placer_cases(max_brokers=4))
    assert 1 <= case.replication_factor <= len(case.cluster) <= 4


@pytest.mark.parametrize("name", sorted(BUILTIN_PLACERS))
def test_kafkas_placers_keep_their_guarantees_on_generated_clusters(name):
    info = BUILTIN_PLACERS[name]

    @BOUNDED
    @given(placer_cases())
    def check(case):
        placement = info.place(case.cluster.brokers, case.partitions, case.replication_factor)
        assert case.check(placement, only=set(info.guarantees)).violations == ()

    check()


def test_a_placer_that_ignores_racks_is_caught():
    def first_brokers(brokers, n, rf):  # the first rf brokers for every partition: racks ignored
        return {p: [b.id for b in brokers[:rf]] for p in range(n)}

    case = find(placer_cases(), lambda c: bool(c.check(first_brokers(c.cluster.brokers, c.partitions,
                                                                      c.replication_factor)).hard_violations),
                settings=BOUNDED)
    ids = {v.invariant for v in case.check(first_brokers(case.cluster.brokers, case.partitions,
                                                         case.replication_factor)).hard_violations}
    assert ids <= {"placement.rack-diversity", "placement.rack-distribution"} and ids
    assert case.replication_factor >= 2 and len(case.cluster.racks) >= 2  # the smallest such question


@BOUNDED
@given(groups())
def test_groups_own_each_partition_once_within_subscriptions(group):
    owners: dict[object, str] = {}
    for member, sub in group.subscriptions.items():
        for tp in sub.owned_partitions:
            assert tp.topic in sub.topics and tp not in owners
            owners[tp] = member
            assert tp.partition < len(group.partitions_per_topic[tp.topic])


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_kafkas_assignors_keep_their_guarantees_on_generated_groups(name):
    info = ASSIGNORS[name]

    @BOUNDED
    @given(groups())
    def check(group):
        assignment = info.factory().assign_partitions(group.partitions_per_topic, dict(group.subscriptions))
        assert group.check(assignment, cooperative=info.cooperative, only=set(info.guarantees)).violations == ()

    check()


@pytest.fixture(scope="session")
def kafka_release():
    """This module's release for the plugin's Kafka fixtures: AdminUtils (kafka-server-common) ends at 4.0."""
    return "4.0.2"


@pytest.mark.kafka
def test_generated_cases_through_the_plugins_bridge_get_kafkas_own_placement(kafka_bridge):
    """The plugin's `kafka_bridge` fixture with the strategies: Kafka's AdminUtils (the release's jars) places each
    generated case as the reference does, or refuses it (some brokers without a rack) with the same message."""
    assert kafka_bridge.kafka_version == "4.0.2"

    def outcome(place, *args):
        try:
            return place(*args)
        except Exception as e:  # Kafka's JavaException, the reference's AdminOperationException
            return str(e).rsplit(": ", 1)[-1] if "AdminOperationException" in str(e) else str(e)

    @settings(BOUNDED, max_examples=30)
    @given(placer_cases(racks=None), st.integers(0, 5), st.integers(0, 5))
    def check(case, start, partition):
        args = (case.cluster.brokers, case.partitions, case.replication_factor, start % len(case.cluster), partition)
        assert outcome(kafka_bridge.assign_replicas_to_brokers, *args) == outcome(assign_replicas_to_brokers, *args)

    check()
