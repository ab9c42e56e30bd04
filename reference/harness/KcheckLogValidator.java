import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.server.record.BrokerCompressionType;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.LogValidator;
import org.apache.kafka.storage.internals.log.RecordValidationException;

/**
 * A produce request's records through kafka-storage's LogValidator.validateMessagesAndAssignOffsets, on the bytes
 * the Python side built (reference/produce_admission.py says what each step mirrors). The target compression is
 * BrokerCompressionType.targetCompression(topic's compression.type, source compression), as UnifiedLog derives it
 * (the source is the last compressed batch's type). The record and utility classes moved between releases and
 * the constructor changed (3.9: a MetadataVersion; 4.2.2 and 4.4: maxRecordBodySize): those are reached by
 * reflection.
 *
 * LOGVAL hex now offset leaderEpoch compacted tsType before after topicCompression origin ibpLow maxRecordBody
 *   hex: the records' bytes; compacted 0|1; tsType 0 CreateTime, 1 LogAppendTime (the topic's); origin C client,
 *   R replication; ibpLow 1: inter.broker.protocol.version 2.0 (3.9 only); maxRecordBody -1: the default (4.4)
 * Answer, fields joined by tabs:
 *   OK target next maxTimestamp sizeMaybeChanged logAppendTime batch...
 *     batch = base:last:leaderEpoch:maxTimestamp:timestampType:compression:count:pid:epoch:seq:txn:control:size
 *             /offset@timestamp,...  (size '~' when compressed by this call, since compressors' bytes are not ours)
 *   E target exceptionSimpleName message [batchIndex message]...   (record errors from RecordValidationException)
 * LOGDEF: OK and the release's default message.timestamp.after.max.ms (ServerLogConfigs).
 */
public final class KcheckLogValidator {
    private static final TopicPartition TP = new TopicPartition("t", 0);
    private static String record;
    private static Method readable;
    private static Method batches;
    private static Class<?> compressionTypeClass;
    private static Constructor<?> ctor12;
    private static Constructor<?> ctor13;
    private static Method validate;
    private static Object bufferSupplier;
    private static Constructor<?> longRef;
    private static Object metrics;
    private static Object ibpLatest;
    private static Object ibpLow;
    private static Method targetCompression;
    private static Method compressionOf;
    private static Method sizeInBytes;
    private static Method recordOffset;
    private static Method recordTimestamp;
    private static Method build;
    private static Method compressionOfType;
    private static final java.util.List<Method> batchGetters = new java.util.ArrayList<>();

    private KcheckLogValidator() {
    }

    public static void register(Map<String, KcheckHandler> table) throws ReflectiveOperationException {
        // the record classes moved to common.record.internal in 4.3, the utilities to common.utils.internals in 4.4
        record = "org.apache.kafka.common.record.internal.";
        String utils = "org.apache.kafka.common.utils.internals.";
        try {
            Class.forName(record + "MemoryRecords");
        } catch (ClassNotFoundException e) {
            record = "org.apache.kafka.common.record.";
        }
        try {
            Class.forName(utils + "PrimitiveRef");
        } catch (ClassNotFoundException e) {
            utils = "org.apache.kafka.common.utils.";
        }
        Class<?> mr = Class.forName(record + "MemoryRecords");
        readable = mr.getMethod("readableRecords", ByteBuffer.class);
        batches = mr.getMethod("batches");
        compressionTypeClass = Class.forName(record + "CompressionType");
        Class<?> ref = Class.forName(utils + "PrimitiveRef$LongRef");
        longRef = ref.getDeclaredConstructor(long.class);
        longRef.setAccessible(true);
        Class<?> supplier = Class.forName(utils + "BufferSupplier");
        bufferSupplier = supplier.getField("NO_CACHING").get(null);
        Class<?> recorder = LogValidator.MetricsRecorder.class;
        metrics = Proxy.newProxyInstance(recorder.getClassLoader(), new Class<?>[] {recorder}, (p, m, a) -> null);
        validate = LogValidator.class.getMethod("validateMessagesAndAssignOffsets", ref, recorder, supplier);
        targetCompression = BrokerCompressionType.class.getMethod("targetCompression", Optional.class,
                                                                  compressionTypeClass);
        for (Constructor<?> c : LogValidator.class.getConstructors()) {
            if (c.getParameterCount() == 12) ctor12 = c;
            if (c.getParameterCount() == 13) ctor13 = c;
        }
        if (ctor13 != null && ctor13.getParameterTypes()[12].getSimpleName().equals("MetadataVersion")) {  // 3.9
            Class<?> mv = ctor13.getParameterTypes()[12];
            ibpLatest = mv.getMethod("latestProduction").invoke(null);
            ibpLow = mv.getField("IBP_2_0_IV1").get(null);
        }
        Class<?> batch = Class.forName(record + "RecordBatch");
        for (String name : new String[] {"baseOffset", "lastOffset", "partitionLeaderEpoch", "maxTimestamp",
                                         "timestampType", "compressionType", "countOrNull", "producerId",
                                         "producerEpoch", "baseSequence", "isTransactional", "isControlBatch"}) {
            batchGetters.add(batch.getMethod(name));
        }
        compressionOf = batch.getMethod("compressionType");
        sizeInBytes = batch.getMethod("sizeInBytes");
        Class<?> rec = Class.forName(record + "Record");
        recordOffset = rec.getMethod("offset");
        recordTimestamp = rec.getMethod("timestamp");
        build = Compression.Builder.class.getMethod("build");
        compressionOfType = Compression.class.getMethod("of", compressionTypeClass);
        table.put("LOGVAL", KcheckLogValidator::run);
        table.put("LOGDEF", t -> "OK " + Class.forName("org.apache.kafka.server.config.ServerLogConfigs")
            .getField("LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS_DEFAULT").get(null));
    }

