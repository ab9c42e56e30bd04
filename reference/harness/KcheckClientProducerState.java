package org.apache.kafka.clients.producer.internals;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.clients.ApiVersions;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.requests.InitProducerIdResponse;
import org.apache.kafka.common.requests.ProduceResponse;

/**
 * The idempotent producer's client bookkeeping (kafka-clients: TransactionManager, TxnPartitionMap, TxnPartitionEntry,
 * ProducerBatch), one script per line on a real TransactionManager as the Sender and the RecordAccumulator drive it
 * (reference/client_producer_state.py says which code each step mirrors). The drain gate is the real private
 * RecordAccumulator.shouldStopDrainBatchesForPartition and the retry decision the real private Sender.canRetry, each on
 * an instance holding only the fields those methods read; the rest of Sender.completeBatch / failBatch /
 * failExpiredBatches is their calls into the TransactionManager and the batch, in their order. Classes that moved
 * between releases (LogContext and ProducerIdAndEpoch to utils.internals, MemoryRecords to record.internal in 4.4) and
 * the TransactionManager's constructor are reached by reflection; the class sits in Kafka's package for the
 * package-private methods.
 *
 * TXNCLI retries producerId epoch op...      (topic "t", partitions 0..2, delivery.timeout.ms 120000, batches made at 0)
 *   nP:C                  a new batch of C records for partition P (batches are numbered from 0 in script order)
 *   dB                    batch B drained (the head of its partition's queue)
 *   rB:ERROR:OFFSET:LSO:L the answer to B's request: Errors name, base offset, log start offset, L=1 when
 *                         delivery.timeout.ms has passed
 *   xB                    B expired (Sender.failExpiredBatches)
 *   l                     one Sender loop's maybeResolveSequences and bumpIdempotentEpochAndResetIdIfNeeded
 *   iPID:EPOCH            the pending InitProducerId answered
 * Answer: OK and per op VERDICT/STATE. VERDICT: '-', B (not drained), S<seq>:<epoch> (drained), R (retried), C or c
 * (completed: the batch's first final state or not), F<adjust> or f (failed: the TransactionManager told or not), X or
 * XU (expired; XU: its sequence marked unresolved), E<exception> (Kafka threw). STATE:
 * pid:epoch:state:lastError:bumpRequired/rewrite/unresolved/entries, rewrite the partitions whose sequences the next
 * bump rewrites, unresolved p=nextSeq, entries per partition p,pid,epoch,nextSeq,lastAckedSeq,lastAckedOffset,inflight
 * with inflight batch@seq:epoch:pid[r] ('r' once its sequence was reset) joined by '_'; '~' for none, lists by ','/';'.
 */
public final class KcheckClientProducerState {
    private static final long DELIVERY_MS = 120000L;
    private static Constructor<?> tmConstructor;
    private static Method recordsBuilder;
    private static Constructor<?> batchConstructor;
    private static Method shouldStop;
    private static Method senderCanRetry;
    private static Object unsafe;
    private static Method allocate;
    private static final Map<String, Field> FIELDS = new java.util.HashMap<>();

    private KcheckClientProducerState() {
    }

