import java.io.File;
import java.lang.reflect.Array;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.CompletedTxn;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogOffsetMetadata;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.LogSegments;
import org.apache.kafka.storage.internals.log.ProducerAppendInfo;
import org.apache.kafka.storage.internals.log.ProducerStateEntry;
import org.apache.kafka.storage.internals.log.ProducerStateManager;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.VerificationStateEntry;

/**
 * The idempotent producer's state on a leader (kafka-storage: ProducerStateManager, ProducerAppendInfo,
 * ProducerStateEntry, VerificationStateEntry), driven step by step on a real ProducerStateManager in a temporary
 * directory beside real LogSegments, as UnifiedLog drives them (reference/producer_state.py says which code each
 * step mirrors). Truncation runs Kafka's own UnifiedLog.rebuildProducerState (kafka-storage's static helper from
 * 4.0, kafka_2.13's kafka.log.UnifiedLog object in 3.9). The record classes moved to common.record.internal in 4.4
 * and several methods changed signature or visibility between releases: those are reached by reflection.
 *
 * PSTATE expirationMs clockMs op...
 *   aPID:EPOCH:SEQ:COUNT:TXN:TS   a client's batch of COUNT records (TXN 0|1) at the log end (origin CLIENT):
 *                                 the duplicate check, ProducerAppendInfo.append, then the log append
 *   mPID:EPOCH:COORD:COMMIT:TV:TS an end-transaction marker (origin COORDINATOR, transaction version TV)
 *   vPID:SEQ:EPOCH:BUMP           ProducerStateManager.maybeCreateVerificationStateEntry
 *   cNOW                          the clock
 *   x                             removeExpiredProducers(now)
 *   r                             roll: a new segment at the log end, a snapshot there
 *   dK                            delete the K oldest segments (fewer than all): log start moves, their snapshots go
 *   sOFFSET                       the log start moves to OFFSET (DeleteRecords)
 *   tOFFSET                       truncate to OFFSET (a batch boundary at or above the first segment)
 * Answer: OK and per op VERDICT/STATE, where VERDICT is D<first>:<last>:<ts> (a duplicate: the cached batch), A<first>
 * (appended), E<exception simple name>, V<lowest sequence>:<epoch>, or '-'; STATE is
 * mapEnd:oldestSnapshot:latestSnapshot:logStart:logEnd/producers/verification ('~' for none), producers sorted by
 * id as pid,epoch,coordinatorEpoch,lastTimestamp,txnFirstOffset,batches (batches lastSeq:lastOffset:delta:ts joined
 * by '_'), verification entries as pid,lowestSequence,epoch; lists joined by ';'.
 *
 * TXNIDX expirationMs clockMs op...   the same log with its own high watermark (it does not follow the log end), for
 * the last stable offset and the aborted-transaction index. The ops above, the marker's COMMIT now mattering (an
 * ABORT appends an AbortedTxn to the active segment's TransactionIndex), and
 *   hOFFSET                       UnifiedLog.updateHighWatermark(OFFSET): bounded by log start and log end
 *   fSTART:UPPER                  the aborted transactions a read_committed fetch at START collects up to the
 *                                 upper bound UPPER (LocalLog.addAbortedTransactions' walk: LogSegment
 *                                 .collectAbortedTxns from floorSegment(START) on, until a search is complete)
 * UnifiedLog's own steps around the real ProducerStateManager and TransactionIndex are done here as UnifiedLog does
 * them (append: the index entry with lastStableOffset(completedTxn) before completeTxn; the high watermark bounded by
 * the log start and end, following the log end only from at or past it). UnifiedLog's first
 * unstable and last stable offsets are not here: TXNLOG (KcheckTxnLog.java) has a real UnifiedLog give them.
 * Answer: OK and per op VERDICT/STATE, VERDICT as above or F followed by the collected pid,first,last,lso joined by
 * ';' ('F~' for none); STATE is mapEnd:logStart:logEnd:hw/firstUnstable:firstUndecided (the producer state's)/index,
 * the index every segment's base=entries (pid,first,last,lso joined by ';', '~' when none) joined by '|'.
 */
