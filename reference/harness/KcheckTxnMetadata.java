import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.server.common.TransactionVersion;

/**
 * The transaction coordinator's per-transactional-id state machine: Kafka's TransactionMetadata driven directly, one
 * script of transitions per line. The class is Scala (kafka.coordinator.transaction, kafka_2.13) up to 4.1 and Java
 * (org.apache.kafka.coordinator.transaction, kafka-transaction-coordinator) from 4.2; TransactionState and
 * TxnTransitMetadata moved to Java in 4.1; 3.9 has no TransactionVersion in it. So everything is found by reflection:
 * the widest constructors, the methods by name and parameter count, the fields by name (some have no getter).
 * The coordinator's own moves around the class are ops too: a failed log append clears the pending state
 * (TransactionStateManager), a failed fence write sets hasFailedEpochFence (TransactionCoordinator), markers written
 * remove partitions. Broker jars only (KafkaBridge(server=True)).
 *
 * TXNMETA pid prev next epoch last timeout state parts start update tv fenceFailed op...
 *   state a TransactionState id (0..7), parts partitions of topic "t" ('~' none, else 0,1,...), tv the metadata's
 *   TransactionVersion level ('-' ignored on 3.9, as is next), fenceFailed 0|1
 *   f                    prepareFenceProducerEpoch()
 *   i<timeout>:<expected|->:<ts>              prepareIncrementProducerEpoch (expected '-': none)
 *   r<pid>:<timeout>:<ts>:<recordLastEpoch>   prepareProducerIdRotation
 *   a<parts>:<ts>:<tv>   prepareAddPartitions (tv ignored on 3.9)
 *   e<c|a>:<tv>:<nextPid>:<ts>:<noPartitionAdded>   prepareAbortOrCommit(PrepareCommit|PrepareAbort, ...) (3.9:
 *                        only the state and ts)
 *   c<ts>                prepareComplete
 *   d                    prepareDead()
 *   k<field>:<value>     completeTransitionTo(the last transit), with one field changed first ('k-' unchanged;
 *                        answered '?' when no prepare has returned one):
 *                        p producerId, q prevProducerId, n nextProducerId, e epoch, l lastEpoch, t timeout, s state
 *                        id, x parts (. between), b start, u lastUpdate, v tv
 *   x<partition>         removePartition(t-partition)
 *   u                    pendingState = none (the coordinator after a failed append)
 *   h                    hasFailedEpochFence = true (the coordinator after a failed fence write)
 * Answer: OK then per op RESULT/STATE. RESULT: T<transit> | L<Errors name> (a Left) | - (returned nothing) |
 * !<exception simple name>:<message, '%' ' ' '/' as %25 %20 %2F; a set of partitions in it as {t-0,t-1} sorted>.
 * transit = pid,prev,next,epoch,last,timeout,state,parts,start,update,tv; STATE = pid,prev,next,epoch,last,timeout,
 * state,pending,parts,start,update,tv,fenceFailed; parts sorted, '.' between ('~' none); '-' for what a release lacks
 * and for no pending state.
 */
public final class KcheckTxnMetadata {
    private static Class<?> metadataClass;
    private static Constructor<?> metadataNew;
    private static Constructor<?> transitNew;
    private static final Object[] STATES = new Object[8];
    private static Method stateId;
    private static Method fence;
    private static Method increment;
    private static Method rotation;
    private static Method addPartitions;
    private static Method abortOrCommit;
    private static Method complete;
    private static Method dead;
    private static Method completeTo;
    private static Method removePartition;
    private static final Map<String, Field> FIELDS = new HashMap<>();
    private static final Map<String, Method> TRANSIT = new HashMap<>();
    private static boolean hasVersion;
    private static boolean javaSets;   // the metadata's and the transit's partition sets are java.util.Sets (4.2 on)
    private static boolean javaTransit;  // TxnTransitMetadata is a Java record holding a java.util.Set (4.1 on)

    private KcheckTxnMetadata() {
    }

