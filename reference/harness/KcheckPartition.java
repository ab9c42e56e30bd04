import java.io.File;
import java.io.IOException;
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

import kafka.cluster.DelayedOperations;
import kafka.cluster.Partition;
import org.apache.kafka.common.DirectoryId;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.AlterPartitionRequestData.BrokerState;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.FetchRequest.PartitionData;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.metadata.LeaderAndIsr;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.kafka.metadata.MetadataCache;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.common.RequestLocal;
import org.apache.kafka.server.partition.AlterPartitionListener;
import org.apache.kafka.server.partition.AlterPartitionManager;
import org.apache.kafka.server.partition.PartitionState;
import org.apache.kafka.server.replica.Replica;
import org.apache.kafka.server.replica.ReplicaState;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.storage.log.FetchParams;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.checkpoint.OffsetCheckpoints;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogManager;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.log.VerificationGuard;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;
import org.mockito.Answers;
import org.mockito.MockMakers;
import org.mockito.Mockito;
import org.mockito.invocation.InvocationOnMock;

/**
 * One partition's broker side: Kafka's own kafka.cluster.Partition (kafka_2.13, 4.4's constructor) stepped by a
 * script, set up as Kafka's AbstractPartitionTest does: a real UnifiedLog in a temporary folder (deleted after each
 * script), a mocked LogManager that is never asked (the log is set before the first makeLeader), mocked
 * DelayedOperations (no purgatory), a MetadataCache answering from the script's KRaft image (getAliveBrokerEpoch
 * is empty for a fenced broker, as KRaftMetadataCache's is), and an AlterPartitionManager stand-in that holds one
 * request per partition as DefaultAlterPartitionManager does (a second submit while one is held fails at once with
 * OPERATION_NOT_ATTEMPTED) and is answered by the script. The local broker is 1, its broker epoch 10. The clock
 * moves 31 s (replica.lag.time.max.ms + 1 s) before every op. Broker jars only (KafkaBridge(server=True)).
 *
 * PART minIsr op...   (fields ':'-separated, lists ','-separated, '~' empty)
 *   L<le>:<pe>:<isr>:<replicas>    makeLeader(PartitionRegistration(leader 1, ...))
 *   W<le>:<pe>:<leader>:<replicas> makeFollower(PartitionRegistration(leader, ISR = replicas))
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

    // The script's KRaft image and the AlterPartition the stand-in manager holds
    private static final Map<Integer, Long> EPOCHS = new HashMap<>();
    private static final Set<Integer> FENCED = new HashSet<>();
    private static final Set<Integer> SHUTTING = new HashSet<>();
    private static CompletableFuture<LeaderAndIsr> held;
    private static LeaderAndIsr heldRequest;
    private static String sent;

    private KcheckPartition() {
    }

    public static void register(Map<String, KcheckHandler> table) {
        table.put("PART", KcheckPartition::handle);
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

    private static Object metadataAnswer(InvocationOnMock inv) throws Throwable {
        switch (inv.getMethod().getName()) {
            case "getAliveBrokerEpoch": {
                int b = inv.getArgument(0);
                return FENCED.contains(b) || !EPOCHS.containsKey(b) ? Optional.empty() : Optional.of(EPOCHS.get(b));
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

    private static Object managerAnswer(InvocationOnMock inv) throws Throwable {
        if (!inv.getMethod().getName().equals("submit")) return Answers.RETURNS_DEFAULTS.answer(inv);
        CompletableFuture<LeaderAndIsr> future = new CompletableFuture<>();
        if (held != null) {
            future.completeExceptionally(Errors.OPERATION_NOT_ATTEMPTED.exception());
            return future;
        }
        LeaderAndIsr request = inv.getArgument(1);
        held = future;
        heldRequest = request;
        StringBuilder sb = new StringBuilder().append(request.leaderEpoch()).append('/').append(request.partitionEpoch())
            .append('/');
        List<BrokerState> states = new ArrayList<>(request.isrWithBrokerEpoch());
        states.sort((a, b) -> Integer.compare(a.brokerId(), b.brokerId()));
        for (int i = 0; i < states.size(); i++) {
            if (i > 0) sb.append(';');
            sb.append(states.get(i).brokerId()).append('=').append(states.get(i).brokerEpoch());
        }
        sent = sb.toString();
        return future;
    }

    private static int[] ints(String s) {
        if (s.equals("~")) return new int[0];
        return Arrays.stream(s.split(",")).mapToInt(Integer::parseInt).toArray();
    }

    private static PartitionRegistration registration(int leader, int le, int pe, int[] isr, int[] replicas) {
        return new PartitionRegistration.Builder().setLeader(leader).setLeaderEpoch(le).setPartitionEpoch(pe)
            .setIsr(isr).setReplicas(replicas).setDirectories(DirectoryId.unassignedArray(replicas.length))
            .setLeaderRecoveryState(LeaderRecoveryState.RECOVERED).build();
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

    private static void answer(String op) {
        CompletableFuture<LeaderAndIsr> future = held;
        LeaderAndIsr request = heldRequest;
        if (future == null) return;  // nothing held: an answer to nothing is not delivered
        held = null;  // the manager releases the partition before it completes the future, as Kafka's does
        heldRequest = null;
        if (op.charAt(0) == 'E') {
            future.completeExceptionally(Errors.forCode(Short.parseShort(op.substring(1))).exception());
            return;
        }
        String[] f = op.substring(1).split(":");
        List<Integer> isr = new ArrayList<>();
        if (f[2].equals("=")) {
            for (BrokerState s : request.isrWithBrokerEpoch()) isr.add(s.brokerId());
        } else {
            for (int b : ints(f[2])) isr.add(b);
        }
        future.complete(new LeaderAndIsr(LOCAL, request.leaderEpoch() + Integer.parseInt(f[0]), isr,
                                         LeaderRecoveryState.RECOVERED,
                                         request.partitionEpoch() + Integer.parseInt(f[1])));
    }

    private static void fetch(Partition partition, String[] f, long now) {
        int id = Integer.parseInt(f[0]);
        long brokerEpoch = Long.parseLong(f[1]);
        Optional<Integer> epoch = f[3].equals("-") ? Optional.empty() : Optional.of(Integer.parseInt(f[3]));
        FetchParams params = new FetchParams(id, brokerEpoch, 0L, 1, 1 << 20, FetchIsolation.LOG_END,
                                             Optional.empty());
        PartitionData data = new PartitionData(TOPIC_ID, Long.parseLong(f[2]), 0L, 1 << 20, epoch, Optional.empty());
        partition.fetchRecords(params, data, now, 1 << 20, true, true);
    }

    /** n appends of one record each (the model's record is a batch of one), stopping at the first refusal. */
    private static void append(Partition partition, String[] f) {
        for (int i = 0; i < Integer.parseInt(f[0]); i++) {
            MemoryRecords records = MemoryRecords.withRecords(Compression.NONE,
                                                              new SimpleRecord(0L, null, new byte[] {(byte) i}));
            partition.appendRecordsToLeader(records, AppendOrigin.CLIENT, Integer.parseInt(f[1]),
                                            RequestLocal.noCaching(), VerificationGuard.SENTINEL,
                                            partition.appendRecordsToLeader$default$6());
        }
    }

    private static void step(Partition partition, OffsetCheckpoints checkpoints, String op, long now) {
        String[] f = op.substring(1).split(":");
        switch (op.charAt(0)) {
            case 'L' -> partition.makeLeader(registration(LOCAL, Integer.parseInt(f[0]), Integer.parseInt(f[1]),
                                                          ints(f[2]), ints(f[3])), false, checkpoints,
                                             scala.Option.apply(TOPIC_ID), scala.Option.empty());
            case 'W' -> partition.makeFollower(registration(Integer.parseInt(f[2]), Integer.parseInt(f[0]),
                                                            Integer.parseInt(f[1]), ints(f[3]), ints(f[3])),
                                               false, checkpoints, scala.Option.apply(TOPIC_ID), scala.Option.empty());
            case 'A' -> append(partition, f);
            case 'F' -> fetch(partition, f, now);
            case 'S' -> partition.maybeShrinkIsr();
            case 'R', 'E' -> answer(op);
            case 'I' -> image(f);
            default -> throw new IllegalArgumentException("unknown op: " + op);
        }
    }

    private static String ids(Set<Integer> s) {
        if (s.isEmpty()) return "~";
        StringBuilder sb = new StringBuilder();
        s.stream().sorted().forEach(b -> sb.append(sb.length() == 0 ? "" : ",").append(b));
        return sb.toString();
    }

    private static String observe(Partition partition, UnifiedLog log, String error) {
        PartitionState state = partition.partitionState();
        StringBuilder followers = new StringBuilder();
        if (partition.isLeader()) {
            TreeMap<Integer, Replica> remote = new TreeMap<>();
            scala.jdk.javaapi.CollectionConverters.asJava(partition.remoteReplicas())
                .forEach(r -> remote.put(r.brokerId(), r));
            for (Replica r : remote.values()) {
                ReplicaState s = r.stateSnapshot();
                if (followers.length() > 0) followers.append(',');
                followers.append(r.brokerId()).append('=')
                    .append(s.logEndOffset() < 0 ? "-" : Long.toString(s.logEndOffset())).append('/')
                    .append(s.brokerEpoch().map(Object::toString).orElse("-"));
            }
        }
        return partition.getLeaderEpoch() + ":" + partition.getPartitionEpoch() + ":" + ids(state.isr()) + ":"
            + ids(state.maximalIsr()) + ":" + (state.isInflight() ? 1 : 0) + ":" + log.highWatermark() + ":"
            + log.logEndOffset() + ":" + (followers.length() == 0 ? "~" : followers) + ":" + (sent == null ? "~" : sent)
            + ":" + (held == null ? 0 : 1) + ":" + error;
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
        UnifiedLog log = UnifiedLog.create(new File(dir, TP.topic() + "-" + TP.partition()), new LogConfig(props), 0L,
            0L, scheduler, new BrokerTopicStats(), clock, 300000, new ProducerStateManagerConfig(86400000, false),
            600000, new LogDirFailureChannel(1), true, Optional.of(TOPIC_ID));
        try {
            MetadataCache cache = Mockito.mock(MetadataCache.class, Mockito.withSettings().mockMaker(MockMakers.SUBCLASS).stubOnly()
                .defaultAnswer(KcheckPartition::metadataAnswer));
            AlterPartitionManager manager = Mockito.mock(AlterPartitionManager.class, Mockito.withSettings()
                .mockMaker(MockMakers.SUBCLASS).stubOnly().defaultAnswer(KcheckPartition::managerAnswer));
            DelayedOperations delayed = Mockito.mock(DelayedOperations.class, Mockito.withSettings()
                .mockMaker(MockMakers.SUBCLASS).stubOnly());
            LogManager logManager = Mockito.mock(LogManager.class, Mockito.withSettings()
                .mockMaker(MockMakers.SUBCLASS).stubOnly());
            OffsetCheckpoints checkpoints = (d, tp) -> Optional.empty();
            AlterPartitionListener listener = Mockito.mock(AlterPartitionListener.class,
                                                           Mockito.withSettings().mockMaker(MockMakers.SUBCLASS).stubOnly());
            scala.Function0<Object> localEpoch = () -> LOCAL_EPOCH;
            Partition partition = new Partition(TP, 30_000L, LOCAL, localEpoch, clock, listener, delayed, cache,
                                                logManager, manager, scala.Option.apply(TOPIC_ID));
            partition.setLog(log, false);
            StringBuilder out = new StringBuilder("OK");
            for (int i = 2; i < t.length; i++) {
                clock.now += STEP_MS;
                sent = null;
                String error = "-";
                try {
                    step(partition, checkpoints, t[i], clock.now);
                } catch (RuntimeException e) {
                    error = e.getClass().getSimpleName();
                }
                out.append(' ').append(observe(partition, log, error));
            }
            return out.toString();
        } finally {
            log.close();
            Utils.delete(dir);
        }
    }
}
