package org.apache.kafka.clients.producer.internals;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.function.IntSupplier;

import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;

/**
 * Drives one real BuiltInPartitioner (KIP-794's sticky and adaptive choice for records without a key) with its
 * random draws injected: a subclass in this package overrides the package-private randomPartition(). It lives in
 * Kafka's package to reach peekCurrentPartitionInfo / updatePartitionInfo; the constructor and
 * updatePartitionLoadStats differ per release, so each release's handler (KcheckStickyPartitioner up to 4.3,
 * KcheckStickyRackPartitioner from 4.4, KIP-1123) supplies them as a Kind. Classes in a named package cannot name
 * the harness's own (unnamed-package) classes: the word is registered through a Proxy and tokens decoded here.
 *
 * <pre>
 * PSTICKY &lt;stickyBatchSize&gt; &lt;rackAware 0|1&gt; &lt;rack&gt; &lt;draws&gt; &lt;op&gt;...
 *   rack  = text token ('-' null, '_' empty, else UTF-16 units in hex joined by '.'); ignored before 4.4
 *   draws = '~' or d,d,...: what randomPartition() returns, in turn (NoSuchElementException when none is left)
 *   op    = K&lt;partition&gt;... the topic's metadata from now on, partition = id:leader:rack joined by ','
 *                (leader '-': none; 'K' alone: no partition), in this order
 *           L-  updatePartitionLoadStats(null, ...)
 *           L&lt;queueSizes&gt;/&lt;partitionIds&gt;/&lt;racks&gt;/&lt;length&gt;  int lists '~' or a,b,...; racks text tokens
 *                joined by ',' (ignored before 4.4)
 *           A&lt;appendedBytes&gt;:&lt;enableSwitch 0|1&gt;  peekCurrentPartitionInfo, then updatePartitionInfo
 * Answer: OK &lt;tok&gt;... #&lt;draws taken&gt;; tok per op: K and L 'ok', A the partition peeked; an exception
 *         '!' + its simple name (the partitioner keeps whatever state it had reached).
 * </pre>
 */
public final class KcheckStickyDriver {
    static final String TOPIC = "t";

    /** What differs per release: the constructor, and whether updatePartitionLoadStats takes the leaders' racks. */
    public interface Kind {
        BuiltInPartitioner create(int stickyBatchSize, boolean rackAware, String rack, IntSupplier draws);

        void loadStats(BuiltInPartitioner p, int[] queueSizes, int[] partitionIds, String[] racks, int length);
    }

    private KcheckStickyDriver() {
    }

    /** Registers PSTICKY as a KcheckHandler (the harness's interface, reached by name). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static void registerWord(Map table, Kind kind) throws ClassNotFoundException {
        Class<?> handler = Class.forName("KcheckHandler");
        InvocationHandler call = (proxy, method, args) -> {
            if (method.getName().equals("handle")) return run(kind, (String[]) args[0]);
            if (method.getName().equals("toString")) return "PSTICKY";
            if (method.getName().equals("hashCode")) return System.identityHashCode(proxy);
            return proxy == args[0];
        };
        table.put("PSTICKY", Proxy.newProxyInstance(handler.getClassLoader(), new Class<?>[] {handler}, call));
    }

    static String text(String tok) {
        if (tok.equals("-")) return null;
        if (tok.equals("_")) return "";
        String[] units = tok.split("\\.");
        char[] cs = new char[units.length];
        for (int i = 0; i < units.length; i++) cs[i] = (char) Integer.parseInt(units[i], 16);
        return new String(cs);
    }

    static int[] ints(String tok) {
        if (tok.equals("~")) return new int[0];
        String[] parts = tok.split(",");
        int[] out = new int[parts.length];
        for (int i = 0; i < parts.length; i++) out[i] = Integer.parseInt(parts[i]);
        return out;
    }

    static Cluster cluster(String spec) {
        Map<Integer, Node> nodes = new LinkedHashMap<>();
        List<PartitionInfo> partitions = new ArrayList<>();
        if (!spec.isEmpty()) {
            for (String p : spec.split(",")) {
                String[] f = p.split(":");
                Node leader = null;
                if (!f[1].equals("-")) {
                    leader = new Node(Integer.parseInt(f[1]), "h", 1, text(f[2]));
                    nodes.putIfAbsent(leader.id(), leader);
                }
                partitions.add(new PartitionInfo(TOPIC, Integer.parseInt(f[0]), leader, new Node[0], new Node[0]));
            }
        }
        return new Cluster("c", nodes.values(), partitions, Set.of(), Set.of());
    }

    static String run(Kind kind, String[] t) {
        int[] draws = ints(t[4]);
        int[] next = {0};
        IntSupplier supplier = () -> {
            if (next[0] >= draws.length) throw new NoSuchElementException("no draw left");
            return draws[next[0]++];
        };
        BuiltInPartitioner p = kind.create(Integer.parseInt(t[1]), t[2].equals("1"), text(t[3]), supplier);
        Cluster cluster = cluster("");
        StringBuilder out = new StringBuilder("OK");
        for (int i = 5; i < t.length; i++) {
            out.append(' ');
            String op = t[i];
            try {
                switch (op.charAt(0)) {
                    case 'K':
                        cluster = cluster(op.substring(1));
                        out.append("ok");
                        break;
                    case 'L':
                        loadStats(kind, p, op.substring(1));
                        out.append("ok");
                        break;
                    default:
                        String[] a = op.substring(1).split(":");
                        BuiltInPartitioner.StickyPartitionInfo info = p.peekCurrentPartitionInfo(cluster);
                        int partition = info.partition();
                        p.updatePartitionInfo(info, Integer.parseInt(a[0]), cluster, a[1].equals("1"));
                        out.append(partition);
                }
            } catch (RuntimeException e) {
                out.append('!').append(e.getClass().getSimpleName());
            }
        }
        return out.append(" #").append(next[0]).toString();
    }

    private static void loadStats(Kind kind, BuiltInPartitioner p, String spec) {
        if (spec.equals("-")) {
            kind.loadStats(p, null, null, null, 0);
            return;
        }
        String[] f = spec.split("/");
        String[] rackTokens = f[2].equals("~") ? new String[0] : f[2].split(",");
        String[] racks = new String[rackTokens.length];
        for (int i = 0; i < racks.length; i++) racks[i] = text(rackTokens[i]);
        kind.loadStats(p, ints(f[0]), ints(f[1]), racks, Integer.parseInt(f[3]));
    }
}
