import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Time spent inside Kafka's calls of the last request, for bench/bench_side_by_side.py: a handler brackets only
 * Kafka's call (not the decoding of its request or the encoding of its answer) with begin() and end(); the word
 * TIME answers "OK &lt;wall ns&gt; &lt;this thread's CPU ns&gt; &lt;GC ms&gt;" summed over the brackets of the
 * request before it. GC ms: the collectors' own accounting (with SerialGC the collection runs on the VM thread,
 * outside this thread's CPU time, inside the wall time).
 */
public final class KcheckTimer {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static long wall, cpu, gc, wallStart, cpuStart, gcStart;

    private KcheckTimer() {
    }

    private static long gcMillis() {
        long sum = 0;
        for (GarbageCollectorMXBean b : ManagementFactory.getGarbageCollectorMXBeans()) sum += Math.max(0, b.getCollectionTime());
        return sum;
    }

    /** A new request: its brackets start from zero. */
    public static void reset() {
        wall = 0;
        cpu = 0;
        gc = 0;
    }

    public static void begin() {
        gcStart = gcMillis();
        cpuStart = THREADS.getCurrentThreadCpuTime();
        wallStart = System.nanoTime();
    }

    public static void end() {
        wall += System.nanoTime() - wallStart;
        cpu += THREADS.getCurrentThreadCpuTime() - cpuStart;
        gc += gcMillis() - gcStart;
    }

    public static String last() {
        return "OK " + wall + " " + cpu + " " + gc;
    }
}
