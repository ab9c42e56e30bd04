"""`kcheck cluster up|status|down`: a real KRaft cluster on 127.0.0.1 (kcheck.cluster.local)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from kcheck.cluster.folder import (
    MAX_BROKERS,
    MAX_CONTROLLERS,
    check_new,
    default_directory,
    describe_left,
)
from kcheck.cluster.local import (
    DEFAULT_VERSION,
    MAX_START_TIMEOUT,
    LocalCluster,
    controllers_option,
    network_option,
    parse_racks,
    release_option,
    seconds_option,
)
from kcheck.runtime import interrupts
from kcheck.runtime.exit_codes import Exit

cluster_command = typer.Typer(
    help="A real Kafka (KRaft) cluster on 127.0.0.1 (or in network namespaces) from Kafka's Maven jars: up, status, "
         "down.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None,
)


DirOpt = Annotated[str | None, typer.Option(
    "--dir", help="The cluster's folder (default ~/.cache/kcheck/cluster); `up` needs it absent or empty. kcheck "
                  "acts only on the folder it set the cluster up in: a copy, a move or a symbolic link of it is "
                  "refused.")]


@cluster_command.command("up", short_help="Start a KRaft cluster and print its bootstrap address.")
def up(
    kafka_version: Annotated[str, typer.Option(help="The Kafka release whose broker runs.")] = DEFAULT_VERSION,
    brokers: Annotated[int, typer.Option(help=f"How many brokers, 1..{MAX_BROKERS} (the controllers besides them).")]
        = 3,
    controllers: Annotated[int, typer.Option(
        help=f"How many controllers: 1, or an odd number up to {MAX_CONTROLLERS} (a quorum whose voters are nodes "
             "1000, 1001, ...).")] = 1,
    racks: Annotated[str | None, typer.Option(
        help="Rack names, comma-separated, given to brokers 1..N round-robin (broker.rack).")] = None,
    directory: DirOpt = None,
    timeout: Annotated[float, typer.Option(
        help=f"Seconds to wait for every broker to be unfenced, 1..{MAX_START_TIMEOUT:,.0f}.")] = 60.0,
    network: Annotated[bool, typer.Option(
        "--network", help="Every node in its own network namespace with its own address (Linux, root: for "
                          "`kcheck chaos` partitions); removed with the cluster.")] = False,
) -> int:
    """Start a KRaft cluster (one controller or a quorum of --controllers, N brokers, separate processes) and print
    its bootstrap address. It runs until `kcheck cluster down`, or until the process KCHECK_CLUSTER_OWNER_PID names
    (if set) ends. Ctrl-C or SIGTERM while it starts: the nodes are killed, the folder's kcheck files removed,
    exit 130."""
    version = release_option(kafka_version)
    seconds_option("--timeout", timeout, 1, MAX_START_TIMEOUT)
    controllers_option(controllers)
    if network:
        network_option()
    folder = check_new(directory if directory is not None else default_directory())
    cluster = LocalCluster(version, brokers, parse_racks(racks), folder, outlive=True, controllers=controllers,
                           network=network)
    try:
        cluster.start(timeout)
    except BaseException as e:
        if interrupts.by_interrupt(e):  # start() killed its nodes: said in kcheck's one line (cli.main)
            interrupts.note(f"killed the nodes it had started and removed what it created in {folder}"
                            f"{describe_left(folder, cluster.left)}")
        raise
    quorum = "a controller" if controllers == 1 else f"{controllers} controllers"
    print(f"kcheck cluster: Kafka {version}, {brokers} broker(s) and {quorum} up in "
          f"{cluster.started_in_s:.1f} s; folder {cluster.directory}", file=sys.stderr)
    print(cluster.bootstrap)
    return Exit.OK


@cluster_command.command("down", short_help="Stop the cluster's processes and remove what kcheck created.")
def down(directory: DirOpt = None) -> int:
    """Stop every process kcheck started for the cluster (SIGTERM, then SIGKILL) and remove the files kcheck created
    in its folder (the folder too once it is empty; anything else is left, and said)."""
    cluster = LocalCluster.attach(directory)
    folder = cluster.directory
    with interrupts.shielded():  # stopping is the undoing: it runs to its end
        took = cluster.stop()
    what = (f"removed {folder}" if not cluster.left else
            f"removed kcheck's files from {folder}{describe_left(folder, cluster.left)}")
    print(f"kcheck cluster: stopped in {took:.1f} s; {what}", file=sys.stderr)
    return Exit.OK


@cluster_command.command("status", short_help="Print each process of the cluster and its state.")
def status(
    directory: DirOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the status as JSON.")] = False,
) -> int:
    """Print each process of the cluster: node, role, address, rack, PID, running/paused/stopped. Exit 0 when every
    process runs, 1 when one is paused or stopped."""
    cluster = LocalCluster.attach(directory)
    rows = cluster.status()
    code = Exit.OK if all(r["state"] == "running" for r in rows) else Exit.FAILED
    if json_out:
        print(json.dumps({"version": cluster.version, "bootstrap": cluster.bootstrap,
                          "directory": str(cluster.directory), "nodes": rows}, indent=2))
        return code
    print(f"Kafka {cluster.version}, cluster id {cluster.cluster_id}, bootstrap {cluster.bootstrap}")
    for r in rows:
        rack = f" rack {r['rack']}" if r["rack"] else ""
        pid = f" pid {r['pid']}" if r["pid"] else ""
        print(f"  {r['role']:<10} {r['node']:>5}  {r['address']}{rack}{pid}  {r['state']}")
    return code
