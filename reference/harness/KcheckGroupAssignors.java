import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberSubscription;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;

/**
 * KIP-848 server-side assignors (request G): any ConsumerGroupPartitionAssignor with a public no-arg
 * constructor, loaded by name (Kafka's UniformAssignor and RangeAssignor, or a user's class on the
 * bridge's classpath), a fresh instance per request.
 *
 * <pre>
 * G &lt;class&gt; &lt;HOMOGENEOUS|HETEROGENEOUS&gt; &lt;nTopics&gt; (&lt;topicId&gt; &lt;count&gt; &lt;racks&gt; &lt;assigned&gt;)*nTopics &lt;member&gt;...
 *   class    text token (KcheckCodec.text) of the assignor's class name
 *   topicId  Uuid.toString(); every topic id of the request, referred to below by its index
 *   count    what SubscribedTopicDescriber.numPartitions answers (-1: not in the metadata)
 *   racks    racksForPartition: '~', or partition=rack,rack;partition=rack (racks as text tokens)
 *   assigned the partitions GroupSpec.isPartitionAssigned answers true for: '~' or p,p,p
 *   member   id/rack/instanceId/subscribed/assignment; id, rack and instance id as text tokens,
 *            subscribed = topic indices ('~' if none), assignment = '~' or topic=p,p;topic=p
 * Answer: OK (memberId:assignment)... with assignment '~' or topicId=p,p;topicId=p (p list '~' if empty).
 *
 * GH ...  the same, in the group coordinator's collections instead of the request's order: the members
 *         put into a HashMap in the order given (TargetAssignmentBuilder), each assignment a HashMap of
 *         HashSets copied from the lists given (Assignment.fromRecord); subscriptions stay as given.
 * </pre>
 *
 * The harness implements Kafka's GroupSpec, MemberSubscription, MemberAssignment and
 * SubscribedTopicDescriber interfaces itself (the same in 4.0 to 4.4; 4.1 added
 * GroupSpec.isPartitionAssignable, for share groups, answered true here) and keeps every order the
 * request gives: members (memberIds()), subscribed topic ids, assignment topics and partitions. A
 * member's assignment map is unmodifiable, as the group coordinator's is (the uniform assignor refuses
 * a mutable one).
 */
public final class KcheckGroupAssignors {
    private static final Map<String, Constructor<?>> CONSTRUCTORS = new HashMap<>();

    private KcheckGroupAssignors() {
    }

    public static void register(Map<String, KcheckHandler> table) {
        table.put("G", t -> assign(t, false));
        table.put("GH", t -> assign(t, true));
    }

