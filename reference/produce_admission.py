"""Produce admission, bit-exact: which error a produce request's partition gets, in Kafka's order.

Two layers, each naming the Kafka code it mirrors:

* `validate` mirrors kafka-storage's `LogValidator.validateMessagesAndAssignOffsets` (with its
  `assignOffsetsNonCompressed`, `validateMessagesAndAssignOffsetsCompressed`, `buildRecordsAndAssignOffsets`,
  `validateBatch`, `validateRecord`, `validateKey`, `validateTimestamp` and `processRecordErrors`), for the v2
  record batches a client of every release we check sends (`BatchSpec.encode` builds their bytes as
  `DefaultRecordBatch.writeHeader` and `DefaultRecord.writeTo` do). It answers what the broker answers: the
  exception and its message with the per-record errors (batch index and message, KIP-467), or the offsets
  assigned, the max timestamp, the stamped partition leader epoch and the target compression
  (`BrokerCompressionType.targetCompression`). Checked against each release's own LogValidator
  (reference/kafka_produce_admission.py).
* `partition_error` mirrors the checks around it, in the order `KafkaApis.handleProduceRequest`,
  `ReplicaManager.appendRecords` / `appendToLocalLog`, `Partition.appendRecordsToLeader` and
  `UnifiedLog.analyzeAndValidateRecords` apply them, and `acks0_response` what `KafkaApis.handleProduceRequest`
  sends for acks=0 (nothing, or `RequestChannel.CloseConnectionResponse` when any partition failed), checked on a
  real cluster (tests/test_produce_admission_cluster.py).

Release differences are `ReleaseProfile` fields (`log_validator_*`, `timestamp_after_max_default`).
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

from kcheck.reference.releases import ReleaseProfile

LONG_MAX = 2**63 - 1
NO_TIMESTAMP = -1
TP = "t-0"  # the harness's TopicPartition("t", 0)
COMPRESSION_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
COMPRESSION_NAMES = {v: k for k, v in COMPRESSION_IDS.items()}
TOPIC_COMPRESSIONS = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")  # compression.type
DEFAULT_MAX_RECORD_BODY = 2147483639  # LogValidator's 12-argument constructor (releases with maxRecordBodySize)

# Kafka's error codes (clients' Errors) for what a partition can get on produce.
NONE, CORRUPT_MESSAGE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER = 0, 2, 3, 6
MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, NOT_ENOUGH_REPLICAS, INVALID_TOPIC_EXCEPTION = 10, 18, 19, 17
INVALID_REQUIRED_ACKS, INVALID_TIMESTAMP, UNSUPPORTED_FOR_MESSAGE_FORMAT = 21, 32, 43
UNSUPPORTED_COMPRESSION_TYPE, INVALID_RECORD = 76, 87
EXCEPTION_CODES = {"InvalidRecordException": INVALID_RECORD, "InvalidTimestampException": INVALID_TIMESTAMP,
                   "CorruptRecordException": CORRUPT_MESSAGE, "RecordTooLargeException": MESSAGE_TOO_LARGE,
                   "RecordBatchTooLargeException": RECORD_LIST_TOO_LARGE,
                   "UnsupportedCompressionTypeException": UNSUPPORTED_COMPRESSION_TYPE,
                   "UnsupportedForMessageFormatException": UNSUPPORTED_FOR_MESSAGE_FORMAT}


def _long(x: int) -> int:
    """Java long arithmetic: wrap to 64 bits."""
    x &= 0xFFFFFFFFFFFFFFFF
    return x - (1 << 64) if x >> 63 else x


# ---------------------------------------------------------------- the v2 record format


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """Crc32C.compute, which DefaultRecordBatch's checksum uses."""
    c = 0xFFFFFFFF
    t = _CRC_TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _zigzag(n: int, bits: int) -> bytes:
    z = ((n << 1) ^ (n >> (bits - 1))) & ((1 << bits) - 1)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


