import java.util.function.Supplier;

import org.apache.kafka.common.utils.Time;

/** The clock of the storage handlers: it says what the request sets (`now`, in ms), so a segment's creation time,
 * a retention run and a cleaner pass see the request's time rather than the machine's. */
public final class KcheckClock implements Time {
    public long now;

    public long milliseconds() {
        return now;
    }

    public long nanoseconds() {
        return now * 1_000_000L;
    }

    public void sleep(long ms) {
        now += ms;
    }

    // Abstract up to 4.1, a default method from 4.2: no @Override so one source compiles on every release.
    public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
        throw new UnsupportedOperationException("waitObject");
    }
}
