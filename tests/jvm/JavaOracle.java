import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.StringJoiner;

/**
 * The JVM side of tests/test_java_behaviour.py. Run: java tests/jvm/JavaOracle.java < cases
 *
 * One case per input line, one answer per output line (whitespace-separated tokens):
 *   H s...                   String.hashCode of each string
 *   R gen seed op...         ops on one generator: i = nextInt(), l = nextLong(), z = nextBoolean(),
 *                            a number b = nextInt(b)
 *   S gen seed n             Collections.shuffle(0..n-1, generator)
 *   M kind cap op...         HashMap puts (+key) and removes (-key), then its key order;
 *                            cap '_' = new HashMap<>(), else new HashMap<>(cap)
 *   C kind key...            new HashSet<>(list of keys) iteration order
 * gen: J = new Random(seed), K = Kafka's MockRandom (seed ignored, state starts at 17).
 * kind: I = Integer keys (decimal), S = String keys. A string is its UTF-16 code units in hex
 * joined by '.', '_' for the empty string. An error answers "ERR message".
 */
public class JavaOracle {
    static final class MockRandom extends Random {
        private long state = 17;

        @Override
        protected int next(int bits) {
            state = state * 2862933555777941757L + 3037000493L;
            return (int) (state >>> (64 - bits));
        }
    }

    static String decode(String tok) {
        if (tok.equals("_")) return "";
        String[] units = tok.split("\\.");
        char[] cs = new char[units.length];
        for (int i = 0; i < units.length; i++) cs[i] = (char) Integer.parseInt(units[i], 16);
        return new String(cs);
    }

    static String encode(String s) {
        if (s.isEmpty()) return "_";
        StringJoiner j = new StringJoiner(".");
        for (int i = 0; i < s.length(); i++) j.add(Integer.toHexString(s.charAt(i)));
        return j.toString();
    }

    static Object key(String kind, String tok) {
        return kind.equals("I") ? (Object) Integer.valueOf(tok) : decode(tok);
    }

    static String show(String kind, Collection<Object> keys) {
        StringJoiner j = new StringJoiner(" ");
        for (Object k : keys) j.add(kind.equals("I") ? k.toString() : encode((String) k));
        return j.toString();
    }

    static Random generator(String gen, String seed) {
        return gen.equals("K") ? new MockRandom() : new Random(Long.parseLong(seed));
    }

    static String answer(String line) {
        String[] t = line.trim().split(" +");
        StringJoiner out = new StringJoiner(" ");
        switch (t[0]) {
            case "H":
                for (int i = 1; i < t.length; i++) out.add(Integer.toString(decode(t[i]).hashCode()));
                return out.toString();
            case "R": {
                Random r = generator(t[1], t[2]);
                for (int i = 3; i < t.length; i++) {
                    switch (t[i]) {
                        case "i": out.add(Integer.toString(r.nextInt())); break;
                        case "l": out.add(Long.toString(r.nextLong())); break;
                        case "z": out.add(Boolean.toString(r.nextBoolean())); break;
                        default: out.add(Integer.toString(r.nextInt(Integer.parseInt(t[i]))));
                    }
                }
                return out.toString();
            }
            case "S": {
                List<Integer> list = new ArrayList<>();
                for (int i = 0; i < Integer.parseInt(t[3]); i++) list.add(i);
                Collections.shuffle(list, generator(t[1], t[2]));
                for (Integer x : list) out.add(x.toString());
                return out.toString();
            }
            case "M": {
                Map<Object, Boolean> map =
                        t[2].equals("_") ? new HashMap<>() : new HashMap<>(Integer.parseInt(t[2]));
                for (int i = 3; i < t.length; i++) {
                    Object k = key(t[1], t[i].substring(1));
                    if (t[i].charAt(0) == '+') map.put(k, Boolean.TRUE); else map.remove(k);
                }
                return show(t[1], map.keySet());
            }
            case "C": {
                List<Object> list = new ArrayList<>();
                for (int i = 2; i < t.length; i++) list.add(key(t[1], t[i]));
                return show(t[1], new HashSet<>(list));
            }
            default:
                throw new IllegalArgumentException("unknown command " + t[0]);
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder sb = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            String a;
            try {
                a = answer(line);
            } catch (RuntimeException e) {
                a = "ERR " + e;
            }
            sb.append(a).append('\n');
        }
        System.out.print(sb);
        System.out.flush();
    }
}
