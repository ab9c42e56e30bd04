import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

/**
 * kcheck's bridge harness: answers requests read from stdin, one line each (see kafka_harness.py).
 * The handler classes compiled for this release are named on the command line; each registers the
 * request words it answers through its static register(Map) method.
 */
public final class KcheckKafkaHarness {
    public static void main(String[] args) throws Exception {
        Map<String, KcheckHandler> table = new TreeMap<>();
        for (String name : args) {
            Class.forName(name).getMethod("register", Map.class).invoke(null, table);
        }
        table.put("TIME", t -> KcheckTimer.last());  // the time inside Kafka's calls of the request before
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        String version = "unknown";
        // AppInfoParser moved to common.utils.internals in 4.4: look it up by name.
        for (String name : new String[] {"org.apache.kafka.common.utils.AppInfoParser",
                                         "org.apache.kafka.common.utils.internals.AppInfoParser"}) {
            try {
                version = (String) Class.forName(name).getMethod("getVersion").invoke(null);
                break;
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                // try the next name
            }
        }
        out.write("READY " + version + " " + String.join(",", table.keySet()) + "\n");
        out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.equals("Q")) break;
            String answer;
            try {
                String[] t = line.split(" ");
                KcheckHandler h = table.get(t[0]);
                if (h == null) throw new UnsupportedOperationException("unknown request: " + t[0]);
                if (!t[0].equals("TIME")) KcheckTimer.reset();
                answer = h.handle(t);
            } catch (Throwable e) {
                answer = "ERR " + e.getClass().getName() + " " + KcheckCodec.escape(e.getMessage());
            }
            out.write(answer);
            out.write('\n');
            if (!in.ready()) out.flush();
        }
        out.flush();
    }
}