@dataclass(frozen=True)
class Rec:
    """One record as a client writes it: offset and timestamp deltas, key and value (None = null)."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None

    def encode(self) -> bytes:
        """DefaultRecord.writeTo without headers."""
        body = bytearray(b"\x00")  # attributes
        body += _zigzag(self.timestamp_delta, 64) + _zigzag(self.offset_delta, 32)
        for part in (self.key, self.value):
            body += _zigzag(-1, 32) if part is None else _zigzag(len(part), 32) + part
        body += _zigzag(0, 32)  # header count
        return _zigzag(len(body), 32) + bytes(body)

    def size(self) -> int:
        return len(self.encode())


@dataclass(frozen=True)
class BatchSpec:
    """A v2 record batch's header fields and records; `count` and `last_offset_delta` are written as given (a
    client may lie), `compression` and the flags go into the attributes."""

    records: tuple[Rec, ...]
    base_offset: int = 0
    last_offset_delta: int | None = None  # None: the last record's offset delta (or -1 without records)
    count: int | None = None  # None: the number of records
    leader_epoch: int = -1
    compression: str = "none"
    log_append_time: bool = False
    transactional: bool = False
    control: bool = False
    base_timestamp: int = 0
    max_timestamp: int | None = None  # None: the greatest record timestamp, as the producer writes it
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1

    @property
    def lod(self) -> int:
        if self.last_offset_delta is not None:
            return self.last_offset_delta
        return self.records[-1].offset_delta if self.records else -1

    @property
    def n(self) -> int:
        return len(self.records) if self.count is None else self.count

    def record_timestamps(self) -> list[int]:
        """Record.timestamp() as Kafka reads it: a LogAppendTime batch's records carry its max timestamp."""
        if self.log_append_time:
            return [self.max_ts] * len(self.records)
        return [_long(self.base_timestamp + r.timestamp_delta) for r in self.records]

    @property
    def max_ts(self) -> int:
        if self.max_timestamp is not None:
            return self.max_timestamp
        return max([NO_TIMESTAMP, *(_long(self.base_timestamp + r.timestamp_delta) for r in self.records)])

    def payload(self) -> bytes:
        raw = b"".join(r.encode() for r in self.records)
        if self.compression == "gzip":
            return gzip.compress(raw, mtime=0)
        return raw

    def encode(self) -> bytes:
        """DefaultRecordBatch.writeHeader followed by the (maybe compressed) records."""
        payload = self.payload()
        attributes = COMPRESSION_IDS[self.compression] | (8 if self.log_append_time else 0)
        attributes |= (16 if self.transactional else 0) | (32 if self.control else 0)
        after_crc = struct.pack(">hiqqqhii", attributes, self.lod, self.base_timestamp, self.max_ts,
                                self.producer_id, self.producer_epoch, self.base_sequence, self.n) + payload
        length = 4 + 1 + 4 + len(after_crc)  # leader epoch, magic, crc, then the rest
        return (struct.pack(">qiib", self.base_offset, length, self.leader_epoch, 2)
                + struct.pack(">I", crc32c(after_crc)) + after_crc)


def encode_records(batches: tuple[BatchSpec, ...]) -> bytes:
    return b"".join(b.encode() for b in batches)


def uncompressed_size(records: list[tuple[int, int, Rec]]) -> int:
    """The size of a v2 batch MemoryRecordsBuilder writes uncompressed: (offset delta, timestamp, record)."""
    base_ts = records[0][1] if records else 0
    return 61 + sum(Rec(d, _long(ts - base_ts), r.key, r.value).size() for d, ts, r in records)


# ---------------------------------------------------------------- LogValidator


@dataclass(frozen=True)
class ValidatorCase:
    """One call of LogValidator as UnifiedLog.appendAsLeader makes it (`origin` "C" client or "R" replication)."""

    batches: tuple[BatchSpec, ...]
    now: int = 1_700_000_000_000
    offset: int = 0  # the log end offset: the first offset assigned
    leader_epoch: int = 0
    compacted: bool = False
    log_append_time: bool = False  # the topic's message.timestamp.type
    before_ms: int = LONG_MAX  # message.timestamp.before.max.ms
    after_ms: int = LONG_MAX  # message.timestamp.after.max.ms
    topic_compression: str = "producer"
    origin: str = "C"
    ibp_low: bool = False  # inter.broker.protocol.version 2.0 (releases whose LogValidator takes one)
    max_record_body: int = -1  # -1: the default (releases whose LogValidator takes one)


