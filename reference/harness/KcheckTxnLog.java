import java.io.File;
import java.lang.reflect.Array;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.server.common.RequestLocal;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogAppendInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.LogStartOffsetIncrementReason;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.log.VerificationGuard;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * The last stable offset, the aborted-transaction index and a read_committed fetch on a real UnifiedLog
 * (storage/.../internals/log/UnifiedLog.java, Java from 4.1: this handler does not compile on 4.0 and 3.9, whose
 * UnifiedLog is Scala in kafka_2.13, and is skipped there), partition t-0 in a temporary directory, leader epoch 0.
 *
 * TXNLOG expirationMs clockMs op...
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
 * a fetch's upper bound for its aborted transactions is the end of the segment it read.
 */
public final class KcheckTxnLog {
    private static final BrokerTopicStats STATS = new BrokerTopicStats();
    private static String record;
    private static Method withRecords;
    private static Method withMarker;
    private static java.lang.reflect.Constructor<?> simpleRecord;
    private static Class<?> simpleRecordClass;
    private static java.lang.reflect.Constructor<?> endMarker;
    private static Object commit;
    private static Object abort;
    private static Method appendClient;
    private static Method appendCoordinator;

    private KcheckTxnLog() {
    }

    public static void register(Map<String, KcheckHandler> table) throws ReflectiveOperationException {
        record = "org.apache.kafka.common.record.internal.";
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
        withRecords = mr.getMethod("withRecords", byte.class, long.class, Compression.class, TimestampType.class,
                                   long.class, short.class, int.class, int.class, boolean.class,
                                   Array.newInstance(simpleRecordClass, 0).getClass());
        withMarker = mr.getMethod("withEndTransactionMarker", long.class, long.class, int.class, long.class,
                                  short.class, marker);
        appendClient = UnifiedLog.class.getMethod("appendAsLeader", mr, int.class);
        try {
            appendCoordinator = UnifiedLog.class.getMethod("appendAsLeader", mr, int.class, AppendOrigin.class,
                RequestLocal.class, VerificationGuard.class, short.class);
        } catch (NoSuchMethodException e) {
            appendCoordinator = UnifiedLog.class.getMethod("appendAsLeader", mr, int.class, AppendOrigin.class,
                RequestLocal.class, VerificationGuard.class);  // 4.1: no transaction version
        }
        table.put("TXNLOG", KcheckTxnLog::run);
    }

