import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupAssignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Configurable;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * Client-side (classic protocol) assignors: request C runs any ConsumerPartitionAssignor with a public
 * no-arg constructor (Kafka's RangeAssignor, RoundRobinAssignor, StickyAssignor,
 * CooperativeStickyAssignor, or a user's class on the bridge's classpath) through
 * {@code assign(Cluster, GroupSubscription)} on a fresh instance.
 *
 * <pre>
 * C &lt;class&gt; &lt;nPartitions&gt; &lt;partition&gt;*nPartitions &lt;nMembers&gt; &lt;member&gt;*nMembers
 *   class     = the assignor's class name (text token)
 *   partition = &lt;topic&gt;:&lt;partition&gt;:&lt;leader&gt;:&lt;replicas&gt;     one PartitionInfo of the Cluster
 *               leader = '-' (null) or &lt;id&gt;/&lt;rack&gt;; replicas = '~' or &lt;id&gt;/&lt;rack&gt;,... (ISR and offline empty)
 *   member    = &lt;memberId&gt;:&lt;topics&gt;:&lt;userData&gt;:&lt;owned&gt;:&lt;generation&gt;:&lt;rackId&gt;:&lt;groupInstanceId&gt;
 *               topics = '~' or &lt;topic&gt;,...; userData = '-' (null), '_' (empty) or hex bytes;
 *               owned = '~' or &lt;topic&gt;/&lt;partition&gt;,...; generation = an int (negative: none)
 * Answer: OK (&lt;memberId&gt;=&lt;assigned&gt;)* in the GroupAssignment map's iteration order, assigned = '~' or
 *         &lt;topic&gt;/&lt;partition&gt;,... in the Assignment's list order.
 * CW ...   the same, but each Subscription first goes through ConsumerProtocol.serializeSubscription and
 *          deserializeSubscription (latest version), as the group leader decodes JoinGroup metadata
 *          (ConsumerCoordinator.onLeaderElected), and then gets its group instance id.
 * CU &lt;class&gt; &lt;generation|-&gt; &lt;partitions&gt; &lt;topics&gt;
 *          A member's user data: a fresh instance, given onAssignment(Assignment(partitions),
 *          ConsumerGroupMetadata("kcheck", generation, "kcheck", empty)) unless the generation is '-',
 *          then subscriptionUserData(topics). partitions = '~' or &lt;topic&gt;/&lt;partition&gt;,...; topics as in C.
 *          Answer: OK &lt;'-' (null), '_' (empty) or hex bytes&gt;
 * </pre>
 *
 * Every string (class, topics, member ids, racks) is a text token (KcheckCodec.text). Members go into a
 * {@code new HashMap<>()} in request order, as the group leader's map is filled. A Configurable assignor
 * is configured with an empty map, as {@code getAssignorInstances} would configure it (without the
 * consumer's configs).
 */
public final class KcheckClientAssignors {
    private static final Map<String, Constructor<?>> CONSTRUCTORS = new ConcurrentHashMap<>();

    private KcheckClientAssignors() {
    }

    public static void register(Map<String, KcheckHandler> table) {
        table.put("C", t -> assign(t, false));
        table.put("CW", t -> assign(t, true));
        table.put("CU", KcheckClientAssignors::userData);
    }

    private static ConsumerPartitionAssignor newAssignor(String className) throws Throwable {
        Constructor<?> ctor = CONSTRUCTORS.get(className);
        if (ctor == null) {
            Class<?> cls = Class.forName(className, true, Thread.currentThread().getContextClassLoader());
            if (!ConsumerPartitionAssignor.class.isAssignableFrom(cls)) {
                throw new IllegalArgumentException(className + " is not a ConsumerPartitionAssignor");
            }
            ctor = cls.getConstructor();
            CONSTRUCTORS.put(className, ctor);
        }
        Object instance;
        try {
            instance = ctor.newInstance();
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
        if (instance instanceof Configurable) ((Configurable) instance).configure(Collections.emptyMap());
        return (ConsumerPartitionAssignor) instance;
    }

    private static Node node(String tok, Map<Integer, Node> nodes) {
        int slash = tok.indexOf('/');
        int id = Integer.parseInt(tok.substring(0, slash));
        Node n = new Node(id, "h" + id, 9092, KcheckCodec.text(tok.substring(slash + 1)));
        nodes.putIfAbsent(id, n);
        return n;
    }

    private static ByteBuffer bytes(String tok) {
        if (tok.equals("-")) return null;
        if (tok.equals("_")) return ByteBuffer.allocate(0);
        byte[] b = new byte[tok.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(tok.substring(2 * i, 2 * i + 2), 16);
        return ByteBuffer.wrap(b);
    }

    private static List<String> texts(String tok) {
        List<String> out = new ArrayList<>();
        if (tok.equals("~")) return out;
        for (String s : tok.split(",")) out.add(KcheckCodec.text(s));
        return out;
    }

    private static List<TopicPartition> partitions(String tok) {
        List<TopicPartition> out = new ArrayList<>();
        if (tok.equals("~")) return out;
        for (String s : tok.split(",")) {
            int slash = s.lastIndexOf('/');
            out.add(new TopicPartition(KcheckCodec.text(s.substring(0, slash)),
                                       Integer.parseInt(s.substring(slash + 1))));
        }
        return out;
    }

    private static String userData(String[] t) throws Throwable {
        ConsumerPartitionAssignor assignor = newAssignor(KcheckCodec.text(t[1]));
        if (!t[2].equals("-")) {
            assignor.onAssignment(new Assignment(partitions(t[3])),
                                  new ConsumerGroupMetadata("kcheck", Integer.parseInt(t[2]), "kcheck", Optional.empty()));
        }
        ByteBuffer data = assignor.subscriptionUserData(new HashSet<>(texts(t[4])));
        if (data == null) return "OK -";
        ByteBuffer view = data.duplicate();
        if (!view.hasRemaining()) return "OK _";
        StringBuilder out = new StringBuilder("OK ");
        while (view.hasRemaining()) {
            int b = view.get() & 0xff;
            out.append(Character.forDigit(b >> 4, 16)).append(Character.forDigit(b & 15, 16));
        }
        return out.toString();
    }

    private static String assign(String[] t, boolean wire) throws Throwable {
        String className = KcheckCodec.text(t[1]);
        int i = 2;
        int nPartitions = Integer.parseInt(t[i++]);
        Map<Integer, Node> nodes = new LinkedHashMap<>();
        List<PartitionInfo> infos = new ArrayList<>(nPartitions);
        for (int p = 0; p < nPartitions; p++) {
            String[] f = t[i++].split(":", -1);
            Node leader = f[2].equals("-") ? null : node(f[2], nodes);
            List<Node> replicas = new ArrayList<>();
            if (!f[3].equals("~")) {
                for (String r : f[3].split(",")) replicas.add(node(r, nodes));
            }
            infos.add(new PartitionInfo(KcheckCodec.text(f[0]), Integer.parseInt(f[1]), leader,
                                        replicas.toArray(new Node[0]), new Node[0]));
        }
        Cluster cluster = new Cluster("kcheck", nodes.values(), infos, Collections.emptySet(), Collections.emptySet());

        int nMembers = Integer.parseInt(t[i++]);
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (int m = 0; m < nMembers; m++) {
            String[] f = t[i++].split(":", -1);
            Subscription s = new Subscription(texts(f[1]), bytes(f[2]), partitions(f[3]), Integer.parseInt(f[4]),
                                              Optional.ofNullable(KcheckCodec.text(f[5])));
            if (wire) s = ConsumerProtocol.deserializeSubscription(ConsumerProtocol.serializeSubscription(s));
            s.setGroupInstanceId(Optional.ofNullable(KcheckCodec.text(f[6])));
            subscriptions.put(KcheckCodec.text(f[0]), s);
        }

        ConsumerPartitionAssignor assignor = newAssignor(className);
        GroupSubscription group = new GroupSubscription(subscriptions);
        KcheckTimer.begin();
        GroupAssignment result = assignor.assign(cluster, group);
        KcheckTimer.end();
        StringBuilder out = new StringBuilder("OK");
        for (Map.Entry<String, Assignment> e : result.groupAssignment().entrySet()) {
            out.append(' ').append(KcheckCodec.encodeText(e.getKey())).append('=');
            // What ConsumerCoordinator would dereference when serializing the assignment.
            if (e.getValue() == null || e.getValue().partitions() == null) {
                throw new NullPointerException("the assignor answered no partition list for member " + e.getKey());
            }
            List<TopicPartition> tps = e.getValue().partitions();
            if (tps.isEmpty()) {
                out.append('~');
            } else {
                for (int k = 0; k < tps.size(); k++) {
                    if (k > 0) out.append(',');
                    TopicPartition tp = tps.get(k);
                    out.append(KcheckCodec.encodeText(tp.topic())).append('/').append(tp.partition());
                }
            }
        }
        return out.toString();
    }
}
