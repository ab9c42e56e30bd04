"""Options several commands share: their Typer declarations and the parsers that turn their text into values,
each bad value an InputError naming its option. Imports no command module."""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import fields
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.invariants import REGISTRY
from kcheck.invariants.registry import Severity, load_module
from kcheck.invariants.replication_searches.runs import ResolvedProtocol, Trace, resolve_protocol
from kcheck.model import INT32_MAX
from kcheck.model.replication.actions import Config
from kcheck.reference import releases
from kcheck.reference.java import JavaRandom, MockRandom

if TYPE_CHECKING:
    pass

# Options that `place` and `optimize` share.
Brokers = Annotated[str, typer.Option(help="Broker ids, comma-separated, in the order Kafka lists them.")]
Partitions = Annotated[int, typer.Option(help="Number of partitions to place.")]
ReplicationFactor = Annotated[int, typer.Option(help="Replicas per partition.")]
Racks = Annotated[str | None, typer.Option(help="Broker racks: 0:r1,1:r2,...")]
StartIndex = Annotated[int, typer.Option(help="AdminUtils fixed start index (also fixes the shift).")]
PlacerName = Annotated[str, typer.Option(help="adminutils, striped, module:object, or jvm:<class> (a Java "
                                              "ReplicaPlacer).")]
# Java plug-ins (jvm:<class>): the user's jars or class folders, after Kafka's own jars (kcheck.reference.jvm_plugins)
Classpath = Annotated[str | None, typer.Option(
    "--classpath", metavar="PATHS", help=f"For jvm:<class> plug-ins: jars or class folders, '{os.pathsep}'-separated.")]
Seed = Annotated[str, typer.Option(help="Seed of java.util.Random for random draws, or 'mock'.")]
# The Kafka release a command's reference runs as (kcheck.reference.releases), and real Kafka beside it
KafkaVersion = Annotated[str | None, typer.Option(
    "--kafka-version", metavar="VERSION",
    help="The Kafka release to run as (default: the newest, 4.4.0, or for AdminUtils the newest that has it, "
         "4.0.2).")]
AgainstKafka = Annotated[str | None, typer.Option(
    "--against-kafka", metavar="VERSION",
    help="Also run Kafka VERSION's own classes (its jars, through a JVM) on the same input: print both answers, "
         "exit 1 when they differ.")]
# Reports for CI, on the commands that check something (kcheck/junit.py, kcheck/html_report.py)
JunitXml = Annotated[str | None, typer.Option("--junit-xml", metavar="FILE",
                                              help="Also write the results as a JUnit XML report to FILE.")]


ID_RE = re.compile(r"-?[0-9]+")  # ASCII digits: not int() alone: it also takes '+1', '1_0' and non-ASCII digits


def bounded_int(option: str, value: int, low: int, high: int, what: str = "") -> int:
    """An integer option within Kafka's type or the command's limit (the message names both ends)."""
    if not low <= value <= high:
        raise InputError(option, f"{value} is outside {low}..{high:,}" + (f" ({what})" if what else ""))
    return value


def finite_float(option: str, value: float) -> float:
    if not math.isfinite(value):
        raise InputError(option, f"{value} is not a finite number")
    return value


def int_list(text: str, option: str) -> list[int]:
    tokens = [tok.strip() for tok in text.split(",") if tok.strip()]
    if not all(ID_RE.fullmatch(tok) for tok in tokens):
        raise InputError(option, f"'{formats.shown(text, 60)}' is not a comma-separated list of broker ids")
    huge = next((tok for tok in tokens if len(tok.lstrip("-")) > 10), None)  # before int(): thousands of digits
    if huge is not None:
        raise InputError(option, f"broker id {formats.shown(huge, 20)} is outside Kafka's int32 range")
    values = [int(tok) for tok in tokens]
    if not values:
        raise InputError(option, "no broker ids given")
    dup = [b for b, n in Counter(values).items() if n > 1]
    if dup:
        raise InputError(option, f"broker {dup[0]} is listed twice")
    if any(v < 0 for v in values):
        raise InputError(option, f"broker id {min(values)} is negative")
    if max(values) > INT32_MAX:  # Kafka's broker ids are Java ints
        raise InputError(option, f"broker id {max(values)} is above {INT32_MAX} (Kafka's int32 maximum)")
    return values


