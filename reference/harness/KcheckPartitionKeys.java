import java.util.Map;

import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;

/**
 * The producer's key hash (kafka-clients, every release): Utils.murmur2 and BuiltInPartitioner.partitionForKey,
 * on keys given as bytes or as Strings serialised by a real StringSerializer (UTF-8), as KafkaProducer.partition
 * hashes them.
 *
 * <pre>
 * PKEY &lt;numPartitions&gt; &lt;key&gt;...
 *   key = '-' (null) | 'b' + hex bytes ('b' alone: empty) | 's' + text token (KcheckCodec.text: UTF-16 units)
 * Answer: OK &lt;tok&gt;... one per key: '-' for a null key (KafkaProducer leaves it to the sticky partitioner),
 *         else &lt;murmur2&gt;:&lt;partitionForKey&gt;, or &lt;murmur2&gt;:!&lt;exception simple name&gt;
 * </pre>
 */
public final class KcheckPartitionKeys {
    private static final StringSerializer STRINGS = new StringSerializer();

    private KcheckPartitionKeys() {
    }

    public static void register(Map<String, KcheckHandler> table) {
        table.put("PKEY", KcheckPartitionKeys::keys);
    }

    private static byte[] bytes(String tok) {
        if (tok.charAt(0) == 's') return STRINGS.serialize("t", KcheckCodec.text(tok.substring(1)));
        byte[] out = new byte[(tok.length() - 1) / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(tok.substring(1 + 2 * i, 3 + 2 * i), 16);
        }
        return out;
    }

    private static String keys(String[] t) {
        int n = Integer.parseInt(t[1]);
        StringBuilder out = new StringBuilder("OK");
        for (int i = 2; i < t.length; i++) {
            out.append(' ');
            if (t[i].equals("-")) {
                out.append('-');
                continue;
            }
            byte[] key = bytes(t[i]);
            out.append(Utils.murmur2(key)).append(':');
            try {
                out.append(BuiltInPartitioner.partitionForKey(key, n));
            } catch (RuntimeException e) {
                out.append('!').append(e.getClass().getSimpleName());
            }
        }
        return out.toString();
    }
}
