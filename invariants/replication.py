"""Safety properties of the replication model (model/replication), one registered check each.

They read the controller's registry, the replicas' logs and high watermarks, and the history
variables (acknowledged and committed records, consumer reads, leaders per epoch); never the
protocol's own bookkeeping. Sources: the published TLA+ models of Kafka replication
(hachikuji's `LeaderInIsr` and `StrongIsr`, Vanlightly's `LeaderCompleteness`,
`NoCommittedRecordLostGlobally`, `LogMatching`, `ConsistentRead`) and Kafka's own simulation
invariants (`MonotonicEpoch`, `SingleLeader` in `RaftEventSimulationTest`).

Durability (the committed prefix on electable replicas, the leader holding acknowledged records,
nothing acknowledged lost) is Kafka's promise only while fewer than min.insync.replicas replicas
lost their page cache: with asynchronous flushes a committed record may sit unflushed on exactly
min.insync.replicas brokers. Those three checks do not apply past that many lossy crashes.

Partition reassignment (KRaft's, `model/replication/reassignment.py`) adds four: the leader is a
member of the replica set; a reassignment completes only with every target replica in the ISR
(KAFKA-15665); while one is in flight the original replica set is what the registry says it is
(RS minus AR, the set a cancel or a new controller goes back to); a completed one leaves RS = TRS
and no AR or RR. They do not apply when nothing reassigns.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import combinations

from kcheck.invariants.registry import Report, Severity, Violation, check_all, register
from kcheck.model.replication.actions import Config, leader_min_isr
from kcheck.model.replication.state import NO_LEADER, Record, Registry, Replica, State

SOURCE_A = "hachikuji/kafka-specification (KafkaReplication.tla)"
SOURCE_B = "Vanlightly/kafka-tlaplus kraft/v3.5 (v3_5_properties.tla)"


@dataclass(frozen=True)
class ReplicationSubject:
    state: State
    config: Config


def check_replication(state: State, config: Config, only: set[str] | None = None) -> Report:
    return check_all(ReplicationSubject(state, config), "replication", only)


def _durability_void(s: ReplicationSubject) -> str | None:
    lossy, min_isr = s.state.history.lossy_crashes, s.config.min_isr
    if lossy >= min_isr:
        return (f"{lossy} lossy crash(es) with min.insync.replicas={min_isr}: Kafka does not promise "
                "durability once that many replicas lost unflushed records")
    if s.state.used.unclean_elections:
        return "an operator's unclean election: Kafka does not promise durability past one (KIP-460)"
    return None


def _no_reassignment(s: ReplicationSubject) -> str | None:
    return None if s.config.reassignments else "no reassignment in this configuration (reassignments=0)"


def _fixed_full_replica_set(s: ReplicationSubject) -> str | None:
    cfg = s.config
    if cfg.reassignments or cfg.rf < cfg.brokers:
        return None
    return "every broker holds a replica and nothing reassigns, so every leader is one"


def _ids(xs: Iterable[int]) -> str:
    return "[" + ",".join(map(str, xs)) + "]"


def _at(r: Replica, offset: int) -> Record | None:
    return r.log[offset] if offset < r.leo else None


def _rec(record_id: int) -> str:
    return f"x{record_id}"


def _holds(r: Replica, offset: int, record_id: int) -> bool:
    rec = _at(r, offset)
    return rec is not None and rec.id == record_id


def _what(r: Replica, offset: int) -> str:
    rec = _at(r, offset)
    return f"{rec} there" if rec else f"its log ends at {r.leo}"


@register("replication.leader-in-isr", "The controller's leader is a member of the ISR", Severity.HARD,
          f"{SOURCE_A} LeaderInIsr", "replication")
def leader_in_isr(s: ReplicationSubject) -> list[Violation]:
    reg = s.state.registry
    if reg.leader == NO_LEADER or reg.leader in reg.isr:
        return []
    return [Violation("replication.leader-in-isr", Severity.HARD, f"leader epoch {reg.leader_epoch}",
                      f"leader {reg.leader} is not in ISR {sorted(reg.isr)}",
                      {"leader": reg.leader, "isr": sorted(reg.isr)})]


@register("replication.isr-within-replicas", "ISR and eligible leader replicas are replicas, and disjoint",
          Severity.HARD, f"{SOURCE_B} ValidControllerState; KIP-966", "replication")
def isr_within_replicas(s: ReplicationSubject) -> list[Violation]:
    reg = s.state.registry
    replicas = set(reg.replicas)
    out = []
    outside = sorted((reg.isr | reg.elr) - replicas)
    if outside:
        out.append(Violation("replication.isr-within-replicas", Severity.HARD, "partition",
                             f"ISR/ELR name brokers {outside} outside the replica set {_ids(reg.replicas)}: "
                             "a broker taken out of the replica set deletes its log, so it must not stay "
                             "in sync or eligible", {"outside": outside, "replicas": list(reg.replicas)}))
    both = sorted(reg.isr & reg.elr)
    if both:
        out.append(Violation("replication.isr-within-replicas", Severity.HARD, "partition",
                             f"brokers {both} are in both the ISR and the eligible leader replicas", {"both": both}))
    return out


@register("replication.one-leader-per-epoch", "At most one leader per leader epoch", Severity.HARD,
          "apache/kafka RaftEventSimulationTest SingleLeader; KAFKA-6082", "replication")
def one_leader_per_epoch(s: ReplicationSubject) -> list[Violation]:
    by_epoch: dict[int, set[int]] = defaultdict(set)
    for epoch, leader in s.state.history.epoch_leaders:
        by_epoch[epoch].add(leader)
    return [Violation("replication.one-leader-per-epoch", Severity.HARD, f"leader epoch {e}",
                      f"the controller's registry named leaders {sorted(ls)} for the same leader epoch {e}",
                      {"epoch": e, "leaders": sorted(ls)})
            for e, ls in sorted(by_epoch.items()) if len(ls) > 1]


@register("replication.epochs-monotonic", "Leader epochs and controller epochs never go back", Severity.HARD,
          "apache/kafka RaftEventSimulationTest MonotonicEpoch; KAFKA-6082", "replication")
def epochs_monotonic(s: ReplicationSubject) -> list[Violation]:
    st, h = s.state, s.state.history
    reg, out = st.registry, []
    if reg.leader_epoch < h.max_leader_epoch:
        out.append(Violation("replication.epochs-monotonic", Severity.HARD, "controller registry",
                             f"the stored leader epoch went back from {h.max_leader_epoch} to {reg.leader_epoch}",
                             {"was": h.max_leader_epoch, "now": reg.leader_epoch}))
    if reg.written_by < h.max_written_by:
        out.append(Violation("replication.epochs-monotonic", Severity.HARD, "controller registry",
                             f"controller epoch {reg.written_by} overwrote partition state that controller epoch "
                             f"{h.max_written_by} had written (a zombie controller's write)",
                             {"was": h.max_written_by, "now": reg.written_by}))
    for r, was in zip(st.replicas, h.max_broker_epochs, strict=True):
        if r.alive and r.known and r.leader_epoch < was:
            out.append(Violation("replication.epochs-monotonic", Severity.HARD, f"broker {r.id}",
                                 f"broker {r.id}'s leader epoch went back from {was} to {r.leader_epoch}",
                                 {"broker": r.id, "was": was, "now": r.leader_epoch}))
    return out


@register("replication.electable-has-committed", "Every electable replica holds the committed prefix",
          Severity.HARD, f"{SOURCE_A} StrongIsr; {SOURCE_B} LeaderCandidateCompleteness", "replication",
          not_applicable=_durability_void)
def electable_has_committed(s: ReplicationSubject) -> list[Violation]:
    st, reg = s.state, s.state.registry
    out = []
    # Kafka elects only members of the replica set (PartitionChangeBuilder walks the target replicas).
    for b in sorted((reg.isr | reg.elr) & set(reg.replicas)):
        r = st.replica(b)
        if not r.alive:
            continue
        missing = sorted((o, i) for o, i in st.history.committed if not _holds(r, o, i))
        if missing:
            o, i = missing[0]
            where = "ISR" if b in reg.isr else "eligible leader replicas"
            out.append(Violation(
                "replication.electable-has-committed", Severity.HARD, f"broker {b}",
                f"broker {b} is in the {where}, so it can be elected, but lacks committed record {_rec(i)} at "
                f"offset {o} ({_what(r, o)}); electing it loses a committed write",
                {"broker": b, "offset": o, "record": i, "missing": len(missing)}))
    return out


@register("replication.leader-has-acked", "The leader holds every acknowledged and committed record",
          Severity.HARD, f"{SOURCE_B} LeaderCompletenessProperty", "replication", not_applicable=_durability_void)
def leader_has_acked(s: ReplicationSubject) -> list[Violation]:
    st, reg = s.state, s.state.registry
    if reg.leader == NO_LEADER or not st.replica(reg.leader).alive:
        return []
    r = st.replica(reg.leader)
    needed = st.history.acked | st.history.committed
    missing = sorted((o, i) for o, i in needed if not _holds(r, o, i))
    if not missing:
        return []
    o, i = missing[0]
    kind = "acknowledged (acks=all)" if (o, i) in st.history.acked else "committed"
    return [Violation("replication.leader-has-acked", Severity.HARD, f"broker {r.id}",
                      f"leader {r.id} (epoch {reg.leader_epoch}) lacks {kind} record {_rec(i)} at offset {o} "
                      f"({_what(r, o)})", {"leader": r.id, "offset": o, "record": i, "missing": len(missing)})]


@register("replication.no-acked-lost", "No acknowledged or committed record is lost from every replica",
          Severity.HARD, f"{SOURCE_B} NoCommittedRecordLostGlobally", "replication", not_applicable=_durability_void)
def no_acked_lost(s: ReplicationSubject) -> list[Violation]:
    st = s.state
    out = []
    for o, i in sorted(st.history.acked | st.history.committed):
        if not any(_holds(r, o, i) for r in st.replicas):
            out.append(Violation("replication.no-acked-lost", Severity.HARD, f"offset {o}",
                                 f"record {_rec(i)} at offset {o} was acknowledged or committed and no replica "
                                 "holds it any more", {"offset": o, "record": i}))
    return out


@register("replication.log-matching", "Two replicas agree below the smaller of their high watermarks",
          Severity.HARD, f"{SOURCE_B} LogMatchingProperty", "replication")
def log_matching(s: ReplicationSubject) -> list[Violation]:
    # Compared: live replicas that have reconciled their log with a leader. A dead broker serves
    # nothing, and a restarted follower repairs its log (truncation) before its high watermark is
    # used; either may hold a stale suffix that the protocol is about to remove.
    serving = [r for r in s.state.replicas if r.alive and not r.needs_truncation]
    out = []
    for a, b in combinations(serving, 2):
        upto = min(a.hw, b.hw, a.leo, b.leo)
        for o in range(upto):
            if a.log[o] != b.log[o]:
                out.append(Violation(
                    "replication.log-matching", Severity.HARD, f"brokers {a.id} and {b.id}",
                    f"offset {o} is below both high watermarks ({a.hw} and {b.hw}) but holds {a.log[o]} on broker "
                    f"{a.id} and {b.log[o]} on broker {b.id}: the logs diverged",
                    {"brokers": [a.id, b.id], "offset": o}))
                break
    return out


@register("replication.consistent-reads", "Consumers never read two different records at one offset",
          Severity.HARD, f"{SOURCE_B} ConsistentReadProperty", "replication")
def consistent_reads(s: ReplicationSubject) -> list[Violation]:
    by_offset: dict[int, set[int]] = defaultdict(set)
    for o, i in s.state.history.reads:
        by_offset[o].add(i)
    return [Violation("replication.consistent-reads", Severity.HARD, f"offset {o}",
                      f"consumers read records {', '.join(_rec(i) for i in sorted(ids))} at the same offset {o}",
                      {"offset": o, "records": sorted(ids)})
            for o, ids in sorted(by_offset.items()) if len(ids) > 1]


# ---- partition reassignment ------------------------------------------------------------------------

SOURCE_REASSIGN = "apache/kafka PartitionReassignmentReplicas.java, PartitionChangeBuilder.java"


@register("replication.leader-in-replicas", "The leader is a member of the replica set", Severity.HARD,
          f"{SOURCE_REASSIGN} (electAnyLeader walks the target replicas); {SOURCE_B} ValidControllerState",
          "replication", not_applicable=_fixed_full_replica_set)
def leader_in_replicas(s: ReplicationSubject) -> list[Violation]:
    reg = s.state.registry
    if reg.leader == NO_LEADER or reg.leader in reg.replicas:
        return []
    return [Violation("replication.leader-in-replicas", Severity.HARD, f"leader epoch {reg.leader_epoch}",
                      f"leader {reg.leader} is not in the replica set {_ids(reg.replicas)}: a broker that "
                      "was told to stop and delete its log still leads the partition",
                      {"leader": reg.leader, "replicas": list(reg.replicas)})]


@register("replication.reassignment-in-sync", "A reassignment completes only when every target replica is in "
          "the ISR", Severity.HARD, f"{SOURCE_REASSIGN} maybeCompleteReassignment (KAFKA-15665)", "replication",
          not_applicable=_no_reassignment)
def reassignment_in_sync(s: ReplicationSubject) -> list[Violation]:
    out = []
    for trs, isr, *_ in sorted(s.state.history.completions):
        missing = sorted(set(trs) - set(isr))
        if missing:
            out.append(Violation(
                "replication.reassignment-in-sync", Severity.HARD, "partition",
                f"the reassignment to {_ids(trs)} completed with ISR {{{','.join(map(str, isr))}}}: target "
                f"replicas {missing} were not in sync, so the new replica set may lack committed records "
                "and the ISR shrinks below the target", {"target": list(trs), "isr": list(isr), "missing": missing}))
    return out


@register("replication.reassignment-recoverable", "While a reassignment is in flight, RS minus AR is the "
          "original replica set", Severity.HARD,
          f"{SOURCE_REASSIGN} originalReplicas; PartitionReassignmentRevert.java", "replication",
          not_applicable=_no_reassignment)
def reassignment_recoverable(s: ReplicationSubject) -> list[Violation]:
    st = s.state
    reg, h = st.registry, st.history
    if not reg.reassigning:
        return []
    out = []
    origin = set(reg.origin)
    where = f"replicas {_ids(reg.replicas)} adding {_ids(reg.adding)} removing {_ids(reg.removing)}"
    lost = sorted(h.reassign_origin - origin)
    if lost:
        out.append(Violation("replication.reassignment-recoverable", Severity.HARD, where,
                             f"original replicas {lost} are no longer in RS minus AR {_ids(reg.origin)}: a new "
                             "controller (or a cancel) could not bring the partition back to where the "
                             "reassignment started", {"lost": lost, "origin": sorted(h.reassign_origin)}))
    foreign = sorted(origin - h.reassign_seen)
    if foreign:
        out.append(Violation("replication.reassignment-recoverable", Severity.HARD, where,
                             f"RS minus AR {_ids(reg.origin)} counts {foreign} as original, but no request of "
                             "this reassignment found them in the replica set: a cancel would keep replicas "
                             "that never caught up", {"foreign": foreign, "seen": sorted(h.reassign_seen)}))
    stray = sorted(set(reg.adding + reg.removing) - set(reg.replicas))
    if stray:
        out.append(Violation("replication.reassignment-recoverable", Severity.HARD, where,
                             f"AR/RR name brokers {stray} outside the replica set", {"stray": stray}))
    return out


@register("replication.reassignment-completed", "A completed reassignment leaves RS = TRS and no AR or RR",
          Severity.HARD, f"{SOURCE_REASSIGN} CompletedReassignment; seed 003 step B6", "replication",
          not_applicable=_no_reassignment)
def reassignment_completed(s: ReplicationSubject) -> list[Violation]:
    out = []
    for trs, _, replicas, adding, removing in sorted(s.state.history.completions):
        if replicas != trs or adding or removing:
            out.append(Violation(
                "replication.reassignment-completed", Severity.HARD, "partition",
                f"the reassignment to {_ids(trs)} completed as replicas {_ids(replicas)} adding {_ids(adding)} "
                f"removing {_ids(removing)}", {"target": list(trs), "replicas": list(replicas),
                                               "adding": list(adding), "removing": list(removing)}))
    return out


# ---- what clients saw ---------------------------------------------------------------------------------------

SOURCE_CLIENT = "apache/kafka Partition.scala (fetchOffsetForTimestamp, readRecords)"


def _no_client_view(s: ReplicationSubject) -> str | None:
    return None if s.config.client_view else "no client view in this configuration (list_offsets=0)"


def _regressions(s: ReplicationSubject, kind: str) -> list[tuple[str, int, int]]:
    return sorted(x for x in s.state.history.offset_regressions if x[0] == kind)


@register("client.list-offsets-monotonic", "A ListOffsets LATEST answer is never below an earlier one",
          Severity.HARD, f"KIP-207 (KAFKA-2334, Kafka 2.2.0); {SOURCE_CLIENT}", "replication",
          not_applicable=_no_client_view)
def list_offsets_monotonic(s: ReplicationSubject) -> list[Violation]:
    # KIP-207's promise rests on the new leader holding the committed prefix: none once durability is void.
    if _durability_void(s) is not None:
        return []
    return [Violation("client.list-offsets-monotonic", Severity.HARD, "ListOffsets LATEST",
                      f"a client was told the latest offset is {now} after it had been told {was}: the offset "
                      "went back (a new leader answered with a high watermark lagging behind its epoch's start)",
                      {"was": was, "now": now})
            for _, was, now in _regressions(s, "latest")]


@register("client.fetch-high-watermark-monotonic", "The high watermark fetch responses carry never goes back "
          "(not promised by Kafka: reported, never a failure)", Severity.SOFT,
          f"{SOURCE_CLIENT}; clients FetchCollector / SubscriptionState.tryUpdatingHighWatermark", "replication",
          not_applicable=_no_client_view)
def fetch_high_watermark_monotonic(s: ReplicationSubject) -> list[Violation]:
    # Kafka answers a consumer's fetch with the leader's high watermark as it is (`Partition.readRecords`), with
    # no KIP-207 check, and the consumer overwrites what it had: after an election it may go back. SOFT, so a
    # search reports it and fails on nothing; a protocol that promises it can be checked for it by name.
    return [Violation("client.fetch-high-watermark-monotonic", Severity.SOFT, "consumer fetch",
                      f"a consumer's fetch response carried high watermark {now} after one had carried {was}",
                      {"was": was, "now": now})
            for _, was, now in _regressions(s, "fetch_hw")]


# ---- the broker lifecycle (KRaft) -------------------------------------------------------------------

SOURCE_KRAFT = "Vanlightly/kafka-tlaplus kraft/kip-966 (kip_966_properties.tla ValidControllerState)"


@register("kraft.isr-unfenced", "An ISR of two or more holds no fenced broker", Severity.HARD,
          f"{SOURCE_KRAFT}; apache/kafka ReplicationControlManager.handleBrokerFenced, ineligibleReplicasForIsr",
          "replication")
def isr_unfenced(s: ReplicationSubject) -> list[Violation]:
    # A lone ISR member may stay fenced where the rules never empty the ISR (before KIP-966).
    reg = s.state.registry
    bad = sorted(reg.isr & reg.fenced) if len(reg.isr) >= 2 else []
    if not bad:
        return []
    return [Violation("kraft.isr-unfenced", Severity.HARD, f"partition epoch {reg.partition_epoch}",
                      f"ISR {_ids(sorted(reg.isr))} holds fenced brokers {bad}: the controller takes a fenced broker "
                      "out of every ISR and refuses to add one", {"isr": sorted(reg.isr), "fenced": bad})]


@register("kraft.shutdown-leads-nothing", "A broker whose controlled shutdown completed leads nothing",
          Severity.HARD, "apache/kafka BrokerHeartbeatManager.calculateNextBrokerState (CONTROLLED_SHUTDOWN); "
          "Vanlightly/kafka-tlaplus kraft/v3.5 description 8.3 (the controlled shutdown sequence)", "replication")
def shutdown_leads_nothing(s: ReplicationSubject) -> list[Violation]:
    st = s.state
    reg = st.registry
    b = reg.leader
    if b == NO_LEADER or b not in reg.shutting_down or st.replica(b).alive:
        return []
    return [Violation("kraft.shutdown-leads-nothing", Severity.HARD, f"broker {b}",
                      f"broker {b} stopped after a controlled shutdown but the controller still has it leading "
                      f"(leader epoch {reg.leader_epoch}): the partition is offline until it is fenced",
                      {"broker": b, "leader_epoch": reg.leader_epoch})]


@register("replication.shutdown-asked", "A live broker the controller has in controlled shutdown is a process that "
          "asked to shut down", Severity.HARD, "KIP-380 (KAFKA-7235: a ControlledShutdownRequest of a bounced broker "
          "processed after the bounce); apache/kafka ClusterControlManager.checkBrokerEpoch", "replication")
def shutdown_asked(s: ReplicationSubject) -> list[Violation]:
    st = s.state
    bad = sorted(b for b in st.registry.shutting_down if _shutdown_unasked(st, b))
    if not bad:
        return []
    b = bad[0]
    return [Violation("replication.shutdown-asked", Severity.HARD, f"broker {b}",
                      f"the controller has broker {b} in controlled shutdown, but its running process (broker epoch "
                      f"{st.replica(b).broker_epoch}) never asked: it is out of the ISR and cannot lead until it "
                      "bounces again", {"broker": b, "broker_epoch": st.replica(b).broker_epoch})]


def _shutdown_unasked(st: State, b: int) -> bool:
    r = st.replicas[b - 1]
    return r.alive and not r.shutdown_asked


# ---- the metadata log (KRaft) -------------------------------------------------------------------

SOURCE_LOG = "Vanlightly/kafka-tlaplus kraft/v3.5 (v3_5_properties.tla MetadataLogMatching)"


def _zookeeper_mode(s: ReplicationSubject) -> str | None:
    return None if s.config.kraft else "ZooKeeper mode: brokers learn decisions from requests, not a metadata log"


def _partition(r: Replica | Registry) -> tuple[int, int, tuple[int, ...]]:
    return (r.leader, r.leader_epoch, r.replicas)


def _log_misfits(st: State) -> list[tuple[int, str]]:
    """(broker, why) for every live broker whose partition state is not the log's at the batch it applied. Its
    leader, leader epoch and replicas must be that batch's; its partition epoch and ISR that batch's or a later
    one's (a leader learns the ISR it proposed from the AlterPartition answer before the batch reaches it)."""
    meta = st.metadata
    out: list[tuple[int, str]] = []
    if not meta:  # ZooKeeper mode: no log to match
        return out
    for r in st.replicas:
        if not r.alive or not r.known:
            continue
        if not 0 <= r.applied < len(meta):
            out.append((r.id, f"its applied offset {r.applied} is outside the log"))
            continue
        image = meta[r.applied].image
        if r.id not in image.replicas and not r.hosts:
            continue  # never told about the partition: nothing to match
        if _partition(r) != _partition(image):
            out.append((r.id, f"it believes leader {r.leader} epoch {r.leader_epoch} replicas {_ids(r.replicas)}, "
                              f"the batch it applied says leader {image.leader} epoch {image.leader_epoch} "
                              f"replicas {_ids(image.replicas)}"))
        elif not any(rec.image.partition_epoch == r.partition_epoch and rec.image.isr == r.isr
                     for rec in meta[r.applied:]):
            out.append((r.id, f"it believes ISR {_ids(sorted(r.isr))} at partition epoch {r.partition_epoch}, "
                              "which no batch from the one it applied on holds"))
    return out