    public static void register(Map table) throws ReflectiveOperationException {
        for (Constructor<?> c : TransactionManager.class.getConstructors())
            if (tmConstructor == null || c.getParameterCount() > tmConstructor.getParameterCount()) tmConstructor = c;
        Class<?> records;
        try {
            records = Class.forName("org.apache.kafka.common.record.internal.MemoryRecords");
        } catch (ClassNotFoundException e) {
            records = Class.forName("org.apache.kafka.common.record.MemoryRecords");
        }
        recordsBuilder = records.getMethod("builder", ByteBuffer.class, Compression.class, TimestampType.class,
                                           long.class);
        batchConstructor = ProducerBatch.class.getConstructor(TopicPartition.class, recordsBuilder.getReturnType(),
                                                              long.class);
        shouldStop = RecordAccumulator.class.getDeclaredMethod("shouldStopDrainBatchesForPartition",
                                                               ProducerBatch.class, TopicPartition.class);
        shouldStop.setAccessible(true);
        senderCanRetry = Sender.class.getDeclaredMethod("canRetry", ProducerBatch.class,
                                                        ProduceResponse.PartitionResponse.class, long.class);
        senderCanRetry.setAccessible(true);
        Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
        Field theUnsafe = unsafeClass.getDeclaredField("theUnsafe");
        theUnsafe.setAccessible(true);
        unsafe = theUnsafe.get(null);
        allocate = unsafeClass.getMethod("allocateInstance", Class.class);
        field(TransactionManager.class, "clientSideEpochBumpRequired", "epochBumpRequired");  // 3.9: epochBumpRequired
        for (String f : new String[] {"currentState", "lastError", "partitionsToRewriteSequences",
                                      "partitionsWithUnresolvedSequences", "txnPartitionMap"})
            field(TransactionManager.class, f);
        field(TxnPartitionMap.class, "topicPartitions");
        field(TxnPartitionEntry.class, "inflightBatchesBySequence");
        field(RecordAccumulator.class, "transactionManager");
        field(RecordAccumulator.class, "deliveryTimeoutMs");
        field(Sender.class, "accumulator");
        field(Sender.class, "retries");
        FIELDS.put("sender.transactionManager", Sender.class.getDeclaredField("transactionManager"));
        FIELDS.get("sender.transactionManager").setAccessible(true);
        Class<?> handler = Class.forName("KcheckHandler");
        InvocationHandler call = (proxy, method, args) -> {
            if (method.getName().equals("handle")) return run((String[]) args[0]);
            if (method.getName().equals("toString")) return "TXNCLI";
            if (method.getName().equals("hashCode")) return System.identityHashCode(proxy);
            return proxy == args[0];
        };
        table.put("TXNCLI", Proxy.newProxyInstance(handler.getClassLoader(), new Class<?>[] {handler}, call));
    }

    private static void field(Class<?> owner, String... names) throws NoSuchFieldException {
        for (String name : names) {
            try {
                Field f = owner.getDeclaredField(name);
                f.setAccessible(true);
                FIELDS.put(names[0], f);
                return;
            } catch (NoSuchFieldException e) {
                // the next spelling
            }
        }
        throw new NoSuchFieldException(names[0]);
    }

    private static Object get(String name, Object owner) throws IllegalAccessException {
        return FIELDS.get(name).get(owner);
    }

    /** The producer of one script: its TransactionManager, the gate's accumulator, the Sender and the batches. */
    private static final class Script {
        final TransactionManager tm;
        final RecordAccumulator accumulator;
        final Sender sender;
        final int retries;
        final List<ProducerBatch> batches = new ArrayList<>();
        final Map<ProducerBatch, Integer> ids = new IdentityHashMap<>();

        Script(int retries) throws ReflectiveOperationException {
            this.retries = retries;
            Class<?>[] types = tmConstructor.getParameterTypes();
            Object[] args = new Object[types.length];
            for (int i = 0; i < types.length; i++) {
                if (types[i] == int.class) args[i] = 60000;
                else if (types[i] == long.class) args[i] = 100L;
                else if (types[i] == boolean.class) args[i] = false;
                else if (types[i] == ApiVersions.class) args[i] = new ApiVersions();
                else if (types[i].getSimpleName().equals("LogContext")) args[i] = types[i].getConstructor().newInstance();
                // the transactional id (String) and 4.4's Metadata stay null: an idempotent producer has neither
            }
            tm = (TransactionManager) tmConstructor.newInstance(args);
            accumulator = (RecordAccumulator) allocate.invoke(unsafe, RecordAccumulator.class);
            FIELDS.get("transactionManager").set(accumulator, tm);
            FIELDS.get("deliveryTimeoutMs").setInt(accumulator, (int) DELIVERY_MS);
            sender = (Sender) allocate.invoke(unsafe, Sender.class);
            FIELDS.get("accumulator").set(sender, accumulator);
            FIELDS.get("retries").setInt(sender, retries);
            FIELDS.get("sender.transactionManager").set(sender, tm);
        }

