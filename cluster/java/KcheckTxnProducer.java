// A transactional producer on the release's own client (kcheck.cluster.txn_chaos, client "java"): transactions one
// after another, each writing `records` values to every partition and then committing or aborting (a seeded choice),
// one JSON line per transaction's begin and end on stdout. It stops when stdin closes. After an error the client is
// closed and a new session (a new KafkaProducer with the same transactional.id, whose initTransactions fences the old
// one) goes on. Run as a single source file: `java -cp <release jars> KcheckTxnProducer.java ARGS`.
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.StringSerializer;

public class KcheckTxnProducer {
    public static void main(String[] a) throws Exception {
        String bootstrap = a[0], topic = a[1], transactionalId = a[2];
        int index = Integer.parseInt(a[3]), partitions = Integer.parseInt(a[4]), records = Integer.parseInt(a[5]);
        double abortShare = Double.parseDouble(a[6]);
        Random rng = new Random(Long.parseLong(a[7]));
        AtomicBoolean stop = new AtomicBoolean();
        Thread watch = new Thread(() -> {
            try {
                while (System.in.read() >= 0) { }
            } catch (IOException e) { }
            stop.set(true);
        });
        watch.setDaemon(true);
        watch.start();
        KafkaProducer<String, String> p = null;
        int session = -1, number = 0;
        while (!stop.get()) {
            if (p == null) {
                session++;
                p = open(bootstrap, transactionalId, index, session);
                try {
                    p.initTransactions();
                } catch (KafkaException e) {
                    p.close(Duration.ZERO);
                    p = null;
                    Thread.sleep(500);
                    continue;
                }
            }
            boolean abort = rng.nextDouble() < abortShare;
            System.out.println("{\"event\":\"begin\",\"session\":" + session + ",\"number\":" + number + ",\"intent\":\""
                               + (abort ? "abort" : "commit") + "\"}");
            System.out.flush();
            List<Future<RecordMetadata>> sends = new ArrayList<>();
            String outcome, error = "";
            boolean committing = false;
            try {
                p.beginTransaction();
                for (int part = 0; part < partitions; part++)
                    for (int i = 0; i < records; i++)
                        sends.add(p.send(new ProducerRecord<>(topic, part, null,
                            String.format("txn-%d-%d-%05d-%d-%d", index, session, number, part, i))));
                if (abort) {
                    p.abortTransaction();
                    outcome = "aborted";
                } else {
                    committing = true;
                    p.commitTransaction();
                    outcome = "committed";
                }
            } catch (KafkaException e) {
                error = e.getClass().getSimpleName();
                outcome = committing ? "unknown" : "aborted";  // no EndTxn(commit) sent: aborted, now or by the next init
                p.close(Duration.ZERO);
                p = null;
            }
            StringBuilder states = new StringBuilder();
            for (Future<RecordMetadata> f : sends) {
                states.append(states.length() == 0 ? "\"" : ",\"").append(state(f)).append('"');
            }
            System.out.println("{\"event\":\"end\",\"session\":" + session + ",\"number\":" + number + ",\"outcome\":\""
                               + outcome + "\",\"error\":\"" + error + "\",\"sends\":[" + states + "]}");
            System.out.flush();
            number++;
        }
        if (p != null) p.close(Duration.ofSeconds(5));
    }

    static String state(Future<RecordMetadata> f) {
        if (!f.isDone()) return "pending";
        try {
            RecordMetadata m = f.get();
            return m.partition() + ":" + m.offset();
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        } catch (InterruptedException e) {
            return "pending";
        }
    }

    static KafkaProducer<String, String> open(String bootstrap, String transactionalId, int index, int session) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("transactional.id", transactionalId);
        c.put("transaction.timeout.ms", "10000");
        c.put("request.timeout.ms", "5000");
        c.put("delivery.timeout.ms", "20000");
        c.put("max.block.ms", "10000");
        c.put("retry.backoff.ms", "100");
        c.put("linger.ms", "2");
        c.put("client.id", "kcheck-txn-java-" + index + "-" + session);
        return new KafkaProducer<>(c, new StringSerializer(), new StringSerializer());
    }
}
