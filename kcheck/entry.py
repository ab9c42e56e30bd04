"""The `kcheck` program's entry point (`python -m kcheck` too): Ctrl-C at any moment is one line and exit 130.

It imports nothing heavy itself, so that a Ctrl-C while kcheck's modules load (a second or two on a busy machine)
is caught here; `kcheck.cli.run` covers the rest (kcheck.interrupts).
"""

from __future__ import annotations

import os
import signal
import sys


def _interrupted(e: BaseException) -> bool:
    """True if a KeyboardInterrupt is `e` or what caused it (class creation wraps one in a RuntimeError)."""
    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def run() -> None:
    try:
        from kcheck.cli import run as cli_run
    except BaseException as e:
        if not _interrupted(e):
            raise
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("kcheck: interrupted", file=sys.stderr, flush=True)
        os._exit(130)  # nothing has started yet (and see kcheck.cli.run: a plain exit may become death by SIGINT)
    cli_run()
