import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import kafka.api.LeaderAndIsr;
import kafka.cluster.Broker;
import kafka.cluster.EndPoint;
import kafka.controller.ControllerContext;
import kafka.controller.Election;
import kafka.controller.ElectionResult;
import kafka.controller.PartitionLeaderElectionAlgorithms;
import kafka.controller.ReplicaAssignment;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.metadata.LeaderRecoveryState;

import scala.Option;
import scala.Tuple2;
import scala.Tuple3;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The ZooKeeper controller's leader elections (Kafka 3.x: kafka_2.13 on the class path; the handler is
 * left out of 4.x, which has no ZooKeeper controller).
 *
 *   ZA <o|r|p|c> <replicas> <isr> <liveReplicas> [<unclean 0|1> for o | <shuttingDown> for c]
 *     PartitionLeaderElectionAlgorithms: offline, reassign, preferred replica, controlled shutdown
 *     (int lists as in ints(); the ISR is a Seq and may repeat or name non-replicas, live is a Set).
 *     Answer: OK <leader|-> <unclean 0|1>  (unclean: the controller's unclean-election meter moved).
 *   ZE <o|r|p|c> <unclean 0|1> <leaderRecoverySupported 0|1> <replicas> <adding> <removing> <live>
 *      <shuttingDown> <offlineDir> <leaderAndIsr|->
 *     Election.leaderFor{Offline,Reassign,PreferredReplica,ControlledShutdown} for one partition t-0 on
 *     a ControllerContext whose full assignment is ReplicaAssignment(replicas, adding, removing), whose
 *     live brokers (liveBrokerEpochs) are `live`, shuttingDownBrokerIds `shuttingDown`, and where the
 *     partition's replicas on the brokers in `offlineDir` are on offline log dirs. The two flags are
 *     read for o only; leaderAndIsr = <leader>/<leaderEpoch>/<isr>/<leaderRecoveryState>/<partitionEpoch>
 *     ('-': no state in ZooKeeper, offline only).
 *     Answer: OK <leaderAndIsr|-> <liveReplicas> <unclean 0|1>.
 */
public final class KcheckZkElection {
    private static final ControllerContext CONTEXT = new ControllerContext();
    private static final TopicPartition TP = new TopicPartition("t", 0);

    private KcheckZkElection() {
    }

    public static void register(Map<String, KcheckHandler> table) {
        table.put("ZA", KcheckZkElection::algorithm);
        table.put("ZE", KcheckZkElection::election);
    }

    private static scala.collection.Seq<Object> seq(String tok) {
        List<Object> xs = new ArrayList<>(KcheckCodec.ints(tok));
        return CollectionConverters.asScala(xs).toList();
    }

    private static scala.collection.immutable.List<Object> list(String tok) {
        List<Object> xs = new ArrayList<>(KcheckCodec.ints(tok));
        return CollectionConverters.asScala(xs).toList();
    }

    private static scala.collection.immutable.Set<Object> set(String tok) {
        Set<Object> xs = new HashSet<>(KcheckCodec.ints(tok));
        return CollectionConverters.asScala(xs).toSet();
    }

    private static long uncleanCount() {
        return CONTEXT.stats().uncleanLeaderElectionRate().count();
    }

    private static String algorithm(String[] t) {
        long before = uncleanCount();
        scala.collection.Seq<Object> replicas = seq(t[2]);
        scala.collection.Seq<Object> isr = seq(t[3]);
        scala.collection.immutable.Set<Object> live = set(t[4]);
        Option<Object> leader;
        switch (t[1]) {
            case "o":
                leader = PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection(replicas, isr, live,
                    t[5].equals("1"), CONTEXT);
                break;
            case "r":
                leader = PartitionLeaderElectionAlgorithms.reassignPartitionLeaderElection(replicas, isr, live);
                break;
            case "p":
                leader = PartitionLeaderElectionAlgorithms.preferredReplicaPartitionLeaderElection(replicas, isr, live);
                break;
            case "c":
                leader = PartitionLeaderElectionAlgorithms.controlledShutdownPartitionLeaderElection(replicas, isr,
                    live, set(t[5]));
                break;
            default:
                throw new IllegalArgumentException("unknown election " + t[1]);
        }
        return "OK " + (leader.isEmpty() ? "-" : String.valueOf(leader.get())) + " "
            + (uncleanCount() > before ? 1 : 0);
    }

    private static String election(String[] t) {
        String kind = t[1];
        boolean unclean = t[2].equals("1");
        boolean recovery = t[3].equals("1");
        CONTEXT.updatePartitionFullReplicaAssignment(TP, ReplicaAssignment.apply(seq(t[4]), seq(t[5]), seq(t[6])));
        Map<Broker, Object> live = new HashMap<>();
        for (int id : KcheckCodec.ints(t[7])) {
            live.put(Broker.apply(id, CollectionConverters.asScala(new ArrayList<EndPoint>()).toList(), Option.empty()),
                     100L + id);
        }
        CONTEXT.setLiveBrokers(CollectionConverters.asScala(live));
        CONTEXT.shuttingDownBrokerIds().clear();
        for (int id : KcheckCodec.ints(t[8])) CONTEXT.shuttingDownBrokerIds().add(id);
        CONTEXT.replicasOnOfflineDirs().clear();
        Set<TopicPartition> one = new HashSet<>();
        one.add(TP);
        for (int id : KcheckCodec.ints(t[9])) {
            CONTEXT.replicasOnOfflineDirs().put(id, CollectionConverters.asScala(one).toSet());
        }
        LeaderAndIsr current = null;
        if (!t[10].equals("-")) {
            String[] p = t[10].split("/", -1);
            current = LeaderAndIsr.apply(Integer.parseInt(p[0]), Integer.parseInt(p[1]), list(p[2]),
                LeaderRecoveryState.of(Byte.parseByte(p[3])), Integer.parseInt(p[4]));
        }
        long before = uncleanCount();
        scala.collection.Seq<ElectionResult> results;
        if (kind.equals("o")) {
            List<Tuple3<TopicPartition, Option<LeaderAndIsr>, Object>> in = new ArrayList<>();
            in.add(new Tuple3<>(TP, Option.apply(current), unclean));
            results = Election.leaderForOffline(CONTEXT, recovery, CollectionConverters.asScala(in));
        } else {
            if (current == null) throw new IllegalArgumentException("a " + kind + " election needs a leaderAndIsr");
            List<Tuple2<TopicPartition, LeaderAndIsr>> in = new ArrayList<>();
            in.add(new Tuple2<>(TP, current));
            scala.collection.Seq<Tuple2<TopicPartition, LeaderAndIsr>> s = CollectionConverters.asScala(in);
            switch (kind) {
                case "r":
                    results = Election.leaderForReassign(CONTEXT, s);
                    break;
                case "p":
                    results = Election.leaderForPreferredReplica(CONTEXT, s);
                    break;
                case "c":
                    results = Election.leaderForControlledShutdown(CONTEXT, s);
                    break;
                default:
                    throw new IllegalArgumentException("unknown election " + kind);
            }
        }
        ElectionResult r = results.head();
        StringBuilder out = new StringBuilder("OK ");
        if (r.leaderAndIsr().isEmpty()) {
            out.append('-');
        } else {
            LeaderAndIsr l = r.leaderAndIsr().get();
            out.append(l.leader()).append('/').append(l.leaderEpoch()).append('/');
            ints(out, l.isr());
            out.append('/').append(l.leaderRecoveryState().value()).append('/').append(l.partitionEpoch());
        }
        out.append(' ');
        ints(out, r.liveReplicas());
        out.append(' ').append(uncleanCount() > before ? 1 : 0);
        return out.toString();
    }

    private static void ints(StringBuilder out, scala.collection.Seq<Object> xs) {
        List<Integer> java = new ArrayList<>();
        for (Object x : CollectionConverters.asJava(xs)) java.add((Integer) x);
        KcheckCodec.joinIntsToken(out, java);
    }
}