    public static void register(Map<String, KcheckHandler> table) throws ReflectiveOperationException {
        // throwStateTransitionFailure logs at FATAL/ERROR with the whole metadata: a million of them would fill the
        // harness's stderr. This JVM's other handlers log nothing anyone reads.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "off");
        try {
            metadataClass = Class.forName("org.apache.kafka.coordinator.transaction.TransactionMetadata");
            javaSets = true;
        } catch (ClassNotFoundException e) {
            metadataClass = Class.forName("kafka.coordinator.transaction.TransactionMetadata");
        }
        Class<?> transitClass;
        try {
            Class<?> stateClass = Class.forName("org.apache.kafka.coordinator.transaction.TransactionState");
            Method fromId = stateClass.getMethod("fromId", byte.class);
            for (int i = 0; i < 8; i++) STATES[i] = fromId.invoke(null, (byte) i);
            stateId = stateClass.getMethod("id");
            transitClass = Class.forName("org.apache.kafka.coordinator.transaction.TxnTransitMetadata");
            javaTransit = true;
        } catch (ClassNotFoundException e) {
            Class<?> companion = Class.forName("kafka.coordinator.transaction.TransactionState$");
            Object module = companion.getField("MODULE$").get(null);
            Method fromId = companion.getMethod("fromId", byte.class);
            for (int i = 0; i < 8; i++) STATES[i] = fromId.invoke(module, (byte) i);
            stateId = Class.forName("kafka.coordinator.transaction.TransactionState").getMethod("id");
            transitClass = Class.forName("kafka.coordinator.transaction.TxnTransitMetadata");
        }
        metadataNew = widest(metadataClass.getConstructors());
        transitNew = widest(transitClass.getConstructors());
        hasVersion = metadataNew.getParameterCount() == 12;
        for (Method m : metadataClass.getMethods()) {
            switch (m.getName()) {
                case "prepareFenceProducerEpoch": fence = m; break;
                case "prepareIncrementProducerEpoch": increment = m; break;
                case "prepareProducerIdRotation": rotation = m; break;
                case "prepareAddPartitions": addPartitions = m; break;
                case "prepareAbortOrCommit": abortOrCommit = m; break;
                case "prepareComplete": complete = m; break;
                case "prepareDead": dead = m; break;
                case "completeTransitionTo": completeTo = m; break;
                case "removePartition": removePartition = m; break;
                default: break;
            }
        }
        for (String[] names : new String[][] {{"producerId"}, {"prevProducerId", "previousProducerId", "lastProducerId"},
                {"nextProducerId"}, {"producerEpoch"}, {"lastProducerEpoch"}, {"txnTimeoutMs"}, {"state"},
                {"pendingState"}, {"topicPartitions"}, {"txnStartTimestamp"}, {"txnLastUpdateTimestamp"},
                {"clientTransactionVersion"}, {"hasFailedEpochFence"}}) {
            for (String n : names) {
                try {
                    Field f = metadataClass.getDeclaredField(n);
                    f.setAccessible(true);
                    FIELDS.put(names[0], f);
                    break;
                } catch (NoSuchFieldException e) {
                    // the next name, or a field this release does not have
                }
            }
        }
        for (String[] names : new String[][] {{"producerId"}, {"prevProducerId", "lastProducerId"}, {"nextProducerId"},
                {"producerEpoch"}, {"lastProducerEpoch"}, {"txnTimeoutMs"}, {"txnState"}, {"topicPartitions"},
                {"txnStartTimestamp"}, {"txnLastUpdateTimestamp"}, {"clientTransactionVersion"}}) {
            for (String n : names) {
                try {
                    TRANSIT.put(names[0], transitClass.getMethod(n));
                    break;
                } catch (NoSuchMethodException e) {
                    // as above
                }
            }
        }
        table.put("TXNMETA", KcheckTxnMetadata::handle);
    }

