import java.io.File;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.storage.internals.log.AbstractIndex;
import org.apache.kafka.storage.internals.log.IndexEntry;
import org.apache.kafka.storage.internals.log.LazyIndex;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.OffsetIndex;
import org.apache.kafka.storage.internals.log.OffsetPosition;
import org.apache.kafka.storage.internals.log.RollParams;
import org.apache.kafka.storage.internals.log.TimeIndex;
import org.apache.kafka.storage.internals.log.TransactionIndex;

/**
 * Log segments and their indexes (kafka-storage: LogSegment, OffsetIndex, TimeIndex), driven in a
 * temporary directory. The record classes moved to org.apache.kafka.common.record.internal in 4.4,
 * so MemoryRecords, FileRecords and the LogSegment calls taking them are reached by reflection.
 *
 * SEG_LOG segmentBytes segmentMs jitterMs indexIntervalBytes maxIndexSize createdMs queries append...
 *     A log of real LogSegments (base 0, created at createdMs, roll jitter jitterMs). For each append
 *     the clock is set to its time; then, as UnifiedLog.append does: records larger than segmentBytes
 *     fail (RecordBatchTooLargeException); the active segment's shouldRoll(RollParams) decides a roll
 *     to max(first offset of the append, log end offset) as LocalLog.roll does (the old active segment
 *     gets onBecomeInactiveSegment; an empty active segment at that very offset is replaced, KAFKA-6388);
 *     then LogSegment.append(last offset, records). The first append that throws stops the log.
 *     append  = nowMs@batch[+batch]...    batch = baseOffset/rec[,rec]...  (magic 2, no compression)
 *     rec     = offsetDelta:timestamp:keyLen:valueLen   (-1 length = null key or value; bytes are 'x')
 *     queries = '~' or offsets, comma separated: after the appends, the segment with the greatest base
 *               offset at or below each one answers offsetIndex().lookup and translateOffset.
 *     Answer: OK status segment... | query...
 *       status  = '-' or failedAppendIndex:ExceptionSimpleName
 *       segment = base/logBytes/offsetIndexFileBytes/timeIndexFileBytes/offsetEntries/timeEntries
 *                 (entries '~' or o:p,o:p... and t:o,t:o...)
 *       query   = segBase:indexOffset:indexPosition:foundOffset:foundPosition:foundSize, or segBase:none
 * OFFSET_INDEX baseOffset maxIndexSize op...   a real OffsetIndex; op answers, in order:
 *     aOFFSET:POS append -> ok | Exception;  lTARGET lookup -> o:p;  tOFFSET truncateTo -> ok;
 *     uPOS:SIZE fetchUpperBoundOffset -> o:p | none;  f isFull -> 0|1;  e entries;  m maxEntries;
 *     r trimToValidSize -> file length
 * TIME_INDEX baseOffset maxIndexSize op...     a real TimeIndex; op:
 *     aTS:OFFSET maybeAppend, aTS:OFFSET:s with skipFullCheck -> ok | Exception;  lTS lookup -> t:o;
 *     tOFFSET truncateTo -> ok;  f isFull;  e entries;  m maxEntries;  x lastEntry -> t:o;  r trimToValidSize
 */
public final class KcheckStorageSegments {
    private static final String RECORD;
    private static Method builder;
    private static Method appendWithOffset;
    private static Method build;
    private static Method sizeInBytes;
    private static Method buffer;
    private static Method readable;
    private static Method openFileRecords;
    private static Constructor<?> newSegment;
    private static Method segmentAppend;
    private static Field lopOffset;
    private static Field lopPosition;
    private static Field lopSize;

    static {
        String p = "org.apache.kafka.common.record.internal.";
        try {
            Class.forName(p + "MemoryRecords");
        } catch (ClassNotFoundException e) {
            p = "org.apache.kafka.common.record.";
        }
        RECORD = p;
    }

    private KcheckStorageSegments() {
    }

