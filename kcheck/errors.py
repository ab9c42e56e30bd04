"""How a command's failure reaches the user (README, "Exit status"): bad input, a failing plug-in or a Kafka error
as one line `kcheck: error: <place>: <message>` on stderr, exit 2; an interrupt as interrupts' own line."""

from __future__ import annotations

import sys
import traceback
from typing import Any

from typer._click.exceptions import ClickException

from kcheck.inputs import formats
from kcheck.inputs.formats import InputError
from kcheck.invariants.replication_searches.exhaustive import SearchSetupError
from kcheck.invariants.replication_searches.runs import ReplayError, ResolvedProtocol
from kcheck.reference import plugins
from kcheck.reference.errors import KafkaError
from kcheck.reference.plugins import PluginError
from kcheck.runtime import interrupts

debug = False  # --debug: a plug-in's failure is printed with its traceback (set by the app's callback)


def error(message: str) -> int:
    if interrupts.interrupted() is not None:  # an error the interrupt caused: main() prints the one line
        raise interrupts.Interrupted()
    print(f"kcheck: error: {message}", file=sys.stderr)
    return 2


def main_errors(run: Any) -> int:
    """run()'s exit status; bad input and failing plug-ins as one line on stderr, exit 2."""
    try:
        code = run()
    except ClickException as e:  # usage errors: unknown option, bad integer, missing argument
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `kcheck`: the help, as `kcheck --help` prints it
            if e.format_message():
                print(e.format_message())
            return 0
        return error(formats.one_line(e.format_message()))
    except InputError as e:
        return error(str(e))
    except PluginError as e:  # the user's module:object failed; one line unless --debug
        if debug and interrupts.interrupted() is None:
            traceback.print_exception(e, file=sys.stderr)
        return error(str(e))
    except KafkaError as e:
        return error(formats.one_line(f"{type(e).__name__}: {e}"))
    except BrokenPipeError:  # e.g. `kcheck place ... | head`
        return 0
    return code if isinstance(code, int) else 0


def run_engine(what: str, resolved: ResolvedProtocol, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run an engine; a user's protocol whose rule raises is bad input, reported in one line."""
    try:
        return fn(*args, **kwargs)
    except (InputError, PluginError, ReplayError, SearchSetupError, KeyboardInterrupt):  # ReplayError: the trace
        raise
    except Exception as e:  # noqa: BLE001 - a user's rule may raise anything, or return what the model cannot use
        if ":" in resolved.label:  # a module:object protocol: its failure, in one line (--debug: the traceback)
            err = plugins.failure(resolved.label, e)
            raise PluginError(err.spec, err.message, err.exc_type, err.where, f"during {what}") from e
        raise
