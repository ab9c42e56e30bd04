import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.PartitionAssignment;
import org.apache.kafka.metadata.placement.PlacementSpec;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.metadata.placement.TopicAssignment;

/**
 * Placement: AdminUtils.assignReplicasToBrokers (request A, only where the release has it) and
 * StripedReplicaPlacer (request S).
 */
public final class KcheckPlacement {
    // AdminUtils is reached by reflection: it is in kafka-server-common up to 4.0 only.
    private static Method assign;
    private static Constructor<?> brokerMetadata;
    private static Random adminRandom;

    private KcheckPlacement() {
    }

    public static void register(Map<String, KcheckHandler> table) {
        try {
            Class<?> au = Class.forName("org.apache.kafka.admin.AdminUtils");
            assign = au.getMethod("assignReplicasToBrokers",
                                  Collection.class, int.class, int.class, int.class, int.class);
            brokerMetadata = Class.forName("org.apache.kafka.admin.BrokerMetadata")
                                  .getConstructor(int.class, Optional.class);
            try {
                Field f = au.getDeclaredField("RAND");
                f.setAccessible(true);
                adminRandom = (Random) f.get(null);
            } catch (ReflectiveOperationException | RuntimeException e) {
                adminRandom = null;
            }
            table.put("A", KcheckPlacement::admin);
        } catch (ReflectiveOperationException e) {
            assign = null;
        }
        table.put("S", KcheckPlacement::striped);
    }

    private static String admin(String[] t) throws Throwable {
        int nPartitions = Integer.parseInt(t[1]);
        int rf = Integer.parseInt(t[2]);
        int fixedStart = Integer.parseInt(t[3]);
        int startPartition = Integer.parseInt(t[4]);
        List<Object> brokers = new ArrayList<>();
        for (int i = 6; i < t.length; i++) {
            int slash = t[i].indexOf('/');
            int id = Integer.parseInt(t[i].substring(0, slash));
            brokers.add(brokerMetadata.newInstance(id, KcheckCodec.rack(t[i].substring(slash + 1))));
        }
        if (!t[5].equals("-")) {
            if (adminRandom == null) throw new UnsupportedOperationException("AdminUtils.RAND is not reachable");
            adminRandom.setSeed(Long.parseLong(t[5]));
        }
        Object result;
        try {
            result = assign.invoke(null, brokers, nPartitions, rf, fixedStart, startPartition);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
        StringBuilder out = new StringBuilder("OK");
        @SuppressWarnings("unchecked")
        Map<Integer, List<Integer>> m = (Map<Integer, List<Integer>>) result;
        for (Map.Entry<Integer, List<Integer>> e : m.entrySet()) {
            out.append(' ').append(e.getKey().intValue()).append('=');
            KcheckCodec.joinInts(out, e.getValue());
        }
        return out.toString();
    }

    private static String striped(String[] t) {
        long seed = Long.parseLong(t[1]);
        int nSpecs = Integer.parseInt(t[2]);
        List<PlacementSpec> specs = new ArrayList<>();
        int i = 3;
        for (int s = 0; s < nSpecs; s++, i += 3) {
            short replicas = (short) Integer.parseInt(t[i + 2]);
            specs.add(new PlacementSpec(Integer.parseInt(t[i]), Integer.parseInt(t[i + 1]), replicas));
        }
        ClusterDescriber cluster = KcheckCodec.cluster(t, i);
        StripedReplicaPlacer placer = new StripedReplicaPlacer(new Random(seed));
        StringBuilder out = new StringBuilder("OK");
        for (int s = 0; s < specs.size(); s++) {
            if (s > 0) out.append(" |");
            KcheckTimer.begin();
            TopicAssignment ta = placer.place(specs.get(s), cluster);
            KcheckTimer.end();
            for (PartitionAssignment pa : ta.assignments()) {
                out.append(' ');
                KcheckCodec.joinInts(out, pa.replicas());
            }
        }
        return out.toString();
    }
}
