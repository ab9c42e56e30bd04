"""Read a live Kafka cluster's metadata as the text a describe file and a brokers file hold.

`read_cluster(bootstrap)` asks the cluster through kafka-python's admin client (a maintained, pure-Python
client: it installs from a wheel everywhere, and it speaks every admin API this needs, among them
DescribeTopicPartitions for ELR and ListPartitionReassignments, which confluent-kafka's admin client lacks):

- `describe_text` is what `kafka-topics.sh --describe` prints (Kafka's `tools/.../TopicCommand.java`,
  `TopicDescription.printDescription` and `PartitionDescription.printDescription`), so it feeds the same parser
  a describe file gets: one header line per topic (TopicId, PartitionCount, ReplicationFactor, Configs) and one
  line per partition (Leader, Replicas, Isr, Adding/Removing Replicas while a reassignment is in flight, Elr,
  LastKnownElr). Topics are in name order. As in TopicCommand, `Configs:` lists the topic's configs whose source
  is not Kafka's default, and ReplicationFactor leaves out the replicas a reassignment is adding. One difference
  on purpose: `min.insync.replicas` is always there (its effective value), also when it is Kafka's default and
  kafka-topics would leave it out, because the checks need it.
- ELR and LastKnownElr come from DescribeTopicPartitions (KIP-966, brokers 3.7+); a broker without that API is
  read with Metadata instead, and then they print `N/A`, as kafka-topics prints a null ELR.
- `brokers_text` has one `id:rack` line per registered broker (`id` alone without a rack), from DescribeCluster
  with fenced brokers included: a fenced broker (stopped, or not heartbeating) keeps its replicas, so its rack
  matters; its line carries a `# fenced` comment, which the brokers-file parser skips. Fenced brokers are listed
  by clusters of Kafka 4.0 and later (DescribeCluster v2, KIP-1073); a 3.9 cluster lists only unfenced brokers,
  so there a stopped broker is missing from `brokers_text`.

`--command-config FILE` is a Kafka client properties file (what `kafka-topics --command-config` takes); the
security settings are mapped to kafka-python's options (`client_config`); a key kcheck cannot map, or a
keystore Python cannot read (JKS, PKCS12), is refused in one line. Every client error (unreachable, refused
authentication, not authorized, timeout) is an InputError on `--bootstrap-server` (one line; the CLI exits 2).
"""

from __future__ import annotations

import base64
import contextlib
import logging
import re
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kcheck.inputs.formats import InputError, read_text

SOURCE = "--bootstrap-server"
MIN_INSYNC = "min.insync.replicas"
_HOST_PORT = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+):[0-9]{1,5}")


@dataclass(frozen=True)
class LiveState:
    describe_text: str  # kafka-topics --describe format
    brokers_text: str  # 'id:rack' lines
    source: str  # what was read, for reports: 'cluster at HOST:PORT'


# ---------------------------------------------------------------------------------------------------------
# --command-config: Java client properties -> kafka-python options


