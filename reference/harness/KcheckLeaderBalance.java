import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * KRaft's automatic leader balancing: one ReplicationControlManager.maybeBalancePartitionLeaders() run
 * (request LB) on a controller built, as Kafka's own ReplicationControlManagerTest does, from the real
 * FeatureControlManager, ClusterControlManager and ConfigurationControlManager (KcheckControlManagers) and fed
 * metadata records. maybeBalancePartitionLeaders and imbalancedPartitions are package-private, so they are
 * reached by reflection too (the jars are on the class path, an unnamed module: setAccessible is allowed).
 *
 *   LB <maxElections> <elr 0|1> <metadata.version feature level|-> <nBrokers> <broker>*n <nTopics> <topic>*n <partition>...
 *     broker    = <id>/<a|f|s>: active, fenced, or unfenced and in controlled shutdown (a replica whose
 *                 id has no broker is unregistered).
 *     topic     = <uuid msb>/<uuid lsb>/<min.insync.replicas or -> (named t0, t1, ... in this order;
 *                 every topic needs a partition 0: Kafka reads the topic's replication factor there).
 *     partition = <topic index>/<id>/<replicas>/<isr>/<leader>/<leaderEpoch>/<partitionEpoch>/
 *                 <leaderRecoveryState>/<removing>/<adding>/<elr>/<lastKnownElr>   (int lists as in ints())
 *     Records are replayed in this order: one RegisterBrokerRecord per broker, then per topic a
 *     TopicRecord and its ConfigRecord, then the PartitionRecords.
 *   Answer: OK <reschedule 0|1> <order> <record>...
 *     order  = the imbalanced set before the run, in its iteration order: <t>:<p> joined by ',' ('~' if none)
 *     record = one PartitionChangeRecord of the run, in order:
 *              <t>/<p>/<leader>/<isr>/<elr>/<lastKnownElr>/<leaderRecoveryState>/<replicas>/<removing>/<adding>
 *              (a list field the record leaves alone is '-'; leader -2 and recovery state -1 mean no change).
 */
public final class KcheckLeaderBalance {
    private KcheckLeaderBalance() {
    }

    public static void register(Map<String, KcheckHandler> table) throws ReflectiveOperationException {
        Class.forName(KcheckControlManagers.PACKAGE + "ReplicationControlManager$Builder");
        table.put("LB", KcheckLeaderBalance::balance);
    }

    private static Object call(Object target, String name, Object... args) throws Throwable {
        return KcheckControlManagers.call(target, name, args);
    }

    // --- the controller ------------------------------------------------------------------------

    private static String balance(String[] t) throws Throwable {
        int maxElections = Integer.parseInt(t[1]);
        boolean elr = t[2].equals("1");
        MetadataVersion mv = t[3].equals("-") ? MetadataVersion.latestProduction()
            : MetadataVersion.fromFeatureLevel(Short.parseShort(t[3]));
        int i = 4;

        KcheckControlManagers managers = new KcheckControlManagers(Time.SYSTEM,
            KcheckControlManagers.defaultSupportedFeatures(), mv, maxElections, elr);
        Object features = managers.features;
        Object cluster = managers.cluster;
        Object configs = managers.configs;
        Object replication = managers.replication;
        call(features, "replay", new FeatureLevelRecord().setName(MetadataVersion.FEATURE_NAME)
            .setFeatureLevel(mv.featureLevel()));
        if (elr && !KcheckControlManagers.elrIsABuilderFlag()) {  // 4.0+: a finalized feature (3.9: a builder flag)
            call(features, "replay", new FeatureLevelRecord().setName("eligible.leader.replicas.version")
                .setFeatureLevel((short) 1));
        }

        int nBrokers = Integer.parseInt(t[i++]);
        long offset = 1;
        for (int b = 0; b < nBrokers; b++, i++) {
            String[] p = t[i].split("/");
            int id = Integer.parseInt(p[0]);
            RegisterBrokerRecord r = new RegisterBrokerRecord().setBrokerId(id).setBrokerEpoch(100 + id)
                .setIncarnationId(new Uuid(1, id + 1)).setFenced(p[1].equals("f"))
                .setInControlledShutdown(p[1].equals("s")).setLogDirs(List.of(new Uuid(2, id + 1)));
            call(cluster, "replay", r, offset++);
        }
        int nTopics = Integer.parseInt(t[i++]);
        List<Uuid> topicIds = new ArrayList<>();
        Map<Uuid, Integer> topicIndex = new HashMap<>();
        for (int k = 0; k < nTopics; k++, i++) {
            String[] p = t[i].split("/");
            Uuid id = new Uuid(Long.parseLong(p[0]), Long.parseLong(p[1]));
            topicIds.add(id);
            topicIndex.put(id, k);
            call(replication, "replay", new TopicRecord().setName("t" + k).setTopicId(id));
            if (!p[2].equals("-")) {
                call(configs, "replay", new ConfigRecord().setResourceType(ConfigResource.Type.TOPIC.id())
                    .setResourceName("t" + k).setName("min.insync.replicas").setValue(p[2]));
            }
        }
        for (; i < t.length; i++) {
            String[] p = t[i].split("/", -1);
            PartitionRecord r = new PartitionRecord().setTopicId(topicIds.get(Integer.parseInt(p[0])))
                .setPartitionId(Integer.parseInt(p[1])).setReplicas(KcheckCodec.ints(p[2]))
                .setIsr(KcheckCodec.ints(p[3])).setLeader(Integer.parseInt(p[4]))
                .setLeaderEpoch(Integer.parseInt(p[5])).setPartitionEpoch(Integer.parseInt(p[6]))
                .setLeaderRecoveryState(Byte.parseByte(p[7])).setRemovingReplicas(KcheckCodec.ints(p[8]))
                .setAddingReplicas(KcheckCodec.ints(p[9])).setEligibleLeaderReplicas(KcheckCodec.ints(p[10]))
                .setLastKnownElr(KcheckCodec.ints(p[11]));
            call(replication, "replay", r);
        }

        StringBuilder out = new StringBuilder("OK ");
        StringBuilder order = new StringBuilder();
        for (Object tip : (Iterable<?>) call(replication, "imbalancedPartitions")) {
            if (order.length() > 0) order.append(',');
            Uuid topic = (Uuid) call(tip, "topicId");
            order.append(topicIndex.get(topic)).append(':').append(call(tip, "partitionId"));
        }
        Object result = call(replication, "maybeBalancePartitionLeaders");
        @SuppressWarnings("unchecked")
        List<ApiMessageAndVersion> records = (List<ApiMessageAndVersion>) call(result, "records");
        out.append((Boolean) call(result, "response") ? '1' : '0').append(' ');
        out.append(order.length() == 0 ? "~" : order);
        for (ApiMessageAndVersion m : records) {
            PartitionChangeRecord r = (PartitionChangeRecord) m.message();
            out.append(' ').append(topicIndex.get(r.topicId())).append('/').append(r.partitionId())
                .append('/').append(r.leader()).append('/');
            list(out, r.isr());
            out.append('/');
            list(out, r.eligibleLeaderReplicas());
            out.append('/');
            list(out, r.lastKnownElr());
            out.append('/').append(r.leaderRecoveryState()).append('/');
            list(out, r.replicas());
            out.append('/');
            list(out, r.removingReplicas());
            out.append('/');
            list(out, r.addingReplicas());
        }
        return out.toString();
    }

    private static void list(StringBuilder out, List<Integer> xs) {
        if (xs == null) out.append('-');
        else KcheckCodec.joinIntsToken(out, xs);
    }
}
