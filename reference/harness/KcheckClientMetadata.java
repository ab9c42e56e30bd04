import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

import org.apache.kafka.clients.Metadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.internals.ClusterResourceListeners;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponseBroker;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponsePartition;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponseTopic;
import org.apache.kafka.common.requests.MetadataResponse;

/**
 * The client's metadata cache, kafka-clients' org.apache.kafka.clients.Metadata (every release), driven call by call
 * on one fresh instance: MetadataResponses built from MetadataResponseData at a chosen version, the KIP-320 epoch
 * calls and KIP-951's leader hints (reference/client_metadata.py). LogContext moved to common.utils.internals in 4.4:
 * the constructor is found by reflection.
 *
 * CMETA refreshBackoffMs refreshBackoffMaxMs metadataExpireMs op...
 *   uVERSION:NOW:PARTIAL:REQUESTVERSION|NODES|TOPIC|TOPIC...  update(requestVersion, response, partial, now) with a
 *       response of that version: NODES broker ids joined by ',' ('~' none; host h<id>, port 9092, no rack); TOPIC
 *       NAME/ID/ERROR/INTERNAL/PARTITIONS, ID 0 for Uuid.ZERO_UUID or k for Uuid(0, k), PARTITIONS
 *       INDEX.ERROR.LEADER.EPOCH joined by ';' ('~' none; LEADER and EPOCH -1 for none)
 *   eTOPIC.P.EPOCH                  updateLastSeenEpochIfNewer
 *   hHINT;HINT|NODES                updatePartitionLeadership, HINT TOPIC.P.LEADER.EPOCH (-1 for an empty Optional)
 *   rRESET                          requestUpdate(RESET 0|1)
 *   n                               requestUpdateForNewTopics()
 *   fNOW                            failedUpdate(now)
 *   wNOW                            timeToNextUpdate(now)
 * Answer: OK then per op RET/STATE: RET the call's result ('-' for void; a boolean 1|0; the updated partitions of a
 * hint as TOPIC.P joined by ',', '~' none; E<exception simple name>); STATE updateRequested(1|0), the cached topic ids
 * as TOPIC=k joined by ',', the cached node ids joined by ',', then for topics a and b, partitions 0 to 2,
 * currentLeader's node id and epoch and lastSeenLeaderEpoch ('-' for empty), all joined by ':' ('~' for an empty list).
 */
public final class KcheckClientMetadata {
    private static final String[] TOPICS = {"a", "b"};
    private static final int PARTITIONS = 3;
    private static Constructor<?> constructor;
    private static Object logContext;

    private KcheckClientMetadata() {
    }

    public static void register(Map<String, KcheckHandler> table) throws ReflectiveOperationException {
        for (Constructor<?> c : Metadata.class.getConstructors()) {
            if (c.getParameterCount() == 5) constructor = c;
        }
        logContext = constructor.getParameterTypes()[3].getConstructor().newInstance();
        table.put("CMETA", KcheckClientMetadata::handle);
    }

    private static String handle(String[] t) throws ReflectiveOperationException {
        Metadata m = (Metadata) constructor.newInstance(Long.parseLong(t[1]), Long.parseLong(t[2]),
                                                        Long.parseLong(t[3]), logContext, new ClusterResourceListeners());
        StringBuilder out = new StringBuilder("OK");
        for (int i = 4; i < t.length; i++) {
            String ret;
            try {
                ret = call(m, t[i]);
            } catch (RuntimeException e) {
                ret = "E" + e.getClass().getSimpleName();
            }
            out.append(' ').append(ret).append('/');
            state(out, m);
        }
        return out.toString();
    }