def parse_rack_map(text: str, broker_ids: list[int]) -> dict[int, str]:
    racks: dict[int, str] = {}
    for tok in filter(None, (t.strip() for t in text.split(","))):
        broker, sep, rack = tok.partition(":")
        if not sep or not rack:
            raise InputError("--racks", f"'{tok}' is not of the form broker:rack")
        if not ID_RE.fullmatch(broker.strip()):
            raise InputError("--racks", f"'{broker}' in '{tok}' is not a broker id")
        b = int(broker)
        if (problem := formats.control_problem(rack)) is not None:
            raise InputError("--racks", f"the rack of broker {b} {problem}")
        if b not in broker_ids:
            raise InputError("--racks", f"broker {b} is not in --brokers")
        if b in racks:
            raise InputError("--racks", f"broker {b} is given a rack twice")
        racks[b] = rack
    return racks


def module_files(modules: list[str] | None) -> list[str]:
    """The files of the user's modules, so that no report is written over one: found on sys.path without running
    them (a dotted name's packages would run: only a top-level module, or one imported already, is looked up)."""
    import importlib.util

    files = []
    for name in (m.partition(":")[0] for m in modules or ()):
        path = getattr(sys.modules.get(name), "__file__", None)
        if path is None and name.isidentifier():
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            path = spec.origin if spec is not None else None
        if isinstance(path, str):
            files.append(path)
    return files


def load_jvm_classpath(classpath: str | None, kafka_version: str | None = None) -> None:
    """--classpath (and the release) for jvm:<class> plug-ins, checked now: a missing entry is one line."""
    if classpath is not None and not classpath.strip():
        raise InputError("--classpath", "is empty: give jars or class folders, or leave --classpath out")
    if not classpath and "kcheck.reference.jvm_plugins" not in sys.modules:
        return  # nothing to set, nothing an earlier command set to reset
    from kcheck.reference import jvm_plugins

    try:
        jvm_plugins.configure(jvm_plugins.parse_classpath(classpath), kafka_version)
    except ValueError as e:
        raise InputError("--classpath", str(e)) from None


def requested_release(kafka_version: str | None, against_kafka: str | None = None) -> str | None:
    """The release --kafka-version or --against-kafka names (checked: one line for an unknown one), or None."""
    from kcheck.reference import releases

    if against_kafka is not None and kafka_version is not None and against_kafka != kafka_version:
        raise InputError("--against-kafka", f"compares with Kafka {against_kafka}, but --kafka-version is "
                                            f"{kafka_version}: give one release")
    requested = against_kafka if against_kafka is not None else kafka_version
    if requested is None:
        return None
    try:
        return releases.check_version(requested)
    except releases.UnknownRelease as e:
        raise InputError("--against-kafka" if against_kafka is not None else "--kafka-version", str(e)) from None


def algorithm_release(algorithm: str, requested: str | None, against: bool = False) -> Any:
    """The release profile an algorithm runs as; InputError when the requested release lacks it."""
    from kcheck.reference import releases

    try:
        return releases.release_for(algorithm, requested)
    except releases.UnknownRelease as e:
        raise InputError("--against-kafka" if against else "--kafka-version", str(e)) from None


def java_random(seed: str) -> JavaRandom:
    if seed == "mock":  # Kafka's test MockRandom, to replay Kafka's own placer test vectors
        return MockRandom()
    if not ID_RE.fullmatch(seed.strip()):
        raise InputError("--seed", f"'{seed}' is neither an integer nor 'mock'")
    if not -(2**63) <= int(seed) < 2**63:  # java.util.Random's seed is a long
        raise InputError("--seed", f"{seed.strip()} is outside Java's long range")
    return JavaRandom(int(seed))


def read_live(bootstrap_server: str | None, command_config: str | None) -> Any:
    """The live cluster (kcheck.cluster.live.LiveState) when --bootstrap-server is given, else None."""
    if bootstrap_server is None:
        if command_config is not None:
            raise InputError("--command-config", "applies only with --bootstrap-server")
        return None
    from kcheck.cluster.live import read_cluster

    return read_cluster(bootstrap_server, command_config)


def balance_options(threshold: float, max_replicas_per_broker: int) -> None:
    """verify's and verify-reassignment's shared options."""
    if finite_float("--threshold", threshold) < 1.0:
        raise InputError("--threshold", f"{threshold} is below 1.0 (it is a ratio to the average, e.g. 1.10)")
    bounded_int("--max-replicas-per-broker", max_replicas_per_broker, 1, INT32_MAX)