@register("kraft.metadata-prefix", "Every broker's partition state is the metadata log's at the batch it applied",
          Severity.HARD, f"{SOURCE_LOG}; apache/kafka ReplicaManager.applyDelta", "replication",
          not_applicable=_zookeeper_mode)
def metadata_prefix(s: ReplicationSubject) -> list[Violation]:
    return [Violation("kraft.metadata-prefix", Severity.HARD, f"broker {b}",
                      f"broker {b}'s partition state did not come from the metadata log in order: {why}",
                      {"broker": b}) for b, why in _log_misfits(s.state)]


def _stale_beliefs(st: State) -> list[int]:
    """Live brokers that applied the whole log but believe another partition state than the controller's."""
    reg, last = st.registry, len(st.metadata) - 1
    out: list[int] = []
    if last < 0:  # ZooKeeper mode
        return out
    for r in st.replicas:
        if not r.alive or not r.known or r.applied != last:
            continue
        if r.id in reg.replicas:
            if _partition(r) != _partition(reg) or (r.partition_epoch, r.isr) != (reg.partition_epoch, reg.isr):
                out.append(r.id)
        elif r.hosts or r.log:
            out.append(r.id)
    return out


@register("kraft.belief-matches-registry", "A broker that applied the whole metadata log believes the controller's "
          "partition state", Severity.HARD, f"{SOURCE_LOG}; apache/kafka ReplicaManager.applyDelta", "replication",
          not_applicable=_zookeeper_mode)