    public static void register(Map<String, KcheckHandler> table) throws ReflectiveOperationException {
        Class<?> mr = Class.forName(RECORD + "MemoryRecords");
        Class<?> mrb = Class.forName(RECORD + "MemoryRecordsBuilder");
        Class<?> fr = Class.forName(RECORD + "FileRecords");
        builder = mr.getMethod("builder", ByteBuffer.class, byte.class, Compression.class, TimestampType.class,
                               long.class);
        appendWithOffset = mrb.getMethod("appendWithOffset", long.class, long.class, byte[].class, byte[].class);
        build = mrb.getMethod("build");
        sizeInBytes = mr.getMethod("sizeInBytes");
        buffer = mr.getMethod("buffer");
        readable = mr.getMethod("readableRecords", ByteBuffer.class);
        openFileRecords = fr.getMethod("open", File.class, boolean.class, int.class, boolean.class);
        newSegment = LogSegment.class.getConstructor(fr, LazyIndex.class, LazyIndex.class, TransactionIndex.class,
                                                     long.class, int.class, long.class, Time.class);
        segmentAppend = LogSegment.class.getMethod("append", long.class, mr);
        Class<?> lop = Class.forName(RECORD + "FileRecords$LogOffsetPosition");
        lopOffset = lop.getField("offset");
        lopPosition = lop.getField("position");
        lopSize = lop.getField("size");
        table.put("SEG_LOG", KcheckStorageSegments::segLog);
        table.put("OFFSET_INDEX", KcheckStorageSegments::offsetIndex);
        table.put("TIME_INDEX", KcheckStorageSegments::timeIndex);
    }