def parse_properties(text: str, source: str) -> list[tuple[int, str, str]]:
    """`java.util.Properties` text: (line, key, value) in order; '#'/'!' comments, '\\' continuations, '=' ':' or
    whitespace between key and value, the usual escapes."""
    out: list[tuple[int, str, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        logical = lines[i].lstrip()
        i += 1
        if not logical or logical[0] in "#!":
            continue
        while _continues(logical) and i < len(lines):
            logical = logical[:-1] + lines[i].lstrip()
            i += 1
        m = re.match(r"((?:\\.|[^\s=:\\])+)\s*[=:]?\s*(.*)$", logical, re.S)
        if m is None:
            raise InputError(source, f"not a key=value line: {logical[:80]!r}", start + 1)
        out.append((start + 1, _unescape(m.group(1)), _unescape(m.group(2))))
    return out


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _unescape(s: str) -> str:
    def one(m: re.Match[str]) -> str:
        c = m.group(1)
        if c.startswith("u"):
            return chr(int(c[1:], 16))
        return {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(c, c)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", one, s)


_JAAS = re.compile(r"^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;?\s*$", re.S)
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:\\.|[^"\\])*)"|(\S+))')
_PLAIN_MODULES = {"org.apache.kafka.common.security.plain.PlainLoginModule": ("PLAIN",),
                  "org.apache.kafka.common.security.scram.ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512")}
_PEM_ONLY = "kafka-python reads PEM files only: convert it (keytool/openssl) and set the type to PEM"


class _Props:
    """A client properties file's settings, taken one by one (what is left at the end is refused)."""

    def __init__(self, path: str) -> None:
        self.source = path
        self.left: dict[str, tuple[int, str]] = {}
        for n, name, raw in parse_properties(read_text(path), path):
            self.left[name] = (n, raw)

    def take(self, key: str) -> str | None:
        item = self.left.pop(key, None)
        return None if item is None else item[1]

    def line(self, key: str) -> int | None:
        return self.left[key][0] if key in self.left else None


def client_config(path: str) -> dict[str, Any]:
    """kafka-python admin options from a Kafka client properties file (security settings, client id, timeouts)."""
    props = _Props(path)
    out: dict[str, Any] = {}
    mechanism = _security(props, out)
    _jaas(props, mechanism, out)
    _ssl(props, out)
    _client(props, out)
    if props.left:
        key = min(props.left, key=lambda k: props.left[k][0])
        raise InputError(path, f"{key} is not a setting kcheck's client can use (it maps security.protocol, "
                               "sasl.mechanism, sasl.jaas.config, ssl.truststore.*, ssl.keystore.*, "
                               "ssl.key.password, ssl.endpoint.identification.algorithm, client.id, "
                               "request.timeout.ms)", props.left[key][0])
    return out


def _security(props: _Props, out: dict[str, Any]) -> str | None:
    """security.protocol and sasl.mechanism; the mechanism named."""
    source, take = props.source, props.take
    protocol = take("security.protocol")
    if protocol is not None:
        if protocol.upper() not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise InputError(source, f"security.protocol {protocol!r} is not PLAINTEXT, SSL, SASL_PLAINTEXT or "
                                     "SASL_SSL")
        out["security_protocol"] = protocol.upper()
    mechanism = take("sasl.mechanism")
    if mechanism is not None:
        if mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            raise InputError(source, f"sasl.mechanism {mechanism} is not supported by kcheck's client "
                                     "(PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 are)")
        out["sasl_mechanism"] = mechanism
    return mechanism


def _jaas(props: _Props, mechanism: str | None, out: dict[str, Any]) -> None:
    """sasl.jaas.config: PlainLoginModule or ScramLoginModule with a username and a password."""
    source, take, line = props.source, props.take, props.line
    jaas_line = line("sasl.jaas.config")
    jaas = take("sasl.jaas.config")
    if jaas is not None:
        m = _JAAS.match(jaas)
        if m is None or m.group(1) not in _PLAIN_MODULES:
            module = m.group(1) if m else jaas.split()[0] if jaas.split() else "''"
            raise InputError(source, f"sasl.jaas.config: login module {module} is not supported by kcheck's "
                                     "client (PlainLoginModule and ScramLoginModule with username and password "
                                     "are)", jaas_line)
        options = {o.group(1): (o.group(2) if o.group(2) is not None else o.group(3))
                   for o in _JAAS_OPTION.finditer(m.group(3))}
        for key in ("username", "password"):
            if key not in options:
                raise InputError(source, f"sasl.jaas.config: no {key}=\"...\" option", jaas_line)
        if mechanism is not None and mechanism not in _PLAIN_MODULES[m.group(1)]:
            raise InputError(source, f"sasl.jaas.config: {m.group(1).rsplit('.', 1)[-1]} does not go with "
                                     f"sasl.mechanism {mechanism}", jaas_line)
        out["sasl_plain_username"] = _unescape(options["username"])
        out["sasl_plain_password"] = _unescape(options["password"])
        out.setdefault("sasl_mechanism", _PLAIN_MODULES[m.group(1)][0])


def _ssl(props: _Props, out: dict[str, Any]) -> None:
    """The trust and key stores (PEM files only) and their passwords, and host name checking."""
    source, take = props.source, props.take
    for store in ("truststore", "keystore"):
        kind = take(f"ssl.{store}.type")
        location = take(f"ssl.{store}.location")
        if location is None:
            if kind is not None and kind.upper() != "PEM":
                raise InputError(source, f"ssl.{store}.type {kind} without ssl.{store}.location")
            continue
        if (kind or "JKS").upper() != "PEM":
            raise InputError(source, f"ssl.{store}.location {location} is a {(kind or 'JKS (the default)')} "
                                     f"store: {_PEM_ONLY}")
        if store == "truststore":
            out["ssl_cafile"] = location
        else:
            out["ssl_certfile"] = location  # a PEM keystore: the certificate chain and the private key in one file
    for key in ("ssl.key.password", "ssl.keystore.password"):
        value = take(key)
        if value is not None:
            out["ssl_password"] = value
    take("ssl.truststore.password")  # a PEM truststore has no password
    algorithm = take("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        out["ssl_check_hostname"] = algorithm.lower() == "https"


def _client(props: _Props, out: dict[str, Any]) -> None:
    """client.id and the request time-outs."""
    source, take = props.source, props.take
    client_id = take("client.id")
    if client_id is not None:
        out["client_id"] = client_id
    for key, option in (("request.timeout.ms", "request_timeout_ms"),
                        ("default.api.timeout.ms", "request_timeout_ms")):
        value = take(key)
        if value is not None:
            if not value.isdigit():
                raise InputError(source, f"{key} {value!r} is not a number of milliseconds")
            out[option] = int(value)


# ---------------------------------------------------------------------------------------------------------
# Reading the cluster


def kafka_uuid(value: object) -> str:
    """A topic id as Kafka prints it (URL-safe base64 of its 16 bytes, no padding)."""
    raw = value.bytes if isinstance(value, uuid.UUID) else uuid.UUID(str(value)).bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _ids(nodes: list[int] | None) -> str:
    return ",".join(str(n) for n in nodes or [])


def _elr(nodes: list[int] | None, known: bool) -> str:
    # kafka-python hands back an empty nullable array as None; with DescribeTopicPartitions that is an empty list
    return _ids(nodes) if known else "N/A"


def _bootstrap_servers(bootstrap: str) -> list[str]:
    servers = [s.strip() for s in bootstrap.split(",") if s.strip()]
    if not servers:
        raise InputError(SOURCE, "empty; give HOST:PORT[,HOST:PORT...]")
    for s in servers:
        if not _HOST_PORT.fullmatch(s) or not 0 < int(s.rsplit(":", 1)[1]) < 65536 or len(s) > 260:
            raise InputError(SOURCE, f"{s!r} is not HOST:PORT")
    return servers


class _Recorder(logging.Handler):
    """The client's own log lines: a refused login or a TLS failure during bootstrap is only logged, then the
    bootstrap times out; the line that says why is kept for the error (`lines`: WARNING and above).

    A broker may also close the connection right after a wrong password without its error response reaching the
    client (seen with 4.4.0 under load); the client then logs only a lost connection. From the client's debug lines
    (while `read_cluster` bootstraps) it notes a connection lost after its SaslAuthenticate request went out and
    before an answer came: `closed_after_credentials`."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.closed_after_credentials = False
        self._sent: set[str] = set()  # nodes whose credentials went out and got no answer yet

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            text = record.getMessage()
            if record.levelno >= logging.WARNING:
                self.lines.append(text)
            node = _NODE.search(text)
            if node is None:
                return
            if "SaslAuthenticateResponse" in text:
                self._sent.discard(node.group(1))
            elif "SaslAuthenticateRequest" in text:
                self._sent.add(node.group(1))
            elif "Connection lost" in text and node.group(1) in self._sent:
                self._sent.discard(node.group(1))
                self.closed_after_credentials = True


_NODE = re.compile(r"\bnode(?:_id)?=([\w.-]+)")


_AUTH_FAILED = re.compile(r"SaslAuthenticationFailedError: (?:SaslAuthenticationFailedError: )?([^)\]]+)")
_TLS_FAILED = re.compile(r"(SSL[A-Za-z]*Error[^)\]]*)")


@contextlib.contextmanager
def _client_errors(servers: list[str], timeout_s: float, recorder: _Recorder) -> Iterator[None]:
    """Every failure of the client as one InputError line on --bootstrap-server."""
    from kafka import errors

    where = ",".join(servers)
    try:
        yield
    except InputError:
        raise
    except errors.KafkaTimeoutError as e:
        text = str(e)
        if "bootstrap" in text.lower():
            for line in reversed(recorder.lines):
                if m := _AUTH_FAILED.search(line):
                    raise InputError(SOURCE, f"{where}: authentication failed: {_reason(m.group(1))}") from None
                if m := _TLS_FAILED.search(line):
                    raise InputError(SOURCE, f"{where}: TLS failed: {_reason(m.group(1))}") from None
            if recorder.closed_after_credentials:
                raise InputError(SOURCE, f"{where}: authentication failed: the broker closed the connection after "
                                         "the SASL credentials were sent, without saying why") from None
            raise InputError(SOURCE, f"cannot reach a broker at {where} within {timeout_s:g} s") from None
        raise InputError(SOURCE, f"{where}: timed out after {timeout_s:g} s ({_short(e)})") from None
    except (errors.SaslAuthenticationFailedError, errors.UnsupportedSaslMechanismError) as e:
        raise InputError(SOURCE, f"{where}: authentication failed: {_short(e)}") from None
    except errors.AuthorizationError as e:
        raise InputError(SOURCE, f"{where}: not authorized: {_short(e)}") from None
    except errors.KafkaConnectionError as e:
        raise InputError(SOURCE, f"cannot reach a broker at {where}: {_short(e)}") from None
    except errors.KafkaError as e:
        raise InputError(SOURCE, f"{where}: {_short(e)}") from None
    except OSError as e:  # e.g. an SSL file that cannot be read
        raise InputError(SOURCE, f"{where}: {e.strerror or e}") from None


def _reason(text: str) -> str:
    """A logged reason without the client's retry note: 'Authentication failed: Invalid username or password'."""
    return re.sub(r"\s*\(backoff\b.*$", "", text).strip()


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split())
    name = type(e).__name__
    return text if text.startswith(name) else f"{name}: {text}" if text else name


@contextlib.contextmanager
def _quiet(recorder: _Recorder) -> Iterator[None]:
    """kafka-python logs each failed connection attempt: kept for the one-line error, not printed."""
    logger = logging.getLogger("kafka")
    level, propagate = logger.level, logger.propagate
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    logger.addHandler(recorder)
    try:
        yield
    finally:
        logger.removeHandler(recorder)
        logger.setLevel(level)
        logger.propagate = propagate


PROBE_S = 3.0  # seconds for a first TCP connection to some bootstrap server, all of them together


def probe(servers: list[str], timeout_s: float = PROBE_S) -> None:
    """Refuse in seconds a bootstrap list none of whose servers accepts a TCP connection (a closed port, a host
    that does not resolve or does not answer): the client would retry it until its whole timeout (30 s)."""
    deadline = time.monotonic() + timeout_s
    problems = []
    for server in servers:
        host, _, port = server.rpartition(":")
        left = deadline - time.monotonic()
        if left <= 0:
            problems.append(f"{server}: no time left")
            continue
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=left):
                return
        except (socket.gaierror, UnicodeError):  # UnicodeError: a host name label IDNA cannot encode
            problems.append(f"{server}: unknown host")
        except TimeoutError:
            problems.append(f"{server}: no answer within {timeout_s:g} s")
        except OSError as e:
            problems.append(f"{server}: {e.strerror or e}")
    raise InputError(SOURCE, f"cannot reach a broker ({'; '.join(problems)})")


def read_cluster(bootstrap: str, command_config: str | None = None, timeout_s: float = 30.0) -> LiveState:
    """The live cluster's topics, partitions and brokers as describe text and brokers text (see the module doc).
    Every input is checked first (the address, the properties file); a cluster no server of which accepts a
    connection is refused within PROBE_S."""
    servers = _bootstrap_servers(bootstrap)
    config = client_config(command_config) if command_config is not None else {}
    probe(servers, min(timeout_s, PROBE_S))
    timeout_ms = int(timeout_s * 1000)
    config.setdefault("request_timeout_ms", timeout_ms)
    config.setdefault("client_id", "kcheck")
    deadline = time.monotonic() + timeout_s
    recorder = _Recorder()
    with _quiet(recorder), _client_errors(servers, timeout_s, recorder):
        from kafka.admin import KafkaAdminClient
        from kafka.errors import KafkaConnectionError, KafkaTimeoutError

        while True:
            # Bootstrap in short attempts: a refused login or TLS handshake is only logged by the client, which
            # retries it until its timeout; between attempts such a line ends the wait (it does not heal).
            left_ms = max(1000, int((deadline - time.monotonic()) * 1000))
            try:
                with kafka_log_level(logging.DEBUG):  # the recorder reads the SASL exchange (see _Recorder)
                    admin = KafkaAdminClient(bootstrap_servers=servers,
                                             bootstrap_timeout_ms=min(left_ms, _ATTEMPT_MS), **config)
            except KafkaTimeoutError:
                if _refused(recorder) or left_ms <= _ATTEMPT_MS:
                    raise
                continue
            try:
                return _read(admin, ",".join(servers))
            except KafkaConnectionError:
                # A broker that just died stays in the metadata until the controller fences it; a request routed
                # to it is refused: ask again with fresh metadata while there is time.
                if time.monotonic() + 1.0 >= deadline:
                    raise
            finally:
                admin.close()
            time.sleep(0.5)


_ATTEMPT_MS = 5000


def _refused(recorder: _Recorder) -> bool:
    return recorder.closed_after_credentials or any(_AUTH_FAILED.search(line) or _TLS_FAILED.search(line)
                                                    for line in recorder.lines)


@contextlib.contextmanager
def kafka_log_level(level: int) -> Iterator[None]:
    """kafka-python's loggers at `level` meanwhile: DEBUG while `read_cluster` bootstraps (the recorder reads the SASL
    exchange from those lines; only then, as they are many), CRITICAL while a cluster is polled for readiness."""
    logger = logging.getLogger("kafka")
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)