        String step(String op) throws Throwable {
            char kind = op.charAt(0);
            String[] a = op.length() > 1 ? op.substring(1).split(":") : new String[0];
            switch (kind) {
                case 'n':
                    return newBatch(Integer.parseInt(a[0]), Integer.parseInt(a[1]));
                case 'd':
                    return drain(batches.get(Integer.parseInt(a[0])));
                case 'r':
                    return respond(batches.get(Integer.parseInt(a[0])), Errors.valueOf(a[1]), Long.parseLong(a[2]),
                                   Long.parseLong(a[3]), a[4].equals("1"));
                case 'x':
                    return expire(batches.get(Integer.parseInt(a[0])));
                case 'l':
                    tm.maybeResolveSequences();  // Sender.runOnce
                    if (tm.hasFatalError()) return "-";
                    tm.bumpIdempotentEpochAndResetIdIfNeeded();
                    return "-";
                case 'i':
                    return init(Long.parseLong(a[0]), Short.parseShort(a[1]));
                default:
                    throw new IllegalArgumentException("unknown op " + op);
            }
        }

        String init(long pid, short epoch) {
            var handler = tm.nextRequest(false);
            if (handler == null) return "-";
            handler.handleResponse(new InitProducerIdResponse(new InitProducerIdResponseData()
                .setProducerId(pid).setProducerEpoch(epoch)));
            return "-";
        }

        String newBatch(int partition, int count) throws ReflectiveOperationException {
            Object builder = recordsBuilder.invoke(null, ByteBuffer.allocate(64 + 16 * count), Compression.NONE,
                                                   TimestampType.CREATE_TIME, 0L);
            ProducerBatch b = (ProducerBatch) batchConstructor.newInstance(new TopicPartition("t", partition), builder,
                                                                           0L);
            for (int i = 0; i < count; i++) b.tryAppend(0L, null, new byte[] {(byte) i}, new org.apache.kafka.common.header.Header[0], null, 0L);
            ids.put(b, batches.size());
            batches.add(b);
            return "-";
        }

        /** RecordAccumulator.drainBatchesForOneNode for the head of the partition's queue. */
        String drain(ProducerBatch b) throws Throwable {
            TopicPartition tp = b.topicPartition;
            if ((boolean) invoke(shouldStop, accumulator, b, tp)) return "B";
            var producerIdAndEpoch = tm.producerIdAndEpoch();
            if (!b.hasSequence()) {
                tm.maybeUpdateProducerIdAndEpoch(tp);
                b.setProducerState(producerIdAndEpoch, tm.sequenceNumber(tp), false);
                tm.incrementSequenceNumber(tp, b.recordCount);
                tm.addInFlightBatch(b);
            }
            b.close();
            return "S" + b.baseSequence() + ":" + b.producerEpoch();
        }

        /** Sender.completeBatch (the MESSAGE_TOO_LARGE split aside) and its failBatch. */
        String respond(ProducerBatch b, Errors error, long offset, long logStart, boolean late) throws Throwable {
            long now = late ? DELIVERY_MS : 0L;
            ProduceResponse.PartitionResponse response = new ProduceResponse.PartitionResponse(error, offset, -1L,
                                                                                               logStart);
            if (error != Errors.NONE) {
                if ((boolean) invoke(senderCanRetry, sender, b, response, now)) {
                    b.reenqueued(now);  // RecordAccumulator.reenqueue
                    return "R";
                }
                if (error != Errors.DUPLICATE_SEQUENCE_NUMBER) {
                    boolean adjust = b.attempts() < retries;
                    RuntimeException exception = error.exception();
                    if (!b.completeExceptionally(exception, i -> exception)) return "f";
                    try {
                        tm.handleFailedBatch(b, exception, adjust);
                    } catch (Exception e) {
                        // Sender.failBatch logs and goes on
                    }
                    return "F" + (adjust ? 1 : 0);
                }
            }
            tm.handleCompletedBatch(b, response);
            return b.complete(offset, -1L) ? "C" : "c";
        }

