"""The KIP-848 server-side assignors (uniform, range) and Kafka's Uuid against Kafka's own tests.

Expected values come from apache/kafka's tests in
`group-coordinator/src/test/java/org/apache/kafka/coordinator/group/assignor/`:
`UniformHomogen(e)ousAssignmentBuilderTest.java` (the version that matches the builder at
1eb7644349; newer Kafka changed the homogeneous builder and its expectations),
`UniformHeterogeneousAssignmentBuilderTest.java` (with its sorted `TestGroupSpecImpl`) and
`RangeAssignorTest.java` (the non-rack tests), and from `clients/.../common/UuidTest.java`.
Each test names the Kafka test it reproduces; anything else is derived by hand in a comment.

How Kafka's test inputs translate: `new TreeMap<>()` members -> `tree_map_order`, `new HashMap<>()`
members -> `hash_map_order`; `mkAssignment` is a HashMap of HashSets -> `mk_assignment`;
`mkOrderedAssignment` is a LinkedHashMap of HashSets -> `mk_ordered_assignment`. `Set.of(...)`
subscriptions: the homogeneous builder copies them into a HashSet and the heterogeneous builder
and the range assignor do not depend on their order, so any order reproduces Kafka's result.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcheck.reference.assignors.server import (
    GroupSpec,
    MemberSubscriptionSpec,
    PartitionAssignorException,
    RangeAssignor,
    SubscribedTopicDescriber,
    SubscriptionType,
    UniformAssignor,
    hash_map_order,
    hash_set_order,
    tree_map_order,
)
from kcheck.reference.assignors.uuid import ZERO_UUID, Uuid
from kcheck.reference.java import JavaHashSet

HOMOGENEOUS, HETEROGENEOUS = SubscriptionType.HOMOGENEOUS, SubscriptionType.HETEROGENEOUS

T1 = Uuid.from_string("T1-A4s3VTwiI5CTbEp6POw")
T2 = Uuid.from_string("T2-B4s3VTwiI5YHbPp6YUe")
T3 = Uuid.from_string("T3-CU8fVTLCz5YMkLoDQsa")
T4 = Uuid.from_string("T4-Tw9fVTLCz5HbPp6YQsa")


def mk_topic(topic: Uuid, *partitions: int):
    """`mkTopicAssignment`: a HashSet of the partitions."""
    return topic, hash_set_order(partitions)


def mk_assignment(*entries):
    """`mkAssignment`: a HashMap topic id -> partitions."""
    return hash_map_order(dict(entries))


def mk_ordered_assignment(*entries):
    """`mkOrderedAssignment`: a LinkedHashMap, in the order given."""
    return dict(entries)


def member(*topics: Uuid, assignment=None, instance: str | None = None) -> MemberSubscriptionSpec:
    return MemberSubscriptionSpec(tuple(topics), None, instance, assignment or {})


def expect(**members):
    """Expected assignment: member -> {topic: set(partitions)}."""
    return {m: {t: set(ps) for t, ps in a.items()} for m, a in members.items()}


def describer(**counts: int) -> SubscribedTopicDescriber:
    ids = {"T1": T1, "T2": T2, "T3": T3, "T4": T4}
    return SubscribedTopicDescriber({ids[name]: n for name, n in counts.items()})


# --- Uuid (UuidTest) -------------------------------------------------------------------------------


def test_uuid_hash_code():  # testHashCode
    assert Uuid(16, 7).java_hash_code() == 23
    assert Uuid(1043, 20075).java_hash_code() == 19064
    assert Uuid(104312423523523, 200732425676585).java_hash_code() == -2011255899


def test_uuid_compare():  # testCompareUuids, plus a hand-derived signed case
    id00, id01, id10 = Uuid(0, 0), Uuid(0, 1), Uuid(1, 0)
    assert id00 < id01 < id10 and id10 > id00
    # Signed: msb -1 (0xFFFF...) sorts *before* msb 0, and lsb likewise.
    assert Uuid(-1, 0) < Uuid(0, 0) and Uuid(0, -1) < Uuid(0, 0)


def test_uuid_from_string():
    # Derived by hand: bytes 00*7 01 | 00*7 02 encode as "AAAA AAAA AAEA AAAA AAAA Ag".
    assert Uuid.from_string("AAAAAAAAAAEAAAAAAAAAAg") == Uuid(1, 2)
    assert str(Uuid(1, 2)) == "AAAAAAAAAAEAAAAAAAAAAg"
    # 21 '_' (all ones) then 'w' (110000): sixteen 0xFF bytes, i.e. msb = lsb = -1.
    assert Uuid.from_string("_____________________w") == Uuid(-1, -1)
    assert Uuid.from_string(str(ZERO_UUID)) == ZERO_UUID  # testStringConversion
    assert Uuid.from_string(str(T3)) == T3


def test_uuid_from_string_invalid():  # testFromStringWithInvalidInput
    with pytest.raises(ValueError, match="too long"):
        Uuid.from_string("A" * 43)  # 32 bytes, unpadded
    with pytest.raises(ValueError, match="decoded as 4 bytes"):
        Uuid.from_string("AAAAAA")  # 4 bytes, unpadded
    with pytest.raises(ValueError):
        Uuid.from_string("AAAAAAAAAAAAAAAAAAAA+A")  # '+' is not URL-safe base64


def test_uuid_hash_set_order_of_test_topics():
    # Derived by hand from Uuid.hashCode: T1 -> 418407434, T2 -> 885118816, T3 -> 365927798.
    # HashMap.hash then bucket (16 buckets): T1 -> 10, T2 -> 1, T3 -> 9. So a HashSet iterates T2, T3, T1.
    assert [T1.java_hash_code(), T2.java_hash_code(), T3.java_hash_code()] == [418407434, 885118816, 365927798]
    assert list(JavaHashSet.copy_of([T1, T2, T3])) == [T2, T3, T1]


# --- UniformAssignor, homogeneous (UniformHomogenousAssignmentBuilderTest) ---------------------------


def uniform(members, subscription_type, topics, inverted=None):
    # These expected values are Kafka 4.0.0's tests; KAFKA-18688 (4.0.1) changed who takes an extra slot.
    spec = GroupSpec(members, subscription_type, inverted)
    return UniformAssignor(kafka_version="4.0.0").assign(spec, topics)


def test_homogeneous_one_member_no_topic_subscription():  # testOneMemberNoTopicSubscription
    assert uniform({"A": member()}, HOMOGENEOUS, describer(T1=3), {}) == {}


def test_homogeneous_one_member_subscribed_to_nonexistent_topic():  # testOneMemberSubscribedToNonexistentTopic
    with pytest.raises(PartitionAssignorException):
        uniform({"A": member(T2)}, HOMOGENEOUS, describer(T1=3), {})


def test_homogeneous_first_assignment_two_members_two_topics():  # testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks
    # HashSet<Uuid> order puts T3 before T1, and A (first in the TreeMap) gets the +1 quota:
    # A takes T3-0, T3-1, T1-0; B takes T1-1, T1-2.
    members = tree_map_order({"A": member(T1, T3), "B": member(T1, T3)})
    out = uniform(members, HOMOGENEOUS, describer(T1=3, T3=2), {})
    assert out == expect(A={T1: [0], T3: [0, 1]}, B={T1: [1, 2]})


def test_homogeneous_more_members_than_partitions():  # testFirstAssignmentNumMembersGreaterThanTotalNumPartitions
    members = tree_map_order({m: member(T3) for m in "ABC"})
    out = uniform(members, HOMOGENEOUS, describer(T3=2), {})
    assert out == expect(A={T3: [0]}, B={T3: [1]}, C={})


def test_homogeneous_unbalanced_previous_assignment():
    # testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment
    members = tree_map_order({
        "A": member(T1, T2, assignment=mk_ordered_assignment(mk_topic(T1, 0, 1), mk_topic(T2, 0, 1))),
        "B": member(T1, T2, assignment=mk_ordered_assignment(mk_topic(T1, 2), mk_topic(T2, 2))),
    })
    out = uniform(members, HOMOGENEOUS, describer(T1=3, T2=3))
    assert out == expect(A={T1: [0, 1], T2: [0]}, B={T1: [2], T2: [1, 2]})


def test_homogeneous_partitions_added():  # testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics
    members = tree_map_order({
        "A": member(T1, T2, assignment=mk_ordered_assignment(mk_topic(T1, 0, 2), mk_topic(T2, 0))),
        "B": member(T1, T2, assignment=mk_ordered_assignment(mk_topic(T1, 1), mk_topic(T2, 1, 2))),
    })
    out = uniform(members, HOMOGENEOUS, describer(T1=6, T2=5))
    assert out == expect(A={T1: [0, 2, 3], T2: [0, 3, 4]}, B={T1: [1, 4, 5], T2: [1, 2]})


def test_homogeneous_member_added():  # testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics
    members = hash_map_order({
        "A": member(T1, T2, assignment=mk_ordered_assignment(mk_topic(T1, 0, 2), mk_topic(T2, 0))),
        "B": member(T1, T2, assignment=mk_ordered_assignment(mk_topic(T1, 1), mk_topic(T2, 1, 2))),
        "C": member(T1, T2),
    })
    out = uniform(members, HOMOGENEOUS, describer(T1=3, T2=3))
    assert out == expect(A={T1: [0, 2]}, B={T1: [1], T2: [1]}, C={T2: [0, 2]})


def test_homogeneous_member_removed():
    # testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics
    members = hash_map_order({
        "A": member(T1, T2, assignment=mk_assignment(mk_topic(T1, 0), mk_topic(T2, 0))),
        "B": member(T1, T2, assignment=mk_assignment(mk_topic(T1, 1), mk_topic(T2, 1))),
    })
    out = uniform(members, HOMOGENEOUS, describer(T1=3, T2=3))
    assert out == expect(A={T1: [0], T2: [0, 2]}, B={T1: [1, 2], T2: [1]})


def test_homogeneous_subscription_removed():
    # testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics
    members = hash_map_order({
        "A": member(T2, assignment=mk_assignment(mk_topic(T1, 0), mk_topic(T2, 0))),
        "B": member(T2, assignment=mk_assignment(mk_topic(T1, 1), mk_topic(T2, 1))),
    })
    out = uniform(members, HOMOGENEOUS, describer(T1=2, T2=2))
    assert out == expect(A={T2: [0]}, B={T2: [1]})


def test_homogeneous_revokes_in_set_order_and_queues_after_never_assigned():
    # Derived by hand. T1 has 4 partitions, all held by A (listed 3, 0, 1, 2); T3 has 2, unheld.
    # Total 6, two members: quota 3 each. A keeps the first three in its set's order (3, 0, 1)
    # and revokes 2, which joins the queue *after* the never-assigned T3-0, T3-1. B takes 3.
    members = {"A": member(T1, T3, assignment={T1: (3, 0, 1, 2)}), "B": member(T1, T3)}
    out = uniform(members, HOMOGENEOUS, describer(T1=4, T3=2))
    assert out == expect(A={T1: [0, 1, 3]}, B={T1: [2], T3: [0, 1]})


def test_homogeneous_counts_assigned_by_target_not_member_lists():
    # Derived by hand: the inverted target assignment says T1-0 is taken although no member
    # lists it, so only T1-1 is handed out and T1-0 ends up with nobody.
    out = uniform({"A": member(T1)}, HOMOGENEOUS, describer(T1=2), {T1: {0: "gone"}})
    assert out == expect(A={T1: [1]})


# --- UniformAssignor, heterogeneous (UniformHeterogeneousAssignmentBuilderTest) ----------------------


def test_heterogeneous_two_members_no_topic_subscription():  # testTwoMembersNoTopicSubscription
    members = tree_map_order({"A": member(), "B": member()})
    assert uniform(members, HETEROGENEOUS, describer(T1=3), {}) == {}


def test_heterogeneous_nonexistent_topics():  # testTwoMembersSubscribedToNonexistentTopics
    members = tree_map_order({"A": member(T3), "B": member(T2)})
    with pytest.raises(PartitionAssignorException):
        uniform(members, HETEROGENEOUS, describer(T1=3), {})


def test_heterogeneous_first_assignment_two_members_two_topics():  # testFirstAssignmentTwoMembersTwoTopics
    members = tree_map_order({"A": member(T1, T3), "B": member(T3)})
    out = uniform(members, HETEROGENEOUS, describer(T1=3, T3=6), {})
    assert out == expect(A={T1: [0, 1, 2], T3: [4]}, B={T3: [0, 1, 2, 3, 5]})


def test_heterogeneous_more_members_than_partitions():  # testFirstAssignmentNumMembersGreaterThanTotalNumPartitions
    members = tree_map_order({"A": member(T3), "B": member(T3), "C": member(T1)})
    out = uniform(members, HETEROGENEOUS, describer(T3=1, T1=2), {})
    assert out == expect(A={T3: [0]}, B={}, C={T1: [0, 1]})


def test_heterogeneous_unbalanced_previous_assignment():
    # testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment
    members = tree_map_order({
        "A": member(T1, assignment=mk_assignment(mk_topic(T1, 0, 1, 2))),
        "B": member(T1, T2, assignment=mk_assignment(mk_topic(T1, 3), mk_topic(T2, 0))),
        "C": member(T1, T2, T3, assignment=mk_assignment(
            mk_topic(T1, 4, 5), mk_topic(T2, 1, 2, 3), mk_topic(T3, 0, 1, 2, 3))),
    })
    out = uniform(members, HETEROGENEOUS, describer(T1=6, T2=4, T3=4))
    assert out == expect(A={T1: [0, 1, 2, 5]}, B={T1: [3], T2: [0, 1, 2, 3]}, C={T1: [4], T3: [0, 1, 2, 3]})


def test_heterogeneous_partitions_added():  # testReassignmentWhenPartitionsAreAddedForTwoMembers
    members = tree_map_order({
        "A": member(T1, T3, assignment=mk_assignment(mk_topic(T1, 0, 1, 2, 3), mk_topic(T3, 0, 1))),
        "B": member(T1, T2, T3, T4, assignment=mk_assignment(mk_topic(T2, 0, 1, 2), mk_topic(T4, 0, 1, 2))),
    })
    out = uniform(members, HETEROGENEOUS, describer(T1=6, T2=5, T3=3, T4=3))
    assert out == expect(A={T1: [0, 1, 2, 3, 4, 5], T3: [0, 1, 2]}, B={T2: [0, 1, 2, 3, 4], T4: [0, 1, 2]})


def test_heterogeneous_member_and_partitions_added():
    # testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics
    members = tree_map_order({
        "A": member(T1, assignment=mk_assignment(mk_topic(T1, 0, 2), mk_topic(T2, 0))),
        "B": member(T1, T2, assignment=mk_assignment(mk_topic(T1, 1), mk_topic(T2, 1, 2))),
        "C": member(T1, T2),
    })
    out = uniform(members, HETEROGENEOUS, describer(T1=6, T2=7))
    assert out == expect(A={T1: [0, 2, 3, 4, 5]}, B={T1: [1], T2: [1, 2, 6]}, C={T2: [0, 3, 4, 5]})


def test_heterogeneous_member_removed():
    # testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics
    members = tree_map_order({
        "A": member(T1, T3, assignment=mk_assignment(mk_topic(T1, 0, 1, 2), mk_topic(T3, 0, 1))),
        "B": member(T2, assignment=mk_assignment(mk_topic(T2, 3, 4, 5, 6))),
    })
    out = uniform(members, HETEROGENEOUS, describer(T1=3, T2=8, T3=3))
    assert out == expect(A={T1: [0, 1, 2], T3: [0, 1, 2]}, B={T2: list(range(8))})


def test_heterogeneous_subscription_removed():
    # testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics
    members = tree_map_order({
        "A": member(T1, assignment=mk_assignment(mk_topic(T1, 0, 2), mk_topic(T2, 1, 3))),
        "B": member(T1, T2, assignment=mk_assignment(mk_topic(T1, 1), mk_topic(T2, 0, 2, 4))),
    })
    out = uniform(members, HETEROGENEOUS, describer(T1=3, T2=5))
    assert out == expect(A={T1: [0, 1, 2]}, B={T2: [0, 1, 2, 3, 4]})


def test_heterogeneous_partitions_run_out():  # testReassignmentWhenTopicPartitionsRunOutAndMembersHaveNoPartitions
    members = tree_map_order({
        "A": member(T1, T2, T3, assignment=mk_assignment(mk_topic(T1, 0, 1), mk_topic(T2, 0, 1), mk_topic(T3, 0, 1))),
        "B": member(T1, T2, T3),
    })
    out = uniform(members, HETEROGENEOUS, describer(T1=2, T2=2, T3=2))
    assert out == expect(A={T2: [0], T3: [0, 1]}, B={T1: [0, 1], T2: [1]})


def test_heterogeneous_member_without_subscriptions():
    # testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions
    members = tree_map_order({"A": member(T1), "B": member()})
    out = uniform(members, HETEROGENEOUS, describer(T1=3), {})
    assert out == expect(A={T1: [0, 1, 2]}, B={})


def test_heterogeneous_topic_order_uses_signed_uuid_comparison():
    # Derived by hand. A -> {neg, pos}, B -> {neg}, C -> {pos}; 2 partitions each. Both topics
    # have 1.0 partitions per subscriber and 2 subscribers, so the topic id decides, signed:
    # neg (msb -1) is filled before pos (msb 1).
    #   neg: subscribers A, B, both empty -> A gets 0, B gets 1.
    #   pos: subscribers sorted (size, index) C(0), A(1) -> C gets 0; the least loaded range is
    #        used up, rises to level 1 and takes in A, restarting at C -> C gets 1.
    #   balance: neg is even, pos differs by 1 -> nothing moves.
    # (Unsigned order would fill pos first and give A pos-0, C pos-1, B both of neg.)
    neg, pos = Uuid(-1, 0), Uuid(1, 0)
    members = {"A": member(neg, pos), "B": member(neg), "C": member(pos)}
    out = uniform(members, HETEROGENEOUS, SubscribedTopicDescriber({neg: 2, pos: 2}), {})
    assert out == expect(A={neg: [0]}, B={neg: [1]}, C={pos: [0, 1]})


def test_heterogeneous_double_claim_later_member_owns():
    # Derived by hand: A and B both claim T1-0; B (later in memberIds) owns it, both count it.
    # T1 has 2 partitions, subscribers A and B. T1-1 is unowned: A and B both have size 1, so
    # it goes to A (lower index). Balance: sizes 2 and 1, within 1: nothing moves. A keeps
    # T1-0 in its own list too (Kafka's behaviour with an inconsistent target assignment).
    members = {"A": member(T1, assignment={T1: (0,)}), "B": member(T1, assignment={T1: (0,)})}
    out = uniform(members, HETEROGENEOUS, describer(T1=2))
    assert out == expect(A={T1: [0, 1]}, B={T1: [0]})


# --- RangeAssignor, server side (RangeAssignorTest) ---------------------------------------------------


def server_range(members, subscription_type, topics):
    return RangeAssignor().assign(GroupSpec(members, subscription_type), topics)


def test_range_one_member_no_topic():  # testOneMemberNoTopic: every member gets an entry
    assert server_range({"A": member()}, HOMOGENEOUS, describer()) == {"A": {}}


def test_range_one_member_nonexistent_topic():  # testOneMemberSubscribedToNonExistentTopic
    with pytest.raises(PartitionAssignorException):
        server_range({"A": member(T2)}, HOMOGENEOUS, describer(T1=3))


def test_range_first_assignment_same_subscriptions():  # testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions
    members = tree_map_order({"A": member(T1, T3), "B": member(T1, T3)})
    out = server_range(members, HOMOGENEOUS, describer(T1=3, T3=2))
    assert out == expect(A={T1: [0, 1], T3: [0]}, B={T1: [2], T3: [1]})


def test_range_first_assignment_different_subscriptions():
    # testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions
    members = tree_map_order({"A": member(T1, T2), "B": member(T3), "C": member(T2, T3)})
    out = server_range(members, HETEROGENEOUS, describer(T1=3, T2=3, T3=2))
    assert out == expect(A={T1: [0, 1, 2], T2: [0, 1]}, B={T3: [0]}, C={T2: [2], T3: [1]})


def test_range_more_members_than_partitions():  # testFirstAssignmentNumMembersGreaterThanNumPartitions
    members = tree_map_order({m: member(T1, T3) for m in "ABC"})
    out = server_range(members, HOMOGENEOUS, describer(T1=3, T3=2))
    assert out == expect(A={T1: [0], T3: [0]}, B={T1: [1], T3: [1]}, C={T1: [2]})


def test_range_static_membership():  # testStaticMembership (expected ranges derived by hand)
    # Instance ids order the members: instanceA gets partitions 0-1 of 3, instanceB partition 2,
    # and they keep them when A rejoins as memberA1 (which sorts after B by member id).
    members = tree_map_order({"A": member(T1, instance="instanceA"), "B": member(T1, instance="instanceB")})
    first = server_range(members, HOMOGENEOUS, describer(T1=3))
    assert first == expect(A={T1: [0, 1]}, B={T1: [2]})
    del members["A"]
    members["memberA1"] = member(T1, instance="instanceA")
    again = server_range(tree_map_order(members), HOMOGENEOUS, describer(T1=3))
    assert again["memberA1"] == first["A"] and again["B"] == first["B"]


def test_range_mixed_static_membership():  # testMixedStaticMembership (expected ranges derived by hand)
    # Static members first (instanceA, instanceC), then B: 5 partitions -> [0, 2), [2, 4), [4, 5).
    members = tree_map_order({
        "A": member(T1, instance="instanceA"), "C": member(T1, instance="instanceC"), "B": member(T1),
    })
    first = server_range(members, HOMOGENEOUS, describer(T1=5))
    assert first == expect(A={T1: [0, 1]}, C={T1: [2, 3]}, B={T1: [4]})
    del members["A"]
    members["memberA1"] = member(T1, instance="instanceA")
    again = server_range(tree_map_order(members), HOMOGENEOUS, describer(T1=5))
    assert (again["memberA1"], again["B"], again["C"]) == (first["A"], first["B"], first["C"])


def test_range_member_added_more_members_than_partitions():
    # testReassignmentNumMembersGreaterThanNumPartitionsWhenOneMemberAdded
    members = tree_map_order({
        "A": member(T1, T2, assignment=mk_assignment(mk_topic(T1, 0), mk_topic(T2, 0))),
        "B": member(T1, T2, assignment=mk_assignment(mk_topic(T1, 1), mk_topic(T2, 1))),
        "C": member(T1, T2),
    })
    out = server_range(members, HOMOGENEOUS, describer(T1=2, T2=2))
    assert out == expect(A={T1: [0], T2: [0]}, B={T1: [1], T2: [1]}, C={})


def test_range_partition_added():  # testReassignmentWhenOnePartitionAddedForTwoMembersTwoTopics
    members = tree_map_order({
        "A": member(T1, T2, assignment=mk_assignment(mk_topic(T1, 0, 1), mk_topic(T2, 0, 1))),
        "B": member(T1, T2, assignment=mk_assignment(mk_topic(T1, 2), mk_topic(T2, 2))),
    })
    out = server_range(members, HOMOGENEOUS, describer(T1=4, T2=4))
    assert out == expect(A={T1: [0, 1], T2: [0, 1]}, B={T1: [2, 3], T2: [2, 3]})


def test_range_member_added():  # testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics
    members = tree_map_order({
        "A": member(T1, T2, assignment=mk_assignment(mk_topic(T1, 0, 1), mk_topic(T2, 0, 1))),
        "B": member(T1, T2, assignment=mk_assignment(mk_topic(T1, 2), mk_topic(T2, 2))),
        "C": member(T1, T2),
    })
    out = server_range(members, HOMOGENEOUS, describer(T1=3, T2=3))
    assert out == expect(A={T1: [0], T2: [0]}, B={T1: [1], T2: [1]}, C={T1: [2], T2: [2]})


def test_range_member_and_partition_added():
    # testReassignmentWhenOneMemberAddedAndOnePartitionAfterInitialAssignmentWithTwoMembersTwoTopics
    members = tree_map_order({
        "A": member(T1, T2, assignment=mk_assignment(mk_topic(T1, 0, 1), mk_topic(T2, 0, 1))),
        "B": member(T1, T2, assignment=mk_assignment(mk_topic(T1, 2), mk_topic(T2, 2))),
        "C": member(T1),
    })
    out = server_range(members, HETEROGENEOUS, describer(T1=4, T2=3))
    assert out == expect(A={T1: [0, 1], T2: [0, 1]}, B={T1: [2], T2: [2]}, C={T1: [3]})


def test_range_member_removed():  # testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithTwoMembersTwoTopics
    members = {"B": member(T1, T2, assignment=mk_assignment(mk_topic(T1, 2), mk_topic(T2, 2)))}
    out = server_range(members, HOMOGENEOUS, describer(T1=3, T2=3))
    assert out == expect(B={T1: [0, 1, 2], T2: [0, 1, 2]})


def test_range_subscriptions_changed():
    # testReassignmentWhenMultipleSubscriptionsRemovedAfterInitialAssignmentWithThreeMembersTwoTopics
    members = tree_map_order({
        "A": member(T1, assignment=mk_assignment(mk_topic(T1, 0, 1, 2), mk_topic(T2, 0))),
        "B": member(T1, T2, T3, assignment=mk_assignment(mk_topic(T2, 1))),
        "C": member(T2, assignment=mk_assignment(mk_topic(T2, 2), mk_topic(T3, 0, 1))),
    })
    out = server_range(members, HETEROGENEOUS, describer(T1=3, T2=3, T3=2))
    assert out == expect(A={T1: [0, 1]}, B={T1: [2], T2: [0, 1], T3: [0, 1]}, C={T2: [2]})


def test_range_homogeneous_uses_first_sorted_members_topics():
    # Derived by hand: HOMOGENEOUS trusts the first member *after* sorting (static "x" first).
    # If the type is wrong, the other member's own list is ignored: B still gets T1 ranges.
    members = {"B": member(T2), "Z": member(T1, instance="x")}
    out = server_range(members, HOMOGENEOUS, describer(T1=2, T2=2))
    assert out == expect(Z={T1: [0]}, B={T1: [1]})


def test_no_members_means_empty_assignments():
    assert RangeAssignor().assign(GroupSpec({}, HOMOGENEOUS), describer(T1=1)) == {}
    assert UniformAssignor().assign(GroupSpec({}, HOMOGENEOUS), describer(T1=1)) == {}


def test_subscription_type_default_follows_modern_group():
    assert GroupSpec({"A": member(T1, T2), "B": member(T2, T1)}).subscription_type is HOMOGENEOUS
    assert GroupSpec({"A": member(T1, T2), "B": member(T1)}).subscription_type is HETEROGENEOUS


# --- properties -------------------------------------------------------------------------------------

TOPIC_IDS = [Uuid.of_unsigned(i * 0x9E3779B97F4A7C15 % 2**64, i) for i in range(1, 6)]


@st.composite
def server_groups(draw, homogeneous: bool):
    """Topics with 0..9 partitions, 1..6 members, and a consistent (disjoint) current assignment."""
    counts = {t: draw(st.integers(0, 9)) for t in TOPIC_IDS}
    names = draw(st.lists(st.sampled_from([f"m{i}" for i in range(8)]), min_size=1, max_size=6, unique=True))
    shared = draw(st.lists(st.sampled_from(TOPIC_IDS), unique=True))
    owned: dict[str, dict[Uuid, list[int]]] = {m: {} for m in names}
    for t, n in counts.items():
        for p in range(n):
            owner = draw(st.sampled_from([None, *names]))
            if owner is not None:
                owned[owner].setdefault(t, []).append(p)
    members = {}
    for m in names:
        topics = shared if homogeneous else draw(st.lists(st.sampled_from(TOPIC_IDS), unique=True))
        instance = draw(st.sampled_from([None, f"i-{m}"]))
        members[m] = MemberSubscriptionSpec(tuple(topics), None, instance, {t: tuple(ps) for t, ps in owned[m].items()})
    return GroupSpec(members, HOMOGENEOUS if homogeneous else HETEROGENEOUS), SubscribedTopicDescriber(counts)


def check_valid(spec: GroupSpec, topics: SubscribedTopicDescriber, out) -> None:
    subscribed = {t for s in spec.members.values() for t in s.subscribed_topic_ids}
    if out:
        assert set(out) == set(spec.members)
    owners = Counter((t, p) for a in out.values() for t, ps in a.items() for p in ps)
    assert set(owners) == {(t, p) for t in subscribed for p in range(topics.num_partitions(t))}
    assert all(c == 1 for c in owners.values())
    for m, a in out.items():
        assert set(a) <= set(spec.members[m].subscribed_topic_ids)


@given(server_groups(homogeneous=True))
def test_uniform_homogeneous_property(group):
    spec, topics = group
    out = UniformAssignor().assign(spec, topics)
    check_valid(spec, topics, out)
    sizes = [sum(map(len, a.values())) for a in out.values()]
    assert not sizes or max(sizes) - min(sizes) <= 1


@given(server_groups(homogeneous=False))
def test_uniform_heterogeneous_property(group):
    spec, topics = group
    check_valid(spec, topics, UniformAssignor().assign(spec, topics))


@given(st.booleans().flatmap(lambda h: server_groups(homogeneous=h)))
def test_server_range_property(group):
    spec, topics = group
    out = RangeAssignor().assign(spec, topics)
    assert set(out) == set(spec.members)  # every member has an entry, even when nothing is subscribed
    check_valid(spec, topics, out)
    for t in TOPIC_IDS:  # contiguous ranges, balanced among the topic's subscribers
        subs = [m for m, s in spec.members.items() if t in s.subscribed_topic_ids]
        sizes = [len(out[m].get(t, ())) for m in subs]
        assert not sizes or max(sizes) - min(sizes) <= 1
        for m in subs:
            ps = sorted(out[m].get(t, ()))
            assert not ps or ps == list(range(ps[0], ps[0] + len(ps)))