class _Rejected(Exception):
    def __init__(self, name: str, message: str, record_errors: list[tuple[int, str]] | None = None) -> None:
        super().__init__(message)
        self.name, self.message, self.record_errors = name, message, record_errors or []


def source_compression(batches: tuple[BatchSpec, ...]) -> str:
    """UnifiedLog.analyzeAndValidateRecords: the last compressed batch's type (none if none is)."""
    out = "none"
    for b in batches:
        if b.compression != "none":
            out = b.compression
    return out


def target_compression(topic_compression: str, source: str) -> str:
    """BrokerCompressionType.targetCompression: the topic's compression.type, or the producer's for `producer`."""
    if topic_compression == "producer":
        return source
    return "none" if topic_compression == "uncompressed" else topic_compression


def _check_batch(case: ValidatorCase, b: BatchSpec) -> None:
    """LogValidator.validateBatch for a v2 batch (the first batch's magic and the target magic are 2)."""
    if case.origin != "C":
        return
    base, last = b.base_offset, _long(b.base_offset + b.lod)
    from_offsets = _long(last - base + 1)
    if from_offsets <= 0:
        raise _Rejected("InvalidRecordException", f"Batch has an invalid offset range: [{base}, {last}] in topic "
                                                  f"partition {TP}")
    if b.n <= 0:
        raise _Rejected("InvalidRecordException", f"Invalid reported count for record batch: {b.n} in topic "
                                                  f"partition {TP}")
    if from_offsets != b.n:
        raise _Rejected("InvalidRecordException", f"Inconsistent batch offset range [{base}, {last}] and count of "
                                                  f"records {b.n} in topic partition {TP}")
    if b.control:
        raise _Rejected("InvalidRecordException", f"Clients are not allowed to write control records in topic "
                                                  f"partition {TP}")
    if b.producer_id >= 0 and b.base_sequence < 0:
        raise _Rejected("InvalidRecordException", f"Invalid sequence number {b.base_sequence} in record batch with "
                                                  f"producerId {b.producer_id} in topic partition {TP}")


def _record_error(case: ValidatorCase, b: BatchSpec, index: int, r: Rec, ts: int, partial: bool
                  ) -> tuple[bool, int, str] | None:
    """LogValidator.validateRecord (a v2 record's magic always matches, and it is never compressed itself):
    (timestamp error?, index, message), or None."""
    if case.compacted and r.key is None:
        return False, index, f"Compacted topic cannot accept message without key in topic partition {TP}"
    if not case.log_append_time and ts != NO_TIMESTAMP:
        diff = _long(case.now - ts)
        if diff > case.before_ms or _long(-diff) > case.after_ms:
            offset = _long(b.base_offset + r.offset_delta)
            return True, index, (f"Timestamp {ts} of message with offset {offset} is out of range. The timestamp "
                                 f"should be within [{_long(case.now - case.before_ms)}, "
                                 f"{_long(case.now + case.after_ms)}]")
    elif b.log_append_time:
        shown = _record_str(b, r, ts, partial)
        return True, index, f"Invalid timestamp type in message {shown}. Producer should not set timestamp type to " \
                            f"LogAppendTime."
    return None


def _record_str(b: BatchSpec, r: Rec, ts: int, partial: bool) -> str:
    """DefaultRecord.toString (a null key or value counts 0 bytes), or PartialDefaultRecord's (-1)."""
    null = -1 if partial else 0
    key = null if r.key is None else len(r.key)
    value = null if r.value is None else len(r.value)
    name = "PartialDefaultRecord" if partial else "DefaultRecord"
    offset = _long(b.base_offset + r.offset_delta)
    return f"{name}(offset={offset}, timestamp={ts}, key={key} bytes, value={value} bytes)"


