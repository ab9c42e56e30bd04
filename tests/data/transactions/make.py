"""Make the real `kafka-transactions.sh` outputs in this folder: Kafka's TransactionsCommand on real transactions.

Run (about three minutes on 2 cores; it starts a 3-broker KRaft cluster of Kafka 4.4.0 with cluster/local.py's
LocalCluster and stops it):

    python tests/data/transactions/make.py [--tools 4.4.0,4.1.2,...]

What it sets up with kafka-python's transactional producer, so the outputs are Kafka's and the ground truth is what
was done (`truth.json`), not what a tool printed:

  * `orders` (3 partitions), `hang` (1 partition), `stuck` (1 partition, its only replica on broker 3);
  * `open-1`: a transaction left open (records on orders-0 and orders-1, never committed; long timeout);
  * `committed-1` and `aborted-1`: one transaction committed, one aborted (records on orders-2);
  * `fenced-1`: a transaction open on orders-0, then a second producer with the same id initialises: the coordinator
    aborts the first's transaction and bumps the epoch (KIP-98's fencing); the first's commit then fails;
  * `expired-1`: a transaction with a 2 s timeout, left open on orders-1 for longer (the brokers run with
    transaction.abort.timed.out.transaction.cleanup.interval.ms of an hour, so the coordinator does not abort it
    while the tools run);
  * `hanging-1`: with transaction.partition.verification.enable=false (KIP-890's check off), a record sent to hang-0
    without AddPartitionsToTxn (kafka-python's transaction manager told the partition was added), then the
    transaction committed: the coordinator commits a transaction without hang-0, whose open transaction no marker
    ever closes (a hanging transaction, KIP-664);
  * `stuck-1`: a transaction on stuck-0, broker 3 killed, then committed (meant to catch PrepareCommit while the
    marker cannot reach the offline partition; Kafka 4.4.0's describe showed CompleteCommit seconds later).

Each tool release runs `list`, `describe --transactional-id` per id, `describe-producers` on orders-0, orders-1 and
hang-0, `find-hanging --broker-id 1` and `find-hanging --topic hang --max-transaction-timeout 0` before broker 3 is
killed, then `list` and `describe --transactional-id stuck-1` after. Written: `<tool release>/<name>.txt` (stdout;
stderr after it when the tool failed, without the INFO log records its script's WARN logging hides),
`index.json` (each file: tool, cluster, arguments, exit status, seconds since the state was set up) and
`truth.json`.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CLUSTER = "4.4.0"
TOOLS = ("4.4.0", "4.1.2", "4.0.2", "3.9.1")
IDS = ("open-1", "committed-1", "aborted-1", "fenced-1", "expired-1", "hanging-1")
CONFIG = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "3600000",
          "transaction.partition.verification.enable": "false"}


def _producer(boot: list[str], tid: str, timeout_ms: int = 600_000) -> Any:
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=boot, transactional_id=tid, transaction_timeout_ms=timeout_ms, acks="all",
                      linger_ms=0)
    p.init_transactions()
    return p


def _send(p: Any, topic: str, partition: int, n: int, tag: str) -> None:
    for i in range(n):
        p.send(topic, partition=partition, key=f"{tag}-{i}".encode(), value=b"v")
    p.flush()


def set_up(boot: list[str]) -> tuple[dict[str, Any], list[Any]]:
    """The transactions of the module's docstring; the producers still open (closing them would end nothing, but
    keeps their connections until the tools have run)."""
    truth: dict[str, Any] = {}
    keep = []
    p = _producer(boot, "open-1")
    p.begin_transaction()
    _send(p, "orders", 0, 3, "open")
    _send(p, "orders", 1, 2, "open")
    keep.append(p)
    truth["open-1"] = {"state": "open", "partitions": ["orders-0", "orders-1"]}
    for tid, commit in (("committed-1", True), ("aborted-1", False)):
        p = _producer(boot, tid)
        p.begin_transaction()
        _send(p, "orders", 2, 2, tid)
        p.commit_transaction() if commit else p.abort_transaction()
        keep.append(p)
        truth[tid] = {"state": "committed" if commit else "aborted", "partitions": ["orders-2"]}
    first = _producer(boot, "fenced-1")
    first.begin_transaction()
    _send(first, "orders", 0, 1, "fenced")
    second = _producer(boot, "fenced-1")  # fences the first: its open transaction is aborted
    try:
        first.commit_transaction()
        fenced = "the first producer's commit succeeded"
    except Exception as e:  # kafka-python's ProducerFencedError (or the error it wraps it in)
        fenced = f"the first producer's commit failed: {type(e).__name__}"
    keep.append(second)
    truth["fenced-1"] = {"state": "first producer fenced by a second", "first_commit": fenced}
    p = _producer(boot, "expired-1", timeout_ms=2000)
    p.begin_transaction()
    _send(p, "orders", 1, 1, "expired")
    keep.append(p)
    truth["expired-1"] = {"state": "open past its 2000 ms timeout", "partitions": ["orders-1"]}
    p = _producer(boot, "hanging-1")
    tm = p._transaction_manager
    p.begin_transaction()
    tm.maybe_add_partition_to_transaction = tm._partitions_in_transaction.add  # skip AddPartitionsToTxn
    _send(p, "hang", 0, 2, "hanging")
    p.commit_transaction()
    keep.append(p)
    truth["hanging-1"] = {"state": "committed without hang-0: hang-0's transaction hangs", "partitions": ["hang-0"]}
    return truth, keep


# An INFO log record of the admin client and its continuation lines (its config dump): bin/kafka-run-class.sh runs
# the tools with WARN logging, so a terminal shows neither; the tool's own lines and WARN records are kept.
_INFO = re.compile(r"^\[[^\]]*\] INFO .*\n(?:\t.*\n|\n)*", re.M)


def _without_info(stderr: str) -> str:
    return _INFO.sub("", stderr)


def run_tools(cluster: Any, releases: tuple[str, ...], jobs: list[tuple[str, list[str]]], began: float,
              index: list[dict[str, Any]]) -> None:
    from kcheck.reference import kafka_tools
    for release in releases:
        (HERE / release).mkdir(exist_ok=True)
        for name, args in jobs:
            out = kafka_tools.run(release, "kafka-transactions", ["--bootstrap-server", cluster.bootstrap, *args])
            text = out.stdout + (_without_info(out.stderr) if out.returncode else "")
            (HERE / release / f"{name}.txt").write_text(text, encoding="utf-8")
            index.append({"file": f"{release}/{name}.txt", "tool": release, "cluster": CLUSTER,
                          "args": ["--bootstrap-server", "BOOTSTRAP", *args], "exit": out.returncode,
                          "seconds_after_setup": round(time.monotonic() - began, 1)})


def main(releases: tuple[str, ...] = TOOLS) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    from kcheck.cluster.local import LocalCluster
    work = Path(tempfile.mkdtemp(prefix="kcheck-txn-"))
    cluster = LocalCluster(CLUSTER, 3, directory=work / "cluster", config=CONFIG)
    cluster.start()
    index: list[dict[str, Any]] = []
    try:
        boot = cluster.bootstrap.split(",")
        admin = KafkaAdminClient(bootstrap_servers=boot, request_timeout_ms=30_000)
        admin.create_topics([NewTopic("orders", 3, 3), NewTopic("hang", 1, 3),
                             NewTopic("stuck", replica_assignments={0: [3]})])
        admin.close()
        time.sleep(2)
        truth, keep = set_up(boot)
        began = time.monotonic()
        time.sleep(3)  # expired-1 is now past its 2 s timeout
        jobs = [("list", ["list"])] + [(f"describe.{t}", ["describe", "--transactional-id", t]) for t in IDS]
        jobs += [(f"describe-producers.{t}-{n}", ["describe-producers", "--topic", t, "--partition", str(n)])
                 for t, n in (("orders", 0), ("orders", 1), ("hang", 0))]
        jobs += [("find-hanging.broker-1", ["find-hanging", "--broker-id", "1"]),
                 ("find-hanging.hang", ["find-hanging", "--topic", "hang", "--max-transaction-timeout", "0"]),
                 ("describe.nosuch", ["describe", "--transactional-id", "nosuch"])]
        run_tools(cluster, releases, jobs, began, index)
        stuck = _producer(boot, "stuck-1")
        stuck.begin_transaction()
        _send(stuck, "stuck", 0, 1, "stuck")
        cluster.kill(3)
        commit = threading.Thread(target=stuck.commit_transaction, daemon=True)  # answered once PrepareCommit is
        commit.start()  # written; the markers to stuck-0 are not
        commit.join(20)
        truth["stuck-1"] = {"state": "committed while stuck-0's only replica (broker 3) is down",
                            "partitions": ["stuck-0"]}
        time.sleep(2)
        after = [("after-kill.list", ["list"]),
                 ("after-kill.describe.stuck-1", ["describe", "--transactional-id", "stuck-1"]),
                 ("after-kill.describe-producers.stuck-0",
                  ["describe-producers", "--topic", "stuck", "--partition", "0"])]
        run_tools(cluster, releases[:1], after, began, index)
        for p in [*keep, stuck]:
            p.close(timeout=1)
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
    (HERE / "index.json").write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
    (HERE / "truth.json").write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(index)} outputs of kafka-transactions to {HERE}")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(tuple(args[1].split(",")) if args[:1] == ["--tools"] else TOOLS)
