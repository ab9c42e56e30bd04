package com.example;

import java.util.Random;

import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.PlacementSpec;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.metadata.placement.TopicAssignment;

/**
 * Where a change to KRaft's placer starts: Kafka's StripedReplicaPlacer, unchanged so far (kcheck gives
 * exactly the striped placer's answers for it). Change place() and run kcheck again.
 */
public class StripedPlusPlacer extends StripedReplicaPlacer {
    public StripedPlusPlacer(Random random) {
        super(random);
    }

    @Override
    public TopicAssignment place(PlacementSpec spec, ClusterDescriber cluster) {
        return super.place(spec, cluster);
    }
}
