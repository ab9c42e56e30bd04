import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.server.config.ConfigSynonym;

/**
 * KRaft's automatic leader balancing: one ReplicationControlManager.maybeBalancePartitionLeaders() run
 * (request LB) on a controller built, as Kafka's own ReplicationControlManagerTest does, from the real
 * FeatureControlManager, ClusterControlManager and ConfigurationControlManager and fed metadata records.
 *
 * The Builders, maybeBalancePartitionLeaders and imbalancedPartitions are package-private, and their
 * signatures move between releases (LogContext's package, the shutdown handler's name, where the
 * metadata version and ELR are set), so everything on the controller side is reached by reflection
 * (the jars are on the class path, an unnamed module: setAccessible is allowed).
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
    private static final String C = "org.apache.kafka.controller.";
    private static final Map<String, Method> METHODS = new ConcurrentHashMap<>();

    private KcheckLeaderBalance() {
    }

    public static void register(Map<String, KcheckHandler> table) throws ReflectiveOperationException {
        Class.forName(C + "ReplicationControlManager$Builder");
        table.put("LB", KcheckLeaderBalance::balance);
    }

    // --- reflection -------------------------------------------------------------------------

    private static Object construct(String className, Object... args) throws Throwable {
        for (Constructor<?> c : Class.forName(className).getDeclaredConstructors()) {
            if (fits(c.getParameterTypes(), args)) {
                c.setAccessible(true);
                try {
                    return c.newInstance(args);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
            }
        }
        throw new NoSuchMethodException(className + " constructor");
    }

    private static Method find(Class<?> cls, String name, Object[] args) {
        StringBuilder key = new StringBuilder(cls.getName()).append('#').append(name);
        for (Object a : args) key.append(',').append(a == null ? "null" : a.getClass().getName());
        return METHODS.computeIfAbsent(key.toString(), k -> {
            for (Class<?> c = cls; c != null; c = c.getSuperclass()) {
                for (Method m : c.getDeclaredMethods()) {
                    if (m.getName().equals(name) && !Modifier.isStatic(m.getModifiers())
                            && fits(m.getParameterTypes(), args)) {
                        m.setAccessible(true);
                        return m;
                    }
                }
            }
            return null;
        });
    }

    private static boolean has(Object target, String name, Object... args) {
        return find(target.getClass(), name, args) != null;
    }

    private static Object call(Object target, String name, Object... args) throws Throwable {
        Method m = find(target.getClass(), name, args);
        if (m == null) throw new NoSuchMethodException(target.getClass().getName() + "." + name);
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static boolean fits(Class<?>[] types, Object[] args) {
        if (types.length != args.length) return false;
        for (int i = 0; i < types.length; i++) {
            Class<?> t = types[i];
            if (args[i] == null) {
                if (t.isPrimitive()) return false;
                continue;
            }
            if (t.isPrimitive()) t = box(t);
            if (!t.isInstance(args[i])) return false;
        }
        return true;
    }

    private static Class<?> box(Class<?> t) {
        if (t == int.class) return Integer.class;
        if (t == long.class) return Long.class;
        if (t == short.class) return Short.class;
        if (t == boolean.class) return Boolean.class;
        if (t == byte.class) return Byte.class;
        return t;
    }

    /** A do-nothing implementation of the (package-private) shutdown-handler interface the builder takes. */
    private static Object noOp(Class<?> iface) {
        return Proxy.newProxyInstance(iface.getClassLoader(), new Class<?>[] {iface}, (p, m, a) -> {
            if (m.getName().equals("toString")) return "no-op";
            if (m.getName().equals("hashCode")) return 0;
            if (m.getName().equals("equals")) return p == a[0];
            return null;
        });
    }

    private static Object logContext() throws Throwable {
        try {
            return construct("org.apache.kafka.common.utils.LogContext");
        } catch (ClassNotFoundException e) {
            return construct("org.apache.kafka.common.utils.internals.LogContext");  // 4.4+
        }
    }

    // --- the controller ------------------------------------------------------------------------

    private static String balance(String[] t) throws Throwable {
        int maxElections = Integer.parseInt(t[1]);
        boolean elr = t[2].equals("1");
        MetadataVersion mv = t[3].equals("-") ? MetadataVersion.latestProduction()
            : MetadataVersion.fromFeatureLevel(Short.parseShort(t[3]));
        int i = 4;

        Object logContext = logContext();
        Object snapshots = construct("org.apache.kafka.timeline.SnapshotRegistry", logContext);

        Object fb = construct(C + "FeatureControlManager$Builder");
        call(fb, "setSnapshotRegistry", snapshots);
        Method defaults;
        try {
            defaults = Class.forName(C + "QuorumFeatures").getMethod("defaultSupportedFeatureMap", boolean.class);
        } catch (NoSuchMethodException e) {
            defaults = Class.forName(C + "QuorumFeatures").getMethod("defaultFeatureMap", boolean.class);  // 3.9
        }
        Object quorum = construct(C + "QuorumFeatures", 0, defaults.invoke(null, true), List.of(0));
        call(fb, "setQuorumFeatures", quorum);
        if (has(fb, "setMetadataVersion", mv)) call(fb, "setMetadataVersion", mv);  // up to 4.0
        Object features = call(fb, "build");
        call(features, "replay", new FeatureLevelRecord().setName(MetadataVersion.FEATURE_NAME)
            .setFeatureLevel(mv.featureLevel()));
        boolean elrFlag = has(construct(C + "ReplicationControlManager$Builder"), "setEligibleLeaderReplicasEnabled", true);
        if (elr && !elrFlag) {  // 4.0+: a finalized feature (3.9: a builder flag, below)
            call(features, "replay", new FeatureLevelRecord().setName("eligible.leader.replicas.version")
                .setFeatureLevel((short) 1));
        }

        Object cb = construct(C + "ClusterControlManager$Builder");
        call(cb, "setLogContext", logContext);
        call(cb, "setSnapshotRegistry", snapshots);
        call(cb, "setTime", org.apache.kafka.common.utils.Time.SYSTEM);
        call(cb, "setSessionTimeoutNs", 9_000_000_000L);
        call(cb, "setReplicaPlacer", new StripedReplicaPlacer(new Random(0)));
        call(cb, "setFeatureControlManager", features);
        for (Method m : cb.getClass().getDeclaredMethods()) {
            if (m.getName().startsWith("setBroker") && m.getName().endsWith("ShutdownHandler")) {
                m.setAccessible(true);
                m.invoke(cb, noOp(m.getParameterTypes()[0]));
            }
        }
        Object cluster = call(cb, "build");

        ConfigDef topicDef = new ConfigDef()
            .define("min.insync.replicas", ConfigDef.Type.INT, 1, ConfigDef.Importance.HIGH, "")
            .define("unclean.leader.election.enable", ConfigDef.Type.BOOLEAN, false, ConfigDef.Importance.HIGH, "");
        Map<ConfigResource.Type, ConfigDef> defs = new HashMap<>();
        defs.put(ConfigResource.Type.TOPIC, topicDef);
        defs.put(ConfigResource.Type.BROKER, new ConfigDef());
        Map<String, List<ConfigSynonym>> synonyms = new HashMap<>();
        synonyms.put("min.insync.replicas", List.of(new ConfigSynonym("min.insync.replicas")));
        synonyms.put("unclean.leader.election.enable", List.of(new ConfigSynonym("unclean.leader.election.enable")));
        Object gb = construct(C + "ConfigurationControlManager$Builder");
        call(gb, "setLogContext", logContext);
        call(gb, "setSnapshotRegistry", snapshots);
        call(gb, "setKafkaConfigSchema", new KafkaConfigSchema(defs, synonyms));
        if (has(gb, "setFeatureControl", features)) call(gb, "setFeatureControl", features);
        Object configs = call(gb, "build");

        Object rb = construct(C + "ReplicationControlManager$Builder");
        call(rb, "setLogContext", logContext);
        call(rb, "setSnapshotRegistry", snapshots);
        call(rb, "setMaxElectionsPerImbalance", maxElections);
        call(rb, "setConfigurationControl", configs);
        call(rb, "setClusterControl", cluster);
        call(rb, "setFeatureControl", features);
        if (elrFlag) call(rb, "setEligibleLeaderReplicasEnabled", elr);
        Object replication = call(rb, "build");

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