    private static Object invoke(Method m, Object target, Object... args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static Object compressionType(String name) throws ReflectiveOperationException {
        return compressionTypeClass.getField(name.toUpperCase(java.util.Locale.ROOT)).get(null);
    }

    private static String run(String[] t) throws Throwable {
        byte[] bytes = t[1].equals("_") ? new byte[0] : HexFormat.of().parseHex(t[1]);
        Object records = invoke(readable, null, ByteBuffer.wrap(bytes));
        long now = Long.parseLong(t[2]);
        long offset = Long.parseLong(t[3]);
        int leaderEpoch = Integer.parseInt(t[4]);
        boolean compacted = t[5].equals("1");
        TimestampType tsType = t[6].equals("1") ? TimestampType.LOG_APPEND_TIME : TimestampType.CREATE_TIME;
        long before = Long.parseLong(t[7]);
        long after = Long.parseLong(t[8]);
        String topicCompression = t[9];
        AppendOrigin origin = t[10].equals("R") ? AppendOrigin.REPLICATION : AppendOrigin.CLIENT;
        boolean low = t[11].equals("1");
        int maxBody = Integer.parseInt(t[12]);
        // UnifiedLog.analyzeAndValidateRecords: the source compression is the last compressed batch's
        Object source = compressionType("NONE");
        for (Object b : (Iterable<?>) invoke(batches, records)) {
            Object c = compressionOf.invoke(b);
            if (!c.toString().equals("none")) source = c;
        }
        Optional<Compression> log = topicCompression.equals("producer") ? Optional.empty()
            : Optional.of(compression(topicCompression.equals("uncompressed") ? "NONE" : topicCompression));
        Compression target = (Compression) invoke(targetCompression, null, log, source);
        Object[] args = {records, TP, clock(now), source, target, compacted, (byte) 2, tsType, before, after,
                         leaderEpoch, origin, null};
        Constructor<?> ctor = ctor12;
        if (ibpLatest != null) {  // 3.9
            args[12] = low ? ibpLow : ibpLatest;
            ctor = ctor13;
        } else if (ctor13 != null && maxBody >= 0) {  // 4.4's maxRecordBodySize
            args[12] = maxBody;
            ctor = ctor13;
        }
        return validateWith(ctor, ctor == ctor13 ? args : java.util.Arrays.copyOf(args, 12), offset, target);
    }

    private static Compression compression(String name) throws Throwable {
        return (Compression) invoke(build, invoke(compressionOfType, null, compressionType(name)));
    }

    private static KcheckClock clock(long now) {
        KcheckClock c = new KcheckClock();
        c.now = now;
        return c;
    }

    private static String validateWith(Constructor<?> ctor, Object[] args, long offset, Compression target)
            throws Throwable {
        String targetName = target.type().toString();
        Object counter = longRef.newInstance(offset);
        Object result;
        try {
            LogValidator v = (LogValidator) ctor.newInstance(args);
            result = invoke(validate, v, counter, metrics, bufferSupplier);
        } catch (InvocationTargetException e) {
            return error(targetName, e.getCause());
        } catch (RuntimeException e) {
            return error(targetName, e);
        }
        StringBuilder out = new StringBuilder("OK\t").append(targetName).append('\t');
        out.append(counter.getClass().getField("value").get(counter)).append('\t');
        out.append(field(result, "maxTimestampMs")).append('\t');
        boolean changed = (Boolean) field(result, "messageSizeMaybeChanged");
        out.append(changed ? 1 : 0).append('\t').append(field(result, "logAppendTimeMs"));
        Object validated = field(result, "validatedRecords");
        for (Object b : (Iterable<?>) invoke(batches, validated)) {
            out.append('\t');
            batch(out, b, changed && !target.type().toString().equals("none"));
        }
        return out.toString();
    }

    private static void batch(StringBuilder out, Object b, boolean recompressed) throws Throwable {
        for (Method m : batchGetters) {
            Object v = m.invoke(b);
            if (v instanceof Boolean) v = ((Boolean) v) ? 1 : 0;
            out.append(v).append(':');
        }
        out.append(recompressed ? "~" : String.valueOf(sizeInBytes.invoke(b))).append('/');
        boolean first = true;
        for (Object r : (Iterable<?>) b) {
            if (!first) out.append(',');
            first = false;
            out.append(recordOffset.invoke(r)).append('@').append(recordTimestamp.invoke(r));
        }
    }

    private static Object field(Object o, String name) throws ReflectiveOperationException {
        try {
            return o.getClass().getField(name).get(o);
        } catch (NoSuchFieldException e) {
            return o.getClass().getMethod(name).invoke(o);  // a record from 4.0
        }
    }

    private static String error(String target, Throwable e) throws ReflectiveOperationException {
        StringBuilder out = new StringBuilder("E\t").append(target).append('\t');
        if (e instanceof RecordValidationException) {
            RecordValidationException rve = (RecordValidationException) e;
            Throwable inner = rve.invalidException();
            out.append(inner.getClass().getSimpleName()).append('\t').append(KcheckCodec.escape(inner.getMessage()));
            for (Object re : (List<?>) rve.recordErrors()) {
                out.append('\t').append(field(re, "batchIndex")).append('\t')
                   .append(KcheckCodec.escape((String) field(re, "message")));
            }
        } else {
            out.append(e.getClass().getSimpleName()).append('\t').append(KcheckCodec.escape(e.getMessage()));
        }
        return out.toString();
    }
}
