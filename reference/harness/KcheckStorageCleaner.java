import java.io.File;
import java.io.IOException;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Supplier;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.Cleaner;
import org.apache.kafka.storage.internals.log.LogCleanerManager;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.LogToClean;
import org.apache.kafka.storage.internals.log.PreCleanStats;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.SkimpyOffsetMap;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.utils.Throttler;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * The log cleaner (Kafka 4.1+, where Cleaner and LogCleanerManager are Java in kafka-storage), request word CLN.
 *
 * <pre>
 * CLN cfg L R checkpoints round_1 ... round_R
 *   cfg         segmentBytes,deleteRetentionMs,minCompactionLagMs,maxCompactionLagMs,minCleanableRatio,mapBytes,
 *               loadFactor,segmentMs
 *   checkpoints L comma-separated cleaner checkpoints, '-' for none
 *   round       now then L tokens appends/hw: appends are parts joined by '|' (a roll before every part but the
 *               first; '.' appends nothing), a part is batches joined by ';', a batch records joined by ',',
 *               a record key:value:timestamp (value '~' is a tombstone; keys and values [A-Za-z0-9]);
 *               hw is the high watermark after the appends ('-' is the log end offset)
 * answer: OK round_1 ... round_R checkpoints log_1 ... log_L
 *   round       chosen,firstDirty,firstUncleanable,cleanBytes,cleanableBytes,needCompactionNow,endOffset ('-1' alone
 *               when no log was chosen)
 *   log         segments joined by '/': base@size=batches, batches joined by ';': base,last,deleteHorizon('-')
 *               then ,offset:key:value per record
 * </pre>
 * Each round appends, sets the high watermark, lets the real LogCleanerManager.grabFilthiestCompactedLog pick a log
 * (logs held in partition order, so a tie goes to the lowest partition), runs the real Cleaner.doClean at `now` on
 * the real UnifiedLog in a temp dir, and checkpoints the pass with doneCleaning. Records are plain (no producer id,
 * no transactions); the record classes moved to common.record.internal in 4.4, hence the reflection.
 */
public final class KcheckStorageCleaner {
    private static Class<?> simpleRecord;
    private static Constructor<?> simpleRecordCtor;
    private static Method withRecords;
    private static Object compressionNone;
    private static Method appendAsLeader;
    private static Method segmentLog;
    private static Method fileBatches;
    private static Method bBase, bLast, bHorizon;
    private static Method rOffset, rKey, rValue, rHasValue;
    private static Method needNow;
    private static KafkaScheduler scheduler;
    private static File root;
    private static int counter;

    private KcheckStorageCleaner() {
    }

    public static void register(Map<String, KcheckHandler> table) throws ReflectiveOperationException {
        String pkg = "org.apache.kafka.common.record.internal.";
        try {
            Class.forName(pkg + "MemoryRecords");
        } catch (ClassNotFoundException e) {
            pkg = "org.apache.kafka.common.record.";
        }
        simpleRecord = Class.forName(pkg + "SimpleRecord");
        simpleRecordCtor = simpleRecord.getConstructor(long.class, byte[].class, byte[].class);
        Class<?> memoryRecords = Class.forName(pkg + "MemoryRecords");
        Class<?> compression = Class.forName("org.apache.kafka.common.compress.Compression");
        compressionNone = compression.getField("NONE").get(null);
        withRecords = memoryRecords.getMethod("withRecords", compression, simpleRecord.arrayType());
        appendAsLeader = UnifiedLog.class.getMethod("appendAsLeader", memoryRecords, int.class);
        segmentLog = LogSegment.class.getMethod("log");
        fileBatches = segmentLog.getReturnType().getMethod("batches");
        Class<?> batch = Class.forName(pkg + "RecordBatch");
        bBase = batch.getMethod("baseOffset");
        bLast = batch.getMethod("lastOffset");
        bHorizon = batch.getMethod("deleteHorizonMs");
        Class<?> record = Class.forName(pkg + "Record");
        rOffset = record.getMethod("offset");
        rKey = record.getMethod("key");
        rValue = record.getMethod("value");
        rHasValue = record.getMethod("hasValue");
        needNow = LogToClean.class.getDeclaredMethod("needCompactionNow");
        needNow.setAccessible(true);
        table.put("CLN", KcheckStorageCleaner::clean);
    }


