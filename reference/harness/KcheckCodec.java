import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.UsableBroker;

/** The wire format shared by every handler (see kafka_harness.py for the grammar). */
public final class KcheckCodec {
    private KcheckCodec() {
    }

    /** '-' is no rack, '_' the empty rack, else UTF-16 code units in hex joined by '.'. */
    public static Optional<String> rack(String tok) {
        if (tok.equals("-")) return Optional.empty();
        return Optional.of(text(tok));
    }

    /** A string in the same encoding as a rack ('_' is ""); '-' is null. */
    public static String text(String tok) {
        if (tok.equals("-")) return null;
        if (tok.equals("_")) return "";
        String[] units = tok.split("\\.");
        char[] cs = new char[units.length];
        for (int i = 0; i < units.length; i++) cs[i] = (char) Integer.parseInt(units[i], 16);
        return new String(cs);
    }

    /** The inverse of text(): what Python's decoder reads back. */
    public static String encodeText(String s) {
        if (s == null) return "-";
        if (s.isEmpty()) return "_";
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            if (i > 0) b.append('.');
            b.append(Integer.toHexString(s.charAt(i)));
        }
        return b.toString();
    }

    public static String escape(String s) {
        if (s == null) return "null";
        return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r");
    }

    /** "1,2,3" -> [1, 2, 3]; "" or "~" -> []. */
    public static List<Integer> ints(String tok) {
        List<Integer> out = new ArrayList<>();
        if (tok.isEmpty() || tok.equals("~")) return out;
        for (String s : tok.split(",")) out.add(Integer.parseInt(s));
        return out;
    }

    public static void joinInts(StringBuilder out, List<Integer> xs) {
        for (int i = 0; i < xs.size(); i++) {
            if (i > 0) out.append(',');
            out.append(xs.get(i).intValue());
        }
    }

    /** Like joinInts, but an empty list is "~" so that it stays one token. */
    public static void joinIntsToken(StringBuilder out, List<Integer> xs) {
        if (xs.isEmpty()) out.append('~');
        else joinInts(out, xs);
    }

    /** The usable brokers t[from..] (each id/rack/fenced 0|1) as a ClusterDescriber, every directory ZERO_UUID. */
    public static ClusterDescriber cluster(String[] t, int from) {
        List<UsableBroker> brokers = new ArrayList<>();
        for (int i = from; i < t.length; i++) {
            String[] p = t[i].split("/");
            brokers.add(new UsableBroker(Integer.parseInt(p[0]), rack(p[1]), p[2].equals("1")));
        }
        return new ClusterDescriber() {
            @Override
            public Iterator<UsableBroker> usableBrokers() {
                return brokers.iterator();
            }

            @Override
            public Uuid defaultDir(int brokerId) {
                return Uuid.ZERO_UUID;
            }
        };
    }
}
