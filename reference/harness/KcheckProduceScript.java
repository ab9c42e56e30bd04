import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ProduceResponse.PartitionResponse;

/**
 * What the DPROD handlers share (KcheckDelayedProduce.java for the Java DelayedProduce, KcheckDelayedProduceScala.java
 * for the Scala one): a case's partitions, the validator's scripted answers and the calls it got, the response
 * callback's maps, and the answer's encoding (the grammar is in KcheckDelayedProduce.java). Only kafka-clients
 * classes: it compiles with the base on every release.
 */
final class KcheckProduceScript {
    static final Uuid TOPIC_ID = new Uuid(1L, 2L);

    final String[] answers;
    final long[] required;
    final TreeMap<Integer, Long> validated = new TreeMap<>();
    final List<String> callbacks = new ArrayList<>();

    KcheckProduceScript(int n) {
        answers = new String[n];
        required = new long[n];
    }

    /** Partition p's status as the local append left it: error:baseOffset:requiredOffset:logStartOffset. */
    PartitionResponse partitionResponse(int p, String spec) {
        String[] f = spec.split(":");
        required[p] = Long.parseLong(f[2]);
        return new PartitionResponse(Errors.forCode(Short.parseShort(f[0])), Long.parseLong(f[1]), -1L,
                                     Long.parseLong(f[3]));
    }

    /** The answer about partition p (asked with its required offset), as (hasEnough, error). */
    Object[] answer(int p, long requiredOffset) {
        validated.put(p, requiredOffset);
        String a = answers[p];
        if (a.charAt(0) == 'L') return new Object[] {false, Errors.forCode(Short.parseShort(a.substring(1)))};
        return new Object[] {a.charAt(1) == '1', Errors.forCode(Short.parseShort(a.substring(3)))};
    }

    /** The response callback: the map it got, by partition. */
    void callback(TreeMap<Integer, PartitionResponse> responses) {
        StringBuilder sb = new StringBuilder();
        responses.forEach((p, r) -> sb.append(sb.length() == 0 ? "" : ",").append(r.error.code()).append(':')
            .append(r.baseOffset).append(':').append(r.logAppendTime).append(':').append(r.logStartOffset));
        callbacks.add(sb.toString());
    }

    /** A DelayedProduce of either kind, as the script drives and reads it. */
    interface Operation {
        boolean tryComplete();

        void run();

        boolean isCompleted();

        boolean acksPending(int partition) throws ReflectiveOperationException;

        PartitionResponse response(int partition);
    }

    /** The creation's answer, then each op's (tokens from `first` on): the whole answer line. */
    String drive(Operation op, String[] t, int first) throws ReflectiveOperationException {
        StringBuilder out = new StringBuilder("OK");
        step(out, "-", op, 0);
        for (int i = first; i < t.length; i++) {
            int before = callbacks.size();
            String ret = "-";
            if (t[i].charAt(0) == 't') {
                System.arraycopy(t[i].substring(1).split(","), 0, answers, 0, answers.length);
                ret = op.tryComplete() ? "1" : "0";
            } else {
                op.run();
            }
            step(out, ret, op, before);
        }
        return out.toString();
    }

    /** One op's answer: RET/VALIDATED/STATE/CALLBACK. */
    private void step(StringBuilder out, String ret, Operation op, int callbacksBefore)
            throws ReflectiveOperationException {
        out.append(' ').append(ret).append('/');
        if (validated.isEmpty()) out.append('~');
        String sep = "";
        for (var e : validated.entrySet()) {
            out.append(sep).append(e.getKey()).append('@').append(e.getValue());
            sep = ",";
        }
        validated.clear();
        out.append('/').append(op.isCompleted() ? 1 : 0).append(':').append(callbacks.size());
        for (int i = 0; i < answers.length; i++) {
            out.append(',').append(op.acksPending(i) ? 1 : 0).append(':').append(op.response(i).error.code());
        }
        out.append('/').append(callbacks.size() > callbacksBefore ? callbacks.get(callbacks.size() - 1) : "~");
    }
}