def _process_record_errors(errors: list[tuple[bool, int, str]]) -> None:
    """LogValidator.processRecordErrors."""
    if not errors:
        return
    listed = [(i, m) for _, i, m in errors]
    if any(t for t, _, _ in errors):
        raise _Rejected("InvalidTimestampException", "One or more records have been rejected due to invalid "
                                                     "timestamp", listed)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in listed[:3])
    raise _Rejected("InvalidRecordException", f"One or more records have been rejected due to {len(listed)} record "
                                              f"errors in total, and only showing the first three errors at most: "
                                              f"[{shown}]", listed)


def _first_batch(case: ValidatorCase) -> BatchSpec:
    """LogValidator.getFirstBatchAndMaybeValidateNoMoreBatches (v2: one batch only)."""
    if not case.batches:
        raise _Rejected("InvalidRecordException", "Record batch has no batches at all")
    if len(case.batches) > 1:
        raise _Rejected("InvalidRecordException", "Compressed outer record has more than one batch")
    return case.batches[0]


@dataclass
class OutBatch:
    base: int
    last: int
    leader_epoch: int
    max_timestamp: int
    log_append_time: bool
    compression: str
    count: int
    src: BatchSpec
    size: int | None
    records: list[tuple[int, int]] = field(default_factory=list)  # offset, timestamp

    def token(self) -> str:
        s = self.src
        head = [self.base, self.last, self.leader_epoch, self.max_timestamp,
                "LogAppendTime" if self.log_append_time else "CreateTime", self.compression, self.count,
                s.producer_id, s.producer_epoch, s.base_sequence, int(s.transactional), 0,
                "~" if self.size is None else self.size]
        return ":".join(map(str, head)) + "/" + ",".join(f"{o}@{t}" for o, t in self.records)


def _in_place_batch(case: ValidatorCase, b: BatchSpec, last: int, max_ts: int, tstype_append: bool) -> OutBatch:
    """DefaultRecordBatch.setLastOffset, setPartitionLeaderEpoch and setMaxTimestamp on the client's batch."""
    base = _long(last - b.lod)
    now_append = tstype_append
    out = OutBatch(base, last, case.leader_epoch, max_ts, now_append, b.compression, b.n, b, len(b.encode()))
    for r in b.records:
        ts = max_ts if now_append else _long(b.base_timestamp + r.timestamp_delta)
        out.records.append((_long(base + r.offset_delta), ts))
    return out


def _assign_non_compressed(case: ValidatorCase) -> list[str]:
    """LogValidator.assignOffsetsNonCompressed."""
    b = _first_batch(case)
    _check_batch(case, b)
    counter = case.offset
    errors = []
    max_batch_ts = NO_TIMESTAMP
    for i, r, ts in _read(b, None):
        if (e := _record_error(case, b, i, r, ts, partial=False)) is not None:
            errors.append(e)
        counter += 1
        max_batch_ts = max(max_batch_ts, ts)
    _process_record_errors(errors)
    max_ts = case.now if case.log_append_time else max_batch_ts
    out = _in_place_batch(case, b, counter - 1, max_ts, case.log_append_time)
    return _ok(counter, max_ts, False, case.now, [out])


