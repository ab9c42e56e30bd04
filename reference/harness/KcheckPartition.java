import java.io.File;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

import kafka.cluster.DelayedOperations;
import kafka.cluster.Partition;
import org.apache.kafka.common.DirectoryId;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AlterPartitionRequestData.BrokerState;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.FetchRequest.PartitionData;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.mockito.Answers;
import org.mockito.MockMakers;
import org.mockito.Mockito;
import org.mockito.invocation.InvocationOnMock;

/**
 * One partition's broker side: Kafka's own kafka.cluster.Partition (kafka_2.13) stepped by a script, set up as
 * Kafka's AbstractPartitionTest does: a real UnifiedLog in a temporary folder (deleted after each script), a mocked
 * LogManager that is never asked (the log is set before the first makeLeader), mocked DelayedOperations (no
 * purgatory), a MetadataCache answering from the script's KRaft image (getAliveBrokerEpoch is empty for a fenced
 * broker, as KRaftMetadataCache's is), and an AlterPartitionManager stand-in that holds one request per partition as
 * DefaultAlterPartitionManager does (a second submit while one is held fails at once with OPERATION_NOT_ATTEMPTED)
 * and is answered by the script. The local broker is 1, its broker epoch 10. The clock moves 31 s
 * (replica.lag.time.max.ms + 1 s) before every op. Broker jars only (KafkaBridge(server=True)).
 * What moved between releases is found by reflection: the constructor's collaborators (4.4: LogManager in
 * kafka-storage, AlterPartitionManager and the listener in kafka-server; 4.0: the KRaft metadata cache is
 * kafka.server's), the log class (4.0: kafka.log.UnifiedLog), the partition state makeLeader takes (4.4: a
 * PartitionRegistration; 4.0 and 4.1: a LeaderAndIsrRequest.PartitionState), the partition state and replica
 * classes (Scala up to 4.0 or 4.1), the records' package (record.internal from 4.4), FetchParams, the LeaderAndIsr
 * the manager gets (3.9: kafka.api's, with Scala lists) and 3.9's metadata version (the newest production one) and
 * OffsetCheckpoints trait.
 *
 * PART minIsr op...   (fields ':'-separated, lists ','-separated, '~' empty)
 *   L<le>:<pe>:<isr>:<replicas>    makeLeader(leader 1, ...)
 *   W<le>:<pe>:<leader>:<replicas> makeFollower(leader, ISR = replicas)
 *   A<n>:<acks>                    appendRecordsToLeader(a batch of one record, requiredAcks), n times
 *   F<id>:<brokerEpoch>:<offset>:<leaderEpoch|->   a follower's fetch: fetchRecords(updateFetchState = true)
 *   S                              maybeShrinkIsr()
 *   R<dle>:<dpe>:<isr|=>           the held AlterPartition answered: the sent leader and partition epochs plus
 *                                  dle and dpe, the sent ISR ('=') or this one
 *   E<code>                        the held AlterPartition answered with this Errors code
 *   I<b=epoch,...>:<fenced>:<shuttingDown>   the KRaft image the MetadataCache answers from
 * Answer: OK then per op le:pe:isr:maximal:pending:hw:leo:followers:sent:held:error, where followers (leader only,
 * else '~') is b=leo/brokerEpoch,... ('-' unknown), sent the AlterPartition submitted in the op (le/pe/b=epoch;...
 * or '~'), held whether the manager holds a request (1|0), error the exception's simple name or '-'.
 */
public final class KcheckPartition {
    private static final int LOCAL = 1;
    private static final long LOCAL_EPOCH = 10L;
    private static final long STEP_MS = 31_000L;
    private static final Uuid TOPIC_ID = new Uuid(3L, 4L);
    private static final TopicPartition TP = new TopicPartition("kcheck", 0);
    private static KafkaScheduler scheduler;
    private static File root;

    // Kafka's classes and methods of this release
    private static Constructor<?> partitionNew;
    private static Method makeLeader, makeFollower, setLog, append, fetchRecords, partitionState, remoteReplicas;
    private static Method createLog, withRecords, noCaching, highWatermark, logEndOffset, closeLog, appendDefault;
    private static Constructor<?> simpleRecordNew, fetchParamsNew;
    private static Object compressionNone, originClient, sentinel, isolationLogEnd;

