"""The checking half of Kafka's `AbstractPartitionAssignorTest.verifyRackAssignment`, shared by the assignor tests."""


def check_rack_assignment(assignment, partitions_per_topic, consumers, consumer_racks, expected, num_mismatched):
    """Each consumer's partitions equal Kafka's expected string, and (when num_mismatched >= 0) exactly that
    many partitions sit on a consumer whose rack holds none of their replicas."""
    actual = {c: ", ".join(sorted(str(p) for p in parts)) for c, parts in assignment.items()}
    assert actual == dict(zip(consumers, expected, strict=True))
    if num_mismatched >= 0:
        mismatched = [
            p
            for c, rack in zip(consumers, consumer_racks, strict=True)
            if rack is not None
            for p in assignment[c]
            if all(b.rack != rack for b in partitions_per_topic[p.topic][p.partition].replicas)
        ]
        assert len(mismatched) == num_mismatched, mismatched