# A live cluster instead of a file (verify, verify-reassignment)
BootstrapOpt = Annotated[str | None, typer.Option(
    "--bootstrap-server", metavar="HOST:PORT",
    help="Read the cluster now from a live cluster (topics, replicas, leaders, ISR, ELR, racks, min.insync.replicas, "
         "reassignments in flight) instead of a describe file; the same checks and reports follow.")]
CommandConfigOpt = Annotated[str | None, typer.Option(
    "--command-config", metavar="FILE",
    help="Kafka client properties for --bootstrap-server (security.protocol, sasl.*, ssl.* with PEM files), as "
         "kafka-topics.sh --command-config takes them.")]
# The CI gate (verify, verify-reassignment, plan: kcheck.gate.policy)
BaselineOpt = Annotated[str | None, typer.Option(
    "--baseline", metavar="FILE",
    help="A previous --json report of this command: the findings it lists are known and do not fail the gate "
         "unless they got worse (shown as suppressed, with the file as the reason).")]
AllowlistOpt = Annotated[str | None, typer.Option(
    "--allowlist", metavar="FILE",
    help="Known findings, one a line: 'invariant | where | reason' (where may use * and ?; the reason is "
         "required). They do not fail the gate and are shown with their reason.")]
DecommissionOpt = Annotated[str | None, typer.Option(
    "--decommission", metavar="IDS",
    help="Brokers leaving the cluster, e.g. 5,6: balance is judged over the other brokers, and a replica still "
         "placed on a leaving broker is a hard finding.")]
FailOnOpt = Annotated[str, typer.Option(
    "--fail-on", metavar="LEVEL",
    help="What fails the gate (exit 1): hard (any hard finding not suppressed), soft (any finding not "
         "suppressed), new (only hard findings the change introduces or makes worse).")]
# The replication model's commands (explore, exhaust, replay, liveness) and `check --invariants`
ProtocolOpt = Annotated[str, typer.Option(
    "--protocol", help="current (the --kafka-version release's rules), current+elr (the same with eligible leader "
                       "replicas on), a variant (kcheck variants), or module:object.")]