    private static Object invoke(Method m, Object target, Object... args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static File tempDir() throws IOException {
        File shm = new File("/dev/shm");
        if (shm.isDirectory() && shm.canWrite()) return Files.createTempDirectory(shm.toPath(), "kcheck-seg").toFile();
        return Files.createTempDirectory("kcheck-seg").toFile();
    }

    private static void deleteTree(File dir) {
        File[] files = dir.listFiles();
        if (files != null) for (File f : files) f.delete();
        dir.delete();
    }

    private static String name(long offset, String suffix) {
        return String.format("%020d", offset) + suffix;
    }

    private static LogSegment open(File dir, long base, int indexInterval, long jitter, int maxIndexSize, Time time)
            throws Throwable {
        File log = new File(dir, name(base, ".log"));
        Object records = invoke(openFileRecords, null, log, false, 0, false);
        try {
            return (LogSegment) newSegment.newInstance(records,
                LazyIndex.forOffset(new File(dir, name(base, ".index")), base, maxIndexSize),
                LazyIndex.forTime(new File(dir, name(base, ".timeindex")), base, maxIndexSize),
                new TransactionIndex(base, new File(dir, name(base, ".txnindex"))),
                base, indexInterval, jitter, time);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** One append's batches as a single MemoryRecords; also returns its first and last offsets and max timestamp. */
    private static Object records(String spec, long[] info) throws Throwable {
        List<ByteBuffer> parts = new ArrayList<>();
        int total = 0;
        long first = Long.MAX_VALUE;
        long last = -1;
        long maxTs = -1;
        for (String b : spec.split("\\+")) {
            int slash = b.indexOf('/');
            long base = Long.parseLong(b.substring(0, slash));
            String[] recs = b.substring(slash + 1).split(",");
            int cap = 128;
            for (String r : recs) {
                String[] f = r.split(":");
                cap += 64 + Math.max(0, Integer.parseInt(f[2])) + Math.max(0, Integer.parseInt(f[3]));
            }
            Object mb = invoke(builder, null, ByteBuffer.allocate(cap), (byte) 2, Compression.NONE,
                               TimestampType.CREATE_TIME, base);
            for (String r : recs) {
                String[] f = r.split(":");
                long offset = base + Long.parseLong(f[0]);
                long ts = Long.parseLong(f[1]);
                invoke(appendWithOffset, mb, offset, ts, bytes(Integer.parseInt(f[2])), bytes(Integer.parseInt(f[3])));
                first = Math.min(first, offset);
                last = Math.max(last, offset);
                maxTs = Math.max(maxTs, ts);
            }
            Object built = invoke(build, mb);
            ByteBuffer bb = (ByteBuffer) invoke(buffer, built);
            parts.add(bb);
            total += bb.remaining();
        }
        ByteBuffer all = ByteBuffer.allocate(total);
        for (ByteBuffer bb : parts) all.put(bb.duplicate());
        all.flip();
        info[0] = first;
        info[1] = last;
        info[2] = maxTs;
        return invoke(readable, null, all);
    }

    private static byte[] bytes(int n) {
        if (n < 0) return null;
        byte[] b = new byte[n];
        java.util.Arrays.fill(b, (byte) 'x');
        return b;
    }

    private static String segLog(String[] t) throws Throwable {
        int segmentBytes = Integer.parseInt(t[1]);
        long segmentMs = Long.parseLong(t[2]);
        long jitter = Long.parseLong(t[3]);
        int indexInterval = Integer.parseInt(t[4]);
        int maxIndexSize = Integer.parseInt(t[5]);
        KcheckClock clock = new KcheckClock();
        clock.now = Long.parseLong(t[6]);
        File dir = tempDir();
        List<LogSegment> segments = new ArrayList<>();
        StringBuilder out = new StringBuilder("OK ");
        try {
            segments.add(open(dir, 0L, indexInterval, jitter, maxIndexSize, clock));
            long logEnd = 0L;
            String status = "-";
            for (int i = 8; i < t.length; i++) {
                int at = t[i].indexOf('@');
                clock.now = Long.parseLong(t[i].substring(0, at));
                try {
                    long[] info = new long[3];
                    Object records = records(t[i].substring(at + 1), info);
                    int size = (Integer) invoke(sizeInBytes, records);
                    KcheckTimer.begin();  // the log's own work from here: roll and append (not building the batch)
                    if (size > segmentBytes) throw new org.apache.kafka.common.errors.RecordBatchTooLargeException(
                        "records of " + size + " bytes exceed segment.bytes " + segmentBytes);
                    LogSegment active = segments.get(segments.size() - 1);
                    if (active.shouldRoll(new RollParams(segmentMs, segmentBytes, info[2], info[1], size, clock.now))) {
                        long newOffset = Math.max(info[0], logEnd);
                        if (newOffset == active.baseOffset() && active.size() == 0) {
                            active.close();
                            deleteFiles(dir, newOffset);
                            segments.set(segments.size() - 1,
                                         open(dir, newOffset, indexInterval, jitter, maxIndexSize, clock));
                        } else if (newOffset <= active.baseOffset()) {
                            throw new org.apache.kafka.common.KafkaException("roll to " + newOffset + " at or below active segment "
                                                            + active.baseOffset());
                        } else {
                            active.onBecomeInactiveSegment();
                            segments.add(open(dir, newOffset, indexInterval, jitter, maxIndexSize, clock));
                        }
                    }
                    invoke(segmentAppend, segments.get(segments.size() - 1), info[1], records);
                    logEnd = info[1] + 1;
                    KcheckTimer.end();
                } catch (Throwable e) {
                    if (e instanceof Error) throw e;
                    status = (i - 8) + ":" + e.getClass().getSimpleName();
                    break;
                }
            }
            out.append(status);
            for (LogSegment s : segments) {
                OffsetIndex oi = s.offsetIndex();
                TimeIndex ti = s.timeIndex();
                out.append(' ').append(s.baseOffset()).append('/').append(s.size()).append('/')
                   .append(oi.length()).append('/').append(ti.length()).append('/');
                entries(out, oi.entries(), oi::entry);
                out.append('/');
                entries(out, ti.entries(), ti::entry);
            }
            out.append(" |");
            if (!t[7].equals("~")) {
                for (String q : t[7].split(",")) {
                    long target = Long.parseLong(q);
                    LogSegment seg = segments.get(0);
                    for (LogSegment s : segments) if (s.baseOffset() <= target) seg = s;
                    IndexEntry e = seg.offsetIndex().lookup(target);
                    Object found = seg.translateOffset(target);
                    out.append(' ').append(seg.baseOffset()).append(':');
                    out.append(e.indexKey()).append(':').append(e.indexValue()).append(':');
                    if (found == null) out.append("none");
                    else out.append(lopOffset.getLong(found)).append(':').append(lopPosition.getInt(found))
                            .append(':').append(lopSize.getInt(found));
                }
            }
        } finally {
            for (LogSegment s : segments) {
                try {
                    s.close();
                } catch (IOException | RuntimeException e) {
                    // the files go with the directory anyway
                }
            }
            deleteTree(dir);
        }
        return out.toString();
    }

    private static void deleteFiles(File dir, long base) {
        for (String suffix : new String[] {".log", ".index", ".timeindex", ".txnindex"}) {
            new File(dir, name(base, suffix)).delete();
        }
    }

    private interface EntryAt {
        IndexEntry at(int n);
    }

    private static void entries(StringBuilder out, int n, EntryAt at) {
        if (n == 0) {
            out.append('~');
            return;
        }
        for (int i = 0; i < n; i++) {
            if (i > 0) out.append(',');
            IndexEntry e = at.at(i);
            out.append(e.indexKey()).append(':').append(e.indexValue());
        }
    }

    /** What one index kind adds to AbstractIndex's own ops: its append, its lookup and the ops only it has. */
    private abstract static class IndexDriver<I extends AbstractIndex> {
        final I idx;

        IndexDriver(I idx) {
            this.idx = idx;
        }

        abstract void append(String[] fields);

        abstract IndexEntry lookup(long target);

        /** An op only this index kind has: answers it and returns true, or returns false. */
        boolean extra(char op, String arg, StringBuilder out) throws ReflectiveOperationException {
            return false;
        }
    }

    private interface IndexOpener {
        IndexDriver<?> open(File dir, long base, int maxIndexSize) throws IOException;
    }

    private static void entry(StringBuilder out, IndexEntry e) {
        out.append(e.indexKey()).append(':').append(e.indexValue());
    }

    /** The op loop both index words share: t = WORD baseOffset maxIndexSize op... (see the class comment). */
    private static String runIndex(String[] t, IndexOpener opener) throws IOException {
        long base = Long.parseLong(t[1]);
        int maxIndexSize = Integer.parseInt(t[2]);
        File dir = tempDir();
        StringBuilder out = new StringBuilder("OK");
        AbstractIndex idx = null;
        try {
            IndexDriver<?> d = opener.open(dir, base, maxIndexSize);
            idx = d.idx;
            for (int i = 3; i < t.length; i++) {
                String op = t[i];
                String arg = op.substring(1);
                out.append(' ');
                try {
                    switch (op.charAt(0)) {
                        case 'a':
                            d.append(arg.split(":"));
                            out.append("ok");
                            break;
                        case 'l':
                            entry(out, d.lookup(Long.parseLong(arg)));
                            break;
                        case 't':
                            idx.truncateTo(Long.parseLong(arg));
                            out.append("ok");
                            break;
                        case 'f':
                            out.append(idx.isFull() ? 1 : 0);
                            break;
                        case 'e':
                            out.append(idx.entries());
                            break;
                        case 'm':
                            out.append(idx.maxEntries());
                            break;
                        case 'r':
                            idx.trimToValidSize();
                            out.append(idx.length());
                            break;
                        default:
                            if (!d.extra(op.charAt(0), arg, out)) throw new IllegalArgumentException("unknown op " + op);
                    }
                } catch (RuntimeException | ReflectiveOperationException e) {
                    out.append(e.getClass().getSimpleName());
                }
            }
        } catch (IllegalArgumentException e) {
            out.setLength(0);
            out.append("OK !").append(e.getClass().getSimpleName());
        } finally {
            closeQuietly(idx);
            deleteTree(dir);
        }
        return out.toString();
    }

    private static String offsetIndex(String[] t) throws IOException {
        return runIndex(t, (dir, base, max) -> new IndexDriver<OffsetIndex>(
                new OffsetIndex(new File(dir, name(base, ".index")), base, max)) {
            @Override
            void append(String[] f) {
                idx.append(Long.parseLong(f[0]), Integer.parseInt(f[1]));
            }

            @Override
            IndexEntry lookup(long target) {
                return idx.lookup(target);
            }

            @Override
            boolean extra(char op, String arg, StringBuilder out) throws ReflectiveOperationException {
                if (op != 'u') return false;
                String[] f = arg.split(":");
                java.util.Optional<?> up = idx.fetchUpperBoundOffset(
                    positionAt(idx.lookup(0L), Integer.parseInt(f[0])), Integer.parseInt(f[1]));
                if (up.isPresent()) entry(out, (IndexEntry) up.get());
                else out.append("none");
                return true;
            }
        });
    }

    /** Closing trims the file, which throws when a failed append left the buffer past the entries. */
    private static void closeQuietly(java.io.Closeable c) {
        if (c == null) return;
        try {
            c.close();
        } catch (IOException | RuntimeException e) {
            // the directory is deleted anyway
        }
    }

    /** An OffsetPosition at `position` (the class became a record in 4.4: use its canonical constructor). */
    private static OffsetPosition positionAt(IndexEntry like, int position) throws ReflectiveOperationException {
        return (OffsetPosition) like.getClass().getConstructor(long.class, int.class).newInstance(0L, position);
    }

    private static String timeIndex(String[] t) throws IOException {
        return runIndex(t, (dir, base, max) -> new IndexDriver<TimeIndex>(
                new TimeIndex(new File(dir, name(base, ".timeindex")), base, max)) {
            @Override
            void append(String[] f) {
                idx.maybeAppend(Long.parseLong(f[0]), Long.parseLong(f[1]), f.length > 2);
            }

            @Override
            IndexEntry lookup(long target) {
                return idx.lookup(target);
            }

            @Override
            boolean extra(char op, String arg, StringBuilder out) {
                if (op != 'x') return false;
                entry(out, idx.lastEntry());
                return true;
            }
        });
    }
}