    private static Object call(Method m, Object target, Object... args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static synchronized File newDir() throws IOException {
        if (scheduler == null) {
            scheduler = new KafkaScheduler(1, true, "kcheck-cleaner-");
            scheduler.startup();
            File shm = new File("/dev/shm");
            root = Files.createTempDirectory(shm.isDirectory() ? shm.toPath() : new File(System.getProperty(
                "java.io.tmpdir")).toPath(), "kcheck-cleaner").toFile();
            root.deleteOnExit();
        }
        File d = new File(root, "d" + (counter++));
        if (!d.mkdirs()) throw new IOException("cannot create " + d);
        return d;
    }

    private static void deleteTree(File f) {
        File[] kids = f.listFiles();
        if (kids != null) for (File k : kids) deleteTree(k);
        f.delete();
    }

    private static void append(UnifiedLog log, String batch) throws Throwable {
        String[] recs = batch.split(",");
        Object arr = Array.newInstance(simpleRecord, recs.length);
        for (int i = 0; i < recs.length; i++) {
            String[] kvt = recs[i].split(":");
            byte[] value = kvt[1].equals("~") ? null : kvt[1].getBytes(StandardCharsets.UTF_8);
            Array.set(arr, i, simpleRecordCtor.newInstance(Long.parseLong(kvt[2]),
                                                           kvt[0].getBytes(StandardCharsets.UTF_8), value));
        }
        call(appendAsLeader, log, call(withRecords, null, compressionNone, arr), 0);
    }

    private static String utf8(ByteBuffer b) {
        byte[] bs = new byte[b.remaining()];
        b.duplicate().get(bs);
        return new String(bs, StandardCharsets.UTF_8);
    }

    private static void dump(StringBuilder out, UnifiedLog log) throws Throwable {
        boolean firstSeg = true;
        for (LogSegment seg : log.logSegments()) {
            if (!firstSeg) out.append('/');
            firstSeg = false;
            out.append(seg.baseOffset()).append('@').append(seg.size()).append('=');
            boolean firstBatch = true;
            for (Object b : (Iterable<?>) call(fileBatches, call(segmentLog, seg))) {
                if (!firstBatch) out.append(';');
                firstBatch = false;
                OptionalLong h = (OptionalLong) call(bHorizon, b);
                out.append(call(bBase, b)).append(',').append(call(bLast, b)).append(',')
                   .append(h.isPresent() ? Long.toString(h.getAsLong()) : "-");
                for (Object r : (Iterable<?>) b) {
                    out.append(',').append(call(rOffset, r)).append(':').append(utf8((ByteBuffer) call(rKey, r)))
                       .append(':');
                    out.append((Boolean) call(rHasValue, r) ? utf8((ByteBuffer) call(rValue, r)) : "~");
                }
            }
        }
    }

    private static String clean(String[] t) throws Throwable {
        String[] cfg = t[1].split(",");
        int nLogs = Integer.parseInt(t[2]);
        int nRounds = Integer.parseInt(t[3]);
        String[] checkpoints = t[4].split(",");
        Properties props = new Properties();
        props.put("cleanup.policy", "compact");
        props.put(LogConfig.INTERNAL_SEGMENT_BYTES_CONFIG, cfg[0]);
        props.put("delete.retention.ms", cfg[1]);
        props.put("min.compaction.lag.ms", cfg[2]);
        props.put("max.compaction.lag.ms", cfg[3]);
        props.put("min.cleanable.dirty.ratio", cfg[4]);
        props.put("segment.ms", cfg[7]);
        // small preallocated indexes and no delayed deletes keep a scenario cheap; non-active indexes here hold a
        // handful of entries, far below this bound, so groupSegmentsBySize's index-size check never binds
        props.put("segment.index.bytes", "4096");
        props.put("file.delete.delay.ms", "0");
        props.put("message.timestamp.before.max.ms", Long.toString(Long.MAX_VALUE));
        props.put("message.timestamp.after.max.ms", Long.toString(Long.MAX_VALUE));
        LogConfig config = new LogConfig(props);
        int mapBytes = Integer.parseInt(cfg[5]);
        double loadFactor = Double.parseDouble(cfg[6]);

        KcheckClock time = new KcheckClock();
        File dir = newDir();
        LogDirFailureChannel failures = new LogDirFailureChannel(1);
        ConcurrentSkipListMap<TopicPartition, UnifiedLog> logs =
            new ConcurrentSkipListMap<>(Comparator.comparingInt(TopicPartition::partition));
        List<UnifiedLog> byIndex = new ArrayList<>();
        BrokerTopicStats stats = new BrokerTopicStats();
        LogCleanerManager manager = null;
        StringBuilder out = new StringBuilder("OK");
        try {
            for (int i = 0; i < nLogs; i++) {
                UnifiedLog log = UnifiedLog.create(new File(dir, "t-" + i), config, 0L, 0L, scheduler, stats, time,
                    300000, new ProducerStateManagerConfig(86400000, false), 600000, failures, true,
                    Optional.empty());
                logs.put(new TopicPartition("t", i), log);
                byIndex.add(log);
            }
            manager = new LogCleanerManager(List.of(dir), logs, failures);
            for (int i = 0; i < nLogs; i++) {
                if (!checkpoints[i].equals("-")) {
                    manager.updateCheckpoints(dir, Optional.of(Map.entry(new TopicPartition("t", i),
                        Long.parseLong(checkpoints[i]))), Optional.empty());
                }
            }
            SkimpyOffsetMap map = new SkimpyOffsetMap(mapBytes);
            Throttler throttler = new Throttler(Double.MAX_VALUE, Long.MAX_VALUE, "cleaner-io", "bytes", time);
            Cleaner cleaner = new Cleaner(0, map, 65536, 1 << 20, loadFactor, throttler, time, tp -> { });
            int pos = 5;
            for (int r = 0; r < nRounds; r++) {
                long now = Long.parseLong(t[pos++]);
                time.now = now;
                for (int i = 0; i < nLogs; i++) {
                    String[] spec = t[pos++].split("/");
                    UnifiedLog log = byIndex.get(i);
                    if (!spec[0].equals(".")) {
                        String[] parts = spec[0].split("\\|", -1);
                        for (int p = 0; p < parts.length; p++) {
                            if (p > 0) log.roll();
                            if (parts[p].isEmpty()) continue;
                            for (String batch : parts[p].split(";")) append(log, batch);
                        }
                    }
                    log.updateHighWatermark(spec[1].equals("-") ? log.logEndOffset() : Long.parseLong(spec[1]));
                }
                Optional<LogToClean> chosen = manager.grabFilthiestCompactedLog(time, new PreCleanStats());
                out.append(' ');
                if (chosen.isEmpty()) {
                    out.append("-1");
                    continue;
                }
                LogToClean c = chosen.get();
                // the choice's figures are read before the pass changes the segments under it
                out.append(c.topicPartition().partition()).append(',').append(c.firstDirtyOffset()).append(',')
                   .append(c.firstUncleanableOffset()).append(',').append(c.cleanBytes()).append(',')
                   .append(c.cleanableBytes()).append(',').append((Boolean) call(needNow, c) ? 1 : 0).append(',');
                long end = cleaner.doClean(c, now).getKey();
                manager.doneCleaning(c.topicPartition(), dir, end);
                out.append(end);
            }
            Map<TopicPartition, Long> cps = manager.allCleanerCheckpoints();
            out.append(' ');
            for (int i = 0; i < nLogs; i++) {
                if (i > 0) out.append(',');
                Long cp = cps.get(new TopicPartition("t", i));
                out.append(cp == null ? "-" : cp.toString());
            }
            for (UnifiedLog log : byIndex) {
                out.append(' ');
                dump(out, log);
            }
            return out.toString();
        } finally {
            if (manager != null) manager.removeMetrics();
            for (UnifiedLog log : byIndex) {
                try {
                    log.close();
                } catch (Exception e) {
                    // the answer is already decided; the directory goes anyway
                }
            }
            deleteTree(dir);
        }
    }
}
