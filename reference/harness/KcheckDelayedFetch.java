import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import kafka.cluster.Partition;
import kafka.server.DelayedFetch;
import kafka.server.DelayedFetchMetrics;
import kafka.server.ReplicaManager;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.OffsetForLeaderEpochResponseData.EpochEndOffset;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.FetchRequest.PartitionData;
import org.apache.kafka.storage.internals.log.LogOffsetMetadata;
import org.apache.kafka.storage.internals.log.LogOffsetSnapshot;
import org.mockito.Answers;
import org.mockito.MockMakers;
import org.mockito.Mockito;
import org.mockito.invocation.InvocationOnMock;

/**
 * A fetch waiting in the fetch purgatory: Kafka's kafka.server.DelayedFetch (Scala, kafka_2.13, 3.9 to 4.4) driven
 * directly with Mockito stand-ins (the subclass mock maker, as KcheckDelayedProduceScala.java) for ReplicaManager
 * (getPartitionOrException, shouldLeaderThrottle, readFromLog, isAddingReplica) and Partition (fetchOffsetSnapshot,
 * lastOffsetForLeaderEpoch) answering from the script; tryComplete() is what the purgatory's checkAndComplete runs,
 * run() what its timer runs at the deadline. What changes between releases is found by reflection: FetchParams'
 * package and constructor (3.9: kafka-storage with a request version; 4.0: server-common with one; 4.1 on: none),
 * and the partitions' container (a Seq of kafka.server.FetchPartitionStatus up to 4.1, a LinkedHashMap of
 * kafka-storage's FetchPartitionStatus record from 4.2). Broker jars only (KafkaBridge(server=True)).
 *
 * DFETCH replicaId isolation(L|H|T) clientMetadata(0|1) minBytes maxWaitMs n partition*n op...
 *   partition = OFF,BASE,POS:FETCHOFFSET:LOGSTART:MAXBYTES:CUREPOCH:LASTEPOCH   the start offset metadata
 *               (FetchPartitionStatus.startOffsetMetadata) and the request's PartitionData; an epoch '-' is empty
 *   tSTATE/STATE/...   tryComplete(); partition i's broker state now is STATE i:
 *               LOOKUPERR:SNAPERR:END:HW:LSO:THROTTLE:EPERR,EPOCH,ENDOFFSET
 *               LOOKUPERR (SNAPERR) non-zero: getPartitionOrException (fetchOffsetSnapshot) throws that Errors code's
 *               exception; END, HW, LSO the snapshot's log end, high watermark, last stable offset as OFF,BASE,POS;
 *               THROTTLE shouldLeaderThrottle's answer (0|1); the last three lastOffsetForLeaderEpoch's EpochEndOffset
 *   x          run(): the deadline
 * Answer: OK then per op RET/CALLS/STATE/READ: RET 1|0 (tryComplete's result), '-' (run) or !ExceptionSimpleName
 * (what tryComplete threw); CALLS the collaborators' calls in order, joined by ',' ('~' none): g<i>
 * (getPartitionOrException), s<i>:<epoch|->:<fetchOnlyLeader 0|1> (fetchOffsetSnapshot), q<i>:<replicaId>
 * (shouldLeaderThrottle), e<i>:<epoch|->:<fetchEpoch>:<fetchOnlyFromLeader 0|1> (lastOffsetForLeaderEpoch), a<i>
 * (isAddingReplica); STATE completed(1|0):readFromLog calls:callbacks:follower expirations:consumer expirations, all
 * so far; READ the readFromLog call of this op ('~' none): readFromPurgatory(1|0) then per partition
 * ;i@fetchOffset:logStart:maxBytes:epoch:lastEpoch.
 */
public final class KcheckDelayedFetch {
    private static final Uuid TOPIC_ID = new Uuid(1L, 2L);
    private static final List<Partition> PARTITIONS = new ArrayList<>();
    private static ReplicaManager replicaManager;
    private static Constructor<?> delayedFetchNew;
    private static Constructor<?> fetchParamsNew;
    private static Constructor<?> statusNew;
    private static Method isolationValueOf;
    private static boolean mapOfStatuses;

    // the op being driven: its partitions' scripted states, the calls recorded, the readFromLog calls' words
    private static String[][] states;
    private static final List<String> CALLS = new ArrayList<>();
    private static final List<String> READS = new ArrayList<>();
    private static int callbacks;

    private KcheckDelayedFetch() {
    }

