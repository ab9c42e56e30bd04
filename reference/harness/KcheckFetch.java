import java.io.File;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.server.util.Scheduler;
import org.apache.kafka.storage.internals.checkpoint.LeaderEpochCheckpointFile;
import org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogOffsetMetadata;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.LogSegments;
import org.apache.kafka.storage.internals.log.ProducerStateManager;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;

/**
 * Fetch bounds (issue 35 R7): the leader epoch cache, FetchParams and a read of a real log.
 *
 * EPOCH op...   a real LeaderEpochFileCache (kafka-storage, checkpoint in a temporary file, flushes dropped):
 *   aEPOCH:OFFSET assign -> the entries after it (e:o joined by ',', '~' when none) or E<exception>
 *   sOFFSET truncateFromStartAsyncFlush, eOFFSET truncateFromEndAsyncFlush -> the entries after it
 *   qEPOCH:LEO endOffsetFor(EPOCH, LEO) -> epoch:offset
 * FPARAMS version replicaId isolationLevel(0|1) clientMetadata(0|1)...  one FetchParams per 4-tuple (maxWait,
 *   minBytes, maxBytes fixed) and FetchIsolation.of(replicaId, level): answers isolation:fromFollower:fromConsumer:
 *   fetchOnlyLeader:hardMaxBytesLimit per tuple ('-' for the last where FetchParams has none, 4.x).
 * FREAD indexInterval logStart hw segment... | read...
 *   segment = base@batch+batch... (or base@ for an empty segment), batch = baseOffset/rec,rec...,
 *   rec = offsetDelta:timestamp:keyLen:valueLen (magic 2, no compression, bytes 'x'). Real LogSegments in a
 *   temporary directory, the last one active, under a real LocalLog (kafka_2.13's Scala class in 3.9,
 *   kafka-storage's Java class from 4.0) whose end is the active segment's end. Where the release has a
 *   UnifiedLog that takes a LocalLog (kafka_2.13 in 3.9, kafka-storage from 4.1) the log is that real UnifiedLog
 *   with log start logStart and updateHighWatermark(hw); in 4.0 (UnifiedLog is Scala in kafka_2.13, not on this
 *   classpath) UnifiedLog.read's own three steps are done here as 4.0's kafka/log/UnifiedLog.scala does them.
 *   read = offset:maxBytes:isolation(l|h|c):minOneMessage(0|1), answered
 *   fetchOffset:segmentBase:position:recordsBytes:firstEntryIncomplete:aborted(-|count) or E<exception>:<message>
 *   (message spaces as '_').
 */
public final class KcheckFetch {
    private static final TopicPartition TP = new TopicPartition("t", 0);
    private static String record;
    private static Method builder;
    private static Method appendWithOffset;
    private static Method build;
    private static Method buffer;
    private static Method readable;
    private static Method sizeInBytes;
    private static Method segmentAppend;
    private static Class<?> localLogClass;
    private static Constructor<?> localLogNew;
    private static Method localRead;
    private static Method localConvert;
    private static Constructor<?> unifiedNew;
    private static Method unifiedRead;
    private static Method updateHw;
    private static Class<?> isolationClass;
    private static Constructor<?> fetchParamsNew;
    private static Method isolationOf;
    private static Method isolationLevelForId;

    private KcheckFetch() {
    }