def belief_matches_registry(s: ReplicationSubject) -> list[Violation]:
    st = s.state
    reg = st.registry
    return [Violation("kraft.belief-matches-registry", Severity.HARD, f"broker {b}",
                      f"broker {b} applied the whole metadata log but believes leader {r.leader} epoch "
                      f"{r.leader_epoch} partition epoch {r.partition_epoch} ISR {_ids(sorted(r.isr))} replicas "
                      f"{_ids(r.replicas)}; the controller has leader {reg.leader} epoch {reg.leader_epoch} partition "
                      f"epoch {reg.partition_epoch} ISR {_ids(sorted(reg.isr))} replicas {_ids(reg.replicas)}",
                      {"broker": b}) for b in _stale_beliefs(st) for r in (st.replica(b),)]


# ---- parity with Vanlightly's KIP-966 specification ----------------------------------------------
# Two of its eight safety properties had no counterpart; invariants/replication_parity.py maps all eight.

SOURCE_966 = "Vanlightly/kafka-tlaplus kraft/kip-966 (kip_966_properties.tla)"


def _uncovered_quorum(st: State, cfg: Config) -> list[tuple[int, list[int]]]:
    """(leader, controller ISR and ELR members outside its maximal ISR) for every live broker that leads in the
    controller's leader epoch with an ISR of at least min.insync.replicas."""
    reg = st.registry
    quorum = reg.isr | reg.elr
    out = []
    for r in st.replicas:
        if r.is_leader and r.leader_epoch == reg.leader_epoch and len(r.isr) >= leader_min_isr(cfg, r):
            missing = quorum - r.isr - (r.pending_isr or frozenset())
            if missing:
                out.append((r.id, sorted(missing)))
    return out


