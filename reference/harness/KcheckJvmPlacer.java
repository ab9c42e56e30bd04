import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.PartitionAssignment;
import org.apache.kafka.metadata.placement.PlacementSpec;
import org.apache.kafka.metadata.placement.ReplicaPlacer;
import org.apache.kafka.metadata.placement.TopicAssignment;

/**
 * A user's Java plug-ins (kcheck's `jvm:<class>`), loaded by name from Kafka's jars plus the user's classpath.
 *
 * <pre>
 * JI &lt;class&gt;
 *     What the class is: OK &lt;kinds&gt; &lt;constructors&gt; &lt;name&gt; &lt;protocols&gt;. kinds: placer, client
 *     (ConsumerPartitionAssignor), group (KIP-848 ConsumerGroupPartitionAssignor), and sticky or
 *     cooperative-sticky for Kafka's sticky assignors and their subclasses; comma-joined, '~' for none.
 *     constructors: the public ones kcheck can call, comma-joined: random (java.util.Random; a placer gets
 *     it when both exist), noarg; '~' for neither, abstract for an abstract class or an interface. The
 *     class is instantiated once (its constructor's throw is the answer); name is an assignor's name()
 *     (text token, '-' for a placer), protocols a client assignor's supportedProtocols() ('~' otherwise).
 * JP &lt;class&gt; &lt;random&gt; &lt;nSpecs&gt; (&lt;startPartition&gt; &lt;nPartitions&gt; &lt;rf&gt;)*nSpecs &lt;broker&gt;...
 *     One instance places each spec in turn on a ClusterDescriber of the brokers (id/rack/fenced 0|1, in
 *     the order given). random, the java.util.Random handed to a (Random) constructor:
 *       L&lt;state&gt;  java.util.Random's 48-bit LCG from this internal state (Python's JavaRandom._seed)
 *       M&lt;state&gt;  Kafka's test MockRandom (a 64-bit LCG) from this state
 *       D&lt;ints&gt;   forced draws: nextInt(bound) returns the given values in turn, then 0; any other
 *                  draw (nextInt(), nextLong, ...) throws KcheckJvmPlacer$UnboundedDraw
 *     Answer: OK &lt;random after&gt; &lt;spec&gt;... where random after is the state (L, M; '-' for no
 *     (Random) constructor) or &lt;bounds&gt;/&lt;values&gt; of every nextInt (D); a spec is its partitions'
 *     replica lists joined by ';' ('~' an empty list, '.' no partitions).
 * JPX &lt;class&gt; &lt;maxRuns&gt; &lt;prefix&gt; &lt;startPartition&gt; &lt;nPartitions&gt; &lt;rf&gt; &lt;broker&gt;...
 *     Every sequence of nextInt(bound) results, in lexicographic order from the forced prefix on (as
 *     kcheck's exhaustive checker's odometer): a fresh instance per run. Answer: OK &lt;next&gt; &lt;run&gt;...,
 *     run = &lt;bounds&gt;/&lt;values&gt;/&lt;spec&gt;; next is the prefix to continue from after maxRuns runs, '.'
 *     when every sequence is done. A run that throws fails the request.
 * </pre>
 */
public final class KcheckJvmPlacer {
    private static final long MULTIPLIER = 0x5DEECE66DL;
    private static final long MASK48 = (1L << 48) - 1;
    private static final Map<String, Class<?>> CLASSES = new HashMap<>();

    private KcheckJvmPlacer() {
    }

    public static void register(Map<String, KcheckHandler> table) {
        table.put("JI", KcheckJvmPlacer::inspect);
        table.put("JP", KcheckJvmPlacer::place);
        table.put("JPX", KcheckJvmPlacer::enumerate);
    }

    /** The randomness a draw sequence cannot enumerate: kcheck's exhaustive checker reports it. */
    public static final class UnboundedDraw extends RuntimeException {
        UnboundedDraw(String what) {
            super(what);
        }
    }

    /** java.util.Random with its state in reach: L and M advance a readable LCG; D forces nextInt results. */
    static final class KcheckRandom extends Random {
        private static final long serialVersionUID = 1L;
        char mode;
        long state;
        List<Integer> forced;
        final List<Integer> bounds = new ArrayList<>();
        final List<Integer> values = new ArrayList<>();

        KcheckRandom(char mode, long state, List<Integer> forced) {
            super(0L);
            this.mode = mode;
            this.state = state;
            this.forced = forced;
        }

