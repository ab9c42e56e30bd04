import java.io.File;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.stream.Stream;

/**
 * The request TXNLOG on a real UnifiedLog, all by reflection so one source drives Java's UnifiedLog (kafka-storage,
 * 4.1 on) and Scala's (kafka_2.13's kafka.log.UnifiedLog, 3.9 and 4.0): the handlers KcheckTxnLog (the bridge) and
 * KcheckTxnLogScala (the broker-side bridge, whose jars hold 4.0's kafka_2.13) register it where they find one. It
 * names no Kafka class at compile time, as the harness's base must compile on every release.
 *
 * TXNLOG expirationMs clockMs op...   partition t-0 in a temporary directory, leader epoch 0
 *   aPID:EPOCH:SEQ:COUNT:TXN:TS   appendAsLeader (origin CLIENT) of COUNT records with timestamp TS
 *   mPID:EPOCH:COORD:COMMIT:TV:TS appendAsLeader (origin COORDINATOR, transaction version TV from 4.2) of a marker
 *   cNOW                          the clock
 *   x                             removeExpiredProducers(now)
 *   r                             roll()
 *   dK                            maybeIncrementLogStartOffset(the (K+1)th segment's base), then deleteOldSegments()
 *   sOFFSET                       maybeIncrementLogStartOffset(OFFSET, ClientRecordDeletion)
 *   tOFFSET                       truncateTo(OFFSET)
 *   hOFFSET                       updateHighWatermark(OFFSET)
 *   fSTART                        read(START, Integer.MAX_VALUE, TXN_COMMITTED, minOneMessage): its aborted
 *                                 transactions
 * Answer: OK and per op VERDICT/STATE: VERDICT A<first offset> (an append, or a duplicate's first offset),
 * E<exception simple name>, F<pid,firstOffset;...> ('F~' for an empty list, 'F-' for none), or '-'; STATE
 * hw:firstUnstable:lso:logStart:logEnd/index, the index every segment's base=entries (pid,first,last,lso joined by
 * ';', '~' when none) joined by '|'. No index interval is ever reached (index.interval.bytes is Integer.MAX_VALUE), so
 * a fetch's upper bound for its aborted transactions is the end of the segment it read. The scheduler drops every
 * task (the producer-expiry check runs only as the op x).
 */
public final class KcheckTxnLogs {
    private static final String LOG = "org.apache.kafka.storage.internals.log.";
    private static Class<?> unifiedLog;
    private static Method create;  // static UnifiedLog.create, or the Scala companion's apply
    private static Object companion;
    // The record classes and MemoryRecords' builders, wherever this release keeps them (`findRecords`); the producer
    // state's handler (KcheckProducerState) builds its batches with them too.
    static String record;
    static Method withRecords;
    static Method withMarker;
    static Constructor<?> simpleRecord;
    static Class<?> simpleRecordClass;
    static Constructor<?> endMarker;
    static Object commit;
    static Object abort;
    private static Object compressionNone;
    private static Object createTime;
    private static Method appendLeader;  // the longest appendAsLeader: records, epoch, origin, ...
    private static Method read;
    private static Object txnCommitted;
    private static Object clientDeletion;

    private KcheckTxnLogs() {
    }