@register("replication.maximal-isr-covers-quorum", "A leader of the current epoch counts every ISR and ELR member "
          "in its high watermark", Severity.HARD,
          f"{SOURCE_966} ReplicationQuorumSupersetProperty; KIP-497 (the maximal ISR); Partition.scala "
          "maybeIncrementLeaderHW", "replication")
def maximal_isr_covers_quorum(s: ReplicationSubject) -> list[Violation]:
    # Only while the leader's own ISR is at least min.insync.replicas: below it the high watermark stands still
    # (KIP-966), so a smaller maximal ISR commits nothing. Kafka's maximal ISR is the committed ISR plus an
    # expansion in flight; the model keeps the proposal whole, so the union is it for a shrink too.
    reg = s.state.registry
    quorum = _ids(sorted(reg.isr | reg.elr))
    return [Violation("replication.maximal-isr-covers-quorum", Severity.HARD, f"broker {b}",
                      f"leader {b} (epoch {reg.leader_epoch}) advances its high watermark over maximal ISR "
                      f"{_ids(sorted(s.state.replica(b).isr | (s.state.replica(b).pending_isr or frozenset())))}, "
                      f"which lacks {missing} of the controller's ISR and ELR {quorum}: it can commit a record "
                      "those electable replicas never fetched", {"leader": b, "missing": missing})
            for b, missing in _uncovered_quorum(s.state, s.config)]


