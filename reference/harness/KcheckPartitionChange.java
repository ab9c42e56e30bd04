import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.IntPredicate;

import org.apache.kafka.common.DirectoryId;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.controller.PartitionChangeBuilder;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * The KRaft controller's PartitionChangeBuilder (request PC): one partition change, run on Kafka's own
 * PartitionRegistration and merged back with PartitionRegistration.merge.
 *
 * <pre>
 * PC mv elr lkl minIsr election acceptable
 *    replicas isr removing adding elr lastKnownElr leader lrs leaderEpoch partitionEpoch
 *    targetIsr targetReplicas targetRemoving targetAdding targetLrs uncleanShutdown
 * </pre>
 * mv: a metadata version ("3.5-IV2"), '-' for the release's latest production one; elr: 1 to enable
 * eligible leader replicas (a setter up to 4.2, a constructor argument from 4.3); lkl: 1 (Kafka's default)
 * to elect the last known leader in balanced recovery; election: P, O or U (PREFERRED, ONLINE, UNCLEAN);
 * acceptable: the brokers the LeaderAcceptor admits; int lists as '1,2' ('~' empty); lrs: 0 RECOVERED,
 * 1 RECOVERING; each target is '-' to leave the builder's default (the registration's own value).
 * Directories are unassigned (MIGRATING before 3.7-IV2); the default directory provider answers unassigned.
 *
 * Answer: OK built recLeader recIsr recElr recLke recReplicas recRemoving recAdding recLrs
 *            leader leaderEpoch partitionEpoch isr elr lastKnownElr replicas removing adding lrs
 * built is 1 when build() returned a record, 0 when it returned empty (then rec* are '-' and the
 * registration is the one given); a record field Kafka left unset is '-' (recLeader -2, recLrs -1);
 * the rest is the registration after merge.
 */
public final class KcheckPartitionChange {
    private static final Uuid TOPIC = new Uuid(1L, 2L);
    // 4.3 moved eligibleLeaderReplicasEnabled from a setter into the constructor: one source for both.
    private static Constructor<PartitionChangeBuilder> ctor7;
    private static Constructor<PartitionChangeBuilder> ctor6;
    private static Method setElr;

    private KcheckPartitionChange() {
    }

    @SuppressWarnings("unchecked")
    public static void register(Map<String, KcheckHandler> table) {
        for (Constructor<?> c : PartitionChangeBuilder.class.getConstructors()) {
            if (c.getParameterCount() == 7) ctor7 = (Constructor<PartitionChangeBuilder>) c;
            if (c.getParameterCount() == 6) ctor6 = (Constructor<PartitionChangeBuilder>) c;
        }
        if (ctor7 == null) {
            try {
                setElr = PartitionChangeBuilder.class.getMethod("setEligibleLeaderReplicasEnabled", boolean.class);
            } catch (NoSuchMethodException e) {
                throw new IllegalStateException("PartitionChangeBuilder has no way to enable ELR", e);
            }
        }
        table.put("PC", KcheckPartitionChange::change);
    }

    private static int[] arr(String tok) {
        List<Integer> xs = KcheckCodec.ints(tok);
        int[] out = new int[xs.size()];
        for (int i = 0; i < out.length; i++) out[i] = xs.get(i);
        return out;
    }