    private static Constructor<?> widest(Constructor<?>[] cs) {
        Constructor<?> best = cs[0];
        for (Constructor<?> c : cs) if (c.getParameterCount() > best.getParameterCount()) best = c;
        return best;
    }

    // ------------------------------------------------------------------ values in and out

    private static List<TopicPartition> partitions(String tok, String sep) {
        List<TopicPartition> out = new ArrayList<>();
        if (tok.equals("~")) return out;
        for (String s : tok.split(sep)) out.add(new TopicPartition("t", Integer.parseInt(s)));
        return out;
    }

    /** A set of partitions as the parameter type asks: java.util (Set, HashSet), Scala mutable or immutable. */
    private static Object set(Class<?> type, List<TopicPartition> tps) {
        if (type.isAssignableFrom(HashSet.class)) return new HashSet<>(tps);
        scala.collection.mutable.HashSet<TopicPartition> s = new scala.collection.mutable.HashSet<>();
        for (TopicPartition tp : tps) s.add(tp);
        if (type.isInstance(s)) return s;
        return s.toSet();  // scala.collection.immutable.Set
    }

    private static TransactionVersion version(String tok) {
        return TransactionVersion.values()[Integer.parseInt(tok)];
    }

    private static Iterable<?> iterable(Object set) {
        if (set instanceof Collection) return (Collection<?>) set;
        return scala.jdk.javaapi.CollectionConverters.asJava((scala.collection.Iterable<?>) set);
    }

    private static String parts(Object set) {
        TreeSet<Integer> sorted = new TreeSet<>();
        for (Object tp : iterable(set)) sorted.add(((TopicPartition) tp).partition());
        if (sorted.isEmpty()) return "~";
        StringBuilder b = new StringBuilder();
        for (int p : sorted) b.append(b.length() == 0 ? "" : ".").append(p);
        return b.toString();
    }

    private static String canonicalSet(Object set) {
        TreeSet<Integer> sorted = new TreeSet<>();
        for (Object tp : iterable(set)) sorted.add(((TopicPartition) tp).partition());
        StringBuilder b = new StringBuilder("{");
        for (int p : sorted) b.append(b.length() == 1 ? "" : ",").append("t-").append(p);
        return b.append('}').toString();
    }

    private static Object unwrap(Object option) {
        if (option instanceof Optional) return ((Optional<?>) option).orElse(null);
        scala.Option<?> o = (scala.Option<?>) option;
        return o.isDefined() ? o.get() : null;
    }

    private static String state(Object s) throws ReflectiveOperationException {
        return s == null ? "-" : String.valueOf(stateId.invoke(s));
    }

    private static String tv(Object v) {
        return v == null ? "-" : String.valueOf(((TransactionVersion) v).featureLevel());
    }

    private static Object field(Object meta, String name) throws IllegalAccessException {
        Field f = FIELDS.get(name);
        return f == null ? null : f.get(meta);
    }

    private static String describe(Object meta) throws ReflectiveOperationException {
        StringBuilder b = new StringBuilder();
        for (String n : new String[] {"producerId", "prevProducerId", "nextProducerId", "producerEpoch",
                                      "lastProducerEpoch", "txnTimeoutMs"}) {
            Object v = field(meta, n);
            b.append(v == null ? "-" : v.toString()).append(',');
        }
        b.append(state(field(meta, "state"))).append(',').append(state(unwrap(field(meta, "pendingState"))))
            .append(',').append(parts(field(meta, "topicPartitions"))).append(',')
            .append(field(meta, "txnStartTimestamp")).append(',').append(field(meta, "txnLastUpdateTimestamp"))
            .append(',').append(tv(field(meta, "clientTransactionVersion"))).append(',')
            .append(((Boolean) field(meta, "hasFailedEpochFence")) ? 1 : 0);
        return b.toString();
    }

    private static Object get(Object transit, String name) throws ReflectiveOperationException {
        Method m = TRANSIT.get(name);
        return m == null ? null : m.invoke(transit);
    }