@register("replication.recovery-quorum", "With neither an ISR nor an ELR left, the controller remembers the last "
          "known leader", Severity.HARD,
          f"{SOURCE_966} MinIsrRecoveryQuorum; KIP-966; PartitionChangeBuilder.java maybeUpdateLastKnownLeader",
          "replication")
def recovery_quorum(s: ReplicationSubject) -> list[Violation]:
    # The specification's recovery quorum is min.insync.replicas last known ELR members (KIP-966's unclean
    # recovery); Kafka ships "balanced recovery" instead, which keeps the last leader alone in lastKnownElr and
    # elects it (`canElectLastKnownLeader`). Either way the partition must not be left with nobody to recover from.
    reg = s.state.registry
    if reg.isr or reg.elr or reg.last_known_leader != NO_LEADER:
        return []
    return [Violation("replication.recovery-quorum", Severity.HARD, f"partition epoch {reg.partition_epoch}",
                      "the ISR and the eligible leader replicas are empty and no last known leader is kept: nothing "
                      "is left to recover the partition from but an unclean election",
                      {"partition_epoch": reg.partition_epoch})]


# ---- fast twins --------------------------------------------------------------------------------------------
# For the exhaustive engine, which checks every invariant in every new state: per check above, a predicate
# `ok(state, config)` that is True exactly when the check finds no violation, building no Violation, Report or
# subject object. A search asks the twin first and the check itself only when the twin says False (for the
# message). tests/test_replication_model.py compares every twin with its check on the reachable states of the
# built-in variants. The `not_applicable` conditions of the durability checks are in `durability_void_fast`.