    private static ConsumerGroupPartitionAssignor newAssignor(String name) throws Throwable {
        Constructor<?> ctor = CONSTRUCTORS.get(name);
        if (ctor == null) {
            Class<?> cls = Class.forName(name);
            if (!ConsumerGroupPartitionAssignor.class.isAssignableFrom(cls)) {
                throw new IllegalArgumentException(name + " does not implement "
                                                   + ConsumerGroupPartitionAssignor.class.getName());
            }
            ctor = cls.getConstructor();
            CONSTRUCTORS.put(name, ctor);
        }
        try {
            return (ConsumerGroupPartitionAssignor) ctor.newInstance();
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    static final class Member implements MemberSubscription, MemberAssignment {
        final Optional<String> rack;
        final Optional<String> instance;
        final Set<Uuid> topics;
        final Map<Uuid, Set<Integer>> partitions;

        Member(Optional<String> rack, Optional<String> instance, Set<Uuid> topics, Map<Uuid, Set<Integer>> partitions) {
            this.rack = rack;
            this.instance = instance;
            this.topics = topics;
            this.partitions = partitions;
        }

        @Override
        public Optional<String> rackId() {
            return rack;
        }

        @Override
        public Optional<String> instanceId() {
            return instance;
        }

        @Override
        public Set<Uuid> subscribedTopicIds() {
            return topics;
        }

        @Override
        public Map<Uuid, Set<Integer>> partitions() {
            return partitions;
        }
    }

    static final class Spec implements GroupSpec {
        final Map<String, Member> members;
        final SubscriptionType type;
        final Map<Uuid, Set<Integer>> assigned;

        Spec(Map<String, Member> members, SubscriptionType type, Map<Uuid, Set<Integer>> assigned) {
            this.members = members;
            this.type = type;
            this.assigned = assigned;
        }

        @Override
        public Collection<String> memberIds() {
            return Collections.unmodifiableSet(members.keySet());
        }

        @Override
        public SubscriptionType subscriptionType() {
            return type;
        }

        @Override
        public boolean isPartitionAssigned(Uuid topicId, int partitionId) {
            Set<Integer> ps = assigned.get(topicId);
            return ps != null && ps.contains(partitionId);
        }

        // GroupSpec since 4.1 (share groups); a plain method where the interface lacks it.
        public boolean isPartitionAssignable(Uuid topicId, int partitionId) {
            return true;
        }

        @Override
        public MemberSubscription memberSubscription(String memberId) {
            Member m = members.get(memberId);
            if (m == null) throw new IllegalArgumentException("Member Id " + memberId + " not found.");
            return m;
        }

        @Override
        public MemberAssignment memberAssignment(String memberId) {
            Member m = members.get(memberId);
            if (m == null) return Collections::emptyMap;
            return m;
        }
    }

    static final class Describer implements SubscribedTopicDescriber {
        final Map<Uuid, Integer> counts;
        final Map<Uuid, Map<Integer, Set<String>>> racks;

        Describer(Map<Uuid, Integer> counts, Map<Uuid, Map<Integer, Set<String>>> racks) {
            this.counts = counts;
            this.racks = racks;
        }

        @Override
        public int numPartitions(Uuid topicId) {
            Integer n = counts.get(topicId);
            return n == null ? -1 : n;
        }

        @Override
        public Set<String> racksForPartition(Uuid topicId, int partition) {
            Map<Integer, Set<String>> byPartition = racks.get(topicId);
            Set<String> out = byPartition == null ? null : byPartition.get(partition);
            return out == null ? Collections.emptySet() : out;
        }
    }

    private static Set<Integer> intSet(String tok, boolean hashed) {
        List<Integer> ps = KcheckCodec.ints(tok);
        return hashed ? new HashSet<>(ps) : Collections.unmodifiableSet(new LinkedHashSet<>(ps));
    }

    private static String assign(String[] t, boolean hashed) throws Throwable {
        ConsumerGroupPartitionAssignor assignor = newAssignor(KcheckCodec.text(t[1]));
        SubscriptionType type = SubscriptionType.valueOf(t[2]);
        int nTopics = Integer.parseInt(t[3]);
        Uuid[] ids = new Uuid[nTopics];
        Map<Uuid, Integer> counts = new HashMap<>();
        Map<Uuid, Map<Integer, Set<String>>> racks = new HashMap<>();
        Map<Uuid, Set<Integer>> assigned = new HashMap<>();
        int i = 4;
        for (int k = 0; k < nTopics; k++, i += 4) {
            Uuid id = Uuid.fromString(t[i]);
            ids[k] = id;
            int count = Integer.parseInt(t[i + 1]);
            if (count != -1) counts.put(id, count);
            if (!t[i + 2].equals("~")) {
                Map<Integer, Set<String>> byPartition = new HashMap<>();
                for (String entry : t[i + 2].split(";")) {
                    int eq = entry.indexOf('=');
                    Set<String> rs = new LinkedHashSet<>();
                    for (String r : entry.substring(eq + 1).split(",")) rs.add(KcheckCodec.text(r));
                    byPartition.put(Integer.parseInt(entry.substring(0, eq)), Collections.unmodifiableSet(rs));
                }
                racks.put(id, byPartition);
            }
            if (!t[i + 3].equals("~")) assigned.put(id, new HashSet<>(KcheckCodec.ints(t[i + 3])));
        }
        Map<String, Member> members = hashed ? new HashMap<>() : new LinkedHashMap<>();
        for (; i < t.length; i++) {
            String[] p = t[i].split("/", -1);
            Set<Uuid> topics = new LinkedHashSet<>();
            for (int k : KcheckCodec.ints(p[3])) topics.add(ids[k]);
            Map<Uuid, Set<Integer>> partitions = hashed ? new HashMap<>() : new LinkedHashMap<>();
            if (!p[4].equals("~")) {
                for (String entry : p[4].split(";")) {
                    int eq = entry.indexOf('=');
                    partitions.put(ids[Integer.parseInt(entry.substring(0, eq))], intSet(entry.substring(eq + 1), hashed));
                }
            }
            members.put(KcheckCodec.text(p[0]), new Member(KcheckCodec.rack(p[1]), Optional.ofNullable(KcheckCodec.text(p[2])),
                Collections.unmodifiableSet(topics), Collections.unmodifiableMap(partitions)));
        }
        Spec spec = new Spec(members, type, assigned);
        Describer describer = new Describer(counts, racks);
        KcheckTimer.begin();
        GroupAssignment result = assignor.assign(spec, describer);
        KcheckTimer.end();
        StringBuilder out = new StringBuilder("OK");
        for (Map.Entry<String, MemberAssignment> e : result.members().entrySet()) {
            out.append(' ').append(KcheckCodec.encodeText(e.getKey())).append(':');
            Map<Uuid, Set<Integer>> partitions = e.getValue().partitions();
            if (partitions.isEmpty()) {
                out.append('~');
                continue;
            }
            boolean first = true;
            for (Map.Entry<Uuid, Set<Integer>> tp : partitions.entrySet()) {
                if (!first) out.append(';');
                first = false;
                out.append(tp.getKey()).append('=');
                List<Integer> ps = new ArrayList<>(tp.getValue());
                KcheckCodec.joinIntsToken(out, ps);
            }
        }
        return out.toString();
    }
}
