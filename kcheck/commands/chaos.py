"""`kcheck chaos`: a fault campaign on a real cluster, its options turned into the campaign's settings
(kcheck.cluster.chaos) and its verdict printed or written as JSON."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from kcheck.cluster.chaos import (
    CAMPAIGN_BROKER_CONFIG,
    DEFAULT_FAULTS,
    JAVA_LONG,
    MAX_CONCURRENT,
    MAX_HEAL_SECONDS,
    MAX_PARTITIONS,
    MAX_RATE,
    MAX_SCHEDULE_STEPS,
    MAX_SECONDS,
    NETWORK_FAULTS,
    NETWORK_KINDS,
    SHAPE_KINDS,
    Campaign,
    Settings,
    Step,
    check_schedule_brokers,
    check_topic,
    parse_faults,
    print_outcome,
    random_schedule,
    read_schedule,
)
from kcheck.cluster.folder import CONTROLLER_ID
from kcheck.cluster.history import PRODUCER_KINDS
from kcheck.cluster.local import DEFAULT_VERSION, LocalCluster
from kcheck.cluster.producers import DEFAULT_PRODUCERS, parse_producers
from kcheck.cluster.txn_chaos import (
    NOT_TXN_FAULTS,
    TXN_FAULTS,
    TxnCampaign,
    TxnOutcome,
    TxnSettings,
    print_txn_outcome,
    random_txn_schedule,
)
from kcheck.inputs.formats import InputError
from kcheck.runtime import interrupts

# --client: the transactions campaign's clients by their command-line names
CLIENTS = {"java": "java", "kafka-python": "python"}


def check_output(path: str, option: str, inputs: Sequence[str | None] = ()) -> str:
    """A new file to write at the end (`--json FILE`), checked before anything starts: its folder exists and takes
    a file (created and deleted now: the one test that holds for root, /proc and read-only mounts), it is not one of
    the command's inputs, and nothing is there yet (kcheck does not overwrite). The absolute path."""
    from kcheck.junit import output_path

    target = output_path(path, option, inputs)
    if os.path.lexists(path):
        raise InputError(option, f"{path} exists; kcheck does not overwrite it (give a new file)")
    folder = os.path.dirname(target)
    try:
        fd, probe = tempfile.mkstemp(prefix=".kcheck-probe-", dir=folder)
    except OSError as e:
        raise InputError(option, f"cannot write a file in {folder}: {e.strerror or e}") from None
    os.close(fd)
    os.unlink(probe)
    return target