def durability_void_fast(state: State, config: Config) -> bool:
    """`_durability_void` as a bool."""
    return state.history.lossy_crashes >= config.min_isr or state.used.unclean_elections > 0


def _holds_all(r: Replica, records: Iterable[tuple[int, int]]) -> bool:
    log = r.log
    n = len(log)
    for o, i in records:
        if o >= n or log[o].id != i:
            return False
    return True


def _leader_in_isr_ok(st: State, cfg: Config) -> bool:
    reg = st.registry
    return reg.leader == NO_LEADER or reg.leader in reg.isr


def _isr_within_replicas_ok(st: State, cfg: Config) -> bool:
    reg = st.registry
    return reg.isr.issubset(reg.replicas) and reg.elr.issubset(reg.replicas) and reg.isr.isdisjoint(reg.elr)


def _one_leader_per_epoch_ok(st: State, cfg: Config) -> bool:
    pairs = st.history.epoch_leaders  # distinct (epoch, leader) pairs: two leaders of one epoch repeat the epoch
    return len({e for e, _ in pairs}) == len(pairs)


def _epochs_monotonic_ok(st: State, cfg: Config) -> bool:
    reg, h = st.registry, st.history
    if reg.leader_epoch < h.max_leader_epoch or reg.written_by < h.max_written_by:
        return False
    for r, was in zip(st.replicas, h.max_broker_epochs, strict=True):
        if r.alive and r.known and r.leader_epoch < was:
            return False
    return True


