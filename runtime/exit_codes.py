"""One exit-status policy for every kcheck command (README, "Exit status").

A CI gate reads only the status, so a search that stopped early, or a change the search never exercised,
must not look like a pass: each has its own code.
"""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    OK = 0  # every check the gate counts passed (a complete search: a proof within its bounds)
    FAILED = 1  # a violation the gate counts (hard by default; see --fail-on), or a counterexample
    BAD_INPUT = 2  # refused before any work: one line on stderr naming the place
    CHANGE_NOT_EXERCISED = 3  # no violation, but a rule the protocol changes never answered differently
    INCOMPLETE = 4  # no violation found, but the search stopped before covering its bounds
    INTERRUPTED = 130  # Ctrl-C or SIGTERM (the shell's 128 + SIGINT): stopped, no output written


POLICY: tuple[tuple[Exit, str], ...] = (
    (Exit.OK, "every check the gate counts passed; for exhaust, every reachable state within the bounds "
              "was visited"),
    (Exit.FAILED, "a violation the gate counts (--fail-on; hard findings by default), or a counterexample"),
    (Exit.BAD_INPUT, "bad input or a failing plug-in: one line on stderr naming the place, nothing done"),
    (Exit.CHANGE_NOT_EXERCISED, "no violation, but a rule the protocol changes never answered differently "
                                "from today's in the states visited"),
    (Exit.INCOMPLETE, "no violation found, but the search did not cover its bounds (a state, time or memory "
                      "cap, an abstract search, any clean random search): not a pass"),
    (Exit.INTERRUPTED, "Ctrl-C or SIGTERM: one line on stderr, every process kcheck started ended, no output file "
                       "written"),
)