    private static PartitionChangeBuilder builder(PartitionRegistration p, IntPredicate acceptable, MetadataVersion mv,
                                                  int minIsr, boolean elr) throws Throwable {
        try {
            if (ctor7 != null) return ctor7.newInstance(p, TOPIC, 0, acceptable, mv, minIsr, elr);
            PartitionChangeBuilder b = ctor6.newInstance(p, TOPIC, 0, acceptable, mv, minIsr);
            setElr.invoke(b, elr);
            return b;
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static void list(StringBuilder out, List<Integer> xs) {
        out.append(' ');
        if (xs == null) out.append('-');
        else KcheckCodec.joinIntsToken(out, xs);
    }

    private static void list(StringBuilder out, int[] xs) {
        out.append(' ');
        if (xs.length == 0) out.append('~');
        for (int i = 0; i < xs.length; i++) {
            if (i > 0) out.append(',');
            out.append(xs[i]);
        }
    }

    /** By its version string: fromVersionString's signature changed in 4.2. */
    private static MetadataVersion metadataVersion(String tok) {
        if (tok.equals("-")) return MetadataVersion.latestProduction();
        for (MetadataVersion v : MetadataVersion.VERSIONS) {
            if (v.version().equals(tok)) return v;
        }
        throw new IllegalArgumentException("unknown metadata version " + tok);
    }

    private static String change(String[] t) throws Throwable {
        MetadataVersion mv = metadataVersion(t[1]);
        boolean elr = t[2].equals("1");
        boolean lastKnownLeader = t[3].equals("1");
        int minIsr = Integer.parseInt(t[4]);
        PartitionChangeBuilder.Election election = switch (t[5]) {
            case "P" -> PartitionChangeBuilder.Election.PREFERRED;
            case "U" -> PartitionChangeBuilder.Election.UNCLEAN;
            case "O" -> PartitionChangeBuilder.Election.ONLINE;
            default -> throw new IllegalArgumentException("election must be P, O or U, not " + t[5]);
        };
        Set<Integer> accepted = new HashSet<>(KcheckCodec.ints(t[6]));
        int[] replicas = arr(t[7]);
        PartitionRegistration p = new PartitionRegistration.Builder()
            .setReplicas(replicas)
            // Before directory assignment (3.7-IV2) a registration's directories are all MIGRATING, which
            // merge() keeps in step with the replicas; after it, unassigned ones.
            .setDirectories(mv.isDirectoryAssignmentSupported() ? DirectoryId.unassignedArray(replicas.length)
                                                                 : DirectoryId.migratingArray(replicas.length))
            .setIsr(arr(t[8]))
            .setRemovingReplicas(arr(t[9]))
            .setAddingReplicas(arr(t[10]))
            .setElr(arr(t[11]))
            .setLastKnownElr(arr(t[12]))
            .setLeader(Integer.parseInt(t[13]))
            .setLeaderRecoveryState(LeaderRecoveryState.of(Byte.parseByte(t[14])))
            .setLeaderEpoch(Integer.parseInt(t[15]))
            .setPartitionEpoch(Integer.parseInt(t[16]))
            .build();
        PartitionChangeBuilder b = builder(p, accepted::contains, mv, minIsr, elr)
            .setElection(election)
            .setUseLastKnownLeaderInBalancedRecovery(lastKnownLeader)
            .setDefaultDirProvider(broker -> DirectoryId.UNASSIGNED);
        if (!t[17].equals("-")) b.setTargetIsr(KcheckCodec.ints(t[17]));
        if (!t[18].equals("-")) b.setTargetReplicas(KcheckCodec.ints(t[18]));
        if (!t[19].equals("-")) b.setTargetRemoving(KcheckCodec.ints(t[19]));
        if (!t[20].equals("-")) b.setTargetAdding(KcheckCodec.ints(t[20]));
        if (!t[21].equals("-")) b.setTargetLeaderRecoveryState(LeaderRecoveryState.of(Byte.parseByte(t[21])));
        if (!t[22].equals("-")) b.setUncleanShutdownReplicas(KcheckCodec.ints(t[22]));
        Optional<ApiMessageAndVersion> built = b.build();
        StringBuilder out = new StringBuilder("OK ");
        PartitionRegistration after = p;
        if (built.isPresent()) {
            PartitionChangeRecord r = (PartitionChangeRecord) built.get().message();
            out.append("1 ").append(r.leader());
            list(out, r.isr());
            list(out, r.eligibleLeaderReplicas());
            list(out, r.lastKnownElr());
            list(out, r.replicas());
            list(out, r.removingReplicas());
            list(out, r.addingReplicas());
            out.append(' ').append(r.leaderRecoveryState());
            after = p.merge(r);
        } else {
            out.append("0 - - - - - - - -");
        }
        out.append(' ').append(after.leader).append(' ').append(after.leaderEpoch)
           .append(' ').append(after.partitionEpoch);
        list(out, after.isr);
        list(out, after.elr);
        list(out, after.lastKnownElr);
        list(out, after.replicas);
        list(out, after.removingReplicas);
        list(out, after.addingReplicas);
        out.append(' ').append(after.leaderRecoveryState.value());
        return out.toString();
    }
}