    /** Finds the release's UnifiedLog: the Java one when `java`, else the Scala one; false if there is none. */
    static boolean find(boolean java) {
        try {
            if (java) {
                unifiedLog = Class.forName(LOG + "UnifiedLog");
                create = longest(unifiedLog, "create");
                if (create == null) return false;  // 4.0: kafka-storage's UnifiedLog holds static helpers only
            } else {
                unifiedLog = Class.forName("kafka.log.UnifiedLog");
                Class<?> c = Class.forName("kafka.log.UnifiedLog$");
                companion = c.getField("MODULE$").get(null);
                create = longest(c, "apply");
            }
            findRecords();
            appendLeader = longest(unifiedLog, "appendAsLeader");
            Class<?> isolation = findClass("org.apache.kafka.server.storage.log.FetchIsolation", LOG + "FetchIsolation");
            read = unifiedLog.getMethod("read", long.class, int.class, isolation, boolean.class);
            txnCommitted = isolation.getField("TXN_COMMITTED").get(null);
            clientDeletion = Class.forName(LOG + "LogStartOffsetIncrementReason").getField("ClientRecordDeletion")
                .get(null);
            return true;
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }

    private static Class<?> findClass(String... names) throws ClassNotFoundException {
        for (String n : names) {
            try {
                return Class.forName(n);
            } catch (ClassNotFoundException e) {
                continue;
            }
        }
        throw new ClassNotFoundException(names[0]);
    }

    private static Method longest(Class<?> c, String name) {
        Method best = null;
        for (Method m : c.getMethods()) {
            if (m.getName().equals(name) && (best == null || m.getParameterCount() > best.getParameterCount())) best = m;
        }
        return best;
    }

    static void findRecords() throws ReflectiveOperationException {
        record = "org.apache.kafka.common.record.internal.";  // 4.4 moved the record classes here
        try {
            Class.forName(record + "MemoryRecords");
        } catch (ClassNotFoundException e) {
            record = "org.apache.kafka.common.record.";
        }
        Class<?> mr = Class.forName(record + "MemoryRecords");
        simpleRecordClass = Class.forName(record + "SimpleRecord");
        simpleRecord = simpleRecordClass.getConstructor(long.class, byte[].class, byte[].class);
        Class<?> marker = Class.forName(record + "EndTransactionMarker");
        Class<?> controlType = Class.forName(record + "ControlRecordType");
        endMarker = marker.getConstructor(controlType, int.class);
        commit = controlType.getField("COMMIT").get(null);
        abort = controlType.getField("ABORT").get(null);
        Class<?> compression = Class.forName("org.apache.kafka.common.compress.Compression");
        compressionNone = compression.getField("NONE").get(null);
        Class<?> timestampType = Class.forName("org.apache.kafka.common.record.TimestampType");
        createTime = timestampType.getField("CREATE_TIME").get(null);
        withRecords = mr.getMethod("withRecords", byte.class, long.class, compression, timestampType, long.class,
                                   short.class, int.class, int.class, boolean.class,
                                   Array.newInstance(simpleRecordClass, 0).getClass());
        withMarker = mr.getMethod("withEndTransactionMarker", long.class, long.class, int.class, long.class,
                                  short.class, marker);
    }

    private static Object invoke(Method m, Object target, Object... args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** The public method `name` with `arity` parameters (UnifiedLog's own, the same names in Java and Scala). */
    private static Object call(Object target, String name, int arity, Object... args) throws Throwable {
        for (Method m : target.getClass().getMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == arity) return invoke(m, target, args);
        }
        throw new NoSuchMethodException(name + "/" + arity);
    }

    private static Object newInstance(String name, Object... args) throws ReflectiveOperationException {
        for (Constructor<?> c : Class.forName(name).getConstructors()) {
            if (c.getParameterCount() == args.length) return c.newInstance(args);
        }
        throw new NoSuchMethodException(name);
    }

    /** A Scheduler (server-common's interface) that drops every task: each method answers the zero of its type, and
     * a task's future is as inert (UnifiedLog cancels its producer-expiry check on close). */
    private static Object dropScheduler(Class<?> type) {
        return inert(type);
    }

    private static Object inert(Class<?> type) {
        return Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (proxy, m, args) -> {
            Class<?> r = m.getReturnType();
            if (r == ScheduledFuture.class) return inert(ScheduledFuture.class);
            if (r == boolean.class) return m.getName().equals("cancel") || m.getName().startsWith("is");
            if (r == long.class) return 0L;
            if (r == int.class) return 0;
            if (r == String.class) return "inert";
            return null;
        });
    }

    /** Each argument of UnifiedLog.create (or apply) by its type, in either release's order. */
    private static Object open(File dir, KcheckClock clock, int expirationMs) throws Throwable {
        Map<String, Object> props = new HashMap<>();
        // Rolls only where the script says; no index entry, so a fetch's upper bound is its segment's end.
        props.put("segment.ms", Long.toString(Long.MAX_VALUE));
        props.put("segment.jitter.ms", "0");
        props.put("retention.ms", "-1");
        props.put("message.timestamp.after.max.ms", Long.toString(Long.MAX_VALUE));
        props.put("index.interval.bytes", Integer.toString(Integer.MAX_VALUE));
        props.put("segment.index.bytes", "4096");
        Class<?>[] types = create.getParameterTypes();
        Object[] args = new Object[types.length];
        int longs = 0;
        int ints = 0;
        int booleans = 0;
        // lastShutdownClean, (Scala's) keepPartitionMetadataFile: true; remoteStorageSystemEnable: false
        int trues = 0;
        for (Class<?> c : types) if (c == boolean.class) trues++;
        trues--;
        for (int i = 0; i < types.length; i++) {
            String n = types[i].getName();
            if (types[i] == File.class) args[i] = dir;
            else if (types[i] == long.class) args[i] = 0L;  // the log start and the recovery point
            else if (types[i] == int.class) args[i] = ints++ == 0 ? 300000 : Integer.MAX_VALUE;  // txn timeout, check
            else if (types[i] == boolean.class) args[i] = booleans++ < trues;
            else if (n.endsWith(".LogConfig")) args[i] = newInstance(n, props);
            else if (n.endsWith(".Scheduler")) args[i] = dropScheduler(types[i]);
            else if (n.endsWith(".BrokerTopicStats")) args[i] = brokerTopicStats(types[i]);
            else if (n.endsWith(".Time")) args[i] = clock;
            else if (n.endsWith(".ProducerStateManagerConfig")) args[i] = newInstance(n, expirationMs, false);
            else if (n.endsWith(".LogDirFailureChannel")) args[i] = newInstance(n, 1);
            else if (types[i] == Optional.class) args[i] = Optional.empty();
            else if (n.equals("scala.Option")) args[i] = Class.forName("scala.Option").getMethod("empty").invoke(null);
            else if (n.endsWith("ConcurrentMap")) args[i] = new ConcurrentHashMap<>();
            else if (n.endsWith(".LogOffsetsListener")) args[i] = types[i].getField("NO_OP_OFFSETS_LISTENER").get(null);
            else throw new IllegalStateException("UnifiedLog parameter " + n);
            if (types[i] == long.class) longs++;
        }
        if (longs != 2) throw new IllegalStateException("UnifiedLog parameters " + longs + " longs");
        return invoke(create, companion, args);
    }

    private static Object brokerTopicStats(Class<?> type) throws ReflectiveOperationException {
        for (Constructor<?> c : type.getConstructors()) {
            if (c.getParameterCount() == 0) return c.newInstance();
            if (c.getParameterCount() == 1 && c.getParameterTypes()[0] == boolean.class) return c.newInstance(false);
        }
        throw new NoSuchMethodException(type.getName());
    }

    static String run(String[] t) throws Throwable {
        File shm = new File("/dev/shm");
        Path root = shm.isDirectory() && shm.canWrite() ? Files.createTempDirectory(shm.toPath(), "kcheck-txl")
                                                        : Files.createTempDirectory("kcheck-txl");
        KcheckClock clock = new KcheckClock();
        clock.now = Long.parseLong(t[2]);
        Object log = null;
        StringBuilder out = new StringBuilder("OK");
        try {
            log = open(new File(root.toFile(), "t-0"), clock, Integer.parseInt(t[1]));
            for (int i = 3; i < t.length; i++) {
                String op = t[i];
                String[] a = op.length() == 1 ? new String[0] : op.substring(1).split(":");
                out.append(' ');
                try {
                    out.append(step(log, clock, op.charAt(0), a));
                } catch (RuntimeException e) {
                    out.append('E').append(e.getClass().getSimpleName());
                }
                state(log, out.append('/'));
            }
        } finally {
            if (log != null) call(log, "close", 0);
            try (Stream<Path> walk = Files.walk(root)) {
                walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        return out.toString();
    }

    /** appendAsLeader(records, 0, origin, then each further parameter's default: the Scala method's
     * appendAsLeader$default$N, else RequestLocal.noCaching(), VerificationGuard.SENTINEL, the transaction version). */
    private static long append(Object log, Object records, String origin, short tv) throws Throwable {
        Class<?>[] types = appendLeader.getParameterTypes();
        Object[] args = new Object[types.length];
        args[0] = records;
        args[1] = 0;
        args[2] = Class.forName(LOG + "AppendOrigin").getField(origin).get(null);
        for (int i = 3; i < types.length; i++) {
            String n = types[i].getName();
            try {
                args[i] = log.getClass().getMethod("appendAsLeader$default$" + (i + 1)).invoke(log);
            } catch (NoSuchMethodException e) {
                if (types[i] == short.class) args[i] = tv;
                else if (n.endsWith(".RequestLocal")) args[i] = types[i].getMethod("noCaching").invoke(null);
                else args[i] = types[i].getField("SENTINEL").get(null);  // VerificationGuard
            }
        }
        Object info = invoke(appendLeader, log, args);
        return (Long) info.getClass().getMethod("firstOffset").invoke(info);
    }

    private static String step(Object log, KcheckClock clock, char op, String[] a) throws Throwable {
        switch (op) {
            case 'a': {
                int count = Integer.parseInt(a[3]);
                long ts = Long.parseLong(a[5]);
                Object array = Array.newInstance(simpleRecordClass, count);
                for (int i = 0; i < count; i++) Array.set(array, i, simpleRecord.newInstance(ts, null, new byte[] {1}));
                Object records = invoke(withRecords, null, (byte) 2, 0L, compressionNone, createTime,
                    Long.parseLong(a[0]), Short.parseShort(a[1]), Integer.parseInt(a[2]), 0, a[4].equals("1"), array);
                return "A" + append(log, records, "CLIENT", (short) 0);
            }
            case 'm': {
                Object marker = endMarker.newInstance(a[3].equals("1") ? commit : abort, Integer.parseInt(a[2]));
                Object records = invoke(withMarker, null, 0L, Long.parseLong(a[5]), 0, Long.parseLong(a[0]),
                                        Short.parseShort(a[1]), marker);
                return "A" + append(log, records, "COORDINATOR", Short.parseShort(a[4]));
            }
            case 'c': clock.now = Long.parseLong(a[0]); return "-";
            case 'x': call(log, "removeExpiredProducers", 1, clock.now); return "-";
            case 'r': roll(log); return "-";
            case 'd': {
                Object next = segments(log).get(Integer.parseInt(a[0]));
                call(log, "maybeIncrementLogStartOffset", 2, call(next, "baseOffset", 0), clientDeletion);
                call(log, "deleteOldSegments", 0);
                return "-";
            }
            case 's': call(log, "maybeIncrementLogStartOffset", 2, Long.parseLong(a[0]), clientDeletion); return "-";
            case 't': call(log, "truncateTo", 1, Long.parseLong(a[0])); return "-";
            case 'h': log.getClass().getMethod("updateHighWatermark", long.class).invoke(log, Long.parseLong(a[0]));
                return "-";
            case 'f': return read(log, Long.parseLong(a[0]));
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private static void roll(Object log) throws Throwable {
        try {
            call(log, "roll", 0);
        } catch (NoSuchMethodException e) {
            call(log, "roll", 1, call(log, "roll$default$1", 0));  // Scala: roll(expectedNextOffset = None)
        }
    }

    private static String read(Object log, long start) throws Throwable {
        Object info = invoke(read, log, start, Integer.MAX_VALUE, txnCommitted, true);
        Optional<?> aborted = (Optional<?>) info.getClass().getField("abortedTransactions").get(info);
        if (!aborted.isPresent()) return "F-";
        StringBuilder f = new StringBuilder("F");
        for (Object txn : (List<?>) aborted.get()) {
            if (f.length() > 1) f.append(';');
            f.append(call(txn, "producerId", 0)).append(',').append(call(txn, "firstOffset", 0));
        }
        return f.length() > 1 ? f.toString() : "F~";
    }

    private static List<?> segments(Object log) throws Throwable {
        return new java.util.ArrayList<>((Collection<?>) call(log, "logSegments", 0));
    }

    /** UnifiedLog.firstUnstableOffset: Java's Optional, Scala's Option. */
    private static String firstUnstable(Object log) throws Throwable {
        Object first = call(log, "firstUnstableOffset", 0);
        if (first instanceof Optional) return ((Optional<?>) first).map(Object::toString).orElse("~");
        return (Boolean) call(first, "isDefined", 0) ? call(first, "get", 0).toString() : "~";
    }

    private static void state(Object log, StringBuilder out) throws Throwable {
        out.append(call(log, "highWatermark", 0)).append(':').append(firstUnstable(log)).append(':')
           .append(call(log, "lastStableOffset", 0)).append(':').append(call(log, "logStartOffset", 0)).append(':')
           .append(call(log, "logEndOffset", 0)).append('/');
        List<?> segments = segments(log);
        for (int j = 0; j < segments.size(); j++) {
            Object s = segments.get(j);
            if (j > 0) out.append('|');
            out.append(call(s, "baseOffset", 0)).append('=');
            List<?> txns = (List<?>) call(call(s, "txnIndex", 0), "allAbortedTxns", 0);
            if (txns.isEmpty()) out.append('~');
            for (int i = 0; i < txns.size(); i++) {
                if (i > 0) out.append(';');
                Object x = txns.get(i);
                out.append(call(x, "producerId", 0)).append(',').append(call(x, "firstOffset", 0)).append(',')
                   .append(call(x, "lastOffset", 0)).append(',').append(call(x, "lastStableOffset", 0));
            }
        }
    }
}
