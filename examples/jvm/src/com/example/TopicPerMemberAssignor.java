package com.example;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.TopicPartition;

/**
 * A proposal for fewer fetch sessions: each topic goes, whole, to one of its subscribers, the topics
 * dealt round-robin in name order. Every partition is assigned, but a group with one big topic and
 * several members leaves members idle: `kcheck assign --assignor jvm:com.example.TopicPerMemberAssignor`
 * shows the imbalance.
 */
public class TopicPerMemberAssignor implements ConsumerPartitionAssignor {
    @Override
    public String name() {
        return "topic-per-member";
    }

    @Override
    public GroupAssignment assign(Cluster metadata, GroupSubscription groupSubscription) {
        Map<String, Subscription> members = groupSubscription.groupSubscription();
        Map<String, TreeSet<String>> subscribers = new TreeMap<>();
        for (Map.Entry<String, Subscription> e : members.entrySet()) {
            for (String topic : e.getValue().topics()) {
                subscribers.computeIfAbsent(topic, t -> new TreeSet<>()).add(e.getKey());
            }
        }
        Map<String, List<TopicPartition>> owned = new HashMap<>();
        for (String member : members.keySet()) owned.put(member, new ArrayList<>());
        int turn = 0;
        for (Map.Entry<String, TreeSet<String>> e : subscribers.entrySet()) {
            Integer count = metadata.partitionCountForTopic(e.getKey());
            if (count == null) continue;
            List<String> candidates = new ArrayList<>(e.getValue());
            String member = candidates.get(turn++ % candidates.size());
            for (int p = 0; p < count; p++) owned.get(member).add(new TopicPartition(e.getKey(), p));
        }
        Map<String, Assignment> out = new HashMap<>();
        owned.forEach((member, partitions) -> out.put(member, new Assignment(partitions)));
        return new GroupAssignment(out);
    }
}