def _validate_compressed(case: ValidatorCase, prof: ReleaseProfile, source: str, target: str) -> list[str]:
    """LogValidator.validateMessagesAndAssignOffsetsCompressed."""
    if target == "zstd" and prof.log_validator_zstd_needs_ibp and case.ibp_low:
        raise _Rejected("UnsupportedCompressionTypeException",
                        "Produce requests to inter.broker.protocol.version < 2.1 broker are not allowed to use "
                        "ZStandard compression")
    in_place = source == target
    b = _first_batch(case)
    if source == "none" and b.control:
        in_place = True
    _check_batch(case, b)
    # In place, the records are read without keys and values (skipKeyValueIterator: PartialDefaultRecord); if an
    # inner offset then forces a rebuild, the builder asks those records for their keys.
    partial = in_place
    bound = case.max_record_body if prof.log_validator_max_record_body and source != "none" else None
    errors, validated = [], []
    max_ts = NO_TIMESTAMP
    for i, r, ts in _read(b, bound):
        e = _record_error(case, b, i, r, ts, partial)
        if e is None:
            max_ts = max(max_ts, ts)
            if _long(b.base_offset + r.offset_delta) != i:
                in_place = False
            validated.append((r, ts))
        else:
            errors.append(e)
    _process_record_errors(errors)
    if not in_place:
        if partial and validated:
            raise _Rejected("UnsupportedOperationException", "key is skipped in PartialDefaultRecord")
        return _rebuild(case, b, validated, target)
    counter = case.offset + len(validated)
    if case.log_append_time:
        max_ts = case.now
    out = _in_place_batch(case, b, counter - 1, max_ts, case.log_append_time)
    return _ok(counter, max_ts, False, case.now, [out])


def _read(b: BatchSpec, max_body: int | None) -> Iterator[tuple[int, Rec, int]]:
    """DefaultRecordBatch's record iterators: `count` records are read, whatever the bytes hold, and the batch must
    end there; (index, record, timestamp). `max_body` is DefaultRecord.readFrom(InputStream)'s maxRecordBodySize
    (a compressed batch's records, releases that bound them; negative: the default)."""
    if b.n < 0:
        raise _Rejected("InvalidRecordException", f"Found invalid record count {b.n} in magic v2 batch")
    timestamps = b.record_timestamps()
    for i in range(b.n):
        if i >= len(b.records):
            raise _Rejected("InvalidRecordException", "Incorrect declared batch size, premature EOF reached")
        r = b.records[i]
        if max_body is not None and max_body >= 0 and (body := _body_len(r)) > max_body:
            raise _Rejected("InvalidRecordException", f"Invalid record size: {body} exceeds the configured maximum "
                                                      f"record size of {max_body}.")
        if i == b.n - 1 and b.n < len(b.records):
            raise _Rejected("InvalidRecordException", "Incorrect declared batch size, records still remaining in "
                                                      "file")
        yield i, r, timestamps[i]


def _body_len(r: Rec) -> int:
    enc = r.encode()
    n, shift, i = 0, 0, 0
    while True:
        byte = enc[i]
        n |= (byte & 0x7F) << shift
        i += 1
        if byte < 0x80:
            break
        shift += 7
    return (n >> 1) ^ -(n & 1)


def _rebuild(case: ValidatorCase, b: BatchSpec, validated: list[tuple[Rec, int]], target: str) -> list[str]:
    """LogValidator.buildRecordsAndAssignOffsets: a new batch through MemoryRecordsBuilder."""
    written: list[tuple[int, int, Rec]] = []
    builder_max = NO_TIMESTAMP
    for r, ts in validated:
        if ts < 0 and ts != NO_TIMESTAMP:
            raise _Rejected("IllegalArgumentException", f"Invalid negative timestamp {ts}")
        written.append((len(written), ts, r))
        builder_max = max(builder_max, ts)
    _builder_producer_state(b)
    counter = case.offset + len(written)
    max_ts = case.now if case.log_append_time else builder_max
    size = uncompressed_size(written) if target == "none" else None
    out = OutBatch(case.offset, counter - 1, case.leader_epoch, max_ts, case.log_append_time, target, len(written),
                   b, size)
    out.records = [(case.offset + d, case.now if case.log_append_time else ts) for d, ts, _ in written]
    return _ok(counter, max_ts, True, case.now, [out])


def _builder_producer_state(b: BatchSpec) -> None:
    """MemoryRecordsBuilder.validateProducerState, when the rebuilt batch is closed."""
    if b.transactional and b.producer_id == -1:
        raise _Rejected("IllegalArgumentException", "Cannot write transactional messages without a valid producer ID")
    if b.producer_id != -1:
        if b.producer_epoch == -1:
            raise _Rejected("IllegalArgumentException", "Invalid negative producer epoch")
        if b.base_sequence < 0 and not b.control:
            raise _Rejected("IllegalArgumentException", "Invalid negative sequence number used")