public final class KcheckProducerState {
    private static final TopicPartition TP = new TopicPartition("t", 0);
    private static String record;
    private static Method batches;
    private static Method segmentAppend;
    private static Method findDuplicate;
    private static Method append2;
    private static Method append3;
    private static Method createVerification;
    private static Method rebuild;
    private static Object rebuildTarget;
    private static Object recordVersionV2;

    private KcheckProducerState() {
    }

    public static void register(Map<String, KcheckHandler> table) throws ReflectiveOperationException {
        KcheckTxnLogs.findRecords();  // the record classes and their builders (KcheckTxnLogs keeps them)
        record = KcheckTxnLogs.record;
        Class<?> mr = Class.forName(record + "MemoryRecords");
        Class<?> batch = Class.forName(record + "RecordBatch");
        batches = mr.getMethod("batches");
        segmentAppend = LogSegment.class.getMethod("append", long.class, mr);
        findDuplicate = ProducerStateEntry.class.getDeclaredMethod("findDuplicateBatch", batch);
        findDuplicate.setAccessible(true);
        append2 = ProducerAppendInfo.class.getMethod("append", batch, Optional.class);
        try {
            append3 = ProducerAppendInfo.class.getMethod("append", batch, Optional.class, short.class);
        } catch (NoSuchMethodException e) {
            append3 = null;  // before 4.2: no transaction version
        }
        try {
            createVerification = ProducerStateManager.class.getMethod("maybeCreateVerificationStateEntry",
                long.class, int.class, short.class, boolean.class);
        } catch (NoSuchMethodException e) {
            createVerification = ProducerStateManager.class.getMethod("maybeCreateVerificationStateEntry",
                long.class, int.class, short.class);  // 3.9: no epoch bump
        }
        findRebuild();
        table.put("PSTATE", t -> run(t, false));
        table.put("TXNIDX", t -> run(t, true));
    }

    private static void findRebuild() throws ReflectiveOperationException {
        try {
            Class<?> u = Class.forName("org.apache.kafka.storage.internals.log.UnifiedLog");
            rebuild = u.getMethod("rebuildProducerState", ProducerStateManager.class, LogSegments.class, long.class,
                                  long.class, Time.class, boolean.class, String.class);
            rebuildTarget = null;
        } catch (ReflectiveOperationException e) {
            Class<?> scala = Class.forName("kafka.log.UnifiedLog$");  // 3.9: the Scala object, with a record version
            Class<?> rv = Class.forName("org.apache.kafka.common.record.RecordVersion");
            rebuild = scala.getMethod("rebuildProducerState", ProducerStateManager.class, LogSegments.class,
                                      long.class, long.class, rv, Time.class, boolean.class, String.class);
            rebuildTarget = scala.getField("MODULE$").get(null);
            recordVersionV2 = rv.getField("V2").get(null);
        }
    }

