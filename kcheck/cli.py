"""The `kcheck` command line.

Exit status everywhere: 0 when every hard invariant holds, 1 when one is
violated, 2 on bad input (one line on stderr naming the place, never a traceback).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

# Typer vendors Click since 0.26 (pyproject requires 0.27): its Click, not the click package, runs this CLI
from typer._click.core import Context as ClickContext

from kcheck import errors
from kcheck.commands import (
    assign,
    chaos,
    check,
    cluster,
    info,
    liveness,
    log,
    partition,
    placement,
    plan,
    reassign,
    replication,
    request,
    rules,
    sweep,
    transactions,
    verify,
    verify_group,
    verify_log,
    verify_transactions,
)
from kcheck.errors import main_errors
from kcheck.isolation import isolating
from kcheck.runtime import interrupts


class _Commands(typer.core.TyperGroup):
    """Plain help lists each command's whole first sentence, wrapped (Click would cut it short with '...')."""

    def format_commands(self, ctx: ClickContext, formatter: Any) -> None:  # Click's HelpFormatter
        rows = [(name, cmd.get_short_help_str(limit=1_000)) for name in self.list_commands(ctx)
                if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


app = typer.Typer(
    cls=_Commands,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Click's plain help: Rich's option tables cut option names short at 80 columns ("--replication-fa…")
    rich_markup_mode=None,
    help="Property-checked formal model and bit-exact reference of Apache Kafka's control plane.",
)


def _version(value: bool) -> None:
    """--version: kcheck's own version (the installed package's metadata) and the Kafka releases it knows."""
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    from kcheck.reference.releases import DEFAULT_VERSION, RELEASES, releases_with
    from kcheck.runtime.exit_codes import Exit

    try:
        mine = version("kcheck")
    except PackageNotFoundError:  # run from a source tree that was never installed
        mine = "(not installed: no package metadata)"
    print(f"kcheck {mine}")
    print("Kafka releases the reference runs as (--kafka-version): "
          + ", ".join(v + (" (default)" if v == DEFAULT_VERSION else "") for v in RELEASES))
    print(f"  AdminUtils: {', '.join(releases_with('adminutils'))}")
    print(f"  ZooKeeper controller: {', '.join(releases_with('zk'))}")
    print("Kafka's own jars run beside the reference for each of them (--against-kafka; a JDK 17+, the jars from "
          "Maven Central)")
    raise typer.Exit(Exit.OK)


@app.callback()
def _options(
    debug: Annotated[bool, typer.Option("--debug", help="Print the full traceback when a plug-in fails.")] = False,
    show_version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_version,
        help="Print kcheck's version and the Kafka releases it supports, then exit.")] = False,
) -> None:
    errors.debug = debug


# Every command, in the order `kcheck --help` lists them; kcheck/commands/ holds one module per command or group.
# isolating(...): the plug-in options whose code may run in a child process (--isolate-plugins, kcheck/isolation.py).
app.command("check")(isolating(("placer", "assignor", "invariants"), gate=True)(check.check))
app.command("place")(isolating(("placer",))(placement.place))
app.command("verify")(verify.verify)
app.command("prove")(isolating(("placer",))(placement.prove_command))
app.command("optimize")(isolating(("placer",))(placement.optimize))
app.command("assign")(isolating(("assignor",))(assign.assign))
app.command("reassign")(reassign.reassign)
app.command("verify-reassignment")(reassign.verify_reassignment)
app.command("sweep")(isolating(("placer", "assignor"), gate=True)(sweep.sweep_command))
app.command("explore")(isolating(("protocol", "invariants"))(replication.explore_command))
app.command("exhaust")(isolating(("protocol", "invariants"))(replication.exhaust_command))
app.command("replay")(isolating(("protocol", "invariants"))(replication.replay_command))
app.command("variants")(replication.variants_command)
app.command("liveness")(isolating(("protocol", "invariants"))(liveness.liveness_command))
app.command("rules")(rules.rules_command)
app.command("plan")(plan.plan_command)
app.add_typer(cluster.cluster_command, name="cluster")
app.add_typer(request.request_command, name="request")
app.add_typer(transactions.transactions_command, name="transactions")
app.command("chaos")(chaos.chaos_command)
app.command("verify-log")(verify_log.verify_log_command)
app.command("verify-group")(verify_group.verify_group_command)
app.command("verify-transactions")(verify_transactions.verify_transactions_command)
app.command("log")(log.log_command)
app.command("sweep-log")(log.sweep_log_command)
app.command("partition")(partition.partition_command)
app.command("kafka-classpath")(info.kafka_classpath)
app.command("invariants")(info.list_invariants)


def main(argv: list[str] | None = None) -> int:
    errors.debug = False  # main() may run many times in one process (tests)
    with interrupts.handling():
        try:
            code = _main(argv)
        except interrupts.Interrupted:
            code = interrupts.INTERRUPTED
        except BaseException:
            if interrupts.interrupted() is None:
                raise
            code = interrupts.INTERRUPTED  # whatever the interrupt became on its way up (a library's own error)
        if interrupts.interrupted() is not None:  # one line, exit 130, nothing left running, no partial file
            interrupts.cleanup()
            print(interrupts.line(), file=sys.stderr)
            interrupts.exit_now(interrupts.INTERRUPTED)
            return interrupts.INTERRUPTED
    return code




_command: Any = None  # the Click command, built once per process (Typer's build costs 0.1-0.3 s)


def _main(argv: list[str] | None) -> int:
    global _command
    if _command is None:
        _command = typer.main.get_command(app)
    command = _command
    return main_errors(lambda: command.main(args=argv, prog_name="kcheck", standalone_mode=False))




if __name__ == "__main__":
    sys.exit(main())
