import java.util.Map;

/** TXNLOG on the broker-side bridge (KcheckTxnLogs.java has the request): Scala's UnifiedLog in kafka_2.13, which
 * only the broker's jars hold in 4.0. */
public final class KcheckTxnLogScala {
    private KcheckTxnLogScala() {
    }

    public static void register(Map<String, KcheckHandler> table) {
        if (KcheckTxnLogs.find(false)) table.put("TXNLOG", KcheckTxnLogs::run);
    }
}
