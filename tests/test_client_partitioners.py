"""`kcheck partition`: each client's answer against that client itself.

- the Java producer's column against kafka-clients' own `BuiltInPartitioner.partitionForKey` through the bridge
  (word PKEY), for string keys as StringSerializer writes them and for --hex bytes;
- kafka-python and librdkafka (confluent-kafka, its default `consistent_random` and `murmur2_random`) by producing
  the same keys with those clients to a 7-partition topic of the session cluster: the partition each record was
  acknowledged in is the client's answer.
"""

from __future__ import annotations

import json
import random
import uuid

import pytest

from cli_support import run
from kafka_support import kafka_bridge as _kafka
from kcheck.reference import kafka_partitioner as kp

KEYS = ["user-1", "user-2", "order-42", "é", "\U0001f600", "a" * 300, "x"]


def _answers(capsys: pytest.CaptureFixture[str], partitions: int, *args: str) -> dict[str, dict[str, int | None]]:
    code, out, err = run(capsys, "partition", "--partitions", str(partitions), "--json", *args)
    assert code == 0, err
    return {k["key"]: k["partitions"] for k in json.loads(out)["keys"]}


@pytest.mark.kafka
def test_the_java_column_is_kafka_clients_own(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    rng = random.Random(7)
    keys = [*KEYS, *(kp.random_key(rng) for _ in range(200))]
    text = [k for k in keys if isinstance(k, str) and k.splitlines() == [k] and not k.startswith("\ufeff")
            and not any(0xD800 <= ord(c) <= 0xDFFF for c in k)]  # what a UTF-8 keys file carries, one a line
    raw = [k for k in keys if isinstance(k, bytes) and k]
    for partitions in (1, 7, 1000, 2**31 - 1):
        path = tmp_path / "keys.txt"
        path.write_text("\n".join(text) + "\n", encoding="utf-8")
        ours = _answers(capsys, partitions, "--keys-file", str(path))
        theirs = kp.kafka_key_answers(_kafka("4.4.0"), [(partitions, text)])[0]
        assert [ours[k]["java"] for k in text] == [a[1] for a in theirs if a is not None]
        ours_hex = _answers(capsys, partitions, "--hex", *(k.hex() for k in raw))
        theirs = kp.kafka_key_answers(_kafka("4.4.0"), [(partitions, raw)])[0]
        assert [ours_hex[k.hex()]["java"] for k in raw] == [a[1] for a in theirs if a is not None]


@pytest.mark.cluster
@pytest.mark.kafka
def test_each_client_column_is_where_that_client_sends_the_key(cluster, capsys: pytest.CaptureFixture[str]) -> None:
    from confluent_kafka import Producer
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = f"kcheck-partition-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=7, replication_factor=1)])
    finally:
        admin.close()
    keys = [*KEYS, *(f"key-{i}" for i in range(60))]
    ours = _answers(capsys, 7, *keys)

    def librdkafka(partitioner: str) -> dict[str, int]:
        got: dict[str, int] = {}
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "partitioner": partitioner})

        def delivered(error, message) -> None:
            assert error is None, error
            got[message.key().decode()] = message.partition()

        for key in keys:
            producer.produce(topic, key=key.encode(), value=b"v", on_delivery=delivered)
        assert producer.flush(60) == 0
        return got

    assert librdkafka("consistent_random") == {k: ours[k]["librdkafka"] for k in keys}
    assert librdkafka("murmur2_random") == {k: ours[k]["librdkafka-murmur2"] for k in keys}
    # an empty key (not an absent one): murmur2_random hashes it, consistent_random places it at random
    empty = _answers(capsys, 7, "")['']
    spread: dict[str, set[int]] = {"murmur2_random": set(), "consistent_random": set()}
    for partitioner, seen in spread.items():
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "partitioner": partitioner})
        for _ in range(40):
            producer.produce(topic, key=b"", value=b"v", on_delivery=lambda e, m, seen=seen: seen.add(m.partition()))
        assert producer.flush(60) == 0
    # consistent_random's "random" for an empty key is librdkafka's sticky choice (sticky.partitioning.linger.ms):
    # one partition for a burst, so only the hashed answer is checked
    assert spread["murmur2_random"] == {empty["librdkafka-murmur2"]} and empty["librdkafka"] is None
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap)
    try:
        sent = {k: producer.send(topic, key=k.encode(), value=b"v").get(timeout=60).partition for k in keys}
    finally:
        producer.close()
    assert sent == {k: ours[k]["kafka-python"] for k in keys}
    # the everyday finding: the Java client and librdkafka's default disagree on most keys
    assert sum(ours[k]["java"] != ours[k]["librdkafka"] for k in keys) > len(keys) // 2


SARAMA = ("sarama", "sarama-reference", "sarama-crc", "sarama-murmur2")  # main.go's partitioners, in its order


@pytest.mark.slow  # the first build fetches sarama 1.60.1 and its modules (about 1.5 min); later builds are cached
def test_the_sarama_columns_are_sarama_itself(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    """tests/data/sarama/main.go runs sarama's own partitioners on keys given as hex; their answers are the columns."""
    import pathlib
    import shutil
    import subprocess

    go = shutil.which("go")
    if go is None:
        pytest.skip("Go is not installed: sarama's own partitioners cannot be built")
    source = pathlib.Path(__file__).parent / "data" / "sarama"
    work = tmp_path / "sarama"
    shutil.copytree(source, work)
    subprocess.run([go, "build", "-o", str(work / "keys"), "."], cwd=work, check=True, capture_output=True,
                   timeout=600)
    rng = random.Random(11)
    raw = [b"", b"abc", *(kp.random_key(rng) for _ in range(300))]
    keys = [k if isinstance(k, bytes) else k.encode("utf-8", "surrogatepass") for k in raw if k is not None]
    for partitions in (1, 7, 1000, 2**31 - 1):
        lines = "".join(f"{partitions} x{k.hex()}\n" for k in keys)
        theirs = subprocess.run([str(work / "keys")], input=lines, capture_output=True, text=True, check=True,
                                timeout=60).stdout.splitlines()
        ours = _answers(capsys, partitions, "--hex", *(k.hex() for k in keys))
        for key, line in zip(keys, theirs, strict=True):
            assert {c: ours[key.hex()][c] for c in SARAMA} == dict(zip(SARAMA, map(int, line.split()), strict=True)), \
                (key, partitions)
