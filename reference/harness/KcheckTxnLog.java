import java.util.Map;

/** TXNLOG on the bridge (KcheckTxnLogs.java has the request): Java's UnifiedLog from 4.1, 3.9's Scala one (its
 * kafka_2.13 is on the bridge's classpath). */
public final class KcheckTxnLog {
    private KcheckTxnLog() {
    }

    public static void register(Map<String, KcheckHandler> table) {
        if (KcheckTxnLogs.find(true) || KcheckTxnLogs.find(false)) table.put("TXNLOG", KcheckTxnLogs::run);
    }
}