    private static String call(Metadata m, String op) {
        String arg = op.substring(1);
        switch (op.charAt(0)) {
            case 'u': {
                String[] parts = arg.split("\\|", -1);
                String[] head = parts[0].split(":");
                short version = Short.parseShort(head[0]);
                m.update(Integer.parseInt(head[3]), response(version, parts), head[2].equals("1"),
                         Long.parseLong(head[1]));
                return "-";
            }
            case 'e': {
                String[] f = arg.split("\\.");
                return m.updateLastSeenEpochIfNewer(new TopicPartition(f[0], Integer.parseInt(f[1])),
                                                    Integer.parseInt(f[2])) ? "1" : "0";
            }
            case 'h': {
                String[] parts = arg.split("\\|", -1);
                Map<TopicPartition, Metadata.LeaderIdAndEpoch> hints = new HashMap<>();
                if (!parts[0].equals("~")) {
                    for (String h : parts[0].split(";")) {
                        String[] f = h.split("\\.");
                        hints.put(new TopicPartition(f[0], Integer.parseInt(f[1])),
                                  new Metadata.LeaderIdAndEpoch(optional(f[2]), optional(f[3])));
                    }
                }
                List<Node> nodes = new ArrayList<>();
                for (int id : ids(parts[1])) nodes.add(new Node(id, "h" + id, 9092));
                TreeSet<String> updated = new TreeSet<>();
                for (TopicPartition tp : m.updatePartitionLeadership(hints, nodes)) updated.add(tp.toString());
                return updated.isEmpty() ? "~" : String.join(",", updated);
            }
            case 'r':
                return Integer.toString(m.requestUpdate(arg.equals("1")));
            case 'n':
                return Integer.toString(m.requestUpdateForNewTopics());
            case 'f':
                m.failedUpdate(Long.parseLong(arg));
                return "-";
            case 'w':
                return Long.toString(m.timeToNextUpdate(Long.parseLong(arg)));
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private static Optional<Integer> optional(String token) {
        int v = Integer.parseInt(token);
        return v == -1 ? Optional.empty() : Optional.of(v);
    }

    private static List<Integer> ids(String token) {
        List<Integer> out = new ArrayList<>();
        if (!token.equals("~")) {
            for (String s : token.split(",")) out.add(Integer.parseInt(s));
        }
        return out;
    }

    private static MetadataResponse response(short version, String[] parts) {
        MetadataResponseData data = new MetadataResponseData().setClusterId("c").setControllerId(-1);
        for (int id : ids(parts[1])) {
            data.brokers().add(new MetadataResponseBroker().setNodeId(id).setHost("h" + id).setPort(9092));
        }
        for (int i = 2; i < parts.length; i++) {
            String[] f = parts[i].split("/", -1);
            long id = Long.parseLong(f[1]);
            MetadataResponseTopic topic = new MetadataResponseTopic().setName(f[0])
                .setTopicId(id == 0 ? Uuid.ZERO_UUID : new Uuid(0L, id))
                .setErrorCode(Short.parseShort(f[2])).setIsInternal(f[3].equals("1"));
            if (!f[4].equals("~")) {
                for (String p : f[4].split(";")) {
                    String[] g = p.split("\\.");
                    int leader = Integer.parseInt(g[2]);
                    topic.partitions().add(new MetadataResponsePartition().setPartitionIndex(Integer.parseInt(g[0]))
                        .setErrorCode(Short.parseShort(g[1])).setLeaderId(leader)
                        .setLeaderEpoch(Integer.parseInt(g[3]))
                        .setReplicaNodes(leader < 0 ? List.of() : List.of(leader))
                        .setIsrNodes(leader < 0 ? List.of() : List.of(leader)));
                }
            }
            data.topics().add(topic);
        }
        return new MetadataResponse(data, version);
    }

    private static void state(StringBuilder out, Metadata m) {
        out.append(m.updateRequested() ? 1 : 0).append(':');
        TreeSet<String> ids = new TreeSet<>();
        m.topicIds().forEach((name, id) -> ids.add(name + "=" + id.getLeastSignificantBits()));
        out.append(ids.isEmpty() ? "~" : String.join(",", ids)).append(':');
        TreeSet<Integer> nodes = new TreeSet<>();
        for (Node n : m.fetch().nodes()) nodes.add(n.id());
        StringBuilder ns = new StringBuilder();
        for (int id : nodes) ns.append(ns.length() == 0 ? "" : ",").append(id);
        out.append(ns.length() == 0 ? "~" : ns);
        for (String topic : TOPICS) {
            for (int p = 0; p < PARTITIONS; p++) {
                TopicPartition tp = new TopicPartition(topic, p);
                Metadata.LeaderAndEpoch le = m.currentLeader(tp);
                out.append(':').append(le.leader.map(n -> Integer.toString(n.id())).orElse("-"))
                   .append('.').append(le.epoch.map(String::valueOf).orElse("-"))
                   .append('.').append(m.lastSeenLeaderEpoch(tp).map(String::valueOf).orElse("-"));
            }
        }
    }
}
