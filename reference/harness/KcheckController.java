import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.message.ElectLeadersResponseData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.controller.ControllerRequestContext;
import org.apache.kafka.controller.QuorumFeatures;
import org.apache.kafka.metadata.BrokerHeartbeatReply;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.FinalizedControllerFeatures;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.metadata.VersionRange;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * The KRaft controller's broker lifecycle and AlterPartition handling (request KC), run on Kafka's own
 * ClusterControlManager, ReplicationControlManager, FeatureControlManager and ConfigurationControlManager
 * (KcheckControlManagers) for one topic with one partition. Their entry points are package-private, so they are
 * reached by reflection; every record a call returns is replayed into the managers at the next metadata-log offset,
 * as the QuorumController does (a RegisterBrokerRecord with its offset; a broker epoch is the offset its
 * registration batch starts at).
 *
 * <pre>
 * KC elr minIsr unclean op op ...
 * </pre>
 * metadata.version is the release's latest production one; elr: 1 to finalize eligible.leader.replicas.version=1;
 * minIsr and unclean (0/1) are the topic's min.insync.replicas and unclean.leader.election.enable. Each op is one
 * controller call:
 * <ul>
 * <li>{@code r:B:INC:PREV} BrokerRegistration of broker B, incarnation INC (a small int), previousBrokerEpoch
 *     PREV (-1: none; '*': B's registered epoch, a clean shutdown); clean-shutdown detection on (request version
 *     3).</li>
 * <li>{@code h:B:F:S:OFF} BrokerHeartbeat of B with its registered epoch, wantFence F, wantShutDown S (0/1) and
 *     currentMetadataOffset OFF ('*': the log end, i.e. caught up); the heartbeat also refreshes B's session.
 *     A reply in controlled shutdown records the batch end as B's controlled-shutdown offset (as
 *     QuorumController.processBrokerHeartbeat does).</li>
 * <li>{@code x:B} session expiry of B: its last contact is set one session timeout back and the controller's
 *     maybeFenceOneStaleBroker runs (handleBrokerFenced, the heartbeat manager's fence); NOTHING if it fenced
 *     nobody.</li>
 * <li>{@code t:R} CreateTopics with the manual assignment R ('1,2,3') for partition 0.</li>
 * <li>{@code a:B:E:LE:PE:ISR:EP} AlterPartition from B ('L': the partition's leader) with broker epoch E ('*': B's
 *     registered epoch), leader epoch LE and partition epoch PE (a number, 'c' the partition's, 'c-1', 'c+1'...),
 *     new ISR ISR (an int list, or 'I' the partition's ISR, 'I+3' with 3 added, 'I-3' without 3) and each
 *     member's broker epoch EP: '*', or a comma list of {@code member.how} where how is 'r' its registered epoch
 *     (-1 when unregistered; also every member not listed), 's' one less (stale), 'n' -1 (unchecked) or a number.
 *     Request version 3, RECOVERED.</li>
 * <li>{@code e:P} or {@code e:U} ElectLeaders (preferred, unclean) for the partition.</li>
 * </ul>
 * Answer: OK then one token per op, {@code result/partition/brokers}: result is NONE or an error name (an exception's
 * simple class name), for r the new broker epoch, for h {@code fenced,inControlledShutdown,shouldShutDown,caughtUp}
 * as 0/1; partition is {@code leader;leaderEpoch;partitionEpoch;isr;elr;lastKnownElr;replicas;lrs} ('-' before the
 * topic exists; lrs the leader recovery state, 0 RECOVERED, 1 RECOVERING: after an unclean or last-known-leader
 * election); brokers is {@code id:epoch:fenced:inControlledShutdown} joined by ';' ('~' none).
 */
public final class KcheckController {
    private static final String TOPIC = "t";
    private static final String CLUSTER = KcheckControlManagers.CLUSTER_ID;
    private static final long SESSION_NS = KcheckControlManagers.SESSION_TIMEOUT_NS;

    private KcheckController() {
    }

    public static void register(Map<String, KcheckHandler> table) {
        table.put("KC", KcheckController::run);
    }

    // ---- reflection: the managers' entry points are package-private (KcheckControlManagers) ----------------
    private static Method findFor(Class<?> c, String name, Class<?> arg) {
        for (Method m : c.getDeclaredMethods()) {
            Class<?>[] ps = m.getParameterTypes();
            if (m.getName().equals(name) && ps.length >= 1 && ps[0] == arg) {
                m.setAccessible(true);
                return m;
            }
        }
        return null;
    }

    private static Object call(Object target, String name, Object... args) throws Throwable {
        return KcheckControlManagers.call(target, name, args);
    }

    /** One controller: the managers, the log offset, and the replay of what they return. */
    private static final class Controller {
        final Object cluster;
        final Object replication;
        final Object features;
        final Object configs;
        final KcheckClock clock = new KcheckClock();

        {
            clock.now = 1_000_000L;  // ms: contact times one session back stay positive
        }
        long nextOffset = 1;
        final Map<Integer, Integer> incarnations = new HashMap<>();

        Controller(boolean elr) throws Throwable {
            // QuorumFeatures' 4.0+ name: on 3.9 this handler does not compile (its controller lacks the APIs used).
            KcheckControlManagers m = new KcheckControlManagers(clock, QuorumFeatures.defaultSupportedFeatureMap(true),
                null, Integer.MAX_VALUE, elr);
            features = m.features;
            configs = m.configs;
            cluster = m.cluster;
            replication = m.replication;
            call(cluster, "activate");
            List<ApiMessageAndVersion> boot = new ArrayList<>();
            boot.add(new ApiMessageAndVersion(new FeatureLevelRecord().setName(MetadataVersion.FEATURE_NAME)
                .setFeatureLevel(MetadataVersion.latestProduction().featureLevel()), (short) 0));
            if (elr) {
                boot.add(new ApiMessageAndVersion(new FeatureLevelRecord().setName("eligible.leader.replicas.version")
                    .setFeatureLevel((short) 1), (short) 0));
            }
            replay(boot);
        }

        /** Replays a batch at the next offsets; returns the batch's last offset. */
        long replay(List<ApiMessageAndVersion> records) throws Throwable {
            for (ApiMessageAndVersion r : records) {
                ApiMessage m = r.message();
                long offset = nextOffset++;
                boolean done = false;
                for (Object manager : new Object[] {features, configs, cluster, replication}) {
                    Method rm = findFor(manager.getClass(), "replay", m.getClass());
                    if (rm == null) continue;
                    try {
                        if (rm.getParameterCount() == 2) rm.invoke(manager, m, offset);
                        else rm.invoke(manager, m);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                    done = true;
                }
                if (!done) throw new IllegalStateException("no manager replays " + m.getClass().getSimpleName());
            }
            return nextOffset - 1;
        }

        List<ApiMessageAndVersion> records(Object result) throws Throwable {
            @SuppressWarnings("unchecked")
            List<ApiMessageAndVersion> rs = (List<ApiMessageAndVersion>) call(result, "records");
            return rs;
        }

        BrokerRegistration reg(int b) throws Throwable {
            return (BrokerRegistration) call(cluster, "registration", b);
        }

        Uuid topicId() throws Throwable {
            return (Uuid) call(replication, "getTopicId", TOPIC);
        }

        PartitionRegistration partition() throws Throwable {
            Uuid id;
            try {
                id = topicId();
            } catch (Throwable e) {
                return null;
            }
            return id == null ? null : (PartitionRegistration) call(replication, "getPartition", id, 0);
        }

        String register(int b, int inc, long prev) throws Throwable {
            BrokerRegistrationRequestData req = new BrokerRegistrationRequestData().setBrokerId(b)
                .setClusterId(CLUSTER).setIncarnationId(new Uuid(7L, inc + 1L)).setPreviousBrokerEpoch(prev)
                .setLogDirs(List.of(new Uuid(100L + b, 1L)));
            @SuppressWarnings("unchecked")
            Map<String, Short> finalized = new HashMap<>(((FinalizedControllerFeatures) call(features,
                "finalizedFeatures", Long.MAX_VALUE)).featureMap());
            for (Map.Entry<String, Short> f : finalized.entrySet()) {
                req.features().add(new BrokerRegistrationRequestData.Feature().setName(f.getKey())
                    .setMinSupportedVersion((short) 0).setMaxSupportedVersion((short) Math.max(f.getValue(), 1)));
            }
            if (!finalized.containsKey(MetadataVersion.FEATURE_NAME)) {
                req.features().add(new BrokerRegistrationRequestData.Feature().setName(MetadataVersion.FEATURE_NAME)
                    .setMinSupportedVersion((short) 1).setMaxSupportedVersion(MetadataVersion.latestProduction()
                        .featureLevel()));
            }
            long epoch = nextOffset;
            Object result = call(cluster, "registerBroker", req, epoch,
                new FinalizedControllerFeatures(finalized, Long.MAX_VALUE), true);
            replay(records(result));
            incarnations.put(b, inc);
            return Long.toString(((org.apache.kafka.metadata.BrokerRegistrationReply) call(result, "response")).epoch());
        }

        long previousEpoch(String[] f) throws Throwable {
            if (!f[3].equals("*")) return Long.parseLong(f[3]);
            BrokerRegistration r = reg(Integer.parseInt(f[1]));
            return r == null ? -1 : r.epoch();
        }

        /** stale: the heartbeat of an older incarnation (an epoch below the registration's), as a request the
         * broker sent before it bounced would carry. */
        String heartbeat(int b, boolean wantFence, boolean wantShutDown, String off, boolean stale) throws Throwable {
            BrokerRegistration r = reg(b);
            long epoch = r == null ? -1 : stale ? r.epoch() - 1 : r.epoch();
            long offset = off.equals("*") ? nextOffset - 1 : Long.parseLong(off);
            if (!stale) call(cluster, "trackBrokerHeartbeat", b, epoch);
            OptionalLong regOffset = (OptionalLong) call(cluster, "registerBrokerRecordOffset", b);
            if (regOffset.isEmpty()) return "StaleBrokerEpochException";
            BrokerHeartbeatRequestData req = new BrokerHeartbeatRequestData().setBrokerId(b).setBrokerEpoch(epoch)
                .setCurrentMetadataOffset(offset).setWantFence(wantFence).setWantShutDown(wantShutDown);
            Object result = call(replication, "processBrokerHeartbeat", req, regOffset.getAsLong());
            long end = replay(records(result));
            BrokerHeartbeatReply reply = (BrokerHeartbeatReply) call(result, "response");
            if (reply.inControlledShutdown()) {
                call(call(cluster, "heartbeatManager"), "maybeUpdateControlledShutdownOffset", b, end);
            }
            return bit(reply.isFenced()) + "," + bit(reply.inControlledShutdown()) + "," + bit(reply.shouldShutDown())
                + "," + bit(reply.isCaughtUp());
        }

        /** B's session lapses: its last contact is put one session timeout back, then the controller's periodic
         * maybeFenceOneStaleBroker runs (the only broker it can find expired is B). */
        String expire(int b) throws Throwable {
            BrokerRegistration r = reg(b);
            if (r == null) return "BrokerIdNotRegisteredException";
            Object tracker = call(call(cluster, "heartbeatManager"), "tracker");
            Constructor<?> idAndEpoch = Class.forName("org.apache.kafka.controller.BrokerIdAndEpoch")
                .getDeclaredConstructor(int.class, long.class);
            idAndEpoch.setAccessible(true);
            call(tracker, "updateContactTime", idAndEpoch.newInstance(b, r.epoch()),
                clock.nanoseconds() - SESSION_NS - 1);
            Object result = call(replication, "maybeFenceOneStaleBroker");
            replay(records(result));
            return records(result).isEmpty() ? "NOTHING" : "NONE";
        }

        String createTopic(List<Integer> replicas, int minIsr, boolean unclean) throws Throwable {
            CreateTopicsRequestData.CreatableTopic topic = new CreateTopicsRequestData.CreatableTopic().setName(TOPIC)
                .setNumPartitions(-1).setReplicationFactor((short) -1);
            topic.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment().setPartitionIndex(0)
                .setBrokerIds(replicas));
            topic.configs().add(new CreateTopicsRequestData.CreatableTopicConfig().setName("min.insync.replicas")
                .setValue(Integer.toString(minIsr)));
            topic.configs().add(new CreateTopicsRequestData.CreatableTopicConfig()
                .setName("unclean.leader.election.enable").setValue(Boolean.toString(unclean)));
            CreateTopicsRequestData req = new CreateTopicsRequestData();
            req.topics().add(topic);
            // A fourth argument (a boolean) joined createTopics after 4.1: one source for both.
            Object result = createTopics4 == null
                ? call(replication, "createTopics", context(ApiKeys.CREATE_TOPICS), req, Set.of(TOPIC))
                : call(replication, "createTopics", context(ApiKeys.CREATE_TOPICS), req, Set.of(TOPIC), false);
            CreateTopicsResponseData resp = (CreateTopicsResponseData) call(result, "response");
            short code = resp.topics().find(TOPIC).errorCode();
            if (code == Errors.NONE.code()) replay(records(result));
            return Errors.forCode(code).name();
        }

        String alterPartition(int b, String epochTok, int le, int pe, List<Integer> isr, String epochs)
                throws Throwable {
            BrokerRegistration r = reg(b);
            long epoch = epochTok.equals("*") ? (r == null ? -1 : r.epoch()) : Long.parseLong(epochTok);
            Map<Integer, String> eps = new HashMap<>();
            if (!epochs.equals("*")) {
                for (String e : epochs.split(",")) {
                    String[] kv = e.split("\\.");
                    eps.put(Integer.parseInt(kv[0]), kv[1]);
                }
            }
            AlterPartitionRequestData.PartitionData pd = new AlterPartitionRequestData.PartitionData()
                .setPartitionIndex(0).setLeaderEpoch(le).setPartitionEpoch(pe).setLeaderRecoveryState((byte) 0);
            for (int i = 0; i < isr.size(); i++) {
                int m = isr.get(i);
                BrokerRegistration mr = reg(m);
                long registered = mr == null ? -1 : mr.epoch();
                String how = eps.getOrDefault(m, "r");
                long e = how.equals("r") ? registered : how.equals("s") ? registered - 1 : how.equals("n") ? -1
                    : Long.parseLong(how);
                pd.newIsrWithEpochs().add(new AlterPartitionRequestData.BrokerState().setBrokerId(m).setBrokerEpoch(e));
            }
            AlterPartitionRequestData.TopicData td = new AlterPartitionRequestData.TopicData().setTopicId(topicId());
            td.partitions().add(pd);
            AlterPartitionRequestData req = new AlterPartitionRequestData().setBrokerId(b).setBrokerEpoch(epoch);
            req.topics().add(td);
            Object result = call(replication, "alterPartition", context(ApiKeys.ALTER_PARTITION), req);
            replay(records(result));
            AlterPartitionResponseData resp = (AlterPartitionResponseData) call(result, "response");
            if (resp.errorCode() != 0) return Errors.forCode(resp.errorCode()).name();
            return Errors.forCode(resp.topics().get(0).partitions().get(0).errorCode()).name();
        }

        String elect(boolean unclean) throws Throwable {
            ElectLeadersRequestData req = new ElectLeadersRequestData().setElectionType((byte) (unclean ? 1 : 0));
            ElectLeadersRequestData.TopicPartitions tp = new ElectLeadersRequestData.TopicPartitions().setTopic(TOPIC)
                .setPartitions(List.of(0));
            req.topicPartitions().add(tp);
            Object result = call(replication, "electLeaders", req);
            replay(records(result));
            ElectLeadersResponseData resp = (ElectLeadersResponseData) call(result, "response");
            return Errors.forCode(resp.replicaElectionResults().get(0).partitionResult().get(0).errorCode()).name();
        }

        String state() throws Throwable {
            StringBuilder out = new StringBuilder();
            PartitionRegistration p = partition();
            if (p == null) {
                out.append('-');
            } else {
                out.append(p.leader).append(';').append(p.leaderEpoch).append(';').append(p.partitionEpoch);
                for (int[] xs : new int[][] {p.isr, p.elr, p.lastKnownElr, p.replicas}) {
                    out.append(';');
                    List<Integer> l = new ArrayList<>();
                    for (int x : xs) l.add(x);
                    KcheckCodec.joinIntsToken(out, l);
                }
                out.append(';').append(p.leaderRecoveryState.value());
            }
            out.append('/');
            @SuppressWarnings("unchecked")
            Map<Integer, BrokerRegistration> regs = (Map<Integer, BrokerRegistration>) call(cluster, "brokerRegistrations");
            List<Integer> ids = new ArrayList<>(regs.keySet());
            java.util.Collections.sort(ids);
            if (ids.isEmpty()) out.append('~');
            String sep = "";
            for (int id : ids) {
                BrokerRegistration r = regs.get(id);
                out.append(sep).append(id).append(':').append(r.epoch()).append(':').append(bit(r.fenced()))
                    .append(':').append(bit(r.inControlledShutdown()));
                sep = ";";
            }
            return out.toString();
        }
    }

    private static final Method createTopics4 = optional("ReplicationControlManager", "createTopics", 4);

    private static Method optional(String cls, String name, int arity) {
        try {
            return KcheckControlManagers.find(Class.forName(KcheckControlManagers.PACKAGE + cls), name, arity);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    private static String bit(boolean b) {
        return b ? "1" : "0";
    }

    private static ControllerRequestContext context(ApiKeys key) {
        return new ControllerRequestContext(new RequestHeaderData().setRequestApiKey(key.id)
            .setRequestApiVersion(key.latestVersion()), KafkaPrincipal.ANONYMOUS, OptionalLong.empty());
    }

    /** 'I' the partition's ISR, 'I+3' with broker 3 added (at the end), 'I-3' without it; else an int list. */
    private static List<Integer> isr(String tok, PartitionRegistration p) {
        if (!tok.startsWith("I")) return KcheckCodec.ints(tok);
        List<Integer> out = new ArrayList<>();
        if (p != null) for (int b : p.isr) out.add(b);
        if (tok.length() > 1) {
            Integer b = Integer.parseInt(tok.substring(2));
            if (tok.charAt(1) == '+') {
                if (!out.contains(b)) out.add(b);
            } else {
                out.remove(b);
            }
        }
        return out;
    }

    /** 'c' the current value, 'c-1' or 'c+2' relative to it, else a number. */
    private static int relative(String tok, int current) {
        if (!tok.startsWith("c")) return Integer.parseInt(tok);
        return tok.length() == 1 ? current : current + Integer.parseInt(tok.substring(1));
    }

    private static String run(String[] t) throws Throwable {
        boolean elr = t[1].equals("1");
        int minIsr = Integer.parseInt(t[2]);
        boolean unclean = t[3].equals("1");
        Controller c = new Controller(elr);
        StringBuilder out = new StringBuilder("OK");
        for (int i = 4; i < t.length; i++) {
            String[] f = t[i].split(":", -1);
            String result;
            try {
                switch (f[0]) {
                    case "r":
                        result = c.register(Integer.parseInt(f[1]), Integer.parseInt(f[2]), c.previousEpoch(f));
                        break;
                    case "h":
                        result = c.heartbeat(Integer.parseInt(f[1]), f[2].equals("1"), f[3].equals("1"), f[4],
                            f.length > 5 && f[5].equals("s"));
                        break;
                    case "x":
                        result = c.expire(Integer.parseInt(f[1]));
                        break;
                    case "t":
                        result = c.createTopic(KcheckCodec.ints(f[1]), minIsr, unclean);
                        break;
                    case "a": {
                        PartitionRegistration p = c.partition();
                        int from = f[1].equals("L") ? (p == null ? -1 : p.leader) : Integer.parseInt(f[1]);
                        result = c.alterPartition(from, f[2], relative(f[3], p == null ? 0 : p.leaderEpoch),
                            relative(f[4], p == null ? 0 : p.partitionEpoch), isr(f[5], p), f[6]);
                        break;
                    }
                    case "e":
                        result = c.elect(f[1].equals("U"));
                        break;
                    default:
                        throw new IllegalArgumentException("unknown op " + t[i]);
                }
            } catch (IllegalArgumentException e) {
                throw e;
            } catch (Throwable e) {
                result = e.getClass().getSimpleName();
            }
            out.append(' ').append(result).append('/').append(c.state());
        }
        return out.toString();
    }
}
