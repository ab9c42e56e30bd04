import java.io.File;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.Scheduler;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.LogStartOffsetIncrementReason;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * Retention on a real UnifiedLog (storage/.../internals/log/UnifiedLog.java, Java from 4.1; 4.0's is Scala in
 * kafka_2.13 and not on the bridge classpath, so this handler does not compile there and is skipped).
 *
 * Request RT: {@code RT <retention.ms> <retention.bytes> <policy> <timestamp type> <op>...}, policy one of
 * d (delete), c (compact), cd (compact,delete), n (empty list); timestamp type c (CreateTime) or l (LogAppendTime).
 * A fresh log (partition t-0, leader epoch 0) in a temporary directory, driven by the ops in order:
 *   a<clock>:<ts,ts,...>:<value bytes>:<key bytes or - for null>
 *              set the clock, append one batch as leader: one record per timestamp (-1: none), each with a key
 *              and a value of those sizes
 *   r          roll()
 *   h<offset>  updateHighWatermark(offset)                     answers H<high watermark after>
 *   s<offset>  maybeIncrementLogStartOffset(ClientRecordDeletion) answers S1 / S0 (moved or not) / SX<exception>
 *   d<now>     set the clock, deleteOldSegments()              answers D<segments deleted>
 *   m<ms>      every segment's .log file modified at ms (LogSegment.lastModified: a segment without timestamps
 *              is judged by it)
 *   p          answers P<log start>/<hw>/<log end>/<segments>, a segment base:size:maxTimestampSoFar:next offset
 *              joined by ';' ('~' when none)
 * The answer is OK followed by the ops' answers. The clock is our own Time; the Scheduler drops every task
 * (the async file deletion and the producer-expiry check never run: the log is thrown away after each request).
 * MemoryRecords and SimpleRecord moved to common.record.internal in 4.4: both are looked up by name.
 */
public final class KcheckStorageRetention {
    private static final BrokerTopicStats STATS = new BrokerTopicStats();
    private static Method withRecords;
    private static Constructor<?> simpleRecord;
    private static Class<?> simpleRecordClass;
    private static Method appendAsLeader;

    private KcheckStorageRetention() {
    }

    public static void register(Map<String, KcheckHandler> table) {
        for (String pkg : new String[] {"org.apache.kafka.common.record.internal", "org.apache.kafka.common.record"}) {
            try {
                Class<?> memory = Class.forName(pkg + ".MemoryRecords");
                simpleRecordClass = Class.forName(pkg + ".SimpleRecord");
                Class<?> array = Array.newInstance(simpleRecordClass, 0).getClass();
                withRecords = memory.getMethod("withRecords", Compression.class, array);
                simpleRecord = simpleRecordClass.getConstructor(long.class, byte[].class, byte[].class);
                appendAsLeader = UnifiedLog.class.getMethod("appendAsLeader", memory, int.class);
                break;
            } catch (ReflectiveOperationException e) {
                withRecords = null;
            }
        }
        if (withRecords != null) table.put("RT", KcheckStorageRetention::retention);
    }


    /** Drops every task: nothing runs behind the request's back. */
    static final class DropScheduler implements Scheduler {
        public void startup() {
        }

        public void shutdown() {
        }

        public ScheduledFuture<?> schedule(String name, Runnable task, long delayMs, long periodMs) {
            return new Dropped();
        }

        public void resizeThreadPool(int n) {
        }
    }

    static final class Dropped implements ScheduledFuture<Object> {
        public long getDelay(TimeUnit unit) {
            return 0;
        }

        public int compareTo(Delayed o) {
            return 0;
        }

        public boolean cancel(boolean mayInterrupt) {
            return true;
        }

        public boolean isCancelled() {
            return true;
        }

        public boolean isDone() {
            return true;
        }

        public Object get() {
            return null;
        }

        public Object get(long timeout, TimeUnit unit) {
            return null;
        }
    }

    private static String policy(String code) {
        switch (code) {
            case "d": return "delete";
            case "c": return "compact";
            case "cd": return "compact,delete";
            case "n": return "";
            default: throw new IllegalArgumentException("policy " + code);
        }
    }