def _electable_has_committed_ok(st: State, cfg: Config) -> bool:
    committed = st.history.committed
    if not committed:
        return True
    reg = st.registry
    for b in reg.isr | reg.elr:
        if b in reg.replicas:
            r = st.replicas[b - 1]
            if r.alive and not _holds_all(r, committed):
                return False
    return True


def _leader_has_acked_ok(st: State, cfg: Config) -> bool:
    reg = st.registry
    if reg.leader == NO_LEADER:
        return True
    r = st.replicas[reg.leader - 1]
    return not r.alive or (_holds_all(r, st.history.acked) and _holds_all(r, st.history.committed))


def _no_acked_lost_ok(st: State, cfg: Config) -> bool:
    h = st.history
    for o, i in h.acked | h.committed if h.acked else h.committed:
        if not any(_holds(r, o, i) for r in st.replicas):
            return False
    return True


def _log_matching_ok(st: State, cfg: Config) -> bool:
    serving = [r for r in st.replicas if r.alive and not r.needs_truncation and r.hw and r.log]
    for a, b in combinations(serving, 2):
        upto = min(a.hw, b.hw, len(a.log), len(b.log))
        if a.log[:upto] != b.log[:upto]:
            return False
    return True


def _consistent_reads_ok(st: State, cfg: Config) -> bool:
    reads = st.history.reads
    return len({o for o, _ in reads}) == len(reads)