        @Override
        public synchronized void setSeed(long seed) {
            // Random's constructor calls this before our fields exist; a placer may call it too.
            if (forced == null && mode != 'M') state = (seed ^ MULTIPLIER) & MASK48;
        }

        @Override
        protected int next(int bits) {
            if (mode == 'L') {
                state = (state * MULTIPLIER + 0xBL) & MASK48;
                return (int) (state >>> (48 - bits));
            }
            if (mode == 'M') {
                state = state * 2862933555777941757L + 3037000493L;
                return (int) (state >>> (64 - bits));
            }
            throw new UnboundedDraw("a draw kcheck cannot enumerate (next(" + bits + "), not nextInt(bound))");
        }

        @Override
        public int nextInt(int bound) {
            if (mode != 'D') return super.nextInt(bound);
            if (bound <= 0) throw new IllegalArgumentException("bound must be positive");
            int i = values.size();
            int value = i < forced.size() ? forced.get(i) : 0;
            if (value >= bound) {
                throw new IllegalStateException("draw " + i + " asked for nextInt(" + bound + ") where an earlier "
                                                + "run of the same draws asked for a larger bound: the placer is "
                                                + "not deterministic");
            }
            bounds.add(bound);
            values.add(value);
            return value;
        }
    }

    /** A method of the plug-in threw: the method, the exception's class and message. */
    public static final class MethodFailed extends Exception {
        private static final long serialVersionUID = 1L;

        MethodFailed(String method, Throwable cause) {
            super(method + "() threw " + cause.getClass().getName() + ": " + cause.getMessage(), cause);
        }
    }

    private static Object call(Class<?> iface, String method, Object instance) throws Exception {
        try {
            return iface.getMethod(method).invoke(instance);
        } catch (InvocationTargetException e) {
            throw new MethodFailed(method, e.getCause());
        }
    }

    static Class<?> load(String name) throws ClassNotFoundException {
        Class<?> c = CLASSES.get(name);
        if (c == null) {
            c = Class.forName(name);
            CLASSES.put(name, c);
        }
        return c;
    }

    private static Class<?> optional(String name) {
        try {
            return Class.forName(name);
        } catch (ClassNotFoundException | LinkageError e) {
            return null;  // this release has no such interface
        }
    }