def _read(admin: Any, where: str) -> LiveState:
    from kafka import errors
    from kafka.admin import ConfigResource, ConfigResourceType

    cluster = admin.describe_cluster()
    names = sorted(admin.list_topics())
    topics, elr_known = _describe_topics(admin, names)
    configs: dict[str, dict[str, Any]] = {}
    if names:
        answer = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t) for t in names],
                                        config_filter="all")
        configs = answer.get("topic", {}) if isinstance(answer, dict) else {}
    try:
        reassignments = admin.list_partition_reassignments()
    except (errors.IncompatibleBrokerVersion, errors.UnsupportedVersionError,
            errors.ClusterAuthorizationFailedError):
        reassignments = {}  # as TopicCommand.listAllReassignments: described without them
    moving = {(tp.topic, tp.partition): r for tp, r in reassignments.items()}

    lines: list[str] = []
    for topic in topics:
        name = topic["name"]
        error = errors.for_code(topic.get("error_code", 0))
        if error is not errors.NoError:
            raise error(f"topic {name}")
        parts = sorted(topic["partitions"], key=lambda p: p["partition_index"])
        if not parts:
            continue
        first = parts[0]
        ra = moving.get((name, first["partition_index"]))
        rf = len(first["replica_nodes"])
        if ra is not None and set(first["replica_nodes"]) & (set(ra["adding_replicas"]) | set(ra["removing_replicas"])):
            rf = len(ra["replicas"]) - len(ra["adding_replicas"])  # TopicCommand.getReplicationFactor
        entries = configs.get(name, {})
        shown = {k: v for k, v in entries.items() if v.get("config_source") != "DEFAULT_CONFIG"}
        if MIN_INSYNC in entries:
            shown[MIN_INSYNC] = entries[MIN_INSYNC]  # always: the checks need the effective value
        config_text = ",".join(f"{k}={'null' if v.get('value') is None else v['value']}"
                               for k, v in sorted(shown.items()))
        header = f"Topic: {name}"
        if topic.get("topic_id") is not None and kafka_uuid(topic["topic_id"]) != "AAAAAAAAAAAAAAAAAAAAAA":
            header += f"\tTopicId: {kafka_uuid(topic['topic_id'])}"
        lines.append(f"{header}\tPartitionCount: {len(parts)}\tReplicationFactor: {rf}\tConfigs: {config_text}")
        for p in parts:
            error = errors.for_code(p.get("error_code", 0))
            leader = p["leader_id"]
            line = (f"\tTopic: {name}\tPartition: {p['partition_index']}"
                    f"\tLeader: {leader if leader is not None and leader >= 0 else 'none'}"
                    f"\tReplicas: {_ids(p['replica_nodes'])}\tIsr: {_ids(p['isr_nodes'])}")
            ra = moving.get((name, p["partition_index"]))
            if ra is not None:
                line += f"\tAdding Replicas: {_ids(ra['adding_replicas'])}"
                line += f"\tRemoving Replicas: {_ids(ra['removing_replicas'])}"
            line += f"\tElr: {_elr(p.get('eligible_leader_replicas'), elr_known)}"
            line += f"\tLastKnownElr: {_elr(p.get('last_known_elr'), elr_known)}"
            if error is not errors.NoError and error is not errors.LeaderNotAvailableError:
                raise error(f"partition {name}-{p['partition_index']}")
            lines.append(line)
    brokers = []
    for b in sorted(cluster["brokers"], key=lambda b: b["broker_id"]):
        text = str(b["broker_id"]) + (f":{b['rack']}" if b.get("rack") else "")
        brokers.append(text + ("  # fenced" if b.get("is_fenced") else ""))
    return LiveState("\n".join(lines) + ("\n" if lines else ""), "\n".join(brokers) + ("\n" if brokers else ""),
                     f"cluster at {where}")