    public static void register(Map<String, KcheckHandler> table) throws ReflectiveOperationException {
        record = "org.apache.kafka.common.record.internal.";
        try {
            Class.forName(record + "MemoryRecords");
        } catch (ClassNotFoundException e) {
            record = "org.apache.kafka.common.record.";
        }
        Class<?> mr = Class.forName(record + "MemoryRecords");
        Class<?> mrb = Class.forName(record + "MemoryRecordsBuilder");
        builder = mr.getMethod("builder", ByteBuffer.class, byte.class, Compression.class, TimestampType.class,
                               long.class);
        appendWithOffset = mrb.getMethod("appendWithOffset", long.class, long.class, byte[].class, byte[].class);
        build = mrb.getMethod("build");
        buffer = mr.getMethod("buffer");
        readable = mr.getMethod("readableRecords", ByteBuffer.class);
        segmentAppend = LogSegment.class.getMethod("append", long.class, mr);
        sizeInBytes = Class.forName(record + "Records").getMethod("sizeInBytes");
        try {
            localLogClass = Class.forName("org.apache.kafka.storage.internals.log.LocalLog");
        } catch (ClassNotFoundException e) {
            localLogClass = Class.forName("kafka.log.LocalLog");  // 3.9: Scala, in kafka_2.13
        }
        for (Constructor<?> c : localLogClass.getConstructors()) if (c.getParameterCount() == 9) localLogNew = c;
        localRead = localLogClass.getMethod("read", long.class, int.class, boolean.class, LogOffsetMetadata.class,
                                            boolean.class);
        localConvert = localLogClass.getMethod("convertToOffsetMetadataOrThrow", long.class);
        findUnifiedLog();
        findFetchParams();
        table.put("EPOCH", KcheckFetch::epoch);
        table.put("FPARAMS", KcheckFetch::fetchParams);
        table.put("FREAD", KcheckFetch::fetchRead);
    }

    private static void findUnifiedLog() throws ReflectiveOperationException {
        for (String name : new String[] {"org.apache.kafka.storage.internals.log.UnifiedLog", "kafka.log.UnifiedLog"}) {
            try {
                Class<?> u = Class.forName(name);
                for (Constructor<?> c : u.getConstructors()) {
                    if (c.getParameterCount() >= 9 && c.getParameterTypes()[1] == localLogClass) unifiedNew = c;
                }
                if (unifiedNew == null) continue;  // 4.0: kafka-storage's UnifiedLog holds static helpers only
                for (Method m : u.getMethods()) {
                    if (m.getName().equals("read") && m.getParameterCount() == 4) unifiedRead = m;
                }
                updateHw = u.getMethod("updateHighWatermark", long.class);
                isolationClass = unifiedRead.getParameterTypes()[2];
                return;
            } catch (ClassNotFoundException e) {
                // next
            }
        }
    }

    private static void findFetchParams() throws ReflectiveOperationException {
        Class<?> fp;
        try {
            fp = Class.forName("org.apache.kafka.server.storage.log.FetchParams");
        } catch (ClassNotFoundException e) {
            fp = Class.forName("org.apache.kafka.storage.internals.log.FetchParams");  // 3.9
        }
        for (Constructor<?> c : fp.getConstructors()) {
            if (fetchParamsNew == null || c.getParameterCount() < fetchParamsNew.getParameterCount()) fetchParamsNew = c;
        }
        Class<?> iso = Class.forName(fp.getPackageName() + ".FetchIsolation");
        if (isolationClass == null) isolationClass = iso;
        Class<?> level = Class.forName("org.apache.kafka.common.IsolationLevel");
        isolationOf = iso.getMethod("of", int.class, level);
        isolationLevelForId = level.getMethod("forId", byte.class);
    }

