package com.example;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Random;

import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.DefaultDirProvider;
import org.apache.kafka.metadata.placement.PartitionAssignment;
import org.apache.kafka.metadata.placement.PlacementSpec;
import org.apache.kafka.metadata.placement.ReplicaPlacer;
import org.apache.kafka.metadata.placement.TopicAssignment;
import org.apache.kafka.metadata.placement.UsableBroker;

/**
 * A deliberately simple proposal: round-robin over the brokers in id order from a random start, one
 * broker further for each partition. It looks balanced, but it ignores racks (two replicas of a
 * partition can share a rack while another rack has none) and fenced brokers (a fenced broker can be
 * the preferred leader): `kcheck check --placer jvm:com.example.RackBlindPlacer` finds both.
 */
public class RackBlindPlacer implements ReplicaPlacer {
    private final Random random;

    public RackBlindPlacer(Random random) {
        this.random = random;
    }

    @Override
    public TopicAssignment place(PlacementSpec spec, ClusterDescriber cluster) {
        List<Integer> brokers = new ArrayList<>();
        for (Iterator<UsableBroker> it = cluster.usableBrokers(); it.hasNext(); ) {
            brokers.add(it.next().id());
        }
        brokers.sort(null);
        if (spec.numReplicas() < 1 || spec.numReplicas() > brokers.size()) {
            throw new InvalidReplicationFactorException("The replication factor must be between 1 and "
                                                        + brokers.size() + ", not " + spec.numReplicas());
        }
        int start = random.nextInt(brokers.size());
        DefaultDirProvider dirs = cluster::defaultDir;
        List<PartitionAssignment> out = new ArrayList<>();
        for (int p = 0; p < spec.numPartitions(); p++) {
            List<Integer> replicas = new ArrayList<>();
            for (int r = 0; r < spec.numReplicas(); r++) {
                replicas.add(brokers.get((start + p + r) % brokers.size()));
            }
            out.add(new PartitionAssignment(replicas, dirs));
        }
        return new TopicAssignment(out);
    }
}
