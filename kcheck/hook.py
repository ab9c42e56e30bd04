"""`kcheck-pre-commit`: the pre-commit hook (.pre-commit-hooks.yaml, id kcheck-verify) for repositories that keep
Kafka topics as files, the GitOps way: each changed file pre-commit passes is judged by kcheck in this process.

- a reassignment plan (a .json file) with `--describe FILE`: `kcheck verify-reassignment FILE-OF-DESCRIBE PLAN`
  (each move's safety and what the plan makes worse, against the cluster the describe shows);
- any other file (a `kafka-topics --describe` output, or a plan without `--describe`): `kcheck verify FILE`.

`--brokers-file FILE` (broker racks) goes to every command. Each command prints what it prints alone, under a line
naming it; the hook's exit status is the worst of theirs (0 OK, 1 a check failed, 2 bad input: kcheck's policy).
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from kcheck.runtime.exit_codes import Exit


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """Bad arguments: kcheck's one line on stderr, exit 2."""
        print(f"kcheck: error: kcheck-pre-commit: {message}", file=sys.stderr)
        sys.exit(int(Exit.BAD_INPUT))


def commands(files: list[str], describe: str | None, brokers_file: str | None) -> list[list[str]]:
    """The kcheck command line for each file, in order."""
    extra = ["--brokers-file", brokers_file] if brokers_file else []
    out = []
    for f in files:
        if describe is not None and f != describe and f.endswith(".json"):
            out.append(["verify-reassignment", describe, f, *extra])
        else:
            out.append(["verify", f, *extra])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="kcheck-pre-commit", description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--describe", metavar="FILE", help="the cluster's kafka-topics --describe output: plans are "
                                                           "judged against it")
    parser.add_argument("--brokers-file", metavar="FILE", help="broker racks: JSON, or id:rack lines")
    parser.add_argument("files", nargs="*", metavar="FILE", help="the changed files pre-commit passes")
    args = parser.parse_args(argv)
    from kcheck.cli import main as kcheck

    worst = 0
    for command in commands(args.files, args.describe, args.brokers_file):
        print(f"$ kcheck {' '.join(command)}", flush=True)
        code = kcheck(command)
        sys.stdout.flush()
        if code == Exit.INTERRUPTED:
            return code
        worst = max(worst, code)
    return worst


def run() -> None:
    """The console script."""
    sys.exit(main())