    private static Object invoke(Method m, Object target, Object... args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static File tempDir(String prefix) throws Exception {
        File shm = new File("/dev/shm");
        return (shm.isDirectory() && shm.canWrite() ? Files.createTempDirectory(shm.toPath(), prefix)
                : Files.createTempDirectory(prefix)).toFile();
    }

    private static void deleteTree(File dir) {
        File[] files = dir.listFiles();
        if (files != null) {
            for (File f : files) {
                if (f.isDirectory()) deleteTree(f);
                else f.delete();
            }
        }
        dir.delete();
    }

    // ------------------------------------------------------------------ EPOCH

    private static String epoch(String[] t) throws Throwable {
        File dir = tempDir("kcheck-epoch");
        try {
            LeaderEpochCheckpointFile file = new LeaderEpochCheckpointFile(new File(dir, "leader-epoch-checkpoint"),
                                                                           new LogDirFailureChannel(1));
            LeaderEpochFileCache cache = new LeaderEpochFileCache(TP, file, new DropScheduler());
            StringBuilder out = new StringBuilder("OK");
            for (int i = 1; i < t.length; i++) {
                char op = t[i].charAt(0);
                String[] a = t[i].substring(1).split(":");
                out.append(' ');
                try {
                    switch (op) {
                        case 'a': cache.assign(Integer.parseInt(a[0]), Long.parseLong(a[1])); break;
                        case 's': cache.truncateFromStartAsyncFlush(Long.parseLong(a[0])); break;
                        case 'e': cache.truncateFromEndAsyncFlush(Long.parseLong(a[0])); break;
                        case 'q': {
                            Map.Entry<Integer, Long> e = cache.endOffsetFor(Integer.parseInt(a[0]), Long.parseLong(a[1]));
                            out.append(e.getKey()).append(':').append(e.getValue());
                            continue;
                        }
                        default: throw new IllegalArgumentException("op " + op);
                    }
                } catch (RuntimeException e) {
                    out.append('E').append(e.getClass().getSimpleName());
                    continue;
                }
                entries(cache, out);
            }
            return out.toString();
        } finally {
            deleteTree(dir);
        }
    }

    private static void entries(LeaderEpochFileCache cache, StringBuilder out) throws ReflectiveOperationException {
        List<?> es = cache.epochEntries();
        if (es.isEmpty()) out.append('~');
        for (int i = 0; i < es.size(); i++) {
            if (i > 0) out.append(',');
            out.append(num(es.get(i), "epoch")).append(':').append(num(es.get(i), "startOffset"));
        }
    }

    private static Object num(Object o, String name) throws ReflectiveOperationException {
        try {
            return o.getClass().getField(name).get(o);
        } catch (NoSuchFieldException e) {
            return o.getClass().getMethod(name).invoke(o);  // a record from 4.3
        }
    }

    // ------------------------------------------------------------------ FPARAMS

    private static String fetchParams(String[] t) throws Throwable {
        StringBuilder out = new StringBuilder("OK");
        for (int i = 1; i + 3 < t.length; i += 4) {
            short version = Short.parseShort(t[i]);
            int replicaId = Integer.parseInt(t[i + 1]);
            Object level = invoke(isolationLevelForId, null, Byte.parseByte(t[i + 2]));
            Object isolation = invoke(isolationOf, null, replicaId, level);
            Optional<?> client = t[i + 3].equals("1") ? Optional.of(clientMetadata()) : Optional.empty();
            Object p = newFetchParams(version, replicaId, isolation, client);
            Class<?> c = p.getClass();
            out.append(' ').append(isolation).append(':').append(c.getMethod("isFromFollower").invoke(p))
               .append(':').append(c.getMethod("isFromConsumer").invoke(p)).append(':')
               .append(c.getMethod("fetchOnlyLeader").invoke(p)).append(':');
            try {
                out.append(c.getMethod("hardMaxBytesLimit").invoke(p));
            } catch (NoSuchMethodException e) {
                out.append('-');  // 4.x: only Fetch v3 and later exist
            }
        }
        return out.toString();
    }

    private static Object clientMetadata() throws ReflectiveOperationException {
        Class<?> d = Class.forName("org.apache.kafka.common.replica.ClientMetadata$DefaultClientMetadata");
        Class<?> principal = Class.forName("org.apache.kafka.common.security.auth.KafkaPrincipal");
        Object anon = principal.getField("ANONYMOUS").get(null);
        return d.getConstructors()[0].newInstance("rack", "client", java.net.InetAddress.getLoopbackAddress(), anon,
                                                  "PLAINTEXT");
    }

    /** The smallest constructor: (version,) replicaId, replicaEpoch, maxWait, minBytes, maxBytes, isolation, client. */
    private static Object newFetchParams(short version, int replicaId, Object isolation, Optional<?> client)
            throws Throwable {
        Class<?>[] types = fetchParamsNew.getParameterTypes();
        Object[] args = new Object[types.length];
        int i = 0;
        if (types[0] == short.class) args[i++] = version;
        args[i++] = replicaId;
        args[i++] = 0L;
        args[i++] = 500L;
        args[i++] = 1;
        args[i++] = 1 << 20;
        args[i++] = isolation;
        args[i++] = client;
        for (; i < types.length; i++) args[i] = types[i] == boolean.class ? false : null;
        try {
            return fetchParamsNew.newInstance(args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    // ------------------------------------------------------------------ FREAD

    /** A log built for one request, read, then deleted. */
    private static final class Built {
        File dir;
        LogSegments segments;
        Object local;
        Object unified;
        long logStart;
        LogOffsetMetadata hwMeta;
    }

    private static String fetchRead(String[] t) throws Throwable {
        int bar = Arrays.asList(t).indexOf("|");
        Built b = build(t, bar);
        try {
            StringBuilder out = new StringBuilder("OK");
            for (int i = bar + 1; i < t.length; i++) {
                String[] r = t[i].split(":");
                out.append(' ').append(read(b, Long.parseLong(r[0]), Integer.parseInt(r[1]), r[2].charAt(0),
                                            r[3].equals("1")));
            }
            return out.toString();
        } finally {
            b.segments.close();
            deleteTree(b.dir);
        }
    }

    private static Built build(String[] t, int bar) throws Throwable {
        Built b = new Built();
        int indexInterval = Integer.parseInt(t[1]);
        b.logStart = Long.parseLong(t[2]);
        long hw = Long.parseLong(t[3]);
        Map<String, Object> props = new HashMap<>();
        props.put("index.interval.bytes", Integer.toString(indexInterval));
        props.put("segment.index.bytes", "4096");
        LogConfig config = new LogConfig(props);
        KcheckClock clock = new KcheckClock();
        b.dir = new File(tempDir("kcheck-fetch"), "t-0");
        b.dir.mkdirs();
        b.segments = new LogSegments(TP);
        long end = 0;
        LogSegment last = null;
        for (int i = 4; i < bar; i++) {
            String spec = t[i];
            int at = spec.indexOf('@');
            long base = Long.parseLong(spec.substring(0, at));
            if (last != null) last.onBecomeInactiveSegment();
            last = LogSegment.open(b.dir, base, config, clock, 0, false);
            b.segments.add(last);
            end = base;
            String batches = spec.substring(at + 1);
            if (batches.isEmpty()) continue;
            for (String batch : batches.split("\\+")) {
                long[] lastOffset = new long[1];
                Object records = batch(batch, lastOffset);
                invoke(segmentAppend, last, lastOffset[0], records);
                end = lastOffset[0] + 1;
            }
        }
        LogOffsetMetadata leo = new LogOffsetMetadata(end, last.baseOffset(), last.size());
        b.local = localLogNew.newInstance(b.dir, config, b.segments, 0L, leo, new DropScheduler(), clock, TP,
                                          new LogDirFailureChannel(1));
        if (unifiedNew != null) {
            b.unified = newUnified(b, clock);
            invoke(updateHw, b.unified, hw);
        } else {
            b.hwMeta = hw >= end ? leo : maybeConvert(b, hw);  // 4.0's UnifiedLog.updateHighWatermark and fetch
        }
        return b;
    }

    private static Object newUnified(Built b, KcheckClock clock) throws Throwable {
        Class<?>[] types = unifiedNew.getParameterTypes();
        Object[] args = new Object[types.length];
        File epochFile = new File(b.dir, "leader-epoch-checkpoint");
        LeaderEpochFileCache cache = new LeaderEpochFileCache(TP,
            new LeaderEpochCheckpointFile(epochFile, new LogDirFailureChannel(1)), new DropScheduler());
        ProducerStateManager psm = new ProducerStateManager(TP, b.dir, 60000,
            new ProducerStateManagerConfig(86400000, false), clock);
        for (int i = 0; i < types.length; i++) {
            Class<?> c = types[i];
            if (i == 0) args[i] = b.logStart;
            else if (c == localLogClass) args[i] = b.local;
            else if (c == int.class) args[i] = 600000;
            else if (c == boolean.class) args[i] = false;
            else if (c == LeaderEpochFileCache.class) args[i] = cache;
            else if (c == ProducerStateManager.class) args[i] = psm;
            else if (c == Optional.class) args[i] = Optional.empty();
            else if (c.getName().equals("scala.Option")) args[i] = Class.forName("scala.Some").getConstructor(Object.class)
                .newInstance(cache);
            else if (c.getSimpleName().equals("BrokerTopicStats")) args[i] = KcheckStats.newBrokerTopicStats(c);
            else if (c.getSimpleName().equals("LogOffsetsListener")) args[i] = c.getField("NO_OP_OFFSETS_LISTENER").get(null);
            else throw new IllegalStateException("UnifiedLog parameter " + c);
        }
        // 3.9's Option[Uuid] is the 7th parameter: None, not Some(cache)
        for (int i = 0; i < types.length; i++) {
            if (types[i].getName().equals("scala.Option") && i == 6) args[i] = Class.forName("scala.None$").getField("MODULE$").get(null);
        }
        try {
            return unifiedNew.newInstance(args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** UnifiedLog.maybeConvertToOffsetMetadata: the offset's position, or the offset alone when out of range. */
    private static LogOffsetMetadata maybeConvert(Built b, long offset) throws Throwable {
        try {
            return (LogOffsetMetadata) invoke(localConvert, b.local, offset);
        } catch (OffsetOutOfRangeException e) {
            return new LogOffsetMetadata(offset);
        }
    }

    private static Object batch(String spec, long[] lastOffset) throws Throwable {
        int slash = spec.indexOf('/');
        long base = Long.parseLong(spec.substring(0, slash));
        String[] recs = spec.substring(slash + 1).split(",");
        int cap = 128;
        for (String r : recs) {
            String[] f = r.split(":");
            cap += 64 + Math.max(0, Integer.parseInt(f[2])) + Math.max(0, Integer.parseInt(f[3]));
        }
        Object mb = invoke(builder, null, ByteBuffer.allocate(cap), (byte) 2, Compression.NONE,
                           TimestampType.CREATE_TIME, base);
        long last = base;
        for (String r : recs) {
            String[] f = r.split(":");
            long offset = base + Long.parseLong(f[0]);
            invoke(appendWithOffset, mb, offset, Long.parseLong(f[1]), bytes(Integer.parseInt(f[2])),
                   bytes(Integer.parseInt(f[3])));
            last = Math.max(last, offset);
        }
        lastOffset[0] = last;
        ByteBuffer bb = (ByteBuffer) invoke(buffer, invoke(build, mb));
        return invoke(readable, null, bb);
    }

    private static byte[] bytes(int n) {
        if (n < 0) return null;
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) 'x');
        return b;
    }

    private static String read(Built b, long offset, int maxBytes, char iso, boolean minOne) throws Throwable {
        FetchDataInfo info;
        try {
            if (b.unified != null) {
                String name = iso == 'l' ? "LOG_END" : iso == 'h' ? "HIGH_WATERMARK" : "TXN_COMMITTED";
                Object isolation = isolationClass.getField(name).get(null);
                info = (FetchDataInfo) invoke(unifiedRead, b.unified, offset, maxBytes, isolation, minOne);
            } else {
                info = read40(b, offset, maxBytes, iso, minOne);
            }
        } catch (RuntimeException e) {
            return "E" + e.getClass().getSimpleName() + ":" + String.valueOf(e.getMessage()).replace(' ', '_');
        }
        LogOffsetMetadata m = info.fetchOffsetMetadata;
        String aborted = info.abortedTransactions.isPresent() ? Integer.toString(info.abortedTransactions.get().size())
                                                              : "-";
        return m.messageOffset + ":" + m.segmentBaseOffset + ":" + m.relativePositionInSegment + ":"
            + invoke(sizeInBytes, info.records) + ":" + (info.firstEntryIncomplete ? 1 : 0) + ":" + aborted;
    }

    /** 4.0's UnifiedLog.read (kafka/log/UnifiedLog.scala): checkLogStartOffset, the bound's metadata (with no
     * transaction open the last stable offset is the high watermark), then LocalLog.read. */
    private static FetchDataInfo read40(Built b, long offset, int maxBytes, char iso, boolean minOne) throws Throwable {
        if (offset < b.logStart) {
            throw new OffsetOutOfRangeException("Received request for offset " + offset + " for partition " + TP
                + ", but we only have log segments starting from offset: " + b.logStart + ".");
        }
        Method leoMeta = localLogClass.getMethod("logEndOffsetMetadata");
        LogOffsetMetadata max = iso == 'l' ? (LogOffsetMetadata) invoke(leoMeta, b.local) : b.hwMeta;
        return (FetchDataInfo) invoke(localRead, b.local, offset, maxBytes, minOne, max, iso == 'c');
    }

    /** Drops every task: the epoch cache's asynchronous flushes never run (the files are thrown away). */
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
}