def _ok(counter: int, max_ts: int, changed: bool, now: int, batches: list[OutBatch]) -> list[str]:
    head = [str(counter), str(max_ts), str(int(changed)), str(now)]
    return head + [b.token() for b in batches]


def validate(case: ValidatorCase, prof: ReleaseProfile) -> str:
    """LogValidator.validateMessagesAndAssignOffsets' outcome, in the harness's answer (tab-separated): `OK target
    next maxTimestamp sizeMaybeChanged logAppendTime batch...` or `E target exception message
    [batchIndex message]...`."""
    source = source_compression(case.batches)
    target = target_compression(case.topic_compression, source)
    try:
        if source == "none" and target == "none":
            # records.hasMatchingMagic(2) holds for v2 batches: in-place validation
            fields = _assign_non_compressed(case)
        else:
            fields = _validate_compressed(case, prof, source, target)
    except _Rejected as e:
        out = ["E", target, e.name, e.message]
        for i, m in e.record_errors:
            out += [str(i), m]
        return "\t".join(out)
    return "\t".join(["OK", target, *fields])


def error_code(answer: str) -> int:
    """The produce error code a LogValidator answer becomes (ReplicaManager.appendToLocalLog's catch,
    Errors.forException: an exception Kafka has no code for, an IllegalArgumentException or
    UnsupportedOperationException, is UNKNOWN_SERVER_ERROR, -1)."""
    if answer.startswith("OK"):
        return NONE
    return EXCEPTION_CODES.get(answer.split("\t")[2], -1)


def response_detail(answer: str, topic: str, partition: int = 0) -> tuple[str | None, list[tuple[int, str]]]:
    """The error message and record errors a partition's produce response carries for a LogValidator answer: only a
    RecordValidationException's (per-record errors) come with its message (`ReplicaManager`'s LogAppendResult with
    hasCustomErrorMessage); any other exception's message stays in the broker. Messages name the real partition."""
    fields = answer.replace(TP, f"{topic}-{partition}").split("\t")
    errors = [(int(i), m) for i, m in zip(fields[4::2], fields[5::2], strict=True)] if fields[0] == "E" else []
    return (fields[3] if errors else None), errors


# ---------------------------------------------------------------- before and around the log


@dataclass(frozen=True)
class PartitionState:
    """What a produce request's partition meets on the broker it is sent to."""

    topic_exists: bool = True
    internal: bool = False
    leader_here: bool = True
    isr: int = 1
    replicas: int = 1
    min_isr: int = 1
    max_message_bytes: int = 1048588
    segment_bytes: int = 1073741824


@dataclass(frozen=True)
class ProduceEntry:
    """One partition's records in a produce request, as the broker sees them."""

    state: PartitionState
    batches: tuple[BatchSpec, ...] = ()
    bad_crc: bool = False