def chaos_command(
    kafka_version: Annotated[str | None, typer.Option(
        help=f"The Kafka release of a cluster kcheck starts (default {DEFAULT_VERSION}; with --dir: the cluster's).")]
        = None,
    brokers: Annotated[int | None, typer.Option(help="Brokers of a cluster kcheck starts, 1..64 (default 3).")] = None,
    controllers: Annotated[int | None, typer.Option(
        help="KRaft controllers of a cluster kcheck starts: 1 (default) or an odd number up to 5. With 3 or more, a "
             "random schedule also kills, pauses, restarts and shuts down the active controller or any controller "
             "(a minority at a time), and the history records the quorum's leader and epoch around each.")] = None,
    partitions: Annotated[int, typer.Option(
        help=f"Partitions of the campaign's topic, 1..{MAX_PARTITIONS:,}.")] = 3,
    replication_factor: Annotated[int, typer.Option(help="The topic's replication factor (at most the brokers).")]
        = 3,
    min_insync_replicas: Annotated[int, typer.Option(help="The topic's min.insync.replicas (1..RF).")] = 2,
    unclean_leader_election: Annotated[bool, typer.Option(
        "--unclean-leader-election/--no-unclean-leader-election",
        help="The topic's unclean.leader.election.enable (the 2013 settings: on, with --min-insync-replicas 1).")]
        = False,
    duration: Annotated[float, typer.Option(
        help=f"Seconds of producing and faults, 1..{MAX_SECONDS:,.0f} (a schedule may run longer).")] = 30.0,
    seed: Annotated[int, typer.Option(help="Seed of the random schedule and of every random choice (a Java long).")]
        = 0,
    faults: Annotated[str | None, typer.Option(
        help="Fault kinds a random schedule draws from, comma-separated (default: every kind but lossy-kill: "
             + ",".join(DEFAULT_FAULTS) + "; with --producers transactional " + ",".join(TXN_FAULTS)
             + ", and delete-records refused).")] = None,
    max_concurrent: Annotated[int | None, typer.Option(
        help=f"Faults a random schedule lets overlap, 1..{MAX_CONCURRENT} (default 1: one at a time); never more "
             "than all brokers but one down or paused at once.")] = None,
    schedule: Annotated[str | None, typer.Option(
        metavar="FILE", help=f"Faults from a file, one a line: SECONDS KIND [NODE|leader|follower|active-controller|"
                             f"controller|coordinator (--producers transactional)]; # comments. At "
                             f"most {MAX_SCHEDULE_STEPS:,} faults, times 0..{MAX_SECONDS:,.0f} s.")] = None,
    rate: Annotated[float | None, typer.Option(
        help=f"Records a second sent by each producer, 0.1..{MAX_RATE:,.0f} (default 50; not with --producers "
             "transactional).")] = None,
    producers: Annotated[str | None, typer.Option(
        help="Producer kinds, comma-separated, each once (default " + ",".join(DEFAULT_PRODUCERS) + "): "
             + ", ".join(PRODUCER_KINDS) + ". plain/plain-1: kafka-python acks=all, not idempotent, max in flight "
             "5/1; acks1: kafka-python acks=1; idempotent/idempotent-1: kafka-python idempotent; java-idempotent/"
             "java-plain: the release's VerifiableProducer with idempotence on/off, 5 in flight. Or `transactional` "
             "alone: the transactions campaign (two transactional producers, each transaction writing every "
             "partition and committing or aborting, a read_committed reader; checked for aborted reads, lost "
             "writes, torn transactions and duplicates). Its random schedule draws "
             + ",".join(TXN_FAULTS) + " (with --network the network kinds too) aimed at the transaction coordinator's "
             "broker (target `coordinator`: the leader of producer 0's __transaction_state partition; elect-preferred"
             " and reassign move that leader), partition 0's leader, and with --controllers 3 or 5 the "
             "controllers.")] = None,
    client: Annotated[str | None, typer.Option(
        help="With --producers transactional: the transactional client, java (the release's own KafkaProducer, "
             "default) or kafka-python.")] = None,
    topic: Annotated[str | None, typer.Option(
        help="The topic to create (default kcheck-chaos-<time>-<seed>); not one of Kafka's internal topics.")] = None,
    heal_timeout: Annotated[float, typer.Option(
        help=f"Seconds to wait for every replica back in the ISR, 1..{MAX_HEAL_SECONDS:,.0f}.")] = 90.0,
    json_out: Annotated[str | None, typer.Option(
        "--json", metavar="FILE", help="Write settings, verdict and the whole history as JSON to FILE (a new file, "
                                       "written whole at the end).")] = None,
    directory: Annotated[str | None, typer.Option(
        "--dir", help="Run on the cluster `kcheck cluster up --dir DIR` started (left running and healed) instead "
                      "of starting one.")] = None,
    network: Annotated[bool, typer.Option(
        "--network", help="Start the cluster with every node in its own network namespace (Linux, root), so the "
                          "network kinds can run: partition (cut from every other node both ways), "
                          "partition-one-way (its sends dropped), partition-from-quorum (a broker cut from the "
                          "controllers only), partition-bridge (the other nodes in two sides cut from each other, the "
                          "target in the middle reaching both), slow-links (every link of the target, both ways, "
                          "delayed 200 ms +- 50 ms) and lossy-links (the same links dropping 20 percent of frames, "
                          "in bursts of 2 on average), clients never affected; a random schedule then draws them too. "
                          "Removed with the cluster. With --dir: the cluster's own (`kcheck cluster up --network`).")]
        = False,
) -> int:
    """Run a fault campaign on a real Kafka cluster and check the clients' history: producers (--producers) and a
    consumer group against one topic while brokers are killed (-9), paused (SIGSTOP), restarted, shut down (with
    --controllers 3 or 5: the active controller or any controller too, a minority at a time), leaders elected,
    partitions reassigned, followers paused under min ISR and records deleted (with --network: links between nodes
    cut, slowed or made lossy: partition/partition-one-way/partition-from-quorum/partition-bridge, slow-links,
    lossy-links), from --schedule or at random with
    --seed (up to --max-concurrent faults at once). Checked afterwards: no acknowledged acks=all record lost or at
    another offset, no offset read with two values, committed offsets and the high watermark seen never go back,
    every acknowledged record readable once healed, no duplicate, reorder or silent gap of an idempotent producer,
    no definite failure in the log, a new quorum leader with a larger epoch within 15 s of the active controller's
    kill, pause or stop (acks=1 losses, non-idempotent duplicates and reorders, committed indefinite
    failures and kafka-python stalls are counted apart). A cluster
    kcheck starts itself gets these broker settings, Kafka's semantics on a campaign's time scale:
    replica.lag.time.max.ms=3000 (a stalled follower leaves the ISR in 3 s, not 30 s), broker.heartbeat.interval.ms=500
    (restarted brokers unfenced sooner), replica.socket.timeout.ms=5000 (followers give up on a dead leader sooner).
    With --producers transactional the campaign runs transactions instead (--client java or kafka-python): two
    transactional producers whose every transaction writes each partition and commits or aborts, a read_committed
    reader, and the faults aimed at the transaction coordinator's broker (target `coordinator`; elect-preferred and
    reassign move the coordinator), partition 0's leader and the controllers; checked for aborted reads (G1a), lost
    writes, torn transactions and duplicates, each fault reported with its window.
    Ctrl-C or SIGTERM: the faults stop, paused brokers are resumed, a cluster kcheck started is stopped, no --json
    file is written, exit 130. The --json document follows kcheck/cluster/history.schema.json (its name and version
    are in it); with --producers transactional, kcheck/cluster/txn-history.schema.json. Exit 0 clean, 1 a violation
    (an anomaly), 2 bad input, 4 the cluster never healed (or the final read could not finish)."""
    plan = _prepare(kafka_version, brokers, partitions, replication_factor, min_insync_replicas,
                    unclean_leader_election, duration, seed, faults, schedule, rate, topic, heal_timeout, json_out,
                    directory, producers, max_concurrent, controllers, network, client)
    try:
        return _campaign(plan)
    except BaseException as e:
        if not interrupts.by_interrupt(e):  # (the Kafka client turns an interrupt into a time-out of its own)
            raise
        with interrupts.shielded():  # undone before kcheck's one line (cli.main), which says what was
            for done in plan.campaign.abort(restart=not plan.own) if plan.campaign is not None else ():
                interrupts.note(done)
            if plan.own and plan.cluster._dir is not None:
                plan.cluster.stop(kill=True)
                interrupts.note("stopped the cluster it started and removed its folder")
        raise


