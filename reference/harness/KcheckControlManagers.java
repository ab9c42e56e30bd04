import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.server.config.ConfigSynonym;

/**
 * Kafka's KRaft control managers on one SnapshotRegistry, wired to each other as QuorumController wires them
 * (FeatureControlManager, ConfigurationControlManager, ClusterControlManager, ReplicationControlManager), for the
 * handlers that drive them: KcheckController (KC) and KcheckLeaderBalance (LB). It registers no request word; it is
 * compiled with the base on every release, so it reaches the managers by reflection only: their builders and most
 * of their methods are package-private, and what they take moves between releases (LogContext's package, the
 * shutdown handler's name, where the metadata version and ELR are set). Its reflection helpers are the handlers'.
 */
public final class KcheckControlManagers {
    public static final String PACKAGE = "org.apache.kafka.controller.";
    public static final String CLUSTER_ID = "kcheck-cluster-0000000";
    public static final long SESSION_TIMEOUT_NS = 9_000_000_000L;  // broker.session.timeout.ms's default
    private static final Map<String, Method> METHODS = new ConcurrentHashMap<>();

    public final Object logContext;
    public final Object registry;
    public final Object features;
    public final Object configs;
    public final Object cluster;
    public final Object replication;

    /**
     * @param time                     the cluster manager's clock (broker sessions)
     * @param supportedFeatures        the controller's supported features (QuorumFeatures' default map)
     * @param builderMetadataVersion   set on the feature manager's builder where it takes one (up to 4.0); null: not
     * @param maxElectionsPerImbalance leader elections per automatic balancing run
     * @param elr                      eligible leader replicas, where the replication builder takes it as a flag
     *                                 (3.9; from 4.0 a finalized feature the caller replays)
     */
    public KcheckControlManagers(Time time, Map<?, ?> supportedFeatures, MetadataVersion builderMetadataVersion,
                                 int maxElectionsPerImbalance, boolean elr) throws Throwable {
        logContext = logContext();
        registry = construct("org.apache.kafka.timeline.SnapshotRegistry", logContext);

        Object fb = construct(PACKAGE + "FeatureControlManager$Builder");
        call(fb, "setLogContext", logContext);
        call(fb, "setSnapshotRegistry", registry);
        call(fb, "setQuorumFeatures", construct(PACKAGE + "QuorumFeatures", 0, supportedFeatures, List.of(0)));
        if (builderMetadataVersion != null && has(fb, "setMetadataVersion", builderMetadataVersion)) {
            call(fb, "setMetadataVersion", builderMetadataVersion);
        }
        features = call(fb, "build");

        Object gb = construct(PACKAGE + "ConfigurationControlManager$Builder");
        call(gb, "setLogContext", logContext);
        call(gb, "setSnapshotRegistry", registry);
        call(gb, "setKafkaConfigSchema", topicConfigSchema());
        if (has(gb, "setFeatureControl", features)) call(gb, "setFeatureControl", features);  // 4.0+
        configs = call(gb, "build");

        Object cb = construct(PACKAGE + "ClusterControlManager$Builder");
        call(cb, "setLogContext", logContext);
        call(cb, "setClusterId", CLUSTER_ID);
        call(cb, "setTime", time);
        call(cb, "setSnapshotRegistry", registry);
        call(cb, "setSessionTimeoutNs", SESSION_TIMEOUT_NS);
        call(cb, "setReplicaPlacer", new StripedReplicaPlacer(new Random(0)));
        call(cb, "setFeatureControlManager", features);
        final Object[] replicationRef = new Object[1];
        for (Method m : cb.getClass().getDeclaredMethods()) {
            // setBrokerShutdownHandler (4.0+) or setBrokerUncleanShutdownHandler (3.9): forwarded to the replication
            // manager's handleBrokerShutdown / handleBrokerUncleanShutdown, as QuorumController does.
            if (m.getName().startsWith("setBroker") && m.getName().endsWith("ShutdownHandler")) {
                Class<?> iface = m.getParameterTypes()[0];
                String target = "handle" + iface.getSimpleName().replaceFirst("Handler$", "");
                m.setAccessible(true);
                m.invoke(cb, forwarding(iface, "addRecordsForShutdown", replicationRef, target));
            }
        }
        cluster = call(cb, "build");

        Object rb = construct(PACKAGE + "ReplicationControlManager$Builder");
        call(rb, "setLogContext", logContext);
        call(rb, "setSnapshotRegistry", registry);
        call(rb, "setMaxElectionsPerImbalance", maxElectionsPerImbalance);
        call(rb, "setConfigurationControl", configs);
        call(rb, "setClusterControl", cluster);
        call(rb, "setFeatureControl", features);
        if (elrIsABuilderFlag()) call(rb, "setEligibleLeaderReplicasEnabled", elr);
        replication = call(rb, "build");
        replicationRef[0] = replication;
    }

