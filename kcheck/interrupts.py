"""Ctrl-C and SIGTERM for the commands that start processes or wait on a live cluster (`cluster up`, `chaos`,
`replay --on-cluster`, `verify --bootstrap-server`).

Under `interrupts()` both signals raise KeyboardInterrupt in the main thread (by default SIGTERM would end the
process at once, leaving the nodes it started running) and are remembered: kafka-python's client catches whatever
interrupts its waits and reports a time-out instead, so `caught()` tells a swallowed interrupt from a real failure,
and `check()`, called between the steps of a wait loop, raises it again. The command then undoes what it started
under `shielded()` (a second signal does not cut the clean-up short), prints one line `kcheck: interrupted: <what it
undid>` and exits 130 (Exit.INTERRUPTED: 128 + SIGINT, what a shell reports for a command Ctrl-C ended). No partial
output file is left: outputs are written to a temporary file and moved in place whole.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

from kcheck.exit_codes import Exit

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
INTERRUPTED = int(Exit.INTERRUPTED)
_state = {"caught": False, "shielded": 0, "reported": False}


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _state["caught"] = True
    raise KeyboardInterrupt


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def interrupts() -> Iterator[None]:
    """Meanwhile SIGINT and SIGTERM raise KeyboardInterrupt in the main thread and are remembered (`caught`)."""
    if not _main_thread():
        yield
        return
    before = {s: signal.signal(s, _on_signal) for s in _SIGNALS}
    _state["caught"] = False
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        _state["caught"] = False


def caught() -> bool:
    """True if SIGINT or SIGTERM arrived under `interrupts()` (also when a library swallowed the KeyboardInterrupt)."""
    return bool(_state["caught"])


def check() -> None:
    """Raise KeyboardInterrupt again if one arrived and something swallowed it (a wait loop calls this between tries);
    never during a clean-up (`shielded`) nor outside the main thread."""
    if _state["caught"] and not _state["shielded"] and _main_thread():
        raise KeyboardInterrupt


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Meanwhile SIGINT and SIGTERM are ignored: the clean-up after an interrupt runs to its end (it is short)."""
    if not _main_thread():
        yield
        return
    before = {s: signal.signal(s, signal.SIG_IGN) for s in _SIGNALS}
    _state["shielded"] += 1
    try:
        yield
    finally:
        _state["shielded"] -= 1
        for s, handler in before.items():
            signal.signal(s, handler)


def interrupted(what: str | None) -> int:
    """Say in one line that the command was interrupted, and what it undid; the exit status to return."""
    from kcheck.formats import one_line

    print("kcheck: interrupted" + (f": {one_line(what)}" if what else ""), file=sys.stderr)
    _state["reported"] = True
    return INTERRUPTED


def reported() -> bool:
    """True once `interrupted` said it (the CLI then adds nothing)."""
    return bool(_state["reported"])


def reset() -> None:
    """A new command line in this process (tests run many): nothing caught or said yet."""
    _state.update(caught=False, reported=False)