    public static void register(Map<String, KcheckHandler> table) throws ReflectiveOperationException {
        delayedFetchNew = DelayedFetch.class.getConstructors()[0];
        Class<?>[] types = delayedFetchNew.getParameterTypes();
        mapOfStatuses = types[1] == LinkedHashMap.class;
        Class<?> fp = types[0];
        for (Constructor<?> c : fp.getConstructors()) {
            if (fetchParamsNew == null || c.getParameterCount() < fetchParamsNew.getParameterCount()) fetchParamsNew = c;
        }
        Class<?> iso = Class.forName(fp.getPackageName() + ".FetchIsolation");
        isolationValueOf = iso.getMethod("valueOf", String.class);
        Class<?> status = Class.forName(mapOfStatuses ? "org.apache.kafka.storage.internals.log.FetchPartitionStatus"
                                        : "kafka.server.FetchPartitionStatus");
        statusNew = status.getConstructor(LogOffsetMetadata.class, PartitionData.class);
        replicaManager = Mockito.mock(ReplicaManager.class, Mockito.withSettings().mockMaker(MockMakers.SUBCLASS)
            .stubOnly().defaultAnswer(KcheckDelayedFetch::replicaManagerAnswer));
        table.put("DFETCH", KcheckDelayedFetch::handle);
    }

    private static int index(Object topicPartition) {
        return ((TopicPartition) topicPartition).partition();
    }

    private static Object replicaManagerAnswer(InvocationOnMock inv) throws Throwable {
        switch (inv.getMethod().getName()) {
            case "getPartitionOrException": {
                int p = index(inv.getArgument(0));
                CALLS.add("g" + p);
                throwIf(states[p][0]);
                return partition(p);
            }
            case "shouldLeaderThrottle": {
                int p = 0;
                while (PARTITIONS.get(p) != inv.getArgument(1)) p++;
                CALLS.add("q" + p + ":" + inv.getArgument(2));
                return states[p][5].equals("1");
            }
            case "isAddingReplica":
                CALLS.add("a" + index(inv.getArgument(0)));
                return false;
            case "readFromLog":
                return readFromLog(inv);
            default:
                return Answers.RETURNS_DEFAULTS.answer(inv);
        }
    }

    /** Records what onComplete asks to read; answers nothing read, so the callback gets no partition. */
    private static Object readFromLog(InvocationOnMock inv) {
        StringBuilder sb = new StringBuilder(((Boolean) inv.getArgument(3)) ? "1" : "0");
        for (Object o : scala.jdk.javaapi.CollectionConverters.asJava((scala.collection.Seq<?>) inv.getArgument(1))) {
            scala.Tuple2<?, ?> t = (scala.Tuple2<?, ?>) o;
            PartitionData d = (PartitionData) t._2();
            sb.append(';').append(((TopicIdPartition) t._1()).partition()).append('@').append(d.fetchOffset)
              .append(':').append(d.logStartOffset).append(':').append(d.maxBytes).append(':')
              .append(epoch(d.currentLeaderEpoch)).append(':').append(epoch(d.lastFetchedEpoch));
        }
        READS.add(sb.toString());
        return scala.collection.immutable.Nil$.MODULE$;
    }

    private static String epoch(Optional<Integer> e) {
        return e.isPresent() ? e.get().toString() : "-";
    }

    private static void throwIf(String code) {
        short c = Short.parseShort(code);
        if (c != 0) throw Errors.forCode(c).exception();
    }

    private static LogOffsetMetadata metadata(String s) {
        String[] f = s.split(",");
        return new LogOffsetMetadata(Long.parseLong(f[0]), Long.parseLong(f[1]), Integer.parseInt(f[2]));
    }

    private static Partition partition(int p) {
        while (PARTITIONS.size() <= p) {
            int index = PARTITIONS.size();
            PARTITIONS.add(Mockito.mock(Partition.class, Mockito.withSettings().mockMaker(MockMakers.SUBCLASS)
                .stubOnly().defaultAnswer(inv -> partitionAnswer(index, inv))));
        }
        return PARTITIONS.get(p);
    }

    @SuppressWarnings("unchecked")
    private static Object partitionAnswer(int p, InvocationOnMock inv) throws Throwable {
        String[] s = states[p];
        switch (inv.getMethod().getName()) {
            case "fetchOffsetSnapshot":
                CALLS.add("s" + p + ":" + epoch((Optional<Integer>) inv.getArgument(0)) + ":"
                          + (((Boolean) inv.getArgument(1)) ? 1 : 0));
                throwIf(s[1]);
                return new LogOffsetSnapshot(0L, metadata(s[2]), metadata(s[3]), metadata(s[4]));
            case "lastOffsetForLeaderEpoch": {
                CALLS.add("e" + p + ":" + epoch((Optional<Integer>) inv.getArgument(0)) + ":" + inv.getArgument(1)
                          + ":" + (((Boolean) inv.getArgument(2)) ? 1 : 0));
                String[] e = s[6].split(",");
                return new EpochEndOffset().setPartition(p).setErrorCode(Short.parseShort(e[0]))
                    .setLeaderEpoch(Integer.parseInt(e[1])).setEndOffset(Long.parseLong(e[2]));
            }
            default:
                return Answers.RETURNS_DEFAULTS.answer(inv);
        }
    }