        /** Sender.failExpiredBatches for one batch. */
        String expire(ProducerBatch b) {
            RuntimeException exception = new TimeoutException("Expiring " + b.recordCount + " record(s)");
            if (b.completeExceptionally(exception, i -> exception)) {
                try {
                    tm.handleFailedBatch(b, exception, false);
                } catch (Exception e) {
                    // Sender.failBatch logs and goes on
                }
            }
            if (b.inRetry()) {
                tm.markSequenceUnresolved(b);
                return "XU";
            }
            return "X";
        }

        @SuppressWarnings("unchecked")
        String state() throws IllegalAccessException {
            var pe = tm.producerIdAndEpoch();
            Object error = get("lastError", tm);
            StringBuilder out = new StringBuilder();
            out.append(pe.producerId).append(':').append(pe.epoch).append(':').append(get("currentState", tm))
               .append(':').append(error == null ? "~" : error.getClass().getSimpleName()).append(':')
               .append(FIELDS.get("clientSideEpochBumpRequired").getBoolean(tm) ? 1 : 0).append('/');
            TreeSet<Integer> rewrite = new TreeSet<>();
            for (TopicPartition tp : (Collection<TopicPartition>) get("partitionsToRewriteSequences", tm))
                rewrite.add(tp.partition());
            out.append(rewrite.isEmpty() ? "~" : String.join(",", rewrite.stream().map(String::valueOf).toList()));
            TreeMap<Integer, Integer> unresolved = new TreeMap<>();
            for (var e : ((Map<TopicPartition, Integer>) get("partitionsWithUnresolvedSequences", tm)).entrySet())
                unresolved.put(e.getKey().partition(), e.getValue());
            List<String> parts = new ArrayList<>();
            unresolved.forEach((p, s) -> parts.add(p + "=" + s));
            out.append('/').append(parts.isEmpty() ? "~" : String.join(",", parts)).append('/');
            TreeMap<Integer, TxnPartitionEntry> entries = new TreeMap<>();
            Object map = get("txnPartitionMap", tm);
            for (var e : ((Map<TopicPartition, TxnPartitionEntry>) get("topicPartitions", map)).entrySet())
                entries.put(e.getKey().partition(), e.getValue());
            List<String> rows = new ArrayList<>();
            for (var e : entries.entrySet()) {
                TxnPartitionEntry entry = e.getValue();
                var epe = entry.producerIdAndEpoch();
                List<String> inflight = new ArrayList<>();
                for (ProducerBatch b : (Collection<ProducerBatch>) get("inflightBatchesBySequence", entry))
                    inflight.add(ids.get(b) + "@" + b.baseSequence() + ":" + b.producerEpoch() + ":" + b.producerId()
                                 + (b.sequenceHasBeenReset() ? "r" : ""));
                rows.add(e.getKey() + "," + epe.producerId + "," + epe.epoch + "," + entry.nextSequence() + ","
                         + entry.lastAckedSequence().orElse(-1) + "," + entry.lastAckedOffset().orElse(-1) + ","
                         + (inflight.isEmpty() ? "~" : String.join("_", inflight)));
            }
            return out.append(rows.isEmpty() ? "~" : String.join(";", rows)).toString();
        }
    }

    private static Object invoke(Method m, Object target, Object... args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    static String run(String[] t) throws Throwable {
        Script s = new Script(Integer.parseInt(t[1]));
        s.tm.bumpIdempotentEpochAndResetIdIfNeeded();  // the first Sender loop asks for an id
        s.init(Long.parseLong(t[2]), Short.parseShort(t[3]));
        StringBuilder out = new StringBuilder("OK");
        for (int i = 4; i < t.length; i++) {
            String verdict;
            try {
                verdict = s.step(t[i]);
            } catch (RuntimeException e) {  // Sender.run logs what runOnce throws and loops again
                verdict = "E" + e.getClass().getSimpleName();
            }
            out.append(' ').append(verdict).append('/').append(s.state());
        }
        return out.toString();
    }
}
