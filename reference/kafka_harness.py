"""kcheck's JVM-side harness for the Kafka bridge, kept as Java source in a string.

It is our own code (it calls Kafka's public classes; it contains none of Kafka's). The bridge
compiles it with `javac` against a release's jars (see `kafka_jars`) and feeds it requests, one
per line, on stdin; it answers one line per request on stdout, flushing whenever its input runs
dry, so a batch costs one round trip and throughput is set by Kafka's code.

Protocol (space-separated tokens; the harness first prints `READY <kafka version> admin=<0|1>`):

    A <nPartitions> <rf> <fixedStartIndex> <startPartitionId> <seed|-> <broker>...
        AdminUtils.assignReplicasToBrokers(brokers, nPartitions, rf, fixedStartIndex, startPartitionId);
        a seed re-seeds AdminUtils' static Random first (the draws of a negative fixedStartIndex).
        broker = <id>/<rack>.  Answer: OK <partition>=<r,r,...> ...
    S <seed> <nSpecs> (<startPartition> <nPartitions> <rf>)*nSpecs <broker>...
        One StripedReplicaPlacer(new Random(seed)) places each spec in turn (rf cast to short).
        broker = <id>/<rack>/<fenced 0|1>.  Answer: OK <r,r,...> ... [| <r,r,...> ...]
    Q   exit.
    rack = '-' for none, '_' for "", else the UTF-16 code units in hex joined by '.'.
    Any throwable answers ERR <class name> <message, with \\ and newlines escaped>.
"""

from __future__ import annotations

import hashlib

CLASS_NAME = "KcheckKafkaHarness"

SOURCE = r"""
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.PartitionAssignment;
import org.apache.kafka.metadata.placement.PlacementSpec;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.metadata.placement.TopicAssignment;
import org.apache.kafka.metadata.placement.UsableBroker;

/** kcheck's bridge harness: runs Kafka's placement code on requests read from stdin (see kafka_harness.py). */
public final class KcheckKafkaHarness {
    // AdminUtils is reached by reflection: it is in kafka-server-common up to 4.0 only.
    private static Method assign;
    private static Constructor<?> brokerMetadata;
    private static Random adminRandom;

    private static void findAdminUtils() {
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
        } catch (ReflectiveOperationException e) {
            assign = null;
        }
    }

    private static Optional<String> rack(String tok) {
        if (tok.equals("-")) return Optional.empty();
        if (tok.equals("_")) return Optional.of("");
        String[] units = tok.split("\\.");
        char[] cs = new char[units.length];
        for (int i = 0; i < units.length; i++) cs[i] = (char) Integer.parseInt(units[i], 16);
        return Optional.of(new String(cs));
    }

    private static String escape(String s) {
        if (s == null) return "null";
        return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r");
    }

    private static void joinInts(StringBuilder out, List<Integer> xs) {
        for (int i = 0; i < xs.size(); i++) {
            if (i > 0) out.append(',');
            out.append(xs.get(i).intValue());
        }
    }

    private static String admin(String[] t) throws Throwable {
        if (assign == null) throw new UnsupportedOperationException("AdminUtils is not in this Kafka release");
        int nPartitions = Integer.parseInt(t[1]);
        int rf = Integer.parseInt(t[2]);
        int fixedStart = Integer.parseInt(t[3]);
        int startPartition = Integer.parseInt(t[4]);
        List<Object> brokers = new ArrayList<>();
        for (int i = 6; i < t.length; i++) {
            int slash = t[i].indexOf('/');
            int id = Integer.parseInt(t[i].substring(0, slash));
            brokers.add(brokerMetadata.newInstance(id, rack(t[i].substring(slash + 1))));
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
            joinInts(out, e.getValue());
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
        List<UsableBroker> brokers = new ArrayList<>();
        for (; i < t.length; i++) {
            String[] p = t[i].split("/");
            brokers.add(new UsableBroker(Integer.parseInt(p[0]), rack(p[1]), p[2].equals("1")));
        }
        ClusterDescriber cluster = new ClusterDescriber() {
            @Override
            public Iterator<UsableBroker> usableBrokers() {
                return brokers.iterator();
            }

            @Override
            public Uuid defaultDir(int brokerId) {
                return Uuid.ZERO_UUID;
            }
        };
        StripedReplicaPlacer placer = new StripedReplicaPlacer(new Random(seed));
        StringBuilder out = new StringBuilder("OK");
        for (int s = 0; s < specs.size(); s++) {
            if (s > 0) out.append(" |");
            TopicAssignment ta = placer.place(specs.get(s), cluster);
            for (PartitionAssignment pa : ta.assignments()) {
                out.append(' ');
                joinInts(out, pa.replicas());
            }
        }
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        findAdminUtils();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        String version = "unknown";
        // AppInfoParser moved to common.utils.internals in 4.4: look it up by name.
        for (String name : new String[] {"org.apache.kafka.common.utils.AppInfoParser",
                                         "org.apache.kafka.common.utils.internals.AppInfoParser"}) {
            try {
                version = (String) Class.forName(name).getMethod("getVersion").invoke(null);
                break;
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                // try the next name
            }
        }
        out.write("READY " + version + " admin=" + (assign != null ? 1 : 0) + "\n");
        out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.equals("Q")) break;
            String answer;
            try {
                String[] t = line.split(" ");
                if (t[0].equals("A")) answer = admin(t);
                else if (t[0].equals("S")) answer = striped(t);
                else throw new IllegalArgumentException("unknown request: " + t[0]);
            } catch (Throwable e) {
                answer = "ERR " + e.getClass().getName() + " " + escape(e.getMessage());
            }
            out.write(answer);
            out.write('\n');
            if (!in.ready()) out.flush();
        }
        out.flush();
    }
}
"""


def source_hash() -> str:
    return hashlib.sha256(SOURCE.encode("utf-8")).hexdigest()[:16]