def _campaign(plan: _Plan) -> int:
    s, cluster = plan.settings, plan.cluster
    err = lambda text: print(text, file=sys.stderr)  # noqa: E731
    info: dict[str, Any] = {"version": cluster.version, "attached": not plan.own}
    try:
        if plan.own:
            err(f"kcheck chaos: starting Kafka {cluster.version} ({cluster.broker_count} brokers, "
                f"{cluster.controller_count} controller(s)) with "
                + ", ".join(f"{k}={v}" for k, v in CAMPAIGN_BROKER_CONFIG.items()))
            cluster.start()
            info["start_seconds"] = round(cluster.started_in_s, 1)
            err(f"kcheck chaos: cluster up in {cluster.started_in_s:.1f} s at {cluster.bootstrap}")
        err(f"kcheck chaos: topic {s.topic}; {len(plan.steps)} scheduled fault(s); {s.duration:g} s")
        say = lambda line: err(f"  {line}")  # noqa: E731
        if plan.txn is not None:
            plan.campaign = TxnCampaign(cluster, plan.txn, say, plan.steps)
        else:
            plan.campaign = Campaign(cluster, s, plan.steps, say=say)
        outcome = plan.campaign.run()
    except BaseException as e:
        if plan.own and cluster._state is not None and not interrupts.by_interrupt(e):
            cluster.stop()
        raise
    if plan.own:
        info["stop_seconds"] = round(cluster.stop(), 1)
    outcome.cluster = info
    if plan.json_path is not None:
        write_new(plan.json_path, "--json", outcome.document())
    from kcheck.report import console

    if isinstance(outcome, TxnOutcome):
        print_txn_outcome(outcome, console())
    else:
        print_outcome(outcome, console())
    if plan.own:
        err(f"kcheck chaos: cluster started in {info.get('start_seconds')} s, stopped in {info.get('stop_seconds')} s")
    return int(outcome.exit_code)


