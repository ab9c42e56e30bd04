import java.lang.reflect.Constructor;

/** A BrokerTopicStats for the harnesses that build a UnifiedLog by reflection: its package moved between releases
 * (kafka.server up to 3.9, kafka-storage's metrics after), and its constructor takes remote storage's flag (off) or
 * nothing. */
public final class KcheckStats {
    private KcheckStats() {
    }

    public static Object newBrokerTopicStats(Class<?> c) throws ReflectiveOperationException {
        for (Constructor<?> k : c.getConstructors()) {
            if (k.getParameterCount() == 0) return k.newInstance();
            if (k.getParameterCount() == 1 && k.getParameterTypes()[0] == boolean.class) return k.newInstance(false);
        }
        throw new IllegalStateException("BrokerTopicStats constructor");
    }
}
