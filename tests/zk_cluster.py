"""A real ZooKeeper-mode Kafka cluster on 127.0.0.1, for the tools of releases that only speak to ZooKeeper.

`kafka-topics --describe` before 2.2 and `kafka-reassign-partitions` before 2.5 read and write ZooKeeper
(`--zookeeper`), not the brokers. To have those releases' tools print real output, the test-data scripts run
them against this cluster: one ZooKeeper server (`org.apache.zookeeper.server.ZooKeeperServerMain`, the class
`zookeeper-server-start.sh` runs for a standalone server) and N brokers of Kafka 3.9.1, the last release with a
ZooKeeper controller (`kafka.Kafka` with `zookeeper.connect`), from the jars `kcheck.reference.kafka_tools`
resolves. The znode layout (`/brokers/ids`, `/brokers/topics/<topic>`, its partitions' `state`,
`/admin/reassign_partitions`, `/config/topics`) is the one every release since 0.10 reads.

Every process gets PR_SET_PDEATHSIG (SIGKILL): it dies with the Python process that started it however that ends,
so a failed script leaves nothing running. `stop()` ends every process by its PID and removes the folder it made.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from kcheck.cluster.local import HOST, JVM_OPTIONS, free_port
from kcheck.reference import kafka_jars, kafka_tools

VERSION = "3.9.1"  # the last release with a ZooKeeper controller
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ZkCluster:
    """ZooKeeper and brokers 1..n (racks round-robin) in a fresh temporary folder."""

    def __init__(self, brokers: int = 3, racks: Sequence[str] | None = ("a", "b", "c"),
                 config: Mapping[str, str] | None = None) -> None:
        self.n = brokers
        self.racks = tuple(racks or ())
        self.config = dict(config or {})
        self.directory = Path(tempfile.mkdtemp(prefix="kcheck-zk-"))
        self.zk_port = free_port()
        self.ports = {b: free_port() for b in range(1, brokers + 1)}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._classpath = kafka_tools.resolve_tools(VERSION).classpath

    @property
    def zookeeper(self) -> str:
        return f"{HOST}:{self.zk_port}"

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{p}" for p in self.ports.values())

    def _spawn(self, name: str, main: str, args: Sequence[str]) -> None:
        log = open(self.directory / f"{name}.log", "ab")  # noqa: SIM115 - the child holds it
        java = kafka_jars.require_tool("java")
        self.procs[name] = subprocess.Popen([java, *JVM_OPTIONS, "-cp", self._classpath, main, *args],
                                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            preexec_fn=_die_with_parent)
        log.close()

    def _properties(self, broker: int) -> Path:
        props = {
            "broker.id": str(broker), "zookeeper.connect": self.zookeeper,
            "listeners": f"PLAINTEXT://{HOST}:{self.ports[broker]}",
            "log.dirs": str(self.directory / f"broker-{broker}" / "data"),
            "offsets.topic.replication.factor": str(min(3, self.n)), "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": str(min(3, self.n)),
            "transaction.state.log.min.isr": "1", "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "1", "num.io.threads": "2", "background.threads": "2",
            "log.cleaner.enable": "false", "zookeeper.session.timeout.ms": "6000",
            **({"broker.rack": self.racks[(broker - 1) % len(self.racks)]} if self.racks else {}),
            **self.config,
        }
        path = self.directory / f"broker-{broker}" / "server.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    def start(self, timeout: float = 120.0) -> ZkCluster:
        zk_data = self.directory / "zookeeper"
        zk_data.mkdir()
        self._spawn("zookeeper", "org.apache.zookeeper.server.ZooKeeperServerMain", [str(self.zk_port), str(zk_data)])
        self._wait_port(self.zk_port, "zookeeper", timeout)
        for b in self.ports:
            self.start_broker(b)
        for b in self.ports:
            self._wait_port(self.ports[b], f"broker-{b}", timeout)
        self.wait_registered(set(self.ports), timeout)
        return self

    def start_broker(self, broker: int) -> None:
        self._spawn(f"broker-{broker}", "kafka.Kafka", [str(self._properties(broker))])

    def kill(self, broker: int) -> None:
        """SIGKILL one broker (its ZooKeeper session ends after zookeeper.session.timeout.ms)."""
        proc = self.procs.pop(f"broker-{broker}")
        proc.kill()
        proc.wait()

    def wait_registered(self, brokers: set[int], timeout: float = 60.0) -> None:
        """Until exactly `brokers` are registered in ZooKeeper (/brokers/ids), as the controller sees them."""
        deadline = time.monotonic() + timeout
        while True:
            done = subprocess.run(
                [kafka_jars.require_tool("java"), *JVM_OPTIONS, "-cp", self._classpath,
                 "org.apache.zookeeper.ZooKeeperMain", "-server", self.zookeeper, "ls", "/brokers/ids"],
                capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
            lines = [ln for ln in done.stdout.splitlines() if ln.startswith("[")]
            ids = {int(x) for x in lines[-1].strip("[]").replace(" ", "").split(",") if x} if lines else set()
            if ids == brokers:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"brokers registered {sorted(ids)}, wanted {sorted(brokers)}")
            time.sleep(1)

    def _wait_port(self, port: int, name: str, timeout: float) -> None:
        import socket

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            proc = self.procs[name]
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}; see {self.directory / name}.log")
            with socket.socket() as s:
                if s.connect_ex((HOST, port)) == 0:
                    return
            time.sleep(0.3)
        raise RuntimeError(f"{name} did not listen on {port} within {timeout:.0f} s")

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
        for proc in self.procs.values():
            proc.wait()
        self.procs.clear()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> ZkCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":  # a smoke run: start, describe with the oldest release's kafka-topics, stop
    with ZkCluster() as c:
        made = kafka_tools.run("3.9.1", "kafka-topics", ["--bootstrap-server", c.bootstrap, "--create", "--topic", "t",
                                                          "--replica-assignment", "1:2:3,2:3:1"])
        print(made.stdout, made.stderr[-500:])
        time.sleep(2)
        for v in ("0.10.2.2", "1.0.2", "2.0.1"):
            out = kafka_tools.run(v, "kafka-topics", ["--zookeeper", c.zookeeper, "--describe"])
            print(v, out.returncode, out.stdout, out.stderr[-300:] if out.returncode else "")
    print("left:", os.path.exists(c.directory))