def _within(option: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:  # NaN is never within
        raise InputError(option, f"{value:g} is outside {low:g}..{high:,g}")


def write_new(path: str, option: str, text: str) -> None:
    """Write `path` whole or not at all: a temporary file beside it, linked to its name (which fails if a file
    appeared there meanwhile: never overwritten), then unlinked; an interrupt leaves nothing."""
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise InputError(option, f"{path} exists; kcheck does not overwrite it (give a new file)") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


@dataclass
class _Plan:
    """Everything `kcheck chaos` checked before it starts: the campaign, where it runs, where the JSON goes."""

    settings: Settings
    steps: list[Step]
    cluster: LocalCluster
    own: bool
    json_path: str | None
    campaign: Campaign | TxnCampaign | None = None
    txn: TxnSettings | None = None  # --producers transactional: the transactions campaign's settings


def _prepare(kafka_version: str | None, brokers: int | None, partitions: int, replication_factor: int,
             min_insync_replicas: int, unclean: bool, duration: float, seed: int, faults: str | None,
             schedule: str | None, rate: float | None, topic: str | None, heal_timeout: float, json_out: str | None,
             directory: str | None, producers: str | None = None, max_concurrent: int | None = None,
             controllers: int | None = None, network: bool = False, client: str | None = None) -> _Plan:
    """Every option, file and the cluster folder, checked before any process or connection (one line, exit 2)."""
    from kcheck.cluster.local import MAX_BROKERS, release_option

    version = release_option(kafka_version) if kafka_version is not None else None
    _cluster_options(directory, brokers, controllers, network)
    _within("--duration", duration, 1, MAX_SECONDS)
    transactional = _transactional(producers, rate, client)
    if rate is not None:
        _within("--rate", rate, 0.1, MAX_RATE)
    _within("--heal-timeout", heal_timeout, 1, MAX_HEAL_SECONDS)
    _within("--partitions", partitions, 1, MAX_PARTITIONS)
    _within("--replication-factor", replication_factor, 1, MAX_BROKERS)
    _within("--min-insync-replicas", min_insync_replicas, 1, replication_factor)
    _within("--seed", seed, -JAVA_LONG, JAVA_LONG - 1)
    name = check_topic(topic) if topic is not None else f"kcheck-chaos-{int(time.time())}-{seed}"
    if schedule == "":
        raise InputError("--schedule", "empty; give a schedule file")
    if schedule is not None and faults is not None:
        raise InputError("--faults", "applies only to a random schedule, not with --schedule")
    if max_concurrent is not None:
        if schedule is not None:
            raise InputError("--max-concurrent", "applies only to a random schedule, not with --schedule")
        _within("--max-concurrent", max_concurrent, 1, MAX_CONCURRENT)
    kinds = parse_faults(faults) if faults is not None else None
    producer_kinds = (parse_producers(producers) if producers is not None and not transactional
                      else DEFAULT_PRODUCERS)
    json_path = check_output(json_out, "--json", [schedule]) if json_out is not None else None
    steps = read_schedule(schedule) if schedule is not None else []
    if directory is not None:
        cluster = LocalCluster.attach(directory)
        if version is not None and version != cluster.version:
            raise InputError("--kafka-version", f"{version}, but the cluster in --dir runs Kafka {cluster.version}")
        network = cluster.network is not None
    else:
        cluster = LocalCluster(version or DEFAULT_VERSION, brokers or 3, config=CAMPAIGN_BROKER_CONFIG,
                               controllers=controllers or 1, network=network)
    if transactional:
        kinds = kinds or ((*TXN_FAULTS, *NETWORK_KINDS) if network else TXN_FAULTS)
    kinds = kinds or (NETWORK_FAULTS if network else DEFAULT_FAULTS)
    kinds = _need_network(kinds, steps, schedule, network, defaulted=faults is None)
    broker_ids = cluster.brokers if directory is not None else tuple(range(1, cluster.broker_count + 1))
    controller_ids = tuple(range(CONTROLLER_ID, CONTROLLER_ID + cluster.controller_count))
    txn = None
    if transactional:
        txn = TxnSettings(name, duration, seed, partitions=partitions, client=CLIENTS[client or "java"],
                          replication_factor=replication_factor, min_insync_replicas=min_insync_replicas,
                          unclean=unclean, heal_timeout=heal_timeout, faults=kinds if schedule is None else (),
                          max_concurrent=max_concurrent or 1, controllers=len(controller_ids), network=network)
        _no_deleted_records(kinds, steps, schedule)
        steps = steps if schedule is not None else random_txn_schedule(txn, kinds)
    elif schedule is None:
        steps = random_schedule(seed, duration, kinds, max_concurrent=max_concurrent or 1, brokers=len(broker_ids),
                                controllers=len(controller_ids))
    if replication_factor > len(broker_ids):
        raise InputError("--replication-factor", f"{replication_factor} is above the cluster's {len(broker_ids)} "
                         "broker(s)")
    check_schedule_brokers(steps, broker_ids, schedule or "--seed", controller_ids,
                           roles=("coordinator",) if transactional else ())
    settings = Settings(name, partitions, replication_factor, min_insync_replicas, unclean, duration,
                        50.0 if rate is None else rate, seed, kinds, heal_timeout, producer_kinds, max_concurrent or 1,
                        len(controller_ids), network)
    return _Plan(settings, steps, cluster, directory is None, json_path, txn=txn)


def _transactional(producers: str | None, rate: float | None, client: str | None) -> bool:
    """`--producers transactional` (alone), and the options that apply only with or only without it."""
    kinds = [k.strip() for k in (producers or "").split(",")]
    transactional = "transactional" in kinds
    if transactional and kinds != ["transactional"]:
        raise InputError("--producers", "transactional runs the transactions campaign alone, not beside other kinds")
    if client is not None:
        if not transactional:
            raise InputError("--client", "applies only with --producers transactional")
        if client not in CLIENTS:
            raise InputError("--client", f"{client[:40]!r} is not a transactional client ({', '.join(CLIENTS)})")
    if transactional and rate is not None:
        raise InputError("--rate", "applies to the record producers, not to --producers transactional (each "
                                   "producer runs one transaction after another)")
    return transactional


def _cluster_options(directory: str | None, brokers: int | None, controllers: int | None, network: bool) -> None:
    """The options of a cluster kcheck starts: refused with --dir, checked otherwise."""
    from kcheck.cluster.local import MAX_BROKERS, controllers_option, network_option

    if directory is not None and brokers is not None:
        raise InputError("--brokers", "applies to a cluster kcheck starts, not with --dir")
    if brokers is not None:
        _within("--brokers", brokers, 1, MAX_BROKERS)
    if directory is not None and controllers is not None:
        raise InputError("--controllers", "applies to a cluster kcheck starts, not with --dir")
    if controllers is not None:
        controllers_option(controllers)
    if directory is not None and network:
        raise InputError("--network", "applies to a cluster kcheck starts (with --dir: `kcheck cluster up --network`)")
    if network:
        network_option()


def _no_deleted_records(kinds: Sequence[str], steps: Sequence[Step], schedule: str | None) -> None:
    """The transactions campaign refuses delete-records, from --faults or a schedule file."""
    if refused := [k for k in kinds if k in NOT_TXN_FAULTS]:
        raise InputError("--faults", f"{refused[0]} does not apply to --producers transactional (it deletes "
                                     "committed records the final read must find)")
    for s in steps:
        if s.kind in NOT_TXN_FAULTS:
            raise InputError(f"{schedule}:{s.line}", f"{s.kind} does not apply to --producers transactional (it "
                                                     "deletes committed records the final read must find)")


def _need_network(kinds: Sequence[str], steps: Sequence[Step], schedule: str | None, network: bool,
                  defaulted: bool = False) -> tuple[str, ...]:
    """A network fault (or its heal) needs the nodes in namespaces, and slow-links and lossy-links the link relay
    (kcheck.cluster.netns.relay_unavailable): refused before anything starts without them, or, drawn by default,
    left out. The kinds to draw."""
    if not network:
        if schedule is None and (wanted := [k for k in kinds if k in NETWORK_KINDS]):
            raise InputError("--faults", f"{wanted[0]} needs --network (every node in its own network namespace)")
        for s in steps:
            if s.kind in (*NETWORK_KINDS, "heal"):
                raise InputError(f"{schedule}:{s.line}", f"{s.kind} needs --network (every node in its own network "
                                                         "namespace; with --dir: `kcheck cluster up --network`)")
        return tuple(kinds)
    shaping = [k for k in kinds if k in SHAPE_KINDS] if schedule is None else []
    named = [s for s in steps if s.kind in SHAPE_KINDS]
    if not (shaping or named):
        return tuple(kinds)
    from kcheck.cluster.netns import relay_unavailable

    why = relay_unavailable()
    if why is None:
        return tuple(kinds)
    if named:
        raise InputError(f"{schedule}:{named[0].line}", f"{named[0].kind} cannot run here: {why}")
    if not defaulted:
        raise InputError("--faults", f"{shaping[0]} cannot run here: {why}")
    return tuple(k for k in kinds if k not in SHAPE_KINDS)