    /** True where ELR is a ReplicationControlManager builder flag (3.9) rather than a finalized feature (4.0+). */
    public static boolean elrIsABuilderFlag() throws Throwable {
        return has(construct(PACKAGE + "ReplicationControlManager$Builder"), "setEligibleLeaderReplicasEnabled", true);
    }

    /** QuorumFeatures' default supported features, by its 4.0+ name or its 3.9 one. */
    public static Map<?, ?> defaultSupportedFeatures() throws Throwable {
        Class<?> quorum = Class.forName(PACKAGE + "QuorumFeatures");
        Method defaults;
        try {
            defaults = quorum.getMethod("defaultSupportedFeatureMap", boolean.class);
        } catch (NoSuchMethodException e) {
            defaults = quorum.getMethod("defaultFeatureMap", boolean.class);  // 3.9
        }
        return (Map<?, ?>) defaults.invoke(null, true);
    }

    /** The topic configs the controller reads (min.insync.replicas, unclean.leader.election.enable), each with its
     * broker-level synonym, as in Kafka's own schema. */
    private static KafkaConfigSchema topicConfigSchema() {
        ConfigDef topicDef = new ConfigDef()
            .define("min.insync.replicas", ConfigDef.Type.INT, 1, ConfigDef.Importance.HIGH, "")
            .define("unclean.leader.election.enable", ConfigDef.Type.BOOLEAN, false, ConfigDef.Importance.HIGH, "");
        Map<ConfigResource.Type, ConfigDef> defs = new HashMap<>();
        defs.put(ConfigResource.Type.TOPIC, topicDef);
        defs.put(ConfigResource.Type.BROKER, new ConfigDef());
        Map<String, List<ConfigSynonym>> synonyms = new HashMap<>();
        for (String name : topicDef.names()) synonyms.put(name, List.of(new ConfigSynonym(name)));
        return new KafkaConfigSchema(defs, synonyms);
    }

    private static Object logContext() throws Throwable {
        try {
            return construct("org.apache.kafka.common.utils.LogContext");
        } catch (ClassNotFoundException e) {
            return construct("org.apache.kafka.common.utils.internals.LogContext");  // 4.4+
        }
    }

    /** An implementation of a (package-private) callback interface whose `method` calls `target` on ref[0]. */
    private static Object forwarding(Class<?> iface, String method, Object[] ref, String target) {
        return Proxy.newProxyInstance(iface.getClassLoader(), new Class<?>[] {iface}, (p, m, a) -> {
            if (m.getName().equals(method)) return call(ref[0], target, a);
            if (m.getName().equals("hashCode")) return 0;
            if (m.getName().equals("equals")) return p == a[0];
            return m.getName().equals("toString") ? target : null;
        });
    }

    // --- reflection: methods matched by name and argument types (boxed), cached ----------------------------------

    public static Object construct(String className, Object... args) throws Throwable {
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

    /** The instance method `name` of cls (or a superclass) that takes `args`; null if none. */
    public static Method find(Class<?> cls, String name, Object[] args) {
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

    /** The method `name` of cls with `arity` parameters; null if none. */
    public static Method find(Class<?> cls, String name, int arity) {
        for (Class<?> c = cls; c != null; c = c.getSuperclass()) {
            for (Method m : c.getDeclaredMethods()) {
                if (m.getName().equals(name) && m.getParameterCount() == arity) {
                    m.setAccessible(true);
                    return m;
                }
            }
        }
        return null;
    }

    public static boolean has(Object target, String name, Object... args) {
        return find(target.getClass(), name, args) != null;
    }

    /** target.name(args); Kafka's exception is thrown as itself. */
    public static Object call(Object target, String name, Object... args) throws Throwable {
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
}