    private static String retention(String[] t) throws Throwable {
        Map<String, Object> props = new HashMap<>();
        props.put("retention.ms", t[1]);
        props.put("retention.bytes", t[2]);
        props.put("cleanup.policy", policy(t[3]));
        props.put("message.timestamp.type", t[4].equals("l") ? "LogAppendTime" : "CreateTime");
        // Rolls happen only where the request says: no size, time or jitter roll; future timestamps accepted.
        props.put("segment.ms", Long.toString(Long.MAX_VALUE));
        props.put("segment.jitter.ms", "0");
        props.put("message.timestamp.after.max.ms", Long.toString(Long.MAX_VALUE));
        // Small index files (the default preallocates 10 MB each) and, where there is one, a tmpfs for the
        // producer-state snapshot a roll writes and syncs.
        props.put("segment.index.bytes", "4096");
        LogConfig config = new LogConfig(props);
        File shm = new File("/dev/shm");
        Path root = shm.isDirectory() && shm.canWrite() ? Files.createTempDirectory(shm.toPath(), "kcheck-rt")
                                                        : Files.createTempDirectory("kcheck-rt");
        File dir = new File(root.toFile(), "t-0");
        KcheckClock clock = new KcheckClock();
        UnifiedLog log = UnifiedLog.create(dir, config, 0L, 0L, new DropScheduler(), STATS, clock, 300000,
            new ProducerStateManagerConfig(86400000, false), Integer.MAX_VALUE, new LogDirFailureChannel(1), true,
            Optional.empty());
        StringBuilder out = new StringBuilder("OK");
        try {
            for (int i = 5; i < t.length; i++) {
                String op = t[i];
                char kind = op.charAt(0);
                String arg = op.substring(1);
                if (kind == 'a') {
                    String[] parts = arg.split(":");
                    clock.now = Long.parseLong(parts[0]);
                    String[] ts = parts[1].split(",");
                    byte[] value = new byte[Integer.parseInt(parts[2])];
                    byte[] key = parts[3].equals("-") ? null : new byte[Integer.parseInt(parts[3])];
                    Object records = Array.newInstance(simpleRecordClass, ts.length);
                    for (int j = 0; j < ts.length; j++) {
                        Array.set(records, j, simpleRecord.newInstance(Long.parseLong(ts[j]), key, value));
                    }
                    try {
                        appendAsLeader.invoke(log, withRecords.invoke(null, Compression.NONE, records), 0);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                } else if (kind == 'r') {
                    log.roll();
                } else if (kind == 'h') {
                    out.append(" H").append(log.updateHighWatermark(Long.parseLong(arg)));
                } else if (kind == 's') {
                    try {
                        boolean moved = log.maybeIncrementLogStartOffset(Long.parseLong(arg),
                            LogStartOffsetIncrementReason.ClientRecordDeletion);
                        out.append(moved ? " S1" : " S0");
                    } catch (RuntimeException e) {
                        out.append(" SX").append(e.getClass().getSimpleName());
                    }
                } else if (kind == 'd') {
                    clock.now = Long.parseLong(arg);
                    out.append(" D").append(log.deleteOldSegments());
                } else if (kind == 'm') {
                    // The .log file only: LogSegment.setLastModified also touches index files not created yet.
                    for (LogSegment s : log.logSegments()) {
                        if (!s.log().file().setLastModified(Long.parseLong(arg))) {
                            throw new IllegalStateException("cannot set the mtime of " + s.log().file());
                        }
                    }
                } else if (kind == 'p') {
                    out.append(" P").append(log.logStartOffset()).append('/').append(log.highWatermark())
                       .append('/').append(log.logEndOffset()).append('/');
                    List<LogSegment> segments = log.logSegments();
                    if (segments.isEmpty()) out.append('~');
                    for (int j = 0; j < segments.size(); j++) {
                        LogSegment s = segments.get(j);
                        long next = j + 1 < segments.size() ? segments.get(j + 1).baseOffset() : log.logEndOffset();
                        if (j > 0) out.append(';');
                        out.append(s.baseOffset()).append(':').append(s.size()).append(':')
                           .append(s.maxTimestampSoFar()).append(':').append(next);
                    }
                } else {
                    throw new IllegalArgumentException("op " + op);
                }
            }
        } finally {
            log.close();
            try (Stream<Path> walk = Files.walk(root)) {
                walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        return out.toString();
    }
}