    private static Object invoke(Method m, Object target, Object... args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static String run(String[] t) throws Throwable {
        Map<String, Object> props = new HashMap<>();
        // Rolls only where the script says; no index entry, so a fetch's upper bound is its segment's end.
        props.put("segment.ms", Long.toString(Long.MAX_VALUE));
        props.put("segment.jitter.ms", "0");
        props.put("message.timestamp.after.max.ms", Long.toString(Long.MAX_VALUE));
        props.put("index.interval.bytes", Integer.toString(Integer.MAX_VALUE));
        props.put("segment.index.bytes", "4096");
        props.put("retention.ms", "-1");
        LogConfig config = new LogConfig(props);
        File shm = new File("/dev/shm");
        Path root = shm.isDirectory() && shm.canWrite() ? Files.createTempDirectory(shm.toPath(), "kcheck-txl")
                                                        : Files.createTempDirectory("kcheck-txl");
        KcheckClock clock = new KcheckClock();
        clock.now = Long.parseLong(t[2]);
        UnifiedLog log = UnifiedLog.create(new File(root.toFile(), "t-0"), config, 0L, 0L,
            new KcheckStorageRetention.DropScheduler(), STATS, clock, 300000,
            new ProducerStateManagerConfig(Integer.parseInt(t[1]), false), Integer.MAX_VALUE,
            new LogDirFailureChannel(1), true, Optional.empty());
        StringBuilder out = new StringBuilder("OK");
        try {
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
            log.close();
            try (Stream<Path> walk = Files.walk(root)) {
                walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        return out.toString();
    }

    private static String step(UnifiedLog log, KcheckClock clock, char op, String[] a) throws Throwable {
        switch (op) {
            case 'a': {
                int count = Integer.parseInt(a[3]);
                long ts = Long.parseLong(a[5]);
                Object array = Array.newInstance(simpleRecordClass, count);
                for (int i = 0; i < count; i++) Array.set(array, i, simpleRecord.newInstance(ts, null, new byte[] {1}));
                Object records = invoke(withRecords, null, (byte) 2, 0L, Compression.NONE, TimestampType.CREATE_TIME,
                    Long.parseLong(a[0]), Short.parseShort(a[1]), Integer.parseInt(a[2]), 0, a[4].equals("1"), array);
                return "A" + ((LogAppendInfo) invoke(appendClient, log, records, 0)).firstOffset();
            }
            case 'm': {
                Object marker = endMarker.newInstance(a[3].equals("1") ? commit : abort, Integer.parseInt(a[2]));
                Object records = invoke(withMarker, null, 0L, Long.parseLong(a[5]), 0, Long.parseLong(a[0]),
                                        Short.parseShort(a[1]), marker);
                Object info = appendCoordinator.getParameterCount() == 6
                    ? invoke(appendCoordinator, log, records, 0, AppendOrigin.COORDINATOR, RequestLocal.noCaching(),
                             VerificationGuard.SENTINEL, Short.parseShort(a[4]))
                    : invoke(appendCoordinator, log, records, 0, AppendOrigin.COORDINATOR, RequestLocal.noCaching(),
                             VerificationGuard.SENTINEL);
                return "A" + ((LogAppendInfo) info).firstOffset();
            }
            case 'c': clock.now = Long.parseLong(a[0]); return "-";
            case 'x': log.removeExpiredProducers(clock.now); return "-";
            case 'r': log.roll(); return "-";
            case 'd': {
                long next = log.logSegments().get(Integer.parseInt(a[0])).baseOffset();
                log.maybeIncrementLogStartOffset(next, LogStartOffsetIncrementReason.ClientRecordDeletion);
                log.deleteOldSegments();
                return "-";
            }
            case 's':
                log.maybeIncrementLogStartOffset(Long.parseLong(a[0]), LogStartOffsetIncrementReason.ClientRecordDeletion);
                return "-";
            case 't': log.truncateTo(Long.parseLong(a[0])); return "-";
            case 'h': log.updateHighWatermark(Long.parseLong(a[0])); return "-";
            case 'f': {
                FetchDataInfo read = log.read(Long.parseLong(a[0]), Integer.MAX_VALUE, FetchIsolation.TXN_COMMITTED, true);
                if (!read.abortedTransactions.isPresent()) return "F-";
                StringBuilder f = new StringBuilder("F");
                for (FetchResponseData.AbortedTransaction txn : read.abortedTransactions.get()) {
                    if (f.length() > 1) f.append(';');
                    f.append(txn.producerId()).append(',').append(txn.firstOffset());
                }
                return f.length() > 1 ? f.toString() : "F~";
            }
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private static Object num(Object o, String name) throws ReflectiveOperationException {
        return o.getClass().getMethod(name).invoke(o);
    }

    private static void state(UnifiedLog log, StringBuilder out) throws ReflectiveOperationException {
        Optional<Long> first = log.firstUnstableOffset();
        out.append(log.highWatermark()).append(':').append(first.isPresent() ? first.get().toString() : "~")
           .append(':').append(log.lastStableOffset()).append(':').append(log.logStartOffset()).append(':')
           .append(log.logEndOffset()).append('/');
        List<LogSegment> segments = log.logSegments();
        for (int j = 0; j < segments.size(); j++) {
            LogSegment s = segments.get(j);
            if (j > 0) out.append('|');
            out.append(s.baseOffset()).append('=');
            List<?> txns = s.txnIndex().allAbortedTxns();
            if (txns.isEmpty()) out.append('~');
            for (int i = 0; i < txns.size(); i++) {
                if (i > 0) out.append(';');
                Object x = txns.get(i);
                out.append(num(x, "producerId")).append(',').append(num(x, "firstOffset")).append(',')
                   .append(num(x, "lastOffset")).append(',').append(num(x, "lastStableOffset"));
            }
        }
    }
}