    private static String describeTransit(Object t) throws ReflectiveOperationException {
        StringBuilder b = new StringBuilder("T");
        for (String n : new String[] {"producerId", "prevProducerId", "nextProducerId", "producerEpoch",
                                      "lastProducerEpoch", "txnTimeoutMs"}) {
            Object v = get(t, n);
            b.append(v == null ? "-" : v.toString()).append(',');
        }
        return b.append(state(get(t, "txnState"))).append(',').append(parts(get(t, "topicPartitions"))).append(',')
            .append(get(t, "txnStartTimestamp")).append(',').append(get(t, "txnLastUpdateTimestamp")).append(',')
            .append(tv(get(t, "clientTransactionVersion"))).toString();
    }

    /** The last transit with one field changed: a new transit (its partitions a new set) through the constructor. */
    private static Object changed(Object t, String op) throws ReflectiveOperationException {
        if (op.equals("-")) return t;
        char what = op.charAt(0);
        String value = op.substring(2);
        Class<?>[] types = transitNew.getParameterTypes();
        List<String> order = new ArrayList<>(List.of("producerId", "prevProducerId"));
        if (types.length == 11) order.add("nextProducerId");
        order.addAll(List.of("producerEpoch", "lastProducerEpoch", "txnTimeoutMs", "txnState", "topicPartitions",
                             "txnStartTimestamp", "txnLastUpdateTimestamp"));
        if (types.length == 11) order.add("clientTransactionVersion");
        String target = Map.ofEntries(Map.entry('p', "producerId"), Map.entry('q', "prevProducerId"),
            Map.entry('n', "nextProducerId"), Map.entry('e', "producerEpoch"), Map.entry('l', "lastProducerEpoch"),
            Map.entry('t', "txnTimeoutMs"), Map.entry('s', "txnState"), Map.entry('x', "topicPartitions"),
            Map.entry('b', "txnStartTimestamp"), Map.entry('u', "txnLastUpdateTimestamp"),
            Map.entry('v', "clientTransactionVersion")).get(what);
        Object[] args = new Object[types.length];
        for (int i = 0; i < types.length; i++) {
            String n = order.get(i);
            Object v = get(t, n);
            if (n.equals("topicPartitions")) {
                List<TopicPartition> tps = new ArrayList<>();
                for (Object tp : iterable(v)) tps.add((TopicPartition) tp);
                v = set(types[i], n.equals(target) ? partitions(value, "\\.") : tps);
            } else if (n.equals(target)) {
                if (types[i] == long.class) v = Long.parseLong(value);
                else if (types[i] == short.class) v = Short.parseShort(value);
                else if (types[i] == int.class) v = Integer.parseInt(value);
                else if (n.equals("txnState")) v = STATES[Integer.parseInt(value)];
                else v = version(value);
            }
            args[i] = v;
        }
        return transitNew.newInstance(args);
    }

    // ------------------------------------------------------------------ the script

    private static Object newMetadata(String[] t) throws ReflectiveOperationException {
        List<Object> args = new ArrayList<>(List.of("tx", Long.parseLong(t[1]), Long.parseLong(t[2])));
        if (hasVersion) args.add(Long.parseLong(t[3]));
        args.addAll(List.of(Short.parseShort(t[4]), Short.parseShort(t[5]), Integer.parseInt(t[6]),
                            STATES[Integer.parseInt(t[7])]));
        args.add(set(metadataNew.getParameterTypes()[args.size()], partitions(t[8], ",")));
        args.addAll(List.of(Long.parseLong(t[9]), Long.parseLong(t[10])));
        if (hasVersion) args.add(version(t[11]));
        Object meta = metadataNew.newInstance(args.toArray());
        FIELDS.get("hasFailedEpochFence").set(meta, t[12].equals("1"));
        return meta;
    }