    static Object instantiate(Class<?> c, Random random) throws Throwable {
        try {
            if (random != null) {
                try {
                    return c.getConstructor(Random.class).newInstance(random);
                } catch (NoSuchMethodException e) {
                    // the no-arg constructor below
                }
            }
            return c.getConstructor().newInstance();
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static boolean hasConstructor(Class<?> c, Class<?>... types) {
        try {
            c.getConstructor(types);
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    private static String inspect(String[] t) throws Throwable {
        Class<?> c = load(KcheckCodec.text(t[1]));
        Class<?> client = optional("org.apache.kafka.clients.consumer.ConsumerPartitionAssignor");
        Class<?> group = optional("org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor");
        List<String> kinds = new ArrayList<>();
        if (ReplicaPlacer.class.isAssignableFrom(c)) kinds.add("placer");
        if (client != null && client.isAssignableFrom(c)) kinds.add("client");
        if (group != null && group.isAssignableFrom(c)) kinds.add("group");
        // Kafka's sticky assignors (and their subclasses) send user data kcheck writes as they would
        Class<?> sticky = optional("org.apache.kafka.clients.consumer.StickyAssignor");
        Class<?> cooperative = optional("org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
        if (sticky != null && sticky.isAssignableFrom(c)) kinds.add("sticky");
        if (cooperative != null && cooperative.isAssignableFrom(c)) kinds.add("cooperative-sticky");
        boolean seeded = hasConstructor(c, Random.class);
        boolean noArg = hasConstructor(c);
        String ctor;
        if (c.isInterface() || Modifier.isAbstract(c.getModifiers())) ctor = "abstract";
        else if (seeded || noArg) ctor = seeded && noArg ? "random,noarg" : seeded ? "random" : "noarg";
        else ctor = "~";
        String name = "-";
        StringBuilder protocols = new StringBuilder();
        boolean abstractClass = ctor.equals("abstract");
        if (!abstractClass && kinds.contains("placer") && (seeded || noArg)) {
            instantiate(c, new KcheckRandom('L', 0L, null));  // its constructor's throw is the answer
        }
        if (!abstractClass && noArg && (kinds.contains("client") || kinds.contains("group"))) {
            Object instance = instantiate(c, null);
            if (kinds.contains("client")) {
                name = KcheckCodec.encodeText((String) call(client, "name", instance));
                for (Object p : (List<?>) call(client, "supportedProtocols", instance)) {
                    if (protocols.length() > 0) protocols.append(',');
                    protocols.append(((Enum<?>) p).name());
                }
            } else {
                name = KcheckCodec.encodeText((String) call(group, "name", instance));
            }
        }
        return "OK " + (kinds.isEmpty() ? "~" : String.join(",", kinds)) + " " + ctor + " " + name + " "
               + (protocols.length() == 0 ? "~" : protocols);
    }

    private static KcheckRandom random(String tok) {
        char mode = tok.charAt(0);
        String rest = tok.substring(1);
        if (mode == 'L' || mode == 'M') return new KcheckRandom(mode, Long.parseLong(rest), null);
        if (mode == 'D') return new KcheckRandom('D', 0L, KcheckCodec.ints(rest));
        throw new IllegalArgumentException("unknown random mode: " + tok);
    }

    private static void spec(StringBuilder out, TopicAssignment ta) {
        List<PartitionAssignment> parts = ta == null ? null : ta.assignments();
        if (parts == null) throw new NullPointerException("the placer returned no TopicAssignment");
        if (parts.isEmpty()) {
            out.append('.');
            return;
        }
        for (int i = 0; i < parts.size(); i++) {
            if (i > 0) out.append(';');
            KcheckCodec.joinIntsToken(out, parts.get(i).replicas());
        }
    }

    private static void draws(StringBuilder out, KcheckRandom r) {
        KcheckCodec.joinIntsToken(out, r.bounds);
        out.append('/');
        KcheckCodec.joinIntsToken(out, r.values);
    }

    private static String place(String[] t) throws Throwable {
        Class<?> c = load(KcheckCodec.text(t[1]));
        KcheckRandom r = random(t[2]);
        int nSpecs = Integer.parseInt(t[3]);
        List<PlacementSpec> specs = new ArrayList<>();
        int i = 4;
        for (int s = 0; s < nSpecs; s++, i += 3) {
            specs.add(new PlacementSpec(Integer.parseInt(t[i]), Integer.parseInt(t[i + 1]),
                                        (short) Integer.parseInt(t[i + 2])));
        }
        ClusterDescriber cluster = KcheckCodec.cluster(t, i);
        boolean seeded = hasConstructor(c, Random.class);
        ReplicaPlacer placer = (ReplicaPlacer) instantiate(c, r);
        StringBuilder out = new StringBuilder("OK ");
        StringBuilder placed = new StringBuilder();
        for (PlacementSpec s : specs) {
            placed.append(' ');
            spec(placed, placer.place(s, cluster));
        }
        if (!seeded) out.append('-');
        else if (r.mode == 'D') draws(out, r);
        else out.append(r.state);
        return out.append(placed).toString();
    }

    private static String enumerate(String[] t) throws Throwable {
        Class<?> c = load(KcheckCodec.text(t[1]));
        int maxRuns = Integer.parseInt(t[2]);
        List<Integer> prefix = KcheckCodec.ints(t[3]);
        PlacementSpec spec = new PlacementSpec(Integer.parseInt(t[4]), Integer.parseInt(t[5]),
                                               (short) Integer.parseInt(t[6]));
        ClusterDescriber cluster = KcheckCodec.cluster(t, 7);
        StringBuilder runs = new StringBuilder();
        for (int run = 0; run < maxRuns; run++) {
            KcheckRandom r = new KcheckRandom('D', 0L, prefix);
            TopicAssignment ta = ((ReplicaPlacer) instantiate(c, r)).place(spec, cluster);
            runs.append(' ');
            draws(runs, r);
            runs.append('/');
            spec(runs, ta);
            // the odometer: bump the last draw that can still grow
            int i = r.values.size() - 1;
            while (i >= 0 && r.values.get(i) + 1 >= r.bounds.get(i)) i--;
            if (i < 0) return "OK ." + runs;
            prefix = new ArrayList<>(r.values.subList(0, i));
            prefix.add(r.values.get(i) + 1);
        }
        StringBuilder next = new StringBuilder();
        KcheckCodec.joinIntsToken(next, prefix);
        return "OK " + next + runs;
    }
}
