import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import kafka.cluster.Partition;
import kafka.server.DelayedProduce;
import kafka.server.ProduceMetadata;
import kafka.server.ProducePartitionStatus;
import kafka.server.ReplicaManager;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.requests.ProduceResponse.PartitionResponse;
import org.mockito.Answers;
import org.mockito.MockMakers;
import org.mockito.Mockito;
import org.mockito.invocation.InvocationOnMock;

/**
 * The word DPROD of KcheckDelayedProduce.java (same grammar and answer), for the Scala kafka.server.DelayedProduce of
 * kafka_2.13 (3.9 to 4.2). Its constructor takes the ReplicaManager, whose getPartitionOrError(tp) answers Left(error)
 * or Right(partition), and then Partition.checkEnoughReplicasReachOffset(requiredOffset) answers (hasEnough, error):
 * both are Mockito stand-ins (the subclass mock maker: no constructor run, no agent, no invocation recorded)
 * answering from the script. Up to 4.0 its maps are keyed by TopicPartition and it takes an Option[Lock]; from 4.1 by
 * TopicIdPartition, without the lock: the constructor is found by reflection. Broker jars and Mockito only
 * (KafkaBridge(server=True)).
 */
public final class KcheckDelayedProduceScala {
    private static final List<Partition> PARTITIONS = new ArrayList<>();
    private static KcheckProduceScript current;
    private static ReplicaManager replicaManager;
    private static Constructor<?> constructor;
    private static boolean topicIdKeys;

    private KcheckDelayedProduceScala() {
    }

    public static void register(Map<String, KcheckHandler> table) {
        constructor = DelayedProduce.class.getConstructors()[0];
        topicIdKeys = constructor.getGenericParameterTypes()[3].getTypeName().contains("TopicIdPartition");
        replicaManager = Mockito.mock(ReplicaManager.class, Mockito.withSettings().mockMaker(MockMakers.SUBCLASS)
            .stubOnly().defaultAnswer(KcheckDelayedProduceScala::replicaManagerAnswer));
        table.put("DPROD", KcheckDelayedProduceScala::handle);
    }

    private static Object replicaManagerAnswer(InvocationOnMock inv) throws Throwable {
        if (!inv.getMethod().getName().equals("getPartitionOrError")) return Answers.RETURNS_DEFAULTS.answer(inv);
        int p = ((TopicPartition) inv.getArgument(0)).partition();
        if (current.answers[p].charAt(0) == 'L') {  // recorded with the partition's required offset, as Java's gets it
            return new scala.util.Left<>(current.answer(p, current.required[p])[1]);
        }
        return new scala.util.Right<>(partition(p));
    }

    private static Partition partition(int p) {
        while (PARTITIONS.size() <= p) {
            int index = PARTITIONS.size();
            PARTITIONS.add(Mockito.mock(Partition.class, Mockito.withSettings().mockMaker(MockMakers.SUBCLASS)
                .stubOnly().defaultAnswer(inv -> {
                    if (!inv.getMethod().getName().equals("checkEnoughReplicasReachOffset")) {
                        return Answers.RETURNS_DEFAULTS.answer(inv);
                    }
                    Object[] a = current.answer(index, (Long) inv.getArgument(0));
                    return new scala.Tuple2<>(a[0], a[1]);
                })));
        }
        return PARTITIONS.get(p);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static String handle(String[] t) throws ReflectiveOperationException {
        int n = Integer.parseInt(t[2]);
        KcheckProduceScript script = new KcheckProduceScript(n);
        current = script;
        Map<Object, ProducePartitionStatus> statuses = new LinkedHashMap<>();
        ProducePartitionStatus[] byIndex = new ProducePartitionStatus[n];
        for (int i = 0; i < n; i++) {
            PartitionResponse response = script.partitionResponse(i, t[3 + i]);
            byIndex[i] = new ProducePartitionStatus(script.required[i], response);
            TopicPartition tp = new TopicPartition("t", i);
            statuses.put(topicIdKeys ? new TopicIdPartition(KcheckProduceScript.TOPIC_ID, tp) : tp, byIndex[i]);
        }
        ProduceMetadata metadata = new ProduceMetadata((short) -1,
            (scala.collection.Map) scala.jdk.javaapi.CollectionConverters.asScala(statuses));
        scala.Function1<scala.collection.Map<Object, PartitionResponse>, scala.runtime.BoxedUnit> callback = m -> {
            TreeMap<Integer, PartitionResponse> sorted = new TreeMap<>();
            scala.jdk.javaapi.CollectionConverters.asJava(m).forEach((k, r) -> sorted.put(
                k instanceof TopicIdPartition ? ((TopicIdPartition) k).partition() : ((TopicPartition) k).partition(), r));
            script.callback(sorted);
            return scala.runtime.BoxedUnit.UNIT;
        };
        long delayMs = Long.parseLong(t[1]);
        Object[] args = constructor.getParameterCount() == 5
            ? new Object[] {delayMs, metadata, replicaManager, callback, scala.Option.empty()}
            : new Object[] {delayMs, metadata, replicaManager, callback};
        DelayedProduce op = (DelayedProduce) constructor.newInstance(args);
        return script.drive(new KcheckProduceScript.Operation() {
            public boolean tryComplete() {
                return op.tryComplete();
            }

            public void run() {
                op.run();
            }

            public boolean isCompleted() {
                return op.isCompleted();
            }

            public boolean acksPending(int i) {
                return byIndex[i].acksPending();
            }

            public PartitionResponse response(int i) {
                return byIndex[i].responseStatus();
            }
        }, t, 3 + n);
    }
}