def _describe_topics(admin: Any, names: list[str]) -> tuple[list[dict[str, Any]], bool]:
    """Every topic with its partitions: DescribeTopicPartitions (with ELR) page by page, else Metadata."""
    from kafka import errors

    if not names:
        return [], True
    try:
        by_name: dict[str, dict[str, Any]] = {}
        cursor = None
        while True:
            page = admin.describe_topic_partitions(names, cursor=cursor)
            for t in page["topics"]:
                if t["name"] in by_name:  # a topic split across pages
                    by_name[t["name"]]["partitions"].extend(t["partitions"])
                else:
                    by_name[t["name"]] = {**t, "partitions": list(t["partitions"])}
            cursor = page.get("next_cursor")
            if not cursor:
                break
        return [by_name[n] for n in names if n in by_name], True
    except (errors.IncompatibleBrokerVersion, errors.UnsupportedVersionError):
        pass
    out = []
    for t in admin.describe_topics(names):
        parts = [{"partition_index": p["partition"], "leader_id": p["leader"], "replica_nodes": p["replicas"],
                  "isr_nodes": p["isr"], "error_code": p.get("error_code", 0)} for p in t["partitions"]]
        out.append({"name": t["topic"], "topic_id": t.get("topic_id"), "error_code": t.get("error_code", 0),
                    "partitions": parts})
    return sorted(out, key=lambda t: t["name"]), False
