package org.apache.kafka.clients.producer.internals;

import java.util.Map;
import java.util.function.IntSupplier;

import org.apache.kafka.common.utils.LogContext;

/** PSTICKY (see KcheckStickyDriver) on kafka-clients 3.3 to 4.3: BuiltInPartitioner(LogContext, topic, size). */
public final class KcheckStickyPartitioner {
    private KcheckStickyPartitioner() {
    }

    public static void register(Map<String, ?> table) throws ClassNotFoundException {
        KcheckStickyDriver.registerWord(table, new KcheckStickyDriver.Kind() {
            @Override
            public BuiltInPartitioner create(int size, boolean rackAware, String rack, IntSupplier draws) {
                return new BuiltInPartitioner(new LogContext(), KcheckStickyDriver.TOPIC, size) {
                    @Override
                    int randomPartition() {
                        return draws.getAsInt();
                    }
                };
            }

            @Override
            public void loadStats(BuiltInPartitioner p, int[] queueSizes, int[] ids, String[] racks, int length) {
                p.updatePartitionLoadStats(queueSizes, ids, length);
            }
        });
    }
}
