package org.apache.kafka.clients.producer.internals;

import java.util.Map;
import java.util.function.IntSupplier;

import org.apache.kafka.common.utils.internals.LogContext;

/** PSTICKY (see KcheckStickyDriver) on kafka-clients 4.4+: BuiltInPartitioner(LogContext, topic, size,
 * rackAware, rack), KIP-1123. */
public final class KcheckStickyRackPartitioner {
    private KcheckStickyRackPartitioner() {
    }

    public static void register(Map<String, ?> table) throws ClassNotFoundException {
        KcheckStickyDriver.registerWord(table, new KcheckStickyDriver.Kind() {
            @Override
            public BuiltInPartitioner create(int size, boolean rackAware, String rack, IntSupplier draws) {
                return new BuiltInPartitioner(new LogContext(), KcheckStickyDriver.TOPIC, size, rackAware, rack) {
                    @Override
                    int randomPartition() {
                        return draws.getAsInt();
                    }
                };
            }

            @Override
            public void loadStats(BuiltInPartitioner p, int[] queueSizes, int[] ids, String[] racks, int length) {
                p.updatePartitionLoadStats(queueSizes, ids, racks, length);
            }
        });
    }
}