def partition_error(acks: int, client_id: str, entry: ProduceEntry, validator_answer: str | None = None) -> int:
    """The error one partition of a produce request gets, checks in Kafka's order (authorisation aside):

    1. `KafkaApis.handleProduceRequest`: a topic unknown to the metadata cache -> UNKNOWN_TOPIC_OR_PARTITION; then
       `ProduceRequest.validateRecords` (a v2 request must hold exactly one v2 batch) -> INVALID_RECORD.
    2. `ReplicaManager.appendRecords`: acks not in {-1, 0, 1} -> INVALID_REQUIRED_ACKS for every partition.
    3. `ReplicaManager.appendToLocalLog`: an internal topic from a client other than the admin -> INVALID_TOPIC.
    4. `Partition.appendRecordsToLeader`: not the leader -> NOT_LEADER_OR_FOLLOWER; acks=-1 with the ISR below
       min(min.insync.replicas, replicas) -> NOT_ENOUGH_REPLICAS.
    5. `UnifiedLog.analyzeAndValidateRecords`: per batch, a v2 base offset other than 0 -> INVALID_RECORD, a batch
       over max.message.bytes -> MESSAGE_TOO_LARGE, a bad CRC -> CORRUPT_MESSAGE; then LogValidator
       (`validator_answer`, see `validate`); the whole set over segment.bytes -> RECORD_LIST_TOO_LARGE.
    """
    st = entry.state
    if not st.topic_exists:
        return UNKNOWN_TOPIC_OR_PARTITION
    if len(entry.batches) != 1:
        return INVALID_RECORD
    if acks not in (-1, 0, 1):
        return INVALID_REQUIRED_ACKS
    if st.internal and client_id != "__admin_client":
        return INVALID_TOPIC_EXCEPTION
    if not st.leader_here:
        return NOT_LEADER_OR_FOLLOWER
    if acks == -1 and st.isr < min(st.min_isr, st.replicas):
        return NOT_ENOUGH_REPLICAS
    for b in entry.batches:
        if b.base_offset != 0:
            return INVALID_RECORD
        if len(b.encode()) > st.max_message_bytes:
            return MESSAGE_TOO_LARGE
        if entry.bad_crc:
            return CORRUPT_MESSAGE
    if validator_answer is not None and not validator_answer.startswith("OK"):
        return error_code(validator_answer)
    if len(encode_records(entry.batches)) > st.segment_bytes:
        return RECORD_LIST_TOO_LARGE
    return NONE


def acks0_response(errors: list[int]) -> str:
    """KafkaApis.handleProduceRequest's answer to acks=0: none when every partition succeeded
    (`requestChannel.sendNoOpResponse`), else the connection is closed (`closeConnection`, SocketServer's
    CloseConnectionResponse) so that the client learns of the failure by refreshing its metadata."""
    return "close" if any(e != NONE for e in errors) else "none"


# ---------------------------------------------------------------- the wire (Produce v8, non-flexible)

PRODUCE, API_VERSIONS = 0, 18
PRODUCE_WIRE_VERSION = 8  # in every release we check (4.0 removed v0-v2), the last before flexible versions


def _string(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def encode_produce_body(acks: int, timeout_ms: int, topics: list[tuple[str, list[tuple[int, bytes | None]]]],
                        transactional_id: str | None = None) -> bytes:
    """ProduceRequestData at version 8: transactional id, acks, timeout, then per topic its partitions' records."""
    out = bytearray(_string(transactional_id) + struct.pack(">hii", acks, timeout_ms, len(topics)))
    for name, partitions in topics:
        out += _string(name) + struct.pack(">i", len(partitions))
        for index, records in partitions:
            out += struct.pack(">i", index)
            out += struct.pack(">i", -1) if records is None else struct.pack(">i", len(records)) + records
    return bytes(out)


@dataclass(frozen=True)
class PartitionResponse:
    """ProduceResponseData's PartitionProduceResponse at version 8."""

    error_code: int
    base_offset: int
    log_append_time: int
    log_start_offset: int
    record_errors: tuple[tuple[int, str | None], ...]
    error_message: str | None


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self.data, self.i = data, 0

    def take(self, fmt: str) -> tuple:
        out = struct.unpack_from(fmt, self.data, self.i)
        self.i += struct.calcsize(fmt)
        return out

    def string(self) -> str | None:
        (n,) = self.take(">h")
        if n < 0:
            return None
        s = self.data[self.i:self.i + n].decode()
        self.i += n
        return s


def parse_produce_body(body: bytes) -> dict[tuple[str, int], PartitionResponse]:
    """ProduceResponseData at version 8 (after the response header): (topic, partition) -> its response."""
    c = _Cursor(body)
    out: dict[tuple[str, int], PartitionResponse] = {}
    (topics,) = c.take(">i")
    for _ in range(topics):
        name = c.string() or ""
        (parts,) = c.take(">i")
        for _ in range(parts):
            index, code, base, append_time, log_start = c.take(">ihqqq")
            (n,) = c.take(">i")
            errors = tuple((c.take(">i")[0], c.string()) for _ in range(max(n, 0)))
            out[(name, index)] = PartitionResponse(code, base, append_time, log_start, errors, c.string())
    return out
