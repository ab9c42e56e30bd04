"""The Kafka releases kcheck knows, and every behaviour the reference models that differs between them.

`--kafka-version VERSION` on the commands picks a release; `profile(VERSION)` is its `ReleaseProfile`:
one field per difference, each declared once in `DIFFERENCES` with the JIRA/KIP that changed it, the
first release that has each value, and how that was confirmed (running the release's own jars through
the bridge, `reference/kafka_bridge.py`, where it can show it: tests/test_releases.py). Nothing here is
Kafka's code; the values are facts about Kafka's jars.

The known releases are `kafka_jars.KNOWN_RELEASES` (4.x) and `kafka_jars.ZK_RELEASES` (3.9.x, the last
with the ZooKeeper controller). The default is the newest 4.x, `DEFAULT_VERSION`. An algorithm a release
lacks (AdminUtils after 4.0, the ZooKeeper controller after 3.9) is refused for it with one line; without
`--kafka-version`, such an algorithm runs as the newest release that has it (`release_for`).

To add a difference: a field on `ReleaseProfile` and its `Difference` in `DIFFERENCES` (a test checks the
two agree), then use the field where the reference or the CLI behaves differently.

The replication model's controller rules per release (`ReleaseProfile.protocol`) and the KRaft
`PartitionChangeBuilder` rules (`ReleaseProfile.kraft_version`, `reference/election.py`) are built from
these fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from kcheck.reference.election import KRaftVersion
from kcheck.reference.kafka_jars import KNOWN_RELEASES, ZK_RELEASES, UnknownRelease, check_release

if TYPE_CHECKING:
    from kcheck.model.replication.protocol import Protocol
    from kcheck.reference.assignors.registry import AssignorInfo

__all__ = [
    "DEFAULT_VERSION",
    "DIFFERENCES",
    "RELEASES",
    "Difference",
    "ReleaseProfile",
    "Step",
    "UnknownRelease",
    "check_version",
    "describe",
    "difference",
    "profile",
    "release_for",
    "releases_for",
    "releases_with",
    "version_key",
]



LONG_MAX = 2**63 - 1


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


RELEASES: tuple[str, ...] = tuple(sorted({*KNOWN_RELEASES, *ZK_RELEASES}, key=_key, reverse=True))
DEFAULT_VERSION = "4.4.0"  # the newest 4.x; kept equal to KNOWN_RELEASES[0] (tests/test_releases.py)


def version_key(version: str) -> tuple[int, ...]:
    """`"4.1.2"` -> (4, 1, 2), for ordering releases."""
    return _key(version)


def check_version(text: str) -> str:
    """The release a `--kafka-version` value names; UnknownRelease (one line) for anything else
    (`kafka_jars.check_release`: the one check for every release option and cache path)."""
    return check_release(text, RELEASES)


@dataclass(frozen=True)
class Step:
    """From release `since` on (until the next step), the field has `value`; `source` says what changed it."""

    since: str
    value: Any
    source: str  # the JIRA, KIP or pull request
    evidence: str  # how the first release with it was found and confirmed


@dataclass(frozen=True)
class Difference:
    """One behaviour that differs between releases: its value in the oldest known release, then each change."""

    field: str  # the ReleaseProfile field
    what: str  # what the field says, in one line
    initial: Any  # the value in the oldest known release (3.9.0)
    steps: tuple[Step, ...] = ()
    evidence: str = ""  # for `initial`

    def value(self, version: str) -> Any:
        out = self.initial
        for step in self.steps:
            if _key(version) >= _key(step.since):
                out = step.value
        return out


# Every difference the reference models. Confirmed against the jars of 3.9.1, 4.0.0, 4.0.2, 4.1.0, 4.1.2,
# 4.2.0, 4.2.2, 4.3.0, 4.3.1 and 4.4.0 (the checks in tests/test_releases.py run through the bridge).
DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "admin_utils",
        "AdminUtils.assignReplicasToBrokers is in the release (kafka-server-common's org.apache.kafka.admin)",
        True, (Step("4.1.0", False, "KAFKA-18798 (apache/kafka#18914): kafka-reassign-partitions --generate places "
                                    "with StripedReplicaPlacer, AdminUtils removed",
                    "the bridge's AdminUtils handler compiles against 3.9.1 and 4.0.x and not 4.1.0+"),),
        "3.9.x and 4.0.x: the harness's AdminUtils request answers"),
    Difference(
        "zk_controller",
        "the ZooKeeper controller (kafka_2.13's kafka.controller) ships with the release",
        True, (Step("4.0.0", False, "KIP-500 / KIP-833: ZooKeeper mode removed in 4.0.0",
                    "kafka_jars resolves kafka_2.13 with the controller for 3.x only; 4.0's core has no "
                    "kafka.controller.KafkaController"),),
        "3.9.x is the last release with ZooKeeper mode"),
    Difference(
        "eligible_leader_replicas",
        "KIP-966 eligible leader replicas are on for a new cluster (the release's default)",
        False, (Step("4.1.0", True, "KIP-966; apache/kafka#18954 (ELR's default version moved to 4.1) and "
                                   "#20174 (latest production metadata.version 4.1-IV1 enables it)",
                     "Feature.ELIGIBLE_LEADER_REPLICAS_VERSION.defaultLevel(latest production MV) is 0 in 4.0.0 "
                     "and 4.0.2, 1 in 4.1.0 through 4.4.0"),),
        "3.9.x: static config eligible.leader.replicas.enable, default false; 4.0.x: feature level 0 by default"),
    Difference(
        "last_known_leader_must_be_acceptable",
        "PartitionChangeBuilder elects the last known leader (ELR, balanced recovery) only when the "
        "LeaderAcceptor admits it (before: even when fenced; the check only logged)",
        False, (Step("4.1.0", True, "KAFKA-19522 (apache/kafka#20200)",
                     "PartitionChangeBuilder with ELR on, ISR and ELR empty, last known ELR [1] fenced: 3.9.1, 4.0.0 "
                     "and 4.0.2 elect 1; 4.1.0 through 4.4.0 build no record"),)),
    Difference(
        "last_known_leader_update",
        "when PartitionChangeBuilder writes the last known leader (ELR and balanced recovery on): when the record "
        "empties the ISR (isr-emptied), or when it takes the leader away and none is remembered (leaderless)",
        "isr-emptied", (Step("4.1.1", "leaderless", "apache/kafka#20629 (last known ELR update simplified)",
                             "ELR on, replicas [1,2] leader 1 ISR [1,2], target ISR [2] with no acceptable broker: "
                             "3.9.0 to 4.1.0 leave the last known ELR alone, 4.1.1 through 4.4.0 write [1]"),)),
    Difference(
        "reassignment_completion",
        "when a reassignment completes (KRaftVersion.reassignment_completion): every target replica in the ISR "
        "(all-targets), or the adding replicas, and every target too when the target is smaller than the "
        "original set (adding-unless-shrinking)",
        "all-targets", (Step("4.3.0", "adding-unless-shrinking", "KAFKA-19975 (apache/kafka#21114)",
                             "replicas [1,2,3] adding [3], target ISR [1,3]: 4.2.2 and older keep the move in "
                             "flight, 4.3.0+ complete it (adding=[]); a shrinking move with a target out of the "
                             "ISR stays in flight in every release; a move whose adding replica is also removing "
                             "(an in-flight [1] -> [2,1] re-targeted to [1]) completes at once up to 4.2.2 and "
                             "never from 4.3.0 (tests/test_release_gaps.py)"),),
        "KAFKA-15665 (apache/kafka#15359, all targets in the ISR) is in 3.8.0 and later (git tag --contains)"),
    Difference(
        "striped_cordoned_wording",
        "StripedReplicaPlacer's refusals for fenced brokers and too few brokers also name log directories "
        "cordoned",
        False, (Step("4.3.0", True, "KAFKA-19774 / KIP-1066 (apache/kafka#21273): cordoned log directories",
                     "the same refusal through the bridge: 4.2.2 and older say 'All brokers are currently fenced.', "
                     "4.3.0+ add ', or have all their log directories cordoned.'"),)),
    Difference(
        "striped_continues_from_existing",
        "StripedReplicaPlacer continues striping after a topic's existing partitions "
        "(StripedReplicaPlacer(random, continue_from_existing=True) in the reference)",
        False, (), "ClusterDescriber has no replicasForTopicName in any known release (javap, 3.9.1 to 4.4.0): "
                   "newer trunk only"),
    Difference(
        "uniform_extra_slot_deferred",
        "KIP-848 UniformAssignor's homogeneous builder passes a member's +1 slot on to later members (before: the "
        "first members take the +1 slots)",
        False, (Step("4.0.1", True, "KAFKA-18688",
                     "reference/assignors/server.py EXTRA_SLOT_DEFERRED_SINCE, checked against each release's "
                     "UniformAssignor through the bridge (G request, tests/test_kafka_group_assignors.py)"),)),
    Difference(
        "uniform_heterogeneous_builder",
        "KIP-848 UniformAssignor's heterogeneous builder (members subscribing to different topics): the 4.0 "
        "rewrite the reference models, or 3.x's algorithm, which it does not (its calls are not compared)",
        "3.x", (Step("4.0.0", "KAFKA-17710", "KAFKA-17710",
                     "reference/assignors/server.py HETEROGENEOUS_BUILDER_SINCE, checked through the bridge "
                     "(G request)"),)),
    Difference(
        "topic_id_partition_record_hash",
        "org.apache.kafka.server.common.TopicIdPartition is a Java record (hashCode 31*h+p instead of "
        "Objects.hash): the order in which the controller's leader rebalance visits imbalanced partitions",
        False, (Step("4.1.0", True, "TopicIdPartition rewritten as a record",
                     "reference/leader_balance.py RECORD_HASH_SINCE, checked through the bridge (LB request)"),)),
    Difference(
        "partitioner_rack_aware",
        "the producer's built-in partitioner can prefer partitions led in the client's rack for records without a "
        "key (partitioner.rack.aware with client.rack, KIP-1123); an older client ignores the setting",
        False, (Step("4.4.0", True, "KAFKA-19193 / KIP-1123 (apache/kafka#19850)",
                     "BuiltInPartitioner's constructor takes (rackAware, rack) in 4.4.0's kafka-clients and not in "
                     "4.3.1's (javap); the same rack-aware request through the bridge picks in the rack only on "
                     "4.4.0 (tests/test_releases.py)"),),
        "kafka-clients 3.9.1 to 4.3.1: BuiltInPartitioner(LogContext, String, int), no rack"),
    Difference(
        "metadata_version",
        "the release's latest production metadata.version (MetadataVersion.latestProduction()), which a new "
        "cluster starts with",
        "3.9-IV0", (Step("4.0.0", "4.0-IV3", "MetadataVersion", "MetadataVersion.latestProduction() in the jars"),
                    Step("4.1.0", "4.1-IV1", "MetadataVersion", "MetadataVersion.latestProduction() in the jars"),
                    Step("4.2.0", "4.2-IV1", "MetadataVersion", "MetadataVersion.latestProduction() in the jars"),
                    Step("4.3.0", "4.3-IV0", "MetadataVersion", "MetadataVersion.latestProduction() in the jars"),
                    Step("4.4.0", "4.4-IV2", "MetadataVersion", "MetadataVersion.latestProduction() in the jars")),
        "MetadataVersion.latestProduction() in the jars"),
    Difference(
        "header_parse_refuses_removed_apis",
        "RequestHeader.parse refuses an API key none of whose versions is left (InvalidRequestException 'Unsupported "
        "api with key K (Name) and version V') before it picks a header version",
        False, (Step("4.0.0", True, "KIP-896 (protocol versions removed in 4.0; ApiKeys.hasValidVersion)",
                     "RequestHeader.parse of 3.9.0 and 3.9.1 calls no hasValidVersion (javap), 4.0.0 on does; "
                     "the bridge's HDR_PARSE answers (reference/kafka_protocol_headers.py)"),)),
    Difference(
        "header_parse_wording",
        "the word RequestHeader.parse's failure names the api key with ('Our best guess of the apiKey is: N')",
        "apiKey", (Step("4.0.0", "apiKeyId", "KIP-896 (the same change to RequestHeader.parse)",
                        "the string constant in RequestHeader.class of 3.9.0 and 4.0.0 (javap -v); HDR_PARSE"),)),
    Difference(
        "produce_advertised_min_zero",
        "a broker listener advertises Produce from version 0 in ApiVersions although it accepts only 3+ "
        "(ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION, for librdkafka)",
        False, (Step("4.0.0", True, "KAFKA-18659",
                     "ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION is in 4.0.0's kafka-clients, not 3.9.x's "
                     "(javap); the bridge's APIVER_ADV answers"),)),
    Difference(
        "tagged_field_count_checked",
        "generated message readers refuse a tagged-field count that is negative, larger than the bytes left, or over "
        "MessageUtil.MAX_TAGGED_FIELD_COUNT (10000) before reading any field (before: a negative count read none and "
        "a large one read until the buffer ran out)",
        False, (Step("4.2.2", True, "generator: MessageUtil.MAX_TAGGED_FIELD_COUNT in the generated read() (JIRA not "
                                    "identified)",
                     "the messages in RequestHeaderData.class (javap -v): absent up to 4.2.0, present in 4.2.2"),
                Step("4.3.0", False, "4.3.0 and 4.3.1 were built without it",
                     "absent from RequestHeaderData.class of 4.3.0 and 4.3.1 (javap -v)"),
                Step("4.4.0", True, "the same generator change",
                     "present in 4.4.0's RequestHeaderData.class; HDR_PARSE / HDR_RESP answers")),
        "absent from RequestHeaderData.class of 3.9.0 to 4.2.0 (javap -v)"),
    Difference(
        "client_api_listeners",
        "the listeners whose APIs a client knows (ApiKeys.clientApis): NodeApiVersions.create fills in these",
        ("BROKER", "ZK_BROKER"), (Step("4.0.0", ("BROKER",), "KIP-500 / KIP-833: ZooKeeper mode removed in 4.0.0",
                                       "ApiKeys.clientApis of 4.0.0 is brokerApis (no ZK_BROKER listener type, "
                                       "javap)"),),
        "3.9.x: ApiKeys.clientApis = ZK_BROKER and BROKER APIs"),
    Difference(
        "producer_verification_epoch_bump",
        "a transaction verification entry records whether the producer can bump its epoch (transactions v2), and a "
        "TV2 marker of the verified epoch keeps the entry (UnifiedLog.updateProducers); before, every transactional "
        "batch or marker dropped it",
        False, (Step("4.0.0", True, "KIP-890 part 2 (VerificationStateEntry.supportsEpochBump)",
                     "VerificationStateEntry's constructor takes supportsEpochBump in the 4.0.0+ kafka-storage jars, "
                     "not in 3.9.1's; the differential (tests/test_kafka_producer_state.py) agrees per release"),)),
    Difference(
        "producer_tv2_first_sequence_zero",
        "ProducerAppendInfo.checkSequence: a producer with a TV2 verification entry and no state must start at "
        "sequence 0 (OUT_OF_ORDER_SEQUENCE_NUMBER otherwise)",
        False, (Step("4.1.0", True, "KAFKA-18202",
                     "ProducerAppendInfo's bytecode reads supportsEpochBump from 4.1.0 on (javap), and the "
                     "differential agrees per release"),)),
    Difference(
        "producer_marker_epoch_by_transaction_version",
        "ProducerAppendInfo.checkProducerEpoch for a marker takes the transaction version: TV2 needs an epoch above "
        "the producer's (a marker at the same epoch only when no transaction is open, a retried marker), TV0/1 at or "
        "above; a coordinator's marker without a version is refused",
        False, (Step("4.2.0", True, "KIP-1228 / KAFKA-19446 (apache/kafka#20882), KAFKA-19999",
                     "appendEndTxnMarker takes a short transactionVersion in the 4.2.0+ kafka-storage jars (javap)"),)),
    Difference(
        "producer_marker_retry_at_max_epoch",
        "a TV2 marker at the producer's epoch is also accepted when that epoch is Short.MAX_VALUE, a transaction "
        "still open",
        False, (Step("4.3.0", True, "KAFKA-20090 (apache/kafka#21469)",
                     "ProducerAppendInfo's bytecode compares the epoch with 32767 from 4.3.0 on (javap)"),)),
    # the idempotent producer's client bookkeeping (reference/client_producer_state.py)
    Difference(
        "client_invalid_pid_mapping_fatal",
        "TransactionManager.maybeTransitionToErrorState: INVALID_PRODUCER_ID_MAPPING is a fatal error for every "
        "producer (before: for an idempotent one, a failed batch whose partition then bumps the epoch)",
        False, (Step("4.0.0", True, "KAFKA-18019 (apache/kafka#17822)",
                     "kafka-clients sources: 4.0.2's maybeTransitionToErrorState names InvalidPidMappingException, "
                     "3.9.1's does not; the TXNCLI differential agrees per release"),)),
    # fetch bounds (reference/fetch.py)
    Difference(
        "fetch_offset_metadata_batch_base",
        "LogSegment.read's fetch offset metadata names the base offset of the batch holding the fetch offset (before: "
        "the fetch offset itself)",
        False, (Step("4.0.0", True, "KAFKA-17803 (apache/kafka#17528)",
                     "LogSegment.java of 4.0.2's kafka-storage sources builds it from startOffsetAndSize.offset, "
                     "3.9.1's from startOffset; the FREAD and TXNLOG differentials agree per release"),)),
    Difference(
        "fetch_params_hard_max_bytes",
        "FetchParams keeps the request version: hardMaxBytesLimit() (Fetch v<=2) turns minOneMessage off and keeps "
        "an incomplete first batch (ReplicaManager.readFromLog)",
        True, (Step("4.1.0", False, "KIP-896 follow-up: FetchParams loses requestVersion (JIRA not identified)",
                    "FetchParams has hardMaxBytesLimit in 3.9.1's and 4.0.2's jars, not in 4.1.2's or 4.4.0's (javap); "
                    "the FPARAMS differential agrees per release"),)),
    # --- the produce purgatory (reference/purgatory.py)
    Difference(
        "hw_waits_for_min_isr",
        "Partition.maybeIncrementLeaderHW does not move the high watermark while the ISR is below the effective min "
        "ISR (min.insync.replicas capped at the replica count), so an acks=all append whose ISR shrank after it times "
        "out (REQUEST_TIMED_OUT) instead of answering NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        True, (), "KAFKA-15583 (apache/kafka#14594, commit edc7e10a): first in 3.7.0 (git tag --contains), so in every "
                  "known release; the isUnderMinIsr test opens maybeIncrementLeaderHW in kafka_2.13 of 3.9.1, 4.1.2 "
                  "and 4.4.0 (javap -c)"),
    # produce admission (reference/produce_admission.py)
    Difference(
        "log_validator_zstd_needs_ibp",
        "LogValidator refuses ZStandard as the target compression below inter.broker.protocol.version 2.1 "
        "(UNSUPPORTED_COMPRESSION_TYPE); its constructor takes a MetadataVersion",
        True, (Step("4.0.0", False, "KIP-724 (message formats v0 and v1 and IBPs below 3.0 removed in 4.0)",
                    "4.0.2's LogValidator constructor has no MetadataVersion (sources jar, javap); the LOGVAL answers "
                    "of 3.9.1 and 4.0.2 (tests/test_kafka_produce_admission.py)"),),
        "3.9's LogValidator.java"),
    Difference(
        "log_validator_max_record_body",
        "LogValidator bounds each record body it decompresses (maxRecordBodySize; 'Invalid record size: N exceeds the "
        "configured maximum record size of M.')",
        False, (Step("4.2.2", True, "the LogValidator constructor with maxRecordBodySize (JIRA not identified)",
                     "javap of kafka-storage 4.2.2's LogValidator; LOGVAL answers of 4.1.2 and 4.2.2"),
                Step("4.3.0", False, "4.3.1 was built without it (4.3.0 assumed the same, not checked)",
                     "javap of kafka-storage 4.3.1's LogValidator"),
                Step("4.4.0", True, "the same change", "javap of kafka-storage 4.4.0's LogValidator; LOGVAL answers "
                                                       "of 4.3.1 and 4.4.0")),
        "absent from kafka-storage 3.9.1 to 4.1.2 (javap)"),
    Difference(
        "timestamp_after_max_default",
        "message.timestamp.after.max.ms's default: how far in the future a CreateTime timestamp may be",
        LONG_MAX, (Step("4.0.0", 3_600_000, "KIP-1030 (default changed to one hour)",
                        "ServerLogConfigs.LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS_DEFAULT in the 3.9.1 and 4.0.2 jars "
                        "(the LOGDEF request)"),),
        "3.9's LogConfig: Long.MAX_VALUE"),
    # the transaction coordinator's TransactionMetadata (reference/txn_metadata.py)
    Difference(
        "txn_tv2_transitions",
        "TransactionMetadata's transitions carry the client's TransactionVersion: with TV2 ending a transaction bumps "
        "the epoch, an abort may start from Empty or a completed transaction, a completion may move to the next "
        "producer id, and the completions copy the epochs and ids they bump",
        False, (Step("4.0.0", True, "KIP-890 part 2 (transactions server-side defense, TV2)",
                     "TransactionMetadata in kafka_2.13 of 3.9.1 and 4.0.0 (decompiled); the TXNMETA differential "
                     "agrees per release"),)),
    Difference(
        "txn_transit_whole",
        "TxnTransitMetadata is a Java record: every transit carries the current next producer id, completeTransitionTo "
        "copies every field of its transit, and the fence's and end-transaction's transits hold the metadata's own "
        "partition set, which the completion adopts",
        False, (Step("4.1.0", True, "apache/kafka#19662 (TxnTransitMetadata to transaction-coordinator, Java)",
                     "TransactionMetadata in kafka_2.13 of 4.0.2 and 4.1.0 (decompiled); the TXNMETA differential "
                     "agrees per release"),)),
    Difference(
        "txn_enum_names",
        "TransactionState is a Java enum: messages name states PREPARE_COMMIT (not PrepareCommit) and print a transit "
        "as a record (TxnTransitMetadata[...])",
        False, (Step("4.1.0", True, "TransactionState moved to transaction-coordinator (with apache/kafka#19662's "
                                    "TxnTransitMetadata; JIRA not identified)",
                     "kafka-transaction-coordinator 4.1.0 holds TransactionState and TxnTransitMetadata (jar listing); "
                     "the TXNMETA messages agree per release"),)),
    Difference(
        "txn_metadata_java",
        "TransactionMetadata is Java: a fenced InitProducerId throws ProducerFencedException (before: Left), the "
        "pending-state refusal names the current state (before: the target), pending states print as Optional, the "
        "fence's transit keeps the last epoch (before: -1), and the epoch-bump check wraps epoch + 1 to a short",
        False, (Step("4.2.0", True, "KAFKA-18884 (apache/kafka#19699)",
                     "kafka-transaction-coordinator 4.2.0 holds TransactionMetadata (decompiled, against 4.1.2's "
                     "kafka_2.13); the TXNMETA differential agrees per release"),)),
    Difference(
        "txn_max_epoch_kept",
        "At producer epoch Short.MAX_VALUE prepareFenceProducerEpoch keeps the epoch (before: IllegalStateException) "
        "and a TV2 abort keeps it (before: it overflowed to an illegal epoch)",
        False, (Step("4.3.0", True, "KAFKA-20090 (apache/kafka#21469)",
                     "TransactionMetadata of kafka-transaction-coordinator 4.2.0 and 4.3.0 (decompiled); the TXNMETA "
                     "differential agrees per release"),)),
)

_BY_FIELD: dict[str, Difference] = {d.field: d for d in DIFFERENCES}

# The reference's refusals (Kafka 4.0's wording) and how KIP-1066 (4.3.0+) ends them instead.
_CORDONED = {
    "All brokers are currently fenced.":
        "All brokers are currently fenced, or have all their log directories cordoned.",
    " broker(s) are registered.":
        " broker(s) are registered or some brokers have all their log directories cordoned.",
}

# Algorithms only some releases have: the profile field that says whether a release has it.
_ALGORITHM_FIELD = {"adminutils": "admin_utils", "adminutils-rack-aware": "admin_utils", "zk": "zk_controller"}
_ALGORITHM_NAME = {"admin_utils": "AdminUtils", "zk_controller": "the ZooKeeper controller"}


@dataclass(frozen=True)
class ReleaseProfile:
    """What one Kafka release does where releases differ (see `DIFFERENCES` for each field's history)."""

    version: str
    admin_utils: bool
    zk_controller: bool
    eligible_leader_replicas: bool
    last_known_leader_must_be_acceptable: bool
    last_known_leader_update: str
    reassignment_completion: str
    striped_cordoned_wording: bool
    striped_continues_from_existing: bool
    uniform_extra_slot_deferred: bool
    uniform_heterogeneous_builder: str
    topic_id_partition_record_hash: bool
    partitioner_rack_aware: bool
    metadata_version: str
    header_parse_refuses_removed_apis: bool
    header_parse_wording: str
    produce_advertised_min_zero: bool
    tagged_field_count_checked: bool
    client_api_listeners: tuple[str, ...]
    producer_verification_epoch_bump: bool
    producer_tv2_first_sequence_zero: bool
    producer_marker_epoch_by_transaction_version: bool
    producer_marker_retry_at_max_epoch: bool
    # the idempotent producer's client bookkeeping (reference/client_producer_state.py)
    client_invalid_pid_mapping_fatal: bool
    # fetch bounds (reference/fetch.py)
    fetch_offset_metadata_batch_base: bool
    fetch_params_hard_max_bytes: bool
    # the produce purgatory
    hw_waits_for_min_isr: bool
    # produce admission
    log_validator_zstd_needs_ibp: bool
    log_validator_max_record_body: bool
    timestamp_after_max_default: int
    # the transaction coordinator's TransactionMetadata (reference/txn_metadata.py)
    txn_tv2_transitions: bool
    txn_transit_whole: bool
    txn_enum_names: bool
    txn_metadata_java: bool
    txn_max_epoch_kept: bool

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def has(self, algorithm: str) -> bool:
        """Whether the release has this placer, election or controller (`adminutils`, `striped`, `zk`, ...)."""
        name = _ALGORITHM_FIELD.get(algorithm)
        return True if name is None else bool(getattr(self, name))

    def kraft_version(self) -> KRaftVersion:
        """The KRaft PartitionChangeBuilder rules of this release, for a new cluster (reference/election.py)."""
        return replace(self.kraft_rules(), eligible_leader_replicas=self.eligible_leader_replicas)

    def kraft_rules(self, **overrides: Any) -> KRaftVersion:
        """This release's PartitionChangeBuilder code rules (checked against its jars through the bridge,
        tests/test_kafka_conformance.py) with ELR off (ELR is a cluster setting: `kraft_version` turns it on where
        a new cluster has it), plus `overrides` (ELR on, a metadata version's rules)."""
        return KRaftVersion(**{"last_known_leader_must_be_acceptable": self.last_known_leader_must_be_acceptable,
                               "last_known_leader_update": self.last_known_leader_update,
                               "reassignment_completion": self.reassignment_completion, **overrides})

    def protocol(self, elr: bool | None = None) -> Protocol:
        """The replication model's rules for a cluster of this release: `Protocol.current(version)`, whose table
        of rules per release (`protocol.release_rules`) must agree with this profile's fields
        (tests/test_current_protocol.py); `elr` turns eligible leader replicas on or off (None: as a new cluster
        of the release has them). The model writes the last known leader as 4.1.1 on do
        (`remember_last_known_leader`), also for 4.1.0 and older: their rule (isr-emptied) writes something else only
        when a write leaves ISR members none of which is acceptable, which no model state has (the model's ISR
        members are unfenced), so they need no rule of their own there (4.1.0's jars agree with the model on every
        step compared: tests/test_release_gaps.py); the reference's builder has both rules."""
        from kcheck.model.replication.protocol import Protocol

        return Protocol.current(self.version, elr=elr)

    def assignor(self, assignor: str | AssignorInfo) -> AssignorInfo:
        """The reference's assignor (a name, or a registry AssignorInfo) as this release runs it: the KIP-848 uniform
        one takes the release (`server.UniformAssignor(kafka_version=...)`); the others are the same in every
        release the reference models."""
        from kcheck.reference.assignors import server
        from kcheck.reference.assignors.registry import ASSIGNORS, ServerSideAdapter, resolve_assignor

        info = resolve_assignor(assignor) if isinstance(assignor, str) else assignor
        name = info.name
        newest = _profile(DEFAULT_VERSION)
        same = (self.uniform_extra_slot_deferred, self.uniform_heterogeneous_builder) == (
            newest.uniform_extra_slot_deferred, newest.uniform_heterogeneous_builder)
        if name != "uniform" or ASSIGNORS.get(name) is not info or same:
            return info  # the registry's own object where the release runs it as the newest does
        version = self.version

        def factory() -> ServerSideAdapter:
            return ServerSideAdapter(server.UniformAssignor(kafka_version=version))

        return replace(ASSIGNORS[name], factory=factory)

    def striped_refusal(self, message: str) -> str:
        """A refusal of the reference's StripedReplicaPlacer as this release words it."""
        if not self.striped_cordoned_wording:
            return message
        for old, new in _CORDONED.items():
            if message.endswith(old):
                return message[: -len(old)] + new
        return message


def profile(version: str | None = None) -> ReleaseProfile:
    """The profile of a known release (default: the newest 4.x); UnknownRelease for any other."""
    return _profile(DEFAULT_VERSION if version is None else check_version(version))


@cache
def _profile(version: str) -> ReleaseProfile:
    return ReleaseProfile(version=version, **{d.field: d.value(version) for d in DIFFERENCES})


def difference(field: str) -> Difference:
    return _BY_FIELD[field]


def release_for(algorithm: str, requested: str | None = None) -> ReleaseProfile:
    """The release an algorithm runs as: `requested` when it has the algorithm (else UnknownRelease naming the
    releases that do), or without a request the newest release that has it."""
    if requested is not None:
        prof = profile(requested)
        if not prof.has(algorithm):
            raise UnknownRelease(f"{_ALGORITHM_NAME[_ALGORITHM_FIELD[algorithm]]} is not in Kafka {prof.version} "
                                 f"(it is in {', '.join(releases_with(algorithm))})")
        return prof
    if profile().has(algorithm):
        return profile()
    return profile(releases_with(algorithm)[0])


def releases_with(algorithm: str) -> list[str]:
    """The known releases that have this algorithm, newest first."""
    return [v for v in RELEASES if profile(v).has(algorithm)]


def releases_for(algorithms: Iterable[str], requested: str | None = None) -> dict[str, ReleaseProfile]:
    """`release_for` of each algorithm."""
    return {a: release_for(a, requested) for a in algorithms}


def describe(per_algorithm: Mapping[str, ReleaseProfile]) -> str:
    """`4.4.0`, or `4.0.2 (adminutils), 4.4.0 (striped)` when algorithms run as different releases."""
    versions = {p.version for p in per_algorithm.values()}
    if len(versions) <= 1:
        return next(iter(versions), DEFAULT_VERSION)
    return ", ".join(f"{p.version} ({a})" for a, p in per_algorithm.items())
