"""The `kcheck` console script and `python -m kcheck`.

Ctrl-C or SIGTERM while Python imports the command line (a second, several on a loaded machine) ends with the
same one line and exit 130 as during a command (kcheck.runtime.interrupts); nothing has been started or written yet.
"""

from __future__ import annotations

import os
import signal
import sys


def _early(signum: int, frame: object) -> None:
    name = "SIGTERM" if signum == signal.SIGTERM else "SIGINT"
    os.write(2, f"kcheck: interrupted ({name}): stopped, no output written\n".encode())
    os._exit(130)


def run() -> None:
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, _early)
    from kcheck.cli import main

    sys.exit(main())