    /** The transit a prepare returned, or Left's error (Scala's prepareIncrementProducerEpoch before 4.2). */
    private static String prepared(Object result, Object[] last) throws ReflectiveOperationException {
        if (result instanceof scala.util.Either) {
            scala.util.Either<?, ?> e = (scala.util.Either<?, ?>) result;
            if (e.isLeft()) return "L" + ((scala.util.Left<?, ?>) e).value();
            result = ((scala.util.Right<?, ?>) e).value();
        }
        last[0] = result;
        return describeTransit(result);
    }

    private static Object incrementArgs(String[] a) {
        Optional<Short> expected = a[1].equals("-") ? Optional.empty() : Optional.of(Short.parseShort(a[1]));
        Object option = increment.getParameterTypes()[1] == Optional.class ? expected
            : scala.Option.apply(expected.orElse(null));
        return new Object[] {Integer.parseInt(a[0]), option, Long.parseLong(a[2])};
    }

    private static String step(Object meta, String op, Object[] last) throws Throwable {
        String[] a = op.substring(1).split(":", -1);
        switch (op.charAt(0)) {
            case 'f':
                return prepared(invoke(fence, meta), last);
            case 'i':
                return prepared(invoke(increment, meta, (Object[]) incrementArgs(a)), last);
            case 'r':
                return prepared(invoke(rotation, meta, Long.parseLong(a[0]), Integer.parseInt(a[1]),
                                       Long.parseLong(a[2]), a[3].equals("1")), last);
            case 'a': {
                Object tps = set(addPartitions.getParameterTypes()[0], partitions(a[0], ","));
                return prepared(addPartitions.getParameterCount() == 2
                    ? invoke(addPartitions, meta, tps, Long.parseLong(a[1]))
                    : invoke(addPartitions, meta, tps, Long.parseLong(a[1]), version(a[2])), last);
            }
            case 'e': {
                Object target = STATES[a[0].equals("c") ? 2 : 3];
                return prepared(abortOrCommit.getParameterCount() == 2
                    ? invoke(abortOrCommit, meta, target, Long.parseLong(a[3]))
                    : invoke(abortOrCommit, meta, target, version(a[1]), Long.parseLong(a[2]), Long.parseLong(a[3]),
                             a[4].equals("1")), last);
            }
            case 'c':
                return prepared(invoke(complete, meta, Long.parseLong(a[0])), last);
            case 'd':
                return prepared(invoke(dead, meta), last);
            case 'k': {
                if (last[0] == null) return "?";  // no prepare has returned a transit yet
                Object transit = changed(last[0], op.substring(1));
                try {
                    invoke(completeTo, meta, transit);
                } catch (RuntimeException e) {  // its message names the transit: its partitions sorted
                    Object tps = get(transit, "topicPartitions");
                    return failure(e, String.valueOf(e.getMessage()).replace(String.valueOf(tps), canonicalSet(tps)));
                }
                return "-";
            }
            case 'x':
                invoke(removePartition, meta, new TopicPartition("t", Integer.parseInt(a[0])));
                return "-";
            case 'u':
                FIELDS.get("pendingState").set(meta, FIELDS.get("pendingState").getType() == Optional.class
                    ? Optional.empty() : scala.Option.empty());
                return "-";
            default:  // 'h'
                FIELDS.get("hasFailedEpochFence").set(meta, true);
                return "-";
        }
    }

    private static Object invoke(Method m, Object target, Object... args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static String failure(RuntimeException e, String message) {
        return "!" + e.getClass().getSimpleName() + ":"
            + message.replace("%", "%25").replace(" ", "%20").replace("/", "%2F");
    }

    static String handle(String[] t) throws Throwable {
        Object meta = newMetadata(t);
        Object[] last = new Object[1];
        StringBuilder out = new StringBuilder("OK");
        for (int i = 13; i < t.length; i++) {
            String result;
            try {
                result = step(meta, t[i], last);
            } catch (RuntimeException e) {
                result = failure(e, String.valueOf(e.getMessage()));
            }
            out.append(' ').append(result).append('/').append(describe(meta));
        }
        return out.toString();
    }
}
