"""A consumer assignor: members keep what they own; each free partition goes to the subscriber with fewest."""
from kcheck.model import TopicPartition


class KeepOwned:
    cooperative = True  # KIP-429: a member keeps its partitions while the group rebalances
    guarantees = ("assignment.complete", "assignment.valid")

    def assign_partitions(self, partitions_per_topic, subscriptions):
        out = {m: [] for m in subscriptions}
        owner = {tp: m for m, s in subscriptions.items() for tp in s.owned_partitions
                 if tp.topic in s.topics and tp.topic in partitions_per_topic}
        for topic in sorted(partitions_per_topic):
            readers = [m for m, s in subscriptions.items() if topic in s.topics]
            for info in partitions_per_topic[topic]:
                tp = TopicPartition(topic, info.partition)
                member = owner.get(tp) or min(readers, key=lambda m: len(out[m]), default=None)
                if member is not None:
                    out[member].append(tp)
        return out