KafkaVersionOpt = Annotated[str | None, typer.Option(
    "--kafka-version", metavar="VERSION",
    help=f"The Kafka release whose controller rules --protocol current follows (default: the newest, "
         f"{releases.DEFAULT_VERSION}): ELR off before 4.1 (current+elr turns it on; "
         f"3.9 and 4.0 then elect even a fenced last known leader), KAFKA-19975's reassignment completion from 4.3.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
ProgressOpt = Annotated[bool | None, typer.Option(
    "--progress/--no-progress",
    help="Progress lines on stderr every few seconds: states, depth, rate, memory, elapsed (default: when "
         "stderr is a terminal).")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines (as --no-progress).")]
OutOpt = Annotated[str | None, typer.Option("--out", help="Write the counterexample trace (JSON) to this new file.")]
InvariantOpt = Annotated[list[str] | None, typer.Option(
    "--invariant", help="Check only this invariant id (repeatable; default: all, or a variant's own row and the "
                        "--invariants modules' ones).")]
InvariantsOpt = Annotated[list[str] | None, typer.Option(
    "--invariants", metavar="MODULE",
    help="Load a module of your invariants (registered with kcheck.invariants.registry.register) and check "
         "them too (repeatable). It is your code: whatever it does wrong is one line, exit 2.")]
CoverageDirOpt = Annotated[str | None, typer.Option(
    "--coverage-dir", metavar="DIR",
    help="For a protocol that differs from today's: write each changed rule's shortest run to an answer that "
         "differs from today's rule as DIR/RULE.json, a trace kcheck replay reads (DIR is created; existing "
         "files are never overwritten).")]


# What each Config field means, shown in the settings line next to its option.
MEANINGS: dict[str, str] = {
    "brokers": "brokers 1..n",
    "replication_factor": "replicas at the start, on brokers 1..RF",
    "min_isr": "min.insync.replicas",
    "initial_isr": "the first replicas in the ISR at the start",
    "acks": "producer acks tried",
    "records": "records produced in all",
    "max_leader_epoch": "highest leader epoch a controller write may reach",
    "crashes": "crashes keeping the page cache",
    "lossy_crashes": "crashes losing unflushed records",
    "fences": "live brokers fenced",
    "elections": "leader moves nobody asked for",
    "isr_shrinks": "followers dropped from the ISR as too slow",
    "failovers": "controller failovers",
    "reads": "consumer reads",
    "reassignments": "reassignment requests",
    "cancels": "reassignment cancels",
    "duplicates": "messages may be delivered twice",
    "atomic_fetch": "one step per fetch, not three",
    "metadata": "how brokers learn the controller's decisions",
    "list_offsets": "ListOffsets requests clients send",
    "shutdowns": "controlled shutdowns an operator starts",
    "unclean_elections": "an operator's unclean elections",
}


def _int_option(help: str) -> Any:
    return typer.Option(min=0, max=INT32_MAX, help=help)


BrokersOpt = Annotated[int | None, typer.Option(help="Brokers 1..n (at most 6).")]
ReplicationFactorOpt = Annotated[int | None, typer.Option(
    "--replication-factor", min=0, max=INT32_MAX,
    help="Replicas at the start, on brokers 1..RF (default: every broker).")]
MinIsrOpt = Annotated[int | None, typer.Option(help="min.insync.replicas (1..brokers).")]
InitialIsrOpt = Annotated[int | None, typer.Option(
    "--initial-isr", min=0, max=INT32_MAX,
    help="Replicas in the ISR at the start: the first N of the replica set (default 0: every replica).")]
AcksOpt = Annotated[str | None, typer.Option(help="Producer acks to try: all, 1, 0 (comma-separated).")]
RecordsOpt = Annotated[int | None, _int_option("Records the producers write in all.")]
MaxLeaderEpochOpt = Annotated[int | None, _int_option(
    "Highest leader epoch a controller write may reach (at least 1); bounds elections.")]
CrashesOpt = Annotated[int | None, _int_option(
    "Broker crashes that keep the page cache (a process crash, kill -9: an unclean shutdown to Kafka, which takes "
    "the broker out of the ELR when it registers again).")]
LossyCrashesOpt = Annotated[int | None, _int_option(
    "Unclean shutdowns that lose the unflushed suffix (power loss); once min.insync.replicas of them happened, "
    "the durability invariants no longer apply (reported).")]
FencesOpt = Annotated[int | None, _int_option("Live brokers the controller fences (missed heartbeats).")]
ElectionsOpt = Annotated[int | None, _int_option(
    "Leader moves nobody asked for (a preferred election, a zombie controller's move).")]
IsrShrinksOpt = Annotated[int | None, _int_option("Followers a leader drops from the ISR as too slow.")]
FailoversOpt = Annotated[int | None, _int_option("Controller failovers.")]
ReadsOpt = Annotated[int | None, _int_option("Consumer reads.")]
ReassignmentsOpt = Annotated[int | None, _int_option(
    "Reassignment requests (AlterPartitionReassignments to any target list) the operator may make.")]
CancelsOpt = Annotated[int | None, _int_option("Requests cancelling the reassignment in flight.")]
DuplicatesOpt = Annotated[bool | None, typer.Option(
    "--duplicates/--no-duplicates", help="Let messages be delivered twice (default: yes).")]
AtomicFetchOpt = Annotated[bool | None, typer.Option(
    "--atomic-fetch/--split-fetch",
    help="One step per fetch (request, answer, follower applying it) instead of three: reaches deeper, "
         "explores fewer interleavings.")]
ExploreAtomicFetchOpt = Annotated[bool | None, typer.Option(
    "--atomic-fetch/--split-fetch",
    help="One step per fetch (request, answer, follower applying it; explore's default: a run with atomic fetches "
         "is a run of the split model too) or three (--split-fetch: every interleaving of a fetch's parts).")]
ListOffsetsOpt = Annotated[int | None, _int_option(
    "ListOffsets requests clients send (above 0 the clients' view is kept: what they were told).")]
ShutdownsOpt = Annotated[int | None, _int_option(
    "Controlled shutdowns an operator starts (the broker asks, the controller moves its leadership away).")]
UncleanElectionsOpt = Annotated[int | None, _int_option(
    "Unclean elections an operator asks for (kafka-leader-election --election-type unclean, KIP-460) of a "
    "leaderless partition; after one the durability invariants no longer apply (reported).")]
MetadataOpt = Annotated[str | None, typer.Option(
    "--metadata", metavar="MODE",
    help="How brokers learn the controller's decisions: kraft (the metadata log every broker applies at its own "
         "pace, KIP-500; the default) or zookeeper (LeaderAndIsr and StopReplica requests the network may delay, "
         "duplicate or drop).")]


def _release(option: str, version: str, prefix: str = "") -> releases.ReleaseProfile:
    try:
        return releases.profile(version)
    except releases.UnknownRelease as e:
        raise InputError(option, prefix + str(e)) from None


def current_protocol(spec: str, kafka_version: str | None, option: str, prefix: str = "") -> ResolvedProtocol | None:
    """`current` or `current@VERSION` as a release's rules (labelled `current@VERSION`, which a trace keeps), and
    `current+elr` / `current+elr@VERSION` the same with eligible leader replicas on (as a cluster that enabled
    them: 3.9 and 4.0 have them off by default); `kafka_version` (--kafka-version) wins over a release in the name.
    None for any other protocol."""
    base, at, named = spec.partition("@")
    if base not in ("current", "current+elr") or (not at and spec != base):
        return None
    if kafka_version is not None:
        prof = _release("--kafka-version", kafka_version)
    else:
        prof = _release(option, named, prefix) if at else releases.profile()
    elr = True if base == "current+elr" else None
    try:
        protocol = prof.protocol(elr)
    except ValueError as e:  # a release the replication model does not know (before 3.9.0)
        raise InputError("--kafka-version" if kafka_version is not None else option, prefix + str(e)) from None
    return ResolvedProtocol(protocol, f"{base}@{prof.version}", None)


def not_current_protocol(spec: str, kafka_version: str | None) -> None:
    """--kafka-version with a variant or a user's protocol: refused (they carry every rule themselves)."""
    if kafka_version is not None:
        _release("--kafka-version", kafka_version)
        raise InputError("--kafka-version", f"applies to --protocol current only, not '{spec}' (a variant or a "
                                            "module:object protocol sets every rule itself)")


def protocol_option(spec: str, kafka_version: str | None = None) -> ResolvedProtocol:
    current = current_protocol(spec, kafka_version, "--protocol")
    if current is not None:
        return current
    not_current_protocol(spec, kafka_version)
    try:
        return resolve_protocol(spec)
    except ValueError as e:
        raise InputError("--protocol", str(e)) from None


def config_option(resolved: ResolvedProtocol, defaults: dict[str, Any], given: dict[str, Any]) -> Config:
    """Config defaults, then the command's own defaults (or a trace's config), then a variant's row settings,
    then the options given. A bad value or combination is one line naming the option."""
    settings = dict(defaults)
    if resolved.variant is not None:
        settings.update(resolved.variant.settings)
    settings.update({k: v for k, v in given.items() if v is not None})
    if isinstance(settings.get("acks"), str):
        settings["acks"] = tuple(a.strip() for a in settings["acks"].split(",") if a.strip())
    try:
        return Config.from_dict(settings)
    except (TypeError, ValueError) as e:
        name = str(e).split()[0].strip("'")
        option = f"--{name.replace('_', '-')}" if name in MEANINGS else "--protocol"
        raise InputError(option, str(e)) from None


def config_options(**given: Any) -> dict[str, Any]:
    """The Config fields given as options (None: not given), checked to be exactly Config's fields: every
    field is an option of explore, exhaust and replay (tests/test_verdicts.py checks the --help too)."""
    assert set(given) == set(MEANINGS) == {f.name for f in fields(Config)}, sorted(set(given) ^ set(MEANINGS))
    return given


def load_invariants(modules: list[str] | None, applies_to: str | None = "replication") -> list[str]:
    """Load each --invariants module (the plug-in path: a name that does not import is one line, and so is
    whatever the module does wrong); the ids it registered. For the replication commands a module must register
    a hard replication invariant: a soft one would never fail a run."""
    ids: list[str] = []
    for module in modules or ():
        try:
            got = load_module(module)
        except ValueError as e:
            raise InputError("--invariants", str(e)) from None
        if applies_to is not None:
            kinds = sorted({REGISTRY[i].applies_to for i in got})
            got = [i for i in got if REGISTRY[i].applies_to == applies_to]
            if not got:
                raise InputError("--invariants", f"module '{module}' registers no {applies_to} invariant "
                                 + (f"(only {', '.join(kinds)} ones)" if kinds else
                                    f"(register each with kcheck.invariants.registry.register(..., '{applies_to}'))"))
            soft = [i for i in got if REGISTRY[i].severity is not Severity.HARD]
            if soft:
                raise InputError("--invariants", f"invariant '{soft[0]}' of module '{module}' is soft; explore, "
                                 "exhaust and replay fail on hard invariants only (register it with Severity.HARD)")
        elif not got:
            raise InputError("--invariants", f"module '{module}' registers no invariant")
        ids += [i for i in got if i not in ids]
    return ids


def check_out(path: str | None, inputs: Iterable[str | None] = ()) -> None:
    """Refuse, before any work is done, an --out that cannot be written as a new file (junit.output_path)."""
    if path is not None:
        from kcheck import junit
        junit.output_path(path, "--out", inputs, new=True)


def write_trace(path: str | None, trace: Trace | None) -> None:
    if path is None or trace is None:
        return
    from kcheck import junit
    try:
        junit.write_atomic(path, (trace.to_json() + "\n").encode("utf-8"), new=True)
    except OSError as e:
        raise InputError(path, f"cannot write: {e.strerror or e}") from None


@contextlib.contextmanager
def hypothesis_home(directory: str | None = None) -> Iterator[None]:
    """Hypothesis keeps a cache in ./.hypothesis by default: never write into the user's working directory.
    The previous home is restored afterwards (tests run many commands in one process)."""
    import hypothesis.configuration as hc

    if directory is None and os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield  # the user's own choice, which Hypothesis reads itself
        return
    if directory is None:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        directory = os.path.join(cache, "kcheck", "hypothesis")
    else:
        from kcheck import junit
        junit.output_path(directory, "--hypothesis-dir", directory=True)
    previous = vars(hc).get("__hypothesis_home_directory")
    hc.set_hypothesis_home_dir(directory)
    try:
        yield
    finally:
        hc.set_hypothesis_home_dir(previous)


def name_list(values: list[str] | None, option: str = "--placer") -> list[str] | None:
    """Repeated options and comma-separated lists, both: --placer adminutils,striped --placer my:placer."""
    if values is None:
        return None
    names = [v.strip() for value in values for v in value.split(",") if v.strip()]
    if not names:  # `--placer ''` is a mistake, not a request for the whole job
        raise InputError(option, "empty: give a name, module:object or jvm:<class>")
    return names


# The Spark master URLs kcheck passes on (ASCII digits: Python's \d takes any script's); anything else would fail
# inside Spark with a JVM stack trace after seconds of start-up.
_MASTER = re.compile(r"local(\[(\*|[1-9][0-9]{0,3})(,[1-9][0-9]{0,3})?\])?|spark://[^\s/:,]+:[0-9]{1,5}"
                     r"(,[^\s/:,]+:[0-9]{1,5})*|yarn|k8s://\S+")


def check_master(master: str | None, option: str = "--master") -> None:
    """A Spark master URL, checked before Spark starts: one line, exit 2."""
    from kcheck.inputs import formats
    if master is not None and not _MASTER.fullmatch(master):
        raise InputError(option, f"expected a Spark master URL such as spark://HOST:7077, yarn or local[2] "
                                 f"(at most local[9999]), not '{formats.shown(master, 60)}'")
    if master is not None and master.startswith("spark://"):
        _reachable(master, option)


def _reachable(master: str, option: str) -> None:
    """A standalone master that takes a connection: Spark itself would retry an unreachable one for a minute and
    more before giving up."""
    import socket

    from kcheck.inputs import formats
    problems = []
    for hostport in master.removeprefix("spark://").split(","):
        host, _, port = hostport.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=5):
                return
        except (OSError, ValueError) as e:
            problems.append(f"{hostport}: {getattr(e, 'strerror', None) or e}")
    raise InputError(option, f"no Spark master answers at {formats.shown(master, 80)} "
                             f"({formats.one_line('; '.join(problems))})")


def spark_failure(e: BaseException, master: str | None) -> InputError | None:
    """A Spark failure that comes from the --master given (an unreachable or refused master, a URL Spark cannot
    parse), as one line naming the option; None for any other failure (a job's own, re-raised as it is)."""
    from kcheck.inputs import formats
    text = str(e)
    markers = ("master", "Master", "unresponsive", "Connection refused", "UnknownHost", "Could not parse",
               "stopped SparkContext")
    if type(e).__module__.split(".")[0] not in ("py4j", "pyspark") or not any(m in text for m in markers):
        return None
    first = next((line.strip() for line in text.splitlines() if line.strip() and "Traceback" not in line), text)
    return InputError("--master", f"Spark could not run on {formats.shown(master or 'local', 80)}: "
                                  f"{formats.one_line(first)}")