    // The script's KRaft image and the AlterPartition the stand-in manager holds
    private static final Map<Integer, Long> EPOCHS = new HashMap<>();
    private static final Set<Integer> FENCED = new HashSet<>();
    private static final Set<Integer> SHUTTING = new HashSet<>();
    private static CompletableFuture<Object> held;
    private static Object heldRequest;  // the LeaderAndIsr sent (org.apache.kafka.metadata's, 3.9: kafka.api's)
    private static String sent;

    private KcheckPartition() {
    }

    private static Method widest(String name) {
        Method best = null;
        for (Method m : Partition.class.getMethods()) {
            boolean wider = best == null || m.getParameterCount() > best.getParameterCount();
            if (m.getName().equals(name) && wider) best = m;
        }
        return best;
    }

    public static void register(Map<String, KcheckHandler> table) throws ReflectiveOperationException {
        for (Constructor<?> c : Partition.class.getConstructors()) {
            if (partitionNew == null || c.getParameterCount() > partitionNew.getParameterCount()) partitionNew = c;
        }
        makeLeader = widest("makeLeader");
        makeFollower = widest("makeFollower");
        setLog = widest("setLog");
        append = widest("appendRecordsToLeader");
        fetchRecords = widest("fetchRecords");
        partitionState = Partition.class.getMethod("partitionState");
        remoteReplicas = Partition.class.getMethod("remoteReplicas");
        Class<?> logClass = setLog.getParameterTypes()[0];
        for (Method m : logClass.getMethods()) {  // UnifiedLog.create (4.1 on) or apply (4.0), the fewest parameters
            boolean factory = m.getName().equals("create") || m.getName().equals("apply");
            if (factory && Modifier.isStatic(m.getModifiers()) && m.getParameterTypes()[0] == File.class
                && (createLog == null || m.getParameterCount() < createLog.getParameterCount())) createLog = m;
        }
        highWatermark = logClass.getMethod("highWatermark");
        logEndOffset = logClass.getMethod("logEndOffset");
        closeLog = logClass.getMethod("close");
        Class<?>[] a = append.getParameterTypes();
        Class<?> records = a[0];
        Class<?> simple = Class.forName(records.getPackageName() + ".SimpleRecord");
        simpleRecordNew = simple.getConstructor(long.class, byte[].class, byte[].class);
        Class<?> compression = Class.forName("org.apache.kafka.common.compress.Compression");
        compressionNone = compression.getField("NONE").get(null);
        withRecords = records.getMethod("withRecords", compression, simple.arrayType());
        originClient = a[1].getField("CLIENT").get(null);
        noCaching = a[3].getMethod(a[3].getName().startsWith("kafka.") ? "NoCaching" : "noCaching");  // 3.9: Scala's
        sentinel = a[4].getField("SENTINEL").get(null);
        if (a.length > 5) appendDefault = Partition.class.getMethod("appendRecordsToLeader$default$6");  // 4.4's TV
        Class<?> fp = fetchRecords.getParameterTypes()[0];
        for (Constructor<?> c : fp.getConstructors()) {
            boolean fewer = fetchParamsNew == null || c.getParameterCount() < fetchParamsNew.getParameterCount();
            if (fewer) fetchParamsNew = c;
        }
        isolationLogEnd = Class.forName(fp.getPackageName() + ".FetchIsolation").getField("LOG_END").get(null);
        table.put("PART", KcheckPartition::handle);
    }