    private static Optional<Integer> optionalEpoch(String s) {
        return s.equals("-") ? Optional.empty() : Optional.of(Integer.parseInt(s));
    }

    private static Object fetchParams(String[] t) throws ReflectiveOperationException {
        Object isolation = isolationValueOf.invoke(null, switch (t[2]) {
            case "L" -> "LOG_END";
            case "H" -> "HIGH_WATERMARK";
            default -> "TXN_COMMITTED";
        });
        Optional<?> client = t[3].equals("1") ? Optional.of(clientMetadata()) : Optional.empty();
        Class<?>[] types = fetchParamsNew.getParameterTypes();
        Object[] args = new Object[types.length];
        int i = 0;
        if (types[0] == short.class) args[i++] = (short) 17;  // the request version: no effect on the decision
        args[i++] = Integer.parseInt(t[1]);
        args[i++] = 0L;  // replica epoch
        args[i++] = Long.parseLong(t[5]);
        args[i++] = Integer.parseInt(t[4]);
        args[i++] = 1 << 20;
        args[i++] = isolation;
        args[i] = client;
        return fetchParamsNew.newInstance(args);
    }

    private static Object clientMetadata() throws ReflectiveOperationException {
        Class<?> d = Class.forName("org.apache.kafka.common.replica.ClientMetadata$DefaultClientMetadata");
        Class<?> principal = Class.forName("org.apache.kafka.common.security.auth.KafkaPrincipal");
        return d.getConstructors()[0].newInstance("rack", "client", java.net.InetAddress.getLoopbackAddress(),
                                                  principal.getField("ANONYMOUS").get(null), "PLAINTEXT");
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static DelayedFetch newDelayedFetch(String[] t, int n) throws ReflectiveOperationException {
        LinkedHashMap<Object, Object> statuses = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            String[] f = t[7 + i].split(":");
            PartitionData data = new PartitionData(TOPIC_ID, Long.parseLong(f[1]), Long.parseLong(f[2]),
                                                   Integer.parseInt(f[3]), optionalEpoch(f[4]), optionalEpoch(f[5]));
            statuses.put(new TopicIdPartition(TOPIC_ID, i, "t"), statusNew.newInstance(metadata(f[0]), data));
        }
        Object container = statuses;
        if (!mapOfStatuses) {
            List<scala.Tuple2<Object, Object>> pairs = new ArrayList<>();
            statuses.forEach((k, v) -> pairs.add(new scala.Tuple2<>(k, v)));
            container = scala.jdk.javaapi.CollectionConverters.asScala(pairs).toSeq();
        }
        scala.Function1<Object, scala.runtime.BoxedUnit> callback = m -> {
            callbacks++;
            return scala.runtime.BoxedUnit.UNIT;
        };
        return (DelayedFetch) delayedFetchNew.newInstance(fetchParams(t), container, replicaManager, null, callback);
    }

    private static String handle(String[] t) throws Throwable {
        int n = Integer.parseInt(t[6]);
        CALLS.clear();
        READS.clear();
        callbacks = 0;
        DelayedFetch op;
        try {
            op = newDelayedFetch(t, n);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
        long follower0 = DelayedFetchMetrics.followerExpiredRequestMeter().count();
        long consumer0 = DelayedFetchMetrics.consumerExpiredRequestMeter().count();
        StringBuilder out = new StringBuilder("OK");
        for (int i = 7 + n; i < t.length; i++) {
            CALLS.clear();
            int readsBefore = READS.size();
            String ret = "-";
            if (t[i].charAt(0) == 't') {
                String[] parts = t[i].substring(1).split("/");
                states = new String[n][];
                for (int p = 0; p < n; p++) states[p] = parts[p].split(":");
                try {
                    ret = op.tryComplete() ? "1" : "0";
                } catch (RuntimeException e) {
                    ret = "!" + e.getClass().getSimpleName();
                }
            } else {
                op.run();
            }
            out.append(' ').append(ret).append('/').append(CALLS.isEmpty() ? "~" : String.join(",", CALLS))
               .append('/').append(op.isCompleted() ? 1 : 0).append(':').append(READS.size()).append(':')
               .append(callbacks).append(':')
               .append(DelayedFetchMetrics.followerExpiredRequestMeter().count() - follower0).append(':')
               .append(DelayedFetchMetrics.consumerExpiredRequestMeter().count() - consumer0).append('/')
               .append(READS.size() > readsBefore ? READS.get(READS.size() - 1) : "~");
        }
        return out.toString();
    }
}
