import java.lang.reflect.Field;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ProduceResponse.PartitionResponse;
import org.apache.kafka.server.purgatory.DelayedProduce;
import org.apache.kafka.server.purgatory.DelayedProduce.PartitionStatusValidator;
import org.apache.kafka.server.purgatory.DelayedProduce.ProducePartitionStatus;

/**
 * The acks=all wait in the produce purgatory, Kafka's Java DelayedProduce (kafka-server's
 * org.apache.kafka.server.purgatory, 4.3 on; KcheckDelayedProduceScala.java drives the Scala class before it),
 * driven directly: created, then tryComplete() (what DelayedOperationPurgatory.checkAndComplete runs) and run()
 * (what the purgatory's timer runs at the deadline), each partition's state answered by a scripted
 * PartitionStatusValidator as ReplicaManager's would answer it (reference/purgatory.py). Broker jars only
 * (KafkaBridge(server=True)).
 *
 * DPROD delayMs n partition*n op...
 *   partition = ERR:BASE:REQUIRED:LSO  partition i (topic "t") after the local append: its error code, base offset,
 *                                      required offset (last offset + 1) and log start offset
 *   tANSWER,ANSWER,...                 tryComplete(); the validator answers partition i with ANSWER i, which is
 *                                      L<code> (ReplicaManager.getPartitionOrError failed: (false, code)) or
 *                                      R<hasEnough 0|1>:<code> (Partition.checkEnoughReplicasReachOffset's answer)
 *   x                                  run(): the deadline passed
 * Answer: OK then, for the creation and each op, RET/VALIDATED/STATE/CALLBACK: RET 1|0 (tryComplete's result) or
 * '-'; VALIDATED the partitions asked about as partition@requiredOffset, sorted ('~' none); STATE
 * completed(1|0):callbacks so far, then per partition ,acksPending(1|0):errorCode; CALLBACK the map the response
 * callback got during this op, per partition error:baseOffset:logAppendTime:logStartOffset joined by ',' ('~' none).
 */
public final class KcheckDelayedProduce {
    private static Field acksPending;

    private KcheckDelayedProduce() {
    }

    public static void register(Map<String, KcheckHandler> table) throws ReflectiveOperationException {
        acksPending = ProducePartitionStatus.class.getDeclaredField("acksPending");
        acksPending.setAccessible(true);
        table.put("DPROD", KcheckDelayedProduce::handle);
    }

    private static String handle(String[] t) throws ReflectiveOperationException {
        int n = Integer.parseInt(t[2]);
        KcheckProduceScript script = new KcheckProduceScript(n);
        Map<TopicIdPartition, ProducePartitionStatus> statuses = new LinkedHashMap<>();
        ProducePartitionStatus[] byIndex = new ProducePartitionStatus[n];
        for (int i = 0; i < n; i++) {
            PartitionResponse response = script.partitionResponse(i, t[3 + i]);
            byIndex[i] = new ProducePartitionStatus(script.required[i], response);
            statuses.put(new TopicIdPartition(KcheckProduceScript.TOPIC_ID, new TopicPartition("t", i)), byIndex[i]);
        }
        PartitionStatusValidator validator = (tp, required) -> {
            Object[] a = script.answer(tp.partition(), required);
            return new PartitionStatusValidator.Result((Boolean) a[0], (Errors) a[1]);
        };
        DelayedProduce op = new DelayedProduce(Long.parseLong(t[1]), statuses, validator, responses -> {
            TreeMap<Integer, PartitionResponse> sorted = new TreeMap<>();
            responses.forEach((tp, r) -> sorted.put(tp.partition(), r));
            script.callback(sorted);
        });
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

            public boolean acksPending(int i) throws ReflectiveOperationException {
                return acksPending.getBoolean(byIndex[i]);
            }

            public PartitionResponse response(int i) {
                return byIndex[i].responseStatus();
            }
        }, t, 3 + n);
    }
}