    private static Object call(Method m, Object target, Object... args) {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw new IllegalStateException(e.getCause());
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    private static synchronized File newDir() throws IOException {
        if (scheduler == null) {
            scheduler = new KafkaScheduler(1, true, "kcheck-partition-");
            scheduler.startup();
            root = Files.createTempDirectory("kcheck-partition-").toFile();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    Utils.delete(root);
                } catch (IOException e) {
                    // best effort at exit; each script already deleted its own folder
                }
            }));
        }
        return Files.createTempDirectory(root.toPath(), "p-").toFile();
    }

    /** An optional in the type the mocked method returns: java.util.Optional, or scala.Option up to 4.0. */
    private static Object optional(InvocationOnMock inv, Object value) {
        if (inv.getMethod().getReturnType() == Optional.class) return Optional.ofNullable(value);
        return scala.Option.apply(value);
    }

    private static Object metadataAnswer(InvocationOnMock inv) throws Throwable {
        switch (inv.getMethod().getName()) {
            case "getAliveBrokerEpoch": {
                int b = inv.getArgument(0);
                return optional(inv, FENCED.contains(b) ? null : EPOCHS.get(b));
            }
            case "isBrokerFenced":
                return FENCED.contains((Integer) inv.getArgument(0));
            case "isBrokerShuttingDown":
                return SHUTTING.contains((Integer) inv.getArgument(0));
            case "hasAliveBroker":
                return EPOCHS.containsKey((Integer) inv.getArgument(0)) && !FENCED.contains(inv.getArgument(0));
            default:
                return Answers.RETURNS_DEFAULTS.answer(inv);
        }
    }

    /** A java.util.List, or a Scala collection as one (3.9's LeaderAndIsr holds Scala lists). */
    private static List<?> javaList(Object xs) {
        if (xs instanceof List<?> l) return l;
        List<Object> out = new ArrayList<>();
        scala.jdk.javaapi.CollectionConverters.asJava((scala.collection.Iterable<?>) xs).forEach(out::add);
        return out;
    }

    private static Object get(Object target, String method) {
        try {
            return target.getClass().getMethod(method).invoke(target);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Object managerAnswer(InvocationOnMock inv) throws Throwable {
        if (!inv.getMethod().getName().equals("submit")) return Answers.RETURNS_DEFAULTS.answer(inv);
        CompletableFuture<Object> future = new CompletableFuture<>();
        if (held != null) {
            future.completeExceptionally(Errors.OPERATION_NOT_ATTEMPTED.exception());
            return future;
        }
        Object request = inv.getArgument(1);
        held = future;
        heldRequest = request;
        StringBuilder sb = new StringBuilder().append(get(request, "leaderEpoch")).append('/')
            .append(get(request, "partitionEpoch")).append('/');
        List<BrokerState> states = new ArrayList<>();
        for (Object o : javaList(get(request, "isrWithBrokerEpoch"))) states.add((BrokerState) o);
        states.sort((x, y) -> Integer.compare(x.brokerId(), y.brokerId()));
        for (int i = 0; i < states.size(); i++) {
            if (i > 0) sb.append(';');
            sb.append(states.get(i).brokerId()).append('=').append(states.get(i).brokerEpoch());
        }
        sent = sb.toString();
        return future;
    }

    private static <T> T mock(Class<T> type, org.mockito.stubbing.Answer<?> answer) {
        return Mockito.mock(type, Mockito.withSettings().mockMaker(MockMakers.SUBCLASS).stubOnly()
            .defaultAnswer(answer));
    }

    /** The Partition, its collaborators chosen by the constructor's parameter types. */
    private static Partition newPartition(KcheckClock clock) throws Throwable {
        Class<?>[] types = partitionNew.getParameterTypes();
        Object[] args = new Object[types.length];
        for (int i = 0; i < types.length; i++) {
            Class<?> c = types[i];
            String name = c.getSimpleName();
            if (c == TopicPartition.class) args[i] = TP;
            else if (c == long.class) args[i] = 30_000L;  // replica.lag.time.max.ms
            else if (c == int.class) args[i] = LOCAL;
            else if (c == scala.Function0.class) args[i] = (scala.Function0<Object>) () -> LOCAL_EPOCH;
            else if (c == org.apache.kafka.common.utils.Time.class) args[i] = clock;
            else if (c == scala.Option.class) args[i] = scala.Option.apply(TOPIC_ID);
            else if (name.equals("MetadataVersion")) args[i] = c.getMethod("latestProduction").invoke(null);  // 3.9
            else if (name.equals("MetadataCache")) {
                // 4.0's Partition asks kafka.server.MetadataCache, whose KRaft implementation answers the epochs
                Class<?> kraft = c.isInterface() && c.getName().startsWith("kafka.server")
                    ? Class.forName("kafka.server.metadata.KRaftMetadataCache") : c;
                args[i] = mock(kraft, KcheckPartition::metadataAnswer);
            } else if (name.equals("AlterPartitionManager")) args[i] = mock(c, KcheckPartition::managerAnswer);
            else args[i] = mock(c, Answers.RETURNS_DEFAULTS);  // the listener, DelayedOperations, the LogManager
        }
        try {
            return (Partition) partitionNew.newInstance(args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** UnifiedLog.create (apply up to 4.0) by parameter type: a clean shutdown, no remote storage. */
    private static Object newLog(File dir, LogConfig config, KcheckClock clock) throws Throwable {
        Class<?>[] types = createLog.getParameterTypes();
        Object[] args = new Object[types.length];
        int ints = 0;
        int booleans = 0;
        for (int i = 0; i < types.length; i++) {
            Class<?> c = types[i];
            if (c == File.class) args[i] = dir;
            else if (c == LogConfig.class) args[i] = config;
            else if (c == long.class) args[i] = 0L;  // log start offset, recovery point
            else if (c == int.class) args[i] = ints++ == 0 ? 300000 : 600000;
            else if (c == boolean.class) args[i] = booleans++ < 2;  // clean shutdown, keep metadata file; no remote
            else if (c == Optional.class) args[i] = Optional.of(TOPIC_ID);
            else if (c == scala.Option.class) args[i] = scala.Option.apply(TOPIC_ID);
            else if (c == ConcurrentMap.class) args[i] = new ConcurrentHashMap<String, Integer>();
            else if (c.isInstance(scheduler)) args[i] = scheduler;
            else if (c.isInstance(clock)) args[i] = clock;
            else if (c == ProducerStateManagerConfig.class) args[i] = new ProducerStateManagerConfig(86400000, false);
            else if (c == LogDirFailureChannel.class) args[i] = new LogDirFailureChannel(1);
            else if (c.getSimpleName().equals("BrokerTopicStats")) args[i] = KcheckStats.newBrokerTopicStats(c);
            else if (c.getSimpleName().equals("LogOffsetsListener")) {
                args[i] = c.getField("NO_OP_OFFSETS_LISTENER").get(null);
            }
            else throw new IllegalStateException("UnifiedLog parameter " + c);
        }
        try {
            return createLog.invoke(null, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static int[] ints(String s) {
        if (s.equals("~")) return new int[0];
        return Arrays.stream(s.split(",")).mapToInt(Integer::parseInt).toArray();
    }

    private static List<Integer> list(int[] xs) {
        return Arrays.stream(xs).boxed().toList();
    }

    /** The partition state makeLeader / makeFollower take: a PartitionRegistration (4.4) or a LeaderAndIsr
     * request's PartitionState (4.0, 4.1), from a KRaft controller (controller epoch 1). */
    private static Object registration(Class<?> type, int leader, int le, int pe, int[] isr, int[] replicas)
            throws ReflectiveOperationException {
        if (type == PartitionRegistration.class) {
            return new PartitionRegistration.Builder().setLeader(leader).setLeaderEpoch(le).setPartitionEpoch(pe)
                .setIsr(isr).setReplicas(replicas).setDirectories(DirectoryId.unassignedArray(replicas.length))
                .setLeaderRecoveryState(LeaderRecoveryState.RECOVERED).build();
        }
        Object s = type.getConstructor().newInstance();
        type.getMethod("setTopicName", String.class).invoke(s, TP.topic());
        type.getMethod("setPartitionIndex", int.class).invoke(s, TP.partition());
        type.getMethod("setControllerEpoch", int.class).invoke(s, 1);
        type.getMethod("setLeader", int.class).invoke(s, leader);
        type.getMethod("setLeaderEpoch", int.class).invoke(s, le);
        type.getMethod("setPartitionEpoch", int.class).invoke(s, pe);
        type.getMethod("setIsr", List.class).invoke(s, list(isr));
        type.getMethod("setReplicas", List.class).invoke(s, list(replicas));
        type.getMethod("setIsNew", boolean.class).invoke(s, false);
        return s;
    }

    private static void become(Partition partition, Method how, int leader, int le, int pe, int[] isr, int[] replicas)
            throws ReflectiveOperationException {
        Class<?>[] types = how.getParameterTypes();
        Object[] args = new Object[types.length];
        args[0] = registration(types[0], leader, le, pe, isr, replicas);
        int i = 1;
        if (types[i] == boolean.class) args[i++] = false;  // 4.4's isNew
        args[i] = mock(types[i], inv -> optional(inv, null));  // no checkpointed high watermark
        i++;
        args[i++] = scala.Option.apply(TOPIC_ID);
        args[i] = scala.Option.empty();
        call(how, partition, args);
    }

    private static void image(String[] f) {
        EPOCHS.clear();
        FENCED.clear();
        SHUTTING.clear();
        if (!f[0].equals("~")) {
            for (String e : f[0].split(",")) {
                String[] kv = e.split("=");
                EPOCHS.put(Integer.parseInt(kv[0]), Long.parseLong(kv[1]));
            }
        }
        for (int b : ints(f[1])) FENCED.add(b);
        for (int b : ints(f[2])) SHUTTING.add(b);
    }

    private static void answer(String op) throws ReflectiveOperationException {
        CompletableFuture<Object> future = held;
        Object request = heldRequest;
        if (future == null) return;  // nothing held: an answer to nothing is not delivered
        held = null;  // the manager releases the partition before it completes the future, as Kafka's does
        heldRequest = null;
        if (op.charAt(0) == 'E') {
            future.completeExceptionally(Errors.forCode(Short.parseShort(op.substring(1))).exception());
            return;
        }
        String[] f = op.substring(1).split(":");
        List<BrokerState> isr = new ArrayList<>();
        if (f[2].equals("=")) {
            for (Object s : javaList(get(request, "isrWithBrokerEpoch"))) {
                isr.add(new BrokerState().setBrokerId(((BrokerState) s).brokerId()));
            }
        } else {
            for (int b : ints(f[2])) isr.add(new BrokerState().setBrokerId(b));
        }
        // LeaderAndIsr(leader, leaderEpoch, leaderRecoveryState, isrWithBrokerEpoch, partitionEpoch)
        for (Constructor<?> c : request.getClass().getConstructors()) {
            Class<?>[] types = c.getParameterTypes();
            if (types.length != 5 || types[2] != LeaderRecoveryState.class) continue;
            Object states = types[3] == List.class ? isr : scala.jdk.javaapi.CollectionConverters.asScala(isr).toList();
            future.complete(c.newInstance(LOCAL, (Integer) get(request, "leaderEpoch") + Integer.parseInt(f[0]),
                                          LeaderRecoveryState.RECOVERED, states,
                                          (Integer) get(request, "partitionEpoch") + Integer.parseInt(f[1])));
            return;
        }
        throw new IllegalStateException("LeaderAndIsr constructor");
    }

    private static void fetch(Partition partition, String[] f, long now) throws ReflectiveOperationException {
        int id = Integer.parseInt(f[0]);
        long brokerEpoch = Long.parseLong(f[1]);
        Optional<Integer> epoch = f[3].equals("-") ? Optional.empty() : Optional.of(Integer.parseInt(f[3]));
        Class<?>[] types = fetchParamsNew.getParameterTypes();
        Object[] args = new Object[types.length];
        int i = 0;
        if (types[0] == short.class) args[i++] = (short) 17;  // 4.0's request version: no effect here
        args[i++] = id;
        args[i++] = brokerEpoch;
        args[i++] = 0L;  // max wait
        args[i++] = 1;  // min bytes
        args[i++] = 1 << 20;
        args[i++] = isolationLogEnd;
        args[i] = Optional.empty();
        Object params = fetchParamsNew.newInstance(args);
        PartitionData data = new PartitionData(TOPIC_ID, Long.parseLong(f[2]), 0L, 1 << 20, epoch, Optional.empty());
        call(fetchRecords, partition, params, data, now, 1 << 20, true, true);
    }

    /** n appends of one record each (the model's record is a batch of one), stopping at the first refusal. */
    private static void append(Partition partition, String[] f) throws ReflectiveOperationException {
        for (int i = 0; i < Integer.parseInt(f[0]); i++) {
            Object record = simpleRecordNew.newInstance(0L, null, new byte[] {(byte) i});
            Object one = java.lang.reflect.Array.newInstance(simpleRecordNew.getDeclaringClass(), 1);
            java.lang.reflect.Array.set(one, 0, record);
            Object records = withRecords.invoke(null, compressionNone, one);
            Object[] args = new Object[append.getParameterCount()];
            args[0] = records;
            args[1] = originClient;
            args[2] = Integer.parseInt(f[1]);
            args[3] = noCaching.invoke(null);
            args[4] = sentinel;
            if (args.length > 5) args[5] = call(appendDefault, partition);
            call(append, partition, args);
        }
    }

    private static void step(Partition partition, String op, long now)
            throws ReflectiveOperationException {
        String[] f = op.substring(1).split(":");
        switch (op.charAt(0)) {
            case 'L' -> become(partition, makeLeader, LOCAL, Integer.parseInt(f[0]), Integer.parseInt(f[1]),
                               ints(f[2]), ints(f[3]));
            case 'W' -> become(partition, makeFollower, Integer.parseInt(f[2]), Integer.parseInt(f[0]),
                               Integer.parseInt(f[1]), ints(f[3]), ints(f[3]));
            case 'A' -> append(partition, f);
            case 'F' -> fetch(partition, f, now);
            case 'S' -> partition.maybeShrinkIsr();
            case 'R', 'E' -> answer(op);
            case 'I' -> image(f);
            default -> throw new IllegalArgumentException("unknown op: " + op);
        }
    }

    /** Broker ids in order from a java.util or a Scala collection (the partition state is Scala up to 4.1). */
    private static String ids(Object collection) {
        Iterable<?> xs = collection instanceof Iterable<?> j ? j
            : scala.jdk.javaapi.CollectionConverters.asJava((scala.collection.Iterable<?>) collection);
        List<Integer> sorted = new ArrayList<>();
        for (Object x : xs) sorted.add((Integer) x);
        sorted.sort(null);
        if (sorted.isEmpty()) return "~";
        StringBuilder sb = new StringBuilder();
        for (int b : sorted) sb.append(sb.length() == 0 ? "" : ",").append(b);
        return sb.toString();
    }

    private static String brokerEpoch(Object optional) {
        if (optional instanceof Optional<?> o) return o.map(Object::toString).orElse("-");
        scala.Option<?> o = (scala.Option<?>) optional;
        return o.isEmpty() ? "-" : o.get().toString();
    }

    private static String followers(Partition partition) throws ReflectiveOperationException {
        TreeMap<Integer, String> remote = new TreeMap<>();
        for (Object r : scala.jdk.javaapi.CollectionConverters.asJava(
                (scala.collection.Iterable<?>) call(remoteReplicas, partition))) {
            Object s = r.getClass().getMethod("stateSnapshot").invoke(r);
            long leo = (Long) s.getClass().getMethod("logEndOffset").invoke(s);
            remote.put((Integer) r.getClass().getMethod("brokerId").invoke(r),
                       (leo < 0 ? "-" : Long.toString(leo)) + "/"
                       + brokerEpoch(s.getClass().getMethod("brokerEpoch").invoke(s)));
        }
        StringBuilder sb = new StringBuilder();
        remote.forEach((b, v) -> sb.append(sb.length() == 0 ? "" : ",").append(b).append('=').append(v));
        return sb.length() == 0 ? "~" : sb.toString();
    }

    private static String observe(Partition partition, Object log, String error) throws ReflectiveOperationException {
        Object state = call(partitionState, partition);
        Class<?> api = partitionState.getReturnType();
        return partition.getLeaderEpoch() + ":" + partition.getPartitionEpoch() + ":" + ids(api.getMethod("isr")
            .invoke(state)) + ":" + ids(api.getMethod("maximalIsr").invoke(state)) + ":"
            + ((Boolean) api.getMethod("isInflight").invoke(state) ? 1 : 0) + ":" + call(highWatermark, log) + ":"
            + call(logEndOffset, log) + ":" + (partition.isLeader() ? followers(partition) : "~") + ":"
            + (sent == null ? "~" : sent) + ":" + (held == null ? 0 : 1) + ":" + error;
    }

    private static String handle(String[] t) throws Throwable {
        EPOCHS.clear();
        FENCED.clear();
        SHUTTING.clear();
        held = null;
        heldRequest = null;
        KcheckClock clock = new KcheckClock();
        clock.now = 1_000_000L;
        File dir = newDir();
        Properties props = new Properties();
        props.put("min.insync.replicas", t[1]);
        Object log = newLog(new File(dir, TP.topic() + "-" + TP.partition()), new LogConfig(props), clock);
        try {
            Partition partition = newPartition(clock);
            call(setLog, partition, log, false);
            StringBuilder out = new StringBuilder("OK");
            for (int i = 2; i < t.length; i++) {
                clock.now += STEP_MS;
                sent = null;
                String error = "-";
                try {
                    step(partition, t[i], clock.now);
                } catch (RuntimeException e) {
                    error = e.getClass().getSimpleName();
                }
                out.append(' ').append(observe(partition, log, error));
            }
            return out.toString();
        } finally {
            call(closeLog, log);
            Utils.delete(dir);
        }
    }
}