    private static Object invoke(Method m, Object target, Object... args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** The state of one request: the log, its segments and the producer state. */
    private static final class Log {
        final KcheckClock clock = new KcheckClock();
        final File dir;
        final LogConfig config = new LogConfig(new HashMap<>());
        final LogSegments segments = new LogSegments(TP);
        final ProducerStateManager psm;
        final TreeSet<Long> verified = new TreeSet<>();
        long logStart;
        long logEnd;
        final boolean txnIndex;  // TXNIDX: the high watermark is its own; PSTATE: it follows the log end
        long hw;

        Log(int expirationMs, long now, boolean txnIndex) throws Exception {
            this.txnIndex = txnIndex;
            clock.now = now;
            File shm = new File("/dev/shm");
            dir = (shm.isDirectory() && shm.canWrite() ? Files.createTempDirectory(shm.toPath(), "kcheck-pst")
                   : Files.createTempDirectory("kcheck-pst")).toFile();
            psm = new ProducerStateManager(TP, dir, 60000, new ProducerStateManagerConfig(expirationMs, false), clock);
            segments.add(LogSegment.open(dir, 0L, config, clock, 0, false));
        }
    }

    private static String run(String[] t, boolean txnIndex) throws Throwable {
        Log log = new Log(Integer.parseInt(t[1]), Long.parseLong(t[2]), txnIndex);
        StringBuilder out = new StringBuilder("OK");
        try {
            for (int i = 3; i < t.length; i++) {
                String op = t[i];
                out.append(' ').append(step(log, op.charAt(0), op.substring(1))).append('/');
                if (txnIndex) txnState(log, out);
                else state(log, out);
            }
        } finally {
            log.segments.close();
            File[] files = log.dir.listFiles();
            if (files != null) for (File f : files) f.delete();
            log.dir.delete();
        }
        return out.toString();
    }

    private static String step(Log log, char op, String args) throws Throwable {
        String[] a = args.isEmpty() ? new String[0] : args.split(":");
        switch (op) {
            case 'a': return appendData(log, a);
            case 'm': return appendMarker(log, a);
            case 'v': {
                long pid = Long.parseLong(a[0]);
                int seq = Integer.parseInt(a[1]);
                short epoch = Short.parseShort(a[2]);
                VerificationStateEntry v = (VerificationStateEntry) (createVerification.getParameterCount() == 4
                    ? invoke(createVerification, log.psm, pid, seq, epoch, a[3].equals("1"))
                    : invoke(createVerification, log.psm, pid, seq, epoch));
                log.verified.add(pid);
                return "V" + v.lowestSequence() + ":" + v.epoch();
            }
            case 'c': log.clock.now = Long.parseLong(a[0]); return "-";
            case 'x': log.psm.removeExpiredProducers(log.clock.now); return "-";
            case 'r': roll(log); return "-";
            case 'd': deleteSegments(log, Integer.parseInt(a[0])); return "-";
            case 's': incrementLogStart(log, Long.parseLong(a[0])); return "-";
            case 't': truncate(log, Long.parseLong(a[0])); return "-";
            case 'h': updateHighWatermark(log, Long.parseLong(a[0])); return "-";
            case 'f': return collect(log, Long.parseLong(a[0]), Long.parseLong(a[1]));
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    /** UnifiedLog.append for a client's batch: the duplicate check, then analyzeAndValidateProducerState's update. */
    private static String appendData(Log log, String[] a) throws Throwable {
        long pid = Long.parseLong(a[0]);
        short epoch = Short.parseShort(a[1]);
        int seq = Integer.parseInt(a[2]);
        int count = Integer.parseInt(a[3]);
        boolean txn = a[4].equals("1");
        long ts = Long.parseLong(a[5]);
        Object records = dataRecords(log.logEnd, pid, epoch, seq, count, txn, ts);
        Object batch = ((Iterable<?>) invoke(batches, records)).iterator().next();
        long first = log.logEnd;
        if (pid < 0) {
            write(log, records, first + count - 1, null, Optional.empty());
            return "A" + first;
        }
        Optional<ProducerStateEntry> entry = log.psm.lastEntry(pid);
        if (entry.isPresent()) {
            Optional<?> dup = (Optional<?>) invoke(findDuplicate, entry.get(), batch);
            if (dup.isPresent()) {
                Object m = dup.get();
                return "D" + m.getClass().getMethod("firstOffset").invoke(m) + ":" + num(m, "lastOffset") + ":"
                    + num(m, "timestamp");
            }
        }
        ProducerAppendInfo info = log.psm.prepareUpdate(pid, AppendOrigin.CLIENT);
        Optional<?> firstMeta = txn ? Optional.of(new LogOffsetMetadata(first)) : Optional.empty();
        try {
            invoke(append2, info, batch, firstMeta);
        } catch (RuntimeException e) {
            return "E" + e.getClass().getSimpleName();
        }
        afterTransactional(log, pid, epoch, txn, false);
        write(log, records, first + count - 1, info, Optional.empty());
        return "A" + first;
    }

    private static String appendMarker(Log log, String[] a) throws Throwable {
        long pid = Long.parseLong(a[0]);
        short epoch = Short.parseShort(a[1]);
        int coordinatorEpoch = Integer.parseInt(a[2]);
        Object marker = KcheckTxnLogs.endMarker.newInstance(a[3].equals("1") ? KcheckTxnLogs.commit : KcheckTxnLogs.abort,
                                                            coordinatorEpoch);
        short tv = Short.parseShort(a[4]);
        long ts = Long.parseLong(a[5]);
        long offset = log.logEnd;
        Object records = invoke(KcheckTxnLogs.withMarker, null, offset, ts, 0, pid, epoch, marker);
        Object batch = ((Iterable<?>) invoke(batches, records)).iterator().next();
        ProducerAppendInfo info = log.psm.prepareUpdate(pid, AppendOrigin.COORDINATOR);
        Optional<?> completed;
        try {
            Optional<?> meta = Optional.of(new LogOffsetMetadata(offset));
            completed = (Optional<?>) (append3 != null ? invoke(append3, info, batch, meta, tv)
                                                       : invoke(append2, info, batch, meta));
        } catch (RuntimeException e) {
            return "E" + e.getClass().getSimpleName();
        }
        afterTransactional(log, pid, epoch, true, true);
        write(log, records, offset, info, completed);
        return "A" + offset;
    }

    /** UnifiedLog.updateProducers' end: a transactional batch drops the verification entry (from 4.0, but a TV2
     * marker of the verified epoch). */
    private static void afterTransactional(Log log, long pid, short epoch, boolean txn, boolean control) {
        if (!txn) return;
        VerificationStateEntry v = log.psm.verificationStateEntry(pid);
        boolean keep = v != null && supportsEpochBump(v) && control && epoch == v.epoch();
        if (!keep) log.psm.clearVerificationStateEntry(pid);
    }

    private static boolean supportsEpochBump(VerificationStateEntry v) {
        try {
            return (Boolean) VerificationStateEntry.class.getMethod("supportsEpochBump").invoke(v);
        } catch (ReflectiveOperationException e) {
            return false;  // 3.9
        }
    }

    /** The rest of UnifiedLog.append once producer state is validated (PSTATE: the high watermark follows the log
     * end). An aborted transaction's index entry carries lastStableOffset(completedTxn), taken before completeTxn. */
    private static void write(Log log, Object records, long lastOffset, ProducerAppendInfo info, Optional<?> completed)
            throws Throwable {
        LogSegment active = log.segments.lastSegment().get();
        invoke(segmentAppend, active, lastOffset, records);
        log.logEnd = lastOffset + 1;
        updateHighWatermarkWithLogEndOffset(log);
        if (info != null) log.psm.update(info);
        if (completed.isPresent()) {
            CompletedTxn txn = (CompletedTxn) completed.get();
            active.updateTxnIndex(txn, log.psm.lastStableOffset(txn));
            log.psm.completeTxn(txn);
        }
        log.psm.updateMapEndOffset(log.logEnd);
        if (!log.txnIndex) updateHighWatermarkMetadata(log, log.logEnd);
    }

    /** UnifiedLog.updateHighWatermarkWithLogEndOffset: only a high watermark at or past the log end follows it. */
    private static void updateHighWatermarkWithLogEndOffset(Log log) {
        if (log.txnIndex && log.hw >= log.logEnd) updateHighWatermarkMetadata(log, log.logEnd);
    }

    /** UnifiedLog.updateHighWatermark: bounded below by the log start and above by the log end. */
    private static void updateHighWatermark(Log log, long offset) {
        updateHighWatermarkMetadata(log, offset < log.logStart ? log.logStart : Math.min(offset, log.logEnd));
    }

    private static void updateHighWatermarkMetadata(Log log, long offset) {
        log.hw = offset;
        log.psm.onHighWatermarkUpdated(offset);
    }

    /** LocalLog.collectAbortedTransactions(startOffset, upperBoundOffset, startingSegment, ...) from
     * floorSegment(START), as LocalLog.addAbortedTransactions calls it for a read_committed fetch. */
    private static String collect(Log log, long start, long upper) throws ReflectiveOperationException {
        StringBuilder out = new StringBuilder("F");
        Optional<LogSegment> floor = log.segments.floorSegment(start);
        if (!floor.isPresent()) return "F~";
        for (LogSegment s : log.segments.values()) {
            if (s.baseOffset() < floor.get().baseOffset()) continue;
            Object r = s.collectAbortedTxns(start, upper);  // fields up to 4.0, a record's accessors after
            for (Object txn : (List<?>) num(r, "abortedTransactions")) {
                aborted(out.length() > 1 ? out.append(';') : out, txn);
            }
            if ((Boolean) num(r, "isComplete")) break;
        }
        return out.length() > 1 ? out.toString() : "F~";
    }

    private static void aborted(StringBuilder out, Object txn) throws ReflectiveOperationException {
        out.append(num(txn, "producerId")).append(',').append(num(txn, "firstOffset")).append(',')
           .append(num(txn, "lastOffset")).append(',').append(num(txn, "lastStableOffset"));
    }

    private static void txnState(Log log, StringBuilder out) throws ReflectiveOperationException {
        out.append(log.psm.mapEndOffset()).append(':').append(log.logStart).append(':').append(log.logEnd).append(':')
           .append(log.hw).append('/');
        Optional<LogOffsetMetadata> first = log.psm.firstUnstableOffset();
        out.append(first.isPresent() ? Long.toString(first.get().messageOffset) : "~").append(':');
        opt(out, log.psm.firstUndecidedOffset());
        out.append('/');
        boolean firstSegment = true;
        for (LogSegment s : log.segments.values()) {
            if (!firstSegment) out.append('|');
            firstSegment = false;
            out.append(s.baseOffset()).append('=');
            List<?> txns = s.txnIndex().allAbortedTxns();
            if (txns.isEmpty()) out.append('~');
            for (int i = 0; i < txns.size(); i++) aborted(i > 0 ? out.append(';') : out, txns.get(i));
        }
    }

    private static Object dataRecords(long offset, long pid, short epoch, int seq, int count, boolean txn, long ts)
            throws Throwable {
        Object array = Array.newInstance(KcheckTxnLogs.simpleRecordClass, count);
        for (int i = 0; i < count; i++) {
            Array.set(array, i, KcheckTxnLogs.simpleRecord.newInstance(ts, null, new byte[] {1}));
        }
        return invoke(KcheckTxnLogs.withRecords, null, (byte) 2, offset, Compression.NONE, TimestampType.CREATE_TIME,
                      pid, epoch, seq, 0, txn, array);
    }

    /** UnifiedLog.roll: LocalLog.roll, then updateMapEndOffset(new base) and takeSnapshot(false). */
    private static void roll(Log log) throws Throwable {
        log.segments.lastSegment().get().onBecomeInactiveSegment();
        log.segments.add(LogSegment.open(log.dir, log.logEnd, log.config, log.clock, 0, false));
        log.psm.updateMapEndOffset(log.logEnd);
        log.psm.takeSnapshot(false);
        updateHighWatermarkWithLogEndOffset(log);
    }

    /** UnifiedLog.deleteSegments: the log start moves to the next segment, the segments go, then their snapshots. */
    private static void deleteSegments(Log log, int count) throws Throwable {
        List<LogSegment> all = new ArrayList<>(log.segments.values());
        if (log.txnIndex) {  // as UnifiedLog.deleteOldSegments does after the log start moves: every leading segment
            incrementLogStart(log, all.get(count).baseOffset());  // whose next one starts at or below the log start
            count = 0;
            while (count + 1 < all.size() && all.get(count + 1).baseOffset() <= log.logStart) count++;
        }
        List<LogSegment> deletable = all.subList(0, count);
        incrementLogStart(log, all.get(count).baseOffset());
        for (LogSegment s : deletable) {
            log.segments.remove(s.baseOffset());
            s.deleteIfExists();
        }
        for (LogSegment s : deletable) log.psm.removeAndMarkSnapshotForDeletion(s.baseOffset());
    }

    /** UnifiedLog.maybeIncrementLogStartOffset's producer-state part (never past the high watermark: the scripts do
     * not ask it, and UnifiedLog refuses it). */
    private static void incrementLogStart(Log log, long offset) {
        if (offset > log.logStart) {
            log.logStart = offset;
            log.psm.onLogStartOffsetIncremented(offset);
        }
    }

    /** UnifiedLog.truncateTo: LocalLog.truncateTo, the deleted segments' snapshots, then rebuildProducerState. */
    private static void truncate(Log log, long target) throws Throwable {
        List<LogSegment> deleted = new ArrayList<>();
        for (LogSegment s : new ArrayList<>(log.segments.values())) if (s.baseOffset() > target) deleted.add(s);
        for (LogSegment s : deleted) {
            log.segments.remove(s.baseOffset());
            s.deleteIfExists();
        }
        log.segments.lastSegment().get().truncateTo(target);
        log.logEnd = target;
        for (LogSegment s : deleted) log.psm.removeAndMarkSnapshotForDeletion(s.baseOffset());
        log.logStart = Math.min(target, log.logStart);
        if (rebuildTarget == null) {
            invoke(rebuild, null, log.psm, log.segments, log.logStart, target, log.clock, false, "");
        } else {
            invoke(rebuild, rebuildTarget, log.psm, log.segments, log.logStart, target, recordVersionV2, log.clock,
                   false, "");
        }
        if (log.txnIndex && log.hw >= log.logEnd) updateHighWatermark(log, log.logEnd);
    }

    private static Object num(Object o, String name) throws ReflectiveOperationException {
        try {
            return o.getClass().getField(name).get(o);
        } catch (NoSuchFieldException e) {
            return o.getClass().getMethod(name).invoke(o);  // a record from 4.3
        }
    }

    private static void state(Log log, StringBuilder out) throws ReflectiveOperationException {
        ProducerStateManager psm = log.psm;
        out.append(psm.mapEndOffset()).append(':');
        opt(out, psm.oldestSnapshotOffset());
        out.append(':');
        opt(out, psm.latestSnapshotOffset());
        out.append(':').append(log.logStart).append(':').append(log.logEnd).append('/');
        TreeMap<Long, ProducerStateEntry> producers = new TreeMap<>(psm.activeProducers());
        if (producers.isEmpty()) out.append('~');
        boolean firstEntry = true;
        for (Map.Entry<Long, ProducerStateEntry> e : producers.entrySet()) {
            if (!firstEntry) out.append(';');
            firstEntry = false;
            ProducerStateEntry p = e.getValue();
            out.append(e.getKey()).append(',').append(p.producerEpoch()).append(',').append(p.coordinatorEpoch())
               .append(',').append(p.lastTimestamp()).append(',');
            opt(out, p.currentTxnFirstOffset());
            out.append(',');
            Collection<?> bs = p.batchMetadata();
            if (bs.isEmpty()) out.append('~');
            boolean firstBatch = true;
            for (Object b : bs) {
                if (!firstBatch) out.append('_');
                firstBatch = false;
                out.append(num(b, "lastSeq")).append(':').append(num(b, "lastOffset")).append(':')
                   .append(num(b, "offsetDelta")).append(':').append(num(b, "timestamp"));
            }
        }
        out.append('/');
        StringBuilder vs = new StringBuilder();
        for (long pid : log.verified) {
            VerificationStateEntry v = psm.verificationStateEntry(pid);
            if (v == null) continue;
            if (vs.length() > 0) vs.append(';');
            vs.append(pid).append(',').append(v.lowestSequence()).append(',').append(v.epoch());
        }
        out.append(vs.length() == 0 ? "~" : vs);
    }

    private static void opt(StringBuilder out, OptionalLong o) {
        if (o.isPresent()) out.append(o.getAsLong());
        else out.append('~');
    }
}