def _leader_in_replicas_ok(st: State, cfg: Config) -> bool:
    reg = st.registry
    return reg.leader == NO_LEADER or reg.leader in reg.replicas


def _list_offsets_monotonic_ok(st: State, cfg: Config) -> bool:
    regs = st.history.offset_regressions
    return not regs or durability_void_fast(st, cfg) or all(k != "latest" for k, _, _ in regs)


def _fetch_high_watermark_monotonic_ok(st: State, cfg: Config) -> bool:
    regs = st.history.offset_regressions
    return not regs or all(k != "fetch_hw" for k, _, _ in regs)


def _isr_unfenced_ok(st: State, cfg: Config) -> bool:
    reg = st.registry
    return len(reg.isr) < 2 or reg.isr.isdisjoint(reg.fenced)


def _shutdown_leads_nothing_ok(st: State, cfg: Config) -> bool:
    reg = st.registry
    b = reg.leader
    return b == NO_LEADER or b not in reg.shutting_down or st.replicas[b - 1].alive


def _shutdown_asked_ok(st: State, cfg: Config) -> bool:
    return not st.registry.shutting_down or not any(_shutdown_unasked(st, b) for b in st.registry.shutting_down)


def _maximal_isr_covers_quorum_ok(st: State, cfg: Config) -> bool:
    return not _uncovered_quorum(st, cfg)


def _recovery_quorum_ok(st: State, cfg: Config) -> bool:
    reg = st.registry
    return bool(reg.isr or reg.elr) or reg.last_known_leader != NO_LEADER


# check -> its twin (None: no twin, the check itself runs)
def _metadata_prefix_ok(st: State, cfg: Config) -> bool:
    meta = st.metadata
    if not meta:
        return True
    for r in st.replicas:
        if not r.alive or not r.known:
            continue
        if not 0 <= r.applied < len(meta):
            return False
        image = meta[r.applied].image
        if r.id not in image.replicas and not r.hosts:
            continue
        if r.leader != image.leader or r.leader_epoch != image.leader_epoch or r.replicas != image.replicas:
            return False
        if (r.partition_epoch != image.partition_epoch or r.isr != image.isr) and not any(
                rec.image.partition_epoch == r.partition_epoch and rec.image.isr == r.isr
                for rec in meta[r.applied + 1:]):
            return False
    return True


FAST: dict[Callable[[ReplicationSubject], list[Violation]], Callable[[State, Config], bool]] = {
    leader_in_isr: _leader_in_isr_ok,
    isr_within_replicas: _isr_within_replicas_ok,
    one_leader_per_epoch: _one_leader_per_epoch_ok,
    epochs_monotonic: _epochs_monotonic_ok,
    electable_has_committed: _electable_has_committed_ok,
    leader_has_acked: _leader_has_acked_ok,
    no_acked_lost: _no_acked_lost_ok,
    log_matching: _log_matching_ok,
    consistent_reads: _consistent_reads_ok,
    leader_in_replicas: _leader_in_replicas_ok,
    list_offsets_monotonic: _list_offsets_monotonic_ok,
    fetch_high_watermark_monotonic: _fetch_high_watermark_monotonic_ok,
    isr_unfenced: _isr_unfenced_ok,
    shutdown_leads_nothing: _shutdown_leads_nothing_ok,
    shutdown_asked: _shutdown_asked_ok,
    metadata_prefix: _metadata_prefix_ok,
    belief_matches_registry: lambda st, cfg: not st.metadata or not _stale_beliefs(st),
    maximal_isr_covers_quorum: _maximal_isr_covers_quorum_ok,
    recovery_quorum: _recovery_quorum_ok,
}
# not_applicable conditions of this module that read the config only (a search decides them once) ...
CONFIG_ONLY = (_no_reassignment, _fixed_full_replica_set, _no_client_view, _zookeeper_mode)
# ... and the one that reads the state, as a bool
STATE_VOID = {_durability_void: durability_void_fast}
