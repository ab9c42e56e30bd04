// Members of one consumer group, run by make.py for the groups kafka-python cannot join (KIP-848's consumer protocol)
// and for Kafka's own cooperative-sticky client assignor. Arguments are key=value:
//   bootstrap=H:P group=G protocol=classic|consumer assignor=<class name (classic) or server assignor (consumer)>
//   topics=t1,t2 members=N client=<client.id prefix> [instance=<group.instance.id prefix>]
// Each member is a KafkaConsumer in its own thread that subscribes, polls and never commits (make.py commits the
// offsets beforehand). Every change of a member's assignment is printed as one JSON line on stdout:
//   {"client": "...", "member": "...", "partitions": ["t-0", ...]}
// The members leave the group and the JVM exits when stdin is closed.
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class GroupMembers {
    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        AtomicBoolean stop = new AtomicBoolean(false);
        List<Thread> threads = new ArrayList<>();
        int n = Integer.parseInt(a.get("members"));
        for (int i = 0; i < n; i++) {
            Properties p = new Properties();
            p.put("bootstrap.servers", a.get("bootstrap"));
            p.put("group.id", a.get("group"));
            p.put("client.id", a.get("client") + "-" + i);
            p.put("enable.auto.commit", "false");
            p.put("auto.offset.reset", "earliest");
            p.put("key.deserializer", ByteArrayDeserializer.class.getName());
            p.put("value.deserializer", ByteArrayDeserializer.class.getName());
            p.put("max.poll.records", "1");
            if (a.containsKey("instance")) p.put("group.instance.id", a.get("instance") + "-" + i);
            if ("consumer".equals(a.get("protocol"))) {
                p.put("group.protocol", "consumer");
                p.put("group.remote.assignor", a.get("assignor"));
            } else {
                p.put("partition.assignment.strategy", a.get("assignor"));
            }
            Thread t = new Thread(() -> run(p, List.of(a.get("topics").split(",")), stop));
            t.start();
            threads.add(t);
            Thread.sleep(300);  // members join in order, as separate clients would
        }
        while (System.in.read() != -1) { }
        stop.set(true);
        for (Thread t : threads) t.join();
    }

    private static void run(Properties p, List<String> topics, AtomicBoolean stop) {
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.subscribe(topics);
            String shown = null;
            while (!stop.get()) {
                c.poll(Duration.ofMillis(200));
                Set<String> now = new TreeSet<>();
                for (TopicPartition tp : c.assignment()) now.add(tp.topic() + "-" + tp.partition());
                String member = c.groupMetadata().memberId();
                if (!(member + now).equals(shown)) {  // a new member id or a new assignment
                    shown = member + now;
                    StringBuilder s = new StringBuilder("{\"client\": \"" + p.get("client.id") + "\", \"member\": \""
                        + member + "\", \"partitions\": [");
                    String sep = "";
                    for (String tp : now) { s.append(sep).append('"').append(tp).append('"'); sep = ", "; }
                    synchronized (System.out) { System.out.println(s.append("]}")); System.out.flush(); }
                }
            }
        }
    }
}
